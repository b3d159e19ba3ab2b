"""Structure tests (chains, forests, components) against naive references."""

import numpy as np
import pytest
from _graphgen import add_random_factor, all_labelings, random_chain, random_forest
from hypothesis import given, settings
from hypothesis import strategies as st

from structlearn.graphs import (
    FactorGraph,
    bfs_schedule,
    chain_graph,
    chain_order,
    complete_graph,
    connected_components,
    grid_graph,
    is_chain,
    is_forest,
    merge_parallel_factors,
)

SETTINGS = settings(max_examples=50, deadline=None)


def _naive_structure(graph):
    """Union-find over the bipartite variable-factor graph.

    Returns (is_forest, is_chain, component labels numbered by lowest member).
    """
    n, m = graph.n_vars, graph.n_factors
    parent = list(range(n + m))

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    forest = True
    for f in range(m):
        for v in graph.scope(f):
            a, b = find(int(v)), find(n + f)
            if a == b:
                forest = False
            else:
                parent[a] = b
    deg = np.zeros(n, int)
    for f in range(m):
        deg[graph.scope(f)] += 1
    pairwise = all(len(graph.scope(f)) == 2 for f in range(m))
    chain = forest and pairwise and (deg <= 2).all()
    roots = [find(v) for v in range(n)]
    first = {}
    comp = np.array([first.setdefault(r, len(first)) for r in roots], dtype=np.int64)
    return forest, chain, comp


def _random_graph(rng, n_vars, n_factors, max_order):
    scopes = []
    for _ in range(n_factors):
        order = int(rng.integers(2, min(max_order, n_vars) + 1))
        scopes.append(rng.choice(n_vars, size=order, replace=False).tolist())
    n_states = rng.integers(1, 3, size=n_vars)
    tables = [np.zeros(int(np.prod(n_states[s]))) for s in scopes]
    return FactorGraph(n_states, scopes=scopes, tables=tables)


@SETTINGS
@given(
    st.integers(0, 2**32 - 1), st.integers(2, 9), st.integers(0, 8), st.integers(2, 3)
)
def test_structure_matches_union_find(seed, n_vars, n_factors, max_order):
    rng = np.random.default_rng(seed)
    g = _random_graph(rng, n_vars, n_factors, max_order)
    forest, chain, comp = _naive_structure(g)
    assert is_forest(g) == forest
    assert is_chain(g) == chain
    n_comp, got = connected_components(g)
    assert n_comp == comp.max() + 1
    np.testing.assert_array_equal(got, comp)
    if not chain:
        with pytest.raises(ValueError, match="not a chain"):
            chain_order(g)


def _check_chain_order(g):
    order, link = chain_order(g)
    assert sorted(order.tolist()) == list(range(g.n_vars))
    assert link[0] == -1
    used = link[link >= 0]
    assert sorted(used.tolist()) == list(range(g.n_factors))
    for k in np.flatnonzero(link >= 0):
        assert set(g.scope(link[k]).tolist()) == {order[k - 1], order[k]}
    # each path starts at its lowest-index end
    starts = np.flatnonzero(link < 0)
    ends = np.r_[starts[1:] - 1, g.n_vars - 1]
    assert np.all(order[starts] <= order[ends])
    return order, link


@SETTINGS
@given(st.integers(0, 2**32 - 1), st.integers(1, 9), st.integers(1, 3))
def test_random_chains(seed, n_vars, n_paths):
    rng = np.random.default_rng(seed)
    g = random_chain(rng, n_vars, 3, n_paths=n_paths)
    assert is_chain(g) and is_forest(g)
    order, link = _check_chain_order(g)
    assert (link < 0).sum() == connected_components(g)[0]


@SETTINGS
@given(st.integers(0, 2**32 - 1), st.integers(1, 9))
def test_random_forests_and_added_loops(seed, n_vars):
    rng = np.random.default_rng(seed)
    g = random_forest(rng, n_vars, 2)
    assert is_forest(g)
    var_order, var_parent, factor_order, factor_parent, comp, cycle = bfs_schedule(g)
    assert not cycle
    assert sorted(factor_order.tolist()) == list(range(g.n_factors))
    pos = np.empty(g.n_vars, int)
    pos[var_order] = np.arange(g.n_vars)
    fpos = np.empty(g.n_factors, int)
    fpos[factor_order] = np.arange(g.n_factors)
    for f in range(g.n_factors):
        # a factor's parent variable comes before its other variables
        p = factor_parent[f]
        assert p in g.scope(f)
        for v in g.scope(f):
            if v != p:
                assert var_parent[v] == f and pos[v] > pos[p]
    for v in range(g.n_vars):
        if var_parent[v] >= 0:
            assert fpos[var_parent[v]] >= 0
    if n_vars >= 3:
        loopy = add_random_factor(rng, g, order=2)
        assert is_forest(loopy) == _naive_structure(loopy)[0]


def test_builders():
    u2 = np.zeros((4, 2))
    assert is_chain(chain_graph(u2, np.zeros((2, 2))))
    np.testing.assert_array_equal(chain_order(chain_graph(u2, np.zeros((2, 2))))[0], range(4))
    assert not is_forest(grid_graph(np.zeros((2, 2, 2)), np.zeros((2, 2))))
    assert is_chain(grid_graph(np.zeros((1, 5, 2)), np.zeros((2, 2))))
    assert not is_forest(complete_graph(np.zeros((3, 2)), np.zeros((2, 2))))
    assert is_chain(complete_graph(np.zeros((2, 2)), np.zeros((2, 2))))
    # no factors at all: independent variables are paths of length one
    g = FactorGraph([2, 3, 1])
    assert is_chain(g) and is_forest(g)
    assert chain_order(g)[1].tolist() == [-1, -1, -1]
    assert connected_components(g)[0] == 3
    empty = FactorGraph(np.zeros(0, dtype=np.int64))
    assert is_chain(empty) and is_forest(empty)
    assert connected_components(empty)[0] == 0


def test_higher_order_star_is_forest_not_chain():
    g = FactorGraph([2] * 4, scopes=[(0, 1, 2), (2, 3)], tables=[np.zeros(8), np.zeros(4)])
    assert is_forest(g) and not is_chain(g)
    # two factors sharing two variables close a cycle
    g = FactorGraph([2] * 3, scopes=[(0, 1, 2), (2, 1)], tables=[np.zeros(8), np.zeros(4)])
    assert not is_forest(g)


def test_ring_is_not_chain():
    g = FactorGraph([2] * 4, scopes=[(0, 1), (1, 2), (2, 3), (3, 0)],
                    tables=[np.zeros(4)], table_ids=[0, 0, 0, 0])
    assert not is_chain(g) and not is_forest(g)
    with pytest.raises(ValueError, match="cycle"):
        chain_order(g)


@SETTINGS
@given(st.integers(0, 2**32 - 1), st.integers(2, 5), st.integers(1, 6))
def test_merge_parallel_factors(seed, n_vars, n_factors):
    rng = np.random.default_rng(seed)
    g = _random_graph(rng, n_vars, n_factors, 3)
    # random tables, and duplicate a few factors with a permuted scope
    tables = [rng.normal(size=int(np.prod(g.n_states[g.scope(f)]))) for f in range(n_factors)]
    scopes = [g.scope(f).tolist() for f in range(n_factors)]
    for f in range(n_factors):
        if rng.random() < 0.5:
            scopes.append(list(rng.permutation(scopes[f])))
            tables.append(rng.normal(size=tables[f].shape[0]))
    g = FactorGraph(g.n_states, unary=[rng.normal(size=k) for k in g.n_states],
                    scopes=scopes, tables=tables)
    merged = merge_parallel_factors(g)
    labs = all_labelings(g)
    # merged tables add terms in another order: rounding is absolute (terms are
    # O(1)), so a score that cancels to near 0 needs an absolute tolerance
    np.testing.assert_allclose(merged.score_many(labs), g.score_many(labs), rtol=1e-12,
                               atol=1e-12)
    keys = {tuple(sorted(merged.scope(f).tolist())) for f in range(merged.n_factors)}
    assert len(keys) == merged.n_factors
    assert keys == {tuple(sorted(s)) for s in scopes}


def test_not_a_graph():
    with pytest.raises(TypeError, match="FactorGraph"):
        is_chain(np.zeros((3, 3)))
    with pytest.raises(TypeError, match="FactorGraph"):
        is_forest([1, 2])
