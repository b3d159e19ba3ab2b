"""Loopy MAP back-ends side by side on the shared UAI files and synthetic instances.

Every (method, instance) pair runs in its own subprocess (so peak memory is
that run's own): the worker loads the instance, compiles the method on a tiny
graph, resets the resident-set high-water mark, then solves with a time
limit.  Reported per pair: the best score, the certified upper bound, the
final relative gap, iterations, the time at which the run first reached the
best-known score of the instance (the best of the reference ``.MAP`` labeling
and of every run here; ``-`` = never), and the peak resident memory growth
during the solve.  A summary prints GDMM's time and memory ratios against
``ad3`` and ``scm``.

Usage::

    .venv/bin/python benchmarks/bench_map.py                  # ~6 minutes
    .venv/bin/python benchmarks/bench_map.py --time-limit 60 --instances all
    .venv/bin/python benchmarks/bench_map.py --instances matching_k1000,Grids_18 \\
        --methods gdmm,ad3
"""

import argparse
import glob
import json
import os
import re
import subprocess
import sys
import time

import numpy as np

from _memory import peak_kb, reset_peak, rss_kb

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
UAI_DIR = os.path.join(ROOT, "..", "shared", "data", "uai")
METHODS = ["gdmm", "gdmm_binary", "ad3", "psdd", "fista", "scm", "trn", "trn_lbfgs"]
# variants of a registered method: name -> (method, parameters)
VARIANTS = {"trn_lbfgs": ("trn", {"hessian": "lbfgs"}), "gdmm_1pass": ("gdmm", {"n_pass": 1}),
            "ad3_cycles": ("ad3", {"cycles": 1000}), "gdmm_cycles": ("gdmm", {"cycles": 1000}),
            "exact_no_persistency": ("exact", {"persistency": False}),
            "exact_2threads": ("exact", {"n_jobs": 2})}
SYNTHETIC = ["potts_grid_k21", "complete_k400", "matching_k1000"]
# frustrated Potts grids (couplings uniform in [-1, 1]) and random sparse
# large-domain graphs; not in the default "all" run (see --instances)
POTTS = [f"potts{n}_k{k}" for n in (20, 50) for k in (2, 4, 8)]


def _is_potts(name):
    """Any ``potts{n}_k{k}``: an n x n frustrated grid with k labels, or
    ``apotts{n}_k{k}``: an attractive one (couplings uniform in [0, 1])."""
    return re.fullmatch(r"a?potts\d+_k\d+", name) is not None
SPARSE = ["sparse_k100", "sparse_k300"]
# small complete graphs with their own N(0, 1) tables: loose relaxations,
# few labelings (dense like ProteinFolding, small like a CSP); any
# complete{n}_k{k} is generated (these are the listed defaults)
DENSE = ["complete10_k4", "complete12_k5", "complete30_k4"]


def _is_dense(name):
    """Any ``complete{n}_k{k}``: n variables, k labels, every pair an edge;
    or ``random{n}_p{P}_k{k}_s{seed}``: each pair an edge with probability
    P %, N(0, 1) tables of their own."""
    return re.fullmatch(r"complete\d+_k\d+|random\d+_p\d+_k\d+_s\d+", name) is not None
# random weighted constraint networks: wcsp{n}_d{D}_f{F}_s{seed}, n variables
# with 2..D labels, 3n random pairs, integer costs 0..9 (scores -cost) and F %
# of each pair table forbidden (zero potentials), around a planted labeling
# that stays allowed (so a finite optimum exists); e.g. wcsp40_d10_f50_s0
WCSP_PREFIX = "wcsp"


def _is_wcsp(name):
    return name.startswith(WCSP_PREFIX) and "_d" in name and "_f" in name


def _wcsp(name):

    n, rest = name[len(WCSP_PREFIX):].split("_d")
    D, rest = rest.split("_f")
    F, seed = rest.split("_s")
    n, D, F, seed = int(n), int(D), float(F) / 100.0, int(seed)
    rng = np.random.default_rng(1000 + seed)
    ks = rng.integers(2, D + 1, size=n)
    planted = np.array([rng.integers(0, k) for k in ks])
    pairs = np.array([(a, b) for a in range(n) for b in range(a + 1, n)])
    edges = pairs[np.sort(rng.choice(len(pairs), size=min(3 * n, len(pairs)), replace=False))]
    K = int(ks.max())
    unary = np.full((n, K), -np.inf)
    for i, k in enumerate(ks):
        unary[i, :k] = -rng.integers(0, 10, size=k).astype(float)
    tables = []
    for a, b in edges:
        t = -rng.integers(0, 10, size=(K, K)).astype(float)
        t[rng.random((K, K)) < F] = -np.inf
        t[planted[a], planted[b]] = -float(rng.integers(0, 10))
        tables.append(t[:ks[a], :ks[b]])
    from structlearn.graphs import FactorGraph

    return FactorGraph(ks, unary=[unary[i, :k] for i, k in enumerate(ks)], scopes=edges,
                       tables=tables)


# ------------------------------------------------------------------ instances
def synthetic(name):
    from structlearn.graphs import FactorGraph, graph_from_edges, grid_graph

    rng = np.random.default_rng(0)
    if name == "potts_grid_k21":
        # 20 x 20 grid, 21 labels, Potts smoothing (like Segmentation)
        unary = rng.normal(size=(20, 20, 21))
        return grid_graph(unary, 1.5 * np.eye(21)), None
    if name == "complete_k400":
        # 40 variables, K = 400, every pair connected (like ProteinFolding);
        # 12 distinct random tables shared round-robin keep the file small
        n, k = 40, 400
        u, v = np.triu_indices(n, 1)
        ids = np.arange(u.shape[0]) % 12
        g = FactorGraph(np.full(n, k), unary=rng.normal(size=(n, k)),
                        scopes=np.stack([u, v], axis=1),
                        tables=list(rng.normal(size=(12, k, k))), table_ids=ids)
        return g, None
    if name == "matching_k1000":
        # 100 subgraph nodes matched to 1000 target nodes; one shared table
        # 1 / (1 + distance) between target positions, like graph matching
        n, k, n_edges = 100, 1000, 300
        pos = rng.normal(size=(k, 2))
        dist = np.sqrt(((pos[:, None, :] - pos[None, :, :]) ** 2).sum(-1))
        table = 3.0 / (1.0 + 4.0 * dist)
        edges = set()
        while len(edges) < n_edges:
            a, b = sorted(rng.choice(n, size=2, replace=False).tolist())
            edges.add((a, b))
        unary = rng.normal(size=(n, k))
        return graph_from_edges(unary, np.array(sorted(edges)), table), None
    if _is_potts(name):
        n, k = (int(t) for t in name[name.index("potts") + len("potts"):].split("_k"))
        low = 0.0 if name.startswith("a") else -1.0
        couplings = rng.uniform(low, 1.0, size=2 * n * (n - 1))
        return grid_graph(rng.normal(size=(n, n, k)), couplings[:, None, None] * np.eye(k)), None
    if name in SPARSE:
        # 30 variables, 60 random edges with their own N(0, 1) tables
        n, k, n_edges = 30, int(name[len("sparse_k"):]), 60
        pairs = np.array([(a, b) for a in range(n) for b in range(a + 1, n)])
        edges = pairs[np.sort(rng.choice(len(pairs), size=n_edges, replace=False))]
        return graph_from_edges(rng.normal(size=(n, k)), edges,
                                rng.normal(size=(n_edges, k, k))), None
    if _is_wcsp(name):
        return _wcsp(name), None
    if name.startswith("random") and _is_dense(name):
        n, p, k, seed = (int(t) for t in re.findall(r"\d+", name))
        rng = np.random.default_rng(seed)
        edges = np.array([(a, b) for a in range(n) for b in range(a + 1, n)
                          if rng.random() < p / 100])
        return graph_from_edges(rng.normal(size=(n, k)), edges,
                                rng.normal(size=(len(edges), k, k))), None
    if _is_dense(name):
        n, k = (int(t) for t in name[len("complete"):].split("_k"))
        from structlearn.graphs import complete_graph

        return complete_graph(rng.normal(size=(n, k)),
                              list(rng.normal(size=(n * (n - 1) // 2, k, k)))), None
    raise ValueError(f"unknown synthetic instance {name!r}")


def load(name):
    from structlearn.graphs import read_uai, read_uai_solution

    if name in SYNTHETIC + SPARSE or _is_dense(name) or _is_potts(name) or _is_wcsp(name):
        return synthetic(name)
    path = os.path.join(UAI_DIR, name + ".uai")
    g = read_uai(path)
    ref = None
    if os.path.exists(path + ".MAP"):
        ref = float(g.score(read_uai_solution(path + ".MAP")))
    return g, ref


# ---------------------------------------------------------------------- worker
def toulbar2_worker(name, time_limit):
    """toulbar2 (pytoulbar2, its own UAI reader, default options) on the same
    instance; its labeling is rescored on structlearn's graph.  It proves
    optimality when its dual bound meets its cost."""
    import tempfile

    import pytoulbar2

    from structlearn.graphs import write_uai

    g, ref = load(name)
    path = os.path.join(UAI_DIR, name + ".uai")
    tmp = None
    if name in SYNTHETIC + SPARSE or _is_dense(name) or _is_potts(name) or _is_wcsp(name):
        tmp = tempfile.NamedTemporaryFile(suffix=".uai", delete=False)
        tmp.close()
        write_uai(g, tmp.name)
        path = tmp.name
    base = rss_kb()
    t0 = time.perf_counter()
    cfn = pytoulbar2.CFN(verbose=-1)
    cfn.Read(path)
    out = cfn.Solve(timeLimit=max(1, int(round(time_limit))))
    wall = time.perf_counter() - t0
    peak = peak_kb()
    if tmp is not None:
        os.unlink(tmp.name)
    if out is None:
        print(json.dumps({"score": -np.inf, "upper_bound": None, "gap": None, "n_iter": 0,
                          "status": "no solution", "time": wall, "traj": [],
                          "mem_mb": max(0, peak - base) / 1024.0, "ref": ref}))
        return
    score = float(g.score(np.asarray(out[0], dtype=np.int64)))
    optimal = cfn.GetDDualBound() >= out[1] - 1e-9 * max(1.0, abs(out[1]))
    print(json.dumps({
        "score": score, "upper_bound": score if optimal else None, "gap": 0.0 if optimal else None,
        "n_iter": int(cfn.GetNbNodes()), "status": "optimal" if optimal else "time_limit",
        "time": wall, "traj": [(wall, score)], "mem_mb": max(0, peak - base) / 1024.0,
        "ref": ref,
    }))


def worker(method, name, time_limit):
    from structlearn.graphs import FactorGraph
    from structlearn.inference import method_parameters, solve_map

    if method == "toulbar2":
        toulbar2_worker(name, time_limit)
        return
    g, ref = load(name)
    method, params = VARIANTS.get(method, (method, {}))
    if method == "gdmm_binary" and (np.any(g.n_states != 2) or np.any(g.factor_orders != 2)):
        print(json.dumps({"skip": "needs binary pairwise"}))
        return
    tiny = FactorGraph([2, 2, 2], scopes=[(0, 1), (1, 2), (0, 2)],
                       tables=[np.eye(2), np.eye(2), np.eye(2)])
    # iterative methods run to the time limit, not to their default iteration cap
    takes_iter = method != "auto" and "max_iter" in method_parameters(method)
    iter_cap = {"max_iter": 10**9} if takes_iter else {}
    solve_map(tiny, method, **({"max_iter": 3} if takes_iter else {}), **params)
    if method in ("exact", "auto"):
        # load the search's kernels too (the tiny graph is only enumerated)
        from structlearn.graphs import graph_from_edges, grid_graph

        warm = grid_graph(np.random.default_rng(1).normal(size=(3, 3, 2)),
                          np.random.default_rng(2).uniform(-1, 1, size=(12, 1, 1)) * np.eye(2))
        # each stage of the search: roof duality, depth-first search, LP nodes
        for stage in ({}, {"persistency": False},
                      {"persistency": False, "depth_first": False}):
            solve_map(warm, "exact", enumeration_limit=0, max_nodes=3, **stage)
        # and the soft arc consistent search (components with forbidden pairs)
        solve_map(_wcsp("wcsp6_d3_f40_s0"), "exact", enumeration_limit=0, max_nodes=3)
        # with its local searches (first run at the search's 1,000th node)
        from structlearn.inference.exact.soft_arc_polish import PolishedSoftArcSearch

        polished = PolishedSoftArcSearch(_wcsp("wcsp6_d3_f40_s0"))
        polished.run(max_nodes=3)
        polished._polisher.tabu_slice(polished, None, steps=10)
        polished._polisher.polish(polished, None)
        # and the cost of an offered labeling (a small component's search
        # starts from one: 4-5 ms of a first 7 x 7 grid's solve)
        polished.offer(polished.labels)
        # and the open nodes' masks of a path kept on the trail (the larger
        # sparse components'), and the LP root's perturbed labelings
        import structlearn.inference.exact.soft_arc as soft_arc
        from structlearn.inference.lp._lp_common import Problem

        snapshots = soft_arc.SNAPSHOT_MAX_BYTES
        soft_arc.SNAPSHOT_MAX_BYTES = 0
        try:
            trailed = PolishedSoftArcSearch(_wcsp("wcsp6_d3_f40_s0"))
            trailed.run(max_nodes=3)
            trailed._open_levels(0, 0, np.inf)
        finally:
            soft_arc.SNAPSHOT_MAX_BYTES = snapshots
        Problem(warm).perturbed(np.zeros(warm.n_vars, dtype=np.int64),
                                np.random.default_rng(0))
        # and the LP root of large domains (GDMM and its sorted tables: 0.45 s
        # of a first sparse_k300 solve), on a cycle of 100 labels
        draw = np.random.default_rng(4)
        big = graph_from_edges(draw.normal(size=(4, 100)),
                               np.array([[0, 1], [1, 2], [2, 3], [3, 0]]),
                               draw.normal(size=(4, 100, 100)))
        solve_map(big, "exact", time_limit=2)
        # and, under a deadline, what a longer search loads at its first open
        # nodes and offered labelings (path_masks, labeling_cost: 8-9 ms)
        solve_map(_wcsp("wcsp45_d15_f30_s0"), "exact", time_limit=5)
        # and an attractive multi-label grid (Kovtun's persistency) large enough
        # for the search to keep its path on the trail: their first loads took
        # 70 ms of a first 19 x 19 grid's solve
        rng = np.random.default_rng(3)
        solve_map(grid_graph(rng.normal(size=(26, 26, 4)),
                             rng.uniform(0, 1, size=(1300, 1, 1)) * np.eye(4)),
                  "exact", time_limit=5)
        # and a forest component (tree_map's kernels: 8 ms of apotts21_k4's
        # first solve, whose persistency pass leaves a tree)
        chain = graph_from_edges(rng.normal(size=(6, 3)), np.array([[i, i + 1] for i in range(5)]),
                                 rng.normal(size=(5, 3, 3)))
        solve_map(chain, "exact", enumeration_limit=0)
    reset_peak()
    base = rss_kb()
    t0 = time.perf_counter()
    r = solve_map(g, method, time_limit=time_limit, **iter_cap, **params)
    wall = time.perf_counter() - t0
    peak = peak_kb()
    traj = [] if r.history else [(wall, r.score)]
    last = -np.inf
    for h in r.history:
        if h["score"] > last:
            last = h["score"]
            traj.append((h["time"], h["score"]))
    print(json.dumps({
        "score": r.score, "upper_bound": r.upper_bound, "gap": r.relative_gap(),
        "n_iter": r.n_iter, "status": r.status, "time": wall, "traj": traj,
        "mem_mb": max(0, peak - base) / 1024.0, "ref": ref,
    }))


# ---------------------------------------------------------------------- driver
def run_pair(method, name, time_limit):
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", method, name,
           str(time_limit)]
    # a guard against hangs only: a fresh checkout's first worker also
    # compiles every kernel its warm-up loads (minutes, out of the timed call)
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT,
                         timeout=time_limit * 4 + 900)
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    if out.returncode != 0 or not lines:
        return {"error": (out.stderr.strip().splitlines() or ["?"])[-1][:80]}
    return json.loads(lines[-1])


def fmt(x, nd=2):
    if x is None:
        return "-"
    if isinstance(x, float) and not np.isfinite(x):
        return str(x)
    return f"{x:.{nd}f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-limit", type=float, default=3.0, help="seconds per run")
    ap.add_argument("--instances", default="all",
                    help="comma-separated names (UAI stems or "
                    + ", ".join(SYNTHETIC + POTTS + SPARSE + DENSE) + ")")
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.worker[0], args.worker[1], float(args.worker[2]))
        return
    if args.instances == "all":
        names = sorted(os.path.basename(p)[:-4] for p in glob.glob(os.path.join(UAI_DIR, "*.uai")))
        names += SYNTHETIC
    else:
        names = args.instances.split(",")
    methods = args.methods.split(",")
    print(f"time limit {args.time_limit:g} s per run; peak memory = growth of the resident "
          "set during the solve")
    summary = {}
    for name in names:
        res = {m: run_pair(m, name, args.time_limit) for m in methods}
        ok = {m: r for m, r in res.items() if "score" in r}
        refs = [r["ref"] for r in ok.values() if r.get("ref") is not None]
        best = max([r["score"] for r in ok.values()] + refs) if ok else None
        print(f"\n## {name}   best known {fmt(best, 4)}"
              + (f"   (reference .MAP {fmt(refs[0], 4)})" if refs else ""))
        print(f"{'method':<12}{'score':>14}{'bound':>14}{'rel.gap':>10}{'iters':>8}"
              f"{'t_best(s)':>11}{'mem(MB)':>9}  status")
        for m in methods:
            r = res[m]
            if "score" not in r:
                print(f"{m:<12}  {r.get('skip') or r.get('error')}")
                continue
            tb = next((t for t, s in r["traj"] if best is not None
                       and s >= best - 1e-6 * max(1.0, abs(best))), None)
            r["t_best"] = tb
            print(f"{m:<12}{fmt(r['score'], 4):>14}{fmt(r['upper_bound'], 4):>14}"
                  f"{fmt(r['gap'], 4):>10}{r['n_iter']:>8}{fmt(tb, 3):>11}"
                  f"{fmt(r['mem_mb'], 1):>9}  {r['status']}  (wall {fmt(r['time'], 2)} s)")
        summary[name] = res
    if "toulbar2" in methods:
        print("\n## Against toulbar2 (same time limit)")
        for name, res in summary.items():
            tb = res.get("toulbar2", {})
            if "score" not in tb:
                continue
            parts = []
            for m in methods:
                r = res[m]
                if m == "toulbar2" or "score" not in r:
                    continue
                certified = r["status"] in ("exact", "gap")
                if tb["status"] == "optimal" and certified:
                    parts.append(f"{m}: optimum certified in {r['time'] / max(tb['time'], 1e-3):.2f}x "
                                 "toulbar2's time")
                else:
                    parts.append(f"{m}: score {r['score'] - tb['score']:+.4f} vs toulbar2, "
                                 f"certified gap {fmt(r['upper_bound'] - r['score'], 4)}")
            print(f"{name:<22}toulbar2 {tb['status']} in {tb['time']:.2f} s; " + "; ".join(parts))
    print("\n## GDMM against ad3 and scm (time to best known; peak memory)")
    for name, res in summary.items():
        g = res.get("gdmm", {})
        if "score" not in g:
            continue
        parts = []
        for other in ("ad3", "scm"):
            o = res.get(other, {})
            if "score" not in o:
                continue
            tg, to = g.get("t_best"), o.get("t_best")
            if tg is not None and to is not None:
                tr = f"{to / max(tg, 1e-6):.1f}x faster"
            elif tg is not None:
                tr = f"{other} never reached it"
            else:
                tr = "gdmm did not reach it"
            mr = f"{o['mem_mb'] / max(g['mem_mb'], 0.1):.1f}x"
            parts.append(f"vs {other}: {tr}, memory ratio {mr}")
        print(f"{name:<22}" + "; ".join(parts))


if __name__ == "__main__":
    main()
