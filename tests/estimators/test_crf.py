"""SequenceCRF and GraphCRF: brute-force likelihoods, estimator conventions, input errors."""

import itertools
import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone

from structlearn.datasets import make_chain_data
from structlearn.estimators import GraphCRF, SequenceCRF
from structlearn.estimators.crf import image_grid_sample
from structlearn.graphs import grid_edges
from structlearn.estimators._validation import check_sequences
from structlearn.learners import chain_crf
from structlearn.learners.chain_crf import chain_crf_objective


def brute_chain_nll(W, T, seqs, labels, alpha):
    """Mean NLL + penalty and its gradient by enumerating every labeling."""
    K, d = W.shape
    f = 0.0
    gW = np.zeros_like(W)
    gT = np.zeros_like(T)
    for x, y in zip(seqs, labels):
        n = x.shape[0]
        labs = np.array(list(itertools.product(range(K), repeat=n)))
        un = x @ W.T
        s = un[np.arange(n)[None, :], labs].sum(axis=1)
        if n > 1:
            s = s + T[labs[:, :-1], labs[:, 1:]].sum(axis=1)
        lz = np.logaddexp.reduce(s)
        p = np.exp(s - lz)
        sy = un[np.arange(n), y].sum() + T[y[:-1], y[1:]].sum()
        f += lz - sy
        for lab, pr in zip(labs, p):
            for t in range(n):
                gW[lab[t]] += pr * x[t]
                if t:
                    gT[lab[t - 1], lab[t]] += pr
        for t in range(n):
            gW[y[t]] -= x[t]
            if t:
                gT[y[t - 1], y[t]] -= 1
    N = len(seqs)
    f = f / N + 0.5 * alpha * (np.sum(W * W) + np.sum(T * T))
    return f, gW / N + alpha * W, gT / N + alpha * T


@pytest.mark.parametrize("seed", range(3))
def test_chain_likelihood_and_gradient_match_brute_force(seed):
    rng = np.random.RandomState(seed)
    K, d = 3, 4
    lengths = rng.randint(1, 5, size=4)
    seqs = [rng.randn(n, d) for n in lengths]
    labels = [rng.randint(0, K, n) for n in lengths]
    W = rng.randn(K, d)
    T = rng.randn(K, K)
    Xcat = sp.csr_matrix(np.concatenate(seqs)) if seed % 2 else np.concatenate(seqs)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    f, gW, gT = chain_crf_objective(W, T, Xcat, offsets, np.concatenate(labels), alpha=0.3)
    bf, bW, bT = brute_chain_nll(W, T, seqs, labels, 0.3)
    assert abs(f - bf) < 1e-10
    np.testing.assert_allclose(gW, bW, atol=1e-10)
    np.testing.assert_allclose(gT, bT, atol=1e-10)


def test_sequence_crf_fit_reaches_brute_force_optimum_and_marginals():
    rng = np.random.RandomState(0)
    seqs = [rng.randn(n, 3) for n in (3, 2, 4)]
    labels = [rng.randint(0, 2, x.shape[0]) for x in seqs]
    # c2 = alpha * n_sequences / 2: the mean objective with alpha = 0.1
    model = SequenceCRF(c2=0.1 * 3 / 2, tol=1e-10, max_iter=500, all_possible_states=True,
                        all_possible_transitions=True).fit(seqs, labels)
    _, gW, gT = brute_chain_nll(model.coef_, model.transition_, seqs, labels, 0.1)
    assert max(np.abs(gW).max(), np.abs(gT).max()) < 1e-4
    # log-likelihood: mean log p(y|x), equal to minus the unpenalized objective
    f, _, _ = brute_chain_nll(model.coef_, model.transition_, seqs, labels, 0.0)
    assert abs(model.log_likelihood(seqs, labels) + f) < 1e-9
    # marginals against enumeration
    x = seqs[2]
    labs = np.array(list(itertools.product(range(2), repeat=4)))
    un = x @ model.coef_.T
    s = un[np.arange(4)[None, :], labs].sum(1) + model.transition_[labs[:, :-1], labs[:, 1:]].sum(1)
    p = np.exp(s - np.logaddexp.reduce(s))
    ref = np.stack([(p[:, None] * (labs == k)).sum(0) for k in range(2)], axis=1)
    np.testing.assert_allclose(model.predict_marginals([x])[0], ref, atol=1e-10)
    assert model.converged_ and len(model.history_) >= 1


def test_sequence_crf_learns_and_follows_conventions():
    X, y = make_chain_data(120, length=(4, 10), n_labels=4, n_features=40, random_state=0)
    ys = [np.array(["abcd"[v] for v in yi]) for yi in y]
    model = SequenceCRF(c2=0.05)
    assert clone(model).get_params() == model.get_params()
    model.fit(X[:90], ys[:90])
    assert model.score(X[90:], ys[90:]) > 0.9
    assert list(model.classes_) == ["a", "b", "c", "d"]
    again = pickle.loads(pickle.dumps(model))
    for a, b in zip(again.predict(X[90:]), model.predict(X[90:])):
        np.testing.assert_array_equal(a, b)
    other = SequenceCRF(c2=0.05, random_state=7).fit(X[:90], ys[:90])
    np.testing.assert_array_equal(other.coef_, model.coef_)
    # warm start from the optimum converges immediately
    warm = SequenceCRF(c2=0.05, warm_start=True).fit(X[:90], ys[:90])
    n_cold = warm.n_iter_
    warm.fit(X[:90], ys[:90])
    assert warm.n_iter_ < n_cold
    objs = [h["objective"] for h in model.history_]
    assert objs[-1] <= objs[0]


def test_sequence_crf_errors():
    X = [np.ones((2, 3)), np.ones((1, 3))]
    y = [np.array([0, 1]), np.array([1])]
    with pytest.raises(ValueError, match="alpha"):
        SequenceCRF(alpha=-1).fit(X, y)
    for name in ("c1", "c2"):
        for bad in (-1.0, np.nan, np.inf, "1"):
            with pytest.raises(ValueError, match=rf"'{name}' parameter of SequenceCRF must be a float in the range \[0.0, inf\)"):
                SequenceCRF(**{name: bad}).fit(X, y)
    with pytest.raises(ValueError, match="solver"):
        SequenceCRF(solver="bbpl").fit(X, y)
    with pytest.raises(ValueError, match="NaN"):
        SequenceCRF().fit([np.array([[np.nan, 0, 0]]), np.ones((1, 3))], [[0], [1]])
    model = SequenceCRF().fit(X, y)
    with pytest.raises(ValueError, match="features"):
        model.predict([np.ones((2, 4))])


# ------------------------------------------------------------------ GraphCRF
def _grid_samples(n_samples, h, w, seed):
    rng = np.random.RandomState(seed)
    Xs, ys = [], []
    for _ in range(n_samples):
        f = rng.randn(h, w, 3)
        Xs.append(image_grid_sample(f, edge_bin_thresholds=[1.5]))
        ys.append((f[:, :, 0] + 0.3 * rng.randn(h, w) > 0).astype(int).ravel())
    return Xs, ys


def test_graph_crf_fits_and_follows_conventions():
    Xs, ys = _grid_samples(4, 6, 6, 0)
    model = GraphCRF(alpha=1e-2, blocks=3, max_iter=200, random_state=0)
    assert clone(model).get_params() == model.get_params()
    model.fit(Xs, ys)
    assert model.score(Xs, ys) > 0.85
    assert model.coef_.shape == (2, 3) and model.pairwise_.shape == (2, 2, 2)
    assert {"iter", "time", "grad_norm", "step_norm", "bp_sweeps"} <= set(model.history_[0])
    again = GraphCRF(alpha=1e-2, blocks=3, max_iter=200, random_state=0).fit(Xs, ys)
    np.testing.assert_array_equal(again.coef_, model.coef_)
    loaded = pickle.loads(pickle.dumps(model))
    for a, b in zip(loaded.predict(Xs), model.predict(Xs)):
        np.testing.assert_array_equal(a, b)
    node, edge = model.predict_marginals(Xs[:1])[0]
    assert node.shape == (36, 2) and edge.shape == (60, 2, 2)
    np.testing.assert_allclose(node.sum(1), 1.0)
    # grid tiles as blocks, and warm start
    tiles = GraphCRF(alpha=1e-2, blocks=np.repeat(np.arange(4), 9), max_iter=50)
    tiles.fit(Xs, ys)
    # n_iter_ and history_ count passes over all blocks, capped by max_iter
    capped = GraphCRF(alpha=1e-2, blocks=4, max_iter=7, tol=1e-12).fit(Xs, ys)
    assert capped.n_iter_ == 7 and len(capped.history_) == 7
    assert capped.history_[-1]["iter"] == 7
    warm = GraphCRF(alpha=1e-2, max_iter=20, warm_start=True, solver="inner_dual")
    warm.fit(Xs, ys)
    first = warm.coef_.copy()
    warm.fit(Xs, ys)
    assert not np.array_equal(first, warm.coef_)


def test_graph_crf_on_trees_is_exact():
    # chain-shaped samples: MAP through the exact back-end and exact marginals
    rng = np.random.RandomState(1)
    n = 5
    edges = np.stack([np.arange(n - 1), np.arange(1, n)], axis=1)
    Xs = [(rng.randn(n, 2), edges) for _ in range(3)]
    ys = [rng.randint(0, 3, n) for _ in range(3)]
    model = GraphCRF(solver="full_bp", alpha=0.1, max_iter=50).fit(Xs, ys)
    x = Xs[0][0]
    un = x @ model.coef_.T
    V = model.pairwise_[0]
    labs = np.array(list(itertools.product(range(3), repeat=n)))
    s = un[np.arange(n)[None, :], labs].sum(1) + V[labs[:, :-1], labs[:, 1:]].sum(1)
    np.testing.assert_array_equal(model.predict(Xs[:1])[0], model.classes_[labs[np.argmax(s)]])
    p = np.exp(s - np.logaddexp.reduce(s))
    ref = np.stack([(p[:, None] * (labs == k)).sum(0) for k in range(3)], axis=1)
    np.testing.assert_allclose(model.predict_marginals(Xs[:1])[0][0], ref, atol=1e-7)


def test_graph_crf_loopy_marginal_decoding():
    Xs, ys = _grid_samples(2, 4, 4, 2)
    model = GraphCRF(alpha=1e-2, max_iter=30, inference="marginal").fit(Xs, ys)
    pred = model.predict(Xs)
    node, _ = model.predict_marginals(Xs[:1])[0]
    np.testing.assert_array_equal(pred[0], model.classes_[np.argmax(node, axis=1)])


@pytest.mark.parametrize(
    "sample, match",
    [
        ((np.ones((3, 2)), np.array([[0, 3]])), "outside"),
        ((np.ones((3, 2)), np.array([[1, 1]])), "self-loop"),
        ((np.ones((3, 4)), np.array([[0, 1]])), "columns"),
        ((np.array([[0.0, np.nan], [1, 1], [1, 1]]), np.array([[0, 1]])), "NaN"),
        ((np.ones((3, 2)), np.array([[0, 1]]), np.array([-1])), "bin"),
    ],
)
def test_graph_crf_input_errors(sample, match):
    good = (np.ones((3, 2)), np.array([[0, 1], [1, 2]]))
    with pytest.raises(ValueError, match=match):
        GraphCRF(max_iter=2).fit([good, sample], [[0, 1, 0], [1, 0, 1]])


def test_graph_crf_predict_errors():
    good = (np.random.RandomState(0).randn(3, 2), np.array([[0, 1], [1, 2]]))
    model = GraphCRF(max_iter=2).fit([good], [[0, 1, 0]])
    with pytest.raises(ValueError, match="columns"):
        model.predict([(np.ones((3, 3)), np.array([[0, 1]]))])
    with pytest.raises(ValueError, match="bins"):
        model.predict([(np.ones((3, 2)), np.array([[0, 1]]), np.array([4]))])
    with pytest.raises(ValueError, match="y"):
        GraphCRF().fit([good], [[0, 1]])
    with pytest.raises(TypeError):
        GraphCRF().fit(np.ones((3, 2)), [[0, 1, 0]])
    assert grid_edges(2, 3).shape == (7, 2)


def _small_tagging(seed=0):
    X, y = make_chain_data(30, length=(3, 6), n_labels=3, n_features=15, random_state=seed)
    return X, y


def test_c2_is_crfsuites_penalty_and_alpha_is_deprecated():
    X, y = _small_tagging()
    full = dict(all_possible_states=True, all_possible_transitions=True)
    model = SequenceCRF(c2=0.7, max_iter=200, tol=1e-9, **full).fit(X, y)
    with pytest.warns(FutureWarning, match="alpha is deprecated"):
        old = SequenceCRF(alpha=2 * 0.7 / len(X), max_iter=200, tol=1e-9, **full).fit(X, y)
    np.testing.assert_array_equal(model.coef_, old.coef_)
    # CRFsuite's objective: summed NLL + c2 ||w||^2; its gradient vanishes
    Xcat, offsets, ycat = check_sequences(X, y)
    codes = np.searchsorted(model.classes_, ycat)
    _, gW, gT = chain_crf_objective(model.coef_, model.transition_, Xcat, offsets, codes,
                                    alpha=2 * 0.7 / len(X))
    assert max(np.abs(gW).max(), np.abs(gT).max()) < 1e-5


@pytest.mark.parametrize("c1", [0.05, 0.5, 2.0])
def test_l1_fit_satisfies_the_optimality_conditions(c1):
    """OWL-QN's result against the L1 problem's optimality conditions:
    grad_j + l1 sign(w_j) = 0 where w_j != 0 and |grad_j| <= l1 where w_j = 0
    (grad of the smooth part from the brute-force-checked objective)."""
    X, y = _small_tagging(1)
    n = len(X)
    full = dict(all_possible_states=True, all_possible_transitions=True)
    model = SequenceCRF(c1=c1, c2=0.1, max_iter=2000, tol=1e-12, **full).fit(X, y)
    Xcat, offsets, ycat = check_sequences(X, y)
    codes = np.searchsorted(model.classes_, ycat)
    _, gW, gT = chain_crf_objective(model.coef_, model.transition_, Xcat, offsets, codes,
                                    alpha=2 * 0.1 / n)
    w = np.concatenate([model.coef_.ravel(), model.transition_.ravel()])
    g = np.concatenate([gW.ravel(), gT.ravel()])
    l1 = c1 / n
    nz = w != 0
    assert np.abs(g[nz] + l1 * np.sign(w[nz])).max() < 1e-4
    assert np.abs(g[~nz]).max(initial=0.0) <= l1 + 1e-6
    if c1 >= 0.5:
        assert (~nz).sum() > 0  # L1 makes weights exactly zero
    sparser = SequenceCRF(c1=4 * c1, c2=0.1, max_iter=2000, tol=1e-12, **full).fit(X, y)
    assert np.count_nonzero(sparser.coef_) <= np.count_nonzero(model.coef_)


@pytest.mark.parametrize("max_fill", [0.0, 1.0], ids=["dense-storage", "pair-storage"])
def test_only_observed_states_and_transitions_get_weights(monkeypatch, max_fill):
    """CRFsuite's defaults: a (feature, label) weight exists only when a
    training token with that label has that feature, a transition only when
    the bigram occurs; the free weights are still optimal (zero gradient).
    Both storages of those weights (dense with the others held at 0, and
    pair-stored with a sparse ``coef_``)."""
    monkeypatch.setattr(chain_crf, "PAIR_STORAGE_MAX_FILL", max_fill)
    X, y = make_chain_data(25, length=(2, 6), n_labels=4, n_features=30, random_state=3)
    X = [np.asarray(x.todense() if sp.issparse(x) else x) for x in X]
    X = [np.where(np.random.RandomState(i).rand(*x.shape) < 0.7, 0.0, x) for i, x in enumerate(X)]
    model = SequenceCRF(c2=0.5, max_iter=1000, tol=1e-12, all_possible_states=False,
                        all_possible_transitions=False).fit(X, y)
    assert sp.issparse(model.coef_) == (max_fill == 1.0)
    if sp.issparse(model.coef_):
        model.coef_ = model.coef_.toarray()
    seen_states = np.zeros_like(model.coef_, dtype=bool)
    seen_trans = np.zeros_like(model.transition_, dtype=bool)
    for x, labels in zip(X, y):
        codes = np.searchsorted(model.classes_, labels)
        for t, k in enumerate(codes):
            seen_states[k] |= x[t] != 0
            if t:
                seen_trans[codes[t - 1], k] = True
    assert (~seen_states).any() and (~seen_trans).any()
    assert np.all(model.coef_[~seen_states] == 0)
    assert np.all(model.transition_[~seen_trans] == 0)
    Xcat, offsets, ycat = check_sequences(X, y)
    codes = np.searchsorted(model.classes_, ycat)
    _, gW, gT = chain_crf_objective(model.coef_, model.transition_, Xcat, offsets, codes,
                                    alpha=2 * 0.5 / len(X))
    assert np.abs(gW[seen_states]).max() < 1e-5 and np.abs(gT[seen_trans]).max() < 1e-5
    everything = SequenceCRF(c2=0.5, all_possible_states=True,
                             all_possible_transitions=True).fit(X, y)
    assert np.count_nonzero(everything.coef_) > np.count_nonzero(model.coef_)
    with pytest.raises(TypeError, match="'all_possible_states' parameter of SequenceCRF must be an instance of 'bool'"):
        SequenceCRF(all_possible_states="yes").fit(X, y)


def test_an_overflowing_objective_raises_a_clear_error():
    from structlearn.datasets import make_chain_data

    X, y = make_chain_data(20, length=5, n_labels=3, n_features=6, random_state=0)
    X = [x.toarray() if hasattr(x, "toarray") else np.array(x) for x in X]
    X[0][0, 0] = 1e300
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # and no numpy warning first
        with pytest.raises(ValueError, match="not finite .* largest feature value is 1e\\+300"):
            SequenceCRF(max_iter=20).fit(X, y)
