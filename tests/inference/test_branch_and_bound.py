"""Exact MAP by branch and bound, its preprocessing (dominated labels,
connected components) and the ``cutoff`` of the LP back-ends, against
enumeration."""

import time

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from structlearn.graphs import (FactorGraph, component_subgraphs, grid_edges,
                                prune_dominated_labels)
from structlearn.inference import solve_map

from _graphgen import all_labelings, random_scores


def random_loopy(seed, *, n_min=4, n_max=8, k_max=3, p_edge=0.6, p_inf=0.05, integer=False,
                 triple=False, isolated=0):
    """Random graph: pairwise factors on a random edge set (cycles likely),
    optionally one order-3 factor and isolated variables; ties when
    ``integer``."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(n_min, n_max + 1))
    ks = rng.integers(2, k_max + 1, size=n + isolated)
    scopes = [(i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < p_edge]
    if triple and n >= 3:
        scopes.append(tuple(int(v) for v in rng.choice(n, size=3, replace=False)))
    tables = [2.0 * random_scores(rng, int(np.prod(ks[list(s)])), integer=integer, scale=1.0,
                                  p_inf=p_inf) for s in scopes]
    unary = [random_scores(rng, int(k), integer=integer, scale=1.0, p_inf=p_inf) for k in ks]
    return FactorGraph(ks, unary=unary, scopes=scopes, tables=tables)


def spin_glass(n, seed=0):
    """n x n grid of +-1 spins with random couplings: frustrated, loose LP."""
    rng = np.random.default_rng(seed)
    edges = grid_edges(n, n)
    tables = [np.array([j, -j, -j, j]) for j in rng.normal(size=len(edges))]
    return FactorGraph([2] * (n * n), unary=0.1 * rng.normal(size=(n * n, 2)), scopes=edges,
                       tables=tables)


def enumerated_optimum(graph):
    scores = graph.score_many(all_labelings(graph))
    return scores.max()


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**6), integer=st.booleans(), tighten=st.sampled_from([0, 20]),
       dominance=st.booleans(), search=st.booleans(), persistency=st.booleans(),
       depth_first=st.booleans())
def test_branch_and_bound_finds_the_enumerated_optimum(seed, integer, tighten, dominance, search,
                                                       persistency, depth_first):
    graph = random_loopy(seed, integer=integer, triple=seed % 3 == 0, isolated=seed % 2)
    best = enumerated_optimum(graph)
    # without local search the incumbents are the relaxation's roundings only,
    # so the tree search itself must find the optimum
    bound_params = {} if search else {"polish": 0.0, "local_search": False, "max_iter": 30}
    res = solve_map(graph, "exact", tighten=tighten, dominance=dominance, enumeration_limit=0,
                    bound_params=bound_params, persistency=persistency,
                    depth_first=depth_first)
    if best == -np.inf:
        assert res.status == "infeasible" and res.score == -np.inf
        return
    assert res.status == "exact" and res.converged
    assert res.score == pytest.approx(best, abs=1e-9)
    assert res.score == graph.score(res.labels)
    assert best - 1e-9 <= res.upper_bound <= best + 1e-6 * max(1.0, abs(best))


@pytest.mark.parametrize("seed", range(10))
def test_branch_and_bound_on_frustrated_grids_against_enumeration(seed):
    """4 x 4 spin glasses: the untightened relaxation is loose, so the search
    branches; without local search only the tree search finds the optimum."""
    graph = spin_glass(4, seed=seed)
    res = solve_map(graph, "exact", tighten=0, enumeration_limit=0, persistency=False,
                    depth_first=False,
                    bound_params={"polish": 0.0, "local_search": False, "max_iter": 30})
    best = enumerated_optimum(graph)
    assert res.status == "exact" and res.n_iter > 1
    assert res.score == pytest.approx(best, abs=1e-9)
    assert best - 1e-9 <= res.upper_bound <= best + 1e-6 * max(1.0, abs(best))


def test_branch_and_bound_branches_where_the_relaxation_is_loose():
    """A frustrated grid too large to enumerate by the components rule: the
    search must branch (more than one node) and still end certified."""
    graph = spin_glass(5, seed=3)
    res = solve_map(graph, "exact", tighten=0, enumeration_limit=0, persistency=False,
                    depth_first=False, bound_params={"polish": 0.0, "local_search": False})
    ilp = solve_map(graph, "ilp")
    assert res.status == "exact" and res.n_iter > 1
    assert res.score == pytest.approx(ilp.score, abs=1e-9)
    assert res.history and res.history[-1]["open"] == 0


def test_components_are_solved_apart_and_summed():
    a, b = spin_glass(4, seed=1), spin_glass(4, seed=2)
    n = a.n_vars
    both = FactorGraph(np.concatenate([a.n_states, b.n_states, [3]]),
                       unary=np.concatenate([a.unary, b.unary, [0.5, 2.0, -1.0]]),
                       scopes=[tuple(a.scope(f)) for f in range(a.n_factors)]
                       + [tuple(int(v) + n for v in b.scope(f)) for f in range(b.n_factors)],
                       tables=[a.factor_table(f).ravel() for f in range(a.n_factors)]
                       + [b.factor_table(f).ravel() for f in range(b.n_factors)])
    res = solve_map(both, "exact")
    expected = solve_map(a, "ilp").score + solve_map(b, "ilp").score + 2.0
    assert res.status == "exact"
    assert res.score == pytest.approx(expected, abs=1e-9)
    assert res.labels[-1] == 1


@pytest.mark.parametrize("seed", range(20))
def test_component_subgraphs_score_like_the_graph(seed):
    graph = random_loopy(seed, p_edge=0.25, isolated=2)
    parts, isolated = component_subgraphs(graph)
    covered = np.concatenate([v for v, _ in parts] + [isolated])
    assert np.array_equal(np.sort(covered), np.arange(graph.n_vars))
    rng = np.random.default_rng(seed)
    for _ in range(5):
        x = np.array([rng.integers(k) for k in graph.n_states])
        total = sum(sub.score(x[v]) for v, sub in parts)
        total += sum(graph.unary_of(i)[x[i]] for i in isolated)
        assert total == pytest.approx(graph.score(x)) or graph.score(x) == -np.inf


@pytest.mark.parametrize("seed", range(25))
def test_pruned_labels_are_dominated_by_enumeration(seed):
    """Every label the dominance rule forbids is dominated: relabelling it to
    some label still allowed never lowers a labeling's score.  Graphs with
    ties and copies of labels, so that labels do get pruned."""
    rng = np.random.default_rng(seed)
    graph = random_loopy(seed, n_max=5, integer=True, p_inf=0.0)
    # make label 0 of variable 0 a weakened copy of label 1 in every factor
    unary = graph.unary.copy()
    data = graph.table_data.copy()
    unary[graph.unary_offsets[0]] = unary[graph.unary_offsets[0] + 1] - rng.integers(0, 2)
    for f in range(graph.n_factors):
        scope = list(graph.scope(f))
        if 0 not in scope:
            continue
        t = data[graph.table_offsets[graph.table_ids[f]]:
                 graph.table_offsets[graph.table_ids[f] + 1]].reshape(graph.n_states[scope])
        idx = [slice(None)] * len(scope)
        src = list(idx)
        idx[scope.index(0)], src[scope.index(0)] = 0, 1
        t[tuple(idx)] = t[tuple(src)] - rng.integers(0, 2, size=t[tuple(src)].shape)
    graph = FactorGraph.from_arrays(graph.n_states, unary, graph.scope_indptr, graph.scope_vars,
                                    graph.table_ids, graph.table_offsets, data)
    pruned, n_pruned = prune_dominated_labels(graph)
    assert n_pruned >= 1 and np.isneginf(pruned.unary[graph.unary_offsets[0]])
    labelings = all_labelings(graph)
    scores = graph.score_many(labelings)
    assert enumerated_optimum(pruned) == scores.max()
    alive = np.isfinite(pruned.unary)
    for state in np.flatnonzero(np.isfinite(graph.unary) & ~alive):
        v = int(np.searchsorted(graph.unary_offsets, state, side="right") - 1)
        a = state - graph.unary_offsets[v]
        rows = labelings[:, v] == a
        dominated = False
        for b in range(graph.n_states[v]):
            if b == a or not alive[graph.unary_offsets[v] + b]:
                continue
            moved = labelings[rows].copy()
            moved[:, v] = b
            if np.all(graph.score_many(moved) >= scores[rows]):
                dominated = True
        assert dominated, (v, a)
    for v in range(graph.n_vars):  # every variable keeps a label
        assert alive[graph.unary_offsets[v]:graph.unary_offsets[v + 1]].any()


def test_identical_labels_keep_one():
    table = np.array([[1.0, 1.0, 0.0], [2.0, 2.0, 5.0], [0.0, 0.0, 1.0]])
    graph = FactorGraph([3, 3], unary=np.array([[0.0, 0.0, 1.0], [0.0, 0.0, 0.0]]),
                        scopes=[(0, 1)], tables=[table])
    pruned, n_pruned = prune_dominated_labels(graph)
    # variable 1: labels 0 and 1 are identical, one goes
    assert np.isfinite(pruned.unary[3:6]).sum() == 2
    assert enumerated_optimum(pruned) == enumerated_optimum(graph)


def test_time_limit_returns_incumbent_and_open_bound():
    # load every kernel of the route first (a grid of the same size, without
    # a limit, two LP nodes): one compilation cannot be interrupted, and this
    # test times the search itself (a smaller grid took another route: the
    # timed call compiled the soft arc search on its trail, the cycle search
    # and the LP, and ran 7-22 s where no other test had loaded them)
    solve_map(spin_glass(30, seed=1), "exact", max_nodes=2)
    graph = spin_glass(30, seed=0)
    t0 = time.perf_counter()
    res = solve_map(graph, "exact", time_limit=1.0)
    assert time.perf_counter() - t0 <= 3.0 * (1.0 + 0.75)  # 3x: busy shared machines
    assert res.status == "time_limit" and not res.converged
    assert np.isfinite(res.score) and res.upper_bound > res.score
    assert res.score == graph.score(res.labels)


def test_node_cap():
    graph = spin_glass(6, seed=4)
    res = solve_map(graph, "exact", tighten=0, max_nodes=1, enumeration_limit=0,
                    persistency=False,
                    depth_first=False)
    opt = solve_map(graph, "ilp").score
    assert res.status == "node_limit" and res.n_iter == 1
    assert res.score <= opt + 1e-9 <= res.upper_bound + 2e-9


def test_components_above_max_search_vars_get_their_root_only():
    graph = spin_glass(5, seed=3)
    kw = dict(tighten=0, enumeration_limit=0, persistency=False, depth_first=False,
              bound_params={"polish": 0.0, "local_search": False})
    capped = solve_map(graph, "exact", max_search_vars=24, **kw)
    full = solve_map(graph, "exact", max_search_vars=25, **kw)
    opt = solve_map(graph, "ilp").score
    assert full.status == "exact" and full.n_iter > 1
    assert full.score == pytest.approx(opt, abs=1e-9)
    assert capped.status == "node_limit" and capped.n_iter == 1
    assert capped.score <= opt + 1e-9 <= capped.upper_bound + 2e-9
    with pytest.raises(ValueError, match="max_search_vars must be an integer >= 1"):
        solve_map(graph, "exact", max_search_vars=0)


def test_bad_parameters():
    graph = spin_glass(3)
    with pytest.raises(ValueError, match="bound_method must name an LP back-end"):
        solve_map(graph, "exact", bound_method="exact")
    with pytest.raises(ValueError, match="unknown MAP method 'nope'"):
        solve_map(graph, "exact", bound_method="nope")
    with pytest.raises(TypeError, match="may not set 'time_limit'"):
        solve_map(graph, "exact", bound_params={"time_limit": 1})
    with pytest.raises(TypeError, match="got unexpected parameter"):
        solve_map(graph, "exact", bound_params={"bogus": 1})
    with pytest.raises(ValueError, match="max_nodes must be an integer >= 1"):
        solve_map(graph, "exact", max_nodes=0)
    with pytest.raises(ValueError, match="tol must be a finite number"):
        solve_map(graph, "exact", tol=float("nan"))


@pytest.mark.parametrize("method", ["ad3", "psdd", "gdmm", "trn"])
def test_lp_back_ends_stop_at_the_cutoff(method):
    graph = spin_glass(5, seed=5)
    free = solve_map(graph, method, max_iter=50, polish=0.0)
    cut = solve_map(graph, method, max_iter=50, polish=0.0, cutoff=free.upper_bound + 100.0)
    assert cut.status == "cutoff" and cut.n_iter == 1
    assert cut.upper_bound <= free.upper_bound + 100.0
    with pytest.raises(ValueError, match="cutoff must be a number"):
        solve_map(graph, method, cutoff="high")


@pytest.mark.parametrize("bound_method", ["psdd", "gdmm"])
def test_back_ends_without_beliefs_branch_on_the_strongest_variable(bound_method):
    """psdd and gdmm return no node beliefs nor warm state: the search falls
    back to the interaction order and cold node solves, and stays exact."""
    for seed in range(3):
        graph = spin_glass(4, seed=seed)
        res = solve_map(graph, "exact", tighten=0, enumeration_limit=0, persistency=False,
                        depth_first=False, bound_method=bound_method,
                        bound_params={"polish": 0.0, "local_search": False, "max_iter": 30})
        best = enumerated_optimum(graph)
        assert res.status == "exact"
        assert res.score == pytest.approx(best, abs=1e-9)


def test_children_start_cold_once_the_state_budget_is_spent(monkeypatch):
    """With no room for solver states every child solves from zero; the
    search is as exact as with warm starts."""
    import structlearn.inference.exact.branch_and_bound as bb

    graph = spin_glass(5, seed=3)
    kw = dict(tighten=0, enumeration_limit=0, persistency=False, depth_first=False,
              bound_params={"polish": 0.0, "local_search": False, "max_iter": 30})
    warm = solve_map(graph, "exact", **kw)
    monkeypatch.setattr(bb, "STATE_BYTES", 0)
    cold = solve_map(graph, "exact", **kw)
    best = solve_map(graph, "ilp").score
    for res in (warm, cold):
        assert res.status == "exact" and res.n_iter > 1
        assert res.score == pytest.approx(best, abs=1e-9)


def test_potts_grid_certified_like_the_ilp():
    """A frustrated 8 x 8 Potts grid with 3 labels (3^64 labelings): the
    search (tightened, warm-started, branching on fractional beliefs)
    certifies HiGHS' optimum."""
    from structlearn.graphs import grid_graph

    rng = np.random.default_rng(11)
    graph = grid_graph(rng.normal(size=(8, 8, 3)),
                       rng.uniform(-1.0, 1.0, size=(112, 1, 1)) * np.eye(3))
    res = solve_map(graph, "exact", bound_params={"polish": 0.0})
    ilp = solve_map(graph, "ilp")
    assert ilp.status == "exact" and res.status == "exact"
    assert res.score == pytest.approx(ilp.score, abs=1e-7)
    assert res.upper_bound <= res.score + 1e-6 * max(1.0, abs(res.score))


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10**6))
def test_ad3_from_a_parent_state_bounds_the_constrained_optimum(seed):
    """A child solve (one variable fixed) started from the parent's AD3 state
    reports a certified bound of the child's optimum and a labeling scored
    on the child's graph."""
    graph = random_loopy(seed, p_inf=0.0)
    assume(graph.n_factors > 0)  # without factors AD3 has no state (node argmax)
    parent = solve_map(graph, "ad3", max_iter=15, polish=0.0)
    assert parent.state is not None
    rng = np.random.default_rng(seed)
    v = int(rng.integers(graph.n_vars))
    lab = int(rng.integers(graph.n_states[v]))
    unary = graph.unary.copy()
    lo, hi = graph.unary_offsets[v], graph.unary_offsets[v + 1]
    keep = unary[lo + lab]
    unary[lo:hi] = -np.inf
    unary[lo + lab] = keep
    child_graph = graph.with_unary(unary)
    child = solve_map(child_graph, "ad3", max_iter=5, polish=0.0, init_state=parent.state)
    best = enumerated_optimum(child_graph)
    assert child.upper_bound >= best - 1e-9
    assert child.labels[v] == lab or child.score == -np.inf
    assert child.score == child_graph.score(child.labels)


def test_ad3_state_and_beliefs():
    from structlearn.graphs import grid_graph

    rng = np.random.default_rng(0)
    graph = grid_graph(rng.normal(size=(5, 5, 3)),
                       rng.uniform(-1.0, 1.0, size=(40, 1, 1)) * np.eye(3))
    cold = solve_map(graph, "ad3", max_iter=400, polish=0.0, cycles=50)
    assert cold.status == "gap" and cold.n_iter > 5
    # the beliefs are distributions over each variable's states
    b = cold.beliefs
    assert b.shape == graph.unary.shape and np.all(b >= -1e-9)
    sums = np.add.reduceat(b, graph.unary_offsets[:-1])
    assert np.allclose(sums, 1.0, atol=1e-6)
    # the same graph from its own converged state: certified again at once
    again = solve_map(graph, "ad3", max_iter=400, polish=0.0, cycles=50,
                      init_state=cold.state)
    assert again.status == "gap" and again.n_iter < cold.n_iter
    assert again.score == pytest.approx(cold.score, abs=1e-9)


def test_ad3_init_state_errors():
    graph = spin_glass(3)
    other = solve_map(spin_glass(4), "ad3", max_iter=3)
    with pytest.raises(TypeError, match="init_state must be an AD3State"):
        solve_map(graph, "ad3", init_state={"multipliers": []})
    with pytest.raises(ValueError, match="other variables or factors"):
        solve_map(graph, "ad3", init_state=other.state)
    with pytest.raises(TypeError, match="may not set 'init_state'"):
        solve_map(graph, "exact", bound_params={"init_state": other.state})


def test_bound_stall_iter():
    graph = spin_glass(12, seed=1)
    res = solve_map(graph, "ad3", max_iter=1000, polish=0.0, bound_stall_iter=3)
    assert res.status == "stall" and res.n_iter < 1000
    bounds = [h["upper_bound"] for h in res.history]
    last = bounds[-1]
    # the bound last fell (by 1e-6 relative) 3 iterations before the end
    assert bounds[-3] - last <= 1e-6 * max(1.0, abs(last))
    assert bounds[-4] - bounds[-3] > 1e-6 * max(1.0, abs(last))
    longer = solve_map(graph, "ad3", max_iter=len(bounds) + 5, polish=0.0)
    assert longer.n_iter == len(bounds) + 5
    for name in ("bound_stall_iter", "stall_iter"):
        with pytest.raises(ValueError, match=f"{name} must be an integer >= 0"):
            solve_map(graph, "ad3", **{name: -1})


def test_node_stall_rule_defaults_and_a_callers_value(monkeypatch):
    """Without a caller's value: 25 at the root, 5 at warm children; a
    caller's ``bound_stall_iter`` applies at every node."""
    import structlearn.inference.exact.branch_and_bound as bb

    seen = []
    real = bb.solve_map

    def spy(graph, method, **kw):
        seen.append((kw.get("init_state") is not None, kw.get("bound_stall_iter")))
        return real(graph, method, **kw)

    monkeypatch.setattr(bb, "solve_map", spy)
    graph = spin_glass(5, seed=3)
    kw = dict(tighten=0, enumeration_limit=0, persistency=False,
                    depth_first=False)
    res = solve_map(graph, "exact", bound_params={"polish": 0.0, "local_search": False}, **kw)
    assert res.status == "exact" and len(seen) > 1
    assert seen[0] == (False, bb.STALL_ITER)
    # a root with a wide gap goes on from its state first
    rest = seen[2:] if seen[1] == (True, bb.WIDE_STALL_ITER) else seen[1:]
    assert any(warm for warm, _ in rest)
    assert all(stall == bb.CHILD_STALL_ITER for warm, stall in rest if warm)
    seen.clear()
    res = solve_map(graph, "exact", bound_params={"polish": 0.0, "local_search": False,
                                                  "bound_stall_iter": 0}, **kw)
    assert res.status == "exact" and len(seen) > 1
    assert all(stall == 0 for _, stall in seen)


def test_root_moves_to_the_larger_clusters_when_the_cheap_ones_leave_a_wide_gap(monkeypatch):
    """Cycle clusters above CHEAP_CLUSTER_ENTRIES join only when the root's
    gap on the cheaper relaxation stays wide; the search stays exact."""
    import structlearn.inference.exact.branch_and_bound as bb

    monkeypatch.setattr(bb, "CHEAP_CLUSTER_ENTRIES", 8)  # no 4-cycle of spins is cheap
    sizes = []
    real = bb.solve_map

    def spy(graph, method, **kw):
        sizes.append(graph.n_factors)
        return real(graph, method, **kw)

    monkeypatch.setattr(bb, "solve_map", spy)
    graph = spin_glass(6, seed=2)
    res = solve_map(graph, "exact", enumeration_limit=0, persistency=False,
                    depth_first=False, bound_params={"polish": 0.0})
    ilp = solve_map(graph, "ilp")
    assert res.status == "exact"
    assert res.score == pytest.approx(ilp.score, abs=1e-9)
    # first the plain grid (no cheap cluster), then the grid with 4-cycle clusters
    assert sizes[0] == graph.n_factors and len(set(sizes)) == 2
    assert res.upper_bound <= res.score + 1e-6 * max(1.0, abs(res.score))


@pytest.mark.parametrize("seed", range(8))
def test_hard_constrained_components_are_handed_to_the_milp_when_the_search_does_not_prove(
        monkeypatch, seed):
    """A component with forbidden entries and a small MILP goes to HiGHS when
    the first, short search does not prove it (here: made to return at once
    without a proof); HiGHS' labeling is the enumerated optimum and the
    search's full run is skipped."""
    import structlearn.inference.exact.branch_and_bound as bb

    g = random_loopy(400 + seed, n_min=6, n_max=8, k_max=4, p_edge=0.8, p_inf=0.1,
                     integer=True)
    assert bb._milp_candidate(g)
    best = enumerated_optimum(g)
    runs = []
    real_run = bb._Search.run

    def first_search_gives_up(search):
        runs.append(search.deadline)
        if len(runs) == 1:
            return np.zeros(search.graph.n_vars, dtype=np.int64), -np.inf, np.inf, "time_limit"
        return real_run(search)

    monkeypatch.setattr(bb._Search, "run", first_search_gives_up)
    monkeypatch.setattr(bb, "DFBB_MAX_VARS", 0)  # no depth-first proof before the search
    monkeypatch.setattr(bb, "SOFT_ARC_MAX_BYTES", 0)
    monkeypatch.setattr(bb, "SOFT_ARC_HARD_MAX_BYTES", 0)
    monkeypatch.setattr(bb, "ENUMERATION_WORK", 0)
    res = solve_map(g, "exact", persistency=False, dominance=False, time_limit=30)
    if not np.isfinite(best):
        assert res.status == "infeasible"
        return
    assert res.status == "exact"
    assert res.score == pytest.approx(best)
    assert len(runs) == 1  # the MILP proved it: no second search


def test_the_milp_is_offered_only_small_hard_constrained_components(monkeypatch):
    import structlearn.inference.exact.branch_and_bound as bb

    hard = random_loopy(1, n_min=6, n_max=6, k_max=3, p_edge=0.8, p_inf=0.2)
    soft = random_loopy(1, n_min=6, n_max=6, k_max=3, p_edge=0.8, p_inf=0.0)
    assert bb._milp_candidate(hard) and not bb._milp_candidate(soft)
    monkeypatch.setattr(bb, "MILP_FIRST_MAX_COLUMNS", 10)
    assert not bb._milp_candidate(hard)


def test_components_without_hard_constraints_never_reach_the_milp(monkeypatch):
    import structlearn.inference.exact.branch_and_bound as bb

    def fail(*args):
        raise AssertionError("the MILP was tried")

    monkeypatch.setattr(bb, "_milp_proof", fail)
    g = random_loopy(7, n_min=8, n_max=8, k_max=3, p_edge=0.8, p_inf=0.0)
    res = solve_map(g, "exact")
    assert res.status == "exact"
    assert res.score == pytest.approx(enumerated_optimum(g))


@pytest.mark.parametrize("seed", range(4))
def test_a_stalled_search_hands_off_to_highs(monkeypatch, seed):
    """Under a time limit a search that still has a (small) gap at its hand-off
    time stops there and HiGHS finishes: the enumerated optimum, certified."""
    import structlearn.inference.exact.branch_and_bound as bb

    handed = []
    monkeypatch.setattr(bb, "MILP_STALL_GAP", np.inf)  # any gap counts as small
    monkeypatch.setattr(bb, "MILP_STALL_SHARE", 0.0)   # hand off at the first check
    finish = bb._milp_finish
    monkeypatch.setattr(bb, "_milp_finish", lambda *a: handed.append(a[2:5]) or finish(*a))
    graph = spin_glass(4, seed=seed)
    res = solve_map(graph, "exact", time_limit=20, tighten=0, enumeration_limit=0,
                    persistency=False, depth_first=False,
                    bound_params={"polish": 0.0, "local_search": False, "max_iter": 30})
    best = enumerated_optimum(graph)
    assert res.status == "exact" and res.score == pytest.approx(best, abs=1e-9)
    assert best - 1e-9 <= res.upper_bound <= best + 1e-6 * max(1.0, abs(best))
    assert handed  # the root leaves a gap here: the search stopped and HiGHS proved
    _, score, ub = handed[0]
    assert score <= best + 1e-9 <= ub + 2e-9


def test_milp_finish_keeps_the_better_labeling_and_the_tighter_bound():
    from structlearn.inference.exact.branch_and_bound import _milp_finish

    graph = spin_glass(4, seed=7)
    best = enumerated_optimum(graph)
    zero = np.zeros(graph.n_vars, dtype=np.int64)
    labels, score, ub, status = _milp_finish(graph, time.perf_counter() + 20, zero,
                                             float(graph.score(zero)), best + 5.0, 1e-6)
    assert status == "exact" and score == pytest.approx(best, abs=1e-9)
    assert graph.score(labels) == pytest.approx(best, abs=1e-9)
    assert best - 1e-9 <= ub <= best + 1e-6 * max(1.0, abs(best))


def test_highs_is_not_called_for_a_slice_shorter_than_its_floor(monkeypatch):
    """HiGHS reads its time limit between phases (its root LP can overrun a
    short one by far): a slice under MILP_MIN_SECONDS is not handed to it."""
    import structlearn.inference.exact.branch_and_bound as bb
    import structlearn.inference.exact.ilp as ilp

    calls = []
    monkeypatch.setattr(ilp, "ilp_map", lambda *a, **k: calls.append(k) or None)
    graph = spin_glass(3, seed=0)
    now = time.perf_counter()
    # the slice is MILP_FIRST_SHARE of what is left: 0.1 x 1 s < 0.25 s
    assert bb._milp_proof(graph, now + 1.0) is None and not calls
    monkeypatch.setattr(ilp, "ilp_map", lambda *a, **k: calls.append(k) or solve_map(
        graph, "brute_force"))
    assert bb._milp_proof(graph, now + 100.0) is not None
    assert calls and calls[-1]["time_limit"] == pytest.approx(bb.MILP_FIRST_SECONDS, abs=0.01)


def test_highs_is_not_called_for_a_slice_shorter_than_its_root_estimate(monkeypatch):
    """A slice above MILP_MIN_SECONDS but under the estimate of HiGHS' root
    LP on the program (``ilp.root_seconds``) is not handed to it either, at
    the first slice nor at a stalled search's hand-off; the search then keeps
    its time and still certifies the optimum."""
    import structlearn.inference.exact.branch_and_bound as bb
    import structlearn.inference.exact.ilp as ilp

    calls = []
    monkeypatch.setattr(ilp, "ilp_map", lambda *a, **k: calls.append(k) or None)
    graph = spin_glass(3, seed=0)
    now = time.perf_counter()
    assert bb._milp_slice(now + 100.0) >= bb.MILP_MIN_SECONDS
    monkeypatch.setattr(ilp, "ROOT_SECONDS_PER_COLUMN", 1e3)  # every slice is short
    assert bb._milp_proof(graph, now + 100.0) is None and not calls
    monkeypatch.setattr(bb, "MILP_STALL_GAP", np.inf)
    monkeypatch.setattr(bb, "MILP_STALL_SHARE", 0.0)
    monkeypatch.setattr(bb, "_milp_finish", lambda *a: calls.append(a))
    graph = spin_glass(4, seed=1)
    res = solve_map(graph, "exact", time_limit=20, tighten=0, enumeration_limit=0,
                    persistency=False, depth_first=False,
                    bound_params={"polish": 0.0, "local_search": False, "max_iter": 30})
    assert not calls
    best = enumerated_optimum(graph)
    assert res.status == "exact" and res.score == pytest.approx(best, abs=1e-9)


def test_ilp_keeps_the_build_and_the_conversions_from_highs_limit(monkeypatch):
    """HiGHS' own limit is what is left of the call's after building the
    program, less the estimate of scipy's conversions (and never 0)."""
    import scipy.optimize

    import structlearn.inference.exact.ilp as ilp

    limits = []
    milp = scipy.optimize.milp
    monkeypatch.setattr(scipy.optimize, "milp", lambda *a, **k: limits.append(
        k["options"]["time_limit"]) or milp(*a, **k))
    graph = spin_glass(4, seed=2)
    A, *_ = ilp.local_polytope(graph)
    res = ilp.ilp_map(graph, time_limit=30.0)
    assert res.status == "exact" and res.score == pytest.approx(enumerated_optimum(graph))
    assert 0 < limits[-1] <= 30.0 - ilp.WRAPPER_SECONDS_PER_NONZERO * A.nnz
    monkeypatch.setattr(ilp, "WRAPPER_SECONDS_PER_NONZERO", 1.0)  # more than the limit
    res = ilp.ilp_map(graph, time_limit=0.5)
    assert limits[-1] == ilp.MIN_HIGHS_SECONDS
    assert res.status in ("exact", "time_limit") and res.upper_bound >= res.score


def dense_normal(seed, n, k):
    """A complete graph with N(0, 1) tables: a loose local polytope (the
    protein-like family of the MAP benchmark)."""
    from structlearn.graphs import complete_graph

    rng = np.random.default_rng(seed)
    return complete_graph(rng.normal(size=(n, k)), rng.normal(size=(n * (n - 1) // 2, k, k)))


def _spy_method(monkeypatch, owner, name, keep):
    """Wrap method ``name`` of class ``owner``: each call appends
    ``keep(first argument, result)`` to the list returned."""
    calls = []
    real = getattr(owner, name)

    def spy(self, arg):
        result = real(self, arg)
        calls.append(keep(arg, result))
        return result

    monkeypatch.setattr(owner, name, spy)
    return calls


def _count_soft_arc_searches(monkeypatch):
    """Record the soft arc searches that branch and bound starts after a
    loose root (the first depth-first attempt, which proves small graphs
    before any LP, is cut to one node, and the first soft arc search is
    skipped)."""
    import structlearn.inference.exact.branch_and_bound as bb

    monkeypatch.setattr(bb, "DFBB_FIRST_WORK", 1)
    monkeypatch.setattr(bb, "_small_soft_arc_first", lambda *args: None)
    return _started_searches(monkeypatch, "PolishedSoftArcSearch")


def _started_searches(monkeypatch, name):
    """Record the sizes of the searches that branch and bound starts
    through its class ``name`` (``PolishedSoftArcSearch``: every soft arc
    search it starts is one, some of them plain until a loose root)."""
    import structlearn.inference.exact.branch_and_bound as bb

    started = []

    class Counted(getattr(bb, name)):
        def __init__(self, graph, **kw):
            started.append(graph.n_vars)
            super().__init__(graph, **kw)

    monkeypatch.setattr(bb, name, Counted)
    return started


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.integers(5, 8), k=st.integers(2, 4))
def test_a_loose_root_hands_the_component_to_the_soft_arc_search(seed, n, k):
    """Dense graphs whose root leaves a gap wider than LOOSE_ROOT_GAP: the
    soft arc search gets the component, and the result is the enumerated
    optimum, certified."""
    import structlearn.inference.exact.branch_and_bound as bb

    mp = pytest.MonkeyPatch()
    try:
        started = _count_soft_arc_searches(mp)
        loose = _spy_method(mp, bb._Search, "_loose", lambda _, answer: answer)
        graph = dense_normal(seed, n, k)
        # (a root of few iterations and no local search: loose, so handed over)
        res = solve_map(graph, "exact", enumeration_limit=0, persistency=False, tighten=0,
                        bound_params={"polish": 0.0, "local_search": False, "max_iter": 3})
    finally:
        mp.undo()
    best = enumerated_optimum(graph)
    assert res.status == "exact" and res.converged
    assert res.score == pytest.approx(best, abs=1e-9)
    assert res.score == graph.score(res.labels)
    assert best - 1e-9 <= res.upper_bound <= best + 1e-6 * max(1.0, abs(best))
    # (a loose root whose labels its dual prunes to one labeling is proved
    # there, without the search)
    assert started in ([], [n]) and (any(loose) or not started)


@pytest.mark.parametrize("seed", range(6))
def test_a_loose_roots_soft_arc_search_out_of_nodes_keeps_a_valid_bound(monkeypatch, seed):
    """Without a time limit the handed-over search stops after
    LOOSE_SOFT_ARC_NODES nodes per LP node left: status node_limit, and the
    bound (the tighter of the root's and the search's) still bounds the
    enumerated optimum."""
    import structlearn.inference.exact.branch_and_bound as bb

    started = _count_soft_arc_searches(monkeypatch)
    monkeypatch.setattr(bb, "LOOSE_SOFT_ARC_NODES", 1)
    graph = dense_normal(seed, 8, 4)
    res = solve_map(graph, "exact", enumeration_limit=0, persistency=False, tighten=0,
                    max_nodes=2,
                    bound_params={"polish": 0.0, "local_search": False, "max_iter": 3})
    best = enumerated_optimum(graph)
    assert started == [8]
    assert res.score == graph.score(res.labels) <= best + 1e-9
    assert res.upper_bound >= best - 1e-9
    if res.status != "exact":
        assert res.status == "node_limit" and not res.converged
        assert res.n_iter <= 1 + 2  # the root and the search's one node per LP node left
    else:  # proved within those nodes
        assert res.score == pytest.approx(best, abs=1e-9)


def test_a_loose_root_under_a_time_limit_is_searched_to_the_deadline():
    """complete 16 x 6 (a 35 % root gap): the soft arc search takes the rest
    of the time; under a short limit the bound is the tighter certified one
    and the limit holds."""
    graph = dense_normal(5, 16, 6)
    solve_map(dense_normal(0, 6, 3), "exact", enumeration_limit=0)  # (kernels loaded)
    t0 = time.perf_counter()
    res = solve_map(graph, "exact", time_limit=1.0)
    assert time.perf_counter() - t0 <= 3.0 * (1.0 + 0.75)  # 3x: busy shared machines
    full = solve_map(graph, "exact")  # proved by the search (without a limit)
    assert full.status == "exact"
    assert res.score <= full.score + 1e-9 <= res.upper_bound + 2e-9
    assert res.status in ("exact", "time_limit")


@pytest.mark.parametrize("n, p_edge, existential", [(13, 1.0, False), (16, 0.4, True)])
def test_a_loose_dense_component_is_searched_without_existential_consistency(
        monkeypatch, n, p_edge, existential):
    """The handed-over search stops at FDAC* where the variables have
    DENSE_MEAN_DEGREE neighbours or more on average, and keeps EDAC* below."""
    import structlearn.inference.exact.branch_and_bound as bb
    from structlearn.graphs import graph_from_edges

    kinds = []

    class Recorded(bb.PolishedSoftArcSearch):
        def __init__(self, graph, **kw):
            kinds.append(kw["existential"])
            super().__init__(graph, **kw)

    monkeypatch.setattr(bb, "DFBB_FIRST_WORK", 1)
    monkeypatch.setattr(bb, "PolishedSoftArcSearch", Recorded)
    rng = np.random.default_rng(n)
    edges = np.array([(a, b) for a in range(n) for b in range(a + 1, n)
                      if rng.random() < p_edge])
    graph = graph_from_edges(rng.normal(size=(n, 3)), edges, rng.normal(size=(len(edges), 3, 3)))
    res = solve_map(graph, "exact", enumeration_limit=0, persistency=False, tighten=0,
                    bound_params={"polish": 0.0, "local_search": False, "max_iter": 3})
    assert kinds == [existential]
    assert res.status == "exact"
    assert res.score == pytest.approx(solve_map(graph, "ilp").score, abs=1e-9)


def _assert_certified_like_the_ilp(graph, res):
    """``res`` holds HiGHS' optimum of ``graph``, scored right and certified."""
    assert res.score == pytest.approx(solve_map(graph, "ilp").score, abs=1e-9)
    assert res.score == graph.score(res.labels)
    assert res.upper_bound == pytest.approx(res.score, abs=1e-6)


def _dense_searches(monkeypatch):
    """Record the dense first searches (their graphs' sizes and whether they
    proved) and the cycle searches that branch and bound starts; the first
    depth-first attempt is cut to one node."""
    import structlearn.inference.exact.branch_and_bound as bb

    dense, cycles = [], []
    real_dense, real_cycles = bb._small_soft_arc_first, bb._cycle_relaxations

    def dense_spy(sub, *args):
        search = real_dense(sub, *args)
        if search is not None:  # (its labeling as the first slice left it)
            dense.append((sub.n_vars, search,
                          search.labels.copy() if np.isfinite(search.score) else None))
        return search

    def cycles_spy(*args):
        cycles.append(1)
        return real_cycles(*args)

    monkeypatch.setattr(bb, "DFBB_FIRST_WORK", 1)
    monkeypatch.setattr(bb, "_small_soft_arc_first", dense_spy)
    monkeypatch.setattr(bb, "_cycle_relaxations", cycles_spy)
    return dense, cycles


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("time_limit", [None, 30.0])
def test_a_dense_component_is_searched_before_the_cycles_and_the_lp_root(
        monkeypatch, seed, time_limit):
    """Complete 13-variable graphs (12 neighbours each): the soft arc search
    at FDAC* proves them before any cycle search or LP solve."""
    dense, cycles = _dense_searches(monkeypatch)
    graph = dense_normal(seed, 13, 3)
    res = solve_map(graph, "exact", time_limit=time_limit, enumeration_limit=0,
                    persistency=False)
    assert [n for n, _, _ in dense] == [13] and dense[0][1].proved and not cycles
    assert res.status == "exact" and res.converged
    _assert_certified_like_the_ilp(graph, res)


@pytest.mark.parametrize("seed", range(3))
def test_a_dense_first_search_left_open_seeds_the_root_and_resumes_after_it(
        monkeypatch, seed):
    """A dense first search cut to 40 nodes (one dive to a leaf) does not
    prove: the LP root starts from its labeling, and the loose root resumes
    that same search (no second one is started), which proves the optimum."""
    import structlearn.inference.exact.branch_and_bound as bb

    dense, cycles = _dense_searches(monkeypatch)
    monkeypatch.setattr(bb, "SOFT_ARC_FIRST_NODES", 40)
    started = _started_searches(monkeypatch, "PolishedSoftArcSearch")
    adopted = _spy_method(monkeypatch, bb._Search, "_adopt", lambda labels, _: labels.copy())
    graph = dense_normal(seed, 13, 3)
    res = solve_map(graph, "exact", enumeration_limit=0, persistency=False,
                    bound_params={"polish": 0.0, "local_search": False, "max_iter": 3})
    assert started == [13] and len(dense) == 1 and cycles
    _, first, first_labels = dense[0]
    assert first.n_nodes > 40  # resumed after the root
    # the root's search started from the first search's labeling
    assert first_labels is not None
    np.testing.assert_array_equal(adopted[0], first_labels)
    assert res.status == "exact"
    assert res.score == pytest.approx(solve_map(graph, "ilp").score, abs=1e-9)
    assert res.score == graph.score(res.labels)


@pytest.mark.parametrize("time_limit", [None, 30.0])
def test_a_loose_small_root_resumes_the_first_search_with_the_local_searches(
        monkeypatch, time_limit):
    """The small first search runs plain; a loose root resumes it with the
    local searches where there is a time limit (the rest of the component's
    time), plain without one; either way it proves HiGHS's optimum."""
    import structlearn.inference.exact.branch_and_bound as bb

    dense, _ = _dense_searches(monkeypatch)
    monkeypatch.setattr(bb, "SOFT_ARC_FIRST_NODES", 40)
    monkeypatch.setattr(bb, "SMALL_FIRST_SHARE", 0.0)  # the first search stops at once
    runs, asked = [], []
    real_run, real_start = bb.PolishedSoftArcSearch.run, bb.PolishedSoftArcSearch.start_polishing

    def run_spy(self, **kw):
        runs.append(real_run(self, **kw))
        return runs[-1]

    def start_spy(self):
        asked.append(self.polishing)
        return real_start(self)

    monkeypatch.setattr(bb.PolishedSoftArcSearch, "run", run_spy)
    monkeypatch.setattr(bb.PolishedSoftArcSearch, "start_polishing", start_spy)
    graph = dense_normal(0, 13, 3)
    res = solve_map(graph, "exact", time_limit=time_limit, enumeration_limit=0,
                    persistency=False,
                    bound_params={"polish": 0.0, "local_search": False, "max_iter": 3})
    _, first, _ = dense[0]
    assert len(runs) >= 2 and not runs[0]  # resumed after the root
    assert asked == ([False] if time_limit is not None else [])
    assert first.polishing is (time_limit is not None)
    assert res.status == "exact"
    _assert_certified_like_the_ilp(graph, res)


def test_sparser_small_components_are_searched_first_with_existential_consistency(
        monkeypatch):
    """Fewer than DENSE_MEAN_DEGREE neighbours on average: the first search
    runs at EDAC* and proves HiGHS's optimum before any cycle search."""
    from structlearn.graphs import graph_from_edges

    import structlearn.inference.exact.branch_and_bound as bb

    dense, cycles = _dense_searches(monkeypatch)
    rng = np.random.default_rng(3)
    n = 16
    edges = np.array([(a, b) for a in range(n) for b in range(a + 1, n) if rng.random() < 0.4])
    graph = graph_from_edges(rng.normal(size=(n, 3)), edges, rng.normal(size=(len(edges), 3, 3)))
    assert 2 * len(edges) < 12 * n
    res = solve_map(graph, "exact", enumeration_limit=0, persistency=False)
    assert [m for m, _, _ in dense] == [16] and dense[0][1].proved and not cycles
    assert dense[0][1].net.existential and not bb._dense(graph)
    _assert_certified_like_the_ilp(graph, res)


def sparse_normal(seed, n, k, p_edge, p_inf=0.0):
    """A connected sparse random graph (a path plus random edges) with
    N(0, 1) tables, fewer than DENSE_MEAN_DEGREE neighbours; a share
    ``p_inf`` of the table entries forbidden."""
    from structlearn.graphs import graph_from_edges

    rng = np.random.default_rng(seed)
    pairs = {(a, a + 1) for a in range(n - 1)}
    pairs |= {(a, b) for a in range(n) for b in range(a + 2, n) if rng.random() < p_edge}
    edges = np.array(sorted(pairs))
    tables = rng.normal(size=(len(edges), k, k))
    tables[rng.random(tables.shape) < p_inf] = -np.inf
    return graph_from_edges(rng.normal(size=(n, k)), edges, tables)


def _sparse_searches(monkeypatch):
    """Record the sparse first searches (their sizes and the search objects)
    and the cycle searches that branch and bound starts."""
    import structlearn.inference.exact.branch_and_bound as bb

    sparse, cycles = [], []
    real_sparse, real_cycles = bb._sparse_soft_arc_first, bb._cycle_relaxations

    def sparse_spy(sub, *args):
        search = real_sparse(sub, *args)
        if search is not None:
            sparse.append((sub.n_vars, search, search.n_nodes))
        return search

    def cycles_spy(*args):
        cycles.append(1)
        return real_cycles(*args)

    monkeypatch.setattr(bb, "_sparse_soft_arc_first", sparse_spy)
    monkeypatch.setattr(bb, "_cycle_relaxations", cycles_spy)
    return sparse, cycles


@pytest.mark.parametrize("time_limit", [None, 30.0])
def test_a_small_frustrated_grid_is_proved_by_the_sparse_first_search(monkeypatch, time_limit):
    """A 10 x 10 frustrated Potts grid (100 variables: too many for the
    depth-first search, too sparse for the dense route): the first soft arc
    search proves it before any cycle search or LP root; HiGHS agrees."""
    from structlearn.graphs import grid_graph

    sparse, cycles = _sparse_searches(monkeypatch)
    rng = np.random.default_rng(4)
    k = 3
    couplings = rng.uniform(-1.0, 1.0, size=(180, 1, 1)) * np.eye(k)
    graph = grid_graph(rng.normal(size=(10, 10, k)), np.broadcast_to(couplings, (180, k, k)))
    res = solve_map(graph, "exact", time_limit=time_limit, persistency=False)
    assert [n for n, _, _ in sparse] == [100] and sparse[0][1].proved and not cycles
    assert res.status == "exact" and res.converged
    _assert_certified_like_the_ilp(graph, res)


@pytest.mark.parametrize("left, length", [(20.0, 2.0), (10.0, 1.0), (2.0, 0.5), (1.0, 0.5),
                                          (0.4, 0.2), (0.0, 0.0), (-1.0, 0.0)])
def test_a_slice_with_a_floor(monkeypatch, left, length):
    """A tenth of the time left, but at least SPARSE_FIRST_FLOOR seconds or
    half the time left, whichever is shorter."""
    import types

    import structlearn.inference.exact.branch_and_bound as bb

    monkeypatch.setattr(bb, "time", types.SimpleNamespace(perf_counter=lambda: 100.0))
    floor = (bb.SPARSE_FIRST_FLOOR, bb.SPARSE_FIRST_FLOOR_SHARE)
    assert (bb.SPARSE_FIRST_SHARE, *floor) == (0.1, 0.5, 0.5)
    assert bb._slice_end(100.0 + left, bb.SPARSE_FIRST_SHARE, floor=floor) == \
        pytest.approx(100.0 + length)
    assert bb._slice_end(100.0 + max(left, 0.0), 0.1) == pytest.approx(100.0 + 0.1 * max(left, 0))
    assert bb._slice_end(None, 0.1, floor=floor) is None


class _ScriptedSearch:
    """Stands in for the first search: records its runs, spends no time,
    proves nothing, ends each run at the given score and bound."""

    runs = []
    outcome = (-np.inf, np.inf)

    def __init__(self, sub, **_):
        self.n_nodes, self.proved = 0, False
        self.score, self.upper_bound = -np.inf, np.inf

    def run(self, max_nodes=None, deadline=None):
        type(self).runs.append((max_nodes, deadline))
        self.n_nodes += 1
        self.score, self.upper_bound = type(self).outcome
        return False


@pytest.mark.parametrize("outcome, floored", [
    ((100.0, 100.5), True),             # a gap of 0.5 %: on to the floor
    ((100.0, 102.0), False),            # 2 %: the LP route gets the time
    ((-np.inf, np.inf), False),         # no labeling yet
    ((-0.004, 0.005), True),            # near zero: the gap is absolute
])
def test_the_first_search_runs_to_the_floor_only_with_a_narrow_gap(monkeypatch, outcome,
                                                                   floored):
    """Under a 1 s limit the sparse first search gets its tenth, then (where
    its gap is at most SPARSE_FIRST_FLOOR_GAP) runs on to the floor, within
    the same node budget; without a deadline, one run."""
    import types

    import structlearn.inference.exact.branch_and_bound as bb
    from structlearn.graphs import grid_graph

    rng = np.random.default_rng(0)
    graph = grid_graph(rng.normal(size=(9, 9, 3)), rng.normal(size=(144, 3, 3)))
    monkeypatch.setattr(bb, "time", types.SimpleNamespace(perf_counter=lambda: 100.0))
    monkeypatch.setattr(bb, "PolishedSoftArcSearch", _ScriptedSearch)
    monkeypatch.setattr(_ScriptedSearch, "runs", [])
    monkeypatch.setattr(_ScriptedSearch, "outcome", outcome)
    assert bb.SPARSE_FIRST_FLOOR_GAP == 1e-2
    search = bb._sparse_soft_arc_first(graph, True, 101.0, 1e-6, 1)
    budget = bb.SPARSE_FIRST_NODES_PER_VAR * 81
    expected = [(budget, pytest.approx(100.1))]
    if floored:
        expected.append((budget - 1, pytest.approx(100.5)))
    assert search is not None and _ScriptedSearch.runs == expected
    _ScriptedSearch.runs.clear()
    bb._sparse_soft_arc_first(graph, True, None, 1e-6, 1)
    assert _ScriptedSearch.runs == [(budget, None)]


@pytest.mark.parametrize("seed", range(3))
def test_a_loose_sparse_root_resumes_the_first_search(monkeypatch, seed):
    """70 variables, N(0, 1) tables, about 3 neighbours each: the first
    search, cut to no node, leaves the component open; a root without local
    search leaves a gap wider than SPARSE_LOOSE_ROOT_GAP, so that same search
    resumes in place of the depth-first search (no second one starts) and
    proves HiGHS's optimum."""
    import structlearn.inference.exact.branch_and_bound as bb

    sparse, _ = _sparse_searches(monkeypatch)
    monkeypatch.setattr(bb, "SPARSE_FIRST_NODES_PER_VAR", 0)
    started = _started_searches(monkeypatch, "PolishedSoftArcSearch")
    loose = _spy_method(monkeypatch, bb._Search, "_loose", lambda _, answer: answer)
    graph = sparse_normal(seed, 70, 3, 0.03)
    assert graph.n_vars > bb.DFBB_MAX_VARS and 2 * graph.n_factors < 12 * graph.n_vars
    res = solve_map(graph, "exact", persistency=False, tighten=0,
                    bound_params={"polish": 0.0, "local_search": False, "max_iter": 3})
    assert started == [70] and len(sparse) == 1
    _, first, nodes_before = sparse[0]
    assert nodes_before <= 1 and loose[0] and first.n_nodes > nodes_before
    assert res.status == "exact" and first.proved
    _assert_certified_like_the_ilp(graph, res)


def test_a_loose_root_of_a_component_past_the_resume_size_leaves_the_first_search(monkeypatch):
    """The set-up above with SPARSE_RESUME_MAX_VARS below the component's
    70 variables: the loose root does not resume the first search (it stays
    at its nodes), and the LP-bounded search certifies HiGHS's optimum."""
    import structlearn.inference.exact.branch_and_bound as bb

    sparse, _ = _sparse_searches(monkeypatch)
    monkeypatch.setattr(bb, "UNRESUMED_FIRST_NODES_PER_VAR", 0)
    monkeypatch.setattr(bb, "SPARSE_RESUME_MAX_VARS", 69)
    loose = _spy_method(monkeypatch, bb._Search, "_loose", lambda _, answer: answer)
    graph = sparse_normal(0, 70, 3, 0.03)
    res = solve_map(graph, "exact", persistency=False, tighten=0,
                    bound_params={"polish": 0.0, "local_search": False, "max_iter": 3})
    assert len(sparse) == 1
    _, first, nodes_before = sparse[0]
    assert not any(loose) and first.n_nodes == nodes_before and not first.proved
    assert res.status == "exact"
    _assert_certified_like_the_ilp(graph, res)


@pytest.mark.parametrize("generator", ["planted", "grid"])
def test_a_soft_arc_search_out_of_room_leaves_the_component_to_the_lp_route(monkeypatch,
                                                                          generator):
    """A weighted CSP (the hard-constrained route) and a Potts grid (the
    sparse one) whose soft arc searches get no room to grow their trails:
    each stops for good, and branch and bound still certifies HiGHS'
    optimum."""
    import structlearn.inference.exact.branch_and_bound as bb
    import structlearn.inference.exact.soft_arc as soft_arc
    from structlearn.graphs import grid_graph

    from test_soft_arc import planted_weighted_csp

    graph = (planted_weighted_csp(5, n=40, k=5, forbid=0.4) if generator == "planted" else
             grid_graph(np.random.default_rng(5).normal(size=(9, 9, 3)),
                        np.random.default_rng(6).uniform(-1, 1, size=(144, 1, 1)) * np.eye(3)))
    searches = []

    class Cramped(bb.PolishedSoftArcSearch):
        def __init__(self, sub, **kw):
            super().__init__(sub, **dict(kw, max_bytes=0))
            searches.append(self)

    monkeypatch.setattr(soft_arc, "SNAPSHOT_MAX_BYTES", 0)
    monkeypatch.setattr(soft_arc, "TRAIL_FIRST_NODES", 0)
    monkeypatch.setattr(bb, "PolishedSoftArcSearch", Cramped)
    monkeypatch.setattr(bb, "DFBB_MAX_VARS", 8)  # (the grid: past the small searches)
    res = solve_map(graph, "exact", time_limit=60.0)
    assert searches and all(s.out_of_room and not s.proved for s in searches)
    assert res.status == "exact"
    _assert_certified_like_the_ilp(graph, res)


def test_a_weighted_csp_too_large_for_saved_nodes_gets_the_soft_arc_search(monkeypatch):
    """250 variables of 20 labels, half the pairs forbidden: n saved nodes
    would take 70 MB, more than SOFT_ARC_MAX_BYTES but within
    SOFT_ARC_HARD_MAX_BYTES, the trail a few; the soft arc search gets the
    network and proves it."""
    import structlearn.inference.exact.branch_and_bound as bb
    from structlearn.inference.exact.soft_arc import soft_arc_bytes

    from test_soft_arc import planted_weighted_csp

    import structlearn.inference.exact.soft_arc as soft_arc

    graph = planted_weighted_csp(3, n=250, k=20, forbid=0.5)
    n, E, K = graph.n_vars, graph.n_factors, int(graph.n_states.max())
    assert 8 * (n + 1) * (n + 2 * E) * K > bb.SOFT_ARC_MAX_BYTES
    assert soft_arc_bytes(graph) < bb.SOFT_ARC_MAX_BYTES
    with monkeypatch.context() as patch:  # the trail's kernels compiled outside the limit
        patch.setattr(soft_arc, "SNAPSHOT_MAX_BYTES", 0)
        assert solve_map(planted_weighted_csp(3, n=30, k=6), "exact").status == "exact"
    started = _started_searches(monkeypatch, "PolishedSoftArcSearch")
    res = solve_map(graph, "exact", time_limit=30.0)
    assert started and res.status == "exact" and res.score > -np.inf
    assert res.upper_bound == pytest.approx(res.score)
    assert graph.score(res.labels) == res.score


def test_large_domains_and_hard_constraints_skip_the_sparse_first_search(monkeypatch):
    """Domains of AUTO_LARGE_DOMAIN labels and ``depth_first=False`` keep the
    LP route; forbidden pairs keep the soft arc route of their own."""
    import structlearn.inference.exact.branch_and_bound as bb

    graph = sparse_normal(0, 70, 3, 0.03)
    assert bb._sparse_soft_arc_first(graph, True, None, 1e-6, None) is not None
    assert bb._sparse_soft_arc_first(graph, False, None, 1e-6, None) is None
    wide = sparse_normal(0, 66, bb.AUTO_LARGE_DOMAIN, 0.0)
    assert bb._sparse_soft_arc_first(wide, True, None, 1e-6, None) is None
    sparse, _ = _sparse_searches(monkeypatch)
    hard = sparse_normal(0, 70, 3, 0.03, p_inf=0.3)
    res = solve_map(hard, "exact", time_limit=5.0, persistency=False)
    assert not sparse and res.status in ("exact", "infeasible")


@pytest.mark.parametrize("n, resumable", [(70, True), (90, False)])
def test_the_first_sparse_search_runs_more_nodes_where_it_may_resume(monkeypatch, n,
                                                                     resumable):
    """The first sparse search is asked for SPARSE_FIRST_NODES_PER_VAR nodes
    a variable where a loose root may resume it, for
    UNRESUMED_FIRST_NODES_PER_VAR past SPARSE_RESUME_MAX_VARS."""
    import structlearn.inference.exact.branch_and_bound as bb

    monkeypatch.setattr(bb, "SPARSE_RESUME_MAX_VARS", 80)
    asked = []

    class Recorded(bb.PolishedSoftArcSearch):
        def run(self, *, max_nodes=None, deadline=None):
            asked.append(max_nodes)
            return False

    monkeypatch.setattr(bb, "PolishedSoftArcSearch", Recorded)
    graph = sparse_normal(0, n, 3, 0.03)
    assert bb._sparse_soft_arc_first(graph, True, None, 1e-6, None) is not None
    per_var = bb.SPARSE_FIRST_NODES_PER_VAR if resumable else bb.UNRESUMED_FIRST_NODES_PER_VAR
    assert asked == [per_var * n]
    assert bb.SPARSE_FIRST_NODES_PER_VAR > bb.UNRESUMED_FIRST_NODES_PER_VAR


@pytest.mark.parametrize("n, k, p_edge, short", [(40, 3, 0.03, True), (40, 3, 0.15, True),
                                                  (16, 3, 0.5, False), (17, 3, 0.5, True)])
def test_the_first_depth_first_search_is_shorter_on_sparse_or_larger_components(
        monkeypatch, n, k, p_edge, short):
    """A component whose variables have fewer than SPARSE_DFBB_MEAN_DEGREE
    neighbours on average, or a denser one of more than
    DFBB_FULL_FIRST_MAX_VARS variables of fewer than
    DFBB_FULL_FIRST_MIN_STATES labels, gets SPARSE_DFBB_FIRST_SHARE of
    DFBB_FIRST_WORK for its first depth-first search; the others all of it
    (its budget in nodes: the work over variables times labels)."""
    import structlearn.inference.exact.branch_and_bound as bb

    budgets = []
    real = bb.pairwise_dfbb

    def spy(graph, **kw):
        budgets.append(kw["max_nodes"])
        return real(graph, **kw)

    monkeypatch.setattr(bb, "pairwise_dfbb", spy)
    graph = sparse_normal(1, n, k, p_edge)
    mean_degree = 2 * graph.n_factors / graph.n_vars
    assert (mean_degree < bb.SPARSE_DFBB_MEAN_DEGREE) is (p_edge == 0.03)
    res = solve_map(graph, "exact", persistency=False)
    share = bb.SPARSE_DFBB_FIRST_SHARE if short else 1.0
    assert budgets[0] == int(share * bb.DFBB_FIRST_WORK) // (n * k)
    assert res.status == "exact"
    _assert_certified_like_the_ilp(graph, res)


def test_larger_domains_keep_the_whole_first_depth_first_search():
    """Past DFBB_FULL_FIRST_MAX_VARS variables a dense component keeps the
    whole first run where its domains have DFBB_FULL_FIRST_MIN_STATES labels
    or more (a soft arc node costs more there), and only there."""
    import structlearn.inference.exact.branch_and_bound as bb

    k = bb.DFBB_FULL_FIRST_MIN_STATES
    n = bb.DFBB_FULL_FIRST_MAX_VARS + 4
    assert not bb._short_first_dfbb(sparse_normal(2, n, k, 0.4))
    assert bb._short_first_dfbb(sparse_normal(2, n, k - 1, 0.4))
    assert not bb._short_first_dfbb(sparse_normal(2, n - 4, k - 1, 0.6))


def test_the_loose_root_gap_is_narrower_on_sparse_components():
    """A small component's root is loose above LOOSE_ROOT_GAP where it is
    dense, above SPARSE_LOOSE_ROOT_GAP where it is sparse."""
    from types import SimpleNamespace

    import structlearn.inference.exact.branch_and_bound as bb

    sparse, dense = sparse_normal(0, 30, 3, 0.05), dense_normal(0, 14, 3)
    assert not bb._dense(sparse) and bb._dense(dense)
    for graph, loose_from in ((sparse, bb.SPARSE_LOOSE_ROOT_GAP), (dense, bb.LOOSE_ROOT_GAP)):
        for share, loose in ((0.5 * loose_from, False), (2.0 * loose_from, True)):
            ub = 100.0
            stub = SimpleNamespace(soft_search=None, loose_search=None, dfbb_graph=graph,
                                   score=ub - share * ub)
            assert bb._Search._loose(stub, ub) is loose
