"""Throughput of the reference population generator (targets: 1M x 4 weeks <= 30 s;
10M x 4 weeks <= 5 min and <= 4 GB peak RSS).

    python benchmarks/bench_population.py [--users 1000000] [--repeats 3] [--big 10000000]

Prints the median wall time of ``topicslab.population.generate`` over several runs (after a
small warm-up run that loads the cached kernels), then optionally one run at ``--big`` users,
and the process's peak RSS (``resource.getrusage``). The calibration table of the 1M run is
printed with ``--table``.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import time

from topicslab.population import calibration_table, generate


def _peak_rss_mb() -> float:
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kb / 1024.0 if sys.platform != "darwin" else kb / 2**20


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--users", type=int, default=1_000_000)
    ap.add_argument("--weeks", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--big", type=int, default=0, help="one extra run at this many users")
    ap.add_argument("--table", action="store_true", help="print the calibration table")
    args = ap.parse_args()
    generate(1_000, args.weeks)  # warm-up: load/compile the kernels
    times = []
    sets = None
    for rep in range(args.repeats):
        t0 = time.perf_counter()
        sets = generate(args.users, args.weeks, seed=rep)
        times.append(time.perf_counter() - t0)
    assert sets is not None
    med = statistics.median(times)
    print(f"population: {args.users:,} users x {args.weeks} weeks: median {med:.2f} s over "
          f"{args.repeats} runs (min {min(times):.2f}, max {max(times):.2f}); "
          f"{args.users / med / 1e6:.2f} M users/s; padded user-weeks "
          f"{sets.metadata['padded_share'] * 100:.1f}%; peak RSS {_peak_rss_mb():.0f} MB")
    if args.table:
        print(calibration_table(sets).to_text())
    del sets
    if args.big:
        t0 = time.perf_counter()
        big = generate(args.big, args.weeks, seed=99)
        dt = time.perf_counter() - t0
        print(f"population: {args.big:,} users x {args.weeks} weeks: {dt:.1f} s; "
              f"{args.big / dt / 1e6:.2f} M users/s; output {big.sets.nbytes / 2**20:.0f} MB; "
              f"peak RSS {_peak_rss_mb():.0f} MB")


if __name__ == "__main__":
    main()
