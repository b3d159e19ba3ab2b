"""Independent groups of labels of a multilabel GDMM problem, and the
moves of its state between the whole problem and the groups.

Labels that no chain of interaction edges joins share nothing in the
model: their weights, duals, pair factors and multipliers are apart, and
the objective, the hinge of every sample (Hamming loss, max-product over
the edges) and the dual are sums over the connected components of the
edge graph.  A group of whole components is then a multilabel problem of
its own, over the same samples, whose passes can run beside the other
groups' on threads and whose certificates add up to the whole problem's
(:class:`.gdmm_multilabel.LabelGroupRounds`).  With ``pairwise="none"``
every label is a component; a tree is cut into such groups at a few
separator labels that several groups hold (:mod:`._gdmm_multilabel_separators`).
The groups' states are copies of the whole problem's columns (a
separator's in each group that holds it, all equal).
"""

import dataclasses

import numba as nb
import numpy as np

from ._gdmm_multilabel_kernels import PairPool
from ._gdmm_multilabel_storage import _ranks, new_pair_pool

__all__ = ["group_pair_ids", "group_problem", "take_group_state", "release_whole_state",
           "put_group_states", "copy_columns"]

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


def put_group_states(state, groups, subs, layout):
    """Write the groups' states ``subs`` back into ``state`` (the inverse of
    :func:`take_group_state` over all the groups, which cover every label),
    in new arrays of ``layout`` (:func:`release_whole_state`)."""
    state.A, state.tmask, state.W = (np.empty(shape, dtype) for shape, dtype in layout)
    n, L = state.A.shape
    parts = []
    for labels, sub in zip(groups, subs):
        every = np.arange(labels.shape[0])
        for whole, part in ((state.A, sub.A), (state.tmask, sub.tmask), (state.W, sub.W)):
            copy_columns(part, every, whole, labels)
        state.Pw[group_pair_ids(labels, L)] = sub.Pw
        sample, slot = _used_slots(sub.pool)
        p = sub.pool
        parts.append((sample, labels[p.left[slot]], labels[p.right[slot]], p.dual[slot],
                      p.nu[slot]))
    sample, left, right, dual, nu = (np.concatenate(c) for c in zip(*parts))
    order = np.argsort(sample, kind="stable")
    state.pool = PairPool(*_packed_pool(n, sample[order], left[order], right[order],
                                        dual[order], nu[order]))
