"""Stochastic subgradient (Pegasos) for chain structural SVMs.

Step ``1 / (lambda t)`` with ``lambda = 1 / (C n)`` on the equivalent
objective ``lambda/2 ||w||^2 + (1/n) sum_i H_i(w)``; the returned weights
are the weighted average ``2 / (t (t + 1)) sum_k k w_k`` (Lacoste-Julien et
al., 2013).  Subgradient methods have no dual certificate: the history
reports the primal value only (``dual`` is NaN) and training runs
``max_iter`` passes unless ``tol > 0`` and the primal objective of the
averaged weights changed by less than ``tol`` (relative) over the last
pass.
"""

import time

import numpy as np

from ._bcfw_chain_kernels import ssg_chain_pass
from ._ssvm_common import ChainMonitor

__all__ = ["SSGChainState", "fit_ssg_chain"]


class SSGChainState:
    """Running sums of the Pegasos iterates."""

    def __init__(self, problem):
        d, K = problem.n_features, problem.n_labels
        self.signature = problem.signature()
        self.Wsum = np.zeros((d, K))
        self.vsum = np.zeros((K, K))
        self.Wacc = np.zeros((d, K))
        self.vacc = np.zeros((K, K))
        self.t = 0
        self.n_iter = 0

    def averaged(self):
        t = self.t
        if t == 0:
            return self.Wsum.copy(), self.vsum.copy()
        c = 2.0 / (t * (t + 1.0))
        return c * (t * self.Wsum - self.Wacc), c * (t * self.vsum - self.vacc)


def fit_ssg_chain(problem, *, C, max_iter, tol, rng, state=None, verbose=0, callback=None,
                  n_jobs=None):
    """Train with SSG; returns ``(W, v, history, state, converged)``."""
    if state is None:
        state = SSGChainState(problem)
    stats = np.zeros(2)
    monitor = ChainMonitor(problem, C, verbose, callback, n_jobs=n_jobs)
    Cn = float(C) * problem.n_sequences
    converged = False
    prev = np.inf
    for _ in range(max_iter):
        t0 = time.perf_counter()
        order = rng.permutation(problem.n_sequences).astype(np.int64)
        stats[:] = 0.0
        state.t = int(ssg_chain_pass(problem.chains(), order, Cn, state.Wsum, state.vsum,
                                     state.Wacc, state.vacc, state.t, stats))
        pass_time = time.perf_counter() - t0
        state.n_iter += 1
        W, v = state.averaged()
        primal = monitor.primal(W, v)
        stop = monitor.record(state.n_iter, primal, np.nan, 0.0, 1.0, stats[1], pass_time)
        if tol > 0 and abs(prev - primal) <= tol * abs(primal):
            converged = True
            break
        prev = primal
        if stop:
            break
    W, v = state.averaged()
    return W, v, monitor.history, state, converged
