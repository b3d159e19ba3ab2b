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

from .._search_kernels import sorted_find

# Below this value a scaled sum of exponentials may have lost relative
# precision to underflow; the column (row) is then recomputed in the log domain.
_TINY = 1e-200
# exp(600) is far from overflow; above it a scaled product is evaluated in logs.
_BIG = 600.0
# The scaled (probability-domain) forward-backward runs only on sequences whose
# scores are finite and span at most _RANGE within each position and within the
# transition table, and while its scale factors stay above _SCALE_MIN and its
# backward quantities below _SCALE_MAX. Then every forward vector entry is at
# least exp(-2 _RANGE) / K (a normal double) and a product that underflows is
# negligible next to the sum it enters; nothing overflows.
_RANGE = 300.0
_SCALE_MIN = 1e-100
_SCALE_MAX = 1e100


@nb.njit(cache=True)
def _max_length(offsets):
    """Length of the longest sequence."""
    max_len = 0
    for s in range(offsets.shape[0] - 1):
        max_len = max(max_len, offsets[s + 1] - offsets[s])
    return max_len


@nb.njit(cache=True, no_cpython_wrapper=True)
def _backtrack(delta, back, start, stop, out):
    """Labels of tokens ``start..stop-1`` from the last position's scores
    (lowest index among the best) and the back-pointers."""
    arg = 0
    val = delta[0]
    for b in range(1, delta.shape[0]):
        if delta[b] > val:
            val = delta[b]
            arg = b
    out[stop - 1] = arg
    for t in range(stop - 1, start, -1):
        arg = back[t - start, arg]
        out[t - 1] = arg


@nb.njit(cache=True, nogil=True)
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
    max_len = _max_length(offsets)
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
            brow = back[t - start]
            for b in range(K):
                best[b] = -np.inf
                brow[b] = 0
            for a in range(K):
                da = delta[a]
                if da == -np.inf:
                    continue
                trow = trans[a]
                for b in range(K):
                    # selects, not a branch: no mispredictions on random scores
                    cand = da + trow[b]
                    better = cand > best[b]
                    best[b] = cand if better else best[b]
                    brow[b] = a if better else brow[b]
            for b in range(K):
                delta[b] = best[b] + unary[t, b]
        _backtrack(delta, back, start, stop, out)


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
def transition_columns(trans, col_ptr, col_rows, col_vals):
    """The non-zero entries of ``trans`` (K, K) column by column (CSC):
    column ``b`` holds rows ``col_rows[col_ptr[b]:col_ptr[b + 1]]``
    (increasing) with values ``col_vals[...]``.  ``col_rows`` / ``col_vals``
    need room for every non-zero; returns their count."""
    K = trans.shape[0]
    nnz = 0
    for b in range(K):
        col_ptr[b] = nnz
        for a in range(K):
            if trans[a, b] != 0.0:
                col_rows[nnz] = a
                col_vals[nnz] = trans[a, b]
                nnz += 1
    col_ptr[K] = nnz
    return nnz


# labels kept per position in the order of their scores (the best label
# outside a column is found among them; a column that holds them all is
# scanned on its own)
_TOP_LABELS = 16
# largest K for which the membership of rows in columns is kept as a bitset
# (K * K / 8 bytes: 32 MiB); above, it is found by binary search
_BITSET_MAX_LABELS = 16384


@nb.njit(cache=True)
def transition_rows(col_ptr, col_rows, col_vals):
    """The table's non-zeros by row, each row's entries by decreasing value
    (CSR; ties by column).

    Parameters
    ----------
    col_ptr, col_rows, col_vals : the table by column (:func:`transition_columns`)

    Returns
    -------
    row_ptr : int64 (K + 1,)
    row_cols : int64 (nnz,)
    row_vals : float64 (nnz,)
    """
    K = col_ptr.shape[0] - 1
    nnz = col_ptr[K]
    row_ptr = np.zeros(K + 1, dtype=np.int64)
    for p in range(nnz):
        row_ptr[col_rows[p] + 1] += 1
    for a in range(K):
        row_ptr[a + 1] += row_ptr[a]
    cols = np.empty(nnz, dtype=np.int64)
    vals = np.empty(nnz)
    fill = row_ptr[:K].copy()
    for b in range(K):
        for p in range(col_ptr[b], col_ptr[b + 1]):
            a = col_rows[p]
            cols[fill[a]] = b
            vals[fill[a]] = col_vals[p]
            fill[a] += 1
    row_cols = np.empty(nnz, dtype=np.int64)
    row_vals = np.empty(nnz)
    for a in range(K):
        lo = row_ptr[a]
        hi = row_ptr[a + 1]
        if hi > lo:
            o = np.argsort(-vals[lo:hi], kind="mergesort")
            for i in range(hi - lo):
                row_cols[lo + i] = cols[lo + o[i]]
                row_vals[lo + i] = vals[lo + o[i]]
    return row_ptr, row_cols, row_vals


@nb.njit(cache=True)
def column_bits(col_ptr, col_rows):
    """Rows of each column as a bitset: bit ``a`` of ``bits[b]`` (uint64 words)
    is set when ``(a, b)`` is a non-zero.  uint64 (K, ceil(K / 64)), or
    (0, 0) above ``_BITSET_MAX_LABELS`` labels."""
    K = col_ptr.shape[0] - 1
    if K > _BITSET_MAX_LABELS:
        return np.zeros((0, 0), dtype=np.uint64)
    bits = np.zeros((K, (K + 63) // 64), dtype=np.uint64)
    for b in range(K):
        for p in range(col_ptr[b], col_ptr[b + 1]):
            a = col_rows[p]
            bits[b, a >> 6] |= np.uint64(1) << np.uint64(a & 63)
    return bits


@nb.njit(cache=True, inline="always")
def _is_row(bits, col_rows, lo, hi, b, a):
    """``(a, b)`` is a non-zero of the table (bitset, else binary search)."""
    if bits.shape[0] > 0:
        return (bits[b, a >> 6] >> np.uint64(a & 63)) & np.uint64(1) != 0
    return sorted_find(col_rows, lo, hi, a) >= 0


@nb.njit(cache=True)
def _top_labels(delta, top):
    """The ``top.shape[0]`` best labels by ``delta`` (ties: lowest label
    first) into ``top``, best first; returns their number (fewer when K is
    smaller).  One pass over the labels."""
    K = delta.shape[0]
    M = top.shape[0]
    n = 0
    for a in range(K):
        d = delta[a]
        if n == M and not d > delta[top[M - 1]]:
            continue
        i = n if n < M else M - 1
        while i > 0 and d > delta[top[i - 1]]:
            top[i] = top[i - 1]
            i -= 1
        top[i] = a
        if n < M:
            n += 1
    return n


@nb.njit(cache=True)
def _best_outside(delta, col_rows, lo, hi, b, stamp):
    """Best label by ``delta`` (lowest on ties) that is not a row of column
    ``b`` (``col_rows[lo:hi]``), or -1; a scan of all labels.  ``stamp``
    (int64, (K,)) marks the column's rows with ``b``."""
    for p in range(lo, hi):
        stamp[col_rows[p]] = b
    out_a = -1
    for a in range(delta.shape[0]):
        if stamp[a] != b and (out_a < 0 or delta[a] > delta[out_a]):
            out_a = a
    return out_a


@nb.njit(cache=True, nogil=True)
def viterbi_batch_sparse(unary, offsets, col_ptr, col_rows, col_vals, out):
    """:func:`viterbi_batch` for a transition table that is mostly zero,
    given by its non-zero columns (:func:`transition_columns`).  Builds the
    table's rows (:func:`transition_rows`) and bitset (:func:`column_bits`)
    and runs :func:`viterbi_batch_sparse_rows`."""
    row_ptr, row_cols, row_vals = transition_rows(col_ptr, col_rows, col_vals)
    viterbi_batch_sparse_rows(unary, offsets, col_ptr, col_rows, col_vals, row_ptr, row_cols,
                              row_vals, column_bits(col_ptr, col_rows), out)


@nb.njit(cache=True, nogil=True)
def viterbi_batch_sparse_rows(unary, offsets, col_ptr, col_rows, col_vals, row_ptr, row_cols,
                              row_vals, bits, out):
    """:func:`viterbi_batch` over a mostly-zero transition table given by
    column (:func:`transition_columns`), by row with values decreasing
    (:func:`transition_rows`) and as a bitset (:func:`column_bits`).

    For each label ``b``, ``max_a delta[a] + trans[a, b]`` is the larger of
    the base of the column, the best ``delta[a]`` over the rows ``a``
    outside its non-zeros (their transition is 0), and the best
    ``delta[a] + trans[a, b]`` over its non-zeros.  The base is the best
    label unless the column holds it (those columns are read off the best
    label's row), else the first of the few best labels (one pass per
    position) that is not a row of it (a bit test), else a scan.  The
    non-zeros are then read row by row, each row's values decreasing and
    only while ``delta[a] + value`` reaches the smallest base of any column:
    rows far below the best labels cost one comparison.  A column whose base
    needed the scan (it holds all the few best labels, e.g. a full column)
    reads its own non-zeros instead and sets no floor.  Cost per position
    O(K) plus the entries read, instead of O(K^2); the same values and the
    same tie rule (lowest ``a``, lowest final label), so the output equals
    :func:`viterbi_batch`'s.
    """
    K = unary.shape[1]
    n_seq = offsets.shape[0] - 1
    max_len = _max_length(offsets)
    if max_len == 0:
        return
    holds_top = np.full(K, -1, dtype=np.int64)  # == t: column holds this position's best label
    deep_cols = np.empty(K, dtype=np.int64)
    back = np.zeros((max_len, K), dtype=np.int32)
    delta = np.empty(K)
    best = np.empty(K)
    arg = np.empty(K, dtype=np.int64)
    top = np.empty(min(_TOP_LABELS, K), dtype=np.int64)
    # stamp[a] == b: row a is a non-zero of column b (only column b's own
    # rows ever get b, so stale stamps from earlier columns never match)
    stamp = np.full(K, -1, dtype=np.int64)
    for s in range(n_seq):
        start = offsets[s]
        stop = offsets[s + 1]
        if stop <= start:
            continue
        for b in range(K):
            delta[b] = unary[start, b]
        for t in range(start + 1, stop):
            row = t - start
            n_top = _top_labels(delta, top)
            a0 = top[0]
            for p in range(row_ptr[a0], row_ptr[a0 + 1]):
                holds_top[row_cols[p]] = t
            # bases: the best row outside each column (transition 0)
            floor = np.inf
            n_deep = 0
            for b in range(K):
                out_a = a0
                deep = False
                if holds_top[b] == t:
                    lo = col_ptr[b]
                    hi = col_ptr[b + 1]
                    out_a = -1
                    for q in range(1, n_top):
                        if not _is_row(bits, col_rows, lo, hi, b, top[q]):
                            out_a = top[q]
                            break
                    if out_a < 0 and n_top < K:  # all of the best labels are rows of b
                        out_a = _best_outside(delta, col_rows, lo, hi, b, stamp)
                        deep = True
                if out_a >= 0 and delta[out_a] != -np.inf:
                    best[b] = delta[out_a] + 0.0
                    arg[b] = out_a
                else:
                    best[b] = -np.inf
                    arg[b] = 0
                if deep:  # its non-zeros are read below, so its low base sets no floor
                    deep_cols[n_deep] = b
                    n_deep += 1
                elif best[b] < floor:
                    floor = best[b]
            # the non-zeros, by row, while they can reach a base
            for a in range(K):
                lo = row_ptr[a]
                hi = row_ptr[a + 1]
                da = delta[a]
                if hi == lo or da == -np.inf or da + row_vals[lo] < floor:
                    continue
                for p in range(lo, hi):
                    cand = da + row_vals[p]
                    if cand < floor:
                        break
                    b = row_cols[p]
                    if cand > best[b] or (cand == best[b] and cand != -np.inf and a < arg[b]):
                        best[b] = cand
                        arg[b] = a
            # deep columns: their own non-zeros (rows below the floor included)
            for i in range(n_deep):
                b = deep_cols[i]
                for p in range(col_ptr[b], col_ptr[b + 1]):
                    a = col_rows[p]
                    if delta[a] == -np.inf:
                        continue
                    cand = delta[a] + col_vals[p]
                    if cand > best[b] or (cand == best[b] and cand != -np.inf and a < arg[b]):
                        best[b] = cand
                        arg[b] = a
            for b in range(K):
                back[row, b] = arg[b]
                delta[b] = best[b] + unary[t, b]
        _backtrack(delta, back, start, stop, out)


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
    Each sequence first goes through the scaled forward-backward
    (:func:`fb_scaled_batch`: about K exponentials per token). A sequence
    with a forbidden score or scores spanning too wide a range for that
    recursion (more than ``_RANGE`` within one position or within the
    transition table), or whose scaled quantities leave the safe range
    (``_SCALE_MIN``, ``_SCALE_MAX``), is recomputed by the
    log-domain recursion (:func:`fb_log_batch`), which is accurate for scores
    of any magnitude that double precision can hold (e.g. +-1e4). A
    sequence whose labelings are all forbidden gets ``logz = -inf``, zero
    node marginals and no contribution to ``trans_marg``.  The log-domain
    kernel is called (and compiled) only when a sequence needs it.
    """
    refused = np.empty(offsets.shape[0] - 1, dtype=np.bool_)
    if fb_scaled_batch(unary, offsets, trans, node_marg, trans_marg, logz, refused):
        fb_log_batch(unary, offsets, trans, node_marg, trans_marg, logz, refused)


@nb.njit(cache=True, nogil=True)
def fb_scaled_batch(unary, offsets, trans, node_marg, trans_marg, logz, refused):
    """The scaled recursion (:func:`_fb_scaled_seq`) of every sequence of a
    batch; arguments and outputs of :func:`forward_backward_batch`, for the
    sequences it takes.  ``refused`` (bool, (n_seq,)) receives True for
    the others (outputs then unset, no part of ``trans_marg``); returns
    their number."""
    K = unary.shape[1]
    n_seq = offsets.shape[0] - 1
    for a in range(K):
        for b in range(K):
            trans_marg[a, b] = 0.0
    max_len = _max_length(offsets)
    n_refused = 0
    for s in range(n_seq):
        refused[s] = False
    if max_len == 0:
        for s in range(n_seq):
            logz[s] = 0.0
        return 0
    # scaled recursion: exp(trans - max trans), workspace, outer-product sums
    E = np.empty((K, K))
    shift = _exp_table(trans, E)
    Et = np.ascontiguousarray(E.T)
    scaled_ok = shift > -np.inf
    ahat = np.empty((max_len, K))
    ev = np.empty((max_len, K))
    scale = np.empty(max_len)
    vec = np.empty((3, K))
    m_seq = np.empty((K, K))
    m_all = np.zeros((K, K))
    for s in range(n_seq):
        start = offsets[s]
        n = offsets[s + 1] - start
        if n == 0:
            logz[s] = 0.0
            continue
        if scaled_ok or n == 1:
            ok, lz = _fb_scaled_seq(unary, start, n, E, Et, shift, ahat, ev, scale, vec,
                                    m_seq, node_marg)  # fmt: skip
            if ok:
                logz[s] = lz
                for a in range(K):
                    for b in range(K):
                        m_all[a, b] += m_seq[a, b]
                continue
        refused[s] = True
        n_refused += 1
    # edge marginals of the scaled sequences: sum_t ahat_t[a] q_{t+1}[b] times E[a, b]
    # (without a usable E only single-token sequences were scaled: no edges)
    if scaled_ok:
        for a in range(K):
            for b in range(K):
                trans_marg[a, b] += m_all[a, b] * E[a, b]
    return n_refused


@nb.njit(cache=True, nogil=True)
def fb_log_batch(unary, offsets, trans, node_marg, trans_marg, logz, todo):
    """The log-domain recursion (:func:`_fb_log_seq`) of the sequences
    ``s`` with ``todo[s]``: their ``logz`` and node marginals, their edge
    marginals added to ``trans_marg``."""
    K = unary.shape[1]
    n_seq = offsets.shape[0] - 1
    max_len = _max_length(offsets)
    col_max = np.empty(K)
    row_max = np.empty(K)
    e_col = np.empty((K, K))
    e_row = np.empty((K, K))
    _scaled_tables(trans, col_max, row_max, e_col, e_row)
    alpha = np.empty((max_len, K))
    beta = np.empty((max_len, K))
    vec = np.empty((3, K))
    for s in range(n_seq):
        if todo[s]:
            start = offsets[s]
            logz[s] = _fb_log_seq(unary, start, offsets[s + 1] - start, trans, col_max,
                                  row_max, e_col, e_row, alpha, beta, vec, node_marg,
                                  trans_marg)  # fmt: skip


@nb.njit(cache=True)
def _shifted_exp(x, out):
    """``out = exp(x - max(x))`` for a 1-D ``x``; returns ``max(x)``.

    Returns ``-inf`` (``out`` then undefined) when an entry is ``-inf`` or
    the entries span more than ``_RANGE``.
    """
    m = -np.inf
    lo = np.inf
    for i in range(x.shape[0]):
        v = x[i]
        if v > m:
            m = v
        if v < lo:
            lo = v
    if lo == -np.inf or m - lo > _RANGE:
        return -np.inf
    for i in range(x.shape[0]):
        out[i] = np.exp(x[i] - m)
    return m


@nb.njit(cache=True)
def _exp_table(trans, E):
    """``E = exp(trans - max(trans))``; returns the maximum, or ``-inf`` (see :func:`_shifted_exp`)."""
    K = trans.shape[0]
    return _shifted_exp(trans.reshape(K * K), E.reshape(K * K))


@nb.njit(cache=True)
def _fb_scaled_seq(unary, start, n, E, Et, shift, ahat, ev, scale, vec, m_seq, node_marg):
    """Scaled forward-backward of one sequence (probability domain).

    With ``ev[t, b] = exp(unary[t, b] - m_t)`` (``m_t`` the maximum of
    position ``t``) and ``E = exp(trans - shift)``, the forward vectors
    ``ahat_t`` are normalized to sum 1 by the factors ``scale[t]``, so that
    ``log Z = sum_t (log scale[t] + m_t) + (n - 1) shift``. The backward
    vectors use the same factors; ``P(y_t = b) = ahat_t[b] bhat_t[b]`` and
    ``P(y_t = a, y_{t+1} = b) = ahat_t[a] E[a, b] q_{t+1}[b]`` with
    ``q_{t+1} = ev[t + 1] * bhat_{t+1} / scale[t + 1]``.

    Writes ``node_marg[start:start + n]`` and ``m_seq[a, b] = sum_t
    ahat_t[a] q_{t+1}[b]`` (to be multiplied by ``E``). Returns
    ``(ok, log Z)``; ``ok`` is False (outputs then undefined) when a
    position holds a forbidden (``-inf``) score or scores spanning more than
    ``_RANGE``, a scale falls below ``_SCALE_MIN`` or a backward quantity
    (q) exceeds ``_SCALE_MAX``; the caller then uses :func:`_fb_log_seq`.
    ``E`` must come from :func:`_exp_table` with a finite ``shift`` when
    ``n > 1``; ``Et`` is its transpose (C-contiguous). ``vec`` is (3, K)
    scratch.
    """
    K = unary.shape[1]
    lz = 0.0
    num = vec[0]
    for t in range(n):
        m = _shifted_exp(unary[start + t], ev[t])
        if m == -np.inf:
            return False, 0.0
        if t == 0:
            for b in range(K):
                num[b] = ev[0, b]
        else:
            for b in range(K):
                num[b] = 0.0
            for a in range(K):
                pa = ahat[t - 1, a]
                if pa != 0.0:
                    for b in range(K):
                        num[b] += pa * E[a, b]
            for b in range(K):
                num[b] *= ev[t, b]
        st = 0.0
        for b in range(K):
            st += num[b]
        if not st >= _SCALE_MIN:
            return False, 0.0
        inv = 1.0 / st
        for b in range(K):
            ahat[t, b] = num[b] * inv
        scale[t] = st
        lz += m + np.log(st)
    if n > 1:
        lz += (n - 1) * shift
    bhat = vec[1]
    q = vec[2]
    for a in range(K):
        bhat[a] = 1.0
        for b in range(K):
            m_seq[a, b] = 0.0
    for t in range(n - 1, 0, -1):
        # node marginals of position t, then bhat_{t-1} = E @ q_t (<= K max(q))
        inv = 1.0 / scale[t]
        for b in range(K):
            node_marg[start + t, b] = ahat[t, b] * bhat[b]
            q[b] = ev[t, b] * bhat[b] * inv
        qmax = 0.0
        for b in range(K):
            if not q[b] <= qmax:  # NaN propagates
                qmax = q[b]
        if not qmax <= _SCALE_MAX:
            return False, 0.0
        # column by column (contiguous rows of E^T): the same sums in the same
        # order as row-wise dot products, without a serial dependency per label
        for a in range(K):
            bhat[a] = 0.0
        for b in range(K):
            qb = q[b]
            for a in range(K):
                bhat[a] += Et[b, a] * qb
        for a in range(K):
            pa = ahat[t - 1, a]
            for b in range(K):
                m_seq[a, b] += pa * q[b]
    for b in range(K):
        node_marg[start, b] = ahat[0, b] * bhat[b]
    return True, lz


@nb.njit(cache=True)
def _fb_log_seq(unary, start, n, trans, col_max, row_max, e_col, e_row, alpha, beta, vec,
                node_marg, trans_marg):  # fmt: skip
    """Log-domain forward-backward of one sequence; returns ``log Z``.

    Each step is evaluated as a matrix-vector product of exponentials shifted
    by their maxima (tables from :func:`_scaled_tables`); a column whose
    scaled sum falls below 1e-200 (so that underflow could cost precision) is
    recomputed with an exact log-sum-exp. Writes ``node_marg[start:start +
    n]`` and adds the edge marginals to ``trans_marg``. ``alpha``, ``beta``
    (>= n, K) and ``vec`` (3, K) are scratch.
    """
    K = unary.shape[1]
    p = vec[0]
    acc = vec[1]
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
    if lz == -np.inf:
        for t in range(n):
            for b in range(K):
                node_marg[start + t, b] = 0.0
        return lz
    # --------------------------------------------------------- backward
    for a in range(K):
        beta[n - 1, a] = 0.0
    for t in range(n - 2, -1, -1):
        m = _sum_exp_shifted(unary[start + t + 1], beta[t + 1], p, acc)
        if m == -np.inf:
            for a in range(K):
                beta[t, a] = -np.inf
            continue
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
        m = _sum_exp_shifted(unary[start + t + 1], beta[t + 1], p, acc)
        if m == -np.inf:
            continue
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
    return lz


@nb.njit(cache=True)
def _sum_exp_shifted(u, v, p, acc):
    """``p = u + v`` and ``acc = exp(p - max(p))``; returns ``max(p)``.

    ``acc`` is left undefined when the maximum is ``-inf``.
    """
    m = -np.inf
    for b in range(u.shape[0]):
        x = u[b] + v[b]
        p[b] = x
        if x > m:
            m = x
    if m > -np.inf:
        for b in range(u.shape[0]):
            acc[b] = np.exp(p[b] - m)
    return m


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


# ------------------------------------------------------------------ batched (GEMM) forward-backward
# entries of one group's (length, sequences, K) work arrays
GROUP_ENTRIES = 2**18


def forward_backward_grouped(unary, offsets, trans, node_marg, trans_marg, logz, group_entries):
    """:func:`forward_backward_batch` through :func:`fb_scaled_grouped` (any
    K; groups of about ``group_entries`` work entries); the sequences it
    cannot take go to :func:`fb_log_batch`, a table with a forbidden
    transition to :func:`forward_backward_batch`.  The sequences' order
    (longest first, stable) is sorted here, outside the compiled code."""
    K = unary.shape[1]
    E = np.empty((K, K))
    shift = _exp_table(trans, E)
    if shift == -np.inf:
        forward_backward_batch(unary, offsets, trans, node_marg, trans_marg, logz)
        return
    order = np.argsort(offsets[:-1] - offsets[1:], kind="stable")
    refused = np.empty(offsets.shape[0] - 1, dtype=np.bool_)
    if fb_scaled_grouped(unary, offsets, order, E, shift, node_marg, trans_marg, logz, refused,
                         group_entries):
        fb_log_batch(unary, offsets, trans, node_marg, trans_marg, logz, refused)


@nb.njit(cache=True, nogil=True)
def fb_scaled_grouped(unary, offsets, order, E, shift, node_marg, trans_marg, logz, refused,
                      group_entries):
    """Scaled forward-backward (the recursion of :func:`_fb_scaled_seq`) of
    groups of sequences at once; ``order``: the sequences longest first,
    ``E``, ``shift``: :func:`_exp_table` of the transitions (finite shift).

    Sequences are taken longest first, in groups whose work arrays hold
    about ``group_entries`` entries; at position ``t`` the sequences of a
    group still running are a prefix of it, so each step is one matrix
    product of their stacked vectors with ``E`` (forward) or ``E.T``
    (backward), and the expected transition counts are ``sum_t
    ahat_{t-1}^T q_t`` over the group.  Sets ``trans_marg`` (overwritten),
    ``logz`` and ``node_marg`` of the sequences it completes;
    ``refused[s]`` becomes True for a sequence it cannot take (a forbidden
    or too widely spread score, a scale out of range), whose outputs are
    then undefined and which contributes nothing to ``trans_marg``; returns
    their number.  Whole rows are written by loops, not slice assignments
    (whose shape checks would compile error formatting for seconds).
    """
    K = unary.shape[1]
    n_seq = offsets.shape[0] - 1
    lengths = offsets[1:] - offsets[:-1]
    ET = np.ascontiguousarray(E.T)
    counts = np.zeros((K, K))
    part = np.empty((K, K))
    n_refused = 0
    g0 = 0
    while g0 < n_seq:
        L = lengths[order[g0]]
        if L == 0:
            for i in range(g0, n_seq):
                logz[order[i]] = 0.0
                refused[order[i]] = False
            break
        B = max(1, min(n_seq - g0, group_entries // (L * K)))
        seqs = order[g0:g0 + B]
        # active[t]: sequences of the group longer than t (a prefix)
        active = np.zeros(L, dtype=np.int64)
        for i in range(B):
            for t in range(lengths[seqs[i]]):
                active[t] += 1
        A = np.zeros((L, B, K))  # normalized forward vectors
        Q = np.zeros((L, B, K))  # exp(shifted scores), then the backward q_t
        scale = np.ones((L, B))
        good = np.ones(B, dtype=np.bool_)
        lz = np.zeros(B)
        for i in range(B):
            s = seqs[i]
            n = lengths[s]
            for t in range(n):
                m = _shifted_exp(unary[offsets[s] + t], Q[t, i])
                if m == -np.inf:
                    good[i] = False
                    break
                lz[i] += m
            if n > 0:
                lz[i] += (n - 1) * shift
        # forward
        for t in range(L):
            nt = active[t]
            At = A[t]
            if t == 0:
                for i in range(nt):
                    for b in range(K):
                        At[i, b] = Q[0, i, b]
            else:
                np.dot(A[t - 1][:nt], E, At[:nt])
            for i in range(nt):
                row = At[i]
                qrow = Q[t, i]
                st = 0.0
                for b in range(K):
                    v = row[b] * qrow[b] if t > 0 else row[b]
                    row[b] = v
                    st += v
                if not (good[i] and st >= _SCALE_MIN):
                    good[i] = False
                    for b in range(K):
                        row[b] = 0.0
                    continue
                inv = 1.0 / st
                for b in range(K):
                    row[b] *= inv
                scale[t, i] = st
                lz[i] += np.log(st)
        # backward: bh holds bhat_t of the running sequences
        bh = np.ones((B, K))
        nxt = np.empty((B, K))
        for t in range(L - 1, -1, -1):
            nt = active[t]
            for i in range(nt):
                s = seqs[i]
                if lengths[s] - 1 == t:
                    for b in range(K):
                        bh[i, b] = 1.0
                if not good[i]:
                    continue
                tok = offsets[s] + t
                for b in range(K):
                    node_marg[tok, b] = A[t, i, b] * bh[i, b]
            if t == 0:
                break
            Qt = Q[t]
            for i in range(nt):
                if not good[i]:
                    for b in range(K):
                        Qt[i, b] = 0.0
                    continue
                inv = 1.0 / scale[t, i]
                qmax = 0.0
                for b in range(K):
                    v = Qt[i, b] * bh[i, b] * inv
                    Qt[i, b] = v
                    if not v <= qmax:  # NaN propagates
                        qmax = v
                if not qmax <= _SCALE_MAX:
                    good[i] = False
                    for b in range(K):
                        Qt[i, b] = 0.0
            np.dot(Qt[:nt], ET, nxt[:nt])
            for i in range(nt):
                for b in range(K):
                    bh[i, b] = nxt[i, b]
        # expected transition counts of the sequences that went through
        for t in range(1, L):
            nt = active[t]
            for i in range(nt):
                if not good[i]:
                    for b in range(K):
                        A[t - 1, i, b] = 0.0
                        Q[t, i, b] = 0.0
            np.dot(A[t - 1][:nt].T, Q[t][:nt], part)
            for a in range(K):
                for b in range(K):
                    counts[a, b] += part[a, b]
        for i in range(B):
            refused[seqs[i]] = not good[i]
            n_refused += 0 if good[i] else 1
            logz[seqs[i]] = lz[i]
        g0 += B
    for a in range(K):
        for b in range(K):
            trans_marg[a, b] = counts[a, b] * E[a, b]
    return n_refused
