"""Risk against weeks observed with the theory beside it (Carey et al. Fig. 2 and §4–5).

For each r: the attacks' measured risk (random-user protocol, exact expectation over ties),
the Bayes-optimal attacker with full information (Corollary 1: exact while the sum over the
|T|^r traces is affordable, else measured on one sampled trace per target with a 95%
interval), and the framework's bounds (``ReidBounds``: LDP, k-anonymity, matching, partial
information, mutual information). One table (``to_dict``/CLI) and one figure
(``topicslab.report.figures.risk_and_bounds``).

Public names:
    TheoryCurve                                       rows per r (``to_dict()``)
    theory_curve(sets, weeks=range(1, 9), *, mechanism=None, attacks=("hamming",
                 "asymmetric"), targets=10240, trials=1, bayes_targets=20000, seed=0,
                 max_cells=MAX_CELLS, certify=False, progress=True) -> TheoryCurve
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from topicslab._checks import flag, integer
from topicslab._progress import task
from topicslab.api import Mechanism
from topicslab.api.answers import _mechanism
from topicslab.attacks.bayes import BayesRisk, bayes_risk
from topicslab.attacks.bounds import MAX_CELLS, ReidBounds, reid_bounds
from topicslab.attacks.protocol import RiskResult, risk_curve
from topicslab.datamodel import TopicSets
from topicslab.errors import InputError

__all__ = ["TheoryCurve", "theory_curve"]


@dataclass
class TheoryCurve:
    """Attacks, the Bayes attacker and the bounds for each number of weeks observed."""

    users: int
    weeks: list[int]
    attacks: list[RiskResult]
    bayes: list[BayesRisk | None]
    bounds: list[ReidBounds]
    seconds: dict[str, float] = field(default_factory=dict)

    def rows(self) -> list[dict[str, Any]]:
        """One flat row per r: what the table and the figure show (risks as fractions)."""
        out = []
        for r, res, bay, b in zip(self.weeks, self.attacks, self.bayes, self.bounds,
                                  strict=True):
            row: dict[str, Any] = {"weeks": r}
            for name, a in res.attacks.items():
                d = a.to_dict()
                row[name] = {"risk": d["expected_risk_mean"], "ci95": d["ci95"]}
            row["bayes_exact"] = b.full_information_bound
            row["bayes_interval"] = (None if b.full_information_interval is None
                                     else list(b.full_information_interval))
            row["bayes_sampled"] = None if bay is None else bay.to_dict()
            row["ldp_bound"] = b.ldp_bound
            row["k_anonymity_bound"] = b.k_anonymity_bound
            row["matching_bound"] = b.matching_bound
            row["partial_information_bound"] = b.partial_information_bound
            row["mutual_information"] = b.mutual_information
            row["mutual_information_bound"] = b.mutual_information_bound
            out.append(row)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"users": self.users, "rows": self.rows(),
                "attacks": [r.to_dict() for r in self.attacks],
                "bounds": [b.to_dict() for b in self.bounds], "seconds": dict(self.seconds)}


def theory_curve(
    sets: TopicSets,
    weeks: Sequence[int] = range(1, 9),
    *,
    mechanism: Mechanism | None = None,
    attacks: Sequence[str] = ("hamming", "asymmetric"),
    targets: int | str = 10_240,
    trials: int = 1,
    bayes_targets: int | None = 20_000,
    seed: int = 0,
    max_cells: int = MAX_CELLS,
    certify: bool = False,
    progress: bool = True,
) -> TheoryCurve:
    """Risk, Bayes attacker and bounds for every r in ``weeks`` (module docstring).

    The Bayes attacker is sampled (``bayes_targets`` users, ``None`` for all) only where its
    exact value is out of reach (``max_cells``); both are the same quantity. ``certify``
    adds certified bounds on it there (``reid_bounds``).
    """
    progress = flag(progress, "progress")
    if not isinstance(sets, TopicSets):  # (an array failed on .k)
        raise TypeError(f"theory_curve takes TopicSets, got {type(sets).__name__}")
    # (0, "" or False as mechanism were taken for "the default")
    mech = _mechanism(mechanism, sets)
    # weeks=[2.5] ran r = 2, weeks="12" r = 1 and 2, [True] r = 1: cast, never checked
    if isinstance(weeks, str | bytes):
        raise InputError(f"weeks must be a sequence of integers, got {weeks!r}", field="weeks")
    rs = [integer(r, "weeks", at_least=1) for r in weeks]
    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    curve = risk_curve(sets, weeks=rs, attacks=tuple(attacks), targets=targets, trials=trials,
                       seed=seed, mechanism=mech, progress=progress)
    seconds["attacks"] = time.perf_counter() - t0
    found: list[ReidBounds] = []
    bayes: list[BayesRisk | None] = []
    t0 = time.perf_counter()
    with task("bounds and the Bayes attacker", len(rs), enabled=progress) as advance:
        for r in rs:
            b = reid_bounds(sets, weeks=r, mechanism=mech, seed=seed, max_cells=max_cells,
                            certify=certify)
            found.append(b)
            trace = r + mech.lookback - 1
            if b.full_information_bound is None:
                bayes.append(bayes_risk(sets, weeks=trace, mechanism=mech,
                                        targets=None if bayes_targets is None
                                        else min(bayes_targets, sets.n_users),
                                        seed=seed))
            else:
                bayes.append(None)
            advance(1)
    seconds["bounds"] = time.perf_counter() - t0
    return TheoryCurve(sets.n_users, rs, curve.results, bayes, found, seconds)
