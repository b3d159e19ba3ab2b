"""Forbidden-label propagation: the labels that no finite labeling can use.

A ``-inf`` score forbids a state (a zero potential).  A label of a variable
is *dead* when its unary score is ``-inf``, or when some factor on the
variable has no finite entry that agrees with it and uses only live labels
of its other variables.  Removing dead labels until none is left
(generalized arc consistency) keeps every labeling with a finite score; a
variable left without a live label proves that the graph has none.
"""

from dataclasses import dataclass

import numpy as np

from .factor_graph import FactorGraph
from .structure import variable_factors

__all__ = ["Propagation", "propagate_forbidden_labels", "prune_dominated_labels"]


@dataclass
class Propagation:
    """Outcome of :func:`propagate_forbidden_labels`.

    Attributes
    ----------
    alive : ndarray of bool, shape (n_unary,)
        Per state (indexed like ``graph.unary``): whether some labeling with a
        finite score may use it.  Every finite labeling uses live states only.
    infeasible : bool
        True when no labeling has a finite score (proved).
    dead_var : int
        A variable left without a live label, or -1.
    n_pruned : int
        States with a finite unary score found dead.
    """

    alive: np.ndarray
    infeasible: bool
    dead_var: int
    n_pruned: int

    def pruned_graph(self, graph):
        """``graph`` with the dead states' unary scores set to ``-inf`` (the
        tables are shared, not copied); ``graph`` itself when none was pruned.

        Parameters
        ----------
        graph : FactorGraph
            The graph this propagation was run on.

        Returns
        -------
        graph : FactorGraph
        """
        if not self.n_pruned:
            return graph
        unary = np.where(self.alive, graph.unary, -np.inf)
        return graph.with_unary(unary)


def propagate_forbidden_labels(graph):
    """Remove the labels that no finite-score labeling uses.

    Costs one scan of the tables that hold a ``-inf`` entry, plus a rescan of
    such a table's factors each time one of their variables loses a label;
    graphs without ``-inf`` tables cost O(n_unary).

    Parameters
    ----------
    graph : FactorGraph

    Returns
    -------
    result : Propagation
    """
    from ._propagation_kernels import propagate_forbidden

    if not isinstance(graph, FactorGraph):
        raise TypeError(f"graph must be a FactorGraph, got {type(graph).__name__}")
    alive = np.isfinite(graph.unary)
    n_finite = int(alive.sum())
    table_hard = np.zeros(graph.n_tables, dtype=np.uint8)
    neg = np.flatnonzero(np.isneginf(graph.table_data))
    if neg.size:
        table_hard[np.searchsorted(graph.table_offsets, neg, side="right") - 1] = 1
    hard = table_hard[graph.table_ids]
    if hard.any() or n_finite < graph.unary.shape[0]:
        var_indptr, var_factors = variable_factors(graph)
        dead_var = int(propagate_forbidden(
            graph.n_states.astype(np.int64), graph.unary_offsets, graph.scope_indptr,
            graph.scope_vars, graph.table_ids, graph.table_offsets, graph.table_data,
            var_indptr, var_factors, hard, alive))
    else:
        dead_var = -1
    return Propagation(alive=alive, infeasible=dead_var >= 0, dead_var=dead_var,
                       n_pruned=n_finite - int(alive.sum()))


def prune_dominated_labels(graph, max_work=10**8):
    """Forbid labels that another label of the same variable dominates.

    Label ``a`` of variable ``v`` is dominated by label ``b`` when ``b``'s
    unary score is at least ``a``'s and every factor on ``v`` scores ``b``
    at least as high as ``a`` for every labeling of its other variables.
    Some maximum-score labeling then avoids ``a``: the pruned graph has the
    same MAP value (but not the same M best labelings).  Of labels that
    dominate each other one stays.

    Parameters
    ----------
    graph : FactorGraph
    max_work : int, default=10**8
        Table entries compared at most; the scan stops there (a pair whose
        comparison exits at its first entry costs 1), keeping what it pruned.

    Returns
    -------
    pruned : FactorGraph
        ``graph`` with the dominated labels' unary scores set to ``-inf``
        (tables shared), or ``graph`` itself when none is dominated.
    n_pruned : int
    """
    from ._propagation_kernels import prune_dominated

    if not isinstance(graph, FactorGraph):
        raise TypeError(f"graph must be a FactorGraph, got {type(graph).__name__}")
    alive = np.isfinite(graph.unary)
    var_indptr, var_factors = variable_factors(graph)
    n_pruned = int(prune_dominated(
        graph.n_states.astype(np.int64), graph.unary, graph.unary_offsets, graph.scope_indptr,
        graph.scope_vars, graph.table_ids, graph.table_offsets, graph.table_data, var_indptr,
        var_factors, alive, int(max_work)))
    if not n_pruned:
        return graph, 0
    return Propagation(alive=alive, infeasible=False, dead_var=-1,
                       n_pruned=n_pruned).pruned_graph(graph), n_pruned
