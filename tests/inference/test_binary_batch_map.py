"""Tests of gdmm_binary_batch (batched MAP of binary pairwise models sharing their factors)."""

import itertools

import numpy as np
import pytest

from structlearn.graphs import graph_from_edges
from structlearn.inference import solve_map
from structlearn.inference.lp.gdmm_binary import gdmm_binary_batch


def _all_scores(S, E, w):
    """Scores of every labeling (rows) for every sample (columns), by enumeration."""
    L = S.shape[1]
    Z = np.array(list(itertools.product([0, 1], repeat=L)))
    pair = (Z[:, E[:, 0]] * Z[:, E[:, 1]]) @ w if len(E) else np.zeros(len(Z))
    return Z @ S.T + pair[:, None]


def _score(lab, S, E, w):
    pair = (lab[:, E[:, 0]] * lab[:, E[:, 1]]) @ w if len(E) else 0.0
    return (lab * S).sum(1) + pair


def _complete(L):
    a, b = np.triu_indices(L, 1)
    return np.stack([a, b], axis=1)


@pytest.mark.parametrize("seed", range(8))
def test_matches_enumeration_on_small_frustrated_models(seed):
    rng = np.random.default_rng(seed)
    L = int(rng.integers(3, 9))
    E = _complete(L)
    S = rng.normal(size=(12, L)) - 0.3
    w = rng.normal(size=len(E))
    lab, sc, ub, rounds = gdmm_binary_batch(S, E, w)
    opt = _all_scores(S, E, w).max(axis=0)
    assert lab.shape == S.shape and set(np.unique(lab)) <= {0, 1}
    np.testing.assert_allclose(sc, _score(lab, S, E, w), rtol=1e-12, atol=1e-12)
    assert np.all(sc <= opt + 1e-9)
    assert np.all(ub >= opt - 1e-9)  # certified upper bound
    assert np.all((rounds >= 1) & (rounds <= 50))


def test_optimal_on_most_small_frustrated_models():
    # approximate MAP: count exact hits over 200 mixed-sign complete models
    rng = np.random.default_rng(0)
    hits = 0
    for _ in range(20):
        L = int(rng.integers(4, 10))
        E = _complete(L)
        S = rng.normal(size=(10, L)) - 0.3
        w = rng.normal(size=len(E)) * 0.5
        _, sc, _, _ = gdmm_binary_batch(S, E, w)
        hits += int(np.sum(np.isclose(sc, _all_scores(S, E, w).max(axis=0))))
    assert hits >= 180


def test_local_optimality_and_determinism():
    rng = np.random.default_rng(3)
    L = 40
    E = _complete(L)
    S = rng.normal(size=(6, L))
    w = rng.normal(size=len(E)) * 0.3
    lab, sc, _, _ = gdmm_binary_batch(S, E, w)
    lab2, sc2, _, _ = gdmm_binary_batch(S, E, w)
    np.testing.assert_array_equal(lab, lab2)
    np.testing.assert_array_equal(sc, sc2)
    for i in range(len(S)):  # no single flip improves the returned labeling
        for l in range(L):
            z = lab[i:i + 1].copy()
            z[0, l] = 1 - z[0, l]
            assert _score(z, S[i:i + 1], E, w)[0] <= sc[i] + 1e-9


def test_attractive_models_are_solved_and_certified():
    # w >= 0: the local-polytope LP is tight (supermodular), the bound must close
    rng = np.random.default_rng(1)
    L = 8
    E = _complete(L)
    S = rng.normal(size=(10, L)) - 1.0
    w = rng.uniform(0.0, 0.5, size=len(E))
    lab, sc, ub, _ = gdmm_binary_batch(S, E, w, max_iter=200, stall_iter=0, tol=1e-4)
    opt = _all_scores(S, E, w).max(axis=0)
    np.testing.assert_allclose(sc, opt, rtol=1e-12, atol=1e-12)
    assert np.all(ub - sc <= 1e-3 * np.maximum(1.0, np.abs(ub)))


def test_no_edges_and_zero_weights_give_the_unary_argmax():
    rng = np.random.default_rng(0)
    S = rng.normal(size=(5, 7))
    for E, w in ((np.zeros((0, 2), dtype=int), np.zeros(0)), (_complete(7), np.zeros(21))):
        lab, sc, ub, _ = gdmm_binary_batch(S, E, w)
        np.testing.assert_array_equal(lab, (S > 0).astype(int))
        np.testing.assert_allclose(sc, np.maximum(S, 0).sum(1))
        np.testing.assert_allclose(ub, sc)
    lab, sc, ub, _ = gdmm_binary_batch(np.zeros((2, 3)), _complete(3), np.zeros(3))
    assert np.all(lab == 0) and np.all(sc == 0) and np.all(ub == 0)


def test_agrees_with_the_registry_back_end_on_chains_of_pairs():
    # a tree-structured model: gdmm_binary through solve_map and the batch
    # kernel both reach the exact (Viterbi-checked) optimum
    rng = np.random.default_rng(5)
    L = 12
    E = np.stack([np.arange(L - 1), np.arange(1, L)], axis=1)
    S = rng.normal(size=(4, L))
    w = rng.normal(size=L - 1)
    lab, sc, _, _ = gdmm_binary_batch(S, E, w)
    tables = np.zeros((L - 1, 2, 2))
    tables[:, 1, 1] = w
    for i in range(len(S)):
        g = graph_from_edges(np.stack([np.zeros(L), S[i]], axis=1), E, tables)
        exact = solve_map(g, method="tree")
        assert sc[i] == pytest.approx(exact.score, abs=1e-9)
        assert g.score(lab[i]) == pytest.approx(sc[i], abs=1e-9)


def test_bad_input():
    S = np.zeros((2, 3))
    E = _complete(3)
    w = np.ones(3)
    with pytest.raises(ValueError, match="unary contains NaN"):
        gdmm_binary_batch(np.full((2, 3), np.nan), E, w)
    with pytest.raises(ValueError, match="unary must be 2-D"):
        gdmm_binary_batch(np.zeros(3), E, w)
    with pytest.raises(ValueError, match="edges must be an integer array"):
        gdmm_binary_batch(S, np.zeros((3, 3), dtype=int), w)
    with pytest.raises(ValueError, match="edges must index labels"):
        gdmm_binary_batch(S, np.array([[0, 3]]), [1.0])
    with pytest.raises(ValueError, match="self-loop"):
        gdmm_binary_batch(S, np.array([[1, 1]]), [1.0])
    with pytest.raises(ValueError, match="weights has 2 entries for 3 edges"):
        gdmm_binary_batch(S, E, [1.0, 2.0])
    with pytest.raises(ValueError, match="weights contains NaN"):
        gdmm_binary_batch(S, E, [1.0, np.inf, 0.0])
    with pytest.raises(ValueError, match="max_iter must be an integer >= 1"):
        gdmm_binary_batch(S, E, w, max_iter=0)
    with pytest.raises(ValueError, match="stall_iter must be an integer >= 0"):
        gdmm_binary_batch(S, E, w, stall_iter=-1)
    with pytest.raises(ValueError, match="rho must be a positive"):
        gdmm_binary_batch(S, E, w, rho=0.0)
    lab, sc, ub, it = gdmm_binary_batch(np.zeros((0, 3)), E, w)
    assert lab.shape == (0, 3) and sc.shape == (0,)
