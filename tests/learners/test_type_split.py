"""GDMM chain passes split by factor type on two threads: the order split,
and fits against the one-thread pass over the order the split amounts to."""

import warnings

import joblib
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.exceptions import ConvergenceWarning

import structlearn.learners._gdmm_chain_type_split as type_split
import structlearn.learners._lagged_checks as lagged_checks
from structlearn.datasets import make_chain_data
from structlearn.estimators import SequenceSSVM
from structlearn.learners._gdmm_chain_type_split import split_order
from structlearn.learners._gdmm_chain_visits import SequenceMajorOrder


def _factors(lengths):
    """``(factors, offsets, N, sequence_of)`` of chains of ``lengths``."""
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    N = int(offsets[-1])
    has_right = np.ones(N, dtype=bool)
    has_right[offsets[1:] - 1] = False
    factors = np.concatenate([np.arange(N), N + np.flatnonzero(has_right)]).astype(np.int64)
    token_seq = np.repeat(np.arange(len(lengths)), lengths).astype(np.int64)
    return factors, offsets, N, np.concatenate([token_seq, token_seq])


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(1, 9), min_size=1, max_size=10), st.integers(0, 2**31 - 1))
def test_split_order_cuts_the_tokens_at_the_middle_of_a_sequence_major_order(lengths, seed):
    factors, offsets, N, sequence_of = _factors(lengths)
    order = SequenceMajorOrder(factors, offsets, N).draw(np.random.RandomState(seed))
    u1, b2, u2, b1, edge = split_order(order, sequence_of, offsets)
    # every factor once, each part of one kind, in the order's own order
    assert sorted(np.concatenate([u1, b2, u2, b1, edge]).tolist()) == sorted(order.tolist())
    rank = {f: i for i, f in enumerate(order.tolist())}
    for part, unigram in ((u1, True), (b2, False), (u2, True), (b1, False), (edge, False)):
        assert ((part < N) == unigram).all()
        assert all(rank[a] < rank[b] for a, b in zip(part[:-1].tolist(), part[1:].tolist()))
    # the halves' tokens: disjoint, each bigram factor within one half, and at
    # most one edge across, inside the sequence the middle falls in
    one, two = set(u1.tolist()), set(u2.tolist())
    assert not one & two and len(one | two) == N
    assert all({f - N, f - N + 1} <= one for f in b1.tolist())
    assert all({f - N, f - N + 1} <= two for f in b2.tolist())
    assert edge.shape[0] <= 1
    for f in edge.tolist():
        assert f - N in one and f - N + 1 in two
    # half 1: the sequences before the middle and the start of the one there
    seq_of_token = sequence_of[:N]
    for s in range(len(lengths)):
        tokens = list(range(offsets[s], offsets[s + 1]))
        mine = [t in one for t in tokens]
        assert mine == sorted(mine, reverse=True)  # a prefix of the sequence
    c = order.shape[0] // 2
    before = {int(seq_of_token[f if f < N else f - N]) for f in order[:c].tolist()}
    after = {int(seq_of_token[f if f < N else f - N]) for f in order[c:].tolist()}
    for s in before - after:
        assert set(range(offsets[s], offsets[s + 1])) <= one
    for s in after - before:
        assert set(range(offsets[s], offsets[s + 1])) <= two
    # the halves' factors within a token's factors (2) of the middle
    assert abs(len(u1) + len(b1) - c) <= (2 if before & after else 0)


def _fit(X, y, n_jobs, split_order_in_one_thread=False, **kw):
    """A fit with passes split for any size of problem (and lagged checks);
    with ``split_order_in_one_thread`` the passes visit each drawn order as
    ``U1, B2, U2, B1`` instead."""
    params = dict(C=0.1, tol=1e-3, max_iter=300, random_state=0, n_jobs=n_jobs)
    params.update(kw)
    init, draw = SequenceMajorOrder.__init__, SequenceMajorOrder.draw

    def keep_tokens(self, factors, offsets, n_tokens):
        init(self, factors, offsets, n_tokens)
        self.sequence_of = _factors(np.diff(offsets))[3]
        self.offsets = offsets

    def split_draw(self, rng):
        return np.concatenate(split_order(draw(self, rng), self.sequence_of, self.offsets))

    with pytest.MonkeyPatch.context() as mp, warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        mp.setattr(type_split, "TYPE_SPLIT_MIN_ENTRIES", 0)
        mp.setattr(lagged_checks, "LAGGED_CHECKS_MIN_ENTRIES", 0)
        if split_order_in_one_thread:
            mp.setattr(SequenceMajorOrder, "__init__", keep_tokens)
            mp.setattr(SequenceMajorOrder, "draw", split_draw)
        return SequenceSSVM(**params).fit(X, y)


def _checks(model):
    return [(r["iter"], r["primal"], r["dual"]) for r in model.history_
            if np.isfinite(r["primal"])]


@pytest.mark.parametrize("n_labels, kw", [
    (12, {}),  # float64 passes
    (70, {}),  # float32 passes
    (12, {"oracle": "dense"}),
    (70, {"oracle": "sublinear", "n_partitions": 3}),  # the sampled unigram search
])
def test_split_passes_are_the_one_thread_passes_over_the_split_order(n_labels, kw):
    X, y = make_chain_data(90, length=7, n_labels=n_labels, n_features=300, density=0.03,
                           random_state=1)
    X[5], y[5] = X[5][:1], y[5][:1]  # a sequence without bigram factors
    runs = []
    real_run = type_split.TypeSplitPass.run
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(type_split.TypeSplitPass, "run",
                   lambda self, *a: runs.append(1) or real_run(self, *a))
        two = _fit(X, y, 2, **kw)
    one = _fit(X, y, 1, split_order_in_one_thread=True, **kw)
    assert len(runs) == len(two.history_)  # every pass split
    plain = _fit(X, y, 1, **kw)  # the drawn orders themselves: other iterates
    assert not np.array_equal(plain.coef_, two.coef_)
    assert len(two.history_) >= 20
    np.testing.assert_array_equal(one.coef_, two.coef_)
    np.testing.assert_array_equal(one.transition_, two.transition_)
    assert _checks(one) == _checks(two) and len(_checks(one)) >= 3
    for a, b in zip(one.history_, two.history_):  # the counters of both threads
        assert a["infeasibility"] == pytest.approx(b["infeasibility"], rel=1e-9)  # summed apart
        assert (a["active_set_size"], a["oracle_entries"]) == (b["active_set_size"], b["oracle_entries"])
    # any number of threads above one: the same passes
    three = _fit(X, y, 3, **kw)
    np.testing.assert_array_equal(three.coef_, two.coef_)


@pytest.mark.parametrize("n_sequences", [1, 3])
def test_long_sequences_split_inside_a_sequence(n_sequences):
    """A few long sequences: the middle falls inside one, cut between two
    tokens, and the edge across the cut is stepped after both phases."""
    X, y = make_chain_data(n_sequences, length=500 // n_sequences, n_labels=12,
                           n_features=200, density=0.05, random_state=4)
    edges = []
    real = type_split.split_order

    def spy(*a):
        parts = real(*a)
        edges.append(parts[4].shape[0])
        return parts

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(type_split, "split_order", spy)
        two = _fit(X, y, 2, max_iter=40)
    assert sum(edges) >= len(two.history_) // 2  # most passes cut a sequence
    one = _fit(X, y, 1, split_order_in_one_thread=True, max_iter=40)
    np.testing.assert_array_equal(one.coef_, two.coef_)
    np.testing.assert_array_equal(one.transition_, two.transition_)
    assert _checks(one) == _checks(two)


def test_split_fit_reaches_the_gap_of_the_one_thread_fit():
    X, y = make_chain_data(150, length=8, n_labels=40, n_features=500, density=0.03,
                           random_state=2)
    one, two = _fit(X, y, 1, tol=0.01), _fit(X, y, 2, tol=0.01)
    assert one.converged_ and two.converged_
    assert two.history_[-1]["relative_gap"] <= 0.01
    assert abs(len(two.history_) - len(one.history_)) <= 0.25 * len(one.history_)
    assert np.mean(np.concatenate(two.predict(X)) == np.concatenate(y)) >= 0.95 * np.mean(
        np.concatenate(one.predict(X)) == np.concatenate(y))


def test_small_fits_keep_the_one_thread_pass():
    X, y = make_chain_data(30, length=5, n_labels=6, n_features=50, density=0.1,
                           random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        one, two = (SequenceSSVM(C=0.1, max_iter=30, random_state=0, n_jobs=j).fit(X, y)
                    for j in (1, 2))
    assert 30 * 5 * 6 < type_split.TYPE_SPLIT_MIN_ENTRIES
    np.testing.assert_array_equal(one.coef_, two.coef_)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_sparse_rows_pass_alone_then_split_once_dense():
    """Sparse weight rows keep the one-thread pass; once they turn dense the
    passes split, and the fit is the same from run to run."""
    from structlearn.learners.gdmm_chain import GDMMChainState

    X, _ = make_chain_data(60, length=7, n_labels=12, n_features=400, density=0.01,
                           random_state=1)
    y = [np.arange(7 * i, 7 * i + 7) % 12 for i in range(60)]
    events = []
    real_run, real_densify = type_split.TypeSplitPass.run, GDMMChainState.densify

    def run(self, *a):
        events.append("split")
        return real_run(self, *a)

    def densify(state, problem):
        done = real_densify(state, problem)
        events.append("dense" if done else "sparse")
        return done

    fits = []
    for _ in range(2):
        events.clear()
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr("structlearn.estimators.ssvm.SPARSE_WEIGHTS_MIN_ENTRIES", 1)
            mp.setattr(type_split.TypeSplitPass, "run", run)
            mp.setattr(GDMMChainState, "densify", densify)
            fits.append(_fit(X, y, 2, oracle="sublinear", n_partitions=1, max_iter=60))
        # the densify check follows each pass: split passes only after the switch
        switch = events.index("dense")
        assert switch >= 3 and "split" not in events[:switch]
        assert events[switch + 1:].count("split") == len(fits[-1].history_) - (switch + 1)
    assert isinstance(fits[0].coef_, np.ndarray)
    np.testing.assert_array_equal(fits[0].coef_, fits[1].coef_)
    np.testing.assert_array_equal(fits[0].transition_, fits[1].transition_)


def _partitioned(X, y, n_jobs, **kw):
    params = dict(C=0.1, tol=1e-2, max_iter=200, random_state=0, training_partitions=2,
                  n_jobs=n_jobs)
    params.update(kw)
    with pytest.MonkeyPatch.context() as mp, warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        mp.setattr(type_split, "TYPE_SPLIT_MIN_ENTRIES", 0)
        return SequenceSSVM(**params).fit(X, y)


@pytest.mark.parametrize("n_labels", [12, 70])  # float64 / float32 copies
def test_partitions_split_their_passes_the_same_with_a_helper_thread_or_without(n_labels):
    """Partitions step their factors in the split order: with a helper thread
    each (n_jobs = 2 P) the same fit as in turn on one thread, and another
    fit than the partitions' drawn orders."""
    X, y = make_chain_data(80, length=7, n_labels=n_labels, n_features=300, density=0.03,
                           random_state=1)
    helpers = []
    real_run = type_split.TypeSplitPass.run

    def run(self, *a):
        helpers.append(a[-1]._pool is not None)
        return real_run(self, *a)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(type_split.TypeSplitPass, "run", run)
        alone = _partitioned(X, y, 1)
        assert helpers and not any(helpers)
        helpers.clear()
        helped = _partitioned(X, y, 4)
        assert helpers and all(helpers)
    assert len(alone.history_) >= 10
    np.testing.assert_array_equal(alone.coef_, helped.coef_)
    np.testing.assert_array_equal(alone.transition_, helped.transition_)
    assert _checks(alone) == _checks(helped)
    plain = SequenceSSVM(C=0.1, tol=1e-2, max_iter=200, random_state=0, training_partitions=2,
                         n_jobs=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        plain.fit(X, y)  # partitions below the size that splits: the drawn orders
    assert not np.array_equal(plain.coef_, alone.coef_)


def test_split_partitions_on_dask_workers_give_the_threads_model():
    distributed = pytest.importorskip("distributed")
    X, y = make_chain_data(60, length=6, n_labels=12, n_features=100, random_state=0)
    threads = _partitioned(X, y, 4)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster), joblib.parallel_config(backend="dask"):
        remote = _partitioned(X, y, None)
    assert len(remote.history_) == len(threads.history_)
    np.testing.assert_allclose(remote.coef_, threads.coef_, atol=1e-10)
    np.testing.assert_allclose(remote.transition_, threads.transition_, atol=1e-10)
