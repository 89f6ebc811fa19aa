"""Benchmark: exact pair counts (bounding + counting) for 10M users x 2 weeks, k = 5.

Prints the median wall time of ``bound_contributions`` + ``pair_counts`` over 3 runs (after a
warm-up for numba compilation) and the time of the discrete Gaussian noise for ~330K counts.
Target (issue 3): <= 15 s on a 2-core machine. Run: ``.venv/bin/python benchmarks/bench_dp.py``.
"""

from __future__ import annotations

import statistics
import sys
import time

import numpy as np

from topicslab.dp import RandomWords, bound_contributions, discrete_gaussian, pair_counts


def main(n: int = 10_000_000, repeats: int = 3) -> None:
    m, k = 469, 5
    rng = np.random.default_rng(0)
    # distinct sorted topics per user-week: argpartition of random keys is too slow at 10M,
    # so draw 5 offsets from disjoint ranges (distinct by construction)
    base = rng.integers(0, m // k, size=(n, 2, k), dtype=np.int16)
    sets = (base + np.arange(k, dtype=np.int16) * (m // k)).astype(np.int16)
    bound_contributions(sets[:1000], m, k=k, seed=0)
    pair_counts(bound_contributions(sets[:1000], m, k=k, seed=0)[0], m)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        bounded, _ = bound_contributions(sets, m, k=k, seed=0)
        pair_counts(bounded, m)
        times.append(time.perf_counter() - t0)
        del bounded
    t0 = time.perf_counter()
    discrete_gaussian(m * (m - 1) // 2 * 2 + m * m, 50.0, RandomWords())
    t_noise = time.perf_counter() - t0
    print(f"bound+count {n:,} users x 2 weeks: median {statistics.median(times):.2f} s "
          f"(runs: {', '.join(f'{t:.2f}' for t in times)})")
    print(f"discrete Gaussian noise, {m * (m - 1) + m * m:,} counts (os.urandom): {t_noise:.2f} s")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000_000)
