"""Depth-first branch and bound of small pairwise graphs against enumeration."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from structlearn.graphs import FactorGraph, complete_graph
from structlearn.inference import solve_map
from structlearn.inference.exact.dfbb import pairwise_dfbb

from _graphgen import all_labelings, random_weighted_csp


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 10**6), ties=st.booleans(), start=st.booleans())
def test_depth_first_search_finds_the_enumerated_optimum(seed, ties, start):
    graph = random_weighted_csp(seed, ties=ties, p_inf=0.1)
    scores = graph.score_many(all_labelings(graph))
    best = scores.max()
    incumbent = all_labelings(graph)[int(np.argmin(scores))] if start else None
    labels, score, proved, nodes = pairwise_dfbb(graph, max_nodes=10**7, incumbent=incumbent)
    assert proved and nodes >= 0
    if best == -np.inf:
        assert score == -np.inf
        return
    assert score == pytest.approx(best, abs=1e-6 * max(1.0, abs(best)))
    assert graph.score(labels) == score


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), budget=st.integers(1, 30))
def test_a_budget_ends_the_search_with_a_true_score(seed, budget):
    graph = random_weighted_csp(seed, p_inf=0.0, ties=False)
    labels, score, proved, nodes = pairwise_dfbb(graph, max_nodes=budget)
    assert nodes <= budget + 1
    if np.isfinite(score):
        assert graph.score(labels) == score
    if proved:
        assert score == pytest.approx(graph.score_many(all_labelings(graph)).max(), abs=1e-6)


def test_an_optimal_incumbent_is_kept_and_proved():
    graph = random_weighted_csp(3, p_inf=0.0, ties=False)
    opt = solve_map(graph, "brute_force")
    labels, score, proved, _ = pairwise_dfbb(graph, max_nodes=10**6, incumbent=opt.labels)
    assert proved and score == opt.score and np.array_equal(labels, opt.labels)


def test_dense_complete_graph_is_proved_in_the_exact_search():
    """A 12-variable complete graph of random tables: the relaxation is
    loose; the depth-first search proves the optimum without any LP."""
    rng = np.random.default_rng(1)
    g = complete_graph(rng.normal(size=(12, 5)), list(rng.normal(size=(66, 5, 5))))
    res = solve_map(g, "exact", enumeration_limit=0)
    ilp = solve_map(g, "ilp")
    assert res.status == "exact" and res.n_iter == 1
    assert res.score == pytest.approx(ilp.score, abs=1e-9)
    off = solve_map(g, "exact", enumeration_limit=0, depth_first=False, time_limit=60)
    assert off.score == pytest.approx(ilp.score, abs=1e-9)


def test_bad_input():
    triple = FactorGraph([2, 2, 2], scopes=[(0, 1, 2)], tables=[np.zeros(8)])
    with pytest.raises(ValueError, match="pairwise"):
        pairwise_dfbb(triple, max_nodes=10)
    with pytest.raises(TypeError, match="FactorGraph"):
        pairwise_dfbb(np.zeros(2), max_nodes=10)
    with pytest.raises(ValueError, match="depth_first must be True or False"):
        solve_map(complete_graph(np.zeros((3, 2)), [np.eye(2)] * 3), "exact", depth_first=1)
