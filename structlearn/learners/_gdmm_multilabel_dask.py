"""Partitioned multilabel GDMM training on a ``dask.distributed`` cluster.

The sample blocks of :mod:`._gdmm_multilabel_blocks` live on the workers
for the whole fit, each with its unigram duals, active flags and pair pool;
each round pairs every partition's home block with a visiting block drawn
anew.  Per round the client sends each pair the rows of ``W`` its features
use, the pair weights and the round's damping, and adds the undamped moves
it gets back; how they added up sets the next round's damping
(:mod:`._damping`: the client keeps a copy of the rows they move for that).  The certificate is
assembled from per-partition parts computed on the workers (the hinge
losses of its samples: exact on a forest of label edges, else the
Lagrangian bound; the exact unrelaxed objective of small loopy problems
where one process enumerates it; the repaired pair duals' correction of the
pair weights and the duals' linear term).  Faults: see
:mod:`._dask_partitions` (``W`` and the pair weights are rebuilt from
every partition's duals after a partition goes back to its copy).
"""

import time

import numpy as np
import scipy.sparse as sp

from ._damping import MeasuredDamping, squared_distance, squared_norm, squared_row_distance
from ._dask_partitions import DaskPartitions, worker_addresses
from ._gdmm_multilabel_kernels import gdmm_multilabel_dual, lp_hinge_bound
from ._gdmm_multilabel_blocks import blocks_of, draw_pairing, paired_pass, pairing_rows
from ._gdmm_multilabel_storage import _positive_edges, _ranks, joined_pools
from ._ssvm_common import sq_norm

__all__ = ["DaskMultilabelPartitions", "MultilabelBlockRounds"]


def _remote_certificate(block, W_rows, Pw, node_weight, C, edges, rho, forest, enumerate_P):
    """``(hinge_sum, exact_hinge_sum, correction, lin)`` of the block's
    samples: their hinge losses at the weights (``W_rows``: the block's
    rows), exact on the label forest ``forest`` (``(order, parent)``) or else
    the Lagrangian bound; the exact ones by enumeration at the pair weights
    ``enumerate_P`` ((L, L), None: NaN); the repaired pair duals' correction
    of ``Pw`` and the duals' linear term."""
    from ._multilabel_kernels import forest_hinges, multilabel_hinge_sum

    E, _, _, _, edge_list, pids = edges
    samples = block.features()
    hinge = np.empty(block.n_samples)
    if forest is not None:
        order, parent = forest
        forest_hinges(W_rows, samples.data, samples.indices, samples.indptr, samples.Y, order,
                      parent, node_weight, hinge)
    else:
        up_a, up_b, _ = _positive_edges(edge_list, pids, Pw)
        lp_hinge_bound(W_rows, Pw, E, samples.data, samples.indices, samples.indptr, samples.Y,
                       rho, block.pool, up_a, up_b, hinge)
    correction = np.empty_like(Pw)
    L = samples.Y.shape[1]
    value = gdmm_multilabel_dual(np.zeros((0, L)), np.zeros_like(Pw), samples.Y, block.A,
                                 float(C), block.pool, correction)
    lin = -value - 0.5 * float(correction @ correction)
    exact = np.nan
    if enumerate_P is not None:
        exact = float(multilabel_hinge_sum(W_rows, enumerate_P, E, int(E.sum()), 1.0,
                                           samples.data, samples.indices, samples.indptr,
                                           samples.Y))
    return float(hinge.sum()), exact, correction, lin


def _remote_weights(block):
    """The block's share of ``W`` (its rows) and of the pair weights."""
    X = sp.csr_matrix((block.data, block.local, block.indptr),
                      shape=(block.n_samples, block.rows.shape[0]))
    W = np.asarray(X.T @ block.A)
    pool = block.pool
    L = block.Y.shape[1]
    slots = np.repeat(pool.base, pool.count) + _ranks(pool.count)
    a, b = pool.left[slots], pool.right[slots]
    Pw = np.zeros(L * (L - 1) // 2)
    np.add.at(Pw, a * (2 * L - a - 1) // 2 + (b - a - 1), pool.dual[slots])
    return W, Pw


def _remote_duals(block):
    return block.A, block.tmask, block.pool


def _rows_of(block):
    return block.rows


class MultilabelBlockRounds(DaskPartitions):
    """Rounds of partitioned multilabel GDMM passes over sample blocks on dask
    workers (the interface of :class:`._gdmm_multilabel_threads.ThreadMultilabelPartitions`).

    Parameters
    ----------
    client : distributed.Client
    blocks : list of Future
        :class:`._gdmm_multilabel_blocks.SampleBlock` futures on the workers
        (at least one; ``P = max(1, len(blocks) // 2)`` partitions).
    state : object
        Holds the merged weights ``W`` (d, L) and ``Pw`` (L (L - 1) / 2,),
        updated in place.
    edges : tuple
        ``(E, n_edges, nbr_ptr, nbr, edge_list, pids)``: the label edges.
    C, rho, rounds : float, float, int
        As in the one-process pass.
    forest : RootedForest or None
        The label edges' rooted forest (the certificate's), or None.
    """

    def __init__(self, client, blocks, state, edges, C, rho, rounds, forest):
        DaskPartitions.__init__(self, client, [])
        self.futures = list(blocks)
        self.block_rows = client.gather([client.submit(_rows_of, f, pure=False)
                                         for f in self.futures])
        self.state = state
        self.edges = edges
        self.rho = float(rho)
        self.forest = forest
        self.n_groups = max(1, len(blocks) // 2)
        self.settings = (edges, float(C), float(rho), int(rounds))
        self.active = 0
        self.damping = MeasuredDamping(self.n_groups)
        self.last_damping = None

    def round(self, rng, eta, stats, deadline, n_blocks):
        """One round; returns ``(res2, finished, local_time, merge_time)`` and
        sets ``self.active`` (NaN for a round that lost a partition)."""
        groups, seeds = draw_pairing(rng, self.n_parts)
        state, damping = self.state, self.damping
        rows, sigma = pairing_rows(self.block_rows, groups, state.W.shape[0], damping.weights)
        remaining = None if deadline is None else max(deadline - time.perf_counter(), 0.0)
        settings = self.settings + (damping.transitions,)
        t0 = time.perf_counter()
        results = self.run_round(
            paired_pass, [(state.W[r], state.Pw, r, sigma[r]) for r in rows],
            [(settings, int(seed), float(eta), remaining, int(n_blocks)) for seed in seeds],
            groups=groups)
        t1 = time.perf_counter()
        if results is None:
            self.active = np.nan
            return np.nan, False, t1 - t0, time.perf_counter() - t1
        res2 = 0.0
        active = 0
        finished = True
        moved = np.unique(np.concatenate(rows))
        W_start, Pw_start = state.W[moved], state.Pw.copy()
        spread_w = spread_v = 0.0
        for r, (W_move, Pw_move, r2, done, st, act) in zip(rows, results):
            self.bytes_received += W_move.nbytes + Pw_move.nbytes
            state.W[r] += W_move
            state.Pw += Pw_move
            spread_w += squared_norm(W_move.reshape(-1))
            spread_v += squared_norm(Pw_move)
            res2 += r2
            finished &= done
            active += act
            stats += st
        self.active = active
        self.last_damping = (damping.weights, damping.transitions)
        damping.update(squared_row_distance(state.W, moved, W_start), spread_w,
                       squared_distance(state.Pw, Pw_start), spread_v)
        return res2, finished, t1 - t0, time.perf_counter() - t1

    def rebuild(self):
        state = self.state
        state.W[...] = 0.0
        state.Pw[...] = 0.0
        for rows, (W, Pw) in zip(self.block_rows, self.map_in_turn(_remote_weights)):
            self.bytes_received += W.nbytes + Pw.nbytes
            state.W[rows] += W
            state.Pw += Pw

    def certificate(self, cert):
        """``(primal, dual, primal_exact)`` from the blocks' parts at the
        current weights (``cert``: the fit's certificate, with ``C``,
        ``pids``, ``enum_ok`` (whether the exact objective of loopy edges is
        cheap enough to enumerate) and ``best_dual``, which it updates)."""
        state = self.state
        node_weight = np.zeros(state.W.shape[1])
        forest = None
        if self.forest is not None:
            f = self.forest
            has = f.edge >= 0
            node_weight[has] = state.Pw[cert.pids[f.edge[has]]]
            forest = (f.order, f.parent)
        L = state.W.shape[1]
        P = None
        if self.forest is None and cert.enum_ok:
            P = np.zeros((L, L))
            P[np.triu_indices(L, 1)] = state.Pw
        parts = self.map(_remote_certificate,
                         [(state.W[rows], state.Pw, node_weight) for rows in self.block_rows],
                         [(cert.C, self.edges, self.rho, forest, P)] * self.n_parts)
        wsq = float(np.einsum("ij,ij->", state.W, state.W))
        Pfeas = state.Pw.copy()
        hinge = exact_hinge = lin = 0.0
        for h, h_exact, correction, part_lin in parts:
            hinge += h
            exact_hinge += h_exact
            Pfeas += correction
            lin += part_lin
        reg = 0.5 * sq_norm(state.W, state.Pw)
        primal = reg + cert.C * hinge
        dual = -(0.5 * (wsq + float(Pfeas @ Pfeas)) + lin)
        cert.best_dual = max(cert.best_dual, dual)
        exact = primal if self.forest is not None else reg + cert.C * exact_hinge
        return primal, cert.best_dual, exact

    def sync_pool(self):
        """(The pools stay on the workers.)"""

    def close(self):
        self.release()


class DaskMultilabelPartitions(MultilabelBlockRounds):
    """:class:`MultilabelBlockRounds` over a problem held on the client: its
    blocks are sent to the workers, and :meth:`close` brings their duals,
    flags and pools back into ``state`` (so a warm start goes on from them).

    Parameters
    ----------
    problem, state, n_parts, edges, C, rho, rounds :
        As :class:`._gdmm_multilabel_threads.ThreadMultilabelPartitions`.
    forest : RootedForest or None
    client : distributed.Client
    """

    def __init__(self, problem, state, n_parts, edges, C, rho, rounds, forest, client):
        workers = worker_addresses(client)
        if not workers:
            raise RuntimeError("the dask cluster has no workers to hold the training partitions")
        blocks, self.bounds = blocks_of(problem, state, n_parts)
        P = max(1, len(blocks) // 2)
        # home block p and the visitor that starts with it share a worker
        futures = [client.scatter(b, workers=[workers[(i % P) % len(workers)]], hash=False)
                   for i, b in enumerate(blocks)]
        super().__init__(client, futures, state, edges, C, rho, rounds, forest)

    def close(self):
        """Bring the blocks' duals, flags and pools into the state."""
        state = self.state
        if self.client_gone:  # a fit that raised for it: nothing to bring back
            self.release()
            return
        duals = self.map(_remote_duals)
        bounds = self.bounds
        for s0, s1, (A, tmask, _) in zip(bounds[:-1], bounds[1:], duals):
            state.A[s0:s1] = A
            state.tmask[s0:s1] = tmask
        state.pool = joined_pools([pool for _, _, pool in duals])
        self.release()
