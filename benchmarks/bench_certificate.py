"""The SSVM certificate (loss-augmented Viterbi over all training sequences,
``chain_primal``) with a 2 %-dense transition table, as GDMM keeps it, against
the same computation over a table without exact zeros (the dense O(K^2) Viterbi).

Synthetic chains: 300 sequences of 15 tokens, 40 of 2,000 binary features per
token; K = 100, 300, 1000.  Both give the same primal value.

``--sweep``: the two Viterbi kernels alone (``viterbi`` with and without the
sparse table) on random tables, K = 16-1,000 and fills 1-50 %, 10-token
sequences with N(0, s^2) scores for s = 0.3, 1, 3: ns per position, their
ratio and the choice of ``sparse_transition_table`` (the data behind
``sparse_kernel_is_faster``).

``--sweep-topk``: the two list-Viterbi kernels (``viterbi_topk`` with and without
the sparse table) on random tables, K = 8-300, fills 5-90 %, k = 2, 5, 20,
15-token sequences with N(0, 1) scores: us per position, their ratio, and
whether ``sparse_transition_table`` picks the sparse kernel.

Usage::

    .venv/bin/python benchmarks/bench_certificate.py [--Ks 100,300,1000] [--density 0.02]
    .venv/bin/python benchmarks/bench_certificate.py --sweep [--sweep-labels 64,100,212]
    .venv/bin/python benchmarks/bench_certificate.py --sweep-topk
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


SWEEP_LABELS = (16, 32, 50, 64, 100, 150, 212, 300, 600, 1000)


def sweep(repeat, spreads=(0.3, 1.0, 3.0), labels=SWEEP_LABELS):
    """The Viterbi's two kernels as ``predict`` and the certificate call them
    (``viterbi`` with and without the sparse table), K = 16-1,000, fills
    1-50 %, 10-token sequences with N(0, spread^2) scores."""
    from structlearn.inference.chains.viterbi import sparse_table, sparse_transition_table, viterbi

    rng = np.random.default_rng(0)
    print("| K | fill | score spread | sparse kernel ns/position | dense ns/position | "
          "sparse / dense | rule picks sparse |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for K in labels:
        n_pos = max(4000, 800000 // K)
        offsets = np.arange(0, n_pos + 1, 10).astype(np.int64)
        N = int(offsets[-1])
        z = np.empty(N, dtype=np.int64)
        for fill in (0.01, 0.02, 0.05, 0.1, 0.25, 0.5):
            T = rng.normal(size=(K, K)) * (rng.random((K, K)) < fill)
            table = sparse_table(T)
            picks = sparse_transition_table(T) is not None
            for spread in spreads:
                U = spread * rng.normal(size=(N, K))
                viterbi(U[:20], offsets[:3], T, z, table)  # compile / load
                viterbi(U[:20], offsets[:3], T, z)
                ts, _ = best_of(lambda: viterbi(U, offsets, T, z, table), repeat)
                td, _ = best_of(lambda: viterbi(U, offsets, T, z), repeat)
                print(f"| {K} | {fill} | {spread} | {ts / N * 1e9:.0f} | {td / N * 1e9:.0f} | "
                      f"{ts / td:.2f} | {picks} |", flush=True)


def sweep_topk(repeat):
    from structlearn.inference.chains.viterbi import sparse_table, sparse_transition_table, viterbi_topk

    rng = np.random.default_rng(0)
    print("| K | fill | k | dense us/position | sparse us/position | dense / sparse | "
          "rule picks sparse |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for K in (8, 16, 32, 64, 128, 300):
        n_seq = max(20, 60000 // (K * 15))
        offsets = np.arange(0, n_seq * 15 + 1, 15, dtype=np.int64)
        N = int(offsets[-1])
        U = rng.normal(size=(N, K))
        for fill in (0.05, 0.15, 0.3, 0.6, 0.9):
            T = rng.normal(size=(K, K)) * (rng.random((K, K)) < fill)
            # the sparse layout whether or not the rule would pick it
            table = sparse_table(T)
            for k in (2, 5, 20):
                out = (np.zeros((N, k), dtype=np.int64), np.empty((n_seq, k)),
                       np.zeros(n_seq, dtype=np.int64))
                times = []
                for tab in (None, table):
                    viterbi_topk(U[:15], offsets[:2], T, k, *(o[:15] for o in out[:1]),
                                 out[1][:1], out[2][:1], tab)  # compile / load
                    t, _ = best_of(lambda: viterbi_topk(U, offsets, T, k, *out, tab), repeat)
                    times.append(t / N * 1e6)
                picks = sparse_transition_table(T, "topk", k) is not None
                print(f"| {K} | {fill} | {k} | {times[0]:.2f} | {times[1]:.2f} | "
                      f"{times[0] / times[1]:.2f} | {picks} |", flush=True)


def main():
    from structlearn.learners._chains import TrainingChains
    from structlearn.learners._ssvm_chain_kernels import chain_primal

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--Ks", default="100,300,1000")
    ap.add_argument("--density", type=float, default=0.02)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--sweep", action="store_true", help="the kernels alone on random tables")
    ap.add_argument("--sweep-labels", default=",".join(map(str, SWEEP_LABELS)),
                    help="--sweep: the label counts")
    ap.add_argument("--sweep-topk", action="store_true",
                    help="the list-Viterbi kernels alone on random tables")
    args = ap.parse_args()
    if args.sweep:
        sweep(args.repeat, labels=[int(k) for k in args.sweep_labels.split(",")])
        return
    if args.sweep_topk:
        sweep_topk(args.repeat)
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
            return chain_primal(W, None, table, TrainingChains(data, indices, indptr, offsets, y),
                                1.0, 1.0, *bufs)

        run(v), run(dense_v)  # compile / load
        ts, ps = best_of(lambda: run(v), args.repeat)
        td, pd = best_of(lambda: run(dense_v), args.repeat)
        print(f"| {K} | {int(mask.sum())} | {ts:.3f} | {td:.3f} | {td / ts:.1f}x | {ps == pd} |",
              flush=True)


if __name__ == "__main__":
    main()
