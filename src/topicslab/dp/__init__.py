"""Differentially private statistics of topic sets with an exact privacy ledger
(Dick et al. §4; the release schema of docs/design.md §Files).

Public names:
    PrivacyBudget(epsilon, delta, accounting, split)   the release's budget, checked once
    ContributionBound(k, bound, weeks)             what one user contributes, checked once
                                                    (``params``; every engine takes both)
    compute_statistics(data, ...) -> DPStatistics    bounding, counts, Gaussian mechanism,
                                                    post-processing, ledger (``statistics``)
    release_counts(counts, taxonomy, ...)          the same from exact bounded counts (for
                                                    out-of-core / Spark backends)
    stream_statistics(path, ...) -> DPStatistics   out of core, chunk by chunk (``stream``)
    spark_statistics(path, master=, ...)           bounding + counting on Spark (``spark``;
                                                    needs ``topicslab[spark]``)
    DPStatistics                                    q_single, q_within, q_across, n_estimate,
                                                    taxonomy, k, ledger
    save_statistics(dir, stats) / load_statistics(dir)   public release schema (``release``)
    PrivacyLedger, load_ledger, ledger_tables      ``privacy_ledger.json`` (``ledger``)
    bound_contributions(sets, m, ...)              contribution bounding (``bounding``)
    pair_counts(bounded, m) -> PairCounts          within / across pair counts (``counts``)
    overlap_counts(bounded) -> int64[L, k+1]       the persistence statistic's counts
    plan_queries(...), calibrate_sigma(...)        Gaussian calibration (``mechanism``)
    compose(queries, delta)                        composed guarantees (``accounting``)
    discrete_gaussian(n, sigma, RandomWords(seed)) exact discrete Gaussian noise (``noise``)
"""

from topicslab.dp.accounting import compose
from topicslab.dp.bounding import BoundingReport, bound_contributions
from topicslab.dp.counts import PairCounts, overlap_counts, pair_counts
from topicslab.dp.ledger import PrivacyLedger, ledger_tables, load_ledger
from topicslab.dp.mechanism import GaussianQuery, calibrate_sigma, default_split, plan_queries
from topicslab.dp.noise import RandomWords, discrete_gaussian
from topicslab.dp.params import OVERLAP_SHARE, ContributionBound, PrivacyBudget
from topicslab.dp.release import load_statistics, save_statistics
from topicslab.dp.spark import spark_statistics
from topicslab.dp.statistics import DPStatistics, compute_statistics, release_counts
from topicslab.dp.stream import stream_statistics

__all__ = [
    "OVERLAP_SHARE",
    "BoundingReport",
    "ContributionBound",
    "DPStatistics",
    "GaussianQuery",
    "PairCounts",
    "PrivacyBudget",
    "PrivacyLedger",
    "RandomWords",
    "bound_contributions",
    "calibrate_sigma",
    "compose",
    "compute_statistics",
    "default_split",
    "discrete_gaussian",
    "ledger_tables",
    "load_ledger",
    "load_statistics",
    "overlap_counts",
    "pair_counts",
    "plan_queries",
    "release_counts",
    "save_statistics",
    "spark_statistics",
    "stream_statistics",
]
