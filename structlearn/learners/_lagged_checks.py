"""Checks of a chain fit whose value the fit takes a few passes later.

A check's primal value (loss-augmented Viterbi over every sequence,
:class:`~._ssvm_common.ChainMonitor`) reads only the weights, so it can run
on other threads while the solver's passes go on.  With
:class:`LaggedChecks` the check of pass ``t`` starts after pass ``t`` on the
weights of pass ``t`` (left unchanged, or a copy), and the fit takes its
value after pass ``t + CHECK_LAG``, a fixed pass, on one thread as on many
(one thread computes it at once and keeps it), so the passes, the checks and
the model do not depend on ``n_jobs`` or on timing.  A check that meets the
tolerance is confirmed by a check of the pass that takes it, done at once:
the fit stops on a certificate of the model it returns.

On worker threads (:class:`OverlappedPrimal`) the work is cut into small
chunks of sequences that the workers claim in turn; the caller claims the
chunks still left when it takes the value, so it never idles while a worker
finishes.  The hinges are summed in sequence order: the value is the
synchronous one, bit for bit.
"""

import concurrent.futures
import threading

import numpy as np

from .._parallel import chunk_bounds
from ._gdmm_chain_kernels import dual_from_repair
from ._partitions import n_threads
from ._ssvm_chain_kernels import (chain_hinges, hinge_sum, hinge_table, scaled_transitions,
                                  weights_regularizer)

__all__ = ["CHECK_LAG", "LAGGED_CHECKS_MIN_ENTRIES", "LaggedChecks", "OverlappedPrimal",
           "lagged_checks", "plan_check"]

# passes between the start of a check and the pass that takes its value
CHECK_LAG = 3
# chunks of sequences a check is cut into (claimed one at a time)
CHECK_CHUNKS = 32
# fits with at least this many token scores (tokens x labels) lag their
# checks; on smaller ones a check costs little and the CHECK_LAG passes a
# fit then runs past its certified pass would weigh more
LAGGED_CHECKS_MIN_ENTRIES = 1 << 20


class _PrimalJob:
    """One check: its weights, the chunks left to claim, the hinges."""

    def __init__(self, monitor, W, Wsp, v, bounds, repair):
        self.monitor = monitor
        self.repair = repair
        self.W, self.Wsp = W, Wsp
        self.vs = scaled_transitions(v, 1.0)  # a copy: the passes go on moving v
        self.bounds = bounds
        self.cols = None
        self.reg = self.dual = np.nan
        self.table_ok = False
        self.ready = threading.Event()  # the transition table is chosen
        self.lock = threading.Lock()
        self.next_chunk = 0
        self.cancelled = False

    def _claim(self):
        with self.lock:
            c = self.next_chunk
            if self.cancelled or c >= self.bounds.shape[0] - 1:
                return -1
            self.next_chunk = c + 1
            return c

    def drain(self):
        """Run chunks until none is left (any thread)."""
        m = self.monitor
        chains = m.problem.chains()
        while True:
            c = self._claim()
            if c < 0:
                return
            chain_hinges(self.W, self.Wsp, self.vs, self.cols, chains, 1.0,
                         self.bounds[c], self.bounds[c + 1], m._z, m._hinge)

    def first_worker(self):
        """Choose the transition table (timed on the first sequences), drain,
        then compute the regularizer and, with a repair, the dual value."""
        m = self.monitor
        try:
            self.cols = hinge_table(self.W, self.Wsp, self.vs, m.problem.chains(), 1.0, m._z,
                                    m._hinge)
            self.table_ok = True
        finally:
            self.ready.set()  # the caller never waits on a worker that failed
        self.drain()
        self.reg = weights_regularizer(self.W, self.Wsp, self.vs, 1.0)
        if self.repair is not None:
            self.dual = float(dual_from_repair(self.W, self.Wsp, *self.repair))

    def other_worker(self):
        self.ready.wait()
        self.drain()


class OverlappedPrimal:
    """Primal values of a chain fit's checks on worker threads.

    Parameters
    ----------
    monitor : ChainMonitor
        Its problem, ``C`` and hinge buffers (no other check may use them
        while one is running here).
    n_workers : int
        Worker threads (the caller's thread helps as well).
    """

    def __init__(self, monitor, n_workers):
        self.monitor = monitor
        self.n_workers = max(1, int(n_workers))
        self.bounds = chunk_bounds(np.diff(monitor.problem.offsets), CHECK_CHUNKS)
        self._pool = concurrent.futures.ThreadPoolExecutor(
            self.n_workers, thread_name_prefix="structlearn-check")
        self._job = None
        self._futures = []

    def start(self, W, Wsp, v, repair=None):
        """Start the check of the weights ``(W, v)`` (dense, ``Wsp`` None) or
        ``(Wsp, v)`` (sparse rows); they must stay unchanged until
        :meth:`value` or :meth:`cancel` (``v`` is copied here).  ``repair``:
        ``(vfeas, lin)`` of :func:`~._gdmm_chain_kernels.repair_transitions`
        (left unchanged as well) for the dual value, or None."""
        if self._job is not None:
            raise RuntimeError("a check is already running")
        job = _PrimalJob(self.monitor, W, Wsp, v, self.bounds, repair)
        self._job = job
        self._futures = [self._pool.submit(job.first_worker)]
        self._futures += [self._pool.submit(job.other_worker)
                          for _ in range(self.n_workers - 1)]

    def value(self):
        """The started check's ``(primal, dual)`` values (dual NaN without a
        repair; this thread takes the chunks left); a worker's exception is
        raised here."""
        job, self._job = self._job, None
        job.ready.wait()
        if job.table_ok:
            job.drain()
        concurrent.futures.wait(self._futures)
        for f in self._futures:
            f.result()
        # primal_from_hinges' sum, its regularizer computed by the worker
        return float(job.reg + self.monitor.C * hinge_sum(self.monitor._hinge)), job.dual

    def beside(self, here, there, *args):
        """``there(*args)`` on a worker while ``here()`` runs in this thread
        (no check running); returns ``there``'s value."""
        if self._job is not None:
            raise RuntimeError("a check is running")
        future = self._pool.submit(there, *args)
        try:
            here()
        finally:
            concurrent.futures.wait([future])
        return future.result()

    def cancel(self):
        """Stop the running check (the chunks under way end first)."""
        job, self._job = self._job, None
        if job is not None:
            with job.lock:
                job.cancelled = True
            concurrent.futures.wait(self._futures)

    def close(self):
        self.cancel()
        self._pool.shutdown(wait=True)


class _Pending:
    """A check started after pass ``n_pass`` (record ``index``): its dual
    value and, computed at once, its primal value (else NaN: on workers)."""

    def __init__(self, n_pass, index, primal, dual):
        self.n_pass, self.index, self.primal, self.dual = n_pass, index, primal, dual


class LaggedChecks:
    """The checks of a chain fit taken :data:`CHECK_LAG` passes late.

    Parameters
    ----------
    monitor : ChainMonitor
    n_jobs : int or None
        More than one thread: the primal values run on ``n_threads - 1``
        workers beside the passes (:class:`OverlappedPrimal`); else they are
        computed when the check starts.  The values are the same.
    """

    def __init__(self, monitor, n_jobs):
        self.monitor = monitor
        n = n_threads(n_jobs, CHECK_CHUNKS + 1)
        self.overlap = OverlappedPrimal(monitor, n - 1) if n > 1 else None
        self.pending = None

    def start(self, n_pass, W, Wsp, v, dual=np.nan, repair=None):
        """Start the check of pass ``n_pass`` (whose record is the last one):
        weights ``W`` or ``Wsp`` left unchanged until its value is taken (or
        copies), transitions ``v`` (copied), and the dual value, or GDMM's
        repaired transitions and linear term ``repair = (vfeas, lin)``
        (:func:`~._gdmm_chain_kernels.repair_transitions`; copied) that it
        is computed from, on a worker when there is one."""
        index = len(self.monitor.history) - 1
        if repair is not None:
            repair = (repair[0].copy(), float(repair[1]))
        if self.overlap is None:
            primal = self.monitor.primal(Wsp if Wsp is not None else W, v)
            if repair is not None:
                dual = dual_from_repair(W, Wsp, *repair)
        else:
            self.overlap.start(W, Wsp, v, repair)
            primal = np.nan
        self.pending = _Pending(n_pass, index, primal, float(dual))

    def take(self, n_pass, max_pass):
        """After pass ``n_pass``: ``(checked_pass, relative_gap)`` of the
        check started ``CHECK_LAG`` passes before (or of any check running,
        at the last pass ``max_pass``), its values written into its record;
        None when no value is due."""
        p = self.pending
        if p is None or (n_pass - p.n_pass < CHECK_LAG and n_pass < max_pass):
            return None
        self.pending = None
        primal, dual = p.primal, p.dual
        if self.overlap is not None:
            primal, worker_dual = self.overlap.value()
            dual = worker_dual if np.isnan(dual) else dual
        return p.n_pass, self.monitor.certify(p.index, primal, dual)

    def close(self):
        """Stop a check still running (after an error)."""
        self.pending = None
        if self.overlap is not None:
            self.overlap.close()


def plan_check(lagged, schedule, n_pass, max_pass, tol):
    """After pass ``n_pass`` of ``max_pass``: ``(checking, starting)``,
    whether the pass is checked, and whether that check is lagged (started
    now, its value taken later) rather than computed at once.

    Takes the value of a lagged check due now (``lagged``: a
    :class:`LaggedChecks`, or None for checks computed at once) into the
    ``schedule`` (:class:`~._ssvm_common.CheckSchedule`); one that meets
    ``tol`` is confirmed by a check of this pass computed at once, as is the
    last pass.  One lagged check runs at a time.
    """
    if lagged is None:
        return schedule.due(n_pass, max_pass), False
    taken = lagged.take(n_pass, max_pass)
    confirm = False
    if taken is not None:
        schedule.checked(*taken)
        confirm = taken[1] <= tol
    checking = (schedule.due(n_pass, max_pass) and lagged.pending is None) or confirm
    return checking, checking and not confirm and n_pass < max_pass


def lagged_checks(monitor, n_jobs, partitions, callback):
    """The :class:`LaggedChecks` of a chain fit with at least
    :data:`LAGGED_CHECKS_MIN_ENTRIES` token scores, without ``partitions``
    (the partitioned passes take every thread) and without ``callback`` (it
    reads each record as it is made); else None (checks computed at once)."""
    problem = monitor.problem
    if (partitions is None and callback is None
            and problem.n_tokens * problem.n_labels >= LAGGED_CHECKS_MIN_ENTRIES):
        return LaggedChecks(monitor, n_jobs)
    return None
