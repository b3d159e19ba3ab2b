"""Chain CRF tagging against sklearn-crfsuite, each fit in its own process:
fit time, peak memory growth during the fit, held-out token accuracy.

Porttinari (``../shared/data`` or ``tests/data``), the CRFsuite tutorial
features, first 80 % of the sentences for training.  Both libraries get the
same feature dicts and the same penalties; structlearn's time includes
building its vocabulary from the dicts.

Usage::

    .venv/bin/python benchmarks/bench_crf_tagging.py [--column upos] [--c1 0.1 --c2 0.1]
        [--max-iter 100] [--sentences N] [--n-jobs 1 2] [--repeat 3]
"""

import argparse
import json
import os
import subprocess
import sys
import time

from _memory import peak_kb, reset_peak, rss_kb

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CORPUS = [os.path.join(ROOT, "..", "shared", "data", "porttinari_pos.conllu.gz"),
          os.path.join(ROOT, "tests", "data", "porttinari_pos.conllu.gz")]


def worker(lib, column, c1, c2, max_iter, n_sentences, n_jobs):
    import numpy as np

    from structlearn.datasets import read_conllu, token_features

    path = next(p for p in CORPUS if os.path.exists(p))
    sents = read_conllu(path, columns=("form", column))
    if n_sentences:
        sents = sents[:n_sentences]
    n_tr = int(0.8 * len(sents))
    D = [token_features(s["form"]) for s in sents]
    L = [list(s[column]) for s in sents]
    if lib == "structlearn":
        from structlearn.estimators import SequenceCRF

        SequenceCRF(max_iter=2).fit(D[:3], L[:3])  # kernels compiled / loaded before timing
        model = SequenceCRF(c1=c1, c2=c2, max_iter=max_iter, n_jobs=n_jobs)
    else:
        import sklearn_crfsuite

        model = sklearn_crfsuite.CRF(algorithm="lbfgs", c1=c1, c2=c2, max_iterations=max_iter)
    reset_peak()
    base = rss_kb()
    t0 = time.perf_counter()
    c0 = time.process_time()
    model.fit(D[:n_tr], L[:n_tr])
    fit_s = time.perf_counter() - t0
    cpu_s = time.process_time() - c0
    peak_mb = max(0, peak_kb() - base) / 1024.0
    pred = model.predict(D[n_tr:])
    truth = np.concatenate([np.asarray(t) for t in L[n_tr:]])
    acc = float(np.mean(np.concatenate([np.asarray(p) for p in pred]) == truth))
    n_labels = len({t for s in L for t in s})
    print(json.dumps({"fit_s": fit_s, "cpu_s": cpu_s, "peak_mb": peak_mb, "acc": acc, "n_labels": n_labels,
                      "train": n_tr, "test": len(sents) - n_tr}))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--column", default="upos", choices=("upos", "upos+feats"))
    ap.add_argument("--c1", type=float, default=0.1)
    ap.add_argument("--c2", type=float, default=0.1)
    ap.add_argument("--max-iter", type=int, default=100)
    ap.add_argument("--sentences", type=int, default=0)
    ap.add_argument("--n-jobs", type=int, nargs="+", default=[1],
                    help="structlearn's n_jobs; one row per value")
    ap.add_argument("--repeat", type=int, default=1,
                    help="rounds of all fits, in turn (shared machines slow down in phases: "
                         "the table gives each fit's median time and largest peak)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.worker, args.column, args.c1, args.c2, args.max_iter, args.sentences,
               args.n_jobs[0])
        return
    runs = [("sklearn-crfsuite", 1)] + [("structlearn", j) for j in args.n_jobs]
    results = {}  # row name -> list of worker results, one per round
    for _ in range(max(1, args.repeat)):
        for lib, n_jobs in runs:
            cmd = [sys.executable, __file__, "--worker", lib, "--column", args.column,
                   "--c1", str(args.c1), "--c2", str(args.c2), "--max-iter",
                   str(args.max_iter), "--sentences", str(args.sentences), "--n-jobs",
                   str(n_jobs)]
            out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
            lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
            if out.returncode or not lines:
                print(f"{lib}: failed: {out.stderr.strip().splitlines()[-1:]}")
                continue
            name = lib if lib != "structlearn" else f"structlearn (n_jobs={n_jobs})"
            results.setdefault(name, []).append(json.loads(lines[-1]))
    rows = {name: _summary(runs_of) for name, runs_of in results.items()}
    ref = rows.get("sklearn-crfsuite")
    any_row = next(iter(rows.values()))
    print(f"Porttinari {args.column} ({any_row['n_labels']} labels), {any_row['train']} / "
          f"{any_row['test']} sentences, c1 = {args.c1:g}, c2 = {args.c2:g}, "
          f"max_iter = {args.max_iter}")
    if args.repeat > 1:
        print(f"{args.repeat} rounds: median fit and CPU time, largest peak; fit times of "
              "every round in brackets")
    print("| library | token acc | fit s | CPU s | peak MB during fit | time ratio | "
          "memory ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for lib, r in rows.items():
        tr = f"{r['fit_s'] / ref['fit_s']:.2f}x" if ref else "-"
        mr = f"{r['peak_mb'] / max(ref['peak_mb'], 1e-3):.2f}x" if ref else "-"
        each = f" [{', '.join(f'{t:.2f}' for t in r['all_fit_s'])}]" if args.repeat > 1 else ""
        print(f"| {lib} | {r['acc']:.4f} | {r['fit_s']:.2f}{each} | {r['cpu_s']:.2f} | "
              f"{r['peak_mb']:.0f} | {tr} | {mr} |")


def _summary(runs):
    """One table row from a fit's rounds: median times, largest peak (the
    accuracy is the same in every round: the fits are deterministic)."""
    import statistics

    return {"fit_s": statistics.median(r["fit_s"] for r in runs),
            "cpu_s": statistics.median(r["cpu_s"] for r in runs),
            "peak_mb": max(r["peak_mb"] for r in runs), "acc": runs[0]["acc"],
            "n_labels": runs[0]["n_labels"], "train": runs[0]["train"],
            "test": runs[0]["test"], "all_fit_s": [r["fit_s"] for r in runs]}


if __name__ == "__main__":
    main()
