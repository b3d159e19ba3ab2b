"""Resident-memory readings of the current process (Linux /proc), shared by the
benchmarks that measure the peak memory of one call in a worker process."""

__all__ = ["peak_kb", "reset_peak", "rss_kb"]


def _status_kb(field):
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def rss_kb():
    """Current resident set (kB)."""
    return _status_kb("VmRSS")


def peak_kb():
    """High-water mark of the resident set (kB)."""
    return _status_kb("VmHWM")


def reset_peak():
    """Reset the high-water mark to the current resident set (where allowed)."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        pass
