"""Numba kernels of the four-case pairwise search over static sorted orders.

All functions here are ``@njit(cache=True)`` kernels over flat arrays; they do
no validation (see :mod:`structlearn.oracles.sorted_tables` for the checked
Python API and the calling convention).
"""

import numba as nb
import numpy as np

NEG_INF = -np.inf


# --------------------------------------------------------------------- orders
@nb.njit(cache=True)
def stable_descending_order(values, out):
    """out[:] = the stable descending order of ``values`` (no NaN).

    Least-significant-digit radix sort (8-bit digits) of order-preserving
    integer keys of ``-values``: stable, O(8 n), and the passes whose digit
    is the same for every key are skipped.  Ties (``-0.0 == 0.0``
    included) keep index order; -inf entries come last.
    """
    n = values.shape[0]
    neg = np.empty(n, dtype=np.float64)
    for t in range(n):
        neg[t] = -values[t] + 0.0  # + 0.0 maps -0.0 to 0.0
    keys = neg.view(np.uint64)
    top = np.uint64(1) << np.uint64(63)
    for t in range(n):
        k = keys[t]
        # flip negatives entirely, set the sign bit of the others: integer
        # order of the keys is then the order of the floats
        keys[t] = ~k if k & top else k | top
    idx = np.arange(n)
    tmp_idx = np.empty(n, dtype=np.int64)
    tmp_keys = np.empty(n, dtype=np.uint64)
    count = np.empty(257, dtype=np.int64)
    mask = np.uint64(255)
    for p in range(8):
        sh = np.uint64(8 * p)
        count[:] = 0
        for t in range(n):
            count[((keys[t] >> sh) & mask) + 1] += 1
        if n == 0 or count[((keys[0] >> sh) & mask) + 1] == n:
            continue  # one digit value for all keys: the pass changes nothing
        for d in range(256):
            count[d + 1] += count[d]
        for t in range(n):
            d = (keys[t] >> sh) & mask
            r = count[d]
            count[d] = r + 1
            tmp_idx[r] = idx[t]
            tmp_keys[r] = keys[t]
        idx, tmp_idx = tmp_idx, idx
        keys, tmp_keys = tmp_keys, keys
    for t in range(n):
        out[t] = idx[t]


@nb.njit(cache=True)
def fill_table_orders(table, n1, n2, out_all, out_rows, out_cols):
    """Descending orders of one flat ``n1 x n2`` table (C order).

    out_all[r] : flat index ``a * n2 + b`` of the r-th largest entry;
    out_rows[a * n2 + r] : column of the r-th largest entry of row ``a``;
    out_cols[b * n1 + r] : row of the r-th largest entry of column ``b``.
    Ties keep index order (stable sort); -inf entries come last.  Only the
    whole table is sorted: walking its stable order and appending each
    entry to its row and column lists gives the rows' and columns' stable
    orders (within a row or column, flat-index order is label order).
    """
    stable_descending_order(table[: n1 * n2], out_all)
    rpos = np.zeros(n1, dtype=np.int64)
    cpos = np.zeros(n2, dtype=np.int64)
    for r in range(n1 * n2):
        f = out_all[r]
        a = f // n2
        b = f - a * n2
        out_rows[a * n2 + rpos[a]] = b
        rpos[a] += 1
        out_cols[b * n1 + cpos[b]] = a
        cpos[b] += 1


@nb.njit(cache=True)
def fill_pool_orders(table_data, table_offsets, shapes, order_offsets, order_data):
    """Fill the sorted orders of every pairwise table of a pool.

    Table ``t`` (shape ``shapes[t] = (n1, n2)``; ``(0, 0)`` = skipped) gets
    the block ``order_data[order_offsets[t]:order_offsets[t + 1]]`` laid out
    as ``[whole table | rows | columns]``, each of ``n1 * n2`` entries.
    """
    for t in range(shapes.shape[0]):
        n1 = shapes[t, 0]
        n2 = shapes[t, 1]
        n = n1 * n2
        if n == 0:
            continue
        base = order_offsets[t]
        tab = table_data[table_offsets[t] : table_offsets[t] + n]
        fill_table_orders(
            tab,
            n1,
            n2,
            order_data[base : base + n],
            order_data[base + n : base + 2 * n],
            order_data[base + 2 * n : base + 3 * n],
        )


@nb.njit(cache=True)
def fill_segment_orders(values, offsets, out):
    """out[offsets[i]:offsets[i+1]] = local descending order of that segment
    of ``values`` (e.g. each variable's unary scores). Stable; -inf last."""
    for i in range(offsets.shape[0] - 1):
        lo = offsets[i]
        hi = offsets[i + 1]
        neg = np.empty(hi - lo, dtype=np.float64)
        for k in range(hi - lo):
            neg[k] = -values[lo + k]
        o = np.argsort(neg, kind="mergesort")
        for k in range(hi - lo):
            out[lo + k] = o[k]


@nb.njit(cache=True)
def table_orders(order_data, order_offsets, t, n1, n2):
    """Views ``(order_all, order_rows, order_cols)`` of pool table ``t``."""
    base = order_offsets[t]
    n = n1 * n2
    return (
        order_data[base : base + n],
        order_data[base + n : base + 2 * n],
        order_data[base + 2 * n : base + 3 * n],
    )


# ------------------------------------------------------------ message marking
@nb.njit(cache=True)
def mark_labels(pos, idx, nnz):
    """pos[idx[k]] = k for k < nnz (pos must hold -1 at those labels)."""
    for k in range(nnz):
        pos[idx[k]] = k


@nb.njit(cache=True)
def unmark_labels(pos, idx, nnz):
    """Restore pos[idx[k]] = -1 for k < nnz."""
    for k in range(nnz):
        pos[idx[k]] = -1


# ---------------------------------------------------------- static four cases
@nb.njit(cache=True, inline="always")
def _excluded(a, b, ex1, ex2, excl_a, excl_b, n_excl):
    if a == ex1 and b == ex2:
        return True
    for k in range(n_excl):
        if excl_a[k] == a and excl_b[k] == b:
            return True
    return False


@nb.njit(cache=True)
def _static_search(table, n1, n2, order_all, order_rows, order_cols,
                   idx1, val1, nnz1, idx2, val2, nnz2, ex1, ex2,
                   excl_a, excl_b, n_excl, workspace):
    pos1 = workspace[0]
    pos2 = workspace[1]
    stats = workspace[2]
    mark_labels(pos1, idx1, nnz1)
    mark_labels(pos2, idx2, nnz2)
    best = NEG_INF
    best_a = -1
    best_b = -1
    # (iv) both labels listed
    for k1 in range(nnz1):
        a = idx1[k1]
        m1 = val1[k1]
        base = a * n2
        for k2 in range(nnz2):
            b = idx2[k2]
            val = (table[base + b] + m1) + val2[k2]
            if val > best and not _excluded(a, b, ex1, ex2, excl_a, excl_b, n_excl):
                best = val
                best_a = a
                best_b = b
    v4 = nnz1 * nnz2
    # (ii) b listed, a not listed: walk column b downwards
    v2 = 0
    if nnz1 < n1:
        for k2 in range(nnz2):
            b = idx2[k2]
            m2 = val2[k2]
            base = b * n1
            for r in range(n1):
                a = order_cols[base + r]
                v2 += 1
                val = table[a * n2 + b] + m2
                if not val > best:
                    break
                if pos1[a] < 0 and not _excluded(a, b, ex1, ex2, excl_a, excl_b, n_excl):
                    best = val
                    best_a = a
                    best_b = b
                    break
    # (iii) a listed, b not listed: walk row a downwards
    v3 = 0
    if nnz2 < n2:
        for k1 in range(nnz1):
            a = idx1[k1]
            m1 = val1[k1]
            base = a * n2
            for r in range(n2):
                b = order_rows[base + r]
                v3 += 1
                val = table[base + b] + m1
                if not val > best:
                    break
                if pos2[b] < 0 and not _excluded(a, b, ex1, ex2, excl_a, excl_b, n_excl):
                    best = val
                    best_a = a
                    best_b = b
                    break
    # (i) neither listed: walk the whole table downwards
    v1 = 0
    if nnz1 < n1 and nnz2 < n2:
        for r in range(n1 * n2):
            t = order_all[r]
            v1 += 1
            val = table[t]
            if not val > best:
                break
            a = t // n2
            b = t - a * n2
            if pos1[a] < 0 and pos2[b] < 0 and not _excluded(a, b, ex1, ex2, excl_a, excl_b,
                                                              n_excl):
                best = val
                best_a = a
                best_b = b
                break
    unmark_labels(pos1, idx1, nnz1)
    unmark_labels(pos2, idx2, nnz2)
    stats[0] = v1
    stats[1] = v2
    stats[2] = v3
    stats[3] = v4
    return best, best_a, best_b, v1 + v2 + v3 + v4


_NO_EXCL = np.zeros(0, dtype=np.int64)


@nb.njit(cache=True)
def static_pair_argmax(table, n1, n2, order_all, order_rows, order_cols,
                       idx1, val1, nnz1, idx2, val2, nnz2, ex1, ex2, workspace):
    """argmax over (a, b) != (ex1, ex2) of table[a*n2+b] + m1[a] + m2[b].

    See :mod:`structlearn.oracles.sorted_tables` for the full contract.
    Returns ``(best, a, b, n_visited)``; ``(-inf, -1, -1, n)`` when no
    entry has a value above -inf.
    """
    return _static_search(table, n1, n2, order_all, order_rows, order_cols,
                          idx1, val1, nnz1, idx2, val2, nnz2, ex1, ex2,
                          _NO_EXCL, _NO_EXCL, 0, workspace)


@nb.njit(cache=True)
def static_pair_argmax_excluding(table, n1, n2, order_all, order_rows, order_cols,
                                 idx1, val1, nnz1, idx2, val2, nnz2,
                                 excl_a, excl_b, n_excl, workspace):
    """As :func:`static_pair_argmax`, excluding every pair
    ``(excl_a[k], excl_b[k])``, k < n_excl (e.g. a factor's active set).
    Each candidate is checked against the list (linear scan), so keep it short.
    """
    return _static_search(table, n1, n2, order_all, order_rows, order_cols,
                          idx1, val1, nnz1, idx2, val2, nnz2, -1, -1,
                          excl_a, excl_b, n_excl, workspace)


@nb.njit(cache=True)
def static_vector_argmax(values, order, idx, val, nnz, excl, n_excl, pos):
    """argmax over labels y not in ``excl[:n_excl]`` of values[y] + m[y].

    ``m`` is sparse (``idx[:nnz]``, ``val[:nnz]``; 0 elsewhere); ``order``
    is the descending order of ``values``; ``pos`` int64 scratch (len >=
    len(values)) filled with -1 (restored).  Returns ``(best, y, n_visited)``,
    ``(-inf, -1, n)`` when nothing is above -inf.  (Node-side selection of
    MAP GDMM, eq. 7.)
    """
    mark_labels(pos, idx, nnz)
    best = NEG_INF
    by = -1
    for k in range(nnz):
        y = idx[k]
        v = values[y] + val[k]
        if v > best:
            skip = False
            for e in range(n_excl):
                if excl[e] == y:
                    skip = True
                    break
            if not skip:
                best = v
                by = y
    visited = nnz
    n = values.shape[0]
    if nnz < n:
        for r in range(n):
            y = order[r]
            visited += 1
            v = values[y]
            if not v > best:
                break
            if pos[y] >= 0:
                continue
            skip = False
            for e in range(n_excl):
                if excl[e] == y:
                    skip = True
                    break
            if not skip:
                best = v
                by = y
                break
    unmark_labels(pos, idx, nnz)
    return best, by, visited


# nnan lets LLVM vectorize the row maxima (a max over values that may be NaN
# is not associative); no flag that reorders or fuses arithmetic is set, so
# every value is the same float as in an entry-by-entry scan
@nb.njit(cache=True, fastmath={"nnan", "nsz"})
def dense_pair_argmax(v, n1, n2, m1, m2, ex1, ex2):
    """Dense scan: ``argmax`` over ``(a, b) != (ex1, ex2)`` of
    ``(v[a * n2 + b] + m1[a]) + m2[b]``, the first maximum in row-major
    order (the pair and value of an entry-by-entry scan, such as
    :func:`.indicator.dense_indicator_argmax` with zero losses).  Each row's
    maximum is taken in one vectorized pass; only a row that beats the best
    so far is searched for the position of its maximum.  Values must not be
    NaN.  Returns ``(best, a, b)``; ``(-inf, -1, -1)`` when no value exceeds
    ``-inf``.
    """
    best = NEG_INF
    best_a = -1
    best_b = -1
    for a in range(n1):
        base = a * n2
        ma = m1[a]
        if a == ex1:  # the row holding the excluded pair, entry by entry
            for b in range(n2):
                if b != ex2:
                    val = (v[base + b] + ma) + m2[b]
                    if val > best:
                        best = val
                        best_a = a
                        best_b = b
            continue
        row_max = NEG_INF
        for b in range(n2):
            row_max = max(row_max, (v[base + b] + ma) + m2[b])
        if row_max > best:
            best = row_max
            best_a = a
            for b in range(n2):
                if (v[base + b] + ma) + m2[b] == row_max:
                    best_b = b
                    break
    return best, best_a, best_b
