"""Shared test configuration."""

from __future__ import annotations

from pathlib import Path

import pytest

#: ../shared next to the checkout (read-only project data: taxonomy, specs).
SHARED = Path(__file__).resolve().parents[1].parent / "shared"


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if not SHARED.is_dir():
        pytest.skip("../shared is not present next to the checkout")
    return SHARED
