"""SequenceSSVM (GDMM) on a large-output chain task: peak memory and time per
pass with the weights as sparse rows (the default where a dense weight matrix
would take 1 GiB or more) against the dense (n_features, K) array.

Synthetic chains (``make_chain_data``): 4,000 sequences of 10 tokens (40k
tokens), 50,000 binary features with 12 per token, K = 1,000 labels; defaults
otherwise (``check_every="auto"``: the certificate every 10 passes and after
the last).  Each storage runs in its own process; peak RSS is the process's
high-water mark (``VmHWM``) over the whole run (imports, data, kernels and the
fit); "fit MB" is the part the fit added.

Usage::

    .venv/bin/python benchmarks/bench_ssvm_memory.py [--passes 30] [--tol 0]
"""

import argparse
import json
import os
import subprocess
import sys
import time
import warnings

import numpy as np

from _memory import peak_kb, reset_peak, rss_kb


def worker(storage, passes, tol):
    import structlearn.estimators.ssvm as ssvm_module
    from structlearn.datasets import make_chain_data
    from structlearn.estimators import SequenceSSVM

    warnings.simplefilter("ignore")
    # sparse rows from any size (the default from 2**27 weights), or dense
    ssvm_module.SPARSE_WEIGHTS_MIN_ENTRIES = sys.maxsize if storage == "dense" else 0
    X, y = make_chain_data(4000, length=10, n_labels=1000, n_features=50000,
                           density=12 / 50000, random_state=0)
    Xs, ys = make_chain_data(40, length=5, n_labels=300, n_features=50, random_state=0)
    SequenceSSVM(max_iter=2).fit(Xs, ys)  # kernels compiled / loaded outside the timing
    base = rss_kb()
    reset_peak()
    t0 = time.perf_counter()
    model = SequenceSSVM(max_iter=passes, tol=tol, random_state=0).fit(X, y)
    fit = time.perf_counter() - t0
    h = model.history_
    to_1 = next((r["time"] for r in h if r["relative_gap"] <= 0.01), None)
    coef = model.coef_
    coef_mb = (coef.data.nbytes + coef.indices.nbytes + coef.indptr.nbytes
               if hasattr(coef, "indptr") else coef.nbytes) / 2**20
    print(json.dumps({
        "fit": fit, "passes": len(h), "pass": float(np.median([r["pass_time"] for r in h])),
        "primal": h[-1]["primal"], "gap": h[-1]["relative_gap"], "to_1": to_1,
        "peak": peak_kb() / 1024, "fit_mb": (peak_kb() - base) / 1024, "coef_mb": coef_mb,
        "sparse": hasattr(coef, "indptr"),
    }))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--passes", type=int, default=30)
    ap.add_argument("--tol", type=float, default=0.0, help="stop at this certified gap")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.worker, args.passes, args.tol)
        return
    print(f"K = 1000, 50,000 features (12 per token), 40,000 tokens; up to {args.passes} passes, "
          f"tol {args.tol}\n")
    print("| weights | coef_ | fit s | passes | median s/pass | s to 1% gap | final gap "
          "| primal | peak RSS MB | fit MB | coef_ MB |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    here = os.path.dirname(os.path.abspath(__file__))
    rows = {}
    for storage in ("rows", "dense"):
        out = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", storage,
                              "--passes", str(args.passes), "--tol", str(args.tol)],
                             capture_output=True, text=True, cwd=here)
        lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
        if not lines:
            print(f"| {storage} | failed: {out.stderr.strip().splitlines()[-1:]} |")
            continue
        r = rows[storage] = json.loads(lines[-1])
        to_1 = "n/a" if r["to_1"] is None else f"{r['to_1']:.1f}"
        print(f"| {'sparse rows' if storage == 'rows' else 'dense array'} | "
              f"{'CSR' if r['sparse'] else 'ndarray'} | {r['fit']:.1f} | {r['passes']} | "
              f"{r['pass']:.3f} | {to_1} | {r['gap']:.3g} | {r['primal']:.6f} | "
              f"{r['peak']:.0f} | {r['fit_mb']:.0f} | {r['coef_mb']:.0f} |", flush=True)
    if len(rows) == 2:
        a, b = rows["rows"], rows["dense"]
        print(f"\nsparse rows / dense: time per pass {a['pass'] / b['pass']:.2f}x, fit "
              f"{a['fit'] / b['fit']:.2f}x, peak RSS {a['peak'] / b['peak']:.2f}x; same final "
              f"primal: {a['primal'] == b['primal']}")


if __name__ == "__main__":
    main()
