"""Scoring, the Hamming and asymmetric attacks' weights, and Lemma 10's estimator."""

from __future__ import annotations

import math

import numpy as np
import pytest

from topicslab.api import Mechanism, answers
from topicslab.attacks import (
    AsymmetricAttack,
    HammingAttack,
    MatchSetAttack,
    asymmetric_weights,
    available_attacks,
    estimate_popularity,
    lemma10_radius,
    make_attack,
    match_masks,
    register_attack,
    subset_scores,
)
from topicslab.errors import InputError


def test_match_masks_ignore_missing_weeks():
    rows = np.array([[1, 2, 3], [-1, 2, 5], [4, 4, 4]])
    qs = np.array([[1, 0, 3], [-1, 2, 5], [-1, -1, -1]])
    assert match_masks(rows, qs).tolist() == [0b101, 0b110, 0]


def test_subset_scores_equal_direct_sums_and_tie_exactly():
    rng = np.random.default_rng(0)
    g = rng.normal(size=(50, 6))
    sc = subset_scores(g)
    for mask in range(64):
        bits = [(mask >> w) & 1 for w in range(6)]
        np.testing.assert_allclose(sc[:, mask], (g * bits).sum(axis=1), rtol=0, atol=1e-12)
    # the same multiset of gains in different weeks gives bit-identical scores
    g2 = np.array([[0.1, 0.7, 0.2, 0.1, 0.7, 0.2]])
    s2 = subset_scores(g2)
    assert s2[0, 0b000111] == s2[0, 0b111000]
    assert s2[0, 0b010001] == s2[0, 0b001010]  # {0.1, 0.7} in both


def test_hamming_gains_are_one():
    att = HammingAttack()
    att.fit(np.zeros((3, 4), np.int16))
    assert (att.gains(np.zeros((2, 4), np.int16)) == 1).all()


def test_asymmetric_weights_by_hand():
    """Theorem 1 and Lemma 11 for k = 5, |T| = 469, p_api = 0.05 and p[o] = 0.1, 0.3."""
    q_out = 0.05 / 469
    q_in = 0.95 / 5 + q_out
    w_match, w_mis = asymmetric_weights([0.1, 0.3], q_in, q_out, 5)
    for i, p in enumerate((0.1, 0.3)):
        bayes = q_in * p / (q_in * p + q_out * (1 - p))  # P(t in S | W = t)
        assert w_match[i] == pytest.approx(-math.log(q_out + (q_in - q_out) * bayes), rel=1e-12)
        alpha = 4 * p / (5 - p)  # Lemma 11
        assert w_mis[i] == pytest.approx(-math.log(q_out + (q_in - q_out) * alpha), rel=1e-12)
    # spelled-out numbers for p = 0.1: alpha = 0.4/4.9, bayes ~ 0.995
    assert w_mis[0] == pytest.approx(-math.log(q_out + (q_in - q_out) * 0.4 / 4.9))
    assert w_match[0] == pytest.approx(1.6652, abs=1e-3)
    # a match on a rare topic is worth more than on a popular one
    gain = w_mis - w_match
    assert gain[0] > gain[1] > 0


def test_asymmetric_weights_reject_unclipped_popularity():
    with pytest.raises(ValueError, match=r"\(0, 1\)"):
        asymmetric_weights([0.0, 0.5], 0.2, 0.001, 5)


def test_asymmetric_attack_uses_site1_only():
    mech = Mechanism()
    rng = np.random.default_rng(2)
    site1 = rng.integers(0, 469, size=(2000, 3)).astype(np.int16)
    site1[:, 0] = 7  # topic 7 is everywhere on website 1: a match on it is worth little
    att = AsymmetricAttack()
    att.fit(site1, mech)
    assert att.popularity is not None
    expect = estimate_popularity(site1, 469, mech.q_in, mech.q_out)
    np.testing.assert_array_equal(att.popularity, expect)
    g = att.gains(np.array([[7, 8, -1]], np.int16))
    assert 0 < g[0, 0] < g[0, 1] and g[0, 2] == 0.0
    desc = att.describe()
    assert desc["answers_used"] == 6000 and desc["popularity_source"] == "lemma10(site 1)"
    lines = att.weights_jsonl().splitlines()
    assert len(lines) == 469
    import json

    first = json.loads(lines[7])
    assert first["token_id"] == int(mech.tax.ids[7])
    assert first["match_weight"] == pytest.approx(float(att.w_match[7]))


def test_asymmetric_attack_bad_input():
    att = AsymmetricAttack()
    with pytest.raises(RuntimeError):
        att.gains(np.zeros((1, 2), np.int16))
    with pytest.raises(InputError, match="not a topic"):
        att.fit(np.array([[469, 0]]), Mechanism())
    att.fit(np.zeros((5, 2), np.int16), Mechanism())
    with pytest.raises(InputError, match="not a topic"):
        att.gains(np.array([[0, 500]]))
    with pytest.raises(InputError, match="entries"):
        AsymmetricAttack(popularity=[0.5]).fit(np.zeros((5, 2), np.int16), Mechanism())


def test_registry():
    assert available_attacks()[:2] == ["hamming", "asymmetric"]
    with pytest.raises(InputError, match="unknown attack"):
        make_attack("nope")

    class Constant(MatchSetAttack):
        name = "constant-test"

        def fit(self, site1, mechanism=None):
            pass

        def gains(self, queries):
            return np.full(np.asarray(queries).shape, 2.0)

    from topicslab.attacks import attack as registry

    register_attack("constant-test", Constant)
    try:
        assert isinstance(make_attack("constant-test"), Constant)
        assert available_attacks()[2:] == ["constant-test"]
        with pytest.raises(ValueError):
            register_attack("bad name!", Constant)
    finally:
        registry._REGISTRY.pop("constant-test")


def test_popularity_pseudo_count_and_clip():
    q_in, q_out = 0.2, 0.001
    raw = estimate_popularity([0, 0, 1, 1], 3, q_in, q_out, pseudo_count=0, clip=None)
    np.testing.assert_allclose(raw, ([0.5, 0.5, 0.0] - np.array(q_out)) / (q_in - q_out))
    smoothed = estimate_popularity([0, 0, 1, 1], 3, q_in, q_out, pseudo_count=1, clip=None)
    np.testing.assert_allclose(smoothed, ([3 / 7, 3 / 7, 1 / 7] - np.array(q_out)) /
                               (q_in - q_out))
    clipped = estimate_popularity([0, 0, 1, 1], 3, q_in, q_out, pseudo_count=0)
    assert clipped.min() > 0 and clipped.max() < 1
    with pytest.raises(ValueError):
        estimate_popularity([5], 3, q_in, q_out)
    with pytest.raises(ValueError):
        estimate_popularity([-1], 3, q_in, q_out, pseudo_count=0)
    with pytest.raises(ValueError):
        estimate_popularity([0], 3, q_out, q_in)


def test_lemma10_estimator_within_its_bound():
    """Sets drawn from a known distribution: |p̂_s - p_s| <= radius for every topic (δ = 1e-6).

    Each user's week-s profile is one of four fixed 5-sets with known probabilities, so
    p_s[o] = sum of the probabilities of the sets holding o, exactly.
    """
    mech = Mechanism()
    m = mech.tax.size
    profiles = np.array([[0, 1, 2, 3, 4], [0, 5, 6, 7, 8], [1, 5, 9, 10, 11],
                         [100, 200, 300, 400, 468]], dtype=np.int16)
    probs = np.array([0.4, 0.3, 0.2, 0.1])
    p_true = np.zeros(m)
    for prof, pr in zip(profiles, probs, strict=True):
        p_true[prof] += pr
    n = 200_000
    rng = np.random.default_rng(5)
    sets = profiles[rng.choice(4, size=(n, 1), p=probs)]
    w = answers(sets, [0], seed=3, mechanism=mech)[0, :, 0]
    est = estimate_popularity(w, m, mech.q_in, mech.q_out, pseudo_count=0, clip=None)
    radius = lemma10_radius(n, m, mech.q_in, mech.q_out, 1e-6)
    assert radius < 0.05
    assert np.abs(est - p_true).max() <= radius
    # and it is not trivially loose: the error is of the order of the bound's scale
    assert np.abs(est - p_true).max() > radius / 50


def test_lemma10_radius_bad_input():
    with pytest.raises(ValueError):
        lemma10_radius(0, 10, 0.2, 0.1, 0.1)
    with pytest.raises(ValueError):
        lemma10_radius(10, 10, 0.2, 0.1, 1.5)
