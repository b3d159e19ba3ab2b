"""Small helpers for lists of sparse row blocks."""

import numpy as np
import scipy.sparse as sp

__all__ = ["csr_around", "split_csr_rows"]


def split_csr_rows(matrix, offsets):
    """Split a CSR matrix into the row blocks ``[offsets[i], offsets[i + 1])``.

    Parameters
    ----------
    matrix : scipy.sparse.csr_matrix of shape (n_rows, n_cols)
    offsets : int array of shape (n_blocks + 1,)
        Non-decreasing, ``offsets[0] == 0`` and ``offsets[-1] == n_rows``.

    Returns
    -------
    blocks : list of scipy.sparse.csr_matrix, block i of shape (offsets[i+1] - offsets[i], n_cols)
        The blocks share ``data`` and ``indices`` with ``matrix`` (slices, no
        per-row work).
    """
    n_cols = matrix.shape[1]
    indptr, indices, data = matrix.indptr, matrix.indices, matrix.data
    offsets = np.asarray(offsets, dtype=np.int64)
    out = []
    for start, stop in zip(offsets[:-1].tolist(), offsets[1:].tolist()):
        lo, hi = int(indptr[start]), int(indptr[stop])
        out.append(
            sp.csr_matrix(
                (data[lo:hi], indices[lo:hi], indptr[start : stop + 1] - lo),
                shape=(stop - start, n_cols),
            )
        )
    return out


def csr_around(data, indices, indptr, shape, *, canonical):
    """A CSR matrix holding these very arrays (scipy's constructor would copy
    int64 indices that fit into int32).

    Parameters
    ----------
    data : float64 (nnz,)
    indices, indptr : int64 (nnz,), (n_rows + 1,)
    shape : (n_rows, n_cols)
    canonical : bool
        Whether the rows are known to be sorted without duplicates (then
        scipy does not check or sort them again).
    """
    X = sp.csr_matrix(shape, dtype=np.float64)
    X.data, X.indices, X.indptr = data, indices, indptr
    X.has_canonical_format = bool(canonical)
    return X
