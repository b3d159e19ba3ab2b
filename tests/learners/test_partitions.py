"""Partitioned training (``training_partitions``): the split, the damping,
and partitioned GDMM fits against one-process fits."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

from structlearn.datasets import make_chain_data
from structlearn.estimators import SequenceSSVM
from structlearn.learners._partitions import (PartitionThreads, check_training_partitions,
                                              feature_sigmas, local_features, split_by_weight)


def _fit(X, y, **kw):
    params = dict(C=0.1, tol=0.01, max_iter=300, random_state=0)
    params.update(kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return SequenceSSVM(**params).fit(X, y)


@pytest.mark.parametrize("seed", range(5))
def test_feature_sigmas_count_the_partitions_using_each_feature(seed):
    rng = np.random.RandomState(seed)
    X = sp.random(40, 30, density=0.1, format="csr", random_state=rng)
    bounds = np.array([0, 7, 19, 40])
    got = feature_sigmas(X.indices, X.indptr, bounds, 30)
    dense = X.toarray() != 0
    want = np.array([max(1, sum(dense[a:b, f].any() for a, b in zip(bounds[:-1], bounds[1:])))
                     for f in range(30)], dtype=float)
    np.testing.assert_array_equal(got, want)


def test_local_features_renumber_to_the_used_rows():
    rows, local = local_features(np.array([7, 3, 7, 9, 3]))
    np.testing.assert_array_equal(rows, [3, 7, 9])
    np.testing.assert_array_equal(rows[local], [7, 3, 7, 9, 3])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("seed", range(6))
def test_merge_copies_equals_moves_then_adds_then_gathers(dtype, seed):
    """The fused merge against the three steps it replaces, bit for bit:
    each copy turned into its move against the rows before the merge, the
    moves added in partition order, the copies gathered from the result."""
    from structlearn.learners._gdmm_chain_kernels import (add_row_moves, gather_rows,
                                                          merge_copies, rows_to_moves)

    rng = np.random.default_rng(seed)
    d, K, P = int(rng.integers(1, 40)), int(rng.integers(1, 9)), int(rng.integers(1, 5))
    W = rng.normal(size=(d, K))
    parts = [np.sort(rng.choice(d, size=int(rng.integers(0, d + 1)), replace=False))
             for _ in range(P)]
    sigmas = [rng.integers(1, P + 1, size=r.shape[0]).astype(np.float64) for r in parts]
    copies = [(W[r] + rng.normal(size=(r.shape[0], K))).astype(dtype) for r in parts]
    f0 = int(rng.integers(0, d))
    f1 = int(rng.integers(f0, d + 1))

    expected_W = W.copy()
    expected = [c.copy() for c in copies]
    for r, c, sg in zip(parts, expected, sigmas):
        rows_to_moves(expected_W, r, c, sg)
    for r, c in zip(parts, expected):
        first, stop = np.searchsorted(r, (f0, f1))
        add_row_moves(expected_W, r, c, first, stop)
    for r, c in zip(parts, expected):
        inside = (r >= f0) & (r < f1)
        gathered = np.empty_like(c)
        gather_rows(expected_W, r, gathered)
        c[inside] = gathered[inside]

    offsets = np.concatenate([[0], np.cumsum([r.shape[0] for r in parts])]).astype(np.int64)
    flat = np.concatenate(copies).reshape(-1, K).astype(dtype)
    got_W = W.copy()
    norms = np.zeros(2)
    merge_copies(got_W, np.concatenate(parts).astype(np.int64), np.concatenate(sigmas),
                 offsets, flat, f0, f1, int(rng.integers(1, 6)), norms)
    np.testing.assert_array_equal(got_W, expected_W)
    # the norms of the merged move and of the partitions' moves, over the range
    merged = expected_W - W
    spread = sum(float(np.square(((c.astype(np.float64) - W[r].astype(dtype)) / sg[:, None])
                                 [(r >= f0) & (r < f1)]).sum())
                 for r, c, sg in zip(parts, copies, sigmas))
    np.testing.assert_allclose(norms, [np.square(merged[f0:f1]).sum(), spread],
                               rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-300)
    for p, c in enumerate(expected):
        inside = (parts[p] >= f0) & (parts[p] < f1)
        np.testing.assert_array_equal(flat[offsets[p]:offsets[p + 1]][inside], c[inside])
        # rows outside the range are left as they were
        np.testing.assert_array_equal(flat[offsets[p]:offsets[p + 1]][~inside],
                                      copies[p][~inside])


@pytest.mark.parametrize("n_labels", [60, 70])  # float64 and float32 copies, sorted search
def test_rebuilt_and_updated_search_structures_give_the_same_fit(monkeypatch, n_labels):
    """A partition's transition search structure rebuilt at every refresh, or
    updated entry by entry at every one, gives the same iterates bit for bit
    (the search is exact; the tables are the same)."""
    import structlearn.learners._gdmm_chain_partitions as cp

    X, y = make_chain_data(30, length=(3, 9), n_labels=n_labels, n_features=25,
                           random_state=2)
    y = [np.arange(5 * i, 5 * i + len(s)) % n_labels for i, s in enumerate(y)]
    fits = []
    for share in (1, 10**12):  # never rebuilt / always
        monkeypatch.setattr(cp, "REBUILD_SHARE", share)
        fits.append(_fit(X, y, n_jobs=2, training_partitions=3, max_iter=15, check_every=1,
                         oracle="sublinear"))
    a, b = fits
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.transition_, b.transition_)
    assert [r["primal"] for r in a.history_] == [r["primal"] for r in b.history_]


@pytest.mark.parametrize("seed", range(6))
def test_refresh_transitions_rebuilds_or_updates_to_the_same_structure(seed):
    from structlearn.learners._gdmm_chain_kernels import refresh_transitions
    from structlearn.learners._gdmm_chain_visits import search_table
    from structlearn.oracles.indicator import indicator_argmax

    rng = np.random.default_rng(seed)
    K = int(rng.integers(2, 12))
    v0 = np.where(rng.random((K, K)) < 0.5, rng.normal(size=(K, K)), 0.0)
    v1 = v0.copy()
    hit = rng.random((K, K)) < rng.uniform(0.0, 1.0)
    v1[hit] += rng.choice([0.5, -1.0, 2.0], size=int(hit.sum()))
    tau = search_table(np.zeros((K, K)), False)[0]
    results = []
    for rebuild_above in (K * K, -1):  # never / always
        local = v0.ravel().copy()
        _, vstate = search_table(v0, True)
        changed = refresh_transitions(v1.ravel(), tau, local, vstate[0], vstate, rebuild_above)
        assert changed == int((v0 != v1).sum())
        np.testing.assert_array_equal(local, v1.ravel())
        fresh = search_table(v1, True)[1]
        np.testing.assert_array_equal(vstate[0], fresh[0])
        def searches(state):
            return [indicator_argmax(state, idx1=np.array([a]), val1=np.array([m]))[:3]
                    for a in range(K) for m in (-3.0, 0.0, 3.0)]

        results.append(searches(vstate))
        assert results[-1] == searches(fresh)
    assert results[0] == results[1]


def test_split_by_weight_makes_no_empty_run():
    b = split_by_weight(np.array([5, 1, 1, 1, 1, 1]), 2)
    assert b[0] == 0 and b[-1] == 6 and np.all(np.diff(b) > 0)


def test_check_training_partitions_errors():
    assert check_training_partitions(None, 3) == 1
    assert check_training_partitions(3, 3) == 3
    with pytest.raises(ValueError, match="at least 1"):
        check_training_partitions(0, 3)
    with pytest.raises(ValueError, match="partition 3 .* no sequences"):
        check_training_partitions(4, 3, "sequences")
    with pytest.raises(TypeError, match="integer"):
        check_training_partitions(2.0, 3)


def test_partition_threads_keep_order_and_raise_after_all_ended():
    done = []

    def f(i):
        if i == 1:
            raise RuntimeError("partition 1 failed")
        done.append(i)
        return i * i

    with PartitionThreads(2) as threads:
        assert threads.map(lambda i: i * i, range(5)) == [0, 1, 4, 9, 16]
        with pytest.raises(RuntimeError, match="partition 1"):
            threads.map(f, range(3))
    assert sorted(done) == [0, 2]


def test_partition_threads_run_the_last_call_in_the_caller_after_the_others_started():
    import threading
    import time

    caller = threading.get_ident()
    ended = []

    def slow(i):
        time.sleep(0.05)
        ended.append(i)
        return threading.get_ident()

    def fail_here(i):
        if i == 2:
            raise KeyError("the caller's call failed")
        return slow(i)

    with PartitionThreads(3) as threads:
        idents = threads.map(lambda i: threading.get_ident(), range(3))
        assert idents[-1] == caller and caller not in idents[:-1]
        with pytest.raises(KeyError, match="caller's call"):  # raised once the others ended
            threads.map(fail_here, range(3))
        assert sorted(ended) == [0, 1]
        ended.clear()
        with pytest.raises(RuntimeError, match="partition 0"):  # the first in partition order
            threads.map(lambda i: (_ for _ in ()).throw(RuntimeError(f"partition {i}")),
                        range(3))


@pytest.mark.parametrize("n", [1, 2])
def test_partition_threads_run_one_call_beside_another(n):
    import threading
    import time

    ended = []
    caller = threading.get_ident()

    def slow_failure():
        time.sleep(0.05)
        ended.append("there")
        raise ValueError("the other call failed")

    with PartitionThreads(n) as threads:
        here, there = threads.beside(lambda: threading.get_ident(),
                                     lambda: threading.get_ident())
        assert here == caller and (there != caller) == (n > 1)
        with pytest.raises(ValueError, match="other call"):  # raised once both ended
            threads.beside(lambda: ended.append("here"), slow_failure)
        assert sorted(ended) == ["here", "there"]
        ended.clear()
        with pytest.raises(KeyError):  # this thread's failure waits for the other call too
            threads.beside(lambda: {}["missing"], lambda: time.sleep(0.05) or ended.append(1))
        assert ended == [1]


@pytest.mark.parametrize("n_labels", [5, 70])  # dense scans / sorted search with float32 passes
def test_partitioned_fit_is_independent_of_the_threads(n_labels):
    X, y = make_chain_data(30, length=6, n_labels=n_labels, n_features=40, random_state=1)
    a = _fit(X, y, training_partitions=3, n_jobs=1, max_iter=15)
    b = _fit(X, y, training_partitions=3, n_jobs=3, max_iter=15)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.transition_, b.transition_)
    assert [r["primal"] for r in a.history_] == [r["primal"] for r in b.history_]
    assert a.history_[-1]["partitions"] == 3


@pytest.mark.parametrize("kw", [{}, {"n_partitions": 2}, {"oracle": "dense"}])
def test_partitioned_fit_reaches_the_same_certified_optimum(kw):
    X, y = make_chain_data(40, length=5, n_labels=8, n_features=30, noise=0.4, random_state=2)
    one = _fit(X, y, tol=1e-3, max_iter=2000, **kw)
    two = _fit(X, y, tol=1e-3, max_iter=2000, training_partitions=2, n_jobs=2, **kw)
    assert one.converged_ and two.converged_
    for m in (one, two):
        h = m.history_[-1]
        assert h["dual"] <= h["primal"] and h["relative_gap"] <= 1e-3
    # both primal values are within the gap of the common optimum
    p1, p2 = one.history_[-1]["primal"], two.history_[-1]["primal"]
    assert abs(p1 - p2) <= 2e-3 * max(p1, p2)
    assert two.history_[-1]["dual"] <= p1 + 1e-9 and one.history_[-1]["dual"] <= p2 + 1e-9


def test_partitioned_weights_are_the_sum_of_the_duals():
    """After each merge W = sum_j x_j (x) alpha_j and v = sum_j beta_j."""
    X, y = make_chain_data(20, length=5, n_labels=6, n_features=25, random_state=3)
    m = _fit(X, y, training_partitions=2, max_iter=7, warm_start=True)
    st = m._solver_state
    Xc = sp.vstack([sp.csr_matrix(x) for x in X]).tocsr().toarray()
    A = np.zeros((Xc.shape[0], 6))
    for j in range(Xc.shape[0]):
        for s in range(st.slots.count[j]):
            A[j, st.slots.labels[j, s]] += st.slots.alpha[j, s]
    np.testing.assert_allclose(m.coef_.T, Xc.T @ A, atol=1e-12)
    v = np.zeros((6, 6))
    ends = np.cumsum([len(t) for t in y]) - 1
    for j in range(Xc.shape[0] - 1):
        if j in ends:
            continue
        for q in range(st.pairs.count[j]):
            v[st.pairs.left_label[j, q], st.pairs.right_label[j, q]] += st.pairs.beta[j, q]
    np.testing.assert_allclose(m.transition_, v, atol=1e-12)
    assert st.backoff.any()  # the partitions' search back-off went back to the state


# ---------------------------------------------------------------- BCFW
def test_partitioned_bcfw_is_independent_of_the_threads_and_its_dual_never_falls():
    X, y = make_chain_data(40, length=6, n_labels=7, n_features=40, random_state=5)
    a = _fit(X, y, solver="bcfw", training_partitions=3, n_jobs=1, max_iter=12, check_every=1)
    b = _fit(X, y, solver="bcfw", training_partitions=3, n_jobs=3, max_iter=12, check_every=1)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.transition_, b.transition_)
    duals = [r["dual"] for r in a.history_]
    assert all(d1 >= d0 - 1e-12 for d0, d1 in zip(duals, duals[1:]))
    assert a.history_[-1]["partitions"] == 3 and a.history_[-1]["local_time"] > 0
    assert "damping" not in a.history_[-1]  # BCFW keeps the safe damping


def test_partitioned_bcfw_weights_are_the_blocks_sum():
    """After each merge W = C sum_t x_t (x) (e_{y_t} - mu_t) and v = C (the
    true transition counts - the blocks' expected ones)."""
    X, y = make_chain_data(25, length=5, n_labels=6, n_features=30, random_state=6)
    C = 0.1
    m = _fit(X, y, solver="bcfw", C=C, training_partitions=2, max_iter=6, warm_start=True)
    st = m._solver_state
    Xc = sp.vstack([sp.csr_matrix(x) for x in X]).tocsr().toarray()
    yc = np.concatenate(y)
    onehot = np.eye(6)[yc]
    np.testing.assert_allclose(m.coef_.T, C * Xc.T @ (onehot - st.mu), atol=1e-12)
    v = np.zeros((6, 6))
    for t in y:
        np.add.at(v, (t[:-1], t[1:]), 1.0)
    for i in range(len(y)):
        for q in range(st.pr_start[i], st.pr_start[i] + st.pr_n[i]):
            v[st.pr_a[q], st.pr_b[q]] -= st.pr_v[q]
    np.testing.assert_allclose(m.transition_, C * v, atol=1e-12)


def test_partitioned_bcfw_reaches_the_same_certified_optimum():
    X, y = make_chain_data(40, length=5, n_labels=8, n_features=30, noise=0.4, random_state=2)
    one = _fit(X, y, solver="bcfw", tol=1e-3, max_iter=3000)
    two = _fit(X, y, solver="bcfw", tol=1e-3, max_iter=3000, training_partitions=2, n_jobs=2)
    assert one.converged_ and two.converged_
    p1, p2 = one.history_[-1]["primal"], two.history_[-1]["primal"]
    assert abs(p1 - p2) <= 2e-3 * max(p1, p2)
    assert two.history_[-1]["dual"] <= p1 + 1e-9 and one.history_[-1]["dual"] <= p2 + 1e-9


def test_partitioned_warm_start_continues():
    X, y = make_chain_data(20, length=5, n_labels=6, n_features=25, random_state=4)
    m = _fit(X, y, training_partitions=2, max_iter=5, warm_start=True, tol=1e-6)
    first = m.history_[-1]["dual"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        m.fit(X, y)
    assert m.n_iter_ == 10 and m.history_[-1]["dual"] >= first - 1e-9


def test_partitioned_fit_bad_settings():
    X, y = make_chain_data(3, length=4, n_labels=3, n_features=5, random_state=0)
    with pytest.raises(ValueError, match="training_partitions=4 exceeds the 3 training sequences"):
        _fit(X, y, training_partitions=4)
    with pytest.raises(ValueError, match="solver='gdmm' or 'bcfw', got 'ssg'"):
        _fit(X, y, training_partitions=2, solver="ssg")
    with pytest.raises(ValueError, match="training_partitions=4 exceeds the 3 training sequences"):
        _fit(X, y, training_partitions=4, solver="bcfw")
    with pytest.raises(ValueError, match="training_partitions"):
        _fit(X, y, training_partitions=0)


# ---------------------------------------------------------------- multilabel
def _multilabel_data(seed, n=60, d=12, L=5):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d)
    Y = (X @ rng.randn(d, L) + 0.5 * rng.randn(n, L) > 0.3).astype(int)
    return X, Y


def _label_path(L):
    """The edges of a path of ``L`` labels, which two threads split at a
    separator label."""
    from structlearn.learners._gdmm_multilabel_separators import split_labels

    tree = [(k, k + 1) for k in range(L - 1)]
    E = np.zeros((L, L), dtype=np.uint8)
    for a, b in tree:
        E[a, b] = 1
    assert split_labels(E, 2).separators.size >= 1
    return tree


def _fit_ml(X, Y, **kw):
    from structlearn.estimators import MultiLabelSSVM

    params = dict(C=0.1, tol=0.01, max_iter=300, random_state=0, pairwise="full")
    params.update(kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return MultiLabelSSVM(**params).fit(X, Y)


def _assert_weights_follow_the_duals(m, X, Y):
    """W = X^T A and Pw = the pools' pair duals summed (a warm-started fit's state)."""
    st = m._solver_state
    np.testing.assert_allclose(st.W, X.T @ st.A, atol=1e-10)
    L = Y.shape[1]
    P = np.zeros((L, L))
    pool = st.pool
    for i in range(X.shape[0]):
        for q in range(pool.base[i], pool.base[i] + pool.count[i]):
            P[pool.left[q], pool.right[q]] += pool.dual[q]
    np.testing.assert_allclose(st.weights()[1], P, atol=1e-10)


def test_sub_and_joined_pools_round_trip():
    from structlearn.learners._gdmm_multilabel_storage import joined_pools, new_pair_pool, sub_pool

    rng = np.random.RandomState(0)
    pool = new_pair_pool(rng.randint(1, 4, size=7), 10)
    pool.count[:] = [rng.randint(0, c + 1) for c in pool.capacity]
    pool.left[:] = rng.randint(0, 5, size=pool.left.size)
    pool.dual[:] = rng.randn(pool.dual.size)
    back = joined_pools([sub_pool(pool, 0, 3), sub_pool(pool, 3, 7)])
    np.testing.assert_array_equal(back.count, pool.count)
    for i in range(7):
        a = slice(pool.base[i], pool.base[i] + pool.count[i])
        b = slice(back.base[i], back.base[i] + back.count[i])
        np.testing.assert_array_equal(back.left[b], pool.left[a])
        np.testing.assert_array_equal(back.dual[b], pool.dual[a])


@pytest.mark.parametrize("seed", range(6))
def test_round_layout_matches_a_direct_count(seed):
    """Each partition's rows are the features its samples use, increasing;
    an entry's local id points at its feature there; sigma counts the
    partitions using a feature; the damped values and norms follow."""
    from structlearn.learners._partition_kernels import RoundLayout

    rng = np.random.RandomState(seed)
    n, d = rng.randint(3, 40), rng.randint(1, 30)
    X = sp.random(n, d, density=rng.uniform(0.05, 0.6), format="csr", random_state=rng)
    X.sort_indices()
    layout = RoundLayout(X.data, X.indices, X.indptr, d)
    for _ in range(2):  # a second draw reuses the arrays
        order = rng.permutation(n).astype(np.int64)
        P = rng.randint(1, n + 1)
        bounds = np.unique(np.r_[0, np.sort(rng.choice(np.arange(1, n), P - 1, replace=False)), n]
                           ).astype(np.int64) if P > 1 else np.array([0, n], dtype=np.int64)
        cap = [np.inf, 1.0, 1.5, 2.0][rng.randint(4)]
        layout.redraw(order, bounds, cap)
        count = np.zeros(d)
        for k in range(bounds.size - 1):
            ids = order[bounds[k]:bounds[k + 1]]
            used = np.unique(X[ids].indices)
            np.testing.assert_array_equal(layout.part_rows(k), used)
            count[used] += 1
            for i in ids:
                p = slice(X.indptr[i], X.indptr[i + 1])
                np.testing.assert_array_equal(used[layout.local[p]], X.indices[p])
        sigma = np.minimum(np.maximum(count, 1.0), cap)
        np.testing.assert_array_equal(layout.sigma, sigma)
        np.testing.assert_allclose(layout.step_data, X.data * sigma[X.indices])
        np.testing.assert_allclose(layout.xnorm_sigma,
                                   np.asarray(X.multiply(X) @ sigma).ravel(), atol=1e-12)


def test_region_views_share_the_free_end():
    from structlearn.learners._gdmm_multilabel_kernels import _widen
    from structlearn.learners._gdmm_multilabel_storage import (close_regions, new_pair_pool,
                                                               region_views)

    pool = new_pair_pool(np.full(6, 2), 30)
    pool.count[:] = 2
    pool.dual[:12] = np.arange(12)
    views = region_views(pool, [1, 1, 1])
    assert [int(v.top[0]) for v in views] == [12, 22, 32]
    assert [v.left.shape[0] for v in views] == [22, 32, 42]
    assert _widen(views[1], 4, 4, 10)  # sample 4 moves into view 1's part
    assert pool.base[4] == 22 and pool.capacity[4] == 4
    np.testing.assert_array_equal(pool.dual[22:24], [8, 9])
    assert not _widen(views[0], 0, 12, 20)  # more than view 0's part: nothing moves
    assert pool.base[0] == 0
    close_regions(pool, views)
    assert pool.top[0] == 32
    uneven = region_views(pool, [1.0, 4.0])  # parts in proportion: 2 and 8 free slots
    assert [(int(v.top[0]), v.left.shape[0]) for v in uneven] == [(32, 34), (34, 42)]


def test_partitioned_multilabel_goes_on_after_its_pool_share_fills(monkeypatch):
    """Shares of a few free slots: partitions stop, the pool is packed and
    they go on; the weights still follow the duals and the fit converges."""
    import structlearn.learners._gdmm_multilabel_threads as threads
    from structlearn.learners._gdmm_multilabel_storage import region_views

    calls = []

    def small_parts(pool, shares):
        """The first run of a round gets 6 free slots a partition; the runs
        after a packing get what they asked for."""
        calls.append(len(shares))
        views = region_views(pool, shares)
        if any(s != 1.0 for s in shares):
            return views
        top = int(pool.top[0])
        return [v._replace(left=v.left[:top + 6 * (k + 1)], right=v.right[:top + 6 * (k + 1)],
                           dual=v.dual[:top + 6 * (k + 1)], nu=v.nu[:top + 6 * (k + 1)],
                           top=np.array([top + 6 * k], dtype=np.int64))
                for k, v in enumerate(views)]

    monkeypatch.setattr(threads, "region_views", small_parts)
    X, Y = _multilabel_data(4, n=80, L=8)
    m = _fit_ml(X, Y, training_partitions=2, n_jobs=2, warm_start=True, fit_intercept=False,
                max_iter=3000)
    assert len(calls) > m.n_iter_  # some rounds ran their partitions again
    _assert_weights_follow_the_duals(m, X, Y)
    one = _fit_ml(X, Y, max_iter=3000)
    assert m.converged_ and one.converged_
    p1, p2 = one.history_[-1]["primal"], m.history_[-1]["primal"]
    assert abs(p1 - p2) <= 2e-2 * max(p1, p2)


def test_partitioned_multilabel_is_independent_of_the_threads():
    X, Y = _multilabel_data(0)
    a = _fit_ml(X, Y, training_partitions=3, n_jobs=1, max_iter=12)
    b = _fit_ml(X, Y, training_partitions=3, n_jobs=3, max_iter=12)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.pairwise_coef_, b.pairwise_coef_)
    assert a.history_[-1]["partitions"] == 3


@pytest.mark.parametrize("pairwise", ["full", "none"])
def test_partitioned_multilabel_reaches_the_same_certified_optimum(pairwise):
    X, Y = _multilabel_data(1)
    one = _fit_ml(X, Y, tol=1e-3, max_iter=3000, pairwise=pairwise)
    two = _fit_ml(X, Y, tol=1e-3, max_iter=3000, pairwise=pairwise, training_partitions=2,
                  n_jobs=2)
    assert one.converged_ and two.converged_
    p1, p2 = one.history_[-1]["primal"], two.history_[-1]["primal"]
    assert abs(p1 - p2) <= 2e-3 * max(p1, p2)
    assert two.history_[-1]["dual"] <= p1 + 1e-9 and one.history_[-1]["dual"] <= p2 + 1e-9


def test_partitioned_multilabel_damping_is_measured():
    """Eight partitions on bag-of-words data: the first round damps by P,
    later ones by less (the moves hardly add up), the dampings and weights
    do not depend on the threads, and the fit reaches the certified gap."""
    from structlearn.datasets import make_sparse_multilabel

    X, Y = make_sparse_multilabel(400, n_labels=12, n_features=300, labels_per_sample=2.0,
                                  random_state=3)
    edges = np.sort([[i, (i + 1) % 12] for i in range(12)], axis=1)  # a cycle: samples split
    one = _fit_ml(X, Y, pairwise=edges, training_partitions=8, n_jobs=1, max_iter=400)
    two = _fit_ml(X, Y, pairwise=edges, training_partitions=8, n_jobs=2, max_iter=400)
    assert one.converged_
    damping = np.array([h["damping"] for h in one.history_])
    assert damping[0].tolist() == [8.0, 8.0]
    assert damping[:, 0].min() < 8.0
    assert np.all((damping >= 1.0) & (damping <= 8.0))
    np.testing.assert_array_equal(damping, [h["damping"] for h in two.history_])
    np.testing.assert_array_equal(one.coef_, two.coef_)
    np.testing.assert_array_equal(one.pairwise_coef_, two.pairwise_coef_)


def test_pairing_rows_cap_the_damping():
    from structlearn.learners._gdmm_multilabel_blocks import pairing_rows

    block_rows = [np.array([0, 2]), np.array([2, 3]), np.array([0, 2, 3]), np.array([1])]
    groups = [(0, 2), (1, 3)]
    rows, sigma = pairing_rows(block_rows, groups, 5)
    assert [r.tolist() for r in rows] == [[0, 2, 3], [1, 2, 3]]
    assert sigma.tolist() == [1, 1, 2, 2, 1]
    assert pairing_rows(block_rows, groups, 5, cap=1.5)[1].tolist() == [1, 1, 1.5, 1.5, 1]


def test_partitioned_multilabel_weights_follow_the_duals():
    """After the merges W = X^T A and Pw = the pools' pair duals summed."""
    X, Y = _multilabel_data(2)
    m = _fit_ml(X, Y, training_partitions=2, max_iter=6, warm_start=True, fit_intercept=False)
    _assert_weights_follow_the_duals(m, X, Y)


def test_partitioned_multilabel_time_limit_and_bad_settings():
    X, Y = _multilabel_data(3, n=200)
    m = _fit_ml(X, Y, training_partitions=2, max_time=1e-4, tol=0.0, max_iter=50)
    assert m.n_iter_ == 1 and np.isfinite(m.history_[-1]["gap"])
    with pytest.raises(ValueError, match="exceeds the 200 training samples"):
        _fit_ml(X, Y, training_partitions=201)
    with pytest.raises(ValueError, match="solver='gdmm'"):
        _fit_ml(X, Y, training_partitions=2, solver="ssg")


@pytest.mark.parametrize("backend", ["loky", "threading"])
def test_partitioned_fit_under_a_joblib_backend(backend):
    """The partitions run on their own threads whatever joblib back-end is
    configured (they write the duals in place): the same model either way."""
    from joblib import parallel_config

    X, y = make_chain_data(20, length=5, n_labels=6, n_features=25, random_state=5)
    Xm, Ym = _multilabel_data(5)
    for solver in ("gdmm", "bcfw"):
        plain = _fit(X, y, solver=solver, training_partitions=2, n_jobs=2, max_iter=8)
        with parallel_config(backend=backend):
            under = _fit(X, y, solver=solver, training_partitions=2, n_jobs=2, max_iter=8)
        np.testing.assert_array_equal(plain.coef_, under.coef_)
        np.testing.assert_array_equal(plain.transition_, under.transition_)
    path = [(k, k + 1) for k in range(Ym.shape[1] - 1)]  # label groups cut at a separator
    for kw in ({}, dict(pairwise=path), dict(pairwise="none", training_partitions=None)):
        settings = dict(training_partitions=2, n_jobs=2, max_iter=8)
        settings.update(kw)
        plain = _fit_ml(Xm, Ym, **settings)
        with parallel_config(backend=backend):
            under = _fit_ml(Xm, Ym, **settings)
        np.testing.assert_array_equal(plain.coef_, under.coef_)
        np.testing.assert_array_equal(plain.pairwise_coef_, under.pairwise_coef_)


def test_label_groups_fit_in_worker_processes():
    """A fit with label groups inside loky workers (each worker runs its own
    threads) gives the model of the same fit in this process."""
    from joblib import Parallel, delayed

    X, Y = _multilabel_data(11, n=70, L=7)
    tree = [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 6)]
    settings = [dict(pairwise=tree, training_partitions=2, n_jobs=2, max_iter=6),
                dict(pairwise="none", n_jobs=2, max_iter=6)]
    here = [_fit_ml(X, Y, **kw) for kw in settings]
    there = Parallel(n_jobs=2, backend="loky")(delayed(_fit_ml)(X, Y, **kw) for kw in settings)
    for a, b in zip(here, there):
        np.testing.assert_array_equal(a.coef_, b.coef_)
        np.testing.assert_array_equal(a.pairwise_coef_, b.pairwise_coef_)


# ---------------------------------------------------------- label groups
def _components(E):
    """Naive connected components of an upper-triangular mask (label -> id)."""
    L = E.shape[0]
    comp = np.arange(L)
    changed = True
    while changed:
        changed = False
        for a, b in zip(*np.nonzero(E)):
            low = min(comp[a], comp[b])
            if comp[a] != low or comp[b] != low:
                comp[comp == comp[a]] = low
                comp[comp == comp[b]] = low
                changed = True
    return comp


@pytest.mark.parametrize("seed", range(8))
def test_label_groups_hold_whole_components_evenly(seed):
    """Graphs with cycles: whole components, or no split."""
    from structlearn.learners._gdmm_multilabel_separators import MAX_IMBALANCE, split_labels

    rng = np.random.RandomState(seed)
    L = rng.randint(2, 30)
    E = np.triu((rng.rand(L, L) < rng.choice([0.0, 0.05, 0.2, 0.6])).astype(np.uint8), 1)
    if L >= 3:  # a cycle: no separators
        E[0, 1] = E[1, 2] = E[0, 2] = 1
    P = rng.randint(2, 5)
    split = split_labels(E, P)
    groups = None if split is None else split.groups
    if split is not None:
        assert split.separators.size == 0
    comp = _components(E)
    sizes = np.bincount(np.unique(comp, return_inverse=True)[1])
    n_comp = sizes.size
    G = min(P, n_comp)
    allowed = max(MAX_IMBALANCE * L / G, -(-L // G))
    if groups is None:  # one component, or the largest first into the smallest overflows
        load = np.zeros(G)
        for c in sorted(sizes, reverse=True):
            load[np.argmin(load)] += c
        assert n_comp == 1 or load.max() > allowed
        return
    assert len(groups) == min(P, n_comp)
    every = np.sort(np.concatenate(groups))
    np.testing.assert_array_equal(every, np.arange(L))
    for g in groups:
        assert np.all(np.diff(g) > 0)
        for c in np.unique(comp[g]):  # each component lies in one group
            assert set(np.flatnonzero(comp == c)) <= set(g)
    assert max(len(g) for g in groups) <= allowed


def test_label_split_of_graphs_and_trees():
    from structlearn.learners._gdmm_multilabel_separators import split_labels

    E = np.triu(np.ones((6, 6), dtype=np.uint8), 1)
    assert split_labels(E, 2) is None  # one component with cycles
    assert [g.tolist() for g in split_labels(np.zeros((4, 4), dtype=np.uint8), 2).groups] == \
        [[0, 2], [1, 3]]
    chain = np.zeros((7, 7), dtype=np.uint8)
    chain[np.arange(6), np.arange(1, 7)] = 1
    split = split_labels(chain, 2)  # a path cut at its middle label
    assert split.separators.tolist() == [3]
    assert [g.tolist() for g in split.groups] == [[0, 1, 2, 3], [3, 4, 5, 6]]
    path = np.zeros((13, 13), dtype=np.uint8)
    path[np.arange(12), np.arange(1, 13)] = 1
    split = split_labels(path, 4)  # the middle, then the middles of the two halves
    assert split.separators.tolist() == [2, 6, 9]
    assert sorted(g.tolist() for g in split.groups) == [[0, 1, 2], [2, 3, 4, 5, 6],
                                                        [6, 7, 8, 9], [9, 10, 11, 12]]
    two = np.zeros((2, 2), dtype=np.uint8)
    two[0, 1] = 1
    assert split_labels(two, 2) is None  # nothing to cut
    star = np.zeros((5, 5), dtype=np.uint8)
    star[0, 1:] = 1
    split = split_labels(star, 2)  # the hub is the separator
    assert split.separators.tolist() == [0]
    assert sorted(map(len, split.groups)) == [3, 3]


@pytest.mark.parametrize("seed", range(10))
def test_label_split_of_random_trees(seed):
    """Every label in a group; every edge within exactly one group; the
    separators in two groups or more and never next to each other."""
    from structlearn.learners._gdmm_multilabel_separators import split_labels

    rng = np.random.RandomState(seed)
    L = rng.randint(4, 60)
    E = np.zeros((L, L), dtype=np.uint8)
    for v in range(1, L):
        u = rng.randint(0, v) if rng.rand() < 0.7 else rng.randint(max(0, v - 2), v)
        E[u, v] = 1
    split = split_labels(E, rng.randint(2, 5))
    if split is None:
        return
    seps = set(split.separators.tolist())
    held = np.zeros(L, dtype=int)
    for g in split.groups:
        held[g] += 1
    assert np.all(held >= 1)
    assert all(held[s] >= 2 for s in seps) and np.all(held[[v for v in range(L)
                                                            if v not in seps]] == 1)
    for a, b in zip(*np.nonzero(E)):
        assert not (a in seps and b in seps)
        assert sum(a in set(g) and b in set(g) for g in split.groups) == 1


@pytest.mark.parametrize("seed", range(4))
def test_group_states_go_back_as_they_came(seed):
    """Taking every group's part of a state and writing them back gives the
    same arrays and, per sample, the same pairs."""
    from structlearn.learners._gdmm_multilabel_label_groups import (group_problem,
                                                                   put_group_states,
                                                                   release_whole_state,
                                                                   take_group_state)
    from structlearn.learners._gdmm_multilabel_separators import split_labels
    from structlearn.learners.gdmm_multilabel import GDMMMultilabelState
    from structlearn.learners.multilabel import MultilabelProblem

    rng = np.random.RandomState(seed)
    n, d, L = 15, 4, 7
    E = np.zeros((L, L), dtype=np.uint8)
    # three trees, or one path that a separator cuts
    for a, b in ([(0, 3), (3, 5), (1, 2), (4, 6)] if seed < 2 else
                 [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 6)]):
        E[a, b] = 1
    X = sp.random(n, d, density=0.5, format="csr", random_state=rng)
    problem = MultilabelProblem(X.data, X.indices.astype(np.int64), X.indptr.astype(np.int64),
                                (rng.rand(n, L) < 0.4).astype(np.int64), E, d)
    state = GDMMMultilabelState(problem, True)
    state.A[:] = rng.randn(n, L)
    state.tmask[:] = rng.rand(n, L) < 0.5
    state.W[:] = rng.randn(d, L)
    edges = np.array(np.nonzero(E)).T
    pid = edges[:, 0] * (2 * L - edges[:, 0] - 1) // 2 + (edges[:, 1] - edges[:, 0] - 1)
    state.Pw[pid] = rng.randn(pid.size)
    pairs = {}
    for i in range(n):
        chosen = edges[rng.rand(len(edges)) < 0.5]
        pairs[i] = {(int(a), int(b)): (rng.randn(), tuple(rng.rand(3))) for a, b in chosen}
    from structlearn.learners._gdmm_multilabel_label_groups import _packed_pool

    flat = [(i, a, b, v, nu) for i in range(n) for (a, b), (v, nu) in pairs[i].items()]
    state.pool = _packed_pool(n, *(np.array(c) for c in zip(*flat)))
    before = (state.A.copy(), state.tmask.copy(), state.W.copy(), state.Pw.copy())
    groups = split_labels(E, 2).groups
    subs = []
    for g in groups:
        sub = GDMMMultilabelState(group_problem(problem, g), True)
        take_group_state(state, g, sub)
        subs.append(sub)
        np.testing.assert_array_equal(sub.W, state.W[:, g])
    layout = release_whole_state(state)
    assert state.A is None and state.W is None
    state.Pw[:] = 0.0
    put_group_states(state, groups, subs, layout)
    for a, b in zip(before, (state.A, state.tmask, state.W, state.Pw)):
        np.testing.assert_array_equal(a, b)
    pool = state.pool
    for i in range(n):
        got = {(int(pool.left[q]), int(pool.right[q])): (pool.dual[q], tuple(pool.nu[q]))
               for q in range(pool.base[i], pool.base[i] + pool.count[i])}
        assert got == pairs[i]


def test_label_groups_without_edges_give_the_one_process_fit():
    """pairwise='none': every label its own component; the groups' passes
    take the one process's steps, so the model is the same, bit for bit,
    for any n_jobs."""
    X, Y = _multilabel_data(6, n=80, L=7)
    one = _fit_ml(X, Y, pairwise="none", tol=0.0, max_iter=15)
    for n_jobs in (1, 2):
        two = _fit_ml(X, Y, pairwise="none", tol=0.0, max_iter=15, training_partitions=3,
                      n_jobs=n_jobs)
        np.testing.assert_array_equal(one.coef_, two.coef_)
        np.testing.assert_array_equal(one.intercept_, two.intercept_)
        assert two.history_[-1]["partitions"] == 3
        np.testing.assert_allclose([r["primal"] for r in two.history_],
                                   [r["primal"] for r in one.history_], rtol=1e-12)


def test_label_groups_of_a_forest_reach_the_certified_optimum():
    """A forest of three trees: the groups' fit reaches the one-process
    fit's optimum, its weights follow its duals, and a warm start goes on
    from the state written back."""
    X, Y = _multilabel_data(7, n=90, L=8)
    forest = [(0, 1), (1, 2), (3, 4), (4, 5), (6, 7)]
    one = _fit_ml(X, Y, pairwise=forest, tol=1e-3, max_iter=3000)
    two = _fit_ml(X, Y, pairwise=forest, tol=1e-3, max_iter=3000, training_partitions=2,
                  n_jobs=2, warm_start=True, fit_intercept=False)
    assert one.converged_ and two.converged_
    assert two.history_[-1]["partitions"] == 2
    _assert_weights_follow_the_duals(two, X, Y)
    ref = _fit_ml(X, Y, pairwise=forest, tol=1e-3, max_iter=3000, fit_intercept=False)
    p1, p2 = ref.history_[-1]["primal"], two.history_[-1]["primal"]
    assert abs(p1 - p2) <= 2e-3 * max(p1, p2)
    assert two.history_[-1]["dual"] <= p1 + 1e-9 and ref.history_[-1]["dual"] <= p2 + 1e-9
    n_iter = two.n_iter_
    two.set_params(tol=1e-4).fit(X, Y)  # the warm start goes on from the written-back state
    assert two.history_[-1]["relative_gap"] <= 1e-4 or two.n_iter_ > 0
    _assert_weights_follow_the_duals(two, X, Y)
    assert n_iter > 0


def test_label_groups_stop_in_time_and_give_their_state_back():
    X, Y = _multilabel_data(8, n=200, L=6)
    m = _fit_ml(X, Y, pairwise="none", training_partitions=2, n_jobs=2, max_time=1e-4,
                tol=0.0, max_iter=50, warm_start=True, fit_intercept=False)
    assert m.n_iter_ == 1 and np.isfinite(m.history_[-1]["gap"])
    assert m.history_[-1]["partial"]
    _assert_weights_follow_the_duals(m, X, Y)


@pytest.mark.parametrize("shape", ["path", "star", "random"])
def test_label_groups_cut_at_separators_reach_the_certified_optimum(shape):
    """One tree cut at separator labels: the groups' passes and the
    separators' steps reach the one-process optimum, and the written-back
    state's weights follow its duals."""
    from structlearn.learners._gdmm_multilabel_separators import split_labels

    L = 9
    if shape == "path":
        tree = [(k, k + 1) for k in range(L - 1)]
    elif shape == "star":
        tree = [(0, k) for k in range(1, L)]
    else:
        rng = np.random.RandomState(3)
        tree = [(int(rng.randint(0, v)), v) for v in range(1, L)]
    E = np.zeros((L, L), dtype=np.uint8)
    for a, b in tree:
        E[a, b] = 1
    assert split_labels(E, 2).separators.size >= 1
    X, Y = _multilabel_data(9, n=120, L=L)
    one = _fit_ml(X, Y, pairwise=tree, tol=1e-3, max_iter=3000, fit_intercept=False)
    for n_jobs in (1, 2):
        two = _fit_ml(X, Y, pairwise=tree, tol=1e-3, max_iter=3000, training_partitions=2,
                      n_jobs=n_jobs, warm_start=True, fit_intercept=False)
        assert one.converged_ and two.converged_
        assert two.history_[-1]["partitions"] == 2
        _assert_weights_follow_the_duals(two, X, Y)
        p1, p2 = one.history_[-1]["primal"], two.history_[-1]["primal"]
        assert abs(p1 - p2) <= 2e-3 * max(p1, p2)
        assert two.history_[-1]["dual"] <= p1 + 1e-9 and one.history_[-1]["dual"] <= p2 + 1e-9
        if n_jobs == 1:
            first = two.coef_.copy()
        else:
            np.testing.assert_array_equal(first, two.coef_)  # the same for any n_jobs


def test_threads_alone_split_a_tree_of_labels_at_separators(monkeypatch):
    """n_jobs=2 alone on a tree of labels: the label groups' passes of
    ``training_partitions=2``, bit for bit, to the one-thread optimum; below
    ``LABEL_GROUP_MIN_ENTRIES`` unigram factors, or with a callback, the
    one-thread passes, bit for bit."""
    from structlearn.learners import gdmm_multilabel

    L = 9
    tree = _label_path(L)
    X, Y = _multilabel_data(11, n=120, L=L)
    kw = dict(pairwise=tree, tol=1e-3, max_iter=3000, fit_intercept=False)
    one = _fit_ml(X, Y, **kw)
    two = _fit_ml(X, Y, n_jobs=2, **kw)
    grouped = _fit_ml(X, Y, n_jobs=2, training_partitions=2, **kw)
    assert one.converged_ and two.converged_
    np.testing.assert_array_equal(two.coef_, grouped.coef_)
    assert [r["iter"] for r in two.history_] == [r["iter"] for r in grouped.history_]
    assert "partitions" not in two.history_[-1]
    assert not np.array_equal(two.coef_, one.coef_)  # the groups' iterates
    p1, p2 = one.history_[-1]["primal"], two.history_[-1]["primal"]
    assert abs(p1 - p2) <= 2e-3 * max(p1, p2)
    assert two.history_[-1]["dual"] <= p1 + 1e-9 and one.history_[-1]["dual"] <= p2 + 1e-9
    _assert_weights_follow_the_duals(_fit_ml(X, Y, n_jobs=2, warm_start=True, **kw), X, Y)
    # a one-thread state taken over by the groups on a warm start, and given back
    warm = _fit_ml(X, Y, warm_start=True, **dict(kw, max_iter=3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warm.set_params(n_jobs=2, max_iter=3000).fit(X, Y)
    assert warm.converged_ and warm.n_iter_ > 3
    _assert_weights_follow_the_duals(warm, X, Y)

    called = []
    with_callback = _fit_ml(X, Y, n_jobs=2, callback=lambda rec: called.append(rec), **kw)
    np.testing.assert_array_equal(with_callback.coef_, one.coef_)
    assert any(rec.get("partial", False) for rec in called)
    monkeypatch.setattr(gdmm_multilabel, "LABEL_GROUP_MIN_ENTRIES", X.shape[0] * L + 1)
    np.testing.assert_array_equal(_fit_ml(X, Y, n_jobs=2, **kw).coef_, one.coef_)


def test_threads_alone_split_the_labels_without_edges():
    """pairwise='none' with n_jobs=2 and no partitions asked: the labels'
    passes run on the threads, the model and the certified values those of
    one thread; with a callback the one-thread passes run (it sees the
    progress records between blocks)."""
    X, Y = _multilabel_data(10, n=90, L=6)
    one = _fit_ml(X, Y, pairwise="none", tol=0.0, max_iter=12)
    two = _fit_ml(X, Y, pairwise="none", tol=0.0, max_iter=12, n_jobs=2)
    np.testing.assert_array_equal(one.coef_, two.coef_)
    np.testing.assert_array_equal(one.intercept_, two.intercept_)
    np.testing.assert_allclose([r["dual"] for r in two.history_],
                               [r["dual"] for r in one.history_], rtol=1e-12)
    assert "partitions" not in two.history_[-1]
    seen = []
    _fit_ml(X, Y, pairwise="none", tol=0.0, max_iter=2, n_jobs=2,
            callback=lambda rec: seen.append(rec.get("partial", False)))
    assert any(seen)  # records between blocks: the one-thread passes


def _separator_penalty_reference(pool, i, sl, Y, A, C):
    """The penalty part of separator ``sl``'s gradient from sample ``i``'s
    active pairs, read pair by pair from the pool (the consistency terms)."""
    pen = 0.0
    for q in range(pool.base[i], pool.base[i] + pool.count[i]):
        a, b = pool.left[q], pool.right[q]
        if sl not in (a, b):
            continue
        ya, yb = Y[i, a], Y[i, b]
        v, nu = pool.dual[q], pool.nu[q]
        h1 = C * (ya * yb - ya) - v + A[i, a]
        h2 = C * (ya * yb - yb) - v + A[i, b]
        h3 = C * (ya + yb - 1 - ya * yb) - A[i, a] - A[i, b] + v
        p3 = max(0.0, h3 + nu[2])
        pen += (max(0.0, h1 + nu[0]) if a == sl else max(0.0, h2 + nu[1])) - p3
    return pen


@pytest.mark.parametrize("n_jobs, parts", [(1, 2), (2, 2), (2, 3)])
def test_separator_columns_are_what_the_groups_hold(monkeypatch, n_jobs, parts):
    """Before every round's separator steps: the scores are x_i . w of the
    separators' weights at the round's start, the flags and penalties those
    of every group's arrays and pools read directly, the targets the
    separators' columns of Y."""
    from structlearn.learners import _gdmm_multilabel_label_groups as groups

    L = 9
    tree = _label_path(L)
    X, Y = _multilabel_data(12, n=150, L=L)
    seen = []
    run_separators = groups.LabelGroupRounds._separators
    start_round = groups.LabelGroupRounds.round

    def round_(self, *args):
        self.w_start = [st.W.copy() for st in self.states]
        return start_round(self, *args)

    def separators(self, order):
        cols, C = self.columns, self.params[0]
        for r, h in enumerate(self.home):
            w = self.w_start[h][:, self.local[r, h]]
            np.testing.assert_allclose(cols.scores[r], X @ w, rtol=1e-12, atol=1e-12)
            np.testing.assert_array_equal(cols.targets[r], self.problems[h].Y[:, self.local[r, h]])
            holders = np.flatnonzero(self.local[r] >= 0)
            assert cols.flags.shape[1] >= len(holders) >= 2
            for c, k in enumerate(holders):  # the groups holding it, in order
                st, sl = self.states[k], self.local[r, k]
                np.testing.assert_array_equal(cols.flags[r, c], st.tmask[:, sl])
                ref = [_separator_penalty_reference(st.pool, i, sl, self.problems[k].Y, st.A, C)
                       for i in range(X.shape[0])]
                np.testing.assert_allclose(cols.penalties[r, c], ref, rtol=1e-12, atol=1e-12)
            assert not cols.flags[r, len(holders):].any()
            assert not cols.penalties[r, len(holders):].any()
        seen.append(bool(np.abs(cols.penalties).sum() > 0))
        return run_separators(self, order)

    monkeypatch.setattr(groups.LabelGroupRounds, "round", round_)
    monkeypatch.setattr(groups.LabelGroupRounds, "_separators", separators)
    m = _fit_ml(X, Y, pairwise=tree, tol=1e-3, max_iter=40, training_partitions=parts,
                n_jobs=n_jobs, fit_intercept=False)
    assert m.history_[-1]["partitions"] == parts
    assert len(seen) == m.n_iter_ and any(seen)  # pairs at the separators were read


def test_label_groups_without_warm_start_write_back_the_weights_alone(monkeypatch):
    """warm_start=False: the label groups give back their weights only (the
    state is not kept); the model is the one of a fit that keeps it, bit for
    bit."""
    from structlearn.learners import _gdmm_multilabel_label_groups as groups

    closed = []
    close = groups.LabelGroupRounds.close

    def recorded(self):
        closed.append(self.keep_state)
        close(self)

    monkeypatch.setattr(groups.LabelGroupRounds, "close", recorded)
    L = 9
    tree = _label_path(L)
    X, Y = _multilabel_data(13, n=150, L=L)
    kw = dict(pairwise=tree, tol=1e-3, max_iter=3000, n_jobs=2, fit_intercept=False)
    kept = _fit_ml(X, Y, warm_start=True, **kw)
    light = _fit_ml(X, Y, **kw)
    assert closed == [True, False]  # the label groups ran both fits
    assert light._solver_state is None and kept._solver_state is not None
    np.testing.assert_array_equal(light.coef_, kept.coef_)
    np.testing.assert_array_equal(light.pairwise_coef_, kept.pairwise_coef_)
    assert [r["dual"] for r in light.history_] == [r["dual"] for r in kept.history_]
    _assert_weights_follow_the_duals(kept, X, Y)
