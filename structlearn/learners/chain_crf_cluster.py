"""Chain CRF training whose data live only on a ``dask.distributed`` cluster.

The training sequences are parts already encoded on the workers (futures of
``(Xcat, offsets, codes)``, e.g. built from the partitions of a
``dask.bag.Bag`` by :mod:`structlearn.estimators._dask_input`).
:func:`fit_chain_crf_cluster` asks each part for the (feature, label) pairs
and label bigrams it observes, lays the parameter vector out on the client
from their union (as a fit on all the data at once would), turns every part
into a likelihood run where it is (:func:`part_run`), and minimizes with
L-BFGS (OWL-QN for an L1 penalty), each evaluation summing the runs' values
and gradients (:class:`._chain_crf_dask.RemoteLikelihood`).  The client
holds the parameters, the optimizer's vectors and the pairs' pattern,
never the tokens.  A run lost with its worker is computed again by dask
from its part (which is computed again from the bag if it went too).
"""

import numpy as np

from ._chain_crf_dask import RemoteLikelihood, whole_run
from ._chain_crf_lbfgs import minimize_chain_crf
from .chain_crf import (_ChainProblem, layout_problem, observed_pairs, observed_transitions,
                        uses_pair_storage)

__all__ = ["fit_chain_crf_cluster", "part_pattern", "part_run"]


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


def _observed_union(client, parts, K, pairs, bigrams):
    """``(keys, seen)`` of :func:`part_pattern` over all ``parts``, merged one
    part at a time on the client."""
    futures = [client.submit(part_pattern, part, K, pairs, bigrams, pure=False)
               for part in parts]
    keys = np.empty(0, dtype=np.int64) if pairs else None
    seen = np.zeros((K, K), dtype=bool) if bigrams else None
    for future in futures:
        part_keys, part_seen = future.result()
        future.release()
        if pairs:
            keys = np.union1d(keys, part_keys)
        if bigrams:
            seen |= part_seen
    return keys, seen


def fit_chain_crf_cluster(client, parts, *, n_features, n_classes, n_sequences, alpha,
                          options, all_states=True, all_transitions=True, W_init=None,
                          T_init=None, storage="auto", verbose=0, monitor=None):
    """L-BFGS (or OWL-QN) over parts of the data that stay on the workers.

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
        As :func:`.chain_crf.fit_chain_crf_lbfgs`.

    Returns
    -------
    W : ndarray (K, d), or a CSR matrix (K, d) under pair storage
    T : ndarray (K, K)
    history : list of dict
        As :func:`.chain_crf.fit_chain_crf_lbfgs`, plus ``bytes_sent`` and
        ``bytes_received`` (to and from the workers, so far).
    converged : bool
    n_iter : int
    """
    from distributed import wait

    K, d = int(n_classes), int(n_features)
    keys, seen = _observed_union(client, parts, K, not all_states, not all_transitions)
    observed = None
    if keys is not None:
        ptr = np.zeros(d + 1, dtype=np.int64)
        np.cumsum(np.bincount(keys // K, minlength=d), out=ptr[1:])
        observed = (ptr, keys % K)
        del keys
    prob = layout_problem(d, K, n_sequences, alpha, observed, seen, storage)
    stored = observed if observed is not None and uses_pair_storage(observed[1], d, K,
                                                                     storage) else None
    # the layout once to every worker, then one run per part where it is
    layout = client.scatter((stored, seen), broadcast=True, hash=False)
    runs = [client.submit(part_run, part, K, layout, pure=False) for part in parts]
    wait(runs)
    parts.clear()  # the workers keep the runs only (dask recomputes a lost one)
    prob.remote = RemoteLikelihood(client, runs)
    try:
        w, history, converged, n_iter = minimize_chain_crf(
            prob, prob.pack(W_init, T_init), options, verbose=verbose, monitor=monitor)
    finally:
        prob.remote = None  # the workers' runs are released
    W, T = prob.weights(w)
    return W, T, history, converged, n_iter
