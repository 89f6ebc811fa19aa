"""The learned re-identification attack (issue 17; Carey et al. Appendix E.1.3) against the
hand-made ones, r = 4.

    python benchmarks/bench_learned.py [--sets POP.parquet | --users N] [--synthetic SYN.parquet]
                                       [--epochs 1] [--targets 10240] [--trials 3]
                                       [--top-k 256] [--weeks 4] [--skip-population]

Trains the learned attack on the population itself (fresh API answers: the attacker's
training pairs are not the attacked traces) and, with ``--synthetic``, on a synthetic
population (e.g. ``topicslab run``'s ``synth.parquet``); then measures the risk of the learned,
asymmetric and Hamming attacks on the population under ``measure_risk``'s protocol (same
trials for all). Prints training time, retrieval recall, inference seconds per stage, each
attack's expected risk with its 95% interval over trials, and the learned-minus-asymmetric gap
(paired per trial, Student-t 95% interval).
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from topicslab.attacks import student_interval
from topicslab.attacks.learned import LearnedAttackConfig, measure_risk_learned, train_attack


def _load(path: str | None, users: int, seed: int):
    if path:
        from topicslab.io import read_sets

        return read_sets(path)
    from topicslab.population.generator import generate

    return generate(users, 4, seed=seed)


def _gap(res) -> dict:
    le = np.array(res.attacks["learned"].expected)
    ae = np.array(res.attacks["asymmetric"].expected)
    d = le - ae
    ci = student_interval(d) if len(d) > 1 else (float(d[0]), float(d[0]))
    return {"gap_mean": float(d.mean()), "gap_ci95": [float(ci[0]), float(ci[1])]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets")
    ap.add_argument("--users", type=int, default=200_000)
    ap.add_argument("--synthetic")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--targets", type=int, default=10240)
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--top-k", type=int, default=256)
    ap.add_argument("--weeks", type=int, default=4)
    ap.add_argument("--json")
    ap.add_argument("--skip-population", action="store_true",
                    help="train on --synthetic only")
    args = ap.parse_args()
    pop = _load(args.sets, args.users, 1)
    report: dict = {"users": pop.n_users, "weeks": args.weeks, "targets": args.targets,
                    "trials": args.trials, "top_k": args.top_k, "epochs": args.epochs}
    sources = [] if args.skip_population else [("population", pop)]
    if args.synthetic:
        sources.append(("synthetic", _load(args.synthetic, 0, 0)))
    for label, train in sources:
        t0 = time.perf_counter()
        att = train_attack(train, weeks=args.weeks, config=LearnedAttackConfig(
            epochs=args.epochs), seed=0, progress=True)
        t_train = time.perf_counter() - t0
        res = measure_risk_learned(pop, att, weeks=args.weeks, top_k=args.top_k,
                                   targets=args.targets, trials=args.trials, seed=0,
                                   progress=True)
        row = {"train_users": train.n_users, "train_seconds": t_train,
               "history": att.metadata["history"],
               "retrieval_recall": res.attacks["learned"].description["retrieval_recall"],
               "learned_seconds": [t["learned_seconds"] for t in res.per_trial],
               "learned_stages": [t["learned_stages"] for t in res.per_trial],
               "hand_made_seconds": [t["hand_made_seconds"] for t in res.per_trial],
               **_gap(res)}
        for name, a in res.attacks.items():
            row[name] = {"expected_risk": a.expected_risk_mean,
                         "expected_ci95": list(a.expected_ci95), "risk": a.risk_mean}
        report[f"trained_on_{label}"] = row
        print(json.dumps({label: row}, indent=1), flush=True)
    if args.json:
        from topicslab._atomic import write_text_atomic

        write_text_atomic(args.json, json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
