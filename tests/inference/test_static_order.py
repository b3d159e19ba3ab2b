"""The maximum-cardinality order of the searches, against the quadratic scan."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from structlearn.inference.exact._dfbb_kernels import static_order


def quadratic_order(nbr_ptr, nbr_var):
    """Each step scans every variable: most placed neighbours, then most
    neighbours, then the lowest index."""
    n = nbr_ptr.shape[0] - 1
    placed, links, order = np.zeros(n, bool), np.zeros(n, int), []
    degree = np.diff(nbr_ptr)
    for _ in range(n):
        best = min((v for v in range(n) if not placed[v]),
                   key=lambda v: (-links[v], -degree[v], v))
        order.append(best)
        placed[best] = True
        for u in nbr_var[nbr_ptr[best]:nbr_ptr[best + 1]]:
            links[u] += 1
    return np.array(order, dtype=np.int64)


def adjacency(n, edges):
    """CSR of both directions of ``edges`` (repeated edges kept)."""
    src = np.concatenate([edges[:, 0], edges[:, 1]]).astype(np.int64)
    dst = np.concatenate([edges[:, 1], edges[:, 0]]).astype(np.int64)
    order = np.argsort(src, kind="stable")
    ptr = np.searchsorted(src[order], np.arange(n + 1)).astype(np.int64)
    return ptr, dst[order]


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(0, 40), st.sampled_from([0.0, 0.05, 0.2, 0.6]),
       st.booleans())
def test_the_heap_order_is_the_quadratic_scans(seed, n, p_edge, repeats):
    rng = np.random.default_rng(seed)
    pairs = [(a, b) for a in range(n) for b in range(a + 1, n) if rng.random() < p_edge]
    if repeats and pairs:  # parallel edges count twice, as in the scan
        pairs += [pairs[i] for i in rng.integers(len(pairs), size=len(pairs) // 2 + 1)]
    edges = np.array(pairs, dtype=np.int64).reshape(-1, 2)
    ptr, nbr = adjacency(n, edges)
    order = static_order(ptr, nbr)
    np.testing.assert_array_equal(order, quadratic_order(ptr, nbr))
    assert sorted(order.tolist()) == list(range(n))


def test_a_grid_starts_at_a_most_connected_variable_and_follows_its_neighbours():
    side = 5
    idx = np.arange(side * side).reshape(side, side)
    edges = np.concatenate([np.stack([idx[:, :-1].ravel(), idx[:, 1:].ravel()], 1),
                            np.stack([idx[:-1].ravel(), idx[1:].ravel()], 1)])
    ptr, nbr = adjacency(side * side, edges)
    order = static_order(ptr, nbr)
    assert order[0] == idx[1, 1]  # the first of degree 4
    assert np.diff(ptr)[order[0]] == 4
    assert order[1] in nbr[ptr[order[0]]:ptr[order[0] + 1]]
