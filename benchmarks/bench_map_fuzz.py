"""Fuzzed small factor graphs: the exact MAP and M-best back-ends against
enumeration.

Each case draws one graph of ``tests/_graphgen.py`` (chains, forests with
factors of order 3, forests with one more factor, dense and sparse weighted
constraint networks; integer costs with ties or real ones; 0-60 % forbidden
entries; some without any finite labeling), enumerates it, then checks:

* ``solve_map`` with ``auto``, ``exact``, ``ilp``, ``milp`` and
  ``brute_force`` (every other case under a time limit): a labeling in the
  domains scored as ``graph.score`` scores it, an upper bound at or above the
  optimum, the optimum where the status is ``"exact"``, status
  ``"infeasible"`` exactly when no labeling is finite;
* ``solve_mbest`` (``M`` of 1-5) with every back-end that takes the graph:
  the ``M`` best scores where the status is ``"exact"`` or ``"exhausted"``,
  distinct labelings scored right, rank bounds at or above the true ranks,
  ``"infeasible"`` only without a finite labeling.

A back-end that refuses the graph (``ValueError`` / ``TypeError``: the wrong
structure for it) is skipped; any other exception or a wrong answer is a
failure, counted and its first instances printed.

``--sparse``: instead, sparse graphs too large to enumerate, where
``exact`` first runs the soft arc search (Potts grids of 8-13 x 8-11 with
couplings in [-1, 1]; random graphs of 65-109 variables, a path plus each
pair with probability 1-5 %, N(0, 1) tables or rounded ones with ties and
3 % forbidden entries), 2-4 labels; ``exact`` and ``auto`` (without a limit,
0.5 s, 2 s in turn) against HiGHS' optimum (``ilp``, 60 s; the case is
skipped where HiGHS does not prove it), with the same checks.

Usage::

    .venv/bin/python benchmarks/bench_map_fuzz.py [--seconds 600] [--seed 0] [--sparse]
"""

import argparse
import collections
import os
import sys
import time

import numpy as np
from _fuzz import report_failures

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))

from _graphgen import (add_random_factor, all_labelings, random_chain,  # noqa: E402
                       random_forest, random_weighted_csp, sparse_weighted_csp)

MAP_METHODS = ("auto", "exact", "ilp", "milp", "brute_force")
MBEST_METHODS = ("auto", "brute_force", "nilsson", "steelars", "kbest_chain", "kbest_tree")
MAX_LABELINGS = 50_000


def draw_graph(case, seed):
    """The graph of ``case``: one of five families, in turn."""
    rng = np.random.default_rng([seed, case])
    p_inf = (0.0, 0.2, 0.5)[case % 3]
    integer = bool(case % 2)
    kind = case % 5
    if kind == 0:
        return random_chain(rng, int(rng.integers(1, 7)), 4, p_inf=p_inf, integer=integer)
    if kind == 1:
        return random_forest(rng, int(rng.integers(1, 7)), 3, p_inf=p_inf, integer=integer)
    if kind == 2:
        graph = random_forest(rng, int(rng.integers(3, 7)), 3, p_inf=p_inf, integer=integer)
        return add_random_factor(rng, graph, order=int(rng.integers(2, 4)))
    draw = random_weighted_csp if kind == 3 else sparse_weighted_csp
    return draw(seed * 10**6 + case, p_inf=(0.0, 0.3, 0.6)[case % 3], ties=integer)


def draw_sparse(case, seed):
    """A sparse graph of ``--sparse``: a Potts grid, a random graph with
    N(0, 1) tables, or one with rounded tables (ties) and 3 % forbidden
    entries, in turn."""
    from structlearn.graphs import graph_from_edges, grid_graph

    rng = np.random.default_rng([seed, case])
    k = int(rng.integers(2, 5))
    kind = case % 3
    if kind == 0:
        h, w = int(rng.integers(8, 14)), int(rng.integers(8, 12))
        m = (h - 1) * w + h * (w - 1)
        couplings = rng.uniform(-1.0, 1.0, size=(m, 1, 1)) * np.eye(k)
        return grid_graph(rng.normal(size=(h, w, k)), couplings)
    n = int(rng.integers(65, 110))
    p = float(rng.uniform(0.01, 0.05))
    pairs = {(a, a + 1) for a in range(n - 1)}
    pairs |= {(a, b) for a in range(n) for b in range(a + 2, n) if rng.random() < p}
    edges = np.array(sorted(pairs))
    tables, unary = rng.normal(size=(len(edges), k, k)), rng.normal(size=(n, k))
    if kind == 2:
        tables, unary = np.round(2.0 * tables), np.round(2.0 * unary)
        tables[rng.random(tables.shape) < 0.03] = -np.inf
    return graph_from_edges(unary, edges, tables)


def timed_cases(seconds, seed, draw):
    """``(case, graph)`` drawn by ``draw(case, seed)`` for ``seconds``."""
    t0 = time.perf_counter()
    case = 0
    while time.perf_counter() - t0 < seconds:
        case += 1
        yield case, draw(case, seed)


def check_map_methods(graph, methods, limit, best, case, counts, failures):
    """``solve_map`` with each of ``methods`` (keyword arguments ``limit``)
    checked against the optimum ``best``: a refusal (``ValueError`` /
    ``TypeError``) is counted, anything wrong appended to ``failures``."""
    from structlearn.inference import solve_map

    for method in methods:
        try:
            problem = map_problems(graph, solve_map(graph, method, **limit), best)
        except (ValueError, TypeError):
            counts[f"{method} refused"] += 1
            continue
        except Exception as exc:  # noqa: BLE001 - what the benchmark counts
            problem = repr(exc)[:150]
        if problem:
            failures.append((case, "solve_map", method, problem))


def sparse_cases(args, solve_map):
    """``--sparse``: ``exact`` and ``auto`` against HiGHS' optimum."""
    counts = collections.Counter()
    failures = []
    t0 = time.perf_counter()
    for case, graph in timed_cases(args.seconds, args.seed, draw_sparse):
        ref = solve_map(graph, "ilp", time_limit=60.0)
        if ref.status not in ("exact", "infeasible"):
            counts["not proved by HiGHS"] += 1
            continue
        counts["graphs"] += 1
        limit = {"time_limit": (None, 0.5, 2.0)[case % 3]}
        check_map_methods(graph, ("exact", "auto"), limit, ref.score, case, counts, failures)
    print(f"{counts['graphs']} sparse graphs in {time.perf_counter() - t0:.0f} s, seed "
          f"{args.seed} ({counts['not proved by HiGHS']} skipped: not proved by HiGHS; "
          f"refused: {dict((k, v) for k, v in counts.items() if k.endswith('refused'))})")
    return report_failures(failures)


def map_problems(graph, res, best):
    """What is wrong with MAP result ``res`` (optimum ``best``), or None."""
    tol = 1e-6 * max(1.0, abs(best)) if np.isfinite(best) else 0.0
    if best == -np.inf:
        ok = res.status == "infeasible" and res.score == -np.inf
        return None if ok else f"status {res.status}, score {res.score} without a finite labeling"
    if res.status == "infeasible":
        return f"infeasible, optimum {best}"
    if not np.all((res.labels >= 0) & (res.labels < graph.n_states)):
        return "labels outside the domains"
    if abs(graph.score(res.labels) - res.score) > tol:
        return f"score {res.score}, the labeling scores {graph.score(res.labels)}"
    if res.upper_bound < best - tol:
        return f"upper bound {res.upper_bound} below the optimum {best}"
    if res.status == "exact" and res.score < best - tol:
        return f"exact at {res.score}, optimum {best}"
    return None


def mbest_problems(graph, res, finite, m):
    """What is wrong with M-best result ``res`` (``finite``: the finite scores,
    best first), or None."""
    n = res.scores.shape[0]
    if res.status in ("exact", "exhausted"):
        want = finite[:m]
        if n != want.shape[0] or not np.allclose(res.scores, want, atol=1e-6, rtol=0):
            return f"{res.status} with scores {res.scores[:5]}, want {want[:5]}"
    if res.status == "infeasible" and finite.size:
        return "infeasible with a finite labeling"
    if n and len({tuple(row) for row in res.labels}) != n:
        return "repeated labelings"
    for t in range(n):
        if abs(graph.score(res.labels[t]) - res.scores[t]) > 1e-9 * max(1.0, abs(res.scores[t])):
            return f"rank {t} scored {res.scores[t]}, its labeling {graph.score(res.labels[t])}"
    for t in range(min(n, finite.size)):
        if res.upper_bounds[t] < finite[t] - 1e-6 * max(1.0, abs(finite[t])):
            return f"rank {t} bound {res.upper_bounds[t]} below its score {finite[t]}"
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=600.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sparse", action="store_true",
                    help="larger sparse graphs against HiGHS instead of enumeration")
    args = ap.parse_args()

    from structlearn.inference import solve_map
    from structlearn.inference.mbest import solve_mbest

    if args.sparse:
        return sparse_cases(args, solve_map)

    counts = collections.Counter()
    failures = []
    t0 = time.perf_counter()
    for case, graph in timed_cases(args.seconds, args.seed, draw_graph):
        labelings = all_labelings(graph)
        if labelings.shape[0] > MAX_LABELINGS:
            continue
        scores = graph.score_many(labelings)
        best = scores.max()
        counts["graphs"] += 1
        counts["without a finite labeling"] += best == -np.inf
        limit = {"time_limit": 5.0} if case % 2 else {}
        check_map_methods(graph, MAP_METHODS, limit, best, case, counts, failures)
        m = int(np.random.default_rng([args.seed, case, 1]).integers(1, 6))
        ranked = np.sort(scores)[::-1]
        finite = ranked[np.isfinite(ranked)]
        for method in MBEST_METHODS:
            try:
                problem = mbest_problems(graph, solve_mbest(graph, m, method), finite, m)
            except (ValueError, TypeError):
                counts[f"mbest {method} refused"] += 1
                continue
            except Exception as exc:  # noqa: BLE001
                problem = repr(exc)[:150]
            if problem:
                failures.append((case, "solve_mbest", method, problem))
    seconds = time.perf_counter() - t0
    print(f"{counts['graphs']} graphs ({counts['without a finite labeling']} without a finite "
          f"labeling) in {seconds:.0f} s, seed {args.seed}")
    print("refused (the wrong structure for the back-end):",
          {k: v for k, v in counts.items() if k.endswith("refused")})
    return report_failures(failures)


if __name__ == "__main__":
    sys.exit(main())
