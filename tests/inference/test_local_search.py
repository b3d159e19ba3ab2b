"""The local searches' kernels: iterated conditional modes and the iterated
local search (walk) against brute force on small random graphs."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from structlearn.graphs import FactorGraph
from structlearn.inference.lp._local_search_kernels import IDLE, LOCAL_OPTIMUM
from structlearn.inference.lp._lp_common import Problem, Tracker

from _graphgen import all_labelings


def random_factor_graph(seed, n_vars=7, max_k=4, n_factors=9, p_inf=0.2):
    """Unary, pairwise and ternary factors with normal scores, a share
    ``p_inf`` of the factor entries forbidden."""
    rng = np.random.default_rng(seed)
    n_states = rng.integers(1, max_k + 1, size=n_vars)
    scopes = [rng.choice(n_vars, size=int(rng.choice([2, 3])), replace=False).tolist()
              for _ in range(n_factors)]
    tables = []
    for s in scopes:
        t = rng.normal(size=int(np.prod(n_states[s])))
        t[rng.random(t.size) < p_inf] = -np.inf
        tables.append(t)
    unary = [rng.normal(size=k) for k in n_states]
    return FactorGraph(n_states, unary=unary, scopes=scopes, tables=tables)


def single_moves_improve(graph, labels):
    """Whether changing one variable's label raises the score (brute force)."""
    base = graph.score(labels)
    for i in range(graph.n_vars):
        for x in range(graph.n_states[i]):
            other = labels.copy()
            other[i] = x
            if graph.score(other) > base:
                return True
    return False


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**6), steps=st.integers(0, 40), ball=st.integers(3, 8))
def test_the_walk_keeps_an_icm_optimum_and_the_best_labeling_seen(seed, steps, ball):
    graph = random_factor_graph(seed)
    pr = Problem(graph)
    start = np.random.default_rng(seed).integers(graph.n_states)
    walk = pr.new_walk(start, np.random.default_rng(seed))
    assert walk.scores[1] == graph.score(start)
    done = pr.walk(walk, max_steps=steps, max_ball=ball)
    assert done == steps
    assert walk.counters[LOCAL_OPTIMUM] == (1 if steps else 0)
    if steps:  # the walker is an ICM optimum with its score; no single move improves it
        assert walk.scores[0] == graph.score(walk.walker)
        if np.isfinite(walk.scores[0]):
            assert not single_moves_improve(graph, walk.walker)
    assert walk.scores[1] == graph.score(walk.best)
    assert walk.scores[1] >= max(graph.score(start), walk.scores[0])
    assert not walk.queued.any() and not walk.seen.any()  # the scratch is left clean
    best = graph.score_many(all_labelings(graph)).max()
    assert walk.scores[1] <= best


def test_local_search_reaches_an_icm_optimum():
    for seed in range(30):
        graph = random_factor_graph(seed, p_inf=0.0)
        labels = np.zeros(graph.n_vars, dtype=np.int64)
        Problem(graph).improve(labels)
        assert not single_moves_improve(graph, labels)


def test_the_walk_finds_small_optima():
    graph = random_factor_graph(3, n_vars=8, max_k=3, p_inf=0.0)
    best = graph.score_many(all_labelings(graph)).max()
    pr = Problem(graph)
    walk = pr.new_walk(np.zeros(graph.n_vars, dtype=np.int64), np.random.default_rng(7))
    pr.walk(walk, max_steps=300, max_ball=4)
    assert walk.scores[1] == pytest.approx(best)


@pytest.mark.parametrize("seconds", [0.0, 1.0])
def test_the_walk_depends_on_its_stream_not_on_how_its_steps_are_split(seconds, monkeypatch):
    """The chunks between looks at the clock follow the machine's speed: the
    steps must not depend on them."""
    import structlearn.inference.lp._lp_common as lp

    graph = random_factor_graph(8, n_vars=30, n_factors=50)
    start = np.zeros(graph.n_vars, dtype=np.int64)
    pr = Problem(graph)
    whole = pr.new_walk(start, np.random.default_rng(4))
    pr.walk(whole, max_steps=200)
    # chunks of one step each, or as long as allowed
    monkeypatch.setattr(lp, "WALK_CHUNK_SECONDS", seconds)
    split = pr.new_walk(start, np.random.default_rng(4))
    pr.walk(split, max_steps=150)
    pr.walk(split, max_steps=50)
    for a, b in zip(whole, split):
        np.testing.assert_array_equal(a, b)
    other = pr.new_walk(start, np.random.default_rng(5))
    pr.walk(other, max_steps=200)
    assert other.random_state[0] != whole.random_state[0]


def test_the_walk_stops_at_the_idle_limit_and_restarts():
    graph = random_factor_graph(5, p_inf=0.0)
    pr = Problem(graph)
    walk = pr.new_walk(np.zeros(graph.n_vars, dtype=np.int64), np.random.default_rng(0))
    done = pr.walk(walk, max_steps=10**6, idle_limit=25)
    assert walk.counters[IDLE] == 25 and done < 10**6
    pr.restart_walk(walk, walk.best)
    assert walk.counters[IDLE] == 0 and walk.counters[LOCAL_OPTIMUM] == 0
    assert pr.walk(walk, max_steps=5) == 5


def test_the_walk_ends_at_its_end_time():
    import time

    graph = random_factor_graph(6, n_vars=40, n_factors=80)
    pr = Problem(graph)
    walk = pr.new_walk(np.zeros(graph.n_vars, dtype=np.int64), np.random.default_rng(0))
    pr.walk(walk, max_steps=2)  # compiled outside the clock
    start = time.perf_counter()
    pr.walk(walk, end=start + 0.05)
    assert time.perf_counter() - start < 0.5


def test_the_tracker_polish_adopts_what_the_walk_finds():
    graph = random_factor_graph(11, n_vars=8, max_k=3, p_inf=0.0)
    best = graph.score_many(all_labelings(graph)).max()
    pr = Problem(graph)
    tr = Tracker(pr, "test", {"max_iter": 10, "time_limit": None, "tol": 0.0, "polish": 10.0})
    worst = graph.score_many(all_labelings(graph)).argmin()
    tr.offer(all_labelings(graph)[worst])
    tr.n_iter = 1
    tr.t0 -= 0.05  # a solver that ran for 50 ms: a polish budget of 10x that
    tr.polish_incumbent()
    assert tr.score == graph.score(tr.labels)
    assert tr.score == pytest.approx(best)


@pytest.mark.parametrize("n_vars", [1, 2, 3])
def test_the_walk_on_graphs_smaller_than_its_least_ball(n_vars):
    """Balls of at least 3 variables: on smaller graphs a ball is the whole graph."""
    rng = np.random.default_rng(n_vars)
    n_states = rng.integers(2, 4, size=n_vars)
    scopes = [[0, 1]] if n_vars >= 2 else []
    graph = FactorGraph(n_states, unary=[rng.normal(size=k) for k in n_states], scopes=scopes,
                        tables=[rng.normal(size=int(np.prod(n_states[s]))) for s in scopes])
    pr = Problem(graph)
    walk = pr.new_walk(np.zeros(n_vars, dtype=np.int64), np.random.default_rng(0))
    assert pr.walk(walk, max_steps=50) == 50
    assert walk.scores[1] == pytest.approx(graph.score_many(all_labelings(graph)).max())
    assert walk.draws.shape == (n_vars,) and not walk.queued.any() and not walk.seen.any()
