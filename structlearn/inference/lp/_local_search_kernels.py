"""Numba kernels of the local searches that improve incumbent labelings:
iterated conditional modes (ICM) and an iterated local search that walks
from one ICM optimum to the next.

``graph`` is the tuple of :meth:`structlearn.graphs.FactorGraph.arrays`
(``n_states, unary_offsets, unary, scope_indptr, scope_vars, table_ids,
table_offsets, table_data``; maximization, ``-inf`` allowed);
``var_indptr, var_factors`` the CSR of each variable's factors.
"""

from typing import NamedTuple

import numba as nb
import numpy as np

from ..._borrowing import borrowing_kernel
from ...graphs._graph_kernels import score_labelings

IDLE, LOCAL_OPTIMUM = 0, 1  # Walk.counters
IMPROVEMENT_REL = 1e-12     # a step improves the walker by more than this share


class Walk(NamedTuple):
    """An iterated local search's state (caller-allocated, ``n`` variables,
    ``K`` the largest domain).

    Attributes
    ----------
    walker, best, cand : int64 (n,)
        The walk's current labeling, the best one seen, the step's candidate.
    scores : float64 (2,)
        The walker's and the best labeling's scores.
    counters : int64 (2,)
        ``[IDLE, LOCAL_OPTIMUM]``: steps since one improved the walker; 1
        when the walker is known to be an ICM optimum (set it to 0 after
        writing another walker).
    seen, queue : int64 (n,)
        Scratch (``seen`` all zeros between calls).
    queued : uint8 (n,)
        Scratch, all zeros between calls.
    draws : float64 (n,)
    values : float64 (K,)
        Scratch.
    random_state : uint64 (1,)
        The steps' random stream (xorshift64*; never 0): it goes on from
        call to call, so the steps do not depend on how they are split into
        calls.
    """

    walker: np.ndarray
    best: np.ndarray
    cand: np.ndarray
    scores: np.ndarray
    counters: np.ndarray
    seen: np.ndarray
    queue: np.ndarray
    queued: np.ndarray
    draws: np.ndarray
    values: np.ndarray
    random_state: np.ndarray


@borrowing_kernel
def _uniform(random_state):
    """A draw in [0, 1) from the xorshift64* stream ``random_state`` (uint64
    (1,), advanced)."""
    x = random_state[0]
    x ^= x >> np.uint64(12)
    x ^= x << np.uint64(25)
    x ^= x >> np.uint64(27)
    random_state[0] = x
    return float((x * np.uint64(0x2545F4914F6CDD1D)) >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@borrowing_kernel
def _conditional_scores(graph, var_indptr, var_factors, labels, i, values):
    """``values[x]``: the score terms of variable ``i`` with label ``x``,
    the other variables at ``labels``."""
    (n_states, unary_offsets, unary, scope_indptr, scope_vars, table_ids, table_offsets,
     table_data) = graph
    k_i = n_states[i]
    u = unary_offsets[i]
    for x in range(k_i):
        values[x] = unary[u + x]
    for q in range(var_indptr[i], var_indptr[i + 1]):
        f = var_factors[q]
        base = table_offsets[table_ids[f]]
        # flat index with x_i = 0 and the stride of variable i
        idx = 0
        stride = 0
        for p in range(scope_indptr[f], scope_indptr[f + 1]):
            v = scope_vars[p]
            idx = idx * n_states[v]
            stride = stride * n_states[v]
            if v == i:
                stride = 1
            else:
                idx += labels[v]
        for x in range(k_i):
            values[x] += table_data[base + idx + x * stride]


@borrowing_kernel
def _best_response(graph, var_indptr, var_factors, labels, i, values):
    """Give ``i`` its best label given the others (ties keep its label);
    returns whether it changed."""
    _conditional_scores(graph, var_indptr, var_factors, labels, i, values)
    arg = labels[i]
    best = values[arg]
    for x in range(graph[0][i]):
        if values[x] > best:
            best, arg = values[x], x
    if arg == labels[i]:
        return False
    labels[i] = arg
    return True


@borrowing_kernel(python_callable=True)
def local_search(graph, var_indptr, var_factors, labels, max_sweeps, cand):
    """Iterated conditional modes on the true scores: each variable in turn
    takes its best label given the others, until no label changes (at most
    ``max_sweeps`` sweeps).  ``cand``: float64 scratch (max n_states,).
    Labels change in place."""
    for sweep in range(max_sweeps):
        changed = False
        for i in range(graph[0].shape[0]):
            changed |= _best_response(graph, var_indptr, var_factors, labels, i, cand)
        if not changed:
            break


@borrowing_kernel(python_callable=True)
def perturb_ball(n_states, scope_indptr, scope_vars, var_indptr, var_factors, labels,
                 start, size, unif, seen, queue):
    """Give random labels to a breadth-first ball of ``size`` variables around ``start``.

    unif : float64 (>= size,) uniform draws in [0, 1); seen : int64 (n_vars,)
    scratch of zeros (restored); queue : int64 (n_vars,) scratch.
    Returns the number of variables relabelled.
    """
    head = 0
    tail = 1
    queue[0] = start
    seen[start] = 1
    while head < tail and tail < size:
        v = queue[head]
        head += 1
        for q in range(var_indptr[v], var_indptr[v + 1]):
            f = var_factors[q]
            for p in range(scope_indptr[f], scope_indptr[f + 1]):
                u = scope_vars[p]
                if seen[u] == 0 and tail < size:
                    seen[u] = 1
                    queue[tail] = u
                    tail += 1
    for r in range(tail):
        v = queue[r]
        labels[v] = int(unif[r] * n_states[v])
        seen[v] = 0
    return tail


@borrowing_kernel
def _push_neighbours(graph, var_indptr, var_factors, v, walk, head, count):
    """Queue the variables sharing a factor with ``v`` (not ``v``) that are
    not queued, in the ring ``walk.queue[head:head + count]`` (modulo n);
    returns the new count."""
    scope_indptr, scope_vars = graph[3], graph[4]
    queue, queued = walk.queue, walk.queued
    n = queue.shape[0]
    for q in range(var_indptr[v], var_indptr[v + 1]):
        f = var_factors[q]
        for p in range(scope_indptr[f], scope_indptr[f + 1]):
            u = scope_vars[p]
            if u != v and not queued[u]:
                queued[u] = 1
                queue[(head + count) % n] = u
                count += 1
    return count


@borrowing_kernel
def _icm_from(graph, var_indptr, var_factors, labels, walk, count):
    """Iterated conditional modes from the ``count`` variables queued at the
    start of ``walk.queue`` (flagged in ``walk.queued``): a variable whose
    label changes queues its neighbours, until the queue empties (every
    variable then holds its best label given the others, if all but the
    queued ones did before) or ``50 n`` variables have been visited."""
    queue, queued, values = walk.queue, walk.queued, walk.values
    n = queue.shape[0]
    head, visits = 0, 0
    while count > 0 and visits < 50 * n:
        i = queue[head]
        head = (head + 1) % n
        count -= 1
        queued[i] = 0
        visits += 1
        if _best_response(graph, var_indptr, var_factors, labels, i, values):
            count = _push_neighbours(graph, var_indptr, var_factors, i, walk, head, count)
    for r in range(count):  # (the visit cap ended it: clear the flags)
        queued[queue[(head + r) % n]] = 0


@nb.njit(cache=True, nogil=True)
def walk_steps(graph, var_indptr, var_factors, walk, n_steps, max_ball, idle_limit):
    """``n_steps`` steps of an iterated local search, or fewer once
    ``walk.counters[IDLE]`` reaches ``idle_limit``.

    A step relabels a random breadth-first ball of 3 to ``max_ball``
    variables of the walker at random, improves the result by iterated
    conditional modes from the ball and its neighbours outwards, and moves
    the walker there when the result scores at least as much.  The walker
    is first made an ICM optimum when it is not known to be one.  The best
    labeling seen is kept in ``walk.best`` (its score in ``walk.scores[1]``).
    The draws come from ``walk.random_state``.  Returns the steps taken.
    """
    n_states = graph[0]
    n = n_states.shape[0]
    walker, cand, queue, queued = walk.walker, walk.cand, walk.queue, walk.queued
    scores, counters = walk.scores, walk.counters
    if n == 0:
        return 0
    score = np.empty(1)
    if counters[LOCAL_OPTIMUM] == 0:
        for i in range(n):
            queue[i] = i
            queued[i] = 1
        _icm_from(graph, var_indptr, var_factors, walker, walk, n)
        score_labelings(*graph, walker.reshape(1, n), score)
        scores[0] = score[0]
        counters[LOCAL_OPTIMUM] = 1
        if scores[0] > scores[1]:
            scores[1] = scores[0]
            walk.best[:] = walker
    low, high = 3, max(4, min(max_ball, n) + 1)
    for step in range(n_steps):
        if counters[IDLE] >= idle_limit:
            return step
        cand[:] = walker
        # (at most n: the draws have room for n, and a ball holds no more)
        size = min(low + int(_uniform(walk.random_state) * (high - low)), n)
        for r in range(size):
            walk.draws[r] = _uniform(walk.random_state)
        start = int(_uniform(walk.random_state) * n)
        size = perturb_ball(n_states, graph[3], graph[4], var_indptr, var_factors, cand, start,
                            size, walk.draws, walk.seen, queue)
        for r in range(size):  # the ball and its neighbours: only their best labels moved
            queued[queue[r]] = 1
        count = size
        for r in range(size):
            count = _push_neighbours(graph, var_indptr, var_factors, queue[r], walk, 0, count)
        _icm_from(graph, var_indptr, var_factors, cand, walk, count)
        score_labelings(*graph, cand.reshape(1, n), score)
        s = score[0]
        if s > scores[0] + IMPROVEMENT_REL * max(1.0, abs(s)):
            counters[IDLE] = 0
        else:
            counters[IDLE] += 1
        if s >= scores[0]:
            walker[:] = cand
            scores[0] = s
        if s > scores[1]:
            walk.best[:] = cand
            scores[1] = s
    return n_steps
