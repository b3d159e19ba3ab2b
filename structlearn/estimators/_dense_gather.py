"""Stacking many small dense sequences without the GIL.

``np.concatenate`` of a chunk's sequences spends 1-2 us per array on
bookkeeping with the GIL held, so the chunks of a parallel prediction over
short dense sequences (OCR words: 9 x 128 arrays) stack one at a time.  Here
the caller hands over each array's object address (read from a ``list``'s
item pointers by a compiled kernel, 1 ns an array, else ``id`` through a
C-level ``map``, 35-50 ns an array); a compiled kernel reads each array's data
pointer from its ``PyArrayObject`` header (the field right after the Python
object header, ``object.__basicsize__`` bytes in), copies the rows and checks
them for NaN/inf in the same pass, without the GIL.

The same kernel reads the rest of each header it needs (type, dimensions,
dtype, flags: :func:`dense_headers`) to tell which arrays are float64
C-contiguous 2-D ``ndarray`` objects and their lengths, in one pass, where
attribute reads through Python cost 0.1-0.2 us each per array.

The header layout is checked against the arrays' attributes once per process
and the data pointers on the first and last array of every call; where it
does not hold (a Python build with another object header), the functions
here return None and the caller stacks with numpy.
"""

import functools
import sys
from operator import attrgetter

import numba as nb
import numpy as np
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["dense_headers", "gather_dense_products", "gather_dense_rows"]

# bytes from an object's address to the PyArrayObject's data pointer
_DATA_FIELD = object.__basicsize__
_WORD = np.dtype(np.intp).itemsize
# bytes from a list's address to its item pointers' array (after the header
# of a variable-size object: reference count, type, size)
_LIST_ITEMS = object.__basicsize__ + _WORD
_C_CONTIGUOUS_FLAG = 0x1  # NPY_ARRAY_C_CONTIGUOUS
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
def _read_headers(objects, fields, array_type, descr, lengths, addresses):
    """Lengths and data pointers of 2-D C-contiguous arrays of exact type
    ``array_type`` and dtype ``descr`` (object addresses), one width for
    all, into ``lengths`` and ``addresses``; returns the width, or -1 as
    soon as an object is not such an array (the rest is then not read).
    ``fields``: the byte offsets of :func:`_header_fields`."""
    type_at, data_at, nd_at, dims_at, descr_at, flags_at = (
        fields[0], fields[1], fields[2], fields[3], fields[4], fields[5])
    width = -1
    for i in range(objects.shape[0]):
        o = objects[i]
        if _load_address(o + type_at) != array_type:  # any object has a type
            return -1
        if (_load_address(o + descr_at) != descr
                or _load_address(o + nd_at) & 0xFFFFFFFF != 2
                or _load_address(o + flags_at) & _C_CONTIGUOUS_FLAG == 0):
            return -1
        dims = _load_address(o + dims_at)
        n_i, d_i = _load_address(dims), _load_address(dims + _WORD)
        if n_i < 1 or (width >= 0 and d_i != width):
            return -1
        width = d_i
        lengths[i] = n_i
        addresses[i] = _load_address(o + data_at)
    return width


def _header_fields():
    """Byte offsets from an object's address to its type, then to the
    fields of numpy's ``PyArrayObject_fields``: data, nd (int), dimensions,
    descr, flags (int)."""
    return np.array([_DATA_FIELD - _WORD, _DATA_FIELD, _DATA_FIELD + _WORD,
                     _DATA_FIELD + 2 * _WORD, _DATA_FIELD + 5 * _WORD, _DATA_FIELD + 6 * _WORD],
                    dtype=np.intp)


def _headers(parts, objects):
    """``(lengths, width, addresses)`` of :func:`_read_headers` over the
    parts (``objects``: their ids), or None."""
    n = len(parts)
    lengths = np.empty(n, dtype=np.int64)
    addresses = np.empty(n, dtype=np.intp)
    width = _read_headers(objects, _header_fields(), id(np.ndarray), id(_FLOAT64), lengths,
                          addresses)
    return None if width < 0 else (lengths, int(width), addresses)


def _verified_headers(parts, objects):
    """:func:`_headers` where the header layout holds and the first and last
    data pointers are the arrays' own, else None."""
    if not _headers_hold():
        return None
    found = _headers(parts, objects)
    return found if found is not None and _addresses_match(parts, found[2]) else None


def dense_headers(parts):
    """The lengths and width of sequences that are all float64 C-contiguous
    2-D ``ndarray`` objects, non-empty and of one width, read from their
    headers in one compiled pass: ``(lengths int64 (n,), width)``, or None
    (any other item, or a header layout not the expected one)."""
    found = _verified_headers(parts, _object_ids(parts)) if parts else None
    return None if found is None else found[:2]


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


class _ProbeSubclass(np.ndarray):
    """An ``ndarray`` subclass, which the header reader leaves alone."""


def _headers_hold():
    """Whether :func:`_read_headers` reads what the arrays' attributes say."""
    return _layout_holds() and _DATA_FIELD >= _WORD and _header_probe()


@functools.lru_cache(maxsize=None)
def _header_probe():
    """:func:`_read_headers` on arrays that pass and arrays that each fail
    one test (once per process)."""
    good = [np.zeros((2, 3)), np.arange(12.0).reshape(4, 3), np.ones((1, 3))]
    found = _headers(good, _object_ids(good))
    if (found is None or found[1] != 3 or found[0].tolist() != [2, 4, 1]
            or found[2].tolist() != [a.ctypes.data for a in good]):
        return False
    failing = [np.zeros(3), np.zeros((2, 3), dtype=np.float32), np.asfortranarray(np.ones((3, 2))),
               np.ones((3, 4))[:, :3], np.zeros((0, 3)), np.zeros((2, 3, 1)),
               np.zeros((2, 3)).view(_ProbeSubclass), [[0.0, 0.0, 0.0]]]
    mixed = [np.zeros((2, 3)), np.zeros((2, 4))]
    return (all(_headers([a], _object_ids([a])) is None for a in failing)
            and _headers(mixed, _object_ids(mixed)) is None)


def _object_ids(parts):
    """The parts' object addresses (intp (n,)): of a ``list``'s items read
    from its item pointers where that layout holds, else through ``id``."""
    if type(parts) is list and _list_layout_holds():
        out = np.empty(len(parts), dtype=np.intp)
        _list_item_ids(id(parts), len(parts), out)
        return out
    return np.fromiter(map(id, parts), dtype=np.intp, count=len(parts))


@nb.njit(cache=True)  # (holds the GIL: the list cannot change while it is read)
def _list_item_ids(list_address, n, out):
    """The first ``n`` item pointers of the list at ``list_address`` into
    ``out``."""
    items = _load_address(list_address + _LIST_ITEMS)
    for i in range(n):
        out[i] = _load_address(items + i * _WORD)


@functools.lru_cache(maxsize=None)
def _list_layout_holds():
    """Whether :func:`_list_item_ids` reads a list's items (CPython's list
    layout: the size word, then the item pointers), probed once; never
    without a GIL, which keeps a list from changing while it is read."""
    if (sys.implementation.name != "cpython" or list.__basicsize__ != _LIST_ITEMS + 2 * _WORD
            or not getattr(sys, "_is_gil_enabled", lambda: True)()):
        return False
    probe = [object(), np.zeros(1), "probe"]
    size = data_addresses(np.array([id(probe)], dtype=np.intp), _LIST_ITEMS - _WORD)
    if int(size[0]) != len(probe):
        return False
    out = np.empty(len(probe), dtype=np.intp)
    _list_item_ids(id(probe), len(probe), out)
    return out.tolist() == [id(o) for o in probe]


def _addresses_match(parts, addresses):
    return all(int(addresses[i]) == parts[i].ctypes.data for i in {0, len(parts) - 1})


def _addresses(parts):
    """The parts' data pointers (intp (n,)), or None when a part is not
    float64 and C-contiguous or the header layout is not the expected one.
    Plain ``ndarray`` objects of one width are read in one compiled pass;
    subclasses (``np.memmap``) through their attributes."""
    if not parts or not _layout_holds():
        return None
    objects = _object_ids(parts)
    found = _verified_headers(parts, objects)
    if found is not None:
        return found[2]
    if set(map(_DTYPE, parts)) != {_FLOAT64} or not all(map(_C_CONTIGUOUS, parts)):
        return None
    addresses = data_addresses(objects, _DATA_FIELD)
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
