"""Speed of the exact re-identification engine (issue 5): 10M users x 10,240 targets.

    python benchmarks/bench_attacks.py [--sets FILE | --users N] [--weeks 4 8]
                                       [--targets 10240] [--repeats 3] [--brute-queries 16]
    python benchmarks/bench_attacks.py --risks [--sets FILE] [--weeks 1 2 3 4 5 6 7 8]
                                       [--trials 3]

Speed mode, for each r: website 1's table of all users and the targets' website-2 traces are
simulated with ``topicslab.api.observe`` (timed apart), then a fresh worker process runs both
attacks (Hamming and asymmetric: fit on website 1 + exact engine) ``--repeats`` times and
reports the median wall time and its peak resident memory (the worker holds only the traces).
The brute-force reference runs on ``--brute-queries`` of the targets against all users; its
time is extrapolated to all targets, giving the speed-up, and its outcomes are checked equal
to the exact engine's. Targets: r = 4 within 10 s and 6 GB, r = 8 within 60 s.

Risk mode prints the re-identification risk of both attacks for each r (``measure_risk``,
10,240 targets, ``--trials`` trials).

``--sets`` takes a Parquet/CSV file (``topicslab population``) or a ``.npy`` int16
``[users, weeks, k]`` array of dense topic indices (taxonomy v2; cheaper to load); without it
``--users`` users are generated (``topicslab.population.generate``, seed 1).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from topicslab.api import Mechanism, observe
from topicslab.datamodel import TopicSets


def _load(args: argparse.Namespace, weeks: int) -> TopicSets:
    if args.sets is None:
        from topicslab.population import generate

        print(f"generating {args.users:,} users x {weeks} weeks ...", flush=True)
        return generate(args.users, weeks, seed=1)
    path = Path(args.sets)
    if path.suffix == ".npy":
        arr = np.load(path, mmap_mode="r")
        if args.users:
            arr = arr[: args.users]
        return TopicSets(np.ascontiguousarray(arr), "v2")
    from topicslab.io import read_sets

    sets = read_sets(path)
    return sets.subset(slice(0, args.users)) if args.users else sets


def _worker(path: str, repeats: int, brute_queries: int) -> None:
    """Runs in a fresh process: time both attacks on saved traces; print one JSON line."""
    from topicslab.attacks import (
        AsymmetricAttack,
        HammingAttack,
        brute_force_outcomes,
        evaluate_attacks,
        match_masks,
        subset_scores,
    )

    data = np.load(path)
    site1, queries, rows = data["site1"], data["queries"], data["rows"]
    mech = Mechanism()

    def run(s1: np.ndarray, qs: np.ndarray, rw: np.ndarray) -> list:
        attacks = [HammingAttack(), AsymmetricAttack()]
        for a in attacks:
            a.fit(s1, mech)
        return evaluate_attacks(s1, qs, rw, attacks)

    run(site1[:5000], queries[:50], np.minimum(rows[:50], 4999))  # compile (numba cache)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        outs = run(site1, queries, rows)
        times.append(time.perf_counter() - t0)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    # brute force on a subsample of the queries, against every user
    sub = slice(0, brute_queries)
    attacks = [HammingAttack(), AsymmetricAttack()]
    for a in attacks:
        a.fit(site1, mech)
    scores = [subset_scores(a.gains(queries[sub])) for a in attacks]
    masks = match_masks(site1[rows[sub]], queries[sub])
    brute_force_outcomes(site1[:2000], queries[:2], [s[:2] for s in scores], masks[:2])
    t0 = time.perf_counter()
    brute = brute_force_outcomes(site1, queries[sub], scores, masks)
    t_brute = time.perf_counter() - t0
    agree = all(
        np.array_equal(b.argmax_size, o.argmax_size[sub])
        and np.array_equal(b.in_argmax, o.in_argmax[sub])
        for b, o in zip(brute, outs, strict=True))
    print(json.dumps({"times": times, "peak_bytes": peak, "brute_seconds": t_brute,
                      "brute_queries": brute_queries, "agree": agree,
                      "risk": {a.name: float(o.expected().mean())
                               for a, o in zip(attacks, outs, strict=True)}}))


def _speed(args: argparse.Namespace) -> None:
    sets = _load(args, max(args.weeks))
    n = sets.n_users
    print(f"population: {n:,} users x {sets.n_weeks} weeks; {args.targets:,} targets; "
          f"{os.cpu_count()} CPUs", flush=True)
    rng = np.random.default_rng(0)
    rows = np.sort(rng.choice(n, size=args.targets, replace=False)).astype(np.int64)
    report = []
    for r in args.weeks:
        t0 = time.perf_counter()
        site1 = observe(sets.sets, [0], weeks=r, seed=5)[0]
        queries = observe(sets.sets[rows], [1], weeks=r, seed=5, user_ids=rows)[0]
        t_sim = time.perf_counter() - t0
        with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
            path = os.path.join(tmp, "traces.npz")
            np.savez(path, site1=site1, queries=queries, rows=rows)
            del site1, queries
            proc = subprocess.run([sys.executable, __file__, "--worker", path, "--repeats",
                                   str(args.repeats), "--brute-queries",
                                   str(args.brute_queries)],
                                  capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            print(proc.stderr, file=sys.stderr)
            raise SystemExit(f"worker failed for r = {r}")
        res = json.loads(proc.stdout.strip().splitlines()[-1])
        med = statistics.median(res["times"])
        brute_all = res["brute_seconds"] * args.targets / res["brute_queries"]
        report.append((r, med, res, brute_all, t_sim))
        print(f"r = {r}: both attacks {med:.2f} s (median of {len(res['times'])}: "
              + ", ".join(f"{t:.2f}" for t in res["times"])
              + f"), peak {res['peak_bytes'] / 2**30:.2f} GiB; traces simulated in "
              f"{t_sim:.2f} s", flush=True)
        print(f"        brute force: {res['brute_seconds']:.2f} s for {res['brute_queries']} "
              f"queries -> {brute_all:,.0f} s for {args.targets:,} (extrapolated); speed-up "
              f"x{brute_all / med:,.0f}; outcomes agree: {res['agree']}", flush=True)
        print("        expected risk: " + ", ".join(
            f"{k} {100 * v:.3f}%" for k, v in res["risk"].items()), flush=True)
    print("\nsummary (targets: r=4 <= 10 s and <= 6 GiB; r=8 <= 60 s)")
    for r, med, res, brute_all, _ in report:
        goal = 10 if r <= 4 else 60
        ok = med <= goal and (r > 4 or res["peak_bytes"] <= 6 * 2**30)
        print(f"  r={r}: {med:6.2f} s, {res['peak_bytes'] / 2**30:5.2f} GiB, brute "
              f"{brute_all:,.0f} s (x{brute_all / med:,.0f}) {'OK' if ok else 'MISSED'}")


def _risks(args: argparse.Namespace) -> None:
    from topicslab.attacks import measure_risk

    sets = _load(args, max(args.weeks))
    print(f"population: {sets.n_users:,} users; {args.targets:,} targets x {args.trials} "
          "trials", flush=True)
    print(f"{'r':>2}  {'attack':<10} {'risk %':>8} {'± std':>7} {'95% CI':>15} "
          f"{'E[risk] %':>9} {'|argmax|':>9} {'s':>6}")
    for r in args.weeks:
        res = measure_risk(sets, weeks=r, targets=args.targets, trials=args.trials, seed=0,
                           progress=False)
        for name, a in res.attacks.items():
            d = a.to_dict()
            lo, hi = d["ci95"]
            print(f"{r:>2}  {name:<10} {100 * d['risk_mean']:8.3f} {100 * d['risk_std']:7.3f} "
                  f"{100 * lo:7.3f}-{100 * hi:<7.3f} {100 * d['expected_risk_mean']:9.3f} "
                  f"{d['argmax_size_mean']:9.1f} {res.seconds:6.1f}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sets", default=None)
    ap.add_argument("--users", type=int, default=None)
    ap.add_argument("--weeks", type=int, nargs="+", default=None)
    ap.add_argument("--targets", type=int, default=10240)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--brute-queries", type=int, default=16)
    ap.add_argument("--risks", action="store_true")
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--tmp", default=None, help="Folder for the worker's trace file.")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        _worker(args.worker, args.repeats, args.brute_queries)
        return
    if args.sets is None and args.users is None:
        args.users = 10_000_000
    if args.risks:
        args.weeks = args.weeks or list(range(1, 9))
        _risks(args)
    else:
        args.weeks = args.weeks or [4, 8]
        _speed(args)


if __name__ == "__main__":
    main()
