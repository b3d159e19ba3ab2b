"""``predict_topk`` of every estimator and ``map --m-best`` against enumeration."""

import itertools
import json

import numpy as np
import pytest

from structlearn.__main__ import main
from structlearn.estimators import (GraphCRF, MultiLabelSSVM, SequenceCRF, SequencePerceptron,
                                    SequenceSSVM)
from structlearn.graphs import grid_graph, read_uai_solutions, write_uai

SEQUENCE_MODELS = {
    "ssvm": lambda: SequenceSSVM(max_iter=20, random_state=0),
    "crf": lambda: SequenceCRF(max_iter=30),
    "perceptron": lambda: SequencePerceptron(max_iter=5, random_state=0),
}


def sequence_data(seed=0, n=12):
    rng = np.random.default_rng(seed)
    X = [rng.normal(size=(int(rng.integers(1, 5)), 4)) for _ in range(n)]
    y = [np.array(["DET", "NOUN", "VERB"])[rng.integers(0, 3, size=x.shape[0])] for x in X]
    return X, y


def chain_score(model, x, labels):
    codes = np.searchsorted(model.classes_, labels)
    unary = x @ model.coef_.T
    return unary[np.arange(len(codes)), codes].sum() + model.transition_[codes[:-1],
                                                                         codes[1:]].sum()


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("name", sorted(SEQUENCE_MODELS))
def test_sequence_topk_matches_enumeration(name):
    X, y = sequence_data()
    model = SEQUENCE_MODELS[name]().fit(X, y)
    labels, scores = model.predict_topk(X, k=7)
    pred = model.predict(X)
    for x, lab, sc, p in zip(X, labels, scores, pred):
        every = [np.array(c) for c in itertools.product(model.classes_, repeat=x.shape[0])]
        expected = np.sort([chain_score(model, x, c) for c in every])[::-1][:7]
        assert lab.shape == (expected.size, x.shape[0])
        np.testing.assert_allclose(sc, expected, atol=1e-9)
        np.testing.assert_allclose([chain_score(model, x, r) for r in lab], sc, atol=1e-9)
        assert len({tuple(r) for r in lab}) == lab.shape[0]
        np.testing.assert_array_equal(lab[0], p)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("pairwise", ["full", "none"])
def test_multilabel_topk_matches_enumeration(pairwise):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(15, 5))
    Y = (rng.random((15, 4)) < 0.5).astype(int)
    model = MultiLabelSSVM(pairwise=pairwise, max_iter=20, random_state=0).fit(X, Y)
    top, scores = model.predict_topk(X, k=20)
    assert top.shape == (15, 16, 4)  # only 2**4 label sets exist
    S = model.decision_function(X)
    P = np.triu(model.pairwise_coef_, 1)
    sets = np.array(list(itertools.product([0, 1], repeat=4)))
    for i in range(15):
        every = sets @ S[i] + np.einsum("ka,ab,kb->k", sets, P, sets)
        np.testing.assert_allclose(scores[i], np.sort(every)[::-1], atol=1e-9)
        got = top[i] @ S[i] + np.einsum("ka,ab,kb->k", top[i], P, top[i])
        np.testing.assert_allclose(got, scores[i], atol=1e-9)
    np.testing.assert_array_equal(top[:, 0], model.predict(X))


def test_graph_crf_topk_on_a_loopy_graph():
    rng = np.random.default_rng(2)
    edges = np.array([[0, 1], [1, 2], [0, 2], [2, 3]])
    X = [(rng.normal(size=(4, 3)), edges) for _ in range(5)]
    y = [rng.integers(0, 2, size=4) for _ in range(5)]
    model = GraphCRF(max_iter=5).fit(X, y)
    labels, scores = model.predict_topk(X, k=4)
    for (feats, e), lab, sc in zip(X, labels, scores):
        unary = feats @ model.coef_.T
        table = model.pairwise_[0]

        def score(z):
            return unary[np.arange(4), z].sum() + table[z[e[:, 0]], z[e[:, 1]]].sum()

        every = np.sort([score(np.array(z)) for z in itertools.product(range(2), repeat=4)])
        codes = np.searchsorted(model.classes_, lab)
        np.testing.assert_allclose([score(z) for z in codes], sc, atol=1e-9)
        assert np.all(sc <= every[::-1][:4] + 1e-9)  # certified search: never above the truth


def test_topk_rejects_bad_k():
    X, y = sequence_data()
    model = SequencePerceptron(max_iter=2, random_state=0).fit(X, y)
    for bad, error in [(0, ValueError), (1.5, TypeError)]:
        with pytest.raises(error, match="must be an integer >= 1"):
            model.predict_topk(X, k=bad)


def test_cli_m_best_writes_ranked_solutions(tmp_path, capsys):
    rng = np.random.default_rng(3)
    graph = grid_graph(rng.normal(size=(2, 3, 2)), rng.normal(size=(7, 2, 2)))
    path = tmp_path / "g.uai"
    write_uai(graph, path)
    out = tmp_path / "g.MBEST"
    status = main(["map", str(path), "--m-best", "5", "--method", "nilsson", "-p",
                   'map_method="brute_force"', "--out", str(out)])
    record = json.loads(capsys.readouterr().out)
    assert status == 0 and record["status"] == "exact" and record["n_found"] == 5
    labels, scores, bounds = read_uai_solutions(out)
    every = np.sort(graph.score_many(np.array(list(itertools.product([0, 1], repeat=6)))))
    np.testing.assert_allclose(scores, every[::-1][:5])
    np.testing.assert_allclose(graph.score_many(labels), scores)
    np.testing.assert_allclose(record["upper_bounds"], bounds)
    for argv, pattern in [(["--m-best", "0"], "--m-best must be an integer >= 1"),
                          (["--m-best", "2", "--method", "viterbi"], "unknown M-best method"),
                          (["--m-best", "2", "-p", "bogus=1"], "unexpected parameter")]:
        assert main(["map", str(path), "--no-write", *argv]) == 2
        assert pattern in capsys.readouterr().err


def test_cli_m_best_on_an_infeasible_model_writes_nothing(tmp_path, capsys, monkeypatch):
    from structlearn.graphs import graph_from_edges

    graph = graph_from_edges(np.zeros((2, 2)), np.array([[0, 1]]), np.full((2, 2), -np.inf))
    path = tmp_path / "zero.uai"
    write_uai(graph, path)  # every potential 0
    monkeypatch.chdir(tmp_path)
    status = main(["map", str(path), "--m-best", "3"])
    record = json.loads(capsys.readouterr().out)
    assert status == 1 and record["status"] == "infeasible" and record["n_found"] == 0
    assert record["solution"] is None and not (tmp_path / "zero.uai.MBEST").exists()
