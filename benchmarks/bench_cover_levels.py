"""Benchmark: Corollary 1 between certified bounds where it is not exact (r ≥ 5 weeks).

Generates the reference population (``--users``, 8 weeks) and, for each ``--weeks`` r, takes
the last r weeks and brackets Corollary 1 (``qif.cover_levels``): the interval, its width,
each level's share of it, the box-union walks and the seconds. The sampled Bayes attacker's
estimate is printed beside it with ``--bayes-targets`` (0: skip).

``--log F`` records the walks in the walk log F (``qif.walk_log``, one file for every r): a
stopped run given the same file resumes where it stopped (the walks already logged are not
done again).

Run: ``.venv/bin/python benchmarks/bench_cover_levels.py [--users 1000000] [--weeks 5 6]``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from _outputs import run

from topicslab import population as pop
from topicslab.api import Mechanism
from topicslab.attacks.bayes import bayes_risk
from topicslab.qif.cover_levels import cover_levels


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--users", type=int, default=1_000_000)
    ap.add_argument("--weeks", type=int, nargs="+", default=[5, 6])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--bayes-targets", type=int, default=20_000)
    ap.add_argument("--log", type=Path, default=None,
                    help="walk log file (.jsonl); a re-run resumes from it")
    args = ap.parse_args()
    t0 = time.perf_counter()
    sets = pop.generate(args.users, max(8, max(args.weeks)), seed=args.seed)
    print(f"{args.users:,} users, population {time.perf_counter() - t0:.1f} s")
    mech = Mechanism(k=sets.k, taxonomy=sets.taxonomy)
    print("| r | C1 certified % | width (points) | width by level c = 1..r (points) | "
          "Bayes sampled % (95% CI) | walks | seconds |")
    print("|---|---|---|---|---|---|---|")
    for r in args.weeks:
        profiles = sets.sets[:, sets.n_weeks - r:]
        t0 = time.perf_counter()
        levels = cover_levels(profiles, sets.taxonomy.size, progress=True, log=args.log)
        secs = time.perf_counter() - t0
        lo, hi = levels.corollary1(mech.q_in, mech.q_out)
        # (the seconds of a resumed run are not the bracket's: say how many walks were read)
        walks = (f"{levels.box_walks}" if not levels.logged else
                 f"{levels.box_walks} ({levels.logged} from the log)")
        widths = " / ".join(f"{100 * w:.3f}" for w in levels.widths(mech.q_in, mech.q_out))
        sampled = "—"
        if args.bayes_targets:
            bay = bayes_risk(sets, weeks=r, mechanism=mech, seed=args.seed,
                             targets=min(args.bayes_targets, sets.n_users))
            sampled = (f"{100 * bay.risk:.2f} ({100 * bay.ci95[0]:.2f}–"
                       f"{100 * bay.ci95[1]:.2f})")
        print(f"| {r} | {100 * lo:.3f}–{100 * hi:.3f} | {100 * (hi - lo):.3f} | {widths} | "
              f"{sampled} | {walks} | {secs:.0f} |", flush=True)


if __name__ == "__main__":
    run(main)
