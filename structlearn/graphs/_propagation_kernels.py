"""Numba kernel for forbidden-label propagation (no validation here)."""

import numba as nb
import numpy as np


@nb.njit(cache=True)
def propagate_forbidden(n_states, unary_offsets, scope_indptr, scope_vars, table_ids,
                        table_offsets, table_data, var_indptr, var_factors, hard, alive):
    """Generalized arc consistency on the ``-inf`` entries of the factor tables.

    A label stays alive while every factor on its variable has a finite entry
    that agrees with it and uses only alive labels of the other variables.
    Factors whose table has no ``-inf`` entry (``hard[f] == 0``) never remove
    a label and are not scanned.  A work list holds the factors to (re)scan:
    all hard ones at first, then the hard factors of every variable that
    lost a label.

    Parameters
    ----------
    n_states, unary_offsets, scope_indptr, scope_vars, table_ids, table_offsets, table_data
        The factor graph's arrays.
    var_indptr, var_factors : int64 arrays
        Factors of each variable (CSR).
    hard : uint8 (n_factors,)
        1 where the factor's table holds a ``-inf`` entry.
    alive : bool (n_unary,)
        In: the labels with a finite unary score.  Out: the labels that
        survive propagation.

    Returns
    -------
    dead_var : int
        A variable left without any alive label (the graph has no finite
        labeling), or -1.
    """
    n_vars = n_states.shape[0]
    for v in range(n_vars):
        any_alive = False
        for s in range(unary_offsets[v], unary_offsets[v + 1]):
            any_alive = any_alive or alive[s]
        if not any_alive:
            return v
    n_factors = table_ids.shape[0]
    queued = np.zeros(n_factors, dtype=np.uint8)
    queue = np.empty(n_factors, dtype=np.int64)
    head = 0
    size = 0  # circular work list of at most n_factors entries
    for f in range(n_factors):
        if hard[f]:
            queue[size] = f
            size += 1
            queued[f] = 1
    supported = np.zeros(alive.shape[0], dtype=np.uint8)
    max_order = 0
    for f in range(n_factors):
        max_order = max(max_order, scope_indptr[f + 1] - scope_indptr[f])
    digits = np.zeros(max_order, dtype=np.int64)
    while size > 0:
        f = queue[head]
        head = (head + 1) % n_factors
        size -= 1
        queued[f] = 0
        lo = scope_indptr[f]
        order = scope_indptr[f + 1] - lo
        for p in range(order):
            v = scope_vars[lo + p]
            for s in range(unary_offsets[v], unary_offsets[v + 1]):
                supported[s] = 0
            digits[p] = 0
        base = table_offsets[table_ids[f]]
        n_entries = table_offsets[table_ids[f] + 1] - base
        for e in range(n_entries):
            if table_data[base + e] != -np.inf:
                ok = True
                for p in range(order):
                    if not alive[unary_offsets[scope_vars[lo + p]] + digits[p]]:
                        ok = False
                        break
                if ok:
                    for p in range(order):
                        supported[unary_offsets[scope_vars[lo + p]] + digits[p]] = 1
            # next entry: the last variable changes fastest
            p = order - 1
            while p >= 0:
                digits[p] += 1
                if digits[p] < n_states[scope_vars[lo + p]]:
                    break
                digits[p] = 0
                p -= 1
        for p in range(order):
            v = scope_vars[lo + p]
            lost = False
            any_alive = False
            for s in range(unary_offsets[v], unary_offsets[v + 1]):
                if alive[s] and not supported[s]:
                    alive[s] = False
                    lost = True
                any_alive = any_alive or alive[s]
            if not any_alive:
                return v
            if lost:
                for k in range(var_indptr[v], var_indptr[v + 1]):
                    g = var_factors[k]
                    if hard[g] and not queued[g] and g != f:
                        queue[(head + size) % n_factors] = g
                        size += 1
                        queued[g] = 1
    return -1
