"""Exact MAP as an integer linear program solved by scipy's HiGHS (``milp``).

The local-polytope formulation: one variable per (variable, label) and per
(factor, table entry); each variable's labels sum to one; each factor's
entries marginalize to each of its variables' labels.  Node variables are
integral (then every factor variable is too).  Forbidden entries (``-inf``)
get the upper bound 0.  Meant for small and medium instances: the program has
``sum(n_states) + sum(table sizes)`` columns.

Registered as ``"ilp"`` and as ``"milp"`` (the same solver under scipy's
name): status ``"exact"`` when HiGHS proves optimality (to a relative gap of
:data:`MIP_REL_GAP`); at its time limit the result carries the incumbent
(status ``"time_limit"``).  The upper bound is HiGHS' dual bound in both
cases.
"""

import time

import numpy as np

from .._budget import check_time_limit
from ..lp._lp_kernels import argmax_segments
from ..result import MapResult

__all__ = ["ilp_map", "local_polytope", "milp_map", "n_columns", "root_seconds"]

DEFAULT_MAX_COLUMNS = 2_000_000
# HiGHS stops at this relative gap (its own default, 1e-4, would call a
# labeling optimal up to 0.01 % of its score); the result's upper bound is
# HiGHS' dual bound either way.  The branch and bound's default ``tol``.
MIP_REL_GAP = 1e-6
# scipy's ``milp`` converts the program before HiGHS' clock starts and the
# solution after it stops: 0.28-0.73 s on programs of 0.47-1.05 million
# nonzeros told to stop at once (Potts grids of 20 x 20 to 60 x 60 with 8-21
# labels, an object-detection instance), 0.6-0.8 us a nonzero.  That much of
# a time limit is kept from HiGHS.
WRAPPER_SECONDS_PER_NONZERO = 0.8e-6
# HiGHS reads its time limit between phases: a limit that falls in its root
# LP is overrun until that ends, 3.1-7.7 s after the start on the same
# programs (0.21-0.48 million columns), 1.2e-5 to 1.6e-5 s a column
# (3.7e-5 on a weighted CSP of 19,603 columns, whose forbidden entries make
# the LP harder).  :func:`root_seconds` is a floor for a useful slice.
ROOT_SECONDS_PER_COLUMN = 1.5e-5
# HiGHS is given at least this limit (it then stops after presolve)
MIN_HIGHS_SECONDS = 1e-3


def local_polytope(graph):
    """Equality constraints of the local polytope of ``graph``.

    Returns
    -------
    A : scipy.sparse.csr_matrix, shape (n_rows, n_cols)
        Columns: node labels (``graph.unary`` layout), then every factor's
        table entries (factor by factor, flat table order).
    b : ndarray (n_rows,)
    theta : ndarray (n_cols,)
        Scores of the columns.
    factor_offsets : ndarray (n_factors + 1,)
        Column offsets of the factors (after the node columns).
    """
    import scipy.sparse as sp

    n_node = graph.unary.shape[0]
    sizes = np.diff(graph.table_offsets)[graph.table_ids]
    factor_offsets = np.zeros(graph.n_factors + 1, dtype=np.int64)
    np.cumsum(sizes, out=factor_offsets[1:])
    factor_offsets += n_node
    rows, cols, vals, b = [], [], [], []
    # each variable's labels sum to 1
    node_var = np.repeat(np.arange(graph.n_vars), graph.n_states)
    rows.append(node_var)
    cols.append(np.arange(n_node))
    vals.append(np.ones(n_node))
    b.append(np.ones(graph.n_vars))
    n_rows = graph.n_vars
    theta = [graph.unary]
    for f in range(graph.n_factors):
        scope = graph.scope(f)
        shape = tuple(int(k) for k in graph.n_states[scope])
        entries = np.arange(int(np.prod(shape)))
        coords = np.unravel_index(entries, shape)
        theta.append(graph.factor_table(f).ravel())
        for pos, v in enumerate(scope):
            lo = graph.unary_offsets[v]
            k = shape[pos]
            # sum of the entries with x_v = a, minus mu_v(a), is 0
            rows.append(n_rows + coords[pos])
            cols.append(factor_offsets[f] + entries)
            vals.append(np.ones(entries.size))
            rows.append(n_rows + np.arange(k))
            cols.append(lo + np.arange(k))
            vals.append(-np.ones(k))
            b.append(np.zeros(k))
            n_rows += k
    A = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                      shape=(n_rows, int(factor_offsets[-1])))
    return A, np.concatenate(b), np.concatenate(theta), factor_offsets


def n_columns(graph):
    """Columns of the local-polytope program of ``graph`` (one per
    variable label and per factor table entry)."""
    return graph.unary.shape[0] + int(np.diff(graph.table_offsets)[graph.table_ids].sum())


def root_seconds(graph):
    """A floor on the seconds HiGHS takes to its first check of the time
    limit on ``graph``'s program (its root LP): shorter slices are
    overrun (see :data:`ROOT_SECONDS_PER_COLUMN`)."""
    return ROOT_SECONDS_PER_COLUMN * n_columns(graph)


def ilp_map(graph, *, time_limit=None, max_columns=DEFAULT_MAX_COLUMNS, name="ilp"):
    """Exact MAP by HiGHS' branch and cut on the local-polytope ILP.

    Parameters
    ----------
    graph : FactorGraph
    time_limit : float or None
        Seconds from this call: HiGHS gets what is left after the program
        is built, less scipy's conversions around it (an estimate,
        :data:`WRAPPER_SECONDS_PER_NONZERO`).  HiGHS reads it between its
        phases only: a limit shorter than its root LP is overrun.
    max_columns : int, default=2e6
        Refuse programs with more columns than this.
    name : str, default="ilp"
        The method's name in messages and in the result.

    Returns
    -------
    result : MapResult
    """
    t0 = time.perf_counter()
    from scipy.optimize import LinearConstraint, milp

    time_limit = check_time_limit(time_limit)
    n_cols = n_columns(graph)
    if n_cols > max_columns:
        raise ValueError(f"method {name!r} would build {n_cols} columns, above max_columns="
                         f"{max_columns}; use an LP back-end or raise max_columns")
    A, b, theta, _ = local_polytope(graph)
    forbidden = ~np.isfinite(theta)
    c = -np.where(forbidden, 0.0, theta)
    upper = np.where(forbidden, 0.0, 1.0)
    integrality = np.zeros(theta.shape[0], dtype=np.int64)
    integrality[:graph.unary.shape[0]] = 1
    options = {"mip_rel_gap": MIP_REL_GAP}
    if time_limit is not None:
        left = time_limit - (time.perf_counter() - t0) - WRAPPER_SECONDS_PER_NONZERO * A.nnz
        options["time_limit"] = max(left, MIN_HIGHS_SECONDS)
    res = milp(c, integrality=integrality, bounds=(np.zeros_like(upper), upper),
               constraints=LinearConstraint(A, b, b), options=options)
    labels = np.zeros(graph.n_vars, dtype=np.int64)
    if res.x is not None:
        argmax_segments(np.ascontiguousarray(res.x[:graph.unary.shape[0]]),
                        graph.unary_offsets, labels)
        score = float(graph.score(labels))
    else:
        score = -np.inf
    bound = getattr(res, "mip_dual_bound", None)
    dual_ub = -float(bound) if bound is not None and np.isfinite(bound) else np.inf
    if res.status == 0:  # optimal within MIP_REL_GAP
        status, ub = "exact", dual_ub if np.isfinite(dual_ub) else score
    elif res.status == 2:  # infeasible: no labeling avoids the forbidden entries
        status, ub = "exact", -np.inf
    else:
        status, ub = "time_limit", dual_ub
    return MapResult(labels=labels, score=score, upper_bound=max(ub, score), n_iter=1,
                     converged=status == "exact", time=time.perf_counter() - t0,
                     method=name, status=status, time_limit=time_limit)


def milp_map(graph, *, time_limit=None, max_columns=DEFAULT_MAX_COLUMNS):
    """:func:`ilp_map` under the name ``"milp"``."""
    return ilp_map(graph, time_limit=time_limit, max_columns=max_columns, name="milp")


# read by the MAP registry when it first loads its back-ends
METHODS = (
    dict(name="ilp", solver=ilp_map, exact=True, params=("max_columns",)),
    dict(name="milp", solver=milp_map, exact=True, params=("max_columns",)),
)
