"""Exact MAP of binary pairwise models on a forest, for many samples at once.

Multilabel models with pairwise label interactions on a tree (or forest) of
label pairs decode exactly by max-product on two states: O(L) per sample
after the unary scores.
"""

from collections import deque
from typing import NamedTuple

import numpy as np

from ._binary_forest_kernels import binary_forest_map_rows

__all__ = ["RootedForest", "rooted_forest", "binary_forest_map_batch"]


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
