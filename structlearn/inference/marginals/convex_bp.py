"""Convex belief propagation on pairwise graphs: beliefs, messages, free-energy bound.

Convex BP (Lu, Liu & Huang, "Block belief propagation for parameter learning
in Markov random fields", eqs. 2-5) maximizes a concave approximation of the
variational log-partition problem over the local polytope::

    B(theta) = max_{tau in L(G)} <theta, tau> + sum_u rho_u H(tau_u)
               + sum_e rho_e [H(tau_e) - H(tau_u) - H(tau_v)]

with counting numbers ``rho_u`` (nodes) and ``rho_e`` (edges). The default
counting numbers are tree-reweighted ones: ``rho_e`` the edge appearance
probabilities of a uniform mixture of random spanning forests (every edge
covered) and, on loopy graphs, ``rho_u = max(1, sum_{e ni u} rho_e)`` (>= 1,
so convex BP converges; see :func:`trw_counting_numbers`), so
``B(theta) >= log Z``, and on a forest ``rho = 1`` everywhere and
``B(theta) = log Z`` exactly. The gradient of
``B`` with respect to the scores is the belief vector.

Messages are updated node by node (each node update is an exact block
coordinate step of the dual, as in norm-product BP, where the effective node
counting number ``rho_u - sum_{e ni u} rho_e`` is >= 0: the default counting
numbers ensure it, see :func:`trw_counting_numbers`), in the log domain with
max-shifted log-sum-exp. A subset of nodes can be updated with everything
else held fixed (block BP, see :mod:`structlearn.learners.convex_bp_learning`).

On chains, exact forward-backward (:func:`structlearn.inference.chain_marginals`
or the batch kernels) is cheaper and is what the chain CRF uses.
"""

from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "ConvexBPResult",
    "check_pairwise_edges",
    "convex_bp",
    "incidence_lists",
    "trw_counting_numbers",
]


@dataclass
class ConvexBPResult:
    """Output of :func:`convex_bp`.

    Attributes
    ----------
    log_z_bound : float
        Free energy ``B(theta)`` at the final beliefs (an upper bound on
        ``log Z`` with tree-reweighted counting numbers, exact on trees).
    node_marginals : ndarray of shape (n_nodes, K)
    edge_marginals : ndarray of shape (n_edges, K, K)
        ``edge_marginals[e, a, b]`` for ``x_{edges[e,0]} = a``, ``x_{edges[e,1]} = b``.
    messages : ndarray of shape (n_edges, 2, K)
        Log-messages from each edge into its first and second endpoint.
    n_iter : int
        Number of sweeps over the nodes.
    converged : bool
        Whether the largest change of a log-belief in the last sweep was <= tol.
    rho_node, rho_edge : ndarrays
        Counting numbers used.
    """

    log_z_bound: float
    node_marginals: np.ndarray
    edge_marginals: np.ndarray
    messages: np.ndarray
    n_iter: int
    converged: bool
    rho_node: np.ndarray = field(repr=False, default=None)
    rho_edge: np.ndarray = field(repr=False, default=None)


def check_pairwise_edges(edges, n_nodes, name="edges"):
    """Validate an edge list: int array (n_edges, 2), endpoints in range, no self-loops/duplicates.

    Returns
    -------
    edges : ndarray of int64, shape (n_edges, 2), C-contiguous
    """
    arr = np.asarray(edges)
    if arr.size == 0:
        arr = np.zeros((0, 2), dtype=np.int64)
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError(f"{name} must have shape (n_edges, 2), got {arr.shape}")
    if not np.issubdtype(arr.dtype, np.integer) or arr.dtype == bool:
        raise TypeError(f"{name} must hold integers, got dtype {arr.dtype}")
    arr = np.ascontiguousarray(arr, dtype=np.int64)
    if arr.size and (arr.min() < 0 or arr.max() >= n_nodes):
        bad = int(np.flatnonzero(((arr < 0) | (arr >= n_nodes)).any(axis=1))[0])
        raise ValueError(
            f"{name}[{bad}] = {arr[bad].tolist()} references a node outside [0, {n_nodes})"
        )
    if arr.size and np.any(arr[:, 0] == arr[:, 1]):
        bad = int(np.flatnonzero(arr[:, 0] == arr[:, 1])[0])
        raise ValueError(f"{name}[{bad}] is a self-loop on node {arr[bad, 0]}")
    if arr.shape[0] > 1:
        key = np.minimum(arr[:, 0], arr[:, 1]) * np.int64(n_nodes) + np.maximum(arr[:, 0], arr[:, 1])
        order = np.argsort(key, kind="stable")
        dup = np.flatnonzero(np.diff(key[order]) == 0)
        if dup.size:
            a, b = int(order[dup[0]]), int(order[dup[0] + 1])
            raise ValueError(
                f"{name}[{a}] and {name}[{b}] join the same pair of nodes; merge parallel edges"
            )
    return arr


def incidence_lists(n_nodes, edges):
    """Edges incident to each node, CSR form.

    Returns
    -------
    adj_ptr : int64 (n_nodes + 1,)
    adj_edge : int64 (2 * n_edges,)
    adj_side : int64 (2 * n_edges,)
        ``edges[adj_edge[i], adj_side[i]]`` is the node owning entry ``i``.
    """
    ends = edges.ravel()  # entry 2e + s is edges[e, s]
    order = np.argsort(ends, kind="stable")
    adj_ptr = np.zeros(n_nodes + 1, dtype=np.int64)
    np.cumsum(np.bincount(ends, minlength=n_nodes), out=adj_ptr[1:])
    adj_edge = np.ascontiguousarray(order // 2, dtype=np.int64)
    adj_side = np.ascontiguousarray(order % 2, dtype=np.int64)
    return adj_ptr, adj_edge, adj_side


def trw_counting_numbers(n_nodes, edges, *, min_trees=10, random_state=0, node="convergent"):
    """Tree-reweighted counting numbers from random spanning forests.

    Spanning forests are drawn as minimum spanning forests under random edge
    weights, edges not yet covered by an earlier forest being preferred,
    until every edge is covered and at least ``min_trees`` forests were
    drawn. ``rho_e`` is the fraction of forests containing ``e``: a point of
    the spanning-tree polytope, so convex BP with these numbers bounds
    ``log Z`` from above (and is exact on forests, where ``rho_e = 1``).

    With ``rho_u = 1`` (``node="ones"``, plain TRW) the effective node
    counting number ``c_u = rho_u - sum_{e ni u} rho_e`` is negative, down to
    about ``1 - degree / 2`` at a hub. The node-wise convex-BP update is a
    block-coordinate ascent of the dual only where ``c_u >= 0`` (for
    ``c_u < 0`` the node part of the Lagrangian is not concave); on loopy
    graphs with hubs (e.g. Barabasi-Albert) plain TRW message passing then
    cycles for ever. ``node="convergent"`` (the default) raises ``rho_u`` to
    ``max(1, sum_{e ni u} rho_e)`` on graphs with a cycle: every ``c_u >= 0``,
    the free energy gains ``sum_u (rho_u - 1) H(tau_u) >= 0``, so it stays
    concave and an upper bound on ``log Z``. On forests both choices are
    ``rho = 1`` (exact, and tree BP converges anyway).

    Parameters
    ----------
    n_nodes : int
    edges : int array (n_edges, 2)
    min_trees : int, default=10
    random_state : int, RandomState or None, default=0
    node : {"convergent", "ones"}, default="convergent"
        Node counting numbers (see above).

    Returns
    -------
    rho_node : ndarray of float64, shape (n_nodes,)
        ``>= 1``; all ones for ``node="ones"`` or on forests.
    rho_edge : ndarray of float64, shape (n_edges,)
        In (0, 1].
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import minimum_spanning_tree

    if node not in ("convergent", "ones"):
        raise ValueError(f"node must be 'convergent' or 'ones', got {node!r}")
    edges = check_pairwise_edges(edges, n_nodes)
    from sklearn.utils import check_random_state  # late: MAP inference alone needs no sklearn
    rng = check_random_state(random_state)
    E = edges.shape[0]
    rho_node = np.ones(n_nodes)
    if E == 0:
        return rho_node, np.zeros(0)
    lo = np.minimum(edges[:, 0], edges[:, 1])
    hi = np.maximum(edges[:, 0], edges[:, 1])
    key = lo * np.int64(n_nodes) + hi
    order = np.argsort(key)
    skey = key[order]
    counts = np.zeros(E)
    n_trees = 0
    while n_trees < min_trees or not np.all(counts > 0):
        weight = 1.0 + rng.random_sample(E) + (counts > 0)
        tree = minimum_spanning_tree(coo_matrix((weight, (lo, hi)), shape=(n_nodes, n_nodes)))
        tree = tree.tocoo()
        tk = np.minimum(tree.row, tree.col).astype(np.int64) * n_nodes + np.maximum(
            tree.row, tree.col
        )
        counts[order[np.searchsorted(skey, tk)]] += 1
        n_trees += 1
    rho_edge = counts / n_trees
    if node == "convergent" and np.any(rho_edge < 1.0):
        incident = np.bincount(edges.ravel(), weights=np.repeat(rho_edge, 2), minlength=n_nodes)
        rho_node = np.maximum(rho_node, incident)
    return rho_node, rho_edge


def _check_rho(rho, n, name):
    rho = np.ascontiguousarray(rho, dtype=np.float64)
    if rho.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},), got {rho.shape}")
    if not np.all(np.isfinite(rho)) or np.any(rho <= 0):
        raise ValueError(f"{name} must be finite and > 0")
    return rho


def convex_bp(
    unary,
    edges,
    pairwise,
    *,
    edge_tables=None,
    rho_node=None,
    rho_edge=None,
    max_iter=1000,
    tol=1e-8,
    messages=None,
    random_state=0,
):
    """Convex BP marginals and free-energy bound of a pairwise model.

    Parameters
    ----------
    unary : array of shape (n_nodes, K)
        Unary scores (finite).
    edges : int array of shape (n_edges, 2)
        No self-loops, no repeated pairs.
    pairwise : array of shape (K, K), (n_edges, K, K) or (n_tables, K, K)
        One shared table, one table per edge, or a pool indexed by
        ``edge_tables``. ``pairwise[.., a, b]`` scores ``x_u = a, x_v = b``
        for edge ``(u, v)``.
    edge_tables : int array of shape (n_edges,), optional
        Table of each edge in the pool ``pairwise``.
    rho_node, rho_edge : arrays of shape (n_nodes,), (n_edges,), optional
        Counting numbers (> 0). Default: :func:`trw_counting_numbers`.
    max_iter : int, default=1000
        Maximum number of sweeps over the nodes.
    tol : float, default=1e-8
        Stop when no log-belief changed by more than ``tol`` in a sweep.
    messages : array of shape (n_edges, 2, K), optional
        Initial log-messages (warm start); zeros by default.
    random_state : int, RandomState or None, default=0
        Seeds the spanning forests of the default counting numbers.

    Returns
    -------
    result : ConvexBPResult
    """
    from ._convex_bp_kernels import (BPMessages, PairwiseModel, bp_sweeps, edge_beliefs,
                                     free_energy)

    unary = np.asarray(unary)
    if unary.ndim != 2 or unary.shape[1] < 1:
        raise ValueError(f"unary must have shape (n_nodes, K), got {unary.shape}")
    if not np.issubdtype(unary.dtype, np.number):
        raise TypeError(f"unary must be numeric, got dtype {unary.dtype}")
    unary = np.ascontiguousarray(unary, dtype=np.float64)
    if not np.all(np.isfinite(unary)):
        raise ValueError("unary contains NaN or infinite values")
    n, K = unary.shape
    edges = check_pairwise_edges(edges, n)
    E = edges.shape[0]
    pairwise = np.asarray(pairwise, dtype=np.float64)
    if not np.all(np.isfinite(pairwise)):
        raise ValueError("pairwise contains NaN or infinite values")
    if edge_tables is not None:
        if pairwise.ndim != 3 or pairwise.shape[1:] != (K, K):
            raise ValueError(f"pairwise must have shape (n_tables, {K}, {K}), got {pairwise.shape}")
        table_id = np.ascontiguousarray(edge_tables, dtype=np.int64)
        if table_id.shape != (E,):
            raise ValueError(f"edge_tables must have shape ({E},), got {table_id.shape}")
        if E and (table_id.min() < 0 or table_id.max() >= pairwise.shape[0]):
            raise ValueError(f"edge_tables must lie in [0, {pairwise.shape[0]})")
        pool = np.ascontiguousarray(pairwise)
    elif pairwise.shape == (K, K):
        pool = np.ascontiguousarray(pairwise[None])
        table_id = np.zeros(E, dtype=np.int64)
    elif pairwise.shape == (E, K, K):
        pool = np.ascontiguousarray(pairwise)
        table_id = np.arange(E, dtype=np.int64)
    else:
        raise ValueError(
            f"pairwise must have shape ({K}, {K}) or ({E}, {K}, {K}), got {pairwise.shape}"
        )
    if rho_node is None or rho_edge is None:
        dn, de = trw_counting_numbers(n, edges, random_state=random_state)
        rho_node = dn if rho_node is None else rho_node
        rho_edge = de if rho_edge is None else rho_edge
    rho_node = _check_rho(rho_node, n, "rho_node")
    rho_edge = _check_rho(rho_edge, E, "rho_edge")
    adj_ptr, adj_edge, adj_side = incidence_lists(n, edges)
    if messages is None:
        nu = np.zeros((E, 2, K))
    else:
        nu = np.array(messages, dtype=np.float64, order="C")
        if nu.shape != (E, 2, K):
            raise ValueError(f"messages must have shape ({E}, 2, {K}), got {nu.shape}")
    # beliefs consistent with the initial messages
    logtau = np.empty((n, K))
    info = np.zeros(2)
    all_nodes = np.arange(n, dtype=np.int64)
    s = unary.copy()
    np.add.at(s, edges[:, 0], nu[:, 0, :])
    np.add.at(s, edges[:, 1], nu[:, 1, :])
    s /= rho_node[:, None]
    s -= s.max(axis=1, keepdims=True)
    logtau[:] = s - np.log(np.exp(s).sum(axis=1, keepdims=True))
    model = PairwiseModel(unary, pool, table_id, edges, adj_ptr, adj_edge, adj_side, rho_node,
                          rho_edge)
    messages = BPMessages(nu, logtau)
    bp_sweeps(all_nodes, int(max_iter), float(tol), model, messages, info)
    emarg = np.empty((E, K, K))
    edge_beliefs(np.arange(E, dtype=np.int64), model, messages, emarg)
    bound = free_energy(model, messages)
    return ConvexBPResult(
        log_z_bound=float(bound),
        node_marginals=np.exp(logtau),
        edge_marginals=emarg,
        messages=nu,
        n_iter=int(info[0]),
        converged=bool(info[1] <= tol),
        rho_node=rho_node,
        rho_edge=rho_edge,
    )
