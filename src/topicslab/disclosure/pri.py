"""The PRI estimator M̂_k(c) (Mac Aonghusa & Leith §4.4, Eqs. (14)-(17)) and the calibrated ratio.

Training set T = (label, filtered advert) pairs, labels in C ∪ {other}; D = the terms of T.

* p̂_{a_k}(w) = Σ_{a ∈ a_k} φ(w | a)        (eq 14, the adverts of probe k)
* p̂_T(w)     = Σ_{a ∈ T} φ(w | a)          (eq 15)
* p̂_c(w)     = Σ_{a ∈ T(c)} φ(w | a)       (eq 16)
* M̂_k(c)     = Σ_{w ∈ D} r(c, w) p̂_{a_k}(w),  r(c, w) = p̂_c(w) / p̂_T(w)   (eq 17)

Because T is partitioned by label, p̂_T = Σ_c p̂_c, so r(c, w) ∈ [0, 1] and Σ_c r(c, w) = 1:
Σ_c M̂_k(c) is the in-vocabulary mass Σ_w p̂_{a_k}(w). M̂ therefore estimates a (scaled)
*posterior* P(c | a_k), not the posterior/prior ratio of eq 9; dividing by the mass and by the
training prior |T(c)|/|T| gives the calibrated ratio
``M̂_k(c) / Σ_w p̂_{a_k}(w) · |T| / |T(c)|`` (1 when the probe says nothing about c).

Public names:
    PRI            fit / fit_counts; observe (eq 14), m_hat (eq 17), calibrated, estimate
    Estimate       M̂ and the calibrated ratio of one probe, with φ of its known terms
    OTHER          "other", the default name of the catch-all category c̄
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from topicslab._checks import integer_array
from topicslab.disclosure.terms import Dictionary, Term
from topicslab.errors import InputError

OTHER = "other"


@dataclass(frozen=True)
class Estimate:
    """PRI values of one probe (one set of adverts a_k)."""

    m_hat: dict[str, float]
    calibrated: dict[str, float | None]
    in_vocabulary_mass: float
    phi: dict[Term, float]

    def to_dict(self) -> dict[str, Any]:
        return {"m_hat": dict(self.m_hat), "calibrated": dict(self.calibrated),
                "in_vocabulary_mass": self.in_vocabulary_mass,
                "phi": {str(k): v for k, v in self.phi.items()}}


@dataclass(frozen=True)
class PRI:
    """A fitted PRI estimator.

    Attributes:
        dictionary: D, the terms of the training set.
        categories: the labels, catch-all ``other`` included (column order of every output).
        other: the name of the catch-all category c̄.
        p_c: ``float64[C, |D|]`` p̂_c(w) (eq 16).
        n_ads: ``int64[C]`` |T(c)|, the number of training adverts of each label.
        smoothing: additive smoothing α of the ratio, r(c, w) = (p̂_c(w) + α π(c)) /
            (p̂_T(w) + α) with π(c) = |T(c)|/|T| (0, the paper's estimator, by default). α > 0
            pulls rarely seen terms towards the prior instead of 0 or 1; Σ_c r(c, w) = 1 holds
            for every α.
    """

    dictionary: Dictionary
    categories: tuple[str, ...]
    other: str
    p_c: npt.NDArray[np.float64]
    n_ads: npt.NDArray[np.int64]
    smoothing: float = 0.0

    def __post_init__(self) -> None:
        c, d = len(self.categories), len(self.dictionary)
        if len(set(self.categories)) != c:
            raise InputError("category names must be distinct", field="categories")
        if self.other not in self.categories:
            raise InputError(f"the catch-all category {self.other!r} has no training adverts",
                             field="label")
        if c < 2:
            raise InputError("training needs at least one sensitive category besides "
                             f"{self.other!r}", field="label")
        if self.p_c.shape != (c, d) or self.n_ads.shape != (c,):
            raise InputError(f"p_c must be [{c}, {d}] and n_ads [{c}]")
        if not np.isfinite(self.smoothing) or self.smoothing < 0:
            raise InputError(f"smoothing must be >= 0, got {self.smoothing}", field="smoothing")
        if (self.n_ads <= 0).any():
            missing = self.categories[int(np.flatnonzero(self.n_ads <= 0)[0])]
            raise InputError(f"category {missing!r} has no training adverts", field="label")

    # ------------------------------------------------------------------ fitting
    @classmethod
    def fit(
        cls,
        training: Iterable[tuple[str, Sequence[Term]]],
        *,
        other: str = OTHER,
        categories: Sequence[str] | None = None,
        smoothing: float = 0.0,
    ) -> PRI:
        """Fit on (label, filtered advert) pairs; D is the set of their terms.

        ``categories`` fixes the column order (default: order of first appearance, ``other``
        last); a label outside it is an error.
        """
        labels: list[str] = []
        docs: list[Sequence[Term]] = []
        for row, item in enumerate(training):
            try:
                label, doc = item
            except (TypeError, ValueError):
                raise InputError("training items must be (label, terms) pairs",
                                 row=row) from None
            if not isinstance(label, str):
                raise InputError(f"label must be a string, got {label!r}", row=row,
                                 field="label")
            labels.append(label)
            docs.append(doc)
        if not docs:
            raise InputError("the training set is empty")
        if categories is None:
            order = list(dict.fromkeys(lab for lab in labels if lab != other))
            cats = (*order, other)
        else:
            cats = tuple(categories)
            if other not in cats:
                cats = (*cats, other)
        col = {c: i for i, c in enumerate(cats)}
        for row, lab in enumerate(labels):
            if lab not in col:
                raise InputError(f"unknown label {lab!r} (categories: {', '.join(cats)})",
                                 row=row, field="label")
        groups = np.array([col[lab] for lab in labels], dtype=np.int64)
        dictionary = Dictionary.from_documents(docs)
        p_c = dictionary.phi(docs, groups, n_groups=len(cats))
        n_ads = np.bincount(groups, minlength=len(cats)).astype(np.int64)
        return cls(dictionary, cats, other, p_c, n_ads, smoothing)

    @classmethod
    def fit_counts(
        cls,
        counts: npt.ArrayLike,
        n_ads: npt.ArrayLike,
        terms: Sequence[Term],
        categories: Sequence[str],
        *,
        other: str = OTHER,
        smoothing: float = 0.0,
    ) -> PRI:
        """Fit from per-label φ sums ``counts[C, n_terms]`` (eq 16) over candidate ``terms``.

        The fast path for one-term adverts (Topics API answers: φ = 1 for the answer), where
        ``counts[c, t]`` is the number of training answers t of label c. Terms never observed
        are left out of D, as D is the set of terms of T.
        """
        arr = np.asarray(counts, dtype=np.float64)
        if arr.ndim != 2 or arr.shape != (len(categories), len(terms)):
            raise InputError(f"counts must be [{len(categories)}, {len(terms)}], got "
                             f"{arr.shape}", field="counts")
        # (NaN counts were taken: the terms dropped without a word; an infinite count made
        # NaN ratios, and 4.5 adverts were 4)
        if not ((arr >= 0) & np.isfinite(arr)).all():
            raise InputError("counts must be non-negative numbers", field="counts")
        ads = np.asarray(integer_array(n_ads, "n_ads"), dtype=np.int64)
        keep = arr.sum(axis=0) > 0
        dictionary = Dictionary(tuple(t for t, k in zip(terms, keep, strict=True) if k))
        return cls(dictionary, tuple(categories), other, arr[:, keep], ads, smoothing)

    # ---------------------------------------------------------------- estimates
    @property
    def p_t(self) -> npt.NDArray[np.float64]:
        """p̂_T(w) (eq 15) = Σ_c p̂_c(w)."""
        return self.p_c.sum(axis=0)

    @property
    def ratio(self) -> npt.NDArray[np.float64]:
        """r(c, w) = p̂_c(w) / p̂_T(w), ``float64[C, |D|]``; each column sums to 1."""
        a = self.smoothing
        num = self.p_c + a * self.prior[:, None]
        den = self.p_t + a
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.0)

    @property
    def prior(self) -> npt.NDArray[np.float64]:
        """|T(c)| / |T|, the empirical prior of each label."""
        return self.n_ads / self.n_ads.sum()

    @property
    def other_index(self) -> int:
        return self.categories.index(self.other)

    @property
    def sensitive(self) -> tuple[str, ...]:
        """The sensitive categories C (all labels but ``other``)."""
        return tuple(c for c in self.categories if c != self.other)

    def observe(self, probes: Sequence[Sequence[Sequence[Term]]]) -> npt.NDArray[np.float64]:
        """p̂_{a_k}(w) (eq 14) of each probe: ``float64[n_probes, |D|]``.

        ``probes[k]`` is the list of adverts a_k of probe k, each a sequence of filtered terms.
        """
        docs: list[Sequence[Term]] = []
        groups: list[int] = []
        for k, ads in enumerate(probes):
            if isinstance(ads, str | bytes):
                raise InputError("a probe is a list of adverts (each a list of terms)", row=k)
            for ad in ads:
                docs.append(ad)
                groups.append(k)
        return self.dictionary.phi(docs, np.asarray(groups, dtype=np.int64),
                                   n_groups=len(probes))

    def m_hat(self, p_a: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """M̂_k(c) (eq 17) from p̂_{a_k}: ``[..., |D|] -> [..., C]``."""
        arr = np.asarray(p_a, dtype=np.float64)
        if arr.shape[-1:] != (len(self.dictionary),):
            raise InputError(f"p_a must have a last axis of |D| = {len(self.dictionary)}")
        return arr @ self.ratio.T

    def calibrated(self, m_hat: npt.ArrayLike, mass: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """M̂_k(c) / Σ_w p̂_{a_k}(w) · |T| / |T(c)|; NaN where the probe has no known term."""
        mh = np.asarray(m_hat, dtype=np.float64)
        ms = np.asarray(mass, dtype=np.float64)[..., None]
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(ms > 0, mh / np.where(ms > 0, ms, 1.0), np.nan) / self.prior

    def estimate(self, ads: Sequence[Sequence[Term]]) -> Estimate:
        """M̂ and the calibrated ratio of one probe with adverts ``ads``."""
        p_a = self.observe([ads])[0]
        mh = self.m_hat(p_a)
        mass = float(p_a.sum())
        cal = self.calibrated(mh, mass)
        return Estimate(
            m_hat={c: float(v) for c, v in zip(self.categories, mh, strict=True)},
            calibrated={c: (None if np.isnan(v) else float(v))
                        for c, v in zip(self.categories, cal, strict=True)},
            in_vocabulary_mass=mass,
            phi={t: float(v) for t, v in zip(self.dictionary.terms, p_a, strict=True) if v},
        )

    def term_table(self) -> list[dict[str, Any]]:
        """Per term: p̂_T(w) and p̂_c(w) for each label (Table 1 of the paper)."""
        p_t = self.p_t
        return [{"term": t, "p_T": float(p_t[i]),
                 **{c: float(self.p_c[j, i]) for j, c in enumerate(self.categories)}}
                for i, t in enumerate(self.dictionary.terms)]


__all__ = ["OTHER", "PRI", "Estimate"]
