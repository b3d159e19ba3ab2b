"""Numba kernels of AD3: the active-set QP of each factor and one ADMM pass.

Notation (maximization form, normalized scores; see :mod:`.ad3`): factor
``f`` with scope ``(i_1..i_s)`` keeps a sparse distribution ``q_f`` over an
active set of its configurations (flat C-order indices).  Its QP is

    max_{q in simplex}  eta^T q - 1/2 q^T H q,
    eta(x) = [theta_f(x) + sum_k (theta_{i_k}/N_{i_k} + lam_fk)(x_k)] / rho
             + sum_k p_{i_k}(x_k),
    H(x, y) = number of positions where x and y agree,

solved by a primal active-set method warm-started from the previous
iteration; a configuration enters when its reduced score ``eta(x) - (Hq)(x)``
beats the multiplier of the simplex constraint (found by a full scan of the
factor's table: the step whose cost is linear in the factor domain).
"""

import numba as nb
import numpy as np

from ._lp_kernels import factor_marginals

NEG_INF = -np.inf


@nb.njit(cache=True)
def solve_small(A, b, m, out):
    """Solve ``A[:m, :m] x = b[:m]`` into ``out[:m]`` by Gaussian elimination
    with partial pivoting; ``A`` and ``b`` are overwritten.

    The active-set systems have at most a few dozen rows: a plain loop is as
    fast as LAPACK there and compiles in a fraction of the time of
    ``np.linalg.solve`` (whose numba binding cost about 14 s of a cold first
    solve).  A zero pivot gives a zero component (the bordered KKT systems
    here are regular thanks to their ridge).
    """
    for c in range(m):
        piv = c
        best = abs(A[c, c])
        for r in range(c + 1, m):
            if abs(A[r, c]) > best:
                best = abs(A[r, c])
                piv = r
        if piv != c:
            for k in range(c, m):
                A[c, k], A[piv, k] = A[piv, k], A[c, k]
            b[c], b[piv] = b[piv], b[c]
        d = A[c, c]
        if d == 0.0:
            continue
        for r in range(c + 1, m):
            factor = A[r, c] / d
            if factor != 0.0:
                for k in range(c, m):
                    A[r, k] -= factor * A[c, k]
                b[r] -= factor * b[c]
    for c in range(m - 1, -1, -1):
        acc = b[c]
        for k in range(c + 1, m):
            acc -= A[c, k] * out[k]
        out[c] = acc / A[c, c] if A[c, c] != 0.0 else 0.0


@nb.njit(cache=True)
def _decode(idx, f, scope_indptr, scope_vars, n_states, out):
    p0 = scope_indptr[f]
    s = scope_indptr[f + 1] - p0
    rem = idx
    for k in range(s - 1, -1, -1):
        nk = n_states[scope_vars[p0 + k]]
        out[k] = rem % nk
        rem //= nk


@nb.njit(cache=True)
def ad3_pass(prob, lam, p, rho, inv_deg, act_idx, act_val, act_n, marg, tmp_msg, cfg,
             max_inner):
    """Factor QPs of one AD3 iteration (in place), then ``marg = M q``.

    prob : clique-dual problem tuple (normalized, finite).
    lam : float64 (n_msg,), multipliers.
    p : float64 (n_unary,), node beliefs.
    inv_deg : float64 (n_vars,), 1 / N_i (0 for isolated variables).
    act_idx, act_val : int64 / float64 (n_factors, cap), active sets and weights.
    act_n : int64 (n_factors,), active set sizes (0 = not started).
    marg : float64 (n_msg,), receives the factor marginals ``M_fi q_f``.
    tmp_msg : float64 (n_msg,), scratch.
    cfg : int64 (cap + 1, max_order), scratch.
    Returns the number of inner QP iterations run.
    """
    n_states, unary_offsets, unary, scope_indptr, scope_vars, table_ids, table_offsets, \
        table_data, edge_offsets = prob
    n_factors = scope_indptr.shape[0] - 1
    cap = act_idx.shape[1]
    lab = np.empty(cfg.shape[1], dtype=np.int64)
    kkt = np.empty((cap + 1, cap + 1))
    rhs = np.empty(cap + 1)
    sol = np.empty(cap + 1)
    eta_s = np.empty(cap)
    total_inner = 0
    for f in range(n_factors):
        p0 = scope_indptr[f]
        p1 = scope_indptr[f + 1]
        s = p1 - p0
        base = table_offsets[table_ids[f]]
        # linear part per edge: w_e(x) = (theta_i/N_i + lam_e(x)) / rho + p_i(x)
        # stored negated in tmp_msg so that theta_f - sum tmp = rho * eta
        for e in range(p0, p1):
            v = scope_vars[e]
            o = edge_offsets[e]
            u = unary_offsets[v]
            for x in range(n_states[v]):
                tmp_msg[o + x] = -(unary[u + x] * inv_deg[v] + lam[o + x] + rho * p[u + x])
        n = act_n[f]
        if n == 0:
            _, arg = factor_marginals(prob, tmp_msg, f, 1.0, 0, marg, lab)
            act_idx[f, 0] = arg
            act_val[f, 0] = 1.0
            n = 1
        for it in range(max_inner):
            total_inner += 1
            # configurations and eta on the active set
            for j in range(n):
                _decode(act_idx[f, j], f, scope_indptr, scope_vars, n_states, cfg[j])
                val = table_data[base + act_idx[f, j]]
                for k in range(s):
                    val -= tmp_msg[edge_offsets[p0 + k] + cfg[j, k]]
                eta_s[j] = val / rho
            # KKT system [H 1; 1' 0] [q; t] = [eta; 1] (tiny ridge keeps it regular)
            m = n + 1
            K = kkt[:m, :m]
            for j in range(n):
                for l in range(n):
                    c = 0.0
                    for k in range(s):
                        if cfg[j, k] == cfg[l, k]:
                            c += 1.0
                    K[j, l] = c
                K[j, j] += 1e-9
                K[j, n] = 1.0
                K[n, j] = 1.0
                rhs[j] = eta_s[j]
            K[n, n] = 0.0
            rhs[n] = 1.0
            solve_small(K, rhs, m, sol)
            tmult = sol[n]
            # blocking step if some weight turned negative
            alpha = 1.0
            block = -1
            for j in range(n):
                if sol[j] < 0.0:
                    cur = act_val[f, j]
                    a = cur / (cur - sol[j]) if cur - sol[j] > 0 else 0.0
                    if a < alpha:
                        alpha = a
                        block = j
            changed = False
            for j in range(n):
                nv = act_val[f, j] + alpha * (sol[j] - act_val[f, j])
                if abs(nv - act_val[f, j]) > 1e-12:
                    changed = True
                act_val[f, j] = nv
            if block >= 0:
                act_val[f, block] = 0.0
            # drop zero weights
            w = 0
            for j in range(n):
                if act_val[f, j] > 1e-12:
                    act_idx[f, w] = act_idx[f, j]
                    act_val[f, w] = act_val[f, j]
                    w += 1
            if w == 0:
                act_val[f, 0] = 1.0
                w = 1
            n = w
            if block >= 0:
                continue
            # optimality: max_x eta(x) - (Hq)(x) <= tmult ?
            # (Hq)(x) = sum_k (M_k q)(x_k): add rho * M_k q to the messages
            for j in range(n):
                _decode(act_idx[f, j], f, scope_indptr, scope_vars, n_states, cfg[j])
                for k in range(s):
                    tmp_msg[edge_offsets[p0 + k] + cfg[j, k]] += rho * act_val[f, j]
            best, arg = factor_marginals(prob, tmp_msg, f, 1.0, 0, marg, lab)
            for j in range(n):
                for k in range(s):
                    tmp_msg[edge_offsets[p0 + k] + cfg[j, k]] -= rho * act_val[f, j]
            if best / rho <= tmult + 1e-10 * (1.0 + abs(tmult)):
                break
            present = False
            for j in range(n):
                if act_idx[f, j] == arg:
                    present = True
            if present or n >= cap:
                if not changed:
                    break
                continue
            act_idx[f, n] = arg
            act_val[f, n] = 0.0
            n += 1
        act_n[f] = n
        # marginals M_fk q_f
        for e in range(p0, p1):
            o = edge_offsets[e]
            for x in range(edge_offsets[e + 1] - o):
                marg[o + x] = 0.0
        for j in range(n):
            _decode(act_idx[f, j], f, scope_indptr, scope_vars, n_states, lab)
            for k in range(s):
                marg[edge_offsets[p0 + k] + lab[k]] += act_val[f, j]
    return total_inner


@nb.njit(cache=True)
def ad3_node_and_dual_step(prob, marg, lam, p, rho, inv_deg, delta):
    """Node averages, multiplier step and the clique-dual messages.

    p_i = mean_f M_fi q_f (isolated variables keep their value);
    lam_fi -= rho (M_fi q_f - p_i);
    delta_fi = -(theta_i / N_i + lam_fi) (the clique-dual form of lam).
    Returns (primal residual^2, dual residual^2 / rho^2).
    """
    n_states, unary_offsets, unary, scope_indptr, scope_vars, _, _, _, edge_offsets = prob
    n_vars = n_states.shape[0]
    newp = np.zeros(unary.shape[0])
    for e in range(scope_vars.shape[0]):
        v = scope_vars[e]
        o = edge_offsets[e]
        u = unary_offsets[v]
        for x in range(n_states[v]):
            newp[u + x] += marg[o + x] * inv_deg[v]
    dres = 0.0
    for i in range(n_vars):
        if inv_deg[i] == 0.0:
            continue
        u = unary_offsets[i]
        for x in range(n_states[i]):
            d = newp[u + x] - p[u + x]
            dres += d * d / inv_deg[i]
            p[u + x] = newp[u + x]
    pres = 0.0
    for e in range(scope_vars.shape[0]):
        v = scope_vars[e]
        o = edge_offsets[e]
        u = unary_offsets[v]
        for x in range(n_states[v]):
            r = marg[o + x] - p[u + x]
            pres += r * r
            lam[o + x] -= rho * r
            delta[o + x] = -(unary[u + x] * inv_deg[v] + lam[o + x])
    return pres, dres
