"""Every ``--json`` of the CLI is strict JSON by the one rule of ``topicslab._json``: NaN is
null, an infinity "inf" / "-inf", never the tokens NaN / Infinity (``reid --json``:
test_bad_inputs_round29; ``fit`` / ``validate --json``: tests/model/test_model_cli.py; the
disclosure experiment's: tests/disclosure/test_disclosure_cli.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

import topicslab.cli.disclosure as _disclosure  # noqa: F401  (registers the command)
import topicslab.cli.qif as _qif  # noqa: F401  (registers the command)
from topicslab.cli._app import app
from topicslab.datamodel import TopicSets
from topicslab.taxonomy import Taxonomy

runner = CliRunner()


def strict_loads(text: str) -> Any:
    def refuse(name: str) -> None:
        raise AssertionError(f"{name} in the JSON")

    return json.loads(text, parse_constant=refuse)


def test_qif_json_writes_an_infinite_epsilon_as_inf() -> None:
    res = runner.invoke(app, ["qif", "--m", "469", "--s", "5", "--r", "0", "--json"])
    assert res.exit_code == 0, res.output
    rows = strict_loads(res.output)
    assert rows[0]["epsilon"] == "inf" and rows[0]["max_case_capacity"] == "inf"
    assert isinstance(rows[0]["bayes_capacity"], float)
    # the table shows the same number as ∞
    res = runner.invoke(app, ["qif", "--m", "469", "--s", "5", "--r", "0"])
    assert res.exit_code == 0, res.output
    assert "∞" in res.output and "inf" not in res.output


def test_qif_sets_json_is_strict(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import topicslab.io as tio

    tax = Taxonomy.from_rows("toy", [(i + 1, f"/t{i}") for i in range(6)])
    raw = np.array([[[0, 1], [0, 1]], [[0, 1], [2, 3]], [[2, 3], [4, 5]], [[0, 1], [0, 1]]],
                   dtype=np.int16)
    monkeypatch.setattr(tio, "read_sets", lambda path, **kw: TopicSets(raw, tax),
                        raising=False)
    res = runner.invoke(app, ["qif", "--sets", str(tmp_path / "pop.parquet"),
                              "--weeks", "0..1", "--r", "0", "--json"])
    assert res.exit_code == 0, res.output
    docs = strict_loads(res.output)
    assert [d["epochs"] for d in docs] == [[0], [0, 1]] and docs[1]["n_profiles"] == 3


def test_disclosure_example_json_is_strict(tmp_path: Path) -> None:
    out = tmp_path / "example.json"
    res = runner.invoke(app, ["disclosure", "--example", "--json", str(out)])
    assert res.exit_code == 0, res.output
    doc = strict_loads(out.read_text(encoding="utf-8"))
    assert doc


def test_disclosure_script_json_is_strict(tmp_path: Path) -> None:
    path = tmp_path / "s.txt"
    path.write_text("! probe: help and advice\nhelp and advice\n! wait 3\nq\nhelp and advice\n",
                    encoding="utf-8")
    out = tmp_path / "script.json"
    res = runner.invoke(app, ["disclosure", "--script", str(path), "--json", str(out)])
    assert res.exit_code == 0, res.output
    assert "queries_between_probes" in strict_loads(out.read_text(encoding="utf-8"))
