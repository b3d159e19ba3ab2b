"""Indexed-heap sorted multimaps against a plain Python reference."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from structlearn.oracles.multimap import (
    make_cursor,
    make_multimap,
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
    multimap_from_keys,
)

CAPS = (7, 1, 12)
KEYS = st.one_of(st.integers(-3, 3).map(float), st.floats(-10, 10), st.just(-np.inf))
OPS = st.lists(
    st.tuples(st.sampled_from(["insert", "erase", "update", "set"]),
              st.integers(0, len(CAPS) - 1), st.integers(0, 11), KEYS),
    max_size=60,
)


def apply_ops(ops):
    mm = make_multimap(np.array(CAPS))
    ref = [dict() for _ in CAPS]
    for op, h, item, key in ops:
        item %= CAPS[h]
        present = item in ref[h]
        if op == "insert" and not present:
            mm_insert(mm, h, item, key)
            ref[h][item] = key
        elif op == "erase" and present:
            mm_erase(mm, h, item)
            del ref[h][item]
        elif op == "update" and present:
            mm_update(mm, h, item, key)
            ref[h][item] = key
        elif op == "set":
            mm_set(mm, h, item, key)
            ref[h][item] = key
    return mm, ref


@settings(max_examples=150, deadline=None)
@given(OPS)
def test_multimap_agrees_with_sorted_reference(ops):
    mm, ref = apply_ops(ops)
    for h, cap in enumerate(CAPS):
        assert mm_check(mm, h)
        assert mm_size(mm, h) == len(ref[h])
        for item in range(cap):
            assert mm_contains(mm, h, item) == (item in ref[h])
            k = mm_key(mm, h, item)
            if item in ref[h]:
                assert k == ref[h][item]
            else:
                assert np.isnan(k)
        expected = sorted(ref[h].values(), reverse=True)
        # full descending traversal
        out_i = np.empty(cap, dtype=np.int64)
        out_k = np.empty(cap)
        n = mm_descending(mm, h, -np.inf, out_i, out_k)
        finite = [k for k in expected if k > -np.inf]
        assert n == len(finite)
        assert list(out_k[:n]) == finite
        assert all(ref[h][int(i)] == k for i, k in zip(out_i[:n], out_k[:n]))
        assert len(set(out_i[:n].tolist())) == n
        # early exit: stop below a threshold, and after 2 items
        if expected:
            thr = expected[len(expected) // 2]
            n2 = mm_descending(mm, h, thr, out_i, out_k)
            assert list(out_k[:n2]) == [k for k in expected if k > thr]
            n3 = mm_descending(mm, h, -np.inf, out_i[:2], out_k[:2])
            assert list(out_k[:n3]) == finite[:2]
            item, key = mm_top(mm, h)
            assert key == expected[0] and ref[h][item] == key
        else:
            assert mm_top(mm, h)[0] == -1
        # resumable cursor sees every item (including -inf keys) in order
        cur = make_cursor(cap + 1)
        mm_cursor_start(mm, h, cur)
        seen = []
        while True:
            item, key = mm_cursor_next(mm, cur)
            if item < 0:
                assert item == -1
                break
            assert ref[h][item] == key
            seen.append(key)
        assert seen == expected


def test_cursor_reports_capacity_exhaustion():
    mm = multimap_from_keys(np.arange(100.0))
    cur = make_cursor(4)
    mm_cursor_start(mm, 0, cur)
    got = [mm_cursor_next(mm, cur)[0] for _ in range(3)]
    assert got == [99, 98, 97]
    assert mm_cursor_next(mm, cur)[0] == -2


def test_large_random_update_sequence():
    rng = np.random.default_rng(0)
    vals = rng.normal(size=5000)
    mm = multimap_from_keys(vals)
    items = rng.integers(0, 5000, 20000)
    new = rng.integers(-5, 6, 20000).astype(float)
    for it, k in zip(items, new):
        mm_update(mm, 0, it, k)
        vals[it] = k
    assert mm_check(mm, 0)
    out_i = np.empty(50, dtype=np.int64)
    out_k = np.empty(50)
    n = mm_descending(mm, 0, -np.inf, out_i, out_k)
    np.testing.assert_array_equal(out_k[:n], np.sort(vals)[::-1][:50])


def test_make_multimap_validation():
    with pytest.raises(ValueError, match="non-negative"):
        make_multimap([-1])
    with pytest.raises(TypeError):
        make_multimap([1.5])
    with pytest.raises(ValueError, match="NaN"):
        multimap_from_keys([np.nan])
    with pytest.raises(ValueError, match="capacity"):
        make_cursor(1)
