"""First call from an empty numba cache: SequenceSSVM and SequenceCRF fits and a
solve_map, each in a fresh process with its own empty NUMBA_CACHE_DIR; reports the
wall time of the call and the kernels whose compilation took longest (numba's
compile events, inclusive of the kernels they call).  ``--more`` adds a CRF fit
over 45 labels (the grouped forward-backward), a GraphCRF fit and predict, and a
solve_map on a 12 x 12 grid (too large for the depth-first search that solves
the 5 x 5 one: the LP-bounded search's kernels).

Usage::

    .venv/bin/python benchmarks/bench_cold_start.py [--top 5] [--more]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

CASES = ("SequenceSSVM.fit", "SequenceCRF.fit", "solve_map")
MORE = ("SequenceCRF.fit (45 labels)", "GraphCRF.fit+predict", "solve_map (12 x 12 grid)")


def worker(case, top):
    from numba.core import event

    rec = event.RecordingListener()
    event.register("numba:compile", rec)
    import numpy as np

    from structlearn.datasets import make_chain_data

    X, y = make_chain_data(30, length=5, n_labels=5, n_features=20, random_state=0)
    t0 = time.perf_counter()
    if case == "SequenceSSVM.fit":
        import warnings

        from structlearn.estimators import SequenceSSVM

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            SequenceSSVM(max_iter=5).fit(X, y)
    elif case == "SequenceCRF.fit":
        from structlearn.estimators import SequenceCRF

        SequenceCRF(max_iter=5).fit(X, y)
    elif case == "SequenceCRF.fit (45 labels)":
        from structlearn.estimators import SequenceCRF

        X, y = make_chain_data(60, length=5, n_labels=45, n_features=20, random_state=0)
        t0 = time.perf_counter()
        SequenceCRF(max_iter=5).fit(X, y)
    elif case == "GraphCRF.fit+predict":
        from structlearn.estimators import GraphCRF
        from structlearn.estimators.crf import image_grid_sample

        rng = np.random.default_rng(0)
        Xs = [image_grid_sample(rng.normal(size=(4, 4, 3))) for _ in range(5)]
        ys = [rng.integers(0, 3, size=16) for _ in range(5)]
        t0 = time.perf_counter()
        GraphCRF(max_iter=3).fit(Xs, ys).predict(Xs)
    else:
        from structlearn.graphs import grid_graph
        from structlearn.inference import solve_map

        rng = np.random.default_rng(0)
        side = 12 if case.endswith("(12 x 12 grid)") else 5  # 144 variables: LP-bounded search
        solve_map(grid_graph(rng.normal(size=(side, side, 3)), rng.normal(size=(3, 3))))
    wall = time.perf_counter() - t0
    starts, spent = {}, {}
    for ts, ev in rec.buffer:
        disp = ev.data.get("dispatcher") if isinstance(ev.data, dict) else None
        key = (id(disp), str(ev.data.get("args")) if isinstance(ev.data, dict) else "")
        name = getattr(getattr(disp, "py_func", None), "__qualname__", "?")
        if ev.is_start:
            starts[key] = ts
        elif key in starts:
            spent[name] = spent.get(name, 0.0) + ts - starts.pop(key)
    ranked = sorted(spent.items(), key=lambda kv: -kv[1])[:top]
    print(json.dumps({"wall": wall, "n_compiled": len(spent), "top": ranked}))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--top", type=int, default=5)
    ap.add_argument("--more", action="store_true", help="also " + ", ".join(MORE))
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.worker, args.top)
        return
    print("| first call | wall s (empty cache) | kernels compiled | slowest compilations (s, inclusive) |")
    print("|---|---:|---:|---|")
    for case in CASES + (MORE if args.more else ()):
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, NUMBA_CACHE_DIR=cache)
            out = subprocess.run([sys.executable, __file__, "--worker", case, "--top",
                                  str(args.top)], capture_output=True, text=True, env=env)
        lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
        if not lines:
            print(f"| {case} | failed: {out.stderr.strip().splitlines()[-1:]} | | |")
            continue
        r = json.loads(lines[-1])
        top = ", ".join(f"{name} {t:.1f}" for name, t in r["top"])
        print(f"| {case} | {r['wall']:.1f} | {r['n_compiled']} | {top} |", flush=True)


if __name__ == "__main__":
    main()
