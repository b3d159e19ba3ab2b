"""AD3: alternating directions dual decomposition with active-set factor QPs.

ADMM on the LP relaxation (thesis 3.4.1, maximization form; normalized
scores).  Each unary is split evenly over its factors (``theta_i / N_i``,
not added in full to every factor).  Per iteration: every factor solves its
quadratic subproblem by a warm-started active-set method (see
:mod:`._ad3_kernels`); node beliefs become the average of their factors'
marginals; multipliers move by ``rho`` times the disagreement.  ``rho`` is
adapted by residual balancing (x2 when the primal residual is 10x the dual
one, /2 in the opposite case).

Certified bound: with ``delta_fi = -(theta_i / N_i + lam_fi)``, the clique
dual ``U(delta)`` is evaluated exactly (it equals the AD3 dual
``sum_f max_x [theta_f + sum_i (theta_i / N_i + lam_fi)]`` whenever the
multipliers of each variable sum to zero, and stays valid when rounding
breaks that).  Decoding: argmax of each node belief.

The result carries the node beliefs (``MapResult.beliefs``) and the solver's
state (``MapResult.state``, an :class:`AD3State`); passing that state as
``init_state`` to a solve of a graph with the same variables and factors
(other scores, e.g. a branch-and-bound child with a label fixed) starts from
it instead of from zero.  Every bound stays certified whatever the start: the
clique dual is valid for any multipliers.
"""

from dataclasses import dataclass

import numpy as np

from ._ad3_kernels import ad3_node_and_dual_step, ad3_pass
from ._lp_common import COMMON_DEFAULTS, Problem, Tracker, check_graph, check_params, positive
from ._lp_kernels import argmax_segments, clique_dual, label_dual_bounds

__all__ = ["AD3State", "ad3_map"]

DEFAULTS = dict(COMMON_DEFAULTS, rho=0.1, adapt_rho=True, max_active=64, max_inner=10,
                init_state=None)


@dataclass
class AD3State:
    """Where an AD3 solve stopped, in the graph's own score units.

    Attributes
    ----------
    multipliers : float64 (n_msg,)
        ``lam`` per (factor, scope position, state), in score units.
    beliefs : float64 (n_unary,)
        Node beliefs (flat, the graph's unary layout).
    active_idx : int64 (n_factors, m)
        Active configurations of each factor (flat C-order indices).
    active_val : float64 (n_factors, m)
        Their weights.
    active_n : int64 (n_factors,)
        Active set sizes.
    rho : float
        Penalty, in score units.
    """

    multipliers: np.ndarray
    beliefs: np.ndarray
    active_idx: np.ndarray
    active_val: np.ndarray
    active_n: np.ndarray
    rho: float

    @property
    def nbytes(self):
        return sum(a.nbytes for a in (self.multipliers, self.beliefs, self.active_idx,
                                       self.active_val, self.active_n))


def _check_state(state, graph, n_msg):
    if not isinstance(state, AD3State):
        raise TypeError(f"init_state must be an AD3State (a previous result's state), "
                        f"got {type(state).__name__}")
    nf = graph.n_factors
    if (state.multipliers.shape != (n_msg,) or state.beliefs.shape != graph.unary.shape
            or state.active_n.shape != (nf,) or state.active_idx.shape[0] != nf
            or state.active_val.shape != state.active_idx.shape):
        raise ValueError("init_state was saved from a graph with other variables or factors "
                         f"({state.multipliers.shape[0]} multipliers, {state.active_n.shape[0]} "
                         f"factors; this graph has {n_msg} and {nf})")


def ad3_map(graph, **params):
    """MAP by AD3 with an active-set QP per factor.

    Parameters
    ----------
    graph : FactorGraph
    max_iter, time_limit, tol, stall_iter, bound_stall_iter, local_search, verbose
        As for :func:`structlearn.inference.lp.dual_decomposition.psdd_map`.
    rho : float, default=0.1
        Initial augmented-Lagrangian penalty (normalized units).
    adapt_rho : bool, default=True
        Residual balancing of ``rho``.
    max_active : int, default=64
        Capacity of each factor's active set (also bounded by the factor's
        domain size).
    max_inner : int, default=10
        Active-set iterations per factor and ADMM iteration.
    init_state : AD3State or None, default=None
        Start from this state (``MapResult.state`` of an earlier solve on a
        graph with the same variables and factors) instead of from zero.

    Returns
    -------
    result : MapResult
        With ``beliefs`` (the node beliefs), ``state`` (an
        :class:`AD3State`) and ``label_bounds`` (the last dual's bound per
        label) set.
    """
    check_graph(graph)
    p = check_params("ad3", params, DEFAULTS)
    rho = positive(p, "rho")
    for name in ("max_active", "max_inner"):
        if isinstance(p[name], bool) or not isinstance(p[name], int) or p[name] < 1:
            raise ValueError(f"{name} must be a positive integer, got {p[name]!r}")
    prob = Problem(graph)
    tr = Tracker(prob, "ad3", p)
    if graph.n_factors == 0:
        return tr.trivial()
    sizes = np.diff(graph.table_offsets)[graph.table_ids]
    cap = int(min(p["max_active"], sizes.max()))
    nf = graph.n_factors
    act_idx = np.zeros((nf, cap), dtype=np.int64)
    act_val = np.zeros((nf, cap))
    act_n = np.zeros(nf, dtype=np.int64)
    deg = prob.degree.astype(np.float64)
    inv_deg = np.where(deg > 0, 1.0 / np.maximum(deg, 1.0), 0.0)
    lam = np.zeros(prob.n_msg)
    marg = np.zeros(prob.n_msg)
    tmp = np.zeros(prob.n_msg)
    delta = np.zeros(prob.n_msg)
    cfg = np.zeros((cap + 1, max(prob.max_order, 1)), dtype=np.int64)
    # node beliefs start at the node argmax; isolated variables keep it
    pbel = np.zeros(prob.unary.shape[0])
    start = np.zeros(graph.n_vars, dtype=np.int64)
    argmax_segments(prob.unary, graph.unary_offsets, start)
    pbel[graph.unary_offsets[:-1] + start] = 1.0
    init = p["init_state"]
    if init is not None:
        _check_state(init, graph, prob.n_msg)
        m = min(cap, init.active_idx.shape[1])
        act_idx[:, :m] = init.active_idx[:, :m]
        act_val[:, :m] = init.active_val[:, :m]
        np.minimum(init.active_n, m, out=act_n)
        lam[:] = init.multipliers / prob.scale
        pbel[:] = init.beliefs
        rho = float(init.rho) / prob.scale
        if not (rho > 0 and np.isfinite(rho)):
            raise ValueError(f"init_state has a bad penalty rho={init.rho!r}")
    theta_hat = np.empty(prob.unary.shape[0])
    labels = np.zeros(graph.n_vars, dtype=np.int64)
    while True:
        inner = ad3_pass(prob.prob, lam, pbel, rho, inv_deg, act_idx, act_val, act_n, marg,
                         tmp, cfg, int(p["max_inner"]))
        pres, dres = ad3_node_and_dual_step(prob.prob, marg, lam, pbel, rho, inv_deg, delta)
        u = clique_dual(prob.prob, delta, theta_hat, prob.lab, labels)
        tr.bound(u)
        argmax_segments(pbel, graph.unary_offsets, labels)
        tr.offer(labels)
        pr = float(np.sqrt(pres))
        dr = float(rho * np.sqrt(dres))
        if tr.step(dual=u * prob.scale, primal_residual=pr, dual_residual=dr, rho=rho,
                   inner=int(inner)):
            break
        if p["adapt_rho"]:
            if pr > 10.0 * dr:
                rho *= 2.0
            elif dr > 10.0 * pr:
                rho *= 0.5
    res = tr.result()
    res.beliefs = pbel
    bounds = np.empty(prob.unary.shape[0])
    label_dual_bounds(prob.prob, delta, theta_hat, tmp, prob.lab, bounds)
    res.label_bounds = bounds * prob.scale
    used = max(int(act_n.max()), 1)
    res.state = AD3State(multipliers=lam * prob.scale, beliefs=pbel.copy(),
                         active_idx=act_idx[:, :used].copy(), active_val=act_val[:, :used].copy(),
                         active_n=act_n, rho=rho * prob.scale)
    return res


# read by the MAP registry when it first loads its back-ends
METHODS = (
    dict(name="ad3", solver=ad3_map, params=DEFAULTS, tightening=True),
)
