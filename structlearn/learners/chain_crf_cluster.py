"""Chain CRF training whose data live only on a ``dask.distributed`` cluster.

The training sequences are parts already encoded on the workers (futures of
``(Xcat, offsets, codes)``, e.g. built from the partitions of a
``dask.bag.Bag`` by :mod:`structlearn.estimators._dask_input`).
:func:`fit_chain_crf_cluster` asks each part for the (feature, label) pairs
and label bigrams it observes (:func:`part_pattern`), lays the parameter
vector out from their union (:func:`part_layout`, as a fit on all the data
at once would), turns every part into a likelihood run where it is
(:func:`part_run`), and runs L-BFGS (OWL-QN for an L1 penalty) as one task
on a worker, whose every evaluation sums the runs' values and gradients
(:class:`._chain_crf_dask.RemoteLikelihood`).  All of these are tasks: the
client holds neither the tokens nor anything of the parameter vector's size
but the weights it receives at the end."""

import numpy as np

from ._chain_crf_dask import RemoteLikelihood, whole_run
from ._chain_crf_lbfgs import minimize_chain_crf
from .chain_crf import (_ChainProblem, layout_problem, observed_pairs, observed_transitions,
                        uses_pair_storage)

__all__ = ["fit_chain_crf_cluster", "part_layout", "part_pattern", "part_run"]


def part_pattern(part, n_classes, pairs, bigrams):
    """What one part observes, on its worker: ``(keys, seen)``, the sorted
    int64 keys ``feature * K + label`` of its (feature, label) pairs (None
    unless ``pairs``) and its label bigrams, bool (K, K) (None unless
    ``bigrams``)."""
    Xcat, offsets, codes = part
    K = int(n_classes)
    keys = seen = None
    if pairs:
        prob = _ChainProblem(Xcat, offsets, codes, K, 0.0)
        ptr, lab = observed_pairs(prob)
        keys = np.repeat(np.arange(prob.d, dtype=np.int64), np.diff(ptr)) * K + lab
    if bigrams:
        seen = observed_transitions(offsets, codes, K)
    return keys, seen


def part_run(part, n_classes, layout):
    """One part's likelihood run (:func:`._chain_crf_dask.whole_run`, its
    tokens split where they are), on its worker, in the layout of
    :func:`.chain_crf.layout_problem`: ``layout = (stored, trans)``,
    ``stored`` the ``(pair_ptr, pair_label)`` when the weights are stored on
    the pairs, else None (dense rows; the client holds the unobserved ones
    at 0), ``trans`` the bigram pattern or None."""
    Xcat, offsets, codes = part
    stored, trans = layout
    if stored is None:
        prob = _ChainProblem(Xcat, offsets, codes, n_classes, 0.0, transitions=trans)
    else:
        prob = _ChainProblem(Xcat, offsets, codes, n_classes, 0.0, *stored, trans)
    return whole_run(prob)


def part_layout(n_features, n_classes, storage, *patterns):
    """The layout of the whole problem from every part's
    :func:`part_pattern`, on a worker: ``(observed, trans, stored)``, the
    observed pairs ``(pair_ptr, pair_label)`` (None: all pairs get
    weights), the bigram pattern (None: all bigrams), and ``observed`` again
    when the weights are stored on the pairs, else None (what
    :func:`part_run` needs)."""
    K, d = int(n_classes), int(n_features)
    keys = seen = None
    for part_keys, part_seen in patterns:
        if part_keys is not None:
            keys = part_keys if keys is None else np.union1d(keys, part_keys)
        if part_seen is not None:
            seen = part_seen if seen is None else seen | part_seen
    observed = stored = None
    if keys is not None:
        ptr = np.zeros(d + 1, dtype=np.int64)
        np.cumsum(np.bincount(keys // K, minlength=d), out=ptr[1:])
        observed = (ptr, keys % K)
        if uses_pair_storage(observed[1], d, K, storage):
            stored = observed
    return observed, seen, stored


class _Runs:
    """The runs' futures, carried into the optimizer's task as they are
    (dask would fetch the values of futures passed in a list)."""

    def __init__(self, futures):
        self.futures = list(futures)


def _minimize_on_a_worker(layout, runs, problem, start, options, verbose, monitor):
    """:func:`._chain_crf_lbfgs.minimize_chain_crf` as a task: the parameter
    vectors and the optimizer's state stay on this worker, the runs'
    evaluations are tasks of their own, and the weights come back."""
    from distributed import worker_client

    observed, seen, _ = layout
    d, K, n_seq, alpha, storage = problem
    prob = layout_problem(d, K, n_seq, alpha, observed, seen, storage)
    del layout, observed
    with worker_client() as client:
        for future in runs.futures:  # unpickled here without a client
            future.bind_client(client)
        prob.remote = RemoteLikelihood(client, runs.futures, broadcast=False)
        w, history, converged, n_iter = minimize_chain_crf(
            prob, prob.pack(*start), options, verbose=verbose, monitor=monitor)
        prob.remote = None
    W, T = prob.weights(w)
    return W, T, history, converged, n_iter


def fit_chain_crf_cluster(client, parts, *, n_features, n_classes, n_sequences, alpha,
                          options, all_states=True, all_transitions=True, W_init=None,
                          T_init=None, storage="auto", verbose=0, monitor=None):
    """L-BFGS (or OWL-QN) over parts of the data that stay on the workers.

    Everything of the size of the parameter vector is built and kept on
    the workers too: the union of the parts' patterns and the layout
    (:func:`part_layout`), and the optimizer, which runs as one task
    (its vectors and correction pairs on that task's worker) that submits
    the runs' evaluations.  The client sends the settings and receives the
    weights.  A worker lost mid-fit: its runs are computed again from their
    parts (dask keeps how); if it ran the optimizer, dask starts that task
    again elsewhere and the fit starts over from ``W_init``.  Under
    ``verbose`` the iterations are logged on that worker.

    Parameters
    ----------
    client : distributed.Client
    parts : list of Future
        Each of ``(Xcat, offsets, codes)``: a part's stacked token features
        (CSR, ``n_features`` columns), sequence offsets and label codes in
        ``[0, n_classes)``.  The list is emptied once the parts' runs are
        built, so that the workers release the parts.
    n_features, n_classes, n_sequences : int
        Over all the parts.
    alpha : float
        The L2 penalty (as :func:`.chain_crf.fit_chain_crf_lbfgs`).
    options : ._chain_crf_lbfgs.LbfgsOptions
    all_states, all_transitions, W_init, T_init, storage, verbose, monitor :
        As :func:`.chain_crf.fit_chain_crf_lbfgs` (``monitor`` runs on the
        optimizer's worker).

    Returns
    -------
    W : ndarray (K, d), or a CSR matrix (K, d) under pair storage
    T : ndarray (K, K)
    history : list of dict
        As :func:`.chain_crf.fit_chain_crf_lbfgs`, plus ``bytes_sent`` and
        ``bytes_received`` (between the optimizer and the runs, so far).
    converged : bool
    n_iter : int
    """
    from distributed import wait

    from ._dask_partitions import lost_errors

    if storage not in ("auto", "dense", "pairs"):
        raise ValueError(f"storage must be 'auto', 'dense' or 'pairs'; got {storage!r}")
    K, d = int(n_classes), int(n_features)
    patterns = [client.submit(part_pattern, part, K, not all_states, not all_transitions,
                              pure=False) for part in parts]
    layout = client.submit(part_layout, d, K, storage, *patterns, pure=False)
    stored = client.submit(_stored, layout, pure=False)
    runs = [client.submit(part_run, part, K, stored, pure=False) for part in parts]
    wait(runs)
    del patterns, stored
    parts.clear()  # the workers keep the runs only (dask recomputes a lost one)
    start = (W_init, T_init)
    if W_init is not None:  # a warm start's weights go to the workers as data
        start = client.scatter(start, hash=False)
    optimizer = client.submit(_minimize_on_a_worker, layout, _Runs(runs),
                              (d, K, int(n_sequences), float(alpha), storage), start,
                              options, verbose, monitor, pure=False)
    try:
        return optimizer.result()
    except lost_errors():
        if client.status in ("closing", "closed"):
            raise RuntimeError("the dask client was closed during the fit: the optimizer and "
                               "the likelihood's runs lived on its workers; fit again with an "
                               "open client") from None
        raise
    finally:
        optimizer.release()


def _stored(layout):
    """``(stored, trans)`` of a :func:`part_layout`: what a run needs."""
    return layout[2], layout[1]
