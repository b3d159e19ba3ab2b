"""Sorted multimaps for numba: pools of indexed max-heaps.

A *multimap* here maps items (integer ids in a fixed universe
``[0, capacity)``) to float64 keys, with duplicate keys allowed, and
supports

* insert, erase, update-key-of-item, upsert: O(log n);
* lookup of an item's key and membership: O(1);
* the largest key: O(1);
* traversal in descending key order from the top with early exit:
  O(k log k) for the first k items, whatever n.

Representation
--------------
A *pool* holds many multimaps side by side (e.g. one per row of a table), as
a tuple of five arrays ``mm = (offsets, sizes, keys, items, pos)``:

``offsets`` int64 (n_maps + 1,)
    Map ``h`` owns slots ``[offsets[h], offsets[h+1])``; its capacity is the
    length of that range and its items are ``0 .. capacity-1``.
``sizes`` int64 (n_maps,)
    Number of items currently in each map.
``keys`` float64 (total,), ``items`` int32 (total,)
    Binary max-heap in slot order: slot ``s`` of map ``h`` holds
    ``items[offsets[h] + s]`` with key ``keys[offsets[h] + s]``.
``pos`` int32 (total,)
    Reverse index: ``pos[offsets[h] + item]`` is the item's slot, -1 if absent.

Memory: 16 bytes per item of capacity (a 3000 x 3000 table: 144 MB).

Kernels (``structlearn.oracles._multimap_kernels``, callable from numba and
from Python): ``mm_insert(mm, h, item, key)``, ``mm_erase(mm, h, item)``,
``mm_update(mm, h, item, key)``, ``mm_set(mm, h, item, key)`` (upsert),
``mm_key(mm, h, item)`` (NaN if absent), ``mm_contains``, ``mm_size``,
``mm_top(mm, h) -> (item, key)``, ``mm_descending(mm, h, stop_key,
out_items, out_keys) -> count`` (top items with key > stop_key), and a
resumable cursor ``mm_cursor_start(mm, h, cursor)`` /
``mm_cursor_next(mm, cursor) -> (item, key)`` over a cursor from
:func:`make_cursor`.  The lower-level ``heap_*`` primitives work on any
``(keys, items, pos, base, size)`` and are what the oracles use.
Preconditions (absent item for insert, present for erase/update, item in
range) are the caller's job: kernels do not check them.

Why indexed heaps
-----------------
Candidates were measured (numba, one core, random item, 300,000 updates;
section 1 of ``benchmarks/bench_oracles.py``, figures in BENCHMARKS.md):

=====================================  ======  ======  ======
ns per key update, n =                 1e4     1e6     9e6
=====================================  ======  ======  ======
indexed binary heap, small change      16      55      66
indexed binary heap, new random key    30      78      156
tournament (segment) tree, small       43      237     403
tournament (segment) tree, new key     45      231     432
=====================================  ======  ======  ======

The tournament tree over a fixed universe needs no reverse index (keys stay
in item order) but always recomputes the full root path, reading two
scattered keys per level; the heap's sift usually stops after a few levels,
and small key changes (the structural-SVM case: ``v += delta``) move an item
only a little.  A block-structured sorted array (sqrt-decomposition) costs
O(sqrt n) memory moves per update (about 3,000 entries at n = 9e6), and a
B-tree needs node allocation that numba tuples of arrays do not express
well.  Descending traversal over a heap needs a frontier (a small heap of
slots), but the oracles stop after a handful of items, so this costs little.
The authors' C++ code also used indexed heaps; the difference here is one
pool per family (all rows in one set of arrays) and no per-call allocation.
"""

from __future__ import annotations

import numpy as np

from ._multimap_kernels import (  # noqa: F401  (re-exported kernels)
    heap_fill_sorted,
    mm_check,
    mm_contains,
    mm_cursor_next,
    mm_cursor_start,
    mm_descending,
    mm_erase,
    mm_insert,
    mm_key,
    mm_set,
    mm_size,
    mm_top,
    mm_update,
)

__all__ = [
    "make_multimap",
    "make_cursor",
    "multimap_from_keys",
    "mm_check",
    "mm_contains",
    "mm_cursor_next",
    "mm_cursor_start",
    "mm_descending",
    "mm_erase",
    "mm_insert",
    "mm_key",
    "mm_set",
    "mm_size",
    "mm_top",
    "mm_update",
]

_INT32_MAX = np.iinfo(np.int32).max


def make_multimap(capacities):
    """An empty pool of multimaps.

    Parameters
    ----------
    capacities : int or array-like of int, shape (n_maps,)
        Item universe size of each map (an int gives one map).

    Returns
    -------
    mm : tuple ``(offsets, sizes, keys, items, pos)``
        See the module docstring.
    """
    caps = np.atleast_1d(np.asarray(capacities))
    if caps.ndim != 1 or not np.issubdtype(caps.dtype, np.integer):
        raise TypeError("capacities must be an int or a 1-D array of ints")
    if (caps < 0).any():
        raise ValueError("capacities must be non-negative")
    if caps.size and int(caps.max()) > _INT32_MAX:
        raise ValueError("a multimap capacity exceeds 2**31 - 1 items")
    offsets = np.zeros(caps.size + 1, dtype=np.int64)
    np.cumsum(caps, out=offsets[1:])
    total = int(offsets[-1])
    return (
        offsets,
        np.zeros(caps.size, dtype=np.int64),
        np.empty(total, dtype=np.float64),
        np.empty(total, dtype=np.int32),
        np.full(total, -1, dtype=np.int32),
    )


def multimap_from_keys(keys):
    """A single full multimap holding items ``0..n-1`` with the given keys.

    Parameters
    ----------
    keys : array-like of float, shape (n,)
        No NaN.

    Returns
    -------
    mm : tuple, see :func:`make_multimap` (map index 0).
    """
    keys = np.ascontiguousarray(keys, dtype=np.float64).ravel()
    if np.isnan(keys).any():
        raise ValueError("keys contain NaN")
    mm = make_multimap(keys.size)
    heap_fill_sorted(mm[2], mm[3], mm[4], 0, keys, keys.size)
    mm[1][0] = keys.size
    return mm


def make_cursor(capacity=1024):
    """A cursor for :func:`mm_cursor_start` / :func:`mm_cursor_next`.

    Parameters
    ----------
    capacity : int
        Frontier size; the cursor can return ``capacity - 1`` items before
        ``mm_cursor_next`` reports exhaustion of its capacity with item -2
        (``capacity = n + 1`` always suffices for a map of n items).

    Returns
    -------
    cursor : tuple ``(fr_key float64 (capacity,), fr_slot int64 (capacity,), meta int64 (2,))``
    """
    if int(capacity) != capacity or capacity < 2:
        raise ValueError(f"capacity must be an integer >= 2, got {capacity!r}")
    capacity = int(capacity)
    return (
        np.empty(capacity, dtype=np.float64),
        np.empty(capacity, dtype=np.int64),
        np.zeros(2, dtype=np.int64),
    )
