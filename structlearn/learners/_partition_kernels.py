"""Partitions redrawn every round: each partition's weight rows, the
samples' features renumbered to them and the damped steps (a numba
kernel), the partitions' copies of their rows and the merge of the copies'
moves."""

import numba as nb
import numpy as np

from ._gdmm_chain_kernels import gather_rows, merge_copies
from ._partitions import merge_block

__all__ = ["RoundLayout"]


@nb.njit(cache=True, nogil=True)
def _layout_kernel(csr, order, bounds, cap, out, scratch):
    """Fill the layout of the partitions ``order[bounds[k]:bounds[k + 1]]``.

    ``csr``: ``(data, indices, indptr)``; ``cap``: the round's damping (a
    feature's ``sigma`` is at most it); ``out``: ``(local, step_data,
    xnorm_sigma, sigma, rows, rows_ptr)`` as in :class:`RoundLayout`;
    ``scratch``: ``(stamp, where)``, int64 (d,) each, ``stamp`` all -1
    (and left so).
    """
    data, indices, indptr = csr
    local, step_data, xnorm_sigma, sigma, rows, rows_ptr = out
    stamp, where = scratch
    P = bounds.shape[0] - 1
    sigma[:] = 0.0
    n_rows = 0
    for k in range(P):
        rows_ptr[k] = n_rows
        for t in range(bounds[k], bounds[k + 1]):
            i = order[t]
            for p in range(indptr[i], indptr[i + 1]):
                f = indices[p]
                if stamp[f] != k:
                    stamp[f] = k
                    sigma[f] += 1.0
                    rows[n_rows] = f
                    n_rows += 1
        rows[rows_ptr[k]:n_rows].sort()
    rows_ptr[P] = n_rows
    for f in range(sigma.shape[0]):
        stamp[f] = -1
        sigma[f] = min(max(sigma[f], 1.0), cap)
    for k in range(P):
        for r in range(rows_ptr[k], rows_ptr[k + 1]):
            where[rows[r]] = r - rows_ptr[k]
        for t in range(bounds[k], bounds[k + 1]):
            i = order[t]
            sq = 0.0
            for p in range(indptr[i], indptr[i + 1]):
                f = indices[p]
                local[p] = where[f]
                step_data[p] = data[p] * sigma[f]
                sq += data[p] * data[p] * sigma[f]
            xnorm_sigma[i] = sq


class RoundLayout:
    """The partitions of one round and what their passes read.

    Every partition runs over the shared CSR arrays with the sample ids of
    the whole problem; only the feature ids and the step values differ from
    the problem's, and they are rewritten in place each round (so a fit
    holds one copy of them, whatever the number of partitions).

    Attributes
    ----------
    local : ndarray of int64, shape (nnz,)
        Each entry's feature id in its sample's partition's rows.
    step_data : ndarray of float64, shape (nnz,)
        ``data[p] * sigma[indices[p]]``: what a partition's weight copy moves
        by per unit of dual.
    xnorm_sigma : ndarray of float64, shape (n,)
        ``sum_f sigma_f x_if^2`` per sample: its steps' curvature.
    sigma : ndarray of float64, shape (d,)
        The partitions of this round that use each feature (at least 1),
        at most the round's damping (:mod:`._damping`).
    rows, rows_ptr : ndarray of int64, shapes (<= nnz,), (P + 1,)
        Partition ``k``'s weight rows, increasing:
        ``rows[rows_ptr[k]:rows_ptr[k + 1]]``.

    Parameters
    ----------
    data, indices, indptr : ndarray
        The samples' CSR rows (n, ``n_features``).
    n_features : int
    """

    def __init__(self, data, indices, indptr, n_features):
        data = np.asarray(data, dtype=np.float64)
        indices = np.asarray(indices, dtype=np.int64)
        indptr = np.asarray(indptr, dtype=np.int64)
        self._csr = (data, indices, indptr)
        nnz = indices.shape[0]
        self.local = np.empty(nnz, dtype=np.int64)
        self.step_data = np.empty(nnz)
        self.xnorm_sigma = np.zeros(indptr.shape[0] - 1)
        self.sigma = np.ones(n_features)
        self.rows = np.empty(nnz, dtype=np.int64)
        self.rows_ptr = np.zeros(1, dtype=np.int64)
        self._stamp = np.full(n_features, -1, dtype=np.int64)
        self._where = np.zeros(n_features, dtype=np.int64)

    def redraw(self, order, bounds, cap=np.inf):
        """Lay out the partitions ``order[bounds[k]:bounds[k + 1]]`` (int64
        sample ids; every sample in at most one of them), each feature's
        damping at most ``cap``.  O(nnz of the partitions' samples + d)."""
        data, indices, indptr = self._csr
        self.rows_ptr = np.zeros(bounds.shape[0], dtype=np.int64)
        _layout_kernel((data, indices, indptr), order, bounds, float(cap),
                       (self.local, self.step_data, self.xnorm_sigma, self.sigma, self.rows,
                        self.rows_ptr), (self._stamp, self._where))

    def part_rows(self, k):
        """Partition ``k``'s weight rows (a view)."""
        return self.rows[self.rows_ptr[k]:self.rows_ptr[k + 1]]

    def gather_copies(self, W):
        """The partitions' copies of their weight rows of ``W`` (d, K), one
        array (sum d_k, K): partition ``k``'s are rows
        ``rows_ptr[k]:rows_ptr[k + 1]``."""
        rows = self.rows[:self.rows_ptr[-1]]
        copies = np.empty((rows.shape[0], W.shape[1]))
        gather_rows(W, rows, copies)
        return copies

    def merge_copies(self, W, copies):
        """Add each partition's move of its rows (its copy against ``W``,
        the damping ``sigma`` undone) to ``W``, in partition order.  Returns
        ``(||sum_k move_k||^2, sum_k ||move_k||^2)`` (:mod:`._damping`);
        ``copies`` are overwritten."""
        rows = self.rows[:self.rows_ptr[-1]]
        norms = np.zeros(2)
        P = self.rows_ptr.shape[0] - 1
        merge_copies(W, rows, self.sigma[rows], self.rows_ptr, copies, 0, W.shape[0],
                     merge_block(W.shape[1], P, copies.itemsize), norms)
        return float(norms[0]), float(norms[1])

