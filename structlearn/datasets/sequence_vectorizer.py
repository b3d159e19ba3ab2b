"""Per-token feature dicts (the input of CRFsuite) to per-sentence sparse matrices."""

import itertools
import numbers
from numbers import Integral

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.feature_extraction import FeatureHasher
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted

from ._sparse import csr_around, split_csr_rows

__all__ = ["SequenceVectorizer", "columns_in", "is_dict_sequences", "merged_vocabulary",
           "remap_columns", "vocabulary_part"]


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
        Column names (vocabulary mode only; rebuilt from the vocabulary on
        each access).
    n_features_out_ : int

    Examples
    --------
    >>> from structlearn.datasets import SequenceVectorizer
    >>> X = [[{"w": "the"}, {"w": "cat", "len": 3.0}]]
    >>> [m.shape for m in SequenceVectorizer().fit_transform(X)]
    [(2, 3)]
    """

    _parameter_constraints = {
        "min_freq": [Interval(Integral, 1, None, closed="left")],
        "n_features": [Interval(Integral, 1, None, closed="left"), None],
    }

    def __init__(self, *, min_freq=1, n_features=None):
        self.min_freq = min_freq
        self.n_features = n_features

    def fit(self, X, y=None):
        """Build the vocabulary of the training sentences.

        Returns
        -------
        self : SequenceVectorizer
        """
        self._fit_encode(X)
        return self

    def fit_transform(self, X, y=None):
        """:meth:`fit` then :meth:`transform`, in one pass over the dicts.

        Returns
        -------
        Xt : list of csr_matrix, each of shape (n_tokens_i, n_features_out_)
        """
        return split_csr_rows(*self.fit_transform_stacked(X))

    def fit_transform_stacked(self, X):
        """:meth:`fit`, then the training sentences as :meth:`transform_stacked`
        gives them (one pass over the dicts)."""
        Xall, offsets = self._fit_encode(X)
        if Xall is None:  # hashing: nothing learned, transform does it all
            return self.transform_stacked(X)
        return Xall, offsets

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
        Xall, offsets = self.transform_stacked(X)
        return split_csr_rows(Xall, offsets)

    def transform_stacked(self, X):
        """All sentences as one canonical CSR matrix (n_tokens,
        n_features_out_; int64 indices), with the sentence boundaries
        ``offsets`` (int64, (n_sentences + 1,)); what :meth:`transform`
        splits."""
        check_is_fitted(self, "n_features_out_")
        if self.n_features is None:
            return _encode(X, self._columns, self.n_features_out_, grow=False)[:2]
        sentences, flat = _validated(X)
        lengths = np.fromiter((len(s) for s in sentences), dtype=np.int64,
                              count=len(sentences))
        hasher = FeatureHasher(int(self.n_features), input_type="dict",
                               alternate_sign=False, dtype=np.float64)
        Xall = hasher.transform(flat) if flat else hasher.transform([{}])[:0]
        Xall = Xall.tocsr().astype(np.float64, copy=False)
        Xall.sum_duplicates()
        Xall.eliminate_zeros()
        Xall.indices = Xall.indices.astype(np.int64, copy=False)
        Xall.indptr = Xall.indptr.astype(np.int64, copy=False)
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        _check_finite(Xall, offsets)
        return Xall, offsets

    def _fit_encode(self, X):
        """Fit; returns the training sentences encoded (CSR, offsets), or
        ``(None, None)`` under hashing."""
        self._check_params()
        if self.n_features is not None:
            _, flat = _validated(X)
            if not flat:
                raise ValueError("X holds no tokens: cannot build a vocabulary")
            self.n_features_out_ = int(self.n_features)
            return None, None
        columns = _Columns()
        Xall, offsets, names = _encode(X, columns, None, grow=True)
        if Xall.shape[0] == 0 or not names:
            raise ValueError("X holds no tokens: cannot build a vocabulary")
        counts = (np.bincount(Xall.indices, minlength=len(names)) if self.min_freq > 1
                  else None)
        column = self._set_vocabulary(columns, names, counts)
        del names  # the names are rebuilt from the maps when asked for
        return _remap_columns(Xall, column, self.n_features_out_), offsets

    def _set_vocabulary(self, columns, names, counts):
        """Keep the vocabulary of ``columns`` (a :class:`_Columns` whose
        column ``c`` is named ``names[c]`` and occurs in ``counts[c]``
        tokens; ``counts`` may be None when ``min_freq`` is 1), renumbered
        in sorted name order (as DictVectorizer) without the features of
        fewer than ``min_freq`` tokens; returns the renumbering (int64
        (len(names),), -1 for a dropped column)."""
        keep = np.ones(len(names), dtype=bool)
        if self.min_freq > 1:
            keep = counts >= self.min_freq
            if not keep.any():
                raise ValueError(f"no feature occurs in min_freq={self.min_freq} tokens")
        kept = np.flatnonzero(keep)
        order = kept[np.argsort(np.array(names, dtype=object)[kept], kind="stable")]
        column = np.full(len(names), -1, dtype=np.int64)
        column[order] = np.arange(order.shape[0])
        columns.renumber(column)
        self._columns = columns
        self.n_features_out_ = int(order.shape[0])
        return column

    @property
    def feature_names_(self):
        """Column names (vocabulary mode only), built from the vocabulary on
        each access (not kept: as many strings as features)."""
        columns = getattr(self, "_columns", None)
        if columns is None or self.n_features is not None:
            raise AttributeError("feature_names_ exists after fit in vocabulary mode "
                                 "(n_features=None)")
        names = [""] * self.n_features_out_
        for key, col in columns.numeric.items():
            names[col] = key
        for key, sub in columns.indicator.items():
            for value, col in sub.items():
                names[col] = key + "=" + value
        return names

    def get_feature_names_out(self, input_features=None):
        """Column names (vocabulary mode) as an array of str."""
        check_is_fitted(self, "n_features_out_")
        if self.n_features is not None:
            return np.array([f"hash{i}" for i in range(self.n_features_out_)], dtype=object)
        return np.array(self.feature_names_, dtype=object)

    def _check_params(self):
        self._validate_params()  # _parameter_constraints
        if self.n_features is not None and self.min_freq != 1:
            raise ValueError("min_freq needs a vocabulary: use it with n_features=None")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.dict = True
        tags.requires_fit = True
        return tags


def vocabulary_part(X):
    """The vocabulary of sentences ``X`` before it is sorted and cut by
    ``min_freq``, for :func:`merged_vocabulary` (e.g. one part of data held
    elsewhere): ``(names, counts, numeric, indicator)``, the feature names
    by column, the tokens each occurs in (int64), and the feature -> column
    maps of numeric and indicator features (as in :class:`_Columns`).  Also
    the sentences encoded: ``(Xall, offsets)`` (errors as in
    :meth:`SequenceVectorizer.transform`)."""
    columns = _Columns()
    Xall, offsets, names = _encode(X, columns, None, grow=True)
    counts = np.bincount(Xall.indices, minlength=len(names)).astype(np.int64)
    return (names, counts, columns.numeric, columns.indicator), (Xall, offsets)


def merged_vocabulary(parts, min_freq=1):
    """A :class:`SequenceVectorizer` fitted on several parts of the training
    sentences at once, from their :func:`vocabulary_part` summaries (an
    iterable, read one at a time): the vocabulary one ``fit`` on all the
    sentences would build (the same columns; ``min_freq`` over the summed
    counts).

    Returns
    -------
    vectorizer : SequenceVectorizer
    columns : list of ndarray of int64
        Per part, the column of each of its features (by its own column
        numbers) in ``vectorizer``'s vocabulary, -1 where ``min_freq``
        dropped it (see :func:`remap_columns`).

    Raises
    ------
    ValueError
        No parts or no features, or none in ``min_freq`` tokens.
    """
    vectorizer = SequenceVectorizer(min_freq=min_freq)
    vectorizer._check_params()
    columns = _Columns()
    column_of = {}  # name -> merged column, in order of first appearance
    counts = np.zeros(0, dtype=np.int64)
    part_columns = []
    for names, part_counts, numeric, indicator in parts:
        merged = np.fromiter((column_of.setdefault(name, len(column_of)) for name in names),
                             dtype=np.int64, count=len(names))
        if len(column_of) > counts.shape[0]:
            counts = np.concatenate([counts, np.zeros(len(column_of) - counts.shape[0],
                                                      dtype=np.int64)])
        np.add.at(counts, merged, part_counts)
        part_columns.append(merged)
        for key, c in numeric.items():
            columns.numeric[key] = int(merged[c])
        for key, sub in indicator.items():
            into = columns.indicator.setdefault(key, {})
            for value, c in sub.items():
                into[value] = int(merged[c])
    if not column_of:
        raise ValueError("X holds no tokens: cannot build a vocabulary")
    column = vectorizer._set_vocabulary(columns, list(column_of), counts)
    return vectorizer, [column[merged] for merged in part_columns]


def columns_in(vectorizer, part):
    """The column of each feature of a :func:`vocabulary_part` summary in a
    fitted ``vectorizer``'s vocabulary (int64, -1 for a feature it lacks):
    what :func:`merged_vocabulary` gives when the vocabulary is already
    fixed (a warm start)."""
    named = vectorizer._columns.named
    cols = (named(name) for name in part[0])
    return np.fromiter((-1 if c is None else c for c in cols), dtype=np.int64,
                       count=len(part[0]))


def remap_columns(Xall, column, n_columns):
    """``Xall`` (CSR) with column ``c`` moved to ``column[c]`` (dropped where
    -1): canonical CSR (n_tokens, n_columns) with int64 indices; the index
    array is renumbered in place when nothing is dropped."""
    return _remap_columns(Xall, np.asarray(column, dtype=np.int64), int(n_columns))


def _validated(X):
    """``(sentences, all token dicts)``; errors name the sentence and token;
    ``bytes`` values come back decoded (in copies of their tokens' dicts)."""
    sentences = [_sentence_list(i, s) for i, s in enumerate(_sentences_of(X))]
    for i, s in enumerate(sentences):
        copied = False
        for j, token in enumerate(s):
            if not isinstance(token, dict):
                _token_error(i, j, token)
            decoded = None
            for key, value in token.items():
                if isinstance(value, bytes) and isinstance(key, str):
                    decoded = dict(token) if decoded is None else decoded
                    decoded[key] = _decoded(i, j, key, value)
                elif not isinstance(key, str) or not isinstance(value, (str, numbers.Real)):
                    _token_error(i, j, token, key, value)
            if decoded is not None:
                if not copied:  # never write into the caller's sentences
                    s = sentences[i] = list(s)
                    copied = True
                s[j] = decoded
    return sentences, list(itertools.chain.from_iterable(sentences))


def _decoded(i, j, key, value):
    """A ``bytes`` feature value as text (UTF-8, as CRFsuite reads it)."""
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"X[{i}][{j}][{key!r}] is bytes that are not UTF-8: {exc}") from None


def _sentences_of(X):
    if isinstance(X, (dict, str)) or not hasattr(X, "__iter__"):
        raise TypeError("X must be a list of sentences, each a list of per-token feature "
                        f"dicts; got {type(X).__name__}")
    return X


def _sentence_list(i, sentence):
    """Sentence ``X[i]`` as a list, or a TypeError."""
    if isinstance(sentence, tuple):
        return list(sentence)
    if not isinstance(sentence, list):
        raise TypeError(f"X[{i}] must be a list of per-token feature dicts, got "
                        f"{type(sentence).__name__}")
    return sentence


def _token_error(i, j, token, key=None, value=None):
    """Raise the TypeError for token ``X[i][j]``: not a dict, a feature name
    that is not a string, or a value that is neither a number nor a string."""
    if not isinstance(token, dict):
        raise TypeError(f"X[{i}][{j}] must be a dict of features, got {type(token).__name__}")
    if not isinstance(key, str):
        raise TypeError(f"X[{i}][{j}] has a feature name that is not a string: {key!r}")
    raise TypeError(f"X[{i}][{j}][{key!r}] must be a number or a string, "
                    f"got {type(value).__name__}")


def _check_finite(Xall, offsets):
    bad = np.flatnonzero(~np.isfinite(Xall.data))
    if bad.size:
        row = int(np.searchsorted(Xall.indptr, bad[0], side="right") - 1)
        s = int(np.searchsorted(offsets, row, side="right") - 1)
        raise ValueError(f"X[{s}][{row - offsets[s]}] has a NaN or infinite value")


class _Columns:
    """Feature -> column maps of a vocabulary, looked up without building a
    string per token: ``numeric[key]`` for numeric features,
    ``indicator[key][value]`` for the indicator ``"key=value"``."""

    def __init__(self):
        self.numeric = {}
        self.indicator = {}

    def renumber(self, column):
        """Move column ``c`` to ``column[c]`` (dropped where -1), in place."""
        for sub in (self.numeric, *self.indicator.values()):
            dropped = []
            for k, c in sub.items():
                if column[c] >= 0:
                    sub[k] = int(column[c])  # an existing key: no resize
                else:
                    dropped.append(k)
            for k in dropped:
                del sub[k]
        for key in [k for k, sub in self.indicator.items() if not sub]:
            del self.indicator[key]

    def named(self, key, value=None):
        """Column of the feature named like ``key`` (numeric) or
        ``key=value`` (indicator) under either spelling, or None."""
        name = key if value is None else key + "=" + value
        col = self.numeric.get(name)
        if col is not None:
            return col
        at = name.find("=")
        while at >= 0:
            sub = self.indicator.get(name[:at])
            if sub is not None and name[at + 1:] in sub:
                return sub[name[at + 1:]]
            at = name.find("=", at + 1)
        return None


def _encode(X, columns, n_columns, *, grow):
    """Encode sentences of feature dicts in one pass.

    A string value ``v`` of key ``k`` is the feature ``"k=v"`` with value 1;
    a number is the value of feature ``k``; zero values are not stored.
    Features absent from ``columns`` (a :class:`_Columns`) are skipped, or,
    with ``grow``, added to it in order of first appearance (a numeric key
    and an indicator with the same name share their column, as in
    :class:`~sklearn.feature_extraction.DictVectorizer`).

    Returns
    -------
    Xall : csr_matrix (n_tokens, n_columns or the number of names)
        Canonical (sorted indices, duplicates summed).
    offsets : int64 (n_sentences + 1,)
    names : list of str
        The vocabulary's names by column (with ``grow``), else None.
    """
    sentences = [_sentence_list(i, s) for i, s in enumerate(_sentences_of(X))]
    lengths = np.fromiter(map(len, sentences), dtype=np.int64, count=len(sentences))
    # buffers sized once for every stored entry (a token stores at most one
    # per key): no growing copies for the allocator to keep
    bound = sum(len(t) for s in sentences for t in s if type(t) is dict or isinstance(t, dict))
    indices = np.empty(bound, dtype=np.int64)
    data = np.empty(bound, dtype=np.float64)
    indptr = np.empty(int(lengths.sum()) + 1, dtype=np.int64)
    names = [] if grow else None
    numeric, indicator = columns.numeric, columns.indicator
    q = 0
    row = 0
    indptr[0] = 0
    for i, sentence in enumerate(sentences):
        for j, token in enumerate(sentence):
            if type(token) is not dict and not isinstance(token, dict):
                _token_error(i, j, token)
            for key, value in token.items():
                if type(key) is not str and not isinstance(key, str):
                    _token_error(i, j, token, key, value)
                kind = type(value)
                if kind is bytes:  # CRFsuite's attribute strings are bytes: UTF-8
                    value, kind = _decoded(i, j, key, value), str
                if kind is str or (kind is not float and kind is not int and kind is not bool
                                   and isinstance(value, str)):
                    sub = indicator.get(key)
                    col = None if sub is None else sub.get(value)
                    if col is None:
                        if not grow:
                            continue
                        if sub is None:
                            sub = indicator[key] = {}
                        col = sub[value] = _new_column(columns, names, key, value)
                    value = 1.0
                elif (kind is float or kind is int or kind is bool
                      or isinstance(value, numbers.Real)):  # bools count as 1 / 0
                    if not value:
                        continue
                    col = numeric.get(key)
                    if col is None:
                        if not grow:
                            continue
                        col = numeric[key] = _new_column(columns, names, key)
                else:
                    _token_error(i, j, token, key, value)
                indices[q] = col
                data[q] = value
                q += 1
            row += 1
            indptr[row] = q
    offsets = np.zeros(len(sentences) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if q < 0.9 * bound:  # many unseen features or zeros: do not keep the slack
        indices, data = indices[:q].copy(), data[:q].copy()
    shape = (int(offsets[-1]), len(names) if grow else n_columns)
    Xall = _csr((data[:q], indices[:q], indptr), shape)
    _check_finite(Xall, offsets)
    return Xall, offsets, names


def _new_column(columns, names, key, value=None):
    """Column of a feature first seen: that of the same name spelled the
    other way (a numeric ``"a=b"`` and the indicator ``a="b"``) if it has
    one, else a new one."""
    col = columns.named(key, value)
    if col is None:
        col = len(names)
        names.append(key if value is None else key + "=" + value)
    return col


def _csr(arrays, shape):
    """Canonical CSR matrix (sorted indices, duplicates summed) with int64
    index arrays, built around ``arrays = (data, indices, indptr)``."""
    X = csr_around(*arrays, shape, canonical=False)
    X.sum_duplicates()
    X.indices = X.indices.astype(np.int64, copy=False)
    X.indptr = X.indptr.astype(np.int64, copy=False)
    return X


_REMAP_SLICE = 2**16


def _remap_columns(Xall, column, n_columns):
    """``Xall`` with column ``c`` moved to ``column[c]`` (dropped where -1),
    canonical CSR with int64 indices."""
    if column.min(initial=0) >= 0:  # nothing dropped: renumber in place, in slices
        idx = Xall.indices
        for lo in range(0, idx.shape[0], _REMAP_SLICE):
            idx[lo:lo + _REMAP_SLICE] = column[idx[lo:lo + _REMAP_SLICE]]
        return _csr((Xall.data, idx, Xall.indptr), (Xall.shape[0], n_columns))
    new = column[Xall.indices]
    keep = new >= 0
    kept_before = np.concatenate([[0], np.cumsum(keep)])
    return _csr((Xall.data[keep], new[keep], kept_before[Xall.indptr]),
                (Xall.shape[0], n_columns))
