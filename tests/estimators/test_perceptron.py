"""Tests for SequencePerceptron: conventions, reference equality, learning."""

import logging
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from _graphgen import chain_enumeration
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from structlearn.estimators import SequencePerceptron


def _chain_data(seed, n_seq=30, n_labels=3, n_features=6, max_len=6, noise=1.0, sparsity=0.0):
    """Labels from a random Markov chain, Gaussian features around label means."""
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.ones(n_labels) * 0.5, size=n_labels)
    means = rng.normal(size=(n_labels, n_features)) * 2
    X, y = [], []
    for _ in range(n_seq):
        n = int(rng.integers(1, max_len + 1))
        lab = np.empty(n, dtype=np.int64)
        lab[0] = rng.integers(n_labels)
        for t in range(1, n):
            lab[t] = rng.choice(n_labels, p=P[lab[t - 1]])
        x = means[lab] + noise * rng.normal(size=(n, n_features))
        if sparsity:
            x[rng.random(x.shape) < sparsity] = 0.0
        X.append(x)
        y.append(lab)
    return X, y


# ------------------------------------------------------------ naive reference


def _naive_viterbi(unary, trans):
    """Plain-loop Viterbi; ties go to the smallest label (strict >), as in the kernel."""
    n, K = len(unary), len(unary[0])
    delta = [list(unary[0])]
    bp = [[0] * K]
    for t in range(1, n):
        row, brow = [], []
        for k in range(K):
            best, bj = -np.inf, 0
            for j in range(K):
                v = delta[t - 1][j] + trans[j][k]
                if v > best:
                    best, bj = v, j
            row.append(best + unary[t][k])
            brow.append(bj)
        delta.append(row)
        bp.append(brow)
    best, k = -np.inf, 0
    for j in range(K):
        if delta[n - 1][j] > best:
            best, k = delta[n - 1][j], j
    z = [k]
    for t in range(n - 1, 0, -1):
        k = bp[t][k]
        z.append(k)
    return z[::-1]


def _brute_force(unary, trans):
    _, _, _, labels, best = chain_enumeration(np.asarray(unary, dtype=float),
                                              np.asarray(trans, dtype=float))
    return labels.tolist(), best


def _naive_perceptron(X, codes, n_labels, orders, average):
    """Averaged structured perceptron with explicit loops and a naive average."""
    d = X[0].shape[1]
    W = [[0.0] * n_labels for _ in range(d)]
    T = [[0.0] * n_labels for _ in range(n_labels)]
    W_sum = np.zeros((d, n_labels))
    T_sum = np.zeros((n_labels, n_labels))
    n_steps = 0
    errors = []
    for order in orders:
        tok_err = seq_err = 0
        for s in order:
            x, yt = X[s], codes[s]
            unary = []
            for t in range(x.shape[0]):
                row = [0.0] * n_labels
                for j in range(d):  # nonzeros in index order, like the CSR kernel
                    if x[t, j] != 0.0:
                        for k in range(n_labels):
                            row[k] += x[t, j] * W[j][k]
                unary.append(row)
            z = _naive_viterbi(unary, T)
            wrong = [t for t in range(len(z)) if z[t] != yt[t]]
            if wrong:
                tok_err += len(wrong)
                seq_err += 1
                for t in wrong:
                    for j in range(d):
                        W[j][yt[t]] += x[t, j]
                        W[j][z[t]] -= x[t, j]
                for t in range(1, len(z)):
                    if (yt[t - 1], yt[t]) != (z[t - 1], z[t]):
                        T[yt[t - 1]][yt[t]] += 1.0
                        T[z[t - 1]][z[t]] -= 1.0
            W_sum += np.array(W)
            T_sum += np.array(T)
            n_steps += 1
        errors.append((tok_err, seq_err))
        if seq_err == 0:
            break
    if average:
        return W_sum.T / n_steps, T_sum / n_steps, errors
    return np.array(W).T, np.array(T), errors


def test_naive_viterbi_matches_brute_force():
    rng = np.random.default_rng(0)
    for _ in range(40):
        n, K = int(rng.integers(1, 5)), int(rng.integers(1, 4))
        unary, trans = rng.normal(size=(n, K)), rng.normal(size=(K, K))
        z, best = _brute_force(unary, trans)
        assert _naive_viterbi(unary.tolist(), trans.tolist()) == z


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("average", [True, False])
def test_kernel_matches_naive_reference(seed, average):
    X, y = _chain_data(seed, n_seq=12, n_labels=2 + seed % 3, n_features=4, max_len=4, noise=3.0, sparsity=0.4)
    model = SequencePerceptron(max_iter=4, average=average, random_state=seed).fit(X, y)
    rng = np.random.RandomState(seed)
    orders = [rng.permutation(len(X)) for _ in range(4)]
    orders = orders[: model.n_iter_]
    codes = [np.searchsorted(model.classes_, yi) for yi in y]
    coef, trans, errors = _naive_perceptron(X, codes, len(model.classes_), orders, average)
    assert [(h["token_errors"], h["sequence_errors"]) for h in model.history_] == errors
    np.testing.assert_allclose(model.coef_, coef, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(model.transition_, trans, rtol=1e-10, atol=1e-10)


def test_kernel_matches_reference_without_shuffle():
    X, y = _chain_data(7, n_seq=10, noise=2.0)
    model = SequencePerceptron(max_iter=3, shuffle=False, random_state=123).fit(X, y)
    codes = [np.searchsorted(model.classes_, yi) for yi in y]
    orders = [np.arange(len(X))] * model.n_iter_
    coef, trans, _ = _naive_perceptron(X, codes, len(model.classes_), orders, True)
    np.testing.assert_allclose(model.coef_, coef, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(model.transition_, trans, rtol=1e-10, atol=1e-10)


# ------------------------------------------------------------ learning


def test_learns_separable_task_and_stops_early():
    X, y = _chain_data(1, n_seq=40, noise=0.05)
    model = SequencePerceptron(max_iter=50, random_state=0).fit(X, y)
    assert model.score(X, y) == 1.0
    assert model.n_iter_ < 50
    assert model.history_[-1]["sequence_errors"] == 0
    assert len(model.history_) == model.n_iter_
    times = [h["time"] for h in model.history_]
    assert times == sorted(times)


def test_learns_transitions():
    # only the first token carries information; labels then alternate
    X, y = [], []
    rng = np.random.default_rng(0)
    for _ in range(30):
        first = int(rng.integers(2))
        n = int(rng.integers(2, 7))
        lab = (first + np.arange(n)) % 2
        x = np.zeros((n, 3))
        x[0, first] = 1.0
        x[:, 2] = 1.0
        X.append(x)
        y.append(np.array(["even", "odd"])[lab])
    model = SequencePerceptron(max_iter=20, random_state=0).fit(X, y)
    assert model.score(X, y) == 1.0
    t = model.transition_
    assert t[0, 1] > t[0, 0] and t[1, 0] > t[1, 1]


def test_score_is_token_accuracy():
    X, y = _chain_data(2, n_seq=20, noise=2.0)
    model = SequencePerceptron(max_iter=2, random_state=0).fit(X, y)
    pred = np.concatenate(model.predict(X))
    assert model.score(X, y) == pytest.approx(np.mean(pred == np.concatenate(y)))
    # labels never seen in training count as errors
    y_bad = [np.full(len(yi), 99) for yi in y]
    assert model.score(X, y_bad) == 0.0
    # labels of another type never match (and neither crash nor get stringified)
    y_str = [np.array([str(v) for v in yi]) for yi in y]
    assert model.score(X, y_str) == 0.0
    y_float = [yi.astype(float) for yi in y]
    assert model.score(X, y_float) == model.score(X, y)


# ------------------------------------------------------------ conventions


def test_params_clone_and_unfitted():
    model = SequencePerceptron(max_iter=3, shuffle=False, average=False, random_state=4, verbose=1)
    params = model.get_params()
    assert params == dict(max_iter=3, shuffle=False, average=False, random_state=4, verbose=1,
                          n_jobs=None)
    cloned = clone(model)
    assert cloned.get_params() == params and cloned is not model
    assert model.set_params(max_iter=7) is model and model.max_iter == 7
    with pytest.raises(NotFittedError):
        model.predict([np.ones((2, 3))])
    with pytest.raises(TypeError):
        SequencePerceptron(5)  # keyword-only


def test_pickle_roundtrip_same_predictions():
    X, y = _chain_data(3, noise=1.5)
    model = SequencePerceptron(random_state=0).fit(X, y)
    restored = pickle.loads(pickle.dumps(model))
    for a, b in zip(model.predict(X), restored.predict(X)):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(model.coef_, restored.coef_)


def test_random_state_reproducible_and_seed_dependent():
    X, y = _chain_data(4, n_seq=40, noise=2.0)
    a = SequencePerceptron(max_iter=3, random_state=11).fit(X, y)
    b = SequencePerceptron(max_iter=3, random_state=11).fit(X, y)
    c = SequencePerceptron(max_iter=3, random_state=12).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.transition_, b.transition_)
    assert not np.array_equal(a.coef_, c.coef_)
    d = SequencePerceptron(max_iter=3, shuffle=False, random_state=11).fit(X, y)
    e = SequencePerceptron(max_iter=3, shuffle=False, random_state=12).fit(X, y)
    np.testing.assert_array_equal(d.coef_, e.coef_)
    rs = np.random.RandomState(5)
    f = SequencePerceptron(max_iter=3, random_state=rs).fit(X, y)
    g = SequencePerceptron(max_iter=3, random_state=np.random.RandomState(5)).fit(X, y)
    np.testing.assert_array_equal(f.coef_, g.coef_)


def test_dense_and_sparse_give_identical_weights():
    X, y = _chain_data(5, noise=1.5, sparsity=0.5)
    dense = SequencePerceptron(max_iter=4, random_state=0).fit(X, y)
    Xs = [sp.csr_matrix(x) for x in X]
    Xs[0] = sp.coo_matrix(X[0])
    sparse = SequencePerceptron(max_iter=4, random_state=0).fit(Xs, y)
    np.testing.assert_array_equal(dense.coef_, sparse.coef_)
    np.testing.assert_array_equal(dense.transition_, sparse.transition_)
    for a, b in zip(dense.predict(X), sparse.predict(Xs)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    "mapping",
    [
        lambda k: ["ant", "bee", "cat"][k],
        lambda k: [-5, 0, 17][k],
        lambda k: [(0, "a"), (0, "b"), (1, "a")][k],
        lambda k: [0.5, 1.5, 2.5][k],
    ],
)
def test_arbitrary_hashable_labels(mapping):
    X, y = _chain_data(6, n_labels=3, noise=1.5)
    base = SequencePerceptron(max_iter=3, random_state=0).fit(X, y)
    y_mapped = [[mapping(int(k)) for k in yi] for yi in y]
    model = SequencePerceptron(max_iter=3, random_state=0).fit(X, y_mapped)
    # the mappings are increasing, so classes_ keeps the order and weights match
    assert [mapping(k) for k in range(3)] == list(model.classes_)
    np.testing.assert_array_equal(model.coef_, base.coef_)
    for pb, pm in zip(base.predict(X), model.predict(X)):
        assert [mapping(int(k)) for k in pb] == list(pm)
    assert model.score(X, y_mapped) == base.score(X, y)


def test_predictions_come_from_classes():
    X, y = _chain_data(8, n_labels=4, noise=3.0)
    y = [np.array(["l%d" % k for k in yi]) for yi in y]
    model = SequencePerceptron(max_iter=2, random_state=0).fit(X, y)
    pred = model.predict(X)
    assert len(pred) == len(X)
    assert all(len(p) == len(x) for p, x in zip(pred, X))
    assert set(np.concatenate(pred)) <= set(model.classes_)
    scores = model.decision_function(X)
    assert scores[0].shape == (len(X[0]), len(model.classes_))
    np.testing.assert_allclose(scores[0], X[0] @ model.coef_.T)


def test_bad_inputs():
    X, y = _chain_data(9, n_seq=5)
    with pytest.raises(ValueError, match=r"X\[1\] has 3 features"):
        SequencePerceptron().fit([X[0], X[1][:, :3]] + X[2:], y)
    with pytest.raises(ValueError, match=r"X\[2\] is an empty sequence"):
        SequencePerceptron().fit(X[:2] + [np.ones((0, 6))] + X[3:], y)
    with pytest.raises(ValueError, match="X has 5 sequences but y has 4"):
        SequencePerceptron().fit(X, y[:4])
    with pytest.raises(ValueError, match=r"y\[0\] has"):
        SequencePerceptron().fit(X, [np.r_[y[0], 0]] + y[1:])
    with pytest.raises(ValueError, match="1 distinct class"):
        SequencePerceptron().fit(X, [np.zeros(len(yi)) for yi in y])
    with pytest.raises(ValueError, match="'max_iter' parameter of SequencePerceptron must be an int in the range \\[1, inf\\)"):
        SequencePerceptron(max_iter=0).fit(X, y)
    with pytest.raises(TypeError, match="'shuffle' parameter of SequencePerceptron must be an instance of 'bool'"):
        SequencePerceptron(shuffle="yes").fit(X, y)
    model = SequencePerceptron(max_iter=1, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="X has 5 features, but the estimator was fitted with 6"):
        model.predict([x[:, :5] for x in X])
    with pytest.raises(ValueError, match=r"X\[0\] contains NaN"):
        model.predict([np.full((2, 6), np.nan)])


def test_verbose_logs_epochs(caplog):
    X, y = _chain_data(10, n_seq=5)
    with caplog.at_level(logging.INFO, logger="structlearn.learners.online_chain"):
        SequencePerceptron(max_iter=2, verbose=1, random_state=0).fit(X, y)
    assert any("epoch 1" in r.getMessage() for r in caplog.records)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="structlearn.learners.online_chain"):
        SequencePerceptron(max_iter=2, verbose=0, random_state=0).fit(X, y)
    assert not caplog.records
