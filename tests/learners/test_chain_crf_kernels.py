"""Scaled forward-backward (with its log-domain fallback) and the chain-CRF L-BFGS kernels."""


import numpy as np
import pytest
from _graphgen import chain_enumeration, random_scores
from hypothesis import given, settings
from hypothesis import strategies as st

from structlearn.inference.chains._chain_kernels import (
    _exp_table,
    _fb_log_seq,
    _fb_scaled_seq,
    _scaled_tables,
    forward_backward_batch,
    forward_backward_grouped,
)
from structlearn.inference.chains.forward_backward import GEMM_MIN_LABELS, forward_backward
from structlearn.learners._chain_crf_kernels import lbfgs_direction

SETTINGS = settings(max_examples=60, deadline=None)


def _brute(u, trans):
    """log Z, node marginals and summed edge marginals by enumeration."""
    return chain_enumeration(u, trans)[:3]


def _scaled(u, trans):
    """Run the scaled recursion alone on one sequence."""
    n, K = u.shape
    E = np.empty((K, K))
    shift = _exp_table(trans, E)
    node = np.full((n, K), np.nan)
    m_seq = np.empty((K, K))
    ok, lz = _fb_scaled_seq(u, 0, n, E, np.ascontiguousarray(E.T), shift, np.empty((n, K)),
                            np.empty((n, K)), np.empty(n),
                            np.empty((3, K)), m_seq, node)  # fmt: skip
    return ok, lz, node, m_seq * E


def _log_domain(u, offsets, trans):
    """Reference: the log-domain recursion on every sequence."""
    N, K = u.shape
    tabs = (np.empty(K), np.empty(K), np.empty((K, K)), np.empty((K, K)))
    _scaled_tables(trans, *tabs)
    n_max = max(int(np.diff(offsets).max()), 1)
    node = np.zeros((N, K))
    tm = np.zeros((K, K))
    logz = np.zeros(offsets.shape[0] - 1)
    for s in range(logz.shape[0]):
        n = offsets[s + 1] - offsets[s]
        if n:
            logz[s] = _fb_log_seq(u, offsets[s], n, trans, *tabs, np.empty((n_max, K)),
                                  np.empty((n_max, K)), np.empty((3, K)), node, tm)  # fmt: skip
    return logz, node, tm


moderate = st.fixed_dictionaries(
    {
        "seed": st.integers(0, 2**32 - 1),
        "K": st.integers(1, 4),
        "n": st.integers(1, 5),
        "scale": st.sampled_from([0.1, 1.0, 8.0]),
        "integer": st.booleans(),
    }
)


@SETTINGS
@given(moderate)
def test_scaled_recursion_matches_brute_force(p):
    # finite scores spanning less than ~50: the scaled recursion must accept them
    rng = np.random.default_rng(p["seed"])
    kw = dict(integer=p["integer"], scale=p["scale"], p_inf=0.0)
    u = random_scores(rng, (p["n"], p["K"]), **kw) + rng.normal() * 1e3  # large common offset
    trans = random_scores(rng, (p["K"], p["K"]), **kw)
    ok, lz, node, edge = _scaled(u, trans)
    assert ok
    blz, bnode, bedge = _brute(u, trans)
    assert lz == pytest.approx(blz, rel=1e-13, abs=1e-10)
    np.testing.assert_allclose(node, bnode, atol=1e-12)
    np.testing.assert_allclose(edge, bedge, atol=1e-12)


mixed = st.fixed_dictionaries(
    {
        "seed": st.integers(0, 2**32 - 1),
        "K": st.integers(1, 7),
        "lengths": st.lists(st.integers(0, 30), min_size=1, max_size=6),
        "scale": st.sampled_from([1.0, 30.0, 120.0, 1e4]),
        "integer": st.booleans(),
        "p_inf": st.sampled_from([0.0, 0.1, 0.4]),
    }
)


def _check_against_log_domain(p, run):
    """Random stacked chains from the hypothesis parameters ``p``; the
    forward-backward ``run(u, offsets, trans, node, tm, logz)`` must agree
    with the log-domain recursion."""
    rng = np.random.default_rng(p["seed"])
    lengths = np.asarray(p["lengths"], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    K = p["K"]
    kw = dict(integer=p["integer"], scale=p["scale"], p_inf=p["p_inf"])
    u = random_scores(rng, (int(offsets[-1]), K), **kw)
    trans = random_scores(rng, (K, K), **kw)
    node = np.full(u.shape, np.nan)
    tm = np.full((K, K), np.nan)
    logz = np.full(lengths.shape[0], np.nan)
    run(u, offsets, trans, node, tm, logz)
    rlz, rnode, rtm = _log_domain(u, offsets, trans)
    np.testing.assert_allclose(logz, rlz, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(node, rnode, atol=1e-9)
    np.testing.assert_allclose(tm, rtm, rtol=1e-9, atol=1e-8)
    assert np.all(np.isfinite(node))


@SETTINGS
@given(mixed)
def test_batch_matches_log_domain(p):
    # long chains, scores from small to +-1e4 and forbidden entries: whatever
    # mix of scaled and log-domain sequences the batch kernel picks, it must
    # agree with the log-domain recursion
    _check_against_log_domain(p, forward_backward_batch)


grouped = st.fixed_dictionaries(
    {
        "seed": st.integers(0, 2**32 - 1),
        "K": st.integers(1, 6),
        "lengths": st.lists(st.integers(0, 12), min_size=1, max_size=40),
        "scale": st.sampled_from([1.0, 30.0, 120.0, 1e4]),
        "integer": st.booleans(),
        "p_inf": st.sampled_from([0.0, 0.02, 0.3]),
        "group_entries": st.sampled_from([1, 16, 200, 2**18]),
    }
)


@SETTINGS
@given(grouped)
def test_grouped_matrix_product_recursion_matches_log_domain(p):
    """The grouped (matrix product) recursion on small K and small groups,
    with sequences of every length (empty ones too) and scores that send some
    of them to the per-sequence fallback, against the log-domain recursion."""
    _check_against_log_domain(p, lambda *args: forward_backward_grouped(
        *args, p["group_entries"]))


@pytest.mark.parametrize("K", [GEMM_MIN_LABELS, 20, 40, 90])
def test_grouped_recursion_at_its_label_counts(K):
    """forward_backward as compiled (groups from K = GEMM_MIN_LABELS) against
    the per-sequence kernel on CRF-like scores, and with a forbidden score
    and a too widely spread position (per-sequence fallback) mixed in."""
    assert K >= GEMM_MIN_LABELS
    rng = np.random.default_rng(K)
    lengths = rng.integers(1, 30, size=60)
    lengths[7] = 0
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    u = rng.normal(size=(int(offsets[-1]), K)) * 4
    u[offsets[3] + 1, 5] = -np.inf
    u[offsets[10], 0] = 1e4
    trans = rng.normal(size=(K, K)) * 2
    out = []
    for f in (forward_backward_batch, forward_backward):
        node, tm, logz = np.empty(u.shape), np.empty((K, K)), np.empty(lengths.shape[0])
        f(u, offsets, trans, node, tm, logz)
        out.append((node, tm, logz))
    for a, b in zip(*out):
        np.testing.assert_allclose(b, a, rtol=1e-11, atol=1e-12)


def test_scaled_recursion_declines_extreme_scores():
    rng = np.random.default_rng(0)
    # +-1e4 within one position: refused by the range test
    u = np.array([[0.0, -1e4], [-1e4, 0.0], [0.0, -1e4]])
    trans = np.array([[-1e4, 0.0], [0.0, -1e4]])
    assert not _scaled(u, trans)[0]
    # ranges below the range test, but every likely path pays -290 per
    # transition: the scale factors fall to ~1e-126 and the recursion gives up
    u = np.array([[0.0, -290.0], [-290.0, 0.0], [0.0, -290.0], [-290.0, 0.0]])
    trans = np.array([[0.0, -290.0], [-290.0, 0.0]])
    assert not _scaled(u, trans)[0]
    for u, trans in [(u, trans), (rng.normal(size=(4, 3)) * 1e4, rng.normal(size=(3, 3)) * 1e4)]:
        node = np.empty_like(u)
        tm = np.empty_like(trans)
        logz = np.empty(1)
        forward_backward_batch(u, np.array([0, u.shape[0]]), trans, node, tm, logz)
        blz, bnode, bedge = _brute(u, trans)
        assert logz[0] == pytest.approx(blz, rel=1e-14)
        np.testing.assert_allclose(node, bnode, atol=1e-12)
        np.testing.assert_allclose(tm, bedge, atol=1e-12)


def test_scaled_recursion_is_taken_on_typical_scores():
    # the fast path is the one that runs on CRF-like scores (no silent fallback)
    rng = np.random.default_rng(1)
    for _ in range(20):
        n, K = rng.integers(1, 40), rng.integers(2, 20)
        u = rng.normal(size=(n, K)) * 5
        trans = rng.normal(size=(K, K)) * 3
        ok, lz, node, edge = _scaled(u, trans)
        assert ok
        rlz, rnode, rtm = _log_domain(u, np.array([0, n]), trans)
        assert lz == pytest.approx(rlz[0], rel=1e-13)
        np.testing.assert_allclose(node, rnode, atol=1e-12)
        np.testing.assert_allclose(edge, rtm, atol=1e-11)


def test_lbfgs_direction_matches_dense_update():
    rng = np.random.default_rng(0)
    n, m = 7, 4
    S = rng.normal(size=(m + 1, n))
    A = rng.normal(size=(n, n))
    A = A @ A.T + n * np.eye(n)  # pairs from a convex quadratic: s @ y > 0
    Y = S @ A
    rho = 1.0 / np.einsum("ij,ij->i", S, Y)
    g = rng.normal(size=n)
    out = np.empty(n)
    for order in [[], [2], [4, 0, 3], [1, 2, 3, 0]]:
        lbfgs_direction(g, S, Y, rho, np.array(order, dtype=np.int64), np.empty(m + 1), out)
        # H_0 = gamma I, then H <- V^T H V + rho s s^T for the pairs oldest first
        H = np.eye(n)
        if order:
            r = order[-1]
            H *= (S[r] @ Y[r]) / (Y[r] @ Y[r])
        for r in order:
            V = np.eye(n) - rho[r] * np.outer(Y[r], S[r])
            H = V.T @ H @ V + rho[r] * np.outer(S[r], S[r])
        np.testing.assert_allclose(out, -H @ g, rtol=1e-10, atol=1e-12)


def _pseudo_gradient_reference(w, g, l1):
    """OWL-QN's pseudo-gradient in numpy (Andrew and Gao 2007, eq. 4)."""
    out = g + l1 * np.sign(w)
    zero = w == 0
    gz = g[zero]
    out[zero] = np.where(gz + l1 < 0, gz + l1, np.where(gz - l1 > 0, gz - l1, 0.0))
    return out


@pytest.mark.parametrize("seed", range(5))
def test_owlqn_kernels_match_numpy(seed):
    from structlearn.learners._chain_crf_kernels import (abs_sum, owlqn_direction,
                                                         owlqn_pseudo_gradient, owlqn_step_to,
                                                         secant_products)

    rng = np.random.default_rng(seed)
    n = 200
    w = rng.normal(size=n) * (rng.random(n) < 0.6)  # many exact zeros
    g = rng.normal(size=n)
    g[:5] = 0.0
    l1 = 0.4
    pg = np.empty(n)
    owlqn_pseudo_gradient(w, g, l1, pg)
    np.testing.assert_array_equal(pg, _pseudo_gradient_reference(w, g, l1))
    p = rng.normal(size=n)
    want_p = np.where(p * pg >= 0, 0.0, p)
    owlqn_direction(pg, p)
    np.testing.assert_array_equal(p, want_p)
    orthant = np.where(w != 0, np.sign(w), -np.sign(pg))
    out = np.empty(n)
    owlqn_step_to(out, w, 0.7, p, pg)
    want = w + 0.7 * p
    want[np.sign(want) != orthant] = 0.0
    np.testing.assert_array_equal(out, want)
    assert abs_sum(w) == pytest.approx(np.abs(w).sum(), rel=1e-14)
    w2, g2 = rng.normal(size=n), rng.normal(size=n)
    sy, yy = secant_products(w2, w, g2, g)
    assert sy == pytest.approx((w2 - w) @ (g2 - g), rel=1e-12)
    assert yy == pytest.approx((g2 - g) @ (g2 - g), rel=1e-12)
