"""The Hamming attack (Carey et al. §6, Example 1; App. E.1.1).

Name the site-1 user whose trace has the fewest weeks ``s`` with ``W_i^s != o^s``, i.e. the
most matching weeks; ties at random. Every match gains 1, whatever the category, so it applies
to any categorical sequences (e.g. the Million Song experiment, E.2).

Public names:
    HammingAttack
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from topicslab.api import Mechanism
from topicslab.attacks.attack import MatchSetAttack, register_attack


class HammingAttack(MatchSetAttack):
    """Most matching weeks wins (unweighted Hamming distance)."""

    name = "hamming"
    fits_views = True

    def fit(self, site1: npt.NDArray[np.integer], mechanism: Mechanism | None = None) -> None:
        """Nothing to learn."""

    def gains(self, queries: npt.NDArray[np.integer]) -> npt.NDArray[np.float64]:
        q = np.asarray(queries)
        return np.ones(q.shape, dtype=np.float64)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "distance": "number of mismatching weeks"}


register_attack("hamming", HammingAttack)

__all__ = ["HammingAttack"]
