"""Exact M-best back-ends: list Viterbi on chains, k-best max-product on
pairwise forests, enumeration.

``"kbest_chain"`` runs :func:`structlearn.inference.chains._kbest_kernels.kbest_path`
over the variables of a chain graph in path order (paths joined by a zero
transition, so a disjoint union of paths is one search).  ``"brute_force"``
scores every labeling in blocks and keeps the best ``m``, ties to the
lexicographically first labeling.
"""

import time

import numpy as np

from ...graphs._graph_kernels import score_labelings
from ..chains._kbest_kernels import kbest_path, kbest_tree
from ...graphs.structure import log10_n_labelings
from ..exact.forests import DEFAULT_MAX_STATES, _chain_schedule, _forest_schedule, _format_power_of_ten
from ._common import Deadline, final_status, make_result

__all__ = ["kbest_chain_mbest", "kbest_tree_mbest", "brute_force_mbest", "chain_path_arrays",
           "forest_arrays"]


def chain_path_arrays(graph, method="kbest_chain"):
    """Path layout of a chain graph for :func:`kbest_path`.

    Returns
    -------
    order : int64 (n_vars,)
        Variables in path order.
    ks, uoff, tbase, su, sv : int64 (n_vars,)
        States, unary offsets, table bases (-1 at a path start) and the
        strides of the previous and the current variable in the table.
    """
    order, link = _chain_schedule(graph, method)
    ks = graph.n_states[order].astype(np.int64)
    uoff = graph.unary_offsets[order].astype(np.int64)
    tbase = np.full(order.shape[0], -1, dtype=np.int64)
    su = np.ones(order.shape[0], dtype=np.int64)
    sv = np.ones(order.shape[0], dtype=np.int64)
    has = link >= 0
    f = link[has]
    tbase[has] = graph.table_offsets[graph.table_ids[f]]
    prev = np.empty_like(order)
    prev[1:] = order[:-1]
    prev_first = graph.scope_vars[graph.scope_indptr[f]] == prev[has]
    # flat index = x_first * n_states[second] + x_second
    su[has] = np.where(prev_first, ks[has], 1)
    sv[has] = np.where(prev_first, 1, graph.n_states[prev[has]])
    return order, ks, uoff, tbase, su, sv


def kbest_chain_mbest(graph, m, *, time_limit=None):
    """Exact ``m`` best labelings of a chain graph (list Viterbi).

    Parameters
    ----------
    graph : FactorGraph
        Every component a simple path of pairwise factors.
    m : int
    time_limit : float or None
        Accepted for uniformity; the search is not interrupted.

    Returns
    -------
    result : MBestResult
    """
    t0 = time.perf_counter()
    order, ks, uoff, tbase, su, sv = chain_path_arrays(graph)
    labels_path = np.zeros((m, graph.n_vars), dtype=np.int64)
    scores = np.full(m, -np.inf)
    found = kbest_path(ks, uoff, graph.unary, tbase, su, sv, graph.table_data, m, labels_path,
                       scores)
    labels = np.empty((found, graph.n_vars), dtype=np.int64)
    labels[:, order] = labels_path[:found]
    scores = graph.score_many(labels) if found else scores[:0]
    status = final_status(scores, scores, m, exhausted=True)
    return make_result(graph, labels, scores, scores, m, "kbest_chain", status, t0)


def forest_arrays(graph, method="kbest_tree"):
    """Rooted layout of a pairwise forest for :func:`kbest_tree`: the
    variables plus a virtual root (index ``n_vars``, one state, score 0)
    joined to every component's root by a zero-score edge.

    Returns
    -------
    ks, uoff, unary, order, parent, ch_ptr, children, tbase, sp, sc : arrays
        As :func:`structlearn.inference.chains._kbest_kernels.kbest_tree` takes them.
    """
    if graph.n_factors and np.any(graph.factor_orders != 2):
        raise ValueError(f"method {method!r} needs pairwise factors (use method='nilsson' "
                         "with map_method='tree' for higher-order forests)")
    var_order, var_parent, _, factor_parent = _forest_schedule(graph, method)
    n = graph.n_vars
    ks = np.append(graph.n_states, 1).astype(np.int64)
    uoff = np.append(graph.unary_offsets[:-1], graph.unary.shape[0]).astype(np.int64)
    unary = np.append(graph.unary, 0.0)
    parent = np.full(n + 1, -1, dtype=np.int64)
    tbase = np.full(n + 1, -1, dtype=np.int64)
    sp = np.ones(n + 1, dtype=np.int64)
    sc = np.ones(n + 1, dtype=np.int64)
    has = var_parent[:n] >= 0
    f = var_parent[:n][has]
    child = np.flatnonzero(has)
    par = factor_parent[f]
    parent[:n] = n
    parent[child] = par
    tbase[child] = graph.table_offsets[graph.table_ids[f]]
    par_first = graph.scope_vars[graph.scope_indptr[f]] == par
    # flat index = x_first * n_states[second] + x_second
    sp[child] = np.where(par_first, ks[child], 1)
    sc[child] = np.where(par_first, 1, ks[par])
    order = np.concatenate([[n], var_order]).astype(np.int64)
    kids = np.argsort(parent[:n], kind="stable").astype(np.int64)
    ch_ptr = np.zeros(n + 2, dtype=np.int64)
    np.cumsum(np.bincount(parent[:n], minlength=n + 1), out=ch_ptr[1:])
    return ks, uoff, unary, order, parent, ch_ptr, kids, tbase, sp, sc


def kbest_tree_mbest(graph, m, *, time_limit=None):
    """Exact ``m`` best labelings of a pairwise forest (k-best max-product).

    Parameters
    ----------
    graph : FactorGraph
        Acyclic, pairwise factors only.
    m : int
    time_limit : float or None
        Accepted for uniformity; the pass is not interrupted.

    Returns
    -------
    result : MBestResult
    """
    t0 = time.perf_counter()
    arrays = forest_arrays(graph)
    out = np.zeros((m, graph.n_vars + 1), dtype=np.int64)
    scores = np.full(m, -np.inf)
    found = kbest_tree(tuple(arrays), graph.table_data, m, out, scores)
    labels = out[:found, :graph.n_vars]
    scores = graph.score_many(labels) if found else scores[:0]
    status = final_status(scores, scores, m, exhausted=True)
    return make_result(graph, labels, scores, scores, m, "kbest_tree", status, t0)


def brute_force_mbest(graph, m, *, max_states=DEFAULT_MAX_STATES, time_limit=None,
                      block=1 << 15):
    """Exact ``m`` best labelings by enumeration (tiny graphs).

    Parameters
    ----------
    graph : FactorGraph
    m : int
    max_states : int or float, default=1e7
        Refuse graphs with more joint labelings than this.
    time_limit : float or None
        Checked between blocks: a stopped run returns the best ``m`` of the
        labelings enumerated so far, with status ``"time_limit"`` and no
        certified bounds (``+inf``).

    Returns
    -------
    result : MBestResult
        Ties go to the lexicographically first labeling.
    """
    if not np.isscalar(max_states) or not max_states > 0:
        raise ValueError(f"max_states must be a positive number, got {max_states!r}")
    t0 = time.perf_counter()
    deadline = Deadline(time_limit, t0)
    log_lab = log10_n_labelings(graph)
    if log_lab > np.log10(max_states) + 1e-9:
        raise ValueError(
            f"brute_force would enumerate {_format_power_of_ten(log_lab)} labelings, above "
            f"max_states={_format_power_of_ten(np.log10(max_states))}; raise max_states or "
            "use another method"
        )
    total = int(np.prod(graph.n_states.astype(object))) if graph.n_vars else 1
    shape = tuple(int(k) for k in graph.n_states)
    arrays = graph.arrays()
    best_idx = np.zeros(0, dtype=np.int64)
    best_val = np.zeros(0)
    stopped = False
    for start in range(0, total, block):
        idx = np.arange(start, min(total, start + block), dtype=np.int64)
        labs = (np.stack(np.unravel_index(idx, shape), axis=1).astype(np.int64)
                if shape else np.zeros((idx.size, 0), dtype=np.int64))
        vals = np.empty(idx.size)
        score_labelings(*arrays, labs, vals)
        keep = np.isfinite(vals)
        cand_idx = np.concatenate([best_idx, idx[keep]])
        cand_val = np.concatenate([best_val, vals[keep]])
        sel = np.lexsort((cand_idx, -cand_val))[:m]
        best_idx, best_val = cand_idx[sel], cand_val[sel]
        if deadline.passed() and start + block < total:
            stopped = True
            break
    labels = (np.stack(np.unravel_index(best_idx, shape), axis=1).astype(np.int64)
              if shape else np.zeros((best_idx.size, 0), dtype=np.int64))
    if stopped:
        return make_result(graph, labels, best_val, np.full(best_val.size, np.inf), m,
                           "brute_force", "time_limit", t0)
    status = final_status(best_val, best_val, m, exhausted=True)
    return make_result(graph, labels, best_val, best_val, m, "brute_force", status, t0)


# read by the M-best registry when it first loads its back-ends
MBEST_METHODS = (
    dict(name="kbest_chain", solver=kbest_chain_mbest, exact=True),
    dict(name="kbest_tree", solver=kbest_tree_mbest, exact=True),
    dict(name="brute_force", solver=brute_force_mbest, exact=True, params=("max_states", "block")),
)
