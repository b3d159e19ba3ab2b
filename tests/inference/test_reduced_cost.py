"""Reduced-cost fixing in the exact search: the LP dual's bound per label
(``MapResult.label_bounds``), the restricted graph over the labels it leaves,
the conditioning on one-state variables, and the search of the restriction, against
enumeration."""

import time

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from structlearn.graphs import FactorGraph, grid_graph
from structlearn.inference import solve_map
from structlearn.inference.exact.reduced_cost import (drop_forbidden_labels,
                                                      forbid_by_label_bounds)

from _graphgen import all_labelings, random_scores


def random_pairwise(seed, *, p_inf=0.1, p_unary_inf=0.1, shared=False, k_max=3):
    """Random pairwise graph (cycles likely) with forbidden labels and pairs;
    ``shared``: the factors draw their tables from a pool of three."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 7))
    ks = rng.integers(1, k_max + 1, size=n)
    scopes = [(i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < 0.6]
    if not scopes:
        scopes = [(0, 1)]
    unary = [random_scores(rng, int(k), integer=False, scale=1.0, p_inf=p_unary_inf)
             for k in ks]
    if shared:
        ks[:] = ks[0]
        tables = [random_scores(rng, int(ks[0]) ** 2, integer=False, scale=2.0, p_inf=p_inf)
                  for _ in range(3)]
        unary = [random_scores(rng, int(ks[0]), integer=False, scale=1.0, p_inf=p_unary_inf)
                 for _ in ks]
        ids = rng.integers(0, 3, size=len(scopes))
        return FactorGraph(ks, unary=unary, scopes=scopes, tables=tables, table_ids=ids)
    tables = [random_scores(rng, int(ks[a] * ks[b]), integer=False, scale=2.0, p_inf=p_inf)
              for a, b in scopes]
    return FactorGraph(ks, unary=unary, scopes=scopes, tables=tables)


def best_per_label(graph):
    """The best score of a labeling taking each label (flat unary layout)."""
    labelings = all_labelings(graph)
    scores = graph.score_many(labelings)
    out = np.full(graph.unary.shape[0], -np.inf)
    for i in range(graph.n_vars):
        np.maximum.at(out, graph.unary_offsets[i] + labelings[:, i], scores)
    return out


def spin_glass(n, seed):
    rng = np.random.default_rng(seed)
    return grid_graph(0.1 * rng.normal(size=(n, n, 2)),
                      rng.normal(size=(2 * n * (n - 1), 1, 1)) * np.array([[1, -1], [-1, 1]]))


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**6), iters=st.integers(1, 40), cycles=st.sampled_from([0, 10]))
def test_label_bounds_bound_every_labeling_that_takes_the_label(seed, iters, cycles):
    """Whatever the dual (a few iterations or many, tightened or not), each
    label's bound is at least the best score of a labeling taking it."""
    graph = random_pairwise(seed)
    res = solve_map(graph, "ad3", max_iter=iters, polish=0.0, cycles=cycles)
    assume(res.label_bounds is not None)  # None: proved infeasible before any LP
    best = best_per_label(graph)
    finite = np.isfinite(best)
    assert np.all(res.label_bounds[finite] >= best[finite] - 1e-9 * np.maximum(
        1.0, np.abs(best[finite])))


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**6), shared=st.booleans())
def test_drop_forbidden_labels_scores_like_the_graph(seed, shared):
    graph = random_pairwise(seed, p_unary_inf=0.3, shared=shared)
    compact, original = drop_forbidden_labels(graph)
    allowed = np.isfinite(graph.unary)
    counts = np.add.reduceat(allowed.astype(int), graph.unary_offsets[:-1])
    if np.any(counts == 0):
        assert compact is None and original is None
        return
    assert np.array_equal(compact.n_states, counts)
    assert np.all(np.isfinite(compact.unary))
    assert np.array_equal(graph.unary[allowed], compact.unary)
    labelings = all_labelings(compact)
    images = original[compact.unary_offsets[:-1] + labelings]
    assert np.all(allowed[graph.unary_offsets[:-1] + images])
    np.testing.assert_allclose(compact.score_many(labelings), graph.score_many(images))
    # every finite labeling of the graph is the image of one compact labeling
    full = graph.score_many(all_labelings(graph))
    assert np.isfinite(full).sum() == np.isfinite(compact.score_many(labelings)).sum()


def test_forbid_by_label_bounds_keeps_what_may_beat_the_cutoff():
    graph = FactorGraph([2, 3], unary=[[0.0, -np.inf], [0.0, 0.0, 0.0]], scopes=[(0, 1)],
                        tables=[np.zeros((2, 3))])
    bounds = np.array([5.0, 9.0, 1.0, 4.0, 6.0])
    restricted = forbid_by_label_bounds(graph, bounds, 4.0, max_share=1.0)
    assert np.isfinite(restricted.unary).tolist() == [True, False, False, False, True]
    assert forbid_by_label_bounds(graph, bounds, 4.0, max_share=0.3) is None


def _count_restrictions(monkeypatch, share):
    """Restrict wherever the root leaves a gap and at most ``share`` of the
    labels is kept; returns the list the restricted graphs go to."""
    import structlearn.inference.exact.branch_and_bound as bb

    seen = []
    monkeypatch.setattr(bb, "REDUCED_MAX_SHARE", share)
    drop = bb.drop_forbidden_labels
    monkeypatch.setattr(bb, "drop_forbidden_labels", lambda g: seen.append(g) or drop(g))
    return seen


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), tighten=st.sampled_from([0, 20]),
       iters=st.integers(2, 30))
def test_the_restricted_search_finds_the_enumerated_optimum(seed, tighten, iters):
    """Every root that leaves a gap hands its restriction over (any share
    kept), from loose duals (few iterations) too: the enumerated optimum,
    certified."""
    import structlearn.inference.exact.branch_and_bound as bb

    old = bb.REDUCED_MAX_SHARE
    bb.REDUCED_MAX_SHARE = 1.0
    try:
        graph = random_pairwise(seed, k_max=4) if seed % 2 else spin_glass(4, seed)
        res = solve_map(graph, "exact", tighten=tighten, enumeration_limit=0,
                        depth_first=False, persistency=bool(seed % 3),
                        bound_params={"polish": 0.0, "local_search": False,
                                      "max_iter": iters})
    finally:
        bb.REDUCED_MAX_SHARE = old
    scores = graph.score_many(all_labelings(graph))
    best = scores.max()
    if best == -np.inf:
        assert res.status == "infeasible"
        return
    assert res.status == "exact"
    assert res.score == pytest.approx(best, abs=1e-9)
    assert res.score == graph.score(res.labels)
    assert best - 1e-9 <= res.upper_bound <= best + 1e-6 * max(1.0, abs(best))


def potts_grid(n, k, seed):
    rng = np.random.default_rng(seed)
    return grid_graph(rng.normal(size=(n, n, k)),
                      rng.uniform(-1.0, 1.0, size=(2 * n * (n - 1), 1, 1)) * np.eye(k))


# (grid side, labels, root iterations, seed): roots whose dual rules out some
# labels but leaves a gap
RESTRICTED_CASES = [(3, 3, 10, 1), (4, 3, 20, 1), (4, 3, 20, 2), (4, 3, 20, 4),
                    (4, 3, 50, 1), (4, 3, 50, 2)]


@pytest.mark.parametrize("n, k, iters, seed", RESTRICTED_CASES)
def test_potts_grids_are_proved_through_their_restriction(monkeypatch, n, k, iters, seed):
    """Short root solves (no tightening, no local search) leave a gap and
    rule out labels: the restriction is searched and proves the optimum
    (enumerated on 3 x 3, HiGHS' on 4 x 4)."""
    seen = _count_restrictions(monkeypatch, 1.0)
    graph = potts_grid(n, k, seed)
    res = solve_map(graph, "exact", tighten=0, enumeration_limit=0, persistency=False,
                    depth_first=False,
                    bound_params={"polish": 0.0, "local_search": False, "max_iter": iters})
    if n == 3:
        best = graph.score_many(all_labelings(graph)).max()
    else:
        best = solve_map(graph, "ilp").score
    assert seen
    assert res.status == "exact" and res.score == pytest.approx(best, abs=1e-9)
    assert res.score == graph.score(res.labels)
    assert best - 1e-9 <= res.upper_bound <= best + 1e-6 * max(1.0, abs(best))


def test_no_restriction_above_the_share(monkeypatch):
    seen = _count_restrictions(monkeypatch, 0.0)
    graph = potts_grid(4, 3, 1)
    res = solve_map(graph, "exact", tighten=0, enumeration_limit=0, persistency=False,
                    depth_first=False,
                    bound_params={"polish": 0.0, "local_search": False, "max_iter": 20})
    assert not seen and res.status == "exact" and res.n_iter > 1


@pytest.mark.parametrize("n, k, seed", [(10, 4, 1), (12, 5, 3)])
def test_potts_grids_are_restricted_by_default_and_certified_like_the_ilp(monkeypatch, n, k,
                                                                        seed):
    """Frustrated Potts grids under the default rule: the root (tightened,
    converged) leaves a gap, its dual keeps at most half of the labels, and
    the restriction proves HiGHS' optimum (on the LP route: the soft arc
    search that sparse components get first proves these small grids before
    any root)."""
    seen = _count_restrictions(monkeypatch, 0.5)
    graph = potts_grid(n, k, seed)
    res = solve_map(graph, "exact", bound_params={"polish": 0.0}, depth_first=False)
    ilp = solve_map(graph, "ilp")
    assert len(seen) == 1
    assert np.isfinite(seen[0].unary).sum() <= 0.5 * graph.unary.shape[0]
    assert ilp.status == "exact" and res.status == "exact"
    assert res.score == pytest.approx(ilp.score, abs=1e-7)
    assert res.upper_bound <= res.score + 1e-6 * max(1.0, abs(res.score))


def test_the_restricted_search_keeps_the_time_limit(monkeypatch):
    """Under a time limit the restriction gets what is left and the result
    stays certified: its bound is at least HiGHS' optimum."""
    _count_restrictions(monkeypatch, 1.0)  # restrict wherever the dual rules out a label
    rng = np.random.default_rng(2)
    graph = grid_graph(rng.normal(size=(14, 14, 5)),
                       rng.uniform(-1.0, 1.0, size=(364, 1, 1)) * np.eye(5))
    solve_map(graph, "exact", time_limit=0.3)  # kernels loaded before timing
    t0 = time.perf_counter()
    res = solve_map(graph, "exact", time_limit=1.0)
    wall = time.perf_counter() - t0
    ilp = solve_map(graph, "ilp")
    assert wall <= 3.0 * (1.0 + 0.75)  # 3x: busy shared machines
    assert res.upper_bound >= ilp.score - 1e-7
    assert res.score <= ilp.score + 1e-7
    assert res.status in ("exact", "time_limit")


def test_root_only_components_are_not_restricted(monkeypatch):
    """``max_search_vars`` leaves a larger component its root solve only:
    no restriction is searched after it."""
    seen = _count_restrictions(monkeypatch, 1.0)
    graph = potts_grid(4, 3, 1)
    kw = dict(tighten=0, enumeration_limit=0, persistency=False, depth_first=False,
              bound_params={"polish": 0.0, "local_search": False, "max_iter": 20})
    capped = solve_map(graph, "exact", max_search_vars=15, **kw)
    assert not seen
    assert capped.status == "node_limit" and capped.n_iter == 1
    full = solve_map(graph, "exact", max_search_vars=16, **kw)
    assert seen and full.status == "exact"
    assert capped.score <= full.score + 1e-9 <= capped.upper_bound + 2e-9


@pytest.mark.parametrize("n, k, iters, seed", [(3, 3, 10, 6), (4, 3, 20, 1), (4, 3, 20, 2),
                                               (4, 3, 20, 4)])
def test_nodes_forbid_the_labels_their_dual_rules_out(monkeypatch, n, k, iters, seed):
    """Without the restriction, every node forbids in its subspace the labels
    its own dual rules out; a node left with one labeling offers that one
    (not the decoded one): the enumerated (or HiGHS') optimum, certified."""
    import structlearn.inference.exact.branch_and_bound as bb

    calls = {"prune": 0, "leaf": 0}
    prune, leaf = bb._Search._prune, bb._Search._leaf

    def counted_prune(self, node, unary, bounds):
        out = prune(self, node, unary, bounds)
        calls["prune"] += out[1]
        return out

    def counted_leaf(self, unary):
        calls["leaf"] += 1
        return leaf(self, unary)

    monkeypatch.setattr(bb._Search, "_prune", counted_prune)
    monkeypatch.setattr(bb._Search, "_leaf", counted_leaf)
    seen = _count_restrictions(monkeypatch, 0.0)
    graph = potts_grid(n, k, seed)
    res = solve_map(graph, "exact", tighten=0, enumeration_limit=0, persistency=False,
                    depth_first=False,
                    bound_params={"polish": 0.0, "local_search": False, "max_iter": iters})
    best = (graph.score_many(all_labelings(graph)).max() if n == 3
            else solve_map(graph, "ilp").score)
    assert not seen and calls["prune"] >= 1
    if (n, seed) in ((3, 6), (4, 4)):
        assert calls["leaf"] == 1
    assert res.status == "exact" and res.score == pytest.approx(best, abs=1e-9)
    assert res.score == graph.score(res.labels)
    assert best - 1e-9 <= res.upper_bound <= best + 1e-6 * max(1.0, abs(best))
