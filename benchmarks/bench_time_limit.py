"""Does ``python -m structlearn map --time-limit S`` hold its budget?

Runs the real command line, one subprocess per run, on frustrated Potts grids
(40 x 40 by default, random unaries, couplings uniform in [-1, 1]) with every
loopy back-end of the registry, and reports per run the process wall time
(interpreter start and exit included), the command's own ``wall_time``, the
``compile_time`` it reports, status, iterations, score and certified gap.

Sections:

``limit``
    ``--time-limit`` for each value of ``--limits`` (warm numba cache): the
    target is a process wall time <= limit + 1 s.
``cap``
    The same instance without a limit (iterative back-ends stop at the
    default ``max_iter`` = 1000, the behaviour before time limits lifted
    the cap) against ``--time-limit`` 20: the score reached under the limit
    should be at least the capped run's.
``cold``
    ``--time-limit 3`` with ``NUMBA_CACHE_DIR`` pointing at an empty folder:
    how much of the budget compilation takes (reported as compile_time).

``api``
    In a fresh process: ``solve_map(graph, method, time_limit=S)`` for each
    limit, the wall time of the call against ``S`` (target: <= S + 0.3 s),
    then the first call's overhead (registry and kernel loading, not counted
    by ``compile_time``) on that graph: wall of the first call minus its
    ``compile_time`` minus the wall of a second, identical call.

``--uai FILE`` runs the sections on that network instead of the grids (for
example the shared ``Grids_18.uai``, with ``--methods auto,gdmm,ad3,trn``).

Usage::

    .venv/bin/python benchmarks/bench_time_limit.py                 # ~15 minutes
    .venv/bin/python benchmarks/bench_time_limit.py --sections limit --limits 5 \\
        --methods gdmm,trn --ks 2,4
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

LOOPY = ["gdmm", "gdmm_binary", "psdd", "fista", "scm", "ad3", "trn"]


def potts_grid_file(folder, n, k, seed=0):
    from structlearn.graphs import grid_graph, write_uai

    rng = np.random.default_rng(seed)
    couplings = rng.uniform(-1.0, 1.0, size=2 * n * (n - 1))
    graph = grid_graph(rng.normal(size=(n, n, k)), couplings[:, None, None] * np.eye(k))
    path = os.path.join(folder, f"potts{n}_k{k}.uai")
    write_uai(graph, path)
    return path


def run_cli(path, method, time_limit=None, env=None):
    argv = [sys.executable, "-m", "structlearn", "map", path, "--method", method, "--no-write"]
    if time_limit is not None:
        argv += ["--time-limit", str(time_limit)]
    t0 = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=1800)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1], "process_wall": wall}
    record = json.loads(proc.stdout)
    record["process_wall"] = wall
    return record


def row(label, rec):
    if "error" in rec:
        return f"| {label} | error: {rec['error']} |"
    gap = rec["gap"]
    return (f"| {label} | {rec['process_wall']:.2f} | {rec['wall_time']:.2f} | "
            f"{rec['compile_time']:.2f} | {rec['status']} | {rec['n_iter']} | "
            f"{rec['score']:.4f} | {'-' if gap is None else f'{gap:.4f}'} |")


HEADER = ("| run | process wall s | command wall s | compile s | status | iterations | "
          "score | gap |\n|---|---|---|---|---|---|---|---|")


API_SCRIPT = """
import json, sys, time
from structlearn.graphs import read_uai
from structlearn.inference import solve_map
path, method, limits = sys.argv[1], sys.argv[2], [float(x) for x in sys.argv[3].split(",")]
g = read_uai(path)
t = time.perf_counter(); r = solve_map(g, method, time_limit=limits[0]); first = time.perf_counter() - t
out = [dict(limit=limits[0], wall=first, compile=r.compile_time, status=r.status)]
for limit in limits:
    t = time.perf_counter(); r = solve_map(g, method, time_limit=limit)
    out.append(dict(limit=limit, wall=time.perf_counter() - t, compile=r.compile_time,
                    status=r.status))
print(json.dumps(out))
"""


def api_rows(path, method, limits):
    proc = subprocess.run([sys.executable, "-c", API_SCRIPT, path, method, limits],
                          capture_output=True, text=True, timeout=1800)
    if proc.returncode:
        return [f"| {method} | error: {proc.stderr.strip().splitlines()[-1]} |"]
    first, *runs = json.loads(proc.stdout)
    rows = [f"| {method} | {r['limit']:g} | {r['wall']:.3f} | {r['wall'] - r['limit']:+.3f} | "
            f"{r['status']} |" for r in runs]
    overhead = first["wall"] - first["compile"] - runs[0]["wall"]
    rows.append(f"| {method} | first call | {first['wall']:.3f} | overhead {overhead:+.3f} "
                f"(compile {first['compile']:.3f}) | {first['status']} |")
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sections", default="limit,cap,cold")
    ap.add_argument("--methods", default=",".join(LOOPY))
    ap.add_argument("--size", type=int, default=40)
    ap.add_argument("--ks", default="2")
    ap.add_argument("--limits", default="5")
    ap.add_argument("--uai", default=None, help="a UAI file instead of the generated grids")
    args = ap.parse_args(argv)
    sections = args.sections.split(",")
    methods = args.methods.split(",")
    ks = [int(k) for k in args.ks.split(",")]
    folder = tempfile.mkdtemp(prefix="bench_time_limit_")
    instances = ([(os.path.basename(args.uai), args.uai)] if args.uai else
                 [(f"{args.size} x {args.size} Potts grid, K = {k}",
                   potts_grid_file(folder, args.size, k)) for k in ks])
    for title, path in instances:
        binary = args.uai is not None or title.endswith("K = 2")
        usable = [m for m in methods if m != "gdmm_binary" or binary]
        # warm the numba cache of every back-end
        for m in usable:
            run_cli(path, m, time_limit=0.5)
        print(f"\n### {title}\n")
        if "limit" in sections:
            for limit in [float(x) for x in args.limits.split(",")]:
                print(f"--time-limit {limit:g} (warm cache; target: process wall <= "
                      f"{limit + 1:g} s)\n\n{HEADER}")
                for m in usable:
                    print(row(m, run_cli(path, m, time_limit=limit)), flush=True)
                print()
        if "api" in sections:
            print("solve_map in one process (warm cache; target: wall <= limit + 0.3 s)\n\n"
                  "| method | limit s | wall s | wall - limit | status |\n|---|---|---|---|---|")
            for m in usable:
                print("\n".join(api_rows(path, m, args.limits)), flush=True)
            print()
        if "cap" in sections:
            print(f"no limit (default max_iter = 1000) vs --time-limit 20\n\n{HEADER}")
            for m in usable:
                capped = run_cli(path, m)
                limited = run_cli(path, m, time_limit=20)
                print(row(f"{m}, no limit", capped))
                print(row(f"{m}, 20 s", limited))
                if "error" not in capped and "error" not in limited:
                    print(f"| {m}: score(20 s) - score(no limit) | "
                          f"{limited['score'] - capped['score']:+.4f} |||||||", flush=True)
            print()
        if "cold" in sections:
            print(f"--time-limit 3, empty NUMBA_CACHE_DIR (cold first run)\n\n{HEADER}")
            for m in usable:
                with tempfile.TemporaryDirectory() as cache:
                    env = dict(os.environ, NUMBA_CACHE_DIR=cache)
                    print(row(m, run_cli(path, m, time_limit=3, env=env)), flush=True)
            print()


if __name__ == "__main__":
    main()
