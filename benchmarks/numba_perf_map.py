"""Name numba's compiled functions for ``perf``: a per-function profile of
the kernels (``perf report --sort symbol``), which cProfile sees as one call.

perf reads ``/tmp/perf-<pid>.map`` (start, size, name per line) to name code
that no file maps, as JIT code is.  :func:`write_perf_map` lists every
function of the kernels compiled in this process, so compile them here (an
empty ``NUMBA_CACHE_DIR``: kernels loaded from the cache carry no module to
list), warm them up, write the map, then let perf attach.

Usage (the soft arc search on two networks)::

    NUMBA_CACHE_DIR=$(mktemp -d) .venv/bin/python benchmarks/numba_perf_map.py \\
        --ready /tmp/ready soft-arc wcsp70_d10_f30_s52,wcsp50_d20_f30_s53 &
    while [ ! -s /tmp/ready ]; do sleep 1; done
    perf record -p $(cat /tmp/ready) -o /tmp/perf.data
    perf report -i /tmp/perf.data --no-children --sort symbol

or ``chain-fit`` with a Porttinari sentence count (``SequenceSSVM(C=0.1,
tol=0.01)``, ``--n-jobs``), or ``multilabel-fit`` with a data set of
``../shared/data/multilabel`` (five ``MultiLabelSSVM(C=0.1, tol=0.01)`` fits;
``--n-jobs 2`` with as many ``training_partitions``). A function inlined into
its caller counts as the caller (``inline="always"``); the sizes are the gaps
between the listed starts, so a function's last bytes may be counted to it
alone.
"""

import argparse
import gc
import os
import sys
import time


def write_perf_map(path=None):
    """Write the perf map of every function compiled in this process; returns
    how many were listed."""
    from numba.core.registry import CPUDispatcher

    names = {}
    for obj in gc.get_objects():
        if not isinstance(obj, CPUDispatcher):
            continue
        for overload in obj.overloads.values():
            library = overload.library
            module = getattr(library, "_final_module", None)
            if module is None:  # loaded from the cache: nothing to list
                continue
            for fn in module.functions:
                if fn.is_declaration:
                    continue
                address = library.get_pointer_to_function(fn.name)
                if address:
                    names[address] = fn.name
    starts = sorted(names)
    with open(path or f"/tmp/perf-{os.getpid()}.map", "w") as out:
        for a, b in zip(starts, starts[1:] + [starts[-1] + 4096] if starts else []):
            out.write(f"{a:x} {min(b - a, 1 << 20):x} {names[a]}\n")
    return len(starts)


def _soft_arc(spec, _):
    from bench_map import load

    from structlearn.inference.exact.soft_arc import SoftArcSearch

    SoftArcSearch(load("wcsp30_d5_f50_s0")[0]).run()
    graphs = [load(name)[0] for name in spec.split(",")]
    return lambda: [SoftArcSearch(g).run() for g in graphs]


def _chain_fit(spec, n_jobs):
    import warnings

    from bench_parallel_fit import _porttinari

    from structlearn.estimators import SequenceSSVM

    X, y = _porttinari(os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data",
                                    "porttinari_pos.conllu.gz"), int(spec))[:2]
    warnings.simplefilter("ignore")
    SequenceSSVM(C=0.1, max_iter=30, random_state=0, n_jobs=n_jobs).fit(X, y)
    return lambda: SequenceSSVM(C=0.1, tol=0.01, random_state=0, n_jobs=n_jobs).fit(X, y)


def _multilabel_fit(spec, n_jobs):
    import warnings

    from bench_parallel_fit import _bibtex

    from structlearn.estimators import MultiLabelSSVM

    X, Y = _bibtex(os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data",
                                "multilabel", f"{spec}.npz"))[:2]
    parts = n_jobs if n_jobs > 1 else None
    warnings.simplefilter("ignore")
    MultiLabelSSVM(C=0.1, max_iter=3, random_state=0, n_jobs=n_jobs,
                   training_partitions=parts).fit(X, Y)

    def fits():
        for _ in range(5):
            MultiLabelSSVM(C=0.1, tol=0.01, random_state=0, n_jobs=n_jobs,
                           training_partitions=parts).fit(X, Y)
    return fits


def main():
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("task", choices=["soft-arc", "chain-fit", "multilabel-fit"])
    ap.add_argument("spec", help="network names (soft-arc), sentences (chain-fit) or a "
                                 "multilabel data set (multilabel-fit: bibtex, corel5k)")
    ap.add_argument("--n-jobs", type=int, default=1)
    ap.add_argument("--ready", help="file to write this process's id to once mapped")
    args = ap.parse_args()
    run = {"soft-arc": _soft_arc, "chain-fit": _chain_fit,
           "multilabel-fit": _multilabel_fit}[args.task](args.spec, args.n_jobs)
    print(f"{write_perf_map()} functions mapped", file=sys.stderr)
    if args.ready:
        with open(args.ready, "w") as f:
            f.write(str(os.getpid()))
        time.sleep(1.0)  # for perf to attach
    t0 = time.perf_counter()
    run()
    print(f"{time.perf_counter() - t0:.2f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
