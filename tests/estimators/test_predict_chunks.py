"""Sequence prediction stacks its input one bounded chunk at a time."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

import structlearn._parallel as parallel
from structlearn.estimators import SequenceCRF, SequenceSSVM
from structlearn.estimators import _base
from structlearn.estimators._validation import check_sequence_items


def _data(seed=0, n_seq=60, d=6, K=4):
    rng = np.random.default_rng(seed)
    X = [rng.integers(0, 3, size=(int(rng.integers(1, 9)), d)).astype(np.uint8)
         for _ in range(n_seq)]
    y = [rng.integers(0, K, size=len(x)) for x in X]
    return X, y


@pytest.fixture(scope="module")
def models():
    X, y = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return (SequenceSSVM(C=0.5, max_iter=10, random_state=0).fit(X, y),
                SequenceCRF(max_iter=15).fit(X, y))


def _spy_chunks(monkeypatch):
    """Chunk counts handed to the parallel helpers (list or streamed)."""
    seen = []
    for name in ("map_chunks", "iter_chunks"):
        real = getattr(_base, name)

        def spy(func, chunks, *args, _real=real, **kwargs):
            seen.append(len(chunks))
            return _real(func, chunks, *args, **kwargs)

        monkeypatch.setattr(_base, name, spy)
    return seen


@pytest.mark.parametrize("sparse", [False, True])
def test_small_chunks_give_the_same_predictions(models, monkeypatch, sparse):
    X, _ = _data(seed=1, n_seq=80)
    if sparse:
        X = [sp.csr_matrix(x) for x in X]
    ssvm, crf = models
    expected = [ssvm.predict(X), crf.predict(X), crf.predict_marginals(X),
                ssvm.predict_topk(X, k=3)[0]]
    monkeypatch.setattr(parallel, "CHUNK_BYTES", 400)
    seen = _spy_chunks(monkeypatch)
    got = [ssvm.predict(X), crf.predict(X)]
    assert min(seen) > 10  # a few sequences a chunk
    got += [crf.predict_marginals(X), ssvm.predict_topk(X, k=3)[0]]
    for want, have in zip(expected, got):
        assert len(want) == len(have) == len(X)
        for a, b in zip(want, have):  # marginals too: blocks follow the input, not chunks
            np.testing.assert_array_equal(a, b)


def test_chunk_count_follows_the_input_size():
    big = _base.UnstackedSequences([], np.array([0, 10**6]), 128, 0, False)
    est = SequenceSSVM()
    est.classes_ = np.arange(26)
    n = est._memory_chunk_count(big, big.offsets)
    assert n == -(-(10**6 * (128 + 26) * 8) // parallel.CHUNK_BYTES)
    assert est._memory_chunk_count(big._replace(sparse=True), big.offsets) < n


def test_dense_sequences_are_kept_as_given_until_a_chunk_stacks_them():
    X, _ = _data()
    parts, _, _, _ = check_sequence_items(X)
    assert all(p is x for p, x in zip(parts, X))  # uint8, not copied to float64


def test_nan_in_a_late_chunk_names_its_sequence(models, monkeypatch):
    X, _ = _data(seed=2, n_seq=50)
    X = [x.astype(np.float64) for x in X]
    X[47][0, 1] = np.nan
    monkeypatch.setattr(parallel, "CHUNK_BYTES", 400)
    for call in (models[0].predict, models[1].predict, models[1].predict_marginals):
        with pytest.raises(ValueError, match=r"X\[47\] contains NaN"):
            call(X)
