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
def _merge_top(prev_val, prev_cnt, prev_off, kprev, shift, m, hv, hs, hr, out_val, out_state,
               out_rank):
    """Top ``m`` of the lists ``prev_val[prev_off + a, :prev_cnt[prev_off + a]] +
    shift[a]`` over states ``a < kprev``; returns how many are finite."""
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
    n = 0
    while size > 0 and n < m:
        v, a, r = hv[0], hs[0], hr[0]
        if v == -np.inf:
            break
        out_val[n] = v
        out_state[n] = a
        out_rank[n] = r
        n += 1
        if r + 1 < prev_cnt[prev_off + a]:
            hv[0] = prev_val[prev_off + a, r + 1] + shift[a]
            hr[0] = r + 1
        else:
            size -= 1
            hv[0], hs[0], hr[0] = hv[size], hs[size], hr[size]
        _sift_down(hv, hs, hr, size, 0)
    return n


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
    hv = np.empty(kmax)
    hs = np.empty(kmax, dtype=np.int64)
    hr = np.empty(kmax, dtype=np.int64)
    shift = np.empty(kmax)
    tv = np.empty(m)
    ts = np.empty(m, dtype=np.int64)
    tr = np.empty(m, dtype=np.int64)
    # position 0: one entry per finite state
    for b in range(ks[0]):
        x = unary[uoff[0] + b]
        if x != -np.inf:
            val[b, 0] = x
            bstate[b, 0] = -1
            brank[b, 0] = 0
            cnt[b] = 1
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
        b = ts[i]
        r = tr[i]
        for k in range(n - 1, -1, -1):
            out_labels[i, k] = b
            s = soff[k] + b
            b, r = bstate[s, r], brank[s, r]
    return found


@nb.njit(cache=True)
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
