"""Numba kernel for the chain-CRF likelihood and its gradient.

Layout as in :mod:`._ssvm_chain_kernels`: stacked CSR token features
``data, indices, indptr`` (float64, int64, int64), sequence ``offsets``
(int64, ``n_seq + 1``), label codes (int64, ``N``), unigram weights stored
feature-major ``W[f, k]`` (float64 ``(d, K)``) and the transition table
``trans[a, b]`` (float64 ``(K, K)``). Every pass over the features costs
O(nnz K); no (d, K) temporary is built besides the gradient itself.

No validation here; outputs go into caller-allocated arrays.
"""

import numba as nb

from ..inference._chain_kernels import forward_backward_batch
from ._ssvm_chain_kernels import unary_scores


@nb.njit(cache=True)
def chain_nll_grad(W, trans, data, indices, indptr, offsets, codes, grad_W, grad_T, unary, resid,
                   logz):  # fmt: skip
    """Summed negative log-likelihood and its gradient (no penalty, no averaging).

    Parameters
    ----------
    W : float64 (d, K)
    trans : float64 (K, K)
    data, indices, indptr : CSR arrays of the (N, d) token features
    offsets : int64 (n_seq + 1,)
    codes : int64 (N,)
    grad_W : float64 (d, K)
        Receives ``X^T (P - Y)`` (P the token marginals, Y the one-hot labels).
    grad_T : float64 (K, K)
        Receives expected minus observed transition counts.
    unary, resid : float64 (N, K)
        Scratch: token scores ``X W`` and ``P - Y``.
    logz : float64 (n_seq,)
        Receives the log-partition function of every sequence.

    Returns
    -------
    nll : float
        ``sum_s (log Z_s - score_s(y_s))``.
    """
    N = codes.shape[0]
    K = trans.shape[0]
    unary_scores(W, data, indices, indptr, 0, N, unary)
    nll = _nll_residuals(unary, trans, offsets, codes, grad_T, resid, logz)
    for j in range(grad_W.shape[0]):
        for k in range(K):
            grad_W[j, k] = 0.0
    for t in range(N):
        r = resid[t]
        for p in range(indptr[t], indptr[t + 1]):
            x = data[p]
            row = grad_W[indices[p]]
            for k in range(K):
                row[k] += x * r[k]
    return nll


@nb.njit(cache=True)
def sparse_chain_nll_grad(values, pair_ptr, pair_label, trans, data, indices, indptr, offsets,
                          codes, grad_values, grad_T, unary, resid, logz):  # fmt: skip
    """:func:`chain_nll_grad` for weights stored on (feature, label) pairs.

    Feature ``f`` has weights ``values[pair_ptr[f]:pair_ptr[f + 1]]`` for the
    labels ``pair_label[pair_ptr[f]:pair_ptr[f + 1]]``; every other
    (feature, label) weight is 0 and gets no gradient.  One pass costs
    O(sum over the token features of their pair counts) instead of O(nnz K).

    Parameters
    ----------
    values : float64 (P,)
    pair_ptr : int64 (d + 1,)
    pair_label : int64 (P,)
    grad_values : float64 (P,)
        Receives the gradient of the listed weights.
    trans, data, indices, indptr, offsets, codes, grad_T, unary, resid, logz
        As in :func:`chain_nll_grad`.

    Returns
    -------
    nll : float
    """
    sparse_unary_scores(values, pair_ptr, pair_label, data, indices, indptr, unary)
    nll = _nll_residuals(unary, trans, offsets, codes, grad_T, resid, logz)
    for j in range(grad_values.shape[0]):
        grad_values[j] = 0.0
    for t in range(codes.shape[0]):
        r = resid[t]
        for p in range(indptr[t], indptr[t + 1]):
            x = data[p]
            f = indices[p]
            for j in range(pair_ptr[f], pair_ptr[f + 1]):
                grad_values[j] += x * r[pair_label[j]]
    return nll


@nb.njit(cache=True, nogil=True)
def sparse_unary_scores(values, pair_ptr, pair_label, data, indices, indptr, out):
    """``out[t, k]`` = score of label ``k`` at token ``t`` under pair-stored
    weights (layout of :func:`sparse_chain_nll_grad`); ``out`` is (N, K)."""
    K = out.shape[1]
    for t in range(out.shape[0]):
        for k in range(K):
            out[t, k] = 0.0
        for p in range(indptr[t], indptr[t + 1]):
            x = data[p]
            f = indices[p]
            for j in range(pair_ptr[f], pair_ptr[f + 1]):
                out[t, pair_label[j]] += x * values[j]


@nb.njit(cache=True)
def _nll_residuals(unary, trans, offsets, codes, grad_T, resid, logz):
    """Forward-backward over all sequences: ``resid = P - Y`` (token
    marginals minus one-hot labels), ``grad_T`` = expected minus observed
    transition counts, ``logz``; returns the summed negative log-likelihood."""
    forward_backward_batch(unary, offsets, trans, resid, grad_T, logz)
    nll = 0.0
    for s in range(offsets.shape[0] - 1):
        nll += logz[s]
        stop = offsets[s + 1]
        for t in range(offsets[s], stop):
            y = codes[t]
            nll -= unary[t, y]
            resid[t, y] -= 1.0
            if t + 1 < stop:
                z = codes[t + 1]
                nll -= trans[y, z]
                grad_T[y, z] -= 1.0
    return nll


# ------------------------------------------------------------------ L-BFGS
# Single-threaded vector operations of the L-BFGS loop: a threaded BLAS dot
# on a shared machine can cost more than the whole objective evaluation.


@nb.njit(cache=True)
def vdot(a, b):
    """``a @ b``."""
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * b[i]
    return s


@nb.njit(cache=True)
def axpy_to(out, x, c, y):
    """``out = x + c * y``."""
    for i in range(out.shape[0]):
        out[i] = x[i] + c * y[i]


@nb.njit(cache=True)
def finish_gradient(g, scale, alpha, w):
    """``g = scale * g + alpha * w``; returns ``w @ w``."""
    ww = 0.0
    for i in range(g.shape[0]):
        wi = w[i]
        g[i] = scale * g[i] + alpha * wi
        ww += wi * wi
    return ww


@nb.njit(cache=True)
def lbfgs_direction(g, S, Y, rho, order, coef, out):
    """Two-loop recursion: ``out = -H g``.

    ``S``, ``Y`` (m, n) hold the correction pairs in the rows listed by
    ``order`` (oldest first), ``rho[i] = 1 / (S[i] @ Y[i])``; the initial
    matrix is ``(s @ y) / (y @ y)`` of the newest pair (identity without
    pairs). ``coef`` (m,) is scratch.
    """
    n = g.shape[0]
    for i in range(n):
        out[i] = g[i]
    npairs = order.shape[0]
    for j in range(npairs - 1, -1, -1):
        r = order[j]
        a = rho[r] * vdot(S[r], out)
        coef[r] = a
        yr = Y[r]
        for i in range(n):
            out[i] -= a * yr[i]
    if npairs > 0:
        r = order[npairs - 1]
        gamma = 1.0 / (rho[r] * vdot(Y[r], Y[r]))
        for i in range(n):
            out[i] *= gamma
    for j in range(npairs):
        r = order[j]
        b = rho[r] * vdot(Y[r], out)
        c = coef[r] - b
        sr = S[r]
        for i in range(n):
            out[i] += c * sr[i]
    for i in range(n):
        out[i] = -out[i]
