"""Property tests of the per-site answers (Dick et al. §3, Algorithm 1).

Frequency checks use explicit binomial bounds: |observed - n*pi| <= Z * sqrt(n*pi*(1-pi)) with
Z = 5 (two-sided false-alarm probability < 6e-7 per check) under fixed seeds.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topicslab.api import Mechanism, answer_probability, answers, observe
from topicslab.taxonomy import Taxonomy, load

Z = 5.0


def within_binomial(count: int, n: int, pi: float) -> bool:
    sd = np.sqrt(n * pi * (1 - pi))
    return abs(count - n * pi) <= Z * sd + 1e-9


def small_taxonomy(m: int) -> Taxonomy:
    return Taxonomy.from_rows(f"toy{m}", [(i + 1, f"/T{i}") for i in range(m)])


def random_sets(rng: np.random.Generator, n: int, weeks: int, k: int, m: int) -> np.ndarray:
    keys = rng.random((n * weeks, m))
    sets = np.sort(np.argsort(keys, axis=1)[:, :k], axis=1)
    return sets.reshape(n, weeks, k).astype(np.int16)


@settings(max_examples=12, deadline=None)
@given(
    m=st.integers(6, 60),
    k=st.integers(1, 5),
    p=st.sampled_from([0.0, 0.05, 0.3, 1.0]),
    seed=st.integers(0, 2**32),
)
def test_answer_frequencies_match_mechanism(m, k, p, seed):
    tax = small_taxonomy(m)
    mech = Mechanism(k=k, p=p, taxonomy=tax)
    rng = np.random.default_rng(seed)
    sets = random_sets(rng, 4000, 3, k, m)
    out = answers(sets, 3, seed=seed, mechanism=mech)
    n = out.size
    in_profile = (out[..., None] == sets[None]).any(-1)
    # P(answer in profile) = k * q_in
    assert within_binomial(int(in_profile.sum()), n, k * mech.q_in)
    # a fixed topic outside the profile: P = q_out per answer
    topic0_out = (out == 0) & ~(sets[None] == 0).any(-1)
    n_out = int((~(sets == 0).any(-1)).sum()) * out.shape[0]
    assert within_binomial(int(topic0_out.sum()), n_out, mech.q_out)
    # each slot of the profile is equally likely: slot 0 gets q_in
    slot0 = out == sets[None, ..., 0]
    assert within_binomial(int(slot0.sum()), n, mech.q_in)


def test_answer_probability_values():
    mech = Mechanism()
    assert answer_probability(True, mech) == pytest.approx(0.95 / 5 + 0.05 / 469)
    assert answer_probability(False, mech) == pytest.approx(0.05 / 469)
    # one answer's likelihood ratio (docs/design.md): 1 + (1-p) m / (p k) = 1783.2 for m = 469
    assert mech.q_in / mech.q_out == pytest.approx(1783.2)


def test_random_answers_are_uniform_over_taxonomy():
    tax = load("v2")
    sets = np.tile(np.arange(5, dtype=np.int16), (50_000, 2, 1))
    out = answers(sets, 2, seed=7, mechanism=Mechanism(p=1.0))
    counts = np.bincount(out.ravel(), minlength=tax.size)
    n = out.size
    ok = [within_binomial(int(c), n, 1 / tax.size) for c in counts]
    assert all(ok)


def test_determinism_and_slice_independence():
    rng = np.random.default_rng(1)
    sets = random_sets(rng, 3000, 4, 5, 469)
    ids = rng.choice(10**9, size=3000, replace=False)
    full = answers(sets, [3, 11, 17], seed=42, user_ids=ids)
    assert np.array_equal(full, answers(sets, [3, 11, 17], seed=42, user_ids=ids))
    # users: a slice regenerated alone, in another order
    idx = rng.permutation(3000)[:500]
    part = answers(sets[idx], [3, 11, 17], seed=42, user_ids=ids[idx])
    assert np.array_equal(part, full[:, idx])
    # sites: one site alone
    assert np.array_equal(answers(sets, [11], seed=42, user_ids=ids)[0], full[1])
    # weeks: weeks 2..3 alone, with their absolute index
    wk = answers(sets[:, 2:], [3, 11, 17], seed=42, user_ids=ids, first_week=2)
    assert np.array_equal(wk, full[:, :, 2:])
    # another seed changes answers
    assert not np.array_equal(full, answers(sets, [3, 11, 17], seed=43, user_ids=ids))


def test_sites_are_independent():
    """P(site A == site B) equals sum_o P(o)^2 for independent draws."""
    rng = np.random.default_rng(2)
    mech = Mechanism()
    sets = random_sets(rng, 40_000, 2, 5, 469)
    out = answers(sets, 2, seed=3)
    same = int((out[0] == out[1]).sum())
    n = out[0].size
    pi = 5 * mech.q_in**2 + (469 - 5) * mech.q_out**2
    assert within_binomial(same, n, pi)
    # and the joint of (in-profile A, in-profile B) factorises
    in_a = (out[0][..., None] == sets).any(-1)
    in_b = (out[1][..., None] == sets).any(-1)
    pa = 5 * mech.q_in
    assert within_binomial(int((in_a & in_b).sum()), n, pa * pa)


def test_short_profiles_are_padded_once_per_week_for_all_sites():
    sets = np.full((200, 1, 5), -1, dtype=np.int16)
    sets[:, 0, 0] = 10
    sets[:, 0, 1] = 20
    out = answers(sets, 300, seed=5, mechanism=Mechanism(p=0.0))
    for u in range(200):
        seen = np.unique(out[:, u, 0])
        assert len(seen) == 5  # the same 5-topic padded profile on every site
        assert {10, 20} <= set(seen.tolist())


def test_caller_filtering_and_lookback():
    rng = np.random.default_rng(4)
    sets = random_sets(rng, 20_000, 5, 5, 469)
    mech = Mechanism()
    none = answers(sets, 2, seed=1)
    assert np.array_equal(answers(sets, 2, seed=1, witnessed=1.0), none)
    zero = answers(sets, 2, seed=1, witnessed=0.0)
    withheld = int((zero == -1).sum())
    assert within_binomial(withheld, zero.size, 1 - mech.p)
    kept = zero != -1
    assert np.array_equal(zero[kept], none[kept])
    half = answers(sets, 2, seed=1, witnessed=0.5)
    assert within_binomial(int((half == -1).sum()), half.size, (1 - mech.p) * 0.5)
    mask = np.zeros((2, 20_000, 5, 5), dtype=bool)
    explicit = answers(sets, 2, seed=1, witnessed=mask)
    assert np.array_equal(explicit == -1, zero == -1)
    # lookback 3: r call-weeks reveal r + 2 epochs, the last ones of the sets
    lb = observe(sets, 2, weeks=2, seed=1, mechanism=Mechanism(lookback=3))
    assert lb.shape == (2, 20_000, 4)
    assert np.array_equal(lb, none[:, :, 1:])
    with pytest.raises(ValueError, match="needs 7 weeks"):
        observe(sets, 2, weeks=5, seed=1, mechanism=Mechanism(lookback=3))


def test_bad_arguments():
    sets = np.zeros((3, 2, 5), dtype=np.int16)
    with pytest.raises(ValueError, match="shape"):
        answers(sets[..., :4], 2)
    with pytest.raises(ValueError, match="dense topic indices"):
        answers(sets + 469, 2)
    with pytest.raises(ValueError):
        Mechanism(p=1.5)
    with pytest.raises(ValueError):
        Mechanism(k=0)


@pytest.mark.parametrize("ids", [[3, 1, 2, 1, 9], [1, 2, 2, 3, 9], [5, 5, 6, 7, 8]])
def test_a_user_id_twice_is_refused_in_any_order(ids: list[int]) -> None:
    from topicslab.errors import InputError

    sets = np.tile(np.array([[[0, 1, 2, 3, 4]]], dtype=np.int16), (5, 1, 1))
    with pytest.raises(InputError, match="appears more than once in user_ids"):
        observe(sets, [0], weeks=1, user_ids=ids)


def test_increasing_user_ids_key_the_answers_as_any_order_does() -> None:
    sets = np.tile(np.array([[[0, 1, 2, 3, 4]]], dtype=np.int16), (6, 2, 1))
    ids = np.array([2, 7, 11, 40, 41, 900])
    forward = observe(sets, [0, 1], weeks=2, seed=3, user_ids=ids)
    order = np.array([5, 0, 3, 1, 4, 2])
    shuffled = observe(sets[order], [0, 1], weeks=2, seed=3, user_ids=ids[order])
    np.testing.assert_array_equal(shuffled, forward[:, order])
