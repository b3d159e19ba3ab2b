"""Tests of MultiLabelSSVM (GDMM with the joint pair oracle; BCFW and SSG with enumeration)."""

import itertools
import pickle
import warnings

import numpy as np
import scipy.sparse as sp
import pytest
from scipy.optimize import Bounds, LinearConstraint, minimize
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

from structlearn.estimators import MultiLabelSSVM
from structlearn.inference.lp.gdmm_binary import gdmm_binary_batch
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


def _lp_reference(X, Y, C, E):
    """Optimum of the LP-relaxed objective: QP over (w, LP-dual variables) (SLSQP).

    Each sample's loss-augmented LP ``max u.x + P.z`` over the local polytope
    (``z <= x_a, z <= x_b, x_a + x_b - 1 <= z``, box) is replaced by its LP
    dual, whose variables join ``w`` in one QP.
    """
    n, L = Y.shape
    d = X.shape[1]
    pairs = [(a, b) for a in range(L) for b in range(a + 1, L) if E[a, b]]
    nE = len(pairs)
    n_w = L * d + nE
    per = 3 * nE + L + nE  # mu (3 per pair), r (per label), t (per pair)
    N = n_w + n * per
    lin = np.zeros(N)  # linear objective in the non-w variables, plus -truth(w) terms
    rows, rhs = [], []
    for i in range(n):
        base = n_w + i * per
        mu = lambda f, c: base + 3 * f + c  # noqa: E731
        r = lambda j: base + 3 * nE + j  # noqa: E731
        t = lambda f: base + 3 * nE + L + f  # noqa: E731
        for f in range(nE):
            lin[mu(f, 2)] += C
            lin[t(f)] += C
        for j in range(L):
            lin[r(j)] += C
            # truth: -C (w_j . x_i - 1) for positive labels (constant part in rhs of objective)
            if Y[i, j]:
                lin[j * d:(j + 1) * d] -= C * X[i]
        for f, (a, b) in enumerate(pairs):
            if Y[i, a] and Y[i, b]:
                lin[L * d + f] -= C
        # r_j - (w_j . x_i + 1 - 2 y_ij) - sum_f (mu_side - mu3) >= 0
        for j in range(L):
            g = np.zeros(N)
            g[r(j)] = 1.0
            g[j * d:(j + 1) * d] = -X[i]
            for f, (a, b) in enumerate(pairs):
                if j == a:
                    g[mu(f, 0)] -= 1.0
                    g[mu(f, 2)] += 1.0
                elif j == b:
                    g[mu(f, 1)] -= 1.0
                    g[mu(f, 2)] += 1.0
            rows.append(g)
            rhs.append(1.0 - 2.0 * Y[i, j])
        # t_f - P_f + mu1 + mu2 - mu3 >= 0
        for f in range(nE):
            g = np.zeros(N)
            g[t(f)] = 1.0
            g[L * d + f] = -1.0
            g[mu(f, 0)] = g[mu(f, 1)] = 1.0
            g[mu(f, 2)] = -1.0
            rows.append(g)
            rhs.append(0.0)
    const = C * float(Y.sum())
    G = np.array(rows)
    b = np.array(rhs)
    bounds = [(None, None)] * n_w + [(0.0, None)] * (n * per)
    u0 = np.zeros(N)
    u0[n_w:] = 1.0

    def fun(u):
        return 0.5 * u[:n_w] @ u[:n_w] + lin @ u + const

    def jac(u):
        gr = lin.copy()
        gr[:n_w] += u[:n_w]
        return gr

    res = minimize(fun, u0, jac=jac, bounds=bounds, method="SLSQP",
                   constraints=[{"type": "ineq", "fun": lambda u: G @ u - b, "jac": lambda u: G}],
                   options={"maxiter": 2000, "ftol": 1e-13})
    if res.success:
        return res.fun
    # SLSQP can stop at the optimum without certifying it ("positive directional
    # derivative", seen with scipy 1.17): confirm with an interior-point solve
    lb = np.array([-np.inf if lo is None else lo for lo, _ in bounds])
    hess = np.diag((np.arange(N) < n_w).astype(float))
    tc = minimize(fun, res.x, jac=jac, hess=lambda u: hess, method="trust-constr",
                  bounds=Bounds(lb, np.full(N, np.inf)),
                  constraints=[LinearConstraint(G, b, np.inf)],
                  options={"gtol": 1e-12, "xtol": 1e-14, "maxiter": 20000})
    assert tc.status in (1, 2) and tc.constr_violation <= 1e-9, tc.message
    assert abs(tc.fun - res.fun) <= 1e-7 * abs(tc.fun), (res.message, res.fun, tc.fun)
    return min(res.fun, tc.fun)


def _fit_all(X, Y, pairwise):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return {
            "gdmm": MultiLabelSSVM(pairwise=pairwise, fit_intercept=False, max_iter=3000, tol=1e-5,
                                   random_state=0).fit(X, Y),
            "bcfw": MultiLabelSSVM(pairwise=pairwise, fit_intercept=False, solver="bcfw", max_iter=5000, tol=2e-4,
                                   random_state=0).fit(X, Y),
            "ssg": MultiLabelSSVM(pairwise=pairwise, fit_intercept=False, solver="ssg", max_iter=15000, tol=0.0,
                                  random_state=0).fit(X, Y),
        }


@pytest.mark.parametrize("case", ["none", "tree", "single_pair"])
def test_solvers_agree_with_enumeration_reference(case):
    # forests: the LP relaxation that gdmm optimizes is tight, all three share the objective
    X, Y = _data(0, L=2 if case == "single_pair" else 3)
    L = Y.shape[1]
    pairwise = {"none": "none", "tree": [[0, 1], [1, 2]], "single_pair": "full"}[case]
    from structlearn.estimators.ssvm import _edge_mask

    ref = _reference(X, Y, 1.0, _edge_mask(pairwise, L))
    models = _fit_all(X, Y, pairwise)
    for name, m in models.items():
        val = m.history_[-1]["primal"]
        assert val >= ref - 1e-6 * ref
        assert abs(val - ref) <= 1e-3 * ref, (name, val, ref)
    g = models["gdmm"]
    assert g.converged_
    assert abs(g.history_[-1]["primal_exact"] - ref) <= 1e-3 * ref
    for m in (g, models["bcfw"]):
        for r in m.history_:
            if not r.get("checked", True):  # gdmm: NaN on the passes it does not check
                assert np.isnan(r["dual"]) and np.isnan(r["primal"])
                continue
            assert r["dual"] <= r["primal"] + 1e-9 * abs(r["primal"])
            assert r["dual"] <= ref + 1e-6 * ref


@pytest.mark.parametrize("seed", [0, 3])
def test_gdmm_triangle_matches_lp_relaxed_reference(seed):
    # loopy label graph: gdmm optimizes the LP-relaxed hinge, an upper bound of the exact one
    X, Y = _data(seed, n=6, L=3)
    L = Y.shape[1]
    E = np.triu(np.ones((L, L), dtype=np.uint8), 1)
    ref_lp = _lp_reference(X, Y, 1.0, E)
    ref_exact = _reference(X, Y, 1.0, E)
    assert ref_exact <= ref_lp + 1e-6 * ref_lp
    m = MultiLabelSSVM(pairwise="full", fit_intercept=False, max_iter=3000, tol=1e-5,
                       random_state=0).fit(X, Y)
    assert m.converged_
    h = m.history_
    assert abs(h[-1]["primal"] - ref_lp) <= 1e-3 * ref_lp
    for r in (r for r in h if r["checked"]):
        assert r["dual"] <= ref_lp + 1e-6 * ref_lp  # certified lower bound
        assert r["primal"] >= ref_lp - 1e-6 * ref_lp  # certified upper bound
        assert r["primal_exact"] <= r["primal"] + 1e-9 * r["primal"]
    assert h[-1]["gap"] < 0.01 * h[0]["gap"]
    assert h[-1]["infeasibility"] < 1e-2


def test_lp_hinge_bound_is_an_upper_bound_of_the_lp():
    from scipy.optimize import linprog

    from structlearn.estimators._validation import csr_arrays
    from structlearn.learners._gdmm_multilabel_kernels import PairPool, lp_hinge_bound

    rng = np.random.RandomState(0)
    n, d, L = 4, 3, 5
    X = rng.randn(n, d)
    Y = (rng.rand(n, L) < 0.4).astype(np.int64)
    E = (np.triu(rng.rand(L, L), 1) > 0.3).astype(np.uint8)
    pairs = list(zip(*np.nonzero(E)))
    W = rng.randn(d, L)
    Pw = np.zeros(L * (L - 1) // 2)
    iu = {p: k for k, p in enumerate(zip(*np.triu_indices(L, 1)))}
    for a, b in pairs:
        Pw[iu[(a, b)]] = rng.randn() * 2
    data, indices, indptr = csr_arrays(X)
    # touched labels: positives plus label 0; all their edges active with random multipliers
    tmask = (Y != 0).astype(np.uint8)
    tmask[:, 0] = 1
    cap = len(pairs)
    left = np.zeros(n * cap, dtype=np.int64)
    right = np.zeros(n * cap, dtype=np.int64)
    nu = rng.rand(n * cap, 3)
    nf = np.zeros(n, dtype=np.int64)
    for i in range(n):
        for a, b in pairs:
            if tmask[i, a] and tmask[i, b]:
                left[i * cap + nf[i]], right[i * cap + nf[i]] = a, b
                nf[i] += 1
    pool = PairPool(left, right, np.zeros(n * cap), nu, np.arange(n, dtype=np.int64) * cap,
                    np.full(n, cap, dtype=np.int64), nf, np.array([n * cap], dtype=np.int64))
    up = np.array([(a, b) for a, b in pairs if Pw[iu[(a, b)]] > 0], dtype=np.int64)
    out = np.empty(n)
    lp_hinge_bound(W, Pw, E, data, indices, indptr, Y, 0.7, pool, up[:, 0].copy(),
                   up[:, 1].copy(), out)
    nE = len(pairs)
    for i in range(n):
        u = X[i] @ W + 1.0 - 2.0 * Y[i]
        c = -np.concatenate([u, [Pw[iu[p]] for p in pairs]])
        A, b = [], []
        for f, (a, bb) in enumerate(pairs):
            for row in ([(L + f, 1.0), (a, -1.0)], [(L + f, 1.0), (bb, -1.0)],
                        [(a, 1.0), (bb, 1.0), (L + f, -1.0)]):
                g = np.zeros(L + nE)
                for k, v in row:
                    g[k] = v
                A.append(g)
            b += [0.0, 0.0, 1.0]
        lp = linprog(c, A_ub=np.array(A), b_ub=np.array(b), bounds=[(0, 1)] * (L + nE))
        truth = X[i] @ W @ Y[i] - Y[i].sum() + sum(Pw[iu[p]] * Y[i, p[0]] * Y[i, p[1]]
                                                   for p in pairs)
        assert out[i] >= -lp.fun - truth - 1e-9


@pytest.mark.parametrize("pairwise", ["full", "random"])
def test_gdmm_oracle_values_run_one_search_that_examines_few_pairs(pairwise):
    rng = np.random.RandomState(1)
    n, d, L = 25, 6, 12
    X = rng.randn(n, d)
    Y = (rng.rand(n, L) < 0.2).astype(int)
    if pairwise == "random":
        pairwise = np.argwhere(np.triu(rng.rand(L, L), 1) > 0.6)
    kw = dict(pairwise=pairwise, max_iter=15, tol=0.0, random_state=3, check_every=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        sub = MultiLabelSSVM(oracle="sublinear", **kw).fit(X, Y)
        dense = MultiLabelSSVM(oracle="dense", **kw).fit(X, Y)
    np.testing.assert_array_equal(sub.coef_, dense.coef_)
    np.testing.assert_array_equal(sub.pairwise_coef_, dense.pairwise_coef_)
    assert [r["dual"] for r in sub.history_] == [r["dual"] for r in dense.history_]
    n_pairs = L * (L - 1) // 2
    # the greedy pair search reads the positive pairs and the positive
    # weights in decreasing order: far fewer than every pair of every sample
    assert sum(r["oracle_entries"] for r in sub.history_) < 15 * n * (L + n_pairs)
    assert np.any(sub.pairwise_coef_ != 0)


def test_gdmm_many_labels_fit_and_predict():
    rng = np.random.RandomState(0)
    n, d, L = 30, 5, 30
    X = rng.randn(n, d)
    Y = (rng.rand(n, L) < 0.1).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        m = MultiLabelSSVM(pairwise="full", max_iter=20, random_state=0).fit(X, Y)
    assert all(r["dual"] <= r["primal"] for r in m.history_ if r["checked"])
    assert np.isnan(m.history_[-1]["primal_exact"])
    pred = m.predict(X)  # auto: persistency + enumeration above the enumeration limit
    assert pred.shape == (n, L) and set(np.unique(pred)) <= {0, 1}
    np.testing.assert_array_equal(m.predict(X), pred)  # deterministic
    a, b = np.nonzero(m._edges)
    U, w = m.decision_function(X), m.pairwise_coef_[a, b]
    ref, scores, bounds, _ = gdmm_binary_batch(U, np.stack([a, b], 1), w)
    ours = (U * pred).sum(1) + (w * pred[:, a] * pred[:, b]).sum(1)
    assert np.all(ours >= scores - 1e-9) and np.all(ours <= bounds + 1e-9)
    # with no interaction weights every back-end must return sign(decision_function)
    m.pairwise_coef_ = np.zeros((L, L))
    np.testing.assert_array_equal(m.predict(X), (m.decision_function(X) > 0).astype(int))
    with pytest.raises(ValueError, match="exact inference supports at most"):
        m.set_params(inference="exact").predict(X)


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


def test_warm_start_on_swapped_targets_starts_afresh():
    """Two samples swapping their label rows keep every size and sum: the
    duals of the first fit are still not reused."""
    X, Y = _data(3, n=8)
    i, j = next((i, j) for i in range(8) for j in range(i + 1, 8) if (Y[i] != Y[j]).any())
    Y2 = Y.copy()
    Y2[[i, j]] = Y[[j, i]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        m = MultiLabelSSVM(max_iter=5, tol=0.0, random_state=1, warm_start=True)
        m.fit(X, Y).fit(X, Y2)
        fresh = MultiLabelSSVM(max_iter=5, tol=0.0, random_state=1).fit(X, Y2)
    assert m.n_iter_ == 5
    np.testing.assert_array_equal(m.coef_, fresh.coef_)


def test_bad_input():
    X, Y = _data(0)
    with pytest.raises(ValueError, match="only 0 and 1"):
        MultiLabelSSVM().fit(X, Y * 2)
    with pytest.raises(ValueError, match="NaN"):
        Xb = X.copy()
        Xb[0, 0] = np.nan
        MultiLabelSSVM().fit(Xb, Y)
    with pytest.raises(ValueError, match="'C' parameter of MultiLabelSSVM must be"):
        MultiLabelSSVM(C=0).fit(X, Y)
    with pytest.raises(ValueError, match="pairwise"):
        MultiLabelSSVM(pairwise="some").fit(X, Y)
    with pytest.raises(ValueError, match="pairwise"):
        MultiLabelSSVM(pairwise=[[0, 0]]).fit(X, Y)
    with pytest.raises(ValueError, match="samples"):
        MultiLabelSSVM().fit(X, Y[:-1])
    with pytest.raises(ValueError, match="at most 24 labels"):
        MultiLabelSSVM(solver="bcfw", pairwise="full").fit(np.ones((3, 2)),
                                                           np.zeros((3, 30), dtype=int))
    with pytest.raises(ValueError, match="'solver' parameter of MultiLabelSSVM must be a str among"):
        MultiLabelSSVM(solver="lp").fit(X, Y)
    with pytest.raises(ValueError, match="'rho' parameter of MultiLabelSSVM must be"):
        MultiLabelSSVM(rho=-1.0).fit(X, Y)
    with pytest.raises(ValueError, match="'oracle' parameter of MultiLabelSSVM must be a str among"):
        MultiLabelSSVM(oracle="heap").fit(X, Y)


@pytest.mark.parametrize("solver", ["gdmm", "bcfw", "ssg"])
def test_intercept_is_a_scaled_constant_feature(solver):
    # fit_intercept must equal appending the constant column by hand, dense or sparse
    X, Y = _data(4, n=15, d=4, L=3)
    Y[:, 0] = 1  # a label that is almost always on needs its bias
    Y[0, 0] = 0
    kw = dict(solver=solver, max_iter=30, tol=0.0, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        m = MultiLabelSSVM(intercept_scaling=2.0, **kw).fit(X, Y)
        ms = MultiLabelSSVM(intercept_scaling=2.0, **kw).fit(sp.csr_matrix(X), Y)
        manual = MultiLabelSSVM(fit_intercept=False, **kw).fit(
            np.hstack([X, np.full((X.shape[0], 1), 2.0)]), Y)
    np.testing.assert_allclose(m.coef_, manual.coef_[:, :-1], atol=1e-12)
    np.testing.assert_allclose(m.intercept_, 2.0 * manual.coef_[:, -1], atol=1e-12)
    np.testing.assert_allclose(ms.coef_, m.coef_, atol=1e-10)
    np.testing.assert_allclose(m.decision_function(X), X @ m.coef_.T + m.intercept_)
    Xm = np.hstack([X, np.full((X.shape[0], 1), 2.0)])
    np.testing.assert_array_equal(m.predict(X), manual.predict(Xm))
    np.testing.assert_array_equal(ms.predict(sp.csr_matrix(X)), m.predict(X))
    assert m.intercept_[0] > 0
    np.testing.assert_array_equal(manual.intercept_, np.zeros(3))


def test_intercept_parameters_are_checked():
    X, Y = _data(0)
    with pytest.raises(TypeError, match="fit_intercept"):
        MultiLabelSSVM(fit_intercept="yes").fit(X, Y)
    with pytest.raises(ValueError, match="intercept_scaling"):
        MultiLabelSSVM(intercept_scaling=0.0).fit(X, Y)


def test_auto_oracle_scans_pairs_below_90_labels():
    from structlearn.estimators.ssvm import SORTED_PAIR_ORACLE_MIN_LABELS

    rng = np.random.RandomState(0)
    for L, sorted_search in ((5, False), (SORTED_PAIR_ORACLE_MIN_LABELS, True)):
        X = rng.randn(6, 3)
        Y = (rng.rand(6, L) < 0.2).astype(int)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            m = MultiLabelSSVM(max_iter=2, warm_start=True, random_state=0).fit(X, Y)
        assert m.oracle == "auto"
        assert m._solver_state.sublinear is sorted_search


def test_defaults_run_to_a_one_percent_gap_within_300_passes():
    """``MultiLabelSSVM()`` stops at a certified 1 % gap (``tol="auto"``) and
    allows 300 passes for it."""
    params = MultiLabelSSVM().get_params()
    assert params["tol"] == "auto" and params["max_iter"] == 300
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 6))
    Y = (X[:, :4] + 0.5 * rng.normal(size=(60, 4)) > 0).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        auto = MultiLabelSSVM(random_state=0).fit(X, Y)
    explicit = MultiLabelSSVM(tol=0.01, random_state=0).fit(X, Y)
    assert auto.converged_ and auto.history_[-1]["relative_gap"] <= 1e-2
    assert auto.n_iter_ == explicit.n_iter_
    np.testing.assert_array_equal(auto.coef_, explicit.coef_)
