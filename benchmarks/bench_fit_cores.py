"""Partitioned training across cores: one chain task, ``n_jobs = training_partitions = J``.

A scaling curve for issue-sized machines (16 cores and more). Two parts, in one
run, each J in ``--jobs`` in turn:

* ``to-gap``: ``SequenceSSVM(C=0.1, tol=0.01)`` on a generated chain task
  (``make_chain_data``: ``--sequences`` of ``--length`` tokens, ``--labels``,
  ``--features`` sparse features, ``--nnz`` a token) fitted to the certified
  gap: wall seconds, rounds, seconds in the local passes / merges / the rest
  (certificates, set-up), the final gap and primal value, the held-out score
  and the speed-up over the first J.
* ``per-round`` (``--full-sequences N``, 0 to skip): a bigger task of the same
  shape fitted for ``--full-rounds`` rounds: seconds per round in the local
  passes and the merge, and the whole fit's (certificates included); the
  throughput curve where a fit to the gap would not fit in the time at hand.

``J = 2s`` is the serial solver on two threads (``n_jobs=2``, no
partitions: its passes split by factor type); ``J = 8x16`` is 8 partitions
on 16 threads (each partition's passes split on two).
``J:N`` (to-gap part only) cuts that fit after ``N`` passes: the time
of its first passes where a whole fit would not fit in the time at hand.
``J = 1`` is the serial solver (``training_partitions=None``); ``J = 1d`` the
same with dense weights where it would keep sparse weight rows (from
``SPARSE_WEIGHTS_MIN_ENTRIES`` weights, for memory), the fair single-core
baseline for speed; below that size both are the same fit.  The
kernels are compiled on a small task of the same labels and features first.
Results also go to ``--json`` (rewritten after each fit); ``--verbose`` logs
every pass of the fits to the gap, so a fit cut off still shows its course.

Usage::

    .venv/bin/python benchmarks/bench_fit_cores.py --jobs 1 2 4 8 16 \\
        [--sequences 2500 --length 20 --labels 1000 --features 16000 --nnz 20] \\
        [--full-sequences 50000 --full-rounds 2 --full-jobs 1 16] [--budget 400]
        [--json out.json]
"""

import argparse
import contextlib
import json
import os
import platform
import time
import warnings

import numpy as np


def _task(n_sequences, args, seed):
    from structlearn.datasets import make_chain_data

    return make_chain_data(n_sequences, length=args.length, n_labels=args.labels,
                           n_features=args.features, density=args.nnz / args.features,
                           random_state=seed)


def _model(J, max_iter, partitions, verbose=0):
    from structlearn.estimators import SequenceSSVM

    return SequenceSSVM(C=0.1, tol=0.01, max_iter=max_iter, random_state=0, n_jobs=J,
                        training_partitions=partitions if partitions > 1 else None,
                        verbose=verbose)


@contextlib.contextmanager
def _dense_serial_weights(dense):
    """With ``dense``, the serial solver keeps dense weights whatever their
    size (it switches to sparse weight rows from ``SPARSE_WEIGHTS_MIN_ENTRIES``
    entries, for memory; the partitions' copies are always dense)."""
    from structlearn.estimators import ssvm

    saved = ssvm.SPARSE_WEIGHTS_MIN_ENTRIES
    if dense:
        ssvm.SPARSE_WEIGHTS_MIN_ENTRIES = np.iinfo(np.int64).max
    try:
        yield
    finally:
        ssvm.SPARSE_WEIGHTS_MIN_ENTRIES = saved


def _fit(J, X, y, max_iter, verbose=0):
    """``J``: an int, or ``"1d"`` (the serial solver with dense weights)."""
    from sklearn.exceptions import ConvergenceWarning

    dense = J == "1d"
    label = J
    if dense:
        J, P = 1, 1
    elif isinstance(J, str) and J.endswith("s"):  # threads, no partitions
        J, P = int(J[:-1]), 1
    elif isinstance(J, str):  # "PxJ": P partitions on J threads
        P, J = (int(t) for t in J.split("x"))
    else:
        P = J
    model = _model(J, max_iter, P, verbose)
    with warnings.catch_warnings(), _dense_serial_weights(dense):
        warnings.simplefilter("ignore", ConvergenceWarning)
        t0 = time.perf_counter()
        model.fit(X, y)
        wall = time.perf_counter() - t0
    h = model.history_
    local = sum(r.get("local_time", r["pass_time"]) for r in h)
    merge = sum(r.get("merge_time", 0.0) for r in h)
    return model, dict(J=label, wall=wall, rounds=len(h), local=local, merge=merge,
                       other=wall - local - merge, gap=h[-1]["relative_gap"],
                       primal=h[-1]["primal"])


_START = time.perf_counter()


def _save(args, results):
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


def _over_budget(args, J):
    if args.budget is None or time.perf_counter() - _START < args.budget:
        return False
    print(f"| {J} | skipped: past the {args.budget:.0f} s budget |", flush=True)
    return True


def _to_gap(args, results):
    n_tok = args.sequences * args.length
    print(f"\n## To the certified gap: {args.sequences} x {args.length} tokens ({n_tok:,}), "
          f"{args.labels} labels, {args.features} features ({args.nnz} a token), "
          "SequenceSSVM(C=0.1, tol=0.01)\n", flush=True)
    X, y = _task(args.sequences + args.sequences // 4, args, 0)
    Xte, yte = X[args.sequences:], y[args.sequences:]
    X, y = X[:args.sequences], y[:args.sequences]
    print("| J | fit s | speed-up | rounds | local s | merge s | other s | gap | primal "
          "| held-out |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|", flush=True)
    base = None
    for J in args.jobs:
        if _over_budget(args, J):
            continue
        J, max_iter = _pass_cap(J, args.max_iter)
        model, r = _fit(J, X, y, max_iter, args.verbose)
        r["score"] = float(model.score(Xte, yte))
        if max_iter < args.max_iter:  # cut short: a rate, not a fit to the gap
            r["J"], r["speedup"] = f"{J}:{max_iter}", float("nan")
        else:
            base = base or r["wall"]
            r["speedup"] = base / r["wall"]
        results["to_gap"].append(r)
        _save(args, results)
        print(f"| {r['J']} | {r['wall']:.2f} | {r['speedup']:.2f}x | {r['rounds']} | "
              f"{r['local']:.2f} | {r['merge']:.2f} | {r['other']:.2f} | {r['gap']:.4f} | "
              f"{r['primal']:.6g} | {r['score']:.4f} |", flush=True)


def _per_round(args, results):
    n_tok = args.full_sequences * args.length
    print(f"\n## Per round: {args.full_sequences} x {args.length} tokens ({n_tok:,}), "
          f"{args.labels} labels, {args.full_rounds} rounds each (the last one certified)\n",
          flush=True)
    t0 = time.perf_counter()
    X, y = _task(args.full_sequences, args, 1)
    print(f"(generated in {time.perf_counter() - t0:.1f} s)\n")
    print("| J | local s / round | merge s / round | fit s | speed-up of the rounds | gap |")
    print("|---:|---:|---:|---:|---:|---:|", flush=True)
    base = None
    for J in args.full_jobs or args.jobs:
        if _over_budget(args, J):
            continue
        _, r = _fit(J, X, y, args.full_rounds)
        per = (r["local"] + r["merge"]) / r["rounds"]
        base = base or per
        r["round_speedup"] = base / per
        results["per_round"].append(r)
        _save(args, results)
        print(f"| {J} | {r['local'] / r['rounds']:.2f} | {r['merge'] / r['rounds']:.2f} | "
              f"{r['wall']:.2f} | {r['round_speedup']:.2f}x | {r['gap']:.4f} |", flush=True)
    for base_J in (1, "1d"):
        base = [r for r in results["per_round"] if r["J"] == base_J]
        for r in results["per_round"]:
            if base and r["J"] not in (1, "1d"):
                b = base[0]
                print(f"\nrounds on J={r['J']} against J={base_J}: "
                      f"{(b['local'] + b['merge']) / (r['local'] + r['merge']):.2f}x faster, "
                      f"whole fits (certificates included) {b['wall'] / r['wall']:.2f}x")


def _pass_cap(J, max_iter):
    """``"J:N"``: the fit of ``J`` cut after ``N`` passes; else ``(J, max_iter)``."""
    if isinstance(J, str) and ":" in J:
        J, cap = J.split(":")
        return _job(J), int(cap)
    return J, max_iter


def _job(text):
    if ":" in text and text.rsplit(":", 1)[1].isdigit():
        _job(text.rsplit(":", 1)[0])  # checked here, parsed by _pass_cap
        return text
    if text == "1d" or (text.endswith("s") and text[:-1].isdigit()):
        return text
    if "x" in text and all(t.isdigit() for t in text.split("x", 1)):
        return text
    return int(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=_job, nargs="+", default=[1, 2],
                    help='threads (= partitions); "1d": the serial solver with dense weights; '
                         '"Js": J threads without partitions (the serial solver, its passes '
                         'split by factor type on two threads); "PxJ": P partitions on J '
                         'threads (J = 2P: each partition\'s passes split on two); "J:N": '
                         'J\'s fit to the gap cut after N passes (its time per pass)')
    ap.add_argument("--sequences", type=int, default=2500)
    ap.add_argument("--length", type=int, default=20)
    ap.add_argument("--labels", type=int, default=1000)
    ap.add_argument("--features", type=int, default=16000)
    ap.add_argument("--nnz", type=int, default=20)
    ap.add_argument("--max-iter", type=int, default=1000)
    ap.add_argument("--full-sequences", type=int, default=0)
    ap.add_argument("--full-rounds", type=int, default=2)
    ap.add_argument("--full-jobs", type=_job, nargs="+", default=None,
                    help="the J of the per-round part (default: --jobs)")
    ap.add_argument("--budget", type=float, default=None,
                    help="seconds: no fit starts after this (the rest are reported skipped)")
    ap.add_argument("--json", default=None)
    ap.add_argument("--verbose", action="store_true",
                    help="log every pass of the fits to the gap (time, gap when checked)")
    args = ap.parse_args()

    import numba

    if args.verbose:
        import logging

        logging.basicConfig(level=logging.INFO, format="%(relativeCreated)9.0f ms %(message)s")

    results = dict(cpus=os.cpu_count(), python=platform.python_version(),
                   numpy=np.__version__, numba=numba.__version__, args=vars(args),
                   to_gap=[], per_round=[])
    print(f"{os.cpu_count()} CPUs, Python {results['python']}, numpy {results['numpy']}, "
          f"numba {results['numba']}")
    t0 = time.perf_counter()
    # the same labels and features take the same paths (dense or sparse weights,
    # float32 passes, sorted search): compiled here, not in the first timed fit
    from structlearn.learners import _gdmm_chain_type_split

    most = max([J for J in args.jobs + (args.full_jobs or []) if isinstance(J, int)] + [2])
    Xw, yw = _task(max(20, most), args, 2)
    split_min = _gdmm_chain_type_split.TYPE_SPLIT_MIN_ENTRIES
    _gdmm_chain_type_split.TYPE_SPLIT_MIN_ENTRIES = 0  # the split passes' kernels too
    for J in (1, "1d", most, "2s"):
        _fit(J, Xw, yw, 2)
    _gdmm_chain_type_split.TYPE_SPLIT_MIN_ENTRIES = split_min
    print(f"(kernels compiled in {time.perf_counter() - t0:.1f} s)", flush=True)
    if args.sequences:
        _to_gap(args, results)
    if args.full_sequences:
        _per_round(args, results)


if __name__ == "__main__":
    main()
