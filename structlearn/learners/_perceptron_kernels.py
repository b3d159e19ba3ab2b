"""Numba kernel for the averaged structured perceptron on first-order chains.

Collins (2002): for each training sequence, decode with Viterbi under the
current weights; if the decoded labeling ``z`` differs from the truth ``y``,
add the features of ``y`` and subtract those of ``z``. Features are the
token features per label (unigram weights) and label pairs of consecutive
tokens (transition weights).

Averaging uses the trick of Daume (2006): besides the weights ``w`` keep
``acc = sum_s (s - 1) * delta_s`` over the updates ``delta_s`` made at the
``s``-th example seen (1-based, counted across epochs). After ``T`` examples
the average of the weights after each example is::

    (1 / T) * sum_{t=1..T} w_t  =  w - acc / T

so averaging costs one extra sparse update per update, not a pass over all
weights per example.

Weights are stored feature-major, ``W[j, k]`` for feature ``j`` and label
``k``, so that the inner loop over labels is contiguous.
"""

import numba as nb

from ..inference._chain_kernels import viterbi_batch

__all__ = ["perceptron_epoch"]


@nb.njit(cache=True)
def perceptron_epoch(
    data,
    indices,
    indptr,
    offsets,
    y,
    order,
    W,
    trans,
    W_acc,
    trans_acc,
    step,
    unary_buf,
    pred_buf,
    seg,
    errors,
):
    """One pass over the sequences in ``order``; updates weights in place.

    Parameters
    ----------
    data, indices, indptr : float64 (nnz,), int64 (nnz,), int64 (n_tokens + 1,)
        Concatenated token features in CSR form.
    offsets : int64 (n_seq + 1,)
        Sequence ``s`` spans tokens ``offsets[s]:offsets[s + 1]``.
    y : int64 (n_tokens,)
        True label codes.
    order : int64 (n_visit,)
        Sequence indices in the order they are visited this epoch.
    W : float64 (n_features, n_labels)
        Unigram weights (feature-major), updated in place.
    trans : float64 (n_labels, n_labels)
        Transition weights ``trans[prev, next]``, updated in place.
    W_acc, trans_acc : float64, same shapes as ``W`` and ``trans``
        Step-weighted sums of the updates (see module docstring).
    step : int
        Number of examples seen before this epoch.
    unary_buf : float64 (max_len, n_labels)
        Scratch for one sequence's token scores.
    pred_buf : int64 (max_len,)
        Scratch for one sequence's decoded labels.
    seg : int64 (2,)
        Scratch offsets for decoding one sequence.
    errors : int64 (2,)
        Output: ``errors[0]`` wrongly decoded tokens, ``errors[1]``
        sequences with at least one wrong token (before their update).
    """
    n_labels = W.shape[1]
    tok_err = 0
    seq_err = 0
    for r in range(order.shape[0]):
        s = order[r]
        a = offsets[s]
        n = offsets[s + 1] - a
        # token scores under the current weights
        for t in range(n):
            row = a + t
            for k in range(n_labels):
                unary_buf[t, k] = 0.0
            for p in range(indptr[row], indptr[row + 1]):
                j = indices[p]
                v = data[p]
                for k in range(n_labels):
                    unary_buf[t, k] += v * W[j, k]
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
        for t in range(n):
            yt = y[a + t]
            zt = pred_buf[t]
            if yt == zt:
                continue
            row = a + t
            for p in range(indptr[row], indptr[row + 1]):
                j = indices[p]
                v = data[p]
                W[j, yt] += v
                W[j, zt] -= v
                W_acc[j, yt] += c * v
                W_acc[j, zt] -= c * v
        for t in range(1, n):
            yp = y[a + t - 1]
            yt = y[a + t]
            zp = pred_buf[t - 1]
            zt = pred_buf[t]
            if yp == zp and yt == zt:
                continue
            trans[yp, yt] += 1.0
            trans[zp, zt] -= 1.0
            trans_acc[yp, yt] += c
            trans_acc[zp, zt] -= c
    errors[0] = tok_err
    errors[1] = seq_err
