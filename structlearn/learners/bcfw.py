"""Block-coordinate Frank-Wolfe (Lacoste-Julien et al., 2013) for chain structural SVMs.

The standard baseline: each step picks one training sequence, calls the
structured maximization oracle (loss-augmented Viterbi over all ``K``
labels) and moves that sequence's dual block toward the returned labeling
with an exact line search.  The duality gap is exact: the primal value is
recomputed from the weights and the dual value ``-1/2 ||w||^2 + sum_i l_i``
belongs to a feasible dual point.
"""

import time

import numpy as np

from ._bcfw_chain_kernels import BlockTransitions, bcfw_chain_pass
from ._lagged_checks import lagged_checks, plan_check
from ._partitions import round_record
from ._ssvm_common import ChainMonitor, check_schedule, sq_norm, warn_not_converged

__all__ = ["BCFWChainState", "fit_bcfw_chain"]


class BCFWChainState:
    """Per-sequence dual blocks (marginals, expected transition counts, losses) and weights."""

    def __init__(self, problem):
        N, K = problem.n_tokens, problem.n_labels
        off = problem.offsets
        y = problem.y
        self.signature = problem.signature()
        self.mu = np.zeros((N, K))
        self.mu[np.arange(N), y] = 1.0
        self.loss = np.zeros(problem.n_sequences)
        self.W = np.zeros((problem.n_features, K))
        self.v = np.zeros((K, K))
        self.n_iter = 0
        # true transition counts, deduplicated per sequence
        lengths = np.diff(off)
        seq_of_edge = np.repeat(np.arange(problem.n_sequences), np.maximum(lengths - 1, 0))
        left = np.ones(N, dtype=bool)
        left[off[1:] - 1] = False
        a = y[:-1][left[:-1]]
        b = y[1:][left[:-1]]
        key = (seq_of_edge * K + a) * K + b
        uniq, counts = np.unique(key, return_counts=True)
        seq = uniq // (K * K)
        self._init_pairs = (seq, (uniq // K) % K, uniq % K, counts.astype(np.float64))
        self.pr_n = np.bincount(seq, minlength=problem.n_sequences).astype(np.int64)
        self.lengths = lengths
        self._allocate(np.maximum(2 * lengths, 4))
        self.pr_a[self._slot_index(seq)] = self._init_pairs[1]
        self.pr_b[self._slot_index(seq)] = self._init_pairs[2]
        self.pr_v[self._slot_index(seq)] = self._init_pairs[3]
        del self._init_pairs

    def _allocate(self, caps):
        self.caps = caps.astype(np.int64)
        self.pr_start = np.zeros(caps.shape[0] + 1, dtype=np.int64)
        np.cumsum(self.caps, out=self.pr_start[1:])
        total = int(self.pr_start[-1])
        self.pr_a = np.zeros(total, dtype=np.int64)
        self.pr_b = np.zeros(total, dtype=np.int64)
        self.pr_v = np.zeros(total)

    def _slot_index(self, seq):
        """Positions for entries listed sequence by sequence (sorted by ``seq``)."""
        first = np.searchsorted(seq, seq, side="left")
        return self.pr_start[seq] + (np.arange(seq.shape[0]) - first)

    def ensure_capacity(self):
        """Make room for one more visit of every sequence (n_i - 1 new entries)."""
        need = self.pr_n + np.maximum(self.lengths - 1, 0)
        if np.all(need <= self.caps):
            return
        old = (self.pr_start.copy(), self.pr_a, self.pr_b, self.pr_v)
        caps = np.where(need > self.caps, 2 * need, self.caps)
        self._allocate(caps)
        seq = np.repeat(np.arange(self.pr_n.shape[0]), self.pr_n)
        src = old[0][seq] + (np.arange(seq.shape[0]) - np.searchsorted(seq, seq, side="left"))
        dst = self._slot_index(seq)
        self.pr_a[dst] = old[1][src]
        self.pr_b[dst] = old[2][src]
        self.pr_v[dst] = old[3][src]


def fit_bcfw_chain(problem, *, C, max_iter, tol, rng, state=None, verbose=0, callback=None,
                   check_every=1, n_jobs=None, training_partitions=1):
    """Train with BCFW; returns ``(W, v, history, state, converged)``.

    Stops when ``(primal - dual) / |primal| <= tol`` (measured after every
    ``check_every``-th pass and the last one, or when ``check_every``, a
    :class:`~._ssvm_common.CheckSchedule`, says; NaN in the other records)
    or after ``max_iter`` passes (ConvergenceWarning).  With
    ``training_partitions > 1`` each pass is a round of that many partitions
    of the sequences, drawn anew each round, on ``n_jobs`` threads
    (:mod:`._bcfw_chain_partitions`).  Large fits without partitions or
    ``callback`` take each check's value a few passes late, computed beside
    the passes on the ``n_jobs`` threads (:mod:`._lagged_checks`).
    """
    from ._partitions import check_training_partitions

    if state is None:
        state = BCFWChainState(problem)
    d, K = problem.n_features, problem.n_labels
    n_parts = check_training_partitions(training_partitions, problem.n_sequences, "sequences")
    partitions = None
    if n_parts > 1:
        from ._bcfw_chain_partitions import BCFWChainPartitions

        partitions = BCFWChainPartitions(problem, state, n_parts, C, n_jobs)
    else:
        scratch = (np.zeros((d, K)), np.empty(d, dtype=np.int64), np.zeros(d, dtype=np.uint8))
        damping = (np.ones(d), 1.0)
    stats = np.zeros(2)
    chains = problem.chains()
    monitor = ChainMonitor(problem, C, verbose, callback, n_jobs=n_jobs)
    lagged = lagged_checks(monitor, n_jobs, partitions, callback)  # or None
    converged = False
    rel_gap = np.inf
    schedule = check_schedule(check_every, tol)
    try:
        for it in range(max_iter):
            t0 = time.perf_counter()
            stats[:] = 0.0
            extra = {}
            if partitions is None:
                order = rng.permutation(problem.n_sequences).astype(np.int64)
                state.ensure_capacity()
                transitions = BlockTransitions(state.pr_start, state.pr_n, state.pr_a,
                                               state.pr_b, state.pr_v)
                bcfw_chain_pass(chains, order, float(C), state.W, state.v, state.mu,
                                state.loss, transitions, scratch, stats, damping)
            else:
                local_time, merge_time = partitions.round(rng, stats)
                extra = round_record(partitions, local_time, merge_time)
            pass_time = time.perf_counter() - t0
            state.n_iter += 1
            primal = dual = np.nan
            checking, starting = plan_check(lagged, schedule, it + 1, max_iter, tol)
            if checking:
                checked_dual = -0.5 * sq_norm(state.W, state.v) + state.loss.sum()
            if checking and not starting:
                primal, dual = monitor.primal(state.W, state.v), checked_dual
            stop = monitor.record(state.n_iter, primal, float(dual), 0.0, 1.0, stats[1],
                                  pass_time, block_gap_sum=float(stats[0]), **extra)
            if starting:  # the passes move W: a copy when they run beside the check
                lagged.start(it + 1, state.W.copy() if lagged.overlap is not None else state.W,
                             None, state.v, checked_dual)
            rel_gap = monitor.history[-1]["relative_gap"]
            if checking and not starting:
                schedule.checked(it + 1, rel_gap)
            if rel_gap <= tol:
                converged = True
                break
            if stop:
                break
    finally:
        if lagged is not None:
            lagged.close()
        if partitions is not None:
            partitions.close()
    if not converged and len(monitor.history) == max_iter:
        warn_not_converged("BCFW", max_iter, rel_gap)
    return state.W, state.v, monitor.history, state, converged
