"""Numba kernel of :mod:`.potts_persistency`: the Potts weights of many
tables in one pass."""

import numba as nb
import numpy as np


@nb.njit(cache=True)
def potts_weights(table_data, table_offsets, keys, tol):
    """Each keyed table's weight ``w`` in ``c + w [a == b]``, or NaN.

    Parameters
    ----------
    table_data, table_offsets : float64 (total,), int64 (n_tables + 1,)
        The graph's tables, row-major.
    keys : int64 (m, 3)
        Per row: a table's index and the domain sizes of its first and
        second variables (its rows and columns).
    tol : float
        Entries agree within ``tol * max(1, largest |entry|)``.

    Returns
    -------
    w : float64 (m,)
        ``diag - c`` where every diagonal entry agrees with the first and
        every other one with the first off the diagonal, and ``w`` is not
        below ``-scale``; 0 for a 1 x 1 table; NaN otherwise (a non-finite
        entry included).
    """
    m = keys.shape[0]
    out = np.empty(m)
    for u in range(m):
        t, rows, cols = keys[u, 0], keys[u, 1], keys[u, 2]
        base = table_offsets[t]
        largest, finite = 1.0, True
        for k in range(base, base + rows * cols):
            v = table_data[k]
            if not np.isfinite(v):
                finite = False
                break
            largest = max(largest, abs(v))
        if not finite:
            out[u] = np.nan
            continue
        if rows * cols == 1:  # nothing to compare: any weight fits
            out[u] = 0.0
            continue
        scale = tol * largest
        diag = table_data[base]
        c = table_data[base + 1]  # the first entry off the diagonal (row-major)
        potts = True
        for k in range(rows * cols):
            a, b = divmod(k, cols)
            if abs(table_data[base + k] - (diag if a == b else c)) > scale:
                potts = False
                break
        w = diag - c
        out[u] = w if potts and w >= -scale else np.nan
    return out
