"""Allocations the machine cannot hold: a MemoryError naming the sizes
before the arrays are made (Linux would otherwise overcommit and kill the
process when the pages are touched)."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

import structlearn._memory as memory
from structlearn.estimators import SequenceCRF, SequenceSSVM


def _wide_data(d):
    """Three short sequences over ``d`` features, a handful of them used."""
    def seq(i):
        return sp.csr_matrix((np.ones(4), (np.arange(4), (np.arange(4) * 7 + i) % d)),
                             shape=(4, d))
    X = [seq(i) for i in range(3)]
    y = [np.array([0, 1, 2, 1]), np.array([1, 1, 0, 2]), np.array([2, 0, 1, 1])]
    return X, y


def test_available_bytes_reads_the_machine():
    avail = memory.available_bytes()
    assert avail is None or avail > 0


def test_check_memory_message_names_the_sizes(monkeypatch):
    monkeypatch.setattr(memory, "available_bytes", lambda: 2 * 2**30)
    memory.check_memory(2**30, "one GiB")  # fits: nothing raised
    with pytest.raises(MemoryError, match=r"weights would take about 3\.0 GiB, more than the "
                                          r"2\.0 GiB of memory available; use less"):
        memory.check_memory(3 * 2**30, "weights", "use less")
    monkeypatch.setattr(memory, "available_bytes", lambda: None)
    memory.check_memory(10**15, "unknown platform")  # no reading: no guess


@pytest.mark.parametrize("solver, copies", [("gdmm", 1), ("bcfw", 2), ("ssg", 3)])
def test_ssvm_refuses_dense_weights_beyond_memory(monkeypatch, solver, copies):
    d = 1_000_000
    X, y = _wide_data(d)
    need = 8 * copies * d * 3
    monkeypatch.setattr(memory, "available_bytes", lambda: need - 1)
    model = SequenceSSVM(solver=solver, max_iter=2)
    with pytest.raises(MemoryError, match=rf"SequenceSSVM\(solver='{solver}'\) weights over "
                                          rf"{d} features and 3 classes"):
        model.fit(X, y)
    assert not hasattr(model, "coef_")
    monkeypatch.setattr(memory, "available_bytes", lambda: need)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # max_iter=2
        model.fit(X, y)
    assert model.coef_.shape == (3, d)


def test_crf_refuses_index_arrays_and_dense_weights_beyond_memory(monkeypatch):
    d = 2_000_000
    X, y = _wide_data(d)
    monkeypatch.setattr(memory, "available_bytes", lambda: 6 * 8 * d - 1)
    with pytest.raises(MemoryError, match=f"A CRF over {d} features and 3 labels"):
        SequenceCRF(max_iter=2).fit(X, y)
    # room for the index arrays, not for dense weights (all_possible_states)
    monkeypatch.setattr(memory, "available_bytes", lambda: 6 * 8 * d + 8 * d)
    with pytest.raises(MemoryError, match=f"dense weights over {d} features"):
        SequenceCRF(max_iter=2, all_possible_states=True).fit(X, y)
    # the observed pairs need no dense layout: it fits
    model = SequenceCRF(max_iter=2).fit(X, y)
    assert sp.issparse(model.coef_) and model.coef_.shape == (3, d)


def test_perceptron_and_multilabel_refuse_weights_beyond_memory(monkeypatch):
    from structlearn.estimators import MultiLabelSSVM, SequencePerceptron

    d = 1_000_000
    X, y = _wide_data(d)
    monkeypatch.setattr(memory, "available_bytes", lambda: 8 * 2 * d * 3 - 1)
    with pytest.raises(MemoryError, match=f"SequencePerceptron weights .* over {d} features"):
        SequencePerceptron(max_iter=1).fit(X, y)
    Xm = sp.random(20, d, density=1e-6, format="csr", random_state=0)
    Ym = (np.arange(20 * 4).reshape(20, 4) % 3 == 0).astype(int)
    monkeypatch.setattr(memory, "available_bytes", lambda: 2**20)
    for solver in ("gdmm", "bcfw", "ssg"):
        with pytest.raises(MemoryError, match=rf"MultiLabelSSVM\(solver='{solver}'\) over "
                                              rf"{d + 1} features, 4 labels and 20 samples"):
            MultiLabelSSVM(solver=solver, max_iter=1).fit(Xm, Ym)


def test_gdmm_keeps_sparse_rows_where_dense_weights_do_not_fit(monkeypatch):
    """Where GDMM can keep sparse weight rows (sorted oracle), dense weights
    beyond the memory available give way to them rather than an error."""
    from structlearn.datasets import make_chain_data

    d, K = 20_000, 70
    X, _ = make_chain_data(20, length=4, n_labels=K, n_features=d, density=5 / d,
                           random_state=0)
    y = [np.arange(4 * i, 4 * i + 4) % K for i in range(20)]  # all K labels occur
    need = int(8 * 1.5 * d * K)  # W and its float32 copy
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        monkeypatch.setattr(memory, "available_bytes", lambda: need)
        dense = SequenceSSVM(max_iter=3, random_state=0).fit(X, y)
        monkeypatch.setattr(memory, "available_bytes", lambda: need - 1)
        rows = SequenceSSVM(max_iter=3, random_state=0).fit(X, y)
    assert isinstance(dense.coef_, np.ndarray)
    assert sp.issparse(rows.coef_) and rows.coef_.shape == (K, d)


def test_predict_topk_refuses_lists_beyond_memory(monkeypatch):
    """The list Viterbi's per-token lists are sized before they are allocated;
    the fitted model is untouched by the refused call."""
    from structlearn.datasets import make_chain_data

    X, y = make_chain_data(6, length=(3, 8), n_labels=4, n_features=5, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = SequenceSSVM(max_iter=2).fit(X, y)
    coef = model.coef_.copy()
    longest, tokens = max(x.shape[0] for x in X), sum(x.shape[0] for x in X)
    need = 24 * longest * 4 * 7 + 16 * tokens * 7
    monkeypatch.setattr(memory, "available_bytes", lambda: need - 1)
    with pytest.raises(MemoryError, match=rf"predict_topk\(k=7\) over 4 classes, {tokens} "
                                          rf"tokens \(longest sequence {longest}\)"):
        model.predict_topk(X, k=7)
    np.testing.assert_array_equal(model.coef_, coef)
    monkeypatch.setattr(memory, "available_bytes", lambda: need)
    labels, scores = model.predict_topk(X, k=7)
    assert [lab.shape[0] for lab in labels] == [7] * len(X)


@pytest.mark.parametrize("shape, dtype", [((3, 4), np.float64), (7, np.int64), ((2, 5), np.uint8),
                                          ((0, 3), np.float64)])
def test_written_zeros_equal_np_zeros(shape, dtype):
    out = memory.written_zeros(shape, dtype=dtype)
    expected = np.zeros(shape, dtype=dtype)
    assert out.dtype == expected.dtype and out.shape == expected.shape
    assert out.flags.c_contiguous and out.flags.writeable
    np.testing.assert_array_equal(out, expected)
