"""Numba kernels of the binary-interaction joint oracle (see :mod:`.binary`).

No validation here.
"""

import numba as nb
import numpy as np

from ._multimap_kernels import frontier_pop, frontier_push, heap_fill_sorted, heap_set_key
from ._pair_kernels import mark_labels, unmark_labels

NEG_INF = -np.inf


@nb.njit(cache=True)
def pair_id(i, j, n_labels):
    """Index of the unordered pair {i, j} (i != j) in row-major upper-triangle order."""
    if i > j:
        i, j = j, i
    return i * (2 * n_labels - i - 1) // 2 + (j - i - 1)


@nb.njit(cache=True)
def binary_build(state):
    """(Re)build the heaps of ``state`` from its pair scores ``state[0]``
    (the partner heaps only where the state has them)."""
    s, meta, pi, pj, gk, gi, gp, rk, ri, rp = state
    L = meta[0]
    P = s.shape[0]
    p = 0
    for i in range(L):
        for j in range(i + 1, L):
            pi[p] = i
            pj[p] = j
            p += 1
    heap_fill_sorted(gk, gi, gp, 0, s, P)
    if rk.shape[0] == 0:
        return
    row = np.empty(L, dtype=np.float64)
    for i in range(L):
        for j in range(L):
            row[j] = NEG_INF if i == j else s[pair_id(i, j, L)]
        heap_fill_sorted(rk, ri, rp, i * L, row, L)


@nb.njit(cache=True)
def binary_update(state, i, j, value):
    """Set the score of the pair {i, j} (i != j) to ``value``. O(log L)."""
    s, meta, pi, pj, gk, gi, gp, rk, ri, rp = state
    L = meta[0]
    p = pair_id(i, j, L)
    s[p] = value
    heap_set_key(gk, gi, gp, 0, s.shape[0], p, value)
    if rk.shape[0] == 0:
        return
    heap_set_key(rk, ri, rp, i * L, L, j, value)
    heap_set_key(rk, ri, rp, j * L, L, i, value)


@nb.njit(cache=True)
def binary_add(state, i, j, delta):
    """Add ``delta`` to the score of the pair {i, j}."""
    binary_update(state, i, j, state[0][pair_id(i, j, state[1][0])] + delta)


@nb.njit(cache=True)
def _walk_pairs(keys, items, base, size, row, L, pi, pj, pos, excl, cadd, best, fr_key, fr_slot):
    """Best-first walk of the global heap (row < 0) or of label ``row``'s heap
    to the first pair with its free labels unlisted and not excluded.
    Value = key + cadd. Returns (found, value, i, j, visited, fr_key, fr_slot)."""
    visited = 0
    if size == 0:
        return False, best, -1, -1, visited, fr_key, fr_slot
    n = 0
    fr_key, fr_slot, n = frontier_push(fr_key, fr_slot, n, keys[base], 0)
    while n > 0:
        key, sl, n = frontier_pop(fr_key, fr_slot, n)
        visited += 1
        val = key + cadd
        if not val > best:
            break
        it = items[base + sl]
        if row < 0:
            i = pi[it]
            j = pj[it]
            ok = pos[i] < 0 and pos[j] < 0 and excl[it] == 0
        else:
            i = row
            j = it
            ok = j != row and pos[j] < 0 and excl[pair_id(i, j, L)] == 0
        if ok:
            if i > j:
                i, j = j, i
            return True, val, i, j, visited, fr_key, fr_slot
        c = 2 * sl + 1
        if c < size:
            k = keys[base + c]
            if k + cadd > best:
                fr_key, fr_slot, n = frontier_push(fr_key, fr_slot, n, k, c)
            if c + 1 < size:
                k = keys[base + c + 1]
                if k + cadd > best:
                    fr_key, fr_slot, n = frontier_push(fr_key, fr_slot, n, k, c + 1)
    return False, best, -1, -1, visited, fr_key, fr_slot


@nb.njit(cache=True)
def _scan_partners(s, a, L, pos, excl, cadd, best):
    """Case (ii) without partner heaps: every inactive, non-excluded partner
    of label ``a``, value ``s + cadd``.  Returns (found, value, i, j, visited)."""
    found = False
    bi = -1
    bj = -1
    for b in range(L):
        if b == a or pos[b] >= 0:
            continue
        p = pair_id(a, b, L)
        if excl[p] != 0:
            continue
        val = s[p] + cadd
        if val > best:
            found = True
            best = val
            bi = min(a, b)
            bj = max(a, b)
    return found, best, bi, bj, L


@nb.njit(cache=True)
def binary_pair_fmo(state, act_idx, act_val, n_act, excl_i, excl_j, n_excl, workspace):
    """argmax over unordered pairs {i, j} not excluded of s[i, j] + c[i] + c[j].

    ``c`` is sparse: labels ``act_idx[:n_act]`` carry ``act_val[:n_act]``,
    other labels 0.  Pairs ``{excl_i[k], excl_j[k]}`` (k < n_excl) are left
    out.  Returns ``(best, i, j, n_visited)`` with ``i < j``;
    ``(-inf, -1, -1, n)`` when no pair is above -inf.
    """
    s, meta, pi, pj, gk, gi, gp, rk, ri, rp = state
    L = meta[0]
    pos, excl, stats, fr_key, fr_slot = workspace
    mark_labels(pos, act_idx, n_act)
    for k in range(n_excl):
        excl[pair_id(excl_i[k], excl_j[k], L)] = 1
    best = NEG_INF
    bi = -1
    bj = -1
    # (iv) both labels active
    for k1 in range(n_act):
        a = act_idx[k1]
        for k2 in range(k1 + 1, n_act):
            b = act_idx[k2]
            p = pair_id(a, b, L)
            if excl[p] != 0:
                continue
            if a < b:
                val = (s[p] + act_val[k1]) + act_val[k2]
            else:
                val = (s[p] + act_val[k2]) + act_val[k1]
            if val > best:
                best = val
                bi = min(a, b)
                bj = max(a, b)
    v4 = n_act * (n_act - 1) // 2
    # (ii)/(iii) one label active: walk its partner heap
    v2 = 0
    if n_act < L:
        for k1 in range(n_act):
            a = act_idx[k1]
            if rk.shape[0] == 0:  # a state without partner heaps: scan a's partners
                found, val, i, j, nv = _scan_partners(s, a, L, pos, excl, act_val[k1], best)
            else:
                found, val, i, j, nv, fr_key, fr_slot = _walk_pairs(
                    rk, ri, a * L, L, a, L, pi, pj, pos, excl, act_val[k1], best, fr_key,
                    fr_slot)
            v2 += nv
            if found:
                best = val
                bi = i
                bj = j
    # (i) no label active: walk the global heap
    v1 = 0
    if n_act + 1 < L:
        found, val, i, j, nv, fr_key, fr_slot = _walk_pairs(
            gk, gi, 0, s.shape[0], -1, L, pi, pj, pos, excl, 0.0, best, fr_key, fr_slot)
        v1 = nv
        if found:
            best = val
            bi = i
            bj = j
    for k in range(n_excl):
        excl[pair_id(excl_i[k], excl_j[k], L)] = 0
    unmark_labels(pos, act_idx, n_act)
    stats[0] = v1
    stats[1] = v2
    stats[2] = 0
    stats[3] = v4
    return best, bi, bj, v1 + v2 + v4


@nb.njit(cache=True)
def dense_binary_pair_argmax(s, L, c, excluded):
    """Reference: scan every pair of (s[p] + c[i]) + c[j], skipping excluded[p]."""
    best = NEG_INF
    bi = -1
    bj = -1
    p = 0
    for i in range(L):
        for j in range(i + 1, L):
            if excluded[p] == 0:
                val = (s[p] + c[i]) + c[j]
                if val > best:
                    best = val
                    bi = i
                    bj = j
            p += 1
    return best, bi, bj


@nb.njit(cache=True)
def masked_argmax(values, excl_idx, n_excl, mark):
    """argmax of ``values`` over indices not in ``excl_idx[:n_excl]``
    (the unigram side of the joint oracle). ``mark`` int64 scratch of the
    length of ``values`` filled with -1 (restored). Returns (best, index)."""
    mark_labels(mark, excl_idx, n_excl)
    best = NEG_INF
    bi = -1
    for i in range(values.shape[0]):
        if mark[i] < 0 and values[i] > best:
            best = values[i]
            bi = i
    unmark_labels(mark, excl_idx, n_excl)
    return best, bi
