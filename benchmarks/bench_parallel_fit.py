"""Partitioned training on threads: fits with ``n_jobs=2`` against ``n_jobs=1``.

Each section fits the same estimator three ways to the same certified gap:
``n_jobs=1``; ``n_jobs=J`` with one partition (the certificate on J
threads; gdmm chains' passes split by factor type, multilabel labels split
into groups where the edges allow); ``n_jobs=J, training_partitions=J`` (J = the largest of
``--jobs``, 2 by default), in turn (``--rounds 2`` repeats the three,
alternating, so all see the same phases of a shared machine), and reports
the fit time, passes (rounds), the final certified gap, the held-out score
and the ratios of the best times.

Sections:

* ``porttinari``: ``SequenceSSVM(C=0.1, tol=0.01)`` on Porttinari UPOS+FEATS
  (first ``--sentences`` sentences, the next half as many held out).
* ``bibtex``: ``MultiLabelSSVM(C=0.1, tol=0.01)`` on
  ``../shared/data/multilabel/bibtex.npz`` (its train/test split).
* ``corel5k``: the same multilabel fit on ``../shared/data/multilabel/corel5k.npz``.
* ``bibtex-lookalike``: the same multilabel fit on a generated bag-of-words
  task of bibtex's sizes (``make_sparse_multilabel``: 4,880 + 2,515
  samples, 159 labels, 1,836 binary features, about 2.4 labels and 68
  words a sample).
* ``synthetic1k``: the same multilabel fit on ``bench_multilabel``'s
  1,000-label look-alike (13,000 samples, 983 labels, 500 features).
* With ``--pairwise none`` the multilabel sections' labels share no
  edge, and ``training_partitions`` splits the labels into groups.
* ``bcfw``: ``SequenceSSVM(solver="bcfw", C=0.1, tol=0.01)`` on the
  ``lookalike2`` task (its partitions are drawn anew each round).
* ``lookalike``: the same chain fit on a generated task of about
  Porttinari's sizes (``make_chain_data``: 1,000 sequences of 19 tokens,
  200 labels, 16,000 sparse features), so the result is not one data set's.
* ``ocr``: the same chain fit on the OCR letters (folds 2-10 to train,
  fold 1 held out; dense pixel features).
* ``long``: the same chain fit on two generated sequences of 12,000 tokens
  (50 labels, 2,000 features; a third held out): the two-thread pass cuts a
  sequence in two.
* ``lookalike2``: another size (3,000 sequences of 12 tokens, 50 labels,
  5,000 features, 15 a token).
* ``cluster``, ``cluster-porttinari``, ``cluster-bibtex`` (not run by
  default): the look-alike / Porttinari / bibtex fit in one process, with two
  partitions on threads and with two partitions on a ``LocalCluster`` of two
  worker processes (``joblib.parallel_config(backend="dask")``): time,
  passes, certified gap, primal value, and the megabytes sent to and
  received from the workers.
* ``cluster-bag`` (not run by default): ``SequenceSSVM`` fitted on a
  ``dask.bag.Bag`` whose partitions are generated on the workers: fit time,
  passes, gap and the client's peak RSS against its RSS before the fit plus
  the model.
* ``cluster-bibtex-lookalike`` (not run by default): as ``cluster-bibtex``
  on the bibtex look-alike.
* ``cluster-multilabel-bag``, ``cluster-multilabel-bag-corel5k`` (not run by
  default): ``MultiLabelSSVM`` on bibtex / corel5k read by the workers into
  a ``dask.bag.Bag`` of 2 partitions, against one process on the matrices:
  time, rounds, gap, primal value, held-out score, the client's RSS.
* ``cluster-crf-bag`` (not run by default): ``SequenceCRF(max_iter=100)``
  fitted on a ``dask.bag.Bag`` of feature-dict sentences generated on the
  workers (the client's peak RSS against its RSS before the fit plus the
  model), then on the same sentences in one list in this process: time,
  iterations, the final objectives' relative difference.
* ``cluster-crf-bag-porttinari`` (not run by default): the same on
  Porttinari UPOS+FEATS as feature-dict sentences, in one process from the
  list and from a bag of 2 partitions: time, iterations, objective,
  vocabulary size and held-out score.
* ``cluster-crf`` (not run by default): ``SequenceCRF(max_iter=100)`` on
  Porttinari UPOS+FEATS in one process and with its likelihood on the
  workers: time, iterations, final objective and their relative difference.

Usage::

    .venv/bin/python benchmarks/bench_parallel_fit.py [--sections porttinari,bibtex,lookalike,lookalike2]
        [--rounds 1] [--jobs 2] [--bag-sequences 5000] [--external-scheduler]
"""

import argparse
import contextlib
import time
import warnings

import numpy as np


def _porttinari(path, n_train):
    from structlearn.datasets import read_conllu, token_features, vectorize_sequences

    sents = read_conllu(path, columns=("form", "upos+feats"))
    test = sents[n_train:n_train + n_train // 2]
    sents = sents[:n_train]
    X, vec = vectorize_sequences([token_features(s["form"]) for s in sents])
    Xte, _ = vectorize_sequences([token_features(s["form"]) for s in test], vec)
    y = [np.array(s["upos+feats"]) for s in sents]
    yte = [np.array(s["upos+feats"]) for s in test]
    return X, y, Xte, yte


def _ocr():
    from structlearn.datasets import load_ocr_letters

    ocr = load_ocr_letters()
    train = [i for i, f in enumerate(ocr.folds) if f != 1]
    test = [i for i, f in enumerate(ocr.folds) if f == 1]
    return ([ocr.X[i] for i in train], [ocr.y[i] for i in train],
            [ocr.X[i] for i in test], [ocr.y[i] for i in test])


def _long_sequences():
    from structlearn.datasets import make_chain_data

    X, y = make_chain_data(3, length=12000, n_labels=50, n_features=2000, density=0.01,
                           random_state=1)
    return X[:2], y[:2], X[2:], y[2:]


def _lookalike():
    from structlearn.datasets import make_chain_data

    X, y = make_chain_data(1500, length=19, n_labels=200, n_features=16000,
                           density=20 / 16000, random_state=0)
    return X[:1000], y[:1000], X[1000:], y[1000:]


def _lookalike_small_k():
    from structlearn.datasets import make_chain_data

    X, y = make_chain_data(4500, length=12, n_labels=50, n_features=5000,
                           density=15 / 5000, random_state=1)
    return X[:3000], y[:3000], X[3000:], y[3000:]


def _bibtex(path):
    """A multilabel set of ``../shared/data/multilabel`` (its train/test split)."""
    import scipy.sparse as sp

    z = np.load(path, allow_pickle=False)

    def part(p):
        X = sp.csr_matrix((z[f"X_{p}_data"], z[f"X_{p}_indices"], z[f"X_{p}_indptr"]),
                          shape=tuple(z[f"X_{p}_shape"]))
        return X, z[f"Y_{p}"].astype(np.int64)

    return (*part("train"), *part("test"))


def _bibtex_lookalike():
    from structlearn.datasets import make_sparse_multilabel

    X, Y = make_sparse_multilabel(7395, n_labels=159, n_features=1836, labels_per_sample=2.4,
                                  words_per_label=15, word_rate=0.25, background=64.0,
                                  random_state=0)
    return X[:4880], Y[:4880], X[4880:], Y[4880:]


def _run(name, make, data, configs, rounds):
    from sklearn.exceptions import ConvergenceWarning

    X, y, Xte, yte = data
    print(f"\n## {name}\n")
    print("| n_jobs | training_partitions | fit s | passes | final rel. gap | held-out score "
          "| local s | merge s |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    times = {c: [] for c in configs}
    for _ in range(rounds):
        for n_jobs, parts in configs:
            model = make(n_jobs, parts)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                t0 = time.perf_counter()
                model.fit(X, y)
                t = time.perf_counter() - t0
            times[n_jobs, parts].append(t)
            h = model.history_
            local = sum(r.get("local_time", r["pass_time"]) for r in h)
            merge = sum(r.get("merge_time", 0.0) for r in h)
            print(f"| {n_jobs} | {parts} | {t:.2f} | {len(h)} | {h[-1]['relative_gap']:.4f} | "
                  f"{model.score(Xte, yte):.4f} | {local:.2f} | {merge:.2f} |", flush=True)
    base = min(times[configs[0]])
    for c in configs[1:]:
        print(f"\nbest fit time n_jobs={c[0]}, training_partitions={c[1]} / "
              f"n_jobs={configs[0][0]}, training_partitions={configs[0][1]}: "
              f"{min(times[c]) / base:.2f}x")


def _run_cluster(name, make, data, parts=2):
    """One process, ``parts`` partitions on two threads, ``parts`` on a
    2-process LocalCluster."""
    import joblib
    from distributed import Client, LocalCluster
    from sklearn.exceptions import ConvergenceWarning

    X, y, Xte, yte = data
    print(f"\n## {name}: on a LocalCluster of 2 worker processes\n")
    print("| where | fit s | passes | final rel. gap | final primal | held-out score "
          "| MB sent / received |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=":0") as cluster, Client(cluster):
        runs = (("one process, n_jobs=1", 1, None, False),
                (f"threads, n_jobs=2, P={parts}", 2, parts, False),
                (f"dask workers, P={parts}", None, parts, True))
        for label, n_jobs, n_parts, remote in runs:
            model = make(n_jobs, n_parts)
            backend = joblib.parallel_config(backend="dask") if remote else \
                joblib.parallel_config(backend="threading")
            with warnings.catch_warnings(), backend:
                warnings.simplefilter("ignore", ConvergenceWarning)
                t0 = time.perf_counter()
                model.fit(X, y)
                t = time.perf_counter() - t0
            h = model.history_
            mb = (f"{h[-1]['bytes_sent'] / 1e6:.0f} / {h[-1]['bytes_received'] / 1e6:.0f}"
                  if remote else "")
            print(f"| {label} | {t:.2f} | {len(h)} | {h[-1]['relative_gap']:.4f} | "
                  f"{h[-1]['primal']:.4f} | {model.score(Xte, yte):.4f} | {mb} |", flush=True)


def _run_crf_cluster(data, max_iter=100):
    """SequenceCRF (L-BFGS, c2 = 1) in one process and with its likelihood on a
    LocalCluster of 2 worker processes: time, iterations, final objective."""
    import joblib
    from distributed import Client, LocalCluster

    from structlearn.estimators import SequenceCRF

    X, y, Xte, yte = data
    print("\n## SequenceCRF(max_iter=100) on Porttinari UPOS+FEATS: one process against "
          "the likelihood on a LocalCluster of 2 worker processes\n")
    print("| where | fit s | iterations | final objective | held-out score |")
    print("|---|---:|---:|---:|---:|")
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=":0") as cluster, Client(cluster):
        objectives = []
        for label, remote in (("one process", False), ("dask workers", True)):
            model = SequenceCRF(max_iter=max_iter)
            backend = joblib.parallel_config(backend="dask" if remote else "threading")
            with warnings.catch_warnings(), backend:
                warnings.simplefilter("ignore")
                t0 = time.perf_counter()
                model.fit(X, y)
                t = time.perf_counter() - t0
            h = model.history_
            objectives.append(h[-1]["objective"])
            print(f"| {label} | {t:.2f} | {len(h)} | {h[-1]['objective']:.8f} | "
                  f"{model.score(Xte, yte):.4f} |", flush=True)
    print(f"\nrelative objective difference: "
          f"{abs(objectives[1] - objectives[0]) / abs(objectives[0]):.2e}")


def _bag_partition_data(seed, n_sequences, n_labels, n_features):
    """One bag partition's (X_i, y_i) pairs, generated on the worker."""
    from structlearn.datasets import make_chain_data

    X, y = make_chain_data(n_sequences, length=19, n_labels=n_labels, n_features=n_features,
                           density=20 / n_features, random_state=seed)
    return list(zip(X, y))


def _run_bag(n_parts=2, per_part=5000, n_labels=50, n_features=20000, external=False):
    """SequenceSSVM on a dask bag whose partitions are generated on the
    workers: the client's peak RSS (sampled every 10 ms) against its RSS
    before the fit plus the model (after a first small fit, so that the
    modules a fit imports are already there; the LocalCluster's scheduler
    runs in the client's process and counts in its RSS)."""
    import dask.bag as db

    from structlearn.estimators import SequenceSSVM

    print(f"\n## SequenceSSVM on a dask bag: {n_parts} partitions of {per_part} sequences x 19 "
          f"tokens ({n_labels} labels, {n_features} features) generated on 2 worker "
          f"processes{' (scheduler in its own process)' if external else ''}\n")
    with _two_workers(external):
        def bag_of(n):
            return db.from_sequence(range(n_parts), npartitions=n_parts).map_partitions(
                lambda seeds: [pair for s in seeds
                               for pair in _bag_partition_data(s, n, n_labels, n_features)])

        with warnings.catch_warnings():  # the modules a fit imports, imported before
            warnings.simplefilter("ignore")
            SequenceSSVM(max_iter=2).fit(bag_of(20))
        bag = bag_of(per_part)
        model = SequenceSSVM(C=0.1, tol=0.01, max_iter=300, random_state=0)
        t, before, peak = _timed_peak_rss(lambda: model.fit(bag))
    h = model.history_
    data_mb = n_parts * per_part * 19 * 20 * 12 / 1e6
    model_mb = (model.coef_.nbytes + model.transition_.nbytes) / 1e6
    print("| fit s | passes | final rel. gap | client RSS before MB | peak MB | model MB "
          "| peak / (before + model) | training data on the workers, MB (CSR) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    print(f"| {t:.2f} | {len(h)} | {h[-1]['relative_gap']:.4f} | {before / 1e6:.0f} | "
          f"{peak / 1e6:.0f} | {model_mb:.0f} | {peak / (before + model_mb * 1e6):.2f}x "
          f"| {data_mb:.0f} |")


@contextlib.contextmanager
def _two_workers(external):
    """A Client of 2 single-threaded worker processes: a ``LocalCluster``
    (its scheduler in this process), or, ``external``, a scheduler and
    workers started apart with the ``dask`` command line, so that this
    process is the client alone (as on a real cluster)."""
    from distributed import Client, LocalCluster

    if not external:
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                          dashboard_address=":0") as cluster, Client(cluster) as client:
            yield client
        return
    import os
    import subprocess
    import sys
    import tempfile

    dask = os.path.join(os.path.dirname(sys.executable), "dask")
    with tempfile.TemporaryDirectory() as tmp:
        file = os.path.join(tmp, "scheduler.json")
        procs = [subprocess.Popen([dask, "scheduler", "--scheduler-file", file, "--port", "0",
                                   "--no-dashboard"], stderr=subprocess.DEVNULL)]
        try:
            while not os.path.exists(file):
                time.sleep(0.1)
            procs.append(subprocess.Popen(
                [dask, "worker", "--scheduler-file", file, "--nthreads", "1", "--nworkers",
                 "2", "--no-dashboard", "--memory-limit", "0"], stderr=subprocess.DEVNULL))
            with Client(scheduler_file=file) as client:
                client.wait_for_workers(2)
                yield client
        finally:
            for proc in procs[::-1]:
                proc.terminate()
                proc.wait()


def _timed_peak_rss(fit):
    """``(seconds, RSS before, peak RSS)`` of ``fit()`` in this process (RSS
    sampled every 10 ms; warnings ignored)."""
    import threading

    import psutil

    proc = psutil.Process()
    before = proc.memory_info().rss
    peak = [before]
    done = threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], proc.memory_info().rss)
            done.wait(0.01)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        fit()
        t = time.perf_counter() - t0
    done.set()
    sampler.join()
    return t, before, peak[0]


def _run_crf_bag_real(path, n_train, max_iter=100, external=False):
    """SequenceCRF on Porttinari UPOS+FEATS as feature-dict sentences
    (``token_features``): in one process from the list, then from a dask
    bag of 2 partitions of the same sentences (vocabularies merged from the
    workers): time, iterations, objective, vocabulary and held-out score."""
    import dask.bag as db

    from structlearn.datasets import read_conllu, token_features
    from structlearn.estimators import SequenceCRF

    sents = read_conllu(path, columns=("form", "upos+feats"))
    test = sents[n_train:n_train + n_train // 2]
    sents = sents[:n_train]
    X = [token_features(s["form"]) for s in sents]
    y = [list(s["upos+feats"]) for s in sents]
    Xte = [token_features(s["form"]) for s in test]
    yte = [list(s["upos+feats"]) for s in test]
    print(f"\n## SequenceCRF(max_iter={max_iter}) on Porttinari UPOS+FEATS, {n_train} sentences "
          "of feature dicts: one process against a dask bag of 2 partitions on 2 worker "
          f"processes{' (scheduler in its own process)' if external else ''}\n")
    print("| where | fit s | iterations | final objective | features | held-out score |")
    print("|---|---:|---:|---:|---:|---:|")
    one = SequenceCRF(max_iter=max_iter)
    t1, _, _ = _timed_peak_rss(lambda: one.fit(X, y))
    h1 = one.history_
    print(f"| one process, a list | {t1:.2f} | {len(h1)} | {h1[-1]['objective']:.8f} | "
          f"{one.n_features_in_} | {one.score(Xte, yte):.4f} |", flush=True)
    with _two_workers(external):
        _warm_bag_fit(SequenceCRF, list(zip(X[:20], y[:20])))
        bag = db.from_sequence(list(zip(X, y)), npartitions=2)
        model = SequenceCRF(max_iter=max_iter)
        t, _, _ = _timed_peak_rss(lambda: model.fit(bag))
    h = model.history_
    print(f"| dask bag, 2 workers | {t:.2f} | {len(h)} | {h[-1]['objective']:.8f} | "
          f"{model.n_features_in_} | {model.score(Xte, yte):.4f} |")
    print(f"\nrelative objective difference: "
          f"{abs(h[-1]['objective'] - h1[-1]['objective']) / abs(h1[-1]['objective']):.2e}; "
          f"same vocabulary: {model.vectorizer_.feature_names_ == one.vectorizer_.feature_names_}")


def _warm_bag_fit(estimator, pairs):
    """A two-iteration fit of ``estimator`` on a 2-partition bag of ``pairs``,
    so that the modules a bag fit imports are imported before the timing."""
    import dask.bag as db

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        estimator(max_iter=2).fit(db.from_sequence(pairs, npartitions=2))


def _multilabel_bag_part(path, part, n_parts):
    """Bag partition ``part`` of ``n_parts`` of a multilabel set's training
    samples, read from its file on the worker: ``(x_i, y_i)`` pairs of
    one-row CSR matrices and 0/1 vectors (contiguous runs of samples)."""
    X, Y = _bibtex(path)[:2]
    a, b = np.linspace(0, X.shape[0], n_parts + 1).astype(int)[part:part + 2]
    return [(X[i], Y[i]) for i in range(a, b)]


def _run_multilabel_bag(name, path, n_parts=2, external=False):
    """MultiLabelSSVM(C=0.1, tol=0.01) on a multilabel set read by the
    workers into a dask bag of ``n_parts`` partitions, against the same fit
    in one process from the matrices: time, rounds, gap, primal value,
    held-out score and the client's RSS."""
    import dask.bag as db
    from dask import delayed

    import os

    from structlearn.estimators import MultiLabelSSVM

    path = os.path.abspath(path)
    X, Y, Xte, Yte = _bibtex(path)
    params = dict(C=0.1, tol=0.01, max_iter=1000, random_state=0)
    print(f"\n## {name}, MultiLabelSSVM(C=0.1, tol=0.01): one process against a dask bag of "
          f"{n_parts} partitions read by 2 worker processes"
          f"{' (scheduler in its own process)' if external else ''}\n")
    print("| where | fit s | passes / rounds | final rel. gap | final primal | held-out score "
          "| client RSS before / peak MB | MB sent / received |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    one = MultiLabelSSVM(**params)
    t1, _, _ = _timed_peak_rss(lambda: one.fit(X, Y))
    h1 = one.history_
    print(f"| one process, matrices | {t1:.2f} | {len(h1)} | {h1[-1]['relative_gap']:.4f} | "
          f"{h1[-1]['primal']:.4f} | {one.score(Xte, Yte):.4f} | | |", flush=True)
    with _two_workers(external):
        _warm_bag_fit(MultiLabelSSVM, [(X[i], Y[i]) for i in range(20)])
        bag = db.from_delayed([delayed(_multilabel_bag_part)(path, p, n_parts)
                               for p in range(n_parts)])
        model = MultiLabelSSVM(**params)
        t, before, peak = _timed_peak_rss(lambda: model.fit(bag))
    h = model.history_
    model_mb = (model.coef_.nbytes + model.pairwise_coef_.nbytes) / 1e6
    print(f"| dask bag, {n_parts} partitions | {t:.2f} | {len(h)} | {h[-1]['relative_gap']:.4f} "
          f"| {h[-1]['primal']:.4f} | {model.score(Xte, Yte):.4f} | {before / 1e6:.0f} / "
          f"{peak / 1e6:.0f} | {h[-1]['bytes_sent'] / 1e6:.0f} / "
          f"{h[-1]['bytes_received'] / 1e6:.0f} |")
    print(f"\nclient peak / (before + model {model_mb:.1f} MB): "
          f"{peak / (before + model_mb * 1e6):.2f}x")


def _crf_bag_sentences(seed, n_sequences, n_labels, n_features):
    """One bag partition's (sentence, tags) pairs, generated on the worker:
    ``make_chain_data`` tokens as CRFsuite-style dicts (each non-zero
    feature ``j`` an indicator ``"f<j // 8>=<j % 8>"``)."""
    from structlearn.datasets import make_chain_data

    X, y = make_chain_data(n_sequences, length=19, n_labels=n_labels, n_features=n_features,
                           density=12 / n_features, random_state=seed)
    out = []
    for x, t in zip(X, y):
        sentence = [{f"f{j // 8}": str(j % 8) for j in x.indices[x.indptr[i]:x.indptr[i + 1]]}
                    for i in range(x.shape[0])]
        out.append((sentence, [f"T{k}" for k in t]))
    return out


def _run_crf_bag(n_parts=2, per_part=5000, n_labels=20, n_features=40000, max_iter=100,
                 external=False):
    """SequenceCRF on a dask bag of feature-dict sentences generated on the
    workers: the client's peak RSS against its RSS before the fit plus the
    model; then the same sentences in one list, fitted in this process:
    time and the relative difference of the final objectives."""
    import dask.bag as db

    from structlearn.estimators import SequenceCRF

    print(f"\n## SequenceCRF(max_iter={max_iter}) on a dask bag: {n_parts} partitions of "
          f"{per_part} sentences x 19 tokens of feature dicts ({n_labels} labels, "
          f"{n_features} features) generated on 2 worker processes"
          f"{' (scheduler in its own process)' if external else ''}, against one process\n")

    def bag_of(n):
        return db.from_sequence(range(n_parts), npartitions=n_parts).map_partitions(
            lambda seeds: [pair for s in seeds
                           for pair in _crf_bag_sentences(s, n, n_labels, n_features)])

    with _two_workers(external):
        with warnings.catch_warnings():  # the modules a fit imports, imported before
            warnings.simplefilter("ignore")
            SequenceCRF(max_iter=2).fit(bag_of(20))
        bag = bag_of(per_part)
        model = SequenceCRF(max_iter=max_iter)
        t, before, peak = _timed_peak_rss(lambda: model.fit(bag))
    h = model.history_
    coef = model.coef_
    model_mb = (coef.data.nbytes + coef.indices.nbytes + coef.indptr.nbytes
                if hasattr(coef, "indptr") else coef.nbytes) / 1e6
    model_mb += model.transition_.nbytes / 1e6
    print("| where | fit s | iterations | final objective | client RSS before MB | peak MB "
          "| model MB | peak / (before + model) | MB sent / received |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    print(f"| bag on 2 workers | {t:.2f} | {len(h)} | {h[-1]['objective']:.8f} | "
          f"{before / 1e6:.0f} | {peak / 1e6:.0f} | {model_mb:.1f} | "
          f"{peak / (before + model_mb * 1e6):.2f}x | {h[-1]['bytes_sent'] / 1e6:.0f} / "
          f"{h[-1]['bytes_received'] / 1e6:.0f} |", flush=True)
    pairs = [pair for s in range(n_parts)
             for pair in _crf_bag_sentences(s, per_part, n_labels, n_features)]
    X, y = [p[0] for p in pairs], [p[1] for p in pairs]
    del pairs
    one = SequenceCRF(max_iter=max_iter)
    t1, before1, peak1 = _timed_peak_rss(lambda: one.fit(X, y))
    h1 = one.history_
    print(f"| one process, a list | {t1:.2f} | {len(h1)} | {h1[-1]['objective']:.8f} | "
          f"{before1 / 1e6:.0f} | {peak1 / 1e6:.0f} | | | |")
    print(f"\nrelative objective difference: "
          f"{abs(h[-1]['objective'] - h1[-1]['objective']) / abs(h1[-1]['objective']):.2e}; "
          f"same vocabulary: {model.vectorizer_.feature_names_ == one.vectorizer_.feature_names_}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sections", default="porttinari,bibtex,lookalike,lookalike2")
    ap.add_argument("--cluster-partitions", type=int, default=2,
                    help="partitions of the cluster-bibtex sections")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--jobs", type=int, nargs="+", default=[2])
    ap.add_argument("--sentences", type=int, default=1000)
    ap.add_argument("--bag-sequences", type=int, default=5000,
                    help="sequences per bag partition (cluster-bag, cluster-crf-bag)")
    ap.add_argument("--external-scheduler", action="store_true",
                    help="cluster-bag, cluster-crf-bag: the scheduler and the workers in "
                         "processes of their own (the dask command line)")
    ap.add_argument("--porttinari", default="../shared/data/porttinari_pos.conllu.gz")
    ap.add_argument("--bibtex", default="../shared/data/multilabel/bibtex.npz")
    ap.add_argument("--corel5k", default="../shared/data/multilabel/corel5k.npz")
    ap.add_argument("--pairwise", default="auto",
                    help="MultiLabelSSVM's pairwise ('none' or a forest of several trees: "
                         "the partitions are groups of labels)")
    args = ap.parse_args()
    from structlearn.estimators import MultiLabelSSVM, SequenceSSVM

    def chain(n_jobs, parts):
        return SequenceSSVM(C=0.1, tol=0.01, max_iter=1000, random_state=0, n_jobs=n_jobs,
                            training_partitions=parts)

    def multilabel(n_jobs, parts):
        return MultiLabelSSVM(C=0.1, tol=0.01, max_iter=1000, random_state=0, n_jobs=n_jobs,
                              training_partitions=parts, pairwise=args.pairwise)

    # compile (and warm) the kernels of both settings before timing
    from structlearn.datasets import make_chain_data
    Xw, yw = make_chain_data(20, length=5, n_labels=70, n_features=50, random_state=0)
    jobs = max(args.jobs)
    configs = [(1, None), (jobs, None), (jobs, jobs)]
    from structlearn.learners import _gdmm_chain_type_split

    split_min = _gdmm_chain_type_split.TYPE_SPLIT_MIN_ENTRIES
    _gdmm_chain_type_split.TYPE_SPLIT_MIN_ENTRIES = 0  # the split passes' kernels too
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        Xm, Ym = _bibtex_lookalike()[:2]
        for n_jobs, parts in configs:
            chain(n_jobs, parts).set_params(max_iter=2).fit(Xw, yw)
            multilabel(n_jobs, parts).set_params(max_iter=2).fit(Xm[:300], Ym[:300])
    _gdmm_chain_type_split.TYPE_SPLIT_MIN_ENTRIES = split_min
    sections = args.sections.split(",")
    if "porttinari" in sections:
        data = _porttinari(args.porttinari, args.sentences)
        n_tok = sum(len(v) for v in data[1])
        _run(f"Porttinari UPOS+FEATS, {args.sentences} sentences ({n_tok} tokens), "
             "SequenceSSVM(C=0.1, tol=0.01)", chain, data, configs, args.rounds)
    if "lookalike" in sections:
        _run("Look-alike chains (1,000 x 19 tokens, 200 labels, 16,000 features), "
             "SequenceSSVM(C=0.1, tol=0.01)", chain, _lookalike(), configs, args.rounds)
    if "ocr" in sections:
        _run("OCR letters (folds 2-10: 6,173 words, 46,777 letters, 26 labels, 128 pixels), "
             "SequenceSSVM(C=0.1, tol=0.01)", chain, _ocr(), configs, args.rounds)
    if "long" in sections:
        _run("Two sequences of 12,000 tokens (50 labels, 2,000 features), "
             "SequenceSSVM(C=0.1, tol=0.01)", chain, _long_sequences(), configs, args.rounds)
    if "lookalike2" in sections:
        _run("Look-alike chains (3,000 x 12 tokens, 50 labels, 5,000 features), "
             "SequenceSSVM(C=0.1, tol=0.01)", chain, _lookalike_small_k(), configs, args.rounds)
    if "synthetic1k" in sections:
        from bench_multilabel import make_lookalike

        _run("1,000-label look-alike (13,000 samples, 983 labels, 500 features), "
             "MultiLabelSSVM(C=0.1, tol=0.01)", multilabel, make_lookalike(), configs,
             args.rounds)
    if "bcfw" in sections:
        def bcfw(n_jobs, parts):
            return chain(n_jobs, parts).set_params(solver="bcfw")

        _run("Look-alike chains (3,000 x 12 tokens, 50 labels, 5,000 features), "
             "SequenceSSVM(solver='bcfw', C=0.1, tol=0.01)", bcfw, _lookalike_small_k(),
             configs, args.rounds)
    if "cluster" in sections:
        _run_cluster("Look-alike chains (1,000 x 19 tokens, 200 labels, 16,000 features)",
                     chain, _lookalike())
    if "cluster-bag" in sections:
        _run_bag(per_part=args.bag_sequences, external=args.external_scheduler)
    if "cluster-bibtex" in sections:
        _run_cluster("bibtex, MultiLabelSSVM(C=0.1, tol=0.01)", multilabel,
                     _bibtex(args.bibtex), args.cluster_partitions)
    if "cluster-bibtex-lookalike" in sections:
        _run_cluster("bibtex look-alike (4,880 samples, 159 labels, 1,836 words), "
                     "MultiLabelSSVM(C=0.1, tol=0.01)", multilabel, _bibtex_lookalike(),
                     args.cluster_partitions)
    if "cluster-multilabel-bag" in sections:
        _run_multilabel_bag("bibtex", args.bibtex, external=args.external_scheduler)
    if "cluster-multilabel-bag-corel5k" in sections:
        _run_multilabel_bag("corel5k", args.corel5k, external=args.external_scheduler)
    if "cluster-crf-bag-porttinari" in sections:
        _run_crf_bag_real(args.porttinari, args.sentences, external=args.external_scheduler)
    if "cluster-crf-bag" in sections:
        _run_crf_bag(per_part=args.bag_sequences, external=args.external_scheduler)
    if "cluster-crf" in sections:
        _run_crf_cluster(_porttinari(args.porttinari, args.sentences))
    if "cluster-porttinari" in sections:
        _run_cluster(f"Porttinari UPOS+FEATS, {args.sentences} sentences", chain,
                     _porttinari(args.porttinari, args.sentences))
    if "bibtex" in sections:
        _run("bibtex, MultiLabelSSVM(C=0.1, tol=0.01)", multilabel, _bibtex(args.bibtex),
             configs, args.rounds)
    if "corel5k" in sections:
        _run("corel5k, MultiLabelSSVM(C=0.1, tol=0.01)", multilabel,
             _bibtex(args.corel5k), configs, args.rounds)
    if "bibtex-lookalike" in sections:
        _run("bibtex look-alike (4,880 samples, 159 labels, 1,836 words), "
             "MultiLabelSSVM(C=0.1, tol=0.01)", multilabel, _bibtex_lookalike(), configs,
             args.rounds)


if __name__ == "__main__":
    main()
