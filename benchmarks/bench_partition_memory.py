"""Memory of partitioned GDMM chain fits: what each partition adds.

A generated chain task (``make_chain_data``: ``--sequences`` of ``--length``
tokens, ``--labels``, ``--features`` sparse features, ``--nnz`` a token;
the defaults are the issue-sized 1,000,000 tokens and 1,000 labels of
``bench_fit_cores``) is fitted for ``--passes`` passes with
``training_partitions=P`` for each P in ``--partitions`` (1: none), on
``--n-jobs`` threads, each fit in its own process.  Per fit: seconds, the
process's peak RSS, the part the fit added to it (peak minus the RSS
before the fit, the data and the compiled kernels already in), and that
part less P = 1's, per extra partition, against the dense weights' size
(``coef_``: features x labels float64).

Usage::

    .venv/bin/python benchmarks/bench_partition_memory.py [--sequences 50000] \\
        [--partitions 1 2 16] [--passes 2]
"""

import argparse
import json
import os
import subprocess
import sys
import time
import warnings

from _memory import peak_kb, reset_peak, rss_kb


def worker(args, P):
    from structlearn.datasets import make_chain_data
    from structlearn.estimators import SequenceSSVM

    warnings.simplefilter("ignore")
    X, y = make_chain_data(args.sequences, length=args.length, n_labels=args.labels,
                           n_features=args.features, density=args.nnz / args.features,
                           random_state=0)
    Xs, ys = make_chain_data(60, length=5, n_labels=args.labels, n_features=50, random_state=0)
    small = dict(max_iter=2, n_jobs=args.n_jobs, training_partitions=None if P == 1 else 2)
    SequenceSSVM(**small).fit(Xs, ys)  # kernels compiled / loaded outside the measure
    base = rss_kb()
    reset_peak()
    t0 = time.perf_counter()
    model = SequenceSSVM(C=0.1, max_iter=args.passes, random_state=0, n_jobs=args.n_jobs,
                         training_partitions=None if P == 1 else P).fit(X, y)
    seconds = time.perf_counter() - t0
    print(json.dumps({
        "fit": seconds, "peak": peak_kb() / 1024, "fit_mb": (peak_kb() - base) / 1024,
        "coef_mb": model.coef_.nbytes / 2**20, "tokens": int(sum(x.shape[0] for x in X)),
        "gap": model.history_[-1]["relative_gap"],
    }))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sequences", type=int, default=50000)
    ap.add_argument("--length", type=int, default=20)
    ap.add_argument("--labels", type=int, default=1000)
    ap.add_argument("--features", type=int, default=16000)
    ap.add_argument("--nnz", type=int, default=20)
    ap.add_argument("--partitions", type=int, nargs="+", default=[1, 2, 16])
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--passes", type=int, default=2)
    ap.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args, args.worker)
        return
    print(f"{args.sequences:,} x {args.length} tokens, {args.labels} labels, {args.features:,} "
          f"features ({args.nnz} a token), {args.passes} passes, n_jobs={args.n_jobs}\n")
    print("| P | fit s | peak RSS MB | fit MB | MB per extra partition | coef_ MB |")
    print("|---:|---:|---:|---:|---:|---:|")
    here = os.path.dirname(os.path.abspath(__file__))
    first = None
    for P in args.partitions:
        command = [sys.executable, os.path.abspath(__file__), "--worker", str(P)]
        for name in ("sequences", "length", "labels", "features", "nnz", "n_jobs", "passes"):
            command += [f"--{name.replace('_', '-')}", str(getattr(args, name))]
        out = subprocess.run(command, capture_output=True, text=True, cwd=here)
        lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
        if not lines:
            print(f"| {P} | failed: {out.stderr.strip().splitlines()[-1:]} |")
            continue
        r = json.loads(lines[-1])
        first = r if P == 1 else first
        extra = ("" if first is None or P == 1
                 else f"{(r['fit_mb'] - first['fit_mb']) / (P - 1):.0f}")
        print(f"| {P} | {r['fit']:.1f} | {r['peak']:.0f} | {r['fit_mb']:.0f} | {extra} | "
              f"{r['coef_mb']:.0f} |", flush=True)


if __name__ == "__main__":
    main()
