"""Registry of MAP back-ends behind :func:`solve_map`.

A back-end is a function ``solver(graph, **params) -> MapResult``.
Back-ends register themselves with :func:`register_method`; ``method="auto"``
picks an exact method from the graph's structure.
"""

import time

__all__ = ["available_methods", "register_method", "solve_map", "get_method"]

_METHODS = {}


def register_method(name, solver, *, exact=False):
    """Add a MAP back-end under ``name``.

    Parameters
    ----------
    name : str
    solver : callable ``(graph, **params) -> MapResult``
    exact : bool, default=False
        Whether the method returns a certified optimum when it applies.
    """
    _METHODS[name] = (solver, exact)
    return solver


def available_methods():
    """Names accepted by ``solve_map(method=...)``, sorted, plus ``"auto"``."""
    _load_builtin()
    return ["auto"] + sorted(_METHODS)


def get_method(method):
    """Resolve a method name (or callable) to a solver callable.

    Raises
    ------
    ValueError
        For an unknown name, listing the available ones.
    """
    _load_builtin()
    if callable(method):
        return method
    if not isinstance(method, str) or method not in _METHODS:
        raise ValueError(
            f"unknown MAP method {method!r}; available methods: {', '.join(available_methods())}"
        )
    return _METHODS[method][0]


def _auto_method(graph):
    from ..graphs.structure import is_chain, is_forest

    _load_builtin()
    if is_chain(graph):
        return "viterbi"
    if is_forest(graph):
        return "tree"
    if "gdmm" in _METHODS:
        return "gdmm"
    raise ValueError(
        "method='auto' found a loopy graph and no loopy MAP solver is registered; "
        f"use method='brute_force' for tiny graphs (available: {', '.join(available_methods())})"
    )


def solve_map(graph, method="auto", **params):
    """Find a maximum-score labeling of a factor graph.

    Parameters
    ----------
    graph : FactorGraph
    method : str or callable, default="auto"
        A name from :func:`available_methods` or a callable
        ``(graph, **params) -> MapResult``. ``"auto"`` uses an exact method
        for chains and forests.
    **params
        Passed to the back-end.

    Returns
    -------
    result : MapResult
    """
    from ..graphs import FactorGraph

    if not isinstance(graph, FactorGraph):
        raise TypeError(f"graph must be a FactorGraph, got {type(graph).__name__}")
    if isinstance(method, str) and method == "auto":
        method = _auto_method(graph)
    solver = get_method(method)
    t0 = time.perf_counter()
    result = solver(graph, **params)
    if not result.time:
        result.time = time.perf_counter() - t0
    if not result.method:
        result.method = method if isinstance(method, str) else getattr(method, "__name__", "")
    return result


_LOADED = False


def _load_builtin():
    """Import the modules that register the built-in back-ends (once)."""
    global _LOADED
    if _LOADED:
        return
    _LOADED = True
    from . import exact  # noqa: F401  (registers viterbi, tree, brute_force)
    from . import ad3, dual_decomposition, gdmm, gdmm_binary, smoothed_dual, trn  # noqa: F401
