"""Numba kernels for maximum flow (Dinic's algorithm) over float capacities."""

import numba as nb
import numpy as np


@nb.njit(cache=True, no_cpython_wrapper=True)
def _levels(indptr, head, res, s, t, eps, level, queue):
    """Breadth-first levels from ``s`` over arcs with residual above ``eps``
    (``level`` -1: unreached); returns whether ``t`` was reached."""
    for u in range(level.shape[0]):
        level[u] = -1
    level[s] = 0
    queue[0] = s
    lo = 0
    hi = 1
    while lo < hi:
        u = queue[lo]
        lo += 1
        for a in range(indptr[u], indptr[u + 1]):
            v = head[a]
            if level[v] < 0 and res[a] > eps:
                level[v] = level[u] + 1
                queue[hi] = v
                hi += 1
    return level[t] >= 0


@nb.njit(cache=True)
def max_flow(indptr, head, tail, rev, res, s, t, eps):
    """Maximum flow from ``s`` to ``t`` by Dinic's algorithm.

    Parameters
    ----------
    indptr : int64 (n_nodes + 1,)
        Arcs leaving each node (CSR); arc ``a`` goes ``tail[a] -> head[a]``.
    head, tail, rev : int64 (n_arcs,)
        Ends of each arc and its reverse arc (``rev[rev[a]] == a``).
    res : float64 (n_arcs,)
        In: capacities (>= 0; a reverse arc's starts at 0 unless it is an
        arc of its own).  Out: residual capacities of the maximum flow.
    s, t : int
    eps : float
        Residuals at or below this count as saturated (float round-off).

    Returns
    -------
    flow : float
        The flow's value, which equals the capacity of a minimum cut (up to
        ``eps`` per augmenting path).
    """
    n = indptr.shape[0] - 1
    level = np.empty(n, dtype=np.int64)
    queue = np.empty(n, dtype=np.int64)
    it = np.empty(n, dtype=np.int64)
    path = np.empty(n, dtype=np.int64)  # arcs of the current path (one per level)
    flow = 0.0
    while _levels(indptr, head, res, s, t, eps, level, queue):
        for u in range(n):
            it[u] = indptr[u]
        depth = 0
        u = s
        while True:
            if u == t:  # augment by the bottleneck, back up to its first saturated arc
                b = np.inf
                for i in range(depth):
                    b = min(b, res[path[i]])
                for i in range(depth):
                    a = path[i]
                    res[a] -= b
                    res[rev[a]] += b
                flow += b
                cut = 0
                while cut < depth and res[path[cut]] > eps:
                    cut += 1
                depth = cut
                u = s if depth == 0 else head[path[depth - 1]]
                continue
            advanced = False
            while it[u] < indptr[u + 1]:
                a = it[u]
                v = head[a]
                if res[a] > eps and level[v] == level[u] + 1:
                    path[depth] = a
                    depth += 1
                    u = v
                    advanced = True
                    break
                it[u] += 1
            if not advanced:  # dead end: retreat and skip the arc that led here
                if u == s:
                    break
                level[u] = -1
                depth -= 1
                u = tail[path[depth]]
                it[u] += 1
    return flow


@nb.njit(cache=True)
def residual_reachable(indptr, head, res, s, eps, seen):
    """``seen[u]`` = 1 for the nodes reachable from ``s`` over arcs with
    residual above ``eps`` (the source side of a minimum cut), else 0."""
    n = indptr.shape[0] - 1
    level = np.empty(n, dtype=np.int64)
    _levels(indptr, head, res, s, s, eps, level, np.empty(n, dtype=np.int64))
    for u in range(n):
        seen[u] = 1 if level[u] >= 0 else 0
