"""Benchmark the iterated local search kernel against the same walk stepped
from Python.

Run: ``.venv/bin/python benchmarks/bench_local_search.py`` (about a minute).
For each network (``bench_map``'s names) and each of ``--starts`` random
streams, both walks start from the all-zeros labeling and take ``--steps``
steps relabelling balls of 3 to ``--ball`` variables: ``Problem.walk`` (one
kernel; conditional modes from the ball outwards) and a Python loop of
``Problem.perturbed``, ``Problem.improve`` (sweeps over every variable) and
``Problem.score`` per step, moving when not worse, as the local searches
did before the kernel.  It prints the microseconds per step and the best
scores reached.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_map import load  # noqa: E402

from structlearn.inference.lp._lp_common import Problem  # noqa: E402

DEFAULT = "wcsp45_d20_f35_s50,wcsp50_d15_f30_s52,wcsp70_d10_f30_s52,wcsp40_d20_f30_s53"


def python_walk(problem, start, rng, steps, ball):
    """The walk stepped from Python; returns its best score."""
    current = start.copy()
    problem.improve(current)
    current_score = best = problem.score(current)
    for _ in range(steps):
        cand = problem.perturbed(current, rng, max_ball=ball)
        problem.improve(cand)
        score = problem.score(cand)
        if score >= current_score:
            current, current_score = cand, score
        best = max(best, score)
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instances", default=DEFAULT)
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--ball", type=int, default=8)
    ap.add_argument("--starts", type=int, default=5)
    args = ap.parse_args()
    print(f"{'network':<22}{'kernel us/step':>15}{'python us/step':>15}{'speed-up':>9}"
          f"{'kernel best (mean)':>20}{'python best (mean)':>20}")
    for name in args.instances.split(","):
        graph, _ = load(name)
        problem = Problem(graph)
        start = np.zeros(graph.n_vars, dtype=np.int64)
        problem.walk(problem.new_walk(start, np.random.default_rng(0)), max_steps=2)  # compile
        python_walk(problem, start, np.random.default_rng(0), 2, args.ball)
        kernel_best, python_best, kernel_time, python_time = [], [], 0.0, 0.0
        for seed in range(args.starts):
            walk = problem.new_walk(start, np.random.default_rng(seed))
            t0 = time.perf_counter()
            problem.walk(walk, max_steps=args.steps, max_ball=args.ball)
            kernel_time += time.perf_counter() - t0
            kernel_best.append(walk.scores[1])
            t0 = time.perf_counter()
            python_best.append(python_walk(problem, start, np.random.default_rng(seed),
                                           args.steps, args.ball))
            python_time += time.perf_counter() - t0
        per = 1e6 / (args.starts * args.steps)
        print(f"{name:<22}{kernel_time * per:>15.1f}{python_time * per:>15.1f}"
              f"{python_time / kernel_time:>8.1f}x{np.mean(kernel_best):>20.1f}"
              f"{np.mean(python_best):>20.1f}", flush=True)


if __name__ == "__main__":
    main()
