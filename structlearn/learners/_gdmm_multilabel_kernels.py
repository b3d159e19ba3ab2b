"""Numba kernels of GDMM with the BGCD inner loop for multilabel structural SVMs.

Model and dual (see :mod:`.gdmm_multilabel` for the derivation): sample
``i`` has one binary variable per label ``j`` (unigram inner-product factor)
and one pair factor per interaction edge ``f = (a, b)``.  In the reduced
(rare-outcome) parametrization of the local polytope, ``x_j = mu_j(1)`` and
``z_f = mu_f(1, 1)``, the duals are ``A[i, j] = C (ybar_j - x_j)`` (box
``[0, C]`` for a positive label, ``[-C, 0]`` otherwise) and
``b_f = C (ybar_a ybar_b - z_f)`` (box likewise); the weights are
``W[:, j] = sum_i x_i A[i, j]`` and ``P_f = sum_i b_if``.  Consistency of a
pair factor with its labels is the three inequalities (in dual units)::

    h1 = C (ybar_f - ybar_a) - b + A_a <= 0          (z <= x_a)
    h2 = C (ybar_f - ybar_b) - b + A_b <= 0          (z <= x_b)
    h3 = C (ybar_a + ybar_b - 1 - ybar_f) - A_a - A_b + b <= 0   (x_a + x_b - 1 <= z)

handled by an augmented Lagrangian with scaled multipliers ``nu >= 0``
(penalty ``rho / 2 max(0, h + nu)^2``).  The objective minimized is
``D = 1/2 ||W||^2 + 1/2 ||P||^2 + sum_ij (1 - 2 ybar_ij) A[i, j]``.

Sparsity: a sample's *touched* labels ``T`` are its positive labels plus the
labels whose unigram factor entered its active set; every edge inside ``T``
is an active pair factor, other pair factors become active through the
joint oracle.  A label outside ``T`` has ``x = 0`` and an inactive factor
has ``z = 0`` with ``nu = 0``, so inactive factors satisfy all constraints
and their gradient is ``P_f`` alone: sums over active factors are sums over
the whole problem.

Per-sample active pair factors (dense rows with a count): ``fa, fb`` labels
(``fa < fb``), ``fv`` the dual ``b``, ``fnu`` (cap, 3) the multipliers,
``nf[i]`` the count.  ``tmask`` uint8 (n, L) marks ``T``.  The pair scores
live in ``ostate[0]`` (upper-triangle order, ``-inf`` off the edge set) and
the joint binary-interaction oracle state ``ostate`` of
:mod:`structlearn.oracles.binary` (heaps used only when ``sublinear``).
"""

import numba as nb
import numpy as np

from ..oracles._binary_kernels import (
    binary_add,
    binary_pair_fmo,
    dense_binary_pair_argmax,
    pair_id,
)
from ._multilabel_kernels import sample_scores


@nb.njit(cache=True)
def _constraints(i, q, Y, A, C, fa, fb, fv):
    a = fa[i, q]
    b = fb[i, q]
    ya = Y[i, a]
    yb = Y[i, b]
    yf = ya * yb
    v = fv[i, q]
    h1 = C * (yf - ya) - v + A[i, a]
    h2 = C * (yf - yb) - v + A[i, b]
    h3 = C * (ya + yb - 1 - yf) - A[i, a] - A[i, b] + v
    return h1, h2, h3


@nb.njit(cache=True)
def _clip(v, lo, hi):
    return lo if v < lo else (hi if v > hi else v)


@nb.njit(cache=True)
def _label_penalty(i, j, Y, A, C, fa, fb, fv, fnu, m):
    """Penalty part of dA_j and the number of active factors touching ``j``."""
    pen = 0.0
    k = 0
    for q in range(m):
        a = fa[i, q]
        b = fb[i, q]
        if a != j and b != j:
            continue
        h1, h2, h3 = _constraints(i, q, Y, A, C, fa, fb, fv)
        p3 = max(0.0, h3 + fnu[i, q, 2])
        if a == j:
            pen += max(0.0, h1 + fnu[i, q, 0]) - p3
        else:
            pen += max(0.0, h2 + fnu[i, q, 1]) - p3
        k += 1
    return pen, k


@nb.njit(cache=True)
def _find_pair(i, a, b, fa, fb, m):
    for q in range(m):
        if fa[i, q] == a and fb[i, q] == b:
            return q
    return -1


@nb.njit(cache=True)
def _append_pair(i, a, b, fa, fb, fv, fnu, nf):
    q = nf[i]
    fa[i, q] = a
    fb[i, q] = b
    fv[i, q] = 0.0
    fnu[i, q, 0] = 0.0
    fnu[i, q, 1] = 0.0
    fnu[i, q, 2] = 0.0
    nf[i] = q + 1


@nb.njit(cache=True)
def _touch_label(i, j, E, tmask, fa, fb, fv, fnu, nf):
    """Put label ``j`` in ``T`` and activate its edges to the other touched
    labels; returns False (nothing changed) when the pair capacity is short."""
    L = tmask.shape[1]
    m = nf[i]
    need = 0
    for k in range(L):
        if k != j and tmask[i, k] != 0 and E[min(j, k), max(j, k)] != 0:
            if _find_pair(i, min(j, k), max(j, k), fa, fb, m) < 0:
                need += 1
    if m + need > fa.shape[1]:
        return False
    for k in range(L):
        if k != j and tmask[i, k] != 0 and E[min(j, k), max(j, k)] != 0:
            if _find_pair(i, min(j, k), max(j, k), fa, fb, m) < 0:
                _append_pair(i, min(j, k), max(j, k), fa, fb, fv, fnu, nf)
    tmask[i, j] = 1
    return True


@nb.njit(cache=True)
def init_touched(Y, E, tmask, fa, fb, fv, fnu, nf):
    """Start state: ``T`` = positive labels (edges among them active). Returns
    the number of samples whose pairs did not fit (0 when the capacity suffices)."""
    n, L = Y.shape
    short = 0
    for i in range(n):
        for j in range(L):
            if Y[i, j] != 0 and tmask[i, j] == 0:
                if not _touch_label(i, j, E, tmask, fa, fb, fv, fnu, nf):
                    short += 1
    return short


@nb.njit(cache=True)
def _set_pair_score(ostate, sublinear, L, a, b, delta):
    if sublinear:
        binary_add(ostate, a, b, delta)
    else:
        ostate[0][pair_id(a, b, L)] += delta


@nb.njit(cache=True)
def gdmm_multilabel_pass(data, indices, indptr, Y, xnorm2, E, n_edges, order, C, rho, W, Pw,
                         ostate, sublinear, A, tmask, fa, fb, fv, fnu, nf, ows, stats):
    """One pass of block-greedy coordinate descent (Algorithm 3) over the samples in ``order``.

    Per sample: scores of all labels, the greedy factor among the unigram
    factors of untouched labels and the inactive pair factors (joint
    oracle), its activation, then one exact-curvature projected coordinate
    step (19) on every active factor.  ``Pw`` float64 (L (L-1)/2,) pair
    weights (0 off the edges); ``ows`` the oracle workspace.  ``stats``
    int64 (2,): += oracle entries visited, += samples whose greedy factor
    did not fit (capacity).
    """
    n, L = Y.shape
    u = np.empty(L)
    act = np.empty(L, dtype=np.int64)
    actv = np.zeros(L)
    exi = np.empty(fa.shape[1], dtype=np.int64)
    exj = np.empty(fa.shape[1], dtype=np.int64)
    zc = np.zeros(L)
    npairs = L * (L - 1) // 2
    exmask = np.zeros(npairs if not sublinear else 0, dtype=np.uint8)
    s = ostate[0]
    Qp = 1.0 + 3.0 * rho
    for i in order:
        start = indptr[i]
        end = indptr[i + 1]
        sample_scores(W, data, indices, indptr, i, u)
        m = nf[i]
        # greedy unigram factor among untouched labels (x_j = 0, A = 0 at its bound)
        gbest = 0.0
        jbest = -1
        for j in range(L):
            if tmask[i, j] == 0:
                pen, k = _label_penalty(i, j, Y, A, C, fa, fb, fv, fnu, m)
                g = u[j] + 1.0 + rho * pen
                if g > gbest:
                    gbest = g
                    jbest = j
        stats[0] += L
        # greedy pair factor among inactive ones (gradient P_f; descent iff > 0)
        qbest = -1
        pbest_a = -1
        pbest_b = -1
        if n_edges > 0:
            na = 0
            for j in range(L):
                if tmask[i, j] != 0:
                    act[na] = j
                    na += 1
            for q in range(m):
                exi[q] = fa[i, q]
                exj[q] = fb[i, q]
            if sublinear:
                best, pa, pb, nv = binary_pair_fmo(ostate, act, actv, na, exi, exj, m, ows)
                stats[0] += nv
            else:
                for q in range(m):
                    exmask[pair_id(exi[q], exj[q], L)] = 1
                # pairs inside T are all active (excluded) or off the edge set (-inf)
                best, pa, pb = dense_binary_pair_argmax(s, L, zc, exmask)
                for q in range(m):
                    exmask[pair_id(exi[q], exj[q], L)] = 0
                stats[0] += npairs
            if pa >= 0 and best > 0.0 and best > gbest:
                pbest_a = pa
                pbest_b = pb
        if pbest_a >= 0:
            if m < fa.shape[1]:
                _append_pair(i, pbest_a, pbest_b, fa, fb, fv, fnu, nf)
            else:
                stats[1] += 1
        elif jbest >= 0:
            if not _touch_label(i, jbest, E, tmask, fa, fb, fv, fnu, nf):
                stats[1] += 1
        m = nf[i]
        # coordinate steps on the active unigram factors
        for j in range(L):
            if tmask[i, j] == 0:
                continue
            pen, k = _label_penalty(i, j, Y, A, C, fa, fb, fv, fnu, m)
            g = u[j] + (1.0 - 2.0 * Y[i, j]) + rho * pen
            Q = xnorm2[i] + 2.0 * rho * k
            if Q < 1e-12:
                Q = 1e-12
            lo = 0.0 if Y[i, j] != 0 else -C
            hi = C if Y[i, j] != 0 else 0.0
            new = _clip(A[i, j] - g / Q, lo, hi)
            d = new - A[i, j]
            if d != 0.0:
                A[i, j] = new
                for p in range(start, end):
                    W[indices[p], j] += data[p] * d
                u[j] += xnorm2[i] * d
        # coordinate steps on the active pair factors
        for q in range(m):
            a = fa[i, q]
            b = fb[i, q]
            h1, h2, h3 = _constraints(i, q, Y, A, C, fa, fb, fv)
            pid = pair_id(a, b, L)
            g = Pw[pid] + rho * (max(0.0, h3 + fnu[i, q, 2]) - max(0.0, h1 + fnu[i, q, 0])
                                 - max(0.0, h2 + fnu[i, q, 1]))
            pos = Y[i, a] * Y[i, b] != 0
            lo = 0.0 if pos else -C
            hi = C if pos else 0.0
            new = _clip(fv[i, q] - g / Qp, lo, hi)
            d = new - fv[i, q]
            if d != 0.0:
                fv[i, q] = new
                Pw[pid] += d
                _set_pair_score(ostate, sublinear, L, a, b, d)


@nb.njit(cache=True)
def gdmm_multilabel_multipliers(Y, A, C, eta, fa, fb, fv, fnu, nf):
    """Multiplier step ``nu <- max(0, nu + eta h)`` on every active factor.

    Returns the squared constraint violation ``sum max(0, h)^2`` before the
    step, over the whole problem (inactive factors satisfy their constraints
    exactly, see the module docstring).
    """
    res = 0.0
    for i in range(Y.shape[0]):
        for q in range(nf[i]):
            h1, h2, h3 = _constraints(i, q, Y, A, C, fa, fb, fv)
            for c, h in ((0, h1), (1, h2), (2, h3)):
                if h > 0.0:
                    res += h * h
                fnu[i, q, c] = max(0.0, fnu[i, q, c] + eta * h)
    return res


@nb.njit(cache=True)
def gdmm_multilabel_dual(W, Pw, Y, A, C, fa, fb, fv, nf, Pfeas):
    """Dual value ``-D`` at a feasible point repaired from the iterate.

    The unigram duals are kept (their boxes make ``x`` a valid vertex
    marginal); each active pair's ``z`` is clipped into
    ``[max(0, x_a + x_b - 1), min(x_a, x_b)]``; inactive pairs already
    satisfy it.  Weak duality then makes ``-D`` a lower bound on the optimal
    (LP-relaxed) primal value.  ``Pfeas`` float64 scratch like ``Pw``.
    """
    n, L = Y.shape
    for p in range(Pw.shape[0]):
        Pfeas[p] = Pw[p]
    lin = 0.0
    for i in range(n):
        for j in range(L):
            lin += (1.0 - 2.0 * Y[i, j]) * A[i, j]
        for q in range(nf[i]):
            a = fa[i, q]
            b = fb[i, q]
            yf = Y[i, a] * Y[i, b]
            xa = Y[i, a] - A[i, a] / C
            xb = Y[i, b] - A[i, b] / C
            z = yf - fv[i, q] / C
            z2 = _clip(z, max(0.0, xa + xb - 1.0), min(xa, xb))
            if z2 != z:
                Pfeas[pair_id(a, b, L)] += C * (yf - z2) - fv[i, q]
    reg = 0.0
    for f in range(W.shape[0]):
        for j in range(L):
            reg += W[f, j] * W[f, j]
    for p in range(Pfeas.shape[0]):
        reg += Pfeas[p] * Pfeas[p]
    return -(0.5 * reg + lin)


@nb.njit(cache=True)
def lp_hinge_bound(W, Pw, E, data, indices, indptr, Y, C, rho, A, tmask, fa, fb, fnu, nf, out):
    """Upper bound on each sample's LP-relaxed hinge loss (``out`` float64 (n,)).

    Lagrangian relaxation of the loss-augmented LP
    ``max u.x + P.z`` over ``z <= x_a, z <= x_b, x_a + x_b - 1 <= z``,
    ``x, z`` in [0, 1]: for any multipliers ``mu >= 0``,

    ``sum_f mu3_f + sum_j max(0, u_j + sum_f (mu_f,side(j) - mu3_f))
    + sum_f max(0, P_f - mu1_f - mu2_f + mu3_f)``

    bounds the LP value.  Active factors use ``mu = rho nu``; an inactive
    edge with ``P_f > 0`` moves ``P_f`` onto the multiplier of an untouched
    endpoint (``x = 0`` there), the one with the smaller reduced score when
    both are untouched.  Valid whatever the multipliers; tight when they are
    optimal.  Cost O(nnz L + L^2) per sample.
    """
    n, L = Y.shape
    acc = np.empty(L)
    act = np.zeros((L, L), dtype=np.uint8)
    for i in range(n):
        sample_scores(W, data, indices, indptr, i, acc)
        truth = 0.0
        for j in range(L):
            if Y[i, j] != 0:
                truth += acc[j] - 1.0
            acc[j] += 1.0 - 2.0 * Y[i, j]
        total = 0.0
        for q in range(nf[i]):
            a = fa[i, q]
            b = fb[i, q]
            act[a, b] = 1
            m1 = rho * fnu[i, q, 0]
            m2 = rho * fnu[i, q, 1]
            m3 = rho * fnu[i, q, 2]
            total += m3
            acc[a] += m1 - m3
            acc[b] += m2 - m3
            total += max(0.0, Pw[pair_id(a, b, L)] - m1 - m2 + m3)
        for a in range(L):
            for b in range(a + 1, L):
                if E[a, b] == 0:
                    continue
                pf = Pw[pair_id(a, b, L)]
                if Y[i, a] != 0 and Y[i, b] != 0:
                    truth += pf
                if act[a, b] != 0 or pf <= 0.0:
                    continue
                # an inactive edge has an untouched endpoint (T x T edges are active)
                if tmask[i, a] != 0:
                    acc[b] += pf
                elif tmask[i, b] != 0:
                    acc[a] += pf
                elif acc[a] <= acc[b]:
                    acc[a] += pf
                else:
                    acc[b] += pf
        for j in range(L):
            if acc[j] > 0.0:
                total += acc[j]
        out[i] = total - truth
        for q in range(nf[i]):
            act[fa[i, q], fb[i, q]] = 0
