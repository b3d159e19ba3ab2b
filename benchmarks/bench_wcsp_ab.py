"""Compare two versions of ``solve_map(method="exact")`` on whole families of
generated weighted constraint networks (``bench_map``'s
``wcsp{n}_d{D}_f{F}_s{seed}``), without a peer: each version's times are
written to a JSON file, then the two files are compared.

Run one version (the checkout on ``PYTHONPATH``), then the other, then compare::

    PYTHONPATH=/path/to/checkout-a .venv/bin/python benchmarks/bench_wcsp_ab.py \\
        --seeds 60-64 --n-jobs 2 --out a.json
    PYTHONPATH=/path/to/checkout-b .venv/bin/python benchmarks/bench_wcsp_ab.py \\
        --seeds 60-64 --n-jobs 2 --out b.json
    .venv/bin/python benchmarks/bench_wcsp_ab.py --compare a.json b.json

All networks run in one process after a warm-up (a few seconds per version
instead of a process per network as in ``bench_wcsp_families.py``), so a
version's kernels are compiled or loaded before the clock starts.  The
comparison prints, over the networks both versions prove, the geometric mean
of b's time over a's, on how many b is faster, the summed times, and any
network whose two optima differ.  Pick seeds no tuning has looked at.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_map import _wcsp, load  # noqa: E402
from bench_wcsp_families import FAMILIES, seed_range  # noqa: E402


def run(families, seeds, n_jobs, time_limit, out):
    from structlearn.inference import solve_map

    names = [f"wcsp{n}_d{d}_f{f}_s{s}" for n, d, f in
             (fam.split(":") for fam in families.split(",")) for s in seed_range(seeds)]
    # the search's kernels, its threads and its local searches, before the clock
    solve_map(_wcsp("wcsp6_d3_f40_s0"), "exact", enumeration_limit=0, max_nodes=3)
    warm, _ = load("wcsp40_d20_f30_s50")
    solve_map(warm, "exact", time_limit=time_limit, n_jobs=n_jobs)
    times = {}
    for name in names:
        graph, _ = load(name)
        t0 = time.perf_counter()
        res = solve_map(graph, "exact", time_limit=time_limit, n_jobs=n_jobs)
        times[name] = {"time": time.perf_counter() - t0, "status": res.status,
                       "score": res.score}
        print(f"{name:<22}{times[name]['time']:>9.3f}  {res.status}", flush=True)
    with open(out, "w") as f:
        json.dump(times, f, indent=1)
    proved = sum(v["status"] == "exact" for v in times.values())
    print(f"summed {sum(v['time'] for v in times.values()):.1f} s, proved {proved} of "
          f"{len(times)}; written to {out}")


def compare(path_a, path_b):
    with open(path_a) as f:
        a = json.load(f)
    with open(path_b) as f:
        b = json.load(f)
    both = [k for k in a if k in b and a[k]["status"] == b[k]["status"] == "exact"]
    ratios = [b[k]["time"] / a[k]["time"] for k in both]
    for k in both:
        if abs(a[k]["score"] - b[k]["score"]) > 1e-6 * max(1.0, abs(a[k]["score"])):
            print(f"different optima on {k}: {a[k]['score']} against {b[k]['score']}")
    if not ratios:
        print("no network proved by both")
        return
    common = [k for k in a if k in b]
    print(f"{path_b} against {path_a}, over the {len(both)} networks both prove: geometric "
          f"mean {math.exp(sum(map(math.log, ratios)) / len(ratios)):.3f}x, faster on "
          f"{sum(r < 1 for r in ratios)}; summed {sum(b[k]['time'] for k in common):.1f} s "
          f"against {sum(a[k]['time'] for k in common):.1f} s; proved "
          f"{sum(b[k]['status'] == 'exact' for k in common)} against "
          f"{sum(a[k]['status'] == 'exact' for k in common)} of {len(common)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--families", default=FAMILIES,
                    help="comma-separated n:D:F (variables, largest domain, %% forbidden)")
    ap.add_argument("--seeds", default="60-64")
    ap.add_argument("--n-jobs", type=int, default=None)
    ap.add_argument("--time-limit", type=float, default=20.0,
                    help="seconds per network; 0: no limit (solve_map's own budgets)")
    ap.add_argument("--out", help="where to write this version's times (JSON)")
    ap.add_argument("--compare", nargs=2, metavar=("A", "B"),
                    help="compare two files written by --out")
    args = ap.parse_args()
    if args.compare:
        compare(*args.compare)
    elif args.out:
        run(args.families, args.seeds, args.n_jobs, args.time_limit or None, args.out)
    else:
        ap.error("give --out or --compare")


if __name__ == "__main__":
    main()
