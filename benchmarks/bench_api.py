"""Throughput of the Topics API answers: 10M users x 4 weeks x 2 sites (target <= 10 s).

    python benchmarks/bench_api.py [--users 10000000] [--repeats 5]

Prints the median wall time of ``topicslab.api.answers`` over several runs (after one warm-up
run that also compiles the kernel) and the answers per second.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from topicslab.api import answers


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--users", type=int, default=10_000_000)
    ap.add_argument("--weeks", type=int, default=4)
    ap.add_argument("--sites", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    # profiles: 5 distinct sorted topics per user-week (content does not affect speed)
    base = np.sort(np.argsort(rng.random((1000, 469)), axis=1)[:, :5], axis=1).astype(np.int16)
    sets = base[rng.integers(0, 1000, size=(args.users, args.weeks))]
    answers(sets[:1000], args.sites)  # compile
    times = []
    for rep in range(args.repeats):
        t0 = time.perf_counter()
        out = answers(sets, args.sites, seed=rep)
        times.append(time.perf_counter() - t0)
    med = statistics.median(times)
    n = out.size
    print(f"answers: {args.users:,} users x {args.weeks} weeks x {args.sites} sites = {n:,}")
    print(f"median {med:.3f} s over {args.repeats} runs (min {min(times):.3f}, "
          f"max {max(times):.3f}); {n / med / 1e6:.1f} M answers/s; target <= 10 s")


if __name__ == "__main__":
    main()
