"""The report reads results.json's numbers by the one JSON rule: an infinite bound is "inf"
(drawn nowhere, shown as ∞), a NaN is null (shown as —)."""

from __future__ import annotations

import math

from topicslab._json import jsonable
from topicslab.report.build import _theory
from topicslab.report.figures import risk_and_bounds


def _rows() -> list[dict]:
    row = {"weeks": 1, "hamming": {"risk": 0.1, "ci95": [0.05, 0.15]}, "bayes_exact": 0.2,
           "bayes_interval": None, "bayes_sampled": None, "ldp_bound": math.inf,
           "k_anonymity_bound": 0.5, "matching_bound": math.nan,
           "partial_information_bound": 0.3, "mutual_information": 0.1,
           "mutual_information_bound": 2.0}
    return [row, {**row, "weeks": 2, "ldp_bound": 0.9}]


def test_theory_section_reads_inf_and_null() -> None:
    results = jsonable({"theory": {"users": 1000, "rows": _rows()}})
    assert results["theory"]["rows"][0]["ldp_bound"] == "inf"
    assert results["theory"]["rows"][0]["matching_bound"] is None
    html = _theory(results).html
    assert "∞" in html and "—" in html and ">inf<" not in html
    assert "90.000%" in html


def test_risk_figure_takes_raw_and_json_rows() -> None:
    for rows in (_rows(), jsonable(_rows())):
        assert risk_and_bounds(rows, 1000)[:4] == b"\x89PNG"
