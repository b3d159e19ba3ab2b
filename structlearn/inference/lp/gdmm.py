"""GDMM for MAP inference over large factor domains (``gdmm``).

Greedy direction method of multipliers (Algorithm 1 of the MAP GDMM paper):
the augmented Lagrangian of the LP relaxation (eq. 3) is minimized over
node marginals ``x_i`` and factor marginals ``y_f`` restricted to small
active sets by ``n_pass`` passes over factors then nodes (the loop over
``s`` of Algorithm 1), then the multipliers move,
``mu_if += eta (M_if y_f - x_i)`` (eq. 9).  Per pass and factor, the entry
of largest descent (eq. 8) is
found by the four-case search over static sorted lists of the factor's
(shared) table, and ``y_f`` takes one projected-gradient step (eq. 6) with
the step constant ``Q_f = rho * max_j sum_l agree(j, l)`` over the active
set (a Gershgorin bound on ``rho ||M_A||^2``, so no line search is needed:
given ``x`` the factor blocks are independent).  Nodes add their best label
(eq. 7) and project exactly (eq. 4, whose printed ``mu / rho`` term must be
divided by ``|d(i)|`` as well).  Entries with zero mass leave the active
sets; multipliers below 1e-10 are dropped.

Stopping never looks at infeasibility inside active sets (the authors' code
did, and stopped at 9.51 where the optimum is 91.15).  Each iteration
computes a certified bound, the clique dual ``U(delta)`` at the multipliers
``delta = mu``, factor by factor with the same sparse search (the
extrapolated point ``mu + rho (M y - x)`` gave a looser bound in over 80 %
of the iterations measured on grid and complete graphs and doubled the
certificate cost), and the solver stops on a relative gap ``<= tol``, on ``max_iter``,
``time_limit`` or a stall.  Decoding: the heaviest active label of each node
and the argmax labels of the certificate, each improved by local search and
scored on the true graph.

Memory is O(active sets + per-edge messages + one set of sorted orders per
distinct pairwise table): a K = 1000 table shared by hundreds of factors is
sorted once and no factor ever allocates anything of its domain size.
Factors of order >= 3 use a scan of their table for the selection.
"""

import numpy as np

from ...oracles.sorted_tables import build_sorted_orders, make_pair_workspace, unary_orders
from ._gdmm_kernels import (ActiveSets, GraphIndex, MessageScratch, gdmm_certificate,
                            gdmm_iteration, node_active_argmax)
from ._lp_common import COMMON_DEFAULTS, Problem, Tracker, check_graph, check_params, positive

__all__ = ["gdmm_map"]

DEFAULTS = dict(COMMON_DEFAULTS, rho=0.03, eta=None, adapt_rho=True, max_active=64,
                n_pass=2)


def _pair_orders(graph, prob):
    shapes = np.zeros((graph.n_tables, 2), dtype=np.int64)
    pair = np.nonzero(graph.factor_orders == 2)[0]
    if pair.size:
        st = graph.scope_indptr[pair]
        shapes[graph.table_ids[pair], 0] = graph.n_states[graph.scope_vars[st]]
        shapes[graph.table_ids[pair], 1] = graph.n_states[graph.scope_vars[st + 1]]
    offs, data, _ = build_sorted_orders((prob.table_data, graph.table_offsets), shapes)
    return offs, data


class GdmmState:
    """Caller-allocated sparse state and scratch of the GDMM kernels."""

    def __init__(self, graph, prob, max_active):
        kmax = max(graph.max_states, 1)
        sizes = np.diff(graph.table_offsets)[graph.table_ids]
        capf = int(min(max_active, sizes.max())) if sizes.size else 1
        capn = int(min(max_active, kmax))
        capm = int(min(kmax, 4 * max_active))
        n_edges = graph.scope_vars.shape[0]
        ms = max(prob.max_order, 2)
        self.active = ActiveSets(
            np.zeros((graph.n_vars, capn), dtype=np.int64), np.zeros((graph.n_vars, capn)),
            np.zeros(graph.n_vars, dtype=np.int64),
            np.zeros((graph.n_factors, capf), dtype=np.int64), np.zeros((graph.n_factors, capf)),
            np.zeros(graph.n_factors, dtype=np.int64),
            np.zeros((n_edges, capm), dtype=np.int64), np.zeros((n_edges, capm)),
            np.zeros(n_edges, dtype=np.int64),
        )
        self.scratch = MessageScratch(
            np.zeros(prob.n_msg), np.full(prob.n_msg, -1, dtype=np.int64),
            np.zeros((ms, kmax), dtype=np.int64), np.zeros(ms, dtype=np.int64),
            np.zeros((ms, kmax)), np.zeros(kmax), np.full(kmax, -1, dtype=np.int64),
            np.zeros(kmax, dtype=np.int64),
        )
        self.ws = make_pair_workspace(kmax, kmax)

    def active_sizes(self):
        xa_n, ya_n = self.active.node_n, self.active.factor_n
        return float(xa_n.mean()) if xa_n.size else 0.0, float(ya_n.mean()) if ya_n.size else 0.0


def gdmm_map(graph, **params):
    """MAP by GDMM with active sets and sparse messages.

    Parameters
    ----------
    graph : FactorGraph
    max_iter : int or None, default=None
        Iteration cap; ``None``: 1000 without a time limit, none with one.
    time_limit : float or None, default=None
        Seconds from the call (set-up and compilation included); the solver
        stops before an iteration that would end past it.
    tol : float, default=1e-6
        Certified relative gap ``(upper_bound - score) / max(1, |upper_bound|)``.
    stall_iter : int, default=0
        Stop after this many iterations without a better bound or labeling
        (0 = never).
    bound_stall_iter : int, default=0
        Stop (status ``"stall"``) after this many iterations in which the
        bound did not fall by a relative 1e-6 (0 = never); branch and bound
        uses it to start branching once the relaxation has converged.
    rho : float, default=0.03
        Augmented-Lagrangian weight, in units of the largest absolute score.
        (rho = 1 is the authors' default and is much slower to converge.)
    eta : float or None, default=None
        Dual step; ``None`` uses ``rho`` (and follows it when it adapts).
    adapt_rho : bool, default=True
        Residual balancing every 10 iterations: ``rho`` doubles when the
        primal residual ``||My - x||`` exceeds 10x the dual residual
        ``rho ||x_new - x_old||`` and halves in the opposite case (both over
        the whole problem), staying within [rho / 4, 4 rho] of its start.
    max_active : int, default=64
        Capacity of each node and factor active set (multipliers: 4x).  A
        full set still follows the greedy direction: its entry of least
        mass makes room when the selected entry scores higher.
    n_pass : int, default=2
        Primal passes (factors, then nodes) per dual step: the loop over
        ``s`` of Algorithm 1.  One linearized pass leaves the primal far
        from the minimizer of the augmented Lagrangian on large domains,
        and the dual step ``eta = rho`` then oscillates (on complete_k400
        the bound stalled with 1 pass and kept falling with 2).
    local_search : bool, default=True
    verbose : int, default=0

    Returns
    -------
    result : MapResult
        ``history`` records per iteration the score, bound, gap, the squared
        infeasibility ``||My - x||^2`` over all edges and mean active-set sizes.
    """
    check_graph(graph)
    p = check_params("gdmm", params, DEFAULTS)
    rho = rho0 = positive(p, "rho")
    eta = rho if p["eta"] is None else positive(p, "eta")
    ma = p["max_active"]
    if isinstance(ma, bool) or not isinstance(ma, (int, np.integer)) or ma < 1:
        raise ValueError(f"max_active must be a positive integer, got {ma!r}")
    prob = Problem(graph)
    tr = Tracker(prob, "gdmm", p)
    if graph.n_factors == 0:
        return tr.trivial()
    order_offsets, order_data = _pair_orders(graph, prob)
    uorder = unary_orders(graph)
    st = GdmmState(graph, prob, int(ma))
    index = GraphIndex(prob.var_indptr, prob.var_edges, prob.edge_factor, uorder, order_data,
                       order_offsets, st.ws)
    labels = np.zeros(graph.n_vars, dtype=np.int64)
    cert_labels = np.zeros(graph.n_vars, dtype=np.int64)
    n_pass = p["n_pass"]
    if isinstance(n_pass, bool) or not isinstance(n_pass, (int, np.integer)) or n_pass < 1:
        raise ValueError(f"n_pass must be a positive integer, got {n_pass!r}")
    while True:
        infeas, added, dres = gdmm_iteration(prob.prob, rho, eta, n_pass, index, st.active,
                                             st.scratch)
        u = gdmm_certificate(prob.prob, rho, 0.0, index, st.active, st.scratch, cert_labels)
        tr.bound(u)
        tr.offer(cert_labels)
        active = st.active
        node_active_argmax(active.node_idx, active.node_val, active.node_n, prob.unary,
                           graph.unary_offsets, uorder, labels)
        tr.offer(labels)
        an, af = st.active_sizes()
        if tr.step(dual=u * prob.scale, infeasibility=float(infeas),
                   mean_active_node=an, mean_active_factor=af, added=int(added), rho=rho,
                   eta=eta):
            break
        if p["adapt_rho"] and tr.n_iter % 10 == 0:
            pr, dr = np.sqrt(infeas), rho * np.sqrt(dres)
            if pr > 10.0 * dr and rho < 4.0 * rho0:
                rho *= 2.0
            elif dr > 10.0 * pr and rho > 0.25 * rho0:
                rho *= 0.5
            if p["eta"] is None:
                eta = rho
    return tr.result()


# read by the MAP registry when it first loads its back-ends
METHODS = (
    dict(name="gdmm", solver=gdmm_map, params=DEFAULTS, tightening=True),
)
