"""Confidence bands of M̂(c) learned on training probes (Mac Aonghusa & Leith §6).

For each category c the band is mean ± n σ of M̂(c) over the training probes *labelled c*
(the paper uses n = 3, "taken after performing verification testing on the training data").
Options: ``sides`` ("two": [μ − nσ, μ + nσ]; "lower": [μ − nσ, ∞), one-sided, a value is only
outside when it is too small; "upper": (−∞, μ + nσ]) and ``clip`` (clip the limits to M̂'s
range [0, ∞); M̂ ≥ 0 always, so this changes the drawn band, never a decision on a valid M̂).
The standard deviation is the sample one (ddof = 1; 0 for a single probe).

Public names:
    Band            one category's limits (``inside``/``outside``)
    Bands           all categories; vectorised ``inside(m_hat[..., C])``
    learn_bands     from training M̂ and labels
    SIDES           the accepted ``sides`` values
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from topicslab._checks import flag, integer_array, number
from topicslab._json import json_number
from topicslab.errors import InputError

Sides = Literal["two", "lower", "upper"]
SIDES: tuple[str, ...] = ("two", "lower", "upper")


@dataclass(frozen=True)
class Band:
    """The band of one category: ``lower <= M̂(c) <= upper`` is inside."""

    category: str
    mean: float
    std: float
    lower: float
    upper: float
    n: int

    def inside(self, values: npt.ArrayLike) -> npt.NDArray[np.bool_]:
        v = np.asarray(values, dtype=np.float64)
        return (v >= self.lower) & (v <= self.upper)

    def outside(self, values: npt.ArrayLike) -> npt.NDArray[np.bool_]:
        return ~self.inside(values)

    def to_dict(self) -> dict[str, Any]:
        # (an open band's limit by the one JSON rule: "inf" / "-inf")
        return {"category": self.category, "mean": self.mean, "std": self.std,
                "lower": json_number(float(self.lower)), "upper": json_number(float(self.upper)),
                "n": self.n}


@dataclass(frozen=True)
class Bands:
    """Bands of every category (the column order of M̂)."""

    bands: tuple[Band, ...]
    n_sigma: float
    sides: str
    clip: bool

    @property
    def categories(self) -> tuple[str, ...]:
        return tuple(b.category for b in self.bands)

    @property
    def lower(self) -> npt.NDArray[np.float64]:
        return np.array([b.lower for b in self.bands])

    @property
    def upper(self) -> npt.NDArray[np.float64]:
        return np.array([b.upper for b in self.bands])

    def __getitem__(self, category: str) -> Band:
        for b in self.bands:
            if b.category == category:
                return b
        raise KeyError(category)

    def inside(self, m_hat: npt.ArrayLike) -> npt.NDArray[np.bool_]:
        """``bool[..., C]``: is M̂(c) inside band(c), for every column c."""
        arr = np.asarray(m_hat, dtype=np.float64)
        if arr.shape[-1:] != (len(self.bands),):
            raise InputError(f"M̂ must have a last axis of {len(self.bands)} categories")
        return (arr >= self.lower) & (arr <= self.upper)

    def to_dict(self) -> dict[str, Any]:
        return {"n_sigma": self.n_sigma, "sides": self.sides, "clip": self.clip,
                "bands": [b.to_dict() for b in self.bands]}


def learn_bands(
    m_hat: npt.ArrayLike,
    labels: npt.ArrayLike,
    categories: Sequence[str],
    *,
    n_sigma: float = 3.0,
    sides: str = "two",
    clip: bool = False,
) -> Bands:
    """Bands from training probes.

    Args:
        m_hat: ``float[n_probes, C]`` M̂ of the training probes.
        labels: ``int[n_probes]`` column index of each probe's label.
        categories: the C category names.
        n_sigma: half-width in standard deviations (3 in the paper).
        sides: "two", "lower" or "upper" (see the module docstring).
        clip: clip the limits to [0, ∞).
    """
    clip = flag(clip, "clip")
    # ("ab" was the two categories 'a' and 'b', a name twice two bands of one name, "3"
    # sigmas a TypeError out of NumPy and True one sigma)
    if isinstance(categories, str) or not all(isinstance(c, str) for c in categories):
        raise InputError(f"categories must be a list of category names, got {categories!r:.60}",
                         field="categories")
    if len(set(categories)) != len(categories):
        raise InputError("categories must be distinct names", field="categories")
    n_sigma = number(n_sigma, "n_sigma", lo=0.0, why="the band's half-width in standard "
                     "deviations")
    try:
        arr = np.asarray(m_hat, dtype=np.float64)
    except (TypeError, ValueError):  # (NumPy's "could not convert string to float")
        raise InputError("training M̂ must be numbers", field="m_hat") from None
    lab = integer_array(labels, "labels").astype(np.int64)  # (0.5 was label 0)
    c = len(categories)
    if arr.ndim != 2 or arr.shape[1] != c:
        raise InputError(f"training M̂ must be [n_probes, {c}], got {arr.shape}", field="m_hat")
    if lab.shape != (arr.shape[0],):
        raise InputError("labels must have one entry per training probe", field="labels")
    if lab.size and (lab.min() < 0 or lab.max() >= c):
        raise InputError(f"labels must be category indices in 0..{c - 1}", field="labels")
    if sides not in SIDES:
        raise InputError(f"sides must be one of {', '.join(SIDES)}, got {sides!r}",
                         field="sides")
    if not np.isfinite(n_sigma) or n_sigma < 0:
        raise InputError(f"n_sigma must be a non-negative number, got {n_sigma}",
                         field="n_sigma")
    if not np.isfinite(arr).all():
        raise InputError("training M̂ must be finite", field="m_hat")
    out = []
    for j, name in enumerate(categories):
        values = arr[lab == j, j]
        if values.size == 0:
            raise InputError(f"no training probe is labelled {name!r}", field="labels")
        mean = float(values.mean())
        std = float(values.std(ddof=1)) if values.size > 1 else 0.0
        lo = mean - n_sigma * std if sides in ("two", "lower") else -np.inf
        hi = mean + n_sigma * std if sides in ("two", "upper") else np.inf
        if clip:
            lo, hi = max(lo, 0.0), max(hi, 0.0)
        out.append(Band(name, mean, std, float(lo), float(hi), int(values.size)))
    return Bands(tuple(out), float(n_sigma), sides, bool(clip))


__all__ = ["SIDES", "Band", "Bands", "learn_bands"]
