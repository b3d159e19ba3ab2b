"""Lawler-Nilsson partitioning: M-best MAP over any MAP back-end.

The labelings not listed yet are covered by disjoint *subspaces*, each given
by label constraints: when the best labeling ``x`` of a subspace is listed,
the rest of the subspace splits along its free variables ``v_1, v_2, ...``
into the subspaces "``v_1 .. v_{k-1}`` as in ``x``, ``v_k`` not as in ``x``".
A subspace is a node that points to its parent, the parent's labeling and
``k``, so it costs O(1) memory; its constraints become ``-inf`` unary scores
of a copy of the unary vector (the factor tables are shared, never copied)
only when it is solved.

Subspaces are solved lazily, best bound first: a new one inherits its
parent's upper bound and is solved by the MAP back-end only when it reaches
the top of the queue.  With an exact back-end the queue pops labelings in
exact score order.  With an LP back-end every rank ``r`` gets a certified
bound: after ``r`` labelings are listed, every labeling not listed lies in an
open subspace, so the true ``r``-th best score is at most the larger of the
``r``-th listed score and the best open bound.
"""

import heapq
import time

import numpy as np

from .._budget import check_time_limit
from .._progress import quiet, report
from ._common import Deadline, final_status, heap_push, make_result
from ..registry import auto_method, check_method_params, get_method, solve_map

__all__ = ["nilsson_mbest"]


class _Subspace:
    """Constraints of a subspace, relative to its parent's listed labeling."""

    __slots__ = ("parent", "free", "k", "x")

    def __init__(self, parent, free, k, x):
        self.parent = parent  # None for the whole space
        self.free = free      # the parent's free variables (shared array)
        self.k = k            # free[:k] fixed to x, free[k] excluded from x
        self.x = x            # the parent's listed labeling (shared array)


class _Partition:
    """Materializes subspaces of one graph as constrained unary vectors."""

    def __init__(self, graph):
        self.graph = graph
        n_states = graph.n_states.astype(np.int64)
        self.state_var = np.repeat(np.arange(graph.n_vars, dtype=np.int64), n_states)
        self.state_label = (np.arange(graph.unary.shape[0], dtype=np.int64)
                            - graph.unary_offsets[self.state_var])

    def unary(self, node):
        """Unary scores of ``node``'s subspace and its fixed label per
        variable (-1 where free)."""
        g = self.graph
        fixed = np.full(g.n_vars, -1, dtype=np.int64)
        excluded = []
        while node.free is not None:  # the root (whole space) has no constraints
            pref = node.free[:node.k]
            fixed[pref] = node.x[pref]
            v = node.free[node.k]
            excluded.append(g.unary_offsets[v] + node.x[v])
            node = node.parent
        u = g.unary.copy()
        fv = fixed[self.state_var]
        u[(fv >= 0) & (self.state_label != fv)] = -np.inf
        if excluded:
            u[np.asarray(excluded, dtype=np.int64)] = -np.inf
        return u, fixed


    def children(self, node, unary, fixed, x):
        """The subspaces that cover ``node``'s subspace minus ``x``."""
        g = self.graph
        free = np.flatnonzero(fixed < 0)
        finite = np.add.reduceat(np.isfinite(unary).astype(np.int64), g.unary_offsets[:-1]) \
            if g.n_vars else np.zeros(0, dtype=np.int64)
        # a variable with a single allowed label gives an empty subspace
        return [_Subspace(node, free, k, x) for k in range(free.shape[0])
                if finite[free[k]] >= 2]


def nilsson_mbest(graph, m, *, map_method="auto", map_params=None, sub_time_limit=None,
                  time_limit=None):
    """M-best MAP by Lawler-Nilsson partitioning over a MAP back-end.

    Parameters
    ----------
    graph : FactorGraph
    m : int
    map_method : str, default="auto"
        MAP back-end of :func:`structlearn.inference.solve_map` for the
        subspaces (``"auto"``: chosen once from the graph's structure).
    map_params : dict or None
        Its parameters (``time_limit`` excluded: see ``sub_time_limit``).
    sub_time_limit : float or None
        Seconds per subspace solve (capped by what is left of
        ``time_limit``); ``None``: ``time_limit / (2 m + 1)`` when there is a
        time limit, else the sub-solver's own stopping rule.
    time_limit : float or None

    Returns
    -------
    result : MBestResult
        ``history`` holds one record per listed labeling: the number of
        subspace solves so far, the open subspaces and the best open bound.
        At the time limit the ranks not reached are filled with the best
        labelings of the subspaces already solved, each bounded by the best
        open bound.
    """
    t0 = time.perf_counter()
    deadline = Deadline(time_limit, t0)
    method = auto_method(graph) if map_method == "auto" else map_method
    get_method(method)  # unknown names: ValueError listing the available ones
    params = dict(map_params or {})
    if "time_limit" in params:
        raise TypeError("give the subspace time limit as sub_time_limit, not in map_params")
    check_method_params(method, params)
    part = _Partition(graph)

    # an iterative sub-solver runs until its limit or a certified optimum: by
    # default each subspace gets a share of the budget, so that many are solved
    per_solve = check_time_limit(sub_time_limit, "sub_time_limit")
    if per_solve is None and time_limit is not None:
        per_solve = time_limit / (2 * m + 1)

    def solve(node):
        unary, fixed = part.unary(node)
        tl = deadline.left()
        if per_solve is not None:
            tl = per_solve if tl is None else min(tl, per_solve)
        if tl is not None:
            tl = max(tl, 1e-3)
        with quiet():
            res = solve_map(graph.with_unary(unary), method, time_limit=tl, **params)
        return res, unary, fixed, max(res.upper_bound, res.score)

    heap, counter = [], 0
    listed, scores, open_bounds, history = [], [], [], []
    lost = -np.inf  # bounds of subspaces dropped without a labeling
    n_solves = 0
    root = _Subspace(None, None, 0, None)
    heap_push(heap, np.inf, counter, (root, None))
    stopped = False
    while heap and len(listed) < m:
        if deadline.passed():
            stopped = True
            break
        neg_key, _, (node, solved) = heapq.heappop(heap)
        key = -neg_key
        if solved is None:
            res, unary, fixed, ub = solve(node)
            n_solves += 1
            ub = min(ub, key)
            if res.score == -np.inf:
                lost = max(lost, ub)  # -inf when the back-end proved it empty
                continue
            counter += 1
            heap_push(heap, ub, counter, (node, (res.labels.copy(), res.score, unary, fixed)))
            continue
        x, score, unary, fixed = solved
        listed.append(x)
        scores.append(score)
        for child in part.children(node, unary, fixed, x):
            counter += 1
            heap_push(heap, key, counter, (child, None))
        best_open = max(-heap[0][0] if heap else -np.inf, lost)
        open_bounds.append(best_open)
        report("nilsson", len(listed), time.perf_counter() - t0, score, best_open,
               solves=n_solves)
        history.append({"rank": len(listed), "score": score, "solves": n_solves,
                        "open": len(heap), "open_bound": best_open,
                        "time": time.perf_counter() - t0})
    n_listed = len(listed)
    if stopped:
        # fill the ranks left with the best labelings of solved open subspaces
        pending = sorted((e for e in heap if e[2][1] is not None), key=lambda e: -e[2][1][1])
        for e in pending[:m - n_listed]:
            listed.append(e[2][1][0])
            scores.append(e[2][1][1])
    scores = np.asarray(scores, dtype=np.float64)
    order = np.argsort(-scores, kind="stable")  # LP back-ends may list out of order
    labels = np.asarray(listed, dtype=np.int64).reshape(-1, graph.n_vars)[order]
    scores = scores[order]
    # the r-th best labeling is listed or lies in an open subspace
    final_open = max(-heap[0][0] if heap else -np.inf, lost)
    bounds = np.maximum(scores, final_open)
    bounds[:n_listed] = np.minimum(bounds[:n_listed],
                                   np.maximum(scores[:n_listed], open_bounds))
    if stopped:
        status = "time_limit"
    else:
        status = final_status(scores, bounds, m, exhausted=not heap and lost == -np.inf)
    return make_result(graph, labels, scores, bounds, m, "nilsson", status, t0, history)


# read by the M-best registry when it first loads its back-ends
MBEST_METHODS = (
    dict(name="nilsson", solver=nilsson_mbest,
         params=("map_method", "map_params", "sub_time_limit")),
)
