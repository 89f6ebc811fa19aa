"""Reading a topic-set file and counting its weekly statistics (issue 18: the paper preset
reads its population and synthetic files several times and validates each week).

    python benchmarks/bench_read_sets.py FILE [--repeats 3]
    python benchmarks/bench_read_sets.py --users 2000000 --weeks 8   # generated, written first

Prints the median wall seconds of ``topicslab.io.read_sets(FILE)`` and of
``topicslab.population.weekly_empirical_statistics`` on what was read (every week and
transition, as the validation's stationarity check takes them), after one warm-up of each
(the numba kernels' caches), and the process's peak RSS.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from topicslab import io as tio
from topicslab.population import generate, weekly_empirical_statistics


def _median_seconds(fn: Callable[[], object], repeats: int) -> tuple[float, list[float]]:
    fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file", nargs="?", help="a topic-set file (default: generate one)")
    ap.add_argument("--users", type=int, default=1_000_000)
    ap.add_argument("--weeks", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(args.file) if args.file else Path(tmp) / "pop.parquet"
        if not args.file:
            tio.write_sets(path, generate(args.users, args.weeks, seed=0))
        read, reads = _median_seconds(lambda: tio.read_sets(path), args.repeats)
        sets = tio.read_sets(path)
        weekly, counts = _median_seconds(lambda: weekly_empirical_statistics(sets),
                                         args.repeats)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{sets.n_users:,} users x {sets.n_weeks} weeks: read_sets median {read:.2f} s "
          f"({', '.join(f'{t:.2f}' for t in reads)}); weekly statistics median {weekly:.2f} s "
          f"({', '.join(f'{t:.2f}' for t in counts)}); peak RSS {peak:,.0f} MB")


if __name__ == "__main__":
    main()
