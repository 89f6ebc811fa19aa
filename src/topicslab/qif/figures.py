"""Figures of the privacy-utility trade-off (matplotlib, Agg backend; PNG bytes).

* :func:`tradeoff_figure`: Bayes capacity (eq 21) and epsilon (eq 22) over (r, s) for one m,
  with the Table 7 iso-capacity points.
* :func:`figure5`: ``P_correct(N)`` of the counting experiment (Fig. 5, eq 27).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from topicslab._checks import integer, is_collection, value_shown
from topicslab._plotting import png_bytes, png_data_uri, pyplot
from topicslab.qif.errors import QIFParameterError
from topicslab.qif.topics import (
    check_params,
    p_correct,
    r_for_capacity,
    reporting_bayes_capacity,
    reporting_epsilon,
)

_pyplot = pyplot


#: points of a curve: n_max = 10**9 (or r_points) computed and plotted a billion points (it
#: ran for hours); 0 drew an empty curve
MAX_POINTS = 100_000
_POINTS_WHY = f"a curve is drawn from 2 to {MAX_POINTS:,} points"


def _n_max(n_max: int) -> int:
    return integer(n_max, "n_max", at_least=2, at_most=MAX_POINTS, error=QIFParameterError,
                   why=f"Fig. 5 plots N = 2..n_max, at most {MAX_POINTS:,} points")


def _save(fig: Any, path: str | Path | None) -> bytes:
    """(Every figure here is laid out with ``tight_layout`` first.)"""
    return png_bytes(fig, path, laid_out=True)


def tradeoff_figure(m: int, s_values: Sequence[int] = (1, 3, 5, 7, 9),
                    r_points: int = 99, reference_s: int = 5, reference_r: float = 0.05,
                    n_max: int = 30, path: str | Path | None = None) -> bytes:
    """Capacity / epsilon over r for several s at taxonomy size m, plus the Fig. 5 curve.

    The dashed line marks the capacity at (``reference_s``, ``reference_r``); the dots are
    the rounded-down r of each s reaching that capacity (as in Table 7).
    """
    check_params(m, reference_s, reference_r)
    r_points = integer(r_points, "r_points", at_least=2, at_most=MAX_POINTS,
                       error=QIFParameterError, why=_POINTS_WHY)
    n_max = _n_max(n_max)
    # Only set sizes the taxonomy admits; always show the reference s.
    if not is_collection(s_values):  # (5 was "Value after * must be an iterable")
        raise QIFParameterError(f"s_values must be a list of set sizes, got "
                                f"{value_shown(s_values, 60)}", field="s_values")
    # (2.5 was drawn as a set size, and text failed comparing)
    given = [integer(s, "s_values", error=QIFParameterError) for s in s_values]
    s_values = sorted({s for s in (*given, int(reference_s)) if 1 <= s <= m})
    plt = _pyplot()
    rs = np.linspace(0.01, 0.99, r_points)
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    target = reporting_bayes_capacity(m, reference_s, reference_r)
    for s in s_values:
        caps = [reporting_bayes_capacity(m, s, float(r)) for r in rs]
        eps = [reporting_epsilon(m, s, float(r)) for r in rs]
        (line,) = axes[0].plot(rs, caps, label=f"s = {s}")
        axes[1].plot(rs, eps, color=line.get_color(), label=f"s = {s}")
        if 1.0 <= target <= m / s and m > s:
            r_star = r_for_capacity(target, m, s)
            axes[0].plot([r_star], [reporting_bayes_capacity(m, s, r_star)], "o",
                         color=line.get_color())
    axes[0].axhline(target, ls="--", color="grey", lw=0.8)
    axes[0].set(xlabel="r", ylabel="Bayes capacity ML×₁ (eq 21)", yscale="log",
                title=f"Average-case capacity, m = {m}")
    axes[1].set(xlabel="r", ylabel="ε (eq 22)", title=f"Max-case leakage, m = {m}")
    axes[0].legend(fontsize=8)
    axes[1].legend(fontsize=8)
    _plot_fig5(axes[2], reference_s, reference_r, n_max)
    fig.tight_layout()
    data = _save(fig, path)
    plt.close(fig)
    return data


def _plot_fig5(ax: Any, s: int, r: float, n_max: int) -> None:
    ns = np.arange(2, n_max + 1)
    ax.plot(ns, [p_correct(int(n), s, r) for n in ns], "x", label=f"s = {s}, r = {r}")
    ax.set(xlabel="population size N", ylabel="P(correct count)", ylim=(0, 1),
           title="Counting experiment (Fig. 5)")
    ax.legend(fontsize=8)


def figure5(s: int = 5, r: float = 0.05, n_max: int = 30,
            path: str | Path | None = None) -> bytes:
    """Fig. 5 alone: ``P_correct(N) = ((1 + (1-r)/s)/2)^N`` for ``2 <= N <= n_max``."""
    check_params(s, s, r)
    n_max = _n_max(n_max)
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5, 3.6))
    _plot_fig5(ax, s, r, n_max)
    fig.tight_layout()
    data = _save(fig, path)
    plt.close(fig)
    return data


png_base64 = png_data_uri


__all__ = ["figure5", "png_base64", "tradeoff_figure"]
