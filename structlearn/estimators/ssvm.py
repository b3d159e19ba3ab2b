"""Structural SVM estimators trained by dual-decomposed GDMM (or BCFW / SSG)."""

import logging
import numbers

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from ._base import SequenceEstimatorMixin
from ._validation import (
    _check_positive_int,
    check_n_classes,
    check_sequences,
    csr_arrays,
    encode_sequence_labels,
)

__all__ = ["SequenceSSVM"]

logger = logging.getLogger(__name__)

_SOLVERS = ("gdmm", "bcfw", "ssg")
_ORACLES = ("sublinear", "dense")
# largest weight matrix (n_features * n_classes entries) accepted
_MAX_WEIGHTS = 2**31 - 1


def _check_positive_real(value, name, allow_zero=False):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number; got {value!r}")
    value = float(value)
    ok = (value >= 0.0 if allow_zero else value > 0.0) and np.isfinite(value)
    if not ok:
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be a finite number {bound}; got {value!r}")
    return value


def _check_choice(value, name, choices):
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}; got {value!r}")
    return value


def _check_sparse_indices(indices, indptr, n_features, name="X"):
    """Reject index arrays that point outside the matrix (corrupted or overflowed)."""
    if indices.size and (indices.min() < 0 or indices.max() >= n_features):
        raise ValueError(
            f"{name} has sparse column indices outside [0, {n_features}) "
            "(integer index overflow or a corrupted sparse matrix)"
        )
    if indptr.size and (indptr[0] != 0 or np.any(np.diff(indptr) < 0)):
        raise ValueError(f"{name} has a corrupted sparse index pointer (indptr)")


def _check_weight_size(n_features, n_labels):
    if int(n_features) * int(n_labels) > _MAX_WEIGHTS:
        raise ValueError(
            f"n_features * n_classes = {n_features} * {n_labels} exceeds {_MAX_WEIGHTS}: "
            "the weight matrix would overflow 32-bit sizes; reduce the feature space"
        )


class _SSVMParamsMixin:
    """Checks of the parameters shared by the structural SVM estimators."""

    def _check_common_params(self):
        C = _check_positive_real(self.C, "C")
        rho = self.rho if isinstance(self.rho, str) and self.rho == "auto" else _check_positive_real(self.rho, "rho")
        eta = _check_positive_real(self.eta, "eta")
        tol = _check_positive_real(self.tol, "tol", allow_zero=True)
        max_iter = _check_positive_int(self.max_iter, "max_iter")
        n_partitions = _check_positive_int(self.n_partitions, "n_partitions")
        solver = _check_choice(self.solver, "solver", _SOLVERS)
        oracle = _check_choice(self.oracle, "oracle", _ORACLES)
        if not isinstance(self.warm_start, (bool, np.bool_)):
            raise TypeError(f"warm_start must be a bool; got {self.warm_start!r}")
        if self.callback is not None and not callable(self.callback):
            raise TypeError(f"callback must be callable or None; got {self.callback!r}")
        return C, rho, eta, tol, max_iter, n_partitions, solver, oracle


class SequenceSSVM(_SSVMParamsMixin, SequenceEstimatorMixin, BaseEstimator):
    """Linear-chain structural SVM with Hamming loss.

    A labeling ``z`` of a sequence ``x_1..x_n`` is scored as
    ``sum_t coef_[z_t] @ x_t + sum_{t>=1} transition_[z_{t-1}, z_t]``.
    Training minimizes the L2-regularized structured hinge loss

    ``1/2 (||coef_||^2 + ||transition_||^2) + C sum_i max_z [score_i(z)
    - score_i(y_i) + Hamming(z, y_i)]``

    with one of three solvers:

    * ``"gdmm"`` (default): Greedy Direction Method of Multiplier on the
      dual decomposed into unigram (inner-product) and bigram (indicator,
      one shared ``K x K`` table) factors joined by sparse messages, with a
      block-coordinate Frank-Wolfe inner loop over per-factor active sets
      (Yen et al., "Dual decomposed learning with factorwise oracles for
      structural SVMs of large output domain", Algorithms 1 and 4).  With
      ``oracle="sublinear"`` the bigram search uses sorted multimaps of the
      transition table (cost sublinear in ``K^2``) and the unigram search
      may sample one of ``n_partitions`` label blocks (eq. 21).
    * ``"bcfw"``: block-coordinate Frank-Wolfe with loss-augmented Viterbi
      as structured oracle (Lacoste-Julien et al., 2013).
    * ``"ssg"``: stochastic subgradient (Pegasos) with weighted averaging.

    ``gdmm`` and ``bcfw`` stop when the duality gap, certified on the whole
    problem (primal value from the weights by loss-augmented Viterbi over
    all labelings, dual value at a feasible dual point), falls below
    ``tol`` relative to the primal value.  There is no intercept or
    start/end weight: append constant or position features for those.

    Parameters
    ----------
    C : float, default=1.0
        Weight of the summed hinge losses (> 0).
    solver : {"gdmm", "bcfw", "ssg"}, default="gdmm"
    rho : float or "auto", default="auto"
        Augmented-Lagrangian penalty of GDMM (eq. 12). ``"auto"`` uses a
        quarter of the mean squared norm of the unigram feature vectors
        (at least 0.1): the penalty then weighs consistency about as much as
        the unigram curvature ``||x||^2``, which worked best across the data
        sets we tried.
    eta : float, default=1.0
        Multiplier step of GDMM (eq. 13), in units of the scaled multipliers.
    max_iter : int, default=100
        Maximum number of passes over the factors (gdmm) or sequences
        (bcfw, ssg). Reaching it without meeting ``tol`` raises a
        ``ConvergenceWarning`` (gdmm, bcfw).
    tol : float, default=1e-3
        Relative duality gap at which gdmm/bcfw stop; for ssg (no dual),
        the relative change of the primal objective over one pass (0 runs
        ``max_iter`` passes).
    oracle : {"sublinear", "dense"}, default="sublinear"
        GDMM factorwise oracles: sorted multimaps and sampling, or dense scans.
    n_partitions : int, default=1
        nu of the unigram oracle's partition sampling (``oracle="sublinear"``).
    inference : str, default="viterbi"
        Prediction back-end: ``"viterbi"`` (batched, exact) or any name of
        :func:`structlearn.inference.available_methods` (one chain graph per
        sequence).
    random_state : int, RandomState instance or None, default=None
        Seeds the visiting orders and the partition draws.
    verbose : int, default=0
        Log one line per outer iteration at INFO level when > 0.
    warm_start : bool, default=False
        Continue from the previous solver state when ``fit`` is called again
        on the same data with the same solver (otherwise start from zero).
    callback : callable or None, default=None
        Called with each history record; returning True stops training.

    Attributes
    ----------
    coef_ : ndarray of shape (n_classes, n_features)
    transition_ : ndarray of shape (n_classes, n_classes)
        ``transition_[a, b]`` scores label ``a`` followed by ``b``.
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    n_iter_ : int
        Outer iterations run in the last ``fit`` (cumulative with warm starts).
    history_ : list of dict
        One record per outer iteration: ``iteration``, ``time`` (wall
        seconds since fit started, including monitoring), ``solver_time``
        and ``pass_time`` (optimization only), ``primal`` (recomputed from
        the weights), ``dual`` (NaN for ssg), ``gap``, ``relative_gap``,
        ``infeasibility`` (GDMM consistency residual over all labels; 0 for
        the others), ``active_set_size`` (mean per factor; 1 for bcfw/ssg),
        ``oracle_entries`` (labels or label pairs visited by the oracles).
    converged_ : bool

    Examples
    --------
    >>> import numpy as np
    >>> from structlearn.estimators import SequenceSSVM
    >>> X = [np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([[0.0, 1.0]])]
    >>> y = [np.array(["a", "b"]), np.array(["b"])]
    >>> model = SequenceSSVM(random_state=0).fit(X, y)
    >>> [p.tolist() for p in model.predict(X)]
    [['a', 'b'], ['b']]
    """

    def __init__(self, C=1.0, *, solver="gdmm", rho="auto", eta=1.0, max_iter=100, tol=1e-3,
                 oracle="sublinear", n_partitions=1, inference="viterbi", random_state=None,
                 verbose=0, warm_start=False, callback=None):
        self.C = C
        self.solver = solver
        self.rho = rho
        self.eta = eta
        self.max_iter = max_iter
        self.tol = tol
        self.oracle = oracle
        self.n_partitions = n_partitions
        self.inference = inference
        self.random_state = random_state
        self.verbose = verbose
        self.warm_start = warm_start
        self.callback = callback

    def _check_inference(self):
        if self.inference == "viterbi":
            return
        from ..inference import available_methods

        if not isinstance(self.inference, str) or self.inference not in available_methods():
            raise ValueError(
                f"inference must be 'viterbi' or one of {sorted(available_methods())}; "
                f"got {self.inference!r}"
            )

    def fit(self, X, y):
        """Train on labeled sequences.

        Parameters
        ----------
        X : list of {ndarray, sparse matrix}, each of shape (n_tokens_i, n_features)
        y : list of array-like, each of shape (n_tokens_i,)
            Any hashable, mutually comparable labels.

        Returns
        -------
        self : SequenceSSVM
        """
        from ..learners._ssvm_common import ChainProblem

        C, rho, eta, tol, max_iter, nu, solver, oracle = self._check_common_params()
        self._check_inference()
        Xcat, offsets, ycat = check_sequences(X, y)
        classes, codes = encode_sequence_labels(ycat)
        check_n_classes(classes, minimum=2)
        data, indices, indptr = csr_arrays(Xcat)
        n_features = Xcat.shape[1]
        _check_sparse_indices(indices, indptr, n_features)
        K = classes.shape[0]
        _check_weight_size(n_features, K)
        if nu > K:
            raise ValueError(f"n_partitions must be <= the number of classes ({K}); got {nu}")
        rng = check_random_state(self.random_state)
        problem = ChainProblem(data, indices, indptr, offsets, codes, n_features, K)

        state = getattr(self, "_solver_state", None) if self.warm_start else None
        if state is not None and (
            getattr(self, "_solver_name", None) != (solver, oracle)
            or state.signature != problem.signature()
            or not np.array_equal(getattr(self, "classes_", np.empty(0)), classes)
        ):
            state = None
        prev_history = list(self.history_) if state is not None else []

        common = dict(C=C, max_iter=max_iter, tol=tol, rng=rng, state=state,
                      verbose=self.verbose, callback=self.callback)
        if solver == "gdmm":
            from ..learners.gdmm_chain import fit_gdmm_chain

            if isinstance(rho, str):
                rho = max(0.1, float(problem.sq_norms().mean()) / 4.0)

            W, v, history, state, converged = fit_gdmm_chain(
                problem, rho=rho, eta=eta, sublinear=oracle == "sublinear", n_partitions=nu,
                **common)
        elif solver == "bcfw":
            from ..learners.bcfw import fit_bcfw_chain

            W, v, history, state, converged = fit_bcfw_chain(problem, **common)
        else:
            from ..learners.ssg import fit_ssg_chain

            W, v, history, state, converged = fit_ssg_chain(problem, **common)

        self.coef_ = np.ascontiguousarray(W.T, dtype=np.float64)
        self.transition_ = np.array(v, dtype=np.float64, copy=True)
        self.classes_ = classes
        self.n_features_in_ = n_features
        self.history_ = prev_history + history
        self.n_iter_ = len(self.history_)
        self.converged_ = bool(converged)
        if self.warm_start:
            self._solver_state = state
            self._solver_name = (solver, oracle)
        else:
            self._solver_state = None
        return self

    def _decode(self, Xcat, offsets):
        if self.inference == "viterbi":
            return super()._decode(Xcat, offsets)
        from ..graphs import chain_graph
        from ..inference import solve_map

        unary = self._unary_scores(Xcat)
        out = np.empty(unary.shape[0], dtype=np.int64)
        for s in range(offsets.shape[0] - 1):
            a, b = offsets[s], offsets[s + 1]
            res = solve_map(chain_graph(unary[a:b], self.transition_), method=self.inference)
            out[a:b] = res.labels
        return out
