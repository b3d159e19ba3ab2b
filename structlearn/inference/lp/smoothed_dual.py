"""Smoothed clique dual: accelerated gradient (``fista``) and star
coordinate minimization (``scm``), both with temperature annealing.

The smoothed dual (thesis 3.2, maximization form) replaces every max of the
clique dual by ``smax_tau(a) = tau^-1 log sum exp(tau a) >= max a``, so
``U_tau(delta) >= U(delta) >= optimum``: it is a smooth, convex upper bound.
Both methods minimize ``U_tau`` and anneal ``tau <- alpha tau`` once the
gradient norm has dropped below ``beta`` times its value at the start of the
stage (thesis 5.1.6), up to ``tau_max``.  The certified bound reported is the
non-smooth ``U(delta)`` of the iterates (never looser than ``U_tau``).
Temperatures are in units of the inverse largest absolute score.
"""

import numpy as np

from ._lp_common import COMMON_DEFAULTS, Problem, Tracker, check_graph, check_params, positive
from ._lp_kernels import clique_dual, smooth_dual_grad, smooth_dual_value, star_sweep

__all__ = ["fista_map", "scm_map"]

SMOOTH_DEFAULTS = dict(
    COMMON_DEFAULTS, tau=8.0, tau_max=2.0**13, anneal_factor=2.0, anneal_beta=1.0 / 6.0,
    grad_tol=1e-3, random_state=0,
)
FISTA_DEFAULTS = dict(SMOOTH_DEFAULTS, lipschitz=1.0)


class Annealer:
    """Temperature schedule: tau <- alpha tau when ||grad||_2 <= beta ||grad_0||_2."""

    def __init__(self, p):
        self.tau = positive(p, "tau")
        self.tau_max = positive(p, "tau_max")
        self.alpha = positive(p, "anneal_factor")
        if self.alpha <= 1:
            raise ValueError(f"anneal_factor must be > 1, got {self.alpha}")
        self.beta = positive(p, "anneal_beta")
        self.grad_tol = positive(p, "grad_tol")
        self.gamma = None

    def update(self, grad_norm2):
        """Returns True when tau was raised (the caller restarts momentum)."""
        if self.gamma is None:
            self.gamma = self.beta * grad_norm2
            return False
        if grad_norm2 <= self.gamma and self.tau < self.tau_max:
            self.tau = min(self.tau * self.alpha, self.tau_max)
            self.gamma = None
            return True
        return False

    def done(self, grad_inf):
        return self.tau >= self.tau_max and grad_inf <= self.grad_tol


def _buffers(prob):
    return (np.empty(prob.unary.shape[0]), np.empty(prob.unary.shape[0]),
            np.empty(prob.n_msg), np.empty(prob.n_msg))


def fista_map(graph, **params):
    """MAP by FISTA with backtracking on the smoothed clique dual.

    Parameters
    ----------
    graph : FactorGraph
    max_iter, time_limit, tol, stall_iter, bound_stall_iter, local_search, verbose
        As for :func:`structlearn.inference.lp.dual_decomposition.psdd_map`.
    tau : float, default=8.0
        Initial inverse temperature (normalized units).
    tau_max : float, default=2**13
    anneal_factor : float, default=2.0
    anneal_beta : float, default=1/6
    grad_tol : float, default=1e-3
        At ``tau_max``, stop ("stall") once ``||grad||_inf <= grad_tol``.
    lipschitz : float, default=1.0
        Initial Lipschitz estimate per unit of ``tau`` (backtracking doubles it).
    random_state : int, default=0
        Unused (kept for a uniform interface).

    Returns
    -------
    result : MapResult
    """
    check_graph(graph)
    p = check_params("fista", params, FISTA_DEFAULTS)
    ann = Annealer(p)
    lip = positive(p, "lipschitz") * ann.tau
    prob = Problem(graph)
    tr = Tracker(prob, "fista", p)
    if graph.n_factors == 0:
        return tr.trivial()
    theta_hat, mu_node, fac_marg, grad = _buffers(prob)
    scratch = np.empty(prob.n_msg)
    labels = np.zeros(graph.n_vars, dtype=np.int64)
    delta = np.zeros(prob.n_msg)
    y = delta.copy()
    t = 1.0
    while True:
        tau = ann.tau
        fy = smooth_dual_grad(prob.prob, y, tau, theta_hat, mu_node, fac_marg, grad, prob.lab,
                              prob.zf)
        gg = float(grad @ grad)
        for _ in range(60):
            d = y - grad / lip
            fd = smooth_dual_value(prob.prob, d, tau, theta_hat, scratch, prob.lab)
            if fd <= fy - gg / (2.0 * lip) + 1e-12 * max(1.0, abs(fy)):
                break
            lip *= 2.0
        t_new = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
        y = d + ((t - 1.0) / t_new) * (d - delta)
        delta = d
        t = t_new
        u = clique_dual(prob.prob, delta, theta_hat, prob.lab, labels)
        tr.bound(u)
        tr.offer(labels)
        gnorm = np.sqrt(gg)
        ginf = float(np.max(np.abs(grad))) if grad.size else 0.0
        if tr.step(dual=u * prob.scale, smooth_dual=fd * prob.scale, tau=tau, lipschitz=lip):
            break
        if ann.done(ginf):
            tr.status = "stall"
            break
        if ann.update(gnorm):
            lip *= ann.alpha
            y = delta.copy()
            t = 1.0
        else:
            lip *= 0.9  # let the step grow again slowly
    return tr.result()


def scm_map(graph, **params):
    """MAP by smoothed star coordinate minimization with annealing.

    Parameters
    ----------
    graph : FactorGraph
    max_iter, time_limit, tol, stall_iter, bound_stall_iter, local_search, verbose
        As for :func:`structlearn.inference.lp.dual_decomposition.psdd_map`
        (one iteration = one sweep over all variables).
    tau, tau_max, anneal_factor, anneal_beta, grad_tol
        As for :func:`fista_map`.
    random_state : int, default=0
        Seed of the random variable order of each sweep.

    Returns
    -------
    result : MapResult
    """
    check_graph(graph)
    p = check_params("scm", params, SMOOTH_DEFAULTS)
    ann = Annealer(p)
    rng = np.random.default_rng(p["random_state"])
    prob = Problem(graph)
    tr = Tracker(prob, "scm", p)
    if graph.n_factors == 0:
        return tr.trivial()
    theta_hat, mu_node, fac_marg, grad = _buffers(prob)
    scratch = np.empty(prob.n_msg)
    labels = np.zeros(graph.n_vars, dtype=np.int64)
    delta = np.zeros(prob.n_msg)
    while True:
        tau = ann.tau
        order = rng.permutation(graph.n_vars).astype(np.int64)
        star_sweep(prob.prob, delta, tau, order, prob.var_indptr, prob.var_edges,
                   prob.edge_factor, scratch, prob.lab)
        u = clique_dual(prob.prob, delta, theta_hat, prob.lab, labels)
        tr.bound(u)
        tr.offer(labels)
        smooth_dual_grad(prob.prob, delta, tau, theta_hat, mu_node, fac_marg, grad, prob.lab,
                              prob.zf)
        gnorm = float(np.sqrt(grad @ grad))
        ginf = float(np.max(np.abs(grad))) if grad.size else 0.0
        if tr.step(dual=u * prob.scale, tau=tau, grad_norm=gnorm):
            break
        if ann.done(ginf):
            tr.status = "stall"
            break
        ann.update(gnorm)
    return tr.result()


# read by the MAP registry when it first loads its back-ends
METHODS = (
    dict(name="fista", solver=fista_map, params=FISTA_DEFAULTS, tightening=True),
    dict(name="scm", solver=scm_map, params=SMOOTH_DEFAULTS, tightening=True),
)
