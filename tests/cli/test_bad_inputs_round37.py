"""Bad input, the thirty-seventh independent round.

- An output file named with a trailing ``/`` (``population --out p.parquet/``, ``observe``,
  ``sample``, ``convert`` TARGET, every ``--json``, ``--figure``, ``--plot``,
  ``--unclassified``): the ``/`` asks for a directory, and the file ``p.parquet`` was written
  beside it without a word (``Path`` drops the ``/``). Output directories (``stats --out
  st/``) still take one.
- ``validate --population DIR --synthetic 'DIR/pop-*-of-00002.tfrecord'`` (one set of shards
  named as its directory and as a pattern, or twice as a pattern): the population was
  compared with itself, every gap 0 and a PASS, as the same-file check (round 11) looked at
  names only.
- ``convert 'd/pop-*-of-00002.tfrecord' d/pop.tfrecord --shards 3`` replaced the very shards
  it read (the pattern matched nothing afterwards): a SOURCE given as a pattern was not
  checked against the files written.
- ``attack-train`` printed its notes on counts past the population ("note: --validation 10
  but only 0 users") above a refusal of the data: two lines.
- A symbolic link that cannot be followed (dangling, or looping) was "file not found" in
  ``convert`` SOURCE, ``validate --population/--synthetic``, ``population --params`` and
  ``run --sets/--stats``, where every other reader says what the link is.
- Numbers in another script's digits (``０,１``, ``３``, ``５``): the options typed as numbers
  refuse them, but the ones read as text took them -- ``stats --weeks/--split/--epsilon``,
  ``reid --weeks/--targets``, ``qif --epochs``, ``disclosure --rho``, ``run
  --release-weeks``.
- ``stats --engine auto --chunk-users N`` on an input that auto reads in memory: the option
  sized nothing, with no word (now a note).
- The environment: OpenMP variables other than OMP_NUM_THREADS that libgomp cannot read
  (``OMP_PROC_BIND=xyz``, ``OMP_SCHEDULE=bogus``, ``OMP_STACKSIZE=abc``, ``GOMP_SPINCOUNT=x``,
  ...) printed "libgomp: Invalid value for environment variable ..." above the output and
  were ignored, and ``GOMP_CPU_AFFINITY=x`` made libgomp loop for ever: the command hung at
  its first parallel kernel, deaf to kill; ``NUMBA_NUM_THREADS=100000`` (past the threads a
  process may start) ended in a segmentation fault with no line (or "libgomp: Thread
  creation failed", exit code 1).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from refusal import (
    check_refused,
    console_script,
    fit_small_model,
    invoke,
    population_and_stats,
    refusal_test,
    tree,
)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """300 users (v2, 4 weeks) as ``pop.parquet``, their DP statistics ``stats``, a fitted
    model ``model``, the population as two TFRecord shards in ``shards/``, a Parquet file of
    no users ``empty.parquet``, a visits log and domain table, and links that cannot be
    followed: ``dangling.parquet``, ``dangling.json``, ``dangling`` and ``loop``."""
    from topicslab import io as tio
    from topicslab.datamodel import TopicSets

    d = tmp_path_factory.mktemp("round37")
    population_and_stats(d)
    fit_small_model(invoke, d)
    (d / "shards").mkdir()
    res = invoke(["convert", str(d / "pop.parquet"), str(d / "shards" / "pop.tfrecord"),
                  "--shards", "2"])
    assert res.exit_code == 0, res.output
    tio.write_sets(d / "empty.parquet",
                   TopicSets(np.zeros((0, 4, 5), dtype=np.int16), "v2",
                             np.zeros(0, dtype=np.int64)))
    (d / "visits.csv").write_text("user_id,timestamp,url\n1,2024-01-01T10:00:00,"
                                  "https://example.com/\n", encoding="utf-8")
    (d / "domains.csv").write_text("domain,topics\nexample.com,1\n", encoding="utf-8")
    os.symlink("nowhere.parquet", d / "dangling.parquet")
    os.symlink("nowhere.json", d / "dangling.json")
    os.symlink("nowhere", d / "dangling")
    os.symlink("loop", d / "loop")
    return d


SLASH = "ends in '/', which names a directory, and this option writes a file; drop the '/'"
VAL = ["validate", "--stats", "{in}/stats", "--model", "{in}/model", "--json", "{out}.json"]
SHARDS = "{in}/shards/pop-*-of-00002.tfrecord"
ITSELF = "field '--synthetic': is the population itself"
DANGLING = "is a symbolic link to nowhere.parquet, which does not exist"
LOOP = "is a symbolic link that loops back on itself"
AT = ["attack-train", "--out", "{out}", "--epochs", "0", "--no-progress", "--sets"]
CASES = [
    # an output file named as a directory (was written as the file beside it)
    ("population-out-trailing-slash", ["population", "--users", "20", "--out",
                                       "{out}.parquet/"], f"field '--out': {SLASH}"),
    ("observe-out-trailing-slash", ["observe", "--sets", "{in}/pop.parquet", "--out",
                                    "{out}.parquet/"], f"field '--out': {SLASH}"),
    ("sample-out-trailing-slash", ["sample", "--model", "{in}/model", "--users", "10",
                                   "--seed", "0", "--out", "{out}.tfrecord/"],
     f"field '--out': {SLASH}"),
    ("convert-target-trailing-slash", ["convert", "{in}/pop.parquet", "{out}.csv/"],
     f"field 'TARGET': {SLASH}"),
    ("reid-json-trailing-slash", ["reid", "--sets", "{in}/pop.parquet", "--weeks", "1",
                                  "--no-progress", "--json", "{out}.json/"],
     f"field '--json': {SLASH} (or name a file in the directory, e.g. "),
    ("qif-plot-trailing-slash", ["qif", "--plot", "{out}.png/"], f"field '--plot': {SLASH}"),
    ("ingest-unclassified-trailing-slash", ["ingest", "-q", "--visits", "{in}/visits.csv",
                                            "--domains", "{in}/domains.csv", "--out",
                                            "{out}.parquet", "--unclassified", "{out}.csv/"],
     f"field '--unclassified': {SLASH}"),
    ("validate-json-trailing-slash", [*VAL[:-1], "{out}.json/"], f"field '--json': {SLASH}"),
    ("disclosure-json-trailing-slash", ["disclosure", "--example", "--json", "{out}.json/"],
     f"field '--json': {SLASH}"),
    # one set of shards named twice (was compared with itself: every gap 0, a PASS)
    ("validate-shards-dir-and-pattern", [*VAL, "--population", "{in}/shards", "--synthetic",
                                         SHARDS], ITSELF),
    ("validate-shards-pattern-and-dir", [*VAL, "--population", SHARDS, "--synthetic",
                                         "{in}/shards"], ITSELF),
    ("validate-shards-pattern-twice", [*VAL, "--population", SHARDS, "--synthetic",
                                       "{in}/shards/pop-0*"], ITSELF),
    # a pattern SOURCE written over (its shards were replaced by 3 others)
    ("convert-over-its-pattern-source", ["convert", SHARDS, "{in}/shards/pop.tfrecord",
                                         "--shards", "3"],
     "field 'TARGET': is the input SOURCE "),
    ("convert-over-its-pattern-source-same-count", ["convert", SHARDS,
                                                    "{in}/shards/pop.tfrecord", "--shards",
                                                    "2"],
     "(matched by "),
    # attack-train: the note on the counts above the refusal (two lines)
    ("attack-train-no-users-validation-past", [*AT, "{in}/empty.parquet", "--weeks", "1",
                                               "--validation", "10"],
     "empty.parquet, field '--sets': training needs at least two users"),
    ("attack-train-weeks-past-validation-past", [*AT, "{in}/pop.parquet", "--weeks", "5",
                                                 "--validation", "400"],
     "pop.parquet, field '--weeks': training on 5 call-week(s)"),
    # a link that cannot be followed was "file not found"
    ("convert-dangling-source", ["convert", "{in}/dangling.parquet", "{out}.csv"],
     f"field 'SOURCE': {DANGLING}"),
    ("convert-looping-source", ["convert", "{in}/loop", "{out}.csv"], f"field 'SOURCE': {LOOP}"),
    ("validate-dangling-population", [*VAL, "--population", "{in}/dangling.parquet"],
     f"field '--population': {DANGLING}"),
    ("validate-looping-synthetic", [*VAL, "--population", "{in}/pop.parquet", "--synthetic",
                                    "{in}/loop"], f"field '--synthetic': {LOOP}"),
    ("population-dangling-params", ["population", "--users", "20", "--out", "{out}.parquet",
                                    "--params", "{in}/dangling.json"],
     "field '--params': is a symbolic link to nowhere.json, which does not exist"),
    ("run-dangling-stats", ["run", "--preset", "smoke", "--quiet", "--out", "{out}",
                            "--stats", "{in}/dangling"],
     "field '--stats': is a symbolic link to nowhere, which does not exist"),
    ("run-looping-sets", ["run", "--preset", "smoke", "--quiet", "--out", "{out}", "--sets",
                          "{in}/loop"], f"field '--sets': {LOOP}"),
    # numbers in other scripts' digits (read by int()/float() as 0, 1, 3, ...)
    ("stats-weeks-full-width", ["stats", "--sets", "{in}/pop.parquet", "--out", "{out}",
                                "--weeks", "０,１"], "field '--weeks': cannot read weeks '０,１'"),
    ("stats-split-full-width", ["stats", "--sets", "{in}/pop.parquet", "--out", "{out}",
                                "--split", "０.25,0.25,0.5"], "field '--split': cannot read split"),
    ("stats-epsilon-full-width", ["stats", "--sets", "{in}/pop.parquet", "--out", "{out}",
                                  "--epsilon", "３"],
     "field '--epsilon': cannot read epsilon '３'"),
    ("reid-weeks-full-width", ["reid", "--sets", "{in}/pop.parquet", "--no-progress",
                               "--weeks", "２"], "field '--weeks': cannot read weeks '２'"),
    ("reid-targets-full-width", ["reid", "--sets", "{in}/pop.parquet", "--no-progress",
                                 "--weeks", "1", "--targets", "５"],
     "field '--targets': targets must be a positive integer or 'all', got '５'"),
    ("qif-epochs-full-width-range", ["qif", "--epochs", "１..２"],
     "field '--epochs': cannot read epochs '１..２'"),
    ("disclosure-rho-full-width", ["disclosure", "-q", "--rho", "０.１"],
     "field '--rho': cannot read rho: '０.１' is not ASCII"),
    ("run-release-weeks-full-width", ["run", "--preset", "smoke", "--quiet", "--out", "{out}",
                                      "--release-weeks", "０,１"],
     "field '--release-weeks': expected all or comma-separated week indices"),
]


test_bad_input_is_refused = refusal_test(CASES)


def test_a_directory_output_still_takes_a_trailing_slash(inputs: Path, work: Path) -> None:
    res = invoke(["stats", "--sets", str(inputs / "pop.parquet"), "--out", "st/"])
    assert res.exit_code == 0, res.output
    assert (work / "st" / "q_within.json").is_file()


def test_pattern_and_shards_of_another_set_still_validate(inputs: Path, work: Path) -> None:
    """The check compares the files behind the names: another set's shards pass."""
    shutil.copytree(inputs / "shards", work / "syn")
    res = invoke([*[a.format(**{"in": inputs, "out": work / "v"}) for a in VAL],
                  "--population", str(inputs / "shards"), "--synthetic",
                  str(work / "syn" / "pop-*-of-00002.tfrecord")])
    assert res.exit_code == 0, res.output


def test_chunk_users_unused_by_auto_is_noted(inputs: Path, work: Path) -> None:
    """``--engine auto`` read the small file in memory: --chunk-users sized nothing, with no
    word."""
    res = invoke(["stats", "--sets", str(inputs / "pop.parquet"), "--out", "st", "--engine",
                  "auto", "--chunk-users", "10"])
    assert res.exit_code == 0, res.output
    assert ("note: --chunk-users had nothing to do: --engine auto read pop.parquet in memory"
            in " ".join(res.output.split()))


def test_attack_train_notes_still_come_after_training(inputs: Path, work: Path) -> None:
    res = invoke(["attack-train", "--sets", str(inputs / "pop.parquet"), "--out", "a",
                  "--weeks", "2", "--epochs", "0", "--validation", "400", "--no-progress"])
    assert res.exit_code == 0, res.output
    assert "note: --validation 400 but only 300 users: every user is used" in res.output


# ---- the environment ------------------------------------------------------------------------


def _have_libgomp() -> bool:
    import ctypes.util
    import glob
    import importlib.util

    spec = importlib.util.find_spec("torch")
    folders = (spec.submodule_search_locations or []) if spec is not None else []
    return (any(glob.glob(os.path.join(f, "lib", "libgomp*.so*")) for f in folders)
            or ctypes.util.find_library("gomp") is not None)


needs_libgomp = pytest.mark.skipif(not _have_libgomp(), reason="no OpenMP runtime here")


@needs_libgomp
@pytest.mark.parametrize(("name", "value"), [
    ("OMP_PROC_BIND", "xyz"), ("OMP_SCHEDULE", "bogus"), ("GOMP_SPINCOUNT", "x")])
def test_unreadable_openmp_variable_is_one_line(tmp_path: Path, name: str,
                                                value: str) -> None:
    """Was libgomp's "Invalid value for environment variable ..." above the output (exit 0,
    the value ignored)."""
    proc = console_script(["stats", "--explain", "nowhere"], {name: value}, tmp_path)
    check_refused(proc.stderr, proc.returncode,
                  f"environment variable {name}={value!r} cannot be read by OpenMP (libgomp: ")
    assert not list(tmp_path.iterdir())


@needs_libgomp
def test_an_openmp_variable_libgomp_loops_on_is_one_line(tmp_path: Path) -> None:
    """``GOMP_CPU_AFFINITY=x``: libgomp loops for ever reading it; the command hung at its
    first parallel kernel (fit, observe), deaf to kill (SIGTERM)."""
    proc = console_script(["stats", "--explain", "nowhere"], {"GOMP_CPU_AFFINITY": "x"},
                          tmp_path)
    check_refused(proc.stderr, proc.returncode, "environment variable GOMP_CPU_AFFINITY='x' "
                  "keeps OpenMP (libgomp) from loading")
    assert not list(tmp_path.iterdir())


@needs_libgomp
@pytest.mark.parametrize(("name", "value"), [("OMP_SCHEDULE", "static,4")])
def test_readable_openmp_variable_still_runs(tmp_path: Path, name: str, value: str) -> None:
    proc = console_script(["qif", "--m", "10"], {name: value}, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "libgomp" not in proc.stderr


def test_numba_threads_past_the_system_is_one_line(tmp_path: Path) -> None:
    """``NUMBA_NUM_THREADS=100000`` ended in a segmentation fault with no line (numba starts
    every thread at its first parallel kernel)."""
    value = str(2**31 + 1)  # past every limit the check reads (it caps them at 2**31)
    before = tree(tmp_path)
    proc = console_script(["observe", "--sets", "nowhere.parquet"],
                          {"NUMBA_NUM_THREADS": value}, tmp_path)
    check_refused(proc.stderr, proc.returncode,
                  f"NUMBA_NUM_THREADS={value!r} asks for more threads than this system lets a "
                  "process start")
    assert tree(tmp_path) == before
