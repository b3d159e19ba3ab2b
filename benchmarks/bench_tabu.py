"""Benchmark the tabu search's steps (:class:`.TabuSearch`, the local search
between the soft arc search's slices): microseconds a step and the best
cost reached, for this checkout and, with ``--before``, another one.

Run: ``.venv/bin/python benchmarks/bench_tabu.py --before <checkout>`` (about
a minute).  Each network (``bench_map``'s names) is searched in its own
process per checkout, from each variable's cheapest label: a run of 10 steps
loads the kernel, then ``--steps`` steps are timed, the best of
``--repeats`` runs.  The tabu search counts its work in steps with a fixed
random stream, so two versions that take the same moves reach the same best
cost: the column compares them.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

DEFAULT = ("potts60_k8,potts50_k8,potts60_k4,random350_p1_k5_s67,wcsp50_d15_f30_s62,"
           "wcsp60_d10_f30_s60,wcsp45_d20_f35_s50")


def worker(name, steps, repeats):
    """Time the steps on ``name`` in this process; prints one JSON line."""
    from bench_map import load

    from structlearn.inference.exact.soft_arc import _cost_network
    from structlearn.inference.exact.tabu import TabuSearch

    graph, _ = load(name)
    net, _ = _cost_network(graph)
    TabuSearch(net).run(10)
    best_time, cost = float("inf"), None
    for _ in range(repeats):
        search = TabuSearch(net)
        t0 = time.perf_counter()
        search.run(steps)
        best_time = min(best_time, time.perf_counter() - t0)
        cost = search.best_cost
    print(json.dumps({"n": graph.n_vars, "K": int(net.K), "us": 1e6 * best_time / steps,
                      "cost": cost}))


def run(checkout, name, steps, repeats):
    """:func:`worker` in a process of its own (``checkout``'s structlearn)."""
    env = dict(os.environ)
    if checkout:
        env["PYTHONPATH"] = os.path.abspath(checkout)
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", name,
                          "--steps", str(steps), "--repeats", str(repeats)],
                         capture_output=True, text=True, env=env, timeout=600)
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    if out.returncode != 0 or not lines:
        raise RuntimeError(f"{name}: {(out.stderr.strip().splitlines() or ['?'])[-1]}")
    return json.loads(lines[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instances", default=DEFAULT)
    ap.add_argument("--steps", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--before", default=None, help="a second checkout, run the same way")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.worker, args.steps, args.repeats)
        return
    print(f"{args.steps} steps, best of {args.repeats}")
    print(f"{'network':<24}{'n':>6}{'K':>4}{'us/step':>10}{'best cost':>14}"
          + (f"{'before':>10}{'best cost':>14}{'ratio':>8}" if args.before else ""))
    for name in args.instances.split(","):
        now = run(None, name, args.steps, args.repeats)
        line = f"{name:<24}{now['n']:>6}{now['K']:>4}{now['us']:>10.2f}{now['cost']:>14.2f}"
        if args.before:
            old = run(args.before, name, args.steps, args.repeats)
            line += f"{old['us']:>10.2f}{old['cost']:>14.2f}{old['us'] / now['us']:>8.2f}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
