"""Linear-chain CRF trained by L-BFGS on the exact conditional log-likelihood.

Objective (``N`` sequences, weights ``W`` (K, d) and ``T`` (K, K))::

    f(W, T) = (1 / N) sum_s [log Z_s - score_s(y_s)] + (alpha / 2) (||W||^2 + ||T||^2)

``score_s(z) = sum_t W[z_t] @ x_t + sum_t T[z_t, z_{t+1}]``. ``log Z`` and
the marginals come from the numba forward-backward over all sequences at
once (:func:`structlearn.inference._chain_kernels.forward_backward_batch`);
the gradient is (expected - observed) feature counts. CRFsuite minimizes
``sum_s NLL_s + c2 ||w||^2``, i.e. the same problem with
``alpha = 2 * c2 / N``.
"""

import logging
import time

import numpy as np
import scipy.sparse as sp

__all__ = ["fit_chain_crf_lbfgs", "chain_crf_objective"]

logger = logging.getLogger(__name__)


class _ChainProblem:
    """Cached arrays for repeated objective/gradient evaluations."""

    def __init__(self, Xcat, offsets, codes, n_classes, alpha):
        from ..inference._chain_kernels import forward_backward_batch  # noqa: F401

        self.X = Xcat.tocsr() if sp.issparse(Xcat) else np.ascontiguousarray(Xcat, dtype=np.float64)
        self.XT = self.X.T.tocsr() if sp.issparse(self.X) else None
        self.offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        self.codes = np.ascontiguousarray(codes, dtype=np.int64)
        self.K = int(n_classes)
        self.d = Xcat.shape[1]
        self.n_seq = self.offsets.shape[0] - 1
        self.alpha = float(alpha)
        N = self.X.shape[0]
        K = self.K
        Y = sp.csr_matrix((np.ones(N), (np.arange(N), self.codes)), shape=(N, K))
        emp_W = (Y.T @ self.X)
        self.emp_W = np.asarray(emp_W.todense() if sp.issparse(emp_W) else emp_W)
        pos = np.arange(N - 1)
        inner = np.ones(N - 1, dtype=bool)
        inner[self.offsets[1:-1] - 1] = False  # last token of a sequence has no successor
        pos = pos[inner]
        self.emp_T = np.bincount(
            self.codes[pos] * K + self.codes[pos + 1], minlength=K * K
        ).astype(np.float64).reshape(K, K)
        self.node = np.empty((N, K))
        self.tmarg = np.empty((K, K))
        self.logz = np.empty(self.n_seq)
        self.n_eval = 0

    def split(self, w):
        K, d = self.K, self.d
        return w[: K * d].reshape(K, d), w[K * d :].reshape(K, K)

    def __call__(self, w):
        from ..inference._chain_kernels import forward_backward_batch

        W, T = self.split(w)
        unary = self.X @ W.T
        unary = np.ascontiguousarray(unary, dtype=np.float64)
        T = np.ascontiguousarray(T)
        forward_backward_batch(unary, self.offsets, T, self.node, self.tmarg, self.logz)
        self.n_eval += 1
        n = self.n_seq
        nll = float(self.logz.sum() - np.sum(W * self.emp_W) - np.sum(T * self.emp_T))
        if self.XT is not None:
            gW = (self.XT @ self.node).T
        else:
            gW = self.node.T @ self.X
        gW = (gW - self.emp_W) / n + self.alpha * W
        gT = (self.tmarg - self.emp_T) / n + self.alpha * T
        f = nll / n + 0.5 * self.alpha * float(w @ w)
        return f, np.concatenate([gW.ravel(), gT.ravel()])


def chain_crf_objective(W, T, Xcat, offsets, codes, *, alpha=0.0):
    """Objective and gradient of the chain CRF at (W, T).

    Returns
    -------
    f : float
    grad_W : ndarray (K, d)
    grad_T : ndarray (K, K)
    """
    W = np.asarray(W, dtype=np.float64)
    prob = _ChainProblem(Xcat, offsets, codes, W.shape[0], alpha)
    f, g = prob(np.concatenate([W.ravel(), np.asarray(T, dtype=np.float64).ravel()]))
    gW, gT = prob.split(g)
    return f, gW.copy(), gT.copy()


def _two_loop(g, S, Y, rho):
    """L-BFGS direction -H g from the stored pairs (oldest first)."""
    q = g.copy()
    a = np.empty(len(S))
    for i in range(len(S) - 1, -1, -1):
        a[i] = rho[i] * (S[i] @ q)
        q -= a[i] * Y[i]
    if S:
        q *= (S[-1] @ Y[-1]) / (Y[-1] @ Y[-1])
    for i in range(len(S)):
        b = rho[i] * (Y[i] @ q)
        q += (a[i] - b) * S[i]
    return -q


def fit_chain_crf_lbfgs(
    Xcat,
    offsets,
    codes,
    n_classes,
    *,
    alpha=1e-4,
    max_iter=100,
    tol=1e-5,
    period=10,
    memory=6,
    W_init=None,
    T_init=None,
    verbose=0,
):
    """Fit a linear-chain CRF by L-BFGS.

    Limited-memory BFGS (two-loop recursion, ``memory`` pairs, pairs with
    non-positive curvature skipped) with a backtracking Armijo line search
    that tries the unit step first (``1 / ||g||`` on the first iteration).

    Parameters
    ----------
    Xcat : csr_matrix or ndarray (n_tokens, d)
        Stacked token features.
    offsets : int64 (n_seq + 1,)
    codes : int64 (n_tokens,)
        Labels in ``[0, n_classes)``.
    n_classes : int
    alpha : float, default=1e-4
        L2 penalty (objective in the module docstring).
    max_iter : int, default=100
        Maximum L-BFGS iterations.
    tol : float, default=1e-5
        Stop when the objective improved by less than ``tol`` (relative)
        over the last ``period`` iterations, or when
        ``||g|| <= tol * max(1, ||w||)`` (CRFsuite's rules).
    period : int, default=10
    memory : int, default=6
        Number of stored correction pairs.
    W_init, T_init : arrays, optional
        Warm start.
    verbose : int, default=0

    Returns
    -------
    W : ndarray (K, d)
    T : ndarray (K, K)
    history : list of dict
        Per iteration: ``iter``, ``time``, ``objective``, ``step_norm``,
        ``n_eval`` (objective evaluations so far).
    converged : bool
    n_iter : int
    """
    K = int(n_classes)
    prob = _ChainProblem(Xcat, offsets, codes, K, alpha)
    d = prob.d
    w = np.zeros(K * d + K * K)
    if W_init is not None:
        w[: K * d] = np.asarray(W_init, dtype=np.float64).ravel()
    if T_init is not None:
        w[K * d :] = np.asarray(T_init, dtype=np.float64).ravel()
    history = []
    start = time.perf_counter()
    f, g = prob(w)
    S, Y, rho = [], [], []
    converged = False
    n_iter = 0
    for it in range(int(max_iter)):
        gnorm = float(np.linalg.norm(g))
        if gnorm <= tol * max(1.0, float(np.linalg.norm(w))):
            converged = True
            break
        p = _two_loop(g, S, Y, rho)
        slope = float(g @ p)
        if slope >= 0:  # not a descent direction: restart from the gradient
            S, Y, rho = [], [], []
            p = -g
            slope = -gnorm * gnorm
        step = 1.0 if S else 1.0 / gnorm
        while True:
            w_new = w + step * p
            f_new, g_new = prob(w_new)
            if f_new <= f + 1e-4 * step * slope or step < 1e-20:
                break
            step *= 0.5
        s_vec = w_new - w
        y_vec = g_new - g
        sy = float(s_vec @ y_vec)
        if sy > 1e-10 * float(y_vec @ y_vec):
            S.append(s_vec)
            Y.append(y_vec)
            rho.append(1.0 / sy)
            if len(S) > memory:
                S.pop(0)
                Y.pop(0)
                rho.pop(0)
        w, f, g = w_new, f_new, g_new
        n_iter += 1
        rec = {
            "iter": n_iter,
            "time": time.perf_counter() - start,
            "objective": float(f),
            "step_norm": float(np.linalg.norm(s_vec)),
            "n_eval": prob.n_eval,
        }
        history.append(rec)
        if verbose:
            logger.info("lbfgs iter %d: objective %.6f time %.2fs", n_iter, f, rec["time"])
        if len(history) > period:
            old = history[-1 - period]["objective"]
            if abs(old - f) <= tol * max(abs(f), 1e-300):
                converged = True
                break
        if step < 1e-20:
            break
    W, T = prob.split(w)
    return np.ascontiguousarray(W.copy()), np.ascontiguousarray(T.copy()), history, converged, n_iter
