"""Exact reproduction of the paper's parameter-only numbers (Alvim et al.)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from topicslab import qif
from topicslab.qif.topics import round_half_up as rnd

S, R = 5, 0.05


@pytest.mark.parametrize(
    ("m", "cap", "eps", "emax"),
    [
        (31, 5.94, 4.777, 118.8),  # Table 5, Citizen Lab
        (169, 32.16, 6.466, 643.2),  # Table 5, Google v1 topics seen
        (349, 66.36, 7.191, 1327.2),  # Table 6
        (629, 119.56, 7.780, 2391.2),
        (1091, 207.34, 8.330, 4146.8),
        (1679, 319.06, 8.761, 6381.2),
    ],
)
def test_tables_5_and_6(m: int, cap: float, eps: float, emax: float) -> None:
    assert rnd(qif.reporting_bayes_capacity(m, S, R), 2) == cap
    assert rnd(qif.reporting_epsilon(m, S, R), 3) == eps
    assert rnd(qif.reporting_max_case_capacity(m, S, R), 1) == emax
    ch = qif.ReportingChannel(m, S, R)
    assert rnd(ch.bayes_capacity(), 2) == cap
    assert math.isclose(math.exp(ch.epsilon()), ch.max_case_capacity())


def test_table6_increases_over_v1() -> None:
    v1 = qif.reporting_bayes_capacity(349, S, R)
    got = [rnd(100 * (qif.reporting_bayes_capacity(m, S, R) / v1 - 1), 2)
           for m in (629, 1091, 1679)]
    assert got == [80.17, 212.45, 380.80]


@pytest.mark.parametrize(
    ("m", "r", "s", "cap", "emax"),
    [
        (349, 0.05, 5, 66.36, 1327.20),
        (629, 0.05, 5, 119.56, 2391.20),
        (629, 0.47, 5, 67.14, 142.86),
        (629, 0.37, 6, 66.42, 179.50),
        (629, 0.26, 7, 66.75, 256.75),
        (629, 0.15, 8, 66.98, 446.54),
        (629, 0.05, 9, 66.44, 1328.89),
    ],
)
def test_table7(m: int, r: float, s: int, cap: float, emax: float) -> None:
    assert rnd(qif.reporting_bayes_capacity(m, s, r), 2) == cap
    assert rnd(qif.reporting_max_case_capacity(m, s, r), 2) == emax


@pytest.mark.parametrize(("s", "r"), [(5, 0.47), (6, 0.37), (7, 0.26), (8, 0.15), (9, 0.05)])
def test_table7_r_rounded_down(s: int, r: float) -> None:
    assert qif.r_for_capacity(66.36, 629, s) == r
    # rounding down never lowers the capacity below the target
    assert qif.reporting_bayes_capacity(629, s, r) >= 66.36


def test_figure5_p_correct() -> None:
    expected = [0.354025, 0.210645, 0.125334, 0.074574, 0.044371, 0.026401, 0.015709,
                0.009347, 0.005561]
    assert [round(qif.p_correct(n, S, R), 6) for n in range(2, 11)] == expected
    assert f"{qif.p_correct(10, S, R):.2%}" == "0.56%"
    assert f"{qif.p_correct(30, S, R):.2e}" == "1.72e-07"


def test_figure5_a_and_q() -> None:
    a, q = qif.counting_a_q(349, S, R)
    assert rnd(a, 1) == 1327.2
    assert q == pytest.approx(0.00014326647564469913, rel=1e-14)
    a, q = qif.counting_a_q(629, S, R)
    assert rnd(a, 1) == 2391.2
    assert q == pytest.approx(7.949125596184421e-05, rel=1e-14)


def test_p_correct_is_kronecker_power_bayes_vulnerability() -> None:
    """Corollary 3 on the counting channel: explicit N-fold product, uniform prior."""
    c = qif.counting_channel(349, S, R)
    for n in range(1, 7):
        big = qif.kron_power(c, n)
        v = qif.posterior_vulnerability(qif.uniform(2**n), big)
        assert v == pytest.approx(qif.p_correct(n, S, R), rel=1e-12)


def test_footnote20() -> None:
    assert qif.generalisation_capacity(31, 5) == 169_911
    assert qif.generalisation_capacity(169, 5) == 1_082_239_158
    assert qif.ReportingChannel(629, 5, 0.05).n_sets == math.comb(629, 5)


def _iba_gain(m: int, sets: np.ndarray) -> np.ndarray:
    g = np.zeros((m, len(sets)))
    for j, sigma in enumerate(sets):
        g[list(sigma), j] = 1.0
    return g


@pytest.mark.parametrize(("pi", "prior", "post"), [((2 / 3, 1 / 3), 2 / 3, 0.97667),
                                                    ((0.5, 0.5), 0.5, 0.975)])
def test_toy_iba(pi: tuple[float, float], prior: float, post: float) -> None:
    m, s, r = 5, 2, 0.05
    sets = np.array([[0, 1], [2, 3]])  # {Music, News}, {Sports, Travel}; Ads never in a set
    w = np.array(pi)
    v0, v1 = qif.iba_vulnerabilities(sets, w, m, r)
    assert v0 == pytest.approx(prior)
    assert round(v1, 5) == post
    # the same through the explicit channel and gain matrix (eqs 1, 2, 28)
    c = qif.reporting_channel(m, s, r, sets)
    g = _iba_gain(m, sets)
    assert qif.prior_vulnerability(w, g) == pytest.approx(v0)
    assert qif.posterior_vulnerability(w, c, g) == pytest.approx(v1)
    lo, hi = qif.iba_theorem7_bounds(r, v0)
    assert lo <= v1 <= hi


def test_toy_epsilon_is_m4() -> None:
    """The printed toy epsilon 3.6636 and max-case 39 correspond to m = 4 (s = 2, r = 0.05)."""
    assert rnd(qif.reporting_max_case_capacity(4, 2, 0.05), 4) == 39.0
    assert rnd(qif.reporting_epsilon(4, 2, 0.05), 4) == 3.6636


def test_multi_epoch_v1() -> None:
    got = [rnd(qif.multi_epoch_capacity(349, S, R, k), 2) for k in (1, 2, 3)]
    assert got == [66.36, 4403.65, 292226.19]
    assert qif.multi_epoch_max_case_capacity(349, S, R, 2) == pytest.approx(1327.2**2)
