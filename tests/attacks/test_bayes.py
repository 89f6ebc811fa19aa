"""The full-information Bayes attacker (Corollary 1) on sampled traces."""

from __future__ import annotations

import math

import numpy as np
import pytest

from topicslab.attacks import reid_bounds
from topicslab.attacks.bayes import bayes_risk, expected_successes
from topicslab.datamodel import TopicSets
from topicslab.errors import InputError
from topicslab.taxonomy import Taxonomy


def _population(n: int, weeks: int, m: int, seed: int) -> TopicSets:
    rng = np.random.default_rng(seed)
    tax = Taxonomy.from_rows("toy", [(i + 1, f"/t{i}") for i in range(m)])
    pop = rng.zipf(1.6, size=10 * m) % m  # skewed popularity: many shared topics
    sets = np.empty((n, weeks, 5), dtype=np.int16)
    for u in range(n):
        for s in range(weeks):
            sets[u, s] = np.sort(rng.choice(np.unique(pop)[:max(8, m // 2)], 5, replace=False))
    return TopicSets(sets, tax)


@pytest.mark.parametrize("seed", range(3))
def test_candidate_pruning_matches_every_user_compared(seed: int) -> None:
    """The inverted-list candidates give the same success and argmax size as comparing the
    trace with every user's profile."""
    rng = np.random.default_rng(seed)
    n, r, m = 300, 1 + seed * 2, 20
    prof = _population(n, r, m, seed).sets
    targets = rng.choice(n, 120, replace=False).astype(np.int64)
    traces = rng.integers(0, m, size=(120, r))
    own = rng.random((120, r)) < 0.8  # mostly the target's own topics, some noise
    pick = prof[targets][np.arange(120)[:, None], np.arange(r)[None, :],
                         rng.integers(0, 5, size=(120, r))]
    traces = np.where(own, pick, traces).astype(np.int64)
    out, ties = expected_successes(prof, targets, traces, m)
    cover = (prof[None, :, :, :] == traces[:, None, :, None]).any(axis=3).sum(axis=2)
    best = cover.max(axis=1)
    mine = cover[np.arange(120), targets]
    n_best = (cover == best[:, None]).sum(axis=1)
    expect = np.where(mine == best, 1.0 / n_best, 0.0)
    np.testing.assert_allclose(out, expect, rtol=0, atol=1e-15)
    np.testing.assert_array_equal(ties, np.where(mine == best, n_best, -1))


@pytest.mark.parametrize("weeks", [1, 2, 3])
def test_estimate_agrees_with_the_exact_corollary_1(weeks: int) -> None:
    """Every user a target: the mean is within a CLT bound of reid_bounds' exact value."""
    sets = _population(4_000, 3, 30, seed=weeks)
    exact = reid_bounds(sets, weeks=weeks).full_information_bound
    assert exact is not None
    est = bayes_risk(sets, weeks=weeks, seed=11)
    assert est.targets == 4_000 and est.ci95[0] <= est.risk <= est.ci95[1]
    # 4 standard errors (the CI is ±1.96): fails by chance with probability ~6e-5
    half = (est.ci95[1] - est.ci95[0]) / 2
    assert abs(est.risk - exact) <= 4 / 1.96 * half + 1e-12
    assert 0.0 < est.risk <= 1.0 and est.argmax_size_mean >= 1.0


def test_more_weeks_never_hurt_the_bayes_attacker() -> None:
    sets = _population(3_000, 6, 40, seed=5)
    risks = [bayes_risk(sets, weeks=r, targets=2_000, seed=2).risk for r in (1, 3, 6)]
    assert risks[0] < risks[1] < risks[2]
    d = bayes_risk(sets, weeks=2, targets=100, seed=0).to_dict()
    assert set(d) >= {"weeks", "users", "targets", "risk", "ci95", "argmax_size_mean"}
    assert math.isfinite(d["risk"])


def test_bad_arguments() -> None:
    sets = _population(50, 2, 20, seed=0)
    with pytest.raises(InputError, match="weeks"):
        bayes_risk(sets, weeks=3)
    with pytest.raises(InputError, match="targets"):
        bayes_risk(sets, weeks=1, targets=51)
    holes = TopicSets(np.where(sets.sets == sets.sets[0, 0, 0], -1, sets.sets), sets.taxonomy)
    with pytest.raises(InputError, match="empty slots"):
        bayes_risk(holes, weeks=1)
