"""Numba kernels of the structured-oracle baselines for chains: BCFW and SSG.

Both call the structured maximization oracle (loss-augmented Viterbi over
all ``K`` labels, :func:`structlearn.inference.chains._chain_kernels.viterbi_batch`)
once per sequence visit.  Layout and objective: see
:mod:`._ssvm_chain_kernels`.

BCFW (Lacoste-Julien et al., 2013) keeps, per sequence ``i``, its block of
the dual as the expected features of a distribution over labelings: token
marginals ``mu[t, :]`` (dense ``(N, K)``) and the expected transition
counts ``P_i`` (sparse: at most ``(n_i - 1) * visits`` entries, stored in
``pr_a, pr_b, pr_v`` from ``pr_start[i]`` with ``pr_n[i]`` entries).  The
block's contribution to the weights is ``w_i = C (phi(ybar_i) - E_mu phi)``
and its loss term ``l_i = C E_mu Hamming``.
"""

from typing import NamedTuple

import numba as nb
import numpy as np

from ..inference.chains._chain_kernels import viterbi_batch
from ._ssvm_chain_kernels import max_sequence_length, unary_scores


class BlockTransitions(NamedTuple):
    """Each block's expected transition counts, sparse: block ``i`` has
    ``count[i]`` entries from ``start[i]``: label pairs ``(left, right)``
    (int64) with counts ``value`` (float64)."""

    start: np.ndarray
    count: np.ndarray
    left: np.ndarray
    right: np.ndarray
    value: np.ndarray


@nb.njit(cache=True)
def _loss_augmented(W, v, scale, data, indices, indptr, y, start, stop, unary, seg, z):
    """Raw scores (scaled) into ``unary`` and the loss-augmented labeling into ``z``."""
    n = stop - start
    K = W.shape[1]
    unary_scores(W, data, indices, indptr, start, stop, unary)
    for r in range(n):
        for k in range(K):
            unary[r, k] = unary[r, k] * scale + 1.0
        unary[r, y[start + r]] -= 1.0
    seg[0] = 0
    seg[1] = n
    if scale == 1.0:
        viterbi_batch(unary[:n], seg, v, z[:n])
    else:
        viterbi_batch(unary[:n], seg, v * scale, z[:n])
    # back to raw (non loss-augmented) scores
    for r in range(n):
        for k in range(K):
            unary[r, k] -= 1.0
        unary[r, y[start + r]] += 1.0


@nb.njit(cache=True, nogil=True)
def bcfw_chain_pass(chains, order, C, W, v, mu, loss, transitions, scratch, stats, damping):
    """One pass of BCFW over the sequences in ``order`` (exact line search).

    Parameters
    ----------
    chains : TrainingChains
    order : int64 (n_visits,)
    C : float
    W : float64 (d, K); v : float64 (K, K)
        Weights ``w = sum_i w_i``, updated in place.
    mu : float64 (N, K)
        Token marginals of each block (a one-hot of the truth initially).
    loss : float64 (n_seq,)
        ``l_i`` per block.
    transitions : BlockTransitions
        Each block's sparse expected transition counts (module docstring).
    scratch : tuple
        ``(U, touched, mark)``: float64 (d, K) zeros, int64 (d,), uint8 (d,)
        zeros.
    stats : float64 (2,) receives the summed block gaps and the oracle
        entries visited (``n_i K^2`` per Viterbi call).
    damping : tuple
        ``(sigma, sigma_v)``: float64 (d,) and float.  A block's step moves
        weight row ``f`` ``sigma[f]`` times (``v`` ``sigma_v`` times) and
        its line search counts each row's curvature as many times: ones and
        1 for a pass over all the sequences, the partitions that use a row
        for a partition's pass (:mod:`._partitions`).
    """
    data, indices, indptr, offsets, y = chains
    pr_start, pr_n, pr_a, pr_b, pr_v = transitions
    U, touched, mark = scratch
    sigma, sigma_v = damping
    K = W.shape[1]
    max_len = max_sequence_length(offsets)
    unary = np.empty((max_len, K))
    z = np.empty(max_len, dtype=np.int64)
    seg = np.empty(2, dtype=np.int64)
    cap = 0
    for s in range(offsets.shape[0] - 1):
        c = pr_start[s + 1] - pr_start[s] if s + 1 < pr_start.shape[0] else 0
        if c > cap:
            cap = c
    ta = np.empty(cap + max_len, dtype=np.int64)
    tb = np.empty(cap + max_len, dtype=np.int64)
    tv = np.empty(cap + max_len)
    gap_sum = 0.0
    for i in order:
        start = offsets[i]
        stop = offsets[i + 1]
        n = stop - start
        _loss_augmented(W, v, 1.0, data, indices, indptr, y, start, stop, unary, seg, z)
        stats[1] += n * K * K
        # unigram part of w_i - w_s = C sum_t x_t (e_z - mu_t): into scratch U
        lin = 0.0  # <w_i - w_s, w> / C
        ham = 0.0
        nt = 0
        for r in range(n):
            t = start + r
            zt = z[r]
            lin += unary[r, zt]
            for k in range(K):
                lin -= mu[t, k] * unary[r, k]
            if zt != y[t]:
                ham += 1.0
            for p in range(indptr[t], indptr[t + 1]):
                f = indices[p]
                x = data[p]
                if mark[f] == 0:
                    mark[f] = 1
                    touched[nt] = f
                    nt += 1
                for k in range(K):
                    U[f, k] -= x * mu[t, k]
                U[f, zt] += x
        sq = 0.0  # summed in the order of one process's pass (sigma = 1 there)
        for q in range(nt):
            f = touched[q]
            s_f = sigma[f]
            for k in range(K):
                sq += s_f * (U[f, k] * U[f, k])
        # transition part: diff = P_s - P_i as a merged sparse list
        base = pr_start[i]
        m = pr_n[i]
        for q in range(m):
            ta[q] = pr_a[base + q]
            tb[q] = pr_b[base + q]
            tv[q] = -pr_v[base + q]
        for r in range(1, n):
            a = z[r - 1]
            b = z[r]
            found = False
            for q in range(m):
                if ta[q] == a and tb[q] == b:
                    tv[q] += 1.0
                    found = True
                    break
            if not found:
                ta[m] = a
                tb[m] = b
                tv[m] = 1.0
                m += 1
        for q in range(m):
            lin += tv[q] * v[ta[q], tb[q]]
            sq += sigma_v * (tv[q] * tv[q])
        ls = C * ham
        gap = C * lin - loss[i] + ls
        gap_sum += gap
        if sq > 0.0:
            gamma = gap / (C * C * sq)
            if gamma > 1.0:
                gamma = 1.0
            elif gamma < 0.0:
                gamma = 0.0
        else:
            gamma = 0.0
        if gamma > 0.0:
            step = C * gamma
            for q in range(nt):
                f = touched[q]
                row_step = step * sigma[f]
                for k in range(K):
                    W[f, k] -= row_step * U[f, k]
            for r in range(n):
                t = start + r
                for k in range(K):
                    mu[t, k] *= 1.0 - gamma
                mu[t, z[r]] += gamma
            cnt = 0
            for q in range(m):
                v[ta[q], tb[q]] -= step * sigma_v * tv[q]
                # new P_i = P_i + gamma * diff
                val = gamma * tv[q]
                if q < pr_n[i]:
                    val += pr_v[base + q]
                if abs(val) > 1e-14:
                    pr_a[base + cnt] = ta[q]
                    pr_b[base + cnt] = tb[q]
                    pr_v[base + cnt] = val
                    cnt += 1
            pr_n[i] = cnt
            loss[i] = (1.0 - gamma) * loss[i] + gamma * ls
        for q in range(nt):
            f = touched[q]
            mark[f] = 0
            for k in range(K):
                U[f, k] = 0.0
    stats[0] = gap_sum


@nb.njit(cache=True)
def ssg_chain_pass(chains, order, Cn, Wsum, vsum, Wacc, vacc, t0, stats):
    """One pass of stochastic subgradient (Pegasos step ``1 / (lambda t)``).

    With ``lambda = 1 / (C n)`` the iterate after ``t`` steps is the running
    mean ``w_t = (1 / t) sum_{k <= t} C n psi_k`` of the scaled negative
    subgradients ``psi_k = phi(ybar) - phi(z_k)`` (``z_k`` loss-augmented
    Viterbi at ``w_{k-1}``), so only the sum ``Wsum, vsum`` is stored and
    updated sparsely.  ``Wacc, vacc`` accumulate ``(k - 1) * C n psi_k`` for
    the weighted average ``2 / (t (t + 1)) sum_k k w_k
    = 2 / (t (t + 1)) (t * sum - acc)``.  ``t0``: steps done before this
    pass.  ``stats[1]`` += oracle entries visited.  ``chains``:
    :class:`TrainingChains`.
    """
    data, indices, indptr, offsets, y = chains
    K = Wsum.shape[1]
    max_len = max_sequence_length(offsets)
    unary = np.empty((max_len, K))
    z = np.empty(max_len, dtype=np.int64)
    seg = np.empty(2, dtype=np.int64)
    t = t0
    for i in order:
        start = offsets[i]
        stop = offsets[i + 1]
        n = stop - start
        scale = 1.0 / t if t > 0 else 0.0
        _loss_augmented(Wsum, vsum, scale, data, indices, indptr, y, start, stop, unary, seg, z)
        stats[1] += n * K * K
        t += 1
        wk = float(t - 1)
        for r in range(n):
            tt = start + r
            a = y[tt]
            b = z[r]
            if a != b:
                for p in range(indptr[tt], indptr[tt + 1]):
                    f = indices[p]
                    x = data[p] * Cn
                    Wsum[f, a] += x
                    Wsum[f, b] -= x
                    Wacc[f, a] += wk * x
                    Wacc[f, b] -= wk * x
            if r > 0:
                ya = y[tt - 1]
                za = z[r - 1]
                if ya != za or a != b:
                    vsum[ya, a] += Cn
                    vsum[za, b] -= Cn
                    vacc[ya, a] += wk * Cn
                    vacc[za, b] -= wk * Cn
    return t
