"""The ILP back-end (scipy's HiGHS milp) against enumeration."""

import numpy as np
import pytest

from _graphgen import add_random_factor, brute_force_reference, random_forest
from structlearn.graphs import graph_from_edges
from structlearn.inference import solve_map


@pytest.mark.parametrize("seed", range(20))
def test_ilp_matches_enumeration_with_ternary_factors_and_hard_zeros(seed):
    rng = np.random.default_rng(seed)
    graph = add_random_factor(rng, random_forest(rng, 6, 3, integer=seed % 2 == 0),
                              order=int(rng.integers(2, 4)))
    _, scores, *_ = brute_force_reference(graph)
    res = solve_map(graph, "ilp")
    assert res.status == ("exact" if np.isfinite(scores.max()) else "infeasible")
    assert res.converged
    assert res.score == graph.score(res.labels)
    if np.isfinite(scores.max()):
        assert res.score == pytest.approx(scores.max(), abs=1e-9)
        assert res.upper_bound == pytest.approx(res.score, abs=1e-9)
    else:
        assert res.score == -np.inf and res.upper_bound == -np.inf


def test_ilp_refuses_programs_above_max_columns():
    graph = graph_from_edges(np.zeros((3, 4)), np.array([[0, 1], [1, 2]]), np.zeros((4, 4)))
    with pytest.raises(ValueError, match="max_columns"):
        solve_map(graph, "ilp", max_columns=10)


@pytest.mark.parametrize("seed", range(5))
def test_milp_is_the_ilp_under_scipys_name(seed):
    rng = np.random.default_rng(seed)
    graph = add_random_factor(rng, random_forest(rng, 6, 3, integer=True), order=3)
    ilp, milp = solve_map(graph, "ilp"), solve_map(graph, "milp")
    assert milp.method == "milp" and ilp.method == "ilp"
    assert milp.status == ilp.status and milp.score == ilp.score
    np.testing.assert_array_equal(milp.labels, ilp.labels)
    with pytest.raises(ValueError, match="method 'milp' would build .* max_columns=10"):
        solve_map(graph, "milp", max_columns=10)


def test_ilp_reports_highs_dual_bound_and_asks_for_a_tight_gap(monkeypatch):
    """'exact' means optimal to a relative gap of 1e-6 (not HiGHS' default
    1e-4), and the upper bound is HiGHS' dual bound, not the score."""
    import scipy.optimize

    from structlearn.inference.exact.ilp import MIP_REL_GAP

    real, seen = scipy.optimize.milp, {}

    def loose_milp(*args, **kwargs):
        seen.update(kwargs["options"])
        res = real(*args, **kwargs)
        res.mip_dual_bound = res.fun - 0.5  # a bound 0.5 above the score
        return res

    monkeypatch.setattr(scipy.optimize, "milp", loose_milp)
    rng = np.random.default_rng(3)
    graph = random_forest(rng, 6, 3, integer=True, p_inf=0.0)
    res = solve_map(graph, "ilp")
    assert seen["mip_rel_gap"] == MIP_REL_GAP == 1e-6
    assert res.status == "exact"
    assert res.upper_bound == pytest.approx(res.score + 0.5, abs=1e-9)
