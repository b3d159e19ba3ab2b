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

The default families are those where toulbar2 and the soft arc search are
closest (proofs of 0.05-20 s); pick seeds that no tuning has looked at.
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
    ap.add_argument("--time-limit", type=float, default=20.0)
    ap.add_argument("--method", default="exact")
    args = ap.parse_args()

    names = [f"wcsp{n}_d{d}_f{f}_s{s}" for n, d, f in
             (fam.split(":") for fam in args.families.split(",")) for s in seed_range(args.seeds)]
    print(f"{'network':<22}{args.method:>10}{'status':>12}{'toulbar2':>10}{'status':>12}"
          f"{'ratio':>7}{'score diff':>12}")
    ratios, wins, ours_sum, peer_sum, diffs = [], 0, 0.0, 0.0, []
    for name in names:
        ours = run_pair(args.method, name, args.time_limit)
        peer = run_pair("toulbar2", name, args.time_limit)
        if "error" in ours or "error" in peer:
            print(f"{name:<22} error: {ours.get('error') or peer.get('error')}")
            continue
        ours_proved = ours["status"] in ("exact", "optimal")
        peer_proved = peer["status"] == "optimal"
        line = (f"{name:<22}{ours['time']:>10.3f}{ours['status']:>12}{peer['time']:>10.3f}"
                f"{peer['status']:>12}")
        if peer_proved:
            ratio = ours["time"] / peer["time"] if ours_proved else np.inf
            ratios.append(ratio)
            wins += ratio <= 1.0
            ours_sum += ours["time"]
            peer_sum += peer["time"]
            line += f"{ratio:>7.2f}"
        else:
            diffs.append(ours["score"] - peer["score"])
            line += f"{'':>7}{diffs[-1]:>+12.1f}"
        print(line, flush=True)
    if ratios:
        finite = np.isfinite(ratios)
        print(f"toulbar2 proves {len(ratios)}: {args.method} proves {int(finite.sum())} of them, "
              f"{wins} in at most its time; geometric mean ratio "
              f"{np.exp(np.mean(np.log(np.asarray(ratios)[finite]))):.3f} (over those proved); "
              f"summed time {ours_sum:.1f} s against {peer_sum:.1f} s")
    if diffs:
        print(f"unproven by toulbar2: {len(diffs)}, score differences "
              + ", ".join(f"{d:+.0f}" for d in diffs))


if __name__ == "__main__":
    main()
