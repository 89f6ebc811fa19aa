"""Benchmark: streaming synthetic users to Parquet (issue 4: 10M users x 4 weeks <= 30 s on
CPU with bounded memory).

Prints the seconds, users per second and peak RSS of ``sample_to_file`` (draw + dedupe +
Parquet write, chunked and overlapped), and the time of the draw alone. Without ``--model``
a random T = 500, r = 4, k = 5 model over taxonomy v2 is used: the throughput does not depend
on the parameter values (alias tables make every slot draw O(1)).

Run: ``.venv/bin/python benchmarks/bench_sample.py [--users 10000000] [--model DIR]
[--format parquet|tfrecord] [--device cpu|cuda|auto]``. ``--device cuda`` draws with the PyTorch
path on the GPU (the same users bit for bit); ``cpu`` (the default) with the numba kernel.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import time
from pathlib import Path

import numpy as np

from topicslab.model import TypeMixture, load_model, sample, sample_to_file
from topicslab.taxonomy import load


def peak_rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--users", type=int, default=10_000_000)
    ap.add_argument("--weeks", type=int, default=4)
    ap.add_argument("--model", help="model directory (default: random T=500 model)")
    ap.add_argument("--out", default="/tmp/topicslab-bench/synth.parquet")
    ap.add_argument("--format", default="parquet", choices=["parquet", "tfrecord"])
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--chunk-users", type=int, default=1 << 20)
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda", "auto"],
                    help="cpu: numba kernel; cuda: PyTorch on the GPU; auto: cuda if available")
    args = ap.parse_args()

    if args.model:
        model = load_model(args.model)
    else:
        rng = np.random.default_rng(0)
        theta = (rng.normal(size=(500, 4, 5, 469)) * 2.0).astype(np.float32)
        model = TypeMixture(theta, load("v2"))
    print(f"device: {args.device}")
    sample(model, 1000, seed=0, device=args.device)  # compilation / cache load / CUDA init
    t0 = time.perf_counter()
    sample(model, min(args.users, 2_000_000), seed=1, weeks=args.weeks, device=args.device)
    t_draw = time.perf_counter() - t0
    print(f"draw only: {min(args.users, 2_000_000):,} users in {t_draw:.2f} s "
          f"({min(args.users, 2_000_000) / t_draw:,.0f} users/s)")
    out = Path(args.out)
    times = []
    for i in range(args.repeats):
        t0 = time.perf_counter()
        files = sample_to_file(model, out, args.users, seed=1 + i, weeks=args.weeks,
                               format=args.format, chunk_users=args.chunk_users,
                               progress=False, device=args.device)
        times.append(time.perf_counter() - t0)
    size = sum(os.path.getsize(f) for f in files)
    med = statistics.median(times)
    print(f"sample_to_file {args.format}: {args.users:,} users x {args.weeks} weeks: median "
          f"{med:.2f} s of {len(times)} ({', '.join(f'{t:.2f}' for t in times)}); "
          f"{args.users / med:,.0f} users/s; {len(files)} file(s), {size / 1e6:.0f} MB; "
          f"peak RSS {peak_rss_gb():.2f} GB")


if __name__ == "__main__":
    main()
