"""The partitions' damping measured from their moves."""

import math
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from structlearn.datasets import make_chain_data
from structlearn.estimators import SequenceSSVM
from structlearn.learners._damping import (GRID, SAFETY, MeasuredDamping, scale_steps,
                                           squared_distance, squared_norm)


def _on_grid(x):
    k = math.log2(x) * GRID
    return abs(k - round(k)) < 1e-9


def test_first_round_is_damped_by_the_partitions():
    d = MeasuredDamping(16)
    assert d.weights == d.transitions == 16.0


@pytest.mark.parametrize("seed", range(20))
def test_next_damping_follows_the_measured_ratio(seed):
    rng = np.random.default_rng(seed)
    P = int(rng.integers(2, 33))
    d = MeasuredDamping(P)
    for _ in range(10):
        sigma = d.weights
        spread = float(rng.uniform(0.1, 10.0))
        ratio = float(rng.uniform(0.0, 2.0 * P))
        d.update(ratio * spread, spread, 0.0, 0.0)
        target = min(P, max(SAFETY * ratio, sigma / 2, 1.0))
        # at least the target (rounded up to the grid), never above P
        assert target - 1e-9 <= d.weights <= P
        assert d.weights == P or (_on_grid(d.weights) and d.weights < target * 2 ** (1 / GRID))
        assert d.transitions == P  # no move of the table measured: kept
    # nothing moved, or not finite: the damping stays
    before = d.weights
    d.update(0.0, 0.0, 0.0, 0.0)
    d.update(np.nan, 1.0, np.inf, 1.0)
    assert d.weights == before


def test_damping_falls_by_halves_and_rises_at_once():
    d = MeasuredDamping(16)
    d.update(0.0, 1.0, 0.0, 1.0)
    assert d.weights == 8.0 and d.transitions == 8.0
    d.update(0.0, 1.0, 0.0, 1.0)
    assert d.weights == 4.0
    d.update(3.0, 1.0, 0.0, 1.0)  # moves aligned 3x: 12, up to the grid
    assert d.weights == pytest.approx(2 ** (math.ceil(math.log2(12) * GRID) / GRID))
    d.update(100.0, 1.0, 0.0, 1.0)
    assert d.weights == 16.0


@pytest.mark.parametrize("seed", range(6))
def test_scale_steps_against_numpy(seed):
    rng = np.random.default_rng(seed)
    n, d = int(rng.integers(1, 30)), int(rng.integers(1, 20))
    nnz_row = rng.integers(0, 5, size=n)
    indptr = np.concatenate([[0], np.cumsum(nnz_row)]).astype(np.int64)
    indices = rng.integers(0, d, size=indptr[-1]).astype(np.int64)
    data = rng.normal(size=indptr[-1])
    count = rng.integers(1, 9, size=d).astype(np.float64)
    sigma = float(rng.uniform(1, 9))
    row_sigma, step, x2 = np.empty(d), np.empty_like(data), np.full(n, np.nan)
    scale_steps(data, indices, indptr, count, sigma, row_sigma, step, x2)
    np.testing.assert_array_equal(row_sigma, np.minimum(count, sigma))
    np.testing.assert_allclose(step, data * np.minimum(count, sigma)[indices])
    expected = [float(data[a:b] @ step[a:b]) for a, b in zip(indptr[:-1], indptr[1:])]
    np.testing.assert_allclose(x2, expected, atol=1e-12)
    a, b = rng.normal(size=7), rng.normal(size=7)
    assert squared_distance(a, b) == pytest.approx(float(np.sum((a - b) ** 2)))
    for x in (a, a.astype(np.float32), a[:0]):
        assert squared_norm(x) == pytest.approx(float(np.sum(x.astype(np.float64) ** 2)))


def test_partitioned_fit_records_a_damping_below_the_partitions():
    """Unaligned late moves: the damping falls below P, the fit reaches the
    certified gap, and the model depends on P, not on the threads."""
    X, y = make_chain_data(80, length=6, n_labels=12, n_features=200, density=0.05,
                           random_state=3)
    fits = []
    for n_jobs in (1, 2):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            fits.append(SequenceSSVM(C=0.1, tol=0.01, max_iter=500, random_state=0,
                                     n_jobs=n_jobs, training_partitions=4).fit(X, y))
    h = fits[0].history_
    assert fits[0].converged_ and h[-1]["relative_gap"] <= 0.01
    assert h[0]["damping"] == (4.0, 4.0)
    assert min(r["damping"][0] for r in h) < 4.0
    assert all(1.0 <= r["damping"][0] <= 4.0 and 1.0 <= r["damping"][1] <= 4.0 for r in h)
    assert [r["damping"] for r in h] == [r["damping"] for r in fits[1].history_]
    np.testing.assert_array_equal(fits[0].coef_, fits[1].coef_)
