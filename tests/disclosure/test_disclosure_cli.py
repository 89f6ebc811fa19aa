"""``topicslab disclosure``: the worked example, a small run, scripts and one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys

from typer.testing import CliRunner

import topicslab.cli.disclosure as _cli  # noqa: F401  (registers the command)
from topicslab.cli._app import app

runner = CliRunner()


def test_example() -> None:
    res = runner.invoke(app, ["disclosure", "--example"])
    assert res.exit_code == 0, res.output
    for value in ("0.32", "0.08", "1.6", "0.4", "prostate", "other"):
        assert value in res.output


def test_small_run_writes_json(tmp_path) -> None:
    out = tmp_path / "out.json"
    figs = tmp_path / "figs"
    res = runner.invoke(app, ["disclosure", "--personas", "20", "--epochs", "5", "--rho",
                              "0.1,0.4", "--epsilon", "ln3", "--seed", "2", "--mc-samples",
                              "20", "--json", str(out), "--figures", str(figs), "-q"])
    assert res.exit_code == 0, res.output
    assert "detection" in res.output and "Per topic" in res.output
    def refuse(name: str) -> None:  # strict JSON: NaN is null, an infinity "inf"
        raise AssertionError(f"{name} in the JSON")

    data = json.loads(out.read_text(), parse_constant=refuse)
    assert data["settings"]["epsilon"] == __import__("math").log(3)
    assert data["settings"]["personas"] == 20 and data["settings"]["seed"] == 2
    assert [r["rho"] for r in data["per_rho"]] == [0.1, 0.4]
    assert (figs / "rates.png").read_bytes()[:4] == b"\x89PNG"
    assert (figs / "ln_m.png").exists()


def test_script_summary(tmp_path) -> None:
    path = tmp_path / "s.txt"
    path.write_text("! probe: help and advice\nhelp and advice\n! wait 3\nq\nhelp and advice\n",
                    encoding="utf-8")
    res = runner.invoke(app, ["disclosure", "--script", str(path)])
    assert res.exit_code == 0, res.output
    assert "queries_between_probes" in res.output


def test_bad_input_is_one_line_with_exit_code_2(tmp_path) -> None:
    out = tmp_path / "never.json"
    proc = subprocess.run(
        [sys.executable, "-c", "from topicslab.cli import main; main()", "disclosure",
         "-q", "--json", str(out), "--rho", "0.1,abc"],
        capture_output=True, text=True, check=False)
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "rho" in lines[0]
    assert not out.exists()
    # the other bad inputs raise the same one-line error type (main() prints it)
    for args in (["--personas", "1"], ["--sides", "left"], ["--epsilon", "ln(x)"],
                 ["--script", str(tmp_path / "missing.txt")]):
        res = runner.invoke(app, ["disclosure", "-q", "--json", str(out), *args])
        assert res.exit_code != 0, args
        assert res.exit_code == 2 and res.output.startswith("error: "), (args, res.output)
        assert not out.exists()
