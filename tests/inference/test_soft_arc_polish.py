"""The soft arc search with the iterated local search between its slices."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from structlearn.inference.exact import soft_arc_polish
from structlearn.inference.exact.soft_arc import SoftArcSearch
from structlearn.inference.exact.soft_arc_polish import PolishedSoftArcSearch

from _graphgen import all_labelings, dense_gaussian_network, random_weighted_csp


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 10**6), ties=st.booleans(), p_inf=st.sampled_from([0.0, 0.3, 0.6]))
def test_the_polished_search_proves_the_enumerated_optimum(seed, ties, p_inf):
    """With the local search after every node, the proof still equals enumeration."""
    graph = random_weighted_csp(seed, p_inf=p_inf, ties=ties)
    best = graph.score_many(all_labelings(graph)).max()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(soft_arc_polish, "POLISH_FIRST_NODES", 1)
        search = PolishedSoftArcSearch(graph)
    assert search.run() and search.proved
    if best == -np.inf:
        assert search.score == -np.inf
        return
    assert search.score == pytest.approx(best, abs=1e-6 * max(1.0, abs(best)))
    assert graph.score(search.labels) == search.score


def test_the_local_search_only_raises_the_incumbent(monkeypatch):
    monkeypatch.setattr(soft_arc_polish, "POLISH_FIRST_NODES", 30)
    graph = dense_gaussian_network()
    plain = SoftArcSearch(graph)
    plain.run(max_nodes=30)  # past the first dive: an incumbent
    assert np.isfinite(plain.score)
    search = PolishedSoftArcSearch(graph)
    assert not search.run(max_nodes=30)  # the search's 30 nodes, then the local search
    assert search.n_nodes == 30
    assert search._polisher.next_nodes == 60  # it ran, and runs next at twice the nodes
    assert search._polisher.walk.scores[1] > -np.inf
    assert search.score >= plain.score
    assert graph.score(search.labels) == search.score


def test_the_polished_search_is_deterministic_without_a_deadline(monkeypatch):
    monkeypatch.setattr(soft_arc_polish, "POLISH_FIRST_NODES", 8)
    graph = dense_gaussian_network(1)
    runs = []
    for _ in range(2):
        search = PolishedSoftArcSearch(graph)
        search.run(max_nodes=200)
        runs.append((search.n_nodes, search.score, search.labels.copy()))
    assert runs[0][:2] == runs[1][:2]
    np.testing.assert_array_equal(runs[0][2], runs[1][2])


def test_a_deadline_ends_the_polished_search():
    import time

    graph = dense_gaussian_network(2, n=30, k=8)
    # compiles what the timed run calls (the local searches run after 1,000 nodes)
    PolishedSoftArcSearch(graph).run(max_nodes=soft_arc_polish.POLISH_FIRST_NODES + 100)
    search = PolishedSoftArcSearch(graph)
    start = time.perf_counter()
    search.run(deadline=start + 0.3)
    assert time.perf_counter() - start < 1.5
    assert not search.proved and np.isfinite(search.score)
    assert graph.score(search.labels) == search.score


def test_under_a_deadline_the_first_slice_comes_at_a_share_of_the_time(monkeypatch):
    """Before ``POLISH_FIRST_NODES`` nodes, once ``POLISH_FIRST_SHARE`` of the
    time has passed: the tabu search then runs for about as long as the tree."""
    import time

    monkeypatch.setattr(soft_arc_polish, "POLISH_FIRST_NODES", 10**9)
    monkeypatch.setattr(soft_arc_polish, "POLISH_FIRST_SHARE", 0.05)
    graph = dense_gaussian_network(2, n=30, k=8)
    untimed = PolishedSoftArcSearch(graph)
    untimed.run(max_nodes=500)
    assert untimed._polisher.tabu is None  # no deadline: counted in nodes only
    search = PolishedSoftArcSearch(graph)
    start = time.perf_counter()
    search.run(deadline=start + 0.6)
    polisher = search._polisher
    assert polisher.first_slice_done and polisher.tabu is not None
    assert polisher.tabu_nodes < 10**9
    assert polisher.first_time == pytest.approx(start + 0.03, abs=0.02)
    assert graph.score(search.labels) == search.score
    assert search.offset - polisher.tabu.best_cost <= search.score + 1e-9


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10**6), p_inf=st.sampled_from([0.0, 0.3, 0.6]))
def test_a_timed_first_slice_keeps_the_proof(seed, p_inf):
    """A first slice before any node (its time share already passed) and the
    search after it still prove the enumerated optimum."""
    import time

    graph = random_weighted_csp(seed, p_inf=p_inf)
    best = graph.score_many(all_labelings(graph)).max()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(soft_arc_polish, "POLISH_FIRST_SHARE", 0.0)
        search = PolishedSoftArcSearch(graph)
        open_at_start = not search.proved  # (an infeasible table is proved at once)
        assert search.run(deadline=time.perf_counter() + 60.0)
    assert search._polisher.first_slice_done == open_at_start
    if best == -np.inf:
        assert search.score == -np.inf
        return
    assert search.score == pytest.approx(best, abs=1e-6 * max(1.0, abs(best)))


@pytest.mark.parametrize("p_inf", [0.0, 0.3])
def test_a_stall_ends_a_slice_only_without_forbidden_pairs(p_inf):
    """Given ``stall``, a slice over a network without forbidden pairs ends
    once its steps stop bettering its best (past the enumerated optimum: at
    once); over one with forbidden pairs it takes every step it is given."""
    import time

    graph = random_weighted_csp(4, p_inf=p_inf)
    search = PolishedSoftArcSearch(graph, polish=False)
    assert search.run() and search.proved  # the optimum as the incumbent
    polisher = search._polisher
    polisher.tabu_slice(search, None, steps=3000)  # the tabu search at the optimum too
    tabu = polisher.tabu
    assert tabu.hard == (p_inf > 0)
    before = int(tabu.state.counters[0])
    polisher.tabu_slice(search, time.perf_counter() + 60.0, steps=20_000, stall=64)
    assert int(tabu.state.counters[0]) - before == (20_000 if p_inf else 64)


def test_a_run_without_a_deadline_after_one_with_a_deadline_counts_in_nodes(monkeypatch):
    """A first run under a deadline that its node budget ends before its
    timed slice, then runs without one: the slices come by node counts."""
    import time

    monkeypatch.setattr(soft_arc_polish, "POLISH_FIRST_NODES", 40)
    graph = dense_gaussian_network(3)
    search = PolishedSoftArcSearch(graph)
    search.run(max_nodes=5, deadline=time.perf_counter() + 600.0)
    assert search.n_nodes == 5 and not search._polisher.first_slice_done
    search.run(max_nodes=100)
    assert search._polisher.first_slice_done and search._polisher.next_nodes >= 80
    assert graph.score(search.labels) == search.score


def test_a_search_that_starts_plain_polishes_only_once_asked(monkeypatch):
    """``polish=False``: the runs are the plain search's, node for node (no
    slice, even past POLISH_FIRST_NODES); after :meth:`start_polishing` the
    next run's first slice comes after its first node, its tabu steps as many
    as the nodes searched so far ask for, and the local searches only raise
    the incumbent."""
    monkeypatch.setattr(soft_arc_polish, "POLISH_FIRST_NODES", 30)
    slices = []
    real = soft_arc_polish._Polisher.tabu_slice

    def spy(self, search, deadline, steps=None):
        slices.append((search.n_nodes, int(self.tabu_rate * (search.n_nodes - self.tabu_nodes))))
        return real(self, search, deadline, steps)

    monkeypatch.setattr(soft_arc_polish._Polisher, "tabu_slice", spy)
    graph = dense_gaussian_network()
    plain = SoftArcSearch(graph)
    plain.run(max_nodes=80)
    search = PolishedSoftArcSearch(graph, polish=False)
    search.run(max_nodes=80)
    assert not slices and search.n_nodes == plain.n_nodes == 80
    assert search.score == plain.score
    before = search.score
    search.start_polishing()
    search.start_polishing()  # (no second reset)
    search.run(max_nodes=10)
    assert slices[0] == (81, soft_arc_polish.TABU_STEPS_PER_NODE * 81)
    assert search.score >= before
    assert graph.score(search.labels) == search.score


@pytest.mark.parametrize("full_rate_vars, share", [(14, 1.0), (1000, 1.0), (7, 0.5), (2, 1 / 7)])
def test_the_tabu_steps_per_node_shrink_with_the_network_beyond_the_full_rate_size(
        monkeypatch, full_rate_vars, share):
    """A slice's steps: ``tabu_rate`` per node on networks of at most
    TABU_FULL_RATE_VARS variables, that times TABU_FULL_RATE_VARS / n on
    larger ones (here n = 14)."""
    monkeypatch.setattr(soft_arc_polish, "TABU_FULL_RATE_VARS", full_rate_vars)
    graph = dense_gaussian_network()
    search = PolishedSoftArcSearch(graph, polish=False)
    assert not search.run(max_nodes=80)
    polisher = search._polisher
    polisher.tabu_slice(search, None)
    taken = int(polisher.tabu.state.counters[0])
    assert taken == int(share * soft_arc_polish.TABU_STEPS_PER_NODE * 80)
