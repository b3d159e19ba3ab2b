"""Speed-up of prediction with n_jobs = 2 over n_jobs = 1 (same model, same
data, one run; outputs checked bit-identical).  Each time is the best of
``--repeat`` calls, the two settings called in turn, ``--pause`` seconds
apart (0.5 by default): OpenBLAS's threads spin for a while after a
multi-threaded product, and a two-job call that starts while the one-job
call's BLAS threads still spin shares the cores with them (275,080 OCR
words: 0.58 s against 0.55 s after a pause; ``--pause 0`` measures that).

Usage::

    .venv/bin/python benchmarks/bench_parallel.py [--sequences 10000] [--labels 50]
    .venv/bin/python benchmarks/bench_parallel.py --ocr 40   # OCR words repeated 40 times

``--ocr N``: only ``SequenceSSVM.predict`` (fitted on OCR fold 1, 20 passes)
over the 6,877 OCR words repeated ``N`` times (dense float64 pixels).
``--sizes``: only ``SequenceSSVM.predict`` over the first 50 to 8,000 of the
generated sequences, 12 and 50 labels (where parallel chunks start to pay).
"""

import argparse
import time
import warnings

import numpy as np


def best_of_alternating(model, f, repeat, pause=0.5):
    """Best time of ``repeat`` calls with ``n_jobs=1`` and with ``n_jobs=2``,
    the two taken in turn (a shared machine slows down in phases: both
    settings see the same phases), ``pause`` seconds apart; returns ``(t1,
    t2, out1, out2)``."""
    best = {1: float("inf"), 2: float("inf")}
    outs = {}
    for _ in range(repeat):
        for n_jobs in (1, 2):
            model.set_params(n_jobs=n_jobs)
            time.sleep(pause)
            t0 = time.perf_counter()
            outs[n_jobs] = f(model)
            best[n_jobs] = min(best[n_jobs], time.perf_counter() - t0)
    return best[1], best[2], outs[1], outs[2]


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
    ap.add_argument("--cert-sequences", type=int, default=2000)
    ap.add_argument("--cert-labels", type=int, default=300)
    ap.add_argument("--ocr", type=int, default=0)
    ap.add_argument("--sizes", action="store_true")
    ap.add_argument("--pause", type=float, default=0.5,
                    help="seconds between two timed calls (see the module docstring)")
    args = ap.parse_args()
    if args.ocr:
        return ocr_predict(args.ocr, args.repeat, args.pause)
    if args.sizes:
        return predict_sizes(args)
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
            t1, t2, o1, o2 = best_of_alternating(model, f, args.repeat, args.pause)
            same = _identical(o1, o2)
            print(f"| {name} | {call} | {t1:.3f} | {t2:.3f} | {t1 / t2:.2f}x | {same} |")
    certificate(args)
    blas_concurrency(args.labels, args.repeat)


def predict_sizes(args):
    """``SequenceSSVM.predict`` over growing prefixes of generated sequences
    (``--length`` tokens, ``--features`` sparse features), 12 and 50 labels."""
    from sklearn.exceptions import ConvergenceWarning

    from structlearn.datasets import make_chain_data
    from structlearn.estimators import SequenceSSVM

    print(f"SequenceSSVM.predict, sequences of {args.length} tokens, {args.features} sparse "
          f"features; best of {args.repeat}")
    print("| labels | sequences | token scores | n_jobs=1 ms | n_jobs=2 ms | speed-up |")
    print("|---:|---:|---:|---:|---:|---:|")
    for K in (12, 50):
        X, y = make_chain_data(8000, length=args.length, n_labels=K, n_features=args.features,
                               density=20 / args.features, random_state=1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model = SequenceSSVM(C=0.1, max_iter=5, random_state=0).fit(X[:500], y[:500])
        for n in (50, 500, 2000, 8000):
            model.set_params(n_jobs=1).predict(X[:n])  # warm
            t1, t2, o1, o2 = best_of_alternating(model, lambda m: m.predict(X[:n]), args.repeat,
                                                  args.pause)
            assert _identical(o1, o2)
            print(f"| {K} | {n} | {n * args.length * K:,} | {1e3 * t1:.2f} | {1e3 * t2:.2f} | "
                  f"{t1 / t2:.2f}x |")


def ocr_predict(times, repeat, pause):
    from sklearn.exceptions import ConvergenceWarning

    from structlearn.datasets import load_ocr_letters
    from structlearn.estimators import SequenceSSVM

    ocr = load_ocr_letters()
    train = [i for i, f in enumerate(ocr.folds) if f == 1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = SequenceSSVM(C=0.1, max_iter=20, random_state=0).fit(
            [ocr.X[i] for i in train], [ocr.y[i] for i in train])
    from threadpoolctl import threadpool_limits

    X = list(ocr.X) * times
    model.predict(X[:100])
    t1, t2, o1, o2 = best_of_alternating(model, lambda m: m.predict(X), repeat, pause)
    # n_jobs=1 leaves the BLAS its threads: its token scores' products run on
    # every core; the one-core baseline keeps the BLAS to one thread
    one_core = float("inf")
    model.set_params(n_jobs=1)
    for _ in range(repeat):
        time.sleep(pause)
        with threadpool_limits(1):
            t0 = time.perf_counter()
            model.predict(X)
            one_core = min(one_core, time.perf_counter() - t0)
    print(f"SequenceSSVM.predict over {len(X)} OCR words ({sum(len(x) for x in X)} letters), "
          f"best of {repeat}: n_jobs=1 {t1:.3f} s, n_jobs=2 {t2:.3f} s, speed-up {t1 / t2:.2f}x, "
          f"identical {_identical(o1, o2)}; n_jobs=1 with a one-thread BLAS {one_core:.3f} s, "
          f"speed-up {one_core / t2:.2f}x")


def blas_concurrency(K, repeat, rows=64, calls=20000):
    """Small matrix products (rows x K times K x K, the grouped
    forward-backward's step) through numba's np.dot, on one BLAS thread: two
    batches one after the other against the two in two threads at once."""
    from concurrent.futures import ThreadPoolExecutor

    import numba as nb

    from structlearn._parallel import single_threaded_blas

    @nb.njit(nogil=True)
    def products(A, E, n):
        s = 0.0
        for _ in range(n):
            s += np.dot(A, E)[0, 0]
        return s

    rng = np.random.default_rng(0)
    A, E = rng.random((rows, K)), rng.random((K, K))
    products(A, E, 1)
    best = [float("inf"), float("inf")]
    with single_threaded_blas(), ThreadPoolExecutor(2) as pool:
        for _ in range(repeat):
            t0 = time.perf_counter()
            products(A, E, calls)
            products(A, E, calls)
            best[0] = min(best[0], time.perf_counter() - t0)
            t0 = time.perf_counter()
            list(pool.map(lambda _: products(A, E, calls), range(2)))
            best[1] = min(best[1], time.perf_counter() - t0)
    print(f"\nBLAS from two threads: 2 x {calls} products ({rows} x {K}) @ ({K} x {K}), one "
          f"after the other {best[0]:.3f} s, at once {best[1]:.3f} s, speed-up "
          f"{best[0] / best[1]:.2f}x")


def certificate(args):
    """The SSVM certificate's loss-augmented Viterbi over all training
    sequences (``ChainMonitor.primal``) with 1 and 2 threads."""
    from structlearn.datasets import make_chain_data
    from structlearn.estimators._validation import csr_arrays
    from structlearn.estimators._validation import check_sequences
    from structlearn.learners._ssvm_common import ChainMonitor, ChainProblem

    X, y = make_chain_data(args.cert_sequences, length=args.length, n_labels=args.cert_labels,
                           n_features=args.features, random_state=2)
    Xcat, offsets, ycat = check_sequences(X, y)
    data, indices, indptr = csr_arrays(Xcat)
    classes, codes = np.unique(ycat, return_inverse=True)
    K = classes.shape[0]
    problem = ChainProblem(data, indices, indptr, offsets, codes.astype(np.int64), Xcat.shape[1], K)
    rng = np.random.default_rng(0)
    W, v = rng.normal(size=(Xcat.shape[1], K)), rng.normal(size=(K, K))
    monitors = {n_jobs: ChainMonitor(problem, 1.0, n_jobs=n_jobs) for n_jobs in (1, 2)}
    monitors[1].primal(W, v)  # compile / warm
    best = {1: float("inf"), 2: float("inf")}
    values = {}
    for _ in range(args.repeat):  # the two settings in turn
        for n_jobs, monitor in monitors.items():
            t0 = time.perf_counter()
            values[n_jobs] = monitor.primal(W, v)
            best[n_jobs] = min(best[n_jobs], time.perf_counter() - t0)
    values, times = [values[1], values[2]], [best[1], best[2]]
    print(f"\ncertificate (loss-augmented Viterbi): {args.cert_sequences} sequences of "
          f"{args.length} tokens, {K} labels: n_jobs=1 {times[0]:.3f} s, n_jobs=2 "
          f"{times[1]:.3f} s, speed-up {times[0] / times[1]:.2f}x, identical "
          f"{values[0] == values[1]}")


def _identical(a, b):
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_identical(u, v) for u, v in zip(a, b))
    return bool(np.array_equal(np.asarray(a), np.asarray(b)))


if __name__ == "__main__":
    main()
