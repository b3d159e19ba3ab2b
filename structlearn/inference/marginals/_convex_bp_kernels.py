"""Numba kernels for convex belief propagation on pairwise graphs (log domain).

The model: ``n`` nodes with ``K`` states each, unary scores
``theta_node[u, a]``, and edges ``e = (edges[e, 0], edges[e, 1])`` whose
score table is ``pool[table_id[e], a, b]`` for ``x_u = a`` (first endpoint)
and ``x_v = b`` (second endpoint). Several disjoint graphs (e.g. the
training samples of a CRF) are simply stored side by side.

Convex BP maximizes the convex free energy over the local polytope::

    F(tau) = <theta, tau> + sum_u rho_u H(tau_u)
             + sum_e rho_e [H(tau_e) - H(tau_u) - H(tau_v)]

whose maximum ``B(theta)`` upper-bounds ``log Z`` for tree-reweighted
counting numbers (``rho_u = 1``, ``rho_e`` edge appearance probabilities of
spanning trees) and equals it on trees with ``rho = 1``.

State: ``nu[e, s, :]`` is the log-message from edge ``e`` into its endpoint
``edges[e, s]`` (the lambda of the update equations); ``logtau[u, :]`` the
normalized log-belief of node ``u``. A node update (one block-coordinate
step of the dual, as in norm-product BP) recomputes every message into
``u`` from the neighbours' beliefs and messages::

    nu[e -> u](a) = rho_e * log sum_b exp((theta_e(a, b) - nu[e -> v](b)) / rho_e
                                          + logtau_v(b))

and then the belief ``logtau_u = (theta_u + sum_e nu[e -> u]) / rho_u``
(normalized). Edge beliefs are::

    tau_e(a, b) ~ exp((theta_e(a, b) - nu[e -> u](a) - nu[e -> v](b)) / rho_e)
                  * tau_u(a) * tau_v(b)

Every log-sum-exp subtracts its maximum first (numerically stable
sum-product). No validation happens here; callers pass C-contiguous float64
/ int64 arrays and allocate the outputs.  The kernels take the model as a
:class:`PairwiseModel`, the messages and beliefs as :class:`BPMessages`,
and, for learning, the stored beliefs as :class:`StoredBeliefs`.
"""

from typing import NamedTuple

import numba as nb
import numpy as np


class PairwiseModel(NamedTuple):
    """A pairwise model with its counting numbers and incidence lists.

    Attributes
    ----------
    theta_node : float64 (n, K)
        Unary scores.
    pool : float64 (T, K, K)
        Pairwise tables; edge ``e`` uses ``pool[table_id[e]]``.
    table_id : int64 (E,)
    edges : int64 (E, 2)
    adj_ptr, adj_edge, adj_side : int64
        Incidence lists: node ``u`` touches edges
        ``adj_edge[adj_ptr[u]:adj_ptr[u+1]]`` at end ``adj_side[...]``.
    rho_node : float64 (n,)
    rho_edge : float64 (E,)
    """

    theta_node: np.ndarray
    pool: np.ndarray
    table_id: np.ndarray
    edges: np.ndarray
    adj_ptr: np.ndarray
    adj_edge: np.ndarray
    adj_side: np.ndarray
    rho_node: np.ndarray
    rho_edge: np.ndarray


class BPMessages(NamedTuple):
    """Convex BP's state, updated in place: ``nu`` float64 (E, 2, K), the
    log-messages into each edge's endpoints, and ``logtau`` float64 (n, K),
    the normalized node log-beliefs."""

    nu: np.ndarray
    logtau: np.ndarray


class StoredBeliefs(NamedTuple):
    """Beliefs kept by BP learning and the expected features they sum to.

    Attributes
    ----------
    tau_node : float64 (n, K)
    tau_edge : float64 (E, K, K)
    exp_node : float64 (K, d)
        ``sum_u tau_u x_u^T``.
    exp_edge : float64 (T, K, K)
        ``sum_e tau_e`` per table.
    """

    tau_node: np.ndarray
    tau_edge: np.ndarray
    exp_node: np.ndarray
    exp_edge: np.ndarray


class LearningBlocks(NamedTuple):
    """Block ``b`` owns nodes ``block_nodes[node_ptr[b]:node_ptr[b+1]]`` and
    the edges ``block_edges[edge_ptr[b]:edge_ptr[b+1]]`` touching them."""

    node_ptr: np.ndarray
    block_nodes: np.ndarray
    edge_ptr: np.ndarray
    block_edges: np.ndarray


class LearningStep(NamedTuple):
    """Settings of a BP learning pass: the block BP's ``max_sweeps`` and
    ``tol``, ``n_samples``, the L2 weight ``alpha`` and the step ``lr``."""

    max_sweeps: int
    tol: float
    n_samples: float
    alpha: float
    lr: float


@nb.njit(cache=True)
def _update_node(u, model, messages, w, msg, s):
    """Recompute all messages into ``u`` and its belief; return max |change| of
    logtau_u (``w``, ``msg``, ``s``: float64 (K,) scratch)."""
    theta_node, pool, table_id, edges = model.theta_node, model.pool, model.table_id, model.edges
    adj_ptr, adj_edge, adj_side = model.adj_ptr, model.adj_edge, model.adj_side
    rho_node, rho_edge = model.rho_node, model.rho_edge
    nu, logtau = messages
    K = theta_node.shape[1]
    for a in range(K):
        s[a] = theta_node[u, a]
    for idx in range(adj_ptr[u], adj_ptr[u + 1]):
        e = adj_edge[idx]
        side = adj_side[idx]
        v = edges[e, 1 - side]
        re = rho_edge[e]
        inv = 1.0 / re
        t = table_id[e]
        for b in range(K):
            w[b] = logtau[v, b] - nu[e, 1 - side, b] * inv
        mmax = -np.inf
        for a in range(K):
            mx = -np.inf
            if side == 0:
                for b in range(K):
                    val = pool[t, a, b] * inv + w[b]
                    if val > mx:
                        mx = val
                sm = 0.0
                for b in range(K):
                    sm += np.exp(pool[t, a, b] * inv + w[b] - mx)
            else:
                for b in range(K):
                    val = pool[t, b, a] * inv + w[b]
                    if val > mx:
                        mx = val
                sm = 0.0
                for b in range(K):
                    sm += np.exp(pool[t, b, a] * inv + w[b] - mx)
            m = re * (mx + np.log(sm))
            msg[a] = m
            if m > mmax:
                mmax = m
        for a in range(K):
            val = msg[a] - mmax
            nu[e, side, a] = val
            s[a] += val
    inv_u = 1.0 / rho_node[u]
    mx = -np.inf
    for a in range(K):
        s[a] *= inv_u
        if s[a] > mx:
            mx = s[a]
    sm = 0.0
    for a in range(K):
        sm += np.exp(s[a] - mx)
    lz = mx + np.log(sm)
    change = 0.0
    for a in range(K):
        val = s[a] - lz
        d = abs(val - logtau[u, a])
        if d > change:
            change = d
        logtau[u, a] = val
    return change


@nb.njit(cache=True)
def bp_sweeps(nodes, max_sweeps, tol, model, messages, info):
    """Sweep node updates over ``nodes`` (in order) until converged.

    Parameters
    ----------
    nodes : int64 (m,)
        Nodes to update; all others (and their messages) stay fixed.
    max_sweeps : int
    tol : float
        Stop after a sweep whose largest change of a log-belief is <= tol.
    model : PairwiseModel
    messages : BPMessages
        Updated in place.
    info : float64 (2,)
        Receives (number of sweeps, last sweep's largest change).
    """
    K = model.theta_node.shape[1]
    w = np.empty(K)
    msg = np.empty(K)
    s = np.empty(K)
    change = np.inf
    it = 0
    while it < max_sweeps:
        change = 0.0
        for i in range(nodes.shape[0]):
            c = _update_node(nodes[i], model, messages, w, msg, s)
            if c > change:
                change = c
        it += 1
        if change <= tol:
            break
    info[0] = it
    info[1] = change


@nb.njit(cache=True)
def _edge_belief(e, model, messages, out):
    """Normalized belief table of edge ``e`` into ``out`` (K, K)."""
    pool, table_id, edges, rho_edge = model.pool, model.table_id, model.edges, model.rho_edge
    nu, logtau = messages
    K = out.shape[0]
    u = edges[e, 0]
    v = edges[e, 1]
    t = table_id[e]
    inv = 1.0 / rho_edge[e]
    mx = -np.inf
    for a in range(K):
        ca = logtau[u, a] - nu[e, 0, a] * inv
        for b in range(K):
            val = pool[t, a, b] * inv + ca + logtau[v, b] - nu[e, 1, b] * inv
            out[a, b] = val
            if val > mx:
                mx = val
    sm = 0.0
    for a in range(K):
        for b in range(K):
            p = np.exp(out[a, b] - mx)
            out[a, b] = p
            sm += p
    for a in range(K):
        for b in range(K):
            out[a, b] /= sm


@nb.njit(cache=True)
def edge_beliefs(edge_list, model, messages, out):
    """Belief tables of the edges in ``edge_list``; ``out[i]`` for ``edge_list[i]``.

    out : float64 (m, K, K)
    """
    for i in range(edge_list.shape[0]):
        _edge_belief(edge_list[i], model, messages, out[i])


@nb.njit(cache=True)
def free_energy(model, messages):
    """Convex free energy F(tau) at the current beliefs (= B(theta) at a fixed point).

    Returns
    -------
    value : float
    """
    theta_node, pool, table_id, edges = model.theta_node, model.pool, model.table_id, model.edges
    rho_node, rho_edge = model.rho_node, model.rho_edge
    logtau = messages.logtau
    n, K = theta_node.shape
    total = 0.0
    for u in range(n):
        h = 0.0
        for a in range(K):
            lp = logtau[u, a]
            p = np.exp(lp)
            if p > 0.0:
                total += p * theta_node[u, a]
                h -= p * lp
        total += rho_node[u] * h
    tab = np.empty((K, K))
    for e in range(edges.shape[0]):
        _edge_belief(e, model, messages, tab)
        u = edges[e, 0]
        v = edges[e, 1]
        t = table_id[e]
        # <theta_e, tau_e> + rho_e * (H(tau_e) + sum tau_e log tau_u + sum tau_e log tau_v)
        acc = 0.0
        ent = 0.0
        for a in range(K):
            for b in range(K):
                p = tab[a, b]
                if p > 0.0:
                    acc += p * pool[t, a, b]
                    ent += p * (logtau[u, a] + logtau[v, b] - np.log(p))
        total += acc + rho_edge[e] * ent
    return total


@nb.njit(cache=True)
def unary_scores(nodes, X, W, theta_node):
    """theta_node[u] = W @ X[u] for u in ``nodes``; W (K, d), X (n, d)."""
    K, d = W.shape
    for i in range(nodes.shape[0]):
        u = nodes[i]
        for a in range(K):
            acc = 0.0
            for j in range(d):
                acc += W[a, j] * X[u, j]
            theta_node[u, a] = acc


@nb.njit(cache=True)
def block_learning_step(block_nodes, block_edges, max_sweeps, tol, X, W, model, messages,
                        beliefs, info):
    """One block step of BP learning with incremental expected features (eq. 9-11, 16).

    Recomputes the unary scores of the block's nodes from ``X`` and ``W``,
    runs BP on the block (everything outside it fixed) and replaces the
    block's stored node and edge beliefs, adding the differences into the
    expected feature sums.

    Parameters
    ----------
    block_nodes : int64 (m,)
    block_edges : int64 (q,)
        Edges with at least one endpoint in the block.
    max_sweeps, tol : BP stopping rule on the block.
    X : float64 (n, d) node features; W : float64 (K, d) unary weights.
    model : PairwiseModel
        ``pool`` holds the pairwise weights per edge bin, ``table_id`` the
        edge bins; ``theta_node`` is updated for the block's nodes.
    messages : BPMessages
    beliefs : StoredBeliefs
        Updated for the block (the expected sums incrementally).
    info : float64 (2,)
        Receives (BP sweeps, last change).
    """
    K, d = W.shape
    table_id = model.table_id
    logtau = messages.logtau
    tau_node, tau_edge, exp_node, exp_edge = beliefs
    unary_scores(block_nodes, X, W, model.theta_node)
    bp_sweeps(block_nodes, max_sweeps, tol, model, messages, info)
    diff = np.empty(K)
    for i in range(block_nodes.shape[0]):
        u = block_nodes[i]
        for a in range(K):
            p = np.exp(logtau[u, a])
            diff[a] = p - tau_node[u, a]
            tau_node[u, a] = p
        for a in range(K):
            da = diff[a]
            if da != 0.0:
                for j in range(d):
                    exp_node[a, j] += da * X[u, j]
    tab = np.empty((K, K))
    for i in range(block_edges.shape[0]):
        e = block_edges[i]
        _edge_belief(e, model, messages, tab)
        t = table_id[e]
        for a in range(K):
            for b in range(K):
                exp_edge[t, a, b] += tab[a, b] - tau_edge[e, a, b]
                tau_edge[e, a, b] = tab[a, b]


@nb.njit(cache=True)
def bp_learning_pass(order, blocks, X, W, model, messages, beliefs, emp_node, emp_edge, step,
                     out):
    """One pass of BP learning: for each block in ``order``, a block step then a gradient step.

    The gradient after a block step is ``(exp - emp) / n_samples + alpha * w``
    (expected minus observed features, eq. 16, plus the L2 term); the weights
    ``W`` and ``pool`` move by ``-lr`` times it.

    Parameters
    ----------
    order : int64 (n_visits,)
        Blocks to visit, in order.
    blocks : LearningBlocks
    emp_node : float64 (K, d), emp_edge : float64 (T, K, K)
        Observed feature sums.
    step : LearningStep
    out : float64 (4,)
        Receives (BP sweeps in the pass, max-norm of the last gradient,
        2-norm of the last step, 1.0 if a gradient was not finite else 0.0).
    Other parameters as in :func:`block_learning_step`.
    """
    K, d = W.shape
    pool = model.pool
    T = pool.shape[0]
    node_ptr, block_nodes, edge_ptr, block_edges = blocks
    exp_node, exp_edge = beliefs.exp_node, beliefs.exp_edge
    alpha, lr = step.alpha, step.lr
    n_samples = step.n_samples
    info = np.zeros(2)
    sweeps = 0.0
    gmax = 0.0
    step_sq = 0.0
    bad = 0.0
    inv_n = 1.0 / n_samples
    for i in range(order.shape[0]):
        b = order[i]
        block_learning_step(block_nodes[node_ptr[b]:node_ptr[b + 1]],
                            block_edges[edge_ptr[b]:edge_ptr[b + 1]], step.max_sweeps, step.tol,
                            X, W, model, messages, beliefs, info)
        sweeps += info[0]
        gmax = 0.0
        step_sq = 0.0
        for a in range(K):
            for j in range(d):
                g = (exp_node[a, j] - emp_node[a, j]) * inv_n + alpha * W[a, j]
                ag = abs(g)
                if ag > gmax:
                    gmax = ag
                if not np.isfinite(g):
                    bad = 1.0
                W[a, j] -= lr * g
                step_sq += g * g
        for t in range(T):
            for a in range(K):
                for c in range(K):
                    g = (exp_edge[t, a, c] - emp_edge[t, a, c]) * inv_n + alpha * pool[t, a, c]
                    ag = abs(g)
                    if ag > gmax:
                        gmax = ag
                    if not np.isfinite(g):
                        bad = 1.0
                    pool[t, a, c] -= lr * g
                    step_sq += g * g
        if bad != 0.0:
            break
    out[0] = sweeps
    out[1] = gmax
    out[2] = lr * np.sqrt(step_sq)
    out[3] = bad
