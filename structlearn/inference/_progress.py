"""Progress lines of long solves (the command line's ``--progress``).

Solvers call :func:`report` once per iteration (or search node); it costs a
global lookup unless a printer is installed with :func:`printing`, which
writes at most one line per ``every`` seconds.  Solves nested inside another
solver (branch and bound's node bounds, partitioning's subspaces) run under
:func:`quiet`, so the lines follow the outer search.
"""

import math
import time
from contextlib import contextmanager

__all__ = ["printing", "quiet", "report"]

_printer = None
_quiet = 0


class _Printer:
    def __init__(self, stream, every):
        self.stream = stream
        self.every = every
        self.last = -math.inf

    def __call__(self, method, n_iter, elapsed, score, bound, extra):
        now = time.perf_counter()
        if now - self.last < self.every:
            return
        self.last = now
        gap = bound - score if math.isfinite(bound) and math.isfinite(score) else math.inf
        line = (f"[{method}] iter {n_iter}  {elapsed:.1f} s  score {score:.6g}  "
                f"bound {bound:.6g}  gap {gap:.4g}")
        if extra:
            line += "  " + "  ".join(f"{k} {v}" for k, v in extra.items())
        print(line, file=self.stream, flush=True)


def report(method, n_iter, elapsed, score, bound, **extra):
    """Offer one progress record (printed only under :func:`printing`)."""
    if _printer is not None and not _quiet:
        _printer(method, n_iter, elapsed, score, bound, extra)


@contextmanager
def printing(stream, every=1.0):
    """Print progress records to ``stream``, at most one per ``every`` s."""
    global _printer
    previous, _printer = _printer, _Printer(stream, every)
    try:
        yield
    finally:
        _printer = previous


@contextmanager
def quiet():
    """Silence the records of the solves run inside."""
    global _quiet
    _quiet += 1
    try:
        yield
    finally:
        _quiet -= 1
