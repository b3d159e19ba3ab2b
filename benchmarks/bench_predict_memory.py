"""Extra memory of one prediction call over about a million tokens.

The OCR letters (the bundled set, 128 binary pixel features, 26 classes) are
repeated until the input holds ``--tokens`` tokens (the repeated sequences
share memory, as a caller's list of views would).  A ``SequenceSSVM`` and a
``SequenceCRF`` are fitted on fold 1, then each of ``predict`` (both) and
``predict_marginals`` (CRF) runs once on the whole list in a process of its
own: "extra" is the peak resident memory the call added (its output
included: the marginals alone are ``n_tokens x 26`` floats), checked equal to
the same prediction made in chunks of 2,000 sequences.

``--sparse``: a look-alike of another kind instead: sparse CSR sequences
from :func:`structlearn.datasets.make_chain_data` (50 labels, 5,000 binary
features, 20 a token, sequences of 20 tokens), repeated to ``--tokens``.

Usage::

    .venv/bin/python benchmarks/bench_predict_memory.py [--tokens 1029094] [--sparse]
"""

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

from _memory import peak_kb, reset_peak, rss_kb

HERE = os.path.dirname(os.path.abspath(__file__))


def repeated_input(n_tokens):
    from structlearn.datasets import load_ocr_letters

    data = load_ocr_letters()
    X, y, folds = data.X, data.y, data.folds
    reps = -(-n_tokens // sum(len(x) for x in X))
    Xall = (list(X) * reps)
    lengths = np.cumsum([len(x) for x in Xall])
    n_seq = int(np.searchsorted(lengths, n_tokens)) + 1
    return X, y, folds, Xall[:n_seq]


def sparse_input(n_tokens):
    """Sparse chains (50 labels, 5,000 features): 500 training sequences and a
    set of 2,000 repeated to ``n_tokens`` tokens."""
    from structlearn.datasets import make_chain_data

    X, y = make_chain_data(2500, length=20, n_labels=50, n_features=5000, density=0.004,
                           random_state=0)
    reps = -(-n_tokens // sum(x.shape[0] for x in X[500:]))
    Xall = list(X[500:]) * reps
    lengths = np.cumsum([x.shape[0] for x in Xall])
    return X[:500], y[:500], Xall[:int(np.searchsorted(lengths, n_tokens)) + 1]


def worker(estimator, method, n_tokens, sparse):
    from structlearn.estimators import SequenceCRF, SequenceSSVM

    if sparse:
        Xtr, ytr, Xbig = sparse_input(n_tokens)
    else:
        X, y, folds, Xbig = repeated_input(n_tokens)
        train = [i for i, f in enumerate(folds) if f == 1]
        Xtr, ytr = [X[i] for i in train], [y[i] for i in train]
    if estimator == "ssvm":
        model = SequenceSSVM(C=0.1, max_iter=5, random_state=0).fit(Xtr, ytr)
    else:
        model = SequenceCRF(max_iter=20).fit(Xtr, ytr)
    call = getattr(model, method)
    call(Xbig[:50])  # compiled before the measurement
    reset_peak()
    before = rss_kb()
    t0 = time.perf_counter()
    out = call(Xbig)
    seconds = time.perf_counter() - t0
    extra_mb = (peak_kb() - before) / 1024
    step = 2000
    # marginals: the forward-backward groups sequences into blocks of the
    # input given, so other calls add up in another order (equal to 1e-12)
    same = all(np.allclose(a, b, rtol=0, atol=1e-12) if a.dtype.kind == "f"
               else np.array_equal(a, b)
               for s in range(0, len(Xbig), step)
               for a, b in zip(out[s:s + step], call(Xbig[s:s + step])))
    n_tok = int(sum(x.shape[0] for x in Xbig))
    # the input as one float64 copy would take: dense rows, or CSR entries
    per_token = (12 * Xbig[0].nnz / Xbig[0].shape[0] if hasattr(Xbig[0], "nnz")
                 else 8 * Xbig[0].shape[1])
    input_mb = n_tok * per_token / 2**20
    print(json.dumps(dict(estimator=estimator, method=method, tokens=n_tok,
                          input_dense_mb=round(input_mb, 1), extra_mb=round(extra_mb, 1),
                          seconds=round(seconds, 2), same_as_chunked=bool(same))))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=1029094)
    ap.add_argument("--sparse", action="store_true")
    ap.add_argument("--worker", nargs=2)
    args = ap.parse_args()
    if args.worker:
        worker(*args.worker, args.tokens, args.sparse)
        return
    print("| estimator | call | tokens | input as one float64 copy, MB | extra RSS MB | s | "
          "equal to chunks of 2,000 (marginals to 1e-12) |")
    print("|---|---|---:|---:|---:|---:|---|")
    for est, method in [("ssvm", "predict"), ("crf", "predict"), ("crf", "predict_marginals")]:
        out = subprocess.run([sys.executable, __file__, "--tokens", str(args.tokens),
                              "--worker", est, method] + (["--sparse"] if args.sparse else []),
                             capture_output=True, text=True, cwd=HERE)
        if out.returncode:
            print(out.stderr[-2000:], file=sys.stderr)
            continue
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"| {r['estimator']} | {r['method']} | {r['tokens']} | {r['input_dense_mb']} | "
              f"{r['extra_mb']} | {r['seconds']} | {r['same_as_chunked']} |", flush=True)


if __name__ == "__main__":
    main()
