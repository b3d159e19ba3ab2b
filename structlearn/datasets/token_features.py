"""Word features for sequence labeling, as dicts and as sparse matrices.

The feature set is the usual one for CRF part-of-speech / named-entity
tagging (the one of the sklearn-crfsuite tutorial): the lower-cased word,
its prefixes and suffixes of length 1 to 3, shape flags, and the
neighbouring words (or sentence-boundary markers). The dicts can be passed
to sklearn-crfsuite directly; :func:`vectorize_sequences` turns them into
the per-sentence CSR matrices the structlearn estimators take, so both see
identical features.
"""

import itertools

import numpy as np
from sklearn.feature_extraction import DictVectorizer

from ._sparse import split_csr_rows

__all__ = ["token_features", "vectorize_sequences"]


def token_features(tokens):
    """Feature dicts for the tokens of one sentence.

    Parameters
    ----------
    tokens : sequence of str
        The words of the sentence.

    Returns
    -------
    features : list of dict, one per token
        Keys and values:

        - ``"bias"``: 1.0;
        - ``"word"``: the lower-cased word (str);
        - ``"prefix1"``, ``"prefix2"``, ``"prefix3"``, ``"suffix1"``,
          ``"suffix2"``, ``"suffix3"``: lower-cased affixes (str; a word
          shorter than n gives the whole word);
        - ``"is_title"``, ``"is_upper"``, ``"is_digit"``, ``"has_hyphen"``:
          1.0, present only when the flag holds;
        - ``"prev_word"`` / ``"next_word"``: the lower-cased neighbours
          (str), or ``"BOS"`` / ``"EOS"``: 1.0 at the first / last token.

        String values are categorical (one indicator per key=value pair in
        DictVectorizer and sklearn-crfsuite); float values are weights.
    """
    if isinstance(tokens, str):
        raise TypeError("tokens must be a sequence of str (one sentence), got a single str")
    words = [str(t) for t in tokens]
    lower = [w.lower() for w in words]
    n = len(words)
    out = []
    for i, (w, lw) in enumerate(zip(words, lower)):
        f = {
            "bias": 1.0,
            "word": lw,
            "prefix1": lw[:1],
            "prefix2": lw[:2],
            "prefix3": lw[:3],
            "suffix1": lw[-1:],
            "suffix2": lw[-2:],
            "suffix3": lw[-3:],
        }
        if w.istitle():
            f["is_title"] = 1.0
        if w.isupper():
            f["is_upper"] = 1.0
        if w.isdigit():
            f["is_digit"] = 1.0
        if "-" in w:
            f["has_hyphen"] = 1.0
        if i > 0:
            f["prev_word"] = lower[i - 1]
        else:
            f["BOS"] = 1.0
        if i < n - 1:
            f["next_word"] = lower[i + 1]
        else:
            f["EOS"] = 1.0
        out.append(f)
    return out


def vectorize_sequences(feature_dicts_per_sentence, vectorizer=None):
    """Turn per-token feature dicts into one sparse matrix per sentence.

    All tokens go through a single ``DictVectorizer`` call on the
    concatenation of the sentences; the result is then split by sentence
    offsets.

    Parameters
    ----------
    feature_dicts_per_sentence : sequence of sequences of dict
        For each sentence, one feature dict per token (e.g. from
        :func:`token_features`).
    vectorizer : sklearn.feature_extraction.DictVectorizer or None, default=None
        A fitted vectorizer is only applied (``transform``: features unseen
        when it was fitted are dropped), which is what test data needs. An
        unfitted one is fitted on these sentences. None fits a new
        ``DictVectorizer(dtype=np.float64)``.

    Returns
    -------
    X : list of scipy.sparse.csr_matrix, sentence i of shape (n_tokens_i, n_features)
        float64 features with sorted column indices.
    vectorizer : DictVectorizer
        The fitted vectorizer (``vectorizer.feature_names_`` names the
        columns).
    """
    if isinstance(feature_dicts_per_sentence, dict):
        raise TypeError("feature_dicts_per_sentence must be a sequence of sentences, got a dict")
    sentences = [list(s) for s in feature_dicts_per_sentence]
    for i, s in enumerate(sentences):
        if s and not isinstance(s[0], dict):
            raise TypeError(
                f"feature_dicts_per_sentence[{i}] must be a sequence of dicts, "
                f"got elements of type {type(s[0]).__name__}"
            )
    lengths = np.fromiter((len(s) for s in sentences), dtype=np.int64, count=len(sentences))
    flat = list(itertools.chain.from_iterable(sentences))
    if vectorizer is None:
        vectorizer = DictVectorizer(dtype=np.float64, sparse=True)
    if not isinstance(vectorizer, DictVectorizer):
        raise TypeError(f"vectorizer must be a DictVectorizer or None, got {type(vectorizer).__name__}")
    if hasattr(vectorizer, "vocabulary_"):
        if not flat:
            Xall = vectorizer.transform([{}])[:0]
        else:
            Xall = vectorizer.transform(flat)
    else:
        if not flat:
            raise ValueError("cannot fit a vectorizer on sentences without tokens")
        Xall = vectorizer.fit_transform(flat)
    Xall = Xall.tocsr().astype(np.float64, copy=False)
    Xall.sort_indices()
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    return split_csr_rows(Xall, offsets), vectorizer
