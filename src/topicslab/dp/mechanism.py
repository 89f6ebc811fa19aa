"""Gaussian-mechanism calibration for the count queries (spec 01 §3, paper §4.2 Prop. 4).

Every σ comes from ``dp_accounting.get_sigma_gaussian``: the exact analytic Gaussian mechanism
of Balle & Wang (2018) — the smallest σ with
Φ(Δ/2σ − εσ/Δ) − e^ε Φ(−Δ/2σ − εσ/Δ) ≤ δ (Proposition 4) — computed by a maintained library,
not a hand-written formula. The library works at sensitivity 1; σ scales linearly with Δ.

Queries (for ``W`` weeks): ``W`` within-week queries, Δ2 = sqrt(C(k,2)), each a 0/1 change in
exactly C(k,2) coordinates; ``W-1`` across-week queries, Δ2 = k, k² unit changes (spec 01 §3).

Budget split (``split``): one share per query, within weeks first, then consecutive pairs.
Default: half the budget to the within-week queries (equally over weeks) and half to the
across-week queries (equally over pairs), which for two weeks is the paper's 25% / 25% / 50%.

Two accounting modes:

* ``"paper"``: query i gets (ε_i, δ_i) = (share_i·ε, share_i·δ) and basic composition gives
  (Σ ε_i, Σ δ_i) = (ε, δ) — what the paper's pipeline did.
* ``"tight"``: a composition of Gaussian mechanisms with sensitivities Δ_i and scales σ_i is
  itself one Gaussian mechanism with sensitivity-to-noise ratio μ = sqrt(Σ (Δ_i/σ_i)²)
  (the privacy loss of the joint output is that of one Gaussian with that ratio). So solve once
  for the total μ that gives exactly (ε, δ), then give query i the share ``share_i`` of μ²
  (μ² is the additive "budget" of Gaussians, like zCDP's ρ = μ²/2): μ_i = sqrt(share_i)·μ,
  σ_i = Δ_i/μ_i. The composition then meets (ε, δ) exactly, with less noise than ``"paper"``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

import dp_accounting

Accounting = Literal["paper", "tight"]

#: brentq inside the library stops within xtol = 1e-12 (+ 4 ulp relative) of the exact root;
#: rounding σ up by that much makes the calibration conservative (never below the true σ).
_XTOL = 1e-12


@dataclass(frozen=True)
class GaussianQuery:
    """One Gaussian mechanism of the release and its own (ε_i, δ_i) guarantee."""

    name: str            # e.g. "within_w0", "across_w0_w1"
    query: str           # human description
    weeks: tuple[int, ...]
    dims: int            # number of released coordinates
    sensitivity: float   # L2 sensitivity Δ_i
    unit_changes: int    # coordinates that change by exactly 1 when one user is added
    share: float         # budget share (of ε,δ in "paper" mode; of μ² in "tight" mode)
    sigma: float         # calibrated Gaussian scale σ_i
    epsilon: float       # this mechanism's own ε_i ...
    delta: float         # ... at δ_i

    @property
    def mu(self) -> float:
        """Sensitivity-to-noise ratio Δ_i/σ_i."""
        return self.sensitivity / self.sigma

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["weeks"] = list(self.weeks)
        return d


def unit_sigma(epsilon: float, delta: float) -> float:
    """σ of the analytic Gaussian mechanism at sensitivity 1 (library), rounded up by xtol."""
    if not epsilon > 0:
        raise ValueError(f"epsilon must be > 0, got {epsilon}")
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta}")
    s = float(dp_accounting.get_sigma_gaussian(epsilon, delta, tol=_XTOL))
    return s * (1 + 4 * 2.0**-52) + _XTOL


def calibrate_sigma(epsilon: float, delta: float, sensitivity: float) -> float:
    """Smallest σ making ``f + N(0, σ² I)`` (ε, δ)-DP for L2 sensitivity ``sensitivity``."""
    return sensitivity * unit_sigma(epsilon, delta)


def default_split(n_weeks: int) -> list[float]:
    """Half to within-week queries, half to across-week queries (paper: 25/25/50 for 2 weeks)."""
    if n_weeks < 1:
        raise ValueError("need at least one week")
    if n_weeks == 1:
        return [1.0]
    return [0.5 / n_weeks] * n_weeks + [0.5 / (n_weeks - 1)] * (n_weeks - 1)


def check_split(split: Sequence[float] | None, n_weeks: int) -> list[float]:
    """Validate a split (one positive share per query, summing to 1)."""
    if split is None:
        return default_split(n_weeks)
    shares = [float(x) for x in split]
    n_q = 2 * n_weeks - 1
    if len(shares) != n_q:
        raise ValueError(f"split needs {n_q} shares for {n_weeks} weeks "
                         f"({n_weeks} within-week, {n_weeks - 1} across-week), got {len(shares)}")
    if any(not (x > 0 and math.isfinite(x)) for x in shares):
        raise ValueError("split shares must be positive")
    total = sum(shares)
    if abs(total - 1) > 1e-9:
        raise ValueError(f"split shares must sum to 1, got {total:g}")
    return [x / total for x in shares]


def plan_queries(
    n_weeks: int,
    k: int,
    m: int,
    *,
    epsilon: float,
    delta: float,
    split: Sequence[float] | None = None,
    accounting: Accounting = "paper",
) -> list[GaussianQuery]:
    """The Gaussian mechanisms of a release, calibrated (see module docstring)."""
    if accounting not in ("paper", "tight"):
        raise ValueError(f"accounting must be 'paper' or 'tight', got {accounting!r}")
    shares = check_split(split, n_weeks)
    pairs = k * (k - 1) // 2
    layout: list[tuple[str, str, tuple[int, ...], int, float, int]] = []
    for w in range(n_weeks):
        layout.append((f"within_w{w}", f"users with both topics of each unordered pair in week {w}",
                       (w,), m * (m - 1) // 2, math.sqrt(pairs), pairs))
    for w in range(n_weeks - 1):
        layout.append((f"across_w{w}_w{w + 1}",
                       f"users with topic o1 in week {w} and o2 in week {w + 1} (ordered pairs)",
                       (w, w + 1), m * m, float(k), k * k))
    out = []
    mu_total = 1.0 / unit_sigma(epsilon, delta) if accounting == "tight" else 0.0
    for (name, query, weeks, dims, sens, units), share in zip(layout, shares, strict=True):
        if accounting == "paper":
            eps_i, delta_i = share * epsilon, share * delta
            sigma = calibrate_sigma(eps_i, delta_i, sens)
        else:
            sigma = sens / (math.sqrt(share) * mu_total)
            delta_i = share * delta
            eps_i = float(dp_accounting.get_epsilon_gaussian(sigma / sens, delta_i))
        out.append(GaussianQuery(name, query, weeks, dims, sens, units, share, sigma,
                                 eps_i, delta_i))
    return out
