"""Numba kernel of a tabu search over a pairwise cost function network
(:class:`._soft_arc_kernels.CostNetwork`), for :mod:`.tabu`.

A move relabels one variable.  The search keeps, for every variable ``i``
and label ``x``, the cost ``gain[i * K + x]`` of the labeling with ``i`` at
``x`` and its neighbours as they are, counting each forbidden pair (an
``inf`` edge cost) as ``penalty``, and the number ``clash[i * K + x]`` of
forbidden pairs there; a move updates its neighbours' rows in
``O(degree * K)`` (:class:`PenalizedPairs` holds the edge costs with the
penalty in place) and their least cost changes of a move, so that a step's
scan for the cheapest move passes in ``O(1)`` over every variable none of
whose moves can be as cheap as the best one found so far (where it scanned
all ``n K`` moves, a step on a 60 x 60 grid of 8 labels took 3.5 times as
long).  Each step takes the cheapest move whose label was not left in the
last ``tenure`` to ``2 tenure`` steps (a tabu move is taken when it
gives a feasible labeling cheaper than the best one: aspiration); after
``stall`` steps without a better feasible labeling a few random variables
are relabelled.  Labels with an infinite unary cost are never taken.
"""

from typing import NamedTuple

import numba as nb
import numpy as np

from ..._borrowing import borrowing_kernel

__all__ = ["BEST", "CURRENT", "PenalizedPairs", "SINCE", "STEP", "TabuSettings", "TabuState",
           "VIOLATIONS", "tabu_init", "tabu_steps"]

# scalars
CURRENT = 0  # penalized cost of the current labeling
BEST = 1     # cost of the best feasible labeling (inf: none yet)
# counters
STEP = 0
SINCE = 1       # steps since the best improved
VIOLATIONS = 2  # forbidden pairs in the current labeling


class TabuState(NamedTuple):
    """The search's state (``K``: the network's largest domain).

    Attributes
    ----------
    labels : int64 (n,)
        The current labeling.
    gain : float64 (n * K,)
        Penalized cost of the current labeling with one variable relabelled.
    clash : int64 (n * K,)
        Its forbidden pairs.
    tabu_until : int64 (n * K,)
        The step until which a label may not be taken again.
    best_labels : int64 (n,)
    least_move : float64 (n,)
        Each variable's least cost change (gain less the current label's)
        over its labels other than the current one that its unary costs
        allow, tabu or not (``inf``: none).
    scalars : float64 (2,)
        ``CURRENT``, ``BEST``.
    counters : int64 (3,)
        ``STEP``, ``SINCE``, ``VIOLATIONS``.
    """

    labels: np.ndarray
    gain: np.ndarray
    clash: np.ndarray
    tabu_until: np.ndarray
    best_labels: np.ndarray
    least_move: np.ndarray
    scalars: np.ndarray
    counters: np.ndarray


class PenalizedPairs(NamedTuple):
    """The network's edge costs with each forbidden pair at ``penalty``
    (``cost``, float64 (E * K * K,)) and the forbidden pairs (``forbidden``,
    int64 (E * K * K,), 1 where forbidden), laid out as ``CostNetwork.pair``."""

    cost: np.ndarray
    forbidden: np.ndarray


class TabuSettings(NamedTuple):
    """``penalty``: the cost of a forbidden pair; ``tenure``: the shortest
    tabu time; ``stall``: steps without a better labeling before a
    perturbation; ``kick``: variables relabelled by a perturbation."""

    penalty: float
    tenure: int
    stall: int
    kick: int


@nb.njit(cache=True, nogil=True)
def tabu_init(net, pairs, state):
    """Fill ``state``'s gains, clashes and scalars for ``state.labels``; the
    tabu list and the step counters start afresh, and the best labeling is
    the current one when it is feasible."""
    n = net.n_states.shape[0]
    K = net.K
    labels = state.labels
    for i in range(n):
        for x in range(K):
            state.gain[i * K + x] = net.unary[i * K + x]
            state.clash[i * K + x] = 0
            state.tabu_until[i * K + x] = 0
    cur = 0.0
    viol = 0
    for i in range(n):
        cur += net.unary[i * K + labels[i]]
    for e in range(net.ends.shape[0]):
        p, q = net.ends[e, 0], net.ends[e, 1]
        a, b = labels[p], labels[q]
        for x in range(net.n_states[p]):
            state.gain[p * K + x] += pairs.cost[(e * K + x) * K + b]
            state.clash[p * K + x] += pairs.forbidden[(e * K + x) * K + b]
        for x in range(net.n_states[q]):
            state.gain[q * K + x] += pairs.cost[(e * K + a) * K + x]
            state.clash[q * K + x] += pairs.forbidden[(e * K + a) * K + x]
        cur += pairs.cost[(e * K + a) * K + b]
        viol += pairs.forbidden[(e * K + a) * K + b]
    for i in range(n):
        _least_move(net, state, i)
    state.scalars[CURRENT] = cur
    state.counters[STEP] = 0
    state.counters[SINCE] = 0
    state.counters[VIOLATIONS] = viol
    state.scalars[BEST] = np.inf
    if viol == 0:
        state.scalars[BEST] = cur
        state.best_labels[:] = labels


@borrowing_kernel
def _least_move(net, state, i):
    """Set ``state.least_move[i]`` from ``i``'s gains."""
    K = net.K
    least = np.inf
    for x in range(net.n_states[i]):
        if x != state.labels[i] and net.unary[i * K + x] != np.inf:
            least = min(least, state.gain[i * K + x])
    state.least_move[i] = least - state.gain[i * K + state.labels[i]]


@borrowing_kernel
def _relabel(net, pairs, state, i, x):
    """Move variable ``i`` to label ``x``: its neighbours' gains and clashes,
    the current cost and the violations."""
    K = net.K
    gain, clash, cost, forbidden = state.gain, state.clash, pairs.cost, pairs.forbidden
    old = state.labels[i]
    state.scalars[CURRENT] += gain[i * K + x] - gain[i * K + old]
    state.counters[VIOLATIONS] += clash[i * K + x] - clash[i * K + old]
    state.labels[i] = x
    _least_move(net, state, i)
    for r in range(net.adj_ptr[i], net.adj_ptr[i + 1]):
        e, side, j = net.adjacency[r, 0], net.adjacency[r, 1], net.adjacency[r, 2]
        row = j * K
        if side == 0:  # i is the edge's first end: rows old and x of the table
            before, after = (e * K + old) * K, (e * K + x) * K
            for y in range(net.n_states[j]):
                gain[row + y] += cost[after + y] - cost[before + y]
                clash[row + y] += forbidden[after + y] - forbidden[before + y]
        else:  # its second end: columns old and x
            base = e * K * K
            for y in range(net.n_states[j]):
                gain[row + y] += cost[base + y * K + x] - cost[base + y * K + old]
                clash[row + y] += forbidden[base + y * K + x] - forbidden[base + y * K + old]
        _least_move(net, state, j)


@nb.njit(cache=True, nogil=True)
def tabu_steps(net, pairs, state, settings, n_steps, seed):
    """Run ``n_steps`` steps (random choices from ``seed``); the best
    feasible labeling found so far is in ``state.best_labels`` (cost
    ``state.scalars[BEST]``).  Returns whether the best improved."""
    np.random.seed(seed)
    n = net.n_states.shape[0]
    K = net.K
    n_states, unary = net.n_states, net.unary
    labels, gain, clash, tabu_until = state.labels, state.gain, state.clash, state.tabu_until
    least_move, scalars, counters = state.least_move, state.scalars, state.counters
    improved = False
    for _ in range(n_steps):
        step = counters[STEP]
        counters[STEP] = step + 1
        counters[SINCE] += 1
        if counters[SINCE] > settings.stall:  # perturb
            counters[SINCE] = 0
            for _k in range(settings.kick):
                i = np.random.randint(n)
                x = np.random.randint(n_states[i])
                if x != labels[i] and unary[i * K + x] != np.inf:
                    _relabel(net, pairs, state, i, x)
            continue
        cur = scalars[CURRENT]
        best = scalars[BEST]
        viol = counters[VIOLATIONS]
        pick_i = -1
        pick_x = -1
        pick_d = np.inf
        ties = 0
        for i in range(n):
            if least_move[i] > pick_d:  # no move of i is as cheap
                continue
            li = labels[i]
            row = i * K
            g0 = gain[row + li]
            c0 = clash[row + li]
            for x in range(n_states[i]):
                d = gain[row + x] - g0
                if d > pick_d or x == li or unary[row + x] == np.inf:
                    continue
                if tabu_until[row + x] > step:
                    # aspiration: a feasible labeling better than the best
                    if not (viol - c0 + clash[row + x] == 0 and cur + d < best):
                        continue
                if d < pick_d:
                    pick_i, pick_x, pick_d, ties = i, x, d, 1
                else:
                    ties += 1
                    if np.random.randint(ties) == 0:
                        pick_i, pick_x = i, x
        if pick_i < 0:
            continue
        old = labels[pick_i]
        tabu_until[pick_i * K + old] = step + settings.tenure + \
            np.random.randint(settings.tenure + 1)
        _relabel(net, pairs, state, pick_i, pick_x)
        if counters[VIOLATIONS] == 0 and scalars[CURRENT] < scalars[BEST]:
            scalars[BEST] = scalars[CURRENT]
            state.best_labels[:] = labels
            counters[SINCE] = 0
            improved = True
    return improved
