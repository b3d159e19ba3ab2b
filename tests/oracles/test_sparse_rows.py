"""Sparse-row weights against a dense (d, K) array: same values bit for bit
(updates, squared norm, token scores) and the same oracle answers as the
dense inner-product oracle, ties and listed labels included."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from structlearn.learners._ssvm_chain_kernels import _sq_sum, unary_scores
from structlearn.oracles._inner_kernels import inner_product_fmo
from structlearn.oracles._sparse_rows_kernels import (sparse_rows_add, sparse_rows_fmo,
                                                      sparse_rows_sq_sum,
                                                      sparse_rows_unary_scores,
                                                      sparse_rows_update)
from structlearn.oracles.inner_product import make_inner_workspace
from structlearn.oracles.sparse_rows import (make_sparse_rows, make_sparse_rows_workspace,
                                             sparse_rows_nnz, sparse_rows_to_csr,
                                             sparse_rows_to_dense)


def _random_weights(rng, d, K, n_updates, integer):
    """The same random updates applied to sparse rows (starting tiny, so the
    pool grows and rows move) and to a dense array."""
    rows = make_sparse_rows(d, 16)
    W = np.zeros((d, K))
    for _ in range(n_updates):
        f, k = int(rng.integers(d)), int(rng.integers(K))
        delta = float(rng.integers(-2, 3)) if integer else float(rng.normal())
        rows = sparse_rows_add(rows, f, k, delta)
        W[f, k] += delta
    return rows, W


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 10**6), d=st.integers(1, 12), K=st.integers(1, 40),
       n_updates=st.integers(0, 300), integer=st.booleans())
def test_updates_norm_and_scores_equal_the_dense_array(seed, d, K, n_updates, integer):
    rng = np.random.default_rng(seed)
    rows, W = _random_weights(rng, d, K, n_updates, integer)
    np.testing.assert_array_equal(sparse_rows_to_csr(rows, K).toarray(), W)
    np.testing.assert_array_equal(sparse_rows_to_dense(rows, K), W)
    assert sparse_rows_nnz(rows) >= np.count_nonzero(W)
    assert sparse_rows_sq_sum(rows) == _sq_sum(W.ravel())
    N = 6
    X = (rng.random((N, d)) < 0.5) * (rng.integers(-2, 3, size=(N, d)) if integer
                                       else rng.normal(size=(N, d)))
    indptr = np.concatenate([[0], np.cumsum((X != 0).sum(1))]).astype(np.int64)
    indices = np.nonzero(X)[1].astype(np.int64)
    data = X[X != 0].astype(np.float64)
    a, b = np.empty((N, K)), np.empty((N, K))
    unary_scores(W, data, indices, indptr, 0, N, a)
    sparse_rows_unary_scores(rows, data, indices, indptr, 0, N, b)
    np.testing.assert_array_equal(a, b)


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 10**6), d=st.integers(1, 8), K=st.integers(1, 30),
       n_updates=st.integers(0, 120), integer=st.booleans(), n_add=st.integers(0, 6),
       gt=st.integers(-1, 29), ex=st.integers(-1, 29), loss=st.sampled_from([0.0, 1.0, 0.5]))
def test_oracle_equals_the_dense_oracle(seed, d, K, n_updates, integer, n_add, gt, ex, loss):
    rng = np.random.default_rng(seed)
    rows, W = _random_weights(rng, d, K, n_updates, integer)
    gt = gt if gt < K else K - 1
    ex = ex if ex < K else -1
    n_add = min(n_add, K)
    add_idx = rng.choice(K, size=n_add, replace=False).astype(np.int64)
    add_val = (rng.integers(-2, 3, size=n_add) if integer else rng.normal(size=n_add)).astype(float)
    x = (rng.random(d) < 0.6) * (rng.integers(-2, 3, size=d) if integer else rng.normal(size=d))
    indices = np.flatnonzero(x).astype(np.int64)
    data = x[indices].astype(np.float64)
    dense_ws = make_inner_workspace(K)
    best, y = inner_product_fmo(W, indices, data, 0, indices.size, add_idx, add_val, n_add,
                                loss, gt, ex, dense_ws)
    ws = make_inner_workspace(K)
    ws[0][:] = rng.normal(size=K)  # stale scores from an earlier call
    assert sparse_rows_fmo(rows, indices, data, 0, indices.size, add_idx, add_val, n_add,
                           loss, gt, ex, ws) == (best, y)
    # every label's raw score is left behind, and the scratch is clean again
    np.testing.assert_array_equal(ws[0], dense_ws[0])
    assert not ws[1].any()


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 10**6), d=st.integers(1, 10), K=st.integers(1, 30),
       n_updates=st.integers(0, 150), n_tokens=st.integers(1, 8), integer=st.booleans())
def test_token_updates_equal_the_dense_updates(seed, d, K, n_updates, n_tokens, integer):
    """sparse_rows_update (rows walked once, missing labels inserted after)
    gives the dense `W[f, lab] += x * delta` values, rows staying sorted."""
    rng = np.random.default_rng(seed)
    rows, W = _random_weights(rng, d, K, n_updates, integer)
    posmap = make_sparse_rows_workspace(K)
    for _ in range(n_tokens):
        x = (rng.random(d) < 0.5) * (rng.integers(-2, 3, size=d) if integer else rng.normal(size=d))
        indices = np.flatnonzero(x).astype(np.int64)
        data = x[indices].astype(np.float64)
        m = int(rng.integers(0, K + 1))
        labs = rng.choice(K, size=m, replace=False).astype(np.int64)
        deltas = rng.integers(-2, 3, size=m).astype(float) if integer else rng.normal(size=m)
        rows = sparse_rows_update(rows, indices, data, 0, indices.size, labs, deltas, m, posmap)
        for s in range(m):
            for p in range(indices.size):
                W[indices[p], labs[s]] += data[p] * deltas[s]
        assert (posmap == -1).all()
    np.testing.assert_array_equal(sparse_rows_to_csr(rows, K).toarray(), W)
    start, length, _, lab, _, _ = rows
    for f in range(d):
        assert np.all(np.diff(lab[start[f]:start[f] + length[f]]) > 0)


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 10**6), d=st.integers(1, 8), K=st.integers(1, 30),
       n_updates=st.integers(0, 120), integer=st.booleans(), n_listed=st.integers(0, 30))
def test_listed_scores_equal_the_full_scores(seed, d, K, n_updates, integer, n_listed):
    """A token's scores of a few listed labels (the search-free unigram step)
    are the full scores at those labels, bit for bit, and leave the scratch
    map all -1."""
    from structlearn.oracles._sparse_rows_kernels import (sparse_rows_listed_scores,
                                                          sparse_rows_scores)

    rng = np.random.default_rng(seed)
    rows, _ = _random_weights(rng, d, K, n_updates, integer)
    x = (rng.random(d) < 0.7) * (rng.integers(-2, 3, size=d) if integer else rng.normal(size=d))
    indices = np.flatnonzero(x).astype(np.int64)
    data = x[indices].astype(np.float64)
    labels = rng.permutation(K)[:min(n_listed, K)].astype(np.int64)
    full, listed = np.empty(K), np.full(K, np.nan)
    posmap = make_sparse_rows_workspace(K)
    sparse_rows_scores(rows, indices, data, 0, indices.size, full)
    sparse_rows_listed_scores(rows, indices, data, 0, indices.size, labels, labels.size, listed,
                              posmap)
    np.testing.assert_array_equal(listed[:labels.size], full[labels])
    assert (posmap == -1).all()
