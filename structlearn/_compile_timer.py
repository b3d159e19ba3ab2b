"""Seconds spent in numba's compiler while some Python code runs.

Kernels are compiled (or loaded from numba's on-disk cache) on their first
call, inside whatever called them.  The time is measured by listening to
numba's ``numba:compiler_lock`` event: the lock is held while a dispatcher
type-checks, compiles or loads a cached overload, and never by a call to an
already-compiled kernel.  The lock is re-entrant (kernels compile the kernels
they call), so only the outermost hold counts.  One listener, registered on
first use, keeps a running total per thread.
"""

import threading
import time

__all__ = ["compile_timer", "thread_compile_seconds"]

_install_lock = threading.Lock()
_installed = False
_threads = {}  # thread id -> [depth, start of the outermost hold, total seconds]


def _install():
    global _installed
    with _install_lock:
        if _installed:
            return
        from numba.core import event

        class _Listener(event.Listener):
            def on_start(self, ev):
                state = _threads.setdefault(threading.get_ident(), [0, 0.0, 0.0])
                if state[0] == 0:
                    state[1] = time.perf_counter()
                state[0] += 1

            def on_end(self, ev):
                state = _threads.get(threading.get_ident())
                if state is None or state[0] == 0:
                    return
                state[0] -= 1
                if state[0] == 0:
                    state[2] += time.perf_counter() - state[1]

        event.register("numba:compiler_lock", _Listener())
        _installed = True


def thread_compile_seconds():
    """Seconds the calling thread has spent in numba's compiler since the
    first call of this function (or of :class:`compile_timer`) in the
    process, a compilation under way included.  Differences of two readings
    measure the compilation between them."""
    _install()
    state = _threads.get(threading.get_ident())
    if state is None:
        return 0.0
    depth, start, total = state
    return total + (time.perf_counter() - start if depth else 0.0)


class compile_timer:
    """Context manager whose ``seconds`` is the time spent compiling inside it
    (by the thread that entered it).

    Examples
    --------
    >>> with compile_timer() as ct:          # doctest: +SKIP
    ...     result = some_kernel(x)
    >>> ct.seconds                           # doctest: +SKIP
    """

    def __init__(self):
        self.seconds = 0.0
        self._start = 0.0

    def __enter__(self):
        self._start = thread_compile_seconds()
        return self

    def __exit__(self, *exc):
        self.seconds = thread_compile_seconds() - self._start
        return False
