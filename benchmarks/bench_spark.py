"""Benchmark: the Spark engine on local[2] (issue 9: report the figures for 10M users).

Times ``spark_counts`` (bounding + counting as a Spark job over Parquet) on a 10M-user file,
after the session start (timed separately), and checks that its counts equal the local
engine's exactly (``read_sets`` + ``bound_contributions`` + ``pair_counts`` in memory).
``--explode N`` also times the alternative design on the first N users: Python bounds and
emits one row per (query, pair) code, Spark counts with ``groupBy(code).count()``.

Run::

    .venv/bin/python benchmarks/bench_spark.py --path /tmp/m9/pop10m.parquet \
        [--users 10000000] [--repeats 3] [--explode 1000000] [--master local[2]]

The input is generated first (population generator, chunked) if the file is missing.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Iterator
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
from _outputs import run

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_outofcore import generate_file

from topicslab import io as tio
from topicslab.dp import bound_contributions, pair_counts
from topicslab.dp.spark import spark_counts, spark_session
from topicslab.dp.stream import dense_batch
from topicslab.taxonomy import load

M = 469


def _pair_codes(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Explode design, Python side: bound, then one row per (query, pair) code."""
    tax = load("v2")
    fields = ["epoch_0_topics", "epoch_1_topics"]
    for b in batches:
        uids, dense = dense_batch([b.column(i) for i in range(3)], fields, taxonomy=tax,
                                  strict=True, file=None, row_base=None)
        s, _ = bound_contributions(dense, M, k=5, seed=1, user_ids=uids)
        s = s.astype(np.int64)
        codes = [q * M * M + s[:, q, i] * M + s[:, q, j]
                 for q in (0, 1) for i, j in combinations(range(5), 2)]
        codes += [2 * M * M + s[:, 0, i] * M + s[:, 1, j] for i in range(5) for j in range(5)]
        yield pa.RecordBatch.from_arrays([pa.array(np.concatenate(codes))], names=["code"])


def explode_counts(spark: Any, path: str, users: int) -> np.ndarray:
    df = (spark.read.parquet(path).where(f"user_id < {users}")
          .select("user_id", "epoch_0_topics", "epoch_1_topics"))
    t = df.mapInArrow(_pair_codes, "code long").groupBy("code").count().toArrow()
    out = np.zeros(3 * M * M, dtype=np.int64)
    out[t.column("code").to_numpy()] = t.column("count").to_numpy()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--path", type=Path, default=Path("/tmp/m9/pop10m.parquet"))
    ap.add_argument("--users", type=int, default=10_000_000, help="users to generate")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--explode", type=int, default=0, help="also time the explode design")
    args = ap.parse_args()
    if not args.path.exists():
        t_gen = generate_file(args.path, args.users, 2, 0, 1 << 20)
        print(f"generated {args.users:,} users x 2 weeks in {t_gen:.1f} s")
    path = str(args.path)
    t0 = time.perf_counter()
    data = tio.read_sets(path)
    bounded, _ = bound_contributions(data.sets[:, :2], M, k=5, seed=1, user_ids=data.user_ids)
    ref = pair_counts(bounded, M)
    n = data.n_users
    print(f"local engine (in memory, read + bound + count): {time.perf_counter() - t0:.1f} s "
          f"for {n:,} users")
    del data, bounded
    t0 = time.perf_counter()
    conf = {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "4",
            "spark.ui.showConsoleProgress": "false"}
    with spark_session(args.master, config=conf) as spark:
        spark.sparkContext.setLogLevel("ERROR")
        print(f"Spark session start ({args.master}): {time.perf_counter() - t0:.1f} s")
        walls, equal = [], True
        for r in range(args.repeats):
            t0 = time.perf_counter()
            bc = spark_counts(path, seed=1, spark=spark)
            walls.append(time.perf_counter() - t0)
            same = (np.array_equal(bc.counts.within, ref.within)
                    and np.array_equal(bc.counts.across, ref.across) and bc.n_users == n)
            equal &= same
            print(f"run {r + 1}: spark_counts {walls[-1]:.1f} s ({n / walls[-1]:,.0f} users/s),"
                  f" counts equal to the local engine: {same}")
        print(f"spark_counts median {statistics.median(walls):.1f} s over {len(walls)} runs "
              f"(first run includes Python worker start-up); all equal: {equal}")
        if args.explode:
            k = args.explode
            sub_path = args.path.with_name(f"sub{k}.parquet")
            sub = tio.read_sets(path).subset(slice(0, k))
            tio.write_sets(sub_path, sub)
            b2, _ = bound_contributions(sub.sets[:, :2], M, k=5, seed=1, user_ids=sub.user_ids)
            ref2 = pair_counts(b2, M)
            flat_ref = np.concatenate([ref2.within.ravel(), ref2.across.ravel()])
            t0 = time.perf_counter()
            ours = spark_counts(sub_path, seed=1, spark=spark)
            t_ours = time.perf_counter() - t0
            t0 = time.perf_counter()
            ex = explode_counts(spark, str(sub_path), k)
            t_ex = time.perf_counter() - t0
            same = np.array_equal(np.concatenate([ours.counts.within.ravel(),
                                                  ours.counts.across.ravel()]), flat_ref)
            print(f"{k:,} users: mapInArrow + numba counts {t_ours:.1f} s (equal: {same}); "
                  f"explode + groupBy(code).count() {t_ex:.1f} s "
                  f"(equal: {np.array_equal(ex, flat_ref)})")
            sub_path.unlink()


if __name__ == "__main__":
    run(main)
