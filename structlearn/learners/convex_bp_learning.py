"""CRF learning with convex BP: full-BP, inner-dual and block-BP learning (BBPL).

The model is a templated pairwise CRF over one or more graphs stored side by
side (the training samples): node ``u`` with features ``x_u`` (d,) scores
state ``a`` by ``W[a] @ x_u`` and edge ``e = (u, v)`` in bin ``c_e`` scores
``(a, b)`` by ``V[c_e, a, b]``. Learning minimizes (Lu, Liu & Huang, eqs.
13-16)::

    L(W, V) = (1 / N) sum_i [B_i(theta_i(W, V)) - <theta_i, y_i>]
              + (alpha / 2) (||W||^2 + ||V||^2)

where ``B_i`` is the convex-BP free-energy bound of sample ``i`` (see
:mod:`structlearn.inference.marginals.convex_bp`) and ``N`` the number of samples, by
gradient descent with a fixed step. The gradient is the expected features
under the beliefs minus the observed ones. The methods differ only in how
much inference runs per step:

``"full_bp"`` (Algorithm 1)
    BP on every node until convergence, then one step.
``"inner_dual"``
    One BP sweep over every node per step (messages persist).
``"bbpl"`` (Algorithm 2)
    BP until convergence on one block of nodes (everything outside fixed),
    then one step with the incrementally updated gradient (eqs. 9-11, 16):
    only the block's nodes and the edges touching it change their beliefs
    and their contribution to the expected features. The cost of an
    iteration depends on the block size, not on the graph size.

All three share the messages' warm start across steps, the step-size rule
and the stopping rule, and converge to the same optimum.
"""

import logging
import time
from dataclasses import dataclass, field

import numpy as np
from sklearn.utils import check_random_state

from .._progress_bar import progress_tick
from ..inference.marginals.convex_bp import incidence_lists, trw_counting_numbers

__all__ = [
    "BPLearningResult",
    "fit_convex_bp_crf",
    "grid_block_labels",
    "index_block_labels",
    "crf_objective",
]

logger = logging.getLogger(__name__)

METHODS = ("full_bp", "inner_dual", "bbpl")


@dataclass
class BPLearningResult:
    """Output of :func:`fit_convex_bp_crf`.

    Attributes
    ----------
    W : ndarray (K, d)
        Unary weights.
    V : ndarray (n_bins, K, K)
        Pairwise weights per edge bin.
    n_iter : int
        Passes made: parameter updates for full_bp and inner_dual, passes
        over all blocks for bbpl (as counted by ``max_iter``).
    n_updates : int
        Parameter updates made (``n_iter`` times the number of blocks for
        bbpl).
    converged : bool
    history : list of dict
        Per record (every update for full_bp / inner_dual, every pass over
        the blocks for bbpl): ``iter``, ``time`` (s since start),
        ``objective`` (exact at converged BP; full_bp only, else None),
        ``grad_norm`` (max-norm of the gradient used), ``step_norm``
        (2-norm of the last parameter change), ``bp_sweeps`` (sweeps since
        the previous record).
    learning_rate : float
    """

    W: np.ndarray
    V: np.ndarray
    n_iter: int
    n_updates: int
    converged: bool
    history: list = field(default_factory=list)
    learning_rate: float = 0.0


def index_block_labels(sample_ptr, n_blocks):
    """Split every sample's nodes into ``n_blocks`` contiguous index ranges.

    Parameters
    ----------
    sample_ptr : int array (n_samples + 1,)
        Sample ``i`` owns nodes ``sample_ptr[i]:sample_ptr[i+1]``.
    n_blocks : int

    Returns
    -------
    labels : ndarray of int64, shape (sample_ptr[-1],)
        Block of every node (block ``b`` of all samples share label ``b``).
    """
    sample_ptr = np.asarray(sample_ptr, dtype=np.int64)
    sizes = np.diff(sample_ptr)
    local = np.arange(sample_ptr[-1]) - np.repeat(sample_ptr[:-1], sizes)
    return np.minimum(local * n_blocks // np.repeat(np.maximum(sizes, 1), sizes), n_blocks - 1)


def grid_block_labels(height, width, n_block_rows, n_block_cols):
    """Block label of every node of a ``height x width`` grid cut into tiles.

    Nodes are numbered ``r * width + c`` (as in :func:`structlearn.graphs.grid_edges`).

    Returns
    -------
    labels : ndarray of int64, shape (height * width,)
        Tile index ``tile_row * n_block_cols + tile_col``.
    """
    for name, v in (("height", height), ("width", width), ("n_block_rows", n_block_rows),
                    ("n_block_cols", n_block_cols)):  # fmt: skip
        if int(v) != v or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    if n_block_rows > height or n_block_cols > width:
        raise ValueError(
            f"cannot cut a {height}x{width} grid into {n_block_rows}x{n_block_cols} tiles"
        )
    r = np.arange(height) * n_block_rows // height
    c = np.arange(width) * n_block_cols // width
    return (r[:, None] * n_block_cols + c[None, :]).ravel().astype(np.int64)


def _blocks_csr(labels, edges):
    """Nodes and incident edges of every block, CSR."""
    labels = np.asarray(labels, dtype=np.int64)
    _, labels = np.unique(labels, return_inverse=True)
    n_blocks = int(labels.max()) + 1 if labels.size else 0
    order = np.argsort(labels, kind="stable")
    node_ptr = np.zeros(n_blocks + 1, dtype=np.int64)
    np.cumsum(np.bincount(labels, minlength=n_blocks), out=node_ptr[1:])
    E = edges.shape[0]
    lu = labels[edges[:, 0]]
    lv = labels[edges[:, 1]]
    eid = np.concatenate([np.arange(E), np.arange(E)[lu != lv]])
    elab = np.concatenate([lu, lv[lu != lv]])
    eorder = np.argsort(elab, kind="stable")
    edge_ptr = np.zeros(n_blocks + 1, dtype=np.int64)
    np.cumsum(np.bincount(elab, minlength=n_blocks), out=edge_ptr[1:])
    return (
        node_ptr,
        np.ascontiguousarray(order, dtype=np.int64),
        edge_ptr,
        np.ascontiguousarray(eid[eorder], dtype=np.int64),
    )


def _empirical(X, y, edges, bins, K, n_bins):
    """Observed feature sums; a 2-D ``y`` (n_nodes, n_draws) averages over the draws."""
    Y = y[:, None] if y.ndim == 1 else y
    n_draws = Y.shape[1]
    emp_node = np.zeros((K, X.shape[1]))
    emp_edge = np.zeros(n_bins * K * K)
    for r in range(n_draws):
        yr = Y[:, r]
        np.add.at(emp_node, yr, X)
        emp_edge += np.bincount(
            (bins * K + yr[edges[:, 0]]) * K + yr[edges[:, 1]], minlength=n_bins * K * K
        )
    return emp_node / n_draws, emp_edge.reshape(n_bins, K, K) / n_draws


def _auto_learning_rate(X, bins, n_bins, n_samples, alpha, rho_node, rho_edge):
    """1 / (alpha + L) with a curvature estimate L of the mean negative log-likelihood.

    A softmax covariance has spectral norm <= 1/2; tempering by a counting
    number rho multiplies it by 1/rho. Unary part: lambda_max(X^T X) / 2;
    pairwise part: the largest bin count / 2 (both per sample).
    """
    d = X.shape[1]
    if X.shape[0] and d:
        xtx = (X / np.sqrt(rho_node)[:, None]).T @ (X / np.sqrt(rho_node)[:, None])
        lam = float(np.linalg.eigvalsh(xtx)[-1]) if d > 1 else float(xtx[0, 0])
    else:
        lam = 0.0
    if bins.shape[0]:
        pw = float(np.max(np.bincount(bins, weights=1.0 / rho_edge, minlength=n_bins)))
    else:
        pw = 0.0
    L = 0.5 * (lam + pw) / n_samples
    return 1.0 / (alpha + L)


def _learning_state(X, W, V, bins, edges, rho_node, rho_edge, max_sweeps, tol):
    """Messages, beliefs and expected features after BP on every node from zero messages.

    Returns
    -------
    model : PairwiseModel
        Unary scores ``X W^T``, the pairwise weights ``V`` per bin and the
        incidence lists (:mod:`structlearn.inference.marginals._convex_bp_kernels`).
    messages : BPMessages
    beliefs : StoredBeliefs
    info : float64 (2,)
        BP's sweeps and last change.
    """
    from ..inference.marginals._convex_bp_kernels import (BPMessages, PairwiseModel,
                                                           StoredBeliefs, block_learning_step)

    n, d = X.shape
    K = W.shape[0]
    E = edges.shape[0]
    adj_ptr, adj_edge, adj_side = incidence_lists(n, edges)
    theta_node = np.ascontiguousarray(X @ W.T)
    s = theta_node / rho_node[:, None]
    s -= s.max(axis=1, keepdims=True)
    logtau = np.ascontiguousarray(s - np.log(np.exp(s).sum(axis=1, keepdims=True)))
    model = PairwiseModel(theta_node, V, bins, edges, adj_ptr, adj_edge, adj_side, rho_node,
                          rho_edge)
    messages = BPMessages(np.zeros((E, 2, K)), logtau)
    beliefs = StoredBeliefs(np.zeros((n, K)), np.zeros((E, K, K)), np.zeros((K, d)),
                            np.zeros((V.shape[0], K, K)))
    info = np.zeros(2)
    block_learning_step(np.arange(n, dtype=np.int64), np.arange(E, dtype=np.int64),
                        int(max_sweeps), float(tol), X, W, model, messages, beliefs, info)
    return model, messages, beliefs, info


def _block_step_scale(n_blocks):
    """Step reduction for BBPL with ``n_blocks`` blocks (empirical rule).

    Every BBPL step uses beliefs that are fresh on one block and stale
    elsewhere; with the full-gradient step the iterates end in a limit cycle
    once blocks are small (seen from 20 blocks on a 20x20 grid). The
    convergence theorem asks for a step shrinking with the per-step
    contraction of the block update. We use ``2 / sqrt(n_blocks)`` up to 25
    blocks and ``10 / n_blocks`` beyond (continuous at 25, 1 for <= 4 blocks).
    """
    if n_blocks <= 4:
        return 1.0
    if n_blocks <= 25:
        return 2.0 / np.sqrt(n_blocks)
    return 10.0 / n_blocks


def fit_convex_bp_crf(
    X,
    y,
    edges,
    edge_bins,
    *,
    n_states,
    n_bins,
    sample_ptr,
    method="bbpl",
    alpha=1e-3,
    learning_rate="auto",
    max_iter=1000,
    tol=1e-5,
    block_labels=None,
    n_blocks=20,
    block_order="sequential",
    inner_max_iter=200,
    inner_tol=1e-6,
    rho_node=None,
    rho_edge=None,
    W_init=None,
    V_init=None,
    random_state=None,
    verbose=0,
    callback=None,
    max_time=None,
):
    """Fit a templated pairwise CRF by convex-BP learning.

    Parameters
    ----------
    X : float64 (n_nodes, d)
        Node features of all samples, stacked.
    y : int64 (n_nodes,) or (n_nodes, n_draws)
        Observed states in ``[0, n_states)``. Several draws on the same
        graphs and features (an MRF fitted to ``n_draws`` samples) share one
        inference: the observed features are averaged over the draws.
    edges : int64 (n_edges, 2)
        Edges over the stacked node indices (never across samples).
    edge_bins : int64 (n_edges,)
        Pairwise weight bin of every edge, in ``[0, n_bins)``.
    n_states, n_bins : int
    sample_ptr : int64 (n_samples + 1,)
        Sample ``i`` owns nodes ``sample_ptr[i]:sample_ptr[i+1]``.
    method : {"bbpl", "inner_dual", "full_bp"}, default="bbpl"
    alpha : float, default=1e-3
        L2 penalty (see the module docstring for the objective).
    learning_rate : float or "auto", default="auto"
        Fixed gradient step; "auto" uses ``1 / (alpha + L)`` with a
        curvature bound ``L`` from the features, for bbpl further scaled
        down with the number of blocks (:func:`_block_step_scale`).
    max_iter : int, default=1000
        Maximum number of passes: parameter updates for full_bp and
        inner_dual, passes over all blocks for bbpl.
    tol : float, default=1e-5
        Stop when the max-norm of the gradient (the incrementally updated
        one for bbpl, checked after each pass) is <= tol.
    block_labels : int array (n_nodes,), optional
        Block of every node (bbpl); default: ``n_blocks`` index ranges per
        sample (:func:`index_block_labels`).
    n_blocks : int, default=20
    block_order : {"sequential", "random"}, default="sequential"
        Visit the blocks in order or in a fresh random order every pass.
    inner_max_iter : int, default=200
        Maximum BP sweeps per update (full_bp over the graph, bbpl over a
        block; inner_dual always does one).
    inner_tol : float, default=1e-6
        BP convergence: largest change of a log-belief in a sweep.
    rho_node, rho_edge : arrays, optional
        Counting numbers; default tree-reweighted with node counting numbers
        that keep block BP convergent
        (:func:`structlearn.inference.marginals.convex_bp.trw_counting_numbers`).
    W_init, V_init : arrays, optional
        Starting weights (warm start); zeros by default.
    random_state : int, RandomState or None
        Seeds the spanning forests and the random block order.
    verbose : int, default=0
    callback : callable ``(n_iter, W, V) -> bool``, optional
        Called after every pass (``n_iter`` passes so far); returning True
        stops training.
    max_time : float, optional
        Stop after this many seconds.

    Returns
    -------
    result : BPLearningResult
    """
    from ..inference.marginals._convex_bp_kernels import (LearningBlocks, LearningStep,
                                                           bp_learning_pass, free_energy)

    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if block_order not in ("sequential", "random"):
        raise ValueError(f"block_order must be 'sequential' or 'random', got {block_order!r}")
    if not np.isfinite(alpha) or alpha < 0:
        raise ValueError(f"alpha must be a finite number >= 0, got {alpha!r}")
    rng = check_random_state(random_state)
    forest_seed = rng.randint(np.iinfo(np.int32).max)
    X = np.ascontiguousarray(X, dtype=np.float64)
    y = np.ascontiguousarray(y, dtype=np.int64)
    edges = np.ascontiguousarray(edges, dtype=np.int64)
    bins = np.ascontiguousarray(edge_bins, dtype=np.int64)
    sample_ptr = np.asarray(sample_ptr, dtype=np.int64)
    n, d = X.shape
    K = int(n_states)
    n_samples = sample_ptr.shape[0] - 1
    E = edges.shape[0]
    if rho_node is None or rho_edge is None:
        rn, re = trw_counting_numbers(n, edges, random_state=forest_seed)
        rho_node = rn if rho_node is None else rho_node
        rho_edge = re if rho_edge is None else rho_edge
    rho_node = np.ascontiguousarray(rho_node, dtype=np.float64)
    rho_edge = np.ascontiguousarray(rho_edge, dtype=np.float64)
    if learning_rate == "auto":
        lr = _auto_learning_rate(X, bins, n_bins, n_samples, alpha, rho_node, rho_edge)
    else:
        lr = float(learning_rate)
        if not np.isfinite(lr) or lr <= 0:
            raise ValueError(f"learning_rate must be 'auto' or a positive number, got {learning_rate!r}")
    if method == "bbpl":
        if block_labels is None:
            block_labels = index_block_labels(sample_ptr, int(n_blocks))
        block_labels = np.asarray(block_labels)
        if block_labels.shape != (n,):
            raise ValueError(f"block_labels must have shape ({n},), got {block_labels.shape}")
        node_ptr, block_nodes, edge_ptr, block_edges = _blocks_csr(block_labels, edges)
        n_blk = node_ptr.shape[0] - 1
        if learning_rate == "auto":
            lr *= _block_step_scale(n_blk)
    emp_node, emp_edge = _empirical(X, y, edges, bins, K, n_bins)
    W = np.zeros((K, d)) if W_init is None else np.array(W_init, dtype=np.float64, order="C")
    V = np.zeros((n_bins, K, K)) if V_init is None else np.array(V_init, dtype=np.float64, order="C")

    # state: messages, beliefs and expected features consistent with them
    model, messages, beliefs, _ = _learning_state(X, W, V, bins, edges, rho_node, rho_edge, 0,
                                                  0.0)
    all_nodes = np.arange(n, dtype=np.int64)
    all_edges = np.arange(E, dtype=np.int64)

    if method != "bbpl":
        node_ptr = np.array([0, n], dtype=np.int64)
        block_nodes = all_nodes
        edge_ptr = np.array([0, E], dtype=np.int64)
        block_edges = all_edges
        n_blk = 1
    sweeps = 1 if method == "inner_dual" else int(inner_max_iter)
    itol = 0.0 if method == "inner_dual" else float(inner_tol)
    blocks = LearningBlocks(node_ptr, block_nodes, edge_ptr, block_edges)
    step = LearningStep(sweeps, itol, float(n_samples), float(alpha), lr)

    history = []
    start = time.perf_counter()
    converged = False
    n_iter = 0
    out = np.zeros(4)
    seq_order = np.arange(n_blk, dtype=np.int64)
    for it in range(int(max_iter)):
        order = rng.permutation(n_blk).astype(np.int64) if block_order == "random" else seq_order
        Wp = W.copy() if method == "full_bp" else None
        Vp = V.copy() if method == "full_bp" else None
        bp_learning_pass(order, blocks, X, W, model, messages, beliefs, emp_node, emp_edge,
                         step, out)
        n_iter += 1
        if out[3] != 0.0:
            raise FloatingPointError(
                f"{method} diverged (non-finite gradient); lower learning_rate"
            )
        sweep_count = int(out[0])
        gnorm = float(out[1])
        objective = None
        if method == "full_bp":
            # the step used beliefs at the weights before it: report that objective
            fe = free_energy(model._replace(pool=Vp), messages)
            objective = float(
                (fe - np.sum(Wp * emp_node) - np.sum(Vp * emp_edge)) / n_samples
                + 0.5 * alpha * (np.sum(Wp * Wp) + np.sum(Vp * Vp))
            )
        rec = {
            "iter": it + 1,
            "time": time.perf_counter() - start,
            "objective": np.nan if objective is None else objective,
            "gap": np.nan,
            "grad_norm": gnorm,
            "step_norm": float(out[2]),
            "bp_sweeps": sweep_count,
        }
        history.append(rec)
        progress_tick(rec)
        if verbose:
            logger.info("%s pass %d: grad %.3e step %.3e time %.2fs", method, it + 1, gnorm,
                        rec["step_norm"], rec["time"])  # fmt: skip
        if not np.isfinite(gnorm):
            raise FloatingPointError(
                f"{method} diverged (non-finite gradient); lower learning_rate"
            )
        if gnorm <= tol:
            converged = True
            break
        if callback is not None and callback(n_iter, W, V):
            break
        if max_time is not None and rec["time"] >= max_time:
            break
    return BPLearningResult(W=W, V=V, n_iter=n_iter, n_updates=n_iter * n_blk,
                            converged=converged, history=history, learning_rate=lr)  # fmt: skip


def crf_objective(W, V, X, y, edges, edge_bins, sample_ptr, *, alpha, rho_node, rho_edge,
                  max_iter=1000, tol=1e-9):
    """Exact learning objective and gradient at (W, V): BP run to convergence from scratch.

    Returns
    -------
    objective : float
    grad_W : ndarray (K, d)
    grad_V : ndarray (n_bins, K, K)
    converged : bool
    """
    from ..inference.marginals._convex_bp_kernels import free_energy

    X = np.ascontiguousarray(X, dtype=np.float64)
    y = np.ascontiguousarray(y, dtype=np.int64)
    edges = np.ascontiguousarray(edges, dtype=np.int64)
    bins = np.ascontiguousarray(edge_bins, dtype=np.int64)
    W = np.ascontiguousarray(W, dtype=np.float64)
    V = np.ascontiguousarray(V, dtype=np.float64)
    rho_node = np.ascontiguousarray(rho_node, dtype=np.float64)
    rho_edge = np.ascontiguousarray(rho_edge, dtype=np.float64)
    K = W.shape[0]
    n_bins = V.shape[0]
    n_samples = len(sample_ptr) - 1
    model, messages, beliefs, info = _learning_state(X, W, V, bins, edges, rho_node, rho_edge,
                                                     max_iter, tol)
    exp_node, exp_edge = beliefs.exp_node, beliefs.exp_edge
    emp_node, emp_edge = _empirical(X, y, edges, bins, K, n_bins)
    fe = free_energy(model, messages)
    obj = (fe - np.sum(W * emp_node) - np.sum(V * emp_edge)) / n_samples + 0.5 * alpha * (
        np.sum(W * W) + np.sum(V * V)
    )
    gW = (exp_node - emp_node) / n_samples + alpha * W
    gV = (exp_edge - emp_edge) / n_samples + alpha * V
    return float(obj), gW, gV, bool(info[1] <= tol)
