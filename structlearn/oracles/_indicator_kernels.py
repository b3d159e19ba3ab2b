"""Numba kernels of the indicator-factor oracle over an updatable table.

State layout and contract: see :mod:`structlearn.oracles.indicator`.
No validation here.
"""

import numba as nb
import numpy as np

from ._multimap_kernels import frontier_pop, frontier_push, heap_fill_sorted, heap_set_key
from ._pair_kernels import unmark_labels

NEG_INF = -np.inf


# --------------------------------------------------------------- build/update
@nb.njit(cache=True)
def _row_summary(rk, ri, base, size, stk, sti, scap, a):
    """Cache the 3 largest entries of row ``a`` (keys ``stk[3a:3a+3]``, columns
    ``sti``; -1 when the row is shorter) and a bound ``scap[a]`` on every other
    entry.  The 4 largest keys of a heap lie in its first 15 slots (an
    item deeper down has 4 ancestors there, none smaller)."""
    k0 = k1 = k2 = k3 = NEG_INF
    i0 = i1 = i2 = -1
    for s in range(min(15, size)):
        key = rk[base + s]
        it = ri[base + s]
        if key > k0 or i0 < 0:
            k3 = k2
            k2, i2 = k1, i1
            k1, i1 = k0, i0
            k0, i0 = key, it
        elif key > k1 or i1 < 0:
            k3 = k2
            k2, i2 = k1, i1
            k1, i1 = key, it
        elif key > k2 or i2 < 0:
            k3 = k2
            k2, i2 = key, it
        elif key > k3:
            k3 = key
    stk[3 * a] = k0
    stk[3 * a + 1] = k1
    stk[3 * a + 2] = k2
    sti[3 * a] = i0
    sti[3 * a + 1] = i1
    sti[3 * a + 2] = i2
    scap[a] = k3


@nb.njit(cache=True)
def indicator_build(state):
    """(Re)build every heap of ``state`` from its table ``state[0]``."""
    v, shape, tk, ti, tp, rk, ri, rp, ck, ci, cp, cmax, stk, sti, scap = state
    n1 = shape[0]
    n2 = shape[1]
    for a in range(n1):
        heap_fill_sorted(rk, ri, rp, a * n2, v[a * n2 : (a + 1) * n2], n2)
        _row_summary(rk, ri, a * n2, n2, stk, sti, scap, a)
    col = np.empty(n1, dtype=np.float64)
    for b in range(n2):
        for a in range(n1):
            col[a] = v[a * n2 + b]
        heap_fill_sorted(ck, ci, cp, b * n1, col, n1)
        cmax[b] = ck[b * n1] if n1 > 0 else NEG_INF
    for a in range(n1):
        col[a] = rk[a * n2] if n2 > 0 else NEG_INF
    heap_fill_sorted(tk, ti, tp, 0, col, n1)


@nb.njit(cache=True)
def indicator_update(state, a, b, value):
    """Set ``v[a, b] = value`` and restore the heaps. O(log K)."""
    v, shape, tk, ti, tp, rk, ri, rp, ck, ci, cp, cmax, stk, sti, scap = state
    n1 = shape[0]
    n2 = shape[1]
    v[a * n2 + b] = value
    heap_set_key(rk, ri, rp, a * n2, n2, b, value)
    # the row summary changes only through its own entries or a value above
    # its bound (otherwise it stays valid, the bound possibly loose)
    if value > scap[a] or b == sti[3 * a] or b == sti[3 * a + 1] or b == sti[3 * a + 2]:
        _row_summary(rk, ri, a * n2, n2, stk, sti, scap, a)
    heap_set_key(ck, ci, cp, b * n1, n1, a, value)
    cmax[b] = ck[b * n1]
    top = rk[a * n2]
    if top != tk[tp[a]]:  # the row maximum changed
        heap_set_key(tk, ti, tp, 0, n1, a, top)


@nb.njit(cache=True)
def indicator_add(state, a, b, delta):
    """``v[a, b] += delta`` (heaps kept in sync)."""
    t = a * state[1][1] + b
    indicator_update(state, a, b, state[0][t] + delta)


@nb.njit(cache=True)
def indicator_update_many(state, rows, cols, values, n):
    """Set ``v[rows[k], cols[k]] = values[k]`` for ``k < n`` (in order)."""
    for k in range(n):
        indicator_update(state, rows[k], cols[k], values[k])


@nb.njit(cache=True)
def indicator_add_many(state, rows, cols, deltas, n):
    """``v[rows[k], cols[k]] += deltas[k]`` for ``k < n`` (in order)."""
    for k in range(n):
        indicator_add(state, rows[k], cols[k], deltas[k])


# -------------------------------------------------------------------- search
@nb.njit(cache=True, inline="always")
def _admissible(it, mode, fixed, pos1, pos2, ex1, ex2):
    """Labels (a, b) of heap item ``it`` and whether the walk may stop there."""
    if mode == 1:
        a = it
        b = fixed
        ok = pos1[a] < 0
    else:
        a = fixed
        b = it
        ok = pos2[b] < 0
    return ok and not (a == ex1 and b == ex2), a, b


@nb.njit(cache=True)
def _root(keys, items, base, size, mode, fixed, pos1, pos2, ex1, ex2, madd, c1, c2, best):
    """Look at the top of a heap only: status 0 = nothing can beat ``best``,
    1 = the top is the answer, 2 = a deeper walk is needed.
    Returns ``(status, value, a, b)``."""
    if size == 0:
        return 0, best, -1, -1
    val = ((keys[base] + madd) + c1) + c2
    if not val > best:
        return 0, best, -1, -1
    ok, a, b = _admissible(items[base], mode, fixed, pos1, pos2, ex1, ex2)
    if ok:
        return 1, val, a, b
    return 2, best, -1, -1


@nb.njit(cache=True)
def _walk(keys, items, base, size, mode, fixed, pos1, pos2, ex1, ex2,
          madd, c1, c2, best, fr_key, fr_slot):
    """Best-first walk of one heap to its first admissible item.

    The value of an item with key ``k`` is ``((k + madd) + c1) + c2``.
    mode 1: column ``fixed`` (= b), item = a, admissible iff a unlisted;
    mode 2: row ``fixed`` (= a), item = b, admissible iff b unlisted;
    the excluded pair (ex1, ex2) is never admissible.  Stops once values
    cannot exceed ``best``.  Returns ``(found, value, a, b, visited,
    fr_key, fr_slot)``.
    """
    visited = 0
    if size == 0:
        return False, best, -1, -1, visited, fr_key, fr_slot
    n = 0
    fr_key, fr_slot, n = frontier_push(fr_key, fr_slot, n, keys[base], 0)
    while n > 0:
        key, s, n = frontier_pop(fr_key, fr_slot, n)
        visited += 1
        val = ((key + madd) + c1) + c2
        if not val > best:
            break
        ok, a, b = _admissible(items[base + s], mode, fixed, pos1, pos2, ex1, ex2)
        if ok:
            return True, val, a, b, visited, fr_key, fr_slot
        c = 2 * s + 1
        if c < size:
            k = keys[base + c]
            if ((k + madd) + c1) + c2 > best:
                fr_key, fr_slot, n = frontier_push(fr_key, fr_slot, n, k, c)
            if c + 1 < size:
                k = keys[base + c + 1]
                if ((k + madd) + c1) + c2 > best:
                    fr_key, fr_slot, n = frontier_push(fr_key, fr_slot, n, k, c + 1)
    return False, best, -1, -1, visited, fr_key, fr_slot


@nb.njit(cache=True)
def _effective_list(idx, val, nnz, pos, loss, gt, eidx, evals):
    """Copy the non-zero entries of a sparse message into (eidx, evals), mark
    them in ``pos`` and list the ground truth ``gt`` (message 0) when it
    carries a loss. Returns the count.  A zero message is left unlisted: its
    labels are searched by the walks with exactly the same values."""
    n = 0
    for k in range(nnz):
        if val[k] != 0.0:
            eidx[n] = idx[k]
            evals[n] = val[k]
            pos[idx[k]] = n
            n += 1
    if loss != 0.0 and gt >= 0 and pos[gt] < 0:
        eidx[n] = gt
        evals[n] = 0.0
        pos[gt] = n
        n += 1
    return n


@nb.njit(cache=True)
def _sort_desc(keys, idx, vals, n):
    """Insertion sort of ``(keys, idx, vals)[:n]`` by ``keys`` descending."""
    for i in range(1, n):
        k = keys[i]
        it = idx[i]
        vl = vals[i]
        j = i - 1
        while j >= 0 and keys[j] < k:
            keys[j + 1] = keys[j]
            idx[j + 1] = idx[j]
            vals[j + 1] = vals[j]
            j -= 1
        keys[j + 1] = k
        idx[j + 1] = it
        vals[j + 1] = vl


@nb.njit(cache=True)
def _both_listed(v, n2, stk, sti, scap, cmax, pos2, eidx1, eval1, e1, eidx2, eval2, e2,
                 key1, key2, loss1, gt1, loss2, gt2, ex1, ex2, best):
    """Case (iv): best listed pair, pruned with cached row summaries.

    The value ``(((v + m1) + m2) + la) + lb`` of a pair is at most the same
    expression with ``v`` replaced by an upper bound of ``v[a, b]`` and
    ``lb`` by ``max(loss2, 0)`` (floating-point addition is monotone).  Each
    row's 3 largest entries are cached (``stk``, ``sti``: their values need
    no table read); every other entry of row ``a`` is at most ``scap[a]``
    and of column ``b`` at most ``cmax[b]``.  Rows are visited by decreasing
    ``max + m1`` and, within a row, the second list by decreasing message,
    so a row stops at the first ``b`` whose bound cannot beat ``best`` and
    only competitive pairs read the table.  Sorts the lists in place (and
    re-marks ``pos2``).  Returns ``(best, a, b, visited)``: ``a = -1`` when
    nothing beats ``best``.
    """
    best_a = -1
    best_b = -1
    if e2 == 0:
        return best, best_a, best_b, 0
    for k in range(e1):
        key1[k] = stk[3 * eidx1[k]] + eval1[k]
    _sort_desc(key1, eidx1, eval1, e1)
    for k in range(e2):
        key2[k] = eval2[k]
    _sort_desc(key2, eidx2, eval2, e2)
    for k in range(e2):
        pos2[eidx2[k]] = k
    lbmax = loss2 if loss2 > 0.0 else 0.0
    visited = 0
    for k1 in range(e1):
        a = eidx1[k1]
        m1 = eval1[k1]
        la = loss1 if a != gt1 else 0.0
        if not (((stk[3 * a] + m1) + eval2[0]) + la) + lbmax > best:
            continue
        # the cached largest entries of the row
        for h in range(3):
            b = sti[3 * a + h]
            if b < 0 or pos2[b] < 0 or (a == ex1 and b == ex2):
                continue
            visited += 1
            lb = loss2 if b != gt2 else 0.0
            val = (((stk[3 * a + h] + m1) + eval2[pos2[b]]) + la) + lb
            if val > best:
                best = val
                best_a = a
                best_b = b
        cap = scap[a]
        base = a * n2
        for k2 in range(e2):
            m2 = eval2[k2]
            if not (((cap + m1) + m2) + la) + lbmax > best:
                break
            b = eidx2[k2]
            if (a == ex1 and b == ex2) or b == sti[3 * a] or b == sti[3 * a + 1] \
                    or b == sti[3 * a + 2]:
                continue
            if not (((min(cap, cmax[b]) + m1) + m2) + la) + lbmax > best:
                continue
            visited += 1
            lb = loss2 if b != gt2 else 0.0
            val = (((v[base + b] + m1) + m2) + la) + lb
            if val > best:
                best = val
                best_a = a
                best_b = b
    return best, best_a, best_b, visited


@nb.njit(cache=True)
def _neither_listed(tk, ti, rk, ri, n1, n2, pos1, pos2, ex1, ex2, loss1, loss2, best,
                    fr_key, fr_slot, tf_key, tf_slot):
    """Case (i): best-first walk of the rows by their maxima (heap ``tk``),
    walking each unlisted row to its first unlisted column.  Returns
    ``(found, value, a, b, visited, fr_key, fr_slot, tf_key, tf_slot)``."""
    found = False
    best_a = -1
    best_b = -1
    visited = 0
    n = 0
    if n1 == 0 or n2 == 0:
        return found, best, best_a, best_b, visited, fr_key, fr_slot, tf_key, tf_slot
    tf_key, tf_slot, n = frontier_push(tf_key, tf_slot, n, tk[0], 0)
    while n > 0:
        key, s, n = frontier_pop(tf_key, tf_slot, n)
        visited += 1
        if not ((key + 0.0) + loss1) + loss2 > best:
            break
        a = ti[s]
        if pos1[a] < 0:
            status, val, aa, b = _root(rk, ri, a * n2, n2, 2, a, pos1, pos2, ex1, ex2,
                                       0.0, loss1, loss2, best)
            ok = status == 1
            if status == 2:
                ok, val, aa, b, nv, fr_key, fr_slot = _walk(
                    rk, ri, a * n2, n2, 2, a, pos1, pos2, ex1, ex2,
                    0.0, loss1, loss2, best, fr_key, fr_slot)
                visited += nv
            if ok:
                found = True
                best = val
                best_a = aa
                best_b = b
        c = 2 * s + 1
        for cc in range(c, min(c + 2, n1)):
            k = tk[cc]
            if ((k + 0.0) + loss1) + loss2 > best:
                tf_key, tf_slot, n = frontier_push(tf_key, tf_slot, n, k, cc)
    return found, best, best_a, best_b, visited, fr_key, fr_slot, tf_key, tf_slot


@nb.njit(cache=True)
def indicator_fmo(state, idx1, val1, nnz1, idx2, val2, nnz2,
                  loss1, gt1, loss2, gt2, ex1, ex2, workspace):
    """argmax over (a, b) != (ex1, ex2) of
    v[a, b] + m1[a] + m2[b] + loss1 * [a != gt1] + loss2 * [b != gt2].

    Returns ``(best, a, b, n_visited)``; see :mod:`structlearn.oracles.indicator`.
    """
    return indicator_fmo_above(state, idx1, val1, nnz1, idx2, val2, nnz2,
                               loss1, gt1, loss2, gt2, ex1, ex2, NEG_INF, workspace)


@nb.njit(cache=True)
def indicator_fmo_above(state, idx1, val1, nnz1, idx2, val2, nnz2,
                        loss1, gt1, loss2, gt2, ex1, ex2, floor, workspace):
    """:func:`indicator_fmo` restricted to values above ``floor``.

    Returns the maximizer when its value is ``> floor``, else
    ``(floor, -1, -1, n_visited)``.  A caller that only acts on labelings
    that beat a known value (a Frank-Wolfe step adds a labeling only when
    its gradient beats the active set's) passes that value: every case
    then prunes against it from the start.
    """
    v = state[0]
    n1 = state[1][0]
    n2 = state[1][1]
    tk, ti, tp = state[2], state[3], state[4]
    rk, ri = state[5], state[6]
    ck, ci = state[8], state[9]
    cmax, stk, sti, scap = state[11], state[12], state[13], state[14]
    pos1, pos2, stats = workspace[0], workspace[1], workspace[2]
    eidx1, eval1, eidx2, eval2 = workspace[3], workspace[4], workspace[5], workspace[6]
    fr_key, fr_slot = workspace[7], workspace[8]
    tf_key, tf_slot, key1, key2 = workspace[9], workspace[10], workspace[11], workspace[12]
    if gt1 < 0:
        loss1 = 0.0
    if gt2 < 0:
        loss2 = 0.0
    e1 = _effective_list(idx1, val1, nnz1, pos1, loss1, gt1, eidx1, eval1)
    e2 = _effective_list(idx2, val2, nnz2, pos2, loss2, gt2, eidx2, eval2)
    # (iv) both listed
    best, best_a, best_b, v4 = _both_listed(v, n2, stk, sti, scap, cmax, pos2, eidx1, eval1, e1,
                                            eidx2, eval2, e2, key1, key2, loss1, gt1, loss2,
                                            gt2, ex1, ex2, floor)
    # (ii) b listed, a unlisted: walk column heaps
    v2 = 0
    if e1 < n1:
        for k2 in range(e2):
            b = eidx2[k2]
            lb = loss2 if b != gt2 else 0.0
            if not ((cmax[b] + eval2[k2]) + loss1) + lb > best:
                continue
            status, val, a, bb = _root(ck, ci, b * n1, n1, 1, b, pos1, pos2, ex1, ex2,
                                       eval2[k2], loss1, lb, best)
            v2 += 1
            found = status == 1
            if status == 2:
                found, val, a, bb, nv, fr_key, fr_slot = _walk(
                    ck, ci, b * n1, n1, 1, b, pos1, pos2, ex1, ex2,
                    eval2[k2], loss1, lb, best, fr_key, fr_slot)
                v2 += nv - 1
            if found:
                best = val
                best_a = a
                best_b = bb
    # (iii) a listed, b unlisted: walk row heaps
    v3 = 0
    if e2 < n2:
        for k1 in range(e1):
            a = eidx1[k1]
            la = loss1 if a != gt1 else 0.0
            if not ((stk[3 * a] + eval1[k1]) + la) + loss2 > best:
                continue
            status, val, aa, b = _root(rk, ri, a * n2, n2, 2, a, pos1, pos2, ex1, ex2,
                                       eval1[k1], la, loss2, best)
            v3 += 1
            found = status == 1
            if status == 2:
                found, val, aa, b, nv, fr_key, fr_slot = _walk(
                    rk, ri, a * n2, n2, 2, a, pos1, pos2, ex1, ex2,
                    eval1[k1], la, loss2, best, fr_key, fr_slot)
                v3 += nv - 1
            if found:
                best = val
                best_a = aa
                best_b = b
    # (i) neither listed: rows by their maxima, then within the row
    v1 = 0
    if e1 < n1 and e2 < n2:
        found, val, a, b, v1, fr_key, fr_slot, tf_key, tf_slot = _neither_listed(
            tk, ti, rk, ri, n1, n2, pos1, pos2, ex1, ex2, loss1, loss2, best,
            fr_key, fr_slot, tf_key, tf_slot)
        if found:
            best = val
            best_a = a
            best_b = b
    unmark_labels(pos1, eidx1, e1)
    unmark_labels(pos2, eidx2, e2)
    stats[0] = v1
    stats[1] = v2
    stats[2] = v3
    stats[3] = v4
    return best, best_a, best_b, v1 + v2 + v3 + v4


@nb.njit(cache=True)
def dense_indicator_argmax(v, n1, n2, m1, m2, loss1, gt1, loss2, gt2, ex1, ex2):
    """Reference dense scan with the same value arithmetic (first maximum)."""
    if gt1 < 0:
        loss1 = 0.0
    if gt2 < 0:
        loss2 = 0.0
    best = NEG_INF
    best_a = -1
    best_b = -1
    for a in range(n1):
        base = a * n2
        ma = m1[a]
        la = loss1 if a != gt1 else 0.0
        for b in range(n2):
            if a == ex1 and b == ex2:
                continue
            lb = loss2 if b != gt2 else 0.0
            val = ((v[base + b] + ma) + m2[b]) + la + lb
            if val > best:
                best = val
                best_a = a
                best_b = b
    return best, best_a, best_b
