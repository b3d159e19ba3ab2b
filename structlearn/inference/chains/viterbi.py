"""Max-sum Viterbi and list Viterbi (top k) over stacked chains: the dense
kernels, or the sparse-table kernels where the transition table is mostly
zero (a structural SVM's table keeps only the transitions its duals touched)."""

import time

import numpy as np

from ._chain_kernels import (column_bits, transition_columns, transition_rows, viterbi_batch,
                             viterbi_batch_sparse_rows)

__all__ = ["SPARSE_VITERBI_MIN_LABELS", "leading_sequences", "sparse_kernel_is_faster",
           "sparse_table", "sparse_transition_table", "timed_transition_table", "viterbi",
           "viterbi_topk"]

# the sparse-table kernels are considered from this many labels (the list
# Viterbi's; the Viterbi's own cost model starts at about 90: see
# sparse_kernel_is_faster)
SPARSE_VITERBI_MIN_LABELS = 8


def sparse_transition_table(trans, decoder="viterbi", k=1):
    """A mostly-zero transition table prepared for the sparse-table kernels,
    or None when the dense kernel is the faster.

    Parameters
    ----------
    trans : float64 (K, K)
    decoder : {"viterbi", "topk"}, default="viterbi"
        The decoder the table is for: :func:`viterbi` or
        :func:`viterbi_topk` (their dense kernels differ in cost, so the
        choice differs; see :func:`sparse_kernel_is_faster`).
    k : int, default=1
        Sequences per chain of the list Viterbi (``decoder="topk"``).

    Returns
    -------
    (col_ptr, col_rows, col_vals, row_ptr, row_cols, row_vals, bits) or None
        The table by column (int64 (K + 1,), int64 (nnz,), float64 (nnz,):
        :func:`._chain_kernels.transition_columns`), by row
        (:func:`._chain_kernels.transition_rows`) and as a bitset
        (:func:`._chain_kernels.column_bits`); None where the dense kernel
        is expected to be the faster.
    """
    K = trans.shape[0]
    nnz = int(np.count_nonzero(trans))
    faster = sparse_kernel_is_faster(K, nnz, decoder, k)  # also checks decoder
    if K < SPARSE_VITERBI_MIN_LABELS or not faster:
        return None
    return sparse_table(trans)


# batches of at least this many positions x K^2 entries (x k for the list
# Viterbi) time the two kernels of their decoder on a slice of their own data:
# the dense kernels' cost per entry differs 4x between machines (the
# Viterbi's: 0.15-0.25 ns on one 2-core VM, 0.6-1.0 ns on another, while the
# sparse kernel's stayed close to its model), which the cost models of
# sparse_kernel_is_faster cannot know
TIMED_CHOICE_MIN_WORK = 5e7
TIMED_CHOICE_MIN_LABELS = {"viterbi": 32, "topk": SPARSE_VITERBI_MIN_LABELS}
# above this fill the dense Viterbi is taken unasked (the sparse list
# Viterbi still won at 90 % fill on some tables)
TIMED_CHOICE_MAX_FILL = {"viterbi": 0.6, "topk": 1.0}
# a dense entry's cost, relative to the Viterbi's (the list Viterbi's, per
# rank, is 10-30 ns against 0.15-1 ns: its dense kernel is not timed on more
# than a slice of TIMED_CHOICE_PROBE_WORK weighted entries)
TIMED_CHOICE_ENTRY_COST = {"viterbi": 1, "topk": 20}
TIMED_CHOICE_PROBE_WORK = 1e8
TIMED_CHOICE_POSITIONS = 300  # the slice each kernel is timed on, at most
TIMED_CHOICE_SHARE = 20       # of the batch's positions, at most
TIMED_CHOICE_MIN_PROBE = 50   # positions: a shorter slice keeps the cost model


def timed_transition_table(trans, n_positions, probe, decoder="viterbi", k=1):
    """:func:`sparse_transition_table`'s choice, except for batches large
    enough that timing both kernels of ``decoder`` on a slice of the batch
    costs little (two slices of at most ``TIMED_CHOICE_POSITIONS``, of a
    ``TIMED_CHOICE_SHARE``-th of its ``n_positions`` and of
    ``TIMED_CHOICE_PROBE_WORK`` weighted dense entries): the kernel faster on
    that slice.  Both kernels give the same labels (and, for ``"topk"``,
    scores), so only the time depends on the choice.

    Parameters
    ----------
    trans : float64 (K, K)
    n_positions : int
        Positions (tokens) of the batch to decode.
    probe : callable
        ``probe(table, n)`` decodes about the first ``n`` positions of the
        batch with ``table`` (None: the dense kernel), as the batch will be.
    decoder, k :
        As :func:`sparse_transition_table`.

    Returns
    -------
    tuple or None
        As :func:`sparse_transition_table`.
    """
    rule = sparse_transition_table(trans, decoder, k)  # also checks decoder
    K = trans.shape[0]
    per_position = K * K * TIMED_CHOICE_ENTRY_COST[decoder] * (k if decoder == "topk" else 1)
    n_probe = min(TIMED_CHOICE_POSITIONS, int(n_positions) // TIMED_CHOICE_SHARE,
                  int(TIMED_CHOICE_PROBE_WORK // max(per_position, 1)))
    work = float(n_positions) * per_position
    if (K < TIMED_CHOICE_MIN_LABELS[decoder] or n_probe < TIMED_CHOICE_MIN_PROBE
            or work < TIMED_CHOICE_MIN_WORK
            or np.count_nonzero(trans) > TIMED_CHOICE_MAX_FILL[decoder] * K * K):
        return rule
    table = rule if rule is not None else sparse_table(trans)
    probe(None, 1)  # compiled or loaded outside the timing
    probe(table, 1)
    times = []
    for candidate in (None, table):
        t0 = time.perf_counter()
        probe(candidate, n_probe)
        times.append(time.perf_counter() - t0)
    return table if times[1] < times[0] else None


def leading_sequences(offsets, n_positions):
    """How many of the first sequences (``offsets``: int64 (n_seq + 1,))
    a probe of :func:`timed_transition_table` decodes to cover about
    ``n_positions`` positions: at least one, at most all of them."""
    n_seq = offsets.shape[0] - 1
    return min(max(1, int(np.searchsorted(offsets, n_positions))), n_seq)


def sparse_table(trans):
    """The layout of :func:`sparse_transition_table` for any table, whatever
    the rule says (benchmarks compare the kernels with it)."""
    K = trans.shape[0]
    nnz = int(np.count_nonzero(trans))
    cols = (np.empty(K + 1, dtype=np.int64), np.empty(nnz, dtype=np.int64), np.empty(nnz))
    transition_columns(trans, *cols)
    return cols + transition_rows(*cols) + (column_bits(cols[0], cols[1]),)


def sparse_kernel_is_faster(K, nnz, decoder="viterbi", k=1):
    """Whether the sparse-table kernel of ``decoder`` is expected to beat
    the dense one on a ``K x K`` transition table with ``nnz`` non-zeros
    (``k``: sequences per chain of the list Viterbi).

    Per position (ns, random tables and scores, ``benchmarks/
    bench_certificate.py --sweep`` and ``--sweep-topk``):

    - ``"viterbi"``: the dense kernel (selects, no branch per entry) costs
      about ``0.15 K^2 + 150``; the sparse one about ``15 K`` plus
      ``0.1 + 90 / K`` per stored entry (fewer entries are read where the
      scores spread widely; this is the cost at unit spread), measured from
      16 labels. So the sparse kernel needs about 90 labels, and takes up
      to about 3 % fill at K = 100, 20 % at K = 300, 60 % at K = 1,000.
    - ``"topk"``: ``15 K + 1.5 nnz + 300 < 1.1 K^2`` (the rule once fitted
      for the Viterbi, which the dense list Viterbi's 10-30 ns per ``K^2``
      entry and position make conservative: from about 30 labels, up to 22 % fill
      at K = 32 and 53 % at 64), or up to 5 % fill, or from 16 labels up to
      30 % fill when ``k <= 5``: where the sparse list Viterbi measured
      1.6-11x faster at K = 8-64 (1.0x at K = 8, 30 % fill, ``k = 5``).
    """
    if decoder == "viterbi":
        return K >= 16 and 15.0 * K + (0.1 + 90.0 / K) * nnz < 0.15 * K * K + 150.0
    if decoder == "topk":
        fill = nnz / max(K * K, 1)
        return (15.0 * K + 1.5 * nnz + 300.0 < 1.1 * K * K or fill <= 0.05
                or (K >= 16 and k <= 5 and fill <= 0.3))
    raise ValueError(f"decoder must be 'viterbi' or 'topk', got {decoder!r}")


def viterbi(unary, offsets, trans, out, table=None):
    """Best label sequence of every chain of a batch (lowest labels on ties).

    Parameters
    ----------
    unary : float64 (N, K)
    offsets : int64 (n_seq + 1,)
    trans : float64 (K, K)
    out : int64 (N,)
        Receives the labels.
    table : tuple or None
        :func:`sparse_transition_table` of ``trans``: the sparse-table
        kernel (same labels); None: the dense kernel.
    """
    if table is None:
        viterbi_batch(unary, offsets, trans, out)
    else:
        viterbi_batch_sparse_rows(unary, offsets, *table, out)


def viterbi_topk(unary, offsets, trans, k, out_labels, out_scores, out_found, table=None):
    """The ``k`` best label sequences of every chain of a batch (list Viterbi).

    Parameters
    ----------
    unary : float64 (N, K)
    offsets : int64 (n_seq + 1,)
    trans : float64 (K, K)
    k : int
    out_labels : int64 (N, k)
        ``out_labels[offsets[s]:offsets[s + 1], r]`` receives rank ``r`` of
        sequence ``s`` (ranks past ``out_found[s]`` are not written).
    out_scores : float64 (n_seq, k)
        Their scores, ``-inf`` past the ranks found.
    out_found : int64 (n_seq,)
        Ranks found: ``min(k, number of finite-score sequences)``.
    table : tuple or None
        :func:`sparse_transition_table` of ``trans``: the sparse-table
        kernel (same sequences, scores and ties); None: the dense kernel.
    """
    if table is None:
        from ._kbest_kernels import kbest_sequences

        kbest_sequences(unary, offsets, trans, k, out_labels, out_scores, out_found)
    else:
        from ._kbest_sparse_kernels import kbest_sequences_sparse

        kbest_sequences_sparse(unary, offsets, table, k, out_labels, out_scores, out_found)
