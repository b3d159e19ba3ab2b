"""Tests of MultiLabelSSVM (GDMM with the joint pair oracle; BCFW and SSG with enumeration)."""

import itertools
import pickle
import warnings

import numpy as np
import pytest
from scipy.optimize import minimize
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

from structlearn.estimators import MultiLabelSSVM
from structlearn.learners._multilabel_kernels import max_labeling


def _data(seed, n=6, d=3, L=3):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d)
    Y = (rng.rand(n, L) < 0.5).astype(int)
    return X, Y


@pytest.mark.parametrize("seed", range(10))
def test_gray_code_oracle_matches_brute_force(seed):
    rng = np.random.RandomState(seed)
    L = rng.randint(1, 8)
    u = rng.randn(L)
    P = np.triu(rng.randn(L, L), 1)
    E = (np.triu(rng.rand(L, L), 1) > 0.3).astype(np.uint8)
    out = np.empty(L, dtype=np.int64)
    best = max_labeling(u, P, E, int(E.sum()), out, np.empty(L))
    ref = max(np.dot(y, u) + sum(P[a, b] * y[a] * y[b] for a in range(L) for b in range(a + 1, L) if E[a, b])
              for y in itertools.product((0, 1), repeat=L))
    assert abs(best - ref) < 1e-10
    val = out @ u + sum(P[a, b] * out[a] * out[b] for a in range(L) for b in range(a + 1, L) if E[a, b])
    assert abs(val - ref) < 1e-10


def _reference(X, Y, C, E):
    """Exact optimum: QP over all labelings (SLSQP)."""
    n, L = Y.shape
    d = X.shape[1]
    pairs = [(a, b) for a in range(L) for b in range(a + 1, L) if E[a, b]]

    def phi(x, y):
        return np.concatenate([np.outer(y, x).ravel(), [y[a] * y[b] for a, b in pairs]])

    n_w = L * d + len(pairs)
    rows, rhs, owner = [], [], []
    for i in range(n):
        for y in itertools.product((0, 1), repeat=L):
            y = np.array(y)
            rows.append(phi(X[i], y) - phi(X[i], Y[i]))
            rhs.append(float(np.sum(y != Y[i])))
            owner.append(i)
    A = np.array(rows)
    G = np.zeros((A.shape[0], n_w + n))
    G[:, :n_w] = -A
    G[np.arange(A.shape[0]), n_w + np.array(owner)] = 1.0
    b = np.array(rhs)
    u0 = np.zeros(n_w + n)
    u0[n_w:] = L + 1.0
    res = minimize(lambda u: 0.5 * u[:n_w] @ u[:n_w] + C * u[n_w:].sum(), u0,
                   jac=lambda u: np.concatenate([u[:n_w], np.full(n, C)]),
                   constraints=[{"type": "ineq", "fun": lambda u: G @ u - b, "jac": lambda u: G}],
                   method="SLSQP", options={"maxiter": 1000, "ftol": 1e-12})
    assert res.success
    return res.fun


@pytest.mark.parametrize("pairwise", ["full", "none"])
def test_solvers_agree_with_enumeration_reference(pairwise):
    X, Y = _data(0)
    L = Y.shape[1]
    E = np.triu(np.ones((L, L), dtype=np.uint8), 1) if pairwise == "full" else np.zeros((L, L))
    ref = _reference(X, Y, 1.0, E)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        bcfw = MultiLabelSSVM(pairwise=pairwise, max_iter=5000, tol=2e-4, random_state=0).fit(X, Y)
        ssg = MultiLabelSSVM(pairwise=pairwise, solver="ssg", max_iter=15000, tol=0.0,
                             random_state=0).fit(X, Y)
    for m in (bcfw, ssg):
        val = m.history_[-1]["primal"]
        assert val >= ref - 1e-6 * ref
        assert abs(val - ref) <= 1e-3 * ref, (m.solver, val, ref)
    for r in bcfw.history_:
        assert r["dual"] <= r["primal"] + 1e-10


def test_predict_score_and_backend():
    X, Y = _data(1, n=40, d=5, L=4)
    m = MultiLabelSSVM(max_iter=50, tol=1e-2, random_state=0).fit(X, Y)
    pred = m.predict(X)
    assert pred.shape == Y.shape and set(np.unique(pred)) <= {0, 1}
    assert m.score(X, Y) == np.mean(pred == Y)
    np.testing.assert_allclose(m.pairwise_coef_, m.pairwise_coef_.T)
    assert np.all(np.diag(m.pairwise_coef_) == 0)
    np.testing.assert_array_equal(clone(m).set_params(inference="brute_force").fit(X, Y).predict(X), pred)
    edges = MultiLabelSSVM(pairwise=[[0, 1], [2, 3]], max_iter=20, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        edges.fit(X, Y)
    nz = np.argwhere(edges.pairwise_coef_ != 0)
    assert set(map(tuple, nz)) <= {(0, 1), (1, 0), (2, 3), (3, 2)}


def test_conventions():
    X, Y = _data(2, n=20, d=4, L=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        m = MultiLabelSSVM(max_iter=5, tol=0.0, random_state=1).fit(X, Y)
        m2 = clone(m).fit(X, Y)
        np.testing.assert_array_equal(m.coef_, m2.coef_)
        r = pickle.loads(pickle.dumps(m))
        np.testing.assert_array_equal(r.predict(X), m.predict(X))
        w = MultiLabelSSVM(max_iter=5, tol=0.0, random_state=1, warm_start=True).fit(X, Y)
        first = w.history_[-1]["primal"]
        w.fit(X, Y)
    assert w.n_iter_ == 10 and w.history_[-1]["primal"] <= first + 1e-12


def test_bad_input():
    X, Y = _data(0)
    with pytest.raises(ValueError, match="only 0 and 1"):
        MultiLabelSSVM().fit(X, Y * 2)
    with pytest.raises(ValueError, match="NaN"):
        Xb = X.copy()
        Xb[0, 0] = np.nan
        MultiLabelSSVM().fit(Xb, Y)
    with pytest.raises(ValueError, match="C must be"):
        MultiLabelSSVM(C=0).fit(X, Y)
    with pytest.raises(ValueError, match="pairwise"):
        MultiLabelSSVM(pairwise="some").fit(X, Y)
    with pytest.raises(ValueError, match="pairwise"):
        MultiLabelSSVM(pairwise=[[0, 0]]).fit(X, Y)
    with pytest.raises(ValueError, match="samples"):
        MultiLabelSSVM().fit(X, Y[:-1])
    with pytest.raises(ValueError, match="at most 24 labels"):
        MultiLabelSSVM(solver="bcfw").fit(np.ones((3, 2)), np.zeros((3, 30), dtype=int))
    with pytest.raises(ValueError, match="solver must be"):
        MultiLabelSSVM(solver="lp").fit(X, Y)
    with pytest.raises(ValueError, match="rho must be"):
        MultiLabelSSVM(rho=-1.0).fit(X, Y)
    with pytest.raises(ValueError, match="oracle must be"):
        MultiLabelSSVM(oracle="heap").fit(X, Y)
