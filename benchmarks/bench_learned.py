"""The learned re-identification attack (issue 17; Carey et al. Appendix E.1.3) against the
hand-made ones, r = 4.

    python benchmarks/bench_learned.py [--sets POP.parquet | --users N] [--synthetic SYN.parquet]
                                       [--epochs 2] [--targets 10240] [--trials 3]
                                       [--weeks 4] [--skip-population]
    python benchmarks/bench_learned.py --sets POP.parquet --model ATTACKDIR [--trials 1]

With ``--model`` (a directory of ``topicslab attack-train``) nothing is trained: the saved
attack runs on the population (the inference benchmark, e.g. 10M users × 10,240 targets);
the peak resident memory is printed at the end.

Trains the learned attack on the population itself (fresh API answers: the attacker's
training pairs are not the attacked traces) and, with ``--synthetic``, on a synthetic
population (e.g. ``topicslab run``'s ``synth.parquet``); then measures the risk of the learned,
asymmetric and Hamming attacks on the population under ``measure_risk``'s protocol (same
trials for all). Prints training time and its validation record, candidate recall, inference
seconds per stage, each attack's expected risk with its 95% interval over trials, and the
learned-minus-asymmetric gap, paired per trial (Student-t 95% interval over trials) and
paired per target over all trials (normal 95% interval).
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from _outputs import checked, run

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
    out = {"gap_mean": float(d.mean()), "gap_ci95": [float(ci[0]), float(ci[1])]}
    return out


def _target_gap(pop, att, args) -> dict:
    """The gap paired per target (every trial's targets pooled): learned − asymmetric
    expected success of each target, mean and normal 95% interval."""
    from topicslab.api import Mechanism, observe
    from topicslab.attacks.asymmetric import AsymmetricAttack
    from topicslab.attacks.learned import attack_outcomes
    from topicslab.attacks.protocol import (
        ReidProtocol,
        _pick_targets,
        evaluate_attacks,
        trial_api_seed,
    )

    mech = Mechanism(k=pop.k, taxonomy=pop.taxonomy)
    protocol = ReidProtocol(targets=args.targets, trials=args.trials)
    diffs = []
    for trial in range(args.trials):
        rng = np.random.default_rng([0, trial])
        chosen = _pick_targets(rng, pop.n_users, protocol.target_count(pop.n_users, None))
        api_seed = trial_api_seed(0, trial)
        s1 = observe(pop.sets, [0], weeks=args.weeks, seed=api_seed, mechanism=mech,
                     user_ids=pop.user_ids)[0]
        s2 = observe(pop.sets[chosen], [1], weeks=args.weeks, seed=api_seed, mechanism=mech,
                     user_ids=pop.user_ids[chosen])[0]
        asym = AsymmetricAttack()
        asym.fit(s1, mech)
        a_out = evaluate_attacks(s1, s2, chosen, [asym])[0]
        l_out, _ = attack_outcomes(att, s1, s2, chosen, mechanism=mech)
        diffs.append(l_out.expected() - a_out.expected())
    d = np.concatenate(diffs)
    se = float(d.std(ddof=1) / np.sqrt(len(d)))
    return {"gap_per_target_mean": float(d.mean()),
            "gap_per_target_ci95": [float(d.mean() - 1.96 * se), float(d.mean() + 1.96 * se)],
            "targets_improved": int((d > 0).sum()), "targets_worsened": int((d < 0).sum())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets")
    ap.add_argument("--users", type=int, default=200_000)
    ap.add_argument("--synthetic")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--targets", type=int, default=10240)
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--weeks", type=int, default=4)
    ap.add_argument("--json")
    ap.add_argument("--skip-population", action="store_true",
                    help="train on --synthetic only")
    ap.add_argument("--model", help="attack directory: no training, inference only")
    args = ap.parse_args()
    checked(args.json, "--json", "json")
    t0 = time.perf_counter()
    pop = _load(args.sets, args.users, 1)
    report: dict = {"users": pop.n_users, "weeks": args.weeks, "targets": args.targets,
                    "trials": args.trials, "epochs": args.epochs,
                    "read_seconds": time.perf_counter() - t0}
    if args.model:
        _inference_only(pop, args, report)
        return
    sources = [] if args.skip_population else [("population", pop)]
    if args.synthetic:
        sources.append(("synthetic", _load(args.synthetic, 0, 0)))
    for label, train in sources:
        t0 = time.perf_counter()
        att = train_attack(train, weeks=args.weeks, config=LearnedAttackConfig(
            epochs=args.epochs), seed=0, progress=True)
        t_train = time.perf_counter() - t0
        res = measure_risk_learned(pop, att, weeks=args.weeks,
                                   targets=args.targets, trials=args.trials, seed=0,
                                   progress=True)
        row = {"train_users": train.n_users, "train_seconds": t_train,
               "history": att.metadata["history"], "best_epoch": att.metadata["best_epoch"],
               "candidate_recall": res.attacks["learned"].description["candidate_recall"],
               "learned_seconds": [t["attack_seconds"]["learned"] for t in res.per_trial],
               "learned_stages": res.attacks["learned"].description["stages"],
               "hand_made_seconds": [t["attack_seconds"]["match-set attacks"]
                                     for t in res.per_trial],
               **_gap(res), **_target_gap(pop, att, args)}
        for name, a in res.attacks.items():
            row[name] = {"expected_risk": a.expected_risk_mean,
                         "expected_ci95": list(a.expected_ci95), "risk": a.risk_mean}
        report[f"trained_on_{label}"] = row
        print(json.dumps({label: row}, indent=1), flush=True)
    if args.json:
        from topicslab._atomic import write_text_atomic

        write_text_atomic(args.json, json.dumps(report, indent=2))


def _inference_only(pop, args, report: dict) -> None:
    import resource

    from topicslab.attacks.learned import load_attack

    att = load_attack(args.model)
    res = measure_risk_learned(pop, att, weeks=att.weeks, compare=("asymmetric",),
                               targets=args.targets, trials=args.trials, seed=0, progress=True)
    report.update({
        "model": args.model, "weeks": att.weeks,
        "epochs": att.metadata.get("epochs"), "best_epoch": att.metadata.get("best_epoch"),
        "train_users": att.metadata.get("users"),
        "learned_expected_risk": res.attacks["learned"].expected_risk_mean,
        "asymmetric_expected_risk": res.attacks["asymmetric"].expected_risk_mean,
        "candidate_recall": res.attacks["learned"].description["candidate_recall"],
        "learned_seconds": [t["attack_seconds"]["learned"] for t in res.per_trial],
        "learned_stages": res.attacks["learned"].description["stages"],
        "trial_seconds": [t["seconds"] for t in res.per_trial],
        "peak_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20})
    print(json.dumps(report, indent=1), flush=True)
    if args.json:
        from topicslab._atomic import write_text_atomic

        write_text_atomic(args.json, json.dumps(report, indent=2))


if __name__ == "__main__":
    run(main)
