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


@nb.njit(cache=True, no_cpython_wrapper=True)
def _dominates(v, b, a, n_states, scope_indptr, scope_vars, table_ids, table_offsets,
               table_data, var_indptr, var_factors, budget):
    """Whether every table entry of the factors on ``v`` with ``x_v = b`` is
    >= the entry with ``x_v = a`` and the same other labels.

    Returns ``(dominates, entries compared)``; gives up (False) once
    ``budget`` entries were compared.
    """
    work = 0
    for j in range(var_indptr[v], var_indptr[v + 1]):
        f = var_factors[j]
        hi = scope_indptr[f + 1]
        # tables are row-major over the scope: v's stride is the product of
        # the domain sizes of the variables after it
        stride = 1
        q = hi - 1
        while scope_vars[q] != v:
            stride *= n_states[scope_vars[q]]
            q -= 1
        block = stride * n_states[v]
        base = table_offsets[table_ids[f]]
        size = table_offsets[table_ids[f] + 1] - base
        for outer in range(base, base + size, block):
            ea = outer + a * stride
            eb = outer + b * stride
            for inner in range(stride):
                if table_data[ea + inner] > table_data[eb + inner]:
                    return False, work + inner + 1
            work += stride
            if work > budget:
                return False, work
    return True, work


@nb.njit(cache=True)
def prune_dominated(n_states, unary, unary_offsets, scope_indptr, scope_vars, table_ids,
                    table_offsets, table_data, var_indptr, var_factors, alive, max_work):
    """Remove labels dominated by another alive label of their variable.

    Label ``a`` of ``v`` is dominated by ``b`` when ``unary[b] >= unary[a]``
    and every factor on ``v`` scores ``x_v = b`` at least as high as
    ``x_v = a`` whatever the other labels: relabelling ``a`` to ``b`` never
    lowers a labeling's score, so some maximum-score labeling avoids ``a``.
    Only alive labels dominate, so at least one maximal label of every
    variable stays.

    Parameters
    ----------
    n_states, unary, unary_offsets, scope_indptr, scope_vars, table_ids,
    table_offsets, table_data
        The factor graph's arrays.
    var_indptr, var_factors : int64 arrays
        Factors of each variable (CSR).
    alive : bool (n_unary,)
        In: the labels to consider.  Out: dominated ones set to False.
    max_work : int
        Stop after comparing about this many table entries (what was pruned
        until then stays pruned).

    Returns
    -------
    n_pruned : int
    """
    n_pruned = 0
    work = 0
    for v in range(n_states.shape[0]):
        lo = unary_offsets[v]
        k = n_states[v]
        for a in range(k):
            if not alive[lo + a]:
                continue
            for b in range(k):
                if b == a or not alive[lo + b] or unary[lo + b] < unary[lo + a]:
                    continue
                dom, w = _dominates(v, b, a, n_states, scope_indptr, scope_vars, table_ids,
                                    table_offsets, table_data, var_indptr, var_factors,
                                    max_work - work)
                work += w + 1
                if dom:
                    alive[lo + a] = False
                    n_pruned += 1
                    break
                if work > max_work:
                    return n_pruned
    return n_pruned
