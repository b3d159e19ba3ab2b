"""Numba kernels over the flat arrays of a FactorGraph (no validation here)."""

from .._borrowing import borrowing_kernel


@borrowing_kernel
def factor_entry_index(scope_indptr, scope_vars, n_states, f, labels_row):
    """Flat C-order index into factor ``f``'s table for one labeling."""
    idx = 0
    for p in range(scope_indptr[f], scope_indptr[f + 1]):
        v = scope_vars[p]
        idx = idx * n_states[v] + labels_row[v]
    return idx


@borrowing_kernel(python_callable=True)
def score_labelings(
    n_states,
    unary_offsets,
    unary,
    scope_indptr,
    scope_vars,
    table_ids,
    table_offsets,
    table_data,
    labels,
    out,
):
    """out[r] = sum of unary and factor scores of labeling ``labels[r]``.

    labels : int64 (n_labelings, n_vars); out : float64 (n_labelings,)
    """
    n_vars = n_states.shape[0]
    n_factors = scope_indptr.shape[0] - 1
    for r in range(labels.shape[0]):
        row = labels[r]
        s = 0.0
        for i in range(n_vars):
            s += unary[unary_offsets[i] + row[i]]
        for f in range(n_factors):
            idx = factor_entry_index(scope_indptr, scope_vars, n_states, f, row)
            s += table_data[table_offsets[table_ids[f]] + idx]
        out[r] = s
