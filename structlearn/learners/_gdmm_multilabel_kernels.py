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

Sparsity: an inactive pair factor sits at ``z = ybar_a ybar_b`` with
``nu = 0``; the kernels keep every inactive factor consistent (a unigram
step that would violate an inactive edge's constraints activates it; only
edges to labels with ``x > 0`` can be violated), so inactive factors carry
no penalty, their gradient is ``P_f`` alone (the greedy search reads
``P_f`` over the edges among the sample's labels with ``x > 0``, the only
inactive pairs whose dual can move), and sums over active factors are sums
over the whole problem.
``tmask`` uint8 (n, L) marks the labels whose unigram factor is active
(any label not marked has ``A = 0``).

Per-sample active pair factors (dense rows with a count): ``fa, fb`` labels
(``fa < fb``), ``fv`` the dual ``b``, ``fnu`` (cap, 3) the multipliers,
``nf[i]`` the count; rows widen when a sample needs more (the pass stops
and asks for it); factors back at their inactive state are removed after
each multiplier step, so a row holds the active factors only.
"""

from typing import NamedTuple

import numba as nb
import numpy as np

from .._borrowing import borrowing_kernel
from .._prefetch import prefetch, prefetch_row, prefetch_span
from ..oracles._binary_kernels import pair_id
from ._multilabel_kernels import loss_augment, sample_scores


class PairPool(NamedTuple):
    """Active pair factors of every sample, in one flat pool.

    Sample ``i`` owns the slots ``base[i] : base[i] + capacity[i]``, of which
    the first ``count[i]`` are in use; ``top[0]`` is the first free slot at
    the end of the pool.  A sample that needs more slots moves to the end
    (:func:`_widen`); the driver compacts the pool when that end is full.

    Attributes
    ----------
    left, right : int64 (P,)
        The pair's labels, ``left < right``.
    dual : float64 (P,)
        The pair dual ``b``.
    nu : float64 (P, 3)
        Scaled multipliers of the three consistency constraints.
    base, capacity, count : int64 (n,)
    top : int64 (1,)
    """

    left: np.ndarray
    right: np.ndarray
    dual: np.ndarray
    nu: np.ndarray
    base: np.ndarray
    capacity: np.ndarray
    count: np.ndarray
    top: np.ndarray


class LabelEdges(NamedTuple):
    """The interaction edges among the labels.

    Attributes
    ----------
    E : uint8 (L, L)
        1 on an edge (``E[a, b]`` with ``a < b``).
    n_edges : int
    nbr_ptr, nbr : int64
        Each label's neighbours (CSR, increasing).
    up_a, up_b : int64 (m,)
        The edges with ``P_f > 0`` by decreasing weight, as the caller last
        sorted them, and ``up_w`` float64 (m,) those weights (the greedy
        search's order).
    fixed : uint8 (L,)
        1 for the labels whose unigram factors the pass leaves as they are
        (another pass steps them: :mod:`._gdmm_multilabel_separators`);
        their duals are read, their pairs stepped.
    """

    E: np.ndarray
    n_edges: int
    nbr_ptr: np.ndarray
    nbr: np.ndarray
    up_a: np.ndarray
    up_b: np.ndarray
    up_w: np.ndarray
    fixed: np.ndarray


class MultilabelDuals(NamedTuple):
    """Weights and unigram duals, updated in place: ``W`` float64 (d, L),
    ``Pw`` float64 (L (L-1)/2,) pair weights (0 off the edges), ``A``
    float64 (n, L) and ``tmask`` uint8 (n, L) (active unigram factors)."""

    W: np.ndarray
    Pw: np.ndarray
    A: np.ndarray
    tmask: np.ndarray


@nb.njit(cache=True, inline="always")
def pair_rows(pool, i):
    """Views of sample ``i``'s slots: ``(left, right, dual, nu)``."""
    b = pool.base[i]
    e = b + pool.capacity[i]
    return pool.left[b:e], pool.right[b:e], pool.dual[b:e], pool.nu[b:e]


@borrowing_kernel(python_callable=True)
def _widen(pool, i, need, n_edges):
    """Move sample ``i``'s pairs to ``max(need, 2 capacity)`` slots (at most
    ``n_edges``, at least one more) at the end of the pool; False (nothing
    moved) when the pool has no such room."""
    new_cap = max(pool.capacity[i] + 1, min(max(need, 2 * pool.capacity[i]), n_edges))
    top = pool.top[0]
    if top + new_cap > pool.left.shape[0]:
        return False
    b = pool.base[i]
    for q in range(pool.count[i]):
        pool.left[top + q] = pool.left[b + q]
        pool.right[top + q] = pool.right[b + q]
        pool.dual[top + q] = pool.dual[b + q]
        for c in range(3):
            pool.nu[top + q, c] = pool.nu[b + q, c]
    pool.base[i] = top
    pool.capacity[i] = new_cap
    pool.top[0] = top + new_cap
    return True


@nb.njit(cache=True, inline="always")
def _constraints(i, q, Y, A, C, fa, fb, fv):
    a = fa[q]
    b = fb[q]
    ya = Y[i, a]
    yb = Y[i, b]
    yf = ya * yb
    v = fv[q]
    h1 = C * (yf - ya) - v + A[i, a]
    h2 = C * (yf - yb) - v + A[i, b]
    h3 = C * (ya + yb - 1 - yf) - A[i, a] - A[i, b] + v
    return h1, h2, h3


@nb.njit(cache=True, inline="always")
def _clip(v, lo, hi):
    return lo if v < lo else (hi if v > hi else v)


@borrowing_kernel
def _adjacency_build(i, fa, fb, m, head, tail, nxa, nxb):
    """Lists of the active pairs of sample ``i`` by label, in pair order.

    ``head[j]``/``tail[j]`` first/last pair touching label ``j`` (-1: none);
    the pair after ``q`` in the list of ``fa[q]`` is ``nxa[q]``, in the
    list of ``fb[q]`` it is ``nxb[q]``.  O(L + m)."""
    head[:] = -1
    tail[:] = -1
    for q in range(m):
        _adjacency_append(i, q, fa, fb, head, tail, nxa, nxb)


@nb.njit(cache=True, inline="always")
def _adjacency_append(i, q, fa, fb, head, tail, nxa, nxb):
    """Add pair ``q`` (the largest index so far) to both of its labels' lists."""
    nxa[q] = -1
    nxb[q] = -1
    for lab in (fa[q], fb[q]):
        t = tail[lab]
        if t < 0:
            head[lab] = q
        elif fa[t] == lab:
            nxa[t] = q
        else:
            nxb[t] = q
        tail[lab] = q


@nb.njit(cache=True, inline="always")
def _label_penalty(i, j, Y, A, C, fa, fb, fv, fnu, head, nxa, nxb):
    """Penalty part of dA_j and the number of active factors touching ``j``
    (summed over its pairs in pair order: O(its pairs))."""
    pen = 0.0
    k = 0
    q = head[j]
    while q >= 0:
        h1, h2, h3 = _constraints(i, q, Y, A, C, fa, fb, fv)
        p3 = max(0.0, h3 + fnu[q, 2])
        if fa[q] == j:
            pen += max(0.0, h1 + fnu[q, 0]) - p3
            q = nxa[q]
        else:
            pen += max(0.0, h2 + fnu[q, 1]) - p3
            q = nxb[q]
        k += 1
    return pen, k


@borrowing_kernel
def _find_pair(i, a, b, fa, fb, m):
    for q in range(m):
        if fa[q] == a and fb[q] == b:
            return q
    return -1


@nb.njit(cache=True, inline="always")
def store_pair(i, a, b, fa, fb, fv, fnu, nf):
    """Append the pair ``(a, b)`` (``a < b``) to sample ``i``'s active pairs
    at its inactive state (dual and multipliers 0); returns its slot."""
    q = nf[i]
    fa[q] = a
    fb[q] = b
    fv[q] = 0.0
    fnu[q, 0] = 0.0
    fnu[q, 1] = 0.0
    fnu[q, 2] = 0.0
    nf[i] = q + 1
    return q


@nb.njit(cache=True, inline="always")
def _append_pair(i, a, b, fa, fb, fv, fnu, nf, head, tail, nxa, nxb):
    q = store_pair(i, a, b, fa, fb, fv, fnu, nf)
    _adjacency_append(i, q, fa, fb, head, tail, nxa, nxb)


@nb.njit(cache=True, inline="always")
def _x(i, j, Y, A, C):
    return Y[i, j] - A[i, j] / C


@nb.njit(cache=True, inline="always")
def _activate_violated(i, j, Y, A, C, E, nbr_ptr, nbr, tmask, fa, fb, fv, fnu, nf, mark, head,
                       tail, nxa, nxb, positives, n_pos, xneg_max):
    """Activate every inactive edge of label ``j`` whose constraints its new
    marginal violates (only partners with ``x > 0`` can be: marked or positive),
    in increasing partner order.

    ``positives[:n_pos]``: the sample's positive labels, increasing;
    ``xneg_max`` bounds ``x`` of every negative label: a negative partner
    ``k`` violates only if ``x_j + x_k > 1``, so when ``x_j + xneg_max <= 1``
    only the positive partners are examined (the scan of all ``L`` labels
    is skipped, with the same result).  When ``j`` has fewer edges than
    that, its neighbours (``nbr_ptr, nbr``: sorted adjacency) are examined
    instead: the same partners in the same order, as a negative neighbour
    that cannot violate fails the test below.  ``mark`` uint8 (L,) scratch
    of zeros (restored)."""
    L = Y.shape[1]
    q = head[j]
    while q >= 0:  # partners of j's active pairs
        if fa[q] == j:
            mark[fb[q]] = 1
            q = nxa[q]
        else:
            mark[fa[q]] = 1
            q = nxb[q]
    xj = _x(i, j, Y, A, C)
    scan_all = xj + xneg_max > 1.0
    n_k = L if scan_all else n_pos
    deg = nbr_ptr[j + 1] - nbr_ptr[j]
    by_edges = deg < n_k
    if by_edges:
        n_k = deg
    for t in range(n_k):
        if by_edges:
            k = nbr[nbr_ptr[j] + t]
        else:
            k = t if scan_all else positives[t]
        if k == j or mark[k] != 0 or E[min(j, k), max(j, k)] == 0:
            continue
        if tmask[i, k] == 0 and Y[i, k] == 0:
            continue  # x_k = 0: z = 0 stays consistent
        xk = _x(i, k, Y, A, C)
        if Y[i, j] != 0 and Y[i, k] != 0:
            bad = xj < 1.0 or xk < 1.0  # inactive z = 1
        else:
            bad = xj + xk > 1.0  # inactive z = 0
        if bad:
            _append_pair(i, min(j, k), max(j, k), fa, fb, fv, fnu, nf, head, tail, nxa, nxb)
    q = head[j]
    while q >= 0:
        mark[fa[q]] = 0
        mark[fb[q]] = 0
        q = nxa[q] if fa[q] == j else nxb[q]


@nb.njit(cache=True, inline="always")
def _unigram_step(i, j, u, Y, A, C, rho, xnorm2, pen, k):
    """Projected step on ``A[i, j]`` given the label's penalty term ``pen``
    and active-pair count ``k`` (:func:`_label_penalty`); ``u[j]`` follows
    it (``W`` is written by the caller once per visit: ``u`` moves by
    ``||x_i||^2`` per unit of ``A``)."""
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
        u[j] += xnorm2[i] * d
    return d


@nb.njit(cache=True, inline="always")
def _greedy_pair(i, u, Y, A, C, edges, Pw, rows, m, cand):
    """The inactive pair factor whose joint move lowers the objective most.

    An inactive pair's gradient is ``P_f`` (no penalty term), but the local
    polytope lets its ``z`` move only together with its labels: ``z`` goes
    up from 0 (a pair with a negative label) only with every endpoint at
    ``x = 0``, and down from 1 (two positives) only with one endpoint going
    down.  The gain of the joint move is (``g_e = u_e + 1 - 2 ybar_e``, the
    endpoint's gradient at its bound, penalties left out)::

        z up:   P_f + sum of g_e over the endpoints at x = 0
        z down: -P_f (an endpoint below 1), -P_f - min(g_a, g_b) (both at 1)

    Searched: the pairs of positive labels (enumerated), and the edges with
    ``P_f > 0`` in the caller's decreasing order, until ``up_w + 2 max(g, 0)``
    cannot beat the best gain (the order may be stale by one block of
    samples: a heuristic bound, the search stays a valid greedy choice).
    Returns ``(a, b, pairs examined)``; ``a = -1`` when no move gains.
    ``rows``: the sample's ``(fa, fb, fv, fnu)``, ``m`` its active pairs,
    ``cand`` int64 (L,) scratch.
    """
    E, up_a, up_b, up_w = edges.E, edges.up_a, edges.up_b, edges.up_w
    fa, fb = rows[0], rows[1]
    L = Y.shape[1]
    gmax = 0.0
    npos = 0
    for k in range(L):
        g = u[k] + 1.0 - 2.0 * Y[i, k]
        if g > gmax:
            gmax = g
        if Y[i, k] != 0:
            cand[npos] = k
            npos += 1
    best = 0.0
    pa = -1
    pb = -1
    seen = 0
    for r in range(npos):
        a = cand[r]
        for r2 in range(r + 1, npos):
            b = cand[r2]
            if E[a, b] == 0:
                continue
            seen += 1
            gain = -Pw[pair_id(a, b, L)]
            if A[i, a] == 0.0 and A[i, b] == 0.0:
                gain -= min(u[a] - 1.0, u[b] - 1.0)
            if gain > best and _find_pair(i, a, b, fa, fb, m) < 0:
                best = gain
                pa = a
                pb = b
    for e in range(up_a.shape[0]):
        if up_w[e] + 2.0 * gmax <= best:
            break
        a = up_a[e]
        b = up_b[e]
        if Y[i, a] != 0 and Y[i, b] != 0:
            continue
        seen += 1
        gain = Pw[pair_id(a, b, L)]
        if gain <= 0.0:
            continue  # turned non-positive since the caller sorted
        for k in (a, b):
            if (Y[i, k] == 0 and A[i, k] == 0.0) or (Y[i, k] != 0 and A[i, k] == C):
                gain += u[k] + 1.0 - 2.0 * Y[i, k]
        if gain > best and _find_pair(i, a, b, fa, fb, m) < 0:
            best = gain
            pa = a
            pb = b
    return pa, pb, seen


class PassScratch(NamedTuple):
    """Scratch space of :func:`gdmm_multilabel_pass` (``L`` labels, ``E``
    edges): ``u`` float64 (L,) label scores, ``dsum`` float64 (L,) the
    sample's summed unigram steps (kept zero between samples), ``mark``
    uint8 (L,), ``cand``, ``head``, ``tail`` and ``positives`` int64 (L,),
    ``nxa``, ``nxb`` int64 (E + 1,) (per-label lists of active pairs), and
    ``stats`` int64 (2,), the caller's counters."""

    u: np.ndarray
    dsum: np.ndarray
    mark: np.ndarray
    cand: np.ndarray
    head: np.ndarray
    tail: np.ndarray
    positives: np.ndarray
    nxa: np.ndarray
    nxb: np.ndarray
    stats: np.ndarray


@nb.njit(cache=True, nogil=True)
def gdmm_multilabel_pass(samples, edges, duals, pool, order, start, C, rho, rounds, stats,
                         step_data, sigma):
    """One pass of block-greedy coordinate descent (Algorithm 3) over the samples in ``order``.

    ``samples``: :class:`._multilabel_kernels.SampleFeatures`; ``edges``: :class:`LabelEdges`;
    ``duals``: :class:`MultilabelDuals` and ``pool``: :class:`PairPool`,
    updated in place.

    Per sample: scores of all labels; every unigram factor whose projected
    gradient at its bound is non-zero joins the active set (its search is
    the dense argmax the inner products give anyway); the greedy inactive
    pair factor (largest gradient among the edges whose dual can move, see
    the comment in the body) joins it; then ``rounds`` rounds of exact-curvature projected
    coordinate steps (19) on every active factor, activating the edges whose
    constraints a unigram step violates.  The label scores follow the steps
    (``||x_i||^2`` per unit of dual), so a round costs O(active factors);
    ``W`` takes the sample's summed steps once per visit.  ``stats`` int64 (2,):
    += label pairs the greedy search examined, += stops for lack of capacity.

    ``step_data`` (float64 (nnz,)) are the feature values ``W`` moves by and
    ``sigma`` the scale of the pair weights' moves and curvature: ``data``
    and 1 for a pass over all the samples; a partitioned pass
    (:mod:`._partitions`) scales each feature by its damping ``sigma_f``
    (``xnorm2`` then ``sum_f sigma_f x_f^2``) and ``sigma`` is the pair
    weights' damping.

    Capacity: no step is ever dropped.  When a sample's next step could
    activate more pairs than its row of ``fa, fb, fv, fnu`` holds, the
    sample's steps so far are written to ``W`` and the pass stops there;
    it returns ``(t, need)``: the position in ``order`` to resume from (the
    sample is then visited again from its start, a valid coordinate-descent
    visit) and the number of pair slots it needs.  A finished pass returns
    ``(len(order), 0)``.  Starts at ``order[start]``.

    A label's penalty reads only its own active pairs (per-label lists),
    so a sample costs O(L + active pairs) besides the oracle and the
    edges its steps activate, not O(L x active pairs).
    """
    L, n_edges = samples.Y.shape[1], edges.n_edges
    scratch = PassScratch(np.empty(L), np.zeros(L), np.zeros(L, dtype=np.uint8),
                          np.empty(L, dtype=np.int64), np.empty(L, dtype=np.int64),
                          np.empty(L, dtype=np.int64), np.empty(L, dtype=np.int64),
                          np.empty(n_edges + 1, dtype=np.int64),
                          np.empty(n_edges + 1, dtype=np.int64), stats)
    return _visit_samples(samples, edges, duals, pool, order, start, C, rho, rounds,
                          step_data, sigma, scratch)


@nb.njit(cache=True, inline="always")
def _prefetch_sample(order, t, samples, A, tmask, pool):
    """Ask for the rows a visit of sample ``order[t]`` reads first (its
    features, targets, duals, flags and pairs) and for the row bounds of
    ``order[t + 1]``, while the sample before it is worked on."""
    data, indices, indptr, Y = samples.data, samples.indices, samples.indptr, samples.Y
    i = order[t]
    if t + 1 < order.shape[0]:
        j = order[t + 1]
        prefetch(indptr, j)
        prefetch(pool.base, j)
        prefetch(pool.count, j)
        prefetch(pool.capacity, j)
    prefetch_span(data, indptr[i], indptr[i + 1])
    prefetch_span(indices, indptr[i], indptr[i + 1])
    prefetch_row(Y, i, Y.shape[1])
    prefetch_row(A, i, A.shape[1])
    prefetch_row(tmask, i, tmask.shape[1])
    b = pool.base[i]
    e = b + pool.count[i]
    prefetch_span(pool.left, b, e)
    prefetch_span(pool.right, b, e)
    prefetch_span(pool.dual, b, e)


@borrowing_kernel
def _visit_samples(samples, edges, duals, pool, order, start, C, rho, rounds, step_data, sigma,
                   scratch):
    """The body of :func:`gdmm_multilabel_pass`, in ``scratch``'s space
    (:class:`PassScratch`): borrowing its arrays, it counts no references
    per sample, view or inlined helper."""
    data, indices, indptr, Y, xnorm2 = samples
    W, Pw, A, tmask = duals
    n_edges, nbr_ptr, nbr, fixed = edges.n_edges, edges.nbr_ptr, edges.nbr, edges.fixed
    n, L = Y.shape
    nf = pool.count
    u, dsum, mark, cand = scratch.u, scratch.dsum, scratch.mark, scratch.cand
    head, tail, positives = scratch.head, scratch.tail, scratch.positives
    nxa, nxb, stats = scratch.nxa, scratch.nxb, scratch.stats
    Qp = sigma + 3.0 * rho
    for t in range(start, order.shape[0]):
        i = order[t]
        if t + 1 < order.shape[0]:
            _prefetch_sample(order, t + 1, samples, A, tmask, pool)
        sample_scores(W, data, indices, indptr, i, u)
        rows = pair_rows(pool, i)
        fa, fb, fv, fnu = rows
        cap = pool.capacity[i]
        m = nf[i]
        _adjacency_build(i, fa, fb, m, head, tail, nxa, nxb)
        # unigram factors: untouched labels sit at A = 0 (x = ybar)
        for j in range(L):
            if tmask[i, j] == 0 and fixed[j] == 0:
                pen, k = _label_penalty(i, j, Y, A, C, fa, fb, fv, fnu, head, nxa, nxb)
                g = u[j] + (1.0 - 2.0 * Y[i, j]) + rho * pen
                if (g > 0.0 and Y[i, j] == 0) or (g < 0.0 and Y[i, j] != 0):
                    tmask[i, j] = 1
        stats[0] += L
        # greedy pair factor (joint gains: see _greedy_pair)
        if n_edges > 0:
            pa, pb, seen = _greedy_pair(i, u, Y, A, C, edges, Pw, rows, m, cand)
            stats[0] += seen
            if pa >= 0:
                if m == cap:
                    if not _widen(pool, i, cap + 1, n_edges):
                        stats[1] += 1
                        return t, cap + 1
                    rows = pair_rows(pool, i)
                    fa, fb, fv, fnu = rows
                    cap = pool.capacity[i]
                _append_pair(i, pa, pb, fa, fb, fv, fnu, nf, head, tail, nxa, nxb)
                m += 1
                # an endpoint at x = 0 has to move with z: its factor joins too
                tmask[i, pa] = 1
                tmask[i, pb] = 1
        # the positive labels listed, and a bound on x of the negative ones
        # (the partners with x > 0 are the only ones a step can violate)
        n_pos = 0
        xneg_max = 0.0
        for k in range(L):
            if Y[i, k] != 0:
                positives[n_pos] = k
                n_pos += 1
            elif tmask[i, k] != 0:
                xk = _x(i, k, Y, A, C)
                if xk > xneg_max:
                    xneg_max = xk
        # ``rounds`` exact-curvature projected steps (19) on every active
        # factor: the unigram factors (activating the edges whose constraints
        # a step violates), then the pair factors
        for _ in range(rounds):
            for j in range(L):
                if tmask[i, j] == 0 or fixed[j] != 0:
                    continue
                if cap < n_edges and nf[i] + nbr_ptr[j + 1] - nbr_ptr[j] > cap:
                    # room for the edges this step might activate (conservative)
                    room = 0
                    for r in range(nbr_ptr[j], nbr_ptr[j + 1]):
                        k = nbr[r]
                        if tmask[i, k] != 0 or Y[i, k] != 0:
                            room += 1
                    if nf[i] + room > cap:
                        if not _widen(pool, i, nf[i] + room, n_edges):
                            _flush_weights(W, step_data, indices, indptr, i, dsum)
                            stats[1] += 1
                            return t, nf[i] + room
                        rows = pair_rows(pool, i)
                        fa, fb, fv, fnu = rows
                        cap = pool.capacity[i]
                pen, k = _label_penalty(i, j, Y, A, C, fa, fb, fv, fnu, head, nxa, nxb)
                d = _unigram_step(i, j, u, Y, A, C, rho, xnorm2, pen, k)
                dsum[j] += d
                if d != 0.0 and n_edges > 0:
                    if Y[i, j] == 0:
                        xj = _x(i, j, Y, A, C)
                        if xj > xneg_max:
                            xneg_max = xj
                    _activate_violated(i, j, Y, A, C, edges.E, nbr_ptr, nbr, tmask, fa, fb, fv, fnu,
                                       nf, mark, head, tail, nxa, nxb, positives, n_pos,
                                       xneg_max)
            for q in range(nf[i]):
                a = fa[q]
                b = fb[q]
                h1, h2, h3 = _constraints(i, q, Y, A, C, fa, fb, fv)
                pid = pair_id(a, b, L)
                g = Pw[pid] + rho * (max(0.0, h3 + fnu[q, 2]) - max(0.0, h1 + fnu[q, 0])
                                     - max(0.0, h2 + fnu[q, 1]))
                pos = Y[i, a] * Y[i, b] != 0
                lo = 0.0 if pos else -C
                hi = C if pos else 0.0
                new = _clip(fv[q] - g / Qp, lo, hi)
                d = new - fv[q]
                if d != 0.0:
                    fv[q] = new
                    Pw[pid] += d * sigma
        # the weights follow the sample's unigram duals once per visit
        _flush_weights(W, step_data, indices, indptr, i, dsum)
    return order.shape[0], 0


@nb.njit(cache=True, inline="always")
def _flush_weights(W, data, indices, indptr, i, dsum):
    """``W[:, j] += x_i dsum[j]`` for every label, then ``dsum = 0``."""
    for j in range(dsum.shape[0]):
        if dsum[j] != 0.0:
            d = dsum[j]
            for p in range(indptr[i], indptr[i + 1]):
                W[indices[p], j] += data[p] * d
            dsum[j] = 0.0


@nb.njit(cache=True, nogil=True)
def gdmm_multilabel_multipliers(Y, A, C, eta, tmask, pool):
    """Multiplier step ``nu <- max(0, nu + eta h)`` on every active factor,
    then the factors back at their inactive state leave the active sets.

    A pair factor leaves when its dual is 0 (``z = ybar_a ybar_b``), its
    multipliers are 0 and its constraints hold: exactly the state the
    kernels keep inactive factors in, so nothing changes but the storage
    (kept in order).  A unigram factor leaves ``tmask`` when its dual is 0.
    Returns the squared constraint violation ``sum max(0, h)^2`` before the
    step, over the whole problem (inactive factors satisfy their constraints
    exactly, see the module docstring).
    """
    res = 0.0
    n, L = Y.shape
    nf = pool.count
    for i in range(n):
        fa, fb, fv, fnu = pair_rows(pool, i)
        kept = 0
        for q in range(nf[i]):
            h1, h2, h3 = _constraints(i, q, Y, A, C, fa, fb, fv)
            for c, h in ((0, h1), (1, h2), (2, h3)):
                if h > 0.0:
                    res += h * h
                fnu[q, c] = max(0.0, fnu[q, c] + eta * h)
            idle = (fv[q] == 0.0 and fnu[q, 0] == 0.0 and fnu[q, 1] == 0.0
                    and fnu[q, 2] == 0.0 and h1 <= 0.0 and h2 <= 0.0 and h3 <= 0.0)
            if not idle:
                if kept != q:
                    fa[kept] = fa[q]
                    fb[kept] = fb[q]
                    fv[kept] = fv[q]
                    for c in range(3):
                        fnu[kept, c] = fnu[q, c]
                kept += 1
        nf[i] = kept
        for j in range(L):
            if A[i, j] == 0.0:
                tmask[i, j] = 0
    return res


@nb.njit(cache=True, nogil=True)
def gdmm_multilabel_dual(W, Pw, Y, A, C, pool, Pfeas):
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
        fa, fb, fv, _ = pair_rows(pool, i)
        for j in range(L):
            lin += (1.0 - 2.0 * Y[i, j]) * A[i, j]
        for q in range(pool.count[i]):
            a = fa[q]
            b = fb[q]
            yf = Y[i, a] * Y[i, b]
            xa = Y[i, a] - A[i, a] / C
            xb = Y[i, b] - A[i, b] / C
            z = yf - fv[q] / C
            z2 = _clip(z, max(0.0, xa + xb - 1.0), min(xa, xb))
            if z2 != z:
                Pfeas[pair_id(a, b, L)] += C * (yf - z2) - fv[q]
    reg = 0.0
    for f in range(W.shape[0]):
        for j in range(L):
            reg += W[f, j] * W[f, j]
    for p in range(Pfeas.shape[0]):
        reg += Pfeas[p] * Pfeas[p]
    return -(0.5 * reg + lin)


@nb.njit(cache=True, nogil=True)
def lp_hinge_bound(W, Pw, E, data, indices, indptr, Y, rho, pool, up_a, up_b, out):
    """Upper bound on each sample's LP-relaxed hinge loss (``out`` float64 (n,)).

    Lagrangian relaxation of the loss-augmented LP
    ``max u.x + P.z`` over ``z <= x_a, z <= x_b, x_a + x_b - 1 <= z``,
    ``x, z`` in [0, 1]: for any multipliers ``mu >= 0``,

    ``sum_f mu3_f + sum_j max(0, u_j + sum_f (mu_f,side(j) - mu3_f))
    + sum_f max(0, P_f - mu1_f - mu2_f + mu3_f)``

    bounds the LP value.  Active factors use ``mu = rho nu``; an inactive
    edge with ``P_f > 0`` moves ``P_f`` onto the multiplier of the endpoint
    with the smaller reduced score so far.  Valid whatever the multipliers; tight when they are
    optimal.  ``up_a, up_b`` int64: the edges with ``P_f > 0`` (the only
    inactive ones that contribute).  Cost O(nnz L + active pairs + positive
    pairs + |up|) per sample: sublinear in the edges where few weights are
    positive.
    """
    n, L = Y.shape
    acc = np.empty(L)
    act = np.zeros((L, L), dtype=np.uint8)
    pos = np.empty(L, dtype=np.int64)
    for i in range(n):
        sample_scores(W, data, indices, indptr, i, acc)
        truth, npos = loss_augment(Y, i, acc, pos)
        truth -= npos  # the loss's constant |ybar| moves to this side
        for r in range(npos):
            for r2 in range(r + 1, npos):
                if E[pos[r], pos[r2]] != 0:
                    truth += Pw[pair_id(pos[r], pos[r2], L)]
        total = 0.0
        fa, fb, _, fnu = pair_rows(pool, i)
        nf = pool.count
        for q in range(nf[i]):
            a = fa[q]
            b = fb[q]
            act[a, b] = 1
            m1 = rho * fnu[q, 0]
            m2 = rho * fnu[q, 1]
            m3 = rho * fnu[q, 2]
            total += m3
            acc[a] += m1 - m3
            acc[b] += m2 - m3
            total += max(0.0, Pw[pair_id(a, b, L)] - m1 - m2 + m3)
        for e in range(up_a.shape[0]):
            a = up_a[e]
            b = up_b[e]
            if act[a, b] != 0:
                continue
            pf = Pw[pair_id(a, b, L)]
            # move P_f onto the endpoint with the smaller reduced score
            if acc[a] <= acc[b]:
                acc[a] += pf
            else:
                acc[b] += pf
        for j in range(L):
            if acc[j] > 0.0:
                total += acc[j]
        out[i] = total - truth
        for q in range(nf[i]):
            act[fa[q], fb[q]] = 0
