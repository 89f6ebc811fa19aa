"""Real data in from the command line: profile tables of other tools (taxonomy v1 or v2,
detected or given with --taxonomy) run through ``topicslab run --sets`` without Python."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from topicslab import io as tio
from topicslab import population
from topicslab.cli import app

runner = CliRunner()
FAST = ["--preset", "smoke", "--quiet", "--types", "4", "--fit-minutes", "0.02",
        "--fit-steps", "5", "--targets", "128", "--trials", "1", "--no-disclosure",
        "--fidelity-trials", "1"]


def _profile_file(path, version, users=1500, seed=2):
    """A population as another tool would publish it: user, epoch, t1..t5 rows."""
    sets = population.generate(users, 4, seed=seed, taxonomy=version)
    tio.write_sets(path, sets, format="profiles")
    text = path.read_text().replace("user_id,week,", "user,epoch,", 1)
    path.write_text(text)
    return sets


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_run_sets_on_profile_files(tmp_path, version):
    src = tmp_path / f"profiles_{version}.csv"
    _profile_file(src, version)
    out = tmp_path / "out"
    res = runner.invoke(app, ["run", "--sets", str(src), "--out", str(out), *FAST])
    assert res.exit_code == 0, res.output
    results = json.loads((out / "results.json").read_text())
    assert results["population"]["taxonomy"] == version
    assert results["population"]["users"] == 1500


def test_taxonomy_option_overrides_detection(tmp_path):
    src = tmp_path / "v1.csv"
    src.write_text("t1,t2,t3\n1,43,57\n")
    res = runner.invoke(app, ["run", "--sets", str(src), "--out", str(tmp_path / "o"),
                              "--taxonomy", "v2", *FAST])
    assert res.exit_code == 2
    line = res.output.strip().splitlines()[-1]  # the run's log lines come before it
    assert line.startswith("error:") and "row 1" in line
    assert "topic id 43 is not in taxonomy v2" in line
    res = runner.invoke(app, ["run", "--sets", str(src), "--out", str(tmp_path / "o"), *FAST])
    assert res.exit_code == 2 and "add user_id and week columns" in res.output
    res = runner.invoke(app, ["run", "--out", str(tmp_path / "o"), "--taxonomy", "v3", *FAST])
    assert res.exit_code == 2 and "unknown taxonomy version 'v3'" in res.output


def test_commands_reading_sets_take_taxonomy(tmp_path):
    src = tmp_path / "p.csv"
    src.write_text("user_id,week,t1,t2\n1,0,1,43\n1,1,57,\n2,0,1,\n2,1,2,3\n")
    res = runner.invoke(app, ["observe", "--sets", str(src), "--out",
                              str(tmp_path / "tr.parquet"), "--taxonomy", "v1"])
    assert res.exit_code == 0, res.output
    assert tio.read_traces(tmp_path / "tr.parquet").taxonomy.version == "v1"
    res = runner.invoke(app, ["observe", "--sets", str(src), "--out",
                              str(tmp_path / "tr2.parquet"), "--taxonomy", "v2"])
    assert res.exit_code == 2 and "topic id 43 is not in taxonomy v2" in res.output
    res = runner.invoke(app, ["stats", "--sets", str(src), "--out", str(tmp_path / "st"),
                              "--k", "2", "--seed", "1", "--taxonomy", "v1"])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["qif", "--sets", str(src), "--taxonomy", "v1", "--json"])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["qif", "--taxonomy", "v1"])
    assert res.exit_code == 2 and "--taxonomy" in res.output
