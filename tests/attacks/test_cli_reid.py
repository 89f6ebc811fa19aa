"""``topicslab reid`` end to end on small files, and its one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from topicslab import io as tio
from topicslab.api import observe
from topicslab.cli import app
from topicslab.datamodel import SiteTraces

runner = CliRunner()


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    from topicslab.population import generate

    d = tmp_path_factory.mktemp("reid")
    sets = generate(2000, 3, seed=8)
    pop = d / "pop.parquet"
    tio.write_sets(pop, sets)
    tr = observe(sets.sets, [5, 2], weeks=3, seed=1)
    traces = d / "traces.parquet"
    tio.write_traces(traces, SiteTraces(tr, sets.taxonomy, sets.user_ids, [5, 2]))
    return pop, traces, d


def test_sets_json_layout(files):
    pop, _, d = files
    out = d / "out.json"
    res = runner.invoke(app, ["reid", "--sets", str(pop), "--attack", "all", "--weeks", "2",
                              "--targets", "300", "--trials", "2", "--seed", "3", "--json",
                              str(out), "--no-progress"])
    assert res.exit_code == 0, res.output
    assert "hamming" in res.output and "asymmetric" in res.output
    data = json.loads(out.read_text())
    assert (data["users"], data["targets"], data["trials"], data["weeks"]) == (2000, 300, 2, 2)
    assert data["seconds"] > 0
    for name in ("hamming", "asymmetric"):
        for key in ("risk_mean", "risk_std", "ci95", "expected_risk_mean"):
            assert key in data["attacks"][name]


def test_curve_with_bounds(files):
    pop, _, d = files
    out = d / "curve.json"
    res = runner.invoke(app, ["reid", "--sets", str(pop), "--attack", "hamming", "--weeks",
                              "1..3", "--targets", "200", "--trials", "1", "--bounds",
                              "--json", str(out), "--no-progress"])
    assert res.exit_code == 0, res.output
    data = json.loads(out.read_text())
    assert data["weeks"] == [1, 2, 3] and len(data["curve"]) == 3
    assert len(data["bounds"]) == 3
    fib = [b["full_information_bound"] for b in data["bounds"]]
    # three weeks of any taxonomy are within the default cell budget: exact at every r, and
    # the full-information Bayes risk cannot fall when the attacker sees more weeks
    assert all(b["exact_cells"] > 0 for b in data["bounds"])
    assert 0 < fib[0] <= fib[1] + 1e-12 and fib[1] <= fib[2] + 1e-12 and fib[2] <= 1


def test_traces_all_targets(files):
    _, traces, d = files
    out = d / "traces.json"
    res = runner.invoke(app, ["reid", "--traces", str(traces), "--attack", "hamming",
                              "--targets", "all", "--json", str(out), "--no-progress"])
    assert res.exit_code == 0, res.output
    data = json.loads(out.read_text())
    assert data["targets"] == 2000 and data["weeks"] == 3 and data["trials"] == 1


def test_matching_setting(files):
    pop, _, _ = files
    res = runner.invoke(app, ["reid", "--sets", str(pop), "--weeks", "1", "--setting",
                              "matching", "--trials", "1", "--no-progress"])
    assert res.exit_code == 0, res.output
    assert "matching" in res.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--attack", "nope"], "unknown attack"),
        (["--targets", "zero"], "--targets"),
        (["--targets", "0"], "--targets"),
        (["--weeks", "5"], "weeks"),
        (["--weeks", "x"], "weeks"),
        (["--engine", "gpu"], "engine"),
        (["--setting", "other"], "setting"),
    ],
)
def test_bad_options(files, args, message):
    pop, _, _ = files
    res = runner.invoke(app, ["reid", "--sets", str(pop), "--no-progress", *args])
    assert res.exit_code == 2, res.output
    assert message in res.output


def test_inputs(files):
    pop, traces, _ = files
    for args in ([], ["--sets", str(pop), "--traces", str(traces)]):
        res = runner.invoke(app, ["reid", *args])
        assert res.exit_code == 2 and "exactly one" in res.output
    res = runner.invoke(app, ["reid", "--traces", str(traces), "--bounds"])
    assert res.exit_code == 2 and "--sets" in res.output
    res = runner.invoke(app, ["reid", "--traces", str(traces), "--weeks", "1,2"])
    assert res.exit_code == 2 and res.output.startswith("error: ")


def test_errors_are_one_line_exit_2(files):
    """Through the console entry point: exit code 2, one line, no traceback."""
    _, _, d = files
    bad = d / "bad.parquet"
    bad.write_text("not parquet")
    proc = subprocess.run(
        [sys.executable, "-c", "from topicslab.cli import main; main()", "reid", "--traces",
         str(bad), "--no-progress"], capture_output=True, text=True, check=False)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert str(bad) in proc.stderr
