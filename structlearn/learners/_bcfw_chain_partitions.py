"""Partitioned BCFW rounds for chain SSVMs on threads, the partitions drawn anew each round.

A round draws a random permutation of the sequences and cuts it into ``P``
runs of about equal tokens.  Each run's BCFW pass (in the permutation's
order) moves a copy of the weight rows its tokens use and of the
transition table: each row's steps and line-search curvature counted as
many times as this round's partitions use the row, the table's ``P``
times (CoCoA+ adding, :mod:`._partitions`), so that no round lowers the
dual.  The copies' moves, with the damping undone, are added to the
weights.  (The damping measured from the last round's moves, as GDMM's
partitions take it, stays near ``P`` for BCFW's steps toward a vertex and
gave better and worse final gaps in turn on generated tasks:
BENCHMARKS.md.)  The blocks (token marginals, losses, expected transition
counts) belong to one sequence each and are written in place: the
partitions hold disjoint sequences, and every sequence has room for one
more visit's transition counts before the round
(:meth:`.bcfw.BCFWChainState.ensure_capacity`).

Why drawn anew each round: see :mod:`._gdmm_multilabel_threads` (fixed
partitions cost many more rounds on data whose samples share features).
"""

import time

import numpy as np

from ._bcfw_chain_kernels import BlockTransitions, bcfw_chain_pass
from ._chains import TrainingChains
from ._partition_kernels import RoundLayout
from ._partitions import PartitionThreads, n_threads, split_by_weight

__all__ = ["BCFWChainPartitions"]


class BCFWChainPartitions:
    """Rounds of BCFW passes over partitions of the sequences redrawn each round.

    Parameters
    ----------
    problem : ChainProblem
    state : BCFWChainState
        Its blocks and weights are updated in place.
    n_parts : int
        Partitions (>= 2, at most the sequences).
    C : float
    n_jobs : int or None
        Threads running the partitions (at most one per partition).  The
        iterates depend on the rounds' draws and ``n_parts`` only.
    """

    remote = False

    def __init__(self, problem, state, n_parts, C, n_jobs):
        self.problem = problem
        self.state = state
        self.n_parts = int(n_parts)
        self.C = float(C)
        self.layout = RoundLayout(problem.data, problem.indices, problem.indptr,
                                  problem.n_features)
        self.lengths = np.diff(problem.offsets)
        self.threads = PartitionThreads(n_threads(n_jobs, self.n_parts))
        self.copies = None

    def _draw(self, rng):
        """This round's partitions as sequence ids, and their layout."""
        offsets = self.problem.offsets
        order = rng.permutation(self.lengths.shape[0]).astype(np.int64)
        lengths = self.lengths[order]
        bounds = split_by_weight(lengths, self.n_parts)
        # the partitions' tokens, sequence after sequence
        first = np.repeat(offsets[order] - np.cumsum(lengths) + lengths, lengths)
        tokens = first + np.arange(int(lengths.sum()), dtype=np.int64)
        token_bounds = np.r_[0, np.cumsum(lengths)][bounds].astype(np.int64)
        self.layout.redraw(tokens, token_bounds)
        self.copies = self.layout.gather_copies(self.state.W)
        return [order[a:b] for a, b in zip(bounds[:-1], bounds[1:])]

    def _pass(self, k, sequences):
        """Partition ``k``'s pass on its copy of its weight rows; returns its
        undamped move of the transition table and its counters."""
        problem, state, layout = self.problem, self.state, self.layout
        rows = layout.part_rows(k)
        W = self.copies[layout.rows_ptr[k]:layout.rows_ptr[k + 1]]
        v = state.v.copy()
        v_sigma = float(self.n_parts)
        chains = TrainingChains(problem.data, layout.local, problem.indptr, problem.offsets,
                                problem.y)
        transitions = BlockTransitions(state.pr_start, state.pr_n, state.pr_a, state.pr_b,
                                       state.pr_v)
        scratch = (np.zeros_like(W), np.empty(rows.shape[0], dtype=np.int64),
                   np.zeros(rows.shape[0], dtype=np.uint8))
        stats = np.zeros(2)
        sigma = np.ascontiguousarray(layout.sigma[rows])
        bcfw_chain_pass(chains, sequences, self.C, W, v, state.mu, state.loss, transitions,
                        scratch, stats, (sigma, v_sigma))
        v -= state.v
        v /= v_sigma
        return v, stats

    def round(self, rng, stats):
        """One round: the draw (from ``rng``), the partitions' passes and the
        merge; adds the passes' counters to ``stats``.  Returns
        ``(local_time, merge_time)`` in seconds."""
        t0 = time.perf_counter()
        self.state.ensure_capacity()
        parts = self._draw(rng)
        moves = self.threads.map(self._pass, range(len(parts)), parts)
        t1 = time.perf_counter()
        state = self.state
        self.layout.merge_copies(state.W, self.copies)
        self.copies = None
        for v, part_stats in moves:
            state.v += v
            stats += part_stats
        return t1 - t0, time.perf_counter() - t1

    def close(self):
        self.threads.close()
