"""The Viterbi kernel chosen by the cost model alone against the one timed on
a slice of the batch (``timed_transition_table``), in one run on the same
model: the SSVM certificate (loss-augmented Viterbi over the training
sequences), ``predict`` and ``predict_topk`` (the list Viterbi, its own
cost model).

Model: ``SequenceSSVM(C=0.1, max_iter=40, random_state=0)`` on the first
1,000 Porttinari sentences (UPOS+FEATS, 212 tags, tutorial features), its
``transition_`` as GDMM leaves it (mostly zero).  Two look-alikes of other
sizes (``make_chain_data``) are run too, so that no one data set decides.

Usage::

    .venv/bin/python benchmarks/bench_viterbi_choice.py [--repeat 3]
"""

import argparse
import warnings

import numpy as np
from bench_certificate import best_of


def training_problem(model, X, y):
    """The certificate's problem over ``(X, y)`` with ``model``'s classes."""
    from structlearn.estimators._validation import check_sequences, csr_arrays
    from structlearn.learners._ssvm_common import ChainProblem

    Xcat, offsets, ycat = check_sequences(X, y)
    codes = np.searchsorted(model.classes_, ycat).astype(np.int64)
    data, indices, indptr = csr_arrays(Xcat)
    return ChainProblem(data, indices, indptr, offsets, codes, Xcat.shape[1],
                        model.classes_.shape[0])


def compare(name, model, X, y, repeat):
    import structlearn.inference.chains.viterbi as vit
    from structlearn.learners._ssvm_common import ChainMonitor

    problem = training_problem(model, X, y)
    K = model.classes_.shape[0]
    T = model.transition_
    fill = np.count_nonzero(T) / T.size
    rule = vit.sparse_transition_table(T) is not None
    rule_topk = vit.sparse_transition_table(T, "topk", 5) is not None
    print(f"\n## {name}: K = {K}, transition fill {fill:.3f}, the cost models pick "
          f"{'sparse' if rule else 'dense'} (Viterbi), {'sparse' if rule_topk else 'dense'} "
          "(list Viterbi, k = 5)\n")
    print("| call | cost model's kernel s | timed choice s | ratio | same output |")
    print("|---|---:|---:|---:|---|")
    Xb = list(X) * 5
    monitor = ChainMonitor(problem, 0.1)
    W = np.ascontiguousarray(model.coef_.T)
    calls = {"certificate (loss-augmented Viterbi)": lambda: monitor.primal(W, T),
             "predict (5 x the training sequences)": lambda: model.predict(Xb),
             "predict_topk(k=5) (the training sequences)": lambda: model.predict_topk(X, 5)}
    for call, f in calls.items():
        f()  # compile / load both kernels
        saved = vit.TIMED_CHOICE_MIN_WORK
        vit.TIMED_CHOICE_MIN_WORK = np.inf
        try:
            t_rule, out_rule = best_of(f, repeat)
        finally:
            vit.TIMED_CHOICE_MIN_WORK = saved
        t_timed, out_timed = best_of(f, repeat)
        if isinstance(out_rule, tuple):  # predict_topk: labels and scores
            same = all(np.array_equal(a, b) for part_rule, part_timed in zip(out_rule, out_timed)
                       for a, b in zip(part_rule, part_timed))
        elif isinstance(out_rule, list):
            same = all(np.array_equal(a, b) for a, b in zip(out_rule, out_timed))
        else:
            same = out_rule == out_timed
        print(f"| {call} | {t_rule:.3f} | {t_timed:.3f} | {t_timed / t_rule:.2f}x | {same} |")


def main():
    from bench_parallel_fit import _porttinari
    from sklearn.exceptions import ConvergenceWarning

    from structlearn.datasets import make_chain_data
    from structlearn.estimators import SequenceSSVM

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--porttinari", default="../shared/data/porttinari_pos.conllu.gz")
    args = ap.parse_args()
    data = {"Porttinari, 1,000 sentences": _porttinari(args.porttinari, 1000)[:2],
            "look-alike (make_chain_data: 1,000 x 12 tokens, 300 labels, 8,000 features)":
                make_chain_data(1000, length=12, n_labels=300, n_features=8000,
                                density=15 / 8000, random_state=2),
            "look-alike (make_chain_data: 3,000 x 12 tokens, 50 labels, 5,000 features)":
                make_chain_data(3000, length=12, n_labels=50, n_features=5000,
                                density=15 / 5000, random_state=1)}
    for name, (X, y) in data.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model = SequenceSSVM(C=0.1, max_iter=40, random_state=0).fit(X, y)
        compare(name, model, X, y, args.repeat)


if __name__ == "__main__":
    main()
