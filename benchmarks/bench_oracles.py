"""Benchmark the factorwise maximization oracles against dense scans.

Run: ``.venv/bin/python benchmarks/bench_oracles.py`` (about two minutes on
one core; ``--sizes 100 300 1000`` skips K = 3000).

Sections (all timings single-threaded numba, compile time excluded):

1. multimap candidates: ns per key update of the indexed heap used by
   ``structlearn.oracles.multimap`` against a tournament (segment) tree over
   the same fixed item universe;
2. indicator-factor oracle (updatable K x K table, heaps over the table, its
   rows and columns): time per call against a dense numba argmax over K^2
   and against numpy, mean entries visited in case (i), update cost per
   changed entry; messages on ``nnz`` random labels of each variable, the
   ground truth excluded.  A second workload ("hot") lists, for each
   variable, nnz of the 2 nnz rows (columns) that hold the largest table
   entries, the adversarial case for case (i);
3. static sorted lists (MAP inference) on the same tables;
4. binary-interaction joint oracle over all L (L - 1) / 2 label pairs;
5. inner-product oracle, exact against nu-partition sampling.
"""

from __future__ import annotations

import argparse
import time

import numba as nb
import numpy as np

from structlearn.oracles import build_sorted_orders, make_pair_workspace
from structlearn.oracles._binary_kernels import binary_pair_fmo, dense_binary_pair_argmax
from structlearn.oracles._indicator_kernels import (
    dense_indicator_argmax,
    indicator_build,
    indicator_add_many,
    indicator_fmo,
    indicator_update_many,
)
from structlearn.oracles._inner_kernels import inner_product_fmo, inner_product_fmo_sampled
from structlearn.oracles._multimap_kernels import heap_fill_sorted, heap_set_key
from structlearn.oracles._pair_kernels import static_pair_argmax, table_orders
from structlearn.oracles.binary import make_binary_oracle, make_binary_workspace
from structlearn.oracles.indicator import make_indicator_oracle
from structlearn.oracles.inner_product import make_inner_workspace


# ------------------------------------------------------------- candidates
@nb.njit(cache=True)
def heap_updates(keys, items, pos, n, upd, new_keys, vals):
    for k in range(upd.shape[0]):
        it = upd[k]
        vals[it] = new_keys[k]
        heap_set_key(keys, items, pos, 0, n, it, new_keys[k])


@nb.njit(cache=True)
def tournament_build(vals, tree, n):
    for i in range(n):
        tree[n + i] = i
    for u in range(n - 1, 0, -1):
        a = tree[2 * u]
        b = tree[2 * u + 1]
        tree[u] = a if vals[a] >= vals[b] else b


@nb.njit(cache=True)
def tournament_updates(vals, tree, n, upd, new_keys):
    for k in range(upd.shape[0]):
        it = upd[k]
        vals[it] = new_keys[k]
        u = (n + it) >> 1
        while u >= 1:
            a = tree[2 * u]
            b = tree[2 * u + 1]
            tree[u] = a if vals[a] >= vals[b] else b
            u >>= 1


def bench_candidates(sizes, n_upd=300_000):
    print("\n## 1. Multimap candidates: ns per key update (random item)\n")
    print("| n | change | indexed heap | tournament tree | tree / heap |")
    print("|---|---|---|---|---|")
    rng = np.random.default_rng(0)
    for n in sizes:
        vals0 = rng.normal(size=n)
        upd = rng.integers(0, n, n_upd)
        for label, scale in (("small (+N(0, 0.01))", 0.01), ("new value", None)):
            new = rng.normal(size=n_upd) if scale is None else vals0[upd] + scale * rng.normal(size=n_upd)
            keys = np.empty(n)
            items = np.empty(n, np.int32)
            pos = np.empty(n, np.int32)
            v1 = vals0.copy()
            heap_fill_sorted(keys, items, pos, 0, v1, n)
            heap_updates(keys, items, pos, n, upd[:10], new[:10], v1)
            t = time.perf_counter()
            heap_updates(keys, items, pos, n, upd, new, v1)
            th = (time.perf_counter() - t) / n_upd * 1e9
            v2 = vals0.copy()
            tree = np.empty(2 * n, np.int32)
            tournament_build(v2, tree, n)
            tournament_updates(v2, tree, n, upd[:10], new[:10])
            t = time.perf_counter()
            tournament_updates(v2, tree, n, upd, new)
            tt = (time.perf_counter() - t) / n_upd * 1e9
            assert v2[tree[1]] == keys[0]
            print(f"| {n:.0e} | {label} | {th:.0f} | {tt:.0f} | {tt / th:.1f}x |")


# -------------------------------------------------------------- indicator
@nb.njit(cache=True)
def run_indicator(state, I1, V1, I2, V2, nnz, ws, out, visits):
    for r in range(I1.shape[0]):
        best, a, b, nv = indicator_fmo(state, I1[r], V1[r], nnz, I2[r], V2[r], nnz,
                                       0.0, -1, 0.0, -1, I1[r, 0], I2[r, 0], ws)
        out[r] = best
        visits[r, 0] = ws[2][0]
        visits[r, 1] = nv


@nb.njit(cache=True)
def run_static(table, n, oa, orow, ocol, I1, V1, I2, V2, nnz, ws, out):
    for r in range(I1.shape[0]):
        best, a, b, nv = static_pair_argmax(table, n, n, oa, orow, ocol, I1[r], V1[r], nnz,
                                            I2[r], V2[r], nnz, I1[r, 0], I2[r, 0], ws)
        out[r] = best


@nb.njit(cache=True)
def run_dense(v, n, I1, V1, I2, V2, nnz, m1, m2, out):
    for r in range(I1.shape[0]):
        for k in range(nnz):
            m1[I1[r, k]] = V1[r, k]
            m2[I2[r, k]] = V2[r, k]
        out[r] = dense_indicator_argmax(v, n, n, m1, m2, 0.0, -1, 0.0, -1, I1[r, 0], I2[r, 0])[0]
        for k in range(nnz):
            m1[I1[r, k]] = 0.0
            m2[I2[r, k]] = 0.0


def make_queries(rng, K, nnz, R, hot=None):
    """Random sparse messages; with ``hot = (rows, cols)`` the listed labels
    are drawn from the rows/columns of the largest table entries."""
    p1 = np.arange(K) if hot is None else hot[0]
    p2 = np.arange(K) if hot is None else hot[1]
    I1 = np.array([rng.choice(p1, nnz, replace=False) for _ in range(R)], dtype=np.int64)
    I2 = np.array([rng.choice(p2, nnz, replace=False) for _ in range(R)], dtype=np.int64)
    return I1, rng.normal(size=(R, nnz)), I2, rng.normal(size=(R, nnz))


def timed(fn, *args, repeat=1):
    fn(*args)  # warm-up (also compiles)
    best = np.inf
    for _ in range(repeat):
        t = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - t)
    return best


def bench_indicator(sizes, nnzs):
    print("\n## 2-3. Indicator oracle (updatable) and static sorted lists vs dense argmax over K^2\n")
    print("| K | nnz | workload | dense numba (us) | numpy (us) | indicator FMO (us) | speedup "
          "| static lists (us) | case (i) mean visits | case (i) max | all visits mean "
          "| update ns/entry (v += d) | update ns/entry (new v) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    rng = np.random.default_rng(1)
    for K in sizes:
        table = rng.normal(size=(K, K))
        t0 = time.perf_counter()
        state = make_indicator_oracle(table)
        t_build = time.perf_counter() - t0
        offs, data, _ = build_sorted_orders([table])
        oa, orow, ocol = table_orders(data, offs, 0, K, K)
        ws = make_pair_workspace(K, K)
        flat = table.ravel()
        R = 4000 if K <= 1000 else 1000
        Rd = min(R, max(3, int(2e8 // (K * K))))
        top = np.argsort(-flat)
        hot_rows = np.unique(top // K, return_index=True)
        hot_cols = np.unique(top % K, return_index=True)
        # update costs (the state is restored afterwards by re-adding -delta)
        n_upd = 200_000
        ur = rng.integers(0, K, n_upd)
        uc = rng.integers(0, K, n_upd)
        ud = 0.01 * rng.normal(size=n_upd)
        indicator_add_many(state, ur[:10], uc[:10], ud[:10] * 0, 10)
        t = time.perf_counter()
        indicator_add_many(state, ur, uc, ud, n_upd)
        t_add = (time.perf_counter() - t) / n_upd * 1e9
        newv = rng.normal(size=n_upd)
        indicator_update_many(state, ur[:10], uc[:10], flat[ur[:10] * K + uc[:10]].copy(), 10)
        t = time.perf_counter()
        indicator_update_many(state, ur, uc, newv, n_upd)
        t_set = (time.perf_counter() - t) / n_upd * 1e9
        state[0][:] = flat  # restore the table and its heaps
        indicator_build(state)
        for nnz in nnzs:
            # hot: the rows and columns of the first entries of the sorted table
            hot = (hot_rows[0][np.argsort(hot_rows[1])][: 2 * nnz],
                   hot_cols[0][np.argsort(hot_cols[1])][: 2 * nnz])
            for workload in ("random", "hot"):
                I1, V1, I2, V2 = make_queries(rng, K, nnz, R, None if workload == "random" else hot)
                out = np.empty(R)
                visits = np.empty((R, 2), dtype=np.int64)
                t_fmo = timed(run_indicator, state, I1, V1, I2, V2, nnz, ws, out, visits,
                              repeat=3) / R * 1e6
                out_s = np.empty(R)
                t_static = timed(run_static, flat, K, oa, orow, ocol, I1, V1, I2, V2, nnz, ws,
                                 out_s, repeat=3) / R * 1e6
                assert np.array_equal(out, out_s)
                m1 = np.zeros(K)
                m2 = np.zeros(K)
                out_d = np.empty(Rd)
                t_dense = timed(run_dense, flat, K, I1[:Rd], V1[:Rd], I2[:Rd], V2[:Rd], nnz,
                                m1, m2, out_d) / Rd * 1e6
                assert np.array_equal(out_d, out[:Rd])
                # numpy: one vectorized expression per call
                tn = []
                for r in range(min(Rd, 3)):
                    t = time.perf_counter()
                    m1[I1[r]] = V1[r]
                    m2[I2[r]] = V2[r]
                    sc = table + m1[:, None] + m2[None, :]
                    sc[I1[r, 0], I2[r, 0]] = -np.inf
                    val = sc.max()
                    m1[:] = 0.0
                    m2[:] = 0.0
                    tn.append(time.perf_counter() - t)
                    assert val == out[r]
                t_np = min(tn) * 1e6
                print(f"| {K} | {nnz} | {workload} | {t_dense:.0f} | {t_np:.0f} | {t_fmo:.2f} | "
                      f"{t_dense / t_fmo:.0f}x | {t_static:.2f} | {visits[:, 0].mean():.2f} | "
                      f"{visits[:, 0].max()} | {visits[:, 1].mean():.1f} | {t_add:.0f} | {t_set:.0f} |")
        print(f"|   | build of the K = {K} state: {t_build:.2f} s, {sum(a.nbytes for a in state) / 2**20:.0f} MiB |")
        del state, data


# ----------------------------------------------------------------- binary
@nb.njit(cache=True)
def run_binary(state, I, V, nnz, ws, out, visits):
    ex = np.zeros(1, dtype=np.int64)
    for r in range(I.shape[0]):
        best, i, j, nv = binary_pair_fmo(state, I[r], V[r], nnz, ex, ex, 0, ws)
        out[r] = best
        visits[r] = nv


@nb.njit(cache=True)
def run_binary_dense(s, L, I, V, nnz, c, excluded, out):
    for r in range(I.shape[0]):
        for k in range(nnz):
            c[I[r, k]] = V[r, k]
        out[r] = dense_binary_pair_argmax(s, L, c, excluded)[0]
        for k in range(nnz):
            c[I[r, k]] = 0.0


def bench_binary(Ls, nnzs):
    print("\n## 4. Binary-interaction joint oracle over all label pairs\n")
    print("| L | pairs | active labels | dense (us) | joint FMO (us) | speedup | mean visits |")
    print("|---|---|---|---|---|---|---|")
    rng = np.random.default_rng(2)
    for L in Ls:
        P = L * (L - 1) // 2
        state = make_binary_oracle(rng.normal(size=P))
        ws = make_binary_workspace(L)
        for nnz in nnzs:
            R = 4000
            I = np.array([rng.choice(L, nnz, replace=False) for _ in range(R)], dtype=np.int64)
            V = rng.normal(size=(R, nnz))
            out = np.empty(R)
            visits = np.empty(R, dtype=np.int64)
            t_f = timed(run_binary, state, I, V, nnz, ws, out, visits, repeat=3) / R * 1e6
            Rd = min(R, max(3, int(5e7 // P)))
            out_d = np.empty(Rd)
            t_d = timed(run_binary_dense, state[0], L, I[:Rd], V[:Rd], nnz, np.zeros(L),
                        np.zeros(P, np.uint8), out_d) / Rd * 1e6
            assert np.array_equal(out_d, out[:Rd])
            print(f"| {L} | {P} | {nnz} | {t_d:.0f} | {t_f:.2f} | {t_d / t_f:.0f}x | {visits.mean():.1f} |")


# ---------------------------------------------------------- inner product
@nb.njit(cache=True)
def run_inner(W, indices, data, indptr, perm, nu, parts, ws, out):
    e = np.zeros(0, dtype=np.int64)
    ev = np.zeros(0)
    for i in range(indptr.shape[0] - 1):
        if nu == 1:
            out[i] = inner_product_fmo(W, indices, data, indptr[i], indptr[i + 1], e, ev, 0,
                                       1.0, 0, 0, ws)[0]
        else:
            out[i] = inner_product_fmo_sampled(W, indices, data, indptr[i], indptr[i + 1], perm,
                                               nu, parts[i], e, ev, 0, 1.0, 0, 0, ws)[0]


def bench_inner(Ks, nus, n_rows=2000, d=5000, nnz=50):
    import scipy.sparse as sp

    print(f"\n## 5. Inner-product oracle (CSR rows, {nnz} non-zeros of {d} features)\n")
    print("| K | nu | us per call | speedup vs exact | hit rate of the exact argmax |")
    print("|---|---|---|---|---|")
    rng = np.random.default_rng(3)
    X = sp.random(n_rows, d, density=nnz / d, random_state=3, format="csr")
    for K in Ks:
        W = rng.normal(size=(d, K))
        ws = make_inner_workspace(K)
        perm = np.zeros(0, dtype=np.int64)  # contiguous label blocks
        exact = np.empty(n_rows)
        t_exact = timed(run_inner, W, X.indices, X.data, X.indptr, perm, 1,
                        np.zeros(n_rows, np.int64), ws, exact, repeat=2) / n_rows * 1e6
        print(f"| {K} | 1 | {t_exact:.1f} | 1x | 1.00 |")
        for nu in nus:
            parts = rng.integers(0, nu, n_rows)
            out = np.empty(n_rows)
            t = timed(run_inner, W, X.indices, X.data, X.indptr, perm, nu, parts, ws, out,
                      repeat=2) / n_rows * 1e6
            print(f"| {K} | {nu} | {t:.1f} | {t_exact / t:.1f}x | {np.mean(out == exact):.2f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 300, 1000, 3000])
    parser.add_argument("--nnz", type=int, nargs="+", default=[1, 5, 20])
    parser.add_argument("--skip", nargs="*", default=[], choices=["candidates", "indicator", "binary", "inner"])
    args = parser.parse_args()
    print(f"numba {nb.__version__}, numpy {np.__version__}, threads: 1")
    if "candidates" not in args.skip:
        bench_candidates([10**4, 10**6, 9 * 10**6] if max(args.sizes) >= 3000 else [10**4, 10**6])
    if "indicator" not in args.skip:
        bench_indicator(args.sizes, args.nnz)
    if "binary" not in args.skip:
        bench_binary([100, 300, 1000], args.nnz)
    if "inner" not in args.skip:
        bench_inner([100, 1000], [4, 16])


if __name__ == "__main__":
    nb.set_num_threads(1)
    main()
