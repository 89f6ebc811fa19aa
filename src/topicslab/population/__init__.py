"""The calibrated reference population: a stand-in for private Chrome browsing data.

A visits-based behavioural simulator (persistent, drifting interests; heterogeneous activity;
hierarchy and cross-category correlations) whose weekly profiles come from the mechanism's own
top-k with padding (Dick et al. §3), calibrated to the published statistics of the real release
(Dick et al. §4.2).

Public names:
    PopulationParams                 parameters (JSON round trip, ``fingerprint``)
    load_reference(taxonomy="v2")    the shipped calibrated parameters
    generate(n_users, n_weeks=4, *, seed, params, k, taxonomy, first_user, progress)
                                     -> TopicSets
    generate_chunks(n_users, n_weeks=4, *, chunk_users, ...)
                                     yields TopicSets chunks (streaming to disk)
    published_targets(taxonomy)      the 30 published values + 5 persistence ratios
    Target                           one published value (kind, labels, ids, value, tolerance)
    empirical_statistics(sets)       exact q_single[m], q_within[m, m], q_across[m, m]
    weekly_empirical_statistics(sets)
                                     the same of each week (transition)
    calibration_table(sets)          published vs generated rows + padded share
    calibrate(params, *, n_users, ...)
                                     re-run the calibration (also ``python -m
                                     topicslab.population.calibrate``)
    initial_params(taxonomy)         the uncalibrated long-tailed starting point
    Stress, STRESS_FAMILY            the stress family: knobs that change the population's
                                     structure (persistence, routine weeks, grouped interests,
                                     concentration, taxonomy) and its named variants
"""

from topicslab.population.calibrate import CalibrationResult, calibrate, initial_params
from topicslab.population.generator import generate, generate_chunks
from topicslab.population.params import PopulationParams, load_reference
from topicslab.population.stats import (
    CalibrationRow,
    CalibrationTable,
    calibration_table,
    empirical_statistics,
    weekly_empirical_statistics,
)
from topicslab.population.stress import STRESS_FAMILY, Stress, clique_partition
from topicslab.population.targets import Target, published_targets

__all__ = [
    "STRESS_FAMILY",
    "CalibrationResult",
    "CalibrationRow",
    "CalibrationTable",
    "PopulationParams",
    "Stress",
    "Target",
    "calibrate",
    "calibration_table",
    "clique_partition",
    "empirical_statistics",
    "generate",
    "generate_chunks",
    "initial_params",
    "load_reference",
    "published_targets",
    "weekly_empirical_statistics",
]
