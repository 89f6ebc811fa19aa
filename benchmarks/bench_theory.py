"""Benchmark: risk against weeks observed with the theory beside it, at the paper's r = 1..8.

Generates the reference population (``--users``, 8 weeks), then for every r: the Hamming and
asymmetric attacks (exact engine, ``--targets`` per trial), the Bayes-optimal attacker with
full information (Carey et al. Corollary 1: exact while the sum over the |T|^r traces visits
at most ``--max-cells`` cells, else measured on ``--bayes-targets`` sampled traces) and the
framework's bounds. Prints a markdown table with the seconds of each part and writes the
figure (``--figure``).

Run: ``.venv/bin/python benchmarks/bench_theory.py [--users 1000000] [--figure theory.png]``.
"""

from __future__ import annotations

import argparse
import time

from _outputs import checked, run, write

from topicslab import population as pop
from topicslab.attacks.bounds import MAX_CELLS
from topicslab.attacks.theory import theory_curve
from topicslab.report.figures import risk_and_bounds


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.3f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--users", type=int, default=1_000_000)
    ap.add_argument("--weeks", type=int, default=8)
    ap.add_argument("--targets", default="10240")
    ap.add_argument("--trials", type=int, default=1)
    ap.add_argument("--bayes-targets", type=int, default=20_000)
    ap.add_argument("--max-cells", type=float, default=MAX_CELLS)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--figure", default=None)
    ap.add_argument("--certify", action="store_true",
                    help="certified bounds on Corollary 1 where it is not exact")
    args = ap.parse_args()
    checked(args.figure, "--figure", "png")
    t0 = time.perf_counter()
    sets = pop.generate(args.users, args.weeks, seed=args.seed)
    gen = time.perf_counter() - t0
    targets = args.targets if args.targets == "all" else int(args.targets)
    curve = theory_curve(sets, range(1, args.weeks + 1), targets=targets, trials=args.trials,
                         bayes_targets=args.bayes_targets, seed=args.seed,
                         max_cells=int(args.max_cells), certify=args.certify, progress=False)
    print(f"{args.users:,} users; population {gen:.1f} s, attacks "
          f"{curve.seconds['attacks']:.1f} s, bounds and Bayes {curve.seconds['bounds']:.1f} s")
    print("| r | Hamming % | asymmetric % | Bayes C1 % (exact) | Bayes % (sampled, 95% CI) "
          "| C1 % (certified) | partial L2 % | matching L4 % | MI nats | MI bound L9 % |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for row in curve.rows():
        bay = row["bayes_sampled"]
        sampled = ("—" if bay is None else
                   f"{100 * bay['risk']:.2f} ({100 * bay['ci95'][0]:.2f}–"
                   f"{100 * bay['ci95'][1]:.2f})")
        mi = row["mutual_information"]
        iv = row["bayes_interval"]
        certified = "—" if iv is None else f"{100 * iv[0]:.3f}–{100 * iv[1]:.3f}"
        print(f"| {row['weeks']} | {_pct(row['hamming']['risk'])} | "
              f"{_pct(row['asymmetric']['risk'])} | {_pct(row['bayes_exact'])} | {sampled} | "
              f"{certified} | "
              f"{_pct(row['partial_information_bound'])} | {_pct(row['matching_bound'])} | "
              f"{'—' if mi is None else f'{mi:.3f}'} | "
              f"{_pct(row['mutual_information_bound'])} |")
    if args.figure:
        write(args.figure, risk_and_bounds(curve.rows(), curve.users))
        print(f"wrote {args.figure}")


if __name__ == "__main__":
    run(main)
