"""Convex BP and convex-BP learning against brute force and finite differences."""


import numpy as np
import pytest
from _graphgen import pairwise_enumeration

from structlearn.graphs import grid_edges
from structlearn.inference.marginals.convex_bp import (
    check_pairwise_edges,
    convex_bp,
    incidence_lists,
    trw_counting_numbers,
)
from structlearn.learners.convex_bp_learning import (
    _blocks_csr,
    crf_objective,
    fit_convex_bp_crf,
    grid_block_labels,
    index_block_labels,
)


def random_tree(n, rng):
    return np.array([[rng.randint(0, i), i] for i in range(1, n)], dtype=np.int64)


@pytest.mark.parametrize("seed", range(4))
def test_tree_marginals_and_log_z_exact(seed):
    rng = np.random.RandomState(seed)
    n, K = rng.randint(2, 7), rng.randint(2, 4)
    edges = random_tree(n, rng)
    if seed % 2:
        edges = edges[:, ::-1].copy()  # either orientation
    unary = rng.randn(n, K) * 3
    tables = rng.randn(len(edges), K, K) * 3
    res = convex_bp(unary, edges, tables, tol=1e-12)
    lz, node, edge = pairwise_enumeration(unary, edges, tables)
    assert res.converged
    np.testing.assert_allclose(res.rho_edge, 1.0)
    assert abs(res.log_z_bound - lz) < 1e-9
    np.testing.assert_allclose(res.node_marginals, node, atol=1e-9)
    np.testing.assert_allclose(res.edge_marginals, edge, atol=1e-9)


def test_chain_with_shared_table_and_large_scores():
    rng = np.random.RandomState(5)
    n, K = 6, 3
    edges = np.stack([np.arange(n - 1), np.arange(1, n)], axis=1)
    unary = rng.randn(n, K) * 300
    table = rng.randn(K, K) * 300
    res = convex_bp(unary, edges, table, tol=1e-12)
    lz, node, _ = pairwise_enumeration(unary, edges, np.repeat(table[None], n - 1, axis=0))
    assert abs(res.log_z_bound - lz) < 1e-7 * abs(lz)
    np.testing.assert_allclose(res.node_marginals, node, atol=1e-8)


def test_pool_with_edge_tables_matches_per_edge_tables():
    rng = np.random.RandomState(1)
    n, K = 6, 3
    edges = np.array([[0, 1], [1, 2], [2, 0], [2, 3], [3, 4], [4, 5], [5, 3]])
    unary = rng.randn(n, K)
    pool = rng.randn(3, K, K)
    ids = rng.randint(0, 3, len(edges))
    a = convex_bp(unary, edges, pool, edge_tables=ids, tol=1e-12)
    b = convex_bp(unary, edges, pool[ids], tol=1e-12)
    assert abs(a.log_z_bound - b.log_z_bound) < 1e-12
    np.testing.assert_allclose(a.node_marginals, b.node_marginals, atol=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_loopy_bound_consistency_and_gradient(seed):
    rng = np.random.RandomState(seed)
    n, K = 6, 3
    edges = np.array([[0, 1], [1, 2], [2, 3], [3, 0], [0, 2], [3, 4], [4, 5], [5, 3]])
    unary = rng.randn(n, K) * 2
    tables = rng.randn(len(edges), K, K) * 2
    res = convex_bp(unary, edges, tables, tol=1e-13, random_state=seed)
    lz, _, _ = pairwise_enumeration(unary, edges, tables)
    assert res.converged
    assert res.log_z_bound >= lz - 1e-9  # TRW upper bound
    m = res.edge_marginals
    np.testing.assert_allclose(m.sum(axis=2), res.node_marginals[edges[:, 0]], atol=1e-10)
    np.testing.assert_allclose(m.sum(axis=1), res.node_marginals[edges[:, 1]], atol=1e-10)
    # d B / d theta = beliefs (finite differences, same counting numbers)
    kw = dict(rho_node=res.rho_node, rho_edge=res.rho_edge, tol=1e-13)
    eps = 1e-5
    for _ in range(6):
        i, k = rng.randint(n), rng.randint(K)
        up, dn = unary.copy(), unary.copy()
        up[i, k] += eps
        dn[i, k] -= eps
        fd = (convex_bp(up, edges, tables, **kw).log_z_bound
              - convex_bp(dn, edges, tables, **kw).log_z_bound) / (2 * eps)  # fmt: skip
        assert abs(fd - res.node_marginals[i, k]) < 1e-6
        e, a, b = rng.randint(len(edges)), rng.randint(K), rng.randint(K)
        up, dn = tables.copy(), tables.copy()
        up[e, a, b] += eps
        dn[e, a, b] -= eps
        fd = (convex_bp(unary, edges, up, **kw).log_z_bound
              - convex_bp(unary, edges, dn, **kw).log_z_bound) / (2 * eps)  # fmt: skip
        assert abs(fd - m[e, a, b]) < 1e-6


def test_block_update_leaves_outside_fixed():
    from structlearn.inference.marginals._convex_bp_kernels import (BPMessages, PairwiseModel,
                                                                     bp_sweeps)

    rng = np.random.RandomState(0)
    h = w = 4
    K = 2
    n = h * w
    edges = grid_edges(h, w)
    unary = rng.randn(n, K)
    pool = rng.randn(1, K, K)
    tid = np.zeros(len(edges), dtype=np.int64)
    rn, re = trw_counting_numbers(n, edges)
    ap, ae, aside = incidence_lists(n, edges)
    nu = rng.randn(len(edges), 2, K)
    logtau = np.log(np.full((n, K), 1.0 / K))
    block = np.array([0, 1, 4, 5], dtype=np.int64)
    nu0, lt0 = nu.copy(), logtau.copy()
    info = np.zeros(2)
    bp_sweeps(block, 50, 1e-10, PairwiseModel(unary, pool, tid, edges, ap, ae, aside, rn, re),
              BPMessages(nu, logtau), info)
    outside = np.setdiff1d(np.arange(n), block)
    np.testing.assert_array_equal(logtau[outside], lt0[outside])
    into_outside = np.isin(edges, outside)  # (E, 2): message into an outside endpoint
    np.testing.assert_array_equal(nu[into_outside], nu0[into_outside])
    assert not np.allclose(logtau[block], lt0[block])


def test_trw_counting_numbers():
    edges = grid_edges(5, 6)
    n = 30
    rn, re = trw_counting_numbers(n, edges, random_state=3)
    assert np.all((re > 0) & (re <= 1))
    assert abs(re.sum() - (n - 1)) < 1e-9  # every forest spans the connected grid
    # loopy graph: node counting numbers cover the incident edge weights (c_u >= 0)
    incident = np.zeros(n)
    for (u, v), r in zip(edges, re):
        incident[u] += r
        incident[v] += r
    np.testing.assert_allclose(rn, np.maximum(1.0, incident))
    assert rn.max() > 1.0
    ones, re_ones = trw_counting_numbers(n, edges, random_state=3, node="ones")
    np.testing.assert_array_equal(ones, 1.0)
    np.testing.assert_array_equal(re_ones, re)
    rn_tree, re_tree = trw_counting_numbers(5, random_tree(5, np.random.RandomState(0)))
    np.testing.assert_array_equal(re_tree, 1.0)
    np.testing.assert_array_equal(rn_tree, 1.0)  # forests keep rho = 1 (exact)
    _, again = trw_counting_numbers(n, edges, random_state=3)
    np.testing.assert_array_equal(re, again)
    with pytest.raises(ValueError, match="node"):
        trw_counting_numbers(n, edges, node="bethe")


@pytest.mark.parametrize(
    "edges, match",
    [
        ([[0, 1], [1, 5]], "outside"),
        ([[0, 1], [2, 2]], "self-loop"),
        ([[0, 1], [1, 0]], "same pair"),
        ([[0, 1, 2]], "shape"),
    ],
)
def test_edge_errors(edges, match):
    with pytest.raises(ValueError, match=match):
        check_pairwise_edges(np.array(edges), 3)


def test_convex_bp_input_errors():
    with pytest.raises(ValueError, match="NaN"):
        convex_bp(np.array([[0.0, np.nan], [0.0, 0.0]]), [[0, 1]], np.zeros((2, 2)))
    with pytest.raises(ValueError, match="pairwise"):
        convex_bp(np.zeros((2, 2)), [[0, 1]], np.zeros((3, 3)))
    with pytest.raises(TypeError, match="integers"):
        convex_bp(np.zeros((2, 2)), [[0.0, 1.0]], np.zeros((2, 2)))


# ------------------------------------------------------------------- learning
def _grid_problem(h, w, K, d, N, n_bins, seed):
    rng = np.random.RandomState(seed)
    n1 = h * w
    e1 = grid_edges(h, w)
    X = rng.randn(N * n1, d)
    y = np.argmax(X[:, :1] * np.arange(K) + rng.randn(N * n1, K), axis=1)
    edges = np.concatenate([e1 + i * n1 for i in range(N)])
    bins = rng.randint(0, n_bins, len(edges))
    return X, y, edges, bins, np.arange(N + 1) * n1


def test_learning_objective_gradient_finite_differences():
    X, y, edges, bins, sp = _grid_problem(3, 3, 3, 2, 2, 2, 0)
    rng = np.random.RandomState(1)
    W = rng.randn(3, 2)
    V = rng.randn(2, 3, 3)
    rn, re = trw_counting_numbers(X.shape[0], edges)
    kw = dict(alpha=0.1, rho_node=rn, rho_edge=re, tol=1e-13)
    f, gW, gV, conv = crf_objective(W, V, X, y, edges, bins, sp, **kw)
    assert conv
    eps = 1e-5
    for idx in np.ndindex(W.shape):
        a, b = W.copy(), W.copy()
        a[idx] += eps
        b[idx] -= eps
        fd = (crf_objective(a, V, X, y, edges, bins, sp, **kw)[0]
              - crf_objective(b, V, X, y, edges, bins, sp, **kw)[0]) / (2 * eps)  # fmt: skip
        assert abs(fd - gW[idx]) < 1e-6
    for idx in [(0, 0, 1), (1, 2, 2), (1, 0, 0)]:
        a, b = V.copy(), V.copy()
        a[idx] += eps
        b[idx] -= eps
        fd = (crf_objective(W, a, X, y, edges, bins, sp, **kw)[0]
              - crf_objective(W, b, X, y, edges, bins, sp, **kw)[0]) / (2 * eps)  # fmt: skip
        assert abs(fd - gV[idx]) < 1e-6


def test_learning_is_exact_likelihood_on_a_tree():
    # one chain sample, rho = 1: the objective is the exact CRF likelihood
    rng = np.random.RandomState(0)
    n, K, d = 5, 2, 2
    X = rng.randn(n, d)
    y = rng.randint(0, K, n)
    edges = np.stack([np.arange(n - 1), np.arange(1, n)], axis=1)
    bins = np.zeros(n - 1, dtype=np.int64)
    W = rng.randn(K, d)
    V = rng.randn(1, K, K)
    f, _, _, _ = crf_objective(W, V, X, y, edges, bins, [0, n], alpha=0.0,
                               rho_node=np.ones(n), rho_edge=np.ones(n - 1))  # fmt: skip
    unary = X @ W.T
    lz, _, _ = pairwise_enumeration(unary, edges, V[bins])
    score = unary[np.arange(n), y].sum() + V[0][y[:-1], y[1:]].sum()
    assert abs(f - (lz - score)) < 1e-9


def test_blocks_helpers():
    lab = grid_block_labels(4, 6, 2, 3)
    assert lab.reshape(4, 6)[0].tolist() == [0, 0, 1, 1, 2, 2]
    assert lab.reshape(4, 6)[3].tolist() == [3, 3, 4, 4, 5, 5]
    idx = index_block_labels(np.array([0, 5, 9]), 2)
    assert idx.tolist() == [0, 0, 0, 1, 1, 0, 0, 1, 1]
    edges = grid_edges(2, 2)  # 0-1, 2-3, 0-2, 1-3
    node_ptr, nodes, edge_ptr, bedges = _blocks_csr(np.array([0, 1, 0, 1]), edges)
    assert nodes[node_ptr[0] : node_ptr[1]].tolist() == [0, 2]
    assert sorted(bedges[edge_ptr[0] : edge_ptr[1]].tolist()) == [0, 1, 2]
    assert sorted(bedges[edge_ptr[1] : edge_ptr[2]].tolist()) == [0, 1, 3]
    with pytest.raises(ValueError, match="tiles"):
        grid_block_labels(2, 2, 3, 1)


def test_bbpl_converges_to_full_bp_optimum():
    h = w = 12
    X, y, edges, bins, sp = _grid_problem(h, w, 3, 4, 2, 2, 0)
    kw = dict(n_states=3, n_bins=2, sample_ptr=sp, alpha=3e-2, max_iter=20000, tol=1e-6,
              random_state=0, inner_tol=1e-8)  # fmt: skip
    ref = fit_convex_bp_crf(X, y, edges, bins, method="full_bp", **kw)
    assert ref.converged
    theta_ref = np.concatenate([ref.W.ravel(), ref.V.ravel()])
    tiles = np.tile(grid_block_labels(h, w, 3, 3), 2)
    for extra in (dict(block_labels=tiles), dict(n_blocks=4, block_order="random")):
        res = fit_convex_bp_crf(X, y, edges, bins, method="bbpl", **kw, **extra)
        assert res.converged
        theta = np.concatenate([res.W.ravel(), res.V.ravel()])
        assert np.linalg.norm(theta - theta_ref) / np.linalg.norm(theta_ref) <= 1e-3
    res = fit_convex_bp_crf(X, y, edges, bins, method="inner_dual", **kw)
    theta = np.concatenate([res.W.ravel(), res.V.ravel()])
    assert np.linalg.norm(theta - theta_ref) / np.linalg.norm(theta_ref) <= 1e-3
    # objective decreases along full BP learning
    obj = [r["objective"] for r in ref.history]
    assert obj[-1] < obj[0]
    assert np.all(np.diff(obj) <= 1e-7 * abs(obj[-1]))


def _ba_problem(n, K, d, n_bins, seed):
    # Barabasi-Albert graph (2 links per new node, early nodes become hubs), labels drawn
    # from a random model; blocks = index ranges put the hubs together
    rng = np.random.RandomState(seed)
    edges, pool = [(0, 1)], [0, 1]
    for v in range(2, n):
        targets = set()
        while len(targets) < 2:
            targets.add(pool[rng.randint(len(pool))])
        for t in targets:
            edges.append((t, v))
            pool += [t, v]
    edges = np.array(edges, dtype=np.int64)
    X = rng.randn(n, d)
    W = rng.randn(K, d)
    y = np.argmax(X @ W.T + rng.randn(n, K), axis=1)
    bins = rng.randint(0, n_bins, len(edges))
    return X, y, edges, bins, np.array([0, n])


def test_convex_bp_converges_around_hubs():
    # plain TRW node counting numbers (rho_u = 1) make BP cycle at the hubs of a BA graph;
    # the default ones (effective node counting numbers >= 0) converge
    X, _, edges, bins, _ = _ba_problem(300, 4, 4, 1, 0)
    rng = np.random.RandomState(1)
    unary = X @ rng.randn(4, 4).T
    table = np.random.RandomState(2).randn(4, 4)
    res = convex_bp(unary, edges, table, tol=1e-8, max_iter=2000)
    assert res.converged
    rn, re = trw_counting_numbers(300, edges, node="ones")
    plain = convex_bp(unary, edges, table, tol=1e-8, max_iter=2000, rho_node=rn, rho_edge=re)
    assert not plain.converged


def test_bbpl_converges_to_full_bp_optimum_on_ba_graph():
    X, y, edges, bins, sp = _ba_problem(200, 3, 4, 2, 0)
    kw = dict(n_states=3, n_bins=2, sample_ptr=sp, alpha=3e-2, max_iter=20000, tol=1e-6,
              random_state=0, inner_tol=1e-8)  # fmt: skip
    ref = fit_convex_bp_crf(X, y, edges, bins, method="full_bp", **kw)
    assert ref.converged
    theta_ref = np.concatenate([ref.W.ravel(), ref.V.ravel()])
    for nb in (5, 20):
        res = fit_convex_bp_crf(X, y, edges, bins, method="bbpl", n_blocks=nb, **kw)
        assert res.converged
        assert res.n_updates == nb * res.n_iter and len(res.history) == res.n_iter
        theta = np.concatenate([res.W.ravel(), res.V.ravel()])
        assert np.linalg.norm(theta - theta_ref) / np.linalg.norm(theta_ref) <= 1e-3


def test_learning_errors():
    X, y, edges, bins, sp = _grid_problem(3, 3, 2, 2, 1, 1, 0)
    kw = dict(n_states=2, n_bins=1, sample_ptr=sp)
    with pytest.raises(ValueError, match="method"):
        fit_convex_bp_crf(X, y, edges, bins, method="sgd", **kw)
    with pytest.raises(ValueError, match="block_order"):
        fit_convex_bp_crf(X, y, edges, bins, block_order="shuffled", **kw)
    with pytest.raises(ValueError, match="learning_rate"):
        fit_convex_bp_crf(X, y, edges, bins, learning_rate=-1.0, **kw)
    with pytest.raises(FloatingPointError, match="diverged"):
        fit_convex_bp_crf(X * 1e3, y, edges, bins, learning_rate=1e6, max_iter=200, **kw)
