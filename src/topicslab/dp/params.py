"""The parameters of a DP release, checked once (Dick et al. §4.1-4.2).

* ``PrivacyBudget``: the total (ε, δ) under add/remove-one-user neighbours, how the
  composition of the release's Gaussian mechanisms is accounted (``paper`` / ``tight``) and how
  the budget is split over the queries.
* ``ContributionBound``: what one user may contribute, exactly ``k`` distinct topics in each
  selected week, and what happens to an over-long week (``reject`` / ``truncate``).

Each checks its fields in ``__post_init__`` and raises ``ParameterError`` naming the field
(``epsilon``, ``delta``, ``accounting``, ``split``, ``k``, ``bound``, ``weeks``: the options of
``topicslab stats`` of the same names). ``topicslab stats`` builds them before it reads any
data and every engine (``compute_statistics``, ``stream_statistics``, ``spark_statistics``,
``release_counts``, ``bound_contributions``, ``plan_queries``) takes them; the checks that
need the data (``k`` against the taxonomy's size, ``weeks`` against the input's weeks, one
``split`` share per query) are methods here too, so that no engine checks a parameter itself.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Literal

from topicslab._checks import (
    choice,
    flag,
    integer,
    is_collection,
    number,
    object_or_keywords,
    refuse,
)
from topicslab.io._common import MAX_WEEKS

Accounting = Literal["paper", "tight"]
BoundMode = Literal["reject", "truncate"]
ACCOUNTINGS: tuple[Accounting, ...] = ("paper", "tight")
BOUND_MODES: tuple[BoundMode, ...] = ("reject", "truncate")
#: the paper's budget: ε = ln 3, δ = 1e-15 (Dick et al. §4.2)
LN3 = math.log(3)
PAPER_DELTA = 1e-15
#: the largest ε accepted. ε bounds a log-likelihood ratio: at ε = 50 an attacker's odds may
#: already grow e^50 ≈ 5e21-fold, no protection at all; values up to 1e6 are accepted for
#: releases that want near-exact statistics (σ ≈ 0.005 counts, e.g. tests), larger ones only
#: break the calibration's numerics (the analytic Gaussian fails near ε = 1e300)
MAX_EPSILON = 1e6
#: below this the noise is over a million times the sensitivity (nothing of the counts
#: survives) and a query's share of it can underflow to 0 (``5e-324 / 2``)
MIN_EPSILON = 1e-6
#: how far from 1 the shares of a split may sum (they are then normalised)
SPLIT_TOLERANCE = 1e-9
#: the default share of the persistence query (``ContributionBound.overlap_lags``): a
#: histogram of k + 1 bins per lag, one unit per user and lag, against C(m, 2) and m² pair
#: counts; 5% of the budget leaves its bins at ~1e-3 of n at 1M users and ε = ln 3 and
#: raises the pair queries' σ by ~5% (docs/fidelity.md §4c)
OVERLAP_SHARE = 0.05

__all__ = ["ACCOUNTINGS", "BOUND_MODES", "LN3", "MAX_EPSILON", "OVERLAP_SHARE", "PAPER_DELTA",
           "Accounting",
           "BoundMode", "ContributionBound", "PrivacyBudget", "budget_of", "consecutive",
           "contribution_of", "default_split", "refuse_overlap"]


def default_split(n_weeks: int, overlap: bool = False) -> list[float]:
    """Half to within-week queries, half to across-week queries (paper: 25/25/50 for 2 weeks);
    with the persistence query (``overlap``), ``OVERLAP_SHARE`` to it (last) and the rest
    split so."""
    # (2**70 weeks: "OverflowError: cannot fit 'int' into an index-sized integer")
    n = integer(n_weeks, "weeks", at_least=1, at_most=MAX_WEEKS,
                why="a release needs at least one week, and topic sets hold at most "
                    f"{MAX_WEEKS:,}")
    overlap = flag(overlap, "overlap")  # ("no" was taken as true)
    pairs = [1.0] if n == 1 else [0.5 / n] * n + [0.5 / (n - 1)] * (n - 1)
    if not overlap:
        return pairs
    return [x * (1 - OVERLAP_SHARE) for x in pairs] + [OVERLAP_SHARE]


@dataclass(frozen=True)
class PrivacyBudget:
    """The (ε, δ) of a whole release, its accounting and its split over the queries.

    Attributes:
        epsilon: total ε in [``MIN_EPSILON``, ``MAX_EPSILON``]. ε = 0 would need infinite
            noise (and below 1e-6 the noise drowns every count), and the
            Gaussian calibration (Prop. 4) is defined for 0 < ε < ∞ only; past
            ``MAX_EPSILON`` (1e6) there is no privacy left to account and the calibration's
            numerics break.
        delta: total δ in (0, 1). The Gaussian mechanism is never pure ε-DP, so δ = 0 cannot
            be met; δ ≥ 1 promises nothing. (A δ ≥ 1/n allows releasing a user's data
            outright: ``topicslab stats`` warns once n is known.)
        accounting: ``"paper"`` (each query gets its share of ε and δ, basic composition) or
            ``"tight"`` (one zCDP budget for the whole release); see ``dp.mechanism``.
        split: one positive share per query (within-week queries, then across-week pairs),
            summing to 1 (within 1e-9; normalised); ``None``: half to each family, the
            paper's 25/25/50 for two weeks. Its length is checked against the weeks of the
            release by ``shares`` (the number of queries is known only then).
    """

    epsilon: float = LN3
    delta: float = PAPER_DELTA
    accounting: Accounting = "paper"
    split: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", number(
            self.epsilon, "epsilon", lo=MIN_EPSILON, hi=MAX_EPSILON,
            why="below 1e-6 the noise drowns every count (and epsilon = 0 needs infinite "
                "noise); past 1e6 nothing is private"))
        object.__setattr__(self, "delta", number(
            self.delta, "delta", lo=0.0, hi=1.0, lo_open=True, hi_open=True,
            why="Gaussian noise needs delta > 0, and delta >= 1 promises nothing"))
        choice(self.accounting, "accounting", ACCOUNTINGS)
        if self.split is not None:
            # (a 0-d array was "TypeError: iteration over a 0-d array")
            if not is_collection(self.split):
                raise refuse(f"split must be a list of shares, got {self.split!r}", "split")
            shares = tuple(number(x, "split", lo=0.0, lo_open=True,
                                  why="every query needs a positive share of the budget")
                           for x in self.split)
            total = math.fsum(shares)
            if not shares or abs(total - 1) > SPLIT_TOLERANCE:
                raise refuse(f"split shares must sum to 1, got {total:g}", "split")
            object.__setattr__(self, "split", shares)

    def shares(self, n_weeks: int, overlap: bool = False) -> list[float]:
        """The share of each of the ``2 n_weeks - 1`` queries of a release of ``n_weeks``
        weeks (``n_weeks`` within-week queries, then ``n_weeks - 1`` across-week pairs), and
        of the persistence query last when the release has one (``overlap``)."""
        if self.split is None:
            return self._usable(default_split(n_weeks, overlap))
        n_q = 2 * n_weeks - 1 + int(overlap)
        if len(self.split) != n_q:
            extra = ", 1 persistence" if overlap else ""
            raise refuse(f"split needs {n_q} shares for {n_weeks} weeks ({n_weeks} "
                         f"within-week, {n_weeks - 1} across-week{extra}), got "
                         f"{len(self.split)}", "split")
        total = math.fsum(self.split)
        return self._usable([x / total for x in self.split])

    def _usable(self, shares: list[float]) -> list[float]:
        """``shares``, once each query's part of δ (and, with paper accounting, of ε) is a
        budget itself: δ = 5e-324 split four ways is 0, and a share of 1e-300 leaves an ε far
        below ``MIN_EPSILON``; each was refused as if the user had given that δ or ε ("delta
        must be in (0, 1), got 0")."""
        for i, x in enumerate(shares):
            part = f"query {i + 1} of {len(shares)} (share {x:.3g})"
            if not x * self.delta > 0:
                raise refuse(f"delta {self.delta:g} split over the release's {len(shares)} "
                             f"queries leaves {part} a delta of 0: give a larger delta",
                             "delta")
            if self.accounting == "paper" and x * self.epsilon < MIN_EPSILON:
                field = "epsilon" if self.split is None else "split"
                raise refuse(f"epsilon {self.epsilon:g} split over the release's "
                             f"{len(shares)} queries leaves {part} an epsilon of "
                             f"{x * self.epsilon:.3g}, below {MIN_EPSILON:g}: give it a larger "
                             f"share{' (--split)' if self.split is not None else ''} or a "
                             "larger epsilon", field)
        return shares


def consecutive(weeks: Sequence[int]) -> bool:
    """Whether ``weeks`` are consecutive and increasing: the across-week statistics pair each
    released week with the next one, and every reader takes the pair as week J-1 -> J."""
    return all(b == a + 1 for a, b in pairwise(weeks))


@dataclass(frozen=True)
class ContributionBound:
    """What one user contributes to a release (the Lemma of Dick et al. §4.2).

    The L2 sensitivities Δ2(f_ww) = sqrt(C(k, 2)) and Δ2(f_w,w+1) = k hold only if every user
    contributes exactly ``k`` distinct topics to every selected week; ``bound_contributions``
    enforces it.

    Attributes:
        k: topics per user and week after bounding (the Topics API's top 5). At least 2: the
            within-week statistics count pairs of topics, and with k = 1 no user has a pair
            (Δ2 = sqrt(C(1, 2)) = 0); at most the taxonomy's size (``check_topics``).
        bound: an over-long week is an error (``"reject"``) or keeps its ``k`` lowest topic
            ids (``"truncate"``).
        weeks: the input's weeks to release (distinct week indices, 0 = the first week);
            ``None``: the paper's first two (one if the input has one). Checked against the
            input by ``select_weeks``.
        overlap_lags: L ≥ 0. With L > 0 the release also holds the *persistence* statistic
            (not in Dick et al.; docs/fidelity.md §4c): for ℓ = 1..L, how many users share
            0, 1, ..., k topics between the first released week w0 and week w0 + ℓ. Pair
            statistics fix only the mean of that overlap, and the synthetic data's risk
            depends on its spread. Each user adds one unit to one bin per lag: L2
            sensitivity √L. Weeks w0 + ℓ are bounded like the released weeks.
    """

    k: int = 5
    bound: BoundMode = "reject"
    weeks: tuple[int, ...] | None = None
    overlap_lags: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "k", integer(
            self.k, "k", at_least=2,
            why="the within-week statistics count pairs of a user's topics"))
        choice(self.bound, "bound", BOUND_MODES)
        if self.weeks is not None:
            # (a 0-d array or tensor is Iterable by its type, and its iteration a TypeError)
            if (isinstance(self.weeks, str | bytes) or not isinstance(self.weeks, Iterable)
                    or getattr(self.weeks, "ndim", 1) == 0):
                raise refuse(f"weeks must be a list of week indices, got {self.weeks!r}",
                             "weeks")
            weeks = tuple(integer(w, "weeks", at_least=0, why="weeks are indices 0, 1, ... "
                                  "of the input's weeks") for w in self.weeks)
            if not weeks or len(set(weeks)) != len(weeks):
                raise refuse(f"weeks must be distinct week indices, got {list(weeks)}",
                             "weeks")
            if not consecutive(weeks):
                # the across-week statistics pair each released week with the next one, and
                # the fit reads every pair as one week to the next: 0,2 was fitted as a
                # two-week gap in one week, 1,0 as a week backwards
                raise refuse(f"weeks must be consecutive and increasing (e.g. 0,1 or 1,2,3): "
                             f"the fit reads each pair of released weeks as one week to the "
                             f"next, got {','.join(map(str, weeks))}", "weeks")
            object.__setattr__(self, "weeks", weeks)
        object.__setattr__(self, "overlap_lags", integer(
            self.overlap_lags, "overlap_lags", at_least=0, at_most=MAX_WEEKS - 1,
            why="the number of week distances of the persistence statistic (0: none), each "
                f"a week of the input, which holds at most {MAX_WEEKS} weeks"))

    def overlap_weeks(self, n_weeks: int) -> list[int]:
        """The weeks w0 + 1 .. w0 + L of the persistence statistic (w0: the first released
        week), checked against an input of ``n_weeks`` weeks."""
        if not self.overlap_lags:
            return []
        w0 = self.select_weeks(n_weeks)[0]
        last = w0 + self.overlap_lags
        if last >= n_weeks:
            raise refuse(f"overlap_lags {self.overlap_lags} needs weeks {w0}..{last}",
                         "overlap_lags", f"the input has {n_weeks} weeks")
        return list(range(w0 + 1, last + 1))

    def check_topics(self, m: int) -> None:
        """Refuse a ``k`` above the taxonomy's ``m`` topics (a week cannot hold more
        distinct topics than there are)."""
        if m < 2:  # (was "k must be in 2..1, got 5": a range no k is in)
            raise refuse(f"the taxonomy has {m} topic; the release counts pairs of topics, "
                         "so it needs a taxonomy of at least 2", "taxonomy")
        if self.k > m:
            raise refuse(f"k must be in 2..{m}, got {self.k}", "k",
                         f"the taxonomy has {m} topics")

    def select_weeks(self, n_weeks: int) -> list[int]:
        """The weeks released from an input of ``n_weeks`` weeks."""
        if n_weeks < 1:
            raise refuse("the input has no weeks", "weeks")
        if self.weeks is None:
            return list(range(min(2, n_weeks)))
        late = [w for w in self.weeks if w >= n_weeks]
        if late:
            raise refuse(f"weeks must be distinct values in 0..{n_weeks - 1}, got "
                         f"{list(self.weeks)}", "weeks",
                         f"the input has {n_weeks} week{'' if n_weeks == 1 else 's'}")
        return list(self.weeks)


def refuse_overlap(contribution: ContributionBound, engine: str) -> None:
    """The out-of-core and Spark engines count pairs only: refuse the persistence statistic
    there rather than release without it."""
    if contribution.overlap_lags:
        raise refuse(f"the persistence statistic (overlap_lags = {contribution.overlap_lags})"
                     f" is computed by the local engine only, not {engine}; use --engine "
                     "local or --overlap-lags 0", "overlap_lags")


def budget_of(budget: PrivacyBudget | None = None, *, epsilon: float | None = None,
              delta: float | None = None, accounting: Accounting | None = None,
              split: Sequence[float] | None = None) -> PrivacyBudget:
    """``budget``, or the one the engines' keyword form describes (``None``: the default).

    Giving both is a ``TypeError``: which would win is not obvious.
    """
    return object_or_keywords(PrivacyBudget, budget, "budget", epsilon=epsilon, delta=delta,
                              accounting=accounting, split=split)


def contribution_of(contribution: ContributionBound | None = None, *, k: int | None = None,
                    bound: BoundMode | None = None, weeks: Sequence[int] | None = None,
                    overlap_lags: int | None = None) -> ContributionBound:
    """``contribution``, or the one the engines' keyword form describes (``None``: the
    default); giving both is a ``TypeError``."""
    return object_or_keywords(ContributionBound, contribution, "contribution", k=k,
                              bound=bound, weeks=weeks, overlap_lags=overlap_lags)
