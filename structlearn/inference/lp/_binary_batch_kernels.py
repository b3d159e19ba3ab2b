"""Numba kernels of batched MAP for binary pairwise models sharing one structure.

Each model (sample) ``i`` maximizes over ``z`` in ``{0, 1}^L``::

    score_i(z) = sum_l s[i, l] z_l + sum_f w[f] z_{a_f} z_{b_f}

with per-sample unary score differences ``s[i]`` and one shared list of
pair factors ``(a_f, b_f, w_f)`` (a multilabel model with pairwise label
interactions).  Per sample: GDMM for binary variables (Algorithm 2 of the
MAP GDMM paper, :func:`._gdmm_kernels.binary_gdmm_run`) in rounds, each
round's decoding ``x > 1/2`` improved by iterated conditional modes on the
exact score, stopping once the certified Lagrangian bound meets the best
labeling or the best labeling has not improved for a number of rounds.
Deterministic (no time budget, no random moves).

No validation here; outputs go into caller-allocated arrays.
"""

import numba as nb
import numpy as np

from ._gdmm_kernels import BinaryReduced, binary_gdmm_run, binary_gdmm_state


@nb.njit(cache=True)
def qubo_score(s, P, z):
    """``s'z + sum_{l < m} P[l, m] z_l z_m`` for symmetric ``P`` with a zero diagonal."""
    L = s.shape[0]
    total = 0.0
    pair = 0.0
    for l in range(L):
        if z[l] != 0:
            total += s[l]
            for m in range(l + 1, L):
                if z[m] != 0:
                    pair += P[l, m]
    return total + pair


@nb.njit(cache=True)
def qubo_local_search(s, P, z, h, max_sweeps):
    """Iterated conditional modes in place: sweep the labels in order, flip
    ``z_l`` when that strictly raises the score, until a sweep changes nothing
    (or ``max_sweeps`` sweeps).  ``h`` (float64, L) receives the local fields
    ``h_l = s_l + sum_m P[l, m] z_m``."""
    L = s.shape[0]
    for l in range(L):
        acc = s[l]
        for m in range(L):
            if z[m] != 0:
                acc += P[l, m]
        h[l] = acc
    for sweep in range(max_sweeps):
        changed = False
        for l in range(L):
            if (z[l] == 0 and h[l] > 0.0) or (z[l] != 0 and h[l] < 0.0):
                sign = 1.0 if z[l] == 0 else -1.0
                z[l] = 1 - z[l]
                row = P[l]
                for m in range(L):
                    h[m] += sign * row[m]
                changed = True
        if not changed:
            break


@nb.njit(cache=True)
def _offer(s, P, z, h, best_z, best, max_sweeps):
    """Local search from ``z`` (in place); keep it in ``best_z`` if it beats ``best``."""
    qubo_local_search(s, P, z, h, max_sweeps)
    sc = qubo_score(s, P, z)
    if sc > best:
        best_z[:] = z
        return sc
    return best


@nb.njit(cache=True)
def _scaled_copy(src, scale, out):
    """``out = src / scale``; returns the sum of its positive entries."""
    pos = 0.0
    for k in range(src.shape[0]):
        out[k] = src[k] / scale
        if out[k] > 0.0:
            pos += out[k]
    return pos


@nb.njit(cache=True)
def binary_pairwise_map_batch(S, pairs, settings, out):
    """Approximate MAP of every row of ``S`` (see the module docstring).

    Parameters
    ----------
    S : float64 (n, L)
        Unary score differences ``theta_l(1) - theta_l(0)`` per sample.
    pairs : tuple
        ``(P, fvar, w, var_ptr, var_factors, fac_order)``, the shared pair
        factors:
    P : float64 (L, L)
        Symmetric pair weights (sum of ``w`` over the factors of each pair),
        zero diagonal; used by the local search and the scores.
    fvar : int64 (F, 2); w : float64 (F,)
        Pair factors and their weights ``theta_f(1, 1)``.
    var_ptr, var_factors : int64
        CSR of the factors of each label.
    fac_order : int64 (F,)
        Factors by decreasing ``w`` (stable).
    settings : tuple
        ``(n_rounds, inner, rho, eta, tol, stall)``:
    n_rounds, inner : int
        At most ``n_rounds`` rounds of ``inner`` GDMM iterations.
    rho, eta, tol : float
        GDMM penalty and multiplier step (normalized units); stop a sample
        when ``(bound - score) <= tol * max(1, |bound|)``.
    stall : int
        Also stop a sample after ``stall`` rounds without a better labeling
        (0: never).
    out : tuple
        ``(labels, scores, bounds, rounds)``: int64 (n, L), float64 (n,),
        float64 (n,), int64 (n,) receive the best labeling, its exact score,
        a certified upper bound of the optimum (``>= score``) and the rounds
        run.
    """
    P, fvar, w, var_ptr, var_factors, fac_order = pairs
    n_rounds, inner, rho, eta, tol, stall = settings
    labels, scores, bounds, rounds = out
    n = S.shape[0]
    L = S.shape[1]
    F = w.shape[0]
    wmax = 0.0
    for f in range(F):
        if abs(w[f]) > wmax:
            wmax = abs(w[f])
    ws = np.empty(F)
    theta = np.empty(L)
    z = np.zeros(L, dtype=np.int64)
    prev = np.zeros(L, dtype=np.int64)
    best_z = np.zeros(L, dtype=np.int64)
    h = np.empty(L)
    max_sweeps = 10 * L + 10
    for i in range(n):
        s = S[i]
        scale = wmax
        for l in range(L):
            if abs(s[l]) > scale:
                scale = abs(s[l])
        if not scale > 0.0:
            scale = 1.0
        state = binary_gdmm_state(L, F)
        state.sums[0] = _scaled_copy(w, scale, ws)
        state.sums[1] = _scaled_copy(s, scale, theta)
        var_order = np.argsort(-theta, kind="mergesort")
        reduced = BinaryReduced(theta, ws, fvar, var_ptr, var_factors, var_order, fac_order)
        x = state.x
        # starting labelings: all off, and the labels with a positive unary score
        for l in range(L):
            z[l] = 0
        best = _offer(s, P, z, h, best_z, -np.inf, max_sweeps)
        for l in range(L):
            z[l] = 1 if s[l] > 0.0 else 0
            prev[l] = -1
        best = _offer(s, P, z, h, best_z, best, max_sweeps)
        ub = np.inf
        r = 0
        last_gain = 0
        while r < n_rounds:
            r += 1
            bnd = binary_gdmm_run(inner, rho, eta, 1, reduced, state) * scale
            if bnd < ub:
                ub = bnd
            same = True
            for l in range(L):
                z[l] = 1 if x[l] > 0.5 else 0
                if z[l] != prev[l]:
                    same = False
                prev[l] = z[l]
            if not same:  # local search is deterministic: a repeated decoding adds nothing
                new = _offer(s, P, z, h, best_z, best, max_sweeps)
                if new > best:
                    last_gain = r
                best = new
            if ub - best <= tol * max(1.0, abs(ub)):
                break
            if stall > 0 and r - last_gain >= stall:
                break
        labels[i] = best_z
        scores[i] = best
        bounds[i] = ub if ub > best else best
        rounds[i] = r
