"""The state, the certificate and the one-process pass of multilabel GDMM
(:mod:`.gdmm_multilabel`), shared by its partitioned and grouped rounds."""

import time

import numpy as np

from .._memory import written_zeros
from .._parallel import chunk_bounds
from ._gdmm_multilabel_kernels import (LabelEdges, MultilabelDuals, gdmm_multilabel_dual,
                                       gdmm_multilabel_pass, lp_hinge_bound)
from ._gdmm_multilabel_storage import (INITIAL_PAIRS, _positive_edges, compacted_pool,
                                       edge_pair_ids, new_pair_pool)
from ._multilabel_kernels import multilabel_primal
from ._partitions import PartitionThreads, n_threads
from ._ssvm_common import sq_norm

__all__ = ["GDMMMultilabelState", "MultilabelCertificate", "label_adjacency", "serial_pass"]

# exact primal from the weights when n * 2^L * L stays below this
_ENUM_BUDGET = 2e7


class GDMMMultilabelState:
    """Duals, multipliers, active sets and weights of a multilabel GDMM run.

    The unigram duals ``A`` are dense (n, L); the active pair factors live
    in a :class:`PairPool` whose memory follows the active sets (each sample
    starts with ``INITIAL_PAIRS`` slots and widens alone when it needs more).
    ``written``: the dense arrays' pages are written at once
    (:func:`structlearn._memory.written_zeros`), for states whose first pass
    runs beside others on threads.
    """

    def __init__(self, problem, sublinear, signature=None, written=False):
        n, L = problem.Y.shape
        zeros = written_zeros if written else np.zeros
        self.signature = problem.signature() if signature is None else signature
        self.solver = "gdmm"
        self.sublinear = sublinear
        self.A = zeros((n, L))
        self.tmask = zeros((n, L), dtype=np.uint8)
        cap = min(INITIAL_PAIRS, max(problem.n_edges, 1))
        self.pool = new_pair_pool(np.full(n, cap, dtype=np.int64), max(n * cap // 2, 64))
        self.W = zeros((problem.n_features, L))
        self.Pw = np.zeros(L * (L - 1) // 2)
        self.n_iter = 0

    @property
    def n_pairs(self):
        """Active pair factors per sample, int64 (n,)."""
        return self.pool.count

    def compact(self, need):
        """Rebuild the pool with each sample's slots packed at the front and
        room at the end for ``need`` more slots (and half the live slots)."""
        self.pool = compacted_pool(self.pool, need)

    def weights(self):
        """``W`` (d, L) and the symmetric-free upper-triangular ``P`` (L, L)."""
        L = self.W.shape[1]
        P = np.zeros((L, L))
        P[np.triu_indices(L, 1)] = self.Pw
        return self.W, P


def label_adjacency(E):
    """Neighbours of every label on the edge mask: CSR ``(ptr, nbr)`` of int64."""
    a, b = np.nonzero(E)
    L = E.shape[0]
    rows = np.concatenate([a, b])
    cols = np.concatenate([b, a])
    order = np.lexsort((cols, rows))
    ptr = np.zeros(L + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=L), out=ptr[1:])
    return ptr, np.ascontiguousarray(cols[order], dtype=np.int64)


def _forest_hinge_chunk(W, problem, forest, node_weight, out, first, stop):
    """:func:`._multilabel_kernels.forest_hinges` of samples ``first:stop``
    into ``out[first:stop]``."""
    from ._multilabel_kernels import forest_hinges

    p = problem
    forest_hinges(W, p.data, p.indices, p.indptr[first:stop + 1], p.Y[first:stop],
                  forest.order, forest.parent, node_weight, out[first:stop])


class MultilabelCertificate:
    """Primal and dual values of a multilabel GDMM state (see the module docstring).

    The primal is exact when the edges form a forest (max-product per
    sample, :func:`._multilabel_kernels.forest_hinges`); otherwise it is the
    Lagrangian bound of each sample's loss-augmented LP, and the exact
    (unrelaxed) objective is computed apart by enumeration when that is
    cheap (``primal_exact``; NaN otherwise).
    The dual reported is the best value certified so far and never below 0
    (the value of the zero dual): each evaluation is a lower bound on the
    optimum, so their maximum is too.  The max-product runs in chunks of
    samples on ``n_jobs`` threads (:meth:`close` ends them).
    """

    def __init__(self, problem, C, rho, n_jobs=None):
        from ..inference.exact.binary_forest import rooted_forest

        Y, E = problem.Y, problem.E
        n, L = Y.shape
        self.problem = problem
        self.C = float(C)
        self.rho = float(rho)
        self.edges, self.pids = edge_pair_ids(E)
        self.forest = rooted_forest(self.edges, L)
        self.node_weight = np.zeros(L)
        self.enum_ok = problem.n_edges == 0 or n * (2.0 ** L) * L <= _ENUM_BUDGET
        self.hinge = np.empty(n)
        self.best_dual = 0.0
        self.threads = PartitionThreads(n_threads(n_jobs, max(n, 1)))

    def close(self):
        self.threads.close()

    def forest_primal(self, W, Pw):
        """The exact primal value at the weights ``W`` (d, L) and pair weights
        ``Pw`` when the edges form a forest (max-product per sample, in
        chunks of samples on the ``n_jobs`` threads)."""
        p, f = self.problem, self.forest
        self.node_weight[:] = 0.0
        has = f.edge >= 0
        self.node_weight[has] = Pw[self.pids[f.edge[has]]]
        T = self.threads.n_threads
        bounds = chunk_bounds(np.diff(p.indptr) + 1.0, T)
        self.threads.map(_forest_hinge_chunk, [W] * T, [p] * T, [f] * T, [self.node_weight] * T,
                         [self.hinge] * T, bounds[:-1], bounds[1:])
        return float(0.5 * sq_norm(W, Pw) + self.C * self.hinge.sum())

    def evaluate(self, state):
        """``(primal, dual, primal_exact)`` at the state's current weights."""
        p = self.problem
        C = self.C
        W = state.W
        Pfeas = np.empty_like(state.Pw)
        dual = float(gdmm_multilabel_dual(W, state.Pw, p.Y, state.A, C, state.pool, Pfeas))
        self.best_dual = max(self.best_dual, dual)
        reg = 0.5 * sq_norm(W, state.Pw)
        exact = np.nan
        if self.forest is not None:
            exact = primal = self.forest_primal(W, state.Pw)
        else:
            up_a, up_b, _ = _positive_edges(self.edges, self.pids, state.Pw)
            lp_hinge_bound(W, state.Pw, p.E, p.data, p.indices, p.indptr, p.Y, self.rho,
                           state.pool, up_a, up_b, self.hinge)
            primal = float(reg + C * self.hinge.sum())
            if self.enum_ok:
                _, P = state.weights()
                exact = float(multilabel_primal(W, P, p.E, p.n_edges, 1.0, p.data, p.indices,
                                                p.indptr, p.Y, C))
        return primal, self.best_dual, exact


def serial_pass(state, samples, edges, order, block_ends, params, stats, monitor, deadline,
                fixed=None):
    """One pass over all the samples in ``order``, in blocks (the positive
    pair weights re-sorted, the time and the callback asked between blocks);
    returns ``(out_of_time, asked_to_stop)``.  ``fixed``: uint8 (L,), the
    labels whose unigram factors the pass leaves as they are (None: none)."""
    E, ne, nbr_ptr, nbr, edge_list, pids = edges
    if fixed is None:
        fixed = np.zeros(E.shape[0], dtype=np.uint8)
    C, rho, rounds = params
    n = order.shape[0]
    pos = 0
    for b, stop_at in enumerate(block_ends):
        while pos < stop_at:
            up_a, up_b, up_w = _positive_edges(edge_list, pids, state.Pw)
            pos, need = gdmm_multilabel_pass(
                samples, LabelEdges(E, ne, nbr_ptr, nbr, up_a, up_b, up_w, fixed),
                MultilabelDuals(state.W, state.Pw, state.A, state.tmask), state.pool,
                order[:stop_at], pos, C, rho, rounds, stats, samples.data, 1.0)
            if need:  # the pool's free end is full: pack it, with room for more
                state.compact(need)
        if deadline is not None and time.perf_counter() >= deadline:
            return pos < n, False
        if pos < n and monitor.progress(state.n_iter + 1, b + 1, len(block_ends)):
            return False, True
    return False, False
