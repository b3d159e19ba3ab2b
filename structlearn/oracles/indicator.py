"""Indicator-factor maximization oracle over a shared, updatable table.

An *indicator factor* scores a labeling ``(a, b)`` of its two variables by
an entry of a table ``v`` of shape ``(n1, n2)`` shared by many factors (the
bigram/transition table of a chain model).  While a structural SVM trains,
``v`` changes a few entries at a time; the greedy (Frank-Wolfe) step of each
bigram factor needs the labeling of largest gradient (eq. 26 of the GDMM
structural-SVM paper)

    argmax_{(a, b) != (ex1, ex2)}  v[a, b] + m1[a] + m2[b]
                                   + loss1 * [a != gt1] + loss2 * [b != gt2]

where ``m1``, ``m2`` are sparse messages (unlisted labels, and listed
labels whose message is 0, count as unlisted).  The oracle runs the
four-case search of Appendix C-1 (see :mod:`.sorted_tables` for the cases)
over *line summaries* instead of the authors' sorted multimaps: every row
and every column keeps its ``H = 4`` largest entries (exact values, in
order) and a bound on all its other entries, plus a heap of the rows keyed
by their maxima.  An update of ``v`` costs O(H) on these small arrays (they
stay in cache, unlike heaps over all ``K^2`` entries, whose updates are
cache misses); a line is rescanned, O(K) over contiguous memory (columns in
a transposed copy), only when a summarized entry falls below the bound.

* (i) neither label listed: a depth-first walk of the row heap (larger
  child first) that skips every subtree whose root maximum cannot beat the
  best value, each unlisted row on the way searched for its best unlisted
  column;
* (ii), (iii) one label listed: its column / row, summary first, scanned
  only if the bound of the unsummarized entries can still win;
* (iv) both listed: each listed row walks its summarized entries (no table
  read) while they can win next to the largest ``m2``; its other entries
  are bounded by the row's ``cap`` and only second labels whose message can
  win next to the largest ``cap + m1`` of any row are visited (no sorting,
  so the cost stays linear in the list lengths when most messages are
  close, as in GDMM training), a pair's table entry read only when its
  bound can win.

Its cost is at most about ``nnz1 * nnz2`` plus a few summary entries
instead of ``n1 * n2``, and usually far fewer pairs in case (iv).

The loss term
-------------
``loss1 * [a != gt1] + loss2 * [b != gt2]`` is an optional Hamming-type
loss: ``lossX`` is added when the variable's label differs from its ground
truth ``gtX`` (e.g. ``lossX = 1`` for the Hamming loss, ``1 / n_tokens``
for a normalized one).  Pass ``lossX = 0`` or ``gtX = -1`` to leave it out.
In eq. 26 the loss ``delta_f`` belongs to unigram factors only (``delta_f = 0``
for bigram factors), so the structural SVM calls this oracle for bigram
factors with zero losses; the term exists for models that put the loss on
the pairwise factor.  Internally the ground-truth label is searched as a
listed label (message 0), which keeps every case exact.

Exactness
---------
The returned value equals a dense scan's maximum bit for bit (the value of
an entry is computed as ``(((v + m1) + m2) + la) + lb`` in both), for any
messages, ties and ``-inf`` entries; the returned labels attain it.  When no
admissible entry is above ``-inf`` the result is ``(-inf, -1, -1, n)``.

State and calling from numba
----------------------------
:func:`make_indicator_oracle` returns the state, a tuple of 12 arrays::

    state = (v, shape,                 # table (flat, C order), (n1, n2)
             t_keys, t_items, t_pos,   # heap of the rows keyed by their maxima (n1 entries)
             vT,                       # transposed copy, vT[b * n1 + a] = v[a, b]
             r_keys, r_cols, r_cap,    # row summaries: H largest entries of row a at
                                       # [a * H, (a + 1) * H) (column -1: none), bound on the rest
             c_keys, c_rows, c_cap)    # column summaries, the same per column

``H`` is ``structlearn.oracles._indicator_kernels.H``.  ``state[0]`` is the
table itself: read it freely, but change it only through the update
kernels.  Memory: 16 bytes per table entry (K = 1000: 16 MB; K = 3000:
144 MB).

Kernels (``structlearn.oracles._indicator_kernels``; plain ``@njit``
functions, callable from other numba code and from Python)::

    best, a, b, n_visited = indicator_fmo(
        state, idx1, val1, nnz1, idx2, val2, nnz2,
        loss1, gt1, loss2, gt2, ex1, ex2, workspace)
    best, a, b, n_visited = indicator_fmo_above(   # only values > floor
        state, idx1, val1, nnz1, idx2, val2, nnz2,
        loss1, gt1, loss2, gt2, ex1, ex2, floor, workspace)
    indicator_update(state, a, b, value)          # v[a, b] = value
    indicator_add(state, a, b, delta)             # v[a, b] += delta
    indicator_update_many(state, rows, cols, values, n)
    indicator_add_many(state, rows, cols, deltas, n)

``idx1, val1, nnz1``: labels ``idx1[:nnz1]`` (distinct, int64) of the first
variable carry message ``val1[:nnz1]`` (float64, finite or -inf); buffers
may be longer than ``nnz1``.  Same for the second variable.  ``loss1, gt1,
loss2, gt2``: float, int, float, int (see above).  ``ex1, ex2``: excluded
labeling (the ground truth in the structural SVM), ``-1, -1`` for none.
``workspace``: from :func:`~structlearn.oracles.make_pair_workspace`
``(max_n1, max_n2)``; reusable across calls, one per thread.  After a call
``workspace[2]`` holds the entries visited in cases (i)-(iv).
"""

from __future__ import annotations

import numpy as np

from ._indicator_kernels import H as SUMMARY
from ._indicator_kernels import (
    dense_indicator_argmax,
    indicator_add,
    indicator_add_many,
    indicator_build,
    indicator_fmo,
    indicator_fmo_above,
    indicator_update,
    indicator_update_many,
)
from .sorted_tables import _sparse_message, make_pair_workspace

__all__ = [
    "make_indicator_oracle",
    "indicator_argmax",
    "dense_indicator_argmax",
    "indicator_add",
    "indicator_add_many",
    "indicator_fmo",
    "indicator_fmo_above",
    "indicator_update",
    "indicator_update_many",
]

_INT32_MAX = np.iinfo(np.int32).max


def make_indicator_oracle(table):
    """Build the oracle state over a copy of ``table``.

    Parameters
    ----------
    table : array-like of float, shape (n1, n2)
        Initial table (no NaN or +inf; -inf allowed).

    Returns
    -------
    state : tuple of 12 arrays
        See the module docstring.
    """
    table = np.array(table, dtype=np.float64, copy=True)
    if table.ndim != 2:
        raise ValueError(f"table must be 2-D, got shape {table.shape}")
    if np.isnan(table).any() or np.isposinf(table).any():
        raise ValueError("table must not contain NaN or +inf")
    n1, n2 = table.shape
    n = n1 * n2
    if n > _INT32_MAX:
        raise ValueError("table has more than 2**31 - 1 entries")
    state = (
        np.ascontiguousarray(table.ravel()),
        np.array([n1, n2], dtype=np.int64),
        np.empty(n1, dtype=np.float64),
        np.empty(n1, dtype=np.int32),
        np.empty(n1, dtype=np.int32),
        np.empty(n, dtype=np.float64),
        np.empty(SUMMARY * n1, dtype=np.float64),
        np.empty(SUMMARY * n1, dtype=np.int64),
        np.empty(n1, dtype=np.float64),
        np.empty(SUMMARY * n2, dtype=np.float64),
        np.empty(SUMMARY * n2, dtype=np.int64),
        np.empty(n2, dtype=np.float64),
    )
    indicator_build(state)
    return state


def indicator_argmax(state, idx1=None, val1=None, idx2=None, val2=None, *,
                     loss=None, exclude=None, floor=-np.inf, workspace=None):
    """Checked Python entry to :func:`indicator_fmo` (for tests and scripts).

    Parameters
    ----------
    state : tuple from :func:`make_indicator_oracle`
    idx1, val1, idx2, val2 : arrays, optional
        Sparse messages of the two variables.
    loss : tuple ``(loss1, gt1, loss2, gt2)``, optional
    exclude : pair of int, optional
    floor : float, default=-inf
        Only values above ``floor`` are searched (:func:`indicator_fmo_above`):
        ``(floor, -1, -1, n)`` when none is.
    workspace : tuple from ``make_pair_workspace``, optional

    Returns
    -------
    best : float
    a, b : int
    n_visited : int
    """
    n1, n2 = int(state[1][0]), int(state[1][1])
    idx1, val1 = _sparse_message(idx1, val1, n1, "message 1")
    idx2, val2 = _sparse_message(idx2, val2, n2, "message 2")
    l1, g1, l2, g2 = (0.0, -1, 0.0, -1) if loss is None else loss
    if not (-1 <= g1 < n1 and -1 <= g2 < n2):
        raise ValueError(f"ground truth ({g1}, {g2}) out of range for a {n1} x {n2} table")
    ex1, ex2 = (-1, -1) if exclude is None else (int(exclude[0]), int(exclude[1]))
    if workspace is None:
        workspace = make_pair_workspace(n1, n2)
    floor = float(floor)
    if np.isnan(floor):
        raise ValueError("floor must not be NaN")
    best, a, b, nv = indicator_fmo_above(
        state, idx1, val1, idx1.shape[0], idx2, val2, idx2.shape[0],
        float(l1), int(g1), float(l2), int(g2), ex1, ex2, floor, workspace,
    )
    return float(best), int(a), int(b), int(nv)
