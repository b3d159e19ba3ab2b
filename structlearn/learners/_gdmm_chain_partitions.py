"""Partitioned GDMM passes for chains: one round = a local pass per partition.

The sequences are split into ``P`` contiguous runs of about equal tokens
(:mod:`._partitions`).  Each partition keeps, for the whole fit:

* its tokens' features with the feature ids renumbered to the rows it uses,
  and a copy of those rows of ``W`` (float32 when the serial passes would
  use float32 weights), refreshed from the merged weights at each round;
* a copy of the transition table with its own search structure (the
  indicator oracle's sorted summaries, or the dense search table),
  brought back to the merged table at each round by the entries that
  changed, the summaries built anew where many did
  (:func:`._gdmm_chain_kernels.refresh_transitions`, ``REBUILD_SHARE``);
* its factors' search back-off, written back to the state at the end.

A partition of at least ``TYPE_SPLIT_MIN_ENTRIES`` token scores steps its
factors in the order of a split pass (:mod:`._gdmm_chain_type_split`): its
unigram and bigram steps side by side where the fit has two threads per
partition, else one after the other, the same iterates either way (and on
``dask`` workers).

Its duals and multipliers are row slices of the state's arrays (the
partitions never share a token or an edge: they hold whole sequences).  A
round runs the local passes and each partition's multiplier step on the
threads, then merges: each partition's move of its weight rows, undamped
(``(copy - start) / sigma_f``), is added to ``W`` (on the threads, by
ranges of rows, the partitions in order), the copies take the merged rows
(both in one sweep over blocks of rows that stay in cache:
:func:`._gdmm_chain_kernels.merge_copies`; the next passes need no gather
unless ``W`` was rebuilt), and ``v = sum_j beta_j`` is rebuilt from the
duals.  The merge measures the moves' alignment, which sets the next
round's damping (:mod:`._damping`; each feature's ``sigma_f`` is at most
the partitions that use it).  The added moves carry the copies' rounding (float32
copies: about 1e-7 of ``W`` per round), so ``W`` is rebuilt exactly from
the duals (``W = sum_j x_j (x) alpha_j``) for each certificate and at the
end (:meth:`ChainPartitions.rebuild_weights`).
"""

import time

import numpy as np

from ._damping import MeasuredDamping, scale_steps, squared_distance
from ._gdmm_chain_kernels import (ChainData, ChainWeights, EdgePairs, PassWorkspace, TokenSlots,
                                  gather_rows, gdmm_chain_multipliers, gdmm_chain_pass,
                                  merge_copies, refresh_transitions, rows_to_moves,
                                  transitions_from_duals, weights_from_duals)
from ._gdmm_chain_type_split import TypeSplitPass, splits
from ._gdmm_chain_visits import SequenceMajorOrder, search_table
from ._partitions import (PartitionThreads, feature_sigmas, local_features, merge_block,
                          n_threads, split_by_weight)

__all__ = ["ChainPartitions", "build_partitions"]

# a partition's search structure over the transition table is built anew,
# rather than updated entry by entry, when more than 1 / REBUILD_SHARE of the
# table changed in a round (an update costs about 30x an entry of the build:
# at K = 1,000, 11 ms a build against 0.3 us an update)
REBUILD_SHARE = 32


# runs a split pass's two halves one after the other
_IN_TURN = PartitionThreads(1)


class _Partition:
    """One partition's data and local state (see the module docstring)."""

    def __init__(self, chain, offsets, t0, t1, n_labels, float32, feature_sigma):
        N = chain.y.shape[0]
        K = n_labels
        self.t0, self.t1 = int(t0), int(t1)
        n = self.t1 - self.t0
        p0, p1 = chain.indptr[t0], chain.indptr[t1]
        self.rows, local = local_features(chain.indices[p0:p1])
        data = chain.data[p0:p1]
        indptr = chain.indptr[t0:t1 + 1] - p0
        self.chain = ChainData(data, local, indptr, chain.y[t0:t1], np.zeros(n),
                               chain.has_left[t0:t1], chain.has_right[t0:t1],
                               np.empty_like(data))
        edges = np.flatnonzero(self.chain.has_right).astype(np.int64)
        self.factors = np.concatenate([np.arange(n, dtype=np.int64), n + edges])
        self.local_offsets = offsets - t0
        self.orders = SequenceMajorOrder(self.factors, self.local_offsets, n)
        self.global_factors = np.concatenate([np.arange(t0, t1, dtype=np.int64),
                                              N + t0 + edges])
        dtype = np.float32 if float32 else np.float64
        self.W = np.zeros((self.rows.shape[0], K), dtype=dtype)
        self.count = feature_sigma[self.rows]  # the partitions using each row's feature
        self.row_sigma = np.empty_like(self.count)
        self.sigma = None
        self.damp(np.inf)
        self.acc = np.empty(K, dtype=np.float32) if float32 else None

    def damp(self, sigma):
        """Scale each feature's moves and curvature by its damping, ``min(the
        partitions that use it, sigma)`` (:mod:`._damping`), in place."""
        if sigma != self.sigma:
            c = self.chain
            scale_steps(c.data, c.indices, c.indptr, self.count, sigma, self.row_sigma,
                        c.step_data, c.xnorm2)
            self.sigma = sigma

    def init_search(self, state, sublinear, K):
        """The partition's copy of the transition table, its search structure
        and its factors' back-off (from the state), and its pass workspace."""
        from ..oracles.inner_product import make_inner_workspace
        from ..oracles.sorted_tables import make_pair_workspace

        self.v = np.ascontiguousarray(state.v).ravel().copy()
        self.search, self.vstate = search_table(state.v, sublinear)
        backoff = np.zeros((2, 2 * (self.t1 - self.t0)), dtype=np.int64)
        backoff[:, self.factors] = state.backoff[:, self.global_factors]
        self.work = PassWorkspace(make_inner_workspace(K), make_pair_workspace(K, K),
                                  np.empty(0, dtype=np.int64), backoff,
                                  np.zeros(3, dtype=np.int64))
        # large partitions step unigram and bigram factors in the split order,
        # on a helper thread where the fit has one per partition (the same
        # iterates either way, on threads as on dask workers)
        self.split = (TypeSplitPass(self.local_offsets, self.work)
                      if splits(self.t1 - self.t0, K) else None)

    def local_pass(self, W, rows, slots, pairs, settings, seed, eta):
        """The partition's pass and multiplier step against the weight rows
        ``W[rows]`` (its rows in order); leaves the rows' undamped move in
        ``self.W`` and the pass counters in ``self.work.stats``; returns the
        squared consistency residual before the multiplier step."""
        gather_rows(W, rows, self.W)
        res2 = self.run_pass(slots, pairs, settings, seed, eta)
        rows_to_moves(W, rows, self.W, self.row_sigma)
        return res2

    def run_pass(self, slots, pairs, settings, seed, eta, helper=None):
        """The pass and multiplier step on the copy ``self.W`` as it stands
        (see :meth:`local_pass`); a split pass's bigram steps run on
        ``helper`` (a :class:`~._partitions.PartitionThreads`), or after its
        unigram steps in this thread."""
        rng = np.random.RandomState(seed)
        order = self.orders.draw(rng)
        nu = settings.n_partitions
        token_parts = (rng.randint(nu, size=self.t1 - self.t0).astype(np.int64)
                       if nu > 1 else None)
        self.work.stats[:] = 0
        if self.acc is None:
            weights, weights32 = ChainWeights(self.W, self.v, self.search), None
        else:
            weights = ChainWeights(np.zeros((0, self.W.shape[1])), self.v, self.search)
            weights32 = (self.W, self.acc)
        if self.split is not None:
            return self.split.run(self.chain, slots, pairs, weights, settings, order,
                                  token_parts, weights32, self.vstate, eta,
                                  helper or _IN_TURN)
        gdmm_chain_pass(self.chain, slots, pairs, weights, settings, self.work, order,
                        token_parts, None, weights32, self.vstate)
        return gdmm_chain_multipliers(self.chain, slots, eta)

    def refresh(self, v, tau):
        """Bring the table copy and its search structure back to ``v``."""
        return refresh_transitions(v, tau, self.v, self.search, self.vstate,
                                   v.shape[0] // REBUILD_SHARE)

    def slots(self, state):
        return TokenSlots(*(a[self.t0:self.t1] for a in state.slots))

    def pairs(self, state):
        return EdgePairs(*(a[self.t0:self.t1] for a in state.pairs))


def build_partitions(problem, state, chain, n_parts, settings, float32, sublinear):
    """The partitions of a chain problem: ``(parts, settings, tau)``.

    ``parts``: one :class:`_Partition` per run of sequences of about equal
    tokens (at most ``n_parts``), each with its search structures;
    ``settings``: ``settings`` with the transition table's damping (the
    number of partitions); ``tau``: the search table's tie-break alone.
    """
    K = problem.n_labels
    bounds = split_by_weight(np.diff(problem.offsets), n_parts)
    sigma = feature_sigmas(problem.indices, problem.indptr, problem.offsets[bounds],
                           problem.n_features)
    parts = [_Partition(chain, problem.offsets[s0:s1 + 1], problem.offsets[s0],
                        problem.offsets[s1], K, float32, sigma)
             for s0, s1 in zip(bounds[:-1], bounds[1:])]
    for part in parts:
        part.init_search(state, sublinear, K)
    tau = search_table(np.zeros((K, K)), False)[0]
    return parts, settings._replace(transition_sigma=float(len(parts))), tau


class ChainPartitions:
    """Rounds of partitioned GDMM passes over a chain problem, on threads.

    Parameters
    ----------
    problem : ChainProblem
    state : GDMMChainState
        Dense weights (``state.W``); its duals are updated in place.
    chain : ChainData
        The whole problem's pass data.
    n_parts : int
        Partitions (>= 2, at most the sequences).
    settings : PassSettings
        The serial passes' settings (``sigma`` is set to the partitions).
    float32 : bool
        Local weights in float32 (see :mod:`.gdmm_chain`).
    sublinear : bool
        Sorted bigram search (indicator oracle) or dense scans.
    xt : tuple
        The features by feature row ``(data, tokens, indptr)`` that ``W``
        is rebuilt from.
    n_jobs : int or None
        Threads running the partitions (at most one per partition); where
        it gives two per partition, each partition's split pass
        (:mod:`._gdmm_chain_type_split`) also has a helper thread for its
        bigram steps (the same iterates as without).
    """

    remote = False

    def __init__(self, problem, state, chain, n_parts, settings, float32, sublinear, xt,
                 n_jobs):
        self.state = state
        self.chain = chain
        self.xt = xt
        self.parts, self.settings, self.tau = build_partitions(problem, state, chain, n_parts,
                                                               settings, float32, sublinear)
        P = len(self.parts)
        self.threads = PartitionThreads(n_threads(n_jobs, P))
        # a helper thread per partition where n_jobs gives two threads to each
        self.helpers = ([PartitionThreads(2) for _ in self.parts]
                        if n_threads(n_jobs, 2 * P) >= 2 * P else [None] * P)
        # feature-row ranges for merging and rebuilding W on the threads
        self.row_bounds = split_by_weight(np.diff(xt[2]) + 1, P)
        # the copies in one array (each partition's a view of its block), so
        # that one kernel merges them row by row
        sizes = [part.rows.shape[0] for part in self.parts]
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        K = problem.n_labels
        self.copies = np.zeros((int(self.offsets[-1]), K), dtype=self.parts[0].W.dtype)
        for part, o0, o1 in zip(self.parts, self.offsets[:-1], self.offsets[1:]):
            part.W = self.copies[o0:o1]
        self.rows = np.concatenate([part.rows for part in self.parts])
        # the parts' dampings as views of one array that the merge reads
        self.row_sigma = np.concatenate([part.row_sigma for part in self.parts])
        for part, o0, o1 in zip(self.parts, self.offsets[:-1], self.offsets[1:]):
            part.row_sigma = self.row_sigma[o0:o1]
        self.damping = MeasuredDamping(P)
        self.last_damping = None
        self.block = merge_block(K, P, self.copies.itemsize)
        self._stale_copies = True  # gathered before the first passes

    @property
    def n_parts(self):
        return len(self.parts)

    def _local_pass(self, part, seed, eta, helper):
        state = self.state
        if self._stale_copies:
            gather_rows(state.W, part.rows, part.W)
        return part.run_pass(part.slots(state), part.pairs(state), self.settings, seed, eta,
                             helper)

    def _rebuild_rows(self, f0, f1):
        data, tokens, ptr = self.xt
        weights_from_duals(data, tokens, ptr[f0:f1 + 1], self.state.slots, self.state.W[f0:f1])

    def _merge_rows(self, f0, f1, norms):
        """Every partition's move added to the rows ``f0:f1`` of ``W`` in
        partition order (the sum does not depend on the threads), and the
        copies of those rows brought to the merged ones; the moves' norms
        added to ``norms`` (see :func:`._gdmm_chain_kernels.merge_copies`)."""
        merge_copies(self.state.W, self.rows, self.row_sigma, self.offsets, self.copies,
                     f0, f1, self.block, norms)

    def rebuild_weights(self):
        """``W = sum_j x_j (x) alpha_j`` from the duals (on the threads); the
        copies are gathered anew before the next passes."""
        b = self.row_bounds
        self.threads.map(self._rebuild_rows, b[:-1], b[1:])
        self._stale_copies = True

    def _refresh(self, part, v, v_start):
        """Bring the partition's table to the merged ``v``; returns its move's
        squared norm, undamped, from the round's start ``v_start``."""
        spread = squared_distance(part.v, v_start) / self.settings.transition_sigma ** 2
        part.refresh(v, self.tau)
        return spread

    def _damp(self, part):
        part.damp(self.damping.weights)

    def round(self, rng, eta, stats):
        """One round: local passes and multiplier steps, then the merge.

        Draws one seed per partition from ``rng``; adds the partitions'
        pass counters to ``stats``.  Returns ``(res2, local_time,
        merge_time, active)``: the squared consistency residual before the
        multiplier step (summed over the partitions), the seconds spent, and
        None (the caller counts the active sets in the state).
        """
        seeds = rng.randint(np.iinfo(np.int32).max, size=self.n_parts)
        t0 = time.perf_counter()
        res = self.threads.map(self._local_pass, self.parts, seeds,
                               [float(eta)] * self.n_parts, self.helpers)
        self._stale_copies = False
        t1 = time.perf_counter()
        state = self.state
        for part in self.parts:
            stats += part.work.stats
        b = self.row_bounds
        norms = np.zeros((b.shape[0] - 1, 2))
        self.threads.map(self._merge_rows, b[:-1], b[1:], norms)
        v = state.v.ravel()  # the state's (K, K) table, contiguous: a view
        v_start = v.copy()
        transitions_from_duals(state.pairs, self.chain.has_right, v)
        P = self.n_parts
        spread_v = self.threads.map(self._refresh, self.parts, [v] * P, [v_start] * P)
        self._next_damping(norms.sum(axis=0), squared_distance(v, v_start), sum(spread_v))
        return float(sum(res)), t1 - t0, time.perf_counter() - t1, None

    def _next_damping(self, norms_w, merged_v, spread_v):
        """Record the round's damping and set the next round's from its moves."""
        damping = self.damping
        self.last_damping = (damping.weights, damping.transitions)
        damping.update(float(norms_w[0]), float(norms_w[1]), float(merged_v), float(spread_v))
        self.settings = self.settings._replace(transition_sigma=damping.transitions)
        self.threads.map(self._damp, self.parts)

    def close(self):
        """Write the partitions' search back-off to the state; stop the threads."""
        for part in self.parts:
            self.state.backoff[:, part.global_factors] = part.work.backoff[:, part.factors]
        self.threads.close()
        for helper in self.helpers:
            if helper is not None:
                helper.close()
