"""Problem container and monitoring shared by the chain structural-SVM solvers."""

import hashlib
import logging
import time
from dataclasses import dataclass

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .._progress_bar import progress_tick
from .._warnings import warn_user
from .._parallel import CHUNKS_PER_JOB, chunk_bounds, map_chunks, n_chunks_for
from ._ssvm_chain_kernels import (_sq_sum, chain_hinges, chain_primal, hinge_table,
                                  primal_from_hinges, scaled_transitions, token_sq_norms)

__all__ = ["ChainProblem", "ChainMonitor", "CheckSchedule", "HistoryMonitor", "chain_edges",
           "content_digest", "sq_norm", "warn_not_converged"]

logger = logging.getLogger(__name__)


@dataclass
class ChainProblem:
    """Stacked training chains in the layout the kernels use.

    Attributes
    ----------
    data, indices, indptr : ndarray
        CSR token features (float64, int64, int64); ``N`` tokens, ``d`` features.
    offsets : ndarray of int64, shape (n_seq + 1,)
    y : ndarray of int64, shape (N,)
        True label codes in ``[0, n_labels)``.
    n_features, n_labels : int
    """

    data: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray
    offsets: np.ndarray
    y: np.ndarray
    n_features: int
    n_labels: int

    @property
    def n_tokens(self):
        return int(self.y.shape[0])

    @property
    def n_sequences(self):
        return int(self.offsets.shape[0] - 1)

    def chains(self):
        """The arrays as :class:`._chains.TrainingChains` (the kernels' view)."""
        from ._chains import TrainingChains

        return TrainingChains(self.data, self.indices, self.indptr, self.offsets, self.y)

    def sq_norms(self):
        """``||x_t||^2`` per token, float64 (N,)."""
        return token_sq_norms(self.data, self.indptr)

    def signature(self):
        """Fingerprint deciding whether a warm start may reuse the duals: the
        sizes and a digest of the features, the sequence boundaries and the
        labels (duals are tied to each token's true label)."""
        return (self.n_tokens, self.n_sequences, self.n_features, self.n_labels,
                content_digest(self.y, self.offsets, self.indptr, self.indices, self.data))


def content_digest(*arrays):
    """Digest (hex str) of the arrays' dtypes, shapes and contents (in C order).

    A warm start reuses duals only for the same problem; sums of the labels
    or of the feature values miss a relabeling that keeps them (two tokens
    swapping their labels).  Hashing costs about 15 ms per 10 MB of arrays.
    """
    h = hashlib.blake2b(digest_size=16)
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(a.view(np.uint8).reshape(-1) if a.size else b"")
    return h.hexdigest()


def chain_edges(offsets, n_tokens):
    """``has_left``, ``has_right`` (uint8, (N,)): token has a predecessor / successor."""
    has_left = np.ones(n_tokens, dtype=np.uint8)
    has_right = np.ones(n_tokens, dtype=np.uint8)
    starts = offsets[:-1]
    stops = offsets[1:]
    has_left[starts] = 0
    has_right[stops - 1] = 0
    return has_left, has_right


def sq_norm(*arrays):
    """Sum of the squared entries of all ``arrays``, on one thread.

    ``np.vdot`` hands arrays of 10,000 entries and more to BLAS threads,
    which keep spinning for a while after the call and take a core from
    the next pass's kernels on a small machine.
    """
    return float(sum(_sq_sum(np.ascontiguousarray(a, dtype=np.float64).ravel())
                     for a in arrays))


def _certificate_fields(iteration, primal, dual):
    """A record's ``objective``, ``primal``, ``dual``, ``gap`` and
    ``relative_gap`` (NaN where unchecked); a dual above the primal raises."""
    if dual > primal + 1e-9 * max(1.0, abs(primal)):  # False for NaN
        raise RuntimeError(
            f"invalid certificate after pass {iteration}: the dual value {dual!r} exceeds "
            f"the primal value {primal!r} (a lower bound above an upper bound); the "
            "training state is inconsistent, please report this"
        )
    gap = primal - dual if np.isfinite(dual) else np.nan
    return {"objective": primal, "primal": primal, "dual": dual, "gap": gap,
            "relative_gap": gap / max(abs(primal), 1e-12) if np.isfinite(gap) else np.nan}


class HistoryMonitor:
    """Keeps the per-iteration history records of a structural-SVM solver.

    Parameters
    ----------
    verbose : int
        Log one line per record at INFO level when > 0.
    callback : callable or None
        Called with each record; returning True asks the solver to stop.
    """

    def __init__(self, verbose=0, callback=None):
        self.verbose = verbose
        self.callback = callback
        self.history = []
        self.start = time.perf_counter()
        self.solver_time = 0.0

    def record(self, iteration, primal, dual, infeasibility, active, visited, pass_time, **extra):
        """Append one history record; returns True when ``callback`` asks to stop."""
        self.solver_time += pass_time
        cert = _certificate_fields(iteration, primal, dual)
        rec = {
            "iter": int(iteration),
            "time": time.perf_counter() - self.start,
            "objective": cert["objective"],
            "gap": cert["gap"],
            "solver_time": self.solver_time,
            "pass_time": pass_time,
            "primal": primal,
            "dual": dual,
            "relative_gap": cert["relative_gap"],
            "infeasibility": infeasibility,
            "active_set_size": active,
            "oracle_entries": int(visited),
        }
        rec.update(extra)
        self.history.append(rec)
        progress_tick(rec)
        if self.verbose and np.isfinite(primal):
            self._log_certificate(rec)
        elif self.verbose:  # a pass without a certificate: no gap to show
            logger.info(
                "iter %d: (gap not checked) infeas. %.3g |A| %.2f entries %d pass %.3fs "
                "elapsed %.2fs",
                rec["iter"], infeasibility, active, rec["oracle_entries"], pass_time,
                rec["time"],
            )  # fmt: skip
        if self.callback is not None:
            return bool(self.callback(rec))
        return False

    def certify(self, index, primal, dual):
        """Write a certificate computed later into the record ``history[index]``
        (made without one); returns its relative gap."""
        rec = self.history[index]
        rec.update(_certificate_fields(rec["iter"], primal, dual))
        if self.verbose:
            self._log_certificate(rec)
        return rec["relative_gap"]

    @staticmethod
    def _log_certificate(rec):
        logger.info(
            "iter %d: primal %.6g dual %.6g rel. gap %.3g infeas. %.3g |A| %.2f "
            "entries %d pass %.3fs elapsed %.2fs",
            rec["iter"], rec["primal"], rec["dual"], rec["relative_gap"], rec["infeasibility"],
            rec["active_set_size"], rec["oracle_entries"], rec["pass_time"], rec["time"],
        )  # fmt: skip

    def progress(self, iteration, block, n_blocks):
        """Ask ``callback`` between the blocks of a pass with a progress record
        (``partial=True``, ``block`` done of ``n_blocks``, no certificate: NaN
        objective and gap; not kept in ``history``); True asks to stop."""
        if self.callback is None:
            return False
        rec = {"iter": int(iteration), "time": time.perf_counter() - self.start,
               "objective": np.nan, "gap": np.nan, "partial": True, "checked": False,
               "block": int(block), "n_blocks": int(n_blocks)}
        return bool(self.callback(rec))


class ChainMonitor(HistoryMonitor):
    """Evaluates the primal objective from the weights alone and keeps history.

    The primal value is recomputed with loss-augmented Viterbi over all
    labels (never from solver state), so it is comparable across solvers.
    """

    def __init__(self, problem, C, verbose=0, callback=None, n_jobs=None):
        self.problem = problem
        self.C = float(C)
        self.n_jobs = n_jobs
        self._z = np.empty(problem.n_tokens, dtype=np.int64)
        self._hinge = np.empty(problem.n_sequences)
        super().__init__(verbose, callback)

    def primal(self, W, v, scale=1.0):
        """Primal objective; with ``n_jobs`` the loss-augmented Viterbi runs
        on chunks of sequences in threads (the hinges are summed in sequence
        order either way, so the value does not depend on ``n_jobs``).
        ``W``: the dense (d, K) weights or sparse rows
        (:mod:`structlearn.oracles.sparse_rows`)."""
        p = self.problem
        W, Wsp = (np.empty((0, v.shape[0])), W) if isinstance(W, tuple) else (W, None)
        n_chunks = n_chunks_for(self.n_jobs, CHUNKS_PER_JOB, p.n_tokens * v.shape[0])
        if n_chunks == 1:
            return float(chain_primal(W, Wsp, v, p.chains(), self.C, float(scale), self._z,
                                      self._hinge))
        vs = scaled_transitions(v, float(scale))
        bounds = chunk_bounds(np.diff(p.offsets), n_chunks)
        chains = p.chains()
        cols = hinge_table(W, Wsp, vs, chains, float(scale), self._z, self._hinge)
        map_chunks(chain_hinges, [(W, Wsp, vs, cols, chains, float(scale), a, b, self._z,
                                   self._hinge)
                                  for a, b in zip(bounds[:-1], bounds[1:])], self.n_jobs,
                   sharedmem=True)  # the hinges are written into self._hinge
        return float(primal_from_hinges(W, Wsp, v, float(scale), self.C, self._hinge))


class CheckSchedule:
    """Passes after which a solver evaluates its certificate (primal, dual, gap).

    Parameters
    ----------
    every : int
        Fixed interval: after every ``every``-th pass.
    adaptive : bool, default=False
        Also space the checks out while the last certified gap is far above
        ``tol``: after a check at pass ``p`` with relative gap ``g`` the next
        one comes ``LOOKAHEAD * p * (g / tol - 1)`` passes later, at least
        ``every`` and at most ``max(every, MAX_INTERVAL, MAX_SHARE * p)``
        passes.  The
        certified gaps of GDMM and BCFW fall roughly like ``1 / p``, so the
        stopping rule fires at most about ``LOOKAHEAD`` of the passes run
        after the gap first met ``tol``.  Deterministic (no timing), so a fit
        does not depend on the machine.
    tol : float
        The solver's relative-gap tolerance.

    The last pass (``max_iter``) is always checked.
    """

    # 0.2: replayed over the certified gaps of every pass of seven fits
    # (Porttinari, two chain look-alikes, OCR, bibtex, corel5k, a bibtex
    # look-alike) at tol 0.02, 0.01 and 0.005, the passes plus the checks
    # (weighed by their measured cost) came to 0.93-0.99x those of 0.1, the
    # stopping pass within 2 of it; 0.3, or a longest interval of 20,
    # overshoots some short multilabel fits (benchmarks/bench_check_schedule.py).
    # MAX_SHARE 0.25 (intervals above 10 only after 40 passes): 0.90-1.00x the
    # cost of none on those fits at tol 0.02-0.005, and 0.81-0.85x on fits of
    # 1,000,000 tokens (K = 1,000) whose checks cost about 6 passes (BENCHMARKS.md)
    LOOKAHEAD = 0.2
    MAX_INTERVAL = 10
    MAX_SHARE = 0.25

    def __init__(self, every, adaptive=False, tol=0.0):
        self.every = int(every)
        self.adaptive = bool(adaptive)
        self.tol = float(tol)
        self.next = self.every  # 1-based pass of the next check

    def due(self, n_pass, max_pass):
        """Whether pass ``n_pass`` (1-based) of ``max_pass`` ends with a check."""
        return n_pass >= self.next or n_pass == max_pass

    def checked(self, n_pass, rel_gap):
        """Record a check after pass ``n_pass`` that certified ``rel_gap``."""
        step = self.every
        if self.adaptive and rel_gap > self.tol:  # False for a NaN gap
            ratio = rel_gap / self.tol if self.tol > 0 else np.inf
            far = self.LOOKAHEAD * n_pass * (ratio - 1.0)
            longest = max(self.every, self.MAX_INTERVAL, self.MAX_SHARE * n_pass)
            step = int(min(max(far, self.every), longest))
        self.next = n_pass + step


def check_schedule(check_every, tol):
    """A :class:`CheckSchedule` from an int (fixed interval) or a schedule."""
    if isinstance(check_every, CheckSchedule):
        return check_every
    return CheckSchedule(check_every, tol=tol)


def warn_not_converged(solver, max_iter, gap):
    warn_user(
        f"{solver} did not reach the requested duality gap within max_iter={max_iter} "
        f"iterations (relative gap {gap:.3g}); increase max_iter or tol",
        ConvergenceWarning,
    )
