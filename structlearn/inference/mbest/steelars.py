"""STEELARS: the spanning-tree-inequality Lagrangian relaxation of the M-best MAP LP.

Ranks are found one after the other: rank ``r`` maximizes the score over the
local polytope minus the labelings ``x^1 .. x^{r-1}`` already listed, each
excluded by spanning-tree inequalities

    I^T(mu, x^m) = sum_i (1 - d_i^T) mu_i(x^m_i) + sum_{ij in T} mu_ij(x^m_i, x^m_j) <= 0

(equal to 1 exactly at ``mu = x^m``, ``<= 0`` at every other labeling).  The
inequalities are dualized with multipliers ``lambda >= 0``; every dual value is
a certified upper bound on the best labeling not listed yet.

*Trees* (pairwise forests, joined into one tree by zero-score edges): the
Lagrangian is one max-product pass on the perturbed model (unaries
``theta_i - sum_m lambda_m (1 - d_i) [x_i = x^m_i]``, pairwise
``theta_ij - sum_m lambda_m [x_ij = x^m_ij]``) and its supergradient is
``I(x_hat, x^m)``; projected supergradient steps minimize it, with the paper's
``alpha_t = step / (eta_t + 1)`` (``eta_t`` = how often the dual value got
worse) or, by default, Polyak's step towards the best labeling found; a single
multiplier (rank 2) is set by exact one-dimensional cutting planes.  The LP is
tight for ``m = 2``.

*Loopy graphs*: dynamic supergradient.  The graph is covered by forests (the
tree cover, each edge in one forest, node scores split evenly); each active
spanning-tree inequality is a subproblem of its own; every subproblem gets
node multipliers ``delta`` kept at zero sum per ``(i, x_i)`` (the consensus
projection of the notes' errata, not a global mean).  Every ``inner``
iterations the separation oracle adds, for each listed labeling, the maximum
weight spanning tree of ``w_ij = mu_ij . x^m_ij - mu_i . x^m_i - mu_j . x^m_j``
(scipy's ``minimum_spanning_tree``) when its inequality is violated by the
running average of the subproblem solutions (the errata: the best integer
point can never violate one).

Integer labelings come from the subproblems' maximizers, polished by
iterated conditional modes, and the best labeling one variable away from a
listed one; the best of them not listed yet is rank ``r``.  The neighbours
also cover the case where no maximizer differs from the listed labelings (the
relaxation's optimum can sit on them): the result holds ``m`` distinct
labelings whenever the graph has that many of finite score.

*An approximation beyond the second best on trees.*  The M-best LP is tight
for ``m = 2`` on trees only (the paper, section 4); for later ranks and on
loopy graphs its optimum is fractional and the labelings listed are the best
ones the search met, not necessarily the true ranks (the paper's own figure
3d: the least accurate of the methods compared).  Every reported upper bound
is still certified; ``status`` is ``"exact"`` only when every rank meets its
bound.  ``method="nilsson"`` (partitioning, exact with an exact MAP back-end)
lists the true ranks.
"""

import time

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import minimum_spanning_tree

from ...graphs.factor_graph import FactorGraph
from ...graphs.structure import bfs_schedule, merge_parallel_factors
from .._budget import resolve_max_iter
from ..exact._exact_kernels import tree_max_product
from ..lp._lp_common import Problem, integer, nonnegative, positive
from ._common import Deadline, final_status, make_result

__all__ = ["steelars_mbest"]


# ------------------------------------------------------------------ pieces
class _PairwiseGraph:
    """A pairwise graph as edge arrays, made connected by zero-score edges."""

    def __init__(self, graph):
        if graph.n_factors and np.any(graph.factor_orders != 2):
            raise ValueError("method 'steelars' needs pairwise factors only")
        graph = merge_parallel_factors(graph)
        self.graph = graph
        n = graph.n_vars
        self.n_states = graph.n_states.astype(np.int64)
        self.unary_offsets = graph.unary_offsets.astype(np.int64)
        self.unary = graph.unary
        edges = graph.scope_vars.reshape(-1, 2).astype(np.int64)
        sizes = self.n_states[edges[:, 0]] * self.n_states[edges[:, 1]]
        starts = graph.table_offsets[graph.table_ids]
        tables = [graph.table_data[_ranges(starts, sizes)]]
        # join the components: root of each component to the first root
        component = bfs_schedule(graph)[4] if n else np.zeros(0, dtype=np.int64)
        roots = np.unique(component, return_index=True)[1] if n else np.zeros(0, np.int64)
        extra = np.stack([np.full(max(roots.size - 1, 0), roots[0] if roots.size else 0),
                          roots[1:]], axis=1).astype(np.int64).reshape(-1, 2)
        extra_sizes = self.n_states[extra[:, 0]] * self.n_states[extra[:, 1]]
        tables.append(np.zeros(int(extra_sizes.sum())))
        self.edges = np.concatenate([edges, extra])
        self.sizes = np.concatenate([sizes, extra_sizes]).astype(np.int64)
        self.table_offsets = np.zeros(self.edges.shape[0] + 1, dtype=np.int64)
        np.cumsum(self.sizes, out=self.table_offsets[1:])
        self.tables = np.concatenate(tables)
        self.n_edges = self.edges.shape[0]
        finite = np.concatenate([self.unary[np.isfinite(self.unary)],
                                 self.tables[np.isfinite(self.tables)]])
        self.scale = float(np.abs(finite).max()) if finite.size and np.abs(finite).max() > 0 \
            else 1.0

    def pair_index(self, edge_ids, x):
        """Flat entries of labeling ``x`` in the tables of ``edge_ids``."""
        e = self.edges[edge_ids]
        return (self.table_offsets[edge_ids] + x[e[:, 0]] * self.n_states[e[:, 1]]
                + x[e[:, 1]])

    def spanning_tree(self, weight):
        """Edge ids of a maximum-weight spanning tree (the graph is connected)."""
        n = self.n_states.shape[0]
        if self.n_edges == 0:
            return np.zeros(0, dtype=np.int64)
        # minimum_spanning_tree ignores zero entries: shift to >= 1
        cost = weight.max() - weight + 1.0
        mat = coo_matrix((cost, (self.edges[:, 0], self.edges[:, 1])), shape=(n, n)).tocsr()
        tree = minimum_spanning_tree(mat).tocoo()
        return _edge_ids(self.edges, tree.row, tree.col)

    def forest_cover(self):
        """Forests whose edge sets partition all edges (each maximal among
        the edges not covered yet)."""
        n = self.n_states.shape[0]
        left = np.arange(self.n_edges)
        forests = []
        while left.size:
            e = self.edges[left]
            mat = coo_matrix((np.ones(left.size), (e[:, 0], e[:, 1])), shape=(n, n)).tocsr()
            tree = minimum_spanning_tree(mat).tocoo()
            take = _edge_ids(e, tree.row, tree.col)
            forests.append(left[take])
            left = np.delete(left, take)
        return forests


def _edge_ids(edges, rows, cols):
    """Positions in ``edges`` (no parallel pairs) of the pairs ``(rows, cols)``,
    in either orientation, sorted."""
    n = int(edges.max()) + 1 if edges.size else 1
    key = np.minimum(edges[:, 0], edges[:, 1]) * n + np.maximum(edges[:, 0], edges[:, 1])
    want = np.minimum(rows, cols).astype(np.int64) * n + np.maximum(rows, cols)
    order = np.argsort(key)
    return np.sort(order[np.searchsorted(key[order], want)])


def _ranges(starts, sizes):
    """Concatenation of ``arange(s, s + z)`` for every (s, z)."""
    total = int(sizes.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offs = np.zeros(sizes.shape[0], dtype=np.int64)
    np.cumsum(sizes[:-1], out=offs[1:])
    return np.repeat(starts - offs, sizes) + np.arange(total)


class _TreeSub:
    """A forest subproblem over all variables, with its own working scores."""

    def __init__(self, pg, edge_ids, base_unary, base_tables):
        self.pg = pg
        self.edge_ids = np.asarray(edge_ids, dtype=np.int64)
        e = pg.edges[self.edge_ids]
        n_e = e.shape[0]
        self.scope_indptr = np.arange(0, 2 * n_e + 1, 2, dtype=np.int64)
        self.scope_vars = e.ravel().copy()
        self.table_ids = np.arange(n_e, dtype=np.int64)
        self.table_offsets = np.zeros(n_e + 1, dtype=np.int64)
        np.cumsum(pg.sizes[self.edge_ids], out=self.table_offsets[1:])
        self.base_unary = base_unary
        self.base_tables = base_tables
        self.unary = base_unary.copy()
        self.tables = base_tables.copy()
        g = FactorGraph.from_arrays(pg.n_states, self.unary, self.scope_indptr, self.scope_vars,
                                    self.table_ids, self.table_offsets, self.tables,
                                    validate=False)
        self.schedule = bfs_schedule(g)[:4]
        self.degree = np.bincount(self.scope_vars, minlength=pg.n_states.shape[0])
        self.x = np.zeros(pg.n_states.shape[0], dtype=np.int64)

    def local_pair_index(self, x):
        e = self.pg.edges[self.edge_ids]
        return self.table_offsets[:-1] + x[e[:, 0]] * self.pg.n_states[e[:, 1]] + x[e[:, 1]]

    def solve(self):
        """Maximize the working scores; returns the maximum."""
        pg = self.pg
        tree_max_product((pg.n_states, pg.unary_offsets, self.unary, self.scope_indptr,
                          self.scope_vars, self.table_ids, self.table_offsets, self.tables),
                         tuple(self.schedule), self.x)
        return float(self.unary[pg.unary_offsets[:-1] + self.x].sum()
                     + self.tables[self.local_pair_index(self.x)].sum())


class _Ranker:
    """Finds one rank: the best labeling not listed, with a certified bound."""

    def __init__(self, pg, params, deadline, problem):
        self.pg = pg
        self.p = params
        self.deadline = deadline
        self.problem = problem
        self.listed = []
        self.keys = set()

    def excluded(self, x):
        return x.tobytes() in self.keys

    def start_rank(self):
        self._ub, self._best, self._last, self._n = np.inf, -np.inf, 0, 0

    def should_stop(self, ub, best_score):
        """Certified, out of time, or ``stall_iter`` iterations without a
        better bound or labeling."""
        self._n += 1
        if _certified(ub, best_score, self.p["tol"]) or self.deadline.passed():
            return True
        if ub < self._ub - 1e-9 * max(1.0, abs(ub)) or best_score > self._best:
            self._last = self._n
        self._ub, self._best = min(self._ub, ub), max(self._best, best_score)
        stall = self.p["stall_iter"]
        return bool(stall) and self._n - self._last >= stall

    def add(self, x):
        self.listed.append(x.copy())
        self.keys.add(x.tobytes())

    def offer(self, x, best):
        """Polish ``x`` and keep it when it beats ``best`` and is not listed."""
        cands = [x]
        if self.p["local_search"]:
            y = x.copy()
            self.problem.improve(y)
            cands.append(y)
        for c in cands:
            if self.excluded(c):
                continue
            s = self.problem.score(c)
            if s > best[1]:
                best[0], best[1] = c.copy(), s
        return best


def _agreement(pg, tree_edges, x, y):
    """``I^T(x, y)`` for integer labelings on the tree ``tree_edges``."""
    agree = x == y
    deg = np.bincount(pg.edges[tree_edges].ravel(), minlength=x.shape[0])
    e = pg.edges[tree_edges]
    return float(((1 - deg) * agree).sum() + (agree[e[:, 0]] & agree[e[:, 1]]).sum())


def _rank_tree(rk, pg, sub, listed, tree_edges, max_iter, t_hist):
    """One rank on a tree: projected supergradient on lambda (one per listed)."""
    p = rk.p
    r = len(listed)
    lam = np.zeros(r)
    deg = sub.degree
    node_idx = [pg.unary_offsets[:-1] + x for x in listed]
    pair_idx = [sub.local_pair_index(x) for x in listed]
    unary_coef = (1 - deg).astype(np.float64)
    best = [None, -np.inf]
    ub, prev, eta = np.inf, np.inf, 0
    step = p["step"] * pg.scale
    a1 = rk.problem.score(listed[0]) if r == 1 else 0.0
    crossing, nudges = np.inf, 0
    n_iter = 0
    for n_iter in range(1, max_iter + 1):
        sub.unary[:] = sub.base_unary
        sub.tables[:] = sub.base_tables
        for m in range(r):
            if lam[m]:
                np.subtract.at(sub.unary, node_idx[m], lam[m] * unary_coef)
                sub.tables[pair_idx[m]] -= lam[m]
        val = sub.solve()
        ub = min(ub, val)
        x = sub.x
        g = np.array([_agreement(pg, tree_edges, x, y) for y in listed])
        if not np.any(g >= 1.0):
            rk.offer(x, best)
        if rk.should_stop(ub, best[1]):
            break
        if val > prev:
            eta += 1
        prev = val
        if r == 1 and p["step_rule"] != "paper":
            # one multiplier: the dual is a convex piecewise-linear function of
            # lambda; cut it exactly (Kelley's method in one dimension)
            if g[0] < 1.0:
                # x_hat's line theta(x_hat) - l I is increasing (I <= 0); the
                # listed labeling's line is theta(x^1) - l, decreasing
                crossing = min(crossing, (a1 - (val + lam[0] * g[0])) / (1.0 - g[0]))
            new = crossing if np.isfinite(crossing) else max(2.0 * lam[0], step)
            if new <= lam[0] * (1 + 1e-15) and g[0] >= 1.0:
                # at the kink the maximizer tie went to x^1: look just past it
                new = lam[0] + max(1e-12, 1e-12 * abs(lam[0]))
                nudges += 1
                if nudges > 3:
                    break
            lam[0] = max(new, 0.0)
            continue
        lam = np.maximum(0.0, lam + _step(p, step, eta, val, best[1], float(g @ g)) * g)
    t_hist.append({"iterations": n_iter, "upper_bound": ub})
    return best, ub


def _step(p, step, eta, value, best, norm2):
    """Step length: the paper's ``step / (eta + 1)``, or Polyak's
    ``(value - best) / ||g||^2`` towards the best labeling found (once there
    is one)."""
    if p["step_rule"] == "polyak" and np.isfinite(best) and np.isfinite(value) and norm2 > 0:
        return max(value - best, 0.0) / norm2
    return step / (eta + 1.0)


def _certified(ub, score, tol):
    if score == -np.inf:
        return ub == -np.inf
    return ub - score <= tol * max(1.0, abs(ub))


def _rank_loopy(rk, pg, forests, listed, max_iter, t_hist):
    """One rank on a loopy graph: dynamic supergradient over the tree cover
    plus one subproblem per active spanning-tree inequality."""
    p = rk.p
    n = pg.n_states.shape[0]
    n_lab = pg.unary.shape[0]
    p_cover = len(forests)
    # tree cover: node scores split evenly, edge scores to the forest holding the edge
    cover = [_TreeSub(pg, f, pg.unary / p_cover, pg.tables[_ranges(pg.table_offsets[f],
                                                                   pg.sizes[f])])
             for f in forests]
    active = []  # (m, tree edge ids, subproblem) of the spanning-tree inequalities
    lam = []
    deltas = [np.zeros(n_lab) for _ in cover]
    best = [None, -np.inf]
    ub, prev, eta = np.inf, np.inf, 0
    step = p["step"] * pg.scale
    # running averages of agreement with each listed labeling
    r = len(listed)
    agree_node = np.zeros((r, n))
    agree_edge = np.zeros((r, pg.n_edges))
    n_avg = 0
    edge_forest = np.empty(pg.n_edges, dtype=np.int64)
    for k, f in enumerate(forests):
        edge_forest[f] = k
    n_iter = 0
    for n_iter in range(1, max_iter + 1):
        if r and (n_iter - 1) % p["inner"] == 0 and n_avg:
            _separate(pg, listed, agree_node / n_avg, agree_edge / n_avg, active, lam, deltas,
                      n_lab)
            agree_node[:] = 0.0
            agree_edge[:] = 0.0
            n_avg = 0
        subs = cover + [a[2] for a in active]
        val = 0.0
        for k, sub in enumerate(cover):
            sub.unary[:] = sub.base_unary + deltas[k]
            val += sub.solve()
        for j, (m, tree, sub) in enumerate(active):
            lm = lam[j]
            sub.unary[:] = deltas[p_cover + j]
            np.subtract.at(sub.unary, pg.unary_offsets[:-1] + listed[m],
                           lm * (1 - sub.degree))
            sub.tables[:] = 0.0
            sub.tables[sub.local_pair_index(listed[m])] = -lm
            val += sub.solve()
        ub = min(ub, val)
        for sub in subs:
            rk.offer(sub.x, best)
        if rk.should_stop(ub, best[1]):
            break
        # running averages from the tree-cover solutions
        for m in range(r):
            for k, sub in enumerate(cover):
                ag = sub.x == listed[m]
                agree_node[m] += ag / p_cover
                e = pg.edges[sub.edge_ids]
                agree_edge[m, sub.edge_ids] += ag[e[:, 0]] & ag[e[:, 1]]
        n_avg += 1
        if val > prev:
            eta += 1
        prev = val
        # consensus: supergradient of delta is each subproblem's node indicator,
        # projected to zero sum per (i, x_i)
        ind = np.zeros((len(subs), n_lab))
        for k, sub in enumerate(subs):
            ind[k, pg.unary_offsets[:-1] + sub.x] = 1.0
        ind -= ind.mean(axis=0)
        g_lam = np.array([_agreement(pg, tree, sub.x, listed[m]) for m, tree, sub in active])
        alpha = _step(p, step, eta, val, best[1], float((ind * ind).sum() + g_lam @ g_lam))
        for k in range(len(subs)):
            deltas[k] -= alpha * ind[k]
        for j in range(len(active)):
            lam[j] = max(0.0, lam[j] + alpha * g_lam[j])
    t_hist.append({"iterations": n_iter, "upper_bound": ub, "inequalities": len(active)})
    return best, ub


def _best_unlisted_neighbour(pg, rk):
    """``[labeling, score]`` of the best finite-score labeling that differs
    from a listed one in one variable and is not listed (``[None, -inf]``
    when there is none): every flip of every listed labeling scored at once,
    in O(r (n K + |E| K))."""
    off = pg.unary_offsets[:-1]
    owner = np.repeat(np.arange(off.shape[0]), pg.n_states)  # variable of each flat label
    e = pg.edges
    ka, kb = pg.n_states[e[:, 0]], pg.n_states[e[:, 1]]
    toff = pg.table_offsets[:-1]
    best = [None, -np.inf]
    for x in rk.listed:
        base = rk.problem.score(x)
        gain = pg.unary - pg.unary[off + x][owner]
        current = pg.tables[toff + x[e[:, 0]] * kb + x[e[:, 1]]]
        # the first end takes each of its states, the second keeps x's, and back
        rep = np.repeat(np.arange(e.shape[0]), ka)
        k = _ranges(np.zeros_like(ka), ka)
        np.add.at(gain, off[e[rep, 0]] + k,
                  pg.tables[toff[rep] + k * kb[rep] + x[e[rep, 1]]] - current[rep])
        rep = np.repeat(np.arange(e.shape[0]), kb)
        k = _ranges(np.zeros_like(kb), kb)
        np.add.at(gain, off[e[rep, 1]] + k,
                  pg.tables[toff[rep] + x[e[rep, 0]] * kb[rep] + k] - current[rep])
        gain[off + x] = -np.inf  # not a flip
        for flat in np.argsort(-gain, kind="stable"):
            if not base + gain[flat] > max(best[1], -np.inf):
                break
            y = x.copy()
            y[owner[flat]] = flat - off[owner[flat]]
            if not rk.excluded(y):
                best = [y, rk.problem.score(y)]
                break
    if best[0] is not None and not np.isfinite(best[1]):
        best = [None, -np.inf]
    return best


def _separate(pg, listed, mu_node, mu_edge, active, lam, deltas, n_lab):
    """Add the most violated spanning-tree inequality of each listed labeling."""
    e = pg.edges
    for m in range(len(listed)):
        w = mu_edge[m] - mu_node[m][e[:, 0]] - mu_node[m][e[:, 1]]
        tree = pg.spanning_tree(w)
        violation = mu_node[m].sum() + w[tree].sum()
        if violation <= 1e-9:
            continue
        if any(a[0] == m and np.array_equal(a[1], tree) for a in active):
            continue
        sub = _TreeSub(pg, tree, np.zeros(n_lab), np.zeros(int(pg.sizes[tree].sum())))
        active.append((m, tree, sub))
        lam.append(0.0)
        deltas.append(np.zeros(n_lab))


DEFAULTS = {"max_iter": None, "inner": 20, "step": 1.0, "step_rule": "polyak", "tol": 1e-9,
            "stall_iter": 100, "local_search": True}


def steelars_mbest(graph, m, *, time_limit=None, **params):
    """M-best MAP by STEELARS (pairwise graphs).

    Parameters
    ----------
    graph : FactorGraph
        Pairwise factors only.
    m : int
    max_iter : int or None, default=None
        Supergradient iterations per rank; ``None``: 1000 without a time
        limit, unbounded with one.
    inner : int, default=20
        Primal/dual iterations between two calls of the separation oracle
        (loopy graphs).
    step : float, default=1.0
        Step scale, in units of the largest absolute score, of the paper's
        rule ``alpha_t = step / (eta_t + 1)``.
    step_rule : {"polyak", "paper"}, default="polyak"
        ``"paper"``: the rule above everywhere.  ``"polyak"``: Polyak's
        step ``(dual - best labeling) / ||supergradient||^2`` once a labeling
        is found (the paper's rule before); with a single multiplier (rank 2
        on a tree) the one-dimensional dual is minimized exactly by cutting
        planes instead.  On random trees with 1,000 nodes the paper's rule
        had not certified the second best after 1,000 iterations; this
        certified it in 12 (see BENCHMARKS.md).
    tol : float, default=1e-9
        A rank stops once its certified relative gap is below ``tol`` (the
        scores of neighbouring ranks often differ in the 6th digit, so the
        default asks for the rank itself).
    stall_iter : int, default=100
        A rank also stops after this many iterations without a better bound
        or labeling (0: never); on loopy graphs the M-best LP is rarely
        tight, and its bound stops moving long before ``max_iter``.
    local_search : bool, default=True
        Polish the subproblems' labelings by iterated conditional modes.
    time_limit : float or None

    Returns
    -------
    result : MBestResult
        ``history``: per rank the iterations, the dual bound and (loopy)
        the number of active spanning-tree inequalities.
    """
    unknown = sorted(set(params) - set(DEFAULTS))
    if unknown:
        raise TypeError(f"method 'steelars' got unexpected parameter(s): {', '.join(unknown)}")
    p = dict(DEFAULTS, **params)
    p["max_iter"] = integer({"max_iter": resolve_max_iter(p["max_iter"], time_limit)},
                            "max_iter")
    p["inner"] = integer(p, "inner")
    p["stall_iter"] = integer(p, "stall_iter", minimum=0)
    p["step"] = positive(p, "step")
    if p["step_rule"] not in ("paper", "polyak"):
        raise ValueError(f"step_rule must be 'paper' or 'polyak', got {p['step_rule']!r}")
    p["tol"] = nonnegative(p, "tol")
    t0 = time.perf_counter()
    deadline = Deadline(time_limit, t0)
    pg = _PairwiseGraph(graph)
    rk = _Ranker(pg, p, deadline, Problem(pg.graph))
    is_tree = pg.n_edges == max(pg.n_states.shape[0] - 1, 0)
    forests = [np.arange(pg.n_edges)] if is_tree else pg.forest_cover()
    tree_sub = _TreeSub(pg, forests[0], pg.unary.copy(), pg.tables.copy()) if is_tree else None
    scores, bounds, history = [], [], []
    stopped = exhausted = False
    for _ in range(m):
        if deadline.passed():
            stopped = True
            break
        hist = []
        rk.start_rank()
        if is_tree:
            best, ub = _rank_tree(rk, pg, tree_sub, rk.listed, forests[0], p["max_iter"], hist)
        else:
            best, ub = _rank_loopy(rk, pg, forests, rk.listed, p["max_iter"], hist)
        history.extend(hist)
        if ub > -np.inf and rk.listed and not deadline.passed():
            near = _best_unlisted_neighbour(pg, rk)
            hist[-1]["neighbour"] = bool(near[1] > best[1])
            if near[1] > best[1]:
                best = near
        if best[0] is None:
            exhausted = ub == -np.inf
            stopped = deadline.passed()
            break
        rk.add(best[0])
        scores.append(best[1])
        bounds.append(ub)
    scores = np.asarray(scores, dtype=np.float64)
    order = np.argsort(-scores, kind="stable")
    labels = np.asarray(rk.listed, dtype=np.int64).reshape(-1, graph.n_vars)[order]
    scores = scores[order]
    # the r-th best is at most the bound of the r-th search (one of the r best
    # is not among the r - 1 listed before it) and at most the (r-1)-th best
    bounds = np.maximum(np.minimum.accumulate(np.asarray(bounds, dtype=np.float64)), scores)
    status = "time_limit" if stopped else final_status(scores, bounds, m, exhausted)
    return make_result(graph, labels, scores, bounds, m, "steelars", status, t0, history)


# read by the M-best registry when it first loads its back-ends
MBEST_METHODS = (
    dict(name="steelars", solver=steelars_mbest, params=DEFAULTS),
)
