"""The figures of the release report, after the paper's (Dick et al. §6, Appendix C).

Every function takes plain numbers (what ``results.json`` holds), draws with matplotlib's Agg
backend (no display) and returns PNG bytes; :func:`data_uri` embeds them in the HTML.

* :func:`top_topics` — Fig. 1: the most frequent topics, q_single per source.
* :func:`error_cdfs` / :func:`error_histograms` — Fig. 3 / Fig. 4: fit errors over all terms.
* :func:`distinct_topics` — Fig. 5: distinct topics per user over the weeks, two sources.
* :func:`reidentification_bars` — Fig. 6: attack success with error bars per source.
* :func:`risk_vs_weeks` — Carey et al. Fig. 2 style: exact expected risk against the weeks
  observed, population and synthetic, one line per (source, attack), with 95% intervals; and
  the relative gaps below it.
* :func:`risk_and_bounds` — Carey et al. Fig. 2 with the theory: the attacks, the Bayes-optimal
  attacker (Corollary 1) and the bounds against the weeks observed.
* :func:`learned_attack_curve` — Carey et al. Fig. 5 style: the learned attack trained on the
  synthetic sample and on the population against the hand-made attacks, risk against r.
* :func:`top_pairs` — Dick et al. Fig. 7: the top within-week and across-week pairs, DP
  statistics vs synthetic vs population.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from topicslab._json import number
from topicslab._plotting import png_bytes, pyplot
from topicslab._plotting import png_data_uri as data_uri

_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728")


_pyplot = pyplot


def _png(fig: Any, laid_out: bool = False) -> bytes:
    return png_bytes(fig, dpi=100, laid_out=laid_out)


def top_topics(labels: Sequence[str], series: Mapping[str, Sequence[float]],
               title: str = "Most frequent topics (Fig. 1)",
               xlabel: str = "share of user-weeks with the topic in the profile (%)") -> bytes:
    """Horizontal bars of q_single (as %) for the given topics, one bar per source."""
    plt = _pyplot()
    n = len(labels)
    fig, ax = plt.subplots(figsize=(7.5, 0.32 * n + 1.2))
    width = 0.8 / max(len(series), 1)
    y = np.arange(n)
    for i, (name, vals) in enumerate(series.items()):
        ax.barh(y + i * width, 100 * np.asarray(vals, dtype=float), height=width,
                label=name, color=_COLOURS[i % len(_COLOURS)])
    ax.set_yticks(y + width * (len(series) - 1) / 2)
    ax.set_yticklabels([lab if len(lab) <= 48 else "…" + lab[-47:] for lab in labels],
                       fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    ax.legend(fontsize=8)
    return _png(fig)


#: points of a drawn CDF: a figure's width holds fewer pixels, and drawing every one of the
#: ~330K terms took ~1.5 s per figure (measured)
_CDF_POINTS = 2048


def cdf_points(x: npt.ArrayLike, points: int = _CDF_POINTS,
               ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """The empirical CDF of ``x`` as at most ``points + 2`` (value, fraction) pairs: the
    sorted sample at evenly spaced ranks, always with the smallest and the largest value."""
    xs = np.sort(np.asarray(x, dtype=float).ravel())
    n = xs.size
    if n <= points:
        return xs, np.arange(1, n + 1) / max(n, 1)
    idx = np.unique(np.concatenate([[0], np.linspace(0, n - 1, points).astype(np.int64),
                                    [n - 1]]))
    return xs[idx], (idx + 1) / n


def _cdf(ax: Any, x: npt.NDArray[np.float64], label: str) -> None:
    ax.plot(*cdf_points(x), label=label)


def error_cdfs(abs_err_pp: Sequence[float] | npt.NDArray[np.float64],
               rel_err: Sequence[float] | npt.NDArray[np.float64]) -> bytes:
    """CDFs of |absolute error| (percentage points, all terms) and |relative error| (terms
    with target ≥ 0.1%), with the quality-bar thresholds (Fig. 3)."""
    plt = _pyplot()
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.6))
    ab = np.abs(np.asarray(abs_err_pp, dtype=float))
    re = np.abs(np.asarray(rel_err, dtype=float))
    _cdf(a1, ab, "all terms")
    a1.axvline(0.1, color="grey", ls="--", lw=1, label="0.1 pp")
    a1.set_xscale("symlog", linthresh=1e-4)
    a1.set_xlabel("|absolute error| (percentage points)")
    a1.set_ylabel("fraction of terms")
    a1.legend(fontsize=8)
    _cdf(a2, re, "terms with target ≥ 0.1%")
    a2.axvline(0.2, color="grey", ls="--", lw=1, label="20%")
    a2.set_xlim(0, max(1.0, float(np.quantile(re, 0.99)) if re.size else 1.0))
    a2.set_xlabel("|relative error|")
    a2.legend(fontsize=8)
    fig.suptitle("Fit errors: cumulative distribution (Fig. 3)")
    return _png(fig)


def error_histograms(abs_err_pp: Sequence[float] | npt.NDArray[np.float64],
                     rel_err: Sequence[float] | npt.NDArray[np.float64]) -> bytes:
    """Histograms of the signed errors (Fig. 4): both should be centred on 0."""
    plt = _pyplot()
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.4))
    ab = np.asarray(abs_err_pp, dtype=float)
    re = np.asarray(rel_err, dtype=float)
    lim = float(np.quantile(np.abs(ab), 0.999)) if ab.size else 1.0
    a1.hist(np.clip(ab, -lim, lim), bins=80, color=_COLOURS[0])
    a1.set_yscale("log")
    a1.set_xlabel("absolute error (percentage points), all terms")
    a2.hist(np.clip(re, -1, 1), bins=80, color=_COLOURS[1])
    a2.set_xlabel("relative error, terms with target ≥ 0.1% (clipped to ±1)")
    fig.suptitle("Fit errors: histograms (Fig. 4)")
    return _png(fig)


def distinct_topics(bins: Sequence[int], shares: Mapping[str, Sequence[float]],
                    pearson: float | None, weeks: int) -> bytes:
    """Share of users by number of distinct topics over ``weeks`` weeks (Fig. 5)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 3.4))
    x = np.asarray(bins)
    width = 0.8 / max(len(shares), 1)
    for i, (name, vals) in enumerate(shares.items()):
        ax.bar(x + (i - (len(shares) - 1) / 2) * width, 100 * np.asarray(vals, dtype=float),
               width=width, label=name, color=_COLOURS[i % len(_COLOURS)])
    ax.set_xlabel(f"distinct topics over {weeks} weeks")
    ax.set_ylabel("users (%)")
    title = "Distinct topics per user (Fig. 5)"
    if pearson is not None:
        title += f" — Pearson r = {pearson:.3f}"
    ax.set_title(title)
    ax.legend(fontsize=8)
    return _png(fig)


def reidentification_bars(risks: Mapping[str, Mapping[str, tuple[float, float]]],
                          weeks: int) -> bytes:
    """Mean ± std attack success per (source, attack) (Fig. 6); ``risks[source][attack]``."""
    plt = _pyplot()
    sources = list(risks)
    attacks = sorted({a for r in risks.values() for a in r})
    fig, ax = plt.subplots(figsize=(6.5, 3.4))
    width = 0.8 / max(len(sources), 1)
    x = np.arange(len(attacks))
    for i, src in enumerate(sources):
        means = [100 * risks[src].get(a, (np.nan, np.nan))[0] for a in attacks]
        stds = [100 * risks[src].get(a, (np.nan, np.nan))[1] for a in attacks]
        ax.bar(x + (i - (len(sources) - 1) / 2) * width, means, width=width, yerr=stds,
               capsize=4, label=src, color=_COLOURS[i % len(_COLOURS)])
    ax.set_xticks(x)
    ax.set_xticklabels(attacks)
    ax.set_ylabel("re-identification success (%)")
    ax.set_title(f"Re-identification risk, {weeks} weeks (Fig. 6)")
    ax.legend(fontsize=8)
    return _png(fig)


def risk_vs_weeks(gaps: Sequence[Mapping[str, Any]], tolerance: float) -> bytes:
    """Top: risk (%) against r for every (source, attack) with 95% intervals; bottom: the
    relative gap synthetic/population − 1 with its 95% interval and the ±tolerance band.
    ``gaps`` are ``Fidelity.to_dict()["gaps"]`` rows."""
    plt = _pyplot()
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(7, 6.2), sharex=True,
                                 gridspec_kw={"height_ratios": [3, 2]})
    attacks = sorted({g["attack"] for g in gaps})
    z = 1.959963984540054
    for i, att in enumerate(attacks):
        rows = sorted((g for g in gaps if g["attack"] == att), key=lambda g: g["weeks"])
        r = np.array([g["weeks"] for g in rows], dtype=float)
        colour = _COLOURS[i % len(_COLOURS)]
        for side, style in (("population", "-o"), ("synthetic", "--s")):
            y = 100 * np.array([g[side] for g in rows])
            e = 100 * z * np.array([g[f"{side}_se"] for g in rows])
            a1.errorbar(r, y, yerr=e, fmt=style, color=colour, capsize=3, ms=4,
                        label=f"{att}, {side}", alpha=1.0 if side == "population" else 0.8)
        ok = [g for g in rows if g["gap"] is not None]
        gx = np.array([g["weeks"] for g in ok], dtype=float) + (i - 0.5) * 0.08
        gy = 100 * np.array([g["gap"] for g in ok])
        ge = 100 * z * np.array([g["gap_se"] for g in ok])
        a2.errorbar(gx, gy, yerr=ge, fmt="o", color=colour, capsize=3, label=att)
    a1.set_ylabel("re-identification risk (%)")
    a1.set_yscale("log")
    from matplotlib.ticker import FuncFormatter, NullFormatter

    a1.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    a1.yaxis.set_minor_formatter(NullFormatter())
    a1.set_title("Exact expected risk vs weeks observed, every user a target")
    a1.legend(fontsize=7, ncol=2)
    a2.axhspan(-100 * tolerance, 100 * tolerance, color="#2ca02c", alpha=0.12,
               label=f"±{tolerance:.0%} tolerance")
    a2.axhline(0, color="grey", lw=0.8)
    a2.set_xlabel("weeks observed r")
    a2.set_ylabel("synthetic / population − 1 (%)")
    a2.legend(fontsize=7)
    xs = sorted({g["weeks"] for g in gaps})
    a2.set_xticks(xs)
    fig.tight_layout()
    return _png(fig, laid_out=True)


#: the keys of a ``TheoryCurve.rows()`` row that are not an attack's name
# (bayes_interval, the certified interval of reid --certify, was missing: every --figure and
# every report's theory section took it for an attack and failed on its None)
THEORY_ROW_KEYS = frozenset({"weeks", "bayes_exact", "bayes_interval", "bayes_sampled",
                             "ldp_bound", "k_anonymity_bound", "matching_bound",
                             "partial_information_bound", "mutual_information",
                             "mutual_information_bound"})


def theory_attacks(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The attacks of ``TheoryCurve.rows()`` (every key that is not a bound's)."""
    return [k for k in rows[0] if k not in THEORY_ROW_KEYS] if rows else []


def risk_and_bounds(rows: Sequence[Mapping[str, Any]], users: int) -> bytes:
    """Risk (%) against r: each attack with its 95% interval, the Bayes attacker (exact where
    computed, else sampled with its interval) and the bounds that are below 100%.
    ``rows`` are ``TheoryCurve.rows()``."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.6))
    r = np.array([row["weeks"] for row in rows], dtype=float)
    attacks = theory_attacks(rows)
    for i, name in enumerate(attacks):
        y = np.array([100 * row[name]["risk"] for row in rows])
        lo = np.array([100 * row[name]["ci95"][0] for row in rows])
        hi = np.array([100 * row[name]["ci95"][1] for row in rows])
        # (the interval is the trials' and need not contain the exact expectation)
        ax.errorbar(r, y, yerr=[np.maximum(y - lo, 0), np.maximum(hi - y, 0)], fmt="-o", ms=4,
                    capsize=3,
                    color=_COLOURS[i % len(_COLOURS)], label=f"{name} attack")
    exact = [(row["weeks"], 100 * row["bayes_exact"]) for row in rows
             if row["bayes_exact"] is not None]
    sampled = [(row["weeks"], 100 * row["bayes_sampled"]["risk"],
                100 * row["bayes_sampled"]["ci95"][0], 100 * row["bayes_sampled"]["ci95"][1])
               for row in rows if row["bayes_sampled"] is not None]
    if exact:
        ax.plot(*zip(*exact, strict=True), "-D", color="black", ms=5,
                label="Bayes attacker, full information (Cor. 1, exact)")
    certified = [(row["weeks"], 100 * row["bayes_interval"][0], 100 * row["bayes_interval"][1])
                 for row in rows if row.get("bayes_interval") is not None]
    if certified:
        cx, clo, chi = (np.array(v) for v in zip(*certified, strict=True))
        ax.vlines(cx, clo, chi, color="black", linewidth=4, alpha=0.45,
                  label="Bayes attacker, certified interval (Cor. 1)")
    if sampled:
        sx, sy, slo, shi = (np.array(v) for v in zip(*sampled, strict=True))
        ax.errorbar(sx, sy, yerr=[np.maximum(sy - slo, 0), np.maximum(shi - sy, 0)],
                    fmt="--D", color="black", mfc="white", ms=5, capsize=3,
                    label="Bayes attacker, sampled traces (95% CI)")
    styles = (("partial_information_bound", ":", "partial information, Thm 1 model (L2)"),
              ("matching_bound", "-.", "matching setting (L4)"),
              ("mutual_information_bound", (0, (1, 3)), "mutual information (L9)"),
              ("k_anonymity_bound", (0, (4, 2)), "k-anonymity of profiles (L7)"),
              ("ldp_bound", (0, (2, 1, 1, 1)), "LDP (L3)"))
    for key, style, label in styles:
        # (an infinite bound, "inf" in results.json, is vacuous: not drawn)
        pts = [(row["weeks"], 100 * v) for row in rows
               if (v := number(row.get(key))) is not None and v < 1.0]
        if pts:
            ax.plot(*zip(*pts, strict=True), linestyle=style, marker=".", color="grey",
                    label=label)
    ax.set_yscale("log")
    from matplotlib.ticker import FuncFormatter, NullFormatter

    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("weeks observed r")
    ax.set_ylabel("re-identification accuracy (%)")
    ax.set_xticks(r)
    ax.set_title(f"Risk, the Bayes attacker and bounds, {users:,} users (Carey et al. Fig. 2)")
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return _png(fig, laid_out=True)


#: the lines of ``learned_attack_curve``: (row key, label, line style)
LEARNED_LINES = (("hamming", "Hamming attack", "-o"),
                 ("asymmetric", "asymmetric attack", "-s"),
                 ("learned_population", "learned attack, trained on the population", "--^"),
                 ("learned_synthetic", "learned attack, trained on the synthetic sample", "-^"))


def learned_attack_curve(rows: Sequence[Mapping[str, Any]], users: int) -> bytes:
    """Expected risk (%) on the population against r with 95% intervals: the hand-made attacks
    and the learned attack by its training data (``LearnedCurve.rows``)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.4))
    r = np.array([row["weeks"] for row in rows], dtype=float)
    for i, (key, label, style) in enumerate(LEARNED_LINES):
        y = np.array([100 * row[key]["risk"] for row in rows])
        lo = np.array([100 * row[key]["ci95"][0] for row in rows])
        hi = np.array([100 * row[key]["ci95"][1] for row in rows])
        ax.errorbar(r, y, yerr=[np.maximum(y - lo, 0), np.maximum(hi - y, 0)], fmt=style,
                    ms=4, capsize=3, color=_COLOURS[i % len(_COLOURS)], label=label)
    ax.set_xlabel("weeks observed r")
    ax.set_ylabel("re-identification accuracy (%)")
    ax.set_xticks(r)
    ax.set_title(f"Learned attack on the population, {users:,} users (Carey et al. Fig. 5)")
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    return _png(fig, laid_out=True)


def top_pairs(labels: Sequence[str], series: Mapping[str, Sequence[float]],
              title: str) -> bytes:
    """Horizontal bars (as %) of the top pairs, one bar per source (Dick et al. Fig. 7)."""
    return top_topics(labels, series, title=title,
                      xlabel="share of users (week pairs) with both topics (%)")


__all__ = ["cdf_points", "data_uri", "distinct_topics", "error_cdfs", "error_histograms",
           "reidentification_bars", "risk_vs_weeks", "top_pairs", "top_topics"]
