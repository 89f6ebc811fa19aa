"""Bad input, the thirty-third independent round.

- ``fit --resume`` with other settings than the checkpoint's named what no user typed:
  ``--cyclic`` was "field 'week_pairs'", ``--no-noise-stop`` "field 'stop_at_noise'", other
  statistics "field 'fingerprint': ... fingerprint='sha256:75d0...', this fit has
  'sha256:6f04...'; resume with the options of the interrupted fit", and the other
  optimiser "field '--batch-loss': checkpoint was made with batch_loss=None".
- a name that is not UTF-8 (a byte such as 0xff, which Python keeps as a surrogate): the
  Parquet library failed on it, for an output only after the work, as "the output cannot be
  shown in the terminal's encoding (utf-8); set PYTHONIOENCODING=utf-8", for an input as
  "'utf-8' codec can't encode character '\\udcff'".
- ``convert '' out.csv``: an empty SOURCE (the options' check skipped the arguments) read the
  current directory's TFRecord shards without a word.
- ``sample`` / ``validate --model DIR/model.json`` (a fitted model's or a learned attack's
  metadata, or another JSON file) was "field 'format': key 'format' does not end in a type
  number": now says what the file is and what to give.
- ``reid --candidates`` past the population was used as every user without a word.
- ``stats --out run/stats``, ``fit --out run/model`` and ``attack-train --out run/validation``
  replaced a run's own directories under the results.json and report that described them.
- Ctrl-C of ``stats --engine spark``: py4j logged "ERROR:root:KeyboardInterrupt while sending
  command." and a traceback (``logging.exception`` on the unconfigured root logger) above the
  interrupted line.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from refusal import check_refused, invoke, population_and_stats, random_profiles, tree


def _fit(inputs: Path, stats: str, out: Path, more: list[str]) -> list[str]:
    return ["fit", "--stats", str(inputs / stats), "--out", str(out), "--types", "2",
            "--no-progress", *more]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """300 users (v2, 4 weeks), their DP statistics (``stats``), the statistics of another
    release of them (``stats-other``) and one-step fits of persistent and paper types, their
    checkpoints kept (``fit-persistent``, ``fit-paper``)."""
    from topicslab import dp
    from topicslab.io import read_sets

    d = tmp_path_factory.mktemp("round33")
    population_and_stats(d)
    dp.save_statistics(d / "stats-other", dp.compute_statistics(
        read_sets(d / "pop.parquet"), epsilon=1.0, delta=1e-6, seed=1))
    for model in ("persistent", "paper"):
        res = invoke(_fit(d, "stats", d / f"fit-{model}", ["--model", model, "--steps", "1"]))
        assert res.exit_code == 0, res.output
    return d


# ---- D1: a resumed fit names the option that differs from its checkpoint's -----------------


@pytest.mark.parametrize(("model", "changed", "named"), [
    ("paper", ["--cyclic"], "field '--cyclic': checkpoint was made with week_pairs"),
    ("paper", ["--weeks", "5"], "field '--weeks': checkpoint was made with weeks=4"),
    ("persistent", ["--no-noise-stop"],
     "field '--no-noise-stop': checkpoint was made with stop_at_noise"),
    ("persistent", [], "field '--stats': checkpoint was made from other DP statistics than "
                       "these"),
    ("paper", ["--optimizer", "paper", "--epochs", "1"],
     "field '--optimizer': checkpoint was made with optimizer='default', this fit has 'paper'"),
], ids=["cyclic", "weeks", "no-noise-stop", "other-stats", "other-optimizer"])
def test_resume_names_the_option_that_differs(inputs: Path, work: Path, model: str,
                                              changed: list[str], named: str) -> None:
    """Was "field 'week_pairs'" (also for --weeks), "field 'stop_at_noise'", "field
    'fingerprint'" with two hashes, and "field '--batch-loss': ... batch_loss=None"."""
    shutil.copytree(inputs / f"fit-{model}", work / "m")
    steps = [] if "--epochs" in changed else ["--steps", "1"]
    stats = "stats" if changed else "stats-other"
    before = tree(work)
    res = invoke(_fit(inputs, stats, work / "m", ["--model", model, *steps, *changed,
                                                  "--resume"]))
    check_refused(res.output, res.exit_code, named)
    assert tree(work) == before


# ---- D2: a name that is not UTF-8 ----------------------------------------------------------


@pytest.fixture
def in_work(inputs: Path, work: Path) -> Path:
    """``work`` with a copy of the population, ``pop.parquet``."""
    shutil.copy(inputs / "pop.parquet", work / "pop.parquet")
    return work


@pytest.mark.parametrize(("args", "named"), [
    (["convert", "pop.parquet", "\udcfe.csv"], "\\xfe.csv, field 'TARGET'"),
    (["convert", "\udcff.parquet", "out.csv"], "\\xff.parquet, field 'SOURCE'"),
    (["observe", "--sets", "pop.parquet", "--out", "\udcfc.parquet"],
     "\\xfc.parquet, field '--out'"),
    (["population", "--users", "20", "--out", "\udcf9.parquet"], "\\xf9.parquet, field '--out'"),
    (["reid", "--sets", "\udcff.parquet", "--weeks", "2", "--no-progress"],
     "\\xff.parquet, field '--sets'"),
], ids=["convert-target", "convert-source", "observe-out", "population-out", "reid-sets"])
def test_a_name_that_is_not_utf8_is_refused_before_the_work(in_work: Path, args: list[str],
                                                             named: str) -> None:
    """Non-UTF-8 bytes in a name (Python's surrogates): the Parquet library failed on it,
    the outputs only after the work, as "the output cannot be shown in the terminal's
    encoding (utf-8); set PYTHONIOENCODING=utf-8", the inputs as "'utf-8' codec can't encode
    character '\\udcff' in position 0: surrogates not allowed"."""
    if "\udcff.parquet" in args:
        shutil.copy(in_work / "pop.parquet", in_work / "\udcff.parquet")
    before = tree(in_work)
    res = invoke(args)
    line = check_refused(res.output, res.exit_code, named)
    assert "not valid UTF-8" in line
    assert tree(in_work) == before


# ---- D3: convert's empty SOURCE ------------------------------------------------------------


def test_convert_refuses_an_empty_source_name(inputs: Path, work: Path) -> None:
    """``convert '' out.csv`` read the current directory's TFRecord shards without a word
    (the options' check of an empty name skipped the arguments)."""
    res = invoke(["convert", str(inputs / "pop.parquet"), "shard.tfrecord", "--shards", "2"])
    assert res.exit_code == 0, res.output
    before = tree(work)
    res = invoke(["convert", "", "out.csv"])
    check_refused(res.output, res.exit_code, "field 'SOURCE': an empty name")
    assert tree(work) == before


# ---- D4: a model directory's model.json given as a release's parameters ---------------------


@pytest.mark.parametrize(("command", "file", "named"), [
    ("sample", "fit-persistent/model.json", "is the model.json of a fitted model (topicslab fit)"),
    ("validate", "fit-paper/model.json", "is the model.json of a fitted model (topicslab fit)"),
    ("sample", "stats/privacy_ledger.json", "is not a release output_parameters.json"),
], ids=["sample-model-json", "validate-model-json", "sample-ledger"])
def test_another_json_file_as_release_parameters_says_what_it_is(
        inputs: Path, work: Path, command: str, file: str, named: str) -> None:
    """Was "field 'format': key 'format' does not end in a type number" (a .json --model is
    read as a release's output_parameters.json)."""
    args = {"sample": ["--users", "5", "--seed", "0", "--out", "out.parquet"],
            "validate": ["--stats", str(inputs / "stats"), "--json", "out.json"]}[command]
    before = tree(work)
    res = invoke([command, "--model", str(inputs / file), *args])
    line = check_refused(res.output, res.exit_code, named)
    assert "type number" not in line
    assert tree(work) == before


# ---- D5: reid --candidates past the population ---------------------------------------------


def test_candidates_past_the_population_are_said(work: Path) -> None:
    """``--candidates 10^29`` at 40 users was used as every user without a word (the other
    counts past the population, --targets and attack-train's, say so)."""
    from topicslab import io as tio
    from topicslab.datamodel import TopicSets

    tio.write_sets(work / "few.parquet", TopicSets(random_profiles(40, 2), "v2",
                                                   np.arange(40, dtype=np.int64)))
    res = invoke(["reid", "--sets", "few.parquet", "--weeks", "1", "--trials", "1",
                  "--setting", "matching", "--matching", "assignment", "--candidates",
                  str(10**29), "--attack", "hamming", "--no-progress"])
    assert res.exit_code == 0, res.output
    assert f"note: --candidates {10**29:,} but only 40 users" in " ".join(res.output.split())


# ---- D6: a run's DP release and model are its own directories ------------------------------


@pytest.mark.parametrize(("args", "name"), [
    (["stats", "--sets", "{in}/pop.parquet", "--out", "run/stats"], "run/stats"),
    (["fit", "--stats", "{in}/stats", "--out", "run/model", "--types", "2", "--steps", "1",
      "--no-progress"], "run/model"),
    (["attack-train", "--sets", "{in}/pop.parquet", "--out", "run/validation", "--epochs", "0",
      "--no-progress"], "run/validation"),
], ids=["stats-over-release", "fit-over-model", "attack-over-validation"])
def test_an_output_directory_does_not_replace_a_runs_own(inputs: Path, work: Path,
                                                         args: list[str], name: str) -> None:
    """``stats --out run/stats`` and ``fit --out run/model`` replaced the run's DP release and
    model under a results.json and report that described the old ones (round 31 refused only
    the run's files)."""
    run = work / "run"
    for sub in ("stats", "model", "validation"):
        (run / sub).mkdir(parents=True)
    (run / "stages.json").write_text("{}", encoding="utf-8")
    (run / "stats" / "q_within.json").write_text("the run's", encoding="utf-8")
    (run / "model" / "model.json").write_text("the run's", encoding="utf-8")
    before = tree(work)
    res = invoke([a.format(**{"in": inputs}) for a in args])
    line = check_refused(res.output, res.exit_code, f"{name}, field '--out'")
    assert "a run's output" in line
    assert tree(work) == before


# ---- D7: a library's root-logger record at Ctrl-C ------------------------------------------

_LOGS_THEN_STOPS = """
import logging, sys
import topicslab.io as tio

def read_sets(*args, **kwargs):
    # as py4j under stats --engine spark: the Ctrl-C caught, logged with logging.exception on
    # the unconfigured root logger, and raised again
    try:
        raise KeyboardInterrupt
    except KeyboardInterrupt:
        logging.exception("KeyboardInterrupt while sending command.")
        raise

tio.read_sets = read_sets
from topicslab._main import main
sys.argv = ["topicslab", *sys.argv[1:]]
main()
"""


def test_a_librarys_logged_traceback_does_not_join_the_interrupt_line(work: Path) -> None:
    """Ctrl-C of ``stats --engine spark`` printed py4j's "ERROR:root:KeyboardInterrupt while
    sending command." and its traceback above the interrupted line."""
    import os
    import subprocess
    import sys

    from topicslab import io as tio

    env = {**os.environ, "PYTHONPATH": str(Path(tio.__file__).parents[2])}
    env.pop("TOPICSLAB_DEBUG", None)
    (work / "pop.parquet").write_bytes(b"")
    res = subprocess.run([sys.executable, "-c", _LOGS_THEN_STOPS, "qif", "--sets", "pop.parquet"],
                         capture_output=True, text=True, env=env, cwd=work, check=False)
    assert res.returncode == 130, res.stderr
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("interrupted: qif stopped"), res.stderr
