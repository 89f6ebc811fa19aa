"""Detection rules on M̂ (Mac Aonghusa & Leith §6.1-6.2).

* Sensitive probe: M̂(other) lies outside band(other) (rejects "no sensitive learning").
* Sensitive session: some probe among the session's first ``session_probes`` (5) is sensitive.
* Topic c learned at a probe: M̂(c) inside band(c) *and* M̂(other) outside band(other).

Public names:
    Detector        bands + the catch-all name + session length; vectorised rules
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from topicslab._checks import integer
from topicslab.disclosure.bands import Bands
from topicslab.disclosure.pri import OTHER
from topicslab.errors import InputError


@dataclass(frozen=True)
class Detector:
    """The paper's rules for a fixed set of bands.

    Attributes:
        bands: one band per category, in M̂'s column order.
        other: the catch-all category c̄.
        session_probes: probes of a standard session (5 in the paper).
    """

    bands: Bands
    other: str = OTHER
    session_probes: int = 5

    def __post_init__(self) -> None:
        if self.other not in self.bands.categories:
            raise InputError(f"the bands have no catch-all category {self.other!r}",
                             field="other")
        # (1.5 failed later as a slice index)
        integer(self.session_probes, "session_probes", at_least=1)

    @property
    def categories(self) -> tuple[str, ...]:
        return self.bands.categories

    @property
    def other_index(self) -> int:
        return self.categories.index(self.other)

    def sensitive(self, m_hat: npt.ArrayLike) -> npt.NDArray[np.bool_]:
        """``[..., C] -> bool[...]``: M̂(other) outside band(other)."""
        return ~self.bands.inside(m_hat)[..., self.other_index]

    def learned(self, m_hat: npt.ArrayLike) -> npt.NDArray[np.bool_]:
        """``[..., C] -> bool[..., C]``: topic c learned (the ``other`` column is False)."""
        inside = self.bands.inside(m_hat)
        out = inside & ~inside[..., self.other_index : self.other_index + 1]
        out[..., self.other_index] = False
        return out

    def session(self, m_hat: npt.ArrayLike) -> npt.NDArray[np.bool_]:
        """``[..., probes, C] -> bool[...]``: a sensitive probe among the first few."""
        arr = _probes(m_hat)
        return np.asarray(self.sensitive(arr[..., : self.session_probes, :]).any(axis=-1))

    def session_topics(self, m_hat: npt.ArrayLike) -> npt.NDArray[np.bool_]:
        """``[..., probes, C] -> bool[..., C]``: topic learned at some probe of the session."""
        arr = _probes(m_hat)
        return np.asarray(self.learned(arr[..., : self.session_probes, :]).any(axis=-2))

    def first_detection(self, m_hat: npt.ArrayLike) -> npt.NDArray[np.int64]:
        """``[..., probes, C] -> int[...]``: 1-based first sensitive probe (0: none), all probes."""
        flags = self.sensitive(_probes(m_hat))
        return np.where(flags.any(axis=-1), flags.argmax(axis=-1) + 1, 0).astype(np.int64)


def _probes(m_hat: npt.ArrayLike) -> npt.NDArray[np.float64]:
    arr = np.asarray(m_hat, dtype=np.float64)
    if arr.ndim < 2:
        raise InputError("M̂ of a session must be [..., probes, categories]")
    return arr


__all__ = ["Detector"]
