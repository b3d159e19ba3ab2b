"""SequenceVectorizer and feature-dict input of the sequence estimators,
against scikit-learn's DictVectorizer / FeatureHasher on the flattened tokens."""

import collections
import math

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.feature_extraction import DictVectorizer, FeatureHasher
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline

from structlearn.datasets import SequenceVectorizer, read_conllu, token_features
from structlearn.estimators import SequenceCRF, SequencePerceptron, SequenceSSVM


@pytest.fixture(scope="module")
def tagged(test_data):
    sents = read_conllu(test_data / "porttinari_pos.conllu.gz", columns=("form", "upos"))[:120]
    return [token_features(s["form"]) for s in sents], [list(s["upos"]) for s in sents]


def _random_dicts(seed, n_sent=15):
    rng = np.random.default_rng(seed)
    X = []
    for _ in range(n_sent):
        sent = []
        for _ in range(rng.integers(1, 6)):
            tok = {f"k{rng.integers(5)}": f"v{rng.integers(4)}" for _ in range(rng.integers(0, 4))}
            if rng.random() < 0.5:
                tok["num"] = float(rng.normal())
            if rng.random() < 0.3:
                tok["flag"] = bool(rng.random() < 0.5)
            sent.append(tok)
        X.append(sent)
    return X


@pytest.mark.parametrize("seed", range(5))
def test_vocabulary_matches_dict_vectorizer(seed):
    X = _random_dicts(seed)
    flat = [t for s in X for t in s]
    ref = DictVectorizer(dtype=np.float64).fit(flat)
    vec = SequenceVectorizer().fit(X)
    assert vec.feature_names_ == list(ref.feature_names_)
    out = vec.transform(X)
    assert [m.shape[0] for m in out] == [len(s) for s in X]
    np.testing.assert_array_equal(sp.vstack(out).toarray(), ref.transform(flat).toarray())


def test_value_types_beyond_the_builtin_ones_match_dict_vectorizer():
    """numpy scalars and subclasses of str / int take the general checks
    (built-in float, int, bool and str take a shortcut): the same columns."""

    class Name(str):
        pass

    class Count(int):
        pass

    X = [[{"a": np.float32(0.5), "b": np.int64(3), "c": np.str_("x"), "d": True},
          {"a": Name("y"), "b": Count(2), "c": "x", "d": False, "e": 1.5}],
         [{"a": 2, "c": np.str_("z"), "f": True}]]
    flat = [t for s in X for t in s]
    ref = DictVectorizer(dtype=np.float64).fit(flat)
    vec = SequenceVectorizer().fit(X)
    assert vec.feature_names_ == list(ref.feature_names_)
    np.testing.assert_array_equal(sp.vstack(vec.transform(X)).toarray(),
                                  ref.transform(flat).toarray())


def test_a_numeric_key_spelled_like_an_indicator_shares_its_column():
    # "a=b" as a numeric key and a="b" as an indicator are one feature for
    # DictVectorizer; the vocabulary keeps them apart internally but must not
    X = [[{"a=b": 2.0}, {"a": "b"}], [{"a": "b", "a=b": 0.5}, {"a": "c"}, {"a=c": 3.0}]]
    flat = [t for s in X for t in s]
    ref = DictVectorizer(dtype=np.float64).fit(flat)
    vec = SequenceVectorizer().fit(X)
    assert vec.feature_names_ == list(ref.feature_names_) == ["a=b", "a=c"]
    np.testing.assert_array_equal(sp.vstack(vec.transform(X)).toarray(),
                                  ref.transform(flat).toarray())
    # unseen features are ignored whatever their kind
    new = [[{"a": "z", "a=z": 1.0, "b": 2.0, "a=b": 1.0}]]
    np.testing.assert_array_equal(vec.transform(new)[0].toarray(), [[1.0, 0.0]])


@pytest.mark.parametrize("min_freq", [2, 3])
def test_min_freq_keeps_the_features_of_that_many_tokens(min_freq):
    X = _random_dicts(7, n_sent=30)
    counts = collections.Counter()
    for s in X:
        for t in s:
            counts.update(f"{k}={v}" if isinstance(v, str) else k
                          for k, v in t.items() if isinstance(v, str) or v != 0)
    vec = SequenceVectorizer(min_freq=min_freq).fit(X)
    assert set(vec.feature_names_) == {f for f, c in counts.items() if c >= min_freq}


def test_hashing_matches_feature_hasher():
    X = _random_dicts(3)
    flat = [t for s in X for t in s]
    ref = FeatureHasher(64, input_type="dict", alternate_sign=False).transform(flat)
    out = SequenceVectorizer(n_features=64).fit_transform(X)
    np.testing.assert_array_equal(sp.vstack(out).toarray(), ref.toarray())


def test_unseen_features_are_ignored():
    vec = SequenceVectorizer().fit([[{"w": "a"}, {"w": "b"}]])
    out = vec.transform([[{"w": "zzz", "new": 1.0}, {"w": "a"}]])[0].toarray()
    np.testing.assert_array_equal(out, [[0.0, 0.0], [1.0, 0.0]])


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("make", [lambda: SequenceCRF(max_iter=20),
                                  lambda: SequenceSSVM(max_iter=5, tol=0.5, random_state=0),
                                  lambda: SequencePerceptron(max_iter=3, random_state=0)])
def test_estimators_take_feature_dicts(tagged, make):
    X, y = tagged
    direct = make().fit(X[:100], y[:100])
    vec = SequenceVectorizer().fit(X[:100])
    via = make().fit(vec.transform(X[:100]), y[:100])
    assert direct.vectorizer_.feature_names_ == vec.feature_names_
    dense = [c.toarray() if sp.issparse(c) else c for c in (direct.coef_, via.coef_)]
    np.testing.assert_array_equal(*dense)
    for a, b in zip(direct.predict(X[100:]), via.predict(vec.transform(X[100:]))):
        np.testing.assert_array_equal(a, b)
    assert direct.score(X[100:], y[100:]) > 0.5
    labels, _ = direct.predict_topk(X[100:102], 2)
    assert labels[0].shape == (2, len(X[100]))
    with pytest.raises(ValueError, match="fitted on feature matrices"):
        via.predict(X[100:])


def test_pipeline_and_grid_search(tagged):
    X, y = tagged
    pipe = make_pipeline(SequenceVectorizer(), SequenceCRF(max_iter=15))
    search = GridSearchCV(pipe, {"sequencevectorizer__min_freq": [1, 3]}, cv=2).fit(X, y)
    assert search.best_params_["sequencevectorizer__min_freq"] in (1, 3)
    assert len(search.predict(X[:3])) == 3


def test_bad_input():
    vec = SequenceVectorizer()
    with pytest.raises(TypeError, match=r"X\[0\]\[1\] has a feature name that is not a string"):
        vec.fit([[{"a": 1.0}, {3: 1.0}]])
    with pytest.raises(TypeError, match=r"X\[1\] must be a list of per-token feature dicts"):
        vec.fit([[{"a": 1.0}], "word"])
    with pytest.raises(TypeError, match=r"X\[0\]\[0\]\['a'\] must be a number or a string"):
        vec.fit([[{"a": [1, 2]}]])
    with pytest.raises(ValueError, match=r"X\[0\]\[1\] has a NaN or infinite value"):
        vec.fit_transform([[{"a": 1.0}, {"a": math.nan}]])
    with pytest.raises(ValueError, match="no tokens"):
        vec.fit([[], []])
    with pytest.raises(ValueError, match="'min_freq' parameter of SequenceVectorizer must be an int in the range \\[1, inf\\)"):
        SequenceVectorizer(min_freq=0).fit([[{"a": 1.0}]])
    with pytest.raises(ValueError, match="min_freq needs a vocabulary"):
        SequenceVectorizer(min_freq=2, n_features=8).fit([[{"a": 1.0}]])
    # an empty sentence reaches the estimator's own check
    with pytest.raises(ValueError, match=r"X\[1\] is an empty sequence"):
        SequenceCRF().fit([[{"a": 1.0}], []], [["x"], []])
    with pytest.raises(ValueError, match=r"y\[0\] has 1 labels but X\[0\] has 2 tokens"):
        SequenceCRF().fit([[{"a": 1.0}, {"a": 2.0}]], [["x"]])


# ------------------------------------------------- a vocabulary built in parts
_KEYS = ["w", "w=a", "suffix", "n"]


def _random_sentences(rng, n):
    """Sentences with indicator and numeric features, some spelled both ways
    (``"w=a"`` numeric beside ``w="a"``), zeros and repeated keys."""
    out = []
    for _ in range(n):
        sentence = []
        for _ in range(rng.randint(1, 4)):
            token = {}
            for key in rng.choice(_KEYS, size=rng.randint(0, 4), replace=False):
                token[key] = (str(rng.choice(["a", "b", "c"])) if rng.rand() < 0.6
                              else float(rng.randint(0, 3)))
            sentence.append(token)
        out.append(sentence)
    return out


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("min_freq", [1, 3])
def test_merged_vocabulary_is_one_fit_over_all_parts(seed, min_freq):
    """The vocabulary merged from the parts' summaries is the one a fit on
    all sentences builds, and each part remapped equals its transform."""
    from structlearn.datasets.sequence_vectorizer import (columns_in, merged_vocabulary,
                                                          remap_columns, vocabulary_part)

    rng = np.random.RandomState(seed)
    X = _random_sentences(rng, 30)
    cuts = np.sort(rng.choice(np.arange(1, 30), size=rng.randint(1, 4), replace=False))
    parts = np.split(np.arange(30), cuts)
    summaries = [vocabulary_part([X[i] for i in idx]) for idx in parts]
    one = SequenceVectorizer(min_freq=min_freq).fit(X)
    merged, columns = merged_vocabulary((s for s, _ in summaries), min_freq)
    assert merged.feature_names_ == one.feature_names_
    for idx, (summary, (Xall, _)), column in zip(parts, summaries, columns):
        np.testing.assert_array_equal(column, columns_in(one, summary))
        got = remap_columns(Xall.copy(), column, merged.n_features_out_)
        want, _ = one.transform_stacked([X[i] for i in idx])
        np.testing.assert_array_equal(got.toarray(), want.toarray())
    more = [[{"w": "zzz", "n": 2.0}]]  # transforms as the one fit does
    np.testing.assert_array_equal(merged.transform_stacked(more)[0].toarray(),
                                  one.transform_stacked(more)[0].toarray())


def test_merged_vocabulary_bad_parts():
    from structlearn.datasets.sequence_vectorizer import merged_vocabulary, vocabulary_part

    with pytest.raises(ValueError, match="no tokens"):
        merged_vocabulary([])
    part = vocabulary_part([[{"a": "x"}], [{"a": "y"}]])[0]
    with pytest.raises(ValueError, match="min_freq=2"):
        merged_vocabulary([part], min_freq=2)
