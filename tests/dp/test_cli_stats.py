"""``topicslab stats`` through Typer's CliRunner (read_sets stubbed: tests stay in memory)."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest
from typer.testing import CliRunner

import topicslab
import topicslab.dp  # loaded before fake_io stubs topicslab.io (dp imports io._common)
from topicslab.cli import stats as _stats  # noqa: F401  (registers the command)
from topicslab.cli._app import app
from topicslab.datamodel import TopicSets

runner = CliRunner()


@pytest.fixture
def fake_io(monkeypatch, tax12):
    rng = np.random.default_rng(0)
    sets = np.sort(np.argsort(rng.random((300, 2, 12)), -1)[..., :5], -1).astype(np.int16)
    data = TopicSets(sets, tax12)
    mod = types.ModuleType("topicslab.io")
    mod.read_sets = lambda path, **_options: data  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "topicslab.io", mod)
    monkeypatch.setattr(topicslab, "io", mod, raising=False)
    return data


def test_stats_then_explain(tmp_path, fake_io):
    out = tmp_path / "st"
    res = runner.invoke(app, ["stats", "--sets", "pop.parquet", "--out", str(out),
                              "--accounting", "tight", "--seed", "3", "--weeks", "0,1"])
    assert res.exit_code == 0, res.output
    assert "within_w0" in res.output and "n estimate" in res.output
    assert (out / "q_within.json").exists() and (out / "privacy_ledger.json").exists()
    assert "NOT cryptographically secure" in res.output
    assert "1/n" not in res.output
    res = runner.invoke(app, ["stats", "--explain", str(out)])
    assert res.exit_code == 0, res.output
    assert "across_w0_w1" in res.output and "composed" in res.output


def test_warns_when_delta_at_least_one_over_n(tmp_path, fake_io):
    res = runner.invoke(app, ["stats", "--sets", "x", "--out", str(tmp_path / "o"),
                              "--delta", "0.01", "--epsilon", "ln(3)"])
    assert res.exit_code == 0, res.output
    assert "warning" in res.output and "1/n" in res.output


@pytest.mark.parametrize(("args", "msg"), [
    (["--epsilon", "0"], "epsilon must be in [1e-6, 1e6]"),
    (["--epsilon", "-1"], "epsilon must be in [1e-6, 1e6]"),
    (["--epsilon", "1e300"], "epsilon must be in [1e-6, 1e6]"),
    (["--delta", "0"], "delta must be in (0, 1)"),
    (["--delta", "1.5"], "delta must be in (0, 1)"),
])
def test_bad_budget_is_one_line_error(tmp_path, fake_io, args, msg):
    res = runner.invoke(app, ["stats", "--sets", "x", "--out", str(tmp_path / "o"), *args])
    assert res.exit_code == 2
    assert msg in res.output
    assert f"field '{args[0]}'" in res.output


def test_overlap_lags_option(tmp_path, fake_io):
    """--overlap-lags writes the persistence statistic; past the input's weeks, with an
    out-of-core engine or with --explain it is refused in one line naming the option."""
    out = tmp_path / "st"
    res = runner.invoke(app, ["stats", "--sets", "pop.parquet", "--out", str(out),
                              "--seed", "3", "--overlap-lags", "1"])
    assert res.exit_code == 0, res.output
    assert "overlap" in res.output and (out / "q_overlap.json").exists()
    for extra in (["--overlap-lags", "2"], ["--overlap-lags", "-1"],
                  ["--overlap-lags", "1", "--engine", "stream"]):
        bad = tmp_path / "bad"
        res = runner.invoke(app, ["stats", "--sets", "pop.parquet", "--out", str(bad), *extra])
        assert res.exit_code == 2, res.output
        assert "--overlap-lags" in res.output and not bad.exists()
    res = runner.invoke(app, ["stats", "--explain", str(out), "--overlap-lags", "1"])
    assert res.exit_code == 2 and "--overlap-lags" in res.output
