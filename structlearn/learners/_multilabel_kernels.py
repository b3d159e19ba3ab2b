"""Numba kernels of the multilabel structural SVM with pairwise label interactions.

Model: ``score(x, y) = sum_l y_l <W[:, l], x> + sum_{a < b, E[a, b]} y_a y_b P[a, b]``
for ``y`` in ``{0, 1}^L``; ``W`` float64 ``(d, L)`` feature-major, ``P``
float64 ``(L, L)`` used on its strict upper triangle where the edge mask
``E`` (uint8 ``(L, L)``, upper triangle) is set.  Loss: Hamming.  Samples
are CSR rows (``data, indices, indptr``); ``Y`` int8 ``(n, L)`` (a signed type: numba computes ``ya - yb`` on it in int64; an unsigned one would wrap).

The structured oracle :func:`max_labeling` is exact: it enumerates all
``2^L`` labelings in Gray-code order, updating the score and the per-label
flip gains in O(L) per labeling (``L <= 30``).  With no edges it reduces to
``y_l = [u_l > 0]``.
"""

from typing import NamedTuple

import numba as nb
import numpy as np


class SampleFeatures(NamedTuple):
    """The training samples: CSR rows ``data, indices, indptr`` (n, d), the
    label matrix ``Y`` uint8/int (n, L) and the squared row norms ``xnorm2``
    float64 (n,)."""

    data: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray
    Y: np.ndarray
    xnorm2: np.ndarray

from .._borrowing import borrowing_kernel
from ..inference.exact._binary_forest_kernels import binary_forest_map
from ..inference.exact._binary_sparse_map_kernels import gray_code_max


@borrowing_kernel(python_callable=True)
def sample_scores(W, data, indices, indptr, i, out):
    """``out[l] = <W[:, l], x_i>``."""
    L = W.shape[1]
    for l in range(L):
        out[l] = 0.0
    for p in range(indptr[i], indptr[i + 1]):
        x = data[p]
        row = W[indices[p]]
        for l in range(L):
            out[l] += x * row[l]


@nb.njit(cache=True, inline="always")
def loss_augment(Y, i, u, positives):
    """Add the Hamming loss's ``1 - 2 ybar_l`` to the label scores ``u`` of
    sample ``i``; returns the unary score of the true labeling (before the
    addition) and its number of positive labels, listed in ``positives``
    (int64 (>= L,), increasing)."""
    truth = 0.0
    npos = 0
    for j in range(u.shape[0]):
        if Y[i, j] != 0:
            truth += u[j]
            positives[npos] = j
            npos += 1
        u[j] += 1.0 - 2.0 * Y[i, j]
    return truth, npos


@nb.njit(cache=True)
def max_labeling(u, P, E, n_edges, out, gain):
    """argmax over y in {0,1}^L of ``y.u + sum_{a<b, E} y_a y_b P[a, b]``.

    Ties go to the labeling met first in Gray-code order. ``gain`` float64
    (L,) scratch. Writes ``out`` (int64 (L,)); returns the best score.
    """
    L = u.shape[0]
    if n_edges == 0:
        best = 0.0
        for l in range(L):
            if u[l] > 0.0:
                out[l] = 1
                best += u[l]
            else:
                out[l] = 0
        return best
    # flip gains from all off, and the symmetric pair weights on the edges
    Wpair = np.zeros((L, L))
    for a in range(L):
        for b in range(a + 1, L):
            if E[a, b] != 0:
                Wpair[a, b] = P[a, b]
                Wpair[b, a] = P[a, b]
    for l in range(L):
        gain[l] = u[l]
    return gray_code_max(gain, Wpair, L, np.empty(L, dtype=np.int64), out)


@nb.njit(cache=True)
def _pair_score(y, P, E):
    L = y.shape[0]
    s = 0.0
    for a in range(L):
        if y[a] != 0:
            for b in range(a + 1, L):
                if y[b] != 0 and E[a, b] != 0:
                    s += P[a, b]
    return s


@nb.njit(cache=True)
def _loss_augmented(W, P, E, n_edges, scale, samples, i, scratch):
    """Raw scores ``s`` (scaled) and the loss-augmented labeling ``z`` of
    sample ``i`` (``scratch``: ``(s, u, z, gain)``, float64, float64, int64,
    float64 (L,)); returns the hinge."""
    data, indices, indptr, Y = samples[0], samples[1], samples[2], samples[3]
    s, u, z, gain = scratch
    L = W.shape[1]
    sample_scores(W, data, indices, indptr, i, s)
    for l in range(L):
        s[l] *= scale
        u[l] = s[l] + (1.0 - 2.0 * Y[i, l])
    if scale == 1.0:
        best = max_labeling(u, P, E, n_edges, z, gain)
    else:
        best = max_labeling(u, P * scale, E, n_edges, z, gain)
    truth = 0.0
    for l in range(L):
        truth += Y[i, l] * u[l]
    h = best - truth - scale * _pair_score(Y[i], P, E)
    # (constant sum(ybar) of the Hamming loss cancels in best - truth)
    return h if h > 0.0 else 0.0


@nb.njit(cache=True, nogil=True)
def multilabel_hinge_sum(W, P, E, n_edges, scale, data, indices, indptr, Y):
    """Summed structured hinge losses of ``(scale * W, scale * P)``, exact oracle."""
    n, L = Y.shape
    samples = (data, indices, indptr, Y)
    scratch = (np.empty(L), np.empty(L), np.empty(L, dtype=np.int64), np.empty(L))
    total = 0.0
    for i in range(n):
        total += _loss_augmented(W, P, E, n_edges, scale, samples, i, scratch)
    return total


@nb.njit(cache=True, nogil=True)
def multilabel_primal(W, P, E, n_edges, scale, data, indices, indptr, Y, C):
    """Primal objective of ``(scale * W, scale * P)`` with the exact oracle."""
    L = Y.shape[1]
    total = multilabel_hinge_sum(W, P, E, n_edges, scale, data, indices, indptr, Y)
    reg = 0.0
    for f in range(W.shape[0]):
        for l in range(L):
            reg += W[f, l] * W[f, l]
    for a in range(L):
        for b in range(a + 1, L):
            if E[a, b] != 0:
                reg += P[a, b] * P[a, b]
    return 0.5 * scale * scale * reg + C * total


@nb.njit(cache=True, nogil=True)
def predict_labelings(W, P, E, n_edges, data, indices, indptr, out):
    """Exact MAP labeling of every sample into ``out`` (int64 (n, L))."""
    n, L = out.shape
    s = np.empty(L)
    gain = np.empty(L)
    for i in range(n):
        sample_scores(W, data, indices, indptr, i, s)
        max_labeling(s, P, E, n_edges, out[i], gain)


@nb.njit(cache=True)
def multilabel_bcfw_pass(samples, order, C, W, P, E, n_edges, q, Q, loss, stats):
    """One BCFW pass over the samples in ``order`` (exact line search) of
    ``samples`` (:class:`SampleFeatures`).

    Block ``i`` stores ``q[i]`` = E[y] (float64 (n, L)) and ``Q[i]`` =
    E[y_a y_b] (float64 (n, L, L), upper triangle on edges) of its
    distribution over labelings, and ``loss[i]`` = C E[Hamming].
    ``stats[0]`` receives the summed block gaps, ``stats[1]`` += labelings
    enumerated.
    """
    data, indices, indptr, Y, xnorm2 = samples
    n, L = Y.shape
    s = np.empty(L)
    u = np.empty(L)
    z = np.empty(L, dtype=np.int64)
    scratch = (s, u, z, np.empty(L))
    gsum = 0.0
    for i in order:
        _loss_augmented(W, P, E, n_edges, 1.0, samples, i, scratch)
        stats[1] += (1 << L) if n_edges > 0 else L
        lin = 0.0
        sq_u = 0.0
        ham = 0.0
        for l in range(L):
            dl = z[l] - q[i, l]
            lin += s[l] * dl
            sq_u += dl * dl
            if z[l] != Y[i, l]:
                ham += 1.0
        sq_p = 0.0
        for a in range(L):
            for b in range(a + 1, L):
                if E[a, b] != 0:
                    dp = z[a] * z[b] - Q[i, a, b]
                    lin += P[a, b] * dp
                    sq_p += dp * dp
        sq = xnorm2[i] * sq_u + sq_p
        ls = C * ham
        gap = C * lin - loss[i] + ls
        gsum += gap
        if sq <= 0.0:
            continue
        gamma = gap / (C * C * sq)
        if gamma <= 0.0:
            continue
        if gamma > 1.0:
            gamma = 1.0
        step = C * gamma
        for p in range(indptr[i], indptr[i + 1]):
            x = data[p] * step
            row = W[indices[p]]
            for l in range(L):
                row[l] -= x * (z[l] - q[i, l])
        for l in range(L):
            q[i, l] += gamma * (z[l] - q[i, l])
        for a in range(L):
            for b in range(a + 1, L):
                if E[a, b] != 0:
                    dp = z[a] * z[b] - Q[i, a, b]
                    P[a, b] -= step * dp
                    Q[i, a, b] += gamma * dp
        loss[i] = (1.0 - gamma) * loss[i] + gamma * ls
    stats[0] = gsum


@nb.njit(cache=True)
def multilabel_ssg_pass(samples, order, Cn, Wsum, Psum, Wacc, Pacc, E, n_edges, t0, stats):
    """One Pegasos pass over ``samples`` (:class:`SampleFeatures`); same
    running-sum scheme as the chain SSG kernel
    (:func:`._bcfw_chain_kernels.ssg_chain_pass`). Returns the step count."""
    data, indices, indptr, Y = samples[0], samples[1], samples[2], samples[3]
    n, L = Y.shape
    s = np.empty(L)
    u = np.empty(L)
    z = np.empty(L, dtype=np.int64)
    scratch = (s, u, z, np.empty(L))
    t = t0
    for i in order:
        scale = 1.0 / t if t > 0 else 0.0
        _loss_augmented(Wsum, Psum, E, n_edges, scale, samples, i, scratch)
        stats[1] += (1 << L) if n_edges > 0 else L
        t += 1
        wk = float(t - 1)
        for p in range(indptr[i], indptr[i + 1]):
            x = data[p] * Cn
            row = Wsum[indices[p]]
            arow = Wacc[indices[p]]
            for l in range(L):
                dl = Y[i, l] - z[l]
                if dl != 0:
                    row[l] += x * dl
                    arow[l] += wk * x * dl
        for a in range(L):
            for b in range(a + 1, L):
                if E[a, b] != 0:
                    dp = Y[i, a] * Y[i, b] - z[a] * z[b]
                    if dp != 0:
                        Psum[a, b] += Cn * dp
                        Pacc[a, b] += wk * Cn * dp
    return t


@nb.njit(cache=True, nogil=True)
def forest_hinges(W, data, indices, indptr, Y, order, parent, weight, out):
    """Exact hinge of every sample when the interaction edges form a forest.

    ``out[i] = max_y [score_i(y) + Hamming(y, ybar_i)] - score_i(ybar_i)``
    by max-product on the rooted forest (``order``, ``parent``, ``weight``:
    see :mod:`structlearn.inference.exact._binary_forest_kernels`; ``weight[j]``
    the pair weight of ``(parent[j], j)``).  O(nnz(x_i) L) per sample for
    the label scores, O(L) for the rest.  ``out`` float64 (n,).
    """
    n, L = Y.shape
    u = np.empty(L)
    msg0 = np.empty(L)
    msg1 = np.empty(L)
    z = np.empty(L, dtype=np.int64)
    pos = np.empty(L, dtype=np.int64)
    for i in range(n):
        sample_scores(W, data, indices, indptr, i, u)
        truth, npos = loss_augment(Y, i, u, pos)
        for r in range(npos):
            p = parent[pos[r]]
            if p >= 0 and Y[i, p] != 0:
                truth += weight[pos[r]]
        best = binary_forest_map(u, order, parent, weight, msg0, msg1, z)
        h = best + npos - truth
        out[i] = h if h > 0.0 else 0.0
