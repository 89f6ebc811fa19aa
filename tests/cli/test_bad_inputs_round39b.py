"""Bad input, the thirty-ninth round continued (``topicslab run`` over existing run
directories: the scenarios round 39 had no time for).

- ``run --sets R/synth.parquet --out R`` (a run's own synthetic sample as the next run's
  population): the sample stage replaced the input with the new sample (exit 0); results.json
  named the input's old fingerprint, and the same command then started over (the input's
  fingerprint had changed). The Python API did the same.
- ``run`` over a finished run with another option (``--seed 1``, ``--fit-steps 3``,
  ``--release-weeks 0,1``, ...): the stages redone were logged "running", as for a stage that
  never ran, without saying why; now "recomputing (its parameters changed since the recorded
  run: seed)" (the record keeps each stage's parameters) and "(fit was recomputed)" below;
  over a stages.json cut short (or of no record), every stage was "running" too, now
  "recomputing (stages.json could not be read as a record of stages)".
- ``run --out R`` while another run writes R in its first stage (its population: minutes at
  the default preset; files there, no stages.json yet): refused as "holds files but no
  stages.json, so it is not a run's output directory; choose a new or empty directory",
  where the run is refused once R is held ("another topicslab run is writing this directory
  now; wait for it to finish").
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from refusal import api_run_refused, check_refused, invoke, tree

from topicslab.errors import InputError


@pytest.fixture
def work(tmp_path: Path) -> Path:
    return tmp_path


RUN = ["run", "--preset", "smoke", "--fit-steps", "2", "--types", "2", "--targets", "50",
       "--trials", "2", "--no-disclosure", "-q", "--out"]


def _run_dir(work: Path) -> Path:
    """An earlier run's directory (its stage record, its sample and model)."""
    out = work / "r"
    (out / "model").mkdir(parents=True)
    (out / "stages.json").write_text("{}", encoding="utf-8")
    for name in ("synth.parquet", "pop.parquet", "model/model.json"):
        (out / name).write_bytes(b"PAR1 not read")
    return out


@pytest.mark.parametrize(("option", "given", "shown"), [
    ("--sets", "synth.parquet", "is the run's own synth.parquet"),
    ("--sets", "link.parquet", "is the run's own synth.parquet"),
    ("--sets", "model/model.json", "is the run's own model/model.json"),
    ("--stats", "model", "holds the run's own model/"),
])
def test_an_input_the_run_writes_in_its_own_directory_is_refused(
        work: Path, option: str, given: str, shown: str) -> None:
    """Was replaced by the run's own file as the stages ran (exit 0)."""
    out = _run_dir(work)
    (work / "link.parquet").symlink_to(out / "synth.parquet")
    path = work / given if given == "link.parquet" else out / given
    before = tree(work)
    res = invoke([*RUN, str(out), option, str(path)])
    check_refused(res.output, res.exit_code, f"field '{option}': {shown}")
    assert tree(work) == before


def test_the_python_api_refuses_an_input_the_run_writes(work: Path) -> None:
    out = _run_dir(work)
    api_run_refused(work, out, r"is the run's own synth\.parquet",
                    sets_path=out / "synth.parquet")


@pytest.mark.parametrize(("option", "given"), [("--sets", "pop.parquet"),
                                               ("--stats", "stats")])
def test_an_input_the_run_only_reads_in_its_own_directory_is_not_refused_for_it(
        work: Path, option: str, given: str) -> None:
    """A run from --sets writes no pop.parquet, one from --stats no stats/: reading them is
    not this refusal (here the run then stops at the next check, a directory where a file is
    written)."""
    out = _run_dir(work)
    (out / "stats").mkdir()
    (out / "report.html").mkdir()
    res = invoke([*RUN, str(out), option, str(out / given)])
    check_refused(res.output, res.exit_code, "report.html, field '--out': is a directory "
                                             "where the run writes a file")


# ---- a re-run with other options says why it redoes the finished stages --------------------


def _two_stages(out: Path, p: int, log: list[str]) -> None:
    from topicslab.experiment.cache import StageCache
    from topicslab.experiment.pipeline import _Runner

    def make() -> dict[str, int]:
        (out / "model.bin").write_bytes(b"w" * p)
        return {"p": p}

    runner = _Runner(out, StageCache(out), log.append)
    key, _ = runner.stage("make", {"p": p, "q": 0}, [], ["model.bin"], make)
    runner.stage("use", {}, [key], [], lambda: {"used": p})


def test_a_stage_recorded_with_other_options_says_which_changed(work: Path) -> None:
    """Was "make: running" and "use: running", as if neither had ever run (``run --seed 1``
    over a finished ``--seed 0`` run)."""
    _two_stages(work, 1, [])
    log: list[str] = []
    _two_stages(work, 2, log)
    assert log[0] == "make: recomputing (its parameters changed since the recorded run: p)"
    assert "use: recomputing (make was recomputed)" in log


def test_a_stage_recorded_without_its_parameters_says_its_inputs_changed(work: Path) -> None:
    """A record written before the parameters were kept (or edited): the reason is general."""
    _two_stages(work, 1, [])
    record = json.loads((work / "stages.json").read_text(encoding="utf-8"))
    record["make"].pop("params", None)
    (work / "stages.json").write_text(json.dumps(record), encoding="utf-8")
    log: list[str] = []
    _two_stages(work, 2, log)
    assert log[0].startswith("make: recomputing (it was recorded from other inputs")


def test_a_stage_recorded_with_the_same_options_is_reused_as_before(work: Path) -> None:
    _two_stages(work, 1, [])
    log: list[str] = []
    _two_stages(work, 1, log)
    assert log == ["make: cached", "use: cached"]


# ---- a directory another run is writing now ------------------------------------------------


@pytest.mark.parametrize("inside", [".pop.parquet.k3j9.tmp", "stages.json"])
def test_a_run_directory_another_run_writes_is_refused_as_such(work: Path,
                                                               inside: str) -> None:
    """Was "not a run's output directory; choose a new or empty directory" while the other
    run's first stage had written no stages.json yet."""
    import fcntl

    out = work / "r"
    out.mkdir()
    (out / inside).write_text("{}", encoding="utf-8")
    before = tree(work)
    fd = os.open(out, os.O_RDONLY)  # held as the other run's exclusive_dir holds it
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        res = invoke([*RUN, str(out), "--users", "300"])
    finally:
        os.close(fd)
    check_refused(res.output, res.exit_code, "r, field '--out': another topicslab run is "
                                             "writing this directory now")
    assert tree(work) == before


@pytest.mark.parametrize("text", ['{"make": {"key": "', "[]", "null", "\x00\xff"])
def test_a_record_that_cannot_be_read_says_so(work: Path, text: str) -> None:
    """Was "make: running", as for a directory where no stage had ever run."""
    _two_stages(work, 1, [])
    (work / "stages.json").write_text(text, encoding="utf-8")
    log: list[str] = []
    _two_stages(work, 1, log)
    assert log[0] == ("make: recomputing (stages.json could not be read as a record of "
                      "stages)")


@pytest.mark.parametrize("entry", ['"x"', "5", "[]", '{"summary": {}}'])
def test_a_stage_record_of_no_record_says_so(work: Path, entry: str) -> None:
    _two_stages(work, 1, [])
    record = json.loads((work / "stages.json").read_text(encoding="utf-8"))
    record["make"] = json.loads(entry)
    (work / "stages.json").write_text(json.dumps(record), encoding="utf-8")
    log: list[str] = []
    _two_stages(work, 1, log)
    assert log[0] == "make: recomputing (its record is unreadable)"


def test_the_run_s_own_hold_is_not_another_run(work: Path) -> None:
    """``topicslab run`` holds OUT and then calls ``experiment.run``, which checks OUT again:
    its own hold is not another run's."""
    from topicslab._paths import exclusive_dir
    from topicslab.experiment.pipeline import check_run_dir

    out = work / "r"
    out.mkdir()
    (out / ".pop.parquet.k3j9.tmp").write_text("{}", encoding="utf-8")
    with exclusive_dir(out, "--out"), pytest.raises(InputError, match="not a run's output"):
        check_run_dir(out, reference=True, computes_stats=True)
    (out / "stages.json").write_text("{}", encoding="utf-8")
    with exclusive_dir(out, "--out"):
        check_run_dir(out, reference=True, computes_stats=True)
