"""Partitioned training on threads: fits with ``n_jobs=2`` against ``n_jobs=1``.

Each section fits the same estimator with ``n_jobs = 1`` and ``2`` (then ``1``
and ``2`` again with ``--rounds 2``, alternating, so both settings see the
same phases of a shared machine) to the same certified gap, and reports the
fit time, passes (rounds), the final certified gap and the held-out score,
and the ratio of the times.

Sections:

* ``porttinari``: ``SequenceSSVM(C=0.1, tol=0.01)`` on Porttinari UPOS+FEATS
  (first ``--sentences`` sentences, the next half as many held out).
* ``bibtex``: ``MultiLabelSSVM(C=0.1, tol=0.01)`` on
  ``../shared/data/multilabel/bibtex.npz`` (its train/test split).
* ``lookalike``: the same chain fit on a generated task of about
  Porttinari's sizes (``make_chain_data``: 1,000 sequences of 19 tokens,
  200 labels, 16,000 sparse features), so the result is not one data set's.

Usage::

    .venv/bin/python benchmarks/bench_parallel_fit.py [--sections porttinari,bibtex,lookalike]
        [--rounds 1] [--jobs 1 2]
"""

import argparse
import time
import warnings

import numpy as np


def _porttinari(path, n_train):
    from structlearn.datasets import read_conllu, token_features, vectorize_sequences

    sents = read_conllu(path, columns=("form", "upos+feats"))
    test = sents[n_train:n_train + n_train // 2]
    sents = sents[:n_train]
    X, vec = vectorize_sequences([token_features(s["form"]) for s in sents])
    Xte, _ = vectorize_sequences([token_features(s["form"]) for s in test], vec)
    y = [np.array(s["upos+feats"]) for s in sents]
    yte = [np.array(s["upos+feats"]) for s in test]
    return X, y, Xte, yte


def _lookalike():
    from structlearn.datasets import make_chain_data

    X, y = make_chain_data(1500, length=19, n_labels=200, n_features=16000,
                           density=20 / 16000, random_state=0)
    return X[:1000], y[:1000], X[1000:], y[1000:]


def _bibtex(path):
    import scipy.sparse as sp

    z = np.load(path, allow_pickle=False)

    def part(p):
        X = sp.csr_matrix((z[f"X_{p}_data"], z[f"X_{p}_indices"], z[f"X_{p}_indptr"]),
                          shape=tuple(z[f"X_{p}_shape"]))
        return X, z[f"Y_{p}"].astype(np.int64)

    return (*part("train"), *part("test"))


def _run(name, make, data, jobs, rounds):
    from sklearn.exceptions import ConvergenceWarning

    X, y, Xte, yte = data
    print(f"\n## {name}\n")
    print("| n_jobs | fit s | passes | final rel. gap | held-out score | local s | merge s |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    times = {j: [] for j in jobs}
    for _ in range(rounds):
        for n_jobs in jobs:
            model = make(n_jobs)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                t0 = time.perf_counter()
                model.fit(X, y)
                t = time.perf_counter() - t0
            times[n_jobs].append(t)
            h = model.history_
            local = sum(r.get("local_time", r["pass_time"]) for r in h)
            merge = sum(r.get("merge_time", 0.0) for r in h)
            print(f"| {n_jobs} | {t:.2f} | {len(h)} | {h[-1]['relative_gap']:.4f} | "
                  f"{model.score(Xte, yte):.4f} | {local:.2f} | {merge:.2f} |", flush=True)
    base = min(times[jobs[0]])
    for n_jobs in jobs[1:]:
        print(f"\nbest fit time n_jobs={n_jobs} / n_jobs={jobs[0]}: "
              f"{min(times[n_jobs]) / base:.2f}x")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sections", default="porttinari,bibtex,lookalike")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--sentences", type=int, default=1000)
    ap.add_argument("--porttinari", default="../shared/data/porttinari_pos.conllu.gz")
    ap.add_argument("--bibtex", default="../shared/data/multilabel/bibtex.npz")
    args = ap.parse_args()
    from structlearn.estimators import MultiLabelSSVM, SequenceSSVM

    def chain(n_jobs):
        return SequenceSSVM(C=0.1, tol=0.01, max_iter=1000, random_state=0, n_jobs=n_jobs)

    def multilabel(n_jobs):
        return MultiLabelSSVM(C=0.1, tol=0.01, max_iter=1000, random_state=0, n_jobs=n_jobs)

    # compile (and warm) the kernels of both settings before timing
    from structlearn.datasets import make_chain_data
    Xw, yw = make_chain_data(20, length=5, n_labels=70, n_features=50, random_state=0)
    for n_jobs in args.jobs:
        chain(n_jobs).set_params(max_iter=2).fit(Xw, yw)
    sections = args.sections.split(",")
    if "porttinari" in sections:
        data = _porttinari(args.porttinari, args.sentences)
        n_tok = sum(len(v) for v in data[1])
        _run(f"Porttinari UPOS+FEATS, {args.sentences} sentences ({n_tok} tokens), "
             "SequenceSSVM(C=0.1, tol=0.01)", chain, data, args.jobs, args.rounds)
    if "lookalike" in sections:
        _run("Look-alike chains (1,000 x 19 tokens, 200 labels, 16,000 features), "
             "SequenceSSVM(C=0.1, tol=0.01)", chain, _lookalike(), args.jobs, args.rounds)
    if "bibtex" in sections:
        _run("bibtex, MultiLabelSSVM(C=0.1, tol=0.01)", multilabel, _bibtex(args.bibtex),
             args.jobs, args.rounds)


if __name__ == "__main__":
    main()
