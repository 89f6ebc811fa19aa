"""Bad input, the twentieth independent round (issue 15): a privacy ledger edited by hand was
read without a check of its own values (``contribution_bounding.weeks`` as text, ``[]``,
``[0, 2]``, ``[1, 0]`` or other weeks than its mechanisms count; an ``accounting``,
``over_long``, target, split share or k out of range): ``fit`` fitted the release and ``stats
--explain`` printed the edit as the release's; a ledger field of the wrong type was blamed on
``stats``' option of the same name (``field '--split'``); ``model.json``'s ``week_pairs`` as
text ended ``validate`` in a ValueError (exit code 1), and a pair past the weeks, a gap or an
edited ``weeks`` were taken as the fit's; Ctrl-C of a ``run`` whose ``stages.json`` was edited
to a number or null was a TypeError with a traceback (text listed its letters as stages); and
a ``~`` the shell did not expand (``--out=~/x``) was "directory ~ does not exist; create it
first".

The same contract as ``test_bad_inputs.py``: exit code 2, one line ``error: ...`` naming the
offending file, row or field, no traceback, and nothing written.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from refusal import fit_small_model, invoke, invoke_refused, population_and_stats, refusal_test


def _edit_json(path: Path, change: Any) -> None:
    path.write_text(json.dumps(change(json.loads(path.read_text(encoding="utf-8")))),
                    encoding="utf-8")


def _bounding(**values: Any) -> Any:
    return lambda led: {**led, "contribution_bounding": {**led["contribution_bounding"],
                                                         **values}}


LEDGER_EDITS: dict[str, Any] = {
    "weeks-gap": _bounding(weeks=[0, 2]),
    "weeks-backwards": _bounding(weeks=[1, 0]),
    "weeks-text": _bounding(weeks="0,1"),
    "weeks-empty": _bounding(weeks=[]),
    "weeks-other": _bounding(weeks=[1, 2]),
    "k-text": _bounding(k="5"),
    "over-long": _bounding(over_long="bogus"),
    "accounting": lambda led: {**led, "accounting": "bogus"},
    "accounting-number": lambda led: {**led, "accounting": 5},
    "target": lambda led: {**led, "target": {"epsilon": -1, "delta": 1e-6}},
    "split-negative": lambda led: {**led, "split": [-0.5, 0.5, 1.0]},
    "split-text": lambda led: {**led, "split": "0.25,0.25,0.5"},
}

MODEL_EDITS: dict[str, Any] = {
    "week-pairs-text": lambda meta: {**meta, "week_pairs": "0-1"},
    "week-pairs-gap": lambda meta: {**meta, "week_pairs": [[0, 2]]},
    "week-pairs-past": lambda meta: {**meta, "week_pairs": [[0, 1], [1, 2], [2, 9]]},
    "weeks-edited": lambda meta: {**meta, "weeks": 8},
}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """300 users (v2, 4 weeks) and their release (weeks 0, 1), a small model fitted to it,
    and copies of each with one field edited (``st-NAME``, ``model-NAME``)."""
    d = tmp_path_factory.mktemp("round20")
    population_and_stats(d)
    fit_small_model(invoke, d)
    for name, change in LEDGER_EDITS.items():
        shutil.copytree(d / "stats", d / f"st-{name}")
        _edit_json(d / f"st-{name}" / "privacy_ledger.json", change)
    for name, change in MODEL_EDITS.items():
        shutil.copytree(d / "model", d / f"model-{name}")
        _edit_json(d / f"model-{name}" / "model.json", change)
    return d



FIT = ["fit", "--out", "{out}", "--types", "2", "--modes", "1", "--steps", "1",
       "--no-progress", "--stats"]
VALIDATE = ["validate", "--stats", "{in}/stats", "--json", "{out}.json", "--model"]
LEDGER = "privacy_ledger.json, field 'contribution_bounding.weeks'"

CASES: list[tuple[str, list[str], str]] = [
    # fitted (exit code 0) as the release's consecutive weeks, and printed by --explain
    ("fit-ledger-weeks-with-a-gap", [*FIT, "{in}/st-weeks-gap"],
     f"{LEDGER}: a release's weeks are consecutive and increasing, got [0, 2]"),
    ("fit-ledger-weeks-backwards", [*FIT, "{in}/st-weeks-backwards"], LEDGER),
    ("fit-ledger-weeks-as-text", [*FIT, "{in}/st-weeks-text"],
     f"{LEDGER}: must be a non-empty list of weeks"),
    ("fit-ledger-weeks-empty", [*FIT, "{in}/st-weeks-empty"], LEDGER),
    ("fit-ledger-weeks-not-its-mechanisms", [*FIT, "{in}/st-weeks-other"],
     f"{LEDGER}: lists weeks [1, 2], but the ledger's 2 within-week mechanisms count other"),
    ("explain-ledger-weeks-with-a-gap", ["stats", "--explain", "{in}/st-weeks-gap"], LEDGER),
    ("explain-ledger-k-as-text", ["stats", "--explain", "{in}/st-k-text"],
     "privacy_ledger.json, field 'contribution_bounding.k': must be an integer >= 2"),
    ("explain-ledger-over-long", ["stats", "--explain", "{in}/st-over-long"],
     "field 'contribution_bounding.over_long': must be 'reject' or 'truncate'"),
    ("explain-ledger-accounting", ["stats", "--explain", "{in}/st-accounting"],
     "privacy_ledger.json, field 'accounting': must be 'paper' or 'tight', got 'bogus'"),
    ("explain-ledger-target", ["stats", "--explain", "{in}/st-target"],
     "privacy_ledger.json, field 'target': epsilon must be a finite number > 0"),
    ("fit-ledger-split-negative", [*FIT, "{in}/st-split-negative"],
     "privacy_ledger.json, field 'split': must list the mechanisms' shares (numbers >= 0)"),
    # the ledger's field blamed on stats' option of the same name
    ("explain-ledger-split-as-text", ["stats", "--explain", "{in}/st-split-text"],
     "privacy_ledger.json, field 'split': expected a JSON list"),
    ("explain-ledger-accounting-a-number", ["stats", "--explain", "{in}/st-accounting-number"],
     "privacy_ledger.json, field 'accounting': expected a JSON string"),
    # ValueError: not enough values to unpack (exit code 1)
    ("validate-model-week-pairs-as-text", [*VALIDATE, "{in}/model-week-pairs-text"],
     "model.json, field 'week_pairs': does not match weeks = 4"),
    # validated as the fit's week pairs (exit code 0)
    ("validate-model-week-pairs-with-a-gap", [*VALIDATE, "{in}/model-week-pairs-gap"],
     "model.json, field 'week_pairs'"),
    ("validate-model-week-pairs-past-the-weeks", [*VALIDATE, "{in}/model-week-pairs-past"],
     "model.json, field 'week_pairs'"),
    ("sample-model-weeks-edited", ["sample", "--model", "{in}/model-weeks-edited", "--users",
                                   "10", "--seed", "0", "--out", "{out}.parquet"],
     "model.json, field 'week_pairs': does not match weeks = 8"),
]


test_bad_input_is_refused = refusal_test(CASES)


@pytest.mark.parametrize(("args", "named"), [
    (["population", "-n", "1000", "--out", "~/pop.parquet"],
     "~/pop.parquet, field '--out': directory ~ does not exist; the shell did not expand ~"),
    (["stats", "--sets", "~/pop.parquet", "--out", "{out}"],
     "~/pop.parquet, field '--sets': no such file (the shell did not expand ~, as it does not "
     "when ~ is quoted"),
], ids=["population-out-tilde", "stats-sets-tilde"])
def test_a_tilde_the_shell_left_is_named_not_created(
        inputs: Path, work: Path, monkeypatch: pytest.MonkeyPatch, args: list[str],
        named: str) -> None:
    """``--out=~/x`` reaches the tool as ``~/x``: "create it first" made a directory named
    ``~`` in the working directory."""
    monkeypatch.chdir(work)
    invoke_refused(invoke, args, inputs, work, named)
    assert "create it first" not in invoke([a.format(out=work / "o") for a in args]).output


@pytest.mark.parametrize("record", ["5", "null", '"abc"', "[1, 2]"])
def test_an_interrupted_run_reads_an_edited_stages_record(tmp_path: Path, record: str) -> None:
    """What Ctrl-C or SIGTERM prints of a run: ``list(json.loads(...))`` of a number or null
    was a TypeError inside the interruption (a traceback, exit code 1), and of text listed
    its letters as finished stages."""
    from topicslab.cli.run import _stages_kept

    (tmp_path / "stages.json").write_text(record, encoding="utf-8")
    assert _stages_kept(tmp_path) == "no stage had finished (the same command starts over)"
    (tmp_path / "stages.json").write_text(json.dumps({"population": {"key": "k"}, "x": 1}),
                                          encoding="utf-8")
    assert "(population);" in _stages_kept(tmp_path)


def test_the_files_a_release_and_a_fit_write_are_still_read(inputs: Path, work: Path) -> None:
    """Guards: an unedited ledger and model (weeks 0, 1; the consecutive week pairs), and a
    cyclic fit's wrap pair."""
    res = invoke(["stats", "--explain", str(inputs / "stats")])
    assert res.exit_code == 0, res.output
    res = invoke(["validate", "--model", str(inputs / "model"), "--stats",
                  str(inputs / "stats"), "--json", str(work / "v.json")])
    assert res.exit_code == 0, res.output
    res = invoke(["fit", "--stats", str(inputs / "stats"), "--out", str(work / "cyc"),
                  "--types", "2", "--steps", "1", "--no-progress", "--model", "paper",
                  "--cyclic"])
    assert res.exit_code == 0, res.output
    from topicslab.model import load_model

    assert load_model(work / "cyc").week_pairs == [(0, 1), (1, 2), (2, 3), (3, 0)]
