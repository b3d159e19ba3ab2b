"""Shrinking a search by what its LP dual and its hard constraints rule out.

*Reduced-cost fixing*: an LP back-end's dual, with one variable's label held
fixed, bounds every labeling that takes that label
(:attr:`~structlearn.inference.result.MapResult.label_bounds`).  A label whose
bound is at most a known labeling's score (plus the search's tolerance) is in
no better labeling, and can be forbidden without losing a better one.  Near a
tight relaxation most labels go (about three quarters of them at the root of
a 50 x 50 Potts grid with 8 labels).

*Smaller domains*: the restricted graph is searched over its allowed labels
only (:func:`drop_forbidden_labels`), so that every LP iteration on it costs
what its allowed table entries cost, and no forbidden label looks like a hard
constraint.

*Conditioning*: a variable of the restriction left with one label is a
constant; conditioning on it (:func:`.roof_duality.condition_pairwise`)
removes it from the graph and may split the rest into components.
"""

import numpy as np

from ...graphs.factor_graph import FactorGraph

__all__ = ["drop_forbidden_labels", "forbid_by_label_bounds", "ruled_out"]


def ruled_out(unary, label_bounds, cutoff):
    """The allowed labels (finite ``unary`` entries) whose bound is at most
    ``cutoff``: flat indices, int64."""
    return np.flatnonzero(np.isfinite(unary) & (label_bounds <= cutoff))


def forbid_by_label_bounds(graph, label_bounds, cutoff, max_share):
    """``graph`` with the labels whose dual bound is at most ``cutoff``
    forbidden, or None when that keeps more than ``max_share`` of its
    allowed labels.

    Parameters
    ----------
    graph : FactorGraph
    label_bounds : ndarray of float64, shape (n_unary,)
        Per label (the graph's unary layout), an upper bound on the score of
        every labeling that takes it.
    cutoff : float
        A score that only a better labeling beats (an incumbent's, plus the
        search's tolerance).
    max_share : float
        Largest share of the allowed labels kept for which the restricted
        graph is returned.

    Returns
    -------
    restricted : FactorGraph or None
        The same factors (tables shared) with ``-inf`` unary scores on the
        forbidden labels: every labeling that scores above ``cutoff`` in
        ``graph`` is a labeling of ``restricted``, with the same score.
        None also when no label is forbidden.
    """
    dead = ruled_out(graph.unary, label_bounds, cutoff)
    n_allowed = int(np.isfinite(graph.unary).sum())
    if not dead.size or n_allowed - dead.size > max_share * n_allowed:
        return None
    unary = graph.unary.copy()
    unary[dead] = -np.inf
    return graph.with_unary(unary)


def drop_forbidden_labels(graph):
    """The pairwise ``graph`` over each variable's allowed labels only.

    Parameters
    ----------
    graph : FactorGraph
        Every factor of order 2; forbidden labels are ``-inf`` unary scores.

    Returns
    -------
    compact : FactorGraph or None
        One table per factor, sliced to the allowed labels of its two
        variables; it scores a labeling as ``graph`` scores its image under
        ``original``.  None when a variable has no allowed label.
    original : ndarray of int64, shape (compact.unary.shape[0],)
        The label in ``graph`` of each compact label (flat, the compact
        graph's unary layout): variable ``i``'s label ``j`` is
        ``original[compact.unary_offsets[i] + j]``.
    """
    allowed = np.isfinite(graph.unary)
    owner = np.repeat(np.arange(graph.n_vars), graph.n_states)
    n_states = np.bincount(owner[allowed], minlength=graph.n_vars).astype(np.int64)
    if np.any(n_states == 0):
        return None, None
    kept = np.flatnonzero(allowed)
    original = kept - graph.unary_offsets[owner[kept]]
    offsets = np.zeros(graph.n_vars + 1, dtype=np.int64)
    np.cumsum(n_states, out=offsets[1:])
    starts = graph.scope_indptr[:-1]
    a, b = graph.scope_vars[starts], graph.scope_vars[starts + 1]
    sizes = n_states[a] * n_states[b]
    table_offsets = np.zeros(graph.n_factors + 1, dtype=np.int64)
    np.cumsum(sizes, out=table_offsets[1:])
    # each new entry: its factor, then its two compact labels, then the old entry
    factor = np.repeat(np.arange(graph.n_factors), sizes)
    local = np.arange(int(table_offsets[-1])) - table_offsets[factor]
    nb = n_states[b][factor]
    la = original[offsets[a[factor]] + local // nb]
    lb = original[offsets[b[factor]] + local % nb]
    base = graph.table_offsets[graph.table_ids[factor]]
    data = graph.table_data[base + la * graph.n_states[b[factor]] + lb]
    compact = FactorGraph.from_arrays(
        n_states, graph.unary[kept], graph.scope_indptr, graph.scope_vars,
        np.arange(graph.n_factors, dtype=np.int64), table_offsets, data, validate=False)
    return compact, original
