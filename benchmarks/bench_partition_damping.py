"""Passes to the certified gap against the number of training partitions.

The partitions' damping (:mod:`structlearn.learners._damping`) decides how
many more passes a partitioned fit needs than one partition; the passes do
not depend on the threads, so this runs on any machine.  For each task and
each P in ``--partitions``: ``SequenceSSVM(C=0.1, tol=0.01,
training_partitions=P, solver=--solver)`` (P = 1: no partitions), fitted on ``--n-jobs``
threads: passes, their ratio to P = 1's, the final certified gap, primal
value, held-out accuracy, seconds, and the last round's damping (weight
rows, transitions) where the fit records it.

Tasks (``--tasks``): ``lookalike``, ``lookalike2``, ``ocr``, ``porttinari``
(``bench_parallel_fit``'s), ``wide`` (``--wide-sequences`` of 20 tokens,
1,000 labels, 16,000 features, 20 a token: ``bench_fit_cores``' shape).

Multilabel tasks (``bibtex``, ``corel5k``, ``bibtex-lookalike``,
``synthetic1k``: ``bench_parallel_fit``'s): ``MultiLabelSSVM(C=0.1, tol=0.01,
training_partitions=P)`` over the labels' Chow-Liu tree and the
``--extra-edges`` most frequent label pairs outside it (cycles: the samples
are partitioned, not the labels); held-out score is ``score``.

``--random-multilabel N``: instead, N small generated multilabel tasks
(20-400 samples, 3-29 labels on a cycle, P up to 64, ``C`` from 0.01 to
30), the same columns.

``--random N``: instead, N small generated chain tasks (sizes, ``C`` and P
drawn from seeds 0..N-1; P up to one sequence per partition), each fitted
with ``tol=0.01`` by ``--solver``: passes, final gap, the least damping of its rounds.

Usage::

    .venv/bin/python benchmarks/bench_partition_damping.py --tasks lookalike,lookalike2 \\
        --partitions 1 2 4 8 16
    PYTHONPATH=<another checkout> .venv/bin/python benchmarks/bench_partition_damping.py ...
"""

import argparse
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_parallel_fit import (_bibtex, _bibtex_lookalike, _lookalike,  # noqa: E402
                                _lookalike_small_k, _ocr, _porttinari)

def _synthetic1k():
    from bench_multilabel import make_lookalike

    return make_lookalike()


MULTILABEL = {"bibtex": lambda: _bibtex("../shared/data/multilabel/bibtex.npz"),
              "corel5k": lambda: _bibtex("../shared/data/multilabel/corel5k.npz"),
              "bibtex-lookalike": _bibtex_lookalike, "synthetic1k": _synthetic1k}


def _wide(n_sequences):
    from structlearn.datasets import make_chain_data

    X, y = make_chain_data(n_sequences + n_sequences // 5, length=20, n_labels=1000,
                           n_features=16000, density=20 / 16000, random_state=0)
    return X[:n_sequences], y[:n_sequences], X[n_sequences:], y[n_sequences:]


def _cyclic_edges(Y, extra):
    """The labels' Chow-Liu tree and the ``extra`` label pairs seen together
    most often outside it (int64 (n_edges, 2), ``a < b``)."""
    import scipy.sparse as sp

    from structlearn.graphs.label_graphs import chow_liu_edges

    tree = chow_liu_edges(Y)
    co = sp.triu(sp.csr_matrix(Y, dtype=np.float64).T @ sp.csr_matrix(Y, dtype=np.float64),
                 1).tocoo()
    in_tree = {(int(a), int(b)) for a, b in tree}
    pairs = [(int(co.row[i]), int(co.col[i])) for i in np.argsort(-co.data, kind="stable")
             if (int(co.row[i]), int(co.col[i])) not in in_tree]
    return np.array(sorted(in_tree | set(pairs[:extra])), dtype=np.int64)


def _score(model, X, y):
    """Token accuracy of a chain model; ``score`` of a multilabel one."""
    if not isinstance(y, list):
        return float(model.score(X, y))
    pred = model.predict(X)
    return float(np.mean(np.concatenate(pred) == np.concatenate(y)))


def _fit_row(model, X, y, task):
    """Fit ``model`` and print the row ``task`` (its columns, formatted)
    followed by the passes, the final gap and the least damping of its rounds."""
    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        h = model.fit(X, y).history_
    least = (np.min([r["damping"] for r in h], axis=0) if "damping" in h[-1] else None)
    print(f"{task}{len(h):>8}{h[-1]['relative_gap']:>9.4f}  "
          f"{'' if least is None else '%.2f, %.2f' % tuple(least)}", flush=True)


def random_tasks(count, n_jobs, solver="gdmm"):
    """Small generated tasks, many partitions, ``C`` from 0.01 to 30."""
    from structlearn.datasets import make_chain_data
    from structlearn.estimators import SequenceSSVM

    print(f"{'seed':>4}{'seqs':>6}{'labels':>7}{'feats':>6}{'P':>4}{'C':>8}{'passes':>8}"
          f"{'gap':>9}  least damping")
    for seed in range(count):
        rng = np.random.default_rng(seed)
        n, K, d = int(rng.integers(4, 60)), int(rng.integers(2, 40)), int(rng.integers(5, 300))
        X, y = make_chain_data(n, length=int(rng.integers(1, 9)), n_labels=K, n_features=d,
                               density=float(rng.uniform(0.02, 0.5)), random_state=seed)
        P, C = int(rng.integers(2, n + 1)), float(10 ** rng.uniform(-2, 1.5))
        model = SequenceSSVM(C=C, tol=0.01, max_iter=3000, random_state=seed, n_jobs=n_jobs,
                             training_partitions=P, solver=solver)
        _fit_row(model, X, y, f"{seed:>4}{n:>6}{K:>7}{d:>6}{P:>4}{C:>8.3f}")


def random_multilabel_tasks(count, n_jobs):
    """Small generated multilabel tasks over a cycle of labels (so that the
    samples are partitioned), many partitions, ``C`` from 0.01 to 30."""
    from structlearn.datasets import make_sparse_multilabel
    from structlearn.estimators import MultiLabelSSVM

    print(f"{'seed':>4}{'samples':>8}{'labels':>7}{'feats':>6}{'P':>4}{'C':>8}{'rounds':>8}"
          f"{'gap':>9}  least damping")
    for seed in range(count):
        rng = np.random.default_rng(1000 + seed)
        n, L, d = int(rng.integers(20, 400)), int(rng.integers(3, 30)), int(rng.integers(10, 400))
        X, Y = make_sparse_multilabel(n, n_labels=L, n_features=d,
                                      labels_per_sample=float(rng.uniform(1.0, min(L, 6))),
                                      random_state=seed)
        edges = np.sort([[i, (i + 1) % L] for i in range(L)], axis=1)
        P, C = int(rng.integers(2, min(n, 64) + 1)), float(10 ** rng.uniform(-2, 1.5))
        model = MultiLabelSSVM(C=C, tol=0.01, max_iter=3000, random_state=seed, n_jobs=n_jobs,
                               pairwise=edges, training_partitions=P)
        _fit_row(model, X, Y, f"{seed:>4}{n:>8}{L:>7}{d:>6}{P:>4}{C:>8.3f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", default="lookalike,lookalike2,ocr")
    ap.add_argument("--partitions", type=int, nargs="+", default=[1, 2, 4, 8, 16])
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--max-iter", type=int, default=1000)
    ap.add_argument("--sentences", type=int, default=1000)
    ap.add_argument("--porttinari", default="../shared/data/porttinari_pos.conllu.gz")
    ap.add_argument("--wide-sequences", type=int, default=2500)
    ap.add_argument("--random", type=int, default=0)
    ap.add_argument("--random-multilabel", type=int, default=0)
    ap.add_argument("--extra-edges", type=int, default=16)
    ap.add_argument("--solver", default="gdmm", help="the chain tasks' solver (gdmm or bcfw)")
    args = ap.parse_args()
    if args.random:
        return random_tasks(args.random, args.n_jobs, args.solver)
    if args.random_multilabel:
        return random_multilabel_tasks(args.random_multilabel, args.n_jobs)

    from sklearn.exceptions import ConvergenceWarning

    from structlearn.estimators import MultiLabelSSVM, SequenceSSVM

    loaders = {"lookalike": _lookalike, "lookalike2": _lookalike_small_k, "ocr": _ocr,
               "porttinari": lambda: _porttinari(args.porttinari, args.sentences),
               "wide": lambda: _wide(args.wide_sequences)}
    print(f"{'task':<11}{'P':>4}{'passes':>8}{'x P=1':>7}{'gap':>9}{'primal':>13}"
          f"{'held-out':>10}{'s':>9}  last damping")
    for task in args.tasks.split(","):
        X, y, Xte, yte = (MULTILABEL.get(task) or loaders[task])()
        edges = _cyclic_edges(y, args.extra_edges) if task in MULTILABEL else None
        base = None
        for P in args.partitions:
            settings = dict(C=0.1, tol=0.01, max_iter=args.max_iter, random_state=0,
                            n_jobs=args.n_jobs, training_partitions=None if P == 1 else P)
            model = (MultiLabelSSVM(pairwise=edges, **settings) if edges is not None
                     else SequenceSSVM(solver=args.solver, **settings))
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                model.fit(X, y)
            seconds = time.perf_counter() - t0
            h = model.history_
            passes = len(h)
            base = base or passes
            damping = h[-1].get("damping")
            print(f"{task:<11}{P:>4}{passes:>8}{passes / base:>7.2f}"
                  f"{h[-1]['relative_gap']:>9.4f}{h[-1]['primal']:>13.4f}"
                  f"{_score(model, Xte, yte):>10.4f}{seconds:>9.1f}  "
                  f"{'' if damping is None else '%.2f, %.2f' % tuple(damping)}", flush=True)


if __name__ == "__main__":
    main()
