"""Benchmark exact chain inference and UAI parsing.

Run: ``.venv/bin/python benchmarks/bench_exact.py`` (about a minute on one
core; ``--quick`` shrinks the workloads).

Sections (numba single-threaded, compile time excluded by a warm-up call):

1. ``viterbi_batch`` throughput in tokens * K^2 per second for K in
   {10, 100, 1000} against a vectorized numpy Viterbi over the same batch
   (all sequences advanced one position at a time with broadcasting); the
   decoded labels are checked to agree;
2. ``forward_backward_batch`` against a numpy log-domain forward-backward
   (``scipy.special.logsumexp``); log Z checked to agree;
3. the general ``solve_map(method="viterbi")`` on one long chain graph;
4. time to parse each shared UAI file with ``structlearn.graphs.read_uai``
   and to classify its structure (chain / forest / loopy), skipped when
   the reader or ``../shared/data/uai`` is missing.
"""

from __future__ import annotations

import argparse
import pathlib
import time

import numpy as np
from scipy.special import logsumexp

from structlearn.graphs import chain_graph
from structlearn.inference import solve_map
from structlearn.inference.chains._chain_kernels import forward_backward_batch, viterbi_batch

UAI_DIR = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data" / "uai"


def make_batch(rng, n_seq, length, K):
    """Equal-length sequences with Gaussian scores."""
    unary = rng.normal(size=(n_seq * length, K))
    trans = rng.normal(size=(K, K))
    offsets = np.arange(n_seq + 1, dtype=np.int64) * length
    return unary, offsets, trans


def numpy_viterbi(unary, n_seq, length, trans, chunk_elems=2**24):
    """Viterbi for equal-length sequences, vectorized over sequences and labels."""
    K = trans.shape[0]
    u = unary.reshape(n_seq, length, K)
    out = np.empty((n_seq, length), dtype=np.int64)
    step = max(1, chunk_elems // (K * K))
    for lo in range(0, n_seq, step):
        uc = u[lo : lo + step]
        m = uc.shape[0]
        delta = uc[:, 0].copy()
        back = np.empty((m, length, K), dtype=np.int64)
        for t in range(1, length):
            cand = delta[:, :, None] + trans[None]
            back[:, t] = np.argmax(cand, axis=1)
            delta = np.take_along_axis(cand, back[:, t][:, None, :], axis=1)[:, 0] + uc[:, t]
        y = np.argmax(delta, axis=1)
        out[lo : lo + m, length - 1] = y
        rows = np.arange(m)
        for t in range(length - 1, 0, -1):
            y = back[rows, t, y]
            out[lo : lo + m, t - 1] = y
    return out.ravel()


def numpy_logz(unary, n_seq, length, trans, chunk_elems=2**24):
    """Forward pass (log Z only) vectorized over sequences and labels."""
    K = trans.shape[0]
    u = unary.reshape(n_seq, length, K)
    out = np.empty(n_seq)
    step = max(1, chunk_elems // (K * K))
    for lo in range(0, n_seq, step):
        uc = u[lo : lo + step]
        alpha = uc[:, 0].copy()
        for t in range(1, length):
            alpha = logsumexp(alpha[:, :, None] + trans[None], axis=1) + uc[:, t]
        out[lo : lo + step] = logsumexp(alpha, axis=1)
    return out


def timed(fn, repeat=1):
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def bench_chains(sizes, quick):
    rng = np.random.default_rng(0)
    length = 20
    # warm-up (compile) on a tiny batch
    u, off, tr = make_batch(rng, 2, 3, 3)
    viterbi_batch(u, off, tr, np.empty(6, np.int64))
    forward_backward_batch(u, off, tr, np.empty((6, 3)), np.empty((3, 3)), np.empty(2))
    print("\n== viterbi_batch vs numpy Viterbi (sequences of 20 tokens) ==")
    print(f"{'K':>6} {'tokens':>9} {'numba s':>9} {'numpy s':>9} "
          f"{'numba tok*K^2/s':>16} {'numpy tok*K^2/s':>16} {'ratio':>7} agree")
    rows = []
    for K in sizes:
        work = 2e7 if quick else 2e8
        n_seq = max(1, int(work / (length * K * K)))
        unary, offsets, trans = make_batch(rng, n_seq, length, K)
        N = unary.shape[0]
        out = np.empty(N, dtype=np.int64)
        t_nb = timed(lambda: viterbi_batch(unary, offsets, trans, out), repeat=3)
        t_np = timed(lambda: numpy_viterbi(unary, n_seq, length, trans))
        ref = numpy_viterbi(unary, n_seq, length, trans)
        agree = bool(np.array_equal(ref, out))
        ops = N * K * K
        print(f"{K:>6} {N:>9} {t_nb:>9.4f} {t_np:>9.4f} {ops / t_nb:>16.3e} "
              f"{ops / t_np:>16.3e} {t_np / t_nb:>7.1f} {agree}")
        rows.append((K, N, t_nb, t_np))
    print("\n== forward_backward_batch vs numpy forward (log Z only) ==")
    print(f"{'K':>6} {'tokens':>9} {'numba fb s':>11} {'numpy fwd s':>12} "
          f"{'numba tok*K^2/s':>16} {'ratio':>7} max|dlogZ|")
    for K in sizes:
        work = 1e7 if quick else 1e8
        n_seq = max(1, int(work / (length * K * K)))
        unary, offsets, trans = make_batch(rng, n_seq, length, K)
        N = unary.shape[0]
        node = np.empty((N, K))
        tm = np.empty((K, K))
        logz = np.empty(n_seq)
        t_nb = timed(lambda: forward_backward_batch(unary, offsets, trans, node, tm, logz),
                     repeat=3)
        t_np = timed(lambda: numpy_logz(unary, n_seq, length, trans))
        err = np.abs(numpy_logz(unary, n_seq, length, trans) - logz).max()
        print(f"{K:>6} {N:>9} {t_nb:>11.4f} {t_np:>12.4f} {N * K * K / t_nb:>16.3e} "
              f"{t_np / t_nb:>7.1f} {err:.1e}")
    return rows


def bench_graph_viterbi(quick):
    rng = np.random.default_rng(1)
    n, K = (20_000 if quick else 200_000), 10
    g = chain_graph(rng.normal(size=(n, K)), rng.normal(size=(K, K)))
    solve_map(chain_graph(rng.normal(size=(3, K)), rng.normal(size=(K, K))), method="viterbi")
    t_graph = timed(lambda: solve_map(g, method="viterbi"), repeat=3)
    t_tree = timed(lambda: solve_map(g, method="tree"), repeat=1)
    print(f"\n== solve_map on one chain graph, n_vars={n}, K={K} ==")
    print(f"viterbi: {t_graph:.4f} s ({n * K * K / t_graph:.3e} vars*K^2/s); "
          f"tree: {t_tree:.4f} s (same score: "
          f"{solve_map(g, method='viterbi').score == solve_map(g, method='tree').score})")


def bench_uai():
    print("\n== read_uai parse time ==")
    try:
        from structlearn.graphs import read_uai
    except ImportError:
        print("skipped: structlearn.graphs.read_uai is not available")
        return
    if not UAI_DIR.is_dir():
        print(f"skipped: {UAI_DIR} is absent")
        return
    from structlearn.graphs import is_chain, is_forest

    is_forest(chain_graph(np.zeros((3, 2)), np.zeros((2, 2))))  # warm-up
    print("(tokenize s: plain `np.array(text.split()[1:], dtype=float)` on the same file, "
          "a lower bound for a naive reader)")
    print(f"{'file':>24} {'MB':>6} {'n_vars':>7} {'n_factors':>9} {'parse s':>8} "
          f"{'tokenize s':>10} {'structure':>9} {'check s':>8}")
    for path in sorted(UAI_DIR.glob("*.uai")):
        t0 = time.perf_counter()
        g = read_uai(path)
        dt = time.perf_counter() - t0
        t0 = time.perf_counter()
        np.array(path.read_text().split()[1:], dtype=np.float64)
        dt_tok = time.perf_counter() - t0
        t0 = time.perf_counter()
        kind = "chain" if is_chain(g) else "forest" if is_forest(g) else "loopy"
        dt_s = time.perf_counter() - t0
        print(f"{path.name:>24} {path.stat().st_size / 1e6:>6.2f} {g.n_vars:>7} "
              f"{g.n_factors:>9} {dt:>8.3f} {dt_tok:>10.3f} {kind:>9} {dt_s:>8.4f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    bench_chains(args.sizes, args.quick)
    bench_graph_viterbi(args.quick)
    bench_uai()


if __name__ == "__main__":
    main()
