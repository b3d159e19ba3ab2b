"""Reading CoNLL-U files (Universal Dependencies treebank format)."""

import gzip
import os

__all__ = ["read_conllu", "CONLLU_COLUMNS"]

#: The ten CoNLL-U fields, in file order.
CONLLU_COLUMNS = ("id", "form", "lemma", "upos", "xpos", "feats", "head", "deprel", "deps", "misc")
_DERIVED = {"upos+feats": (3, 5)}
_INDEX = {name: i for i, name in enumerate(CONLLU_COLUMNS)}
_GZIP_MAGIC = b"\x1f\x8b"


def _read_text(path_or_file):
    """Whole content as str; gzip detected by its magic bytes (or a .gz suffix)."""
    if isinstance(path_or_file, (str, os.PathLike)):
        with open(path_or_file, "rb") as f:
            raw = f.read()
        if raw[:2] == _GZIP_MAGIC or os.fspath(path_or_file).endswith(".gz"):
            raw = gzip.decompress(raw)
        return raw.decode("utf-8")
    if not hasattr(path_or_file, "read"):
        raise TypeError(
            "path_or_file must be a path or an open file, got " f"{type(path_or_file).__name__}"
        )
    raw = path_or_file.read()
    if isinstance(raw, str):
        return raw
    if isinstance(raw, (bytes, bytearray)):
        raw = bytes(raw)
        if raw[:2] == _GZIP_MAGIC:
            raw = gzip.decompress(raw)
        return raw.decode("utf-8")
    raise TypeError(f"path_or_file.read() returned {type(raw).__name__}, expected str or bytes")


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
        For an unknown column name, or a token line that does not have 10
        tab-separated fields or has an invalid ID (the message gives the
        1-based line number).
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
        tok_id = fields[0]
        if not tok_id.isdigit():
            if "-" in tok_id or "." in tok_id:
                continue  # multiword token range or empty node
            raise ValueError(f"CoNLL-U line {lineno}: invalid token ID {tok_id!r}")
        for out, g in zip(current, getters):
            out.append(fields[g] if g.__class__ is int else fields[g[0]] + "|" + fields[g[1]])
    if current[0]:
        sentences.append(dict(zip(columns, current)))
    return sentences
