"""M-best MAP back-ends against enumeration: ranks, scores, certified bounds,
ties, hard zeros, evidence, exhausted and infeasible graphs, bad input."""

import numpy as np
import pytest

from _graphgen import add_random_factor, all_labelings, random_chain, random_forest
from structlearn.graphs import FactorGraph, chain_graph, graph_from_edges, grid_graph
from structlearn.inference import (MBestResult, available_mbest_methods, solve_map,
                                   solve_mbest)

EXACT = ["kbest_chain", "kbest_tree", "brute_force", "nilsson", "steelars"]


def top_scores(graph, m):
    """The m best finite scores by enumeration."""
    scores = graph.score_many(all_labelings(graph))
    scores = scores[np.isfinite(scores)]
    return np.sort(scores)[::-1][:m]


def check_listing(graph, res, m):
    """Distinct labelings, their true scores, non-increasing order."""
    assert isinstance(res, MBestResult)
    assert res.labels.shape == (res.n_found, graph.n_vars)
    assert res.n_found <= m
    assert len({lab.tobytes() for lab in res.labels}) == res.n_found
    if res.n_found:
        np.testing.assert_array_equal(graph.score_many(res.labels), res.scores)
        assert np.all(np.diff(res.scores) <= 0)
        assert np.all(np.isfinite(res.scores))


def check_exact(graph, res, m):
    check_listing(graph, res, m)
    expected = top_scores(graph, m)
    np.testing.assert_allclose(res.scores, expected, rtol=0, atol=1e-9)
    np.testing.assert_allclose(res.upper_bounds, expected, rtol=0, atol=1e-9)
    if expected.size == 0:
        assert res.status == "infeasible"
    elif expected.size < m:
        assert res.status == "exhausted"
    else:
        assert res.status == "exact"
    assert res.exact.all()


def check_bounds(graph, res, m):
    """Certified: bound_r >= true r-th best >= score_r."""
    check_listing(graph, res, m)
    expected = top_scores(graph, m)
    k = min(expected.size, res.n_found)
    scale = np.maximum(1.0, np.abs(expected[:k]))
    assert np.all(res.upper_bounds[:k] >= expected[:k] - 1e-7 * scale)
    assert np.all(res.scores[:k] <= expected[:k] + 1e-9 * scale)


@pytest.mark.parametrize("seed", range(25))
def test_kbest_chain_matches_enumeration(seed):
    rng = np.random.default_rng(seed)
    graph = random_chain(rng, int(rng.integers(1, 7)), 3, integer=seed % 2 == 0,
                         n_paths=int(rng.integers(1, 3)))
    m = int(rng.integers(1, 30))
    check_exact(graph, solve_mbest(graph, m, "kbest_chain"), m)


@pytest.mark.parametrize("seed", range(25))
def test_kbest_tree_matches_enumeration(seed):
    rng = np.random.default_rng(50 + seed)
    graph = random_forest(rng, int(rng.integers(1, 8)), 3, integer=seed % 2 == 0, max_order=2)
    m = int(rng.integers(1, 30))
    check_exact(graph, solve_mbest(graph, m, "kbest_tree"), m)
    if graph.n_factors:
        assert solve_mbest(graph, m).method in ("kbest_chain", "kbest_tree")


@pytest.mark.parametrize("seed", range(10))
def test_kbest_chain_rank_one_is_viterbi(seed):
    rng = np.random.default_rng(100 + seed)
    graph = random_chain(rng, 8, 4, integer=True, p_inf=0.0, n_paths=2)  # many ties
    res = solve_mbest(graph, 1, "kbest_chain")
    np.testing.assert_array_equal(res.labels[0], solve_map(graph, "viterbi").labels)


@pytest.mark.parametrize("seed", range(15))
def test_brute_force_and_nilsson_exact_on_forests_and_loopy_graphs(seed):
    rng = np.random.default_rng(200 + seed)
    forest = random_forest(rng, int(rng.integers(3, 7)), 3, integer=True)
    m = int(rng.integers(1, 15))
    check_exact(forest, solve_mbest(forest, m, "brute_force"), m)
    res = solve_mbest(forest, m)  # auto: list Viterbi, k-best max-product or nilsson/tree
    check_exact(forest, res, m)
    check_exact(forest, solve_mbest(forest, m, "nilsson", map_method="tree"), m)
    loopy = add_random_factor(rng, forest)
    check_exact(loopy, solve_mbest(loopy, m, "nilsson", map_method="brute_force"), m)


def test_brute_force_breaks_ties_lexicographically():
    graph = FactorGraph([2, 2], unary=np.zeros((2, 2)))
    res = solve_mbest(graph, 3, "brute_force")
    np.testing.assert_array_equal(res.labels, [[0, 0], [0, 1], [1, 0]])


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("sub", ["ad3", "gdmm"])
def test_nilsson_over_lp_back_ends_carries_certified_bounds(seed, sub):
    rng = np.random.default_rng(300 + seed)
    graph = add_random_factor(rng, random_forest(rng, 5, 3, integer=seed % 2 == 0,
                                                 max_order=2))
    m = 6
    res = solve_mbest(graph, m, "nilsson", map_method=sub, map_params={"max_iter": 200})
    check_bounds(graph, res, m)


def random_tree(rng, n, k):
    edges = np.array([[int(rng.integers(0, i)), i] for i in range(1, n)]).reshape(-1, 2)
    return graph_from_edges(rng.normal(size=(n, k)), edges, rng.normal(size=(n - 1, k, k)))


@pytest.mark.parametrize("seed", range(15))
def test_steelars_finds_the_exact_second_best_on_trees(seed):
    # the M-best LP is tight on trees for m = 2
    rng = np.random.default_rng(400 + seed)
    graph = random_tree(rng, int(rng.integers(2, 8)), 3)
    res = solve_mbest(graph, 2, "steelars")
    check_bounds(graph, res, 2)
    np.testing.assert_allclose(res.scores, top_scores(graph, 2), atol=1e-9)


@pytest.mark.parametrize("seed", range(6))
def test_steelars_paper_step_rule_keeps_certified_bounds(seed):
    rng = np.random.default_rng(450 + seed)
    tree = random_tree(rng, 6, 3)
    check_bounds(tree, solve_mbest(tree, 3, "steelars", step_rule="paper", max_iter=300), 3)
    grid = grid_graph(rng.normal(size=(2, 3, 2)), rng.normal(size=(7, 2, 2)))
    check_bounds(grid, solve_mbest(grid, 3, "steelars", step_rule="paper", max_iter=200), 3)
    with pytest.raises(ValueError, match="step_rule"):
        solve_mbest(tree, 2, "steelars", step_rule="newton")


@pytest.mark.parametrize("seed", range(6))
def test_steelars_bounds_on_loopy_graphs_and_forests(seed):
    rng = np.random.default_rng(500 + seed)
    grid = grid_graph(rng.normal(size=(2, 3, 2)), rng.normal(size=(7, 2, 2)))
    res = solve_mbest(grid, 4, "steelars", max_iter=300)
    check_bounds(grid, res, 4)
    assert res.scores[0] == pytest.approx(top_scores(grid, 1)[0])
    forest = random_forest(rng, 6, 3, integer=True, max_order=2, p_inf=0.1)
    check_bounds(forest, solve_mbest(forest, 3, "steelars", max_iter=300), 3)


@pytest.mark.parametrize("seed", range(4))
def test_steelars_lists_m_distinct_labelings_with_valid_bounds(seed):
    """Beyond rank 2 the relaxation's optimum often sits on listed labelings:
    the ranks still come out distinct (the best unlisted neighbours), every
    bound certified, the scores non-increasing."""
    rng = np.random.default_rng(900 + seed)
    chain = chain_graph(rng.normal(size=(10, 3)), rng.normal(size=(3, 3)))
    res = solve_mbest(chain, 10, "steelars")
    assert res.n_found == 10 and res.status in ("exact", "bounded")
    assert len({x.tobytes() for x in res.labels}) == 10
    check_bounds(chain, res, 10)
    assert np.all(np.diff(res.upper_bounds) <= 1e-12)
    assert res.scores[1] == pytest.approx(top_scores(chain, 2)[1])  # tight for m = 2


@pytest.mark.parametrize("method", EXACT)
def test_more_ranks_than_labelings_returns_all_of_them(method):
    graph = chain_with_forbidden_entry()
    res = solve_mbest(graph, 10, method)
    # a relaxation cannot prove that no feasible labeling is left: steelars
    # lists all three and says its search for a fourth found none
    assert res.status == ("incomplete" if method == "steelars" else "exhausted")
    assert res.n_found == 3
    check_listing(graph, res, 10)
    np.testing.assert_allclose(res.scores, top_scores(graph, 10))


def chain_with_forbidden_entry():
    # 2 x 2 labelings, one forbidden by a zero potential (-inf score)
    table = np.array([[0.0, 1.0], [-np.inf, 0.5]])
    return graph_from_edges(np.array([[0.0, 0.2], [0.1, 0.0]]), np.array([[0, 1]]), table)


@pytest.mark.parametrize("method", EXACT)
def test_infeasible_graph_gets_no_labelings(method):
    graph = graph_from_edges(np.zeros((2, 2)), np.array([[0, 1]]), np.full((2, 2), -np.inf))
    res = solve_mbest(graph, 3, method)
    assert res.status == "infeasible" and res.n_found == 0
    assert res.labels.shape == (0, 2)


@pytest.mark.parametrize("method", ["kbest_chain", "kbest_tree", "nilsson", "brute_force"])
def test_evidence_is_respected(method):
    rng = np.random.default_rng(7)
    graph = chain_graph(rng.normal(size=(5, 3)), rng.normal(size=(4, 3, 3))).clamp({1: 2, 3: 0})
    res = solve_mbest(graph, 5, method)
    check_exact(graph, res, 5)
    assert np.all(res.labels[:, 1] == 2) and np.all(res.labels[:, 3] == 0)


def test_bad_input():
    graph = chain_with_forbidden_entry()
    for bad, error in [(0, ValueError), (-1, ValueError), (2.5, TypeError), (True, TypeError),
                       ("3", TypeError)]:
        with pytest.raises(error, match="m must be an integer >= 1"):
            solve_mbest(graph, bad)
    with pytest.raises(ValueError, match="unknown M-best method 'nope'; available methods: "
                                         "auto, brute_force, kbest_chain, kbest_tree, nilsson, "
                                         "steelars"):
        solve_mbest(graph, 2, "nope")
    with pytest.raises(TypeError, match="method 'kbest_chain' got unexpected parameter"):
        solve_mbest(graph, 2, "kbest_chain", bogus=1)
    with pytest.raises(ValueError, match="time_limit"):
        solve_mbest(graph, 2, time_limit=-1)
    with pytest.raises(TypeError, match="FactorGraph"):
        solve_mbest(np.zeros(3), 2)
    loopy = add_random_factor(np.random.default_rng(0), graph_from_edges(
        np.zeros((3, 2)), np.array([[0, 1], [1, 2]]), np.zeros((2, 2))))
    with pytest.raises(ValueError, match="needs a chain"):
        solve_mbest(loopy, 2, "kbest_chain")
    ternary = FactorGraph([2, 2, 2], unary=np.zeros((3, 2)), scopes=[(0, 1, 2)],
                          tables=[np.zeros(8)])
    with pytest.raises(ValueError, match="pairwise"):
        solve_mbest(ternary, 2, "steelars")
    with pytest.raises(ValueError, match="pairwise"):
        solve_mbest(ternary, 2, "kbest_tree")
    assert solve_mbest(ternary, 2).method == "nilsson"
    with pytest.raises(ValueError, match="forest"):
        solve_mbest(loopy, 2, "kbest_tree")
    assert available_mbest_methods()[0] == "auto"


def test_time_limit_returns_the_ranks_found_so_far():
    rng = np.random.default_rng(3)
    graph = grid_graph(rng.normal(size=(6, 6, 3)), rng.normal(size=(60, 3, 3)))
    solve_mbest(graph, 3, "nilsson", map_method="ad3", time_limit=60.0)  # compiled off the clock
    res = solve_mbest(graph, 50, "nilsson", map_method="ad3", time_limit=0.5)
    assert res.status == "time_limit"
    assert len(res.history) < 50  # ranks listed before the limit
    assert 1 <= res.n_found <= 50 and res.time < 0.5 + 1.0
    assert np.all(np.diff(res.scores) <= 0) and np.all(res.upper_bounds >= res.scores)
    assert res.time_limit == 0.5


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("n_checks", [2, 4, 9])
def test_nilsson_at_the_time_limit_fills_ranks_from_solved_subspaces(seed, n_checks,
                                                                     monkeypatch):
    """Stopped after a few subspace solves: the ranks come from the listed and
    the solved open subspaces, every bound still certified."""
    from structlearn.inference.mbest import _common as mbest

    calls = {"n": 0}

    def passed(self):
        calls["n"] += 1
        return calls["n"] > n_checks

    monkeypatch.setattr(mbest.Deadline, "passed", passed)
    rng = np.random.default_rng(700 + seed)
    graph = grid_graph(rng.normal(size=(3, 3, 2)), rng.normal(size=(12, 2, 2)))
    m = 5
    res = solve_mbest(graph, m, "nilsson", map_method="ad3", map_params={"max_iter": 50},
                      time_limit=30)
    assert res.status == "time_limit"
    assert res.n_found == min(m, n_checks - 1)  # the root and its children, one per check
    check_bounds(graph, res, m)
    assert np.all(res.upper_bounds >= res.scores)
