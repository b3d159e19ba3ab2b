"""Partitioned multilabel GDMM rounds on threads, the partitions drawn anew each round.

A round draws a random permutation of the samples and cuts it into ``P``
runs of about equal non-zeros; each run is a partition for that round only.
Its pass visits its samples in the permutation's order against a copy of
the weight rows they use and of the pair weights (CoCoA+ adding:
:mod:`._partitions`), then the moves are merged and the multiplier step
runs on the whole problem, as after a pass of one process.  The damping is
measured from the moves (:mod:`._damping`): each round's merge measures how
the partitions' moves of the weight rows and of the pair weights added up,
which sets the next round's ``sigma'`` of each (``P`` in the first round); a
feature keeps at most the partitions that use it this round.

Why not keep each partition's samples for the whole fit?  Dual coordinate
ascent on bag-of-words data is very sensitive to a fixed order: on bibtex,
one process visiting the first half of the samples (in a random order)
and then the second half, every pass, stalls near a 5 % gap after 40
passes where a fresh permutation of all the samples reaches 1 % in 20; a
plain SDCA kernel does the same (identity order: 23 %).  Fixed partitions
inherit that stall: two of them took 543 rounds to the 1 % gap on bibtex.
Redrawn partitions took 41 (on dask workers half of each partition is
drawn anew: :mod:`._gdmm_multilabel_blocks`).

The passes share the problem's arrays and the state's (sample ids are
global; each partition writes only its samples' rows of ``A``, ``tmask``
and the pair pool): a round rewrites one array of local feature ids and
one of damped feature values (:class:`._partition_kernels.RoundLayout`),
and each partition widens samples into its own part of the pool's free
end (:func:`._gdmm_multilabel_storage.region_views`).  A partition whose
part fills stops; the pool is compacted between the threads' runs and the
partition goes on from the sample it stopped at.
"""

import time

import numpy as np

from ._damping import MeasuredDamping, squared_distance, squared_norm
from ._gdmm_multilabel_kernels import (LabelEdges, MultilabelDuals, gdmm_multilabel_multipliers,
                                       gdmm_multilabel_pass)
from ._gdmm_multilabel_storage import _positive_edges, close_regions, region_views
from ._multilabel_kernels import SampleFeatures
from ._partition_kernels import RoundLayout
from ._partitions import PartitionThreads, n_threads, split_by_weight

__all__ = ["ThreadMultilabelPartitions"]

# free pair slots per partition below which a round starts by compacting
_MIN_FREE_SLOTS = 64


class _RoundPartition:
    """One partition's pass in one round: its samples in visiting order,
    its copy of its weight rows (a view of the round's copies) and of the
    pair weights, and where its pass stands."""

    def __init__(self, ids, W, Pw, n_blocks):
        self.ids = ids
        self.W = W
        self.Pw = Pw.copy()
        self.block_ends = np.unique(
            np.linspace(0, ids.shape[0], n_blocks + 1).astype(np.int64))[1:]
        self.block = 0
        self.pos = 0
        self.need = 0
        self.stats = np.zeros(2, dtype=np.int64)

    @property
    def finished(self):
        return self.pos >= self.ids.shape[0]


class ThreadMultilabelPartitions:
    """Rounds of multilabel GDMM passes over partitions redrawn each round.

    Parameters
    ----------
    problem : MultilabelProblem
    state : GDMMMultilabelState
        Updated in place (its pool may be replaced by a compacted one).
    n_parts : int
        Partitions (>= 2, at most the samples).
    edges : tuple
        ``(E, n_edges, nbr_ptr, nbr, edge_list, pids)``: the label edges.
    C, rho, rounds : float, float, int
        As in the one-process pass.
    n_jobs : int or None
        Threads running the partitions (at most one per partition).  The
        iterates depend on the rounds' draws and ``n_parts`` only.
    """

    remote = False

    def __init__(self, problem, state, n_parts, edges, C, rho, rounds, n_jobs):
        self.problem = problem
        self.state = state
        self.n_parts = int(n_parts)
        self.edges = edges
        self.params = (float(C), float(rho), int(rounds))
        self.layout = RoundLayout(problem.data, problem.indices, problem.indptr,
                                  problem.n_features)
        self.sample_weights = np.diff(problem.indptr).astype(np.float64) + 1.0
        self.fixed = np.zeros(problem.Y.shape[1], dtype=np.uint8)
        self.threads = PartitionThreads(n_threads(n_jobs, self.n_parts))
        self.damping = MeasuredDamping(self.n_parts)
        self.last_damping = None
        self.copies = None

    def _draw(self, rng, n_blocks):
        """This round's partitions (and their layout and weight copies),
        drawn from ``rng``."""
        n = self.problem.Y.shape[0]
        order = rng.permutation(n).astype(np.int64)
        bounds = split_by_weight(self.sample_weights[order], self.n_parts)
        layout = self.layout
        layout.redraw(order, bounds, self.damping.weights)
        self.copies = layout.gather_copies(self.state.W)
        ptr = layout.rows_ptr
        return [_RoundPartition(order[bounds[k]:bounds[k + 1]], self.copies[ptr[k]:ptr[k + 1]],
                                self.state.Pw, n_blocks) for k in range(bounds.shape[0] - 1)]

    def _pass(self, part, pool, deadline):
        """Go on with ``part``'s pass on the pool view ``pool`` until it ends,
        needs pair slots its part lacks (``part.need``) or, between blocks,
        ``perf_counter()`` passes ``deadline``.  At its end the partition's
        pair weights' copy becomes its undamped move."""
        E, n_edges, nbr_ptr, nbr, edge_list, pids = self.edges
        C, rho, rounds = self.params
        problem, state, layout = self.problem, self.state, self.layout
        samples = SampleFeatures(problem.data, layout.local, problem.indptr, problem.Y,
                                 layout.xnorm_sigma)
        duals = MultilabelDuals(part.W, part.Pw, state.A, state.tmask)
        while part.block < part.block_ends.shape[0]:
            stop_at = part.block_ends[part.block]
            while part.pos < stop_at:
                up = _positive_edges(edge_list, pids, part.Pw)
                part.pos, part.need = gdmm_multilabel_pass(
                    samples, LabelEdges(E, n_edges, nbr_ptr, nbr, *up, self.fixed), duals, pool,
                    part.ids[:stop_at], part.pos, C, rho, rounds, part.stats,
                    layout.step_data, self.damping.transitions)
                if part.need:
                    return
            part.block += 1
            if deadline is not None and time.perf_counter() >= deadline:
                break
        part.Pw -= state.Pw
        part.Pw /= self.damping.transitions

    def _ensure_room(self, n_runs):
        state = self.state
        pool = state.pool
        free = pool.left.shape[0] - int(pool.top[0])
        live = int(pool.capacity.sum())
        if free < max(_MIN_FREE_SLOTS * n_runs, live // 4):
            state.compact(_MIN_FREE_SLOTS * n_runs)

    def round(self, rng, eta, stats, deadline, n_blocks):
        """One round: the draw, the partitions' passes, the merge and the
        multiplier step.

        Draws the permutation from ``rng``; adds the partitions' pass
        counters to ``stats``; a partition stops between its blocks once
        ``perf_counter()`` passes ``deadline`` (None: never).  Returns
        ``(res2, finished, local_time, merge_time)``: the squared constraint
        violation before the multiplier step, whether every partition
        finished its pass, and the seconds spent.
        """
        t0 = time.perf_counter()
        state = self.state
        parts = self._draw(rng, n_blocks)
        running, shares = parts, [1.0] * len(parts)
        self._ensure_room(len(parts))
        while running:
            views = region_views(state.pool, shares)
            self.threads.map(self._pass, running, views, [deadline] * len(running))
            close_regions(state.pool, views)
            running = [part for part in running if part.need]
            if running:
                # a part of the free slots filled: pack the pool with twice the
                # room asked for, shared in proportion to the asks (so every
                # partition gets past the sample it stopped at)
                shares = [float(part.need) for part in running]
                state.compact(int(sum(shares)))
                for part in running:
                    part.need = 0
        t1 = time.perf_counter()
        for part in parts:
            stats += part.stats
        self._merge(parts)
        C = self.params[0]
        res2 = gdmm_multilabel_multipliers(self.problem.Y, state.A, C, float(eta), state.tmask,
                                           state.pool)
        return (float(res2), all(part.finished for part in parts), t1 - t0,
                time.perf_counter() - t1)

    def _merge(self, parts):
        """Add the partitions' moves to ``W`` and the pair weights (in
        partition order) and set the next round's damping from them."""
        state = self.state
        merged_w, spread_w = self.layout.merge_copies(state.W, self.copies)
        self.copies = None
        start = state.Pw.copy()
        spread_v = 0.0
        for part in parts:
            state.Pw += part.Pw
            spread_v += squared_norm(part.Pw)
        damping = self.damping
        self.last_damping = (damping.weights, damping.transitions)
        damping.update(merged_w, spread_w, squared_distance(state.Pw, start), spread_v)

    def sync_pool(self):
        """(The state's pool is the partitions' own.)"""

    def close(self):
        self.threads.close()
