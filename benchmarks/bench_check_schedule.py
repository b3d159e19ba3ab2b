"""The certificate schedule (``check_every="auto"``): fits timed, and schedules replayed.

Default: one-thread fits to the 1 % certified gap, ``SequenceSSVM(C=0.1,
tol=0.01)`` on Porttinari UPOS+FEATS (1,000 sentences) and on its chain
look-alike, ``MultiLabelSSVM(C=0.1, tol=0.01)`` on bibtex, corel5k and
bibtex's look-alike (``bench_parallel_fit``'s tasks): wall seconds, passes,
checks, the final gap and the held-out score.  Run it from two checkouts in
turn (``PYTHONPATH``) to compare two schedules.

``--replay``: each task fitted once with a check after every pass (no lag)
down to a 0.2 % gap, then the schedule replayed over those certified gaps
for ``--lookahead`` x ``--max-interval`` at ``--tols``: the stopping pass,
the checks, and the cost (passes plus checks weighed by the measured check
time in passes) against the default schedule.  ``--logs``: the same
replay over ``bench_fit_cores.py --verbose`` logs (checks every 10th pass,
the gaps in between interpolated).  Chains
take a lagged check's value three passes later (``CHECK_LAG``) where the
fit is large enough.

Usage::

    .venv/bin/python benchmarks/bench_check_schedule.py [--replay]
        [--data-dir ../shared/data] [--lookahead 0.1 0.2 0.3] [--max-interval 10 20]
        [--max-share 0 0.25] [--logs fit1.log fit2.log]
"""

import argparse
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_parallel_fit import _bibtex, _bibtex_lookalike, _lookalike, _porttinari  # noqa: E402


def _tasks(data_dir):
    from structlearn.estimators import MultiLabelSSVM, SequenceSSVM

    ml = os.path.join(data_dir, "multilabel")
    return [
        ("Porttinari", lambda: _porttinari(os.path.join(data_dir, "porttinari_pos.conllu.gz"),
                                           1000), SequenceSSVM),
        ("chain look-alike", _lookalike, SequenceSSVM),
        ("bibtex", lambda: _bibtex(os.path.join(ml, "bibtex.npz")), MultiLabelSSVM),
        ("corel5k", lambda: _bibtex(os.path.join(ml, "corel5k.npz")), MultiLabelSSVM),
        ("bibtex look-alike", _bibtex_lookalike, MultiLabelSSVM),
    ]


def _timed(tasks):
    print("| task | fit s | passes | checks | final gap | held-out |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, make, Est in tasks:
        X, y, Xt, yt = make()
        Est(C=0.1, max_iter=2, random_state=0).fit(X[:50], y[:50])  # compiled
        t0 = time.perf_counter()
        m = Est(C=0.1, tol=0.01, max_iter=1000, random_state=0).fit(X, y)
        wall = time.perf_counter() - t0
        h = m.history_
        checks = sum(np.isfinite(r["primal"]) for r in h)
        print(f"| {name} | {wall:.2f} | {len(h)} | {checks} | {h[-1]['relative_gap']:.4f} | "
              f"{m.score(Xt, yt):.4f} |", flush=True)


def replay(gaps, tol, every, lag, lookahead, max_interval, max_share=0.0):
    """``(stopping pass, checks)`` of the schedule (:class:`CheckSchedule`
    with these ``LOOKAHEAD``, ``MAX_INTERVAL`` and ``MAX_SHARE``) over the certified gap of
    every pass (``gaps[p - 1]``), lagged checks taken ``lag`` passes later
    (0: at once, one at a time) and confirmed at the pass that takes them;
    the stopping pass is None when the gaps never meet ``tol``."""
    from structlearn.learners._ssvm_common import CheckSchedule

    schedule = type("Replayed", (CheckSchedule,), {"LOOKAHEAD": lookahead,
                                                   "MAX_INTERVAL": max_interval,
                                                   "MAX_SHARE": max_share})
    sched = schedule(every, adaptive=True, tol=tol)
    pending, checks = None, 0
    for p in range(1, len(gaps) + 1):
        if lag == 0:
            if sched.due(p, len(gaps) + 1):
                checks += 1
                if gaps[p - 1] <= tol:
                    return p, checks
                sched.checked(p, gaps[p - 1])
            continue
        confirm = False
        if pending is not None and p - pending >= lag:
            sched.checked(pending, gaps[pending - 1])
            confirm = gaps[pending - 1] <= tol
            pending = None
        if confirm:
            checks += 1
            if gaps[p - 1] <= tol:
                return p, checks
            sched.checked(p, gaps[p - 1])
        elif pending is None and sched.due(p, len(gaps) + 1):
            checks += 1
            pending = p
    return None, checks


def _replayed(tasks, args):
    """Every task fitted with a check after every pass: ``(name, gaps,
    every, lag, check cost in passes)`` per task."""
    import structlearn.learners._lagged_checks as lagged
    from structlearn.estimators import SequenceSSVM

    runs = []
    for name, make, Est in tasks:
        X, y = make()[:2]
        Est(C=0.1, max_iter=2, random_state=0).fit(X[:50], y[:50])
        saved = lagged.LAGGED_CHECKS_MIN_ENTRIES
        lagged.LAGGED_CHECKS_MIN_ENTRIES = 1 << 62  # every value at its own pass
        try:
            m = Est(C=0.1, tol=0.002, max_iter=600, random_state=0, check_every=1).fit(X, y)
        finally:
            lagged.LAGGED_CHECKS_MIN_ENTRIES = saved
        h = m.history_
        steps = np.diff([0.0] + [r["time"] for r in h])
        passes = np.array([r["pass_time"] for r in h])
        ratio = float(np.median(steps - passes) / np.median(passes))
        if Est is SequenceSSVM:
            K = m.classes_.shape[0]
            n_scores = sum(x.shape[0] for x in X) * K
            every, lag = max(1, K // 100), (3 if n_scores >= saved else 0)
        else:
            every, lag = 1, 0
        runs.append((name, [r["relative_gap"] for r in h], every, lag, ratio))
        print(f"{name}: {len(h)} passes, a check {ratio:.2f} passes, base interval {every}, "
              f"lag {lag}", flush=True)
    return runs


def _logged(paths, every):
    """Runs from ``--verbose`` logs of fits (``bench_fit_cores.py``) that
    checked every ``every``-th pass: the gaps between two checks
    interpolated on a log scale, extended past the last one at its last
    rate; a check's cost is the time the passes took beyond their pass
    times and the median such overhead, per check, in median pass times."""
    import re

    runs = []
    for path in paths:
        gap, step, pass_time = {}, {}, {}
        last = 0.0
        for line in open(path):
            m = re.search(r"iter (\d+): (.*) pass ([\d.]+)s elapsed ([\d.]+)s", line)
            if not m:
                continue
            p, elapsed = int(m.group(1)), float(m.group(4))
            g = re.search(r"rel\. gap ([\d.e+-]+)", m.group(2))
            if g:
                gap[p] = float(g.group(1))
            if p not in step:  # a lagged check's line repeats its pass
                step[p], pass_time[p] = elapsed - last, float(m.group(3))
                last = elapsed
        ps = np.array(sorted(gap))
        lg = np.log([gap[p] for p in ps])
        rate = (lg[-1] - lg[-2]) / (ps[-1] - ps[-2])
        x = np.arange(1, 3 * ps[-1] + 1)
        gaps = np.exp(np.where(x > ps[-1], lg[-1] + rate * (x - ps[-1]), np.interp(x, ps, lg)))
        passes = np.array([pass_time[p] for p in sorted(pass_time)])
        over = np.array([step[p] for p in sorted(step)]) - passes
        # (a lagged check's time shows in a later pass's step)
        ratio = float((over.sum() - over.size * np.median(over)) / ps.size / np.median(passes))
        name = os.path.basename(path)
        runs.append((name, list(gaps), every, 0, ratio))
        print(f"{name}: checks up to pass {ps[-1]}, a check {ratio:.2f} passes, base interval "
              f"{every}", flush=True)
    return runs


def _replay_table(runs, args):
    from structlearn.learners._ssvm_common import CheckSchedule as S

    default = (S.LOOKAHEAD, S.MAX_INTERVAL, S.MAX_SHARE)
    for tol in args.tols:
        print(f"\ntol {tol}: stopping pass / checks (cost against the default "
              f"{default[0]} / {default[1]} / {default[2]})\n")
        print("| lookahead | longest interval | share | " + " | ".join(r[0] for r in runs)
              + " |")
        print("|---:|---:|---:|" + "---|" * len(runs))
        for look in args.lookahead:
            for longest in args.max_interval:
                for share in args.max_share:
                    cells = []
                    for name, gaps, every, lag, ratio in runs:
                        stop, checks = replay(gaps, tol, every, lag, look, longest, share)
                        base = replay(gaps, tol, every, lag, *default)
                        if stop is None or base[0] is None:
                            cells.append("n/a")
                            continue
                        cost = (stop + ratio * checks) / (base[0] + ratio * base[1])
                        cells.append(f"{stop} / {checks} ({cost:.3f}x)")
                    print(f"| {look} | {longest} | {share} | " + " | ".join(cells) + " |",
                          flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", default=os.path.join(os.path.dirname(__file__), "..", "..",
                                                       "shared", "data"))
    ap.add_argument("--replay", action="store_true")
    ap.add_argument("--tols", type=float, nargs="+", default=[0.02, 0.01, 0.005])
    ap.add_argument("--lookahead", type=float, nargs="+", default=[0.1, 0.2, 0.3])
    ap.add_argument("--max-interval", type=int, nargs="+", default=[10, 20])
    ap.add_argument("--max-share", type=float, nargs="+", default=[0.0],
                    help="the longest interval is at least this share of the passes run")
    ap.add_argument("--logs", nargs="+", default=None,
                    help="replay --verbose logs of bench_fit_cores.py fits instead of "
                         "fitting the tasks (checks every --log-every passes)")
    ap.add_argument("--log-every", type=int, default=10)
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    if args.logs:
        _replay_table(_logged(args.logs, args.log_every), args)
    elif args.replay:
        _replay_table(_replayed(_tasks(args.data_dir), args), args)
    else:
        _timed(_tasks(args.data_dir))


if __name__ == "__main__":
    main()
