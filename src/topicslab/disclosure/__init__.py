"""Detecting sensitive-interest disclosure: ε-indistinguishability and the PRI estimator.

Implements Mac Aonghusa & Leith, "Don't let Google know I'm lonely" as a reusable
estimator over generic term observations, checked on the paper's worked example, and applies
it to Topics API answers (black box) next to the exact posterior/prior ratio (white box).

Text and estimator (``text``, ``terms``, ``pri``):
    Preprocessor, preprocess, tokenize, load_stop_words     tokenise, stop words, Snowball stems
    Dictionary                                              D and φ_D(x | X) (eq 13)
    PRI, Estimate, OTHER                                    eqs 14-17, calibrated ratio
    worked_example() -> WorkedExample                       0.32 / 0.08 (calibrated 1.6 / 0.4)

Detection and evaluation (``bands``, ``detection``, ``evaluation``):
    learn_bands, Bands, Band                                mean ± nσ, one/two-sided, clipping
    Detector                                                session and per-topic rules
    evaluate -> Evaluation (TopicRates, RunLengths)         Table 6.1, Table 3, §6.5 timing
    wilson_interval

Scripts (``script``): Script, Query, Wait, parse_script, read_script, write_script,
    make_script, paper_keywords

Topics API (``personas``, ``whitebox``, ``experiment``):
    SensitiveCategory, default_categories, PersonaModel, simulate_personas
    single_answer_likelihood_ratio                          1 + (1-p) m / (p k)
    log_likelihood, log_ratio, first_violation              white-box ln M_k(c)
    DisclosureDesign                                        the experiment's sizes, ρ and ε,
                                                            checked once (``design``)
    topics_experiment -> DisclosureResult                   detection vs ρ, white box

Report (``report``, ``figures``): report_section, rates_figure, ln_m_figure
"""

from topicslab.disclosure.bands import Band, Bands, learn_bands
from topicslab.disclosure.design import DisclosureDesign
from topicslab.disclosure.detection import Detector
from topicslab.disclosure.evaluation import (
    Evaluation,
    RunLengths,
    TopicRates,
    evaluate,
    wilson_interval,
)
from topicslab.disclosure.experiment import (
    DEFAULT_RHOS,
    DisclosureResult,
    RhoResult,
    topic_m_hat,
    topics_experiment,
)
from topicslab.disclosure.figures import ln_m_figure, rates_figure
from topicslab.disclosure.personas import (
    PersonaModel,
    Personas,
    SensitiveCategory,
    default_categories,
    simulate_personas,
)
from topicslab.disclosure.pri import OTHER, PRI, Estimate
from topicslab.disclosure.report import report_section
from topicslab.disclosure.script import (
    Query,
    Script,
    Wait,
    make_script,
    paper_keywords,
    parse_script,
    read_script,
    write_script,
)
from topicslab.disclosure.terms import Dictionary
from topicslab.disclosure.text import Preprocessor, load_stop_words, preprocess, tokenize
from topicslab.disclosure.whitebox import (
    first_violation,
    log_likelihood,
    log_ratio,
    single_answer_likelihood_ratio,
)
from topicslab.disclosure.worked_example import WorkedExample, worked_example

__all__ = [
    "DEFAULT_RHOS",
    "OTHER",
    "PRI",
    "Band",
    "Bands",
    "Detector",
    "Dictionary",
    "DisclosureDesign",
    "DisclosureResult",
    "Estimate",
    "Evaluation",
    "PersonaModel",
    "Personas",
    "Preprocessor",
    "Query",
    "RhoResult",
    "RunLengths",
    "Script",
    "SensitiveCategory",
    "TopicRates",
    "Wait",
    "WorkedExample",
    "default_categories",
    "evaluate",
    "first_violation",
    "learn_bands",
    "ln_m_figure",
    "load_stop_words",
    "log_likelihood",
    "log_ratio",
    "make_script",
    "paper_keywords",
    "parse_script",
    "preprocess",
    "rates_figure",
    "read_script",
    "report_section",
    "simulate_personas",
    "single_answer_likelihood_ratio",
    "tokenize",
    "topic_m_hat",
    "topics_experiment",
    "wilson_interval",
    "worked_example",
    "write_script",
]
