"""Structural SVM estimators trained by dual-decomposed GDMM (or BCFW / SSG)."""

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils import ClassifierTags, check_random_state
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import check_is_fitted

from .. import _memory
from .._memory import check_memory
from .._parallel import chunk_bounds, map_chunks, progress_chunk_count
from .._verbose import verbose_fit
from ._base import SequenceEstimatorMixin
from ._params import COMMON, NONNEGATIVE, POSITIVE, POSITIVE_INT
from ._validation import append_constant as _append_constant
from ._validation import check_n_classes, csr_arrays, encode_sequence_labels

__all__ = ["SequenceSSVM", "MultiLabelSSVM"]


_SOLVERS = ("gdmm", "bcfw", "ssg")
_ORACLES = ("sublinear", "dense")
# oracle="auto" of SequenceSSVM: the sorted bigram search from this many labels
# (below it a dense scan of the K^2 pairs is as fast or faster: measured at
# K = 8-56 on synthetic chains and OCR letters; crossover near K = 50)
SORTED_ORACLE_MIN_LABELS = 50
# MultiLabelSSVM(oracle="auto") searches the label pairs through the sorted
# pair scores from this many labels; below, a scan of all L (L - 1) / 2
# pairs is as fast or faster (dense passes 0.67x of the sorted search's time
# at 14 labels, 0.98x at 50; 1.07x at 100, 1.38x at 200: BENCHMARKS.md, SSVM 3e)
SORTED_PAIR_ORACLE_MIN_LABELS = 90
# label scores per block of rows when a multilabel model decodes (8 MiB)
_DECODE_BLOCK_ENTRIES = 1 << 20
# GDMM keeps the unigram weights as sparse rows (with the sorted oracle and no
# partition sampling) when a dense (n_features, K) array would hold this many
# entries (1 GiB, 1.5 GiB with the float32 copy of the passes) or would not
# fit in the memory available: coef_ is then a CSR matrix.  Per pass the rows
# cost 1.1x the dense array at 5 % fill (50k features, K = 1,000) and 3.5x at
# 20 % fill (16,000 features, 10,000 tokens), so they are used where memory,
# not time, is at stake (and become dense where they fill up:
# gdmm_chain.DENSE_WEIGHTS_MIN_FILL)
SPARSE_WEIGHTS_MIN_ENTRIES = 1 << 27
# largest weight matrix (n_features * n_classes entries) accepted
_MAX_WEIGHTS = 2**31 - 1


# MultiLabelSSVM's rho="auto": the penalty a quarter of the mean squared
# feature norm suits C up to _RHO_REFERENCE_C; above, it shrinks with 1 / C
# (never below _RHO_MIN)
_RHO_REFERENCE_C = 0.01
_RHO_MIN = 1.0


def _multilabel_auto_rho(mean_sq_norm, C):
    """GDMM penalty of ``MultiLabelSSVM(rho="auto")``."""
    return max(_RHO_MIN, mean_sq_norm / 4.0 * min(1.0, _RHO_REFERENCE_C / C))


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


# tol="auto": a certified relative duality gap of 1 % (gdmm, bcfw); ssg has
# no certificate and stops on the primal's relative change per pass
TOL_AUTO_GAP = 1e-2
TOL_AUTO_PRIMAL_CHANGE = 1e-3


class _SSVMParamsMixin:
    """The parameters shared by the structural SVM estimators."""

    _parameter_constraints = {
        "C": [POSITIVE],
        "solver": [StrOptions(set(_SOLVERS))],
        "rho": [POSITIVE, StrOptions({"auto"})],
        "eta": [POSITIVE],
        "max_iter": [POSITIVE_INT],
        "tol": [NONNEGATIVE, StrOptions({"auto"})],
        "oracle": [StrOptions(set(_ORACLES))],
        "n_partitions": [POSITIVE_INT],
        "inference": [str],
        "inference_params": [dict, None],
        "warm_start": ["boolean"],
        "callback": [callable, None],
        **COMMON,
    }

    def _common_params(self):
        """The shared parameters as plain numbers (checked by ``fit``'s
        parameter validation): ``C, rho, eta, tol, max_iter, n_partitions,
        solver, oracle``."""
        rho = self.rho if isinstance(self.rho, str) else float(self.rho)
        tol = self.tol
        if isinstance(tol, str):  # "auto"
            tol = TOL_AUTO_PRIMAL_CHANGE if self.solver == "ssg" else TOL_AUTO_GAP
        return (float(self.C), rho, float(self.eta), float(tol), int(self.max_iter),
                int(self.n_partitions), self.solver, self.oracle)

    def _check_schedule(self, first, tol):
        """``check_every`` as the learners take it: ``"auto"`` becomes an
        adaptive schedule whose first check comes after ``first`` passes."""
        if self.check_every != "auto":
            return int(self.check_every)
        from ..learners._ssvm_common import CheckSchedule

        return CheckSchedule(first, adaptive=True, tol=tol)

    def _bag_fit_params(self):
        """:meth:`_common_params` of a fit on a dask bag, and the client it
        needs (gdmm only, no warm start: the duals stay on the workers)."""
        from ._dask_input import bag_client

        params = self._common_params()
        if params[6] != "gdmm":
            raise ValueError(f"a dask bag trains with solver='gdmm' only, got {params[6]!r}")
        if self.warm_start:
            raise ValueError("warm_start is not available for a dask bag (the duals stay on "
                             "the workers)")
        return params, bag_client()


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
      ``oracle="sublinear"`` the bigram search uses cached row and column
      summaries of the transition table (cost sublinear in ``K^2``) and the
      unigram search may sample one of ``n_partitions`` label blocks (eq. 21).
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
        1.5 reached certified gaps 10-25% sooner on the benchmark chains
        (``benchmarks/bench_ssvm.py --sections eta``); 2 stalled at
        K = 1000 and 3 diverged everywhere, so the default keeps a margin.
    max_iter : int, default=100
        Maximum number of passes over the factors (gdmm) or sequences
        (bcfw, ssg). Reaching it without meeting ``tol`` raises a
        ``ConvergenceWarning`` (gdmm, bcfw).
    tol : float or "auto", default="auto"
        Relative duality gap at which gdmm/bcfw stop (``"auto"``: 0.01, a
        certified objective within 1 % of the optimum); for ssg (no dual),
        the relative change of the primal objective over one pass
        (``"auto"``: 1e-3); 0 runs ``max_iter`` passes.
    oracle : {"auto", "sublinear", "dense"}, default="auto"
        GDMM factorwise oracles: sorted bigram search and sampling, or dense
        scans. Both give the same iterates (ties are broken alike); only the
        time per pass differs. ``"auto"`` uses the sorted search from 50
        classes or with ``n_partitions > 1``, dense scans otherwise (they
        are the faster below about 50 classes, and a first fit from an empty
        compilation cache then compiles only them).
    n_partitions : int, default=1
        nu of the unigram oracle's partition sampling (``oracle="sublinear"``
        or ``"auto"``).
    inference : str, default="viterbi"
        Prediction back-end: ``"viterbi"`` (batched, exact) or any name of
        :func:`structlearn.inference.available_methods` (one chain graph per
        sequence).
    inference_params : dict or None, default=None
        Parameters of the ``inference`` back-end (see
        :func:`structlearn.inference.method_parameters`), for instance
        ``{"time_limit": 0.1}`` (seconds per sequence) or ``{"tol": 1e-4}``.
    random_state : int, RandomState instance or None, default=None
        Seeds the visiting orders and the partition draws.
    verbose : int, default=0
        Log one line per outer iteration at INFO level when > 0.
    n_jobs : int or None, default=None
        Jobs for prediction (``predict``, ``predict_topk``, ``score``): chunks
        of samples on joblib threads (any joblib back-end through
        ``joblib.parallel_config``, e.g. ``"dask"``); ``None`` means 1, ``-1``
        all CPUs.  In ``fit``, threads for the certificate's loss-augmented
        Viterbi over all sequences and for the ``training_partitions``; and
        with gdmm's dense weights and at least ``2**16`` token scores
        (tokens x classes), two threads for each pass: the unigram factors
        of half the sequences beside the bigram factors of the other half,
        then the other way round (the two kinds share no weights).  That
        pass is the one-thread pass over another order of the factors, so
        such a fit is the same for any ``n_jobs`` that gives two threads
        (2 or more; -1 where there are two CPUs or more) and differs from
        ``n_jobs=1`` by that order only (Porttinari UPOS+FEATS: the same
        passes to a 1 % gap in 0.53-0.60x the time on two cores).
        Predictions do not depend on it.
    training_partitions : int or None, default=None
        GDMM and BCFW.  None or 1: one pass at a time over all the sequences.
        ``P > 1``: the sequences are split into ``P`` runs of about equal
        tokens that take their passes side by side on ``n_jobs`` threads
        against their own copy of the weight rows they use, merged after
        each pass (CoCoA+ adding; the certified gap is taken on the whole
        problem as always).  GDMM damps each round's steps by a measure of
        how the last round's moves added up (from ``P`` in the first round
        down to 1, a feature at most by the partitions that use it;
        ``history_`` records each round's ``damping`` of the weight rows
        and of the transitions); BCFW damps each shared weight's steps by
        the partitions that share it (its dual never falls).  A partition's
        extra memory is its copy of the weight rows its tokens use (float32
        where the passes are) and its search tables: nearly all of
        ``coef_`` where every partition uses nearly every feature.  The result
        depends on ``random_state`` and ``P``, not on ``n_jobs``; the
        dense weights are kept (no sparse rows).  A partition of at least
        ``2**16`` token scores steps its factors in the split order of the
        two-thread pass (see ``n_jobs``), on two threads where ``n_jobs``
        gives two per partition (``n_jobs=16, training_partitions=8``).  Inside
        ``joblib.parallel_config(backend="dask")`` the partitions live on the
        ``dask.distributed`` workers for the whole fit: per pass each gets
        the entries of the weight rows it uses that changed and sends back
        its moves (``history_`` records ``bytes_sent``, ``bytes_received``);
        every 5 passes each is copied to two workers, and a partition lost
        with its worker goes back to its copy (its duals lose at most those
        passes; the weights are rebuilt from all the duals, so the
        certificate stays valid; ``history_`` counts
        ``partitions_recovered``).  A client closed during the fit ends it
        with a ``RuntimeError``; there the client holds a second copy of
        the weights during each pass (the merged move's norm, for the
        damping).  The damping costs passes where the partitions' moves
        add up: on Porttinari UPOS+FEATS 2, 4 and 8 partitions need 1.52x,
        1.58x and 1.63x the passes of one (``n_jobs=2`` alone gives
        0.53-0.60x the time on two cores), on generated chains 1.05-1.25x,
        and on the OCR letters' dense pixels 3.5x and more (BENCHMARKS.md,
        "Training on several cores and on a cluster").  With ``solver="bcfw"`` the
        partitions are drawn anew each round and run on threads whatever
        the joblib back-end (each block's line search counts a shared
        row's curvature once per partition that uses it).
    warm_start : bool, default=False
        Continue from the previous solver state when ``fit`` is called again
        on the same data with the same solver (otherwise start from zero).
    callback : callable or None, default=None
        Called with each history record; returning True stops training.
    check_every : int or "auto", default="auto"
        gdmm and bcfw evaluate the primal and dual values, and so the
        stopping rule, after every ``check_every``-th pass and after the
        last one (the other history records hold NaN there).  The primal
        value needs a loss-augmented Viterbi over all sequences (over the
        non-zeros of a mostly-zero transition table: about 3 GDMM passes on
        Porttinari, about 6 at 1,000,000 tokens and ``K = 1000``, BENCHMARKS.md).
        ``"auto"``: every ``max(1, K // 100)``-th pass, spaced out (up to 10
        passes apart, or a quarter of the passes run where that is more)
        while the last certified gap is far above ``tol``: after a check at
        pass ``p`` with relative gap ``g`` the next comes ``0.2 p (g / tol -
        1)`` passes later.  The gap falls roughly like ``1 / p``: ``fit``
        stops at most ``max(10, K // 100, p / 4)`` passes (and
        usually 1-2) after the gap first met ``tol``, 3 more where checks
        lag (below); the schedule depends only on the gaps, not on timing.
        A fit with ``n_tokens * K >= 2**20`` and no
        ``callback`` takes each check's value 3 passes after the pass it
        checks (with ``n_jobs > 1`` the check runs on other threads beside
        those passes, on a copy of the weights unless they are GDMM's dense
        weights from 64 classes; the values do not depend on where it runs)
        and confirms a check that meets ``tol`` by a check of the pass that
        takes it: such a fit ends at least 3 passes after the gap first met
        ``tol``, on a certificate of its last pass.

    Attributes
    ----------
    coef_ : ndarray or csr_matrix of shape (n_classes, n_features)
        Fortran-ordered: the transposed view of the solver's feature-major
        weights (no second copy of a large weight matrix).  Where a dense
        weight matrix would take 1 GiB or more (``n_features * n_classes >=
        2**27``) or more than the memory available, GDMM with the sorted
        oracle (``oracle="auto"`` from 50 classes) and ``n_partitions=1``
        keeps the weights as sparse rows (memory in proportion to their
        non-zeros, the same iterates as a dense array): ``coef_`` is then a
        CSR matrix of its non-zeros.  Rows that fill to half the dense array's
        entries become that array during the fit (they would save little
        memory, at several times the time per pass), and ``coef_`` is then
        dense.
    transition_ : ndarray of shape (n_classes, n_classes)
        ``transition_[a, b]`` scores label ``a`` followed by ``b``.
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    n_iter_ : int
        Outer iterations run in the last ``fit`` (cumulative with warm starts).
    history_ : list of dict
        One record per pass in the schema shared by every estimator
        (:data:`structlearn.estimators.HISTORY_KEYS`): ``iter`` (1-based),
        ``time`` (seconds since ``fit`` started), ``objective`` (the training
        objective, NaN where it is not computed), ``gap`` (certified duality
        gap; NaN for methods without one); ``objective`` is
        the primal.  Then ``solver_time``
        and ``pass_time`` (optimization only), ``primal`` (recomputed from
        the weights), ``dual`` (NaN for ssg), ``gap``, ``relative_gap``
        (these four NaN on the passes that ``check_every`` skips),
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

    _parameter_constraints = {
        **_SSVMParamsMixin._parameter_constraints,
        "oracle": [StrOptions({"auto", *_ORACLES})],
        "check_every": [POSITIVE_INT, StrOptions({"auto"})],
        "training_partitions": [POSITIVE_INT, None],
    }

    def __init__(self, C=1.0, *, solver="gdmm", rho="auto", eta=1.0, max_iter=100, tol="auto",
                 oracle="auto", n_partitions=1, inference="viterbi", inference_params=None,
                 random_state=None, verbose=0, warm_start=False, callback=None,
                 check_every="auto", n_jobs=None, training_partitions=None):
        self.C = C
        self.n_jobs = n_jobs
        self.training_partitions = training_partitions
        self.check_every = check_every
        self.solver = solver
        self.rho = rho
        self.eta = eta
        self.max_iter = max_iter
        self.tol = tol
        self.oracle = oracle
        self.n_partitions = n_partitions
        self.inference = inference
        self.inference_params = inference_params
        self.random_state = random_state
        self.verbose = verbose
        self.warm_start = warm_start
        self.callback = callback

    def _check_inference(self):
        """The validated ``inference_params`` (a dict)."""
        from ..inference import available_methods
        from ._validation import check_inference_params

        if self.inference != "viterbi" and (not isinstance(self.inference, str)
                                            or self.inference not in available_methods()):
            raise ValueError(
                f"inference must be 'viterbi' or one of {sorted(available_methods())}; "
                f"got {self.inference!r}"
            )
        return check_inference_params(self.inference_params, self.inference)

    @verbose_fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Train on labeled sequences.

        Parameters
        ----------
        X : list of {ndarray, sparse matrix}, each of shape (n_tokens_i, n_features)
            Or sentences of per-token feature dicts.  Or a ``dask.bag.Bag`` of
            ``(X_i, y_i)`` pairs (``y`` None; ``X_i`` a matrix or a list of
            feature dicts): each bag partition becomes a training partition
            on the worker that holds it, and the data never pass through the
            client (gdmm; a ``distributed.Client`` must be the default
            client; see :meth:`_fit_on_cluster`).
        y : list of array-like, each of shape (n_tokens_i,)
            Any hashable, mutually comparable labels.

        Returns
        -------
        self : SequenceSSVM
        """
        from ..learners._ssvm_common import ChainProblem
        from ._dask_input import is_dask_bag

        if is_dask_bag(X):
            if y is not None:
                raise ValueError("with a dask bag of (X_i, y_i) pairs, y must be None")
            return self._fit_on_cluster(X)
        if y is None:
            raise ValueError("y is required: the label sequences of X (or give a dask bag of "
                             "(X_i, y_i) pairs)")
        C, rho, eta, tol, max_iter, nu, solver, oracle = self._common_params()
        self._check_inference()
        Xcat, offsets, ycat = self._check_fit_input(X, y)
        classes, codes = encode_sequence_labels(ycat)
        check_n_classes(classes, minimum=2)
        data, indices, indptr = csr_arrays(Xcat)
        n_features = Xcat.shape[1]
        _check_sparse_indices(indices, indptr, n_features)
        K = classes.shape[0]
        _check_weight_size(n_features, K)
        if nu > K:
            raise ValueError(f"n_partitions must be <= the number of classes ({K}); got {nu}")
        if oracle == "auto":
            oracle = "sublinear" if K >= SORTED_ORACLE_MIN_LABELS or nu > 1 else "dense"
        rng = check_random_state(self.random_state)
        problem = ChainProblem(data, indices, indptr, offsets, codes, n_features, K)

        training_partitions = self.training_partitions or 1
        if training_partitions > 1 and solver == "ssg":
            raise ValueError("training_partitions > 1 needs solver='gdmm' or 'bcfw', got 'ssg'")
        # dense (n_features, K) arrays: gdmm keeps W (and from
        # FLOAT32_PASSES_MIN_LABELS a float32 copy for its passes), bcfw W and
        # its step direction, ssg W and two averages
        from ..learners.gdmm_chain import FLOAT32_PASSES_MIN_LABELS

        copies = {"gdmm": 1, "bcfw": 2, "ssg": 3}[solver]
        if solver == "gdmm" and nu == 1 and K >= FLOAT32_PASSES_MIN_LABELS:
            copies += 0.5
        dense_bytes = int(8 * copies * n_features * K)
        avail = _memory.available_bytes()
        sparse_weights = (solver == "gdmm" and oracle == "sublinear" and nu == 1
                          and training_partitions == 1
                          and (n_features * K >= SPARSE_WEIGHTS_MIN_ENTRIES
                               or (avail is not None and dense_bytes > avail)))
        if not sparse_weights:
            check_memory(dense_bytes,
                         f"SequenceSSVM(solver={solver!r}) weights over {n_features} features "
                         f"and {K} classes", "reduce the feature space")
        state = getattr(self, "_solver_state", None) if self.warm_start else None
        if state is not None and (
            # (the state keeps its weights' storage)
            getattr(self, "_solver_name", (None, None))[:2] != (solver, oracle)
            or state.signature != problem.signature()
            or not np.array_equal(getattr(self, "classes_", np.empty(0)), classes)
        ):
            state = None
        prev_history = list(self.history_) if state is not None else []

        common = dict(C=C, max_iter=max_iter, tol=tol, rng=rng, state=state,
                      verbose=self.verbose, callback=self.callback, n_jobs=self.n_jobs)
        check_every = self._check_schedule(max(1, K // 100), tol)
        if solver != "ssg":
            common["check_every"] = check_every
        if solver == "gdmm":
            from ..learners.gdmm_chain import fit_gdmm_chain

            if isinstance(rho, str):
                rho = max(0.1, float(problem.sq_norms().mean()) / 4.0)

            W, v, history, state, converged = fit_gdmm_chain(
                problem, rho=rho, eta=eta, sublinear=oracle == "sublinear", n_partitions=nu,
                sparse_weights=sparse_weights, training_partitions=training_partitions,
                **common)
        elif solver == "bcfw":
            from ..learners.bcfw import fit_bcfw_chain

            W, v, history, state, converged = fit_bcfw_chain(
                problem, training_partitions=training_partitions, **common)
        else:
            from ..learners.ssg import fit_ssg_chain

            W, v, history, state, converged = fit_ssg_chain(problem, **common)

        if isinstance(W, tuple):  # sparse rows
            from ..oracles.sparse_rows import sparse_rows_to_csr

            self.coef_ = sparse_rows_to_csr(W, K).T.tocsr()
        else:
            # the (K, d) view of the solver's (d, K) weights, no copy (F-ordered); a
            # solver state kept for a warm start goes on changing W: then a copy
            self.coef_ = W.T.copy(order="F") if self.warm_start else W.T
        self.transition_ = np.array(v, dtype=np.float64, copy=True)
        self.classes_ = classes
        self.n_features_in_ = n_features
        self.history_ = prev_history + history
        self.n_iter_ = len(self.history_)
        self.converged_ = bool(converged)
        if self.warm_start:
            self._solver_state = state
            self._solver_name = (solver, oracle, sparse_weights)
        else:
            self._solver_state = None
        return self

    def _fit_on_cluster(self, bag):
        """Fit on a ``dask.bag.Bag`` of ``(X_i, y_i)`` pairs (``X_i`` a
        feature matrix or a sentence of per-token feature dicts): GDMM with
        one training partition per bag partition, encoded and built on the
        worker that computes it
        (:func:`._dask_input.sequence_parts_on_workers`; the partitions'
        vocabularies merged into ``vectorizer_`` as one fit on all the
        sentences builds it) and kept there
        (:func:`structlearn.learners.gdmm_chain_cluster.fit_gdmm_chain_cluster`).
        The client holds the weights and the partitions' summaries only;
        ``training_partitions`` is the bag's ``npartitions``; a warm start and
        sparse weight rows are not available here."""
        from ..learners.gdmm_chain_cluster import fit_gdmm_chain_cluster
        from ..learners.gdmm_chain import (FLOAT32_PASSES_MAX_FEATURE,
                                           FLOAT32_PASSES_MIN_LABELS, SEARCH_BACKOFF_MAX)
        from ..learners._gdmm_chain_kernels import PassSettings
        from ._dask_input import (chain_part_summaries, chain_partitions_on_workers,
                                  sequence_parts_on_workers)

        (C, rho, eta, tol, max_iter, nu, solver, oracle), client = self._bag_fit_params()
        parts, classes, vectorizer, d, _ = sequence_parts_on_workers(client, bag)
        check_n_classes(classes, minimum=2)
        K = classes.shape[0]
        _check_weight_size(d, K)
        check_memory(8 * 2 * d * K, f"SequenceSSVM weights over {d} features and {K} classes "
                     "on the client", "reduce the feature space")
        if nu > K:
            raise ValueError(f"n_partitions must be <= the number of classes ({K}); got {nu}")
        if oracle == "auto":
            oracle = "sublinear" if K >= SORTED_ORACLE_MIN_LABELS or nu > 1 else "dense"
        summaries = chain_part_summaries(client, parts)
        P = len(summaries)
        used = np.bincount(np.concatenate([s["features"] for s in summaries]), minlength=d)
        sigma = np.maximum(used, 1).astype(np.float64)
        n_tokens = sum(s["n_tokens"] for s in summaries)
        if isinstance(rho, str):
            rho = max(0.1, sum(s["sq_norm_sum"] for s in summaries) / n_tokens / 4.0)
        float32 = (nu == 1 and K >= FLOAT32_PASSES_MIN_LABELS
                   and max(s["max_abs"] for s in summaries) <= FLOAT32_PASSES_MAX_FEATURE)
        settings = PassSettings(float(C), float(rho), nu, int(SEARCH_BACKOFF_MAX), float(P))
        futures = chain_partitions_on_workers(client, parts, K, sigma, settings, float32,
                                              oracle == "sublinear")
        check_every = self._check_schedule(max(1, K // 100), tol)
        W, v, history, converged = fit_gdmm_chain_cluster(
            client, futures, n_features=d, n_labels=K,
            n_factors=n_tokens + sum(s["n_edges"] for s in summaries), C=C, eta=eta,
            max_iter=max_iter, tol=tol, rng=check_random_state(self.random_state),
            float32=float32, verbose=self.verbose, callback=self.callback,
            check_every=check_every)
        self.coef_ = W.T
        self.transition_ = v
        self.classes_ = classes
        self.n_features_in_ = d
        self.vectorizer_ = vectorizer
        self.history_ = history
        self.n_iter_ = len(history)
        self.converged_ = bool(converged)
        self._solver_state = None
        return self

    def _decoded_chunks(self, Xcat, offsets):
        params = self._check_inference()
        if self.inference == "viterbi":  # exact, one batched pass: nothing to limit
            yield from super()._decoded_chunks(Xcat, offsets)
            return
        from ..graphs import chain_graph
        from ..inference import solve_map

        unary = self._unary_scores(Xcat)
        out = np.empty(unary.shape[0], dtype=np.int64)
        for s in range(offsets.shape[0] - 1):
            a, b = offsets[s], offsets[s + 1]
            res = solve_map(chain_graph(unary[a:b], self.transition_), method=self.inference,
                            **params)
            out[a:b] = res.labels
        yield 0, offsets.shape[0] - 1, out


def _unary_scores(X, coef, intercept, buf):
    """``X @ coef.T + intercept`` (float64 (rows, L)), a view of the flat
    buffer ``buf`` (at least ``rows * L`` entries), without a dense copy of ``X``."""
    rows = X.shape[0]
    L = coef.shape[0]
    U = buf[:rows * L].reshape(rows, L)
    U[:] = intercept
    U += np.asarray(X @ coef.T) if sp.issparse(X) else X @ coef.T
    return U


def _resolve_pairwise(pairwise, Y):
    """``pairwise`` with ``"auto"`` and ``"tree"`` replaced by edge arrays or names."""
    from ..learners.multilabel import MAX_ENUM_LABELS

    if isinstance(pairwise, str) and pairwise == "auto":
        pairwise = "full" if Y.shape[1] <= MAX_ENUM_LABELS else "tree"
    if isinstance(pairwise, str) and pairwise == "tree":
        from ..graphs.label_graphs import chow_liu_edges

        return chow_liu_edges(Y)
    return pairwise


def _rooted_edges(E):
    """``(RootedForest, edge index -> (a, b))`` of the mask when it is a
    forest with edges, else None (what prediction needs to run max-product)."""
    from ..inference.exact.binary_forest import rooted_forest

    a, b = np.nonzero(E)
    if a.size == 0:
        return None
    forest = rooted_forest(np.stack([a, b], axis=1), E.shape[0])
    return None if forest is None else (forest, np.stack([a, b], axis=1))


def _edge_mask(pairwise, L):
    """Upper-triangular uint8 (L, L) mask of the interaction edges."""
    E = np.zeros((L, L), dtype=np.uint8)
    if isinstance(pairwise, str):
        if pairwise == "full":
            E[np.triu_indices(L, 1)] = 1
        elif pairwise != "none":
            raise ValueError(
                f"pairwise must be 'full', 'none' or an (n_edges, 2) array of label pairs; "
                f"got {pairwise!r}"
            )
        return E
    try:
        edges = np.asarray(pairwise)
    except Exception:
        edges = None
    if edges is None or edges.dtype.kind not in "iu" or edges.ndim != 2 or edges.shape[1] != 2:
        raise ValueError(
            "pairwise must be 'full', 'none' or an integer array of shape (n_edges, 2)"
        )
    if edges.size and (edges.min() < 0 or edges.max() >= L):
        raise ValueError(f"pairwise edges must hold label indices in [0, {L})")
    if np.any(edges[:, 0] == edges[:, 1]):
        raise ValueError("pairwise edges must join two different labels")
    a = np.minimum(edges[:, 0], edges[:, 1])
    b = np.maximum(edges[:, 0], edges[:, 1])
    E[a, b] = 1
    return E


class MultiLabelSSVM(_SSVMParamsMixin, BaseEstimator):
    """Multilabel structural SVM with pairwise label interactions and Hamming loss.

    A labeling ``y`` in ``{0, 1}^L`` of a sample ``x`` scores
    ``sum_l y_l coef_[l] @ x + sum_{a < b} y_a y_b pairwise_coef_[a, b]``
    (interactions only on the chosen label pairs). Training minimizes
    ``1/2 (||coef_||^2 + ||pairwise_coef_||^2) + C sum_i max_y [score_i(y) -
    score_i(y_i) + Hamming(y, y_i)]`` with one of three solvers:

    * ``"gdmm"`` (default): Greedy Direction Method of Multiplier with the
      block-greedy coordinate descent inner loop (Yen et al., "Dual
      decomposed learning with factorwise oracles for structural SVMs of
      large output domain", Algorithms 1 and 3): one unigram factor per
      label and one binary interaction factor per label pair, the greedy
      factor of each sample found by the joint binary-interaction oracle
      (Appendix C-2; with ``oracle="sublinear"`` its cost is sublinear in
      the number of pair factors when few labels are active). It optimizes
      the LP-relaxed hinge (maximization over the local polytope), equal to
      the objective above when the interaction edges form a forest and an
      upper bound of it otherwise. Any ``L``. See
      :mod:`structlearn.learners.gdmm_multilabel`.
    * ``"bcfw"``: block-coordinate Frank-Wolfe and ``"ssg"``: stochastic
      subgradient, both with an exact structured oracle enumerating all
      ``2^L`` labelings (Gray code): with interactions they need
      ``L <= 24`` (no LP oracle: a Frank-Wolfe step needs the exact
      maximizer over the relaxed polytope, which the approximate MAP
      back-ends do not return, and the duality-gap certificate would be
      lost). With ``pairwise="none"`` the model decomposes per label and
      any ``L`` works.

    ``gdmm`` and ``bcfw`` stop on a certified relative duality gap ``tol``
    (for gdmm, of the LP-relaxed objective; see ``history_``).

    Parameters
    ----------
    C : float, default=1.0
    pairwise : {"auto", "tree", "full", "none"} or array-like of shape (n_edges, 2), \
default="auto"
        Label pairs with an interaction weight. ``"tree"``: the Chow-Liu
        tree of the training labels (maximum spanning forest of the pairwise
        mutual information over the pairs seen together,
        :func:`structlearn.graphs.label_graphs.chow_liu_edges`): the
        relaxation is then tight, the certificate exact and prediction exact
        by max-product in O(L) per sample. ``"full"``: every pair (LP
        relaxation; see ``inference`` for prediction). ``"none"``:
        independent labels with the same solver and loss. ``"auto"``:
        ``"full"`` up to 24 labels (exact enumeration), ``"tree"`` above
        (BENCHMARKS.md, "Multilabel at hundreds of labels").
    fit_intercept : bool, default=True
        Learn one bias per label (``intercept_``). As in
        :class:`sklearn.svm.LinearSVC`, the bias is the weight of an extra
        constant feature of value ``intercept_scaling`` and is regularized
        with the other weights.
    intercept_scaling : float, default=1.0
        Value of that constant feature; a larger value weakens the
        regularization of the bias.
    solver : {"gdmm", "bcfw", "ssg"}, default="gdmm"
    rho : float or "auto", default="auto"
        GDMM augmented-Lagrangian penalty. ``"auto"``: a quarter of the mean
        squared norm of the feature vectors, scaled by ``0.01 / C`` when
        ``C`` is above 0.01, and at least 1 (weak regularization needs a
        smaller penalty: on the benchmark sets at ``C = 1`` the unscaled
        value left 35-92 % gaps after 100 passes where this one leaves
        3-63 %, see BENCHMARKS.md, SSVM 3d).
    eta : float, default=1.0
        GDMM multiplier step (scaled multipliers).
    oracle : {"auto", "sublinear", "dense"}, default="auto"
        Kept for compatibility; every value runs the same GDMM pair search.
        An inactive pair's dual can move only together with its labels (the
        local polytope forces ``z = 0`` next to a label at 0), so the greedy
        search scores the joint move of a pair and its labels: it enumerates
        the pairs of the sample's positive labels and reads the positive pair
        weights in decreasing order until they cannot win, sublinear in the
        ``L (L - 1) / 2`` pairs where few weights are positive.
    n_partitions : int, default=1
        Accepted for interface symmetry with :class:`SequenceSSVM`, unused.
    max_iter : int, default=300
    tol : float or "auto", default="auto"
        Relative duality gap (gdmm, bcfw; ``"auto"``: 0.01) or relative
        primal change per pass (ssg; ``"auto"``: 1e-3).
    inference : str, default="auto"
        Prediction back-end: ``"exact"`` enumerates labelings (``L <= 24``
        or no interactions); any other name of
        :func:`structlearn.inference.available_methods` solves one graph
        per sample (LP-based or approximate, default settings). ``"auto"``:
        exact when possible, else GDMM MAP for binary variables with many
        pair factors on all samples in one compiled call
        (:func:`structlearn.inference.lp.gdmm_binary.gdmm_binary_batch`: at most
        50 rounds of 10 iterations per sample, decodings improved by local
        search, deterministic): approximate MAP with a certified bound.
    inference_params : dict or None, default=None
        Parameters of a registry ``inference`` back-end, as in
        :class:`SequenceSSVM` (``time_limit`` is per sample); the built-in
        ``"auto"`` and ``"exact"`` predictors take none.
    random_state, verbose, warm_start, callback, n_jobs :
        As in :class:`SequenceSSVM`; gdmm also calls ``callback`` between the
        16 blocks of samples of a pass with a progress record (``iter``,
        ``time``, ``partial=True``, ``block``, ``n_blocks``; NaN objective
        and gap; not kept in ``history_``), and True stops there too (the
        partial pass is then certified).  Without ``callback`` and
        ``training_partitions``, and from 65,536 samples x labels, gdmm runs
        groups of labels' passes on the ``n_jobs`` threads where the edges
        form a forest that splits into them (as ``training_partitions=P``
        does below, with ``P`` the threads): with ``pairwise="none"`` the
        one-thread model, bit for bit, in 0.56-0.59x its time on two
        threads on bibtex and its look-alike; with a tree cut at separator
        labels (``"auto"`` on bibtex) the groups' iterates, the same for a
        given ``n_jobs``, to the same certified gap in the same passes.
    training_partitions : int or None, default=None
        gdmm only.  None or 1: one pass at a time over all the samples.
        ``P > 1``: each round draws ``P`` partitions of the samples anew
        (from ``random_state``) that take their passes side by side on
        ``n_jobs`` threads, each with its own copy of the weight rows its
        features use and of the pair weights, merged after the round (as
        in :class:`SequenceSSVM`: the damping is measured from the last
        round's moves, ``P`` in the first round, and ``history_`` records
        each round's ``damping`` of the weight rows and of the pair
        weights; the progress records between blocks are then not made).
        Partitions kept fixed stall on bag-of-words data: 543 rounds to the
        gap on bibtex, against 41 drawn anew and 21 passes of one process.
        The result depends on ``random_state`` and ``P``, not on ``n_jobs``.
        Inside ``joblib.parallel_config(backend="dask")`` the samples live on the
        ``dask.distributed`` workers in ``2 P`` blocks: each partition keeps
        a home block and takes a visiting block drawn anew each round, so
        only half the samples move (the client keeps a copy of the weight
        rows a round moves, for the damping's measure).  Where the samples
        share most features the damping costs passes: with 2, 4 and 8
        partitions bibtex takes 2.0x, 3.0x and 4.9x the passes of one
        process (BENCHMARKS.md).  On threads,
        where the ``pairwise`` edges form a forest (``"none"``, ``"tree"``,
        ``"auto"`` beyond a few labels), the *labels* are split instead,
        into at most ``P`` groups of about equal labels: whole trees, and a
        tree too large for one group cut at a few separator labels, which
        are stepped apart after the groups' passes.  Each group takes one
        pass over all the samples per round beside the others, with weights
        and duals of its own, nothing to merge and no damping: the rounds
        to the gap are the passes of one process (0.60-0.71x the one-thread
        time on two threads on bibtex, corel5k and two look-alikes; with
        ``pairwise="none"`` 0.58-0.67x, and the model is the one-process
        model bit for bit; BENCHMARKS.md).  More groups than threads gain
        nothing: set ``P`` to ``n_jobs``.  Edges with cycles keep the
        sample partitions.
    check_every : int or "auto", default="auto"
        gdmm evaluates its certificate (primal, dual, and so the stopping
        rule) after every ``check_every``-th pass and after the last one;
        the other history records hold NaN there. ``"auto"``: after every
        pass, spaced out (up to 10 passes apart, or a quarter of the passes
        run where that is more) while the last certified gap is far above
        ``tol``, as in :class:`SequenceSSVM`: after a check
        at pass ``p`` with relative gap ``g`` the next comes ``0.2 p (g /
        tol - 1)`` passes later.
    max_time : float or None, default=None
        gdmm stops after this many seconds, checked between the 16 blocks
        of samples of a pass (a fixed split: the iterates do not depend on
        the machine); the partial pass is then certified
        (``history_[-1]["partial"]``), which takes one check more.

    Attributes
    ----------
    coef_ : ndarray of shape (n_labels, n_features)
    intercept_ : ndarray of shape (n_labels,)
        Per-label bias (zeros when ``fit_intercept=False``).
    pairwise_coef_ : ndarray of shape (n_labels, n_labels)
        Symmetric; zero off the interaction edges and on the diagonal.
    classes_ : ndarray of shape (n_labels,)
        ``arange(n_labels)`` (column indices of ``Y``).
    n_features_in_, n_iter_, converged_ :
        As in :class:`SequenceSSVM`.
    history_ : list of dict
        As in :class:`SequenceSSVM`. For gdmm, ``primal`` is a certified
        upper bound of the LP-relaxed objective at the current weights (the
        exact objective when the edges form a forest and enumeration is
        affordable), ``primal_exact`` the exact objective from the weights
        (NaN when enumeration is too costly), ``infeasibility`` the norm of
        the violated consistency constraints over the whole problem,
        ``active_set_size`` the mean number of active factors per sample
        and ``oracle_entries`` the labels plus label pairs the oracles
        visited in the pass.
    """

    _parameter_constraints = {
        **_SSVMParamsMixin._parameter_constraints,
        "pairwise": [StrOptions({"auto", "tree", "full", "none"}), "array-like"],
        "oracle": [StrOptions({"auto", *_ORACLES})],
        "fit_intercept": ["boolean"],
        "intercept_scaling": [POSITIVE],
        "check_every": [POSITIVE_INT, StrOptions({"auto"})],
        "max_time": [POSITIVE, None],
        "training_partitions": [POSITIVE_INT, None],
    }

    def __init__(self, C=1.0, *, pairwise="auto", fit_intercept=True, intercept_scaling=1.0,
                 solver="gdmm", rho="auto", eta=1.0, max_iter=300, tol="auto", oracle="auto",
                 n_partitions=1, inference="auto", inference_params=None, random_state=None,
                 verbose=0, warm_start=False, callback=None, n_jobs=None, check_every="auto",
                 max_time=None, training_partitions=None):  # fmt: skip
        self.C = C
        self.training_partitions = training_partitions
        self.check_every = check_every
        self.max_time = max_time
        self.n_jobs = n_jobs
        self.pairwise = pairwise
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.solver = solver
        self.rho = rho
        self.eta = eta
        self.max_iter = max_iter
        self.tol = tol
        self.oracle = oracle
        self.n_partitions = n_partitions
        self.inference = inference
        self.inference_params = inference_params
        self.random_state = random_state
        self.verbose = verbose
        self.warm_start = warm_start
        self.callback = callback

    def _check_inference(self):
        """The validated ``inference_params`` (a dict)."""
        from ..inference import available_methods
        from ._validation import check_inference_params

        builtin = ("auto", "exact")
        if self.inference not in builtin and (not isinstance(self.inference, str)
                                              or self.inference not in available_methods()):
            raise ValueError(
                f"inference must be 'auto', 'exact' or one of {sorted(available_methods())}; "
                f"got {self.inference!r}"
            )
        return check_inference_params(self.inference_params, self.inference, builtin)

    def _with_bias(self, X):
        """``X`` with the constant intercept column appended when ``fit_intercept``."""
        return _append_constant(X, self.intercept_scaling) if self.fit_intercept else X

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.estimator_type = "classifier"
        tags.classifier_tags = ClassifierTags(multi_class=False, multi_label=True)
        tags.target_tags.required = True
        tags.target_tags.multi_output = True
        tags.target_tags.single_output = False
        tags.input_tags.sparse = True
        return tags

    @verbose_fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, Y=None):
        """Train on ``X`` (n_samples, n_features) and a 0/1 matrix ``Y`` (n_samples, n_labels).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features) or dask.bag.Bag
            The samples' features.  Or a ``dask.bag.Bag`` of ``(x_i, y_i)``
            pairs (``x_i`` a 1-D feature vector or a one-row sparse matrix,
            ``y_i`` a 1-D 0/1 vector), with ``Y`` None: the samples are
            validated and kept on the ``dask.distributed`` workers, and the
            client holds the weights only (gdmm; see ``training_partitions``).
        Y : array-like or sparse matrix of shape (n_samples, n_labels)
            0/1 indicator matrix; None with a dask bag.

        Returns
        -------
        self : MultiLabelSSVM
        """
        from ..learners.multilabel import MAX_ENUM_LABELS, MultilabelProblem, fit_multilabel
        from ._dask_input import is_dask_bag
        from ._validation import check_multilabel

        C, rho, eta, tol, max_iter, nu, solver, oracle = self._common_params()
        self._check_inference()
        if is_dask_bag(X):
            if Y is not None:
                raise ValueError("with a dask bag of (x_i, y_i) pairs, Y must be None")
            return self._fit_on_cluster(X)
        if Y is None:
            raise ValueError("MultiLabelSSVM requires y to be passed, but the target y is None "
                             "(give a 0/1 indicator matrix of shape (n_samples, n_labels))")
        X, Y = check_multilabel(X, Y)
        n_features = X.shape[1]
        X = self._with_bias(X)
        n, L = Y.shape
        E = _edge_mask(_resolve_pairwise(self.pairwise, Y), L)
        if solver != "gdmm" and E.any() and L > MAX_ENUM_LABELS:
            raise ValueError(
                f"solver={solver!r} with pairwise interactions and {L} labels needs an exact "
                f"oracle over 2^{L} labelings; at most {MAX_ENUM_LABELS} labels are supported "
                "(use solver='gdmm', which optimizes the LP relaxation, or pairwise='none')"
            )
        data, indices, indptr = csr_arrays(X)
        d = X.shape[1]
        _check_sparse_indices(indices, indptr, d)
        _check_weight_size(d, L)
        # W (d, L) and coef_; ssg also its average; bcfw an (n, L, L) table;
        # gdmm the unigram duals and their flags (n, L) and the pair pool
        dense = 8 * d * L * (3 if solver == "ssg" else 2)
        per_sample = {"bcfw": 8 * L * L, "gdmm": 9 * L + 12 * 48}.get(solver, 0)
        check_memory(dense + n * per_sample,
                     f"MultiLabelSSVM(solver={solver!r}) over {d} features, {L} labels and "
                     f"{n} samples", "reduce the feature space or the number of samples")
        rng = check_random_state(self.random_state)
        problem = MultilabelProblem(data, indices, indptr, Y, E, d)
        if oracle == "auto":
            oracle = "sublinear" if L >= SORTED_PAIR_ORACLE_MIN_LABELS else "dense"
        if isinstance(rho, str):
            rho = _multilabel_auto_rho(float(problem.sq_norms().mean()), C)
        state = getattr(self, "_solver_state", None) if self.warm_start else None
        if state is not None and (
            state.solver != solver
            or state.signature != problem.signature()
            or getattr(state, "sublinear", None) not in (None, oracle == "sublinear")
        ):
            state = None
        prev_history = list(self.history_) if state is not None else []
        check_every = self._check_schedule(1, tol)
        W, P, history, state, converged = fit_multilabel(
            problem, solver=solver, C=C, max_iter=max_iter, tol=tol, rng=rng, state=state,
            verbose=self.verbose, callback=self.callback, rho=rho, eta=eta,
            sublinear=oracle == "sublinear", check_every=check_every, max_time=self.max_time,
            n_jobs=self.n_jobs, training_partitions=self.training_partitions or 1,
            keep_state=self.warm_start)
        self._set_model(W, P, E, n_features, prev_history + history, converged)
        self._solver_state = state if self.warm_start else None
        return self

    def _set_model(self, W, P, E, n_features, history, converged):
        """The fitted attributes from the weights ``W`` ((n_features + 1, L)
        with the intercept column's row, else (n_features, L)) and the pair
        weights ``P`` (upper triangle (L, L)) on the edge mask ``E``."""
        L = E.shape[0]
        Pu = np.triu(P, 1) * E
        self.coef_ = np.ascontiguousarray(W[:n_features].T)
        self.intercept_ = (W[n_features] * float(self.intercept_scaling) if self.fit_intercept
                           else np.zeros(L))
        self.pairwise_coef_ = Pu + Pu.T
        self.classes_ = np.arange(L)
        self.n_features_in_ = n_features
        self.history_ = history
        self.n_iter_ = len(history)
        self.converged_ = bool(converged)
        self._edges = E
        self._forest = _rooted_edges(E)

    def _fit_on_cluster(self, bag):
        """Fit on a ``dask.bag.Bag`` of ``(x_i, y_i)`` pairs: GDMM over sample
        blocks built and kept on the workers (two per bag partition, so
        ``training_partitions`` is the bag's ``npartitions``; each round
        pairs every partition's home block with a visiting one drawn anew,
        :mod:`structlearn.learners._gdmm_multilabel_blocks`).  The client
        receives the partitions' sizes and label counts, and holds the
        weights; a warm start is not available here."""
        from ..learners._gdmm_multilabel_storage import INITIAL_PAIRS
        from ..learners.gdmm_multilabel_cluster import fit_gdmm_multilabel_cluster
        from ._dask_multilabel_input import (multilabel_blocks_on_workers,
                                             multilabel_parts_on_workers)

        (C, rho, eta, tol, max_iter, nu, solver, oracle), client = self._bag_fit_params()
        bias = float(self.intercept_scaling) if self.fit_intercept else None
        parts, summary = multilabel_parts_on_workers(client, bag, bias)
        n, d, L = summary["n_samples"], summary["n_features"], summary["n_labels"]
        _check_weight_size(d, L)
        check_memory(8 * 2 * d * L, f"MultiLabelSSVM weights over {d} features and {L} labels "
                     "on the client", "reduce the feature space")
        pairwise = self.pairwise
        if isinstance(pairwise, str) and pairwise in ("auto", "tree"):
            from ..graphs.label_graphs import chow_liu_edges_from_counts
            from ..learners.multilabel import MAX_ENUM_LABELS

            if pairwise == "tree" or L > MAX_ENUM_LABELS:
                pairwise = chow_liu_edges_from_counts(n, summary["counts"], summary["co"])
            else:
                pairwise = "full"
        E = _edge_mask(pairwise, L)
        if isinstance(rho, str):
            rho = _multilabel_auto_rho(summary["sq_norm_sum"] / max(n, 1), C)
        blocks = multilabel_blocks_on_workers(client, parts, summary["part_sizes"],
                                              min(INITIAL_PAIRS, max(int(E.sum()), 1)))
        check_every = self._check_schedule(1, tol)
        W, P, history, converged = fit_gdmm_multilabel_cluster(
            client, blocks, n_samples=n, n_features=d, E=E, C=C, rho=rho, eta=eta,
            max_iter=max_iter, tol=tol, rng=check_random_state(self.random_state),
            verbose=self.verbose, callback=self.callback, check_every=check_every,
            max_time=self.max_time)
        self._set_model(W, P, E, d - (bias is not None), history, converged)
        self._solver_state = None
        return self

    def decision_function(self, X):
        """Unary label scores ``X @ coef_.T + intercept_``, shape (n_samples, n_labels)."""
        from ._validation import check_multilabel

        check_is_fitted(self, ("coef_", "pairwise_coef_"))
        X, _ = check_multilabel(X, n_features=self.n_features_in_)
        return np.asarray(X @ self.coef_.T) + self.intercept_

    def predict(self, X):
        """Highest-scoring labeling of each sample, int64 (n_samples, n_labels) of 0/1."""
        from ..learners.multilabel import MAX_ENUM_LABELS
        from ._validation import check_multilabel

        check_is_fitted(self, ("coef_", "pairwise_coef_"))
        X, _ = check_multilabel(X, n_features=self.n_features_in_)
        L = self.coef_.shape[0]
        E = self._edges
        n_edges = int(E.sum())
        out = np.zeros((X.shape[0], L), dtype=np.int64)
        method = self.inference
        params = self._check_inference()
        forest = getattr(self, "_forest", None)
        if method in ("auto", "exact") and forest is not None and L > MAX_ENUM_LABELS:
            # exact max-product over the tree of label pairs
            from ..inference.exact.binary_forest import binary_forest_map_batch

            rooted, edges = forest
            weights = self.pairwise_coef_[edges[:, 0], edges[:, 1]]
            return self._decode_in_blocks(X, out, lambda U: binary_forest_map_batch(
                U, rooted, weights)[0])
        if method == "auto" and n_edges and L > MAX_ENUM_LABELS:
            # persistency fixes most labels, the rest are enumerated; rows
            # left with more than 16 undecided labels go to batched GDMM
            from ..inference.exact.binary_forest import persistency_map_batch

            a, b = np.nonzero(E)
            edges = np.stack([a, b], axis=1)
            weights = self.pairwise_coef_[a, b]
            return self._decode_in_blocks(X, out, lambda U: persistency_map_batch(
                U, edges, weights)[0])
        if method in ("auto", "exact"):
            if n_edges and L > MAX_ENUM_LABELS:
                raise ValueError(f"exact inference supports at most {MAX_ENUM_LABELS} labels")
            # the unit bias column carries intercept_ exactly
            Xb = sp.csr_matrix(_append_constant(X, 1.0))
            W = np.ascontiguousarray(np.vstack([self.coef_.T, self.intercept_[None, :]]))
            P = np.triu(self.pairwise_coef_, 1)
            rows = self._row_chunks(X.shape[0])
            chunks = [(W, P, E, n_edges, Xb[a:b]) for a, b in rows]
            parts = map_chunks(_predict_exact_rows, chunks, self.n_jobs, self._progress(rows))
            return np.concatenate(parts) if parts else out
        graphs = list(self._sample_graphs(X))
        rows = self._row_chunks(len(graphs))
        chunks = [(graphs[a:b], method, params) for a, b in rows]
        parts = map_chunks(_map_labels, chunks, self.n_jobs, self._progress(rows))
        return np.concatenate(parts) if parts else out

    def _decode_in_blocks(self, X, out, decode):
        """``out[rows] = decode(unary scores of rows)`` over blocks of rows of
        ``X`` (validated): the block's (rows, L) scores are the only dense
        array, about 8 MiB whatever the number of samples."""
        L = out.shape[1]
        step = max(1, _DECODE_BLOCK_ENTRIES // max(L, 1))
        buf = np.empty(min(step, X.shape[0]) * L)
        for r in range(0, X.shape[0], step):
            out[r:r + step] = decode(_unary_scores(X[r:r + step], self.coef_, self.intercept_,
                                                   buf))
        return out

    def _row_chunks(self, n):
        """Contiguous ``(start, stop)`` runs of ``n`` samples, one per job
        (more while progress bars are drawn)."""
        bounds = chunk_bounds(np.ones(n), progress_chunk_count(self.n_jobs, n))
        return list(zip(bounds[:-1], bounds[1:]))

    def _progress(self, rows):
        """``map_chunks``'s progress argument for these row runs."""
        return (f"{type(self).__name__} samples", [b - a for a, b in rows])

    def _sample_graphs(self, X):
        """One binary pairwise factor graph per sample (validated ``X``):
        state 1 of variable ``l`` scores ``decision_function(X)[i, l]``, both
        ends of an edge on score ``pairwise_coef_[a, b]``."""
        from ..graphs import graph_from_edges

        L = self.coef_.shape[0]
        a, b = np.nonzero(self._edges)
        edges = np.stack([a, b], axis=1)
        tables = np.zeros((edges.shape[0], 2, 2))
        tables[:, 1, 1] = self.pairwise_coef_[a, b]
        for scores in self.decision_function(X):
            yield graph_from_edges(np.stack([np.zeros(L), scores], axis=1), edges, tables)

    def predict_topk(self, X, k=5):
        """The ``k`` highest-scoring label sets of each sample.

        Exact: list Viterbi without interactions, enumeration up to
        ``2**16`` label sets; above that, Lawler-Nilsson partitioning over
        LP-relaxed MAP (ranks with certified bounds, see
        :func:`structlearn.inference.solve_mbest`).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        k : int, default=5

        Returns
        -------
        Y : ndarray of int64, shape (n_samples, k', n_labels)
            0/1 label sets, best first; ``k' = min(k, 2 ** n_labels)``.
        scores : ndarray of shape (n_samples, k')
            Their scores (per-label scores plus interaction scores).
        """
        from ..inference.mbest import check_m
        from ._validation import check_multilabel

        k = check_m(k)
        check_is_fitted(self, ("coef_", "pairwise_coef_"))
        X, _ = check_multilabel(X, n_features=self.n_features_in_)
        L = self.coef_.shape[0]
        kk = k if L >= 63 else min(k, 2 ** L)
        method = ("kbest_chain" if not self._edges.any() else
                  "brute_force" if L <= 16 else "auto")
        graphs = list(self._sample_graphs(X))
        rows = self._row_chunks(len(graphs))
        chunks = [(graphs[a:b], kk, method) for a, b in rows]
        parts = map_chunks(_topk_label_sets, chunks, self.n_jobs, self._progress(rows))
        if not parts:
            return np.zeros((0, kk, L), dtype=np.int64), np.zeros((0, kk))
        return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])

    def score(self, X, y):
        """Hamming accuracy: fraction of (sample, label) entries predicted right.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : array-like of shape (n_samples, n_labels)
            True 0/1 label sets.

        Returns
        -------
        accuracy : float
        """
        from ._validation import check_multilabel

        check_is_fitted(self, ("coef_", "pairwise_coef_"))
        _, Y = check_multilabel(X, y, n_features=self.n_features_in_)
        return float(np.mean(self.predict(X) == Y))


def _predict_exact_rows(W, P, E, n_edges, X):
    """Exact best label sets of the rows of ``X`` (CSR with the bias column)."""
    from ..learners._multilabel_kernels import predict_labelings

    out = np.zeros((X.shape[0], W.shape[1]), dtype=np.int64)
    data, indices, indptr = csr_arrays(X)
    predict_labelings(W, P, E, n_edges, data, indices, indptr, out)
    return out


def _map_labels(graphs, method, params):
    """MAP labelings (n_graphs, n_labels) by a registry back-end."""
    from ..inference import solve_map

    return np.array([solve_map(g, method=method, **params).labels for g in graphs],
                    dtype=np.int64).reshape(len(graphs), -1)


def _topk_label_sets(graphs, k, method):
    """The ``k`` best labelings and scores of each graph (padded with zeros
    and ``-inf``)."""
    from ..inference.mbest import solve_mbest

    L = graphs[0].n_vars if graphs else 0
    Y = np.zeros((len(graphs), k, L), dtype=np.int64)
    scores = np.full((len(graphs), k), -np.inf)
    for i, graph in enumerate(graphs):
        res = solve_mbest(graph, k, method)
        Y[i, :res.n_found] = res.labels
        scores[i, :res.n_found] = res.scores
    return Y, scores
