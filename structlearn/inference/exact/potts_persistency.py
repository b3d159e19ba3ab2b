"""Partial optimality for attractive Potts models: Kovtun's one-against-all cuts.

A pairwise graph is an attractive Potts model when every table scores
``c + w [a == b]`` with ``w >= 0`` (the same label index on both ends earns
``w``).  For a label ``alpha``, the auxiliary binary problem asks each
variable "``alpha`` or not": its unary scores are ``theta_i(alpha)`` and the
best other allowed label's score, and each edge costs ``w`` when its ends
disagree (Kovtun 2003, "Partial optimal labeling search for a NP-hard
subclass of (max,+) problems").  The auxiliary problem is submodular, so
one minimum cut (a node per variable, :func:`._potts_kernels.kovtun_sweeps`)
solves it exactly, and
every variable its optimum puts on ``alpha`` takes ``alpha`` in some
maximum-score labeling of the original model.  Proof, for any labeling
``x``: put ``alpha`` on those variables (``x'``); variable by variable and
edge by edge the original score rises at least as much as the auxiliary
one does from the indicator of ``x`` to its meet with the cut's optimum,
which submodularity and the optimum's minimality make non-negative.

The labels are swept in turn, each cut on the graph conditioned on the
labels fixed so far (conditioning a Potts edge on one end adds a unary term
to the other and keeps the rest Potts), until a sweep fixes nothing; the
cut takes the fewest variables onto ``alpha`` (the source side of the
residual network).
"""

import numpy as np

from ...graphs.factor_graph import FactorGraph
from ._potts_kernels import kovtun_sweeps, potts_weights
from .roof_duality import CUT_EPS

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
    rows = graph.n_states[graph.scope_vars[starts]].astype(np.int64)
    cols = graph.n_states[graph.scope_vars[starts + 1]].astype(np.int64)
    # one test per distinct (table, shape): factors often share a few tables
    # (one integer a triple: a unique over rows of three takes 5x as long)
    span = int(graph.max_states) + 1
    codes, which = np.unique((graph.table_ids.astype(np.int64) * span + rows) * span + cols,
                             return_inverse=True)
    keys = np.stack([codes // (span * span), codes // span % span, codes % span], axis=1)
    weights = potts_weights(graph.table_data, graph.table_offsets, keys, _POTTS_TOL)
    if np.isnan(weights).any():
        return None
    return weights[which.reshape(-1)]


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
    starts = graph.scope_indptr[:-1]
    return kovtun_sweeps(graph.unary_matrix(), graph.scope_vars[starts],
                         graph.scope_vars[starts + 1], weights, _MAX_SWEEPS, CUT_EPS)
