"""structlearn.compat.CRF against the specification of sklearn-crfsuite's own
test suite (tests/test_crf.py and tests/test_metrics.py of
TeamHG-Memex/sklearn-crfsuite: same fixtures and assertions, rewritten here),
plus the inspection attributes and the parameter checks."""

import os
import pickle

import numpy as np
import pytest
from sklearn.model_selection import cross_val_score

from structlearn.compat import CRF, metrics

ALGORITHMS = ["lbfgs", "l2sgd", "pa", "ap", "arow"]


@pytest.fixture()
def xseq():
    return [
        {"walk": 1, "shop": 0.5},
        {"walk": 1},
        {"walk": 1, "clean": 0.5},
        {"shop": 0.5, "clean": 0.5},
        {"walk": 0.5, "clean": 1},
        {"clean": 1, "shop": 0.1},
        {"walk": 1, "shop": 0.5},
        {},
        {"clean": 1},
        {"солнце": "не светит".encode("utf8"), "clean": 1},
    ]


@pytest.fixture()
def yseq():
    return ["sunny", "sunny", "sunny", "rainy", "rainy", "rainy", "sunny", "sunny", "rainy",
            "rainy"]


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_crf(xseq, yseq, algorithm):
    crf = CRF(algorithm)
    crf.fit([xseq], [yseq])
    y_pred = crf.predict([xseq])
    if algorithm != "ap":  # the averaged perceptron is regularized too much
        assert y_pred == [yseq]


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("use_dev", [True, False])
def test_crf_verbose(xseq, yseq, algorithm, use_dev):
    crf = CRF(algorithm, verbose=True)
    X_dev, y_dev = ([xseq], [yseq]) if use_dev else (None, None)
    crf.fit(X=[xseq, xseq], y=[yseq, yseq], X_dev=X_dev, y_dev=y_dev)
    if algorithm != "ap":
        assert crf.predict([xseq]) == [yseq]
    assert ("dev_accuracy" in crf.training_log_[-1]) == use_dev


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_crf_marginals(xseq, yseq, algorithm):
    crf = CRF(algorithm)
    crf.fit([xseq], [yseq])
    y_pred_marginals = crf.predict_marginals([xseq])
    assert len(y_pred_marginals) == 1
    marginals = y_pred_marginals[0]
    assert len(marginals) == len(yseq)
    labels = crf.tagger.labels()
    for m in marginals:
        assert isinstance(m, dict)
        assert set(m.keys()) == set(labels)
        assert abs(sum(m.values()) - 1.0) < 1e-6


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_predict_without_fit(xseq, algorithm):
    with pytest.raises(Exception):
        CRF(algorithm).predict([xseq])


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_crf_score(xseq, yseq, algorithm):
    crf = CRF(algorithm)
    crf.fit([xseq], [yseq])
    score = crf.score([xseq], [yseq])
    if algorithm != "ap":
        assert score == 1.0
    else:
        assert score > 0.8


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_crf_pickling(xseq, yseq, algorithm):
    crf = CRF(algorithm=algorithm)
    crf.fit([xseq], [yseq])
    crf2 = pickle.loads(pickle.dumps(crf, protocol=pickle.HIGHEST_PROTOCOL))
    score = crf2.score([xseq], [yseq])
    assert score == 1.0 if algorithm != "ap" else score > 0.8
    assert crf2.algorithm == algorithm


def test_crf_model_filename(xseq, yseq, tmpdir):
    path = os.path.join(str(tmpdir), "foo.crfsuite")
    assert not os.path.exists(path)
    crf = CRF(model_filename=path)
    crf.fit([xseq], [yseq])
    assert os.path.exists(path)
    crf2 = CRF(model_filename=path)  # loads the file on first use
    assert crf2.score([xseq], [yseq]) == 1.0
    crf3 = pickle.loads(pickle.dumps(crf, protocol=pickle.HIGHEST_PROTOCOL))
    assert crf3.score([xseq], [yseq]) == 1.0


def test_cross_validation(xseq, yseq):
    scores = cross_val_score(CRF(), [xseq] * 20, [yseq] * 20, n_jobs=2, cv=5)
    assert scores.mean() == 1.0


def test_crf_dev_bad_arguments(xseq, yseq):
    with pytest.raises(ValueError):
        CRF().fit([xseq] * 20, [yseq] * 20, [xseq] * 20)


# ---------------------------------------------------------- tests/test_metrics.py
y1 = [["x", "z", "y"], ["x", "x"]]
y2 = [["y", "z", "y"], ["x", "y"]]


def test_flat_scores():
    assert metrics.flat_accuracy_score(y1, y2) == 3 / 5
    assert metrics.flat_precision_score(y1, y2, average="micro") == 3 / 5
    assert metrics.flat_recall_score(y1, y2, average="micro") == 3 / 5
    score = metrics.flat_f1_score(y1, y2, average="macro")
    assert score == 2 / 3
    assert metrics.flat_fbeta_score(y1, y2, beta=1, average="macro") == score


def test_sequence_accuracy():
    assert metrics.sequence_accuracy_score(y1, y2) == 0
    assert metrics.sequence_accuracy_score([], []) == 0
    assert metrics.sequence_accuracy_score([[1, 2], [3], [4]], [[1, 2], [4], [4]]) == 2 / 3
    assert metrics.sequence_accuracy_score([[1, 2], [3]], [[1, 2], [3]]) == 1.0


# ------------------------------------------------------------------- beyond the peer
def test_inspection_attributes(xseq, yseq):
    crf = CRF(c2=0.1).fit([xseq], [yseq])
    est = crf.estimator_
    assert crf.classes_ == ["rainy", "sunny"]
    assert "солнце:не светит" in crf.attributes_
    trans = crf.transition_features_
    assert trans == {(a, b): float(est.transition_[i, j])
                     for i, a in enumerate(crf.classes_) for j, b in enumerate(crf.classes_)
                     if est.transition_[i, j] != 0}
    states = crf.state_features_
    W = est.coef_.toarray() if hasattr(est.coef_, "toarray") else est.coef_
    assert len(states) == np.count_nonzero(W)
    k = crf.classes_.index("rainy")
    j = crf.attributes_.index("clean")
    assert states[("clean", "rainy")] == W[k, j]
    assert crf.size_ > 0 and crf.training_log_


@pytest.mark.parametrize("algorithm", ["l2sgd", "pa", "ap", "arow"])
def test_unobserved_pairs_keep_no_weight(xseq, yseq, algorithm):
    crf = CRF(algorithm).fit([xseq], [yseq])
    assert ("солнце:не светит", "sunny") not in crf.state_features_  # never on a sunny token
    wide = CRF(algorithm, all_possible_states=True).fit([xseq], [yseq])
    assert ("солнце:не светит", "sunny") in wide.state_features_


@pytest.mark.parametrize("params, pattern", [
    ({"algorithm": "sgd"}, "algorithm must be one of"),
    ({"algorithm": "ap", "c2": 1.0}, "c2 do not apply to algorithm 'ap'"),
    ({"algorithm": "lbfgs", "pa_type": 1}, "pa_type do not apply"),
    ({"algorithm": "pa", "pa_type": 3}, "pa_type must be 0, 1 or 2"),
    ({"linesearch": "StrongBacktracking"}, "linesearch='StrongBacktracking' is not implemented"),
    ({"trainer_cls": object}, "trainer_cls"),
])
def test_parameters_it_cannot_honour_are_named(xseq, yseq, params, pattern):
    with pytest.raises(ValueError, match=pattern):
        CRF(**params).fit([xseq], [yseq])


def test_min_freq_drops_rare_attributes(xseq, yseq):
    crf = CRF(min_freq=2).fit([xseq], [yseq])
    assert "солнце:не светит" not in crf.attributes_ and "clean" in crf.attributes_
