"""``experiment.sizes``: a run that surely cannot fit is refused before any stage, from Python
as from the CLI, naming the option that would help (the population's and the fit's checks
were the CLI's only: from Python a population of 300M users was refused as "use fewer
--targets", by the protocol's estimate, and a model too large for memory only by the fit,
after the population and the release)."""

from __future__ import annotations

from pathlib import Path

import pytest

from topicslab import _resources, experiment
from topicslab.errors import InputError
from topicslab.experiment import sizes
from topicslab.experiment.presets import PRESETS

GIB = 1 << 30


@pytest.fixture
def memory(monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine of 8 GiB available and no address-space limit, whatever runs the tests."""
    monkeypatch.setattr(_resources, "available_memory", lambda: 8 * GIB)
    monkeypatch.setattr(_resources, "address_space_room", lambda: None)


def test_python_names_the_users_for_a_population_that_cannot_fit(
        tmp_path: Path, memory: None) -> None:
    out = tmp_path / "run"
    with pytest.raises(InputError) as info:
        experiment.run("default", out, users=300_000_000)
    assert info.value.field == "--users"
    assert "300,000,000 users x 4 weeks" in str(info.value)
    assert not out.exists()


def test_python_names_the_types_for_a_fit_that_cannot_fit(
        tmp_path: Path, memory: None) -> None:
    out = tmp_path / "run"
    # 20,000 paper types over 4 weeks: 32 copies of 20,000 x 4 x 5 x 469 float64 = 9.6 GB
    with pytest.raises(InputError) as info:
        experiment.run("smoke", out, overrides={"model": "paper", "types": 20_000})
    assert info.value.field == "--types"
    assert "fitting 20,000 types over 4 weeks" in str(info.value)
    assert not out.exists()


def test_the_population_estimate_grows_with_users_and_weeks(
        monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[tuple[float, str | None]] = []
    monkeypatch.setattr(_resources, "require_memory",
                        lambda need, what, field=None, hint="": asked.append((need, field)))

    def estimate(users: int, weeks: int) -> float:
        sizes.check_population_size(users, weeks, None, 1)
        need, field = asked[-1]
        assert field == "--users"
        return need

    # the sets (two int16 tables of 5 topics a week) and one generated chunk (250,000 users
    # of 80 bytes a week)
    assert estimate(10_000_000, 8) == 10e6 * 8 * 5 * 2 * 2 + 250_000 * 8 * 80
    assert estimate(1_000, 4) == 1e3 * 4 * 5 * 2 * 2 + 1_000 * 4 * 80
    assert estimate(10_000_000, 8) > estimate(1_000_000, 8) > estimate(1_000_000, 4)


def test_a_run_that_fits_passes_every_check(tmp_path: Path) -> None:
    # the smoke preset on this machine: nothing refused (no check may refuse what runs)
    sizes.check_run_size(PRESETS["smoke"], users_known=True, out_dir=tmp_path)
    sizes.check_run_size(PRESETS["smoke"], users_known=False, out_dir=None)
