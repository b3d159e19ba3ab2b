"""Numba kernels for exact k-best MAP on paths (list Viterbi).

A *path* is a sequence of positions; position ``k`` has ``ks[k]`` states,
scores ``unary[uoff[k] + b]`` and, when ``tbase[k] >= 0``, a transition
table from position ``k - 1``: entry ``(a, b)`` at ``table[tbase[k] + a *
su[k] + b * sv[k]]``.  A position without a table starts a new independent
part (its transition is the constant 0), so a forest of paths is one path.

Every state keeps the ``m`` best partial scores that end in it, each with
the (state, rank) it came from; a state's list is the top ``m`` of the
``K`` sorted lists of the previous position shifted by the transition
column, merged with a binary heap: ``O(n K (K + m log K))`` per path.

Ties are broken deterministically: equal scores are ordered by the lower
previous state, then the lower rank in that state's list.
"""

import numba as nb
import numpy as np


@nb.njit(cache=True)
def _before(v1, s1, r1, v2, s2, r2):
    """Whether candidate 1 comes before candidate 2 (higher score first)."""
    if v1 != v2:
        return v1 > v2
    if s1 != s2:
        return s1 < s2
    return r1 < r2


@nb.njit(cache=True)
def _sift_down(hv, hs, hr, size, i):
    while True:
        left = 2 * i + 1
        if left >= size:
            return
        best = left
        right = left + 1
        if right < size and _before(hv[right], hs[right], hr[right], hv[left], hs[left],
                                    hr[left]):
            best = right
        if _before(hv[best], hs[best], hr[best], hv[i], hs[i], hr[i]):
            hv[i], hv[best] = hv[best], hv[i]
            hs[i], hs[best] = hs[best], hs[i]
            hr[i], hr[best] = hr[best], hr[i]
            i = best
        else:
            return


@nb.njit(cache=True)
def _push(hv, hs, hr, size, v, a, b):
    """Add ``(v, a, b)`` to the heap; returns the new size."""
    k = size
    hv[k], hs[k], hr[k] = v, a, b
    while k > 0:
        par = (k - 1) // 2
        if not _before(hv[k], hs[k], hr[k], hv[par], hs[par], hr[par]):
            break
        hv[k], hv[par] = hv[par], hv[k]
        hs[k], hs[par] = hs[par], hs[k]
        hr[k], hr[par] = hr[par], hr[k]
        k = par
    return size + 1


@nb.njit(cache=True)
def _take_top(hv, hs, hr, size, out_val, out_a, out_b, n):
    """Write the heap's top into ``out_*[n]``; returns it as (value, a, b)."""
    out_val[n] = hv[0]
    out_a[n] = hs[0]
    out_b[n] = hr[0]
    return hv[0], hs[0], hr[0]


@nb.njit(cache=True)
def _replace_top(hv, hs, hr, size, v, a, b):
    """Replace the top by ``(v, a, b)``, or drop it when ``a < 0``; returns the size."""
    if a >= 0:
        hv[0], hs[0], hr[0] = v, a, b
    else:
        size -= 1
        hv[0], hs[0], hr[0] = hv[size], hs[size], hr[size]
    _sift_down(hv, hs, hr, size, 0)
    return size


@nb.njit(cache=True)
def _merge_top(prev_val, prev_cnt, prev_off, kprev, shift, m, hv, hs, hr, out_val, out_state,
               out_rank):
    """Top ``m`` of the lists ``prev_val[prev_off + a, :prev_cnt[prev_off + a]] +
    shift[a]`` over states ``a < kprev``; returns how many are finite."""
    size = _heads_heap(prev_val, prev_cnt, prev_off, kprev, shift, hv, hs, hr)
    size, n = _pop_merged(prev_val, prev_cnt, prev_off, shift, hv, hs, hr, size, out_val,
                          out_state, out_rank, 0, m)
    return n


@nb.njit(cache=True)
def _heads_heap(prev_val, prev_cnt, prev_off, kprev, shift, hv, hs, hr):
    """Heap (``hv, hs, hr``: value, state, rank) of the lists' first entries
    ``prev_val[prev_off + a, 0] + shift[a]``, states with an empty list or a
    ``-inf`` shift left out; returns its size."""
    size = 0
    for a in range(kprev):
        c = prev_cnt[prev_off + a]
        if c == 0 or shift[a] == -np.inf:
            continue
        hv[size] = prev_val[prev_off + a, 0] + shift[a]
        hs[size] = a
        hr[size] = 0
        size += 1
    for i in range(size // 2 - 1, -1, -1):
        _sift_down(hv, hs, hr, size, i)
    return size


@nb.njit(cache=True)
def _pop_merged(prev_val, prev_cnt, prev_off, shift, hv, hs, hr, size, out_val, out_state,
               out_rank, n, target):
    """Move the heap's best entries into ``out_*[n:]`` until ``target`` are out
    or no finite entry is left, each replaced by the next entry of its list;
    returns ``(size, n)``."""
    while size > 0 and n < target and hv[0] != -np.inf:
        v, a, r = _take_top(hv, hs, hr, size, out_val, out_state, out_rank, n)
        n += 1
        if r + 1 < prev_cnt[prev_off + a]:
            size = _replace_top(hv, hs, hr, size, prev_val[prev_off + a, r + 1] + shift[a], a,
                                r + 1)
        else:
            size = _replace_top(hv, hs, hr, size, 0.0, -1, 0)
    return size, n


@nb.njit(cache=True)
def _entries(n):
    """Scratch for ``n`` list entries: values, states, ranks."""
    return np.empty(n), np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)


@nb.njit(cache=True)
def _start_lists(unary, u0, n_states, val, bstate, brank, cnt):
    """The first position's lists: one entry per state whose score
    ``unary[u0 + b]`` is finite (rows ``0 .. n_states - 1``)."""
    for b in range(n_states):
        x = unary[u0 + b]
        cnt[b] = 0
        if x != -np.inf:
            val[b, 0] = x
            bstate[b, 0] = -1
            brank[b, 0] = 0
            cnt[b] = 1


@nb.njit(cache=True)
def _trace_back(end_state, end_rank, found, n, soff, bstate, brank, out_labels):
    """Labelings of the ``found`` best ends (state, rank at the last of ``n``
    positions) into ``out_labels[i, :n]`` by the back-pointers (position
    ``k``'s lists at rows ``soff[k] + state``)."""
    for i in range(found):
        b = end_state[i]
        r = end_rank[i]
        for k in range(n - 1, -1, -1):
            out_labels[i, k] = b
            q = soff[k] + b
            b, r = bstate[q, r], brank[q, r]


@nb.njit(cache=True)
def kbest_path(ks, uoff, unary, tbase, su, sv, table, m, out_labels, out_scores):
    """The ``m`` best labelings of a path.

    Parameters
    ----------
    ks, uoff, tbase, su, sv : int64 (n_pos,)
        States, unary offsets, table bases (-1: no transition) and strides.
    unary, table : float64
    m : int
    out_labels : int64 (m, n_pos)
        Receives the labelings, best first (rows past the returned count
        are left as they were).
    out_scores : float64 (m,)

    Returns
    -------
    n_found : int
        Number of labelings with a finite score (at most ``m``).
    """
    n = ks.shape[0]
    if n == 0:
        out_scores[0] = 0.0
        return 1
    kmax = 1
    total = 0
    for k in range(n):
        kmax = max(kmax, ks[k])
        total += ks[k]
    val = np.empty((total, m))
    bstate = np.empty((total, m), dtype=np.int64)
    brank = np.empty((total, m), dtype=np.int64)
    cnt = np.zeros(total, dtype=np.int64)
    soff = np.empty(n + 1, dtype=np.int64)
    soff[0] = 0
    for k in range(n):
        soff[k + 1] = soff[k] + ks[k]
    hv, hs, hr = _entries(kmax)
    shift = np.empty(kmax)
    tv, ts, tr = _entries(m)
    _start_lists(unary, uoff[0], ks[0], val, bstate, brank, cnt)
    for k in range(1, n):
        kp = ks[k - 1]
        for b in range(ks[k]):
            x = unary[uoff[k] + b]
            s = soff[k] + b
            if x == -np.inf:
                continue
            for a in range(kp):
                shift[a] = 0.0 if tbase[k] < 0 else table[tbase[k] + a * su[k] + b * sv[k]]
            c = _merge_top(val, cnt, soff[k - 1], kp, shift, m, hv, hs, hr, tv, ts, tr)
            for i in range(c):
                val[s, i] = tv[i] + x
                bstate[s, i] = ts[i]
                brank[s, i] = tr[i]
            cnt[s] = c
    # the best ends over the last position's states
    for a in range(ks[n - 1]):
        shift[a] = 0.0
    found = _merge_top(val, cnt, soff[n - 1], ks[n - 1], shift, m, hv, hs, hr, tv, ts, tr)
    for i in range(found):
        out_scores[i] = tv[i]
    _trace_back(ts, tr, found, n, soff, bstate, brank, out_labels)
    return found


@nb.njit(cache=True, nogil=True)
def kbest_sequences(unary, offsets, trans, m, out_labels, out_scores, out_found):
    """The ``m`` best label sequences of every chain of a batch.

    Parameters
    ----------
    unary : float64 (N, K)
        Token scores of all sequences, concatenated.
    offsets : int64 (n_seq + 1,)
    trans : float64 (K, K)
        ``trans[a, b]`` scores ``y_t = a, y_{t+1} = b``.
    m : int
    out_labels : int64 (N, m)
        ``out_labels[offsets[s]:offsets[s + 1], r]`` receives rank ``r`` of
        sequence ``s``.
    out_scores : float64 (n_seq, m)
        ``-inf`` past the ranks found.
    out_found : int64 (n_seq,)
    """
    K = unary.shape[1]
    flat_unary = unary.ravel()
    flat_trans = trans.ravel()
    for s in range(offsets.shape[0] - 1):
        a, b = offsets[s], offsets[s + 1]
        n = b - a
        ks = np.full(n, K, dtype=np.int64)
        uoff = (np.arange(n) + a) * K
        tbase = np.zeros(n, dtype=np.int64)
        if n:
            tbase[0] = -1
        su = np.full(n, K, dtype=np.int64)
        sv = np.ones(n, dtype=np.int64)
        labels = np.zeros((m, n), dtype=np.int64)
        scores = np.full(m, -np.inf)
        found = kbest_path(ks, uoff, flat_unary, tbase, su, sv, flat_trans, m, labels, scores)
        out_found[s] = found
        for r in range(m):
            out_scores[s, r] = scores[r] if r < found else -np.inf
            for t in range(n):
                out_labels[a + t, r] = labels[r, t]


@nb.njit(cache=True)
def _minkowski_top(a_val, a_n, b_val, b_n, m, hv, hi, hj, out_val, out_i, out_j):
    """Top ``m`` sums ``a_val[i] + b_val[j]`` of two sorted lists; returns the
    count.  Each pair is reached once: ``(i, j + 1)`` always, ``(i + 1, 0)``
    only from ``j == 0``."""
    if a_n == 0 or b_n == 0:
        return 0
    size = 1
    hv[0] = a_val[0] + b_val[0]
    hi[0] = 0
    hj[0] = 0
    n = 0
    while size > 0 and n < m and hv[0] != -np.inf:
        v, i, j = _take_top(hv, hi, hj, size, out_val, out_i, out_j, n)
        n += 1
        # replace the top by (i, j + 1), then maybe add (i + 1, 0)
        if j + 1 < b_n:
            size = _replace_top(hv, hi, hj, size, a_val[i] + b_val[j + 1], i, j + 1)
        else:
            size = _replace_top(hv, hi, hj, size, 0.0, -1, 0)
        if j == 0 and i + 1 < a_n:
            size = _push(hv, hi, hj, size, a_val[i + 1] + b_val[0], i + 1, 0)
    return n


@nb.njit(cache=True)
def kbest_tree(forest, table, m, out_labels, out_scores):
    """The ``m`` best labelings of a pairwise forest rooted at one node.

    Parameters
    ----------
    forest : tuple
        ``(ks, uoff, unary, order, parent, ch_ptr, children, tbase, sp, sc)``:
    ks, uoff : int64 (n,)
        States and unary offsets of the nodes.
    order : int64 (n,)
        Nodes parents first; ``order[0]`` is the root, the only node with
        ``parent == -1``.
    parent : int64 (n,)
    ch_ptr, children : int64
        CSR of each node's children.
    tbase, sp, sc : int64 (n,)
        Table of the edge (parent, node): entry ``(x_parent, x_node)`` at
        ``table[tbase + x_parent * sp + x_node * sc]``; ``tbase < 0``: a
        zero-score edge.
    m : int
    out_labels : int64 (m, n)
    out_scores : float64 (m,)

    Returns
    -------
    n_found : int

    Notes
    -----
    Every node keeps, per state, the ``m`` best scores of its subtree; a
    child's message to a parent state is the top ``m`` of its lists shifted by
    the edge column, and a node's list is the top-``m`` Minkowski sum of its
    unary and its children's messages, one child at a time.  Back-pointers
    (per child: the rank before it and the message rank it took; per message
    entry: the child state and rank) rebuild each labeling.
    """
    ks, uoff, unary, order, parent, ch_ptr, children, tbase, sp, sc = forest
    n = ks.shape[0]
    kmax = 1
    for v in range(n):
        kmax = max(kmax, ks[v])
    soff = np.zeros(n + 1, dtype=np.int64)
    for v in range(n):
        soff[v + 1] = soff[v] + ks[v]
    val = np.empty((soff[n], m))
    cnt = np.zeros(soff[n], dtype=np.int64)
    # per child c and parent state x: m slots
    coff = np.zeros(n + 1, dtype=np.int64)
    for v in range(n):
        coff[v + 1] = coff[v] + (ks[parent[v]] if parent[v] >= 0 else 0)
    msg_state = np.zeros((coff[n], m), dtype=np.int64)
    msg_rank = np.zeros((coff[n], m), dtype=np.int64)
    comb_prev = np.zeros((coff[n], m), dtype=np.int64)
    comb_msg = np.zeros((coff[n], m), dtype=np.int64)
    hsize = max(kmax, 2 * m + 2)
    hv = np.empty(hsize)
    hs = np.empty(hsize, dtype=np.int64)
    hr = np.empty(hsize, dtype=np.int64)
    shift = np.empty(kmax)
    mv = np.empty(m)
    ms = np.empty(m, dtype=np.int64)
    mr = np.empty(m, dtype=np.int64)
    cur = np.empty(m)
    nxt = np.empty(m)
    ni = np.empty(m, dtype=np.int64)
    nj = np.empty(m, dtype=np.int64)
    for t in range(n - 1, -1, -1):
        v = order[t]
        for x in range(ks[v]):
            u = unary[uoff[v] + x]
            if u == -np.inf:
                cnt[soff[v] + x] = 0
                continue
            cur[0] = u
            c_n = 1
            for q in range(ch_ptr[v], ch_ptr[v + 1]):
                c = children[q]
                for y in range(ks[c]):
                    shift[y] = 0.0 if tbase[c] < 0 else table[tbase[c] + x * sp[c] + y * sc[c]]
                got = _merge_top(val, cnt, soff[c], ks[c], shift, m, hv, hs, hr, mv, ms, mr)
                slot = coff[c] + x
                for j in range(got):
                    msg_state[slot, j] = ms[j]
                    msg_rank[slot, j] = mr[j]
                c_n = _minkowski_top(cur, c_n, mv, got, m, hv, hs, hr, nxt, ni, nj)
                for k in range(c_n):
                    cur[k] = nxt[k]
                    comb_prev[slot, k] = ni[k]
                    comb_msg[slot, k] = nj[k]
                if c_n == 0:
                    break
            s = soff[v] + x
            cnt[s] = c_n
            for k in range(c_n):
                val[s, k] = cur[k]
    root = order[0]
    for y in range(ks[root]):
        shift[y] = 0.0
    found = _merge_top(val, cnt, soff[root], ks[root], shift, m, hv, hs, hr, mv, ms, mr)
    stack_v = np.empty(n, dtype=np.int64)
    stack_x = np.empty(n, dtype=np.int64)
    stack_r = np.empty(n, dtype=np.int64)
    for i in range(found):
        out_scores[i] = mv[i]
        top = 0
        stack_v[0], stack_x[0], stack_r[0] = root, ms[i], mr[i]
        top = 1
        while top > 0:
            top -= 1
            v, x, k = stack_v[top], stack_x[top], stack_r[top]
            out_labels[i, v] = x
            for q in range(ch_ptr[v + 1] - 1, ch_ptr[v] - 1, -1):
                c = children[q]
                slot = coff[c] + x
                j = comb_msg[slot, k]
                stack_v[top], stack_x[top], stack_r[top] = c, msg_state[slot, j], msg_rank[slot, j]
                top += 1
                k = comb_prev[slot, k]
    return found
