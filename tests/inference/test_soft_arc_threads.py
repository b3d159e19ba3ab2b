"""The soft arc search's dives on several threads against enumeration and
against the search on one thread."""

import threading
import time
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import structlearn.inference.exact.soft_arc as soft_arc
from structlearn.graphs import FactorGraph
from structlearn.inference import method_parameters, solve_map
from structlearn.inference.exact._soft_arc_kernels import (CREW_COST, CREW_HUNGRY, CREW_SHARED,
                                                           DEPTH, DONE, FLOOR, PHASE, UPPER)
from structlearn.inference.exact.soft_arc import SoftArcSearch
from structlearn.inference.exact.soft_arc_threads import THREADS_MIN_NODES

from _graphgen import all_labelings, dense_gaussian_network, random_weighted_csp
from test_soft_arc import deep_random_network, planted_weighted_csp


def threads_from_the_start():
    """Helpers join from the first node after the root, and every dive ends
    at its first backtrack: the open nodes pass between the threads even on
    graphs of a few variables."""
    return mock.patch.multiple(soft_arc, THREADS_MIN_NODES=1, DIVE_BACKTRACKS=1,
                               MIN_DIVE_BACKTRACKS=1, MAX_DIVE_BACKTRACKS=1)


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 10**6), ties=st.booleans(), p_inf=st.sampled_from([0.0, 0.3, 0.6]),
       start=st.booleans(), n_jobs=st.sampled_from([2, 3]), deep=st.booleans())
def test_dives_on_threads_prove_the_enumerated_optimum(seed, ties, p_inf, start, n_jobs, deep):
    graph = (deep_random_network(seed, p_inf, ties) if deep
             else random_weighted_csp(seed, p_inf=p_inf, ties=ties, parallel=True))
    labelings = all_labelings(graph)
    scores = graph.score_many(labelings)
    best = scores.max()
    with threads_from_the_start():
        search = SoftArcSearch(graph, n_jobs=n_jobs,
                               incumbent=labelings[int(np.argmin(scores))] if start else None)
        assert search.run()
    assert search.proved
    if best == -np.inf:
        assert search.score == -np.inf and search.upper_bound == -np.inf
        return
    slack = 1e-6 * max(1.0, abs(best))
    assert search.score == pytest.approx(best, abs=slack)
    assert graph.score(search.labels) == search.score
    assert search.upper_bound == pytest.approx(best, abs=slack)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), ties=st.booleans(), p_inf=st.sampled_from([0.0, 0.3]),
       stops=st.lists(st.integers(1, 6), min_size=1, max_size=10))
def test_on_threads_the_upper_bound_holds_wherever_the_search_stops(seed, ties, p_inf, stops):
    """Stopped after any number of nodes (in all threads), the bound covers
    the optimum and the incumbent (the helpers' unfinished dives count), and
    the search resumes to the optimum."""
    graph = deep_random_network(seed, p_inf, ties)
    best = graph.score_many(all_labelings(graph)).max()
    slack = 1e-6 * max(1.0, abs(best)) if np.isfinite(best) else 0.0
    with threads_from_the_start():
        search = SoftArcSearch(graph, n_jobs=2)
        nodes = 0
        for step in stops:
            search.run(max_nodes=step)
            assert search.n_nodes >= nodes
            nodes = search.n_nodes
            assert search.upper_bound >= best - slack
            assert search.upper_bound >= search.score - slack
            # a labeling a helper found in its last kernel call is the search's too
            assert all(search.cost <= h.cost for h in search._helpers)
            if search.proved:
                break
        assert search.run()
    if best == -np.inf:
        assert search.score == -np.inf
    else:
        assert search.score == pytest.approx(best, abs=slack)
        assert search.upper_bound == pytest.approx(best, abs=slack)


@pytest.mark.parametrize("seed", [1, 2])
def test_two_threads_prove_what_one_proves_on_weighted_csps(seed):
    """Networks whose proof takes thousands of nodes, at the default
    thresholds: the same optimum, the helper having taken dives."""
    graph = planted_weighted_csp(seed, n=40, k=8, forbid=0.3, planted_scores=True)
    one = SoftArcSearch(graph)
    assert one.run()
    two = SoftArcSearch(graph, n_jobs=2)
    assert two.run()
    assert two.score == pytest.approx(one.score, abs=1e-9)
    assert graph.score(two.labels) == two.score
    assert len(two._helpers) == 1 and two._helpers[0].n_nodes > 0


def test_an_infeasible_network_is_proved_so_on_threads():
    ne = np.array([[-np.inf, 0.0], [0.0, -np.inf]])
    graph = FactorGraph([2, 2, 2], scopes=[(0, 1), (1, 2), (0, 2)], tables=[ne, ne, ne])
    with threads_from_the_start():
        search = SoftArcSearch(graph, n_jobs=2)
        assert search.run() and search.score == -np.inf


def test_a_deadline_stops_every_thread_with_a_true_score():
    """A network two threads do not prove in 10 s, stopped at 0.3 s: the
    threads end (a generous bound on the wall time, for a busy machine),
    with a true incumbent and bound, and the search resumes."""
    graph = dense_gaussian_network(0, n=24, k=6)
    # compiles what the timed run calls (helpers dive from THREADS_MIN_NODES nodes)
    SoftArcSearch(graph, n_jobs=2).run(max_nodes=THREADS_MIN_NODES + 200)
    search = SoftArcSearch(graph, n_jobs=2)
    threads = threading.active_count()
    start = time.perf_counter()
    assert not search.run(deadline=start + 0.3)
    assert time.perf_counter() - start < 5.0
    assert threading.active_count() == threads
    assert np.isfinite(search.score) and graph.score(search.labels) == search.score
    assert search.upper_bound >= search.score
    nodes = search.n_nodes
    search.run(max_nodes=500)
    assert search.n_nodes >= nodes + 500 and threading.active_count() == threads


def test_a_helpers_error_reaches_the_caller(monkeypatch):
    # (a proof of thousands of nodes: however late the helper's thread starts
    # on a busy machine, it takes a node before the search ends)
    graph = planted_weighted_csp(1, n=40, k=8, forbid=0.3, planted_scores=True)
    with threads_from_the_start():
        search = SoftArcSearch(graph, n_jobs=2)
        search.run(max_nodes=3)  # the root and a first node: the helper exists
    assert search._helpers

    restore = SoftArcSearch._restore

    def broken(self, node):
        if self is not search:
            raise RuntimeError("a helper failed")
        restore(self, node)

    monkeypatch.setattr(SoftArcSearch, "_restore", broken)
    threads = threading.active_count()
    with threads_from_the_start(), pytest.raises(RuntimeError, match="a helper failed"):
        search.run()
    assert threading.active_count() == threads


def test_bad_n_jobs():
    pair = FactorGraph([2, 3], scopes=[(0, 1)], tables=[np.zeros(6)])
    with pytest.raises(ValueError, match="n_jobs"):
        SoftArcSearch(pair, n_jobs=0)
    with pytest.raises(TypeError, match="n_jobs"):
        SoftArcSearch(pair, n_jobs="2")


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), ties=st.booleans(), p_inf=st.sampled_from([0.3, 0.6]),
       time_limit=st.sampled_from([None, 30.0]))
def test_exact_map_on_threads_reports_the_enumerated_optimum(seed, ties, p_inf, time_limit):
    """``solve_map(method="exact", n_jobs=2)`` through the soft arc search
    (every table with forbidden pairs): the status and score are those of
    enumeration."""
    graph = random_weighted_csp(seed, p_inf=p_inf, ties=ties)
    best = graph.score_many(all_labelings(graph)).max()
    with threads_from_the_start():
        res = solve_map(graph, "exact", n_jobs=2, enumeration_limit=0, time_limit=time_limit)
    if best == -np.inf:
        assert res.status == "infeasible" and res.score == -np.inf
        return
    assert res.status == "exact"
    assert res.score == pytest.approx(best, abs=1e-6 * max(1.0, abs(best)))
    assert graph.score(res.labels) == res.score


def test_auto_passes_n_jobs_to_exact_and_drops_it_elsewhere():
    assert "n_jobs" in method_parameters("exact")
    wcsp = planted_weighted_csp(1, n=40, k=8, forbid=0.3, planted_scores=True)
    one, two = solve_map(wcsp, "exact"), solve_map(wcsp, "auto", n_jobs=2)
    assert two.method == "exact" and two.status == "exact"
    assert two.score == pytest.approx(one.score, abs=1e-9)
    chain = FactorGraph([3, 3, 3], unary=np.arange(9.0).reshape(3, 3), scopes=[(0, 1), (1, 2)],
                        tables=[np.eye(3), np.eye(3)])
    assert solve_map(chain, "auto", n_jobs=2).status == "exact"  # a tree: one thread
    with pytest.raises(ValueError, match="n_jobs"):
        solve_map(chain, "auto", n_jobs=0)
    with pytest.raises(ValueError, match="n_jobs"):
        solve_map(wcsp, "exact", n_jobs=0)


def test_no_helper_where_its_copy_of_the_state_would_not_fit(monkeypatch):
    graph = planted_weighted_csp(1, n=40, k=8, forbid=0.3, planted_scores=True)
    one = SoftArcSearch(graph)
    assert one.run()
    monkeypatch.setattr(soft_arc, "HELPERS_MAX_BYTES", 1)
    capped = SoftArcSearch(graph, n_jobs=4)
    assert capped.run() and capped._helpers == []
    assert capped.n_nodes == one.n_nodes and capped.score == one.score


@pytest.mark.parametrize("backend", ["loky", "threading"])
def test_the_threads_are_the_searchs_own_under_any_joblib_backend(backend):
    import joblib

    graph = planted_weighted_csp(2, n=40, k=8, forbid=0.3, planted_scores=True)
    one = SoftArcSearch(graph)
    assert one.run()
    with joblib.parallel_config(backend=backend):
        two = SoftArcSearch(graph, n_jobs=2)
        assert two.run()
    assert two.score == pytest.approx(one.score, abs=1e-9)
    assert len(two._helpers) == 1 and two._helpers[0].n_nodes > 0


# ------------------------------------------------------------- the crew's signals
def _crew_cost(search, score):
    """The cost in ``search``'s network of a labeling scoring ``score``."""
    return search.offset - score


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**6), ties=st.booleans(), p_inf=st.sampled_from([0.0, 0.3]),
       shared=st.booleans())
def test_the_crews_cost_cuts_every_node_of_the_kernel(seed, ties, p_inf, shared):
    """Told that some thread holds a labeling of the enumerated optimum's
    cost, the kernel adopts no labeling of its own (every node is cut against
    that cost) and ends; told the cost of no labeling, it finds the optimum."""
    graph = deep_random_network(seed, p_inf, ties)
    best = graph.score_many(all_labelings(graph)).max()
    if best == -np.inf:
        return
    search = SoftArcSearch(graph, best_first=False)
    search.crew[CREW_COST] = _crew_cost(search, best)
    search.crew[CREW_SHARED] = float(shared)
    for _ in range(10**4):  # (a shared crew's kernel returns at every labeling it finds)
        if search._search_chunk(10**6) or search.state.counters[PHASE] == DONE:
            break
    assert search.state.counters[PHASE] == DONE
    assert search.cost == np.inf and search.score == -np.inf
    alone = SoftArcSearch(graph, best_first=False)
    assert alone.run()
    assert alone.score == pytest.approx(best, abs=1e-6 * max(1.0, abs(best)))


def _mid_dive(seed=3):
    """A depth-first search stopped a few nodes into its first dive, at a
    depth of 2 or more (levels it could hand over)."""
    graph = planted_weighted_csp(seed, n=40, k=8, forbid=0.3, planted_scores=True)
    search = SoftArcSearch(graph, best_first=False)
    search.run(max_nodes=6)
    assert search.state.counters[DEPTH] - search.state.counters[FLOOR] >= 2
    assert search.state.counters[PHASE] != DONE
    return search


def test_a_hungry_crew_makes_the_kernel_return_after_one_node():
    search = _mid_dive()
    search.crew[CREW_HUNGRY] = 1.0
    nodes = search.n_nodes
    search._search_chunk(1000)  # alone (not shared): the flag means nothing
    assert search.n_nodes > nodes + 1
    search = _mid_dive()
    search.crew[CREW_HUNGRY] = search.crew[CREW_SHARED] = 1.0
    nodes = search.n_nodes
    search._search_chunk(1000)
    assert search.n_nodes == nodes + 1


def test_a_cheaper_labeling_elsewhere_makes_the_kernel_return_to_trade():
    search = _mid_dive()
    search.state.scalars[UPPER] = 1e9  # an incumbent (any), worse than the crew's
    search.crew[CREW_COST] = 1e8
    search.crew[CREW_SHARED] = 1.0
    nodes = search.n_nodes
    search._search_chunk(1000)
    assert search.n_nodes == nodes + 1


def test_on_threads_the_local_searches_run_while_the_helpers_dive(monkeypatch):
    """A slice of the local searches waits until a helper has searched more
    nodes: it would wait in vain if the helpers stopped for it."""
    from structlearn.inference.exact import soft_arc_polish

    monkeypatch.setattr(soft_arc_polish, "POLISH_FIRST_NODES", 100)
    tabu_slice = soft_arc_polish._Polisher.tabu_slice
    seen = []

    def waiting_slice(self, search, deadline, steps=None):
        start = time.perf_counter()
        nodes = [h.n_nodes for h in search._helpers]
        while time.perf_counter() - start < 5.0:
            if [h.n_nodes for h in search._helpers] != nodes:
                break
            time.sleep(0.001)
        seen.append([h.n_nodes for h in search._helpers] != nodes)
        return tabu_slice(self, search, deadline, steps)

    monkeypatch.setattr(soft_arc_polish._Polisher, "tabu_slice", waiting_slice)
    graph = planted_weighted_csp(1, n=40, k=8, forbid=0.3, planted_scores=True)
    one = SoftArcSearch(graph)
    assert one.run()
    with threads_from_the_start():
        search = soft_arc_polish.PolishedSoftArcSearch(graph, n_jobs=2)
        assert search.run()
    assert any(seen)
    assert search.score == pytest.approx(one.score, abs=1e-9)
    assert graph.score(search.labels) == search.score
