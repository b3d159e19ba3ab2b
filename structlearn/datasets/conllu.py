"""Reading CoNLL-U files (Universal Dependencies treebank format)."""

import gzip
import os
import re
import zlib

__all__ = ["read_conllu", "CONLLU_COLUMNS"]

#: The ten CoNLL-U fields, in file order.
CONLLU_COLUMNS = ("id", "form", "lemma", "upos", "xpos", "feats", "head", "deprel", "deps", "misc")
_DERIVED = {"upos+feats": (3, 5)}
_INDEX = {name: i for i, name in enumerate(CONLLU_COLUMNS)}
_GZIP_MAGIC = b"\x1f\x8b"
# token IDs: ASCII digits only (str.isdigit also takes "²" or "٣")
_WORD_ID = re.compile(r"[1-9][0-9]*", re.ASCII)
_RANGE_ID = re.compile(r"([1-9][0-9]*)-([1-9][0-9]*)", re.ASCII)
_EMPTY_ID = re.compile(r"(?:0|[1-9][0-9]*)\.[1-9][0-9]*", re.ASCII)


def _decode(raw, name):
    """UTF-8 text of ``raw`` (gzip-compressed when it starts with the gzip
    magic bytes or ``name`` ends in ``.gz``), without a byte-order mark.

    Damaged gzip data and bytes that are not UTF-8 raise ``ValueError``
    naming the file (and the line of the first bad byte)."""
    if raw[:2] == _GZIP_MAGIC or name.endswith(".gz"):
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as exc:  # BadGzipFile is an OSError
            raise ValueError(f"{name}: not a valid gzip file ({exc or type(exc).__name__})"
                             ) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise ValueError(f"{name}: line {line}: bytes that are not UTF-8 "
                         f"({raw[exc.start:exc.start + 4]!r})") from None
    return text[1:] if text.startswith("\ufeff") else text


def _read_text(path_or_file):
    """Whole content as str; gzip detected by its magic bytes (or a .gz suffix).

    Raises ``OSError`` when a path cannot be read, ``ValueError`` for damaged
    gzip data or bytes that are not UTF-8, ``TypeError`` for other objects."""
    if isinstance(path_or_file, (str, os.PathLike)):
        with open(path_or_file, "rb") as f:
            raw = f.read()
        return _decode(raw, os.fspath(path_or_file))
    if not hasattr(path_or_file, "read"):
        raise TypeError(
            "path_or_file must be a path or an open file, got " f"{type(path_or_file).__name__}"
        )
    name = str(getattr(path_or_file, "name", "<file>"))
    try:
        raw = path_or_file.read()
    except UnicodeDecodeError as exc:  # a text-mode file over bytes that are not UTF-8
        raise ValueError(f"{name}: bytes that are not UTF-8 ({exc.reason})") from None
    if isinstance(raw, str):
        return raw[1:] if raw.startswith("\ufeff") else raw
    if isinstance(raw, (bytes, bytearray)):
        return _decode(bytes(raw), name)
    raise TypeError(f"path_or_file.read() returned {type(raw).__name__}, expected str or bytes")


def token_id_kind(tok_id):
    """``"word"`` (1, 2, ...), ``"range"`` (a multiword token ``1-2``),
    ``"empty"`` (an empty node ``1.1``) or None for anything else (``0``,
    non-ASCII digits, malformed ranges)."""
    if _WORD_ID.fullmatch(tok_id):
        return "word"
    m = _RANGE_ID.fullmatch(tok_id)
    if m:
        return "range" if int(m.group(1)) < int(m.group(2)) else None
    if _EMPTY_ID.fullmatch(tok_id):
        return "empty"
    return None


def _column_getters(columns):
    if isinstance(columns, str):
        columns = (columns,)
    columns = tuple(columns)
    if not columns:
        raise ValueError("columns must name at least one column")
    valid = CONLLU_COLUMNS + tuple(_DERIVED)
    getters = []
    for name in columns:
        if name in _INDEX:
            getters.append(_INDEX[name])
        elif name in _DERIVED:
            getters.append(_DERIVED[name])
        else:
            raise ValueError(f"unknown column {name!r}; valid columns are {', '.join(valid)}")
    if len(set(columns)) != len(columns):
        raise ValueError(f"columns must not repeat a name, got {columns}")
    return columns, getters


def read_conllu(path_or_file, columns=("form", "upos")):
    """Read the sentences of a CoNLL-U file.

    Comment lines (``#``), multiword token ranges (IDs such as ``1-2``) and
    empty nodes (IDs such as ``1.1``) are skipped; sentences are separated
    by blank lines.

    Parameters
    ----------
    path_or_file : str, os.PathLike or file object
        A path to a plain or gzip-compressed file (gzip is recognised by its
        magic bytes, or a ``.gz`` suffix), or an open text or binary file
        (binary content may be gzip-compressed). Text is decoded as UTF-8.
    columns : sequence of str or str, default=("form", "upos")
        Columns to return, among ``id, form, lemma, upos, xpos, feats, head,
        deprel, deps, misc`` and the derived ``"upos+feats"`` (the UPOS and
        FEATS fields joined as ``"UPOS|FEATS"``, a morphological tag).

    Returns
    -------
    sentences : list of dict
        One dict per sentence mapping each requested column name to a list
        of str with one entry per (syntactic) token.

    Raises
    ------
    ValueError
        For an unknown column name, a token line that does not have 10
        tab-separated fields or has an invalid ID (the message gives the
        1-based line number), damaged gzip data, or bytes that are not
        UTF-8 (the message names the file and line). A leading UTF-8
        byte-order mark is skipped.
    """
    columns, getters = _column_getters(columns)
    text = _read_text(path_or_file)
    n_cols = len(columns)
    sentences = []
    current = [[] for _ in range(n_cols)]
    lineno = 0
    for lineno, line in enumerate(text.split("\n"), start=1):
        if line.endswith("\r"):
            line = line[:-1]
        if not line or line.isspace():
            if current[0]:
                sentences.append(dict(zip(columns, current)))
                current = [[] for _ in range(n_cols)]
            continue
        if line[0] == "#":
            continue
        fields = line.split("\t")
        if len(fields) != 10:
            raise ValueError(
                f"CoNLL-U line {lineno}: expected 10 tab-separated fields, got {len(fields)}: "
                f"{line[:80]!r}"
            )
        kind = token_id_kind(fields[0])
        if kind is None:
            raise ValueError(f"CoNLL-U line {lineno}: invalid token ID {fields[0]!r} (expected "
                             "1, 2, ..., a range such as 1-2 or an empty node such as 1.1)")
        if kind != "word":
            continue  # multiword token range or empty node
        for out, g in zip(current, getters):
            out.append(fields[g] if g.__class__ is int else fields[g[0]] + "|" + fields[g[1]])
    if current[0]:
        sentences.append(dict(zip(columns, current)))
    return sentences
