"""Depth-first branch and bound for small pairwise graphs.

Where the local-polytope relaxation is loose and the graph small and dense
(random tables on a few complete variables, CSP-like instances), the LP-bounded
search of :mod:`.branch_and_bound` pays an LP solve per node.  A depth-first
search that fixes variables in a static order and bounds each node by the
conditioned unary scores plus, per free variable, the best entries of its
factors towards later variables (:func:`~._dfbb_kernels.dfbb_pairwise`) costs
O(n K) per node instead; with the best-bound-first label order it finds a good
incumbent on its first dive.  The search stops after a node budget, leaving
the instance to the LP-bounded search.
"""

import numpy as np

from ...graphs.factor_graph import FactorGraph

__all__ = ["pairwise_dfbb"]


def _neighbour_arrays(graph):
    """Each variable's neighbours (CSR) with the table offset and the strides
    of its own and the neighbour's label, for a graph of pairwise factors."""
    starts = graph.scope_indptr[:-1]
    p, q = graph.scope_vars[starts], graph.scope_vars[starts + 1]
    base = graph.table_offsets[graph.table_ids]
    kq = graph.n_states[q]
    ones = np.ones_like(kq)
    ends = np.concatenate([p, q])
    order = np.argsort(ends, kind="stable")
    nbr_var = np.concatenate([q, p])[order]
    nbr_base = np.concatenate([base, base])[order]
    stride_self = np.concatenate([kq, ones])[order]
    stride_other = np.concatenate([ones, kq])[order]
    nbr_ptr = np.searchsorted(ends[order], np.arange(graph.n_vars + 1)).astype(np.int64)
    return nbr_ptr, nbr_var, nbr_base, stride_self, stride_other


def pairwise_dfbb(graph, *, max_nodes, tol=1e-6, incumbent=None):
    """Exact MAP of a pairwise graph by depth-first branch and bound.

    Parameters
    ----------
    graph : FactorGraph
        Every factor of order 2, at most one per variable pair (merge
        parallel factors first).
    max_nodes : int
        Nodes evaluated at most.
    tol : float, default=1e-6
        Relative improvement below which a subtree is pruned.
    incumbent : ndarray of int64 or None
        A labeling to start from (prunes from the first node); returned when
        nothing beats it.

    Returns
    -------
    labels : ndarray of int64, shape (n_vars,)
        The best labeling found.
    score : float
        Its score (``-inf`` when none has a finite score).
    proved : bool
        Whether the search ended within ``max_nodes``: the labeling is then
        optimal within ``tol`` (or no finite labeling exists).
    nodes : int
    """
    from ._dfbb_kernels import dfbb_pairwise, static_order

    if not isinstance(graph, FactorGraph):
        raise TypeError(f"graph must be a FactorGraph, got {type(graph).__name__}")
    if np.any(graph.factor_orders != 2):
        raise ValueError("pairwise_dfbb needs a graph whose factors are all pairwise")
    labels = np.zeros(graph.n_vars, dtype=np.int64)
    start = -np.inf
    if incumbent is not None:
        labels[:] = incumbent
        start = float(graph.score(labels))
    if graph.n_vars == 0:
        return labels, 0.0, True, 0
    neighbours = tuple(_neighbour_arrays(graph))
    order = static_order(neighbours[0], neighbours[1])
    score, proved, nodes = dfbb_pairwise(
        graph.n_states.astype(np.int64), graph.unary, graph.unary_offsets, neighbours,
        graph.table_data, order, float(tol), int(max_nodes), start, labels)
    if score > -np.inf:
        score = graph.score(labels)  # the kernel's sum in another order
    return labels, float(score), bool(proved), int(nodes)
