"""Shared predict/score for first-order chain sequence estimators.

A chain estimator scores a labeling ``z`` of a sequence with features
``x_1..x_n`` as::

    sum_t coef_[z_t] @ x_t  +  sum_{t>=1} transition_[z_{t-1}, z_t]

and predicts the highest-scoring labeling with Viterbi. Subclasses only
implement ``fit``; after fitting they set ``coef_`` (n_classes, n_features),
``transition_`` (n_classes, n_classes), ``classes_`` and ``n_features_in_``.
Everything below then works unchanged.
"""

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import check_is_fitted

from .._parallel import (CHUNKS_PER_JOB, chunk_bounds, iter_chunks, map_chunks,
                         memory_chunk_count, n_chunks_for, progress_chunk_count)
from ._validation import (check_sequence_items, check_sequence_labels, check_sequences,
                          sequence_products, split_sequences, stack_sequences)

__all__ = ["SequenceEstimatorMixin"]


class SequenceEstimatorMixin:
    """Mixin giving ``predict``, ``predict_topk``, ``score`` and ``decision_function``.

    Requires fitted attributes ``coef_``, ``transition_``, ``classes_`` and
    ``n_features_in_`` and the parameter ``n_jobs``. Labels are decoded to
    ``classes_``, so a label never seen during ``fit`` cannot be predicted.
    Decoding runs over chunks of whole sequences, a few per job (threads by
    default; any joblib back-end through ``joblib.parallel_config``); the
    output does not depend on ``n_jobs``.
    """

    def __sklearn_tags__(self):
        # X is a list of per-sequence matrices (dense or sparse), not one 2-D
        # array: scikit-learn's generic estimator checks do not apply
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.sparse = True
        tags.target_tags.required = True
        return tags

    def _check_fit_input(self, X, y, min_freq=1):
        """``(Xcat, offsets, ycat)`` of the training data (see
        :func:`check_sequences`).  Sentences of per-token feature dicts
        (CRFsuite's input) go through a :class:`SequenceVectorizer` fitted
        here (``vectorizer_``, keeping the features of at least ``min_freq``
        tokens; kept under ``warm_start``) straight into one stacked matrix,
        else ``vectorizer_`` is None."""
        from ..datasets.sequence_vectorizer import SequenceVectorizer, is_dict_sequences

        if not is_dict_sequences(X):
            self.vectorizer_ = None
            return check_sequences(X, y)
        previous = getattr(self, "vectorizer_", None)
        if getattr(self, "warm_start", False) and previous is not None:
            Xcat, offsets = previous.transform_stacked(X)
        else:
            self.vectorizer_ = SequenceVectorizer(min_freq=min_freq)
            Xcat, offsets = self.vectorizer_.fit_transform_stacked(X)
        empty = np.flatnonzero(offsets[1:] == offsets[:-1])
        if empty.size:
            raise ValueError(f"X[{empty[0]}] is an empty sequence (0 tokens)")
        return Xcat, offsets, check_sequence_labels(y, offsets)

    def _check_X(self, X, y=None, stack=True):
        """Validate ``X`` (and ``y``) against the fitted estimator; feature
        dicts go through ``vectorizer_`` (unseen features are ignored).
        ``stack=False``: the sequences come back as
        :class:`UnstackedSequences`, stacked later by the chunks that read them
        (only :meth:`_chunks` and :meth:`_unary_scores` take them): a
        prediction holds one chunk's copy of the input at a time."""
        from ..datasets.sequence_vectorizer import is_dict_sequences

        check_is_fitted(self, ("coef_", "transition_", "classes_"))
        if is_dict_sequences(X):
            if getattr(self, "vectorizer_", None) is None:
                raise ValueError("X holds per-token feature dicts, but the estimator was "
                                 "fitted on feature matrices")
            X = self.vectorizer_.transform(X)
        if stack:
            return check_sequences(X, y, n_features=self.n_features_in_)
        parts, offsets, d, sparse = check_sequence_items(X, n_features=self.n_features_in_)
        Xcat = UnstackedSequences(parts, offsets, d, 0, sparse)
        return Xcat, offsets, None if y is None else check_sequence_labels(y, offsets)

    def _unary_scores(self, Xcat):
        """Per-token class scores, float64 C-contiguous (n_tokens, n_classes)."""
        if isinstance(Xcat, UnstackedSequences):
            Xcat = Xcat.stack()
        if sp.issparse(Xcat):
            return chunk_scores(Xcat, _scoring_weights(self.coef_))
        scores = Xcat @ self.coef_.T  # dense rows: an ndarray, whatever coef_ is
        return np.ascontiguousarray(scores, dtype=np.float64)

    def _chunks(self, Xcat, offsets, bounds=None):
        """Work units of whole sequences, about equal in tokens,
        :data:`~structlearn._parallel.CHUNKS_PER_JOB` per job (one for one job):
        ``(rows, coef, offsets, trans)``.  ``rows`` are CSR rows of
        ``Xcat`` or its sequences not yet stacked (:class:`UnstackedSequences`;
        both scored in the chunk: the products are row by row, so identical
        to the whole product) or, for a stacked dense array, the rows of the
        scores computed at once (``coef`` None).  ``bounds``: the chunks'
        first sequences (and the end), when the caller cuts them; else about
        equal runs of tokens, a few per job, and enough of them that one
        chunk's stacked input and scores stay within
        :data:`~structlearn._parallel.CHUNK_BYTES`."""
        trans = np.ascontiguousarray(self.transition_, dtype=np.float64)
        if sp.issparse(Xcat) or isinstance(Xcat, UnstackedSequences):
            source, coef = Xcat, _scoring_weights(self.coef_)
        else:
            source, coef = self._unary_scores(Xcat), None
        if bounds is None:
            n_chunks = max(n_chunks_for(self.n_jobs, CHUNKS_PER_JOB, self._work(offsets)),
                           self._memory_chunk_count(Xcat, offsets))
            bounds = chunk_bounds(np.diff(offsets), n_chunks)
        return [(_rows(source, offsets, a, b), coef, offsets[a:b + 1] - offsets[a], trans)
                for a, b in zip(bounds[:-1], bounds[1:])]

    def _work(self, offsets):
        """The token scores (tokens x classes) of sequences with ``offsets``."""
        return int(offsets[-1]) * self.classes_.shape[0]

    def _memory_chunk_count(self, Xcat, offsets):
        """Chunks enough for one chunk's stacked input (dense rows of
        :class:`UnstackedSequences`) and token scores to stay within
        :data:`~structlearn._parallel.CHUNK_BYTES`."""
        per_token = 8 * self.classes_.shape[0]
        if isinstance(Xcat, UnstackedSequences) and not Xcat.sparse:
            per_token += 8 * Xcat.n_features
        return memory_chunk_count(int(offsets[-1]) * per_token)

    def _decode(self, Xcat, offsets):
        """Viterbi codes (int64, (n_tokens,)) for stacked sequences; over the
        non-zeros of a mostly-zero ``transition_`` where that is faster."""
        parts = [codes for _, _, codes in self._decoded_chunks(Xcat, offsets)]
        return np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)

    def _decoded_chunks(self, Xcat, offsets):
        """:meth:`_decode` chunk by chunk, as each is done: ``(a, b, codes)``
        for sequences ``a:b`` (codes int64 of their tokens), in order."""
        n_seq = offsets.shape[0] - 1
        # while progress bars are drawn, enough chunks for the bar to move
        n_chunks = max(n_chunks_for(self.n_jobs, CHUNKS_PER_JOB, self._work(offsets)),
                       progress_chunk_count(self.n_jobs, n_seq, self._work(offsets)),
                       self._memory_chunk_count(Xcat, offsets))
        bounds = chunk_bounds(np.diff(offsets), n_chunks)
        chunks = self._chunks(Xcat, offsets, bounds)
        table = _viterbi_table(chunks[0], int(offsets[-1])) if chunks else None
        progress = (f"{type(self).__name__} sequences", np.diff(bounds))
        results = iter_chunks(_viterbi_chunk, [c + (table,) for c in chunks], self.n_jobs,
                              progress)
        for a, b, codes in zip(bounds[:-1], bounds[1:], results):
            yield int(a), int(b), codes

    def decision_function(self, X):
        """Per-token class scores (the unary part of the chain score).

        Parameters
        ----------
        X : list of {ndarray, sparse matrix}, each (n_tokens_i, n_features)

        Returns
        -------
        scores : list of ndarray, each of shape (n_tokens_i, n_classes)
            ``X[i] @ coef_.T``; add ``transition_`` between consecutive
            tokens to score a whole labeling.
        """
        Xcat, offsets, _ = self._check_X(X)
        return split_sequences(self._unary_scores(Xcat), offsets)

    def predict(self, X):
        """Most likely label sequence of each input sequence (Viterbi).

        Parameters
        ----------
        X : list of {ndarray, sparse matrix}, each (n_tokens_i, n_features)

        Returns
        -------
        y_pred : list of ndarray, each of shape (n_tokens_i,)
            Labels taken from ``classes_``.
        """
        Xcat, offsets, _ = self._check_X(X, stack=False)
        y_pred = []
        # each chunk's labels are split while later chunks are decoded
        for a, b, codes in self._decoded_chunks(Xcat, offsets):
            y_pred += split_sequences(self.classes_[codes], offsets[a:b + 1] - offsets[a])
        return y_pred

    def predict_topk(self, X, k=5):
        """The ``k`` highest-scoring label sequences of each input sequence.

        Exact list Viterbi over the fitted chain model
        (:func:`structlearn.inference.chains.viterbi.viterbi_topk`: over the
        non-zeros of a mostly-zero ``transition_`` where that is faster),
        all sequences of a chunk in one compiled call; rank 0 is
        :meth:`predict`'s answer.

        Parameters
        ----------
        X : list of {ndarray, sparse matrix}, each (n_tokens_i, n_features)
        k : int, default=5

        Returns
        -------
        labels : list of ndarray, each of shape (k_i, n_tokens_i)
            Label sequences (from ``classes_``), best first; ``k_i = min(k,
            n_classes ** n_tokens_i)``.
        scores : list of ndarray, each of shape (k_i,)
            Their chain scores (unary plus transition scores).
        """
        from ..inference.mbest import check_m

        k = check_m(k)
        Xcat, offsets, _ = self._check_X(X, stack=False)
        _check_topk_memory(offsets, self.classes_.shape[0], k, self.n_jobs)
        chunks = self._chunks(Xcat, offsets)
        table = _viterbi_table(chunks[0], int(offsets[-1]), k) if chunks else None
        parts = map_chunks(_kbest_chunk, [c + (k, table) for c in chunks], self.n_jobs)
        codes = np.concatenate([p[0] for p in parts])
        scores = np.concatenate([p[1] for p in parts])
        found = np.concatenate([p[2] for p in parts])
        n_seq = offsets.shape[0] - 1
        labels = [self.classes_[codes[offsets[s]:offsets[s + 1], :found[s]].T]
                  for s in range(n_seq)]
        return labels, [scores[s, :found[s]].copy() for s in range(n_seq)]

    def score(self, X, y):
        """Token accuracy: fraction of tokens whose label is predicted right.

        Parameters
        ----------
        X : list of {ndarray, sparse matrix}, each (n_tokens_i, n_features)
        y : list of array-like, each of shape (n_tokens_i,)
            True labels; labels absent from ``classes_`` count as errors.

        Returns
        -------
        accuracy : float
        """
        Xcat, offsets, ycat = self._check_X(X, y, stack=False)
        pred = self.classes_[self._decode(Xcat, offsets)]
        return float(np.mean(_equal_labels(pred, ycat)))


class CsrRows(NamedTuple):
    """Rows of a validated CSR matrix (float64 data, int64 indices) as its
    three arrays: ``data`` and ``indices`` are views, ``indptr`` starts at 0.
    Built without scipy's format checks, which scan the indices (and may
    narrow them to int32) in the calling thread."""

    data: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray


class UnstackedSequences(NamedTuple):
    """Sequences that passed :func:`check_sequence_items`, not yet stacked:
    a chunk of work stacks its own sequences (so a prediction holds one
    chunk's copy of the input, not a copy of all of it), and that Python
    work (under the GIL) overlaps the other chunks' compiled kernels.

    ``offsets``: their row boundaries, from 0; ``first``: the index of
    ``parts[0]`` in the caller's ``X`` (for error messages); ``sparse``:
    whether any part is sparse (they then stack into CSR)."""

    parts: list
    offsets: np.ndarray
    n_features: int
    first: int
    sparse: bool

    def stack(self):
        """The canonical CSR matrix or float64 array of
        :func:`check_sequences` (ValueError naming the sequence for NaN/inf)."""
        return stack_sequences(self.parts, self.offsets, self.n_features, self.sparse,
                               self.first)

    def products(self, weights):
        """``self.stack() @ weights`` (float64 C-contiguous (n_tokens, K))
        for dense sequences, without stacking them all
        (:func:`~structlearn.estimators._validation.sequence_products`)."""
        return sequence_products(self.parts, self.offsets, self.n_features, weights,
                                 self.first)


def _rows(X, offsets, a, b):
    """The rows of sequences ``a:b``: of a dense array (a view), of a
    validated CSR matrix or :class:`CsrRows` (a :class:`CsrRows`; scipy's
    slicing would copy the arrays in the calling thread) or of
    :class:`UnstackedSequences` (a :class:`UnstackedSequences` of those
    sequences)."""
    if isinstance(X, UnstackedSequences):
        return UnstackedSequences(X.parts[a:b], offsets[a:b + 1] - offsets[a], X.n_features,
                                  X.first + a, X.sparse)
    lo, hi = offsets[a], offsets[b]
    if not (sp.issparse(X) or isinstance(X, CsrRows)):
        return X[lo:hi]
    first, stop = X.indptr[lo], X.indptr[hi]  # their stored entries
    return CsrRows(X.data[first:stop], X.indices[first:stop], X.indptr[lo:hi + 1] - first)


def _scoring_weights(coef):
    """``coef_`` in the form :func:`chunk_scores` takes: an F-ordered
    float64 (K, d) array, whose transpose is the C-ordered (d, K) array that
    sparse products read in place (an SSVM's ``coef_`` is one already; a
    C-ordered ``coef_`` is copied once here instead of inside every product),
    or, for a sparse ``coef_`` (pair-stored weights), its transpose as a CSR
    matrix (d, K) with int64 indices."""
    if not sp.issparse(coef):
        return np.asfortranarray(coef, dtype=np.float64)
    by_feature = sp.csr_matrix(coef, dtype=np.float64).T.tocsr()
    by_feature.sort_indices()
    by_feature.indices = by_feature.indices.astype(np.int64)
    by_feature.indptr = by_feature.indptr.astype(np.int64)
    return by_feature


def chunk_scores(rows, coef):
    """Token scores of a chunk (C-contiguous float64 (n, K)) of CSR ``rows``
    (a :class:`CsrRows` or a CSR matrix): ``rows @ coef.T`` for a dense
    ``coef`` (K, d); for a CSR ``coef`` (d, K) from :func:`_scoring_weights`,
    a kernel over its stored entries only (O(sum over the token features of
    their stored labels)); ``rows`` themselves when they already are scores
    (``coef`` None).  Both kernels run without the GIL (scipy's sparse
    product holds it: the chunks of ``n_jobs`` threads would score their
    tokens one after the other)."""
    if coef is None:
        return rows
    if isinstance(rows, UnstackedSequences):
        if not (rows.sparse or sp.issparse(coef)):
            return rows.products(coef.T)
        rows = rows.stack()
    if not sp.issparse(rows) and not isinstance(rows, CsrRows):  # dense rows
        weights = coef if sp.issparse(coef) else coef.T  # (d, K) either way
        return np.ascontiguousarray(rows @ weights, dtype=np.float64)
    data = np.asarray(rows.data, dtype=np.float64)
    indices = rows.indices.astype(np.int64, copy=False)
    indptr = rows.indptr.astype(np.int64, copy=False)
    n = indptr.shape[0] - 1
    if sp.issparse(coef):
        from ..learners._chain_crf_kernels import sparse_unary_scores

        out = np.empty((n, coef.shape[1]))
        sparse_unary_scores(coef.data, coef.indptr, coef.indices, data, indices, indptr, out)
        return out
    from ..learners._ssvm_chain_kernels import unary_scores

    out = np.empty((n, coef.shape[0]))
    unary_scores(coef.T, data, indices, indptr, 0, n, out)
    return out


def _viterbi_table(chunk, n_positions, k=None):
    """The transition table (one for all the chunks) of the kernel the
    fastest on ``n_positions`` positions: of the Viterbi, or of the list
    Viterbi for ``k`` sequences per chain; timed on the first sequences of
    ``chunk`` where the batch is large
    (:func:`~structlearn.inference.chains.viterbi.timed_transition_table`)."""
    from ..inference.chains.viterbi import leading_sequences, timed_transition_table

    rows, coef, offsets, trans = chunk

    def probe(table, n):
        m = leading_sequences(offsets, n)
        args = (_rows(rows, offsets, 0, m), coef, offsets[:m + 1], trans)
        if k is None:
            _viterbi_chunk(*args, table)
        else:
            _kbest_chunk(*args, k, table)

    decoder = "viterbi" if k is None else "topk"
    return timed_transition_table(trans, n_positions, probe, decoder, k or 1)


def _viterbi_chunk(rows, coef, offsets, trans, table):
    """Viterbi codes of one chunk of sequences (``table``: see
    :func:`~structlearn.inference.chains.viterbi.viterbi`)."""
    from ..inference.chains.viterbi import viterbi

    unary = chunk_scores(rows, coef)
    out = np.empty(unary.shape[0], dtype=np.int64)
    viterbi(unary, offsets, trans, out, table)
    return out


def _check_topk_memory(offsets, K, k, n_jobs):
    """``MemoryError`` naming the sizes when a list Viterbi would not fit: each
    running job keeps ``k`` entries (score, state, rank) per label and token
    of its longest sequence; the output holds ``k`` labels per token twice."""
    from joblib import effective_n_jobs

    from .._memory import check_memory
    from .._parallel import check_n_jobs

    n_jobs = check_n_jobs(n_jobs)
    lengths = np.diff(offsets)
    longest = int(lengths.max(initial=0))
    jobs = 1 if n_jobs in (None, 1) else min(effective_n_jobs(n_jobs), lengths.shape[0])
    nbytes = 24 * longest * K * k * max(jobs, 1) + 16 * int(offsets[-1]) * k
    check_memory(nbytes, f"predict_topk(k={k}) over {K} classes, {int(offsets[-1])} tokens "
                 f"(longest sequence {longest})", "lower k or predict fewer sequences per call")


def _kbest_chunk(rows, coef, offsets, trans, k, table):
    """List-Viterbi codes ``(n_tokens, k)``, scores ``(n_seq, k)`` and ranks
    found ``(n_seq,)`` of one chunk of sequences (``table``: see
    :func:`~structlearn.inference.chains.viterbi.viterbi_topk`)."""
    from ..inference.chains.viterbi import viterbi_topk

    unary = chunk_scores(rows, coef)
    n_seq = offsets.shape[0] - 1
    codes = np.zeros((unary.shape[0], k), dtype=np.int64)
    scores = np.empty((n_seq, k))
    found = np.zeros(n_seq, dtype=np.int64)
    viterbi_topk(unary, offsets, trans, k, codes, scores, found, table)
    return codes, scores, found


def _equal_labels(a, b):
    """Elementwise label equality that never broadcasts or stringifies."""
    if a.dtype.kind == b.dtype.kind and a.dtype.kind != "O":
        return a == b
    a_obj = a.astype(object)
    b_obj = b.astype(object)
    return np.fromiter((u == v for u, v in zip(a_obj, b_obj)), dtype=bool, count=a.shape[0])
