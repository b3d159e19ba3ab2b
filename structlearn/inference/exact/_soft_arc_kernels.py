"""Numba kernels of the depth-first search over a cost function network kept
soft arc consistent (:mod:`.soft_arc`).

The network minimizes ``sum_i unary_i(x_i) + sum_e pair_e(x_p, x_q)`` with
non-negative costs (``inf``: forbidden).  The search keeps an equivalent
network, reparameterized by *shifts*: edge ``e`` has moved
``shift[e, s, x]`` of its cost onto label ``x`` of its endpoint ``s``, so its
current cost is ``pair_e(a, b) - shift[e, 0, a] - shift[e, 1, b]`` and the
endpoint's current unary cost holds that amount more.  Unary minima move on
into ``lower``, a lower bound of every labeling's cost left in the domains.
A label is removed from its domain by setting its current unary cost to
``inf``.

Consistency enforced at every node (Larrosa and Schiex's FDAC*):

* node consistency: each domain holds a label of unary cost 0, and no label
  with ``lower + unary >= cut`` (the incumbent's cost less the tolerance);
* arc consistency: each label has, on every edge, a label of the other end
  at edge cost 0 (the edge's row minimum is projected onto the label);
* directional arc consistency: in a fixed variable order, each label of the
  earlier end of an edge has a label of the later end at edge plus unary
  cost 0 (unary costs of the later end are first extended into the edge as
  far as needed, then the row minima projected);
* existential arc consistency: each variable has a label of unary cost 0
  with, on every edge, a label of the other end at edge plus unary cost 0;
  where none has, the variable's star (its unary costs, edges and
  neighbours' unary costs) moves its minimum onto the variable
  (``EDAC*`` together with the above);
* dead-end elimination: a label that the existentially supported label of
  its variable dominates in every neighbourhood is removed.

All moves keep every labeling's cost.  A fixpoint is sought for at most
:data:`MAX_ROUNDS` rounds; any point on the way is a valid bound.
"""

from typing import NamedTuple

import numba as nb
import numpy as np

MAX_ROUNDS = 16  # propagation rounds per node at most

# state.scalars
LOWER, UPPER = 0, 1
# state.counters
DEPTH, NODES, PHASE, ROUNDS, LAST_CONFLICT = 0, 1, 2, 3, 4
# phases of the resumable search
NOT_STARTED, CONSISTENT, BACKTRACK, DONE = 0, 1, 2, 3
# flags returned by the support kernels
RAISED, REMOVED, EXTENDED = 1, 2, 4
WIPED = -1


class CostNetwork(NamedTuple):
    """A pairwise cost function network in flat arrays (``K``: the largest
    domain; ``E``: the number of edges).

    Attributes
    ----------
    n_states : int64 (n,)
    unary : float64 (n * K,)
        Cost of label ``x`` of variable ``i`` at ``i * K + x`` (``>= 0``;
        ``inf``: forbidden, and for ``x >= n_states[i]``).
    pair : float64 (E * K * K,)
        Cost of labels ``(a, b)`` of edge ``e`` at ``(e * K + a) * K + b``,
        ``a`` the label of ``ends[e, 0]`` (``>= 0``; ``inf``: forbidden).
    ends : int64 (E, 2)
    adj_ptr : int64 (n + 1,)
        CSR of each variable's edges: ``adj_edge[adj_ptr[i]:adj_ptr[i + 1]]``
        with ``adj_side`` the variable's end (0 or 1) in each.
    adj_edge, adj_side : int64 (2 E,)
    dac_order : int64 (n,)
        The order of directional arc consistency; ``dac_pos`` its inverse.
    dac_pos : int64 (n,)
    K : int
        The padded domain size.
    """

    n_states: np.ndarray
    unary: np.ndarray
    pair: np.ndarray
    ends: np.ndarray
    adj_ptr: np.ndarray
    adj_edge: np.ndarray
    adj_side: np.ndarray
    dac_order: np.ndarray
    dac_pos: np.ndarray
    K: int


class SearchState(NamedTuple):
    """Everything the resumable search keeps between calls (caller-allocated).

    Attributes
    ----------
    unary : float64 (n * K,)
        The current node's unary costs (``inf``: removed).
    shift : float64 (E * 2 * K,)
        The current node's shifts, ``shift[(2 e + s) * K + x]``.
    saved_unary : float64 (n + 1, n * K)
    saved_shift : float64 (n + 1, E * 2 * K)
    saved_lower : float64 (n + 1,)
        The node at each depth of the current path, before its branch.
    branch : int64 (n + 1, 2)
        The variable and label fixed at each depth (the other branch removes
        the label).
    labels : int64 (n,)
        The incumbent labeling.
    full_support : int64 (n,)
        Each variable's last label found existentially supported (a hint).
    residue : int64 (2, E * 2 * K)
        Per edge end and label, the other end's label last found at edge
        cost 0 (row 0, arc consistency) and at edge plus unary cost 0 (row 1,
        full supports): checked first, so a still valid support costs O(1)
        instead of a scan of the other domain.
    edge_weight : float64 (E,)
        Domain wipe-outs per edge, plus 1 (the ``dom / wdeg`` heuristic).
    scalars : float64 (2,)
        ``[LOWER, UPPER]``: the current node's bound, the incumbent's cost
        (``inf``: none).
    counters : int64 (5,)
        ``[DEPTH, NODES, PHASE, ROUNDS, LAST_CONFLICT]``: ROUNDS counts the
        propagation rounds run; LAST_CONFLICT is the variable whose fixing
        last failed (-1: none), branched on first while it is free.
    """

    unary: np.ndarray
    shift: np.ndarray
    saved_unary: np.ndarray
    saved_shift: np.ndarray
    saved_lower: np.ndarray
    branch: np.ndarray
    labels: np.ndarray
    full_support: np.ndarray
    residue: np.ndarray
    edge_weight: np.ndarray
    scalars: np.ndarray
    counters: np.ndarray


class Workspace(NamedTuple):
    """Scratch arrays: the flags of what the propagation has left to do,
    ``edge_dirty`` uint8 (E,) (arc consistency of both ends), ``shrunk``,
    ``raised``, ``star_dirty`` and ``dee_dirty`` uint8 (n,) (a domain lost
    labels; unary costs rose; a star changed: existential arc consistency,
    then dead-end elimination), ``best``
    float64 (K,) and ``gainers`` int64 (K,) (a full support's projections),
    ``sizes`` int64 (n,) (domain sizes)."""

    edge_dirty: np.ndarray
    shrunk: np.ndarray
    raised: np.ndarray
    star_dirty: np.ndarray
    dee_dirty: np.ndarray
    best: np.ndarray
    gainers: np.ndarray
    sizes: np.ndarray


@nb.njit(cache=True, no_cpython_wrapper=True, inline="always")
def _edge_cost(pair, shift, K, e, s, x, y):
    """Current cost of edge ``e`` with label ``x`` at its end ``s`` and
    ``y`` at the other (arrays only: a call passes no reference-counted
    tuple in the innermost loops)."""
    if s == 0:
        a, b = x, y
    else:
        a, b = y, x
    return pair[(e * K + a) * K + b] - shift[2 * e * K + a] - shift[(2 * e + 1) * K + b]


@nb.njit(cache=True, no_cpython_wrapper=True)
def _support(net, state, e, s, eps):
    """Arc consistency of end ``s`` of edge ``e``: each label's minimum edge
    cost over the other end's domain moves onto the label's unary cost
    (labels with none finite are removed).  Returns RAISED | REMOVED flags,
    or WIPED when the domain empties."""
    K = net.K
    unary, shift = state.unary, state.shift
    i, j = net.ends[e, s], net.ends[e, 1 - s]
    residue = state.residue[0]
    flags, alive = 0, 0
    for x in range(net.n_states[i]):
        if unary[i * K + x] == np.inf:
            continue
        r = residue[(2 * e + s) * K + x]
        if unary[j * K + r] != np.inf and _edge_cost(net.pair, shift, K, e, s, x, r) <= eps:
            alive += 1
            continue
        m = np.inf
        for y in range(net.n_states[j]):
            if unary[j * K + y] != np.inf:
                c = _edge_cost(net.pair, shift, K, e, s, x, y)
                if c < m:
                    m, r = c, y
        residue[(2 * e + s) * K + x] = r
        if m == np.inf:
            unary[i * K + x] = np.inf
            flags |= REMOVED
            continue
        alive += 1
        if m > eps:
            shift[(2 * e + s) * K + x] += m
            unary[i * K + x] += m
            flags |= RAISED
    return WIPED if alive == 0 else flags


@nb.njit(cache=True, no_cpython_wrapper=True)
def _full_support(net, state, work, e, s, eps):
    """Directional arc consistency of end ``s`` of edge ``e`` towards the
    other end: the other end's unary costs are extended into the edge as far
    as the projection needs, then each label's minimum of edge plus unary
    cost moves onto it.  Returns RAISED | REMOVED | EXTENDED flags, or
    WIPED."""
    K = net.K
    unary, shift, best, gainers = state.unary, state.shift, work.best, work.gainers
    i, j = net.ends[e, s], net.ends[e, 1 - s]
    residue = state.residue[1]
    flags, alive, n_gain = 0, 0, 0
    for x in range(net.n_states[i]):
        best[x] = np.inf
        if unary[i * K + x] == np.inf:
            continue
        r = residue[(2 * e + s) * K + x]
        ur = unary[j * K + r]
        if ur != np.inf and _edge_cost(net.pair, shift, K, e, s, x, r) + ur <= eps:
            best[x] = 0.0
            alive += 1
            continue
        m = np.inf
        for y in range(net.n_states[j]):
            uy = unary[j * K + y]
            if uy != np.inf:
                c = _edge_cost(net.pair, shift, K, e, s, x, y) + uy
                if c < m:
                    m, r = c, y
        residue[(2 * e + s) * K + x] = r
        if m == np.inf:
            unary[i * K + x] = np.inf
            flags |= REMOVED
            continue
        alive += 1
        best[x] = m
        if m > eps:  # only these labels gain: only they need extended costs
            gainers[n_gain] = x
            n_gain += 1
    if alive == 0:
        return WIPED
    if n_gain == 0:
        return flags
    for y in range(net.n_states[j]):
        uy = unary[j * K + y]
        if uy == np.inf:
            continue
        ext = 0.0
        for g in range(n_gain):
            x = gainers[g]
            ext = max(ext, best[x] - _edge_cost(net.pair, shift, K, e, s, x, y))
        ext = min(ext, uy)
        if ext > eps:
            unary[j * K + y] = uy - ext
            shift[(2 * e + 1 - s) * K + y] -= ext
            flags |= EXTENDED
    for g in range(n_gain):
        x = gainers[g]
        shift[(2 * e + s) * K + x] += best[x]
        unary[i * K + x] += best[x]
    return flags | RAISED


@nb.njit(cache=True, no_cpython_wrapper=True)
def _star_cost(net, state, i, x, stop, eps):
    """Unary cost of label ``x`` of ``i`` plus, per edge, the least edge
    plus unary cost of the other end (summing stops once above ``stop``;
    costs up to ``eps`` count as 0)."""
    K = net.K
    unary, shift, residue = state.unary, state.shift, state.residue[1]
    total = unary[i * K + x]
    for k in range(net.adj_ptr[i], net.adj_ptr[i + 1]):
        if total > stop:
            break
        e, si = net.adj_edge[k], net.adj_side[k]
        j = net.ends[e, 1 - si]
        r = residue[(2 * e + si) * K + x]
        ur = unary[j * K + r]
        if ur != np.inf and _edge_cost(net.pair, shift, K, e, si, x, r) + ur <= eps:
            continue
        m = np.inf
        for y in range(net.n_states[j]):
            uy = unary[j * K + y]
            if uy != np.inf:
                c = _edge_cost(net.pair, shift, K, e, si, x, y) + uy
                if c < m:
                    m, r = c, y
        residue[(2 * e + si) * K + x] = r
        total += m
    return total


@nb.njit(cache=True, no_cpython_wrapper=True)
def _existential(net, state, work, i, eps):
    """Existential arc consistency of ``i``: when no label has star cost
    0 (:func:`_star_cost`), full supports towards ``i`` on all its edges
    raise all its labels by their star costs.  Returns RAISED, 0, or WIPED."""
    K = net.K
    hint = state.full_support[i]
    if state.unary[i * K + hint] <= eps and _star_cost(net, state, i, hint, eps, eps) <= eps:
        return 0
    best, best_label = np.inf, -1
    for x in range(net.n_states[i]):
        if state.unary[i * K + x] == np.inf:
            continue
        c = _star_cost(net, state, i, x, best, eps)
        if c < best:
            best, best_label = c, x
            if best <= eps:
                state.full_support[i] = x
                return 0
    if best_label < 0:
        return WIPED
    state.full_support[i] = best_label
    for k in range(net.adj_ptr[i], net.adj_ptr[i + 1]):
        e, si = net.adj_edge[k], net.adj_side[k]
        flags = _full_support(net, state, work, e, si, eps)
        if flags == WIPED:
            state.edge_weight[e] += 1.0
            return WIPED
        if flags & REMOVED:
            work.shrunk[i] = 1
        if flags & EXTENDED:
            work.edge_dirty[e] = 1
            work.star_dirty[net.ends[e, 1 - si]] = 1
    _touch_star(net, work, i)
    return RAISED


@nb.njit(cache=True, no_cpython_wrapper=True)
def _touch_star(net, work, v):
    """The stars of ``v`` and its neighbours need an existential check (and
    a dead-end one)."""
    work.star_dirty[v] = work.dee_dirty[v] = 1
    for k in range(net.adj_ptr[v], net.adj_ptr[v + 1]):
        u = net.ends[net.adj_edge[k], 1 - net.adj_side[k]]
        work.star_dirty[u] = work.dee_dirty[u] = 1


@nb.njit(cache=True, no_cpython_wrapper=True)
def _note(net, flags, v, work):
    if flags & RAISED:
        work.raised[v] = 1
    if flags & REMOVED:
        work.shrunk[v] = 1
    if flags & (RAISED | REMOVED):
        _touch_star(net, work, v)


@nb.njit(cache=True, no_cpython_wrapper=True)
def _clear(work):
    work.edge_dirty[:] = 0
    work.shrunk[:] = 0
    work.raised[:] = 0
    work.star_dirty[:] = 0
    work.dee_dirty[:] = 0


@nb.njit(cache=True, no_cpython_wrapper=True)
def _eliminate_dead_ends(net, state, work):
    """Dead-end elimination against each flagged variable's existentially
    supported label ``b``: a label ``a`` whose unary cost exceeds ``b``'s by
    at least ``sum_j max_y (cost_ij(b, y) - cost_ij(a, y))`` over the
    current domains can be swapped for ``b`` in any labeling at no extra
    cost, so it is removed (``b`` never is).  Returns whether any was."""
    n = net.n_states.shape[0]
    K = net.K
    unary, shift = state.unary, state.shift
    removed = False
    for i in range(n):
        if not work.dee_dirty[i]:
            continue
        work.dee_dirty[i] = 0
        b = state.full_support[i]
        ub = unary[i * K + b]
        if ub == np.inf:
            continue
        for a in range(net.n_states[i]):
            slack = unary[i * K + a] - ub
            if a == b or slack == np.inf or slack < 0.0:
                continue
            for k in range(net.adj_ptr[i], net.adj_ptr[i + 1]):
                e, si = net.adj_edge[k], net.adj_side[k]
                j = net.ends[e, 1 - si]
                worst = -np.inf
                for y in range(net.n_states[j]):
                    if unary[j * K + y] == np.inf:
                        continue
                    cb = _edge_cost(net.pair, shift, K, e, si, b, y)
                    if cb == np.inf:
                        if _edge_cost(net.pair, shift, K, e, si, a, y) != np.inf:
                            worst = np.inf
                            break
                        continue
                    worst = max(worst, cb - _edge_cost(net.pair, shift, K, e, si, a, y))
                slack -= worst
                if slack < 0.0:
                    break
            if slack >= 0.0:
                unary[i * K + a] = np.inf
                work.shrunk[i] = 1
                removed = True
    return removed


@nb.njit(cache=True, no_cpython_wrapper=True)
def _propagate(net, state, work, cut, eps):
    """Enforce FDAC* from the flags in ``work`` (see the module docstring);
    returns False when a domain empties or the bound reaches ``cut`` (the
    flags are then cleared)."""
    n = net.n_states.shape[0]
    K = net.K
    unary = state.unary
    for _ in range(MAX_ROUNDS):
        state.counters[ROUNDS] += 1
        for i in range(n):  # a shrunk domain may leave labels of its neighbours unsupported
            if work.shrunk[i]:
                work.shrunk[i] = 0
                _touch_star(net, work, i)
                for k in range(net.adj_ptr[i], net.adj_ptr[i + 1]):
                    work.edge_dirty[net.adj_edge[k]] = 1
        for e in range(net.ends.shape[0]):
            if not work.edge_dirty[e]:
                continue
            work.edge_dirty[e] = 0
            for s in range(2):
                flags = _support(net, state, e, s, eps)
                if flags == WIPED:
                    state.edge_weight[e] += 1.0
                    _clear(work)
                    return False
                _note(net, flags, net.ends[e, s], work)
        for t in range(n - 1, -1, -1):  # later variables first: raised costs flow to earlier ones
            j = net.dac_order[t]
            if not work.raised[j]:
                continue
            work.raised[j] = 0
            for k in range(net.adj_ptr[j], net.adj_ptr[j + 1]):
                e, sj = net.adj_edge[k], net.adj_side[k]
                i = net.ends[e, 1 - sj]
                if net.dac_pos[i] > t:
                    continue
                flags = _full_support(net, state, work, e, 1 - sj, eps)
                if flags == WIPED:
                    state.edge_weight[e] += 1.0
                    _clear(work)
                    return False
                _note(net, flags, i, work)
                if flags & EXTENDED:
                    work.edge_dirty[e] = 1
                    work.star_dirty[i] = work.star_dirty[j] = 1
        for i in range(n):  # existential: a label of i fully supported in i's star
            if not work.star_dirty[i]:
                continue
            work.star_dirty[i] = 0
            if _existential(net, state, work, i, eps) == WIPED:
                _clear(work)
                return False
        lower = state.scalars[LOWER]
        for i in range(n):  # node consistency: unary minima into the bound
            m = np.inf
            for x in range(net.n_states[i]):
                m = min(m, unary[i * K + x])
            if m == np.inf:
                _clear(work)
                return False
            if m > 0.0:
                for x in range(net.n_states[i]):
                    unary[i * K + x] -= m
                lower += m
        state.scalars[LOWER] = lower
        if lower >= cut:
            _clear(work)
            return False
        changed = False
        for i in range(n):  # labels that cannot beat the incumbent
            for x in range(net.n_states[i]):
                u = unary[i * K + x]
                if u != np.inf and lower + u >= cut:
                    unary[i * K + x] = np.inf
                    work.shrunk[i] = 1
            changed = changed or work.shrunk[i] == 1
            changed = changed or work.raised[i] == 1 or work.star_dirty[i] == 1
        if not changed:
            for e in range(net.ends.shape[0]):
                if work.edge_dirty[e]:
                    changed = True
                    break
        if not changed and not _eliminate_dead_ends(net, state, work):
            return True
    work.raised[:] = 0
    return True


@nb.njit(cache=True, no_cpython_wrapper=True)
def _choose_variable(net, state, work):
    """The last conflict's variable while it is free, else the free variable
    (two or more labels) of least domain size over the summed weights of its
    edges to free variables; -1 when none is free."""
    n = net.n_states.shape[0]
    K = net.K
    unary = state.unary
    last = state.counters[LAST_CONFLICT]
    if last >= 0:
        size = 0
        for x in range(net.n_states[last]):
            if unary[last * K + x] != np.inf:
                size += 1
        if size > 1:
            return last
        state.counters[LAST_CONFLICT] = -1
    sizes = work.sizes
    for v in range(n):
        size = 0
        for x in range(net.n_states[v]):
            if unary[v * K + x] != np.inf:
                size += 1
        sizes[v] = size
    best, best_key = -1, np.inf
    for v in range(n):
        if sizes[v] < 2:
            continue
        wdeg = 1e-3
        for k in range(net.adj_ptr[v], net.adj_ptr[v + 1]):
            e = net.adj_edge[k]
            if sizes[net.ends[e, 1 - net.adj_side[k]]] > 1:
                wdeg += state.edge_weight[e]
        key = sizes[v] / wdeg
        if key < best_key:
            best, best_key = v, key
    return best


@nb.njit(cache=True, no_cpython_wrapper=True)
def _choose_label(net, state, v, eps):
    """The label of least unary cost (on ties the incumbent's, else the
    existentially supported one)."""
    K = net.K
    best, best_cost = -1, np.inf
    for x in range(net.n_states[v]):
        u = state.unary[v * K + x]
        if u < best_cost:
            best, best_cost = x, u
    full = state.full_support[v]
    if state.unary[v * K + full] <= best_cost + eps:
        return full
    inc = state.labels[v]
    if state.scalars[UPPER] < np.inf and state.unary[v * K + inc] <= best_cost + eps:
        return inc
    return best


@nb.njit(cache=True)
def labeling_cost(net, labels):
    """Cost of ``labels`` in the original network (``inf``: forbidden)."""
    n = net.n_states.shape[0]
    K = net.K
    total = 0.0
    for i in range(n):
        total += net.unary[i * K + labels[i]]
    for e in range(net.ends.shape[0]):
        total += net.pair[(e * K + labels[net.ends[e, 0]]) * K + labels[net.ends[e, 1]]]
    return total


@nb.njit(cache=True, no_cpython_wrapper=True)
def _offer_leaf(net, state, current):
    """Every domain is a single label: adopt that labeling when it is
    cheaper than the incumbent."""
    n = net.n_states.shape[0]
    K = net.K
    for i in range(n):
        for x in range(net.n_states[i]):
            if state.unary[i * K + x] != np.inf:
                current[i] = x
                break
    cost = labeling_cost(net, current)
    if cost < state.scalars[UPPER]:
        state.scalars[UPPER] = cost
        state.labels[:] = current


@nb.njit(cache=True)
def soft_arc_search(net, state, work, max_nodes, tol, offset, eps):
    """Depth-first branch and bound with FDAC* at every node, resumable.

    Binary branching: the variable chosen by ``dom / wdeg`` is fixed to its
    cheapest label, then (after that subtree) the label is removed.  The
    current path's nodes are kept in ``state``, so a call that stops at
    ``max_nodes`` resumes where it stopped.

    Parameters
    ----------
    net : CostNetwork
    state : SearchState
        In and out; a fresh state has ``counters[PHASE] == NOT_STARTED`` and
        ``scalars[UPPER]`` the cost of ``state.labels`` (``inf``: none).
    work : Workspace
    max_nodes : int
        Nodes (propagations) this call evaluates at most.
    tol : float
        A node is pruned when its bound is within
        ``tol * max(1, |offset - incumbent cost|)`` of the incumbent's cost
        (``offset - cost`` is the score).
    offset : float
    eps : float
        Moves of at most this cost are not made.

    Returns
    -------
    done : bool
        Whether the search ended: the incumbent is then optimal within the
        tolerance (or no labeling of finite cost exists).
    """
    n = net.n_states.shape[0]
    current = np.empty(n, dtype=np.int64)
    counters = state.counters
    budget = counters[NODES] + max_nodes
    while counters[PHASE] != DONE:
        if counters[NODES] >= budget:
            return False
        upper = state.scalars[UPPER]
        cut = upper - tol * max(1.0, abs(offset - upper)) if upper < np.inf else np.inf
        phase = counters[PHASE]
        if phase == NOT_STARTED:
            counters[NODES] += 1
            state.scalars[LOWER] = 0.0
            state.shift[:] = 0.0
            state.unary[:] = net.unary
            work.edge_dirty[:] = 1
            work.raised[:] = 1
            work.star_dirty[:] = 1
            work.dee_dirty[:] = 1
            counters[DEPTH] = 0
            ok = _propagate(net, state, work, cut, eps)
            counters[PHASE] = CONSISTENT if ok else DONE
        elif phase == CONSISTENT:
            v = _choose_variable(net, state, work)
            if v < 0:
                _offer_leaf(net, state, current)
                counters[PHASE] = BACKTRACK
                continue
            a = _choose_label(net, state, v, eps)
            d = counters[DEPTH]
            state.saved_unary[d] = state.unary
            state.saved_shift[d] = state.shift
            state.saved_lower[d] = state.scalars[LOWER]
            state.branch[d, 0], state.branch[d, 1] = v, a
            counters[DEPTH] = d + 1
            K = net.K
            for x in range(net.n_states[v]):
                if x != a:
                    state.unary[v * K + x] = np.inf
            work.shrunk[v] = 1
            counters[NODES] += 1
            ok = _propagate(net, state, work, cut, eps)
            counters[PHASE] = CONSISTENT if ok else BACKTRACK
            if not ok:
                counters[LAST_CONFLICT] = v
        else:  # BACKTRACK: the other branch of the deepest open level
            d = counters[DEPTH] - 1
            if d < 0:
                counters[PHASE] = DONE
                break
            counters[DEPTH] = d
            state.unary[:] = state.saved_unary[d]
            state.shift[:] = state.saved_shift[d]
            state.scalars[LOWER] = state.saved_lower[d]
            v, a = state.branch[d, 0], state.branch[d, 1]
            K = net.K
            state.unary[v * K + a] = np.inf
            work.shrunk[v] = 1
            counters[NODES] += 1
            ok = _propagate(net, state, work, cut, eps)
            counters[PHASE] = CONSISTENT if ok else BACKTRACK
    return True
