"""The soft arc search with local searches between its slices.

A depth-first search proves an optimum sooner the sooner it holds it: on
generated weighted CSPs the optimum is often found late (after half to four
fifths of the nodes), and given from the start it cuts them 1.5-4.9x.  So after
``POLISH_FIRST_NODES`` nodes (or, under a deadline, once
``POLISH_FIRST_SHARE`` of the first run's time has passed, if that comes
first), and each time the nodes double, two local searches run from the best
labeling known and offer a better one to the search as its incumbent:

* the tabu search of :mod:`.tabu`, for ``TABU_STEPS_PER_NODE`` steps per node
  searched since its last slice (fewer on networks of more than
  ``TABU_FULL_RATE_VARS`` variables), a rate that grows after a slice that
  bettered the incumbent and decays after one that did not (it finds, within
  a fraction of a second, labelings the tree reaches only after seconds on
  some networks, and gives way on the others);
* an iterated local search (iterated conditional modes from random
  relabelled balls of variables, the LP back-ends'
  :class:`~..lp._lp_common.Problem` moves) for ``POLISH_ITERS_PER_NODE``
  iterations per node searched so far.

Their work is counted in nodes and steps, not seconds, so a run without a
deadline gives the same result on any machine.  The rates are small: a tabu
step costs about a hundredth of a node, and where neither search betters the
incumbent their slices are time the proof does not get back (at 25 steps and
half an iteration per node they took 5-20 % of the short proofs' time).
Under a short deadline the timed first slice matters: the tree's first dives
can hold poorer labelings than a tabu search finds in a few milliseconds.  It
runs as long as the search has, but on a network without forbidden pairs it
ends once ``TIMED_SLICE_STALL`` steps in a row have not bettered its best (on
Potts grids it had spent 40-50 % of proofs of 0.2-0.5 s past its last gain)."""

import time

import numpy as np

from ..lp._lp_common import Problem
from .soft_arc import SoftArcSearch
from .tabu import TabuSearch

__all__ = ["POLISH_FIRST_NODES", "POLISH_FIRST_SHARE", "POLISH_ITERS_PER_NODE",
           "PolishedSoftArcSearch"]

POLISH_FIRST_NODES = 1000
POLISH_FIRST_SHARE = 0.1  # of the first run's time to its deadline
TIMED_SLICE_MAX_STEPS = 10**7  # the timed first slice's tabu steps: its time bounds them
# ... or, on a network without forbidden pairs, this many steps in a row that
# do not better its best (there its gains come in the first few hundred steps,
# the descent from the incumbent; between the perturbations of networks with
# forbidden pairs they come thousands of steps apart)
TIMED_SLICE_STALL = 2048
POLISH_ITERS_PER_NODE = 0.2
# tabu steps per node searched since the last slice: TABU_STEPS_PER_NODE at
# first; times TABU_GROWTH (up to TABU_MAX_STEPS_PER_NODE) after a slice that
# bettered the incumbent, times TABU_DECAY after one that did not (the tabu
# search gives way where the tree finds the good labelings itself)
TABU_STEPS_PER_NODE = 10
TABU_MAX_STEPS_PER_NODE = 200
TABU_GROWTH = 2.0
TABU_DECAY = 0.25
# ... on networks of at most TABU_FULL_RATE_VARS variables; on larger ones the
# rates shrink in proportion (a step scans every variable, a node's
# propagation stays local: on Potts grids of 2,500-3,600 variables the slices
# at the full rate took 10-25 % of proofs of 0.25-0.5 s; on potts55_k6 the
# second of its two, 100 ms, bettered nothing)
TABU_FULL_RATE_VARS = 300
POLISH_BALL = 8        # variables relabelled at most per perturbation


class _Polisher:
    """The local search's state across the slices: its current labeling,
    the best one, its random stream, the next node count to run at and,
    before the first slice under a deadline, the time to run it at the
    latest."""

    def __init__(self, graph):
        self.graph = graph
        self._problem = None  # built at the first slice: most short proofs end before it
        self.rng = np.random.default_rng(0)
        self.walk = None  # the iterated local search's state (Problem.new_walk)
        self.next_nodes = POLISH_FIRST_NODES
        self.first_time = None  # set by the first run with a deadline
        self.first_start = None
        self.first_slice_done = False
        self.tabu = None
        self.tabu_nodes = 0  # nodes searched when the tabu search last ran
        self.tabu_rate = TABU_STEPS_PER_NODE
        self.tabu_scale = min(1.0, TABU_FULL_RATE_VARS / max(graph.n_vars, 1))

    @property
    def problem(self):
        if self._problem is None:
            self._problem = Problem(self.graph)
        return self._problem

    def tabu_slice(self, search, deadline, steps=None, stall=None):
        """Tabu search for ``steps`` steps (default: ``tabu_rate`` times
        ``tabu_scale`` per node searched since its last slice) or until
        ``deadline`` (or, given ``stall`` and a network without forbidden
        pairs, until that many steps in a row have not bettered its best),
        from the search's incumbent when that is cheaper than its own best;
        offers its best to ``search`` and adapts the rate."""
        if steps is None:
            steps = int(self.tabu_scale * self.tabu_rate * (search.n_nodes - self.tabu_nodes))
        self.tabu_nodes = search.n_nodes
        if steps <= 0:
            return
        if self.tabu is None:
            self.tabu = TabuSearch(search.net)
        tabu = self.tabu
        if tabu.hard:
            stall = None
        if search.cost < tabu.best_cost:
            tabu.restart(search.labels)
        tabu.run(steps, deadline, stall)
        if tabu.best_cost < search.cost:
            search.offer(tabu.best_labels)
            self.tabu_rate = min(TABU_GROWTH * self.tabu_rate, TABU_MAX_STEPS_PER_NODE)
        else:
            self.tabu_rate *= TABU_DECAY

    def polish(self, search, deadline):
        """Iterated local search (``POLISH_ITERS_PER_NODE`` steps per node
        searched so far) from its own walker, moved to the search's incumbent
        when that scores more; offers the best labeling it has seen to
        ``search`` when that is better."""
        pr = self.problem
        if self.walk is None:
            self.walk = pr.new_walk(search.labels, self.rng)
        walk = self.walk
        if search.score > walk.scores[0]:
            pr.restart_walk(walk, search.labels)
        pr.walk(walk, end=deadline,
                max_steps=int(POLISH_ITERS_PER_NODE * search.n_nodes), max_ball=POLISH_BALL)
        if walk.scores[1] > search.score:
            search.offer(walk.best.copy())
        self.next_nodes = 2 * search.n_nodes


class PolishedSoftArcSearch(SoftArcSearch):
    """A :class:`.SoftArcSearch` whose :meth:`run` lets the local search of
    this module improve the incumbent between its slices (the parameters and
    properties of :class:`.SoftArcSearch`, and ``polish``: False for a search
    that runs plain until :meth:`start_polishing`)."""

    def __init__(self, graph, *, tol=1e-6, incumbent=None, existential=True, best_first=True,
                 n_jobs=None, max_bytes=None, polish=True):
        super().__init__(graph, tol=tol, incumbent=incumbent, existential=existential,
                         best_first=best_first, n_jobs=n_jobs, max_bytes=max_bytes)
        self._polisher = _Polisher(graph)
        self.polishing = bool(polish)

    def start_polishing(self):
        """Let the local searches run from the next :meth:`run` on (nothing
        changes where they do already): their first slice comes after its
        first node, as long as the nodes searched so far ask for (their rates
        are per node), then they go on as from the start."""
        if not self.polishing:
            self.polishing = True
            self._polisher.next_nodes = self.n_nodes

    def run(self, *, max_nodes=None, deadline=None):
        """Search on for ``max_nodes`` more nodes and/or until ``deadline``;
        returns :attr:`proved`.

        On threads (:mod:`.soft_arc_threads`) the slices run in the calling
        thread while the helpers go on diving, instead of between runs."""
        if not self.polishing:
            return super().run(max_nodes=max_nodes, deadline=deadline)
        polisher = self._polisher
        stop = None if max_nodes is None else self.n_nodes + int(max_nodes)
        if deadline is not None and not polisher.first_slice_done and polisher.first_time is None:
            polisher.first_start = time.perf_counter()
            polisher.first_time = polisher.first_start + POLISH_FIRST_SHARE * max(
                deadline - polisher.first_start, 0.0)
        while not self.proved and not self.out_of_room:
            if deadline is not None and time.perf_counter() >= deadline:
                break
            if stop is not None and self.n_nodes >= stop:
                break
            if self._on_threads():
                self._between_dives = lambda: self._slice_if_due(deadline)
                try:
                    super().run(max_nodes=None if stop is None else stop - self.n_nodes,
                                deadline=deadline)
                finally:
                    self._between_dives = None
                continue
            target = polisher.next_nodes if stop is None else min(polisher.next_nodes, stop)
            timed = (deadline is not None and polisher.first_time is not None
                     and not polisher.first_slice_done)
            until = min(deadline, polisher.first_time) if timed else deadline
            super().run(max_nodes=max(target - self.n_nodes, 1), deadline=until)
            if not self.proved:
                self._slice_if_due(deadline)
        return self.proved

    def _slice_if_due(self, deadline):
        """The local searches' slice, when the search has reached the
        polisher's node count (or, before the first slice under a deadline,
        its time)."""
        polisher = self._polisher
        timed = (deadline is not None and polisher.first_time is not None
                 and not polisher.first_slice_done)
        due = self.n_nodes >= polisher.next_nodes or (
            timed and time.perf_counter() >= polisher.first_time)
        if not due:
            return
        early = self.n_nodes < polisher.next_nodes  # the timed first slice
        polisher.first_slice_done = True
        if self.score > -np.inf:
            if early:  # as long as the search has run: a node's share of steps is too few
                now = time.perf_counter()
                polisher.tabu_slice(self, min(deadline, 2 * now - polisher.first_start),
                                    steps=TIMED_SLICE_MAX_STEPS, stall=TIMED_SLICE_STALL)
            else:
                polisher.tabu_slice(self, deadline)
            polisher.polish(self, deadline)
        else:  # no incumbent yet: look again later
            polisher.next_nodes = 2 * self.n_nodes
