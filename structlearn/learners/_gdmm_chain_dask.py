"""Partitioned GDMM chain training on a ``dask.distributed`` cluster.

The partitions of :mod:`._gdmm_chain_partitions` live on the workers for the
whole fit, each with its own duals, multipliers, search structures and
weight-row copy (:class:`RemotePartition`).  Per round the client sends each
partition the entries of its weight rows that changed since its copy was
last brought up to date (those the last merge moved; all of them after
``W`` is rebuilt from the duals), cast as its copy (float32 where the pass
is float32), and the transition table; it receives the non-zero entries of
the partition's undamped moves and the table's move, and adds them to ``W``
and ``v``.  The copies are then exactly the rows a thread would gather.  The certificate is
assembled from per-partition parts computed on the workers: the hinge
losses of its sequences (loss-augmented Viterbi), the repaired edge duals'
correction of the transition table and the duals' linear term; ``W`` and
``v`` are rebuilt from the partitions' duals for each certificate.

Faults: see :mod:`._dask_partitions` (a lost partition goes back to its
last copy, its duals and multipliers losing the rounds since; ``W`` and
``v`` are then rebuilt from every partition's duals, so the certificate
stays valid).
"""

import time

import numpy as np
import scipy.sparse as sp

from ._chains import TrainingChains
from ._damping import MeasuredDamping, squared_distance, squared_norm
from ._gdmm_chain_kernels import (ChainWeights, add_row_moves, gdmm_chain_dual,
                                  transitions_from_duals, weights_from_duals)
from ._gdmm_chain_partitions import build_partitions
from ._dask_partitions import DaskPartitions
from ._gdmm_chain_visits import grown

__all__ = ["DaskChainPartitions", "RemotePartition"]



class RemotePartition:
    """What a worker keeps of one partition: the partition (its data and
    search state) and its own slots and pairs.

    Parameters
    ----------
    part : _Partition
    slots : TokenSlots
    pairs : EdgePairs
        The partition's rows of the state's duals (copies).
    offsets : ndarray of int64
        Its sequences' token offsets, from 0.
    settings : PassSettings
    tau : ndarray
        The search table's tie-break.
    rows_copy : ndarray (d_p, K)
        The partition's copy of its weight rows, in the dtype its pass
        reads (kept up to date by each round's changed entries).
    """

    def __init__(self, part, slots, pairs, offsets, settings, tau, rows_copy):
        self.rows_copy = rows_copy
        self.part = part
        self.n_labels = part.W.shape[1]
        self.slots = slots
        self.pairs = pairs
        self.offsets = offsets
        self.settings = settings
        self.tau = tau
        self.local_rows = np.arange(part.rows.shape[0], dtype=np.int64)
        chain = part.chain
        by_row = sp.csr_matrix((chain.data, chain.indices, chain.indptr),
                               shape=(chain.y.shape[0], part.rows.shape[0])).T.tocsr()
        self.xt = (by_row.data, by_row.indices.astype(np.int64), by_row.indptr.astype(np.int64))

    def chains(self):
        c = self.part.chain
        return TrainingChains(c.data, c.indices, c.indptr, self.offsets, c.y)


def _remote_round(rp, changed, values, v, seed, eta, damping):
    """One local pass on a worker, after setting the entries ``changed`` (flat
    indices) of its weight rows to ``values``, under ``damping`` (the weight
    rows' and the table's, :mod:`._damping`); returns ``(rp, (moved, moves,
    dv, res2, stats, active, spread))``: the flat indices of the rows'
    non-zero undamped moves and the moves, the table's move, the squared
    residual, the pass counters, the summed slot and pair counts and the
    squared norms of the rows' and the table's moves."""
    part = rp.part
    part.damp(damping[0])
    rp.settings = rp.settings._replace(transition_sigma=damping[1])
    if changed is None:
        rp.rows_copy.ravel()[:] = values
    else:
        rp.rows_copy.ravel()[changed] = values
    part.refresh(v, rp.tau)
    res2 = part.local_pass(rp.rows_copy, rp.local_rows, rp.slots, rp.pairs, rp.settings, seed,
                           eta)
    dv = (part.v - v) / rp.settings.transition_sigma
    stats = part.work.stats.copy()
    has_right = part.chain.has_right != 0
    active = int(rp.slots.count.sum() + rp.pairs.count[has_right].sum())
    K = rp.n_labels
    full_slots = stats[1] > 0 or rp.slots.count.max() >= rp.slots.labels.shape[1]
    full_pairs = stats[2] > 0 or rp.pairs.count.max() >= rp.pairs.left_label.shape[1]
    if full_slots or full_pairs:
        rp.slots, rp.pairs = grown(rp.slots, rp.pairs, K, full_slots, full_pairs)
    flat = part.W.ravel()
    moved, moves = sparse_or_dense(flat, np.flatnonzero(flat))
    spread = (squared_norm(flat), squared_norm(dv))
    return rp, (moved, moves, dv, float(res2), stats, active, spread)


def sparse_or_dense(flat, selected):
    """``(indices, values)`` of the ``selected`` entries of ``flat``, or
    ``(None, flat)`` (all of them) where that is fewer bytes; int32 indices
    where they fit."""
    index_dtype = np.int32 if flat.shape[0] < 2**31 else np.int64
    sparse_bytes = selected.shape[0] * (np.dtype(index_dtype).itemsize + flat.itemsize)
    if sparse_bytes >= flat.nbytes:
        return None, flat.copy()
    return selected.astype(index_dtype), flat[selected]


def _remote_certificate(rp, W_rows, v, C):
    """The partition's certificate parts: ``(rp, (hinge_sum, correction,
    lin))`` (see :func:`._gdmm_chain_kernels.gdmm_chain_dual`); the weight
    rows, just rebuilt from the duals, also become the partition's copy."""
    rp.rows_copy[...] = W_rows  # cast as the copy's dtype
    from ._ssvm_chain_kernels import chain_hinges, hinge_table, scaled_transitions

    K = rp.n_labels
    vs = scaled_transitions(v.reshape(K, K), 1.0)
    chains = rp.chains()
    n_seq = rp.offsets.shape[0] - 1
    hinge = np.empty(n_seq)
    zbuf = np.empty(chains.labels.shape[0], dtype=np.int64)
    chain_hinges(W_rows, None, vs, hinge_table(W_rows, None, vs, chains, 1.0, zbuf, hinge),
                 chains, 1.0, 0, n_seq, zbuf, hinge)
    correction = np.empty(K * K)
    zeros = np.zeros(K * K)
    value = gdmm_chain_dual(ChainWeights(np.zeros((0, K)), zeros, zeros), None, rp.part.chain,
                            rp.slots, rp.pairs, float(C), correction)
    lin = -value - 0.5 * float(correction @ correction)
    return rp, (float(hinge.sum()), correction, lin)


def _remote_weights(rp):
    """The partition's share of ``W`` (its rows) and of ``v``."""
    K = rp.n_labels
    W = np.zeros((rp.part.rows.shape[0], K))
    weights_from_duals(*rp.xt, rp.slots, W)
    v = np.zeros(K * K)
    transitions_from_duals(rp.pairs, rp.part.chain.has_right, v)
    return W, v


def _rows_of(rp):
    return rp.part.rows


def _remote_duals(rp):
    return rp.slots, rp.pairs, rp.part.work.backoff


class DaskChainPartitions(DaskPartitions):
    """Rounds of partitioned GDMM passes with the partitions on dask workers.

    Parameters
    ----------
    problem, state, chain, n_parts, settings, float32, sublinear :
        As :class:`._gdmm_chain_partitions.ChainPartitions`.
    client : distributed.Client
    """

    def __init__(self, problem, state, chain, n_parts, settings, float32, sublinear, client):
        parts, settings, tau = build_partitions(problem, state, chain, n_parts, settings,
                                                float32, sublinear)
        self.rows = [part.rows for part in parts]
        self.bounds = [(part.t0, part.t1) for part in parts]
        remote = []
        for part in parts:
            first = np.searchsorted(problem.offsets, part.t0)
            stop = np.searchsorted(problem.offsets, part.t1)
            slots = type(state.slots)(*(a.copy() for a in part.slots(state)))
            pairs = type(state.pairs)(*(a.copy() for a in part.pairs(state)))
            remote.append(RemotePartition(part, slots, pairs,
                                          problem.offsets[first:stop + 1] - part.t0, settings,
                                          tau, state.W[part.rows].astype(part.W.dtype)))
        self._start(client, remote, state, float32)

    @classmethod
    def on_workers(cls, client, futures, state, float32):
        """Partitions already on the workers (``futures`` of
        :class:`RemotePartition`, duals at zero) for the weights ``state``
        (``W``, ``v``; no duals on the client: :meth:`close` brings none back)."""
        self = cls.__new__(cls)
        DaskPartitions.__init__(self, client, [])
        self.futures = list(futures)
        self.rows = client.gather([client.submit(_rows_of, f, pure=False) for f in futures])
        self.bounds = None
        self._start(client, None, state, float32)
        return self

    def _start(self, client, remote, state, float32):
        self.state = state
        self.float32 = bool(float32)
        self.K = state.W.shape[1]
        self.damping = MeasuredDamping(self.n_parts if remote is None else len(remote))
        self.last_damping = None
        # the entries of W changed since the partitions' copies were last
        # brought up to date (all of them after W is rebuilt from the duals)
        self.changed = np.zeros(state.W.shape, dtype=bool)
        self.all_changed = False
        if remote is not None:
            DaskPartitions.__init__(self, client, remote)

    def round(self, rng, eta, stats):
        """One round (see :meth:`._gdmm_chain_partitions.ChainPartitions.round`);
        returns ``(res2, local_time, merge_time, active)`` (NaN for the
        residual and the active sets of a round that lost a partition)."""
        seeds = rng.randint(np.iinfo(np.int32).max, size=self.n_parts)
        state = self.state
        v = np.ascontiguousarray(state.v).ravel().copy()  # sent to every partition
        # the moves are added to another array: with workers in this process a
        # sent array is shared, and a later partition's task may still read it
        v_merged = v.copy()
        W_start = state.W.copy()  # the merged move's norm, for the next damping
        totals = np.zeros(5)  # squared residual, active slots and pairs, merge seconds,
        # the partitions' moves' squared norms (rows, table)
        round_stats = np.zeros_like(stats)

        def merge(p, result):
            start = time.perf_counter()
            if p == 0:  # every copy now holds the rows as sent
                self.changed[...] = False
                self.all_changed = False
            moved, moves, dv, r2, st, act, spread = result
            rows = self.rows[p]
            self.bytes_received += moves.nbytes + dv.nbytes + (0 if moved is None
                                                               else moved.nbytes)
            if moved is None:
                moves = moves.reshape(rows.shape[0], self.K)
                add_row_moves(state.W, rows, moves, 0, rows.shape[0])  # no gathered copy
                self.changed[rows] |= moves != 0
            else:
                r, k = np.divmod(moved, self.K)
                state.W[rows[r], k] += moves  # distinct entries: no repeated index
                self.changed[rows[r], k] = True
            v_merged[...] += dv
            totals[0] += r2
            totals[1] += act
            totals[3:5] += spread
            round_stats[...] += st
            totals[2] += time.perf_counter() - start

        # the arrays are made as each partition's task is sent, and the moves
        # merged as each comes back: the client holds one partition's at a time
        t0 = time.perf_counter()
        damping = self.damping
        self.last_damping = (damping.weights, damping.transitions)
        ok = self.run_round(_remote_round, (self._changed_entries(rows) + (v,)
                                            for rows in self.rows),
                            [(int(seed), float(eta), self.last_damping) for seed in seeds],
                            consume=merge)
        elapsed = time.perf_counter() - t0
        if ok is None:
            return np.nan, elapsed - totals[2], totals[2], np.nan
        state.v[...] = v_merged.reshape(state.v.shape)
        damping.update(squared_distance(state.W.ravel(), W_start.ravel()), totals[3],
                       squared_distance(v_merged, v), totals[4])
        stats += round_stats
        return float(totals[0]), elapsed - totals[2], float(totals[2]), int(totals[1])

    def _changed_entries(self, rows):
        """``(flat indices, values)`` of the entries of ``W[rows]`` changed since
        the partition's copy was last brought up to date, its values cast as
        the copy's (float32 copies get the cast the gather would make)."""
        dtype = np.float32 if self.float32 else np.float64
        if not self.all_changed:
            changed = np.flatnonzero(self.changed[rows])
            if changed.shape[0] * (4 + np.dtype(dtype).itemsize) < (
                    rows.shape[0] * self.K * np.dtype(dtype).itemsize):
                r, k = np.divmod(changed, self.K)
                return changed.astype(np.int32), self.state.W[rows[r], k].astype(dtype)
        return None, self.state.W[rows].astype(dtype).ravel()

    def rebuild_weights(self):
        """``W`` and ``v`` from every partition's duals."""
        self.ensure()
        self.rebuild()

    def rebuild(self):
        self.all_changed = True
        state = self.state
        state.W[...] = 0.0
        v = np.zeros(self.K * self.K)
        for rows, (W, vp) in zip(self.rows, self.map_in_turn(_remote_weights)):
            self.bytes_received += W.nbytes + vp.nbytes
            add_row_moves(state.W, rows, W, 0, rows.shape[0])
            v += vp
        state.v[...] = v.reshape(state.v.shape)

    def certificate(self, C):
        """``(primal, dual)`` from the partitions' parts at the current weights."""
        state = self.state
        v = np.ascontiguousarray(state.v).ravel()
        parts = None
        while parts is None:  # a call that lost a partition rebuilt W: ask again
            parts = self.run_round(_remote_certificate,
                                   ((state.W[rows], v) for rows in self.rows),
                                   [(float(C),)] * self.n_parts, counts=False)
            v = np.ascontiguousarray(state.v).ravel()
        self.changed[...] = False  # the copies now hold the rebuilt rows
        self.all_changed = False
        wsq = float(np.einsum("ij,ij->", state.W, state.W))
        vfeas = v.copy()
        hinge = lin = 0.0
        for h, correction, part_lin in parts:
            hinge += h
            vfeas += correction
            lin += part_lin
        primal = 0.5 * (wsq + float(v @ v)) + float(C) * hinge
        dual = -(0.5 * (wsq + float(vfeas @ vfeas)) + lin)
        return primal, dual

    def close(self):
        """Bring the partitions' duals, multipliers and back-off into the state."""
        state = self.state
        if self.client_gone or self.bounds is None:  # nothing to bring back
            self.release()
            return
        duals = self.map(_remote_duals)
        A = max(s.labels.shape[1] for s, _, _ in duals)
        B = max(p.left_label.shape[1] for _, p, _ in duals)
        while state.slots.labels.shape[1] < A or state.pairs.left_label.shape[1] < B:
            state.grow(self.K, state.slots.labels.shape[1] < A,
                       state.pairs.left_label.shape[1] < B)
        for (t0, t1), (slots, pairs, backoff) in zip(self.bounds, duals):
            for dst, src in zip((*state.slots, *state.pairs), (*slots, *pairs)):
                dst[t0:t1] = 0  # the partition's lists may be narrower than the state's
                dst[(slice(t0, t1), *(slice(0, w) for w in src.shape[1:]))] = src
            n = t1 - t0
            N = state.slots.count.shape[0]
            state.backoff[:, t0:t1] = backoff[:, :n]
            state.backoff[:, N + t0:N + t1] = backoff[:, n:]
        self.release()
