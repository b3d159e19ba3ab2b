import itertools
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from structlearn.graphs import (
    FactorGraph,
    chain_graph,
    complete_graph,
    graph_from_edges,
    grid_edges,
    grid_graph,
)


def naive_score(n_states, unary, scopes, tables, table_ids, labels):
    """Independent evaluation: nested lists, no flat arrays."""
    s = sum(unary[i][labels[i]] for i in range(len(n_states)))
    for f, scope in enumerate(scopes):
        tab = np.asarray(tables[table_ids[f]]).reshape([n_states[v] for v in scope])
        s += tab[tuple(labels[v] for v in scope)]
    return s


@st.composite
def random_graphs(draw):
    n_vars = draw(st.integers(1, 5))
    n_states = draw(st.lists(st.integers(1, 3), min_size=n_vars, max_size=n_vars))
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    unary = [rng.normal(size=k) for k in n_states]
    scopes = []
    if n_vars >= 2:
        for _ in range(draw(st.integers(0, 5))):
            order = draw(st.integers(2, min(3, n_vars)))
            scopes.append(tuple(rng.choice(n_vars, size=order, replace=False)))
    # share tables between factors with the same state counts
    tables, table_ids, by_shape = [], [], {}
    for scope in scopes:
        shape = tuple(n_states[v] for v in scope)
        if shape in by_shape and rng.random() < 0.5:
            table_ids.append(by_shape[shape])
            continue
        tab = rng.normal(size=shape)
        tab[rng.random(size=shape) < 0.1] = -np.inf
        by_shape[shape] = len(tables)
        table_ids.append(len(tables))
        tables.append(tab)
    return n_states, unary, scopes, tables, table_ids


@settings(max_examples=60, deadline=None)
@given(random_graphs())
def test_score_matches_naive_evaluation(spec):
    n_states, unary, scopes, tables, table_ids = spec
    g = FactorGraph(n_states, unary=unary, scopes=scopes, tables=tables, table_ids=table_ids)
    assert g.n_tables == len(tables)  # shared tables are not copied per factor
    all_labels = np.array(list(itertools.product(*[range(k) for k in n_states])))
    many = g.score_many(all_labels)
    for r, lab in enumerate(all_labels):
        expected = naive_score(n_states, unary, scopes, tables, table_ids, lab)
        assert g.score(lab) == pytest.approx(expected) or (
            expected == -np.inf and g.score(lab) == -np.inf
        )
        assert many[r] == g.score(lab)


def test_shared_table_is_stored_once():
    K, n = 5, 100
    trans = np.arange(K * K, dtype=float).reshape(K, K)
    g = chain_graph(np.zeros((n, K)), trans)
    assert g.n_tables == 1 and g.table_data.shape == (K * K,)
    assert np.array_equal(g.factor_table(37), trans)
    per_edge = chain_graph(np.zeros((n, K)), np.broadcast_to(trans, (n - 1, K, K)))
    assert per_edge.n_tables == n - 1
    labels = np.random.default_rng(0).integers(0, K, n)
    assert g.score(labels) == per_edge.score(labels)


def test_builders_shapes_and_scores():
    rng = np.random.default_rng(1)
    K = 3
    g = grid_graph(rng.normal(size=(3, 4, K)), rng.normal(size=(K, K)))
    assert g.n_vars == 12 and g.n_factors == 3 * 3 + 2 * 4
    assert grid_edges(3, 4).shape == (17, 2)
    c = complete_graph(rng.normal(size=(5, K)), rng.normal(size=(K, K)))
    assert c.n_factors == 10
    edges = np.array([[0, 2], [1, 2]])
    pw = rng.normal(size=(2, K, K))
    e = graph_from_edges(rng.normal(size=(3, K)), edges, pw)
    lab = np.array([2, 0, 1])
    expected = e.unary_matrix()[np.arange(3), lab].sum() + pw[0][2, 1] + pw[1][0, 1]
    assert e.score(lab) == pytest.approx(expected)


def test_unary_matrix_pads_variable_state_counts():
    g = FactorGraph([1, 3], unary=[[5.0], [1.0, 2.0, 3.0]])
    m = g.unary_matrix()
    assert m.shape == (2, 3)
    assert m[0, 0] == 5.0 and np.isneginf(m[0, 1:]).all()


def test_clamp_keeps_indices_and_forbids_other_states():
    g = chain_graph(np.zeros((3, 2)), np.eye(2))
    c = g.clamp({1: 1})
    assert np.isneginf(c.score([0, 0, 0]))
    assert c.score([1, 1, 1]) == g.score([1, 1, 1])
    with pytest.raises(ValueError, match="evidence state"):
        g.clamp({1: 2})
    with pytest.raises(ValueError, match="evidence variable"):
        g.clamp({3: 0})


def test_copy_eq_and_pickle():
    g = chain_graph(np.random.default_rng(2).normal(size=(4, 3)), np.eye(3))
    assert g.copy() == g
    assert pickle.loads(pickle.dumps(g)) == g
    h = g.copy()
    h.unary[0] += 1
    assert h != g


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(n_states=[2, 0]), ValueError, r"n_states\[1\]"),
        (dict(n_states=[[2, 2]]), ValueError, "n_states must be 1-D"),
        (dict(n_states=[2.5]), TypeError, "n_states must hold integers"),
        (dict(n_states=[2, 2], unary=[[0, 0], [0, np.nan]]), ValueError, "NaN"),
        (dict(n_states=[2, 2], unary=[[0, 0], [0, np.inf]]), ValueError, r"\+inf"),
        (dict(n_states=[2, 2], unary=[[0, 0], [0]]), ValueError, r"unary\[1\] has shape"),
        (dict(n_states=[2, 2], unary=np.zeros((2, 3))), ValueError, "unary has shape"),
        (dict(n_states=[2, 2], scopes=[(0, 2)], tables=[np.zeros(4)]), ValueError, "references variable 2"),
        (dict(n_states=[2, 2], scopes=[(0, 1)], tables=[np.zeros(3)]), ValueError, "needs 4"),
        (dict(n_states=[2, 2], scopes=[(0,)], tables=[np.zeros(2)]), ValueError, "order 1"),
        (dict(n_states=[2, 2], scopes=[(0, 0)], tables=[np.zeros(4)]), ValueError, "repeats variable 0"),
        (dict(n_states=[2, 2], scopes=[(0, 1)], tables=[np.full(4, np.nan)]), ValueError, r"tables\[0\] contains NaN"),
        (dict(n_states=[2, 2], scopes=[(0, 1)], tables=[]), ValueError, "pass table_ids"),
        (dict(n_states=[2, 2], scopes=[(0, 1)], tables=[np.zeros(4)], table_ids=[1]), ValueError, "points to table 1"),
        (dict(n_states=[2, 2], scopes=[(0, 1)], tables=[np.array(["a"] * 4)]), TypeError, "real numbers"),
    ],
)
def test_constructor_errors(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        FactorGraph(**kwargs)


def test_builder_errors():
    with pytest.raises(ValueError, match="self-loop"):
        graph_from_edges(np.zeros((3, 2)), [[0, 0]], np.eye(2))
    with pytest.raises(ValueError, match="outside"):
        graph_from_edges(np.zeros((3, 2)), [[0, 3]], np.eye(2))
    with pytest.raises(ValueError, match="pairwise must have shape"):
        chain_graph(np.zeros((3, 2)), np.eye(3))
    with pytest.raises(ValueError, match="unary must have shape"):
        chain_graph(np.zeros(3), np.eye(3))
    with pytest.raises(TypeError, match="edges must hold integers"):
        graph_from_edges(np.zeros((3, 2)), [[0.5, 1]], np.eye(2))


def test_score_rejects_bad_labels():
    g = chain_graph(np.zeros((3, 2)), np.eye(2))
    with pytest.raises(ValueError, match="out of range"):
        g.score([0, 2, 0])
    with pytest.raises(ValueError, match="labels must"):
        g.score_many(np.zeros((2, 4), dtype=int))
    with pytest.raises(TypeError, match="integers"):
        g.score(np.zeros(3))


def test_huge_factor_domain_is_rejected_without_allocating():
    n_states = np.full(3, 2**22)
    with pytest.raises(ValueError, match="too large"):
        FactorGraph.from_arrays(n_states, np.zeros(3 * 2**22), [0, 3], [0, 1, 2], [0], [0, 4], np.zeros(4))


def test_import_is_fast_and_compiles_nothing():
    import subprocess
    import sys

    code = (
        "import time, numpy, scipy, sklearn, numba;"
        "t=time.perf_counter(); import structlearn, structlearn.graphs, structlearn.inference;"
        "print(time.perf_counter()-t)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert float(out.stdout.strip()) < 0.5
