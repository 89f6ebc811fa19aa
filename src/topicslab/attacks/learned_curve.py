"""Does a learned attack trained on the synthetic release re-identify the population as well as
one trained on the population itself? (Carey et al. Appendix E.1.3; Dick et al. §1: training
attacks is what a synthetic release is for.)

For each number of weeks observed r, two learned attacks (``train_attack``) are trained: one on
the synthetic sample (what a researcher holding only the public release can do) and one on the
population (the comparison the private data allows). Both attack the population in the same
trials as the Hamming and asymmetric attacks (``measure_risk``'s protocol: fresh API secret,
random targets, every website-1 user a candidate, exact expectation over ties). Every attack
is scored on the same targets, so the gaps are paired per target: learned (synthetic) −
asymmetric, learned (population) − asymmetric and learned (synthetic) − learned (population),
each with a normal 95% interval over all targets of all trials.

Public names:
    LearnedCurve                               rows per r (``to_dict()``)
    learned_curve(population, synthetic, weeks=range(1, 5), *, config, targets=10240,
                  trials=2, seed=0, mechanism=None, progress=True) -> LearnedCurve
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from topicslab._checks import flag
from topicslab._progress import task
from topicslab.api import Mechanism, observe
from topicslab.attacks.learned import (
    LearnedAttack,
    LearnedAttackConfig,
    attack_outcomes,
    train_attack,
)
from topicslab.attacks.protocol import (
    ReidProtocol,
    _attack_instances,
    _mechanism_for,
    _pick_targets,
    check_call_weeks,
    evaluate_attacks,
    trial_api_seed,
)
from topicslab.datamodel import TopicSets
from topicslab.errors import InputError

__all__ = ["LEARNED_SOURCES", "LearnedCurve", "learned_curve"]

#: the learned attacks of each row, by training data
LEARNED_SOURCES = ("learned_synthetic", "learned_population")
HAND_MADE = ("hamming", "asymmetric")
#: the paired differences reported per r: (name, minuend, subtrahend)
GAPS = (("synthetic_vs_asymmetric", "learned_synthetic", "asymmetric"),
        ("population_vs_asymmetric", "learned_population", "asymmetric"),
        ("synthetic_vs_population", "learned_synthetic", "learned_population"))


def _mean_ci(x: npt.NDArray[np.float64], *, floor: float | None = None) -> dict[str, Any]:
    """Mean and normal 95% interval of per-target values (expected successes, ``floor`` 0:
    a risk is never negative, or paired differences of them). The interval is over targets
    and API answers, for the trained models at hand: it leaves out how another training run
    would differ."""
    n = len(x)
    mean = float(x.mean()) if n else 0.0
    se = float(x.std(ddof=1) / np.sqrt(n)) if n > 1 else 0.0
    lo = mean - 1.96 * se
    return {"mean": mean, "se": se,
            "ci95": [lo if floor is None else max(floor, lo), mean + 1.96 * se]}


def _training_record(att: LearnedAttack) -> dict[str, Any]:
    md = att.metadata
    return {"users": md.get("users"), "seconds": md.get("seconds"),
            "best_epoch": md.get("best_epoch"),
            "validation_risk_start": md.get("validation_risk_start"),
            "validation_gain": md.get("validation_gain")}


@dataclass
class LearnedCurve:
    """Per r: each attack's expected risk on the population, the paired gaps, the training
    records and the candidate recall of each learned attack."""

    users: int
    synthetic_users: int
    targets: int
    trials: int
    epochs: int
    rows: list[dict[str, Any]]
    seconds: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"users": self.users, "synthetic_users": self.synthetic_users,
                "targets": self.targets, "trials": self.trials, "epochs": self.epochs,
                "rows": self.rows, "seconds": dict(self.seconds)}


def learned_curve(
    population: TopicSets,
    synthetic: TopicSets,
    weeks: Sequence[int] = range(1, 5),
    *,
    config: LearnedAttackConfig | None = None,
    targets: int = 10_240,
    trials: int = 2,
    seed: int = 0,
    mechanism: Mechanism | None = None,
    progress: bool = True,
) -> LearnedCurve:
    """Train on the synthetic sample and on the population, attack the population, for every
    r in ``weeks`` (module docstring). ``config`` sets the training (default
    ``LearnedAttackConfig()``); ``targets`` × ``trials`` targets are attacked per r."""
    progress = flag(progress, "progress")
    cfg = config or LearnedAttackConfig()
    protocol = ReidProtocol(targets=targets, trials=trials)
    mech = _mechanism_for(population, mechanism)
    if synthetic.taxonomy.size != population.taxonomy.size or synthetic.k != population.k:
        raise InputError("the synthetic sample must have the population's taxonomy and k",
                         field="synthetic")
    rs = [check_call_weeks(int(r), mech.lookback) for r in weeks]
    if not rs:
        raise InputError("give at least one number of weeks", field="weeks")
    need = max(rs) + mech.lookback - 1
    for name, sets in (("population", population), ("synthetic", synthetic)):
        if sets.n_weeks < need:
            raise InputError(f"r = {max(rs)} with lookback {mech.lookback} needs {need} weeks; "
                             f"the {name} has {sets.n_weeks}", field="weeks")
    rows: list[dict[str, Any]] = []
    seconds = {"training": 0.0, "attacks": 0.0}
    n_targets = protocol.target_count(population.n_users, None) or population.n_users
    with task("learned attack: train on synthetic and population, attack", len(rs),
              enabled=progress) as advance:
        for r in rs:
            t0 = time.perf_counter()
            models = {"learned_synthetic": train_attack(synthetic, weeks=r, mechanism=mech,
                                                        config=cfg, seed=seed + 101 * r),
                      "learned_population": train_attack(population, weeks=r, mechanism=mech,
                                                         config=cfg, seed=seed + 101 * r + 1)}
            seconds["training"] += time.perf_counter() - t0
            t0 = time.perf_counter()
            success: dict[str, list[npt.NDArray[np.float64]]] = {
                k: [] for k in (*HAND_MADE, *LEARNED_SOURCES)}
            recall: dict[str, list[float]] = {k: [] for k in LEARNED_SOURCES}
            hand = _attack_instances(list(HAND_MADE))
            for trial in range(protocol.trials):
                rng = np.random.default_rng([seed, r, trial])
                chosen = _pick_targets(rng, population.n_users,
                                       protocol.target_count(population.n_users, None))
                api_seed = trial_api_seed(seed + r, trial)
                site1 = observe(population.sets, [0], weeks=r, seed=api_seed, mechanism=mech,
                                user_ids=population.user_ids)[0]
                site2 = observe(population.sets[chosen], [1], weeks=r, seed=api_seed,
                                mechanism=mech, user_ids=population.user_ids[chosen])[0]
                for a in hand:
                    a.fit(site1, mech)
                for a, o in zip(hand, evaluate_attacks(site1, site2, chosen, hand),
                                strict=True):
                    success[a.name].append(o.expected())
                for name, att in models.items():
                    o, found = attack_outcomes(att, site1, site2, chosen, mechanism=mech)
                    success[name].append(o.expected())
                    recall[name].append(float(found.mean()) if len(found) else 0.0)
            seconds["attacks"] += time.perf_counter() - t0
            per = {k: np.concatenate(v) for k, v in success.items()}
            row: dict[str, Any] = {"weeks": r}
            for k, v in per.items():
                m = _mean_ci(v, floor=0.0)
                row[k] = {"risk": m["mean"], "ci95": m["ci95"]}
            for k in LEARNED_SOURCES:
                row[k]["candidate_recall"] = float(np.mean(recall[k]))
                row[k]["training"] = _training_record(models[k])
            row["gaps"] = {name: _mean_ci(per[a] - per[b]) for name, a, b in GAPS}
            rows.append(row)
            advance(1)
    return LearnedCurve(population.n_users, synthetic.n_users, int(n_targets), protocol.trials,
                        cfg.epochs, rows, seconds)
