"""A GDMM chain pass on two threads: unigram and bigram factors side by side.

A unigram step moves the weights ``W`` and its token's duals; a bigram
step moves the transition table and the duals and marginals of its edge's
two tokens.  The two kinds share no weights, so a unigram step and a
bigram step of different sequences touch nothing in common.  A pass's
order (sequence-major, :class:`._gdmm_chain_visits.SequenceMajorOrder`) is
cut at the sequence boundary nearest its middle into halves ``S1`` and
``S2``; then

* phase 1: the unigram factors of ``S1`` on one thread, beside the bigram
  factors of ``S2`` on the other;
* phase 2: the unigram factors of ``S2`` beside the bigram factors of ``S1``,
  each thread then taking the multiplier steps of the tokens whose factors
  it has just finished (``S2``'s, ``S1``'s);

each thread in the order's own order.  The result is that of the one-thread
pass over the order ``U(S1), B(S2), U(S2), B(S1)`` and the multiplier step,
whatever the threads' timing (the residual summed in another order): every
factor is stepped once, each sequence's unigram factors half
a pass apart from its bigram factors.  The pass then costs about the more
expensive of the two kinds instead of their sum (Porttinari UPOS+FEATS:
0.56-0.60x the one-thread fit's time to a 1 % gap, the same passes).
Fits with fewer than :data:`TYPE_SPLIT_MIN_ENTRIES` token scores keep the
one-thread pass: there the two hand-overs a pass cost more than they save.
"""

import numpy as np

from ._gdmm_chain_kernels import PassWorkspace, gdmm_chain_multipliers_of, gdmm_chain_pass

__all__ = ["TYPE_SPLIT_MIN_ENTRIES", "TypeSplitPass", "split_order", "type_split_pass"]

# fits with at least this many token scores (tokens x labels) split their
# passes on two threads (measured on generated chains of 12 labels: a split
# pass over 11,500 token scores took 1.5x the one-thread pass's time, over
# 48,000 0.85x)
TYPE_SPLIT_MIN_ENTRIES = 1 << 16


def split_order(order, sequence_of, n_tokens):
    """The four sub-orders of a sequence-major ``order`` (int64 (F,),
    factor ids: ``f < n_tokens`` unigram, else bigram): ``(U1, B2, U2,
    B1)``, the unigram (U) and bigram (B) factors of the first (1) and
    second (2) half, cut at the sequence boundary nearest the middle
    (``sequence_of``: int64 (2 * n_tokens,), each factor id's sequence).
    Each keeps its factors in ``order``'s order."""
    F = order.shape[0]
    seq = sequence_of[order]
    bounds = np.flatnonzero(seq[1:] != seq[:-1]) + 1
    if bounds.size:
        cut = int(bounds[np.argmin(np.abs(bounds - F // 2))])
    else:
        cut = F  # one sequence: all of it in the first half
    first, second = order[:cut], order[cut:]
    u1, u2 = first < n_tokens, second < n_tokens
    return first[u1], second[~u2], second[u2], first[~u1]


class TypeSplitPass:
    """Runs GDMM chain passes over dense weights as the two phases of the
    module docstring, on two threads.

    Parameters
    ----------
    offsets : int64 (n_sequences + 1,)
        The sequences' token offsets.
    threads : PartitionThreads
        A pool of at least one thread: each phase's bigram steps run there,
        its unigram steps in the calling thread.
    work : PassWorkspace
        The fit's workspace (its ``backoff``, by factor id, is shared: the
        two threads write different factors' entries).
    """

    def __init__(self, offsets, threads, work):
        from ..oracles.inner_product import make_inner_workspace
        from ..oracles.sorted_tables import make_pair_workspace
        from ..oracles.sparse_rows import make_sparse_rows_workspace

        n_tokens = int(offsets[-1])
        K = work.inner[0].shape[0]
        token_seq = np.repeat(np.arange(offsets.shape[0] - 1, dtype=np.int64), np.diff(offsets))
        self.sequence_of = np.concatenate([token_seq, token_seq])
        self.n_tokens = n_tokens
        self.threads = threads
        self.works = (work, PassWorkspace(make_inner_workspace(K), make_pair_workspace(K, K),
                                          make_sparse_rows_workspace(0), work.backoff,
                                          np.zeros_like(work.stats)))

    def run(self, chain, slots, pairs, weights, settings, order, parts, weights32, vstate, eta):
        """One pass and the multiplier step (arguments as
        :func:`gdmm_chain_pass`'s, dense weights, and the multiplier step
        ``eta``); returns the squared consistency residual before the step,
        as :func:`gdmm_chain_multipliers`.  The second thread's counters are
        added into the first workspace's ``stats``."""
        u1, b2, u2, b1 = split_order(order, self.sequence_of, self.n_tokens)
        other = self.works[1]
        other.stats[:] = 0

        def steps(work, sub_order, tokens=None):
            def run_steps():
                gdmm_chain_pass(chain, slots, pairs, weights, settings, work, sub_order, parts,
                                None, weights32, vstate)
                if tokens is not None:  # every factor of these tokens is stepped
                    return gdmm_chain_multipliers_of(chain, slots, eta, np.sort(tokens))
                return 0.0
            return run_steps

        # the unigram steps in this thread, the bigram steps beside them
        self.threads.beside(steps(self.works[0], u1), steps(other, b2))
        res_s2, res_s1 = self.threads.beside(steps(self.works[0], u2, u2), steps(other, b1, u1))
        self.works[0].stats[:] += other.stats
        return res_s1 + res_s2


def type_split_pass(problem, threads, work):
    """A :class:`TypeSplitPass` for ``problem`` (a ``ChainProblem``) where
    ``threads`` has two threads or more and the problem has at least
    :data:`TYPE_SPLIT_MIN_ENTRIES` token scores; else None."""
    if threads.n_threads < 2 or problem.n_tokens * problem.n_labels < TYPE_SPLIT_MIN_ENTRIES:
        return None
    return TypeSplitPass(problem.offsets, threads, work)
