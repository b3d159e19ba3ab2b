"""Small search kernels shared by the inference kernels (no validation here)."""

import numba as nb


@nb.njit(cache=True, inline="always")
def sorted_find(values, lo, hi, x):
    """Position of ``x`` in ``values[lo:hi]`` (increasing), or -1. Binary search."""
    end = hi
    while lo < hi:
        mid = (lo + hi) // 2
        if values[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    if lo < end and values[lo] == x:
        return lo
    return -1
