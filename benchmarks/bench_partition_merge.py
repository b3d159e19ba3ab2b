"""Partitioned chain fits: time in the local passes and in the merges.

``SequenceSSVM(C=0.1, tol=0.01, n_jobs=2, training_partitions=P)`` on
generated chains (``make_chain_data``: ``--sequences`` of 20 tokens,
``--labels``, 16,000 sparse features, 20 a token), ``--repeats`` fits in a
row after a small one that compiles the kernels: wall seconds, rounds, the
local passes' and the merges' seconds (``history_``), and the last gap and
primal value (the same for two versions of the code means the same iterates).
Run it from two checkouts in turn (``PYTHONPATH``) to compare them.

Usage::

    .venv/bin/python benchmarks/bench_partition_merge.py --sequences 1000 --labels 1000 \\
        --parts 16 --rounds 30 [--repeats 2]
"""

import argparse
import time
import warnings


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sequences", type=int, default=1000)
    ap.add_argument("--labels", type=int, default=1000)
    ap.add_argument("--parts", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=30, help="max_iter")
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()

    from structlearn.datasets import make_chain_data
    from structlearn.estimators import SequenceSSVM

    X, y = make_chain_data(args.sequences, length=20, n_labels=args.labels, n_features=16000,
                           density=20 / 16000, random_state=0)
    warnings.simplefilter("ignore")

    def model(max_iter):
        return SequenceSSVM(C=0.1, tol=0.01, max_iter=max_iter, random_state=0, n_jobs=2,
                            training_partitions=args.parts)

    model(2).fit(X[:40], y[:40])
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        h = model(args.rounds).fit(X, y).history_
        wall = time.perf_counter() - t0
        local = sum(r["local_time"] for r in h)
        merge = sum(r["merge_time"] for r in h)
        print(f"{args.sequences * 20} tokens, K = {args.labels}, P = {args.parts}: fit "
              f"{wall:.2f} s, rounds {len(h)}, local {local:.2f} s, merge {merge:.2f} s, "
              f"gap {h[-1]['relative_gap']:.4f}, primal {h[-1]['primal']:.6f}", flush=True)


if __name__ == "__main__":
    main()
