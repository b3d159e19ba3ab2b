"""Models without a finite-score labeling: status "infeasible" when it is
proved (propagation or an exact method), "no_feasible_found" otherwise, never
"exact" on a -inf answer; the command line writes no solution for them."""

import json

import numpy as np
import pytest
from test_soft_arc import planted_weighted_csp

from structlearn.__main__ import main
from structlearn.graphs import FactorGraph, graph_from_edges, grid_graph, write_uai
from structlearn.inference import available_methods, solve_map, solve_mbest

LOOPY = [m for m in available_methods() if m not in ("auto", "viterbi", "tree")]
ITERATIVE = [m for m in LOOPY if m not in ("brute_force", "ilp", "milp", "exact")]
DIFFERENT = np.array([[-np.inf, 0.0], [0.0, -np.inf]])


def zero_grid():
    """A 3 x 3 grid with 2 labels whose pairwise potentials are all 0."""
    rng = np.random.default_rng(0)
    return grid_graph(rng.normal(size=(3, 3, 2)), np.full((12, 2, 2), -np.inf))


def odd_cycle():
    """Two-colouring of a 5-cycle: every label survives propagation (each
    edge alone is satisfiable), yet no labeling is finite."""
    rng = np.random.default_rng(1)
    edges = np.array([[i, (i + 1) % 5] for i in range(5)])
    return graph_from_edges(rng.normal(size=(5, 2)), edges, np.tile(DIFFERENT, (5, 1, 1)))


def assert_infeasible(res):
    assert res.status == "infeasible" and res.converged
    assert res.score == -np.inf and res.upper_bound == -np.inf
    assert res.relative_gap() == np.inf


@pytest.mark.parametrize("method", LOOPY + ["auto"])
def test_zero_potentials_everywhere_are_proved_infeasible(method):
    res = solve_map(zero_grid(), method, time_limit=5)
    assert_infeasible(res)
    assert res.labels.shape == (9,)


@pytest.mark.parametrize("method", ["brute_force", "ilp", "exact"])
def test_exact_methods_prove_what_propagation_cannot(method):
    assert_infeasible(solve_map(odd_cycle(), method))


@pytest.mark.parametrize("method", ["brute_force", "ilp", "exact", "auto"])
@pytest.mark.parametrize("time_limit", [None, 5.0])
def test_an_infeasible_cycle_beside_a_variable_of_one_state(method, time_limit):
    """The one-state variable is fixed before the search, which leaves the
    cycle's variables open (label -1) when it proves them infeasible: the
    answer is still a valid labeling, not an error."""
    graph = FactorGraph([2, 2, 2, 1], scopes=[(0, 1), (1, 2), (0, 2), (0, 3)],
                        tables=[DIFFERENT, DIFFERENT, DIFFERENT, np.zeros((2, 1))])
    res = solve_map(graph, method, time_limit=time_limit)
    assert_infeasible(res)
    assert np.all((res.labels >= 0) & (res.labels < graph.n_states))


@pytest.mark.parametrize("method", ITERATIVE)
def test_relaxations_report_no_feasible_labeling_found(method):
    res = solve_map(odd_cycle(), method, max_iter=30)
    assert res.status == "no_feasible_found" and not res.converged
    assert res.score == -np.inf and np.isfinite(res.upper_bound)


@pytest.mark.parametrize("method", ["viterbi", "tree", "brute_force", "auto"])
def test_evidence_on_a_zero_probability_label(method):
    table = np.array([[0.0, -np.inf], [-np.inf, -np.inf]])  # only (0, 0) allowed
    graph = graph_from_edges(np.zeros((2, 2)), np.array([[0, 1]]), table)
    assert solve_map(graph.clamp({0: 0}), method).status == "exact"
    assert_infeasible(solve_map(graph.clamp({0: 1}), method))


def test_forbidden_labels_are_pruned_before_a_relaxation_runs():
    """A chain of equality constraints pins every variable: the relaxation
    gets the pinned graph and returns its only finite labeling."""
    n = 6
    unary = np.zeros((n, 2))
    unary[0, 1] = -np.inf
    eq = np.where(np.eye(2) > 0, 0.0, -np.inf)
    edges = np.array([[i, i + 1] for i in range(n - 1)] + [[0, n - 1]])
    graph = graph_from_edges(unary, edges, np.tile(eq, (n, 1, 1)))
    seen = []

    def spy(g, **params):
        seen.append(g.unary.copy())
        return solve_map(g, "ad3", max_iter=5)

    solve_map(graph, spy)
    np.testing.assert_array_equal(seen[0].reshape(n, 2)[:, 1], -np.inf)
    for method in ITERATIVE:
        res = solve_map(graph, method, max_iter=5)
        assert res.score == 0.0 and np.all(res.labels == 0), method


def test_isolated_variables_without_factors():
    graph = FactorGraph([2, 3], unary=[np.array([0.0, 1.0]), np.array([2.0, -np.inf, 0.0])])
    res = solve_map(graph)
    assert res.status == "exact" and res.labels.tolist() == [1, 0] and res.score == 3.0


@pytest.mark.parametrize("method", ["nilsson", "steelars", "brute_force", "auto"])
def test_mbest_on_zero_potentials_is_infeasible(method):
    res = solve_mbest(zero_grid(), 3, method)
    assert res.status == "infeasible" and res.n_found == 0


def test_mbest_relaxation_without_a_labeling_does_not_claim_infeasible():
    res = solve_mbest(odd_cycle(), 2, "nilsson", map_method="ad3", map_params={"max_iter": 30})
    assert res.status == "no_feasible_found" and res.n_found == 0
    assert solve_mbest(odd_cycle(), 2, "brute_force").status == "infeasible"


@pytest.mark.parametrize("graph, method, expected_exit, status", [
    (zero_grid(), "ad3", 1, "infeasible"),
    (zero_grid(), "auto", 1, "infeasible"),
    (odd_cycle(), "brute_force", 1, "infeasible"),
    (odd_cycle(), "ad3", 3, "no_feasible_found"),
])
def test_cli_writes_no_solution_without_a_finite_labeling(graph, method, expected_exit, status,
                                                          tmp_path, capsys, monkeypatch):
    path = tmp_path / "model.uai"
    write_uai(graph, path)
    monkeypatch.chdir(tmp_path)
    code = main(["map", str(path), "--method", method, "--time-limit", "1"])
    record = json.loads(capsys.readouterr().out)
    assert code == expected_exit and record["status"] == status
    assert record["score"] is None and record["solution"] is None
    assert not (tmp_path / "model.uai.MAP").exists()


def test_a_component_without_a_labeling_at_the_limit_certifies_no_bound(monkeypatch):
    """The soft arc search stopped by the limit before any finite labeling:
    the status says none was found and the upper bound is +inf (not nan)."""
    from types import SimpleNamespace

    import structlearn.inference.exact.branch_and_bound as bnb

    graph = planted_weighted_csp(0, n=20, k=4, forbid=0.3)

    def stopped(sub, *args):
        return SimpleNamespace(proved=False, score=-np.inf, upper_bound=5.0, n_nodes=1,
                               labels=np.zeros(sub.n_vars, dtype=np.int64))

    monkeypatch.setattr(bnb, "_soft_arc_first", stopped)
    res = solve_map(graph, "exact", enumeration_limit=0, time_limit=0.01)
    assert res.status == "no_feasible_found"
    assert res.score == -np.inf and res.upper_bound == np.inf
