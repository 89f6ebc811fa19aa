"""Benchmark: the exact discrete Gaussian noise of a 4-week release (``dp.noise``).

The default release's seven Gaussian queries (4 within-week tables of C(469, 2) counts, 3
across-week tables of 469² counts) at their noise scale σ ≈ 63.1 (ε = ln 3, δ = 1e-15, tight
accounting, k = 5): 770K samples. Prints the median of ``--repeats`` draws after a warm-up
(numba's compilation or cache load), from ``os.urandom`` and from a seeded stream, and the
share of the time the words themselves take.

Run: ``.venv/bin/python benchmarks/bench_noise.py``.
"""

from __future__ import annotations

import argparse
import statistics
import time

from topicslab.dp import RandomWords, discrete_gaussian

M = 469
SAMPLES = 4 * (M * (M - 1) // 2) + 3 * M * M
SIGMA = 63.141834673097314


def _median(draw: object, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        draw()  # type: ignore[operator]
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    discrete_gaussian(1000, SIGMA, RandomWords())  # warm-up
    secure = _median(lambda: discrete_gaussian(SAMPLES, SIGMA, RandomWords()), args.repeats)
    seeded = _median(lambda: discrete_gaussian(SAMPLES, SIGMA, RandomWords(seed=1)),
                     args.repeats)
    words = RandomWords()
    raw = _median(lambda: words.words(18 * SAMPLES), args.repeats)
    print(f"{SAMPLES:,} discrete Gaussian samples, sigma {SIGMA:.2f}: os.urandom "
          f"{secure:.3f} s, seeded {seeded:.3f} s (median of {args.repeats}); "
          f"the words alone (18 a sample) from os.urandom: {raw:.3f} s")


if __name__ == "__main__":
    main()
