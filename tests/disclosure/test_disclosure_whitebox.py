"""White-box posterior/prior ratio: exact likelihoods on small cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from topicslab.api import Mechanism
from topicslab.disclosure import (
    first_violation,
    log_likelihood,
    log_ratio,
    single_answer_likelihood_ratio,
)
from topicslab.errors import InputError


def test_single_answer_likelihood_ratio() -> None:
    assert single_answer_likelihood_ratio(5, 0.05, 469) == pytest.approx(1783.2)
    assert single_answer_likelihood_ratio(5, 0.05, 349) == pytest.approx(1327.2)
    for k, p, m in ((5, 0.05, 469), (3, 0.2, 100), (1, 1.0, 10)):
        assert single_answer_likelihood_ratio(k, p, m) == pytest.approx(1 + (1 - p) * m / (p * k))
    mech = Mechanism()
    assert mech.q_in / mech.q_out == pytest.approx(1783.2)
    with pytest.raises(InputError):
        single_answer_likelihood_ratio(5, 0.0, 469)


def test_log_likelihood_by_hand() -> None:
    mech = Mechanism()
    qi, qo = mech.q_in, mech.q_out
    # two sampled personas, two epochs, k = 5
    sets = np.array([[[0, 1, 2, 3, 4], [0, 1, 2, 3, 5]],
                     [[10, 11, 12, 13, 14], [0, 11, 12, 13, 14]]])
    # one observed user, two sites: epoch 0 answers (0, 10), epoch 1 answers (5, -1 withheld)
    obs = np.array([[[0, 5], [10, -1]]])
    # one phase per epoch: each observed epoch is matched with the same sampled epoch, i.e.
    # the plain trajectory average E_S[Π_w Π_j P(o_jw | S_w)]
    ll = log_likelihood(obs, sets, mech, obs_phase=[0, 1], pool_phase=[0, 1])
    p1 = [qi * qo, qo * qi]  # epoch 0 likelihood under each sample
    p2 = [qi * qo * qi, qo * qi * qo]  # epochs 0 and 1
    assert ll[0, 0] == pytest.approx(math.log(np.mean(p1)))
    assert ll[0, 1] == pytest.approx(math.log(np.mean(p2)))
    # one phase (default): each epoch's likelihood is averaged over the persona's pool
    ll = log_likelihood(obs, sets, mech)
    assert ll[0, 0] == pytest.approx(math.log(qi * qo))
    assert ll[0, 1] == pytest.approx(math.log(np.mean([qi * qo * (qo + qi) / 2,
                                                       qi * qo * qo])))


def test_a_topic_twice_in_a_set_counts_once() -> None:
    """A set is a set: a topic repeated in a sampled set (or an empty slot, -1) changes no
    likelihood, and an answer given twice is two answers of that topic."""
    mech = Mechanism()
    obs = np.array([[[0, 7], [0, 3], [-1, 0]]])  # 3 sites, 2 epochs; topic 0 answered twice
    sets = np.array([[[0, 1, 2, 3, 4], [0, 5, 6, 7, 8]], [[9, 10, 11, 12, 13], [0, 3, 7, 9, 1]]])
    twice = sets.copy()
    twice[0, 0, 4] = 0  # {0, 1, 2, 3} with 0 twice
    empty = sets.copy()
    empty[0, 0, 4] = -1  # {0, 1, 2, 3}
    assert np.array_equal(log_likelihood(obs, twice, mech), log_likelihood(obs, empty, mech))
    qi = mech.q_in
    # persona 0, pool of one phase: epoch 0 answers (0, 0, -1) hit set {0,1,2,3} twice and
    # set {0,5,6,7,8} twice
    ll = log_likelihood(obs[:, :, :1], empty[:1], mech)
    assert ll[0, 0] == pytest.approx(math.log(qi * qi))
    other = sets.copy()
    other[0, 0, 4] = 7  # {0, 1, 2, 3, 7}: topic 7 was answered in epoch 1
    assert not np.array_equal(log_likelihood(obs, other, mech),
                              log_likelihood(obs, empty, mech))


def test_pooled_phases() -> None:
    mech = Mechanism()
    qi, qo = mech.q_in, mech.q_out
    # one sampled persona with a pool of 3 epochs: phases 0, 1, 1
    sets = np.array([[[0, 1, 2, 3, 4], [5, 6, 7, 8, 9], [0, 6, 7, 8, 9]]])
    obs = np.array([[[0, 6]]])  # one user, one site, epochs of phase 0 then 1
    ll = log_likelihood(obs, sets, mech, obs_phase=[0, 1], pool_phase=[0, 1, 1])
    g0 = qi  # answer 0 is in the phase-0 set
    g1 = np.mean([qi, qi])  # answer 6 in both phase-1 sets
    assert ll[0, 0] == pytest.approx(math.log(g0))
    assert ll[0, 1] == pytest.approx(math.log(g0 * g1))
    ll = log_likelihood(np.array([[[0, 0]]]), sets, mech, obs_phase=[0, 1],
                        pool_phase=[0, 1, 1])
    assert ll[0, 1] - ll[0, 0] == pytest.approx(math.log(np.mean([qo, qi])))
    with pytest.raises(InputError, match="phase"):
        log_likelihood(obs, sets, mech, obs_phase=[0, 2], pool_phase=[0, 1, 1])


def test_log_ratio_is_a_posterior_over_prior() -> None:
    rng = np.random.default_rng(1)
    ll = rng.normal(-50, 10, size=(3, 4, 5))
    prior = np.array([0.1, 0.3, 0.6])
    ln_m = log_ratio(ll, prior)
    assert ln_m.shape == (4, 5, 3)
    # Σ_c π(c) M(c) = 1 and M(c) ≤ 1/π(c)
    np.testing.assert_allclose((np.exp(ln_m) * prior).sum(axis=-1), 1.0)
    assert (ln_m <= -np.log(prior) + 1e-12).all()
    # equal likelihoods: the posterior is the prior
    np.testing.assert_allclose(log_ratio(np.zeros((3, 1, 2)), prior), 0.0, atol=1e-12)
    with pytest.raises(InputError):
        log_ratio(ll, [1.0, 2.0])
    with pytest.raises(InputError):
        log_ratio(ll, [0.0, 0.0, 0.0])


def test_first_violation() -> None:
    ln_m = np.array([[0.1, 0.8, 0.2], [0.0, 0.0, 0.0], [1.0, 1.0, 1.0]])
    assert first_violation(ln_m).tolist() == [2, 0, 1]
    assert first_violation(ln_m, epsilon=0.9).tolist() == [0, 0, 1]


def test_bad_inputs() -> None:
    sets = np.zeros((2, 3, 5), dtype=np.int16)
    with pytest.raises(InputError):
        log_likelihood(np.zeros((2, 3)), sets)
    with pytest.raises(InputError):
        log_likelihood(np.full((1, 1, 3), 469), sets)
    with pytest.raises(InputError):
        log_likelihood(np.zeros((1, 65, 3), dtype=np.int64), sets)
    with pytest.raises(InputError):
        log_likelihood(np.zeros((1, 1, 3)), np.full((2, 3, 5), 500))
