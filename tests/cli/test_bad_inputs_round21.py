"""Bad input, the twenty-first independent round (issue 15): JSON and Parquet metadata that
another tool (or a hand) wrote. A key given twice in one object was read as its last value
without a word: a release record's second ``frequency`` (q_within, q_across, q_single), a
privacy ledger's second ``accounting``, ``model.json``'s second ``weeks``, a learned attack's
second ``weeks``, a Parquet file's topicslab metadata with ``k`` twice; a release file wrapped in
an object of two lists was read from the first list, the other dropped; and a legacy release
(``qwithin.json``/``qacross.json``, labels, no ``taxonomy.json``) with a label of neither
taxonomy was "topic labels match neither taxonomy v1 nor v2" against ``qwithin.json``, with
no record or field, even when the label was in ``qacross.json``.

The same contract as ``test_bad_inputs.py``: exit code 2, one line ``error: ...`` naming the
offending file, row or field, no traceback, and nothing written.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from refusal import fit_small_model, invoke, population_and_stats, refusal_test


def _first_record_twice(key: str, value: object) -> Callable[[str], str]:
    """The file's first record with ``key`` given a second time (the text, not the parsed
    JSON: ``json`` cannot write a key twice)."""
    def edit(text: str) -> str:
        end = text.index("}")
        return text[:end] + f", {json.dumps(key)}: {json.dumps(value)}" + text[end:]
    return edit


def _top_level_twice(key: str, value: object) -> Callable[[str], str]:
    return lambda text: text.rstrip().removesuffix("}") + f", {json.dumps(key)}: " \
        f"{json.dumps(value)}}}\n"


def _edit(directory: Path, name: str, change: Callable[[str], str]) -> None:
    path = directory / name
    path.write_text(change(path.read_text(encoding="utf-8")), encoding="utf-8")


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """300 users (v2, 4 weeks), their release in both schemas, a model fitted to it, a
    learned attack, and copies of each with one edit."""
    from topicslab import dp

    d = tmp_path_factory.mktemp("round21")
    population_and_stats(d)
    fit_small_model(invoke, d)
    res = invoke(["attack-train", "--sets", str(d / "pop.parquet"), "--out", str(d / "attack"),
                  "--weeks", "4", "--epochs", "0", "--validation", "16", "--no-progress"])
    assert res.exit_code == 0, res.output
    stats = dp.load_statistics(d / "stats")
    dp.save_statistics(d / "legacy", stats, schema="legacy")
    (d / "legacy" / "taxonomy.json").unlink()
    (d / "legacy" / "privacy_ledger.json").unlink()
    for name, src, file, change in [
        ("st-within-twice", "stats", "q_within.json", _first_record_twice("frequency", 0.9)),
        ("st-across-twice", "stats", "q_across.json", _first_record_twice("frequency", 0.5)),
        ("st-single-twice", "stats", "q_single.json", _first_record_twice("frequency", 0.5)),
        ("st-two-lists", "stats", "q_across.json",
         lambda t: json.dumps({"records": json.loads(t), "more": json.loads(t)[:5]})),
        ("st-accounting-twice", "stats", "privacy_ledger.json",
         _top_level_twice("accounting", "paper")),
        ("legacy-across-typo", "legacy", "qacross.json",
         lambda t: t.replace('"topic_week1": "/Arts & Entertainment"',
                             '"topic_week1": "/Arts & Entertainmnet"', 1)),
        ("model-weeks-twice", "model", "model.json", _top_level_twice("weeks", 8)),
        ("attack-weeks-twice", "attack", "model.json", _top_level_twice("weeks", 2)),
    ]:
        shutil.copytree(d / src, d / name)
        _edit(d / name, file, change)
    table = pq.read_table(d / "pop.parquet")
    meta = table.schema.metadata
    pq.write_table(table.replace_schema_metadata(
        {**meta, b"topicslab": meta[b"topicslab"].replace(b'"k": 5', b'"k": 5, "k": 7')}),
        d / "meta-k-twice.parquet")
    return d



FIT = ["fit", "--out", "{out}", "--types", "2", "--modes", "1", "--steps", "1",
       "--no-progress", "--stats"]
TWICE = "is given twice in one"

CASES: list[tuple[str, list[str], str]] = [
    # the ledger's k-check blamed contribution_bounding.k for the within-week record's 0.9
    ("fit-within-frequency-twice", [*FIT, "{in}/st-within-twice"],
     f"q_within.json, row 1, field 'frequency': 'frequency' {TWICE} record"),
    # fitted with the second frequency, exit code 0
    ("fit-across-frequency-twice", [*FIT, "{in}/st-across-twice"],
     f"q_across.json, row 1, field 'frequency': 'frequency' {TWICE} record"),
    ("fit-single-frequency-twice", [*FIT, "{in}/st-single-twice"],
     f"q_single.json, row 1, field 'frequency': 'frequency' {TWICE} record"),
    # the second list was dropped without a word
    ("fit-release-of-two-lists", [*FIT, "{in}/st-two-lists"],
     "q_across.json, field '--stats': an object of 2 lists ('records', 'more')"),
    # printed (and fitted) as paper accounting
    ("explain-ledger-accounting-twice", ["stats", "--explain", "{in}/st-accounting-twice"],
     f"privacy_ledger.json, field 'accounting': 'accounting' {TWICE} object"),
    # "qwithin.json: topic labels match neither taxonomy v1 nor v2"
    ("fit-legacy-label-typo-in-across", [*FIT, "{in}/legacy-across-typo"],
     "qacross.json, row 1, field 'topic_week1': unknown topic label "
     "'/Arts & Entertainmnet'"),
    # sampled 8 weeks by default
    ("sample-model-weeks-twice",
     ["sample", "--model", "{in}/model-weeks-twice", "--users", "10", "--seed", "1", "--out",
      "{out}.parquet"], f"model.json, field 'weeks': 'weeks' {TWICE} object"),
    ("reid-attack-weeks-twice",
     ["reid", "--sets", "{in}/pop.parquet", "--targets", "20", "--trials", "1",
      "--no-progress", "--attack", "learned", "--attack-model", "{in}/attack-weeks-twice"],
     f"model.json, field 'weeks': 'weeks' {TWICE} object"),
    # converted as k = 7
    ("convert-parquet-metadata-k-twice", ["convert", "{in}/meta-k-twice.parquet",
                                          "{out}.parquet"],
     "meta-k-twice.parquet, field 'k': corrupt topicslab metadata ('k' is given twice"),
]

test_bad_input_is_refused = refusal_test(CASES)


def test_files_the_toolkit_writes_are_still_read(inputs: Path) -> None:
    """Guard: a release in either schema (the legacy one without taxonomy.json), a model,
    a learned attack and a Parquet file's metadata have no key twice, and are read."""
    from topicslab import dp
    from topicslab import io as tio
    from topicslab.attacks.learned import load_attack
    from topicslab.model import load_model

    assert dp.load_statistics(inputs / "stats").k == 5
    assert dp.load_statistics(inputs / "legacy").taxonomy.version == "v2"
    load_model(inputs / "model")
    load_attack(inputs / "attack")
    assert tio.read_sets(inputs / "pop.parquet").k == 5
    res = invoke(["convert", str(inputs / "pop.parquet"), str(inputs.parent / "r21.csv")])
    assert res.exit_code == 0, res.output


def test_a_duplicate_key_in_a_nested_record_names_its_row(inputs: Path, work: Path) -> None:
    """A release wrapped as {"records": [...]} (tolerated) still names the record."""
    shutil.copytree(inputs / "stats", work / "st")
    path = work / "st" / "q_single.json"
    rows = json.loads(path.read_text(encoding="utf-8"))
    text = json.dumps({"records": rows})
    marker = json.dumps(rows[2])
    text = text.replace(marker, marker[:-1] + ', "topic_id": 1}', 1)
    path.write_text(text, encoding="utf-8")
    res = invoke([*[a.format(out=work / "m") for a in FIT], str(work / "st")])
    assert res.exit_code == 2, res.output
    assert "q_single.json, row 3, field 'topic_id': 'topic_id' is given twice" in res.output


@pytest.mark.parametrize("writer", ["save_statistics", "save_model", "save_attack"])
def test_an_empty_directory_name_is_refused_not_the_working_directory(
        inputs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, writer: str) -> None:
    """``Path("")`` is ``.``: ``dp.save_statistics("", stats)`` wrote the release into the
    working directory, where the command line refuses an empty ``--out``."""
    from topicslab import dp
    from topicslab.attacks.learned import load_attack, save_attack
    from topicslab.errors import InputError
    from topicslab.model import load_model, save_model

    save: dict[str, Callable[[], object]] = {
        "save_statistics": lambda: dp.save_statistics("", dp.load_statistics(inputs / "stats")),
        "save_model": lambda: save_model("", load_model(inputs / "model")),
        "save_attack": lambda: save_attack("", load_attack(inputs / "attack")),
    }
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError, match="an empty path") as info:
        save[writer]()
    assert info.value.field == "directory"
    assert list(tmp_path.iterdir()) == []
