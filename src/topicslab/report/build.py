"""The release report: ``results.json`` numbers -> one self-contained HTML page.

Sections follow the paper's evaluation (Dick et al. §6, Appendix C): parameters and input,
population calibration, DP statistics and privacy ledger, top topics (Fig. 1) and top pairs
(Fig. 7), fit (loss curve), fit quality (Fig. 3/4), distinct topics (Fig. 5), stationarity
(Fig. 8 / App. C), release fidelity (risk against weeks observed, Carey et al. Fig. 2 style,
and the gap table: the verdict), the paper's re-identification protocol (Fig. 6), the
population's risk against r with the Bayes attacker and the bounds (Carey et al. Fig. 2,
``--theory``), the learned attack trained on the synthetic sample against the population
(Carey et al. Fig. 5, ``--learned``), QIF, disclosure, timings and environment.

Public names:
    build_report(results, *, statistics, synthetic, population, errors_path) -> str
    SECTION_IDS   the ids of the sections every complete report has
"""

from __future__ import annotations

import re
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from topicslab._numbers import format_number
from topicslab.report import figures as fg
from topicslab.report.html import Section, figure, fmt, paragraph, render, table

SECTION_IDS = ("summary", "input", "population", "ledger", "top-topics", "top-pairs", "fit",
               "fit-quality", "distinct-topics", "stationarity", "fidelity",
               "reidentification", "theory", "learned-attack", "qif", "disclosure",
               "timings")


#: the report's risks and shares: percentages to 3 decimals, by the one rule
_pct = partial(format_number, percent=True, decimals=3)


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
    if fq.get("share_within_2sigma") is not None:
        rows.append(["fit: terms within 2σ of the DP noise", _pct(fq["share_within_2sigma"])])
    fid = r.get("fidelity")
    if fid:
        worst = max((g for g in fid["gaps"] if g["gap"] is not None),
                    key=lambda g: abs(g["gap"]), default=None)
        if worst is not None:
            rows.append(["release fidelity: largest |gap| (r = 1.."
                         f"{max(g['weeks'] for g in fid['gaps'])}, both attacks)",
                         f"{worst['gap']:+.1%} ± {1.96 * worst['gap_se']:.1%} "
                         f"({worst['attack']}, r = {worst['weeks']}; tolerance "
                         f"±{fid['tolerance']:.0%})"])
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
                          "release (Dick et al. §4.2). Calibration check:")
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


def _top_topics(statistics: Any, synthetic_stats: Any, population_stats: Any) -> Section:
    tax = statistics.taxonomy
    order = np.argsort(-statistics.q_single)[:20]
    series = {"DP statistics": statistics.q_single[order]}
    series["synthetic"] = synthetic_stats[0][order]
    if population_stats is not None:
        series["population"] = population_stats[0][order]
    labels = [tax.labels[i] for i in order]
    rows = [[labels[j], *[_pct(v[j]) for v in series.values()]] for j in range(len(order))]
    body = figure(fg.top_topics(labels, series), "Top 20 topics by q_single (Fig. 1)")
    body += table("q_single of the top topics", ["topic", *series], rows)
    return Section("top-topics", "Top topics (Fig. 1)", body)


def _pair_label(tax: Any, a: int, b: int, arrow: str) -> str:
    def short(i: int) -> str:
        # a subtopic by its own name: "/Arts & Entertainment/TV & Video" -> "…/TV & Video"
        parts = str(tax.labels[i]).strip("/").split("/")
        lab = parts[0] if len(parts) == 1 else "…/" + parts[-1]
        return lab if len(lab) <= 22 else lab[:21] + "…"
    return f"{short(a)} {arrow} {short(b)}"


def _top_pairs(statistics: Any, synthetic_stats: Any, population_stats: Any,
               n: int = 10) -> Section:
    """Dick et al. Fig. 7: the top within-week and across-week pairs by their DP value."""
    tax = statistics.taxonomy
    body = paragraph("The most frequent pairs of the DP statistics, and the same pairs in the "
                     "synthetic data and (when there is one) the population: within a week "
                     "(both topics in the profile) and across consecutive weeks (the first "
                     "topic one week, the second the next).")
    for name, index, arrow in (("within-week", 1, "+"), ("across-week", 2, "→")):
        dp_mat = statistics.q_within if index == 1 else statistics.q_across
        mat = np.triu(dp_mat, 1) if index == 1 else dp_mat
        flat = np.argsort(-mat, axis=None)[:n]
        pairs = [tuple(int(x) for x in np.unravel_index(i, mat.shape)) for i in flat]
        series = {"DP statistics": [dp_mat[a, b] for a, b in pairs],
                  "synthetic": [synthetic_stats[index][a, b] for a, b in pairs]}
        if population_stats is not None:
            series["population"] = [population_stats[index][a, b] for a, b in pairs]
        labels = [_pair_label(tax, a, b, arrow) for a, b in pairs]
        body += figure(fg.top_pairs(labels, series, f"Top {n} {name} pairs (Fig. 7)"),
                       f"Top {n} {name} pairs: DP statistics vs synthetic vs population")
        body += table(f"Top {name} pairs", ["pair", *series],
                      [[labels[j], *[_pct(v[j]) for v in series.values()]]
                       for j in range(len(pairs))])
    return Section("top-pairs", "Top pairs (Fig. 7)", body)


def _fit(r: dict[str, Any]) -> Section:
    f = r["fit"]
    rows = [["model", f.get("model", "paper")], ["types T", f["types"]],
            ["weeks r", f["weeks"]], ["optimizer", f["optimizer"]],
            ["steps", f["steps"]], ["stopped", f.get("stopped")],
            ["final loss", f["final_loss"]], ["seconds", f["seconds"]]]
    if f.get("modes"):
        rows.insert(2, ["modes per type M", f["modes"]])
    for key, what in (("mode_stay_quantiles", "mode stay: 10/25/50/75/90% of types"),
                      ("stay_quantiles", "slot stay: 10/25/50/75/90% of slots")):
        if f.get(key):
            rows.append([what, " / ".join(f"{v:.3f}" for v in f[key].values())])
    body = table("Fit of the type mixture (reads the DP statistics only)", ["", ""], rows)
    if f.get("model") == "persistent":
        body += paragraph(
            "Persistent types: each type has M modes (weekly themes) with slot laws shared by "
            "all weeks; a week keeps last week's mode with the type's mode stay — and then "
            "each slot keeps its topic with its slot stay — or draws a new mode afresh. The "
            "paper's types draw every week independently given the type (run with --model "
            "paper for them). Persistence and alternation then live inside a type, so "
            "populations whose users keep their interests, or alternate between groups of "
            "them, need no type per profile.", "note")
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


def _fidelity(r: dict[str, Any]) -> Section:
    fid = r.get("fidelity")
    if not fid:
        return Section("fidelity", "Release fidelity: risk against weeks observed",
                       paragraph("No population to compare with (run from DP statistics).",
                                 "note"))
    z = 1.959963984540054
    body = paragraph(
        "Exact expected re-identification risk (tie-aware) of the population and of the "
        "synthetic data for every number of observed weeks r, both attacks, "
        + ("every user a target" if not fid.get("targets") else
           f"{fid['targets']:,} random targets per trial")
        + f", {fid['trials']} trial(s) (fresh API answers and fresh synthetic users each). The "
        f"gap is synthetic / population − 1; negative means the synthetic data under-states "
        f"the risk. Intervals are 95%. Tolerance ±{fid['tolerance']:.0%}.")
    body += figure(fg.risk_vs_weeks(fid["gaps"], fid["tolerance"]),
                   "Risk vs weeks observed (Carey et al. Fig. 2 style) and the relative gaps")
    rows = []
    for g in sorted(fid["gaps"], key=lambda g: (g["attack"], g["weeks"])):
        gap = "—" if g["gap"] is None else f"{g['gap']:+.2%} ± {z * g['gap_se']:.2%}"
        ok = "—" if g["gap"] is None else ("yes" if abs(g["gap"]) <= fid["tolerance"]
                                            else "NO")
        rows.append([g["attack"], g["weeks"],
                     f"{_pct(g['population'])} ± {_pct(z * g['population_se'])}",
                     f"{_pct(g['synthetic'])} ± {_pct(z * g['synthetic_se'])}", gap, ok])
    body += table("Gap table", ["attack", "r", "population", "synthetic", "relative gap",
                                f"within ±{fid['tolerance']:.0%}"], rows)
    body += paragraph(fid["text"], "note")
    for note in fid.get("notes") or []:
        body += paragraph(note, "note")
    return Section("fidelity", "Release fidelity: risk against weeks observed", body)


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
    body = paragraph(f"Random-user protocol (Carey et al.): {p['weeks']} weeks, {p['targets']:,} "
                     f"targets per trial, {p['trials']} trials; the attacker links a target's "
                     "trace on site 2 to a user of site 1.")
    body += figure(fg.reidentification_bars(risks, p["weeks"]),
                   "Re-identification success, mean ± std over trials (Fig. 6)")
    body += table("Re-identification risk", ["data", "attack", "mean", "std", "95% CI",
                                             "expected (exact ties)"], rows)
    one = r["verdict"].get("one_std_rule") or r["verdict"]
    body += paragraph("The paper's rule: " + one["text"], "note")
    refits = reid.get("refits")
    if refits:
        body += table("Fit-to-fit spread: one fit per trial (the paper's protocol)",
                      ["trial", "fit seed", "seconds", "loss J", "terms ≥ 0.1% within 20%",
                       "terms within 2σ"],
                      [[x["trial"], x["seed"], x["seconds"], x["loss"],
                        _pct(x["share_rel_within_20pct"]), _pct(x.get("share_within_2sigma"))]
                       for x in refits])
        body += paragraph("Protocol: " + reid["deviation"], "note")
    else:
        body += paragraph("Deviation from the paper: " + reid["deviation"], "note")
    return Section("reidentification", "The paper's re-identification protocol (Fig. 6)",
                   body)


def _theory(r: dict[str, Any]) -> Section:
    """Carey et al. Fig. 2: the population's risk against r, the Bayes attacker, the bounds."""
    th = r.get("theory")
    title = "Risk against weeks observed: attacks, Bayes attacker and bounds (Fig. 2)"
    if not th:
        return Section("theory", title, paragraph(
            "Not computed for this run (topicslab run --theory adds it).", "note"))
    rows = th["rows"]

    def bayes(row: dict[str, Any]) -> str:
        if row["bayes_exact"] is not None:
            return _pct(row["bayes_exact"]) + " (exact)"
        s = row.get("bayes_sampled")
        if not s:
            return "—"
        return f"{_pct(s['risk'])} [{_pct(s['ci95'][0])}, {_pct(s['ci95'][1])}] (sampled)"

    names = fg.theory_attacks(rows)
    header = ["r", *[f"{n} attack" for n in names], "Bayes attacker (Cor. 1)",
              "partial information (L2)", "matching (L4)", "mutual information (L9)",
              "k-anonymity (L7)", "LDP (L3)"]
    body = figure(fg.risk_and_bounds(rows, th["users"]),
                  "Risk against r on the population (Carey et al. Fig. 2)")
    body += table(f"The population's risk and bounds ({th['users']:,} users)", header,
                  [[row["weeks"], *[_pct(row[n]["risk"]) for n in names], bayes(row),
                    _pct(row.get("partial_information_bound")), _pct(row.get("matching_bound")),
                    _pct(row.get("mutual_information_bound")),
                    _pct(row.get("k_anonymity_bound")), _pct(row.get("ldp_bound"))]
                   for row in rows])
    body += paragraph(
        "The Bayes attacker knows every user's profiles and the mechanism (full information, "
        "Corollary 1): no attack on these traces does better on average. Its value is an exact "
        "sum over every possible trace where that sum fits the cell budget (three weeks of "
        "the v2 taxonomy) and an estimate from sampled traces, with its 95% interval, beyond. "
        "The partial-information figure (Lemma 2) is the Bayes risk under Theorem 1's "
        "independent-topics model, not a certified bound on the real traces; a dash is a bound "
        "out of reach or vacuous.", "note")
    return Section("theory", title, body)


def _learned_attack(r: dict[str, Any]) -> Section:
    """The learned attack trained on the release vs on the population (Carey et al. Fig. 5)."""
    la = r.get("learned_attack")
    title = "Learned attack trained on the synthetic release (Carey et al. App. E.1.3)"
    if not la:
        return Section("learned-attack", title, paragraph(
            "Not computed for this run (topicslab run --learned adds it).", "note"))
    rows = la["rows"]

    def gap(g: dict[str, Any]) -> str:
        return (f"{100 * g['mean']:+.3f} pp [{100 * g['ci95'][0]:+.3f}, "
                f"{100 * g['ci95'][1]:+.3f}]")

    def kept(row: dict[str, Any], key: str) -> str:
        epoch = row[key]["training"]["best_epoch"]
        return "asymmetric (nothing beat it)" if epoch is None or epoch < 0 else (
            "counted co-occurrence" if epoch == 0 else f"epoch {epoch}")

    header = ["r", "Hamming", "asymmetric", "learned (population)", "learned (synthetic)",
              "synthetic − asymmetric", "synthetic − population", "kept (synthetic)",
              "candidate recall"]
    body = figure(fg.learned_attack_curve(rows, la["users"]),
                  "Risk against r: the learned attack by its training data")
    body += table(f"Expected risk on the population ({la['users']:,} users, "
                  f"{la['targets']:,} targets × {la['trials']} trials per r), with the paired "
                  "gaps and their 95% intervals", header,
                  [[row["weeks"], _pct(row["hamming"]["risk"]), _pct(row["asymmetric"]["risk"]),
                    _pct(row["learned_population"]["risk"]),
                    _pct(row["learned_synthetic"]["risk"]),
                    gap(row["gaps"]["synthetic_vs_asymmetric"]),
                    gap(row["gaps"]["synthetic_vs_population"]),
                    kept(row, "learned_synthetic"),
                    _pct(row["learned_synthetic"]["candidate_recall"])]
                   for row in rows])
    body += paragraph(
        "Two learned attacks per r: one trained on the synthetic sample (what a researcher "
        "holding only the public release can do), one on the population (possible only with "
        "the private data). Both start from the asymmetric attack and keep a learned term only "
        f"where it beats it on a validation trial of their own training data "
        f"({la['epochs']} gradient epoch(s) after the counted co-occurrence). All four attacks "
        "attack the same targets of the population in the same trials, so the gaps are paired "
        "per target; the intervals are normal 95% intervals over all targets.", "note")
    return Section("learned-attack", title, body)


def _external(section_id: str, title: str, block: Any, missing: str) -> Section:
    if not block:
        return Section(section_id, title, paragraph(missing, "note"))
    fragment = block.get("html") if "html" in block else block.get("section", {}).get("html")
    return Section(section_id, title, _strip_heading(fragment or ""))


def _timings(r: dict[str, Any]) -> Section:
    comp = r.get("stage_seconds_computed") or {}
    peak = r.get("stage_peak_rss_mb") or {}
    rows = []
    for k, v in r["stage_seconds"].items():
        c, mb = comp.get(k), peak.get(k)
        cached = k in r.get("cached_stages", [])
        rows.append([k, f"{v:.1f} s" + (" (cached)" if cached else ""),
                     "—" if c is None else f"{c:.1f} s",
                     "—" if mb is None else f"{mb:,.0f} MB"])
    mbs = [mb for mb in peak.values() if mb is not None]
    rows.append(["total", f"{sum(r['stage_seconds'].values()):.1f} s",
                 f"{sum(c for c in comp.values() if c is not None):.1f} s",
                 f"{max(mbs):,.0f} MB" if mbs else "—"])
    env = [[k, v] for k, v in r["environment"].items()]
    return Section("timings", "Timings and environment",
                   table("Stage times", ["stage", "this run", "when computed",
                                         "peak memory so far"], rows)
                   + table("Environment", ["", ""], env))


def build_report(results: dict[str, Any], *, statistics: Any, synthetic: Any,
                 population: Any = None, errors_path: Path | None = None) -> str:
    """The HTML report of one ``topicslab run`` (see module docstring).

    ``synthetic`` and ``population``: the topic sets, or their ``empirical_statistics``
    computed beforehand (so that a run need not hold a 10M-user table until the report)."""
    from topicslab.datamodel import TopicSets
    from topicslab.population import empirical_statistics

    def stats_of(x: Any) -> Any:
        if not isinstance(x, tuple | TopicSets):  # (None: "m (taxonomy size) is required")
            raise TypeError("synthetic and population take TopicSets or their "
                            f"empirical_statistics, got {type(x).__name__}")
        return x if isinstance(x, tuple) else empirical_statistics(x)

    r = results
    syn_stats = stats_of(synthetic)
    pop_stats = stats_of(population) if population is not None else None
    sections = [
        _summary(r), _inputs(r), _population(r), _ledger(r),
        _top_topics(statistics, syn_stats, pop_stats),
        _top_pairs(statistics, syn_stats, pop_stats), _fit(r), _fit_quality(r, errors_path),
        _distinct(r), _stationarity(r), _fidelity(r), _reid(r), _theory(r),
        _learned_attack(r),
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
