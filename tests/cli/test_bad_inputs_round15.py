"""Bad input, the fifteenth independent round (issue 15): a byte-order mark in a JSON file
(q_*.json, the ledger, model.json, a learned attack's model.json, population parameters) was
refused as "Unexpected UTF-8 BOM" where the CSV files, domain tables and query scripts take
it; an input file whose name holds a line break made the error two lines; a symbolic link
that loops was "no such file"; ``reid --sets`` of no users was attacked (exit code 0),
``qif --sets`` of none named no file, and ``stats --engine stream`` of none wrote a release;
a semicolon-separated CSV was told "name the file .csv"; ``fit --resume`` with another
``--steps`` named '--optimizer' and printed two dicts. Writing: an existing output directory
on another file system than its parent (a mount point) failed after the work (EXDEV, exit
code 1), and SIGTERM or SIGHUP between the renames that commit a set of files left new files
beside old ones (a Ctrl-C there was reported as "nothing written"); from Python,
``save_statistics`` to an existing file was a NotADirectoryError after the work.

The same contract as ``test_bad_inputs.py``: exit code 2, one line ``error: ...`` naming the
offending file, row or field, no traceback, and nothing written.
"""

from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from refusal import (
    check_refused,
    fit_small_model,
    invoke,
    population_and_stats,
    refusal_test,
)

BOM = b"\xef\xbb\xbf"


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """300 users (v2, 4 weeks), their DP statistics and a one-step model; copies of the
    statistics and the model whose JSON files begin with a byte-order mark, the population
    with no rows and as a semicolon CSV, under a name with a line break, and a link loop."""
    d = tmp_path_factory.mktemp("round15")
    population_and_stats(d)
    fit_small_model(invoke, d)
    for copy, source, files in [("bom-stats", "stats", ("q_within.json", "privacy_ledger.json")),
                                ("bom-model", "model", ("model.json",))]:
        shutil.copytree(d / source, d / copy)
        for name in files:
            (d / copy / name).write_bytes(BOM + (d / copy / name).read_bytes())
    params = Path(__file__).parents[2] / "src/topicslab/population/data/reference_v2.json"
    (d / "params-bom.json").write_bytes(BOM + params.read_bytes())
    table = pq.read_table(d / "pop.parquet")
    pq.write_table(table.slice(0, 0), d / "no-users.parquet")
    shutil.copy(d / "pop.parquet", d / "a\nb.parquet")
    table.to_pandas().assign(**{c: "1;2" for c in table.column_names[1:]}).to_csv(
        d / "semicolon.csv", sep=";", index=False)
    os.symlink("loop-b.parquet", d / "loop-a.parquet")
    os.symlink("loop-a.parquet", d / "loop-b.parquet")
    return d


FIT = ["fit", "--out", "{out}", "--types", "2", "--modes", "1", "--steps", "1",
       "--no-progress", "--stats"]

CASES: list[tuple[str, list[str], str]] = [
    # two lines: the file's name printed as it is
    ("observe-input-name-with-a-line-break",
     ["observe", "--sets", "{in}/a\nb.parquet", "--out", "{out}.parquet", "--k", "3"],
     "a\\nb.parquet, row 1, field 'epoch_0_topics'"),
    # "no such file", "does not exist"
    ("observe-sets-a-link-loop", ["observe", "--sets", "{in}/loop-a.parquet", "--out",
                                  "{out}.parquet"],
     "loop-a.parquet, field '--sets': is a symbolic link that loops back on itself"),
    ("fit-stats-a-link-loop", [*FIT, "{in}/loop-a.parquet"],
     "loop-a.parquet, field '--stats': is a symbolic link that loops back on itself"),
    # attacked: "0 users, 0 targets", exit code 0
    ("reid-sets-of-no-users", ["reid", "--sets", "{in}/no-users.parquet", "--trials", "1"],
     "no-users.parquet, field '--sets': holds no users"),
    # "the population is empty", naming no file
    ("qif-sets-of-no-users", ["qif", "--sets", "{in}/no-users.parquet"],
     "no-users.parquet, field '--sets': holds no users"),
    # a release of noise only, exit code 0 (the local engine refuses it)
    ("stats-stream-of-no-users",
     ["stats", "--sets", "{in}/no-users.parquet", "--out", "{out}", "--engine", "stream"],
     "no-users.parquet, field '--sets': the topic sets hold no users"),
    # "name the file .csv" of a .csv file (and, streamed, a progress bar's line above)
    ("stats-stream-semicolon-csv",
     ["stats", "--sets", "{in}/semicolon.csv", "--out", "{out}", "--engine", "stream"],
     "separated by ';', not ','; separate the columns with ','"),
]


test_bad_input_is_refused = refusal_test(CASES)


@pytest.mark.parametrize(("args", "wrote"), [
    ([*FIT, "{in}/bom-stats"], "out/model.json"),
    (["stats", "--explain", "{in}/bom-stats"], None),
    (["sample", "--model", "{in}/bom-model", "--users", "5", "--seed", "1", "--out",
      "{out}.parquet"], "out.parquet"),
    (["population", "--users", "10", "--params", "{in}/params-bom.json", "--out",
      "{out}.parquet"], "out.parquet"),
], ids=["fit-stats", "stats-explain", "sample-model", "population-params"])
def test_a_json_file_with_a_byte_order_mark_is_read(inputs: Path, work: Path,
                                                    args: list[str], wrote: str | None) -> None:
    """Was "invalid JSON: Unexpected UTF-8 BOM" (Notepad saves UTF-8 with one)."""
    res = invoke([a.format(**{"in": inputs, "out": work / "out"}) for a in args])
    assert res.exit_code == 0, res.output
    assert wrote is None or (work / wrote).exists()


def test_resume_names_the_option_that_differs(inputs: Path, work: Path) -> None:
    """Was "field '--optimizer': checkpoint was made with optimizer={'steps': 2, ...}, this
    fit has {'steps': 3, ...}"."""
    base = ["fit", "--stats", str(inputs / "stats"), "--out", str(work / "m"), "--types", "2",
            "--modes", "1", "--no-progress", "--checkpoint-every", "1"]
    assert invoke([*base, "--steps", "2"]).exit_code == 0
    res = invoke([*base, "--steps", "3", "--resume"])
    check_refused(res.output, res.exit_code,
                  "field '--steps': checkpoint was made with steps=2, this fit has 3; resume "
                  "with the options of the interrupted fit")


def test_an_existing_output_directory_holds_its_own_temporary(tmp_path: Path) -> None:
    """A mount point (a container's volume) is on another file system than its parent: the
    merge's renames from a temporary beside it failed with EXDEV after the work."""
    from topicslab._atomic import atomic_dir

    final = tmp_path / "volume"
    final.mkdir()
    (final / "theirs.txt").write_text("kept")
    with atomic_dir(final, owned=("a.json",)) as tmp:
        assert tmp.parent == final
        (tmp / "a.json").write_text("{}")
    assert sorted(p.name for p in final.iterdir()) == ["a.json", "theirs.txt"]
    with atomic_dir(tmp_path / "new") as tmp:  # a new directory: beside it, one rename
        assert tmp.parent == tmp_path
    assert (tmp_path / "new").is_dir()


@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM", "SIGHUP"])
def test_a_signal_between_the_commit_renames_waits_for_the_set(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, signame: str) -> None:
    """SIGTERM and SIGHUP end a command like Ctrl-C (topicslab._main); between two renames of
    one set they left one new file beside the old ones. Now the whole set commits, the
    signal is delivered after, and the set is named as complete (Ctrl-C there was reported
    as "nothing written")."""
    import topicslab._atomic as atomic

    number = getattr(signal, signame)
    finals = [tmp_path / "s-00000-of-00002.tfrecord", tmp_path / "s-00001-of-00002.tfrecord"]
    for f in finals:
        f.write_text("old")
    real_replace = os.replace

    def replace_then_signal(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        real_replace(src, dst)
        if Path(dst) == finals[0]:
            signal.raise_signal(number)

    previous = signal.signal(number, signal.default_int_handler)
    monkeypatch.setattr(atomic.os, "replace", replace_then_signal)
    atomic.forget_completed_writes()
    try:
        with pytest.raises(KeyboardInterrupt), atomic.atomic_paths(finals) as tmps:
            for t in tmps:
                t.write_text("new")
    finally:
        signal.signal(number, previous)
    assert [f.read_text() for f in finals] == ["new", "new"]
    assert atomic.completed_writes() == [f.absolute() for f in finals]
    assert sorted(p.name for p in tmp_path.iterdir()) == [f.name for f in finals]


def test_python_save_statistics_to_an_existing_file_is_refused(inputs: Path) -> None:
    """Was a NotADirectoryError from the closing rename, after the work."""
    from topicslab import dp, io
    from topicslab.errors import InputError

    stats = dp.compute_statistics(io.read_sets(inputs / "pop.parquet"), epsilon=1e3, seed=0)
    with pytest.raises(InputError, match=r"pop\.parquet: is an existing file, and a directory"):
        dp.save_statistics(inputs / "pop.parquet", stats)
