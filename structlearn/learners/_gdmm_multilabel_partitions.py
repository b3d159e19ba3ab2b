"""Fixed partitions of a multilabel GDMM fit: the ones dask workers keep.

The samples are split into ``P`` contiguous runs of about equal non-zeros
(:mod:`._partitions`).  Each partition keeps, for the whole fit, its
samples' features with the feature ids renumbered to the rows of ``W`` it
uses, a copy of those rows and of the pair weights ``Pw`` (refreshed from the
merged weights at each round), and a pair pool of its own.  A partition's
pass (in blocks, the positive pair weights re-sorted between blocks, as one
process does) and multiplier step leave its moves: ``(copy - start) /
sigma_f`` for its rows (undoing the damping, :func:`._partitions.feature_sigmas`)
and ``/ P`` for ``Pw``; :mod:`._gdmm_multilabel_dask` adds them up.

Fixed partitions cost rounds on bag-of-words data (see
:mod:`._gdmm_multilabel_threads`, whose partitions on threads are drawn
anew each round); on a cluster the samples stay where they are.
"""

import time

import numpy as np

from ._gdmm_multilabel_kernels import (LabelEdges, MultilabelDuals, gdmm_multilabel_multipliers,
                                       gdmm_multilabel_pass)
from ._gdmm_chain_kernels import gather_rows, rows_to_moves
from ._gdmm_multilabel_storage import _positive_edges, compacted_pool, sub_pool
from ._multilabel_kernels import SampleFeatures
from ._partitions import feature_sigmas, local_features, split_by_weight

__all__ = ["build_partitions"]


class _Partition:
    def __init__(self, problem, xnorm_sigma, s0, s1, sigma):
        self.s0, self.s1 = int(s0), int(s1)
        p0, p1 = problem.indptr[s0], problem.indptr[s1]
        self.rows, local = local_features(problem.indices[p0:p1])
        data = problem.data[p0:p1]
        indptr = (problem.indptr[s0:s1 + 1] - p0).astype(np.int64)
        self.step_data = data * sigma[problem.indices[p0:p1]]
        self.samples = SampleFeatures(data, local, indptr, problem.Y[s0:s1],
                                      xnorm_sigma[s0:s1])
        self.row_sigma = sigma[self.rows]
        self.W = np.zeros((self.rows.shape[0], problem.Y.shape[1]))
        self.stats = np.zeros(2, dtype=np.int64)

    def local_pass(self, W, rows, Pw, A, tmask, settings, seed, eta, deadline, n_blocks):
        """The partition's pass over its samples (in ``n_blocks`` blocks, the
        positive pair weights re-sorted between them; stopping between
        blocks once ``perf_counter()`` passes ``deadline``) and multiplier
        step, against the weight rows ``W[rows]`` and the pair weights
        ``Pw``.  ``A``, ``tmask``: the partition's rows of the unigram duals
        and active flags; ``settings``: ``(edges, C, rho, rounds, P)``.
        Leaves the undamped moves of the rows in ``self.W`` and of the pair
        weights in ``self.Pw``; returns ``(res2, finished)``."""
        edges, C, rho, rounds, P = settings
        E, n_edges, nbr_ptr, nbr, edge_list, pids = edges
        n = self.s1 - self.s0
        order = np.random.RandomState(seed).permutation(n).astype(np.int64)
        gather_rows(W, rows, self.W)
        self.Pw[:] = Pw
        self.stats[:] = 0
        block_ends = np.unique(np.linspace(0, n, n_blocks + 1).astype(np.int64))[1:]
        pos = 0
        for stop_at in block_ends:
            while pos < stop_at:
                up = _positive_edges(edge_list, pids, self.Pw)
                pos, need = gdmm_multilabel_pass(
                    self.samples, LabelEdges(E, n_edges, nbr_ptr, nbr, *up),
                    MultilabelDuals(self.W, self.Pw, A, tmask), self.pool, order[:stop_at], pos,
                    C, rho, rounds, self.stats, self.step_data, float(P))
                if need:
                    self.pool = compacted_pool(self.pool, need)
            if deadline is not None and time.perf_counter() >= deadline:
                break
        res2 = gdmm_multilabel_multipliers(self.samples.Y, A, C, eta, tmask, self.pool)
        rows_to_moves(W, rows, self.W, self.row_sigma)  # undamped, against the start
        self.Pw -= Pw
        self.Pw /= P
        return res2, pos >= n


def build_partitions(problem, state, n_parts, edges, C, rho, rounds):
    """The partitions of a multilabel problem (runs of samples of about equal
    non-zeros, each with its pool split from ``state.pool`` and a copy of
    the pair weights) and the local passes' settings ``(edges, C, rho,
    rounds, P)``."""
    nnz = np.diff(problem.indptr) + 1
    bounds = split_by_weight(nnz, n_parts)
    sigma = feature_sigmas(problem.indices, problem.indptr, bounds, problem.n_features)
    x = problem.data
    sample_of = np.repeat(np.arange(problem.Y.shape[0]), np.diff(problem.indptr))
    xnorm_sigma = np.bincount(sample_of, weights=x * x * sigma[problem.indices],
                              minlength=problem.Y.shape[0])
    parts = [_Partition(problem, xnorm_sigma, s0, s1, sigma)
             for s0, s1 in zip(bounds[:-1], bounds[1:])]
    for part in parts:
        part.pool = sub_pool(state.pool, part.s0, part.s1)
        part.Pw = state.Pw.copy()
    return parts, (edges, float(C), float(rho), int(rounds), len(parts))

