"""Which type mixture is fitted: the model variants passed to ``fit`` (strategy objects).

Public names:
    PaperTypes(types=500, weeks=4, cyclic=False)      Dick et al. §5: θ[T, r, k, m], weeks
                                                      independent given the type
    PersistentTypes(types=100, modes=5, weeks=4)      types with weekly modes: slot laws
                                                      shared by all weeks, a mode stay per
                                                      type and a stay per slot

    ModelVariant                                      the protocol both follow
    make_variant(name, types=None, weeks=4, cyclic=False, modes=None)
                                                      ``"paper"`` | ``"persistent"`` by name
    VARIANT_NAMES                                     ("persistent", "paper")

A variant owns its parameters: it initialises them (``init``), computes its exact statistics
from them (``statistics``, differentiable; rows as ``Objective`` expects: ``rows()``), and
turns them into a ``TypeMixture`` (``build``). The fitter knows nothing else about it.

Why persistent types. The paper's types draw every week independently given the type, so the
only way a user keeps a topic from one week to the next is through its type; a population whose
users keep their interests (or their whole profile) needs as many near-deterministic types as
it has profiles, far more than T = 500, and a population whose users alternate between groups
of interests needs a type per combination. Persistent types carry both inside the type: slots
that stay (σ = 1 repeats the topic, σ = 0 is the paper's independent draw, lag ℓ gives σ^ℓ)
and modes that stay or switch (a user alternating between two themes is one type with two
modes). The variant nests the paper's types with identical weeks (M = 1, σ = ρ = 0) and has r
times fewer slot parameters. Measured gaps on the stress family: docs/fidelity.md and
benchmarks/RESULTS.md ("Release fidelity").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import torch

from topicslab._checks import is_integer, number, value_shown
from topicslab.errors import InputError
from topicslab.model.closed_forms import closed_forms, persistent_forms
from topicslab.model.targets import Targets
from topicslab.model.typemixture import TypeMixture

__all__ = ["VARIANT_NAMES", "ModelVariant", "PaperTypes", "PersistentTypes", "make_variant"]

VARIANT_NAMES = ("persistent", "paper")

Params = dict[str, torch.Tensor]
Stats = tuple[torch.Tensor, torch.Tensor, torch.Tensor]


class ModelVariant(Protocol):
    """What ``fit`` needs of a model variant."""

    @property
    def name(self) -> str:
        """``"paper"`` or ``"persistent"``."""
        ...

    @property
    def types(self) -> int:
        """T."""
        ...

    @property
    def weeks(self) -> int:
        """r, the weeks whose terms J counts."""
        ...

    def week_pairs(self) -> list[tuple[int, int]]:
        """The week pairs whose q_across enter J."""
        ...

    def rows(self) -> tuple[list[float], list[float]]:
        """How many of J's weeks / week pairs each row of the statistics stands for."""
        ...

    def init(self, targets: Targets, seed: int, init_std: float, around_marginals: bool,
             ) -> Params:
        """Initial parameters (float64, CPU)."""
        ...

    def statistics(self, params: Params, tolerance: float = 0.0) -> Stats:
        """Differentiable ``(q_single[R, m], q_within[R, m, m], q_across[P, m, m])``: exact,
        or with each pair statistic within ``tolerance`` in Frobenius norm (a truncated
        expansion, ``closed_forms``' docstring)."""
        ...

    def build(self, params: Params, taxonomy: Any, metadata: dict[str, Any]) -> TypeMixture:
        """The fitted model."""
        ...

    def config(self) -> dict[str, Any]:
        """What identifies the variant (checkpoints must match it)."""
        ...


def _check_sizes(types: int, weeks: int, modes: int = 1) -> None:
    for name, v in (("types", types), ("weeks", weeks), ("modes", modes)):
        if not is_integer(v) or v < 1:
            raise InputError(f"{name} must be a positive integer, got {value_shown(v)}", field=name)


def _theta_init(targets: Targets, shape: tuple[int, ...], seed: int, init_std: float,
                around_marginals: bool) -> torch.Tensor:
    gen = torch.Generator().manual_seed(int(seed))
    noise = torch.randn(shape, generator=gen, dtype=torch.float64) * init_std
    if not around_marginals:
        return noise
    # The targets' marginals (a slot draws o with probability ~ q_single(o)/k) plus noise
    # that makes the types differ from the start; the paper's near-zero init leaves all
    # types alike and most early steps are spent breaking that symmetry.
    base = torch.from_numpy(np.log(np.clip(targets.q_single, 1e-7, None) / targets.k))
    return base.view(*([1] * (len(shape) - 1)), -1) + noise


@dataclass(frozen=True)
class PaperTypes:
    """The paper's types (Dick et al. §5): θ[T, r, k, m], weeks independent given the type.

    ``cyclic`` also fits the wrap-around pair (r−1 → 0), so sampling more than r weeks by the
    stationarity rule keeps every transition fitted (not in the paper).
    """

    types: int = 500
    weeks: int = 4
    cyclic: bool = False
    name: str = "paper"

    def __post_init__(self) -> None:
        _check_sizes(self.types, self.weeks)
        if not isinstance(self.cyclic, bool | np.bool_):  # "no" was read as true
            raise InputError(f"cyclic must be true or false, got {value_shown(self.cyclic)}",
                             field="cyclic")

    def week_pairs(self) -> list[tuple[int, int]]:
        pairs = [(i, i + 1) for i in range(self.weeks - 1)]
        if self.cyclic and self.weeks > 1:
            pairs.append((self.weeks - 1, 0))
        return pairs

    def rows(self) -> tuple[list[float], list[float]]:
        return [1.0] * self.weeks, [1.0] * len(self.week_pairs())

    def init(self, targets: Targets, seed: int, init_std: float, around_marginals: bool,
             ) -> Params:
        shape = (self.types, self.weeks, targets.k, targets.m)
        return {"theta": _theta_init(targets, shape, seed, init_std, around_marginals)}

    def statistics(self, params: Params, tolerance: float = 0.0) -> Stats:
        return closed_forms(params["theta"], self.week_pairs(), tolerance)

    def build(self, params: Params, taxonomy: Any, metadata: dict[str, Any]) -> TypeMixture:
        theta = params["theta"].detach().to("cpu", torch.float32).numpy()
        return TypeMixture(theta, taxonomy, {**metadata, "model": self.name})

    def config(self) -> dict[str, Any]:
        return {"model": self.name, "types": self.types, "weeks": self.weeks,
                "week_pairs": [list(p) for p in self.week_pairs()]}


@dataclass(frozen=True)
class PersistentTypes:
    """Persistent types with weekly modes (``TypeMixture`` with ``stay``; closed forms in
    ``closed_forms.persistent_forms``): T types × M modes × k slot laws shared by all weeks,
    each type's mode weights and mode stay, each slot's stay.

    Fitted as logits: mode weights by softmax, stays by sigmoid, starting at ``init_mode_stay``
    and ``init_slot_stay``. T·M = 500 components by default: the slot parameters of the
    paper's T = 500 (1.17M, a quarter of the paper's 4.69M: weeks share them).
    """

    types: int = 100
    modes: int = 5
    weeks: int = 4
    init_mode_stay: float = 0.7
    init_slot_stay: float = 0.3
    name: str = "persistent"

    def __post_init__(self) -> None:
        _check_sizes(self.types, self.weeks, self.modes)
        for field_name in ("init_mode_stay", "init_slot_stay"):
            # (text or None was "TypeError: '<' not supported between instances of 'float'
            # and 'str'", an array NumPy's "truth value of an array is ambiguous")
            v = number(getattr(self, field_name), field_name, lo=0.0, hi=1.0, lo_open=True,
                       hi_open=True, why="a probability of staying, fitted as a logit")
            object.__setattr__(self, field_name, v)

    def week_pairs(self) -> list[tuple[int, int]]:
        return [(i, i + 1) for i in range(self.weeks - 1)]

    def rows(self) -> tuple[list[float], list[float]]:
        # every week has the same statistics, every consecutive pair too: one row each
        return [float(self.weeks)], ([float(self.weeks - 1)] if self.weeks > 1 else [])

    def init(self, targets: Targets, seed: int, init_std: float, around_marginals: bool,
             ) -> Params:
        T, M, k = self.types, self.modes, targets.k
        shape = (T, M, k, targets.m)

        def logit(p: float) -> float:
            return math.log(p / (1.0 - p))

        return {"theta": _theta_init(targets, shape, seed, init_std, around_marginals),
                "mode_logit": torch.zeros((T, M), dtype=torch.float64),
                "mode_stay_logit": torch.full((T,), logit(self.init_mode_stay),
                                              dtype=torch.float64),
                "slot_stay_logit": torch.full((T, M, k), logit(self.init_slot_stay),
                                              dtype=torch.float64)}

    @staticmethod
    def laws(params: Params) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(mode weights, mode stays, log slot stays) of the fitted logits."""
        return (torch.softmax(params["mode_logit"], dim=-1),
                torch.sigmoid(params["mode_stay_logit"]),
                torch.nn.functional.logsigmoid(params["slot_stay_logit"]))

    def statistics(self, params: Params, tolerance: float = 0.0) -> Stats:
        weights, mode_stay, log_slot_stay = self.laws(params)
        qs, qw, qa = persistent_forms(params["theta"], weights, mode_stay, log_slot_stay,
                                      (1,) if self.weeks > 1 else (), tolerance)
        return qs.unsqueeze(0), qw.unsqueeze(0), qa

    def build(self, params: Params, taxonomy: Any, metadata: dict[str, Any]) -> TypeMixture:
        cpu = {n: p.detach().to("cpu", torch.float64) for n, p in params.items()}
        weights, mode_stay, log_slot_stay = self.laws(cpu)
        return TypeMixture(cpu["theta"].float().numpy(), taxonomy,
                           {**metadata, "model": self.name, "weeks": self.weeks},
                           stay=torch.exp(log_slot_stay).numpy().astype(np.float32),
                           mode_weights=weights.numpy().astype(np.float32),
                           mode_stay=mode_stay.numpy().astype(np.float32))

    def config(self) -> dict[str, Any]:
        return {"model": self.name, "types": self.types, "modes": self.modes,
                "weeks": self.weeks, "week_pairs": [list(p) for p in self.week_pairs()]}


def make_variant(name: str, types: int | None = None, weeks: int = 4, cyclic: bool = False,
                 modes: int | None = None) -> ModelVariant:
    """A variant by name: ``"persistent"`` (the default) or ``"paper"``; ``types`` defaults to
    each variant's own (paper 500; persistent 100 types × ``modes`` 5)."""
    if not isinstance(name, str):  # (an array was "truth value of an array is ambiguous")
        raise InputError(f"model must be one of {', '.join(VARIANT_NAMES)}, got "
                         f"{value_shown(name)}",
                         field="--model")
    if not isinstance(cyclic, bool | np.bool_):  # (before its truth is taken: a pandas NA
        # was "boolean value of NA is ambiguous", and "no" was read as true)
        raise InputError(f"cyclic must be true or false, got {value_shown(cyclic)}",
                         field="cyclic")
    if name == "paper":
        if modes is not None:
            raise InputError("--modes applies to persistent types only", field="--modes")
        return PaperTypes(types=500 if types is None else types, weeks=weeks, cyclic=cyclic)
    if name == "persistent":
        if cyclic:
            raise InputError("--cyclic applies to the paper's types only (persistent types "
                             "are stationary: every week pair is fitted)", field="--cyclic")
        d = PersistentTypes()
        return PersistentTypes(types=d.types if types is None else types,
                               modes=d.modes if modes is None else modes, weeks=weeks)
    raise InputError(f"model must be one of {', '.join(VARIANT_NAMES)}, got {value_shown(name)}",
                     field="--model")
