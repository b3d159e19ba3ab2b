"""Kernels compiled without numba's runtime (:mod:`structlearn._borrowing`)."""

import numpy as np
import pytest
from numba.core.errors import NumbaError

from structlearn._borrowing import borrowing_kernel


@borrowing_kernel
def _scaled_sum(values, scale):
    total = 0.0
    for i in range(values.shape[0]):
        total += values[i] * scale
    return total


@borrowing_kernel(python_callable=True)
def _row_sums(matrix, out):
    for r in range(matrix.shape[0]):
        row = matrix[r]  # a view: borrowed, no reference counted
        out[r] = _scaled_sum(row, 1.0)


@borrowing_kernel(python_callable=True)
def _allocates(n):
    return np.zeros(n).sum()


def test_a_borrowing_kernel_reads_views_and_writes_in_place():
    rng = np.random.default_rng(0)
    for shape in [(0, 3), (1, 1), (7, 5), (40, 2)]:
        matrix = rng.normal(size=shape)
        out = np.full(shape[0], np.nan)
        _row_sums(matrix, out)
        np.testing.assert_allclose(out, matrix.sum(axis=1))
    # a strided view as the argument: the caller keeps its base alive
    matrix = rng.normal(size=(9, 6))
    out = np.empty(3)
    _row_sums(matrix[::3, 1:], out)
    np.testing.assert_allclose(out, matrix[::3, 1:].sum(axis=1))


def test_a_borrowing_kernel_that_allocates_is_refused():
    # numba refuses the allocation when it types it (an array made inside
    # the kernel cannot be returned, not even to its own np.zeros) or lowers it
    with pytest.raises(NumbaError, match="NRT required|returning of array"):
        _allocates(3)


def test_the_hot_helpers_borrow():
    """The kernels called per edge, sample or factor step, whose reference
    counts cost more than their work (see the module's docstring)."""
    from structlearn.graphs import _graph_kernels
    from structlearn.inference.exact import _soft_arc_kernels
    from structlearn.inference.lp import _local_search_kernels
    from structlearn.learners import (_gdmm_chain_kernels, _gdmm_multilabel_kernels,
                                      _gdmm_multilabel_separators)

    hot = [_soft_arc_kernels._support, _soft_arc_kernels._full_support,
           _soft_arc_kernels._fully_supported, _soft_arc_kernels._propagate,
           _soft_arc_kernels._existential_pass, _soft_arc_kernels._eliminate,
           _gdmm_multilabel_kernels._visit_samples, _gdmm_chain_kernels._unigram_step,
           _gdmm_chain_kernels._bigram_step, _local_search_kernels._conditional_scores,
           _local_search_kernels._icm_from, _graph_kernels.score_labelings,
           _gdmm_multilabel_separators._separator_samples]
    for kernel in hot:
        assert kernel.targetoptions.get("_nrt") is False, kernel.py_func.__qualname__
