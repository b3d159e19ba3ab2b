"""Kovtun's partial optimality for attractive Potts models, against enumeration."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _graphgen import brute_force_reference
from structlearn.graphs import FactorGraph
from structlearn.inference.exact.potts_persistency import (attractive_potts_weights,
                                                           kovtun_persistency)
from structlearn.inference.exact.roof_duality import condition_pairwise, roof_dual


def potts_graph(rng, n, k, *, p_edge=0.5, repulsive=False, p_forbid=0.0, integer=False):
    n_states = rng.integers(2, k + 1, size=n)
    unary = [rng.normal(size=s) for s in n_states]
    if integer:
        unary = [np.round(3 * u) for u in unary]
    for u in unary:
        dead = rng.random(u.size) < p_forbid
        dead[rng.integers(u.size)] = False  # one label stays allowed
        u[dead] = -np.inf
    scopes, tables = [], []
    for a in range(n):
        for b in range(a + 1, n):
            if rng.random() < p_edge:
                w = rng.uniform(-1.0 if repulsive else 0.0, 1.5)
                if integer:
                    w = float(np.round(2 * w))
                c = float(np.round(rng.normal())) if integer else rng.normal()
                t = np.full((n_states[a], n_states[b]), c)
                m = min(n_states[a], n_states[b])
                t[np.arange(m), np.arange(m)] += w
                scopes.append([a, b])
                tables.append(t.ravel())
    return FactorGraph(n_states, unary=unary, scopes=scopes, tables=tables)


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(2, 7), st.integers(2, 4), st.booleans())
def test_fixed_labels_keep_a_maximum(seed, n, k, integer):
    rng = np.random.default_rng(seed)
    graph = potts_graph(rng, n, k, p_forbid=0.2, integer=integer)
    labels = kovtun_persistency(graph)
    if graph.n_factors == 0:
        assert labels is None
        return
    assert labels is not None and labels.shape == (n,)
    labs, scores, *_ = brute_force_reference(graph)
    fixed = labels >= 0
    consistent = np.all(labs[:, fixed] == labels[fixed], axis=1)
    assert consistent.any()
    np.testing.assert_allclose(scores[consistent].max(), scores.max(), atol=1e-9)


def reference_kovtun(graph, max_sweeps=3):
    """Kovtun's sweeps the long way: each label's auxiliary problem a binary
    graph of its own, solved by roof duality (which labels every variable of
    a submodular graph), the graph conditioned on each cut's labels."""
    weights = attractive_potts_weights(graph)
    labels = np.full(graph.n_vars, -1, dtype=np.int64)
    variables, current = np.arange(graph.n_vars), graph
    for _ in range(max_sweeps):
        fixed_in_sweep = 0
        for alpha in range(int(graph.n_states.max())):
            if current.n_vars == 0:
                return labels
            u = current.unary_matrix()
            if alpha >= u.shape[1] or not np.isfinite(u[:, alpha]).any():
                continue
            others = u.copy()
            others[:, alpha] = -np.inf
            starts = current.scope_indptr[:-1]
            p, q = current.scope_vars[starts], current.scope_vars[starts + 1]
            aux = FactorGraph(np.full(current.n_vars, 2),
                              unary=list(np.stack([u[:, alpha], others.max(axis=1)], axis=1)),
                              scopes=np.stack([p, q], axis=1).tolist(),
                              tables=[np.array([0.0, -w, -w, 0.0]) for w in weights])
            cut = roof_dual(aux)
            on = cut.labels == 0
            if not on.any():
                continue
            fixed_in_sweep += int(on.sum())
            labels[variables[on]] = alpha
            weights = weights[~on[p] & ~on[q]]
            variables_left, current = condition_pairwise(current, np.where(on, alpha, -1))
            variables = variables[variables_left]
        if not fixed_in_sweep:
            break
    return labels


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(2, 12), st.integers(2, 5), st.booleans(),
       st.sampled_from([0.2, 0.5, 0.9]))
def test_the_sweeps_kernel_fixes_what_the_roof_dual_sweeps_fix(seed, n, k, integer, p_edge):
    """The kernel's one cut per label (a node per variable) against the
    sweeps over roof duality's doubled graphs: the same labels, ties
    (integer scores) included."""
    rng = np.random.default_rng(seed)
    graph = potts_graph(rng, n, k, p_edge=p_edge, p_forbid=0.3, integer=integer)
    if graph.n_factors == 0:
        return
    np.testing.assert_array_equal(kovtun_persistency(graph), reference_kovtun(graph))


def test_a_strong_unary_is_fixed():
    """A chain whose middle variable prefers label 2 by far: it is fixed."""
    unary = [np.zeros(3), np.array([0.0, 0.0, 10.0]), np.zeros(3)]
    t = (np.eye(3) * 0.5).ravel()
    graph = FactorGraph([3, 3, 3], unary=unary, scopes=[[0, 1], [1, 2]], tables=[t, t])
    labels = kovtun_persistency(graph)
    assert labels[1] == 2
    # the ends then prefer 2 through their edge (0.5 against 0): fixed too
    assert labels.tolist() == [2, 2, 2]


def test_graphs_that_are_not_attractive_potts_are_declined():
    rng = np.random.default_rng(0)
    repulsive = FactorGraph([3, 3], unary=[np.zeros(3), np.zeros(3)], scopes=[[0, 1]],
                            tables=[(1.0 - np.eye(3)).ravel()])
    assert attractive_potts_weights(repulsive) is None and kovtun_persistency(repulsive) is None
    general = FactorGraph([2, 2], unary=[np.zeros(2), np.zeros(2)], scopes=[[0, 1]],
                          tables=[rng.normal(size=4)])
    assert kovtun_persistency(general) is None
    hard = FactorGraph([2, 2], unary=[np.zeros(2), np.zeros(2)], scopes=[[0, 1]],
                       tables=[np.array([0.0, -np.inf, -np.inf, 0.0])])
    assert kovtun_persistency(hard) is None
    triple = FactorGraph([2, 2, 2], unary=[np.zeros(2)] * 3, scopes=[[0, 1, 2]],
                         tables=[np.zeros(8)])
    assert kovtun_persistency(triple) is None
    with pytest.raises(TypeError, match="FactorGraph"):
        kovtun_persistency(np.zeros((2, 2)))


def test_weights_of_potts_tables_with_unequal_domains():
    t = np.full((2, 4), 1.5)
    t[[0, 1], [0, 1]] += 0.25
    graph = FactorGraph([2, 4], unary=[np.zeros(2), np.zeros(4)], scopes=[[0, 1]],
                        tables=[t.ravel()])
    np.testing.assert_allclose(attractive_potts_weights(graph), [0.25])


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_weights_of_tables_shared_by_factors_of_other_shapes(seed):
    """Tables shared by factors that read them in other shapes:
    ``c + [w, 0, 0, 0]`` is Potts as 1 x 4 and 4 x 1 but not 2 x 2,
    ``c + [v, 0, 0, 0, v, 0]`` as 2 x 3 but not 3 x 2; in a random order, with a 3 x 3 table
    beside, each factor gets its own shape's weight (the table-by-table
    reference's), and a factor that reads a table in a non-Potts shape makes
    the graph no attractive Potts model."""
    rng = np.random.default_rng(seed)
    w, v = rng.uniform(0.0, 2.0, size=2)
    first = rng.normal() + np.array([w, 0.0, 0.0, 0.0])
    second = rng.normal() + np.array([v, 0.0, 0.0, 0.0, v, 0.0])
    own = np.full((3, 3), rng.normal())
    own[np.arange(3), np.arange(3)] += rng.uniform(0.0, 1.0)
    uses = [(0, (1, 4)), (0, (4, 1)), (1, (2, 3)), (1, (2, 3)), (0, (1, 4)), (2, (3, 3))]
    if rng.random() < 0.3:
        uses.append((0, (2, 2)) if rng.random() < 0.5 else (1, (3, 2)))
    uses = [uses[i] for i in rng.permutation(len(uses))]
    tables = [first, second, own.ravel()]
    n_states = [k for _, shape in uses for k in shape]
    graph = FactorGraph(n_states, unary=[np.zeros(k) for k in n_states],
                        scopes=[[2 * f, 2 * f + 1] for f in range(len(uses))], tables=tables,
                        table_ids=[t for t, _ in uses])
    want = [reference_potts_weight(tables[t].reshape(shape)) for t, shape in uses]
    got = attractive_potts_weights(graph)
    if any(x is None for x in want):
        assert got is None
    else:
        np.testing.assert_array_equal(got, want)


def reference_potts_weight(table):
    """``w`` of a table ``c + w [a == b]`` with ``w >= 0`` (within the
    tolerance), else None: numpy, table by table."""
    if not np.all(np.isfinite(table)):
        return None
    k = min(table.shape)
    diag = table[np.arange(k), np.arange(k)]
    off = table[~np.eye(*table.shape, dtype=bool)]
    scale = 1e-12 * max(1.0, float(np.abs(table).max()))
    if off.size == 0:
        return 0.0
    c = float(off[0])
    if np.any(np.abs(off - c) > scale) or np.any(np.abs(diag - diag[0]) > scale):
        return None
    w = float(diag[0]) - c
    return w if w >= -scale else None


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(1, 4), st.integers(1, 4),
       st.sampled_from(["potts", "repulsive", "noisy", "random", "inf", "tiny"]))
def test_the_weights_kernel_matches_the_table_by_table_reference(seed, rows, cols, kind):
    """Each table's weight (or its refusal) as the numpy reference finds it,
    on Potts-shaped, repulsive, slightly perturbed, random, non-finite and
    near-tolerance tables of any shape."""
    from structlearn.inference.exact._potts_kernels import potts_weights

    rng = np.random.default_rng(seed)
    tables = []
    for _ in range(5):
        w = rng.uniform(-1.0, 1.0) if kind == "repulsive" else rng.uniform(0.0, 2.0)
        t = np.full((rows, cols), rng.normal())
        t[np.arange(min(rows, cols)), np.arange(min(rows, cols))] += w
        if kind == "noisy":
            t[rng.integers(rows), rng.integers(cols)] += 1e-9
        elif kind == "random":
            t = rng.normal(size=(rows, cols))
        elif kind == "inf":
            t[rng.integers(rows), rng.integers(cols)] = -np.inf
        elif kind == "tiny":
            t[np.arange(min(rows, cols)), np.arange(min(rows, cols))] -= w + 5e-13
        tables.append(t)
    data = np.concatenate([t.ravel() for t in tables])
    offsets = np.arange(0, data.size + 1, rows * cols, dtype=np.int64)
    keys = np.array([[i, rows, cols] for i in range(len(tables))], dtype=np.int64)
    got = potts_weights(data, offsets, keys, 1e-12)
    for t, g in zip(tables, got):
        want = reference_potts_weight(t)
        if want is None:
            assert np.isnan(g)
        else:
            assert g == want


def test_edge_cases_of_the_sweeps():
    """One-label variables are fixed to it; all-zero tables (weight 0) leave
    each variable to its unary; a variable with no allowed label fixes
    nothing (the graph has no finite labeling); ties fix the fewest."""
    t = np.zeros(6)
    one = FactorGraph([1, 2, 3], unary=[np.zeros(1), np.array([0.0, 1.0]),
                                        np.array([2.0, 0.0, 0.0])],
                      scopes=[[0, 1], [1, 2]], tables=[np.zeros(2), t])
    labels = kovtun_persistency(one)
    assert labels[0] == 0 and labels[1] == 1 and labels[2] == 0
    dead = FactorGraph([2, 2], unary=[np.full(2, -np.inf), np.zeros(2)], scopes=[[0, 1]],
                       tables=[np.eye(2).ravel()])
    assert kovtun_persistency(dead).tolist() == [-1, -1]
    tied = FactorGraph([2, 2], unary=[np.zeros(2), np.zeros(2)], scopes=[[0, 1]],
                       tables=[np.eye(2).ravel()])
    assert kovtun_persistency(tied).tolist() == [-1, -1]
