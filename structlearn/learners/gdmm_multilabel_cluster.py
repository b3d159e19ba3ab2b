"""Multilabel GDMM training whose samples live only on a ``dask.distributed`` cluster.

The sample blocks are built on the workers from data already there (the
estimator's :func:`structlearn.estimators._dask_multilabel_input.multilabel_blocks_on_workers`),
and :func:`fit_gdmm_multilabel_cluster` runs the rounds of
:class:`._gdmm_multilabel_dask.MultilabelBlockRounds` over them: the client
holds the weights, never the samples or the duals.
"""

import numpy as np

from ._gdmm_multilabel_dask import MultilabelBlockRounds
from ._gdmm_multilabel_storage import edge_pair_ids
from ._partitions import round_record
from ._ssvm_common import HistoryMonitor, check_schedule
from ._gdmm_multilabel_state import _ENUM_BUDGET, label_adjacency
from .gdmm_multilabel import _BLOCKS_PER_PASS, _SAMPLE_ROUNDS, run_rounds

__all__ = ["fit_gdmm_multilabel_cluster"]


class _ClusterWeights:
    """The weights of a fit whose duals live only on the workers."""

    def __init__(self, n_features, n_labels):
        self.W = np.zeros((n_features, n_labels))
        self.Pw = np.zeros(n_labels * (n_labels - 1) // 2)
        self.n_iter = 0


class _ClusterCertificate:
    """What the blocks' certificate needs of the fit: ``C``, the edges' pair
    ids, whether to enumerate the exact objective (as the one-process
    certificate does) and the best dual value so far (never below 0, the
    zero dual's)."""

    def __init__(self, C, pids, n_samples, n_labels, n_edges):
        self.C = float(C)
        self.pids = pids
        self.enum_ok = n_edges == 0 or n_samples * 2.0 ** n_labels * n_labels <= _ENUM_BUDGET
        self.best_dual = 0.0


def fit_gdmm_multilabel_cluster(client, blocks, *, n_samples, n_features, E, C, rho, eta,
                                max_iter, tol, rng, verbose=0, callback=None, check_every=1,
                                max_time=None):
    """GDMM over sample blocks already on the workers (the samples never on the client).

    Parameters
    ----------
    client : distributed.Client
    blocks : list of Future
        :class:`._gdmm_multilabel_blocks.SampleBlock` futures, duals at zero
        (home blocks first: see :class:`MultilabelBlockRounds`).
    n_samples, n_features : int
        Over all the blocks (the features with the intercept column).
    E : ndarray of uint8 (L, L)
        Upper-triangular mask of the label edges.
    C, rho, eta, max_iter, tol, rng, verbose, callback, check_every, max_time :
        As :func:`.gdmm_multilabel.fit_gdmm_multilabel`.

    Returns
    -------
    W : ndarray (n_features, L), P : ndarray (L, L) upper triangle,
    history : list of dict, converged : bool
    """
    from ..inference.exact.binary_forest import rooted_forest

    L = E.shape[0]
    state = _ClusterWeights(n_features, L)
    edges, pids = edge_pair_ids(E)
    edge_data = (E, int(E.sum()), *label_adjacency(E), edges, pids)
    rounds = MultilabelBlockRounds(client, blocks, state, edge_data, C, rho, _SAMPLE_ROUNDS,
                                   rooted_forest(edges, L))
    cert = _ClusterCertificate(C, pids, n_samples, L, int(E.sum()))
    monitor = HistoryMonitor(verbose, callback)
    deadline = None if max_time is None else monitor.start + max_time
    stats = np.zeros(2, dtype=np.int64)

    def step(it):
        res2, finished, local_time, merge_time = rounds.round(rng, eta, stats, deadline,
                                                              _BLOCKS_PER_PASS)
        return res2, not finished, False, round_record(rounds, local_time, merge_time)

    try:
        converged = run_rounds(step, lambda: rounds.certificate(cert),
                               lambda: rounds.active / max(n_samples, 1), state, monitor, stats,
                               schedule=check_schedule(check_every, tol), max_iter=max_iter,
                               tol=tol, deadline=deadline)
    finally:
        rounds.close()
    P = np.zeros((L, L))
    P[np.triu_indices(L, 1)] = state.Pw
    return state.W, P, monitor.history, converged
