"""Tightening LP relaxations with short-cycle clusters.

The local-polytope relaxation that every LP back-end solves lets each
pairwise factor take its best entry independently around a cycle, even when
no labeling can satisfy all of them at once (a *frustrated* cycle): that is
where certified bounds stay loose.  A cluster factor over the cycle's
variables whose table is the sum of (shares of) the cycle's edge tables makes
the relaxation see the cycle as one piece.

:func:`cluster_graph` rewrites a graph so that every selected cycle becomes
one factor: each covered edge is removed and its table split equally among
the cycles that cover it.  The rewritten graph scores every labeling exactly
as the original (the same function, regrouped), so any back-end's certified
bound on it is a certified bound of the original MAP, and its relaxation is
at least as tight (averaging the cycles' edge marginals gives a feasible point
of the original relaxation with the same value).

Cycles are triangles and 4-cycles of the pairwise factors, ranked by their
*frustration*: the sum of their edges' best entries minus the best joint
labeling of those edges (:func:`frustrated_cycles`).
"""

import numpy as np

from ...graphs.factor_graph import FactorGraph

__all__ = ["cluster_graph", "frustrated_cycles"]

MAX_CLUSTER_ENTRIES = 4096  # largest joint table of a cycle cluster
MAX_CANDIDATES = 500_000  # short cycles examined at most (lowest variables first)
MAX_CANDIDATE_ENTRIES = 50_000_000  # and their joint tables' entries at most (~0.5 s)


class _Edges:
    """The pairwise factors of a graph merged per variable pair.

    Attributes
    ----------
    lo, hi : int64 (n_edges,)
        The pair, ``lo < hi``.
    offsets, tables : the summed table of each pair in C order over
        ``(x_lo, x_hi)``.
    factor_edge : int64 (n_factors,)
        Edge of each pairwise factor, -1 for the others.
    indptr, nbrs, nbr_edge : symmetric adjacency (CSR, neighbours sorted)
        with the edge of each entry.
    """

    def __init__(self, graph, keep=None):
        """``keep``: bool (n_factors,), the factors that may take part
        (default: all); the others get ``factor_edge == -1``."""
        orders = graph.factor_orders
        pair = orders == 2 if keep is None else (orders == 2) & keep
        pair_f = np.flatnonzero(pair)
        first = graph.scope_vars[graph.scope_indptr[pair_f]]
        second = graph.scope_vars[graph.scope_indptr[pair_f] + 1]
        lo, hi = np.minimum(first, second), np.maximum(first, second)
        key = lo * graph.n_vars + hi
        uniq, edge_of = np.unique(key, return_inverse=True)
        self.lo = (uniq // graph.n_vars).astype(np.int64)
        self.hi = (uniq % graph.n_vars).astype(np.int64)
        k = graph.n_states.astype(np.int64)
        sizes = k[self.lo] * k[self.hi]
        self.offsets = np.zeros(uniq.shape[0] + 1, dtype=np.int64)
        np.cumsum(sizes, out=self.offsets[1:])
        # sum the factors' tables per pair, transposed where the scope is (hi, lo)
        f_sizes = sizes[edge_of]
        starts = np.repeat(graph.table_offsets[graph.table_ids[pair_f]], f_sizes)
        within = np.arange(f_sizes.sum()) - np.repeat(np.cumsum(f_sizes) - f_sizes, f_sizes)
        k_second = np.repeat(k[second], f_sizes)
        k_first = np.repeat(k[first], f_sizes)
        flipped = np.repeat(first != lo, f_sizes)
        dest = np.where(flipped, (within % k_second) * k_first + within // k_second, within)
        self.tables = np.zeros(self.offsets[-1])
        np.add.at(self.tables, np.repeat(self.offsets[edge_of], f_sizes) + dest,
                  graph.table_data[starts + within])
        self.factor_edge = np.full(graph.n_factors, -1, dtype=np.int64)
        self.factor_edge[pair_f] = edge_of
        ends = np.concatenate([self.lo, self.hi])
        others = np.concatenate([self.hi, self.lo])
        eids = np.concatenate([np.arange(uniq.shape[0]), np.arange(uniq.shape[0])])
        order = np.lexsort((others, ends))
        self.nbrs = others[order].astype(np.int64)
        self.nbr_edge = eids[order].astype(np.int64)
        self.indptr = np.zeros(graph.n_vars + 1, dtype=np.int64)
        np.cumsum(np.bincount(ends, minlength=graph.n_vars), out=self.indptr[1:])

    def kernel_args(self):
        return self.indptr, self.nbrs, self.nbr_edge, self.lo, self.offsets, self.tables


def _scope_states(graph, k):
    """(n_factors, 2) domain sizes of the first two scope variables (1 where
    a factor has fewer)."""
    out = np.ones((graph.n_factors, 2), dtype=np.int64)
    orders = graph.factor_orders
    for p in range(2):
        has = orders > p
        out[has, p] = k[graph.scope_vars[graph.scope_indptr[:-1][has] + p]]
    return out


def frustrated_cycles(graph, max_cycles, *, max_entries=MAX_CLUSTER_ENTRIES, max_total=None,
                      max_work=MAX_CANDIDATE_ENTRIES):
    """The most frustrated triangles and 4-cycles of a graph's pairwise factors.

    Parameters
    ----------
    graph : FactorGraph
    max_cycles : int
        How many to return at most.
    max_entries : int
        Cycles whose joint table has more entries are skipped.
    max_total : int or None
        Entries of all the returned cycles' tables together at most (the
        most frustrated kept); ``None``: four times the entries of the
        factors' tables (a shared table counted for each factor), so that
        the tightened relaxation stays within a few times the plain one.
    max_work : int
        Entries of the candidates' joint tables scored at most (about 10 ns
        each; candidates beyond it, by lowest variables, are not examined).

    Returns
    -------
    cycles : ndarray of int64, shape (n_cycles, 4)
        Variables in cycle order, -1 padding a triangle; most frustrated
        first, only cycles with a positive frustration.
    frustration : ndarray of float64, shape (n_cycles,)
    """
    from ._cycle_kernels import cycle_gaps, short_cycles

    k = graph.n_states.astype(np.int64)
    # a cycle through a pair has at least a third variable, so its joint table
    # has at least the pair's entries times the smallest domain: larger pairs
    # cannot take part (and are not summed up)
    pair_entries = np.prod(_scope_states(graph, k), axis=1)
    k_min = max(int(k.min()), 2) if k.size else 2
    usable = (graph.factor_orders == 2) & (pair_entries * k_min <= max_entries)
    if not usable.any():
        return np.empty((0, 4), dtype=np.int64), np.empty(0)
    edges = _Edges(graph, usable)
    args = (edges.indptr, edges.nbrs, edges.nbr_edge, k, int(max_entries))
    n = short_cycles(*args, MAX_CANDIDATES, np.empty((0, 4), dtype=np.int64))  # count
    cand = np.empty((n, 4), dtype=np.int64)
    if n:
        short_cycles(*args, n, cand)
    # scoring a cycle reads its whole joint table: stop at max_work entries
    sizes = np.prod(np.where(cand >= 0, k[np.maximum(cand, 0)], 1), axis=1)
    n = int(np.count_nonzero(np.cumsum(sizes) <= max_work))
    cand, sizes = cand[:n], sizes[:n]
    gaps = np.empty(n)
    indptr, nbrs, nbr_edge, lo, off, tab = edges.kernel_args()
    cycle_gaps(cand, indptr, nbrs, nbr_edge, lo, off, tab, k, gaps)
    keep = np.flatnonzero(gaps > 1e-9 * np.maximum(1.0, np.abs(gaps)))
    order = keep[np.argsort(-gaps[keep], kind="stable")][:max_cycles]
    if max_total is None:
        max_total = 4 * int(np.sum(np.diff(graph.table_offsets)[graph.table_ids]))
    order = order[np.cumsum(sizes[order]) <= max_total]
    return cand[order], gaps[order]


def cluster_graph(graph, cycles):
    """``graph`` with each cycle's pairwise factors regrouped into one cluster.

    Parameters
    ----------
    graph : FactorGraph
    cycles : ndarray of int, shape (n_cycles, 4)
        As returned by :func:`frustrated_cycles` (each consecutive pair, and
        the last with the first, joined by a pairwise factor).

    Returns
    -------
    graph : FactorGraph
        Same variables, unary scores and score function; the covered pairwise
        factors replaced by one factor per cycle.
    """
    from ._cycle_kernels import cluster_tables

    cycles = np.asarray(cycles, dtype=np.int64).reshape(-1, 4)
    if cycles.shape[0] == 0:
        return graph
    # only the pairs inside the cycles are needed
    k = graph.n_states.astype(np.int64)
    in_cycle = np.zeros(graph.n_vars, dtype=bool)
    in_cycle[cycles[cycles >= 0]] = True
    outside = np.bincount(np.repeat(np.arange(graph.n_factors), graph.factor_orders),
                          weights=~in_cycle[graph.scope_vars], minlength=graph.n_factors)
    edges = _Edges(graph, outside == 0)
    indptr, nbrs, nbr_edge, lo, off, tab = edges.kernel_args()
    length = np.where(cycles[:, 3] < 0, 3, 4)
    coverage = np.zeros(edges.lo.shape[0])
    for p in range(4):
        a = cycles[:, p]
        b = np.where(p + 1 < length, cycles[:, (p + 1) % 4], cycles[:, 0])
        valid = p < length
        pairs = np.minimum(a, b)[valid] * graph.n_vars + np.maximum(a, b)[valid]
        e = np.searchsorted(edges.lo * graph.n_vars + edges.hi, pairs)
        np.add.at(coverage, e, 1.0)
    weight = np.where(coverage > 0, 1.0 / np.maximum(coverage, 1.0), 0.0)
    sizes = np.prod(np.where(cycles >= 0, k[np.maximum(cycles, 0)], 1), axis=1)
    table_off = np.zeros(cycles.shape[0] + 1, dtype=np.int64)
    np.cumsum(sizes, out=table_off[1:])
    new_tab = np.empty(table_off[-1])
    cluster_tables(cycles, indptr, nbrs, nbr_edge, lo, off, tab, k, weight, table_off, new_tab)

    fe = edges.factor_edge
    keep = np.flatnonzero((fe < 0) | (coverage[np.maximum(fe, 0)] == 0))
    orders = graph.factor_orders
    keep_orders = orders[keep]
    kept_mask = np.zeros(graph.n_factors, dtype=bool)
    kept_mask[keep] = True
    kept_scopes = graph.scope_vars[np.repeat(kept_mask, orders)]
    new_scopes = cycles[cycles >= 0]  # row-major: each cycle's variables in order
    scope_indptr = np.zeros(keep.shape[0] + cycles.shape[0] + 1, dtype=np.int64)
    np.cumsum(np.concatenate([keep_orders, length]), out=scope_indptr[1:])
    n_tables = graph.n_tables
    table_ids = np.concatenate([graph.table_ids[keep],
                                n_tables + np.arange(cycles.shape[0], dtype=np.int64)])
    table_offsets = np.concatenate([graph.table_offsets,
                                    graph.table_offsets[-1] + table_off[1:]])
    table_data = np.concatenate([graph.table_data, new_tab])
    return FactorGraph.from_arrays(graph.n_states, graph.unary, scope_indptr,
                                   np.concatenate([kept_scopes, new_scopes]), table_ids,
                                   table_offsets, table_data, validate=False)
