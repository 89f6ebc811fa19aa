"""Figures of the disclosure experiment (matplotlib, Agg backend; PNG bytes).

* :func:`rates_figure`: black-box detection and false-positive rates vs ρ (Wilson 95% bars),
  with the white-box share of sensitive personas whose ln M exceeds ε.
* :func:`ln_m_figure`: white-box ln M_k over epochs per ρ (median over sensitive personas, own
  category; dashed: median of the largest sensitive ln M of non-sensitive personas), with ε;
  and the black-box cumulative detection by epoch. Medians, because a persona the Monte Carlo
  sample explains badly can give a very negative ln M that would dominate a mean.

Public names: rates_figure, ln_m_figure, png_data_uri
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from topicslab._plotting import png_bytes, png_data_uri, pyplot

if TYPE_CHECKING:
    from topicslab.disclosure.experiment import DisclosureResult


_pyplot = pyplot


def _save(fig: Any, path: str | Path | None) -> bytes:
    """(Every figure here is laid out with ``tight_layout`` first.)"""
    return png_bytes(fig, path, laid_out=True)



def rates_figure(result: DisclosureResult, path: str | Path | None = None) -> bytes:
    """Detection / false-positive rate vs ρ, with the white-box violation share."""
    plt = _pyplot()
    rhos = result.rhos
    fig, ax = plt.subplots(figsize=(6.2, 4.0))
    for key, label, marker in (("detection", "detection rate (sensitive sessions)", "o"),
                               ("false_positive", "false-positive rate (other sessions)", "s")):
        vals = [getattr(r, key) for r in result.per_rho]
        y = [v["rate"] for v in vals]
        lo = [v["rate"] - v["ci95"][0] for v in vals]
        hi = [v["ci95"][1] - v["rate"] for v in vals]
        ax.errorbar(rhos, y, yerr=[lo, hi], marker=marker, capsize=3, label=label)
    wb = [r.whitebox.get("violated") for r in result.per_rho]
    if all(v is not None for v in wb) and wb:
        eps = result.settings["epsilon"]
        ax.plot(rhos, wb, "^--", label=f"white box: ln M > ε = {eps:.3g} by the last epoch")
    ax.set(xlabel="intensity ρ (share of visits to proxy topics)", ylabel="share",
           ylim=(-0.02, 1.02), xscale="log",
           title=f"Black-box PRI detection ({result.settings['session_probes']}-epoch session, "
                 f"{result.settings['probe_sites']} probe sites)")
    ax.minorticks_off()
    ax.set_xticks(rhos)
    ax.set_xticklabels([f"{r:g}" for r in rhos])
    ax.legend(fontsize=8)
    fig.tight_layout()
    data = _save(fig, path)
    plt.close(fig)
    return data


def ln_m_figure(result: DisclosureResult, path: str | Path | None = None) -> bytes:
    """White-box ln M over epochs and black-box cumulative detection, per ρ."""
    plt = _pyplot()
    epochs = list(range(1, int(result.settings["epochs"]) + 1))
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.0))
    for r in result.per_rho:
        median = r.whitebox.get("median_ln_m") or []
        if median:
            (line,) = axes[0].plot(epochs, median, marker="o", label=f"ρ = {r.rho:g}")
            other = r.whitebox.get("other_median_max_ln_m") or []
            if other:
                axes[0].plot(epochs, other, ls="--", color=line.get_color())
        cum = r.evaluation.time_to_detection.get("cumulative") or []
        axes[1].plot(epochs[: len(cum)], cum, marker="o", label=f"ρ = {r.rho:g}")
    axes[0].axhline(result.settings["epsilon"], color="grey", lw=0.8, ls=":")
    axes[0].set(xlabel="epoch k", ylabel="ln M_k(c)",
                title="White box: median ln M (solid: own category; dashed: non-sensitive)")
    axes[1].set(xlabel="epoch", ylabel="share of sensitive personas detected",
                ylim=(-0.02, 1.02), title="Black box: time to detection")
    for ax in axes:
        ax.legend(fontsize=8)
    fig.tight_layout()
    data = _save(fig, path)
    plt.close(fig)
    return data


__all__ = ["ln_m_figure", "png_data_uri", "rates_figure"]
