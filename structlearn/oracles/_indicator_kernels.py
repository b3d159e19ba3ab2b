"""Numba kernels of the indicator-factor oracle over an updatable table.

State layout and contract: see :mod:`structlearn.oracles.indicator`.
No validation here.
"""

import numba as nb
import numpy as np

from ._multimap_kernels import frontier_pop, frontier_push, heap_fill_sorted, heap_set_key
from ._pair_kernels import mark_labels, unmark_labels

NEG_INF = -np.inf


# --------------------------------------------------------------- build/update
@nb.njit(cache=True)
def indicator_build(state):
    """(Re)build every heap of ``state`` from its table ``state[0]``."""
    v, shape, gk, gi, gp, rk, ri, rp, ck, ci, cp = state
    n1 = shape[0]
    n2 = shape[1]
    heap_fill_sorted(gk, gi, gp, 0, v, n1 * n2)
    for a in range(n1):
        heap_fill_sorted(rk, ri, rp, a * n2, v[a * n2 : (a + 1) * n2], n2)
    col = np.empty(n1, dtype=np.float64)
    for b in range(n2):
        for a in range(n1):
            col[a] = v[a * n2 + b]
        heap_fill_sorted(ck, ci, cp, b * n1, col, n1)


@nb.njit(cache=True)
def indicator_update(state, a, b, value):
    """Set ``v[a, b] = value`` and restore the three heaps. O(log K)."""
    v, shape, gk, gi, gp, rk, ri, rp, ck, ci, cp = state
    n1 = shape[0]
    n2 = shape[1]
    t = a * n2 + b
    v[t] = value
    heap_set_key(gk, gi, gp, 0, n1 * n2, t, value)
    heap_set_key(rk, ri, rp, a * n2, n2, b, value)
    heap_set_key(ck, ci, cp, b * n1, n1, a, value)


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
def _admissible(it, mode, fixed, n2, pos1, pos2, ex1, ex2):
    """Labels (a, b) of heap item ``it`` and whether the walk may stop there."""
    if mode == 0:
        a = it // n2
        b = it - a * n2
        ok = pos1[a] < 0 and pos2[b] < 0
    elif mode == 1:
        a = it
        b = fixed
        ok = pos1[a] < 0
    else:
        a = fixed
        b = it
        ok = pos2[b] < 0
    return ok and not (a == ex1 and b == ex2), a, b


@nb.njit(cache=True)
def _root(keys, items, base, size, mode, fixed, n2, pos1, pos2, ex1, ex2, madd, c1, c2, best):
    """Look at the top of a heap only: status 0 = nothing can beat ``best``,
    1 = the top is the answer, 2 = a deeper walk is needed.
    Returns ``(status, value, a, b)``."""
    if size == 0:
        return 0, best, -1, -1
    val = ((keys[base] + madd) + c1) + c2
    if not val > best:
        return 0, best, -1, -1
    ok, a, b = _admissible(items[base], mode, fixed, n2, pos1, pos2, ex1, ex2)
    if ok:
        return 1, val, a, b
    return 2, best, -1, -1


@nb.njit(cache=True)
def _walk(keys, items, base, size, mode, fixed, n2, pos1, pos2, ex1, ex2,
          madd, c1, c2, best, fr_key, fr_slot):
    """Best-first walk of one heap to its first admissible item.

    The value of an item with key ``k`` is ``((k + madd) + c1) + c2``.
    mode 0: global heap, item = a * n2 + b, admissible iff a and b unlisted;
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
        ok, a, b = _admissible(items[base + s], mode, fixed, n2, pos1, pos2, ex1, ex2)
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
    """Copy a sparse message into (eidx, evals), mark it in ``pos`` and list
    the ground truth ``gt`` (message 0) when it carries a loss. Returns count."""
    for k in range(nnz):
        eidx[k] = idx[k]
        evals[k] = val[k]
    mark_labels(pos, idx, nnz)
    n = nnz
    if loss != 0.0 and gt >= 0 and pos[gt] < 0:
        eidx[n] = gt
        evals[n] = 0.0
        pos[gt] = n
        n += 1
    return n


@nb.njit(cache=True)
def indicator_fmo(state, idx1, val1, nnz1, idx2, val2, nnz2,
                  loss1, gt1, loss2, gt2, ex1, ex2, workspace):
    """argmax over (a, b) != (ex1, ex2) of
    v[a, b] + m1[a] + m2[b] + loss1 * [a != gt1] + loss2 * [b != gt2].

    Returns ``(best, a, b, n_visited)``; see :mod:`structlearn.oracles.indicator`.
    """
    v = state[0]
    n1 = state[1][0]
    n2 = state[1][1]
    gk, gi = state[2], state[3]
    rk, ri = state[5], state[6]
    ck, ci = state[8], state[9]
    pos1, pos2, stats = workspace[0], workspace[1], workspace[2]
    eidx1, eval1, eidx2, eval2 = workspace[3], workspace[4], workspace[5], workspace[6]
    fr_key, fr_slot = workspace[7], workspace[8]
    if gt1 < 0:
        loss1 = 0.0
    if gt2 < 0:
        loss2 = 0.0
    e1 = _effective_list(idx1, val1, nnz1, pos1, loss1, gt1, eidx1, eval1)
    e2 = _effective_list(idx2, val2, nnz2, pos2, loss2, gt2, eidx2, eval2)
    best = NEG_INF
    best_a = -1
    best_b = -1
    # (iv) both listed
    no_loss = loss1 == 0.0 and loss2 == 0.0
    for k1 in range(e1):
        a = eidx1[k1]
        m1 = eval1[k1]
        la = loss1 if a != gt1 else 0.0
        base = a * n2
        for k2 in range(e2):
            b = eidx2[k2]
            if a == ex1 and b == ex2:
                continue
            val = (v[base + b] + m1) + eval2[k2]
            if not no_loss:
                lb = loss2 if b != gt2 else 0.0
                val = (val + la) + lb
            if val > best:
                best = val
                best_a = a
                best_b = b
    v4 = e1 * e2
    # (ii) b listed, a unlisted: walk column heaps
    v2 = 0
    if e1 < n1:
        for k2 in range(e2):
            b = eidx2[k2]
            lb = loss2 if b != gt2 else 0.0
            status, val, a, bb = _root(ck, ci, b * n1, n1, 1, b, n2, pos1, pos2, ex1, ex2,
                                       eval2[k2], loss1, lb, best)
            v2 += 1
            found = status == 1
            if status == 2:
                found, val, a, bb, nv, fr_key, fr_slot = _walk(
                    ck, ci, b * n1, n1, 1, b, n2, pos1, pos2, ex1, ex2,
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
            status, val, aa, b = _root(rk, ri, a * n2, n2, 2, a, n2, pos1, pos2, ex1, ex2,
                                       eval1[k1], la, loss2, best)
            v3 += 1
            found = status == 1
            if status == 2:
                found, val, aa, b, nv, fr_key, fr_slot = _walk(
                    rk, ri, a * n2, n2, 2, a, n2, pos1, pos2, ex1, ex2,
                    eval1[k1], la, loss2, best, fr_key, fr_slot)
                v3 += nv - 1
            if found:
                best = val
                best_a = aa
                best_b = b
    # (i) neither listed: walk the global heap
    v1 = 0
    if e1 < n1 and e2 < n2:
        status, val, a, b = _root(gk, gi, 0, n1 * n2, 0, 0, n2, pos1, pos2, ex1, ex2,
                                  0.0, loss1, loss2, best)
        v1 = 1
        found = status == 1
        if status == 2:
            found, val, a, b, nv, fr_key, fr_slot = _walk(
                gk, gi, 0, n1 * n2, 0, 0, n2, pos1, pos2, ex1, ex2,
                0.0, loss1, loss2, best, fr_key, fr_slot)
            v1 = nv
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
