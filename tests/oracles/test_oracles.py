"""Factorwise maximization oracles against dense brute force."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from structlearn.graphs import FactorGraph
from structlearn.oracles import (
    build_sorted_orders,
    make_pair_workspace,
    pair_argmax,
    sorted_orders_for_graph,
)
from structlearn.oracles import unary_orders
from structlearn.oracles._pair_kernels import (
    dense_pair_argmax,
    static_pair_argmax,
    static_pair_argmax_excluding,
    static_vector_argmax,
    table_orders,
)

SIZES = [1, 2, 3, 17, 100]


def random_table(rng, n1, n2, ties, neg_inf):
    if ties:
        tab = rng.integers(-3, 4, size=(n1, n2)).astype(np.float64)
    else:
        tab = rng.normal(size=(n1, n2))
    if neg_inf:
        tab[rng.random((n1, n2)) < 0.3] = -np.inf
    return tab


def random_message(rng, n, kind, ties):
    nnz = {"none": 0, "one": min(1, n), "several": min(n, int(rng.integers(2, 6))), "all": n}[kind]
    idx = rng.choice(n, nnz, replace=False).astype(np.int64)
    if ties:
        val = rng.integers(-3, 4, size=nnz).astype(np.float64)
    else:
        val = rng.normal(size=nnz)
    return idx, val


def dense_message(n, idx, val):
    m = np.zeros(n)
    m[idx] = val
    return m


def check_result(tab, m1, m2, ex, got):
    best, a, b = got[:3]
    ref = dense_pair_argmax(tab.ravel(), tab.shape[0], tab.shape[1], m1, m2, ex[0], ex[1])
    assert best == ref[0]
    if a < 0:
        assert best == -np.inf
    else:
        assert (a, b) != tuple(ex)
        assert tab[a, b] + m1[a] + m2[b] == best


@pytest.mark.parametrize("n1", SIZES)
@pytest.mark.parametrize("kind", ["none", "one", "several", "all"])
def test_static_pair_argmax_matches_dense(n1, kind):
    rng = np.random.default_rng(n1 * 7 + len(kind))
    for trial in range(40):
        n2 = int(rng.choice(SIZES))
        ties = trial % 2 == 0
        tab = random_table(rng, n1, n2, ties, neg_inf=trial % 3 == 0)
        kind2 = ["none", "one", "several", "all"][trial % 4]
        i1, v1 = random_message(rng, n1, kind, ties)
        i2, v2 = random_message(rng, n2, kind2, ties)
        if trial % 4 == 1:
            ex = (int(rng.integers(n1)), int(rng.integers(n2)))
        elif trial % 4 == 2:  # exclude the dense maximizer itself
            m1, m2 = dense_message(n1, i1, v1), dense_message(n2, i2, v2)
            _, a, b = dense_pair_argmax(tab.ravel(), n1, n2, m1, m2, -1, -1)
            ex = (a, b)
        else:
            ex = (-1, -1)
        got = pair_argmax(tab, i1, v1, i2, v2, exclude=None if ex == (-1, -1) else ex)
        check_result(tab, dense_message(n1, i1, v1), dense_message(n2, i2, v2), ex, got)


@pytest.mark.parametrize("n1", SIZES)
def test_static_pair_argmax_excluding_a_set(n1):
    rng = np.random.default_rng(50 + n1)
    for trial in range(30):
        n2 = int(rng.choice(SIZES))
        ties = trial % 2 == 0
        tab = random_table(rng, n1, n2, ties, neg_inf=trial % 3 == 0)
        offs, data, _ = build_sorted_orders([tab])
        orders = table_orders(data, offs, 0, n1, n2)
        i1, v1 = random_message(rng, n1, ["none", "one", "several", "all"][trial % 4], ties)
        i2, v2 = random_message(rng, n2, ["none", "one", "several", "all"][trial // 4 % 4], ties)
        m1, m2 = dense_message(n1, i1, v1), dense_message(n2, i2, v2)
        # exclude the dense top entries (the hardest case for the walks) plus random ones
        scores = tab + m1[:, None] + m2[None, :]
        n_ex = min(n1 * n2, int(rng.integers(0, 6)))
        top = np.argsort(-scores, axis=None, kind="stable")[: n_ex // 2]
        rand = rng.choice(n1 * n2, n_ex - n_ex // 2, replace=False)
        flat = np.unique(np.concatenate([top, rand]))
        ea, eb = (flat // n2).astype(np.int64), (flat % n2).astype(np.int64)
        ws = make_pair_workspace(n1, n2)
        best, a, b, nv = static_pair_argmax_excluding(tab.ravel(), n1, n2, *orders, i1, v1,
                                                      len(i1), i2, v2, len(i2), ea, eb,
                                                      len(ea), ws)
        masked = scores.copy()
        masked[ea, eb] = -np.inf
        assert best == masked.max()
        if a >= 0:
            assert scores[a, b] == best and a * n2 + b not in set(flat.tolist())
        else:
            assert best == -np.inf


@pytest.mark.parametrize("K", SIZES)
def test_static_vector_argmax_matches_dense(K):
    rng = np.random.default_rng(70 + K)
    g = FactorGraph([K, K, 2], unary=[random_table(rng, 1, K, True, True).ravel(),
                                      rng.normal(size=K), np.array([0.0, 1.0])])
    orders = unary_orders(g)
    pos = np.full(K, -1, dtype=np.int64)
    for trial in range(40):
        i = trial % 2
        vals = g.unary_of(i)
        order = orders[g.unary_offsets[i] : g.unary_offsets[i + 1]]
        assert np.all(vals[order][:-1] >= vals[order][1:])
        idx, val = random_message(rng, K, ["none", "one", "several", "all"][trial % 4], i == 0)
        excl = rng.choice(K, min(K, int(rng.integers(0, 4))), replace=False).astype(np.int64)
        best, y, nv = static_vector_argmax(vals, order, idx, val, len(idx), excl, len(excl), pos)
        dense = vals + dense_message(K, idx, val)
        dense[excl] = -np.inf
        assert best == dense.max()
        if y >= 0:
            assert y not in excl and vals[y] + dense_message(K, idx, val)[y] == best
        assert np.all(pos == -1)


def test_static_case_i_visits_one_entry_without_messages():
    rng = np.random.default_rng(0)
    tab = rng.normal(size=(50, 40))
    best, a, b, nv = pair_argmax(tab)
    assert (a, b) == np.unravel_index(np.argmax(tab), tab.shape)
    assert nv == 1


def test_single_entry_excluded_returns_minus_one():
    assert pair_argmax(np.array([[2.0]]), exclude=(0, 0))[:3] == (-np.inf, -1, -1)
    assert pair_argmax(np.full((3, 2), -np.inf))[:3] == (-np.inf, -1, -1)


def test_orders_layout_and_pool_sharing():
    rng = np.random.default_rng(1)
    t0 = rng.integers(0, 5, size=(3, 4)).astype(float)
    t1 = rng.normal(size=(2, 2))
    offs, data, shapes = build_sorted_orders([t0, t1])
    assert data.dtype == np.int32 and offs.tolist() == [0, 36, 48]
    o_all, o_rows, o_cols = table_orders(data, offs, 0, 3, 4)
    flat = t0.ravel()
    assert np.all(np.diff(flat[o_all]) <= 0)
    for a in range(3):
        assert np.all(np.diff(t0[a, o_rows[a * 4 : a * 4 + 4]]) <= 0)
    for b in range(4):
        assert np.all(np.diff(t0[o_cols[b * 3 : b * 3 + 3], b]) <= 0)
    # a graph whose factors share one table gets one block of orders for it
    g = FactorGraph([3, 4, 3], scopes=[[0, 1], [2, 1]], tables=[t0], table_ids=[0, 0])
    goffs, gdata, gshapes = sorted_orders_for_graph(g)
    assert gshapes.tolist() == [[3, 4]]
    np.testing.assert_array_equal(gdata, data[:36])


@pytest.mark.parametrize("seed", range(4))
def test_orders_are_stable_argsorts(seed):
    # ties (-0.0 == 0.0, repeated values, -inf) keep index order, exactly as
    # numpy's stable argsort of the negated table, its rows and its columns
    rng = np.random.default_rng(seed)
    n1, n2 = (int(v) for v in rng.integers(1, 30, size=2))
    vals = np.array([-np.inf, -0.0, 0.0, 1.5, -2.0, 1e-300, -1e300, 5e-324])
    tab = rng.choice(vals, size=(n1, n2)) if seed % 2 else rng.normal(size=(n1, n2))
    offs, data, _ = build_sorted_orders([tab])
    o_all, o_rows, o_cols = table_orders(data, offs, 0, n1, n2)
    np.testing.assert_array_equal(o_all, np.argsort(-tab.ravel(), kind="stable"))
    np.testing.assert_array_equal(o_rows, np.argsort(-tab, axis=1, kind="stable").ravel())
    np.testing.assert_array_equal(o_cols, np.argsort(-tab.T, axis=1, kind="stable").ravel())


def test_kernel_reuses_workspace_and_buffers():
    rng = np.random.default_rng(2)
    tab = rng.normal(size=(17, 17))
    offs, data, _ = build_sorted_orders([tab])
    orders = table_orders(data, offs, 0, 17, 17)
    ws = make_pair_workspace(20, 20)
    idx_buf = np.zeros(8, dtype=np.int64)
    val_buf = np.zeros(8)
    for _ in range(20):
        nnz = int(rng.integers(0, 8))
        idx_buf[:nnz] = rng.choice(17, nnz, replace=False)
        val_buf[:nnz] = rng.normal(size=nnz)
        idx_buf[nnz:] = 99  # garbage past nnz must be ignored
        got = static_pair_argmax(tab.ravel(), 17, 17, *orders, idx_buf, val_buf, nnz,
                                 idx_buf, val_buf, nnz, -1, -1, ws)
        m = dense_message(17, idx_buf[:nnz], val_buf[:nnz])
        check_result(tab, m, m, (-1, -1), got)
        assert np.all(ws[0] == -1) and np.all(ws[1] == -1)
        assert ws[2].sum() == got[3]


def test_pair_argmax_validation():
    tab = np.zeros((3, 3))
    with pytest.raises(ValueError, match="message 1"):
        pair_argmax(tab, [5], [1.0])
    with pytest.raises(ValueError, match="distinct"):
        pair_argmax(tab, [1, 1], [1.0, 2.0])
    with pytest.raises(ValueError, match="2-D"):
        pair_argmax(np.zeros(3))
    with pytest.raises(ValueError, match="NaN"):
        build_sorted_orders([np.array([[np.nan]])])


# ----------------------------------------------------------- indicator oracle
from structlearn.oracles.indicator import (  # noqa: E402
    dense_indicator_argmax,
    indicator_add_many,
    indicator_argmax,
    indicator_fmo,
    indicator_update,
    make_indicator_oracle,
)
from structlearn.oracles.multimap import mm_check  # noqa: E402


def check_indicator(state, i1, v1, i2, v2, loss, ex, ws, floor=-np.inf):
    n1, n2 = int(state[1][0]), int(state[1][1])
    m1, m2 = dense_message(n1, i1, v1), dense_message(n2, i2, v2)
    got = indicator_argmax(state, i1, v1, i2, v2, loss=loss, exclude=ex, floor=floor,
                           workspace=ws)
    ref = dense_indicator_argmax(state[0], n1, n2, m1, m2, *loss, *ex)
    if not ref[0] > floor:
        assert got[:3] == (floor, -1, -1)
        assert np.all(ws[0] == -1) and np.all(ws[1] == -1)
        return got
    assert got[0] == ref[0]
    a, b = got[1], got[2]
    if a < 0:
        assert got[0] == -np.inf
    else:
        assert (a, b) != tuple(ex)
        l1, g1, l2, g2 = loss
        val = ((state[0][a * n2 + b] + m1[a]) + m2[b]) + (l1 if g1 >= 0 and a != g1 else 0.0) \
            + (l2 if g2 >= 0 and b != g2 else 0.0)
        assert val == got[0]
    assert np.all(ws[0] == -1) and np.all(ws[1] == -1)
    return got


def heaps_consistent(state):
    """Row heap, transposed copy and line summaries agree with the table."""
    from structlearn.oracles._indicator_kernels import H

    n1, n2 = int(state[1][0]), int(state[1][1])
    tab = state[0].reshape(n1, n2)
    t = (np.array([0, n1]), np.array([n1]), state[2], state[3], state[4])
    ok = mm_check(t, 0)
    ok &= np.array_equal(state[2][state[4]], tab.max(axis=1))
    ok &= np.array_equal(state[5].reshape(n2, n1), tab.T)
    for lines, keys, items, cap in ((tab, state[6], state[7], state[8]),
                                    (tab.T, state[9], state[10], state[11])):
        for r, line in enumerate(lines):
            h = int(np.sum(items[r * H:(r + 1) * H] >= 0))  # 1 to H summarized entries
            ok &= 1 <= h <= min(H, line.size)
            top = np.sort(line)[::-1]
            ok &= np.array_equal(keys[r * H:r * H + h], top[:h])
            idx = items[r * H:r * H + h]
            ok &= np.array_equal(line[idx], top[:h]) and len(set(idx)) == h
            ok &= np.all(items[r * H + h:(r + 1) * H] == -1)
            rest = np.delete(line, idx)
            ok &= rest.size == 0 or (cap[r] >= rest.max() and cap[r] <= top[h - 1])
    return bool(ok)


@pytest.mark.parametrize("n1", SIZES)
def test_indicator_fmo_matches_dense_before_and_after_updates(n1):
    rng = np.random.default_rng(100 + n1)
    kinds = ["none", "one", "several", "all"]
    for trial in range(12):
        n2 = int(rng.choice(SIZES))
        ties = trial % 2 == 0
        state = make_indicator_oracle(random_table(rng, n1, n2, ties, neg_inf=trial % 3 == 0))
        ws = make_pair_workspace(n1 + 3, n2)
        for rnd in range(4):
            for q in range(8):
                i1, v1 = random_message(rng, n1, kinds[(q + rnd) % 4], ties)
                i2, v2 = random_message(rng, n2, kinds[(q // 2 + trial) % 4], ties)
                g1, g2 = int(rng.integers(n1)), int(rng.integers(n2))
                if q % 3 == 0:
                    loss = (1.0, g1, 1.0, g2)
                elif q % 3 == 1:
                    loss = (0.5, g1, 0.0, -1)
                else:
                    loss = (0.0, -1, 0.0, -1)
                ex = (g1, g2) if q % 2 == 0 else (-1, -1)
                got = check_indicator(state, i1, v1, i2, v2, loss, ex, ws)
                if np.isfinite(got[0]):  # floors just below, at and above the maximum
                    for floor in (np.nextafter(got[0], -np.inf), got[0], got[0] + 1.0):
                        check_indicator(state, i1, v1, i2, v2, loss, ex, ws, floor)
            # random table updates: single entries, and a batch with repeats
            for _ in range(int(rng.integers(1, 30))):
                a, b = int(rng.integers(n1)), int(rng.integers(n2))
                new = float(rng.integers(-3, 4)) if ties else float(rng.normal())
                if rng.random() < 0.1:
                    new = -np.inf
                indicator_update(state, a, b, new)
            m = int(rng.integers(1, 20))
            rows = rng.integers(0, n1, m)
            cols = rng.integers(0, n2, m)
            deltas = rng.integers(-2, 3, m).astype(float) if ties else rng.normal(size=m)
            expected = state[0].copy().reshape(n1, n2)
            np.add.at(expected, (rows, cols), deltas)
            indicator_add_many(state, rows, cols, deltas, m)
            np.testing.assert_allclose(state[0].reshape(n1, n2), expected)
            assert heaps_consistent(state)


def test_indicator_sparse_table_with_many_listed_labels():
    """The regime of a GDMM transition table: mostly untouched (0) entries, a few
    positive ones, small negative ones, and messages on a large share of the labels."""
    rng = np.random.default_rng(11)
    K = 60
    ws = make_pair_workspace(K, K)
    for trial in range(10):
        tab = np.zeros((K, K))
        touched = rng.random((K, K)) < 0.15
        tab[touched] = -np.abs(rng.normal(scale=0.01, size=touched.sum()))
        hot = rng.random((K, K)) < 0.02
        tab[hot] = np.abs(rng.normal(scale=0.05, size=hot.sum()))
        tab -= 1e-12 * (np.arange(K * K).reshape(K, K) + 1.0) / (K * K)  # distinct values
        state = make_indicator_oracle(tab)
        for q in range(20):
            n1, n2 = int(rng.integers(K // 4, K)), int(rng.integers(K // 4, K))
            i1 = rng.choice(K, n1, replace=False).astype(np.int64)
            i2 = rng.choice(K, n2, replace=False).astype(np.int64)
            v1 = rng.normal(scale=0.02, size=n1) - 0.01
            v2 = rng.normal(scale=0.02, size=n2) - 0.01
            g1, g2 = int(rng.integers(K)), int(rng.integers(K))
            loss = (0.0, -1, 0.0, -1) if q % 2 else (0.3, g1, 0.0, -1)
            got = check_indicator(state, i1, v1, i2, v2, loss, (g1, g2), ws)
            for floor in (got[0] - 0.01, np.nextafter(got[0], -np.inf), got[0]):
                check_indicator(state, i1, v1, i2, v2, loss, (g1, g2), ws, floor)
            a, b = int(rng.integers(K)), int(rng.integers(K))
            indicator_update(state, a, b, state[0][a * K + b] + rng.normal(scale=0.02))
        assert heaps_consistent(state)


def test_indicator_case_i_visits_few_entries():
    rng = np.random.default_rng(5)
    K = 200
    state = make_indicator_oracle(rng.normal(size=(K, K)))
    ws = make_pair_workspace(K, K)
    visits = []
    for _ in range(50):
        i1, v1 = random_message(rng, K, "several", False)
        i2, v2 = random_message(rng, K, "several", False)
        check_indicator(state, i1, v1, i2, v2, (1.0, int(i1[0]), 1.0, 3), (int(i1[0]), 3), ws)
        visits.append(ws[2][0])
        assert ws[2][3] <= (len(i1) + 1) * (len(i2) + 1)
    assert np.mean(visits) <= 10


def test_indicator_edge_cases():
    state = make_indicator_oracle([[4.0]])
    assert indicator_argmax(state, exclude=(0, 0))[:3] == (-np.inf, -1, -1)
    assert indicator_argmax(state, [0], [1.0], loss=(1.0, 0, 0.0, -1))[:3] == (5.0, 0, 0)
    state = make_indicator_oracle(np.full((3, 4), -np.inf))
    assert indicator_argmax(state, [1], [2.0])[:3] == (-np.inf, -1, -1)
    indicator_update(state, 2, 3, 1.0)
    assert indicator_argmax(state, [1], [2.0])[:3] == (1.0, 2, 3)
    with pytest.raises(ValueError, match="2-D"):
        make_indicator_oracle(np.zeros(3))
    with pytest.raises(ValueError, match="NaN"):
        make_indicator_oracle([[np.nan]])
    with pytest.raises(ValueError, match="ground truth"):
        indicator_argmax(make_indicator_oracle(np.zeros((2, 2))), loss=(1.0, 5, 0.0, -1))


@settings(max_examples=300, deadline=None)
@given(n1=st.integers(0, 40), n2=st.integers(0, 40), seed=st.integers(0, 2**32 - 1),
       ties=st.booleans(), ex1=st.integers(-1, 40), ex2=st.integers(-1, 40))
def test_dense_pair_argmax_equals_the_plain_scan(n1, n2, seed, ties, ex1, ex2):
    """Row maxima first (vectorized) against the entry-by-entry scan: same
    pair, same value, also with ties, -inf entries and the excluded pair."""
    rng = np.random.default_rng(seed)

    def draw(size):
        x = rng.normal(size=size)
        if ties:  # few distinct values: many equal sums
            x = np.round(x, 0)
        x[rng.random(size) < 0.1] = -np.inf
        return x

    v, m1, m2 = draw(n1 * n2), draw(n1), draw(n2)
    if ties and n2 and rng.random() < 0.5:
        m1[:] = 0.0  # whole rows equal to one another
    got = dense_pair_argmax(v, n1, n2, m1, m2, ex1, ex2)
    ref = dense_indicator_argmax(v, n1, n2, m1, m2, 0.0, -1, 0.0, -1, ex1, ex2)
    assert got == ref


def test_indicator_fmo_callable_from_numba():
    import numba as nb

    @nb.njit
    def many_calls(state, idx, val, ws, out):
        for r in range(out.shape[0]):
            best, a, b, nv = indicator_fmo(state, idx, val, r % 3, idx, val, 2,
                                           0.0, -1, 0.0, -1, -1, -1, ws)
            out[r] = best
            indicator_update(state, a, b, state[0][a * state[1][1] + b] - 1.0)

    rng = np.random.default_rng(3)
    state = make_indicator_oracle(rng.normal(size=(9, 9)))
    ref = state[0].reshape(9, 9).copy()
    idx = np.array([1, 4, 7])
    val = np.array([0.5, -0.2, 0.1])
    out = np.empty(10)
    many_calls(state, idx, val, make_pair_workspace(9), out)
    for r in range(10):
        m1 = dense_message(9, idx[: r % 3], val[: r % 3])
        m2 = dense_message(9, idx[:2], val[:2])
        best, a, b = dense_pair_argmax(ref.ravel(), 9, 9, m1, m2, -1, -1)
        assert out[r] == best
        ref[a, b] -= 1.0


# ------------------------------------------------------ binary joint oracle
from structlearn.oracles.binary import (  # noqa: E402
    binary_add,
    binary_pair_argmax,
    binary_update,
    dense_binary_pair_argmax,
    make_binary_oracle,
    make_binary_workspace,
    masked_argmax,
    pair_id,
)


@pytest.mark.parametrize("partner_heaps", [True, False])
@pytest.mark.parametrize("L", [2, 3, 17, 100])
def test_binary_pair_fmo_matches_dense(L, partner_heaps):
    rng = np.random.default_rng(200 + L)
    P = L * (L - 1) // 2
    kinds = ["none", "one", "several", "all"]
    for trial in range(6):
        ties = trial % 2 == 0
        s = random_table(rng, 1, P, ties, neg_inf=trial % 3 == 0).ravel()
        state = make_binary_oracle(s, partner_heaps=partner_heaps)
        assert (state[7].shape[0] > 0) == partner_heaps
        ws = make_binary_workspace(L)
        for rnd in range(3):
            for q in range(8):
                idx, val = random_message(rng, L, kinds[q % 4], ties)
                n_ex = int(rng.integers(0, 4))
                ex = np.array([rng.choice(L, 2, replace=False) for _ in range(n_ex)], dtype=np.int64).reshape(-1, 2)
                if q % 2 and len(idx) >= 2:  # exclude an active-active pair too
                    ex = np.vstack([ex, idx[:2][None, :]])
                got = binary_pair_argmax(state, idx, val, ex, workspace=ws)
                c = dense_message(L, idx, val)
                excluded = np.zeros(P, dtype=np.uint8)
                for a, b in ex:
                    excluded[pair_id(a, b, L)] = 1
                ref = dense_binary_pair_argmax(state[0], L, c, excluded)
                assert got[0] == ref[0]
                i, j = got[1], got[2]
                if i < 0:
                    assert got[0] == -np.inf
                else:
                    p = pair_id(i, j, L)
                    assert i < j and excluded[p] == 0
                    assert (state[0][p] + c[i]) + c[j] == got[0]
                assert np.all(ws[0] == -1) and not ws[1].any()
            for _ in range(int(rng.integers(1, 20))):
                a, b = rng.choice(L, 2, replace=False)
                if rng.random() < 0.5:
                    binary_update(state, a, b, float(rng.integers(-3, 4)))
                else:
                    binary_add(state, a, b, 1.0)
        full = np.zeros((L, L))
        full[np.triu_indices(L, 1)] = state[0]
        fresh = make_binary_oracle(full)
        np.testing.assert_array_equal(fresh[0], state[0])


def test_binary_oracle_few_visits_with_few_active_labels():
    rng = np.random.default_rng(9)
    L = 300
    state = make_binary_oracle(rng.normal(size=L * (L - 1) // 2))
    ws = make_binary_workspace(L)
    visits = []
    for _ in range(30):
        idx, val = random_message(rng, L, "several", False)
        got = binary_pair_argmax(state, idx, val, workspace=ws)
        visits.append(got[3])
    assert np.mean(visits) < 60  # a dense scan reads 44,850 pairs


def test_masked_argmax_and_validation():
    vals = np.array([1.0, 5.0, 3.0, 5.0])
    mark = np.full(4, -1, dtype=np.int64)
    assert masked_argmax(vals, np.array([1]), 1, mark) == (5.0, 3)
    assert masked_argmax(vals, np.array([1, 3]), 2, mark) == (3.0, 2)
    assert np.all(mark == -1)
    with pytest.raises(ValueError, match="upper triangle"):
        make_binary_oracle(np.zeros(4))
    with pytest.raises(ValueError, match="square"):
        make_binary_oracle(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="distinct"):
        binary_pair_argmax(make_binary_oracle(np.zeros(3)), exclude=[[1, 1]])


# ------------------------------------------------------ inner-product oracle
import scipy.sparse as sp  # noqa: E402

from structlearn.oracles.inner_product import (  # noqa: E402
    inner_product_argmax,
    inner_product_fmo,
    inner_product_fmo_sampled,
    make_inner_workspace,
)


def dense_inner_reference(W, xd, c, loss, gt, ex):
    vals = []
    for y in range(W.shape[1]):
        s = 0.0
        for f in np.nonzero(xd)[0]:
            s += xd[f] * W[f, y]
        v = s + c[y] + (loss if gt >= 0 and y != gt else 0.0)
        vals.append(-np.inf if y == ex else v)
    return max(vals), np.array(vals)


@pytest.mark.parametrize("K", SIZES)
def test_inner_product_fmo_exact_matches_dense(K):
    rng = np.random.default_rng(300 + K)
    d = 30
    for trial in range(10):
        ties = trial % 2 == 0
        W = rng.integers(-2, 3, size=(d, K)).astype(float) if ties else rng.normal(size=(d, K))
        x = sp.random(1, d, density=[0.0, 0.1, 0.5][trial % 3], random_state=trial, format="csr")
        if ties:
            x.data[:] = np.round(x.data * 4)
        idx, val = random_message(rng, K, ["none", "one", "several", "all"][trial % 4], ties)
        gt = int(rng.integers(K)) if trial % 3 else -1
        ex = gt if trial % 2 else -1
        loss = 1.0 if gt >= 0 else 0.0
        best, y = inner_product_argmax(W, x, add=(idx, val), loss=loss, gt=gt, exclude=ex)
        ref, vals = dense_inner_reference(W, x.toarray().ravel(), dense_message(K, idx, val),
                                          loss, gt, ex)
        assert best == ref
        if y < 0:
            assert best == -np.inf and K == 1 and ex == 0
        else:
            assert y != ex and vals[y] == best
            assert y == np.flatnonzero(vals == best)[0]  # the first maximum, as a dense scan
        # nu = 1 with a random permutation is exact as well
        best1, y1 = inner_product_argmax(W, x, add=(idx, val), loss=loss, gt=gt, exclude=ex,
                                         nu=1, random_state=trial, perm=rng.permutation(K))
        assert best1 == ref


def test_inner_product_kernels_on_csr_rows():
    rng = np.random.default_rng(4)
    X = sp.random(20, 50, density=0.2, random_state=0, format="csr")
    W = rng.normal(size=(50, 17))
    ws = make_inner_workspace(17)
    none_i, none_v = np.zeros(0, dtype=np.int64), np.zeros(0)
    for i in range(20):
        best, y = inner_product_fmo(W, X.indices, X.data, X.indptr[i], X.indptr[i + 1],
                                    none_i, none_v, 0, 0.0, -1, -1, ws)
        scores = X[i].toarray().ravel() @ W
        np.testing.assert_allclose(ws[0], scores, atol=1e-12)
        assert y == np.argmax(ws[0]) and best == ws[0][y]
        # listed labels, ground truth and exclusion: raw scores left in ws[0]
        lab = rng.choice(17, 4, replace=False)
        add = rng.normal(size=4)
        best2, y2 = inner_product_fmo(W, X.indices, X.data, X.indptr[i], X.indptr[i + 1],
                                      lab, add, 4, 1.0, int(lab[0]), int(lab[1]), ws)
        np.testing.assert_allclose(ws[0], scores, atol=1e-12)
        vals = ws[0] + 1.0
        vals[lab] = ws[0][lab] + add + 1.0
        vals[lab[0]] -= 1.0
        vals[lab[1]] = -np.inf
        assert best2 == vals.max() and y2 == np.argmax(vals)
        # the parts of a partition (contiguous blocks or a permutation's
        # blocks) are disjoint and together reproduce the exact answer
        for perm in (np.zeros(0, dtype=np.int64), rng.permutation(17)):
            parts = [inner_product_fmo_sampled(W, X.indices, X.data, X.indptr[i],
                                               X.indptr[i + 1], perm, 4, k, none_i, none_v, 0,
                                               0.0, -1, -1, ws)
                     for k in range(4)]
            assert max(p[0] for p in parts) == best
            labels = perm if perm.size else np.arange(17)
            for k, (b, y) in enumerate(parts):
                assert y in labels[k * 17 // 4 : (k + 1) * 17 // 4]
                assert np.isclose(b, scores[y])
        assert not ws[1].any()


@pytest.mark.parametrize("nu", [2, 5])
def test_inner_product_sampling_hits_argmax_with_frequency_one_over_nu(nu):
    rng = np.random.default_rng(11)
    K, d, trials = 40, 10, 1500
    W = rng.normal(size=(d, K))
    x = rng.normal(size=d)
    true_best, _ = inner_product_argmax(W, x)
    seeds = np.random.RandomState(123)
    hits = 0
    for t in range(trials):
        best, _ = inner_product_argmax(W, x, nu=nu, random_state=seeds.randint(2**31))
        assert best <= true_best
        hits += best == true_best
    p = 1.0 / nu
    assert hits / trials >= p - 4 * np.sqrt(p * (1 - p) / trials)
    assert hits < trials  # sampling really is approximate for nu > 1
    # same random_state, same answer
    assert inner_product_argmax(W, x, nu=nu, random_state=7) == inner_product_argmax(
        W, x, nu=nu, random_state=7)


def test_inner_product_validation():
    W = np.zeros((3, 4))
    with pytest.raises(ValueError, match="features"):
        inner_product_argmax(W, np.zeros(5))
    with pytest.raises(ValueError, match="nu"):
        inner_product_argmax(W, np.zeros(3), nu=9)
    with pytest.raises(ValueError, match="permutation"):
        inner_product_argmax(W, np.zeros(3), nu=2, perm=[0, 0, 1, 2])
