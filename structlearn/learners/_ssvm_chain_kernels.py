"""Numba kernels shared by the chain structural-SVM solvers (GDMM, BCFW, SSG).

Conventions
-----------
Tokens of all sequences are stacked: CSR arrays ``data, indices, indptr``
(float64, int64, int64) hold the token features, ``offsets`` (int64,
``n_seq + 1``) the sequence boundaries, ``y`` (int64, ``N``) the true label
codes in ``[0, K)``.  Unigram weights are stored feature-major, ``W[f, k]``
(float64 ``(d, K)``), so that one feature touches a contiguous row; the
transition table ``v[a, b]`` is float64 ``(K, K)`` (or its flat C-order
view).

The objective of every solver is the L2-regularized structured hinge with
Hamming loss::

    P(W, v) = 1/2 (||W||^2 + ||v||^2)
              + C sum_i max_z [ score_i(z) - score_i(ybar_i) + Hamming(z, ybar_i) ]

No validation here; outputs go into caller-allocated arrays.
"""

import numba as nb
import numpy as np

from ..inference.chains._chain_kernels import viterbi_batch, viterbi_batch_sparse_rows
from ..inference.chains.viterbi import leading_sequences, timed_transition_table
from ..oracles._sparse_rows_kernels import sparse_rows_sq_sum, sparse_rows_unary_scores

# token scores held at once by the certificate's loss-augmented Viterbi
# (per chunk of sequences; 2 MiB of float64)
HINGE_BLOCK_ENTRIES = 1 << 18


@nb.njit(cache=True, nogil=True)
def unary_scores(W, data, indices, indptr, start, stop, out):
    """``out[t - start, :] = W.T @ x_t`` for tokens ``start <= t < stop``
    (the sums in stored order, as scipy's CSR product; without the GIL, so
    that prediction's chunks score their tokens in parallel threads)."""
    K = W.shape[1]
    for t in range(start, stop):
        r = t - start
        for k in range(K):
            out[r, k] = 0.0
        for p in range(indptr[t], indptr[t + 1]):
            x = data[p]
            row = W[indices[p]]
            for k in range(K):
                out[r, k] += x * row[k]


def token_sq_norms(data, indptr):
    """``||x_t||^2`` per CSR row (token, or sample) (float64 (N,)): each row's
    squares summed in stored order."""
    out = np.empty(indptr.shape[0] - 1)
    _row_sq_sums(np.asarray(data, dtype=np.float64), np.asarray(indptr, dtype=np.int64), out)
    return out


@nb.njit(cache=True, nogil=True)
def _row_sq_sums(data, indptr, out):
    for r in range(out.shape[0]):
        s = 0.0
        for p in range(indptr[r], indptr[r + 1]):
            s += data[p] * data[p]
        out[r] = s


@nb.njit(cache=True, nogil=True)
def _sq_sum(a):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * a[i]
    return s


@nb.njit(cache=True, no_cpython_wrapper=True)
def sq_sum_2d(a):
    """Sum of the squared entries of a 2-D array in row-major order (the
    value of :func:`_sq_sum` over its C-order ravel, without compiling a
    ravel)."""
    s = 0.0
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            s += a[i, j] * a[i, j]
    return s


@nb.njit(cache=True, nogil=True)
def chain_hinges(W, Wsp, vs, cols, chains, scale, s_lo, s_hi, zbuf, hinge):
    """Hinge losses of sequences ``s_lo <= s < s_hi`` at the weights
    ``(scale * W, vs)`` by loss-augmented Viterbi over all ``K`` labels.

    Writes ``zbuf[offsets[s_lo]:offsets[s_hi]]`` (the loss-augmented
    labelings) and ``hinge[s_lo:s_hi]``; runs on disjoint ranges in parallel
    (no shared writes).  The token scores are computed for blocks of whole
    sequences in a scratch of at most ``HINGE_BLOCK_ENTRIES`` scores (or one
    sequence), never for all tokens at once: bounded memory instead of an
    (N, K) array.

    Parameters
    ----------
    W, Wsp : float64 (d, K) and None, or a placeholder and the sparse rows
        of the weights (:mod:`structlearn.oracles.sparse_rows`).
    vs : float64 (K, K), the transition weights already scaled.
    cols : tuple or None
        :func:`~structlearn.inference.chains.viterbi.sparse_transition_table` of ``vs``: the Viterbi runs over its non-zeros,
        O(K) plus the entries read per token instead of O(K^2), same labels;
        None runs the dense Viterbi (the sparse kernel is then not compiled).
    chains : TrainingChains
    zbuf : int64 (N,); hinge : float64 (n_seq,)
    """
    data, indices, indptr, offsets, y = chains
    K = vs.shape[0]
    if s_hi <= s_lo:
        return
    longest = 0
    for s in range(s_lo, s_hi):
        longest = max(longest, offsets[s + 1] - offsets[s])
    cap = min(max(longest, HINGE_BLOCK_ENTRIES // max(K, 1)), offsets[s_hi] - offsets[s_lo])
    unary = np.empty((cap, K))
    local = np.empty(s_hi - s_lo + 1, dtype=np.int64)
    s = s_lo
    while s < s_hi:
        t_lo = offsets[s]
        e = s + 1
        while e < s_hi and offsets[e + 1] - t_lo <= cap:
            e += 1
        t_hi = offsets[e]
        rows = unary[:t_hi - t_lo]
        if Wsp is None:
            unary_scores(W, data, indices, indptr, t_lo, t_hi, rows)
        else:
            sparse_rows_unary_scores(Wsp, data, indices, indptr, t_lo, t_hi, rows)
        for t in range(t_lo, t_hi):
            r = t - t_lo
            for k in range(K):
                rows[r, k] = rows[r, k] * scale + 1.0
            rows[r, y[t]] -= 1.0
        for q in range(s, e + 1):
            local[q - s] = offsets[q] - t_lo
        seg = local[:e - s + 1]
        if cols is None:
            viterbi_batch(rows, seg, vs, zbuf[t_lo:t_hi])
        else:
            viterbi_batch_sparse_rows(rows, seg, cols[0], cols[1], cols[2], cols[3], cols[4],
                                      cols[5], cols[6], zbuf[t_lo:t_hi])
        for q in range(s, e):
            h = 0.0
            for t in range(offsets[q], offsets[q + 1]):
                h += rows[t - t_lo, zbuf[t]] - rows[t - t_lo, y[t]]
                if t > offsets[q]:
                    h += vs[zbuf[t - 1], zbuf[t]] - vs[y[t - 1], y[t]]
            if h < 0.0:
                h = 0.0
            hinge[q] = h
        s = e


def scaled_transitions(v, scale):
    """``scale * v`` as a new C-ordered float64 (K, K) array."""
    return np.multiply(np.asarray(v, dtype=np.float64), scale, order="C")


@nb.njit(cache=True, nogil=True)
def primal_from_hinges(W, Wsp, v, scale, C, hinge):
    """``0.5 scale^2 (||W||^2 + ||v||^2) + C sum(hinge)``, the hinges summed
    in sequence order (so the value does not depend on how they were
    computed); ``W`` dense (``Wsp`` None), or the sparse rows ``Wsp``."""
    return weights_regularizer(W, Wsp, v, scale) + C * hinge_sum(hinge)


@nb.njit(cache=True, nogil=True)
def hinge_sum(hinge):
    """The hinges summed in sequence order."""
    total = 0.0
    for s in range(hinge.shape[0]):
        total += hinge[s]
    return total


@nb.njit(cache=True, nogil=True)
def weights_regularizer(W, Wsp, v, scale):
    """``0.5 scale^2 (||W||^2 + ||v||^2)``; ``W`` dense (``Wsp`` None), or
    the sparse rows ``Wsp``."""
    if Wsp is None:
        wsq = sq_sum_2d(W)
    else:
        wsq = sparse_rows_sq_sum(Wsp)
    return 0.5 * scale * scale * (wsq + sq_sum_2d(v))


def chain_primal(W, Wsp, v, chains, C, scale, zbuf, hinge):
    """Primal objective of the weights ``(scale * W, scale * v)``.

    Runs loss-augmented Viterbi on every sequence (over all ``K`` labels).
    A Python function over three kernels, so that only the Viterbi kernel
    the table needs is compiled.

    Parameters
    ----------
    W, Wsp : float64 (d, K) and None, or a placeholder and sparse rows
    v : float64 (K, K)
    chains : TrainingChains
    scale : float
        The weights are ``scale * W`` and ``scale * v`` (1.0 for most callers).
    zbuf : int64 (N,) receives the loss-augmented labelings; hinge :
        float64 (n_seq,) receives each sequence's hinge loss.

    Returns
    -------
    primal : float
    """
    vs = scaled_transitions(v, scale)
    chain_hinges(W, Wsp, vs, hinge_table(W, Wsp, vs, chains, scale, zbuf, hinge), chains,
                 scale, 0, chains.offsets.shape[0] - 1, zbuf, hinge)
    return float(primal_from_hinges(W, Wsp, v, scale, C, hinge))


def hinge_table(W, Wsp, vs, chains, scale, zbuf, hinge):
    """The transition table :func:`chain_hinges` is the fastest with on all
    of ``chains`` (:func:`~structlearn.inference.chains.viterbi.timed_transition_table`,
    timed on the first sequences, whose ``zbuf`` and ``hinge`` entries it
    writes as the whole call will); None: the dense Viterbi."""
    def probe(table, n_positions):
        chain_hinges(W, Wsp, vs, table, chains, scale, 0,
                     leading_sequences(chains.offsets, n_positions), zbuf, hinge)

    return timed_transition_table(vs, int(chains.offsets[-1]), probe)


@nb.njit(cache=True)
def project_shifted_simplex(z, m, C, out):
    """Euclidean projection onto the shifted simplex of eq. 11 (slot 0 = ground truth).

    Finds ``a`` minimizing ``||a - z[:m]||`` subject to ``a[0] <= C``,
    ``a[s] <= 0`` for ``s >= 1`` and ``sum(a) = 0``; writes it to ``out[:m]``.
    With ``u[0] = C - a[0]``, ``u[s] = -a[s]`` this is the projection of
    ``(C - z[0], -z[1], ...)`` onto ``{u >= 0, sum(u) = C}``, i.e.
    ``u = max(. - tau, 0)`` for one threshold ``tau``, found by Condat's
    algorithm (2016): a single pass keeps a running guess of ``tau`` over a
    candidate support, then a few clean-up sweeps drop the entries at or
    below it.  No sort; ``out`` doubles as the candidate list.  Cost O(m)
    in practice.
    """
    if m == 1:
        out[0] = 0.0
        return
    # out[:nw]: values set aside (re-examined once at the end);
    # out[nw:nw + nv]: the current support guess, tau = (its sum - C) / nv
    u = C - z[0]
    out[0] = u
    nw = 0
    nv = 1
    tau = u - C
    for s in range(1, m):
        u = -z[s]
        if u > tau:
            tau += (u - tau) / (nv + 1)
            if tau > u - C:
                out[nw + nv] = u
                nv += 1
            else:  # u alone beats the guess: restart the support from it
                nw += nv
                out[nw] = u
                nv = 1
                tau = u - C
    for k in range(nw):
        u = out[k]
        if u > tau:
            out[nw + nv] = u
            nv += 1
            tau += (u - tau) / nv
    changed = True
    while changed:
        changed = False
        k = nw
        while k < nw + nv:
            u = out[k]
            if u <= tau:
                nv -= 1
                out[k] = out[nw + nv]
                tau += (tau - u) / nv
                changed = True
            else:
                k += 1
    for s in range(m):
        u = C - z[0] if s == 0 else -z[s]
        w = u - tau if u > tau else 0.0
        out[s] = C - w if s == 0 else -w


@nb.njit(cache=True, no_cpython_wrapper=True)
def projected_block_step(cur, g, m, Q, C, z, out):
    """Block subproblem (25): ``out[:m] = Proj(cur[:m] - g[:m] / Q)`` onto the shifted simplex."""
    for s in range(m):
        z[s] = cur[s] - g[s] / Q
    project_shifted_simplex(z, m, C, out)


@nb.njit(cache=True)
def max_sequence_length(offsets):
    """Longest sequence of a batch (0 for none)."""
    best = 0
    for s in range(offsets.shape[0] - 1):
        if offsets[s + 1] - offsets[s] > best:
            best = offsets[s + 1] - offsets[s]
    return best
