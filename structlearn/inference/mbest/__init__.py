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
    (see :mod:`structlearn.inference.mbest.steelars`).
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

import numbers
import time

import numpy as np

from ...graphs.factor_graph import FactorGraph
from ...graphs.propagation import propagate_forbidden_labels
from .._budget import check_time_limit
from .._registry_base import Registry
from ._common import MBestResult, make_result

__all__ = ["MBestResult", "available_mbest_methods", "register_mbest_method", "solve_mbest"]

# ----------------------------------------------------------------- registry
_REGISTRY = Registry("M-best", (".mbest.exact", ".mbest.nilsson", ".mbest.steelars"),
                     table="MBEST_METHODS", declare=lambda **spec: register_mbest_method(**spec))


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
    from ...graphs.structure import is_chain, is_forest

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
    from ..._compile_timer import compile_timer

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
