"""Numba kernels for structure tests on factor graphs (no validation here).

The graphs are walked as bipartite variable-factor graphs, through the
variable -> factor adjacency in CSR form (``var_indptr``, ``var_factors``)
and the factor scopes (``scope_indptr``, ``scope_vars``).
"""

import numba as nb
import numpy as np


@nb.njit(cache=True)
def chain_walk(var_indptr, var_factors, scope_indptr, scope_vars, order, link):
    """Walk every path of a pairwise graph whose variables have degree <= 2.

    Paths start at their lowest-index endpoint (a variable of degree <= 1),
    endpoints taken in increasing index order.

    Parameters
    ----------
    var_indptr, var_factors : int64 arrays
        Factors incident to each variable (CSR).
    scope_indptr, scope_vars : int64 arrays
        Factor scopes (every factor pairwise).
    order : int64 (n_vars,)
        Receives the variables path by path.
    link : int64 (n_vars,)
        Receives the factor joining ``order[k - 1]`` and ``order[k]``, or -1
        where a new path starts.

    Returns
    -------
    n_placed : int
        Number of variables placed; less than ``n_vars`` exactly when some
        component is a cycle (no endpoint).
    """
    n_vars = var_indptr.shape[0] - 1
    visited = np.zeros(n_vars, dtype=np.bool_)
    k = 0
    for s in range(n_vars):
        if visited[s] or var_indptr[s + 1] - var_indptr[s] > 1:
            continue
        v = s
        prev_f = -1
        order[k] = v
        link[k] = -1
        visited[v] = True
        k += 1
        while True:
            nxt = -1
            for p in range(var_indptr[v], var_indptr[v + 1]):
                if var_factors[p] != prev_f:
                    nxt = var_factors[p]
                    break
            if nxt == -1:
                break
            a = scope_vars[scope_indptr[nxt]]
            u = scope_vars[scope_indptr[nxt] + 1] if a == v else a
            if visited[u]:
                break
            order[k] = u
            link[k] = nxt
            visited[u] = True
            k += 1
            prev_f = nxt
            v = u
    return k


@nb.njit(cache=True)
def forest_bfs(
    var_indptr,
    var_factors,
    scope_indptr,
    scope_vars,
    var_order,
    var_parent,
    factor_order,
    factor_parent,
    component,
):
    """Breadth-first schedule of the bipartite variable-factor graph.

    Each connected component is rooted at its lowest-index variable; roots
    are taken in increasing index order.

    Parameters
    ----------
    var_indptr, var_factors, scope_indptr, scope_vars : int64 arrays
    var_order : int64 (n_vars,)
        Receives the variables in BFS order.
    var_parent : int64 (n_vars,)
        Receives the factor through which each variable was reached (-1 for roots).
    factor_order : int64 (n_factors,)
        Receives the factors in BFS order; the child factors of a variable
        are contiguous.
    factor_parent : int64 (n_factors,)
        Receives the variable through which each factor was reached.
    component : int64 (n_vars,)
        Receives the component index of each variable.

    Returns
    -------
    has_cycle : bool
        True when some variable-factor edge closes a cycle (the schedule is
        then still a spanning forest, but not the whole graph).
    """
    n_vars = var_indptr.shape[0] - 1
    n_factors = scope_indptr.shape[0] - 1
    var_seen = np.zeros(n_vars, dtype=np.bool_)
    f_seen = np.zeros(n_factors, dtype=np.bool_)
    nv = 0
    nf = 0
    head = 0
    n_comp = 0
    cycle = False
    for r in range(n_vars):
        if var_seen[r]:
            continue
        var_seen[r] = True
        var_order[nv] = r
        var_parent[r] = -1
        component[r] = n_comp
        nv += 1
        while head < nv:
            v = var_order[head]
            head += 1
            for p in range(var_indptr[v], var_indptr[v + 1]):
                f = var_factors[p]
                if f == var_parent[v]:
                    continue
                if f_seen[f]:
                    cycle = True
                    continue
                f_seen[f] = True
                factor_order[nf] = f
                factor_parent[f] = v
                nf += 1
                for q in range(scope_indptr[f], scope_indptr[f + 1]):
                    u = scope_vars[q]
                    if u == v:
                        continue
                    if var_seen[u]:
                        cycle = True
                        continue
                    var_seen[u] = True
                    var_parent[u] = f
                    component[u] = n_comp
                    var_order[nv] = u
                    nv += 1
        n_comp += 1
    return cycle
