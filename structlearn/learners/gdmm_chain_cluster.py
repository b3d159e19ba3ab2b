"""GDMM chain training whose data live only on a ``dask.distributed`` cluster.

The training partitions are built on the workers from data already there
(:func:`remote_chain_partition`, called by the estimator on each partition
of a ``dask.bag.Bag``), and :func:`fit_gdmm_chain_cluster` runs the rounds
of :class:`._gdmm_chain_dask.DaskChainPartitions` over them: the client
holds only the weights, never the data or the duals.
"""

import time

import numpy as np

from ._gdmm_chain_dask import DaskChainPartitions, RemotePartition
from ._gdmm_chain_kernels import ChainData
from ._gdmm_chain_partitions import _Partition
from ._gdmm_chain_visits import search_table
from ._partitions import round_record
from ._ssvm_common import HistoryMonitor, chain_edges, check_schedule, warn_not_converged
from .gdmm_chain import GDMMChainState

__all__ = ["fit_gdmm_chain_cluster", "remote_chain_partition"]

def remote_chain_partition(problem, sigma, settings, float32, sublinear):
    """A :class:`RemotePartition` built where its data are (a dask worker),
    from a whole :class:`~._ssvm_common.ChainProblem` of its sequences: its
    duals start at zero, its weight rows at zero.  ``sigma``: float64 (d,),
    the partitions using each feature (over the whole cluster's data)."""
    K = problem.n_labels
    N = problem.n_tokens
    state = GDMMChainState(problem, sublinear)
    has_left, has_right = chain_edges(problem.offsets, N)
    chain = ChainData(problem.data, problem.indices, problem.indptr, problem.y,
                      problem.sq_norms(), has_left, has_right, problem.data)
    part = _Partition(chain, problem.offsets, 0, N, K, float32, sigma)
    part.init_search(state, sublinear, K)
    tau = search_table(np.zeros((K, K)), False)[0]
    return RemotePartition(part, state.slots, state.pairs, problem.offsets, settings, tau,
                           np.zeros((part.rows.shape[0], K), dtype=part.W.dtype))


class _ClusterWeights:
    """The weights of a fit whose duals live only on the workers."""

    def __init__(self, n_features, n_labels):
        self.W = np.zeros((n_features, n_labels))
        self.v = np.zeros((n_labels, n_labels))


def fit_gdmm_chain_cluster(client, partitions, *, n_features, n_labels, n_factors, C, eta,
                           max_iter, tol, rng, float32, verbose=0, callback=None,
                           check_every=1):
    """GDMM over partitions already on the workers (the data never on the client).

    Parameters
    ----------
    client : distributed.Client
    partitions : list of Future
        :class:`RemotePartition` futures (from :func:`remote_chain_partition`).
    n_features, n_labels : int
    n_factors : int
        Unigram plus bigram factors over all the partitions (the history's
        mean active-set size is per factor).
    C, eta, max_iter, tol, rng, verbose, callback, check_every :
        As :func:`.gdmm_chain.fit_gdmm_chain`.
    float32 : bool
        Whether the partitions' weight copies are float32.

    Returns
    -------
    W : ndarray (n_features, K), v : ndarray (K, K), history : list of dict,
    converged : bool
    """
    state = _ClusterWeights(n_features, n_labels)
    parts = DaskChainPartitions.on_workers(client, partitions, state, float32)
    monitor = HistoryMonitor(verbose, callback)
    schedule = check_schedule(check_every, tol)
    stats = np.zeros(3, dtype=np.int64)
    converged = False
    rel_gap = np.inf
    try:
        for it in range(max_iter):
            t0 = time.perf_counter()
            stats[:] = 0
            res2, local_time, merge_time, active = parts.round(rng, eta, stats)
            pass_time = time.perf_counter() - t0
            primal = dual = np.nan
            checking = schedule.due(it + 1, max_iter)
            if checking:
                parts.rebuild_weights()
                primal, dual = parts.certificate(C)
            stop = monitor.record(it + 1, primal, dual, float(np.sqrt(res2)),
                                  float(active) / max(n_factors, 1), stats[0], pass_time,
                                  overflow=int(stats[1] + stats[2]),
                                  **round_record(parts, local_time, merge_time))
            rel_gap = monitor.history[-1]["relative_gap"]
            if checking:
                schedule.checked(it + 1, rel_gap)
            if stats[1] + stats[2] == 0 and rel_gap <= tol:
                converged = True
                break
            if stop:
                break
        if not checking:
            parts.rebuild_weights()
    finally:
        parts.release()
    if not converged and len(monitor.history) == max_iter:
        warn_not_converged("GDMM", max_iter, rel_gap)
    return state.W, state.v, monitor.history, converged
