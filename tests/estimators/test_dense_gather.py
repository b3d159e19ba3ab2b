"""Dense sequences stacked and multiplied without the GIL, against numpy."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.exceptions import ConvergenceWarning

from structlearn.estimators import SequenceSSVM
from structlearn.estimators import _dense_gather as gather
from structlearn.estimators._validation import check_sequence_items, stack_sequences


@st.composite
def dense_sequences(draw):
    """Float64 sequences of one width, a few values NaN or +-inf."""
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    d = int(rng.integers(1, 6))
    parts = [rng.standard_normal((int(rng.integers(1, 7)), d))
             for _ in range(int(rng.integers(1, 12)))]
    for _ in range(draw(st.integers(0, 2))):
        part = parts[int(rng.integers(len(parts)))]
        part.flat[int(rng.integers(part.size))] = rng.choice([np.nan, np.inf, -np.inf])
    return parts, d


def _offsets(parts):
    return np.concatenate([[0], np.cumsum([len(p) for p in parts])]).astype(np.int64)


def _first_bad_row(stacked):
    bad = np.flatnonzero(~np.isfinite(stacked).all(axis=1))
    return int(bad[0]) if bad.size else -1


@settings(max_examples=80, deadline=None)
@given(dense_sequences())
def test_gathered_rows_are_the_stacked_rows(case):
    parts, d = case
    offsets = _offsets(parts)
    stacked = np.concatenate(parts)
    out, bad = gather.gather_dense_rows(parts, offsets, d)
    assert bad == _first_bad_row(stacked)
    if bad < 0:
        np.testing.assert_array_equal(out, stacked)
    else:  # copied up to the first bad sequence at least
        seq = int(np.searchsorted(offsets, bad, side="right") - 1)
        np.testing.assert_array_equal(out[:offsets[seq]], stacked[:offsets[seq]])


@settings(max_examples=80, deadline=None)
@given(dense_sequences(), st.integers(1, 40))
def test_gathered_products_are_the_stacked_products(case, block_rows):
    parts, d = case
    offsets = _offsets(parts)
    stacked = np.concatenate(parts)
    W = np.random.default_rng(d).standard_normal((d, 3))
    # blocks of one row up to the whole input, sequences longer than a block
    out, bad = gather.gather_dense_products(parts, offsets, W, block_bytes=8 * d * block_rows)
    assert bad == _first_bad_row(stacked)
    assert out.shape == (stacked.shape[0], 3) and out.flags.c_contiguous
    if bad < 0:
        np.testing.assert_allclose(out, stacked @ W, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("make", [
    lambda x: x.astype(np.float32),
    lambda x: np.asfortranarray(np.repeat(x, 2, axis=1))[:, ::2],
    lambda x: x.astype(np.int64),
    lambda x: np.broadcast_to(x[:1], x.shape),  # rows that share memory
    lambda x: x.astype(">f8"),  # byte-swapped
])
def test_other_parts_are_left_to_numpy(make):
    rng = np.random.default_rng(0)
    parts = [rng.standard_normal((3, 4)) for _ in range(5)]
    parts[2] = make(parts[2])
    assert gather.gather_dense_rows(parts, _offsets(parts), 4) is None
    assert gather.gather_dense_products(parts, _offsets(parts), np.ones((4, 2))) is None
    # stack_sequences takes them through numpy: the same values
    np.testing.assert_array_equal(stack_sequences(parts, _offsets(parts), 4, False),
                                  np.concatenate(parts).astype(np.float64))


def test_views_and_subclasses_are_read_where_they_lie(tmp_path):
    rng = np.random.default_rng(1)
    base = rng.standard_normal((20, 4))
    mm = np.lib.format.open_memmap(tmp_path / "x.npy", mode="w+", shape=(6, 4))
    mm[:] = rng.standard_normal((6, 4))
    parts = [base[3:7], base[:1], np.broadcast_to(base[5], (1, 4)), mm, base[10:20]]
    offsets = _offsets(parts)
    out, bad = gather.gather_dense_rows(parts, offsets, 4)
    assert bad == -1
    np.testing.assert_array_equal(out, np.concatenate(parts))


def test_a_header_layout_that_does_not_hold_falls_back(monkeypatch):
    parts = [np.arange(6.0).reshape(2, 3), np.ones((1, 3))]
    assert gather._layout_holds()
    # the field after the data pointer (the number of dimensions) is no address
    monkeypatch.setattr(gather, "_DATA_FIELD", gather._DATA_FIELD + 8)
    gather._layout_holds.cache_clear()
    try:
        assert not gather._layout_holds()
        assert gather.gather_dense_rows(parts, _offsets(parts), 3) is None
    finally:
        gather._layout_holds.cache_clear()


@pytest.fixture(scope="module")
def model():
    rng = np.random.default_rng(3)
    X = [rng.standard_normal((int(rng.integers(1, 8)), 5)) for _ in range(40)]
    y = [rng.integers(0, 4, size=len(x)) for x in X]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return SequenceSSVM(C=1.0, max_iter=10, random_state=0).fit(X, y)


def test_predict_over_gathered_rows_is_the_viterbi_of_the_scores(model):
    from structlearn.inference.chains.viterbi import viterbi

    rng = np.random.default_rng(4)
    X = [rng.standard_normal((int(rng.integers(1, 8)), 5)) for _ in range(300)]
    parts, offsets, _, _ = check_sequence_items(X)
    unary = np.ascontiguousarray(np.concatenate(X) @ model.coef_.T)
    codes = np.empty(unary.shape[0], dtype=np.int64)
    viterbi(unary, offsets, np.ascontiguousarray(model.transition_), codes)
    want = np.split(model.classes_[codes], offsets[1:-1])
    for n_jobs in (1, 2):
        model.set_params(n_jobs=n_jobs)
        got = model.predict(X)
        for a, b in zip(want, got):
            np.testing.assert_array_equal(a, b)
    model.set_params(n_jobs=None)


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_a_non_finite_value_names_its_sequence_and_token(model, value):
    rng = np.random.default_rng(5)
    X = [rng.standard_normal((4, 5)) for _ in range(30)]
    X[17][2, 3] = value
    X[23][0, 0] = np.nan  # only the first is named
    for call in (model.predict, model.decision_function, lambda X: model.predict_topk(X, 2)):
        with pytest.raises(ValueError, match=r"X\[17\] contains NaN or infinity \(token 2\)"):
            call(X)


def _item(kind, rng, n, d):
    """One item of a sequence list: a plain float64 array, or one of a kind
    the header reader leaves to the attribute checks (most of them always;
    a one-column Fortran array or a one-row strided view is C-contiguous)."""
    x = rng.standard_normal((n, d))
    return {"plain": x, "empty": x[:0], "fortran": np.asfortranarray(np.ones((n + 1, d))),
            "strided": rng.standard_normal((2 * n, d))[::2], "float32": x.astype(np.float32),
            "int": (x * 10).astype(np.int64), "one_d": x.ravel(), "three_d": x[..., None], "matrix": np.asmatrix(x),
            "wider": rng.standard_normal((n, d + 1)), "list": x.tolist(),
            "big_endian": x.astype(">f8")}[kind]


def _expected_headers(parts):
    """The naive reference of :func:`dense_headers`."""
    if not parts:
        return None
    for p in parts:
        if (type(p) is not np.ndarray or p.dtype != np.float64 or p.ndim != 2
                or not p.flags.c_contiguous or p.shape[0] < 1 or p.shape[1] != parts[0].shape[1]):
            return None
    return [p.shape[0] for p in parts], parts[0].shape[1]


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # np.asmatrix
@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32 - 1),
       st.lists(st.sampled_from(["plain"] * 6 + ["empty", "fortran", "strided", "float32", "int",
                                                 "one_d", "three_d", "matrix", "wider", "list",
                                                 "big_endian"]),
                min_size=0, max_size=8))
def test_header_reader_against_the_arrays_attributes(seed, kinds):
    rng = np.random.default_rng(seed)
    d = int(rng.integers(1, 5))
    parts = [_item(k, rng, int(rng.integers(1, 5)), d) for k in kinds]
    expected = _expected_headers(parts)
    found = gather.dense_headers(parts)
    if expected is None:
        assert found is None
    else:
        assert found is not None
        assert found[0].tolist() == expected[0] and found[1] == expected[1]
        addresses = gather._addresses(parts)
        assert addresses.tolist() == [p.ctypes.data for p in parts]


def test_header_reader_falls_back_where_the_layout_does_not_hold(monkeypatch):
    parts = [np.ones((2, 3)), np.ones((1, 3))]
    assert gather.dense_headers(parts)[1] == 3
    monkeypatch.setattr(gather, "_DATA_FIELD", gather._DATA_FIELD + 8)
    gather._layout_holds.cache_clear()
    try:
        assert gather.dense_headers(parts) is None
        # the checks then take the arrays' attributes, with the same answers
        assert check_sequence_items(parts)[2] == 3
    finally:
        gather._layout_holds.cache_clear()


def test_object_ids_read_from_a_list_are_the_ids():
    parts = [np.zeros((2, 3)), np.ones((1, 3)), "not an array", None] * 50
    assert gather._list_layout_holds()  # (CPython: the list's item pointers are read)
    np.testing.assert_array_equal(gather._object_ids(parts), [id(p) for p in parts])
    for other in (tuple(parts), type("Listed", (list,), {})(parts), parts[:0]):
        np.testing.assert_array_equal(gather._object_ids(other), [id(p) for p in other])
