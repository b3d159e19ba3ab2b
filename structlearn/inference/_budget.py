"""Time limits and iteration caps shared by every MAP back-end.

One rule for all back-ends: ``time_limit`` is ``None`` (no limit) or a
positive, finite number of seconds.  An iterative back-end given a time limit
and no explicit ``max_iter`` runs until the limit or a certified optimum;
without a time limit it stops after :data:`DEFAULT_MAX_ITER` iterations.
"""

import numbers
import sys

import numpy as np

__all__ = ["DEFAULT_MAX_ITER", "check_time_limit", "resolve_max_iter"]

DEFAULT_MAX_ITER = 1000


def check_time_limit(time_limit, name="time_limit"):
    """Validate a time limit; returns it as a float (or None).

    Raises
    ------
    TypeError
        For a non-numeric value (strings, bools).
    ValueError
        For zero, negative, NaN or infinite values.
    """
    if time_limit is None:
        return None
    if isinstance(time_limit, bool) or not isinstance(time_limit, numbers.Real):
        raise TypeError(f"{name} must be a positive number of seconds or None, "
                        f"got {time_limit!r}")
    value = float(time_limit)
    if not (value > 0 and np.isfinite(value)):
        raise ValueError(f"{name} must be a positive, finite number of seconds or None, "
                         f"got {time_limit!r}")
    return value


def resolve_max_iter(max_iter, time_limit):
    """The iteration cap to run under: ``max_iter`` when the user set one,
    else :data:`DEFAULT_MAX_ITER` without a time limit and no cap with one."""
    if max_iter is not None:
        return max_iter
    return DEFAULT_MAX_ITER if time_limit is None else sys.maxsize
