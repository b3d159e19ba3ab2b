"""Viterbi over a mostly-zero transition table (the SSVM certificate's
fast path) against the dense Viterbi: identical labelings, ties included."""

import numpy as np
import pytest
from _chain_models import mostly_zero_models
from hypothesis import given, settings
from hypothesis import strategies as st

from structlearn.inference.chains._chain_kernels import (_TOP_LABELS, _top_labels, column_bits,
                                                  transition_columns, transition_rows,
                                                  viterbi_batch, viterbi_batch_sparse,
                                                  viterbi_batch_sparse_rows)
from structlearn.inference.chains.viterbi import SPARSE_VITERBI_MIN_LABELS, sparse_transition_table
from structlearn.learners._chains import TrainingChains
from structlearn.learners._ssvm_chain_kernels import (HINGE_BLOCK_ENTRIES, chain_hinges,
                                                      chain_primal, primal_from_hinges)


def _random_chains(rng, lens, d, K, density):
    """Sequences of the given lengths: offsets, dense features X and their CSR
    arrays (data, indices, indptr), labels y and weights W (d, K)."""
    offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    N = int(offsets[-1])
    X = (rng.random((N, d)) < density) * rng.normal(size=(N, d))
    indptr = np.concatenate([[0], np.cumsum((X != 0).sum(1))]).astype(np.int64)
    indices = np.nonzero(X)[1].astype(np.int64)
    y = rng.integers(0, K, size=N).astype(np.int64)
    return offsets, X, X[X != 0], indices, indptr, y, rng.normal(size=(d, K))


def _columns(T):
    K = T.shape[0]
    ptr, rows, vals = np.empty(K + 1, dtype=np.int64), np.empty(K * K, dtype=np.int64), np.empty(K * K)
    transition_columns(T, ptr, rows, vals)
    return ptr, rows, vals


def _random_batch(rng, max_len, max_seqs, integer):
    """Offsets of 1 to ``max_seqs - 1`` sequences of 1 to ``max_len - 1``
    tokens, and a draw of small integers (ties) or normal scores."""
    lens = rng.integers(1, max_len, size=int(rng.integers(1, max_seqs)))
    offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    if integer:
        return offsets, lambda *shape: rng.integers(-2, 3, size=shape).astype(float)
    return offsets, lambda *shape: rng.normal(size=shape)


def _assert_sparse_equals_dense(U, offsets, T, cols=None):
    """The sparse kernel, with the rows' bitset and with binary searches (as
    above ``_BITSET_MAX_LABELS``), labels like the dense one."""
    N = U.shape[0]
    dense, sparse = np.empty(N, dtype=np.int64), np.empty(N, dtype=np.int64)
    viterbi_batch(U, offsets, T, dense)
    cols = _columns(T) if cols is None else cols
    viterbi_batch_sparse(U, offsets, *cols, sparse)
    np.testing.assert_array_equal(sparse, dense)
    searched = np.empty(N, dtype=np.int64)
    viterbi_batch_sparse_rows(U, offsets, *cols, *transition_rows(*cols),
                              np.zeros((0, 0), dtype=np.uint64), searched)
    np.testing.assert_array_equal(searched, dense)


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 10**6), K=st.integers(1, 12), integer=st.booleans(),
       density=st.floats(0.0, 1.0), forbid=st.booleans())
def test_sparse_viterbi_equals_dense(seed, K, integer, density, forbid):
    rng = np.random.default_rng(seed)
    offsets, draw = _random_batch(rng, 7, 5, integer)
    U, T = draw(int(offsets[-1]), K), draw(K, K)
    T[rng.random((K, K)) >= density] = 0.0
    if forbid:
        U[rng.random(U.shape) < 0.2] = -np.inf
        T[rng.random((K, K)) < 0.1] = -np.inf
    _assert_sparse_equals_dense(U, offsets, T)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**6), K=st.integers(20, 150), integer=st.booleans(),
       n_wide=st.integers(0, 3), forbid=st.booleans())
def test_sparse_viterbi_with_many_labels_equals_dense(seed, K, integer, n_wide, forbid):
    """Tens to a hundred and fifty labels, some columns full: sparse columns
    walk the few best labels, full ones scan all labels."""
    rng = np.random.default_rng(seed)
    offsets, draw = _random_batch(rng, 6, 4, integer)
    U, T = draw(int(offsets[-1]), K), draw(K, K)
    T[rng.random((K, K)) >= rng.choice([0.02, 0.1, 0.3])] = 0.0
    for b in rng.choice(K, size=n_wide, replace=False):  # wide columns
        T[:, b] = draw(K)
    if forbid:
        U[rng.random(U.shape) < 0.3] = -np.inf
        T[rng.random((K, K)) < 0.05] = -np.inf
    _assert_sparse_equals_dense(U, offsets, T)


def test_sparse_viterbi_wide_columns_break_ties_like_dense():
    """A few nearly full columns among sparse ones: they hold most of the best
    labels, so their best outside row comes from a scan and their non-zeros
    are read on their own; many tied scores: the lowest row wins, as in the
    dense Viterbi."""
    rng = np.random.default_rng(11)
    K = 120
    for _ in range(20):
        lens = rng.integers(2, 8, size=6)
        offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
        N = int(offsets[-1])
        U = rng.integers(-1, 2, size=(N, K)).astype(float)
        T = rng.choice([-1.0, 1.0], size=(K, K)) * (rng.random((K, K)) < 0.02)
        wide = rng.choice(K, size=3, replace=False)
        for b in wide:
            rows = rng.choice(K, size=100, replace=False)
            T[rows, b] = rng.choice([-2.0, -1.0], size=rows.size)  # outside rows win
        U[:, wide] += 3.0  # and the best paths pass through the wide columns
        cols = _columns(T)
        assert np.diff(cols[0]).max() >= K // 2
        _assert_sparse_equals_dense(U, offsets, T, cols)


def test_top_labels_are_the_stable_descending_order():
    rng = np.random.default_rng(3)
    for _ in range(300):
        K = int(rng.integers(1, 40))
        delta = rng.integers(-3, 3, size=K).astype(float)
        delta[rng.random(K) < 0.2] = -np.inf
        top = np.empty(int(rng.integers(1, 10)), dtype=np.int64)
        n = _top_labels(delta, top)
        assert n == min(K, top.shape[0])
        np.testing.assert_array_equal(top[:n], np.argsort(-delta, kind="stable")[:n])


def test_transition_rows_and_bits_hold_the_table():
    rng = np.random.default_rng(4)
    for _ in range(50):
        K = int(rng.integers(1, 150))
        T = rng.integers(-2, 3, size=(K, K)).astype(float) * (rng.random((K, K)) < 0.3)
        T[:, rng.integers(0, K)] = rng.normal(size=K)  # one full column
        ptr, rows, vals = _columns(T)
        row_ptr, row_cols, row_vals = transition_rows(ptr, rows, vals)
        for a in range(K):
            lo, hi = row_ptr[a], row_ptr[a + 1]
            assert sorted(row_cols[lo:hi]) == sorted(np.flatnonzero(T[a] != 0))
            np.testing.assert_array_equal(row_vals[lo:hi], T[a, row_cols[lo:hi]])
            assert np.all(np.diff(row_vals[lo:hi]) <= 0)
        bits = column_bits(ptr, rows)
        unpacked = np.unpackbits(bits.view(np.uint8), axis=1, bitorder="little")[:, :K]
        np.testing.assert_array_equal(unpacked.astype(bool), (T != 0).T)


def test_sparse_viterbi_walks_past_the_few_best_labels():
    """Columns that hold more of the best labels as rows than the kernel
    keeps per position, and lie on the best path: their best predecessor is
    a label outside them found by a scan."""
    rng = np.random.default_rng(5)
    K = 60
    for integer in (False, True):
        for _ in range(20):
            offsets = np.array([0, 4, 9, 10], dtype=np.int64)
            U = rng.normal(size=(10, K))
            if integer:
                U = np.round(U)
            U[:, :_TOP_LABELS + 3] += 5.0  # the same labels lead at every position
            T = np.zeros((K, K))
            T[rng.random((K, K)) < 0.02] = rng.normal()
            held = rng.choice(_TOP_LABELS + 3, size=3, replace=False)
            for b in held:  # hold the leaders as rows, and lose to a label outside
                T[:_TOP_LABELS + int(rng.integers(0, 3)), b] = -3.0 - rng.random()
            U[:, held] += 2.0  # on the best path
            _assert_sparse_equals_dense(U, offsets, T)


def test_certificate_uses_the_sparse_path_and_keeps_its_value():
    """chain_primal at K above the threshold with a 2 % dense table equals the
    primal computed with the dense Viterbi (same hinges, same sum order)."""
    rng = np.random.default_rng(0)
    K, d = 200, 30
    lens = rng.integers(1, 8, size=40)
    offsets, X, data, indices, indptr, y, W = _random_chains(rng, lens, d, K, 0.2)
    N = int(offsets[-1])
    v = np.zeros((K, K))
    mask = rng.random((K, K)) < 0.02
    v[mask] = rng.normal(size=mask.sum())
    assert sparse_transition_table(v) is not None
    hinge = np.empty(offsets.shape[0] - 1)
    value = chain_primal(W, None, v, TrainingChains(data, indices, indptr, offsets, y), 0.5, 1.0,
                         np.empty(N, dtype=np.int64), hinge)
    # reference: dense Viterbi on the loss-augmented scores
    unary = X @ W + 1.0
    unary[np.arange(N), y] -= 1.0
    z = np.empty(N, dtype=np.int64)
    viterbi_batch(unary, offsets, v, z)
    ref = np.empty_like(hinge)
    for s in range(ref.shape[0]):
        a, b = offsets[s], offsets[s + 1]
        h = unary[np.arange(a, b), z[a:b]].sum() - unary[np.arange(a, b), y[a:b]].sum()
        h += v[z[a:b - 1], z[a + 1:b]].sum() - v[y[a:b - 1], y[a + 1:b]].sum()
        ref[s] = max(h, 0.0)
    np.testing.assert_allclose(hinge, ref, rtol=1e-10, atol=1e-10)
    assert value == primal_from_hinges(W, None, v, 1.0, 0.5, hinge)


@pytest.mark.parametrize("n_chunks", [1, 3])
@pytest.mark.parametrize("sparse_table", [False, True])
def test_certificate_blocks_give_the_whole_batch_hinges(sparse_table, n_chunks):
    """The certificate scores blocks of whole sequences (at most
    HINGE_BLOCK_ENTRIES scores at once): with N K several times that, over one
    range or several, the hinges and labelings equal a loss-augmented Viterbi
    over all tokens at once."""
    rng = np.random.default_rng(1)
    K, d = 200, 20
    lens = rng.integers(1, 30, size=250)
    lens[7] = 1400  # one sequence longer than a block
    offsets, X, data, indices, indptr, y, W = _random_chains(rng, lens, d, K, 0.3)
    N = int(offsets[-1])
    assert N * K > 3 * HINGE_BLOCK_ENTRIES and lens[7] * K > HINGE_BLOCK_ENTRIES
    v = rng.normal(size=(K, K))
    if sparse_table:
        v[rng.random((K, K)) >= 0.02] = 0.0
    cols = sparse_transition_table(v)
    assert (cols is not None) == sparse_table
    z, hinge = np.empty(N, dtype=np.int64), np.empty(lens.shape[0])
    bounds = np.linspace(0, lens.shape[0], n_chunks + 1).astype(int)
    for a, b in zip(bounds[:-1], bounds[1:]):
        chain_hinges(W, None, v, cols, TrainingChains(data, indices, indptr, offsets, y), 1.0, a,
                     b, z, hinge)
    unary = X @ W + 1.0
    unary[np.arange(N), y] -= 1.0
    zref = np.empty(N, dtype=np.int64)
    viterbi_batch(unary, offsets, v, zref)
    np.testing.assert_array_equal(z, zref)
    for s in range(lens.shape[0]):
        a, b = offsets[s], offsets[s + 1]
        h = unary[np.arange(a, b), z[a:b]].sum() - unary[np.arange(a, b), y[a:b]].sum()
        h += v[z[a:b - 1], z[a + 1:b]].sum() - v[y[a:b - 1], y[a + 1:b]].sum()
        assert hinge[s] == pytest.approx(max(h, 0.0), rel=1e-10, abs=1e-10)


@pytest.mark.parametrize("n_jobs", [None, 2])
def test_predict_over_a_mostly_zero_transition_table_equals_the_dense_viterbi(n_jobs,
                                                                               monkeypatch):
    """A model with many labels and a mostly-zero ``transition_`` (as a
    structural SVM keeps it) decodes with the sparse-table kernel (the dense
    one is made to fail); the labels equal the dense Viterbi's over the
    same scores.  The cost model is made to choose the sparse kernel at these
    few labels."""
    import structlearn.inference.chains.viterbi as vit

    monkeypatch.setattr(vit, "sparse_kernel_is_faster", lambda *args: True)
    for X, m in mostly_zero_models(n_jobs, 12, "viterbi"):
        T = m.transition_
        with monkeypatch.context() as mp:
            mp.setattr(vit, "viterbi_batch", None)
            pred = m.predict(X)
        scores = m.decision_function(X)
        for x, s, p in zip(X, scores, pred):
            z = np.empty(x.shape[0], dtype=np.int64)
            viterbi_batch(np.ascontiguousarray(s), np.array([0, x.shape[0]]), T, z)
            np.testing.assert_array_equal(p, m.classes_[z])


@pytest.mark.parametrize("K, fill, k, viterbi, topk", [
    (4, 0.0, 2, False, False),  # below SPARSE_VITERBI_MIN_LABELS
    (8, 0.05, 20, False, True),  # the list Viterbi's sparse kernel wins at low fill
    (8, 0.3, 5, False, False),
    (16, 0.25, 5, False, True),
    (16, 0.25, 20, False, False),
    (50, 0.01, 5, False, True),  # the dense Viterbi wins below about 90 labels
    (64, 0.6, 5, False, False),
    (120, 0.01, 5, True, True),
    (100, 0.2, 5, False, True),
    (300, 0.02, 5, True, True),
    (300, 0.5, 5, False, True),
    (1000, 0.5, 5, True, True),
])
def test_each_decoder_takes_the_sparse_table_where_its_kernel_is_the_faster(K, fill, k, viterbi,
                                                                             topk):
    """The Viterbi's and the list Viterbi's dense kernels differ in cost, so
    each decoder has its own choice (``sparse_kernel_is_faster``)."""
    assert K >= SPARSE_VITERBI_MIN_LABELS or not (viterbi or topk)
    rng = np.random.default_rng(0)
    T = np.zeros(K * K)
    T[rng.choice(K * K, size=round(fill * K * K), replace=False)] = rng.normal(
        size=round(fill * K * K))
    T = T.reshape(K, K)
    assert (sparse_transition_table(T) is not None) == viterbi
    assert (sparse_transition_table(T, "viterbi") is not None) == viterbi
    assert (sparse_transition_table(T, "topk", k) is not None) == topk
    with pytest.raises(ValueError, match="decoder must be"):
        sparse_transition_table(T, "kbest")


def test_predict_keeps_the_dense_viterbi_where_only_top_k_takes_the_sparse_table(monkeypatch):
    """At 64 labels and 3 % fill ``predict`` decodes with the dense Viterbi
    (the sparse kernel is made to fail) while ``predict_topk`` takes the
    sparse list Viterbi (the dense one is made to fail); both agree on rank 0."""
    import structlearn.inference.chains._kbest_kernels as dense_kbest
    import structlearn.inference.chains.viterbi as vit

    X, m = next(mostly_zero_models(None, 12, "topk", fills=(0.03,)))
    with monkeypatch.context() as mp:
        mp.setattr(vit, "viterbi_batch_sparse_rows", None)
        pred = m.predict(X)
    with monkeypatch.context() as mp:
        mp.setattr(dense_kbest, "kbest_sequences", None)
        labels, _ = m.predict_topk(X, k=2)
    for p, lab in zip(pred, labels):
        np.testing.assert_array_equal(p, lab[0])
