"""Throughput of ``topicslab ingest``: 100M visit rows -> weekly top-5 profiles (target <= 2 min).

    python benchmarks/bench_ingest.py [--rows 100000000] [--users 250000] [--path FILE]

Writes a synthetic visits log (Parquet: user_id, timestamp, host) once -- kept at ``--path``
for later runs unless ``--fresh`` -- and a domain table classifying most of its hosts, then
times ``topicslab.api.ingest.ingest_visits`` end to end (reading, registrable domains,
counting, the mechanism's top-k) and the writing of the TopicSets Parquet file. Prints the
wall time, visits per second and peak RSS.

The log: users browse a handful of favourite hosts (each user's own, drawn from 50,000 hosts
under 40,000 registrable domains, 10% of them unclassified) over 4 weeks, in random row order
(the worst case for the counter's memory locality).
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from _outputs import run


def make_log(path: str, rows: int, users: int, hosts: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    domains = [f"site{i}{'.co.uk' if i % 7 == 0 else '.com'}" for i in range(40_000)]
    names = [(f"www.{domains[i]}" if i < 40_000 else f"news.{domains[i % 40_000]}")
             for i in range(hosts)]
    dictionary = pa.array(names)
    favourite = rng.integers(0, hosts, size=(users, 16))  # each user's own hosts
    weight = 1.0 / np.arange(1, 17)
    weight /= weight.sum()
    start = np.datetime64("2024-01-01T00:00:00", "s").astype(np.int64)
    schema = pa.schema([("user_id", pa.int64()), ("timestamp", pa.timestamp("s", tz="UTC")),
                        ("host", pa.dictionary(pa.int32(), pa.string()))])
    chunk = 5_000_000
    with pq.ParquetWriter(path, schema, compression="zstd") as w:
        for lo in range(0, rows, chunk):
            n = min(chunk, rows - lo)
            u = rng.integers(0, users, size=n)
            slot = rng.choice(16, size=n, p=weight)
            host = favourite[u, slot].astype(np.int32)
            ts = start + rng.integers(0, 28 * 86_400, size=n)
            w.write_table(pa.table({
                "user_id": pa.array(u + 1_000_000),
                "timestamp": pa.array(ts, type=pa.timestamp("s", tz="UTC")),
                "host": pa.DictionaryArray.from_arrays(pa.array(host), dictionary)},
                schema=schema), row_group_size=1_000_000)
    return domains


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=100_000_000)
    ap.add_argument("--users", type=int, default=250_000)
    ap.add_argument("--hosts", type=int, default=50_000)
    ap.add_argument("--path", default=os.path.join(tempfile.gettempdir(),
                                                   "topicslab-bench-visits.parquet"))
    ap.add_argument("--fresh", action="store_true", help="regenerate the log")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    from topicslab.api.ingest import ingest_visits
    from topicslab.io import write_sets
    from topicslab.io.visits import DomainTable
    from topicslab.taxonomy import load

    t0 = time.perf_counter()
    if args.fresh or not os.path.exists(args.path) \
            or pq.ParquetFile(args.path).metadata.num_rows != args.rows:
        make_log(args.path, args.rows, args.users, args.hosts, args.seed)
        print(f"generated {args.rows:,} visits in {time.perf_counter() - t0:.1f} s "
              f"({os.path.getsize(args.path) / 2**30:.2f} GiB) -> {args.path}")
    domains = [f"site{i}{'.co.uk' if i % 7 == 0 else '.com'}" for i in range(40_000)]
    tax = load("v2")
    rng = np.random.default_rng(args.seed + 1)
    mapping = {d: [int(t) for t in rng.choice(tax.ids, size=1 + i % 3, replace=False)]
               for i, d in enumerate(domains) if i % 10 != 9}  # 10% unclassified
    table = DomainTable.from_mapping(mapping, taxonomy=tax)
    # warm-up on a small slice (compiles the numba kernels, reads the PSL)
    small = os.path.join(tempfile.gettempdir(), "topicslab-bench-visits-small.parquet")
    pq.write_table(pq.ParquetFile(args.path).read_row_group(0).slice(0, 10_000), small)
    ingest_visits(small, table)
    out = os.path.join(tempfile.gettempdir(), "topicslab-bench-sets.parquet")
    t1 = time.perf_counter()
    res = ingest_visits(args.path, table, progress=False)
    t2 = time.perf_counter()
    write_sets(out, res.sets)
    t3 = time.perf_counter()
    r = res.report
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(f"ingest: {r.visits:,} visits, {r.users:,} users x {r.weeks} weeks, "
          f"{res.counts.topics.shape[0]:,} (user, week, topic) counts; "
          f"{r.unclassified_visits:,} visits to {r.unclassified_domains:,} unclassified domains")
    print(f"ingest {t2 - t1:.1f} s + write {t3 - t2:.1f} s = {t3 - t1:.1f} s; "
          f"{r.visits / (t3 - t1) / 1e6:.2f} M visits/s; peak RSS {peak:.2f} GiB; "
          f"load average {os.getloadavg()[0]:.1f}; target <= 120 s for 100M")


if __name__ == "__main__":
    run(main)
