"""Storage of the multilabel GDMM's active pair factors (:class:`PairPool`)
and the label edges' ids and positive weights."""

import numpy as np

from .._memory import written_zeros
from ._gdmm_multilabel_kernels import PairPool

__all__ = ["compacted_pool", "edge_pair_ids", "joined_pools", "new_pair_pool", "region_views",
           "close_regions", "sub_pool"]

# slots per sample a pool starts with (at most the edges)
INITIAL_PAIRS = 8


def new_pair_pool(capacities, free):
    """An empty :class:`PairPool`: ``capacities[i]`` slots for sample ``i``,
    packed in sample order, then ``free`` slots at the end."""
    capacities = np.asarray(capacities, dtype=np.int64)
    base = np.zeros_like(capacities)
    np.cumsum(capacities[:-1], out=base[1:])
    live = int(capacities.sum())
    size = live + int(free)
    return PairPool(written_zeros(size, dtype=np.int64), written_zeros(size, dtype=np.int64),
                    written_zeros(size), written_zeros((size, 3)), base, capacities.copy(),
                    np.zeros(capacities.shape[0], dtype=np.int64),
                    np.array([live], dtype=np.int64))


def compacted_pool(old, need):
    """``old`` rebuilt with each sample's slots packed at the front and room
    at the end for ``need`` more slots (and half the live slots)."""
    caps = np.maximum(old.count + old.count // 2, min(INITIAL_PAIRS, old.capacity.min(initial=0)))
    caps = np.minimum(np.maximum(caps, old.count), old.capacity)
    live = int(caps.sum())
    new = new_pair_pool(caps, max(2 * int(need), live // 2, 64))
    new.count[:] = old.count
    _copy_pairs(old, new)
    return new


def region_views(pool, shares):
    """Views of ``pool`` for passes that run side by side on disjoint samples.

    Each view shares the pool's arrays (its samples' slots are written in
    place) and widens samples into its own part of the free slots at the
    end, in proportion to ``shares`` (one positive number per view): view
    ``k``'s slot arrays end where its part ends, so a sample that cannot
    widen there stops its pass (it asks for room, see
    :func:`._gdmm_multilabel_kernels.gdmm_multilabel_pass`).  Every
    sample's slots must lie below ``pool.top[0]``; afterwards
    :func:`close_regions` moves ``pool.top[0]`` above the views' slots.
    """
    top = int(pool.top[0])
    shares = np.asarray(shares, dtype=np.float64)
    cuts = np.floor((pool.left.shape[0] - top) * np.cumsum(shares) / shares.sum())
    ends = top + np.minimum(cuts.astype(np.int64), pool.left.shape[0] - top)
    starts = np.r_[top, ends[:-1]]
    return [PairPool(pool.left[:end], pool.right[:end], pool.dual[:end], pool.nu[:end],
                     pool.base, pool.capacity, pool.count, np.array([start], dtype=np.int64))
            for start, end in zip(starts, ends)]


def close_regions(pool, views):
    """After passes on :func:`region_views`: the pool's first free slot is
    above every slot the views used (the shares left partly unused stay
    so until the pool is compacted)."""
    pool.top[0] = max([int(pool.top[0])] + [int(v.top[0]) for v in views])


def sub_pool(pool, first, stop):
    """A pool of its own for samples ``first:stop`` of ``pool`` (a partition's)."""
    caps = pool.capacity[first:stop]
    new = new_pair_pool(caps, max(int(caps.sum()) // 2, 64))
    new.count[:] = pool.count[first:stop]
    _copy_pairs(pool, new, first)
    return new


def joined_pools(pools):
    """One pool holding the samples of ``pools`` in order (the partitions' pools
    put back together)."""
    caps = np.concatenate([p.capacity for p in pools])
    new = new_pair_pool(caps, max(int(caps.sum()) // 2, 64))
    first = 0
    for p in pools:
        n = p.count.shape[0]
        new.count[first:first + n] = p.count
        _copy_pairs(p, new, 0, first)
        first += n
    return new


def _copy_pairs(old, new, old_first=0, new_first=0):
    """Copy the used slots of samples ``old_first + i`` of pool ``old`` to
    samples ``new_first + i`` of pool ``new``, for every sample of the
    smaller of the two ranges."""
    n = min(old.count.shape[0] - old_first, new.count.shape[0] - new_first)
    counts = old.count[old_first:old_first + n]
    ranks = _ranks(counts)
    src = np.repeat(old.base[old_first:old_first + n], counts) + ranks
    dst = np.repeat(new.base[new_first:new_first + n], counts) + ranks
    new.left[dst] = old.left[src]
    new.right[dst] = old.right[src]
    new.dual[dst] = old.dual[src]
    new.nu[dst] = old.nu[src]


def _ranks(counts):
    """``0 .. c-1`` for each count ``c``, concatenated."""
    total = int(counts.sum())
    starts = np.repeat(np.cumsum(counts) - counts, counts)
    return np.arange(total, dtype=np.int64) - starts


def edge_pair_ids(E):
    """The edges ``(a, b)`` of the mask (row-major) and their ids in ``Pw``."""
    L = E.shape[0]
    a, b = np.nonzero(E)
    return np.stack([a, b], axis=1), a * (2 * L - a - 1) // 2 + (b - a - 1)


def _positive_edges(edges, pids, Pw):
    """The edges with a positive weight by decreasing weight: ``(a, b, w)``."""
    w = Pw[pids]
    keep = np.flatnonzero(w > 0.0)
    keep = keep[np.argsort(-w[keep], kind="stable")]
    return (np.ascontiguousarray(edges[keep, 0]), np.ascontiguousarray(edges[keep, 1]),
            np.ascontiguousarray(w[keep]))
