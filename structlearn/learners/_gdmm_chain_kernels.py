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

The state travels as a few named tuples (all dense 2-D arrays with a
per-row count):

* :class:`TokenSlots`: ``labels[j, :count[j]]`` are the labels of token
  ``j`` that carry a dual value or a message (slot 0 is always the true
  label); ``alpha``, ``marg_left``/``marg_right`` (marginal of the
  left/right edge's ``beta`` on that label), ``lam_left``/``lam_right``
  (multipliers of the left/right edge) share the slot index.  A label
  outside the slots has ``alpha = marg = lam = 0``, so sums over slots are
  sums over all ``K`` labels.
* :class:`EdgePairs`: ``left_label[j, q], right_label[j, q]`` labels,
  ``left_slot, right_slot`` their slots in tokens ``j`` and ``j + 1``,
  ``beta[j, q]``; ``count[j]`` pairs, pair 0 is the true pair.
* :class:`ChainData` (the features and chain structure),
  :class:`ChainWeights` (``W``, the transition table and its search copy),
  :class:`PassSettings` and :class:`PassWorkspace`.

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

from typing import NamedTuple

import numba as nb
import numpy as np

from .._borrowing import borrowing_kernel
from ._damping import squared_distance, squared_norm
from ..oracles._indicator_kernels import (
    indicator_add,
    indicator_build,
    indicator_fmo_above,
    indicator_update,
)
from ..oracles._inner_kernels import (inner_product_fmo, inner_product_fmo32,
                                      inner_product_fmo_sampled)
from ..oracles._pair_kernels import dense_pair_argmax
from ..oracles._sparse_rows_kernels import (sparse_rows_fmo, sparse_rows_listed_scores,
                                            sparse_rows_sq_sum, sparse_rows_update)
from ._ssvm_chain_kernels import projected_block_step, sq_sum_2d


class ChainData(NamedTuple):
    """The training chains as the pass reads them.

    Attributes
    ----------
    data, indices, indptr : float64, int64, int64
        CSR token features (N rows).
    y : int64 (N,)
        True labels.
    xnorm2 : float64 (N,)
        Squared feature norms.
    has_left, has_right : int8 (N,)
        Whether token ``j`` has an edge to its left / right.
    step_data : float64 (nnz,)
        The feature values the weights move by: ``data`` itself for a pass
        over all the samples.  A partitioned pass (:mod:`._partitions`)
        scales each by its feature's ``sigma`` (the partitions that use the
        feature), and ``xnorm2`` is then ``sum_f sigma_f x_f^2``, the
        curvature of the partition's weight copy.
    """

    data: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray
    y: np.ndarray
    xnorm2: np.ndarray
    has_left: np.ndarray
    has_right: np.ndarray
    step_data: np.ndarray


class TokenSlots(NamedTuple):
    """Unigram duals, edge marginals and multipliers on each token's slots.

    Attributes
    ----------
    labels : int64 (N, A)
    count : int64 (N,)
    alpha, marg_left, marg_right, lam_left, lam_right : float64 (N, A)
    """

    labels: np.ndarray
    count: np.ndarray
    alpha: np.ndarray
    marg_left: np.ndarray
    marg_right: np.ndarray
    lam_left: np.ndarray
    lam_right: np.ndarray


class EdgePairs(NamedTuple):
    """Bigram duals on each edge's active label pairs.

    Attributes
    ----------
    left_label, right_label : int64 (N, B)
    left_slot, right_slot : int64 (N, B)
        The pair's slots in tokens ``j`` and ``j + 1``.
    beta : float64 (N, B)
    count : int64 (N,)
    """

    left_label: np.ndarray
    right_label: np.ndarray
    left_slot: np.ndarray
    right_slot: np.ndarray
    beta: np.ndarray
    count: np.ndarray


class ChainWeights(NamedTuple):
    """The weights the steps read and update.

    Attributes
    ----------
    dense : float64 (d, K)
        ``W``; a (0, K) placeholder when the weights are sparse rows.
    transitions : float64 (K * K,)
        The flat transition table ``v``.
    search_table : float64 (K * K,)
        ``v + tau`` (the tie-broken copy the bigram search reads; the
        indicator oracle's table when it is used).
    """

    dense: np.ndarray
    transitions: np.ndarray
    search_table: np.ndarray


class PassSettings(NamedTuple):
    """Scalars of a pass: ``C``, ``rho``, the unigram search's partitions
    ``n_partitions`` (nu of eq. 21), the search back-off cap ``max_skip``
    and the scale ``transition_sigma`` of the transition table's moves and
    curvature (1 for a pass over all the samples; see
    :class:`ChainData` ``step_data`` for the unigram side and
    :mod:`._partitions` for partitioned passes).
    """

    C: float
    rho: float
    n_partitions: int
    max_skip: int
    transition_sigma: float = 1.0


class PassWorkspace(NamedTuple):
    """Scratch and counters of a pass.

    Attributes
    ----------
    inner : tuple
        The inner-product oracle's workspace (``inner[0]``: (K,) scores).
    pair : tuple
        The sorted pair oracle's workspace.
    posmap : int64 (K,)
        Sparse-rows scratch (all -1).
    backoff : int64 (2, 2N)
        Per factor id: visits left without a search, and the back-off.
    stats : int64 (3,)
        Oracle entries visited, slot overflows, pair overflows (added to).
    """

    inner: tuple
    pair: tuple
    posmap: np.ndarray
    backoff: np.ndarray
    stats: np.ndarray


@nb.njit(cache=True, inline="always")
def _find(labels, n, lab):
    for s in range(n):
        if labels[s] == lab:
            return s
    return -1


@nb.njit(cache=True, inline="always")
def _add_slot(slots, j, lab):
    """Slot of ``lab`` in token ``j``, added if missing; -1 when full."""
    s = _find(slots.labels[j], slots.count[j], lab)
    if s >= 0:
        return s
    n = slots.count[j]
    if n >= slots.labels.shape[1]:
        return -1
    slots.labels[j, n] = lab
    slots.alpha[j, n] = 0.0
    slots.marg_left[j, n] = 0.0
    slots.marg_right[j, n] = 0.0
    slots.lam_left[j, n] = 0.0
    slots.lam_right[j, n] = 0.0
    slots.count[j] = n + 1
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


@borrowing_kernel
def _unigram_step(j, search, chain, slots, weights, settings, work, scratch, parts, Wsp,
                  weights32):
    """One unigram factor's block step (``search`` False: within its slots,
    scoring only those); returns how many labels' duals moved (sparse rows
    only: their labels and steps are left in ``changed_labels`` and ``g`` of
    ``scratch`` for the pass to add to the rows, which may grow their pool;
    0 with dense weights, which the step updates itself) and whether the
    search found a label to add.

    ``chain``, ``slots``, ``weights``, ``settings``, ``work``: the pass's
    named tuples; ``scratch``: ``(changed_labels, g, add_val, z, new_alpha,
    no_offsets)`` (``no_offsets`` int64 (0,)).
    ``parts``: None (exact search), or the partition drawn per token for the
    sampled search.  ``Wsp`` None: the weights are the dense
    ``weights.dense``; else they are the sparse rows ``Wsp`` (exact search
    only) and ``weights.dense`` a placeholder.  ``weights32`` (dense weights
    only, exact search): None, or ``(W32, acc)``: float32 weights the step
    scores labels with (float32 scratch ``acc``) and updates instead of
    ``W``.  Compiled as its own kernel, not inlined into the pass: numba's
    inlining copies the IR block by block, about 1.4 s of a first fit's
    compilation for this step, against a call that costs a few percent of
    an OCR pass."""
    changed_labels, g, add_val, z, new_alpha, no_offsets = scratch
    data, indices, step_data = chain.data, chain.indices, chain.step_data
    W = weights.dense
    C, rho = settings.C, settings.rho
    labels = slots.labels[j]
    alpha = slots.alpha[j]
    inner = work.inner
    stats = work.stats
    K = inner[0].shape[0]
    gt = chain.y[j]
    n = slots.count[j]
    hl = chain.has_left[j] != 0
    hr = chain.has_right[j] != 0
    for s in range(n):
        ms = 0.0
        if hl:
            ms += slots.marg_left[j, s] - alpha[s] + slots.lam_left[j, s]
        if hr:
            ms += slots.marg_right[j, s] - alpha[s] + slots.lam_right[j, s]
        add_val[s] = -rho * ms
    start = chain.indptr[j]
    end = chain.indptr[j + 1]
    added = False
    if not search:  # step within the slots: their scores only (parts: below)
        best = -np.inf
        ystar = -1
        scores = inner[0]
        if parts is None:
            if Wsp is not None:
                sparse_rows_listed_scores(Wsp, indices, data, start, end, labels, n, g,
                                          work.posmap)
            elif weights32 is None:
                _listed_scores(W, data, indices, start, end, labels, n, g)
            else:
                _listed_scores(weights32[0], data, indices, start, end, labels, n, g)
    elif Wsp is not None:
        best, ystar = sparse_rows_fmo(Wsp, indices, data, start, end, labels, add_val, n,
                                      1.0, gt, gt, inner)
        stats[0] += K
        scores = inner[0]
    elif parts is None:
        if weights32 is None:
            best, ystar = inner_product_fmo(W, indices, data, start, end, labels, add_val, n,
                                            1.0, gt, gt, inner)
        else:
            best, ystar = inner_product_fmo32(weights32[0], indices, data, start, end, labels,
                                              add_val, n, 1.0, gt, gt, weights32[1], inner)
        stats[0] += K
        scores = inner[0]
    else:
        nu = settings.n_partitions
        part = parts[j]
        best, ystar = inner_product_fmo_sampled(W, indices, data, start, end, no_offsets,
                                                nu, part, labels, add_val, n, 1.0, gt, gt, inner)
        stats[0] += (part + 1) * K // nu - part * K // nu
        scores = inner[0]
    if parts is not None:
        _listed_scores(W, data, indices, start, end, labels, n, g)
    elif search:
        for s in range(n):
            g[s] = scores[labels[s]]  # the full search left all raw scores here
    for s in range(n):
        g[s] = g[s] + (1.0 if labels[s] != gt else 0.0) + add_val[s]
    if ystar >= 0 and _find(labels, n, ystar) < 0:
        if best > _threshold(g, alpha, n, C):
            added = True
            s = _add_slot(slots, j, ystar)
            if s < 0:
                stats[1] += 1
            else:
                sc = scores[ystar]
                if parts is not None:  # the sampled search left no score
                    sc = 0.0
                    for p in range(start, end):
                        sc += data[p] * W[indices[p], ystar]
                g[s] = sc + 1.0
                n = slots.count[j]
    Q = chain.xnorm2[j] + rho * ((1.0 if hl else 0.0) + (1.0 if hr else 0.0))
    if Q < 1e-12:
        Q = 1e-12
    projected_block_step(alpha, g, n, Q, C, z, new_alpha)
    m = 0  # changed slots: labels in changed_labels, steps in g (no longer needed)
    for s in range(n):
        d = new_alpha[s] - alpha[s]
        if d != 0.0:
            alpha[s] = new_alpha[s]
            lab = labels[s]
            if Wsp is None:
                if weights32 is None:
                    for p in range(start, end):
                        W[indices[p], lab] += step_data[p] * d
                else:  # W itself is rebuilt from the duals when needed
                    W32 = weights32[0]
                    for p in range(start, end):
                        W32[indices[p], lab] += np.float32(step_data[p] * d)
            else:
                changed_labels[m] = lab
                g[m] = d
                m += 1
    return m, added


@borrowing_kernel
def _bigram_step(j, search, chain, slots, pairs, weights, settings, work, scratch, vstate):
    """One bigram factor's block step on edge ``j`` (``search`` False: within
    its active pairs); returns whether the search found a pair to add.

    ``scratch``: ``(m1d, m2d, val1, val2, g, z, new_beta, cnt1, cnt2)``
    (``m1d``, ``m2d`` float64 (K,) all 0).  ``vstate``: the indicator
    oracle's state over ``weights.search_table`` (sorted search), or None
    (dense scans)."""
    m1d, m2d, val1, val2, g, z, new_beta, cnt1, cnt2 = scratch
    C, rho = settings.C, settings.rho
    v = weights.transitions
    vt = weights.search_table
    stats = work.stats
    left_label, right_label = pairs.left_label, pairs.right_label
    left_slot, right_slot = pairs.left_slot, pairs.right_slot
    beta = pairs.beta
    K = m1d.shape[0]
    k = j + 1
    n1 = slots.count[j]
    n2 = slots.count[k]
    for s in range(n1):
        val1[s] = rho * (slots.marg_right[j, s] - slots.alpha[j, s] + slots.lam_right[j, s])
    for s in range(n2):
        val2[s] = rho * (slots.marg_left[k, s] - slots.alpha[k, s] + slots.lam_left[k, s])
    # gradients of the active pairs first: a new pair is added only when it
    # beats both the pairing threshold and every active pair (otherwise the
    # argmax is already active), so the sorted search starts from that floor
    m = pairs.count[j]
    for q in range(m):
        g[q] = (v[left_label[j, q] * K + right_label[j, q]] + val1[left_slot[j, q]]) + val2[
            right_slot[j, q]]
    thr = _threshold(g, beta[j], m, C)
    if not search:
        best = -np.inf
        astar = -1
        bstar = -1
    elif vstate is not None:
        floor = thr
        for q in range(1, m):  # the active pairs' values in the oracle's table
            gq = (vt[left_label[j, q] * K + right_label[j, q]] + val1[left_slot[j, q]]) + val2[
                right_slot[j, q]]
            if gq > floor:
                floor = gq
        best, astar, bstar, nv = indicator_fmo_above(vstate, slots.labels[j], val1, n1,
                                                     slots.labels[k], val2, n2, 0.0, -1, 0.0,
                                                     -1, chain.y[j], chain.y[k], floor,
                                                     work.pair)
        stats[0] += nv
    else:
        for s in range(n1):
            m1d[slots.labels[j, s]] = val1[s]
        for s in range(n2):
            m2d[slots.labels[k, s]] = val2[s]
        best, astar, bstar = dense_pair_argmax(vt, K, K, m1d, m2d, chain.y[j], chain.y[k])
        for s in range(n1):
            m1d[slots.labels[j, s]] = 0.0
        for s in range(n2):
            m2d[slots.labels[k, s]] = 0.0
        stats[0] += K * K
    present = False
    for q in range(m):
        if left_label[j, q] == astar and right_label[j, q] == bstar:
            present = True
    added = astar >= 0 and not present and best > thr
    if added:
        if m >= left_label.shape[1]:
            stats[2] += 1
        else:
            sa = _add_slot(slots, j, astar)
            sb = _add_slot(slots, k, bstar)
            if sa < 0 or sb < 0:
                stats[1] += 1
            else:
                left_label[j, m] = astar
                right_label[j, m] = bstar
                left_slot[j, m] = sa
                right_slot[j, m] = sb
                beta[j, m] = 0.0
                # a freshly added slot has a zero message
                g[m] = v[astar * K + bstar] + (val1[sa] if sa < n1 else 0.0) + (val2[sb] if sb < n2 else 0.0)
                m += 1
                pairs.count[j] = m
    # Q_f (section 5.1): 1 for ||v||^2, plus rho times the largest number of
    # active pairs sharing a label on each side (spectral norm of [M'M]_A)
    for s in range(slots.count[j]):
        cnt1[s] = 0
    for s in range(slots.count[k]):
        cnt2[s] = 0
    g1 = 0
    g2 = 0
    for q in range(m):
        cnt1[left_slot[j, q]] += 1
        cnt2[right_slot[j, q]] += 1
        if cnt1[left_slot[j, q]] > g1:
            g1 = cnt1[left_slot[j, q]]
        if cnt2[right_slot[j, q]] > g2:
            g2 = cnt2[right_slot[j, q]]
    sigma = settings.transition_sigma
    Q = sigma + rho * (g1 + g2)
    projected_block_step(beta[j], g, m, Q, C, z, new_beta)
    for q in range(m):
        d = new_beta[q] - beta[j, q]
        if d != 0.0:
            beta[j, q] = new_beta[q]
            a = left_label[j, q]
            b = right_label[j, q]
            dv = d * sigma
            v[a * K + b] += dv
            if vstate is None:
                vt[a * K + b] += dv
            else:
                indicator_add(vstate, a, b, dv)
            slots.marg_right[j, left_slot[j, q]] += d
            slots.marg_left[k, right_slot[j, q]] += d
    # drop pairs whose dual is exactly 0 after the step (the truth stays)
    cnt = 1
    for q in range(1, m):
        if beta[j, q] != 0.0:
            if cnt != q:
                left_label[j, cnt] = left_label[j, q]
                right_label[j, cnt] = right_label[j, q]
                left_slot[j, cnt] = left_slot[j, q]
                right_slot[j, cnt] = right_slot[j, q]
                beta[j, cnt] = beta[j, q]
            cnt += 1
    pairs.count[j] = cnt
    return added


@nb.njit(cache=True, nogil=True)
def gdmm_chain_pass(chain, slots, pairs, weights, settings, work, order, parts, Wsp, weights32,
                    vstate):
    """One pass of block-coordinate Frank-Wolfe over all factors (Algorithm 4).

    Parameters
    ----------
    chain : ChainData
    slots : TokenSlots
    pairs : EdgePairs
    weights : ChainWeights
    settings : PassSettings
    work : PassWorkspace
    order : int64 (n_factors,)
        Factor ids: ``f < N`` is the unigram factor of token ``f``, ``f >=
        N`` the bigram factor (edge) ``f - N``.
    parts : int64 (N,) or None
        The partition drawn for each token for the sampled unigram search
        (``settings.n_partitions > 1``); None searches all labels.
    Wsp : sparse rows or None
        None: the weights are ``weights.dense`` (d, K).  Else the weights
        are these sparse rows (:mod:`structlearn.oracles.sparse_rows`; exact
        unigram search, ``parts`` None; ``work.posmap`` all -1) and
        ``weights.dense`` a placeholder.
    weights32 : tuple or None
        None, or (dense weights, ``parts`` None) ``(W32, acc)``: float32
        weights (float32 (K,) scratch ``acc``) that the unigram steps score
        with and update in place of ``W``, which the pass then leaves alone
        (:func:`weights_from_duals` rebuilds it).
    vstate : tuple or None
        The indicator-oracle state over ``weights.search_table`` for the
        sorted bigram search, or None for dense scans.

    Returns
    -------
    The sparse rows (a new tuple when their pool grew), or None.

    A None ``Wsp`` (or ``vstate``, ``parts``, ``weights32``) is known when
    the kernel is compiled, and the code it rules out is not compiled.
    ``weights.search_table`` is ``v + tau``, ``tau`` a fixed tie-break of
    order 1e-12 (see :mod:`._gdmm_chain_visits`).  ``work.backoff`` (by factor
    id): visits the factor still steps within its active set without a
    search, and its current back-off; a search that adds nothing sets both
    to ``min(2 * back-off + 1, settings.max_skip)``, one that adds resets
    both to 0 (``max_skip`` 0: always search).
    """
    N = chain.y.shape[0]
    K = work.inner[0].shape[0]
    A = slots.labels.shape[1]
    B = pairs.left_label.shape[1]
    L = max(A, B)
    g = np.empty(L)
    z = np.empty(L)
    new_val = np.empty(L)
    unigram_scratch = (np.empty(A, dtype=np.int64), g, np.empty(A), z, new_val,
                       np.empty(0, dtype=np.int64))
    bigram_scratch = (np.zeros(K), np.zeros(K), np.empty(A), np.empty(A), g, z, new_val,
                      np.empty(A, dtype=np.int64), np.empty(A, dtype=np.int64))
    backoff = work.backoff
    # the sparse rows as their pool grows; Wsp itself stays the argument, so
    # that a None is seen when compiling and the sparse code left out
    rows = Wsp
    for f in order:
        search = backoff[0, f] == 0
        if not search:
            backoff[0, f] -= 1
        if f < N:
            if Wsp is None:
                _, added = _unigram_step(f, search, chain, slots, weights, settings, work,
                                         unigram_scratch, parts, Wsp, weights32)
            else:
                moved, added = _unigram_step(f, search, chain, slots, weights, settings, work,
                                             unigram_scratch, parts, rows, weights32)
                if moved > 0:  # may grow the rows' pool: a new tuple
                    rows = sparse_rows_update(rows, chain.indices, chain.step_data,
                                              chain.indptr[f], chain.indptr[f + 1],
                                              unigram_scratch[0], g, moved, work.posmap)
        else:
            added = _bigram_step(f - N, search, chain, slots, pairs, weights, settings, work,
                                 bigram_scratch, vstate)
        if search:  # back off after a search that found nothing: 1, 3, 7, ... visits
            if added:
                backoff[1, f] = 0
            else:
                backoff[1, f] = min(2 * backoff[1, f] + 1, settings.max_skip)
                backoff[0, f] = backoff[1, f]
    return rows


@nb.njit(cache=True, nogil=True)
def weights_from_duals(xt_data, xt_tokens, xt_ptr, slots, W):
    """``W = sum_j x_j (x) alpha_j`` (float64 (d, K), overwritten) from the
    tokens' slot duals (:class:`TokenSlots`), one feature row at a time (the
    row stays in cache): ``xt_*`` the features by row (CSR of ``X^T``, (d,
    n_tokens)).  O(d K + sum_j nnz(x_j) |slots of j|)."""
    labels, count, alpha = slots.labels, slots.count, slots.alpha
    for f in range(W.shape[0]):
        row = W[f]
        row[:] = 0.0
        for p in range(xt_ptr[f], xt_ptr[f + 1]):
            j = xt_tokens[p]
            x = xt_data[p]
            for s in range(count[j]):
                row[labels[j, s]] += x * alpha[j, s]


@nb.njit(cache=True, nogil=True)
def transitions_from_duals(pairs, has_right, v):
    """``v = sum_j beta_j`` (float64 (K * K,), overwritten) over the edges
    ``j`` with ``has_right[j]``, from their active pairs (:class:`EdgePairs`)."""
    K2 = v.shape[0]
    K = np.int64(np.sqrt(K2) + 0.5)
    v[:] = 0.0
    for j in range(has_right.shape[0]):
        if has_right[j] == 0:
            continue
        for q in range(pairs.count[j]):
            v[pairs.left_label[j, q] * K + pairs.right_label[j, q]] += pairs.beta[j, q]


@nb.njit(cache=True, nogil=True)
def refresh_transitions(v, tau, local_v, local_search, vstate, rebuild_above):
    """Bring a partition's transition table ``local_v`` and its search table
    back to the merged ``v``: every entry that differs is set to ``v`` (the
    search table to ``v + tau``, through the indicator oracle's state
    ``vstate`` when it is not None, else in ``local_search``); returns how
    many entries changed.  All float64 (K * K,).  Where more than
    ``rebuild_above`` entries changed, the indicator oracle's summaries are
    built anew from the table rather than updated entry by entry; its
    searches return the same entries either way."""
    n = v.shape[0]
    K = np.int64(np.sqrt(n) + 0.5)
    changed = 0
    if vstate is not None:  # counted first: built anew, or updated below
        for i in range(n):
            if local_v[i] != v[i]:
                changed += 1
        if changed > rebuild_above:
            table = vstate[0]
            for i in range(n):
                if local_v[i] != v[i]:  # (the same table as the updates leave)
                    local_v[i] = v[i]
                    table[i] = v[i] + tau[i]
            indicator_build(vstate)
            return changed
        changed = 0
    for i in range(n):
        if local_v[i] != v[i]:
            local_v[i] = v[i]
            if vstate is None:
                local_search[i] = v[i] + tau[i]
            else:
                indicator_update(vstate, i // K, i % K, v[i] + tau[i])
            changed += 1
    return changed


@nb.njit(cache=True, nogil=True)
def gather_rows(W, rows, out):
    """``out[r] = W[rows[r]]`` (cast to ``out``'s dtype): a partition's copy
    of the weight rows its features touch."""
    for r in range(rows.shape[0]):
        src = W[rows[r]]
        dst = out[r]
        for k in range(src.shape[0]):
            dst[k] = src[k]


@nb.njit(cache=True, nogil=True)
def rows_to_moves(W, rows, local, row_sigma):
    """Turn a partition's weight copy into its undamped move, in place:
    ``local[r] = (local[r] - W[rows[r]]) / row_sigma[r]`` (``W`` read as the
    copy's dtype, as :func:`gather_rows` wrote it at the round's start)."""
    for r in range(rows.shape[0]):
        src = W[rows[r]]
        dst = local[r]
        s = row_sigma[r]
        for k in range(src.shape[0]):
            end = dst[k]
            dst[k] = src[k]  # the start, cast as the gather cast it
            dst[k] = (end - dst[k]) / s


@nb.njit(cache=True, nogil=True)
def add_row_moves(W, rows, moves, first, stop):
    """``W[rows[r]] += moves[r]`` for ``first <= r < stop``."""
    for r in range(first, stop):
        dst = W[rows[r]]
        src = moves[r]
        for k in range(dst.shape[0]):
            dst[k] += src[k]


@nb.njit(cache=True, nogil=True)
def merge_copies(W, rows, sigma, offsets, copies, f0, f1, block, norms):
    """Merge the partitions' copies into the rows ``f0:f1`` of ``W`` and bring
    the copies back to the merged rows, in blocks of ``block`` rows that stay
    in cache.

    Each partition's row ``r`` in the range becomes its undamped move
    ``(copy - W[rows[r]]) / sigma[r]`` (``W`` before the merge, cast to the
    copy's dtype as :func:`gather_rows` cast it); the moves are added to
    ``W`` in partition order; then every copy's row is set to the merged
    ``W`` row (cast).  The
    same arithmetic as :func:`rows_to_moves`, :func:`add_row_moves` and
    :func:`gather_rows` in turn, with each row read and written once.

    Parameters
    ----------
    W : float64 (d, K)
    rows : int64 (sum d_p,)
        Each partition's global rows (increasing), concatenated.
    sigma : float64 (sum d_p,)
        Each row's damping (the partitions using its feature).
    offsets : int64 (P + 1,)
        Partition ``p`` holds ``rows[offsets[p]:offsets[p + 1]]``.
    copies : (sum d_p, K)
        The partitions' copies of their rows, concatenated (overwritten).
    f0, f1 : int
        The global row range.
    block : int
        Global rows per block.
    norms : float64 (2,)
        ``[||sum_p move_p||^2, sum_p ||move_p||^2]`` over the range, added
        to (:class:`._damping.MeasuredDamping`).
    """
    P = offsets.shape[0] - 1
    cur = np.empty(P, dtype=np.int64)
    end = np.empty(P, dtype=np.int64)
    for p in range(P):
        seg = rows[offsets[p]:offsets[p + 1]]
        cur[p] = offsets[p] + np.searchsorted(seg, f0)
        end[p] = offsets[p] + np.searchsorted(seg, f1)
    first = np.empty(P, dtype=np.int64)
    before = np.empty((min(block, max(f1 - f0, 0)), W.shape[1]))
    merged = spread = 0.0
    for g in range(f0, f1, block):
        stop = min(g + block, f1)
        for p in range(P):  # the moves, against the rows before any is added
            first[p] = cur[p]
            while cur[p] < end[p] and rows[cur[p]] < stop:
                i = cur[p]
                start = W[rows[i]]
                c = copies[i]
                s = sigma[i]
                for k in range(start.shape[0]):
                    moved = c[k]
                    c[k] = start[k]  # cast as the gather cast it
                    c[k] = (moved - c[k]) / s
                spread += squared_norm(c)
                cur[p] += 1
        before[:stop - g] = W[g:stop]
        for p in range(P):
            for i in range(first[p], cur[p]):
                dst = W[rows[i]]
                c = copies[i]
                for k in range(dst.shape[0]):
                    dst[k] += c[k]
        for r in range(stop - g):
            merged += squared_distance(W[g + r], before[r])
        for p in range(P):
            for i in range(first[p], cur[p]):
                src = W[rows[i]]
                c = copies[i]
                for k in range(src.shape[0]):
                    c[k] = src[k]
    norms[0] += merged
    norms[1] += spread


@nb.njit(cache=True, inline="always")
def _token_multipliers(chain, slots, eta, j, res):
    """Multiplier step (13) on token ``j``'s slots; returns ``res`` plus its
    squared consistency residual before the step."""
    alpha = slots.alpha
    for s in range(slots.count[j]):
        if chain.has_left[j] != 0:
            r = slots.marg_left[j, s] - alpha[j, s]
            res += r * r
            slots.lam_left[j, s] += eta * r
        if chain.has_right[j] != 0:
            r = slots.marg_right[j, s] - alpha[j, s]
            res += r * r
            slots.lam_right[j, s] += eta * r
    return res


@nb.njit(cache=True, nogil=True)
def gdmm_chain_multipliers(chain, slots, eta):
    """Multiplier step (13) on every token slot; returns the squared
    consistency residual ``sum ||M beta - alpha||^2`` before the step (over
    all labels: outside the slots both sides are 0)."""
    res = 0.0
    for j in range(slots.count.shape[0]):
        res = _token_multipliers(chain, slots, eta, j, res)
    return res


@nb.njit(cache=True, nogil=True)
def gdmm_chain_multipliers_of(chain, slots, eta, tokens):
    """:func:`gdmm_chain_multipliers` on the slots of ``tokens`` (int64) only;
    returns their part of the residual."""
    res = 0.0
    for j in tokens:
        res = _token_multipliers(chain, slots, eta, j, res)
    return res


@nb.njit(cache=True, inline="always")
def _marginal_support(alpha, n_slots, C, j, mu, sup, pos):
    """Token ``j``'s slots of positive marginal ``mu = e_gt - alpha / C``:
    ``mu[:n]``, their slots ``sup[:n]`` (increasing) and ``pos[slot]`` their
    index; returns ``n``."""
    n = np.int64(0)  # not a literal (see gdmm_chain_dual)
    for s in range(n_slots[j]):
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
def gdmm_chain_dual(weights, Wsp, chain, slots, pairs, C, vfeas):
    """Dual objective ``-D`` at a *feasible* point built from the iterate:
    :func:`repair_transitions`, then :func:`dual_from_repair`.

    ``weights``: :class:`ChainWeights` (``dense`` the weights when ``Wsp`` is
    None, else a placeholder for the sparse rows ``Wsp``); ``chain``,
    ``slots``, ``pairs``: the pass's state; ``vfeas``: float64 (K * K,)
    scratch (receives the repaired table).
    """
    lin = repair_transitions(weights.transitions, chain, slots, pairs, C, vfeas)
    return dual_from_repair(weights.dense, Wsp, vfeas, lin)


@nb.njit(cache=True, nogil=True)
def dual_from_repair(W, Wsp, vfeas, lin):
    """``-(0.5 (||W||^2 + ||vfeas||^2) + lin)``: the dual value from the
    weights (dense ``W``, or the sparse rows ``Wsp``) and
    :func:`repair_transitions`' table and linear term."""
    if Wsp is None:
        reg = sq_sum_2d(W)
    else:
        reg = sparse_rows_sq_sum(Wsp)  # the dense loop's value
    for i in range(vfeas.shape[0]):
        reg += vfeas[i] * vfeas[i]
    return -(0.5 * reg + lin)


@nb.njit(cache=True, nogil=True)
def repair_transitions(v, chain, slots, pairs, C, vfeas):
    """The transitions of the *feasible* dual point built from the iterate.

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

    Writes the repaired table (``v``: float64 (K * K,) the transitions) into
    ``vfeas`` and returns the linear term (the wrong-label slots' duals);
    reads neither weights (it may run while they are rebuilt).
    """
    K = np.int64(np.sqrt(v.shape[0]) + 0.5)
    has_right = chain.has_right
    slot_labels, n_slots, alpha = slots.labels, slots.count, slots.alpha
    left_label, right_label = pairs.left_label, pairs.right_label
    left_slot, right_slot = pairs.left_slot, pairs.right_slot
    beta, n_pairs = pairs.beta, pairs.count
    N = chain.y.shape[0]
    A = slot_labels.shape[1]
    B = left_label.shape[1]
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
        n1 = _marginal_support(alpha, n_slots, C, j, mu1, sup1, pos1)
        n2 = _marginal_support(alpha, n_slots, C, k, mu2, sup2, pos2)
        # the iterate's edge dual leaves the table; the repaired one,
        # C (e_gt - coupling), enters: +C on the true pair, -C F per entry
        vfeas[slot_labels[j, 0] * K + slot_labels[k, 0]] += C
        nk = np.int64(0)  # not a literal: one compiled signature of _scale_down
        for q in range(n_pairs[j]):
            vfeas[left_label[j, q] * K + right_label[j, q]] -= beta[j, q]
            i1 = pos1[left_slot[j, q]]
            i2 = pos2[right_slot[j, q]]
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
            vfeas[slot_labels[j, sup1[ki1[q]]] * K + slot_labels[k, sup2[ki2[q]]]] -= C * kept[q]
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
                vfeas[slot_labels[j, sup1[i1]] * K + slot_labels[k, sup2[i2]]] -= C * f
                r1[i1] -= f
                r2[i2] -= f
        for i1 in range(n1):
            pos1[sup1[i1]] = -1
        for i2 in range(n2):
            pos2[sup2[i2]] = -1
    lin = 0.0
    for j in range(N):
        for s in range(1, n_slots[j]):
            lin += alpha[j, s]
    return lin
