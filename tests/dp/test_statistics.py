"""compute_statistics end to end: exactness at huge epsilon, ledger contents, identities."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import topicslab
from topicslab.datamodel import TopicSets
from topicslab.dp import compute_statistics

M = 12


def full_sets(n: int, weeks: int, k: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    keys = rng.random((n, weeks, M))
    return np.sort(np.argsort(keys, axis=-1)[..., :k], axis=-1).astype(np.int16)


def exact_stats(sets: np.ndarray, k: int):
    """Independent definitions of Dick et al. §4.1 with Python sets."""
    n, weeks, _ = sets.shape
    qw = np.zeros((M, M))
    qa = np.zeros((M, M))
    for u in range(n):
        for w in range(weeks):
            for a, b in itertools.combinations(sorted(set(sets[u, w].tolist())), 2):
                qw[a, b] += 1 / (n * weeks)
                qw[b, a] += 1 / (n * weeks)
        for w in range(weeks - 1):
            for a in set(sets[u, w].tolist()):
                for b in set(sets[u, w + 1].tolist()):
                    qa[a, b] += 1 / (n * (weeks - 1))
    qs = np.zeros(M)
    for u in range(n):
        for w in range(weeks):
            for a in set(sets[u, w].tolist()):
                qs[a] += 1 / (n * weeks)
    return qs, qw, qa


@pytest.mark.parametrize("weeks", [2, 3])
def test_huge_epsilon_gives_exact_statistics(tax12, weeks):
    k = 4
    sets = full_sets(300, weeks, k, seed=weeks)
    res = compute_statistics(TopicSets(sets, tax12), weeks=range(weeks), k=k, epsilon=1e4,
                             delta=1e-6, seed=5)
    qs, qw, qa = exact_stats(sets, k)
    assert res.n_estimate == pytest.approx(300, abs=1e-6)
    np.testing.assert_allclose(res.q_within, qw, atol=1e-12)
    np.testing.assert_allclose(res.q_across, qa, atol=1e-12)
    np.testing.assert_allclose(res.q_single, qs, atol=1e-12)
    assert res.k == k and res.taxonomy is tax12


def test_shapes_identities_and_ledger(tax12):
    sets = full_sets(2000, 2, 5, seed=1)
    res = compute_statistics(TopicSets(sets, tax12), seed=3)
    assert res.q_within.shape == (M, M) and res.q_across.shape == (M, M)
    np.testing.assert_array_equal(res.q_within, res.q_within.T)
    assert not np.diag(res.q_within).any()
    assert (res.q_within >= 0).all() and (res.q_across >= 0).all()
    # q_single comes from the unclipped q_within: never above the clipped row sums
    assert (res.q_single <= res.q_within.sum(1) / 4 + 1e-12).all()
    assert res.q_single.sum() == pytest.approx(5, rel=0.05)
    led = res.ledger
    assert led is not None
    assert [m["name"] for m in led.mechanisms] == ["within_w0", "within_w1", "across_w0_w1"]
    assert [m["sensitivity"] for m in led.mechanisms] == [math.sqrt(10)] * 2 + [5.0]
    assert led.target == {"epsilon": math.log(3), "delta": 1e-15}
    assert led.composition["basic"]["epsilon"] == pytest.approx(math.log(3))
    assert "add/remove" in led.neighbouring_relation
    assert led.package["version"] == topicslab.__version__
    assert led.noise["cryptographically_secure"] is False and led.noise["seed"] == 3
    assert led.audit is not None and led.audit["input_fingerprint"].startswith("sha256:")
    # paper split at the defaults: the discrete noise is rigorously within the target
    assert led.claimed["rigorous_discrete_epsilon"] <= math.log(3)
    assert led.public().audit is None


def test_seed_reproducible_secure_default(tax12):
    data = TopicSets(full_sets(500, 2, 5, seed=2), tax12)
    a = compute_statistics(data, seed=11, accounting="tight")
    b = compute_statistics(data, seed=11, accounting="tight")
    np.testing.assert_array_equal(a.q_within, b.q_within)
    assert a.ledger is not None and a.ledger.noise_vs_paper is not None
    assert all(r["sigma_ratio"] < 1 for r in a.ledger.noise_vs_paper)
    c = compute_statistics(data)
    assert c.ledger is not None and c.ledger.noise["cryptographically_secure"] is True
    # no padding needed here, so the bounded input (and its fingerprint) is the same
    assert c.ledger.audit["input_fingerprint"] == a.ledger.audit["input_fingerprint"]


def test_noise_scale_of_released_counts(tax12):
    # with many users the within-week noise on q_within is sigma/n per entry
    n = 20_000
    data = TopicSets(full_sets(n, 2, 5, seed=4), tax12)
    res = compute_statistics(data, epsilon=1.0, delta=1e-6, seed=8)
    sig = res.ledger.mechanisms[0]["sigma"]
    iu = np.triu_indices(M, 1)
    exact = compute_statistics(data, epsilon=1e4, delta=1e-6, seed=8).q_within
    err = (res.q_within - exact)[iu]
    # average of two weeks: sd = sigma / (n * sqrt(2)) per entry (n-estimate error is ~1e-3
    # relative, negligible); 66 entries: rms^2 / sd^2 ~ chi2(66)/66, within [0.5, 1.6] w.p.
    # > 0.998 (fixed seed: deterministic)
    sd = sig / (n * math.sqrt(2))
    ratio = float((err**2).mean()) / sd**2
    assert 0.5 < ratio < 1.6


def test_bad_parameters(tax12):
    data = TopicSets(full_sets(10, 2, 5, seed=0), tax12)
    with pytest.raises(ValueError, match="epsilon"):
        compute_statistics(data, epsilon=0)
    with pytest.raises(ValueError, match="delta"):
        compute_statistics(data, delta=1.0)
    with pytest.raises(ValueError, match="weeks"):
        compute_statistics(data, weeks=[0, 5])


def test_default_weeks_are_the_papers_first_two(tax12):
    sets = full_sets(200, 4, 5, seed=6)
    res = compute_statistics(TopicSets(sets, tax12), seed=1)
    assert res.ledger is not None
    assert res.ledger.contribution_bounding["weeks"] == [0, 1]
    assert [m["name"] for m in res.ledger.mechanisms] == ["within_w0", "within_w1",
                                                         "across_w0_w1"]
    with pytest.raises(ValueError, match="distinct"):
        compute_statistics(TopicSets(sets, tax12), weeks=[1, 1])


def test_claim_never_exceeds_what_is_proven():
    from topicslab.dp.statistics import _claim

    ok = _claim(1.0, 1e-9, "paper", {"zcdp": {"epsilon": 0.9, "rho": 0.01}})
    assert ok["epsilon"] == 1.0 and "warning" not in ok
    # a target the discrete noise does not meet is never claimed: the proven value is
    bad = _claim(1.0, 1e-9, "paper", {"zcdp": {"epsilon": 1.3, "rho": 0.02}})
    assert bad["epsilon"] == 1.3 and "tight" in bad["warning"]


def test_tight_ledger_is_proven_at_the_target(tax12):
    res = compute_statistics(TopicSets(full_sets(300, 2, 5, seed=3), tax12), seed=2,
                             accounting="tight")
    led = res.ledger
    assert led is not None and "warning" not in led.claimed
    assert led.claimed["epsilon"] == pytest.approx(math.log(3))
    assert led.composition["zcdp"]["epsilon"] <= math.log(3) * (1 + 1e-9)
    # the sampled sigma (sigma^2 rounded up to a dyadic) only adds noise
    assert all(mq["sigma_sampled"] >= mq["sigma"] for mq in led.mechanisms)


def test_a_user_listed_twice_is_refused(tax12):
    from topicslab.errors import InputError

    sets = full_sets(50, 2, 5, seed=7)
    ids = np.arange(50, dtype=np.int64)
    ids[30] = 4
    with pytest.raises(InputError, match="user id 4 appears more than once"):
        compute_statistics(TopicSets(sets, tax12, ids), seed=1)
