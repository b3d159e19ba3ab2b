"""The result type shared by every MAP back-end."""

from dataclasses import dataclass, field
from typing import Optional

import numpy as np

__all__ = ["MapResult"]


@dataclass
class MapResult:
    """Outcome of a MAP solve.

    Attributes
    ----------
    labels : ndarray of int64, shape (n_vars,)
        Best integer labeling found.
    score : float
        ``graph.score(labels)``.
    upper_bound : float
        Certified upper bound on the optimum (a dual value); equals ``score``
        for exact methods, ``+inf`` when the method has none.
    n_iter : int
        Iterations run (1 for one-pass exact methods).
    converged : bool
        True when the method stopped on a certified gap (or is exact).
    time : float
        Wall-clock seconds.
    history : list of dict
        Per-iteration records (method-specific keys; empty for exact methods).
    method : str
        Name of the method that produced the result.
    status : str
        Why the method stopped: ``"exact"``, ``"gap"`` (certified relative gap
        below tol), ``"max_iter"``, ``"time_limit"``, ``"stall"``,
        ``"cutoff"`` (the bound fell to the caller's ``cutoff``) or
        ``"node_limit"`` (branch and bound's node cap); or
        ``"infeasible"`` (proved: no labeling has a finite score; ``score``
        and ``upper_bound`` are ``-inf``, ``labels`` all zero) or
        ``"no_feasible_found"`` (the method stopped without a finite-score
        labeling and without proving that there is none).
    compile_time : float
        Seconds of ``time`` spent compiling kernels (or loading them from
        numba's cache) on their first call; 0 once they are loaded.
    time_limit : float or None
        The time limit the method ran under.
    reason : str
        Why ``method="auto"`` chose ``method`` (empty when it was named).
    n_clusters : int
        Cycle clusters added to tighten the relaxation (``cycles=``).
    beliefs : ndarray of float64, shape (n_unary,), or None
        Node beliefs of the relaxation's last primal point (flat, in the
        graph's unary layout), where the back-end keeps them (``ad3``).
    state : object or None
        The back-end's state, to warm-start a later solve of a graph with the
        same variables and factors (``ad3``: an ``AD3State``, passed back as
        ``init_state``).
    label_bounds : ndarray of float64, shape (n_unary,), or None
        Per label (flat, the graph's unary layout), a certified upper bound
        on the score of every labeling that takes it: the last dual with
        that label held fixed, where the back-end keeps it (``ad3``).  A
        label whose bound is below a known score can be forbidden.
    """

    labels: np.ndarray
    score: float
    upper_bound: float
    n_iter: int = 1
    converged: bool = True
    time: float = 0.0
    history: list = field(default_factory=list)
    method: str = ""
    status: str = "exact"
    compile_time: float = 0.0
    time_limit: Optional[float] = None
    reason: str = ""
    n_clusters: int = 0
    beliefs: Optional[np.ndarray] = field(default=None, repr=False)
    state: Optional[object] = field(default=None, repr=False)
    label_bounds: Optional[np.ndarray] = field(default=None, repr=False)

    @property
    def over_time_limit(self):
        """True when the method finished after its time limit (an exact
        method, or one step that cannot be interrupted, ran past it)."""
        return self.time_limit is not None and self.time > self.time_limit

    @property
    def gap(self):
        """``upper_bound - score`` (>= 0 up to rounding; 0 for exact methods)."""
        return self.upper_bound - self.score

    def relative_gap(self):
        """Gap divided by ``max(1, |upper_bound|)``."""
        ub = self.upper_bound
        if not np.isfinite(ub) or not np.isfinite(self.score):
            return np.inf
        return (ub - self.score) / max(1.0, abs(ub))
