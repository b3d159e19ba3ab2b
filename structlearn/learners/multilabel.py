"""Multilabel structural SVM with pairwise interactions: BCFW and SSG with an exact oracle.

(GDMM lives in :mod:`.gdmm_multilabel`; :func:`fit_multilabel` dispatches to it.)

Objective (Hamming loss, edge set ``E`` over label pairs)::

    1/2 (||W||^2 + sum_{(a,b) in E} P[a, b]^2)
      + C sum_i max_y [score_i(y) - score_i(ybar_i) + Hamming(y, ybar_i)]

The structured oracle enumerates all ``2^L`` labelings (Gray code, O(L) per
labeling), so these solvers are limited to ``L <= 24`` labels when edges
exist; without edges the oracle is per label and any ``L`` works.
"""

import time
from dataclasses import dataclass

import numpy as np

from ._multilabel_kernels import (SampleFeatures, multilabel_bcfw_pass, multilabel_primal,
                                 multilabel_ssg_pass)
from ._ssvm_chain_kernels import token_sq_norms
from ._ssvm_common import HistoryMonitor, content_digest, sq_norm, warn_not_converged

__all__ = ["MultilabelProblem", "fit_multilabel", "MAX_ENUM_LABELS"]

MAX_ENUM_LABELS = 24


@dataclass
class MultilabelProblem:
    """CSR samples, 0/1 targets and the upper-triangular edge mask."""

    data: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray
    Y: np.ndarray
    E: np.ndarray
    n_features: int

    @property
    def n_edges(self):
        return int(self.E.sum())

    def sq_norms(self):
        """``||x_i||^2`` per sample, float64 (n,)."""
        return token_sq_norms(self.data, self.indptr)  # a sample is one CSR row

    def signature(self):
        """Fingerprint deciding whether a warm start may reuse the duals: the
        sizes and a digest of the features, the targets and the edge mask."""
        return (self.Y.shape, self.n_edges, self.n_features,
                content_digest(self.Y, self.E, self.indptr, self.indices, self.data))


class MultilabelState:
    def __init__(self, problem, solver):
        n, L = problem.Y.shape
        d = problem.n_features
        self.signature = problem.signature()
        self.solver = solver
        self.W = np.zeros((d, L))
        self.P = np.zeros((L, L))
        self.n_iter = 0
        if solver == "bcfw":
            self.q = problem.Y.astype(np.float64)
            self.Q = (problem.Y[:, :, None] * problem.Y[:, None, :]).astype(np.float64)
            self.Q *= problem.E[None, :, :]
            self.loss = np.zeros(n)
        else:
            self.Wacc = np.zeros((d, L))
            self.Pacc = np.zeros((L, L))
            self.t = 0

    def weights(self):
        if self.solver == "bcfw":
            return self.W, self.P
        t = self.t
        if t == 0:
            return self.W.copy(), self.P.copy()
        c = 2.0 / (t * (t + 1.0))
        return c * (t * self.W - self.Wacc), c * (t * self.P - self.Pacc)


def fit_multilabel(problem, *, solver, C, max_iter, tol, rng, state=None, verbose=0,
                   callback=None, rho=1.0, eta=1.0, sublinear=True, check_every=1,
                   max_time=None, n_jobs=None, training_partitions=1, keep_state=True):
    """Train with ``solver`` in {"gdmm", "bcfw", "ssg"}; returns ``(W, P, history, state, converged)``.

    ``rho``, ``eta``, ``sublinear``, ``check_every``, ``max_time``, ``n_jobs``,
    ``training_partitions`` and ``keep_state`` are used by gdmm only
    (:func:`.gdmm_multilabel.fit_gdmm_multilabel`); the others raise
    ``ValueError`` for ``training_partitions > 1``.
    """
    if solver == "gdmm":
        from .gdmm_multilabel import fit_gdmm_multilabel

        return fit_gdmm_multilabel(problem, C=C, rho=rho, eta=eta, max_iter=max_iter, tol=tol,
                                   sublinear=sublinear, rng=rng, state=state, verbose=verbose,
                                   callback=callback, check_every=check_every,
                                   max_time=max_time, n_jobs=n_jobs,
                                   training_partitions=training_partitions,
                                   keep_state=keep_state)
    if training_partitions > 1:
        raise ValueError(f"training_partitions > 1 needs solver='gdmm', got {solver!r}")
    n, L = problem.Y.shape
    E = problem.E
    ne = problem.n_edges
    if state is None:
        state = MultilabelState(problem, solver)
    xnorm2 = problem.sq_norms()
    stats = np.zeros(2)
    samples = SampleFeatures(problem.data, problem.indices, problem.indptr, problem.Y, xnorm2)
    monitor = HistoryMonitor(verbose, callback)
    converged = False
    prev = np.inf
    rel_gap = np.inf
    for _ in range(max_iter):
        t0 = time.perf_counter()
        order = rng.permutation(n).astype(np.int64)
        stats[:] = 0.0
        if solver == "bcfw":
            multilabel_bcfw_pass(samples, order, float(C), state.W, state.P, E, ne, state.q,
                                 state.Q, state.loss, stats)
        else:
            state.t = int(multilabel_ssg_pass(samples, order, float(C) * n, state.W, state.P,
                                              state.Wacc, state.Pacc, E, ne, state.t, stats))
        pass_time = time.perf_counter() - t0
        state.n_iter += 1
        W, P = state.weights()
        primal = float(multilabel_primal(W, P, E, ne, 1.0, problem.data, problem.indices,
                                         problem.indptr, problem.Y, float(C)))
        if solver == "bcfw":
            Pu = P[E.astype(bool)]
            dual = float(-0.5 * sq_norm(W, Pu) + state.loss.sum())
        else:
            dual = np.nan
        stop = monitor.record(state.n_iter, primal, dual, 0.0, 1.0, stats[1], pass_time)
        rel_gap = monitor.history[-1]["relative_gap"]
        if solver == "bcfw" and rel_gap <= tol:
            converged = True
            break
        if solver == "ssg" and tol > 0 and abs(prev - primal) <= tol * abs(primal):
            converged = True
            break
        prev = primal
        if stop:
            break
    if solver == "bcfw" and not converged and len(monitor.history) == max_iter:
        warn_not_converged("BCFW", max_iter, rel_gap)
    W, P = state.weights()
    return W, P, monitor.history, state, converged
