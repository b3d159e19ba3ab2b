"""Numba kernels of :mod:`.potts_persistency`: the Potts weights of many
tables in one pass, and Kovtun's cuts over flat edge arrays."""

import numba as nb
import numpy as np

from ._maxflow_kernels import max_flow, residual_reachable


@nb.njit(cache=True)
def potts_weights(table_data, table_offsets, keys, tol):
    """Each keyed table's weight ``w`` in ``c + w [a == b]``, or NaN.

    Parameters
    ----------
    table_data, table_offsets : float64 (total,), int64 (n_tables + 1,)
        The graph's tables, row-major.
    keys : int64 (m, 3)
        Per row: a table's index and the domain sizes of its first and
        second variables (its rows and columns).
    tol : float
        Entries agree within ``tol * max(1, largest |entry|)``.

    Returns
    -------
    w : float64 (m,)
        ``diag - c`` where every diagonal entry agrees with the first and
        every other one with the first off the diagonal, and ``w`` is not
        below ``-scale``; 0 for a 1 x 1 table; NaN otherwise (a non-finite
        entry included).
    """
    m = keys.shape[0]
    out = np.empty(m)
    for u in range(m):
        t, rows, cols = keys[u, 0], keys[u, 1], keys[u, 2]
        base = table_offsets[t]
        largest, finite = 1.0, True
        for k in range(base, base + rows * cols):
            v = table_data[k]
            if not np.isfinite(v):
                finite = False
                break
            largest = max(largest, abs(v))
        if not finite:
            out[u] = np.nan
            continue
        if rows * cols == 1:  # nothing to compare: any weight fits
            out[u] = 0.0
            continue
        scale = tol * largest
        diag = table_data[base]
        c = table_data[base + 1]  # the first entry off the diagonal (row-major)
        potts = True
        for k in range(rows * cols):
            a, b = divmod(k, cols)
            if abs(table_data[base + k] - (diag if a == b else c)) > scale:
                potts = False
                break
        w = diag - c
        out[u] = w if potts and w >= -scale else np.nan
    return out


@nb.njit(cache=True)
def _cut_network(d, p, q, w, free, big):
    """The minimum-cut network of one auxiliary problem, as the arrays of
    :func:`._maxflow_kernels.max_flow`: node ``i`` per variable, source
    ``n``, sink ``n + 1``.

    Parameters
    ----------
    d : float64 (n,)
        Per variable, how much more "on" scores than "off" (``+inf``: only
        "on" allowed, ``-inf``: only "off"); an arc ``s -> i`` of ``d`` or
        ``i -> t`` of ``-d`` (``big`` for the infinite ones).
    p, q, w : int64 (m,), int64 (m,), float64 (m,)
        Edges and their weights; an edge with both ends free gives arcs
        ``p -> q`` and ``q -> p`` of ``w``, each the other's reverse.
    free : bool (n,)
        The variables in the problem; the others get no arcs.
    big : float
        The capacity standing for an infinite one (above every cut's).

    Returns
    -------
    indptr, head, tail, rev, res
        As :func:`.roof_duality.flow_network` returns them.
    """
    n = d.shape[0]
    s, t = n, n + 1
    degree = np.zeros(n + 3, dtype=np.int64)
    for i in range(n):
        if free[i] and d[i] != 0.0:
            degree[i + 1] += 1
            degree[(s if d[i] > 0 else t) + 1] += 1
    for e in range(p.shape[0]):
        if free[p[e]] and free[q[e]] and w[e] > 0.0:
            degree[p[e] + 1] += 1
            degree[q[e] + 1] += 1
    indptr = np.cumsum(degree)[: n + 3]
    n_arcs = indptr[n + 2]
    head = np.empty(n_arcs, dtype=np.int64)
    tail = np.empty(n_arcs, dtype=np.int64)
    rev = np.empty(n_arcs, dtype=np.int64)
    res = np.zeros(n_arcs)
    fill = indptr[:-1].copy()
    for i in range(n):
        if not free[i] or d[i] == 0.0:
            continue
        a, b = (s, i) if d[i] > 0 else (i, t)
        cap = min(abs(d[i]), big)
        x, y = fill[a], fill[b]
        fill[a] += 1
        fill[b] += 1
        tail[x], head[x], rev[x], res[x] = a, b, y, cap
        tail[y], head[y], rev[y] = b, a, x
    for e in range(p.shape[0]):
        a, b = p[e], q[e]
        if not (free[a] and free[b] and w[e] > 0.0):
            continue
        x, y = fill[a], fill[b]
        fill[a] += 1
        fill[b] += 1
        tail[x], head[x], rev[x], res[x] = a, b, y, w[e]
        tail[y], head[y], rev[y], res[y] = b, a, x, w[e]
    return indptr, head, tail, rev, res


@nb.njit(cache=True)
def kovtun_sweeps(unary, p, q, w, max_sweeps, cut_eps):
    """Kovtun's one-against-all cuts, label after label, conditioning on
    what each fixes, until a sweep over the labels fixes nothing.

    Parameters
    ----------
    unary : float64 (n, K)
        Unary scores, ``-inf`` for forbidden labels and past a variable's
        states; overwritten (the fixed variables' edges add to it).
    p, q : int64 (m,)
        The ends of each pairwise factor.
    w : float64 (m,)
        Its Potts weight (``>= 0``).
    max_sweeps : int
    cut_eps : float
        Residuals below this share of the largest finite capacity count as
        saturated.

    Returns
    -------
    labels : int64 (n,)
        The fixed label of each variable, -1 where none is fixed.
    """
    n, k = unary.shape
    labels = np.full(n, -1, dtype=np.int64)
    for i in range(n):
        if not np.any(np.isfinite(unary[i])):  # no allowed label: nothing to fix
            return labels
    free = np.ones(n, dtype=np.bool_)
    d = np.empty(n)
    seen = np.empty(n + 2, dtype=np.uint8)
    n_free = n
    for _ in range(max_sweeps):
        fixed_in_sweep = 0
        for alpha in range(k):
            if n_free == 0:
                return labels
            any_on, total, largest = False, 0.0, 0.0
            for i in range(n):
                if not free[i]:
                    continue
                on = unary[i, alpha]
                off = -np.inf
                for b in range(k):
                    if b != alpha and unary[i, b] > off:
                        off = unary[i, b]
                if np.isfinite(on):
                    any_on = True
                    d[i] = on - off  # +inf where only alpha is allowed
                else:
                    d[i] = -np.inf
                if np.isfinite(d[i]):
                    total += abs(d[i])
                    largest = max(largest, abs(d[i]))
            if not any_on:
                continue
            for e in range(p.shape[0]):
                if free[p[e]] and free[q[e]]:
                    total += 2.0 * w[e]
                    largest = max(largest, w[e])
            indptr, head, tail, rev, res = _cut_network(d, p, q, w, free, 2.0 * total + 1.0)
            eps = cut_eps * (largest if largest > 0.0 else 1.0)
            max_flow(indptr, head, tail, rev, res, n, n + 1, eps)
            residual_reachable(indptr, head, res, n, eps, seen)
            newly = 0
            for i in range(n):
                if free[i] and seen[i] == 1:
                    labels[i] = alpha
                    newly += 1
            if newly == 0:
                continue
            for e in range(p.shape[0]):  # condition the free ends on the new labels
                a, b = p[e], q[e]
                if free[a] and free[b]:
                    if labels[a] == alpha and labels[b] < 0:
                        unary[b, alpha] += w[e]
                    elif labels[b] == alpha and labels[a] < 0:
                        unary[a, alpha] += w[e]
            for i in range(n):
                if free[i] and labels[i] >= 0:
                    free[i] = False
            n_free -= newly
            fixed_in_sweep += newly
        if fixed_in_sweep == 0:
            break
    return labels
