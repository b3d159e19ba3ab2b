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
        self.reads = 0

    def perf_counter(self):
        self.reads += 1
        return next(self.ticks)


def _with_each_kernel_winning(monkeypatch, call, dense_kernel, sparse_kernel):
    """Yield ``call()``'s output with every batch's kernels timed, the dense
    and then the sparse one made the faster, after checking that the winner
    (a ``(module, name)`` pair) decoded the chunks as well as its probes."""
    for dense, sparse in [(1.0, 2.0), (2.0, 1.0)]:
        with monkeypatch.context() as mp:
            mp.setattr(vit, "TIMED_CHOICE_MIN_WORK", 0)
            mp.setattr(vit, "TIMED_CHOICE_MIN_PROBE", 1)
            mp.setattr(vit, "time", _Clock(dense, sparse))
            module, name = dense_kernel if dense < sparse else sparse_kernel
            real, taken = getattr(module, name), []
            mp.setattr(module, name, lambda *args: taken.append(1) or real(*args))
            out = call()
        assert len(taken) >= 3  # its two probes, then the chunks
        yield out


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


@pytest.mark.parametrize("K, fill, n_positions, decoder", [
    (100, 0.2, 10, "viterbi"),       # a small batch
    (300, 0.2, 900, "viterbi"),      # work enough, but a slice of 45 positions
    (16, 0.2, 10**6, "viterbi"),     # few labels
    (100, 0.7, 10**6, "viterbi"),    # a dense table
    (4, 0.5, 10**7, "topk"),         # below the list Viterbi's sparse kernel
    (20, 0.5, 200, "topk"),
])
def test_small_batches_and_dense_tables_keep_the_rule(K, fill, n_positions, decoder):
    T = _table(K, fill)

    def probe(table, n):
        raise AssertionError("no kernel should be timed here")

    got = vit.timed_transition_table(T, n_positions, probe, decoder, 5)
    rule = vit.sparse_transition_table(T, decoder, 5)
    assert (got is None) == (rule is None)


@pytest.mark.parametrize("dense, sparse, want_sparse", [(2.0, 1.0, True), (1.0, 2.0, False)])
def test_the_list_viterbi_is_timed_on_dense_tables_too(monkeypatch, dense, sparse,
                                                        want_sparse):
    """The sparse list Viterbi can win at 90 % fill: no fill keeps it from
    the timing; the slice is a twentieth of a short batch."""
    calls = []
    monkeypatch.setattr(vit, "time", _Clock(dense, sparse))
    T = _table(64, 0.9)
    table = vit.timed_transition_table(T, 4000, lambda table, n: calls.append(n), "topk", 5)
    assert (table is not None) == want_sparse
    assert calls == [1, 1, 200, 200]
    with pytest.raises(ValueError, match="decoder must be"):
        vit.timed_transition_table(T, 2000, lambda table, n: None, "kbest")


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
    monkeypatch.setattr(vit, "TIMED_CHOICE_MIN_PROBE", 1)
    clock = _Clock(dense, sparse)
    monkeypatch.setattr(vit, "time", clock)
    timed, timed_hinge = primal()
    assert clock.reads == 4  # both kernels were timed
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
    for got in _with_each_kernel_winning(monkeypatch, lambda: model.predict(X),
                                         (vit, "viterbi_batch"),
                                         (vit, "viterbi_batch_sparse_rows")):
        for a, b in zip(want, got):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("n_jobs", [None, 2])
def test_predict_topk_does_not_depend_on_the_kernel_taken(monkeypatch, n_jobs):
    """``predict_topk``'s labels and scores equal the dense list Viterbi's
    whichever kernel the timing takes, and the winner is the one run."""
    import structlearn.inference.chains._kbest_kernels as dense_kbest
    import structlearn.inference.chains._kbest_sparse_kernels as sparse_kbest

    with monkeypatch.context() as mp:
        mp.setattr(vit, "sparse_kernel_is_faster", lambda *args: True)
        X, model = next(mostly_zero_models(n_jobs, 12, "topk", fills=(0.03,)))
    with monkeypatch.context() as mp:
        mp.setattr(vit, "sparse_kernel_is_faster", lambda *args: False)
        want = model.predict_topk(X, k=3)
    for got in _with_each_kernel_winning(monkeypatch, lambda: model.predict_topk(X, k=3),
                                         (dense_kbest, "kbest_sequences"),
                                         (sparse_kbest, "kbest_sequences_sparse")):
        for part_want, part_got in zip(want, got):
            for a, b in zip(part_want, part_got):
                np.testing.assert_array_equal(a, b)
