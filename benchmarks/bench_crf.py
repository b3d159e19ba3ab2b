"""CRF benchmarks: convex-BP learning (BBPL / inner-dual / full BP) and chain CRFs vs CRFsuite.

Part 1 -- synthetic study of Lu, Liu & Huang (block BP learning): grids and
Barabasi-Albert graphs, 8 states, Gaussian unary features (d = 20), pairwise
features = one of 10 bins per edge (one-hot, pairwise dimension 10), a
random Gaussian true model, 20 label samples drawn by Gibbs sampling. The
20 samples share the graph and the features, so the learning objective is
``B(theta) - <theta, mean features>`` (eq. 6) and one inference serves them
all. All three learners use the same fixed step and counting numbers. We
report the time each needs to get within 1e-3 (relative) of the optimal
objective (``f* `` from a long full-BP run), the speed-up of BBPL, and the
sensitivity to the number of blocks.

Part 2 -- chain CRFs against sklearn-crfsuite: Portuguese UPOS tagging
(``../shared/data/porttinari_pos.conllu.gz``, sklearn-crfsuite tutorial
features for both, L-BFGS, c2 = 1 <=> alpha = 2 / n_train_sentences), and
the OCR-letters anchor (demo protocol: train on fold 1, pixels + bias).

Run: ``.venv/bin/python benchmarks/bench_crf.py`` (grids 30x30 and 50x50,
BA 1000 nodes, both sequence tasks); ``--part synthetic`` / ``--part tagging``
for one part. Larger graphs use a cheaper protocol without a full-BP run to
convergence (:func:`run_synthetic_large`): ``--part synthetic --grids --ba
--large-grids 100 200 --large-ba 5000 --ref-time 180``. ``--part defaults
--repeat 3``: both libraries with no parameter set, in alternating rounds
(median times; a shared machine slows down in phases). ``--part fb-kernels``:
the two forward-backward kernels alone on the likelihood's blocks, by number
of labels (the data behind ``forward_backward.GEMM_MIN_LABELS``).
"""

import argparse
import pathlib
import time

import numpy as np

from structlearn.graphs import grid_edges
from structlearn.inference.marginals.convex_bp import incidence_lists, trw_counting_numbers
from structlearn.learners.convex_bp_learning import (
    crf_objective,
    fit_convex_bp_crf,
    grid_block_labels,
    index_block_labels,
)

K_STATES = 8
D_UNARY = 20
N_BINS = 10
N_DRAWS = 20
ALPHA = 1e-2
REL_GAP = 1e-3
SHARED = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data"


# ---------------------------------------------------------------- synthetic
def ba_edges(n, m, rng):
    """Barabasi-Albert graph: every new node links to m earlier nodes, by degree."""
    targets = list(range(m))
    repeated = []
    edges = []
    for v in range(m, n):
        for t in set(targets):
            edges.append((t, v))
        repeated.extend(targets)
        repeated.extend([v] * m)
        chosen = set()
        while len(chosen) < m:
            chosen.add(repeated[rng.randint(len(repeated))])
        targets = list(chosen)
    return np.array(edges, dtype=np.int64)


def greedy_colors(n, edges):
    adj = [[] for _ in range(n)]
    for u, v in edges:
        adj[u].append(v)
        adj[v].append(u)
    color = np.full(n, -1)
    for u in range(n):
        used = {color[v] for v in adj[u]}
        c = 0
        while c in used:
            c += 1
        color[u] = c
    return color


def gibbs_samples(X, edges, bins, W, V, n_draws, rng, burn=30, thin=3):
    """Label draws by Gibbs sampling, sweeping colour classes at once."""
    n = X.shape[0]
    unary = X @ W.T
    color = greedy_colors(n, edges)
    ap, ae, aside = incidence_lists(n, edges)
    own = np.repeat(np.arange(n), np.diff(ap))
    other = edges[ae, 1 - aside]
    b = bins[ae]
    y = rng.randint(0, K_STATES, n)
    out = []
    classes = [np.flatnonzero(color == c) for c in range(color.max() + 1)]
    for sweep in range(burn + n_draws * thin):
        for nodes in classes:
            # field[u, a] = unary + sum over incident edges of V[bin, a, y_other] (oriented)
            fld = unary.copy()
            pv = np.where(aside[:, None] == 0, V[b, :, y[other]], V[b, y[other], :])
            np.add.at(fld, own, pv)
            f = fld[nodes]
            p = np.exp(f - f.max(1, keepdims=True))
            p /= p.sum(1, keepdims=True)
            u = rng.random_sample(len(nodes))[:, None]
            y[nodes] = np.minimum((p.cumsum(1) < u).sum(1), K_STATES - 1)
        if sweep >= burn and (sweep - burn) % thin == thin - 1:
            out.append(y.copy())
    return np.stack(out, axis=1)


def make_problem(kind, size, seed):
    rng = np.random.RandomState(seed)
    if kind == "grid":
        edges = grid_edges(size, size)
        n = size * size
    else:
        n = size
        edges = ba_edges(n, 2, rng)
    X = rng.randn(n, D_UNARY)
    bins = rng.randint(0, N_BINS, len(edges)).astype(np.int64)
    W = rng.randn(K_STATES, D_UNARY) * 0.3
    V = rng.randn(N_BINS, K_STATES, K_STATES) * 0.3
    Y = gibbs_samples(X, edges, bins, W, V, N_DRAWS, rng)
    return X, Y, edges, bins, n


def time_to_gap(snaps, evaluate, f_star):
    """First snapshot time whose objective is within REL_GAP of f_star (binary search)."""
    lo, hi = 0, len(snaps) - 1
    if evaluate(snaps[hi]) - f_star > REL_GAP * abs(f_star):
        return None
    while lo < hi:
        mid = (lo + hi) // 2
        if evaluate(snaps[mid]) - f_star <= REL_GAP * abs(f_star):
            hi = mid
        else:
            lo = mid + 1
    return snaps[lo][0]


def fit_with_snapshots(X, Y, edges, bins, method, params, final=False):
    """Fit, keeping (time, W, V) snapshots at most every 0.5 % of the elapsed time.

    ``final`` appends the parameters at the end of the run.
    """
    snaps = []
    t0 = [time.perf_counter()]

    def cb(it, W, V):
        now = time.perf_counter() - t0[0]
        if not snaps or now - snaps[-1][0] >= max(0.01, 0.005 * now):
            snaps.append((now, W.copy(), V.copy()))
        return False

    t0[0] = time.perf_counter()
    res = fit_convex_bp_crf(X, Y, edges, bins, method=method, callback=cb, **params)
    if final:
        snaps.append((time.perf_counter() - t0[0], res.W.copy(), res.V.copy()))
    return res, snaps


def run_synthetic(kind, size, block_options, max_time, seed=0):
    X, Y, edges, bins, n = make_problem(kind, size, seed)
    rn, re = trw_counting_numbers(n, edges, random_state=seed)
    sp = np.array([0, n])
    common = dict(n_states=K_STATES, n_bins=N_BINS, sample_ptr=sp, alpha=ALPHA,
                  rho_node=rn, rho_edge=re, random_state=seed, inner_tol=1e-5,
                  tol=1e-9, max_iter=10**7, max_time=max_time)  # fmt: skip
    cache = {}

    def evaluate(snap):
        key = snap[0]
        if key not in cache:
            cache[key] = crf_objective(snap[1], snap[2], X, Y, edges, bins, sp, alpha=ALPHA,
                                       rho_node=rn, rho_edge=re, tol=1e-8)[0]  # fmt: skip
        return cache[key]

    def run(method, **extra):
        return fit_with_snapshots(X, Y, edges, bins, method, {**common, **extra})

    # compile before timing
    fit_convex_bp_crf(X[:4], Y[:4], edges[:0], bins[:0], method="bbpl", max_iter=2, n_blocks=2,
                      n_states=K_STATES, n_bins=N_BINS, sample_ptr=np.array([0, 4]))  # fmt: skip
    ref, ref_snaps = run("full_bp", tol=1e-5)
    f_star = min(r["objective"] for r in ref.history)
    rows = []
    t_full = time_to_gap(ref_snaps, evaluate, f_star)
    # the others stop at 3x full BP's time to the target (or max_time)
    common["max_time"] = min(max_time, 3.0 * (t_full or max_time) + 1.0)
    rows.append(("full_bp", "-", t_full, ref.n_updates))
    res, snaps = run("inner_dual")
    t_inner = time_to_gap(snaps, evaluate, f_star)
    rows.append(("inner_dual", "-", t_inner, res.n_updates))
    for label, extra in block_options:
        if kind == "grid" and isinstance(extra, tuple):
            blk = dict(block_labels=grid_block_labels(size, size, *extra))
        else:
            blk = dict(block_labels=index_block_labels(sp, extra))
        res, snaps = run("bbpl", **blk)
        rows.append(("bbpl", label, time_to_gap(snaps, evaluate, f_star), res.n_updates))
    return rows, f_star, t_full, t_inner, len(edges)


def run_synthetic_large(kind, size, block_options, ref_time, seed=0, inner_factor=4.0,
                        full_factor=8.0):
    """Larger graphs, without a full-BP run to convergence.

    1. BBPL with the first block option runs ``ref_time`` s from zero; the exact objective at
       its end is the provisional ``f*``.
    2. The other block options run ``3 t + 1`` s (``t`` its time to the provisional target),
       inner-dual learning ``inner_factor * t_bbpl + 1`` s and full-BP learning
       ``full_factor * t_bbpl + 1`` s (``t_bbpl`` the best BBPL time), all from zero.
    3. ``f*`` = the best exact objective at the end of any run; times are measured against
       ``f* + REL_GAP |f*|``. A run that never gets there is reported as "> its length".
       The exact gradient at the best point bounds the remaining gap:
       ``f* - f_opt <= ||g||^2 / (2 alpha)`` (the objective is alpha-strongly convex).
    """
    X, Y, edges, bins, n = make_problem(kind, size, seed)
    rn, re = trw_counting_numbers(n, edges, random_state=seed)
    sp = np.array([0, n])
    common = dict(n_states=K_STATES, n_bins=N_BINS, sample_ptr=sp, alpha=ALPHA,
                  rho_node=rn, rho_edge=re, random_state=seed, inner_tol=1e-5,
                  tol=1e-9, max_iter=10**7)  # fmt: skip
    cache = {}

    def exact(W, V):
        return crf_objective(W, V, X, Y, edges, bins, sp, alpha=ALPHA, rho_node=rn,
                             rho_edge=re, tol=1e-8)  # fmt: skip

    def evaluate(snap):
        key = id(snap)
        if key not in cache:
            cache[key] = exact(snap[1], snap[2])[0]
        return cache[key]

    def run(method, max_time, **extra):
        return fit_with_snapshots(X, Y, edges, bins, method,
                                  {**common, "max_time": max_time, **extra}, final=True)  # fmt: skip

    def blocks(extra):
        if kind == "grid" and isinstance(extra, tuple):
            return dict(block_labels=grid_block_labels(size, size, *extra))
        return dict(block_labels=index_block_labels(sp, extra))

    fit_convex_bp_crf(X[:4], Y[:4], edges[:0], bins[:0], method="bbpl", max_iter=2, n_blocks=2,
                      n_states=K_STATES, n_bins=N_BINS, sample_ptr=np.array([0, 4]))  # fmt: skip
    runs = []  # (method, blocks, result, snapshots, length s)
    label, extra = block_options[0]
    res, snaps = run("bbpl", ref_time, **blocks(extra))
    runs.append(("bbpl", label, res, snaps, ref_time))
    f_prov = evaluate(snaps[-1])
    t_best = time_to_gap(snaps, evaluate, f_prov)
    for label, extra in block_options[1:]:
        cap = 3.0 * t_best + 1.0
        res, snaps = run("bbpl", cap, **blocks(extra))
        runs.append(("bbpl", label, res, snaps, cap))
        t = time_to_gap(snaps, evaluate, f_prov)
        t_best = min(t_best, t) if t is not None else t_best
    for method, factor in (("inner_dual", inner_factor), ("full_bp", full_factor)):
        cap = factor * t_best + 1.0
        extra = dict(tol=1e-5) if method == "full_bp" else {}
        res, snaps = run(method, cap, **extra)
        runs.append((method, "-", res, snaps, cap))
    finals = [evaluate(r[3][-1]) for r in runs]
    i_best = int(np.argmin(finals))
    f_star = finals[i_best]
    _, gW, gV, _ = exact(runs[i_best][3][-1][1], runs[i_best][3][-1][2])
    cert = float(np.sum(gW * gW) + np.sum(gV * gV)) / (2.0 * ALPHA)
    rows = []
    for method, label, res, snaps, cap in runs:
        rows.append((method, label, time_to_gap(snaps, evaluate, f_star), res.n_updates, cap))
    info = dict(f_star=f_star, best_run=f"{runs[i_best][0]} {runs[i_best][1]}", cert=cert,
                finals=finals)  # fmt: skip
    return rows, info, len(edges)


def part_synthetic_large(grids, ba_sizes, ref_time):
    print("\n## Part 1b: larger graphs, capped runs (time to reach f* + 1e-3 |f*|)\n")
    print("| graph | nodes | edges | method | blocks | time s | run s | updates | vs full_bp |"
          " vs inner_dual |")  # fmt: skip
    print("|---|---:|---:|---|---|---:|---:|---:|---:|---:|")
    for kind, sizes in (("grid", grids), ("ba", ba_sizes)):
        for size in sizes:
            if kind == "grid":
                opts = [("10x10", (10, 10)), ("5x5", (5, 5))]
                name = f"grid {size}x{size}"
                n = size * size
            else:
                opts = [("100", 100), ("20", 20)]
                name = f"BA {size}"
                n = size
            rows, info, E = run_synthetic_large(kind, size, opts, ref_time)
            t_of = {m: (t, cap) for m, _, t, _, cap in rows if m != "bbpl"}

            def ratio(ref, t):
                t_ref, cap = t_of[ref]
                if t is None:
                    return "-"
                return f"{t_ref / t:.1f}x" if t_ref is not None else f"> {cap / t:.1f}x"

            for method, blocks, t, it, cap in rows:
                ts = f"> {cap:.0f}" if t is None else f"{t:.2f}"
                print(f"| {name} | {n} | {E} | {method} | {blocks} | {ts} | {cap:.0f} | {it} | "
                      f"{ratio('full_bp', t)} | {ratio('inner_dual', t)} |", flush=True)  # fmt: skip
            print(f"|  | f* = {info['f_star']:.4f} (end of {info['best_run']}), gap bound "
                  f"{info['cert']:.3g} ({info['cert'] / abs(info['f_star']):.1e} rel.); final "
                  f"objectives {', '.join(f'{f:.3f}' for f in info['finals'])} | | | | | | | | |",
                  flush=True)  # fmt: skip


def part_synthetic(grids, ba_sizes, max_time):
    print("\n## Part 1: synthetic study (time to reach f* + 1e-3 |f*|)\n")
    print("| graph | nodes | edges | method | blocks | time s | updates | vs full_bp | vs inner_dual |")
    print("|---|---:|---:|---|---|---:|---:|---:|---:|")
    for kind, sizes in (("grid", grids), ("ba", ba_sizes)):
        for size in sizes:
            if kind == "grid":
                opts = [("2x2", (2, 2)), ("4x5", (4, 5)), ("5x5", (5, 5)), ("10x10", (10, 10))]
                name = f"grid {size}x{size}"
                n = size * size
            else:
                opts = [("5", 5), ("20", 20), ("100", 100)]
                name = f"BA {size}"
                n = size
            rows, f_star, t_full, t_inner, E = run_synthetic(kind, size, opts, max_time)
            for method, blocks, t, it in rows:
                ts = "n/a" if t is None else f"{t:.2f}"
                rf = f"{t_full / t:.1f}x" if t and t_full else "-"
                ri = f"{t_inner / t:.1f}x" if t and t_inner else "-"
                print(f"| {name} | {n} | {E} | {method} | {blocks} | {ts} | {it} | {rf} | {ri} |",
                      flush=True)  # fmt: skip


# ------------------------------------------------------------------ tagging
def _timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def compare_chain(name, D_tr, L_tr, D_te, L_te, c2, max_iter):
    import sklearn_crfsuite

    from structlearn.datasets import vectorize_sequences
    from structlearn.estimators import SequenceCRF

    crf = sklearn_crfsuite.CRF(algorithm="lbfgs", c1=0.0, c2=c2, max_iterations=max_iter)
    _, t_crf = _timed(lambda: crf.fit(D_tr, L_tr))
    pred = crf.predict(D_te)
    truth = np.concatenate([np.asarray(t) for t in L_te])
    acc_crf = float(np.mean(np.concatenate([np.asarray(p) for p in pred]) == truth))
    it_crf = crf.training_log_.last_iteration["num"]

    (X_all, vec), t_vec = _timed(lambda: vectorize_sequences(D_tr + D_te))
    X_tr, X_te = X_all[: len(D_tr)], X_all[len(D_tr):]
    y_tr = [np.asarray(t) for t in L_tr]
    SequenceCRF(max_iter=2).fit(X_tr[:3], y_tr[:3])  # compile kernels before timing
    model = SequenceCRF(c2=c2, max_iter=max_iter)
    _, t_sl = _timed(lambda: model.fit(X_tr, y_tr))
    acc_sl = model.score(X_te, [np.asarray(t) for t in L_te])
    print(f"| {name} | sklearn-crfsuite (c2={c2:g}) | {acc_crf:.4f} | {t_crf:.2f} | {it_crf} | 1.00x |")
    print(f"| {name} | structlearn SequenceCRF (alpha=2*c2/n) | {acc_sl:.4f} | {t_sl:.2f} | "
          f"{model.n_iter_} | {t_sl / t_crf:.2f}x |")  # fmt: skip
    print(f"|  | (vectorizing the dicts for structlearn: {t_vec:.2f} s, "
          f"{X_all[0].shape[1]} features) | | | | |")  # fmt: skip


def compare_defaults(name, D_tr, L_tr, D_te, L_te, repeat=1):
    """Both libraries with no parameter set, on the same feature dicts (structlearn's
    fit time includes building its vocabulary from the dicts); with ``repeat``,
    the fits alternate and the median times are compared."""
    import statistics

    import sklearn_crfsuite

    from structlearn.estimators import SequenceCRF

    SequenceCRF(max_iter=2).fit(D_tr[:3], L_tr[:3])  # compile kernels before timing
    t_crf, t_sl = [], []
    for _ in range(max(1, repeat)):
        crf = sklearn_crfsuite.CRF()
        t_crf.append(_timed(lambda: crf.fit(D_tr, L_tr))[1])
        model = SequenceCRF()
        t_sl.append(_timed(lambda: model.fit(D_tr, L_tr))[1])
    truth = np.concatenate([np.asarray(t) for t in L_te])
    acc_crf = float(np.mean(np.concatenate([np.asarray(p) for p in crf.predict(D_te)]) == truth))
    acc_sl = model.score(D_te, L_te)
    med_crf, med_sl = statistics.median(t_crf), statistics.median(t_sl)

    def each(ts):
        return f" [{', '.join(f'{t:.2f}' for t in ts)}]" if len(ts) > 1 else ""

    print(f"| {name} | sklearn-crfsuite CRF() | {acc_crf:.4f} | {med_crf:.2f}{each(t_crf)} | "
          f"{crf.training_log_.last_iteration['num']} | 1.00x |")
    print(f"| {name} | structlearn SequenceCRF() | {acc_sl:.4f} | {med_sl:.2f}{each(t_sl)} | "
          f"{model.n_iter_} | {med_sl / med_crf:.2f}x |", flush=True)


def _tagging_tasks(n_sentences, ocr_bias):
    """``(name, D_train, L_train, D_test, L_test)``: Porttinari UPOS (when the
    shared corpus is there) and OCR letters (bundled); feature dicts in."""
    from structlearn.datasets import load_ocr_letters, read_conllu, token_features

    tasks = []
    path = SHARED / "porttinari_pos.conllu.gz"
    if path.exists():
        sents = read_conllu(path, columns=("form", "upos"))
        if n_sentences:
            sents = sents[:n_sentences]
        n_tr = int(0.8 * len(sents))
        D = [token_features(s["form"]) for s in sents]
        L = [list(s["upos"]) for s in sents]
        tasks.append((f"UPOS pt ({n_tr}/{len(sents) - n_tr} sent.)", D[:n_tr], L[:n_tr],
                      D[n_tr:], L[n_tr:]))
    data = load_ocr_letters()
    X, y, folds = data["X"], data["y"], data["folds"]

    def dicts(x):
        bias = {"bias": 1.0} if ocr_bias else {}
        return [{**bias, **{f"p{j}": 1.0 for j in np.flatnonzero(row)}} for row in x]

    tr = [i for i in range(len(X)) if folds[i] == 1]
    te = [i for i in range(len(X)) if folds[i] != 1]
    tasks.append(("OCR letters (fold 1 / rest)", [dicts(X[i]) for i in tr],
                  [[str(v) for v in y[i]] for i in tr], [dicts(X[i]) for i in te],
                  [[str(v) for v in y[i]] for i in te]))
    return tasks


def part_defaults(n_sentences, repeat):
    print("\n## Part 3: defaults against defaults (feature dicts in, no parameter set)\n")
    if repeat > 1:
        print(f"{repeat} alternating rounds: median fit times (every round in brackets)\n")
    print("| task | method | token acc | fit s | iterations | fit time ratio |")
    print("|---|---|---:|---:|---:|---:|")
    for task in _tagging_tasks(n_sentences, ocr_bias=False):
        compare_defaults(*task, repeat=repeat)


def part_tagging(max_iter, n_sentences):
    print("\n## Part 2: chain CRF vs sklearn-crfsuite\n")
    print("| task | method | token acc | fit s | iterations | fit time ratio |")
    print("|---|---|---:|---:|---:|---:|")
    for task in _tagging_tasks(n_sentences, ocr_bias=True):
        compare_chain(*task, 1.0, max_iter)


def part_fb_kernels(Ks=(2, 4, 8, 12, 16, 20, 26, 32, 40, 48, 64, 100, 200),
                    lengths=((4, 15), (10, 40)), rounds=9):
    """The per-sequence and the grouped (matrix-product) forward-backward on
    one block of the likelihood (``block_tokens_for(K)`` tokens of random
    sequences), ns per position, best of ``rounds`` alternating rounds."""
    import numpy as np

    from structlearn._parallel import single_threaded_blas
    from structlearn.inference.chains._chain_kernels import (GROUP_ENTRIES, forward_backward_batch,
                                                      forward_backward_grouped)
    from structlearn.inference.chains.forward_backward import GEMM_MIN_LABELS
    from structlearn.learners.chain_crf import block_tokens_for

    rng = np.random.default_rng(0)
    print("\n## Forward-backward kernels on one likelihood block (N(0, 4) scores, "
          "N(0, 0.25) transitions)\n")
    print("| K | sequence lengths | per-sequence ns/position | grouped ns/position | "
          "grouped / per-sequence | chosen |")
    print("|---|---|---:|---:|---:|---|")
    with single_threaded_blas():
        for lo, hi in lengths:
            for K in Ks:
                lens, total = [], 0
                while total + hi < block_tokens_for(K):
                    lens.append(int(rng.integers(lo, hi)))
                    total += lens[-1]
                offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
                N = int(offsets[-1])
                U = 2.0 * rng.normal(size=(N, K))
                T = 0.5 * rng.normal(size=(K, K))
                out = (np.empty((N, K)), np.empty((K, K)), np.empty(len(lens)))
                reps = max(1, 400000 // (N * K))
                kernels = (lambda: forward_backward_batch(U, offsets, T, *out),
                           lambda: forward_backward_grouped(U, offsets, T, *out, GROUP_ENTRIES))
                best = [np.inf, np.inf]
                for _ in range(rounds):
                    for i, f in enumerate(kernels):
                        t0 = time.perf_counter()
                        for _ in range(reps):
                            f()
                        best[i] = min(best[i], (time.perf_counter() - t0) / reps / N)
                chosen = "grouped" if K >= GEMM_MIN_LABELS else "per-sequence"
                print(f"| {K} | {lo}-{hi} | {best[0] * 1e9:.0f} | {best[1] * 1e9:.0f} | "
                      f"{best[1] / best[0]:.2f} | {chosen} |", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--part", choices=["all", "synthetic", "tagging", "defaults", "fb-kernels"],
                    default="all")
    ap.add_argument("--grids", type=int, nargs="*", default=[30, 50])
    ap.add_argument("--ba", type=int, nargs="*", default=[1000])
    ap.add_argument("--max-time", type=float, default=120.0,
                    help="time limit per learning run (s)")
    ap.add_argument("--max-iter", type=int, default=200, help="L-BFGS iteration cap (tagging)")
    ap.add_argument("--sentences", type=int, default=0, help="use only the first N sentences")
    ap.add_argument("--repeat", type=int, default=1,
                    help="defaults: alternating rounds of both fits, median times compared")
    ap.add_argument("--large-grids", type=int, nargs="*", default=[],
                    help="grid sizes for the capped-run protocol (e.g. 100 200)")
    ap.add_argument("--large-ba", type=int, nargs="*", default=[],
                    help="BA sizes for the capped-run protocol (e.g. 5000)")
    ap.add_argument("--ref-time", type=float, default=120.0,
                    help="length of the first BBPL run in the capped-run protocol (s)")
    args = ap.parse_args()
    if args.part in ("all", "synthetic"):
        if args.grids or args.ba:
            part_synthetic(args.grids, args.ba, args.max_time)
        if args.large_grids or args.large_ba:
            part_synthetic_large(args.large_grids, args.large_ba, args.ref_time)
    if args.part in ("all", "tagging"):
        part_tagging(args.max_iter, args.sentences)
    if args.part in ("all", "defaults"):
        part_defaults(args.sentences, args.repeat)
    if args.part == "fb-kernels":
        part_fb_kernels()


if __name__ == "__main__":
    main()
