"""Benchmark ``solve_map`` against toulbar2 on whole families of generated
weighted constraint networks, not on hand-picked networks.

Run: ``.venv/bin/python benchmarks/bench_wcsp_families.py --seeds 50-54``
(about 15 minutes at the default 20 s limit).  Each network
(``bench_map``'s ``wcsp{n}_d{D}_f{F}_s{seed}``) is solved by each method in
its own process (``bench_map.run_pair``: kernels compiled before the clock
starts; toulbar2's time includes reading the network).  Per network it prints
both times and statuses; at the end, over the networks toulbar2 proves, the
geometric mean of the time ratio, how many are proved in at most toulbar2's
time, and the summed times; over the others, the score differences.
``--before <checkout>`` also runs the method from that checkout
(``PYTHONPATH``), between this one's run and toulbar2's on each network, and
summarizes both: an A/B on the same machine state.

The default families are those where toulbar2 and the soft arc search are
closest (proofs of 0.05-20 s); pick seeds that no tuning has looked at.
``--instances`` runs any networks ``bench_map`` loads instead (random sparse
graphs ``random{n}_p{P}_k{k}_s{seed}``, grids, UAI stems) the same way.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_map import run_pair  # noqa: E402

FAMILIES = "40:20:30,50:15:30,50:20:30,60:15:30,60:10:30,70:10:30,45:20:35,50:15:40"


def seed_range(text):
    """``"50-54"`` or ``"50,52"`` as a list of ints."""
    if "-" in text:
        lo, hi = (int(v) for v in text.split("-"))
        return list(range(lo, hi + 1))
    return [int(v) for v in text.split(",")]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--families", default=FAMILIES,
                    help="comma-separated n:D:F (variables, largest domain, %% forbidden)")
    ap.add_argument("--seeds", default="50-54")
    ap.add_argument("--instances", default=None,
                    help="comma-separated networks bench_map loads (random graphs, grids, UAI "
                         "stems), in place of the families and seeds")
    ap.add_argument("--time-limit", type=float, default=20.0)
    ap.add_argument("--method", default="exact")
    ap.add_argument("--before", default=None,
                    help="a second checkout whose method runs too, network by network "
                         "between this one's and toulbar2's (the same machine state for both)")
    args = ap.parse_args()

    names = [f"wcsp{n}_d{d}_f{f}_s{s}" for n, d, f in
             (fam.split(":") for fam in args.families.split(",")) for s in seed_range(args.seeds)]
    if args.instances:
        names = args.instances.split(",")
    width = max(22, max(len(name) for name in names) + 1)
    print(f"{'network':<{width}}{args.method:>10}{'status':>12}{'toulbar2':>10}{'status':>12}"
          f"{'ratio':>7}{'score diff':>12}" + (f"{'before':>10}{'status':>12}" if args.before
                                               else ""))
    runs = {"": [], "before": []}
    for name in names:
        ours = run_pair(args.method, name, args.time_limit)
        before = _run_from(args.before, args.method, name, args.time_limit) if args.before else {}
        peer = run_pair("toulbar2", name, args.time_limit)
        if "error" in ours or "error" in peer or "error" in before:
            error = ours.get("error") or peer.get("error") or before["error"]
            print(f"{name:<{width}} error: {error}")
            continue
        line = f"{name:<{width}}{ours['time']:>10.3f}{ours['status']:>12}{peer['time']:>10.3f}"
        line += f"{peer['status']:>12}"
        if peer["status"] == "optimal":
            line += f"{ours['time'] / peer['time'] if ours['status'] == 'exact' else np.inf:>7.2f}"
        else:
            line += f"{'':>7}{ours['score'] - peer['score']:>+12.2f}"
        if before:
            line += f"{before['time']:>10.3f}{before['status']:>12}"
            runs["before"].append((before, peer))
        runs[""].append((ours, peer))
        print(line, flush=True)
    for label, pairs in runs.items():
        if pairs:
            _summary(f"{args.method} {label}".strip(), pairs)


def _run_from(checkout, method, name, time_limit):
    """:func:`bench_map.run_pair` with ``checkout``'s structlearn."""
    saved = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.path.abspath(checkout)
    try:
        return run_pair(method, name, time_limit)
    finally:
        if saved is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = saved


def _summary(label, pairs):
    """Over ``(ours, toulbar2's)`` results: the networks toulbar2 proves (how
    many ``label`` proves, how many in at most toulbar2's time, the geometric
    mean time ratio, the summed times), and the score differences on the
    others."""
    proved = [(o, p) for o, p in pairs if p["status"] == "optimal"]
    if proved:
        ratios = np.array([o["time"] / p["time"] if o["status"] == "exact" else np.inf
                           for o, p in proved])
        finite = np.isfinite(ratios)
        print(f"toulbar2 proves {len(proved)}: {label} proves {int(finite.sum())} of them, "
              f"{int((ratios <= 1.0).sum())} in at most its time; geometric mean ratio "
              f"{np.exp(np.mean(np.log(ratios[finite]))):.3f} (over those proved); summed time "
              f"{sum(o['time'] for o, _ in proved):.1f} s against "
              f"{sum(p['time'] for _, p in proved):.1f} s")
    diffs = [o["score"] - p["score"] for o, p in pairs if p["status"] != "optimal"]
    if diffs:
        print(f"unproven by toulbar2: {len(diffs)}, {label}'s score differences "
              + ", ".join(f"{d:+.2f}" for d in diffs))

if __name__ == "__main__":
    main()
