"""Online chain training (perceptron, passive-aggressive, AROW) against a
plain-Python reference of each update rule."""

import itertools

import numpy as np
import pytest

from structlearn.inference.chains._chain_kernels import viterbi_batch
from structlearn.learners.online_chain import fit_online_chain


def _data(seed, n_seq=6, d=4, K=3):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 5, size=n_seq)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    X = rng.integers(0, 3, size=(offsets[-1], d)).astype(np.float64)
    X[rng.random(X.shape) < 0.4] = 0.0
    codes = rng.integers(0, K, size=offsets[-1]).astype(np.int64)
    return X, offsets, codes, d, K


def _csr(X):
    import scipy.sparse as sp

    M = sp.csr_matrix(X)
    return M.data.astype(np.float64), M.indices.astype(np.int64), M.indptr.astype(np.int64)


def _viterbi(unary, T):
    """The kernels' own Viterbi (its tie-breaking: all scores tie at the
    start), checked against enumeration where there is no tie."""
    out = np.empty(unary.shape[0], dtype=np.int64)
    viterbi_batch(np.ascontiguousarray(unary), np.array([0, unary.shape[0]]), T, out)
    scores = {z: sum(unary[t, z[t]] for t in range(len(z)))
              + sum(T[z[t - 1], z[t]] for t in range(1, len(z)))
              for z in itertools.product(range(T.shape[0]), repeat=unary.shape[0])}
    assert scores[tuple(out)] >= max(scores.values()) - 1e-9
    return out


def _reference(X, offsets, codes, d, K, rule, C, es, gamma, variance, average, epochs):
    """The update rules written out over dense feature vectors (W then T)."""
    n_par = d * K + K * K
    w = np.zeros(n_par)
    acc = np.zeros(n_par)
    sigma = np.full(n_par, variance)

    def phi(s, z):
        f = np.zeros(n_par)
        a = offsets[s]
        for t, k in enumerate(z):
            f[np.arange(d) * K + k] += X[a + t]
        for t in range(1, len(z)):
            f[d * K + z[t - 1] * K + z[t]] += 1.0
        return f

    step = 0
    for _ in range(epochs):
        for s in range(offsets.shape[0] - 1):
            a, b = offsets[s], offsets[s + 1]
            W, T = w[:d * K].reshape(d, K), w[d * K:].reshape(K, K)
            z = _viterbi(X[a:b] @ W, T)
            y = codes[a:b]
            wrong = int((z != y).sum())
            step += 1
            if wrong == 0:
                continue
            sv = phi(s, y) - phi(s, z)
            cost = wrong if rule == "arow" else (np.sqrt(wrong) if es else 1.0)
            loss = max(cost - w @ sv, 0.0)
            norm2 = sv @ sv
            if rule == "perceptron":
                delta = sv
            elif rule == "pa":
                delta = (loss / norm2 if norm2 else 0.0) * sv
            elif rule == "pa1":
                delta = (min(C, loss / norm2) if norm2 else 0.0) * sv
            elif rule == "pa2":
                delta = loss / (norm2 + 0.5 / C) * sv
            else:
                beta = 1.0 / (sigma @ (sv * sv) + gamma)
                delta = loss * beta * sigma * sv
                sigma = 1.0 / (1.0 / sigma + sv ** 2 / gamma)
            w = w + delta
            acc = acc + (step - 1) * delta
    if average and rule != "arow":
        w = w - acc / step
    return w[:d * K].reshape(d, K).T, w[d * K:].reshape(K, K)


@pytest.mark.parametrize("rule", ["perceptron", "pa", "pa1", "pa2", "arow"])
@pytest.mark.parametrize("seed", range(4))
def test_each_rule_matches_its_reference(rule, seed):
    X, offsets, codes, d, K = _data(seed)
    C, es, gamma, variance = [(1.0, True, 1.0, 1.0), (0.3, False, 0.5, 2.0)][seed % 2]
    average = seed % 3 != 2
    coef, T, history, _ = fit_online_chain(
        *_csr(X), offsets, codes, d, K, rule=rule, C=C, error_sensitive=es, gamma=gamma,
        variance=variance, average=average, max_iter=3, epsilon=-1.0, shuffle=False)
    ref_coef, ref_T = _reference(X, offsets, codes, d, K, rule, C, es, gamma, variance,
                                 average, len(history))
    np.testing.assert_allclose(coef, ref_coef, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(T, ref_T, rtol=1e-9, atol=1e-9)


def test_a_separable_task_stops_after_an_epoch_without_mistakes():
    X = np.eye(3)[[0, 1, 2, 0, 1, 2]]
    offsets = np.array([0, 3, 6])
    codes = np.array([0, 1, 2, 0, 1, 2])
    for rule in ("perceptron", "pa1", "arow"):
        coef, T, history, converged = fit_online_chain(
            *_csr(X), offsets, codes, 3, 3, rule=rule, max_iter=50,
            rng=np.random.RandomState(0))
        assert history[-1]["sequence_errors"] == 0 and len(history) < 50 and converged
        assert np.array_equal(np.argmax(X @ coef.T, axis=1), codes)


def _sgd_reference(X, offsets, codes, d, K, lam, t0, epochs, W_mask, T_mask):
    """L2 SGD on the chain likelihood with marginals by enumeration."""
    W, T = np.zeros((d, K)), np.zeros((K, K))
    t = 0
    for _ in range(epochs):
        for s in range(offsets.shape[0] - 1):
            a, b = offsets[s], offsets[s + 1]
            n = b - a
            eta = 1.0 / (lam * (t0 + t))
            t += 1
            W *= 1.0 - eta * lam
            T *= 1.0 - eta * lam
            U = X[a:b] @ W
            labelings = list(itertools.product(range(K), repeat=n))
            scores = np.array([sum(U[i, z[i]] for i in range(n))
                               + sum(T[z[i - 1], z[i]] for i in range(1, n)) for z in labelings])
            p = np.exp(scores - scores.max())
            p /= p.sum()
            gW, gT = np.zeros((d, K)), np.zeros((K, K))
            for z, pz in zip(labelings + [tuple(codes[a:b])], list(-p) + [1.0]):
                for i in range(n):
                    gW[:, z[i]] += pz * X[a + i]
                for i in range(1, n):
                    gT[z[i - 1], z[i]] += pz
            W += eta * gW * W_mask
            T += eta * gT * T_mask
    return W.T, T


@pytest.mark.parametrize("seed", range(3))
def test_sgd_epochs_match_their_reference(seed):
    from structlearn.learners.online_chain import observed_weights
    from structlearn.learners.sgd_chain import _Epochs

    X, offsets, codes, d, K = _data(seed, n_seq=4)
    W_mask, T_mask = observed_weights(X, offsets, codes, K)
    if seed == 2:
        W_mask, T_mask = np.ones_like(W_mask), np.ones_like(T_mask)
    lam, t0 = 0.5, 3.0
    run = _Epochs(*_csr(X), offsets, codes, d, K, lam, W_mask, T_mask)
    for _ in range(2):
        run.run(np.arange(offsets.shape[0] - 1, dtype=np.int64), t0)
    coef, T = run.weights()
    ref_coef, ref_T = _sgd_reference(X, offsets, codes, d, K, lam, t0, 2, W_mask, T_mask)
    np.testing.assert_allclose(coef, ref_coef, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(T, ref_T, rtol=1e-8, atol=1e-10)
