"""The QIF section of the end-to-end report: numbers plus an HTML fragment."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from topicslab._checks import flag, is_integer, value_shown
from topicslab._html import table
from topicslab._json import json_number
from topicslab._numbers import format_number
from topicslab.datamodel import TopicSets
from topicslab.qif.errors import QIFParameterError
from topicslab.qif.figures import png_base64, tradeoff_figure
from topicslab.qif.population import MAX_CELLS, PopulationTables, population_tables
from topicslab.qif.topics import (
    ReportingChannel,
    check_epochs,
    counting_a_q,
    p_correct,
    parameter_table,
)


def _html_table(caption: str, header: list[str], rows: Iterable[list[Any]]) -> str:
    return table(caption, header, rows, cls="qif")


PARAM_COLUMNS = [("epochs", "epochs"), ("bayes_capacity", "ML×₁ (same set)"),
                 ("bayes_capacity_kronecker", "ML×₁ (indep. sets)"),
                 ("max_case_capacity", "e^ε"), ("epsilon", "ε")]


def population_rows(t: PopulationTables) -> list[list[Any]]:
    """(quantity, value, bound) rows of a population table, Tables 2-4 order."""
    rows: list[list[Any]] = [
        ["users N", t.n_users, None],
        ["distinct profiles |Σ|", t.n_profiles, t.cap_generalisation],
        ["topics that occur m′", t.m_prime, t.m],
        ["k-anonymity", t.k_anonymity, None],
        ["users with a unique profile", t.n_unique_users, None],
        ["users with an empty epoch", t.n_empty, None],
        ["Table 2 · leakage C_C (cookies)", t.leak_cookies, None],
        ["Table 2 · leakage C_BH C_G", t.leak_generalisation, t.cap_generalisation],
        ["Table 2 · leakage C_BH C_G C_BN", t.leak_bounded_noise, t.cap_bounded_noise],
        ["Table 2 · leakage C_T", t.leak_topics, t.cap_topics],
        ["Table 3 · prior V₁ on users", t.prior_users, None],
        ["Table 3 · posterior V₁ C_G", t.post_generalisation, None],
        ["Table 3 · prior V₁ on sets", t.prior_sets, None],
        ["Table 3 · posterior V₁ C_BN", t.post_bounded_noise, None],
        ["Table 3 · posterior V₁ C_BN⊕DP", t.post_reporting, None],
        ["Bayes leakage C_BN⊕DP", t.bayes_leakage_reporting, t.cap_topics],
    ]
    if t.iba_prior is not None:
        rows += [
            ["Table 4 · prior V_IBA", t.iba_prior, None],
            ["Table 4 · posterior V_IBA C_BN", t.iba_post_bounded_noise, 1.0],
            ["Table 4 · posterior V_IBA C_BN⊕DP", t.iba_post_reporting,
             f"[{format_number(t.iba_thm7_lower)}, {format_number(t.iba_thm7_upper)}] (Thm 7); "
             f"≥ {format_number(t.iba_tight_lower)}"],
            ["IBA leakage C_BN⊕DP", t.iba_leakage_reporting, None],
        ]
    for name, (lo, hi) in t.bounds.items():
        rows.append([f"{name} (bounds, not exact)", lo, hi])
    return rows


def report_section(sets: TopicSets | None = None, *, m: int = 469, s: int = 5,
                   r: float = 0.05, epochs: Iterable[int] | int = (1, 2, 3), week: int = 0,
                   weeks: list[int] | None = None, figures: bool = True,
                   max_cells: int = MAX_CELLS) -> dict[str, Any]:
    """Numbers and an HTML fragment for the QIF section of the report.

    Parameter-only rows (eqs 21-23, App. C) for ``m, s, r`` and each number of epochs; with
    ``sets`` also the Tables 2-4 analogues for ``week`` and, when the data has several weeks,
    for the sequence ``weeks`` (default: the first min(3, n_weeks) weeks). ``m`` is then the
    data's taxonomy size. Figures are embedded as base64 PNG.
    """
    if sets is not None:
        if not isinstance(sets, TopicSets):  # (True was "'bool' object has no attribute
            # 'taxonomy'")
            raise QIFParameterError(f"sets must be TopicSets or None, got "
                                    f"{type(sets).__name__}", field="sets")
        if not (is_integer(m) and int(m) in (469, sets.taxonomy.size)):
            # (m=10 was ignored without a word: the tables are of the taxonomy's topics; 469,
            # the default, goes with any)
            raise QIFParameterError(f"m is the taxonomy's size for TopicSets: "
                                    f"{sets.taxonomy.size} ({sets.taxonomy.version}), got "
                                    f"{value_shown(m, 60)}; leave it out", field="m")
        m = sets.taxonomy.size
    # the checked values (a Fraction r was taken, and then failed formatting the section:
    # "unsupported format string passed to Fraction.__format__")
    checked = ReportingChannel(m, s, r)
    m, s, r = checked.m, checked.s, checked.r
    # one number of epochs (epochs=3, as parameter_table takes it) was "'int' object is not
    # iterable": the same check as parameter_table's
    given: Any = epochs  # (check_epochs takes any value and says what is wrong)
    rows = parameter_table(m, s, r, check_epochs(given))
    a, q = counting_a_q(m, s, r)
    out: dict[str, Any] = {
        "m": m, "s": s, "r": r,
        "parameters": [{k: json_number(v) if isinstance(v, float) else v
                        for k, v in row.items()} for row in rows],
        "counting": {"A": json_number(a), "q": q,
                     "p_correct": {n: p_correct(n, s, r) for n in (2, 5, 10, 30)}},
        "population": None, "population_epochs": None, "figures": {},
    }
    parts = ["<section class=\"qif\"><h2>Privacy–utility trade-off (QIF)</h2>",
             f"<p>Reporting channel C_BN⊕<sub>r</sub>DP with m = {m}, s = {s}, r = {r}: "
             f"A = p/q = {format_number(a)}, q = {q:.6g}; P(correct count) for N = 10: "
             f"{p_correct(10, s, r):.4%}.</p>",
             _html_table("Parameter-only capacities (eqs 21–23, App. C)",
                         [label for _, label in PARAM_COLUMNS],
                         ([row[key] for key, _ in PARAM_COLUMNS] for row in rows))]
    if sets is not None:
        single = population_tables(sets, weeks=week, r=r, max_cells=max_cells)
        out["population"] = single.to_dict()
        parts.append(_html_table(f"Population, week {week} (Tables 2–4 analogues)",
                                 ["quantity", "value", "capacity / bound"],
                                 population_rows(single)))
        if sets.n_weeks > 1:
            seq = weeks if weeks is not None else list(range(min(3, sets.n_weeks)))
            multi = population_tables(sets, weeks=seq, r=r, max_cells=max_cells)
            out["population_epochs"] = multi.to_dict()
            # the weeks read (the caption showed weeks given as a generator as
            # "<generator object <genexpr> at 0x...>", and an array as "[0 1]")
            parts.append(_html_table(f"Population, weeks {multi.epochs} as one profile "
                                     "(App. C)",
                                     ["quantity", "value", "capacity / bound"],
                                     population_rows(multi)))
    if flag(figures, "figures", error=QIFParameterError):  # (an array was "ambiguous")
        uri = png_base64(tradeoff_figure(m, reference_s=s, reference_r=r))
        out["figures"]["tradeoff"] = uri
        parts.append(f"<figure><img alt=\"capacity and epsilon over r and s; Fig. 5\" "
                     f"src=\"{uri}\"/><figcaption>Bayes capacity and ε over (r, s) for "
                     f"m = {m}; probability of a correct count (Fig. 5).</figcaption>"
                     f"</figure>")
    parts.append("</section>")
    out["html"] = "".join(parts)
    return out


__all__ = ["population_rows", "report_section"]
