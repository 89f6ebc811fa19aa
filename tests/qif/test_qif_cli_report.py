"""``topicslab qif`` and the report section."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import topicslab.cli.qif as cli_qif  # registers the command on the shared app
from topicslab import qif
from topicslab.cli._app import app
from topicslab.datamodel import TopicSets
from topicslab.taxonomy import Taxonomy

runner = CliRunner()


def _toy_sets() -> TopicSets:
    tax = Taxonomy.from_rows("toy", [(i + 1, f"/t{i}") for i in range(6)])
    raw = np.array([[[0, 1], [0, 1]], [[0, 1], [2, 3]], [[2, 3], [4, 5]], [[0, 1], [0, 1]]],
                   dtype=np.int16)
    return TopicSets(raw, tax)


def test_parameter_table_json() -> None:
    res = runner.invoke(app, ["qif", "--m", "349", "--s", "5", "--r", "0.05",
                              "--epochs", "1..3", "--json"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.output)
    assert [row["epochs"] for row in rows] == [1, 2, 3]
    assert [round(row["bayes_capacity"], 2) for row in rows] == [66.36, 4403.65, 292226.19]
    assert rows[0]["max_case_capacity"] == pytest.approx(1327.2)
    assert rows[0]["epsilon"] == pytest.approx(7.1908, abs=1e-4)
    assert {"m", "s", "r", "epochs", "bayes_capacity", "max_case_capacity",
            "epsilon"} <= set(rows[0])


def test_parameter_table_rich() -> None:
    res = runner.invoke(app, ["qif", "--m", "469", "--s", "5", "--r", "0.05",
                              "--epochs", "1..3"])
    assert res.exit_code == 0, res.output
    assert "89.16" in res.output and "1,783.2" in res.output


@pytest.mark.parametrize("args", [["--m", "3", "--s", "5"], ["--r", "1.5"], ["--s", "0"],
                                  ["--epochs", "x"], ["--epochs", "0"]])
def test_bad_parameters(args: list[str]) -> None:
    res = runner.invoke(app, ["qif", *args])
    assert res.exit_code == 2, res.output  # one line, no traceback (issue 15)
    assert res.output.startswith("error: ") and res.output.count("\n") == 1


def test_parse_int_range() -> None:
    assert cli_qif.parse_int_range("1..8") == list(range(1, 9))
    assert cli_qif.parse_int_range("2") == [2]
    assert cli_qif.parse_int_range("1,3") == [1, 3]


def test_sets_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import topicslab.io as tio

    monkeypatch.setattr(tio, "read_sets", lambda path, **kw: _toy_sets(), raising=False)
    res = runner.invoke(app, ["qif", "--sets", str(tmp_path / "pop.parquet"), "--week", "1",
                              "--weeks", "0..1", "--json"])
    assert res.exit_code == 0, res.output
    one, two = json.loads(res.output)
    assert one["epochs"] == [1] and one["n_profiles"] == 3 and one["k_anonymity"] == 1
    assert two["epochs"] == [0, 1] and two["n_profiles"] == 3
    assert one["leak_topics"] == pytest.approx(0.05 + 6 * 0.95 / 2)
    res = runner.invoke(app, ["qif", "--sets", str(tmp_path / "pop.parquet")])
    assert res.exit_code == 0, res.output
    assert "k-anonymity" in res.output


def test_plot(tmp_path: Path) -> None:
    out = tmp_path / "tradeoff.png"
    res = runner.invoke(app, ["qif", "--m", "629", "--plot", str(out)])
    assert res.exit_code == 0, res.output
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_report_section() -> None:
    sec = qif.report_section(_toy_sets(), s=2, r=0.05, epochs=(1, 2), figures=True)
    assert sec["m"] == 6
    assert [row["epochs"] for row in sec["parameters"]] == [1, 2]
    assert sec["population"]["n_users"] == 4
    assert sec["population_epochs"]["epochs"] == [0, 1]
    assert sec["html"].startswith("<section") and "data:image/png;base64," in sec["html"]
    assert "<table" in sec["html"]
    json.dumps({k: v for k, v in sec.items() if k != "html"})  # JSON-serialisable
    bare = qif.report_section(m=349, figures=False)
    assert bare["population"] is None
    assert round(bare["parameters"][0]["bayes_capacity"], 2) == 66.36
