"""Every user a target: the scanning engine against the joined engine (``attacks.join``).

    python benchmarks/bench_engine_join.py [--sets FILE | --users N] [--weeks 4]
                                           [--repeats 3] [--only join|scan]

One risk curve (r = 1..``--weeks``, both attacks, one trial, every user a target) per engine
and repeat, the engines alternating; prints each wall time, the medians and whether both
engines gave the same risks (they must: the same exact counts). The join's build and its
table size are printed apart. The automatic choice (``prefer_join``) is printed too.

``--sets`` takes a Parquet/CSV file (``topicslab population``); the last ``--weeks`` weeks of
its first ``--users`` users are used. Without it ``--users`` users are generated
(``topicslab.population.generate``, seed 1).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import topicslab.attacks.protocol as protocol
from topicslab.attacks import join
from topicslab.datamodel import TopicSets


def _load(args: argparse.Namespace) -> TopicSets:
    if args.sets is None:
        from topicslab.population import generate

        print(f"generating {args.users:,} users x {args.weeks} weeks ...", flush=True)
        return generate(args.users, args.weeks, seed=1)
    from topicslab.io import read_sets

    sets = read_sets(args.sets)
    if sets.n_weeks < args.weeks:
        raise SystemExit(f"{args.sets} has {sets.n_weeks} weeks, fewer than --weeks")
    users = np.arange(min(args.users, sets.n_users)) if args.users else None
    return sets.subset(users=users, weeks=np.arange(sets.n_weeks - args.weeks, sets.n_weeks))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sets")
    ap.add_argument("--users", type=int, default=1_000_000)
    ap.add_argument("--weeks", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", choices=("join", "scan"))
    args = ap.parse_args()
    data = _load(args)
    rs = list(range(1, args.weeks + 1))
    auto = "join" if join.prefer_join(data.n_users, data.n_users, args.weeks) else "scan"
    print(f"{data.n_users:,} users, r = 1..{args.weeks}, every user a target; automatic "
          f"choice: {auto}", flush=True)

    build: list[float] = []
    original = join.JoinedCounts.__init__

    def timed_init(self: join.JoinedCounts, *a: object, **k: object) -> None:
        t = time.perf_counter()
        original(self, *a, **k)  # type: ignore[arg-type]
        build.append(time.perf_counter() - t)
        print(f"  join build {build[-1]:.1f} s, {self.shared:,} shared projections, "
              f"{self.nbytes / 1e9:.2f} GB of tables", flush=True)

    join.JoinedCounts.__init__ = timed_init  # type: ignore[method-assign]
    engines = [args.only] if args.only else ["scan", "join"]
    times: dict[str, list[float]] = {e: [] for e in engines}
    risks: dict[str, list[float]] = {}
    for rep in range(args.repeats):
        for eng in engines:
            join.prefer_join = (lambda *a, e=eng: e == "join")  # type: ignore[assignment]
            t = time.perf_counter()
            curve = protocol.risk_curve(data, weeks=rs, targets="all", trials=1, seed=1,
                                        progress=False)
            times[eng].append(time.perf_counter() - t)
            risks[eng] = [res.attacks[a].expected_risk_mean for res in curve.results
                          for a in ("hamming", "asymmetric")]
            print(f"repeat {rep + 1} {eng}: {times[eng][-1]:.1f} s", flush=True)
    for eng in engines:
        print(f"{eng}: median {statistics.median(times[eng]):.1f} s "
              f"({', '.join(f'{t:.1f}' for t in times[eng])})")
    if len(engines) == 2:
        print("same risks:", risks["scan"] == risks["join"])
    last = risks[engines[-1]]
    for i, r in enumerate(rs):
        print(f"r = {r}: Hamming {100 * last[2 * i]:.5f}%, asymmetric {100 * last[2 * i + 1]:.5f}%")


if __name__ == "__main__":
    main()
