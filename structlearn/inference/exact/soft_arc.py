"""Branch and bound with soft arc consistency (the cost function network
view of pairwise MAP), by hybrid best-first search.

Maximizing the score is minimizing ``cost = offset - score`` with every
unary and pair table shifted to a minimum of 0, ``-inf`` scores becoming
forbidden (``inf``) costs.  At every node the search reparameterizes the
network (equivalence-preserving cost moves: node, arc and directional arc
consistency, Larrosa and Schiex's FDAC*; see :mod:`._soft_arc_kernels`),
which gathers a lower bound on the cost in one constant and removes the
labels that cannot beat the incumbent; the root starts from a dual ascent
near the LP relaxation's bound, and variables left with one or two free
neighbours are eliminated instead of branched on (the least cost of each
one's bucket moved onto its neighbour, or into a new edge between the two).
On weighted constraint networks (many forbidden pairs, small integer costs)
this bound is far tighter than the summed row maxima of :mod:`.dfbb`, and
the hard constraints prune whole subtrees at once.

The tree is searched by hybrid best-first search (Allouche, de Givry,
Katsirelos, Schiex and Zytnicki's HBFS): depth-first dives, each stopped at a
number of backtracks, after which the search goes on from the open node of
least bound.  A right branch of the current dive's path is reached by
backtracking, as in depth-first search; the others are kept as open nodes
(their domains packed to bits, bounded by their parents' bounds) and rebuilt
from a copy of the root's node by propagating their domains.  The dives'
length adapts so that rebuilding takes 2-5 % of the propagation.  On
generated weighted constraint networks, where depth-first search holds on to
poor first choices for seconds, the incumbent improves far sooner, the
certified bound (the least open one) rises as the search goes, and the proofs
take no longer.

The search is resumable: :class:`SoftArcSearch` runs for a node budget or up
to a deadline, takes better incumbents found elsewhere (:meth:`offer`), and
goes on from where it stopped.

With ``n_jobs`` threads, copies of the search with states of their own take
dives beside it, from the same open nodes and against the same incumbent
(:mod:`.soft_arc_threads`).
"""

import time
from typing import NamedTuple

import numpy as np

from ...graphs.factor_graph import FactorGraph
from ._soft_arc_kernels import (BACKTRACK, BACKTRACKS_LEFT, CONSISTENT, DEPTH, DONE, ELIMINATED,
                                FLOOR, LOWER, NODES, NOT_STARTED, PHASE, ROUNDS, SPARES,
                                TRAIL_FULL, TRAIL_TOP, UPPER)
from .soft_arc_open import OpenNodes
from .soft_arc_threads import HELPERS_MAX_BYTES, THREADS_MIN_NODES

__all__ = ["SoftArcSearch", "soft_arc_bytes"]

CHUNK_SECONDS = 0.01    # a kernel call's length under a deadline (chunks of nodes)
EPS_SCALE = 1e-12       # moves below this times the cost scale are skipped
# hybrid best-first search: depth-first dives from the open node of least
# bound, each stopped at its DIVE_BACKTRACKS-th backtrack at first; that limit
# doubles (up to MAX_DIVE_BACKTRACKS) while restoring open nodes takes more
# than RESTORE_MAX_SHARE of the propagation rounds, and halves (down to
# MIN_DIVE_BACKTRACKS) while it takes less than RESTORE_MIN_SHARE
DIVE_BACKTRACKS = 256
MIN_DIVE_BACKTRACKS = 64
MAX_DIVE_BACKTRACKS = 1 << 16
RESTORE_MIN_SHARE = 0.02
RESTORE_MAX_SHARE = 0.05
OPEN_MAX_BYTES = 32 << 20   # open nodes kept at most; past it the dives go on to their end
# the path's nodes are saved whole while that takes at most SNAPSHOT_MAX_BYTES
# (a copy of every cost costs less than logging what changes where a node
# changes most of them: 10-13 % less time a node on the generated weighted
# CSPs of 50-70 variables), else on a trail (what changes, as it changes),
# whose first room is TRAIL_FIRST_NODES nodes that change every block (it
# doubles as needed)
SNAPSHOT_MAX_BYTES = 8 << 20
TRAIL_FIRST_NODES = 4
# (way to keep the path, best-first) pairs whose kernels this process has
# compiled or loaded (:meth:`SoftArcSearch._compile_kernels`)
_KERNELS_READY = set()
# variables of two free neighbours are eliminated into spare edges (n of
# them: a path eliminates each variable once at most) where the search's own
# copy of the edge costs with room for them takes at most
# SPARE_PAIR_MAX_BYTES (a 50 x 50 grid of 8 labels needs 7.6 MB: its search
# takes 20x the nodes without them); each variable keeps SPARE_SLOTS adjacency
# entries for the spare edges it joins
SPARE_PAIR_MAX_BYTES = 32 << 20
SPARE_SLOTS = 8


def spare_edges(n, E, K):
    """The spare edges of a search over ``n`` variables, ``E`` edges and
    domains of ``K`` (see :data:`SPARE_PAIR_MAX_BYTES`): ``n``, or 0."""
    return n if n >= 3 and 16 * (E + n) * K * K <= SPARE_PAIR_MAX_BYTES else 0


def _path_bytes(n, E, K):
    """Bytes of a whole saved node per level of a path over ``n`` variables,
    ``E`` edges and domains of ``K`` (``n + 1`` levels; the spare edges'
    shifts included)."""
    return 8 * (n + 1) * (n + 2 * (E + spare_edges(n, E, K))) * K


def _snapshot_bytes(n, E, K):
    """:func:`_path_bytes` where they fit in :data:`SNAPSHOT_MAX_BYTES`
    (else 0: the path is kept on a trail)."""
    nbytes = _path_bytes(n, E, K)
    return nbytes if nbytes <= SNAPSHOT_MAX_BYTES else 0


def soft_arc_bytes(graph):
    """Bytes the search over ``graph`` holds at first (the padded pair
    costs, the current node and a copy of the root's, the path's saved
    nodes or the trail's first room), besides its open nodes (at most
    :data:`OPEN_MAX_BYTES`); a trail grows with what the path's nodes
    change, by ``8 (K + 2)`` bytes a variable's or an edge end's block of
    ``K`` costs, to ``8 (n + 1)(n + 2 E)(K + 2)`` bytes at worst (every
    block logged at every level)."""
    n = graph.n_vars
    K = int(graph.n_states.max()) if n else 1
    E = graph.n_factors
    S = spare_edges(n, E, K)
    blocks = n + 2 * (E + S)
    path = _snapshot_bytes(n, E, K) or 8 * TRAIL_FIRST_NODES * blocks * (K + 2)
    return _costs_bytes(E, S, K) + 8 * 3 * blocks * K + path


def _costs_bytes(E, S, K):
    """Bytes of the padded edge costs over ``E`` edges and ``S`` spare
    edges (one array: the network's are its head)."""
    return 8 * 2 * (E + S) * K * K


def _cost_network(graph, existential=True):
    """The graph as a :class:`~._soft_arc_kernels.CostNetwork` (searched
    with existential arc consistency or not), and the offset (``score =
    offset - cost``; ``-inf`` when a table has no finite entry)."""
    built = _build_network(graph, existential)
    return built.net, built.offset


class _BuiltNetwork(NamedTuple):
    """:func:`_build_network`'s network and what the search sets up from it
    (``net.pair`` is the head of ``pair_room``)."""

    net: object
    offset: float
    pair_room: np.ndarray  # float64 ((E + net.spare) * 2 * K * K,): net.pair, then zeros
    largest: float         # the largest finite unary or edge cost (0: none)
    integral: bool         # whether every finite one is an integer


def _build_network(graph, existential=True):
    """:func:`_cost_network`, its edge costs laid out with room for the
    spare edges after them (their pages untouched until an elimination
    writes them), and the costs' scale; see :class:`_BuiltNetwork`."""
    from ._dfbb_kernels import static_order
    from ._pair_cost_kernels import pair_costs
    from ._soft_arc_kernels import CostNetwork

    n, E = graph.n_vars, graph.n_factors
    K = int(graph.n_states.max()) if n else 1
    scores = graph.unary_matrix()
    with np.errstate(invalid="ignore"):
        row_max = scores.max(axis=1) if K else np.zeros(n)
        unary = (row_max[:, None] - scores).ravel()
    unary[np.isnan(unary)] = np.inf  # a variable with no finite label
    offset = float(row_max.sum())

    starts = graph.scope_indptr[:-1]
    ends = np.stack([graph.scope_vars[starts], graph.scope_vars[starts + 1]],
                    axis=1).astype(np.int64)
    spare = spare_edges(n, E, K)
    pair_room = np.zeros((E + spare) * 2 * K * K)
    table_max = np.empty(E)
    largest, integral = pair_costs(graph.table_data, graph.table_offsets, graph.table_ids, ends,
                                   graph.n_states.astype(np.int64), K, pair_room, table_max)
    offset += float(table_max.sum())
    finite = unary[np.isfinite(unary)]
    largest = max(float(largest), float(finite.max(initial=0.0)))
    integral = bool(integral) and bool(np.all(finite == np.round(finite)))

    side_var = np.concatenate([ends[:, 0], ends[:, 1]])
    order = np.argsort(side_var, kind="stable")
    adj_edge = np.concatenate([np.arange(E), np.arange(E)])[order]
    adj_side = np.repeat([0, 1], E)[order]
    adj_ptr = np.searchsorted(side_var[order], np.arange(n + 1)).astype(np.int64)
    nbr_var = ends[adj_edge, 1 - adj_side]
    dac_order = static_order(adj_ptr, nbr_var.astype(np.int64))
    dac_pos = np.empty(n, dtype=np.int64)
    dac_pos[dac_order] = np.arange(n)
    adjacency = np.stack([adj_edge, adj_side, nbr_var], axis=1).astype(np.int64)
    net = CostNetwork(graph.n_states.astype(np.int64), unary, pair_room[:E * 2 * K * K], ends,
                      adj_ptr, adjacency, dac_order, dac_pos, K, bool(existential), spare,
                      SPARE_SLOTS if spare else 0)
    return _BuiltNetwork(net, offset, pair_room, largest, integral)


def _search_graph(net, pair_room):
    """The :class:`~._soft_arc_kernels.SearchState` arrays that hold the
    edges and adjacency, with room for ``net``'s spare edges: ``pair``
    (``pair_room``, see :class:`_BuiltNetwork`), ``ends``, ``adj_ptr``,
    ``adj_end`` and ``adjacency``."""
    n, E, S, slots = net.n_states.shape[0], net.ends.shape[0], net.spare, net.spare_slots
    ends = np.concatenate([net.ends, np.full((S, 2), -1, dtype=np.int64)])
    degree = np.diff(net.adj_ptr)
    adj_ptr = net.adj_ptr + slots * np.arange(n + 1, dtype=np.int64)
    adjacency = np.full((2 * E + n * slots, 3), -1, dtype=np.int64)
    rows = np.repeat(adj_ptr[:-1] - net.adj_ptr[:-1], degree) + np.arange(2 * E)
    adjacency[rows] = net.adjacency
    return pair_room, ends, adj_ptr, adj_ptr[:-1] + degree, adjacency


class _OutOfRoom(Exception):
    """The trail would outgrow :attr:`SoftArcSearch.max_bytes`."""


class SoftArcSearch:
    """A resumable depth-first branch and bound over a pairwise graph, bounded
    by soft arc consistency (see the module docstring).

    Parameters
    ----------
    graph : FactorGraph
        Every factor pairwise (parallel factors are allowed).
    tol : float, default=1e-6
        A subtree is pruned when it cannot improve the incumbent's score by
        more than ``tol * max(1, |score|)``.
    incumbent : ndarray of int or None
        A labeling to start from.
    existential : bool, default=True
        Enforce existential arc consistency at every node (EDAC*); False
        stops at FDAC*, whose nodes are several times cheaper on dense
        graphs (complete graphs of 14-22 variables: 1.2-4x faster proofs,
        with 1.2-2x the nodes), where on sparse ones (grids, weighted
        constraint networks) the existential moves save far more nodes.
    best_first : bool, default=True
        Hybrid best-first search (Allouche et al.'s HBFS): depth-first
        dives of a bounded number of backtracks, each from the open node of
        least bound, which is rebuilt from the root's node by propagation;
        the open nodes left when a dive stops are kept (their domains packed
        to bits, at most :data:`OPEN_MAX_BYTES`).  A tree that goes deep into
        a poor first choice is left for better-bounded ones: the incumbent
        improves sooner and the certified bound rises with the least open
        bound.  False: plain depth-first search.
    n_jobs : int or None, default=None
        Threads that take dives side by side (best-first search only; see
        :mod:`.soft_arc_threads`), from the root's first child on; None or
        1: one.  As in scikit-learn, -1 is all CPUs.
    max_bytes : int or None, default=None
        The most the search's state and workspace may hold (they start at
        :func:`soft_arc_bytes`; a path kept on the trail grows it): where the
        trail would need more, the search stops for good
        (:attr:`out_of_room`), its incumbent and bound as they are.  None:
        no limit.

    Attributes
    ----------
    labels : ndarray of int64 (n_vars,)
        The best labeling found (zeros when none of finite score is).
    score : float
        Its score (``-inf``: none found).
    proved : bool
        Whether the search has ended: ``labels`` is then optimal within
        ``tol`` (or, with ``score == -inf``, no finite labeling exists).
    n_nodes : int
        Nodes evaluated so far.
    out_of_room : bool
        Whether the search stopped for good at ``max_bytes`` (it is then
        not proved and :meth:`run` returns at once).
    """

    def __init__(self, graph, *, tol=1e-6, incumbent=None, existential=True, best_first=True,
                 n_jobs=None, max_bytes=None):
        from ..._parallel import thread_count
        from ._soft_arc_kernels import SearchState, Workspace

        if not isinstance(graph, FactorGraph):
            raise TypeError(f"graph must be a FactorGraph, got {type(graph).__name__}")
        if np.any(graph.factor_orders != 2):
            raise ValueError("SoftArcSearch needs a graph whose factors are all pairwise")
        if not (isinstance(tol, (int, float)) and np.isfinite(tol) and tol >= 0):
            raise ValueError(f"tol must be a finite number >= 0, got {tol!r}")
        self.graph, self.tol = graph, float(tol)
        if not isinstance(existential, (bool, np.bool_)):
            raise TypeError(f"existential must be True or False, got {existential!r}")
        if not isinstance(best_first, (bool, np.bool_)):
            raise TypeError(f"best_first must be True or False, got {best_first!r}")
        self.best_first = bool(best_first)
        if max_bytes is not None and (isinstance(max_bytes, bool)
                                      or not isinstance(max_bytes, (int, np.integer))
                                      or max_bytes < 0):
            raise ValueError(f"max_bytes must be None or an integer >= 0, got {max_bytes!r}")
        self.max_bytes = max_bytes
        self.out_of_room = False
        self.n_threads = thread_count(n_jobs)
        self._helpers = []  # copies diving on threads beside this search (soft_arc_threads)
        # on threads, called in the search's own thread after each of its
        # kernel calls while the helpers dive (None: nothing)
        self._between_dives = None
        # the least cost found by any thread and whether one waits for work
        # (soft_arc_search's crew: the helpers share this array)
        self.crew = np.array([np.inf, 0.0, 0.0])
        built = _build_network(graph, existential)
        self.net, self.offset = built.net, built.offset
        n, E = graph.n_vars, graph.n_factors
        K = self.net.unary.shape[0] // max(n, 1)
        self.eps = EPS_SCALE * (1.0 + built.largest)
        # integer costs (of a size floats hold exactly): every labeling's
        # cost is an integer, so a bound above the incumbent's less 1 prunes
        self.integral = built.integral and built.largest * max(E + n, 1) < 2.0 ** 52
        levels, room = n + 1, 0
        E2 = E + self.net.spare  # the network's edges and the spare ones
        if not _snapshot_bytes(n, E, K):
            levels, room = 0, TRAIL_FIRST_NODES * (n + 2 * E2)
        self.state = SearchState(
            np.empty(n * K), np.zeros(E2 * 2 * K), np.empty((levels, n * K)),
            np.empty((levels, E2 * 2 * K)), np.zeros(n + 2 * E2, dtype=np.int64),
            np.empty((room, 2), dtype=np.int64), np.empty((room, K)),
            np.zeros((n + 1, 2), dtype=np.int64), np.zeros(n + 1),
            np.zeros((n + 1, 4), dtype=np.int64),
            np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64),
            np.zeros((2, E2 * 2 * K), dtype=np.int64), np.ones(E2),
            np.zeros(n, dtype=np.uint8), np.zeros(n, dtype=np.int64),
            np.full(n, -1, dtype=np.int64), np.array([0.0, np.inf]),
            np.array([0, 0, 0, 0, -1, 0, -1, 0, 0, 0, 0, 0, 0], dtype=np.int64),
            *_search_graph(self.net, built.pair_room))
        # (flags padded to whole words of eight: the kernels scan them a word at a time)
        flags = [np.zeros(-(-n // 8) * 8, dtype=np.uint8) for _ in range(7)]
        self.work = Workspace(np.zeros(-(-E2 // 8) * 8, dtype=np.uint8), *flags, np.zeros((2, K)),
                              np.zeros(K, dtype=np.int64), np.zeros((n, K + 1), dtype=np.int64),
                              np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64))
        self._root = None        # the root's node (RootNode), once evaluated
        self._open = OpenNodes(n * K, OPEN_MAX_BYTES)
        self._dive = DIVE_BACKTRACKS  # backtracks per dive
        self._depth = 0          # the current dive's first node's depth in the tree
        self._restore_rounds = 0
        if self.offset == -np.inf:  # a table with no finite entry: nothing to search
            self.state.counters[PHASE] = DONE
        if incumbent is not None:
            self.offer(incumbent)

    @property
    def labels(self):
        return self.state.labels.copy()

    @property
    def score(self):
        upper = self.state.scalars[UPPER]
        return -np.inf if upper == np.inf else float(self.graph.score(self.state.labels))

    @property
    def _on_trail(self):
        """The kernels' ``on_trail``: None where the path's nodes are saved
        whole, True where the path is kept on the trail (the one place that
        tells them apart)."""
        return None if self.state.saved_unary.shape[0] else True

    @property
    def cost(self):
        """The incumbent's cost in :attr:`net` (``inf``: none found)."""
        return float(self.state.scalars[UPPER])

    @property
    def proved(self):
        if self.state.counters[PHASE] != DONE:
            return False
        if any(h.state.counters[PHASE] != DONE for h in self._helpers):
            return False
        return self._open.least_bound() >= self._cutoff()

    @property
    def n_open(self):
        """Open nodes kept for the best-first choice (0 for depth-first search)."""
        return len(self._open)

    def _cutoff(self):
        """The cost below which a node is searched."""
        from ._soft_arc_kernels import cutoff

        return cutoff(float(self.state.scalars[UPPER]), self.tol, self.offset, self.integral)

    @property
    def upper_bound(self):
        """A certified upper bound of the best score (the score itself once
        :attr:`proved`; ``-inf`` when no labeling of finite score exists).

        What the search has not yet explored lies under the right branches
        (the label removed) of the nodes on its current path, under the
        current node and under the open nodes: the least of their bounds, or
        the incumbent's cost when that is less, bounds every labeling's cost
        from below."""
        if self.proved:
            return self.score
        lower = min([self._path_lower()] + [h._path_lower() for h in self._helpers])
        if self.state.counters[PHASE] != NOT_STARTED:
            lower = min(lower, self._open.least_bound())
        return self.offset - min(lower, float(self.state.scalars[UPPER]))

    def _path_lower(self):
        """The least bound of what the current dive has left unexplored."""
        counters, scalars = self.state.counters, self.state.scalars
        if counters[PHASE] == NOT_STARTED:
            return 0.0  # every cost is non-negative
        floor, depth = int(counters[FLOOR]), int(counters[DEPTH])
        lower = float(self.state.saved_lower[floor:depth].min()) if depth > floor else np.inf
        if counters[PHASE] == CONSISTENT:
            lower = min(lower, float(scalars[LOWER]))
        return lower

    @property
    def n_nodes(self):
        return int(self.state.counters[NODES]) + sum(
            int(h.state.counters[NODES]) for h in self._helpers)

    @property
    def eliminated(self):
        """bool (n_vars,): the variables the current node has eliminated
        (their costs are frozen and left out of its bound)."""
        return self.state.eliminated.astype(bool)

    def current_costs(self):
        """The current node's reparameterized network.

        Returns
        -------
        lower : float
            Its cost bound.
        unary : ndarray (n_vars, K)
            Unary costs (``inf``: removed from the domain).
        pair : ndarray (n_factors, K, K)
            Edge costs, first index the label of the factor's first
            variable.  For every labeling left in the domains,
            ``lower + unary + pair`` sums to its cost ``offset - score``
            while no variable is eliminated into a spare edge (see
            :meth:`spare_costs`).
        """
        from ._soft_arc_kernels import edge_tables

        n, E = self.graph.n_vars, self.graph.n_factors
        K = self.net.unary.shape[0] // max(n, 1)
        shift = self.state.shift[:E * 2 * K].reshape(E, 2, K)
        with np.errstate(invalid="ignore"):
            pair = (edge_tables(self.net) - shift[:, 0, :, None]
                    - shift[:, 1, None, :])
        return float(self.state.scalars[LOWER]), self.state.unary.reshape(n, K).copy(), pair

    def spare_costs(self):
        """The current node's spare edges in use: where a variable of two
        free neighbours was eliminated, its least cost per pair of their
        labels became a new edge between them (beside any edge between them
        already).  Over the variables not eliminated, ``lower + unary`` plus
        the edges between two of them is then the least cost over the
        eliminated ones' labels.

        Returns
        -------
        ends : ndarray of int64 (m, 2)
        tables : ndarray (m, K, K)
            Their current costs, first index the label of the first end.
        """
        state = self.state
        E, K, m = self.graph.n_factors, self.net.K, int(state.counters[SPARES])
        shift = state.shift[E * 2 * K:(E + m) * 2 * K].reshape(m, 2, K)
        tables = state.pair[E * 2 * K * K:(E + m) * 2 * K * K].reshape(m, 2, K, K)[:, 0]
        with np.errstate(invalid="ignore"):
            tables = tables - shift[:, 0, :, None] - shift[:, 1, None, :]
        return state.ends[E:E + m].copy(), tables

    def offer(self, labels):
        """Adopt ``labels`` as the incumbent when it costs less; the search
        then prunes against it."""
        from ._soft_arc_kernels import labeling_cost

        labels = np.asarray(labels, dtype=np.int64)
        if labels.shape != (self.graph.n_vars,):
            raise ValueError(f"labels must have shape ({self.graph.n_vars},), got {labels.shape}")
        if np.any(labels < 0) or np.any(labels >= self.graph.n_states):
            raise ValueError("labels out of range of the variables' states")
        if self.graph.n_vars == 0:
            return
        cost = labeling_cost(self.net, labels)
        if cost < self.state.scalars[UPPER]:
            self.state.scalars[UPPER] = cost
            self.state.labels[:] = labels

    def run(self, *, max_nodes=None, deadline=None):
        """Search on for ``max_nodes`` more nodes and/or until ``deadline``
        (a ``time.perf_counter()`` value); returns :attr:`proved`."""
        if self.out_of_room:
            return False
        try:
            return self._run(max_nodes, deadline)
        except _OutOfRoom:
            self.out_of_room = True
            return False

    def _run(self, max_nodes, deadline):
        """:meth:`run`, which stops for good where the trail would outgrow
        :attr:`max_bytes`."""
        if self.graph.n_vars == 0:
            self.state.counters[PHASE] = DONE
            self.state.scalars[UPPER] = 0.0
            return True
        self._compile_kernels()
        left = np.iinfo(np.int64).max if max_nodes is None else int(max_nodes)
        chunk = 1
        counters = self.state.counters
        while not self.proved and left > 0:
            start = time.perf_counter()
            if deadline is not None and start >= deadline:
                break
            if self._on_threads():
                return self._run_on_threads(left, deadline)
            before = self.n_nodes
            if self.best_first and counters[PHASE] == DONE:  # the dive ended: the next one
                node = self._open.pop(self._cutoff())
                if node is not None:
                    self._restore(node)
            else:
                step = left if deadline is None else min(left, chunk)
                if self.best_first and counters[PHASE] == NOT_STARTED:
                    step = 1  # the root alone, to copy it
                self._search_chunk(step)
                if self.best_first:
                    self._end_of_step()
            done = self.n_nodes - before
            left -= done
            chunk = self._next_chunk(chunk, start, done)
        return self.proved

    def _on_threads(self):
        """Whether the search goes on with helpers on threads: several
        threads, best-first, past the root and its first
        :data:`.soft_arc_threads.THREADS_MIN_NODES` nodes, and room for a
        helper."""
        return (self.n_threads > 1 and self.best_first and self._root is not None
                and self.n_nodes >= THREADS_MIN_NODES
                and bool(self._helpers or self._helper_count()))

    def _search_chunk(self, max_nodes):
        """The search kernel for ``max_nodes`` nodes at most (the trail
        grown wherever it lacks room for the next node)."""
        from ._soft_arc_kernels import soft_arc_search

        counters = self.state.counters
        end = int(counters[NODES]) + max_nodes
        while True:
            soft_arc_search(self.net, self.state, self.work, end - int(counters[NODES]),
                            self.tol, self.offset, self.eps, self.integral, self.crew,
                            self._on_trail)
            if not counters[TRAIL_FULL]:
                return
            counters[TRAIL_FULL] = 0
            self._grow_trail()
            counters = self.state.counters

    def _grow_trail(self):
        """Twice the trail's room (at least a node's, at most what a path
        of ``n + 1`` levels logs at worst: every block once a level, and
        what :attr:`max_bytes` leaves), its entries kept; raises
        :class:`_OutOfRoom` where ``max_bytes`` leaves no more."""
        state = self.state
        top = int(state.counters[TRAIL_TOP])
        blocks = state.stamps.shape[0]
        room = min(max(2 * state.trail_blocks.shape[0], blocks),
                   (self.graph.n_vars + 1) * blocks)
        if self.max_bytes is not None:
            row = state.trail_blocks.itemsize * 2 + state.trail_values.itemsize * self.net.K
            others = (sum(a.nbytes for a in state) + sum(a.nbytes for a in self.work)
                      - state.trail_blocks.nbytes - state.trail_values.nbytes)
            left = (self.max_bytes - others) // row
            if left <= state.trail_blocks.shape[0]:
                raise _OutOfRoom
            room = min(room, left)
        if room <= state.trail_blocks.shape[0]:  # (a path logs no more: see SearchState)
            raise RuntimeError(f"the soft arc search's trail is full at {room} blocks")
        logged = np.empty((room, 2), dtype=np.int64)
        values = np.empty((room, state.trail_values.shape[1]))
        logged[:top] = state.trail_blocks[:top]
        values[:top] = state.trail_values[:top]
        self.state = state._replace(trail_blocks=logged, trail_values=values)

    @staticmethod
    def _next_chunk(chunk, start, done):
        """The next kernel call's nodes: about CHUNK_SECONDS at the rate of
        the last call (``done`` nodes since ``start``)."""
        per_node = (time.perf_counter() - start) / max(done, 1)
        return int(min(max(CHUNK_SECONDS / max(per_node, 1e-9), 1), 2 * chunk + 1))

    def _helper_count(self):
        """Helpers to dive beside the search: one per thread past the first,
        as many as :data:`HELPERS_MAX_BYTES` holds copies of its state."""
        if self.n_threads == 1:
            return 0
        nbytes = sum(a.nbytes for a in self.state) + sum(a.nbytes for a in self.work)
        if self.net.spare == 0:  # the network's own edge costs, shared
            nbytes -= self.state.pair.nbytes
        return int(min(self.n_threads - 1, HELPERS_MAX_BYTES // max(nbytes, 1)))

    def _run_on_threads(self, max_nodes, deadline):
        """:meth:`run` with helpers diving beside the search, on
        :attr:`n_threads` threads in all (:mod:`.soft_arc_threads`)."""
        from .soft_arc_threads import dive_on_threads, make_helpers

        if not self._helpers:
            self._helpers = make_helpers(self, self._helper_count())
        dive_on_threads(self, self.n_nodes + max_nodes, deadline)
        return self.proved

    def _compile_kernels(self):
        """Compile (or load from the cache) the search kernel for the way
        this search keeps its path (:attr:`_on_trail`) and, for the
        best-first search, the kernel that rebuilds open nodes, at a
        process's first run, whatever its deadline: a first run whose
        deadline has already passed would otherwise leave the search kernel
        to a later call's limit (11 s without a cache), and the rebuilding
        kernel is reached only after a dive's end (2-3 s)."""
        import numba

        from ._soft_arc_kernels import RootNode, restore_node, soft_arc_search

        ready = (type(self._on_trail), self.best_first)
        if ready in _KERNELS_READY:  # (listing the signatures takes 0.15 ms)
            return
        state = self.state
        mode = numba.typeof(self._on_trail)  # (one kernel for each way to keep the path)
        if not any(sig[-1] == mode for sig in soft_arc_search.signatures):
            soft_arc_search.compile(tuple(numba.typeof(a) for a in (
                self.net, state, self.work, 1, self.tol, self.offset, self.eps,
                self.integral, self.crew, self._on_trail)))
        if not self.best_first or restore_node.signatures:
            _KERNELS_READY.add(ready)
            return
        root = RootNode(state.unary, state.shift, state.scalars[:1], state.counters[:1],
                        state.counters[:1])
        mask = np.zeros(1, dtype=np.uint8)
        restore_node.compile(tuple(numba.typeof(a) for a in (
            self.net, state, self.work, root, mask, self.tol, self.offset, self.eps,
            self.integral)))
        _KERNELS_READY.add(ready)

    def _end_of_step(self):
        """Best-first bookkeeping after a kernel call: copy the root's node
        once evaluated; open what a dive that spent its backtracks leaves."""
        from ._soft_arc_kernels import RootNode

        state = self.state
        counters = state.counters
        if self._root is None:
            if counters[PHASE] == DONE:
                return
            self._root = RootNode(state.unary.copy(), state.shift.copy(),
                                  state.scalars[LOWER:LOWER + 1].copy(),
                                  counters[ELIMINATED:ELIMINATED + 1].copy(),
                                  counters[SPARES:SPARES + 1].copy())
            counters[BACKTRACKS_LEFT] = self._dive
            return
        if counters[BACKTRACKS_LEFT] == 0 and counters[PHASE] == BACKTRACK:
            self._next_dive()  # (the kernel stopped at the limit, not between nodes)

    def _next_dive(self):
        """A dive spent its backtracks: the next one starts at the right
        branch of least bound on its path when no open node has a smaller
        bound (the kernel backtracks there, as cheap as any node; the
        branches below it are opened), else the whole path is opened and
        the next dive starts from the open node of least bound."""
        counters = self.state.counters
        cut = self._cutoff()
        self._open.prune(cut)
        floor, depth = int(counters[FLOOR]), int(counters[DEPTH])
        if depth > floor:
            bounds = self.state.saved_lower[floor:depth]
            level = depth - 1 - int(np.argmin(bounds[::-1]))  # the deepest of the least
            if bounds[level - floor] <= self._open.least_bound():
                if self._open_levels(level + 1, depth, cut):
                    counters[DEPTH] = level + 1  # the kernel takes its right branch next
                    counters[BACKTRACKS_LEFT] = self._dive
                return
        if self._open_levels(floor, depth, cut):  # the whole path
            counters[PHASE] = DONE
            counters[DEPTH] = counters[FLOOR] = 0

    def _hand_over(self):
        """Open the right branch of the first level of the current path
        that is still the search's own, for an idle thread to take (the
        dive then ends instead of backtracking to it); only when the path
        keeps another.  Returns whether a node was opened."""
        counters = self.state.counters
        floor, depth = int(counters[FLOOR]), int(counters[DEPTH])
        if counters[PHASE] == DONE or depth - floor < 2:
            return False
        if not self._open_levels(floor, floor + 1, self._cutoff()):
            return False
        counters[FLOOR] = floor + 1
        return True

    def _open_levels(self, first, last, cut):
        """Open the right branches of levels ``first:last`` of the current
        path.  Returns False, opening nothing and lifting the dive's limit
        (it goes on to its end), when they would not fit in
        :data:`OPEN_MAX_BYTES`."""
        state = self.state
        if not self._open.fits(last - first):
            state.counters[BACKTRACKS_LEFT] = -1
            return False
        from ._soft_arc_kernels import path_masks

        levels = np.arange(first, last)
        masks = np.empty((last - first, state.unary.shape[0]), dtype=np.uint8)
        path_masks(state, self.net.K, first, last, masks, self._on_trail)
        self._open.push(masks.view(bool),
                        state.branch[levels, 0] * self.net.K + state.branch[levels, 1],
                        state.saved_lower[first:last], self._depth + 1 + levels, cut)
        return True

    def _restore(self, node):
        """Start the next dive at ``node``, the open node of least bound
        (deepest on ties) as :meth:`.OpenNodes.pop` returns it; adapt the
        dives' length to what restoring costs."""
        from ._soft_arc_kernels import restore_node

        _, depth, mask = node
        counters = self.state.counters
        rounds = counters[ROUNDS]
        restore_node(self.net, self.state, self.work, self._root, mask, self.tol, self.offset,
                     self.eps, self.integral)
        self._restore_rounds += counters[ROUNDS] - rounds
        share = self._restore_rounds / max(int(counters[ROUNDS]), 1)
        if share > RESTORE_MAX_SHARE:
            self._dive = min(2 * self._dive, MAX_DIVE_BACKTRACKS)
        elif share < RESTORE_MIN_SHARE:
            self._dive = max(self._dive // 2, MIN_DIVE_BACKTRACKS)
        counters[BACKTRACKS_LEFT] = self._dive
        self._depth = depth
