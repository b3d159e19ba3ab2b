"""Numba kernel that lays a pairwise graph's tables out as the soft arc
search's edge costs (:class:`._soft_arc_kernels.CostNetwork`'s ``pair``),
for :func:`.soft_arc._cost_network`: one pass over the tables, where the
array expression it replaces built five temporaries of one entry per table
entry and filled the padded array apart (on a 60 x 60 grid of 8 labels,
37 ms of a 0.25 s proof in a fresh process)."""

import numba as nb
import numpy as np

__all__ = ["pair_costs"]


@nb.njit(cache=True, nogil=True)
def pair_costs(table_data, table_offsets, table_ids, ends, n_states, K, pair, table_max):
    """Each edge's costs, ``table_max[e] - score`` (``inf`` where the score
    is ``-inf`` or the table has no finite entry, and past the domains),
    into ``pair`` twice, once per end's view.

    Parameters
    ----------
    table_data, table_offsets, table_ids : FactorGraph's table arrays
        Edge ``e``'s table is row-major over its first end's labels.
    ends : int64 (E, 2)
    n_states : int64 (n,)
    K : int
        The padded domain size.
    pair : float64 (>= E * 2 * K * K,)
        Written at ``((2 e + s) * K + x) * K + y``: the cost of label ``x``
        at end ``s`` with ``y`` at the other end (entries past ``E``'s
        untouched).
    table_max : float64 (E,)
        Written: each table's largest score (``-inf``: no finite entry).

    Returns
    -------
    largest : float
        The largest finite cost written (0 when none is).
    integral : bool
        Whether every finite cost written is an integer.
    """
    largest = 0.0
    integral = True
    for e in range(ends.shape[0]):
        kp, kq = n_states[ends[e, 0]], n_states[ends[e, 1]]
        base = table_offsets[table_ids[e]]
        m = -np.inf
        for t in range(kp * kq):
            m = max(m, table_data[base + t])
        table_max[e] = m
        first, second = 2 * e * K * K, (2 * e + 1) * K * K
        for t in range(2 * K * K):
            pair[first + t] = np.inf
        for x in range(kp):
            for y in range(kq):
                v = table_data[base + x * kq + y]
                if v == -np.inf or m == -np.inf:
                    continue
                c = m - v
                pair[first + x * K + y] = c
                pair[second + y * K + x] = c
                largest = max(largest, c)
                integral = integral and c == np.round(c)
    return largest, integral
