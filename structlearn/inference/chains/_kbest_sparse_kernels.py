"""List Viterbi (the ``m`` best label sequences of chains) over a mostly-zero
transition table.

The dense list Viterbi (:func:`._kbest_kernels.kbest_sequences`) merges, for
every label ``b`` of a position, the ``K`` sorted lists of the previous
position shifted by the column ``trans[:, b]``: ``O(K^2)`` per position.
Where the column is zero the shift is 0, so the best candidates of ``b``
from outside its non-zeros are the front of one list ``G`` shared by all
labels: every previous entry ``(value, state, rank)`` in the kernels' order
(higher value, then lower state, then lower rank), produced lazily by a heap
over the states.  Per label ``b`` the top ``m`` are then the first ``m``
entries of ``G`` whose state is not a row of column ``b`` (a bit test),
improved by the candidates of its non-zeros.  Those are read row by row,
each row by decreasing value, only while the row's best entry plus the value
reaches the smallest ``m``-th score of any label (the floor), so rows far
below the leaders cost one comparison.  A label whose outside list reaches
deep into ``G`` (its non-zeros hold many leaders) would lower the floor for
all; it reads its own column instead and sets no floor.

Same sequences, scores and tie order as the dense kernel; per position
``O(K m + T log K + entries read)``, ``T`` the entries of ``G`` produced.
"""

import numba as nb
import numpy as np

from ._chain_kernels import _is_row
from ._kbest_kernels import (_before, _entries, _heads_heap, _merge_top, _pop_merged,
                             _start_lists, _trace_back)

# a label whose first m outside entries are not within the first
# m * (1 + DEEP_LEADERS) entries of G reads its own column
DEEP_LEADERS = 16


@nb.njit(cache=True)
def _insert(tv, ts, tr, tn, b, m, v, a, r):
    """Insert ``(v, a, r)`` into label ``b``'s top list (``tn[b]`` entries,
    kernel order) if it belongs to the top ``m``; returns whether it did."""
    n = tn[b]
    if n == m and not _before(v, a, r, tv[b, m - 1], ts[b, m - 1], tr[b, m - 1]):
        return False
    i = n if n < m else m - 1
    while i > 0 and _before(v, a, r, tv[b, i - 1], ts[b, i - 1], tr[b, i - 1]):
        tv[b, i] = tv[b, i - 1]
        ts[b, i] = ts[b, i - 1]
        tr[b, i] = tr[b, i - 1]
        i -= 1
    tv[b, i] = v
    ts[b, i] = a
    tr[b, i] = r
    if n < m:
        tn[b] = n + 1
    return True


@nb.njit(cache=True)
def _position_tops(val, cnt, po, unary_row, table, m, deep_leaders, zero, heap, merged, tops,
                   deep):
    """Top ``m`` candidates ``(value, previous state, rank)`` of every label of
    a position into ``tops`` (``(tv, ts, tr, tn)``, ``tn`` the counts);
    labels with a ``-inf`` unary score get none.  ``table``: the sparse
    transition table (:func:`kbest_sequences_sparse`); ``zero`` float64 (K,)
    zeros; ``heap``, ``merged``: entry scratch (:func:`._kbest_kernels._entries`)
    of K and K m entries; ``deep`` uint8 (K,) scratch."""
    col_ptr, col_rows, col_vals, row_ptr, row_cols, row_vals, bits = table
    hv, hs, hr = heap
    gv, gs, gr = merged
    tv, ts, tr, tn = tops
    K = unary_row.shape[0]
    # G is produced from the heap of the previous states' best entries
    hsize = _heads_heap(val, cnt, po, K, zero, hv, hs, hr)
    gsize = 0
    shallow = m * (1 + deep_leaders)
    floor = np.inf
    for b in range(K):
        tn[b] = 0
        deep[b] = 0
        if unary_row[b] == -np.inf:
            continue
        lo = col_ptr[b]
        hi = col_ptr[b + 1]
        i = 0
        while tn[b] < m:
            if i == gsize:
                hsize, gsize = _pop_merged(val, cnt, po, zero, hv, hs, hr, hsize, gv, gs, gr,
                                           gsize, max(2 * gsize, m))
                if i == gsize:
                    break  # every entry seen
            a = gs[i]
            if not _is_row(bits, col_rows, lo, hi, b, a):
                n = tn[b]
                tv[b, n] = gv[i]
                ts[b, n] = a
                tr[b, n] = gr[i]
                tn[b] = n + 1
            i += 1
        if i > shallow:
            deep[b] = 1
        elif tn[b] < m:
            floor = -np.inf
        elif tv[b, m - 1] < floor:
            floor = tv[b, m - 1]
    # the non-zeros of the shallow labels, row by row
    for a in range(K):
        c = cnt[po + a]
        if c == 0:
            continue
        top = val[po + a, 0]
        for p in range(row_ptr[a], row_ptr[a + 1]):
            v = row_vals[p]
            if v == -np.inf or top + v < floor:
                break
            b = row_cols[p]
            if deep[b] != 0 or unary_row[b] == -np.inf:
                continue
            for r in range(c):
                if not _insert(tv, ts, tr, tn, b, m, val[po + a, r] + v, a, r):
                    break
    # the deep labels read their own column
    for b in range(K):
        if deep[b] == 0:
            continue
        for p in range(col_ptr[b], col_ptr[b + 1]):
            a = col_rows[p]
            v = col_vals[p]
            if v == -np.inf:
                continue
            for r in range(cnt[po + a]):
                if not _insert(tv, ts, tr, tn, b, m, val[po + a, r] + v, a, r):
                    break


@nb.njit(cache=True, nogil=True)
def kbest_sequences_sparse(unary, offsets, table, m, out_labels, out_scores, out_found,
                           deep_leaders=DEEP_LEADERS):
    """The ``m`` best label sequences of every chain of a batch, the transition
    table given by its non-zeros.

    Parameters
    ----------
    unary, offsets, m, out_labels, out_scores, out_found
        As in :func:`._kbest_kernels.kbest_sequences` (``unary`` float64
        (N, K), ``out_labels`` int64 (N, m): ranks past the found ones are
        not written).
    table : tuple
        ``(col_ptr, col_rows, col_vals, row_ptr, row_cols, row_vals, bits)``:
        the table ``trans[a, b]`` (score of ``y_t = a, y_{t+1} = b``) by
        column, by row (each row by decreasing value) and as a bitset:
        :func:`structlearn.inference.chains.viterbi.sparse_transition_table`.
    deep_leaders : int
        A label reads its own column when its ``m`` best outside entries lie
        beyond the first ``m (1 + deep_leaders)`` of ``G``.

    Same results as :func:`._kbest_kernels.kbest_sequences` on the dense table.
    """
    K = unary.shape[1]
    n_max = 0
    for s in range(offsets.shape[0] - 1):
        n_max = max(n_max, offsets[s + 1] - offsets[s])
    val = np.empty((n_max * K, m))
    bstate = np.empty((n_max * K, m), dtype=np.int64)
    brank = np.empty((n_max * K, m), dtype=np.int64)
    cnt = np.zeros(n_max * K, dtype=np.int64)
    heap = _entries(K)
    merged = _entries(K * m)
    tv = np.empty((K, m))
    ts = np.empty((K, m), dtype=np.int64)
    tr = np.empty((K, m), dtype=np.int64)
    tn = np.zeros(K, dtype=np.int64)
    tops = (tv, ts, tr, tn)
    deep = np.zeros(K, dtype=np.uint8)
    zero = np.zeros(K)
    ev, es, er = _entries(m)
    soff = np.arange(n_max + 1) * K
    paths = np.empty((m, n_max), dtype=np.int64)
    flat_unary = unary.ravel()
    for s in range(offsets.shape[0] - 1):
        start = offsets[s]
        n = offsets[s + 1] - start
        for r in range(m):
            out_scores[s, r] = -np.inf
        if n == 0:
            out_scores[s, 0] = 0.0
            out_found[s] = 1
            continue
        _start_lists(flat_unary, start * K, K, val, bstate, brank, cnt)
        for k in range(1, n):
            _position_tops(val, cnt, (k - 1) * K, unary[start + k], table, m, deep_leaders, zero,
                           heap, merged, tops, deep)
            for b in range(K):
                q = k * K + b
                x = unary[start + k, b]
                cnt[q] = tn[b]
                for i in range(tn[b]):
                    val[q, i] = tv[b, i] + x
                    bstate[q, i] = ts[b, i]
                    brank[q, i] = tr[b, i]
        # the best ends over the last position's states
        found = _merge_top(val, cnt, (n - 1) * K, K, zero, m, heap[0], heap[1], heap[2], ev, es,
                           er)
        out_found[s] = found
        _trace_back(es, er, found, n, soff, bstate, brank, paths)
        for i in range(found):
            out_scores[s, i] = ev[i]
            for k in range(n):
                out_labels[start + k, i] = paths[i, k]
