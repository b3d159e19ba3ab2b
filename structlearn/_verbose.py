"""``verbose=`` output without any logging set-up.

Library code logs through :mod:`logging` (``logging.getLogger(__name__)``).
While an estimator with ``verbose > 0`` fits, :func:`verbose_output` makes
those INFO records visible on stdout, as scikit-learn's ``verbose`` prints
do, unless the application has configured logging itself (then its handlers
and levels decide).
"""

import functools
import logging
import sys
from contextlib import contextmanager

__all__ = ["verbose_fit", "verbose_output"]


@contextmanager
def verbose_output(verbose):
    """Show structlearn's INFO log records on stdout while the block runs,
    when ``verbose`` is set and no logging handler is configured."""
    root = logging.getLogger("structlearn")
    if not verbose or root.hasHandlers():
        yield
        return
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(logging.Formatter("%(message)s"))
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        yield
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


def verbose_fit(fit):
    """Decorate an estimator's ``fit``: run it under :func:`verbose_output`
    with the estimator's ``verbose``, and with a progress bar of at most
    ``max_iter`` passes when the configuration draws bars
    (:func:`structlearn.set_config`)."""
    from ._progress_bar import fit_progress

    @functools.wraps(fit)
    def wrapper(self, *args, **kwargs):
        total = getattr(self, "max_iter", None)
        total = total if isinstance(total, int) and not isinstance(total, bool) else None
        with verbose_output(getattr(self, "verbose", 0)), \
                fit_progress(f"{type(self).__name__}.fit", total):
            return fit(self, *args, **kwargs)

    return wrapper
