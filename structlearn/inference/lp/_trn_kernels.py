"""Numba kernels of TRN: Hessian-vector products of the smoothed clique dual
and its clique block-diagonal preconditioner (thesis 5.1.1 and 5.1.4).

With ``mu_f = softmax(tau theta_hat_f)`` and ``mu_i = softmax(tau theta_hat_i)``,
the Hessian of ``U_tau`` (module :mod:`._lp_kernels`) is

* component 1, per factor f, positions k, l: ``tau (mu_fkl - mu_fk mu_fl^T)``
  (``mu_fkk = diag mu_fk``), i.e. ``tau Cov_{mu_f}`` of the label indicators;
* component 2, per variable i and every pair of its edges a, b:
  ``tau (diag mu_i - mu_i mu_i^T)``.

Products never store a factor's joint marginal: ``mu_f`` is recomputed entry
by entry from ``delta`` and the stored ``log Z_f``.
"""

import numba as nb
import numpy as np

from ._lp_kernels import _factor_offset_sum


@nb.njit(cache=True, inline="always")
def _advance(prob, delta, f, s, lab, cur):
    """Step the C-order label counter of factor f; returns the updated
    sum of delta over its labels (incremental on the last variable)."""
    n_states, _, _, scope_indptr, scope_vars, _, _, _, edge_offsets = prob
    last = scope_indptr[f] + s - 1
    old = lab[s - 1]
    if old + 1 < n_states[scope_vars[last]]:
        lab[s - 1] = old + 1
        o = edge_offsets[last]
        return cur + delta[o + old + 1] - delta[o + old]
    k = s - 1
    while k >= 0:
        if lab[k] + 1 < n_states[scope_vars[scope_indptr[f] + k]]:
            lab[k] += 1
            break
        lab[k] = 0
        k -= 1
    return _factor_offset_sum(prob, delta, f, lab)


@nb.njit(cache=True)
def hess_vec(prob, delta, tau, zf, mu_node, fac_marg, v, out, lab, wnode):
    """out = H v (component 1 + component 2).

    zf : float64 (n_factors,), smax_tau of each factor (from the gradient pass).
    mu_node : node beliefs (unary size); fac_marg : factor marginals (message size).
    wnode : float64 scratch (unary size).
    """
    n_states, unary_offsets, unary, scope_indptr, scope_vars, table_ids, table_offsets, \
        table_data, edge_offsets = prob
    for t in range(out.shape[0]):
        out[t] = 0.0
    for f in range(scope_indptr.shape[0] - 1):
        p0 = scope_indptr[f]
        s = scope_indptr[f + 1] - p0
        base = table_offsets[table_ids[f]]
        size = table_offsets[table_ids[f] + 1] - base
        ew = 0.0
        for k in range(s):
            o = edge_offsets[p0 + k]
            for x in range(edge_offsets[p0 + k + 1] - o):
                ew += fac_marg[o + x] * v[o + x]
        for k in range(s):
            lab[k] = 0
        cur = _factor_offset_sum(prob, delta, f, lab)
        for idx in range(size):
            mu = np.exp(tau * (table_data[base + idx] - cur - zf[f]))
            if mu > 1e-300:
                w = 0.0
                for k in range(s):
                    w += v[edge_offsets[p0 + k] + lab[k]]
                c = mu * w
                for k in range(s):
                    out[edge_offsets[p0 + k] + lab[k]] += c
            cur = _advance(prob, delta, f, s, lab, cur)
        for k in range(s):
            o = edge_offsets[p0 + k]
            for x in range(edge_offsets[p0 + k + 1] - o):
                out[o + x] = tau * (out[o + x] - fac_marg[o + x] * ew)
    # component 2
    for t in range(wnode.shape[0]):
        wnode[t] = 0.0
    for e in range(scope_vars.shape[0]):
        i = scope_vars[e]
        u = unary_offsets[i]
        o = edge_offsets[e]
        for x in range(n_states[i]):
            wnode[u + x] += v[o + x]
    for i in range(n_states.shape[0]):
        u = unary_offsets[i]
        dot = 0.0
        for x in range(n_states[i]):
            dot += mu_node[u + x] * wnode[u + x]
        for x in range(n_states[i]):
            wnode[u + x] = tau * mu_node[u + x] * (wnode[u + x] - dot)
    for e in range(scope_vars.shape[0]):
        i = scope_vars[e]
        u = unary_offsets[i]
        o = edge_offsets[e]
        for x in range(n_states[i]):
            out[o + x] += wnode[u + x]


@nb.njit(cache=True)
def build_preconditioner(prob, delta, tau, zf, mu_node, fac_marg, lam, blk_offsets, blocks,
                         diag_only, lab):
    """Inverse of each clique block of H + lam I (or of its diagonal).

    Block of factor f (size m = sum_k K_k): component 1 plus, for each
    position, ``tau (diag mu_i - mu_i mu_i^T)`` plus ``lam I``.  When
    ``diag_only[f]`` the block is replaced by its diagonal (large domains);
    ``blocks[blk_offsets[f]:...]`` then holds m inverse diagonal entries,
    otherwise the m x m inverse, row-major.
    """
    n_states, unary_offsets, unary, scope_indptr, scope_vars, table_ids, table_offsets, \
        table_data, edge_offsets = prob
    for f in range(scope_indptr.shape[0] - 1):
        p0 = scope_indptr[f]
        s = scope_indptr[f + 1] - p0
        o0 = edge_offsets[p0]
        m = edge_offsets[p0 + s] - o0
        b0 = blk_offsets[f]
        if diag_only[f]:
            for k in range(s):
                i = scope_vars[p0 + k]
                u = unary_offsets[i]
                o = edge_offsets[p0 + k]
                for x in range(n_states[i]):
                    mf = fac_marg[o + x]
                    mi = mu_node[u + x]
                    d = tau * (mf - mf * mf + mi - mi * mi) + lam
                    blocks[b0 + o - o0 + x] = 1.0 / d
            continue
        B = np.zeros((m, m))
        base = table_offsets[table_ids[f]]
        size = table_offsets[table_ids[f] + 1] - base
        for k in range(s):
            lab[k] = 0
        cur = _factor_offset_sum(prob, delta, f, lab)
        for idx in range(size):
            mu = np.exp(tau * (table_data[base + idx] - cur - zf[f]))
            if mu > 1e-300:
                for k in range(s):
                    a = edge_offsets[p0 + k] - o0 + lab[k]
                    for l in range(s):
                        b = edge_offsets[p0 + l] - o0 + lab[l]
                        B[a, b] += mu
            cur = _advance(prob, delta, f, s, lab, cur)
        for a in range(m):
            for b in range(m):
                B[a, b] = tau * (B[a, b] - fac_marg[o0 + a] * fac_marg[o0 + b])
        for k in range(s):
            i = scope_vars[p0 + k]
            u = unary_offsets[i]
            ok = edge_offsets[p0 + k] - o0
            ki = n_states[i]
            for x in range(ki):
                for y in range(ki):
                    B[ok + x, ok + y] -= tau * mu_node[u + x] * mu_node[u + y]
                B[ok + x, ok + x] += tau * mu_node[u + x]
        for a in range(m):
            B[a, a] += lam
        Binv = np.linalg.inv(B)
        for a in range(m):
            for b in range(m):
                blocks[b0 + a * m + b] = Binv[a, b]


@nb.njit(cache=True)
def apply_preconditioner(prob, blk_offsets, blocks, diag_only, r, z):
    """z = P^-1 r block by block."""
    n_states, unary_offsets, unary, scope_indptr, scope_vars, _, _, _, edge_offsets = prob
    for f in range(scope_indptr.shape[0] - 1):
        p0 = scope_indptr[f]
        o0 = edge_offsets[p0]
        m = edge_offsets[scope_indptr[f + 1]] - o0
        b0 = blk_offsets[f]
        if diag_only[f]:
            for a in range(m):
                z[o0 + a] = blocks[b0 + a] * r[o0 + a]
        else:
            for a in range(m):
                acc = 0.0
                for b in range(m):
                    acc += blocks[b0 + a * m + b] * r[o0 + b]
                z[o0 + a] = acc
