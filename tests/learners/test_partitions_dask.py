"""Partitioned SSVM training with the partitions on dask.distributed workers."""

import os
import threading
import warnings

import joblib
import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from structlearn.datasets import make_chain_data
from structlearn.estimators import SequenceSSVM

distributed = pytest.importorskip("distributed")

from structlearn.learners._dask_partitions import worker_addresses  # noqa: E402


def _fit(X, y, **kw):
    params = dict(C=0.1, tol=0.01, max_iter=300, random_state=0, training_partitions=2)
    params.update(kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return SequenceSSVM(**params).fit(X, y)


def _kill_worker():
    os._exit(1)


def _worker_killer(client, at_round):
    """``(killed, callback)``: the callback kills, once, at round ``at_round``,
    a worker holding the most partitions (the rounds' getitem results; work
    stealing may have put them all on one worker) and lists it in ``killed``."""
    killed = []

    def callback(record):
        if record["iter"] == at_round and not killed:
            held = client.has_what()
            victim = max(sorted(held), key=lambda w: sum(
                str(k).startswith("getitem") for k in held[w]))
            killed.append(victim)
            try:
                client.run(_kill_worker, workers=[victim])
            except Exception:  # the worker's connection closes under the call
                pass
        return False

    return killed, callback


@pytest.mark.parametrize("n_labels", [6, 70])  # dense scans / sorted search, float32 copies
def test_dask_partitions_give_the_threads_model(n_labels):
    """The same partitions, seeds and merges as on threads: the same rounds,
    the model to rounding (the weights are summed in another order)."""
    X, y = make_chain_data(40, length=6, n_labels=n_labels, n_features=60, random_state=0)
    threads = _fit(X, y, n_jobs=2)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster), joblib.parallel_config(backend="dask"):
        remote = _fit(X, y, warm_start=True)
        h = remote.history_
        assert len(h) == len(threads.history_) and remote.converged_
        assert h[-1]["partitions"] == 2 and h[-1]["bytes_sent"] > 0
        assert h[-1]["bytes_received"] > 0
        np.testing.assert_allclose(remote.coef_, threads.coef_, atol=1e-10)
        np.testing.assert_allclose(remote.transition_, threads.transition_, atol=1e-10)
        assert h[-1]["dual"] <= h[-1]["primal"]
        assert h[-1]["primal"] == pytest.approx(threads.history_[-1]["primal"], rel=1e-9)
        # the duals came back to the client's state: a warm start goes on from them
        first = h[-1]["dual"]
        remote.set_params(tol=1e-3)
        _fit_more = remote.fit(X, y)
        assert _fit_more.history_[-1]["dual"] >= first - 1e-9
        assert _fit_more.n_iter_ > len(h)


@pytest.mark.slow
def test_dask_partitioned_fit_survives_a_lost_worker():
    """A worker killed mid-fit: its partition goes back to its last copy, the
    weights are rebuilt from the duals, and the fit ends certified."""
    X, y = make_chain_data(60, length=6, n_labels=8, n_features=60, random_state=1)
    reference = _fit(X, y, tol=1e-3, max_iter=2000)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as client, joblib.parallel_config(backend="dask"):
        killed, kill_at_round_seven = _worker_killer(client, 7)
        model = _fit(X, y, tol=1e-3, max_iter=2000, callback=kill_at_round_seven)
    assert killed and model.converged_
    assert model.history_[-1]["partitions_recovered"] >= 1
    h = model.history_
    assert h[-1]["dual"] <= h[-1]["primal"] and h[-1]["relative_gap"] <= 1e-3
    p_ref = reference.history_[-1]["primal"]
    assert abs(h[-1]["primal"] - p_ref) <= 2e-3 * p_ref


@pytest.mark.parametrize("params", [{}, {"c1": 0.05, "c2": 0.01},
                                    {"all_possible_states": True}])
def test_dask_crf_likelihood_on_the_workers(params):
    """L-BFGS and OWL-QN with the likelihood summed over the workers' runs:
    the single-process fit, to rounding."""
    from structlearn.estimators import SequenceCRF

    X, y = make_chain_data(60, length=6, n_labels=5, n_features=40, random_state=2)
    one = SequenceCRF(max_iter=40, **params).fit(X, y)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster), joblib.parallel_config(backend="dask"):
        remote = SequenceCRF(max_iter=40, **params).fit(X, y)
    assert len(remote.history_) == len(one.history_)
    assert remote.history_[-1]["objective"] == pytest.approx(one.history_[-1]["objective"],
                                                             rel=1e-9)
    dense = [c.toarray() if hasattr(c, "toarray") else c for c in (one.coef_, remote.coef_)]
    np.testing.assert_allclose(*dense, atol=1e-8)


def test_bcfw_partitions_stay_on_threads_under_dask():
    """BCFW partitions run on the client's threads under the dask back-end:
    the model of a fit without it."""
    X, y = make_chain_data(30, length=5, n_labels=5, n_features=20, random_state=3)
    plain = _fit(X, y, solver="bcfw", n_jobs=2, max_iter=10)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster), joblib.parallel_config(backend="dask"):
        under = _fit(X, y, solver="bcfw", n_jobs=2, max_iter=10)
    np.testing.assert_array_equal(plain.coef_, under.coef_)
    np.testing.assert_array_equal(plain.transition_, under.transition_)
    assert "bytes_sent" not in under.history_[-1]


def _block_rounds(problem, n_rounds, C, rho, eta, seed, n_parts=2):
    """The state after ``n_rounds`` rounds of the dask path's paired blocks,
    run here one after the other (the workers' arithmetic)."""
    from structlearn.learners._damping import MeasuredDamping
    from structlearn.learners._gdmm_multilabel_blocks import (blocks_of, draw_pairing,
                                                              paired_pass, pairing_rows)
    from structlearn.learners._gdmm_multilabel_storage import edge_pair_ids, joined_pools
    from structlearn.learners._gdmm_multilabel_state import GDMMMultilabelState, label_adjacency
    from structlearn.learners.gdmm_multilabel import _BLOCKS_PER_PASS, _SAMPLE_ROUNDS

    state = GDMMMultilabelState(problem, True)
    edges, pids = edge_pair_ids(problem.E)
    edge_data = (problem.E, problem.n_edges, *label_adjacency(problem.E), edges, pids)
    blocks, bounds = blocks_of(problem, state, n_parts)
    damping = MeasuredDamping(len(blocks) // 2)
    rng = np.random.RandomState(seed)
    drawn = set()
    state.dampings = []
    for _ in range(n_rounds):
        groups, seeds = draw_pairing(rng, len(blocks))
        drawn.add(tuple(groups))
        rows, sigma = pairing_rows([b.rows for b in blocks], groups, problem.n_features,
                                   damping.weights)
        settings = (edge_data, C, rho, _SAMPLE_ROUNDS, damping.transitions)
        moves = []
        for g, r, part_seed in zip(groups, rows, seeds):
            *new, out = paired_pass(*[blocks[b] for b in g], state.W[r], state.Pw, r, sigma[r],
                                    settings, part_seed, eta, None, _BLOCKS_PER_PASS)
            for b, block in zip(g, new):
                blocks[b] = block
            moves.append((r, out))
        W0, Pw0 = state.W.copy(), state.Pw.copy()
        for r, out in moves:
            state.W[r] += out[0]
            state.Pw += out[1]
        state.dampings.append((damping.weights, damping.transitions))
        damping.update(np.sum((state.W - W0) ** 2), sum(np.sum(out[0] ** 2) for _, out in moves),
                       np.sum((state.Pw - Pw0) ** 2), sum(np.sum(out[1] ** 2) for _, out in moves))
    state.A = np.concatenate([b.A for b in blocks])
    state.pool = joined_pools([b.pool for b in blocks])
    assert len(drawn) >= 2  # the pairings are drawn anew
    return state


# the LP bound / exact forest hinges; 2 partitions keep the damping at 2 here, 4 lower it
@pytest.mark.parametrize("pairwise, n_parts", [("full", 2), ("tree", 4)])
def test_dask_multilabel_partitions_pair_blocks_anew(pairwise, n_parts):
    """On the workers each partition keeps a home block and takes a visiting
    block drawn each round: the rounds are those of the same pairings run one
    after the other in one process (to rounding); the fit reaches the
    certified gap and brings the duals and pools back to the client's
    state."""
    import scipy.sparse as sp

    from structlearn.estimators import MultiLabelSSVM
    from structlearn.estimators.ssvm import _edge_mask, _resolve_pairwise
    from structlearn.learners.gdmm_multilabel import fit_gdmm_multilabel
    from structlearn.learners.multilabel import MultilabelProblem

    rng = np.random.RandomState(0)
    X = rng.randn(80, 10)
    Y = (X @ rng.randn(10, 5) + 0.5 * rng.randn(80, 5) > 0.3).astype(int)
    Xc = sp.csr_matrix(X)
    problem = MultilabelProblem(Xc.data, Xc.indices.astype(np.int64),
                                Xc.indptr.astype(np.int64), Y,
                                _edge_mask(_resolve_pairwise(pairwise, Y), 5), 10)
    expected = _block_rounds(problem, 6, 0.1, 1.0, 1.0, 0, n_parts)
    params = dict(C=0.1, tol=0.01, max_iter=300, random_state=0, training_partitions=n_parts,
                  pairwise=pairwise)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster), joblib.parallel_config(backend="dask"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            W, P, h, state, _ = fit_gdmm_multilabel(
                problem, C=0.1, rho=1.0, eta=1.0, max_iter=6, tol=0.0, sublinear=True,
                rng=np.random.RandomState(0), training_partitions=n_parts)
        assert len(h) == 6 and h[-1]["bytes_sent"] > 0
        assert [r["damping"] for r in h] == expected.dampings
        np.testing.assert_allclose(state.W, expected.W, atol=1e-12)
        np.testing.assert_allclose(state.Pw, expected.Pw, atol=1e-12)
        np.testing.assert_array_equal(state.A, expected.A)
        remote = MultiLabelSSVM(warm_start=True, **params).fit(X, Y)
        h = remote.history_
        assert remote.converged_ and h[-1]["partitions"] == n_parts
        # the duals and pools came back to the client's state: a warm start goes on
        state = remote._solver_state
        np.testing.assert_allclose(state.W[:10], X.T @ state.A, atol=1e-10)
        remote.set_params(tol=1e-3)
        remote.fit(X, Y)
        assert remote.n_iter_ > len(h) and remote.history_[-1]["dual"] >= h[-1]["dual"] - 1e-9
    threads = MultiLabelSSVM(**params).fit(X, Y)
    p1, p2 = threads.history_[-1]["primal"], h[-1]["primal"]
    assert threads.converged_ and abs(p1 - p2) <= 2e-2 * max(p1, p2)


@pytest.mark.slow
def test_dask_multilabel_fit_survives_a_lost_worker():
    """A worker killed mid-fit: the blocks it held go back to their last
    copies, the weights are rebuilt from every block's duals, and the paired
    rounds go on to a certified gap."""
    from structlearn.datasets import make_multilabel_pairwise
    from structlearn.estimators import MultiLabelSSVM

    X, Y = make_multilabel_pairwise(120, n_labels=6, n_features=12, random_state=5)[:2]
    params = dict(C=0.1, tol=1e-3, max_iter=2000, random_state=0, training_partitions=2)
    reference = MultiLabelSSVM(**params).fit(X, Y)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as client, joblib.parallel_config(backend="dask"):
        killed, kill_at_round_seven = _worker_killer(client, 7)
        model = MultiLabelSSVM(callback=kill_at_round_seven, **params).fit(X, Y)
    h = model.history_
    assert killed and model.converged_ and h[-1]["partitions_recovered"] >= 1
    assert h[-1]["dual"] <= h[-1]["primal"] and h[-1]["relative_gap"] <= 1e-3
    p_ref = reference.history_[-1]["primal"]
    assert abs(h[-1]["primal"] - p_ref) <= 2e-3 * p_ref


def _crf_likelihood(n_samples, n_labels, n_features, random_state):
    """``(problem, w, nll, gradient)``: a chain CRF's training problem, random
    parameters, and the likelihood and its gradient in this process."""
    import scipy.sparse as sp

    from structlearn.learners.chain_crf import _training_problem

    X, y = make_chain_data(n_samples, length=5, n_labels=n_labels, n_features=n_features,
                           random_state=random_state)
    Xcat = sp.vstack([sp.csr_matrix(x) for x in X]).tocsr()
    offsets = np.concatenate([[0], np.cumsum([len(t) for t in y])]).astype(np.int64)
    codes = np.concatenate(y).astype(np.int64)
    prob = _training_problem(Xcat, offsets, codes, n_labels, 0.1, True, True, "auto")
    w = np.random.RandomState(random_state).randn(prob.n_params) * 0.1
    g = np.empty_like(w)
    return prob, w, prob._nll_grad(w, g), g


@pytest.mark.slow
def test_dask_crf_likelihood_survives_a_lost_worker():
    """An evaluation after a worker was lost sends the runs anew: the same
    value and gradient."""
    from structlearn.learners._chain_crf_dask import RemoteLikelihood

    prob, w, nll_local, g_local = _crf_likelihood(40, 4, 20, random_state=3)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as client:
        remote = RemoteLikelihood.from_problem(prob, client)
        g = np.empty_like(w)
        first = remote.nll_grad(w, g)
        try:
            client.run(_kill_worker, workers=worker_addresses(client)[:1])
        except Exception:  # the worker's connection closes under the call
            pass
        g2 = np.empty_like(w)
        second = remote.nll_grad(w, g2)
    assert first == pytest.approx(nll_local, rel=1e-12) and second == first
    np.testing.assert_array_equal(g, g2)
    np.testing.assert_allclose(g, g_local, atol=1e-10)


async def _hold_replication(dask_scheduler):
    """Take the scheduler's replication lock (a replication stuck on a worker
    that had died held it for minutes)."""
    dask_scheduler.held_by_test = object()
    await dask_scheduler._replica_lock.acquire(dask_scheduler.held_by_test)


def _release_replication(dask_scheduler):
    dask_scheduler._replica_lock.release(dask_scheduler.held_by_test)


def test_dask_crf_likelihood_does_not_wait_on_replication():
    """The parameters go straight to each run's worker: an evaluation goes
    through while the scheduler's replication is held up."""
    from structlearn.learners._chain_crf_dask import RemoteLikelihood

    prob, w, nll_local, g_local = _crf_likelihood(20, 3, 10, random_state=5)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as client:
        remote = RemoteLikelihood.from_problem(prob, client)
        client.run_on_scheduler(_hold_replication)
        try:
            g = np.empty_like(w)
            done = []
            worker = threading.Thread(target=lambda: done.append(remote.nll_grad(w, g)))
            worker.start()
            worker.join(15.0)  # a wait on the lock would last 20 s a try
            assert done, "the evaluation waited on the scheduler's replication"
        finally:
            client.run_on_scheduler(_release_replication)
            worker.join()
    assert done[0] == pytest.approx(nll_local, rel=1e-12)
    np.testing.assert_allclose(g, g_local, atol=1e-10)


def test_dask_partitioned_fit_with_a_client_that_goes_away():
    X, y = make_chain_data(40, length=6, n_labels=6, n_features=40, random_state=4)
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                       dashboard_address=":0")
    client = distributed.Client(cluster)

    def close_at_round_three(record):
        if record["iter"] == 3:
            client.close()
        return False

    model = SequenceSSVM(C=0.1, training_partitions=2, random_state=0,
                         callback=close_at_round_three)
    try:
        with joblib.parallel_config(backend="dask"), \
                pytest.raises(RuntimeError, match="client was closed during the fit"):
            model.fit(X, y)
    finally:
        cluster.close()
    assert not hasattr(model, "coef_")


# ------------------------------------------------------------- data as a dask bag
@pytest.fixture
def in_process_cluster():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as client:
        yield client


def test_fit_on_a_dask_bag_equals_the_partitioned_fit(in_process_cluster):
    """A bag of (X_i, y_i) cut like the partitions: the same fit as the list
    given to the partitioned fit under dask, the data built on the workers."""
    db = pytest.importorskip("dask.bag")
    X, y = make_chain_data(40, length=6, n_labels=6, n_features=40, random_state=5)
    y = [np.array([f"tag{k}" for k in t]) for t in y]  # any hashable labels
    with joblib.parallel_config(backend="dask"):
        listed = _fit(X, y)
    bagged = _fit(db.from_sequence(list(zip(X, y)), npartitions=2), None,
                  training_partitions=None)
    assert bagged.converged_ and len(bagged.history_) == len(listed.history_)
    np.testing.assert_array_equal(bagged.classes_, listed.classes_)
    assert bagged.history_[-1]["primal"] == pytest.approx(listed.history_[-1]["primal"],
                                                          rel=1e-12)
    np.testing.assert_allclose(bagged.coef_, listed.coef_, atol=1e-10)
    assert bagged.history_[-1]["partitions"] == 2
    assert [p.tolist() for p in bagged.predict(X[:3])] == [p.tolist() for p in
                                                           listed.predict(X[:3])]


def test_ssvm_on_a_dask_bag_of_feature_dicts(in_process_cluster):
    """Sentences of per-token feature dicts in a bag: the vocabulary of one
    fit on all of them, and the model of the same sentences as matrices."""
    db = pytest.importorskip("dask.bag")
    X, y = make_chain_data(40, length=6, n_labels=6, n_features=40, random_state=5)
    D = [_token_dicts(x) for x in X]
    bagged = _fit(db.from_sequence(list(zip(D, y)), npartitions=2), None,
                  training_partitions=None)
    from structlearn.datasets import SequenceVectorizer

    vectorizer = SequenceVectorizer().fit(D)
    assert bagged.vectorizer_.feature_names_ == vectorizer.feature_names_
    # the same sentences as matrices in the vocabulary's column order
    Xv = vectorizer.transform(D)
    matrices = _fit(db.from_sequence(list(zip(Xv, y)), npartitions=2), None,
                    training_partitions=None)
    assert matrices.vectorizer_ is None
    np.testing.assert_allclose(bagged.coef_, matrices.coef_, atol=1e-12)
    assert [p.tolist() for p in bagged.predict(D[:3])] == [p.tolist() for p in
                                                           matrices.predict(Xv[:3])]


_BAD_SSVM_BAGS = [
    ([(np.ones((2, 3)), np.array([0, 1])), "not a pair"], 2, r"partition 1, element 0: .*pair"),
    ([(np.ones((2, 3)), np.array([0, 1])), (np.ones((3, 3)), np.array([0, 1]))], 1,
     r"partition 0 .*y\[1\] has 2 labels but X\[1\] has 3 tokens"),
    ([(np.ones((2, 3)), np.array([0, 1])), (np.ones((2, 4)), np.array([0, 1]))], 2,
     r"partition 1 has sequences of 4 features but partition 0 has 3"),
    ([(np.ones((2, 3)), np.array([0, 1])), (np.full((2, 3), np.nan), np.array([0, 1]))], 2,
     r"partition 1 .*NaN"),
]


def test_fit_on_a_dask_bag_bad_settings(in_process_cluster):
    db = pytest.importorskip("dask.bag")
    X, y = make_chain_data(6, length=4, n_labels=3, n_features=5, random_state=0)
    bag = db.from_sequence(list(zip(X, y)), npartitions=2)
    with pytest.raises(ValueError, match="warm_start"):
        SequenceSSVM(warm_start=True).fit(bag)
    with pytest.raises(ValueError, match="solver='gdmm'"):
        SequenceSSVM(solver="bcfw").fit(bag)
    with pytest.raises(ValueError, match="y must be None"):
        SequenceSSVM().fit(bag, y)


# ------------------------------------------------ MultiLabelSSVM on a dask bag
def _multilabel_data():
    rng = np.random.RandomState(0)
    X = rng.randn(80, 10)
    Y = (X @ rng.randn(10, 5) + 0.5 * rng.randn(80, 5) > 0.3).astype(int)
    return X, Y


@pytest.mark.parametrize("pairwise, fit_intercept, sparse_rows",
                         [("full", True, False), ("tree", True, True), ("none", False, False)])
def test_multilabel_fit_on_a_dask_bag_equals_the_partitioned_fit(
        in_process_cluster, pairwise, fit_intercept, sparse_rows):
    """A bag whose partitions split into the blocks the partitioned fit of the
    whole matrix cuts (four runs of 20 samples): the same edges, rounds and
    model, the samples validated and kept on the workers."""
    import scipy.sparse as sp

    from structlearn.estimators import MultiLabelSSVM

    db = pytest.importorskip("dask.bag")
    X, Y = _multilabel_data()
    params = dict(C=0.1, tol=0.01, max_iter=300, random_state=0, pairwise=pairwise,
                  fit_intercept=fit_intercept)
    with joblib.parallel_config(backend="dask"):
        listed = MultiLabelSSVM(training_partitions=2, **params).fit(X, Y)
    order = np.r_[0:20, 40:60, 20:40, 60:80]  # partition p: blocks p and 2 + p
    rows = [sp.csr_matrix(X[i:i + 1]) if sparse_rows else X[i] for i in order]
    bag = db.from_sequence([(x, Y[i]) for x, i in zip(rows, order)], npartitions=2)
    bagged = MultiLabelSSVM(**params).fit(bag)
    h = bagged.history_
    assert bagged.converged_ and len(h) == len(listed.history_)
    assert h[-1]["partitions"] == 2 and h[-1]["bytes_sent"] > 0
    np.testing.assert_array_equal(bagged._edges, listed._edges)
    assert h[-1]["primal"] == pytest.approx(listed.history_[-1]["primal"], rel=1e-12)
    np.testing.assert_allclose(bagged.coef_, listed.coef_, atol=1e-10)
    np.testing.assert_allclose(bagged.intercept_, listed.intercept_, atol=1e-10)
    np.testing.assert_allclose(bagged.pairwise_coef_, listed.pairwise_coef_, atol=1e-10)
    np.testing.assert_array_equal(bagged.predict(X), listed.predict(X))


def test_multilabel_on_a_dask_bag_of_uneven_partitions(in_process_cluster):
    """Three partitions of 1, 7 and 72 samples (five blocks: a group of
    three each round): a certified fit near the one-process optimum (label
    tree: an exact certificate)."""
    from structlearn.estimators import MultiLabelSSVM

    db = pytest.importorskip("dask.bag")
    from dask import delayed

    X, Y = _multilabel_data()
    bag = db.from_delayed([delayed([(X[i], Y[i]) for i in range(a, b)])
                           for a, b in ((0, 1), (1, 8), (8, 80))])
    assert bag.npartitions == 3
    params = dict(C=0.1, tol=1e-3, max_iter=2000, random_state=0, pairwise="tree")
    bagged = MultiLabelSSVM(**params).fit(bag)
    one = MultiLabelSSVM(**params).fit(X, Y)
    h = bagged.history_
    assert bagged.converged_ and h[-1]["dual"] <= h[-1]["primal"]
    assert h[-1]["partitions"] == 2
    p1, p2 = one.history_[-1]["primal"], h[-1]["primal"]
    assert abs(p1 - p2) <= 2e-3 * max(p1, p2)


def test_multilabel_bag_partition_whose_first_sample_outweighs_the_rest(in_process_cluster):
    """A partition of two samples, one dense and one nearly empty: still two
    blocks (four in all, two partitions a round)."""
    from dask import delayed

    from structlearn.estimators import MultiLabelSSVM

    db = pytest.importorskip("dask.bag")
    rng = np.random.RandomState(0)
    X = rng.randn(40, 50) * (rng.rand(40, 50) < 0.05)
    X[0] = rng.randn(50)
    Y = (rng.rand(40, 4) < 0.4).astype(int)
    bag = db.from_delayed([delayed([(X[i], Y[i]) for i in range(a, b)])
                           for a, b in ((0, 2), (2, 40))])
    model = MultiLabelSSVM(C=0.1, pairwise="tree", random_state=0).fit(bag)
    assert model.converged_ and model.history_[-1]["partitions"] == 2


_BAD_MULTILABEL_BAGS = [
    ([(np.ones(3), [0, 1]), "not a pair"], 2, r"partition 1, element 0: .*pair"),
    ([(np.ones(3), [0, 1]), (np.ones(4), [1, 0])], 1, r"partition 0 .*x\[1\] has 4 features"),
    ([(np.ones(3), [0, 1]), ([1.0, np.nan, 0.0], [1, 0])], 2, r"partition 1 .*NaN"),
    ([(np.ones(3), [0, 1]), (np.ones(3), [2, 0])], 2, r"partition 1 .*only 0 and 1"),
    ([(np.ones(3), [0, 1]), (np.ones(3), [1, 0, 1])], 1, r"partition 0 .*y\[1\] has 3 labels"),
    ([(np.ones(3), [0, 1]), (np.ones(3), [1, 0, 1])], 2,
     r"partition 1 has samples of 3 labels, partition 0 of 2"),
    ([(np.ones((2, 3)), [0, 1])], 1, r"partition 0 .*x\[0\] has shape \(2, 3\)"),
    ([(np.ones(3), [[0, 1], [1, 0]])], 1, r"partition 0 .*y\[0\] has shape \(2, 2\)"),
]


@pytest.mark.parametrize("items, npartitions, message", _BAD_MULTILABEL_BAGS)
def test_multilabel_on_a_dask_bag_names_the_bad_element(in_process_cluster, items, npartitions,
                                                        message):
    from structlearn.estimators import MultiLabelSSVM

    db = pytest.importorskip("dask.bag")
    with pytest.raises((ValueError, TypeError), match=message):
        MultiLabelSSVM().fit(db.from_sequence(items, npartitions=npartitions))


def test_multilabel_on_a_dask_bag_bad_settings(in_process_cluster):
    from dask.bag import Bag

    from structlearn.estimators import MultiLabelSSVM

    db = pytest.importorskip("dask.bag")
    X, Y = _multilabel_data()
    bag = db.from_sequence(list(zip(X[:10], Y[:10])), npartitions=2)
    with pytest.raises(ValueError, match="warm_start"):
        MultiLabelSSVM(warm_start=True).fit(bag)
    with pytest.raises(ValueError, match="solver='gdmm'"):
        MultiLabelSSVM(solver="bcfw").fit(bag)
    with pytest.raises(ValueError, match="Y must be None"):
        MultiLabelSSVM().fit(bag, Y[:10])
    with pytest.raises(ValueError, match="the dask bag has no partitions"):
        MultiLabelSSVM().fit(Bag({}, "empty-bag", 0))


# ------------------------------------------------------- the CRF on a dask bag
def _token_dicts(x):
    """A sequence's feature matrix as CRFsuite's per-token dicts: odd columns
    numeric, even ones indicators."""
    x = x.toarray() if hasattr(x, "toarray") else np.asarray(x)
    return [{(f"n{j}" if j % 2 else "w"): (float(v) if j % 2 else f"v{j}")
             for j, v in enumerate(row) if v} for row in x]


@pytest.mark.parametrize("params", [{}, {"c1": 0.05, "c2": 0.01},
                                    {"all_possible_states": True}])
@pytest.mark.parametrize("dicts", [False, True])
def test_crf_on_a_dask_bag_equals_the_one_list_fit(in_process_cluster, params, dicts):
    """The bag's partitions, encoded on the workers, make the problem of the
    same sequences in one list: the same vocabulary, classes, iterations and
    weights, to rounding."""
    from structlearn.estimators import SequenceCRF

    db = pytest.importorskip("dask.bag")
    X, y = make_chain_data(60, length=6, n_labels=5, n_features=40, random_state=2)
    y = [np.array([f"tag{k}" for k in t]) for t in y]
    if dicts:
        X = [_token_dicts(x) for x in X]
    one = SequenceCRF(max_iter=40, **params).fit(X, y)
    bagged = SequenceCRF(max_iter=40, **params).fit(db.from_sequence(list(zip(X, y)),
                                                                     npartitions=3))
    np.testing.assert_array_equal(bagged.classes_, one.classes_)
    if dicts:
        assert bagged.vectorizer_.feature_names_ == one.vectorizer_.feature_names_
    else:
        assert bagged.vectorizer_ is None
    assert len(bagged.history_) == len(one.history_)
    assert bagged.history_[-1]["objective"] == pytest.approx(one.history_[-1]["objective"],
                                                             rel=1e-9)
    last = bagged.history_[-1]
    assert last["bytes_sent"] > 0 and last["partitions"] == 3
    assert last["local_time"] > 0 and last["merge_time"] >= 0
    dense = [c.toarray() if hasattr(c, "toarray") else c for c in (one.coef_, bagged.coef_)]
    np.testing.assert_allclose(*dense, atol=1e-8)
    assert [p.tolist() for p in bagged.predict(X[:5])] == [p.tolist() for p in
                                                           one.predict(X[:5])]


def test_crf_on_a_dask_bag_warm_start(in_process_cluster):
    """A warm start on a bag keeps the vocabulary (unseen features dropped)
    and starts from the weights: it ends at once."""
    from structlearn.estimators import SequenceCRF

    db = pytest.importorskip("dask.bag")
    X, y = make_chain_data(40, length=5, n_labels=4, n_features=20, random_state=6)
    X = [_token_dicts(x) for x in X]
    bag = db.from_sequence(list(zip(X, y)), npartitions=2)
    model = SequenceCRF(max_iter=60, warm_start=True).fit(bag)
    names = model.vectorizer_.feature_names_
    first = len(model.history_)
    extra = [[dict(t, new_feature="x") for t in s] for s in X]
    model.fit(db.from_sequence(list(zip(extra, y)), npartitions=2))
    assert model.vectorizer_.feature_names_ == names
    assert len(model.history_) < first / 2


_BAD_CRF_BAGS = [
    ([([{"w": "a"}], ["x"]), "not a pair"], 2, r"partition 1, element 0: .*pair"),
    ([([{"w": "a"}], ["x"])] * 3 + [([], [])], 2,
     r"partition 1 .*X\[1\] is an empty sequence"),
    ([([{"w": "a"}], ["x"]), ([{"w": float("nan")}], ["y"])], 2, r"partition 1 .*NaN"),
    ([([{"w": "a"}], ["x"]), ([{"w": "a"}], ["x", "y"])], 1,
     r"partition 0 .*y\[1\] has 2 labels but X\[1\] has 1 tokens"),
    ([([{"w": "a"}], ["x"]), (np.ones((1, 3)), ["y"])], 2,
     r"partition 1 holds feature matrices but partition 0 holds per-token feature dicts"),
    ([(np.ones((1, 3)), ["x"]), (np.ones((1, 4)), ["y"])], 2,
     r"partition 1 has sequences of 4 features but partition 0 has 3"),
    ([([{"w": "a"}], ["x"]), ([{"w": "b"}], [1])], 2, r"labels across its partitions"),
]


@pytest.mark.parametrize("estimator, items, npartitions, message",
                         [("SequenceSSVM", *case) for case in _BAD_SSVM_BAGS]
                         + [("SequenceCRF", *case) for case in _BAD_CRF_BAGS])
def test_fit_on_a_dask_bag_names_the_bad_element(in_process_cluster, estimator, items,
                                                 npartitions, message):
    from structlearn import estimators

    db = pytest.importorskip("dask.bag")
    bag = db.from_sequence(items, npartitions=npartitions)
    with pytest.raises((ValueError, TypeError), match=message):
        getattr(estimators, estimator)().fit(bag)


@pytest.mark.parametrize("estimator", ["SequenceSSVM", "SequenceCRF"])
def test_a_dask_bag_without_partitions(in_process_cluster, estimator):
    from dask.bag import Bag

    from structlearn import estimators

    with pytest.raises(ValueError, match="the dask bag has no partitions"):
        getattr(estimators, estimator)().fit(Bag({}, "empty-bag", 0))


def test_crf_on_a_dask_bag_bad_settings(in_process_cluster):
    from structlearn.estimators import SequenceCRF

    db = pytest.importorskip("dask.bag")
    X, y = make_chain_data(6, length=4, n_labels=3, n_features=5, random_state=0)
    bag = db.from_sequence(list(zip(X, y)), npartitions=2)
    with pytest.raises(ValueError, match="y must be None"):
        SequenceCRF().fit(bag, y)
    with pytest.raises(ValueError, match="X_dev and y_dev go together"):
        SequenceCRF().fit(bag, X_dev=X)
    with pytest.raises(ValueError, match="y is required"):
        SequenceCRF().fit(X)
    one_label = db.from_sequence([(x, np.zeros(len(t), dtype=int)) for x, t in zip(X, y)],
                                 npartitions=2)
    with pytest.raises(ValueError, match="class"):
        SequenceCRF().fit(one_label)


_OPTIMIZER_STARTED = threading.Event()


def _signal_started(W, T):
    """A monitor of the CRF's optimizer (on an in-process worker)."""
    _OPTIMIZER_STARTED.set()
    return {}


def test_crf_on_a_dask_bag_with_a_client_that_goes_away(monkeypatch):
    """The client closed while the optimizer runs on a worker: a RuntimeError
    that says so, and the estimator keeps no half-fitted model."""
    from structlearn.estimators import SequenceCRF, crf

    db = pytest.importorskip("dask.bag")
    X, y = make_chain_data(200, length=8, n_labels=8, n_features=200, random_state=3)
    monkeypatch.setattr(crf, "_dev_monitor", lambda *args: _signal_started)
    _OPTIMIZER_STARTED.clear()
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                       dashboard_address=":0")
    client = distributed.Client(cluster)
    model = SequenceCRF(max_iter=100_000, tol=0.0)
    closer = threading.Thread(target=lambda: _OPTIMIZER_STARTED.wait(60) and client.close())
    try:
        bag = db.from_sequence(list(zip(X, y)), npartitions=2)
        closer.start()
        with pytest.raises(RuntimeError, match="client was closed during the fit"):
            model.fit(bag, X_dev=X[:2], y_dev=y[:2])
        closer.join()
    finally:
        cluster.close()
    assert not hasattr(model, "coef_")


def test_crf_on_a_dask_bag_needs_a_client():
    from structlearn.estimators import SequenceCRF

    db = pytest.importorskip("dask.bag")
    X, y = make_chain_data(6, length=4, n_labels=3, n_features=5, random_state=0)
    with pytest.raises(RuntimeError, match="needs a distributed.Client"):
        SequenceCRF().fit(db.from_sequence(list(zip(X, y)), npartitions=2))


class _KillAnotherWorkerAt:
    """A monitor of the CRF's optimizer (which runs on a worker): at the
    given iteration it kills another worker, the holder of a run."""

    def __init__(self, iteration):
        self.iteration = iteration
        self.calls = 0

    def __call__(self, W, T):
        from distributed import get_client, get_worker

        self.calls += 1
        if self.calls == self.iteration:
            me = get_worker().address
            client = get_client()
            others = [a for a in worker_addresses(client) if a != me]
            try:
                client.run(_kill_worker, workers=others[:1])
            except Exception:  # the worker's connection closes under the call
                pass
        return {"killed": self.calls >= self.iteration}


class _KillOwnWorkerOnce:
    """A monitor of the CRF's optimizer that kills its own worker at the
    given iteration, once (a marker file says it did)."""

    def __init__(self, iteration, marker):
        self.iteration = iteration
        self.marker = marker
        self.calls = 0

    def __call__(self, W, T):
        self.calls += 1
        if self.calls == self.iteration and not os.path.exists(self.marker):
            open(self.marker, "w").close()
            _kill_worker()
        return {}


@pytest.mark.slow
@pytest.mark.parametrize("victim", ["a run's holder", "the optimizer's worker"])
def test_crf_on_a_dask_bag_survives_a_lost_worker(monkeypatch, tmp_path, victim):
    """A worker killed between two iterations.  A run's holder: dask
    computes the run again from the bag.  The optimizer's own worker: dask
    runs the optimizer again on another worker, from the start.  Either way
    the fit ends where the undisturbed one does."""
    import sys

    import cloudpickle

    from structlearn.estimators import SequenceCRF, crf

    db = pytest.importorskip("dask.bag")
    X, y = make_chain_data(40, length=5, n_labels=4, n_features=20, random_state=3)
    one = SequenceCRF(max_iter=30).fit(X, y)
    marker = str(tmp_path / "killed")
    monitor = (_KillAnotherWorkerAt(3) if victim == "a run's holder"
               else _KillOwnWorkerOnce(3, marker))
    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # for the worker processes
    monkeypatch.setattr(crf, "_dev_monitor", lambda *args: monitor)
    try:
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                      dashboard_address=":0") as cluster, \
                distributed.Client(cluster):
            bag = db.from_sequence(list(zip(X, y)), npartitions=2)
            bagged = SequenceCRF(max_iter=30).fit(bag, X_dev=X[:2], y_dev=y[:2])
    finally:
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    if victim == "a run's holder":
        assert bagged.history_[-1]["killed"] and not bagged.history_[1]["killed"]
    else:
        assert os.path.exists(marker)
    assert len(bagged.history_) == len(one.history_)
    assert bagged.history_[-1]["objective"] == pytest.approx(one.history_[-1]["objective"],
                                                             rel=1e-9)
