"""``TypeMixture``: the paper's distribution over topic-set sequences (spec 01 §4, paper §5).

Public names:
    TypeMixture      theta ``float32[T, r, k, m]`` slot logits + taxonomy + metadata;
                     ``q_single()``, ``q_within()``, ``q_across()`` exact closed forms,
                     ``slot_probabilities()``

A user is drawn by picking a type uniformly from the T types and, for every week i and slot s,
a topic from softmax(theta[t, i, s, :]); the week's set is the distinct topics drawn
(Algorithm 2). Topics are dense indices of the taxonomy (ascending taxonomy id).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from topicslab.errors import InputError
from topicslab.model.closed_forms import closed_forms
from topicslab.taxonomy import Taxonomy, resolve

__all__ = ["TypeMixture"]


@dataclass
class TypeMixture:
    """A uniform mixture of T types, each with r weeks of k slots (paper §5).

    Attributes:
        theta: ``float32[T, r, k, m]`` logits (topics in dense-index order).
        taxonomy: the taxonomy of the topic axis.
        metadata: provenance (seed, statistics fingerprint, optimiser, fitted week pairs...).
    """

    theta: npt.NDArray[np.float32]
    taxonomy: Taxonomy
    metadata: dict[str, Any] = field(default_factory=dict)

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

    # ------------------------------------------------------------------ shape
    @property
    def types(self) -> int:
        """T, the number of types."""
        return int(self.theta.shape[0])

    @property
    def weeks(self) -> int:
        """r, the number of fitted weeks."""
        return int(self.theta.shape[1])

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
        return (f"TypeMixture(T={self.types}, r={self.weeks}, k={self.k}, m={self.m}, "
                f"taxonomy={self.taxonomy.version})")

    # ------------------------------------------------------------ statistics
    def slot_probabilities(self) -> npt.NDArray[np.float64]:
        """``P[t, i, s, :] = softmax(theta[t, i, s, :])`` in float64."""
        return torch.softmax(torch.from_numpy(self.theta).double(), dim=-1).numpy()

    def _forms(self, week_pairs: Sequence[tuple[int, int]] | None,
               ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64],
                          npt.NDArray[np.float64]]:
        with torch.no_grad():
            qs, qw, qa = closed_forms(torch.from_numpy(self.theta).double(),
                                      self.week_pairs if week_pairs is None else week_pairs)
        return qs.numpy(), qw.numpy(), qa.numpy()

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
