"""Fixtures for the io tests: small random populations with empty weeks and odd user ids."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from topicslab.datamodel import TopicSets, canonicalize_sets
from topicslab.taxonomy import load


def random_sets(n: int = 40, weeks: int = 4, k: int = 5, version: str = "v2", seed: int = 0,
                p_short: float = 0.3) -> TopicSets:
    """Distinct topics per week; some weeks shorter than k, some empty; ids not 0..n-1."""
    tax = load(version)
    rng = np.random.default_rng(seed)
    picks = np.argsort(rng.random((n, weeks, tax.size)), axis=-1)[..., :k].astype(np.int16)
    lengths = np.where(rng.random((n, weeks)) < p_short, rng.integers(0, k, (n, weeks)), k)
    picks[np.arange(k)[None, None, :] >= lengths[..., None]] = -1
    user_ids = np.sort(rng.choice(10**12, n, replace=False)).astype(np.int64)[::-1].copy()
    return TopicSets(canonicalize_sets(picks), tax, user_ids,
                     {"generator": "test", "seed": seed, "params": {"k": k, "p": [0.5, 1.5]}})


@pytest.fixture
def make_sets() -> Callable[..., TopicSets]:
    return random_sets


def assert_same(a: TopicSets, b: TopicSets, *, metadata: bool = True) -> None:
    assert a.taxonomy.version == b.taxonomy.version
    assert a.sets.shape == b.sets.shape
    np.testing.assert_array_equal(a.sets, b.sets)
    np.testing.assert_array_equal(a.user_ids, b.user_ids)
    if metadata:
        assert a.metadata == b.metadata


@pytest.fixture
def same() -> Callable[..., None]:
    return assert_same
