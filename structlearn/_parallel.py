"""Chunked parallel work over samples, on threads or through joblib.

Estimators split their samples into contiguous chunks and hand each chunk to
a module-level function (picklable, so that it also runs on process and
``dask.distributed`` back-ends: ``with joblib.parallel_config(backend="dask")``).
The default back-end is threads (a pool of this module's where joblib would
take its threading back-end): the compiled kernels release the GIL, and
nothing is copied.  Results are concatenated in sample order, so they do not
depend on ``n_jobs`` (each sample is computed by the same code either way).
"""

import contextlib
import functools
import itertools
import numbers
import os
import threading

import numpy as np

__all__ = ["check_n_jobs", "chunk_bounds", "iter_chunks", "map_chunks", "single_threaded_blas",
           "thread_count"]


def check_n_jobs(n_jobs):
    """Validate ``n_jobs`` as scikit-learn does: None, or a nonzero integer
    (negative counts back from the number of CPUs: -1 = all).

    Raises
    ------
    TypeError
        For a non-integer.
    ValueError
        For 0.
    """
    if n_jobs is None:
        return None
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, numbers.Integral):
        raise TypeError(f"n_jobs must be None or an integer, got {n_jobs!r}")
    if n_jobs == 0:
        raise ValueError("n_jobs == 0 has no meaning; use None or 1 for one job, -1 for all CPUs")
    return int(n_jobs)


def thread_count(n_jobs):
    """The threads ``n_jobs`` asks for (validated by :func:`check_n_jobs`):
    1 for None, ``cpu_count + 1 + n_jobs`` (at least 1) for a negative
    count, as in scikit-learn; without importing joblib (about 50 ms on a
    first call).  For work that runs on threads of its own, not through
    joblib's back-ends."""
    n_jobs = check_n_jobs(n_jobs)
    if n_jobs is None:
        return 1
    if n_jobs < 0:
        return max(1, (os.cpu_count() or 1) + 1 + n_jobs)
    return n_jobs


def chunk_bounds(weights, n_chunks):
    """Split items into ``n_chunks`` contiguous runs of about equal weight.

    Parameters
    ----------
    weights : ndarray of shape (n_items,)
        Work per item (e.g. tokens per sequence).
    n_chunks : int

    Returns
    -------
    bounds : ndarray of int64, shape (n_runs + 1,)
        Run ``r`` is items ``bounds[r]:bounds[r + 1]``; no run is empty.
    """
    n = weights.shape[0]
    if n == 0:
        return np.zeros(1, dtype=np.int64)
    cum = np.cumsum(np.asarray(weights, dtype=np.float64))
    targets = cum[-1] * np.arange(1, n_chunks) / n_chunks
    cuts = np.searchsorted(cum, targets, side="right")
    return np.unique(np.concatenate(([0], cuts, [n]))).astype(np.int64)


def map_chunks(func, chunks, n_jobs, progress=None, *, sharedmem=False):
    """``[func(*args) for args in chunks]``, in parallel when ``n_jobs`` asks
    for more than one job and there is more than one chunk.

    Parameters
    ----------
    func : callable
        A module-level function (picklable).
    chunks : list of tuple
        Its arguments per chunk.
    n_jobs : int or None
        As in scikit-learn; validated by :func:`check_n_jobs`.
    progress : (str, sequence of int), optional
        A description and the number of samples in each chunk: a progress
        bar advanced as chunks complete, when the configuration draws bars
        (:func:`structlearn.set_config`).
    sharedmem : bool, default=False
        ``func`` writes its results into arrays of the caller: run on
        threads whatever joblib back-end is configured (a process back-end
        such as loky or dask would write into copies and lose them).

    Returns
    -------
    results : list
        In the order of ``chunks``.
    """
    return list(iter_chunks(func, chunks, n_jobs, progress, sharedmem=sharedmem))


def iter_chunks(func, chunks, n_jobs, progress=None, *, sharedmem=False):
    """:func:`map_chunks` as a generator: each chunk's result in the order of
    ``chunks``, as soon as it is done, while later chunks still run; what
    the caller does with one result (under the GIL) overlaps their compiled
    kernels.  Same parameters; the caller must exhaust or close it (the
    BLAS stays single-threaded until then)."""
    n_jobs = check_n_jobs(n_jobs)
    bar = None
    sizes = itertools.repeat(0)
    if progress is not None:
        from ._progress_bar import make_bar

        desc, sizes = progress
        bar = make_bar(int(sum(sizes)), desc)
    serial = len(chunks) <= 1 or n_jobs in (None, 1)
    try:
        # several jobs, each with a multi-threaded BLAS, would oversubscribe
        # the cores (2 jobs on 2 cores predicted slower than 1 job)
        with contextlib.nullcontext() if serial else single_threaded_blas():
            if serial:
                results = (func(*args) for args in chunks)
            elif (threads := _default_threads(n_jobs, sharedmem)) is not None:
                results = _on_threads(func, chunks, threads)
            else:
                from joblib import Parallel, delayed

                results = Parallel(n_jobs=n_jobs, prefer="threads",
                                   require="sharedmem" if sharedmem else None,
                                   return_as="generator")(
                    delayed(func)(*args) for args in chunks)
            try:
                for size, result in zip(sizes, results):
                    if bar is not None:
                        bar.update(int(size))
                    yield result
            finally:
                if hasattr(results, "close"):
                    results.close()  # the chunks not started are dropped
    finally:
        if bar is not None:
            bar.close()


def _default_threads(n_jobs, sharedmem):
    """The threads to run chunks on where joblib would take its threading
    back-end (no other one configured with ``joblib.parallel_config``), else
    None."""
    from joblib import effective_n_jobs
    from joblib.parallel import ThreadingBackend, get_active_backend

    backend, _ = get_active_backend(prefer="threads", require="sharedmem" if sharedmem else None)
    if not isinstance(backend, ThreadingBackend):
        return None
    return max(1, effective_n_jobs(n_jobs))


def _on_threads(func, chunks, n_threads):
    """``func(*args)`` for each chunk on ``n_threads`` threads, the caller's
    among them, the results yielded in chunk order as each is done: the
    caller and ``n_threads - 1`` helper threads take the chunks in order,
    the caller whenever the result due next is still running (a pool of
    ``n_threads`` beside a caller busy with the results ran three threads
    on two cores: 4 % more time over 275,080 OCR words).  Results are waited
    for on events, where joblib's retrieval polls every 10 ms (a prediction
    of a few milliseconds took 14 ms on two threads).  A chunk's exception
    is raised at its turn; closing the generator drops the chunks not yet
    taken (those running end first)."""
    queue = _ChunksInOrder(func, chunks)
    helpers = [threading.Thread(target=queue.work_through, daemon=True)
               for _ in range(min(n_threads, len(chunks)) - 1)]
    for helper in helpers:
        helper.start()
    try:
        for k in range(len(chunks)):
            while not queue.done[k].is_set() and queue.take(Exception):
                pass
            queue.done[k].wait()
            yield queue.pop(k)
    finally:
        queue.close()
        for helper in helpers:
            helper.join()


class _ChunksInOrder:
    """Chunks that several threads take in order (see :func:`_on_threads`):
    each chunk's result or exception is kept until :meth:`pop` hands it
    over, and ``done[k]`` is set once chunk ``k`` has ended."""

    def __init__(self, func, chunks):
        self.func, self.chunks = func, chunks
        self.results = [None] * len(chunks)
        self.errors = [None] * len(chunks)
        self.done = [threading.Event() for _ in chunks]
        self._lock = threading.Lock()
        self._next = 0

    def take(self, kept):
        """Run the next chunk not taken yet (exceptions of type ``kept`` are
        kept for its turn, others propagate); False when none is left."""
        with self._lock:
            k = self._next
            if k >= len(self.chunks):
                return False
            self._next = k + 1
        try:
            self.results[k] = self.func(*self.chunks[k])
        except kept as exc:
            self.errors[k] = exc
        finally:
            self.done[k].set()
        return True

    def work_through(self):
        """A helper thread's loop: every exception is kept for the caller."""
        while self.take(BaseException):
            pass

    def pop(self, k):
        """Chunk ``k``'s result (raising its exception), no longer kept."""
        if self.errors[k] is not None:
            raise self.errors[k]
        result, self.results[k] = self.results[k], None
        return result

    def close(self):
        """No chunk is taken from now on."""
        with self._lock:
            self._next = len(self.chunks)


def progress_chunk_count(n_jobs, n_items, work=None):
    """Chunks to cut ``n_items`` samples into: one per job (``work``: as in
    :func:`n_chunks_for`), or, while progress bars are drawn, enough (up to
    100) for the bar to move.  Results never depend on the chunking."""
    from ._config import get_config

    n = n_chunks_for(n_jobs, work=work)
    if get_config()["progress_bar"] is not False:
        n = max(n, min(int(n_items), 100))
    return max(n, 1)


# chunks per job for work cut only to run in parallel (results never depend
# on the chunking): while one chunk holds the GIL (stacking its input) the
# others run compiled kernels, and a job that the machine slows down takes
# fewer chunks instead of holding up the rest
CHUNKS_PER_JOB = 4


# the most bytes one chunk of a prediction stacks and scores at a time (its
# input rows and per-token scores): a call over a million tokens then adds
# about this much per running job, not a copy of its whole input
CHUNK_BYTES = 16 * 2**20


def memory_chunk_count(nbytes):
    """Chunks enough for ``nbytes`` of per-chunk work to stay within
    :data:`CHUNK_BYTES` a chunk (at least 1)."""
    return max(1, -(-int(nbytes) // CHUNK_BYTES))


# the least work a chunk cut only to run in parallel gets, in token scores
# (tokens x labels): about a millisecond.  Handing a chunk to a thread, and
# each chunk's share of the work that holds the GIL, cost about as much
# (SequenceSSVM.predict over generated sparse sequences on two threads
# against one: 400 tokens and 12 labels 3.8 against 0.6 ms; 20,000 tokens
# 10.2 against 8.2 ms; 80,000 tokens 30.9 against 49.8 ms; 50 labels:
# 5,000 tokens 8.8 against 6.2 ms, 20,000 tokens 19.7 against 24.5 ms)
MIN_CHUNK_WORK = 1 << 17


def n_chunks_for(n_jobs, per_job=1, work=None):
    """How many chunks to cut for ``n_jobs``: ``per_job`` per job when
    there are several jobs (see :data:`CHUNKS_PER_JOB`), else 1; with
    ``work`` (token scores), at most one per :data:`MIN_CHUNK_WORK` of it."""
    from joblib import effective_n_jobs

    n_jobs = check_n_jobs(n_jobs)
    n = 1 if n_jobs is None else max(1, effective_n_jobs(n_jobs))
    n = 1 if n == 1 else n * per_job
    if work is not None:
        n = min(n, max(1, int(work) // MIN_CHUNK_WORK))
    return n


@functools.lru_cache(maxsize=1)
def _thread_pools():
    """The process's BLAS thread pools (numpy's, and scipy's that compiled
    kernels call), found once."""
    import scipy.linalg.cython_blas  # noqa: F401  (loads scipy's BLAS before the scan)
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def single_threaded_blas():
    """Context in which BLAS runs on one thread.

    Work whose matrix products are cut by the data (the grouped
    forward-backward's groups follow the chunks and blocks) gives the same
    bits for any ``n_jobs`` only on one BLAS thread: a threaded product
    splits its sums differently.  Entered by the calling thread around the
    parallel work, so that threads never restore another setting, and by
    each work unit, which holds it in process workers.
    """
    return _thread_pools().limit(limits=1, user_api="blas")
