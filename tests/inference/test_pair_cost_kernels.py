"""The soft arc search's edge costs, laid out by one kernel pass, against
a table-by-table reference."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from structlearn.graphs import FactorGraph
from structlearn.inference.exact.soft_arc import SoftArcSearch, _build_network, _cost_network


def _random_graph(seed, p_inf, shared, ties):
    """Up to 7 variables of 1-5 labels, random edges (a parallel pair
    sometimes), a share ``p_inf`` of entries forbidden, whole tables
    sometimes; with ``shared``, factors of equal shapes share a table."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 8))
    k = rng.integers(1, 6, size=n)
    scopes = [(i, j) for i in range(n) for j in range(n) if i != j and rng.random() < 0.3]
    draw = ((lambda size: rng.integers(-3, 4, size=size).astype(float)) if ties
            else (lambda size: rng.normal(size=size)))
    tables, ids, by_shape = [], [], {}
    for i, j in scopes:
        shape = (int(k[i]), int(k[j]))
        if shared and shape in by_shape:
            ids.append(by_shape[shape])
            continue
        t = draw(shape[0] * shape[1])
        t[rng.random(t.size) < p_inf] = -np.inf
        if rng.random() < 0.05:
            t[:] = -np.inf
        by_shape[shape] = len(tables)
        ids.append(len(tables))
        tables.append(t)
    unary = [draw(int(kk)) for kk in k]
    return FactorGraph(k, unary=unary, scopes=scopes, tables=tables,
                       table_ids=ids if scopes else None)


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 10**6), p_inf=st.sampled_from([0.0, 0.3, 0.8]),
       shared=st.booleans(), ties=st.booleans())
def test_the_edge_costs_equal_each_table_less_its_maximum(seed, p_inf, shared, ties):
    graph = _random_graph(seed, p_inf, shared, ties)
    net, offset = _cost_network(graph)
    K, E = net.K, graph.n_factors
    pair = net.pair.reshape(E, 2, K, K)
    expected_offset = graph.unary_matrix().max(axis=1).sum()
    finite = [net.unary[np.isfinite(net.unary)]]
    for f in range(E):
        i, j = graph.scope(f)
        table = graph.factor_table(f).reshape(graph.n_states[i], graph.n_states[j])
        top = table.max()
        expected = np.full((K, K), np.inf)
        if top > -np.inf:
            expected[:table.shape[0], :table.shape[1]] = np.where(table > -np.inf, top - table,
                                                                  np.inf)
        np.testing.assert_array_equal(pair[f, 0], expected)
        np.testing.assert_array_equal(pair[f, 1], expected.T)
        expected_offset += top
        finite.append(expected[np.isfinite(expected)])
    if expected_offset == -np.inf:
        assert offset == -np.inf
    else:
        assert offset == pytest.approx(expected_offset, abs=1e-12)
    finite = np.concatenate(finite)
    built = _build_network(graph)
    assert built.largest == (finite.max() if finite.size else 0.0)
    assert built.integral == bool(np.all(finite == np.round(finite)))
    # the network's costs head the search's array, the spare edges' room zero after them
    assert E == 0 or np.shares_memory(built.net.pair, built.pair_room)
    np.testing.assert_array_equal(built.pair_room[:net.pair.size], net.pair)
    assert built.pair_room.size == (E + built.net.spare) * 2 * K * K
    assert not built.pair_room[net.pair.size:].any()


def test_the_search_reads_the_network_costs_in_place():
    graph = _random_graph(5, 0.3, False, True)
    assert graph.n_factors
    search = SoftArcSearch(graph)
    assert np.shares_memory(search.state.pair, search.net.pair)
    assert search.integral
