"""Speed-up of prediction with n_jobs = 2 over n_jobs = 1 (same model, same
data, one run; outputs checked bit-identical).

Usage::

    .venv/bin/python benchmarks/bench_parallel.py [--sequences 10000] [--labels 50]
"""

import argparse
import time
import warnings

import numpy as np


def best_of(f, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - t0)
    return min(times), out


def main():
    from sklearn.exceptions import ConvergenceWarning

    from structlearn.datasets import make_chain_data
    from structlearn.estimators import SequenceCRF, SequenceSSVM

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sequences", type=int, default=10000)
    ap.add_argument("--length", type=int, default=10)
    ap.add_argument("--labels", type=int, default=50)
    ap.add_argument("--features", type=int, default=500)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    X, y = make_chain_data(300, length=args.length, n_labels=args.labels,
                           n_features=args.features, random_state=0)
    Xb, yb = make_chain_data(args.sequences, length=args.length, n_labels=args.labels,
                             n_features=args.features, random_state=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        models = {"SequenceSSVM": SequenceSSVM(max_iter=5, random_state=0).fit(X, y),
                  "SequenceCRF": SequenceCRF(max_iter=20).fit(X, y)}
    print(f"{args.sequences} sequences of {args.length} tokens, {args.labels} labels, "
          f"{args.features} sparse features; best of {args.repeat}")
    print("| estimator | call | n_jobs=1 s | n_jobs=2 s | speed-up | identical |")
    print("|---|---|---|---|---|---|")
    for name, model in models.items():
        calls = {"predict": lambda m: m.predict(Xb),
                 "predict_topk(k=5)": lambda m: m.predict_topk(Xb, 5),
                 "score": lambda m: m.score(Xb, yb)}
        if hasattr(model, "predict_marginals"):
            calls["predict_marginals"] = lambda m: m.predict_marginals(Xb)
        for call, f in calls.items():
            model.set_params(n_jobs=1)
            f(model)  # compile / warm
            t1, o1 = best_of(lambda: f(model), args.repeat)
            model.set_params(n_jobs=2)
            t2, o2 = best_of(lambda: f(model), args.repeat)
            same = _identical(o1, o2)
            print(f"| {name} | {call} | {t1:.3f} | {t2:.3f} | {t1 / t2:.2f}x | {same} |")


def _identical(a, b):
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_identical(u, v) for u, v in zip(a, b))
    return bool(np.array_equal(np.asarray(a), np.asarray(b)))


if __name__ == "__main__":
    main()
