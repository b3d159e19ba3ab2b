"""Trust-region Newton-CG on the smoothed clique dual (``trn``, thesis 5.1).

Minimizes ``U_tau`` (see :mod:`.smoothed_dual`) with damped Newton steps:
``B = H + lam I``; preconditioned CG (clique block-diagonal preconditioner,
exact blocks up to ``max_block`` labels per clique, their diagonal beyond)
until ``||r|| <= eta_k ||g||`` with the forcing sequence
``eta_k = min(eps_tau / k, sqrt(||g||))`` and at most 250 CG iterations;
ratio ``rho = [U(d + p) - U(d)] / [g'p + p'Bp / 2]``; ``lam`` x2 when
``rho < 0.25``, x0.5 for ``rho`` in (0.5, 0.9], x0.25 above 0.9; a
backtracking (Armijo, c = 1e-4, factor 0.8) line search along ``p`` when
``rho < eps_rho``.  Annealing as in :mod:`.smoothed_dual` with the thesis
defaults ``lam0 = 1, alpha = 2, beta = 1/6, eps_rho = 1e-4, zeta = 1e-3,
tau_max = 2**13`` and ``eps_tau = 0.1, 0.01, 0.001`` for ``tau`` below
``tau_max / 4``, below ``tau_max / 2`` and above.  The quasi-Newton variant
(thesis 5.2) is not implemented.  Certified bound: ``U(delta)`` of each iterate.
"""

import numpy as np

from ._lp_common import Problem, Tracker, check_graph, check_params, positive
from ._lp_kernels import clique_dual, smooth_dual_grad, smooth_dual_value
from ._trn_kernels import apply_preconditioner, build_preconditioner, hess_vec
from .registry import register_method
from .smoothed_dual import SMOOTH_DEFAULTS, Annealer

__all__ = ["trn_map"]

DEFAULTS = dict(SMOOTH_DEFAULTS, lam0=1.0, eps_rho=1e-4, max_cg=250, max_block=256)


def trn_map(graph, **params):
    """MAP by trust-region Newton-CG on the smoothed dual, with annealing.

    Parameters
    ----------
    graph : FactorGraph
    max_iter, time_limit, tol, stall_iter, local_search, verbose
        As for :func:`structlearn.inference.dual_decomposition.psdd_map`
        (one iteration = one Newton step).
    tau, tau_max, anneal_factor, anneal_beta, grad_tol
        As for :func:`structlearn.inference.smoothed_dual.fista_map`.
    lam0 : float, default=1.0
        Initial damping.
    eps_rho : float, default=1e-4
        Backtrack along the Newton direction when the ratio is below this.
    max_cg : int, default=250
    max_block : int, default=256
        Largest clique block (sum of the labels of its variables) inverted
        exactly in the preconditioner; larger cliques use the block diagonal.

    Returns
    -------
    result : MapResult
    """
    check_graph(graph)
    p = check_params("trn", params, DEFAULTS)
    ann = Annealer(p)
    lam = positive(p, "lam0")
    eps_rho = positive(p, "eps_rho")
    prob = Problem(graph)
    tr = Tracker(prob, "trn", p)
    if graph.n_factors == 0:
        return tr.trivial()
    nu = prob.unary.shape[0]
    theta_hat, mu_node, wnode = np.empty(nu), np.empty(nu), np.empty(nu)
    fac_marg, grad, scratch = np.empty(prob.n_msg), np.empty(prob.n_msg), np.empty(prob.n_msg)
    hv, z = np.empty(prob.n_msg), np.empty(prob.n_msg)
    labels = np.zeros(graph.n_vars, dtype=np.int64)
    eo = prob.edge_offsets
    m = eo[graph.scope_indptr[1:]] - eo[graph.scope_indptr[:-1]]
    diag_only = m > int(p["max_block"])
    bsize = np.where(diag_only, m, m * m)
    blk_offsets = np.zeros(graph.n_factors + 1, dtype=np.int64)
    np.cumsum(bsize, out=blk_offsets[1:])
    blocks = np.empty(int(blk_offsets[-1]))
    delta = np.zeros(prob.n_msg)
    k = 0
    while True:
        k += 1
        tau = ann.tau
        f0 = smooth_dual_grad(prob.prob, delta, tau, theta_hat, mu_node, fac_marg, grad,
                              prob.lab, prob.zf)
        gnorm = float(np.sqrt(grad @ grad))
        ginf = float(np.max(np.abs(grad))) if grad.size else 0.0
        if ann.done(ginf):
            tr.status = "stall"
            break
        if ann.update(gnorm):
            continue
        eps_tau = 0.1 if tau < ann.tau_max / 4 else (0.01 if tau < ann.tau_max / 2 else 0.001)
        forcing = min(eps_tau / k, np.sqrt(gnorm))
        build_preconditioner(prob.prob, delta, tau, prob.zf, mu_node, fac_marg, lam,
                             blk_offsets, blocks, diag_only, prob.lab)
        # preconditioned CG on (H + lam I) step = -grad
        step = np.zeros(prob.n_msg)
        r = -grad
        apply_preconditioner(prob.prob, blk_offsets, blocks, diag_only, r, z)
        d = z.copy()
        rz = float(r @ z)
        n_cg = 0
        for n_cg in range(1, int(p["max_cg"]) + 1):
            hess_vec(prob.prob, delta, tau, prob.zf, mu_node, fac_marg, d, hv, prob.lab, wnode)
            hv += lam * d
            dbd = float(d @ hv)
            if dbd <= 0:
                break
            a = rz / dbd
            step += a * d
            r -= a * hv
            if np.sqrt(r @ r) <= forcing * gnorm:
                break
            apply_preconditioner(prob.prob, blk_offsets, blocks, diag_only, r, z)
            rz_new = float(r @ z)
            d = z + (rz_new / rz) * d
            rz = rz_new
        hess_vec(prob.prob, delta, tau, prob.zf, mu_node, fac_marg, step, hv, prob.lab, wnode)
        gp = float(grad @ step)
        pred = gp + 0.5 * float(step @ hv) + 0.5 * lam * float(step @ step)
        f1 = smooth_dual_value(prob.prob, delta + step, tau, theta_hat, scratch, prob.lab)
        ratio = (f1 - f0) / pred if pred < 0 else -1.0
        if ratio < 0.25:
            lam *= 2.0
        elif 0.5 < ratio <= 0.9:
            lam *= 0.5
        elif ratio > 0.9:
            lam *= 0.25
        if ratio >= eps_rho:
            delta = delta + step
        else:
            s = 1.0
            if gp >= 0:  # not a descent direction: fall back to the gradient
                step = -grad / max(1.0, lam)
                gp = -float(grad @ grad) / max(1.0, lam)
            for _ in range(60):
                s *= 0.8
                f1 = smooth_dual_value(prob.prob, delta + s * step, tau, theta_hat, scratch,
                                       prob.lab)
                if f1 <= f0 + 1e-4 * s * gp:
                    delta = delta + s * step
                    break
        u = clique_dual(prob.prob, delta, theta_hat, prob.lab, labels)
        tr.bound(u)
        tr.offer(labels)
        if tr.step(dual=u * prob.scale, smooth_dual=f1 * prob.scale, tau=tau, damping=lam,
                   cg_iter=n_cg, ratio=ratio):
            break
    return tr.result()


register_method("trn", trn_map)
