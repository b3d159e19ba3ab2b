"""Numba kernels for exact inference on chains, factor trees and tiny graphs.

All kernels take the flat arrays of a FactorGraph in the order of
``FactorGraph.arrays()``::

    n_states, unary_offsets, unary, scope_indptr, scope_vars,
    table_ids, table_offsets, table_data

plus a schedule computed by ``structlearn.graphs.structure``. No validation
happens here; outputs go into caller-allocated arrays. Ties are broken
toward the lowest index (label, or flat table entry).
"""

import numba as nb
import numpy as np


# ---------------------------------------------------------------- chains
@nb.njit(cache=True)
def chain_max_product(
    n_states,
    unary_offsets,
    unary,
    scope_indptr,
    scope_vars,
    table_ids,
    table_offsets,
    table_data,
    order,
    link,
    out,
):
    """Viterbi along the paths of a chain graph with per-edge tables.

    Parameters
    ----------
    order : int64 (n_vars,)
        Variables path after path (see ``structure.chain_order``).
    link : int64 (n_vars,)
        Factor joining ``order[k - 1]`` and ``order[k]``, -1 at a path start.
    out : int64 (n_vars,)
        Receives the best label of each variable (indexed by variable).

    Notes
    -----
    The back-pointer of a state is the lowest previous state reaching the
    best value; a path's last variable takes its lowest best state. When no
    finite value exists the labels default to state 0 / back-pointer 0.
    """
    n = order.shape[0]
    if n == 0:
        return
    # delta values and back-pointers, stored per variable in unary layout
    delta = np.empty(unary.shape[0])
    back = np.zeros(unary.shape[0], dtype=np.int64)
    for k in range(n):
        v = order[k]
        kv = n_states[v]
        ov = unary_offsets[v]
        f = link[k]
        if f < 0:
            for b in range(kv):
                delta[ov + b] = unary[ov + b]
                back[ov + b] = 0
        else:
            u = order[k - 1]
            ku = n_states[u]
            ou = unary_offsets[u]
            # flat index = x_u * su + x_v * sv
            if scope_vars[scope_indptr[f]] == u:
                su = kv
                sv = 1
            else:
                su = 1
                sv = ku
            base = table_offsets[table_ids[f]]
            for b in range(kv):
                delta[ov + b] = -np.inf
                back[ov + b] = 0
            for a in range(ku):
                da = delta[ou + a]
                if da == -np.inf:
                    continue
                row = base + a * su
                for b in range(kv):
                    cand = da + table_data[row + b * sv]
                    if cand > delta[ov + b]:
                        delta[ov + b] = cand
                        back[ov + b] = a
            for b in range(kv):
                delta[ov + b] += unary[ov + b]
        if k == n - 1 or link[k + 1] < 0:
            # end of a path: pick the best last state, then trace back
            arg = 0
            val = delta[ov]
            for b in range(1, kv):
                if delta[ov + b] > val:
                    val = delta[ov + b]
                    arg = b
            j = k
            out[order[j]] = arg
            while link[j] >= 0:
                arg = back[unary_offsets[order[j]] + arg]
                j -= 1
                out[order[j]] = arg


# ----------------------------------------------------------------- trees
@nb.njit(cache=True)
def _strides(n_states, scope_indptr, scope_vars, f, strides):
    """C-order strides of factor f's table; returns the table size."""
    size = 1
    for q in range(scope_indptr[f + 1] - 1, scope_indptr[f] - 1, -1):
        strides[q - scope_indptr[f]] = size
        size *= n_states[scope_vars[q]]
    return size


@nb.njit(cache=True)
def tree_max_product(graph, schedule, out):
    """Max-product with back-tracking on a factor forest (factors of any order).

    Parameters
    ----------
    graph : tuple
        The flat arrays of :meth:`structlearn.graphs.FactorGraph.arrays`
        (``n_states, unary_offsets, unary, scope_indptr, scope_vars,
        table_ids, table_offsets, table_data``).
    schedule : tuple
        ``(var_order, var_parent, factor_order, factor_parent)``, int64: the
        breadth-first schedule from ``structure.bfs_schedule`` (a forest).
    out : int64 (n_vars,)
        Receives the best labeling.

    Notes
    -----
    Each factor sends one max-marginal to its parent variable and remembers,
    for every parent state, the lowest flat table entry attaining it; the
    downward pass reads the children's labels off that entry. Roots take
    their lowest best state. Labels default to 0 where no finite value
    exists.
    """
    (n_states, unary_offsets, unary, scope_indptr, scope_vars, table_ids, table_offsets,
     table_data) = graph
    var_order, var_parent, factor_order, factor_parent = schedule
    n_factors = factor_order.shape[0]
    max_order = 0
    for f in range(scope_indptr.shape[0] - 1):
        o = scope_indptr[f + 1] - scope_indptr[f]
        if o > max_order:
            max_order = o
    belief = unary.copy()
    # back-pointers: one flat entry per (factor, parent state)
    bp_off = np.zeros(scope_indptr.shape[0], dtype=np.int64)
    for f in range(scope_indptr.shape[0] - 1):
        p = factor_parent[f]
        bp_off[f + 1] = bp_off[f] + (n_states[p] if p >= 0 else 0)
    bp = np.full(bp_off[-1], -1, dtype=np.int64)
    strides = np.empty(max_order, dtype=np.int64)
    digits = np.zeros(max_order, dtype=np.int64)
    best = np.empty(unary.shape[0] if unary.shape[0] > 0 else 1)
    # upward pass, leaves first
    for i in range(n_factors - 1, -1, -1):
        f = factor_order[i]
        p = factor_parent[f]
        lo = scope_indptr[f]
        order = scope_indptr[f + 1] - lo
        size = _strides(n_states, scope_indptr, scope_vars, f, strides)
        kp = n_states[p]
        for x in range(kp):
            best[x] = -np.inf
        ppos = 0
        for q in range(order):
            digits[q] = 0
            if scope_vars[lo + q] == p:
                ppos = q
        base = table_offsets[table_ids[f]]
        for e in range(size):
            val = table_data[base + e]
            if val != -np.inf:
                for q in range(order):
                    if q != ppos:
                        v = scope_vars[lo + q]
                        val += belief[unary_offsets[v] + digits[q]]
                xp = digits[ppos]
                if val > best[xp]:
                    best[xp] = val
                    bp[bp_off[f] + xp] = e
            # odometer, last variable fastest
            q = order - 1
            while q >= 0:
                digits[q] += 1
                if digits[q] < n_states[scope_vars[lo + q]]:
                    break
                digits[q] = 0
                q -= 1
        op = unary_offsets[p]
        for x in range(kp):
            belief[op + x] += best[x]
    # roots
    for k in range(var_order.shape[0]):
        v = var_order[k]
        if var_parent[v] >= 0:
            continue
        ov = unary_offsets[v]
        arg = 0
        val = belief[ov]
        for b in range(1, n_states[v]):
            if belief[ov + b] > val:
                val = belief[ov + b]
                arg = b
        out[v] = arg
    # downward pass
    for i in range(n_factors):
        f = factor_order[i]
        p = factor_parent[f]
        lo = scope_indptr[f]
        order = scope_indptr[f + 1] - lo
        e = bp[bp_off[f] + out[p]]
        _strides(n_states, scope_indptr, scope_vars, f, strides)
        for q in range(order):
            v = scope_vars[lo + q]
            if v == p:
                continue
            out[v] = 0 if e < 0 else (e // strides[q]) % n_states[v]


@nb.njit(cache=True)
def _lse_add(m, s, val):
    """Online log-sum-exp: fold ``val`` into the running (max m, scaled sum s)."""
    if val == -np.inf:
        return m, s
    if val > m:
        return val, s * np.exp(m - val) + 1.0
    return m, s + np.exp(val - m)


@nb.njit(cache=True)
def tree_sum_product(graph, schedule, node_marg, factor_marg_offsets, factor_marg):
    """Sum-product (log domain) on a factor forest: log Z and exact marginals.

    Parameters
    ----------
    graph, schedule : tuple
        As in :func:`tree_max_product`.
    node_marg : float64 (n_states.sum(),)
        Receives the node marginals in the layout of ``unary``.
    factor_marg_offsets : int64 (n_factors + 1,)
        Start of each factor's marginal table in ``factor_marg``.
    factor_marg : float64 (factor_marg_offsets[-1],)
        Receives each factor's marginal table (C order over its scope).

    Returns
    -------
    log_z : float
        ``-inf`` when every labeling is forbidden; marginals are then zero.

    Notes
    -----
    Upward messages are normalized to a maximum of 0 (their maxima add up
    into log Z) and marginals are normalized locally, so scores of any
    magnitude (e.g. +-1e4) stay accurate.
    """
    (n_states, unary_offsets, unary, scope_indptr, scope_vars, table_ids, table_offsets,
     table_data) = graph
    var_order, var_parent, factor_order, factor_parent = schedule
    n_factors = factor_order.shape[0]
    n_tot = unary.shape[0]
    max_order = 0
    for f in range(scope_indptr.shape[0] - 1):
        o = scope_indptr[f + 1] - scope_indptr[f]
        if o > max_order:
            max_order = o
    up = unary.copy()  # unary + messages from child factors
    down = np.zeros(n_tot)  # message from the parent factor
    msg_off = np.zeros(scope_indptr.shape[0], dtype=np.int64)
    for f in range(scope_indptr.shape[0] - 1):
        p = factor_parent[f]
        msg_off[f + 1] = msg_off[f] + (n_states[p] if p >= 0 else 0)
    msg = np.zeros(msg_off[-1])
    strides = np.empty(max_order, dtype=np.int64)
    digits = np.zeros(max_order, dtype=np.int64)
    kmax = 1
    for v in range(n_states.shape[0]):
        if n_states[v] > kmax:
            kmax = n_states[v]
    mx = np.empty(kmax)
    sm = np.empty(kmax)
    cav = np.empty(kmax)
    log_z = 0.0
    # ------------------------------------------------------------- upward
    for i in range(n_factors - 1, -1, -1):
        f = factor_order[i]
        p = factor_parent[f]
        lo = scope_indptr[f]
        order = scope_indptr[f + 1] - lo
        size = _strides(n_states, scope_indptr, scope_vars, f, strides)
        kp = n_states[p]
        for x in range(kp):
            mx[x] = -np.inf
            sm[x] = 0.0
        ppos = 0
        for q in range(order):
            digits[q] = 0
            if scope_vars[lo + q] == p:
                ppos = q
        base = table_offsets[table_ids[f]]
        for e in range(size):
            val = table_data[base + e]
            if val != -np.inf:
                for q in range(order):
                    if q != ppos:
                        val += up[unary_offsets[scope_vars[lo + q]] + digits[q]]
                xp = digits[ppos]
                mx[xp], sm[xp] = _lse_add(mx[xp], sm[xp], val)
            q = order - 1
            while q >= 0:
                digits[q] += 1
                if digits[q] < n_states[scope_vars[lo + q]]:
                    break
                digits[q] = 0
                q -= 1
        c = -np.inf
        for x in range(kp):
            if mx[x] != -np.inf:
                mx[x] = mx[x] + np.log(sm[x])
                if mx[x] > c:
                    c = mx[x]
        if c == -np.inf:
            return -np.inf
        log_z += c
        op = unary_offsets[p]
        for x in range(kp):
            msg[msg_off[f] + x] = mx[x] - c
            up[op + x] += mx[x] - c
    for k in range(var_order.shape[0]):
        v = var_order[k]
        if var_parent[v] >= 0:
            continue
        ov = unary_offsets[v]
        m = -np.inf
        s = 0.0
        for b in range(n_states[v]):
            m, s = _lse_add(m, s, up[ov + b])
        if m == -np.inf:
            return -np.inf
        log_z += m + np.log(s)
    # ----------------------------------------------------------- downward
    for i in range(n_factors):
        f = factor_order[i]
        p = factor_parent[f]
        lo = scope_indptr[f]
        order = scope_indptr[f + 1] - lo
        size = _strides(n_states, scope_indptr, scope_vars, f, strides)
        op = unary_offsets[p]
        kp = n_states[p]
        # cavity of the parent: everything but this factor's message. Where
        # that message is -inf every entry of the factor with this parent
        # state has probability 0 whatever the cavity, so -inf is used there.
        for x in range(kp):
            mf = msg[msg_off[f] + x]
            cav[x] = up[op + x] - mf + down[op + x] if mf != -np.inf else -np.inf
        ppos = 0
        for q in range(order):
            if scope_vars[lo + q] == p:
                ppos = q
        base = table_offsets[table_ids[f]]
        fo = factor_marg_offsets[f]
        # factor marginal (unnormalized log values first)
        for q in range(order):
            digits[q] = 0
        m = -np.inf
        s = 0.0
        for e in range(size):
            val = table_data[base + e]
            if val != -np.inf:
                for q in range(order):
                    v = scope_vars[lo + q]
                    if q == ppos:
                        val += cav[digits[q]]
                    else:
                        val += up[unary_offsets[v] + digits[q]]
            factor_marg[fo + e] = val
            m, s = _lse_add(m, s, val)
            q = order - 1
            while q >= 0:
                digits[q] += 1
                if digits[q] < n_states[scope_vars[lo + q]]:
                    break
                digits[q] = 0
                q -= 1
        lzf = m + np.log(s)
        for e in range(size):
            factor_marg[fo + e] = np.exp(factor_marg[fo + e] - lzf)
        # messages to the children, each excluding the child's own belief
        for c in range(order):
            if c == ppos:
                continue
            vc = scope_vars[lo + c]
            oc = unary_offsets[vc]
            kc = n_states[vc]
            for x in range(kc):
                mx[x] = -np.inf
                sm[x] = 0.0
            for q in range(order):
                digits[q] = 0
            for e in range(size):
                val = table_data[base + e]
                if val != -np.inf:
                    for q in range(order):
                        if q == c:
                            continue
                        if q == ppos:
                            val += cav[digits[q]]
                        else:
                            val += up[unary_offsets[scope_vars[lo + q]] + digits[q]]
                    xc = digits[c]
                    mx[xc], sm[xc] = _lse_add(mx[xc], sm[xc], val)
                q = order - 1
                while q >= 0:
                    digits[q] += 1
                    if digits[q] < n_states[scope_vars[lo + q]]:
                        break
                    digits[q] = 0
                    q -= 1
            mm = -np.inf
            for x in range(kc):
                if mx[x] != -np.inf:
                    mx[x] = mx[x] + np.log(sm[x])
                    if mx[x] > mm:
                        mm = mx[x]
            for x in range(kc):
                down[oc + x] = mx[x] - mm if mm != -np.inf else -np.inf
    # ----------------------------------------------------- node marginals
    for v in range(n_states.shape[0]):
        ov = unary_offsets[v]
        m = -np.inf
        s = 0.0
        for b in range(n_states[v]):
            m, s = _lse_add(m, s, up[ov + b] + down[ov + b])
        for b in range(n_states[v]):
            val = up[ov + b] + down[ov + b] - m - np.log(s)
            node_marg[ov + b] = np.exp(val) if val < 0.0 else 1.0
    return log_z


# ----------------------------------------------------------- brute force
@nb.njit(cache=True)
def brute_force_max(
    n_states,
    unary_offsets,
    unary,
    scope_indptr,
    scope_vars,
    table_ids,
    table_offsets,
    table_data,
    out,
):
    """Exhaustive search over all labelings (last variable fastest).

    Parameters
    ----------
    out : int64 (n_vars,)
        Receives the first labeling (in lexicographic order) with the
        highest score; all zeros when every labeling scores ``-inf``.

    Returns
    -------
    best : float
        The highest score.
    """
    n = n_states.shape[0]
    n_factors = scope_indptr.shape[0] - 1
    lab = np.zeros(n, dtype=np.int64)
    for i in range(n):
        out[i] = 0
    best = -np.inf
    while True:
        s = 0.0
        for i in range(n):
            s += unary[unary_offsets[i] + lab[i]]
        if s != -np.inf:
            for f in range(n_factors):
                idx = 0
                for q in range(scope_indptr[f], scope_indptr[f + 1]):
                    v = scope_vars[q]
                    idx = idx * n_states[v] + lab[v]
                s += table_data[table_offsets[table_ids[f]] + idx]
        if s > best:
            best = s
            for i in range(n):
                out[i] = lab[i]
        i = n - 1
        while i >= 0:
            lab[i] += 1
            if lab[i] < n_states[i]:
                break
            lab[i] = 0
            i -= 1
        if i < 0:
            break
    return best
