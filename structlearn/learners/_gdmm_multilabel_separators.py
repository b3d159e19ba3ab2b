"""A tree of labels split across threads at a few *separator* labels.

Removing a label from a tree of interaction edges cuts it into the subtrees
of its neighbours.  :func:`split_labels` removes the centre of the largest
piece (the label whose removal leaves the smallest largest piece) until
the pieces pack into groups of about equal labels; each group then holds
its pieces and, as *fixed* labels, the separators next to them.  A group's
pass (:mod:`._gdmm_multilabel_label_groups`) steps its own labels' unigram
factors and every pair factor of its edges, the ones to a separator
included, and reads a separator's dual as a constant: no other thread
writes what it reads.  The separators' unigram factors are stepped after
the groups' passes, one sample after the other, by :func:`separator_pass`,
which reads a separator's pairs in every group's pool and activates the
ones its steps violate there: every factor takes the steps of one process's
pass, grouped differently.  A separator's dual, flag and weight column are
kept in every group that holds it, all equal.

Most samples' separator factors stay inactive: the test that decides it
reads the separator's score at the round's start (:func:`separator_scores`),
and its flags and penalty terms gathered from each group's arrays and pool
(:func:`separator_columns`), both computed on the groups' threads, so that
the steps, alone on one thread, visit the pool rows and feature rows of the
samples they step only.
"""

from typing import NamedTuple

import numba as nb
import numpy as np
import scipy.sparse as sp

from .._borrowing import borrowing_kernel
from .._prefetch import prefetch, prefetch_at, prefetch_span
from ._gdmm_multilabel_kernels import (_constraints, _find_pair, _unigram_step, _widen,
                                       pair_rows, store_pair)

__all__ = ["LabelSplit", "MAX_IMBALANCE", "SeparatorColumns", "put_separator_weights",
           "separator_columns", "separator_pass", "separator_scores", "separator_weights",
           "split_labels"]

# groups are used when the most labels in one stays within this share over an
# even split (or a split as even as whole labels allow)
MAX_IMBALANCE = 1.25
# separators at most per group
MAX_SEPARATORS_PER_GROUP = 2


class LabelSplit(NamedTuple):
    """Groups of labels and the separators between them.

    Attributes
    ----------
    groups : list of int64 arrays
        Each group's labels, increasing: whole connected components of the
        edges left once the separators are removed, and the separators next
        to them.
    separators : int64 (S,)
        Labels held by two groups or more, stepped apart.
    """

    groups: list
    separators: np.ndarray


def _packed(sizes, P):
    """Largest first into the smallest: the group of each piece and the loads."""
    load = np.zeros(P, dtype=np.int64)
    group_of = np.empty(sizes.shape[0], dtype=np.int64)
    for c in np.argsort(-sizes, kind="stable"):
        g = int(np.argmin(load))
        group_of[c] = g
        load[g] += sizes[c]
    return group_of, load


def _centre(adj, members):
    """The label of ``members`` (labels forming a tree of the CSR graph
    ``adj``) whose removal leaves the smallest largest piece."""
    inside = np.zeros(adj.shape[0], dtype=bool)
    inside[members] = True
    root = int(members[0])
    parent = {root: -1}
    order = [root]
    for v in order:  # breadth-first
        for u in adj.indices[adj.indptr[v]:adj.indptr[v + 1]]:
            if inside[u] and u not in parent:
                parent[int(u)] = v
                order.append(int(u))
    size = {v: 1 for v in order}
    for v in reversed(order[1:]):
        size[parent[v]] += size[v]
    total = len(order)
    best, best_piece = root, total
    for v in order:
        piece = total - size[v]
        for u in adj.indices[adj.indptr[v]:adj.indptr[v + 1]]:
            if inside[u] and parent.get(int(u)) == v:
                piece = max(piece, size[int(u)])
        if piece < best_piece:
            best, best_piece = v, piece
    return int(best)


def split_labels(E, n_parts):
    """Groups of labels for ``n_parts`` threads (see the module docstring).

    Parameters
    ----------
    E : uint8 (L, L)
        The upper-triangular edge mask.
    n_parts : int
        Groups wanted (at least 2).

    Returns
    -------
    LabelSplit or None
        The split into the most groups, up to ``n_parts``, that hold at most
        ``MAX_IMBALANCE`` times ``L / groups`` labels (or ``ceil(L /
        groups)``) each, with at most ``MAX_SEPARATORS_PER_GROUP``
        separators a group, none of them next to another; None when there
        is none into two groups or more (edges with a cycle and one
        component, among others).
    """
    from scipy.sparse.csgraph import connected_components

    L = E.shape[0]
    adj = sp.csr_matrix(E + E.T)
    n_comp, comp = connected_components(adj, directed=False)
    forest = int(E.sum()) == L - n_comp
    P = int(n_parts)
    separators = []
    removed = np.zeros(L, dtype=bool)
    best = None  # the balanced split with the most groups (at most P) so far
    while True:
        keep = np.flatnonzero(~removed)
        n_comp, comp = connected_components(adj[keep][:, keep], directed=False)
        sizes = np.bincount(comp, minlength=n_comp)
        for G in range(min(P, n_comp), 1, -1):  # the most groups the pieces fill evenly
            group_of, load = _packed(sizes, G)
            if load.max() <= max(MAX_IMBALANCE * (L - len(separators)) / G, -(-L // G)):
                if best is None or G > best[2]:
                    best = (keep, group_of[comp], G, list(separators))
                break
        if best is not None and best[2] == P:
            break
        if not forest or len(separators) >= MAX_SEPARATORS_PER_GROUP * P or sizes.max() < 3:
            break  # no cut left that makes more pieces
        centre = _centre(adj, keep[comp == np.argmax(sizes)])
        row = adj.indices[adj.indptr[centre]:adj.indptr[centre + 1]]
        if removed[row].any():
            break  # next to a separator: their pair would belong to no group
        separators.append(centre)
        removed[centre] = True
    if best is None:
        return None
    keep, kept_group, G, separators = best
    label_group = np.full(L, -1, dtype=np.int64)
    label_group[keep] = kept_group
    members = [set(keep[kept_group == g].tolist()) for g in range(G)]
    kept = []
    for s in separators:
        row = adj.indices[adj.indptr[s]:adj.indptr[s + 1]]
        around = np.unique(label_group[row])
        if around.shape[0] == 1:  # next to one group only: it joins it
            members[int(around[0])].add(s)
            continue
        kept.append(s)
        for g in around:
            members[int(g)].add(s)
    groups = [np.array(sorted(m), dtype=np.int64) for m in members]
    return LabelSplit(groups, np.array(sorted(kept), dtype=np.int64))


@nb.njit(cache=True, inline="always")
def _separator_penalty(i, sl, Y, A, C, pool):
    """The penalty part of a separator's gradient from its active pairs in
    one group's pool (``sl``: its label there) and their number."""
    fa, fb, fv, fnu = pair_rows(pool, i)
    pen = 0.0
    count = 0
    for q in range(pool.count[i]):
        if fa[q] != sl and fb[q] != sl:
            continue
        h1, h2, h3 = _constraints(i, q, Y, A, C, fa, fb, fv)
        p3 = max(0.0, h3 + fnu[q, 2])
        if fa[q] == sl:
            pen += max(0.0, h1 + fnu[q, 0]) - p3
        else:
            pen += max(0.0, h2 + fnu[q, 1]) - p3
        count += 1
    return pen, count


@nb.njit(cache=True, inline="always")
def _activate_around(i, sl, Y, A, tmask, C, pool, adjacency, xs, ys):
    """Activate every inactive edge of the separator ``sl`` (label of one
    group) that its marginal ``xs`` (target ``ys``) now violates, widening
    the sample's row as needed (``adjacency``: ``(nbr_ptr, nbr, n_edges)``
    of the group)."""
    nbr_ptr, nbr, n_edges = adjacency
    fa, fb, fv, fnu = pair_rows(pool, i)
    for r in range(nbr_ptr[sl], nbr_ptr[sl + 1]):
        c = nbr[r]
        a, b = min(sl, c), max(sl, c)
        if tmask[i, c] == 0 and Y[i, c] == 0:
            continue  # x_c = 0: z = 0 stays consistent
        if _find_pair(i, a, b, fa, fb, pool.count[i]) >= 0:
            continue
        xc = Y[i, c] - A[i, c] / C
        if ys != 0 and Y[i, c] != 0:
            bad = xs < 1.0 or xc < 1.0
        else:
            bad = xs + xc > 1.0
        if bad:
            if pool.count[i] == pool.capacity[i]:
                # the caller left room at the pool's end for the row to widen
                if not _widen(pool, i, pool.count[i] + 1, n_edges):
                    raise RuntimeError("separator_pass: no room left to widen a row")
                fa, fb, fv, fnu = pair_rows(pool, i)
            store_pair(i, a, b, fa, fb, fv, fnu, pool.count)


class SeparatorColumns(NamedTuple):
    """What the separators' activation test reads of every sample, in rows
    of their own (the groups' columns are strided by their labels).

    Attributes
    ----------
    scores : float64 (S, n)
        Each separator's score ``x_i . w`` at the start of the round
        (:func:`separator_scores`).
    flags : uint8 (S, H, n)
        Each separator's flag in each group that holds it (``H``: the most
        groups holding one separator; copy ``c`` of separator ``r`` is the
        ``c``-th group holding it, 0 past its last) after the groups' passes
        (:func:`separator_columns`).
    penalties : float64 (S, H, n)
        The penalty part of each separator's gradient from its pairs in each
        such group's pool after the groups' passes (:func:`separator_columns`).
    targets : (S, n), the targets' type
        Each separator's targets.

    A sample's flags and penalties change only by the separators' own steps
    on it, so those read after the passes are what its steps would read.
    """

    scores: np.ndarray
    flags: np.ndarray
    penalties: np.ndarray
    targets: np.ndarray


def separator_weights(Ws, seps):
    """Each separator's weight column in a row of its own: float64 (S, d),
    stepped by :func:`separator_pass` and put back into every copy by
    :func:`put_separator_weights` at the end of the round's steps."""
    local, home = seps
    w_sep = np.empty((home.shape[0], Ws[0].shape[0]))
    for r, h in enumerate(home):
        w_sep[r] = Ws[h][:, local[r, h]]
    return w_sep


def put_separator_weights(Ws, seps, w_sep):
    """Write the separators' weights ``w_sep`` (S, d) into every copy."""
    local = seps[0]
    for r in range(w_sep.shape[0]):
        for k in np.flatnonzero(local[r] >= 0):
            Ws[k][:, local[r, k]] = w_sep[r]


@nb.njit(cache=True, nogil=True)
def separator_scores(csr, w_sep, first, stop, out):
    """``out[r, i] = x_i . w_sep[r]`` for the samples ``first:stop``
    (``csr``: ``(data, indices, indptr, ...)``)."""
    data, indices, indptr = csr[0], csr[1], csr[2]
    for i in range(first, stop):
        for r in range(w_sep.shape[0]):
            w = w_sep[r]
            acc = 0.0
            for p in range(indptr[i], indptr[i + 1]):
                acc += data[p] * w[indices[p]]
            out[r, i] = acc


@nb.njit(cache=True, nogil=True)
def separator_columns(tmask, Y, A, C, pool, labels, copies, flags, penalties):
    """One group's flags and penalties of the separators, sample by sample,
    into :class:`SeparatorColumns`' ``flags`` and ``penalties`` (``labels``
    int64 (S,): the separators' labels in the group, -1 where it does not
    hold them; ``copies`` int64 (S,): the group's copy of each)."""
    for i in range(tmask.shape[0]):
        for r in range(labels.shape[0]):
            sl = labels[r]
            if sl >= 0:
                flags[r, copies[r], i] = tmask[i, sl]
                penalties[r, copies[r], i] = _separator_penalty(i, sl, Y, A, C, pool)[0]


@nb.njit(cache=True, nogil=True)
def separator_pass(csr, groups, seps, order, start, params, u, w_sep, columns):
    """The separators' unigram steps over the samples in ``order``.

    Parameters
    ----------
    csr : tuple
        ``(data, indices, indptr, xnorm2)``: the samples' features and
        squared norms.
    groups : tuple
        ``(Ys, As, tmasks, pools, nbr_ptrs, nbrs, n_edges)``: per group its
        targets, unigram duals, flags, pair pool and adjacency (tuples of
        one array a group), and int64 (P,) its edge counts.
    seps : tuple
        ``(local, home)``: int64 (S, P), each separator's label in each
        group (-1: not there), and int64 (S,), the group whose copy is read.
    order : int64 (m,)
    start : int
        The position in ``order`` to start at.
    params : tuple
        ``(C, rho, rounds)`` as in the groups' passes.
    u : float64 (>= any group's labels,)
        Scratch.
    w_sep : float64 (S, d)
        The separators' weights (:func:`separator_weights`), stepped here.
    columns : SeparatorColumns
        Their scores at the round's start, flags after the groups' passes
        and targets.

    Per sample and separator: its flag is set where any group set it (a
    group's greedy pair moves it), or where its gradient at the bound, with
    the score of the round's start, asks to move (a test of which factors
    join the active set, as a pass's unigram test reads the scores before
    the sample's steps); then ``rounds`` projected steps with the penalty
    of its pairs in every group, each step activating the edges it violates
    there; the weights take the steps once per sample.  Every copy of the
    separator's dual and flag takes the same values.

    Returns ``(t, k, need)``: the position to resume from when group ``k``'s
    pool lacks ``need`` free slots at its end for sample ``order[t]``'s row
    to widen into (nothing of it done yet), else ``(len(order), -1, 0)``.
    """
    nbr_ptrs = groups[4]
    local = seps[0]
    S, P = local.shape
    degree = np.zeros(P, dtype=np.int64)  # the separators' edges in each group
    for k in range(P):
        for r in range(S):
            sl = local[r, k]
            if sl >= 0:
                degree[k] += nbr_ptrs[k][sl + 1] - nbr_ptrs[k][sl]
    return _separator_samples(csr, groups, seps, order, start, params, u, degree, w_sep,
                              columns, np.zeros(S, dtype=np.uint8))


@nb.njit(cache=True, inline="always")
def _prefetch_sample(order, t, csr, pools, columns):
    """Ask for what the separators' steps read of sample ``order[t]`` where
    a flag is set: its feature row and pair rows (and for ``order[t + 1]``,
    the row bounds those addresses come from)."""
    data, indices, indptr = csr[0], csr[1], csr[2]
    i = order[t]
    if t + 1 < order.shape[0]:
        j = order[t + 1]
        for k in range(len(pools)):
            prefetch(pools[k].base, j)
            prefetch(pools[k].count, j)
        prefetch(indptr, j)
    flags = columns.flags
    flagged = False
    for r in range(flags.shape[0]):
        for c in range(flags.shape[1]):
            if flags[r, c, i] != 0:
                flagged = True
    if not flagged:  # (a hint: those the score test activates are not asked for)
        return
    prefetch_span(data, indptr[i], indptr[i + 1])
    prefetch_span(indices, indptr[i], indptr[i + 1])
    for k in range(len(pools)):
        pool = pools[k]
        b = pool.base[i]
        e = b + pool.count[i]
        prefetch_span(pool.left, b, e)
        prefetch_span(pool.right, b, e)
        prefetch_span(pool.dual, b, e)
        prefetch_at(pool.nu, b, 0)


@nb.njit(cache=True, inline="always")
def _separators_to_step(i, columns, rho, steps):
    """Which separators of sample ``i`` move (``steps[r]`` set): those
    flagged in a group, and those whose gradient at the bound asks to move
    (:class:`SeparatorColumns`); returns whether any does."""
    any_step = False
    for r in range(steps.shape[0]):
        ys = columns.targets[r, i]
        flagged = False
        for c in range(columns.flags.shape[1]):
            if columns.flags[r, c, i] != 0:
                flagged = True
        if not flagged:
            pen = 0.0
            for c in range(columns.penalties.shape[1]):
                pen += columns.penalties[r, c, i]
            g = columns.scores[r, i] + (1.0 - 2.0 * ys) + rho * pen
            flagged = (g > 0.0 and ys == 0) or (g < 0.0 and ys != 0)
        steps[r] = flagged
        any_step = any_step or flagged
    return any_step


@borrowing_kernel
def _separator_samples(csr, groups, seps, order, start, params, u, degree, w_sep, columns,
                       steps):
    """The body of :func:`separator_pass` (``degree`` int64 (P,): the
    separators' edges in each group; ``steps`` uint8 (S,): scratch, the
    sample's separators that move), borrowing its arrays: the views of the
    pools' rows it takes per sample count no references."""
    data, indices, indptr, xnorm2 = csr
    Ys, As, tmasks, pools, nbr_ptrs, nbrs, n_edges = groups
    local, home = seps
    C, rho, rounds = params
    S, P = local.shape
    for t in range(start, order.shape[0]):
        i = order[t]
        if t + 1 < order.shape[0]:
            _prefetch_sample(order, t + 1, csr, pools, columns)
        if not _separators_to_step(i, columns, rho, steps):
            continue
        for k in range(P):
            # room at the pool's end for the row to widen into, however many
            # of the separators' edges activate: its successive capacities
            # (doubling up to what they need, at most the edges) sum to less
            # than twice the last, itself below 2 (capacity + degree)
            pool = pools[k]
            need = min(4 * (pool.capacity[i] + degree[k]), 2 * n_edges[k])
            if (pool.capacity[i] < n_edges[k]
                    and pool.left.shape[0] - pool.top[0] < need):
                return t, k, need
        for r in range(S):
            if steps[r] == 0:
                continue
            h = home[r]
            jh = local[r, h]
            Yh, Ah = Ys[h], As[h]
            ys = columns.targets[r, i]
            w = w_sep[r]
            u[jh] = 0.0
            for p in range(indptr[i], indptr[i + 1]):
                u[jh] += data[p] * w[indices[p]]
            moved = 0.0
            for _ in range(rounds):
                pen = 0.0
                count = 0
                for k in range(P):
                    if local[r, k] >= 0:
                        dp, dc = _separator_penalty(i, local[r, k], Ys[k], As[k], C, pools[k])
                        pen += dp
                        count += dc
                d = _unigram_step(i, jh, u, Yh, Ah, C, rho, xnorm2, pen, count)
                if d == 0.0:
                    continue
                moved += d
                xs = ys - Ah[i, jh] / C
                for k in range(P):
                    sl = local[r, k]
                    if sl >= 0:
                        As[k][i, sl] = Ah[i, jh]
                        _activate_around(i, sl, Ys[k], As[k], tmasks[k], C, pools[k],
                                         (nbr_ptrs[k], nbrs[k], n_edges[k]), xs, ys)
            for k in range(P):
                if local[r, k] >= 0:
                    tmasks[k][i, local[r, k]] = 1
            if moved != 0.0:
                for p in range(indptr[i], indptr[i + 1]):
                    w[indices[p]] += data[p] * moved
    return order.shape[0], -1, 0
