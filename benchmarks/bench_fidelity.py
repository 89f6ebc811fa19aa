"""Benchmark: the fidelity matrix of the DP release over the stress family (issue 14).

For every variant of ``topicslab.population.STRESS_FAMILY`` (or those named by
``--variants``): generate the population, release its DP statistics (weeks 0-1, ε = ln 3,
δ = 1e-15 unless ``--epsilon``), fit the model (``--model persistent|paper``), and measure the
exact expected re-identification risk of the population and of fresh synthetic users for
r = 1..R weeks, every user a target (``topicslab.validate.fidelity``). Prints the matrix:
rows = variants, columns = attack × r, cells = relative gap synthetic/population − 1 (with its
95% half-width), plus fit quality (share of large terms within 20%, share of terms within 2σ
of the DP noise) and timings. ``--json`` writes everything.

Run: ``.venv/bin/python benchmarks/bench_fidelity.py [--users 1000000] [--variants
reference,stable] [--model persistent] [--epsilon 1e6] [--trials 2] [--json out.json]``.
``--epsilon 1e6`` (the largest ε a release takes) gives statistics with negligible noise
(σ ~ 1e-10: the "exact statistics" rows); ``--repeats N`` releases each variant N times
(fresh DP noise and fit seed); ``--markdown`` prints the table of benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import sys
import time
from typing import Any

from _outputs import checked, run, write

from topicslab import dp
from topicslab import model as tm
from topicslab import population as pop
from topicslab import validate as tv
from topicslab.population.stress import STRESS_FAMILY

LN3 = math.log(3.0)


def peak_rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2


def run_variant(name: str, args: argparse.Namespace, repeat: int = 0) -> dict[str, Any]:
    """One row of the matrix; ``repeat`` > 0 draws fresh DP noise and a fresh fit seed (the
    population is the same), to see how much a verdict depends on them."""
    stress, taxonomy = STRESS_FAMILY[name]
    times: dict[str, float] = {}
    t = time.perf_counter()
    sets = pop.generate(args.users, args.weeks, seed=args.seed,
                        params=stress.apply(taxonomy=taxonomy), taxonomy=taxonomy)
    times["population"] = time.perf_counter() - t
    t = time.perf_counter()
    release = list(range(args.release_weeks or args.weeks))
    stats = dp.compute_statistics(sets, weeks=release, epsilon=args.epsilon,
                                  accounting=args.accounting,
                                  seed=args.seed + 1 + 1000 * repeat)
    times["dp"] = time.perf_counter() - t
    t = time.perf_counter()
    variant = tm.make_variant(args.model, args.types, args.weeks, modes=args.modes)
    optimizer = tm.FullObjective(steps=args.steps, stop_at_noise=not args.no_noise_stop,
                                 truncation=args.truncation,
                                 **({} if args.lr is None else {"lr": args.lr}))
    res = tm.fit(stats, variant, optimizer,
                 seed=args.seed + repeat, progress=False)
    times["fit"] = time.perf_counter() - t
    q = tv.fit_quality(stats, res.model)
    t = time.perf_counter()
    fid = tv.fidelity(sets, lambda trial: tm.sample(res.model, sets.n_users,
                                                    seed=args.seed + 100 + trial),
                      trials=args.trials, tolerance=args.tolerance, seed=args.seed)
    times["fidelity"] = time.perf_counter() - t
    label = name if repeat == 0 else f"{name} #{repeat}"
    return {"variant": label, "stress": stress.to_dict(), "taxonomy": taxonomy,
            "users": sets.n_users, "model": args.model, "epsilon": args.epsilon,
            "fit": {"lr": optimizer.lr, "truncation": optimizer.truncation,
                    "steps": res.steps, "seconds": res.seconds,
                    "stopped": res.stopped,
                    "share_rel_within_20pct": q.share_rel_within_20pct,
                    "share_abs_within_0_1pp": q.share_abs_within_0_1pp,
                    "share_within_2sigma": q.share_within_2sigma},
            "fidelity": fid.to_dict(), "seconds": times}


def print_matrix(rows: list[dict[str, Any]]) -> None:
    if not rows:
        return
    cols = [(g["attack"], g["weeks"]) for g in rows[0]["fidelity"]["gaps"]]
    head = f"{'variant':22s} " + " ".join(f"{a[:3]} r={r:<2d}      " for a, r in cols)
    print(head + "  rel≤20%  ≤2σ     fit s")
    for row in rows:
        cells = []
        for g in row["fidelity"]["gaps"]:
            if g["gap"] is None:
                cells.append(f"{'—':>14s}")
            else:
                half = 1.959963984540054 * g["gap_se"]
                cells.append(f"{g['gap']:+6.1%}±{half:4.1%}  ")
        f = row["fit"]
        two = f["share_within_2sigma"]
        print(f"{row['variant']:22s} " + " ".join(cells)
              + f"  {f['share_rel_within_20pct']:6.1%}  "
              + (f"{two:6.1%}" if two is not None else "   —  ")
              + f"  {f['seconds']:6.0f}")
    worst = max((abs(g["gap"]), row["variant"], g["attack"], g["weeks"])
                for row in rows for g in row["fidelity"]["gaps"] if g["gap"] is not None)
    print(f"largest |gap|: {worst[0]:.1%} ({worst[1]}, {worst[2]}, r = {worst[3]})")


def print_markdown(rows: list[dict[str, Any]], epsilon: float) -> None:
    """The matrix as the Markdown table of benchmarks/RESULTS.md and docs/fidelity.md."""
    cols = [(g["attack"], g["weeks"]) for g in rows[0]["fidelity"]["gaps"]]
    order = sorted(range(len(cols)), key=lambda i: (cols[i][0] != "hamming", cols[i][1]))
    names = {"hamming": "Ham", "asymmetric": "Asym"}
    print("| variant | " + " | ".join(f"{names.get(cols[i][0], cols[i][0])} r={cols[i][1]}"
                                      for i in order)
          + " | rel ≤ 20% | ≤ 2σ | fit s |")
    print("|" + "---|" * (len(cols) + 4))
    for row in rows:
        gaps = row["fidelity"]["gaps"]
        cells = ["—" if gaps[i]["gap"] is None else
                 f"{100 * gaps[i]['gap']:+.1f} ± {196 * gaps[i]['gap_se']:.1f}" for i in order]
        f = row["fit"]
        two = f["share_within_2sigma"]
        # at ε → ∞ the noise scale is ~0 and the 2σ share says nothing
        two_s = "—" if two is None or epsilon > 100 else f"{100 * two:.1f}%"
        print(f"| {row['variant']} | " + " | ".join(cells)
              + f" | {100 * f['share_rel_within_20pct']:.1f}% | {two_s} | {f['seconds']:.0f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--users", type=int, default=1_000_000)
    ap.add_argument("--weeks", type=int, default=4)
    ap.add_argument("--variants", default="all",
                    help=f"comma-separated names or 'all': {', '.join(STRESS_FAMILY)}")
    ap.add_argument("--model", default="persistent", choices=tm.VARIANT_NAMES)
    ap.add_argument("--types", type=int, default=None,
                    help="T (default: the model's own; persistent 100 x 5 modes, paper 500)")
    ap.add_argument("--modes", type=int, default=None)
    ap.add_argument("--steps", type=int, default=tm.FullObjective().steps)
    ap.add_argument("--lr", type=float, default=None,
                    help="the optimiser's starting learning rate (default: FullObjective's)")
    ap.add_argument("--truncation", type=float, default=tm.FullObjective().truncation,
                    help="the fit's truncation of the subset expansion, a share of the DP "
                         "noise (0: exact)")
    ap.add_argument("--no-noise-stop", action="store_true",
                    help="run every step (the fit otherwise stops at the DP noise floor)")
    ap.add_argument("--epsilon", type=float, default=LN3)
    ap.add_argument("--release-weeks", type=int, default=2,
                    help="a count: weeks 0..N-1 in the release (default 2: the paper's weeks "
                         "0-1, so that the documented tables reproduce; 0: all --weeks, what "
                         "topicslab run releases since 2026-11-26 with --accounting tight)")
    ap.add_argument("--accounting", default="paper", choices=("paper", "tight"),
                    help="default paper (topicslab run's default is tight)")
    ap.add_argument("--trials", type=int, default=2)
    ap.add_argument("--tolerance", type=float, default=0.10)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=1,
                    help="releases per variant: fresh DP noise and fit seed each (same "
                         "population)")
    ap.add_argument("--json", default=None)
    ap.add_argument("--markdown", action="store_true", help="also print a Markdown table")
    args = ap.parse_args()
    checked(args.json, "--json", "json")
    names = list(STRESS_FAMILY) if args.variants == "all" else args.variants.split(",")
    unknown = [n for n in names if n not in STRESS_FAMILY]
    if unknown:
        sys.exit(f"unknown variant(s) {unknown}; choose from {', '.join(STRESS_FAMILY)}")
    v = tm.make_variant(args.model, args.types, args.weeks, modes=args.modes)
    size = f"T = {v.types}" + (f" × {v.modes} modes" if isinstance(v, tm.PersistentTypes)
                               else "")
    print(f"fidelity matrix: {args.users:,} users, {args.weeks} weeks, model {args.model} "
          f"{size}, {args.steps} steps"
          f"{' (no noise stop)' if args.no_noise_stop else ' at most (noise stop)'}, "
          f"ε = {args.epsilon:.6g}, {args.trials} "
          "trial(s); cells: gap ± 95% half-width", flush=True)
    rows = []
    t0 = time.perf_counter()
    for name in names:
        for repeat in range(args.repeats):
            row = run_variant(name, args, repeat)
            rows.append(row)
            worst = max((abs(g["gap"]), g["gap"], g["attack"], g["weeks"])
                        for g in row["fidelity"]["gaps"] if g["gap"] is not None)
            print(f"  {row['variant']}: fit {row['fit']['steps']} steps "
                  f"({row['fit']['stopped']}), largest |gap| {worst[1]:+.1%} ({worst[2]}, "
                  f"r = {worst[3]}); done in {sum(row['seconds'].values()):.0f} s "
                  f"({', '.join(f'{k} {v:.0f}' for k, v in row['seconds'].items())})",
                  file=sys.stderr, flush=True)
            if args.json:  # after every row: a long run interrupted keeps what it measured
                write(args.json, json.dumps({"args": vars(args), "rows": rows}, indent=1))
    print_matrix(rows)
    if args.markdown:
        print_markdown(rows, args.epsilon)
    print(f"total {time.perf_counter() - t0:.0f} s, peak RSS {peak_rss_gb():.2f} GB")
    if args.json:
        write(args.json, json.dumps({"args": vars(args), "rows": rows}, indent=1))


if __name__ == "__main__":
    run(main)
