"""Registry of MAP back-ends behind :func:`solve_map`.

A back-end is a function ``solver(graph, *, time_limit=None, **params) ->
MapResult``.  The built-in back-ends declare theirs in a ``METHODS`` table
(read here on first use); user back-ends are added with
:func:`register_method`.  Each names the parameters it takes;
:func:`solve_map` checks the parameters of every call against that list
(one error message for every method) and hands every back-end the time
limit.  ``method="auto"`` picks a method
from the graph's structure and size (:func:`auto_choice`) and says why in
:attr:`MapResult.reason`.

Before a back-end runs, forbidden labels are propagated
(:func:`structlearn.graphs.propagate_forbidden_labels`): labels that no
finite-score labeling uses get ``-inf`` unary scores, and a graph proved to
have no finite-score labeling gets status ``"infeasible"`` without a solve.
"""

import numbers
import time

import numpy as np

from ..graphs.propagation import propagate_forbidden_labels
from ._budget import check_time_limit
from ._registry_base import Registry
from .result import MapResult

__all__ = ["available_methods", "get_method", "method_parameters", "register_method",
           "solve_map"]

_REGISTRY = Registry("MAP", (".exact.forests", ".lp.ad3", ".exact.branch_and_bound",
                             ".lp.dual_decomposition", ".lp.gdmm", ".lp.gdmm_binary", ".exact.ilp",
                             ".lp.smoothed_dual", ".lp.trn"),
                     declare=lambda **spec: register_method(**spec))
_METHODS = _REGISTRY.methods


def register_method(name, solver, *, exact=False, params=(), tightening=False):
    """Add a MAP back-end under ``name``.

    Parameters
    ----------
    name : str
    solver : callable ``(graph, *, time_limit=None, **params) -> MapResult``
        Must accept ``time_limit`` (seconds or None).  An exact method that
        cannot be interrupted still accepts it; the result then tells
        whether it finished after the limit.
    exact : bool, default=False
        Whether the method returns a certified optimum when it applies.
    params : iterable of str, default=()
        Names of the other parameters the solver takes.
    tightening : bool, default=False
        Whether the method solves an LP relaxation over factors of any
        order: it then takes ``cycles`` (see :func:`solve_map`), which
        :func:`solve_map` handles before the solver is called.
    """
    if tightening:
        params = (*params, "cycles")
    return _REGISTRY.register(name, solver, exact=exact, params=params)


def available_methods():
    """Names accepted by ``solve_map(method=...)``, sorted, plus ``"auto"``."""
    return _REGISTRY.names()


def get_method(method):
    """Resolve a method name (or callable) to a solver callable.

    Raises
    ------
    ValueError
        For an unknown name, listing the available ones.
    """
    if callable(method):
        return method
    return _REGISTRY.lookup(method).solver


def method_parameters(method):
    """Sorted names of the parameters a registered method takes
    (``time_limit`` included)."""
    return _REGISTRY.lookup(method).params


def check_method_params(method, params):
    """Raise ``TypeError`` naming the method and what it takes when ``params``
    holds a name that the registered ``method`` does not take."""
    _REGISTRY.check_params(method, params)


# ``method="auto"`` on loopy graphs: exhaustive enumeration up to this many
# labelings times factors; GDMM (oracle sublinear in the domain) from this many states of
# the largest variable; AD3 (fastest to a certified optimum on the shared UAI
# instances, see BENCHMARKS.md) below it
AUTO_ENUMERATION_WORK = 5_000_000  # labelings x factors (about 20 ms)
AUTO_LARGE_DOMAIN = 100
# and tightens the relaxation with this many frustrated short cycles at most;
# loopy graphs of at most this many variables get the exact branch and bound
# (whose root is that tightened AD3 solve)
AUTO_CYCLES = 1000
AUTO_SEARCH_VARS = 5000
# pairwise graphs with at least this share of their table entries forbidden
# (weighted constraint networks) are searched first depth-first, kept soft
# arc consistent (exact/soft_arc.py), before any LP
AUTO_SOFT_ARC_FORBIDDEN = 0.05


def auto_choice(graph):
    """The method ``method="auto"`` runs on ``graph`` and why.

    Parameters
    ----------
    graph : FactorGraph

    Returns
    -------
    method : str
    reason : str
        One sentence naming the structure or size that decided.
    """
    from ..graphs.structure import is_chain, is_forest

    if is_chain(graph):
        return "viterbi", "chain: exact max-product along the paths"
    if is_forest(graph):
        return "tree", "forest: exact max-product on the factor tree"
    from ..graphs.structure import enumeration_is_cheap

    n_labelings = enumeration_is_cheap(graph, AUTO_ENUMERATION_WORK)
    if n_labelings is not None:
        return "brute_force", f"loopy, {n_labelings} labelings: exact enumeration"
    k_max = int(graph.n_states.max())
    if k_max <= 2 and np.all(graph.factor_orders == 2) and graph.n_vars > AUTO_SEARCH_VARS:
        return "exact", (f"loopy binary pairwise graph of {graph.n_vars} variables: roof "
                         "duality fixes the variables one minimum cut labels; components "
                         f"of the rest up to {AUTO_SEARCH_VARS} variables get branch and "
                         "bound, larger ones the AD3 root of the search only")
    if k_max >= AUTO_LARGE_DOMAIN:
        return "gdmm", (f"loopy, domains up to {k_max} states: GDMM, whose factor oracle is "
                        "sublinear in the domain")
    if graph.n_vars <= AUTO_SEARCH_VARS:
        forbidden = float(np.isneginf(graph.table_data).mean()) if graph.table_data.size else 0.0
        if forbidden >= AUTO_SOFT_ARC_FORBIDDEN and np.all(graph.factor_orders == 2):
            return "exact", (f"loopy, {graph.n_vars} variables with up to {k_max} states, "
                             f"{forbidden:.0%} of the pair entries forbidden: hybrid "
                             "best-first branch and bound kept soft arc consistent, then "
                             "branch and bound over AD3 bounds")
        return "exact", (f"loopy, {graph.n_vars} variables with up to {k_max} states: branch "
                         f"and bound over AD3 bounds tightened with up to {AUTO_CYCLES} "
                         "frustrated short cycles")
    return "ad3", (f"loopy, {graph.n_vars} variables, domains up to {k_max} states: AD3 (LP "
                   f"relaxation, certified bound) tightened with up to {AUTO_CYCLES} "
                   "frustrated short cycles")


def resolve_auto(graph, params):
    """What ``method="auto"`` runs: the method, why, and ``params`` with the
    settings auto adds (``cycles`` for ``ad3`` unless given); ``n_jobs``
    (validated) is dropped for a method that runs on one thread."""
    method, reason = auto_choice(graph)
    if "n_jobs" in params and "n_jobs" not in method_parameters(method):
        from .._parallel import check_n_jobs

        check_n_jobs(params["n_jobs"])
        params = {k: v for k, v in params.items() if k != "n_jobs"}
    if method == "ad3" and "cycles" not in params:
        params = dict(params, cycles=AUTO_CYCLES)
    if method == "exact" and "max_search_vars" not in params:
        params = dict(params, max_search_vars=AUTO_SEARCH_VARS)
    return method, reason, params


def auto_method(graph):
    """The method ``method="auto"`` runs on ``graph`` (see :func:`auto_choice`)."""
    return auto_choice(graph)[0]


def solve_map(graph, method="auto", *, time_limit=None, **params):
    """Find a maximum-score labeling of a factor graph.

    Parameters
    ----------
    graph : FactorGraph
    method : str or callable, default="auto"
        A name from :func:`available_methods` or a callable
        ``(graph, **params) -> MapResult``. ``"auto"``: exact max-product on
        chains and forests, enumeration where labelings times factors are
        at most 5,000,000, ``"gdmm"``
        when a variable has 100 states or more, else branch and bound
        (``"exact"``) up to 5000 variables and ``"ad3"`` above, except on
        binary pairwise graphs, which always get ``"exact"`` (its roof
        duality fixes what a minimum cut proves; components of more than
        5000 variables left after it get the search's root solve only)
        (:func:`auto_choice`; the result's ``reason`` says which applied).
    time_limit : float or None, default=None
        Seconds, counted from this call (numba compilation on a first call
        included).  Every registered method takes it: iterative ones run
        until the limit or a certified optimum (their ``max_iter`` no longer
        applies unless given), exact ones cannot be interrupted and report
        in :attr:`MapResult.over_time_limit` whether they finished later.
        A callable method receives it only when it is set.
    **params
        Passed to the back-end; names it does not take raise ``TypeError``
        (see :func:`method_parameters`).  The LP back-ends over factors of
        any order (``ad3``, ``gdmm``, ``psdd``, ``fista``, ``scm``, ``trn``)
        also take ``cycles=N``: the relaxation is tightened with up to ``N``
        cluster factors over the most frustrated triangles and 4-cycles of
        the pairwise factors (:mod:`structlearn.inference.lp.tightening`); the
        result's ``n_clusters`` says how many were added.  ``"exact"`` takes
        ``n_jobs``: its soft arc consistent search's dives run on that many
        threads (``"auto"`` passes it on to ``"exact"`` and drops it for the
        methods that run on one).

    Returns
    -------
    result : MapResult
        ``compile_time`` holds the seconds spent compiling kernels.  Status
        ``"infeasible"`` when no labeling has a finite score (proved by
        propagation or by an exact method), ``"no_feasible_found"`` when the
        method stopped without a finite-score labeling otherwise.

    Raises
    ------
    TypeError
        For a graph that is not a FactorGraph, a non-numeric time limit or a
        parameter the method does not take.
    ValueError
        For an unknown method, a time limit that is not positive and
        finite, or a method that does not fit the graph.
    """
    from .._compile_timer import compile_timer
    from ..graphs import FactorGraph

    if not isinstance(graph, FactorGraph):
        raise TypeError(f"graph must be a FactorGraph, got {type(graph).__name__}")
    time_limit = check_time_limit(time_limit)
    t0 = time.perf_counter()
    reason = ""
    if isinstance(method, str) and method == "auto":
        method, reason, params = resolve_auto(graph, params)
    if callable(method):
        solver = method
        if time_limit is not None:
            params = dict(params, time_limit=time_limit)
    else:
        solver = get_method(method)
        check_method_params(method, params)
        params = dict(params, time_limit=time_limit)
    name = method if isinstance(method, str) else getattr(method, "__name__", "")
    # exact methods still run on a graph proved infeasible: they check that the
    # graph fits them and prove it again at no risk; the others are skipped
    exact = isinstance(method, str) and _REGISTRY.lookup(method).exact
    with compile_timer() as compiling:
        propagation = propagate_forbidden_labels(graph)
        cycles = params.pop("cycles", 0)
        if not propagation.infeasible:
            work, n_clusters = _tightened(propagation.pruned_graph(graph), cycles)
            if time_limit is not None:  # the budget counts from this call's start
                params["time_limit"] = max(time_limit - (time.perf_counter() - t0), 1e-3)
            result = solver(work, **params)
            if n_clusters:
                _rescore(result, graph)
                result.n_clusters = n_clusters
        elif exact:
            result = solver(graph, **params)
        else:
            result = infeasible_result(graph, name)
    # the whole call: back-end modules loaded on first use, propagation and
    # tightening included (the back-end's own clock starts later)
    result.time = time.perf_counter() - t0
    if not result.method:
        result.method = name
    result.compile_time = compiling.seconds
    result.time_limit = time_limit
    result.reason = reason
    if result.score == -np.inf and result.status != "infeasible":
        # an exact method that found no finite labeling proved there is none
        proved = result.status == "exact" and result.upper_bound == -np.inf
        result.status = "infeasible" if proved else "no_feasible_found"
        result.converged = proved
    return result


def _tightened(graph, cycles):
    """``graph`` with up to ``cycles`` frustrated short cycles as clusters,
    and their number."""
    if isinstance(cycles, bool) or not isinstance(cycles, numbers.Integral) or cycles < 0:
        raise ValueError(f"cycles must be a non-negative integer, got {cycles!r}")
    if not cycles:
        return graph, 0
    from .lp.tightening import cluster_graph, frustrated_cycles

    chosen, _ = frustrated_cycles(graph, int(cycles))
    return cluster_graph(graph, chosen), int(chosen.shape[0])


def _rescore(result, graph):
    """Score a labeling found on a regrouped graph on ``graph`` itself (the
    same function; the sums differ only by rounding)."""
    result.score = float(graph.score(result.labels))
    result.upper_bound = max(result.upper_bound, result.score)


def infeasible_result(graph, method):
    """The result for a graph proved to have no finite-score labeling: status
    ``"infeasible"``, score and bound ``-inf``, all-zero labels."""
    return MapResult(labels=np.zeros(graph.n_vars, dtype=np.int64), score=-np.inf,
                     upper_bound=-np.inf, n_iter=0, converged=True, method=method,
                     status="infeasible")
