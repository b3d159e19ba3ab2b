"""Numba kernels for the depth-first branch and bound of small pairwise graphs."""

import heapq

import numba as nb
import numpy as np


@nb.njit(cache=True)
def static_order(nbr_ptr, nbr_var):
    """Variables by maximum cardinality: next the one with most neighbours
    already placed (ties: most neighbours, then lowest index), so that each
    variable's later neighbours are few near the leaves and its earlier ones
    condition it.  A heap of ``(-placed neighbours, -neighbours, index)``
    with stale entries skipped: O((n + E) log n).  Returns int64 (n,)."""
    n = nbr_ptr.shape[0] - 1
    placed = np.zeros(n, dtype=np.uint8)
    links = np.zeros(n, dtype=np.int64)
    order = np.empty(n, dtype=np.int64)
    heap = [(np.int64(0), np.int64(0), np.int64(0))]
    heap.pop()
    for v in range(n):
        heap.append((np.int64(0), -(nbr_ptr[v + 1] - nbr_ptr[v]), np.int64(v)))
    heapq.heapify(heap)
    d = 0
    while d < n:
        neg_links, _, v = heapq.heappop(heap)
        if placed[v] or -neg_links != links[v]:
            continue  # placed, or a later entry of v carries its current count
        order[d] = v
        d += 1
        placed[v] = 1
        for e in range(nbr_ptr[v], nbr_ptr[v + 1]):
            u = nbr_var[e]
            links[u] += 1
            if not placed[u]:
                heapq.heappush(heap, (-links[u], -(nbr_ptr[u + 1] - nbr_ptr[u]), np.int64(u)))
    return order


@nb.njit(cache=True, no_cpython_wrapper=True)
def _pair_entry(table_data, base, stride_self, stride_other, x, y):
    return table_data[base + x * stride_self + y * stride_other]


@nb.njit(cache=True)
def dfbb_pairwise(n_states, unary, unary_offsets, neighbours, table_data, order, tol, max_nodes,
                  start, labels):
    """Exact MAP of a pairwise graph by depth-first branch and bound.

    Variables are fixed in the static ``order``; the labels of a variable are
    tried best bound first.  A node with variables ``order[:d]`` fixed is
    bounded by its fixed score plus, for each free variable ``i``,
    ``max_x u_i(x) + h_i(x)``: ``u_i`` its unary scores plus its factors with
    fixed variables at their labels, ``h_i(x)`` the sum over its later
    neighbours ``j`` of ``max_y theta_ij(x, y)`` (each factor between free
    variables counted once, at its earlier end).  A node whose bound is not
    above the incumbent by ``tol`` (relative, at least 1) is pruned.

    Parameters
    ----------
    n_states, unary, unary_offsets : the graph's variables.
    neighbours : tuple
        ``(nbr_ptr, nbr_var, nbr_base, nbr_stride_self, nbr_stride_other)``,
        int64: the CSR of each variable's neighbours and, per CSR entry, the
        factor table's offset in ``table_data`` and the strides of this
        variable's and the neighbour's label in it.
    table_data : float64
    order : int64 (n,)
    tol : float
        Improvement a subtree must be able to bring, relative to the
        incumbent's score (absolute below 1).
    max_nodes : int
        Nodes at most; the search stops there (not proved).
    start : float
        Score of an incumbent given in ``labels`` (``-inf``: none).
    labels : int64 (n,)
        In: the incumbent (when ``start`` is finite); out: the best labeling
        found.

    Returns
    -------
    score : float
        Its score (``-inf`` if none is finite).
    proved : bool
        Whether the search ended (every labeling not pruned was seen).
    nodes : int
    """
    nbr_ptr, nbr_var, nbr_base, nbr_stride_self, nbr_stride_other = neighbours
    n = order.shape[0]
    K = 1
    for i in range(n):
        K = max(K, n_states[i])
    pos = np.empty(n, dtype=np.int64)
    for d in range(n):
        pos[order[d]] = d
    h = np.zeros(n * K)
    for i in range(n):
        for e in range(nbr_ptr[i], nbr_ptr[i + 1]):
            j = nbr_var[e]
            if pos[j] < pos[i]:
                continue
            for x in range(n_states[i]):
                m = -np.inf
                for y in range(n_states[j]):
                    m = max(m, _pair_entry(table_data, nbr_base[e], nbr_stride_self[e],
                                           nbr_stride_other[e], x, y))
                h[i * K + x] += m
    u = np.full((n + 1, n * K), -np.inf)  # u[d]: the conditioned unary scores at depth d
    for i in range(n):
        for x in range(n_states[i]):
            u[0, i * K + x] = unary[unary_offsets[i] + x]
    fixed = np.zeros(n + 1)  # score of the fixed variables at depth d
    tried = np.zeros(n, dtype=np.int64)
    cand = np.empty((n, K), dtype=np.int64)  # each depth's labels, best bound first
    key = np.empty(K)
    current = np.zeros(n, dtype=np.int64)
    best = start
    nodes = 0
    d = 0
    _sort_labels(u[0], h, order[0], n_states[order[0]], K, cand[0], key)
    while d >= 0:
        v = order[d]
        if tried[d] >= n_states[v]:
            d -= 1
            if d >= 0:
                tried[d] += 1
            continue
        a = cand[d, tried[d]]
        val = u[d, v * K + a]
        if val == -np.inf:
            tried[d] += 1
            continue
        nodes += 1
        if nodes > max_nodes:
            return best, False, nodes
        s = fixed[d] + val
        current[v] = a
        if d == n - 1:
            if s > best:
                best = s
                for i in range(n):
                    labels[i] = current[i]
            tried[d] += 1
            continue
        nxt = u[d + 1]
        for t in range(d + 1, n):
            w = order[t]
            for y in range(n_states[w]):
                nxt[w * K + y] = u[d, w * K + y]
        for e in range(nbr_ptr[v], nbr_ptr[v + 1]):
            j = nbr_var[e]
            if pos[j] > d:
                for y in range(n_states[j]):
                    nxt[j * K + y] += _pair_entry(table_data, nbr_base[e], nbr_stride_self[e],
                                                  nbr_stride_other[e], a, y)
        bound = s  # -inf when some free variable has no label left
        for t in range(d + 1, n):
            w = order[t]
            m = -np.inf
            for y in range(n_states[w]):
                m = max(m, nxt[w * K + y] + h[w * K + y])
            bound += m
        if best > -np.inf and not bound > best + tol * max(1.0, abs(best)):
            tried[d] += 1
            continue
        if bound == -np.inf:
            tried[d] += 1
            continue
        fixed[d + 1] = s
        d += 1
        tried[d] = 0
        _sort_labels(nxt, h, order[d], n_states[order[d]], K, cand[d], key)
    return best, True, nodes


@nb.njit(cache=True, no_cpython_wrapper=True)
def _sort_labels(u, h, v, k, K, out, key):
    """``out[:k]``: the labels of ``v`` by ``u + h`` decreasing (insertion sort)."""
    for x in range(k):
        key[x] = u[v * K + x] + h[v * K + x]
        out[x] = x
    for x in range(1, k):
        lab = out[x]
        val = key[x]
        y = x - 1
        while y >= 0 and key[y] < val:
            key[y + 1] = key[y]
            out[y + 1] = out[y]
            y -= 1
        key[y + 1] = val
        out[y + 1] = lab
