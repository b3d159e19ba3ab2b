"""Roof duality (one minimum cut) against enumeration, and the Dinic
maximum flow behind it against scipy's."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse.csgraph import maximum_flow

from structlearn.graphs import FactorGraph, grid_edges
from structlearn.inference import solve_map
from structlearn.inference.exact._maxflow_kernels import max_flow, residual_reachable
from structlearn.inference.exact.roof_duality import condition_pairwise, flow_network, roof_dual

from _graphgen import all_labelings


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**6))
def test_max_flow_matches_scipy_and_leaves_a_minimum_cut(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 12))
    m = int(rng.integers(1, 40))
    tails = rng.integers(0, n, size=m)
    heads = rng.integers(0, n, size=m)
    keep = tails != heads
    tails, heads = tails[keep], heads[keep]
    caps = rng.integers(0, 6, size=tails.shape[0]).astype(np.float64)  # parallel arcs too
    s, t = 0, n - 1
    indptr, head, tail, rev, res = flow_network(n, tails, heads, caps)
    flow = max_flow(indptr, head, tail, rev, res, s, t, 1e-12)
    dense = sp.csr_matrix((caps.astype(np.int32), (tails, heads)), shape=(n, n))
    assert flow == maximum_flow(dense, s, t).flow_value
    seen = np.empty(n, dtype=np.uint8)
    residual_reachable(indptr, head, res, s, 1e-12, seen)
    assert seen[s] == 1 and seen[t] == 0
    cut = caps[(seen[tails] == 1) & (seen[heads] == 0)].sum()
    assert cut == flow  # the reachable side is a minimum cut
    assert np.all(res >= -1e-12)  # residuals stay within the capacities


def binary_pairwise(seed, *, submodular=False, fixed=False, ties=False):
    """Random binary pairwise graph (some variables with one state or one
    forbidden state when ``fixed``)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 9))
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < 0.5]
    if not pairs:
        pairs = [(0, 1)]
    k = np.full(n, 2)
    if fixed:
        k[rng.random(n) < 0.2] = 1
    draw = (lambda size: rng.integers(-2, 3, size=size).astype(float)) if ties else \
        (lambda size: rng.normal(size=size))
    unary = [draw(int(kk)) for kk in k]
    if fixed:
        for i in np.flatnonzero((k == 2) & (rng.random(n) < 0.2)):
            unary[i][rng.integers(2)] = -np.inf
    tables = []
    for i, j in pairs:
        tab = draw(int(k[i] * k[j])).reshape(k[i], k[j])
        if submodular and tab.shape == (2, 2):
            w = tab[0, 0] + tab[1, 1] - tab[0, 1] - tab[1, 0]
            tab[0, 0] -= min(w, 0.0)  # scores supermodular: energies submodular
        tables.append(tab)
    return FactorGraph(k, unary=unary, scopes=pairs, tables=tables)


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 10**6), submodular=st.booleans(), fixed=st.booleans(),
       ties=st.booleans())
def test_roof_dual_labels_persist_and_bound_the_optimum(seed, submodular, fixed, ties):
    graph = binary_pairwise(seed, submodular=submodular, fixed=fixed, ties=ties)
    labelings = all_labelings(graph)
    scores = graph.score_many(labelings)
    best = scores.max()
    res = roof_dual(graph)
    assert res is not None
    assert res.upper_bound >= best - 1e-9
    known = res.labels >= 0
    assert res.n_labeled == known.sum()
    # weak persistency: some optimum agrees with every label the cut gives
    agree = np.all(labelings[:, known] == res.labels[known], axis=1)
    assert scores[agree].max() == pytest.approx(best, abs=1e-9)
    if submodular and not ties:  # unique optimum a.s.: the cut labels it all
        assert res.n_labeled == graph.n_vars
        assert graph.score(res.labels) == pytest.approx(best, abs=1e-9)
        assert res.upper_bound == pytest.approx(best, abs=1e-9)


def test_roof_dual_fixes_one_state_variables_and_forbidden_states():
    graph = FactorGraph([1, 2, 2], unary=[[0.0], [-np.inf, 0.0], [0.3, 0.0]],
                        scopes=[(0, 2), (1, 2)], tables=[[0.0, 1.0], [2.0, -5.0, 0.5, 0.0]])
    res = roof_dual(graph)
    assert res.labels[0] == 0 and res.labels[1] == 1
    # x2 = 0: 0.3 + 0 + 0.5 = 0.8; x2 = 1: 0 + 1 + 0 = 1
    assert res.labels[2] == 1 and res.upper_bound == pytest.approx(1.0)


def test_roof_dual_declines_other_graphs():
    three = FactorGraph([2, 3], scopes=[(0, 1)], tables=[np.zeros(6)])
    triple = FactorGraph([2, 2, 2], scopes=[(0, 1, 2)], tables=[np.zeros(8)])
    hard = FactorGraph([2, 2], scopes=[(0, 1)], tables=[[0.0, -np.inf, 0.0, 0.0]])
    for graph in (three, triple, hard):
        assert roof_dual(graph) is None
    with pytest.raises(TypeError, match="FactorGraph"):
        roof_dual(np.zeros(3))


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**6))
def test_conditioning_shifts_every_score_by_one_constant(seed):
    rng = np.random.default_rng(seed)
    graph = binary_pairwise(seed, fixed=True)
    labels = np.where(rng.random(graph.n_vars) < 0.5,
                      rng.integers(0, graph.n_states), -1).astype(np.int64)
    variables, reduced = condition_pairwise(graph, labels)
    assert np.array_equal(variables, np.flatnonzero(labels < 0))
    sub = all_labelings(reduced) if variables.size else np.zeros((1, 0), dtype=np.int64)
    full = np.tile(labels, (sub.shape[0], 1))
    full[:, variables] = sub
    a = graph.score_many(full)
    b = reduced.score_many(sub) if variables.size else np.zeros(1)
    lab = np.flatnonzero(labels >= 0)
    fixed_part = graph.unary[graph.unary_offsets[lab] + labels[lab]].sum()
    finite = np.isfinite(a)
    if fixed_part == -np.inf:  # a forbidden state among the given labels
        assert not finite.any()
        return
    assert np.array_equal(finite, np.isfinite(b))
    if finite.any():
        diff = a[finite] - b[finite]
        assert np.allclose(diff, diff[0])


def test_conditioning_needs_pairwise_factors():
    triple = FactorGraph([2, 2, 2], scopes=[(0, 1, 2)], tables=[np.zeros(8)])
    with pytest.raises(ValueError, match="pairwise"):
        condition_pairwise(triple, np.array([0, -1, -1]))


def test_submodular_grid_is_solved_by_the_cut_alone():
    """Potts smoothing on a binary grid: the search sees no variable left."""
    rng = np.random.default_rng(0)
    edges = grid_edges(12, 12)
    graph = FactorGraph(np.full(144, 2), unary=rng.normal(size=(144, 2)), scopes=edges,
                        tables=[0.7 * np.eye(2)], table_ids=np.zeros(len(edges), dtype=np.int64))
    res = solve_map(graph, "exact")
    ilp = solve_map(graph, "ilp")
    assert res.status == "exact" and res.n_iter == 1 and not res.history
    assert res.score == pytest.approx(ilp.score, abs=1e-9)
    assert res.upper_bound == pytest.approx(res.score, abs=1e-9)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), ties=st.booleans())
def test_search_after_persistency_finds_the_enumerated_optimum(seed, ties):
    graph = binary_pairwise(seed, fixed=True, ties=ties)
    best = graph.score_many(all_labelings(graph)).max()
    for persistency in (True, False):
        res = solve_map(graph, "exact", persistency=persistency, enumeration_limit=0)
        if best == -np.inf:
            assert res.status == "infeasible"
            continue
        assert res.status == "exact"
        assert res.score == pytest.approx(best, abs=1e-9)
        assert res.score == graph.score(res.labels)


def test_persistency_must_be_a_bool():
    graph = binary_pairwise(0)
    with pytest.raises(ValueError, match="persistency must be True or False"):
        solve_map(graph, "exact", persistency="yes")
