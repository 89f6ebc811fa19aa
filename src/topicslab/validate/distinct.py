"""An unconstrained statistic: distinct topics in a user's sets over several weeks (paper
§6, Fig. 5).

Public names:
    distinct_topics(sets, weeks=None) -> int16[n_users]         (None: 4, or all weeks if fewer)
    distinct_topics_comparison(population_sets, synthetic_sets, weeks=None) -> DistinctComparison
    DistinctComparison   histograms (counts and shares) of both, Pearson correlation of the
                         two share vectors; ``to_dict()`` (and mapping access to it)

The model is fitted to first- and second-order statistics only; how many different topics a
user shows over 4 weeks is not among them, so agreement here is evidence that the mixture
captures more than it was told (the paper reports 89% Pearson correlation). Sets are counted
as they are: synthetic weeks may hold fewer than k topics (Algorithm 2), padding happens only
when traces are simulated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from topicslab._checks import is_integer, value_shown
from topicslab.datamodel import TopicSets
from topicslab.errors import InputError

__all__ = ["DistinctComparison", "distinct_topics", "distinct_topics_comparison"]

_BLOCK = 1 << 18


#: weeks of the paper's Fig. 5 (distinct topics over four weeks)
_PAPER_WEEKS = 4


def _default_weeks(sets: TopicSets) -> int:
    return max(1, min(_PAPER_WEEKS, sets.n_weeks))


def distinct_topics(sets: TopicSets, weeks: int | None = None) -> npt.NDArray[np.int16]:
    """Number of distinct topics in each user's first ``weeks`` weekly sets (``None``: the
    paper's four (Fig. 5), or every week of sets that hold fewer)."""
    if not isinstance(sets, TopicSets):  # an array failed on .n_weeks (AttributeError)
        raise TypeError(f"distinct_topics takes TopicSets, got {type(sets).__name__}")
    if weeks is None:
        # (the default was 4 whatever the sets held: sets of one week were refused with
        # "weeks must be an integer in 1..1, got 4", an argument the caller never gave)
        weeks = _default_weeks(sets)
    # weeks=True counted one week, 2.5 was a TypeError and "4" one too
    if not is_integer(weeks) or not (
            1 <= weeks <= sets.n_weeks):
        raise InputError(f"weeks must be an integer in 1..{sets.n_weeks}, got {value_shown(weeks)}",
                         field="weeks")
    weeks = int(weeks)
    n = sets.n_users
    if sets.k == 0:  # (NumPy's "cannot reshape array of size 0 into shape (0)")
        return np.zeros(n, dtype=np.int16)
    out = np.empty(n, dtype=np.int16)
    for lo in range(0, n, _BLOCK):  # blocks keep the sort's temporaries small
        x = sets.sets[lo:lo + _BLOCK, :weeks, :].reshape(-1, weeks * sets.k)
        x = np.sort(x.astype(np.int16), axis=1)
        new = np.ones(x.shape, dtype=bool)
        new[:, 1:] = x[:, 1:] != x[:, :-1]
        out[lo:lo + _BLOCK] = (new & (x >= 0)).sum(axis=1)
    return out


@dataclass
class DistinctComparison:
    """Distribution of distinct topics per user, population vs synthetic (Fig. 5)."""

    values: npt.NDArray[np.int64]
    population_counts: npt.NDArray[np.int64]
    synthetic_counts: npt.NDArray[np.int64]
    pearson: float
    weeks: int

    @property
    def population_share(self) -> npt.NDArray[np.float64]:
        return self.population_counts / max(int(self.population_counts.sum()), 1)

    @property
    def synthetic_share(self) -> npt.NDArray[np.float64]:
        return self.synthetic_counts / max(int(self.synthetic_counts.sum()), 1)

    def __getitem__(self, key: str) -> Any:
        """Mapping access to ``to_dict()`` (``cmp["pearson"]``, ``cmp["population"]``)."""
        return self.to_dict()[key]

    def to_dict(self) -> dict[str, Any]:
        def mean(counts: npt.NDArray[np.int64]) -> float:
            tot = int(counts.sum())
            return float((counts * self.values).sum() / tot) if tot else float("nan")

        return {
            "weeks": self.weeks,
            "values": self.values.tolist(),
            "population": {"counts": self.population_counts.tolist(),
                           "share": self.population_share.tolist(),
                           "users": int(self.population_counts.sum()),
                           "mean": mean(self.population_counts)},
            "synthetic": {"counts": self.synthetic_counts.tolist(),
                          "share": self.synthetic_share.tolist(),
                          "users": int(self.synthetic_counts.sum()),
                          "mean": mean(self.synthetic_counts)},
            "pearson": self.pearson,
        }


def _pearson(a: npt.NDArray[np.float64], b: npt.NDArray[np.float64]) -> float:
    if a.size < 2 or a.std() == 0 or b.std() == 0:
        return float("nan")
    return float(np.corrcoef(a, b)[0, 1])


def distinct_topics_comparison(population_sets: TopicSets, synthetic_sets: TopicSets,
                               weeks: int | None = None) -> DistinctComparison:
    """Histograms of distinct topics over ``weeks`` weeks for both populations and the
    Pearson correlation between the two normalised histograms (over 0..weeks·k); ``None``:
    the paper's four weeks, or as many as the shorter of the two holds if fewer."""
    for name, given in (("population_sets", population_sets), ("synthetic_sets", synthetic_sets)):
        if not isinstance(given, TopicSets):  # (an AttributeError on .taxonomy)
            raise TypeError(f"distinct_topics_comparison takes TopicSets as {name}, got "
                            f"{type(given).__name__}")
    if population_sets.taxonomy.version != synthetic_sets.taxonomy.version:
        raise InputError("population and synthetic sets use different taxonomies",
                         field="taxonomy")
    # (sets of no users gave an all-zero histogram, compared as if it were one)
    for field, sets in (("population_sets", population_sets), ("synthetic_sets", synthetic_sets)):
        if sets.n_users == 0:
            raise InputError("the sets hold no users: there is nothing to compare", field=field)
    if weeks is None:
        weeks = min(_default_weeks(population_sets), _default_weeks(synthetic_sets))
    a = distinct_topics(population_sets, weeks)
    b = distinct_topics(synthetic_sets, weeks)
    top = weeks * max(population_sets.k, synthetic_sets.k)
    ca = np.bincount(a, minlength=top + 1).astype(np.int64)
    cb = np.bincount(b, minlength=top + 1).astype(np.int64)
    values = np.arange(top + 1, dtype=np.int64)
    sa = ca / max(int(ca.sum()), 1)
    sb = cb / max(int(cb.sum()), 1)
    return DistinctComparison(values, ca, cb, _pearson(sa, sb), weeks)
