"""Numba kernels for the chain-CRF likelihood and its gradient.

Layout as in :mod:`._ssvm_chain_kernels`: stacked CSR token features
``data, indices, indptr`` (float64, int64, int64), sequence ``offsets``
(int64, ``n_seq + 1``), label codes (int64, ``N``) and the transition table
``trans[a, b]`` (float64 ``(K, K)``).  Unigram weights are stored per
feature (:class:`UnigramWeights`): as full rows of ``K`` labels
(``W[f, k]`` feature-major; a dense model is all rows) or only on listed
(feature, label) pairs; the likelihood kernels read the token features
split by that storage (:class:`SplitTokens`).  A pass costs O(nnz K) over
row entries plus O(sum over the pair entries of their pair counts).

No validation here; outputs go into caller-allocated arrays.
"""

from typing import NamedTuple

import numba as nb
import numpy as np


class UnigramWeights(NamedTuple):
    """Unigram weights stored as pairs and rows (or their gradient).

    Attributes
    ----------
    values : float64 (P,)
        Pair-stored weights: feature ``f`` has ``values[pair_ptr[f]:
        pair_ptr[f + 1]]`` for the labels ``pair_label[pair_ptr[f]:
        pair_ptr[f + 1]]``.
    pair_ptr : int64 (d + 1,)
    pair_label : int64 (P,)
    rows : float64 (R, K)
        Row-stored weights: all ``K`` labels of a feature (a dense model is
        ``rows = W`` (d, K), no pairs).
    """

    values: np.ndarray
    pair_ptr: np.ndarray
    pair_label: np.ndarray
    rows: np.ndarray


class SplitTokens(NamedTuple):
    """The stacked token features, each token's entries split by how their
    feature's weights are stored, so that the inner loops need no per-entry
    lookup: a token's row entries are a contiguous gather of ``K`` weights
    each, its pair entries a scatter over the feature's listed labels.

    Attributes
    ----------
    row_ptr : int64 (N + 1,)
        Token ``t``'s row entries are ``row_ptr[t]:row_ptr[t + 1]``.
    row_slot : int32 or int64 (n_row,)
        Their row of :attr:`UnigramWeights.rows`.
    row_value : float64 (n_row,)
        Their feature values (possibly one shared read-only 1).
    pair_ptr : int64 (N + 1,)
        Token ``t``'s pair entries are ``pair_ptr[t]:pair_ptr[t + 1]``.
    pair_feature : int32 or int64 (n_pair,)
        Their feature (an index into :attr:`UnigramWeights.pair_ptr`).
    pair_value : float64 (n_pair,)
    """

    row_ptr: np.ndarray
    row_slot: np.ndarray
    row_value: np.ndarray
    pair_ptr: np.ndarray
    pair_feature: np.ndarray
    pair_value: np.ndarray


@nb.njit(cache=True)
def split_token_entries(row_of, indices, indptr, keep_values, data):
    """Split CSR token features by ``row_of`` (int64 (d,): a feature's row,
    or -1 for a pair-stored one), keeping each token's entries in order.

    Returns ``row_ptr, row_slot, row_value, pair_ptr, pair_feature,
    pair_value`` (:class:`SplitTokens`; index arrays in ``indices``'
    dtype); the value arrays are empty unless ``keep_values``.
    """
    N = indptr.shape[0] - 1
    n_row = 0
    for p in range(indptr[N]):
        if row_of[indices[p]] >= 0:
            n_row += 1
    n_pair = indptr[N] - n_row
    row_ptr = np.zeros(N + 1, dtype=np.int64)
    pair_ptr = np.zeros(N + 1, dtype=np.int64)
    row_slot = np.empty(n_row, dtype=indices.dtype)
    pair_feature = np.empty(n_pair, dtype=indices.dtype)
    row_value = np.empty(n_row if keep_values else 0)
    pair_value = np.empty(n_pair if keep_values else 0)
    a = 0
    b = 0
    for t in range(N):
        for p in range(indptr[t], indptr[t + 1]):
            f = indices[p]
            if row_of[f] >= 0:
                row_slot[a] = row_of[f]
                if keep_values:
                    row_value[a] = data[p]
                a += 1
            else:
                pair_feature[b] = f
                if keep_values:
                    pair_value[b] = data[p]
                b += 1
        row_ptr[t + 1] = a
        pair_ptr[t + 1] = b
    return row_ptr, row_slot, row_value, pair_ptr, pair_feature, pair_value


@nb.njit(cache=True, nogil=True)
def block_scores(weights, tokens, t0, out):
    """Token scores of tokens ``t0 .. t0 + n`` into ``out`` (n, K).

    Parameters
    ----------
    weights : UnigramWeights
    tokens : SplitTokens
    t0 : int
    out : float64 (n, K)
    """
    K = out.shape[1]
    rows = weights.rows
    values = weights.values
    pair_ptr = weights.pair_ptr
    pair_label = weights.pair_label
    for i in range(out.shape[0]):
        t = t0 + i
        o = out[i]
        for k in range(K):
            o[k] = 0.0
        for p in range(tokens.row_ptr[t], tokens.row_ptr[t + 1]):
            x = tokens.row_value[p]
            row = rows[tokens.row_slot[p]]
            for k in range(K):
                o[k] += x * row[k]
        for p in range(tokens.pair_ptr[t], tokens.pair_ptr[t + 1]):
            x = tokens.pair_value[p]
            f = tokens.pair_feature[p]
            for j in range(pair_ptr[f], pair_ptr[f + 1]):
                o[pair_label[j]] += x * values[j]


@nb.njit(cache=True, nogil=True)
def block_nll_grad(marg, unary, offsets, codes, trans, block_T, tokens, t0, logz, grad, grad_T):
    """Negative log-likelihood of a block of whole sequences (tokens ``t0 ..
    t0 + n``) from its forward-backward, and its gradient added in.

    Parameters
    ----------
    marg : float64 (n, K)
        Token marginals of the block (overwritten by marginals minus the
        one-hot labels).
    unary : float64 (n, K)
        Token scores of the block.
    offsets : int64 (n_seq + 1,)
        The block's sequences, relative to ``t0``.
    codes : int64 (N,)
        Labels of all tokens.
    trans : float64 (K, K)
    block_T : float64 (K, K)
        Expected transition counts of the block (from the forward-backward).
    tokens : SplitTokens
    t0 : int
    logz : float64 (n_seq,)
    grad : UnigramWeights
        Receives ``X^T (P - Y)`` at the stored weights (``values`` and
        ``rows``), added to what it holds.
    grad_T : float64 (K, K)
        Receives expected minus observed transition counts, added.

    Returns
    -------
    nll : float
        ``sum_s (log Z_s - score_s(y_s))`` over the block.
    """
    K = trans.shape[0]
    for a in range(K):
        for b in range(K):
            grad_T[a, b] += block_T[a, b]
    nll = 0.0
    for s in range(offsets.shape[0] - 1):
        nll += logz[s]
        stop = offsets[s + 1]
        for i in range(offsets[s], stop):
            y = codes[t0 + i]
            nll -= unary[i, y]
            marg[i, y] -= 1.0
            if i + 1 < stop:
                z = codes[t0 + i + 1]
                nll -= trans[y, z]
                grad_T[y, z] -= 1.0
    grad_rows = grad.rows
    grad_values = grad.values
    pair_ptr = grad.pair_ptr
    pair_label = grad.pair_label
    for i in range(marg.shape[0]):
        t = t0 + i
        rt = marg[i]
        for p in range(tokens.row_ptr[t], tokens.row_ptr[t + 1]):
            x = tokens.row_value[p]
            row = grad_rows[tokens.row_slot[p]]
            for k in range(K):
                row[k] += x * rt[k]
        for p in range(tokens.pair_ptr[t], tokens.pair_ptr[t + 1]):
            x = tokens.pair_value[p]
            f = tokens.pair_feature[p]
            for j in range(pair_ptr[f], pair_ptr[f + 1]):
                grad_values[j] += x * rt[pair_label[j]]
    return nll


@nb.njit(cache=True, nogil=True)
def sparse_unary_scores(values, pair_ptr, pair_label, data, indices, indptr, out):
    """``out[t, k]`` = score of label ``k`` at token ``t`` under pair-stored
    weights only (:class:`UnigramWeights` without rows) of CSR token
    features; ``out`` is (N, K)."""
    K = out.shape[1]
    for t in range(out.shape[0]):
        o = out[t]
        for k in range(K):
            o[k] = 0.0
        for p in range(indptr[t], indptr[t + 1]):
            x = data[p]
            f = indices[p]
            for j in range(pair_ptr[f], pair_ptr[f + 1]):
                o[pair_label[j]] += x * values[j]


@nb.njit(cache=True)
def observed_pair_lists(data, indices, indptr, codes, d, K):
    """The (feature, label) pairs with a non-zero feature value on a token of
    that label: ``pair_ptr`` (d + 1,) and ``pair_label`` (P,), labels
    ascending within a feature.  Marks are bits, (d, ceil(K / 64)) words:
    O(nnz + d K / 64) memory instead of a copy of the features."""
    n_words = (K + 63) // 64
    bits = np.zeros(d * n_words, dtype=np.uint64)
    one = np.uint64(1)
    for t in range(codes.shape[0]):
        c = codes[t]
        word = c >> 6
        mask = one << np.uint64(c & 63)
        for p in range(indptr[t], indptr[t + 1]):
            if data[p] != 0.0:
                bits[indices[p] * n_words + word] |= mask
    pair_ptr = np.zeros(d + 1, dtype=np.int64)
    for f in range(d):
        count = 0
        for k in range(K):
            if bits[f * n_words + (k >> 6)] & (one << np.uint64(k & 63)):
                count += 1
        pair_ptr[f + 1] = pair_ptr[f] + count
    pair_label = np.empty(pair_ptr[d], dtype=np.int64)
    q = 0
    for f in range(d):
        for k in range(K):
            if bits[f * n_words + (k >> 6)] & (one << np.uint64(k & 63)):
                pair_label[q] = k
                q += 1
    return pair_ptr, pair_label


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
def secant_products(x_new, x, g_new, g):
    """``(s @ y, y @ y)`` of the L-BFGS pair ``s = x_new - x``,
    ``y = g_new - g``, without storing it."""
    sy = 0.0
    yy = 0.0
    for i in range(x.shape[0]):
        s = x_new[i] - x[i]
        y = g_new[i] - g[i]
        sy += s * y
        yy += y * y
    return sy, yy


@nb.njit(cache=True)
def abs_sum(w):
    """``||w||_1``."""
    s = 0.0
    for i in range(w.shape[0]):
        s += abs(w[i])
    return s


@nb.njit(cache=True)
def owlqn_pseudo_gradient(w, g, l1, out):
    """OWL-QN's pseudo-gradient of ``f(w) + l1 ||w||_1`` (``g`` = grad f)
    into ``out``: the one-sided derivative of least magnitude, 0 where zero
    is optimal."""
    for i in range(w.shape[0]):
        wi = w[i]
        gi = g[i]
        if wi > 0.0:
            out[i] = gi + l1
        elif wi < 0.0:
            out[i] = gi - l1
        elif gi + l1 < 0.0:
            out[i] = gi + l1
        elif gi - l1 > 0.0:
            out[i] = gi - l1
        else:
            out[i] = 0.0


@nb.njit(cache=True)
def owlqn_direction(pg, p):
    """Keep the direction ``p`` in the descent orthant of the pseudo-gradient
    ``pg``: ``p_i = 0`` where ``p_i pg_i >= 0``."""
    for i in range(p.shape[0]):
        if p[i] * pg[i] >= 0.0:
            p[i] = 0.0


@nb.njit(cache=True)
def owlqn_step_to(out, w, step, p, pg):
    """``out = w + step * p`` projected onto the orthant the step may not
    leave (entries whose sign differs from it are set to 0): ``sign(w_i)``,
    or ``-sign(pg_i)`` where ``w_i = 0``."""
    for i in range(out.shape[0]):
        x = w[i] + step * p[i]
        o = w[i] if w[i] != 0.0 else -pg[i]
        orthant = 1.0 if o > 0.0 else (-1.0 if o < 0.0 else 0.0)
        sign = 1.0 if x > 0.0 else (-1.0 if x < 0.0 else 0.0)
        out[i] = x if sign == orthant else 0.0


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
