"""Benchmark the soft arc consistent depth-first search alone on generated
weighted constraint networks, beside toulbar2.

Run: ``.venv/bin/python benchmarks/bench_soft_arc.py`` (about a minute and a
half).  For each network (``bench_map``'s ``wcsp{n}_d{D}_f{F}_s{seed}``
family) it reports the time :class:`SoftArcSearch` takes to prove the
optimum (no local search, no LP: the search as it is), its nodes and time per
node, and toulbar2's time and nodes on the same network in its own process
(its time includes reading the network).  ``--depth-first`` runs the
search without its best-first choice of dives; ``--seeds 50-54`` runs
``bench_wcsp_families``'s families at those seeds instead of the default list.
The totals lines sum the search's times and nodes, and the times of the
networks both prove.  Compare two versions of the search by running the
script from each checkout (``PYTHONPATH=<checkout>``) in turn.
``--memory`` adds the bytes of a path of whole saved nodes (one per level),
the search's state at first (``soft_arc_bytes``) and its trail at the end,
in MB.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_map import load, run_pair  # noqa: E402
from bench_wcsp_families import FAMILIES, seed_range  # noqa: E402

from structlearn.inference.exact.soft_arc import SoftArcSearch  # noqa: E402

# proofs of 0.2-5 s on the shared VM: the sizes where toulbar2 and the search
# are closest (the easy ones take milliseconds, the hard ones run out of time)
DEFAULT = ("wcsp40_d20_f30_s21,wcsp40_d20_f30_s23,wcsp50_d20_f30_s25,wcsp60_d15_f30_s21,"
           "wcsp60_d15_f30_s23,wcsp60_d15_f30_s24,wcsp45_d20_f35_s21,wcsp70_d10_f30_s20,"
           "wcsp70_d10_f30_s22,wcsp70_d10_f30_s23,wcsp70_d10_f30_s24,wcsp50_d15_f40_s20,"
           "wcsp50_d15_f40_s22,wcsp50_d15_f40_s24,wcsp50_d20_f30_s1,wcsp40_d20_f30_s2,"
           "wcsp60_d10_f30_s5,wcsp40_d20_f30_s7")


def toulbar2(name, time_limit):
    """toulbar2's ``(seconds, nodes, proved)`` on network ``name``, in its
    own process (pytoulbar2 keeps options across networks in one process);
    None when it fails (pytoulbar2 missing)."""
    res = run_pair("toulbar2", name, time_limit)
    if "error" in res:
        return None
    return res["time"], res["n_iter"], res["status"] == "optimal"


def _memory(graph, search):
    """Whole saved nodes, the state at first and the trail at the end, in MB."""
    from structlearn.inference.exact.soft_arc import soft_arc_bytes

    n, E = graph.n_vars, graph.n_factors
    K = int(graph.n_states.max())
    state = search.state
    trail = state.trail_values.nbytes + state.trail_blocks.nbytes
    return (f"whole nodes {8 * (n + 1) * (n + 2 * E) * K / 1e6:.1f}, at first "
            f"{soft_arc_bytes(graph) / 1e6:.1f}, trail {trail / 1e6:.1f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instances", default=DEFAULT, help="comma-separated network names")
    ap.add_argument("--seeds", default=None,
                    help="instead of --instances: the families of bench_wcsp_families at "
                         "these seeds (\"50-54\" or \"50,52\")")
    ap.add_argument("--time-limit", type=float, default=10.0)
    ap.add_argument("--no-toulbar2", action="store_true")
    ap.add_argument("--depth-first", action="store_true",
                    help="plain depth-first search (best_first=False)")
    ap.add_argument("--n-jobs", type=int, default=None, help="the search's threads")
    ap.add_argument("--memory", action="store_true",
                    help="whole saved nodes, state at first, trail at the end (MB)")
    args = ap.parse_args()
    names = args.instances.split(",")
    if args.seeds:
        names = [f"wcsp{n}_d{d}_f{f}_s{s}" for n, d, f in
                 (fam.split(":") for fam in FAMILIES.split(",")) for s in seed_range(args.seeds)]

    # compile outside the timings: the kernel for whole saved nodes, then the
    # trail's (a network large enough for the trail, a few nodes)
    warm, _ = load("wcsp30_d5_f50_s0")
    SoftArcSearch(warm).run()
    SoftArcSearch(load("potts25_k8")[0]).run(max_nodes=3)
    print(f"{'network':<22}{'proved':>7}{'time (s)':>10}{'nodes':>9}{'us/node':>9}"
          f"{'tb2 (s)':>9}{'tb2 nodes':>11}{'ratio':>7}")
    ours_total = peer_total = 0.0
    times, nodes = [], []
    for name in names:
        graph, _ = load(name)
        search = SoftArcSearch(graph, best_first=not args.depth_first, n_jobs=args.n_jobs)
        t0 = time.perf_counter()
        search.run(deadline=t0 + args.time_limit)
        seconds = time.perf_counter() - t0
        times.append(seconds)
        nodes.append(search.n_nodes)
        peer = None if args.no_toulbar2 else toulbar2(name, args.time_limit)
        line = (f"{name:<22}{str(search.proved):>7}{seconds:>10.2f}{search.n_nodes:>9}"
                f"{1e6 * seconds / max(search.n_nodes, 1):>9.0f}")
        if peer is not None:
            line += f"{peer[0]:>9.2f}{peer[1]:>11}{seconds / peer[0]:>7.2f}"
            if search.proved and peer[2]:
                ours_total += seconds
                peer_total += peer[0]
        if args.memory:
            line += "  MB: " + _memory(graph, search)
        print(line, flush=True)
    print(f"search: total {sum(times):.2f} s, geometric mean {np.exp(np.log(times).mean()):.3f} s;"
          f" nodes: total {sum(nodes)}, geometric mean {np.exp(np.log(nodes).mean()):.0f}")
    if peer_total:
        print(f"both proved: search {ours_total:.2f} s, toulbar2 {peer_total:.2f} s "
              f"({ours_total / peer_total:.2f}x)")


if __name__ == "__main__":
    main()
