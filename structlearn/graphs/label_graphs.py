"""Label-interaction graphs learned from a 0/1 label matrix.

``chow_liu_edges`` is the maximum-likelihood tree of the labels seen as
binary variables (Chow and Liu, 1968): the maximum spanning forest of the
pairwise mutual information, over the pairs that occur together at least
once (pairs never seen together would need the dense ``L x L`` table;
labels with no such pair stay isolated, so the result is a forest).
"""

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import minimum_spanning_tree

__all__ = ["chow_liu_edges", "chow_liu_edges_from_counts", "label_mutual_information"]


def label_mutual_information(Y):
    """Mutual information of every pair of labels that co-occur.

    Parameters
    ----------
    Y : ndarray or sparse matrix of 0/1, shape (n_samples, n_labels)

    Returns
    -------
    a, b : ndarray of int64, shape (n_pairs,)
        The pairs ``a < b`` seen together in at least one sample.
    mi : ndarray of float64, shape (n_pairs,)
        Their mutual information (nats), from the empirical frequencies.
    """
    Ys = sp.csr_matrix(Y, dtype=np.float64)
    return _mutual_information(Ys.shape[0], np.asarray(Ys.sum(axis=0)).ravel(),
                               sp.triu(Ys.T @ Ys, k=1))


def _mutual_information(n_samples, counts, co):
    """:func:`label_mutual_information` from the label counts (L,) and the
    upper triangle ``co`` (sparse (L, L)) of the co-occurrence counts."""
    n = max(n_samples, 1)
    co = sp.coo_matrix(co)
    co = sp.coo_matrix((co.data[co.data > 0], (co.row[co.data > 0], co.col[co.data > 0])),
                       shape=co.shape)
    a = co.row.astype(np.int64)
    b = co.col.astype(np.int64)
    p11 = co.data / n
    pa = counts[a] / n
    pb = counts[b] / n
    cells = ((p11, pa * pb), (pa - p11, pa * (1 - pb)), (pb - p11, (1 - pa) * pb),
             (1 - pa - pb + p11, (1 - pa) * (1 - pb)))
    mi = np.zeros_like(p11)
    for p, q in cells:
        ok = (p > 0) & (q > 0)
        mi[ok] += p[ok] * np.log(p[ok] / q[ok])
    return a, b, np.maximum(mi, 0.0)


def chow_liu_edges(Y):
    """Edges of the maximum mutual-information spanning forest of the labels.

    Parameters
    ----------
    Y : ndarray or sparse matrix of 0/1, shape (n_samples, n_labels)

    Returns
    -------
    edges : ndarray of int64, shape (n_edges, 2)
        ``a < b`` per row; at most ``n_labels - 1`` edges, sorted.
    """
    return _spanning_forest(Y.shape[1], *label_mutual_information(Y))


def chow_liu_edges_from_counts(n_samples, counts, co):
    """:func:`chow_liu_edges` from counts summed over parts of the samples.

    Parameters
    ----------
    n_samples : int
    counts : ndarray of shape (n_labels,)
        Samples carrying each label.
    co : sparse matrix of shape (n_labels, n_labels)
        Upper triangle of the co-occurrence counts (``triu(Y.T @ Y, 1)``).

    Returns
    -------
    edges : ndarray of int64, shape (n_edges, 2)
    """
    counts = np.asarray(counts, dtype=np.float64)
    return _spanning_forest(counts.shape[0],
                            *_mutual_information(n_samples, counts, sp.triu(co, k=1)))


def _spanning_forest(L, a, b, mi):
    if a.size == 0:
        return np.zeros((0, 2), dtype=np.int64)
    # shift so that every co-occurring pair keeps a strictly positive weight
    # (csgraph drops explicit zeros), then take the minimum tree of -weight
    w = mi + 1e-12 * (1.0 + mi.max())
    tree = minimum_spanning_tree(sp.csr_matrix((-w, (a, b)), shape=(L, L))).tocoo()
    lo = np.minimum(tree.row, tree.col).astype(np.int64)
    hi = np.maximum(tree.row, tree.col).astype(np.int64)
    edges = np.stack([lo, hi], axis=1)
    return edges[np.lexsort((hi, lo))]
