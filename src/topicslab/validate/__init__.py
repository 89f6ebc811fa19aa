"""Validation of a fitted model and its synthetic data (Dick et al. §6, App. C).

Public names:
    fit_quality(stats, model, *, bar=None) -> FitQuality
        absolute / relative errors of every term of J (Fig. 3 and 4), the shares within
        0.1 pp and within 20% (terms ≥ 0.1%), per-family breakdown
    distinct_topics(sets, weeks=None) -> int16[n_users]  (None: 4, or every week if fewer)
    distinct_topics_comparison(population_sets, synthetic_sets, weeks=None) -> DistinctComparison
        histograms and their Pearson correlation (Fig. 5)
    stationarity(sets | model) -> Stationarity
        Pearson correlations between weeks and week transitions (Appendix C)
    weekly_statistics(sets | model) -> per-week q_single, q_within, per-transition q_across
    fidelity(population, synthetic, *, weeks, attacks, trials, tolerance) -> Fidelity
        exact expected re-identification risk of both for r = 1..R, every user a target:
        relative gaps with standard errors and the verdict (release fidelity)

Every result has ``to_dict()`` (JSON-ready).
"""

from topicslab.validate.distinct import (
    DistinctComparison,
    distinct_topics,
    distinct_topics_comparison,
)
from topicslab.validate.fidelity import Fidelity, RiskGap, fidelity
from topicslab.validate.fit_quality import FitQuality, fit_quality
from topicslab.validate.stationarity import Stationarity, stationarity, weekly_statistics

__all__ = [
    "DistinctComparison",
    "Fidelity",
    "FitQuality",
    "RiskGap",
    "Stationarity",
    "distinct_topics",
    "distinct_topics_comparison",
    "fidelity",
    "fit_quality",
    "stationarity",
    "weekly_statistics",
]
