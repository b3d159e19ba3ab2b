"""Numba kernels of the indexed max-heap sorted multimap (see :mod:`.multimap`).

Layout conventions (no validation here):

* heap primitives take ``(keys, items, pos, base, size)``: the heap's slots
  are ``keys[base:base+size]`` / ``items[base:base+size]`` (items are local
  ids in ``[0, capacity)``) and ``pos[base + item]`` is the item's slot
  (local) or -1 when absent.  A pool stores many heaps side by side, heap
  ``h`` at ``base = offsets[h]`` with capacity ``offsets[h+1] - offsets[h]``.
* best-first traversal keeps a small max-heap of slots (the "frontier") in
  ``fr_key`` / ``fr_slot``; it grows by reallocation when full.
"""

import numba as nb
import numpy as np


# ----------------------------------------------------------- heap primitives
@nb.njit(cache=True, inline="always")
def _place(keys, items, pos, base, s, key, item):
    keys[base + s] = key
    items[base + s] = item
    pos[base + item] = s


@nb.njit(cache=True)
def heap_sift_up(keys, items, pos, base, s, key, item):
    """Move ``(key, item)`` from slot ``s`` towards the root; place it."""
    while s > 0:
        p = (s - 1) >> 1
        if keys[base + p] >= key:
            break
        it = items[base + p]
        keys[base + s] = keys[base + p]
        items[base + s] = it
        pos[base + it] = s
        s = p
    _place(keys, items, pos, base, s, key, item)


@nb.njit(cache=True)
def heap_sift_down(keys, items, pos, base, size, s, key, item):
    """Move ``(key, item)`` from slot ``s`` towards the leaves; place it."""
    while True:
        c = 2 * s + 1
        if c >= size:
            break
        if c + 1 < size and keys[base + c + 1] > keys[base + c]:
            c += 1
        if not keys[base + c] > key:
            break
        it = items[base + c]
        keys[base + s] = keys[base + c]
        items[base + s] = it
        pos[base + it] = s
        s = c
    _place(keys, items, pos, base, s, key, item)


@nb.njit(cache=True)
def heap_set_key(keys, items, pos, base, size, item, key):
    """Change the key of an item that is present. O(log size)."""
    s = pos[base + item]
    if key > keys[base + s]:
        heap_sift_up(keys, items, pos, base, s, key, item)
    else:
        heap_sift_down(keys, items, pos, base, size, s, key, item)


@nb.njit(cache=True)
def heap_insert(keys, items, pos, base, size, item, key):
    """Insert an absent item (the caller grows the size to ``size + 1``)."""
    heap_sift_up(keys, items, pos, base, size, key, item)


@nb.njit(cache=True)
def heap_erase(keys, items, pos, base, size, item):
    """Erase a present item (the caller shrinks the size to ``size - 1``)."""
    s = pos[base + item]
    pos[base + item] = -1
    last = size - 1
    if s == last:
        return
    lkey = keys[base + last]
    litem = items[base + last]
    if lkey > keys[base + s]:
        heap_sift_up(keys, items, pos, base, s, lkey, litem)
    else:
        heap_sift_down(keys, items, pos, base, last, s, lkey, litem)


@nb.njit(cache=True)
def heap_fill_sorted(keys, items, pos, base, values, n):
    """Build a full heap of items ``0..n-1`` with keys ``values`` (sorted
    descending, which is a valid heap). Ties keep item order."""
    neg = np.empty(n, dtype=np.float64)
    for i in range(n):
        neg[i] = -values[i]
    order = np.argsort(neg, kind="mergesort")
    for s in range(n):
        it = order[s]
        keys[base + s] = values[it]
        items[base + s] = it
        pos[base + it] = s


# ------------------------------------------------------------------ frontier
@nb.njit(cache=True)
def frontier_push(fr_key, fr_slot, n, key, slot):
    """Push ``(key, slot)`` onto the frontier max-heap of size ``n``.

    Returns ``(fr_key, fr_slot, n + 1)`` (arrays reallocated when full).
    """
    if n == fr_key.shape[0]:
        cap = max(16, 2 * n)
        nk = np.empty(cap, dtype=np.float64)
        ns = np.empty(cap, dtype=np.int64)
        nk[:n] = fr_key[:n]
        ns[:n] = fr_slot[:n]
        fr_key = nk
        fr_slot = ns
    s = n
    while s > 0:
        p = (s - 1) >> 1
        if fr_key[p] >= key:
            break
        fr_key[s] = fr_key[p]
        fr_slot[s] = fr_slot[p]
        s = p
    fr_key[s] = key
    fr_slot[s] = slot
    return fr_key, fr_slot, n + 1


@nb.njit(cache=True)
def frontier_pop(fr_key, fr_slot, n):
    """Pop the largest entry; returns ``(key, slot, n - 1)`` (n must be > 0)."""
    top_key = fr_key[0]
    top_slot = fr_slot[0]
    n -= 1
    key = fr_key[n]
    slot = fr_slot[n]
    s = 0
    while True:
        c = 2 * s + 1
        if c >= n:
            break
        if c + 1 < n and fr_key[c + 1] > fr_key[c]:
            c += 1
        if not fr_key[c] > key:
            break
        fr_key[s] = fr_key[c]
        fr_slot[s] = fr_slot[c]
        s = c
    if n > 0:
        fr_key[s] = key
        fr_slot[s] = slot
    return top_key, top_slot, n


# ------------------------------------------------------------ pool interface
@nb.njit(cache=True)
def mm_size(mm, h):
    """Number of items in heap ``h`` of pool ``mm``."""
    return mm[1][h]


@nb.njit(cache=True)
def mm_contains(mm, h, item):
    """Whether ``item`` is in heap ``h``."""
    return mm[4][mm[0][h] + item] >= 0


@nb.njit(cache=True)
def mm_key(mm, h, item):
    """Current key of ``item`` in heap ``h`` (NaN when absent). O(1)."""
    base = mm[0][h]
    s = mm[4][base + item]
    if s < 0:
        return np.nan
    return mm[2][base + s]


@nb.njit(cache=True)
def mm_top(mm, h):
    """``(item, key)`` of the largest key of heap ``h``; ``(-1, NaN)`` if empty."""
    if mm[1][h] == 0:
        return -1, np.nan
    base = mm[0][h]
    return mm[3][base], mm[2][base]


@nb.njit(cache=True)
def mm_insert(mm, h, item, key):
    """Insert an absent ``item`` with ``key`` into heap ``h``. O(log n)."""
    offsets, sizes, keys, items, pos = mm
    base = offsets[h]
    heap_insert(keys, items, pos, base, sizes[h], item, key)
    sizes[h] += 1


@nb.njit(cache=True)
def mm_erase(mm, h, item):
    """Erase a present ``item`` from heap ``h``. O(log n)."""
    offsets, sizes, keys, items, pos = mm
    heap_erase(keys, items, pos, offsets[h], sizes[h], item)
    sizes[h] -= 1


@nb.njit(cache=True)
def mm_update(mm, h, item, key):
    """Change the key of a present ``item`` in heap ``h``. O(log n)."""
    offsets, sizes, keys, items, pos = mm
    heap_set_key(keys, items, pos, offsets[h], sizes[h], item, key)


@nb.njit(cache=True)
def mm_set(mm, h, item, key):
    """Insert ``item`` or change its key (upsert). O(log n)."""
    offsets, sizes, keys, items, pos = mm
    base = offsets[h]
    if pos[base + item] < 0:
        heap_insert(keys, items, pos, base, sizes[h], item, key)
        sizes[h] += 1
    else:
        heap_set_key(keys, items, pos, base, sizes[h], item, key)


@nb.njit(cache=True)
def mm_cursor_start(mm, h, cursor):
    """Start a descending traversal of heap ``h`` (see :func:`mm_cursor_next`)."""
    fr_key, fr_slot, meta = cursor
    meta[0] = 0
    meta[1] = h
    if mm[1][h] > 0:
        fr_key[0] = mm[2][mm[0][h]]
        fr_slot[0] = 0
        meta[0] = 1


@nb.njit(cache=True)
def mm_cursor_next(mm, cursor):
    """Next ``(item, key)`` in descending key order; ``(-1, NaN)`` at the end.

    Returns ``(-2, NaN)`` if the cursor's capacity is exhausted (a cursor of
    capacity ``c`` can always return ``c - 1`` items).  Updating the heap
    during a traversal invalidates it.
    """
    fr_key, fr_slot, meta = cursor
    n = meta[0]
    if n == 0:
        return -1, np.nan
    h = meta[1]
    base = mm[0][h]
    size = mm[1][h]
    keys = mm[2]
    if n + 1 > fr_key.shape[0]:
        return -2, np.nan
    key, s, n = frontier_pop(fr_key, fr_slot, n)
    c = 2 * s + 1
    if c < size:
        fr_key, fr_slot, n = frontier_push(fr_key, fr_slot, n, keys[base + c], c)
    if c + 1 < size:
        fr_key, fr_slot, n = frontier_push(fr_key, fr_slot, n, keys[base + c + 1], c + 1)
    meta[0] = n
    return mm[3][base + s], key


@nb.njit(cache=True)
def mm_descending(mm, h, stop_key, out_items, out_keys):
    """Copy items of heap ``h`` in descending key order while ``key > stop_key``,
    at most ``len(out_items)`` of them; returns how many were written.

    Costs O(k log k) for k items written, whatever the heap size.
    """
    base = mm[0][h]
    size = mm[1][h]
    keys = mm[2]
    items = mm[3]
    limit = out_items.shape[0]
    fr_key = np.empty(16, dtype=np.float64)
    fr_slot = np.empty(16, dtype=np.int64)
    n = 0
    if size > 0:
        fr_key, fr_slot, n = frontier_push(fr_key, fr_slot, n, keys[base], 0)
    k = 0
    while n > 0 and k < limit:
        key, s, n = frontier_pop(fr_key, fr_slot, n)
        if not key > stop_key:
            break
        out_items[k] = items[base + s]
        out_keys[k] = key
        k += 1
        c = 2 * s + 1
        if c < size and keys[base + c] > stop_key:
            fr_key, fr_slot, n = frontier_push(fr_key, fr_slot, n, keys[base + c], c)
        if c + 1 < size and keys[base + c + 1] > stop_key:
            fr_key, fr_slot, n = frontier_push(fr_key, fr_slot, n, keys[base + c + 1], c + 1)
    return k


@nb.njit(cache=True)
def mm_check(mm, h):
    """Debug check of heap ``h``: heap order and reverse index. Returns bool."""
    offsets, sizes, keys, items, pos = mm
    base = offsets[h]
    size = sizes[h]
    cap = offsets[h + 1] - base
    count = 0
    for it in range(cap):
        s = pos[base + it]
        if s >= 0:
            count += 1
            if s >= size or items[base + s] != it:
                return False
    if count != size:
        return False
    for s in range(1, size):
        if keys[base + s] > keys[base + ((s - 1) >> 1)]:
            return False
    return True
