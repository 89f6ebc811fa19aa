"""Fixtures shared by the rounds of bad inputs."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The test's own directory, also the current one: a refused command must leave it
    unchanged."""
    monkeypatch.chdir(tmp_path)
    return tmp_path
