"""Numba kernels of GDMM for MAP inference (Algorithm 1 of the MAP GDMM paper).

Everything here is sparse: node and factor primal variables live on small
active sets, multipliers on short per-edge lists, and messages are assembled
on the fly in a per-edge scratch array (``dmsg``, message-sized, kept at zero
between uses) whose touched labels are listed so they can be reset.  Nothing
is ever allocated or scanned over a pairwise factor's domain: the greedy
selection (eq. 8) and the factor maxima of the certificate use the static
sorted lists and four-case search of :mod:`structlearn.oracles.sorted_tables`.
Factors of order >= 3 fall back to a scan of their (small) tables.

State (all caller-allocated), passed as named tuples: :class:`ActiveSets`
(the paper's x, y and mu, as ``xa_*``, ``ya_*``, ``mu_*`` in the kernels),
:class:`MessageScratch` and the static :class:`GraphIndex`.

Scores are normalized and finite (see :mod:`._lp_common`).
"""

from typing import NamedTuple

import numba as nb
import numpy as np

from ...oracles._pair_kernels import (
    static_pair_argmax,
    static_pair_argmax_excluding,
    static_vector_argmax,
    table_orders,
)

NEG_INF = -np.inf
MU_DROP = 1e-10
# pairwise tables up to this size are scanned: cheaper than the sorted search
DENSE_MAX = 64


class ActiveSets(NamedTuple):
    """Sparse primal variables and multipliers of GDMM.

    Attributes
    ----------
    node_idx, node_val : int64, float64 (n_vars, cap_node)
    node_n : int64 (n_vars,)
        Node active sets ``x_i`` (labels and masses).
    factor_idx, factor_val : int64, float64 (n_factors, cap_factor)
    factor_n : int64 (n_factors,)
        Factor active sets ``y_f`` (flat table indices and masses).
    mult_idx, mult_val : int64, float64 (n_edges, cap_mu)
    mult_n : int64 (n_edges,)
        Multipliers ``mu_e`` per (factor, variable) edge.
    """

    node_idx: np.ndarray
    node_val: np.ndarray
    node_n: np.ndarray
    factor_idx: np.ndarray
    factor_val: np.ndarray
    factor_n: np.ndarray
    mult_idx: np.ndarray
    mult_val: np.ndarray
    mult_n: np.ndarray


class MessageScratch(NamedTuple):
    """Scratch of the sparse messages, kept at zero between uses.

    Attributes
    ----------
    dmsg : float64 (n_msg,)
        Message-sized per-edge values.
    mark : int64 (n_msg,)
        -1, or the position of the entry in its edge's touched list.
    touched : int64 (max_order, K_max)
        Labels touched per factor position.
    n_touched : int64 (max_order,)
    touched_val : float64 (max_order, K_max)
    node_acc : float64 (K_max,)
        Per-label accumulator of a node's messages.
    node_mark, node_list : int64 (K_max,)
        Its touched labels (``node_mark`` -1 when untouched).
    """

    dmsg: np.ndarray
    mark: np.ndarray
    touched: np.ndarray
    n_touched: np.ndarray
    touched_val: np.ndarray
    node_acc: np.ndarray
    node_mark: np.ndarray
    node_list: np.ndarray


class GraphIndex(NamedTuple):
    """Static indices of the graph the kernels search.

    Attributes
    ----------
    var_ptr, var_edges : int64
        CSR of each variable's edges.
    edge_factor : int64 (n_edges,)
    unary_order : int64 (n_unary,)
        Each variable's labels by decreasing unary score.
    order_data, order_offsets : int64
        The sorted orders of the pairwise tables.
    pair_ws : tuple
        The sorted pair oracle's workspace.
    """

    var_ptr: np.ndarray
    var_edges: np.ndarray
    edge_factor: np.ndarray
    unary_order: np.ndarray
    order_data: np.ndarray
    order_offsets: np.ndarray
    pair_ws: tuple


@nb.njit(cache=True)
def proj_simplex(v, n, out):
    """Euclidean projection of v[:n] onto the probability simplex (into out[:n])."""
    # out[:n] <- v[:n] sorted descending (insertion sort: n is an active-set
    # size, and this allocates nothing)
    for j in range(n):
        w = v[j]
        m = j
        while m > 0 and out[m - 1] < w:
            out[m] = out[m - 1]
            m -= 1
        out[m] = w
    css = 0.0
    theta = 0.0
    for j in range(n):
        css += out[j]
        t = (css - 1.0) / (j + 1)
        if out[j] - t > 0:
            theta = t
    for j in range(n):
        w = v[j] - theta
        out[j] = w if w > 0 else 0.0


@nb.njit(cache=True, inline="always")
def _label_at(idx, f, k, scope_indptr, scope_vars, n_states):
    """Label of position k of factor f in flat C-order entry idx."""
    p0 = scope_indptr[f]
    s = scope_indptr[f + 1] - p0
    rem = idx
    for q in range(s - 1, k, -1):
        rem //= n_states[scope_vars[p0 + q]]
    return rem % n_states[scope_vars[p0 + k]]


@nb.njit(cache=True, inline="always")
def _touch(dmsg, mark, touched, n_touched, k, o, label, value):
    """dmsg[o + label] += value, listing label for position k on first touch."""
    c = o + label
    if mark[c] < 0:
        mark[c] = n_touched[k]
        touched[k, n_touched[k]] = label
        n_touched[k] += 1
    dmsg[c] += value


@nb.njit(cache=True, inline="always")
def _accumulate(node_acc, node_mark, node_list, nn, x, value):
    """node_acc[x] += value, listing x on first touch; returns the list length."""
    if node_mark[x] < 0:
        node_mark[x] = nn
        node_list[nn] = x
        nn += 1
    node_acc[x] += value
    return nn


@nb.njit(cache=True, inline="always")
def _keep_positive(idx, val, newv, n):
    """Active set <- its entries of positive new mass newv[:n]; returns the size."""
    w = 0
    for j in range(n):
        if newv[j] > 0.0:
            idx[w] = idx[j]
            val[w] = newv[j]
            w += 1
    return w


@nb.njit(cache=True, inline="always")
def _slot(val, n, cap):
    """Where a new active entry goes: the end while there is room, else the
    entry of least mass."""
    if n < cap:
        return n
    j = 0
    for m in range(1, n):
        if val[m] < val[j]:
            j = m
    return j


@nb.njit(cache=True, inline="always")
def _put(idx, val, n, j, item):
    """Enter item at slot j (from _slot) with zero mass; returns the new size."""
    idx[j] = item
    val[j] = 0.0
    return n + 1 if j == n else n


@nb.njit(cache=True, inline="always")
def _entry_score(prob, f, idx, dmsg):
    """theta_f(idx) - sum_k dmsg[edge k][label k of idx]."""
    n_states, _, _, scope_indptr, scope_vars, table_ids, table_offsets, table_data, \
        edge_offsets = prob
    p0 = scope_indptr[f]
    v = table_data[table_offsets[table_ids[f]] + idx]
    for k in range(scope_indptr[f + 1] - p0):
        v -= dmsg[edge_offsets[p0 + k] + _label_at(idx, f, k, scope_indptr, scope_vars,
                                                   n_states)]
    return v


@nb.njit(cache=True, inline="always")
def _clear(dmsg, mark, touched, n_touched, k, o):
    for j in range(n_touched[k]):
        c = o + touched[k, j]
        dmsg[c] = 0.0
        mark[c] = -1
    n_touched[k] = 0


@nb.njit(cache=True, inline="always")
def _factor_messages(prob, f, rho, wy, wx, active, scratch):
    """dmsg[edge (f,k)] = wy*rho*(M_k y_f) - wx*rho*x_i + mu_e, sparse
    (``scratch.dmsg``, listed in ``scratch.touched``)."""
    xa_idx, xa_val, xa_n, ya_idx, ya_val, ya_n, mu_idx, mu_val, mu_n = active
    dmsg, mark, touched, n_touched = scratch[0], scratch[1], scratch[2], scratch[3]
    n_states, unary_offsets, unary, scope_indptr, scope_vars, _, _, _, edge_offsets = prob
    p0 = scope_indptr[f]
    s = scope_indptr[f + 1] - p0
    for k in range(s):
        e = p0 + k
        o = edge_offsets[e]
        i = scope_vars[e]
        n_touched[k] = 0
        if wy != 0.0:
            for j in range(ya_n[f]):
                lab = _label_at(ya_idx[f, j], f, k, scope_indptr, scope_vars, n_states)
                _touch(dmsg, mark, touched, n_touched, k, o, lab, wy * rho * ya_val[f, j])
        if wx != 0.0:
            for j in range(xa_n[i]):
                _touch(dmsg, mark, touched, n_touched, k, o, xa_idx[i, j], -wx * rho * xa_val[i, j])
        for j in range(mu_n[e]):
            _touch(dmsg, mark, touched, n_touched, k, o, mu_idx[e, j], mu_val[e, j])


@nb.njit(cache=True)
def _dense_argmax(prob, f, dmsg, excl, n_excl, lab):
    """argmax over flat entries not in excl of theta_f - sum_k dmsg[edge k][x_k]
    (scan of the whole table: factors of order >= 3)."""
    n_states, unary_offsets, unary, scope_indptr, scope_vars, table_ids, table_offsets, \
        table_data, edge_offsets = prob
    p0 = scope_indptr[f]
    s = scope_indptr[f + 1] - p0
    base = table_offsets[table_ids[f]]
    size = table_offsets[table_ids[f] + 1] - base
    for k in range(s):
        lab[k] = 0
    best = NEG_INF
    arg = -1
    for idx in range(size):
        skip = False
        for j in range(n_excl):
            if excl[j] == idx:
                skip = True
                break
        if not skip:
            v = table_data[base + idx]
            for k in range(s):
                v -= dmsg[edge_offsets[p0 + k] + lab[k]]
            if v > best:
                best = v
                arg = idx
        k = s - 1
        while k >= 0:
            if lab[k] + 1 < n_states[scope_vars[p0 + k]]:
                lab[k] += 1
                break
            lab[k] = 0
            k -= 1
    return best, arg


@nb.njit(cache=True, inline="always")
def _factor_argmax(prob, f, scratch, exa, exb, excl, n_excl, index, lab):
    """argmax over entries not in ``excl[:n_excl]`` of theta_f - sum_k dmsg(x_k)
    (``exa``, ``exb``: int64 scratch of ``n_excl`` entries; ``lab``: int64
    (max_order,) scratch)."""
    dmsg, touched, n_touched, touched_val = scratch[0], scratch[2], scratch[3], scratch[4]
    order_data, order_offsets, ws = index[4], index[5], index[6]
    n_states, unary_offsets, unary, scope_indptr, scope_vars, table_ids, table_offsets, \
        table_data, edge_offsets = prob
    p0 = scope_indptr[f]
    s = scope_indptr[f + 1] - p0
    if s != 2:
        return _dense_argmax(prob, f, dmsg, excl, n_excl, lab)
    t = table_ids[f]
    base = table_offsets[t]
    n1 = n_states[scope_vars[p0]]
    n2 = n_states[scope_vars[p0 + 1]]
    if n1 * n2 <= DENSE_MAX:
        return _dense_argmax(prob, f, dmsg, excl, n_excl, lab)
    for k in range(2):
        o = edge_offsets[p0 + k]
        for j in range(n_touched[k]):
            touched_val[k, j] = -dmsg[o + touched[k, j]]
    for j in range(n_excl):
        exa[j] = excl[j] // n2
        exb[j] = excl[j] - exa[j] * n2
    oa, orow, ocol = table_orders(order_data, order_offsets, t, n1, n2)
    table = table_data[base:base + n1 * n2]
    if n_excl > 0:
        best, a, b, _ = static_pair_argmax_excluding(
            table, n1, n2, oa, orow, ocol, touched[0], touched_val[0], n_touched[0], touched[1], touched_val[1], n_touched[1],
            exa, exb, n_excl, ws)
    else:
        best, a, b, _ = static_pair_argmax(
            table, n1, n2, oa, orow, ocol, touched[0], touched_val[0], n_touched[0], touched[1], touched_val[1], n_touched[1],
            -1, -1, ws)
    if a < 0:
        return NEG_INF, -1
    return best, a * n2 + b


@nb.njit(cache=True)
def gdmm_iteration(prob, rho, eta, n_pass, index, active, scratch):
    """One outer iteration: ``n_pass`` passes of factor updates (8)+(6) and node
    updates (7)+(4) (the loop over s of Algorithm 1), then the dual step (9).

    Parameters
    ----------
    prob : tuple
        The normalized problem arrays (:mod:`._lp_common`).
    rho, eta : float
    n_pass : int
    index : GraphIndex
    active : ActiveSets
        Updated in place.
    scratch : MessageScratch

    Returns (primal infeasibility ||My - x||^2 over all edges, entries added,
    sum_i N_i ||x_i(new) - x_i(old)||^2, the squared dual residual / rho^2).
    """
    var_ptr, var_edges, edge_factor, uorder, order_data, order_offsets, ws = index
    xa_idx, xa_val, xa_n, ya_idx, ya_val, ya_n, mu_idx, mu_val, mu_n = active
    dmsg, mark, touched, n_touched, touched_val, node_acc, node_mark, node_list = scratch
    n_states, unary_offsets, unary, scope_indptr, scope_vars, table_ids, table_offsets, \
        table_data, edge_offsets = prob
    n_vars = n_states.shape[0]
    n_factors = scope_indptr.shape[0] - 1
    capf = ya_idx.shape[1]
    capn = xa_idx.shape[1]
    capm = mu_idx.shape[1]
    max_s = touched.shape[0]
    lab = np.empty(max_s, dtype=np.int64)
    exa = np.empty(capf, dtype=np.int64)
    exb = np.empty(capf, dtype=np.int64)
    cand = np.empty(capf)
    newv = np.empty(capf)
    cfg = np.empty((capf, max_s), dtype=np.int64)
    added = 0
    exv = np.empty(capn)
    dres = 0.0
    for _ in range(n_pass):
        # ---------------------------------------------------------- factors
        for f in range(n_factors):
            p0 = scope_indptr[f]
            s = scope_indptr[f + 1] - p0
            base = table_offsets[table_ids[f]]
            _factor_messages(prob, f, rho, 1.0, 1.0, active, scratch)
            n = ya_n[f]
            best, arg = _factor_argmax(prob, f, scratch, exa, exb, ya_idx[f], n, index, lab)
            if arg >= 0:
                # a full set gives the entry of least mass up when the new one
                # scores higher (without that the restricted problem stops
                # following the greedy direction and the multipliers drift)
                j = _slot(ya_val[f], n, capf)
                if j == n or best > _entry_score(prob, f, ya_idx[f, j], dmsg):
                    n = _put(ya_idx[f], ya_val[f], n, j, arg)
                    added += 1
            # gradient on the active set and the step constant Q_f
            for j in range(n):
                g = -table_data[base + ya_idx[f, j]]
                for k in range(s):
                    x = _label_at(ya_idx[f, j], f, k, scope_indptr, scope_vars, n_states)
                    cfg[j, k] = x
                    g += dmsg[edge_offsets[p0 + k] + x]
                cand[j] = g
            qmax = 1.0
            for j in range(n):
                row = 0.0
                for l in range(n):
                    for k in range(s):
                        if cfg[j, k] == cfg[l, k]:
                            row += 1.0
                if row > qmax:
                    qmax = row
            q = rho * qmax
            for j in range(n):
                cand[j] = ya_val[f, j] - cand[j] / q
            proj_simplex(cand, n, newv)
            ya_n[f] = _keep_positive(ya_idx[f], ya_val[f], newv, n)
            for k in range(s):
                _clear(dmsg, mark, touched, n_touched, k, edge_offsets[p0 + k])
        # ------------------------------------------------------------ nodes
        for i in range(n_vars):
            q0 = var_ptr[i]
            q1 = var_ptr[i + 1]
            deg = q1 - q0
            if deg == 0:
                continue
            u = unary_offsets[i]
            k_i = n_states[i]
            nn = 0
            # node_acc[label] = sum_f [rho * M y_f + mu_f](label)
            for q in range(q0, q1):
                e = var_edges[q]
                f = edge_factor[e]
                k = e - scope_indptr[f]
                for j in range(ya_n[f]):
                    x = _label_at(ya_idx[f, j], f, k, scope_indptr, scope_vars, n_states)
                    nn = _accumulate(node_acc, node_mark, node_list, nn, x, rho * ya_val[f, j])
                for j in range(mu_n[e]):
                    nn = _accumulate(node_acc, node_mark, node_list, nn, mu_idx[e, j], mu_val[e, j])
            n = xa_n[i]
            if n < k_i:
                vals = touched_val[0]
                for j in range(nn):
                    vals[j] = node_acc[node_list[j]]
                # static_vector_argmax needs pos scratch at -1: ws[0] (restored by the call)
                best, y, _ = static_vector_argmax(unary[u:u + k_i], uorder[u:u + k_i], node_list,
                                                  vals, nn, xa_idx[i], n, ws[0])
                if y >= 0:
                    j = _slot(xa_val[i], n, capn)
                    c = 0.0
                    if j < n:
                        x = xa_idx[i, j]
                        c = unary[u + x] + (node_acc[x] if node_mark[x] >= 0 else 0.0)
                    if j == n or best > c:
                        n = _put(xa_idx[i], xa_val[i], n, j, y)
                        added += 1
            # projection (4): c(x) = (theta_i(x) + node_acc(x)) / (rho N_i)
            for j in range(n):
                exv[j] = xa_val[i, j]
                x = xa_idx[i, j]
                c = unary[u + x]
                if node_mark[x] >= 0:
                    c += node_acc[x]
                cand[j] = c / (rho * deg)
            proj_simplex(cand, n, newv)
            for j in range(n):
                d = newv[j] - exv[j]
                dres += deg * d * d
            xa_n[i] = _keep_positive(xa_idx[i], xa_val[i], newv, n)
            for j in range(nn):
                node_acc[node_list[j]] = 0.0
                node_mark[node_list[j]] = -1
    # -------------------------------------------------------- dual step
    infeas = 0.0
    for f in range(n_factors):
        p0 = scope_indptr[f]
        s = scope_indptr[f + 1] - p0
        # r = M y - x on each edge (weights 1/rho make _factor_messages give it)
        _factor_messages(prob, f, 1.0, 1.0, 1.0, active, scratch)
        for k in range(s):
            e = p0 + k
            o = edge_offsets[e]
            # dmsg holds r + mu; subtract mu back out to get r
            for j in range(mu_n[e]):
                dmsg[o + mu_idx[e, j]] -= mu_val[e, j]
            for j in range(n_touched[k]):
                x = touched[k, j]
                r = dmsg[o + x]
                infeas += r * r
                if r == 0.0:
                    continue
                pos = -1
                for m in range(mu_n[e]):
                    if mu_idx[e, m] == x:
                        pos = m
                        break
                if pos >= 0:
                    mu_val[e, pos] += eta * r
                elif mu_n[e] < capm:
                    mu_idx[e, mu_n[e]] = x
                    mu_val[e, mu_n[e]] = eta * r
                    mu_n[e] += 1
            w = 0
            for m in range(mu_n[e]):
                if abs(mu_val[e, m]) > MU_DROP:
                    mu_idx[e, w] = mu_idx[e, m]
                    mu_val[e, w] = mu_val[e, m]
                    w += 1
            mu_n[e] = w
            _clear(dmsg, mark, touched, n_touched, k, o)
    return infeas, added, dres


@nb.njit(cache=True)
def gdmm_certificate(prob, rho, wy, index, active, scratch, labels):
    """Clique dual U(delta) at delta = mu + wy * rho * (M y - x), computed sparsely
    (``index``, ``active``, ``scratch`` as in :func:`gdmm_iteration`).

    ``labels`` receives the node argmax of theta_i + sum_f delta_fi.
    """
    var_ptr, var_edges, edge_factor, uorder, order_data, order_offsets, ws = index
    xa_idx, xa_val, xa_n, ya_idx, ya_val, ya_n, mu_idx, mu_val, mu_n = active
    dmsg, mark, touched, n_touched, touched_val, node_acc, node_mark, node_list = scratch
    n_states, unary_offsets, unary, scope_indptr, scope_vars, table_ids, table_offsets, \
        table_data, edge_offsets = prob
    n_vars = n_states.shape[0]
    n_factors = scope_indptr.shape[0] - 1
    max_s = touched.shape[0]
    lab = np.empty(max_s, dtype=np.int64)
    exa = np.empty(1, dtype=np.int64)
    exb = np.empty(1, dtype=np.int64)
    noex = np.empty(0, dtype=np.int64)
    total = 0.0
    for f in range(n_factors):
        p0 = scope_indptr[f]
        s = scope_indptr[f + 1] - p0
        _factor_messages(prob, f, rho, wy, wy, active, scratch)
        best, _ = _factor_argmax(prob, f, scratch, exa, exb, noex, 0, index, lab)
        total += best
        for k in range(s):
            _clear(dmsg, mark, touched, n_touched, k, edge_offsets[p0 + k])
    for i in range(n_vars):
        u = unary_offsets[i]
        k_i = n_states[i]
        nn = 0
        for q in range(var_ptr[i], var_ptr[i + 1]):
            e = var_edges[q]
            if wy == 0.0:
                # delta = mu: the edge's own multiplier list is its message
                for j in range(mu_n[e]):
                    nn = _accumulate(node_acc, node_mark, node_list, nn, mu_idx[e, j], mu_val[e, j])
                continue
            f = edge_factor[e]
            _factor_messages(prob, f, rho, wy, wy, active, scratch)
            k = e - scope_indptr[f]
            o = edge_offsets[e]
            for j in range(n_touched[k]):
                nn = _accumulate(node_acc, node_mark, node_list, nn, touched[k, j], dmsg[o + touched[k, j]])
            for kk in range(scope_indptr[f + 1] - scope_indptr[f]):
                _clear(dmsg, mark, touched, n_touched, kk, edge_offsets[scope_indptr[f] + kk])
        vals = touched_val[0]
        for j in range(nn):
            vals[j] = node_acc[node_list[j]]
        best, y, _ = static_vector_argmax(unary[u:u + k_i], uorder[u:u + k_i], node_list, vals,
                                          nn, noex, 0, ws[0])
        total += best
        labels[i] = y if y >= 0 else 0
        for j in range(nn):
            node_acc[node_list[j]] = 0.0
            node_mark[node_list[j]] = -1
    return total


@nb.njit(cache=True)
def node_active_argmax(xa_idx, xa_val, xa_n, unary, unary_offsets, uorder, labels):
    """labels[i] = label of the largest x_i on the active set (best unary if empty)."""
    for i in range(xa_n.shape[0]):
        if xa_n[i] == 0:
            labels[i] = uorder[unary_offsets[i]]
            continue
        best = -1.0
        for j in range(xa_n[i]):
            if xa_val[i, j] > best:
                best = xa_val[i, j]
                labels[i] = xa_idx[i, j]


# ---------------------------------------------------------------------------
# Algorithm 2: binary variables, pairwise factors, reduced form (eq. 12)
# ---------------------------------------------------------------------------
class BinaryReduced(NamedTuple):
    """The reduced binary LP of Algorithm 2 (eq. 12).

    Attributes
    ----------
    theta_t : float64 (n_vars,)
        Reduced node scores.
    w : float64 (n_factors,)
        Reduced factor scores.
    fvar : int64 (n_factors, 2)
        Each factor's two variables.
    var_ptr, var_factors : int64
        CSR of each variable's factors.
    var_order, fac_order : int64
        Variables by decreasing ``theta_t``, factors by decreasing ``w``.
    """

    theta_t: np.ndarray
    w: np.ndarray
    fvar: np.ndarray
    var_ptr: np.ndarray
    var_factors: np.ndarray
    var_order: np.ndarray
    fac_order: np.ndarray


class BinaryState(NamedTuple):
    """State of :func:`binary_gdmm_run`, updated in place.

    Attributes
    ----------
    ptrs : int64 (2,)
        Cursors into ``var_order`` and ``fac_order``.
    xact, fa : int64 (n_vars,), (n_factors,)
        Whether a variable / factor is active.
    act_v, act_f : int64
        The active variables and factors (``counts`` of each).
    counts : int64 (2,)
    x, y : float64 (n_vars,), (n_factors,)
    mu : float64 (n_factors, 3)
    sums : float64 (2,)
        Positive parts of ``w`` over inactive factors and of ``theta_t``
        over inactive variables (the certificate's).
    stats : float64 (1,)
        The last iteration's squared infeasibility.
    """

    ptrs: np.ndarray
    xact: np.ndarray
    fa: np.ndarray
    act_v: np.ndarray
    act_f: np.ndarray
    counts: np.ndarray
    x: np.ndarray
    y: np.ndarray
    mu: np.ndarray
    sums: np.ndarray
    stats: np.ndarray


@nb.njit(cache=True, inline="always")
def _binary_activate_factor(f, problem, state, n_act_f, n_act_v, wpos, tpos):
    """Activate factor ``f`` and its variables; returns the new counts."""
    fa, xact, fvar = state.fa, state.xact, problem.fvar
    act_f, act_v, sums = state.act_f, state.act_v, state.sums
    if fa[f]:
        return n_act_f, n_act_v
    fa[f] = 1
    act_f[n_act_f] = f
    n_act_f += 1
    sums[0] -= wpos[f]
    for k in range(2):
        v = fvar[f, k]
        if not xact[v]:
            xact[v] = 1
            act_v[n_act_v] = v
            n_act_v += 1
            sums[1] -= tpos[v]
    return n_act_f, n_act_v


@nb.njit(cache=True)
def binary_gdmm_state(n_vars, n_factors):
    """Fresh state of :func:`binary_gdmm_run` (nothing active, multipliers 0).

    Returns a :class:`BinaryState`; the caller sets ``sums`` (positive parts
    of ``w`` and ``theta_t``).
    """
    return BinaryState(np.zeros(2, dtype=np.int64), np.zeros(n_vars, dtype=np.int64),
            np.zeros(n_factors, dtype=np.int64), np.zeros(n_vars, dtype=np.int64),
            np.zeros(n_factors, dtype=np.int64), np.zeros(2, dtype=np.int64),
            np.zeros(n_vars), np.zeros(n_factors), np.zeros((n_factors, 3)), np.zeros(2),
            np.zeros(1))


@nb.njit(cache=True)
def binary_gdmm_run(n_iter, rho, eta, batch, problem, state):
    """``n_iter`` iterations of GDMM for many binary factors (Algorithm 2) on
    ``problem`` (:class:`BinaryReduced`) from ``state`` (:class:`BinaryState`).

    Reduced LP: max sum_i theta_t[i] x_i + sum_f w[f] y_f over x in [0,1]^n,
    y in [0,1]^F with y_f <= x_i, y_f <= x_j, x_i + x_j - 1 <= y_f; inactive
    variables sit at 0 and inactive factors at y = 0 with zero multipliers.
    Each iteration adds up to ``batch`` variables of largest positive
    ``theta_t`` and factors of largest positive ``w`` (static sorted lists
    ``var_order``, ``fac_order``; ``ptrs`` their cursors), activates factors
    whose two variables are active, takes one projected-gradient step on every
    active x_i and y_f, and one multiplier step.

    sums[0] = sum of max(0, w) over inactive factors, sums[1] = sum of
    max(0, theta_t) over inactive variables (both used by the certificate).
    Returns the certified bound (reduced units, without the constant).
    """
    theta_t, w, fvar, var_ptr, var_factors, var_order, fac_order = problem
    ptrs, xact, fa, act_v, act_f, counts, x, y, mu, sums, out_stats = state
    n_vars = theta_t.shape[0]
    n_f = w.shape[0]
    wpos = np.maximum(w, 0.0)
    tpos = np.maximum(theta_t, 0.0)
    n_act_v = counts[0]
    n_act_f = counts[1]
    ub = np.inf
    for it in range(n_iter):
        # (10) + step 2: new variables, and the factors they close
        for b in range(batch):
            while ptrs[0] < n_vars and xact[var_order[ptrs[0]]]:
                ptrs[0] += 1
            if ptrs[0] >= n_vars or theta_t[var_order[ptrs[0]]] <= 0.0:
                break
            v = var_order[ptrs[0]]
            xact[v] = 1
            act_v[n_act_v] = v
            n_act_v += 1
            sums[1] -= tpos[v]
            for q in range(var_ptr[v], var_ptr[v + 1]):
                f = var_factors[q]
                if not fa[f]:
                    o = fvar[f, 0] if fvar[f, 0] != v else fvar[f, 1]
                    if xact[o]:
                        n_act_f, n_act_v = _binary_activate_factor(f, problem, state, n_act_f,
                                                                   n_act_v, wpos, tpos)
        # (11): factors of largest positive w
        for b in range(batch):
            while ptrs[1] < n_f and fa[fac_order[ptrs[1]]]:
                ptrs[1] += 1
            if ptrs[1] >= n_f or w[fac_order[ptrs[1]]] <= 0.0:
                break
            n_act_f, n_act_v = _binary_activate_factor(fac_order[ptrs[1]], problem, state,
                                                       n_act_f, n_act_v, wpos, tpos)
        # step 3: x on active variables
        for r in range(n_act_v):
            v = act_v[r]
            g = -theta_t[v]
            deg = 0
            for q in range(var_ptr[v], var_ptr[v + 1]):
                f = var_factors[q]
                if not fa[f]:
                    continue
                deg += 1
                side = 0 if fvar[f, 0] == v else 1
                i = fvar[f, 0]
                j = fvar[f, 1]
                l_side = mu[f, side] + rho * (y[f] - x[v])
                l3 = mu[f, 2] + rho * (x[i] + x[j] - 1.0 - y[f])
                if l_side > 0:
                    g -= l_side
                if l3 > 0:
                    g += l3
            qv = rho * max(1.0, 2.0 * deg)
            nv = x[v] - g / qv
            x[v] = 0.0 if nv < 0.0 else (1.0 if nv > 1.0 else nv)
        # step 5: y on active factors
        for r in range(n_act_f):
            f = act_f[r]
            i = fvar[f, 0]
            j = fvar[f, 1]
            g = -w[f]
            l1 = mu[f, 0] + rho * (y[f] - x[i])
            l2 = mu[f, 1] + rho * (y[f] - x[j])
            l3 = mu[f, 2] + rho * (x[i] + x[j] - 1.0 - y[f])
            if l1 > 0:
                g += l1
            if l2 > 0:
                g += l2
            if l3 > 0:
                g -= l3
            nv = y[f] - g / (3.0 * rho)
            y[f] = 0.0 if nv < 0.0 else (1.0 if nv > 1.0 else nv)
        # step 6: multipliers
        infeas = 0.0
        for r in range(n_act_f):
            f = act_f[r]
            i = fvar[f, 0]
            j = fvar[f, 1]
            g1 = y[f] - x[i]
            g2 = y[f] - x[j]
            g3 = x[i] + x[j] - 1.0 - y[f]
            for c, gc in ((0, g1), (1, g2), (2, g3)):
                nm = mu[f, c] + eta * gc
                mu[f, c] = nm if nm > 0.0 else 0.0
                if gc > 0:
                    infeas += gc * gc
        # certificate: Lagrangian with y, x in [0, 1]
        bound = sums[0] + sums[1]
        for r in range(n_act_f):
            f = act_f[r]
            bound += mu[f, 2]
            cf = w[f] - mu[f, 0] - mu[f, 1] + mu[f, 2]
            if cf > 0:
                bound += cf
        for r in range(n_act_v):
            v = act_v[r]
            cv = theta_t[v]
            for q in range(var_ptr[v], var_ptr[v + 1]):
                f = var_factors[q]
                if fa[f]:
                    side = 0 if fvar[f, 0] == v else 1
                    cv += mu[f, side] - mu[f, 2]
            if cv > 0:
                bound += cv
        if bound < ub:
            ub = bound
        out_stats[0] = infeas
    counts[0] = n_act_v
    counts[1] = n_act_f
    return ub
