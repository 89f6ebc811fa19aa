"""Corollary 1 at four weeks by the best cover of each 3-week prefix (``qif.coverage``)
against brute force over every |T|^4 trace and against the product channel."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from topicslab.qif.coverage import corollary1_four_weeks
from topicslab.qif.errors import QIFError
from topicslab.qif.product_channel import topics_channel


def _brute(profiles: np.ndarray, m: int, q_in: float, q_out: float) -> float:
    n = profiles.shape[0]
    held = np.zeros((n, 4, m), dtype=bool)
    for u, s, j in itertools.product(range(n), range(4), range(profiles.shape[2])):
        if profiles[u, s, j] >= 0:
            held[u, s, profiles[u, s, j]] = True
    total = 0.0
    for o in itertools.product(range(m), repeat=4):
        covered = held[:, 0, o[0]].astype(int) + held[:, 1, o[1]] + held[:, 2, o[2]] \
            + held[:, 3, o[3]]
        total += max(q_in ** int(c) * q_out ** (4 - int(c)) for c in covered)
    return total / n


def _profiles(rng: np.random.Generator, n: int, m: int, k: int, popular: int) -> np.ndarray:
    """k distinct topics per user-week, drawn from the first ``popular`` topics so that
    users share covers (ties at every level)."""
    return np.stack([np.stack([np.sort(rng.choice(popular, k, replace=False))
                               for _ in range(4)]) for _ in range(n)]).astype(np.int16)


@pytest.mark.parametrize("seed", range(8))
def test_equals_brute_force(seed):
    rng = np.random.default_rng(seed)
    m = int(rng.integers(3, 8))
    k = int(rng.integers(1, min(3, m) + 1))
    n = int(rng.integers(1, 15))
    prof = _profiles(rng, n, m, k, popular=int(rng.integers(k, m + 1)))
    if k > 1 and seed % 3 == 0:
        prof[0, seed % 4, 0] = -1  # an empty slot: still a held topic in that week
    p = float(rng.choice([0.05, 0.5, 1.0]))
    q_in, q_out = (1 - p) / k + p / m, p / m
    assert corollary1_four_weeks(prof, m, q_in, q_out) == pytest.approx(
        _brute(prof, m, q_in, q_out), rel=1e-12)


def test_no_noise_counts_the_covered_traces():
    """p = 0 (q_out = 0): the sum is q_in^4 × the traces some user covers in every week,
    over n; two users with the same profile cover the same k^4 traces."""
    prof = np.array([[[0, 1]] * 4, [[0, 1]] * 4, [[2, 3]] * 4], dtype=np.int16)
    q_in = 0.5
    assert corollary1_four_weeks(prof, 6, q_in, 0.0) == pytest.approx(
        q_in**4 * (2 * 2**4) / 3, rel=1e-15)


@pytest.mark.parametrize("m", [70, 130])
def test_matches_the_product_channel_past_one_word(m):
    """Taxonomies over 64 topics (bitsets of two and three words) against ProductChannel,
    the exact sum over every trace cell."""
    rng = np.random.default_rng(m)
    prof = _profiles(rng, 60, m, 5, popular=m)
    q_in, q_out = 0.95 / 5 + 0.05 / m, 0.05 / m
    exact = topics_channel(prof, m, q_in, q_out).max_sum(np.full(60, 1 / 60))
    assert corollary1_four_weeks(prof, m, q_in, q_out) == pytest.approx(exact, rel=1e-10)


@pytest.mark.parametrize("bad, match", [
    (np.zeros((3, 3, 2), dtype=np.int16), "4, slots"),
    (np.zeros((0, 4, 2), dtype=np.int16), "non-empty"),
    (np.full((2, 4, 2), 9, dtype=np.int16), "outside"),
    (np.full((2, 4, 2), -1, dtype=np.int16), "every week"),
])
def test_bad_profiles(bad, match):
    with pytest.raises(QIFError, match=match):
        corollary1_four_weeks(bad, 5, 0.3, 0.01)


def test_bad_probabilities():
    with pytest.raises(QIFError, match="q_in >= q_out"):
        corollary1_four_weeks(np.zeros((1, 4, 1), dtype=np.int16), 5, 0.01, 0.3)
