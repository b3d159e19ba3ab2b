"""Tests for the estimator input-validation shim."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from structlearn.estimators._validation import (
    check_multilabel,
    check_n_classes,
    check_sequences,
    csr_arrays,
    encode_sequence_labels,
)


def _seqs(rng, lengths, d=4, density=0.5):
    return [rng.normal(size=(n, d)) * (rng.random((n, d)) < density) for n in lengths]


# ---------------------------------------------------------------- check_sequences


@settings(max_examples=30, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 5), min_size=1, max_size=6),
    d=st.integers(1, 5),
    sparse_mask=st.integers(0, 63),
    seed=st.integers(0, 2**31 - 1),
)
def test_check_sequences_concatenates(lengths, d, sparse_mask, seed):
    rng = np.random.default_rng(seed)
    dense = _seqs(rng, lengths, d)
    X = [sp.csr_matrix(x) if sparse_mask >> i & 1 else x for i, x in enumerate(dense)]
    y = [rng.integers(0, 3, size=n) for n in lengths]
    Xcat, offsets, ycat = check_sequences(X, y)
    np.testing.assert_array_equal(offsets, np.r_[0, np.cumsum(lengths)])
    assert offsets.dtype == np.int64
    expected = np.vstack(dense)
    if any(sp.issparse(x) for x in X):
        assert sp.isspmatrix_csr(Xcat)
        assert Xcat.indices.dtype == np.int64 and Xcat.indptr.dtype == np.int64
        assert Xcat.has_sorted_indices
        assert np.all(Xcat.data != 0)  # explicit zeros dropped
        np.testing.assert_array_equal(Xcat.toarray(), expected)
    else:
        assert isinstance(Xcat, np.ndarray) and Xcat.flags.c_contiguous
        assert Xcat.dtype == np.float64
        np.testing.assert_array_equal(Xcat, expected)
    np.testing.assert_array_equal(ycat, np.concatenate(y))
    data, indices, indptr = csr_arrays(Xcat)
    rebuilt = sp.csr_matrix((data, indices, indptr), shape=expected.shape).toarray()
    np.testing.assert_array_equal(rebuilt, expected)
    assert indices.dtype == np.int64 and indptr.dtype == np.int64


def test_check_sequences_does_not_mutate_sparse_input():
    x = sp.csr_matrix((np.array([1.0, 0.0, 2.0]), np.array([2, 0, 2]), np.array([0, 3])), shape=(1, 3))
    before = (x.data.copy(), x.indices.copy())
    Xcat, _, _ = check_sequences([x])
    np.testing.assert_array_equal(Xcat.toarray(), [[0.0, 0.0, 3.0]])
    np.testing.assert_array_equal(x.data, before[0])
    np.testing.assert_array_equal(x.indices, before[1])


def test_check_sequences_accepts_object_array_and_int_data():
    X = np.empty(2, dtype=object)
    X[0] = np.ones((2, 3), dtype=np.int32)
    X[1] = np.zeros((1, 3), dtype=bool)
    Xcat, offsets, _ = check_sequences(X)
    assert Xcat.dtype == np.float64 and Xcat.shape == (3, 3)
    np.testing.assert_array_equal(offsets, [0, 2, 3])


@pytest.mark.parametrize(
    "X, y, exc, match",
    [
        ([], None, ValueError, "X is empty"),
        (np.ones((3, 2)), None, TypeError, "list of 2-D arrays"),
        (sp.csr_matrix(np.ones((3, 2))), None, TypeError, "list of 2-D arrays"),
        ("abc", None, TypeError, "list of 2-D arrays"),
        ([np.ones((2, 2)), np.ones((2, 3))], None, ValueError, r"X\[1\] has 3 features but X\[0\] has 2"),
        ([np.ones((2, 2)), sp.csr_matrix(np.ones((1, 3)))], None, ValueError, r"X\[1\] has 3 features"),
        ([np.ones((2, 2)), np.ones((0, 2))], None, ValueError, r"X\[1\] is an empty sequence"),
        ([np.ones((2, 2)), np.ones((3, 0))], None, ValueError, r"X\[1\] has 0 features but X\[0\] has 2"),
        ([np.ones((2, 2)), np.ones((2, 2), dtype=complex)], None, TypeError, r"X\[1\] must hold real"),
        ([np.ones(3)], None, ValueError, r"X\[0\] must be 2-D"),
        ([np.ones((2, 2, 2))], None, ValueError, r"X\[0\] must be 2-D"),
        ([np.ones((2, 0))], None, ValueError, "0 features"),
        ([np.array([["a", "b"]])], None, TypeError, r"X\[0\] must hold real numbers"),
        ([np.ones((1, 2)), np.array([[1.0, np.nan]])], None, ValueError, r"X\[1\] contains NaN or infinity"),
        ([np.ones((2, 2)), np.array([[0.0, 1.0], [np.inf, 1.0]])], None, ValueError, r"X\[1\] contains NaN or infinity \(token 1\)"),
        ([np.ones((1, 2)), sp.csr_matrix(np.array([[0.0, -np.inf]]))], None, ValueError, r"X\[1\] contains NaN"),
        ([np.ones((2, 2))], [[0, 1], [1]], ValueError, "X has 1 sequences but y has 2"),
        ([np.ones((2, 2)), np.ones((1, 2))], [[0, 1], [1, 0]], ValueError, r"y\[1\] has 2 labels but X\[1\] has 1 tokens"),
        ([np.ones((2, 2))], [np.zeros((2, 2))], ValueError, r"y\[0\] must be a 1-D array"),
        ([np.ones((2, 2))], ["ab"], TypeError, r"y\[0\] must be a 1-D array-like"),
        ([np.ones((2, 2))], np.zeros((1, 2)), TypeError, "y must be a list of 1-D label arrays"),
        ([np.ones((2, 2))], "ab", TypeError, "y must be a list of 1-D label arrays"),
    ],
)
def test_check_sequences_errors(X, y, exc, match):
    with pytest.raises(exc, match=match):
        check_sequences(X, y)


def test_check_sequences_sparse_refused_and_n_features():
    with pytest.raises(TypeError, match=r"X\[1\] is a sparse matrix"):
        check_sequences([np.ones((1, 2)), sp.csr_matrix(np.ones((1, 2)))], accept_sparse=False)
    with pytest.raises(ValueError, match="X has 2 features, but the estimator was fitted with 3"):
        check_sequences([np.ones((1, 2))], n_features=3)


def test_check_sequences_label_types():
    X = [np.ones((2, 1)), np.ones((1, 1))]
    _, _, ycat = check_sequences(X, [[(0, 1), (1, 0)], [(0, 1)]])
    assert ycat.dtype == object and ycat.shape == (3,) and ycat[1] == (1, 0)
    # a mix of numbers and strings is kept, not stringified
    _, _, ycat = check_sequences(X, [[1, "a"], ["b"]])
    assert ycat[0] == 1 and ycat[1] == "a"
    _, _, ycat = check_sequences(X, [np.array([1, 2]), np.array(["x"])])
    assert ycat.dtype == object and ycat[0] == 1 and ycat[2] == "x"


@pytest.mark.parametrize("y, match", [
    ([np.zeros(2), np.zeros(2), np.zeros(1)], r"y\[1\] has 2 labels but X\[1\] has 1 tokens"),
    ([np.zeros(2), np.zeros((1, 1)), np.zeros(3)], r"y\[1\] must be a 1-D array"),
    ([np.zeros(2), np.zeros(3), np.zeros((3, 1))], r"y\[1\] has 3 labels"),
])
def test_label_arrays_are_checked_at_once_with_the_same_errors(y, match):
    """Label sequences given as arrays are checked and joined at once; the
    first bad one is named as for lists, and the result is the same."""
    X = [np.ones((2, 1)), np.ones((1, 1)), np.ones((3, 1))]
    with pytest.raises(ValueError, match=match):
        check_sequences(X, y)
    with pytest.raises(ValueError, match=match):
        check_sequences(X, [a.tolist() for a in y])
    for good in ([np.array([1, 2]), np.array([3]), np.array([4, 5, 6])],
                 [np.array(["a", "b"]), np.array(["c"]), np.array(["d", "e", "f"])]):
        _, _, from_arrays = check_sequences(X, good)
        _, _, from_lists = check_sequences(X, [a.tolist() for a in good])
        assert from_arrays.dtype == from_lists.dtype
        np.testing.assert_array_equal(from_arrays, from_lists)


def test_csr_int64_indices_large_shape():
    # a column index beyond int32 must survive (kernels read int64 indices)
    big = 2**31 + 5
    x = sp.csr_matrix((np.array([1.0, 2.0]), np.array([3, big - 1], dtype=np.int64), np.array([0, 1, 2], dtype=np.int64)), shape=(2, big))
    Xcat, offsets, _ = check_sequences([x])
    data, indices, indptr = csr_arrays(Xcat)
    np.testing.assert_array_equal(indices, [3, big - 1])
    assert Xcat.shape == (2, big)


# ---------------------------------------------------------------- labels


def test_encode_labels_roundtrip_and_given_classes():
    y = np.array(["c", "a", "b", "a"])
    classes, codes = encode_sequence_labels(y)
    np.testing.assert_array_equal(classes, ["a", "b", "c"])
    np.testing.assert_array_equal(classes[codes], y)
    assert codes.dtype == np.int64
    classes2, codes2 = encode_sequence_labels(y[:2], classes=["c", "b", "a"])
    np.testing.assert_array_equal(classes2, ["a", "b", "c"])
    np.testing.assert_array_equal(codes2, [2, 0])
    ytup = np.empty(3, dtype=object)
    ytup[:] = [(1, 2), (0, 5), (1, 2)]
    classes, codes = encode_sequence_labels(ytup)
    assert list(classes) == [(0, 5), (1, 2)]
    np.testing.assert_array_equal(codes, [1, 0, 1])
    classes, codes = encode_sequence_labels(ytup, classes=[(1, 2), (0, 5)])
    np.testing.assert_array_equal(codes, [1, 0, 1])


def test_encode_labels_errors():
    with pytest.raises(ValueError, match="not in classes: 'z'"):
        encode_sequence_labels(np.array(["a", "z"]), classes=["a", "b"])
    with pytest.raises(ValueError, match="not in classes: 7"):
        encode_sequence_labels(np.array([1, 7]), classes=[1, 2])
    with pytest.raises(ValueError, match="NaN"):
        encode_sequence_labels(np.array([1.0, np.nan]))
    with pytest.raises(ValueError, match="NaN"):
        encode_sequence_labels(np.array(["a", float("nan")], dtype=object))
    with pytest.raises(ValueError, match="mutually comparable"):
        encode_sequence_labels(np.array([1, "a"], dtype=object))
    with pytest.raises(ValueError, match="duplicate"):
        encode_sequence_labels(np.array([1]), classes=[1, 1])


def test_check_n_classes():
    check_n_classes(np.array(["a", "b"]))
    with pytest.raises(ValueError, match=r"1 distinct class \('a'\); at least 2"):
        check_n_classes(np.array(["a"]))
    with pytest.raises(ValueError, match="at least 3"):
        check_n_classes([0, 1], minimum=3)


# ---------------------------------------------------------------- multilabel


def test_check_multilabel_valid():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(5, 3))
    Y = rng.random((5, 4)) < 0.5
    Xc, Yc = check_multilabel(X, Y)
    assert Xc.dtype == np.float64 and Xc.flags.c_contiguous
    assert Yc.dtype == np.int8 and Yc.shape == (5, 4)  # one byte per entry
    np.testing.assert_array_equal(Yc, Y.astype(int))
    Xs, Ys = check_multilabel(sp.csr_matrix(X), sp.csr_matrix(Y.astype(float)))
    assert Xs.indices.dtype == np.int64
    np.testing.assert_array_equal(Xs.toarray(), X)
    np.testing.assert_array_equal(Ys, Yc)
    assert check_multilabel(X)[1] is None


@pytest.mark.parametrize(
    "X, Y, match",
    [
        (np.ones((3, 2)), np.array([[0, 2], [1, 0], [0, 0]]), "only 0 and 1; found 2"),
        (np.ones((3, 2)), np.array([[0, 0.5], [1, 0], [0, 0]]), "only 0 and 1; found 0.5"),
        (np.ones((3, 2)), np.ones((2, 2)), "X has 3 samples but Y has 2"),
        (np.ones((3, 2)), np.ones(3), "2-D"),
        (np.ones((3, 2)), np.ones((3, 0)), "0 labels"),
        (np.array([[np.nan, 1.0]]), np.ones((1, 2)), "NaN"),
        (np.ones((3, 2)), np.array([["a"], ["b"], ["c"]]), "0/1 values"),
    ],
)
def test_check_multilabel_errors(X, Y, match):
    with pytest.raises(ValueError, match=match):
        check_multilabel(X, Y)


def test_check_multilabel_n_features():
    with pytest.raises(ValueError, match="fitted with 5 features"):
        check_multilabel(np.ones((2, 3)), n_features=5)


@settings(max_examples=100, deadline=None)
@given(lengths=st.lists(st.integers(0, 6), min_size=1, max_size=12), width=st.integers(0, 3))
def test_split_sequences_equals_np_split(lengths, width):
    """Views of the same rows, shapes and dtype as np.split (zero-length pieces included)."""
    from structlearn.estimators._validation import split_sequences

    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    stacked = np.arange(offsets[-1] * 3).reshape(offsets[-1], 3)[:, :width]
    ours, ref = split_sequences(stacked, offsets), np.split(stacked, offsets[1:-1])
    assert len(ours) == len(ref) == len(lengths)
    for a, b in zip(ours, ref):
        assert a.shape == b.shape and a.dtype == b.dtype and np.shares_memory(a, stacked) == (a.size > 0)
        np.testing.assert_array_equal(a, b)


def test_plain_array_sequences_take_the_fast_path_and_bad_ones_are_still_named():
    from structlearn.estimators._validation import check_sequence_items

    rng = np.random.default_rng(0)
    X = [rng.normal(size=(n, 3)) for n in (2, 5, 1)]
    parts, offsets, d, sparse = check_sequence_items(X)
    assert all(p is x for p, x in zip(parts, X)) and d == 3 and not sparse
    np.testing.assert_array_equal(offsets, [0, 2, 7, 8])
    for bad, match in [(X[:1] + [np.zeros((0, 3))], r"X\[1\] is an empty sequence"),
                       (X[:2] + [np.zeros((2, 4))], r"X\[2\] has 4 features but X\[0\] has 3"),
                       (X[:1] + [np.zeros(3)], r"X\[1\] must be 2-D"),
                       (X[:1] + [np.array([["a", "b", "c"]])], r"X\[1\] must hold real numbers")]:
        with pytest.raises((ValueError, TypeError), match=match):
            check_sequence_items(bad)
