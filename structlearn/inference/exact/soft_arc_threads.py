"""The soft arc search's dives on several threads (:mod:`.soft_arc`).

Hybrid best-first search splits the tree into dives, each from an open node
rebuilt from the root's node: independent work but for the open nodes and
the incumbent.  With ``n_jobs`` threads, *helpers* (copies of the search
with their own state and workspace, sharing the network, the root's node and
the open nodes) take dives beside the search itself:

* a thread whose dive has ended takes the open node of least bound; the
  open nodes and each dive's end (which opens nodes) are handled under one
  lock, the dives themselves and the nodes' rebuilding run in compiled
  kernels that release the GIL;
* the least cost of a labeling any thread has found is shared at once
  (``soft_arc_search``'s ``crew`` array): it cuts every thread's next
  node; the labelings themselves are traded after each kernel call (about
  :data:`.soft_arc.CHUNK_SECONDS`, and at once after a better labeling);
* a thread with no open node to take waits for one and raises the crew's
  hunger flag, on which the busy threads' kernels return after their next
  node; a busy thread that sees a thread waiting (and no open node) hands
  it the right branch of the first level of its path (the dive then ends
  there instead of backtracking to it), so the threads share even the
  first dive's tree;
* when all wait, no node is left below the incumbent: the search is
  proved;
* the local searches of a :class:`.soft_arc_polish.PolishedSoftArcSearch`
  run in the search's own thread between its kernel calls
  (``SoftArcSearch._between_dives``) while the helpers go on diving.

The optimum is the same for any ``n_jobs`` (every node below the incumbent
is searched by some thread), the nodes searched and, among labelings of
equal cost, the one returned depend on the threads' timing.  Each thread
keeps its own ``dom / wdeg`` weights, and a copy of the search's state: a
search of state ``S`` bytes gets at most ``HELPERS_MAX_BYTES // S`` helpers.
The threads are the search's own whatever joblib back-end is configured
(``joblib.parallel_config``): processes would not share the open nodes.
"""

import threading
import time

import numpy as np

from ._soft_arc_kernels import (CREW_COST, CREW_HUNGRY, CREW_SHARED, DEPTH, DONE, NODES, PHASE,
                                ROUNDS, UPPER)

__all__ = ["HELPERS_MAX_BYTES", "THREADS_MIN_NODES", "dive_on_threads", "make_helpers"]

# nodes the search takes alone before helpers join it (the root's is 1: they
# join once it is evaluated).  A waiting helper is handed work from the first
# dive at once, and the nodes near the root cost the most (BENCHMARKS.md: on
# the generated weighted CSPs, helpers from the 64th node proved fewer within
# toulbar2's time)
THREADS_MIN_NODES = 1
# the helpers' copies of the search's state at most, together (a search's
# state when helpers start, its trail as it then is included): fewer helpers
# than threads where more would not fit
HELPERS_MAX_BYTES = 256 << 20


class _Crew:
    """What the threads share: the lock (and its condition) over the open
    nodes and the incumbent, the best labeling, the stop flag and how many
    wait for an open node."""

    def __init__(self, divers, stop_nodes, deadline):
        self.divers = divers
        self.cond = threading.Condition()
        self.stop = False
        self.idle = 0
        self.stop_nodes = stop_nodes
        self.deadline = deadline
        self.error = None
        best = min(divers, key=lambda d: d.state.scalars[UPPER])
        self.cost = float(best.state.scalars[UPPER])
        self.labels = best.state.labels.copy()
        self.signals = divers[0].crew  # the array every thread's kernel reads
        self.signals[CREW_COST] = min(self.signals[CREW_COST], self.cost)
        self.signals[CREW_HUNGRY] = 0.0
        self.signals[CREW_SHARED] = 1.0

    def nodes(self):
        return sum(int(d.state.counters[NODES]) for d in self.divers)

    def trade(self, diver):
        """Exchange incumbents with ``diver`` (under the lock)."""
        state = diver.state
        if state.scalars[UPPER] < self.cost:
            self.cost = float(state.scalars[UPPER])
            self.labels[:] = state.labels
        elif self.cost < state.scalars[UPPER]:
            state.scalars[UPPER] = self.cost
            state.labels[:] = self.labels
        self.signals[CREW_COST] = min(self.signals[CREW_COST], self.cost)

    def out_of_budget(self):
        return ((self.stop_nodes is not None and self.nodes() >= self.stop_nodes)
                or (self.deadline is not None and time.perf_counter() >= self.deadline))

    def capped(self, chunk):
        """``chunk`` nodes, or fewer where the node budget ends sooner (by
        the nodes all threads have searched so far)."""
        if self.stop_nodes is None:
            return chunk
        return max(min(chunk, self.stop_nodes - self.nodes()), 1)

    def halt(self):
        """Stop every thread (under the lock)."""
        self.stop = True
        self.cond.notify_all()


def _dive_on(diver, crew):
    """One thread's loop: dives from the open nodes until the crew stops."""
    chunk = 1
    try:
        while True:
            if diver._between_dives is not None:  # (the search's own thread only)
                with crew.cond:
                    crew.trade(diver)  # the local searches start from the crew's best
                diver._between_dives()
            node = None
            with crew.cond:
                crew.trade(diver)  # (first: a labeling found in the last call is kept)
                if crew.stop:
                    return
                if crew.out_of_budget():
                    crew.halt()
                    return
                if diver.state.counters[PHASE] == DONE:
                    node = diver._open.pop(diver._cutoff())
                    if node is None:
                        crew.idle += 1
                        if crew.idle == len(crew.divers):  # nothing is left anywhere
                            crew.halt()
                            return
                        crew.signals[CREW_HUNGRY] = 1.0
                        crew.cond.wait(_wait_seconds(crew))
                        crew.idle -= 1
                        if not crew.idle:
                            crew.signals[CREW_HUNGRY] = 0.0
                        continue
            start = time.perf_counter()
            before = int(diver.state.counters[NODES])
            if node is not None:
                diver._restore(node)
            else:
                diver._search_chunk(crew.capped(chunk))
                with crew.cond:
                    opened = len(diver._open)
                    diver._end_of_step()
                    if crew.idle and not len(diver._open):  # a thread waits for work
                        diver._hand_over()
                    # a waiting thread finds a node now, or asks again when it wakes
                    crew.signals[CREW_HUNGRY] = 0.0
                    if len(diver._open) > opened:
                        crew.cond.notify_all()
            done = int(diver.state.counters[NODES]) - before
            chunk = diver._next_chunk(chunk, start, done)
    except BaseException as exc:  # re-raised in the calling thread
        with crew.cond:
            crew.error = exc
            crew.halt()


def _wait_seconds(crew):
    """How long an idle thread sleeps at most before it looks at the budget
    again (a busy thread wakes it when it opens nodes)."""
    if crew.deadline is None:
        return 0.05
    return max(min(0.05, crew.deadline - time.perf_counter()), 0.0)


def dive_on_threads(search, stop_nodes, deadline):
    """Run ``search`` (a best-first :class:`.soft_arc.SoftArcSearch` past its
    root) and its helpers on their threads until it is proved, the crew has
    searched ``stop_nodes`` nodes in all (None: no limit) or ``deadline``
    passes; the search then holds the best incumbent found."""
    divers = [search] + search._helpers
    crew = _Crew(divers, stop_nodes, deadline)
    threads = [threading.Thread(target=_dive_on, args=(d, crew), daemon=True)
               for d in divers[1:]]
    for t in threads:
        t.start()
    _dive_on(search, crew)
    for t in threads:
        t.join()
    for diver in divers:  # every thread's last labeling, then the best to the search
        crew.trade(diver)
    crew.trade(search)
    if crew.error is not None:
        raise crew.error


def make_helpers(search, count):
    """``count`` copies of ``search`` (past its root) that share its network,
    root's node and open nodes, each with a state and workspace of its own
    and no dive under way."""
    import copy

    helpers = []
    for _ in range(count):
        h = copy.copy(search)
        # (the path's saved nodes and trail are written before they are
        # read: a dive starts from a rebuilt open node)
        h.state = search.state._replace(**{
            name: (np.empty_like(a) if name in ("saved_unary", "saved_shift", "trail_blocks",
                                                "trail_values")
                   else a if name == "pair" and search.net.spare == 0  # (the network's)
                   else np.array(a, copy=True))
            for name, a in search.state._asdict().items()})
        h.work = type(search.work)(*(np.array(a, copy=True) for a in search.work))
        h.state.counters[PHASE] = DONE
        h.state.counters[NODES] = h.state.counters[ROUNDS] = h.state.counters[DEPTH] = 0
        h._helpers = []
        h._between_dives = None
        h._restore_rounds = 0
        h._depth = 0
        helpers.append(h)
    return helpers
