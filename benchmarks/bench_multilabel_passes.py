"""Time the passes of ``MultiLabelSSVM`` fits, for comparing two versions of
the pass kernels (the checkout on ``PYTHONPATH``) on the same data.

Each data set: one fit to warm up, then ``--repeat`` fits of ``--passes``
passes with no certificate but the last (``tol=0``, ``check_every`` past
the end); it prints the least summed time of the passes after the first two
(which fill the active sets) and before the last, and the last primal value,
which two versions with the same iterates print alike::

    PYTHONPATH=/path/to/checkout-a .venv/bin/python benchmarks/bench_multilabel_passes.py
    .venv/bin/python benchmarks/bench_multilabel_passes.py --n-jobs 2

Alternate the two versions' runs: this machine's speed drifts between runs.
``--in-sample-order`` visits the samples in their order every pass instead
of a fresh permutation (not a valid way to train: a measure of what the
passes' cache misses cost).
Data: ``bibtex`` and ``corel5k`` (``../shared/data/multilabel``),
``bibtex-lookalike`` (4,880 samples, 159 labels, 1,836 words) and
``synthetic1k`` (13,000 samples, 983 labels, 500 features).
"""

import argparse
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def _data(name, shared):
    if name == "synthetic1k":
        from bench_multilabel import make_lookalike

        return make_lookalike()[:2]
    if name == "bibtex-lookalike":
        from bench_parallel_fit import _bibtex_lookalike

        return _bibtex_lookalike()[:2]
    from bench_parallel_fit import _bibtex

    return _bibtex(os.path.join(shared, f"{name}.npz"))[:2]


class _SampleOrder:
    """Stands for the fit's random state where it draws each pass's order."""

    @staticmethod
    def permutation(n):
        import numpy as np

        return np.arange(n)


def _visit_in_sample_order():
    from structlearn.learners import gdmm_multilabel

    fit = gdmm_multilabel.fit_gdmm_multilabel

    def in_order(problem, **kwargs):
        return fit(problem, **dict(kwargs, rng=_SampleOrder()))

    gdmm_multilabel.fit_gdmm_multilabel = in_order


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default="bibtex,corel5k")
    ap.add_argument("--passes", type=int, default=12)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--n-jobs", type=int, default=1)
    ap.add_argument("--shared", default="../shared/data/multilabel")
    ap.add_argument("--in-sample-order", action="store_true")
    args = ap.parse_args()
    if args.in_sample_order:
        _visit_in_sample_order()
    from structlearn.estimators import MultiLabelSSVM

    warnings.simplefilter("ignore")
    out = []
    for name in args.data.split(","):
        X, Y = _data(name, args.shared)

        def fit():
            model = MultiLabelSSVM(C=0.1, tol=0.0, max_iter=args.passes, random_state=0,
                                   n_jobs=args.n_jobs, check_every=args.passes + 1)
            model.fit(X, Y)
            timed = model.history_[2:-1]
            return sum(r["pass_time"] for r in timed), model.history_[-1]["primal"]

        fit()
        runs = []
        for _ in range(args.repeat):
            time.sleep(0.3)  # threads of the call before may still spin
            runs.append(fit())
        best, primal = min(t for t, _ in runs), runs[-1][1]
        out.append(f"{name} {best:.3f} s (primal {primal:.6f})")
    print(f"n_jobs={args.n_jobs}, passes 3-{args.passes - 1}: " + " | ".join(out))


if __name__ == "__main__":
    main()
