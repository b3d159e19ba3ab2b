"""Numba kernels shared by the LP-relaxation MAP solvers.

All solvers work on one *clique dual* representation over the flat arrays of
a :class:`~structlearn.graphs.FactorGraph` (maximization form)::

    U(delta) = sum_i max_x theta_hat_i(x) + sum_f max_{x_f} theta_hat_f(x_f)
    theta_hat_i(x)   = theta_i(x) + sum_{f : i in f} delta_fi(x)
    theta_hat_f(x_f) = theta_f(x_f) - sum_{i in f} delta_fi(x_i)

``U(delta) >= LP optimum >= MAP optimum`` for every ``delta``.  Messages
``delta`` live in one flat float64 array: edge ``e`` (a position in
``scope_vars``, i.e. the pair (factor, variable)) owns the block
``delta[edge_offsets[e]:edge_offsets[e + 1]]`` of length
``n_states[scope_vars[e]]``.

``prob`` is the tuple ``(n_states, unary_offsets, unary, scope_indptr,
scope_vars, table_ids, table_offsets, table_data, edge_offsets)`` with
finite scores (the Python side replaces -inf by a large negative constant).
No validation happens here; outputs go into caller-allocated arrays.
"""

import numba as nb
import numpy as np

NEG_INF = -np.inf


@nb.njit(cache=True, no_cpython_wrapper=True)
def node_reparam(prob, delta, theta_hat):
    """theta_hat[unary_offsets[i] + x] = theta_i(x) + sum_{f ni i} delta_fi(x)."""
    n_states, unary_offsets, unary, scope_indptr, scope_vars, _, _, _, edge_offsets = prob
    for t in range(unary.shape[0]):
        theta_hat[t] = unary[t]
    for e in range(scope_vars.shape[0]):
        v = scope_vars[e]
        o = edge_offsets[e]
        u = unary_offsets[v]
        for x in range(n_states[v]):
            theta_hat[u + x] += delta[o + x]


@nb.njit(cache=True, no_cpython_wrapper=True)
def _factor_offset_sum(prob, delta, f, lab):
    n_states, unary_offsets, unary, scope_indptr, scope_vars, _, _, _, edge_offsets = prob
    cur = 0.0
    for e in range(scope_indptr[f], scope_indptr[f + 1]):
        cur += delta[edge_offsets[e] + lab[e - scope_indptr[f]]]
    return cur


@nb.njit(cache=True)
def factor_marginals(prob, delta, f, tau, mode, out, lab):
    """Max (or soft-max) of theta_hat_f and its per-variable marginals.

    Parameters
    ----------
    prob, delta : see module docstring.
    f : int
        Factor.
    tau : float
        Inverse temperature of the soft-max (mode 2).
    mode : int
        0: only the maximum; 1: also max-marginals; 2: soft-max
        ``tau^-1 log sum exp(tau theta_hat_f)`` and log-sum-exp marginals.
    out : float64 (edge_offsets[-1],)
        For modes 1 and 2, ``out[edge block of (f, i)][x]`` receives the max
        (mode 1) or ``tau^-1 log sum exp`` (mode 2) of theta_hat_f over the
        entries with ``x_i = x``.
    lab : int64 scratch of length >= factor order.

    Returns
    -------
    total : float
        Max (modes 0, 1) or soft-max (mode 2) of theta_hat_f.
    arg : int
        Flat C-order index of the first maximizing entry.
    """
    n_states, unary_offsets, unary, scope_indptr, scope_vars, table_ids, table_offsets, \
        table_data, edge_offsets = prob
    p0 = scope_indptr[f]
    s = scope_indptr[f + 1] - p0
    t = table_ids[f]
    base = table_offsets[t]
    size = table_offsets[t + 1] - base
    if mode >= 1:
        for k in range(s):
            e = p0 + k
            o = edge_offsets[e]
            fill = NEG_INF if mode == 1 else 0.0
            for x in range(n_states[scope_vars[e]]):
                out[o + x] = fill
    best = NEG_INF
    arg = 0
    if s == 2:
        o1 = edge_offsets[p0]
        o2 = edge_offsets[p0 + 1]
        n1 = n_states[scope_vars[p0]]
        n2 = n_states[scope_vars[p0 + 1]]
        for a in range(n1):
            da = delta[o1 + a]
            rb = base + a * n2
            for b in range(n2):
                v = table_data[rb + b] - da - delta[o2 + b]
                if v > best:
                    best = v
                    arg = a * n2 + b
                if mode == 1:
                    if v > out[o1 + a]:
                        out[o1 + a] = v
                    if v > out[o2 + b]:
                        out[o2 + b] = v
        if mode == 2:
            for a in range(n1):
                da = delta[o1 + a]
                rb = base + a * n2
                acc = 0.0
                for b in range(n2):
                    w = np.exp(tau * (table_data[rb + b] - da - delta[o2 + b] - best))
                    acc += w
                    out[o2 + b] += w
                out[o1 + a] = acc
    else:
        for k in range(s):
            lab[k] = 0
        for sweep in range(2 if mode == 2 else 1):
            for k in range(s):
                lab[k] = 0
            cur = _factor_offset_sum(prob, delta, f, lab)
            last = p0 + s - 1
            ol = edge_offsets[last]
            nl = n_states[scope_vars[last]]
            for idx in range(size):
                v = table_data[base + idx] - cur
                if sweep == 0:
                    if v > best:
                        best = v
                        arg = idx
                    if mode == 1:
                        for k in range(s):
                            c = edge_offsets[p0 + k] + lab[k]
                            if v > out[c]:
                                out[c] = v
                else:
                    w = np.exp(tau * (v - best))
                    for k in range(s):
                        out[edge_offsets[p0 + k] + lab[k]] += w
                # advance the C-order counter (last variable fastest)
                old = lab[s - 1]
                if old + 1 < nl:
                    lab[s - 1] = old + 1
                    cur += delta[ol + old + 1] - delta[ol + old]
                else:
                    k = s - 1
                    while k >= 0:
                        nk = n_states[scope_vars[p0 + k]]
                        if lab[k] + 1 < nk:
                            lab[k] += 1
                            break
                        lab[k] = 0
                        k -= 1
                    cur = _factor_offset_sum(prob, delta, f, lab)
    if mode == 2:
        # convert sums of exp(tau (v - best)) into log-sum-exp marginals
        ztot = 0.0
        o0 = edge_offsets[p0]
        for x in range(n_states[scope_vars[p0]]):
            ztot += out[o0 + x]
        for k in range(s):
            e = p0 + k
            o = edge_offsets[e]
            for x in range(n_states[scope_vars[e]]):
                w = out[o + x]
                if w < 1e-300:
                    w = 1e-300
                out[o + x] = best + np.log(w) / tau
        return best + np.log(ztot) / tau, arg
    return best, arg


@nb.njit(cache=True, no_cpython_wrapper=True)
def segment_max(values, offsets, i):
    """(max, first argmax) of values[offsets[i]:offsets[i+1]] (local index)."""
    lo = offsets[i]
    best = values[lo]
    arg = 0
    for x in range(1, offsets[i + 1] - lo):
        if values[lo + x] > best:
            best = values[lo + x]
            arg = x
    return best, arg


@nb.njit(cache=True)
def segment_softmax(values, offsets, i, tau, out):
    """out[segment] = softmax(tau * values[segment]); returns tau^-1 log sum exp."""
    lo = offsets[i]
    hi = offsets[i + 1]
    m, _ = segment_max(values, offsets, i)
    z = 0.0
    for t in range(lo, hi):
        w = np.exp(tau * (values[t] - m))
        out[t] = w
        z += w
    for t in range(lo, hi):
        out[t] /= z
    return m + np.log(z) / tau


@nb.njit(cache=True)
def clique_dual(prob, delta, theta_hat, lab, labels):
    """Value of the clique dual U(delta); node argmax labels into ``labels``.

    theta_hat : float64 scratch (unary.shape[0],), receives theta_hat_i.
    labels : int64 (n_vars,), receives argmax_x theta_hat_i(x).
    """
    n_states, unary_offsets, unary, scope_indptr, scope_vars, _, _, _, edge_offsets = prob
    node_reparam(prob, delta, theta_hat)
    total = 0.0
    for i in range(n_states.shape[0]):
        m, a = segment_max(theta_hat, unary_offsets, i)
        total += m
        labels[i] = a
    dummy = np.empty(0)
    for f in range(scope_indptr.shape[0] - 1):
        m, _ = factor_marginals(prob, delta, f, 1.0, 0, dummy, lab)
        total += m
    return total


@nb.njit(cache=True)
def label_dual_bounds(prob, delta, theta_hat, maxmarg, lab, out):
    """Per-label restrictions of the clique dual U(delta).

    ``out[unary_offsets[i] + x]`` receives an upper bound on the score of
    every labeling with ``x_i = x``: U(delta) less the slack of ``x`` in
    ``theta_hat_i`` and in the max-marginal of every factor on ``i`` (the
    terms of U with ``x_i`` held at ``x``).  Reduced-cost fixing: a label
    whose bound is below a known score is in no better labeling.

    theta_hat : float64 scratch (unary.shape[0],).
    maxmarg : float64 scratch (edge_offsets[-1],).
    out : float64 (unary.shape[0],).
    Returns U(delta).
    """
    n_states, unary_offsets, unary, scope_indptr, scope_vars, _, _, _, edge_offsets = prob
    node_reparam(prob, delta, theta_hat)
    total = 0.0
    for i in range(n_states.shape[0]):
        m, _ = segment_max(theta_hat, unary_offsets, i)
        total += m
        u = unary_offsets[i]
        for x in range(n_states[i]):
            out[u + x] = theta_hat[u + x] - m
    for f in range(scope_indptr.shape[0] - 1):
        m, _ = factor_marginals(prob, delta, f, 1.0, 1, maxmarg, lab)
        total += m
        for e in range(scope_indptr[f], scope_indptr[f + 1]):
            v = scope_vars[e]
            o = edge_offsets[e]
            u = unary_offsets[v]
            for x in range(n_states[v]):
                out[u + x] += maxmarg[o + x] - m
    for t in range(out.shape[0]):
        out[t] += total
    return total


@nb.njit(cache=True)
def smooth_dual_grad(prob, delta, tau, theta_hat, mu_node, fac_marg, grad, lab, zf):
    """Smoothed dual U_tau(delta) (an upper bound >= U) and its gradient.

    U_tau = sum_i smax_tau theta_hat_i + sum_f smax_tau theta_hat_f, with
    smax_tau(a) = tau^-1 log sum exp(tau a).  Gradient:
    ``grad[e block](x) = mu_i(x) - mu_fi(x)`` (node soft-max minus factor
    soft marginal).  ``mu_node`` (unary size) receives the node beliefs,
    ``fac_marg`` (message size) the factor marginals mu_fi, ``zf``
    (n_factors,) each factor's soft-max.  Returns U_tau.
    """
    n_states, unary_offsets, unary, scope_indptr, scope_vars, _, _, _, edge_offsets = prob
    node_reparam(prob, delta, theta_hat)
    total = 0.0
    for i in range(n_states.shape[0]):
        total += segment_softmax(theta_hat, unary_offsets, i, tau, mu_node)
    for f in range(scope_indptr.shape[0] - 1):
        z, _ = factor_marginals(prob, delta, f, tau, 2, fac_marg, lab)
        zf[f] = z
        total += z
        for e in range(scope_indptr[f], scope_indptr[f + 1]):
            o = edge_offsets[e]
            for x in range(edge_offsets[e + 1] - o):
                fac_marg[o + x] = np.exp(tau * (fac_marg[o + x] - z))
    for e in range(scope_vars.shape[0]):
        v = scope_vars[e]
        o = edge_offsets[e]
        u = unary_offsets[v]
        for x in range(n_states[v]):
            grad[o + x] = mu_node[u + x] - fac_marg[o + x]
    return total


@nb.njit(cache=True)
def smooth_dual_value(prob, delta, tau, theta_hat, scratch, lab):
    """U_tau(delta) only (line searches); ``scratch`` has message size."""
    n_states, unary_offsets, unary, scope_indptr, scope_vars, _, _, _, edge_offsets = prob
    node_reparam(prob, delta, theta_hat)
    total = 0.0
    for i in range(n_states.shape[0]):
        m, _ = segment_max(theta_hat, unary_offsets, i)
        z = 0.0
        for t in range(unary_offsets[i], unary_offsets[i + 1]):
            z += np.exp(tau * (theta_hat[t] - m))
        total += m + np.log(z) / tau
    for f in range(scope_indptr.shape[0] - 1):
        z, _ = factor_marginals(prob, delta, f, tau, 2, scratch, lab)
        total += z
    return total


@nb.njit(cache=True)
def argmax_segments(values, offsets, labels):
    """labels[i] = first argmax of values over variable i's segment."""
    for i in range(offsets.shape[0] - 1):
        _, a = segment_max(values, offsets, i)
        labels[i] = a


@nb.njit(cache=True)
def dual_supergradient(prob, delta, theta_hat, lab, labels, grad):
    """U(delta) and a subgradient ``dU/ddelta`` into ``grad``.

    ``grad[e block](x) = 1[x = argmax theta_hat_i] - 1[x = (argmax theta_hat_f)_i]``;
    ``labels`` receives the node argmax labels.
    """
    n_states, unary_offsets, unary, scope_indptr, scope_vars, _, _, _, edge_offsets = prob
    total = clique_dual(prob, delta, theta_hat, lab, labels)
    dummy = np.empty(0)
    for e in range(scope_vars.shape[0]):
        o = edge_offsets[e]
        for x in range(edge_offsets[e + 1] - o):
            grad[o + x] = 0.0
        grad[o + labels[scope_vars[e]]] += 1.0
    for f in range(scope_indptr.shape[0] - 1):
        _, arg = factor_marginals(prob, delta, f, 1.0, 0, dummy, lab)
        p0 = scope_indptr[f]
        p1 = scope_indptr[f + 1]
        rem = arg
        for e in range(p1 - 1, p0 - 1, -1):
            k = n_states[scope_vars[e]]
            x = rem % k
            rem //= k
            grad[edge_offsets[e] + x] -= 1.0
    return total


@nb.njit(cache=True)
def star_sweep(prob, delta, tau, order, var_edge_ptr, var_edges, edge_factor, scratch, lab):
    """One pass of star coordinate minimization of U_tau (U when tau <= 0).

    For each variable ``i`` in ``order``: ``m_f = smax over x_f with x_i fixed
    of (theta_f - sum_{j != i} delta_fj)`` for each factor ``f`` of ``i``, then
    ``delta_fi = m_f - (theta_i + sum_g m_g) / (N_i + 1)`` (the exact block
    minimizer).  ``var_edges[var_edge_ptr[i]:var_edge_ptr[i+1]]`` lists the
    edges of ``i``; ``scratch`` has message size.
    """
    n_states, unary_offsets, unary, scope_indptr, scope_vars, _, _, _, edge_offsets = prob
    mode = 2 if tau > 0 else 1
    kmax = 0
    for i in range(n_states.shape[0]):
        if n_states[i] > kmax:
            kmax = n_states[i]
    acc = np.empty(kmax)
    for r in range(order.shape[0]):
        i = order[r]
        q0 = var_edge_ptr[i]
        q1 = var_edge_ptr[i + 1]
        if q1 == q0:
            continue
        k_i = n_states[i]
        u = unary_offsets[i]
        for x in range(k_i):
            acc[x] = unary[u + x]
        for q in range(q0, q1):
            e = var_edges[q]
            factor_marginals(prob, delta, edge_factor[e], tau, mode, scratch, lab)
            o = edge_offsets[e]
            for x in range(k_i):
                m = scratch[o + x] + delta[o + x]
                scratch[o + x] = m
                acc[x] += m
        inv = 1.0 / (q1 - q0 + 1)
        for q in range(q0, q1):
            o = edge_offsets[var_edges[q]]
            for x in range(k_i):
                delta[o + x] = scratch[o + x] - acc[x] * inv
