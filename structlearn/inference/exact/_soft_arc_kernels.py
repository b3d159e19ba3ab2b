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
  (``EDAC*`` together with the above; a network built with
  ``existential=False`` skips it and stays at FDAC*: on dense graphs its
  checks over every edge of a variable cost more than the nodes they save).
  A full support rests on labels of unary cost 0 and on the costs of the
  star's edges, so a star is checked again only where a label of cost 0 of
  the variable or of a neighbour rose or went, or where costs were extended
  into one of its edges;
* dead-end elimination: a label that the existentially supported label of
  its variable (at FDAC*, the label last recorded as such, initially the
  first) dominates in every neighbourhood is removed.

All moves keep every labeling's cost.  A fixpoint is sought for at most
:data:`MAX_ROUNDS` rounds; any point on the way is a valid bound.

Before the root's propagation, sweeps of max-product linear programming's
edge updates (:func:`_edge_block_update`) move costs around the cycles, which
arc consistency cannot: they take the root's bound near the local polytope's
(within 1-2 % on generated networks, where FDAC* alone stays 4-16 % below),
and every node inherits that reparameterization.  With integer costs the
fractional bounds they leave are rounded up in effect: a node is pruned once
its bound exceeds the incumbent's cost less 1.

Variables of at most two free neighbours are then *eliminated* (toulbar2's
variable elimination of small degree): a free variable ``i`` whose free
neighbours (two or more labels, not eliminated) are one variable ``j``
(over one edge) moves its least cost per label of ``j``,
``min_x unary_i(x) + cost_ij(x, y)``, onto ``j`` (the directional projection
of :func:`_full_support`), after its edges to fixed variables have been made
arc consistent; one whose free neighbours are two, ``j`` and ``q``, has its
bucket's least cost per pair of their labels,
``min_x unary_i(x) + cost_ij(x, y) + cost_iq(x, z)``, written into a new
*spare* edge between them (a table of the search's own, one of
``net.spare`` set aside for the current path, beside any edge between them
already; those the root adds stay in use on every path, the open nodes
rebuilt from its node included).
Either way what is left of ``i``'s bucket has least cost 0 for every
labeling of its free neighbours, and so has the part of the network that
hangs from ``i`` through variables eliminated before it: from then on ``i``,
its edges and its costs are frozen (no propagation reads or moves them), the
bound needs them no more, and the search never branches on ``i``.  (Eliminating a
variable of two free neighbours makes the bound exact over its bucket,
where arc consistency on its two edges is not; the search takes a fifth
fewer nodes on the generated weighted CSPs, as toulbar2's ``elimDegree``
does.)  A leaf is a node where every variable left is fixed or eliminated;
its eliminated variables take their labels in the reverse order of
elimination, each the least cost of its frozen bucket given its free
neighbours' labels (bucket elimination's second pass,
:func:`_complete_eliminated`).
"""

from typing import NamedTuple

import numba as nb
import numpy as np

from ..._borrowing import borrowing_kernel

MAX_ROUNDS = 16  # propagation rounds per node at most
INTEGRAL_MARGIN = 1e-6    # integer costs: prune above the incumbent's less 1 - this
MAX_ASCENT_SWEEPS = 32    # the root's sweeps of edge block updates at most
ASCENT_CHECK = 4          # ... the bound checked after every this many
ASCENT_GAIN = 2e-3        # ... on while they raise it by this share

# state.scalars
LOWER, UPPER = 0, 1
# state.counters
(DEPTH, NODES, PHASE, ROUNDS, LAST_CONFLICT, ELIMINATED, BACKTRACKS_LEFT, FLOOR, TRAIL_TOP,
 EPOCH, CLOCK, TRAIL_FULL, SPARES) = range(13)
# phases of the resumable search
NOT_STARTED, CONSISTENT, BACKTRACK, DONE = 0, 1, 2, 3
# flags returned by the support kernels (ZERO_LOST: a label of unary cost 0
# was raised or removed, which may leave a star without a full support)
RAISED, REMOVED, EXTENDED, ZERO_LOST = 1, 2, 4, 8
WIPED = -1
BOTH_ENDS = 3  # work.edge_dirty: both ends' arc consistency
# the crew's signals, read by every thread's search kernel (see soft_arc_search)
CREW_COST, CREW_HUNGRY, CREW_SHARED = 0, 1, 2


class CostNetwork(NamedTuple):
    """A pairwise cost function network in flat arrays (``K``: the largest
    domain; ``E``: the number of edges).

    Attributes
    ----------
    n_states : int64 (n,)
    unary : float64 (n * K,)
        Cost of label ``x`` of variable ``i`` at ``i * K + x`` (``>= 0``;
        ``inf``: forbidden, and for ``x >= n_states[i]``).
    pair : float64 (E * 2 * K * K,)
        Cost of label ``x`` at end ``s`` of edge ``e`` with label ``y`` at
        the other end, at ``((2 e + s) * K + x) * K + y`` (``>= 0``;
        ``inf``: forbidden): each edge's table twice, once per end's view,
        so that a scan over the other end's labels reads one row.
    ends : int64 (E, 2)
    adj_ptr : int64 (n + 1,)
        CSR of each variable's edges: rows ``adj_ptr[i]:adj_ptr[i + 1]`` of
        ``adjacency``.
    adjacency : int64 (2 E, 3)
        Per CSR entry: the edge, the variable's end in it (0 or 1), and the
        other end.
    dac_order : int64 (n,)
        The order of directional arc consistency; ``dac_pos`` its inverse.
    dac_pos : int64 (n,)
    K : int
        The padded domain size.
    existential : bool
        Whether propagation enforces existential arc consistency (EDAC*)
        or stops at FDAC*.
    spare : int
        Edges the search may add to a path by eliminating variables of two
        free neighbours (0: it eliminates none of them); see
        :class:`SearchState` for where they live.
    spare_slots : int
        Adjacency entries each variable keeps for them.
    """

    n_states: np.ndarray
    unary: np.ndarray
    pair: np.ndarray
    ends: np.ndarray
    adj_ptr: np.ndarray
    adjacency: np.ndarray
    dac_order: np.ndarray
    dac_pos: np.ndarray
    K: int
    existential: bool
    spare: int
    spare_slots: int


def edge_tables(net):
    """The edge costs of ``net`` (a ``CostNetwork``) as float64 (E, K, K), first
    index the label of each edge's first end (a view)."""
    K = net.K
    return net.pair.reshape(net.ends.shape[0], 2, K, K)[:, 0]


class SearchState(NamedTuple):
    """Everything the resumable search keeps between calls (caller-allocated).

    ``S`` is ``net.spare``: edges ``E:E + S`` are the *spare* ones, which the
    elimination of a variable of two free neighbours adds to the current
    path, the first ``counters[SPARES]`` of them in use.

    Attributes
    ----------
    unary : float64 (n * K,)
        The current node's unary costs (``inf``: removed).
    shift : float64 ((E + S) * 2 * K,)
        The current node's shifts, ``shift[(2 e + s) * K + x]``.
    saved_unary : float64 (n + 1, n * K) or (0, 0)
    saved_shift : float64 (n + 1, (E + S) * 2 * K) or (0, 0)
        The node at each level of the current path, before its branch, where
        the path's nodes are saved whole (small networks: a copy costs less
        than logging what changes; only the shifts of the edges in use are
        copied); else empty, and the trail keeps them.
    stamps : int64 (n + 2 (E + S),)
        Per *block* (``b < n``: the unary costs of variable ``b``; ``n + 2 e
        + s``: the shifts of end ``s`` of edge ``e``; ``K`` values each), the
        epoch at which it was last logged into the trail.
    trail_blocks : int64 (capacity, 2)
    trail_values : float64 (capacity, K)
        The trail: the blocks of the current path's nodes as they were before
        their first change below each level, so that a backtrack restores a
        level's node by undoing the entries logged since its branch (block
        and its stamp before, values).  A level logs each block once;
        ``counters[TRAIL_TOP]`` entries are used.  Empty where the nodes are
        saved whole: ``counters[EPOCH]`` then stays 0, and nothing is logged.
    marks : int64 (n + 1, 2)
        Per level of the current path: the trail's top and the epoch at its
        branch.
    saved_lower : float64 (n + 1,)
        The bound of the node at each level of the current path.
    branch : int64 (n + 1, 4)
        The variable and label fixed at each depth (the other branch removes
        the label), and how many variables were eliminated and spare edges
        in use before it.
    labels : int64 (n,)
        The incumbent labeling.
    full_support : int64 (n,)
        Each variable's last label found existentially supported (a hint).
    support_depth : int64 (n,)
        The depth at which each of those was last set: a backtrack to a
        shallower level checks the variable's star again (the costs it
        restores may not support the label).
    residue : int64 (2, (E + S) * 2 * K)
        Per edge end and label, the other end's label last found at edge
        cost 0 (row 0, arc consistency) and at edge plus unary cost 0 (row 1,
        full supports): checked first, so a still valid support costs O(1)
        instead of a scan of the other domain.
    edge_weight : float64 (E + S,)
        Domain wipe-outs per edge, plus 1 (the ``dom / wdeg`` heuristic).
    eliminated : uint8 (n,)
        1 for the variables eliminated on the current path.
    elim_order : int64 (n,)
        Those variables in the order of their elimination (the first
        ``counters[ELIMINATED]`` entries).
    elim_parent : int64 (n,)
        Each eliminated variable's free neighbour when it was eliminated
        (-1: none; the first of two).
    scalars : float64 (2,)
        ``[LOWER, UPPER]``: the current node's bound, the incumbent's cost
        (``inf``: none).
    counters : int64 (13,)
        ``[DEPTH, NODES, PHASE, ROUNDS, LAST_CONFLICT, ELIMINATED,
        BACKTRACKS_LEFT, FLOOR, TRAIL_TOP, EPOCH, CLOCK, TRAIL_FULL,
        SPARES]``:
        ROUNDS counts the propagation rounds run;
        LAST_CONFLICT is the variable whose fixing last failed (-1: none),
        branched on first while it is free; ELIMINATED the variables
        eliminated on the current path; BACKTRACKS_LEFT the backtracks the
        search may still make before it stops (-1: no limit); FLOOR the
        first level of the path whose right branch is still the search's
        (those above were handed to the open nodes: the search ends its
        dive instead of backtracking to them); TRAIL_TOP the trail's
        entries used; EPOCH the deepest open level's epoch (0 at depth 0,
        where nothing is logged); CLOCK the last epoch given to a level;
        TRAIL_FULL 1 when the search stopped for lack of room on the trail
        for one more node (the caller grows it); SPARES the spare edges in
        use.
    pair : float64 ((E + S) * 2 * K * K,)
        The edge costs as in ``net.pair``, then the spare edges' (written
        when an elimination adds one); ``net.pair`` itself where ``S`` is 0.
    ends : int64 (E + S, 2)
        ``net.ends``, then the spare edges' ends.
    adj_ptr : int64 (n + 1,)
    adj_end : int64 (n,)
    adjacency : int64 (2 E + n * net.spare_slots, 3)
        Each variable's edges as in ``net.adjacency``, in rows
        ``adj_ptr[i]:adj_end[i]``, with ``net.spare_slots`` rows after its
        own for the spare edges it joins.
    """

    unary: np.ndarray
    shift: np.ndarray
    saved_unary: np.ndarray
    saved_shift: np.ndarray
    stamps: np.ndarray
    trail_blocks: np.ndarray
    trail_values: np.ndarray
    marks: np.ndarray
    saved_lower: np.ndarray
    branch: np.ndarray
    labels: np.ndarray
    full_support: np.ndarray
    support_depth: np.ndarray
    residue: np.ndarray
    edge_weight: np.ndarray
    eliminated: np.ndarray
    elim_order: np.ndarray
    elim_parent: np.ndarray
    scalars: np.ndarray
    counters: np.ndarray
    pair: np.ndarray
    ends: np.ndarray
    adj_ptr: np.ndarray
    adj_end: np.ndarray
    adjacency: np.ndarray


class Workspace(NamedTuple):
    """Scratch arrays: the flags of what the propagation has left to do (each
    array padded to a multiple of 8 entries with zeros, scanned eight at a
    time),
    ``edge_dirty`` uint8 (E + S,) (bit ``s``: arc consistency of end ``s``; a
    shrunk domain can only leave the other end's labels unsupported), ``shrunk``,
    ``raised``, ``star_dirty``, ``dee_dirty``, ``touched`` and ``zero_lost``
    uint8 (n,) (a domain lost labels; unary costs rose; a star changed:
    existential arc consistency, then dead-end elimination; unary costs rose
    this round: the dead-end tests around them change; a label of unary cost
    0 rose or went this round: the stars around it change too),
    ``nc_dirty`` uint8 (n,) (unary costs rose or labels went since the last
    node consistency: only these variables can have a least cost above 0),
    ``minima`` float64 (2, K) and ``gainers`` int64 (K,) (a full support's
    projections per label of its end, then extensions per label of the other;
    an edge block update's row and column minima), ``domains`` int64
    (n, K + 1) (per variable, how many labels are listed, then those labels
    in increasing order: every label of its domain, listed when the node's
    evaluation began or its domain last shrank, so the scans skip the labels
    removed before; a label removed since is still listed and is skipped by
    its infinite cost), ``sizes`` int64 (n,)
    (domain sizes), ``elim_pos`` int64 (n,) (a leaf's: each eliminated
    variable's place in the order of elimination)."""

    edge_dirty: np.ndarray
    shrunk: np.ndarray
    raised: np.ndarray
    star_dirty: np.ndarray
    dee_dirty: np.ndarray
    touched: np.ndarray
    zero_lost: np.ndarray
    nc_dirty: np.ndarray
    minima: np.ndarray
    gainers: np.ndarray
    domains: np.ndarray
    sizes: np.ndarray
    elim_pos: np.ndarray


class Trail(NamedTuple):
    """The trail of a :class:`SearchState` as the kernels that change
    costs take it: ``stamps``, ``blocks`` (``trail_blocks``), ``values``
    (``trail_values``), ``counters`` and ``n`` (the variables: the first
    shift block's id)."""

    stamps: np.ndarray
    blocks: np.ndarray
    values: np.ndarray
    counters: np.ndarray
    n: int


@nb.njit(cache=True, no_cpython_wrapper=True, inline="always")
def _trail(state, n):
    return Trail(state.stamps, state.trail_blocks, state.trail_values, state.counters, n)


@nb.njit(cache=True, no_cpython_wrapper=True, inline="always")
def _log(trail, costs, shifts, index, K):
    """Log the block of ``K`` costs at ``costs[index * K]`` (of the unary
    costs, block ``index``, or with ``shifts`` of the shifts, block ``n +
    index``) before a change, unless the deepest open level has logged it
    already (or there is no ``trail``: None)."""
    if trail is None:
        return
    block = trail.n + index if shifts else index
    first = index * K
    counters = trail.counters
    epoch = counters[EPOCH]
    if trail.stamps[block] >= epoch:
        return
    t = counters[TRAIL_TOP]
    trail.blocks[t, 0] = block
    trail.blocks[t, 1] = trail.stamps[block]
    for k in range(K):
        trail.values[t, k] = costs[first + k]
    counters[TRAIL_TOP] = t + 1
    trail.stamps[block] = epoch


@nb.njit(cache=True, no_cpython_wrapper=True, inline="always")
def _log_unary(trail, unary, i, K):
    _log(trail, unary, False, i, K)


@nb.njit(cache=True, no_cpython_wrapper=True, inline="always")
def _log_shift(trail, shift, e, s, K):
    _log(trail, shift, True, 2 * e + s, K)


@nb.njit(cache=True, no_cpython_wrapper=True, inline="always")
def _log_edge(trail, unary, shift, ends, e, s, K, both):
    """Log what :func:`_support` of end ``s`` of edge ``e`` may change (its
    variable's costs and its shifts), and with ``both`` what
    :func:`_full_support` may (the other end's too)."""
    _log_unary(trail, unary, ends[e, s], K)
    _log_shift(trail, shift, e, s, K)
    if both:
        _log_unary(trail, unary, ends[e, 1 - s], K)
        _log_shift(trail, shift, e, 1 - s, K)


@borrowing_kernel
def _undo(state, K, to):
    """Restore the blocks logged after trail entry ``to``, the latest first."""
    n = state.unary.shape[0] // K
    blocks, values, counters = state.trail_blocks, state.trail_values, state.counters
    for t in range(counters[TRAIL_TOP] - 1, to - 1, -1):
        b = blocks[t, 0]
        costs, first = (state.unary, b * K) if b < n else (state.shift, (b - n) * K)
        for k in range(K):
            costs[first + k] = values[t, k]
        state.stamps[b] = blocks[t, 1]
    counters[TRAIL_TOP] = to


@borrowing_kernel
def _save_level(net, state, d, on_trail):
    """Keep the current node as level ``d``'s, before its branch: a copy, or
    a mark on the trail and a new epoch (its blocks logged as they change;
    ``on_trail``: see :func:`soft_arc_search`)."""
    counters = state.counters
    if on_trail is None:
        _copy(state.unary, state.saved_unary[d])
        _copy_head(state.shift, state.saved_shift[d], _shifts_in_use(net, state))
        return
    counters[CLOCK] += 1
    state.marks[d, 0], state.marks[d, 1] = counters[TRAIL_TOP], counters[CLOCK]
    counters[EPOCH] = counters[CLOCK]


@nb.njit(cache=True, no_cpython_wrapper=True, inline="always")
def _shifts_in_use(net, state):
    """How many of ``state.shift``'s values the edges in use hold (the
    network's and the spare ones in use)."""
    return (net.ends.shape[0] + state.counters[SPARES]) * 2 * net.K


@borrowing_kernel
def _restore_level(net, state, d, on_trail):
    """Make level ``d``'s node the current one again, for its right branch,
    which does not come back to the level: from then on the blocks are
    logged for the level above (``on_trail``: see :func:`soft_arc_search`;
    the spare edges added below it already taken out of use)."""
    K = net.K
    if on_trail is None:
        _copy(state.saved_unary[d], state.unary)
        _copy_head(state.saved_shift[d], state.shift, _shifts_in_use(net, state))
        return
    _undo(state, K, state.marks[d, 0])
    state.counters[EPOCH] = state.marks[d - 1, 1] if d > 0 else 0


@nb.njit(cache=True, nogil=True)
def path_masks(state, K, first, last, out, on_trail):
    """The domains of the nodes at levels ``first:last`` of the current
    path: ``out[d - first, i * K + x]`` is 1 where label ``x`` of ``i`` was
    left there (uint8 (last - first, n * K)); from the saved nodes, or from
    the current node's with the trail's entries undone on the unary blocks
    only (``on_trail``: see :func:`soft_arc_search`)."""
    n = state.unary.shape[0] // K
    if on_trail is None:
        for d in range(first, last):
            for k in range(n * K):
                out[d - first, k] = state.saved_unary[d, k] != np.inf
        return
    current = np.empty(n * K, dtype=np.uint8)
    for k in range(n * K):
        current[k] = state.unary[k] != np.inf
    blocks, values, marks = state.trail_blocks, state.trail_values, state.marks
    t = state.counters[TRAIL_TOP]
    for d in range(state.counters[DEPTH] - 1, first - 1, -1):
        for q in range(t - 1, marks[d, 0] - 1, -1):
            b = blocks[q, 0]
            if b < n:
                for k in range(K):
                    current[b * K + k] = values[q, k] != np.inf
        t = marks[d, 0]
        if d < last:
            for k in range(n * K):
                out[d - first, k] = current[k]


@nb.njit(cache=True, no_cpython_wrapper=True, inline="always")
def _u(k):
    """Index ``k`` (``>= 0``) as unsigned: numba then leaves out its test for
    a negative index (a shift, a mask and an add per access, about a tenth
    of the search's time on the generated weighted CSPs)."""
    return np.uint64(k)


@nb.njit(cache=True, no_cpython_wrapper=True, inline="always")
def _edge_cost(pair, shift, K, e, s, x, y):
    """Current cost of edge ``e`` with label ``x`` at its end ``s`` and
    ``y`` at the other (arrays only: a call passes no reference-counted
    tuple in the innermost loops)."""
    own, other = (2 * e + s) * K, (2 * e + 1 - s) * K
    c = pair[_u((own + x) * K + y)]
    if s == 0:  # the first end's shift first, whichever end looks
        return c - shift[_u(own + x)] - shift[_u(other + y)]
    return c - shift[_u(other + y)] - shift[_u(own + x)]


# The helpers called per edge, label or variable take arrays, not the named
# tuples, and the kernels below borrow their arrays (see
# :mod:`structlearn._borrowing`): counting references of the arrays a call
# reads (atomic adds) cost more than the work itself in the propagation loops.
# The supports are compiled into their callers: 2.5 % less time on the
# generated weighted CSPs, 3.5 s more at a process's first compilation.

@borrowing_kernel(inline=True)
def _support(pair, shift, unary, residue, domains, ends, K, e, s, eps):
    """Arc consistency of end ``s`` of edge ``e``: each label's minimum edge
    cost over the other end's domain moves onto the label's unary cost
    (labels with none finite are removed); ``residue`` is row 0 of
    ``SearchState.residue``, ``domains`` the workspace's.  Returns RAISED |
    REMOVED | ZERO_LOST flags, or WIPED when the domain empties.  The caller logs the
    blocks it may change (:func:`_log_edge`)."""
    i, j = ends[_u(e), s], ends[_u(e), 1 - s]
    flags, alive = 0, 0
    for a in range(1, domains[_u(i), 0] + 1):
        x = domains[_u(i), a]
        if unary[_u(i * K + x)] == np.inf:
            continue
        r = residue[_u((2 * e + s) * K + x)]
        if unary[_u(j * K + r)] != np.inf and _edge_cost(pair, shift, K, e, s, x, r) <= eps:
            alive += 1
            continue
        m = np.inf
        for b in range(1, domains[_u(j), 0] + 1):
            y = domains[_u(j), b]
            if unary[_u(j * K + y)] != np.inf:
                c = _edge_cost(pair, shift, K, e, s, x, y)
                if c < m:
                    m, r = c, y
                    if m <= eps:  # a support: nothing to project
                        break
        residue[_u((2 * e + s) * K + x)] = r
        if m <= eps:
            alive += 1
            continue
        if unary[_u(i * K + x)] <= eps:
            flags |= ZERO_LOST
        if m == np.inf:
            unary[_u(i * K + x)] = np.inf
            flags |= REMOVED
            continue
        alive += 1
        shift[_u((2 * e + s) * K + x)] += m
        unary[_u(i * K + x)] += m
        flags |= RAISED
    return WIPED if alive == 0 else flags


@borrowing_kernel(inline=True)
def _full_support(pair, shift, unary, residue, domains, ends, K, e, s, eps, minima, gainers):
    """Directional arc consistency of end ``s`` of edge ``e`` towards the
    other end: the other end's unary costs are extended into the edge as far
    as the projection needs, then each label's minimum of edge plus unary
    cost moves onto it (``residue``: row 1 of ``SearchState.residue``;
    ``domains``, ``minima``, ``gainers``: the workspace's).  Returns RAISED |
    REMOVED | EXTENDED | ZERO_LOST flags, or WIPED.  The caller logs the blocks it may
    change (:func:`_log_edge`)."""
    i, j = ends[_u(e), s], ends[_u(e), 1 - s]
    flags, alive, n_gain = 0, 0, 0
    for a in range(1, domains[_u(i), 0] + 1):
        x = domains[_u(i), a]
        if unary[_u(i * K + x)] == np.inf:
            continue
        # (an inf unary or edge cost makes the sum inf: no test for removed labels)
        r = residue[_u((2 * e + s) * K + x)]
        if _edge_cost(pair, shift, K, e, s, x, r) + unary[_u(j * K + r)] <= eps:
            minima[0, _u(x)] = 0.0
            alive += 1
            continue
        m = np.inf
        for b in range(1, domains[_u(j), 0] + 1):
            y = domains[_u(j), b]
            c = _edge_cost(pair, shift, K, e, s, x, y) + unary[_u(j * K + y)]
            if c < m:
                m, r = c, y
                if m <= eps:  # a full support: the label gains nothing
                    break
        residue[_u((2 * e + s) * K + x)] = r
        if m > eps and unary[_u(i * K + x)] <= eps:
            flags |= ZERO_LOST
        if m == np.inf:
            unary[_u(i * K + x)] = np.inf
            flags |= REMOVED
            continue
        alive += 1
        minima[0, _u(x)] = m
        if m > eps:  # only these labels gain: only they need extended costs
            gainers[n_gain] = x
            n_gain += 1
    if alive == 0:
        return WIPED
    if n_gain == 0:
        return flags
    k_j = domains[_u(j), 0]
    for b in range(1, k_j + 1):
        minima[1, _u(domains[_u(j), b])] = 0.0
    for g in range(n_gain):  # row by row: each reads the edge's row of one gainer
        x = gainers[g]
        for b in range(1, k_j + 1):
            y = domains[_u(j), b]
            minima[1, _u(y)] = max(minima[1, _u(y)],
                               minima[0, _u(x)] - _edge_cost(pair, shift, K, e, s, x, y))
    for b in range(1, k_j + 1):
        y = domains[_u(j), b]
        uy = unary[_u(j * K + y)]
        if uy == np.inf:
            continue
        ext = min(minima[1, _u(y)], uy)
        if ext > eps:
            unary[_u(j * K + y)] = uy - ext
            shift[_u((2 * e + 1 - s) * K + y)] -= ext
            flags |= EXTENDED
    for g in range(n_gain):
        x = gainers[g]
        shift[_u((2 * e + s) * K + x)] += minima[0, _u(x)]
        unary[_u(i * K + x)] += minima[0, _u(x)]
    return flags | RAISED


@nb.njit(cache=True, no_cpython_wrapper=True, inline="always")
def _least_unary(unary, domains, K, i):
    """The least unary cost of variable ``i`` over its listed labels
    (``inf``: an empty domain)."""
    m = np.inf
    for a in range(1, domains[_u(i), 0] + 1):
        m = min(m, unary[i * K + domains[_u(i), a]])
    return m


@nb.njit(cache=True, no_cpython_wrapper=True, inline="always")
def _block_min(costs, first, K):
    """The least of ``costs[first:first + K]``."""
    m = np.inf
    for k in range(first, first + K):
        m = min(m, costs[k])
    return m


@nb.njit(cache=True, no_cpython_wrapper=True, inline="always")
def _any_at_least(unary, first, K, lower, cut):
    """Whether a finite cost of ``unary[first:first + K]`` reaches ``cut``
    with ``lower`` added."""
    hit = False
    for k in range(first, first + K):
        u = unary[k]
        hit |= (u != np.inf) & (lower + u >= cut)
    return hit


@nb.njit(cache=True, no_cpython_wrapper=True, inline="always")
def _take_least_unary(unary, K, i, trail):
    """Node consistency of ``i``: its least unary cost, when positive, is
    subtracted from its costs (logged on ``trail`` first) and returned, for
    the bound (0 when not positive; ``inf``: an empty domain, the costs left
    as they are).  Over its whole block, in passes without branches (removed
    and padding labels cost inf, and stay so)."""
    m = _block_min(unary, i * K, K)
    if m == np.inf:
        return m
    if m <= 0.0:
        return 0.0
    _log_unary(trail, unary, i, K)
    for k in range(i * K, i * K + K):
        unary[k] -= m
    return m


@nb.njit(cache=True, no_cpython_wrapper=True, inline="always")
def _prune_above(unary, K, i, lower, cut, trail):
    """Remove the labels of ``i`` whose unary cost, with ``lower`` added,
    reaches ``cut`` (logged on ``trail`` first); returns whether any was."""
    if not _any_at_least(unary, i * K, K, lower, cut):
        return False
    _log_unary(trail, unary, i, K)
    for k in range(i * K, i * K + K):
        if lower + unary[k] >= cut:  # (inf too: it stays so)
            unary[k] = np.inf
    return True


@borrowing_kernel
def _list_domain(unary, domains, K, i):
    """List the labels of ``i`` left in its domain into row ``i`` of the
    workspace's ``domains`` (without branches: each label is written at the
    next place and kept there when allowed; a node lists every variable)."""
    count = 0
    for x in range(K):
        domains[i, count + 1] = x
        count += unary[_u(i * K + x)] != np.inf
    domains[_u(i), 0] = count


@borrowing_kernel
def _touch_star(star_dirty, dee_dirty, adj_ptr, adj_end, adjacency, v):
    """The stars of ``v`` and its neighbours need an existential check (and
    a dead-end one)."""
    star_dirty[v] = dee_dirty[v] = 1
    for k in range(adj_ptr[v], adj_end[v]):
        u = adjacency[_u(k), 2]
        star_dirty[u] = dee_dirty[u] = 1


@borrowing_kernel
def _touch_dee(dee_dirty, adj_ptr, adj_end, adjacency, v):
    """``v`` and its neighbours need a dead-end check (their stars keep their
    full supports: no label of ``v`` of unary cost 0 was raised or removed)."""
    dee_dirty[v] = 1
    for k in range(adj_ptr[v], adj_end[v]):
        dee_dirty[adjacency[_u(k), 2]] = 1


@borrowing_kernel(inline=True)
def _fully_supported(pair, shift, unary, residue, domains, adjacency, eliminated, K, first,
                     last, x, eps):
    """Whether label ``x`` of the variable whose edges are rows
    ``first:last`` of ``adjacency`` has, on every edge to a variable not
    eliminated, a label of the other end at edge plus unary cost 0 (its star
    cost is then its unary cost); stops at the first edge without one.
    ``residue``: row 1 of ``SearchState.residue``, updated with the supports
    found; ``domains``: the workspace's."""
    for k in range(first, last):
        e, si, j = adjacency[_u(k), 0], adjacency[_u(k), 1], adjacency[_u(k), 2]
        if eliminated[_u(j)]:
            continue
        r = residue[_u((2 * e + si) * K + x)]
        if _edge_cost(pair, shift, K, e, si, x, r) + unary[_u(j * K + r)] <= eps:
            continue
        found = False
        for b in range(1, domains[_u(j), 0] + 1):
            y = domains[_u(j), b]
            if _edge_cost(pair, shift, K, e, si, x, y) + unary[_u(j * K + y)] <= eps:
                residue[_u((2 * e + si) * K + x)] = y
                found = True
                break
        if not found:
            return False
    return True


@nb.njit(cache=True, no_cpython_wrapper=True, inline="always")
def _rotated(first, step, k):
    """Label ``(first + step) % k`` for ``first, step < k``, without a division."""
    x = first + step
    return x - k if x >= k else x


@borrowing_kernel
def _existential_pass(net, state, work, eps, trail):
    """Existential arc consistency of each flagged variable ``i``: a label's
    star cost is its unary cost plus, per edge, the least edge plus unary
    cost of the other end; when no label has star cost 0, full supports
    towards ``i`` on all its edges raise all its labels by their star costs
    (``trail``: see :func:`_evaluate`).  Returns False when a domain empties."""
    n_states, pair, ends = net.n_states, state.pair, state.ends
    adj_ptr, adj_end, adjacency = state.adj_ptr, state.adj_end, state.adjacency
    K = net.K
    unary, shift, residue = state.unary, state.shift, state.residue[1]
    full_support, edge_weight, eliminated = state.full_support, state.edge_weight, state.eliminated
    star_dirty, dee_dirty = work.star_dirty, work.dee_dirty
    minima, gainers, domains = work.minima, work.gainers, work.domains
    shrunk, edge_dirty = work.shrunk, work.edge_dirty
    n = n_states.shape[0]
    star_words = star_dirty.view(np.uint64)  # eight flags a word: most are clear
    for w in range(star_words.shape[0]):
        if star_words[w] == 0:
            continue
        for i in range(8 * w, min(8 * w + 8, n)):
            if not star_dirty[i]:
                continue
            star_dirty[i] = 0
            if eliminated[i]:
                continue
            # a label of star cost 0 has unary cost 0: only those are tried, the
            # last full support first (it usually still is one)
            k_i, hint = n_states[i], full_support[i]
            supported = False
            for step in range(k_i):
                x = _rotated(hint, step, k_i)
                if unary[_u(i * K + x)] <= eps and _fully_supported(pair, shift, unary, residue,
                                                                domains, adjacency, eliminated, K,
                                                                adj_ptr[i], adj_end[i], x, eps):
                    full_support[i] = x
                    state.support_depth[i] = state.counters[DEPTH]
                    supported = True
                    break
            if supported:
                continue
            for k in range(adj_ptr[i], adj_end[i]):
                e, si = adjacency[_u(k), 0], adjacency[_u(k), 1]
                if eliminated[adjacency[_u(k), 2]]:
                    continue
                _log_edge(trail, unary, shift, ends, e, si, K, True)
                flags = _full_support(pair, shift, unary, residue, domains, ends, K, e, si, eps,
                                      minima, gainers)
                if flags == WIPED:
                    edge_weight[e] += 1.0
                    return False
                if flags & REMOVED:
                    shrunk[i] = 1
                if flags & EXTENDED:
                    edge_dirty[e] = BOTH_ENDS
                    star_dirty[adjacency[_u(k), 2]] = 1
            # the unary costs are now the star costs: the least is the support
            # (a label is left: an emptied domain returned WIPED above)
            least, least_label = np.inf, hint
            for step in range(k_i):
                x = _rotated(hint, step, k_i)
                if unary[_u(i * K + x)] < least:
                    least, least_label = unary[_u(i * K + x)], x
            full_support[i] = least_label
            state.support_depth[i] = state.counters[DEPTH]
            work.nc_dirty[i] = 1
            _touch_star(star_dirty, dee_dirty, adj_ptr, adj_end, adjacency, i)
    return True


@borrowing_kernel
def _clear(work):
    work.edge_dirty[:] = 0
    work.shrunk[:] = 0
    work.raised[:] = 0
    work.star_dirty[:] = 0
    work.dee_dirty[:] = 0
    work.touched[:] = 0
    work.zero_lost[:] = 0
    work.nc_dirty[:] = 0


@borrowing_kernel
def _eliminate_dead_ends(net, state, work, trail):
    """Dead-end elimination against each flagged variable's existentially
    supported label ``b``: a label ``a`` whose unary cost exceeds ``b``'s by
    at least ``sum_j max_y (cost_ij(b, y) - cost_ij(a, y))`` over the
    current domains can be swapped for ``b`` in any labeling at no extra
    cost, so it is removed (``b`` never is; ``trail``: see :func:`_evaluate`).
    Returns whether any was."""
    n_states, pair = net.n_states, state.pair
    adj_ptr, adj_end, adjacency = state.adj_ptr, state.adj_end, state.adjacency
    K = net.K
    unary, shift, eliminated = state.unary, state.shift, state.eliminated
    full_support, dee_dirty, shrunk = state.full_support, work.dee_dirty, work.shrunk
    domains = work.domains
    removed = False
    for i in range(n_states.shape[0]):
        if not dee_dirty[i]:
            continue
        dee_dirty[i] = 0
        if eliminated[i]:
            continue
        b = full_support[i]
        ub = unary[_u(i * K + b)]
        if ub == np.inf:
            continue
        for t in range(1, domains[_u(i), 0] + 1):
            a = domains[i, t]
            slack = unary[_u(i * K + a)] - ub
            if a == b or slack == np.inf or slack < 0.0:
                continue
            for k in range(adj_ptr[i], adj_end[i]):
                e, si, j = adjacency[_u(k), 0], adjacency[_u(k), 1], adjacency[_u(k), 2]
                if eliminated[_u(j)]:  # its part has least cost 0 under either label
                    continue
                worst = -np.inf
                for u in range(1, domains[_u(j), 0] + 1):
                    y = domains[j, u]
                    if unary[_u(j * K + y)] == np.inf:
                        continue
                    cb = _edge_cost(pair, shift, K, e, si, b, y)
                    if cb == np.inf:
                        if _edge_cost(pair, shift, K, e, si, a, y) != np.inf:
                            worst = np.inf
                            break
                        continue
                    worst = max(worst, cb - _edge_cost(pair, shift, K, e, si, a, y))
                    if worst > slack:  # the label stays whatever the rest of the edge
                        break
                slack -= worst
                if slack < 0.0:
                    break
            if slack >= 0.0:
                work.zero_lost[i] = 1  # (conservative: a's cost may be 0)
                _log_unary(trail, unary, i, K)
                unary[_u(i * K + a)] = np.inf
                shrunk[i] = 1
                removed = True
    return removed


@nb.njit(cache=True, no_cpython_wrapper=True, inline="always")
def _any_flag(flags, first, last):
    """Whether any of ``flags[first:last]`` is set."""
    for k in range(first, last):
        if flags[k]:
            return True
    return False


@borrowing_kernel
def _propagate(net, state, work, cut, eps, trail):
    """Enforce EDAC* from the flags in ``work`` (see the module docstring;
    ``trail``: see :func:`_evaluate`); returns False when a domain empties
    or the bound reaches ``cut`` (the flags are then cleared)."""
    n_states, pair, ends = net.n_states, state.pair, state.ends
    adj_ptr, adj_end, adjacency = state.adj_ptr, state.adj_end, state.adjacency
    n = n_states.shape[0]
    K = net.K
    unary, shift, edge_weight = state.unary, state.shift, state.edge_weight
    eliminated = state.eliminated
    arc_residue, full_residue = state.residue[0], state.residue[1]
    edge_dirty, shrunk, raised = work.edge_dirty, work.shrunk, work.raised
    star_dirty, dee_dirty, touched = work.star_dirty, work.dee_dirty, work.touched
    minima, gainers, dac_order, dac_pos = work.minima, work.gainers, net.dac_order, net.dac_pos
    domains, nc_dirty, zero_lost = work.domains, work.nc_dirty, work.zero_lost
    edge_words = edge_dirty.view(np.uint64)
    # (the variables' flags eight at a time too: most words are clear)
    n_words = (n + 7) // 8
    shrunk_words, touched_words = shrunk.view(np.uint64), touched.view(np.uint64)
    nc_words, raised_words = nc_dirty.view(np.uint64), raised.view(np.uint64)
    star_words, lost_words = star_dirty.view(np.uint64), zero_lost.view(np.uint64)
    counters, scalars = state.counters, state.scalars
    swept = -np.inf  # the bound at the last sweep of every variable's labels
    for _ in range(MAX_ROUNDS):
        counters[ROUNDS] += 1
        for w in range(n_words):  # a shrunk domain may leave labels of its neighbours unsupported
            if shrunk_words[w] == 0:
                continue
            for i in range(8 * w, min(8 * w + 8, n)):
                if shrunk[i]:
                    shrunk[i] = 0
                    nc_dirty[i] = 1
                    _list_domain(unary, domains, K, i)
                    _touch_dee(dee_dirty, adj_ptr, adj_end, adjacency, i)
                    for k in range(adj_ptr[i], adj_end[i]):
                        edge_dirty[adjacency[_u(k), 0]] |= 1 << (1 - adjacency[_u(k), 1])
        n_edges = net.ends.shape[0] + counters[SPARES]
        for w in range((n_edges + 7) // 8):
            if edge_words[w] == 0:  # eight flags a word: most are clear
                continue
            for e in range(8 * w, min(8 * w + 8, n_edges)):
                ends_dirty = edge_dirty[e]
                if not ends_dirty:
                    continue
                edge_dirty[e] = 0
                if eliminated[ends[e, 0]] or eliminated[ends[e, 1]]:  # frozen
                    continue
                for s in range(2):
                    if not (ends_dirty >> s) & 1:
                        continue
                    _log_edge(trail, unary, shift, ends, e, s, K, False)
                    flags = _support(pair, shift, unary, arc_residue, domains, ends, K, e, s, eps)
                    if flags == WIPED:
                        edge_weight[e] += 1.0
                        _clear(work)
                        return False
                    v = ends[e, s]
                    raised[v] |= flags & RAISED
                    shrunk[v] |= (flags & REMOVED) >> 1
                    zero_lost[v] |= (flags & ZERO_LOST) >> 3
                    nc_dirty[v] |= flags != 0
        for t in range(n - 1, -1, -1):  # later variables first: raised costs flow to earlier ones
            j = dac_order[t]
            if not raised[j]:
                continue
            raised[j] = 0
            if eliminated[_u(j)]:  # frozen: its costs are in its parents' already
                continue
            touched[j] = 1
            for k in range(adj_ptr[j], adj_end[j]):
                e, sj, i = adjacency[_u(k), 0], adjacency[_u(k), 1], adjacency[_u(k), 2]
                if dac_pos[i] > t or eliminated[i]:
                    continue
                _log_edge(trail, unary, shift, ends, e, 1 - sj, K, True)
                flags = _full_support(pair, shift, unary, full_residue, domains, ends, K, e,
                                      1 - sj, eps, minima, gainers)
                if flags == WIPED:
                    edge_weight[e] += 1.0
                    _clear(work)
                    return False
                raised[i] |= flags & RAISED
                shrunk[i] |= (flags & REMOVED) >> 1
                touched[i] |= flags & RAISED
                zero_lost[i] |= (flags & ZERO_LOST) >> 3
                nc_dirty[i] |= (flags & (RAISED | REMOVED)) != 0
                if flags & EXTENDED:
                    edge_dirty[e] = BOTH_ENDS
                    star_dirty[i] = star_dirty[j] = 1
        # raised unary costs change the dead-end tests around them, and where a
        # label of cost 0 went, the stars too (only such a label supports one)
        for w in range(n_words):
            if (touched_words[w] | lost_words[w]) == 0:
                continue
            for i in range(8 * w, min(8 * w + 8, n)):
                if zero_lost[i]:
                    zero_lost[i] = touched[i] = 0
                    _touch_star(star_dirty, dee_dirty, adj_ptr, adj_end, adjacency, i)
                elif touched[i]:
                    touched[i] = 0
                    _touch_dee(dee_dirty, adj_ptr, adj_end, adjacency, i)
        if not net.existential:
            star_dirty[:] = 0
        elif not _existential_pass(net, state, work, eps, trail):
            _clear(work)
            return False
        lower = scalars[LOWER]
        for w in range(n_words):  # node consistency: unary minima into the bound
            if nc_words[w] == 0:
                continue
            for i in range(8 * w, min(8 * w + 8, n)):
                if not nc_dirty[i] or eliminated[i]:
                    continue
                m = _take_least_unary(unary, K, i, trail)
                if m == np.inf:
                    _clear(work)
                    return False
                lower += m
        scalars[LOWER] = lower
        if lower >= cut:
            _clear(work)
            return False
        # labels that cannot beat the incumbent (whole blocks): of every
        # variable when the bound rose since the last such sweep, else of
        # those whose costs rose (their flags eight at a time)
        changed = False
        if lower > swept:
            swept = lower
            for i in range(n):
                if eliminated[i]:
                    nc_dirty[i] = 0
                    continue
                if _prune_above(unary, K, i, lower, cut, trail):
                    shrunk[i] = 1
                nc_dirty[i] = 0
                changed = changed or shrunk[i] == 1 or raised[i] == 1 or star_dirty[i] == 1
        else:
            for w in range(n_words):
                if nc_words[w] == 0:
                    continue
                for i in range(8 * w, min(8 * w + 8, n)):
                    if nc_dirty[i] and not eliminated[i]:
                        if _prune_above(unary, K, i, lower, cut, trail):
                            shrunk[i] = 1
                    nc_dirty[i] = 0
            for w in range(n_words):  # anything left to do for a variable in the search
                if (shrunk_words[w] | raised_words[w] | star_words[w]) == 0:
                    continue
                for i in range(8 * w, min(8 * w + 8, n)):
                    if not eliminated[i] and (shrunk[i] | raised[i] | star_dirty[i]):
                        changed = True
                if changed:
                    break
        if not changed:
            for w in range((n_edges + 7) // 8):
                if edge_words[w] != 0 and _any_flag(edge_dirty, 8 * w, min(8 * w + 8, n_edges)):
                    changed = True
                    break
        if not changed and not _eliminate_dead_ends(net, state, work, trail):
            return True
    raised[:] = 0
    return True


@borrowing_kernel
def _domain_sizes(net, state, sizes):
    """Each variable's domain size into ``sizes`` (0 for the eliminated:
    like fixed ones, they are nobody's free neighbours)."""
    K, n_states, unary, eliminated = net.K, net.n_states, state.unary, state.eliminated
    for v in range(n_states.shape[0]):
        size = 0
        for x in range(v * K, v * K + K):  # (padding labels cost inf)
            size += unary[x] != np.inf
        sizes[v] = 0 if eliminated[v] else size


@borrowing_kernel
def _absorb_fixed_edges(net, state, work, i, eps, trail):
    """Arc consistency of ``i``'s side of its edges to fixed variables (one
    label left): they then cost 0 on every label of ``i``, and nothing of
    them is left out of the bound when ``i`` is eliminated.  Returns False
    when ``i``'s domain empties."""
    K, pair, ends = net.K, state.pair, state.ends
    unary, shift, residue = state.unary, state.shift, state.residue
    sizes = work.sizes
    for k in range(state.adj_ptr[i], state.adj_end[i]):
        e, si, j = state.adjacency[_u(k), 0], state.adjacency[_u(k), 1], state.adjacency[_u(k), 2]
        if sizes[j] == 1:
            _log_edge(trail, unary, shift, ends, e, si, K, False)
            if _support(pair, shift, unary, residue[0], work.domains, ends, K, e, si,
                        eps) == WIPED:
                state.edge_weight[e] += 1.0
                return False
    return True


@borrowing_kernel
def _mark_eliminated(state, work, i, parent):
    """Record ``i`` as eliminated (into ``parent``, -1: none) on the path."""
    c = state.counters[ELIMINATED]
    state.elim_order[c] = i
    state.elim_parent[i] = parent
    state.eliminated[i] = 1
    state.counters[ELIMINATED] = c + 1
    work.sizes[i] = 0


@borrowing_kernel
def _eliminate(net, state, work, i, parent, edge, eps, trail):
    """Eliminate free variable ``i`` (see the module docstring) into its one
    free neighbour ``parent`` over ``edge`` (``parent`` -1: none; ``trail``:
    see :func:`_evaluate`).  Returns False when a domain empties."""
    K = net.K
    unary, shift, residue = state.unary, state.shift, state.residue
    if not _absorb_fixed_edges(net, state, work, i, eps, trail):
        return False
    if parent >= 0:
        s = 1 if state.ends[edge, 1] == parent else 0
        _log_edge(trail, unary, shift, state.ends, edge, s, K, True)
        flags = _full_support(state.pair, shift, unary, residue[1], work.domains, state.ends,
                              K, edge, s, eps, work.minima, work.gainers)
        if flags == WIPED:
            state.edge_weight[edge] += 1.0
            return False
        work.raised[parent] |= flags & RAISED
        work.shrunk[parent] |= (flags & REMOVED) >> 1
        work.nc_dirty[parent] |= (flags & (RAISED | REMOVED)) != 0
        work.touched[parent] |= flags & RAISED
    else:  # node consistency of i itself: its least cost joins the bound
        m = _take_least_unary(unary, K, i, trail)
        if m == np.inf:
            return False
        state.scalars[LOWER] += m
    _mark_eliminated(state, work, i, parent)
    return True


@borrowing_kernel
def _spare_room(net, state, j, q):
    """Whether a spare edge between ``j`` and ``q`` can be added: one is left
    and both have an adjacency slot left."""
    return (state.counters[SPARES] < net.spare and state.adj_end[j] < state.adj_ptr[j + 1]
            and state.adj_end[q] < state.adj_ptr[q + 1])


@borrowing_kernel
def _eliminate_into_pair(net, state, work, i, j, q, eps, trail):
    """Eliminate free variable ``i`` whose free neighbours are ``j`` and
    ``q`` (over any number of edges each): the least cost of its bucket per
    pair of their labels, ``min_x unary_i(x) + sum cost_ij(x, y) + sum
    cost_iq(x, z)``, becomes a new (spare) edge between them, whose table
    the arc consistency then projects; ``i``'s edges and costs are frozen as
    in :func:`_eliminate` (``trail``: see :func:`_evaluate`; the spare
    edge's slot is above every saved level's, so its set-up is not logged).
    Returns False when a domain empties."""
    K, E = net.K, net.ends.shape[0]
    unary, shift, pair, ends = state.unary, state.shift, state.pair, state.ends
    adj_end, adjacency = state.adj_end, state.adjacency
    if not _absorb_fixed_edges(net, state, work, i, eps, trail):
        return False
    f = E + state.counters[SPARES]
    k_j, k_q = net.n_states[j], net.n_states[q]
    first, first_t = 2 * f * K * K, (2 * f + 1) * K * K  # the table, and as seen from q
    for y in range(k_j):
        for z in range(k_q):
            pair[first + y * K + z] = np.inf
    to_j, to_q = work.minima[0], work.minima[1]
    for x in range(net.n_states[i]):
        ux = unary[_u(i * K + x)]
        if ux == np.inf:
            continue
        _bucket_rows(net, state, i, x, j, q, to_j, to_q)
        for y in range(k_j):
            row = ux + to_j[y]
            if row == np.inf:
                continue
            for z in range(k_q):
                c = row + to_q[z]
                if c < pair[first + y * K + z]:
                    pair[first + y * K + z] = c
    for y in range(k_j):
        for z in range(k_q):
            pair[first_t + z * K + y] = pair[first + y * K + z]
    for t in range(2 * f * K, (2 * f + 2) * K):
        shift[t] = 0.0
        state.residue[0, t] = state.residue[1, t] = 0
    state.edge_weight[f] = 1.0
    ends[f, 0], ends[f, 1] = j, q
    adjacency[adj_end[j], 0], adjacency[adj_end[j], 1], adjacency[adj_end[j], 2] = f, 0, q
    adjacency[adj_end[q], 0], adjacency[adj_end[q], 1], adjacency[adj_end[q], 2] = f, 1, j
    adj_end[j] += 1
    adj_end[q] += 1
    state.counters[SPARES] += 1
    work.edge_dirty[f] = BOTH_ENDS
    work.raised[j] = work.raised[q] = 1
    work.touched[j] = work.touched[q] = 1
    _mark_eliminated(state, work, i, j)
    return True


@borrowing_kernel
def _bucket_rows(net, state, i, x, j, q, to_j, to_q):
    """The summed current costs of the edges between label ``x`` of ``i``
    and each label of ``j`` into ``to_j``, and of ``q`` into ``to_q``."""
    K, pair, shift, adjacency = net.K, state.pair, state.shift, state.adjacency
    k_j, k_q = net.n_states[j], net.n_states[q]
    for y in range(k_j):
        to_j[y] = 0.0
    for z in range(k_q):
        to_q[z] = 0.0
    for k in range(state.adj_ptr[i], state.adj_end[i]):
        e, si, other = adjacency[_u(k), 0], adjacency[_u(k), 1], adjacency[_u(k), 2]
        if other == j:
            for y in range(k_j):
                to_j[y] += _edge_cost(pair, shift, K, e, si, x, y)
        elif other == q:
            for z in range(k_q):
                to_q[z] += _edge_cost(pair, shift, K, e, si, x, z)


@borrowing_kernel
def _drop_spares(net, state, count):
    """Take the spare edges after the first ``count`` out of use, the
    latest first (going back to a node above them): each was the last
    entry of both its ends' adjacency when added."""
    E = net.ends.shape[0]
    for t in range(state.counters[SPARES] - 1, count - 1, -1):
        state.adj_end[state.ends[E + t, 0]] -= 1
        state.adj_end[state.ends[E + t, 1]] -= 1
    state.counters[SPARES] = count


@borrowing_kernel
def _eliminate_low_degree(net, state, work, eps, trail):
    """Eliminate every free variable of at most one free neighbour and of
    two (into a spare edge, while one is left), repeatedly
    (``trail``: see :func:`_evaluate`).  Returns -1 when a domain empties,
    else how many were eliminated."""
    n = net.n_states.shape[0]
    adj_ptr, adj_end, adjacency = state.adj_ptr, state.adj_end, state.adjacency
    sizes = work.sizes
    _domain_sizes(net, state, sizes)
    count, found = 0, True
    while found:
        found = False
        for i in range(n):
            if sizes[i] < 2:
                continue
            first, edge, second, edges = -1, -1, -1, 0
            for k in range(adj_ptr[i], adj_end[i]):
                j = adjacency[_u(k), 2]
                if sizes[j] < 2:
                    continue
                edges += 1
                if first < 0 or j == first:
                    first, edge = j, adjacency[_u(k), 0]
                elif second < 0 or j == second:
                    second = j
                else:  # a third free neighbour
                    edges = -1
                    break
            if edges < 0:
                continue
            if second < 0 and edges <= 1:
                ok = _eliminate(net, state, work, i, first, edge, eps, trail)
            elif second >= 0 and _spare_room(net, state, first, second):
                ok = _eliminate_into_pair(net, state, work, i, first, second, eps, trail)
            else:  # one free neighbour over parallel edges, or no spare edge left
                continue
            if not ok:
                return -1
            count += 1
            found = True
    return count


@borrowing_kernel
def _evaluate(net, state, work, cut, eps, trail):
    """A node: EDAC* from the flags in ``work``, then the elimination of
    variables of at most two free neighbours, each followed by EDAC* again;
    the blocks changed are logged on ``trail`` (None: nothing is, at depth 0
    or where the path's nodes are saved whole; a type, so that the kernels
    compiled for None test nothing).  Returns False when the node fails (the
    flags are then cleared)."""
    for i in range(net.n_states.shape[0]):
        _list_domain(state.unary, work.domains, net.K, i)
    while True:
        if not _propagate(net, state, work, cut, eps, trail):
            return False
        eliminated = _eliminate_low_degree(net, state, work, eps, trail)
        if eliminated < 0:
            _clear(work)
            return False
        if eliminated == 0:
            return True
        if state.scalars[LOWER] >= cut:
            _clear(work)
            return False
        for v in range(net.n_states.shape[0]):  # raised parents: their stars changed
            if work.touched[v]:
                work.touched[v] = 0
                _touch_star(work.star_dirty, work.dee_dirty, state.adj_ptr, state.adj_end,
                            state.adjacency, v)


@borrowing_kernel
def _evaluate_below(net, state, work, cut, eps, on_trail):
    """:func:`_evaluate` of a node below the root, logging on the trail
    where the path is kept there (``on_trail``: see :func:`soft_arc_search`)."""
    if on_trail is None:
        return _evaluate(net, state, work, cut, eps, None)
    return _evaluate(net, state, work, cut, eps, _trail(state, net.n_states.shape[0]))


@borrowing_kernel
def _edge_block_update(net, state, e, row, col):
    """Max-product linear programming's update of edge ``e`` (Globerson and
    Jaakkola), in costs: with ``m(x, y)`` the edge's cost plus both ends'
    unary costs, each end keeps half its minimum over the other end's labels
    and the edge the rest (``m - u_p'(x) - u_q'(y) >= 0``).  The bound
    ``sum_i min unary_i + sum_e min cost_e`` never falls.  Labels without a
    finite ``m`` are removed; removed labels stay so.  ``row``, ``col``:
    float64 (K,) scratch."""
    K = net.K
    unary, shift, pair = state.unary, state.shift, net.pair
    p, q = net.ends[e, 0], net.ends[e, 1]
    kp, kq = net.n_states[p], net.n_states[q]
    for y in range(kq):
        col[y] = np.inf
    for x in range(kp):
        ux = unary[p * K + x]
        row[x] = np.inf
        if ux == np.inf:
            continue
        for y in range(kq):
            uy = unary[q * K + y]
            if uy == np.inf:
                continue
            m = ux + _edge_cost(pair, shift, K, e, 0, x, y) + uy
            row[x] = min(row[x], m)
            col[y] = min(col[y], m)
    _keep_half(unary, shift, p * K, 2 * e * K, kp, row)
    _keep_half(unary, shift, q * K, (2 * e + 1) * K, kq, col)


@borrowing_kernel
def _keep_half(unary, shift, first, first_shift, k, minima):
    """One end of an edge block update: each of its ``k`` labels (unary
    costs from ``unary[first]``, its shifts from ``shift[first_shift]``)
    keeps half its block minimum ``minima[x]``; the edge takes the rest."""
    for x in range(k):
        u = unary[first + x]
        if u == np.inf:
            continue
        if minima[x] == np.inf:
            unary[first + x] = np.inf
            continue
        half = 0.5 * minima[x]
        shift[first_shift + x] += half - u
        unary[first + x] = half


@borrowing_kernel
def _dual_ascent(net, state, work):
    """The root's sweeps of :func:`_edge_block_update` over every edge, at
    most :data:`MAX_ASCENT_SWEEPS`, while each :data:`ASCENT_CHECK` sweeps
    raise the bound by at least :data:`ASCENT_GAIN` of it; then node
    consistency gathers the unary minima into the bound.  Far tighter a
    start than soft arc consistency alone (the local polytope's bound is
    what these fixpoints approach), and every node below inherits it.  Runs
    at the root only: nothing there is logged on the trail."""
    n, E, K = net.n_states.shape[0], net.ends.shape[0], net.K
    unary, domains = state.unary, work.domains
    row, col = work.minima[0], work.minima[1]
    for i in range(n):  # (the updates remove labels, never restore one)
        _list_domain(unary, domains, K, i)
    before = -np.inf
    for sweep in range(MAX_ASCENT_SWEEPS):
        for e in range(E):
            _edge_block_update(net, state, e, row, col)
        if (sweep + 1) % ASCENT_CHECK:
            continue
        bound = 0.0
        for i in range(n):
            bound += _least_unary(unary, domains, K, i)
        if bound == np.inf:
            break
        if bound - before <= ASCENT_GAIN * abs(bound):
            break
        before = bound
    lower = state.scalars[LOWER]
    for i in range(n):  # (at the root: nothing to log)
        m = _take_least_unary(unary, K, i, None)
        if m != np.inf:  # an empty domain: the root's propagation reports it
            lower += m
    state.scalars[LOWER] = lower


@borrowing_kernel
def _choose_variable(net, state, work):
    """The last conflict's variable while it is free, else the free variable
    (two or more labels, not eliminated) of least domain size over the summed
    weights of its edges to free variables; -1 when none is free."""
    n = net.n_states.shape[0]
    K = net.K
    unary, eliminated = state.unary, state.eliminated
    last = state.counters[LAST_CONFLICT]
    if last >= 0 and not eliminated[last]:
        size = 0
        for x in range(net.n_states[last]):
            if unary[last * K + x] != np.inf:
                size += 1
        if size > 1:
            return last
    state.counters[LAST_CONFLICT] = -1
    sizes = work.sizes
    _domain_sizes(net, state, sizes)
    adj_ptr, adj_end, adjacency = state.adj_ptr, state.adj_end, state.adjacency
    edge_weight = state.edge_weight
    best, best_key = -1, np.inf
    for v in range(n):
        if sizes[v] < 2:
            continue
        wdeg = 1e-3
        for k in range(adj_ptr[v], adj_end[v]):
            if sizes[adjacency[_u(k), 2]] > 1:
                wdeg += edge_weight[adjacency[_u(k), 0]]
        key = sizes[v] / wdeg
        if key < best_key:
            best, best_key = v, key
    return best


@borrowing_kernel
def _choose_label(net, state, v, eps):
    """The label of least unary cost (on ties the existentially supported
    one, else the incumbent's)."""
    K = net.K
    best, best_cost = -1, np.inf
    for x in range(net.n_states[v]):
        u = state.unary[_u(v * K + x)]
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
        total += net.pair[(2 * e * K + labels[net.ends[e, 0]]) * K + labels[net.ends[e, 1]]]
    return total


@borrowing_kernel
def _complete_eliminated(net, state, work, labels):
    """Best labels of the eliminated variables given the fixed ones in
    ``labels``, in the reverse order of elimination: each takes the label
    of least cost in its frozen bucket (its unary costs and its edges to
    the variables not eliminated before it, all labelled by then), the
    bucket whose least cost per label of its free neighbours went into
    the network when it was eliminated (bucket elimination's second pass)."""
    K = net.K
    order, position = state.elim_order, work.elim_pos
    pair, shift, adjacency = state.pair, state.shift, state.adjacency
    count = state.counters[ELIMINATED]
    for t in range(count):
        position[order[t]] = t
    for t in range(count - 1, -1, -1):
        i = order[t]
        best, best_cost = 0, np.inf
        for x in range(net.n_states[i]):
            c = state.unary[_u(i * K + x)]
            if c == np.inf:
                continue
            for k in range(state.adj_ptr[i], state.adj_end[i]):
                e, si, j = adjacency[_u(k), 0], adjacency[_u(k), 1], adjacency[_u(k), 2]
                if state.eliminated[_u(j)] and position[j] < t:  # a child: in its own bucket
                    continue
                c += _edge_cost(pair, shift, K, e, si, x, labels[j])
            if c < best_cost:
                best, best_cost = x, c
        labels[i] = best


@nb.njit(cache=True, no_cpython_wrapper=True)
def _offer_leaf(net, state, work, current, crew):
    """Every variable is fixed or eliminated: adopt the fixed labels with
    the eliminated variables' best ones when that labeling is cheaper than
    the incumbent, and its cost as the crew's when cheaper than that
    (returns whether it was)."""
    n = net.n_states.shape[0]
    K = net.K
    for i in range(n):
        if state.eliminated[i]:
            continue
        for x in range(net.n_states[i]):
            if state.unary[_u(i * K + x)] != np.inf:
                current[i] = x
                break
    _complete_eliminated(net, state, work, current)
    cost = labeling_cost(net, current)
    if cost < state.scalars[UPPER]:
        state.scalars[UPPER] = cost
        _copy(current, state.labels)
    if cost < crew[CREW_COST]:  # (a race may keep a worse one: a weaker cut, still valid)
        crew[CREW_COST] = cost
        return True
    return False


@borrowing_kernel
def _recheck_supports(state, work, d):
    """Flag the stars of the variables whose full support was set below
    level ``d`` (after a backtrack to it: the hint may not hold there)."""
    depth, star_dirty = state.support_depth, work.star_dirty
    for i in range(depth.shape[0]):
        if depth[i] > d:
            depth[i] = d
            star_dirty[i] = 1


@borrowing_kernel
def _copy(src, dst):
    """``dst[:] = src`` for 1-D arrays of one length, as a plain loop (the
    slice assignment compiles numba's broadcasting machinery: about 2 s of
    the search's first call from an empty cache)."""
    for k in range(src.shape[0]):
        dst[k] = src[k]


@borrowing_kernel
def _copy_head(src, dst, count):
    """``dst[:count] = src[:count]`` (see :func:`_copy`)."""
    for k in range(count):
        dst[k] = src[k]


@borrowing_kernel
def _keep_eliminated(state, count):
    """Undo the eliminations after the first ``count`` of the current path
    (going back to a node above them)."""
    for t in range(count, state.counters[ELIMINATED]):
        state.eliminated[state.elim_order[t]] = 0
    state.counters[ELIMINATED] = count


@nb.njit(cache=True, inline="always")
def cutoff(upper, tol, offset, integral):
    """The cost a node's bound must stay below to be searched, given the
    incumbent's cost ``upper`` (see :func:`soft_arc_search`)."""
    if upper == np.inf:
        return np.inf
    margin = tol * max(1.0, abs(offset - upper))
    if integral:
        margin = max(margin, 1.0 - INTEGRAL_MARGIN)
    return upper - margin


@nb.njit(cache=True, nogil=True)
def soft_arc_search(net, state, work, max_nodes, tol, offset, eps, integral, crew, on_trail):
    """Depth-first branch and bound with FDAC* and the elimination of
    variables of at most two free neighbours at every node, resumable.

    Binary branching: the variable chosen by ``dom / wdeg`` is fixed to its
    cheapest label, then (after that subtree) the label is removed.  The
    current path's nodes are kept in ``state`` (on its trail), so a call
    that stops at ``max_nodes`` resumes where it stopped; a call also stops
    before a node when the trail lacks room for it (``counters[TRAIL_FULL]``
    set: the caller grows the trail and calls again).

    Parameters
    ----------
    net : CostNetwork
    state : SearchState
        In and out; a fresh state has ``counters[PHASE] == NOT_STARTED`` and
        ``scalars[UPPER]`` the cost of ``state.labels`` (``inf``: none).
    work : Workspace
    max_nodes : int
        Nodes (propagations) this call evaluates at most; it also stops
        before a backtrack once ``counters[BACKTRACKS_LEFT]`` reaches 0.
    tol : float
        A node is pruned when its bound is within
        ``tol * max(1, |offset - incumbent cost|)`` of the incumbent's cost
        (``offset - cost`` is the score).
    offset : float
    eps : float
        Moves of at most this cost are not made.
    integral : bool
        Whether every labeling's cost is an integer: a node is then also
        pruned when its bound exceeds the incumbent's cost less 1 (by
        :data:`INTEGRAL_MARGIN`), since nothing below can be cheaper by 1.
    crew : float64 (3,)
        Shared by the threads of one search (:mod:`.soft_arc_threads`;
        ``crew[CREW_SHARED] > 0``; a search alone keeps its own,
        ``[inf, 0, 0]``): ``crew[CREW_COST]`` the least cost of a labeling
        any thread has found, against which every node is cut at once.
        With threads, the call returns (after its first node) when it finds
        a labeling of that least cost or another thread has, so that the
        labelings are traded, and, wherever its path has a level to hand
        over, while a thread waits for work (``crew[CREW_HUNGRY] > 0``).
    on_trail : None or bool
        None where the path's nodes are saved whole (``state.saved_unary``
        not empty), True where the path is kept on the trail: its type
        selects the compiled kernel, so that a process compiles the
        propagation for the trail only when a network needs it (it doubles
        the first compilation).

    Returns
    -------
    done : bool
        Whether the search ended: the incumbent is then optimal within the
        tolerance (or no labeling of finite cost exists).
    """
    n = net.n_states.shape[0]
    current = np.empty(n, dtype=np.int64)
    counters = state.counters
    first = counters[NODES]
    budget = first + max_nodes
    while counters[PHASE] != DONE:
        if counters[NODES] >= budget:
            return False
        if counters[NODES] > first and crew[CREW_SHARED] > 0 and (
                crew[CREW_COST] < state.scalars[UPPER]  # another thread's labeling: trade
                or (crew[CREW_HUNGRY] > 0 and counters[DEPTH] - counters[FLOOR] >= 2)):
            return False
        cut = cutoff(min(state.scalars[UPPER], crew[CREW_COST]), tol, offset, integral)
        phase = counters[PHASE]
        if on_trail is not None:
            if phase != NOT_STARTED and (state.trail_values.shape[0] - counters[TRAIL_TOP]
                                         < state.stamps.shape[0]):
                counters[TRAIL_FULL] = 1  # a node logs each block once at most
                return False
        if phase == NOT_STARTED:
            counters[NODES] += 1
            state.scalars[LOWER] = 0.0
            state.shift[:] = 0.0
            state.support_depth[:] = 0
            _copy(net.unary, state.unary)
            work.edge_dirty[:] = BOTH_ENDS
            work.raised[:] = 1
            work.star_dirty[:] = 1
            work.dee_dirty[:] = 1
            counters[DEPTH] = counters[FLOOR] = 0
            counters[ELIMINATED] = 0
            counters[TRAIL_TOP] = counters[EPOCH] = 0
            state.eliminated[:] = 0
            _drop_spares(net, state, 0)
            _dual_ascent(net, state, work)
            work.raised[:] = 1
            # (depth 0: nothing to log; the spare edges the root adds stay in
            # use on every path)
            ok = _evaluate(net, state, work, cut, eps, None)
            counters[PHASE] = CONSISTENT if ok else DONE
        elif phase == CONSISTENT:
            v = _choose_variable(net, state, work)
            if v < 0:
                found = _offer_leaf(net, state, work, current, crew)
                counters[PHASE] = BACKTRACK
                if found and crew[CREW_SHARED] > 0:  # the others trade for it at once
                    return False
                continue
            a = _choose_label(net, state, v, eps)
            d = counters[DEPTH]
            _save_level(net, state, d, on_trail)
            state.saved_lower[d] = state.scalars[LOWER]
            state.branch[d, 0], state.branch[d, 1] = v, a
            state.branch[d, 2], state.branch[d, 3] = counters[ELIMINATED], counters[SPARES]
            counters[DEPTH] = d + 1
            K = net.K
            if on_trail is not None:
                _log_unary(_trail(state, n), state.unary, v, K)
            for x in range(net.n_states[v]):
                if x != a:
                    state.unary[_u(v * K + x)] = np.inf
            work.shrunk[v] = work.zero_lost[v] = 1
            counters[NODES] += 1
            ok = _evaluate_below(net, state, work, cut, eps, on_trail)
            counters[PHASE] = CONSISTENT if ok else BACKTRACK
            if not ok:
                counters[LAST_CONFLICT] = v
        else:  # BACKTRACK: the other branch of the deepest open level
            d = counters[DEPTH] - 1
            if d < counters[FLOOR]:
                counters[PHASE] = DONE
                break
            if counters[BACKTRACKS_LEFT] == 0:  # the dive's budget is spent
                return False
            if counters[BACKTRACKS_LEFT] > 0:
                counters[BACKTRACKS_LEFT] -= 1
            counters[DEPTH] = d
            K = net.K
            _drop_spares(net, state, state.branch[d, 3])
            _restore_level(net, state, d, on_trail)
            state.scalars[LOWER] = state.saved_lower[d]
            v, a = state.branch[d, 0], state.branch[d, 1]
            _keep_eliminated(state, state.branch[d, 2])
            _recheck_supports(state, work, d)
            if on_trail is not None:
                _log_unary(_trail(state, n), state.unary, v, K)
            state.unary[v * K + a] = np.inf
            work.shrunk[v] = work.zero_lost[v] = 1
            counters[NODES] += 1
            ok = _evaluate_below(net, state, work, cut, eps, on_trail)
            counters[PHASE] = CONSISTENT if ok else BACKTRACK
    return True


class RootNode(NamedTuple):
    """A copy of the root's propagated node, from which
    :func:`restore_node` rebuilds open nodes: ``unary`` float64 (n * K,),
    ``shift`` float64 ((E + S) * 2 * K,), ``lower`` float64 (1,) (its
    bound), ``eliminated`` int64 (1,) (how many variables it eliminated: the
    first entries of ``SearchState.elim_order``, eliminated on every path)
    and ``spares`` int64 (1,) (how many spare edges it added: the first
    ones, in use on every path, their tables kept in the search's state)."""

    unary: np.ndarray
    shift: np.ndarray
    lower: np.ndarray
    eliminated: np.ndarray
    spares: np.ndarray


@nb.njit(cache=True, nogil=True)
def restore_node(net, state, work, root, mask, tol, offset, eps, integral):
    """Make an open node the search's current one, at depth 0: the root's
    node with the labels outside ``mask`` removed, propagated again (a
    fixpoint of its own, whose bound may differ from the one the node had
    when it was opened; both are valid).  :func:`soft_arc_search` then
    searches its subtree, and ends (``DONE``) when that is exhausted.

    Parameters
    ----------
    net : CostNetwork
    state : SearchState
        In and out: its current path is dropped.
    work : Workspace
        Clear flags (as every kernel leaves them).
    root : RootNode
    mask : uint8 (n * K,)
        1 for the labels in the node's domains (ignored for the variables
        the root eliminated).
    tol, offset, eps, integral
        As for :func:`soft_arc_search`.

    Returns
    -------
    consistent : bool
        False when the node fails (nothing under it beats the incumbent).
    """
    K = net.K
    counters = state.counters
    eliminated, unary = state.eliminated, state.unary
    _keep_eliminated(state, root.eliminated[0])
    _drop_spares(net, state, root.spares[0])
    counters[TRAIL_TOP] = counters[EPOCH] = 0  # depth 0: nothing to log
    _copy(root.unary, unary)
    _copy_head(root.shift, state.shift, _shifts_in_use(net, state))
    state.scalars[LOWER] = root.lower[0]
    for i in range(net.n_states.shape[0]):
        if eliminated[i]:
            continue
        for x in range(net.n_states[i]):
            if not mask[i * K + x] and unary[_u(i * K + x)] != np.inf:
                unary[_u(i * K + x)] = np.inf
                work.shrunk[i] = 1
    counters[DEPTH] = counters[FLOOR] = 0
    work.star_dirty[:] = 1  # every star: the supports recorded are the last path's
    state.support_depth[:] = 0
    counters[NODES] += 1
    ok = _evaluate(net, state, work, cutoff(state.scalars[UPPER], tol, offset, integral), eps,
                   None)  # (depth 0: nothing to log)
    counters[PHASE] = CONSISTENT if ok else DONE
    return ok
