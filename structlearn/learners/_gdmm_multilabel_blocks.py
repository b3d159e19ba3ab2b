"""Sample blocks of a multilabel GDMM fit on dask workers, paired anew each round.

The samples are cut into ``2 P`` contiguous blocks of about equal non-zeros.
Partition ``p`` keeps its home block (block ``p``) for the whole fit; the
other ``P`` blocks visit: each round draws a permutation ``perm`` and
partition ``p`` takes its pass over its home block and block ``P +
perm[p]``, in one random order over both.  A round's pass runs against a
copy of the weight rows its two blocks use and of the pair weights (CoCoA+
adding: :mod:`._partitions`, under the round's damping, which the client
measures from the moves: :mod:`._damping`), then its multiplier step; it
returns the undamped moves.

Why pair the blocks anew: fixed partitions stall on bag-of-words data
(:mod:`._gdmm_multilabel_threads`: 543 rounds to the 1 % gap on bibtex with
two, shuffled samples or not, against 41 when every round draws every
partition anew).  Drawing half of each partition anew is enough: 43 rounds
at ``P = 2`` and 90 at ``P = 4`` (85 fully drawn); a quarter (three home
blocks and one visitor) took 51 and 110.  Only the visiting half of the
samples moves between workers, and only when its partition is elsewhere.

A block (:class:`SampleBlock`) holds its samples' features (renumbered to
the weight rows it uses), labels, unigram duals, active flags and pair pool.
A round never changes a block in place: :func:`paired_pass` returns new
blocks that share the samples' arrays, so a task that dask runs again sees
the same input.
"""

import time

import numpy as np

from ._gdmm_multilabel_kernels import (LabelEdges, MultilabelDuals, gdmm_multilabel_multipliers,
                                       gdmm_multilabel_pass)
from ._gdmm_multilabel_storage import _positive_edges, compacted_pool, joined_pools, sub_pool
from ._multilabel_kernels import SampleFeatures
from ._partitions import local_features, split_by_weight
from ._ssvm_chain_kernels import token_sq_norms

__all__ = ["SampleBlock", "blocks_of", "draw_pairing", "paired_pass", "pairing_rows"]


class SampleBlock:
    """Samples of a multilabel problem with their duals (what a worker keeps).

    Parameters
    ----------
    data, indices, indptr : ndarray
        The samples' CSR rows, ``indices`` global feature ids.
    Y : ndarray (n_b, L)
        Their 0/1 labels.
    A : ndarray of float64 (n_b, L), tmask : ndarray of uint8 (n_b, L)
        Their unigram duals and active flags.
    pool : PairPool
        Their pair factors (sample ``i`` of the pool is sample ``i`` here).
    """

    def __init__(self, data, indices, indptr, Y, A, tmask, pool):
        self.rows, self.local = local_features(indices)
        self.data = np.asarray(data, dtype=np.float64)
        self.indptr = np.asarray(indptr, dtype=np.int64) - int(indptr[0])
        self.Y = Y
        self.A = A
        self.tmask = tmask
        self.pool = pool

    @classmethod
    def of_rows(cls, data, indices, indptr, Y, s0, s1, duals):
        """The block of samples ``s0:s1`` of the CSR rows ``data, indices,
        indptr`` and labels ``Y``, with ``duals`` ``(A, tmask, pool)`` (the
        block's own)."""
        p0, p1 = indptr[s0], indptr[s1]
        return cls(data[p0:p1], indices[p0:p1], indptr[s0:s1 + 1], Y[s0:s1], *duals)

    @property
    def n_samples(self):
        return self.Y.shape[0]

    def with_duals(self, A, tmask, pool):
        """The same samples with other duals (the arrays of the samples shared)."""
        new = object.__new__(SampleBlock)
        new.__dict__.update(self.__dict__)
        new.A, new.tmask, new.pool = A, tmask, pool
        return new

    def features(self):
        """``SampleFeatures`` over the block's own rows (squared norms unscaled)."""
        return SampleFeatures(self.data, self.local, self.indptr, self.Y,
                              token_sq_norms(self.data, self.indptr))


def blocks_of(problem, state, n_parts):
    """The ``2 n_parts`` blocks of a problem held in one process (fewer when
    it has fewer samples), their duals copied from ``state``; returns
    ``(blocks, bounds)`` with block ``b`` holding samples
    ``bounds[b]:bounds[b + 1]``."""
    bounds = split_by_weight(np.diff(problem.indptr) + 1, 2 * n_parts)
    blocks = []
    for s0, s1 in zip(bounds[:-1], bounds[1:]):
        blocks.append(SampleBlock.of_rows(
            problem.data, problem.indices, problem.indptr, problem.Y, s0, s1,
            (state.A[s0:s1].copy(), state.tmask[s0:s1].copy(), sub_pool(state.pool, s0, s1))))
    return blocks, bounds


def draw_pairing(rng, n_blocks):
    """This round's groups of block ids: ``(home p, visitor P + perm[p])`` for
    ``P = n_blocks // 2`` (an odd last block stays home alone in partition
    ``P - 1``'s group; one block is a group alone), and a pass seed per
    group."""
    P = n_blocks // 2
    if P == 0:
        return [(0,)], rng.randint(np.iinfo(np.int32).max, size=1)
    perm = rng.permutation(P)
    groups = [(p, P + int(perm[p])) for p in range(P)]
    if n_blocks % 2:
        groups[-1] += (n_blocks - 1,)
    seeds = rng.randint(np.iinfo(np.int32).max, size=P)
    return groups, seeds


def pairing_rows(block_rows, groups, n_features, cap=np.inf):
    """The weight rows each group's blocks use and, per feature, the groups
    that use it, at most ``cap`` (the damping ``sigma``, float64
    (n_features,)); returns ``(rows per group, sigma)``."""
    rows = [np.unique(np.concatenate([block_rows[b] for b in g])) for g in groups]
    sigma = np.bincount(np.concatenate(rows), minlength=n_features).astype(np.float64)
    return rows, np.clip(sigma, 1.0, max(float(cap), 1.0))


def paired_pass(*blocks_and_args):
    """One partition's pass over its blocks in one random order, then its
    multiplier step (run where the blocks are).

    Parameters
    ----------
    *blocks : SampleBlock
        The group's blocks, followed by:
    W : ndarray (d_g, L)
        The merged weights' rows ``rows`` (not changed).
    Pw : ndarray (L (L - 1) / 2,)
        The merged pair weights (not changed).
    rows : ndarray of int64 (d_g,)
        The global feature ids the blocks use, increasing.
    row_sigma : ndarray of float64 (d_g,)
        Their damping this round.
    settings : tuple
        ``(edges, C, rho, rounds, sigma)``: ``sigma`` damps the pair
        weights' moves and curvature.
    seed : int
        Draws the visiting order.
    eta : float
    deadline : float or None
        Stop between blocks of samples once ``perf_counter()`` passes it.
    n_blocks : int
        Blocks of samples of the pass (the positive pair weights are
        re-sorted between them).

    Returns
    -------
    (*new blocks, (W moves (d_g, L), Pw moves, res2, finished, stats, active))
    """
    k = len(blocks_and_args) - 9
    blocks = blocks_and_args[:k]
    W, Pw, rows, row_sigma, settings, seed, eta, deadline, n_blocks = blocks_and_args[k:]
    edges, C, rho, rounds, pair_sigma = settings
    E, n_edges, nbr_ptr, nbr, edge_list, pids = edges
    sizes = np.array([b.n_samples for b in blocks], dtype=np.int64)
    firsts = np.concatenate([[0], np.cumsum(sizes)])
    n = int(firsts[-1])
    data = np.concatenate([b.data for b in blocks])
    local = np.concatenate([np.searchsorted(rows, b.rows)[b.local] for b in blocks])
    starts = np.cumsum([0] + [b.data.shape[0] for b in blocks[:-1]])
    indptr = np.concatenate([[0]] + [b.indptr[1:] + s for b, s in zip(blocks, starts)])
    sigma_x = row_sigma[local]
    sample_of = np.repeat(np.arange(n), np.diff(indptr))
    samples = SampleFeatures(data, local, indptr, np.concatenate([b.Y for b in blocks]),
                             np.bincount(sample_of, weights=data * data * sigma_x, minlength=n))
    step_data = data * sigma_x
    A = np.concatenate([b.A for b in blocks])
    tmask = np.concatenate([b.tmask for b in blocks])
    pool = joined_pools([b.pool for b in blocks])
    Wc = W.copy()
    Pwc = Pw.copy()
    stats = np.zeros(2, dtype=np.int64)
    order = np.random.RandomState(seed).permutation(n).astype(np.int64)
    no_fixed = np.zeros(E.shape[0], dtype=np.uint8)
    block_ends = np.unique(np.linspace(0, n, n_blocks + 1).astype(np.int64))[1:]
    pos = 0
    for stop_at in block_ends:
        while pos < stop_at:
            up = _positive_edges(edge_list, pids, Pwc)
            pos, need = gdmm_multilabel_pass(
                samples, LabelEdges(E, n_edges, nbr_ptr, nbr, *up, no_fixed),
                MultilabelDuals(Wc, Pwc, A, tmask), pool, order[:stop_at], pos, C, rho, rounds,
                stats, step_data, float(pair_sigma))
            if need:
                pool = compacted_pool(pool, need)
        if deadline is not None and time.perf_counter() >= deadline:
            break
    res2 = gdmm_multilabel_multipliers(samples.Y, A, C, eta, tmask, pool)
    Wc -= W
    Wc /= row_sigma[:, None]  # undamped
    Pwc -= Pw
    Pwc /= pair_sigma
    active = int(np.count_nonzero(tmask) + pool.count.sum())
    new = tuple(b.with_duals(A[f:f + b.n_samples], tmask[f:f + b.n_samples],
                             sub_pool(pool, f, f + b.n_samples))
                for b, f in zip(blocks, firsts[:-1]))
    return (*new, (Wc, Pwc, float(res2), bool(pos >= n), stats, active))
