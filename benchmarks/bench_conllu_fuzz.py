"""Fuzzed CoNLL-U input: the reader and ``tag predict`` give a result or a
clean error, never a traceback.

The first ``--sentences`` sentences of the shared Porttinari corpus are the
seed file (a ``tag train`` model is fitted on them once).  Each case mutates
it with seeded byte flips, cuts and insertions (a third of the cases as
gzip, mutated after compression), then:

* ``read_conllu`` on the bytes: a result, ``ValueError`` or ``TypeError``;
  anything else is counted as a failure and its first instances printed.
* ``structlearn tag predict MODEL FILE`` through the command's own entry
  point (in process): exit status 0 or 1 with one ``error:`` line on
  stderr; an exception escaping the command is a failure.

Usage::

    .venv/bin/python benchmarks/bench_conllu_fuzz.py [--cases 10000] [--seed 0]
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

import numpy as np
from _fuzz import report_failures

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "..", "..", "shared", "data", "porttinari_pos.conllu.gz")


def seed_text(n_sentences):
    with gzip.open(CORPUS, "rt", encoding="utf-8") as fh:
        blocks, cur = [], []
        for line in fh:
            cur.append(line)
            if line.strip() == "":
                blocks.append("".join(cur))
                cur = []
                if len(blocks) == n_sentences:
                    break
    return "".join(blocks)


def mutate(base, rng, gz):
    raw = bytearray(gzip.compress(base) if gz else base)
    for _ in range(int(rng.integers(1, 6))):
        op = int(rng.integers(4))
        pos = int(rng.integers(len(raw))) if raw else 0
        if op == 0 and raw:
            raw[pos] = int(rng.integers(256))
        elif op == 1:
            raw = raw[:pos]
        elif op == 2:
            raw[pos:pos] = bytes(rng.integers(0, 256, size=int(rng.integers(1, 4)),
                                              dtype=np.uint8))
        else:  # structural: a tab, newline or digit where it hurts
            raw[pos:pos] = bytes([int(rng.choice([9, 10, 48, 49, 45, 46, 95]))])
    return bytes(raw)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sentences", type=int, default=30)
    args = ap.parse_args()

    from structlearn.__main__ import main as cli
    from structlearn.datasets import read_conllu

    base = seed_text(args.sentences).encode("utf-8")
    rng = np.random.default_rng(args.seed)
    reader = collections.Counter()
    command = collections.Counter()
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        seed_file = os.path.join(tmp, "seed.conllu")
        with open(seed_file, "wb") as fh:
            fh.write(base)
        model = os.path.join(tmp, "m.joblib")
        with contextlib.redirect_stderr(io.StringIO()):
            assert cli(["tag", "train", "--model", model, "--estimator", "perceptron",
                        "--quiet", seed_file]) == 0
        t0 = time.perf_counter()
        for case in range(args.cases):
            gz = case % 3 == 0
            data = mutate(base, rng, gz)
            try:
                read_conllu(io.BytesIO(data))
                reader["ok"] += 1
            except (ValueError, TypeError) as exc:
                reader[type(exc).__name__] += 1
            except Exception as exc:  # noqa: BLE001 - what the benchmark counts
                reader["other: " + type(exc).__name__] += 1
                failures.append(("read_conllu", case, repr(exc)[:200]))
            path = os.path.join(tmp, "in.conllu.gz" if gz else "in.conllu")
            with open(path, "wb") as fh:
                fh.write(data)
            err = io.StringIO()
            try:
                with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
                    status = cli(["tag", "predict", model, path])
                message = err.getvalue()
                clean = status == 0 or (status in (1, 2) and "error:" in message
                                        and "Traceback" not in message)
                command["exit %d" % status] += 1
                if not clean:
                    failures.append(("tag predict", case, message[-200:]))
            except BaseException as exc:  # noqa: BLE001
                command["escaped: " + type(exc).__name__] += 1
                failures.append(("tag predict", case, repr(exc)[:200]))
        seconds = time.perf_counter() - t0
    print(f"{args.cases} mutated files ({args.sentences}-sentence seed, a third gzip), "
          f"{seconds:.1f} s")
    print("read_conllu:", dict(reader))
    print("tag predict:", dict(command))
    return report_failures(failures)


if __name__ == "__main__":
    sys.exit(main())
