"""Roof duality for binary pairwise graphs: persistent labels by one minimum cut.

On a graph whose variables have at most two states and whose factors are all
pairwise, the local-polytope relaxation is solved exactly by a minimum cut in
a doubled graph with a node for ``x_p`` and one for its negation (roof
duality, Hammer, Hansen and Simeone 1984; the QPBO construction of Kolmogorov
and Rother 2007).  Every variable that the cut labels consistently (``p`` on
the source side and its negation on the sink side, or the reverse) keeps that
label in some maximum-score labeling (weak persistency), so it can be fixed
before any search; on submodular graphs (e.g. Potts smoothing) the cut labels
every variable and the labeling is a certified optimum.  The cut's capacity
gives the relaxation's bound.

Scores are maximized; the cut works on energies ``-score``.  A pairwise table
``theta(a, b)`` (energies ``A, B, C, D`` at ``00, 01, 10, 11``) is
``A + (C - A) a + (D - C) b + w (1 - a) b`` with ``w = B + C - A - D``: a
submodular term (``w >= 0``) becomes arcs ``p -> q`` and ``q' -> p'`` of
``w / 2``; otherwise ``w b + (-w) a b`` gives arcs ``p' -> q`` and
``q' -> p`` of ``-w / 2``.  A unary cost ``c`` on label 1 becomes
``s -> p``, ``p' -> t`` (``c >= 0``) or ``p -> t``, ``s -> p'`` (``-c / 2``
each after taking ``c`` into the constant).  Node ``p`` on the source side
means ``x_p = 0``, ``p'`` there means ``x_p = 1``.
"""

from dataclasses import dataclass

import numpy as np

from ...graphs.factor_graph import FactorGraph

__all__ = ["RoofDual", "condition_pairwise", "flow_network", "roof_dual"]

CUT_EPS = 1e-12  # residuals below this share of the largest capacity count as saturated


@dataclass
class RoofDual:
    """Outcome of :func:`roof_dual`.

    Attributes
    ----------
    labels : ndarray of int64, shape (n_vars,)
        The persistent label of each variable, -1 where the cut leaves it
        open.  Variables with one allowed state (a finite unary score) carry
        that state.
    upper_bound : float
        Upper bound on the maximum score (the relaxation's value).
    n_labeled : int
        Variables with a label (``labels >= 0``).
    """

    labels: np.ndarray
    upper_bound: float
    n_labeled: int


def _pair_entries(graph, factors, a, b):
    """Entries ``(a, b)`` of the tables of the pairwise ``factors`` (int64
    arrays of equal length)."""
    second = graph.scope_vars[graph.scope_indptr[factors] + 1]
    return graph.table_data[graph.table_offsets[graph.table_ids[factors]]
                            + a * graph.n_states[second] + b]


def flow_network(n_nodes, tails, heads, caps):
    """The arrays of :func:`~._maxflow_kernels.max_flow` for arcs
    ``tails[a] -> heads[a]`` of capacity ``caps[a]``, each with a reverse arc
    of capacity 0.

    Returns
    -------
    indptr : int64 (n_nodes + 1,)
    head, tail, rev : int64 (2 n_arcs,)
    res : float64 (2 n_arcs,)
    """
    m = caps.shape[0]
    all_tails = np.concatenate([tails, heads]).astype(np.int64)
    order = np.argsort(all_tails, kind="stable")
    where = np.empty(2 * m, dtype=np.int64)
    where[order] = np.arange(2 * m)
    head = np.concatenate([heads, tails]).astype(np.int64)[order]
    rev = where[(order + m) % (2 * m)]
    res = np.concatenate([caps, np.zeros(m)]).astype(np.float64)[order]
    tail = all_tails[order]
    indptr = np.searchsorted(tail, np.arange(n_nodes + 1)).astype(np.int64)
    return indptr, head, tail, rev, res


def roof_dual(graph):
    """Persistent labels and the relaxation bound of a binary pairwise graph.

    Parameters
    ----------
    graph : FactorGraph
        Every variable with at most 2 states, every factor of order 2, no
        ``-inf`` entry between allowed states (propagate forbidden labels
        first); variables whose unary score forbids one state are fixed to
        the other.

    Returns
    -------
    result : RoofDual or None
        None when the graph does not qualify.
    """
    from ._maxflow_kernels import max_flow, residual_reachable

    if not isinstance(graph, FactorGraph):
        raise TypeError(f"graph must be a FactorGraph, got {type(graph).__name__}")
    n = graph.n_vars
    if n == 0 or graph.n_states.max() > 2 or np.any(graph.factor_orders != 2):
        return None
    u = graph.unary_matrix()  # (n, 1 or 2), -inf past a variable's states
    if u.shape[1] == 1:
        u = np.hstack([u, np.full((n, 1), -np.inf)])
    allowed = np.isfinite(u)
    n_allowed = allowed.sum(axis=1)
    if np.any(n_allowed == 0):
        return None
    fixed = np.where(n_allowed == 1, np.argmax(allowed, axis=1), -1)
    free = fixed < 0
    # energies: a constant, the cost of label 1 over label 0 per free variable
    const = -float(np.sum(np.where(free, u[:, 0], u[np.arange(n), np.maximum(fixed, 0)])))
    e1 = np.where(free, u[:, 0] - u[:, 1], 0.0)
    starts = graph.scope_indptr[:-1]
    p, q = graph.scope_vars[starts], graph.scope_vars[starts + 1]
    fp, fq = fixed[p], fixed[q]
    both = (fp >= 0) & (fq >= 0)
    if both.any():
        const -= float(np.sum(_pair_entries(graph, np.flatnonzero(both), fp[both], fq[both])))
    # one end fixed: the table's row (or column) at its label is a unary term
    # on the other end
    for var, fo, var_first in ((q, fp, False), (p, fq, True)):
        sel = (fo >= 0) & (fixed[var] < 0)
        if not sel.any():
            continue
        f, lab = np.flatnonzero(sel), fo[sel]
        zero, one = np.zeros_like(lab), np.ones_like(lab)
        t0 = _pair_entries(graph, f, *((zero, lab) if var_first else (lab, zero)))
        t1 = _pair_entries(graph, f, *((one, lab) if var_first else (lab, one)))
        const -= float(np.sum(t0))
        np.add.at(e1, var[sel], t0 - t1)
    pair = (fp < 0) & (fq < 0)
    fpair = np.flatnonzero(pair)
    pp, qq = p[pair], q[pair]
    A, B, C, D = (-_pair_entries(graph, fpair, a, b) for a, b in ((0, 0), (0, 1), (1, 0), (1, 1)))
    if not (np.isfinite(const) and np.all(np.isfinite(e1)) and np.all(np.isfinite(A))
            and np.all(np.isfinite(B)) and np.all(np.isfinite(C)) and np.all(np.isfinite(D))):
        return None
    const += float(A.sum())
    np.add.at(e1, pp, C - A)
    np.add.at(e1, qq, D - C)
    w = B + C - A - D
    sub = w >= 0
    np.add.at(e1, qq[~sub], w[~sub])  # w b + (-w) a b for the others
    # arcs: nodes p (x_p), n + p (its negation), s = 2n, t = 2n + 1
    s, t = 2 * n, 2 * n + 1
    fv = np.flatnonzero(free)
    pos = e1[fv] >= 0
    const += float(e1[fv[~pos]].sum())
    c = np.abs(e1[fv]) / 2
    src = np.where(pos, fv, n + fv)        # s -> p (pos) or s -> p'
    snk = np.where(pos, n + fv, fv)        # p' -> t (pos) or p -> t
    ws = np.abs(w) / 2
    tails = np.concatenate([np.full(fv.size, s), snk, np.where(sub, pp, n + pp),
                            n + qq])
    heads = np.concatenate([src, np.full(fv.size, t), qq,
                            np.where(sub, n + pp, pp)])
    caps = np.concatenate([c, c, ws, ws])
    keep = caps > 0
    indptr, head, tail, rev, res = flow_network(2 * n + 2, tails[keep], heads[keep], caps[keep])
    eps = CUT_EPS * (float(caps.max()) if keep.any() else 1.0)
    flow = max_flow(indptr, head, tail, rev, res, s, t, eps)
    seen = np.empty(2 * n + 2, dtype=np.uint8)
    residual_reachable(indptr, head, res, s, eps, seen)
    labels = fixed.copy()
    zero = (seen[:n] == 1) & (seen[n:2 * n] == 0)
    one = (seen[:n] == 0) & (seen[n:2 * n] == 1)
    labels[free & zero] = 0
    labels[free & one] = 1
    return RoofDual(labels=labels, upper_bound=-(const + flow),
                    n_labeled=int(np.count_nonzero(labels >= 0)))


def condition_pairwise(graph, labels):
    """The graph over the unlabeled variables, given the labeled ones.

    A factor with one labeled variable adds its table's row (or column) at
    that label to the other variable's unary scores; factors with both
    variables labeled are dropped (a constant).  The reduced graph scores a
    labeling of its variables as the full graph scores it completed by
    ``labels``, minus that constant.

    Parameters
    ----------
    graph : FactorGraph
        Every factor of order 2.
    labels : ndarray of int64, shape (n_vars,)
        A label per variable, -1 for the unlabeled ones.

    Returns
    -------
    variables : ndarray of int64
        The unlabeled variables (sorted); variable ``j`` of the reduced
        graph is ``variables[j]``.
    reduced : FactorGraph
        Tables shared with ``graph``, not copied.
    """
    if np.any(graph.factor_orders != 2):
        raise ValueError("condition_pairwise needs a graph whose factors are all pairwise")
    labels = np.asarray(labels, dtype=np.int64)
    unary = graph.unary.copy()
    starts = graph.scope_indptr[:-1]
    p, q = graph.scope_vars[starts], graph.scope_vars[starts + 1]
    lp, lq = labels[p], labels[q]
    base = graph.table_offsets[graph.table_ids]
    nq = graph.n_states[q]
    for sel, var, row in (((lp >= 0) & (lq < 0), q, True), ((lq >= 0) & (lp < 0), p, False)):
        f = np.flatnonzero(sel)
        if not f.size:
            continue
        k = graph.n_states[var[f]]
        idx = np.arange(int(k.sum())) - np.repeat(np.cumsum(k) - k, k)  # the free label
        ff = np.repeat(f, k)
        if row:  # entries (lp, b): base + lp * nq + b
            entry = base[ff] + lp[ff] * nq[ff] + idx
        else:    # entries (a, lq): base + a * nq + lq
            entry = base[ff] + idx * nq[ff] + lq[ff]
        np.add.at(unary, graph.unary_offsets[var[ff]] + idx, graph.table_data[entry])
    variables = np.flatnonzero(labels < 0)
    local = np.full(graph.n_vars, -1, dtype=np.int64)
    local[variables] = np.arange(variables.size)
    kept = np.flatnonzero((lp < 0) & (lq < 0))
    n_states = graph.n_states[variables]
    st = graph.unary_offsets[variables]
    states = np.repeat(st, n_states) + (np.arange(int(n_states.sum()))
                                        - np.repeat(np.cumsum(n_states) - n_states, n_states))
    scope_vars = np.stack([local[p[kept]], local[q[kept]]], axis=1).ravel()
    indptr = np.arange(0, 2 * kept.size + 1, 2, dtype=np.int64)
    return variables, FactorGraph.from_arrays(
        n_states, unary[states], indptr, scope_vars, graph.table_ids[kept],
        graph.table_offsets, graph.table_data, validate=False)
