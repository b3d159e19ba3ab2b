"""The SSVM certificate (loss-augmented Viterbi over all training sequences,
``chain_primal``) with a 2 %-dense transition table, as GDMM keeps it, against
the same computation over a table without exact zeros (the dense O(K^2) Viterbi).

Synthetic chains: 300 sequences of 15 tokens, 40 of 2,000 binary features per
token; K = 100, 300, 1000.  Both give the same primal value.

Usage::

    .venv/bin/python benchmarks/bench_certificate.py [--Ks 100,300,1000] [--density 0.02]
"""

import argparse
import time

import numpy as np


def best_of(f, repeat):
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = f()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main():
    from structlearn.learners._ssvm_chain_kernels import chain_primal

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--Ks", default="100,300,1000")
    ap.add_argument("--density", type=float, default=0.02)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    d, n_seq, length, per_token = 2000, 300, 15, 40
    offsets = np.arange(0, n_seq * length + 1, length).astype(np.int64)
    N = int(offsets[-1])
    indices = np.concatenate([np.sort(rng.choice(d, per_token, replace=False))
                              for _ in range(N)]).astype(np.int64)
    indptr = np.arange(0, N * per_token + 1, per_token).astype(np.int64)
    data = np.ones(N * per_token)
    print("| K | non-zero transitions | sparse-table Viterbi s | dense Viterbi s | ratio | same primal |")
    print("|---|---:|---:|---:|---:|---|")
    for K in (int(k) for k in args.Ks.split(",")):
        y = rng.integers(0, K, size=N).astype(np.int64)
        W = 0.1 * rng.normal(size=(d, K))
        v = np.zeros((K, K))
        mask = rng.random((K, K)) < args.density
        v[mask] = rng.normal(size=mask.sum())
        dense_v = np.where(v == 0.0, 1e-300, v)  # no exact zero: the dense kernel
        bufs = (np.empty(N, dtype=np.int64), np.empty(n_seq))

        def run(table):
            return chain_primal(W, None, table, data, indices, indptr, offsets, y, 1.0, 1.0, *bufs)

        run(v), run(dense_v)  # compile / load
        ts, ps = best_of(lambda: run(v), args.repeat)
        td, pd = best_of(lambda: run(dense_v), args.repeat)
        print(f"| {K} | {int(mask.sum())} | {ts:.3f} | {td:.3f} | {td / ts:.1f}x | {ps == pd} |",
              flush=True)


if __name__ == "__main__":
    main()
