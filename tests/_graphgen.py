"""Random small factor graphs and brute-force references for the tests."""

import itertools

import numpy as np

from structlearn.graphs import FactorGraph


def random_scores(rng, size, *, integer, scale, p_inf):
    """Scores with ties (small integers) or continuous values, some -inf."""
    if integer:
        x = rng.integers(-2, 3, size=size).astype(np.float64)
    else:
        x = rng.normal(size=size)
    x = x * scale
    x[rng.random(size) < p_inf] = -np.inf
    return x


def _make(rng, n_states, scopes, *, integer, scale, p_inf, share=False):
    n_states = np.asarray(n_states, dtype=np.int64)
    unary = [random_scores(rng, k, integer=integer, scale=scale, p_inf=p_inf) for k in n_states]
    sizes = [int(np.prod(n_states[list(s)])) for s in scopes]
    if share and scopes and len(set(sizes)) == 1 and len(set(n_states.tolist())) == 1:
        tables = [random_scores(rng, sizes[0], integer=integer, scale=scale, p_inf=p_inf)]
        table_ids = np.zeros(len(scopes), dtype=np.int64)
    else:
        tables = [random_scores(rng, s, integer=integer, scale=scale, p_inf=p_inf) for s in sizes]
        table_ids = None
    return FactorGraph(
        n_states, unary=unary, scopes=[list(s) for s in scopes], tables=tables, table_ids=table_ids
    )


def random_chain(rng, n_vars, max_k, *, integer=True, scale=1.0, p_inf=0.1, n_paths=1):
    """Disjoint union of ``n_paths`` simple paths over a random variable order."""
    perm = rng.permutation(n_vars)
    cuts = set(rng.choice(np.arange(1, n_vars), size=min(n_paths - 1, n_vars - 1), replace=False).tolist()) if n_vars > 1 else set()
    scopes = []
    for k in range(1, n_vars):
        if k in cuts:
            continue
        a, b = int(perm[k - 1]), int(perm[k])
        scopes.append((a, b) if rng.random() < 0.5 else (b, a))
    rng.shuffle(scopes)
    uniform = rng.random() < 0.5
    n_states = np.full(n_vars, max_k) if uniform else rng.integers(1, max_k + 1, size=n_vars)
    return _make(
        rng, n_states, scopes, integer=integer, scale=scale, p_inf=p_inf, share=rng.random() < 0.5
    )


def random_forest(rng, n_vars, max_k, *, integer=True, scale=1.0, p_inf=0.1, max_order=3,
                  p_new_tree=0.15):
    """Random factor forest: each factor joins one placed variable to 1..max_order-1 new ones."""
    perm = rng.permutation(n_vars)
    placed = [int(perm[0])]
    scopes = []
    k = 1
    while k < n_vars:
        if rng.random() < p_new_tree:
            placed.append(int(perm[k]))
            k += 1
            continue
        n_new = int(rng.integers(1, max_order))
        new = [int(v) for v in perm[k : k + n_new]]
        k += len(new)
        scope = [placed[int(rng.integers(len(placed)))]] + new
        rng.shuffle(scope)
        scopes.append(tuple(scope))
        placed.extend(new)
    n_states = rng.integers(1, max_k + 1, size=n_vars)
    return _make(rng, n_states, scopes, integer=integer, scale=scale, p_inf=p_inf)


def add_random_factor(rng, graph, *, order=2):
    """Copy of ``graph`` with one more random factor (a table of ones)."""
    scope = rng.choice(graph.n_vars, size=order, replace=False)
    scopes = [list(graph.scope(f)) for f in range(graph.n_factors)] + [scope.tolist()]
    tables = [graph.factor_table(f).ravel() for f in range(graph.n_factors)]
    tables.append(np.ones(int(np.prod(graph.n_states[scope]))))
    unary = [graph.unary_of(i) for i in range(graph.n_vars)]
    return FactorGraph(graph.n_states, unary=unary, scopes=scopes, tables=tables)


def all_labelings(graph):
    """Every labeling in lexicographic order (last variable fastest)."""
    return np.array(list(itertools.product(*[range(k) for k in graph.n_states])),
                    dtype=np.int64).reshape(-1, graph.n_vars)


def chain_enumeration(unary, trans):
    """A chain by enumeration: ``(log_z, node marginals (n, K), summed edge
    marginals (K, K), best labeling, best score)``; the best labeling is the
    first maximum in lexicographic order."""
    n, K = unary.shape
    labs = np.array(list(itertools.product(range(K), repeat=n)), dtype=np.int64).reshape(-1, n)
    s = unary[np.arange(n), labs].sum(1)
    if n > 1:
        s = s + trans[labs[:, :-1], labs[:, 1:]].sum(1)
    m = s.max()
    lz = m + np.log(np.exp(s - m).sum())
    p = np.exp(s - lz)
    node = np.stack([np.bincount(labs[:, t], weights=p, minlength=K) for t in range(n)])
    edge = np.zeros((K, K))
    for t in range(n - 1):
        np.add.at(edge, (labs[:, t], labs[:, t + 1]), p)
    best = int(np.argmax(s))
    return lz, node, edge, labs[best], float(s[best])


def pairwise_enumeration(unary, edges, tables):
    """A pairwise model (``unary`` (n, K), ``tables`` (E, K, K)) by
    enumeration: ``(log_z, node marginals (n, K), edge marginals (E, K, K))``."""
    n, K = unary.shape
    labs = np.array(list(itertools.product(range(K), repeat=n)))
    s = unary[np.arange(n)[None, :], labs].sum(axis=1)
    for e, (u, v) in enumerate(edges):
        s = s + tables[e][labs[:, u], labs[:, v]]
    lz = np.logaddexp.reduce(s)
    p = np.exp(s - lz)
    node = np.stack([(p[:, None] * (labs == k)).sum(axis=0) for k in range(K)], axis=1)
    edge = np.zeros((len(edges), K, K))
    for e, (u, v) in enumerate(edges):
        np.add.at(edge[e], (labs[:, u], labs[:, v]), p)
    return lz, node, edge


def brute_force_reference(graph):
    """(labelings, scores, log_z, node_marginals padded, factor marginals list)."""
    labs = all_labelings(graph)
    scores = graph.score_many(labs)
    m = scores.max()
    if m == -np.inf:
        log_z = -np.inf
        p = np.zeros_like(scores)
    else:
        log_z = m + np.log(np.exp(scores - m).sum())
        p = np.exp(scores - log_z)
    node = np.zeros((graph.n_vars, graph.max_states))
    for i in range(graph.n_vars):
        node[i, : graph.n_states[i]] = np.bincount(labs[:, i], weights=p, minlength=graph.n_states[i])
    factors = []
    for f in range(graph.n_factors):
        sc = graph.scope(f)
        shape = tuple(graph.n_states[sc])
        flat = np.ravel_multi_index(tuple(labs[:, sc].T), shape)
        factors.append(np.bincount(flat, weights=p, minlength=int(np.prod(shape))).reshape(shape))
    return labs, scores, log_z, node, factors


def _score_draw(rng, ties):
    """Scores of a given size: small non-positive integers with ``ties``,
    else standard normal."""
    if ties:
        return lambda size: -rng.integers(0, 4, size=size).astype(float)
    return lambda size: rng.normal(size=size)


def _forbidding_tables(rng, draw, k, pairs, p_inf):
    """A flat table per pair from ``draw``, a share ``p_inf`` of its entries
    forbidden (-inf)."""
    tables = []
    for i, j in pairs:
        t = draw(int(k[i] * k[j]))
        t[rng.random(t.shape[0]) < p_inf] = -np.inf
        tables.append(t)
    return tables


def sparse_weighted_csp(seed, *, p_inf=0.3, ties=True):
    """A random tree over 2-9 variables of 1-4 labels plus 0-2 more pairs
    (variables of one free neighbour are common, and cycles too), a share
    ``p_inf`` of the pair entries forbidden."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 10))
    k = rng.integers(1, 5, size=n)
    pairs = [(int(rng.integers(0, i)), i) for i in range(1, n)]
    for _ in range(int(rng.integers(0, 3))):
        i, j = sorted(rng.choice(n, size=2, replace=False))
        if (i, j) not in pairs:
            pairs.append((int(i), int(j)))
    draw = _score_draw(rng, ties)
    tables = _forbidding_tables(rng, draw, k, pairs, p_inf)
    return FactorGraph(k, unary=[draw(int(kk)) for kk in k], scopes=pairs, tables=tables)


def wide_weighted_csp(seed, *, n_vars=100, p_inf=0.3, ties=True):
    """A path over ``n_vars`` variables of 1-4 labels plus ``n_vars // 3``
    random pairs, a share ``p_inf`` of the pair entries forbidden: many
    variables, where :func:`random_weighted_csp` has a few."""
    rng = np.random.default_rng(seed)
    k = rng.integers(1, 5, size=n_vars)
    pairs = {(i - 1, i) for i in range(1, n_vars)}
    for _ in range(n_vars // 3):
        i, j = sorted(int(v) for v in rng.choice(n_vars, size=2, replace=False))
        pairs.add((i, j))
    pairs = sorted(pairs)
    draw = _score_draw(rng, ties)
    tables = _forbidding_tables(rng, draw, k, pairs, p_inf)
    return FactorGraph(k, unary=[draw(int(kk)) for kk in k], scopes=pairs, tables=tables)


def random_weighted_csp(seed, *, p_inf=0.4, ties=True, parallel=False):
    """A small random pairwise graph (1-6 variables of 1-4 labels) with a
    share ``p_inf`` of its table entries forbidden (-inf), a third of that of
    its unary scores, and, with ``ties``, small integer scores; ``parallel``
    repeats one pair."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 7))
    k = rng.integers(1, 5, size=n)
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < 0.7]
    if parallel and pairs:
        pairs.append(pairs[0][::-1])
    draw = _score_draw(rng, ties)
    tables = _forbidding_tables(rng, draw, k, pairs, p_inf)
    unary = []
    for kk in k:
        u = draw(int(kk))
        u[rng.random(int(kk)) < p_inf / 3] = -np.inf
        unary.append(u)
    return FactorGraph(k, unary=unary, scopes=pairs, tables=tables)


def dense_gaussian_network(seed=0, n=14, k=6):
    """A complete pairwise graph over ``n`` variables of ``k`` labels with
    standard normal scores: no forbidden pair, and far from proved at the
    root of a search."""
    rng = np.random.default_rng(seed)
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    return FactorGraph(np.full(n, k), unary=rng.normal(size=(n, k)), scopes=pairs,
                       tables=list(rng.normal(size=(len(pairs), k * k))))
