"""Multilabel prediction with pairwise label interactions inside a scikit-learn pipeline.

The bundled yeast data (103 features, 14 gene-function labels) is split as
usual: the first 1,500 rows for training, the rest for testing. A structural
SVM with one factor per label pair (``pairwise="full"``) is compared with the
same model without interactions (``pairwise="none"``, independent per-label
SVMs), after standard scaling, in a ``Pipeline``.

``C=0.01`` is what 3-fold ``GridSearchCV`` over C in {0.003, 0.01, 0.03, 0.1,
1} picks on the training rows for both models (Hamming accuracy 0.7997 at
0.01 against 0.782 at 1). Both fits stop at a certified 1 % relative duality
gap (``tol=0.01``). At ``C=1``, a weak regularizer for 1,500 summed hinge
losses, the dual rises slowly: 100 passes end at an 87 % gap there.

Run: ``python examples/multilabel_pipeline.py [--max-iter N]``
"""

import argparse
import time

from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from structlearn.datasets import load_yeast
from structlearn.estimators import MultiLabelSSVM


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-iter", type=int, default=100, help="solver passes (default 100)")
    args = parser.parse_args(argv)

    X, Y = load_yeast(return_X_y=True)
    X_train, Y_train, X_test, Y_test = X[:1500], Y[:1500], X[1500:], Y[1500:]
    for pairwise in ("none", "full"):
        model = make_pipeline(
            StandardScaler(),
            MultiLabelSSVM(C=0.01, pairwise=pairwise, tol=0.01, max_iter=args.max_iter,
                           random_state=0),
        )
        start = time.perf_counter()
        model.fit(X_train, Y_train)
        fit_s = time.perf_counter() - start
        print(f"pairwise={pairwise:5s} Hamming accuracy {model.score(X_test, Y_test):.4f}  "
              f"fit {fit_s:.2f} s")


if __name__ == "__main__":
    main()
