"""Chain CRF with weights stored only on observed (feature, label) pairs,
against the dense storage with the same pairs held at 0 (the same problem)."""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp

from structlearn.datasets import make_chain_data
from structlearn.estimators import SequenceCRF
from structlearn.estimators._validation import check_sequences
from structlearn.learners import chain_crf
from structlearn.learners.chain_crf import (chain_crf_objective, fit_chain_crf_lbfgs,
                                            observed_pairs)


def _problem(seed):
    rng = np.random.default_rng(seed)
    K = int(rng.integers(2, 7))
    X, y = make_chain_data(int(rng.integers(5, 30)), length=(1, 7), n_labels=K,
                           n_features=int(rng.integers(5, 40)), density=0.15,
                           random_state=seed)
    Xcat, offsets, ycat = check_sequences(X, y)
    Xcat = Xcat.multiply(rng.normal(size=Xcat.shape)).tocsr()  # real-valued features
    classes, codes = np.unique(ycat, return_inverse=True)
    return Xcat, offsets, codes.astype(np.int64), classes.shape[0]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("l1", [0.0, 0.03])
@pytest.mark.parametrize("all_transitions", [True, False])
@pytest.mark.parametrize("row_fill", [0.0, 0.5, 2.0], ids=["all-rows", "mixed", "all-pairs"])
def test_pair_storage_fits_exactly_what_the_dense_masked_storage_fits(monkeypatch, seed, l1,
                                                                      all_transitions, row_fill):
    """Pair storage (observed features as full rows from ``row_fill * K``
    labels on, the rest as pairs) against dense storage with the unobserved
    pairs held at 0: the same problem."""
    monkeypatch.setattr(chain_crf, "ROW_STORAGE_MIN_FILL", row_fill)
    Xcat, offsets, codes, K = _problem(seed)
    kw = dict(alpha=0.05, l1=l1, all_states=False, all_transitions=all_transitions,
              max_iter=60, tol=1e-9)
    Wd, Td, hd, _, nd = fit_chain_crf_lbfgs(Xcat, offsets, codes, K, storage="dense", **kw)
    Wp, Tp, hp, _, n_p = fit_chain_crf_lbfgs(Xcat, offsets, codes, K, storage="pairs", **kw)
    assert isinstance(Wd, np.ndarray) and sp.isspmatrix_csr(Wp)
    # the same iterates up to summation order
    assert abs(nd - n_p) <= 1
    m = min(nd, n_p)
    np.testing.assert_allclose([h["objective"] for h in hd][:m],
                               [h["objective"] for h in hp][:m], rtol=1e-10)
    np.testing.assert_allclose(Wp.toarray(), Wd, atol=1e-7)
    np.testing.assert_allclose(Tp, Td, atol=1e-7)
    # stored entries lie on observed pairs only
    ptr, lab = observed_pairs(chain_crf._ChainProblem(Xcat, offsets, codes, K, 0.0))
    observed = np.zeros((K, Xcat.shape[1]), dtype=bool)
    observed[lab, np.repeat(np.arange(Xcat.shape[1]), np.diff(ptr))] = True
    rows, cols = Wp.nonzero()
    assert observed[rows, cols].all()


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("K", [None, 64, 130])
def test_observed_pairs_against_a_token_loop(seed, K):
    """Bit-marked pairs (one word per 64 labels) against a set per feature;
    stored zeros observe nothing."""
    Xcat, offsets, codes, K0 = _problem(11 + seed)
    rng = np.random.default_rng(seed)
    if K is not None:  # more labels than one word of marks holds
        codes = rng.integers(0, K, size=codes.shape[0]).astype(np.int64)
    K = K or K0
    Xcat = Xcat.copy()
    Xcat.data[rng.random(Xcat.nnz) < 0.2] = 0.0  # explicit zeros, still stored
    ptr, lab = observed_pairs(chain_crf._ChainProblem(Xcat, offsets, codes, K, 0.0))
    want = [set() for _ in range(Xcat.shape[1])]
    for t in range(Xcat.shape[0]):
        for p in range(Xcat.indptr[t], Xcat.indptr[t + 1]):
            if Xcat.data[p] != 0:
                want[Xcat.indices[p]].add(codes[t])
    got = [list(lab[ptr[f]:ptr[f + 1]]) for f in range(Xcat.shape[1])]
    assert got == [sorted(s) for s in want]


@pytest.mark.parametrize("storage", ["dense", "pairs"])
@pytest.mark.parametrize("l1", [0.0, 0.02])
@pytest.mark.parametrize("unit", [True, False], ids=["indicators", "real-valued"])
def test_compact_features_fit_what_the_stored_matrix_fits(storage, l1, unit):
    """Indicator features (all values 1) read through one shared 1 and int32
    column indices: the same fit, bit for bit."""
    Xcat, offsets, codes, K = _problem(8)
    Xcat = Xcat.copy()
    if unit:
        Xcat.data[:] = 1.0
    Xcat.indices = Xcat.indices.astype(np.int64)
    small = chain_crf.compact_features(Xcat)
    assert small.indices.dtype == np.int32
    assert (small.data.strides == (0,) and not small.data.flags.writeable) == unit
    np.testing.assert_array_equal(small.toarray(), Xcat.toarray())
    kw = dict(alpha=0.05, l1=l1, all_states=False, max_iter=40, tol=1e-9, storage=storage)
    W1, T1, h1, _, _ = fit_chain_crf_lbfgs(Xcat, offsets, codes, K, **kw)
    W2, T2, h2, _, _ = fit_chain_crf_lbfgs(small, offsets, codes, K, **kw)
    assert [h["objective"] for h in h1] == [h["objective"] for h in h2]
    np.testing.assert_array_equal(sp.csr_matrix(W1).toarray(), sp.csr_matrix(W2).toarray())
    np.testing.assert_array_equal(T1, T2)


def test_compact_features_keeps_other_matrices():
    Xcat, _, _, _ = _problem(2)
    dense = Xcat.toarray()
    assert chain_crf.compact_features(dense) is dense
    unsorted = sp.csr_matrix((np.ones(3), np.array([2, 0, 1]), np.array([0, 3])), shape=(1, 3))
    assert not unsorted.has_canonical_format
    assert chain_crf.compact_features(unsorted) is unsorted
    small = chain_crf.compact_features(Xcat)
    assert chain_crf.compact_features(small) is small  # already compact


def test_estimator_fit_on_indicator_dicts_equals_fit_on_stored_ones(monkeypatch):
    """Dict input (all-1 indicator features, read through the shared 1)
    and the same features with their stored values fit the same model."""
    from structlearn.datasets import SequenceVectorizer

    rng = np.random.default_rng(0)
    X = [[{"w": f"v{rng.integers(12)}", "p": f"s{rng.integers(4)}"}
          for _ in range(int(rng.integers(1, 7)))] for _ in range(40)]
    y = [[f"L{rng.integers(3)}" for _ in s] for s in X]
    a = SequenceCRF(c1=0.01, max_iter=25).fit(X, y)
    mats = SequenceVectorizer().fit(X).transform(X)
    monkeypatch.setattr(chain_crf, "compact_features", lambda Xcat: Xcat)
    b = SequenceCRF(c1=0.01, max_iter=25).fit(mats, y)
    dense = [sp.csr_matrix(m.coef_).toarray() for m in (a, b)]
    np.testing.assert_array_equal(dense[0], dense[1])
    np.testing.assert_array_equal(a.transition_, b.transition_)


@pytest.mark.parametrize("seed", range(4))
def test_sparse_weights_objective_is_the_dense_objective_on_their_pattern(seed):
    Xcat, offsets, codes, K = _problem(seed)
    rng = np.random.default_rng(seed)
    W = sp.random(K, Xcat.shape[1], density=0.3, random_state=seed, format="csr")
    W.data = rng.normal(size=W.nnz)
    T = rng.normal(size=(K, K))
    f_sparse, gW_sparse, gT_sparse = chain_crf_objective(W, T, Xcat, offsets, codes, alpha=0.1)
    f_dense, gW_dense, gT_dense = chain_crf_objective(W.toarray(), T, Xcat, offsets, codes,
                                                      alpha=0.1)
    assert f_sparse == pytest.approx(f_dense, rel=1e-12)
    pattern = W.toarray() != 0
    np.testing.assert_allclose(gW_sparse.toarray()[pattern], gW_dense[pattern], atol=1e-12)
    np.testing.assert_allclose(gT_sparse, gT_dense, atol=1e-12)


@pytest.fixture(scope="module")
def pair_model():
    X, y = make_chain_data(40, length=(2, 8), n_labels=5, n_features=60, density=0.05,
                           random_state=2)
    model = SequenceCRF(c2=0.3, max_iter=50).fit(X, y)
    return model, X, y


def test_estimator_stores_the_observed_pairs_sparsely(pair_model):
    model, X, y = pair_model
    assert sp.issparse(model.coef_) and model.coef_.shape == (5, 60)
    assert model.coef_.nnz < 0.5 * 5 * 60


@pytest.mark.parametrize("as_dense_input", [False, True])
@pytest.mark.parametrize("n_jobs", [None, 2])
def test_sparse_coef_predicts_what_its_dense_copy_predicts(pair_model, as_dense_input, n_jobs):
    model, X, y = pair_model
    dense = pickle.loads(pickle.dumps(model))
    dense.coef_ = model.coef_.toarray()
    model = pickle.loads(pickle.dumps(model))
    model.n_jobs = n_jobs
    if as_dense_input:
        X = [x.toarray() for x in X]
    for a, b in zip(model.predict(X), dense.predict(X)):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(model.decision_function(X), dense.decision_function(X)):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-13)
    for a, b in zip(model.predict_marginals(X), dense.predict_marginals(X)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-13)
    (la, sa), (lb, sb) = model.predict_topk(X[:5], 3), dense.predict_topk(X[:5], 3)
    for a, b in zip(la, lb):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(np.concatenate(sa), np.concatenate(sb), rtol=1e-12)
    assert model.score(X, y) == dense.score(X, y)
    assert model.log_likelihood(X, y) == pytest.approx(dense.log_likelihood(X, y), rel=1e-12)


def test_warm_start_from_sparse_coef_continues(pair_model):
    _, X, y = pair_model
    model = SequenceCRF(c2=0.3, max_iter=5, warm_start=True)
    model.fit(X, y)
    first = model.history_[-1]["objective"]
    coef = model.coef_.copy()
    model.fit(X, y)
    assert sp.issparse(model.coef_)
    assert model.history_[0]["objective"] <= first
    assert (model.coef_ != coef).nnz > 0


def test_dense_features_keep_dense_storage():
    """Every (pixel, label) pair occurs: pair storage would only add
    indirection, so the weights stay a dense array."""
    rng = np.random.default_rng(0)
    X = [rng.normal(size=(int(rng.integers(2, 6)), 8)) for _ in range(20)]
    y = [rng.integers(0, 3, size=x.shape[0]) for x in X]
    model = SequenceCRF(max_iter=10, tol=1e-3).fit(X, y)
    assert isinstance(model.coef_, np.ndarray)


@pytest.mark.parametrize("storage", ["dense", "pairs"])
@pytest.mark.parametrize("all_transitions", [True, False])
def test_blocks_and_parts_do_not_change_the_likelihood(monkeypatch, storage, all_transitions):
    """The likelihood is summed over parts of the sequences processed in
    blocks; tiny parts and blocks give the one-block value and gradient."""
    Xcat, offsets, codes, K = _problem(5)
    rng = np.random.default_rng(1)

    def evaluate():
        prob = chain_crf._training_problem(Xcat, offsets, codes, K, 0.1, False,
                                           all_transitions, storage)
        w = prob.pack(None, None)
        w[:] = rng.normal(size=w.shape[0])
        g = np.empty_like(w)
        return prob(w, g), g, len(prob.parts) - 1

    rng = np.random.default_rng(1)
    f_one, g_one, parts = evaluate()
    assert parts == 1
    monkeypatch.setattr(chain_crf, "PART_MIN_TOKENS", 10)
    monkeypatch.setattr(chain_crf, "BLOCK_ENTRIES", 1)  # 16-token blocks
    rng = np.random.default_rng(1)
    f_many, g_many, parts = evaluate()
    assert parts == chain_crf.MAX_PARTS
    assert f_many == pytest.approx(f_one, rel=1e-12)
    np.testing.assert_allclose(g_many, g_one, rtol=1e-10, atol=1e-12)


def test_fit_does_not_depend_on_n_jobs(monkeypatch):
    monkeypatch.setattr(chain_crf, "PART_MIN_TOKENS", 20)
    X, y = make_chain_data(60, length=(2, 9), n_labels=6, n_features=200, density=0.02,
                           random_state=4)
    one = SequenceCRF(c1=0.05, max_iter=30).fit(X, y)
    two = SequenceCRF(c1=0.05, max_iter=30, n_jobs=2).fit(X, y)
    assert sp.issparse(one.coef_)
    np.testing.assert_array_equal(one.coef_.toarray(), two.coef_.toarray())
    np.testing.assert_array_equal(one.transition_, two.transition_)
    assert [h["objective"] for h in one.history_] == [h["objective"] for h in two.history_]


def test_mixed_layout_holds_rows_and_pairs():
    """Features seen with many labels become full rows, the others pairs;
    every observed pair is stored exactly once."""
    Xcat, offsets, codes, K = _problem(3)
    prob = chain_crf._training_problem(Xcat, offsets, codes, K, 0.1, False, True, "pairs")
    ptr, lab = observed_pairs(prob)
    counts = np.diff(ptr)
    rows = np.flatnonzero(counts >= chain_crf.ROW_STORAGE_MIN_FILL * K)
    assert 0 < rows.size < np.count_nonzero(counts)
    np.testing.assert_array_equal(prob.row_features, rows)
    free_in_rows = ~prob.split(prob.fixed)[1]
    assert prob.n_pairs + free_in_rows.sum() == lab.size


@pytest.mark.parametrize("seed", range(20))
def test_blocks_are_the_greedy_cut_into_whole_sequences(seed):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 12, size=int(rng.integers(1, 30)))
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    lo = int(rng.integers(0, lengths.size))
    hi = int(rng.integers(lo + 1, lengths.size + 1))
    block = int(rng.integers(1, 40))
    want, tokens = [lo], 0
    for s in range(lo, hi):  # add sequences while the block stays within its size
        if s > want[-1] and tokens + lengths[s] > block:
            want.append(s)
            tokens = 0
        tokens += lengths[s]
    want.append(hi)
    assert chain_crf.block_bounds(offsets, lo, hi, block).tolist() == want


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("storage", ["dense", "pairs"])
def test_only_observed_transitions_are_parameters(seed, storage):
    """all_transitions=False stores the observed label bigrams only: one
    parameter each, the others 0; objective and their gradient are the
    dense objective's (all K^2 transitions) at the same weights."""
    Xcat, offsets, codes, K = _problem(20 + seed)
    seen = np.zeros((K, K), dtype=bool)
    for s in range(offsets.shape[0] - 1):
        c = codes[offsets[s]:offsets[s + 1]]
        seen[c[:-1], c[1:]] = True
    prob = chain_crf._training_problem(Xcat, offsets, codes, K, 0.1, False, False, storage)
    assert prob.n_params == prob.n_unigram + seen.sum()
    rng = np.random.default_rng(seed)
    w = rng.normal(size=prob.n_params)
    g = np.empty_like(w)
    f = prob(w, g)
    W, T = prob.weights(w)
    np.testing.assert_array_equal(T != 0, seen)
    f_ref, _, gT_ref = chain_crf_objective(W, T, Xcat, offsets, codes, alpha=0.1)
    assert f == pytest.approx(f_ref, rel=1e-12)
    _, gT = prob.weights(g)
    np.testing.assert_allclose(gT[seen], gT_ref[seen], rtol=1e-10, atol=1e-12)
    assert np.all(gT[~seen] == 0)
    # a warm start keeps the stored transitions and drops the others
    T0 = rng.normal(size=(K, K))
    np.testing.assert_array_equal(prob.weights(prob.pack(None, T0))[1], np.where(seen, T0, 0))


def test_many_labels_fit_and_marginals_do_not_depend_on_n_jobs(monkeypatch):
    """K >= GEMM_MIN_LABELS: the grouped forward-backward's matrix products.
    Marginals are computed over blocks cut once for the whole input (chunks
    hold whole blocks) on one BLAS thread, so n_jobs changes no bit; the
    sequences have different lengths, so the groups' row counts vary."""
    from structlearn.inference.chains.forward_backward import GEMM_MIN_LABELS

    monkeypatch.setattr(chain_crf, "PART_MIN_TOKENS", 200)
    monkeypatch.setattr(chain_crf, "BLOCK_ENTRIES", 2**14)  # several blocks per chunk
    X, y = make_chain_data(300, length=(3, 12), n_labels=45, n_features=80, density=0.1,
                           random_state=5)
    one = SequenceCRF(max_iter=8).fit(X, y)
    assert one.classes_.shape[0] >= GEMM_MIN_LABELS
    two = SequenceCRF(max_iter=8, n_jobs=2).fit(X, y)
    np.testing.assert_array_equal(sp.csr_matrix(one.coef_).toarray(),
                                  sp.csr_matrix(two.coef_).toarray())
    assert [h["objective"] for h in one.history_] == [h["objective"] for h in two.history_]
    marginals = {}
    for n_jobs in (1, 2, 3):
        one.n_jobs = n_jobs
        marginals[n_jobs] = np.concatenate(one.predict_marginals(X))
    np.testing.assert_array_equal(marginals[1], marginals[2])
    np.testing.assert_array_equal(marginals[1], marginals[3])
    np.testing.assert_allclose(marginals[1].sum(axis=1), 1.0, rtol=1e-12)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("unit", [False, True])
def test_split_tokens_hold_each_tokens_entries_by_storage(seed, unit):
    """Each token's entries, regrouped into row entries (their row) and
    pair entries (their feature), in order, with their values."""
    Xcat, offsets, codes, K = _problem(40 + seed)
    if unit:
        Xcat.data[:] = 1.0
        Xcat = chain_crf.compact_features(Xcat)
    prob = chain_crf._training_problem(Xcat, offsets, codes, K, 0.1, False, True, "pairs")
    assert 0 < prob.row_features.size < prob.d  # a mixed layout: entries are moved
    tokens = prob.tokens
    X = sp.csr_matrix(Xcat)
    for t in range(X.shape[0]):
        feats = X.indices[X.indptr[t]:X.indptr[t + 1]]
        vals = X.data[X.indptr[t]:X.indptr[t + 1]]
        is_row = prob.row_of[feats] >= 0
        rows = slice(tokens.row_ptr[t], tokens.row_ptr[t + 1])
        pairs = slice(tokens.pair_ptr[t], tokens.pair_ptr[t + 1])
        np.testing.assert_array_equal(tokens.row_slot[rows], prob.row_of[feats[is_row]])
        np.testing.assert_array_equal(tokens.row_value[rows], vals[is_row])
        np.testing.assert_array_equal(tokens.pair_feature[pairs], feats[~is_row])
        np.testing.assert_array_equal(tokens.pair_value[pairs], vals[~is_row])
