"""Numba kernels of feature-major weights stored as sparse rows.

Layout (see :mod:`structlearn.oracles.sparse_rows`): a tuple
``(start, length, cap, lab, val, meta)``; row ``f`` holds its stored labels
``lab[start[f]:start[f] + length[f]]`` (int32, increasing) and their weights
``val[...]`` (float64) in a slot of ``cap[f]`` entries of one shared pool;
``meta[0]`` is the pool's used size (a row that outgrows its slot moves to
the end; the pool is repacked when full).  A label a row does not store has
weight 0.

Every sum runs over a row's labels in increasing order, and a weight that
is not stored would only add an exact zero, so scores, squared norms and
updates give the same floating-point values as a dense ``(d, K)`` array.

No validation here.
"""

import numba as nb
import numpy as np

from ._inner_kernels import fmo_from_scores

_MIN_ROW_CAP = 4


@nb.njit(cache=True, inline="always")
def _find(lab, lo, n, k):
    """Position of label ``k`` in ``lab[lo:lo + n]`` (sorted), or where it goes: ``(pos, found)``."""
    a = lo
    b = lo + n
    while a < b:
        mid = (a + b) >> 1
        if lab[mid] < k:
            a = mid + 1
        else:
            b = mid
    return a, a < lo + n and lab[a] == k


@nb.njit(cache=True)
def _repack(rows, need):
    """A new pool holding every row (in row order, each with room to double)
    and ``need`` more entries; returns the new state tuple."""
    start, length, cap, lab, val, meta = rows
    live = 0
    for f in range(start.shape[0]):
        live += max(_MIN_ROW_CAP, 2 * length[f]) if length[f] > 0 else 0
    size = max(2 * (live + need), 1024)
    nlab = np.empty(size, dtype=np.int32)
    nval = np.empty(size)
    used = 0
    for f in range(start.shape[0]):
        n = length[f]
        if n == 0:
            start[f] = 0
            cap[f] = 0
            continue
        c = max(_MIN_ROW_CAP, 2 * n)
        s = start[f]
        for i in range(n):
            nlab[used + i] = lab[s + i]
            nval[used + i] = val[s + i]
        start[f] = used
        cap[f] = c
        used += c
    meta[0] = used
    return start, length, cap, nlab, nval, meta


@nb.njit(cache=True)
def sparse_rows_add(rows, f, k, delta):
    """``W[f, k] += delta``; returns the state (a new tuple when the pool grew).

    O(log length[f]) to find the label, O(length[f]) to insert a new one;
    a full row moves to the pool's end with twice the room."""
    start, length, cap, lab, val, meta = rows
    s = start[f]
    n = length[f]
    pos, found = _find(lab, s, n, k)
    if found:
        val[pos] += delta
        return rows
    if n == cap[f]:  # move the row to the end of the pool with room to double
        c = max(_MIN_ROW_CAP, 2 * n)
        if meta[0] + c > lab.shape[0]:
            rows = _repack(rows, c)
            start, length, cap, lab, val, meta = rows
            s = start[f]
            pos, found = _find(lab, s, n, k)
        if n == cap[f]:
            e = meta[0]
            for i in range(n):
                lab[e + i] = lab[s + i]
                val[e + i] = val[s + i]
            start[f] = e
            cap[f] = c
            meta[0] = e + c
            pos += e - s
            s = e
    for i in range(s + n, pos, -1):
        lab[i] = lab[i - 1]
        val[i] = val[i - 1]
    lab[pos] = k
    val[pos] = 0.0 + delta  # as a dense entry: 0 + delta
    length[f] = n + 1
    return rows


@nb.njit(cache=True)
def sparse_rows_scores(rows, indices, data, start_p, end_p, scores):
    """``scores[k] = sum_p data[p] W[indices[p], k]`` for all ``K`` labels
    (``scores``: float64 (K,)).  O(K + sum of the rows' lengths): the labels
    a row does not store keep the 0 they start from, as in a dense product."""
    start, length, cap, lab, val, meta = rows
    for k in range(scores.shape[0]):
        scores[k] = 0.0
    for p in range(start_p, end_p):
        f = indices[p]
        x = data[p]
        s = start[f]
        for q in range(s, s + length[f]):
            scores[lab[q]] += x * val[q]


@nb.njit(cache=True)
def sparse_rows_listed_scores(rows, indices, data, start_p, end_p, labels, n, out, posmap):
    """``out[s] = sum_p data[p] W[indices[p], labels[s]]`` for ``n`` distinct
    ``labels`` (the values :func:`sparse_rows_scores` gives them).  O(n + sum
    of the rows' lengths).  ``posmap``: int64 (K,) scratch, all -1, left so."""
    start, length, cap, lab, val, meta = rows
    for s in range(n):
        out[s] = 0.0
        posmap[labels[s]] = s
    for p in range(start_p, end_p):
        f = indices[p]
        x = data[p]
        s0 = start[f]
        for q in range(s0, s0 + length[f]):
            s = posmap[lab[q]]
            if s >= 0:
                out[s] += x * val[q]
    for s in range(n):
        posmap[labels[s]] = -1


@nb.njit(cache=True)
def sparse_rows_fmo(rows, indices, data, start_p, end_p, add_idx, add_val, n_add,
                    loss, gt, ex, workspace):
    """The exact inner-product oracle
    (:func:`~structlearn.oracles._inner_kernels.inner_product_fmo`, same
    arguments and workspace, same answer and values) over sparse rows:
    O(K + sum of the token's rows' lengths) instead of O(nnz(x) K)."""
    sparse_rows_scores(rows, indices, data, start_p, end_p, workspace[0])
    return fmo_from_scores(workspace[0].shape[0], add_idx, add_val, n_add, loss, gt, ex,
                           workspace)


@nb.njit(cache=True)
def sparse_rows_update(rows, indices, data, start_p, end_p, labs, deltas, n, posmap):
    """``W[indices[p], labs[s]] += data[p] * deltas[s]`` for every feature ``p``
    of a token and ``s < n`` (distinct labels); returns the state (a new
    tuple when the pool grew).

    Each row is walked once to map its labels to pool positions
    (``posmap``: int64 (K,), all -1, left so); labels a row does not store
    yet are inserted afterwards.  Every entry changes once, so the values
    equal the dense updates'."""
    missing = 0
    for p in range(start_p, end_p):
        start, length, cap, lab, val, meta = rows
        f = indices[p]
        x = data[p]
        s0 = start[f]
        for q in range(s0, s0 + length[f]):
            posmap[lab[q]] = q
        for s in range(n):
            q = posmap[labs[s]]
            if q >= 0:
                val[q] += x * deltas[s]
            else:
                missing += 1
        for q in range(s0, s0 + length[f]):
            posmap[lab[q]] = -1
    if missing:
        for p in range(start_p, end_p):
            f = indices[p]
            for s in range(n):
                start, length, cap, lab, val, meta = rows
                q, found = _find(lab, start[f], length[f], labs[s])
                if not found:
                    rows = sparse_rows_add(rows, f, labs[s], data[p] * deltas[s])
    return rows


@nb.njit(cache=True)
def sparse_rows_unary_scores(rows, data, indices, indptr, t_lo, t_hi, out):
    """``out[t - t_lo, :] = W.T @ x_t`` for tokens ``t_lo <= t < t_hi``
    (the same values as a dense ``W``)."""
    for t in range(t_lo, t_hi):
        sparse_rows_scores(rows, indices, data, indptr[t], indptr[t + 1], out[t - t_lo])


@nb.njit(cache=True)
def sparse_rows_sq_sum(rows):
    """``||W||^2``, summed in row-major order (as over a dense ``W``)."""
    start, length, cap, lab, val, meta = rows
    total = 0.0
    for f in range(start.shape[0]):
        s = start[f]
        for q in range(s, s + length[f]):
            total += val[q] * val[q]
    return total


@nb.njit(cache=True)
def sparse_rows_fill_dense(rows, out):
    """Write the stored weights into ``out`` (float64 (n_rows, K), zeros
    where a row stores no weight)."""
    start, length, cap, lab, val, meta = rows
    for f in range(start.shape[0]):
        s = start[f]
        row = out[f]
        for q in range(s, s + length[f]):
            row[lab[q]] = val[q]
