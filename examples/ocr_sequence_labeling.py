"""Handwritten-word recognition: three sequence models on the bundled OCR letters.

Each word is a sequence of 16x8 binary letter images; the label of a token is
its letter. The usual protocol trains on fold 1 and tests on the other nine
folds. The script compares an averaged structured perceptron, a structural
SVM trained by GDMM and a linear-chain CRF trained by L-BFGS, all predicting
with Viterbi.

Run: ``python examples/ocr_sequence_labeling.py [--max-words N] [--figure F.png]``
(the figure, the training curves of the SSVM and the CRF, needs the ``plot``
extra: ``pip install "structlearn[plot]"``; it goes to the system's temporary
folder unless ``--figure`` names a file, and its path is printed).
"""

import argparse
import os
import tempfile
import time

import numpy as np

from structlearn.datasets import load_ocr_letters
from structlearn.estimators import SequenceCRF, SequencePerceptron, SequenceSSVM


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-words", type=int, default=None,
                        help="use at most this many training and test words")
    parser.add_argument("--figure", default=os.path.join(tempfile.gettempdir(),
                                                         "ocr_convergence.png"),
                        help="where to save the training curves (default: %(default)s)")
    args = parser.parse_args(argv)

    ocr = load_ocr_letters()
    # A constant bias column lets every letter have its own offset.
    X = [np.hstack([w, np.ones((w.shape[0], 1))]) for w in ocr.X]
    train = np.flatnonzero(ocr.folds == 1)
    test = np.flatnonzero(ocr.folds != 1)
    if args.max_words is not None:
        train, test = train[: args.max_words], test[: args.max_words]
    X_train, y_train = [X[i] for i in train], [ocr.y[i] for i in train]
    X_test, y_test = [X[i] for i in test], [ocr.y[i] for i in test]
    n_letters = sum(len(t) for t in y_train)
    print(f"train: {len(train)} words ({n_letters} letters); test: {len(test)} words")

    models = {
        "SequencePerceptron": SequencePerceptron(max_iter=10, random_state=0),
        "SequenceSSVM (GDMM)": SequenceSSVM(C=0.1, max_iter=50, tol=0.05, random_state=0),
        "SequenceCRF (L-BFGS)": SequenceCRF(c2=1.0, max_iter=100),
    }
    for name, model in models.items():
        start = time.perf_counter()
        model.fit(X_train, y_train)
        fit_s = time.perf_counter() - start
        print(f"{name:22s} letter accuracy {model.score(X_test, y_test):.4f}  "
              f"fit {fit_s:.2f} s (first fit includes kernel compilation)")
    save_curves(models, args.figure)


def save_curves(models, path):
    """Objective (and certified gap) per pass of the SSVM and the CRF."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("no figure: matplotlib is not installed (pip install 'structlearn[plot]')")
        return
    from structlearn.plot import plot_convergence

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, name in zip(axes, ("SequenceSSVM (GDMM)", "SequenceCRF (L-BFGS)")):
        plot_convergence(models[name], x="iter", ax=ax)
        ax.set_title(name)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    print(f"training curves saved to {os.path.abspath(path)}")


if __name__ == "__main__":
    main()
