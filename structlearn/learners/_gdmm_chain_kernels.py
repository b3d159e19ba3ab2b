"""Numba kernels of GDMM with a BCFW inner loop for linear chains.

Dual-decomposed structural SVM (GDMM structural-SVM paper, eqs. 10-13 and
Algorithm 4): every token ``j`` is a unigram factor with dual ``alpha_j``
over the ``K`` labels, every pair of consecutive tokens ``(j, j + 1)`` a
bigram factor (edge ``j``) with dual ``beta_j`` over ``K x K`` label pairs,
both in the shifted simplex of eq. 11 (ground truth in ``[0, C]``, other
entries in ``[-C, 0]``, sum 0).  The weights are maintained as
``W = sum_j x_j (x) alpha_j`` and ``v = sum_j beta_j`` (shared table).
Consistency ``M beta_j = alpha`` on both endpoints is enforced by the
augmented Lagrangian (penalty ``rho``) with scaled multipliers ``lam``
(step ``eta``).

Sparse layout (all dense 2-D arrays with a per-row count):

* token slots: ``slab[j, :ns[j]]`` labels of token ``j`` that carry a dual
  value or a message (slot 0 is always the true label); ``alpha``,
  ``margL``/``margR`` (marginal of the left/right edge's ``beta`` on that
  label), ``lamL``/``lamR`` (multipliers of the left/right edge) share the
  slot index.  A label outside the slots has ``alpha = marg = lam = 0``, so
  sums over slots are sums over all ``K`` labels.
* edge pairs: ``pa[j, q], pb[j, q]`` labels, ``psa, psb`` their slots in
  tokens ``j`` and ``j + 1``, ``beta[j, q]``; ``nb[j]`` pairs, pair 0 is
  the true pair.

Gradients (eq. 26 in this sign convention, minimizing
``D = 1/2 ||w||^2 + delta' alpha`` plus the augmented terms)::

    unigram  y     : <W[:, y], x_j> + [y != ybar_j] - rho (mL_j(y) + mR_j(y))
    bigram   (a, b): v[a, b] + rho (mR_j(a) + mL_{j+1}(b))
    m = marg - alpha + lam      (0 for a missing edge)

Capacities are fixed per call; when a slot or pair list is full, the new
label/pair is not added and an overflow counter is raised (the caller
grows the arrays before the next pass, so no search result is lost for
more than one pass).
"""

import numba as nb
import numpy as np

from ..oracles._indicator_kernels import (
    indicator_add,
    indicator_fmo_above,
)
from ..oracles._inner_kernels import (inner_product_fmo, inner_product_fmo32,
                                      inner_product_fmo_sampled)
from ..oracles._pair_kernels import dense_pair_argmax
from ..oracles._sparse_rows_kernels import (sparse_rows_fmo, sparse_rows_listed_scores,
                                            sparse_rows_sq_sum, sparse_rows_update)
from ._ssvm_chain_kernels import projected_block_step, sq_sum_2d


@nb.njit(cache=True, inline="always")
def _find(labels, n, lab):
    for s in range(n):
        if labels[s] == lab:
            return s
    return -1


@nb.njit(cache=True, inline="always")
def _add_slot(j, lab, slab, ns, alpha, margL, margR, lamL, lamR):
    """Slot of ``lab`` in token ``j``, added if missing; -1 when full."""
    s = _find(slab[j], ns[j], lab)
    if s >= 0:
        return s
    n = ns[j]
    if n >= slab.shape[1]:
        return -1
    slab[j, n] = lab
    alpha[j, n] = 0.0
    margL[j, n] = 0.0
    margR[j, n] = 0.0
    lamL[j, n] = 0.0
    lamR[j, n] = 0.0
    ns[j] = n + 1
    return n


@nb.njit(cache=True, inline="always")
def _threshold(g, a, m, C):
    """Smallest gradient among entries that may still increase (FW pairing)."""
    thr = np.inf
    for s in range(m):
        if (s == 0 and a[s] < C) or (s > 0 and a[s] < 0.0):
            if g[s] < thr:
                thr = g[s]
    return thr


@nb.njit(cache=True, inline="always")
def _listed_scores(W, data, indices, start, end, labels, n, g):
    """``g[s] = <W[:, labels[s]], x>`` for the ``n`` listed labels, feature-outer:
    the reads of one row of ``W`` are issued together (independent loads;
    the same summation order per label as a full scan)."""
    for s in range(n):
        g[s] = 0.0
    for p in range(start, end):
        x = data[p]
        row = W[indices[p]]
        for s in range(n):
            g[s] += x * row[labels[s]]


@nb.njit(cache=True, no_cpython_wrapper=True)
def _unigram_step(j, search, data, indices, indptr, y, xnorm2, has_left, has_right, W, weights32,
                  Wsp, nu, parts, C, rho, slab, ns, alpha, margL, margR, lamL, lamR, iws, posmap,
                  scratch, stats):
    """One unigram factor's block step (``search`` False: within its slots,
    scoring only those); returns the sparse rows (a new tuple when their pool
    grew) and whether the search found a label to add.  ``Wsp`` None: the
    weights are the dense ``W``; else they are the sparse rows ``Wsp`` (exact
    search only) and ``W`` a placeholder.  ``weights32`` (dense ``W`` only, exact search): None, or
    ``(W32, acc)``: float32 weights the step scores labels with (float32
    scratch ``acc``) and updates instead of ``W``.  Compiled as its own
    kernel, not inlined into the pass: numba's inlining copies the IR block by
    block, about 1.4 s of a first fit's compilation for this step, against a
    call that costs a few percent of an OCR pass."""
    ulab, g, add_val, z, newa = scratch
    K = iws[0].shape[0]
    rows = Wsp  # as the pool grows (Wsp stays the argument: None is seen when compiling)
    gt = y[j]
    n = ns[j]
    hl = has_left[j] != 0
    hr = has_right[j] != 0
    for s in range(n):
        ms = 0.0
        if hl:
            ms += margL[j, s] - alpha[j, s] + lamL[j, s]
        if hr:
            ms += margR[j, s] - alpha[j, s] + lamR[j, s]
        add_val[s] = -rho * ms
    start = indptr[j]
    end = indptr[j + 1]
    added = False
    if not search:  # step within the slots: their scores only (parts: below)
        best = -np.inf
        ystar = -1
        scores = iws[0]
        if parts is None:
            if Wsp is not None:
                sparse_rows_listed_scores(Wsp, indices, data, start, end, slab[j], n, g, posmap)
            elif weights32 is None:
                _listed_scores(W, data, indices, start, end, slab[j], n, g)
            else:
                _listed_scores(weights32[0], data, indices, start, end, slab[j], n, g)
    elif Wsp is not None:
        best, ystar = sparse_rows_fmo(Wsp, indices, data, start, end, slab[j], add_val, n,
                                      1.0, gt, gt, iws)
        stats[0] += K
        scores = iws[0]
    elif parts is None:
        if weights32 is None:
            best, ystar = inner_product_fmo(W, indices, data, start, end, slab[j], add_val, n,
                                            1.0, gt, gt, iws)
        else:
            best, ystar = inner_product_fmo32(weights32[0], indices, data, start, end, slab[j],
                                              add_val, n, 1.0, gt, gt, weights32[1], iws)
        stats[0] += K
        scores = iws[0]
    else:
        part = parts[j]
        best, ystar = inner_product_fmo_sampled(W, indices, data, start, end, np.empty(0, np.int64),
                                                nu, part, slab[j], add_val, n, 1.0, gt, gt, iws)
        stats[0] += (part + 1) * K // nu - part * K // nu
        scores = iws[0]
    if parts is not None:
        _listed_scores(W, data, indices, start, end, slab[j], n, g)
    elif search:
        for s in range(n):
            g[s] = scores[slab[j, s]]  # the full search left all raw scores here
    for s in range(n):
        g[s] = g[s] + (1.0 if slab[j, s] != gt else 0.0) + add_val[s]
    if ystar >= 0 and _find(slab[j], n, ystar) < 0:
        if best > _threshold(g, alpha[j], n, C):
            added = True
            s = _add_slot(j, ystar, slab, ns, alpha, margL, margR, lamL, lamR)
            if s < 0:
                stats[1] += 1
            else:
                sc = scores[ystar]
                if parts is not None:  # the sampled search left no score
                    sc = 0.0
                    for p in range(start, end):
                        sc += data[p] * W[indices[p], ystar]
                g[s] = sc + 1.0
                n = ns[j]
    Q = xnorm2[j] + rho * ((1.0 if hl else 0.0) + (1.0 if hr else 0.0))
    if Q < 1e-12:
        Q = 1e-12
    projected_block_step(alpha[j], g, n, Q, C, z, newa)
    m = 0  # changed slots: labels in ulab, steps in g (no longer needed)
    for s in range(n):
        d = newa[s] - alpha[j, s]
        if d != 0.0:
            alpha[j, s] = newa[s]
            lab = slab[j, s]
            if Wsp is None:
                if weights32 is None:
                    for p in range(start, end):
                        W[indices[p], lab] += data[p] * d
                else:  # W itself is rebuilt from the duals when needed
                    W32 = weights32[0]
                    for p in range(start, end):
                        W32[indices[p], lab] += np.float32(data[p] * d)
            else:
                ulab[m] = lab
                g[m] = d
                m += 1
    if Wsp is not None and m > 0:
        rows = sparse_rows_update(rows, indices, data, start, end, ulab, g, m, posmap)
    return rows, added


@nb.njit(cache=True, no_cpython_wrapper=True)
def _bigram_step(j, search, y, v, vt, vstate, C, rho, has_left, has_right,
                 slab, ns, alpha, margL, margR, lamL, lamR,
                 pa, pb, psa, psb, beta, nb_, pws, m1d, m2d, val1, val2, g, z, newb,
                 cnt1, cnt2, stats):
    """One bigram factor's block step on edge ``j`` (``search`` False: within
    its active pairs); returns whether the search found a pair to add."""
    K = m1d.shape[0]
    k = j + 1
    n1 = ns[j]
    n2 = ns[k]
    for s in range(n1):
        val1[s] = rho * (margR[j, s] - alpha[j, s] + lamR[j, s])
    for s in range(n2):
        val2[s] = rho * (margL[k, s] - alpha[k, s] + lamL[k, s])
    # gradients of the active pairs first: a new pair is added only when it
    # beats both the pairing threshold and every active pair (otherwise the
    # argmax is already active), so the sorted search starts from that floor
    m = nb_[j]
    for q in range(m):
        g[q] = (v[pa[j, q] * K + pb[j, q]] + val1[psa[j, q]]) + val2[psb[j, q]]
    thr = _threshold(g, beta[j], m, C)
    if not search:
        best = -np.inf
        astar = -1
        bstar = -1
    elif vstate is not None:
        floor = thr
        for q in range(1, m):  # the active pairs' values in the oracle's table
            gq = (vt[pa[j, q] * K + pb[j, q]] + val1[psa[j, q]]) + val2[psb[j, q]]
            if gq > floor:
                floor = gq
        best, astar, bstar, nv = indicator_fmo_above(vstate, slab[j], val1, n1, slab[k], val2,
                                                     n2, 0.0, -1, 0.0, -1, y[j], y[k], floor, pws)
        stats[0] += nv
    else:
        for s in range(n1):
            m1d[slab[j, s]] = val1[s]
        for s in range(n2):
            m2d[slab[k, s]] = val2[s]
        best, astar, bstar = dense_pair_argmax(vt, K, K, m1d, m2d, y[j], y[k])
        for s in range(n1):
            m1d[slab[j, s]] = 0.0
        for s in range(n2):
            m2d[slab[k, s]] = 0.0
        stats[0] += K * K
    present = False
    for q in range(m):
        if pa[j, q] == astar and pb[j, q] == bstar:
            present = True
    added = astar >= 0 and not present and best > thr
    if added:
        if m >= pa.shape[1]:
            stats[2] += 1
        else:
            sa = _add_slot(j, astar, slab, ns, alpha, margL, margR, lamL, lamR)
            sb = _add_slot(k, bstar, slab, ns, alpha, margL, margR, lamL, lamR)
            if sa < 0 or sb < 0:
                stats[1] += 1
            else:
                pa[j, m] = astar
                pb[j, m] = bstar
                psa[j, m] = sa
                psb[j, m] = sb
                beta[j, m] = 0.0
                # a freshly added slot has a zero message
                g[m] = v[astar * K + bstar] + (val1[sa] if sa < n1 else 0.0) + (val2[sb] if sb < n2 else 0.0)
                m += 1
                nb_[j] = m
    # Q_f (section 5.1): 1 for ||v||^2, plus rho times the largest number of
    # active pairs sharing a label on each side (spectral norm of [M'M]_A)
    for s in range(ns[j]):
        cnt1[s] = 0
    for s in range(ns[k]):
        cnt2[s] = 0
    g1 = 0
    g2 = 0
    for q in range(m):
        cnt1[psa[j, q]] += 1
        cnt2[psb[j, q]] += 1
        if cnt1[psa[j, q]] > g1:
            g1 = cnt1[psa[j, q]]
        if cnt2[psb[j, q]] > g2:
            g2 = cnt2[psb[j, q]]
    Q = 1.0 + rho * (g1 + g2)
    projected_block_step(beta[j], g, m, Q, C, z, newb)
    for q in range(m):
        d = newb[q] - beta[j, q]
        if d != 0.0:
            beta[j, q] = newb[q]
            a = pa[j, q]
            b = pb[j, q]
            v[a * K + b] += d
            if vstate is None:
                vt[a * K + b] += d
            else:
                indicator_add(vstate, a, b, d)
            margR[j, psa[j, q]] += d
            margL[k, psb[j, q]] += d
    # drop pairs whose dual is exactly 0 after the step (the truth stays)
    cnt = 1
    for q in range(1, m):
        if beta[j, q] != 0.0:
            if cnt != q:
                pa[j, cnt] = pa[j, q]
                pb[j, cnt] = pb[j, q]
                psa[j, cnt] = psa[j, q]
                psb[j, cnt] = psb[j, q]
                beta[j, cnt] = beta[j, q]
            cnt += 1
    nb_[j] = cnt
    return added


@nb.njit(cache=True)
def gdmm_chain_pass(data, indices, indptr, y, xnorm2, has_left, has_right, W, weights32, Wsp, v,
                    vt, vstate, nu, parts, order, C, rho,
                    slab, ns, alpha, margL, margR, lamL, lamR,
                    pa, pb, psa, psb, beta, nb_, iws, posmap, pws, backoff, max_skip, stats):
    """One pass of block-coordinate Frank-Wolfe over all factors (Algorithm 4).

    ``W`` is the dense (d, K) weight matrix and ``Wsp`` None, or the
    weights are the sparse rows ``Wsp`` (:mod:`structlearn.oracles.sparse_rows`;
    exact unigram search, ``parts`` None; scratch ``posmap``: int64 (K,),
    all -1) and ``W`` a placeholder; returns the sparse rows (a new tuple
    when their pool grew).  ``weights32``: None, or (dense ``W``, ``parts``
    None) ``(W32, acc)``: float32 weights (float32 (K,) scratch ``acc``)
    that the unigram steps score with and update in place of ``W``, which
    the pass then leaves alone (:func:`weights_from_duals` rebuilds it).
    A None ``Wsp`` (or ``vstate``, ``parts``) is known when the kernel is
    compiled, and the code it rules out is not compiled.

    ``order`` lists factor ids: ``f < N`` is the unigram factor of token
    ``f``, ``f >= N`` the bigram factor (edge) ``f - N``.  ``parts[j]`` is
    the partition drawn for token ``j`` for the sampled unigram search
    (``nu > 1``); ``parts=None`` searches all labels.  ``stats`` (int64,
    3) accumulates oracle entries visited, slot overflows and pair
    overflows.  ``v`` is the flat transition table and ``vt`` the flat
    search table ``v + tau``, where ``tau`` is a fixed tie-break of order
    1e-12 (see :mod:`.gdmm_chain`); ``vstate`` is the indicator-oracle
    state over ``vt`` (``vstate[0] is vt``) for the sorted bigram search,
    or None for dense scans.  A None argument is known when the kernel is
    compiled, so the branch it rules out is not compiled at all.

    ``backoff`` (int64 (2, 2N), by factor id): visits the factor still steps
    within its active set without a search, and its current back-off; a
    search that adds nothing sets both to ``min(2 * back-off + 1,
    max_skip)``, one that adds resets both to 0 (``max_skip`` 0: always
    search).
    """
    N = y.shape[0]
    K = iws[0].shape[0]
    A = slab.shape[1]
    B = pa.shape[1]
    L = max(A, B)
    g = np.empty(L)
    z = np.empty(L)
    newa = np.empty(L)
    add_val = np.empty(A)
    val1 = np.empty(A)
    val2 = np.empty(A)
    cnt1 = np.empty(A, dtype=np.int64)
    cnt2 = np.empty(A, dtype=np.int64)
    ulab = np.empty(A, dtype=np.int64)
    m1d = np.zeros(K)
    m2d = np.zeros(K)
    # the sparse rows as their pool grows; Wsp itself stays the argument, so
    # that a None is seen when compiling and the sparse code left out
    rows = Wsp
    scratch = (ulab, g, add_val, z, newa)
    for f in order:
        search = backoff[0, f] == 0
        if not search:
            backoff[0, f] -= 1
        if f < N:
            if Wsp is None:
                _, added = _unigram_step(f, search, data, indices, indptr, y, xnorm2, has_left,
                                         has_right, W, weights32, Wsp, nu, parts, C, rho, slab,
                                         ns, alpha, margL, margR, lamL, lamR, iws, posmap,
                                         scratch, stats)
            else:
                rows, added = _unigram_step(f, search, data, indices, indptr, y, xnorm2,
                                            has_left, has_right, W, weights32, rows, nu, parts,
                                            C, rho, slab, ns, alpha, margL, margR, lamL, lamR,
                                            iws, posmap, scratch, stats)
        else:
            added = _bigram_step(f - N, search, y, v, vt, vstate, C, rho, has_left, has_right,
                                 slab, ns, alpha, margL, margR, lamL, lamR,
                                 pa, pb, psa, psb, beta, nb_, pws, m1d, m2d, val1, val2, g, z,
                                 newa, cnt1, cnt2, stats)
        if search:  # back off after a search that found nothing: 1, 3, 7, ... visits
            if added:
                backoff[1, f] = 0
            else:
                backoff[1, f] = min(2 * backoff[1, f] + 1, max_skip)
                backoff[0, f] = backoff[1, f]
    return rows


@nb.njit(cache=True)
def weights_from_duals(xt_data, xt_tokens, xt_ptr, slab, ns, alpha, W):
    """``W = sum_j x_j (x) alpha_j`` (float64 (d, K), overwritten) from the
    tokens' slot duals, one feature row at a time (the row stays in cache):
    ``xt_*`` the features by row (CSR of ``X^T``, (d, n_tokens)).
    O(d K + sum_j nnz(x_j) |slots of j|)."""
    for f in range(W.shape[0]):
        row = W[f]
        row[:] = 0.0
        for p in range(xt_ptr[f], xt_ptr[f + 1]):
            j = xt_tokens[p]
            x = xt_data[p]
            for s in range(ns[j]):
                row[slab[j, s]] += x * alpha[j, s]


@nb.njit(cache=True)
def gdmm_chain_multipliers(has_left, has_right, ns, alpha, margL, margR, lamL, lamR, eta):
    """Multiplier step (13) on every token slot; returns the squared
    consistency residual ``sum ||M beta - alpha||^2`` before the step (over
    all labels: outside the slots both sides are 0)."""
    res = 0.0
    for j in range(ns.shape[0]):
        for s in range(ns[j]):
            if has_left[j] != 0:
                r = margL[j, s] - alpha[j, s]
                res += r * r
                lamL[j, s] += eta * r
            if has_right[j] != 0:
                r = margR[j, s] - alpha[j, s]
                res += r * r
                lamR[j, s] += eta * r
    return res


@nb.njit(cache=True, inline="always")
def _marginal_support(alpha, ns, C, j, mu, sup, pos):
    """Token ``j``'s slots of positive marginal ``mu = e_gt - alpha / C``:
    ``mu[:n]``, their slots ``sup[:n]`` (increasing) and ``pos[slot]`` their
    index; returns ``n``."""
    n = np.int64(0)  # not a literal (see gdmm_chain_dual)
    for s in range(ns[j]):
        m = max((1.0 if s == 0 else 0.0) - alpha[j, s] / C, 0.0)
        if m > 0.0:
            mu[n] = m
            sup[n] = s
            pos[s] = n
            n += 1
    return n


@nb.njit(cache=True, no_cpython_wrapper=True)
def _scale_down(kept, line, nk, mu, sums, n):
    """Scale the entries ``kept[:nk]`` of each line (``line[q]`` of ``n``) whose
    sum exceeds ``mu[line]`` down to it; ``sums[:n]`` is scratch."""
    for i in range(n):
        sums[i] = 0.0
    for q in range(nk):
        sums[line[q]] += kept[q]
    for q in range(nk):
        if sums[line[q]] > mu[line[q]]:
            kept[q] *= mu[line[q]] / sums[line[q]]


@nb.njit(cache=True)
def gdmm_chain_dual(W, Wsp, K, v, y, C, has_right, slab, ns, alpha, pa, pb, psa, psb, beta, nb_,
                    vfeas):
    """Dual objective ``-D`` at a *feasible* point built from the iterate.

    The unigram duals are kept; each edge's ``beta`` is repaired to be
    consistent with both endpoints.  In marginal form the endpoints are
    ``mu = e_gt - alpha / C`` and the edge ``Mu = e_gt - beta / C``; the
    repair (i) keeps the edge's entries on labels of positive endpoint
    marginal (the support) and clears the others and any negative
    round-off, (ii) scales every row down to at most its endpoint marginal,
    then every column likewise, and (iii) gives the row and column deficits
    ``r1, r2 >= 0`` (equal totals) back by the north-west corner rule (at
    most ``n1 + n2 - 1`` entries).  The result is a coupling of ``mu1`` and
    ``mu2``, so the point satisfies every constraint of (10) and ``-D`` is a
    lower bound on the optimal primal value (weak duality) whatever the
    iterate's infeasibility; the table moves by ``O(C ||M beta - alpha||_1)``
    per edge, so the bound tightens as the consistency residual vanishes.

    Per edge O(support + active pairs): the entries of the coupling are the
    kept pairs and the corner rule's, never the support's full product
    (which, spread over ``n1 n2`` entries, also gave a slightly lower bound
    on the runs measured).

    ``W`` : the dense weights (``Wsp`` None), or a placeholder for the sparse rows ``Wsp``.
    ``vfeas`` : float64 (K * K,) scratch (receives the repaired table).
    """
    N = y.shape[0]
    A = slab.shape[1]
    B = pa.shape[1]
    for i in range(K * K):
        vfeas[i] = v[i]
    mu1 = np.empty(A)
    mu2 = np.empty(A)
    r1 = np.empty(A)
    r2 = np.empty(A)
    sup1 = np.empty(A, dtype=np.int64)
    sup2 = np.empty(A, dtype=np.int64)
    pos1 = np.empty(A, dtype=np.int64)
    pos2 = np.empty(A, dtype=np.int64)
    for s in range(A):
        pos1[s] = -1
        pos2[s] = -1
    kept = np.empty(B)  # the kept pairs' coupling entries and their support indices
    ki1 = np.empty(B, dtype=np.int64)
    ki2 = np.empty(B, dtype=np.int64)
    for j in range(N - 1):
        if has_right[j] == 0:
            continue
        k = j + 1
        n1 = _marginal_support(alpha, ns, C, j, mu1, sup1, pos1)
        n2 = _marginal_support(alpha, ns, C, k, mu2, sup2, pos2)
        # the iterate's edge dual leaves the table; the repaired one,
        # C (e_gt - coupling), enters: +C on the true pair, -C F per entry
        vfeas[slab[j, 0] * K + slab[k, 0]] += C
        nk = np.int64(0)  # not a literal: one compiled signature of _scale_down
        for q in range(nb_[j]):
            vfeas[pa[j, q] * K + pb[j, q]] -= beta[j, q]
            i1 = pos1[psa[j, q]]
            i2 = pos2[psb[j, q]]
            if i1 >= 0 and i2 >= 0:
                m = (1.0 if q == 0 else 0.0) - beta[j, q] / C
                if m > 0.0:
                    kept[nk] = m
                    ki1[nk] = i1
                    ki2[nk] = i2
                    nk += 1
        _scale_down(kept, ki1, nk, mu1, r1, n1)  # rows down to mu1,
        _scale_down(kept, ki2, nk, mu2, r2, n2)  # then columns down to mu2
        for i1 in range(n1):
            r1[i1] = 0.0
        for i2 in range(n2):
            r2[i2] = 0.0
        for q in range(nk):
            r1[ki1[q]] += kept[q]
            r2[ki2[q]] += kept[q]
            vfeas[slab[j, sup1[ki1[q]]] * K + slab[k, sup2[ki2[q]]]] -= C * kept[q]
        for i1 in range(n1):
            r1[i1] = max(mu1[i1] - r1[i1], 0.0)
        for i2 in range(n2):
            r2[i2] = max(mu2[i2] - r2[i2], 0.0)
        i1 = 0
        i2 = 0
        while i1 < n1 and i2 < n2:  # north-west corner over the deficits
            if r1[i1] <= 0.0:
                i1 += 1
            elif r2[i2] <= 0.0:
                i2 += 1
            else:
                f = min(r1[i1], r2[i2])
                vfeas[slab[j, sup1[i1]] * K + slab[k, sup2[i2]]] -= C * f
                r1[i1] -= f
                r2[i2] -= f
        for i1 in range(n1):
            pos1[sup1[i1]] = -1
        for i2 in range(n2):
            pos2[sup2[i2]] = -1
    if Wsp is None:
        reg = sq_sum_2d(W)
    else:
        reg = sparse_rows_sq_sum(Wsp)  # the dense loop's value
    for i in range(K * K):
        reg += vfeas[i] * vfeas[i]
    lin = 0.0
    for j in range(N):
        for s in range(1, ns[j]):
            lin += alpha[j, s]
    return -(0.5 * reg + lin)
