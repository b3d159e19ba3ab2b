"""Numba kernels of the inner-product oracle (see :mod:`.inner_product`).

No validation here.
"""

import numba as nb
import numpy as np

NEG_INF = -np.inf


@nb.njit(cache=True, inline="always")
def _axpy(out, x, row, m):
    for y in range(m):
        out[y] += x * row[y]


@nb.njit(cache=True)
def inner_product_scores(W, indices, data, start, end, out):
    """out[y] = sum_{p in [start, end)} data[p] * W[indices[p], y] for all y.

    W : float64 (n_features, K) C-contiguous; out : float64 (>= K,).
    Cost O(nnz * K), vectorized over K (contiguous rows of W).
    """
    K = W.shape[1]
    for y in range(K):
        out[y] = 0.0
    for p in range(start, end):
        _axpy(out, data[p], W[indices[p]], K)


@nb.njit(cache=True)
def _label_value(score, y, extra, loss, gt):
    val = score + extra[y]
    if y != gt:
        val += loss
    return val


@nb.njit(cache=True, no_cpython_wrapper=True)
def _better(val, y, best, by):
    """First maximum in label order: ``val`` beats ``best`` or ties it at a smaller label."""
    return val > best or (val == best and by >= 0 and y < by)


@nb.njit(cache=True, inline="always")
def inner_product_fmo(W, indices, data, start, end, add_idx, add_val, n_add,
                      loss, gt, ex, workspace):
    """Exact: argmax over y != ex of w(y).phi + c(y) + loss * [y != gt].

    ``c`` is sparse (``add_idx[:n_add]``, ``add_val[:n_add]``; 0 elsewhere).
    Returns ``(best, y)`` (the smallest maximizing label); ``(-inf, -1)``
    when nothing is above -inf.  The listed labels, ``gt`` and ``ex`` are
    set aside during the scan of all ``K`` scores (which then adds only the
    loss) and compared afterwards; every raw score is left in
    ``workspace[0]``.
    """
    inner_product_scores(W, indices, data, start, end, workspace[0])
    return fmo_from_scores(W.shape[1], add_idx, add_val, n_add, loss, gt, ex, workspace)


@nb.njit(cache=True)
def inner_product_fmo32(W32, indices, data, start, end, add_idx, add_val, n_add, loss, gt, ex,
                        acc, workspace):
    """:func:`inner_product_fmo` over float32 weights ``W32``: the raw scores
    are summed in float32 (``acc`` float32 (>= K,) scratch) before the same
    selection, and left in ``workspace[0]`` (as float64).

    Half the memory traffic of float64 rows and twice the vector width, at
    float32 rounding of the scores (for passes whose weights are rebuilt in
    float64 where exact values count, as GDMM's certificate).
    """
    K = W32.shape[1]
    for y in range(K):
        acc[y] = 0.0
    for p in range(start, end):
        _axpy(acc, np.float32(data[p]), W32[indices[p]], K)
    scores = workspace[0]
    for y in range(K):
        scores[y] = acc[y]
    return fmo_from_scores(K, add_idx, add_val, n_add, loss, gt, ex, workspace)


@nb.njit(cache=True, inline="always")
def fmo_from_scores(K, add_idx, add_val, n_add, loss, gt, ex, workspace):
    """The selection of :func:`inner_product_fmo` from the raw scores of all
    ``K`` labels in ``workspace[0]`` (left unchanged); ``workspace[1]``
    zero scratch.  Shared by every storage of the weights."""
    scores, extra = workspace[0], workspace[1]
    if gt < 0:
        loss = 0.0
    sg = scores[gt] if gt >= 0 else 0.0
    se = scores[ex] if ex >= 0 else 0.0
    for k in range(n_add):
        lab = add_idx[k]
        extra[lab] = scores[lab]  # raw score kept aside
        scores[lab] = NEG_INF
    if gt >= 0:
        scores[gt] = NEG_INF
    if ex >= 0:
        scores[ex] = NEG_INF
    best = NEG_INF
    by = np.int64(-1)  # not a literal: one compiled signature of _better
    for y in range(K):
        val = scores[y] + loss
        if val > best:
            best = val
            by = y
    if ex >= 0:
        scores[ex] = se
    if gt >= 0:
        scores[gt] = sg
    listed_gt = False
    for k in range(n_add):
        lab = add_idx[k]
        scores[lab] = extra[lab]
        extra[lab] = 0.0
        if lab == gt:
            listed_gt = True
        if lab == ex:
            continue
        val = scores[lab] + add_val[k]
        if lab != gt:
            val += loss
        if _better(val, lab, best, by):
            best = val
            by = lab
    if gt >= 0 and gt != ex and not listed_gt and _better(sg, gt, best, by):
        best = sg
        by = gt
    return best, by


@nb.njit(cache=True)
def inner_product_fmo_sampled(W, indices, data, start, end, perm, nu, part,
                              add_idx, add_val, n_add, loss, gt, ex, workspace):
    """nu-partition sampling (eq. 21): the exact FMO restricted to partition
    ``part`` of ``nu``: labels ``perm[part * K // nu : (part + 1) * K // nu]``
    (an empty ``perm`` means the identity: contiguous label blocks, the
    fastest layout).

    Cost O(nnz * K / nu). Returns ``(best, y)``; ``(-inf, -1)`` when the
    partition holds nothing above -inf.
    """
    scores, extra = workspace[0], workspace[1]
    K = W.shape[1]
    if gt < 0:
        loss = 0.0
    lo = part * K // nu
    hi = (part + 1) * K // nu
    m = hi - lo
    for r in range(m):
        scores[r] = 0.0
    contiguous = perm.shape[0] == 0
    if contiguous:
        for p in range(start, end):
            _axpy(scores, data[p], W[indices[p], lo:hi], m)
    else:
        for p in range(start, end):
            x = data[p]
            row = W[indices[p]]
            for r in range(m):
                scores[r] += x * row[perm[lo + r]]
    for k in range(n_add):
        extra[add_idx[k]] = add_val[k]
    best = NEG_INF
    by = np.int64(-1)  # not a literal: one compiled signature of _better
    for r in range(m):
        y = lo + r if contiguous else perm[lo + r]
        if y == ex:
            continue
        val = _label_value(scores[r], y, extra, loss, gt)
        if val > best:
            best = val
            by = y
    for k in range(n_add):
        extra[add_idx[k]] = 0.0
    return best, by
