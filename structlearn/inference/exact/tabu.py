"""Tabu search for good labelings of a pairwise cost function network.

The weighted constraint networks that the soft arc search proves are often
solved late: the optimum turns up after half or more of the nodes, and once
known it prunes most of them.  :class:`TabuSearch` (the kernel is in
:mod:`._tabu_kernels`) looks for it apart from the tree: from a labeling
(the search's incumbent), relabel one variable a step, always the cheapest
move that was not recently undone, forbidden pairs counted as a penalty;
restart from the search's incumbent whenever that is better.  Work is
counted in steps, so a run without a deadline gives the same labelings on
any machine.
"""

import time

import numpy as np

from ._soft_arc_kernels import edge_tables
from ._tabu_kernels import (BEST, PenalizedPairs, TabuSettings, TabuState, tabu_init,
                            tabu_steps)

__all__ = ["TabuSearch"]

TENURE_MIN = 30        # the shortest tabu time: this, or one variable in
TENURE_VARS = 3        # this many, whichever is more
STALL_STEPS = 5000     # steps without a better labeling before a perturbation
KICK_SHARE = 0.05      # of the variables relabelled by a perturbation (at least 2)
PENALTY_SCALE = 4.0    # a forbidden pair costs this times the largest finite
                       # pair plus unary cost, plus 1
_CHUNK_STEPS = 4096    # steps between looks at the clock


class TabuSearch:
    """Tabu search over ``net``, a :class:`._soft_arc_kernels.CostNetwork`.

    Parameters
    ----------
    net : CostNetwork
    seed : int, default=0
        The first run's random stream (each run takes the next).

    Attributes
    ----------
    best_labels : ndarray of int64 (n_vars,)
        The cheapest feasible labeling found (undefined while ``best_cost``
        is ``inf``).
    best_cost : float
        Its cost in ``net`` (``inf``: none found).
    hard : bool
        Whether some pair of labels that the unary costs allow is forbidden
        (an ``inf`` edge cost).
    """

    def __init__(self, net, *, seed=0):
        n = net.n_states.shape[0]
        K = net.K
        self.net = net
        tables = edge_tables(net).reshape(-1)  # (E * K * K,), first end's label first
        pair, unary = tables[np.isfinite(tables)], net.unary[np.isfinite(net.unary)]
        largest = (pair.max(initial=0.0) + unary.max(initial=0.0))
        penalty = PENALTY_SCALE * largest + 1.0
        self.settings = TabuSettings(penalty, max(TENURE_MIN, n // TENURE_VARS), STALL_STEPS,
                                     max(2, int(KICK_SHARE * n)))
        forbidden = tables == np.inf
        allowed = net.unary.reshape(n, K) < np.inf  # (n, K): False past a domain too
        ends = net.ends
        self.hard = bool((forbidden.reshape(-1, K, K) & allowed[ends[:, 0], :, None]
                          & allowed[ends[:, 1], None, :]).any())
        self.pairs = PenalizedPairs(np.where(forbidden, penalty, tables),
                                    forbidden.astype(np.int64))
        self.state = TabuState(np.zeros(n, dtype=np.int64), np.zeros(n * K),
                               np.zeros(n * K, dtype=np.int64), np.zeros(n * K, dtype=np.int64),
                               np.zeros(n, dtype=np.int64), np.full(n, np.inf), np.full(2, np.inf),
                               np.zeros(3, dtype=np.int64))
        self.seed = int(seed)
        self.started = False

    @property
    def best_labels(self):
        return self.state.best_labels.copy()

    @property
    def best_cost(self):
        return float(self.state.scalars[BEST])

    def restart(self, labels):
        """Go on from ``labels`` (n_vars,), every label allowed by the
        unary costs; the best labeling so far is kept when cheaper."""
        state = self.state
        labels = np.asarray(labels, dtype=np.int64)
        K = self.net.K
        n = self.net.n_states.shape[0]
        if labels.shape != (n,) or np.any(labels < 0) or np.any(labels >= self.net.n_states):
            raise ValueError(f"labels must be {n} labels within the variables' domains")
        barred = np.flatnonzero(self.net.unary[np.arange(n) * K + labels] == np.inf)
        if barred.size:
            raise ValueError(f"variable {barred[0]} is given label {labels[barred[0]]}, which "
                             "its unary cost forbids")
        keep_best = self.started and state.scalars[BEST] < np.inf
        best_labels, best_cost = state.best_labels.copy(), state.scalars[BEST]
        state.labels[:] = labels
        tabu_init(self.net, self.pairs, state)
        if keep_best and best_cost <= state.scalars[BEST]:
            state.best_labels[:] = best_labels
            state.scalars[BEST] = best_cost
        self.started = True

    def run(self, n_steps, deadline=None, stall=None):
        """``n_steps`` more steps (fewer if ``deadline``, a
        ``time.perf_counter()`` value, passes first, or, given ``stall``,
        once about that many steps in a row have not bettered the best);
        returns whether the best labeling improved.  Starts from each
        variable's cheapest label when :meth:`restart` was not called."""
        if not self.started:
            self.restart(np.argmin(self.net.unary.reshape(-1, self.net.K), axis=1))
        improved = False
        left = int(n_steps)
        # steps between looks at the clock (and at the best, given a stall)
        most = _CHUNK_STEPS if stall is None else max(1, min(_CHUNK_STEPS, int(stall) // 4))
        quiet = 0  # steps since the last chunk that bettered the best
        while left > 0:
            if deadline is not None and time.perf_counter() >= deadline:
                break
            if stall is not None and quiet >= stall:
                break
            chunk = min(left, most)
            better = bool(tabu_steps(self.net, self.pairs, self.state, self.settings, chunk,
                                     self.seed))
            improved |= better
            quiet = 0 if better else quiet + chunk
            self.seed += 1
            left -= chunk
        return improved
