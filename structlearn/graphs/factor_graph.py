"""Discrete factor graphs stored as flat arrays with a shared table pool.

A :class:`FactorGraph` holds

* ``n_states`` -- number of states of each variable, shape (n_vars,);
* unary scores, concatenated into one flat array with ``unary_offsets``;
* factor scopes in CSR form (``scope_indptr``, ``scope_vars``);
* a *pool* of factor tables, concatenated into ``table_data`` with
  ``table_offsets``, and one ``table_ids`` entry per factor.

Scores are log-potentials: MAP maximizes the sum of unary and factor scores.
``-inf`` marks a forbidden configuration; NaN and ``+inf`` are rejected.

Tables are laid out in C order over the factor's scope: for scope
``(a, b, c)`` the entry of ``(x_a, x_b, x_c)`` sits at
``(x_a * K_b + x_b) * K_c + x_c`` (the last variable changes fastest, as
in the UAI format).  Factors that share a table must have scopes with the
same state counts; the table is never copied per factor.
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["FactorGraph"]


def _as_int_array(value, name, ndim=1):
    arr = np.asarray(value)
    if arr.size == 0:
        arr = arr.astype(np.int64)
    if arr.dtype == bool or not np.issubdtype(arr.dtype, np.integer):
        if np.issubdtype(arr.dtype, np.floating) and arr.size and np.all(
            np.isfinite(arr)
        ) and np.all(arr == np.round(arr)):
            arr = arr.astype(np.int64)
        else:
            raise TypeError(f"{name} must hold integers, got dtype {arr.dtype}")
    if arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got shape {arr.shape}")
    return arr.astype(np.int64, copy=False)


def _check_scores(arr, name):
    """Reject NaN and +inf; -inf (a forbidden state) is allowed."""
    if not np.issubdtype(arr.dtype, np.number) or np.issubdtype(
        arr.dtype, np.complexfloating
    ):
        raise TypeError(f"{name} must be real numbers, got dtype {arr.dtype}")
    arr = np.asarray(arr, dtype=np.float64)
    if np.isnan(arr).any():
        raise ValueError(f"{name} contains NaN")
    if np.isposinf(arr).any():
        raise ValueError(f"{name} contains +inf (only -inf, a forbidden state, is allowed)")
    return arr


class FactorGraph:
    """A discrete factor graph with unary scores and a shared pool of factor tables.

    Parameters
    ----------
    n_states : array-like of int, shape (n_vars,)
        Number of states of each variable (each >= 1).
    unary : None, array of shape (n_vars, K) or sequence of 1-D arrays, optional
        Unary scores. A 2-D array requires all variables to have ``K`` states;
        a sequence gives one array of length ``n_states[i]`` per variable.
        ``None`` means all zeros.
    scopes : sequence of sequences of int, or int array of shape (n_factors, order)
        Variables of each factor (order >= 2, no repeated variable).
    tables : sequence of arrays, optional
        The table pool. Table ``t`` must have ``prod(n_states[scope])``
        entries for every factor that points to it; it may be given flat or
        with the matching shape.
    table_ids : array-like of int, shape (n_factors,), optional
        Table of each factor. Defaults to ``arange(n_factors)`` (one table
        per factor), which requires ``len(tables) == n_factors``.

    Attributes
    ----------
    n_states : ndarray of int64, shape (n_vars,)
    unary_offsets : ndarray of int64, shape (n_vars + 1,)
    unary : ndarray of float64, shape (n_states.sum(),)
    scope_indptr : ndarray of int64, shape (n_factors + 1,)
    scope_vars : ndarray of int64, shape (scope_indptr[-1],)
    table_ids : ndarray of int64, shape (n_factors,)
    table_offsets : ndarray of int64, shape (n_tables + 1,)
    table_data : ndarray of float64, shape (table_offsets[-1],)

    Examples
    --------
    >>> import numpy as np
    >>> from structlearn.graphs import FactorGraph
    >>> g = FactorGraph([2, 2], unary=[[0., 1.], [0.5, 0.]],
    ...                 scopes=[(0, 1)], tables=[np.eye(2)])
    >>> float(g.score([1, 1]))
    2.0
    """

    def __init__(self, n_states, unary=None, scopes=(), tables=(), table_ids=None):
        n_states = _as_int_array(n_states, "n_states")
        n_vars = n_states.shape[0]
        unary_flat = self._flatten_unary(unary, n_states)
        indptr, svars = self._scopes_to_csr(scopes)
        n_factors = indptr.shape[0] - 1
        if isinstance(tables, np.ndarray) and tables.ndim >= 1 and tables.dtype != object:
            tables = list(tables)
        tables = list(tables)
        if table_ids is None:
            if len(tables) != n_factors:
                raise ValueError(
                    f"tables has {len(tables)} entries but there are {n_factors} "
                    "factors; pass table_ids to share tables"
                )
            table_ids = np.arange(n_factors, dtype=np.int64)
        table_ids = _as_int_array(table_ids, "table_ids")
        sizes = np.empty(len(tables), dtype=np.int64)
        flat = []
        for t, tab in enumerate(tables):
            arr = np.asarray(tab)
            if arr.dtype == object:
                raise TypeError(f"tables[{t}] must be a numeric array")
            arr = _check_scores(arr.ravel(), f"tables[{t}]")
            sizes[t] = arr.shape[0]
            flat.append(arr)
        offsets = np.zeros(len(tables) + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        data = np.concatenate(flat) if flat else np.zeros(0)
        self._init_from_arrays(
            n_states, unary_flat, indptr, svars, table_ids, offsets, data, validate=True
        )
        del n_vars

    # ------------------------------------------------------------------ builders
    @classmethod
    def from_arrays(
        cls,
        n_states,
        unary,
        scope_indptr,
        scope_vars,
        table_ids,
        table_offsets,
        table_data,
        *,
        validate=True,
    ):
        """Build a graph directly from the flat arrays (no per-factor Python work).

        Parameters
        ----------
        n_states : ndarray of int, shape (n_vars,)
        unary : ndarray of float, shape (n_states.sum(),)
            Flat unary scores, variable by variable.
        scope_indptr : ndarray of int, shape (n_factors + 1,)
        scope_vars : ndarray of int, shape (scope_indptr[-1],)
        table_ids : ndarray of int, shape (n_factors,)
        table_offsets : ndarray of int, shape (n_tables + 1,)
        table_data : ndarray of float, shape (table_offsets[-1],)
        validate : bool, default=True
            Check shapes, ranges, sizes and values. Only skip for arrays that
            come from another validated graph.

        Returns
        -------
        graph : FactorGraph
        """
        self = cls.__new__(cls)
        n_states = _as_int_array(n_states, "n_states")
        unary = np.asarray(unary)
        if validate:
            unary = _check_scores(unary, "unary")
            table_data = _check_scores(np.asarray(table_data), "table_data")
        self._init_from_arrays(
            n_states,
            np.asarray(unary, dtype=np.float64),
            _as_int_array(scope_indptr, "scope_indptr"),
            _as_int_array(scope_vars, "scope_vars"),
            _as_int_array(table_ids, "table_ids"),
            _as_int_array(table_offsets, "table_offsets"),
            np.asarray(table_data, dtype=np.float64),
            validate=validate,
        )
        return self

    @staticmethod
    def _flatten_unary(unary, n_states):
        total = int(n_states.sum()) if n_states.size else 0
        if unary is None:
            return np.zeros(total)
        if isinstance(unary, np.ndarray) and unary.dtype != object and unary.ndim == 2:
            if unary.shape[0] != n_states.shape[0] or (
                n_states.size and np.any(n_states != unary.shape[1])
            ):
                raise ValueError(
                    f"unary has shape {unary.shape}; a 2-D unary needs shape "
                    f"(n_vars, K) with every n_states equal to K (n_vars={n_states.shape[0]})"
                )
            return _check_scores(unary.ravel(), "unary").copy()
        if isinstance(unary, np.ndarray) and unary.dtype != object and unary.ndim == 1:
            if unary.shape[0] != total:
                raise ValueError(
                    f"flat unary has {unary.shape[0]} entries, expected n_states.sum()={total}"
                )
            return _check_scores(unary, "unary").copy()
        unary = list(unary)
        if len(unary) != n_states.shape[0]:
            raise ValueError(
                f"unary has {len(unary)} entries, expected one per variable ({n_states.shape[0]})"
            )
        parts = []
        for i, u in enumerate(unary):
            u = np.asarray(u)
            if u.ndim != 1 or u.shape[0] != n_states[i]:
                raise ValueError(
                    f"unary[{i}] has shape {u.shape}, expected ({n_states[i]},)"
                )
            parts.append(_check_scores(u, f"unary[{i}]"))
        return np.concatenate(parts) if parts else np.zeros(0)

    @staticmethod
    def _scopes_to_csr(scopes):
        if isinstance(scopes, np.ndarray) and scopes.dtype != object:
            if scopes.size == 0:
                return np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64)
            scopes = _as_int_array(scopes, "scopes", ndim=2)
            n_f, order = scopes.shape
            indptr = np.arange(n_f + 1, dtype=np.int64) * order
            return indptr, scopes.ravel().copy()
        scopes = list(scopes)
        lengths = np.fromiter((len(s) for s in scopes), dtype=np.int64, count=len(scopes))
        indptr = np.zeros(len(scopes) + 1, dtype=np.int64)
        np.cumsum(lengths, out=indptr[1:])
        if scopes:
            svars = np.concatenate([np.asarray(s).ravel() for s in scopes])
        else:
            svars = np.zeros(0, dtype=np.int64)
        return indptr, _as_int_array(svars, "scopes")

    def _init_from_arrays(
        self, n_states, unary, indptr, svars, table_ids, table_offsets, table_data, validate
    ):
        n_vars = n_states.shape[0]
        if validate:
            if n_vars and n_states.min() < 1:
                bad = int(np.flatnonzero(n_states < 1)[0])
                raise ValueError(
                    f"n_states[{bad}] = {n_states[bad]}: every variable needs at least one state"
                )
            if unary.ndim != 1 or unary.shape[0] != int(n_states.sum()):
                raise ValueError(
                    f"unary has shape {unary.shape}, expected ({int(n_states.sum())},)"
                )
            if indptr.shape[0] < 1 or indptr[0] != 0 or np.any(np.diff(indptr) < 0):
                raise ValueError("scope_indptr must start at 0 and be non-decreasing")
            if indptr[-1] != svars.shape[0]:
                raise ValueError(
                    f"scope_indptr ends at {indptr[-1]} but scope_vars has {svars.shape[0]} entries"
                )
            n_factors = indptr.shape[0] - 1
            order = np.diff(indptr)
            if n_factors and order.min() < 2:
                bad = int(np.flatnonzero(order < 2)[0])
                raise ValueError(
                    f"factor {bad} has order {order[bad]}; factors need at least 2 "
                    "variables (put single-variable scores in unary)"
                )
            if svars.size and (svars.min() < 0 or svars.max() >= n_vars):
                pos = int(np.flatnonzero((svars < 0) | (svars >= n_vars))[0])
                f = int(np.searchsorted(indptr, pos, side="right") - 1)
                raise ValueError(
                    f"scope of factor {f} references variable {svars[pos]}, "
                    f"but the graph has {n_vars} variables"
                )
            if table_ids.shape[0] != n_factors:
                raise ValueError(
                    f"table_ids has {table_ids.shape[0]} entries, expected one per factor ({n_factors})"
                )
            n_tables = table_offsets.shape[0] - 1
            if table_offsets.shape[0] < 1 or table_offsets[0] != 0 or np.any(
                np.diff(table_offsets) < 0
            ) or table_offsets[-1] != table_data.shape[0]:
                raise ValueError("table_offsets must run from 0 to len(table_data), non-decreasing")
            if n_factors and (table_ids.min() < 0 or table_ids.max() >= n_tables):
                bad = int(np.flatnonzero((table_ids < 0) | (table_ids >= n_tables))[0])
                raise ValueError(
                    f"factor {bad} points to table {table_ids[bad]}, but the pool has {n_tables} tables"
                )
            if n_factors:
                # repeated variables inside a scope
                fid = np.repeat(np.arange(n_factors), order)
                key = fid * np.int64(n_vars) + svars
                if np.unique(key).shape[0] != key.shape[0]:
                    dup = np.sort(key)
                    d = dup[np.flatnonzero(np.diff(dup) == 0)[0]]
                    raise ValueError(
                        f"scope of factor {d // n_vars} repeats variable {d % n_vars}"
                    )
                # table sizes must match prod(n_states[scope]) (in log space to avoid overflow)
                logk = np.log(n_states[svars].astype(np.float64))
                logsize = np.add.reduceat(logk, indptr[:-1]) if svars.size else np.zeros(0)
                if np.any(logsize > np.log(2.0**62)):
                    bad = int(np.argmax(logsize))
                    raise ValueError(f"factor {bad} has a joint domain too large to store")
                need = np.multiply.reduceat(n_states[svars], indptr[:-1])
                have = np.diff(table_offsets)[table_ids]
                if np.any(need != have):
                    bad = int(np.flatnonzero(need != have)[0])
                    raise ValueError(
                        f"table {table_ids[bad]} has {have[bad]} entries but factor {bad} "
                        f"with scope {svars[indptr[bad]:indptr[bad + 1]].tolist()} needs {need[bad]}"
                    )
        unary_offsets = np.zeros(n_vars + 1, dtype=np.int64)
        np.cumsum(n_states, out=unary_offsets[1:])
        self.n_states = n_states
        self.unary_offsets = unary_offsets
        self.unary = unary
        self.scope_indptr = indptr
        self.scope_vars = svars
        self.table_ids = table_ids
        self.table_offsets = table_offsets
        self.table_data = table_data

    # --------------------------------------------------------------- properties
    @property
    def n_vars(self):
        """Number of variables."""
        return self.n_states.shape[0]

    @property
    def n_factors(self):
        """Number of factors of order >= 2."""
        return self.scope_indptr.shape[0] - 1

    @property
    def n_tables(self):
        """Number of tables in the pool."""
        return self.table_offsets.shape[0] - 1

    @property
    def max_states(self):
        """Largest number of states of any variable (0 for an empty graph)."""
        return int(self.n_states.max()) if self.n_vars else 0

    @property
    def factor_orders(self):
        """Order of each factor, shape (n_factors,)."""
        return np.diff(self.scope_indptr)

    def scope(self, f):
        """Variables of factor ``f``, shape (order,)."""
        return self.scope_vars[self.scope_indptr[f] : self.scope_indptr[f + 1]]

    def unary_of(self, i):
        """View of the unary scores of variable ``i``, shape (n_states[i],)."""
        return self.unary[self.unary_offsets[i] : self.unary_offsets[i + 1]]

    def unary_matrix(self, fill=-np.inf):
        """Unary scores padded to shape (n_vars, max_states) with ``fill``."""
        out = np.full((self.n_vars, self.max_states), fill, dtype=np.float64)
        col = np.arange(self.unary.shape[0]) - np.repeat(self.unary_offsets[:-1], self.n_states)
        row = np.repeat(np.arange(self.n_vars), self.n_states)
        out[row, col] = self.unary
        return out

    def factor_table(self, f):
        """View of factor ``f``'s table, shaped by its scope's state counts."""
        t = self.table_ids[f]
        flat = self.table_data[self.table_offsets[t] : self.table_offsets[t + 1]]
        return flat.reshape(tuple(self.n_states[self.scope(f)]))

    def table(self, t):
        """Flat view of pool table ``t``."""
        return self.table_data[self.table_offsets[t] : self.table_offsets[t + 1]]

    def arrays(self):
        """The flat arrays in the order numba kernels take them.

        Returns
        -------
        arrays : tuple
            ``(n_states, unary_offsets, unary, scope_indptr, scope_vars,
            table_ids, table_offsets, table_data)``.
        """
        return (
            self.n_states,
            self.unary_offsets,
            self.unary,
            self.scope_indptr,
            self.scope_vars,
            self.table_ids,
            self.table_offsets,
            self.table_data,
        )

    # ------------------------------------------------------------------ scoring
    def _check_labels(self, labels):
        labels = np.asarray(labels)
        if labels.ndim == 1:
            labels = labels[None, :]
        if labels.ndim != 2 or labels.shape[1] != self.n_vars:
            raise ValueError(
                f"labels must have shape (n_vars,) or (n_labelings, n_vars) with "
                f"n_vars={self.n_vars}, got {np.asarray(labels).shape}"
            )
        if labels.size and not np.issubdtype(labels.dtype, np.integer):
            raise TypeError(f"labels must be integers, got dtype {labels.dtype}")
        labels = labels.astype(np.int64, copy=False)
        if labels.size and (labels.min() < 0 or np.any(labels >= self.n_states[None, :])):
            r, c = np.argwhere((labels < 0) | (labels >= self.n_states[None, :]))[0]
            raise ValueError(
                f"label {labels[r, c]} of variable {c} is out of range [0, {self.n_states[c]})"
            )
        return labels

    def score(self, labels):
        """Total score sum(theta) of one labeling.

        Parameters
        ----------
        labels : array-like of int, shape (n_vars,)

        Returns
        -------
        score : float
            ``-inf`` if the labeling hits a forbidden entry.
        """
        labels = np.asarray(labels)
        if labels.ndim != 1:
            raise ValueError(f"labels must be 1-D of length {self.n_vars}, got shape {labels.shape}")
        return float(self.score_many(labels[None, :])[0])

    def score_many(self, labels):
        """Scores of many labelings at once.

        Parameters
        ----------
        labels : array-like of int, shape (n_labelings, n_vars)

        Returns
        -------
        scores : ndarray of float64, shape (n_labelings,)
        """
        from ._graph_kernels import score_labelings

        labels = self._check_labels(labels)
        out = np.empty(labels.shape[0], dtype=np.float64)
        score_labelings(*self.arrays(), labels, out)
        return out

    # ------------------------------------------------------------------ editing
    def clamp(self, evidence):
        """Return a copy with observed variables clamped to their states.

        Clamping sets every other unary state of an observed variable to
        ``-inf``; variable indices stay the same.

        Parameters
        ----------
        evidence : dict {int: int}
            Observed variable -> state.

        Returns
        -------
        graph : FactorGraph
        """
        unary = self.unary.copy()
        for var, state in dict(evidence).items():
            if not isinstance(var, numbers.Integral) or not 0 <= var < self.n_vars:
                raise ValueError(f"evidence variable {var!r} is not in [0, {self.n_vars})")
            if not isinstance(state, numbers.Integral) or not 0 <= state < self.n_states[var]:
                raise ValueError(
                    f"evidence state {state!r} of variable {var} is not in [0, {self.n_states[var]})"
                )
            lo = self.unary_offsets[var]
            keep = unary[lo + state]
            unary[lo : self.unary_offsets[var + 1]] = -np.inf
            unary[lo + state] = keep
        return self.with_unary(unary)

    def with_unary(self, unary):
        """The same factors (tables shared, not copied) with other unary scores.

        Parameters
        ----------
        unary : ndarray of float64, shape (n_states.sum(),)
            Flat unary scores, variable by variable (not validated: they
            come from this graph's own, e.g. with states set to ``-inf``).

        Returns
        -------
        graph : FactorGraph
        """
        return FactorGraph.from_arrays(self.n_states, unary, self.scope_indptr, self.scope_vars,
                                       self.table_ids, self.table_offsets, self.table_data,
                                       validate=False)

    def copy(self):
        """Deep copy."""
        return FactorGraph.from_arrays(*(a.copy() for a in self._ctor_arrays()), validate=False)

    def _ctor_arrays(self):
        return (
            self.n_states,
            self.unary,
            self.scope_indptr,
            self.scope_vars,
            self.table_ids,
            self.table_offsets,
            self.table_data,
        )

    def __repr__(self):
        orders = np.bincount(self.factor_orders) if self.n_factors else np.zeros(0, int)
        by_order = ", ".join(f"{k}: {c}" for k, c in enumerate(orders) if c)
        return (
            f"FactorGraph(n_vars={self.n_vars}, max_states={self.max_states}, "
            f"n_factors={self.n_factors} {{{by_order}}}, n_tables={self.n_tables})"
        )

    def __eq__(self, other):
        if not isinstance(other, FactorGraph):
            return NotImplemented
        return all(
            a.shape == b.shape and np.array_equal(a, b)
            for a, b in zip(self._ctor_arrays(), other._ctor_arrays())
        )

    __hash__ = None
