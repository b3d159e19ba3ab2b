"""Chunked parallel work: small work stays in one chunk, and chunks on the
default back-end run on this module's threads, in order."""

import threading
import time

import joblib
import numpy as np
import pytest

import structlearn._parallel as parallel
from structlearn._parallel import iter_chunks, map_chunks, n_chunks_for, progress_chunk_count
from structlearn.datasets import make_chain_data
from structlearn.estimators import SequenceSSVM


@pytest.fixture
def threshold(monkeypatch):
    monkeypatch.setattr(parallel, "MIN_CHUNK_WORK", 1 << 17)


def test_small_work_is_one_chunk(threshold):
    assert n_chunks_for(2, 4) == 8 and n_chunks_for(None, 4) == 1
    assert n_chunks_for(2, 4, work=1000) == 1
    assert n_chunks_for(2, 4, work=3 << 17) == 3
    assert n_chunks_for(2, 4, work=100 << 17) == 8
    assert progress_chunk_count(2, 50, work=1000) == 1
    assert progress_chunk_count(2, 50) == 2


def _threads_used(model, X):
    seen = set()
    real = parallel._on_threads

    def spy(func, chunks, n_threads):
        seen.add(len(chunks))
        return real(func, chunks, n_threads)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(parallel, "_on_threads", spy)
        labels = model.predict(X)
    return seen, labels


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_a_small_prediction_stays_in_the_calling_thread(threshold):
    X, y = make_chain_data(60, length=6, n_labels=5, n_features=40, random_state=0)
    model = SequenceSSVM(max_iter=3, random_state=0).fit(X, y)
    serial = model.predict(X)
    seen, labels = _threads_used(model.set_params(n_jobs=2), X)  # 1,800 token scores
    assert not seen
    assert all(np.array_equal(a, b) for a, b in zip(serial, labels))
    big = X * 200  # 360,000 token scores: two chunks on threads
    seen, labels = _threads_used(model, big)
    assert seen == {2}
    assert all(np.array_equal(a, b) for a, b in zip(model.set_params(n_jobs=1).predict(big),
                                                    labels))


def test_chunks_run_on_threads_and_come_back_in_order():
    beside = threading.Event()

    def work(i, delay):
        if i == 1:
            beside.set()
        elif i == 0:  # ends only once chunk 1 runs beside it, on the other thread
            beside.wait(10)
        time.sleep(delay)
        return i, threading.get_ident()

    chunks = [(i, 0.02 * (4 - i)) for i in range(4)]  # the first ends last
    out = map_chunks(work, chunks, 2)
    assert [i for i, _ in out] == [0, 1, 2, 3]
    threads = {t for _, t in out}  # a helper thread and the caller's
    assert len(threads) == 2 and threading.get_ident() in threads
    # another configured back-end goes through joblib
    with joblib.parallel_config(backend="sequential"):
        out = map_chunks(work, chunks, 2)
    assert {t for _, t in out} == {threading.get_ident()}


def test_closing_early_drops_the_chunks_not_started():
    started = []

    def work(i):
        started.append(i)
        time.sleep(0.05)
        return i

    gen = iter_chunks(work, [(i,) for i in range(20)], 2)
    assert next(gen) == 0
    gen.close()
    time.sleep(0.1)
    assert len(started) < 20  # the rest were cancelled


def test_results_and_failures_come_in_chunk_order_whichever_thread_ran_them():
    def work(i):
        time.sleep(0.03 if i == 0 else 0.0)
        if i in (2, 3):
            raise ValueError(f"chunk {i} failed")
        return i

    gen = iter_chunks(work, [(i,) for i in range(6)], 2)
    assert next(gen) == 0 and next(gen) == 1  # (chunk 3 may have failed first)
    with pytest.raises(ValueError, match="chunk 2"):
        next(gen)
    gen.close()
    # a failure that is not an Exception leaves the caller at once
    with pytest.raises(KeyboardInterrupt):
        map_chunks(lambda i: (_ for _ in ()).throw(KeyboardInterrupt()) if i == 1 else i,
                   [(i,) for i in range(4)], 2)


def test_a_failing_chunk_raises_in_the_caller():
    def work(i):
        if i == 2:
            raise ValueError("chunk 2 failed")
        return i

    with pytest.raises(ValueError, match="chunk 2"):
        map_chunks(work, [(i,) for i in range(5)], 2)
