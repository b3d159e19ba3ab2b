"""Shared set-up, decoding and stopping logic of the loopy MAP solvers.

Every loopy solver (``gdmm``, ``gdmm_binary``, ``psdd``, ``fista``, ``scm``,
``ad3``, ``trn``) works on a *normalized* copy of the graph:

* scores are divided by ``scale`` (the largest finite absolute score), so
  step sizes, temperatures and penalties have scale-free defaults;
* ``-inf`` entries (hard constraints, evidence) are replaced by the finite
  constant ``-big`` with ``big = 2 (n_vars + n_factors) + 2`` (in normalized
  units, more than the whole finite range of any labeling).  Raising a score
  can only raise the optimum and every dual value, so a dual value of the
  modified problem is still a certified upper bound on the true optimum.
  Decoded labelings are always scored on the true graph, so a labeling that
  hits a forbidden entry scores ``-inf`` and is never reported over a
  feasible one.

Upper bounds are reported in the graph's own units (``scale * U``).
"""

from __future__ import annotations

import hashlib
import logging
import numbers
import time
from collections import OrderedDict

import numpy as np

from ..._compile_timer import thread_compile_seconds
from ...graphs._graph_kernels import score_labelings
from ...graphs.factor_graph import FactorGraph
from ...graphs.structure import variable_factors
from ._local_search_kernels import (IDLE, LOCAL_OPTIMUM, Walk, local_search, perturb_ball,
                                    walk_steps)
from .._budget import check_time_limit, resolve_max_iter
from .._progress import report
from ..result import MapResult

logger = logging.getLogger(__name__)

STATUSES = ("gap", "max_iter", "time_limit", "stall")


def check_graph(graph):
    if not isinstance(graph, FactorGraph):
        raise TypeError(f"graph must be a FactorGraph, got {type(graph).__name__}")


def check_params(method, params, defaults):
    """Merge ``params`` into ``defaults``; reject unknown names and bad values."""
    unknown = set(params) - set(defaults)
    if unknown:
        raise TypeError(
            f"method {method!r} got unexpected parameter(s): {', '.join(sorted(unknown))}; "
            f"accepted: {', '.join(sorted(defaults))}"
        )
    out = dict(defaults)
    out.update(params)
    # the solve's clock starts here, so set-up and first-call compilation
    # count against the time limit
    out["start_time"] = time.perf_counter()
    out["time_limit"] = check_time_limit(out["time_limit"])
    out["max_iter"] = resolve_max_iter(out["max_iter"], out["time_limit"])
    integer(out, "max_iter")
    for name in ("stall_iter", "bound_stall_iter"):
        if name in out:
            out[name] = integer(out, name, minimum=0)
    nonnegative(out, "tol")
    cutoff = out.get("cutoff")
    if cutoff is not None and (isinstance(cutoff, bool) or not isinstance(cutoff, numbers.Real)
                               or np.isnan(cutoff)):
        raise ValueError(f"cutoff must be a number or None, got {cutoff!r}")
    for name in ("verbose", "local_search"):
        if name in out and not isinstance(out[name], (bool, numbers.Integral)):
            raise TypeError(f"{name} must be a bool or int, got {out[name]!r}")
    return out


def integer(params, name, minimum=1):
    """``params[name]`` as an int ``>= minimum`` (bools rejected)."""
    v = params[name]
    if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {v!r}")
    return int(v)


def nonnegative(params, name):
    """``params[name]`` as a float ``>= 0`` (bools and NaN rejected)."""
    v = params[name]
    if isinstance(v, bool) or not isinstance(v, numbers.Real) or not v >= 0:
        raise ValueError(f"{name} must be a non-negative number, got {v!r}")
    return float(v)


def positive(params, name, allow_none=False):
    v = params[name]
    if v is None and allow_none:
        return v
    if isinstance(v, bool) or not isinstance(v, numbers.Real) or not (v > 0 and np.isfinite(v)):
        raise ValueError(f"{name} must be a positive finite number, got {v!r}")
    return float(v)


def iterated_conditional_modes(graph, labels, sweeps=50, neighbours=None, scratch=None):
    """Local search on ``graph``'s scores, in place: iterated conditional
    modes (at most ``sweeps`` sweeps over the variables).

    Parameters
    ----------
    graph : FactorGraph
    labels : ndarray of int64, shape (n_vars,)
        Changed in place.
    sweeps : int
    neighbours : tuple of ndarray or None
        ``variable_factors(graph)`` where already built.
    scratch : ndarray of float64, shape (max_states,), or None
    """
    if neighbours is None:
        neighbours = variable_factors(graph)
    if scratch is None:
        scratch = np.zeros(max(graph.max_states, 1))
    local_search(tuple(graph.arrays()), *neighbours, labels, sweeps, scratch)


class Problem:
    """Normalized, finite copy of a graph plus the layout of edge messages."""

    def __init__(self, graph):
        self.graph = graph
        arrs = graph.arrays()
        unary = graph.unary
        data = graph.table_data
        fin = np.concatenate([unary[np.isfinite(unary)], data[np.isfinite(data)]])
        scale = float(np.max(np.abs(fin))) if fin.size else 1.0
        if not scale > 0:
            scale = 1.0
        self.scale = scale
        self.big = 2.0 * (graph.n_vars + graph.n_factors) + 2.0
        u = unary / scale
        u[~np.isfinite(u)] = -self.big
        d = data / scale
        d[~np.isfinite(d)] = -self.big
        self.unary = u
        self.table_data = d
        edge_sizes = graph.n_states[graph.scope_vars]
        self.edge_offsets = np.zeros(edge_sizes.shape[0] + 1, dtype=np.int64)
        np.cumsum(edge_sizes, out=self.edge_offsets[1:])
        self.n_msg = int(self.edge_offsets[-1])
        self.edge_factor = np.repeat(
            np.arange(graph.n_factors, dtype=np.int64), graph.factor_orders
        )
        self.var_indptr, self.var_factors = variable_factors(graph)
        self.degree = np.diff(self.var_indptr)
        # edges of each variable (CSR over the same indptr as var_factors)
        self.var_edges = np.ascontiguousarray(
            np.argsort(graph.scope_vars, kind="stable").astype(np.int64)
        )
        self.max_order = int(graph.factor_orders.max()) if graph.n_factors else 0
        self.true_arrays = arrs
        self.prob = (
            graph.n_states,
            graph.unary_offsets,
            self.unary,
            graph.scope_indptr,
            graph.scope_vars,
            graph.table_ids,
            graph.table_offsets,
            self.table_data,
            self.edge_offsets,
        )
        self.lab = np.zeros(max(self.max_order, 1), dtype=np.int64)
        self.zf = np.zeros(graph.n_factors)
        kmax = max(graph.max_states, 1)
        self._cand = np.zeros(kmax)

    def score(self, labels):
        out = np.empty(1)
        score_labelings(*self.true_arrays, labels[None, :], out)
        return float(out[0])

    def improve(self, labels, sweeps=50):
        """Local search on the true scores, in place: iterated conditional
        modes (at most ``sweeps`` sweeps over the variables)."""
        iterated_conditional_modes(self.graph, labels, sweeps,
                                   (self.var_indptr, self.var_factors), self._cand)

    def new_walk(self, labels, rng):
        """An iterated local search's state (:class:`._local_search_kernels.Walk`)
        whose walker is a copy of ``labels`` (made an ICM optimum at its first
        step); the best labeling is ``labels`` with its score.  ``rng`` (a
        numpy ``Generator``) seeds its random stream."""
        g = self.graph
        n, labels = g.n_vars, np.asarray(labels, dtype=np.int64)
        seed = np.array([rng.integers(1, 2**63)], dtype=np.uint64)
        return Walk(labels.copy(), labels.copy(), labels.copy(),
                    np.array([-np.inf, self.score(labels)]), np.zeros(2, dtype=np.int64),
                    np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64),
                    np.zeros(n, dtype=np.uint8), np.zeros(n), np.zeros(max(g.max_states, 1)),
                    seed)

    @staticmethod
    def restart_walk(walk, labels):
        """Move ``walk``'s walker to ``labels`` (made an ICM optimum at the
        next step), its idle count to 0."""
        walk.walker[:] = labels
        walk.scores[0] = -np.inf  # (scored with its first step)
        walk.counters[LOCAL_OPTIMUM] = walk.counters[IDLE] = 0

    def walk(self, walk, *, end=None, max_steps=None, max_ball=40, idle_limit=None):
        """Iterated local search steps (:func:`._local_search_kernels.walk_steps`)
        until ``end`` (a ``time.perf_counter()`` time), ``max_steps`` steps, or
        ``walk``'s idle count reaches ``idle_limit``, whichever comes first
        (None: no such limit).  Without ``end`` the result depends only on
        ``walk``.  Returns the steps taken."""
        done, chunk = 0, 1
        idle_limit = np.iinfo(np.int64).max if idle_limit is None else int(idle_limit)
        while max_steps is None or done < max_steps:
            if end is not None and time.perf_counter() >= end:
                break
            steps = chunk if max_steps is None else min(chunk, max_steps - done)
            t0 = time.perf_counter()
            taken = walk_steps(tuple(self.true_arrays), self.var_indptr, self.var_factors, walk,
                               steps, max_ball, idle_limit)
            done += taken
            if taken < steps:  # the idle limit
                break
            per_step = (time.perf_counter() - t0) / steps
            chunk = int(min(WALK_MAX_CHUNK, max(1, WALK_CHUNK_SECONDS / max(per_step, 1e-9))))
        return done

    def perturbed(self, labels, rng, max_ball=40):
        """Copy of ``labels`` with a random ball of variables relabelled at random."""
        g = self.graph
        out = labels.copy()
        if g.n_vars == 0:
            return out
        size = int(rng.integers(3, max(4, min(max_ball, g.n_vars) + 1)))
        if not hasattr(self, "_seen"):
            self._seen = np.zeros(g.n_vars, dtype=np.int64)
            self._queue = np.zeros(g.n_vars, dtype=np.int64)
        perturb_ball(g.n_states, g.scope_indptr, g.scope_vars, self.var_indptr,
                     self.var_factors, out, int(rng.integers(g.n_vars)), size,
                     rng.random(size), self._seen, self._queue)
        return out


WALK_CHUNK_SECONDS = 2e-3  # an iterated local search looks at the clock about this often
WALK_MAX_CHUNK = 64         # ... and after this many steps at most
WALK_IDLE_RESTART = 2000    # steps without a better walker before the walk restarts


class Tracker:
    """Best labeling, best bound, history and the stopping rule."""

    def __init__(self, problem, method, params):
        self.problem = problem
        self.method = method
        self.max_iter = int(params["max_iter"])
        self.time_limit = params["time_limit"]
        # iterations aim to end by this time, a little before the limit, so
        # that closing the solve (decoding, the result) stays inside it
        self.deadline = (None if self.time_limit is None
                         else self.time_limit - min(0.02, 0.02 * self.time_limit))
        self.tol = float(params["tol"])
        cutoff = params.get("cutoff")
        self.cutoff = -np.inf if cutoff is None else float(cutoff)
        self.stall_iter = int(params.get("stall_iter", 0) or 0)
        self.bound_stall_iter = int(params.get("bound_stall_iter", 0) or 0)
        self.local = bool(params.get("local_search", True))
        self.verbose = int(params.get("verbose", 0))
        self.t0 = params.get("start_time", time.perf_counter())
        self._compiled0 = thread_compile_seconds()
        n = problem.graph.n_vars
        self.labels = np.zeros(n, dtype=np.int64)
        self.score = -np.inf
        self.ub = np.inf
        self.history = []
        self.n_iter = 0
        self.status = "max_iter"
        self._last_gain = 0
        self._step_end = 0.0  # elapsed time at the end of the previous iteration
        self._iter_time = 0.0  # solver time of the last iteration (polish excluded)
        self.polish = float(params.get("polish", 0.0)) if self.local else 0.0
        if not 0.0 <= self.polish <= 10.0:
            raise ValueError(f"polish must lie in [0, 10], got {self.polish!r}")
        self._polish_time = 0.0
        self._polish_misses = 0  # polish rounds in a row without a better incumbent
        self._last_ub_gain = 0
        self._walk = None  # the iterated local search's state (Problem.new_walk)
        self._rng = np.random.default_rng(0)
        self._recent = OrderedDict()

    def out_of_time(self):
        """Whether the time limit has passed (for solvers with long inner loops)."""
        return self.deadline is not None and time.perf_counter() - self.t0 >= self.deadline

    def offer(self, labels):
        """Score a decoded labeling (after local search) and keep the best.

        A labeling offered recently is not searched again (the local search
        is deterministic): decoders often repeat themselves between
        iterations, and on large domains one search costs as much as a
        solver iteration.
        """
        lab = np.array(labels, dtype=np.int64, copy=True)
        key = hashlib.blake2b(lab.tobytes(), digest_size=16).digest()
        if key in self._recent:
            self._recent.move_to_end(key)
            return self._recent[key]
        s = self._offer(lab)
        self._recent[key] = s
        if len(self._recent) > 16:
            self._recent.popitem(last=False)
        return s

    def _offer(self, lab):
        if self.local and lab.size:
            self.problem.improve(lab)
        s = self.problem.score(lab) if lab.size else 0.0
        if s > self.score or (self.score == -np.inf and self.n_iter == 0):
            if s > self.score + 1e-12 * max(1.0, abs(s)):
                self._last_gain = self.n_iter
            self.score = s
            self.labels = lab
        return s

    def bound(self, ub_normalized):
        """Offer a certified upper bound in normalized units."""
        ub = float(ub_normalized) * self.problem.scale
        if np.isnan(ub):
            return
        if ub < self.ub:
            if ub < self.ub - 1e-9 * max(1.0, abs(ub)):
                self._last_gain = self.n_iter
            if ub < self.ub - 1e-6 * max(1.0, abs(ub)):
                self._last_ub_gain = self.n_iter
            self.ub = ub
        return ub

    def count_iteration(self, upper_bound):
        """One outer iteration of a caller that runs no LP solver through this
        tracker (branch and bound polishing its incumbent), with its best
        certified bound in the graph's units: drives the polish shares."""
        if np.isfinite(upper_bound):
            self.bound(upper_bound / self.problem.scale)
        self.n_iter += 1

    def rel_gap(self):
        if not (np.isfinite(self.ub) and np.isfinite(self.score)):
            return np.inf
        return (self.ub - self.score) / max(1.0, abs(self.ub))

    def polish_incumbent(self, reserve=None, stalled=False):
        """Iterated local search (:meth:`Problem.walk`): perturb a random
        ball of variables of a walking labeling (initially the incumbent),
        re-optimize locally, move when the result is not worse; after 2000
        steps without gain the walk restarts from the incumbent with up to a
        third of it relabelled.
        Runs while its total time stays below ``polish`` times the solver's
        (numba compilation left out of both: a first call would otherwise
        search for as long as its kernels compiled; 4x that once the bound
        has not improved by 1e-6 for 50 iterations;
        halved for each of up to 4 rounds in a row that did not improve the
        incumbent while the bound still moves, so that an instance the LP
        certifies does not pay for a search that finds nothing).  With a time
        limit it ends ``reserve`` seconds before the deadline (default: the
        last solver iteration's time); ``stalled``: the caller knows that its
        bound has stalled (4x share)."""
        if not self.polish or not np.isfinite(self.score) or self.problem.graph.n_vars < 2:
            return
        now = time.perf_counter()
        compiled = thread_compile_seconds()
        elapsed = now - self.t0
        solver_time = elapsed - (compiled - self._compiled0)
        share = self.polish
        if stalled or self.n_iter - self._last_ub_gain >= 50:
            # the bound has stalled: the solver adds little, search gets more time
            share *= 4.0
        else:
            share *= 0.5 ** min(self._polish_misses, 4)
        budget = share * (solver_time - self._polish_time) - self._polish_time
        if self.time_limit is not None:
            # leave room for one more solver iteration before the limit
            reserve = self._iter_time if reserve is None else reserve
            budget = min(budget, self.deadline - elapsed - reserve)
        if budget <= 0:
            return
        end = now + budget
        before = self.score
        problem, n = self.problem, self.labels.size
        if self._walk is None:
            self._walk = problem.new_walk(self.labels, self._rng)
        walk = self._walk
        if self.score > walk.scores[1]:  # the solver's own labelings may have passed it
            walk.best[:] = self.labels
            walk.scores[1] = self.score
        while time.perf_counter() < end:
            problem.walk(walk, end=end, idle_limit=WALK_IDLE_RESTART)
            if walk.counters[IDLE] >= WALK_IDLE_RESTART:
                # stuck in a basin: restart the walk from the incumbent with a
                # large part of it relabelled at random
                problem.restart_walk(walk, problem.perturbed(walk.best, self._rng,
                                                             max_ball=max(4, n // 3)))
        if walk.scores[1] > self.score:
            if walk.scores[1] > self.score + 1e-12 * max(1.0, abs(walk.scores[1])):
                self._last_gain = self.n_iter
            self.score = float(walk.scores[1])
            self.labels = walk.best.copy()
        self._polish_time += (time.perf_counter() - now) - (thread_compile_seconds() - compiled)
        self._polish_misses = 0 if self.score > before else self._polish_misses + 1

    def step(self, **record):
        """Close one iteration; returns True when the solver must stop."""
        if self.n_iter:  # the first iteration holds set-up and compilation: no guide
            self._iter_time = time.perf_counter() - self.t0 - self._step_end
        if self.rel_gap() > self.tol:
            self.polish_incumbent()
        self.n_iter += 1
        gap = self.rel_gap()
        rec = {"iter": self.n_iter, "time": time.perf_counter() - self.t0, "score": self.score,
               "upper_bound": self.ub, "rel_gap": gap}
        rec.update(record)
        self.history.append(rec)
        report(self.method, self.n_iter, rec["time"], self.score, self.ub)
        self._step_end = rec["time"]
        if self.verbose:
            logger.info("%s iter %d score %.6g bound %.6g gap %.3g", self.method, self.n_iter,
                        self.score, self.ub, gap)
        if gap <= self.tol:
            self.status = "gap"
            return True
        if self.ub <= self.cutoff:
            self.status = "cutoff"
            return True
        if self.n_iter >= self.max_iter:
            self.status = "max_iter"
            return True
        # stop when another iteration like the last one would end past the limit
        if self.deadline is not None and rec["time"] + self._iter_time >= self.deadline:
            self.status = "time_limit"
            return True
        if self.stall_iter and self.n_iter - self._last_gain >= self.stall_iter:
            self.status = "stall"
            return True
        if self.bound_stall_iter and self.n_iter - self._last_ub_gain >= self.bound_stall_iter:
            self.status = "stall"
            return True
        return False

    def trivial(self):
        """Result for a graph with no factors (exact by node argmax)."""
        g = self.problem.graph
        lab = np.array([int(np.argmax(g.unary_of(i))) for i in range(g.n_vars)], dtype=np.int64)
        self.labels = lab
        self.score = self.problem.score(lab) if lab.size else 0.0
        self.ub = self.score
        self.status = "gap"
        return self.result()

    def result(self):
        # the bound is floating-point arithmetic on the normalized problem;
        # never report a bound below the (exactly scored) best labeling.
        ub = self.ub
        if np.isfinite(self.score) and ub < self.score:
            ub = self.score
        return MapResult(
            labels=self.labels,
            score=float(self.score),
            upper_bound=float(ub),
            n_iter=self.n_iter,
            converged=self.status == "gap",
            time=time.perf_counter() - self.t0,
            history=self.history,
            method=self.method,
            status=self.status,
        )


COMMON_DEFAULTS = {
    "max_iter": None,
    "time_limit": None,
    "tol": 1e-6,
    "stall_iter": 0,
    "bound_stall_iter": 0,
    "local_search": True,
    "polish": 1.0,
    "verbose": 0,
    "cutoff": None,
}
