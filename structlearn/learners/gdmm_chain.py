"""GDMM training of a chain structural SVM (Algorithm 1 with the BCFW inner loop).

Each outer iteration runs one pass of block-coordinate Frank-Wolfe over all
unigram and bigram factors in a random order (Algorithm 4: factorwise
maximization oracle, active-set growth, one projected step (25) with
``Q_f`` from section 5.1), then one multiplier step (13).  The oracles come
from :mod:`structlearn.oracles`: with ``oracle="sublinear"`` the bigram
search is the indicator-factor oracle (the four cases of Appendix C-1 over
row and column summaries of the shared transition table, started from the
best active pair's gradient: only a pair that beats it can enter the active
set) and the unigram search may use nu-partition sampling (eq. 21); with
``oracle="dense"`` both are full scans.

Factors are visited sequence by sequence: the sequences in a random order,
each sequence's unigram and bigram factors together in a random order of
their own (:class:`SequenceMajorOrder`).  Every factor is still visited once
per pass, and a sequence's token slots, pairs and features stay in cache
while its factors are stepped on, where a uniformly random order of all
factors jumps across the arrays at every step (measured against that order:
OCR passes 0.8-0.9x of its time, 1,000-class passes 0.83x, Porttinari to a
1 % gap 0.84x in one more pass; the gap per pass within a few percent).

Searches back off (a cached oracle in the sense of multi-plane BCFW): a
factor whose search found nothing to add to its active set steps within
that set, without a search, on its next visit, then on 3, 7 and 15 visits
(``SEARCH_BACKOFF_MAX``) after each further search that finds nothing; a
search that adds resets it.  Late in a fit most searches find nothing, and
an active-set step costs a fraction of one with a full search (OCR letters:
passes 0.85-0.9x of their time, the same gap after 100 passes; Porttinari:
the same passes to a 1 % gap, 0.77x of the solver time).  The certificate
is unaffected (it searches over all labelings), and a factor's next search
is at most 16 visits away.

With ``n_jobs`` of 2 or more, a pass over dense weights runs on two threads:
the unigram factors of one half of the sequences beside the bigram factors
of the other half, then the other way round (:mod:`._gdmm_chain_type_split`;
the two kinds of step share no weights).

Stopping uses a certified duality gap measured on the whole problem: the
primal value comes from the weights alone (loss-augmented Viterbi over all
labelings) and the dual value from a feasible point repaired from the
iterate (:func:`._gdmm_chain_kernels.gdmm_chain_dual`), so
``primal - dual >= primal - optimum`` always.  The consistency residual is
summed over all labels of all factors (labels outside the active slots
contribute exactly zero).
"""

import time

import numpy as np
import scipy.sparse as sp

from ._gdmm_chain_kernels import (ChainData, ChainWeights, EdgePairs, PassSettings,
                                  PassWorkspace, TokenSlots, dual_from_repair,
                                  gdmm_chain_multipliers, gdmm_chain_pass, repair_transitions,
                                  weights_from_duals)
from ._gdmm_chain_partitions import ChainPartitions
from ._gdmm_chain_type_split import type_split_pass
from ._gdmm_chain_visits import SequenceMajorOrder, grown, search_table
from ._lagged_checks import lagged_checks, plan_check
from ._partitions import (PartitionThreads, active_dask_client, check_training_partitions,
                          n_threads, round_record)
from ._ssvm_common import ChainMonitor, chain_edges, check_schedule, warn_not_converged

__all__ = ["GDMMChainState", "SequenceMajorOrder", "fit_gdmm_chain"]

_INITIAL_SLOTS = 8
# from this many labels the passes over dense weights score and update a
# float32 copy of them (half the memory traffic, twice the vector width); the
# float64 weights are rebuilt from the duals for the certificate and the model
FLOAT32_PASSES_MIN_LABELS = 64
# ... when no feature value exceeds this in magnitude (the float32 weights and
# scores then stay far inside float32's range)
FLOAT32_PASSES_MAX_FEATURE = 1e6
# a factor whose search found nothing to add steps within its active set
# (no search) on its next 1, then 3, 7, 15 visits, at most this many in a
# row; a search that adds resets it (0: search at every visit)
SEARCH_BACKOFF_MAX = 15
# sparse weight rows become the dense array once they store this share of its
# entries: they then save at most half of its memory (about 12 bytes an entry
# either way: int32 label and float64 weight, or float64 and float32 copies)
# and cost 2-3.5x its time per pass (ssvm.SPARSE_WEIGHTS_MIN_ENTRIES)
DENSE_WEIGHTS_MIN_FILL = 0.5


class GDMMChainState:
    """Dual variables, multipliers and weights of a GDMM chain run (warm starts)."""

    def __init__(self, problem, sublinear, sparse_weights=False):
        from ..oracles.sparse_rows import make_sparse_rows

        N = problem.n_tokens
        K = problem.n_labels
        A = min(K, _INITIAL_SLOTS)
        B = min(K * K, _INITIAL_SLOTS)
        self.signature = problem.signature()
        self.sublinear = sublinear
        labels = np.zeros((N, A), dtype=np.int64)
        labels[:, 0] = problem.y
        self.slots = TokenSlots(labels, np.ones(N, dtype=np.int64),
                                *(np.zeros((N, A)) for _ in range(5)))
        left, right = np.zeros((N, B), dtype=np.int64), np.zeros((N, B), dtype=np.int64)
        left[:-1, 0] = problem.y[:-1]
        right[:-1, 0] = problem.y[1:]
        self.pairs = EdgePairs(left, right, np.zeros((N, B), dtype=np.int64),
                               np.zeros((N, B), dtype=np.int64), np.zeros((N, B)),
                               np.ones(N, dtype=np.int64))
        # the weights: a dense (d, K) array W (Wsp None), or sparse rows Wsp
        # (W an empty placeholder the kernels take but never read)
        self.W = np.zeros((0 if sparse_weights else problem.n_features, K))
        self.Wsp = make_sparse_rows(problem.n_features) if sparse_weights else None
        self.v = np.zeros((K, K))
        # per factor id (unigram j, bigram N + j): visits left without a
        # search, and the current back-off (see SEARCH_BACKOFF_MAX)
        self.backoff = np.zeros((2, 2 * N), dtype=np.int64)
        self.n_iter = 0

    def __setstate__(self, state):
        """Read states pickled before the slots and pairs were named tuples."""
        if "slab" in state:
            state["slots"] = TokenSlots(*(state.pop(k) for k in (
                "slab", "ns", "alpha", "margL", "margR", "lamL", "lamR")))
            state["pairs"] = EdgePairs(*(state.pop(k) for k in (
                "pa", "pb", "psa", "psb", "beta", "nb")))
        self.__dict__.update(state)

    @property
    def sparse_weights(self):
        """Whether the weights are sparse rows."""
        return self.Wsp is not None

    def weights(self):
        """``W``: the dense array, or the sparse rows."""
        return self.Wsp if self.sparse_weights else self.W

    def densify(self, problem):
        """Turn sparse weight rows into the dense array (the same values)
        once they store ``DENSE_WEIGHTS_MIN_FILL`` of its entries, where the
        memory for the dense weights and their float32 copy is available;
        returns whether it did."""
        from .._memory import available_bytes
        from ..oracles.sparse_rows import sparse_rows_nnz, sparse_rows_to_dense

        if not self.sparse_weights:
            return False
        d, K = problem.n_features, problem.n_labels
        if sparse_rows_nnz(self.Wsp) < DENSE_WEIGHTS_MIN_FILL * d * K:
            return False
        avail = available_bytes()
        if avail is not None and avail < 12 * d * K + 16 * problem.indices.shape[0]:
            return False
        self.W = sparse_rows_to_dense(self.Wsp, K)
        self.Wsp = None
        return True

    def grow(self, K, slots, pairs, threads=None):
        """Double the slot (and/or pair) capacity, up to ``K`` (``K * K``),
        the arrays copied on ``threads`` (:func:`grown`)."""
        self.slots, self.pairs = grown(self.slots, self.pairs, K, slots, pairs, threads)


def _use_float32(problem, state, nu):
    """Whether the passes score and update float32 weights: the weights are
    dense, the unigram search is exact (``nu == 1``), there are at least
    ``FLOAT32_PASSES_MIN_LABELS`` labels and no feature value exceeds
    ``FLOAT32_PASSES_MAX_FEATURE``."""
    return not (state.sparse_weights or nu != 1 or problem.n_labels < FLOAT32_PASSES_MIN_LABELS
                or np.abs(problem.data).max(initial=0.0) > FLOAT32_PASSES_MAX_FEATURE)


def _features_by_row(problem):
    """The features by feature row ``(data, tokens, indptr)`` (CSR of
    ``X^T``) that :func:`weights_from_duals` rebuilds the weights from."""
    by_feature = sp.csr_matrix((problem.data, problem.indices, problem.indptr),
                               shape=(problem.n_tokens, problem.n_features)).T.tocsr()
    return (by_feature.data, by_feature.indices.astype(np.int64),
            by_feature.indptr.astype(np.int64))


def _float32_passes(problem, state, nu):
    """``(weights32, xt)`` for float32 passes (:func:`_use_float32`), or
    ``(None, None)``: ``weights32 = (W32, acc)``, a float32 copy of the dense
    weights and a float32 (K,) scratch; ``xt`` from :func:`_features_by_row`.
    """
    if not _use_float32(problem, state, nu):
        return None, None
    weights32 = (state.W.astype(np.float32), np.empty(problem.n_labels, dtype=np.float32))
    return weights32, _features_by_row(problem)


def _check_weights(state, weights32, overlapped):
    """``(W, Wsp)`` of a lagged check: on threads beside the next passes
    (``overlapped``), the state's own dense weights where the passes move
    only their float32 copy (nothing rebuilds ``W`` before the check's value
    is taken), else a copy; computed at once, the state's weights."""
    dense = np.empty((0, state.v.shape[0])) if state.sparse_weights else state.W
    if not overlapped:
        return dense, state.Wsp
    if state.sparse_weights:
        return dense, tuple(a.copy() for a in state.Wsp)
    return (state.W if weights32 is not None else state.W.copy()), None


def fit_gdmm_chain(problem, *, C, rho, eta, max_iter, tol, sublinear, n_partitions, rng,
                   state=None, verbose=0, callback=None, check_every=1, n_jobs=None,
                   sparse_weights=False, training_partitions=1):
    """Train with GDMM; returns ``(W, v, history, state, converged)``.

    Parameters
    ----------
    problem : ChainProblem
    C, rho, eta : float
        Loss weight, augmented-Lagrangian penalty, multiplier step.
    max_iter : int
        Outer iterations (passes) in this call.
    tol : float
        Stop when ``(primal - dual) / |primal| <= tol``.
    sublinear : bool
        Sorted bigram oracle and sampled unigram oracle, or dense scans.
    n_partitions : int
        nu of eq. 21 (used when ``sublinear``).
    rng : RandomState
        Draws the factor orders and partitions.
    state : GDMMChainState or None
        Continue from this state (warm start).
    check_every : int or CheckSchedule
        Evaluate the primal and dual values (and the stopping rule) after
        every ``check_every``-th pass and after the last one, or when the
        :class:`~._ssvm_common.CheckSchedule` says; other history records
        hold NaN there.
    n_jobs : int or None
        Threads for the primal evaluation (loss-augmented Viterbi over
        chunks of sequences; the value does not depend on it), for the
        partitions' passes, and (two) for the passes over dense weights of
        fits with at least ``TYPE_SPLIT_MIN_ENTRIES`` token scores, which
        then step unigram and bigram factors side by side
        (:mod:`._gdmm_chain_type_split`: the iterates are those of the
        one-thread pass over another factor order, the same for any
        ``n_jobs`` above 1).
    sparse_weights : bool
        Keep ``W`` as sparse rows (:mod:`structlearn.oracles.sparse_rows`):
        memory in proportion to its non-zeros; the same
        iterates as the dense array.  Needs ``n_partitions=1``; a warm start
        keeps its state's storage.  Rows that come to store
        ``DENSE_WEIGHTS_MIN_FILL`` of the dense array's entries become that
        array after a pass (:meth:`GDMMChainState.densify`), and the returned
        ``W`` is then dense.
    training_partitions : int
        1: the passes described above.  More: the sequences are split into
        that many partitions whose passes run on ``n_jobs`` threads and
        merge after each pass (:mod:`._gdmm_chain_partitions`; dense weights
        only).  The iterates depend on ``rng`` and the partitions, not on
        ``n_jobs``.

    Returns
    -------
    W : ndarray (n_features, K) or sparse-rows tuple, v : ndarray (K, K),
    history : list of dict, state : GDMMChainState, converged : bool
    """
    from ..oracles.sorted_tables import make_pair_workspace
    from ..oracles.inner_product import make_inner_workspace
    from ..oracles.sparse_rows import make_sparse_rows_workspace

    K = problem.n_labels
    N = problem.n_tokens
    if state is None:
        state = GDMMChainState(problem, sublinear, sparse_weights)
    if not hasattr(state, "backoff"):  # a state saved before the search back-off
        state.backoff = np.zeros((2, 2 * N), dtype=np.int64)
    xnorm2 = problem.sq_norms()
    has_left, has_right = chain_edges(problem.offsets, N)
    edges = np.flatnonzero(has_right).astype(np.int64)
    factors = np.concatenate([np.arange(N, dtype=np.int64), N + edges])
    orders = SequenceMajorOrder(factors, problem.offsets, N)
    nu = int(n_partitions) if sublinear else 1
    if state.sparse_weights and nu > 1:
        raise ValueError("sparse weights need the exact unigram search (n_partitions=1)")
    state.v = np.ascontiguousarray(state.v)
    n_parts = check_training_partitions(training_partitions, problem.n_sequences, "sequences")
    if state.sparse_weights and n_parts > 1:
        raise ValueError("training_partitions > 1 needs dense weights (sparse_weights=False)")
    if n_parts > 1:  # the partitions keep their own tables and weight rows
        vt, vstate, weights32 = state.v.ravel(), None, None
    else:
        vt, vstate = search_table(state.v, sublinear)
        # from FLOAT32_PASSES_MIN_LABELS the passes score and update float32
        # weights; W is rebuilt from the duals for each certificate and at the end
        weights32, xt = _float32_passes(problem, state, nu)

    def exact_weights():
        if partitions is not None:
            partitions.rebuild_weights()
        elif weights32 is not None:
            weights_from_duals(*xt, state.slots, state.W)
            np.copyto(weights32[0], state.W, casting="same_kind")  # no float32 drift

    chain = ChainData(problem.data, problem.indices, problem.indptr, problem.y, xnorm2,
                      has_left, has_right, problem.data)
    settings = PassSettings(float(C), float(rho), nu, int(SEARCH_BACKOFF_MAX))
    partitions = None
    if n_parts > 1:
        client = active_dask_client()
        if client is None:
            partitions = ChainPartitions(problem, state, chain, n_parts, settings,
                                         _use_float32(problem, state, nu), sublinear,
                                         _features_by_row(problem), n_jobs)
        else:
            from ._gdmm_chain_dask import DaskChainPartitions

            partitions = DaskChainPartitions(problem, state, chain, n_parts, settings,
                                             _use_float32(problem, state, nu), sublinear,
                                             client)
    work = PassWorkspace(make_inner_workspace(K), make_pair_workspace(K, K),
                         make_sparse_rows_workspace(K if state.sparse_weights else 0),
                         state.backoff, np.zeros(3, dtype=np.int64))
    stats = work.stats
    vfeas = np.empty(K * K)
    monitor = ChainMonitor(problem, C, verbose, callback, n_jobs=n_jobs)
    lagged = lagged_checks(monitor, n_jobs, partitions, callback)  # or None
    threads = PartitionThreads(n_threads(n_jobs, 2))  # widen the slot and pair lists
    # dense passes on two threads: unigram and bigram factors side by side
    split = type_split_pass(problem, threads, work) if partitions is None else None
    converged = False
    rel_gap = np.inf
    stale = False
    schedule = check_schedule(check_every, tol)

    def checked_repair():
        """Rebuild W exactly and repair the transitions into ``vfeas``
        (returns the dual's linear term); the repair runs on a worker
        meanwhile where lagged checks have one."""
        args = (state.v.ravel(), chain, state.slots, state.pairs, float(C), vfeas)
        if lagged is not None and lagged.overlap is not None:
            return lagged.overlap.beside(exact_weights, repair_transitions, *args)
        exact_weights()
        return repair_transitions(*args)

    try:
        for it in range(max_iter):
            t0 = time.perf_counter()
            stats[:] = 0
            weights = ChainWeights(state.W, state.v.ravel(), vt)
            extra = {}
            if partitions is None:
                order = orders.draw(rng)
                parts = rng.randint(nu, size=N).astype(np.int64) if nu > 1 else None
                if split is not None and not state.sparse_weights:
                    res2 = split.run(chain, state.slots, state.pairs, weights, settings, order,
                                     parts, weights32, vstate, float(eta), threads)
                else:
                    state.Wsp = gdmm_chain_pass(chain, state.slots, state.pairs, weights,
                                                settings, work, order, parts, state.Wsp,
                                                weights32, vstate)
                    res2 = gdmm_chain_multipliers(chain, state.slots, float(eta))
            else:
                res2, local_time, merge_time, remote_active = partitions.round(rng, eta, stats)
                extra = round_record(partitions, local_time, merge_time)
            pass_time = time.perf_counter() - t0
            state.n_iter += 1
            primal = dual = np.nan
            checking, starting = plan_check(lagged, schedule, it + 1, max_iter, tol)
            # W lags the float32 weights' steps, or carries the partitions' rounding
            stale = weights32 is not None or partitions is not None
            if checking:
                stale = False
                if partitions is not None and partitions.remote:
                    exact_weights()
                    primal, dual = partitions.certificate(C)
                else:
                    lin = checked_repair()
                    if not starting:
                        dual = float(dual_from_repair(state.W, state.Wsp, vfeas, lin))
                        primal = monitor.primal(state.weights(), state.v)
            if partitions is not None and partitions.remote:
                active = remote_active / max(N + edges.size, 1)
            else:
                active = ((state.slots.count.sum() + state.pairs.count[edges].sum())
                          / max(N + edges.size, 1))
            stop = monitor.record(state.n_iter, primal, dual, float(np.sqrt(res2)),
                                  float(active), stats[0], pass_time,
                                  overflow=int(stats[1] + stats[2]), **extra)
            if starting:
                lagged.start(it + 1, *_check_weights(state, weights32, lagged.overlap is not None),
                             state.v, repair=(vfeas, lin))
            rel_gap = monitor.history[-1]["relative_gap"]
            if checking and not starting:
                schedule.checked(it + 1, rel_gap)
            # grow capacities when full (a search result was dropped or a list is at capacity)
            full_slots = stats[1] > 0 or state.slots.count.max() >= state.slots.labels.shape[1]
            full_pairs = (stats[2] > 0
                          or state.pairs.count.max() >= state.pairs.left_label.shape[1])
            if (full_slots or full_pairs) and not (partitions is not None and partitions.remote):
                # (remote partitions grow their own)
                state.grow(K, full_slots, full_pairs, threads)
            if state.densify(problem):  # dense passes from now on (float32 from 64 labels)
                weights32, xt = _float32_passes(problem, state, nu)
            if stats[1] + stats[2] == 0 and rel_gap <= tol:
                converged = True
                break
            if stop:
                break
        if stale:
            exact_weights()
    finally:
        threads.close()
        if lagged is not None:
            lagged.close()
        if partitions is not None:
            partitions.close()
    if not converged and len(monitor.history) == max_iter:
        warn_not_converged("GDMM", max_iter, rel_gap)
    return state.weights(), state.v, monitor.history, state, converged
