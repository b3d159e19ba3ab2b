"""Partitioned training: the samples split into P parts that step in parallel.

The structural SVMs' dual variables (and GDMM's multipliers) belong to one
sample each; the samples couple only through the weights.  A round of
partitioned training (CoCoA+, Ma, Smith, Jaggi et al. 2015, "adding" with
``sigma' = P``) gives each partition a copy of the weights it reads, runs one
local pass over the partition's own duals against that copy, and merges: the
weights become the sum of every partition's move.  In the local pass the
copy moves ``sigma'`` times each dual step and each step's curvature in the
weights is ``sigma'`` times theirs (``PassSettings.sigma``), which bounds
``||sum_p dw_p||^2 <= P sum_p ||dw_p||^2``: the merged point's objective is
at most the sum of the local objectives' decreases below the start, so a
round never increases the objective, whatever the overlap of the partitions'
features.  The certificate is taken on the merged whole, as for one process.
The learners set ``sigma'`` each round from the alignment of the last
round's moves instead (:mod:`._damping`), from ``P`` down to 1: a round
may then raise the objective, and the next one is damped more.

A partition's copy holds only the weight rows of the features its samples
use (its memory follows the partition, not the feature space), and its
own search structures; the duals stay where they are (row slices of the
state's arrays, so threads write them in place).

This module holds what the learners share: the split, the features' local
numbering and the thread pool that runs the rounds.
"""

import concurrent.futures
import contextlib
import numbers

import numpy as np

from .._parallel import check_n_jobs, chunk_bounds

__all__ = ["PartitionThreads", "active_dask_client", "check_training_partitions",
           "feature_sigmas", "local_features", "merge_block", "n_threads", "round_record",
           "split_by_weight"]


def check_training_partitions(n_parts, n_samples, what="samples"):
    """Validate a number of training partitions against the samples.

    Returns ``int(n_parts)`` (1 for None).

    Raises
    ------
    TypeError
        For a non-integer.
    ValueError
        For fewer than 1, or more partitions than ``n_samples``: one would
        hold no ``what`` (named in the message).
    """
    if n_parts is None:
        return 1
    if isinstance(n_parts, bool) or not isinstance(n_parts, numbers.Integral):
        raise TypeError(f"training_partitions must be None or an integer, got {n_parts!r}")
    if n_parts < 1:
        raise ValueError(f"training_partitions must be at least 1, got {n_parts}")
    if n_parts > n_samples:
        raise ValueError(
            f"training_partitions={n_parts} exceeds the {n_samples} training {what}: "
            f"partition {n_samples} (counting from 0) would hold no {what}")
    return int(n_parts)


def active_dask_client():
    """The ``distributed.Client`` of an active ``joblib.parallel_config(backend=
    "dask")``, or None: partitioned fits then keep their partitions on its
    workers."""
    from joblib.parallel import get_active_backend

    backend, _ = get_active_backend()
    if type(backend).__name__ != "DaskDistributedBackend":
        return None
    return backend.client


def round_record(partitions, local_time, merge_time):
    """The history items of a partitioned round: ``partitions``, ``local_time``,
    ``merge_time`` and, for partitions on dask workers, the bytes sent to and
    received from them and the partitions that went back to their copies, so
    far (``partitions``: the partitions of a round, ``n_groups`` where the
    remote units are sample blocks grouped anew each round), and, where
    the damping is measured (:mod:`._damping`), the round's ``damping`` of
    the weight rows and of the transitions (multilabel: the pair weights)."""
    record = dict(partitions=getattr(partitions, "n_groups", partitions.n_parts),
                  local_time=local_time, merge_time=merge_time)
    if getattr(partitions, "last_damping", None) is not None:
        record["damping"] = partitions.last_damping  # (weight rows, transitions or pairs)
    if partitions.remote:
        record.update(bytes_sent=partitions.bytes_sent, bytes_received=partitions.bytes_received,
                      partitions_recovered=partitions.recovered)
    return record


def n_threads(n_jobs, n_parts):
    """Threads for ``n_parts`` partitions under ``n_jobs`` (None: 1, ``-1``:
    every CPU), at most one per partition."""
    from joblib import effective_n_jobs

    n_jobs = check_n_jobs(n_jobs)
    return int(max(1, min(effective_n_jobs(1 if n_jobs is None else n_jobs), n_parts)))


# rows merged per block: a block's weight rows and every partition's copies
# of them take about this many bytes (they stay in cache through the merge)
MERGE_BLOCK_BYTES = 1 << 20


def merge_block(n_cols, n_parts, itemsize):
    """Weight rows per block of :func:`._gdmm_chain_kernels.merge_copies`:
    rows of ``n_cols`` float64 values and ``n_parts`` copies of ``itemsize``
    bytes per value in about :data:`MERGE_BLOCK_BYTES`."""
    return max(1, MERGE_BLOCK_BYTES // (n_cols * (8 + n_parts * itemsize)))


def split_by_weight(weights, n_parts):
    """Contiguous runs of samples of about equal ``weights`` (e.g. tokens):
    int64 bounds of length ``P + 1`` with ``P <= n_parts`` and no run empty."""
    return chunk_bounds(np.asarray(weights, dtype=np.float64), n_parts)


def local_features(indices):
    """The features a partition's samples use and their local numbering.

    Parameters
    ----------
    indices : ndarray of int, shape (nnz,)
        The partition's CSR feature indices.

    Returns
    -------
    rows : ndarray of int64, shape (d_p,)
        The global feature ids, increasing (row ``r`` of the local weights is
        row ``rows[r]`` of the global ones).
    local : ndarray of int64, shape (nnz,)
        ``indices`` renumbered into ``[0, d_p)``.
    """
    indices = np.asarray(indices, dtype=np.int64).reshape(-1)
    used = _used_mask(indices, int(indices.max(initial=-1)) + 1)
    rows = np.flatnonzero(used).astype(np.int64)
    position = np.zeros(used.shape[0], dtype=np.int64)
    position[rows] = np.arange(rows.shape[0], dtype=np.int64)
    return rows, position[indices]


def _used_mask(indices, n):
    """bool (n,): which of ``0..n-1`` occur in ``indices`` (O(nnz + n), where
    ``np.unique`` sorts)."""
    used = np.zeros(n, dtype=bool)
    used[indices] = True
    return used


def feature_sigmas(indices, indptr, row_bounds, n_features):
    """Per feature, the number of partitions whose samples use it.

    The bound ``||sum_p dw_p||^2 <= P sum_p ||dw_p||^2`` holds row by row of
    the weights with ``P`` replaced by the partitions that touch the row, so
    a feature used by one partition keeps its full step (``sigma_f = 1``) and
    only shared features are damped.

    Parameters
    ----------
    indices, indptr : ndarray of int
        CSR feature indices of all the rows (tokens or samples).
    row_bounds : ndarray of int64, shape (P + 1,)
        Partition ``p`` holds rows ``row_bounds[p]:row_bounds[p + 1]``.
    n_features : int

    Returns
    -------
    sigma : ndarray of float64, shape (n_features,)
        At least 1 (also for unused features).
    """
    count = np.zeros(n_features, dtype=np.int64)
    for r0, r1 in zip(row_bounds[:-1], row_bounds[1:]):
        count += _used_mask(indices[indptr[r0]:indptr[r1]], n_features)
    return np.maximum(count, 1).astype(np.float64)


class PartitionThreads(contextlib.AbstractContextManager):
    """A pool of threads that runs one call per partition and returns the
    results in partition order (the compiled passes release the GIL).  The
    caller's thread takes a call of every batch, so ``n_threads`` calls run
    side by side on ``n_threads - 1`` pool threads.

    Parameters
    ----------
    n_threads : int
        Threads (the partitions of the fit); 1 runs the calls in the caller.
    """

    def __init__(self, n_threads):
        self.n_threads = int(n_threads)
        self._pool = (concurrent.futures.ThreadPoolExecutor(self.n_threads - 1)
                      if self.n_threads > 1 else None)

    def map(self, func, *iterables):
        """``[func(*args) for args in zip(*iterables)]``, the last call in the
        caller's thread and the others on the pool's; an exception in any
        call is raised here (the first in partition order) after every call
        has ended (no partition is left running against state the caller
        goes on to use)."""
        calls = list(zip(*iterables))
        if self._pool is None or len(calls) < 2:
            return [func(*args) for args in calls]
        futures = [self._pool.submit(func, *args) for args in calls[:-1]]
        try:
            last, error = func(*calls[-1]), None
        except BaseException as exc:  # raised once the others have ended
            last, error = None, exc
        concurrent.futures.wait(futures)
        values = [f.result() for f in futures]
        if error is not None:
            raise error
        return values + [last]

    def beside(self, here, there):
        """``there()`` on a thread of the pool while ``here()`` runs in the
        caller (in turn without a pool); returns both values.  An exception in
        either is raised after both have ended."""
        if self._pool is None:
            try:
                value = here()
            finally:
                other = there()
            return value, other
        future = self._pool.submit(there)
        try:
            value = here()
        finally:
            concurrent.futures.wait([future])
        return value, future.result()

    def close(self):
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def __exit__(self, *exc):
        self.close()
        return False
