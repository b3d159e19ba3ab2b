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

from ._gdmm_multilabel_kernels import gdmm_multilabel_multipliers
from ._gdmm_multilabel_label_groups import LabelGroupRounds
from ._gdmm_multilabel_separators import split_labels
from ._gdmm_multilabel_state import (GDMMMultilabelState, MultilabelCertificate,
                                     label_adjacency, serial_pass)
from ._gdmm_multilabel_threads import ThreadMultilabelPartitions
from ._gdmm_multilabel_storage import edge_pair_ids
from ._multilabel_kernels import SampleFeatures
from ._partitions import active_dask_client, check_training_partitions, n_threads, round_record
from ._ssvm_common import HistoryMonitor, check_schedule, warn_not_converged

__all__ = ["GDMMMultilabelState", "fit_gdmm_multilabel", "is_forest_mask"]

# coordinate-step rounds over a sample's active factors per visit: a second
# round costs O(active factors) (the scores follow the steps; the weights are
# written once per visit) and lowers the gap reached in a given number of
# passes by 5-25 % on the benchmark sets (BENCHMARKS.md, SSVM 3f)
_SAMPLE_ROUNDS = 2
# blocks of samples per pass: the greedy search's sorted pair weights are
# refreshed at each block, and max_time is checked between blocks.  A fixed
# count (not a time slice) keeps the iterates independent of the machine
_BLOCKS_PER_PASS = 16
# unigram factors (samples x labels) from which n_jobs alone runs groups of
# labels on threads: below it a round's thread hand-offs cost more than they
# save
LABEL_GROUP_MIN_ENTRIES = 1 << 16


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
                        n_jobs=None, training_partitions=1, keep_state=True):
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
        With one partition, no ``callback`` and at least
        ``LABEL_GROUP_MIN_ENTRIES`` unigram factors, the passes of groups of
        labels too, where the edges split into them
        (:class:`._gdmm_multilabel_label_groups.LabelGroupRounds`; with no
        edges the iterates of one thread, bit for bit).
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
        are those groups of labels instead
        (:class:`._gdmm_multilabel_label_groups.LabelGroupRounds`).  The
        iterates depend on ``rng`` and the partitions, not on ``n_jobs``.
    keep_state : bool
        Whether the final state is returned (for a warm start); else None
        is, and groups of labels write back only their weights.

    Returns
    -------
    W : ndarray (n_features, L), P : ndarray (L, L) upper triangle,
    history : list of dict, state : GDMMMultilabelState or None, converged : bool
    """
    Y, E = problem.Y, problem.E
    n, L = Y.shape
    ne = problem.n_edges
    if state is None:  # (the data's digest, checked by a warm start, only for a kept state)
        state = GDMMMultilabelState(problem, sublinear, signature=None if keep_state else ())
    if rounds is None:
        rounds = _SAMPLE_ROUNDS
    xnorm2 = problem.sq_norms()
    nbr_ptr, nbr = label_adjacency(E)
    samples = SampleFeatures(problem.data, problem.indices, problem.indptr, Y, xnorm2)
    edges, pids = edge_pair_ids(E)
    cert = MultilabelCertificate(problem, C, rho, n_jobs)
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
            partitions = LabelGroupRounds(problem, state, split, (C, rho, rounds), n_jobs,
                                          keep_state)
        elif client is None:
            partitions = ThreadMultilabelPartitions(problem, state, n_parts, edge_data, C, rho,
                                                    rounds, n_jobs)
        else:
            from ._gdmm_multilabel_dask import DaskMultilabelPartitions

            partitions = DaskMultilabelPartitions(problem, state, n_parts, edge_data, C, rho,
                                                  rounds, cert.forest, client)
    # n_jobs alone: groups of labels on the threads where the edges split
    # into them (without edges every label is a problem of its own, and the
    # groups' passes take one process's steps, bit for bit); the progress
    # records between blocks are then not made, hence not with a callback
    auto_split = None
    if (n_parts == 1 and callback is None and n_threads(n_jobs, L) > 1
            and n * L >= LABEL_GROUP_MIN_ENTRIES and active_dask_client() is None):
        auto_split = split_labels(E, n_threads(n_jobs, L))
    auto_groups = auto_split is not None
    if auto_groups:
        partitions = LabelGroupRounds(problem, state, auto_split, (C, rho, rounds), n_jobs,
                                      keep_state)
    deadline = None if max_time is None else monitor.start + max_time

    def step(it):
        if partitions is None:
            order = rng.permutation(n).astype(np.int64)
            out_of_time, asked_to_stop = serial_pass(
                state, samples, (E, ne, nbr_ptr, nbr, edges, pids), order, block_ends,
                (float(C), float(rho), int(rounds)), stats, monitor, deadline)
            res2 = gdmm_multilabel_multipliers(Y, state.A, float(C), float(eta), state.tmask,
                                               state.pool)
            return res2, out_of_time or asked_to_stop, asked_to_stop, {}
        res2, finished, local_time, merge_time = partitions.round(rng, eta, stats, deadline,
                                                                  _BLOCKS_PER_PASS)
        extra = {} if auto_groups else round_record(partitions, local_time, merge_time)
        return res2, not finished, False, extra

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
        return (np.count_nonzero(state.tmask) + state.pool.count.sum()) / max(n, 1)

    try:
        converged = run_rounds(step, certify, active, state, monitor, stats,
                               schedule=schedule, max_iter=max_iter, tol=tol, deadline=deadline)
    finally:
        cert.close()
        if partitions is not None:
            partitions.close()
    W, P = state.weights()
    return W, P, monitor.history, state if keep_state else None, converged
