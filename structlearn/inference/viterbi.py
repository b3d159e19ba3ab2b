"""Max-sum Viterbi and list Viterbi (top k) over stacked chains: the dense
kernels, or the sparse-table kernels where the transition table is mostly
zero (a structural SVM's table keeps only the transitions its duals touched)."""

import numpy as np

from ._chain_kernels import (column_bits, transition_columns, transition_rows, viterbi_batch,
                             viterbi_batch_sparse_rows)

__all__ = ["SPARSE_VITERBI_MIN_LABELS", "sparse_transition_table", "viterbi", "viterbi_topk"]

# the sparse-table kernel is considered from this many labels, where its cost
# model is below the dense one's (see sparse_transition_table)
SPARSE_VITERBI_MIN_LABELS = 32


def sparse_transition_table(trans):
    """A mostly-zero transition table prepared for the sparse-table Viterbi,
    or None when the dense Viterbi is the faster.

    Parameters
    ----------
    trans : float64 (K, K)

    Returns
    -------
    (col_ptr, col_rows, col_vals, row_ptr, row_cols, row_vals, bits) or None
        The table by column (int64 (K + 1,), int64 (nnz,), float64 (nnz,):
        :func:`._chain_kernels.transition_columns`), by row
        (:func:`._chain_kernels.transition_rows`) and as a bitset
        (:func:`._chain_kernels.column_bits`);
        None below ``SPARSE_VITERBI_MIN_LABELS`` labels or where the dense
        Viterbi is expected to be the faster.

    Per position the sparse kernel costs about 15 ns per label plus up to
    1.5 ns per stored entry (fewer are read where the scores spread widely),
    the dense one about 1.1 ns per ``K^2`` entry (random tables, K = 16-600,
    fills 2-50 %): the sparse kernel is chosen where ``15 K + 1.5 nnz + 300
    < 1.1 K^2``: up to about 20 % fill at K = 32, 45 % at K = 50 and 60-70 %
    from K = 100.
    """
    K = trans.shape[0]
    if K < SPARSE_VITERBI_MIN_LABELS:
        return None
    nnz = int(np.count_nonzero(trans))
    if 15.0 * K + 1.5 * nnz + 300.0 >= 1.1 * K * K:
        return None
    cols = (np.empty(K + 1, dtype=np.int64), np.empty(nnz, dtype=np.int64), np.empty(nnz))
    transition_columns(trans, *cols)
    return cols + transition_rows(*cols) + (column_bits(cols[0], cols[1]),)


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

        kbest_sequences_sparse(unary, offsets, *table, k, out_labels, out_scores, out_found)
