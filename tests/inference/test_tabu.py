"""The tabu search over a cost function network: its incremental state
against a recount, its labelings against enumeration."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from structlearn.inference.exact._soft_arc_kernels import labeling_cost
from structlearn.inference.exact._tabu_kernels import (BEST, CURRENT, STEP, VIOLATIONS,
                                                        TabuState, tabu_init)
from structlearn.inference.exact.soft_arc import _cost_network
from structlearn.inference.exact.tabu import TabuSearch

from _graphgen import all_labelings, random_weighted_csp, wide_weighted_csp


def _recount(search):
    """A fresh state of ``search``'s current labeling (gains, clashes, cost)."""
    s = search.state
    fresh = TabuState(s.labels.copy(), np.zeros_like(s.gain), np.zeros_like(s.clash),
                      np.zeros_like(s.tabu_until), np.zeros_like(s.best_labels),
                      np.zeros_like(s.least_move), np.full(2, np.inf),
                      np.zeros(3, dtype=np.int64))
    tabu_init(search.net, search.pairs, fresh)
    return fresh


def _allowed(net):
    return np.isfinite(net.unary.reshape(-1, net.K))


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 10**6), p_inf=st.sampled_from([0.0, 0.3, 0.6]),
       steps=st.integers(1, 400), ties=st.booleans(), wide=st.booleans())
def test_the_incremental_state_equals_a_recount(seed, p_inf, steps, ties, wide):
    """After any number of steps (moves and perturbations) the gains,
    clashes, least moves, current cost and violations are those of the
    current labeling; labels stay allowed; the best labeling is feasible at
    its cost."""
    graph = (wide_weighted_csp(seed, n_vars=40 + seed % 60, p_inf=p_inf, ties=ties) if wide
             else random_weighted_csp(seed, p_inf=p_inf, ties=ties))
    if graph.n_factors == 0 or not _allowed(_cost_network(graph)[0]).any(axis=1).all():
        return
    net, _ = _cost_network(graph)
    search = TabuSearch(net, seed=seed)
    search.settings = search.settings._replace(stall=7)  # perturbations too
    search.run(steps)
    fresh = _recount(search)
    s = search.state
    K = net.K
    n = net.n_states.shape[0]
    allowed = _allowed(net)
    valid = allowed.ravel()  # rows of labels a variable may take
    assert allowed[np.arange(n), s.labels].all()
    np.testing.assert_allclose(s.gain[valid], fresh.gain[valid], atol=1e-9)
    np.testing.assert_array_equal(s.clash.reshape(n, K)[allowed], fresh.clash.reshape(n, K)[allowed])
    assert s.scalars[CURRENT] == pytest.approx(fresh.scalars[CURRENT], abs=1e-9)
    assert s.counters[VIOLATIONS] == fresh.counters[VIOLATIONS]
    np.testing.assert_allclose(s.least_move, fresh.least_move, atol=1e-9)
    if search.best_cost < np.inf:
        assert labeling_cost(net, search.best_labels) == pytest.approx(search.best_cost,
                                                                       abs=1e-9)


@pytest.mark.parametrize("seed", range(40))
def test_the_tabu_search_finds_the_enumerated_optimum_of_small_networks(seed):
    graph = random_weighted_csp(seed, p_inf=0.4, ties=bool(seed % 2))
    net, offset = _cost_network(graph)
    scores = graph.score_many(all_labelings(graph))
    search = TabuSearch(net)
    if not _allowed(net).any(axis=1).all():  # a variable without a label
        return
    search.run(3000)
    best = scores.max()
    if best == -np.inf:  # no feasible labeling: none found
        assert search.best_cost == np.inf
        return
    assert offset - search.best_cost == pytest.approx(best, abs=1e-9)
    assert graph.score(search.best_labels) == pytest.approx(best, abs=1e-9)


@pytest.mark.parametrize("seed", range(6))
def test_a_stall_ends_a_run_once_its_steps_stop_bettering_the_best(seed):
    """Past the enumerated optimum nothing betters the best: a run given
    ``stall`` takes exactly that many steps (whole chunks of a quarter of
    it), a run without takes all it is asked for."""
    graph = random_weighted_csp(seed, p_inf=0.0)
    net, offset = _cost_network(graph)
    search = TabuSearch(net)
    assert not search.hard  # (domains of 1-4 labels: the padding is not forbidden pairs)
    search.run(3000)
    best = graph.score_many(all_labelings(graph)).max()
    assert offset - search.best_cost == pytest.approx(best, abs=1e-9)
    before = int(search.state.counters[STEP])
    assert not search.run(10**6, stall=64)
    assert int(search.state.counters[STEP]) - before == 64
    search.run(500)
    assert int(search.state.counters[STEP]) - before == 564


def test_restart_keeps_the_better_best_and_runs_are_deterministic():
    graph = random_weighted_csp(3, p_inf=0.3, ties=False)
    net, _ = _cost_network(graph)
    one, two = TabuSearch(net, seed=5), TabuSearch(net, seed=5)
    one.run(500)
    two.run(200)
    two.run(300)
    np.testing.assert_array_equal(one.best_labels, two.best_labels)
    assert one.best_cost == two.best_cost
    best = one.best_cost
    worst = np.argmax(_allowed(net), axis=1)  # some allowed labeling
    one.restart(worst)
    assert one.best_cost <= best
    np.testing.assert_array_equal(one.state.labels, worst)


def test_a_deadline_ends_a_run():
    import time

    graph = random_weighted_csp(11, p_inf=0.3)
    net, _ = _cost_network(graph)
    TabuSearch(net).run(10, deadline=time.perf_counter() + 60.0)  # compiled outside the clock
    search = TabuSearch(net)
    start = time.perf_counter()
    search.run(10**12, deadline=start + 0.05)
    assert time.perf_counter() - start < 1.0
    assert search.state.counters[0] > 0 and search.state.scalars[BEST] <= np.inf


def test_restart_refuses_labels_outside_the_domains():
    from structlearn.graphs import FactorGraph

    graph = FactorGraph([2, 3], unary=[[0.0, -np.inf], [0.0, -1.0, -2.0]], scopes=[(0, 1)],
                        tables=[np.zeros(6)])
    search = TabuSearch(_cost_network(graph)[0])
    with pytest.raises(ValueError, match="variable 0 is given label 1"):
        search.restart([1, 0])
    with pytest.raises(ValueError, match="within the variables' domains"):
        search.restart([0, 3])
    search.restart([0, 2])
    search.run(50)
    assert graph.score(search.best_labels) == 0.0  # labels (0, 0)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("wide", [False, True])
def test_each_step_takes_a_cheapest_allowed_move(seed, wide):
    """Step by step, the move taken is one of least cost change among those
    allowed (not tabu, or tabu and giving a feasible labeling cheaper than
    the best: aspiration), from a full scan of every variable's labels:
    passing over the variables whose least move is dearer than the best
    found so far loses none."""
    from structlearn.inference.exact._tabu_kernels import STEP

    make = wide_weighted_csp if wide else random_weighted_csp
    graph = make(seed, p_inf=0.3 if seed % 2 else 0.0, ties=bool(seed % 3))
    net, _ = _cost_network(graph)
    if not _allowed(net).any(axis=1).all():
        return
    search = TabuSearch(net, seed=seed)
    search.settings = search.settings._replace(tenure=2)  # small networks: few moves tabu
    search.run(0)
    s = search.state
    K, n = net.K, net.n_states.shape[0]
    checked = 0
    for _ in range(300):
        labels, gain, clash = s.labels.copy(), s.gain.copy(), s.clash.copy()
        step, cur, best = int(s.counters[STEP]), s.scalars[CURRENT], s.scalars[BEST]
        viol = int(s.counters[VIOLATIONS])
        least = np.inf
        for i in range(n):
            g0, c0 = gain[i * K + labels[i]], clash[i * K + labels[i]]
            for x in range(net.n_states[i]):
                if x == labels[i] or net.unary[i * K + x] == np.inf:
                    continue
                d = gain[i * K + x] - g0
                if s.tabu_until[i * K + x] > step and not (
                        viol - c0 + clash[i * K + x] == 0 and cur + d < best):
                    continue
                least = min(least, d)
        search.run(1)
        moved = np.flatnonzero(s.labels != labels)
        if least == np.inf:
            assert moved.size == 0
            continue
        assert moved.size == 1
        i = moved[0]
        d = gain[i * K + s.labels[i]] - gain[i * K + labels[i]]
        assert d == least
        checked += 1
    assert checked > 100 or (_allowed(net).sum(axis=1) < 2).all()  # or nothing can move
