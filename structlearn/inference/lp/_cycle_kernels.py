"""Numba kernels for short-cycle tightening (no validation here).

The pairwise part of a graph is given as a symmetric adjacency in CSR form
(``indptr``, ``nbrs``, sorted neighbours) with the edge id of each entry
(``nbr_edge``); edge ``e`` joins ``edge_lo[e] < edge_hi[e]`` and its table
sits at ``edge_tab[edge_off[e]:edge_off[e + 1]]`` in C order over
``(x_lo, x_hi)``.
"""

import numba as nb
import numpy as np

from .._search_kernels import sorted_find


@nb.njit(cache=True, no_cpython_wrapper=True)
def _edge_between(indptr, nbrs, nbr_edge, a, b):
    """Edge id joining ``a`` and ``b`` (binary search), or -1."""
    p = sorted_find(nbrs, indptr[a], indptr[a + 1], b)
    return nbr_edge[p] if p >= 0 else -1


@nb.njit(cache=True)
def short_cycles(indptr, nbrs, nbr_edge, n_states, max_entries, max_count, out):
    """Triangles and chordless-or-not 4-cycles, each listed once.

    A triangle ``a < b < c``; a 4-cycle ``a - b - c - d - a`` with ``a`` its
    smallest variable and ``b < d``.  Cycles whose joint table would exceed
    ``max_entries`` entries are skipped.

    Parameters
    ----------
    out : int64 (max_count, 4) or (0, 4)
        Receives the variables in cycle order; -1 pads a triangle.  With 0
        rows nothing is written: the cycles are only counted.

    Returns
    -------
    count : int
        Cycles found (at most ``max_count``).
    """
    write = out.shape[0] > 0
    n = indptr.shape[0] - 1
    count = 0
    for a in range(n):
        for i in range(indptr[a], indptr[a + 1]):
            b = nbrs[i]
            if b <= a:
                continue
            for j in range(indptr[b], indptr[b + 1]):
                c = nbrs[j]
                if c <= a or c == b:
                    continue
                # triangle a < b < c
                if c > b and n_states[a] * n_states[b] * n_states[c] <= max_entries:
                    if _edge_between(indptr, nbrs, nbr_edge, a, c) >= 0:
                        if count == max_count:
                            return count
                        if write:
                            out[count, 0] = a
                            out[count, 1] = b
                            out[count, 2] = c
                            out[count, 3] = -1
                        count += 1
                # 4-cycle a - b - c - d - a with b < d
                size3 = n_states[a] * n_states[b] * n_states[c]
                for k in range(indptr[c], indptr[c + 1]):
                    d = nbrs[k]
                    if d <= b or d == c:
                        continue
                    if size3 * n_states[d] > max_entries:
                        continue
                    if _edge_between(indptr, nbrs, nbr_edge, a, d) >= 0:
                        if count == max_count:
                            return count
                        if write:
                            out[count, 0] = a
                            out[count, 1] = b
                            out[count, 2] = c
                            out[count, 3] = d
                        count += 1
    return count


@nb.njit(cache=True, no_cpython_wrapper=True)
def _cycle_edges(cycles, c, length, indptr, nbrs, nbr_edge, edges):
    for p in range(length):
        edges[p] = _edge_between(indptr, nbrs, nbr_edge, cycles[c, p],
                                 cycles[c, (p + 1) % length])


@nb.njit(cache=True, no_cpython_wrapper=True)
def _joint_score(cycles, c, length, x, edges, weight, edge_lo, edge_off, edge_tab, n_states):
    """Sum over the cycle's edges of ``weight[e]`` times the edge entry of ``x``."""
    s = 0.0
    for p in range(length):
        a = cycles[c, p]
        b = cycles[c, (p + 1) % length]
        e = edges[p]
        if a == edge_lo[e]:
            v = edge_tab[edge_off[e] + x[p] * n_states[b] + x[(p + 1) % length]]
        else:
            v = edge_tab[edge_off[e] + x[(p + 1) % length] * n_states[a] + x[p]]
        s += weight[e] * v if v != -np.inf else -np.inf
    return s


@nb.njit(cache=True, no_cpython_wrapper=True)
def _next_labeling(x, cycles, c, length, n_states):
    """Advance ``x`` to the next joint labeling (last variable fastest)."""
    p = length - 1
    while p >= 0:
        x[p] += 1
        if x[p] < n_states[cycles[c, p]]:
            return
        x[p] = 0
        p -= 1


@nb.njit(cache=True)
def cycle_gaps(cycles, indptr, nbrs, nbr_edge, edge_lo, edge_off, edge_tab, n_states, out):
    """Per cycle: the sum of its edges' best entries minus the best joint
    labeling of the cycle's edges (>= 0; positive when the edges cannot all
    take their best entries at once, i.e. the cycle is frustrated).

    Parameters
    ----------
    cycles : int64 (n_cycles, 4)
        As written by :func:`short_cycles`.
    out : float64 (n_cycles,)
    """
    x = np.zeros(4, dtype=np.int64)
    edges = np.zeros(4, dtype=np.int64)
    ones = np.ones(edge_off.shape[0] - 1)
    for c in range(cycles.shape[0]):
        length = 3 if cycles[c, 3] < 0 else 4
        _cycle_edges(cycles, c, length, indptr, nbrs, nbr_edge, edges)
        independent = 0.0
        total = 1
        for p in range(length):
            best = -np.inf
            for t in range(edge_off[edges[p]], edge_off[edges[p] + 1]):
                best = max(best, edge_tab[t])
            independent += best
            total *= n_states[cycles[c, p]]
            x[p] = 0
        joint = -np.inf
        for _ in range(total):
            joint = max(joint, _joint_score(cycles, c, length, x, edges, ones, edge_lo,
                                            edge_off, edge_tab, n_states))
            _next_labeling(x, cycles, c, length, n_states)
        out[c] = independent - joint


@nb.njit(cache=True)
def cluster_tables(cycles, indptr, nbrs, nbr_edge, edge_lo, edge_off, edge_tab, n_states,
                   weight, table_off, out):
    """Joint table of each cycle: ``weight[e]`` times each of its edges'
    tables, summed, in C order over the cycle's variables.

    Parameters
    ----------
    weight : float64 (n_edges,)
        Share of each edge's table given to each cycle that covers it.
    table_off : int64 (n_cycles + 1,)
        Where each cycle's table starts in ``out``.
    out : float64 (table_off[-1],)
    """
    x = np.zeros(4, dtype=np.int64)
    edges = np.zeros(4, dtype=np.int64)
    for c in range(cycles.shape[0]):
        length = 3 if cycles[c, 3] < 0 else 4
        _cycle_edges(cycles, c, length, indptr, nbrs, nbr_edge, edges)
        for p in range(length):
            x[p] = 0
        for t in range(table_off[c], table_off[c + 1]):
            out[t] = _joint_score(cycles, c, length, x, edges, weight, edge_lo, edge_off,
                                  edge_tab, n_states)
            _next_labeling(x, cycles, c, length, n_states)
