"""Projected supergradient dual decomposition (``psdd``).

Minimizes the clique dual ``U(delta)`` (see :mod:`._lp_kernels`) by
supergradient steps (thesis section 3.1, maximization form): the subgradient
is ``1[x = argmax theta_hat_i] - 1[x = (argmax theta_hat_f)_i]`` and the step
is ``alpha_t = step / (eta_t + 1)``, ``eta_t`` counting the iterations whose
dual value got worse than the previous one.  Every iterate's ``U`` is a
certified upper bound; node argmax labelings (improved by local search) are
scored on the true graph.
"""

import numpy as np

from ._lp_common import COMMON_DEFAULTS, Problem, Tracker, check_graph, check_params, positive
from ._lp_kernels import dual_supergradient

__all__ = ["psdd_map"]

DEFAULTS = dict(COMMON_DEFAULTS, step=1.0)


def psdd_map(graph, **params):
    """MAP by projected supergradient dual decomposition.

    Parameters
    ----------
    graph : FactorGraph
    max_iter : int or None, default=None
        Iteration cap; ``None``: 1000 without a time limit, none with one.
    time_limit : float or None, default=None
        Seconds from the call (set-up and compilation included); the solver
        stops before an iteration that would end past it.
    tol : float, default=1e-6
        Stop when ``(upper_bound - score) / max(1, |upper_bound|) <= tol``.
    stall_iter : int, default=0
        Stop after this many iterations without a better bound or labeling
        (0 = never).
    bound_stall_iter : int, default=0
        Stop (status ``"stall"``) after this many iterations in which the
        bound did not fall by a relative 1e-6 (0 = never); branch and bound
        uses it to start branching once the relaxation has converged.
    step : float, default=1.0
        Step scale, in units of the largest absolute score.
    local_search : bool, default=True
        Improve each decoded labeling by iterated conditional modes.
    polish : float, default=1.0
        Iterated local search from the best labeling (perturb a random ball
        of variables, improve, move if not worse; restart after 2000 idle
        steps from a heavily perturbed incumbent), allowed up to this multiple
        of the solver's own running time (4x that once the bound has stalled
        for 50 iterations); 0 turns it off.  Only runs while the certified
        gap is open.
    cutoff : float or None, default=None
        Stop (status ``"cutoff"``) once the certified upper bound is at most
        this value: the caller only needs to know that the optimum is not
        above it (branch and bound prunes such subproblems).
    verbose : int, default=0

    Returns
    -------
    result : MapResult
    """
    check_graph(graph)
    p = check_params("psdd", params, DEFAULTS)
    step = positive(p, "step")
    prob = Problem(graph)
    tr = Tracker(prob, "psdd", p)
    if graph.n_factors == 0:
        return tr.trivial()
    delta = np.zeros(prob.n_msg)
    grad = np.empty(prob.n_msg)
    theta_hat = np.empty(prob.unary.shape[0])
    labels = np.zeros(graph.n_vars, dtype=np.int64)
    eta = 0
    prev = np.inf
    while True:
        u = dual_supergradient(prob.prob, delta, theta_hat, prob.lab, labels, grad)
        tr.bound(u)
        tr.offer(labels)
        if u > prev:
            eta += 1
        prev = u
        alpha = step / (eta + 1.0)
        if tr.step(dual=u * prob.scale, alpha=alpha):
            break
        delta -= alpha * grad
    return tr.result()


# read by the MAP registry when it first loads its back-ends
METHODS = (
    dict(name="psdd", solver=psdd_map, params=DEFAULTS, tightening=True),
)
