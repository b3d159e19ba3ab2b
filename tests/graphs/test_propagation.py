"""Forbidden-label propagation against enumeration and a plain-Python fixpoint."""

import itertools

import numpy as np
import pytest

from _graphgen import add_random_factor, all_labelings, random_chain, random_forest
from structlearn.graphs import FactorGraph, grid_graph, propagate_forbidden_labels


def reference_alive(graph):
    """Generalized arc consistency by sweeping every factor until nothing changes."""
    alive = np.isfinite(graph.unary)
    changed = True
    while changed:
        changed = False
        for f in range(graph.n_factors):
            scope = graph.scope(f)
            table = graph.factor_table(f)
            support = [set() for _ in scope]
            for idx in itertools.product(*(range(graph.n_states[v]) for v in scope)):
                if table[idx] == -np.inf:
                    continue
                if all(alive[graph.unary_offsets[v] + x] for v, x in zip(scope, idx)):
                    for p, x in enumerate(idx):
                        support[p].add(x)
            for p, v in enumerate(scope):
                for x in range(graph.n_states[v]):
                    s = graph.unary_offsets[v] + x
                    if alive[s] and x not in support[p]:
                        alive[s] = False
                        changed = True
    return alive


def used_states(graph):
    """Per state: whether some finite-score labeling uses it."""
    labs = all_labelings(graph)
    finite = labs[np.isfinite(graph.score_many(labs))]
    used = np.zeros(graph.unary.shape[0], dtype=bool)
    for v in range(graph.n_vars):
        used[graph.unary_offsets[v] + finite[:, v]] = True
    return used, finite.shape[0] > 0


def check_against_references(graph):
    res = propagate_forbidden_labels(graph)
    used, feasible = used_states(graph)
    assert not np.any(used & ~res.alive)  # never removes a usable label
    if res.infeasible:
        assert not feasible
        assert not res.alive[graph.unary_offsets[res.dead_var]:
                             graph.unary_offsets[res.dead_var + 1]].any()
    else:
        np.testing.assert_array_equal(res.alive, reference_alive(graph))
    assert res.n_pruned == np.isfinite(graph.unary).sum() - res.alive.sum() or res.infeasible
    return res, used, feasible


@pytest.mark.parametrize("seed", range(40))
def test_forests_are_decided_exactly(seed):
    """On a forest, arc consistency leaves exactly the usable labels."""
    rng = np.random.default_rng(seed)
    make = random_chain if seed % 2 else random_forest
    graph = make(rng, 6, 3, p_inf=0.35)
    res, used, feasible = check_against_references(graph)
    assert res.infeasible == (not feasible)
    if feasible and graph.factor_orders.max(initial=2) == 2:
        np.testing.assert_array_equal(res.alive, used)


@pytest.mark.parametrize("seed", range(40))
def test_loopy_graphs_keep_every_usable_label(seed):
    rng = np.random.default_rng(1000 + seed)
    graph = random_forest(rng, 6, 3, p_inf=0.3)
    for _ in range(3):
        graph = add_random_factor(rng, graph, order=2 + seed % 2)
    check_against_references(graph)


def test_hard_constraint_chain_propagates_end_to_end():
    """x_0 = 0 forces x_{i+1} = x_i along a path of equality constraints."""
    n, k = 200, 3
    unary = np.zeros((n, k))
    unary[0, 1:] = -np.inf
    eq = np.where(np.eye(k) > 0, 0.0, -np.inf)
    graph = FactorGraph(np.full(n, k), unary=list(unary),
                        scopes=[[i, i + 1] for i in range(n - 1)], tables=[eq.ravel()],
                        table_ids=np.zeros(n - 1, dtype=np.int64))
    res = propagate_forbidden_labels(graph)
    assert not res.infeasible and res.n_pruned == (n - 1) * (k - 1)
    assert np.array_equal(res.alive.reshape(n, k), np.tile([True, False, False], (n, 1)))
    # the last variable forbids label 0: nothing is left anywhere
    unary[-1, 0] = -np.inf
    graph = FactorGraph(np.full(n, k), unary=list(unary),
                        scopes=[[i, i + 1] for i in range(n - 1)], tables=[eq.ravel()],
                        table_ids=np.zeros(n - 1, dtype=np.int64))
    assert propagate_forbidden_labels(graph).infeasible


def test_graphs_without_forbidden_entries_keep_everything():
    rng = np.random.default_rng(0)
    graph = grid_graph(rng.normal(size=(4, 4, 3)), rng.normal(size=(24, 3, 3)))
    res = propagate_forbidden_labels(graph)
    assert res.alive.all() and not res.infeasible and res.n_pruned == 0
    assert res.pruned_graph(graph) is graph


def test_all_zero_tables_are_infeasible_and_isolated_variables_are_kept():
    graph = FactorGraph([2, 2, 3], scopes=[[0, 1]], tables=[np.full(4, -np.inf)])
    res = propagate_forbidden_labels(graph)
    assert res.infeasible and res.dead_var in (0, 1)
    graph = FactorGraph([2, 3], unary=[np.zeros(2), np.array([-np.inf, 0.0, -np.inf])])
    res = propagate_forbidden_labels(graph)
    assert not res.infeasible and res.n_pruned == 0
    np.testing.assert_array_equal(res.alive, [True, True, False, True, False])


def test_pruned_graph_keeps_scores_of_finite_labelings():
    rng = np.random.default_rng(5)
    graph = add_random_factor(rng, random_forest(rng, 6, 3, p_inf=0.35))
    res = propagate_forbidden_labels(graph)
    pruned = res.pruned_graph(graph)
    labs = all_labelings(graph)
    np.testing.assert_array_equal(pruned.score_many(labs), graph.score_many(labs))
    assert pruned.table_data is graph.table_data


def test_rejects_non_graphs():
    with pytest.raises(TypeError, match="FactorGraph"):
        propagate_forbidden_labels(np.zeros(3))
