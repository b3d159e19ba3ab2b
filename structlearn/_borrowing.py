"""A numba decorator for kernels that borrow their arrays.

numba counts a reference of every array a kernel binds from its arguments,
and of every view it takes (``W[f]``, ``a[b:e]``), when it makes it and
releases it after, each an atomic add on the array's shared count.  Its
pruning pass leaves these counts in place on kernels with several exits,
loops or inlined helpers.  In the hot loops they cost more than the work:
15-20 % of the soft arc search's time and half of the multilabel GDMM
pass's went to them (``perf``).

A kernel compiled by :func:`borrowing_kernel` runs without numba's runtime
(``_nrt=False``): it holds its arrays and views as borrowed references,
which its caller keeps alive for the call.  Such a kernel must not allocate
(``np.empty``, an array copy, a slice assigned from an overlapping array)
nor return an array; numba refuses to compile one that does ("NRT required
but not enabled", or "Only accept returning of array passed into the
function as argument" when the allocation is typed).  Kernels that allocate
their scratch space do so in a thin caller and hand it down.
"""

import numba as nb

__all__ = ["borrowing_kernel"]


def borrowing_kernel(func=None, *, python_callable=False, inline=False):
    """Compile ``func`` as a cached numba kernel without the runtime.

    Use as ``@borrowing_kernel`` (callable from other kernels only: no Python
    wrapper is compiled) or ``@borrowing_kernel(python_callable=True)``.
    ``inline=True``: compiled into each calling kernel instead (numba's
    ``inline="always"``), for helpers called many times a node or sample
    with many array arguments, whose calls cost more than a longer first
    compilation.
    """
    decorate = nb.njit(cache=True, no_cpython_wrapper=not python_callable, _nrt=False,
                       inline="always" if inline else "never")
    return decorate if func is None else decorate(func)
