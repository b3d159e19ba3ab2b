"""Label trees, exact max-product on binary forests, the forest certificate
and the multilabel fits that use them, against brute-force enumeration."""

import itertools
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

from structlearn.estimators import MultiLabelSSVM
from structlearn.estimators._validation import csr_arrays
from structlearn.graphs.label_graphs import chow_liu_edges, label_mutual_information
from structlearn.inference.exact.binary_forest import binary_forest_map_batch, rooted_forest
from structlearn.learners._multilabel_kernels import forest_hinges, multilabel_primal


def _random_forest(rng, L):
    """Random forest edges over L nodes (each node joins an earlier one or not)."""
    edges = [(rng.randint(j), j) for j in range(1, L) if rng.rand() < 0.7]
    return np.array(edges, dtype=np.int64).reshape(-1, 2)


def _brute_force(u, edges, w):
    best, arg = -np.inf, None
    for y in itertools.product((0, 1), repeat=u.shape[0]):
        y = np.array(y)
        s = u @ y + sum(w[e] * y[a] * y[b] for e, (a, b) in enumerate(edges))
        if s > best + 1e-12:
            best, arg = s, y
    return best, arg


@pytest.mark.parametrize("seed", range(40))
def test_forest_map_matches_enumeration(seed):
    rng = np.random.RandomState(seed)
    L = rng.randint(1, 10)
    edges = _random_forest(rng, L)
    rng.shuffle(edges)
    forest = rooted_forest(edges, L)
    assert forest is not None
    U = rng.randn(6, L) * rng.choice([0.1, 1.0, 5.0])
    w = rng.randn(edges.shape[0]) * 3
    labels, scores = binary_forest_map_batch(U, forest, w)
    for i in range(U.shape[0]):
        best, _ = _brute_force(U[i], edges, w)
        y = labels[i]
        value = U[i] @ y + sum(w[e] * y[a] * y[b] for e, (a, b) in enumerate(edges))
        assert scores[i] == pytest.approx(best, abs=1e-9)
        assert value == pytest.approx(best, abs=1e-9)


def test_rooted_forest_rejects_cycles_and_keeps_isolated_nodes():
    assert rooted_forest(np.array([[0, 1], [1, 2], [2, 0]]), 4) is None
    assert rooted_forest(np.array([[0, 1], [0, 1]]), 3) is None
    f = rooted_forest(np.array([[2, 3]]), 5)
    assert sorted(f.order) == list(range(5))
    assert (f.parent >= 0).sum() == 1
    pos = {j: t for t, j in enumerate(f.order)}
    assert all(pos[f.parent[j]] < pos[j] for j in range(5) if f.parent[j] >= 0)


def test_chow_liu_edges_span_each_cooccurrence_component():
    rng = np.random.RandomState(0)
    Y = (rng.rand(200, 12) < 0.25).astype(int)
    Y[:, 10] = 0  # never occurs
    Y[:, 11] = Y[:, 3]  # a copy of label 3: the most informative pair
    E = chow_liu_edges(Y)
    assert rooted_forest(E, 12) is not None
    assert E.shape[0] == 10  # 11 labels seen together, label 10 isolated
    assert [3, 11] in E.tolist()
    assert not np.any(E == 10)
    a, b, mi = label_mutual_information(Y)
    # mutual information of one pair against the definition
    k = np.flatnonzero((a == 0) & (b == 1))[0]
    p = np.array([[np.mean((Y[:, 0] == s) & (Y[:, 1] == t)) for t in (0, 1)] for s in (0, 1)])
    ref = sum(p[s, t] * np.log(p[s, t] / (p[s].sum() * p[:, t].sum()))
              for s in (0, 1) for t in (0, 1) if p[s, t] > 0)
    assert mi[k] == pytest.approx(ref)
    assert chow_liu_edges(np.zeros((5, 4), dtype=int)).shape == (0, 2)


@pytest.mark.parametrize("seed", range(8))
def test_forest_hinges_match_enumeration(seed):
    rng = np.random.RandomState(seed)
    n, d, L = 7, 4, rng.randint(2, 8)
    X = rng.randn(n, d)
    Y = (rng.rand(n, L) < 0.4).astype(np.int64)
    edges = _random_forest(rng, L)
    E = np.zeros((L, L), dtype=np.uint8)
    E[np.minimum(edges[:, 0], edges[:, 1]), np.maximum(edges[:, 0], edges[:, 1])] = 1
    a, b = np.nonzero(E)
    W = rng.randn(d, L)
    P = np.zeros((L, L))
    P[a, b] = rng.randn(a.size) * 2
    forest = rooted_forest(np.stack([a, b], 1), L)
    weight = np.zeros(L)
    has = forest.edge >= 0
    weight[has] = P[a[forest.edge[has]], b[forest.edge[has]]]
    data, indices, indptr = csr_arrays(X)
    hinge = np.empty(n)
    forest_hinges(W, data, indices, indptr, Y, forest.order, forest.parent, weight, hinge)
    reg = 0.5 * ((W ** 2).sum() + (P ** 2).sum())
    ref = multilabel_primal(W, P, E, int(E.sum()), 1.0, data, indices, indptr, Y, 2.0)
    assert reg + 2.0 * hinge.sum() == pytest.approx(ref, rel=1e-12, abs=1e-12)


def _data(seed, n=40, d=6, L=30, rate=0.15):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d)
    Y = (X @ rng.randn(d, L) + rng.randn(n, L) > 1.5 + 3 * (1 - rate)).astype(int)
    Y[:, :3] |= (rng.rand(n, 3) < 0.3).astype(int)
    return X, Y


def test_tree_fit_certifies_and_predicts_like_the_tree_backend():
    X, Y = _data(0)
    m = MultiLabelSSVM(C=1.0, random_state=0).fit(X, Y)  # auto: the Chow-Liu tree (L = 30)
    E = m._edges
    assert rooted_forest(np.argwhere(E), 30) is not None and E.sum() > 0
    assert m.converged_
    last = m.history_[-1]
    assert last["checked"] and last["relative_gap"] <= 0.01
    assert last["primal"] == last["primal_exact"]  # exact on a forest
    checked = [r for r in m.history_ if r["checked"]]
    assert all(r["dual"] >= 0 for r in checked)
    duals = [r["dual"] for r in checked]
    assert duals == sorted(duals)  # the best certified so far
    pred = m.predict(X)
    ref = clone(m).set_params(inference="tree").fit(X, Y).predict(X)
    np.testing.assert_array_equal(pred, ref)
    # the decoded labelings are optimal: no single-label flip scores higher
    U = m.decision_function(X)
    P = m.pairwise_coef_

    def score(y):
        return U[i] @ y + 0.5 * y @ P @ y

    for i in range(X.shape[0]):
        base = score(pred[i])
        for j in range(30):
            y = pred[i].copy()
            y[j] ^= 1
            assert score(y) <= base + 1e-9


@pytest.mark.parametrize("pairwise", ["auto", "tree", "full", "none"])
def test_degenerate_labels_and_rows_fit_cleanly(pairwise):
    rng = np.random.RandomState(1)
    X, Y = _data(1, n=30, L=28)
    Y[:, 5] = 0  # a label never seen
    Y[:4] = 0  # samples without any label
    X[6:9] = 0.0  # all-zero feature rows
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning storm: none at all here
        m = MultiLabelSSVM(C=0.1, pairwise=pairwise, random_state=0).fit(X, Y)
        pred = m.predict(X)
    assert m.converged_
    assert pred.shape == Y.shape and not pred[:, 5].any()
    one = MultiLabelSSVM(C=0.1, pairwise=pairwise, random_state=0).fit(X, Y[:, :1])
    assert one.predict(X).shape == (30, 1)
    assert rng is not None


def test_check_every_and_max_time():
    X, Y = _data(2, n=60)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        m = MultiLabelSSVM(check_every=3, max_iter=7, tol=0.0, random_state=0).fit(X, Y)
    checked = [r["iter"] for r in m.history_ if r["checked"]]
    assert checked == [3, 6, 7]
    assert all(np.isnan(r["primal"]) for r in m.history_ if not r["checked"])
    # a budget spent after the first block of samples: one partial pass, certified
    t = MultiLabelSSVM(max_time=1e-9, random_state=0).fit(X, Y)
    assert t.n_iter_ == 1 and t.history_[0]["checked"] and t.history_[0]["partial"]
    assert np.isfinite(t.history_[0]["relative_gap"])


def test_callback_is_asked_within_a_pass():
    """Between the blocks of a pass the callback sees progress records (not
    kept in history_); True there stops after a certified partial pass, and
    a callback that never stops changes nothing."""
    X, Y = _data(2, n=60)
    seen = []

    def stop_in_pass_two(rec):
        seen.append(rec)
        return rec.get("block") == 3 and rec["iter"] == 2

    m = MultiLabelSSVM(max_iter=5, tol=0.0, random_state=0, callback=stop_in_pass_two)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        m.fit(X, Y)
    assert m.n_iter_ == 2 and m.history_[-1]["partial"] and m.history_[-1]["checked"]
    assert np.isfinite(m.history_[-1]["relative_gap"])
    progress = [r for r in seen if r.get("partial") and "block" in r]
    assert [r["block"] for r in progress if r["iter"] == 1][:3] == [1, 2, 3]
    assert all(np.isnan(r["objective"]) for r in progress)
    assert all("block" not in r for r in m.history_)
    kw = dict(max_iter=4, tol=0.0, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        a = MultiLabelSSVM(**kw).fit(X, Y)
        b = MultiLabelSSVM(callback=lambda rec: False, **kw).fit(X, Y)
    np.testing.assert_array_equal(a.coef_, b.coef_)


def test_fits_do_not_depend_on_timing():
    """Passes run in blocks of samples (the greedy search's sorted weights
    refresh at each): a fixed split, so two fits, with or without a budget
    that is never reached, give the same bits."""
    X, Y = _data(4, n=90)
    kw = dict(C=1.0, max_iter=12, tol=0.0, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        a = MultiLabelSSVM(**kw).fit(X, Y)
        b = MultiLabelSSVM(max_time=1e6, **kw).fit(X, Y)
        c = MultiLabelSSVM(pairwise="full", **kw).fit(X, Y)
        d = MultiLabelSSVM(pairwise="full", max_time=1e6, **kw).fit(X, Y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.pairwise_coef_, b.pairwise_coef_)
    np.testing.assert_array_equal(c.coef_, d.coef_)
    np.testing.assert_array_equal(c.pairwise_coef_, d.pairwise_coef_)


def test_sizes_too_big_for_memory_are_refused_before_allocating():
    import scipy.sparse as sp

    X = sp.csr_matrix((2_000_000, 3))
    Y = sp.csr_matrix(([1], ([0], [0])), shape=(2_000_000, 40_000), dtype=np.int64)
    with pytest.raises(MemoryError, match="40000 labels"):
        MultiLabelSSVM(pairwise="none").fit(X, Y)


@pytest.mark.parametrize("seed", range(30))
def test_persistency_map_matches_enumeration(seed):
    from structlearn.inference.exact.binary_forest import persistency_map_batch

    rng = np.random.RandomState(seed)
    L = rng.randint(2, 9)
    edges = np.array([(a, b) for a in range(L) for b in range(a + 1, L) if rng.rand() < 0.6],
                     dtype=np.int64).reshape(-1, 2)
    w = rng.randn(edges.shape[0]) * 2 * (rng.rand(edges.shape[0]) < 0.8)
    U = rng.randn(5, L) * 2 - 1
    labels, scores, bounds, exact = persistency_map_batch(U, edges, w, max_free=seed % 9)
    for i in range(5):
        best, _ = _brute_force(U[i], edges, w)
        y = labels[i]
        value = U[i] @ y + sum(w[e] * y[a] * y[b] for e, (a, b) in enumerate(edges))
        assert value == pytest.approx(scores[i], abs=1e-9)
        assert bounds[i] >= best - 1e-9
        if exact[i]:
            assert scores[i] == pytest.approx(best, abs=1e-9)
    if seed % 9 >= L:
        assert exact.all()  # few enough labels: always enumerated


def test_decoding_in_blocks_gives_the_rows_of_one_block(monkeypatch):
    import structlearn.estimators.ssvm as ssvm_module

    X, Y = _data(3, n=50)
    for pairwise in ("tree", "full"):
        m = MultiLabelSSVM(C=1.0, pairwise=pairwise, max_iter=30, random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            m.fit(X, Y)
        whole = m.predict(X)
        monkeypatch.setattr(ssvm_module, "_DECODE_BLOCK_ENTRIES", 7 * Y.shape[1])  # 7 rows
        np.testing.assert_array_equal(m.predict(X), whole)
        monkeypatch.undo()
