"""A clear error before an allocation the machine cannot hold, and zeros
whose pages are in memory before threads write them.

numpy reports an impossible allocation itself, but one that fits in virtual
memory and not in RAM (Linux overcommits ``np.zeros``) succeeds and the
process is killed later, when the pages are touched.  Estimators call
:func:`check_memory` with the size of their large arrays first.
"""

import os

import numpy as np

__all__ = ["available_bytes", "check_memory", "written_zeros"]


def available_bytes():
    """Bytes of memory available to new allocations: ``MemAvailable`` of
    ``/proc/meminfo`` (Linux), else the free physical pages; ``None`` when
    the platform says neither."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):
        return None


def _gib(nbytes):
    return f"{nbytes / 2**30:.1f} GiB"


def check_memory(nbytes, what, hint=""):
    """Raise ``MemoryError`` when ``nbytes`` exceed the available memory.

    Parameters
    ----------
    nbytes : int
        Bytes about to be allocated.
    what : str
        What they hold, with the sizes that decide it (for the message).
    hint : str
        How to need less (appended to the message).
    """
    avail = available_bytes()
    if avail is not None and nbytes > avail:
        raise MemoryError(f"{what} would take about {_gib(nbytes)}, more than the "
                          f"{_gib(avail)} of memory available" + (f"; {hint}" if hint else ""))


def written_zeros(shape, dtype=np.float64):
    """An array of zeros whose pages are written now, in the calling thread.

    ``np.zeros`` of a large array maps pages that the kernel fills on first
    touch, a read fault and then a write fault per page.  When worker
    threads take those faults side by side they wait on each other: the
    first pass of a multilabel fit on two threads took twice its time
    (60 against 30 ms on bibtex) until its arrays were written beforehand
    (5-7 ms here, one fault per page).
    """
    out = np.empty(shape, dtype=dtype)
    out.fill(0)
    return out
