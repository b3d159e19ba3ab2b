"""Sequence metrics: flat scores against scikit-learn on the concatenated
tokens, entities against the CoNLL rules and random span encodings, use as
GridSearchCV scorers."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn import metrics as skm
from sklearn.metrics import make_scorer
from sklearn.model_selection import GridSearchCV

from structlearn.datasets import make_chain_data
from structlearn.estimators import SequenceCRF
from structlearn.metrics import (entity_classification_report, entity_f1_score,
                                 entity_precision_score, entity_recall_score,
                                 flat_accuracy_score, flat_classification_report,
                                 flat_f1_score, flat_precision_score, flat_recall_score,
                                 get_entities, sequence_accuracy_score)


def test_flat_scores_equal_sklearn_on_the_concatenated_tokens():
    rng = np.random.default_rng(0)
    true = [rng.choice(list("abc"), size=rng.integers(1, 6)) for _ in range(20)]
    pred = [np.where(rng.random(len(t)) < 0.7, t, rng.choice(list("abc"), size=len(t)))
            for t in true]
    t, p = np.concatenate(true), np.concatenate(pred)
    assert flat_accuracy_score(true, pred) == skm.accuracy_score(t, p)
    for ours, theirs in ((flat_precision_score, skm.precision_score),
                         (flat_recall_score, skm.recall_score), (flat_f1_score, skm.f1_score)):
        assert ours(true, pred, average="macro") == theirs(t, p, average="macro")
    assert flat_classification_report(true, pred) == skm.classification_report(t, p)
    assert sequence_accuracy_score(true, pred) == np.mean(
        [np.array_equal(a, b) for a, b in zip(true, pred)])


def test_conll_rules():
    assert get_entities(["B-PER", "I-PER", "O", "B-LOC"]) == [("PER", 0, 1), ("LOC", 3, 3)]
    # an I after O or after another type starts a chunk (CoNLL, seqeval default)
    assert get_entities(["O", "I-PER", "I-PER", "I-LOC", "B-LOC", "I-LOC"]) == [
        ("PER", 1, 2), ("LOC", 3, 3), ("LOC", 4, 5)]
    assert get_entities(["S-PER", "B-LOC", "E-LOC", "I-LOC", "E-LOC", "O"],
                        scheme="BIOES") == [("PER", 0, 0), ("LOC", 1, 2), ("LOC", 3, 4)]
    y_true = [["O", "O", "O", "B-MISC", "I-MISC", "I-MISC", "O"], ["B-PER", "I-PER", "O"]]
    y_pred = [["O", "O", "B-MISC", "I-MISC", "I-MISC", "I-MISC", "O"], ["B-PER", "I-PER", "O"]]
    assert entity_f1_score(y_true, y_pred) == 0.5
    assert entity_precision_score(y_true, y_pred) == 0.5
    assert entity_recall_score(y_true, y_pred) == 0.5
    report = entity_classification_report(y_true, y_pred)
    assert "MISC" in report and "PER" in report and "micro avg" in report


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_random_spans_are_recovered(data):
    n = data.draw(st.integers(1, 30))
    tags, spans, i = ["O"] * n, [], 0
    while i < n:
        if data.draw(st.booleans()):
            length = data.draw(st.integers(1, min(4, n - i)))
            kind = data.draw(st.sampled_from(["PER", "LOC", "ORG"]))
            spans.append((kind, i, i + length - 1))
            i += length
            if i < n and data.draw(st.booleans()):
                i += 1  # an O between entities, or two entities side by side
        else:
            i += 1
    bio, bioes = list(tags), list(tags)
    for kind, a, b in spans:
        for j in range(a, b + 1):
            bio[j] = ("B-" if j == a else "I-") + kind
            bioes[j] = ("S-" if a == b else "B-" if j == a else "E-" if j == b else "I-") + kind
    assert get_entities(bio) == spans
    assert get_entities(bioes, scheme="BIOES") == spans
    assert entity_f1_score([bio], [bio]) == (1.0 if spans else 0.0)


def test_bad_input():
    with pytest.raises(ValueError, match="sequence 1: y_true has 2 labels but y_pred has 1"):
        flat_accuracy_score([["a"], ["a", "b"]], [["a"], ["a"]])
    with pytest.raises(ValueError, match="y_true has 2 sequences but y_pred has 1"):
        entity_f1_score([["O"], ["O"]], [["O"]])
    with pytest.raises(ValueError, match="not in the BIO scheme"):
        get_entities(["E-PER"])
    with pytest.raises(ValueError, match="not in the BIO scheme"):
        get_entities(["PER"])
    with pytest.raises(ValueError, match="scheme must be one of"):
        get_entities(["O"], scheme="IOB2")
    with pytest.raises(ValueError, match="empty"):
        flat_accuracy_score([], [])


def test_metrics_as_grid_search_scorers():
    X, y = make_chain_data(40, length=5, n_labels=4, n_features=10, random_state=0)
    scoring = {"f1": make_scorer(flat_f1_score, average="macro"),
               "seq": make_scorer(sequence_accuracy_score)}
    search = GridSearchCV(SequenceCRF(max_iter=20), {"c2": [0.1, 1.0]}, cv=2,
                          scoring=scoring, refit="f1").fit(X, y)
    best = search.best_estimator_
    assert search.best_score_ == pytest.approx(
        max(search.cv_results_["mean_test_f1"]))
    assert 0.0 <= flat_f1_score(y, best.predict(X), average="macro") <= 1.0
