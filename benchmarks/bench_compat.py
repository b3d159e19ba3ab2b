"""Each of CRFsuite's five training algorithms: ``structlearn.compat.CRF``
against ``sklearn_crfsuite.CRF``, same algorithm, same settings, same feature
dicts, each fit in its own process.

Porttinari UPOS (``../shared/data``), the CRFsuite tutorial features
(:func:`structlearn.datasets.token_features`), first 80 % of the sentences
for training, the rest for held-out token accuracy.  Both libraries run with
their defaults for each algorithm (``c2 = 1``; ``--max-iterations`` caps the
epochs of the online algorithms and SGD, default: the libraries' own); fit
time includes building the vocabulary from the dicts, and structlearn's
kernels are compiled on a tiny problem first.  The last column is the
inspection check: how many of sklearn-crfsuite's top-10 transition features
and top-10 state features (by weight, the tutorial's listing) are also
structlearn's top 10, and whether the two top-10 lists are in the same order.

``--data ocr``: the OCR letters instead (train on fold 1, test on the other
folds; one ``pN: 1.0`` attribute per non-zero pixel plus a bias).

Usage::

    .venv/bin/python benchmarks/bench_compat.py [--algorithms lbfgs l2sgd ap pa arow]
        [--sentences N] [--max-iterations N] [--data porttinari|ocr]
"""

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "..", "..", "shared", "data", "porttinari_pos.conllu.gz")


def load(data, n_sentences):
    """Feature dicts and labels, train first: ``(D, L, n_train)``."""
    import numpy as np

    if data == "ocr":
        from structlearn.datasets import load_ocr_letters

        ocr = load_ocr_letters()
        order = [i for i, f in enumerate(ocr.folds) if f == 1] + [
            i for i, f in enumerate(ocr.folds) if f != 1]
        D = [[dict({f"p{j}": 1.0 for j in np.flatnonzero(row)}, bias=1.0) for row in ocr.X[i]]
             for i in order]
        return D, [list(ocr.y[i]) for i in order], int(np.sum(ocr.folds == 1))
    from structlearn.datasets import read_conllu, token_features

    sents = read_conllu(CORPUS, columns=("form", "upos"))
    if n_sentences:
        sents = sents[:n_sentences]
    D = [token_features(s["form"]) for s in sents]
    return D, [list(s["upos"]) for s in sents], int(0.8 * len(sents))


def worker(lib, algorithm, n_sentences, max_iterations, data):
    import numpy as np

    D, L, n_tr = load(data, n_sentences)
    kwargs = {} if max_iterations is None or algorithm == "lbfgs" else {
        "max_iterations": max_iterations}
    if lib == "structlearn":
        from structlearn.compat import CRF

        # kernels compiled / loaded before timing, on enough sentences to pick
        # the same weight storage (dense or pair-stored) as the timed fit
        CRF(algorithm, **kwargs).fit(D[:min(500, n_tr)], L[:min(500, n_tr)])
    else:
        from sklearn_crfsuite import CRF
    model = CRF(algorithm, **kwargs)
    t0 = time.perf_counter()
    model.fit(D[:n_tr], L[:n_tr])
    fit_s = time.perf_counter() - t0
    pred = model.predict(D[n_tr:])
    truth = np.concatenate([np.asarray(t) for t in L[n_tr:]])
    acc = float(np.mean(np.concatenate([np.asarray(p) for p in pred]) == truth))
    top = sorted(model.transition_features_.items(), key=lambda kv: -kv[1])[:10]
    states = sorted(model.state_features_.items(), key=lambda kv: -kv[1])[:10]
    print(json.dumps({"fit_s": fit_s, "acc": acc, "train": n_tr, "test": len(D) - n_tr,
                      "top_transitions": [list(k) for k, _ in top],
                      "top_states": [list(k) for k, _ in states]}))


def run(lib, algorithm, args):
    cmd = [sys.executable, __file__, "--worker", lib, algorithm, "--sentences",
           str(args.sentences), "--data", args.data]
    if args.max_iterations is not None:
        cmd += ["--max-iterations", str(args.max_iterations)]
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=HERE)
    if out.returncode:
        return {"error": out.stderr.strip().splitlines()[-1]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--algorithms", nargs="+", default=["lbfgs", "l2sgd", "ap", "pa", "arow"])
    ap.add_argument("--sentences", type=int, default=0)
    ap.add_argument("--max-iterations", type=int, default=None)
    ap.add_argument("--data", choices=("porttinari", "ocr"), default="porttinari")
    ap.add_argument("--worker", nargs=2)
    args = ap.parse_args()
    if args.worker:
        worker(*args.worker, args.sentences, args.max_iterations, args.data)
        return
    print("| algorithm | structlearn acc | crfsuite acc | diff | structlearn fit s | "
          "crfsuite fit s | time ratio | top-10 transitions shared (same order) | "
          "top-10 state features shared (same order) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for alg in args.algorithms:
        ours, peer = run("structlearn", alg, args), run("crfsuite", alg, args)
        if "error" in ours or "error" in peer:
            print(f"| {alg} | {ours.get('error', '')} | {peer.get('error', '')} |", flush=True)
            continue
        tops = []
        for key in ("top_transitions", "top_states"):
            a, b = [tuple(t) for t in ours[key]], [tuple(t) for t in peer[key]]
            tops.append(f"{len(set(a) & set(b))} / 10 ({'yes' if a == b else 'no'})")
        print(f"| {alg} | {ours['acc']:.4f} | {peer['acc']:.4f} | "
              f"{ours['acc'] - peer['acc']:+.4f} | {ours['fit_s']:.2f} | {peer['fit_s']:.2f} | "
              f"{ours['fit_s'] / peer['fit_s']:.2f}x | {tops[0]} | {tops[1]} |", flush=True)


if __name__ == "__main__":
    main()
