"""Independent groups of labels of a multilabel GDMM problem, and the
moves of its state between the whole problem and the groups.

Labels that no chain of interaction edges joins share nothing in the
model: their weights, duals, pair factors and multipliers are apart, and
the objective, the hinge of every sample (Hamming loss, max-product over
the edges) and the dual are sums over the connected components of the
edge graph.  A group of whole components is then a multilabel problem of
its own, over the same samples, whose passes can run beside the other
groups' on threads and whose certificates add up to the whole problem's
(:class:`LabelGroupRounds`, below).  With ``pairwise="none"``
every label is a component; a tree is cut into such groups at a few
separator labels that several groups hold (:mod:`._gdmm_multilabel_separators`).
The groups' states are copies of the whole problem's columns (a
separator's in each group that holds it, all equal).
"""

import dataclasses
import time

import numba as nb
import numpy as np

from .._parallel import chunk_bounds
from ._gdmm_multilabel_kernels import PairPool, gdmm_multilabel_dual, gdmm_multilabel_multipliers
from ._gdmm_multilabel_separators import (SeparatorColumns, put_separator_weights,
                                          separator_columns, separator_pass, separator_scores,
                                          separator_weights)
from ._gdmm_multilabel_state import (GDMMMultilabelState, MultilabelCertificate,
                                     label_adjacency, serial_pass)
from ._gdmm_multilabel_storage import _ranks, edge_pair_ids, new_pair_pool
from ._multilabel_kernels import SampleFeatures
from ._partitions import PartitionThreads, n_threads
from ._ssvm_common import sq_norm

__all__ = ["LabelGroupRounds", "copy_columns", "group_pair_ids", "group_problem",
           "put_group_states", "put_group_weights", "release_whole_state", "take_group_state"]

def group_problem(problem, labels):
    """The problem restricted to ``labels`` (int64, increasing): the same
    samples, the group's targets and edges (labels renumbered ``0..``)."""
    return dataclasses.replace(problem, Y=np.ascontiguousarray(problem.Y[:, labels]),
                               E=np.ascontiguousarray(problem.E[np.ix_(labels, labels)]))


@nb.njit(cache=True, nogil=True)
def copy_columns(src, src_cols, dst, dst_cols):
    """``dst[:, dst_cols] = src[:, src_cols]``, row by row (one pass over
    each array, where numpy's fancy indexing takes two)."""
    for i in range(src.shape[0]):
        a = src[i]
        b = dst[i]
        for t in range(src_cols.shape[0]):
            b[dst_cols[t]] = a[src_cols[t]]


def _pair_ids(a, b, L):
    return a * (2 * L - a - 1) // 2 + (b - a - 1)


def group_pair_ids(labels, L):
    """The ids in the whole problem's pair weights (``L`` labels) of a
    group's pairs, in the group's order (``labels`` increasing)."""
    a, b = np.triu_indices(labels.shape[0], 1)
    return _pair_ids(labels[a], labels[b], L)


def _used_slots(pool):
    """The used slots of every sample, in sample order: ``(sample, slot)``."""
    counts = pool.count
    sample = np.repeat(np.arange(counts.shape[0], dtype=np.int64), counts)
    return sample, np.repeat(pool.base, counts) + _ranks(counts)


def _packed_pool(n, sample, left, right, dual, nu):
    """A pool holding the given pairs (``sample`` non-decreasing), each
    sample's with half as many slots again free (at least one)."""
    counts = np.bincount(sample, minlength=n).astype(np.int64)
    pool = new_pair_pool(counts + np.maximum(counts // 2, 1), max(n, 64))
    pool.count[:] = counts
    dst = np.repeat(pool.base, counts) + _ranks(counts)
    pool.left[dst] = left
    pool.right[dst] = right
    pool.dual[dst] = dual
    pool.nu[dst] = nu
    return pool


def take_group_state(state, labels, sub):
    """Copy the group ``labels``' part of ``state`` (a whole problem's
    GDMM state) into ``sub``, a fresh state of :func:`group_problem`."""
    L = state.A.shape[1]
    sub.n_iter = state.n_iter
    if state.n_iter == 0 and not state.pool.count.any() and not state.A.any():
        return  # a fresh state: the group's is too
    every = np.arange(labels.shape[0])
    for whole, part in ((state.A, sub.A), (state.tmask, sub.tmask), (state.W, sub.W)):
        copy_columns(whole, labels, part, every)
    local = np.full(L, -1, dtype=np.int64)
    local[labels] = np.arange(labels.shape[0])
    sub.Pw[:] = state.Pw[group_pair_ids(labels, L)]
    sample, slot = _used_slots(state.pool)
    # a pair lies within one group (a separator's with the group of its partner)
    mine = (local[state.pool.left[slot]] >= 0) & (local[state.pool.right[slot]] >= 0)
    slot = slot[mine]
    sub.pool = _packed_pool(state.A.shape[0], sample[mine], local[state.pool.left[slot]],
                            local[state.pool.right[slot]], state.pool.dual[slot],
                            state.pool.nu[slot])


def release_whole_state(state):
    """Drop ``state``'s unigram duals, flags and weights once every group has
    taken its part (the fit then holds them once): returns their shapes and
    types for :func:`put_group_states`."""
    layout = [(a.shape, a.dtype) for a in (state.A, state.tmask, state.W)]
    state.A = state.tmask = state.W = None
    return layout


def put_group_weights(state, groups, subs, layout):
    """Write the groups' weights and pair weights back into ``state``, the
    weights in a new array of ``layout`` (:func:`release_whole_state`)."""
    shape, dtype = layout[2]
    state.W = np.empty(shape, dtype)
    L = shape[1]
    for labels, sub in zip(groups, subs):
        copy_columns(sub.W, np.arange(labels.shape[0]), state.W, labels)
        state.Pw[group_pair_ids(labels, L)] = sub.Pw


def put_group_states(state, groups, subs, layout):
    """Write the groups' states ``subs`` back into ``state`` (the inverse of
    :func:`take_group_state` over all the groups, which cover every label),
    in new arrays of ``layout`` (:func:`release_whole_state`)."""
    put_group_weights(state, groups, subs, layout)
    state.A, state.tmask = (np.empty(shape, dtype) for shape, dtype in layout[:2])
    n = state.A.shape[0]
    parts = []
    for labels, sub in zip(groups, subs):
        every = np.arange(labels.shape[0])
        for whole, part in ((state.A, sub.A), (state.tmask, sub.tmask)):
            copy_columns(part, every, whole, labels)
        sample, slot = _used_slots(sub.pool)
        p = sub.pool
        parts.append((sample, labels[p.left[slot]], labels[p.right[slot]], p.dual[slot],
                      p.nu[slot]))
    sample, left, right, dual, nu = (np.concatenate(c) for c in zip(*parts))
    order = np.argsort(sample, kind="stable")
    state.pool = PairPool(*_packed_pool(n, sample[order], left[order], right[order],
                                        dual[order], nu[order]))


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
    params : tuple
        ``(C, rho, rounds)`` as in the one-process pass.
    n_jobs : int or None
        Threads running the groups (at most one per group).
    keep_state : bool
        Whether :meth:`close` writes the whole state back (else the weights
        only: nothing else of it is read again).
    """

    remote = False
    certifies_itself = True

    def __init__(self, problem, state, split, params, n_jobs, keep_state=True):
        self.state = state
        self.groups = split.groups
        self.n_parts = len(split.groups)
        C, rho, rounds = params
        self.params = (float(C), float(rho), int(rounds))
        self.keep_state = bool(keep_state)
        L = problem.Y.shape[1]
        S = split.separators.shape[0]
        xnorm2 = problem.sq_norms()
        self.local = np.full((S, self.n_parts), -1, dtype=np.int64)
        self.problems, self.states, self.samples, self.edges = [], [], [], []
        self.certs, self.fixed, self.pair_ids = [], [], []
        for k, labels in enumerate(split.groups):
            sub = group_problem(problem, labels)
            sub_state = GDMMMultilabelState(sub, state.sublinear, signature=(),  # never reused
                                            written=True)
            take_group_state(state, labels, sub_state)
            nbr_ptr, nbr = label_adjacency(sub.E)
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
            if not S:  # with separators the whole problem's certificate is taken
                self.certs.append(MultilabelCertificate(sub, C, rho))
            self.fixed.append(fixed)
            self.pair_ids.append(group_pair_ids(labels, L))
        self.home = np.argmax(self.local >= 0, axis=1).astype(np.int64)
        self.copies = (self.local >= 0).sum(axis=1)
        self.csr = (problem.data, problem.indices, problem.indptr, xnorm2)
        self.scratch = np.empty(L)
        n = problem.Y.shape[0]
        targets = np.array([self.problems[h].Y[:, self.local[r, h]]
                            for r, h in enumerate(self.home)], dtype=problem.Y.dtype)
        H = int(self.copies.max(initial=0))
        self.columns = SeparatorColumns(np.empty((S, n)), np.zeros((S, H, n), dtype=np.uint8),
                                        np.zeros((S, H, n)), targets.reshape(S, n))
        # per group: its labels of the separators, and its copy of each (its
        # rank among the groups holding it)
        copy_of = np.cumsum(self.local >= 0, axis=1) - 1
        self.sep_labels = [np.ascontiguousarray(self.local[:, k]) for k in range(self.n_parts)]
        self.sep_copies = [np.ascontiguousarray(copy_of[:, k]) for k in range(self.n_parts)]
        # the scores' samples each group's thread takes (by their features)
        self.score_bounds = chunk_bounds(np.diff(problem.indptr) + 1.0, self.n_parts)
        self.w_sep = None
        self.best_dual = 0.0
        self.layout = release_whole_state(state)
        self.stats = [np.zeros(2, dtype=np.int64) for _ in split.groups]
        self.threads = PartitionThreads(n_threads(n_jobs, self.n_parts))

    def _pass(self, k, order, block_ends, deadline):
        """Group ``k``'s pass (with, before it, the separators' scores of a
        share of the samples and, after it, the group's columns of the
        separators' test: :class:`._gdmm_multilabel_separators.SeparatorColumns`);
        returns whether it stopped for lack of time."""
        stats = self.stats[k]
        stats[:] = 0
        if self.local.shape[0] and k + 1 < self.score_bounds.shape[0]:
            separator_scores(self.csr, self.w_sep, self.score_bounds[k],
                             self.score_bounds[k + 1], self.columns.scores)
        out_of_time, _ = serial_pass(self.states[k], self.samples[k], self.edges[k], order,
                                     block_ends, self.params, stats, _Quiet, deadline,
                                     self.fixed[k])
        if self.local.shape[0]:
            st = self.states[k]
            separator_columns(st.tmask, self.problems[k].Y, st.A, self.params[0], st.pool,
                              self.sep_labels[k], self.sep_copies[k], self.columns.flags,
                              self.columns.penalties)
        return out_of_time

    def _separators(self, order):
        """The separators' steps over ``order`` (packing a group's pool when a
        sample's row there lacks room), their weights then put back into
        every group."""
        pos = 0
        st, pr = self.states, self.problems
        while self.local.shape[0] and pos < order.shape[0]:
            groups = (tuple(p.Y for p in pr), tuple(s.A for s in st), tuple(s.tmask for s in st),
                      tuple(s.pool for s in st), tuple(e[2] for e in self.edges),
                      tuple(e[3] for e in self.edges),
                      np.array([e[1] for e in self.edges], dtype=np.int64))
            pos, k, need = separator_pass(self.csr, groups, (self.local, self.home), order, pos,
                                          self.params, self.scratch, self.w_sep, self.columns)
            if k >= 0:
                st[k].compact(need)
        if self.local.shape[0]:
            put_separator_weights(tuple(s.W for s in st), (self.local, self.home), self.w_sep)

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
        if self.local.shape[0]:  # the separators' weights as the round starts
            self.w_sep = separator_weights(tuple(s.W for s in self.states),
                                           (self.local, self.home))
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
            values = self.threads.map(MultilabelCertificate.evaluate, self.certs, self.states)
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
        total = sum(np.count_nonzero(s.tmask) + s.pool.count.sum() for s in self.states)
        for r, k in enumerate(self.home):
            flags = self.states[k].tmask[:, self.local[r, k]]
            total -= (self.copies[r] - 1) * np.count_nonzero(flags)
        return float(total)

    def close(self):
        """Write the groups' states (or their weights only, without
        ``keep_state``) back into the whole problem's."""
        self.threads.close()
        put = put_group_states if self.keep_state else put_group_weights
        put(self.state, self.groups, self.states, self.layout)
