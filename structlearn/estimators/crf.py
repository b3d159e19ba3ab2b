"""Conditional random fields: linear chains (L-BFGS) and general pairwise graphs (convex BP).

* :class:`SequenceCRF` -- first-order linear-chain CRF over sparse token
  features, trained on the exact conditional log-likelihood with L-BFGS
  (numba forward-backward), as CRFsuite does.
* :class:`GraphCRF` -- templated pairwise CRF on per-sample graphs, trained
  on the convex-BP approximate likelihood by block BP learning (BBPL),
  inner-dual learning or full-BP learning.
* :func:`image_grid_sample` -- turn an image's per-pixel features into a
  GraphCRF sample on the 4-connected grid.
"""

import logging
import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import check_is_fitted

from .._parallel import (chunk_bounds, map_chunks, n_chunks_for, progress_chunk_count,
                         single_threaded_blas)
from .._verbose import verbose_fit
from .._warnings import warn_user
from ._base import SequenceEstimatorMixin, _equal_labels, chunk_scores
from ._params import (
    COMMON,
    NONNEGATIVE,
    NONNEGATIVE_OR_INF,
    POSITIVE,
    POSITIVE_INT,
    deprecated_option,
)
from ._validation import check_n_classes, csr_arrays, encode_sequence_labels, split_sequences

__all__ = ["SequenceCRF", "GraphCRF", "image_grid_sample"]

logger = logging.getLogger(__name__)


class SequenceCRF(SequenceEstimatorMixin, BaseEstimator):
    """Linear-chain conditional random field trained by L-BFGS.

    A labeling ``z`` of a sequence ``x_1..x_n`` has probability
    proportional to ``exp(sum_t coef_[z_t] @ x_t + sum_t transition_[z_t, z_{t+1}])``.
    Training minimizes, as CRFsuite does, the summed negative conditional
    log-likelihood of the sequences plus ``c1 * ||w||_1 + c2 * ||w||^2`` over
    all weights (L-BFGS; OWL-QN when ``c1 > 0``).  ``log Z``, marginals and
    gradients come from one numba forward-backward pass over all sequences;
    prediction is Viterbi.  ``X`` may also be sentences of per-token feature
    dicts, CRFsuite's input (see ``vectorizer_``).

    Parameters
    ----------
    c1 : float, default=0.0
        L1 penalty (CRFsuite's ``c1``): sparse weights.
    c2 : float, default=1.0
        L2 penalty (CRFsuite's ``c2``; its default).
    all_possible_states : bool, default=False
        False (CRFsuite's default): only the (feature, label) pairs that
        occur in training (a token with that label has that feature) get a
        weight; when they are at most half of all pairs they alone are
        stored and scored (``coef_`` is then a CSR matrix, memory and time
        per iteration in the number of pairs instead of n_features x
        n_classes).  True: every pair has a weight (``coef_`` dense); on
        OCR and Porttinari UPOS it scored 0.008 and 0.003 higher (see
        BENCHMARKS.md) at the cost of memory.
    all_possible_transitions : bool, default=False
        The same for label bigrams: False keeps only the transitions seen in
        training (the others score 0), as CRFsuite does by default.
    alpha : float, optional
        Deprecated: the L2 penalty of the mean log-likelihood,
        ``alpha = 2 * c2 / n_sequences``.  When given it replaces ``c2`` (with
        a FutureWarning); ``c1`` still applies.
    solver : {"lbfgs"}, default="lbfgs"
        Exact likelihood with L-BFGS (the only chain solver).
    max_iter : int, default=1000
        Maximum L-BFGS iterations: a cap rarely reached, the fit normally
        ends by the ``tol`` rule (CRFsuite has no cap and the same rule, so
        both run to the same convergence; e.g. 171 iterations on the
        Porttinari UPOS task, where CRFsuite takes 186).
    tol : float, default=1e-5
        Stop when the objective improved by less than ``tol`` (relative) over
        the last 10 iterations (CRFsuite's ``delta`` and ``period``).
    warm_start : bool, default=False
        Start from the previous solution when refitting with the same
        classes and features.
    random_state : None
        Accepted for API symmetry; training is deterministic.
    verbose : int, default=0
        Log every iteration (logger ``structlearn.learners.chain_crf``).
    n_jobs : int or None, default=None
        Jobs for the likelihood in ``fit`` (a fixed split of the sequences
        into up to four parts, summed in order) and for prediction
        (``predict``, ``predict_topk``, ``score``, ``predict_marginals``):
        chunks of samples on joblib threads (any joblib back-end through
        ``joblib.parallel_config``, e.g. ``"dask"``); ``None`` means 1, ``-1``
        all CPUs.  Results do not depend on it.  Inside
        ``joblib.parallel_config(backend="dask")`` the likelihood of ``fit``
        runs on the ``dask.distributed`` workers instead: the sequences are
        cut into one run per worker, sent once, and every evaluation sums the
        runs' values and gradients (the same fit to rounding).

    Attributes
    ----------
    coef_ : ndarray or csr_matrix of shape (n_classes, n_features)
        Sparse when only the observed (feature, label) pairs are stored
        (see ``all_possible_states``).
    transition_ : ndarray of shape (n_classes, n_classes)
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    n_iter_ : int
        Passes made (over all blocks for bbpl; parameter updates
        otherwise), at most ``max_iter``.
    history_ : list of dict
        One record per pass in the schema shared by every estimator
        (:data:`structlearn.estimators.HISTORY_KEYS`): ``iter`` (1-based),
        ``time`` (seconds since ``fit`` started), ``objective`` (the training
        objective, NaN where it is not computed), ``gap`` (certified duality
        gap; NaN for methods without one); then ``step_norm``, ``n_eval``.

    Examples
    --------
    >>> import numpy as np
    >>> from structlearn.estimators import SequenceCRF
    >>> X = [np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([[0.0, 1.0]])]
    >>> y = [np.array(["a", "b"]), np.array(["b"])]
    >>> [p.tolist() for p in SequenceCRF().fit(X, y).predict(X)]
    [['a', 'b'], ['b']]
    """

    _parameter_constraints = {
        "c1": [NONNEGATIVE],
        "c2": [NONNEGATIVE],
        "all_possible_states": ["boolean"],
        "all_possible_transitions": ["boolean"],
        "alpha": [NONNEGATIVE, deprecated_option("deprecated")],
        "solver": [StrOptions({"lbfgs"})],
        "max_iter": [POSITIVE_INT],
        "tol": [NONNEGATIVE_OR_INF],
        "warm_start": ["boolean"],
        **COMMON,
    }

    def __init__(self, *, c1=0.0, c2=1.0, all_possible_states=False,
                 all_possible_transitions=False, alpha="deprecated", solver="lbfgs", max_iter=1000,
                 tol=1e-5,
                 warm_start=False, random_state=None, verbose=0, n_jobs=None):  # fmt: skip
        self.c1 = c1
        self.c2 = c2
        self.all_possible_states = all_possible_states
        self.all_possible_transitions = all_possible_transitions
        self.alpha = alpha
        self.solver = solver
        self.max_iter = max_iter
        self.tol = tol
        self.warm_start = warm_start
        self.random_state = random_state
        self.verbose = verbose
        self.n_jobs = n_jobs

    @verbose_fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, X_dev=None, y_dev=None):
        """Train on labeled sequences.

        Parameters
        ----------
        X : list of {ndarray, sparse matrix}, each of shape (n_tokens_i, n_features)
            Or sentences of per-token feature dicts.  Or a ``dask.bag.Bag``
            of ``(X_i, y_i)`` pairs (``y`` None; ``X_i`` a matrix or a list
            of feature dicts): each bag partition is validated and encoded
            on the worker that computes it and stays there; the client
            merges the partitions' labels and vocabularies and holds the
            weights (see :meth:`_fit_on_cluster`; a ``distributed.Client``
            must be the default client).
        y : list of array-like, each of shape (n_tokens_i,)
        X_dev, y_dev : lists like ``X`` and ``y``, optional
            Held-out sequences scored after every iteration (CRFsuite's
            holdout evaluation; training does not use them): their token and
            sequence accuracy go into ``history_`` as ``dev_accuracy`` and
            ``dev_sequence_accuracy`` (and into the verbose log).  Give both
            or neither.

        Returns
        -------
        self : SequenceCRF
        """
        from ._dask_input import is_dask_bag

        if is_dask_bag(X):
            if y is not None:
                raise ValueError("with a dask bag of (X_i, y_i) pairs, y must be None")
            return self._fit_on_cluster(X, X_dev, y_dev)
        if y is None:
            raise ValueError("y is required: the label sequences of X (or give a dask bag of "
                             "(X_i, y_i) pairs)")
        return self._fit(X, y, X_dev, y_dev)

    def _fit(self, X, y, X_dev=None, y_dev=None, *, trainer=None, min_freq=1,
             lbfgs_options=None):
        """:meth:`fit`, with what :class:`structlearn.compat.CRF` sets too:
        ``trainer(data, indices, indptr, offsets, codes, d, K, W_mask,
        T_mask, monitor, verbose) -> (coef, trans, history, converged)`` in place of
        L-BFGS (``W_mask``/``T_mask`` None under ``all_possible_states`` /
        ``all_possible_transitions``, else the weights seen in training),
        the vectorizer's ``min_freq``, and options of
        :func:`~structlearn.learners.chain_crf.fit_chain_crf_lbfgs`."""
        from ..learners.chain_crf import compact_features, fit_chain_crf_lbfgs

        _check_dev_pair(X_dev, y_dev)
        Xcat, offsets, ycat = self._check_fit_input(X, y, min_freq)
        Xcat = compact_features(Xcat)  # the stacked copy, in less memory
        n_seq = offsets.shape[0] - 1
        alpha, l1 = self._penalties(n_seq)
        classes, codes = encode_sequence_labels(ycat)
        del ycat  # the codes replace it
        check_n_classes(classes, minimum=2)
        W0, T0 = self._warm_start_weights(classes, Xcat.shape[1])
        monitor = (None if X_dev is None else
                   _dev_monitor(self, X_dev, y_dev, classes, Xcat.shape[1]))
        if trainer is not None:
            return self._fit_trainer(trainer, Xcat, offsets, codes, classes, monitor)
        W, T, history, converged, n_iter = fit_chain_crf_lbfgs(
            Xcat, offsets, codes, classes.shape[0], alpha=alpha, l1=l1,
            all_states=bool(self.all_possible_states),
            all_transitions=bool(self.all_possible_transitions),
            max_iter=int(self.max_iter), tol=float(self.tol), W_init=W0, T_init=T0,
            n_jobs=self.n_jobs,
            verbose=self.verbose, monitor=monitor, **(lbfgs_options or {}),
        )  # fmt: skip
        return self._fitted(W, T, classes, Xcat.shape[1], history, converged, n_iter)

    def _fit_on_cluster(self, bag, X_dev=None, y_dev=None):
        """Fit on a ``dask.bag.Bag`` of ``(X_i, y_i)`` pairs whose partitions
        stay on the workers
        (:func:`structlearn.estimators._dask_input.sequence_parts_on_workers`,
        :func:`structlearn.learners.chain_crf_cluster.fit_chain_crf_cluster`):
        every L-BFGS evaluation sums the partitions' likelihoods there.  The
        same problem as a fit on the bag's sequences in one list (the same
        vocabulary, classes and weight pattern), summed in another order;
        a warm start keeps the vocabulary and starts from the weights."""
        from ..learners._chain_crf_lbfgs import LbfgsOptions
        from ..learners.chain_crf_cluster import fit_chain_crf_cluster
        from ._dask_input import bag_client, sequence_parts_on_workers

        _check_dev_pair(X_dev, y_dev)
        client = bag_client()
        previous = getattr(self, "vectorizer_", None) if self.warm_start else None
        parts, classes, vectorizer, d, n_seq = sequence_parts_on_workers(
            client, bag, vectorizer=previous, compact=True)
        check_n_classes(classes, minimum=2)
        alpha, l1 = self._penalties(n_seq)
        W0, T0 = self._warm_start_weights(classes, d)
        self.vectorizer_ = vectorizer
        monitor = None if X_dev is None else _dev_monitor(self, X_dev, y_dev, classes, d)
        options = LbfgsOptions(l1=l1, max_iter=int(self.max_iter), tol=float(self.tol),
                               grad_tol=float(self.tol))
        W, T, history, converged, n_iter = fit_chain_crf_cluster(
            client, parts, n_features=d, n_classes=classes.shape[0], n_sequences=n_seq,
            alpha=alpha, options=options, all_states=bool(self.all_possible_states),
            all_transitions=bool(self.all_possible_transitions), W_init=W0, T_init=T0,
            verbose=self.verbose, monitor=monitor)
        return self._fitted(W, T, classes, d, history, converged, n_iter)

    def _penalties(self, n_seq):
        """``(alpha, l1)`` of the mean log-likelihood over ``n_seq`` sequences
        (CRFsuite's ``c2`` and ``c1`` of the summed one; the deprecated
        ``alpha``, when given, replaces ``c2``)."""
        deprecated_alpha = not (isinstance(self.alpha, str) and self.alpha == "deprecated")
        if deprecated_alpha:
            warn_user("alpha is deprecated and will be removed; use c2 (CRFsuite's L2 "
                      "penalty of the summed log-likelihood: c2 = alpha * n_sequences / 2)",
                      FutureWarning)
            return float(self.alpha), float(self.c1) / n_seq
        return 2.0 * float(self.c2) / n_seq, float(self.c1) / n_seq

    def _warm_start_weights(self, classes, n_features):
        """``(coef_, transition_)`` to start from under ``warm_start`` with the
        same classes and features, else ``(None, None)``."""
        if (
            self.warm_start
            and hasattr(self, "coef_")
            and self.coef_.shape == (classes.shape[0], n_features)
            and np.array_equal(self.classes_, classes)
        ):
            return self.coef_, self.transition_
        return None, None

    def _fitted(self, W, T, classes, n_features, history, converged, n_iter):
        self.coef_ = W
        self.transition_ = T
        self.classes_ = classes
        self.n_features_in_ = n_features
        self.n_iter_ = n_iter
        self.history_ = history
        self.converged_ = converged
        return self

    def _fit_trainer(self, trainer, Xcat, offsets, codes, classes, monitor):
        """Fit with another trainer of the same chain model (see :meth:`_fit`)."""
        from ..learners.online_chain import observed_weights

        K = classes.shape[0]
        W_mask, T_mask = observed_weights(Xcat, offsets, codes, K)
        coef, trans, history, converged = trainer(
            *csr_arrays(Xcat), offsets, codes, Xcat.shape[1], K,
            None if self.all_possible_states else W_mask,
            None if self.all_possible_transitions else T_mask, monitor, self.verbose)
        self.coef_ = coef
        self.transition_ = trans
        self.classes_ = classes
        self.n_features_in_ = Xcat.shape[1]
        self.n_iter_ = len(history)
        self.history_ = history
        self.converged_ = bool(converged)
        return self

    def predict_marginals(self, X, *, as_dicts=False):
        """Per-token label marginals ``P(y_t = k | x)``.

        Parameters
        ----------
        X : list of {ndarray, sparse matrix}, each (n_tokens_i, n_features)
        as_dicts : bool, default=False
            Return sklearn-crfsuite's form instead: per sequence a list of
            ``{label: probability}`` dicts, one per token.

        Returns
        -------
        marginals : list of ndarray, each of shape (n_tokens_i, n_classes)
            Columns follow ``classes_`` (or, with ``as_dicts``, lists of
            dicts keyed by the labels).
        """
        if as_dicts:
            labels = self.classes_.tolist()
            return [[dict(zip(labels, row)) for row in m.tolist()]
                    for m in self.predict_marginals(X)]
        from ..learners.chain_crf import block_bounds, block_tokens_for

        Xcat, offsets, _ = self._check_X(X, stack=False)
        # the forward-backward's matrix products run over blocks of sequences
        # cut once for the whole input, and each chunk holds whole blocks: the
        # same products (the same bits) for any n_jobs
        size = block_tokens_for(self.classes_.shape[0])
        blocks = block_bounds(offsets, 0, offsets.shape[0] - 1, size)
        cuts = chunk_bounds(offsets[blocks[1:]] - offsets[blocks[:-1]],
                            max(n_chunks_for(self.n_jobs, work=self._work(offsets)),
                                self._memory_chunk_count(Xcat, offsets)))
        chunks = [args + (blocks[a:b + 1] - blocks[a],)  # the chunk's blocks, local
                  for args, a, b in zip(self._chunks(Xcat, offsets, blocks[cuts]),
                                        cuts[:-1], cuts[1:])]
        with single_threaded_blas():  # a threaded product splits its sums differently
            parts = map_chunks(_marginals_chunk, chunks, self.n_jobs)
        # views into each chunk's array: no second copy of the whole output
        return [seq for part, (_, _, local, _, _) in zip(parts, chunks)
                for seq in split_sequences(part, local)]

    def log_likelihood(self, X, y):
        """Mean conditional log-likelihood of the labeled sequences (no penalty).

        Returns
        -------
        ll : float
        """
        from ..learners.chain_crf import chain_crf_objective

        Xcat, offsets, ycat = self._check_X(X, y)
        _, codes = encode_sequence_labels(ycat, self.classes_)
        f, _, _ = chain_crf_objective(self.coef_, self.transition_, Xcat, offsets, codes)
        return -f


def _check_dev_pair(X_dev, y_dev):
    if (X_dev is None) != (y_dev is None):
        raise ValueError("X_dev and y_dev go together: give both or neither "
                         f"(got X_dev={'None' if X_dev is None else 'data'}, "
                         f"y_dev={'None' if y_dev is None else 'data'})")


def _dev_monitor(estimator, X_dev, y_dev, classes, n_features):
    """``monitor(W, T)`` for :func:`fit_chain_crf_lbfgs`: token and sequence
    accuracy of Viterbi on the held-out sequences (validated once, here;
    labels absent from ``classes`` count as errors)."""
    probe = type(estimator)(n_jobs=estimator.n_jobs)
    probe.vectorizer_ = getattr(estimator, "vectorizer_", None)
    probe.classes_, probe.n_features_in_ = classes, n_features
    probe.coef_ = sp.csr_matrix((classes.shape[0], n_features))  # only "fitted" yet
    probe.transition_ = np.zeros((classes.shape[0], classes.shape[0]))
    try:
        Xd, offsets, yd = probe._check_X(X_dev, y_dev)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"X_dev / y_dev: {exc}") from None
    starts = offsets[:-1]

    def monitor(W, T):
        probe.coef_, probe.transition_ = W, T
        hit = _equal_labels(classes[probe._decode(Xd, offsets)], yd)
        whole = np.logical_and.reduceat(hit, starts) if hit.size else hit
        return {"dev_accuracy": float(hit.mean()), "dev_sequence_accuracy": float(whole.mean())}

    return monitor


def _marginals_chunk(rows, coef, offsets, trans, blocks):
    """Token marginals (n_tokens, K) of one chunk of sequences, a
    forward-backward per block (``blocks``: int64, the chunk's first
    sequence of each block and its end, chunk-local)."""
    from ..inference.chains.forward_backward import forward_backward

    unary = chunk_scores(rows, coef)
    K = unary.shape[1]
    node = np.empty_like(unary)
    edges = np.empty((K, K))
    blocks = blocks.tolist()
    with single_threaded_blas():  # already so in threads; this holds it in processes
        for s, e in zip(blocks[:-1], blocks[1:]):
            a, b = offsets[s], offsets[e]
            forward_backward(unary[a:b], offsets[s:e + 1] - a, trans, node[a:b], edges,
                             np.empty(e - s))
    return node


# ---------------------------------------------------------------------------- GraphCRF
def image_grid_sample(features, *, edge_bin_thresholds=None):
    """A :class:`GraphCRF` sample from per-pixel features on the 4-connected grid.

    Parameters
    ----------
    features : array of shape (height, width, d)
    edge_bin_thresholds : increasing array of shape (n_edge_bins - 1,), optional
        Edge ``(u, v)`` goes to bin ``np.digitize(||f_u - f_v||, thresholds)``
        (the feature distance of the two pixels, discretized). Without
        thresholds every edge is in bin 0.

    Returns
    -------
    sample : tuple (node_features, edges, edge_bins)
        ``node_features`` (height * width, d), pixel ``(r, c)`` is node
        ``r * width + c``; ``edges`` (n_edges, 2) from
        :func:`structlearn.graphs.grid_edges`; ``edge_bins`` (n_edges,).
    """
    from ..graphs import grid_edges

    f = np.asarray(features, dtype=np.float64)
    if f.ndim != 3:
        raise ValueError(f"features must have shape (height, width, d), got {f.shape}")
    h, w, d = f.shape
    nodes = f.reshape(h * w, d)
    edges = grid_edges(h, w)
    if edge_bin_thresholds is None:
        bins = np.zeros(edges.shape[0], dtype=np.int64)
    else:
        dist = np.linalg.norm(nodes[edges[:, 0]] - nodes[edges[:, 1]], axis=1)
        bins = np.digitize(dist, np.asarray(edge_bin_thresholds, dtype=np.float64)).astype(np.int64)
    return nodes, edges, bins


def _check_graph_samples(X, n_features=None, n_bins=None):
    """Validate GraphCRF samples and stack them.

    Returns
    -------
    Xcat (n, d), edges (E, 2) over stacked nodes, bins (E,), sample_ptr, edge_ptr
    """
    from ..inference.marginals.convex_bp import check_pairwise_edges

    if isinstance(X, (np.ndarray, str, dict)) or X is None or sp.issparse(X):
        raise TypeError(
            "X must be a list of samples (node_features, edges[, edge_bins]); "
            f"got {type(X).__name__}"
        )
    samples = list(X)
    if not samples:
        raise ValueError("X is empty: expected at least one sample")
    feats, edges_all, bins_all = [], [], []
    sizes = np.empty(len(samples), dtype=np.int64)
    esizes = np.empty(len(samples), dtype=np.int64)
    d_ref = n_features
    offset = 0
    for i, s in enumerate(samples):
        if not isinstance(s, (tuple, list)) or len(s) not in (2, 3):
            raise TypeError(
                f"X[{i}] must be a tuple (node_features, edges) or "
                f"(node_features, edges, edge_bins); got {type(s).__name__}"
            )
        f = np.asarray(s[0])
        if f.dtype == object or f.dtype.kind not in "biuf":
            raise TypeError(f"X[{i}] node features must be real numbers; got dtype {f.dtype}")
        if f.ndim != 2 or f.shape[0] == 0:
            raise ValueError(f"X[{i}] node features must be 2-D (n_nodes, d) with n_nodes >= 1; got shape {f.shape}")
        f = f.astype(np.float64)
        if not np.all(np.isfinite(f)):
            raise ValueError(f"X[{i}] node features contain NaN or infinity")
        if d_ref is None:
            d_ref = f.shape[1]
        elif f.shape[1] != d_ref:
            raise ValueError(
                f"X[{i}] node features have {f.shape[1]} columns, expected {d_ref}"
            )
        n_i = f.shape[0]
        e = check_pairwise_edges(s[1], n_i, name=f"X[{i}] edges")
        if len(s) == 3 and s[2] is not None:
            b = np.asarray(s[2])
            if b.ndim != 1 or b.shape[0] != e.shape[0]:
                raise ValueError(
                    f"X[{i}] edge_bins must have shape ({e.shape[0]},), got {b.shape}"
                )
            if b.size and (not np.issubdtype(b.dtype, np.integer) or b.min() < 0):
                raise ValueError(f"X[{i}] edge_bins must be non-negative integer bin ids")
            b = b.astype(np.int64)
            if n_bins is not None and b.size and b.max() >= n_bins:
                raise ValueError(
                    f"X[{i}] edge_bins reach {int(b.max())}, but the model has {n_bins} bins"
                )
        else:
            b = np.zeros(e.shape[0], dtype=np.int64)
        feats.append(f)
        edges_all.append(e + offset)
        bins_all.append(b)
        sizes[i] = n_i
        esizes[i] = e.shape[0]
        offset += n_i
    sample_ptr = np.zeros(len(samples) + 1, dtype=np.int64)
    np.cumsum(sizes, out=sample_ptr[1:])
    edge_ptr = np.zeros(len(samples) + 1, dtype=np.int64)
    np.cumsum(esizes, out=edge_ptr[1:])
    return (
        np.ascontiguousarray(np.concatenate(feats)),
        np.ascontiguousarray(np.concatenate(edges_all).reshape(-1, 2)),
        np.concatenate(bins_all),
        sample_ptr,
        edge_ptr,
    )


class GraphCRF(BaseEstimator):
    """Templated pairwise CRF on arbitrary graphs, trained by convex-BP learning.

    Each sample is a graph: ``(node_features, edges)`` or ``(node_features,
    edges, edge_bins)`` with ``node_features`` (n_nodes, d), ``edges``
    (n_edges, 2) node pairs and ``edge_bins`` (n_edges,) integer edge-feature
    bins. Node ``u`` scores label ``a`` by ``coef_[a] @ x_u``; edge ``(u, v)``
    in bin ``c`` scores ``(a, b)`` by ``pairwise_[c, a, b]``. Training
    minimizes the mean (over samples) convex-BP negative log-likelihood plus
    ``alpha / 2`` times the squared norm of the weights, by gradient descent
    with a fixed step (Lu, Liu & Huang: BBPL, inner-dual or full-BP
    learning, all reaching the same optimum; see
    :mod:`structlearn.learners.convex_bp_learning`). Counting numbers are
    tree-reweighted, with node counting numbers raised on loopy graphs so
    that BP converges (exact likelihood on trees; see
    :func:`structlearn.inference.marginals.convex_bp.trw_counting_numbers`).

    Parameters
    ----------
    alpha : float, default=1e-3
        L2 penalty.
    solver : {"bbpl", "inner_dual", "full_bp"}, default="bbpl"
    learning_rate : float or "auto", default="auto"
    max_iter : int, default=500
        Passes (over all blocks for bbpl; parameter updates otherwise).
    tol : float, default=1e-4
        Gradient max-norm stopping threshold.
    blocks : int, array or list of arrays, default=20
        BBPL blocks: a number of index ranges per sample, one block-label
        array (n_nodes,) for every sample (e.g. from
        :func:`structlearn.learners.convex_bp_learning.grid_block_labels`),
        or a list with one block-label array per sample.
    block_order : {"sequential", "random"}, default="sequential"
    inner_max_iter : int, default=200
        BP sweeps per update (per block for bbpl).
    inner_tol : float, default=1e-6
        BP stops when no log-belief changed by more than this in a sweep.
        With bbpl, stopping a block's BP early saves most of the work: on
        the paper's synthetic 200 x 200 grid every update made the same
        progress whatever the stopping, and ``inner_tol=1e-3`` reached the
        optimum (within 1e-3) 1.9x faster than BP to 1e-5, one sweep per
        block (``inner_max_iter=1``) 4.3x faster (``benchmarks/
        bench_bbpl_analysis.py``, BENCHMARKS.md).  The defaults keep the
        paper's converged block inference.
    inference : str or callable, default="auto"
        MAP back-end for ``predict`` (a name from
        :func:`structlearn.inference.available_methods`). ``"auto"`` uses an
        exact method on forests, the registry's loopy default when one is
        registered, and otherwise decodes each node's highest convex-BP
        belief (``"marginal"``, also selectable directly).
    inference_params : dict or None, default=None
        Parameters of the ``inference`` back-end (see
        :func:`structlearn.inference.method_parameters`), for instance
        ``{"time_limit": 0.5}`` (seconds per graph); with ``"auto"`` only
        ``time_limit`` applies, ``"marginal"`` takes none.
    warm_start : bool, default=False
    random_state : int, RandomState or None
        Seeds the spanning forests of the counting numbers and the random
        block order.
    verbose : int, default=0
    n_jobs : int or None, default=None
        Jobs for prediction (``predict``, ``predict_topk``, ``predict_marginals``,
        ``score``): chunks of samples on joblib
        threads (any joblib back-end through ``joblib.parallel_config``, e.g.
        ``"dask"``); ``None`` means 1, ``-1`` all CPUs.  Results do not depend
        on it.

    Attributes
    ----------
    coef_ : ndarray (n_classes, n_features)
    pairwise_ : ndarray (n_edge_bins, n_classes, n_classes)
    classes_ : ndarray (n_classes,)
    n_features_in_ : int
    n_edge_bins_ : int
    n_iter_ : int
        Passes made (over all blocks for bbpl; parameter updates
        otherwise), at most ``max_iter``.
    history_ : list of dict
        One record per pass in the schema shared by every estimator
        (:data:`structlearn.estimators.HISTORY_KEYS`): ``iter`` (1-based),
        ``time`` (seconds since ``fit`` started), ``objective`` (the training
        objective, NaN where it is not computed), ``gap`` (certified duality
        gap; NaN for methods without one) (``objective`` with
        ``solver="full_bp"`` only); then ``grad_norm``, ``step_norm``,
        ``bp_sweeps``.
    learning_rate_ : float
    """

    _parameter_constraints = {
        "alpha": [NONNEGATIVE],
        "solver": [StrOptions({"bbpl", "inner_dual", "full_bp"})],
        "learning_rate": [POSITIVE, StrOptions({"auto"})],
        "max_iter": [POSITIVE_INT],
        "tol": [NONNEGATIVE_OR_INF],
        "blocks": [POSITIVE_INT, "array-like"],
        "block_order": [StrOptions({"sequential", "random"})],
        "inner_max_iter": [POSITIVE_INT],
        "inner_tol": [NONNEGATIVE_OR_INF],
        "inference": [str],
        "inference_params": [dict, None],
        "warm_start": ["boolean"],
        **COMMON,
    }

    def __init__(self, *, alpha=1e-3, solver="bbpl", learning_rate="auto", max_iter=500,
                 tol=1e-4, blocks=20, block_order="sequential", inner_max_iter=200,
                 inner_tol=1e-6, inference="auto", inference_params=None, warm_start=False,
                 random_state=None, verbose=0, n_jobs=None):  # fmt: skip
        self.alpha = alpha
        self.solver = solver
        self.learning_rate = learning_rate
        self.n_jobs = n_jobs
        self.max_iter = max_iter
        self.tol = tol
        self.blocks = blocks
        self.block_order = block_order
        self.inner_max_iter = inner_max_iter
        self.inner_tol = inner_tol
        self.inference = inference
        self.inference_params = inference_params
        self.warm_start = warm_start
        self.random_state = random_state
        self.verbose = verbose

    def _block_labels(self, sample_ptr):
        from ..learners.convex_bp_learning import index_block_labels

        sizes = np.diff(sample_ptr)
        blocks = self.blocks
        if isinstance(blocks, numbers.Integral) and not isinstance(blocks, bool):
            return index_block_labels(sample_ptr, int(blocks))
        if isinstance(blocks, np.ndarray) and blocks.ndim == 1 and blocks.dtype != object:
            if np.any(sizes != blocks.shape[0]):
                raise ValueError(
                    f"blocks has {blocks.shape[0]} entries but the samples have "
                    f"{sorted(set(sizes.tolist()))} nodes; pass one array per sample"
                )
            parts = [blocks] * sizes.shape[0]
        else:
            parts = list(blocks)
            if len(parts) != sizes.shape[0]:
                raise ValueError(f"blocks has {len(parts)} arrays, expected one per sample ({sizes.shape[0]})")
        out = []
        for i, p in enumerate(parts):
            p = np.asarray(p)
            if p.shape != (sizes[i],) or not np.issubdtype(p.dtype, np.integer):
                raise ValueError(f"blocks[{i}] must be an integer array of shape ({sizes[i]},)")
            out.append(p.astype(np.int64))
        return np.concatenate(out)

    @verbose_fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Train on labeled graphs.

        Parameters
        ----------
        X : list of tuples (node_features, edges[, edge_bins])
        y : list of array-like, each of shape (n_nodes_i,)

        Returns
        -------
        self : GraphCRF
        """
        from ..learners.convex_bp_learning import fit_convex_bp_crf

        alpha, max_iter, tol = float(self.alpha), int(self.max_iter), float(self.tol)
        inner, itol = int(self.inner_max_iter), float(self.inner_tol)
        rng = check_random_state(self.random_state)
        seed = rng.randint(np.iinfo(np.int32).max)
        self._inference_params()
        Xcat, edges, bins, sample_ptr, _ = _check_graph_samples(X)
        ys = list(y) if not isinstance(y, (str, dict)) and y is not None else None
        if ys is None or len(ys) != sample_ptr.shape[0] - 1:
            raise ValueError(
                f"y must be a list of {sample_ptr.shape[0] - 1} label arrays (one per sample)"
            )
        parts = []
        for i, yi in enumerate(ys):
            a = np.asarray(yi)
            if a.ndim != 1 or a.shape[0] != sample_ptr[i + 1] - sample_ptr[i]:
                raise ValueError(
                    f"y[{i}] must have shape ({sample_ptr[i + 1] - sample_ptr[i]},), got {a.shape}"
                )
            parts.append(a)
        classes, codes = encode_sequence_labels(np.concatenate(parts))
        check_n_classes(classes, minimum=2)
        K = classes.shape[0]
        n_bins = int(bins.max()) + 1 if bins.size else 1
        W0 = V0 = None
        if (
            self.warm_start
            and hasattr(self, "coef_")
            and self.coef_.shape == (K, Xcat.shape[1])
            and np.array_equal(self.classes_, classes)
        ):
            W0 = self.coef_
            V0 = np.zeros((max(n_bins, self.pairwise_.shape[0]), K, K))
            V0[: self.pairwise_.shape[0]] = self.pairwise_
            n_bins = V0.shape[0]
        labels = self._block_labels(sample_ptr) if self.solver == "bbpl" else None
        res = fit_convex_bp_crf(
            Xcat, codes, edges, bins, n_states=K, n_bins=n_bins, sample_ptr=sample_ptr,
            method=self.solver, alpha=alpha, learning_rate=self.learning_rate,
            max_iter=max_iter, tol=tol, block_labels=labels, block_order=self.block_order,
            inner_max_iter=inner, inner_tol=itol, W_init=W0, V_init=V0, random_state=seed,
            verbose=self.verbose,
        )  # fmt: skip
        self.coef_ = res.W
        self.pairwise_ = res.V
        self.classes_ = classes
        self.n_features_in_ = Xcat.shape[1]
        self.n_edge_bins_ = n_bins
        self.n_iter_ = res.n_iter
        self.history_ = res.history
        self.converged_ = res.converged
        self.learning_rate_ = res.learning_rate
        return self

    def __sklearn_tags__(self):
        # X is a list of (node_features, edges[, edge_bins]) samples
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.target_tags.required = True
        return tags

    def _samples(self, X):
        check_is_fitted(self, ("coef_", "pairwise_", "classes_"))
        Xcat, edges, bins, sample_ptr, edge_ptr = _check_graph_samples(
            X, n_features=self.n_features_in_, n_bins=self.n_edge_bins_
        )
        unary = Xcat @ self.coef_.T
        for i in range(sample_ptr.shape[0] - 1):
            lo, hi = sample_ptr[i], sample_ptr[i + 1]
            elo, ehi = edge_ptr[i], edge_ptr[i + 1]
            yield unary[lo:hi], edges[elo:ehi] - lo, bins[elo:ehi]

    def _marginals(self, unary, edges, bins):
        from ..inference.marginals.convex_bp import convex_bp

        return convex_bp(unary, edges, self.pairwise_, edge_tables=bins,
                         max_iter=self.inner_max_iter * 5, tol=1e-8, random_state=0)  # fmt: skip

    def predict_marginals(self, X):
        """Node and edge beliefs of every sample (exact marginals on trees).

        Returns
        -------
        marginals : list of tuples (node_marginals, edge_marginals)
            ``node_marginals`` (n_nodes_i, n_classes) with columns in
            ``classes_`` order; ``edge_marginals`` (n_edges_i, n_classes,
            n_classes), ``[e, a, b]`` for the edge's first node in state
            ``a`` and second in ``b``.
        """
        return self._map_samples(_sample_marginals, X)

    def _inference_params(self):
        from ._validation import check_inference_params

        return check_inference_params(self.inference_params, self.inference, ("marginal",))

    def _decode(self, unary, edges, bins, params):
        from ..graphs import graph_from_edges
        from ..graphs.structure import is_forest
        from ..inference import available_methods, solve_map

        method = self.inference
        if method == "marginal":
            return np.argmax(self._marginals(unary, edges, bins).node_marginals, axis=1)
        graph = graph_from_edges(unary, edges, self.pairwise_[bins])
        if method == "auto" and not is_forest(graph) and "gdmm" not in available_methods():
            return np.argmax(self._marginals(unary, edges, bins).node_marginals, axis=1)
        return np.asarray(solve_map(graph, method=method, **params).labels, dtype=np.int64)

    def predict(self, X):
        """MAP labeling of every sample.

        Returns
        -------
        y_pred : list of ndarray, each of shape (n_nodes_i,)
        """
        return self._map_samples(_sample_labels, X, self._inference_params())

    def predict_topk(self, X, k=5):
        """The ``k`` highest-scoring labelings of each sample graph.

        :func:`structlearn.inference.solve_mbest` with ``method="auto"``:
        exact on chains and forests; on loopy graphs Lawler-Nilsson
        partitioning over LP-relaxed MAP, each rank with a certified bound.

        Parameters
        ----------
        X : list of tuples (node_features, edges[, edge_bins])
        k : int, default=5

        Returns
        -------
        labels : list of ndarray, each of shape (k_i, n_nodes_i)
            Labelings (from ``classes_``), best first.
        scores : list of ndarray, each of shape (k_i,)
        """
        from ..inference.mbest import check_m

        pairs = self._map_samples(_sample_topk, X, check_m(k))
        return [p[0] for p in pairs], [p[1] for p in pairs]

    def _map_samples(self, func, X, *args):
        """``[func(self, sample, *args) for sample in samples]`` over chunks of
        samples, one chunk per job."""
        samples = list(self._samples(X))
        bounds = chunk_bounds(np.array([u.shape[0] for u, _, _ in samples], dtype=np.float64),
                              progress_chunk_count(self.n_jobs, len(samples)))
        chunks = [(func, self, samples[a:b], args) for a, b in zip(bounds[:-1], bounds[1:])]
        progress = (f"{type(self).__name__} samples", np.diff(bounds))
        return [r for part in map_chunks(_each_sample, chunks, self.n_jobs, progress)
                for r in part]

    def score(self, X, y):
        """Node accuracy over all samples.

        Returns
        -------
        accuracy : float
        """
        pred = self.predict(X)
        ys = list(y)
        if len(ys) != len(pred):
            raise ValueError(f"y has {len(ys)} label arrays but X has {len(pred)} samples")
        truth = np.concatenate([np.asarray(a) for a in ys])
        p = np.concatenate(pred)
        if truth.shape != p.shape:
            raise ValueError("y does not match the samples' node counts")
        return float(np.mean(_equal_labels(p, truth)))


def _each_sample(func, estimator, samples, args):
    """``func(estimator, sample, *args)`` for each sample of a chunk."""
    return [func(estimator, sample, *args) for sample in samples]


def _sample_labels(estimator, sample, params):
    return estimator.classes_[estimator._decode(*sample, params)]


def _sample_marginals(estimator, sample):
    r = estimator._marginals(*sample)
    return r.node_marginals, r.edge_marginals


def _sample_topk(estimator, sample, k):
    from ..graphs import graph_from_edges
    from ..inference.mbest import solve_mbest

    unary, edges, bins = sample
    res = solve_mbest(graph_from_edges(unary, edges, estimator.pairwise_[bins]), k)
    return estimator.classes_[res.labels], res.scores
