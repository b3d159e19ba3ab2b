"""Multilabel structural SVM at hundreds of labels: structlearn against the
authors' C++ (FastStructSVM/Multilabel, GDMM-subFMO) and binary relevance
(``OneVsRestClassifier(LinearSVC(C))``), side by side in one run.

Data: bibtex (159 labels) and corel5k (374 labels) from ``--data-dir`` (the
mulan splits as ``.npz``, see ``shared/data/multilabel/README.md``), and a
synthetic look-alike of a held-out set with about 1,000 labels
(``synthetic1k``: 13,000 / 3,000 samples, 983 labels, 500 binary features,
about 19 labels per sample; :func:`make_lookalike`).

Each method runs in its own process (``--worker``): peak RSS is its
high-water mark, "growth" the part added after the data were loaded and,
for structlearn, after a warm-up fit on a tiny problem compiled the kernels.
structlearn reports passes, the certified relative gap, fit and prediction
time; the C++ runs ``-s 1 -a 1 -c C -m 20 -o 100000`` and reports its own
solve time (20 iterations, no certificate: the program has none); every method's
predictions on the test rows give Hamming accuracy, micro-F1 and example-F1
(``f1_score(average="samples")``).  The C++ model file is decoded with the
program's own test-set evaluation is not used: its metrics are left blank.

Usage::

    .venv/bin/python benchmarks/bench_multilabel.py --data-dir ../shared/data/multilabel \\
        [--sets bibtex:0.1 corel5k:1 synthetic1k:0.1] [--cpp path/to/train] \\
        [--pairwise auto full none]
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np
import scipy.sparse as sp

from _memory import peak_kb, rss_kb

HERE = os.path.dirname(os.path.abspath(__file__))


def make_lookalike(random_state=0):
    """A synthetic look-alike of a ~1,000-label held-out set: 13,000 / 3,000
    samples, 983 labels, about 19 labels and 19 binary features per sample
    out of 500 (:func:`structlearn.datasets.make_sparse_multilabel`)."""
    from structlearn.datasets import make_sparse_multilabel

    X, Y = make_sparse_multilabel(16000, n_labels=983, n_features=500, labels_per_sample=19,
                                  words_per_label=10, word_rate=0.08, background=4.0,
                                  random_state=random_state)
    return X[:13000], Y[:13000], X[13000:], Y[13000:]


def load_set(name, data_dir):
    if name == "synthetic1k":
        return make_lookalike()
    z = np.load(os.path.join(data_dir, f"{name}.npz"))

    def part(p):
        X = sp.csr_matrix((z[f"X_{p}_data"], z[f"X_{p}_indices"], z[f"X_{p}_indptr"]),
                          shape=tuple(z[f"X_{p}_shape"]))
        # int64 targets: OneVsRestClassifier permutes the columns of an int8
        # indicator matrix (scikit-learn 1.9.1), which ruins its scores
        return X, z[f"Y_{p}"].astype(np.int64)

    return (*part("train"), *part("test"))


def metrics(Y, P):
    from sklearn.metrics import f1_score

    return {"hamming": float((P == Y).mean()),
            "micro_f1": float(f1_score(Y, P, average="micro", zero_division=0)),
            "example_f1": float(f1_score(Y, P, average="samples", zero_division=0)),
            "predicted_labels_per_sample": float(P.sum(1).mean())}


def worker(method, name, C, data_dir, pairwise):
    warnings.simplefilter("ignore")
    X, Y, Xt, Yt = load_set(name, data_dir)
    out = {"method": method, "set": name, "C": C, "n_labels": Y.shape[1]}
    if method == "structlearn":
        from structlearn.estimators import MultiLabelSSVM

        # compile the kernels on a tiny problem first: growth is the fit's own
        rng = np.random.default_rng(0)
        Ys = (rng.random((40, 30)) < 0.2).astype(int)
        Ys[:, 0] = 1
        MultiLabelSSVM(C=C, pairwise=pairwise, max_iter=2).fit(rng.random((40, 5)), Ys).predict(
            rng.random((4, 5)))
        base = rss_kb()
        t = time.perf_counter()
        model = MultiLabelSSVM(C=C, pairwise=pairwise, random_state=0).fit(X, Y)
        out["fit_s"] = time.perf_counter() - t
        checked = [h for h in model.history_ if h["checked"]]
        out.update(passes=model.n_iter_, rel_gap=checked[-1]["relative_gap"],
                   min_dual=min(h["dual"] for h in checked),
                   s_per_pass=float(np.median([h["pass_time"] for h in model.history_])),
                   active_per_sample=model.history_[-1]["active_set_size"],
                   pairwise=pairwise, n_edges=int(model._edges.sum()))
        t = time.perf_counter()
        P = model.predict(Xt)
        out["predict_s"] = time.perf_counter() - t
    else:
        from sklearn.multiclass import OneVsRestClassifier
        from sklearn.svm import LinearSVC

        base = rss_kb()
        t = time.perf_counter()
        model = OneVsRestClassifier(LinearSVC(C=C)).fit(X, Y)
        out["fit_s"] = time.perf_counter() - t
        t = time.perf_counter()
        P = model.predict(Xt)
        out["predict_s"] = time.perf_counter() - t
    out["peak_rss_mb"] = peak_kb() / 1024
    out["growth_mb"] = (peak_kb() - base) / 1024
    out.update(metrics(Yt, np.asarray(P)))
    print(json.dumps(out))


def write_svm(path, X, Y):
    X = sp.csr_matrix(X)
    with open(path, "w") as fh:
        for i in range(X.shape[0]):
            labs = ",".join(str(j) for j in np.nonzero(Y[i])[0])
            a, b = X.indptr[i], X.indptr[i + 1]
            feats = " ".join(f"{j + 1}:{v:g}" for j, v in zip(X.indices[a:b], X.data[a:b]))
            fh.write(f"{labs} {feats}\n")


def run_cpp(binary, name, C, data_dir, iters=20):
    X, Y, _, _ = load_set(name, data_dir)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "train.svm")
        write_svm(path, X, Y)
        # -o: no training-accuracy report inside the 20 iterations (it is
        # not timed by the program but takes minutes at hundreds of labels)
        cmd = ["/usr/bin/time", "-v", binary, "-s", "1", "-a", "1", "-c", str(C), "-m",
               str(iters), "-o", "100000", path, os.path.join(tmp, "model")]
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp)
    err = proc.stderr
    solve = re.findall(r"overall time=([0-9.eE+-]+)", err)
    rss = re.findall(r"Maximum resident set size \(kbytes\): (\d+)", err)
    per_iter = re.findall(r"i=(\d+),.*?overall time=([0-9.eE+-]+)", err)
    return {"method": "cpp", "set": name, "C": C, "fit_s": float(solve[-1]) if solve else None,
            "iterations": iters, "peak_rss_mb": int(rss[-1]) / 1024 if rss else None,
            "s_per_iter": float(solve[-1]) / iters if solve else None,
            "iters_logged": len(per_iter)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-dir", default=os.path.join(HERE, "..", "..", "shared", "data",
                                                       "multilabel"))
    ap.add_argument("--sets", nargs="+", default=["bibtex:0.1", "corel5k:1", "synthetic1k:0.1"])
    ap.add_argument("--pairwise", nargs="+", default=["auto"])
    ap.add_argument("--cpp", default=None, help="the C++ Multilabel/train binary")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per worker")
    ap.add_argument("--worker", nargs=5, metavar=("METHOD", "SET", "C", "DIR", "PAIRWISE"))
    args = ap.parse_args()
    if args.worker:
        m, s, c, d, pw = args.worker
        worker(m, s, float(c), d, pw)
        return
    for spec in args.sets:
        name, C = spec.split(":")
        rows = []
        jobs = [("structlearn", pw) for pw in args.pairwise] + [("ovr", "none")]
        for method, pw in jobs:
            try:
                proc = subprocess.run([sys.executable, __file__, "--worker", method, name, C,
                                       args.data_dir, pw], capture_output=True, text=True,
                                      timeout=args.timeout)
            except subprocess.TimeoutExpired:
                rows.append({"method": method, "pairwise": pw,
                             "error": f"no result within {args.timeout} s"})
                continue
            line = [x for x in proc.stdout.splitlines() if x.startswith("{")]
            rows.append(json.loads(line[-1]) if line else {"method": method, "pairwise": pw,
                                                          "error": proc.stderr[-500:]})
        if args.cpp:
            rows.append(run_cpp(args.cpp, name, float(C), args.data_dir))
        for r in rows:
            print(json.dumps({k: (round(v, 5) if isinstance(v, float) else v)
                              for k, v in r.items()}), flush=True)
        cpp = [r for r in rows if r["method"] == "cpp" and r.get("fit_s")]
        ovr = [r for r in rows if r["method"] == "ovr" and "hamming" in r]
        for r in rows:
            if r["method"] != "structlearn" or "fit_s" not in r:
                continue
            line = f"{name} C={C} pairwise={r['pairwise']}:"
            if cpp:
                line += (f" fit / C++ 20 iter = {r['fit_s'] / cpp[0]['fit_s']:.2f}x,"
                         f" s per pass / C++ s per iter = "
                         f"{r['s_per_pass'] / cpp[0]['s_per_iter']:.2f}x,"
                         f" growth {r['growth_mb']:.0f} MB vs C++ peak "
                         f"{cpp[0]['peak_rss_mb']:.0f} MB;")
            if ovr:
                line += (f" Hamming {r['hamming']:.5f} vs OvR {ovr[0]['hamming']:.5f},"
                         f" example-F1 {r['example_f1']:.4f} vs {ovr[0]['example_f1']:.4f}")
            print(line, flush=True)


if __name__ == "__main__":
    main()
