"""Partitioned multilabel GDMM training on a ``dask.distributed`` cluster.

The partitions of :mod:`._gdmm_multilabel_partitions` live on the workers
for the whole fit, each with its own unigram duals, active flags, pair pool
and weight copies (:class:`RemoteMultilabelPartition`).  Per round the
client sends each partition the rows of ``W`` its features use and the pair
weights, and adds the undamped moves it gets back.  The certificate is
assembled from per-partition parts computed on the workers (the hinge
losses of its samples: exact on a forest of label edges, else the
Lagrangian bound; the repaired pair duals' correction of the pair weights
and the duals' linear term); the exact unrelaxed objective of small loopy
problems (``primal_exact``) is not computed.  Faults: see
:mod:`._dask_partitions` (``W`` and the pair weights are rebuilt from
every partition's duals after a partition goes back to its copy).
"""

import time

import numpy as np
import scipy.sparse as sp

from ._dask_partitions import DaskPartitions
from ._gdmm_multilabel_kernels import gdmm_multilabel_dual, lp_hinge_bound
from ._gdmm_multilabel_partitions import build_partitions
from ._gdmm_multilabel_storage import _positive_edges, _ranks, joined_pools
from ._ssvm_common import sq_norm

__all__ = ["DaskMultilabelPartitions", "RemoteMultilabelPartition"]


class RemoteMultilabelPartition:
    """What a worker keeps of one multilabel partition.

    Parameters
    ----------
    part : _Partition
        Its samples, pool and weight copies.
    A, tmask : ndarray (n_p, L)
        Its rows of the unigram duals and active flags (copies).
    settings : tuple
        ``(edges, C, rho, rounds, P)``.
    forest : tuple or None
        ``(order, parent, edge)`` of the label edges' rooted forest, or None
        when the edges have a cycle.
    """

    def __init__(self, part, A, tmask, settings, forest):
        self.part = part
        self.A = A
        self.tmask = tmask
        self.settings = settings
        self.forest = forest
        self.local_rows = np.arange(part.rows.shape[0], dtype=np.int64)


def _remote_round(rp, W_rows, Pw, seed, eta, remaining, n_blocks):
    """One local pass (stopping after ``remaining`` seconds, None: never);
    returns ``(rp, (W moves, Pw moves, res2, finished, stats, active))``."""
    deadline = None if remaining is None else time.perf_counter() + remaining
    part = rp.part
    res2, finished = part.local_pass(W_rows, rp.local_rows, Pw, rp.A, rp.tmask, rp.settings,
                                     seed, eta, deadline, n_blocks)
    active = int(rp.tmask.sum() + part.pool.count.sum())
    return rp, (part.W.copy(), part.Pw.copy(), float(res2), bool(finished), part.stats.copy(),
                active)


def _remote_certificate(rp, W_rows, Pw, node_weight, C):
    """``(hinge_sum, correction, lin)`` of the partition's samples."""
    from ._multilabel_kernels import forest_hinges

    edges, _, rho, _, _ = rp.settings
    E, _, _, _, edge_list, pids = edges
    samples = rp.part.samples
    hinge = np.empty(samples.Y.shape[0])
    if rp.forest is not None:
        order, parent, _ = rp.forest
        forest_hinges(W_rows, samples.data, samples.indices, samples.indptr, samples.Y, order,
                      parent, node_weight, hinge)
    else:
        up_a, up_b, _ = _positive_edges(edge_list, pids, Pw)
        lp_hinge_bound(W_rows, Pw, E, samples.data, samples.indices, samples.indptr, samples.Y,
                       rho, rp.part.pool, up_a, up_b, hinge)
    correction = np.empty_like(Pw)
    L = samples.Y.shape[1]
    value = gdmm_multilabel_dual(np.zeros((0, L)), np.zeros_like(Pw), samples.Y, rp.A, float(C),
                                 rp.part.pool, correction)
    lin = -value - 0.5 * float(correction @ correction)
    return float(hinge.sum()), correction, lin


def _remote_weights(rp):
    """The partition's share of ``W`` (its rows) and of the pair weights."""
    s = rp.part.samples
    X = sp.csr_matrix((s.data, s.indices, s.indptr),
                      shape=(s.Y.shape[0], rp.part.rows.shape[0]))
    W = np.asarray(X.T @ rp.A)
    pool = rp.part.pool
    L = s.Y.shape[1]
    slots = np.repeat(pool.base, pool.count) + _ranks(pool.count)
    a, b = pool.left[slots], pool.right[slots]
    Pw = np.zeros(L * (L - 1) // 2)
    np.add.at(Pw, a * (2 * L - a - 1) // 2 + (b - a - 1), pool.dual[slots])
    return W, Pw


def _remote_duals(rp):
    return rp.A, rp.tmask, rp.part.pool


class DaskMultilabelPartitions(DaskPartitions):
    """Rounds of partitioned multilabel GDMM passes with the partitions on dask
    workers (the interface of :class:`._gdmm_multilabel_threads.ThreadMultilabelPartitions`).

    Parameters
    ----------
    problem, state, n_parts, edges, C, rho, rounds :
        As :class:`._gdmm_multilabel_threads.ThreadMultilabelPartitions`.
    forest : RootedForest or None
        The label edges' rooted forest (the certificate's), or None.
    client : distributed.Client
    """

    def __init__(self, problem, state, n_parts, edges, C, rho, rounds, forest, client):
        parts, settings = build_partitions(problem, state, n_parts, edges, C, rho, rounds)
        self.state = state
        self.rows = [part.rows for part in parts]
        self.bounds = [(part.s0, part.s1) for part in parts]
        self.forest = forest
        shape = None if forest is None else (forest.order, forest.parent, forest.edge)
        super().__init__(client, [
            RemoteMultilabelPartition(part, state.A[part.s0:part.s1].copy(),
                                      state.tmask[part.s0:part.s1].copy(), settings, shape)
            for part in parts])

    def round(self, rng, eta, stats, deadline, n_blocks):
        """One round; returns ``(res2, finished, local_time, merge_time)`` and
        sets ``self.active`` (NaN for a round that lost a partition)."""
        seeds = rng.randint(np.iinfo(np.int32).max, size=self.n_parts)
        state = self.state
        remaining = None if deadline is None else max(deadline - time.perf_counter(), 0.0)
        t0 = time.perf_counter()
        results = self.run_round(_remote_round,
                                 [(state.W[rows], state.Pw) for rows in self.rows],
                                 [(int(seed), float(eta), remaining, int(n_blocks))
                                  for seed in seeds])
        t1 = time.perf_counter()
        if results is None:
            self.active = np.nan
            return np.nan, False, t1 - t0, time.perf_counter() - t1
        res2 = 0.0
        active = 0
        finished = True
        for rows, (W_move, Pw_move, r2, done, st, act) in zip(self.rows, results):
            self.bytes_received += W_move.nbytes + Pw_move.nbytes
            state.W[rows] += W_move
            state.Pw += Pw_move
            res2 += r2
            finished &= done
            active += act
            stats += st
        self.active = active
        return res2, finished, t1 - t0, time.perf_counter() - t1

    def rebuild(self):
        shares = self.map(_remote_weights)
        state = self.state
        state.W[...] = 0.0
        state.Pw[...] = 0.0
        for rows, (W, Pw) in zip(self.rows, shares):
            self.bytes_received += W.nbytes + Pw.nbytes
            state.W[rows] += W
            state.Pw += Pw

    def certificate(self, cert):
        """``(primal, dual, primal_exact)`` from the partitions' parts at the
        current weights (``cert``: the fit's :class:`._Certificate`, whose
        best dual value it updates)."""
        state = self.state
        node_weight = np.zeros(state.A.shape[1])
        if self.forest is not None:
            f = self.forest
            has = f.edge >= 0
            node_weight[has] = state.Pw[cert.pids[f.edge[has]]]
        parts = self.map(_remote_certificate, [(state.W[rows], state.Pw, node_weight)
                                               for rows in self.rows],
                         [(cert.C,)] * self.n_parts)
        wsq = float(np.einsum("ij,ij->", state.W, state.W))
        Pfeas = state.Pw.copy()
        hinge = lin = 0.0
        for h, correction, part_lin in parts:
            hinge += h
            Pfeas += correction
            lin += part_lin
        primal = 0.5 * sq_norm(state.W, state.Pw) + cert.C * hinge
        dual = -(0.5 * (wsq + float(Pfeas @ Pfeas)) + lin)
        cert.best_dual = max(cert.best_dual, dual)
        exact = primal if self.forest is not None else np.nan
        return primal, cert.best_dual, exact

    def sync_pool(self):
        """(The pools stay on the workers until :meth:`close`.)"""

    def close(self):
        """Bring the partitions' duals, flags and pools into the state."""
        state = self.state
        if self.client_gone:  # a fit that raised for it: nothing to bring back
            self.release()
            return
        duals = self.map(_remote_duals)
        for (s0, s1), (A, tmask, _) in zip(self.bounds, duals):
            state.A[s0:s1] = A
            state.tmask[s0:s1] = tmask
        state.pool = joined_pools([pool for _, _, pool in duals])
        self.release()
