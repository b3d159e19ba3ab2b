"""Seconds spent in numba's compiler while some Python code runs.

Kernels are compiled (or loaded from numba's on-disk cache) on their first
call, inside whatever called them.  :class:`compile_timer` measures that share
of a call by listening to numba's ``numba:compiler_lock`` event: the lock is
held while a dispatcher type-checks, compiles or loads a cached overload, and
never by a call to an already-compiled kernel.  The lock is re-entrant
(kernels compile the kernels they call), so only the outermost hold counts.
"""

import threading
import time

__all__ = ["compile_timer"]


class compile_timer:
    """Context manager whose ``seconds`` is the time spent compiling inside it.

    Examples
    --------
    >>> with compile_timer() as ct:          # doctest: +SKIP
    ...     result = some_kernel(x)
    >>> ct.seconds                           # doctest: +SKIP
    """

    def __init__(self):
        self.seconds = 0.0
        self._depth = 0
        self._start = 0.0
        self._thread = threading.get_ident()
        self._listener = None

    def __enter__(self):
        from numba.core import event

        timer = self

        class _Listener(event.Listener):
            def on_start(self, ev):
                if threading.get_ident() != timer._thread:
                    return
                if timer._depth == 0:
                    timer._start = time.perf_counter()
                timer._depth += 1

            def on_end(self, ev):
                if threading.get_ident() != timer._thread or timer._depth == 0:
                    return
                timer._depth -= 1
                if timer._depth == 0:
                    timer.seconds += time.perf_counter() - timer._start

        self._listener = _Listener()
        event.register("numba:compiler_lock", self._listener)
        return self

    def __exit__(self, *exc):
        from numba.core import event

        event.unregister("numba:compiler_lock", self._listener)
        if self._depth:  # left by an exception inside a compilation
            self.seconds += time.perf_counter() - self._start
            self._depth = 0
        return False
