"""The run's DP release: by default every simulated week under tight accounting
(``Preset.release_weeks``); ``--release-weeks`` and ``--accounting`` choose the paper's
release (weeks 0-1, basic composition) and are refused where they cannot apply."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from topicslab.errors import InputError, ParameterError
from topicslab.experiment.presets import PRESETS, Preset

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))
from refusal import check_refused, invoke


def test_the_default_release_is_every_week_under_tight_accounting() -> None:
    assert PRESETS["default"].release_weeks == (0, 1, 2, 3)
    assert PRESETS["paper"].release_weeks == tuple(range(8))
    assert PRESETS["paper"].accounting == "tight"
    paper = Preset(users=1000, stats_weeks=(0, 1), accounting="paper")
    assert paper.release_weeks == (0, 1) and paper.to_dict()["stats_weeks"] == [0, 1]
    assert Preset(users=1000, weeks=6).to_dict()["stats_weeks"] == [0, 1, 2, 3, 4, 5]


def test_a_week_past_the_simulated_ones_is_refused_before_any_stage() -> None:
    with pytest.raises(ParameterError) as info:
        Preset(users=1000, weeks=4, stats_weeks=(0, 4))
    assert info.value.field == "--release-weeks" and "0..3" in info.value.message


@pytest.mark.parametrize(("args", "named"), [
    (["--release-weeks", "0,9"], "--release-weeks"),
    (["--release-weeks", "one"], "--release-weeks"),
    (["--release-weeks", ""], "--release-weeks"),
    (["--release-weeks", "0,,1"], "--release-weeks"),
    (["--release-weeks", "-1"], "--release-weeks"),
    (["--release-weeks", "0,0"], "--release-weeks"),
    (["--accounting", "loose"], "accounting"),
])
def test_bad_release_options_are_refused(tmp_path: Path, args: list[str], named: str) -> None:
    res = invoke(["run", "--preset", "smoke", "--out", str(tmp_path / "out"), "-q", *args])
    check_refused(res.output, res.exit_code, named)
    assert not (tmp_path / "out").exists()


def test_release_options_do_not_apply_to_a_run_from_published_statistics(
        tmp_path: Path) -> None:
    stats = tmp_path / "stats"
    stats.mkdir()
    for option, value in (("--release-weeks", "0,1"), ("--accounting", "paper")):
        res = invoke(["run", "--stats", str(stats), "--out", str(tmp_path / "out"), "-q",
                      option, value])
        check_refused(res.output, res.exit_code, option)


def test_the_papers_release_on_request(tmp_path: Path) -> None:
    out = tmp_path / "out"
    res = invoke(["run", "--preset", "smoke", "--out", str(out), "-q", "--no-disclosure",
                  "--release-weeks", "0,1", "--accounting", "paper", "--fit-steps", "5",
                  "--trials", "1", "--targets", "64", "--fidelity-trials", "1"])
    assert res.exit_code == 0, res.output
    ledger = json.loads((out / "stats" / "privacy_ledger.json").read_text(encoding="utf-8"))
    assert ledger["accounting"] == "paper"
    assert ledger["contribution_bounding"]["weeks"] == [0, 1]
    assert ledger["split"] == pytest.approx([0.25, 0.25, 0.5])


@pytest.mark.parametrize("weeks", ["4", 2.5, 0, 10**30])
def test_bad_weeks_are_refused_before_the_release_is_counted_from_them(weeks: object) -> None:
    with pytest.raises(InputError) as info:
        Preset(users=1000, weeks=weeks)  # type: ignore[arg-type]
    assert info.value.field == "--weeks"


def test_a_preset_of_many_weeks_builds_no_list_of_them() -> None:
    preset = Preset(users=1000, weeks=10**12)  # checked in constant memory
    assert preset.stats_weeks is None and preset.weeks == 10**12
