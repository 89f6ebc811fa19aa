"""The disclosure experiment's design, checked once (Mac Aonghusa & Leith;
docs/design.md §Disclosure).

``DisclosureDesign`` holds what sizes and drives ``topics_experiment``: the intensities ρ,
the epochs, the personas per group (test, training, white-box Monte Carlo), the probe sites,
the seed, the sensitive onset and the budget ε of Def 4.1. It checks itself in
``__post_init__`` and raises ``ParameterError`` naming the field (``rhos`` -> ``--rho``,
``personas`` -> ``--personas``, ...: the disclosure options); ``simulate_personas`` checks
its own scalar arguments through it. ``check_groups`` checks the persona counts against the
number of groups (known once the categories are) and ``memory`` estimates the experiment's
peak memory so that ``topicslab disclosure`` refuses what cannot fit before simulating.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from topicslab._checks import MAX_COUNT, integer, is_collection, number, refuse, value_shown
from topicslab.disclosure.whitebox import MAX_SITES

__all__ = ["BLOCK_USERS", "DEFAULT_RHOS", "MAX_EPOCHS", "ROW_STRIDE", "DisclosureDesign"]

DEFAULT_RHOS = (0.05, 0.1, 0.2, 0.4)
#: Row keys of the top-k randomness are ``user_id * ROW_STRIDE + epoch`` (``personas``), so
#: an epoch index must stay below the stride: at most 1,023 epochs (about 20 years of weeks).
ROW_STRIDE = 1024
MAX_EPOCHS = ROW_STRIDE - 1
#: The training, test and Monte Carlo personas are user ids 0.., 1,000,000.. and 2,000,000..:
#: the browser's keyed randomness follows the user id, so a block of more than this many
#: personas would overlap the next one (test personas browsing exactly as training ones).
BLOCK_USERS = 1_000_000
#: Bytes per simulated persona and visit: the visit's int64 row, persona, epoch, topic and
#: key, its four uniforms and the sort and unique of the weekly counts (generous).
_BYTES_PER_VISIT = 160
#: Bytes per simulated persona and topic: the Gumbel keys of the background interests
#: (float64, with the draw and the sum: three ``[personas, m]`` arrays).
_BYTES_PER_TOPIC = 24
#: Bytes per simulated persona and epoch besides the visits: top-k sets, row keys, the CSR
#: boundaries and the answers' per-site int16 (added per probe site).
_BYTES_PER_EPOCH = 48


@dataclass(frozen=True)
class DisclosureDesign:
    """Sizes, intensities and budget of the disclosure experiment (``topics_experiment``).

    Attributes:
        rhos: intensities ρ, the share of a sensitive persona's visits that go to its proxy
            topics: a non-empty list of probabilities in [0, 1].
        epochs: epochs simulated, in 1..1,023: the top-k randomness is keyed by
            ``user * 1024 + epoch``.
        personas: test personas per group, at least 2 (the bands are a mean ± nσ over the
            training probes, and a session rate over one persona says nothing), at most
            1,000,000 over all groups (``check_groups``: the user-id block).
        train_personas: training personas per group (``None``: ``personas``); as ``personas``.
        probe_sites: sites calling the API every epoch, at least 1; at most 64 with the white
            box (its likelihood multiplies one factor per site and must stay a float64).
        mc_samples: white-box Monte Carlo personas per group, at least 1.
        mc_epochs: epochs simulated per Monte Carlo persona (``None``: ``epochs``), as
            ``epochs``.
        seed: seed of everything (browsing and the browser's keyed randomness), >= 0.
        epsilon: the budget ε of Def 4.1 (a persona is flagged when ln M̂ > ε): finite and
            >= 0 (ε = 0 flags any evidence at all; unlike a DP budget it calibrates no noise).
        onset: first epoch of the sensitive browsing, in 0..epochs (epochs: never).
        whitebox: run the white-box check (``mc_samples``, the 64-site limit apply).
    """

    rhos: tuple[float, ...] = DEFAULT_RHOS
    epochs: int = 8
    personas: int = 200
    train_personas: int | None = None
    probe_sites: int = 10
    mc_samples: int = 500
    mc_epochs: int | None = None
    seed: int = 0
    epsilon: float = math.log(2)
    onset: int = 0
    whitebox: bool = True

    def __post_init__(self) -> None:
        # (a 0-d array was "TypeError: iteration over a 0-d array")
        if not is_collection(self.rhos):
            raise refuse(f"rhos must be a list of intensities, got {self.rhos!r}", "rho")
        rhos = tuple(number(r, "rho", lo=0.0, hi=1.0,
                            why="rho is the share of visits sent to the proxy topics")
                     for r in self.rhos)
        if not rhos:
            raise refuse("rhos must be a non-empty list of values in [0, 1]", "rho")
        if len(set(rhos)) != len(rhos):  # a repeated intensity would be simulated twice
            raise refuse(f"rhos must be distinct, got {list(rhos)}", "rho")
        object.__setattr__(self, "rhos", rhos)
        epochs = integer(self.epochs, "epochs", at_least=1, at_most=MAX_EPOCHS,
                         why=f"the top-k randomness is keyed by user * {ROW_STRIDE} + epoch")
        object.__setattr__(self, "epochs", epochs)
        spread = "the bands need the spread of at least two personas"
        object.__setattr__(self, "personas", integer(
            self.personas, "personas", at_least=2, at_most=BLOCK_USERS, why=spread))
        if self.train_personas is not None:
            object.__setattr__(self, "train_personas", integer(
                self.train_personas, "train_personas", at_least=2, at_most=BLOCK_USERS,
                why=spread))
        if not isinstance(self.whitebox, bool | np.bool_):  # "no" ran the white box
            raise refuse(f"whitebox must be True or False, got "
                         f"{value_shown(self.whitebox)}", "whitebox")
        object.__setattr__(self, "whitebox", bool(self.whitebox))
        sites = MAX_SITES if self.whitebox else None
        object.__setattr__(self, "probe_sites", integer(
            self.probe_sites, "probe_sites", at_least=1, at_most=sites,
            why=f"the white box multiplies one factor per site: at most "
                f"{MAX_SITES} stay a float64 (--no-whitebox lifts it)"
            if sites else "an epoch needs a probe"))
        object.__setattr__(self, "mc_samples", integer(
            self.mc_samples, "mc_samples", at_least=1, at_most=MAX_COUNT,
            why="the white box averages them"))
        if self.mc_epochs is not None:
            object.__setattr__(self, "mc_epochs", integer(
                self.mc_epochs, "mc_epochs", at_least=1, at_most=MAX_EPOCHS,
                why=f"the top-k randomness is keyed by user * {ROW_STRIDE} + epoch"))
        object.__setattr__(self, "seed", integer(self.seed, "seed", at_least=0,
                                                 why="seeds are non-negative"))
        object.__setattr__(self, "epsilon", number(
            self.epsilon, "epsilon", lo=0.0, why="epsilon bounds ln M, a log ratio"))
        object.__setattr__(self, "onset", integer(
            self.onset, "onset", at_least=0, at_most=epochs,
            why="the onset is an epoch of the simulation (epochs: never)"))

    @property
    def n_train(self) -> int:
        """Training personas per group."""
        return self.personas if self.train_personas is None else self.train_personas

    @property
    def pool_epochs(self) -> int:
        """Epochs per Monte Carlo persona."""
        return self.epochs if self.mc_epochs is None else self.mc_epochs

    def check_groups(self, groups: int) -> None:
        """Refuse more personas over ``groups`` groups than a user-id block holds."""
        for field, per_group in (("personas", self.personas),
                                 ("train_personas", self.n_train)):
            if per_group * groups > BLOCK_USERS:
                raise refuse(f"{field} must be at most {BLOCK_USERS // groups:,} per group "
                             f"with {groups} groups, got {per_group:,}", field,
                             f"the {BLOCK_USERS:,} user ids of a block would overlap the "
                             "next block's personas")

    def memory(self, topics: int, groups: int, visits_per_epoch: float,
               k: int = 5) -> dict[str, float]:
        """Peak bytes of the experiment's simulations, roughly, by the option that sizes
        them (``personas``, ``train_personas``, ``mc_samples``); the peak is about the
        largest plus the ``personas`` arrays kept throughout (the white box's likelihoods).

        Args:
            topics: the taxonomy's size m.
            groups: sensitive categories + 1.
            visits_per_epoch: the persona model's mean visits per epoch.
            k: topics per profile.
        """
        def simulation(personas: int, epochs: int, sites: int) -> float:
            per_epoch = (_BYTES_PER_VISIT * visits_per_epoch + _BYTES_PER_EPOCH
                         + 2 * k + 2 * sites)
            return float(personas) * (_BYTES_PER_TOPIC * topics + epochs * per_epoch)

        test = groups * self.personas
        kept = float(test) * self.epochs * (8 * groups + 2 * self.probe_sites)
        out = {"personas": simulation(test, self.epochs, self.probe_sites) + kept,
               "train_personas": simulation(groups * self.n_train, self.epochs,
                                            self.probe_sites) + kept}
        if self.whitebox:
            phases = 2 if 0 < self.onset < self.epochs else 1  # before and after the onset
            pool = phases * self.pool_epochs
            out["mc_samples"] = (simulation(self.mc_samples, pool, 0)
                                 + float(self.mc_samples) * pool * (topics + 2 * k) + kept)
        return out
