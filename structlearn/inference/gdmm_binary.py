"""GDMM for binary variables and very many pairwise factors (``gdmm_binary``).

Algorithm 2 of the MAP GDMM paper on the reduced LP of eq. (12): with
``x_i = x_i(1)`` and ``y_f = y_f(1, 1)`` the LP reads

    max const + sum_i theta~_i x_i + sum_f w_f y_f
    s.t. y_f <= x_i, y_f <= x_j, x_i + x_j - 1 <= y_f, x, y in [0, 1],

``theta~_i = theta_i(1) - theta_i(0) + sum_f [theta_f(1 at i, 0) - theta_f(0, 0)]``,
``w_f = theta_f(1,1) - theta_f(1,0) - theta_f(0,1) + theta_f(0,0)``.  Active
sets of variables and factors start empty and grow from static sorted lists
of ``theta~`` and ``w`` (an inactive variable sits at 0, where only a
positive ``theta~`` can help; an inactive factor sits at ``y = 0``, where only
a positive ``w`` can); a factor joins as soon as both its variables are
active.  The inequality constraints are handled by an augmented Lagrangian
(multipliers ``mu >= 0``), one projected-gradient step per active coordinate
and iteration, then ``mu <- max(0, mu + eta g)``.

Certified bound: the Lagrangian dual with ``x, y`` kept in the box,
``const + sum_f mu_f3 + sum_i max(0, theta~_i + sum_f (mu_f,side - mu_f3))
+ sum_f max(0, w_f - mu_f1 - mu_f2 + mu_f3)``, valid for any ``mu >= 0``
(inactive factors have ``mu = 0``); its inactive parts are kept as running
sums, so an iteration costs O(active sets).  Decoding: ``x_i > 1/2``, then
local search.  Requires every variable to have two states and every factor
to be pairwise.
"""

import numpy as np

from ._gdmm_kernels import binary_gdmm_run
from ._lp_common import COMMON_DEFAULTS, Problem, Tracker, check_graph, check_params, positive
from .registry import register_method

__all__ = ["gdmm_binary_map"]

DEFAULTS = dict(COMMON_DEFAULTS, rho=0.1, eta=None, batch=1, inner=10)


def gdmm_binary_map(graph, **params):
    """MAP by GDMM for binary pairwise graphs with many factors (Algorithm 2).

    Parameters
    ----------
    graph : FactorGraph
        Every variable binary, every factor pairwise.
    max_iter, time_limit, tol, stall_iter, local_search, verbose
        As for :func:`structlearn.inference.gdmm.gdmm_map`; one iteration runs
        ``inner`` GDMM iterations, then decodes.
    rho : float, default=0.1
        Augmented-Lagrangian weight (normalized units).
    eta : float or None, default=None
        Multiplier step (``None``: ``rho``).
    batch : int, default=1
        Variables and factors added per GDMM iteration (the paper adds one).
    inner : int, default=10

    Returns
    -------
    result : MapResult
    """
    check_graph(graph)
    p = check_params("gdmm_binary", params, DEFAULTS)
    rho = positive(p, "rho")
    eta = rho if p["eta"] is None else positive(p, "eta")
    for name in ("batch", "inner"):
        if isinstance(p[name], bool) or not isinstance(p[name], int) or p[name] < 1:
            raise ValueError(f"{name} must be a positive integer, got {p[name]!r}")
    if graph.n_vars and np.any(graph.n_states != 2):
        raise ValueError("method 'gdmm_binary' needs every variable to have exactly 2 states")
    if graph.n_factors and np.any(graph.factor_orders != 2):
        raise ValueError("method 'gdmm_binary' needs pairwise factors only")
    prob = Problem(graph)
    tr = Tracker(prob, "gdmm_binary", p)
    if graph.n_factors == 0:
        return tr.trivial()
    u = prob.unary.reshape(-1, 2)
    fvar = graph.scope_vars.reshape(-1, 2).copy()
    tabs = prob.table_data
    base = graph.table_offsets[graph.table_ids]
    t00, t01, t10, t11 = (tabs[base + k] for k in range(4))
    const = float(u[:, 0].sum() + t00.sum())
    theta_t = u[:, 1] - u[:, 0]
    np.add.at(theta_t, fvar[:, 0], t10 - t00)
    np.add.at(theta_t, fvar[:, 1], t01 - t00)
    w = t11 - t10 - t01 + t00
    var_order = np.argsort(-theta_t, kind="stable").astype(np.int64)
    fac_order = np.argsort(-w, kind="stable").astype(np.int64)
    n, nf = graph.n_vars, graph.n_factors
    ptrs = np.zeros(2, dtype=np.int64)
    xact = np.zeros(n, dtype=np.int64)
    fa = np.zeros(nf, dtype=np.int64)
    act_v = np.zeros(n, dtype=np.int64)
    act_f = np.zeros(nf, dtype=np.int64)
    counts = np.zeros(2, dtype=np.int64)
    x = np.zeros(n)
    y = np.zeros(nf)
    mu = np.zeros((nf, 3))
    sums = np.array([np.maximum(w, 0).sum(), np.maximum(theta_t, 0).sum()])
    stats = np.zeros(1)
    while True:
        ub = binary_gdmm_run(int(p["inner"]), rho, eta, int(p["batch"]), theta_t, w, fvar,
                             prob.var_indptr, prob.var_factors, var_order, fac_order, ptrs,
                             xact, fa, act_v, act_f, counts, x, y, mu, sums, stats)
        tr.bound(ub + const)
        tr.offer((x > 0.5).astype(np.int64))
        if tr.step(infeasibility=float(stats[0]), active_vars=int(counts[0]),
                   active_factors=int(counts[1])):
            break
    return tr.result()


register_method("gdmm_binary", gdmm_binary_map)
