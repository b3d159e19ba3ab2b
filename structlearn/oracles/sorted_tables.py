"""Static sorted lists of pairwise tables and the four-case search over them.

MAP inference by GDMM (and any other active-set method) must find, for a
pairwise factor with a *fixed* table ``theta`` of shape ``(n1, n2)`` and two
*sparse* messages ``m1`` (over the first variable) and ``m2`` (over the
second),

    argmax_{(a, b) != (ex1, ex2)}  theta[a, b] + m1[a] + m2[b]

without scanning the ``n1 * n2`` entries.  Labels that a sparse message does
not list have message 0.  The search splits the domain into four cases
(Appendix C-1 of the structural-SVM GDMM paper; section 3.2 "Updating the
active sets" of the MAP GDMM paper):

(i)   neither label listed: walk the whole table in descending order and
      stop at the first entry whose two labels are unlisted;
(ii)  ``b`` listed, ``a`` not: walk column ``b`` downwards to the first
      unlisted ``a``;
(iii) ``a`` listed, ``b`` not: walk row ``a`` downwards to the first
      unlisted ``b``;
(iv)  both listed: evaluate every listed pair.

Every walk also stops as soon as it cannot beat the best value found so far,
so the search is exact (ties and ``-inf`` entries included) and costs about
``nnz1 * nnz2`` plus a handful of entries.

Sorted orders
-------------
The orders are built once per distinct table of a pool and shared by every
factor that uses the table (:func:`build_sorted_orders`,
:func:`sorted_orders_for_graph`).  They are compact int32 arrays: table ``t``
with shape ``(n1, n2)`` owns ``order_data[order_offsets[t]:order_offsets[t+1]]``
of length ``3 * n1 * n2``, laid out as

* ``[0, n)``: flat indices ``a * n2 + b`` of the whole table, descending;
* ``[n, 2n)``: for each row ``a``, at ``n + a * n2``, the ``n2`` columns
  sorted by ``theta[a, :]`` descending;
* ``[2n, 3n)``: for each column ``b``, at ``2n + b * n1``, the ``n1`` rows
  sorted by ``theta[:, b]`` descending.

Ties keep index order; ``-inf`` entries come last.

Calling from numba
------------------
Numba code imports the kernels from ``structlearn.oracles._pair_kernels``::

    from structlearn.oracles._pair_kernels import static_pair_argmax, table_orders

    order_all, order_rows, order_cols = table_orders(order_data, order_offsets, t, n1, n2)
    best, a, b, n_visited = static_pair_argmax(
        table, n1, n2, order_all, order_rows, order_cols,
        idx1, val1, nnz1, idx2, val2, nnz2, ex1, ex2, workspace)

Arguments:

``table`` : float64 (n1 * n2,)
    Flat C-order table (``graph.table_data[graph.table_offsets[t]:...]``).
``n1, n2`` : int
    State counts of the factor's first and second variable.
``order_all, order_rows, order_cols`` : int32 (n1 * n2,) each
    The three orders of the table (above; :func:`table_orders` slices them).
``idx1, val1, nnz1`` : int64 (>= nnz1,), float64 (>= nnz1,), int
    Sparse message of the first variable: labels ``idx1[:nnz1]`` (distinct)
    carry values ``val1[:nnz1]``; every other label has message 0.  The
    arrays may be longer buffers; only the first ``nnz1`` entries are read.
    A label may be listed with value 0 (it is then searched as case iv).
``idx2, val2, nnz2`` : the same for the second variable.
``ex1, ex2`` : int
    Excluded labeling (a ground truth, or an already active entry); pass
    ``-1, -1`` for none.
``workspace`` : tuple from :func:`make_pair_workspace` (``max_n1 >= n1``,
    ``max_n2 >= n2``).  One workspace serves any number of calls in
    sequence (the kernel leaves it as it found it); threads need their own.

To exclude several pairs (a factor's whole active set in MAP GDMM, eq. 8)
call ``static_pair_argmax_excluding`` with the same arguments except that
``ex1, ex2`` become ``excl_a, excl_b, n_excl`` (int64 arrays of excluded
pairs, checked by a linear scan of each candidate: keep the list short).
The node side (eq. 7) has ``static_vector_argmax(values, order, idx, val,
nnz, excl, n_excl, pos) -> (best, y, n_visited)`` over the per-variable
orders of :func:`unary_orders` (``pos`` may be ``workspace[0]``).

Returns ``(best, a, b, n_visited)``: the maximum value (float), its labels
(ints) and the number of table entries read (all four cases together).
When no admissible entry is above ``-inf`` (e.g. a 1 x 1 table whose only
entry is excluded, or only ``-inf`` entries remain) it returns
``(-inf, -1, -1, n_visited)``.  After the call ``workspace[2]`` holds the
entries visited in cases (i), (ii), (iii) and (iv).  Ties go to the case
searched first (iv, ii, iii, i), then to the earlier entry of that walk.
Values must not be NaN; messages must be finite or ``-inf``.
"""

from __future__ import annotations

import numpy as np

from ._pair_kernels import (
    dense_pair_argmax,
    fill_pool_orders,
    fill_segment_orders,
    static_pair_argmax,
    static_pair_argmax_excluding,
    static_vector_argmax,
    table_orders,
)

__all__ = [
    "build_sorted_orders",
    "sorted_orders_for_graph",
    "make_pair_workspace",
    "pair_argmax",
    "dense_pair_argmax",
    "static_pair_argmax",
    "static_pair_argmax_excluding",
    "static_vector_argmax",
    "table_orders",
    "unary_orders",
]

_INT32_MAX = np.iinfo(np.int32).max


def make_pair_workspace(max_n1, max_n2=None):
    """Scratch arrays for the pairwise search kernels (static and indicator).

    Parameters
    ----------
    max_n1, max_n2 : int
        Largest state count of the first and second variable of the factors
        the workspace will serve (``max_n2`` defaults to ``max_n1``).

    Returns
    -------
    workspace : tuple of 11 arrays
        ``(pos1, pos2, stats, eidx1, eval1, eidx2, eval2, fr_key, fr_slot,
        stack, cand2)``: ``pos1`` int64 (max_n1,) and
        ``pos2`` int64 (max_n2,) filled with -1 (restored by every call);
        ``stats`` int64 (4,) receives the entries visited per case (i, ii,
        iii, iv) of the last call; the rest is scratch for the search
        kernels (effective message lists of sizes max_n + 1, the static
        tables' traversal frontier, the indicator oracle's row-heap walk
        stack and its case-(iv) candidate list).
    """
    if max_n2 is None:
        max_n2 = max_n1
    for name, v in (("max_n1", max_n1), ("max_n2", max_n2)):
        if int(v) != v or v < 0:
            raise ValueError(f"{name} must be a non-negative integer, got {v!r}")
    max_n1 = int(max_n1)
    max_n2 = int(max_n2)
    return (
        np.full(max_n1, -1, dtype=np.int64),
        np.full(max_n2, -1, dtype=np.int64),
        np.zeros(4, dtype=np.int64),
        np.empty(max_n1 + 1, dtype=np.int64),
        np.empty(max_n1 + 1, dtype=np.float64),
        np.empty(max_n2 + 1, dtype=np.int64),
        np.empty(max_n2 + 1, dtype=np.float64),
        np.empty(64, dtype=np.float64),
        np.empty(64, dtype=np.int64),
        # the depth-first walk of the row heap holds at most one pending
        # sibling per level plus two children
        np.empty(max(64, max_n1.bit_length() + 2), dtype=np.int64),
        np.empty(max_n2 + 1, dtype=np.int64),
    )


def build_sorted_orders(tables, shapes=None):
    """Sorted orders of a pool of pairwise tables.

    Parameters
    ----------
    tables : sequence of 2-D arrays, or (table_data, table_offsets)
        Either the tables themselves (each of shape ``(n1, n2)``), or a flat
        pool ``(table_data, table_offsets)`` together with ``shapes``.
    shapes : int array of shape (n_tables, 2), optional
        Shapes of the flat pool's tables; a row ``(0, 0)`` skips that table
        (e.g. a table of a factor of order > 2).

    Returns
    -------
    order_offsets : int64 array of shape (n_tables + 1,)
    order_data : int32 array of shape (order_offsets[-1],)
        See the module docstring for the layout.
    shapes : int64 array of shape (n_tables, 2)
    """
    if shapes is None:
        arrs = [np.asarray(t, dtype=np.float64) for t in tables]
        for k, t in enumerate(arrs):
            if t.ndim != 2:
                raise ValueError(f"tables[{k}] must be 2-D, got shape {t.shape}")
        shapes = np.array([t.shape for t in arrs], dtype=np.int64).reshape(-1, 2)
        sizes = shapes[:, 0] * shapes[:, 1]
        table_offsets = np.zeros(len(arrs) + 1, dtype=np.int64)
        np.cumsum(sizes, out=table_offsets[1:])
        table_data = (
            np.concatenate([t.ravel() for t in arrs]) if arrs else np.zeros(0, dtype=np.float64)
        )
    else:
        table_data, table_offsets = tables
        table_data = np.ascontiguousarray(table_data, dtype=np.float64)
        table_offsets = np.asarray(table_offsets, dtype=np.int64)
        shapes = np.asarray(shapes, dtype=np.int64).reshape(-1, 2)
        if shapes.shape[0] != table_offsets.shape[0] - 1:
            raise ValueError(
                f"shapes has {shapes.shape[0]} rows but the pool has "
                f"{table_offsets.shape[0] - 1} tables"
            )
        sizes = shapes[:, 0] * shapes[:, 1]
        have = np.diff(table_offsets)
        bad = np.nonzero((sizes != 0) & (sizes != have))[0]
        if bad.size:
            t = int(bad[0])
            raise ValueError(
                f"shapes[{t}] = {tuple(shapes[t])} does not match table {t} of {have[t]} entries"
            )
    if np.isnan(table_data).any():
        raise ValueError("tables contain NaN")
    if (shapes < 0).any():
        raise ValueError("shapes must be non-negative")
    if sizes.size and int(sizes.max()) > _INT32_MAX:
        raise ValueError("a table has more than 2**31 - 1 entries")
    order_offsets = np.zeros(shapes.shape[0] + 1, dtype=np.int64)
    np.cumsum(3 * sizes, out=order_offsets[1:])
    order_data = np.empty(int(order_offsets[-1]), dtype=np.int32)
    fill_pool_orders(table_data, table_offsets, shapes, order_offsets, order_data)
    return order_offsets, order_data, shapes


def sorted_orders_for_graph(graph):
    """Sorted orders of every pool table of a :class:`FactorGraph` used by a pairwise factor.

    Parameters
    ----------
    graph : FactorGraph

    Returns
    -------
    order_offsets, order_data, shapes
        As :func:`build_sorted_orders`; tables used only by factors of order
        other than 2 (or by no factor) get shape ``(0, 0)`` and no orders.
    """
    n_tables = graph.n_tables
    shapes = np.zeros((n_tables, 2), dtype=np.int64)
    orders = graph.factor_orders
    pair = np.nonzero(orders == 2)[0]
    if pair.size:
        starts = graph.scope_indptr[pair]
        shapes[graph.table_ids[pair], 0] = graph.n_states[graph.scope_vars[starts]]
        shapes[graph.table_ids[pair], 1] = graph.n_states[graph.scope_vars[starts + 1]]
    return build_sorted_orders((graph.table_data, graph.table_offsets), shapes)


def unary_orders(graph):
    """Descending order of each variable's unary scores (for eq. 7 of MAP GDMM).

    Parameters
    ----------
    graph : FactorGraph

    Returns
    -------
    orders : int32 array of shape (graph.unary.shape[0],)
        ``orders[unary_offsets[i]:unary_offsets[i+1]]`` lists the labels of
        variable ``i`` by decreasing unary score (stable; -inf last); pass
        that slice as ``order`` to ``static_vector_argmax``.
    """
    out = np.empty(graph.unary.shape[0], dtype=np.int32)
    fill_segment_orders(graph.unary, graph.unary_offsets, out)
    return out


def _sparse_message(idx, val, n, name):
    if idx is None:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
    idx = np.asarray(idx)
    if idx.size == 0:
        idx = idx.astype(np.int64)
    if not np.issubdtype(idx.dtype, np.integer) or idx.ndim != 1:
        raise TypeError(f"{name} labels must be a 1-D integer array")
    idx = idx.astype(np.int64)
    val = np.asarray(val, dtype=np.float64)
    if val.shape != idx.shape:
        raise ValueError(f"{name} labels and values differ in shape: {idx.shape} vs {val.shape}")
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise ValueError(f"{name} labels must lie in [0, {n})")
    if np.unique(idx).size != idx.size:
        raise ValueError(f"{name} labels must be distinct")
    if np.isnan(val).any() or np.isposinf(val).any():
        raise ValueError(f"{name} values must be finite or -inf")
    return idx, val


def pair_argmax(table, idx1=None, val1=None, idx2=None, val2=None, exclude=None, orders=None):
    """Checked Python entry to the four-case search (for tests and scripts).

    Parameters
    ----------
    table : array of shape (n1, n2)
    idx1, val1 : arrays of shape (nnz1,), optional
        Sparse message of the first variable (unlisted labels: 0).
    idx2, val2 : arrays of shape (nnz2,), optional
        Sparse message of the second variable.
    exclude : pair of int, optional
        Labeling left out of the search.
    orders : tuple (order_all, order_rows, order_cols), optional
        Precomputed orders (built here when absent).

    Returns
    -------
    best : float
    a, b : int
        Maximizer (``-1, -1`` when every admissible entry is ``-inf``).
    n_visited : int
    """
    table = np.ascontiguousarray(table, dtype=np.float64)
    if table.ndim != 2:
        raise ValueError(f"table must be 2-D, got shape {table.shape}")
    n1, n2 = table.shape
    idx1, val1 = _sparse_message(idx1, val1, n1, "message 1")
    idx2, val2 = _sparse_message(idx2, val2, n2, "message 2")
    if orders is None:
        offs, data, _ = build_sorted_orders([table])
        orders = table_orders(data, offs, 0, n1, n2)
    ex1, ex2 = (-1, -1) if exclude is None else (int(exclude[0]), int(exclude[1]))
    ws = make_pair_workspace(n1, n2)
    best, a, b, nv = static_pair_argmax(
        table.ravel(), n1, n2, orders[0], orders[1], orders[2],
        idx1, val1, idx1.shape[0], idx2, val2, idx2.shape[0], ex1, ex2, ws,
    )
    return float(best), int(a), int(b), int(nv)
