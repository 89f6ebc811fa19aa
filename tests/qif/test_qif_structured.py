"""Structured (closed-form) Topics channels against explicit matrices on small m, s."""

from __future__ import annotations

import math

import numpy as np
import pytest

from topicslab import qif

SMALL = [(4, 1, 0.05), (5, 2, 0.05), (6, 2, 0.3), (7, 3, 0.1), (8, 3, 0.05), (8, 2, 0.5),
         (5, 5, 0.2), (6, 3, 0.0), (6, 3, 1.0)]


@pytest.mark.parametrize(("m", "s", "r"), SMALL)
def test_single_epoch_quantities(m: int, s: int, r: float) -> None:
    c = qif.reporting_channel(m, s, r)
    assert c.shape == (math.comb(m, s), m)
    ch = qif.ReportingChannel(m, s, r)
    assert ch.n_sets == c.shape[0]
    assert ch.bayes_capacity() == pytest.approx(qif.bayes_capacity(c), rel=1e-12)
    assert ch.max_case_capacity() == pytest.approx(qif.max_case_capacity(c), rel=1e-12)
    assert qif.bounded_noise_capacity(m, s) == pytest.approx(
        qif.bayes_capacity(qif.bounded_noise_channel(m, s)))
    u = qif.uniform(c.shape[0])
    assert ch.posterior_bayes_uniform() == pytest.approx(qif.posterior_vulnerability(u, c))
    # eq 4: C_BN (+)_r C_DP is the reporting channel
    mix = qif.internal_choice(qif.bounded_noise_channel(m, s), qif.dp_channel(m, s), r)
    assert np.allclose(mix, c)
    # IBA under the uniform prior on all sets (Thm 4 and the tight lower bound)
    sets = qif.all_sets(m, s)
    g = np.zeros((m, len(sets)))
    g[sets.ravel(), np.repeat(np.arange(len(sets)), s)] = 1.0
    prior, post = ch.iba_uniform()
    assert prior == pytest.approx(qif.prior_vulnerability(u, g))
    assert post == pytest.approx(qif.posterior_vulnerability(u, c, g))
    assert post == pytest.approx(qif.iba_tight_lower_bound(m, s, r))
    assert qif.iba_vulnerabilities(sets, u, m, r) == pytest.approx((prior, post))


@pytest.mark.parametrize(("m", "s", "r"), [(5, 2, 0.1), (6, 2, 0.05), (6, 3, 0.2),
                                           (4, 1, 0.3), (7, 3, 0.05), (5, 5, 0.1)])
@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_multi_epoch_closed_form_vs_brute_force(m: int, s: int, r: float, k: int) -> None:
    c = qif.reporting_channel(m, s, r)
    par = qif.parallel_power(c, k)  # same set each epoch (eq 30)
    assert qif.multi_epoch_capacity(m, s, r, k) == pytest.approx(
        qif.bayes_capacity(par), rel=1e-10)
    assert qif.multi_epoch_max_case_capacity(m, s, r, k) == pytest.approx(
        qif.max_case_capacity(par), rel=1e-10)
    # bounded noise (r = 0) through the same closed form
    assert qif.multi_epoch_capacity(m, s, 0.0, k) == pytest.approx(
        qif.bayes_capacity(qif.parallel_power(qif.bounded_noise_channel(m, s), k)))
    if c.shape[0] ** k <= 3000:
        kp = qif.kron_power(c, k)  # independent sets each epoch (eq 24)
        assert qif.multi_epoch_capacity(m, s, r, k, "kronecker") == pytest.approx(
            qif.bayes_capacity(kp), rel=1e-10)


def test_multi_epoch_beyond_s() -> None:
    """For k > s a tuple with more than s distinct topics cannot be fully covered."""
    m, s, r, k = 4, 1, 0.2, 5
    par = qif.parallel_power(qif.reporting_channel(m, s, r), k)
    cap = qif.multi_epoch_capacity(m, s, r, k)
    assert cap == pytest.approx(qif.bayes_capacity(par), rel=1e-10)
    assert cap < qif.reporting_bayes_capacity(m, s, r) ** k
    assert sum(qif.tuples_with_partition(m, lam)
               for lam in qif.multiplicity_partitions(k)) == m**k


def test_partitions() -> None:
    assert list(qif.multiplicity_partitions(4)) == [(4,), (3, 1), (2, 2), (2, 1, 1),
                                                    (1, 1, 1, 1)]
    assert sum(1 for _ in qif.multiplicity_partitions(20)) == 627


def test_counting_channel_and_pipeline_cascade() -> None:
    m, s, r = 6, 2, 0.1
    p, q = qif.p_q(m, s, r)
    assert np.allclose(qif.counting_channel(m, s, r), [[p, 1 - p], [q, 1 - q]])
    # C_T = C_BH C_G C_BN(+)DP on a 5-user toy: leakage r + m'(1-r)/s (eq 21)
    sets = qif.all_sets(m, s)
    users = np.array([0, 0, 3, 7, 14])  # row indices into all sets
    c_bh = qif.identity_channel(5)
    c_g = qif.deterministic_channel(users, len(sets))
    c_t = qif.cascade(qif.cascade(c_bh, c_g), qif.reporting_channel(m, s, r))
    m_prime = len(np.unique(sets[users]))
    assert qif.multiplicative_leakage(qif.uniform(5), c_t) == pytest.approx(
        r + m_prime * (1 - r) / s)
    assert qif.multiplicative_leakage(qif.uniform(5), c_g) == pytest.approx(4)


def test_structured_refuses_nothing_large() -> None:
    ch = qif.ReportingChannel(629, 5, 0.05)
    assert ch.n_sets == math.comb(629, 5)
    assert 7e11 < ch.n_sets < 9e11
    assert ch.entry(frozenset({1, 2, 3, 4, 5}), 3) == ch.p
    assert ch.entry(frozenset({1, 2, 3, 4, 5}), 9) == ch.q
    with pytest.raises(qif.QIFError):
        qif.reporting_channel(629, 5, 0.05)


def test_r_for_capacity_errors() -> None:
    with pytest.raises(qif.QIFError):
        qif.r_for_capacity(1000.0, 629, 5)
    with pytest.raises(qif.QIFError):
        qif.r_for_capacity(2.0, 5, 5)
    assert qif.r_for_capacity(qif.reporting_bayes_capacity(100, 4, 0.3), 100, 4) == 0.3
