"""The release report: ``results.json`` numbers -> one self-contained HTML page.

Sections follow the paper's evaluation (Dick et al. §6, Appendix C): parameters and input,
population calibration, DP statistics and privacy ledger, top topics (Fig. 1), fit (loss curve),
fit quality (Fig. 3/4), distinct topics (Fig. 5), stationarity (Fig. 8 / App. C),
re-identification with the verdict (Fig. 6), QIF, disclosure, timings and environment.

Public names:
    build_report(results, *, statistics, synthetic, population, errors_path) -> str
    SECTION_IDS   the ids of the sections every complete report has
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

from topicslab.report import figures as fg
from topicslab.report.html import Section, figure, fmt, paragraph, render, table

SECTION_IDS = ("summary", "input", "population", "ledger", "top-topics", "fit", "fit-quality",
               "distinct-topics", "stationarity", "reidentification", "qif", "disclosure",
               "timings")


def _pct(x: Any) -> str:
    return "—" if x is None else f"{100 * float(x):.3f}%"


def _strip_heading(fragment: str) -> str:
    """Sections built by other modules carry their own <h2>; the report adds its own."""
    return re.sub(r"<h2>.*?</h2>", "", fragment, count=1, flags=re.S)


def _summary(r: dict[str, Any]) -> Section:
    fq = r.get("fit_quality") or {}
    rows: list[list[Any]] = [
        ["input", r["input"]["kind"] + (f" ({r['input']['path']})" if r["input"]["path"] else "")],
        ["users", (r.get("population") or {}).get("users") or r["sample"]["users"]],
        ["weeks", r["parameters"]["weeks"]],
        ["fit: terms within 0.1 pp", _pct(fq.get("share_abs_within_0.1pp"))],
        ["fit: terms ≥ 0.1% within 20% relative", _pct(fq.get("share_rel_within_20pct"))],
    ]
    reid = r["reidentification"]
    for side in ("population", "synthetic"):
        for att, v in sorted((reid.get(side) or {}).items()):
            rows.append([f"re-identification, {side}, {att}",
                         f"{_pct(v['mean'])} ± {_pct(v['std'])}"])
    return Section("summary", "Summary", table("Headline figures", ["", "value"], rows))


def _inputs(r: dict[str, Any]) -> Section:
    p = r["parameters"]
    rows = [[k, ", ".join(map(str, v)) if isinstance(v, list) else v] for k, v in p.items()]
    rows.insert(0, ["preset", r["preset"]])
    rows.insert(1, ["seed", r["seed"]])
    inp = r["input"]
    body = table("Run parameters (paper defaults unless the preset says otherwise)",
                 ["parameter", "value"], rows)
    body += table("Input", ["", ""], [["kind", inp["kind"]], ["path", inp["path"]],
                                      ["fingerprint", inp["fingerprint"]]])
    if inp["kind"] == "stats":
        body += paragraph("The run starts from published DP statistics: there is no population, "
                          "so the re-identification comparison covers the synthetic side only "
                          "and no verdict is possible.", "note")
    return Section("input", "Parameters and input", body)


def _population(r: dict[str, Any]) -> Section:
    pop = r.get("population")
    if pop is None:
        return Section("population", "Population",
                       paragraph("No population in this run (started from DP statistics).",
                                 "note"))
    body = table("Population", ["", ""], [["users", pop["users"]], ["weeks", pop["weeks"]],
                                          ["taxonomy", pop.get("taxonomy")]])
    cal = pop.get("calibration")
    if cal:
        body += paragraph("The built-in reference population stands in for private browsing "
                          "data; it is calibrated to the published statistics of the real "
                          "release (spec 01 §3). Calibration check:")
        body += table(f"Published vs generated ({pop.get('calibration_users', 0):,} users)",
                      ["statistic", "published", "generated", "relative error", "ok"],
                      [[c["name"], c["published"], c["generated"],
                        f"{c['relative_error']:+.1%}", c["within_tolerance"]] for c in cal])
    return Section("population", "Population", body)


def _ledger(r: dict[str, Any]) -> Section:
    st = r["dp_statistics"]
    led = st.get("ledger")
    if not led:
        return Section("ledger", "DP statistics and privacy ledger",
                       paragraph("These statistics came without a privacy ledger.", "note"))
    mech = table("Gaussian mechanisms", ["mechanism", "query", "Δ₂", "σ", "ε_i", "δ_i"],
                 [[m["name"], m["query"], m["sensitivity"], m["sigma"], m["epsilon"],
                   m["delta"]] for m in led["mechanisms"]])
    comp = led["composition"]
    claimed = led["claimed"]
    rows = [["claimed (ε, δ)", f"({fmt(claimed['epsilon'])}, {claimed['delta']:g})"],
            ["basis", claimed.get("basis")],
            ["accounting", led["accounting"]],
            ["composed ε, discrete noise (zCDP, proven)", comp["zcdp"]["epsilon"]],
            ["composed ε if the noise were continuous", comp["gaussian"]["epsilon"]],
            ["basic composition Σε_i", comp["basic"]["epsilon"]],
            ["neighbouring relation", led["neighbouring_relation"]],
            ["noise", f"{led['noise']['distribution']}; source {led['noise']['source']}"],
            ["post-processing", led["post_processing"]],
            ["estimated users n̂", st.get("n_estimate")]]
    if claimed.get("warning"):
        rows.append(["warning", claimed["warning"]])
    return Section("ledger", "DP statistics and privacy ledger",
                   mech + table("Guarantee", ["", ""], rows))


def _top_topics(r: dict[str, Any], statistics: Any, synthetic: Any, population: Any) -> Section:
    from topicslab.population import empirical_statistics

    tax = statistics.taxonomy
    order = np.argsort(-statistics.q_single)[:20]
    series = {"DP statistics": statistics.q_single[order]}
    series["synthetic"] = empirical_statistics(synthetic)[0][order]
    if population is not None:
        series["population"] = empirical_statistics(population)[0][order]
    labels = [tax.labels[i] for i in order]
    rows = [[labels[j], *[_pct(v[j]) for v in series.values()]] for j in range(len(order))]
    body = figure(fg.top_topics(labels, series), "Top 20 topics by q_single (Fig. 1)")
    body += table("q_single of the top topics", ["topic", *series], rows)
    return Section("top-topics", "Top topics (Fig. 1)", body)


def _fit(r: dict[str, Any]) -> Section:
    f = r["fit"]
    rows = [["types T", f["types"]], ["weeks r", f["weeks"]], ["optimizer", f["optimizer"]],
            ["steps", f["steps"]], ["final loss", f["final_loss"]], ["seconds", f["seconds"]]]
    body = table("Fit of the type mixture (reads the DP statistics only)", ["", ""], rows)
    hist = f.get("history") or []
    if len(hist) >= 2:
        plt = fg._pyplot()
        fig, ax = plt.subplots(figsize=(6.5, 3.2))
        ax.plot([h["seconds"] for h in hist], [h["loss"] for h in hist])
        ax.set_yscale("log")
        ax.set_xlabel("seconds")
        ax.set_ylabel("objective J")
        ax.set_title("Loss curve")
        body += figure(fg._png(fig), "Objective J over wall time")
    return Section("fit", "Model fit", body)


def _fit_quality(r: dict[str, Any], errors_path: Path | None) -> Section:
    fq = r["validation"]["fit_quality"]
    rows = [[k, v] for k, v in fq.items() if not isinstance(v, dict | list)]
    body = table("Fit quality against the DP statistics", ["measure", "value"], rows)
    if errors_path is not None and Path(errors_path).exists():
        with np.load(errors_path) as z:
            ab, re_ = z["abs_err_pp"], z["rel_err"]
        body += figure(fg.error_cdfs(ab, re_), "Error CDFs (Fig. 3)")
        body += figure(fg.error_histograms(ab, re_), "Error histograms (Fig. 4)")
    return Section("fit-quality", "Fit quality (Fig. 3, 4)", body)


def _distinct(r: dict[str, Any]) -> Section:
    d = r["validation"].get("distinct_topics")
    if not d:
        return Section("distinct-topics", "Distinct topics (Fig. 5)",
                       paragraph("No population to compare with.", "note"))
    shares = {"population": d["population"]["share"], "synthetic": d["synthetic"]["share"]}
    body = figure(fg.distinct_topics(d["values"], shares, d.get("pearson"), d.get("weeks", 4)),
                  "Distinct topics per user over the weeks, population vs synthetic (Fig. 5)")
    body += paragraph(f"Pearson correlation of the two histograms: {fmt(d.get('pearson'))} "
                      f"(paper: 0.89). Mean distinct topics: population "
                      f"{fmt(d['population'].get('mean'))}, synthetic "
                      f"{fmt(d['synthetic'].get('mean'))}.")
    return Section("distinct-topics", "Distinct topics (Fig. 5)", body)


def _stationarity_rows(st: Any) -> list[list[Any]]:
    """``{family: [{a, b, pearson}]}`` -> rows (weeks are shown 1-based, as in the paper)."""
    if not st:
        return []
    rows = []
    for family in ("single", "within", "across"):
        for x in st.get(family) or []:
            a, b = x["a"], x["b"]
            def name(w: Any) -> str:
                return "–".join(str(i + 1) for i in w) if isinstance(w, list) else str(w + 1)
            rows.append([family, f"week {name(a)} vs {name(b)}", x["pearson"]])
    return rows


def _stationarity(r: dict[str, Any]) -> Section:
    v = r["validation"]
    body = paragraph("Pearson correlation of each statistic computed on different weeks or week "
                     "pairs (the stationarity assumption of the model; paper Appendix C: "
                     "≥ 0.997).")
    for side in ("population", "synthetic"):
        rows = _stationarity_rows(v.get(f"stationarity_{side}"))
        if rows:
            body += table(f"Stationarity, {side}", ["statistic", "between", "Pearson r"], rows)
    return Section("stationarity", "Stationarity (Fig. 8, Appendix C)", body)


def _reid(r: dict[str, Any]) -> Section:
    reid = r["reidentification"]
    p = reid["protocol"]
    risks: dict[str, dict[str, tuple[float, float]]] = {}
    rows = []
    for side in ("population", "synthetic"):
        for att, v in sorted((reid.get(side) or {}).items()):
            risks.setdefault(side, {})[att] = (v["mean"], v["std"])
            ci = v.get("ci95") or [None, None]
            rows.append([side, att, _pct(v["mean"]), _pct(v["std"]),
                         f"[{_pct(ci[0])}, {_pct(ci[1])}]", _pct(v.get("expected_mean"))])
    body = paragraph(f"Random-user protocol (spec 02): {p['weeks']} weeks, {p['targets']:,} "
                     f"targets per trial, {p['trials']} trials; the attacker links a target's "
                     "trace on site 2 to a user of site 1.")
    body += figure(fg.reidentification_bars(risks, p["weeks"]),
                   "Re-identification success, mean ± std over trials (Fig. 6)")
    body += table("Re-identification risk", ["data", "attack", "mean", "std", "95% CI",
                                             "expected (exact ties)"], rows)
    body += paragraph(r["verdict"]["text"], "note")
    body += paragraph("Deviation from the paper: " + reid["deviation"], "note")
    return Section("reidentification", "Re-identification (Fig. 6)", body)


def _external(section_id: str, title: str, block: Any, missing: str) -> Section:
    if not block:
        return Section(section_id, title, paragraph(missing, "note"))
    fragment = block.get("html") if "html" in block else block.get("section", {}).get("html")
    return Section(section_id, title, _strip_heading(fragment or ""))


def _timings(r: dict[str, Any]) -> Section:
    comp = r.get("stage_seconds_computed") or {}
    rows = []
    for k, v in r["stage_seconds"].items():
        c = comp.get(k)
        cached = k in r.get("cached_stages", [])
        rows.append([k, f"{v:.1f} s" + (" (cached)" if cached else ""),
                     "—" if c is None else f"{c:.1f} s"])
    rows.append(["total", f"{sum(r['stage_seconds'].values()):.1f} s",
                 f"{sum(c for c in comp.values() if c is not None):.1f} s"])
    env = [[k, v] for k, v in r["environment"].items()]
    return Section("timings", "Timings and environment",
                   table("Stage times", ["stage", "this run", "when computed"], rows)
                   + table("Environment", ["", ""], env))


def build_report(results: dict[str, Any], *, statistics: Any, synthetic: Any,
                 population: Any = None, errors_path: Path | None = None) -> str:
    """The HTML report of one ``topicslab run`` (see module docstring)."""
    r = results
    sections = [
        _summary(r), _inputs(r), _population(r), _ledger(r),
        _top_topics(r, statistics, synthetic, population), _fit(r), _fit_quality(r, errors_path),
        _distinct(r), _stationarity(r), _reid(r),
        _external("qif", "Privacy–utility trade-off (QIF)", r.get("qif"),
                  "QIF section not computed."),
        _external("disclosure", "Sensitive-interest disclosure", r.get("disclosure"),
                  "Disclosure section disabled for this run."),
        _timings(r),
    ]
    v = r["verdict"]
    subtitle = (f"topicslab {r['topicslab_version']} · preset {r['preset']} · "
                f"{r['input']['kind']} input · seed {r['seed']}")
    return render("Topics API DP synthetic data release — report", subtitle,
                  (v["pass"], v["text"]), sections)
