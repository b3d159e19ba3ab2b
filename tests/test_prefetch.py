"""Software prefetches (:mod:`structlearn._prefetch`): hints that change no value."""

import numba as nb
import numpy as np
import pytest
from numba.core.errors import TypingError

from structlearn._borrowing import borrowing_kernel
from structlearn._prefetch import prefetch, prefetch_at, prefetch_row, prefetch_span


@borrowing_kernel(python_callable=True)
def _gathered_sums(data, indptr, rows, order, out):
    """``out[t]`` = the sum of ``data``'s run ``order[t]`` and of that row of
    ``rows``, asking for the next ones first (also past the arrays' ends)."""
    for t in range(order.shape[0]):
        i = order[t]
        nxt = order[t + 1] if t + 1 < order.shape[0] else indptr.shape[0] + 5
        if nxt < indptr.shape[0] - 1:
            prefetch_span(data, indptr[nxt], indptr[nxt + 1])
            prefetch_row(rows, nxt, rows.shape[1])
        prefetch(data, data.shape[0] + 100)  # beyond the end: a hint reads nothing
        prefetch_at(rows, nxt, -3)
        s = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            s += data[p]
        for c in range(rows.shape[1]):
            s += rows[i, c]
        out[t] = s


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.uint8])
def test_prefetched_kernel_reads_the_values_a_plain_one_reads(dtype):
    rng = np.random.default_rng(0)
    for n, width in [(1, 0), (5, 1), (40, 33), (200, 7)]:
        lengths = rng.integers(0, 90, size=n)  # empty runs too
        indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        data = rng.integers(0, 5, size=int(indptr[-1])).astype(np.float64)
        rows = rng.integers(0, 5, size=(n, width)).astype(dtype)
        order = rng.permutation(n).astype(np.int64)
        out = np.full(n, np.nan)
        _gathered_sums(data, indptr, rows, order, out)
        expected = [data[indptr[i]:indptr[i + 1]].sum() + rows[i].sum() for i in order]
        np.testing.assert_array_equal(out, expected)


def test_prefetch_refuses_an_index_count_that_is_not_the_arrays_dimensions():
    @nb.njit
    def one_index_on_a_matrix(a):
        prefetch(a, 0)

    @nb.njit
    def two_indices_on_a_vector(a):
        prefetch_at(a, 0, 0)

    @nb.njit
    def span_of_a_matrix(a):
        prefetch_span(a, 0, 1)

    @nb.njit
    def row_of_a_vector(a):
        prefetch_row(a, 0, 1)

    with pytest.raises(TypingError):
        one_index_on_a_matrix(np.zeros((2, 2)))
    with pytest.raises(TypingError):
        two_indices_on_a_vector(np.zeros(2))
    with pytest.raises(TypingError):
        span_of_a_matrix(np.zeros((2, 2)))
    with pytest.raises(TypingError):
        row_of_a_vector(np.zeros(2))
