"""The SSVM certificate (loss-augmented Viterbi over all training sequences,
``chain_primal``) with a 2 %-dense transition table, as GDMM keeps it, against
the same computation over a table without exact zeros (the dense O(K^2) Viterbi).

Synthetic chains: 300 sequences of 15 tokens, 40 of 2,000 binary features per
token; K = 100, 300, 1000.  Both give the same primal value.

``--sweep``: the two Viterbi kernels alone (``viterbi_batch_sparse`` against
``viterbi_batch``) on random tables, K = 16-600 and fills 2-50 %, 10-token
sequences with N(0, 9) scores: ns per position and their ratio (the data behind
the choice in ``sparse_transition_table``).

Usage::

    .venv/bin/python benchmarks/bench_certificate.py [--Ks 100,300,1000] [--density 0.02]
    .venv/bin/python benchmarks/bench_certificate.py --sweep
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


def sweep(repeat):
    from structlearn.inference._chain_kernels import (transition_columns, viterbi_batch,
                                                      viterbi_batch_sparse)

    rng = np.random.default_rng(0)
    print("| K | fill | non-zeros | sparse kernel ns/position | dense ns/position | sparse / dense |")
    print("|---|---:|---:|---:|---:|---:|")
    for K in (16, 32, 50, 100, 212, 300, 600):
        n_pos = max(2000, 400000 // K)
        offsets = np.arange(0, n_pos + 1, 10).astype(np.int64)
        N = int(offsets[-1])
        U = 3.0 * rng.normal(size=(N, K))
        z = np.empty(N, dtype=np.int64)
        for fill in (0.02, 0.1, 0.25, 0.5):
            T = rng.normal(size=(K, K)) * (rng.random((K, K)) < fill)
            cols = (np.empty(K + 1, dtype=np.int64), np.empty(K * K, dtype=np.int64),
                    np.empty(K * K))
            transition_columns(T, *cols)
            viterbi_batch_sparse(U, offsets, *cols, z)  # compile / load
            viterbi_batch(U, offsets, T, z)
            ts, _ = best_of(lambda: viterbi_batch_sparse(U, offsets, *cols, z), repeat)
            td, _ = best_of(lambda: viterbi_batch(U, offsets, T, z), repeat)
            print(f"| {K} | {fill} | {int(np.count_nonzero(T))} | {ts / N * 1e9:.0f} | "
                  f"{td / N * 1e9:.0f} | {ts / td:.2f} |", flush=True)


def main():
    from structlearn.learners._ssvm_chain_kernels import chain_primal

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--Ks", default="100,300,1000")
    ap.add_argument("--density", type=float, default=0.02)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--sweep", action="store_true", help="the kernels alone on random tables")
    args = ap.parse_args()
    if args.sweep:
        sweep(args.repeat)
        return
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
