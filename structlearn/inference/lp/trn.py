"""Trust-region Newton-CG on the smoothed clique dual (``trn``, thesis 5.1
and 5.2).

Minimizes ``U_tau`` (see :mod:`.smoothed_dual`) with damped Newton steps:
``B = H + lam I``; preconditioned CG until ``||r|| <= eta_k ||g||`` with the
forcing sequence ``eta_k = min(eps_tau / k, sqrt(||g||))`` and at most 250 CG
iterations; ratio ``rho = [U(d + p) - U(d)] / [g'p + p'Bp / 2]``; ``lam`` x2
when ``rho < 0.25``, x0.5 for ``rho`` in (0.5, 0.9], x0.25 above 0.9; a
backtracking (Armijo, c = 1e-4, factor 0.8) line search along ``p`` when
``rho < eps_rho``.  Annealing as in :mod:`.smoothed_dual` with the thesis
defaults ``lam0 = 1, alpha = 2, beta = 1/6, eps_rho = 1e-4, zeta = 1e-3,
tau_max = 2**13`` and ``eps_tau = 0.1, 0.01, 0.001`` for ``tau`` below
``tau_max / 4``, below ``tau_max / 2`` and above.  Certified bound:
``U(delta)`` of each iterate.

Curvature model ``H`` (parameter ``hessian``):

* ``"newton"`` (thesis 5.1): the true Hessian through Hessian-vector
  products, with the clique block-diagonal preconditioner (exact blocks up
  to ``max_block`` labels per clique, their diagonal beyond).
* ``"lbfgs"`` (thesis 5.2, the quasi-Newton variant for large graphs): the
  limited-memory BFGS approximation of the Hessian in the compact form of
  Byrd, Nocedal and Schnabel (thesis 4.36) from the last ``memory`` pairs
  ``(s, y)`` of steps and gradient changes, inside the same damped
  trust-region loop; pairs with ``s'y <= 0`` are skipped and the memory is
  cleared when ``tau`` changes (the curvature scales with ``tau``).  CG runs
  unpreconditioned: on identity plus rank ``2 memory`` it ends within
  ``2 memory + 1`` iterations (thesis 4.9).  The thesis applies it to a
  two-chain decomposition of large grids; here it works on the same clique
  dual as ``"newton"``, so each iteration costs one gradient (no Hessian
  pass, no factor blocks to build or invert).
"""

import numpy as np

from ._lp_common import Problem, Tracker, check_graph, check_params, positive
from ._lp_kernels import clique_dual, smooth_dual_grad, smooth_dual_value
from ._trn_kernels import apply_preconditioner, build_preconditioner, hess_vec
from .smoothed_dual import SMOOTH_DEFAULTS, Annealer

__all__ = ["trn_map"]

HESSIANS = ("newton", "lbfgs")
# range of the damping of the trust-region steps
LAM_MIN, LAM_MAX = 1e-10, 1e10
DEFAULTS = dict(SMOOTH_DEFAULTS, lam0=1.0, eps_rho=1e-4, max_cg=250, max_block=256,
                hessian="newton", memory=10)


class _NewtonModel:
    """True Hessian of U_tau at the current iterate (thesis 5.1.1, 5.1.4)."""

    def __init__(self, prob, max_block, mu_node, fac_marg):
        self.prob = prob
        self.mu_node, self.fac_marg = mu_node, fac_marg
        self.wnode = np.empty(prob.unary.shape[0])
        graph = prob.graph
        eo = prob.edge_offsets
        m = eo[graph.scope_indptr[1:]] - eo[graph.scope_indptr[:-1]]
        self.diag_only = m > max_block
        bsize = np.where(self.diag_only, m, m * m)
        self.blk_offsets = np.zeros(graph.n_factors + 1, dtype=np.int64)
        np.cumsum(bsize, out=self.blk_offsets[1:])
        self.blocks = np.empty(int(self.blk_offsets[-1]))

    def observe(self, delta, grad, tau):
        self.delta, self.tau = delta, tau

    def prepare(self, lam):
        pr = self.prob
        build_preconditioner(pr.prob, self.delta, self.tau, pr.zf, self.mu_node, self.fac_marg,
                             lam, self.blk_offsets, self.blocks, self.diag_only, pr.lab)

    def matvec(self, v, out):
        pr = self.prob
        hess_vec(pr.prob, self.delta, self.tau, pr.zf, self.mu_node, self.fac_marg, v, out,
                 pr.lab, self.wnode)

    def precondition(self, r, out):
        apply_preconditioner(self.prob.prob, self.blk_offsets, self.blocks, self.diag_only, r,
                             out)


class _LbfgsModel:
    """Compact limited-memory BFGS Hessian approximation (thesis 4.36):
    ``B = sigma I - W M^-1 W'`` with ``W = [sigma S, Y]`` and
    ``M = [[sigma S'S, L], [L', -D]]``.  Before the first pair of a
    temperature stage ``B = tau I`` (the Hessian of ``U_tau`` scales with
    ``tau``); ``sigma = y'y / s'y`` of the newest pair after that."""

    def __init__(self, n, memory):
        self.memory = memory
        self.S = np.empty((memory, n))
        self.Y = np.empty((memory, n))
        self.count = 0
        self.prev = None

    def observe(self, delta, grad, tau):
        if self.prev is not None and self.prev[2] == tau:
            s = delta - self.prev[0]
            y = grad - self.prev[1]
            sy = float(s @ y)
            if sy > 1e-12 * float(np.sqrt((s @ s) * (y @ y))):
                if self.count == self.memory:  # drop the oldest pair
                    self.S[:-1] = self.S[1:]
                    self.Y[:-1] = self.Y[1:]
                    self.count -= 1
                self.S[self.count] = s
                self.Y[self.count] = y
                self.count += 1
        elif self.prev is not None:
            self.count = 0
        self.prev = (delta.copy(), grad.copy(), tau)
        self.tau = tau

    def prepare(self, lam):
        c = self.count
        if c == 0:
            self.sigma = self.tau
            return
        S, Y = self.S[:c], self.Y[:c]
        sy = S @ Y.T  # sy[i, j] = s_i' y_j
        self.sigma = float(Y[c - 1] @ Y[c - 1]) / float(sy[c - 1, c - 1])
        M = np.empty((2 * c, 2 * c))
        M[:c, :c] = self.sigma * (S @ S.T)
        M[:c, c:] = np.tril(sy, -1)
        M[c:, :c] = M[:c, c:].T
        M[c:, c:] = -np.diag(np.diag(sy))
        self.Minv = np.linalg.pinv(M)

    def matvec(self, v, out):
        c = self.count
        np.multiply(v, self.sigma, out=out)
        if c:
            S, Y = self.S[:c], self.Y[:c]
            w = self.Minv @ np.concatenate((self.sigma * (S @ v), Y @ v))
            out -= self.sigma * (w[:c] @ S) + w[c:] @ Y

    def precondition(self, r, out):
        out[:] = r


def trn_map(graph, **params):
    """MAP by trust-region Newton-CG on the smoothed dual, with annealing.

    Parameters
    ----------
    graph : FactorGraph
    max_iter, time_limit, tol, stall_iter, bound_stall_iter, local_search, verbose
        As for :func:`structlearn.inference.lp.dual_decomposition.psdd_map`
        (one iteration = one Newton step).
    tau, tau_max, anneal_factor, anneal_beta, grad_tol
        As for :func:`structlearn.inference.lp.smoothed_dual.fista_map`.
    hessian : {"newton", "lbfgs"}, default="newton"
        Curvature model: the true Hessian (thesis 5.1) or the limited-memory
        BFGS approximation (the quasi-Newton variant of thesis 5.2).
    memory : int, default=10
        Number of ``(s, y)`` pairs kept by ``hessian="lbfgs"`` (the thesis
        gives no value; 10 is the usual L-BFGS choice).
    lam0 : float, default=1.0
        Initial damping.
    eps_rho : float, default=1e-4
        Backtrack along the Newton direction when the ratio is below this.
    max_cg : int, default=250
    max_block : int, default=256
        Largest clique block (sum of the labels of its variables) inverted
        exactly in the preconditioner; larger cliques use the block diagonal
        (``hessian="newton"`` only).

    Returns
    -------
    result : MapResult
    """
    check_graph(graph)
    p = check_params("trn", params, DEFAULTS)
    hessian = p["hessian"]
    if hessian not in HESSIANS:
        raise ValueError(f"hessian must be one of {', '.join(map(repr, HESSIANS))}, "
                         f"got {hessian!r}")
    for name in ("memory", "max_cg", "max_block"):
        v = p[name]
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    ann = Annealer(p)
    lam = positive(p, "lam0")
    eps_rho = positive(p, "eps_rho")
    prob = Problem(graph)
    tr = Tracker(prob, "trn", p)
    if graph.n_factors == 0:
        return tr.trivial()
    nu = prob.unary.shape[0]
    theta_hat, mu_node = np.empty(nu), np.empty(nu)
    fac_marg, grad, scratch = np.empty(prob.n_msg), np.empty(prob.n_msg), np.empty(prob.n_msg)
    hv, z = np.empty(prob.n_msg), np.empty(prob.n_msg)
    labels = np.zeros(graph.n_vars, dtype=np.int64)
    if hessian == "newton":
        model = _NewtonModel(prob, int(p["max_block"]), mu_node, fac_marg)
    else:
        model = _LbfgsModel(prob.n_msg, int(p["memory"]))
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
        model.observe(delta, grad, tau)
        eps_tau = 0.1 if tau < ann.tau_max / 4 else (0.01 if tau < ann.tau_max / 2 else 0.001)
        forcing = min(eps_tau / k, np.sqrt(gnorm))
        model.prepare(lam)
        # preconditioned CG on (B + lam I) step = -grad
        step = np.zeros(prob.n_msg)
        r = -grad
        model.precondition(r, z)
        d = z.copy()
        rz = float(r @ z)
        n_cg = 0
        for n_cg in range(1, int(p["max_cg"]) + 1):
            model.matvec(d, hv)
            hv += lam * d
            dbd = float(d @ hv)
            if dbd <= 0:
                break
            a = rz / dbd
            step += a * d
            r -= a * hv
            if np.sqrt(r @ r) <= forcing * gnorm or tr.out_of_time():
                break  # a truncated CG step is still a descent direction
            model.precondition(r, z)
            rz_new = float(r @ z)
            d = z + (rz_new / rz) * d
            rz = rz_new
        model.matvec(step, hv)
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
        # long runs (a time limit lifts the iteration cap) would otherwise
        # drive the damping to 0 or inf and the preconditioner to NaN
        lam = min(max(lam, LAM_MIN), LAM_MAX)
        if ratio >= eps_rho:
            delta = delta + step
        else:
            s = 1.0
            if gp >= 0:  # not a descent direction: fall back to the gradient
                step = -grad / max(1.0, lam)
                gp = -float(grad @ grad) / max(1.0, lam)
            for _ in range(60):
                if tr.out_of_time():
                    break
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


# read by the MAP registry when it first loads its back-ends
METHODS = (
    dict(name="trn", solver=trn_map, params=DEFAULTS, tightening=True),
)
