"""What the M-best back-ends share: the result, its status rules, a
deadline and a heap; the registry (:mod:`structlearn.inference.mbest`)
imports this module, the back-ends import this module and never the
registry."""

import heapq
import time
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

__all__ = ["MBestResult", "Deadline", "final_status", "heap_push", "make_result"]

STATUSES = ("exact", "bounded", "exhausted", "incomplete", "infeasible", "no_feasible_found",
            "time_limit")


@dataclass
class MBestResult:
    """Outcome of an M-best MAP solve.

    Attributes
    ----------
    labels : ndarray of int64, shape (n_found, n_vars)
        Labelings, best first (non-increasing score).
    scores : ndarray of float64, shape (n_found,)
        ``graph.score`` of each labeling.
    upper_bounds : ndarray of float64, shape (n_found,)
        Certified upper bound on the true score of rank ``r`` (the ``r``-th
        best labeling of the graph); equal to ``scores`` where a rank is
        certified exact.
    n_requested : int
        The ``m`` asked for.
    method : str
    time : float
        Wall-clock seconds.
    status : str
        ``"exact"``: ``m`` ranks, every one certified; ``"bounded"``: ``m``
        ranks, some with an open gap; ``"exhausted"``: fewer than ``m``
        labelings have a finite score and all of them are listed;
        ``"incomplete"``: fewer than ``m`` labelings, the method found no
        other one of finite score but did not prove that there is none (a
        relaxation cannot);
        ``"infeasible"``: no labeling has a finite score (proved);
        ``"no_feasible_found"``: the method ended without a finite-score
        labeling and without proving that there is none;
        ``"time_limit"``: stopped with the ranks found so far.
    history : list of dict
        Per-rank records of the back-end (method-specific keys).
    compile_time : float
        Seconds spent compiling kernels on their first call.
    time_limit : float or None
    """

    labels: np.ndarray
    scores: np.ndarray
    upper_bounds: np.ndarray
    n_requested: int
    method: str = ""
    time: float = 0.0
    status: str = "exact"
    history: list = field(default_factory=list)
    compile_time: float = 0.0
    time_limit: Optional[float] = None

    @property
    def n_found(self):
        """Number of labelings returned."""
        return int(self.scores.shape[0])

    @property
    def gaps(self):
        """``upper_bounds - scores`` per rank (0 where certified)."""
        return self.upper_bounds - self.scores

    @property
    def exact(self):
        """Per-rank bool: the rank is certified (bound equals score up to rounding)."""
        tol = 1e-9 * np.maximum(1.0, np.abs(self.scores))
        return self.upper_bounds - self.scores <= tol


def make_result(graph, labels, scores, bounds, m, method, status, t0, history=()):
    """Assemble an :class:`MBestResult` from lists (rescoring on the graph)."""
    n = graph.n_vars
    labels = np.asarray(labels, dtype=np.int64).reshape(-1, n)
    scores = np.asarray(scores, dtype=np.float64).reshape(-1)
    bounds = np.maximum(np.asarray(bounds, dtype=np.float64).reshape(-1), scores)
    return MBestResult(labels=labels, scores=scores, upper_bounds=bounds, n_requested=int(m),
                       method=method, time=time.perf_counter() - t0, status=status,
                       history=list(history))


def final_status(result_scores, bounds, m, exhausted):
    """Status of a finished run that was not stopped by its time limit
    (``exhausted``: the run proved that no other labeling has a finite
    score)."""
    if len(result_scores) == 0:
        return "infeasible" if exhausted else "no_feasible_found"
    if len(result_scores) < m:
        return "exhausted" if exhausted else "incomplete"
    scores = np.asarray(result_scores, dtype=np.float64)
    tol = 1e-9 * np.maximum(1.0, np.abs(scores))
    return "exact" if np.all(np.asarray(bounds) - scores <= tol) else "bounded"


class Deadline:
    """Time left of a budget (``None``: no limit)."""

    def __init__(self, time_limit, t0=None):
        self.time_limit = time_limit
        self.t0 = time.perf_counter() if t0 is None else t0

    def left(self):
        if self.time_limit is None:
            return None
        return self.time_limit - (time.perf_counter() - self.t0)

    def passed(self):
        left = self.left()
        return left is not None and left <= 0


def heap_push(heap, key, counter, item):
    """Max-heap push with FIFO order among equal keys."""
    heapq.heappush(heap, (-key, counter, item))
