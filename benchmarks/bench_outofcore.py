"""Benchmark: the out-of-core DP release (``--engine stream``) on a large Parquet input.

Target (issue 9): 100M users streamed from Parquet within 8 GB peak memory in <= 15 minutes
on the 2-core machine. Two phases, timed separately:

1. generate (if the file is missing): the reference population, chunk by chunk
   (``population.generate_chunks``: globally unique user ids), appended to one Parquet file
   with ``io.SetsWriter`` (1M-user row groups) — only the weeks the statistics use (0, 1);
2. measure: ``stream_statistics`` (bounding + counts + noise + ledger) in a fresh child
   process, so its peak RSS (``ru_maxrss`` of the child) is the release's alone.

Run::

    .venv/bin/python benchmarks/bench_outofcore.py --users 100000000 \
        --path /tmp/m9/pop100m.parquet [--repeats 1] [--keep]

Prints generation time and file size, then per run: wall time, users/s and peak RSS.
The file is deleted at the end unless ``--keep``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
from _outputs import run

GB = 1 << 30


def generate_file(path: Path, users: int, weeks: int, seed: int, chunk: int) -> float:
    """Write the population to ``path`` chunk by chunk; returns seconds."""
    from topicslab.io import SetsWriter
    from topicslab.population import generate_chunks

    t0 = time.perf_counter()
    path.parent.mkdir(parents=True, exist_ok=True)
    with SetsWriter(path, "v2", 5, weeks, {"generator": "bench_outofcore", "seed": seed}) as w:
        for part in generate_chunks(users, weeks, chunk_users=chunk, seed=seed, progress=True):
            w.write(part)
    return time.perf_counter() - t0


def measure_child(path: str, chunk: int) -> None:
    """Child process: one release; prints a JSON line with its figures."""
    from topicslab.dp.stream import stream_statistics

    t0 = time.perf_counter()
    st = stream_statistics(path, seed=1, chunk_users=chunk, progress=False)
    wall = time.perf_counter() - t0
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"wall_s": wall, "n_estimate": st.n_estimate, "peak_rss_kb": peak_kb}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--users", type=int, default=100_000_000)
    ap.add_argument("--weeks", type=int, default=2)
    ap.add_argument("--path", type=Path, default=Path("/tmp/m9/pop100m.parquet"))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--gen-chunk", type=int, default=1 << 20)
    ap.add_argument("--chunk-users", type=int, default=1 << 20)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--keep", action="store_true", help="keep the generated file")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        measure_child(str(args.path), args.chunk_users)
        return
    if not args.path.exists():
        t_gen = generate_file(args.path, args.users, args.weeks, args.seed, args.gen_chunk)
        print(f"generated {args.users:,} users x {args.weeks} weeks in {t_gen:.1f} s "
              f"({args.users / t_gen:,.0f} users/s)")
    size = (sum(f.stat().st_size for f in args.path.iterdir()) if args.path.is_dir()
            else args.path.stat().st_size)
    files = sorted(args.path.glob("*.parquet")) if args.path.is_dir() else [args.path]
    n_users = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
    print(f"input {args.path}: {n_users:,} users, {size / GB:.2f} GiB")
    walls = []
    for r in range(args.repeats):
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        res = subprocess.run([sys.executable, __file__, "--child", "--path", str(args.path),
                              "--chunk-users", str(args.chunk_users)],
                             check=True, capture_output=True, text=True)
        fig = json.loads(res.stdout.strip().splitlines()[-1])
        after = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        peak = max(fig["peak_rss_kb"], after if after > before else 0) / (1 << 20)
        walls.append(fig["wall_s"])
        print(f"run {r + 1}: stream_statistics {fig['wall_s']:.1f} s "
              f"({n_users / fig['wall_s']:,.0f} users/s; n_estimate "
              f"{fig['n_estimate']:,.0f}); peak RSS {peak:.2f} GiB")
    if len(walls) > 1:
        print(f"median {statistics.median(walls):.1f} s over {len(walls)} runs")
    print(f"cores: {os.cpu_count()}; load average at the end: "
          f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if not args.keep:
        if args.path.is_dir():
            for f in args.path.iterdir():
                f.unlink()
            args.path.rmdir()
        else:
            args.path.unlink()
        print(f"deleted {args.path}")


if __name__ == "__main__":
    run(main)
