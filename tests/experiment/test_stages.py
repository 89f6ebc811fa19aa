"""The declared stages of ``topicslab run``: data flows one way, one declaration per stage and
run, and the context loads each artefact once."""

from __future__ import annotations

from pathlib import Path

import pytest

from topicslab.experiment.context import RunContext
from topicslab.experiment.presets import PRESETS
from topicslab.experiment.stages import STAGES


def _context(kind: str, tmp_path: Path, **overrides: object) -> RunContext:
    cfg = PRESETS["smoke"].with_overrides(**overrides)
    return RunContext(cfg, "smoke", tmp_path, 0,
                      sets_path=tmp_path / "sets.parquet" if kind == "sets" else None,
                      stats_dir=tmp_path / "stats" if kind == "stats" else None)


@pytest.mark.parametrize("kind", ["reference", "sets", "stats"])
@pytest.mark.parametrize("extras", [{}, {"theory": True, "learned": True}])
def test_each_stage_is_declared_once_per_run_and_reads_only_earlier_stages(
        kind: str, extras: dict[str, object], tmp_path: Path) -> None:
    ctx = _context(kind, tmp_path, **extras)
    applied = [s for s in STAGES if s.when(ctx)]
    names = [s.name for s in applied]
    assert len(names) == len(set(names)), names
    for i, stage in enumerate(applied):
        for up in stage.upstream:
            # an upstream stage that does not run here (the population of a run from
            # statistics) is keyed as "", never a stage further down
            assert up not in names[i:], (stage.name, up)
    expected = {"dp_statistics", "fit", "sample", "validate", "reid_synthetic", "qif",
                "disclosure"}
    if kind != "stats":
        expected |= {"population", "fidelity", "reid_population"}
        if extras:
            expected |= {"theory", "learned_attack"}
    assert set(names) == expected


def test_the_release_path_reads_no_private_data(tmp_path: Path) -> None:
    # fit and sample are keyed on (and so read) the DP statistics and the model only
    up = {s.name: s.upstream for s in STAGES}
    assert up["fit"] == ("dp_statistics",)
    assert up["sample"] == ("fit",)


def test_the_context_loads_an_artefact_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           ) -> None:
    from topicslab import dp

    calls: list[Path] = []

    def load(path: Path) -> object:
        calls.append(path)
        return object()

    monkeypatch.setattr(dp, "load_statistics", load)
    ctx = _context("reference", tmp_path)
    first = ctx.statistics()
    assert ctx.statistics() is first
    assert calls == [tmp_path / "stats"]
    assert ctx.upstream("population", "fit") == ["", ""]
    ctx.keys["population"] = "abc"
    assert ctx.upstream("population", "fit") == ["abc", ""]


def test_the_synthetic_users_follow_the_population(tmp_path: Path) -> None:
    ctx = _context("sets", tmp_path)
    assert ctx.synthetic_users == ctx.cfg.users
    ctx.summaries["population"] = {"users": 1234}
    assert ctx.synthetic_users == 1234


def test_the_fit_takes_the_release_the_run_just_made(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The release stage keeps the statistics it saved: the fit no longer reads its 70 MB of
    JSON back (1.2 s at 469 topics)."""
    import numpy as np

    from topicslab import dp
    from topicslab.datamodel import TopicSets
    from topicslab.experiment.stages import _release
    from topicslab.taxonomy import load

    tax = load("v2")
    rng = np.random.default_rng(0)
    sets = np.sort(np.argsort(rng.random((300, 4, tax.size)), -1)[..., :5], -1)
    ctx = _context("reference", tmp_path)
    ctx.keep_population(TopicSets(sets.astype(np.int16), tax))

    def refused(path: Path) -> object:
        raise AssertionError(f"read {path} again")

    monkeypatch.setattr(dp, "load_statistics", refused)
    _release(ctx)
    st = ctx.statistics()
    assert isinstance(st, dp.DPStatistics) and (tmp_path / "stats" / "q_within.json").exists()
