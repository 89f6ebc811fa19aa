"""``TypeMixture``: a uniform mixture of types over topic-set sequences (Dick et al. §5,
Algorithm 2).

Public names:
    TypeMixture      theta ``float32[T, r, k, m]`` slot logits (persistent types: ``[T, M, k, m]``
                     with ``mode_weights``, ``mode_stay`` and slot ``stay``) + taxonomy +
                     metadata; ``statistics()``, ``q_single()``, ``q_within()``, ``q_across()``
                     exact closed forms, ``slot_probabilities()``

Two variants share this class (``variant``):

* ``"paper"`` (Dick et al. §5, Algorithm 2): a user picks a type uniformly from the T types
  and, for every week i and slot s, a topic from softmax(theta[t, i, s, :]), independently
  across weeks; the week's set is the distinct topics drawn.
* ``"persistent"``: each type has M modes (weekly themes: the second axis of theta) with
  probabilities ``mode_weights[t]``, each with k slot laws shared by all weeks. Week 0 draws a
  mode and its slots; every later week keeps the mode with probability ``mode_stay[t]`` — and
  then each slot keeps last week's topic with probability ``stay[t, μ, s]``, else draws afresh
  — or draws a new mode and all its slots afresh (``closed_forms.persistent_forms``). Interests
  that persist, and interests that alternate from week to week, live inside a type instead of
  needing types of their own. Every week has the same law (stationary), so ``weeks`` (how many
  weeks a user spans by default, the fitted r) is a property of the model, not of theta.

Topics are dense indices of the taxonomy (ascending taxonomy id).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from topicslab._checks import integer, is_collection, is_integer, value_shown
from topicslab.errors import InputError
from topicslab.model.closed_forms import closed_forms, persistent_forms
from topicslab.taxonomy import Taxonomy, resolve

#: float64 values of the subset expansion evaluated at once (512 MB). The forms of every type
#: at once held 2^k·r·T·m of them: 5.6 GB of peak RSS for T = 2,000 paper types at r = 8
#: (measured); the forms are means over the types, so larger mixtures are summed block by block
_EXPANSION_VALUES = 1 << 26

_Forms = tuple[torch.Tensor, torch.Tensor, torch.Tensor]


def _mean_over_type_blocks(forms: Callable[[int, int], _Forms], types: int,
                           values_per_type: int) -> _Forms:
    """``forms(lo, hi)`` (the closed forms of types lo..hi-1, a mean over them) averaged over
    all ``types``, at most ``_EXPANSION_VALUES // values_per_type`` types at a time; one call
    (the same numbers as before blocking) when they all fit."""
    block = max(1, _EXPANSION_VALUES // max(values_per_type, 1))
    if types <= block:
        return forms(0, types)
    total: list[torch.Tensor] = []
    for lo in range(0, types, block):
        hi = min(types, lo + block)
        part = [f * (hi - lo) for f in forms(lo, hi)]
        total = part if not total else [a + b for a, b in zip(total, part, strict=True)]
    qs, qw, qa = (t / types for t in total)
    return qs, qw, qa

__all__ = ["TypeMixture"]


@dataclass
class TypeMixture:
    """A uniform mixture of T types, each with r weeks of k slots (see the module docstring).

    Attributes:
        theta: ``float32[T, r, k, m]`` logits (topics in dense-index order); the second axis
            holds the paper's weeks, or a persistent type's M modes.
        taxonomy: the taxonomy of the topic axis.
        metadata: provenance (seed, statistics fingerprint, optimiser, fitted week pairs...);
            ``weeks`` gives a persistent model's default number of weeks.
        stay: ``float32[T, M, k]`` slot stay probabilities of persistent types (``None``: the
            paper's types; then the two mode fields are ``None`` too).
        mode_weights: ``float32[T, M]`` mode probabilities (rows sum to 1).
        mode_stay: ``float32[T]`` probability that a week keeps last week's mode.
    """

    theta: npt.NDArray[np.float32]
    taxonomy: Taxonomy
    metadata: dict[str, Any] = field(default_factory=dict)
    stay: npt.NDArray[np.float32] | None = None
    mode_weights: npt.NDArray[np.float32] | None = None
    mode_stay: npt.NDArray[np.float32] | None = None

    def __post_init__(self) -> None:
        self.taxonomy = resolve(self.taxonomy)
        theta = np.asarray(self.theta)
        if theta.ndim != 4:
            raise InputError(f"theta must be [T, r, k, m], got shape {theta.shape}",
                             field="theta")
        if theta.shape[3] != self.taxonomy.size:
            raise InputError(f"theta has {theta.shape[3]} topics, taxonomy "
                             f"{self.taxonomy.version} has {self.taxonomy.size}",
                             field="theta")
        if min(theta.shape[:3]) < 1:
            raise InputError(f"theta must have T, r, k >= 1, got shape {theta.shape}",
                             field="theta")
        if not np.isfinite(theta).all():
            raise InputError("theta has non-finite logits", field="theta")
        self.theta = np.ascontiguousarray(theta, dtype=np.float32)
        parts = (self.stay, self.mode_weights, self.mode_stay)
        if any(x is not None for x in parts):
            if any(x is None for x in parts):
                raise InputError("persistent types need stay, mode_weights and mode_stay",
                                 field="stay")
            T, M, k = theta.shape[:3]
            for name, shape in (("stay", (T, M, k)), ("mode_weights", (T, M)),
                                ("mode_stay", (T,))):
                arr = np.asarray(getattr(self, name), dtype=np.float64)
                if arr.shape != shape:
                    raise InputError(f"{name} must have shape {shape}, got {arr.shape}",
                                     field=name)
                if not (np.isfinite(arr).all() and (arr >= 0).all() and (arr <= 1).all()):
                    raise InputError(f"{name} must hold probabilities in [0, 1]", field=name)
                setattr(self, name, np.ascontiguousarray(arr, dtype=np.float32))
            sums = np.asarray(self.mode_weights, dtype=np.float64).sum(axis=1)
            if np.abs(sums - 1).max() > 1e-4:
                raise InputError("mode_weights rows must sum to 1", field="mode_weights")
            w = self.metadata.get("weeks", 1)
            if not is_integer(w) or int(w) < 1:
                raise InputError(f"metadata 'weeks' must be a positive integer, got "
                                 f"{value_shown(w)}",
                                 field="weeks")

    # ------------------------------------------------------------------ shape
    @property
    def types(self) -> int:
        """T, the number of types."""
        return int(self.theta.shape[0])

    @property
    def variant(self) -> str:
        """``"persistent"`` (with stay probabilities) or ``"paper"``."""
        return "paper" if self.stay is None else "persistent"

    @property
    def weeks(self) -> int:
        """r, the number of fitted weeks (a user's default number of weeks)."""
        if self.stay is not None:
            return int(self.metadata.get("weeks", 1))
        return int(self.theta.shape[1])

    @property
    def modes(self) -> int:
        """M, the modes per persistent type (1 for the paper's types, which have none)."""
        return int(self.theta.shape[1]) if self.stay is not None else 1

    @property
    def k(self) -> int:
        """Slots per week."""
        return int(self.theta.shape[2])

    @property
    def m(self) -> int:
        """Number of topics."""
        return int(self.theta.shape[3])

    @property
    def week_pairs(self) -> list[tuple[int, int]]:
        """The ordered week pairs whose q_across was fitted (default consecutive pairs)."""
        pairs = self.metadata.get("week_pairs")
        if pairs is None:
            return [(i, i + 1) for i in range(self.weeks - 1)]
        return [(int(a), int(b)) for a, b in pairs]

    def __repr__(self) -> str:
        return (f"TypeMixture({self.variant}, T={self.types}, r={self.weeks}, k={self.k}, "
                f"m={self.m}, taxonomy={self.taxonomy.version})")

    # ------------------------------------------------------------ statistics
    def slot_probabilities(self) -> npt.NDArray[np.float64]:
        """``P[t, i, s, :] = softmax(theta[t, i, s, :])`` in float64 (persistent types: i is
        the mode, and these are the laws of its fresh draws)."""
        return torch.softmax(torch.from_numpy(self.theta).double(), dim=-1).numpy()

    def _checked_pairs(self, week_pairs: object) -> list[tuple[int, int]]:
        """``week_pairs`` as pairs of this model's weeks: a number was "'int' object is not
        iterable", text "not enough values to unpack", 1.5 read as week 1, and a week past
        the model's NumPy's or torch's IndexError (or a lag no week pair has)."""
        given: Any = week_pairs
        items = list(given) if is_collection(given) else None
        if items is None:
            raise InputError(f"week_pairs must be a list of (week, week) pairs, got "
                             f"{week_pairs!r:.60}", field="week_pairs")
        pairs = []
        for pair in items:
            two = list(pair) if is_collection(pair) else []
            if len(two) != 2:
                raise InputError(f"week_pairs must be (week, week) pairs, got {pair!r:.60}",
                                 field="week_pairs")
            # persistent types are stationary (any lag has its law: sample draws past the
            # fitted weeks); the paper's types have one row of parameters per week
            last = self.weeks - 1 if self.stay is None else 1022
            pairs.append(tuple(integer(w, "week_pairs", at_least=0, at_most=last,
                                       why=f"the model has {self.weeks} weeks"
                                       if self.stay is None else "weeks of at most 1023")
                               for w in two))
        return pairs  # type: ignore[return-value]

    def _forms(self, week_pairs: Sequence[tuple[int, int]] | None,
               ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64],
                          npt.NDArray[np.float64]]:
        pairs = self.week_pairs if week_pairs is None else self._checked_pairs(week_pairs)
        theta = torch.from_numpy(self.theta).double()
        T, rows, k, m = theta.shape
        if self.stay is None or self.mode_weights is None or self.mode_stay is None:
            with torch.no_grad():
                qs, qw, qa = _mean_over_type_blocks(
                    lambda lo, hi: closed_forms(theta[lo:hi], pairs), T, 2**k * rows * m)
            return qs.numpy(), qw.numpy(), qa.numpy()
        lags = sorted({abs(b - a) for a, b in pairs})
        if 0 in lags:
            raise InputError("a week pair needs two different weeks", field="week_pairs")
        with np.errstate(divide="ignore"):
            log_stay = torch.from_numpy(np.log(self.stay.astype(np.float64)))
        weights = self.mode_weights.astype(np.float64)
        weights /= weights.sum(axis=1, keepdims=True)  # exact in float64 (stored as float32)
        mode_weights = torch.from_numpy(weights)
        mode_stay = torch.from_numpy(self.mode_stay.astype(np.float64))
        with torch.no_grad():
            s1, w1, a1 = _mean_over_type_blocks(
                lambda lo, hi: persistent_forms(theta[lo:hi], mode_weights[lo:hi],
                                                mode_stay[lo:hi], log_stay[lo:hi], lags),
                T, 2**k * rows * m)
        r = self.weeks
        by_lag = {lag: a1[i].numpy() for i, lag in enumerate(lags)}
        across: npt.NDArray[np.float64] = (
            np.stack([by_lag[abs(b - a)] for a, b in pairs]) if pairs
            else np.zeros((0, self.m, self.m)))
        return (np.repeat(s1.numpy()[None], r, axis=0), np.repeat(w1.numpy()[None], r, axis=0),
                across)

    def statistics(self, week_pairs: Sequence[tuple[int, int]] | None = None,
                   ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64],
                              npt.NDArray[np.float64]]:
        """All three closed forms at once (float64): ``q_single[r, m]``,
        ``q_within[r, m, m]`` (zero diagonal), ``q_across[p, m, m]``."""
        qs, qw, qa = self._forms(week_pairs)
        idx = np.arange(self.m)
        qw[:, idx, idx] = 0.0
        return qs, qw, qa

    def q_single(self) -> npt.NDArray[np.float64]:
        """``q_single(θ; i, o) = Pr(o ∈ S_i)`` per fitted week: ``float64[r, m]``."""
        return self.statistics()[0]

    def q_within(self) -> npt.NDArray[np.float64]:
        """``q_within(θ; i, o1, o2) = Pr({o1, o2} ⊆ S_i)`` per week: ``float64[r, m, m]``,
        symmetric, zero diagonal."""
        return self.statistics()[1]

    def q_across(self, week_pairs: Sequence[tuple[int, int]] | None = None,
                 ) -> npt.NDArray[np.float64]:
        """``q_across(θ; i, j, o1, o2) = Pr(o1 ∈ S_i ∧ o2 ∈ S_j)`` per week pair
        (default: the fitted pairs, i.e. consecutive weeks): ``float64[p, m, m]``."""
        return self._forms(week_pairs)[2]
