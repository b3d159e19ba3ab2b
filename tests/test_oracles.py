"""Factorwise maximization oracles against dense brute force."""

import numpy as np
import pytest

from structlearn.graphs import FactorGraph
from structlearn.oracles import (
    build_sorted_orders,
    make_pair_workspace,
    pair_argmax,
    sorted_orders_for_graph,
)
from structlearn.oracles._pair_kernels import dense_pair_argmax, static_pair_argmax, table_orders

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
