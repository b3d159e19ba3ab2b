"""Numba kernels: exact MAP of binary pairwise models by persistency, then enumeration.

A labeling ``y`` in ``{0, 1}^L`` scores ``sum_j u_j y_j + sum_{j<k} w_jk y_j y_k``.
Label ``j`` is off in some optimum when even its most favourable partners
cannot make it pay (``u_j + sum_k max(0, w_jk) <= 0``: switching it off never
lowers the score), and on in every optimum when even the least favourable
cannot stop it (``u_j + sum_k min(0, w_jk) > 0``); the sums run over the
partners not yet fixed plus those fixed on.  Fixing labels tightens the
others' sums, so the rule repeats until nothing changes.  When at most
``max_free`` labels stay undecided they are enumerated in Gray-code order:
the result is an exact MAP.  On multilabel models, where most labels score
far below zero, a sample usually leaves a handful.
"""

import numba as nb
import numpy as np

_OFF = 0
_ON = 1
_FREE = 2


@nb.njit(cache=True, nogil=True)
def gray_code_max(gain, Wpair, m, cur, best_y):
    """Best labeling of ``m`` binary labels by enumeration in Gray-code order.

    Maximizes ``sum_t gain[t] y_t + sum_{t<s} Wpair[t, s] y_t y_s`` (``Wpair``
    symmetric, zero diagonal, at least (m, m)); one flip per labeling, O(m)
    to update the flip gains.  Ties go to the labeling met first (all-off
    first).  ``gain`` float64 (>= m,) is used as scratch (restored to the
    all-off gains only up to round-off); ``cur``, ``best_y`` int64 (>= m,):
    scratch and the argmax.  Returns the best value (>= 0, all off).
    """
    for t in range(m):
        cur[t] = 0
        best_y[t] = 0
    score = 0.0
    best = 0.0
    for code in range(1, 1 << m):
        t = 0
        c = code
        while (c & 1) == 0:
            c >>= 1
            t += 1
        if cur[t] == 0:
            score += gain[t]
            cur[t] = 1
            sgn = 1.0
        else:
            score -= gain[t]
            cur[t] = 0
            sgn = -1.0
        for s in range(m):
            gain[s] += sgn * Wpair[s, t]
        if score > best:
            best = score
            for s in range(m):
                best_y[s] = cur[s]
    return best


@nb.njit(cache=True, nogil=True)
def _fix_by_persistency(u, ptr, nbr, w, pos_sum, state, free):
    """Fix labels on or off (``state``); returns the number of free labels,
    listed in ``free``."""
    L = u.shape[0]
    n_free = 0
    for j in range(L):
        if u[j] + pos_sum[j] <= 0.0:
            state[j] = _OFF
        else:
            state[j] = _FREE
            free[n_free] = j
            n_free += 1
    changed = True
    while changed:
        changed = False
        t = 0
        while t < n_free:
            j = free[t]
            hi = u[j]
            lo = u[j]
            for r in range(ptr[j], ptr[j + 1]):
                k = nbr[r]
                if state[k] == _ON:
                    hi += w[r]
                    lo += w[r]
                elif state[k] == _FREE:
                    if w[r] > 0.0:
                        hi += w[r]
                    else:
                        lo += w[r]
            if hi <= 0.0 or lo > 0.0:
                state[j] = _OFF if hi <= 0.0 else _ON
                n_free -= 1
                free[t] = free[n_free]
                changed = True
            else:
                t += 1
    return n_free


@nb.njit(cache=True, nogil=True)
def sparse_binary_map_rows(U, ptr, nbr, w, max_free, out, scores, exact):
    """MAP of every row of ``U`` under the pair weights ``(ptr, nbr, w)``.

    Parameters
    ----------
    U : float64 (n, L)
        Unary scores of state 1.
    ptr, nbr, w : int64 (L + 1,), int64 (2 m,), float64 (2 m,)
        The non-zero pair weights as a symmetric CSR: pair ``{j, k}`` listed
        in row ``j`` and in row ``k``.
    max_free : int
        Largest number of undecided labels to enumerate (``2^max_free``).
    out : int64 (n, L)
        Labelings; where ``exact[i]`` is False, the fixed labels with the
        undecided ones at 0.
    scores : float64 (n,)
        Their scores.
    exact : uint8 (n,)
        1 where the row was solved exactly.
    """
    n, L = U.shape
    pos_sum = np.zeros(L)
    for j in range(L):
        for r in range(ptr[j], ptr[j + 1]):
            if w[r] > 0.0:
                pos_sum[j] += w[r]
    state = np.empty(L, dtype=np.int64)
    free = np.empty(L, dtype=np.int64)
    slot = np.full(L, -1, dtype=np.int64)
    Wf = np.zeros((max_free, max_free))
    gain = np.empty(max_free)
    cur = np.zeros(max_free, dtype=np.int64)
    best_y = np.zeros(max_free, dtype=np.int64)
    for i in range(n):
        u = U[i]
        n_free = _fix_by_persistency(u, ptr, nbr, w, pos_sum, state, free)
        for j in range(L):
            out[i, j] = 1 if state[j] == _ON else 0
        base = 0.0  # score of the labels fixed on
        for j in range(L):
            if state[j] == _ON:
                base += u[j]
                for r in range(ptr[j], ptr[j + 1]):
                    k = nbr[r]
                    if k > j and state[k] == _ON:
                        base += w[r]
        if n_free > max_free:
            exact[i] = 0
            scores[i] = base
            continue
        exact[i] = 1
        # the free labels' gains with the fixed ones in place, their pair weights
        for t in range(n_free):
            slot[free[t]] = t
        for t in range(n_free):
            j = free[t]
            g = u[j]
            for t2 in range(n_free):
                Wf[t, t2] = 0.0
            for r in range(ptr[j], ptr[j + 1]):
                k = nbr[r]
                if state[k] == _ON:
                    g += w[r]
                elif state[k] == _FREE:
                    Wf[t, slot[k]] = w[r]
            gain[t] = g
        best = gray_code_max(gain, Wf, n_free, cur, best_y)
        for t in range(n_free):
            out[i, free[t]] = best_y[t]
            slot[free[t]] = -1
        scores[i] = base + best
