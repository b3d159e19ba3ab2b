"""Exact MAP by best-first branch and bound over certified LP bounds.

Preprocessing (each step keeps a maximum-score labeling):

1. parallel factors are summed into one (:func:`merge_parallel_factors`);
2. forbidden labels are propagated from ``-inf`` entries
   (:func:`propagate_forbidden_labels`), which may prove the model
   infeasible;
3. dominated labels are forbidden (:func:`prune_dominated_labels`);
4. on a pairwise graph, the variables with one state are conditioned on,
   and on a binary one the variables that roof duality
   labels (one minimum cut, :mod:`.roof_duality`) are fixed and conditioned
   on too; on an attractive Potts model, those that Kovtun's one-against-all
   cuts label (:mod:`.potts_persistency`);
5. the graph is split into connected components, each solved on its own
   (isolated variables by their unary argmax, forests by exact max-product,
   pairwise components with forbidden pairs first by a depth-first branch
   and bound kept soft arc consistent (:mod:`.soft_arc`, for the share of
   their time that :func:`_soft_arc_first` sets),
   other pairwise components of at most :data:`DFBB_MAX_VARS` variables of
   fewer than 100 states first by a few milliseconds of depth-first branch
   and bound without LP (:mod:`.dfbb`), larger sparse ones by a few nodes a
   variable of the soft arc search (:func:`_sparse_soft_arc_first`),
   components whose enumeration costs at most :data:`ENUMERATION_WORK`
   (labelings times factors) by enumeration).

On every other component the relaxation is tightened once with its most
frustrated short cycles (:mod:`.tightening`) whose joint tables have at most
:data:`CHEAP_CLUSTER_ENTRIES` entries; where the root's gap on that
relaxation stays wide (:data:`WIDE_GAP`), the root starts again with the
larger cycle clusters too.  A pairwise root that leaves a gap restricts its
component to the labels its dual allows against the incumbent (reduced-cost
fixing, :mod:`.reduced_cost`) where that keeps at most
:data:`REDUCED_MAX_SHARE` of them, and the restriction, over those labels
only, is solved by this whole procedure as a graph of its own.  Otherwise a
search tree is explored best bound first.
A node is a subspace given by label constraints (``-inf`` unary scores on a
copy of the unary vector; the tables are shared); its bound
is the certified upper bound of an LP back-end run on it, and the back-end's
decoded labeling (after its local search) is offered as incumbent; the labels
that its dual rules out against the incumbent (``ad3``'s ``label_bounds``)
are forbidden in its subspace.  A back-end
that returns node beliefs (``ad3``) is branched on its most fractional free
variable and label, and each child starts from its parent's solver state
(multipliers, active sets; :attr:`MapResult.state`), so it re-converges in a
few iterations instead of solving from zero.  Otherwise a node is split on the
variable with the strongest interactions among those with two or more allowed
labels, around the label of the node's decoded labeling.  One child fixes the
variable to that label, the other forbids it.  Nodes whose bound is within the
tolerance of the incumbent are pruned (the back-end stops early with status
``"cutoff"`` once its bound falls there).  The search ends with a certified
optimum when no node is left, or at the time limit / node cap with the best
open bound.  On a small pairwise component whose root leaves a gap, the
depth-first search runs once more, from the root's incumbent, before any
branching (dense graphs with loose relaxations: one LP per node costs far more
than its cheap bounds); on a component with forbidden pairs the soft arc
consistent search resumes there instead, pruning against the root's
incumbent.  A small component whose root leaves a gap wider than
:data:`LOOSE_ROOT_GAP` is handed to the soft arc consistent search for all
of its time instead (its root solve stops at the first stall): its bound
proves what no LP-bounded tree closes.  That search runs first, for
:data:`SMALL_FIRST_SHARE` of the component's time, before the cycle search
and the LP root (from the short depth-first search's labeling); where the
component's variables have :data:`DENSE_MEAN_DEGREE` neighbours or more on
average it stops at FDAC* (no existential arc consistency).  The root starts
from its incumbent, and a loose root resumes it.
"""

import heapq
import time

import numpy as np

from ...graphs import (component_subgraphs, is_forest, merge_parallel_factors,
                      propagate_forbidden_labels, prune_dominated_labels)
from ...graphs.factor_graph import FactorGraph
from ..._parallel import check_n_jobs
from .._budget import check_time_limit
from ..lp._lp_common import COMMON_DEFAULTS, Problem, Tracker, iterated_conditional_modes
from .._progress import quiet, report
from .dfbb import pairwise_dfbb
from .ilp import n_columns, root_seconds
from .soft_arc import soft_arc_bytes
from .soft_arc_polish import PolishedSoftArcSearch
from ...graphs.structure import enumeration_is_cheap, labelings_at_most
from ..registry import (AUTO_CYCLES, AUTO_LARGE_DOMAIN, AUTO_SOFT_ARC_FORBIDDEN,
                       check_method_params, get_method, method_parameters, solve_map)
from ..result import MapResult
from .potts_persistency import kovtun_persistency
from .reduced_cost import drop_forbidden_labels, forbid_by_label_bounds, ruled_out
from .roof_duality import condition_pairwise, roof_dual

__all__ = ["branch_and_bound_map"]

ENUMERATION_WORK = 5_000_000  # components enumerated up to this many labelings x factors (~20 ms)
ROOT_MAX_ITER = 1000      # LP iterations at the root of a search tree
NODE_MAX_ITER = 200       # and at every other node
STALL_ITER = 25           # a node's LP stops once its bound fell < 1e-6 (relative) for this long
CHILD_STALL_ITER = 5      # the same for a child started from its parent's state
WIDE_STALL_ITER = 100     # the same for a root whose gap is wide (WIDE_GAP)
DEFAULT_MAX_NODES = 1000  # node cap without a time limit
FRACTIONAL = 1e-3         # a variable whose largest belief is below 1 - this is fractional
WIDE_GAP = 1e-2           # a relative gap this wide is left to the LP and the local search
CHEAP_CLUSTER_ENTRIES = 1024  # clusters up to this size first; larger ones for a wide root gap
STATE_BYTES = 256 << 20   # solver states kept for open nodes at most (then children start cold)
DFBB_MAX_VARS = 64        # pairwise components up to this size (domains below
                          # AUTO_LARGE_DOMAIN) try the depth-first search:
DFBB_FIRST_WORK = 10**7   # first for about this many operations (a few ms) before any LP,
SPARSE_DFBB_FIRST_SHARE = 0.03  # (this share of them on the sparsest and larger ones: see below)
DFBB_WORK = 4 * 10**8     # then from the root's incumbent for about this many
DFBB_OPS_PER_SECOND = 2 * 10**8  # a cautious rate of those operations (under a time limit)
CYCLE_ENTRIES_PER_SECOND = 10**8  # and of the cycle search's candidate entries
# a component with hard constraints (forbidden entries) whose local-polytope
# MILP has at most this many columns, and that a first search over
# MILP_FIRST_SHARE of its time (at most MILP_FIRST_SECONDS) does not prove, is
# handed to HiGHS (``ilp``) for as long; then the search runs its full share.
# On weighted constraint networks HiGHS' cuts often prove what the LP-bounded
# search cannot.
MILP_FIRST_MAX_COLUMNS = 200_000
# a pairwise component with hard constraints (AUTO_SOFT_ARC_FORBIDDEN of its
# table entries forbidden or more) first gets the search kept soft arc
# consistent (:mod:`.soft_arc`, hybrid best-first; where it fits, see
# _soft_arc_fits):
# under a time limit for SOFT_ARC_FIRST_SHARE of the component's time, or all
# of it up to SOFT_ARC_SOLO_SECONDS, whichever is longer (its own bound, within
# a few percent of the local polytope's, certifying what it leaves open when
# the time is up); without one for LOOSE_SOFT_ARC_NODES nodes per node of
# ``max_nodes`` (a million by default), at least SOFT_ARC_FIRST_NODES: its
# nodes cost 0.1-0.2 ms on weighted CSPs of 50-70 variables, the LP-bounded
# ones 0.3 s, and with SOFT_ARC_FIRST_NODES alone the LP route went on to its
# node limit after 330 s on a network the search proves in 6 s.  Then it
# stands in for the depth-first search resumed after the LP root (for that
# share of the time left).
# On weighted constraint networks its bound prunes whole subtrees where each
# LP-bounded node costs milliseconds; the LP root, HiGHS' slices and the
# LP-bounded nodes slowed its proofs at 20 s and its scores at 1 s, but gave
# better labelings late in minute-long runs.  On real-valued tables (the UAI
# sets: no forbidden pair, or labels forbidden only by dominance) the LP root
# proves more in less time.
SOFT_ARC_MAX_BYTES = 64 << 20
# (its state at first, soft_arc_bytes, see _soft_arc_fits; the search is given
# the limit, and stops for good where its trail would outgrow it, leaving the
# component to the LP route).  On hard-constrained components the limit is
# SOFT_ARC_HARD_MAX_BYTES: there the LP route found no labeling at all in 10 s
# on weighted CSPs of 250-400 variables and 15-20 labels, where the search
# finds better ones than toulbar2's or proves the optimum (its peaks 14-48 MB).
# Until 2026-12-02 the bytes of n whole saved nodes (8 (n + 1)(n + 2 E) K, which
# a trail holds at worst) had to fit as well, which kept grids from 25 x 25 on
# from the search; with variables of two free neighbours eliminated from the
# root on it proves a 50 x 50 grid of 8 labels in 85 nodes (0.09 s), where
# the LP route took 1.4 s.
SOFT_ARC_HARD_MAX_BYTES = 256 << 20
SOFT_ARC_FIRST_SHARE = 0.5
SOFT_ARC_SOLO_SECONDS = 20.0
# ... less SOFT_ARC_LP_BOUND_SHARE of it when that is at least MILP_MIN_SECONDS:
# the LP root then certifies a bound 5-10 % tighter than the search's own
SOFT_ARC_LP_BOUND_SHARE = 0.05
SOFT_ARC_FIRST_NODES = 20_000
MILP_FIRST_SHARE = 0.1
MILP_FIRST_SECONDS = 1.0
# HiGHS is not called for less than this many seconds, nor for less than
# :func:`.ilp.root_seconds` of its program: it reads its time limit between
# phases only, and its root LP alone can take longer.  On wcsp50_d20_f30_s3
# (19,603 columns) 0.02 s asked took 0.72 s, and 1 s limits were overrun by
# up to 0.37 s; on potts_grid_k21 (20 x 20, 21 labels, 343,560 columns) a
# stalled search handed HiGHS 4.7 s of its 10 s and the call ended at 11.2 s,
# where the search given the whole time proves the optimum in 6.2 s.
MILP_MIN_SECONDS = 0.25
# a component whose MILP has at most MILP_STALL_MAX_COLUMNS columns (HiGHS
# took about 1 GB at 300,000) and whose search, under a time limit, still
# leaves a gap after MILP_STALL_SHARE of its time, but at most MILP_STALL_GAP
# of its score, is handed to HiGHS for the rest (the search keeps its time
# where the gap is wider: HiGHS rarely closes a loose relaxation sooner).
# On attractive 50 x 50 Potts grids with 8 labels the LP-bounded search ends
# 30 s at a 5e-6 relative gap where HiGHS' cuts prove the optimum in 11 s.
MILP_STALL_MAX_COLUMNS = 500_000
MILP_STALL_SHARE = 0.5
MILP_STALL_GAP = 1e-3
# a root that leaves a gap is followed by the search of the component with
# the labels its dual rules out forbidden (:mod:`.reduced_cost`; solved as a
# graph of its own: conditioned, split and searched again), where at most
# this share of the allowed labels is left
REDUCED_MAX_SHARE = 0.5
# a small pairwise component without forbidden pairs (a ``dfbb_graph``) whose
# root leaves a relative gap wider than LOOSE_ROOT_GAP is handed to the soft
# arc consistent search (:mod:`.soft_arc`) for all of its time (without a
# time limit: for LOOSE_SOFT_ARC_NODES of its nodes per LP node left): on
# dense graphs with loose relaxations (complete 16-variable graphs with 6
# labels: a 55 % gap at the root after 4 s of AD3) no LP-bounded tree closes
# the gap, where the search's bound proves the optimum in seconds.  A sparser
# one (fewer than DENSE_MEAN_DEGREE neighbours) is handed over from a gap of
# SPARSE_LOOSE_ROOT_GAP: on random graphs of 40-64 variables with N(0, 1)
# tables the LP tree took 0.7-8.9 s over gaps of 1-5 % that the search closes
# in 0.05-0.15 s
LOOSE_ROOT_GAP = 0.05
LOOSE_SOFT_ARC_NODES = 1000
# ... searched without existential arc consistency (FDAC* only) where its
# variables have this many neighbours or more on average: the existential
# checks run over every edge of a variable, and on complete graphs of 14-22
# variables cost more than the nodes they save (1.2-4x slower proofs), where
# on grids and weighted constraint networks (4-6 neighbours) they pay
DENSE_MEAN_DEGREE = 12
# a small component (a ``dfbb_graph``, without the forbidden entries that send
# it to the soft arc search anyway) first gets that search for
# SMALL_FIRST_SHARE of its time (without a time limit, SOFT_ARC_FIRST_NODES
# nodes) before the cycle search and the LP root: on complete 14-15-variable
# graphs those two took 0.4-0.5 s of the 0.6 s to a proof the search alone
# reaches in 0.15 s; on sparse random graphs of 30-64 variables with N(0, 1)
# tables it proves in 0.01-0.2 s (one in 1.6 s) what the LP route took
# 0.05-3.3 s for.  A root that is loose then resumes the same search, for
# the rest of the time with the local searches between its slices
# (:class:`.PolishedSoftArcSearch`, from then on only: in the first share
# they cost 1.1-1.7x on proofs of 0.1-2 s; on random41_p23_k6_s82, which
# neither the search nor toulbar2 proves in 10 s, the plain search ended 2.61
# below toulbar2).
SMALL_FIRST_SHARE = 0.25
# The depth-first search before it gets SPARSE_DFBB_FIRST_SHARE of its
# DFBB_FIRST_WORK where the variables have fewer than SPARSE_DFBB_MEAN_DEGREE
# neighbours on average: on such random graphs of 36-64 variables that the
# soft arc search proves in a few milliseconds after it, its 5-12 ms of the
# whole work went unused (random42_p12_k4_s61: 17 nodes of that search, 15 ms
# in all, toulbar2 3 ms; 6 ms with a tenth of it; in a warm loop since, 2.0 ms
# with a tenth, 1.5 ms with 3 %: on 7 x 7 and 8 x 8 grids and 12 held-out
# random graphs of 34-62 variables 3 % took 0-25 % off a tenth's time,
# random56_p9_k5_s203 1.22 -> 1.05 s; but random52_p9_k5_s43 46 -> 71 ms,
# toulbar2 103 ms).  On denser ones it often proves first:
# complete12_k5, complete12_k6 (11 neighbours) and random31_p27_k6_s71 (8) in
# 3-94 ms, against 12-165 ms after the shorter run; ImageAlignment_12 and
# ProteinFolding_15 (19-29 neighbours) in 9-14 ms against 50-70 ms.
SPARSE_DFBB_MEAN_DEGREE = 6
# Denser components of more than DFBB_FULL_FIRST_MAX_VARS variables whose
# domains have fewer than DFBB_FULL_FIRST_MIN_STATES labels get the shorter
# run too: on 46 random graphs of 17-48 variables, 3-6 labels and 7-35
# neighbours the shorter run was faster on 34 (its 6-18 ms came before soft
# arc proofs of 2-10 ms: random32_p26_k4_s78 14.5 -> 2.6 ms, toulbar2 6 ms;
# random31_p27_k6_s71, which the full run once proved first, 65 -> 59 ms),
# slower on 7 (random40_p20_k4_s4 106 -> 137 ms: the full run's incumbent
# helps the search there; 7-50 % on six of 17-21 variables).  With larger
# domains a node of the soft arc search costs more (its edge scans grow with
# the labels squared, the depth-first search's with the labels):
# ImageAlignment_12 (30 variables, 58 labels) and ProteinFolding_15 (50, 47)
# took 18-28 ms after the shorter run against 8-12 ms; 12 random graphs of 8
# and 12 labels took the same time either way.
DFBB_FULL_FIRST_MAX_VARS = 16
DFBB_FULL_FIRST_MIN_STATES = 9
# a sparse pairwise component too large for the depth-first search (more than
# DFBB_MAX_VARS variables, domains below AUTO_LARGE_DOMAIN, fewer neighbours
# than DENSE_MEAN_DEGREE, no forbidden entries to send it to the soft arc
# search anyway) where the soft arc search fits (_soft_arc_fits) first
# gets that search (with the local searches) for SPARSE_FIRST_NODES_PER_VAR
# nodes a variable, at most SPARSE_FIRST_SHARE of its time: it proves the
# small frustrated and attractive Potts grids (18 x 18 to 24 x 24, 4-10
# labels) and Segmentation_11 in 0.6 nodes a variable or fewer, 1.6-7x sooner
# than the LP route.  A root that then leaves a relative gap wider than
# SPARSE_LOOSE_ROOT_GAP resumes that search in place of the depth-first search
# (SOFT_ARC_FIRST_SHARE of the time left), then the LP-bounded tree goes on:
# on sparse random graphs of 70-200 variables (N(0, 1) tables) the tree alone
# leaves gaps of 0.8-2 % after 10 s that the search's own bound closes in
# 0.01-4 s; the tree's later incumbents are the better ones where neither
# proves (all the time to the search lost 0.3-1.5 on three of six such
# networks at 10 s).  (A narrower gap, 0.1 %, took random300_p1_k5_s22, root
# 0.6 %, to a proof in 2-4 s that the tree does not reach in 10 s, but
# potts_grid_k21, root 0.7 %, lost its proof in 5.7 s: the search does not
# close it, and HiGHS then has too little time.)
# A first search over more than SPARSE_RESUME_MAX_VARS variables is not
# resumed (the rule was set on graphs of 70-300; a 40 x 40 binary grid,
# Grids_18, which the search does not prove, scored 12,970 against 13,055 at
# 10 s when its LP route lost that time): its nodes are lost unless it
# proves, so it runs UNRESUMED_FIRST_NODES_PER_VAR nodes a variable only.
# One that may be resumed loses them only where the root is tight, so it runs
# more: on sparse random graphs of 70-130 variables that the search proves in
# 5-30 nodes a variable, the 4 a variable it had left it to the LP root and a
# first tabu slice as long (0.1-0.15 s each, 1.5-2.5x toulbar2's time where
# the search alone takes 0.3-0.9x); 32 took 7 of 20 held-out such graphs to
# 0.3-0.6x the time, the others the same.
# Under a short limit a first search whose relative gap is at most
# SPARSE_FIRST_FLOOR_GAP at the end of its share runs on until
# SPARSE_FIRST_FLOOR seconds or SPARSE_FIRST_FLOOR_SHARE of the time left
# have passed, whichever is sooner: at 1 s a tenth (0.1 s) fell short of the
# grids' proofs in 0.11-0.47 s (potts60_k8, potts50_k4, apotts50_k4,
# apotts50_k8, potts55_k6, apotts45_k8), which the LP route then did not
# reach; their gaps after 0.1 s are 1e-4 to 2e-3.  On sparse random graphs
# (gaps of 2-11 % then) the same floor proved two in 0.1-0.2 s but took the
# LP route's time from the others: random250_p2_k3_s23 ended 0.68 lower.
SPARSE_FIRST_SHARE = 0.1
SPARSE_FIRST_FLOOR = 0.5
SPARSE_FIRST_FLOOR_SHARE = 0.5
SPARSE_FIRST_FLOOR_GAP = 1e-2
SPARSE_FIRST_NODES_PER_VAR = 32
UNRESUMED_FIRST_NODES_PER_VAR = 4
SPARSE_LOOSE_ROOT_GAP = 1e-2
SPARSE_RESUME_MAX_VARS = 500


def _interaction_strength(graph):
    """Per variable: the summed score range (max - min of the finite
    entries) of the tables of its factors."""
    data = np.where(np.isfinite(graph.table_data), graph.table_data, np.nan)
    ranges = np.zeros(graph.n_tables)
    sizes = np.diff(graph.table_offsets)
    nonempty = np.flatnonzero(sizes > 0)
    if nonempty.size:
        starts = graph.table_offsets[nonempty]
        with np.errstate(invalid="ignore"):
            hi = np.fmax.reduceat(data, starts)
            lo = np.fmin.reduceat(data, starts)
        ranges[nonempty] = np.nan_to_num(hi - lo)
    per_entry = np.repeat(ranges[graph.table_ids], graph.factor_orders)
    return np.bincount(graph.scope_vars, weights=per_entry, minlength=graph.n_vars)


class _Node:
    """A subspace: its parent's constraints plus ``x[var] == label`` (``fix``)
    or ``x[var] != label``, less the labels its own solve ruled out
    (``pruned``: flat unary indices, or None)."""

    __slots__ = ("parent", "var", "label", "fix", "depth", "pruned")

    def __init__(self, parent, var, label, fix):
        self.parent = parent
        self.var = var
        self.label = label
        self.fix = fix
        self.depth = 0 if parent is None else parent.depth + 1
        self.pruned = None

    def unary(self, graph):
        """The unary vector of ``graph`` with this subspace's constraints."""
        u = graph.unary.copy()
        node = self
        while node is not None:
            if node.pruned is not None:
                u[node.pruned] = -np.inf
            if node.parent is not None:
                lo = graph.unary_offsets[node.var]
                if node.fix:
                    keep = u[lo + node.label]
                    u[lo:graph.unary_offsets[node.var + 1]] = -np.inf
                    u[lo + node.label] = keep
                else:
                    u[lo + node.label] = -np.inf
            node = node.parent
        return u


class _Search:
    """Branch and bound on one connected component."""

    def __init__(self, graph, score_graph, method, params, deadline, tol, max_nodes, t0,
                 history, richer=None, dfbb_graph=None, soft_search=None):
        self.graph = graph              # tightened, with dominated labels forbidden
        # solves a restriction of score_graph, (graph, time_limit, max_nodes) -> MapResult,
        # after a root that leaves a gap (None: no restriction)
        self.restricted = None
        self.root_bounds = None         # the root's label_bounds
        self.root_cut = -np.inf         # the cutoff the root's pruned labels were last cut at
        self.dfbb_graph = dfbb_graph    # not tightened, for the depth-first search (or None)
        self.soft_search = soft_search  # a (Polished)SoftArcSearch to resume instead (or None)
        self.soft_whole = False         # whether it takes all the time left (a loose
                                        # root of a small component)
        # a small or larger sparse component's soft arc search already run for
        # a first slice: its incumbent seeds this search, and a loose root
        # resumes it (or None)
        self.loose_search = None
        self.n_jobs = None  # the soft arc search's threads
        self.richer = richer            # tightened with larger clusters too (or None)
        self.score_graph = score_graph  # the component as given (scores labelings)
        self.method = method
        self.params = dict(params)
        self.root_iter = self.params.pop("max_iter", ROOT_MAX_ITER)
        self.root_polish = self.params.pop("polish", 1.0)
        # a caller's bound_stall_iter applies at every node
        self.child_stall = None if "bound_stall_iter" in self.params else CHILD_STALL_ITER
        if "bound_stall_iter" in method_parameters(method):
            self.params.setdefault("bound_stall_iter", STALL_ITER)
        self.deadline = deadline
        self.tol = tol
        self.max_nodes = max_nodes
        self.t0 = t0
        self.history = history
        self.order = np.argsort(-_interaction_strength(graph), kind="stable")
        self.labels = None
        self.score = -np.inf
        self.n_nodes = 0
        self.last_eval = 0.0  # seconds the last node evaluation took
        self.heap = []  # open nodes: (-bound, -depth, counter, node, (var, label), state)
        self.warm = "init_state" in method_parameters(method)
        self.state_bytes = 0  # held by the open nodes' states
        self.polisher = None
        # perf_counter() time at which the search stops (status "time_limit")
        # if its gap is at most MILP_STALL_GAP of its score (None: never)
        self.hand_off_at = None

    def _cutoff(self):
        if not np.isfinite(self.score):
            return None
        return self.score + self.tol * max(1.0, abs(self.score))

    def _evaluate(self, node, max_iter, polish, state=None, stall=None):
        """Solve the LP on ``node`` (from ``state`` where given; ``stall``: its
        ``bound_stall_iter``, default the search's); offer its labeling;
        return its bound, the ``(variable, label)`` to branch on (``None``
        for a leaf) and the back-end's final state."""
        started = time.perf_counter()
        if node.parent is None:
            res, bound = self._solve_root(max_iter, polish)
            unary = self.graph.unary  # the root constrains nothing
            self.root_bounds = res.label_bounds
        else:
            unary = node.unary(self.graph)
            res = self._solve(unary, max_iter, polish, state, stall)
            bound = np.inf
        g = self.graph
        self.n_nodes += 1
        self.last_eval = time.perf_counter() - started
        if res.status == "infeasible":
            return -np.inf, None, None
        self._offer(res)
        ub = min(res.upper_bound, bound)
        unary, pruned = self._prune(node, unary, res.label_bounds)
        allowed = np.add.reduceat(np.isfinite(unary).astype(np.int64), g.unary_offsets[:-1])
        if pruned and np.any(allowed == 0):  # nothing in it beats the incumbent
            return -np.inf, None, None
        free = self.order[allowed[self.order] >= 2]
        if not free.size:
            if pruned:  # its one labeling left need not be the decoded one
                return self._leaf(unary), None, None
            # every variable fixed: the decoded labeling is the subspace's only one
            return (ub if np.isfinite(res.score) else -np.inf), None, None
        return ub, self._branch(res, unary, free), res.state

    def _prune(self, node, unary, label_bounds):
        """Forbid in ``node``'s subspace the labels whose bound from its solve
        (``label_bounds``, None: none) is at most the incumbent's cutoff
        (reduced-cost fixing); returns the node's unary vector with them
        forbidden and whether any was."""
        cut = self._cutoff()
        if label_bounds is None or cut is None:
            return unary, False
        dead = ruled_out(unary, label_bounds, cut)
        if not dead.size:
            return unary, False
        node.pruned = dead
        if node.parent is None:  # cut at this cutoff (see _reprune_root)
            self.root_cut = cut
        unary = unary.copy()
        unary[dead] = -np.inf
        return unary, True

    def _reprune_root(self, root):
        """After a better incumbent, forbid again at the root (so in every
        subspace evaluated from now on) the labels whose bound from the
        root's solve is at most its cutoff."""
        cut = self._cutoff()
        if self.root_bounds is None or cut is None or cut <= self.root_cut:
            return
        self.root_cut = cut
        root.pruned = ruled_out(self.graph.unary, self.root_bounds, cut)

    def _leaf(self, unary):
        """Offer the one labeling that ``unary`` allows (one finite label per
        variable) and return its score."""
        offsets = self.graph.unary_offsets
        return self._adopt(np.flatnonzero(np.isfinite(unary)) - offsets[:-1])

    def _offer(self, res):
        """Adopt the labeling of a node's solve if it beats the incumbent."""
        if np.isfinite(res.score):
            self._adopt(res.labels.copy())

    def _adopt(self, labels):
        """Score ``labels`` (the component's scores), keep them if they beat
        the incumbent, and return their score."""
        s = float(self.score_graph.score(labels))
        if s > self.score:
            self.score, self.labels = s, labels
            self._record()
        return s

    def _solve_root(self, max_iter, polish):
        """The root's solve and a certified bound of an earlier solve of it.

        A root whose bound stalls with a wide gap (:data:`WIDE_GAP`) on the
        cheap clusters starts again, cold, on the relaxation with the larger
        ones (``richer``).  A root whose bound then stalls with a wide gap
        goes on from its state until the bound stalls for
        :data:`WIDE_STALL_ITER` iterations (under a time limit, past
        ``max_iter``): a tree cannot close such a gap, while the LP still
        tightens it and the root's solve polishes the labeling.  A loose root
        (:meth:`_loose`) stops at its first solve: the soft arc search takes
        the component with a bound of its own.
        """
        bound = np.inf
        res = self._solve(self.graph.unary, max_iter, polish, None, None)
        self._offer(res)
        if self._loose(res.upper_bound):
            return res, bound
        if (res.status == "stall" and self.richer is not None
                and self._wide(res.upper_bound, res.score)):
            bound = res.upper_bound
            self.graph, self.richer = self.richer, None
            self.order = np.argsort(-_interaction_strength(self.graph), kind="stable")
            res = self._solve(self.graph.unary, max_iter, polish, None, None)
        if (res.status == "stall" and res.state is not None and res.n_iter < max_iter
                and self._wide(res.upper_bound, res.score)):
            self._offer(res)
            more = 10**9 if self.deadline is not None else max_iter - res.n_iter
            wide_stall = WIDE_STALL_ITER if self.child_stall is not None else None
            res = self._solve(self.graph.unary, more, polish, res.state, wide_stall)
        return res, bound

    def _solve(self, unary, max_iter, polish, state, stall):
        """The back-end's solve of the component with ``unary`` (constraints
        as ``-inf``), from ``state``, with ``stall`` as ``bound_stall_iter``
        (None: the search's)."""
        sub = self.graph.with_unary(unary)
        until = self._until()
        left = until - time.perf_counter() if until is not None else None
        extra = {"init_state": state} if self.warm else {}
        if stall is not None and "bound_stall_iter" in self.params:
            extra["bound_stall_iter"] = stall
        with quiet():
            return solve_map(sub, self.method,
                             time_limit=None if left is None else max(left, 1e-3),
                             max_iter=max_iter, cutoff=self._cutoff(), polish=polish,
                             **{**self.params, **extra})

    @staticmethod
    def _wide(ub, score):
        """Whether the gap between ``ub`` and ``score`` is one a tree search
        is unlikely to close (relative :data:`WIDE_GAP`)."""
        return _relative_gap(score, ub) > WIDE_GAP

    def _branch(self, res, unary, free):
        """The ``(variable, label)`` to split a node on.

        The most fractional free variable of the node beliefs and its most
        believed allowed label (ties: stronger interactions first); without
        beliefs or a fractional variable, the strongest free variable and its
        decoded label (its first allowed label when nothing was decoded).
        """
        g = self.graph
        offsets = g.unary_offsets
        if res.beliefs is not None:
            belief = np.where(np.isfinite(unary), res.beliefs, -np.inf)
            top = np.maximum.reduceat(belief, offsets[:-1])[free]
            pick = int(np.argmin(top))  # first of the ties in strength order
            if top[pick] < 1.0 - FRACTIONAL:
                v = int(free[pick])
                return v, int(np.argmax(belief[offsets[v]:offsets[v + 1]]))
        v = int(free[0])
        if np.isfinite(res.score):
            return v, int(res.labels[v])
        return v, int(np.flatnonzero(np.isfinite(unary[offsets[v]:offsets[v + 1]]))[0])

    def run(self):
        """Search; returns ``(labels, score, upper_bound, status)``."""
        root = _Node(None, -1, -1, False)
        if self.loose_search is not None and np.isfinite(self.loose_search.score):
            self._adopt(self.loose_search.labels.copy())
        ub, branch, state = self._evaluate(root, self.root_iter, self.root_polish)
        if branch is not None and self._open(ub) and self._loose(ub):
            g = self.dfbb_graph
            self.soft_search = self.loose_search or PolishedSoftArcSearch(
                g, tol=self.tol, existential=not _dense(g), n_jobs=self.n_jobs,
                max_bytes=SOFT_ARC_MAX_BYTES, polish=False)
            # (a larger sparse one's search stands in for the depth-first
            # search: half the time left, then the LP-bounded tree)
            self.soft_whole = g is not None
        if branch is not None and self._open(ub) and self._depth_first(DFBB_WORK):
            branch = None  # proved optimal by the depth-first search
        if branch is not None and self._open(ub) and self.soft_whole:
            return self._soft_arc_ended(ub)
        if branch is not None and self._open(ub):
            done = self._search_restricted()
            if done is not None:
                return done
        heap, counter = self.heap, 0
        if branch is not None and self._open(ub):
            self._push(ub, root, branch, state, counter)
            self.polisher = self._polisher()
        status = "exact"
        while heap:
            if self._out_of_time() or self._hand_off():
                status = "time_limit"
                break
            if self.n_nodes >= self.max_nodes:
                status = "node_limit"
                break
            neg_ub, _, _, node, (v, lab), state = heapq.heappop(heap)
            if state is not None:
                self.state_bytes -= state.nbytes
            if not self._open(-neg_ub):
                continue
            for fix in (True, False):
                child = _Node(node, v, lab, fix)
                counter += 1
                if self._out_of_time():
                    # not evaluated: its subspace stays open under the parent's bound
                    heapq.heappush(heap, (neg_ub, -child.depth, counter, child, None, None))
                    continue
                stall = self.child_stall if state is not None else None
                cub, cbranch, cstate = self._evaluate(child, NODE_MAX_ITER, 0.0, state, stall)
                cub = min(cub, -neg_ub)
                if cbranch is not None and self._open(cub):
                    self._push(cub, child, cbranch, cstate, counter)
            self._polish()
            self._reprune_root(root)
            self._record()
        open_bound = max((-e[0] for e in heap if self._open(-e[0])), default=-np.inf)
        if status == "exact" or not np.isfinite(open_bound):
            status = "exact"
            open_bound = self.score
        self._record()
        return self._final_labels(), self.score, max(open_bound, self.score), status

    def _depth_first(self, work):
        """Run the depth-first branch and bound (:mod:`.dfbb`) from the
        incumbent for about ``work`` operations (nodes times variables times
        states), or resume the soft arc consistent search for as long at
        :data:`DFBB_OPS_PER_SECOND`; returns whether it proved its labeling
        optimal."""
        if self.soft_search is not None:
            return self._resume_soft_arc(work)
        g = self.dfbb_graph
        if g is None:
            return False
        if self.deadline is not None:  # stay within the limit at a cautious rate
            work = min(work, int((self.deadline - time.perf_counter()) * DFBB_OPS_PER_SECOND))
            if work <= 0:
                return False
        budget = max(work // (g.n_vars * int(g.n_states.max())), 1)
        labels, score, proved, _ = pairwise_dfbb(g, max_nodes=budget, tol=self.tol,
                                                 incumbent=self.labels)
        if score > self.score:
            self.score, self.labels = score, labels
        return proved and score > -np.inf

    def _search_restricted(self):
        """Solve the component restricted to the labels that the root's
        dual leaves (reduced-cost fixing, :func:`.forbid_by_label_bounds`
        against the incumbent) where that keeps at most
        :data:`REDUCED_MAX_SHARE` of them, as a graph of its own over those
        labels (:func:`.drop_forbidden_labels`); returns :meth:`run`'s
        tuple, or None where nothing is restricted.

        Every labeling better than the incumbent (by more than the
        tolerance) is a labeling of the restriction, so its optimum or the
        incumbent is the component's, and its bound or the incumbent's score
        bounds the component.
        """
        cut = self._cutoff()
        if (self.restricted is None or self.root_bounds is None or cut is None
                or self.n_nodes >= self.max_nodes  # (a root-only search stays one)
                or np.any(self.score_graph.factor_orders != 2)):
            return None
        now = time.perf_counter()
        left = None if self.deadline is None else self.deadline - now
        if left is not None and left <= self.last_eval:
            return None
        graph = forbid_by_label_bounds(self.score_graph, self.root_bounds, cut,
                                       REDUCED_MAX_SHARE)
        if graph is None:
            return None
        compact, original = drop_forbidden_labels(graph)
        if compact is None:  # a variable without a label: nothing better than the incumbent
            return self.labels, self.score, self.score, "exact"
        # (its history is not spliced in: it scores its own components, conditioned)
        res = self.restricted(compact, left, self.max_nodes - self.n_nodes)
        self.n_nodes += res.n_iter
        if res.status == "infeasible":
            return self.labels, self.score, self.score, "exact"
        if res.score > self.score:
            self.score = res.score
            self.labels = original[compact.unary_offsets[:-1] + res.labels]
        self._record()
        return self.labels, self.score, max(res.upper_bound, self.score), res.status

    def _soft_arc_ended(self, ub):
        """:meth:`run`'s tuple after a loose root's soft arc search ran out of
        time (or nodes) unproved: the tighter of its bound and the root's."""
        bound = max(min(ub, self.soft_search.upper_bound), self.score)
        self._record()
        return self._final_labels(), self.score, bound, ("node_limit" if self.deadline is None
                                                         else "time_limit")

    def _final_labels(self):
        """The incumbent, or zeros when no finite labeling was found (nor
        proved absent)."""
        if self.labels is None:
            self.labels = np.zeros(self.graph.n_vars, dtype=np.int64)
        return self.labels

    def _loose(self, ub):
        """Whether the root's bound ``ub`` leaves a gap wider than
        :data:`LOOSE_ROOT_GAP` on a small dense pairwise component without a
        soft arc search (see :data:`LOOSE_ROOT_GAP`), or wider than
        :data:`SPARSE_LOOSE_ROOT_GAP` on a small sparse one or on a larger
        sparse one (of at most :data:`SPARSE_RESUME_MAX_VARS` variables) whose
        first search (:attr:`loose_search`) is left to resume (for a share of
        the time only: see :data:`SPARSE_FIRST_SHARE`)."""
        if self.soft_search is not None or not np.isfinite(ub):
            return False
        if self.loose_search is None and (self.dfbb_graph is None
                                          or not _soft_arc_fits(self.dfbb_graph)):
            return False
        if self.loose_search is not None and not _resumable(self.score_graph):
            return False
        g = self.dfbb_graph
        gap = LOOSE_ROOT_GAP if g is not None and _dense(g) else SPARSE_LOOSE_ROOT_GAP
        return _relative_gap(self.score, ub) > gap

    def _resume_soft_arc(self, work):
        """:meth:`_depth_first` by the resumable soft arc search (:mod:`.soft_arc`),
        pruning against the incumbent: for ``work`` operations' time without a
        deadline, else for :data:`SOFT_ARC_FIRST_SHARE` of the time left; after
        a loose root (:attr:`soft_whole`) until the deadline, with the local
        searches from then on (a small component's first search ran without
        them, see :data:`SMALL_FIRST_SHARE`), or without one for
        :data:`LOOSE_SOFT_ARC_NODES` nodes per LP node left."""
        search = self.soft_search
        if self.labels is not None:
            search.offer(self.labels)
        now = time.perf_counter()
        end = now + work / DFBB_OPS_PER_SECOND
        nodes = None
        if self.soft_whole:
            end = self.deadline
            if end is None:
                nodes = LOOSE_SOFT_ARC_NODES * max(self.max_nodes - self.n_nodes, 1)
            else:  # the rest of the component's time: the local searches join in
                search.start_polishing()
        elif self.deadline is not None:  # its bound, not the LP's, proves these networks
            end = now + SOFT_ARC_FIRST_SHARE * max(self.deadline - now, 0.0)
            if self.deadline - end < self.last_eval:  # no LP node would fit after it
                end = self.deadline
        before = search.n_nodes
        proved = search.run(deadline=end, max_nodes=nodes)
        if self.soft_whole:  # (the component's own search: its nodes are the search's)
            self.n_nodes += search.n_nodes - before
        if search.score > self.score:
            self.score, self.labels = search.score, search.labels
        return proved and self.score > -np.inf

    def _polisher(self):
        """A tracker that runs the iterated local search of the LP back-ends
        on the incumbent between node expansions (``polish`` times the
        search's own time at most, less after rounds without a gain)."""
        if (not self.root_polish or self.labels is None
                or not self.params.get("local_search", True)):
            return None
        now = time.perf_counter()
        left = None if self.deadline is None else max(self.deadline - now, 1e-3)
        params = dict(COMMON_DEFAULTS, max_iter=1, time_limit=left, tol=self.tol,
                      polish=self.root_polish, start_time=now)
        tracker = Tracker(Problem(self.score_graph), "exact", params)
        tracker.offer(self.labels)
        return tracker

    def _polish(self):
        """Polish the incumbent for the time the search leaves it; adopt a
        better labeling."""
        tracker = self.polisher
        if tracker is None:
            return
        if self.score > tracker.score:
            tracker.offer(self.labels)
        ub = max((-e[0] for e in self.heap), default=self.score)
        tracker.count_iteration(ub)
        reserve = self.last_eval
        if self.deadline is not None:  # end by the hand-off time, while one is pending
            reserve += self.deadline - self._until()
        tracker.polish_incumbent(reserve=reserve, stalled=self._wide(ub, self.score))
        if tracker.score > self.score:
            self.score, self.labels = tracker.score, tracker.labels.copy()

    def _push(self, ub, node, branch, state, counter):
        """Open ``node``; its solver state is kept while the open nodes'
        states fit in :data:`STATE_BYTES` (its children start cold otherwise)."""
        if state is not None:
            if self.state_bytes + state.nbytes > STATE_BYTES:
                state = None
            else:
                self.state_bytes += state.nbytes
        heapq.heappush(self.heap, (-ub, -node.depth, counter, node, branch, state))

    def _until(self):
        """The time the next solve or polish must end by: the deadline, or
        the hand-off time while one is pending."""
        if self.hand_off_at is None or self.deadline is None:
            return self.deadline
        return min(self.deadline, self.hand_off_at)

    def _hand_off(self):
        """Whether the search stops for HiGHS now (see :attr:`hand_off_at`;
        checked once, at that time)."""
        if self.hand_off_at is None or time.perf_counter() < self.hand_off_at:
            return False
        self.hand_off_at = None
        open_bound = max((-e[0] for e in self.heap if self._open(-e[0])), default=-np.inf)
        return (np.isfinite(self.score)
                and open_bound - self.score <= MILP_STALL_GAP * max(1.0, abs(self.score)))

    def _out_of_time(self):
        """Whether another node evaluation (as long as the last one) would
        end past the deadline."""
        return (self.deadline is not None
                and time.perf_counter() + self.last_eval >= self.deadline)

    def _open(self, ub):
        """Whether a subspace bounded by ``ub`` may hold a better labeling."""
        cut = self._cutoff()
        return ub > -np.inf and (cut is None or ub > cut)

    def _record(self):
        """Append a history record: incumbent, best open bound, open nodes."""
        heap = self.heap
        open_bound = max((-e[0] for e in heap), default=self.score)
        ub = max(open_bound, self.score)
        gap = _relative_gap(self.score, ub)
        rec = {"iter": self.n_nodes, "time": time.perf_counter() - self.t0,
               "score": self.score, "upper_bound": ub, "rel_gap": gap, "open": len(heap)}
        self.history.append(rec)
        report("exact", self.n_nodes, rec["time"], self.score, ub, open=len(heap))


def _cycle_relaxations(graph, n_cycles, deadline=None):
    """The graph with up to ``n_cycles`` frustrated short cycles as clusters
    of at most :data:`CHEAP_CLUSTER_ENTRIES` entries, and the one with
    clusters up to :data:`~.tightening.MAX_CLUSTER_ENTRIES` entries where
    that adds cycles (else None).  Before a ``deadline`` each of the two
    cycle searches scores candidates for at most a quarter of the time left."""
    from ..lp.tightening import MAX_CANDIDATE_ENTRIES, cluster_graph, frustrated_cycles

    if not n_cycles:
        return graph, None
    work = MAX_CANDIDATE_ENTRIES
    if deadline is not None:
        left = max(deadline - time.perf_counter(), 0.0)
        work = min(work, int(0.25 * left * CYCLE_ENTRIES_PER_SECOND))
    cheap, _ = frustrated_cycles(graph, n_cycles, max_entries=CHEAP_CLUSTER_ENTRIES,
                                 max_work=work)
    tight = cluster_graph(graph, cheap) if cheap.shape[0] else graph
    if int(graph.n_states.max()) ** 4 <= CHEAP_CLUSTER_ENTRIES:
        return tight, None  # every short cycle is cheap
    rich, _ = frustrated_cycles(graph, n_cycles, max_work=work)
    same = (rich.shape == cheap.shape and
            np.array_equal(np.sort(rich, axis=0), np.sort(cheap, axis=0)))
    return tight, (None if same or not rich.shape[0] else cluster_graph(graph, rich))


def branch_and_bound_map(graph, *, time_limit=None, bound_method="auto", bound_params=None,
                         tighten=AUTO_CYCLES, max_nodes=None, dominance=True, persistency=True,
                         tol=1e-6, enumeration_limit=None, max_search_vars=None,
                         depth_first=True, n_jobs=None):
    """Exact MAP by best-first branch and bound (see the module docstring).

    Parameters
    ----------
    graph : FactorGraph
    time_limit : float or None, default=None
        Seconds; at the limit the best labeling and the best open bound are
        returned with status ``"time_limit"``.
    bound_method : str, default="auto"
        LP back-end of :func:`solve_map` that bounds the nodes (it must take
        ``cutoff``: ``ad3``, ``gdmm``, ``psdd``, ``fista``, ``scm``, ``trn``);
        ``"auto"``: ``gdmm`` when a variable has 100 states or more (its
        oracle is sublinear in the domain), else ``ad3``.
    bound_params : dict or None
        Its parameters (``max_iter`` applies to the root; other nodes run
        at most 200 iterations; ``bound_stall_iter``, unless given, is 25 at
        the root and at cold nodes, 5 at nodes started from their parent's
        ``ad3`` state; ``polish`` applies to the root and, between node
        expansions, to the incumbent).
    tighten : int, default=1000
        Frustrated short cycles added as clusters to each component before
        the search (0: none).
    max_nodes : int or None, default=None
        Nodes evaluated at most per component (status ``"node_limit"``);
        ``None``: 1000 without a time limit, no cap with one.  The soft arc
        consistent search's nodes (far cheaper) count apart: without a time
        limit a hard-constrained component's search runs 1,000 of them per
        node of ``max_nodes`` first (at least 20,000).
    dominance : bool, default=True
        Forbid dominated labels first.
    persistency : bool, default=True
        On a binary pairwise graph, fix the variables that roof duality
        labels (:func:`~.roof_duality.roof_dual`: one minimum cut), on an
        attractive Potts model those that Kovtun's cuts label
        (:func:`~.potts_persistency.kovtun_persistency`: one cut per label
        and sweep), and search only the others.
    tol : float, default=1e-6
        Relative gap at which a subspace counts as solved.
    enumeration_limit : int or None, default=None
        Components with at most this many labelings are enumerated instead
        of searched (0: search every loopy component); ``None``: those whose
        labelings times factors are at most 5,000,000 (about 20 ms of
        enumeration, less than the search costs on small dense graphs).
    depth_first : bool, default=True
        Pairwise components with forbidden pairs (``-inf`` entries) first
        get half their time of branch and bound kept soft arc consistent
        (:mod:`.soft_arc`, hybrid best-first dives), other pairwise components of at most
        64 variables with fewer than 100 states each a few milliseconds of
        depth-first branch and bound with a cheaper bound (:mod:`.dfbb`);
        either search resumes from the root's incumbent when the root
        leaves a gap (no LP in either).
    max_search_vars : int or None, default=None
        Components with more variables get their root solve only (the
        tightened LP and its local search; status ``"node_limit"`` unless
        the root is certified), not a search; ``None``: no such cap.
    n_jobs : int or None, default=None
        Threads for the soft arc consistent search's dives
        (:mod:`.soft_arc_threads`); None or 1: one, -1: all CPUs.  The
        optimum is the same for any count; which of several optimal
        labelings is returned, and the nodes searched, depend on the
        threads' timing.

    Returns
    -------
    result : MapResult
        Status ``"exact"`` (the gap is certified within ``tol``),
        ``"time_limit"``, ``"node_limit"`` or ``"infeasible"``;
        ``n_iter`` counts the evaluated nodes, ``history`` holds one record
        per expanded node (``open``: nodes left).
    """
    if not isinstance(graph, FactorGraph):
        raise TypeError(f"graph must be a FactorGraph, got {type(graph).__name__}")
    time_limit = check_time_limit(time_limit)
    t0 = time.perf_counter()
    # node solves aim to end a little before the limit, leaving time to close
    deadline = None if time_limit is None else t0 + time_limit - min(0.05, 0.02 * time_limit)
    params = dict(bound_params or {})
    if bound_method == "auto":
        large = graph.n_vars and int(graph.n_states.max()) >= AUTO_LARGE_DOMAIN
        bound_method = "gdmm" if large else "ad3"
    if not isinstance(bound_method, str) or bound_method == "exact":
        raise ValueError(f"bound_method must name an LP back-end, got {bound_method!r}")
    get_method(bound_method)
    for name in ("time_limit", "cutoff", "cycles", "init_state"):
        if name in params:
            raise TypeError(f"bound_params may not set {name!r} (branch and bound sets it)")
    check_method_params(bound_method, dict(params, cutoff=None))
    if max_nodes is None:
        max_nodes = DEFAULT_MAX_NODES if time_limit is None else np.iinfo(np.int64).max
    search_cap = max_search_vars
    if search_cap is None:
        search_cap = np.iinfo(np.int64).max
    for name, value, low in (("max_nodes", max_nodes, 1), ("tighten", tighten, 0),
                             ("enumeration_limit",
                              0 if enumeration_limit is None else enumeration_limit, 0),
                             ("max_search_vars", search_cap, 1)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    for name, value in (("dominance", dominance), ("persistency", persistency),
                        ("depth_first", depth_first)):
        if not isinstance(value, (bool, np.bool_)):
            raise ValueError(f"{name} must be True or False, got {value!r}")
    if not (isinstance(tol, (int, float)) and np.isfinite(tol) and tol >= 0):
        raise ValueError(f"tol must be a finite number >= 0, got {tol!r}")
    n_jobs = check_n_jobs(n_jobs)

    merged = merge_parallel_factors(graph)
    propagation = propagate_forbidden_labels(merged)
    if propagation.infeasible:
        return MapResult(labels=np.zeros(graph.n_vars, dtype=np.int64), score=-np.inf,
                         upper_bound=-np.inf, n_iter=0, converged=True,
                         time=time.perf_counter() - t0, method="exact", status="infeasible")
    work = propagation.pruned_graph(merged)
    if dominance:
        work, _ = prune_dominated_labels(work)

    def restricted(sub, limit, nodes):  # a restriction of a component, searched anew
        return branch_and_bound_map(
            sub, time_limit=limit, bound_method=bound_method, bound_params=bound_params,
            tighten=tighten, max_nodes=nodes, dominance=dominance, persistency=persistency,
            tol=tol, enumeration_limit=enumeration_limit, max_search_vars=max_search_vars,
            depth_first=depth_first, n_jobs=n_jobs)

    labels = np.zeros(graph.n_vars, dtype=np.int64)
    variables_left = np.arange(graph.n_vars)  # variable j of `work` is variables_left[j]
    fixed = _fixed_labels(work, persistency)
    if fixed is not None and np.any(fixed >= 0):
        labels[:] = fixed
        variables_left, work = condition_pairwise(work, fixed)
        _, merged = condition_pairwise(merged, fixed)
    parts, isolated = component_subgraphs(work)
    if isolated.size:
        unary_max = work.unary_matrix()[isolated]
        labels[variables_left[isolated]] = np.argmax(unary_max, axis=1)
    total_gap, n_nodes, history, statuses = 0.0, 0, [], []
    if work is merged or not parts:  # nothing pruned: the components score as they are
        scorer_parts = parts
    else:
        scorer_parts, _ = component_subgraphs(merged)
    # small components first: they finish fast and leave the rest the time
    sizes = [p[1].n_vars for p in parts]
    for rank, idx in enumerate(np.argsort(sizes, kind="stable")):
        variables, sub = parts[idx]
        score_graph = scorer_parts[idx][1]
        forest = is_forest(sub)
        dfbb_graph = sub if (depth_first and not forest and sub.n_vars <= DFBB_MAX_VARS
                             and int(sub.n_states.max()) < AUTO_LARGE_DOMAIN
                             and np.all(sub.factor_orders == 2)) else None
        left = len(parts) - rank  # components not yet solved, this one included
        share = None if deadline is None else time.perf_counter() + \
            (deadline - time.perf_counter()) / left
        soft = None if forest else _soft_arc_first(sub, depth_first, share, tol, n_jobs,
                                                   max_nodes)
        # (less left than HiGHS' shortest slice: nothing of the LP route would fit)
        time_up = share is not None and share - time.perf_counter() < MILP_MIN_SECONDS
        if soft is not None and (soft.proved or time_up):
            if soft.proved and soft.score == -np.inf:
                statuses.append("infeasible")
                continue
            labels[variables_left[variables]] = soft.labels
            n_nodes += soft.n_nodes
            if not soft.proved:  # the component's time is up
                statuses.append("time_limit")
                total_gap += soft.upper_bound - soft.score
            continue
        if soft is not None:
            n_nodes += soft.n_nodes
            dfbb_graph = None
        first_labels = None  # the short depth-first search's labeling (or None)
        if dfbb_graph is not None:
            work = DFBB_FIRST_WORK
            if _short_first_dfbb(sub):
                work = int(SPARSE_DFBB_FIRST_SHARE * DFBB_FIRST_WORK)
            budget = max(work // (sub.n_vars * int(sub.n_states.max())), 1)
            lab, best, proved, _ = pairwise_dfbb(sub, max_nodes=budget, tol=tol)
            first_labels = lab if best > -np.inf else None
            if proved:
                if best == -np.inf:  # no finite labeling (propagation usually proves it first)
                    statuses.append("infeasible")
                    continue
                labels[variables_left[variables]] = lab
                n_nodes += 1
                continue
        small = (enumeration_is_cheap(sub, ENUMERATION_WORK) if enumeration_limit is None
                 else labelings_at_most(sub, enumeration_limit))
        if forest or small is not None:
            res = solve_map(sub, "tree" if forest else "brute_force")
            if res.status == "infeasible":  # cannot happen after propagation
                statuses.append("infeasible")
                continue
            labels[variables_left[variables]] = res.labels
            n_nodes += 1
            continue
        # a small or larger sparse component's first soft arc search (or None)
        early = None if soft is not None or dfbb_graph is None else \
            _small_soft_arc_first(sub, share, tol, first_labels, n_jobs)
        if early is None and soft is None and dfbb_graph is None and not forest:
            early = _sparse_soft_arc_first(sub, depth_first, share, tol, n_jobs)
        if early is not None:
            n_nodes += early.n_nodes
            if early.proved:
                if early.score == -np.inf:
                    statuses.append("infeasible")
                    continue
                labels[variables_left[variables]] = early.labels
                continue
        tight, richer = _cycle_relaxations(sub, int(tighten), deadline)
        nodes = int(max_nodes) if sub.n_vars <= search_cap else 1
        # (HiGHS gets no slice under its floor: then no short search either)
        milp = _milp_candidate(sub) and _milp_slice(share) >= _milp_floor(sub)
        if milp:  # a short search first: a tight root proves it in milliseconds
            first = time.perf_counter() + _milp_slice(share)
            search = _Search(tight, score_graph, bound_method, params, first, tol, nodes, t0,
                             history, richer=richer, dfbb_graph=dfbb_graph, soft_search=soft)
            search.loose_search, search.n_jobs = early, n_jobs
            lab, score, ub, status = search.run()
            n_nodes += search.n_nodes
            if status != "exact":
                proved = _milp_proof(sub, share)
                if proved is not None:
                    labels[variables_left[variables]] = proved
                    n_nodes += 1
                    continue
        if not milp or status != "exact":
            search = _Search(tight, score_graph, bound_method, params, share, tol,
                             nodes, t0, history, richer=richer, dfbb_graph=dfbb_graph,
                             soft_search=soft)
            if soft is None:  # (the soft arc search resumes on the component as it is)
                search.restricted = restricted
            search.loose_search, search.n_jobs = early, n_jobs
            stall = share is not None and n_columns(sub) <= MILP_STALL_MAX_COLUMNS
            if stall:  # (only where what is left after the hand-off fits HiGHS' root)
                now = time.perf_counter()
                hand_off = now + MILP_STALL_SHARE * max(share - now, 0.0)
                stall = share - hand_off >= _milp_floor(sub)
                search.hand_off_at = hand_off if stall else None
            lab, score, ub, status = search.run()
            n_nodes += search.n_nodes
            if (stall and status == "time_limit"
                    and time.perf_counter() < share - _milp_floor(sub)):
                lab, score, ub, status = _milp_finish(sub, share, lab, score, ub, tol)
                n_nodes += 1
        if soft is not None:  # the soft arc search's bound may be the tighter one
            ub = max(min(ub, soft.upper_bound), score)
        statuses.append(status)
        labels[variables_left[variables]] = lab
        total_gap += ub - score
    status = next((s for s in ("infeasible", "time_limit", "node_limit") if s in statuses),
                  "exact")
    if status == "infeasible":
        # an infeasible component's variables keep their open label (-1)
        # from the persistency pass: any labeling scores -inf
        labels[labels < 0] = 0
        score, ub = -np.inf, -np.inf
    else:
        score = float(graph.score(labels))
        # (a component left without a finite labeling at the limit: -inf
        # plus its infinite gap would be nan; no bound is certified then)
        ub = score + total_gap if score > -np.inf else np.inf
    return MapResult(labels=labels, score=score, upper_bound=float(ub), n_iter=max(n_nodes, 1),
                     converged=status in ("exact", "infeasible"), time=time.perf_counter() - t0,
                     history=history, method="exact", status=status)


def _fixed_labels(graph, persistency):
    """Labels some maximum-score labeling takes (-1: open) on a pairwise
    graph: the one state of a variable that has one (a restriction's
    variables left with one label, :func:`.drop_forbidden_labels`) and, with
    ``persistency``, those of :func:`_persistent_labels`; None for other
    graphs.  (Variables left with one finite label by propagation are not
    conditioned on: on weighted constraint networks the soft arc search
    took up to 2x its nodes after that.)"""
    if np.any(graph.factor_orders != 2):
        return None
    fixed = np.where(graph.n_states == 1, 0, -1)
    persistent = _persistent_labels(graph) if persistency else None
    if persistent is not None:
        fixed = np.where(fixed >= 0, fixed, persistent)
    return fixed


def _persistent_labels(graph):
    """Labels some maximum-score labeling takes (-1: open): roof duality on a
    binary pairwise graph, Kovtun's cuts on an attractive Potts model; None
    for other graphs."""
    persistent = roof_dual(graph)
    if persistent is not None:
        return persistent.labels
    return kovtun_persistency(graph)


def _soft_arc_first(sub, depth_first, share_end, tol, n_jobs, max_nodes):
    """On a pairwise component with hard constraints (at least
    ``AUTO_SOFT_ARC_FORBIDDEN`` of its table entries forbidden) where the
    search fits in :data:`SOFT_ARC_HARD_MAX_BYTES` (:func:`_soft_arc_fits`),
    the soft arc consistent search (:mod:`.soft_arc`) run for
    :data:`SOFT_ARC_FIRST_SHARE` of the time left before ``share_end`` or up
    to :data:`SOFT_ARC_SOLO_SECONDS` of it (less :data:`SOFT_ARC_LP_BOUND_SHARE`
    for the LP root's bound), whichever is longer (or for
    :data:`LOOSE_SOFT_ARC_NODES` nodes per node of ``max_nodes`` without a
    deadline, at least :data:`SOFT_ARC_FIRST_NODES`), on ``n_jobs`` threads;
    None elsewhere."""
    if not (depth_first and sub.n_vars and sub.table_data.size
            and np.all(sub.factor_orders == 2)
            and np.isneginf(sub.table_data).mean() >= AUTO_SOFT_ARC_FORBIDDEN
            and _soft_arc_fits(sub, SOFT_ARC_HARD_MAX_BYTES)):
        return None
    search = PolishedSoftArcSearch(sub, tol=tol, n_jobs=n_jobs, max_bytes=SOFT_ARC_HARD_MAX_BYTES)
    if share_end is None:
        most = np.iinfo(np.int64).max
        search.run(max_nodes=max(SOFT_ARC_FIRST_NODES,
                                 min(LOOSE_SOFT_ARC_NODES * int(max_nodes), most)))
    else:
        now = time.perf_counter()
        left = max(share_end - now, 0.0)
        solo = min(left, SOFT_ARC_SOLO_SECONDS)
        if SOFT_ARC_LP_BOUND_SHARE * left >= MILP_MIN_SECONDS:  # the LP root's bound after it
            solo -= SOFT_ARC_LP_BOUND_SHARE * left
        search.run(deadline=now + max(SOFT_ARC_FIRST_SHARE * left, solo))
    return search


def _soft_arc_fits(sub, max_bytes=None):
    """Whether the soft arc search over pairwise ``sub`` holds at most
    ``max_bytes`` (:data:`SOFT_ARC_MAX_BYTES` by default) at first (it is
    then given that limit: a trail that would outgrow it stops the search)."""
    limit = SOFT_ARC_MAX_BYTES if max_bytes is None else max_bytes
    return soft_arc_bytes(sub) <= limit


def _dense(sub, mean_degree=DENSE_MEAN_DEGREE):
    """Whether the variables of pairwise ``sub`` have ``mean_degree``
    neighbours or more on average (:data:`DENSE_MEAN_DEGREE` by default)."""
    return 2 * sub.n_factors >= mean_degree * sub.n_vars


def _short_first_dfbb(sub):
    """Whether the first depth-first search of pairwise ``sub`` gets
    :data:`SPARSE_DFBB_FIRST_SHARE` of its work: where it is sparse
    (:data:`SPARSE_DFBB_MEAN_DEGREE`), or larger than
    :data:`DFBB_FULL_FIRST_MAX_VARS` variables with domains of fewer than
    :data:`DFBB_FULL_FIRST_MIN_STATES` labels."""
    return not _dense(sub, SPARSE_DFBB_MEAN_DEGREE) or (
        sub.n_vars > DFBB_FULL_FIRST_MAX_VARS
        and int(sub.n_states.max()) < DFBB_FULL_FIRST_MIN_STATES)


def _resumable(sub):
    """Whether a loose root may resume the first search of a larger sparse
    component ``sub`` (:data:`SPARSE_RESUME_MAX_VARS` variables at most)."""
    return sub.n_vars <= SPARSE_RESUME_MAX_VARS


def _small_soft_arc_first(sub, share_end, tol, incumbent, n_jobs):
    """On a small pairwise component (a ``dfbb_graph``) where the search
    fits (:func:`_soft_arc_fits`), the soft arc consistent search (at
    FDAC* where it is dense, :func:`_dense`) from ``incumbent`` (labels, or
    None; first improved by iterated conditional modes) run for
    :data:`SMALL_FIRST_SHARE` of the time left before ``share_end`` (for
    :data:`SOFT_ARC_FIRST_NODES` nodes without a deadline), on ``n_jobs``
    threads; None elsewhere."""
    if not (sub.n_vars and _soft_arc_fits(sub)):
        return None
    if incumbent is not None:  # (a better one prunes more: 5-15 % fewer nodes)
        incumbent = incumbent.copy()
        iterated_conditional_modes(sub, incumbent)
    search = PolishedSoftArcSearch(sub, tol=tol, incumbent=incumbent,
                                   existential=not _dense(sub), n_jobs=n_jobs,
                                   max_bytes=SOFT_ARC_MAX_BYTES, polish=False)
    end = _slice_end(share_end, SMALL_FIRST_SHARE)
    search.run(max_nodes=SOFT_ARC_FIRST_NODES if end is None else None, deadline=end)
    return search


def _sparse_soft_arc_first(sub, depth_first, share_end, tol, n_jobs):
    """On a sparse pairwise component of more than :data:`DFBB_MAX_VARS`
    variables without a soft arc search of its own (see
    :data:`SPARSE_FIRST_SHARE`), where the depth-first searches are on, the
    soft arc consistent search with the local searches run for
    :data:`SPARSE_FIRST_NODES_PER_VAR` nodes a variable
    (:data:`UNRESUMED_FIRST_NODES_PER_VAR` on a component too large to be
    resumed, over :data:`SPARSE_RESUME_MAX_VARS` variables), at most
    :data:`SPARSE_FIRST_SHARE` of the time left before ``share_end`` (up
    to the floor of :data:`SPARSE_FIRST_FLOOR` seconds where its gap is
    narrow then), on
    ``n_jobs`` threads (a loose root resumes it for a share of the time
    left); None elsewhere."""
    if not (depth_first and sub.n_vars > DFBB_MAX_VARS and sub.table_data.size
            and np.all(sub.factor_orders == 2)
            and int(sub.n_states.max()) < AUTO_LARGE_DOMAIN and not _dense(sub)
            and _soft_arc_fits(sub)):
        return None
    search = PolishedSoftArcSearch(sub, tol=tol, n_jobs=n_jobs, max_bytes=SOFT_ARC_MAX_BYTES)
    per_var = SPARSE_FIRST_NODES_PER_VAR if _resumable(sub) else UNRESUMED_FIRST_NODES_PER_VAR
    stop = per_var * sub.n_vars
    floor_end = _slice_end(share_end, SPARSE_FIRST_SHARE,
                           floor=(SPARSE_FIRST_FLOOR, SPARSE_FIRST_FLOOR_SHARE))
    search.run(max_nodes=stop, deadline=_slice_end(share_end, SPARSE_FIRST_SHARE))
    if (not search.proved and search.n_nodes < stop and floor_end is not None
            and time.perf_counter() < floor_end
            and _relative_gap(search.score, search.upper_bound) <= SPARSE_FIRST_FLOOR_GAP):
        search.run(max_nodes=stop - search.n_nodes, deadline=floor_end)
    return search


def _relative_gap(score, upper_bound):
    """``(upper_bound - score) / max(1, |upper_bound|)`` (a history
    record's ``rel_gap``); ``inf`` without a finite score."""
    if not np.isfinite(score):
        return np.inf
    upper_bound = float(upper_bound)  # (an infinite bound: nan, without numpy's warning)
    return (upper_bound - float(score)) / max(1.0, abs(upper_bound))


def _slice_end(share_end, share, floor=None):
    """When ``share`` of the time left before ``share_end`` ends (None
    without a ``share_end``); ``floor=(seconds, most)``: the slice lasts at
    least ``seconds`` or ``most`` of the time left, whichever is shorter."""
    if share_end is None:
        return None
    now = time.perf_counter()
    left = max(share_end - now, 0.0)
    length = share * left
    if floor is not None:
        length = max(length, min(floor[0], floor[1] * left))
    return now + length


def _milp_candidate(sub):
    """Whether component ``sub`` has hard constraints (forbidden entries) and
    a local-polytope MILP small enough to hand to HiGHS."""
    if not (np.isneginf(sub.table_data).any() or np.isneginf(sub.unary).any()):
        return False
    return n_columns(sub) <= MILP_FIRST_MAX_COLUMNS


def _milp_finish(sub, share_end, labels, score, upper_bound, tol):
    """HiGHS on ``sub`` until ``share_end``, after a search that stopped at
    ``(labels, score, upper_bound)``; returns the better labeling, the
    tighter bound and the status (``"exact"`` when the gap closes within
    ``tol``).  The search's scores are the component's as given, HiGHS'
    those of ``sub``: equal on every labeling either returns (a labeling
    of finite score avoids the labels ``sub`` forbids)."""
    from .ilp import ilp_map

    res = ilp_map(sub, time_limit=max(share_end - time.perf_counter(), 0.01))
    if res.score > score:
        labels, score = res.labels, res.score
    upper_bound = min(upper_bound, res.upper_bound)
    if res.status == "exact" or upper_bound - score <= tol * max(1.0, abs(score)):
        return labels, score, max(upper_bound, score), "exact"
    return labels, score, max(upper_bound, score), "time_limit"


def _milp_slice(share_end):
    """Seconds of a MILP_FIRST_SHARE slice of what is left before
    ``share_end`` (None: no deadline), at most MILP_FIRST_SECONDS."""
    if share_end is None:
        return MILP_FIRST_SECONDS
    return max(0.0, min(MILP_FIRST_SECONDS, MILP_FIRST_SHARE * (share_end - time.perf_counter())))


def _milp_floor(sub):
    """The shortest slice HiGHS is given on ``sub``: MILP_MIN_SECONDS, or
    its root LP's estimate (:func:`.ilp.root_seconds`) where longer."""
    return max(MILP_MIN_SECONDS, root_seconds(sub))


def _milp_proof(sub, share_end):
    """The labeling HiGHS proves optimal for ``sub`` within a slice of the
    time left before ``share_end``, or None."""
    limit = _milp_slice(share_end)
    if limit < _milp_floor(sub):
        return None
    from .ilp import ilp_map

    res = ilp_map(sub, time_limit=limit)
    return res.labels if res.status == "exact" else None


# read by the MAP registry when it first loads its back-ends
METHODS = (
    dict(name="exact", solver=branch_and_bound_map, exact=True,
         params=("bound_method", "bound_params", "tighten", "max_nodes", "dominance",
                 "persistency", "tol", "enumeration_limit", "max_search_vars", "depth_first",
                 "n_jobs")),
)
