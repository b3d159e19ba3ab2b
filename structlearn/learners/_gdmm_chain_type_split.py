"""A GDMM chain pass on two threads: unigram and bigram factors side by side.

A unigram step moves the weights ``W`` and its token's duals; a bigram
step moves the transition table and the duals and marginals of its edge's
two tokens.  The two kinds share no weights, so a unigram step and a
bigram step of different sequences touch nothing in common.  A pass's
order (sequence-major, :class:`._gdmm_chain_visits.SequenceMajorOrder`) is
cut at its middle into halves ``S1`` and ``S2`` of the tokens (the sequence
the middle falls in is cut between two of its tokens); then

* phase 1: the unigram factors of ``S1`` on one thread, beside the bigram
  factors of ``S2`` on the other;
* phase 2: the unigram factors of ``S2`` beside the bigram factors of ``S1``,
  each thread then taking the multiplier steps of the tokens whose factors
  it has just finished (``S2``'s, ``S1``'s);

each thread in the order's own order; last the edge across the cut, if any,
and its two tokens' multiplier steps.  The result is that of the one-thread
pass over the order ``U(S1), B(S2), U(S2), B(S1)``, the cut edge and the
multiplier step, whatever the threads' timing (the residual summed in
another order): every factor is stepped once, each sequence's unigram
factors half a pass apart from its bigram factors; a single long sequence
splits as well as many short ones.  The pass then costs about the more
expensive of the two kinds instead of their sum (Porttinari UPOS+FEATS:
0.53-0.60x the one-thread fit's time to a 1 % gap, the same passes).
Fits with fewer than :data:`TYPE_SPLIT_MIN_ENTRIES` token scores keep the
one-thread pass: there the two hand-overs a pass cost more than they save.
"""

import numpy as np

from ._gdmm_chain_kernels import PassWorkspace, gdmm_chain_multipliers_of, gdmm_chain_pass

__all__ = ["TYPE_SPLIT_MIN_ENTRIES", "TypeSplitPass", "split_order", "splits",
           "type_split_pass"]

# fits with at least this many token scores (tokens x labels) split their
# passes on two threads (measured on generated chains of 12 labels: a split
# pass over 11,500 token scores took 1.5x the one-thread pass's time, over
# 48,000 0.85x)
TYPE_SPLIT_MIN_ENTRIES = 1 << 16


def split_order(order, sequence_of, offsets):
    """The sub-orders of a sequence-major ``order`` (int64 (F,), factor ids:
    ``f < N`` the unigram factor of token ``f``, else the bigram factor of
    edge ``(f - N, f - N + 1)``; ``N = offsets[-1]``): ``(U1, B2, U2, B1,
    edge)``.

    The tokens are cut in two halves at the order's middle: the sequences
    before it, and the first tokens of the one it falls in, make the first
    half (1), the rest the second (2).  ``U`` holds each half's unigram
    factors, ``B`` the bigram factors of edges within it, and ``edge`` the
    edge across the cut inside that sequence, if any (0 or 1 factor).  Each
    keeps its factors in ``order``'s order.

    Parameters
    ----------
    order : int64 (F,)
    sequence_of : int64 (2 * N,)
        Each factor id's sequence.
    offsets : int64 (n_sequences + 1,)
        The sequences' token offsets.
    """
    N = int(offsets[-1])
    F = order.shape[0]
    seq = sequence_of[order]
    first = np.zeros(offsets.shape[0] - 1, dtype=bool)  # sequences wholly in half 1
    a = m = 0  # tokens a:m of the sequence the middle falls in are in half 1
    if F:
        c = F // 2
        starts = np.concatenate([[0], np.flatnonzero(seq[1:] != seq[:-1]) + 1, [F]])
        k = int(np.searchsorted(starts, c, side="right")) - 1  # the run holding c
        lo = int(starts[k])
        first[seq[starts[:k]]] = True
        if lo < c:  # the middle falls inside that run: cut it between tokens
            s = int(seq[lo])
            a, b = int(offsets[s]), int(offsets[s + 1])
            # its first m - a tokens have 2 (m - a) - 1 factors: about c - lo
            m = min(a + (c - lo + 1) // 2, b)
    side = np.where(first[sequence_of[:N]], 0, 1)  # each token's half
    side[a:m] = 0
    unigram = order < N
    token = np.where(unigram, order, order - N)
    own = side[token]
    # an edge's second token (the last token of a sequence has no edge)
    across = ~unigram & (own != side[np.minimum(token + 1, N - 1)])
    one, two = ~across & (own == 0), ~across & (own == 1)
    return (order[unigram & one], order[~unigram & two], order[unigram & two],
            order[~unigram & one], order[across])


class TypeSplitPass:
    """Runs GDMM chain passes over dense weights as the two phases of the
    module docstring.

    Parameters
    ----------
    offsets : int64 (n_sequences + 1,)
        The sequences' token offsets.
    work : PassWorkspace
        The pass's workspace (its ``backoff``, by factor id, is shared: the
        two threads write different factors' entries).  Holds no threads:
        a partition carrying one is sent to ``dask`` workers as it is.
    """

    def __init__(self, offsets, work):
        from ..oracles.inner_product import make_inner_workspace
        from ..oracles.sorted_tables import make_pair_workspace
        from ..oracles.sparse_rows import make_sparse_rows_workspace

        K = work.inner[0].shape[0]
        token_seq = np.repeat(np.arange(offsets.shape[0] - 1, dtype=np.int64), np.diff(offsets))
        self.sequence_of = np.concatenate([token_seq, token_seq])
        self.offsets = offsets
        self.works = (work, PassWorkspace(make_inner_workspace(K), make_pair_workspace(K, K),
                                          make_sparse_rows_workspace(0), work.backoff,
                                          np.zeros_like(work.stats)))

    def run(self, chain, slots, pairs, weights, settings, order, parts, weights32, vstate, eta,
            threads):
        """One pass and the multiplier step (arguments as
        :func:`gdmm_chain_pass`'s, dense weights, and the multiplier step
        ``eta``); returns the squared consistency residual before the step,
        as :func:`gdmm_chain_multipliers`.  Each phase's bigram steps run on
        ``threads`` (a :class:`~._partitions.PartitionThreads`; one without
        a pool runs them after the unigram steps: the same iterates), its
        unigram steps in the calling thread.  The second workspace's counters
        are added into the first's ``stats``."""
        N = int(self.offsets[-1])
        u1, b2, u2, b1, edge = split_order(order, self.sequence_of, self.offsets)
        here, other = self.works
        other.stats[:] = 0
        ends = np.concatenate([edge - N, edge - N + 1])  # the cut edge's tokens

        def steps(work, sub_order, tokens=None):
            def run_steps():
                gdmm_chain_pass(chain, slots, pairs, weights, settings, work, sub_order, parts,
                                None, weights32, vstate)
                if tokens is None:
                    return 0.0
                return gdmm_chain_multipliers_of(chain, slots, eta, tokens)
            return run_steps

        def finished(unigrams):  # the half's tokens, but the cut edge's
            tokens = np.sort(unigrams)
            return tokens[~np.isin(tokens, ends)] if ends.size else tokens

        threads.beside(steps(here, u1), steps(other, b2))
        res2, res1 = threads.beside(steps(here, u2, finished(u2)),
                                    steps(other, b1, finished(u1)))
        here.stats[:] += other.stats
        if edge.size:  # the edge across the cut, then its tokens' multipliers
            res1 += steps(here, edge, ends)()
        return res1 + res2


def splits(n_tokens, n_labels):
    """Whether passes over ``n_tokens`` tokens of ``n_labels`` labels are
    split (at least :data:`TYPE_SPLIT_MIN_ENTRIES` token scores)."""
    return n_tokens * n_labels >= TYPE_SPLIT_MIN_ENTRIES


def type_split_pass(problem, threads, work):
    """A :class:`TypeSplitPass` for ``problem`` (a ``ChainProblem``) where
    ``threads`` has two threads or more and the problem's passes split
    (:func:`splits`); else None."""
    if threads.n_threads < 2 or not splits(problem.n_tokens, problem.n_labels):
        return None
    return TypeSplitPass(problem.offsets, work)
