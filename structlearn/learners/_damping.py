"""Damping of partitioned rounds measured from the partitions' moves.

CoCoA+ adding (see :mod:`._partitions`) keeps a round from raising the
objective when the partitions' undamped moves ``dw_p`` satisfy

    ||sum_p dw_p||^2 <= sigma' sum_p ||dw_p||^2

and each partition steps against its copy with its moves and curvature
scaled by ``sigma'``.  ``sigma' = P`` holds for any moves, but damps every
step P times also where the moves hardly overlap.  Measured on generated
chains (16 partitions of 3,125 tokens, 1,000 labels, 16,000 features), the
ratio ``||sum_p dw_p||^2 / sum_p ||dw_p||^2`` of the weight rows was 7.5 in
the first round, below 1.1 from the sixth on (the late moves are
corrections that cancel more than they add up), and ``sigma' = 16`` took
the fit 2.4 times the passes of one partition to a 7 % gap.

So each round measures that ratio for the weight rows and for the
transition table, each on its own, and the next round's ``sigma'`` is
``SAFETY`` times it, at least half the round's own (a smaller ``sigma'``
makes larger moves, which align more: it falls by halves), at least 1 and
at most ``P``, rounded up to the grid ``2^(k / GRID)``, so that rounding in
the measured norms (threads and dask workers sum them in other orders)
almost never changes it.  The first round has ``sigma' = P``.  A feature
used by fewer partitions keeps ``min(count_f, sigma')`` (see
:func:`._partitions.feature_sigmas`).

The certificate does not depend on ``sigma'``: it is taken on the merged
duals.  A round whose moves exceed the bound they were made under (ratio
above ``sigma'``) stands: its merged step may raise the objective, and the
next ``sigma'`` rises with the ratio.
"""

import math

import numba as nb
import numpy as np

__all__ = ["MeasuredDamping", "scale_steps", "squared_distance", "squared_norm",
           "squared_row_distance"]

SAFETY = 4.0
GRID = 4


class MeasuredDamping:
    """The damping of the weight rows and of the transition table, per round.

    Parameters
    ----------
    n_parts : int
        Partitions (the first round's damping, and the largest).

    Attributes
    ----------
    weights, transitions : float
        ``sigma'`` of the next round's weight-row and transition moves.
    """

    def __init__(self, n_parts):
        self.n_parts = int(n_parts)
        self.weights = self.transitions = float(self.n_parts)

    def update(self, merged_w, spread_w, merged_v, spread_v):
        """Set the next round's damping from this round's moves.

        Parameters
        ----------
        merged_w, spread_w : float
            ``||sum_p dw_p||^2`` and ``sum_p ||dw_p||^2`` over the weight rows.
        merged_v, spread_v : float
            The same over the transition table.
        """
        self.weights = self._next(self.weights, merged_w, spread_w)
        self.transitions = self._next(self.transitions, merged_v, spread_v)

    def _next(self, sigma, merged, spread):
        if not (spread > 0.0 and math.isfinite(merged) and math.isfinite(spread)):
            return sigma  # nothing moved (or nothing finite): no measure
        target = min(float(self.n_parts), max(SAFETY * merged / spread, 0.5 * sigma, 1.0))
        on_grid = 2.0 ** (math.ceil(math.log2(target) * GRID - 1e-9) / GRID)
        return min(float(self.n_parts), on_grid)


@nb.njit(cache=True, nogil=True)
def scale_steps(data, indices, indptr, count, sigma, row_sigma, step_data, xnorm2):
    """A partition's steps under damping ``sigma``, in place.

    Parameters
    ----------
    data, indices, indptr : float64, int64, int64
        The partition's CSR features (local rows).
    count : float64 (d_p,)
        Per local row, the partitions using its feature.
    sigma : float
        The round's ``sigma'``.
    row_sigma : float64 (d_p,)
        Set to ``min(count, sigma)``.
    step_data : float64 (nnz,)
        Set to ``data * row_sigma[indices]``.
    xnorm2 : float64 (n,)
        Set to each row's ``sum data * step_data``.
    """
    for r in range(count.shape[0]):
        row_sigma[r] = min(count[r], sigma)
    for j in range(indptr.shape[0] - 1):
        total = 0.0
        for p in range(indptr[j], indptr[j + 1]):
            step = data[p] * row_sigma[indices[p]]
            step_data[p] = step
            total += data[p] * step
        xnorm2[j] = total


# the sums of squares below may be reassociated (vectorized): a damping
# rounds its measure up to a grid, and a strict order of additions would
# make the merge's sweep several times slower
@nb.njit(cache=True, nogil=True, fastmath={"reassoc", "nsz"})
def squared_norm(a):
    """``sum a^2`` of a 1-D array, in float64."""
    total = 0.0
    for k in range(a.shape[0]):
        x = np.float64(a[k])
        total += x * x
    return total


@nb.njit(cache=True, nogil=True, fastmath={"reassoc", "nsz"})
def squared_distance(a, b):
    """``sum (a - b)^2`` of two 1-D float64 arrays of one length."""
    total = 0.0
    for k in range(a.shape[0]):
        d = a[k] - b[k]
        total += d * d
    return total


@nb.njit(cache=True, nogil=True, fastmath={"reassoc", "nsz"})
def squared_row_distance(W, rows, start):
    """``sum_r ||W[rows[r]] - start[r]||^2`` (``W`` float64 (d, K), ``rows``
    int64 (m,), ``start`` float64 (m, K)), without gathering the rows."""
    total = 0.0
    for r in range(rows.shape[0]):
        total += squared_distance(W[rows[r]], start[r])
    return total
