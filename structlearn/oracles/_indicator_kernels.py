"""Numba kernels of the indicator-factor oracle over an updatable table.

State layout and contract: see :mod:`structlearn.oracles.indicator`.
No validation here.

Every row and every column keeps a *summary*: its largest entries (1 to
``H`` of them, exact keys, sorted, with their positions) and a bound
``cap`` on all the others (``cap`` <= the smallest summarized key).
Updating an entry costs O(H) on these small arrays; a line is rescanned
(O(K), contiguous: columns are scanned in the transposed copy) only when
its summary empties.
A search walks a line's summary and scans the line only when ``cap`` can
still beat the best value found.
"""

import numba as nb
import numpy as np

from ._multimap_kernels import heap_fill_sorted, heap_set_key
from ._pair_kernels import unmark_labels

NEG_INF = -np.inf
H = 4  # entries per line summary


# ------------------------------------------------------------------ summaries
@nb.njit(cache=True)
def _bubble(keys, items, base, h):
    """Restore descending order of ``keys[base:base+H]`` after slot ``h`` changed."""
    while h > 0 and (items[base + h - 1] < 0 or keys[base + h] > keys[base + h - 1]):
        keys[base + h], keys[base + h - 1] = keys[base + h - 1], keys[base + h]
        items[base + h], items[base + h - 1] = items[base + h - 1], items[base + h]
        h -= 1
    while h + 1 < H and items[base + h + 1] >= 0 and keys[base + h + 1] > keys[base + h]:
        keys[base + h], keys[base + h + 1] = keys[base + h + 1], keys[base + h]
        items[base + h], items[base + h + 1] = items[base + h + 1], items[base + h]
        h += 1


@nb.njit(cache=True)
def _summary_rebuild(line, n, keys, items, cap, r):
    """Summary of line ``r`` (values ``line[:n]``) from scratch. O(n)."""
    base = r * H
    for h in range(H):
        keys[base + h] = NEG_INF
        items[base + h] = -1
    c = NEG_INF
    last = base + H - 1
    for i in range(n):
        x = line[i]
        if items[last] < 0 or x > keys[last]:
            if items[last] >= 0 and keys[last] > c:
                c = keys[last]
            keys[last] = x
            items[last] = i
            _bubble(keys, items, base, H - 1)
        elif x > c:
            c = x
    cap[r] = c


@nb.njit(cache=True, inline="always")
def _summary_update(line, n, keys, items, cap, r, i, x):
    """Entry ``i`` of line ``r`` became ``x`` (already written to ``line``).

    A summary holds between 1 and ``H`` entries: the line's largest, exact
    and sorted, every other entry being at most ``cap[r]`` <= the smallest
    of them.  An entry that falls below ``cap`` just leaves the summary;
    the line is rescanned only when its summary empties, so a rescan costs
    O(K / H) per update at worst.
    """
    base = r * H
    for h in range(H):
        if items[base + h] == i:
            if x >= cap[r]:
                keys[base + h] = x
                _bubble(keys, items, base, h)
            else:
                for s in range(base + h, base + H - 1):
                    keys[s] = keys[s + 1]
                    items[s] = items[s + 1]
                keys[base + H - 1] = NEG_INF
                items[base + H - 1] = -1
                if items[base] < 0:
                    _summary_rebuild(line, n, keys, items, cap, r)
            return
    if x > cap[r]:
        last = base + H - 1
        if items[last] >= 0:  # full
            if not x > keys[last]:
                cap[r] = x
                return
            cap[r] = keys[last]  # the smallest summarized entry leaves
        keys[last] = x
        items[last] = i
        _bubble(keys, items, base, H - 1)


# --------------------------------------------------------------- build/update
@nb.njit(cache=True)
def indicator_build(state):
    """(Re)build the summaries, the transposed copy and the row heap from ``state[0]``."""
    v, shape, tk, ti, tp, vT, rkey, ritem, rcap, ckey, citem, ccap = state
    n1 = shape[0]
    n2 = shape[1]
    for a in range(n1):
        for b in range(n2):
            vT[b * n1 + a] = v[a * n2 + b]
    for a in range(n1):
        _summary_rebuild(v[a * n2 : (a + 1) * n2], n2, rkey, ritem, rcap, a)
    for b in range(n2):
        _summary_rebuild(vT[b * n1 : (b + 1) * n1], n1, ckey, citem, ccap, b)
    heap_fill_sorted(tk, ti, tp, 0, rkey[::H] if n2 > 0 else np.full(n1, NEG_INF), n1)


@nb.njit(cache=True, inline="always")
def indicator_update(state, a, b, value):
    """Set ``v[a, b] = value`` and restore the summaries. O(H), O(K) rarely."""
    v, shape, tk, ti, tp, vT, rkey, ritem, rcap, ckey, citem, ccap = state
    n1 = shape[0]
    n2 = shape[1]
    v[a * n2 + b] = value
    vT[b * n1 + a] = value
    _summary_update(v[a * n2 : (a + 1) * n2], n2, rkey, ritem, rcap, a, b, value)
    _summary_update(vT[b * n1 : (b + 1) * n1], n1, ckey, citem, ccap, b, a, value)
    top = rkey[a * H]
    if top != tk[tp[a]]:  # the row maximum changed
        heap_set_key(tk, ti, tp, 0, n1, a, top)


@nb.njit(cache=True, inline="always")
def indicator_add(state, a, b, delta):
    """``v[a, b] += delta`` (summaries kept in sync)."""
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
def _line_best(line, n, keys, items, cap, r, is_row, pos, ex1, ex2, madd, c1, c2, best):
    """Best admissible entry of one line (row ``r`` if ``is_row``, else column ``r``)
    whose value ``((v + madd) + c1) + c2`` beats ``best``.

    An entry ``i`` is admissible when ``pos[i] < 0`` (its label is unlisted)
    and the pair is not ``(ex1, ex2)``.  Walks the summary, then scans the
    line if its bound still beats ``best``.  Returns ``(found, value, a, b,
    visited)``.
    """
    base = r * H
    for h in range(H):
        i = items[base + h]
        if i < 0:  # the rest of the line is at most cap
            break
        val = ((keys[base + h] + madd) + c1) + c2
        if not val > best:
            return False, best, -1, -1, h + 1
        a = r if is_row else i
        b = i if is_row else r
        if pos[i] < 0 and not (a == ex1 and b == ex2):
            return True, val, a, b, h + 1
    if not ((cap[r] + madd) + c1) + c2 > best:
        return False, best, -1, -1, H
    found = False
    best_a = -1
    best_b = -1
    for i in range(n):
        if pos[i] >= 0:
            continue
        a = r if is_row else i
        b = i if is_row else r
        if a == ex1 and b == ex2:
            continue
        val = ((line[i] + madd) + c1) + c2
        if val > best:
            found = True
            best = val
            best_a = a
            best_b = b
    return found, best, best_a, best_b, H + n


@nb.njit(cache=True, inline="always")
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


@nb.njit(cache=True, inline="always")
def _both_listed(v, n2, rkey, ritem, rcap, ckey, pos2, eidx1, eval1, e1, eidx2, eval2, e2,
                 cand2, loss1, gt1, loss2, gt2, ex1, ex2, best):
    """Case (iv): best listed pair, pruned with the line summaries (no sorting).

    The value ``(((v + m1) + m2) + la) + lb`` of a pair is at most the same
    expression with ``v`` replaced by an upper bound of ``v[a, b]`` and
    ``lb`` by ``max(loss2, 0)`` (floating-point addition is monotone).  The
    summarized entries of row ``a`` (its largest, exact) are walked in
    order against the largest second message; every other entry of the row
    is at most the row's ``cap`` and at most its column's maximum, so only
    second labels whose message can beat ``best`` next to the largest
    ``cap + m1`` of any row are candidates (``cand2``, collected once), and
    only competitive pairs read the table.  Returns ``(best, a, b,
    visited)``: ``a = -1`` when nothing beats ``best``.
    """
    best_a = -1
    best_b = -1
    if e2 == 0 or e1 == 0:
        return best, best_a, best_b, 0
    lbmax = loss2 if loss2 > 0.0 else 0.0
    m2max = NEG_INF
    for k in range(e2):
        if eval2[k] > m2max:
            m2max = eval2[k]
    c1max = NEG_INF  # largest cap + m1 + la over the rows
    for k in range(e1):
        a = eidx1[k]
        la = loss1 if a != gt1 else 0.0
        c = (rcap[a] + eval1[k]) + la
        if c > c1max:
            c1max = c
    nc = 0
    for k in range(e2):
        if ((c1max + eval2[k]) + lbmax) > best:
            cand2[nc] = k
            nc += 1
    visited = 0
    for k1 in range(e1):
        a = eidx1[k1]
        m1 = eval1[k1]
        la = loss1 if a != gt1 else 0.0
        base = a * H
        for h in range(H):  # the summarized entries of the row, largest first
            b = ritem[base + h]
            if b < 0 or not (((rkey[base + h] + m1) + m2max) + la) + lbmax > best:
                break
            if pos2[b] < 0 or (a == ex1 and b == ex2):
                continue
            visited += 1
            lb = loss2 if b != gt2 else 0.0
            val = (((rkey[base + h] + m1) + eval2[pos2[b]]) + la) + lb
            if val > best:
                best = val
                best_a = a
                best_b = b
        cap = rcap[a]
        if not (((cap + m1) + m2max) + la) + lbmax > best:
            continue
        for c in range(nc):
            k2 = cand2[c]
            m2 = eval2[k2]
            if not (((cap + m1) + m2) + la) + lbmax > best:
                continue
            b = eidx2[k2]
            if a == ex1 and b == ex2:
                continue
            if not (((min(cap, ckey[b * H]) + m1) + m2) + la) + lbmax > best:
                continue
            summarized = False
            for h in range(H):
                if ritem[base + h] == b:
                    summarized = True
            if summarized:
                continue
            visited += 1
            lb = loss2 if b != gt2 else 0.0
            val = (((v[a * n2 + b] + m1) + m2) + la) + lb
            if val > best:
                best = val
                best_a = a
                best_b = b
    return best, best_a, best_b, visited


@nb.njit(cache=True, inline="always")
def _neither_listed(v, n1, n2, tk, ti, rkey, ritem, rcap, pos1, pos2, ex1, ex2, loss1, loss2,
                    best, stack):
    """Case (i): depth-first walk of the row heap ``tk`` (keyed by the row
    maxima), larger child first, skipping every subtree whose root cannot
    beat the best value; each unlisted row on the way is searched for its
    best unlisted column.  The listed rows, which hold the largest maxima
    late in training, cost one stack step each (a best-first walk pays a
    frontier-heap operation for each).  ``stack`` : int64 scratch of length
    >= 2 + the heap depth.  Returns ``(found, value, a, b, visited)``."""
    found = False
    best_a = -1
    best_b = -1
    visited = 0
    if n1 == 0 or n2 == 0:
        return found, best, best_a, best_b, visited
    stack[0] = 0
    n = 1
    while n > 0:
        n -= 1
        s = stack[n]
        visited += 1
        if not ((tk[s] + 0.0) + loss1) + loss2 > best:
            continue  # nor can anything below it (heap order)
        a = ti[s]
        if pos1[a] < 0:
            ok, val, aa, b, nv = _line_best(v[a * n2 : (a + 1) * n2], n2, rkey, ritem, rcap, a,
                                            True, pos2, ex1, ex2, 0.0, loss1, loss2, best)
            visited += nv
            if ok:
                found = True
                best = val
                best_a = aa
                best_b = b
        c = 2 * s + 1
        if c + 1 < n1:
            big = c + 1 if tk[c + 1] > tk[c] else c
            stack[n] = 2 * c + 1 - big  # the other child, visited second
            stack[n + 1] = big
            n += 2
        elif c < n1:
            stack[n] = c
            n += 1
    return found, best, best_a, best_b, visited


@nb.njit(cache=True)
def indicator_fmo(state, idx1, val1, nnz1, idx2, val2, nnz2,
                  loss1, gt1, loss2, gt2, ex1, ex2, workspace):
    """argmax over (a, b) != (ex1, ex2) of
    v[a, b] + m1[a] + m2[b] + loss1 * [a != gt1] + loss2 * [b != gt2].

    Returns ``(best, a, b, n_visited)``; see :mod:`structlearn.oracles.indicator`.
    """
    return indicator_fmo_above(state, idx1, val1, nnz1, idx2, val2, nnz2,
                               loss1, gt1, loss2, gt2, ex1, ex2, NEG_INF, workspace)


@nb.njit(cache=True, inline="always")
def indicator_fmo_above(state, idx1, val1, nnz1, idx2, val2, nnz2,
                        loss1, gt1, loss2, gt2, ex1, ex2, floor, workspace):
    """:func:`indicator_fmo` restricted to values above ``floor``.

    Returns the maximizer when its value is ``> floor``, else
    ``(floor, -1, -1, n_visited)``.  A caller that only acts on labelings
    that beat a known value (a Frank-Wolfe step adds a labeling only when
    its gradient beats the active set's) passes that value: every case
    then prunes against it from the start.
    """
    v, shape, tk, ti, tp, vT, rkey, ritem, rcap, ckey, citem, ccap = state
    n1 = shape[0]
    n2 = shape[1]
    pos1, pos2, stats = workspace[0], workspace[1], workspace[2]
    eidx1, eval1, eidx2, eval2 = workspace[3], workspace[4], workspace[5], workspace[6]
    stack, cand2 = workspace[9], workspace[10]
    if gt1 < 0:
        loss1 = 0.0
    if gt2 < 0:
        loss2 = 0.0
    e1 = _effective_list(idx1, val1, nnz1, pos1, loss1, gt1, eidx1, eval1)
    e2 = _effective_list(idx2, val2, nnz2, pos2, loss2, gt2, eidx2, eval2)
    # (iv) both listed
    best, best_a, best_b, v4 = _both_listed(v, n2, rkey, ritem, rcap, ckey, pos2, eidx1, eval1,
                                            e1, eidx2, eval2, e2, cand2, loss1, gt1, loss2,
                                            gt2, ex1, ex2, floor)
    # (ii) b listed, a unlisted: columns
    v2 = 0
    if e1 < n1:
        for k2 in range(e2):
            b = eidx2[k2]
            lb = loss2 if b != gt2 else 0.0
            if not ((ckey[b * H] + eval2[k2]) + loss1) + lb > best:
                continue
            found, val, a, bb, nv = _line_best(vT[b * n1 : (b + 1) * n1], n1, ckey, citem, ccap,
                                               b, False, pos1, ex1, ex2, eval2[k2], loss1, lb,
                                               best)
            v2 += nv
            if found:
                best = val
                best_a = a
                best_b = bb
    # (iii) a listed, b unlisted: rows
    v3 = 0
    if e2 < n2:
        for k1 in range(e1):
            a = eidx1[k1]
            la = loss1 if a != gt1 else 0.0
            if not ((rkey[a * H] + eval1[k1]) + la) + loss2 > best:
                continue
            found, val, aa, b, nv = _line_best(v[a * n2 : (a + 1) * n2], n2, rkey, ritem, rcap,
                                               a, True, pos2, ex1, ex2, eval1[k1], la, loss2,
                                               best)
            v3 += nv
            if found:
                best = val
                best_a = aa
                best_b = b
    # (i) neither listed: the row heap, depth-first
    v1 = 0
    if e1 < n1 and e2 < n2:
        found, val, a, b, v1 = _neither_listed(v, n1, n2, tk, ti, rkey, ritem, rcap, pos1, pos2,
                                               ex1, ex2, loss1, loss2, best, stack)
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
