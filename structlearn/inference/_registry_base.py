"""A registry of named back-ends that declare their parameters.

Shared by the MAP registry (:func:`structlearn.inference.solve_map`) and the
M-best registry (:func:`structlearn.inference.solve_mbest`): one lookup with
one error message for unknown names, one check of the parameters a call
passes against the ones the back-end registered.
"""

import importlib

__all__ = ["Registry"]


class Method:
    """A registered back-end: its function, exactness and parameter names."""

    __slots__ = ("solver", "exact", "params")

    def __init__(self, solver, exact, params):
        self.solver = solver
        self.exact = exact
        self.params = params


class Registry:
    """Named back-ends of one kind.

    Parameters
    ----------
    kind : str
        Used in messages ("MAP", "M-best").
    builtin : tuple of str
        Modules (relative to this package) of the built-in back-ends;
        imported on first use, so importing the package compiles and imports
        nothing heavy.  Each declares its methods in a module-level tuple
        ``table`` of keyword dicts (``name``, ``solver``, ``exact``,
        ``params``, ...), which the registry reads: a back-end never imports
        its registry.
    table : str, default="METHODS"
    declare : callable, optional
        Called with each declared dict (default: :meth:`register`); a
        registry with more to do per method (the MAP registry's
        ``tightening``) passes its own.
    """

    def __init__(self, kind, builtin, table="METHODS", declare=None):
        self.kind = kind
        self.methods = {}
        self._builtin = builtin
        self._table = table
        self._declare = declare
        self._loaded = False

    def _load(self):
        if not self._loaded:
            self._loaded = True
            declare = self._declare or self.register
            for module in self._builtin:
                for spec in getattr(importlib.import_module(module, __package__), self._table):
                    declare(**spec)

    def register(self, name, solver, *, exact=False, params=()):
        """Add ``solver`` under ``name``; it takes ``time_limit`` and ``params``."""
        self.methods[name] = Method(solver, bool(exact), tuple(sorted(set(params) |
                                                                      {"time_limit"})))
        return solver

    def names(self):
        """``"auto"`` plus the registered names, sorted."""
        self._load()
        return ["auto"] + sorted(self.methods)

    def lookup(self, name):
        """The :class:`Method` registered as ``name`` (``ValueError`` otherwise)."""
        self._load()
        if not isinstance(name, str) or name not in self.methods:
            raise ValueError(f"unknown {self.kind} method {name!r}; available methods: "
                             f"{', '.join(self.names())}")
        return self.methods[name]

    def check_params(self, name, params):
        """``TypeError`` naming the method and what it takes when ``params``
        holds a name it does not take."""
        accepted = self.lookup(name).params
        unknown = sorted(set(params) - set(accepted))
        if unknown:
            raise TypeError(f"method {name!r} got unexpected parameter(s): "
                            f"{', '.join(unknown)}; method {name!r} takes: {', '.join(accepted)}")
