"""Numba kernels for batches of linear chains with one shared transition table.

Many sequences are stored back to back: ``unary`` holds the token scores of
all sequences, shape (N, K), and sequence ``s`` occupies rows
``offsets[s]:offsets[s + 1]``. ``trans[a, b]`` scores the transition from
label ``a`` at position ``t`` to label ``b`` at position ``t + 1``.
Scores are log-potentials; ``-inf`` marks a forbidden state or transition
(``+inf`` and NaN are not allowed).

No validation happens here; callers pass C-contiguous float64 / int64 arrays
and allocate the outputs.
"""

import numba as nb
import numpy as np

# Below this value a scaled sum of exponentials may have lost relative
# precision to underflow; the column (row) is then recomputed in the log domain.
_TINY = 1e-200
# exp(600) is far from overflow; above it a scaled product is evaluated in logs.
_BIG = 600.0


@nb.njit(cache=True)
def viterbi_batch(unary, offsets, trans, out):
    """Best label sequence of every chain in a batch (max-sum Viterbi).

    Parameters
    ----------
    unary : float64 (N, K)
        Token scores of all sequences, concatenated.
    offsets : int64 (n_seq + 1,)
        Sequence ``s`` is ``unary[offsets[s]:offsets[s + 1]]``.
    trans : float64 (K, K)
        Transition scores, ``trans[a, b]`` for ``y_t = a, y_{t+1} = b``.
    out : int64 (N,)
        Receives the argmax labels.

    Notes
    -----
    Ties go to the lowest label index: the back-pointer of state ``b`` is the
    lowest ``a`` reaching the best value, and the last position takes the
    lowest best state. If every labeling of a sequence is forbidden
    (score ``-inf``) the result is still a valid labeling (following
    back-pointer 0 wherever no finite value exists).
    """
    K = unary.shape[1]
    n_seq = offsets.shape[0] - 1
    max_len = 0
    for s in range(n_seq):
        ln = offsets[s + 1] - offsets[s]
        if ln > max_len:
            max_len = ln
    if max_len == 0:
        return
    back = np.zeros((max_len, K), dtype=np.int32)
    delta = np.empty(K)
    best = np.empty(K)
    for s in range(n_seq):
        start = offsets[s]
        stop = offsets[s + 1]
        if stop <= start:
            continue
        for b in range(K):
            delta[b] = unary[start, b]
        for t in range(start + 1, stop):
            row = t - start
            for b in range(K):
                best[b] = -np.inf
                back[row, b] = 0
            for a in range(K):
                da = delta[a]
                if da == -np.inf:
                    continue
                for b in range(K):
                    cand = da + trans[a, b]
                    if cand > best[b]:
                        best[b] = cand
                        back[row, b] = a
            for b in range(K):
                delta[b] = best[b] + unary[t, b]
        # last position: lowest index among the best states
        arg = 0
        val = delta[0]
        for b in range(1, K):
            if delta[b] > val:
                val = delta[b]
                arg = b
        out[stop - 1] = arg
        for t in range(stop - 1, start, -1):
            arg = back[t - start, arg]
            out[t - 1] = arg


@nb.njit(cache=True)
def _scaled_tables(trans, col_max, row_max, e_col, e_row):
    """exp(trans - column max) and exp(trans - row max), 0 where a max is -inf."""
    K = trans.shape[0]
    for b in range(K):
        col_max[b] = -np.inf
    for a in range(K):
        m = -np.inf
        for b in range(K):
            v = trans[a, b]
            if v > m:
                m = v
            if v > col_max[b]:
                col_max[b] = v
        row_max[a] = m
    for a in range(K):
        for b in range(K):
            v = trans[a, b]
            e_col[a, b] = 0.0 if col_max[b] == -np.inf else np.exp(v - col_max[b])
            e_row[a, b] = 0.0 if row_max[a] == -np.inf else np.exp(v - row_max[a])


@nb.njit(cache=True)
def forward_backward_batch(unary, offsets, trans, node_marg, trans_marg, logz):
    """Log-partition functions and marginals of a batch of linear-chain models.

    Parameters
    ----------
    unary : float64 (N, K)
        Token scores of all sequences, concatenated.
    offsets : int64 (n_seq + 1,)
        Sequence ``s`` is ``unary[offsets[s]:offsets[s + 1]]``.
    trans : float64 (K, K)
        Transition scores, ``trans[a, b]`` for ``y_t = a, y_{t+1} = b``.
    node_marg : float64 (N, K)
        Receives ``P(y_t = k)`` for every token.
    trans_marg : float64 (K, K)
        Receives the sum over all sequences and positions of the edge
        marginals ``P(y_t = a, y_{t+1} = b)`` (expected transition counts).
        Overwritten, not accumulated into.
    logz : float64 (n_seq,)
        Receives the log-partition function of each sequence.

    Notes
    -----
    The recursions run in the log domain. Each step is evaluated as a
    matrix-vector product of exponentials shifted by their maxima; a column
    whose scaled sum falls below 1e-200 (so that underflow could cost
    precision) is recomputed with an exact log-sum-exp. The results are
    accurate for scores of any magnitude that double precision can hold
    (e.g. +-1e4). A sequence whose labelings are all forbidden gets
    ``logz = -inf``, zero node marginals and no contribution to
    ``trans_marg``.
    """
    K = unary.shape[1]
    n_seq = offsets.shape[0] - 1
    for a in range(K):
        for b in range(K):
            trans_marg[a, b] = 0.0
    max_len = 0
    for s in range(n_seq):
        ln = offsets[s + 1] - offsets[s]
        if ln > max_len:
            max_len = ln
    if max_len == 0:
        for s in range(n_seq):
            logz[s] = 0.0
        return
    col_max = np.empty(K)
    row_max = np.empty(K)
    e_col = np.empty((K, K))
    e_row = np.empty((K, K))
    _scaled_tables(trans, col_max, row_max, e_col, e_row)
    alpha = np.empty((max_len, K))
    beta = np.empty((max_len, K))
    p = np.empty(K)
    acc = np.empty(K)
    for s in range(n_seq):
        start = offsets[s]
        stop = offsets[s + 1]
        n = stop - start
        if n == 0:
            logz[s] = 0.0
            continue
        # ---------------------------------------------------------- forward
        for b in range(K):
            alpha[0, b] = unary[start, b]
        for t in range(1, n):
            m = -np.inf
            for a in range(K):
                if alpha[t - 1, a] > m:
                    m = alpha[t - 1, a]
            if m == -np.inf:
                for b in range(K):
                    alpha[t, b] = -np.inf
                continue
            for b in range(K):
                acc[b] = 0.0
            for a in range(K):
                pa = np.exp(alpha[t - 1, a] - m)
                if pa == 0.0:
                    continue
                for b in range(K):
                    acc[b] += pa * e_col[a, b]
            for b in range(K):
                u = unary[start + t, b]
                if u == -np.inf or col_max[b] == -np.inf:
                    alpha[t, b] = -np.inf
                elif acc[b] > _TINY:
                    alpha[t, b] = u + m + col_max[b] + np.log(acc[b])
                else:
                    alpha[t, b] = u + _lse_col(alpha[t - 1], trans, b)
        lz = _lse_vec(alpha[n - 1])
        logz[s] = lz
        if lz == -np.inf:
            for t in range(n):
                for b in range(K):
                    node_marg[start + t, b] = 0.0
            continue
        # --------------------------------------------------------- backward
        for a in range(K):
            beta[n - 1, a] = 0.0
        for t in range(n - 2, -1, -1):
            # p[b] = unary[t+1, b] + beta[t+1, b]
            m = -np.inf
            for b in range(K):
                v = unary[start + t + 1, b] + beta[t + 1, b]
                p[b] = v
                if v > m:
                    m = v
            if m == -np.inf:
                for a in range(K):
                    beta[t, a] = -np.inf
                continue
            for b in range(K):
                acc[b] = np.exp(p[b] - m)
            for a in range(K):
                if row_max[a] == -np.inf:
                    beta[t, a] = -np.inf
                    continue
                sm = 0.0
                for b in range(K):
                    sm += e_row[a, b] * acc[b]
                if sm > _TINY:
                    beta[t, a] = m + row_max[a] + np.log(sm)
                else:
                    beta[t, a] = _lse_row(p, trans, a)
        # -------------------------------------------------------- marginals
        for t in range(n):
            for b in range(K):
                v = alpha[t, b] + beta[t, b] - lz
                node_marg[start + t, b] = np.exp(v) if v < 0.0 else 1.0
        for t in range(n - 1):
            # P(a, b) = exp(alpha[t,a] + trans[a,b] + w[b] - lz),
            # w[b] = unary[t+1,b] + beta[t+1,b]
            m = -np.inf
            for b in range(K):
                v = unary[start + t + 1, b] + beta[t + 1, b]
                p[b] = v
                if v > m:
                    m = v
            if m == -np.inf:
                continue
            for b in range(K):
                acc[b] = np.exp(p[b] - m)
            for a in range(K):
                al = alpha[t, a]
                if al == -np.inf or row_max[a] == -np.inf:
                    continue
                ua = al + row_max[a] + m - lz
                if ua < -745.0:
                    continue
                if ua <= _BIG:
                    ea = np.exp(ua)
                    for b in range(K):
                        trans_marg[a, b] += ea * e_row[a, b] * acc[b]
                else:
                    c = al - lz
                    for b in range(K):
                        v = c + trans[a, b] + p[b]
                        if v > -745.0:
                            trans_marg[a, b] += np.exp(v) if v < 0.0 else 1.0


@nb.njit(cache=True)
def _lse_vec(x):
    """log(sum(exp(x))) of a 1-D array, -inf when every entry is -inf."""
    m = -np.inf
    for i in range(x.shape[0]):
        if x[i] > m:
            m = x[i]
    if m == -np.inf:
        return -np.inf
    s = 0.0
    for i in range(x.shape[0]):
        s += np.exp(x[i] - m)
    return m + np.log(s)


@nb.njit(cache=True)
def _lse_col(prev, trans, b):
    """log sum_a exp(prev[a] + trans[a, b])."""
    K = prev.shape[0]
    m = -np.inf
    for a in range(K):
        v = prev[a] + trans[a, b]
        if v > m:
            m = v
    if m == -np.inf:
        return -np.inf
    s = 0.0
    for a in range(K):
        s += np.exp(prev[a] + trans[a, b] - m)
    return m + np.log(s)


@nb.njit(cache=True)
def _lse_row(nxt, trans, a):
    """log sum_b exp(trans[a, b] + nxt[b])."""
    K = nxt.shape[0]
    m = -np.inf
    for b in range(K):
        v = trans[a, b] + nxt[b]
        if v > m:
            m = v
    if m == -np.inf:
        return -np.inf
    s = 0.0
    for b in range(K):
        s += np.exp(trans[a, b] + nxt[b] - m)
    return m + np.log(s)
