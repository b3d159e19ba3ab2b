"""Exact MAP back-ends, marginals and batch chain kernels against brute force."""

import itertools

import numpy as np
import pytest
from _graphgen import (
    add_random_factor,
    all_labelings,
    brute_force_reference,
    random_chain,
    random_forest,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from structlearn.graphs import FactorGraph, chain_graph, grid_graph
from structlearn.inference import (
    available_methods,
    chain_marginals,
    solve_map,
    tree_marginals,
)
from structlearn.inference.chains._chain_kernels import forward_backward_batch, viterbi_batch
from structlearn.inference.exact.forests import brute_force_map

SETTINGS = settings(max_examples=50, deadline=None)

graph_params = st.fixed_dictionaries(
    {
        "seed": st.integers(0, 2**32 - 1),
        "n_vars": st.integers(1, 7),
        "max_k": st.integers(1, 4),
        "integer": st.booleans(),
        "scale": st.sampled_from([1.0, 1e4]),
        "p_inf": st.sampled_from([0.0, 0.1, 0.4]),
    }
)


def _chain(p):
    rng = np.random.default_rng(p["seed"])
    n_paths = int(rng.integers(1, 3))
    return random_chain(
        rng, p["n_vars"], p["max_k"], integer=p["integer"], scale=p["scale"],
        p_inf=p["p_inf"], n_paths=n_paths,
    )


def _forest(p):
    rng = np.random.default_rng(p["seed"])
    return random_forest(
        rng, p["n_vars"], p["max_k"], integer=p["integer"], scale=p["scale"], p_inf=p["p_inf"]
    )


def _check_exact(res, graph, scores, method):
    # no finite labeling: proved infeasible, never "exact" on a -inf answer
    assert res.status == ("exact" if scores.max() > -np.inf else "infeasible")
    assert res.converged
    assert res.method == method
    assert res.labels.dtype == np.int64 and res.labels.shape == (graph.n_vars,)
    assert np.all((res.labels >= 0) & (res.labels < graph.n_states))
    assert res.score == graph.score(res.labels)
    assert res.upper_bound == res.score
    best = scores.max()
    if best == -np.inf:
        assert res.score == -np.inf
    else:
        # exact up to summation order
        assert res.score == pytest.approx(best, rel=1e-12, abs=1e-9)


# ------------------------------------------------------------------ MAP
@SETTINGS
@given(graph_params)
def test_viterbi_and_tree_match_brute_force_on_chains(p):
    g = _chain(p)
    _, scores, *_ = brute_force_reference(g)
    for method in ("viterbi", "tree", "brute_force", "auto"):
        res = solve_map(g, method=method)
        _check_exact(res, g, scores, "viterbi" if method == "auto" else method)


@SETTINGS
@given(graph_params)
def test_tree_matches_brute_force_on_forests(p):
    g = _forest(p)
    _, scores, *_ = brute_force_reference(g)
    _check_exact(solve_map(g, method="tree"), g, scores, "tree")
    auto = solve_map(g)
    assert auto.method in ("viterbi", "tree")
    _check_exact(auto, g, scores, auto.method)


@SETTINGS
@given(graph_params)
def test_brute_force_returns_first_best_labeling(p):
    g = _forest(p)
    labs, scores, *_ = brute_force_reference(g)
    res = brute_force_map(g)
    # np.argmax returns the first maximum in lexicographic order (all -inf -> zeros)
    np.testing.assert_array_equal(res.labels, labs[np.argmax(scores)])


def test_ties_go_to_lowest_labels():
    # all-zero scores: every labeling ties; each method returns all zeros
    g = chain_graph(np.zeros((5, 3)), np.zeros((3, 3)))
    for method in ("viterbi", "tree", "brute_force"):
        np.testing.assert_array_equal(solve_map(g, method=method).labels, 0)
    # a tie between labels 1 and 2 at every position, label 0 worse
    u = np.tile([0.0, 1.0, 1.0], (4, 1))
    g = chain_graph(u, np.zeros((3, 3)))
    for method in ("viterbi", "tree", "brute_force"):
        np.testing.assert_array_equal(solve_map(g, method=method).labels, 1)


def test_all_labelings_forbidden():
    u = np.zeros((3, 2))
    trans = np.full((2, 2), -np.inf)
    g = chain_graph(u, trans)
    for method in ("viterbi", "tree", "brute_force"):
        res = solve_map(g, method=method)
        assert res.score == -np.inf and res.upper_bound == -np.inf
        assert res.status == "infeasible" and res.converged
        np.testing.assert_array_equal(res.labels, 0)
    log_z, node, edges = chain_marginals(g)
    assert log_z == -np.inf and not node.any() and not edges.any()
    log_z, node, fm, _ = tree_marginals(g)
    assert log_z == -np.inf and not node.any() and not fm.any()


def test_single_variable_and_no_factors():
    g = FactorGraph([3], unary=[np.array([0.0, 2.0, 2.0])])
    for method in ("viterbi", "tree", "brute_force", "auto"):
        res = solve_map(g, method=method)
        assert res.labels.tolist() == [1] and res.score == 2.0
    log_z, node, edges = chain_marginals(g)
    assert log_z == pytest.approx(np.log(1 + 2 * np.e**2))
    assert edges.shape == (0, 3, 3)


def test_higher_order_factor_tree():
    rng = np.random.default_rng(3)
    # factor over (2, 0, 3) and pairwise (3, 1): a factor tree
    n_states = [2, 3, 2, 4]
    scopes = [(2, 0, 3), (3, 1)]
    tables = [rng.normal(size=(2, 2, 4)), rng.normal(size=(4, 3))]
    g = FactorGraph(n_states, unary=[rng.normal(size=k) for k in n_states], scopes=scopes,
                    tables=tables)
    labs, scores, log_z, node, factors = brute_force_reference(g)
    res = solve_map(g)
    assert res.method == "tree"
    np.testing.assert_array_equal(res.labels, labs[np.argmax(scores)])
    with pytest.raises(ValueError, match="chain"):
        solve_map(g, method="viterbi")
    lz, nm, fm, foff = tree_marginals(g)
    assert lz == pytest.approx(log_z)
    np.testing.assert_allclose(nm, node, atol=1e-12)
    for f in range(2):
        np.testing.assert_allclose(fm[foff[f]:foff[f + 1]], factors[f].ravel(), atol=1e-12)


# ------------------------------------------------------------ marginals
def _check_marginals(log_z, node, ref):
    _, _, rlz, rnode, _ = ref
    if rlz == -np.inf:
        assert log_z == -np.inf
        assert not node.any()
    else:
        assert log_z == pytest.approx(rlz, rel=1e-12, abs=1e-9)
        np.testing.assert_allclose(node, rnode, atol=1e-9)


@SETTINGS
@given(graph_params)
def test_chain_marginals_match_enumeration(p):
    g = _chain(p)
    ref = brute_force_reference(g)
    log_z, node, edges = chain_marginals(g)
    assert node.shape == (g.n_vars, g.max_states)
    assert edges.shape == (g.n_factors, g.max_states, g.max_states)
    _check_marginals(log_z, node, ref)
    for f, rf in enumerate(ref[4]):
        ka, kb = rf.shape
        np.testing.assert_allclose(edges[f, :ka, :kb], rf, atol=1e-9)
        assert not edges[f, ka:].any() and not edges[f, :, kb:].any()


@SETTINGS
@given(graph_params)
def test_tree_marginals_match_enumeration(p):
    g = _forest(p)
    ref = brute_force_reference(g)
    log_z, node, fm, foff = tree_marginals(g)
    _check_marginals(log_z, node, ref)
    assert foff[-1] == fm.shape[0]
    for f, rf in enumerate(ref[4]):
        np.testing.assert_allclose(fm[foff[f]:foff[f + 1]], rf.ravel(), atol=1e-9)


def test_marginals_stable_at_large_scores():
    # +-1e4 scores: log Z is dominated by the best labeling; nothing overflows
    rng = np.random.default_rng(0)
    u = rng.normal(size=(6, 3)) * 1e4
    trans = rng.normal(size=(3, 3)) * 1e4
    g = chain_graph(u, trans)
    ref = brute_force_reference(g)
    log_z, node, edges = chain_marginals(g)
    assert np.isfinite(log_z) and np.all(np.isfinite(node)) and np.all(np.isfinite(edges))
    _check_marginals(log_z, node, ref)
    lz2, node2, _, _ = tree_marginals(g)
    assert lz2 == pytest.approx(ref[2], rel=1e-12)
    np.testing.assert_allclose(node2, ref[3], atol=1e-9)
    # near-ties at a huge offset: marginals are exactly 1/2
    g = chain_graph(np.full((2, 2), 1e4), np.array([[1e4, -1e4], [-1e4, 1e4]]))
    log_z, node, edges = chain_marginals(g)
    assert log_z == pytest.approx(3e4 + np.log(2), rel=1e-15)
    np.testing.assert_allclose(node, 0.5, atol=1e-15)
    np.testing.assert_allclose(edges[0], [[0.5, 0], [0, 0.5]], atol=1e-15)


# --------------------------------------------------- batch chain kernels
def _chain_brute(u, trans):
    n, K = u.shape
    labs = np.array(list(itertools.product(range(K), repeat=n)), dtype=np.int64)
    s = u[np.arange(n), labs].sum(1)
    if n > 1:
        s = s + trans[labs[:, :-1], labs[:, 1:]].sum(1)
    return labs, s


batch_params = st.fixed_dictionaries(
    {
        "seed": st.integers(0, 2**32 - 1),
        "K": st.integers(1, 4),
        "lengths": st.lists(st.integers(0, 5), min_size=1, max_size=4),
        "integer": st.booleans(),
        "scale": st.sampled_from([1.0, 1e4]),
        "p_inf": st.sampled_from([0.0, 0.2, 0.5]),
    }
)


def _batch(p):
    from _graphgen import random_scores

    rng = np.random.default_rng(p["seed"])
    lengths = np.asarray(p["lengths"], dtype=np.int64)
    offsets = np.zeros(lengths.shape[0] + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    K = p["K"]
    kw = dict(integer=p["integer"], scale=p["scale"], p_inf=p["p_inf"])
    u = random_scores(rng, (int(offsets[-1]), K), **kw)
    trans = random_scores(rng, (K, K), **kw)
    return u, offsets, trans


@SETTINGS
@given(batch_params)
def test_viterbi_batch_matches_brute_force(p):
    u, offsets, trans = _batch(p)
    out = np.full(u.shape[0], -1, dtype=np.int64)
    viterbi_batch(u, offsets, trans, out)
    assert np.all((out >= 0) & (out < u.shape[1]))
    for s in range(offsets.shape[0] - 1):
        us = u[offsets[s]:offsets[s + 1]]
        if us.shape[0] == 0:
            continue
        labs, scores = _chain_brute(us, trans)
        y = out[offsets[s]:offsets[s + 1]]
        got = us[np.arange(len(y)), y].sum() + trans[y[:-1], y[1:]].sum()
        best = scores.max()
        if best == -np.inf:
            assert got == -np.inf
        else:
            assert got == pytest.approx(best, rel=1e-12, abs=1e-9)
        # consistent with the general chain back-end on the same sequence
        if us.shape[0] > 1:
            g = chain_graph(us, trans)
            np.testing.assert_array_equal(solve_map(g, method="viterbi").labels, y)


@SETTINGS
@given(batch_params)
def test_forward_backward_batch_matches_brute_force(p):
    u, offsets, trans = _batch(p)
    N, K = u.shape
    n_seq = offsets.shape[0] - 1
    node = np.full((N, K), np.nan)
    tm = np.full((K, K), np.nan)
    logz = np.full(n_seq, np.nan)
    forward_backward_batch(u, offsets, trans, node, tm, logz)
    tm_ref = np.zeros((K, K))
    for s in range(n_seq):
        us = u[offsets[s]:offsets[s + 1]]
        n = us.shape[0]
        if n == 0:
            assert logz[s] == 0.0
            continue
        labs, scores = _chain_brute(us, trans)
        m = scores.max()
        if m == -np.inf:
            assert logz[s] == -np.inf
            assert not node[offsets[s]:offsets[s + 1]].any()
            continue
        lz = m + np.log(np.exp(scores - m).sum())
        assert logz[s] == pytest.approx(lz, rel=1e-12, abs=1e-9)
        prob = np.exp(scores - lz)
        for t in range(n):
            ref = np.bincount(labs[:, t], weights=prob, minlength=K)
            np.testing.assert_allclose(node[offsets[s] + t], ref, atol=1e-9)
            if t < n - 1:
                np.add.at(tm_ref, (labs[:, t], labs[:, t + 1]), prob)
    np.testing.assert_allclose(tm, tm_ref, atol=1e-9)


def test_forward_backward_batch_extreme_scores():
    # label paths separated by 2e4 in score: the scaled products underflow and the
    # kernel must fall back to exact log-sum-exp
    u = np.array([[0.0, -1e4], [-1e4, 0.0], [0.0, -1e4]])
    trans = np.array([[-1e4, 0.0], [0.0, -1e4]])
    offsets = np.array([0, 3])
    node = np.empty((3, 2))
    tm = np.empty((2, 2))
    logz = np.empty(1)
    forward_backward_batch(u, offsets, trans, node, tm, logz)
    labs, scores = _chain_brute(u, trans)
    m = scores.max()
    assert logz[0] == pytest.approx(m + np.log(np.exp(scores - m).sum()), rel=1e-14)
    np.testing.assert_allclose(node, [[1, 0], [0, 1], [1, 0]], atol=1e-12)
    # the best path 0 -> 1 -> 0 holds all the mass
    np.testing.assert_allclose(tm, [[0, 1], [1, 0]], atol=1e-12)


# --------------------------------------------------------------- errors
def _loopy():
    rng = np.random.default_rng(0)
    return grid_graph(rng.normal(size=(2, 2, 2)), rng.normal(size=(2, 2)))


def test_structure_errors():
    g = _loopy()
    with pytest.raises(ValueError, match="chain"):
        solve_map(g, method="viterbi")
    with pytest.raises(ValueError, match="forest"):
        solve_map(g, method="tree")
    with pytest.raises(ValueError, match="chain"):
        chain_marginals(g)
    with pytest.raises(ValueError, match="forest"):
        tree_marginals(g)
    # a forest that is not a chain
    star = FactorGraph([2] * 4, scopes=[(0, 1), (0, 2), (0, 3)], tables=[np.zeros(4)] * 3)
    with pytest.raises(ValueError, match="chain"):
        solve_map(star, method="viterbi")
    assert solve_map(star).method == "tree"


def test_parallel_factors_are_a_cycle():
    from structlearn.graphs import merge_parallel_factors

    rng = np.random.default_rng(1)
    g = FactorGraph([2, 3], scopes=[(0, 1), (1, 0)],
                    tables=[rng.normal(size=6), rng.normal(size=6)])
    with pytest.raises(ValueError, match="cycle"):
        solve_map(g, method="viterbi")
    merged = merge_parallel_factors(g)
    labs, scores, *_ = brute_force_reference(g)
    res = solve_map(merged, method="viterbi")
    assert g.score(res.labels) == pytest.approx(scores.max())


def test_brute_force_limit():
    g = FactorGraph([10] * 8)  # 1e8 labelings
    with pytest.raises(ValueError, match="max_states"):
        solve_map(g, method="brute_force")
    with pytest.raises(ValueError, match="max_states"):
        solve_map(FactorGraph([3] * 3), method="brute_force", max_states=26)
    res = solve_map(FactorGraph([3] * 3), method="brute_force", max_states=27)
    assert res.score == 0.0
    with pytest.raises(ValueError, match="max_states"):
        solve_map(FactorGraph([3]), method="brute_force", max_states=0)


def test_unknown_method_and_parameters():
    g = chain_graph(np.zeros((3, 2)), np.zeros((2, 2)))
    with pytest.raises(ValueError, match="viterbi") as exc:
        solve_map(g, method="no-such-method")
    for name in ("brute_force", "tree", "viterbi"):
        assert name in str(exc.value)
    assert {"viterbi", "tree", "brute_force"} <= set(available_methods())
    with pytest.raises(TypeError, match="max_iter"):
        solve_map(g, method="viterbi", max_iter=3)
    with pytest.raises(TypeError, match="FactorGraph"):
        solve_map(np.zeros(3), method="viterbi")


def test_auto_on_loopy_graph():
    g = _loopy()
    res = solve_map(g)
    assert res.method in available_methods() and res.method not in ("viterbi", "tree")
    assert res.score == g.score(res.labels) and res.reason


@SETTINGS
@given(graph_params, st.integers(2, 3))
def test_loopy_graphs_refused(p, order):
    rng = np.random.default_rng(p["seed"])
    g = _forest(p)
    if g.n_vars < 3:
        return
    loopy = add_random_factor(rng, g, order=order)
    from structlearn.graphs import is_forest

    if not is_forest(loopy):
        with pytest.raises(ValueError):
            solve_map(loopy, method="tree")
        with pytest.raises(ValueError):
            solve_map(loopy, method="viterbi")
    _, scores, *_ = brute_force_reference(loopy)
    res = solve_map(loopy, method="brute_force")
    assert res.score == scores.max() or (
        res.score == pytest.approx(scores.max(), rel=1e-12)
    )
    assert all_labelings(loopy).shape[0] == scores.shape[0]


def test_brute_force_limit_on_huge_graphs_reports_the_count_without_overflow():
    import warnings

    g = FactorGraph([1000] * 200)  # 1e600 labelings: beyond float64
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=r"1e\+600 labelings, above max_states") as exc:
            solve_map(g, method="brute_force")
        assert "inf" not in str(exc.value)
        # 2**1400 = 2.77e421 labelings against an integer limit beyond float64
        with pytest.raises(ValueError, match=r"2\.77e\+421 labelings"):
            solve_map(FactorGraph([2] * 1400), method="brute_force", max_states=10**400)
