"""Calibration (Dick et al. §4.2, Prop. 4) cross-checked against an independent scipy version."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize
from scipy.special import log_ndtr

from topicslab.dp import calibrate_sigma, default_split, plan_queries
from topicslab.dp.accounting import compose

LN3 = math.log(3)


def prop4_delta(sigma: float, eps: float, sens: float) -> float:
    """Balle & Wang Prop. 4: Φ(Δ/2σ − εσ/Δ) − e^ε Φ(−Δ/2σ − εσ/Δ), in log space."""
    a = sens / (2 * sigma) - eps * sigma / sens
    b = -sens / (2 * sigma) - eps * sigma / sens
    la, lb = log_ndtr(a), eps + log_ndtr(b)
    return float(math.exp(la) * -math.expm1(lb - la))


@pytest.mark.parametrize(("eps", "delta", "sens"), [
    (LN3 * 0.25, 0.25e-15, math.sqrt(10)), (LN3 * 0.5, 0.5e-15, 5.0), (1.0, 1e-6, 1.0),
    (0.1, 1e-10, 2.0), (5.0, 1e-5, 3.0)])
def test_sigma_meets_prop4_exactly(eps, delta, sens):
    sigma = calibrate_sigma(eps, delta, sens)
    achieved = prop4_delta(sigma, eps, sens)
    assert achieved <= delta * (1 + 1e-9)
    assert abs(achieved / delta - 1) < 1e-9
    # independent root finding gives the same sigma
    ref = optimize.brentq(lambda s: math.log(prop4_delta(s, eps, sens)) - math.log(delta),
                          sigma / 2, sigma * 2, xtol=1e-13)
    assert sigma == pytest.approx(ref, rel=1e-9)


def test_paper_defaults_per_mechanism():
    qs = plan_queries(2, 5, 469, epsilon=LN3, delta=1e-15, accounting="paper")
    assert [q.name for q in qs] == ["within_w0", "within_w1", "across_w0_w1"]
    assert [q.share for q in qs] == [0.25, 0.25, 0.5]
    assert [q.sensitivity for q in qs] == [math.sqrt(10), math.sqrt(10), 5.0]
    assert [q.dims for q in qs] == [109_746, 109_746, 219_961]
    for q in qs:
        assert abs(prop4_delta(q.sigma, q.epsilon, q.sensitivity) / q.delta - 1) < 1e-9
    comp = compose(qs, 1e-15)
    assert comp["basic"]["epsilon"] == pytest.approx(LN3)
    assert comp["basic"]["delta"] == pytest.approx(1e-15)


def test_tight_mode_meets_target_exactly_for_discrete_noise_with_less_noise():
    paper = plan_queries(2, 5, 469, epsilon=LN3, delta=1e-15, accounting="paper")
    tight = plan_queries(2, 5, 469, epsilon=LN3, delta=1e-15, accounting="tight")
    rho = sum(q.sensitivity**2 / (2 * q.sigma**2) for q in tight)
    comp = compose(tight, 1e-15)
    # the composed zCDP guarantee (valid for the discrete Gaussian) is exactly the target ...
    assert comp["zcdp"]["rho"] == pytest.approx(rho, rel=1e-12)
    assert comp["zcdp"]["epsilon"] <= LN3
    assert comp["zcdp"]["epsilon"] == pytest.approx(LN3, rel=1e-9)
    # ... and the library conversion is no worse than the classic rho + 2 sqrt(rho ln 1/delta)
    assert comp["zcdp"]["epsilon"] <= rho + 2 * math.sqrt(rho * math.log(1e15))
    # the continuous-Gaussian view is tighter still (it is only a comparison)
    assert comp["gaussian"]["epsilon"] < LN3
    for t, p in zip(tight, paper, strict=True):
        assert t.sigma < 0.75 * p.sigma
    # shares of rho follow the split
    rhos = np.array([q.rho for q in tight])
    np.testing.assert_allclose(rhos / rhos.sum(), [0.25, 0.25, 0.5])


def test_paper_mode_is_also_proven_for_discrete_noise():
    paper = plan_queries(2, 5, 469, epsilon=LN3, delta=1e-15, accounting="paper")
    assert compose(paper, 1e-15)["zcdp"]["epsilon"] < LN3


def test_split_generalises_to_more_weeks():
    assert default_split(2) == [0.25, 0.25, 0.5]
    s4 = default_split(4)
    assert len(s4) == 7 and math.isclose(sum(s4), 1)
    assert math.isclose(sum(s4[:4]), 0.5)
    with pytest.raises(ValueError, match="needs 3 shares"):
        plan_queries(2, 5, 20, epsilon=1, delta=1e-9, split=[0.5, 0.5])
    with pytest.raises(ValueError, match="sum to 1"):
        plan_queries(2, 5, 20, epsilon=1, delta=1e-9, split=[0.5, 0.5, 0.5])
