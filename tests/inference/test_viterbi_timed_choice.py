"""The Viterbi kernel chosen by timing both on a slice of a large batch
(``timed_transition_table``): the faster on the slice is taken, small batches
keep the cost model's choice, and the labels, hinges and certificates do not
depend on which kernel wins."""

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from _chain_models import mostly_zero_models

import structlearn.inference.chains.viterbi as vit
from structlearn.learners._chains import TrainingChains
from structlearn.learners._ssvm_chain_kernels import chain_primal


class _Clock:
    """``perf_counter`` for :mod:`viterbi`: the dense kernel's timed probe
    takes ``dense`` seconds, the sparse one's ``sparse``."""

    def __init__(self, dense, sparse):
        self.ticks = itertools.accumulate(itertools.cycle([0.0, dense, 0.0, sparse]))

    def perf_counter(self):
        return next(self.ticks)


def _table(K, fill, seed=0):
    rng = np.random.default_rng(seed)
    T = np.round(rng.normal(size=(K, K)), 1)
    return T * (rng.random((K, K)) < fill)


@pytest.mark.parametrize("dense, sparse, want_sparse", [(2.0, 1.0, True), (1.0, 2.0, False)])
def test_the_kernel_faster_on_the_probe_is_taken(monkeypatch, dense, sparse, want_sparse):
    calls = []
    monkeypatch.setattr(vit, "time", _Clock(dense, sparse))
    T = _table(100, 0.2)
    table = vit.timed_transition_table(T, 10**6, lambda table, n: calls.append((table, n)))
    assert (table is not None) == want_sparse
    if want_sparse:
        np.testing.assert_array_equal(table[0], vit.sparse_table(T)[0])
    # both kernels loaded on one position, then timed on the slice
    assert [n for _, n in calls] == [1, 1, vit.TIMED_CHOICE_POSITIONS,
                                     vit.TIMED_CHOICE_POSITIONS]
    assert [t is None for t, _ in calls] == [True, False, True, False]


@pytest.mark.parametrize("K, fill, n_positions", [
    (100, 0.2, 10),       # a small batch
    (16, 0.2, 10**6),     # few labels
    (100, 0.7, 10**6),    # a dense table
])
def test_small_batches_and_dense_tables_keep_the_rule(K, fill, n_positions):
    T = _table(K, fill)

    def probe(table, n):
        raise AssertionError("no kernel should be timed here")

    got = vit.timed_transition_table(T, n_positions, probe)
    rule = vit.sparse_transition_table(T)
    assert (got is None) == (rule is None)


@pytest.mark.parametrize("dense, sparse", [(2.0, 1.0), (1.0, 2.0)])
def test_the_certificate_value_does_not_depend_on_the_kernel_taken(monkeypatch, dense, sparse):
    rng = np.random.default_rng(3)
    K, d = 60, 12
    lens = rng.integers(1, 9, size=70)
    offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    N = int(offsets[-1])
    X = sp.random(N, d, density=0.3, format="csr", random_state=3)
    y = rng.integers(0, K, size=N).astype(np.int64)
    W = rng.normal(size=(d, K))
    chains = TrainingChains(X.data, X.indices.astype(np.int64), X.indptr.astype(np.int64),
                            offsets, y)
    v = _table(K, 0.1, seed=4)

    def primal():
        hinge = np.empty(lens.shape[0])
        return chain_primal(W, None, v, chains, 0.5, 1.0, np.empty(N, dtype=np.int64),
                            hinge), hinge

    ruled, ruled_hinge = primal()  # the rule, on this small batch
    monkeypatch.setattr(vit, "TIMED_CHOICE_MIN_WORK", 0)
    monkeypatch.setattr(vit, "time", _Clock(dense, sparse))
    timed, timed_hinge = primal()
    assert timed == ruled
    np.testing.assert_array_equal(timed_hinge, ruled_hinge)


@pytest.mark.parametrize("n_jobs", [None, 2])
@pytest.mark.parametrize("as_sparse", [False, True])
def test_predict_labels_do_not_depend_on_the_kernel_taken(monkeypatch, n_jobs, as_sparse):
    """Dense and sparse input (the probe slices either), both kernels made
    the faster in turn; the labels equal the dense Viterbi's."""
    with monkeypatch.context() as mp:  # a table the sparse kernel may take
        mp.setattr(vit, "sparse_kernel_is_faster", lambda *args: True)
        X, model = next(mostly_zero_models(n_jobs, 12, "viterbi", fills=(0.03,)))
    if as_sparse:
        X = [sp.csr_matrix(x) for x in X]
    with monkeypatch.context() as mp:
        mp.setattr(vit, "sparse_kernel_is_faster", lambda *args: False)
        mp.setattr(vit, "viterbi_batch_sparse_rows", None)
        want = model.predict(X)
    for dense, sparse in [(2.0, 1.0), (1.0, 2.0)]:
        with monkeypatch.context() as mp:
            mp.setattr(vit, "TIMED_CHOICE_MIN_WORK", 0)
            mp.setattr(vit, "time", _Clock(dense, sparse))
            taken = []
            real = vit.viterbi_batch if dense < sparse else vit.viterbi_batch_sparse_rows
            name = "viterbi_batch" if dense < sparse else "viterbi_batch_sparse_rows"
            mp.setattr(vit, name, lambda *args: taken.append(1) or real(*args))
            got = model.predict(X)
        assert len(taken) >= 3  # its two probes, then the chunks
        for a, b in zip(want, got):
            np.testing.assert_array_equal(a, b)
