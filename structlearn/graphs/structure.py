"""Structure tests on factor graphs: chains, forests, components, schedules.

All functions look at the factor graph *as stored*: the bipartite graph
whose nodes are variables and factors, with an edge between a factor and
each variable of its scope.

Parallel factors
----------------
Two factors over the same pair of variables (or, more generally, two factors
sharing two or more variables) close a cycle ``u - f - v - g - u`` in the
factor graph, so such a graph is neither a chain nor a forest here. The
graph describes the same distribution as one with the parallel tables summed
into one factor; :func:`merge_parallel_factors` builds that graph, on which
the exact back-ends apply.
"""

import numpy as np

__all__ = [
    "bfs_schedule",
    "chain_order",
    "component_subgraphs",
    "connected_components",
    "enumeration_is_cheap",
    "incidence_csr",
    "is_chain",
    "is_forest",
    "labelings_at_most",
    "log10_n_labelings",
    "merge_parallel_factors",
    "variable_degrees",
    "variable_factors",
]


def _check_graph(graph):
    from .factor_graph import FactorGraph

    if not isinstance(graph, FactorGraph):
        raise TypeError(f"graph must be a FactorGraph, got {type(graph).__name__}")


def variable_factors(graph):
    """Factors incident to each variable, in CSR form.

    Parameters
    ----------
    graph : FactorGraph

    Returns
    -------
    var_indptr : ndarray of int64, shape (n_vars + 1,)
    var_factors : ndarray of int64, shape (scope_indptr[-1],)
        Factors of variable ``i`` are ``var_factors[var_indptr[i]:var_indptr[i + 1]]``,
        in increasing factor order.
    """
    _check_graph(graph)
    fid = np.repeat(np.arange(graph.n_factors, dtype=np.int64), graph.factor_orders)
    return incidence_csr(graph.scope_vars, fid, graph.n_vars)


def incidence_csr(scope_vars, factor_ids, n_vars):
    """CSR of the factors of each variable from flat scope entries.

    Parameters
    ----------
    scope_vars : ndarray of int, shape (n_entries,)
        Variable of each scope entry, in ``[0, n_vars)``.
    factor_ids : ndarray of int64, shape (n_entries,)
        Factor of each scope entry.
    n_vars : int

    Returns
    -------
    indptr : ndarray of int64, shape (n_vars + 1,)
    factors : ndarray of int64, shape (n_entries,)
        Factors of variable ``i`` are ``factors[indptr[i]:indptr[i + 1]]``, in
        the order of their entries.
    """
    perm = np.argsort(scope_vars, kind="stable")
    indptr = np.zeros(n_vars + 1, dtype=np.int64)
    np.cumsum(np.bincount(scope_vars, minlength=n_vars), out=indptr[1:])
    return indptr, np.ascontiguousarray(factor_ids[perm], dtype=np.int64)


def variable_degrees(graph):
    """Number of factors touching each variable, shape (n_vars,)."""
    _check_graph(graph)
    return np.bincount(graph.scope_vars, minlength=graph.n_vars).astype(np.int64)


def bfs_schedule(graph):
    """Breadth-first schedule of the variable-factor graph.

    Each connected component is rooted at its lowest-index variable.

    Parameters
    ----------
    graph : FactorGraph

    Returns
    -------
    var_order : ndarray of int64, shape (n_vars,)
        Variables in BFS order (parents before children).
    var_parent : ndarray of int64, shape (n_vars,)
        Factor through which each variable is reached, -1 for roots.
    factor_order : ndarray of int64, shape (n_factors_reached,)
        Factors in BFS order; all factors when the graph is a forest.
    factor_parent : ndarray of int64, shape (n_factors,)
        Variable through which each factor is reached.
    component : ndarray of int64, shape (n_vars,)
        Connected-component index of each variable.
    has_cycle : bool
        Whether the graph contains a cycle (then it is not a forest).
    """
    from ._structure_kernels import forest_bfs  # numba loads on first use

    indptr, vf = variable_factors(graph)
    n, m = graph.n_vars, graph.n_factors
    var_order = np.empty(n, dtype=np.int64)
    var_parent = np.empty(n, dtype=np.int64)
    factor_order = np.full(m, -1, dtype=np.int64)
    factor_parent = np.full(m, -1, dtype=np.int64)
    component = np.empty(n, dtype=np.int64)
    cycle = forest_bfs(
        indptr,
        vf,
        graph.scope_indptr,
        graph.scope_vars,
        var_order,
        var_parent,
        factor_order,
        factor_parent,
        component,
    )
    if cycle:
        factor_order = factor_order[factor_order >= 0]
    return var_order, var_parent, factor_order, factor_parent, component, bool(cycle)


def connected_components(graph):
    """Connected components of the variables (linked through shared factors).

    Returns
    -------
    n_components : int
    component : ndarray of int64, shape (n_vars,)
        Component index of each variable, numbered by lowest member.
    """
    *_, component, _ = bfs_schedule(graph)
    n_comp = int(component.max()) + 1 if component.size else 0
    return n_comp, component


def component_subgraphs(graph):
    """Split a graph into its connected components.

    Parameters
    ----------
    graph : FactorGraph

    Returns
    -------
    parts : list of (ndarray of int64, FactorGraph)
        For each component with at least one factor: its variables (sorted)
        and the graph over them, whose variable ``j`` is ``variables[j]``
        (factor tables shared with ``graph``, not copied).  Factors with an
        empty scope belong to no component.
    isolated : ndarray of int64
        Variables in no factor's scope.
    """
    from .factor_graph import FactorGraph

    _check_graph(graph)
    n_comp, comp = connected_components(graph)
    orders = graph.factor_orders
    scoped = np.flatnonzero(orders > 0)
    factor_comp = comp[graph.scope_vars[graph.scope_indptr[scoped]]]
    degree = np.bincount(graph.scope_vars, minlength=graph.n_vars)
    isolated = np.flatnonzero(degree == 0)
    by_comp = np.argsort(comp, kind="stable")
    var_starts = np.searchsorted(comp[by_comp], np.arange(n_comp + 1))
    f_order = np.argsort(factor_comp, kind="stable")
    f_starts = np.searchsorted(factor_comp[f_order], np.arange(n_comp + 1))
    local = np.empty(graph.n_vars, dtype=np.int64)
    parts = []
    for c in range(n_comp):
        factors = scoped[f_order[f_starts[c]:f_starts[c + 1]]]
        if not factors.size:
            continue
        variables = by_comp[var_starts[c]:var_starts[c + 1]]
        local[variables] = np.arange(variables.shape[0])
        n_states = graph.n_states[variables]
        starts = graph.unary_offsets[variables]
        states = np.repeat(starts - np.concatenate(([0], np.cumsum(n_states)[:-1])),
                           n_states) + np.arange(int(n_states.sum()))
        f_orders = orders[factors]
        indptr = np.concatenate(([0], np.cumsum(f_orders))).astype(np.int64)
        entries = np.repeat(graph.scope_indptr[factors] - indptr[:-1], f_orders) \
            + np.arange(indptr[-1])
        parts.append((variables, FactorGraph.from_arrays(
            n_states, graph.unary[states], indptr, local[graph.scope_vars[entries]],
            graph.table_ids[factors], graph.table_offsets, graph.table_data, validate=False)))
    return parts, isolated


def is_forest(graph):
    """Whether the factor graph (factors of any order) has no cycle.

    Parallel factors on the same variables count as a cycle (see the module
    notes and :func:`merge_parallel_factors`).

    Parameters
    ----------
    graph : FactorGraph

    Returns
    -------
    bool
    """
    _check_graph(graph)
    # a forest has #edges = #nodes - #components; cheap necessary test first
    if graph.scope_indptr[-1] > graph.n_vars + graph.n_factors - 1 and graph.n_factors:
        return False
    return not bfs_schedule(graph)[-1]


def _chain_walk(graph):
    from ._structure_kernels import chain_walk  # numba loads on first use

    indptr, vf = variable_factors(graph)
    order = np.empty(graph.n_vars, dtype=np.int64)
    link = np.empty(graph.n_vars, dtype=np.int64)
    placed = chain_walk(indptr, vf, graph.scope_indptr, graph.scope_vars, order, link)
    return order, link, placed


def _chain_precheck(graph):
    if graph.n_factors == 0:
        return True
    if np.any(graph.factor_orders != 2):
        return False
    return bool(variable_degrees(graph).max() <= 2)


def is_chain(graph):
    """Whether every component is a simple path of pairwise factors.

    A graph without factors (independent variables) counts as a chain of
    paths of length one; so does any disjoint union of paths.

    Parameters
    ----------
    graph : FactorGraph

    Returns
    -------
    bool
    """
    _check_graph(graph)
    if not _chain_precheck(graph):
        return False
    return _chain_walk(graph)[2] == graph.n_vars


def chain_order(graph):
    """Variable order along the paths of a chain graph.

    Parameters
    ----------
    graph : FactorGraph
        A graph for which :func:`is_chain` holds.

    Returns
    -------
    order : ndarray of int64, shape (n_vars,)
        Variables path after path, each path from its lowest-index end.
    link : ndarray of int64, shape (n_vars,)
        ``link[k]`` is the factor joining ``order[k - 1]`` and ``order[k]``,
        or -1 where a new path starts (always at ``k = 0``).

    Raises
    ------
    ValueError
        If the graph is not a chain.
    """
    _check_graph(graph)
    if not _chain_precheck(graph):
        raise ValueError(
            "graph is not a chain: it needs pairwise factors only and at most two "
            "factors per variable"
        )
    order, link, placed = _chain_walk(graph)
    if placed != graph.n_vars:
        raise ValueError("graph is not a chain: it contains a cycle")
    return order, link


def merge_parallel_factors(graph):
    """Sum factors with the same variable set into one factor.

    Factors over the same set of variables (in any scope order) are merged
    into the first of them; tables of the others are transposed to its scope
    order and added. Factors with no parallel partner keep their shared table
    ids, so templated graphs stay compact. The result scores every labeling
    exactly as ``graph`` does.

    Parameters
    ----------
    graph : FactorGraph

    Returns
    -------
    merged : FactorGraph
        ``graph`` itself when no two factors share a variable set.
    """
    from .factor_graph import FactorGraph

    _check_graph(graph)
    m = graph.n_factors
    if m < 2:
        return graph
    orders = graph.factor_orders
    # canonical key: sorted scope, padded to the max order
    max_order = int(orders.max())
    keys = np.full((m, max_order + 1), -1, dtype=np.int64)
    keys[:, 0] = orders
    rows = np.repeat(np.arange(m), orders)
    cols = np.arange(graph.scope_vars.shape[0]) - np.repeat(graph.scope_indptr[:-1], orders)
    keys[rows, 1 + cols] = graph.scope_vars
    keys[:, 1:] = np.sort(np.where(keys[:, 1:] < 0, np.iinfo(np.int64).max, keys[:, 1:]), axis=1)
    # groups of equal keys (a stable lexicographic sort: np.unique over rows
    # costs several times more)
    order = np.lexsort(keys.T[::-1])
    sorted_keys = keys[order]
    opens = np.ones(m, dtype=bool)
    opens[1:] = np.any(sorted_keys[1:] != sorted_keys[:-1], axis=1)
    if opens.all():
        return graph
    first = order[opens]  # each group's lowest factor
    counts = np.diff(np.append(np.flatnonzero(opens), m))
    inverse = np.empty(m, dtype=np.int64)
    inverse[order] = np.cumsum(opens) - 1
    keep = np.zeros(m, dtype=bool)
    keep[first] = True
    dup_groups = np.flatnonzero(counts > 1)
    new_tables = []
    new_ids = graph.table_ids.copy()
    members = np.argsort(inverse, kind="stable")
    starts = np.zeros(counts.shape[0] + 1, dtype=np.int64)
    np.cumsum(counts, out=starts[1:])
    # one Python step per merged group (parallel factors are rare)
    for g in dup_groups:
        fs = members[starts[g] : starts[g + 1]]
        base = fs[0]
        scope = list(graph.scope(base))
        acc = np.array(graph.factor_table(base), dtype=np.float64)
        for f in fs[1:]:
            sc = list(graph.scope(f))
            acc = acc + np.transpose(graph.factor_table(f), [sc.index(v) for v in scope])
        new_ids[base] = graph.n_tables + len(new_tables)
        new_tables.append(acc.ravel())
    kept = np.flatnonzero(keep)
    scopes_indptr = np.zeros(kept.shape[0] + 1, dtype=np.int64)
    np.cumsum(orders[kept], out=scopes_indptr[1:])
    sel = np.repeat(graph.scope_indptr[kept], orders[kept]) + (
        np.arange(scopes_indptr[-1]) - np.repeat(scopes_indptr[:-1], orders[kept])
    )
    sizes = np.array([t.shape[0] for t in new_tables], dtype=np.int64)
    offsets = np.concatenate([graph.table_offsets, graph.table_offsets[-1] + np.cumsum(sizes)])
    return FactorGraph.from_arrays(
        graph.n_states,
        graph.unary,
        scopes_indptr,
        graph.scope_vars[sel],
        new_ids[kept],
        offsets,
        np.concatenate([graph.table_data] + new_tables),
        validate=False,
    )


# ---------------------------------------------------------- labelings counts
def log10_n_labelings(graph):
    """log10 of the number of joint labelings (the count itself may overflow)."""
    return float(np.log10(graph.n_states.astype(np.float64)).sum()) if graph.n_vars else 0.0


def labelings_at_most(graph, limit):
    """The number of joint labelings of ``graph`` when it is at most
    ``limit``, else None (no overflow for graphs of any size)."""
    if log10_n_labelings(graph) > np.log10(max(limit, 1)) + 1e-9:
        return None
    count = int(np.prod(graph.n_states.astype(object))) if graph.n_vars else 1
    return count if count <= limit else None


def enumeration_is_cheap(graph, work):
    """The number of joint labelings of ``graph`` when enumerating them costs
    at most ``work`` (labelings times factors, about 4 ns each), else None."""
    return labelings_at_most(graph, work // max(graph.n_factors, 1))
