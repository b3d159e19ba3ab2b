"""Numba kernel for online training of first-order chains: the averaged
structured perceptron, passive-aggressive updates and AROW.

Every rule visits the training sequences one at a time, decodes each with
Viterbi under the current weights and, when the decoded labeling ``z``
differs from the truth ``y``, moves the weights along the feature difference
``sv = phi(y) - phi(z)`` (token features per label, label pairs of
consecutive tokens).  The rules differ in the step:

* perceptron (Collins 2002): ``w += sv``;
* passive-aggressive (Crammer et al. 2006), with the loss
  ``l = cost - (score(y) - score(z))``, ``cost = sqrt(#wrong tokens)`` when
  error sensitive, else 1: PA ``tau = l / ||sv||^2``, PA-I
  ``min(C, l / ||sv||^2)``, PA-II ``l / (||sv||^2 + 1 / (2 C))``;
  ``w += tau sv``;
* AROW (Crammer, Kulesza and Dredze 2009), diagonal variances ``sigma``
  (one per weight, starting at ``variance``), as CRFsuite runs it: the loss
  with cost = the number of wrong tokens, ``beta = 1 / (sum sigma sv^2 +
  gamma)``, ``w += l beta sigma sv``, ``1 / sigma += sv^2 / gamma``.

Averaging (perceptron and passive-aggressive) uses the trick of Daume
(2006): besides the weights ``w`` keep ``acc = sum_s (s - 1) * delta_s`` over
the updates ``delta_s`` made at the ``s``-th example seen (1-based, counted
across epochs). After ``T`` examples the average of the weights after each
example is::

    (1 / T) * sum_{t=1..T} w_t  =  w - acc / T

so averaging costs one extra sparse update per update, not a pass over all
weights per example.

Weights are stored feature-major, ``W[j, k]`` for feature ``j`` and label
``k``, so that the inner loop over labels is contiguous.  ``sv`` is gathered
in a scratch array of the weights' shape (only its touched entries are
visited and reset), so repeated (feature, label) pairs add up before its norm
is taken.
"""

from typing import NamedTuple

import numba as nb
import numpy as np

from ..inference.chains._chain_kernels import viterbi_batch
from ._chains import TrainingChains

__all__ = ["AROW", "PA", "PA1", "PA2", "PERCEPTRON", "OnlineRule", "OnlineScratch",
           "OnlineWeights", "TrainingChains", "online_chain_epoch", "sequence_scores"]

PERCEPTRON, PA, PA1, PA2, AROW = 0, 1, 2, 3, 4


class OnlineWeights(NamedTuple):
    """The weights an online rule updates in place.

    ``W`` float64 (n_features, n_labels), feature-major; ``trans`` float64
    (n_labels, n_labels), ``trans[prev, next]``; ``W_acc``, ``trans_acc``:
    step-weighted sums of the updates (averaging, see the module notes;
    perceptron and PA, else (0, 0)); ``sigma_W``, ``sigma_trans``: AROW's
    confidences (else (0, 0)); ``W_mask``, ``T_mask`` bool: the weights that
    exist (CRFsuite's features: the (feature, label) pairs and label bigrams
    seen in training), the others stay 0 and are no part of ``sv``; (0, 0):
    all exist."""

    W: np.ndarray
    trans: np.ndarray
    W_acc: np.ndarray
    trans_acc: np.ndarray
    sigma_W: np.ndarray
    sigma_trans: np.ndarray
    W_mask: np.ndarray
    T_mask: np.ndarray


class OnlineRule(NamedTuple):
    """Which update and its constants: ``kind`` (:data:`PERCEPTRON`,
    :data:`PA`, :data:`PA1`, :data:`PA2`, :data:`AROW`), ``C`` (PA-I,
    PA-II), ``error_sensitive`` (PA: cost sqrt(#wrong) else 1) and
    ``gamma`` (AROW)."""

    kind: int
    C: float
    error_sensitive: bool
    gamma: float


class OnlineScratch(NamedTuple):
    """Work arrays of one sequence, left as they were found where it says so.

    ``D_W``, ``D_trans`` float64, shapes of the weights, all zeros (left
    all zeros): ``sv`` gathered; ``touched`` int64 (2 (max_seq_nnz +
    max_len), 2) and ``values`` float64 (same length): the entries ``sv``
    touches and their values (``max_seq_nnz``: the most stored features of
    a sequence); ``unary`` float64 (max_len, n_labels): token scores;
    ``pred`` int64 (max_len,): the decoded labels; ``seg`` int64 (2,)."""

    D_W: np.ndarray
    D_trans: np.ndarray
    touched: np.ndarray
    values: np.ndarray
    unary: np.ndarray
    pred: np.ndarray
    seg: np.ndarray


@nb.njit(cache=True, inline="always")
def sequence_scores(data, indices, indptr, a, n, W, scale, out):
    """``out[t, k] = scale * sum_j x_{a+t, j} W[j, k]`` for the ``n`` tokens
    from ``a`` (CSR features, feature-major weights)."""
    K = W.shape[1]
    for t in range(n):
        row = a + t
        for k in range(K):
            out[t, k] = 0.0
        for p in range(indptr[row], indptr[row + 1]):
            j = indices[p]
            v = data[p] * scale
            for k in range(K):
                out[t, k] += v * W[j, k]


@nb.njit(cache=True, inline="always")
def _apply(M, M_acc, sigma, j, k, v, tau, c, arow, gamma):
    """One entry of the update: AROW's confidence-scaled step (and its
    variance shrunk, ``1 / sigma += sv^2 / gamma``), or ``tau v`` with its
    averaging sum."""
    if arow:
        sg = sigma[j, k]
        M[j, k] += tau * sg * v
        sigma[j, k] = 1.0 / (1.0 / sg + v * v / gamma)
    else:
        M[j, k] += tau * v
        M_acc[j, k] += c * tau * v


@nb.njit(cache=True, inline="always")
def _touch(D, j, k, v, touched, n_touched):
    """``D[j, k] += v``, listing ``(j, k)`` when it was 0 (an entry that
    cancelled to 0 and comes back is listed twice; the epoch reads and
    zeroes each entry once, so the duplicate reads 0)."""
    if D[j, k] == 0.0:
        touched[n_touched, 0] = j
        touched[n_touched, 1] = k
        n_touched += 1
    D[j, k] += v
    return n_touched


@nb.njit(cache=True)
def online_chain_epoch(chains, order, weights, step, rule, scratch, errors):
    """One pass over the sequences in ``order``; updates ``weights`` in place.

    Parameters
    ----------
    chains : TrainingChains
    order : int64 (n_visit,)
        Sequence indices in the order they are visited this epoch.
    weights : OnlineWeights
    step : int
        Number of examples seen before this epoch.
    rule : OnlineRule
    scratch : OnlineScratch
    errors : float64 (3,)
        Output: wrongly decoded tokens, sequences with at least one wrong
        token (before their update), and the sum of the losses ``l`` of
        those sequences (PA and AROW; the wrong tokens for the perceptron).
    """
    data, indices, indptr, offsets, y = chains
    W, trans, W_acc, trans_acc, sigma_W, sigma_trans, W_mask, T_mask = weights
    D_W, D_trans, touched, values, unary_buf, pred_buf, seg = scratch
    kind = rule.kind
    C = rule.C
    error_sensitive = rule.error_sensitive
    gamma = rule.gamma
    masked_W = W_mask.shape[0] > 0
    masked_T = T_mask.shape[0] > 0
    tok_err = 0
    seq_err = 0
    loss_sum = 0.0
    for r in range(order.shape[0]):
        s = order[r]
        a = offsets[s]
        n = offsets[s + 1] - a
        sequence_scores(data, indices, indptr, a, n, W, 1.0, unary_buf)
        seg[0] = 0
        seg[1] = n
        viterbi_batch(unary_buf[:n], seg, trans, pred_buf[:n])

        n_wrong = 0
        for t in range(n):
            if pred_buf[t] != y[a + t]:
                n_wrong += 1
        if n_wrong == 0:
            continue
        tok_err += n_wrong
        seq_err += 1
        c = float(step + r)  # (index of this example, 1-based) - 1

        # sv = phi(y) - phi(z), gathered in D_W / D_trans
        n_touched = 0
        margin = 0.0
        for t in range(n):
            yt = y[a + t]
            zt = pred_buf[t]
            if yt == zt:
                continue
            margin += unary_buf[t, yt] - unary_buf[t, zt]
            row = a + t
            for p in range(indptr[row], indptr[row + 1]):
                j = indices[p]
                v = data[p]
                n_touched = _touch(D_W, j, yt, v, touched, n_touched)
                n_touched = _touch(D_W, j, zt, -v, touched, n_touched)
        n_unigram = n_touched
        for t in range(1, n):
            yp = y[a + t - 1]
            yt = y[a + t]
            zp = pred_buf[t - 1]
            zt = pred_buf[t]
            if yp == zp and yt == zt:
                continue
            margin += trans[yp, yt] - trans[zp, zt]
            n_touched = _touch(D_trans, yp, yt, 1.0, touched, n_touched)
            n_touched = _touch(D_trans, zp, zt, -1.0, touched, n_touched)

        # read sv once per entry (a listed duplicate reads 0), leaving D zero
        norm2 = 0.0
        for q in range(n_touched):
            j = touched[q, 0]
            k = touched[q, 1]
            if q < n_unigram:
                v = D_W[j, k]
                D_W[j, k] = 0.0
                if masked_W and not W_mask[j, k]:
                    v = 0.0
                weight = sigma_W[j, k] if kind == AROW else 1.0
            else:
                v = D_trans[j, k]
                D_trans[j, k] = 0.0
                if masked_T and not T_mask[j, k]:
                    v = 0.0
                weight = sigma_trans[j, k] if kind == AROW else 1.0
            values[q] = v
            norm2 += weight * v * v

        tau = 1.0
        if kind == PERCEPTRON:
            loss_sum += n_wrong
        else:
            if kind == AROW:  # CRFsuite's AROW: the wrong tokens themselves
                cost = float(n_wrong)
            else:
                cost = np.sqrt(float(n_wrong)) if error_sensitive else 1.0
            loss = max(cost - margin, 0.0)
            loss_sum += loss
            if kind == PA:
                tau = loss / norm2 if norm2 > 0.0 else 0.0
            elif kind == PA1:
                tau = min(C, loss / norm2) if norm2 > 0.0 else 0.0
            elif kind == PA2:
                tau = loss / (norm2 + 0.5 / C)
            else:  # AROW: loss * beta; each step scaled by its sigma below
                tau = loss / (norm2 + gamma)

        for q in range(n_touched):
            v = values[q]
            if v == 0.0:
                continue
            j = touched[q, 0]
            k = touched[q, 1]
            if q < n_unigram:
                _apply(W, W_acc, sigma_W, j, k, v, tau, c, kind == AROW, gamma)
            else:
                _apply(trans, trans_acc, sigma_trans, j, k, v, tau, c, kind == AROW, gamma)
    errors[0] = tok_err
    errors[1] = seq_err
    errors[2] = loss_sum
