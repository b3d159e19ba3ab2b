"""Stacking many small dense sequences without the GIL.

``np.concatenate`` of a chunk's sequences spends 1-2 us per array on
bookkeeping with the GIL held, so the chunks of a parallel prediction over
short dense sequences (OCR words: 9 x 128 arrays) stack one at a time.  Here
the caller hands over each array's object address (``id``, a C-level
``map``, about 50 ns an array); a compiled kernel reads each array's data
pointer from its ``PyArrayObject`` header (the field right after the Python
object header, ``object.__basicsize__`` bytes in), copies the rows and checks
them for NaN/inf in the same pass, without the GIL.

The header layout is checked against ``ndarray.ctypes.data`` once per process
and on the first and last array of every call; where it does not hold (a
Python build with another object header), :func:`gather_dense_rows` returns
None and the caller stacks with numpy.
"""

import functools
from operator import attrgetter

import numba as nb
import numpy as np
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["gather_dense_products", "gather_dense_rows"]

# bytes from an object's address to the PyArrayObject's data pointer
_DATA_FIELD = object.__basicsize__
_C_CONTIGUOUS = attrgetter("flags.c_contiguous")
_DTYPE = attrgetter("dtype")
_FLOAT64 = np.dtype(np.float64)
# rows gathered at a time for a product: about a core's share of cache
BLOCK_BYTES = 1 << 20


@intrinsic
def _load_address(typingctx, address):
    """The pointer-sized integer stored at ``address``."""
    sig = types.intp(types.intp)

    def codegen(context, builder, signature, args):
        ptr = builder.inttoptr(args[0], cgutils.intp_t.as_pointer())
        return builder.load(ptr)

    return sig, codegen


@intrinsic
def _as_float64_pointer(typingctx, address):
    """``address`` as a ``double *``."""
    sig = types.CPointer(types.float64)(types.intp)

    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], context.get_value_type(signature.return_type))

    return sig, codegen


@nb.njit(cache=True, nogil=True)
def data_addresses(objects, field):
    """Each array's data pointer (intp (n,)): the word ``field`` bytes past
    its object address (``objects``: intp (n,), from ``id``)."""
    out = np.empty(objects.shape[0], dtype=np.intp)
    for i in range(objects.shape[0]):
        out[i] = _load_address(objects[i] + field)
    return out


@nb.njit(cache=True, nogil=True)
def gather_rows(addresses, offsets, n_features, out):
    """Copy sequence ``s`` (C-contiguous float64 rows at ``addresses[s]``)
    into ``out[offsets[s]:offsets[s + 1]]``; the first row holding NaN or
    infinity (index into ``out``), or -1.

    Parameters
    ----------
    addresses : ndarray of intp, shape (n_seq,)
    offsets : ndarray of int64, shape (n_seq + 1,)
    n_features : int
    out : ndarray of float64, shape (offsets[-1], n_features)
    """
    flat = out.reshape(out.size)
    for s in range(addresses.shape[0]):
        lo = offsets[s] * n_features
        n = (offsets[s + 1] - offsets[s]) * n_features
        src = nb.carray(_as_float64_pointer(addresses[s]), n)
        bad = False
        for j in range(n):
            v = src[j]
            flat[lo + j] = v
            bad |= v - v != 0.0  # NaN for NaN and +-inf
        if bad:
            for j in range(n):
                if not np.isfinite(src[j]):
                    return offsets[s] + j // n_features
    return -1


@functools.lru_cache(maxsize=None)
def _layout_holds():
    probe = [np.zeros((2, 3)), np.ones((1, 1))[:, :1]]
    return _addresses_match(probe, data_addresses(_object_ids(probe), _DATA_FIELD))


def _object_ids(parts):
    return np.fromiter(map(id, parts), dtype=np.intp, count=len(parts))


def _addresses_match(parts, addresses):
    return all(int(addresses[i]) == parts[i].ctypes.data for i in {0, len(parts) - 1})


def _addresses(parts):
    """The parts' data pointers (intp (n,)), or None when a part is not
    float64 and C-contiguous or the header layout is not the expected one."""
    if not parts or set(map(_DTYPE, parts)) != {_FLOAT64}:
        return None
    if not all(map(_C_CONTIGUOUS, parts)) or not _layout_holds():
        return None
    addresses = data_addresses(_object_ids(parts), _DATA_FIELD)
    return addresses if _addresses_match(parts, addresses) else None


def gather_dense_rows(parts, offsets, n_features):
    """Stack float64 C-contiguous 2-D arrays without the GIL.

    Parameters
    ----------
    parts : list of ndarray, each (offsets[s + 1] - offsets[s], n_features)
        Checked sequences (non-empty, 2-D, of this width).
    offsets : ndarray of int64, shape (len(parts) + 1,)
    n_features : int

    Returns
    -------
    (stacked, bad_row) or None
        ``stacked``: float64 (offsets[-1], n_features); ``bad_row``: the
        first row of ``stacked`` with NaN or infinity, or -1.  None when a
        part is not float64 and C-contiguous, or the array header layout is
        not the expected one: stack with numpy then.
    """
    addresses = _addresses(parts)
    if addresses is None:
        return None
    out = np.empty((int(offsets[-1]), n_features))
    return out, int(gather_rows(addresses, offsets, n_features, out))


def gather_dense_products(parts, offsets, weights, block_bytes=BLOCK_BYTES):
    """``stacked @ weights`` for the parts of :func:`gather_dense_rows`,
    without stacking them all: runs of whole sequences of about
    ``block_bytes`` are gathered into one buffer that stays in cache and
    multiplied there (the input is read from memory once, not three times).

    Parameters
    ----------
    parts, offsets :
        As :func:`gather_dense_rows`.
    weights : ndarray of float64, shape (n_features, K)
    block_bytes : int

    Returns
    -------
    (products, bad_row) or None
        ``products``: float64 C-contiguous (offsets[-1], K), complete only
        when ``bad_row`` is -1; ``bad_row`` and None as
        :func:`gather_dense_rows`.
    """
    addresses = _addresses(parts)
    if addresses is None:
        return None
    d = weights.shape[0]
    out = np.empty((int(offsets[-1]), weights.shape[1]))
    # each run's first sequence: the runs hold at least one sequence each
    targets = np.arange(0, int(offsets[-1]), max(block_bytes // (8 * d), 1))
    starts = np.unique(np.searchsorted(offsets, targets, side="right") - 1)
    bounds = np.append(starts, len(parts)).tolist()
    buffer = np.empty(int(np.diff(offsets[bounds]).max()) * d)
    for a, b in zip(bounds[:-1], bounds[1:]):
        lo, hi = int(offsets[a]), int(offsets[b])
        rows = buffer[:(hi - lo) * d].reshape(hi - lo, d)
        bad = gather_rows(addresses[a:b], offsets[a:b + 1] - lo, d, rows)
        if bad >= 0:
            return out, lo + int(bad)
        np.matmul(rows, weights, out=out[lo:hi])
    return out, -1
