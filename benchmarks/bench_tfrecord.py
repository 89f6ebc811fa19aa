"""Throughput of the release-style TFRecord reader and writer (target: 10M users <= 60 s each).

    python benchmarks/bench_tfrecord.py [--users 2000000] [--shards 10] [--repeats 3]

Writes N users of random valid v2 topic sets (4 weeks, k = 5, some weeks shorter, a few empty)
to a temporary directory in shards with ``write_sets_tfrecord``, reads them back with
``read_sets_tfrecord`` and checks the round trip. Prints the median write and read times over
the repeats, microseconds per record and the extrapolation to the release's 10M users. One
small warm-up round first loads (or compiles) any numba kernels, so it is not timed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import numpy as np

from topicslab.datamodel import TopicSets, canonicalize_sets
from topicslab.io import read_sets_tfrecord, write_sets_tfrecord
from topicslab.taxonomy import load

RELEASE_USERS = 10_000_000


def random_sets(n: int, weeks: int = 4, k: int = 5, seed: int = 0) -> TopicSets:
    """Distinct topics per user-week; 20% of weeks shorter than k (some empty)."""
    tax = load("v2")
    rng = np.random.default_rng(seed)
    # k distinct topics per row from a pool of distinct sorted rows (content barely matters
    # for speed, and sampling 10M rows of 469 topics directly would dominate the run)
    pool = np.sort(np.argsort(rng.random((4096, tax.size)), axis=1)[:, :k], axis=1)
    picks = pool[rng.integers(0, pool.shape[0], size=(n, weeks))].astype(np.int16)
    lengths = np.where(rng.random((n, weeks)) < 0.2, rng.integers(0, k, (n, weeks)), k)
    picks[np.arange(k)[None, None, :] >= lengths[..., None]] = -1
    return TopicSets(canonicalize_sets(picks), tax, np.arange(n, dtype=np.int64) * 7 + 3)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--users", type=int, default=2_000_000)
    ap.add_argument("--shards", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    sets = random_sets(args.users)
    with tempfile.TemporaryDirectory() as tmp:
        warm = os.path.join(tmp, "warm", "w.tfrecord")
        write_sets_tfrecord(warm, random_sets(1000, seed=1), shards=2)
        read_sets_tfrecord(os.path.dirname(warm))
        out = os.path.join(tmp, "bench", "topic_set_sequences.tfrecord")
        wtimes, rtimes = [], []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            names = write_sets_tfrecord(out, sets, shards=args.shards)
            wtimes.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            back = read_sets_tfrecord(os.path.dirname(out))
            rtimes.append(time.perf_counter() - t0)
            if not (np.array_equal(back.sets, sets.sets)
                    and np.array_equal(back.user_ids, sets.user_ids)):
                raise SystemExit("round trip mismatch")
        size = sum(os.path.getsize(n) for n in names)
    n = args.users
    print(f"tfrecord: {n:,} users x {sets.n_weeks} weeks, k={sets.k}, {args.shards} shards, "
          f"{size / 1e6:.1f} MB ({size / n:.0f} B/record); median of {args.repeats}")
    for what, times in (("write", wtimes), ("read", rtimes)):
        med = statistics.median(times)
        per = med / n
        print(f"{what:5s} {med:8.3f} s  {per * 1e6:7.2f} us/record  "
              f"-> {per * RELEASE_USERS:7.1f} s for 10M (target <= 60 s)")


if __name__ == "__main__":
    main()
