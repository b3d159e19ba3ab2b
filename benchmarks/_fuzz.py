"""What the fuzz benchmarks share: their failure report."""


def report_failures(failures, shown=10):
    """Print how many ``failures`` (tuples naming the case and what went
    wrong) there were and the first ``shown`` of them; returns the exit
    status (1 when any)."""
    print("failures:", len(failures))
    for failure in failures[:shown]:
        print("  ", failure)
    return 1 if failures else 0
