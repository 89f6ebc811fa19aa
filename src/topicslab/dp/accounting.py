"""Composed privacy guarantees of a release, computed by ``dp_accounting`` (Dick et al. §4.2).

Neighbouring relation throughout: add or remove one user's whole sequence of weekly topic sets
(paper Definition 1; the library's ``ADD_OR_REMOVE_ONE``).

``compose(queries, delta)`` returns several views of the same mechanisms:

* ``basic``: Σ ε_i, Σ δ_i (basic composition; what "paper" accounting claims).
* ``gaussian``: the exact composition of *continuous* Gaussians (for comparison only: the noise
  we add is discrete, see ``zcdp``). The joint release is one
  Gaussian mechanism with μ = sqrt(Σ (Δ_i/σ_i)²), so its exact ε at δ is
  ``dp_accounting.get_epsilon_gaussian(1/μ, δ)`` (Balle & Wang, as in Prop. 4).
* ``zcdp``: the discrete Gaussian N_Z(0, σ²) on an integer query of L2 sensitivity Δ satisfies
  Δ²/(2σ²)-zCDP exactly like the continuous one (Canonne, Kamath & Steinke 2020), for any
  dimension, and zCDP composes additively: ρ = Σ Δ_i²/(2σ_i²) = μ²/2. The (ε, δ) it implies is
  computed by the library's RDP accountant (``ZCDpEvent``). This is the rigorous closed-form
  guarantee of the noise actually sampled; it is looser than the Gaussian curve.
* ``discrete_pld``: the library's privacy-loss-distribution accountant on the *discrete*
  Gaussian itself, using the exact neighbour structure after bounding (query i changes exactly
  ``unit_changes`` coordinates by 1, so its PLD is that many self-compositions of a 1-D
  sensitivity-1 discrete Gaussian). Pessimistic discretisation, but at δ ≈ 1e-15 the FFT
  convolution's float64 rounding (~1e-16 absolute) is not negligible: a numerical estimate.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import dp_accounting
from dp_accounting.pld import privacy_loss_distribution as pld

from topicslab.dp.mechanism import GaussianQuery, zcdp_epsilon

NEIGHBOURING = ("add/remove one user's whole sequence of weekly topic sets "
                "(paper Definition 1; dp_accounting NeighboringRelation.ADD_OR_REMOVE_ONE)")


def composed_mu(queries: Sequence[GaussianQuery], sigmas: Sequence[float] | None = None) -> float:
    """μ = sqrt(Σ (Δ_i/σ_i)²) of the joint Gaussian mechanism."""
    ss = [q.sigma for q in queries] if sigmas is None else list(sigmas)
    return math.sqrt(sum((q.sensitivity / s) ** 2 for q, s in zip(queries, ss, strict=True)))


def gaussian_epsilon(mu: float, delta: float) -> float:
    """Exact ε at δ of a Gaussian mechanism with sensitivity/σ = μ (library)."""
    return float(dp_accounting.get_epsilon_gaussian(1.0 / mu, delta))


def discrete_pld_epsilon(queries: Sequence[GaussianQuery], sigmas: Sequence[float],
                         delta: float, *, interval: float = 1e-4) -> float | None:
    """ε at δ of the composed discrete Gaussians by the library's PLD accountant.

    ``None`` where the library cannot represent it cheaply: for σ < 1 (huge ε) the privacy
    losses span thousands of units and the 1e-4 grid would take minutes.
    """
    if min(sigmas) < 1.0:
        return None
    total = None
    try:
        for q, s in zip(queries, sigmas, strict=True):
            one = pld.from_discrete_gaussian_mechanism(s, 1, value_discretization_interval=interval)
            comp = one.self_compose(q.unit_changes, tail_mass_truncation=1e-30)
            total = comp if total is None else total.compose(comp, tail_mass_truncation=1e-30)
        assert total is not None
        eps = float(total.get_epsilon_for_delta(delta))
    except (ValueError, OverflowError, MemoryError, AssertionError):
        return None
    return eps if math.isfinite(eps) else None


def compose(queries: Sequence[GaussianQuery], delta: float,
            sampled_sigmas: Sequence[float] | None = None) -> dict[str, Any]:
    """All composed views (see module docstring) at the target ``delta``."""
    sampled = [q.sigma for q in queries] if sampled_sigmas is None else list(sampled_sigmas)
    mu = composed_mu(queries)
    mu_sampled = composed_mu(queries, sampled)
    rho = mu_sampled**2 / 2
    return {
        "basic": {"epsilon": sum(q.epsilon for q in queries),
                  "delta": sum(q.delta for q in queries),
                  "method": "basic composition of the per-mechanism (epsilon_i, delta_i)"},
        "gaussian": {"epsilon": gaussian_epsilon(mu, delta), "delta": delta, "mu": mu,
                     "method": "exact composition of continuous Gaussians: one Gaussian with "
                               "mu = sqrt(sum (Delta_i/sigma_i)^2); "
                               "dp_accounting.get_epsilon_gaussian(1/mu, delta)"},
        "zcdp": {"rho": rho, "epsilon": zcdp_epsilon(rho, delta), "delta": delta,
                 "method": "discrete Gaussian is Delta^2/(2 sigma^2)-zCDP (Canonne-Kamath-"
                           "Steinke 2020); rho adds; converted by dp_accounting RdpAccountant"},
        "discrete_pld": {"epsilon": discrete_pld_epsilon(queries, sampled, delta),
                         "delta": delta,
                         "method": "dp_accounting PLD (pessimistic, interval 1e-4) of the "
                                   "discrete Gaussians, unit_changes self-compositions each; "
                                   "numerical estimate (float64 FFT) at this delta"},
    }
