"""Time per pass of the main kernels, with a fingerprint of their result, to
compare two versions of the code side by side (same machine, same run):

    .venv/bin/python benchmarks/bench_kernels.py                       # this tree
    PYTHONPATH=<a worktree of another commit> .venv/bin/python benchmarks/bench_kernels.py

Each case is timed best of ``--repeat`` after a warm-up call that compiles or
loads its kernels; the fingerprint (a primal value, a bound, a sum of scores)
must be equal between the versions when the restructuring changed no
arithmetic.  Sections: gdmm-chain (SequenceSSVM passes: OCR letters K = 26,
synthetic K = 100 and 1,000), chain-solvers (bcfw, ssg, gdmm on OCR),
multilabel (MultiLabelSSVM passes on the shared bibtex and corel5k sets, when
present), gdmm-map (solve_map gdmm and gdmm_binary, gdmm_binary_batch),
convex-bp (BBPL, inner-dual and full-BP learning on a 30 x 30 grid, convex BP
on an 80 x 80 grid), kbest (list Viterbi, dense and sparse tables; k-best on
a tree), exact-setup (the maximum-cardinality order and Kovtun's cuts on
grids of 60 x 60 and 200 x 200).
"""

import argparse
import os
import sys
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
MULTILABEL = os.path.join(HERE, "..", "..", "shared", "data", "multilabel")


def _module(*names):
    """The first of ``names`` that imports (module paths moved between
    versions of the package: ``inference.lp.gdmm_binary`` was
    ``inference.gdmm_binary``)."""
    import importlib

    for name in names:
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    raise ImportError(names[-1])


def best_of(fn, repeat):
    best, out = np.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def passes_time(fit, repeat):
    """Best summed ``pass_time`` of ``repeat`` fits, and the last model."""
    best, model = np.inf, None
    for _ in range(repeat):
        model = fit()
        best = min(best, sum(h["pass_time"] for h in model.history_))
    return best, model


def report(name, seconds, fingerprint):
    print(f"| {name} | {seconds:.3f} | {fingerprint!r} |", flush=True)


def gdmm_chain(repeat):
    from structlearn.datasets import load_ocr_letters, make_chain_data
    from structlearn.estimators import SequenceSSVM

    ocr = load_ocr_letters()
    tr = [i for i, f in enumerate(ocr.folds) if f == 1]
    cases = {"gdmm pass, OCR K=26, 60 passes": ([ocr.X[i] for i in tr], [ocr.y[i] for i in tr],
                                                0.1, 60)}
    for K in (100, 1000):
        X, y = make_chain_data(300, length=10, n_labels=K, n_features=2000, density=0.005,
                               random_state=0)
        cases[f"gdmm pass, synthetic K={K}, 30 passes"] = (X, y, 1.0, 30)
    for name, (X, y, C, passes) in cases.items():
        SequenceSSVM(C=C, max_iter=2, random_state=0).fit(X[:20], y[:20])
        t, m = passes_time(lambda: SequenceSSVM(C=C, max_iter=passes, tol=0.0, check_every=10**6,
                                                random_state=0).fit(X, y), repeat)
        report(name, t, m.history_[-1]["primal"])


def chain_solvers(repeat):
    from structlearn.datasets import load_ocr_letters
    from structlearn.estimators import SequenceSSVM

    ocr = load_ocr_letters()
    tr = [i for i, f in enumerate(ocr.folds) if f == 1]
    X, y = [ocr.X[i] for i in tr], [ocr.y[i] for i in tr]
    for solver, it in (("bcfw", 40), ("ssg", 40), ("gdmm", 30)):
        SequenceSSVM(solver=solver, max_iter=2).fit(X[:20], y[:20])
        t, m = passes_time(lambda: SequenceSSVM(solver=solver, C=0.1, max_iter=it, tol=0.0,
                                                check_every=1, random_state=0).fit(X, y), repeat)
        report(f"{solver} passes, OCR, {it} passes", t, m.history_[-1]["primal"])


def multilabel(repeat):
    from structlearn.datasets import make_multilabel_pairwise
    from structlearn.estimators import MultiLabelSSVM

    X, Y = make_multilabel_pairwise(400, n_labels=10, n_features=50, random_state=0)[:2]
    for solver in ("bcfw", "ssg"):
        MultiLabelSSVM(solver=solver, max_iter=2, pairwise="full").fit(X[:20], Y[:20])
        t, m = passes_time(lambda: MultiLabelSSVM(solver=solver, pairwise="full", C=1.0,
                                                  max_iter=20, tol=0.0, random_state=0).fit(X, Y),
                           repeat)
        report(f"multilabel {solver}, 10 labels, 20 passes", t, m.history_[-1]["primal"])
    if not os.path.exists(os.path.join(MULTILABEL, "bibtex.npz")):
        print("(shared multilabel sets not found: skipped)")
        return
    sys.path.insert(0, HERE)
    from bench_multilabel import load_set

    for name, C, passes, pw in (("bibtex", 0.1, 15, "auto"), ("corel5k", 1.0, 20, "auto"),
                                ("bibtex", 0.1, 8, "full")):
        Xtr, Ytr = load_set(name, MULTILABEL)[:2]
        MultiLabelSSVM(C=C, max_iter=2, pairwise=pw, random_state=0).fit(Xtr[:50], Ytr[:50])
        t, m = passes_time(lambda: MultiLabelSSVM(C=C, max_iter=passes, tol=0.0,
                                                  check_every=10**6, pairwise=pw,
                                                  random_state=0).fit(Xtr, Ytr), repeat)
        report(f"multilabel gdmm, {name} C={C} {pw}, {passes} passes", t,
               m.history_[-1]["primal"])


def gdmm_map(repeat):
    from structlearn.graphs import complete_graph, grid_graph
    from structlearn.inference import solve_map
    gdmm_binary_batch = _module("structlearn.inference.lp.gdmm_binary",
                                "structlearn.inference.gdmm_binary").gdmm_binary_batch

    rng = np.random.default_rng(0)
    cases = [
        ("solve_map gdmm, Potts 20x20 K=21, 150 iterations",
         grid_graph(rng.normal(size=(20, 20, 21)), np.tile(1.5 * np.eye(21), (760, 1, 1))),
         "gdmm", 150),
        ("solve_map gdmm, complete 16 variables K=200, 40 iterations",
         complete_graph(rng.normal(size=(16, 200)), rng.normal(size=(120, 200, 200))),
         "gdmm", 40),
        ("solve_map gdmm_binary, grid 60x60, 200 iterations",
         grid_graph(rng.normal(size=(60, 60, 2)), rng.normal(size=(7080, 2, 2))),
         "gdmm_binary", 200),
    ]
    for name, g, method, it in cases:
        solve_map(g, method, max_iter=2, local_search=False)
        t, r = best_of(lambda: solve_map(g, method, max_iter=it, local_search=False), repeat)
        report(name, t, (r.upper_bound, r.score))
    U = rng.normal(size=(400, 60))
    pairs = np.array([(a, b) for a in range(60) for b in range(a + 1, 60)])
    E = pairs[rng.choice(len(pairs), 300, replace=False)]
    w = rng.normal(size=300)
    gdmm_binary_batch(U[:2], E, w)
    t, out = best_of(lambda: gdmm_binary_batch(U, E, w), repeat)
    report("gdmm_binary_batch, 400 samples x 60 labels", t, float(np.sum(out[2])))


def convex_bp(repeat):
    import structlearn

    # the problem generator of the benchmarks beside the package that runs
    sys.path.insert(0, os.path.join(os.path.dirname(structlearn.__file__), "..", "benchmarks"))
    from bench_crf import K_STATES, N_BINS, make_problem

    from structlearn.graphs import grid_edges
    run_convex_bp = _module("structlearn.inference.marginals.convex_bp",
                            "structlearn.inference.convex_bp").convex_bp
    from structlearn.learners.convex_bp_learning import fit_convex_bp_crf

    X, Y, edges, bins, n = make_problem("grid", 30, 0)

    def fit(method, it, **kw):
        return fit_convex_bp_crf(X, Y, edges, bins, n_states=K_STATES, n_bins=N_BINS,
                                 sample_ptr=np.array([0, n]), method=method, max_iter=it,
                                 tol=0.0, random_state=0, **kw)

    fit("bbpl", 2, n_blocks=4)
    for method, it, kw in (("bbpl", 60, dict(n_blocks=20)), ("full_bp", 15, {}),
                           ("inner_dual", 60, {})):
        t, r = best_of(lambda: fit(method, it, **kw), repeat)
        report(f"{method} learning, grid 30x30, {it} passes", t, float(np.abs(r.W).sum()))
    rng = np.random.RandomState(1)
    E = grid_edges(80, 80)
    U, P = rng.randn(6400, 6), rng.randn(len(E), 6, 6)
    run_convex_bp(U, E, P, max_iter=5)
    t, r = best_of(lambda: run_convex_bp(U, E, P, max_iter=100, tol=0.0), repeat)
    report("convex_bp, grid 80x80 K=6, 100 sweeps", t, r.log_z_bound)


def kbest(repeat):
    from structlearn.graphs import graph_from_edges
    viterbi = _module("structlearn.inference.chains.viterbi", "structlearn.inference.viterbi")
    sparse_transition_table, viterbi_topk = viterbi.sparse_transition_table, viterbi.viterbi_topk
    from structlearn.inference.mbest import solve_mbest

    rng = np.random.default_rng(0)
    K, n_seq, L, k = 60, 3000, 12, 5
    unary = rng.normal(size=(n_seq * L, K))
    offsets = np.arange(n_seq + 1) * L
    dense = rng.normal(size=(K, K))
    sparse = np.where(rng.random((K, K)) < 0.05, rng.normal(size=(K, K)), 0.0)
    for name, trans in (("dense", dense), ("sparse", sparse)):
        table = sparse_transition_table(trans) if name == "sparse" else None
        outs = (np.empty((n_seq * L, k), np.int64), np.empty((n_seq, k)),
                np.empty(n_seq, np.int64))
        viterbi_topk(unary[:L], offsets[:2], trans, k, outs[0][:L], outs[1][:1], outs[2][:1],
                     table=table)
        t, _ = best_of(lambda: viterbi_topk(unary, offsets, trans, k, *outs, table=table),
                       repeat)
        report(f"list Viterbi top-5, {name} table K=60, 36,000 tokens", t, float(outs[1].sum()))
    n = 300
    parent = [-1] + [int(rng.integers(0, i)) for i in range(1, n)]
    edges = np.array([(parent[i], i) for i in range(1, n)])
    g = graph_from_edges(rng.normal(size=(n, 8)), edges, rng.normal(size=(n - 1, 8, 8)))
    solve_mbest(g, 3, method="kbest_tree")
    t, r = best_of(lambda: solve_mbest(g, 50, method="kbest_tree"), repeat)
    report("kbest_tree, 300 nodes K=8, m=50", t, float(r.scores.sum()))


def exact_setup(repeat):
    """The exact searches' set-up kernels on grids of growing size: the
    maximum-cardinality order and Kovtun's cuts (attractive Potts, 4 labels)."""
    from structlearn.graphs import grid_graph
    from structlearn.inference.exact._dfbb_kernels import static_order
    from structlearn.inference.exact.dfbb import _neighbour_arrays
    from structlearn.inference.exact.potts_persistency import kovtun_persistency

    rng = np.random.default_rng(0)
    for side in (60, 200):
        g = grid_graph(rng.normal(size=(side, side, 4)),
                       rng.uniform(0, 1, size=(2 * side * (side - 1), 1, 1)) * np.eye(4))
        ptr, nbr = _neighbour_arrays(g)[:2]
        static_order(ptr, nbr)
        t, r = best_of(lambda: static_order(ptr, nbr), repeat)
        report(f"static_order, grid {side}x{side}", t, int(r[: side].sum()))
        kovtun_persistency(g)
        t, r = best_of(lambda: kovtun_persistency(g), repeat)
        report(f"kovtun_persistency, attractive grid {side}x{side} K=4", t,
               int((r >= 0).sum()))


SECTIONS = {"gdmm-chain": gdmm_chain, "chain-solvers": chain_solvers, "multilabel": multilabel,
            "gdmm-map": gdmm_map, "convex-bp": convex_bp, "kbest": kbest,
            "exact-setup": exact_setup}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sections", default=",".join(SECTIONS))
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    import structlearn

    print(f"structlearn from {os.path.dirname(structlearn.__file__)}")
    print("| case | best s | fingerprint |\n|---|---:|---|")
    for name in args.sections.split(","):
        SECTIONS[name](args.repeat)


if __name__ == "__main__":
    main()
