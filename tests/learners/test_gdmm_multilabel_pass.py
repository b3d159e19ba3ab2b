"""The multilabel GDMM pass (per-label pair lists, positive-partner shortcut,
pair rows in a pool that widen per sample) against a plain transcription of
Algorithm 3 that keeps each sample's pairs in a Python list, scans every
active pair for each label and every label for each step."""


import numpy as np
import scipy.sparse as sp

from structlearn.learners._gdmm_multilabel_kernels import (
    LabelEdges,
    MultilabelDuals,
    gdmm_multilabel_multipliers,
    gdmm_multilabel_pass,
)
from structlearn.learners._gdmm_multilabel_state import GDMMMultilabelState, label_adjacency
from structlearn.learners._gdmm_multilabel_storage import (_positive_edges, edge_pair_ids,
                                                           new_pair_pool)
from structlearn.learners.multilabel import MultilabelProblem
from structlearn.oracles._binary_kernels import pair_id
from structlearn.learners._multilabel_kernels import SampleFeatures, sample_scores


class _RefState:
    """Duals with each sample's active pairs as lists ``[a, b, dual, nu(3)]``."""

    def __init__(self, p):
        n, L = p.Y.shape
        self.A = np.zeros((n, L))
        self.tmask = np.zeros((n, L), dtype=np.uint8)
        self.pairs = [[] for _ in range(n)]
        self.W = np.zeros((p.n_features, L))
        self.Pw = np.zeros(L * (L - 1) // 2)


def _reference_pass(p, order, C, rho, st, rounds):
    """One BGCD pass, written for clarity: O(L x active pairs) per sample."""
    data, indices, indptr, Y, E = p.data, p.indices, p.indptr, p.Y, p.E
    n, L = Y.shape
    A, tmask, W, Pw = st.A, st.tmask, st.W, st.Pw
    xnorm2 = p.sq_norms()
    Qp = 1.0 + 3.0 * rho

    def cons(i, f):
        a, b, v = f[0], f[1], f[2]
        ya, yb = Y[i, a], Y[i, b]
        yf = ya * yb
        return (C * (yf - ya) - v + A[i, a], C * (yf - yb) - v + A[i, b],
                C * (ya + yb - 1 - yf) - A[i, a] - A[i, b] + v)

    def penalty(i, j):
        pen, k = 0.0, 0
        for f in st.pairs[i]:
            if j not in (f[0], f[1]):
                continue
            h1, h2, h3 = cons(i, f)
            p3 = max(0.0, h3 + f[3][2])
            pen += (max(0.0, h1 + f[3][0]) if f[0] == j else max(0.0, h2 + f[3][1])) - p3
            k += 1
        return pen, k

    def x(i, j):
        return Y[i, j] - A[i, j] / C

    u = np.empty(L)
    for i in order:
        pairs = st.pairs[i]
        sample_scores(W, data, indices, indptr, i, u)
        for j in range(L):
            if tmask[i, j] == 0:
                pen, _ = penalty(i, j)
                g = u[j] + (1.0 - 2.0 * Y[i, j]) + rho * pen
                if (g > 0.0 and Y[i, j] == 0) or (g < 0.0 and Y[i, j] != 0):
                    tmask[i, j] = 1
        if p.n_edges > 0:  # greedy pair: the largest joint gain over every edge
            active = {(f[0], f[1]) for f in pairs}
            g = u + 1.0 - 2.0 * Y[i]
            pbest, pa, pb = 0.0, -1, -1
            for a in range(L):
                for b in range(a + 1, L):
                    if E[a, b] == 0 or (a, b) in active:
                        continue
                    P = Pw[pair_id(a, b, L)]
                    if Y[i, a] and Y[i, b]:
                        gain = -P - (min(g[a], g[b]) if A[i, a] == 0 and A[i, b] == 0 else 0.0)
                    elif P > 0.0:
                        gain = P + sum(g[k] for k in (a, b) if x(i, k) == 0.0)
                    else:
                        continue
                    if gain > pbest:
                        pbest, pa, pb = gain, a, b
            if pa >= 0:
                pairs.append([pa, pb, 0.0, [0.0, 0.0, 0.0]])
                tmask[i, pa] = tmask[i, pb] = 1
        dsum = np.zeros(L)  # the visit's steps per label, for the weights
        for _ in range(rounds):
            for j in range(L):
                if tmask[i, j] == 0:
                    continue
                pen, k = penalty(i, j)
                g = u[j] + (1.0 - 2.0 * Y[i, j]) + rho * pen
                Q = max(xnorm2[i] + 2.0 * rho * k, 1e-12)
                lo, hi = (0.0, C) if Y[i, j] else (-C, 0.0)
                d = min(max(A[i, j] - g / Q, lo), hi) - A[i, j]
                if d == 0.0:
                    continue
                A[i, j] += d
                u[j] += xnorm2[i] * d  # the score after the step: x_i . (W + d x_i)
                dsum[j] += d
                if p.n_edges == 0:
                    continue
                partners = {f[1] if f[0] == j else f[0] for f in pairs if j in (f[0], f[1])}
                xj = x(i, j)
                for k in range(L):
                    if k == j or k in partners or E[min(j, k), max(j, k)] == 0:
                        continue
                    if tmask[i, k] == 0 and Y[i, k] == 0:
                        continue
                    xk = x(i, k)
                    bad = (xj < 1.0 or xk < 1.0) if Y[i, j] and Y[i, k] else xj + xk > 1.0
                    if bad:
                        pairs.append([min(j, k), max(j, k), 0.0, [0.0, 0.0, 0.0]])
            for f in pairs:
                a, b = f[0], f[1]
                h1, h2, h3 = cons(i, f)
                pid = pair_id(a, b, L)
                g = Pw[pid] + rho * (max(0.0, h3 + f[3][2]) - max(0.0, h1 + f[3][0])
                                     - max(0.0, h2 + f[3][1]))
                lo, hi = (0.0, C) if Y[i, a] * Y[i, b] else (-C, 0.0)
                d = min(max(f[2] - g / Qp, lo), hi) - f[2]
                if d != 0.0:
                    f[2] += d
                    Pw[pid] += d
        for j in range(L):  # the weights take the visit's summed steps
            if dsum[j] != 0.0:
                for q in range(indptr[i], indptr[i + 1]):
                    W[indices[q], j] += data[q] * dsum[j]


def _reference_multipliers(p, C, eta, st):
    Y, A = p.Y, st.A
    for i, pairs in enumerate(st.pairs):
        kept = []
        for f in pairs:
            a, b, v = f[0], f[1], f[2]
            ya, yb = Y[i, a], Y[i, b]
            yf = ya * yb
            hs = (C * (yf - ya) - v + A[i, a], C * (yf - yb) - v + A[i, b],
                  C * (ya + yb - 1 - yf) - A[i, a] - A[i, b] + v)
            f[3] = [max(0.0, nu + eta * h) for nu, h in zip(f[3], hs)]
            if not (v == 0.0 and f[3] == [0.0, 0.0, 0.0] and max(hs) <= 0.0):
                kept.append(f)
        st.pairs[i] = kept
        st.tmask[i, A[i] == 0.0] = 0


def _pool_pairs(pool, i):
    b = pool.base[i]
    return [[int(pool.left[b + q]), int(pool.right[b + q]), float(pool.dual[b + q]),
             [float(v) for v in pool.nu[b + q]]] for q in range(pool.count[i])]


def _problem(seed):
    rng = np.random.RandomState(seed)
    n, d, L = rng.randint(6, 14), rng.randint(2, 6), rng.randint(3, 11)
    X = rng.randn(n, d) * (rng.rand(n, d) < 0.7)
    Y = (rng.rand(n, L) < rng.choice([0.15, 0.4, 0.7])).astype(np.int64)
    if seed % 3 == 0:
        E = np.triu(np.ones((L, L), dtype=np.uint8), 1)
    else:
        E = np.triu((rng.rand(L, L) < 0.5).astype(np.uint8), 1)
    indptr = np.arange(0, n * d + 1, d, dtype=np.int64)
    indices = np.tile(np.arange(d, dtype=np.int64), n)
    return MultilabelProblem(X.ravel().astype(np.float64), indices, indptr, Y, E, d), rng


def _small_pool(n, cap, slack):
    """A pool of ``cap`` slots per sample and ``slack`` free slots at the end."""
    return new_pair_pool(np.full(n, cap, dtype=np.int64), slack)


def _run_pass(p, order, C, rho, rounds, st, stats):
    """The kernel pass to the end, compacting the pool whenever it asks.
    The greedy search's sorted edges are those of the pass start, which the
    reference reads live: both agree when the weights' order stays (tiny
    problems), else the test would show it."""
    nbr_ptr, nbr = label_adjacency(p.E)
    edges, pids = edge_pair_ids(p.E)
    pos, stops = 0, 0
    while pos < order.shape[0]:
        up = _positive_edges(edges, pids, np.full_like(st.Pw, np.inf))
        pos, need = gdmm_multilabel_pass(
            SampleFeatures(p.data, p.indices, p.indptr, p.Y, p.sq_norms()),
            LabelEdges(p.E, p.n_edges, nbr_ptr, nbr, *up, np.zeros(p.E.shape[0], np.uint8)),
            MultilabelDuals(st.W, st.Pw, st.A, st.tmask), st.pool, order, pos, C, rho, rounds,
            stats, p.data, 1.0)
        if need:
            st.compact(need)
            stops += 1
    return stops


def _compare(seed):
    """Five passes (with multiplier steps) of both from the same start, with
    1-3 rounds of steps per visit; the pool starts at 1-2 slots per sample
    with enough room at its end, so samples widen inside the pass (and the
    pass never stops).  Returns the active pairs at the end and the widenings."""
    p, rng = _problem(seed)
    rounds = 1 + seed % 3
    n, L = p.Y.shape
    C = float(rng.choice([0.1, 1.0, 10.0]))
    rho = float(rng.choice([0.5, 1.0, 4.0]))
    st = GDMMMultilabelState(p, False)
    st.pool = _small_pool(n, 1 + seed % 2, 40 * n * L * L)
    ref = _RefState(p)
    X = sp.csr_matrix((p.data, p.indices, p.indptr), shape=(n, p.n_features)).toarray()
    stats = np.zeros(2, dtype=np.int64)
    for _ in range(5):
        order = rng.permutation(n).astype(np.int64)
        assert _run_pass(p, order, C, rho, rounds, st, stats) == 0
        _reference_pass(p, order, C, rho, ref, rounds)
        for name in ("A", "tmask", "W", "Pw"):
            np.testing.assert_array_equal(getattr(st, name), getattr(ref, name), err_msg=name)
        for i in range(n):
            assert _pool_pairs(st.pool, i) == ref.pairs[i]
        # the weights written once per visit are those of the duals
        np.testing.assert_allclose(st.W, X.T @ st.A, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(st.Pw, st_pair_sums(st, L), rtol=1e-12, atol=1e-12)
        gdmm_multilabel_multipliers(p.Y, st.A, C, 1.0, st.tmask, st.pool)
        _reference_multipliers(p, C, 1.0, ref)
        for i in range(n):
            assert _pool_pairs(st.pool, i) == ref.pairs[i]
        np.testing.assert_array_equal(st.tmask, ref.tmask)
    return int(st.pool.count.sum()), int((st.pool.capacity > 2).sum())


def st_pair_sums(st, L):
    """``P_f = sum_i b_if`` from the active pairs' duals."""
    P = np.zeros(L * (L - 1) // 2)
    for i in range(st.pool.count.shape[0]):
        for f in _pool_pairs(st.pool, i):
            P[pair_id(f[0], f[1], L)] += f[2]
    return P


def test_pass_matches_the_plain_algorithm():
    runs = [_compare(seed) for seed in range(30)]
    # the cases exercise pair activation and samples widening their rows
    assert sum(pairs > 0 for pairs, _ in runs) >= 15
    assert sum(widened > 0 for _, widened in runs) >= 5


def test_a_full_pool_stops_the_pass_and_loses_no_step():
    """With no free room the pass stops, the pool is packed and the pass
    resumes at the same sample (visited again from its start): every step
    is kept, the weights stay those of the duals and the pair sums those
    of the pair duals, and no pair is active twice."""
    total_stops = 0
    for seed in range(12):
        p, rng = _problem(3 * seed)  # complete edge sets
        n, L = p.Y.shape
        st = GDMMMultilabelState(p, False)
        st.pool = _small_pool(n, 1, 0)
        X = sp.csr_matrix((p.data, p.indices, p.indptr), shape=(n, p.n_features)).toarray()
        stats = np.zeros(2, dtype=np.int64)
        for _ in range(4):
            order = rng.permutation(n).astype(np.int64)
            total_stops += _run_pass(p, order, 1.0, 1.0, 2, st, stats)
            np.testing.assert_allclose(st.W, X.T @ st.A, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(st.Pw, st_pair_sums(st, L), rtol=1e-12, atol=1e-12)
            for i in range(n):
                pairs = [(f[0], f[1]) for f in _pool_pairs(st.pool, i)]
                assert len(pairs) == len(set(pairs))
                assert all(a < b and p.E[a, b] for a, b in pairs)
            gdmm_multilabel_multipliers(p.Y, st.A, 1.0, 1.0, st.tmask, st.pool)
    assert total_stops > 0
