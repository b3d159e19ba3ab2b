"""n_jobs on every estimator: the same (bit-identical) output for any number
of jobs and any joblib back-end, including dask.distributed."""

import warnings

import joblib
import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV

from structlearn._parallel import chunk_bounds
from structlearn.datasets import make_chain_data, make_multilabel_pairwise
from structlearn.estimators import (GraphCRF, MultiLabelSSVM, SequenceCRF, SequencePerceptron,
                                    SequenceSSVM)
from structlearn.estimators.crf import image_grid_sample


def _fit_quietly(model, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return model.fit(X, y)


def _same(a, b):
    """Exact equality of nested lists/tuples of arrays."""
    if isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for u, v in zip(a, b):
            _same(u, v)
    else:
        assert np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True)


def _grid_samples(n_samples, seed):
    rng = np.random.default_rng(seed)
    Xs, ys = [], []
    for _ in range(n_samples):
        f = rng.normal(size=(4, 5, 3))
        Xs.append(image_grid_sample(f, edge_bin_thresholds=[1.5]))
        ys.append((f[:, :, 0] > 0).astype(int).ravel())
    return Xs, ys


@pytest.fixture(scope="module")
def chain_data():
    return make_chain_data(60, length=7, n_labels=6, n_features=20, random_state=0)


SEQUENCE_MODELS = [
    lambda: SequenceSSVM(C=1.0, max_iter=5, random_state=0),
    lambda: SequenceCRF(max_iter=10),
    lambda: SequencePerceptron(max_iter=3, random_state=0),
]


@pytest.mark.parametrize("make", SEQUENCE_MODELS)
@pytest.mark.parametrize("n_jobs", [2, 3, -1])
def test_sequence_estimators_give_the_same_output_for_any_n_jobs(chain_data, make, n_jobs):
    X, y = chain_data
    one = _fit_quietly(make(), X, y)
    many = _fit_quietly(make().set_params(n_jobs=n_jobs), X, y)
    _same(one.predict(X), many.predict(X))
    _same(one.predict_topk(X, 3), many.predict_topk(X, 3))
    assert one.score(X, y) == many.score(X, y)
    _same(one.decision_function(X), many.decision_function(X))
    if hasattr(one, "predict_marginals"):
        _same(one.predict_marginals(X), many.predict_marginals(X))


def test_process_back_end_gives_the_same_output(chain_data):
    X, y = chain_data
    model = _fit_quietly(SequenceSSVM(max_iter=5, random_state=0, n_jobs=2), X, y)
    expected = model.set_params(n_jobs=None).predict(X)
    with joblib.parallel_config(backend="loky"):
        _same(model.set_params(n_jobs=2).predict(X), expected)


@pytest.mark.parametrize("inference", ["auto", "ad3"])
def test_multilabel_ssvm_any_n_jobs(inference):
    X, Y = make_multilabel_pairwise(40, n_labels=6, n_features=10, random_state=0)[:2]
    model = _fit_quietly(MultiLabelSSVM(max_iter=5, random_state=0, inference=inference), X, Y)
    expected = model.predict(X), model.predict_topk(X, 3), model.score(X, Y)
    model.set_params(n_jobs=2)
    _same(model.predict(X), expected[0])
    _same(model.predict_topk(X, 3), expected[1])
    assert model.score(X, Y) == expected[2]


def test_graph_crf_any_n_jobs():
    Xs, ys = _grid_samples(5, 0)
    model = _fit_quietly(GraphCRF(alpha=1e-2, blocks=2, max_iter=20, random_state=0), Xs, ys)
    expected = (model.predict(Xs), model.predict_marginals(Xs), model.predict_topk(Xs, 2),
                model.score(Xs, ys))
    model.set_params(n_jobs=2)
    _same(model.predict(Xs), expected[0])
    _same(model.predict_marginals(Xs), expected[1])
    _same(model.predict_topk(Xs, 2), expected[2])
    assert model.score(Xs, ys) == expected[3]


@pytest.mark.parametrize("bad, error", [(0, ValueError), (1.5, TypeError), ("2", TypeError),
                                        (True, TypeError)])
def test_bad_n_jobs(chain_data, bad, error):
    X, y = chain_data
    model = _fit_quietly(SequencePerceptron(max_iter=2, random_state=0), X, y)
    before = model.coef_.copy()
    model.set_params(n_jobs=bad)
    with pytest.raises(error, match="n_jobs"):
        model.predict(X)
    assert np.array_equal(model.coef_, before)  # fitted state untouched


def test_chunk_bounds_cover_all_items_in_order():
    rng = np.random.default_rng(0)
    for n in (0, 1, 5, 100):
        w = rng.integers(1, 20, size=n).astype(float)
        for k in (1, 2, 3, 8):
            b = chunk_bounds(w, k)
            assert b[0] == 0 and b[-1] == n
            assert np.all(np.diff(b) > 0) or n == 0
            assert len(b) - 1 <= max(1, k)


def test_dask_local_cluster_grid_search_and_batch_prediction(chain_data):
    distributed = pytest.importorskip("distributed")
    X, y = chain_data
    grid = {"C": [0.1, 1.0]}
    base = SequenceSSVM(max_iter=5, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        local = GridSearchCV(base, grid, cv=2, n_jobs=1).fit(X, y)
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                      dashboard_address=":0") as cluster, \
                distributed.Client(cluster):
            with joblib.parallel_config(backend="dask"):
                remote = GridSearchCV(base, grid, cv=2, n_jobs=-1).fit(X, y)
                batch = remote.best_estimator_.set_params(n_jobs=-1).predict(X)
    assert remote.best_params_ == local.best_params_
    assert np.array_equal(remote.cv_results_["mean_test_score"],
                          local.cv_results_["mean_test_score"])
    _same(batch, local.best_estimator_.predict(X))


@pytest.mark.parametrize("solver", ["gdmm", "bcfw", "ssg"])
def test_ssvm_fit_is_identical_for_any_n_jobs(chain_data, solver):
    """The certificate's loss-augmented Viterbi runs on chunks of sequences in
    threads; weights, history values and primal objectives are bit-identical."""
    X, y = chain_data
    one = _fit_quietly(SequenceSSVM(solver=solver, max_iter=6, check_every=1,
                                    random_state=0), X, y)
    two = _fit_quietly(SequenceSSVM(solver=solver, max_iter=6, check_every=1,
                                    random_state=0, n_jobs=2), X, y)
    np.testing.assert_array_equal(one.coef_, two.coef_)
    np.testing.assert_array_equal(one.transition_, two.transition_)
    for a, b in zip(one.history_, two.history_):
        for key in ("primal", "dual", "gap", "objective"):
            assert np.array_equal(a[key], b[key], equal_nan=True), key


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_nan_in_a_late_chunk_names_its_sequence(chain_data, n_jobs):
    # sparse input is stacked chunk by chunk inside the parallel work: a bad
    # value far from the first chunk must still be reported with its index
    X, y = chain_data
    ssvm = _fit_quietly(SequenceSSVM(C=1.0, max_iter=3, random_state=0), X, y)
    crf = _fit_quietly(SequenceCRF(max_iter=5), X, y)
    bad = list(X)
    bad[53] = bad[53].copy()
    bad[53].data[1] = np.nan
    calls = [lambda m: m.predict(bad), lambda m: m.score(bad, y),
             lambda m: m.predict_topk(bad, 2)]
    for model in (ssvm, crf):
        model.set_params(n_jobs=n_jobs)
        for call in calls:
            with pytest.raises(ValueError, match=r"X\[53\] contains NaN or infinity"):
                call(model)
    with pytest.raises(ValueError, match=r"X\[53\] contains NaN or infinity"):
        crf.predict_marginals(bad)


def test_chunk_scores_equal_scipy_products():
    # the chunks' compiled token scoring against scipy's CSR product, for
    # each form the rows come in
    import scipy.sparse as sp

    from structlearn.estimators._base import (UnstackedSequences, _rows, _scoring_weights,
                                             chunk_scores)
    from structlearn.estimators._validation import check_sequence_items, check_sequences

    rng = np.random.default_rng(3)
    for trial in range(5):
        d, K = int(rng.integers(1, 40)), int(rng.integers(1, 12))
        X = [sp.random(int(rng.integers(1, 6)), d, density=0.3, format="csr", random_state=rng)
             * rng.normal() for _ in range(int(rng.integers(1, 20)))]
        coef = _scoring_weights(rng.normal(size=(K, d)))
        Xcat, offsets, _ = check_sequences(X)
        parts, _, _, _ = check_sequence_items(X)
        expected = Xcat @ coef.T
        np.testing.assert_array_equal(chunk_scores(Xcat, coef), expected)
        a, b = 0, len(X)
        if b > 2:
            a, b = 1, b - 1
        lo, hi = offsets[a], offsets[b]
        np.testing.assert_array_equal(chunk_scores(_rows(Xcat, offsets, a, b), coef),
                                      expected[lo:hi])
        lazy = UnstackedSequences(parts, offsets, d, 0, True)
        np.testing.assert_array_equal(chunk_scores(_rows(lazy, offsets, a, b), coef),
                                      expected[lo:hi])
        dense = [x.toarray() for x in X]  # dense rows, scored in the chunk too
        lazy = UnstackedSequences(check_sequence_items(dense)[0], offsets, d, 0, False)
        np.testing.assert_allclose(chunk_scores(_rows(lazy, offsets, a, b), coef),
                                   expected[lo:hi], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("backend", ["loky", "dask"])
def test_fits_under_process_backends_equal_the_single_job_fits(chain_data, backend):
    """Parallel work that writes into the caller's arrays (the SSVM
    certificate's hinges, the CRF's gradient parts) runs on threads whatever
    joblib back-end is configured: same bits as without it.  The SSVM's
    training partitions and the CRF's likelihood stay on threads under loky
    and go to the workers under dask (the same fit to rounding)."""
    X, y = chain_data
    one = _fit_quietly(SequenceSSVM(C=0.1, max_iter=6, check_every=1, random_state=0), X, y)
    crf_one = _fit_quietly(SequenceCRF(max_iter=8), X, y)
    parts = dict(C=0.1, max_iter=6, check_every=1, random_state=0, n_jobs=2,
                 training_partitions=2)
    parted_one = _fit_quietly(SequenceSSVM(**parts), X, y)
    if backend == "dask":
        distributed = pytest.importorskip("distributed")
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           dashboard_address=":0")
        client = distributed.Client(cluster)
    try:
        with joblib.parallel_config(backend=backend):
            two = _fit_quietly(SequenceSSVM(C=0.1, max_iter=6, check_every=1, random_state=0,
                                            n_jobs=2), X, y)
            crf_two = _fit_quietly(SequenceCRF(max_iter=8, n_jobs=2), X, y)
            parted_two = _fit_quietly(SequenceSSVM(**parts), X, y)
    finally:
        if backend == "dask":
            client.close()
            cluster.close()
    np.testing.assert_array_equal(one.coef_, two.coef_)
    # the training partitions run on the fit's own threads under loky, on the
    # workers under dask (the same rounds; the weights summed in another order)
    if backend == "dask":
        assert len(parted_one.history_) == len(parted_two.history_)
        assert parted_two.history_[-1]["bytes_sent"] > 0
        np.testing.assert_allclose(parted_one.coef_, parted_two.coef_, atol=1e-12)
        np.testing.assert_allclose(parted_one.transition_, parted_two.transition_, atol=1e-12)
    else:
        np.testing.assert_array_equal(parted_one.coef_, parted_two.coef_)
        np.testing.assert_array_equal(parted_one.transition_, parted_two.transition_)
    for a, b in zip(one.history_, two.history_):
        for key in ("primal", "dual", "gap"):
            assert np.array_equal(a[key], b[key], equal_nan=True), key
    _same(crf_one.predict(X), crf_two.predict(X))
    dense = [c.toarray() if hasattr(c, "toarray") else c for c in (crf_one.coef_, crf_two.coef_)]
    if backend == "dask":  # the likelihood summed over the workers' runs: to rounding
        np.testing.assert_allclose(*dense, atol=1e-10)
        assert crf_two.history_[-1]["objective"] == pytest.approx(
            crf_one.history_[-1]["objective"], rel=1e-10)
    else:
        np.testing.assert_array_equal(*dense)


def test_a_certificate_with_the_dual_above_the_primal_raises():
    from structlearn.learners._ssvm_common import HistoryMonitor

    monitor = HistoryMonitor()
    monitor.record(1, 10.0, 9.0, 0.0, 1.0, 0, 0.1)
    with pytest.raises(RuntimeError, match="invalid certificate"):
        monitor.record(2, 10.0, 12.0, 0.0, 1.0, 0, 0.1)
