"""Short-cycle tightening: the regrouped graph keeps the score function, the
cycle search matches a plain enumeration, and the tightened relaxation's
certified bound lies between the optimum and the plain relaxation's."""

import itertools

import numpy as np
import pytest

from _graphgen import all_labelings
from structlearn.graphs import FactorGraph, complete_graph, grid_graph
from structlearn.inference import solve_map
from structlearn.inference.lp.tightening import cluster_graph, frustrated_cycles


def random_loopy(rng, kind):
    """Small loopy graphs with frustrated couplings, some -inf entries,
    parallel pairwise factors and a ternary factor."""
    k = int(rng.integers(2, 4))
    if kind == "grid":
        j = rng.uniform(-1, 1, size=(12, 1, 1))
        g = grid_graph(rng.normal(scale=0.3, size=(3, 3, k)), j * np.eye(k)
                       + 0.2 * rng.normal(size=(12, k, k)))
    else:
        g = complete_graph(rng.normal(scale=0.3, size=(4, k)),
                           list(rng.normal(size=(6, k, k))))
    scopes = [list(g.scope(f)) for f in range(g.n_factors)]
    tables = [g.factor_table(f).ravel() for f in range(g.n_factors)]
    tables[0] = tables[0].copy()
    tables[0][0] = -np.inf
    scopes.append(scopes[1][::-1])  # a parallel factor, scope reversed
    tables.append(rng.normal(size=k * k))
    scopes.append([0, 1, 2])
    tables.append(rng.normal(scale=0.1, size=k ** 3))
    return FactorGraph(g.n_states, unary=[g.unary_of(i) for i in range(g.n_vars)],
                       scopes=scopes, tables=tables)


def reference_cycles(graph):
    """Every triangle and 4-cycle of the pairwise factors with its frustration,
    by plain enumeration."""
    edge = {}
    for f in range(graph.n_factors):
        s = graph.scope(f)
        if len(s) != 2:
            continue
        t = graph.factor_table(f)
        a, b = (s[0], s[1]) if s[0] < s[1] else (s[1], s[0])
        t = t if s[0] < s[1] else t.T
        edge[(a, b)] = edge.get((a, b), 0) + t

    def table(a, b):
        return edge[(a, b)] if a < b else edge[(b, a)].T

    found = {}
    for cyc in itertools.chain(itertools.permutations(range(graph.n_vars), 3),
                               itertools.permutations(range(graph.n_vars), 4)):
        pairs = [(cyc[i], cyc[(i + 1) % len(cyc)]) for i in range(len(cyc))]
        if not all((min(p), max(p)) in edge for p in pairs):
            continue
        if cyc[0] != min(cyc) or cyc[1] > cyc[-1]:
            continue  # one listing per cycle
        independent = sum(table(*p).max() for p in pairs)
        joint = max(sum(table(*p)[x[i], x[(i + 1) % len(cyc)]] for i, p in enumerate(pairs))
                    for x in itertools.product(*(range(graph.n_states[v]) for v in cyc)))
        found[tuple(cyc)] = independent - joint
    return found


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("kind", ["grid", "complete"])
def test_cycle_search_matches_enumeration(seed, kind):
    graph = random_loopy(np.random.default_rng(seed), kind)
    ref = reference_cycles(graph)
    cycles, frustration = frustrated_cycles(graph, 10**6)
    got = {tuple(int(v) for v in c if v >= 0): fr for c, fr in zip(cycles, frustration)}
    expected = {c: fr for c, fr in ref.items() if fr > 1e-9}
    assert set(got) == set(expected)
    for c, fr in got.items():
        assert fr == pytest.approx(expected[c], abs=1e-9)
    assert np.all(np.diff(frustration) <= 0)
    top, _ = frustrated_cycles(graph, 2)
    np.testing.assert_array_equal(top, cycles[:2])


@pytest.mark.parametrize("seed", range(6))
def test_cycle_size_cap_keeps_every_cycle_that_fits(seed):
    """Mixed domains (2-4 states): with a cap on the joint table, exactly the
    enumerated cycles within the cap are found (pairs too large for any
    cycle through them are skipped before the search)."""
    rng = np.random.default_rng(300 + seed)
    k = rng.integers(2, 5, size=5)
    scopes = [(a, b) for a in range(5) for b in range(a + 1, 5)]
    graph = FactorGraph(k, scopes=scopes,
                        tables=[rng.normal(size=int(k[a] * k[b])) for a, b in scopes])
    ref = reference_cycles(graph)
    for cap in (8, 12, 18, 27, 36, 64, 256):
        cycles, _ = frustrated_cycles(graph, 10**6, max_entries=cap, max_total=10**9)
        got = {tuple(int(v) for v in c if v >= 0) for c in cycles}
        assert got == {c for c, fr in ref.items()
                       if fr > 1e-9 and np.prod(k[list(c)]) <= cap}
    # by default the clusters hold at most four times the factors' entries,
    # the most frustrated first
    cycles, frustration = frustrated_cycles(graph, 10**6)
    sizes = [int(np.prod(k[[v for v in c if v >= 0]])) for c in cycles]
    entries = sum(int(k[a] * k[b]) for a, b in scopes)
    assert sum(sizes) <= 4 * entries
    everything, all_fr = frustrated_cycles(graph, 10**6, max_total=10**9)
    np.testing.assert_array_equal(cycles, everything[:len(cycles)])
    if len(cycles) < len(everything):
        assert sum(sizes) + np.prod(k[[v for v in everything[len(cycles)] if v >= 0]]) \
            > 4 * entries
    many = grid_graph(rng.normal(size=(3, 3, 21)), rng.normal(size=(21, 21)))
    cycles, frustration = frustrated_cycles(many, 10**6)  # 21**3 > 4096: none fits
    assert cycles.shape == (0, 4) and frustration.shape == (0,)


def test_cycle_candidates_are_capped_by_their_entries():
    """Scoring a candidate reads its joint table: the search stops once the
    candidates' entries reach ``max_work`` (a 40-variable complete graph over
    6 states has 270,000 4-cycles of 1,296 entries)."""
    rng = np.random.default_rng(0)
    graph = complete_graph(rng.normal(size=(6, 3)), list(rng.normal(size=(15, 3, 3))))
    full, _ = frustrated_cycles(graph, 10**6, max_total=10**9)
    capped, _ = frustrated_cycles(graph, 10**6, max_total=10**9, max_work=27 * 3)
    assert 0 < capped.shape[0] <= 3 < full.shape[0]
    assert frustrated_cycles(graph, 10**6, max_work=0)[0].shape == (0, 4)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("kind", ["grid", "complete"])
def test_cluster_graph_keeps_every_score(seed, kind):
    graph = random_loopy(np.random.default_rng(100 + seed), kind)
    cycles, _ = frustrated_cycles(graph, 10**6)
    tight = cluster_graph(graph, cycles)
    labs = all_labelings(graph)
    np.testing.assert_allclose(tight.score_many(labs), graph.score_many(labs),
                               rtol=0, atol=1e-12)
    assert tight.n_factors <= graph.n_factors + len(cycles)
    assert cluster_graph(graph, np.zeros((0, 4), dtype=np.int64)) is graph


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("method", ["ad3", "gdmm"])
def test_tightened_bound_lies_between_optimum_and_plain_bound(seed, method):
    rng = np.random.default_rng(200 + seed)
    j = rng.uniform(-1, 1, size=(12, 1, 1))
    graph = grid_graph(rng.normal(scale=0.2, size=(3, 3, 2)), j * np.eye(2))
    best = graph.score_many(all_labelings(graph)).max()
    plain = solve_map(graph, method, max_iter=3000, tol=1e-9)
    tight = solve_map(graph, method, max_iter=3000, tol=1e-9, cycles=100)
    assert tight.n_clusters == len(frustrated_cycles(graph, 100)[0])
    assert tight.score == graph.score(tight.labels)
    assert tight.upper_bound >= best - 1e-7
    assert tight.upper_bound <= plain.upper_bound + 1e-6


def test_a_frustrated_triangle_is_certified_once_clustered():
    rep = np.array([0.0, 1.0, 1.0, 0.0])  # each edge wants its ends to differ
    graph = FactorGraph([2, 2, 2], unary=np.zeros((3, 2)) + [0.0, 1e-3],
                        scopes=[(0, 1), (1, 2), (0, 2)], tables=[rep, rep, rep])
    plain = solve_map(graph, "ad3", max_iter=300)
    assert plain.status != "gap" and plain.upper_bound > 2.5
    tight = solve_map(graph, "ad3", max_iter=300, cycles=1)
    assert tight.status == "gap" and tight.n_clusters == 1
    assert tight.score == pytest.approx(2.002) and tight.upper_bound == pytest.approx(2.002)


def test_cycles_parameter_is_checked():
    graph = grid_graph(np.zeros((2, 2, 2)), np.eye(2))
    for bad in (-1, 1.5, True, "3"):
        with pytest.raises(ValueError, match="cycles"):
            solve_map(graph, "ad3", cycles=bad)
    for method in ("brute_force", "gdmm_binary", "ilp"):
        with pytest.raises(TypeError, match="unexpected parameter"):
            solve_map(graph, method, cycles=3)
    assert solve_map(graph, "ad3", cycles=0, max_iter=5).n_clusters == 0
