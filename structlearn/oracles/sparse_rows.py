"""Feature-major weights ``W`` (n_features, K) stored as sparse rows.

GDMM's unigram weights are ``W = sum_j x_j (x) alpha_j``: a feature's row
holds only the labels some token with that feature has a dual value on,
a few percent of ``K`` when ``K`` is in the thousands.  Stored as sorted
(label, weight) rows in one pool (:mod:`._sparse_rows_kernels`), the
inner-product oracle of a token costs O(K + sum of its rows' lengths)
instead of O(nnz(x) K), and the weights take memory in proportion to their
non-zeros.
Every value (scores, ``||W||^2``, updates) equals the dense computation's.

The state is a tuple ``(start, length, cap, lab, val, meta)`` of arrays;
the kernels that may grow the pool return the new tuple.
"""

import numpy as np
import scipy.sparse as sp

__all__ = ["make_sparse_rows", "make_sparse_rows_workspace", "sparse_rows_to_csr",
           "sparse_rows_to_dense", "sparse_rows_nnz"]


def make_sparse_rows(n_rows, capacity=1024):
    """Empty weights (all zero) with ``n_rows`` rows and room for ``capacity`` entries.

    Returns
    -------
    rows : tuple (start int64 (n_rows,), length int64 (n_rows,), cap int64
        (n_rows,), lab int32 (capacity,), val float64 (capacity,), meta int64 (1,):
        the pool's used size)
    """
    n = int(n_rows)
    capacity = max(int(capacity), 16)
    return (np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64),
            np.zeros(n, dtype=np.int64), np.zeros(capacity, dtype=np.int32),
            np.zeros(capacity), np.zeros(1, dtype=np.int64))


def make_sparse_rows_workspace(n_labels):
    """Scratch of :func:`~._sparse_rows_kernels.sparse_rows_update`: int64
    (n_labels,), all -1."""
    return np.full(int(n_labels), -1, dtype=np.int64)


def sparse_rows_nnz(rows):
    """Stored entries."""
    return int(rows[1].sum())


def sparse_rows_to_dense(rows, n_labels):
    """The weights as a float64 array of shape (n_rows, n_labels)."""
    from ._sparse_rows_kernels import sparse_rows_fill_dense

    out = np.zeros((rows[0].shape[0], int(n_labels)))
    sparse_rows_fill_dense(rows, out)
    return out


def sparse_rows_to_csr(rows, n_labels):
    """The weights as a CSR matrix of shape (n_rows, n_labels), float64 values,
    int64 indices, sorted, explicit zeros kept out."""
    start, length, _, lab, val, _ = rows
    n = start.shape[0]
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(length, out=indptr[1:])
    # pool positions of every stored entry, row by row
    pos = np.repeat(start - indptr[:-1], length) + np.arange(indptr[-1], dtype=np.int64)
    out = sp.csr_matrix((val[pos], lab[pos].astype(np.int64), indptr), shape=(n, int(n_labels)))
    out.eliminate_zeros()
    out.indices = out.indices.astype(np.int64, copy=False)
    out.indptr = out.indptr.astype(np.int64, copy=False)
    return out
