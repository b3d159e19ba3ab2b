"""Reading and writing factor graphs, evidence and MAP solutions in the UAI formats.

A UAI network file (the format of the UAI inference competitions) holds,
whitespace separated::

    MARKOV                      (or BAYES)
    n_vars
    card_0 card_1 ... card_{n_vars-1}
    n_factors
    order_f v_1 ... v_order     (one scope per factor)
    ...
    size_f phi_1 ... phi_size   (one table per factor, in the same order)
    ...

Tables are in C order over the scope (the last variable changes fastest),
the layout :class:`~structlearn.graphs.FactorGraph` uses. Potentials are
non-negative and become scores ``theta = log(phi)``; ``phi = 0`` gives
``-inf`` (a forbidden configuration).

* In a ``BAYES`` file each factor is a conditional probability table whose
  scope lists the parents first and the child last; it is read exactly like
  a ``MARKOV`` factor (``theta = log p``), so scores are log-likelihoods.
* Single-variable factors are summed into the graph's ``unary`` scores;
  factors of order >= 2 go to the table pool, and identical tables (equal
  bit for bit) share one pool entry. Factors of order 0 (constants) are
  added to every state of variable 0, which keeps scores exact.

Parsing is vectorized: the numbers of the file are read in one call, one
compiled loop finds the count-prefixed scopes and tables, and everything
else is array arithmetic. Paths ending in ``.gz`` are read and written
through :mod:`gzip`; open text or binary file objects are accepted too.
Malformed files raise ``ValueError`` with the file name, what is wrong and
the line (and factor) where it was found.
"""

from __future__ import annotations

import gzip
import itertools
import os
import re
import warnings
from collections.abc import Mapping

import numpy as np

from .factor_graph import FactorGraph

__all__ = [
    "read_uai",
    "read_uai_evidence",
    "read_uai_solution",
    "write_uai",
    "write_uai_solution",
    "write_uai_solutions",
    "read_uai_solutions",
]

NETWORK_TYPES = ("MARKOV", "BAYES")
# exp() maps [_LOG_TINY, _LOG_MAX] onto the positive normal float64 numbers
_LOG_MAX = float(np.log(np.finfo(np.float64).max))
_LOG_TINY = float(np.log(np.finfo(np.float64).tiny))
_SOLUTION_MARKERS = ("MAP", "-BEGIN-")
_NUMBER = re.compile(
    r"[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf(?:inity)?|nan)", re.IGNORECASE
)


# --------------------------------------------------------------------- text i/o
def _read_text(path):
    """Whole text of a path (``.gz`` decompressed) or file object, and a name for messages."""
    if hasattr(path, "read"):
        data = path.read()
        if isinstance(data, bytes):
            data = data.decode("latin-1")
        return data, str(getattr(path, "name", "<file object>"))
    name = os.fspath(path)
    if isinstance(name, bytes):
        name = os.fsdecode(name)
    opener = gzip.open if name.endswith(".gz") else open
    with opener(name, "rt", encoding="latin-1") as fh:
        return fh.read(), os.path.basename(name)


def _write_text(text, path):
    if hasattr(path, "write"):
        path.write(text)
        return
    name = os.fspath(path)
    if isinstance(name, bytes):
        name = os.fsdecode(name)
    opener = gzip.open if name.endswith(".gz") else open
    with opener(name, "wt", encoding="ascii") as fh:
        fh.write(text)


class _Numbers:
    """The numbers that follow character ``offset`` of ``text``, with error locations."""

    def __init__(self, text, offset, source):
        self.text = text
        self.offset = offset
        self.source = source
        self.values = self._parse()

    def _parse(self):
        body = self.text[self.offset :]
        if not body.strip():  # fromstring returns [-1.] for blank input
            return np.zeros(0)
        try:
            with warnings.catch_warnings():
                # older numpy warns on unparsable text and returns a prefix;
                # newer numpy raises ValueError
                warnings.simplefilter("error", DeprecationWarning)
                return np.fromstring(body, dtype=np.float64, sep=" ")
        except (ValueError, DeprecationWarning):
            pass
        # error path: find the offending token
        for match in re.finditer(r"\S+", body):
            if not _NUMBER.fullmatch(match.group()):
                raise ValueError(
                    f"{self.source}: non-numeric token {match.group()[:40]!r} at "
                    f"{self._location(self.offset + match.start())}"
                )
        raise ValueError(f"{self.source}: the numbers of the file could not be read")

    def _location(self, pos):
        line_start = self.text.rfind("\n", 0, pos) + 1
        return f"line {self.text.count(chr(10), 0, pos) + 1}, column {pos - line_start + 1}"

    def where(self, k):
        """'line L, column C' of number ``k`` (or 'the end of the file')."""
        if k >= self.values.shape[0]:
            return "the end of the file"
        match = next(itertools.islice(re.finditer(r"\S+", self.text[self.offset :]), k, None))
        return self._location(self.offset + match.start())

    def error(self, message, k=None):
        where = f" ({self.where(k)})" if k is not None else ""
        return ValueError(f"{self.source}: {message}{where}")


def _fmt(x):
    """A number for messages: integral values without a decimal point."""
    x = float(x)
    return str(int(x)) if x.is_integer() and abs(x) < 2**63 else repr(x)


def _ranges(starts, lengths):
    """Concatenation of ``arange(starts[i], starts[i] + lengths[i])``."""
    lengths = np.asarray(lengths, dtype=np.int64)
    ends = np.cumsum(lengths)
    total = int(ends[-1]) if lengths.size else 0
    return np.arange(total, dtype=np.int64) + np.repeat(
        np.asarray(starts, dtype=np.int64) - (ends - lengths), lengths
    )


_MAX_COUNT = 2.0**53  # counts, ids and labels above are not exact in float64
_NOT_COUNT = "is not a non-negative integer of at most 2**53"


def _is_count(x):
    """Elementwise: x is a non-negative integer value of at most 2**53 (so
    that it casts to int64 exactly)."""
    return (x >= 0) & (x == np.floor(x)) & (x <= _MAX_COUNT)


# ------------------------------------------------------------- table dedupe
def _mix64(x):
    """splitmix64 finalizer, elementwise on uint64 (wrapping arithmetic)."""
    x = x + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def _share_tables(data, offsets):
    """Group identical tables (bit for bit).

    Parameters
    ----------
    data : ndarray of float64, shape (offsets[-1],)
        Tables of the factors, concatenated.
    offsets : ndarray of int64, shape (n_factors + 1,)

    Returns
    -------
    table_ids : ndarray of int64, shape (n_factors,)
        Pool table of each factor, numbered by first occurrence.
    keep : ndarray of bool, shape (n_factors,)
        Factors whose table is the first copy (these make up the pool, in order).
    """
    n = offsets.shape[0] - 1
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=bool)
    sizes = np.diff(offsets)
    bits = np.ascontiguousarray(data).view(np.uint64)
    owner = np.repeat(np.arange(n), sizes)
    pos = np.arange(bits.shape[0], dtype=np.int64) - offsets[owner]
    # order-sensitive hash per table: sum of bits * odd key(position), plus the size
    mixed = bits * (_mix64(pos.astype(np.uint64)) | np.uint64(1))
    h = np.add.reduceat(mixed, offsets[:-1]) ^ _mix64(sizes.astype(np.uint64))
    _, first, inverse = np.unique(h, return_index=True, return_inverse=True)
    rep = first[inverse.ravel()]
    # verify candidates entry by entry (hash collisions only lose sharing)
    same = sizes == sizes[rep]
    cmp = np.where(same[owner], offsets[rep][owner] + pos, np.arange(bits.shape[0]))
    equal = bits == bits[cmp]
    all_equal = np.logical_and.reduceat(equal, offsets[:-1])
    rep = np.where(same & all_equal, rep, np.arange(n))
    keep = rep == np.arange(n)
    number = np.cumsum(keep) - 1
    return number[rep].astype(np.int64), keep


# ------------------------------------------------------------------ reading
def _parse_network(text, source):
    """Parse a UAI network file into a FactorGraph (no evidence)."""
    head = re.match(r"\s*(\S+)", text)
    if head is None:
        raise ValueError(f"{source}: empty file (expected MARKOV or BAYES)")
    kind = head.group(1)
    if kind.upper() not in NETWORK_TYPES:
        raise ValueError(
            f"{source}: unknown network type {kind[:40]!r} (line 1); expected "
            f"{' or '.join(NETWORK_TYPES)}"
        )
    nums = _Numbers(text, head.end(), source)
    cards, n_factors = _parse_header(nums)
    orders, indptr, svars, table_start = _parse_scopes(nums, cards, n_factors)
    need, size_error = _table_sizes(nums, cards, orders, indptr, svars)
    table_offsets, phi = _parse_tables(nums, table_start, need, size_error)
    return _assemble(cards, orders, indptr, svars, need, table_offsets, phi)


def _parse_header(nums):
    """Cardinalities (int64, shape (n_vars,)) and the number of factors."""
    vals = nums.values
    n_vals = vals.shape[0]
    if n_vals < 1:
        raise nums.error("file ends before the number of variables")
    if not _is_count(vals[0]):
        raise nums.error(f"number of variables {_fmt(vals[0])} {_NOT_COUNT}", 0)
    n_vars = int(vals[0])
    if n_vals < n_vars + 2:
        raise nums.error(
            f"file ends inside the header: expected {n_vars} cardinalities and the number "
            "of factors"
        )
    cards = vals[1 : n_vars + 1]
    bad = ~(_is_count(cards) & (cards >= 1))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise nums.error(
            f"cardinality of variable {i} is {_fmt(cards[i])}; it must be a positive integer "
            "of at most 2**53",
            1 + i,
        )
    if not _is_count(vals[n_vars + 1]):
        raise nums.error(
            f"number of factors {_fmt(vals[n_vars + 1])} {_NOT_COUNT}",
            n_vars + 1,
        )
    n_factors = int(vals[n_vars + 1])
    if 2 * n_factors > n_vals - n_vars - 2:
        raise nums.error(
            f"{n_factors} factors need at least {2 * n_factors} more numbers (a scope and a "
            f"table each), but the file has {n_vals - n_vars - 2} (truncated file, or the "
            "factor count is wrong)"
        )
    return cards.astype(np.int64), n_factors


def _walk(nums, start, n_factors, block, unit, need=None, size_error=None):
    """Positions of the count-prefixed scopes or tables of all factors.

    Returns the position of each block's count, shape (n_factors,), and the
    position after the last block. Raises for counts that are not
    non-negative integers, that differ from ``need`` (tables) or that run
    past the end of the file.
    """
    from ._uai_kernels import walk_counted_blocks

    vals = nums.values
    pos = np.zeros(n_factors, dtype=np.int64)
    end, done = walk_counted_blocks(vals, start, n_factors, pos)
    if need is not None:
        bad = np.flatnonzero(vals[pos[:done]] != need[:done])
        if bad.size:
            f = int(bad[0])
            raise size_error(f, vals[pos[f]], int(pos[f]))
    if done == n_factors:
        return pos, end
    if end >= vals.shape[0]:
        raise nums.error(
            f"file ends before the {block} of factor {done} (truncated file, or a count "
            "is wrong)"
        )
    count = vals[end]
    if not _is_count(count):
        raise nums.error(
            f"size of the {block} of factor {done} is {_fmt(count)}; it must be a "
            "non-negative integer of at most 2**53",
            end,
        )
    if need is not None and count != need[done]:
        raise size_error(done, count, end)
    raise nums.error(
        f"the {block} of factor {done} ({int(count)} {unit}) runs past the end of the file "
        "(truncated file?)",
        end,
    )


def _parse_scopes(nums, cards, n_factors):
    """Scopes in CSR form, checked: orders, indptr, variables, and where the tables start."""
    n_vars = cards.shape[0]
    vals = nums.values
    scope_pos, table_start = _walk(nums, n_vars + 2, n_factors, "scope", "variables")
    orders = vals[scope_pos].astype(np.int64)
    indptr = np.zeros(n_factors + 1, dtype=np.int64)
    np.cumsum(orders, out=indptr[1:])
    var_pos = _ranges(scope_pos + 1, orders)
    svars = vals[var_pos]
    bad = ~(_is_count(svars) & (svars < n_vars))
    if bad.any():
        p = int(np.flatnonzero(bad)[0])
        f = int(np.searchsorted(indptr, p, side="right") - 1)
        raise nums.error(
            f"scope of factor {f} references variable {_fmt(svars[p])}; variables are "
            f"integers in [0, {n_vars})",
            int(var_pos[p]),
        )
    svars = svars.astype(np.int64)
    if svars.size:
        key = np.sort(np.repeat(np.arange(n_factors), orders) * n_vars + svars)
        dup = np.flatnonzero(np.diff(key) == 0)
        if dup.size:
            f, v = divmod(int(key[dup[0]]), n_vars)
            raise nums.error(f"scope of factor {f} repeats variable {v}", int(scope_pos[f]))
    return orders, indptr, svars, table_start


def _table_sizes(nums, cards, orders, indptr, svars):
    """Entries each factor's table needs (-1 beyond int64), and an error maker for misfits."""
    n_factors = orders.shape[0]
    card_of = cards[svars]
    log_need = np.bincount(
        np.repeat(np.arange(n_factors), orders),
        weights=np.log(card_of.astype(np.float64)),
        minlength=n_factors,
    )
    need = np.ones(n_factors, dtype=np.int64)
    if svars.size:
        # a trailing 1 keeps every start a valid index; empty scopes need 1 entry
        padded = np.append(card_of, np.int64(1))
        nonempty = orders > 0
        need[nonempty] = np.multiply.reduceat(padded, indptr[:-1])[nonempty]
    need[log_need > np.log(2.0**62)] = -1  # never matches a count read from the file

    def size_error(f, count, k):
        scope = svars[indptr[f] : indptr[f + 1]]
        want = str(need[f]) if need[f] >= 0 else f"about {np.exp(log_need[f]):.3g}"
        return nums.error(
            f"table of factor {f} has {_fmt(count)} entries, but its scope {scope.tolist()} "
            f"with cardinalities {cards[scope].tolist()} needs {want} (wrong table size)",
            k,
        )

    return need, size_error


def _parse_tables(nums, table_start, need, size_error):
    """Potentials of all tables, concatenated, checked >= 0 and finite, with offsets."""
    vals = nums.values
    n_factors = need.shape[0]
    table_pos, end = _walk(nums, table_start, n_factors, "table", "entries", need, size_error)
    if end < vals.shape[0]:
        raise nums.error(
            f"{vals.shape[0] - end} unexpected number(s) after the table of the last factor "
            f"(factor {n_factors - 1}); the factor count or a table size is wrong",
            end,
        )
    in_table = np.ones(vals.shape[0] - table_start, dtype=bool)
    in_table[table_pos - table_start] = False
    phi = vals[table_start:][in_table]
    table_offsets = np.zeros(n_factors + 1, dtype=np.int64)
    np.cumsum(need, out=table_offsets[1:])
    bad = ~((phi >= 0) & (phi < np.inf))
    if bad.any():
        p = int(np.flatnonzero(bad)[0])
        f = int(np.searchsorted(table_offsets, p, side="right") - 1)
        what = "negative" if phi[p] < 0 else "non-finite"
        raise nums.error(
            f"{what} potential {_fmt(phi[p])} in the table of factor {f} (entry "
            f"{p - table_offsets[f]}); potentials must be finite and >= 0",
            int(table_pos[f] + 1 + p - table_offsets[f]),
        )
    return table_offsets, phi


def _log(phi):
    with np.errstate(divide="ignore"):
        return np.log(phi)


def _assemble(cards, orders, indptr, svars, need, table_offsets, phi):
    """FactorGraph from parsed scopes and potential tables (theta = log phi)."""
    n_vars = cards.shape[0]
    unary_offsets = np.zeros(n_vars + 1, dtype=np.int64)
    np.cumsum(cards, out=unary_offsets[1:])
    unary = np.zeros(int(unary_offsets[-1]))

    single = np.flatnonzero(orders == 1)
    if single.size:
        var = svars[indptr[single]]
        src = _ranges(table_offsets[single], cards[var])
        dst = _ranges(unary_offsets[var], cards[var])
        np.add.at(unary, dst, _log(phi[src]))
    const = np.flatnonzero(orders == 0)
    if const.size and n_vars:
        unary[: unary_offsets[1]] += _log(phi[table_offsets[const]]).sum()

    high = np.flatnonzero(orders >= 2)
    h_orders = orders[high]
    h_indptr = np.zeros(high.size + 1, dtype=np.int64)
    np.cumsum(h_orders, out=h_indptr[1:])
    h_svars = svars[_ranges(indptr[high], h_orders)]
    h_sizes = need[high]
    h_offsets = np.zeros(high.size + 1, dtype=np.int64)
    np.cumsum(h_sizes, out=h_offsets[1:])
    h_phi = phi[_ranges(table_offsets[high], h_sizes)]
    table_ids, keep = _share_tables(h_phi, h_offsets)
    pool_sizes = h_sizes[keep]
    pool_offsets = np.zeros(pool_sizes.size + 1, dtype=np.int64)
    np.cumsum(pool_sizes, out=pool_offsets[1:])
    pool = _log(h_phi[_ranges(h_offsets[:-1][keep], pool_sizes)])
    return FactorGraph.from_arrays(
        cards, unary, h_indptr, h_svars, table_ids, pool_offsets, pool, validate=True
    )


def read_uai(path, evidence=None):
    """Read a UAI ``MARKOV`` or ``BAYES`` network as a factor graph.

    Parameters
    ----------
    path : str, path-like or file object
        The network file; a name ending in ``.gz`` is decompressed.
    evidence : None, str, path-like, file object or mapping {int: int}, optional
        Observed variables, as a UAI evidence file (see
        :func:`read_uai_evidence`) or a mapping variable -> state. Evidence is
        applied by *clamping* (:meth:`FactorGraph.clamp`): the other states of
        an observed variable get score ``-inf``. Variables keep their indices,
        so a MAP labeling of the result lines up with the file (and with
        ``.MAP`` solution files), and observed variables take their observed
        states.

    Returns
    -------
    graph : FactorGraph
        Scores ``theta = log(phi)``; single-variable factors summed into
        ``unary``; factors of order >= 2 with identical tables share one pool
        table (in order of first occurrence).

    Raises
    ------
    ValueError
        For a malformed file: unknown network type, truncated file, wrong
        counts, non-numeric tokens, negative or non-finite potentials, a table
        of the wrong size, a variable index out of range; or for evidence that
        does not fit the network. The message names the file, the factor and
        the line.
    OSError
        If the file cannot be read.

    Examples
    --------
    >>> import io
    >>> from structlearn.graphs import read_uai
    >>> text = "MARKOV 2 2 2 1 2 0 1 4 1 2 0 3"
    >>> g = read_uai(io.StringIO(text))
    >>> g.factor_table(0).round(3).tolist()
    [[0.0, 0.693], [-inf, 1.099]]
    """
    text, source = _read_text(path)
    graph = _parse_network(text, source)
    if evidence is None:
        return graph
    if isinstance(evidence, Mapping):
        ev, ev_source = evidence, "evidence"
    else:
        ev = read_uai_evidence(evidence)
        ev_source = _source_name(evidence)
    try:
        return graph.clamp(ev)
    except ValueError as exc:
        raise ValueError(f"{ev_source}: {exc} (network {source})") from None


def _source_name(path):
    if hasattr(path, "read"):
        return str(getattr(path, "name", "<file object>"))
    return os.path.basename(os.fsdecode(os.fspath(path)))


def read_uai_evidence(path):
    """Read a UAI evidence file.

    The file holds ``n v_1 s_1 ... v_n s_n``: the number of observed
    variables, then variable/state pairs. The older multi-sample layout,
    ``1 n v_1 s_1 ... v_n s_n`` (a sample count of 1 first), is accepted
    too; files with several samples are refused. An empty file means no
    evidence.

    Parameters
    ----------
    path : str, path-like or file object

    Returns
    -------
    evidence : dict {int: int}
        Observed variable -> state, sorted by variable.

    Raises
    ------
    ValueError
        For non-integer tokens, counts that do not match, several samples or
        a variable observed twice with different states.
    """
    text, source = _read_text(path)
    nums = _Numbers(text, 0, source)
    vals = nums.values
    if vals.size == 0:
        return {}
    bad = ~_is_count(vals)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise nums.error(f"evidence value {_fmt(vals[k])} {_NOT_COUNT}", k)
    vals = vals.astype(np.int64)
    n = vals.shape[0]
    if n == 1 + 2 * vals[0]:
        pairs = vals[1:]
    elif n >= 2 and n == 2 + 2 * vals[1] and vals[0] == 1:
        pairs = vals[2:]
    elif vals[0] > 1 and n > 1 + 2 * vals[0]:
        raise nums.error(
            f"expected 'n v1 s1 ... vn sn' with n={vals[0]} ({1 + 2 * vals[0]} numbers), got "
            f"{n} numbers; if this file holds {vals[0]} evidence samples, only files with "
            "one sample are supported"
        )
    else:
        raise nums.error(
            f"expected 'n v1 s1 ... vn sn' with n={vals[0]} ({1 + 2 * vals[0]} numbers), got "
            f"{n} numbers (truncated file or wrong count)"
        )
    var, state = pairs[0::2], pairs[1::2]
    order = np.argsort(var, kind="stable")
    var, state = var[order], state[order]
    clash = np.flatnonzero((np.diff(var) == 0) & (np.diff(state) != 0))
    if clash.size:
        v = int(var[clash[0]])
        raise nums.error(f"variable {v} is observed with two different states")
    return dict(zip(var.tolist(), state.tolist()))


def read_uai_solution(path, n_vars=None):
    """Read a labeling from a UAI ``.MAP`` solution file.

    The file holds the header ``MAP`` and a solution ``n l_1 ... l_n`` (the
    number of variables, then one state per variable). Anytime solvers may
    append improved solutions, on further lines, possibly after another
    ``MAP`` header or a ``-BEGIN-`` line; the *last complete* solution is
    returned, so a final solution cut short is skipped. An older layout puts
    the number of evidence samples (1) on its own line before the solution;
    a solution spread over several lines after the last header is accepted
    when no single line holds a complete one.

    Parameters
    ----------
    path : str, path-like or file object
    n_vars : int, optional
        Expected number of variables: only solutions of that length count.

    Returns
    -------
    labels : ndarray of int64, shape (n,)

    Raises
    ------
    ValueError
        If the file holds no complete solution (of ``n_vars`` variables when
        given), text other than the markers, or negative labels.
    """
    text, source = _read_text(path)
    best = None
    tail = []  # numeric tokens since the last marker line
    for lineno, line in enumerate(text.splitlines(), start=1):
        tokens = line.split()
        if not tokens:
            continue
        if tokens[0].upper() in _SOLUTION_MARKERS and len(tokens) == 1:
            tail = []
            continue
        try:
            row = np.array(tokens, dtype=np.int64)
        except (ValueError, OverflowError):
            raise ValueError(
                f"{source}: line {lineno} is neither a solution ('n l_1 ... l_n') nor one of "
                f"the markers {', '.join(_SOLUTION_MARKERS)}: {line.strip()[:60]!r}"
            ) from None
        tail.append(row)
        if row[0] == row.shape[0] - 1 and (n_vars is None or row[0] == n_vars):
            best = (row[1:], lineno)
    if best is None and tail:
        joined = np.concatenate(tail)
        for skip in (0, 1):  # optional sample count 1 first
            rest = joined[skip:]
            if (skip == 0 or joined[0] == 1) and rest.size and rest[0] == rest.size - 1 and (
                n_vars is None or rest[0] == n_vars
            ):
                best = (rest[1:], None)
                break
    if best is None:
        size = "" if n_vars is None else f" of {n_vars} variables"
        raise ValueError(
            f"{source}: no complete solution{size} found (expected 'MAP' and then "
            "'n l_1 ... l_n')"
        )
    labels, lineno = best
    if labels.size and labels.min() < 0:
        raise ValueError(
            f"{source}: negative label {labels.min()} in the solution"
            + (f" on line {lineno}" if lineno else "")
        )
    return labels.copy()


def _check_solution_labels(labels, ndim, shape_name):
    """``labels`` as an array of non-negative integers with ``ndim`` axes."""
    arr = np.asarray(labels)
    if arr.ndim != ndim:
        raise ValueError(f"labels must be {shape_name}, got shape {arr.shape}")
    if arr.size and (not np.issubdtype(arr.dtype, np.integer) or arr.min() < 0):
        raise ValueError("labels must be non-negative integers")
    return arr


def write_uai_solution(labels, path):
    """Write a labeling as a UAI ``.MAP`` file (``MAP`` then ``n l_1 ... l_n``).

    Parameters
    ----------
    labels : array-like of int, shape (n_vars,)
        Non-negative states.
    path : str, path-like or text file object
    """
    arr = _check_solution_labels(labels, 1, "1-D")
    body = " ".join(map(str, arr.astype(np.int64).tolist()))
    _write_text(f"MAP\n{arr.size}{' ' if arr.size else ''}{body}\n", path)

def write_uai_solutions(labels, scores, upper_bounds, path):
    """Write ranked labelings (M-best) as text: ``MBEST m`` then one line per
    rank ``rank score upper_bound n l_1 ... l_n`` (``inf``/``-inf`` spelled
    out).

    Parameters
    ----------
    labels : array-like of int, shape (m, n_vars)
    scores, upper_bounds : array-like of float, shape (m,)
    path : str, path-like or text file object
    """
    arr = _check_solution_labels(labels, 2, "2-D (ranks, variables)")
    scores = np.asarray(scores, dtype=np.float64).reshape(-1)
    bounds = np.asarray(upper_bounds, dtype=np.float64).reshape(-1)
    if scores.shape[0] != arr.shape[0] or bounds.shape[0] != arr.shape[0]:
        raise ValueError("labels, scores and upper_bounds must have one entry per rank")
    lines = [f"MBEST {arr.shape[0]}"]
    for r in range(arr.shape[0]):
        body = " ".join(map(str, arr[r].astype(np.int64).tolist()))
        lines.append(f"{r + 1} {float(scores[r])!r} {float(bounds[r])!r} {arr.shape[1]}"
                     f"{' ' if body else ''}{body}")
    _write_text("\n".join(lines) + "\n", path)


def read_uai_solutions(path):
    """Read a file written by :func:`write_uai_solutions`.

    Returns
    -------
    labels : ndarray of int64, shape (m, n_vars)
    scores, upper_bounds : ndarray of float64, shape (m,)
    """
    text, source = _read_text(path)
    rows = [line.split() for line in text.splitlines() if line.strip()]
    if not rows or rows[0][0] != "MBEST" or len(rows[0]) != 2:
        raise ValueError(f"{source}: not an M-best solution file (no 'MBEST m' header)")
    try:
        m = int(rows[0][1])
    except ValueError:
        raise ValueError(f"{source}: bad rank count {rows[0][1]!r} in the header") from None
    if len(rows) - 1 != m:
        raise ValueError(f"{source}: header announces {m} ranks, found {len(rows) - 1}")
    labels, scores, bounds = [], [], []
    for line_no, row in enumerate(rows[1:], start=2):
        try:
            n = int(row[3])
            if len(row) != 4 + n:
                raise ValueError
            scores.append(float(row[1]))
            bounds.append(float(row[2]))
            labels.append([int(v) for v in row[4:]])
        except (ValueError, IndexError):
            raise ValueError(f"{source}: malformed rank on line {line_no}") from None
        bad = [v for v in labels[-1] if not 0 <= v <= _MAX_COUNT]
        if bad:
            raise ValueError(f"{source}: label {bad[0]} on line {line_no} {_NOT_COUNT}")
        if n != len(labels[0]):
            raise ValueError(f"{source}: the rank on line {line_no} has {n} labels, the first "
                             f"rank {len(labels[0])}")
    n_vars = len(labels[0]) if labels else 0
    return (np.asarray(labels, dtype=np.int64).reshape(m, n_vars),
            np.asarray(scores), np.asarray(bounds))


# ------------------------------------------------------------------ writing
def _blocks_text(lead, items, indptr, lead_sep, end):
    """Concatenate ``lead[b] + lead_sep + ' '.join(items[indptr[b]:indptr[b+1]]) + end``."""
    n_blocks = len(lead)
    sizes = np.diff(indptr)
    out = np.empty(n_blocks + len(items), dtype=object)
    lead_pos = indptr[:-1] + np.arange(n_blocks)
    out[lead_pos] = lead
    is_item = np.ones(out.shape[0], dtype=bool)
    is_item[lead_pos] = False
    out[is_item] = items
    seps = np.full(out.shape[0], " ", dtype=object)
    seps[lead_pos] = lead_sep
    seps[lead_pos + sizes] = end
    return "".join(itertools.chain.from_iterable(zip(out.tolist(), seps.tolist())))


def _to_potentials(theta, offsets, normalize, what, names=None):
    """phi = exp(theta - shift) per segment, refusing values exp cannot represent."""
    n_seg = offsets.shape[0] - 1
    shift = np.zeros(n_seg)
    if normalize and theta.size:
        seg_max = np.maximum.reduceat(theta, offsets[:-1])
        shift = np.where(np.isfinite(seg_max), seg_max, 0.0)
    shifted = theta - np.repeat(shift, np.diff(offsets))
    finite = np.isfinite(shifted)
    bad = finite & ((shifted > _LOG_MAX) | (shifted < _LOG_TINY))
    if bad.any():
        p = int(np.flatnonzero(bad)[0])
        s = int(np.searchsorted(offsets, p, side="right") - 1)
        s = s if names is None else int(names[s])
        hint = (
            "its scores span too wide a range"
            if normalize
            else "pass normalize=True to shift each table (keeps the MAP labeling)"
        )
        shown = f"score {_fmt(theta[p])}"
        if normalize:
            shown += f" ({_fmt(shifted[p])} after shifting the maximum to 0)"
        raise ValueError(
            f"{what} {s} holds {shown}: exp() of it is not a normal positive float (scores "
            f"must lie in [{_LOG_TINY:.2f}, {_LOG_MAX:.2f}]); {hint}"
        )
    return np.exp(shifted)


def write_uai(graph, path, *, normalize=False):
    """Write a factor graph as a UAI ``MARKOV`` file.

    Each variable with a non-zero unary score becomes a single-variable
    factor (written first, by variable), followed by the factors of order
    >= 2 in graph order. Potentials are ``phi = exp(theta)`` (``-inf`` gives
    0), written with enough digits to read back the same floats. The UAI
    format has no table sharing, so a shared table is written once per
    factor that uses it (:func:`read_uai` shares identical tables again).

    Parameters
    ----------
    graph : FactorGraph
    path : str, path-like or text file object
        A name ending in ``.gz`` is compressed.
    normalize : bool, default=False
        Shift each table (and each variable's unary scores) so its largest
        score is 0 before exponentiating. The MAP labeling is unchanged but
        scores read back differ by a constant; needed when scores fall
        outside about [-708, 709], where exp() overflows or loses precision
        (``ValueError`` otherwise).

    Raises
    ------
    TypeError
        If ``graph`` is not a FactorGraph.
    ValueError
        If a score cannot be written as a potential (see ``normalize``).
    """
    if not isinstance(graph, FactorGraph):
        raise TypeError(f"graph must be a FactorGraph, got {type(graph).__name__}")
    n_vars = graph.n_vars
    n_states = graph.n_states
    uoff = graph.unary_offsets
    if n_vars:
        nonzero = np.add.reduceat(graph.unary != 0, uoff[:-1]) > 0
    else:
        nonzero = np.zeros(0, dtype=bool)
    uvars = np.flatnonzero(nonzero)
    u_sizes = n_states[uvars]
    u_offsets = np.zeros(uvars.size + 1, dtype=np.int64)
    np.cumsum(u_sizes, out=u_offsets[1:])
    u_phi = _to_potentials(
        graph.unary[_ranges(uoff[uvars], u_sizes)],
        u_offsets,
        normalize,
        "unary of variable",
        names=uvars,
    )
    t_phi = _to_potentials(graph.table_data, graph.table_offsets, normalize, "table")

    # every potential as a string once (repr round-trips float64 exactly)
    strings = np.array(list(map(repr, np.concatenate([u_phi, t_phi]).tolist())), dtype=object)
    # virtual tables: one per written unary, then the pool
    v_offsets = np.concatenate([u_offsets, u_offsets[-1] + graph.table_offsets[1:]])
    v_ids = np.concatenate([np.arange(uvars.size), uvars.size + graph.table_ids])
    sizes = np.diff(v_offsets)[v_ids]
    values = strings[_ranges(v_offsets[:-1][v_ids], sizes)]
    tab_indptr = np.zeros(v_ids.size + 1, dtype=np.int64)
    np.cumsum(sizes, out=tab_indptr[1:])

    orders = np.concatenate([np.ones(uvars.size, dtype=np.int64), graph.factor_orders])
    scope_items = np.concatenate([uvars, graph.scope_vars]).astype(str).astype(object)
    scope_indptr = np.zeros(orders.size + 1, dtype=np.int64)
    np.cumsum(orders, out=scope_indptr[1:])

    parts = [
        "MARKOV\n",
        f"{n_vars}\n",
        " ".join(map(str, n_states.tolist())) + "\n",
        f"{orders.size}\n",
        _blocks_text(orders.astype(str).astype(object), scope_items, scope_indptr, " ", "\n"),
        "\n",
        _blocks_text(sizes.astype(str).astype(object), values, tab_indptr, "\n", "\n\n"),
    ]
    _write_text("".join(parts), path)
