"""Inner-product factor oracle: argmax over labels of w(y) . phi(x).

A unigram factor of a structural SVM scores label ``y`` of a token with
features ``phi`` (a sparse CSR row) by ``w(y) . phi``.  Its greedy step
(eq. 26 with ``delta_f`` the Hamming loss and the messages on unigram
factors) needs

    argmax_{y != ex}  w(y) . phi + c(y) + loss * [y != gt]

with ``c`` a sparse additive term (messages times ``rho_f``; 0 for unlisted
labels).  Two modes:

* exact (:func:`inner_product_fmo`): scores of all ``K`` labels,
  ``O(nnz(phi) * K)``, vectorized over ``K`` (``W`` is stored
  ``(n_features, K)`` so each non-zero feature adds one contiguous row);
* nu-partition sampling (:func:`inner_product_fmo_sampled`, eq. 21): the
  labels are split into ``nu`` fixed, disjoint parts and the search runs on
  one part ``k`` drawn uniformly, at ``O(nnz(phi) * K / nu)``.  The parts
  are contiguous label blocks ``[k * K // nu, (k + 1) * K // nu)`` (pass an
  empty ``perm``; each non-zero feature then reads one contiguous slice of
  its row of ``W``), or ``perm[k * K // nu : (k + 1) * K // nu]`` for a
  permutation ``perm`` fixed for the whole run (a gather, about 2x slower).
  The bound of eq. 21 only needs the partition to be fixed and ``k``
  uniform: the true argmax lies in the drawn part with probability >= 1/nu.
  ``nu = 1`` is the exact oracle.

Reproducibility: kernels never draw random numbers.  The caller draws the
permutation and the part indices from its seeded generator before entering
numba (e.g. ``rng = check_random_state(random_state)``;
``parts = rng.randint(nu, size=n_calls)``), so
the same ``random_state`` gives the same results whatever the threading.
:func:`inner_product_argmax` does this for one call.

Calling from numba
------------------
Kernels in ``structlearn.oracles._inner_kernels``::

    inner_product_scores(W, indices, data, start, end, out)        # out[:K] = W.T @ phi
    best, y = inner_product_fmo(W, indices, data, start, end,
                                add_idx, add_val, n_add, loss, gt, ex, workspace)
    best, y = inner_product_fmo_sampled(W, indices, data, start, end, perm, nu, part,
                                        add_idx, add_val, n_add, loss, gt, ex, workspace)

``indices[start:end]``, ``data[start:end]``: the CSR row of ``phi`` (e.g.
``X.indices``, ``X.data``, ``X.indptr[i]``, ``X.indptr[i + 1]``).
``W`` float64 ``(n_features, K)`` C-contiguous.  ``loss, gt``: float and
int (``gt = -1``: no loss); ``ex``: excluded label or -1.  ``workspace``
from :func:`make_inner_workspace` ``(K)``: ``(scores, extra)``; after an
exact call ``workspace[0][:K]`` holds the raw scores ``W.T @ phi``.
Returns ``(best, y)``, ``(-inf, -1)`` when no label is above -inf.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ._inner_kernels import inner_product_fmo, inner_product_fmo_sampled, inner_product_scores

__all__ = [
    "make_inner_workspace",
    "inner_product_argmax",
    "inner_product_fmo",
    "inner_product_fmo_sampled",
    "inner_product_scores",
]


def make_inner_workspace(n_labels):
    """Scratch ``(scores, extra)`` float64 arrays of length ``n_labels`` (``extra`` zero)."""
    K = int(n_labels)
    if K != n_labels or K < 0:
        raise ValueError(f"n_labels must be a non-negative integer, got {n_labels!r}")
    return np.zeros(K, dtype=np.float64), np.zeros(K, dtype=np.float64)


def inner_product_argmax(W, x, *, add=None, loss=0.0, gt=-1, exclude=-1, nu=1,
                         random_state=None, perm=None):
    """Checked Python entry to the inner-product oracle (one call).

    Parameters
    ----------
    W : array of shape (n_features, K)
    x : array of shape (n_features,) or sparse matrix of shape (1, n_features)
    add : tuple ``(labels, values)``, optional
        Sparse additive term ``c``.
    loss : float
        Added for every label other than ``gt`` (``gt = -1``: none).
    gt, exclude : int
        Ground-truth label (for the loss) and excluded label (-1: none).
    nu : int
        Number of partitions (1 = exact).
    random_state : None, int or RandomState
        Draws the partition index for ``nu > 1``.
    perm : int array of shape (K,), optional
        Fixed label permutation defining the partitions (default: contiguous
        label blocks).

    Returns
    -------
    best : float
    y : int
    """
    W = np.ascontiguousarray(W, dtype=np.float64)
    if W.ndim != 2:
        raise ValueError(f"W must be 2-D (n_features, K), got shape {W.shape}")
    d, K = W.shape
    x = sp.csr_matrix(x if sp.issparse(x) else np.asarray(x, dtype=np.float64).reshape(1, -1))
    if x.shape != (1, d):
        raise ValueError(f"x must have {d} features in one row, got shape {x.shape}")
    indices = x.indices.astype(np.int64)
    data = x.data.astype(np.float64)
    if add is None:
        add_idx, add_val = np.zeros(0, dtype=np.int64), np.zeros(0)
    else:
        add_idx = np.asarray(add[0], dtype=np.int64)
        add_val = np.asarray(add[1], dtype=np.float64)
        if add_idx.shape != add_val.shape or add_idx.ndim != 1:
            raise ValueError("add must be (labels, values) of equal 1-D shape")
        if add_idx.size and (add_idx.min() < 0 or add_idx.max() >= K):
            raise ValueError(f"add labels must lie in [0, {K})")
        if np.unique(add_idx).size != add_idx.size:
            raise ValueError("add labels must be distinct")
    if int(nu) != nu or not 1 <= nu <= max(K, 1):
        raise ValueError(f"nu must be an integer in [1, K={K}], got {nu!r}")
    ws = make_inner_workspace(K)
    if nu == 1 and perm is None:
        best, y = inner_product_fmo(W, indices, data, 0, indices.shape[0], add_idx, add_val,
                                    add_idx.shape[0], float(loss), int(gt), int(exclude), ws)
        return float(best), int(y)
    from sklearn.utils import check_random_state  # late: MAP inference alone needs no sklearn
    rng = check_random_state(random_state)
    if perm is None:
        perm = np.zeros(0, dtype=np.int64)
    else:
        perm = np.asarray(perm, dtype=np.int64)
        if perm.shape != (K,) or not np.array_equal(np.sort(perm), np.arange(K)):
            raise ValueError(f"perm must be a permutation of range({K})")
    part = int(rng.randint(int(nu)))
    best, y = inner_product_fmo_sampled(W, indices, data, 0, indices.shape[0], perm, int(nu), part,
                                        add_idx, add_val, add_idx.shape[0], float(loss), int(gt),
                                        int(exclude), ws)
    return float(best), int(y)
