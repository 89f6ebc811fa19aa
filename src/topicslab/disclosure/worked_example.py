"""The paper's worked example (Mac Aonghusa & Leith §4.5, Table 1):
M̂ = 0.32 / 0.08, calibrated 1.6 / 0.4.

C = {prostate}; the training set is given *after* preprocessing. The paper prints the third
advert with the term "treatment" but Table 1 counts it as "treat" (p̂_T(treat) = 5/12), so the
terms pass through ``Preprocessor.identity(exceptions={"treatment": "treat"})``: no further
stemming (Snowball would turn the printed stem "revers" into "rever") and no stop words (the
list would drop "here", a term of the example).

Public names:
    worked_example() -> WorkedExample      (``.to_dict()``)
    TRAINING, ADVERT, EXCEPTIONS           the paper's data
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from topicslab.disclosure.pri import PRI, Estimate
from topicslab.disclosure.text import Preprocessor

#: (label, terms after preprocessing) as printed in §4.5.
TRAINING: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("prostate", ("prostat", "cancer", "possibl", "risk", "learn", "here")),
    ("prostate", ("prostat", "cancer", "suffer", "treat")),
    ("other", ("diabet", "treatment", "suffer", "discov", "revers", "natur")),
    ("other", ("discov", "lifetim", "risk", "diabet")),
)
#: The observed advert of a probe during a prostate-cancer session.
ADVERT: tuple[str, ...] = ("patient", "choos", "safer", "treat", "here")
#: Table 1 merges "treatment" into "treat".
EXCEPTIONS = {"treatment": "treat"}


@dataclass(frozen=True)
class WorkedExample:
    """The fitted estimator and the estimate of the example advert."""

    pri: PRI
    advert: tuple[str, ...]
    estimate: Estimate

    def to_dict(self) -> dict[str, Any]:
        return {
            "categories": list(self.pri.categories),
            "dictionary": list(self.pri.dictionary.terms),
            "training": [{"label": lab, "terms": list(terms)} for lab, terms in TRAINING],
            "advert": list(self.advert),
            "table": self.pri.term_table(),
            **self.estimate.to_dict(),
        }


def worked_example() -> WorkedExample:
    """Fit the example's training set and estimate its advert (0.32 / 0.08; 1.6 / 0.4)."""
    pre = Preprocessor.identity(EXCEPTIONS)
    pri = PRI.fit(((lab, pre(terms)) for lab, terms in TRAINING), categories=("prostate",))
    advert = tuple(pre(ADVERT))
    return WorkedExample(pri, advert, pri.estimate([advert]))


__all__ = ["ADVERT", "EXCEPTIONS", "TRAINING", "WorkedExample", "worked_example"]
