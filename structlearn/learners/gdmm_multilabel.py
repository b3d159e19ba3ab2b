"""GDMM training of a multilabel structural SVM with pairwise label interactions.

Algorithm 1 of the GDMM structural-SVM paper with the block-greedy
coordinate descent inner loop (Algorithm 3, "many binary factors"): each
sample has a unigram (inner-product) factor per label and a binary
interaction factor per label pair of the edge set.  Per outer iteration,
one BGCD pass over the samples (the greedy pair factor by the joint gain of
moving it with its labels, then two rounds of projected steps (19) on every
active factor of the sample), then one multiplier step (13), after which
factors back at their inactive state leave the active sets.

Objective: the L2-regularized structured hinge with Hamming loss, with the
loss-augmented maximization relaxed to the local polytope (eq. 5); the
relaxation is tight when the edges form a forest (``pairwise="none"``, a
single pair, a tree), otherwise it is an upper bound of the exact hinge.

Parametrization.  Binary variables are written in the reduced
(rare-outcome) form of the local polytope: ``x_j = mu_j(1)`` per label and
``z_f = mu_f(1, 1)`` per pair, with ``z <= x_a``, ``z <= x_b``,
``x_a + x_b - 1 <= z`` (equivalent to the four marginalization equalities
of the 4-state pair factor).  The consistency constraints of eq. (10)
become these inequalities, handled by an augmented Lagrangian with
multipliers ``nu >= 0`` (:mod:`._gdmm_multilabel_kernels`).  With the
equalities of the 4-state form, a label whose marginal moves forces every
one of its ``L - 1`` pair factors to move too (its marginal must follow),
so the active sets, and the cost, would be linear in ``L``; with the
inequalities a pair factor of an untouched label (``x = 0``) stays
consistent at ``z = 0``, which is what keeps the active sets, and the
greedy search, sublinear in the number of pair factors.

Greedy pair.  An inactive pair can move only with its labels (``z = 0`` is
forced next to a label at 0, ``z = 1`` between two positives at 1), so the
search scores the joint move of a pair and its labels at their bounds
(:func:`._gdmm_multilabel_kernels._greedy_pair`): the pairs of positive
labels, and the positive pair weights in decreasing order until they cannot
win.  Scoring ``P_f`` alone and only among labels already moved left the
corel5k fit at C = 1 at a 10 % gap that no pass closed (a pair whose gain
needs its labels to move with it never entered).

Storage.  The unigram duals are a dense (n, L) array; the active pair
factors live in one flat pool (:class:`PairPool`), each sample's slots
widening alone when it needs more, so memory follows the active sets and
one sample with many pairs does not widen every sample's row.  A pass
never drops a step: when the pool's free end is full it stops, the pool is
packed with room to spare, and the pass resumes at the same sample.

Certified stopping.  The dual value ``-D`` is taken at a feasible point
repaired from the iterate (every ``z`` clipped into its interval), so it
is a lower bound on the optimum of the relaxed objective; the value
reported is the best so far, and never below 0 (the value at the zero
dual).  The primal value is an upper bound on the relaxed objective at the
current weights: exact when the edges form a forest (max-product per
sample, O(L) after the label scores), otherwise a Lagrangian bound of each
sample's loss-augmented LP (:func:`._gdmm_multilabel_kernels.lp_hinge_bound`;
valid for any multipliers; it reads only the active pairs and the positive
pair weights).  ``primal - dual`` therefore bounds the
suboptimality on the whole problem; training stops when it falls below
``tol`` relative to the primal value.  The constraint violation is also
measured on the whole problem (inactive factors satisfy theirs exactly).
"""

import time

import numpy as np

from ._gdmm_multilabel_kernels import (
    LabelEdges,
    MultilabelDuals,
    gdmm_multilabel_dual,
    gdmm_multilabel_multipliers,
    gdmm_multilabel_pass,
    lp_hinge_bound,
)
from ._gdmm_multilabel_label_groups import (copy_columns, group_pair_ids, group_problem,
                                            put_group_states, release_whole_state,
                                            take_group_state)
from ._gdmm_multilabel_separators import split_labels
from ._gdmm_multilabel_threads import ThreadMultilabelPartitions
from ._gdmm_multilabel_storage import (INITIAL_PAIRS, _positive_edges, compacted_pool,
                                       edge_pair_ids, new_pair_pool)
from ._multilabel_kernels import SampleFeatures, multilabel_primal
from .._parallel import chunk_bounds
from ._partitions import (PartitionThreads, active_dask_client, check_training_partitions,
                          n_threads, round_record)
from ._ssvm_common import HistoryMonitor, check_schedule, sq_norm, warn_not_converged

__all__ = ["GDMMMultilabelState", "fit_gdmm_multilabel", "is_forest_mask"]

# coordinate-step rounds over a sample's active factors per visit: a second
# round costs O(active factors) (the scores follow the steps; the weights are
# written once per visit) and lowers the gap reached in a given number of
# passes by 5-25 % on the benchmark sets (BENCHMARKS.md, SSVM 3f)
_SAMPLE_ROUNDS = 2
# exact primal from the weights when n * 2^L * L stays below this
_ENUM_BUDGET = 2e7
# blocks of samples per pass: the greedy search's sorted pair weights are
# refreshed at each block, and max_time is checked between blocks.  A fixed
# count (not a time slice) keeps the iterates independent of the machine
_BLOCKS_PER_PASS = 16


def is_forest_mask(E):
    """Whether the edges of an upper-triangular (L, L) mask form a forest."""
    L = E.shape[0]
    parent = np.arange(L)

    def root(k):
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    for a, b in zip(*np.nonzero(E)):
        ra, rb = root(a), root(b)
        if ra == rb:
            return False
        parent[ra] = rb
    return True


class GDMMMultilabelState:
    """Duals, multipliers, active sets and weights of a multilabel GDMM run.

    The unigram duals ``A`` are dense (n, L); the active pair factors live
    in a :class:`PairPool` whose memory follows the active sets (each sample
    starts with ``INITIAL_PAIRS`` slots and widens alone when it needs more).
    """

    def __init__(self, problem, sublinear, signature=None):
        n, L = problem.Y.shape
        self.signature = problem.signature() if signature is None else signature
        self.solver = "gdmm"
        self.sublinear = sublinear
        self.A = np.zeros((n, L))
        self.tmask = np.zeros((n, L), dtype=np.uint8)
        cap = min(INITIAL_PAIRS, max(problem.n_edges, 1))
        self.pool = new_pair_pool(np.full(n, cap, dtype=np.int64), max(n * cap // 2, 64))
        self.W = np.zeros((problem.n_features, L))
        self.Pw = np.zeros(L * (L - 1) // 2)
        self.n_iter = 0

    @property
    def n_pairs(self):
        """Active pair factors per sample, int64 (n,)."""
        return self.pool.count

    def compact(self, need):
        """Rebuild the pool with each sample's slots packed at the front and
        room at the end for ``need`` more slots (and half the live slots)."""
        self.pool = compacted_pool(self.pool, need)

    def weights(self):
        """``W`` (d, L) and the symmetric-free upper-triangular ``P`` (L, L)."""
        L = self.A.shape[1]
        P = np.zeros((L, L))
        P[np.triu_indices(L, 1)] = self.Pw
        return self.W, P


def _label_adjacency(E):
    """Neighbours of every label on the edge mask: CSR ``(ptr, nbr)`` of int64."""
    a, b = np.nonzero(E)
    L = E.shape[0]
    rows = np.concatenate([a, b])
    cols = np.concatenate([b, a])
    order = np.lexsort((cols, rows))
    ptr = np.zeros(L + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=L), out=ptr[1:])
    return ptr, np.ascontiguousarray(cols[order], dtype=np.int64)


def _forest_hinge_chunk(W, problem, forest, node_weight, out, first, stop):
    """:func:`._multilabel_kernels.forest_hinges` of samples ``first:stop``
    into ``out[first:stop]``."""
    from ._multilabel_kernels import forest_hinges

    p = problem
    forest_hinges(W, p.data, p.indices, p.indptr[first:stop + 1], p.Y[first:stop],
                  forest.order, forest.parent, node_weight, out[first:stop])


class _Certificate:
    """Primal and dual values of a multilabel GDMM state (see the module docstring).

    The primal is exact when the edges form a forest (max-product per
    sample, :func:`._multilabel_kernels.forest_hinges`); otherwise it is the
    Lagrangian bound of each sample's loss-augmented LP, and the exact
    (unrelaxed) objective is computed apart by enumeration when that is
    cheap (``primal_exact``; NaN otherwise).
    The dual reported is the best value certified so far and never below 0
    (the value of the zero dual): each evaluation is a lower bound on the
    optimum, so their maximum is too.  The max-product runs in chunks of
    samples on ``n_jobs`` threads (:meth:`close` ends them).
    """

    def __init__(self, problem, C, rho, n_jobs=None):
        from ..inference.exact.binary_forest import rooted_forest

        Y, E = problem.Y, problem.E
        n, L = Y.shape
        self.problem = problem
        self.C = float(C)
        self.rho = float(rho)
        self.edges, self.pids = edge_pair_ids(E)
        self.forest = rooted_forest(self.edges, L)
        self.node_weight = np.zeros(L)
        self.enum_ok = problem.n_edges == 0 or n * (2.0 ** L) * L <= _ENUM_BUDGET
        self.hinge = np.empty(n)
        self.best_dual = 0.0
        self.threads = PartitionThreads(n_threads(n_jobs, max(n, 1)))

    def close(self):
        self.threads.close()

    def forest_primal(self, W, Pw):
        """The exact primal value at the weights ``W`` (d, L) and pair weights
        ``Pw`` when the edges form a forest (max-product per sample, in
        chunks of samples on the ``n_jobs`` threads)."""
        p, f = self.problem, self.forest
        self.node_weight[:] = 0.0
        has = f.edge >= 0
        self.node_weight[has] = Pw[self.pids[f.edge[has]]]
        T = self.threads.n_threads
        bounds = chunk_bounds(np.diff(p.indptr) + 1.0, T)
        self.threads.map(_forest_hinge_chunk, [W] * T, [p] * T, [f] * T, [self.node_weight] * T,
                         [self.hinge] * T, bounds[:-1], bounds[1:])
        return float(0.5 * sq_norm(W, Pw) + self.C * self.hinge.sum())

    def evaluate(self, state):
        """``(primal, dual, primal_exact)`` at the state's current weights."""
        p = self.problem
        C = self.C
        W = state.W
        Pfeas = np.empty_like(state.Pw)
        dual = float(gdmm_multilabel_dual(W, state.Pw, p.Y, state.A, C, state.pool, Pfeas))
        self.best_dual = max(self.best_dual, dual)
        reg = 0.5 * sq_norm(W, state.Pw)
        exact = np.nan
        if self.forest is not None:
            exact = primal = self.forest_primal(W, state.Pw)
        else:
            up_a, up_b, _ = _positive_edges(self.edges, self.pids, state.Pw)
            lp_hinge_bound(W, state.Pw, p.E, p.data, p.indices, p.indptr, p.Y, self.rho,
                           state.pool, up_a, up_b, self.hinge)
            primal = float(reg + C * self.hinge.sum())
            if self.enum_ok:
                _, P = state.weights()
                exact = float(multilabel_primal(W, P, p.E, p.n_edges, 1.0, p.data, p.indices,
                                                p.indptr, p.Y, C))
        return primal, self.best_dual, exact


def _serial_pass(state, samples, edges, order, block_ends, params, stats, monitor, deadline,
                 fixed=None):
    """One pass over all the samples in ``order``, in blocks (the positive
    pair weights re-sorted, the time and the callback asked between blocks);
    returns ``(out_of_time, asked_to_stop)``.  ``fixed``: uint8 (L,), the
    labels whose unigram factors the pass leaves as they are (None: none)."""
    E, ne, nbr_ptr, nbr, edge_list, pids = edges
    if fixed is None:
        fixed = np.zeros(E.shape[0], dtype=np.uint8)
    C, rho, rounds = params
    n = order.shape[0]
    pos = 0
    for b, stop_at in enumerate(block_ends):
        while pos < stop_at:
            up_a, up_b, up_w = _positive_edges(edge_list, pids, state.Pw)
            pos, need = gdmm_multilabel_pass(
                samples, LabelEdges(E, ne, nbr_ptr, nbr, up_a, up_b, up_w, fixed),
                MultilabelDuals(state.W, state.Pw, state.A, state.tmask), state.pool,
                order[:stop_at], pos, C, rho, rounds, stats, samples.data, 1.0)
            if need:  # the pool's free end is full: pack it, with room for more
                state.compact(need)
        if deadline is not None and time.perf_counter() >= deadline:
            return pos < n, False
        if pos < n and monitor.progress(state.n_iter + 1, b + 1, len(block_ends)):
            return False, True
    return False, False


class _Quiet:
    """A monitor for the groups' passes: the callback is asked between rounds only."""

    @staticmethod
    def progress(iteration, block, n_blocks):
        return False


class LabelGroupRounds:
    """Passes over groups of labels side by side on threads
    (:mod:`._gdmm_multilabel_label_groups`, :mod:`._gdmm_multilabel_separators`).

    Each group is a problem of its own over the same samples, with its own
    state (moved out of ``state`` here, which keeps its pair weights, pool
    and counters only, and written back by :meth:`close`).  A round visits
    the samples in one permutation for every group, as a pass of one
    process would, then steps the separators' unigram factors over the same
    permutation, then runs every group's multiplier step.  Without
    separators the certificate is the sum of the groups'; with them, the
    dual is the groups' sum less the separators' extra copies, and the
    primal is taken on the whole tree.  A label's duals and weights take the
    steps of one process (the greedy pair factor of a sample is the best of
    its group, not of all the edges), so with no edges the fit is the
    one-process fit, bit for bit, for any ``n_jobs``.

    Parameters
    ----------
    problem : MultilabelProblem
    state : GDMMMultilabelState
    split : LabelSplit
        The groups and separators (:func:`._gdmm_multilabel_separators.split_labels`).
    C, rho, rounds : float, float, int
        As in the one-process pass.
    n_jobs : int or None
        Threads running the groups (at most one per group).
    """

    remote = False
    certifies_itself = True

    def __init__(self, problem, state, split, C, rho, rounds, n_jobs):
        self.state = state
        self.groups = split.groups
        self.n_parts = len(split.groups)
        self.params = (float(C), float(rho), int(rounds))
        L = problem.Y.shape[1]
        S = split.separators.shape[0]
        xnorm2 = problem.sq_norms()
        self.local = np.full((S, self.n_parts), -1, dtype=np.int64)
        self.problems, self.states, self.samples, self.edges = [], [], [], []
        self.certs, self.fixed, self.pair_ids = [], [], []
        for k, labels in enumerate(split.groups):
            sub = group_problem(problem, labels)
            sub_state = GDMMMultilabelState(sub, state.sublinear, signature=())  # never reused
            take_group_state(state, labels, sub_state)
            nbr_ptr, nbr = _label_adjacency(sub.E)
            edge_list, pids = edge_pair_ids(sub.E)
            at = np.searchsorted(labels, split.separators)
            here = (at < labels.shape[0]) & (labels[np.minimum(at, labels.shape[0] - 1)]
                                              == split.separators)
            self.local[here, k] = at[here]
            fixed = np.zeros(labels.shape[0], dtype=np.uint8)
            fixed[at[here]] = 1
            self.problems.append(sub)
            self.states.append(sub_state)
            self.samples.append(SampleFeatures(sub.data, sub.indices, sub.indptr, sub.Y,
                                               xnorm2))
            self.edges.append((sub.E, sub.n_edges, nbr_ptr, nbr, edge_list, pids))
            self.certs.append(_Certificate(sub, C, rho))
            self.fixed.append(fixed)
            self.pair_ids.append(group_pair_ids(labels, L))
        self.home = np.argmax(self.local >= 0, axis=1).astype(np.int64)
        self.copies = (self.local >= 0).sum(axis=1)
        self.csr = (problem.data, problem.indices, problem.indptr, xnorm2)
        self.scratch = np.empty(L)
        self.best_dual = 0.0
        self.layout = release_whole_state(state)
        self.stats = [np.zeros(2, dtype=np.int64) for _ in split.groups]
        self.threads = PartitionThreads(n_threads(n_jobs, self.n_parts))

    def _pass(self, k, order, block_ends, deadline):
        """Group ``k``'s pass; returns whether it stopped for lack of time."""
        stats = self.stats[k]
        stats[:] = 0
        out_of_time, _ = _serial_pass(self.states[k], self.samples[k], self.edges[k], order,
                                      block_ends, self.params, stats, _Quiet, deadline,
                                      self.fixed[k])
        return out_of_time

    def _separators(self, order):
        """The separators' steps over ``order`` (packing a group's pool when a
        sample's row there lacks room)."""
        from ._gdmm_multilabel_separators import separator_pass

        pos = 0
        while self.local.shape[0] and pos < order.shape[0]:
            st, pr = self.states, self.problems
            groups = (tuple(p.Y for p in pr), tuple(s.A for s in st), tuple(s.tmask for s in st),
                      tuple(s.W for s in st), tuple(s.pool for s in st),
                      tuple(e[2] for e in self.edges), tuple(e[3] for e in self.edges),
                      np.array([e[1] for e in self.edges], dtype=np.int64))
            pos, k, need = separator_pass(self.csr, groups, (self.local, self.home), order, pos,
                                          self.params, self.scratch)
            if k >= 0:
                st[k].compact(need)

    def _multipliers(self, k, eta):
        sub, sub_state = self.problems[k], self.states[k]
        return float(gdmm_multilabel_multipliers(sub.Y, sub_state.A, self.params[0], float(eta),
                                                 sub_state.tmask, sub_state.pool))

    def round(self, rng, eta, stats, deadline, n_blocks):
        """One pass of every group over the samples in one permutation drawn
        from ``rng`` (in ``n_blocks`` blocks, as one process's pass), the
        separators' steps and the multiplier steps; returns ``(res2,
        finished, local_time, merge_time)`` as the sample partitions do
        (the separators' steps count as merging)."""
        t0 = time.perf_counter()
        n = self.problems[0].Y.shape[0]
        P = self.n_parts
        order = rng.permutation(n).astype(np.int64)
        block_ends = np.unique(np.linspace(0, n, n_blocks + 1).astype(np.int64))[1:]
        late = self.threads.map(self._pass, range(P), [order] * P, [block_ends] * P,
                                [deadline] * P)
        t1 = time.perf_counter()
        self._separators(order)
        t2 = time.perf_counter()
        res2 = sum(self.threads.map(self._multipliers, range(P), [eta] * P))
        for s in self.stats:
            stats += s
        t3 = time.perf_counter()
        return res2, not any(late), (t1 - t0) + (t3 - t2), t2 - t1

    def certificate(self, cert):
        """``(primal, dual, primal_exact)`` of the whole problem (``cert``: its
        certificate, which takes the primal on the whole tree when there are
        separators)."""
        if not self.local.shape[0]:
            values = self.threads.map(_Certificate.evaluate, self.certs, self.states)
            return tuple(float(sum(v)) for v in zip(*values))
        dual = sum(self.threads.map(self._group_dual, range(self.n_parts)))
        W, Pw = self._whole_weights()
        for r, k in enumerate(self.home):  # a separator's extra copies counted once
            j = self.local[r, k]
            lin = float(np.dot(1.0 - 2.0 * self.problems[k].Y[:, j], self.states[k].A[:, j]))
            dual += (self.copies[r] - 1) * (0.5 * sq_norm(W[:, self.groups[k][j]]) + lin)
        self.best_dual = max(self.best_dual, dual)
        primal = cert.forest_primal(W, Pw)
        return primal, self.best_dual, primal

    def _group_dual(self, k):
        sub, st = self.problems[k], self.states[k]
        return float(gdmm_multilabel_dual(st.W, st.Pw, sub.Y, st.A, self.params[0], st.pool,
                                          np.empty_like(st.Pw)))

    def _whole_weights(self):
        """The whole problem's ``W`` and pair weights, from the groups'."""
        d, L = self.layout[2][0]
        W = np.empty((d, L))
        Pw = np.zeros(L * (L - 1) // 2)
        for labels, st, ids in zip(self.groups, self.states, self.pair_ids):
            copy_columns(st.W, np.arange(labels.shape[0]), W, labels)
            Pw[ids] = st.Pw
        return W, Pw

    @property
    def active(self):
        """Active factors summed over the groups (a separator's flags once)."""
        total = sum(s.tmask.sum() + s.pool.count.sum() for s in self.states)
        for r, k in enumerate(self.home):
            total -= (self.copies[r] - 1) * self.states[k].tmask[:, self.local[r, k]].sum()
        return float(total)

    def close(self):
        """Write the groups' states back into the whole problem's."""
        self.threads.close()
        put_group_states(self.state, self.groups, self.states, self.layout)


def run_rounds(step, certify, active, state, monitor, stats, *, schedule, max_iter, tol,
               deadline):
    """The passes (or partitioned rounds) of a multilabel GDMM fit, each
    recorded, certified on ``schedule``, until the gap reaches ``tol``, the
    callback or ``deadline`` stops them, or ``max_iter``; returns whether
    the gap was reached (and warns when ``max_iter`` ran out without it).

    ``step(it)`` runs one and returns ``(res2, partial, asked_to_stop,
    record items)``; ``certify()`` returns ``(primal, dual, primal_exact)``
    at the current weights; ``active()`` the mean active-set size per
    sample; ``state.n_iter`` counts the passes; ``stats`` (int64 (2,)) is
    zeroed before each and holds its visits and overflows after it.
    """
    rel_gap = np.inf
    for it in range(max_iter):
        t0 = time.perf_counter()
        stats[:] = 0
        res2, partial, asked_to_stop, extra = step(it)
        pass_time = time.perf_counter() - t0
        state.n_iter += 1
        timed_out = (deadline is not None and time.perf_counter() >= deadline
                     or asked_to_stop)
        checking = schedule.due(it + 1, max_iter) or timed_out
        primal = dual = exact = np.nan
        if checking:
            primal, dual, exact = certify()
        stop = monitor.record(state.n_iter, primal, dual, float(np.sqrt(res2)),
                              float(active()), stats[0], pass_time, primal_exact=exact,
                              overflow=int(stats[1]), checked=bool(checking),
                              partial=bool(partial), **extra)
        rel_gap = monitor.history[-1]["relative_gap"]
        if checking:
            schedule.checked(it + 1, rel_gap)
            if rel_gap <= tol:
                return True
        if stop or timed_out:
            break
    if len(monitor.history) == max_iter:
        warn_not_converged("GDMM", max_iter, rel_gap)
    return False


def fit_gdmm_multilabel(problem, *, C, rho, eta, max_iter, tol, sublinear, rng, state=None,
                        verbose=0, callback=None, rounds=None, check_every=1, max_time=None,
                        n_jobs=None, training_partitions=1):
    """Run up to ``max_iter`` GDMM iterations; returns ``(W, P, history, state, converged)``.

    Parameters
    ----------
    problem : MultilabelProblem
    C : float
        Weight of the summed hinge losses.
    rho, eta : float
        Penalty of the augmented Lagrangian and step of its multipliers.
    max_iter : int
    tol : float
        Stop when the certified relative gap ``(primal - dual) / |primal|``
        is at most ``tol``.
    sublinear : bool
        Recorded in the state (the estimator's ``oracle``); every value runs
        the same greedy pair search.
    rng : RandomState
        Draws the sample orders.
    state : GDMMMultilabelState or None
        Continue from this state (warm start).
    rounds : int or None
        Coordinate-step rounds over a sample's active factors per visit
        (None: ``_SAMPLE_ROUNDS``).
    check_every : int or CheckSchedule
        Evaluate the certificate (and so the stopping rule) after these
        passes and after the last one; other records hold NaN.
    max_time : float or None
        Stop once this many seconds have passed since the start, checked
        between the ``_BLOCKS_PER_PASS`` blocks of samples of a pass; the
        last (partial) pass is then certified.  ``callback`` is also asked
        there (:meth:`HistoryMonitor.progress`); True stops the same way.
        With partitions, each stops between its blocks once the time is up,
        and ``callback`` sees only the records of whole rounds.
    n_jobs : int or None
        Threads running the partitions and the certificate's max-product.
    training_partitions : int
        1: the passes described above.  More: each round splits the samples
        into that many partitions, drawn anew, whose passes run on
        ``n_jobs`` threads and merge after the round
        (:mod:`._gdmm_multilabel_threads`; on dask workers each partition
        keeps a home block of samples and takes a visiting block drawn anew,
        :mod:`._gdmm_multilabel_dask`).  On threads, when the edges form a
        forest that splits into groups of about equal labels (whole trees,
        or trees cut at a few separator labels:
        :func:`._gdmm_multilabel_separators.split_labels`), the partitions
        are those groups of labels instead (:class:`LabelGroupRounds`).
        The iterates depend on ``rng`` and the partitions, not on
        ``n_jobs``.

    Returns
    -------
    W : ndarray (n_features, L), P : ndarray (L, L) upper triangle,
    history : list of dict, state : GDMMMultilabelState, converged : bool
    """
    Y, E = problem.Y, problem.E
    n, L = Y.shape
    ne = problem.n_edges
    if state is None:
        state = GDMMMultilabelState(problem, sublinear)
    if rounds is None:
        rounds = _SAMPLE_ROUNDS
    xnorm2 = problem.sq_norms()
    nbr_ptr, nbr = _label_adjacency(E)
    samples = SampleFeatures(problem.data, problem.indices, problem.indptr, Y, xnorm2)
    edges, pids = edge_pair_ids(E)
    cert = _Certificate(problem, C, rho, n_jobs)
    stats = np.zeros(2, dtype=np.int64)
    monitor = HistoryMonitor(verbose, callback)
    schedule = check_schedule(check_every, tol)
    block_ends = np.unique(np.linspace(0, n, _BLOCKS_PER_PASS + 1).astype(np.int64))[1:]
    n_parts = check_training_partitions(training_partitions, n, "samples")
    partitions = None
    if n_parts > 1:
        client = active_dask_client()
        edge_data = (E, ne, nbr_ptr, nbr, edges, pids)
        split = split_labels(E, n_parts) if client is None else None
        if split is not None:
            partitions = LabelGroupRounds(problem, state, split, C, rho, rounds, n_jobs)
        elif client is None:
            partitions = ThreadMultilabelPartitions(problem, state, n_parts, edge_data, C, rho,
                                                    rounds, n_jobs)
        else:
            from ._gdmm_multilabel_dask import DaskMultilabelPartitions

            partitions = DaskMultilabelPartitions(problem, state, n_parts, edge_data, C, rho,
                                                  rounds, cert.forest, client)
    deadline = None if max_time is None else monitor.start + max_time

    def step(it):
        if partitions is None:
            order = rng.permutation(n).astype(np.int64)
            out_of_time, asked_to_stop = _serial_pass(
                state, samples, (E, ne, nbr_ptr, nbr, edges, pids), order, block_ends,
                (float(C), float(rho), int(rounds)), stats, monitor, deadline)
            res2 = gdmm_multilabel_multipliers(Y, state.A, float(C), float(eta), state.tmask,
                                               state.pool)
            return res2, out_of_time or asked_to_stop, asked_to_stop, {}
        res2, finished, local_time, merge_time = partitions.round(rng, eta, stats, deadline,
                                                                  _BLOCKS_PER_PASS)
        return res2, not finished, False, round_record(partitions, local_time, merge_time)

    def certify():
        if partitions is not None and (partitions.remote
                                       or getattr(partitions, "certifies_itself", False)):
            return partitions.certificate(cert)
        if partitions is not None:
            partitions.sync_pool()
        return cert.evaluate(state)

    def active():
        if partitions is not None and (partitions.remote
                                       or getattr(partitions, "certifies_itself", False)):
            return partitions.active / max(n, 1)
        return (state.tmask.sum() + state.pool.count.sum()) / max(n, 1)

    try:
        converged = run_rounds(step, certify, active, state, monitor, stats,
                               schedule=schedule, max_iter=max_iter, tol=tol, deadline=deadline)
    finally:
        cert.close()
        if partitions is not None:
            partitions.close()
    W, P = state.weights()
    return W, P, monitor.history, state, converged
