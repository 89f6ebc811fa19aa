"""The framework's bounds: the paper's examples (Lemmas 3-8) and the Topics API bounds
against explicit representation matrices."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from topicslab.api import Mechanism, observe
from topicslab.attacks import (
    answer_epsilon,
    asymmetric_weights,
    full_information_bound,
    k_anonymity,
    ldp_bound,
    ldp_delta,
    matching_bound,
    mutual_information_bound,
    optimal_matching_accuracy,
    partial_information_bound,
    profile_anonymity,
    reid_bounds,
    trial_api_seed,
)
from topicslab.datamodel import TopicSets
from topicslab.errors import InputError
from topicslab.taxonomy import Taxonomy


def lemma6_matrix(n: int) -> np.ndarray:
    """P[i, u_i] = P[i, a_{ceil(i/2)}] = 1/2 (n even, m = 3n/2)."""
    p = np.zeros((n, 3 * n // 2))
    for i in range(n):
        p[i, i] = 0.5
        p[i, n + i // 2] = 0.5
    return p


def lemma8_matrix(n: int) -> np.ndarray:
    i = np.arange(n)
    return np.stack([1 - i / (n - 1), i / (n - 1)], axis=1)


@pytest.mark.parametrize("n", [2, 4])
def test_lemma6_matching_beats_random_user(n):
    p = lemma6_matrix(n)
    assert full_information_bound(p) == pytest.approx(3 / 4)
    assert optimal_matching_accuracy(p) == pytest.approx(7 / 8)
    # Lemma 4 is tight here: 7/8 expected distinct representations per user
    assert matching_bound(p) == pytest.approx(7 / 8)


def test_matching_equals_random_user_for_one_hot_identity():
    p = np.eye(3)
    assert optimal_matching_accuracy(p) == pytest.approx(1.0)
    assert matching_bound(p) == pytest.approx(1.0)
    with pytest.raises(InputError, match="steps"):
        optimal_matching_accuracy(np.full((9, 9), 1 / 9))


@pytest.mark.parametrize("n", [3, 10, 101])
def test_lemma8_low_risk_without_ldp_or_k_anonymity(n):
    p = lemma8_matrix(n)
    assert full_information_bound(p) == pytest.approx(2 / n)
    assert ldp_delta(p, 5.0) == pytest.approx(1.0)  # P[1,2] = 0 while P[n,2] = 1
    assert k_anonymity(p) is None


def test_lemma7_k_anonymity():
    groups = [0] * 3 + [1] * 4 + [2] * 5
    p = np.eye(4)[groups]
    assert k_anonymity(p) == 3
    assert full_information_bound(p) == pytest.approx(3 / 12)
    assert full_information_bound(p) <= 1 / k_anonymity(p)


def test_lemma3_ldp_bound_on_randomized_response():
    eps = math.log(3)
    keep = math.exp(eps) / (1 + math.exp(eps))
    p = np.array([[keep, 1 - keep]] * 5 + [[1 - keep, keep]] * 5)
    assert ldp_delta(p, eps) == pytest.approx(0.0, abs=1e-12)
    assert ldp_delta(p, 0.5 * eps) > 0
    assert full_information_bound(p) == pytest.approx(2 * keep / 10)
    assert ldp_bound(10, 2, eps) == pytest.approx(3 / 10)
    assert full_information_bound(p) <= ldp_bound(10, 2, eps)
    assert ldp_bound(10, 2, eps, 0.1) == pytest.approx((3 + 2 * 0.1) / 10)
    with pytest.raises(InputError):
        ldp_bound(0, 2, eps)
    with pytest.raises(InputError):
        ldp_bound(10, 2, -1.0)


def test_lemma9_mutual_information_bound():
    n = 8
    distinct = np.eye(n)  # MI = log n
    assert mutual_information_bound(distinct) == pytest.approx((1 + math.log(n)) / math.log(n))
    same = np.full((n, 4), 0.25)  # MI = 0
    assert mutual_information_bound(same) == pytest.approx(1 / math.log(n))
    assert full_information_bound(same) <= mutual_information_bound(same)


def test_partial_information_is_the_norm_of_the_posterior_mean():
    ep = np.array([[0.5, 0.5, 0.0], [0.25, 0.25, 0.5]])
    assert partial_information_bound(ep) == pytest.approx((0.5 + 0.5 + 0.5) / 2)


@pytest.mark.parametrize(
    "bad", [np.array([0.5, 0.5]), np.array([[0.5, 0.6]]), np.array([[-0.5, 1.5]]),
            np.array([[np.nan, 1.0]])],
)
def test_bad_matrices(bad):
    with pytest.raises(InputError):
        full_information_bound(bad)


def test_answer_epsilon_by_hand():
    mech = Mechanism()
    assert answer_epsilon(mech) == pytest.approx(math.log(1 + 0.95 * 469 / (0.05 * 5)))
    assert math.isinf(answer_epsilon(Mechanism(p=0.0)))


def test_profile_anonymity():
    s = np.zeros((6, 2, 2), np.int16)
    s[:3] = [[1, 2], [3, 4]]
    s[3:5] = [[1, 2], [3, 5]]
    s[5] = [[2, 1], [3, 4]]  # a different row (order matters: rows are canonical)
    a = profile_anonymity(s)
    assert (a.users, a.distinct, a.unique, a.k) == (6, 3, 1, 1)
    assert a.full_information == pytest.approx(0.5) and a.bound == 1.0
    b = profile_anonymity(s[:5])
    assert b.k == 2 and b.bound == 0.5


def _tiny_population(n: int, weeks: int, seed: int) -> TopicSets:
    """Profiles drawn from a few popular topics so representations collide."""
    rng = np.random.default_rng(seed)
    pool = np.array([0, 1, 2, 3, 4, 5, 6, 7, 100, 200])
    sets = np.stack([np.stack([np.sort(rng.choice(pool, 5, replace=False))
                               for _ in range(weeks)]) for _ in range(n)]).astype(np.int16)
    return TopicSets(sets, "v2")


def _explicit_p(profiles: np.ndarray, q_in: float, q_out: float, m: int) -> np.ndarray:
    n, r, _ = profiles.shape
    per_week = np.full((n, r, m), q_out)
    for s in range(r):
        np.put_along_axis(per_week[:, s], profiles[:, s].astype(np.int64), q_in, axis=1)
    p = per_week[:, 0]
    for s in range(1, r):
        p = (p[:, :, None] * per_week[:, s][:, None, :]).reshape(n, -1)
    return p


@pytest.mark.parametrize("weeks", [1, 2])
def test_topics_bounds_match_explicit_matrices(weeks):
    sets = _tiny_population(25, 3, seed=weeks)
    mech = Mechanism()
    m = mech.tax.size
    b = reid_bounds(sets, weeks=weeks, seed=4)
    prof = sets.sets[:, 3 - weeks:]
    p = _explicit_p(prof, mech.q_in, mech.q_out, m)
    assert p.sum(axis=1) == pytest.approx(np.ones(25))
    assert b.full_information_bound == pytest.approx(full_information_bound(p), rel=1e-9)
    assert b.matching_bound == pytest.approx(matching_bound(p), rel=1e-9)
    # Lemma 2 under Theorem 1's model: E[P|W][i, o] = prod_s g(W_i^s, o^s)
    w = observe(sets.sets, [0], weeks=weeks, seed=trial_api_seed(4, 0), mechanism=mech)[0]
    cover = sum(np.bincount(prof[:, s].ravel(), minlength=m) for s in range(weeks))
    pop = np.clip(cover / (25 * weeks), 1e-6, 1 - 1e-6)
    wm, wx = asymmetric_weights(pop, mech.q_in, mech.q_out, mech.k)
    gm, gx = np.exp(-wm), np.exp(-wx)
    factors = np.where(w[:, :, None] == np.arange(m)[None, None, :], gm, gx)  # [n, r, m]
    ep = factors[:, 0]
    for s in range(1, weeks):
        ep = (ep[:, :, None] * factors[:, s][:, None, :]).reshape(25, -1)
    assert b.partial_information_bound == pytest.approx(ep.max(axis=0).sum() / 25, rel=1e-9)
    assert b.k_anonymity == profile_anonymity(prof).k
    assert b.epsilon_trace == pytest.approx(weeks * answer_epsilon(mech))
    assert b.ldp_bound == pytest.approx(math.exp(b.epsilon_trace) / 25)
    d = b.to_dict()
    assert set(d) >= {"ldp_bound", "k_anonymity_bound", "full_information_bound",
                      "matching_bound", "partial_information_bound"}


def _toy_population(n: int, weeks: int, m: int, seed: int) -> TopicSets:
    """Profiles over a toy taxonomy of m topics: every trace of up to 4 weeks enumerable."""
    rng = np.random.default_rng(seed)
    tax = Taxonomy.from_rows("toy", [(i + 1, f"/t{i}") for i in range(m)])
    sets = np.stack([np.stack([np.sort(rng.choice(m - 1, 5, replace=False))
                               for _ in range(weeks)]) for _ in range(n)]).astype(np.int16)
    return TopicSets(sets, tax)


@pytest.mark.parametrize("weeks", [1, 2, 3, 4])
def test_topics_bounds_match_explicit_matrices_at_any_length(weeks):
    """Corollary 1, Lemmas 2, 4 and 9 from the product channel equal the explicit matrix's
    (every |T|^r trace enumerated) for every trace length."""
    n, m = 12, 8
    sets = _toy_population(n, 4, m, seed=10 + weeks)
    mech = Mechanism(k=5, taxonomy=sets.taxonomy)
    b = reid_bounds(sets, weeks=weeks, seed=3)
    prof = sets.sets[:, 4 - weeks:]
    p = _explicit_p(prof, mech.q_in, mech.q_out, m)
    assert p.shape == (n, m**weeks) and b.exact_cells is not None
    assert b.full_information_bound == pytest.approx(full_information_bound(p), rel=1e-9)
    assert b.matching_bound == pytest.approx(matching_bound(p), rel=1e-9)
    assert b.mutual_information_bound == pytest.approx(mutual_information_bound(p), rel=1e-9)
    assert b.full_information_bound <= b.mutual_information_bound
    w = observe(sets.sets, [0], weeks=weeks, seed=trial_api_seed(3, 0), mechanism=mech)[0]
    cover = sum(np.bincount(prof[:, s].ravel(), minlength=m) for s in range(weeks))
    pop = np.clip(cover / (n * weeks), 1e-6, 1 - 1e-6)
    wm, wx = asymmetric_weights(pop, mech.q_in, mech.q_out, mech.k)
    gm, gx = np.exp(-wm), np.exp(-wx)
    factors = np.where(w[:, :, None] == np.arange(m)[None, None, :], gm, gx)
    ep = factors[:, 0]
    for s in range(1, weeks):
        ep = (ep[:, :, None] * factors[:, s][:, None, :]).reshape(n, -1)
    assert b.partial_information_bound == pytest.approx(ep.max(axis=0).sum() / n, rel=1e-9)


def test_topics_bounds_past_the_cell_limit_are_marked():
    sets = _tiny_population(10, 4, seed=0)
    b = reid_bounds(sets, weeks=3, max_cells=1_000)
    assert b.full_information_bound is None and b.matching_bound is None
    assert b.partial_information_bound is None and b.mutual_information is None
    assert b.exact_cells is not None and b.exact_cells > 1_000 and "max_cells" in b.notes[0]


def test_topics_bounds_bad_input():
    sets = _tiny_population(10, 2, seed=0)
    with pytest.raises(InputError, match="weeks"):
        reid_bounds(sets, weeks=3)
    holes = TopicSets(np.where(sets.sets == 0, -1, sets.sets), "v2")
    if (holes.sets < 0).any():
        with pytest.raises(InputError, match="empty slots"):
            reid_bounds(holes, weeks=1)
    with pytest.raises(InputError, match="popularity"):
        reid_bounds(sets, weeks=1, popularity="oracle")
    with pytest.raises(InputError, match="k"):
        reid_bounds(sets, weeks=1, mechanism=Mechanism(k=4))


def test_ldp_delta_explicit_pairs():
    p = np.array([[0.7, 0.3], [0.2, 0.8]])
    # δ(ε=0) = total variation distance = 0.5
    assert ldp_delta(p, 0.0) == pytest.approx(0.5)
    expect = max(sum(max(0.0, p[i, o] - math.exp(0.5) * p[j, o]) for o in range(2))
                 for i, j in itertools.product(range(2), repeat=2))
    assert ldp_delta(p, 0.5) == pytest.approx(expect)


def test_topics_bounds_corollary1_past_the_cell_limit_at_four_weeks():
    """Past ``max_cells`` at four trace weeks Corollary 1 is still exact (qif.coverage) and
    equals the explicit matrix; the other sums are marked as out of reach."""
    n, m = 12, 8
    sets = _toy_population(n, 4, m, seed=21)
    mech = Mechanism(k=5, taxonomy=sets.taxonomy)
    b = reid_bounds(sets, weeks=4, seed=3, max_cells=10)
    p = _explicit_p(sets.sets, mech.q_in, mech.q_out, m)
    assert b.full_information_bound == pytest.approx(full_information_bound(p), rel=1e-9)
    assert b.matching_bound is None and b.partial_information_bound is None
    assert b.mutual_information is None and "best cover" in b.notes[0]
