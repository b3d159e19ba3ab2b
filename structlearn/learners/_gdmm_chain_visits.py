"""What a GDMM chain pass visits and searches: the factor orders, the
bigram search table and the capacity of the slot and pair lists (shared by
the one-process and the partitioned passes)."""

import numpy as np

from ._gdmm_chain_kernels import EdgePairs, TokenSlots

__all__ = ["SequenceMajorOrder", "grown", "search_table"]


def grown(slots, pairs, K, grow_slots, grow_pairs, threads=None):
    """``(slots, pairs)`` with the slot (and/or pair) capacity doubled, up to
    ``K`` (``K * K``); the arrays not grown are returned as they are.  The
    arrays are widened side by side on ``threads`` (a
    :class:`~._partitions.PartitionThreads`; None: in turn): the copies
    release the GIL."""
    mapper = map if threads is None else threads.map

    def widened(arrays, capacity):
        width = min(capacity, 2 * arrays[0].shape[1])
        return list(mapper(_widened, arrays, [width] * len(arrays)))

    if grow_slots and slots.labels.shape[1] < K:
        slots = TokenSlots(*widened(slots, K))
    if grow_pairs and pairs.left_label.shape[1] < K * K:
        pairs = EdgePairs(*widened(pairs, K * K))
    return slots, pairs


def _widened(a, width):
    """A 2-D ``a`` with zero columns appended up to ``width`` (1-D: ``a``)."""
    if a.ndim != 2:
        return a
    out = np.zeros((a.shape[0], width), dtype=a.dtype)
    out[:, :a.shape[1]] = a
    return out


class SequenceMajorOrder:
    """Random factor orders that keep each sequence's factors together.

    Parameters
    ----------
    factors : ndarray of int64, shape (F,)
        Factor ids: ``f < n_tokens`` the unigram factor of token ``f``,
        ``f >= n_tokens`` the bigram factor of the edge ``(f - n_tokens,
        f - n_tokens + 1)``.
    offsets : ndarray of int64, shape (n_sequences + 1,)
        Token offsets of the sequences.
    n_tokens : int
    """

    def __init__(self, factors, offsets, n_tokens):
        self.factors = factors
        left_token = np.where(factors < n_tokens, factors, factors - n_tokens)
        self.sequence = np.searchsorted(offsets, left_token, side="right") - 1
        self.n_sequences = offsets.size - 1

    def draw(self, rng):
        """One pass's order (int64, (F,)): the sequences in a random order,
        the factors of each in a random order; draws from ``rng``."""
        rank = rng.permutation(self.n_sequences)
        key = rank[self.sequence] + rng.random_sample(self.factors.size)  # rank + [0, 1)
        return self.factors[np.argsort(key)]


# Tie-break of the bigram search: the oracles search ``v + tau`` with
# ``tau[a, b] = -_TIE * (a * K + b + 1) / K^2``, distinct and below 1e-12 in
# magnitude.  Untouched entries of ``v`` are exactly 0, so without it many
# label pairs tie, and the sorted search and a dense scan would resolve
# the ties differently; with it both oracles return the same pair (the
# lowest index among near-ties) and ``oracle="dense"`` and ``"sublinear"``
# produce the same iterates.  The weights use ``v`` itself.
_TIE = 1e-12


def search_table(v, sublinear):
    """The flat search table ``v + tau`` and, when ``sublinear``, the
    indicator-oracle state over it (``state[0]`` is the table); else None."""
    from ..oracles.indicator import make_indicator_oracle

    K = v.shape[0]
    tau = -_TIE * (np.arange(K * K, dtype=np.float64) + 1.0) / (K * K)
    vt = v.ravel() + tau
    if not sublinear:
        return vt, None
    vstate = make_indicator_oracle(vt.reshape(K, K))
    return vstate[0], vstate
