"""Partial optimality for attractive Potts models: Kovtun's one-against-all cuts.

A pairwise graph is an attractive Potts model when every table scores
``c + w [a == b]`` with ``w >= 0`` (the same label index on both ends earns
``w``).  For a label ``alpha``, the auxiliary binary problem asks each
variable "``alpha`` or not": its unary scores are ``theta_i(alpha)`` and the
best other allowed label's score, and each edge costs ``w`` when its ends
disagree (Kovtun 2003, "Partial optimal labeling search for a NP-hard
subclass of (max,+) problems").  The auxiliary problem is submodular, so
one minimum cut (:func:`.roof_duality.roof_dual`) solves it exactly, and
every variable its optimum puts on ``alpha`` takes ``alpha`` in some
maximum-score labeling of the original model.  Proof, for any labeling
``x``: put ``alpha`` on those variables (``x'``); variable by variable and
edge by edge the original score rises at least as much as the auxiliary
one does from the indicator of ``x`` to its meet with the cut's optimum,
which submodularity and the optimum's minimality make non-negative.

The labels are swept in turn, each sweep on the graph conditioned on the
labels fixed so far (conditioning a Potts edge on one end adds a unary term
to the other and keeps the rest Potts), until a sweep fixes nothing.
"""

import numpy as np

from ...graphs.factor_graph import FactorGraph
from ._potts_kernels import potts_weights
from .roof_duality import condition_pairwise, roof_dual

__all__ = ["attractive_potts_weights", "kovtun_persistency"]

# relative tolerance of the test that a table is Potts-shaped
_POTTS_TOL = 1e-12
# sweeps over the labels at most
_MAX_SWEEPS = 3


def attractive_potts_weights(graph):
    """Each pairwise factor's Potts weight ``w``, or None when the graph is
    not an attractive Potts model.

    Parameters
    ----------
    graph : FactorGraph

    Returns
    -------
    w : ndarray of float64, shape (n_factors,) or None
        ``table(a, b) = c + w [a == b]`` with ``w >= 0`` for every factor
        (finite tables, every factor of order 2); None otherwise.
    """
    if graph.n_factors == 0 or np.any(graph.factor_orders != 2):
        return None
    if not np.isfinite(graph.table_data).all():  # a quick no for networks with hard constraints
        return None
    starts = graph.scope_indptr[:-1]
    shapes = np.stack([graph.table_ids, graph.n_states[graph.scope_vars[starts]],
                       graph.n_states[graph.scope_vars[starts + 1]]], axis=1)
    # one test per distinct (table, shape): factors often share a few tables
    keys, which = np.unique(shapes, axis=0, return_inverse=True)
    weights = potts_weights(graph.table_data, graph.table_offsets, keys.astype(np.int64),
                            _POTTS_TOL)
    if np.isnan(weights).any():
        return None
    return weights[which.reshape(-1)]


def _one_against_all(graph, weights, alpha):
    """The variables that the auxiliary problem of label ``alpha`` puts on
    ``alpha`` (bool (n_vars,))."""
    n = graph.n_vars
    u = graph.unary_matrix()  # (n, K), -inf past a variable's states
    if alpha >= u.shape[1]:
        return np.zeros(n, dtype=bool)
    on = u[:, alpha].copy()
    others = u.copy()
    others[:, alpha] = -np.inf
    off = others.max(axis=1)
    if not np.any(np.isfinite(on)):
        return np.zeros(n, dtype=bool)
    starts = graph.scope_indptr[:-1]
    scopes = np.stack([graph.scope_vars[starts], graph.scope_vars[starts + 1]], axis=1)
    # table (score) [[0, -w], [-w, 0]]: disagreeing ends cost w
    tables = np.zeros((weights.shape[0], 4))
    tables[:, 1] = tables[:, 2] = -weights
    aux = FactorGraph.from_arrays(
        np.full(n, 2, dtype=np.int64), np.stack([on, off], axis=1).ravel(),
        np.arange(0, 2 * scopes.shape[0] + 1, 2, dtype=np.int64), scopes.ravel(),
        np.arange(weights.shape[0], dtype=np.int64),
        np.arange(0, 4 * weights.shape[0] + 1, 4, dtype=np.int64), tables.ravel(),
        validate=False)
    cut = roof_dual(aux)
    if cut is None:
        return np.zeros(n, dtype=bool)
    # submodular: the cut labels every variable (its -1 would mean "open")
    return cut.labels == 0


def kovtun_persistency(graph):
    """Labels that some maximum-score labeling of an attractive Potts model takes.

    Parameters
    ----------
    graph : FactorGraph
        Pairwise; forbidden labels as ``-inf`` unary scores are allowed
        (the tables must be finite).

    Returns
    -------
    labels : ndarray of int64, shape (n_vars,) or None
        The fixed label of each variable, -1 where none is fixed; None when
        the graph is not an attractive Potts model.  Fixing them all keeps a
        maximum-score labeling.
    """
    if not isinstance(graph, FactorGraph):
        raise TypeError(f"graph must be a FactorGraph, got {type(graph).__name__}")
    weights = attractive_potts_weights(graph)
    if weights is None:
        return None
    labels = np.full(graph.n_vars, -1, dtype=np.int64)
    variables, current = np.arange(graph.n_vars), graph
    n_labels = int(graph.n_states.max())
    for _ in range(_MAX_SWEEPS):
        fixed_in_sweep = 0
        for alpha in range(n_labels):
            if current.n_vars == 0:
                return labels
            on = _one_against_all(current, weights, alpha)
            if not on.any():
                continue
            fixed_in_sweep += int(on.sum())
            local = np.where(on, alpha, -1)
            labels[variables[on]] = alpha
            kept_factors = _unfixed_factors(current, on)
            variables_left, current = condition_pairwise(current, local)
            variables = variables[variables_left]
            weights = weights[kept_factors]
        if not fixed_in_sweep:
            break
    return labels


def _unfixed_factors(graph, fixed):
    """The factors with neither end in ``fixed``, in order (as
    :func:`.roof_duality.condition_pairwise` keeps them)."""
    starts = graph.scope_indptr[:-1]
    return np.flatnonzero(~fixed[graph.scope_vars[starts]] & ~fixed[graph.scope_vars[starts + 1]])
