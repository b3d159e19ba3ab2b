"""The soft arc search with the iterated local search between its slices."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from structlearn.graphs import FactorGraph
from structlearn.inference.exact import soft_arc_polish
from structlearn.inference.exact.soft_arc import SoftArcSearch
from structlearn.inference.exact.soft_arc_polish import PolishedSoftArcSearch

from _graphgen import all_labelings, random_weighted_csp


def _dense_graph(seed=0, n=14, k=6):
    rng = np.random.default_rng(seed)
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    return FactorGraph(np.full(n, k), unary=rng.normal(size=(n, k)), scopes=pairs,
                       tables=list(rng.normal(size=(len(pairs), k * k))))


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
    graph = _dense_graph()
    plain = SoftArcSearch(graph)
    plain.run(max_nodes=30)  # past the first dive: an incumbent
    assert np.isfinite(plain.score)
    search = PolishedSoftArcSearch(graph)
    assert not search.run(max_nodes=30)  # the search's 30 nodes, then the local search
    assert search.n_nodes == 30
    assert search._polisher.next_nodes == 60  # it ran, and runs next at twice the nodes
    assert search._polisher.current_score > -np.inf
    assert search.score >= plain.score
    assert graph.score(search.labels) == search.score


def test_the_polished_search_is_deterministic_without_a_deadline(monkeypatch):
    monkeypatch.setattr(soft_arc_polish, "POLISH_FIRST_NODES", 8)
    graph = _dense_graph(1)
    runs = []
    for _ in range(2):
        search = PolishedSoftArcSearch(graph)
        search.run(max_nodes=200)
        runs.append((search.n_nodes, search.score, search.labels.copy()))
    assert runs[0][:2] == runs[1][:2]
    np.testing.assert_array_equal(runs[0][2], runs[1][2])


def test_a_deadline_ends_the_polished_search():
    import time

    graph = _dense_graph(2, n=30, k=8)
    search = PolishedSoftArcSearch(graph)
    start = time.perf_counter()
    search.run(deadline=start + 0.3)
    assert time.perf_counter() - start < 1.5
    assert not search.proved and np.isfinite(search.score)
    assert graph.score(search.labels) == search.score
