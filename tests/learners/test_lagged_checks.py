"""Lagged checks of the chain GDMM fit: the values, the stopping rule, the threads."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

import structlearn.learners._lagged_checks as lagged_checks
from structlearn.datasets import make_chain_data
from structlearn.estimators import SequenceSSVM
from structlearn.learners._lagged_checks import CHECK_LAG, OverlappedPrimal
from structlearn.learners.gdmm_chain import GDMMChainState
from structlearn.learners._ssvm_common import ChainMonitor, ChainProblem


def _data(n_labels=12, n_seq=120):
    return make_chain_data(n_seq, length=7, n_labels=n_labels, n_features=300, density=0.03,
                           random_state=1)


def _fit(X, y, n_jobs, lag=True, **kw):
    kw = {"C": 0.1, "tol": 1e-3, "random_state": 0, "max_iter": 400, **kw}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(lagged_checks, "LAGGED_CHECKS_MIN_ENTRIES", 0 if lag else 1 << 62)
        return SequenceSSVM(n_jobs=n_jobs, **kw).fit(X, y)


def _dense(coef):
    return coef.toarray() if sp.issparse(coef) else np.asarray(coef)


def _checks(model):
    return [(r["iter"], r["primal"], r["dual"]) for r in model.history_
            if np.isfinite(r["primal"])]


@pytest.mark.parametrize("n_labels, kw", [(12, {}), (70, {}), (12, {"oracle": "dense"}),
                                         (12, {"solver": "bcfw", "tol": 1e-2})])
def test_lagged_fit_is_the_same_on_any_number_of_threads(n_labels, kw):
    # 12 labels: float64 passes (the check's weights copied); 70: float32
    # passes (the check reads W itself)
    X, y = _data(n_labels)
    one, two = _fit(X, y, 1, **kw), _fit(X, y, 2, **kw)
    assert one.converged_ and two.converged_
    np.testing.assert_array_equal(_dense(one.coef_), _dense(two.coef_))
    np.testing.assert_array_equal(one.transition_, two.transition_)
    assert _checks(one) == _checks(two) and len(_checks(one)) >= 3


def test_sparse_weights_lagged_fit_is_the_same_on_any_number_of_threads():
    X, y = _data()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("structlearn.estimators.ssvm.SPARSE_WEIGHTS_MIN_ENTRIES", 1)
        mp.setattr("structlearn.learners.gdmm_chain.DENSE_WEIGHTS_MIN_FILL", np.inf)
        one, two = (_fit(X, y, n_jobs, oracle="sublinear", n_partitions=1, warm_start=True) for n_jobs in (1, 2))
    assert one._solver_state.sparse_weights
    np.testing.assert_array_equal(_dense(one.coef_), _dense(two.coef_))
    assert _checks(one) == _checks(two)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("n_labels", [12, 70])  # float64 / float32 passes once dense
def test_sparse_rows_turning_dense_mid_fit_lag_the_same_on_any_number_of_threads(n_labels):
    """Sparse rows that fill up turn dense after a pass while a check of the
    rows runs beside the passes: the same fit on one and two threads, and the
    model dense."""
    from structlearn.oracles.sparse_rows import sparse_rows_nnz

    X, _ = make_chain_data(60, length=7, n_labels=n_labels, n_features=400, density=0.01,
                           random_state=1)  # the rows pass half the entries after some passes
    y = [np.arange(7 * i, 7 * i + 7) % n_labels for i in range(60)]  # all labels occur
    seen = []
    real = GDMMChainState.densify

    def densify(state, problem):
        fill = sparse_rows_nnz(state.Wsp) if state.sparse_weights else None
        done = real(state, problem)
        seen.append((fill, done))
        return done

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("structlearn.estimators.ssvm.SPARSE_WEIGHTS_MIN_ENTRIES", 1)
        mp.setattr(GDMMChainState, "densify", densify)
        one, two = (_fit(X, y, n_jobs, oracle="sublinear", n_partitions=1, warm_start=True,
                         max_iter=60, check_every=1)
                    for n_jobs in (1, 2))
    switches = [i for i, (_, done) in enumerate(seen) if done]
    assert len(switches) == 2 and switches[0] >= 3  # one per fit, after sparse passes
    assert not one._solver_state.sparse_weights and isinstance(one.coef_, np.ndarray)
    np.testing.assert_array_equal(one.coef_, two.coef_)
    np.testing.assert_array_equal(one.transition_, two.transition_)
    assert _checks(one) == _checks(two) and len(_checks(one)) >= 3


@pytest.mark.parametrize("solver", ["gdmm", "bcfw"])
def test_lagged_values_are_the_checks_of_their_own_passes(solver):
    # float64 passes: checks do not move the iterates, so a fit checked
    # after every pass has each lagged check's values at the same pass
    X, y = _data()
    tol = 1e-2 if solver == "bcfw" else 1e-3
    lagged = _fit(X, y, 2, solver=solver, tol=tol)
    every = {r["iter"]: (r["primal"], r["dual"])
             for r in _fit(X, y, 1, lag=False, check_every=1, solver=solver, tol=tol).history_}
    checks = _checks(lagged)
    assert all(every[i] == (p, d) for i, p, d in checks if i in every)
    # a check is taken CHECK_LAG passes after its pass, and the next one
    # starts then at the earliest; the last pass is checked (the confirmation)
    gaps = np.diff([i for i, _, _ in checks])
    assert gaps.min() >= CHECK_LAG and checks[-1][0] == len(lagged.history_)


def test_lagged_fit_stops_on_a_certificate_of_the_model_it_returns():
    X, y = _data()
    model = _fit(X, y, 2)
    last = model.history_[-1]
    assert model.converged_ and last["relative_gap"] <= 1e-3
    # the last record's primal is the returned model's objective (the same
    # passes checked after each one, float64 passes: the same iterates)
    with pytest.warns(ConvergenceWarning):
        check = _fit(X, y, 1, lag=False, check_every=1, max_iter=len(model.history_), tol=0.0)
    assert check.history_[-1]["primal"] == last["primal"]


def test_small_fits_do_not_lag():
    X, y = _data()
    a = SequenceSSVM(C=0.1, tol=1e-3, random_state=0, max_iter=400).fit(X, y)
    b = _fit(X, y, 1, lag=False)
    assert _checks(a) == _checks(b)


def test_max_iter_takes_the_running_check_then_checks_the_last_pass():
    X, y = _data()
    with pytest.warns(ConvergenceWarning):
        model = _fit(X, y, 2, max_iter=CHECK_LAG + 2, check_every=1, tol=1e-9)
    checked = [i for i, _, _ in _checks(model)]
    assert checked[-1] == CHECK_LAG + 2 and 1 in checked


def _random_problem(rng, n_seq=40, n_labels=9, n_features=30):
    lengths = rng.integers(1, 9, size=n_seq)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    X = sp.random(int(offsets[-1]), n_features, density=0.2, format="csr",
                  random_state=np.random.RandomState(0))
    y = rng.integers(0, n_labels, size=int(offsets[-1])).astype(np.int64)
    return ChainProblem(X.data, X.indices.astype(np.int64), X.indptr.astype(np.int64),
                        offsets, y, n_features, n_labels)


@pytest.mark.parametrize("n_workers", [1, 3])
@pytest.mark.parametrize("sparse_rows", [False, True])
def test_overlapped_primal_equals_the_monitors_value(n_workers, sparse_rows):
    from structlearn.oracles._sparse_rows_kernels import sparse_rows_add
    from structlearn.oracles.sparse_rows import make_sparse_rows

    rng = np.random.default_rng(n_workers)
    problem = _random_problem(rng)
    monitor = ChainMonitor(problem, 0.1)
    W = rng.normal(size=(problem.n_features, problem.n_labels))
    v = rng.normal(size=(problem.n_labels, problem.n_labels))
    if sparse_rows:
        W[rng.random(W.shape) < 0.7] = 0.0
        weights = make_sparse_rows(problem.n_features)
        for f, k in zip(*np.nonzero(W)):
            weights = sparse_rows_add(weights, int(f), int(k), float(W[f, k]))
        dense, Wsp = np.empty((0, problem.n_labels)), weights
    else:
        weights, dense, Wsp = W, W, None
    expected = monitor.primal(weights, v)
    overlap = OverlappedPrimal(monitor, n_workers)
    try:
        for _ in range(2):  # a second check after the first one's value
            overlap.start(dense, Wsp, v)
            v_before = v.copy()
            v += 1.0  # the transitions are copied at the start
            primal, dual = overlap.value()
            assert primal == expected and np.isnan(dual)
            v[:] = v_before
    finally:
        overlap.close()


def test_a_failing_check_raises_in_the_fit_and_leaves_no_thread(monkeypatch):
    import threading

    X, y = _data()

    def broken(*args):
        raise FloatingPointError("broken check")

    monkeypatch.setattr(lagged_checks, "chain_hinges", broken)
    before = threading.active_count()
    with pytest.raises(FloatingPointError, match="broken check"):
        _fit(X, y, 2)
    assert threading.active_count() == before



def _lagged_fit_coef(X, y, n_jobs):
    import structlearn.learners._lagged_checks as module

    saved = module.LAGGED_CHECKS_MIN_ENTRIES  # in a worker process: its own module
    module.LAGGED_CHECKS_MIN_ENTRIES = 0
    try:
        model = SequenceSSVM(C=0.1, tol=1e-3, random_state=0, max_iter=400,
                             n_jobs=n_jobs).fit(X, y)
    finally:
        module.LAGGED_CHECKS_MIN_ENTRIES = saved  # the workers are reused
    return _dense(model.coef_), model.transition_


@pytest.mark.parametrize("backend", ["loky", "threading"])
def test_lagged_fit_under_joblib_backends_and_in_loky_workers(backend):
    from joblib import Parallel, delayed, parallel_config

    X, y = _data()
    ref = _fit(X, y, 1)
    with parallel_config(backend=backend):
        inside = _fit(X, y, 2)
    np.testing.assert_array_equal(_dense(ref.coef_), _dense(inside.coef_))
    if backend == "loky":
        results = Parallel(n_jobs=2, backend="loky")(
            delayed(_lagged_fit_coef)(X, y, 2) for _ in range(2))
        for coef, transition in results:
            np.testing.assert_array_equal(coef, _dense(ref.coef_))
            np.testing.assert_array_equal(transition, ref.transition_)


def test_lagged_fit_under_the_dask_backend_stays_on_threads():
    distributed = pytest.importorskip("distributed")
    from joblib import parallel_config

    X, y = _data()
    ref = _fit(X, y, 1)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster), parallel_config(backend="dask"):
        remote = _fit(X, y, 2)
    np.testing.assert_array_equal(_dense(ref.coef_), _dense(remote.coef_))
    assert _checks(ref) == _checks(remote)


def test_an_error_in_the_passes_stops_a_running_check(monkeypatch):
    import threading

    import structlearn.learners.gdmm_chain as gdmm_chain

    X, y = _data()
    calls = []
    real = gdmm_chain.gdmm_chain_multipliers

    def failing(*args):
        calls.append(1)
        if len(calls) == 4:  # a check started after pass 2 is running beside pass 4
            raise MemoryError("no room")
        return real(*args)

    monkeypatch.setattr(gdmm_chain, "gdmm_chain_multipliers", failing)
    before = threading.active_count()
    with pytest.raises(MemoryError, match="no room"):
        _fit(X, y, 2, check_every=2)
    assert threading.active_count() == before
