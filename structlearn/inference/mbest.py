"""M-best MAP: the ``m`` highest-scoring labelings of a factor graph.

:func:`solve_mbest` dispatches to a registry of back-ends, like
:func:`structlearn.inference.solve_map`:

``"kbest_chain"``
    Exact list Viterbi on chains (any disjoint union of paths):
    ``O(n K (K + m log K))``.
``"kbest_tree"``
    Exact k-best max-product on pairwise forests:
    ``O(n K (K + m log K) + n K m log m)``.
``"nilsson"``
    Lawler-Nilsson partitioning over any MAP back-end (``map_method``): the
    space of labelings not yet listed is split into label-constrained
    subspaces (a prefix of the last labeling's variables fixed, the next one
    excluded), each solved lazily by the MAP back-end with the constraints as
    ``-inf`` unary scores (the tables are shared, never copied).  Exact with
    an exact sub-solver; with an LP back-end each rank carries a certified
    upper bound built from the sub-solvers' bounds.
``"steelars"``
    The spanning-tree-inequality Lagrangian relaxation of the M-best MAP LP
    (see :mod:`structlearn.inference.steelars`).
``"brute_force"``
    Enumeration, for tiny graphs.
``"auto"``
    ``kbest_chain`` on chains, ``kbest_tree`` on pairwise forests,
    ``nilsson`` over the exact ``tree`` method on other forests, else ``nilsson`` over ``method="auto"`` of :func:`solve_map`
    (an LP back-end with certified bounds).

Only labelings with a finite score are listed: a graph with fewer than ``m``
of them gets all of them (status ``"exhausted"``), one with none gets status
``"infeasible"`` and no labelings.
"""

import heapq
import numbers
import time
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from ..graphs.factor_graph import FactorGraph
from ..graphs.propagation import propagate_forbidden_labels
from ._budget import check_time_limit
from ._registry_base import Registry

__all__ = ["MBestResult", "available_mbest_methods", "register_mbest_method", "solve_mbest"]

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


# ----------------------------------------------------------------- registry
_REGISTRY = Registry("M-best", (".mbest_exact", ".nilsson", ".steelars"))


def register_mbest_method(name, solver, *, exact=False, params=()):
    """Add an M-best back-end ``solver(graph, m, *, time_limit=None, **params)``.

    Parameters
    ----------
    name : str
    solver : callable returning :class:`MBestResult`
    exact : bool, default=False
        Whether the method certifies every rank when it applies.
    params : iterable of str
        The other parameters it takes (``time_limit`` is implied).
    """
    return _REGISTRY.register(name, solver, exact=exact, params=params)


def available_mbest_methods():
    """Names accepted by ``solve_mbest(method=...)``, sorted, plus ``"auto"``."""
    return _REGISTRY.names()


def mbest_method_parameters(method):
    """Sorted parameter names of a registered M-best method."""
    return _REGISTRY.lookup(method).params


def auto_mbest_method(graph):
    """``(method, params)`` that ``method="auto"`` runs on ``graph``."""
    from ..graphs.structure import is_chain, is_forest

    if is_chain(graph):
        return "kbest_chain", {}
    if is_forest(graph):
        if graph.n_factors == 0 or np.all(graph.factor_orders == 2):
            return "kbest_tree", {}
        return "nilsson", {"map_method": "tree"}
    return "nilsson", {}


def check_m(m):
    """``m`` as an int >= 1 (bools and non-integers rejected)."""
    if isinstance(m, bool) or not isinstance(m, numbers.Integral):
        raise TypeError(f"m must be an integer >= 1, got {m!r}")
    if m < 1:
        raise ValueError(f"m must be an integer >= 1, got {m!r}")
    return int(m)


def solve_mbest(graph, m, method="auto", *, time_limit=None, **params):
    """The ``m`` highest-scoring labelings of a factor graph.

    Parameters
    ----------
    graph : FactorGraph
    m : int
        Number of labelings (>= 1).
    method : str, default="auto"
        A name from :func:`available_mbest_methods`.
    time_limit : float or None, default=None
        Seconds; a run stopped by it returns the ranks found so far with
        status ``"time_limit"``.
    **params
        Passed to the back-end (names it does not take raise ``TypeError``).

    Returns
    -------
    result : MBestResult

    Raises
    ------
    TypeError
        For a graph that is not a FactorGraph, a non-integer ``m``, a
        non-numeric time limit or an unknown parameter.
    ValueError
        For ``m < 1``, an unknown method, a bad time limit or a method that
        does not fit the graph.
    """
    from .._compile_timer import compile_timer

    if not isinstance(graph, FactorGraph):
        raise TypeError(f"graph must be a FactorGraph, got {type(graph).__name__}")
    m = check_m(m)
    time_limit = check_time_limit(time_limit)
    if isinstance(method, str) and method == "auto":
        method, extra = auto_mbest_method(graph)
        params = dict(extra, **params)
    entry = _REGISTRY.lookup(method)
    _REGISTRY.check_params(method, params)
    t0 = time.perf_counter()
    with compile_timer() as compiling:
        # as in solve_map: forbidden labels propagated first; exact methods
        # still run on a graph proved infeasible (they check that it fits them)
        propagation = propagate_forbidden_labels(graph)
        if not propagation.infeasible:
            result = entry.solver(propagation.pruned_graph(graph), m, time_limit=time_limit,
                                  **params)
        elif entry.exact:
            result = entry.solver(graph, m, time_limit=time_limit, **params)
        else:
            result = make_result(graph, [], [], [], m, method, "infeasible", t0)
    result.method = result.method or method
    result.compile_time = compiling.seconds
    result.time_limit = time_limit
    return result


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
