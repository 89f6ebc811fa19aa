"""Quantitative information flow for the Topics API (Alvim et al., CCS 2024; issue 7).

Equation numbers below are the paper's.

QIF core on explicit matrices (``core``):
    prior_vulnerability(pi, g=None)          eq 1 (g=None: Bayes, eq 5)
    posterior_vulnerability(pi, C, g=None)   eq 2 (eq 7)
    multiplicative_leakage(pi, C, g=None)    eq 3
    bayes_capacity(C)                        eq 8
    max_case_capacity(C), epsilon(C)         eq 9 (inf when a column mixes 0 and non-0)
    k_anonymity(C), is_deterministic(C), joint, uniform, as_channel, as_prior

Composition (``compose``):
    cascade, internal_choice (eq 4), choice_labels, external_choice (eq 29),
    kron / kron_power (eq 24), parallel / parallel_power (eq 30)

Explicit Topics channels for small m, s (``channels``):
    all_sets, reporting_channel (eq 11), bounded_noise_channel, dp_channel,
    generalisation_channel, deterministic_channel, identity_channel, counting_channel (eq 25)

Structured Topics channels and closed forms (``topics``), never materialised:
    ReportingChannel (the one check of m, s, r), check_params, check_epochs, MAX_TOPICS,
    MAX_SET_SIZE, MAX_EPOCHS, p_q, counting_a_q, generalisation_capacity (eq 16),
    bounded_noise_capacity (eq 18), reporting_bayes_capacity (eq 21), reporting_epsilon (eq 22),
    reporting_max_case_capacity (eq 23), r_for_capacity (Table 7), multi_epoch_capacity and
    multi_epoch_max_case_capacity (App. C), multiplicity_partitions, tuples_with_partition,
    p_correct (Fig. 5, eq 27), iba_theorem7_bounds, iba_tight_lower_bound, iba_uniform_prior,
    parameter_row, parameter_table, round_half_up, TAXONOMY_SIZES

Population (``population``), Tables 2-4 analogues for one or several epochs:
    distinct_profiles -> Profiles, channel_sum / channel_sums -> Value, iba_vulnerabilities,
    population_tables -> PopulationTables, tables_memory (bytes, to refuse what cannot fit)

Corollary 1 (Carey et al.) without materialising the channel: ``coverage``
(corollary1_four_weeks, exact at four weeks) and ``cover_levels`` (corollary1_interval,
cover_levels -> CoverLevels: certified bounds at any number of weeks, from the exact sums over
unions of the users' boxes of ``box_unions``, resumable through a ``walk_log``).

Figures and report: tradeoff_figure, figure5, png_base64, report_section.
Errors: QIFError (a TopicsLabError); QIFParameterError (also a ParameterError naming the
parameter) for m, s, r and the epochs out of range.
"""

from topicslab.qif.channels import (
    all_sets,
    bounded_noise_channel,
    counting_channel,
    deterministic_channel,
    dp_channel,
    generalisation_channel,
    identity_channel,
    reporting_channel,
)
from topicslab.qif.compose import (
    cascade,
    choice_labels,
    external_choice,
    internal_choice,
    kron,
    kron_power,
    parallel,
    parallel_power,
)
from topicslab.qif.core import (
    as_channel,
    as_prior,
    bayes_capacity,
    epsilon,
    is_deterministic,
    joint,
    k_anonymity,
    max_case_capacity,
    multiplicative_leakage,
    posterior_vulnerability,
    prior_vulnerability,
    uniform,
)
from topicslab.qif.cover_levels import CoverLevels, corollary1_interval, cover_levels
from topicslab.qif.errors import QIFError, QIFParameterError
from topicslab.qif.figures import figure5, png_base64, tradeoff_figure
from topicslab.qif.population import (
    PopulationTables,
    Profiles,
    Value,
    channel_sum,
    channel_sums,
    distinct_profiles,
    iba_vulnerabilities,
    population_tables,
    tables_memory,
)
from topicslab.qif.report import report_section
from topicslab.qif.topics import (
    MAX_EPOCHS,
    MAX_SET_SIZE,
    MAX_TOPICS,
    TAXONOMY_SIZES,
    ReportingChannel,
    bounded_noise_capacity,
    check_epochs,
    check_params,
    counting_a_q,
    generalisation_capacity,
    iba_theorem7_bounds,
    iba_tight_lower_bound,
    iba_uniform_prior,
    multi_epoch_capacity,
    multi_epoch_max_case_capacity,
    multiplicity_partitions,
    p_correct,
    p_q,
    parameter_row,
    parameter_table,
    r_for_capacity,
    reporting_bayes_capacity,
    reporting_epsilon,
    reporting_max_case_capacity,
    round_half_up,
    tuples_with_partition,
)

__all__ = [
    "MAX_EPOCHS",
    "MAX_SET_SIZE",
    "MAX_TOPICS",
    "TAXONOMY_SIZES",
    "CoverLevels",
    "PopulationTables",
    "Profiles",
    "QIFError",
    "QIFParameterError",
    "ReportingChannel",
    "Value",
    "all_sets",
    "as_channel",
    "as_prior",
    "bayes_capacity",
    "bounded_noise_capacity",
    "bounded_noise_channel",
    "cascade",
    "channel_sum",
    "channel_sums",
    "check_epochs",
    "check_params",
    "choice_labels",
    "corollary1_interval",
    "counting_a_q",
    "counting_channel",
    "cover_levels",
    "deterministic_channel",
    "distinct_profiles",
    "dp_channel",
    "epsilon",
    "external_choice",
    "figure5",
    "generalisation_capacity",
    "generalisation_channel",
    "iba_theorem7_bounds",
    "iba_tight_lower_bound",
    "iba_uniform_prior",
    "iba_vulnerabilities",
    "identity_channel",
    "internal_choice",
    "is_deterministic",
    "joint",
    "k_anonymity",
    "kron",
    "kron_power",
    "max_case_capacity",
    "multi_epoch_capacity",
    "multi_epoch_max_case_capacity",
    "multiplicative_leakage",
    "multiplicity_partitions",
    "p_correct",
    "p_q",
    "parallel",
    "parallel_power",
    "parameter_row",
    "parameter_table",
    "png_base64",
    "population_tables",
    "posterior_vulnerability",
    "prior_vulnerability",
    "r_for_capacity",
    "report_section",
    "reporting_bayes_capacity",
    "reporting_channel",
    "reporting_epsilon",
    "reporting_max_case_capacity",
    "round_half_up",
    "tables_memory",
    "tradeoff_figure",
    "tuples_with_partition",
    "uniform",
]
