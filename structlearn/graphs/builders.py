"""Builders for common pairwise factor graphs.

All builders take unary scores of shape (n_vars, K) and pairwise tables of
shape (K, K) (one shared table, stored once in the pool) or (n_edges, K, K)
(one table per edge). Edge ``(u, v)`` with table ``T`` scores
``T[x_u, x_v]``.
"""

import numpy as np

from .factor_graph import FactorGraph, _check_scores

__all__ = ["chain_graph", "grid_graph", "complete_graph", "graph_from_edges", "grid_edges"]


def _check_unary_2d(unary, name="unary"):
    unary = np.asarray(unary)
    if unary.ndim != 2:
        raise ValueError(f"{name} must have shape (n_vars, K), got {unary.shape}")
    if unary.shape[1] < 1:
        raise ValueError(f"{name} must have at least one state per variable, got K=0")
    return _check_scores(unary, name)


def graph_from_edges(unary, edges, pairwise):
    """Pairwise graph from an edge list.

    Parameters
    ----------
    unary : array of shape (n_vars, K)
        Unary scores.
    edges : int array of shape (n_edges, 2)
        Endpoints ``(u, v)`` of each edge, ``u != v``.
    pairwise : array of shape (K, K) or (n_edges, K, K)
        One table shared by all edges, or one table per edge.

    Returns
    -------
    graph : FactorGraph
    """
    unary = _check_unary_2d(unary)
    n_vars, K = unary.shape
    edges = np.asarray(edges)
    if edges.size == 0:
        edges = np.zeros((0, 2), dtype=np.int64)
    if edges.ndim != 2 or edges.shape[1] != 2:
        raise ValueError(f"edges must have shape (n_edges, 2), got {edges.shape}")
    if not np.issubdtype(edges.dtype, np.integer):
        raise TypeError(f"edges must hold integers, got dtype {edges.dtype}")
    edges = edges.astype(np.int64)
    if edges.size and (edges.min() < 0 or edges.max() >= n_vars):
        bad = int(np.flatnonzero((edges < 0).any(1) | (edges >= n_vars).any(1))[0])
        raise ValueError(
            f"edge {bad} = {edges[bad].tolist()} references a variable outside [0, {n_vars})"
        )
    if edges.size and np.any(edges[:, 0] == edges[:, 1]):
        bad = int(np.flatnonzero(edges[:, 0] == edges[:, 1])[0])
        raise ValueError(f"edge {bad} is a self-loop on variable {edges[bad, 0]}")
    pairwise = _check_scores(np.asarray(pairwise), "pairwise")
    n_edges = edges.shape[0]
    if pairwise.shape == (K, K):
        tables = [pairwise]
        table_ids = np.zeros(n_edges, dtype=np.int64)
    elif pairwise.shape == (n_edges, K, K):
        tables = list(pairwise)
        table_ids = np.arange(n_edges, dtype=np.int64)
    else:
        raise ValueError(
            f"pairwise must have shape ({K}, {K}) or ({n_edges}, {K}, {K}), got {pairwise.shape}"
        )
    return FactorGraph(
        np.full(n_vars, K, dtype=np.int64),
        unary=unary,
        scopes=edges,
        tables=tables,
        table_ids=table_ids,
    )


def chain_graph(unary, pairwise):
    """Linear chain 0 - 1 - ... - (n-1).

    Parameters
    ----------
    unary : array of shape (n_vars, K)
    pairwise : array of shape (K, K) or (n_vars - 1, K, K)
        Shared transition table (``pairwise[a, b]`` scores ``x_t = a,
        x_{t+1} = b``) or one table per edge.

    Returns
    -------
    graph : FactorGraph
    """
    unary = _check_unary_2d(unary)
    n = unary.shape[0]
    edges = np.stack([np.arange(n - 1), np.arange(1, n)], axis=1) if n > 1 else np.zeros((0, 2), int)
    return graph_from_edges(unary, edges, pairwise)


def grid_edges(height, width):
    """4-neighbourhood edges of a ``height x width`` grid, node ``r * width + c``.

    Returns
    -------
    edges : ndarray of int64, shape (height * (width - 1) + (height - 1) * width, 2)
        Horizontal edges first, then vertical ones.
    """
    if height < 1 or width < 1:
        raise ValueError(f"grid needs height, width >= 1, got ({height}, {width})")
    idx = np.arange(height * width, dtype=np.int64).reshape(height, width)
    horiz = np.stack([idx[:, :-1].ravel(), idx[:, 1:].ravel()], axis=1)
    vert = np.stack([idx[:-1, :].ravel(), idx[1:, :].ravel()], axis=1)
    return np.concatenate([horiz, vert])


def grid_graph(unary, pairwise):
    """4-connected grid.

    Parameters
    ----------
    unary : array of shape (height, width, K)
    pairwise : array of shape (K, K) or (n_edges, K, K)
        Edge order as in :func:`grid_edges`.

    Returns
    -------
    graph : FactorGraph
    """
    unary = np.asarray(unary)
    if unary.ndim != 3:
        raise ValueError(f"unary must have shape (height, width, K), got {unary.shape}")
    h, w, K = unary.shape
    return graph_from_edges(unary.reshape(h * w, K), grid_edges(h, w), pairwise)


def complete_graph(unary, pairwise):
    """Complete pairwise graph over all ``n_vars`` variables (edges ``u < v``).

    Parameters
    ----------
    unary : array of shape (n_vars, K)
    pairwise : array of shape (K, K) or (n_vars * (n_vars - 1) / 2, K, K)
        Edges in ``np.triu_indices(n_vars, 1)`` order.

    Returns
    -------
    graph : FactorGraph
    """
    unary = _check_unary_2d(unary)
    u, v = np.triu_indices(unary.shape[0], 1)
    return graph_from_edges(unary, np.stack([u, v], axis=1), pairwise)
