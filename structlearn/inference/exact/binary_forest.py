"""Exact MAP of binary pairwise models for many samples at once: on a forest
by max-product, elsewhere by persistency and enumeration.

Multilabel models with pairwise label interactions on a tree (or forest) of
label pairs decode exactly by max-product on two states: O(L) per sample
after the unary scores.
"""

from collections import deque
from typing import NamedTuple

import numpy as np

from ._binary_forest_kernels import binary_forest_map_rows

__all__ = ["RootedForest", "rooted_forest", "binary_forest_map_batch", "persistency_map_batch"]


class RootedForest(NamedTuple):
    """A forest over ``L`` nodes, rooted for max-product.

    Attributes
    ----------
    order : ndarray of int64, shape (L,)
        Every node after its parent (breadth first from each root).
    parent : ndarray of int64, shape (L,)
        ``-1`` at a root.
    edge : ndarray of int64, shape (L,)
        Index into the edge list of the edge ``(parent[j], j)``; ``-1`` at a root.
    """

    order: np.ndarray
    parent: np.ndarray
    edge: np.ndarray


def rooted_forest(edges, n_nodes):
    """Root the forest given by ``edges``, or return None when they hold a cycle.

    Parameters
    ----------
    edges : ndarray of int, shape (n_edges, 2)
        Node pairs, ``0 <= a, b < n_nodes`` (a repeated pair is a cycle).
    n_nodes : int

    Returns
    -------
    RootedForest or None
    """
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    if edges.shape[0] >= max(n_nodes, 1):
        return None
    adj = [[] for _ in range(n_nodes)]
    for e, (a, b) in enumerate(edges):
        adj[a].append((b, e))
        adj[b].append((a, e))
    parent = np.full(n_nodes, -1, dtype=np.int64)
    edge = np.full(n_nodes, -1, dtype=np.int64)
    seen = np.zeros(n_nodes, dtype=bool)
    order = []
    for root in range(n_nodes):
        if seen[root]:
            continue
        seen[root] = True
        queue = deque([root])
        while queue:
            j = queue.popleft()
            order.append(j)
            for k, e in adj[j]:
                if e == edge[j]:
                    continue
                if seen[k]:
                    return None  # a second path to k
                seen[k] = True
                parent[k] = j
                edge[k] = e
                queue.append(k)
    return RootedForest(np.asarray(order, dtype=np.int64), parent, edge)


def binary_forest_map_batch(unary, forest, weights):
    """Exact MAP of ``sum_l unary[i, l] y_l + sum_f weights[f] y_a y_b`` per row.

    Parameters
    ----------
    unary : ndarray of float64, shape (n_samples, L)
        Score of state 1 of each label (state 0 scores 0); finite.
    forest : RootedForest
        From :func:`rooted_forest` over the ``(a, b)`` edge list.
    weights : ndarray of float64, shape (n_edges,)
        Score of both ends of each edge on.

    Returns
    -------
    labels : ndarray of int64, shape (n_samples, L)
    scores : ndarray of float64, shape (n_samples,)
    """
    unary = np.ascontiguousarray(unary, dtype=np.float64)
    weights = np.asarray(weights, dtype=np.float64)
    node_weight = np.where(forest.edge >= 0, weights[np.maximum(forest.edge, 0)]
                           if weights.size else 0.0, 0.0)
    labels = np.zeros(unary.shape, dtype=np.int64)
    scores = np.zeros(unary.shape[0])
    binary_forest_map_rows(unary, forest.order, forest.parent, node_weight, labels, scores)
    return labels, scores


def persistency_map_batch(unary, edges, weights, *, max_free=16):
    """MAP of ``sum_l unary[i, l] y_l + sum_f weights[f] y_a y_b`` per row, exact
    where persistency leaves at most ``max_free`` labels undecided.

    Labels that cannot pay even with their positive pairs are fixed off,
    labels that pay even with their negative pairs fixed on, repeatedly;
    the rest are enumerated (:mod:`._binary_sparse_map_kernels`).  Rows left
    with more undecided labels go to :func:`.gdmm_binary.gdmm_binary_batch`
    (approximate, with a certified bound).  Zero weights are dropped first:
    the cost follows the non-zero pair weights.

    Parameters
    ----------
    unary : ndarray of float64, shape (n_samples, L)
    edges : ndarray of int, shape (n_edges, 2)
        Distinct label pairs ``a != b``.
    weights : ndarray of float64, shape (n_edges,)
    max_free : int, default=16

    Returns
    -------
    labels : ndarray of int64, shape (n_samples, L)
    scores : ndarray of float64, shape (n_samples,)
    bounds : ndarray of float64, shape (n_samples,)
        Upper bounds on the optimum (equal to ``scores`` on exact rows).
    exact : ndarray of bool, shape (n_samples,)
    """
    from ._binary_sparse_map_kernels import sparse_binary_map_rows
    from ..lp.gdmm_binary import gdmm_binary_batch

    unary = np.ascontiguousarray(unary, dtype=np.float64)
    n, L = unary.shape
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    weights = np.asarray(weights, dtype=np.float64)
    keep = weights != 0.0
    a, b, w = edges[keep, 0], edges[keep, 1], weights[keep]
    rows = np.concatenate([a, b])
    cols = np.concatenate([b, a])
    vals = np.concatenate([w, w])
    order = np.argsort(rows, kind="stable")
    ptr = np.zeros(L + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=L), out=ptr[1:])
    labels = np.zeros((n, L), dtype=np.int64)
    scores = np.zeros(n)
    exact = np.zeros(n, dtype=np.uint8)
    sparse_binary_map_rows(unary, ptr, np.ascontiguousarray(cols[order]),
                           np.ascontiguousarray(vals[order]), int(max_free), labels, scores,
                           exact)
    bounds = scores.copy()
    hard = np.flatnonzero(exact == 0)
    if hard.size:
        lab, sc, bd, _ = gdmm_binary_batch(unary[hard], np.stack([a, b], axis=1), w)
        labels[hard] = lab
        scores[hard] = sc
        bounds[hard] = bd
    return labels, scores, bounds, exact.astype(bool)
