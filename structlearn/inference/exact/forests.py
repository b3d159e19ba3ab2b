"""Exact MAP and marginal inference: chains, factor forests and tiny graphs.

Registered MAP back-ends (see :func:`structlearn.inference.solve_map`):

``"viterbi"``
    Chains (every component a simple path of pairwise factors), in any
    variable order, with one table per edge or shared tables and any number
    of states per variable. Max-sum dynamic programming along
    :func:`structlearn.graphs.chain_order`.
``"tree"``
    Factor forests, factors of any order: max-product with back-tracking
    over a breadth-first schedule. Cost is the sum of the table sizes times
    the factor orders.
``"brute_force"``
    Exhaustive enumeration for tiny graphs, refused above ``max_states``
    joint labelings (default 1e7).

All three return a :class:`MapResult` with ``upper_bound == score`` and
status ``"exact"``, and raise ``ValueError`` when the graph's structure does
not fit. Ties go to the lowest label index (for ``brute_force``: the
lexicographically first best labeling). If every labeling is forbidden the
result holds some labeling (state 0 wherever nothing is finite) with score
``-inf``, still flagged exact: the optimum is ``-inf``.

Marginals: :func:`chain_marginals` (log-domain forward-backward) and
:func:`tree_marginals` (sum-product on factor forests) return log Z and
exact node and factor marginals, stable for scores of +-1e4.

Parallel factors (two factors on the same variables) make a graph loopy;
:func:`structlearn.graphs.merge_parallel_factors` removes them first.
"""

import math
import time

import numpy as np

from ...graphs.factor_graph import FactorGraph
from ...graphs.structure import _chain_precheck, _chain_walk, bfs_schedule, log10_n_labelings
from ._exact_kernels import (
    brute_force_max,
    chain_max_product,
    tree_max_product,
    tree_sum_product,
)
from .._budget import check_time_limit
from ..result import MapResult

__all__ = [
    "brute_force_map",
    "chain_marginals",
    "tree_map",
    "tree_marginals",
    "viterbi_map",
]

DEFAULT_MAX_STATES = 10_000_000


def _check_graph(graph):
    if not isinstance(graph, FactorGraph):
        raise TypeError(f"graph must be a FactorGraph, got {type(graph).__name__}")


def _no_params(method, params):
    if params:
        raise TypeError(
            f"method {method!r} got unexpected parameter(s): {', '.join(sorted(params))}"
        )


def _start(time_limit):
    """Validate the time limit (exact methods run to the end: the result
    tells whether that was after the limit) and start the clock."""
    return check_time_limit(time_limit), time.perf_counter()


def _result(graph, labels, method, t0, time_limit):
    score = float(graph.score(labels))
    return MapResult(
        labels=labels,
        score=score,
        upper_bound=score,
        n_iter=1,
        converged=True,
        time=time.perf_counter() - t0,
        history=[],
        method=method,
        status="exact",
        time_limit=time_limit,
    )


def _chain_schedule(graph, method):
    if not _chain_precheck(graph):
        raise ValueError(
            f"method {method!r} needs a chain: pairwise factors only, at most two per "
            "variable (use method='tree' for forests)"
        )
    order, link, placed = _chain_walk(graph)
    if placed != graph.n_vars:
        raise ValueError(
            f"method {method!r} needs a chain, but the graph contains a cycle "
            "(parallel factors on one pair count as a cycle; see merge_parallel_factors)"
        )
    return order, link


def _forest_schedule(graph, method):
    var_order, var_parent, factor_order, factor_parent, _, cycle = bfs_schedule(graph)
    if cycle:
        raise ValueError(
            f"method {method!r} needs a forest, but the factor graph contains a cycle "
            "(parallel factors on the same variables count as a cycle; see "
            "merge_parallel_factors)"
        )
    return var_order, var_parent, factor_order, factor_parent


def viterbi_map(graph, *, time_limit=None, **params):
    """Exact MAP on a chain graph by max-sum dynamic programming.

    Parameters
    ----------
    graph : FactorGraph
        Every component a simple path of pairwise factors.
    time_limit : float or None, default=None
        Accepted for uniformity; the pass is not interrupted
        (``result.over_time_limit`` tells whether it ended later).

    Returns
    -------
    result : MapResult

    Raises
    ------
    ValueError
        If the graph is not a chain.
    """
    _check_graph(graph)
    _no_params("viterbi", params)
    time_limit, t0 = _start(time_limit)
    order, link = _chain_schedule(graph, "viterbi")
    labels = np.zeros(graph.n_vars, dtype=np.int64)
    chain_max_product(*graph.arrays(), order, link, labels)
    return _result(graph, labels, "viterbi", t0, time_limit)


def tree_map(graph, *, time_limit=None, **params):
    """Exact MAP on a factor forest by max-product with back-tracking.

    Parameters
    ----------
    graph : FactorGraph
        Acyclic factor graph (factors of any order).
    time_limit : float or None, default=None
        As for :func:`viterbi_map`.

    Returns
    -------
    result : MapResult

    Raises
    ------
    ValueError
        If the factor graph has a cycle.
    """
    _check_graph(graph)
    _no_params("tree", params)
    time_limit, t0 = _start(time_limit)
    var_order, var_parent, factor_order, factor_parent = _forest_schedule(graph, "tree")
    labels = np.zeros(graph.n_vars, dtype=np.int64)
    tree_max_product(graph.arrays(), (var_order, var_parent, factor_order, factor_parent),
                     labels)
    return _result(graph, labels, "tree", t0, time_limit)


def _format_power_of_ten(log10_value):
    """``1.23e+456``-style text for ``10**log10_value``, at any magnitude."""
    if log10_value < 300:
        return f"{10.0 ** log10_value:.3g}"
    exponent = int(np.floor(log10_value))
    mantissa = 10.0 ** (log10_value - exponent)
    if mantissa >= 9.995:  # rounds up to 10.0 at 3 significant digits
        mantissa, exponent = 1.0, exponent + 1
    return f"{mantissa:.3g}e+{exponent}"


def brute_force_map(graph, *, max_states=DEFAULT_MAX_STATES, time_limit=None, **params):
    """Exact MAP by enumerating every labeling.

    Parameters
    ----------
    graph : FactorGraph
        Any structure.
    max_states : int or float, default=1e7
        Refuse graphs with more joint labelings than this.
    time_limit : float or None, default=None
        As for :func:`viterbi_map`.

    Returns
    -------
    result : MapResult
        The lexicographically first best labeling.

    Raises
    ------
    ValueError
        If the graph has more than ``max_states`` labelings.
    """
    _check_graph(graph)
    _no_params("brute_force", params)
    if not np.isscalar(max_states) or not max_states > 0:
        raise ValueError(f"max_states must be a positive number, got {max_states!r}")
    time_limit, t0 = _start(time_limit)
    log_lab = log10_n_labelings(graph)
    log_max = math.log10(max_states)
    if log_lab > log_max + 1e-9:
        raise ValueError(
            f"brute_force would enumerate {_format_power_of_ten(log_lab)} labelings, above "
            f"max_states={_format_power_of_ten(log_max)}; use an exact structured method or "
            "raise max_states"
        )
    labels = np.zeros(graph.n_vars, dtype=np.int64)
    brute_force_max(*graph.arrays(), labels)
    return _result(graph, labels, "brute_force", t0, time_limit)


# read by the MAP registry when it first loads its back-ends
METHODS = (
    dict(name="viterbi", solver=viterbi_map, exact=True),
    dict(name="tree", solver=tree_map, exact=True),
    dict(name="brute_force", solver=brute_force_map, exact=True, params=("max_states",)),
)


# ------------------------------------------------------------- marginals
def _sum_product(graph, schedule):
    var_order, var_parent, factor_order, factor_parent = schedule
    sizes = np.diff(graph.table_offsets)[graph.table_ids]
    foff = np.zeros(graph.n_factors + 1, dtype=np.int64)
    np.cumsum(sizes, out=foff[1:])
    node = np.zeros(graph.unary.shape[0])
    fmarg = np.zeros(foff[-1])
    log_z = tree_sum_product(graph.arrays(), (var_order, var_parent, factor_order, factor_parent),
                             node, foff, fmarg)
    if log_z == -np.inf:
        node[:] = 0.0
        fmarg[:] = 0.0
    return float(log_z), node, foff, fmarg


def _pad_nodes(graph, node):
    out = np.zeros((graph.n_vars, graph.max_states))
    col = np.arange(node.shape[0]) - np.repeat(graph.unary_offsets[:-1], graph.n_states)
    row = np.repeat(np.arange(graph.n_vars), graph.n_states)
    out[row, col] = node
    return out


def chain_marginals(graph):
    """Log-partition function and marginals of a chain graph.

    The recursion is the log-domain forward-backward (sum-product along the
    paths), stable for scores of any magnitude (e.g. +-1e4).

    Parameters
    ----------
    graph : FactorGraph
        Every component a simple path of pairwise factors.

    Returns
    -------
    log_z : float
        ``log sum_y exp(score(y))``; ``-inf`` if every labeling is forbidden
        (all marginals are then zero).
    node_marginals : ndarray of float64, shape (n_vars, max_states)
        ``P(y_i = k)``; zero-padded for variables with fewer states.
    edge_marginals : ndarray of float64, shape (n_factors, max_states, max_states)
        ``edge_marginals[f, a, b] = P(y_u = a, y_v = b)`` for the scope
        ``(u, v)`` of factor ``f`` (in the factor's own order); zero-padded.

    Raises
    ------
    ValueError
        If the graph is not a chain.
    """
    _check_graph(graph)
    order, link = _chain_schedule(graph, "chain_marginals")
    # a path walked from one end is a breadth-first schedule of itself
    var_parent = np.full(graph.n_vars, -1, dtype=np.int64)
    has = link >= 0
    var_parent[order[has]] = link[has]
    factor_order = link[has]
    factor_parent = np.full(graph.n_factors, -1, dtype=np.int64)
    prev = np.empty_like(order)
    prev[1:] = order[:-1]
    factor_parent[link[has]] = prev[has]
    log_z, node, foff, fmarg = _sum_product(
        graph, (order, var_parent, factor_order, factor_parent)
    )
    K = graph.max_states
    edges = np.zeros((graph.n_factors, K, K))
    if graph.n_factors:
        ks = graph.n_states[graph.scope_vars].reshape(-1, 2)
        if np.all(graph.n_states == K):
            edges[:] = fmarg.reshape(graph.n_factors, K, K)
        else:
            f = np.repeat(np.arange(graph.n_factors), ks[:, 0] * ks[:, 1])
            e = np.arange(fmarg.shape[0]) - foff[f]
            edges[f, e // ks[f, 1], e % ks[f, 1]] = fmarg
    return log_z, _pad_nodes(graph, node), edges


def tree_marginals(graph):
    """Log-partition function and marginals of a factor forest (sum-product).

    Parameters
    ----------
    graph : FactorGraph
        Acyclic factor graph (factors of any order).

    Returns
    -------
    log_z : float
        ``-inf`` if every labeling is forbidden (all marginals are then zero).
    node_marginals : ndarray of float64, shape (n_vars, max_states)
        ``P(y_i = k)``; zero-padded for variables with fewer states.
    factor_marginals : ndarray of float64, shape (factor_offsets[-1],)
        Joint marginal table of every factor's scope, concatenated in factor
        order; factor ``f`` occupies ``factor_offsets[f]:factor_offsets[f + 1]``
        in the C-order layout of ``graph.factor_table(f)`` (one entry per
        factor, even where factors share a table).
    factor_offsets : ndarray of int64, shape (n_factors + 1,)

    Raises
    ------
    ValueError
        If the factor graph has a cycle.
    """
    _check_graph(graph)
    schedule = _forest_schedule(graph, "tree_marginals")
    log_z, node, foff, fmarg = _sum_product(graph, schedule)
    return log_z, _pad_nodes(graph, node), fmarg, foff
