"""Linear-chain CRF trained by L-BFGS on the exact conditional log-likelihood.

Objective (``N`` sequences, weights ``W`` (K, d) and ``T`` (K, K))::

    f(W, T) = (1 / N) sum_s [log Z_s - score_s(y_s)] + (alpha / 2) (||W||^2 + ||T||^2)

``score_s(z) = sum_t W[z_t] @ x_t + sum_t T[z_t, z_{t+1}]``. ``log Z`` and
the marginals come from the numba forward-backward over all sequences at
once (:func:`structlearn.inference.chains.forward_backward.forward_backward`,
scaled recursion with a log-domain fallback); the gradient is (expected -
observed) feature counts, accumulated over the nonzero features only
(:mod:`._chain_crf_kernels`). CRFsuite minimizes
``sum_s NLL_s + c2 ||w||^2``, i.e. the same problem with
``alpha = 2 * c2 / N``.
"""

import numpy as np
import scipy.sparse as sp

from .._memory import check_memory
from .._parallel import chunk_bounds, map_chunks, single_threaded_blas
from ._chain_crf_lbfgs import LbfgsOptions, minimize_chain_crf
from ._partitions import active_dask_client
from ..datasets._sparse import csr_around

__all__ = ["fit_chain_crf_lbfgs", "chain_crf_objective", "compact_features"]


_FEWER_FEATURES = "reduce the feature space (SequenceVectorizer's min_freq or n_features)"


class _ChainProblem:
    """Cached arrays for repeated objective/gradient evaluations.

    Unigram weights are stored two ways at once (the layout of
    :class:`._chain_crf_kernels.UnigramWeights`): *rows* of all ``K`` labels
    for the features in ``row_features``, and *pairs* (feature, label) for
    the others.  The parameter vector is ``[values (P,), rows (R, K).ravel(),
    t]``, ``t`` the transition weights: all of ``T.ravel()``, or, with a
    transition pattern (``transitions``: bool (K, K), the bigrams that get a
    weight), only the listed entries (``T.ravel()[trans_index]``; the others
    are 0).  Without a pattern every feature is a row (a dense ``W``);
    with one (``pair_ptr``, ``pair_label``: the labels each feature may
    have), features listed with at least ``ROW_STORAGE_MIN_FILL * K`` labels
    become rows (contiguous, fast inner loops; their unlisted labels are
    held at 0) and the rest stay pairs, so memory and time scale with the
    pattern, not with ``d K``.
    """

    def __init__(self, Xcat, offsets, codes, n_classes, alpha, pair_ptr=None, pair_label=None,
                 transitions=None):
        self.data, self.indices, self.indptr, shape = _csr_arrays(Xcat)
        self.offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        self.codes = np.ascontiguousarray(codes, dtype=np.int64)
        self.K = K = int(n_classes)
        self.d = d = shape[1]
        # the per-feature index arrays (three of int64), twice: training
        # builds the pair layout while the first layout is still alive
        check_memory(6 * 8 * d, f"A CRF over {d} features and {K} labels", _FEWER_FEATURES)
        self.n_seq = self.offsets.shape[0] - 1
        self.alpha = float(alpha)
        self.n_jobs = None
        self.n_eval = 0
        self.sparse_coef = pair_ptr is not None
        row_fixed = None
        if pair_ptr is None:
            self.row_features = np.arange(d, dtype=np.int64)
            self.pair_ptr = np.zeros(d + 1, dtype=np.int64)
            self.pair_label = np.empty(0, dtype=np.int64)
        else:
            pair_ptr = np.asarray(pair_ptr, dtype=np.int64)
            pair_label = np.asarray(pair_label, dtype=np.int64)
            counts = np.diff(pair_ptr)
            as_row = counts >= ROW_STORAGE_MIN_FILL * K
            self.row_features = np.flatnonzero(as_row).astype(np.int64)
            feats = np.repeat(np.arange(d, dtype=np.int64), counts)
            in_row = as_row[feats]
            self.pair_ptr = np.zeros(d + 1, dtype=np.int64)
            np.cumsum(np.where(as_row, 0, counts), out=self.pair_ptr[1:])
            self.pair_label = np.ascontiguousarray(pair_label[~in_row])
            row_index = np.full(d, -1, dtype=np.int64)
            row_index[self.row_features] = np.arange(self.row_features.shape[0])
            row_fixed = np.ones((self.row_features.shape[0], K), dtype=bool)
            row_fixed[row_index[feats[in_row]], pair_label[in_row]] = False
        self.row_of = np.full(d, -1, dtype=np.int64)
        self.row_of[self.row_features] = np.arange(self.row_features.shape[0])
        self.n_pairs = self.pair_label.shape[0]
        self.n_unigram = self.n_pairs + self.row_features.shape[0] * K
        # flat indices of the stored transitions (None: all K^2)
        self.trans_index = None
        if transitions is not None:
            self.trans_index = np.flatnonzero(np.asarray(transitions, dtype=bool).ravel())
        self.n_params = self.n_unigram + (K * K if self.trans_index is None
                                          else self.trans_index.shape[0])
        self._T = None  # (K, K) transitions of stored ones, kept
        # bool over the parameter vector: the weights held at 0 (their
        # gradient is cleared); None: none
        self.fixed = None
        if row_fixed is not None and row_fixed.any():
            self.fixed = np.zeros(self.n_params, dtype=bool)
            self.fixed[self.n_pairs:self.n_unigram] = row_fixed.ravel()
        # a fixed split of the sequences into parts, one gradient buffer each
        # (summed in order, so the result does not depend on how many of them
        # run at once); set by the data and K alone
        n_params = self.n_unigram + K * K
        n_parts = min(MAX_PARTS, max(1, self.codes.shape[0] // PART_MIN_TOKENS),
                      1 + PART_BUFFER_BYTES // (8 * n_params))
        self.parts = chunk_bounds(np.diff(self.offsets), n_parts)
        self._part_grads = []  # allocated at the first evaluation
        self._scratch = []
        self._tokens = None
        self.block_tokens = block_tokens_for(K)
        # the likelihood's parts on dask workers (futures), or None
        self.remote = None

    @property
    def tokens(self):
        """The token features split by storage
        (:class:`._chain_crf_kernels.SplitTokens`), built at first use: the
        CSR arrays themselves when every feature is a row or every feature
        pairs, else a copy of the entries regrouped per token
        (``nnz`` indices, plus ``nnz`` values unless all are 1)."""
        if self._tokens is None:
            from ._chain_crf_kernels import SplitTokens, split_token_entries

            N = self.codes.shape[0]
            data, indices, indptr = self.data, self.indices, self.indptr
            empty_ptr = np.zeros(N + 1, dtype=np.int64)
            empty_index = np.empty(0, dtype=indices.dtype)
            n_rows = self.row_features.shape[0]
            if n_rows == self.d:  # all rows, in feature order
                self._tokens = SplitTokens(indptr, indices, data, empty_ptr, empty_index,
                                           np.empty(0))
            elif n_rows == 0:
                self._tokens = SplitTokens(empty_ptr, empty_index, np.empty(0), indptr, indices,
                                           data)
            else:
                unit = _is_unit_view(data)
                nnz = int(indptr[-1])
                check_memory(nnz * (indices.itemsize + (0 if unit else 8)) + 16 * (N + 1),
                             f"The split token features ({nnz} entries)", _FEWER_FEATURES)
                parts = split_token_entries(self.row_of, indices, indptr, not unit, data)
                row_ptr, row_slot, row_value, pair_ptr, pair_feature, pair_value = parts
                if unit:
                    row_value = np.broadcast_to(np.float64(1.0), row_slot.shape)
                    pair_value = np.broadcast_to(np.float64(1.0), pair_feature.shape)
                self._tokens = SplitTokens(row_ptr, row_slot, row_value, pair_ptr,
                                           pair_feature, pair_value)
        return self._tokens

    def unigram(self, w):
        """The unigram part of a parameter vector (weights or gradient) as
        :class:`._chain_crf_kernels.UnigramWeights` views."""
        from ._chain_crf_kernels import UnigramWeights

        values, rows, _ = self.split(w)
        return UnigramWeights(values, self.pair_ptr, self.pair_label, rows)

    def check_dense_memory(self):
        """``MemoryError`` unless the machine holds a dense (d, K) layout's
        parameter vector, its gradient and the optimizer's work copies."""
        if not self.sparse_coef:
            check_memory(4 * 8 * self.n_params,
                         f"A CRF with dense weights over {self.d} features and {self.K} labels",
                         _FEWER_FEATURES)

    def hold_at_zero(self, unigram):
        """Hold more unigram weights at 0: ``unigram`` bool (K, d) over the
        labels and features (only the stored ones matter)."""
        if self.fixed is None:
            self.fixed = np.zeros(self.n_params, dtype=bool)
        values, rows, _ = self.split(self.fixed)
        values |= unigram[self.pair_label, self._pair_features()]
        rows |= unigram[:, self.row_features].T

    def split(self, w):
        """Views ``values`` (P,), ``rows`` (R, K) and ``t`` of a parameter
        vector: ``T`` (K, K) itself, or its stored entries (n_t,) under a
        transition pattern."""
        P, m, K = self.n_pairs, self.n_unigram, self.K
        t = w[m:]
        return w[:P], w[P:m].reshape(-1, K), t.reshape(K, K) if self.trans_index is None else t

    def transitions(self, t):
        """``T`` (K, K) of the transition part ``t`` of a parameter vector
        (a view, or a kept array the stored entries are written into)."""
        if self.trans_index is None:
            return t
        if self._T is None:
            self._T = np.zeros((self.K, self.K))
        self._T.ravel()[self.trans_index] = t
        return self._T

    def _pair_features(self):
        return np.repeat(np.arange(self.d, dtype=np.int64), np.diff(self.pair_ptr))

    def pack(self, W, T):
        """Parameter vector of ``W`` (K, d; dense or sparse; only the stored
        weights are read) and ``T`` (K, K) (None: zeros)."""
        w = np.zeros(self.n_params)
        values, rows, t = self.split(w)
        if W is not None:
            if sp.issparse(W):
                W = sp.csc_matrix(W)
                values[...] = np.asarray(W[self.pair_label, self._pair_features()]).ravel()
                rows[...] = W[:, self.row_features].toarray().T
            else:
                W = np.asarray(W, dtype=np.float64)
                values[...] = W[self.pair_label, self._pair_features()]
                rows[...] = W[:, self.row_features].T
        if T is not None:
            T = np.asarray(T, dtype=np.float64)
            t[...] = T if self.trans_index is None else T.ravel()[self.trans_index]
        if self.fixed is not None:
            w[self.fixed] = 0.0
        return w

    def weights(self, w):
        """``W`` (K, d) and ``T`` (K, K) of a parameter vector: ``W`` an
        ndarray for a dense problem, else a CSR matrix of its stored
        weights (exact zeros dropped)."""
        values, rows, t = self.split(w)
        T = self.transitions(t).copy()
        if not self.sparse_coef:
            return np.ascontiguousarray(rows.T), T
        R = self.row_features.shape[0]
        labels = np.concatenate([self.pair_label, np.tile(np.arange(self.K), R)])
        feats = np.concatenate([self._pair_features(), np.repeat(self.row_features, self.K)])
        W = sp.csr_matrix((np.concatenate([values, rows.ravel()]), (labels, feats)),
                          shape=(self.K, self.d))
        W.eliminate_zeros()
        return W, T

    def _part_buffers(self, count):
        """``count`` gradient buffers for the parts after the first (which
        writes into the caller's), allocated once."""
        while len(self._part_grads) < count:
            self._part_grads.append(np.empty(self.n_params))
        return self._part_grads[:count]

    def _block_scratch(self, count):
        """``count`` block scratch arrays (2, block_tokens, K), kept."""
        while len(self._scratch) < count:
            rows = max(1, min(self.block_tokens, self.codes.shape[0]))
            self._scratch.append(np.empty((2, rows, self.K)))
        return self._scratch[:count]

    def _nll_grad(self, w, g):
        """Summed negative log-likelihood; its gradient into ``g``.

        The parts' gradients are added to the first part's in part order,
        at once after a parallel evaluation or one by one through a single
        buffer otherwise (the same sums, so the same bits)."""
        if self.remote is not None:
            return self.remote.nll_grad(w, g)
        T = self.transitions(self.split(w)[2])
        bounds = list(zip(self.parts[:-1].tolist(), self.parts[1:].tolist()))
        parallel = len(bounds) > 1 and self.n_jobs not in (None, 1)
        bufs = self._part_buffers(len(bounds) - 1 if parallel else min(1, len(bounds) - 1))
        outs = [g] + (bufs if parallel else bufs * (len(bounds) - 1))
        # block scratch allocated here, once: threads that allocate their
        # own leave the memory in per-thread heaps
        scratch = self._block_scratch(len(bounds) if parallel else 1)
        weights, tokens = self.unigram(w), self.tokens
        jobs = [(weights, T, tokens, self.offsets, self.codes, a, b, self.block_tokens,
                 scratch[i % len(scratch)], self.unigram(out), self.split(out)[2],
                 self.trans_index)
                for i, ((a, b), out) in enumerate(zip(bounds, outs))]  # fmt: skip
        # one BLAS thread: the same bits for any n_jobs, and the parts'
        # threads, not BLAS's own, share the cores
        with single_threaded_blas():
            if parallel:
                # the parts write their gradients into bufs: threads only
                nll = map_chunks(_part_nll_grad, jobs, self.n_jobs, sharedmem=True)
                for buf in bufs:
                    g += buf
                return float(sum(nll))
            nll = [_part_nll_grad(*jobs[0])]
            for job in jobs[1:]:
                nll.append(_part_nll_grad(*job))
                g += bufs[0]
            return float(sum(nll))

    def __call__(self, w, g):
        """Objective at ``w``; its gradient is written into ``g``."""
        from ._chain_crf_kernels import finish_gradient, vdot

        nll = self._nll_grad(w, g)
        self.n_eval += 1
        ww = finish_gradient(g, 1.0 / self.n_seq, self.alpha, w)
        if self.fixed is not None:
            g[self.fixed] = 0.0
        value = nll / self.n_seq + 0.5 * self.alpha * ww
        # a finite gradient whose squared norm overflows stalls L-BFGS too
        finite = np.isfinite(value) and np.isfinite(vdot(g, g))
        if not finite:
            big = float(np.abs(self.data).max()) if self.data.size else 0.0
            raise ValueError(
                f"the training objective or its gradient is not finite at evaluation "
                f"{self.n_eval} (objective {value!r}): the computation overflowed float64; "
                f"the largest feature value is {big:.3g}: scale the features (e.g. "
                "sklearn.preprocessing.MaxAbsScaler)"
            )
        return value


def _csr_arrays(Xcat):
    """``(data, indices, indptr, shape)`` of ``Xcat`` as canonical CSR
    (sorted indices, no duplicates): float64 values (or the shared 1 of
    :func:`compact_features`), int64 or int32 column indices, int64 row
    pointers.  A canonical CSR matrix of these types is used as it is (no
    copy: the stacked features are the largest array of a fit); anything
    else is converted into new arrays, never modified in place (not through
    scipy's constructor, which may copy int64 indices to int32)."""
    if sp.issparse(Xcat) and Xcat.format == "csr":
        X = Xcat
    else:
        X = sp.csr_matrix(Xcat, dtype=np.float64)
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
    data = X.data
    if not _is_unit_view(data):
        data = np.ascontiguousarray(data, dtype=np.float64)
    indices = X.indices  # int32 from compact_features is kept
    if indices.dtype != np.int32 or not indices.flags.c_contiguous:
        indices = np.ascontiguousarray(indices, dtype=np.int64)
    return data, indices, np.ascontiguousarray(X.indptr, dtype=np.int64), X.shape


def _is_unit_view(data):
    """Whether ``data`` is the read-only shared 1 of :func:`compact_features`."""
    return data.dtype == np.float64 and data.ndim == 1 and data.strides == (0,) and (
        data.size == 0 or data[0] == 1.0)


def compact_features(Xcat):
    """``Xcat`` itself, or, for a canonical CSR matrix, the same matrix in
    less memory for the likelihood kernels (which read either form): column
    indices as int32 (when the columns allow), and, when every stored value
    is 1 (indicator features, the usual CRFsuite input), the values as one
    read-only 1 seen by every entry instead of an ``nnz`` array.  For int64
    indices and indicator values that is a third of the memory."""
    if not (sp.issparse(Xcat) and Xcat.format == "csr" and Xcat.has_canonical_format
            and Xcat.data.dtype == np.float64 and Xcat.nnz > 1):
        return Xcat
    data, indices = Xcat.data, Xcat.indices
    if not _is_unit_view(data) and np.all(data == 1.0):
        data = np.broadcast_to(np.float64(1.0), data.shape)
    if indices.dtype != np.int32 and Xcat.shape[1] <= np.iinfo(np.int32).max:
        indices = indices.astype(np.int32)
    if data is Xcat.data and indices is Xcat.indices:
        return Xcat
    return csr_around(data, indices, Xcat.indptr, Xcat.shape, canonical=True)


def _part_nll_grad(weights, trans, tokens, offsets, codes, seq_lo, seq_hi, block_tokens, scratch,
                   grad, grad_t, trans_index=None):  # fmt: skip
    """Summed negative log-likelihood of sequences ``seq_lo:seq_hi`` and its
    gradient (no penalty, no averaging) into ``grad`` and ``grad_t``
    (overwritten).

    Parameters
    ----------
    weights : UnigramWeights
        The unigram weights (:mod:`._chain_crf_kernels`).
    trans : float64 (K, K)
    tokens : SplitTokens
        The token features split by storage.
    offsets : int64 (n_seq + 1,)
    codes : int64 (N,)
    seq_lo, seq_hi : int
    block_tokens : int
    scratch : float64 (2, block_tokens, K)
        Scores and marginals of a block (a longer sequence gets its own).
    grad : UnigramWeights
        Views of the gradient buffer, in the layout of ``weights``.
    grad_t : float64 (K, K), or (n_t,)
        The transition gradient: ``T``'s, or the entries ``trans_index``
        of the flattened (K, K) gradient.
    trans_index : int64 (n_t,) or None

    The sequences are taken in blocks of whole sequences of about
    ``block_tokens`` tokens (scores, forward-backward and gradient of a
    block while it is in cache; no (n_tokens, K) array).  A module-level
    function, so that :func:`map_chunks` can run parts on any back-end.
    """
    from ..inference.chains.forward_backward import forward_backward
    from ._chain_crf_kernels import block_nll_grad, block_scores

    K = trans.shape[0]
    grad.values[:] = 0.0
    grad.rows[...] = 0.0
    grad_T = grad_t if trans_index is None else np.empty((K, K))
    grad_T[...] = 0.0
    unary, marg = scratch
    block_T = np.empty((K, K))
    nll = 0.0
    bounds = block_bounds(offsets, seq_lo, seq_hi, block_tokens)
    with single_threaded_blas():  # already so in threads; this holds it in processes
        for s, e in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
            t0 = int(offsets[s])
            n = int(offsets[e]) - t0
            if n > unary.shape[0]:  # one sequence longer than a block
                unary, marg = np.empty((n, K)), np.empty((n, K))
            u, m = unary[:n], marg[:n]
            local = offsets[s:e + 1] - t0
            logz = np.empty(e - s)
            block_scores(weights, tokens, t0, u)
            forward_backward(u, local, trans, m, block_T, logz)
            nll += block_nll_grad(m, u, local, codes, trans, block_T, tokens, t0, logz, grad,
                                  grad_T)  # fmt: skip
    if trans_index is not None:
        np.take(grad_T.ravel(), trans_index, out=grad_t)
    return nll


def block_tokens_for(K):
    """Tokens per block of the likelihood (and of marginals) at ``K`` labels."""
    return min(BLOCK_MAX_TOKENS, max(16, BLOCK_ENTRIES // K))


def block_bounds(offsets, seq_lo, seq_hi, block_tokens):
    """Sequence indices cutting ``seq_lo:seq_hi`` into blocks of whole
    sequences of at most ``block_tokens`` tokens (a longer sequence alone)."""
    ends = offsets[seq_lo + 1:seq_hi + 1] - offsets[seq_lo]  # end of each sequence
    bounds = [seq_lo]
    base = 0
    while bounds[-1] < seq_hi:
        # the sequences that end within the block, at least one
        nxt = seq_lo + int(np.searchsorted(ends, base + block_tokens, side="right"))
        nxt = min(max(nxt, bounds[-1] + 1), seq_hi)
        bounds.append(nxt)
        base = int(offsets[nxt] - offsets[seq_lo])
    return np.asarray(bounds, dtype=np.int64)


def _problem_for(Xcat, offsets, codes, K, alpha, W):
    """The problem whose parameter layout holds ``W``: pair-stored for a
    sparse ``W`` (its stored entries), dense otherwise."""
    if not sp.issparse(W):
        prob = _ChainProblem(Xcat, offsets, codes, K, alpha)
        prob.check_dense_memory()
        return prob
    Wt = sp.csr_matrix(W).T.tocsr()
    Wt.sort_indices()
    return _ChainProblem(Xcat, offsets, codes, K, alpha, Wt.indptr, Wt.indices)


def chain_crf_objective(W, T, Xcat, offsets, codes, *, alpha=0.0):
    """Objective and gradient of the chain CRF at (W, T).

    Parameters
    ----------
    W : ndarray or sparse matrix (K, d)
        A sparse ``W`` is read as pair-stored weights: only its stored
        entries are parameters.
    T : ndarray (K, K)

    Returns
    -------
    f : float
    grad_W : ndarray (K, d), or a CSR matrix (K, d) with ``W``'s pattern
    grad_T : ndarray (K, K)
    """
    W = W if sp.issparse(W) else np.asarray(W, dtype=np.float64)
    prob = _problem_for(Xcat, offsets, codes, W.shape[0], alpha, W)
    w = prob.pack(W, np.asarray(T, dtype=np.float64))
    g = np.empty_like(w)
    f = prob(w, g)
    gW, gT = prob.weights(g)
    return f, gW, gT


def observed_pairs(prob):
    """The (feature, label) pairs of the training data (a token with that
    label has that feature non-zero), per feature: ``pair_ptr`` (d + 1,) and
    ``pair_label`` (P,) ascending within a feature."""
    from ._chain_crf_kernels import observed_pair_lists

    return observed_pair_lists(prob.data, prob.indices, prob.indptr, prob.codes, prob.d, prob.K)


def observed_transitions(offsets, codes, K):
    """bool (K, K): the label bigrams that occur within training sequences."""
    within = np.ones(max(codes.shape[0] - 1, 0), dtype=bool)
    within[offsets[1:-1] - 1] = False  # no bigram across sequences
    seen = np.zeros((K, K), dtype=bool)
    seen[codes[:-1][within], codes[1:][within]] = True
    return seen


# the likelihood's sequences are cut into at most MAX_PARTS parts of at least
# PART_MIN_TOKENS tokens (with one extra gradient buffer per part beyond the
# first, within PART_BUFFER_BYTES), evaluated in parallel under n_jobs;
# each part is processed in blocks of about BLOCK_ENTRIES / K tokens, at most
# BLOCK_MAX_TOKENS (few labels gain nothing from longer blocks; many labels
# need them long for the grouped forward-backward's matrix products)
MAX_PARTS = 4
PART_MIN_TOKENS = 4096
PART_BUFFER_BYTES = 256 * 2**20
BLOCK_ENTRIES = 2**18
BLOCK_MAX_TOKENS = 2048

# pair storage is used for all_states=False when at most this fraction of
# the d K (feature, label) pairs occurs; denser patterns run faster dense
PAIR_STORAGE_MAX_FILL = 0.5
# under pair storage, a feature seen with at least this fraction of the K
# labels is stored as a full row (its unseen labels held at 0)
ROW_STORAGE_MIN_FILL = 0.5


def _training_problem(Xcat, offsets, codes, K, alpha, all_states, all_transitions, storage):
    """The problem to minimize: dense weights, dense with the unseen pairs
    held at 0, or stored on the observed pairs (``storage``: 'auto',
    'dense' or 'pairs'); all transitions, or only the observed ones stored."""
    trans = None if all_transitions else observed_transitions(
        np.asarray(offsets, dtype=np.int64), np.asarray(codes, dtype=np.int64), K)
    prob = _ChainProblem(Xcat, offsets, codes, K, alpha, transitions=trans)
    return _restricted(prob, None if all_states else observed_pairs(prob), trans, storage)


def uses_pair_storage(pair_label, d, K, storage):
    """Whether the observed (feature, label) pairs (``pair_label`` (P,)) are
    stored as pairs (``storage`` 'pairs', or 'auto' and at most
    ``PAIR_STORAGE_MAX_FILL`` of the ``d K`` pairs), not in dense rows."""
    fill = pair_label.shape[0] / max(d * K, 1)
    return storage == "pairs" or (storage == "auto" and fill <= PAIR_STORAGE_MAX_FILL)


def _restricted(prob, observed, trans, storage):
    """``prob`` (dense rows) with weights on the ``observed`` pairs only
    (``(pair_ptr, pair_label)``; None: all pairs): a problem of the same
    data stored on the pairs, or ``prob`` with the others held at 0."""
    if observed is not None:
        ptr, lab = observed
        if uses_pair_storage(lab, prob.d, prob.K, storage):
            tokens = csr_around(prob.data, prob.indices, prob.indptr,
                                (prob.codes.shape[0], prob.d), canonical=True)
            pairs = _ChainProblem(tokens, prob.offsets, prob.codes, prob.K, prob.alpha, ptr,
                                  lab, trans)
            pairs.n_seq = prob.n_seq
            return pairs
        prob.check_dense_memory()
        seen = np.zeros((prob.K, prob.d), dtype=bool)
        seen[lab, np.repeat(np.arange(prob.d), np.diff(ptr))] = True
        prob.hold_at_zero(~seen)
        return prob
    prob.check_dense_memory()
    return prob


def layout_problem(d, K, n_seq, alpha, observed, trans, storage):
    """The problem of a fit whose training data are elsewhere: the layout of
    the parameter vector (as :func:`_training_problem` builds it from the
    data's ``observed`` pairs, ``(pair_ptr, pair_label)`` or None for all,
    and bigram pattern ``trans``, bool (K, K) or None), the penalty and the
    number of sequences; no tokens.  Its likelihood is a ``remote`` one."""
    empty = csr_around(np.empty(0), np.empty(0, dtype=np.int64), np.zeros(1, dtype=np.int64),
                       (0, int(d)), canonical=True)
    prob = _ChainProblem(empty, np.zeros(1, dtype=np.int64), np.empty(0, dtype=np.int64),
                         K, alpha, transitions=trans)
    prob.n_seq = int(n_seq)
    return _restricted(prob, observed, trans, storage)


def fit_chain_crf_lbfgs(
    Xcat,
    offsets,
    codes,
    n_classes,
    *,
    alpha=1e-4,
    l1=0.0,
    all_states=True,
    all_transitions=True,
    max_iter=100,
    tol=1e-5,
    period=10,
    memory=6,
    W_init=None,
    T_init=None,
    storage="auto",
    n_jobs=None,
    verbose=0,
    monitor=None,
    grad_tol=None,
    max_linesearch=None,
):
    """Fit a linear-chain CRF by L-BFGS.

    Limited-memory BFGS (two-loop recursion, ``memory`` pairs, pairs with
    non-positive curvature skipped) with a backtracking Armijo line search
    that tries the unit step first (``1 / ||g||`` on the first iteration).

    Parameters
    ----------
    Xcat : csr_matrix or ndarray (n_tokens, d)
        Stacked token features.
    offsets : int64 (n_seq + 1,)
    codes : int64 (n_tokens,)
        Labels in ``[0, n_classes)``.
    n_classes : int
    alpha : float, default=1e-4
        L2 penalty (objective in the module docstring).
    l1 : float, default=0.0
        L1 penalty: ``l1 * ||w||_1`` (all weights) is added to the objective
        and minimized by OWL-QN (orthant-wise L-BFGS, Andrew and Gao 2007):
        directions from the pseudo-gradient, kept in its descent orthant,
        line-search points projected back onto the current orthant.
        CRFsuite's ``c1`` corresponds to ``l1 = c1 / n_sequences``.
    all_states, all_transitions : bool, default=True
        When False, only the (feature, label) pairs that occur in the
        training data (a token with that label has that feature non-zero),
        respectively the label bigrams that occur, get weights; the others
        stay 0 (CRFsuite's ``feature.possible_states`` /
        ``feature.possible_transitions`` off, its default).
    max_iter : int, default=100
        Maximum L-BFGS iterations.
    tol : float, default=1e-5
        Stop when the objective improved by less than ``tol`` (relative)
        over the last ``period`` iterations, or when
        ``||g|| <= tol * max(1, ||w||)`` (CRFsuite's rules).
    period : int, default=10
    memory : int, default=6
        Number of stored correction pairs.
    W_init, T_init : arrays, optional
        Warm start (``W_init`` dense or sparse; only its entries at the
        stored weights are used).
    storage : {"auto", "dense", "pairs"}, default="auto"
        How the unigram weights are kept when ``all_states`` is False:
        "pairs" stores and scores only the observed (feature, label) pairs
        (features seen with at least ``ROW_STORAGE_MIN_FILL`` of the labels
        as full rows, the rest as pairs; memory and time per evaluation in
        the number of pairs; ``W`` comes back as a CSR matrix), "dense" a
        (d, K) array with the others held
        at 0; "auto" picks pairs when at most ``PAIR_STORAGE_MAX_FILL`` of
        the d K pairs are observed.  Ignored when ``all_states`` is True.
    n_jobs : int or None, default=None
        Threads for the likelihood: its sequences are cut into a fixed
        number of parts (set by the data, not by ``n_jobs``) whose gradients
        are summed in order, so the fit does not depend on ``n_jobs``.
    verbose : int, default=0
    grad_tol : float or None, default=None
        The gradient-norm test's tolerance (CRFsuite's ``epsilon``); None:
        ``tol``.
    max_linesearch : int or None, default=None
        Line-search trials per iteration at most (the last point is then
        taken, as CRFsuite does); None: until the Armijo condition holds.
    monitor : callable or None, default=None
        ``monitor(W, T) -> dict`` called after every iteration with that
        iteration's weights (as returned below); its items are added to the
        iteration's history record (held-out scores, say).

    Returns
    -------
    W : ndarray (K, d), or a CSR matrix (K, d) under pair storage
    T : ndarray (K, K)
    history : list of dict
        Per iteration: ``iter``, ``time``, ``objective``, ``step_norm``,
        ``n_eval`` (objective evaluations so far).
    converged : bool
    n_iter : int
    """
    if storage not in ("auto", "dense", "pairs"):
        raise ValueError(f"storage must be 'auto', 'dense' or 'pairs'; got {storage!r}")
    K = int(n_classes)
    prob = _training_problem(Xcat, offsets, codes, K, alpha, all_states, all_transitions,
                             storage)
    prob.n_jobs = n_jobs
    client = active_dask_client()
    if client is not None:  # the likelihood's parts on the workers, for the whole fit
        from ._chain_crf_dask import RemoteLikelihood

        prob.remote = RemoteLikelihood.from_problem(prob, client)
    options = LbfgsOptions(l1=float(l1), max_iter=int(max_iter), tol=float(tol),
                           period=int(period), memory=int(memory),
                           grad_tol=tol if grad_tol is None else float(grad_tol),
                           max_linesearch=max_linesearch)
    try:
        w, history, converged, n_iter = minimize_chain_crf(
            prob, prob.pack(W_init, T_init), options, verbose=verbose, monitor=monitor)
    finally:
        prob.remote = None  # the workers' parts are released
    W, T = prob.weights(w)
    return W, T, history, converged, n_iter
