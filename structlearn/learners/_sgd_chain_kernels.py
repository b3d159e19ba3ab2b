"""Numba kernel for stochastic gradient descent on the L2-regularized
linear-chain CRF likelihood (CRFsuite's ``l2sgd``).

Per sequence ``i`` (visited one at a time) the objective is
``-log p(y_i | x_i) + (lam / 2) ||w||^2`` with ``lam = 2 c2 / n_sequences``
(so that an epoch sums to CRFsuite's objective), and the step is

    w <- (1 - eta_t lam) w + eta_t (phi(x_i, y_i) - E_p[phi(x_i, .)]),
    eta_t = 1 / (lam (t0 + t)).

The decay is kept as a scale factor ``w = scale * v`` (Bottou's trick), so a
step touches only the features of the sequence and the transitions; ``v``
is renormalized when ``scale`` gets small.  Marginals come from the
forward-backward kernels of :mod:`structlearn.inference.chains._chain_kernels`.
"""

from typing import NamedTuple

import numba as nb
import numpy as np

from ..inference.chains._chain_kernels import fb_log_batch, fb_scaled_batch
from ._online_chain_kernels import sequence_scores

__all__ = ["SGDWeights", "sgd_chain_epoch"]


class SGDWeights(NamedTuple):
    """The weights SGD updates in place: ``V`` float64 (n_features,
    n_labels), unscaled unigram weights (feature-major, ``W = scale * V``);
    ``T`` float64 (n_labels, n_labels), unscaled transitions; ``scale_t``
    float64 (2,): ``[scale, t]``, the scale and the steps taken; ``W_mask``,
    ``T_mask`` bool, the weights that exist (the others stay 0), or (0, 0)
    for all."""

    V: np.ndarray
    T: np.ndarray
    scale_t: np.ndarray
    W_mask: np.ndarray
    T_mask: np.ndarray


@nb.njit(cache=True)
def sgd_chain_epoch(chains, order, weights, lam, t0, unary, node_marg, trans_marg):
    """One SGD pass over the sequences in ``order``; updates ``weights`` in place.

    Parameters
    ----------
    chains : TrainingChains
    order : int64 (n_visit,)
        Sequences in visiting order.
    weights : SGDWeights
    lam, t0 : float
        L2 weight per sequence and the learning-rate offset.
    unary, node_marg : float64 (max_len, n_labels)
        Scratch.
    trans_marg : float64 (n_labels, n_labels)
        Scratch.

    Returns
    -------
    loss : float
        Sum over the visited sequences of ``-log p(y_i | x_i)`` under the
        weights each was visited with.
    """
    data, indices, indptr, offsets, y = chains
    V, T, scale_t, W_mask, T_mask = weights
    K = V.shape[1]
    masked_W = W_mask.shape[0] > 0
    masked_T = T_mask.shape[0] > 0
    loss = 0.0
    seg = np.zeros(2, dtype=np.int64)
    logz = np.empty(1)
    todo = np.zeros(1, dtype=np.bool_)  # set by the scaled recursion when it refuses
    Tw = np.empty((K, K))
    for r in range(order.shape[0]):
        s = order[r]
        a = offsets[s]
        n = offsets[s + 1] - a
        eta = 1.0 / (lam * (t0 + scale_t[1]))
        scale_t[1] += 1.0
        scale = scale_t[0] * (1.0 - eta * lam)
        if scale < 1e-9:  # fold the scale into the weights
            for j in range(V.shape[0]):
                for k in range(K):
                    V[j, k] *= scale
            for p in range(K):
                for q in range(K):
                    T[p, q] *= scale
            scale = 1.0
        scale_t[0] = scale
        sequence_scores(data, indices, indptr, a, n, V, scale, unary)
        for p in range(K):
            for q in range(K):
                Tw[p, q] = scale * T[p, q]
        seg[1] = n
        # the scaled recursion, the log-domain one where it refuses (as
        # forward_backward_batch does); each leaves its sums in trans_marg
        if fb_scaled_batch(unary[:n], seg, Tw, node_marg[:n], trans_marg, logz, todo):
            for p in range(K):
                for q in range(K):
                    trans_marg[p, q] = 0.0
            fb_log_batch(unary[:n], seg, Tw, node_marg[:n], trans_marg, logz, todo)
        gold = 0.0
        for t in range(n):
            gold += unary[t, y[a + t]]
            if t > 0:
                gold += Tw[y[a + t - 1], y[a + t]]
        loss += logz[0] - gold
        g = eta / scale
        for t in range(n):
            row = a + t
            yt = y[a + t]
            for p in range(indptr[row], indptr[row + 1]):
                j = indices[p]
                v = data[p] * g
                V[j, yt] += v  # an observed pair by definition
                for k in range(K):
                    if not masked_W or W_mask[j, k]:
                        V[j, k] -= v * node_marg[t, k]
        for p in range(K):
            for q in range(K):
                if not masked_T or T_mask[p, q]:
                    T[p, q] -= g * trans_marg[p, q]
        for t in range(1, n):
            T[y[a + t - 1], y[a + t]] += g
    return loss
