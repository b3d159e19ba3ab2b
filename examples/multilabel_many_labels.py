"""Multilabel prediction with hundreds of labels: structural SVM against binary relevance.

With ``--data bibtex.npz`` (the mulan bibtex split in the ``.npz`` layout of
``shared/data/multilabel/README.md``: ``X_train_data``, ``X_train_indices``,
``X_train_indptr``, ``X_train_shape``, ``Y_train`` and the same for
``X_test``/``Y_test``) the script trains on bibtex (159 labels, 4,880
documents); without it, on synthetic bag-of-words data of the same shape
(:func:`structlearn.datasets.make_sparse_multilabel`).

Three models at ``C=0.1``: ``MultiLabelSSVM`` with its default label
structure (the Chow-Liu tree of the training labels: exact max-product
prediction, exact certificate), the same solver without interactions
(``pairwise="none"``), and scikit-learn's ``OneVsRestClassifier(LinearSVC)``.
It prints Hamming accuracy, micro-F1 and example-F1 on the test rows with
fit and prediction times, and saves the structural SVM's convergence (primal,
certified dual and gap per pass) to ``multilabel_convergence.png`` in the
system's temporary folder (``--figure`` to choose the file; its path is
printed).

Run: ``python examples/multilabel_many_labels.py [--data bibtex.npz] [--max-iter N] [--figure F.png]``
"""

import argparse
import os
import tempfile
import time
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.metrics import f1_score
from sklearn.multiclass import OneVsRestClassifier
from sklearn.svm import LinearSVC

from structlearn.datasets import make_sparse_multilabel
from structlearn.estimators import MultiLabelSSVM


def load(path, n_samples):
    """Train and test parts of a mulan ``.npz`` file, or synthetic look-alikes."""
    if path is None:
        X, Y = make_sparse_multilabel(n_samples, n_labels=159, n_features=1836,
                                      labels_per_sample=2.4, words_per_label=40, word_rate=0.3,
                                      background=40.0, random_state=0)
        cut = n_samples * 2 // 3
        return X[:cut], Y[:cut], X[cut:], Y[cut:]
    z = np.load(path)

    def part(name):
        X = sp.csr_matrix((z[f"X_{name}_data"], z[f"X_{name}_indices"], z[f"X_{name}_indptr"]),
                          shape=tuple(z[f"X_{name}_shape"]))
        return X, z[f"Y_{name}"].astype(np.int64)

    return (*part("train"), *part("test"))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=None, help="mulan .npz file (default: synthetic)")
    parser.add_argument("--n-samples", type=int, default=7000,
                        help="synthetic samples, train and test (default 7000)")
    parser.add_argument("--max-iter", type=int, default=300, help="solver passes (default 300)")
    parser.add_argument("--C", type=float, default=0.1)
    parser.add_argument("--figure", default=os.path.join(tempfile.gettempdir(),
                                                         "multilabel_convergence.png"),
                        help="where to save the convergence plot (default: %(default)s)")
    args = parser.parse_args(argv)

    X, Y, X_test, Y_test = load(args.data, args.n_samples)
    print(f"{X.shape[0]} training / {X_test.shape[0]} test samples, {X.shape[1]} features, "
          f"{Y.shape[1]} labels, {Y.sum(1).mean():.1f} labels per sample")
    models = {
        "MultiLabelSSVM (label tree)": MultiLabelSSVM(C=args.C, max_iter=args.max_iter,
                                                      random_state=0),
        "MultiLabelSSVM (no pairs)": MultiLabelSSVM(C=args.C, pairwise="none",
                                                    max_iter=args.max_iter, random_state=0),
        "OneVsRest(LinearSVC)": OneVsRestClassifier(LinearSVC(C=args.C)),
    }
    for name, model in models.items():
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            model.fit(X, Y)
        fit_s = time.perf_counter() - start
        start = time.perf_counter()
        P = model.predict(X_test)
        predict_s = time.perf_counter() - start
        line = (f"{name:28s} Hamming {np.mean(P == Y_test):.4f}  "
                f"micro-F1 {f1_score(Y_test, P, average='micro', zero_division=0):.4f}  "
                f"example-F1 {f1_score(Y_test, P, average='samples', zero_division=0):.4f}  "
                f"fit {fit_s:.2f} s  predict {predict_s:.3f} s")
        if hasattr(model, "history_"):
            last = [r for r in model.history_ if r["checked"]][-1]
            line += f"  passes {model.n_iter_}  certified gap {last['relative_gap']:.4f}"
        print(line)

    try:
        import matplotlib

        matplotlib.use("Agg")
        from structlearn.plot import plot_convergence

        ax = plot_convergence(models["MultiLabelSSVM (label tree)"], x="iter")
        ax.set_title("MultiLabelSSVM: primal, certified dual and gap per pass")
        ax.figure.savefig(args.figure, dpi=100, bbox_inches="tight")
        print(f"convergence plot: {os.path.abspath(args.figure)}")
    except ImportError:
        print("matplotlib is not installed: no convergence plot")


if __name__ == "__main__":
    main()
