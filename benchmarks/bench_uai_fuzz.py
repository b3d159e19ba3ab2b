"""Fuzzed UAI input: the network, evidence and solution readers and
``structlearn map`` give a result or a clean error, never a traceback or a
warning.

The seeds are a small MARKOV network, its evidence and solution files, and
an M-best solution file.  Each case mutates one of them token-wise with
seeded replacements (numbers out of range, NaN, infinity, 1e400,
20-digit integers, words, tabs, newlines, non-ASCII), deletions,
insertions, cuts and doubled tokens (a fifth of the cases gzip), then:

* the file's reader (``read_uai``, ``read_uai_evidence``,
  ``read_uai_solution``, ``read_uai_solutions``): a result or
  ``ValueError``; any other exception, a ``ValueError`` without a message
  or a warning is a failure, counted and its first instances printed;
* for mutated networks and evidence, ``structlearn map`` on them through
  the command's own entry point (in process, ``--no-write``): exit status 0,
  or 1 or 2 with an ``error:`` line and no traceback.

Usage::

    .venv/bin/python benchmarks/bench_uai_fuzz.py [--cases 20000] [--seed 0]
"""

import argparse
import collections
import contextlib
import gzip
import io
import os
import sys
import tempfile
import time
import warnings

import numpy as np
from _fuzz import report_failures

NETWORK = """MARKOV
3
2 3 2
3
1 0
2 0 1
2 1 2
2
 0.3 0.7
6
 1 2 3
 4 5 6
6
 6 5 4
 3 2 1
"""
SEEDS = {"net.uai": NETWORK, "net.uai.evid": "2 0 1 2 0\n", "net.uai.MAP": "MAP\n3 0 1 1\n",
         "net.uai.MBEST": "MBEST 2\n1 -1.5 -1.5 3 0 1 1\n2 -2.0 -1.0 3 1 1 0\n"}
JUNK = ("", "-1", "0", "1e400", "nan", "inf", "-inf", "x", "3.5", "99999999999999999999",
        "-0", "\u00e9", "\t", "\n", "1 2", "MARKOV", "BAYES", "MAP", "MBEST")


def mutate(text, rng):
    tokens = text.replace("\n", " \n ").split(" ")
    for _ in range(int(rng.integers(1, 4))):
        if not tokens:
            break
        op, k = int(rng.integers(5)), int(rng.integers(len(tokens)))
        if op == 0:
            tokens[k] = str(rng.choice(JUNK))
        elif op == 1:
            del tokens[k]
        elif op == 2:
            tokens.insert(k, str(rng.choice(JUNK)))
        elif op == 3:
            tokens = tokens[:k]
        else:
            tokens[k] = tokens[k] * 2
    return " ".join(tokens).replace(" \n ", "\n")


def write(path, text, gz):
    if gz:
        path += ".gz"
        with gzip.open(path, "wt", encoding="utf-8") as fh:
            fh.write(text)
    else:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    from structlearn.__main__ import main as cli
    from structlearn.graphs import read_uai_evidence
    from structlearn.graphs.uai import read_uai, read_uai_solution, read_uai_solutions

    readers = {"net.uai": read_uai, "net.uai.evid": read_uai_evidence,
               "net.uai.MAP": lambda p: read_uai_solution(p, n_vars=3),
               "net.uai.MBEST": read_uai_solutions}
    names = list(SEEDS)
    rng = np.random.default_rng(args.seed)
    outcomes = collections.Counter()
    failures = []
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        good_net = write(os.path.join(tmp, "good.uai"), NETWORK, False)
        for case in range(args.cases):
            name = names[case % len(names)]
            path = write(os.path.join(tmp, name), mutate(SEEDS[name], rng), case % 5 == 0)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    readers[name](path)
                    outcomes[name + " ok"] += 1
                except ValueError as exc:
                    outcomes[name + " ValueError"] += 1
                    if not str(exc):
                        failures.append((case, name, "ValueError without a message"))
                except Exception as exc:  # noqa: BLE001 - what the benchmark counts
                    failures.append((case, name, repr(exc)[:200]))
            if caught:
                failures.append((case, name, "warning: " + str(caught[0].message)[:150]))
            if name not in ("net.uai", "net.uai.evid"):
                continue
            argv = ["map", path, "--no-write", "--no-progress", "--time-limit", "2"]
            if name == "net.uai.evid":
                argv = ["map", good_net, "--evid", path, "--no-write", "--no-progress"]
            err = io.StringIO()
            try:
                with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
                    status = cli(argv)
                message = err.getvalue()
                outcomes[f"map exit {status}"] += 1
                if not (status == 0 or (status in (1, 2) and "error:" in message
                                        and "Traceback" not in message)):
                    failures.append((case, "map " + name, message[-200:]))
            except BaseException as exc:  # noqa: BLE001
                failures.append((case, "map " + name, repr(exc)[:200]))
    seconds = time.perf_counter() - t0
    print(f"{args.cases} mutated files (a fifth gzip), {seconds:.1f} s, seed {args.seed}")
    print(dict(sorted(outcomes.items())))
    return report_failures(failures)


if __name__ == "__main__":
    sys.exit(main())
