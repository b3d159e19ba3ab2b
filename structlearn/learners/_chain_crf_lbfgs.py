"""L-BFGS and OWL-QN over a chain CRF's objective (the loop of
:func:`.chain_crf.fit_chain_crf_lbfgs`, shared by the fits whose likelihood
is summed on the client, on its threads or on dask workers)."""

import logging
import time
from typing import NamedTuple, Optional

import numpy as np

from .._progress_bar import progress_tick

__all__ = ["LbfgsOptions", "minimize_chain_crf"]

logger = logging.getLogger("structlearn.learners.chain_crf")


class LbfgsOptions(NamedTuple):
    """The settings of :func:`minimize_chain_crf` (as
    :func:`.chain_crf.fit_chain_crf_lbfgs` documents them; ``grad_tol`` set)."""

    l1: float = 0.0
    max_iter: int = 100
    tol: float = 1e-5
    period: int = 10
    memory: int = 6
    grad_tol: float = 1e-5
    max_linesearch: Optional[int] = None


def minimize_chain_crf(prob, w, options, *, verbose=0, monitor=None):
    """Minimize ``prob`` (a :class:`.chain_crf._ChainProblem`; plus
    ``options.l1 * ||w||_1`` by OWL-QN) from the parameter vector ``w``.

    Limited-memory BFGS (two-loop recursion, ``memory`` pairs, pairs with
    non-positive curvature skipped) with a backtracking Armijo line search
    that tries the unit step first (``1 / ||g||`` on the first iteration).

    Parameters
    ----------
    prob : _ChainProblem
        ``prob(w, g)`` gives the objective and writes its gradient.
    w : ndarray (n_params,)
        The start (its array may be reused as a work array).
    options : LbfgsOptions
    verbose : int, default=0
    monitor : callable or None
        ``monitor(W, T) -> dict``, items added to each iteration's record.

    Returns
    -------
    w : ndarray (n_params,)
    history : list of dict
        Per iteration: ``iter``, ``time``, ``objective``, ``gap`` (NaN),
        ``step_norm``, ``n_eval`` (objective evaluations so far); for a
        likelihood on dask workers also ``partitions`` (its runs),
        ``local_time`` (seconds waiting on the runs in this iteration),
        ``merge_time`` (adding their gradients), ``bytes_sent`` and
        ``bytes_received`` (so far); then the monitor's items.
    converged : bool
    n_iter : int
    """
    from ._chain_crf_kernels import (
        abs_sum,
        axpy_to,
        lbfgs_direction,
        owlqn_direction,
        owlqn_pseudo_gradient,
        owlqn_step_to,
        secant_products,
        vdot,
    )

    w = np.ascontiguousarray(w, dtype=np.float64)
    n = w.shape[0]
    m = options.memory
    # correction pairs in rows of S, Y (a pair is tested before it is stored)
    S = np.empty((m, n))
    Y = np.empty((m, n))
    rho = np.empty(m)
    coef = np.empty(m)
    order = []  # rows in use, oldest first
    g = np.empty(n)
    w_new = np.empty(n)
    g_new = np.empty(n)
    p = np.empty(n)
    history = []
    start = time.perf_counter()
    l1, tol, grad_tol = options.l1, options.tol, options.grad_tol
    period, max_linesearch = options.period, options.max_linesearch
    f = prob(w, g) + (l1 * abs_sum(w) if l1 else 0.0)
    pg = np.empty(n) if l1 else g  # the (pseudo-)gradient of the whole objective
    converged = False
    n_iter = 0
    waited = (0.0, 0.0)  # a remote likelihood's local and merge seconds so far
    if prob.remote is not None:
        waited = (prob.remote.local_time, prob.remote.merge_time)
    for it in range(options.max_iter):
        if l1:
            owlqn_pseudo_gradient(w, g, l1, pg)
        else:
            pg = g
        gnorm = np.sqrt(vdot(pg, pg))
        if gnorm <= grad_tol * max(1.0, np.sqrt(vdot(w, w))):
            converged = True
            break
        lbfgs_direction(pg, S, Y, rho, np.asarray(order, dtype=np.int64), coef, p)
        if l1:  # OWL-QN: the direction and the step stay in pg's descent orthant
            owlqn_direction(pg, p)
        slope = vdot(pg, p)
        if slope >= 0:  # not a descent direction: restart from the gradient
            order = []
            np.negative(pg, out=p)
            slope = -gnorm * gnorm
        step = 1.0 if order else 1.0 / gnorm
        trials = 0
        while True:
            if l1:
                owlqn_step_to(w_new, w, step, p, pg)
                f_new = prob(w_new, g_new) + l1 * abs_sum(w_new)
                decrease = vdot(pg, w_new) - vdot(pg, w)
            else:
                axpy_to(w_new, w, step, p)
                f_new = prob(w_new, g_new)
                decrease = step * slope
            trials += 1
            if (f_new <= f + 1e-4 * decrease or step < 1e-20
                    or (max_linesearch is not None and trials >= max_linesearch)):
                break
            step *= 0.5
        sy, yy = secant_products(w_new, w, g_new, g)
        if sy > 1e-10 * yy and m > 0:  # curvature: keep the pair, over the oldest
            row = order.pop(0) if len(order) == m else next(r for r in range(m) if r not in order)
            axpy_to(S[row], w_new, -1.0, w)
            axpy_to(Y[row], g_new, -1.0, g)
            rho[row] = 1.0 / sy
            order.append(row)
        w, w_new = w_new, w
        g, g_new = g_new, g
        f = f_new
        n_iter += 1
        rec = {
            "iter": n_iter,
            "time": time.perf_counter() - start,
            "objective": float(f),
            "gap": np.nan,
            "step_norm": float(step * np.sqrt(vdot(p, p))),
            "n_eval": prob.n_eval,
        }
        if prob.remote is not None:  # a likelihood summed on dask workers
            remote = prob.remote
            rec.update(partitions=len(remote.parts), local_time=remote.local_time - waited[0],
                       merge_time=remote.merge_time - waited[1], bytes_sent=remote.bytes_sent,
                       bytes_received=remote.bytes_received)
            waited = (remote.local_time, remote.merge_time)
        if monitor is not None:
            rec.update(monitor(*prob.weights(w)))
        history.append(rec)
        progress_tick(rec)
        if verbose:
            extra = "".join(f" {k} {v:.4f}" for k, v in rec.items() if k.startswith("dev_"))
            logger.info("lbfgs iter %d: objective %.6f time %.2fs%s", n_iter, f, rec["time"],
                        extra)
        if len(history) > period:
            old = history[-1 - period]["objective"]
            if abs(old - f) <= tol * max(abs(f), 1e-300):
                converged = True
                break
        if step < 1e-20:
            break
    return w, history, converged, n_iter
