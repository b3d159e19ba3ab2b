"""Metrics for sequence labeling: per-token (flat) and per-entity scores.

Every function takes ``y_true`` and ``y_pred`` as lists of label sequences
(the format of :meth:`SequenceCRF.predict`), so each works as a
:class:`~sklearn.model_selection.GridSearchCV` scorer through
:func:`sklearn.metrics.make_scorer`, e.g.
``make_scorer(flat_f1_score, average="macro")`` or ``make_scorer(entity_f1_score)``.

Flat scores concatenate the sequences and call scikit-learn's metric with the
same keyword arguments (``average=``, ``labels=``, ``zero_division=`` ...).
Entity scores follow the CoNLL evaluation script (and seqeval's default
mode): a chunk starts at a ``B``/``S`` tag, at an ``I``/``E`` tag after
``O``/``E``/``S`` or after a different type, and ends where the next one
starts or at ``O``; an entity counts as found when its type, start and end
all match.
"""

import numpy as np
from sklearn import metrics as _skm

__all__ = [
    "entity_classification_report",
    "entity_f1_score",
    "entity_precision_score",
    "entity_recall_score",
    "flat_accuracy_score",
    "flat_classification_report",
    "flat_fbeta_score",
    "flat_f1_score",
    "flat_precision_score",
    "flat_recall_score",
    "get_entities",
    "sequence_accuracy_score",
]

_SCHEMES = ("BIO", "BIOES")


def _flatten(y_true, y_pred):
    """Concatenated label arrays; ``ValueError`` naming the first sequence
    whose lengths differ."""
    true, pred = list(y_true), list(y_pred)
    if len(true) != len(pred):
        raise ValueError(f"y_true has {len(true)} sequences but y_pred has {len(pred)}")
    for i, (t, p) in enumerate(zip(true, pred)):
        if len(t) != len(p):
            raise ValueError(f"sequence {i}: y_true has {len(t)} labels but y_pred has "
                             f"{len(p)}")
    if not true:
        raise ValueError("y_true is empty: no sequences to score")
    # empty sequences hold no tokens (and no dtype to agree with the others)
    return (np.concatenate([np.asarray(seq).ravel() for seq in true if len(seq)] or [[]]),
            np.concatenate([np.asarray(seq).ravel() for seq in pred if len(seq)] or [[]]))


def flat_accuracy_score(y_true, y_pred):
    """Fraction of tokens labeled right, over all sequences."""
    t, p = _flatten(y_true, y_pred)
    return float(np.mean(t == p)) if t.size else 0.0


def flat_precision_score(y_true, y_pred, **kwargs):
    """:func:`sklearn.metrics.precision_score` over all tokens."""
    return _skm.precision_score(*_flatten(y_true, y_pred), **kwargs)


def flat_recall_score(y_true, y_pred, **kwargs):
    """:func:`sklearn.metrics.recall_score` over all tokens."""
    return _skm.recall_score(*_flatten(y_true, y_pred), **kwargs)


def flat_f1_score(y_true, y_pred, **kwargs):
    """:func:`sklearn.metrics.f1_score` over all tokens (pass ``average=``
    for more than two labels, as scikit-learn asks)."""
    return _skm.f1_score(*_flatten(y_true, y_pred), **kwargs)


def flat_fbeta_score(y_true, y_pred, beta, **kwargs):
    """:func:`sklearn.metrics.fbeta_score` over all tokens."""
    return _skm.fbeta_score(*_flatten(y_true, y_pred), beta=beta, **kwargs)


def flat_classification_report(y_true, y_pred, **kwargs):
    """:func:`sklearn.metrics.classification_report` over all tokens."""
    return _skm.classification_report(*_flatten(y_true, y_pred), **kwargs)


def sequence_accuracy_score(y_true, y_pred):
    """Fraction of sequences whose every label is right (0 for no sequences,
    as sklearn-crfsuite)."""
    true, pred = list(y_true), list(y_pred)
    if not true and not pred:
        return 0.0
    _flatten(true, pred)
    return float(np.mean([list(t) == list(p) for t, p in zip(true, pred)]))


def _split_tag(tag, scheme):
    """``(prefix, type)`` of a tag such as ``B-PER``; ``("O", "")`` for O."""
    tag = str(tag)
    if tag == "O":
        return "O", ""
    prefix, sep, kind = tag.partition("-")
    if not sep or prefix not in scheme or prefix == "O":
        raise ValueError(f"tag {tag!r} is not in the {scheme} scheme "
                         f"(expected 'O' or one of {', '.join(p + '-TYPE' for p in scheme if p != 'O')})")
    return prefix, kind


def _check_scheme(scheme):
    if scheme not in _SCHEMES:
        raise ValueError(f"scheme must be one of {', '.join(_SCHEMES)}, got {scheme!r}")


def get_entities(sequence, scheme="BIO"):
    """Entities of one tag sequence.

    Parameters
    ----------
    sequence : sequence of str
        Tags such as ``"B-PER"``, ``"I-PER"``, ``"O"`` (BIOES adds ``E-``
        and ``S-``).
    scheme : {"BIO", "BIOES"}, default="BIO"

    Returns
    -------
    entities : list of tuple (type, start, end)
        ``end`` inclusive, in order of their start.
    """
    _check_scheme(scheme)
    entities = []
    prev_prefix, prev_kind, start = "O", "", None
    for i, tag in enumerate(list(sequence) + ["O"]):
        prefix, kind = _split_tag(tag, scheme)
        ends = start is not None and (
            prev_prefix in ("E", "S")
            or prefix in ("B", "S", "O")
            or kind != prev_kind)
        if ends:
            entities.append((prev_kind, start, i - 1))
            start = None
        starts = prefix in ("B", "S") or (prefix in ("I", "E") and (
            start is None or kind != prev_kind))
        if starts:
            start = i
        prev_prefix, prev_kind = prefix, kind
    return entities


def _entity_sets(y_true, y_pred, scheme):
    true, pred = list(y_true), list(y_pred)
    _flatten(true, pred)
    t = {(i,) + e for i, seq in enumerate(true) for e in get_entities(seq, scheme)}
    p = {(i,) + e for i, seq in enumerate(pred) for e in get_entities(seq, scheme)}
    return t, p


def _prf(n_true, n_pred, n_hit):
    precision = n_hit / n_pred if n_pred else 0.0
    recall = n_hit / n_true if n_true else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def entity_precision_score(y_true, y_pred, *, scheme="BIO"):
    """Fraction of predicted entities that are true (type, start and end)."""
    t, p = _entity_sets(y_true, y_pred, scheme)
    return _prf(len(t), len(p), len(t & p))[0]


def entity_recall_score(y_true, y_pred, *, scheme="BIO"):
    """Fraction of true entities that are predicted exactly."""
    t, p = _entity_sets(y_true, y_pred, scheme)
    return _prf(len(t), len(p), len(t & p))[1]


def entity_f1_score(y_true, y_pred, *, scheme="BIO"):
    """Micro-averaged entity F1 (the CoNLL shared tasks' score)."""
    t, p = _entity_sets(y_true, y_pred, scheme)
    return _prf(len(t), len(p), len(t & p))[2]


def entity_classification_report(y_true, y_pred, *, scheme="BIO", digits=3):
    """Per-type precision, recall, F1 and support, then the micro average.

    Returns
    -------
    report : str
    """
    t, p = _entity_sets(y_true, y_pred, scheme)
    kinds = sorted({e[1] for e in t | p})
    width = max([len(k) for k in kinds] + [len("micro avg")])
    lines = [f"{'':>{width}}  precision  recall  f1-score  support"]
    for kind in kinds + [None]:
        tk = t if kind is None else {e for e in t if e[1] == kind}
        pk = p if kind is None else {e for e in p if e[1] == kind}
        prec, rec, f1 = _prf(len(tk), len(pk), len(tk & pk))
        name = "micro avg" if kind is None else kind
        if kind is None:
            lines.append("")
        lines.append(f"{name:>{width}}  {prec:>9.{digits}f}  {rec:>6.{digits}f}  "
                     f"{f1:>8.{digits}f}  {len(tk):>7d}")
    return "\n".join(lines)
