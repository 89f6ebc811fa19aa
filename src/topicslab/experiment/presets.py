"""Named sizes of ``topicslab run`` (spec 01 §5; issue #6 budgets).

* ``smoke``: seconds; exercises every stage and every report section (used by the tests).
* ``default``: the built-in experiment: 1M users, 4 weeks, T = 500 types, 10,240 targets ×
  10 trials; ≤ 15 minutes on a 2-core laptop.
* ``paper``: the paper's size: 10M users, 4 weeks, T = 500 (see benchmarks/RESULTS.md for its
  measured time).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any


@dataclass(frozen=True)
class Preset:
    """Sizes and budgets of one run. Every paper parameter has the paper's value by default."""

    users: int
    weeks: int = 4                   # weeks of population, fitted model and attacks
    stats_weeks: tuple[int, ...] = (0, 1)   # the DP statistics use weeks 1-2 (paper §4)
    epsilon: float = 1.0986122886681098     # ln 3
    delta: float = 1e-15
    accounting: str = "paper"
    types: int = 500                 # T
    optimizer: str = "default"
    fit_minutes: float = 10.0        # wall-time cap of one fit (it stops earlier at the
                                     # issue's quality bar: 99.9% within 0.1 pp, 90% within 20%)
    targets: int = 10_240
    trials: int = 10
    calibration_users: int = 1_000_000
    disclosure: bool = True
    disclosure_personas: int = 0     # 0: the disclosure module's default
    qif_weeks: int = 3

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["stats_weeks"] = list(self.stats_weeks)
        return d

    def with_overrides(self, **kw: Any) -> Preset:
        """A copy with the non-``None`` overrides applied."""
        return replace(self, **{k: v for k, v in kw.items() if v is not None})


PRESETS: dict[str, Preset] = {
    "smoke": Preset(users=20_000, types=40, fit_minutes=0.25, targets=1_024, trials=3,
                    calibration_users=20_000, disclosure_personas=40),
    "default": Preset(users=1_000_000),
    "paper": Preset(users=10_000_000),
}
