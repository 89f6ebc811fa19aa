"""The stress family: knobs that change the structure of the reference population while
keeping a valid Topics population (weekly top-k profiles made by the mechanism).

Fidelity of the DP release (does synthetic data carry the population's re-identification
risk?) must hold on populations the model was not tuned to. ``Stress`` moves the calibrated
generator along four axes; ``STRESS_FAMILY`` names the variants that
``benchmarks/bench_fidelity.py`` puts in its fidelity matrix.

Knobs:
    persistence π ∈ [0, 1]: how stable a user's interests are. Interest drift, exploration
        visits and the week-to-week jitter of activity scale by (1 − π); at π = 1 interests
        never change, but the weekly profile still comes from that week's visits (and fresh
        padding).
    routine ρ ∈ [0, 1]: a week repeats the previous week's whole profile with probability ρ
        (a routine week). π = ρ = 0 is the calibrated population; π = ρ = 1 gives every user
        one profile for all weeks (fully stable).
    groups g ∈ [0, 1]: interests that arrive in groups. Every topic belongs to one clique of
        3–5 topics (a fixed, seeded partition); a visit to a site of one clique member also
        counts for each other member with probability g (one site classified into several
        topics), so topics co-occur in cliques.
    interests μ > 0: concentration, the mean number of persistent interests per user
        (``1 + Poisson(μ)``; calibrated μ = 3): few interests make concentrated, repetitive
        profiles, many make diverse ones.
    taxonomy: ``v1`` (349 topics) or ``v2`` (469). The v1 population carries the calibrated v2
        parameters over by topic label (``params.load_reference``).
    users: the population size is the generator's ``n_users``.

Public names:
    Stress(persistence=0, routine=0, groups=0, interests=None)
        .apply(params=None, taxonomy="v2") -> PopulationParams
    STRESS_FAMILY                     named (Stress, taxonomy) variants of the fidelity matrix
    clique_partition(taxonomy, seed)  the cliques of the ``groups`` knob
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from topicslab._checks import integer, is_real, value_shown
from topicslab.errors import InputError
from topicslab.population.params import PopulationParams, load_reference
from topicslab.taxonomy import Taxonomy, resolve

__all__ = ["STRESS_FAMILY", "Stress", "clique_partition"]

#: Seed of the clique partition (fixed: the same cliques in every run).
CLIQUE_SEED = 20261123


@dataclass(frozen=True)
class Stress:
    """One point of the stress family (see the module docstring)."""

    persistence: float = 0.0
    routine: float = 0.0
    groups: float = 0.0
    interests: float | None = None

    def __post_init__(self) -> None:
        for name in ("persistence", "routine", "groups"):
            v = getattr(self, name)
            # a bool is an int to isinstance, but True is no stress level (as every other
            # numeric parameter of the package refuses it)
            # (a NumPy number was refused here and taken by interests: both are taken now)
            if not (is_real(v) and 0.0 <= v <= 1.0 and math.isfinite(v)):
                raise InputError(f"{name} must be a number in [0, 1], got {value_shown(v)}",
                                 field=f"--{name}")
            if not isinstance(v, int | float):  # a NumPy number (JSON-written as a float)
                object.__setattr__(self, name, float(v))
        # checked for a number first: interests="3" was a TypeError out of math.isfinite
        if self.interests is not None and not (
                is_real(self.interests)
                and 0.0 <= self.interests <= 20.0 and math.isfinite(self.interests)):
            raise InputError(f"interests must be a number in [0, 20], got "
                             f"{value_shown(self.interests)}",
                             field="--interests")
        if self.interests is not None and not isinstance(self.interests, int | float):
            object.__setattr__(self, "interests", float(self.interests))

    @property
    def is_identity(self) -> bool:
        return (self.persistence == 0 and self.routine == 0 and self.groups == 0
                and self.interests is None)

    def apply(self, params: PopulationParams | None = None,
              taxonomy: Taxonomy | str = "v2") -> PopulationParams:
        """The parameters of this variant (default base: the calibrated reference)."""
        tax = resolve(taxonomy)
        if params is not None and not isinstance(params, PopulationParams):
            raise TypeError(f"params takes PopulationParams, got {type(params).__name__}")
        if params is not None and params.taxonomy != tax.version:
            # (v1 parameters got cliques of v2 ids, refused later as "cotags[0]: topic id 392
            # is not in taxonomy v1", a table the caller never wrote)
            raise InputError(f"the parameters are for taxonomy {params.taxonomy}, not "
                             f"{tax.version}: pass taxonomy={params.taxonomy!r}",
                             field="taxonomy")
        p = (params if params is not None else load_reference(tax)).copy()
        keep = 1.0 - self.persistence
        p.drift_base *= keep
        p.explore_prob *= keep
        p.weekly_log_sigma *= keep
        p.profile_repeat = max(p.profile_repeat, self.routine)
        if self.interests is not None:
            p.interests_mean = float(self.interests)
        if self.groups > 0:
            p.cotags = p.cotags + [[a, b, float(self.groups)]
                                   for clique in clique_partition(tax)
                                   for i, a in enumerate(clique) for b in clique[i + 1:]]
        p.notes = (p.notes + " " if p.notes else "") + f"stress {self.to_dict()}"
        return p

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def clique_partition(taxonomy: Taxonomy | str, seed: int = CLIQUE_SEED) -> list[list[int]]:
    """A fixed partition of all topics (taxonomy ids) into cliques of 3–5 topics."""
    tax = resolve(taxonomy)
    # (seed=-1 or 1.5 was NumPy's ValueError or TypeError)
    rng = np.random.default_rng(integer(seed, "seed", at_least=0))
    ids = [int(i) for i in rng.permutation(tax.ids)]
    out: list[list[int]] = []
    i = 0
    while i < len(ids):
        size = int(rng.integers(3, 6))
        if len(ids) - (i + size) < 3:  # no clique smaller than 3 at the end
            size = len(ids) - i
        out.append(sorted(ids[i:i + size]))
        i += size
    return out


#: The variants of the fidelity matrix: name -> (Stress, taxonomy).
STRESS_FAMILY: dict[str, tuple[Stress, str]] = {
    "reference": (Stress(), "v2"),
    "persistent-interests": (Stress(persistence=1.0), "v2"),
    "routine-0.5": (Stress(persistence=0.5, routine=0.5), "v2"),
    "stable": (Stress(persistence=1.0, routine=1.0), "v2"),
    "grouped": (Stress(groups=0.5), "v2"),
    "few-interests": (Stress(interests=0.5), "v2"),
    "many-interests": (Stress(interests=8.0), "v2"),
    "v1": (Stress(), "v1"),
    "v1-stable": (Stress(persistence=1.0, routine=1.0), "v1"),
}
