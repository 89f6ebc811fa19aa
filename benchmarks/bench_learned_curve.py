"""The learned attack against r (Carey et al. Fig. 5; issue 17): trained on a synthetic sample
and on the population, attacking the population for every r, beside the Hamming and
asymmetric attacks (``topicslab.attacks.learned_curve``, what ``topicslab run --learned``
reports).

    python benchmarks/bench_learned_curve.py --sets POP.parquet --synthetic SYN.parquet
        [--weeks 1..8] [--epochs 0] [--targets 10240] [--trials 2] [--json out.json]

Prints one line per r: each attack's expected risk with its 95% interval over targets, the
paired per-target gaps (learned on synthetic − asymmetric, learned on synthetic − learned on
the population) with 95% intervals, the epoch each learned attack kept, the candidate recall,
and the seconds of training and attacking.
"""

from __future__ import annotations

import argparse
import json
import time

from _outputs import checked, run

from topicslab.attacks.learned import LearnedAttackConfig
from topicslab.attacks.learned_curve import learned_curve
from topicslab.io import read_sets


def _weeks(text: str) -> list[int]:
    if ".." in text:
        lo, hi = text.split("..")
        return list(range(int(lo), int(hi) + 1))
    return [int(x) for x in text.split(",")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", required=True)
    ap.add_argument("--synthetic", required=True)
    ap.add_argument("--weeks", default="1..4")
    ap.add_argument("--epochs", type=int, default=0)
    ap.add_argument("--targets", type=int, default=10240)
    ap.add_argument("--trials", type=int, default=2)
    ap.add_argument("--json")
    args = ap.parse_args()
    checked(args.json, "--json", "json")
    pop, syn = read_sets(args.sets), read_sets(args.synthetic)
    t0 = time.perf_counter()
    curve = learned_curve(pop, syn, weeks=_weeks(args.weeks),
                          config=LearnedAttackConfig(epochs=args.epochs),
                          targets=args.targets, trials=args.trials, seed=0, progress=True)
    wall = time.perf_counter() - t0

    def pp(g: dict) -> str:
        return f"{100 * g['mean']:+.3f} pp [{100 * g['ci95'][0]:+.3f}, {100 * g['ci95'][1]:+.3f}]"

    print(f"{pop.n_users:,} users, synthetic {syn.n_users:,}; {curve.targets:,} targets x "
          f"{curve.trials} trials per r; epochs {args.epochs}; {wall:.0f} s "
          f"({curve.seconds['training']:.0f} s training, {curve.seconds['attacks']:.0f} s "
          "attacking)")
    for row in curve.rows:
        risks = "  ".join(f"{k} {100 * row[k]['risk']:.3f}%" for k in
                          ("hamming", "asymmetric", "learned_population", "learned_synthetic"))
        kept = [row[k]["training"]["best_epoch"] for k in ("learned_synthetic",
                                                          "learned_population")]
        print(f"r={row['weeks']}: {risks}  syn-asym {pp(row['gaps']['synthetic_vs_asymmetric'])}"
              f"  pop-asym {pp(row['gaps']['population_vs_asymmetric'])}"
              f"  syn-pop {pp(row['gaps']['synthetic_vs_population'])}  kept {kept}"
              f"  recall {100 * row['learned_synthetic']['candidate_recall']:.1f}%", flush=True)
    if args.json:
        from topicslab._atomic import write_text_atomic

        write_text_atomic(args.json, json.dumps({**curve.to_dict(), "wall_seconds": wall},
                                                indent=2))


if __name__ == "__main__":
    run(main)
