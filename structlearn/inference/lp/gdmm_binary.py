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

from ...graphs.structure import incidence_csr
from ._binary_batch_kernels import binary_pairwise_map_batch
from ._gdmm_kernels import BinaryReduced, binary_gdmm_run, binary_gdmm_state
from ._lp_common import (COMMON_DEFAULTS, Problem, Tracker, check_graph, check_params, integer,
                         nonnegative, positive)

__all__ = ["gdmm_binary_batch", "gdmm_binary_map"]

DEFAULTS = dict(COMMON_DEFAULTS, rho=0.1, eta=None, batch=1, inner=10)


def gdmm_binary_map(graph, **params):
    """MAP by GDMM for binary pairwise graphs with many factors (Algorithm 2).

    Parameters
    ----------
    graph : FactorGraph
        Every variable binary, every factor pairwise.
    max_iter, time_limit, tol, stall_iter, bound_stall_iter, local_search, verbose
        As for :func:`structlearn.inference.lp.gdmm.gdmm_map`; one iteration runs
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
    state = binary_gdmm_state(graph.n_vars, graph.n_factors)
    state.sums[:] = np.maximum(w, 0).sum(), np.maximum(theta_t, 0).sum()
    reduced = BinaryReduced(theta_t, w, fvar, prob.var_indptr, prob.var_factors, var_order,
                            fac_order)
    while True:
        ub = binary_gdmm_run(int(p["inner"]), rho, eta, int(p["batch"]), reduced, state)
        tr.bound(ub + const)
        tr.offer((state.x > 0.5).astype(np.int64))
        if tr.step(infeasibility=float(state.stats[0]), active_vars=int(state.counts[0]),
                   active_factors=int(state.counts[1])):
            break
    return tr.result()


def gdmm_binary_batch(unary, edges, weights, *, max_iter=50, inner=10, rho=0.1, eta=None,
                      tol=1e-6, stall_iter=10):
    """MAP of many binary pairwise models that share their pair factors.

    Sample ``i`` maximizes ``sum_l unary[i, l] z_l + sum_f weights[f] z_a z_b``
    over ``z`` in ``{0, 1}^L`` (``(a, b) = edges[f]``): a multilabel model
    with pairwise label interactions, where only the unary scores change from
    sample to sample.  Each sample runs :func:`gdmm_binary_map`'s algorithm
    (GDMM for binary variables, rounds of ``inner`` iterations, certified
    Lagrangian bound) directly on these arrays, every round's decoding
    improved by iterated conditional modes, and stops once the bound meets
    the best labeling or after ``stall_iter`` rounds without a better one.
    Unlike the registry back-end there is no
    time-budgeted random search: the result is deterministic, and one
    compiled call serves all samples (no factor graph per sample).

    Parameters
    ----------
    unary : array-like of shape (n_samples, n_labels)
        Score differences ``theta_l(1) - theta_l(0)``; finite.
    edges : array-like of int, shape (n_edges, 2)
        Label pairs, ``0 <= a, b < n_labels``, ``a != b`` (repeats add up).
    weights : array-like of shape (n_edges,)
        Score of each pair being on together; finite.
    max_iter : int, default=50
        Rounds per sample.
    inner : int, default=10
        GDMM iterations per round.
    rho : float, default=0.1
        Augmented-Lagrangian weight (scores normalized by their largest
        magnitude per sample).
    eta : float or None, default=None
        Multiplier step (``None``: ``rho``).
    tol : float, default=1e-6
        Stop a sample when ``(bound - score) <= tol * max(1, |bound|)``.
    stall_iter : int, default=10
        Stop a sample after this many rounds without a better labeling (0:
        run ``max_iter`` rounds unless certified).  Later rounds grow the
        active sets and cost the most.

    Returns
    -------
    labels : ndarray of int64, shape (n_samples, n_labels)
        Best labeling found (0/1).
    scores : ndarray of shape (n_samples,)
        Its exact score.
    upper_bounds : ndarray of shape (n_samples,)
        Certified upper bounds of the optimum (``>= scores``; equal when the
        labeling is certified optimal).
    n_iter : ndarray of int64, shape (n_samples,)
        Rounds run per sample.
    """
    S = np.asarray(unary, dtype=np.float64)
    if S.ndim != 2:
        raise ValueError(f"unary must be 2-D (n_samples, n_labels), got shape {S.shape}")
    if not np.all(np.isfinite(S)):
        raise ValueError("unary contains NaN or infinite scores")
    n, L = S.shape
    E = np.asarray(edges)
    if E.size == 0:
        E = np.zeros((0, 2), dtype=np.int64)
    if E.ndim != 2 or E.shape[1] != 2 or not np.issubdtype(E.dtype, np.integer):
        raise ValueError(f"edges must be an integer array of shape (n_edges, 2), got {E.dtype} "
                         f"{E.shape}")
    E = E.astype(np.int64)
    if E.size and (E.min() < 0 or E.max() >= L):
        raise ValueError(f"edges must index labels in [0, {L}); got values in "
                         f"[{E.min()}, {E.max()}]")
    if np.any(E[:, 0] == E[:, 1]):
        raise ValueError("edges must join two different labels (self-loop found)")
    w = np.asarray(weights, dtype=np.float64).reshape(-1)
    if w.shape[0] != E.shape[0]:
        raise ValueError(f"weights has {w.shape[0]} entries for {E.shape[0]} edges")
    if not np.all(np.isfinite(w)):
        raise ValueError("weights contains NaN or infinite scores")
    p = {"max_iter": max_iter, "inner": inner, "stall_iter": stall_iter, "rho": rho,
         "eta": rho if eta is None else eta, "tol": tol}
    n_rounds = integer(p, "max_iter")
    inner = integer(p, "inner")
    stall = integer(p, "stall_iter", minimum=0)
    rho = positive(p, "rho")
    eta = positive(p, "eta")
    tol = nonnegative(p, "tol")
    P = np.zeros((L, L))
    np.add.at(P, (E[:, 0], E[:, 1]), w)
    np.add.at(P, (E[:, 1], E[:, 0]), w)
    var_ptr, var_factors = incidence_csr(E.ravel(), np.repeat(np.arange(len(E)), 2), L)
    fac_order = np.argsort(-w, kind="stable").astype(np.int64)
    labels = np.zeros((n, L), dtype=np.int64)
    scores = np.zeros(n)
    bounds = np.zeros(n)
    rounds = np.zeros(n, dtype=np.int64)
    if n and L:
        binary_pairwise_map_batch(
            np.ascontiguousarray(S), (P, np.ascontiguousarray(E), w, var_ptr, var_factors,
                                      fac_order),
            (n_rounds, inner, rho, eta, tol, stall), (labels, scores, bounds, rounds))
    return labels, scores, bounds, rounds


# read by the MAP registry when it first loads its back-ends
METHODS = (
    dict(name="gdmm_binary", solver=gdmm_binary_map, params=DEFAULTS),
)
