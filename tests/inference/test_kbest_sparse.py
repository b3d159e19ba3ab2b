"""List Viterbi over a mostly-zero transition table against the dense list
Viterbi and against enumeration: same sequences, scores and tie order."""

import itertools

import numpy as np
import pytest
from _chain_models import mostly_zero_models
from hypothesis import given, settings
from hypothesis import strategies as st

from structlearn.inference.chains._chain_kernels import (column_bits, transition_columns,
                                                  transition_rows)
from structlearn.inference.chains._kbest_kernels import kbest_sequences
from structlearn.inference.chains._kbest_sparse_kernels import DEEP_LEADERS, kbest_sequences_sparse


def _table(T, bitset=True):
    K = T.shape[0]
    cols = (np.empty(K + 1, dtype=np.int64), np.empty(K * K, dtype=np.int64), np.empty(K * K))
    transition_columns(T, *cols)
    nnz = cols[0][K]
    cols = (cols[0], cols[1][:nnz].copy(), cols[2][:nnz].copy())
    bits = column_bits(cols[0], cols[1]) if bitset else np.zeros((0, 0), dtype=np.uint64)
    return cols + transition_rows(*cols) + (bits,)


def _run(kernel_args, U, offsets, m):
    N, n_seq = U.shape[0], offsets.shape[0] - 1
    labels = np.zeros((N, m), dtype=np.int64)
    scores = np.empty((n_seq, m))
    found = np.zeros(n_seq, dtype=np.int64)
    kernel_args(labels, scores, found)
    return labels, scores, found


def _assert_sparse_equals_dense(U, offsets, T, m, deep_leaders=DEEP_LEADERS):
    dense = _run(lambda *out: kbest_sequences(U, offsets, T, m, *out), U, offsets, m)
    for bitset in (True, False):  # bit tests, and binary searches as for large K
        table = _table(T, bitset)
        sparse = _run(lambda *out: kbest_sequences_sparse(U, offsets, table, m, *out,
                                                          deep_leaders), U, offsets, m)
        np.testing.assert_array_equal(sparse[2], dense[2])
        np.testing.assert_array_equal(sparse[1], dense[1])
        for s in range(offsets.shape[0] - 1):
            rows = slice(offsets[s], offsets[s + 1])
            f = dense[2][s]
            np.testing.assert_array_equal(sparse[0][rows, :f], dense[0][rows, :f])
    return dense


def _random_case(rng, K, integer, density, forbid, max_len=6, max_seqs=5):
    lens = rng.integers(0, max_len, size=int(rng.integers(1, max_seqs)))
    offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    N = int(offsets[-1])
    if integer:  # small integers: many ties
        U = rng.integers(-2, 3, size=(N, K)).astype(float)
        T = rng.integers(-2, 3, size=(K, K)).astype(float)
    else:
        U, T = rng.normal(size=(N, K)), rng.normal(size=(K, K))
    T[rng.random((K, K)) >= density] = 0.0
    if forbid:
        U[rng.random(U.shape) < 0.2] = -np.inf
        T[rng.random((K, K)) < 0.1] = -np.inf
    return U, offsets, T


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 10**6), K=st.integers(1, 9), m=st.integers(1, 8),
       integer=st.booleans(), density=st.floats(0.0, 1.0), forbid=st.booleans())
def test_sparse_list_viterbi_equals_dense(seed, K, m, integer, density, forbid):
    rng = np.random.default_rng(seed)
    U, offsets, T = _random_case(rng, K, integer, density, forbid)
    _assert_sparse_equals_dense(U, offsets, T, m)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), K=st.integers(20, 90), m=st.integers(1, 12),
       integer=st.booleans(), n_full=st.integers(0, 3), forbid=st.booleans())
def test_sparse_list_viterbi_with_many_labels_equals_dense(seed, K, m, integer, n_full,
                                                           forbid):
    """Tens of labels, a few full columns (their non-zeros hold every leader:
    they read their own column)."""
    rng = np.random.default_rng(seed)
    U, offsets, T = _random_case(rng, K, integer, float(rng.uniform(0.0, 0.2)), forbid,
                                 max_len=8, max_seqs=4)
    for b in rng.choice(K, size=n_full, replace=False):
        T[:, b] = rng.normal(size=K)
    _assert_sparse_equals_dense(U, offsets, T, m)


def test_sparse_list_viterbi_equals_enumeration():
    """Rank by rank against all K^n sequences (ties by the lower state path
    from the end, as the kernels order them: compared as score sets)."""
    rng = np.random.default_rng(3)
    for _ in range(20):
        K, n, m = int(rng.integers(2, 5)), int(rng.integers(1, 5)), int(rng.integers(1, 7))
        U = rng.normal(size=(n, K))
        T = rng.normal(size=(K, K)) * (rng.random((K, K)) < 0.4)
        offsets = np.array([0, n], dtype=np.int64)
        table = _table(T)
        labels, scores, found = _run(
            lambda *out: kbest_sequences_sparse(U, offsets, table, m, *out), U, offsets, m)
        every = sorted((sum(U[t, y[t]] for t in range(n))
                        + sum(T[y[t], y[t + 1]] for t in range(n - 1)))
                       for y in itertools.product(range(K), repeat=n))[::-1]
        assert found[0] == min(m, K ** n)
        np.testing.assert_allclose(scores[0, :found[0]], every[:found[0]], rtol=1e-12)
        for r in range(found[0]):  # each labeling scores what is reported
            y = labels[:, r]
            s = sum(U[t, y[t]] for t in range(n)) + sum(T[y[t], y[t + 1]] for t in range(n - 1))
            assert np.isclose(s, scores[0, r], rtol=1e-12)


def test_deep_and_shallow_labels_each_exact():
    """Columns holding the leading states: with ``deep_leaders`` 0 nearly every
    label reads its own column; with a huge one every label is served by the
    row pass.  Both equal the dense kernel."""
    rng = np.random.default_rng(7)
    for _ in range(10):
        K, m = int(rng.integers(20, 60)), int(rng.integers(1, 6))
        U, offsets, T = _random_case(rng, K, bool(rng.integers(2)), 0.05, False, max_len=8,
                                     max_seqs=4)
        T[:, :3] = rng.normal(size=(K, 3))  # three full columns
        for deep_leaders in (0, 10**6):
            _assert_sparse_equals_dense(U, offsets, T, m, deep_leaders)


@pytest.mark.parametrize("n_jobs", [None, 2])
def test_predict_topk_over_a_mostly_zero_transition_table(n_jobs, monkeypatch):
    """``predict_topk`` of a many-label model with a mostly-zero
    ``transition_`` runs the sparse-table kernel (the dense one is made to
    fail) and returns the dense list Viterbi's sequences and scores."""
    import structlearn.inference.chains._kbest_kernels as dense_module

    for X, m in mostly_zero_models(n_jobs, 9, "topk"):
        T = m.transition_
        with monkeypatch.context() as mp:
            mp.setattr(dense_module, "kbest_sequences", None)
            labels, scores = m.predict_topk(X, k=4)
        for x, s, lab, sc in zip(X, m.decision_function(X), labels, scores):
            n = x.shape[0]
            ref = _run(lambda *out: kbest_sequences(np.ascontiguousarray(s),
                                                    np.array([0, n]), T, 4, *out),
                       s, np.array([0, n]), 4)
            f = ref[2][0]
            np.testing.assert_array_equal(sc, ref[1][0, :f])
            np.testing.assert_array_equal(lab, m.classes_[ref[0][:, :f].T])
