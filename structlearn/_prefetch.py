"""Software prefetches for kernels that visit samples in a random order.

A pass that visits the samples in a fresh permutation reads each sample's
feature row, duals and active pairs from wherever they lie in memory, one
cache miss after the other.  Asking for the next sample's lines while the
current one is worked on hides most of that wait (LLVM's ``prefetch``
intrinsic: a hint, never a fault, with no effect on any value).  Each helper
is an intrinsic, its loop written straight into the caller's code: no
kernel of its own to compile, nothing for numba to inline.
"""

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["prefetch", "prefetch_at", "prefetch_row", "prefetch_span"]

# bytes of a cache line on the machines numba targets
_LINE = 64


def _emit_prefetch(builder, ptr):
    i8p = ir.IntType(8).as_pointer()
    i32 = ir.IntType(32)
    fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
    fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0i8")
    # a read, kept in every cache level, of data
    builder.call(fn, [builder.bitcast(ptr, i8p), ir.Constant(i32, 0), ir.Constant(i32, 3),
                      ir.Constant(i32, 1)])


def _prefetch_intrinsic(ndim):
    def typer(typingctx, array, *indices):
        if not isinstance(array, types.Array) or array.ndim != ndim or len(indices) != ndim:
            return None
        sig = types.none(array, *indices)

        def codegen(context, builder, signature, args):
            aty = signature.args[0]
            ary = context.make_array(aty)(context, builder, args[0])
            idx = [context.cast(builder, v, t, types.intp)
                   for v, t in zip(args[1:], signature.args[1:])]
            ptr = cgutils.get_item_pointer(context, builder, aty, ary, idx, wraparound=False)
            _emit_prefetch(builder, ptr)
            return context.get_dummy_value()

        return sig, codegen

    return typer


@intrinsic
def prefetch(typingctx, array, i):
    """Ask for the cache line of ``array[i]`` (1-D; ``i`` need not be in
    bounds: nothing is read)."""
    return _prefetch_intrinsic(1)(typingctx, array, i)


@intrinsic
def prefetch_at(typingctx, array, i, j):
    """Ask for the cache line of ``array[i, j]`` (2-D)."""
    return _prefetch_intrinsic(2)(typingctx, array, i, j)


def _lines(builder, context, aty, ary, fixed, begin, stop):
    """Prefetch every cache line of the entries ``fixed + [c]`` for ``c`` in
    ``begin:stop`` (``fixed``: the leading indices), and the last one."""
    step = max(1, _LINE // context.get_abi_sizeof(context.get_data_type(aty.dtype)))
    step_v = context.get_constant(types.intp, step)
    with cgutils.for_range_slice(builder, begin, stop, step_v) as (c, _):
        _emit_prefetch(builder, cgutils.get_item_pointer(context, builder, aty, ary,
                                                         fixed + [c], wraparound=False))
    one = context.get_constant(types.intp, 1)
    with builder.if_then(builder.icmp_signed(">", stop, begin)):
        last = builder.sub(stop, one)
        _emit_prefetch(builder, cgutils.get_item_pointer(context, builder, aty, ary,
                                                         fixed + [last], wraparound=False))


def _lines_intrinsic(ndim):
    """The typer of a helper asking for a run of lines: of ``array[a:b]``
    (``ndim`` 1) or of ``array[a, :b]`` (``ndim`` 2)."""
    def typer(typingctx, array, a, b):
        if not isinstance(array, types.Array) or array.ndim != ndim:
            return None
        sig = types.none(array, a, b)

        def codegen(context, builder, signature, args):
            aty = signature.args[0]
            ary = context.make_array(aty)(context, builder, args[0])
            first, stop = (context.cast(builder, v, t, types.intp)
                           for v, t in zip(args[1:], signature.args[1:]))
            if ndim == 1:
                _lines(builder, context, aty, ary, [], first, stop)
            else:
                _lines(builder, context, aty, ary, [first], context.get_constant(types.intp, 0),
                       stop)
            return context.get_dummy_value()

        return sig, codegen

    return typer


@intrinsic
def prefetch_span(typingctx, array, begin, end):
    """Ask for every cache line of ``array[begin:end]`` (1-D)."""
    return _lines_intrinsic(1)(typingctx, array, begin, end)


@intrinsic
def prefetch_row(typingctx, array, i, stop):
    """Ask for every cache line of ``array[i, :stop]`` (a C-contiguous 2-D
    array; ``stop`` at most its width)."""
    return _lines_intrinsic(2)(typingctx, array, i, stop)
