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
def fill_table_orders(table, n1, n2, out_all, out_rows, out_cols):
    """Descending orders of one flat ``n1 x n2`` table (C order).

    out_all[r] : flat index ``a * n2 + b`` of the r-th largest entry;
    out_rows[a * n2 + r] : column of the r-th largest entry of row ``a``;
    out_cols[b * n1 + r] : row of the r-th largest entry of column ``b``.
    Ties keep index order (stable sort); -inf entries come last.
    """
    n = n1 * n2
    neg = np.empty(n, dtype=np.float64)
    for t in range(n):
        neg[t] = -table[t]
    order = np.argsort(neg, kind="mergesort")
    for t in range(n):
        out_all[t] = order[t]
    row = np.empty(n2, dtype=np.float64)
    for a in range(n1):
        for b in range(n2):
            row[b] = -table[a * n2 + b]
        o = np.argsort(row, kind="mergesort")
        for r in range(n2):
            out_rows[a * n2 + r] = o[r]
    col = np.empty(n1, dtype=np.float64)
    for b in range(n2):
        for a in range(n1):
            col[a] = -table[a * n2 + b]
        o = np.argsort(col, kind="mergesort")
        for r in range(n1):
            out_cols[b * n1 + r] = o[r]


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


@nb.njit(cache=True)
def case_both_listed(table, n2, idx1, val1, nnz1, idx2, val2, nnz2, ex1, ex2, best, best_a, best_b):
    """Case (iv): every pair of listed labels. Returns (best, a, b, visited)."""
    for k1 in range(nnz1):
        a = idx1[k1]
        m1 = val1[k1]
        base = a * n2
        for k2 in range(nnz2):
            b = idx2[k2]
            if a == ex1 and b == ex2:
                continue
            val = table[base + b] + m1 + val2[k2]
            if val > best:
                best = val
                best_a = a
                best_b = b
    return best, best_a, best_b, nnz1 * nnz2


# ---------------------------------------------------------- static four cases
@nb.njit(cache=True)
def static_pair_argmax(
    table,
    n1,
    n2,
    order_all,
    order_rows,
    order_cols,
    idx1,
    val1,
    nnz1,
    idx2,
    val2,
    nnz2,
    ex1,
    ex2,
    workspace,
):
    """argmax over (a, b) != (ex1, ex2) of table[a*n2+b] + m1[a] + m2[b].

    See :mod:`structlearn.oracles.sorted_tables` for the full contract.
    Returns ``(best, a, b, n_visited)``; ``(-inf, -1, -1, n)`` when no
    entry has a value above -inf.
    """
    pos1 = workspace[0]
    pos2 = workspace[1]
    stats = workspace[2]
    mark_labels(pos1, idx1, nnz1)
    mark_labels(pos2, idx2, nnz2)
    best = NEG_INF
    best_a = -1
    best_b = -1
    # (iv) both labels listed
    best, best_a, best_b, v4 = case_both_listed(
        table, n2, idx1, val1, nnz1, idx2, val2, nnz2, ex1, ex2, best, best_a, best_b
    )
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
                if pos1[a] < 0 and not (a == ex1 and b == ex2):
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
                if pos2[b] < 0 and not (a == ex1 and b == ex2):
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
            if pos1[a] < 0 and pos2[b] < 0 and not (a == ex1 and b == ex2):
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


@nb.njit(cache=True)
def dense_pair_argmax(table, n1, n2, m1, m2, ex1, ex2):
    """Reference: dense scan of table[a*n2+b] + m1[a] + m2[b] (first maximum)."""
    best = NEG_INF
    best_a = -1
    best_b = -1
    for a in range(n1):
        base = a * n2
        ma = m1[a]
        for b in range(n2):
            if a == ex1 and b == ex2:
                continue
            val = table[base + b] + ma + m2[b]
            if val > best:
                best = val
                best_a = a
                best_b = b
    return best, best_a, best_b
