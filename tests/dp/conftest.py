"""Shared helpers for the dp tests: a small custom taxonomy keeps everything fast."""

from __future__ import annotations

import pytest

from topicslab.taxonomy import Taxonomy


def small_taxonomy(m: int = 12) -> Taxonomy:
    rows = [(i * 3 + 1, f"/Topic {i:02d}") for i in range(m)]
    return Taxonomy.from_rows(f"test{m}", rows)


@pytest.fixture(scope="session")
def tax12() -> Taxonomy:
    return small_taxonomy(12)
