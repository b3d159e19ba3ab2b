"""Online training of first-order chains: the epochs around
:func:`~structlearn.learners._online_chain_kernels.online_chain_epoch`
(perceptron, passive-aggressive, AROW), shared by
:class:`~structlearn.estimators.SequencePerceptron` and
:class:`structlearn.compat.CRF`."""

import logging
import time

import numpy as np

from .._memory import check_memory
from .._progress_bar import progress_tick
from ._online_chain_kernels import (AROW, PA, PA1, PA2, PERCEPTRON, OnlineRule, OnlineScratch,
                                    OnlineWeights, TrainingChains, online_chain_epoch)

__all__ = ["RULES", "fit_online_chain", "observed_weights"]

logger = logging.getLogger(__name__)

RULES = {"perceptron": PERCEPTRON, "pa": PA, "pa1": PA1, "pa2": PA2, "arow": AROW}


def _mask(mask):
    """A mask as the kernels take it: bool, C-contiguous, (0, 0) for none."""
    return np.zeros((0, 0), dtype=np.bool_) if mask is None else np.ascontiguousarray(
        mask, dtype=np.bool_)


def observed_weights(Xcat, offsets, codes, n_labels):
    """The weights CRFsuite creates by default: ``(feature, label)`` pairs
    where a training token with that label has that feature non-zero, and
    the label bigrams of consecutive training tokens.

    Returns
    -------
    W_mask : bool ndarray (n_features, n_labels)
    T_mask : bool ndarray (n_labels, n_labels)
    """
    import scipy.sparse as sp

    n_tokens = codes.shape[0]
    onehot = sp.csr_matrix((np.ones(n_tokens), (np.arange(n_tokens), codes)),
                           shape=(n_tokens, n_labels))
    W_mask = np.asarray((abs(sp.csr_matrix(Xcat)).T @ onehot).toarray() > 0)
    T_mask = np.zeros((n_labels, n_labels), dtype=bool)
    inner = np.ones(n_tokens, dtype=bool)
    inner[offsets[:-1]] = False  # a sequence's first token has no predecessor
    T_mask[codes[np.flatnonzero(inner) - 1], codes[inner]] = True
    return W_mask, T_mask


def fit_online_chain(data, indices, indptr, offsets, codes, n_features, n_labels, *,
                     rule="perceptron", C=1.0, error_sensitive=True, gamma=1.0,
                     variance=1.0, average=True, max_iter=10, epsilon=0.0, shuffle=True,
                     rng=None, W_mask=None, T_mask=None, monitor=None, verbose=0,
                     owner="online chain training"):
    """Online epochs over the training sequences.

    Parameters
    ----------
    data, indices, indptr : float64, int64, int64
        Token features in CSR form (:func:`~structlearn.estimators._validation.csr_arrays`).
    offsets : int64 (n_seq + 1,)
    codes : int64 (n_tokens,)
        True label codes in ``[0, n_labels)``.
    n_features, n_labels : int
    rule : {"perceptron", "pa", "pa1", "pa2", "arow"}, default="perceptron"
        The update (see :mod:`~structlearn.learners._online_chain_kernels`).
    C : float, default=1.0
        Aggressiveness of PA-I and PA-II.
    error_sensitive : bool, default=True
        PA: the cost of a wrong labeling is the square root of its wrong
        tokens (else 1).  AROW's cost is the number of wrong tokens.
    gamma, variance : float, default=1.0
        AROW's regularization and initial confidence.
    average : bool, default=True
        Return the average of the weights over all steps (not AROW).
    max_iter : int, default=10
        Epochs at most.
    epsilon : float, default=0.0
        Stop after an epoch whose mean loss per sequence is at most this
        (0: an epoch without mistakes).
    shuffle : bool, default=True
        A new visiting order every epoch, drawn from ``rng``.
    rng : numpy RandomState, optional
    W_mask, T_mask : bool arrays (n_features, n_labels), (n_labels, n_labels), optional
        The weights that exist (:func:`observed_weights`); the others stay 0.
    monitor : callable or None
        ``monitor(W (n_labels, n_features), T) -> dict`` after every epoch,
        merged into its history record (held-out scores).
    verbose : int, default=0
    owner : str
        What the weights are for, in a MemoryError's message.

    Returns
    -------
    coef : ndarray (n_labels, n_features)
    trans : ndarray (n_labels, n_labels)
    history : list of dict
        Per epoch ``iter``, ``time``, ``objective`` (token errors),
        ``gap`` (NaN), ``token_errors``, ``sequence_errors``, ``loss``.
    converged : bool
        Whether the last epoch met the stopping rule (else ``max_iter`` ended it).
    """
    rule_code = RULES[rule]
    n_seq = offsets.shape[0] - 1
    lengths = np.diff(offsets)
    max_len = int(lengths.max())
    seq_nnz = indptr[offsets[1:]] - indptr[offsets[:-1]]
    n_scratch = 2 * (int(seq_nnz.max()) + max_len)
    # W, the sv scratch and one of the averaging sums (perceptron, PA; the
    # kernel keeps them whether or not they are used) or AROW's confidences
    check_memory(8 * 3 * n_features * n_labels,
                 f"{owner} ({rule}) over {n_features} features and "
                 f"{n_labels} classes", "reduce the feature space")
    W = np.zeros((n_features, n_labels))
    trans = np.zeros((n_labels, n_labels))
    empty = np.zeros((0, 0))
    keeps_sums = rule_code != AROW
    W_acc = np.zeros_like(W) if keeps_sums else empty
    trans_acc = np.zeros_like(trans) if keeps_sums else empty
    sigma_W = empty if keeps_sums else np.full_like(W, float(variance))
    sigma_trans = empty if keeps_sums else np.full_like(trans, float(variance))
    track_average = average and keeps_sums
    chains = TrainingChains(data, indices, indptr, offsets, codes)
    weights = OnlineWeights(W, trans, W_acc, trans_acc, sigma_W, sigma_trans, _mask(W_mask),
                            _mask(T_mask))
    rule_args = OnlineRule(rule_code, float(C), bool(error_sensitive), float(gamma))
    scratch = OnlineScratch(np.zeros_like(W), np.zeros_like(trans),
                            np.empty((n_scratch, 2), dtype=np.int64), np.empty(n_scratch),
                            np.empty((max_len, n_labels)), np.empty(max_len, dtype=np.int64),
                            np.empty(2, dtype=np.int64))
    errors = np.zeros(3)

    def averaged():
        if not track_average or step == 0:
            return W.T.copy(), trans.copy()
        return (W - W_acc / step).T.copy(), trans - trans_acc / step

    history = []
    step = 0
    converged = False
    start = time.perf_counter()
    for epoch in range(int(max_iter)):
        order = (rng.permutation(n_seq) if shuffle else np.arange(n_seq)).astype(np.int64)
        online_chain_epoch(chains, order, weights, step, rule_args, scratch, errors)
        step += n_seq
        record = {
            "iter": epoch + 1,
            "time": time.perf_counter() - start,
            "objective": float(errors[0]),
            "gap": np.nan,
            "token_errors": int(errors[0]),
            "sequence_errors": int(errors[1]),
            "loss": float(errors[2]),
        }
        if monitor is not None:
            record.update(monitor(*averaged()))
        history.append(record)
        progress_tick(record)
        if verbose:
            extra = "".join(f" {k} {v:.4f}" for k, v in record.items() if k.startswith("dev_"))
            logger.info("epoch %d: %d token errors in %d/%d sequences, loss %.4g, %.3f s%s",
                        record["iter"], record["token_errors"], record["sequence_errors"],
                        n_seq, record["loss"], record["time"], extra)
        if errors[1] == 0 or errors[2] / n_seq <= epsilon:
            converged = True
            break
    coef, T = averaged()
    return np.ascontiguousarray(coef), T, history, converged
