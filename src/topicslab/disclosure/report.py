"""The disclosure section of the end-to-end report, and the tables the CLI prints.

:func:`report_section` returns the same kind of dict as ``topicslab.qif.report_section``: the
numbers, an HTML fragment under ``"html"`` (a ``<section>`` with tables and the figures embedded
as ``data:`` PNG URIs, no external resources) and ``"figures"`` mapping a figure name to its
``data:`` URI; plus ``"title"``. Every value but ``"html"`` is JSON-serialisable.

Public names:
    report_section(result, worked=None, figures=True) -> dict
    rate_rows(result), topic_rows(result), example_rows(worked)   (header, rows) tables
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable
from typing import Any

from topicslab._html import table
from topicslab._numbers import format_number
from topicslab.disclosure.experiment import DisclosureResult
from topicslab.disclosure.figures import ln_m_figure, png_data_uri, rates_figure
from topicslab.disclosure.worked_example import WorkedExample, worked_example

TITLE = "Sensitive-interest disclosure (ε-indistinguishability, PRI)"


def _ci(v: dict[str, Any]) -> str:
    rate, lo, hi = (format_number(x, percent=True) for x in (v["rate"], *v["ci95"]))
    return f"{rate} [{lo}, {hi}]"


def rate_rows(result: DisclosureResult) -> tuple[list[str], list[list[str]]]:
    """Per ρ: detection / false-positive rate (95% Wilson), time to detection, white box."""
    header = ["ρ", "detection (95% CI)", "false positive (95% CI)", "mean epochs to detect",
              "E[X] (epochs)", "white box: ln M > ε", "median first epoch",
              "non-sensitive: ln M > ε"]
    rows = []
    for r in result.per_rho:
        ttd = r.evaluation.time_to_detection
        wb = r.whitebox
        rows.append([f"{r.rho:g}", _ci(r.detection), _ci(r.false_positive),
                     format_number(ttd["mean"]), format_number(r.evaluation.runs.expected_x),
                     format_number(wb.get("violated"), percent=True),
                     format_number(wb.get("first_epoch_median")),
                     format_number(wb.get("other_violated"), percent=True)])
    return header, rows


def topic_rows(result: DisclosureResult) -> tuple[list[str], list[list[str]]]:
    """Per ρ and sensitive topic: Table 3's four rates (sessions) and the white box."""
    header = ["ρ", "topic", "proxies", "True Detect", "False Other", "False Detect",
              "True Other", "white box: ln M > ε", "median first epoch"]
    rows = []
    for r in result.per_rho:
        per_cat = r.whitebox.get("per_category") or [{}] * len(result.categories)
        for cat, t, wb in zip(result.categories, r.evaluation.per_topic, per_cat, strict=True):
            rows.append([f"{r.rho:g}", t.category, ", ".join(str(x) for x in cat.proxies),
                         *(format_number(x, percent=True) for x in
                           (t.true_detect, t.false_other, t.false_detect, t.true_other,
                            wb.get("violated"))),
                         format_number(wb.get("median_first_epoch"))])
    return header, rows


def example_rows(worked: WorkedExample) -> tuple[list[str], list[list[str]]]:
    """The worked example: M̂ and the calibrated ratio per category."""
    est = worked.estimate
    header = ["category", "M̂", "calibrated M̂ / mass · |T|/|T(c)|"]
    rows = [[c, format_number(est.m_hat[c]), format_number(est.calibrated[c])]
            for c in worked.pri.categories]
    return header, rows


def _table(caption: str, header: list[str], rows: Iterable[list[str]]) -> str:
    return table(caption, header, rows, cls="disclosure")


def report_section(result: DisclosureResult, *, worked: WorkedExample | None = None,
                   figures: bool = True) -> dict[str, Any]:
    """Numbers and an HTML fragment for the disclosure section of the report."""
    worked = worked or worked_example()
    s = result.settings
    out: dict[str, Any] = {
        "title": TITLE,
        "worked_example": {"m_hat": worked.estimate.m_hat,
                           "calibrated": worked.estimate.calibrated},
        "settings": dict(s),
        "per_rho": [{"rho": r.rho, "detection": r.detection,
                     "false_positive": r.false_positive,
                     "time_to_detection": r.evaluation.time_to_detection,
                     "expected_x": r.evaluation.runs.expected_x,
                     "per_topic": [t.to_dict() for t in r.evaluation.per_topic],
                     "whitebox": {k: v for k, v in r.whitebox.items()}}
                    for r in result.per_rho],
        "figures": {},
    }
    cats = "; ".join(f"{c.name} → {', '.join(str(t) for t in c.proxies)}"
                     for c in result.categories)
    parts = [
        f"<section class=\"disclosure\"><h2>{html.escape(TITLE)}</h2>",
        "<p>PRI estimator (Mac Aonghusa &amp; Leith) checked on the paper's worked example, "
        "then applied to Topics API answers: the sensitive interest leaks through proxy "
        f"topics ({html.escape(cats)}); a persona sends a share ρ of its visits to them. "
        f"{s['probe_sites']} probe sites call the API every epoch; bands "
        f"(mean ± {s['n_sigma']:g}σ, {s['sides']}-sided) are learned on "
        f"{s['train_personas']} training personas per group and evaluated on "
        f"{s['personas']} test personas per group over {s['epochs']} epochs (a session = the "
        f"first {s['session_probes']} probe epochs). White box: exact mechanism likelihood, "
        f"Monte Carlo over {s['mc_samples']} personas per group, prior "
        f"{html.escape(', '.join(f'{k} {v:.3g}' for k, v in s['prior'].items()))}, "
        f"ε = {s['epsilon']:.4g}. Seed {s['seed']}; k = {s['k']}, p = {s['p']}, taxonomy "
        f"{html.escape(str(s['taxonomy']))}.</p>",
        _table("Worked example (§4.5): expected 0.32 / 0.08, calibrated 1.6 / 0.4",
               *example_rows(worked)),
        _table("Detection vs ρ (sessions; 95% Wilson intervals)", *rate_rows(result)),
        _table("Per topic, one vs rest (Table 3 analogue)", *topic_rows(result)),
    ]
    if figures:
        for name, alt, caption, fn in (
            ("rates", "detection and false-positive rate vs rho",
             "Detection and false-positive rates vs ρ (95% Wilson bars) and the white-box "
             "share of sensitive personas with ln M > ε.", rates_figure),
            ("ln_m", "ln M over epochs and time to detection",
             "White-box median ln M over epochs (ε dotted; ln M(c) ≤ ln 1/π(c) = "
             f"{math.log(1 / min(v for v in s['prior'].values() if v > 0)):.3g} for the least "
             "likely group) and "
             "black-box cumulative detection by epoch.", ln_m_figure),
        ):
            uri = png_data_uri(fn(result))
            out["figures"][name] = uri
            parts.append(f"<figure><img alt=\"{html.escape(alt)}\" src=\"{uri}\"/>"
                         f"<figcaption>{html.escape(caption)}</figcaption></figure>")
    parts.append("</section>")
    out["html"] = "".join(parts)
    return out


__all__ = ["TITLE", "example_rows", "rate_rows", "report_section", "topic_rows"]
