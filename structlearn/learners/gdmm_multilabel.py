"""GDMM training of a multilabel structural SVM with pairwise label interactions.

Algorithm 1 of the GDMM structural-SVM paper with the block-greedy
coordinate descent inner loop (Algorithm 3, "many binary factors"): each
sample has a unigram (inner-product) factor per label and a binary
interaction factor per label pair of the edge set.  Per outer iteration,
one BGCD pass over the samples (greedy factor by the joint
binary-interaction oracle of Appendix C-2, then two rounds of projected
steps (19) on every active factor of the sample), then one multiplier step
(13).

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
consistent at ``z = 0``, which is what makes the joint oracle's cost
sublinear in the number of pair factors.

Certified stopping.  The dual value ``-D`` is taken at a feasible point
repaired from the iterate (every ``z`` clipped into its interval), so it
is a lower bound on the optimum of the relaxed objective.  The primal
value is an upper bound on the relaxed objective at the current weights:
a Lagrangian bound of each sample's loss-augmented LP
(:func:`._gdmm_multilabel_kernels.lp_hinge_bound`; valid for any
multipliers) and, when the edges form a forest and enumeration is
affordable, the exact objective computed from the weights alone (the
smaller of the two).  ``primal - dual`` therefore bounds the
suboptimality on the whole problem; training stops when it falls below
``tol`` relative to the primal value.  The constraint violation is also
measured on the whole problem (inactive factors satisfy theirs exactly).
"""

import time

import numpy as np

from ._gdmm_multilabel_kernels import (
    gdmm_multilabel_dual,
    gdmm_multilabel_multipliers,
    gdmm_multilabel_pass,
    lp_hinge_bound,
)
from ._multilabel_kernels import multilabel_primal
from ._ssvm_common import HistoryMonitor, sq_norm, warn_not_converged

__all__ = ["GDMMMultilabelState", "fit_gdmm_multilabel", "is_forest_mask"]

_INITIAL_PAIRS = 8
# coordinate-step rounds over a sample's active factors per visit: a second
# round costs O(active factors) (the scores follow the steps; the weights are
# written once per visit) and lowers the gap reached in a given number of
# passes by 5-25 % on the benchmark sets (BENCHMARKS.md, SSVM 3f)
_SAMPLE_ROUNDS = 2
# exact primal from the weights when n * 2^L * L stays below this
_ENUM_BUDGET = 2e7


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
    """Duals, multipliers, active sets and weights of a multilabel GDMM run."""

    def __init__(self, problem, sublinear):
        n, L = problem.Y.shape
        self.signature = problem.signature()
        self.solver = "gdmm"
        self.sublinear = sublinear
        self.A = np.zeros((n, L))
        self.tmask = np.zeros((n, L), dtype=np.uint8)
        self._alloc(n, min(_INITIAL_PAIRS, max(problem.n_edges, 1)))
        self.W = np.zeros((problem.n_features, L))
        self.Pw = np.zeros(L * (L - 1) // 2)
        self.n_iter = 0

    def _alloc(self, n, cap):
        self.fa = np.zeros((n, cap), dtype=np.int64)
        self.fb = np.zeros((n, cap), dtype=np.int64)
        self.fv = np.zeros((n, cap))
        self.fnu = np.zeros((n, cap, 3))
        self.nf = np.zeros(n, dtype=np.int64)

    @property
    def capacity(self):
        return self.fa.shape[1]

    def grow(self, limit):
        """Double the per-sample pair capacity (at most ``limit``)."""
        cap = self.capacity
        extra = min(limit, 2 * cap) - cap
        if extra <= 0:
            return
        for name in ("fa", "fb", "fv"):
            setattr(self, name, np.ascontiguousarray(np.pad(getattr(self, name),
                                                            ((0, 0), (0, extra)))))
        self.fnu = np.ascontiguousarray(np.pad(self.fnu, ((0, 0), (0, extra), (0, 0))))

    def weights(self):
        """``W`` (d, L) and the symmetric-free upper-triangular ``P`` (L, L)."""
        L = self.A.shape[1]
        P = np.zeros((L, L))
        P[np.triu_indices(L, 1)] = self.Pw
        return self.W, P


def _oracle_state(Pw, E, sublinear):
    """The pair scores the oracle searches (the pair weights, ``-inf`` off the
    edges) and the joint binary-interaction oracle over them (None: dense scans)."""
    from ..oracles.binary import make_binary_oracle

    L = E.shape[0]
    s = np.where(E[np.triu_indices(L, 1)] != 0, Pw, -np.inf)
    if sublinear and L >= 2:
        # the pass searches with no active label (case (i)): no partner heaps to keep
        state = make_binary_oracle(s, partner_heaps=False)
        return state[0], state
    return s, None


def fit_gdmm_multilabel(problem, *, C, rho, eta, max_iter, tol, sublinear, rng, state=None,
                        verbose=0, callback=None, rounds=None):
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
        is at most ``tol`` (after a pass without capacity overflow).
    sublinear : bool
        Joint oracle over sorted pair scores (heaps), or a dense scan of all
        pairs (same results).
    rng : RandomState
        Draws the sample orders.
    state : GDMMMultilabelState or None
        Continue from this state (warm start).
    rounds : int or None
        Coordinate-step rounds over a sample's active factors per visit
        (None: ``_SAMPLE_ROUNDS``).

    Returns
    -------
    W : ndarray (n_features, L), P : ndarray (L, L) upper triangle,
    history : list of dict, state : GDMMMultilabelState, converged : bool
    """
    from ..oracles.binary import make_binary_workspace

    Y, E = problem.Y, problem.E
    n, L = Y.shape
    ne = problem.n_edges
    if state is None:
        state = GDMMMultilabelState(problem, sublinear)
    if rounds is None:
        rounds = _SAMPLE_ROUNDS
    xnorm2 = problem.sq_norms()
    scores, ostate = _oracle_state(state.Pw, E, sublinear)
    ows = make_binary_workspace(L)
    forest = is_forest_mask(E)
    enum_ok = ne == 0 or n * (2.0 ** L) * L <= _ENUM_BUDGET
    Pfeas = np.empty_like(state.Pw)
    hinge = np.empty(n)
    stats = np.zeros(2, dtype=np.int64)
    monitor = HistoryMonitor(verbose, callback)
    converged = False
    rel_gap = np.inf
    for _ in range(max_iter):
        t0 = time.perf_counter()
        order = rng.permutation(n).astype(np.int64)
        stats[:] = 0
        gdmm_multilabel_pass(problem.data, problem.indices, problem.indptr, Y, xnorm2, E, ne,
                             order, float(C), float(rho), int(rounds), state.W, state.Pw,
                             scores, ostate, state.A, state.tmask, state.fa, state.fb, state.fv,
                             state.fnu, state.nf, ows, stats)
        res2 = gdmm_multilabel_multipliers(Y, state.A, float(C), float(eta), state.fa, state.fb,
                                           state.fv, state.fnu, state.nf)
        pass_time = time.perf_counter() - t0
        state.n_iter += 1
        W, P = state.weights()
        dual = float(gdmm_multilabel_dual(W, state.Pw, Y, state.A, float(C), state.fa, state.fb,
                                          state.fv, state.nf, Pfeas))
        lp_hinge_bound(W, state.Pw, E, problem.data, problem.indices, problem.indptr, Y,
                       float(rho), state.fa, state.fb, state.fnu, state.nf, hinge)
        reg = 0.5 * sq_norm(W, state.Pw)
        primal = float(reg + C * hinge.sum())
        exact = np.nan
        if enum_ok:
            exact = float(multilabel_primal(W, P, E, ne, 1.0, problem.data, problem.indices,
                                            problem.indptr, Y, float(C)))
            if forest:
                primal = min(primal, exact)
        active = (state.tmask.sum() + state.nf.sum()) / max(n, 1)
        stop = monitor.record(state.n_iter, primal, dual, float(np.sqrt(res2)), float(active),
                              stats[0], pass_time, primal_exact=exact, overflow=int(stats[1]))
        rel_gap = monitor.history[-1]["relative_gap"]
        if stats[1] > 0 or state.nf.max(initial=0) + L > state.capacity:
            state.grow(max(ne, 1))
        if stats[1] == 0 and rel_gap <= tol:
            converged = True
            break
        if stop:
            break
    if not converged and len(monitor.history) == max_iter:
        warn_not_converged("GDMM", max_iter, rel_gap)
    W, P = state.weights()
    return W, P, monitor.history, state, converged
