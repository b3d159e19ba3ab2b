"""Numba kernel that walks the count-prefixed blocks of a UAI file (no validation here)."""

import numba as nb
import numpy as np


@nb.njit(cache=True)
def walk_counted_blocks(values, start, n_blocks, block_starts):
    """Follow ``n_blocks`` consecutive blocks ``count v_1 ... v_count``.

    Parameters
    ----------
    values : ndarray of float64, shape (n_values,)
        All numbers of the file.
    start : int
        Position of the first block's count.
    n_blocks : int
        Number of blocks to walk.
    block_starts : ndarray of int64, shape (n_blocks,)
        Output: position of each block's count.

    Returns
    -------
    end : int
        Position just after the last block walked.
    n_done : int
        Number of blocks walked; less than ``n_blocks`` when block ``n_done``
        has a count that is not a non-negative integer or that runs past the
        end of ``values`` (then ``end`` is that block's position).
    """
    n = values.shape[0]
    pos = start
    for b in range(n_blocks):
        if pos >= n:
            return pos, b
        c = values[pos]
        if not (c >= 0.0) or c != np.floor(c) or c > n - pos - 1:
            return pos, b
        block_starts[b] = pos
        pos += 1 + np.int64(c)
    return pos, n_blocks
