"""Per-token feature dicts (the input of CRFsuite) to per-sentence sparse matrices."""

import itertools
import numbers

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.feature_extraction import DictVectorizer, FeatureHasher
from sklearn.utils.validation import check_is_fitted

from ._sparse import split_csr_rows

__all__ = ["SequenceVectorizer", "is_dict_sequences"]


def is_dict_sequences(X):
    """Whether ``X`` looks like a list of sentences of per-token feature dicts
    (judged from its first non-empty sentence)."""
    if isinstance(X, (dict, str)) or not hasattr(X, "__iter__") or hasattr(X, "shape"):
        return False
    for sentence in X:
        if isinstance(sentence, (list, tuple)) and sentence:
            return isinstance(sentence[0], dict)
        if not isinstance(sentence, (list, tuple)):
            return False
    return False


class SequenceVectorizer(TransformerMixin, BaseEstimator):
    """Sentences of per-token feature dicts to one CSR matrix per sentence.

    The input format of CRFsuite / sklearn-crfsuite: ``X`` is a list of
    sentences, a sentence a list of dicts, one per token, with string keys.
    A numeric (or bool) value is the feature's weight; a string value ``v`` of key
    ``k`` is the indicator feature ``"k=v"`` with weight 1 (as CRFsuite and
    :class:`~sklearn.feature_extraction.DictVectorizer` do).  The vocabulary
    is built in ``fit``; features unseen then are ignored by ``transform``.

    Parameters
    ----------
    min_freq : int, default=1
        Keep only the features that occur in at least this many tokens of the
        training sentences (CRFsuite's ``feature.minfreq``).
    n_features : int or None, default=None
        ``None``: a vocabulary of the features seen in ``fit``.  An integer:
        feature hashing into this many columns (no vocabulary kept, no
        ``min_freq``; collisions add up).

    Attributes
    ----------
    feature_names_ : list of str
        Column names (vocabulary mode only).
    n_features_out_ : int

    Examples
    --------
    >>> from structlearn.datasets import SequenceVectorizer
    >>> X = [[{"w": "the"}, {"w": "cat", "len": 3.0}]]
    >>> [m.shape for m in SequenceVectorizer().fit_transform(X)]
    [(2, 3)]
    """

    def __init__(self, *, min_freq=1, n_features=None):
        self.min_freq = min_freq
        self.n_features = n_features

    def fit(self, X, y=None):
        """Build the vocabulary of the training sentences.

        Returns
        -------
        self : SequenceVectorizer
        """
        self._check_params()
        sentences, flat = _validated(X)
        if not flat:
            raise ValueError("X holds no tokens: cannot build a vocabulary")
        if self.n_features is not None:
            self.n_features_out_ = int(self.n_features)
            return self
        vec = DictVectorizer(dtype=np.float64, sparse=True)
        counts = vec.fit_transform(flat).tocsc()
        if self.min_freq > 1:
            support = np.diff(counts.indptr) >= self.min_freq
            if not support.any():
                raise ValueError(f"no feature occurs in min_freq={self.min_freq} tokens")
            vec.restrict(support)
        self._vectorizer = vec
        self.feature_names_ = list(vec.feature_names_)
        self.n_features_out_ = len(self.feature_names_)
        return self

    def transform(self, X):
        """One CSR matrix per sentence, shape (n_tokens_i, n_features_out_).

        Raises
        ------
        TypeError
            For a sentence that is not a list of dicts, or a key that is not
            a string.
        ValueError
            For NaN or infinite values (naming the sentence and token).
        """
        check_is_fitted(self, "n_features_out_")
        sentences, flat = _validated(X)
        lengths = np.fromiter((len(s) for s in sentences), dtype=np.int64,
                              count=len(sentences))
        if self.n_features is not None:
            hasher = FeatureHasher(int(self.n_features), input_type="dict",
                                   alternate_sign=False, dtype=np.float64)
            Xall = hasher.transform(flat) if flat else hasher.transform([{}])[:0]
        else:
            vec = self._vectorizer
            Xall = vec.transform(flat) if flat else vec.transform([{}])[:0]
        Xall = Xall.tocsr().astype(np.float64, copy=False)
        Xall.sort_indices()
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        bad = np.flatnonzero(~np.isfinite(Xall.data))
        if bad.size:
            row = int(np.searchsorted(Xall.indptr, bad[0], side="right") - 1)
            s = int(np.searchsorted(offsets, row, side="right") - 1)
            raise ValueError(f"X[{s}][{row - offsets[s]}] has a NaN or infinite value")
        return split_csr_rows(Xall, offsets)

    def get_feature_names_out(self, input_features=None):
        """Column names (vocabulary mode) as an array of str."""
        check_is_fitted(self, "n_features_out_")
        if self.n_features is not None:
            return np.array([f"hash{i}" for i in range(self.n_features_out_)], dtype=object)
        return np.array(self.feature_names_, dtype=object)

    def _check_params(self):
        for name, value, allow_none in (("min_freq", self.min_freq, False),
                                        ("n_features", self.n_features, True)):
            if value is None and allow_none:
                continue
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        if self.n_features is not None and self.min_freq != 1:
            raise ValueError("min_freq needs a vocabulary: use it with n_features=None")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.dict = True
        tags.requires_fit = True
        return tags


def _validated(X):
    """``(sentences, all token dicts)``; errors name the sentence and token."""
    if isinstance(X, (dict, str)) or not hasattr(X, "__iter__"):
        raise TypeError("X must be a list of sentences, each a list of per-token feature "
                        f"dicts; got {type(X).__name__}")
    sentences = [s if isinstance(s, list) else list(s) if isinstance(s, tuple) else s
                 for s in X]
    for i, s in enumerate(sentences):
        if not isinstance(s, list):
            raise TypeError(f"X[{i}] must be a list of per-token feature dicts, got "
                            f"{type(s).__name__}")
        for j, token in enumerate(s):
            if not isinstance(token, dict):
                raise TypeError(f"X[{i}][{j}] must be a dict of features, got "
                                f"{type(token).__name__}")
            for key, value in token.items():
                if not isinstance(key, str):
                    raise TypeError(f"X[{i}][{j}] has a feature name that is not a string: "
                                    f"{key!r}")
                if not isinstance(value, (str, numbers.Real)):  # bools count as 1 / 0
                    raise TypeError(f"X[{i}][{j}][{key!r}] must be a number or a string, "
                                    f"got {type(value).__name__}")
    return sentences, list(itertools.chain.from_iterable(sentences))
