"""Tests of SequenceSSVM and the chain structural-SVM solvers (GDMM, BCFW, SSG)."""

import itertools
import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

from structlearn.datasets import make_chain_data
from structlearn.estimators import SequenceSSVM
from structlearn.estimators._validation import check_sequences, csr_arrays, encode_sequence_labels
from structlearn.learners._gdmm_chain_kernels import (ChainData, ChainWeights, EdgePairs,
                                                     TokenSlots)
from structlearn.learners._ssvm_chain_kernels import project_shifted_simplex
from structlearn.learners._ssvm_common import ChainProblem, chain_edges


def _tiny(seed, lengths=(3, 2, 3), K=3, d=3):
    rng = np.random.RandomState(seed)
    X = [rng.randn(n, d) for n in lengths]
    y = [rng.randint(K, size=n) for n in lengths]
    for k in range(K):  # every class present
        y[0][0] = 0
        y[-1][-1] = K - 1
    return X, y


def _features(x, z, K):
    """Joint feature vector of labeling z: (unigram (K, d) flattened, transitions (K, K))."""
    d = x.shape[1]
    U = np.zeros((K, d))
    T = np.zeros((K, K))
    for t, zt in enumerate(z):
        U[zt] += x[t]
        if t:
            T[z[t - 1], zt] += 1.0
    return np.concatenate([U.ravel(), T.ravel()])


def _reference_objective(X, y, C, K):
    """Exact optimum by enumeration of all labelings inside a QP (SLSQP).

    min_w,xi 1/2 ||w||^2 + C sum xi_i  s.t.  xi_i >= <w, psi_i(z)> + Hamming(z, y_i)  for all z.
    """
    d = X[0].shape[1]
    n_w = K * d + K * K
    rows, rhs, owner = [], [], []
    for i, (x, yi) in enumerate(zip(X, y)):
        f_true = _features(x, yi, K)
        for z in itertools.product(range(K), repeat=len(yi)):
            z = np.array(z)
            rows.append(_features(x, z, K) - f_true)
            rhs.append(float(np.sum(z != yi)))
            owner.append(i)
    A = np.array(rows)
    b = np.array(rhs)
    owner = np.array(owner)
    n = len(X)

    def obj(u):
        return 0.5 * u[:n_w] @ u[:n_w] + C * u[n_w:].sum()

    def jac(u):
        g = np.zeros_like(u)
        g[:n_w] = u[:n_w]
        g[n_w:] = C
        return g

    G = np.zeros((A.shape[0], n_w + n))
    G[:, :n_w] = -A
    G[np.arange(A.shape[0]), n_w + owner] = 1.0
    cons = {"type": "ineq", "fun": lambda u: G @ u - b, "jac": lambda u: G}
    u0 = np.zeros(n_w + n)
    u0[n_w:] = b.max() + 1.0
    res = minimize(obj, u0, jac=jac, constraints=[cons], method="SLSQP",
                   options={"maxiter": 1000, "ftol": 1e-12})
    assert res.success, res.message
    return res.fun


def _problem(X, y):
    Xc, off, yc = check_sequences(X, y)
    classes, codes = encode_sequence_labels(yc)
    data, indices, indptr = csr_arrays(Xc)
    return ChainProblem(data, indices, indptr, off, codes, Xc.shape[1], classes.shape[0])


# ----------------------------------------------------------------- kernels
@pytest.mark.parametrize("seed", range(20))
def test_shifted_simplex_projection_matches_qp(seed):
    rng = np.random.RandomState(seed)
    m = rng.randint(1, 7)
    C = rng.uniform(0.1, 3.0)
    z = rng.randn(m) * 2
    out = np.empty(m)
    project_shifted_simplex(z, m, C, out)
    assert out[0] <= C + 1e-12 and np.all(out[1:] <= 1e-12) and abs(out.sum()) < 1e-10
    bounds = [(None, C)] + [(None, 0.0)] * (m - 1)
    res = minimize(lambda a: 0.5 * np.sum((a - z) ** 2), np.zeros(m), jac=lambda a: a - z,
                   bounds=bounds, constraints=[{"type": "eq", "fun": lambda a: a.sum()}],
                   method="SLSQP", options={"ftol": 1e-14, "maxiter": 500})
    np.testing.assert_allclose(out, res.x, atol=1e-6)


def _sorted_projection(z, C):
    """Reference: the sort-based projection of ``(C - z[0], -z[1:])`` onto ``{u >= 0, sum = C}``."""
    u = np.concatenate([[C - z[0]], -z[1:]])
    s = np.sort(u)[::-1]
    cs = np.cumsum(s) - C
    k = np.flatnonzero(s > cs / np.arange(1, u.size + 1))[-1]
    w = np.maximum(u - cs[k] / (k + 1), 0.0)
    return np.concatenate([[C - w[0]], -w[1:]])


@pytest.mark.parametrize("seed", range(10))
def test_shifted_simplex_projection_matches_sorted_reference(seed):
    # long vectors with ties, zeros and wide scales, as in GDMM's late slots
    rng = np.random.RandomState(seed)
    for _ in range(50):
        m = rng.randint(2, 400)
        C = rng.uniform(0.01, 5.0)
        z = rng.randn(m) * 10.0 ** rng.uniform(-3, 1)
        z[rng.rand(m) < 0.3] = 0.0
        z[rng.rand(m) < 0.2] = z[0]
        out = np.empty(m)
        project_shifted_simplex(z, m, C, out)
        np.testing.assert_allclose(out, _sorted_projection(z, C), rtol=0, atol=1e-10 * (1 + C))


# -------------------------------------------------------- solver agreement
@pytest.mark.parametrize("seed", [0, 1])
def test_solvers_agree_with_enumeration_reference(seed):
    X, y = _tiny(seed)
    C = 1.0
    ref = _reference_objective(X, y, C, 3)
    values = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for solver, kw in [("gdmm", dict(max_iter=2000, tol=1e-5)),
                           ("bcfw", dict(max_iter=3000, tol=1e-5)),
                           ("ssg", dict(max_iter=20000, tol=0.0))]:
            m = SequenceSSVM(C=C, solver=solver, random_state=0, **kw).fit(X, y)
            values[solver] = m.history_[-1]["primal"]
            # the recorded primal is the objective of the returned weights
            w = np.concatenate([m.coef_.ravel(), m.transition_.ravel()])
            hinge = 0.0
            for x, yi in zip(X, y):
                codes = np.searchsorted(m.classes_, yi)
                best = max(w @ (_features(x, np.array(z), 3) - _features(x, codes, 3))
                           + np.sum(np.array(z) != codes)
                           for z in itertools.product(range(3), repeat=len(yi)))
                hinge += best
            assert abs(0.5 * w @ w + C * hinge - values[solver]) < 1e-9 * max(1.0, abs(ref))
    for solver, val in values.items():
        assert val >= ref - 1e-6 * abs(ref), solver
        assert abs(val - ref) <= 1e-3 * abs(ref), (solver, val, ref)


@pytest.mark.parametrize("solver", ["gdmm", "bcfw"])
def test_dual_below_primal_and_gap_shrinks(solver):
    X, y = _tiny(3, lengths=(4, 3, 5, 2), K=4, d=5)
    y[1][0] = 1
    y[2][0] = 2
    tol = 1e-4 if solver == "gdmm" else 1e-2  # BCFW: O(1/t) gap, no away steps
    m = SequenceSSVM(C=1.0, solver=solver, max_iter=3000, tol=tol, random_state=0,
                     check_every=1).fit(X, y)
    h = m.history_
    assert m.converged_
    best_primal = min(r["primal"] for r in h)
    for r in h:
        assert r["dual"] <= r["primal"] + 1e-10
        assert r["dual"] <= best_primal + 1e-10
    assert h[-1]["gap"] < 0.05 * h[0]["gap"]
    assert h[-1]["relative_gap"] <= tol


def _dual_point(X, y, K, C, rng, perturb):
    """GDMM dual arrays (every label a slot, every pair listed) at the marginals of
    random distributions over labelings; ``perturb`` moves each edge's ``beta``
    inside its box (sum kept 0), breaking the consistency with ``alpha``."""
    prob = _problem(X, y)
    N = prob.n_tokens
    slab = np.zeros((N, K), dtype=np.int64)
    alpha = np.zeros((N, K))
    pa = np.zeros((N, K * K), dtype=np.int64)
    pb = np.zeros_like(pa)
    psa = np.zeros_like(pa)
    psb = np.zeros_like(pa)
    beta = np.zeros((N, K * K))
    nb_ = np.ones(N, dtype=np.int64)
    yc = prob.y
    for t in range(N):
        slab[t] = [yc[t]] + [c for c in range(K) if c != yc[t]]
    for i in range(prob.n_sequences):
        lo, hi = prob.offsets[i], prob.offsets[i + 1]
        labelings = np.array(list(itertools.product(range(K), repeat=hi - lo)))
        p = rng.dirichlet(np.full(len(labelings), 0.3))
        for t in range(lo, hi):
            mu = np.bincount(labelings[:, t - lo], weights=p, minlength=K)
            alpha[t] = C * ((np.arange(K) == yc[t]) - mu)[slab[t]]
            if t + 1 < hi:
                Mu = np.zeros((K, K))
                np.add.at(Mu, (labelings[:, t - lo], labelings[:, t + 1 - lo]), p)
                pairs = [(yc[t], yc[t + 1])] + [(a, b) for a in range(K) for b in range(K)
                                                 if (a, b) != (yc[t], yc[t + 1])]
                for q, (a, b) in enumerate(pairs):
                    pa[t, q], pb[t, q] = a, b
                    psa[t, q] = np.flatnonzero(slab[t] == a)[0]
                    psb[t, q] = np.flatnonzero(slab[t + 1] == b)[0]
                    beta[t, q] = C * ((q == 0) - Mu[a, b])
                if perturb:
                    # move mass between pairs within the box: truth in [0, C], others in [-C, 0]
                    for _ in range(3):
                        q1, q2 = rng.choice(K * K, 2, replace=False)
                        room1 = (C - beta[t, q1]) if q1 == 0 else -beta[t, q1]
                        room2 = (beta[t, q2]) if q2 == 0 else (C + beta[t, q2])
                        d = perturb * rng.uniform() * min(room1, room2)
                        beta[t, q1] += d
                        beta[t, q2] -= d
                nb_[t] = K * K
    W = np.zeros((prob.n_features, K))
    for t in range(N):
        x = np.zeros(prob.n_features)
        sl = slice(prob.indptr[t], prob.indptr[t + 1])
        x[prob.indices[sl]] = prob.data[sl]
        W[:, slab[t]] += np.outer(x, alpha[t])
    v = np.zeros(K * K)
    np.add.at(v, pa * K + pb, np.where(np.arange(K * K)[None, :] < nb_[:, None], beta, 0.0))
    ns = np.full(N, K, dtype=np.int64)
    has_left, has_right = chain_edges(prob.offsets, N)
    chain = ChainData(prob.data, prob.indices, prob.indptr, yc, np.zeros(N), has_left, has_right,
                      prob.data)
    zeros = np.zeros_like(alpha)
    slots = TokenSlots(slab, ns, alpha, zeros, zeros, zeros, zeros)
    args = (ChainWeights(W, v, v), None, chain, slots, EdgePairs(pa, pb, psa, psb, beta, nb_), C,
            np.empty(K * K))
    raw = -(0.5 * (W.ravel() @ W.ravel() + v @ v) + alpha[:, 1:].sum())
    return args, raw


@pytest.mark.parametrize("seed", range(4))
def test_gdmm_dual_certificate_is_a_lower_bound_and_exact_when_consistent(seed):
    """The repaired dual is exact at a consistent point, a lower bound on the
    optimum at any point, and moves by O(residual) from the raw dual value."""
    from structlearn.learners._gdmm_chain_kernels import gdmm_chain_dual

    K, C = 3, 1.0
    X, y = _tiny(seed, lengths=(3, 2, 3), K=K, d=3)
    ref = _reference_objective(X, y, C, K)
    rng = np.random.RandomState(seed)
    args, raw = _dual_point(X, y, K, C, rng, perturb=0.0)
    assert gdmm_chain_dual(*args) == pytest.approx(raw, abs=1e-12)
    assert raw <= ref + 1e-6 * abs(ref)
    prev = None
    for eps in (0.03, 0.003, 0.0003):
        args, raw = _dual_point(X, y, K, C, np.random.RandomState(seed), perturb=eps)
        dual = gdmm_chain_dual(*args)
        assert dual <= ref + 1e-6 * abs(ref)
        if prev is not None:  # shrinks with the residual
            assert abs(dual - raw) <= 0.2 * prev + 1e-12
        prev = abs(dual - raw)


def _reference_repaired_dual(st, K, y, C, has_right):
    """The dual certificate's repair written with a dense coupling over all
    listed slots of each edge (clear, scale rows, scale columns, give the
    deficits back by the north-west corner rule)."""
    vfeas = st.v.ravel().copy()
    for j in range(y.shape[0] - 1):
        if not has_right[j]:
            continue
        k = j + 1
        n1, n2 = st.slots.count[j], st.slots.count[k]
        mu1 = np.maximum((np.arange(n1) == 0) - st.slots.alpha[j, :n1] / C, 0.0)
        mu2 = np.maximum((np.arange(n2) == 0) - st.slots.alpha[k, :n2] / C, 0.0)
        Mu = np.zeros((n1, n2))
        for q in range(st.pairs.count[j]):
            Mu[st.pairs.left_slot[j, q], st.pairs.right_slot[j, q]] += (1.0 if q == 0 else 0.0) - st.pairs.beta[j, q] / C
            vfeas[st.pairs.left_label[j, q] * K + st.pairs.right_label[j, q]] -= st.pairs.beta[j, q]
        Mu[(Mu < 0.0) | (mu1[:, None] <= 0.0) | (mu2[None, :] <= 0.0)] = 0.0
        for s1 in range(n1):
            if Mu[s1].sum() > mu1[s1]:
                Mu[s1] *= mu1[s1] / Mu[s1].sum()
        for s2 in range(n2):
            if Mu[:, s2].sum() > mu2[s2]:
                Mu[:, s2] *= mu2[s2] / Mu[:, s2].sum()
        r1 = np.maximum(mu1 - Mu.sum(axis=1), 0.0)
        r2 = np.maximum(mu2 - Mu.sum(axis=0), 0.0)
        s1 = s2 = 0
        while s1 < n1 and s2 < n2:
            f = min(r1[s1], r2[s2])
            Mu[s1, s2] += f
            r1[s1] -= f
            r2[s2] -= f
            if r1[s1] <= 0.0:
                s1 += 1
            else:
                s2 += 1
        for s1 in range(n1):
            for s2 in range(n2):
                vfeas[st.slots.labels[j, s1] * K + st.slots.labels[k, s2]] += C * (
                    (1.0 if s1 == 0 and s2 == 0 else 0.0) - Mu[s1, s2])
    reg = 0.0
    for x in st.W.ravel():
        reg += x * x
    for x in vfeas:
        reg += x * x
    lin = 0.0
    for j in range(y.shape[0]):
        for s in range(1, st.slots.count[j]):
            lin += st.slots.alpha[j, s]
    return -(0.5 * reg + lin)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("K, C", [(4, 1.0), (12, 0.1), (25, 10.0)])
def test_gdmm_dual_repair_on_the_support_matches_the_plain_repair(K, C):
    """The kernel repairs each edge on the slots of positive marginal and
    its kept pairs only; the certificate equals a dense repair over all
    listed slots (to rounding) at the iterates of a run (inconsistent early,
    nearly consistent late)."""
    from structlearn.learners._gdmm_chain_kernels import gdmm_chain_dual
    from structlearn.learners.gdmm_chain import fit_gdmm_chain

    X, y = make_chain_data(25, length=6, n_labels=K, n_features=30, density=0.2,
                           random_state=K)
    Xc, offsets, yc = check_sequences(X, y)
    classes, codes = encode_sequence_labels(yc)
    prob = ChainProblem(*csr_arrays(Xc), offsets, codes, Xc.shape[1], len(classes))
    has_right = chain_edges(offsets, prob.n_tokens)[1]
    st = None
    for it in range(5):
        _, _, _, st, _ = fit_gdmm_chain(prob, C=C, rho=1.0, eta=1.0, max_iter=2, tol=0.0,
                                        sublinear=False, n_partitions=1,
                                        rng=np.random.RandomState(it), state=st,
                                        check_every=10**6)
        Kc = prob.n_labels
        chain = ChainData(prob.data, prob.indices, prob.indptr, prob.y,
                          np.zeros(prob.n_tokens), *chain_edges(offsets, prob.n_tokens),
                          prob.data)
        got = gdmm_chain_dual(ChainWeights(st.W, st.v.ravel(), st.v.ravel()), None, chain,
                              st.slots, st.pairs, C, np.empty(Kc * Kc))
        assert got == pytest.approx(_reference_repaired_dual(st, Kc, prob.y, C, has_right),
                                    rel=1e-12, abs=1e-12)
    # the run moved slots off the support (zero duals on listed labels)
    listed = np.arange(st.slots.labels.shape[1])[None, :] < st.slots.count[:, None]
    assert np.any(listed & (st.slots.alpha == 0.0)
                  & (np.arange(st.slots.labels.shape[1]) > 0)[None, :])


def test_gdmm_history_records():
    X, y = _tiny(4)
    m = SequenceSSVM(max_iter=5, tol=0.0, random_state=0)
    with pytest.warns(ConvergenceWarning):
        m.fit(X, y)
    assert m.n_iter_ == 5 and len(m.history_) == 5
    keys = {"time", "primal", "dual", "infeasibility", "active_set_size", "oracle_entries"}
    for r in m.history_:
        assert keys <= set(r)
        assert r["active_set_size"] >= 1.0 and r["oracle_entries"] > 0
    assert np.all(np.diff([r["time"] for r in m.history_]) > 0)


@pytest.mark.parametrize("solver", ["gdmm", "bcfw"])
def test_check_every_skips_monitoring_only(solver):
    from structlearn.datasets import make_chain_data

    X, y = make_chain_data(10, length=(2, 6), n_labels=5, n_features=12, random_state=0)
    kw = dict(solver=solver, max_iter=7, tol=0.0, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        every = SequenceSSVM(check_every=1, **kw).fit(X, y)
        sparse = SequenceSSVM(check_every=3, **kw).fit(X, y)
    np.testing.assert_array_equal(every.coef_, sparse.coef_)
    np.testing.assert_array_equal(every.transition_, sparse.transition_)
    checked = [r["iter"] for r in sparse.history_ if np.isfinite(r["primal"])]
    assert checked == [3, 6, 7] and len(sparse.history_) == 7
    for r in sparse.history_:
        if r["iter"] in checked:
            assert r["primal"] == every.history_[r["iter"] - 1]["primal"]
        else:
            assert np.isnan(r["dual"]) and np.isnan(r["relative_gap"]) and r["pass_time"] > 0
    # the stopping rule is only evaluated on checked passes
    m = SequenceSSVM(solver=solver, max_iter=500, tol=0.05, check_every=4, random_state=0)
    m.fit(X, y)
    assert m.converged_ and m.n_iter_ % 4 == 0 and m.history_[-1]["relative_gap"] <= 0.05
    with pytest.raises(ValueError, match="check_every"):
        SequenceSSVM(check_every=0).fit(X, y)


# ------------------------------------------------------------------ factor order
@pytest.mark.parametrize("seed", [0, 1])
def test_sequence_major_order_visits_each_factor_once_sequence_by_sequence(seed):
    from structlearn.learners.gdmm_chain import SequenceMajorOrder

    rng = np.random.RandomState(seed)
    lengths = rng.randint(1, 7, size=40)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    N = int(offsets[-1])
    _, has_right = chain_edges(offsets, N)
    factors = np.concatenate([np.arange(N), N + np.flatnonzero(has_right)]).astype(np.int64)
    seq_of_token = np.repeat(np.arange(lengths.size), lengths)
    orders = SequenceMajorOrder(factors, offsets, N)
    seen_firsts, seen_inner = set(), set()
    for _ in range(30):
        order = orders.draw(rng)
        assert order.dtype == np.int64
        np.testing.assert_array_equal(np.sort(order), np.sort(factors))  # each once
        seq = seq_of_token[np.where(order < N, order, order - N)]
        runs = seq[np.r_[True, seq[1:] != seq[:-1]]]
        assert runs.size == lengths.size  # each sequence's factors form one run
        seen_firsts.add(int(runs[0]))
        longest = int(np.argmax(lengths))
        seen_inner.add(tuple(order[seq == longest]))
    assert len(seen_firsts) > 10 and len(seen_inner) > 10  # random across and within
    # the same generator state gives the same order
    np.testing.assert_array_equal(orders.draw(np.random.RandomState(5)),
                                  orders.draw(np.random.RandomState(5)))


# ------------------------------------------------------------------ oracles
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sublinear_and_dense_oracles_give_same_iterates(seed):
    from structlearn.datasets import make_chain_data

    X, y = make_chain_data(12, length=(2, 7), n_labels=7, n_features=15, random_state=seed)
    kw = dict(max_iter=15, tol=0.0, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        a = SequenceSSVM(oracle="dense", **kw).fit(X, y)
        b = SequenceSSVM(oracle="sublinear", **kw).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.transition_, b.transition_)
    assert [r["primal"] for r in a.history_] == [r["primal"] for r in b.history_]
    # the sorted multimaps visit far fewer label pairs than the dense scan
    assert sum(r["oracle_entries"] for r in b.history_) < sum(r["oracle_entries"] for r in a.history_)


@pytest.mark.parametrize("K, n_partitions, expected", [(6, 1, "dense"), (6, 2, "sublinear"),
                                                       (50, 1, "sublinear")])
def test_auto_oracle_picks_by_the_number_of_classes(K, n_partitions, expected):
    """oracle="auto" runs the dense scans below 50 classes and the sorted search
    from 50 classes or with partition sampling: same iterates and the same
    oracle entries as the oracle it picks, fewer or more than the other."""
    X, _ = make_chain_data(10, length=5, n_labels=K, n_features=12, random_state=K)
    y = [np.arange(5 * i, 5 * i + 5) % K for i in range(10)]  # every class occurs
    kw = dict(max_iter=4, tol=0.0, random_state=0, n_partitions=n_partitions)
    other = {"dense": "sublinear", "sublinear": "dense"}[expected]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        auto = SequenceSSVM(**kw).fit(X, y)
        picked = SequenceSSVM(oracle=expected, **kw).fit(X, y)
        if n_partitions == 1:
            not_picked = SequenceSSVM(oracle=other, **kw).fit(X, y)
    assert auto.get_params()["oracle"] == "auto"
    np.testing.assert_array_equal(auto.coef_, picked.coef_)
    entries = [r["oracle_entries"] for r in auto.history_]
    assert entries == [r["oracle_entries"] for r in picked.history_]
    if n_partitions == 1:
        np.testing.assert_array_equal(auto.coef_, not_picked.coef_)
        assert entries != [r["oracle_entries"] for r in not_picked.history_]


def test_partition_sampling_reaches_the_same_optimum():
    X, y = _tiny(5, lengths=(3, 4, 2), K=4, d=4)
    y[1][:] = [0, 1, 2, 3]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        exact = SequenceSSVM(max_iter=1000, tol=1e-5, random_state=0).fit(X, y)
        sampled = SequenceSSVM(max_iter=1000, tol=1e-5, n_partitions=2, random_state=0).fit(X, y)
    p1 = exact.history_[-1]["primal"]
    p2 = sampled.history_[-1]["primal"]
    assert abs(p1 - p2) <= 1e-3 * p1


# -------------------------------------------------------------- estimator
def test_predict_score_decision_function_and_inference_backend():
    from structlearn.datasets import make_chain_data

    X, y = make_chain_data(40, length=6, n_labels=4, n_features=30, noise=0.1, random_state=0)
    y = [np.array(["abcd"[k] for k in yi]) for yi in y]
    m = SequenceSSVM(C=1.0, max_iter=200, tol=1e-2, random_state=0).fit(X, y)
    assert m.converged_
    pred = m.predict(X)
    assert [p.shape for p in pred] == [yi.shape for yi in y]
    assert set(np.concatenate(pred)) <= set("abcd")
    acc = m.score(X, y)
    assert acc == np.mean(np.concatenate(pred) == np.concatenate(y))
    assert acc > 0.9
    scores = m.decision_function(X)
    assert scores[0].shape == (6, 4)
    m2 = clone(m).set_params(inference="tree").fit(X, y)
    for p, q in zip(m2.predict(X), pred):
        np.testing.assert_array_equal(p, q)


def test_sparse_and_dense_input_give_same_model():
    X, y = _tiny(6)
    Xs = [sp.csr_matrix(x) for x in X]
    a = SequenceSSVM(max_iter=20, tol=0.0, random_state=0)
    b = clone(a)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        a.fit(X, y)
        b.fit(Xs, y)
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-12)


@pytest.mark.parametrize("solver", ["gdmm", "bcfw", "ssg"])
def test_conventions_clone_pickle_random_state(solver):
    X, y = _tiny(7, lengths=(3, 4, 2, 5), K=3, d=4)
    m = SequenceSSVM(solver=solver, max_iter=10, tol=0.0, random_state=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        m.fit(X, y)
        m2 = clone(m).fit(X, y)
    assert clone(m).get_params() == m.get_params()
    np.testing.assert_array_equal(m.coef_, m2.coef_)
    np.testing.assert_array_equal(m.transition_, m2.transition_)
    restored = pickle.loads(pickle.dumps(m))
    for p, q in zip(restored.predict(X), m.predict(X)):
        np.testing.assert_array_equal(p, q)


@pytest.mark.parametrize("solver", ["gdmm", "bcfw", "ssg"])
def test_warm_start_continues(solver):
    X, y = _tiny(8, lengths=(3, 4, 2, 5), K=3, d=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        m = SequenceSSVM(solver=solver, max_iter=5, tol=0.0, warm_start=True, random_state=0)
        m.fit(X, y)
        first = [r["primal"] for r in m.history_]
        m.fit(X, y)
        cold = SequenceSSVM(solver=solver, max_iter=5, tol=0.0, random_state=0).fit(X, y)
    assert m.n_iter_ == 10 and [r["primal"] for r in m.history_[:5]] == first
    assert m.history_[-1]["iter"] == 10
    # the continued run is better than a fresh one of the same length
    assert m.history_[-1]["primal"] < cold.history_[-1]["primal"]


@pytest.mark.parametrize("solver", ["gdmm", "bcfw", "ssg"])
def test_warm_start_on_relabeled_tokens_starts_afresh(solver):
    """Two tokens swapping their labels keep every size and sum: the duals,
    tied to each token's true label, are still not reused."""
    X, y = _tiny(8, lengths=(3, 4, 2, 5), K=3, d=4)
    y2 = [s.copy() for s in y]
    a, b = (0, 0), (3, 4)
    assert y2[a[0]][a[1]] != y2[b[0]][b[1]]
    y2[a[0]][a[1]], y2[b[0]][b[1]] = y2[b[0]][b[1]], y2[a[0]][a[1]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        m = SequenceSSVM(solver=solver, max_iter=5, tol=0.0, warm_start=True, random_state=0)
        m.fit(X, y).fit(X, y2)
        fresh = SequenceSSVM(solver=solver, max_iter=5, tol=0.0, random_state=0).fit(X, y2)
    assert m.n_iter_ == 5
    np.testing.assert_array_equal(m.coef_, fresh.coef_)
    np.testing.assert_array_equal(m.transition_, fresh.transition_)


def test_callback_stops_training():
    X, y = _tiny(9)
    seen = []
    m = SequenceSSVM(max_iter=50, tol=0.0, random_state=0,
                     callback=lambda rec: seen.append(rec["iter"]) or len(seen) >= 3)
    m.fit(X, y)
    assert seen == [1, 2, 3] and m.n_iter_ == 3


# -------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "params, match",
    [
        (dict(C=0.0), "'C' parameter of SequenceSSVM must be"),
        (dict(C=-1.0), "'C' parameter of SequenceSSVM must be"),
        (dict(C=np.inf), "'C' parameter of SequenceSSVM must be"),
        (dict(rho=0.0), "'rho' parameter of SequenceSSVM must be"),
        (dict(eta=-1.0), "'eta' parameter of SequenceSSVM must be"),
        (dict(max_iter=0), "'max_iter' parameter of SequenceSSVM must be"),
        (dict(tol=-1.0), "'tol' parameter of SequenceSSVM must be"),
        (dict(tol="fast"), "'tol' parameter of SequenceSSVM must be"),
        (dict(solver="sgd"), "'solver' parameter of SequenceSSVM must be"),
        (dict(oracle="fast"), "'oracle' parameter of SequenceSSVM must be"),
        (dict(n_partitions=0), "'n_partitions' parameter of SequenceSSVM must be"),
        (dict(n_partitions=5), "n_partitions must be <="),
        (dict(inference="nope"), "inference must be"),
    ],
)
def test_bad_parameters(params, match):
    X, y = _tiny(0)
    with pytest.raises(ValueError, match=match):
        SequenceSSVM(**params).fit(X, y)


def test_bad_input():
    X, y = _tiny(0)
    with pytest.raises(ValueError, match="at least 2"):
        SequenceSSVM().fit(X, [np.zeros(len(x), dtype=int) for x in X])
    with pytest.raises(ValueError, match="sequences"):
        SequenceSSVM().fit(X, y[:-1])
    with pytest.raises(ValueError, match="labels but X"):
        SequenceSSVM().fit(X, [y[0][:-1]] + y[1:])
    bad = [x.copy() for x in X]
    bad[1][0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN or infinity"):
        SequenceSSVM().fit(bad, y)
    bad[1][0, 0] = np.inf
    with pytest.raises(ValueError, match="NaN or infinity"):
        SequenceSSVM().fit(bad, y)
    with pytest.raises(TypeError, match="warm_start"):
        SequenceSSVM(warm_start="yes").fit(X, y)
    with pytest.raises(TypeError, match="callback"):
        SequenceSSVM(callback=3).fit(X, y)


def test_sparse_index_overflow_is_rejected():
    X, y = _tiny(0)
    # a sparse matrix whose int64 column indices point past n_features
    big = sp.csr_matrix(X[0])
    big.indices = big.indices.astype(np.int64)
    big.indices[0] = np.int64(2**40)
    with pytest.raises(ValueError, match="indices|index"):
        SequenceSSVM().fit([big] + X[1:], y)
    huge = [sp.csr_matrix((len(x), 2**33)) for x in X]
    with pytest.raises(ValueError, match="n_features"):
        SequenceSSVM().fit(huge, y)


def test_predict_before_fit_raises():
    from sklearn.exceptions import NotFittedError

    X, _ = _tiny(0)
    with pytest.raises(NotFittedError):
        SequenceSSVM().predict(X)


def _keep_sparse_rows(monkeypatch):
    """Sparse weight rows that stay sparse however full they get."""
    monkeypatch.setattr("structlearn.learners.gdmm_chain.DENSE_WEIGHTS_MIN_FILL", np.inf)


@pytest.mark.parametrize("oracle, n_partitions, K, sparse_rows", [
    ("sublinear", 1, 8, False), ("dense", 1, 8, False), ("sublinear", 2, 40, False),
    ("sublinear", 1, 8, True)])
def test_gdmm_weights_equal_those_rebuilt_from_the_duals(oracle, n_partitions, K, sparse_rows,
                                                         monkeypatch):
    """The certificate rests on the incrementally kept W and v: after a real
    multi-pass fit they equal W = X^T A (A[t, k]: the duals of token t's slots
    with label k) and v = sum of the pair duals, to rounding."""
    import scipy.sparse as sp

    import structlearn.estimators.ssvm as ssvm_module
    from structlearn.oracles.sparse_rows import sparse_rows_to_csr

    if sparse_rows:
        monkeypatch.setattr(ssvm_module, "SPARSE_WEIGHTS_MIN_ENTRIES", 1)
        _keep_sparse_rows(monkeypatch)
    X, y = make_chain_data(60, length=6, n_labels=K, n_features=30, random_state=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = SequenceSSVM(max_iter=60, warm_start=True, oracle=oracle,
                             n_partitions=n_partitions, random_state=0).fit(X, y)
    st = model._solver_state
    assert st.sparse_weights == sparse_rows
    W = sparse_rows_to_csr(st.Wsp, K).toarray() if sparse_rows else st.W
    Xc = sp.vstack([sp.csr_matrix(x) for x in X]).tocsr()
    N, K = Xc.shape[0], model.classes_.shape[0]
    A = np.zeros((N, K))
    for t in range(N):
        n = st.slots.count[t]
        np.add.at(A[t], st.slots.labels[t, :n], st.slots.alpha[t, :n])
    B = np.zeros((K, K))
    for t in range(N):
        m = st.pairs.count[t]
        np.add.at(B, (st.pairs.left_label[t, :m], st.pairs.right_label[t, :m]),
                  st.pairs.beta[t, :m])
    scale = max(1.0, np.abs(W).max())
    np.testing.assert_allclose(W, Xc.T @ A, rtol=0, atol=1e-10 * scale)
    np.testing.assert_allclose(st.v, B, rtol=0, atol=1e-10 * max(1.0, np.abs(st.v).max()))
    assert np.abs(W).max() > 0.1  # a real fit, not the zero start


@pytest.mark.parametrize("solver", ["gdmm", "bcfw", "ssg"])
def test_coef_is_the_weights_view_and_predicts_as_a_contiguous_copy(solver):
    """coef_ is the transposed (F-ordered) view of the solver's weights, not a
    second copy; predictions and scores equal those of a C-ordered copy, and
    a warm-startable model's coef_ is its own (a later fit leaves it alone)."""
    X, y = make_chain_data(20, length=(2, 6), n_labels=5, n_features=12, random_state=3)
    Xd = [x.toarray() for x in X]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        m = SequenceSSVM(solver=solver, max_iter=5, random_state=0).fit(X, y)
    assert m.coef_.flags.f_contiguous and not m.coef_.flags.owndata
    c = clone(m).set_params()
    c.__dict__.update(m.__dict__)
    c.coef_ = np.ascontiguousarray(m.coef_)
    for a, b in zip(m.predict(X), c.predict(X)):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(m.decision_function(Xd), c.decision_function(Xd)):
        np.testing.assert_array_equal(a, b)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        w = SequenceSSVM(solver=solver, max_iter=3, random_state=0, warm_start=True).fit(X, y)
        first = w.coef_
        kept = first.copy()
        w.fit(X, y)
    np.testing.assert_array_equal(first, kept)
    assert w.coef_ is not first


@pytest.mark.parametrize("n_jobs", [None, 2])
def test_sparse_weight_rows_give_the_dense_iterates(monkeypatch, n_jobs):
    """Where the dense weights would be large, GDMM keeps sparse rows: the same
    iterates, certificate values, coef_ (as CSR), predictions and warm start
    as the dense array; the model pickles and refits from its state."""
    import structlearn.estimators.ssvm as ssvm_module

    X, _ = make_chain_data(40, length=(2, 8), n_labels=60, n_features=25, random_state=4)
    y = [np.arange(3 * i, 3 * i + x.shape[0]) % 60 for i, x in enumerate(X)]  # all 60 occur
    kw = dict(max_iter=8, tol=0.0, random_state=0, n_jobs=n_jobs, check_every=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        dense = SequenceSSVM(**kw).fit(X, y)
        monkeypatch.setattr(ssvm_module, "SPARSE_WEIGHTS_MIN_ENTRIES", 25 * 60)
        _keep_sparse_rows(monkeypatch)
        rows = SequenceSSVM(**kw).fit(X, y)
        warm = SequenceSSVM(**dict(kw, max_iter=4, warm_start=True)).fit(X, y)
        warm.fit(X, y)
        restored = pickle.loads(pickle.dumps(warm))
        restored.fit(X, y)
        warm.fit(X, y)
    assert isinstance(dense.coef_, np.ndarray) and sp.issparse(rows.coef_)
    np.testing.assert_array_equal(rows.coef_.toarray(), dense.coef_)
    np.testing.assert_array_equal(rows.transition_, dense.transition_)
    for key in ("primal", "dual", "active_set_size"):
        assert [r[key] for r in rows.history_] == [r[key] for r in dense.history_]
    for a, b in zip(rows.predict(X), dense.predict(X)):
        np.testing.assert_array_equal(a, b)
    assert rows.score(X, y) == dense.score(X, y)
    # warm starts continue from the kept rows, also after a pickle round trip
    assert sp.issparse(warm.coef_) and warm.n_iter_ == 12
    assert [r["primal"] for r in rows.history_[:4]] == [r["primal"] for r in warm.history_[:4]]
    np.testing.assert_array_equal(warm.coef_.toarray(), restored.coef_.toarray())
    assert warm.history_[-1]["primal"] < warm.history_[3]["primal"]


def _fill_data():
    """Chains whose weights fill most of (25 features, 40 labels): every label
    occurs and the features are dense."""
    X, _ = make_chain_data(40, length=(2, 8), n_labels=40, n_features=25, density=0.5,
                           random_state=4)
    y = [np.arange(3 * i, 3 * i + x.shape[0]) % 40 for i, x in enumerate(X)]
    return X, y


@pytest.mark.parametrize("n_jobs", [None, 2])
def test_sparse_rows_that_fill_up_become_the_dense_weights(monkeypatch, n_jobs):
    """Sparse rows that come to store DENSE_WEIGHTS_MIN_FILL of the dense
    array's entries turn into it after a pass: the fit goes on with the dense
    iterates (float64 passes below 64 labels), coef_ is dense, and a warm
    start continues from the dense state."""
    import structlearn.estimators.ssvm as ssvm_module
    import structlearn.learners.gdmm_chain as gdmm_chain

    X, y = _fill_data()
    kw = dict(max_iter=12, tol=0.0, random_state=0, n_jobs=n_jobs, check_every=1,
              oracle="sublinear")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        dense = SequenceSSVM(**kw).fit(X, y)
        monkeypatch.setattr(ssvm_module, "SPARSE_WEIGHTS_MIN_ENTRIES", 25 * 40)
        real, storage = gdmm_chain.gdmm_chain_pass, []

        def spy(*args):
            storage.append(args[8] is not None)  # the pass ran on sparse rows
            return real(*args)

        monkeypatch.setattr(gdmm_chain, "gdmm_chain_pass", spy)
        switched = SequenceSSVM(**kw).fit(X, y)
        monkeypatch.setattr(gdmm_chain, "gdmm_chain_pass", real)
        warm = SequenceSSVM(**dict(kw, max_iter=6, warm_start=True)).fit(X, y)
        warm.fit(X, y)
    n_sparse = sum(storage)
    assert 1 <= n_sparse < 12 and storage == [True] * n_sparse + [False] * (12 - n_sparse)
    assert isinstance(switched.coef_, np.ndarray)
    np.testing.assert_array_equal(switched.coef_, dense.coef_)
    np.testing.assert_array_equal(switched.transition_, dense.transition_)
    for key in ("primal", "dual", "active_set_size"):
        assert [r[key] for r in switched.history_] == [r[key] for r in dense.history_]
    assert not warm._solver_state.sparse_weights and isinstance(warm.coef_, np.ndarray)
    assert warm.n_iter_ == 12
    assert [r["primal"] for r in warm.history_[:6]] == [r["primal"] for r in dense.history_[:6]]
    assert warm.history_[-1]["primal"] < warm.history_[5]["primal"]


def test_sparse_rows_stay_sparse_below_the_fill_or_without_the_memory(monkeypatch):
    """Rows that never store DENSE_WEIGHTS_MIN_FILL of the dense entries stay
    sparse, rows that reach it turn dense, and full rows stay sparse when the
    memory for the dense weights is not available."""
    import structlearn._memory as memory
    import structlearn.estimators.ssvm as ssvm_module
    import structlearn.learners.gdmm_chain as gdmm_chain
    from structlearn.oracles.sparse_rows import sparse_rows_nnz

    X, y = _fill_data()
    dK = 25 * 40
    kw = dict(max_iter=12, tol=0.0, random_state=0, check_every=1, oracle="sublinear",
              warm_start=True)  # (the state kept to read)
    monkeypatch.setattr(ssvm_module, "SPARSE_WEIGHTS_MIN_ENTRIES", dK)

    def fit(min_fill):
        monkeypatch.setattr(gdmm_chain, "DENSE_WEIGHTS_MIN_FILL", min_fill)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            return SequenceSSVM(**kw).fit(X, y)

    stored = sparse_rows_nnz(fit(np.inf)._solver_state.Wsp)  # the most the rows store
    kept = fit((stored + 1) / dK)
    switched = fit(stored / dK)
    nnz_X = sum(x.nnz for x in X)
    monkeypatch.setattr(memory, "available_bytes", lambda: 12 * dK + 16 * nnz_X - 1)
    short = fit(stored / dK)
    assert sp.issparse(kept.coef_) and sp.issparse(short.coef_)
    assert isinstance(switched.coef_, np.ndarray)
    np.testing.assert_array_equal(kept.coef_.toarray(), switched.coef_)
    np.testing.assert_array_equal(short.coef_.toarray(), switched.coef_)


def test_check_schedule_spaces_checks_while_the_gap_is_far_from_tol():
    from structlearn.learners._ssvm_common import CheckSchedule

    fixed = CheckSchedule(3, tol=1e-3)
    seen = []
    for p in range(1, 11):
        if fixed.due(p, 10):
            seen.append(p)
            fixed.checked(p, 0.5)  # a fixed interval whatever the gap
    assert seen == [3, 6, 9, 10]
    sched = CheckSchedule(1, adaptive=True, tol=1e-3)
    assert sched.due(1, 100)
    sched.checked(1, 0.9)       # far: the longest interval
    assert sched.next == 11
    sched.checked(11, 1.2e-3)   # 0.2 * 11 * 0.2 = 0.44 -> the base interval
    assert sched.next == 12
    sched.checked(30, 3e-3)     # 0.2 * 30 * 2 = 12 -> 10
    assert sched.next == 40
    sched.checked(60, 3e-3)     # 0.2 * 60 * 2 = 24 -> a quarter of the passes run, 15
    assert sched.next == 75
    sched.checked(200, 0.9)     # far: a quarter of the passes run
    assert sched.next == 250
    sched.checked(40, 1.5e-3)   # 0.2 * 40 * 0.5 = 4
    assert sched.next == 44
    sched.checked(50, 5e-4)     # met (the solver stops): the base interval
    assert sched.next == 51
    big = CheckSchedule(12, adaptive=True, tol=1e-3)
    big.checked(1, 0.5)
    assert big.next == 13       # never below the base interval, which may exceed 10
    zero = CheckSchedule(1, adaptive=True, tol=0.0)
    zero.checked(5, 0.01)
    assert zero.next == 15
    assert zero.due(7, 7)       # the last pass is always checked


@pytest.mark.parametrize("solver", ["gdmm", "bcfw"])
def test_auto_check_schedule_leaves_the_iterates_alone(solver):
    """check_every="auto" skips certificates far from tol; the iterates are
    those of checking every pass, the checked passes follow the schedule and
    a converged fit stops at its first check below tol."""
    from structlearn.learners._ssvm_common import CheckSchedule

    X, y = make_chain_data(30, length=(3, 8), n_labels=5, n_features=20, random_state=2)
    kw = dict(C=1.0, solver=solver, max_iter=40, tol=0.0, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        every = SequenceSSVM(check_every=1, **kw).fit(X, y)
        auto = SequenceSSVM(**kw).fit(X, y)
    np.testing.assert_array_equal(auto.coef_, every.coef_)
    np.testing.assert_array_equal(auto.transition_, every.transition_)
    checked = [r["iter"] for r in auto.history_ if not np.isnan(r["primal"])]
    assert checked == [1, 11, 21, 31, 40]
    for r in auto.history_:
        if r["iter"] in checked:
            ref = every.history_[r["iter"] - 1]
            assert r["primal"] == ref["primal"] and r["dual"] == ref["dual"]
    # with a reachable tol: the checks follow CheckSchedule on the certified gaps
    tol = 0.05
    fit = SequenceSSVM(**dict(kw, tol=tol, max_iter=200)).fit(X, y)
    assert fit.converged_
    sched = CheckSchedule(1, adaptive=True, tol=tol)
    expected = []
    for r in fit.history_:
        if sched.due(r["iter"], 200):
            expected.append(r["iter"])
            sched.checked(r["iter"], r["relative_gap"])
    assert [r["iter"] for r in fit.history_ if not np.isnan(r["primal"])] == expected
    assert fit.history_[-1]["relative_gap"] <= tol
    assert all(r["relative_gap"] > tol for r in fit.history_[:-1] if not np.isnan(r["primal"]))


def test_float32_search_scores_are_the_float64_scores_rounded():
    """The float32 search copy's scores (left in the workspace) differ from
    the float64 scores by rounding only (relative to the summed magnitudes)."""
    from structlearn.oracles._inner_kernels import inner_product_fmo32, inner_product_scores

    rng = np.random.default_rng(0)
    for K in (1, 7, 64, 300):
        W = rng.normal(size=(50, K)) * rng.choice([1e-3, 1.0, 1e3], size=(50, 1))
        X = sp.random(20, 50, density=0.3, random_state=1, format="csr")
        exact, approx = np.empty(K), np.empty(K)
        for i in range(20):
            a, b = X.indptr[i], X.indptr[i + 1]
            inner_product_scores(W, X.indices, X.data, a, b, exact)
            ws = (approx, np.zeros(K))
            inner_product_fmo32(W.astype(np.float32), X.indices, X.data, a, b,
                                np.empty(0, dtype=np.int64), np.empty(0), 0, 1.0, 0, 0,
                                np.empty(K, dtype=np.float32), ws)
            scale = np.abs(X.data[a:b]) @ np.abs(W[X.indices[a:b]]) if b > a else np.zeros(K)
            assert np.all(np.abs(approx - exact) <= 1e-5 * scale + 1e-30)


def _duals_times_features(X, slab, ns, alpha, K):
    """``X^T A`` with ``A[t, k]`` the duals of token ``t``'s slots labelled ``k``."""
    Xc = sp.vstack([sp.csr_matrix(x) for x in X]).tocsr()
    A = np.zeros((Xc.shape[0], K))
    for t in range(Xc.shape[0]):
        np.add.at(A[t], slab[t, :ns[t]], alpha[t, :ns[t]])
    return Xc.T @ A


def _fit_spying_on_passes(monkeypatch, min_labels, X, y, **kw):
    """Fit with float32 passes from ``min_labels`` classes; returns the model
    and, per pass, the float32 weights' largest deviation from ``X^T A`` after
    the pass (relative), or None when the pass had none."""
    import structlearn.learners.gdmm_chain as gdmm_chain

    monkeypatch.setattr(gdmm_chain, "FLOAT32_PASSES_MIN_LABELS", min_labels)
    real, seen = gdmm_chain.gdmm_chain_pass, []

    def spy(*args):
        rows = real(*args)
        slots, weights32 = args[1], args[9]
        slab, ns, alpha = slots.labels, slots.count, slots.alpha
        if weights32 is None:
            seen.append(None)
        else:
            W = _duals_times_features(X, slab, ns, alpha, weights32[0].shape[1])
            seen.append(float(np.abs(weights32[0] - W).max() / max(1.0, np.abs(W).max())))
        return rows

    monkeypatch.setattr(gdmm_chain, "gdmm_chain_pass", spy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = SequenceSSVM(random_state=0, **kw).fit(X, y)
    return model, seen


def test_float32_passes_follow_the_duals_and_reach_the_same_optimum(monkeypatch):
    """Forced on a small problem: every pass scores and updates float32
    weights that stay ``X^T A`` up to float32 rounding; the model's weights
    are the float64 ``X^T A`` (rebuilt from the duals), and the fit reaches
    the optimum of float64 passes (certified gaps below 1e-4 on both)."""
    X, y = make_chain_data(40, length=(3, 8), n_labels=8, n_features=20, noise=0.2,
                           random_state=5)
    kw = dict(max_iter=400, tol=1e-5, check_every=7, warm_start=True)
    m32, seen = _fit_spying_on_passes(monkeypatch, 2, X, y, **kw)
    assert seen and all(s is not None for s in seen)
    assert max(seen) < 1e-5
    st = m32._solver_state
    W = _duals_times_features(X, *st.slots[:3], 8)
    np.testing.assert_allclose(st.W, W, rtol=0, atol=1e-10 * max(1.0, np.abs(W).max()))
    m64, seen64 = _fit_spying_on_passes(monkeypatch, 10**9, X, y, **kw)
    assert all(s is None for s in seen64)
    for m in (m32, m64):
        assert m.history_[-1]["relative_gap"] <= 1e-4
    p32, p64 = m32.history_[-1]["primal"], m64.history_[-1]["primal"]
    assert p32 == pytest.approx(p64, rel=2e-4)
    # the certificates bound each other's primal values
    assert m32.history_[-1]["dual"] <= p64 and m64.history_[-1]["dual"] <= p32


def test_float32_passes_leave_exact_weights_between_checks(monkeypatch):
    """A fit stopped by its callback between certificates still returns the
    float64 weights of its duals."""
    import structlearn.learners.gdmm_chain as gdmm_chain

    monkeypatch.setattr(gdmm_chain, "FLOAT32_PASSES_MIN_LABELS", 2)
    X, y = make_chain_data(30, length=(3, 8), n_labels=6, n_features=15, random_state=6)
    m = SequenceSSVM(max_iter=50, check_every=3, warm_start=True, random_state=0,
                     callback=lambda rec: rec["iter"] >= 5).fit(X, y)
    assert m.n_iter_ == 5 and np.isnan(m.history_[-1]["primal"])  # not a checked pass
    st = m._solver_state
    W = _duals_times_features(X, *st.slots[:3], 6)
    assert np.abs(W).max() > 0.01
    np.testing.assert_allclose(m.coef_.T, W, rtol=0, atol=1e-10 * np.abs(W).max())


def test_float32_passes_only_for_features_well_inside_float32_range(monkeypatch):
    """Feature values beyond ``FLOAT32_PASSES_MAX_FEATURE`` keep float64 passes."""
    from structlearn.learners.gdmm_chain import FLOAT32_PASSES_MAX_FEATURE

    X, y = make_chain_data(10, length=(2, 5), n_labels=4, n_features=8, random_state=7)
    big = [x * (10.0 * FLOAT32_PASSES_MAX_FEATURE / abs(x).max()) for x in X]
    _, seen = _fit_spying_on_passes(monkeypatch, 2, big, y, max_iter=3)
    assert seen and all(s is None for s in seen)
    _, seen = _fit_spying_on_passes(monkeypatch, 2, X, y, max_iter=3)
    assert seen and all(s is not None for s in seen)


@pytest.mark.parametrize("oracle, sparse_rows", [("dense", False), ("sublinear", False),
                                                 ("sublinear", True)])
def test_search_backoff_follows_its_schedule_and_reaches_the_same_optimum(monkeypatch, oracle,
                                                                         sparse_rows):
    """A factor whose search found nothing waits 1, 3, 7, ... visits (at most
    ``SEARCH_BACKOFF_MAX``) without searching, and gains no pair while it
    waits; a search that adds resets it.  Fits with and without the back-off
    reach the same certified optimum."""
    import structlearn.estimators.ssvm as ssvm_module
    import structlearn.learners.gdmm_chain as gdmm_chain

    X, y = make_chain_data(40, length=(3, 8), n_labels=8, n_features=20, noise=0.2,
                           random_state=5)
    if sparse_rows:
        monkeypatch.setattr(ssvm_module, "SPARSE_WEIGHTS_MIN_ENTRIES", 20 * 8)
        _keep_sparse_rows(monkeypatch)
    lengths = np.array([x.shape[0] for x in X])
    N = lengths.sum()
    visited = np.ones(2 * N, dtype=bool)  # unigram ids, then the edges' ids
    visited[N:] = np.concatenate([np.r_[np.ones(n - 1, bool), False] for n in lengths])
    real = gdmm_chain.gdmm_chain_pass

    def fit(max_skip):
        monkeypatch.setattr(gdmm_chain, "SEARCH_BACKOFF_MAX", max_skip)
        seen = []

        def spy(*args):
            nb_, backoff, cap = args[2].count, args[5].backoff, args[4].max_skip
            before, nb_before = backoff.copy(), nb_.copy()
            rows = real(*args)
            seen.append((before, backoff.copy(), nb_before, nb_.copy(), cap))
            return rows

        monkeypatch.setattr(gdmm_chain, "gdmm_chain_pass", spy)
        model = SequenceSSVM(oracle=oracle, max_iter=400, tol=1e-5, check_every=7,
                             random_state=0).fit(X, y)
        assert sp.issparse(model.coef_) == sparse_rows
        monkeypatch.setattr(gdmm_chain, "gdmm_chain_pass", real)
        return model, seen

    model, seen = fit(7)
    waits = 0
    for before, after, nb_before, nb_after, cap in seen:
        assert cap == 7
        assert (after[:, ~visited] == 0).all()
        wait = visited & (before[0] > 0)
        waits += wait.sum()
        np.testing.assert_array_equal(after[0, wait], before[0, wait] - 1)
        np.testing.assert_array_equal(after[1, wait], before[1, wait])
        searched = visited & (before[0] == 0)
        reset = (after[0] == 0) & (after[1] == 0)
        grown = np.minimum(2 * before[1] + 1, cap)
        backed_off = (after[0] == grown) & (after[1] == grown)
        assert (reset | backed_off)[searched].all()
        new_pair = np.zeros(2 * N, dtype=bool)
        new_pair[N:] = nb_after > nb_before
        assert not (new_pair & wait).any()  # no search while waiting
        assert reset[new_pair].all()
    assert waits > 0.2 * visited.sum() * len(seen)  # most late visits wait
    plain, seen0 = fit(0)
    assert all((after == 0).all() for _, after, *_ in seen0)
    for m in (model, plain):
        assert m.history_[-1]["relative_gap"] <= 1e-4
    assert model.history_[-1]["primal"] == pytest.approx(plain.history_[-1]["primal"], rel=2e-4)
    assert model.history_[-1]["dual"] <= plain.history_[-1]["primal"]
    assert plain.history_[-1]["dual"] <= model.history_[-1]["primal"]


@pytest.mark.parametrize("solver, resolved", [("gdmm", 1e-2), ("bcfw", 1e-2), ("ssg", 1e-3)])
def test_auto_tol_is_a_one_percent_gap_or_the_ssg_primal_change(solver, resolved):
    """``tol="auto"`` (the default) fits exactly as the tolerance it stands for."""
    X, y = make_chain_data(30, length=(3, 8), n_labels=5, n_features=15, noise=0.2,
                           random_state=2)
    kw = dict(solver=solver, max_iter=300, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        auto = SequenceSSVM(**kw).fit(X, y)
        explicit = SequenceSSVM(tol=resolved, **kw).fit(X, y)
    assert SequenceSSVM().get_params()["tol"] == "auto"
    assert auto.n_iter_ == explicit.n_iter_
    assert [r["primal"] for r in auto.history_] == [r["primal"] for r in explicit.history_]
    np.testing.assert_array_equal(auto.coef_, explicit.coef_)
    if solver == "gdmm":  # stopped at the first certificate within 1 %
        gaps = [r["relative_gap"] for r in auto.history_ if np.isfinite(r["primal"])]
        assert auto.converged_ and gaps[-1] <= 1e-2 < min(gaps[:-1])


def test_token_norms_and_primal_squares_equal_the_sequential_sums():
    """The numpy token norms and the primal's squared sums (2-D loops) are the
    floats of a sequential sum in stored / row-major order, empty tokens
    included, for C- and F-ordered weights."""
    from structlearn.learners._ssvm_chain_kernels import (_sq_sum, primal_from_hinges,
                                                          scaled_transitions, token_sq_norms)

    rng = np.random.default_rng(3)
    X = sp.random(40, 30, density=0.1, format="csr", random_state=4) * 7.3
    X.data[X.indptr[5]:X.indptr[6]] = 0.0  # a token without features
    X.eliminate_zeros()
    assert X.indptr[5] == X.indptr[6]
    data = X.data.astype(np.float64)
    indptr = X.indptr.astype(np.int64)
    expect = np.zeros(40)
    for t in range(40):
        s = 0.0
        for p in range(indptr[t], indptr[t + 1]):
            s += data[p] * data[p]
        expect[t] = s
    got = token_sq_norms(data, indptr)
    assert got.dtype == np.float64 and got.shape == (40,)
    np.testing.assert_array_equal(got, expect)
    assert token_sq_norms(np.empty(0), np.zeros(1, dtype=np.int64)).shape == (0,)
    hinge = rng.random(6)
    v = rng.normal(size=(4, 4))
    for W in (rng.normal(size=(9, 4)), np.asfortranarray(rng.normal(size=(9, 4)))):
        total = 0.0
        for h in hinge:
            total += h
        reg = 0.5 * 1.7 * 1.7 * (_sq_sum(np.ravel(W)) + _sq_sum(v.ravel()))
        assert primal_from_hinges(W, None, v, 1.7, 0.3, hinge) == reg + 0.3 * total
    vs = scaled_transitions(np.asfortranarray(v), 1.7)
    assert vs.flags.c_contiguous
    np.testing.assert_array_equal(vs, v * 1.7)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_a_solver_state_pickled_with_the_old_array_names_continues():
    """States pickled when the slots and pairs were loose arrays (``slab``,
    ``ns``, ..., ``pa``, ``nb``) load into the named tuples and warm-start
    the same run as the state they were taken from."""
    from structlearn.learners.gdmm_chain import GDMMChainState

    X, y = make_chain_data(20, length=5, n_labels=4, n_features=15, random_state=3)
    kw = dict(max_iter=5, tol=0.0, check_every=5, warm_start=True, random_state=0)
    new = SequenceSSVM(**kw).fit(X, y)
    old = pickle.loads(pickle.dumps(new))
    st = old._solver_state
    legacy = dict(st.__dict__)
    slots, pairs = legacy.pop("slots"), legacy.pop("pairs")
    legacy.update(zip(("slab", "ns", "alpha", "margL", "margR", "lamL", "lamR"), slots))
    legacy.update(zip(("pa", "pb", "psa", "psb", "beta", "nb"), pairs))
    restored = GDMMChainState.__new__(GDMMChainState)
    restored.__setstate__(legacy)
    old._solver_state = restored
    for name, a, b in zip(slots._fields, restored.slots, slots):
        np.testing.assert_array_equal(a, b, err_msg=name)
    new.fit(X, y)
    old.fit(X, y)
    np.testing.assert_array_equal(old.coef_, new.coef_)
    assert old.history_[-1]["primal"] == new.history_[-1]["primal"]
