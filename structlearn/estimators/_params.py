"""Parameter constraints of the estimators, in scikit-learn's convention.

Each estimator declares ``_parameter_constraints`` (parameter name -> list of
accepted kinds, :mod:`sklearn.utils._param_validation`), and its ``fit`` runs
under :func:`sklearn.base._fit_context`, which checks them before anything
else: a bad value raises ``InvalidParameterError`` (a ``ValueError`` and a
``TypeError``) naming the parameter, the estimator and what it accepts,
exactly as scikit-learn's own estimators do.  What a constraint cannot say
(``n_partitions`` at most the number of classes, a registered inference
back-end) is checked where it is used; ``n_jobs`` set after ``fit`` is
checked again where it is used.
"""

from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import Hidden, Interval, StrOptions

__all__ = ["COMMON", "NONNEGATIVE", "NONNEGATIVE_OR_INF", "POSITIVE", "POSITIVE_INT",
           "deprecated_option"]

# finite reals (NaN and inf refused), and counts
NONNEGATIVE = Interval(Real, 0, np.inf, closed="left")
POSITIVE = Interval(Real, 0, np.inf, closed="neither")
# tolerances: 0 (run to max_iter) up to inf (stop at the first check)
NONNEGATIVE_OR_INF = Interval(Real, 0, None, closed="left")
POSITIVE_INT = Interval(Integral, 1, None, closed="left")

# parameters every estimator has
COMMON = {
    "random_state": ["random_state"],
    "verbose": ["verbose"],
    # None, or a nonzero count (negative counts back from the CPUs: -1 = all)
    "n_jobs": [None, Interval(Integral, None, -1, closed="right"),
               Interval(Integral, 1, None, closed="left")],
}


def deprecated_option(value):
    """A placeholder default (e.g. ``"deprecated"``) accepted but not
    advertised in the error messages."""
    return Hidden(StrOptions({value}))
