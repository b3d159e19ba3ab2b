"""Progress bars of long fits and of predictions over many samples.

Drawn only when :func:`structlearn.set_config` asks for them
(``progress_bar=True``, ``"tqdm"`` or ``"text"``): with tqdm where it is
installed, else as plain-text lines on stderr.  A fit opens its bar in
:func:`fit_progress` (around every estimator's ``fit``); the training loops
report each history record through :func:`progress_tick`, which costs a
context-variable lookup when no bar is open.
"""

import math
import sys
import time
from contextlib import contextmanager
from contextvars import ContextVar

from ._config import get_config, require_tqdm

__all__ = ["fit_progress", "make_bar", "progress_tick"]

_current = ContextVar("structlearn_progress_bar", default=None)


class TextBar:
    """Plain-text progress: ``desc: n/total (pct) elapsed  key value ...`` on
    ``stream`` (stderr), at most one line per ``every`` seconds and a last
    one when closed."""

    def __init__(self, total, desc, stream=None, every=1.0):
        self.total = total
        self.desc = desc
        self.stream = sys.stderr if stream is None else stream
        self.every = every
        self.n = 0
        self.postfix = {}
        self.start = time.perf_counter()
        self.last = -math.inf
        self.shown = -1

    def update(self, n=1, **postfix):
        self.n += n
        self.postfix.update(postfix)
        now = time.perf_counter()
        if now - self.last >= self.every:
            self.last = now
            self._print(now)

    def _print(self, now):
        done = f"{self.n}" if self.total is None else (
            f"{self.n}/{self.total} ({100.0 * self.n / max(self.total, 1):.0f}%)")
        line = f"{self.desc}: {done} {now - self.start:.1f} s"
        if self.postfix:
            line += "  " + "  ".join(f"{k} {_fmt(v)}" for k, v in self.postfix.items())
        print(line, file=self.stream, flush=True)
        self.shown = self.n

    def close(self):
        if self.n and self.shown != self.n:
            self._print(time.perf_counter())


class _TqdmBar:
    """tqdm behind the :class:`TextBar` interface."""

    def __init__(self, tqdm_module, total, desc):
        self.bar = tqdm_module.tqdm(total=total, desc=desc, leave=True, file=sys.stderr)
        self.n = 0

    def update(self, n=1, **postfix):
        self.n += n
        if postfix:
            self.bar.set_postfix({k: _fmt(v) for k, v in postfix.items()}, refresh=False)
        self.bar.update(n)

    def close(self):
        self.bar.close()


def _fmt(v):
    return f"{v:.6g}" if isinstance(v, float) else str(v)


def make_bar(total, desc):
    """A bar of ``total`` steps (None: unknown) as the configuration asks,
    or None when bars are off."""
    mode = get_config()["progress_bar"]
    if mode is False:
        return None
    if mode == "text":
        return TextBar(total, desc)
    try:
        tqdm_module = require_tqdm()
    except ImportError:
        if mode == "tqdm":
            raise
        return TextBar(total, desc)
    return _TqdmBar(tqdm_module, total, desc)


@contextmanager
def fit_progress(desc, total):
    """Open the bar of a fit (``total`` passes at most) for the training loop
    run inside; closed however the fit ends."""
    bar = make_bar(total, desc) if _current.get() is None else None
    if bar is None:  # bars off, or a fit nested in another one's
        yield
        return
    token = _current.set((bar, [None]))
    try:
        yield
    finally:
        _current.reset(token)
        bar.close()


def progress_tick(record):
    """Advance the open fit's bar to the pass of this history record
    (``iter``), showing its objective and gap."""
    state = _current.get()
    if state is None:
        return
    bar, first = state
    if first[0] is None:
        first[0] = record["iter"] - 1
    step = record["iter"] - first[0] - bar.n
    postfix = {k: record[k] for k in ("objective", "gap")
               if isinstance(record.get(k), float) and math.isfinite(record[k])}
    bar.update(max(step, 0), **postfix)
