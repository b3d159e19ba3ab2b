"""MAP inference on a loopy factor graph with several back-ends, through a UAI file.

A Potts-like grid MRF is written to a UAI file, read back, and solved by the
registered back-ends. Every result carries the score of its decoded labeling
and a certified upper bound, so ``upper_bound - score`` bounds how far the
labeling can be from the optimum. The same file can be solved from the shell
with ``python -m structlearn map FILE.uai --method gdmm``.

Run: ``python examples/map_inference_uai.py [--size N] [--states K] [--time-limit S]``
"""

import argparse
import os
import tempfile

from structlearn.datasets import make_grid_mrf
from structlearn.graphs import read_uai, write_uai
from structlearn.inference import available_methods, solve_map


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=12, help="grid side (default 12)")
    parser.add_argument("--states", type=int, default=5, help="states per variable (default 5)")
    parser.add_argument("--coupling", type=float, default=2.0, help="Potts coupling (default 2)")
    parser.add_argument("--time-limit", type=float, default=2.0, help="seconds per method")
    args = parser.parse_args(argv)

    graph = make_grid_mrf(args.size, args.size, args.states, coupling=args.coupling, random_state=0)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "grid.uai")
        write_uai(graph, path)
        graph = read_uai(path)
    print(f"{graph.n_vars} variables, {graph.n_factors} factors")

    loopy = [m for m in ("gdmm", "ad3", "scm", "fista", "psdd", "trn") if m in available_methods()]
    print(f"{'method':8s} {'score':>10s} {'upper bound':>12s} {'gap':>8s} {'iters':>6s} status")
    for method in loopy:
        res = solve_map(graph, method=method, time_limit=args.time_limit)
        assert abs(graph.score(res.labels) - res.score) < 1e-6 * max(1.0, abs(res.score))
        print(f"{method:8s} {res.score:10.3f} {res.upper_bound:12.3f} "
              f"{res.upper_bound - res.score:8.3f} {res.n_iter:6d} {res.status}")


if __name__ == "__main__":
    main()
