"""Numba kernels: exact MAP of binary pairwise models whose edges form a forest.

A labeling ``y`` in ``{0, 1}^L`` scores ``sum_j unary[j] y_j + sum_j
weight[j] y_j y_parent[j]`` (the second sum over the labels with a parent).
The forest is given rooted: ``order`` lists every label after its parent
(breadth first), ``parent[j]`` is ``-1`` at a root.  Max-product on two
states costs O(L) per labeling; ties go to state 0.
"""

import numba as nb
import numpy as np


@nb.njit(cache=True, nogil=True, inline="always")
def binary_forest_map(unary, order, parent, weight, msg0, msg1, out):
    """MAP labeling of one sample into ``out`` (int64 (L,)); returns its score.

    Parameters
    ----------
    unary : float64 (L,)
        Score of state 1 of each label (state 0 scores 0).
    order, parent : int64 (L,)
        Parents before children; ``parent[j] = -1`` at a root.
    weight : float64 (L,)
        Score of ``y_j = y_parent[j] = 1`` (ignored at roots).
    msg0, msg1 : float64 (L,)
        Scratch: best score of ``j``'s subtree with ``y_j = 0`` / ``1``.
    """
    L = order.shape[0]
    for j in range(L):
        msg0[j] = 0.0
        msg1[j] = unary[j]
    for t in range(L - 1, -1, -1):  # children before parents
        j = order[t]
        p = parent[j]
        if p >= 0:
            msg0[p] += max(msg0[j], msg1[j])
            msg1[p] += max(msg0[j], msg1[j] + weight[j])
    best = 0.0
    for t in range(L):  # parents before children: decode
        j = order[t]
        p = parent[j]
        if p < 0:
            out[j] = 1 if msg1[j] > msg0[j] else 0
            best += max(msg0[j], msg1[j])
        elif out[p] != 0:
            out[j] = 1 if msg1[j] + weight[j] > msg0[j] else 0
        else:
            out[j] = 1 if msg1[j] > msg0[j] else 0
    return best


@nb.njit(cache=True, nogil=True)
def binary_forest_map_rows(U, order, parent, weight, out, scores):
    """MAP labeling of every row of ``U`` (float64 (n, L) unary scores).

    Writes ``out`` int64 (n, L) and ``scores`` float64 (n,).  O(n L).
    """
    L = U.shape[1]
    msg0 = np.empty(L)
    msg1 = np.empty(L)
    for i in range(U.shape[0]):
        scores[i] = binary_forest_map(U[i], order, parent, weight, msg0, msg1, out[i])
