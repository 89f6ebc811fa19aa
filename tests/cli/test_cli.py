"""The command line: each stage end to end on small data, and one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
from typer.testing import CliRunner

from topicslab import io as tio
from topicslab.cli import app

runner = CliRunner()


def test_help_lists_commands():
    res = runner.invoke(app, ["--help"])
    assert res.exit_code == 0
    for cmd in ("population", "observe", "run"):
        assert cmd in res.output


def test_population_then_observe(tmp_path):
    pop = tmp_path / "pop.parquet"
    res = runner.invoke(app, ["population", "--users", "3000", "--weeks", "3", "--seed", "4",
                              "--out", str(pop), "--chunk-users", "1000"])
    assert res.exit_code == 0, res.output
    assert "padded user-weeks" in res.output
    sets = tio.read_sets(pop)
    assert sets.sets.shape == (3000, 3, 5)
    assert (sets.sets >= 0).all()  # the reference population always has k topics a week
    tr = tmp_path / "traces.parquet"
    res = runner.invoke(app, ["observe", "--sets", str(pop), "--sites", "3", "--seed", "1",
                              "--out", str(tr)])
    assert res.exit_code == 0, res.output
    traces = tio.read_traces(tr)
    assert traces.traces.shape == (3, 3000, 3)
    in_profile = (traces.traces[..., None] == sets.sets[None]).any(-1).mean()
    assert 0.9 < in_profile < 1.0


def test_population_is_reproducible_across_chunk_sizes(tmp_path):
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    for path, chunk in ((a, "1000"), (b, "1500")):
        res = runner.invoke(app, ["population", "-n", "2500", "--seed", "9", "-o", str(path),
                                  "--chunk-users", chunk])
        assert res.exit_code == 0, res.output
    assert np.array_equal(tio.read_sets(a).sets, tio.read_sets(b).sets)


def test_population_with_explicit_params_file(tmp_path):
    from topicslab.population import load_reference

    params = tmp_path / "params.json"
    load_reference().save(params)
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    for path, extra in ((a, ["--params", str(params)]), (b, [])):
        res = runner.invoke(app, ["population", "-n", "800", "--seed", "3", "-o", str(path),
                                  *extra])
        assert res.exit_code == 0, res.output
    assert np.array_equal(tio.read_sets(a).sets, tio.read_sets(b).sets)


def test_bad_input_is_one_line_with_exit_code_2(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("user_id,epoch_0_topics\n1,243;999999\n", encoding="utf-8")
    out = tmp_path / "never.parquet"
    proc = subprocess.run(
        [sys.executable, "-c", "from topicslab.cli import main; main()", "observe",
         "--sets", str(bad), "--out", str(out)],
        capture_output=True, text=True, check=False)
    assert proc.returncode == 2
    lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr
    assert "bad.csv" in lines[0] and "999999" in lines[0]
    assert "Traceback" not in proc.stderr
    assert not out.exists()


def test_run_cli_smoke(tmp_path):
    # the CLI wiring of `run` (the pipeline itself is tested in tests/experiment)
    res = runner.invoke(app, ["run", "--preset", "smoke", "--out", str(tmp_path), "--quiet",
                              "--users", "4000", "--types", "10", "--fit-minutes", "0.05",
                              "--targets", "256", "--trials", "2", "--no-disclosure",
                              "--fit-steps", "20", "--fidelity-trials", "1"])
    assert res.exit_code == 0, res.output
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["population"]["users"] == 4_000
    assert results["parameters"]["types"] == 10 and results["parameters"]["trials"] == 2
    assert results["disclosure"] is None
    assert "paper protocol: population hamming" in res.output
    assert "fidelity r=4 hamming" in res.output  # the table fits an 80-column terminal (CI)
    assert results["fidelity"]["trials"] == 1 and results["parameters"]["fit_steps"] == 20
    assert results["verdict"]["text"].startswith(("PASS", "FAIL", "INCONCLUSIVE"))
    bad = runner.invoke(app, ["run", "--preset", "smoke", "--out", str(tmp_path / "b"),
                              "--model", "mixture"])
    assert bad.exit_code == 2 and "--model" in bad.output
    assert (tmp_path / "report.html").exists() and (tmp_path / "stats" / "q_within.json").exists()
    assert len(results["population"]["calibration"]) == 35


def test_reid_bounds_table_json_and_figure(tmp_path):
    """--bounds: exact Corollary 1 up to 4 weeks, the Bayes attacker measured beyond, one
    JSON row per r and the figure; --figure without --bounds is refused."""
    pop = tmp_path / "pop.parquet"
    assert runner.invoke(app, ["population", "-n", "3000", "--weeks", "5", "--seed", "2",
                               "-o", str(pop)]).exit_code == 0
    fig, out = tmp_path / "theory.png", tmp_path / "theory.json"
    res = runner.invoke(app, ["reid", "--sets", str(pop), "--weeks", "1,3,4,5", "--bounds",
                              "--trials", "1", "--targets", "all", "--figure", str(fig),
                              "--json", str(out), "--no-progress"])
    assert res.exit_code == 0, res.output
    assert fig.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rows = json.loads(out.read_text())["theory"]
    assert [r["weeks"] for r in rows] == [1, 3, 4, 5]
    assert all(r["bayes_exact"] is not None and r["bayes_sampled"] is None for r in rows[:3])
    assert rows[3]["bayes_exact"] is None and rows[3]["bayes_sampled"]["targets"] == 3000
    assert rows[2]["matching_bound"] is None  # at 4 weeks only Corollary 1 is exact
    # more weeks never hurt the Bayes attacker, and no attack beats it beyond the noise of
    # the attacks' sampled traces (4 binomial standard errors over the 3,000 targets)
    assert rows[0]["bayes_exact"] < rows[1]["bayes_exact"] < rows[2]["bayes_exact"] \
        < rows[3]["bayes_sampled"]["ci95"][1]
    for r in rows:
        best = r["bayes_exact"] or r["bayes_sampled"]["ci95"][1]
        margin = 4 * (best * (1 - best) / 3000) ** 0.5
        assert max(r["hamming"]["risk"], r["asymmetric"]["risk"]) <= best + margin
    bad = runner.invoke(app, ["reid", "--sets", str(pop), "--figure", str(tmp_path / "x.png")])
    assert bad.exit_code == 2 and "--bounds" in bad.output
    assert not (tmp_path / "x.png").exists()


def test_python_dash_m_runs_the_same_command():
    res = subprocess.run([sys.executable, "-m", "topicslab", "population", "-n", "0"],
                         capture_output=True, text=True)
    assert res.returncode == 2
    assert "see 'topicslab population --help'" in res.stderr and "Traceback" not in res.stderr
