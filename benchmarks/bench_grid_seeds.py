"""Exact MAP on Potts grids of fresh seeds (not bench_map's seed 0), one method
per run, in-process after a warm-up: ``{a|p}_{n}_{k}_{seed}`` is an attractive
(couplings in [0, 1]) or frustrated ([-1, 1]) n x n grid with k labels and
N(0, 1) unaries.

Run: ``.venv/bin/python benchmarks/bench_grid_seeds.py exact a_50_8_1,p_50_8_1``
(and ``ilp`` for HiGHS; a second checkout on ``PYTHONPATH`` for an older
version).
"""
import sys, time, numpy as np
from structlearn.graphs import grid_graph
from structlearn.inference import solve_map
method = sys.argv[1]
# warm
rng = np.random.default_rng(99)
solve_map(grid_graph(rng.normal(size=(6, 6, 3)), rng.uniform(0, 1, size=(60, 1, 1)) * np.eye(3)), "exact")
for name in sys.argv[2].split(","):
    kind, n, k, seed = name.split("_")
    n, k, seed = int(n), int(k), int(seed)
    rng = np.random.default_rng(seed)
    low = 0.0 if kind == "a" else -1.0
    g = grid_graph(rng.normal(size=(n, n, k)), rng.uniform(low, 1.0, size=(2 * n * (n - 1), 1, 1)) * np.eye(k))
    t = time.perf_counter()
    r = solve_map(g, method, time_limit=60)
    print(method, name, r.status, "%.4f" % r.score, "%.2f s" % (time.perf_counter() - t), flush=True)
