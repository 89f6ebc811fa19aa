"""Bad input, the nineteenth independent round (issue 15): ``run --release-weeks`` named a
duplicate or negative week ``field 'weeks'``, and took a release of one week (the fit then
learnt, without a word, that no topic persists: ``fit`` and ``run --stats`` refuse such a
release) and weeks that are not consecutive (0,2 fitted a two-week gap as one week, 1,0 a week
backwards); a directory named ``report.html`` or ``results.json`` in a run's --out failed the
run at its end (IsADirectoryError, exit code 1), and two runs into one --out at once left the
report and release of one with the model of the other; ``reid --traces --k 5`` (the default,
typed) was ignored; ``population --routine`` was ignored without a word with ``--weeks 1`` or
below the ``--params`` file's ``profile_repeat``; ``stats --engine stream --chunk-users 2^63``
was an OverflowError (exit code 1), and a stream refused in the middle of its pass (a week of
more than ``--k`` topics, a user listed twice) printed the progress bar's line above the error.

The same contract as ``test_bad_inputs.py``: exit code 2, one line ``error: ...`` naming the
offending file, row or field, no traceback, and nothing written.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from refusal import check_refused, invoke, population_and_stats, refusal_test


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """300 users (v2, 4 weeks), their traces and a CSV copy; the same file with user 5 listed
    again in its last row group; population parameters with ``profile_repeat`` 0.5; and three
    run directories with a directory named report.html or results.json, or a file named
    model."""
    d = tmp_path_factory.mktemp("round19")
    _, pop = population_and_stats(d)
    for args in (["observe", "--sets", str(pop), "--out", str(d / "traces.parquet")],
                 ["convert", str(pop), str(d / "pop.csv")]):
        res = invoke(args)
        assert res.exit_code == 0, res.output
    table = pq.read_table(pop)
    pq.write_table(pa.concat_tables([table, table.slice(5, 1)]), d / "dup.parquet",
                   row_group_size=100)
    from topicslab.population.params import load_reference

    params = json.loads(load_reference("v2").to_json())
    params["profile_repeat"] = 0.5
    (d / "params.json").write_text(json.dumps(params), encoding="utf-8")
    for name, kind in (("report.html", "dir"), ("results.json", "dir"), ("model", "file")):
        run = d / f"run-{name}"
        run.mkdir()
        (run / "stages.json").write_text("{}", encoding="utf-8")
        if kind == "dir":
            (run / name).mkdir()
        else:
            (run / name).write_text("x", encoding="utf-8")
    return d



RUN = ["run", "--out", "{out}", "-q", "--no-disclosure", "--fit-steps", "1", "--trials", "1",
       "--targets", "16", "--fidelity-trials", "1"]
SMOKE = [*RUN, "--preset", "smoke"]
SETS = [*SMOKE, "--sets", "{in}/pop.parquet"]  # (300 users: quick, were the case accepted)
STREAM = ["stats", "--out", "{out}", "--epsilon", "1000", "--engine", "stream"]

CASES: list[tuple[str, list[str], str]] = [
    # field 'weeks': the run has no --weeks
    ("run-release-weeks-duplicate", [*SMOKE, "--release-weeks", "0,0"],
     "field '--release-weeks': weeks must be distinct"),
    ("run-release-weeks-negative", [*SMOKE, "--release-weeks", "-1"],
     "field '--release-weeks': weeks must be >= 0"),
    # accepted: a model of 4 weeks fitted to a release without its across-week statistic
    ("run-release-weeks-one-week", [*SETS, "--release-weeks", "0"],
     "field '--release-weeks': a release of one week (0) has no across-week statistic"),
    ("run-release-weeks-one-late-week", [*SETS, "--release-weeks", "3"],
     "field '--release-weeks': a release of one week (3)"),
    # accepted: pairs of released weeks that are not one week apart, fitted as if they were
    ("run-release-weeks-with-a-gap", [*SETS, "--release-weeks", "0,2"],
     "field '--release-weeks': weeks must be consecutive and increasing"),
    ("run-release-weeks-backwards", [*SETS, "--release-weeks", "1,0"],
     "got 1,0"),
    ("run-release-weeks-not-consecutive-at-the-end", [*SETS, "--release-weeks", "0,1,3"],
     "got 0,1,3"),
    # IsADirectoryError at the run's end, exit code 1; a file named model: after two stages
    ("run-report-html-a-directory", ["run", "--out", "{in}/run-report.html", "--sets",
                                     "{in}/pop.parquet", *RUN[3:]],
     "run-report.html/report.html, field '--out': is a directory where the run writes a file"),
    ("run-results-json-a-directory", ["run", "--out", "{in}/run-results.json", "--sets",
                                      "{in}/pop.parquet", *RUN[3:]],
     "results.json, field '--out': is a directory where the run writes a file"),
    ("run-model-a-file", ["run", "--out", "{in}/run-model", "--sets", "{in}/pop.parquet",
                          *RUN[3:]],
     "run-model/model, field '--out': is a file where the run writes a directory"),
    # typed at its default value, ignored
    ("reid-traces-k-at-its-default", ["reid", "--traces", "{in}/traces.parquet", "--k", "5",
                                      "--no-progress"], "field '--k'"),
    # ignored without a word
    ("population-routine-with-one-week", ["population", "-n", "1000", "--weeks", "1",
                                          "--routine", "0.5", "--out", "{out}.parquet"],
     "field '--routine': --routine repeats last week's profile, and --weeks 1 has no last"),
    ("population-routine-below-the-params", ["population", "-n", "1000", "--routine", "0.2",
                                             "--params", "{in}/params.json",
                                             "--out", "{out}.parquet"],
     "params.json, field '--routine': --routine 0.2 is below the profile_repeat 0.5"),
    # OverflowError: Python int too large to convert to C long, exit code 1
    ("stats-stream-chunk-users-past-64-bits",
     [*STREAM, "--sets", "{in}/pop.parquet", "--chunk-users", str(2**63)], "'--chunk-users'"),
    # the bar's line, then the error
    ("stats-stream-week-past-k", [*STREAM, "--sets", "{in}/pop.parquet", "--k", "3"],
     "row 1, field 'epoch_0_topics': user 0 has 5 distinct topics"),
    ("stats-stream-csv-week-past-k", [*STREAM, "--sets", "{in}/pop.csv", "--k", "3"],
     "field 'epoch_0_topics': user 0 has 5 distinct topics"),
    ("stats-stream-user-listed-twice",
     [*STREAM, "--sets", "{in}/dup.parquet", "--chunk-users", "100"],
     "dup.parquet, row 301, field 'user_id': user id 5 appears more than once"),
]


test_bad_input_is_refused = refusal_test(CASES)


@pytest.mark.skipif(sys.platform == "win32", reason="flock")
def test_a_second_run_into_an_out_being_written_is_refused(inputs: Path, work: Path) -> None:
    import fcntl

    out = work / "busy"
    out.mkdir()
    held = os.open(out, os.O_RDONLY)  # what a run in progress holds (an flock of --out)
    try:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        res = invoke([a.format(**{"in": inputs, "out": out}) for a in RUN]
                     + ["--sets", str(inputs / "pop.parquet")])
        check_refused(res.output, res.exit_code,
                      "field '--out': another topicslab run is writing this directory now")
        assert out.is_dir() and not any(out.iterdir())
    finally:
        os.close(held)
    # and once it is done, the same command runs
    res = invoke([a.format(**{"in": inputs, "out": out}) for a in RUN]
                 + ["--sets", str(inputs / "pop.parquet"), "--release-weeks", "1,2,3"])
    assert res.exit_code == 0, res.output
    ledger = json.loads((out / "stats" / "privacy_ledger.json").read_text(encoding="utf-8"))
    assert ledger["contribution_bounding"]["weeks"] == [1, 2, 3]


def test_consecutive_release_weeks_and_one_week_models_pass() -> None:
    from topicslab.experiment.presets import Preset

    assert Preset(users=1000, stats_weeks=(1, 2, 3)).release_weeks == (1, 2, 3)
    assert Preset(users=1000, weeks=1, stats_weeks=(0,)).release_weeks == (0,)
    assert Preset(users=1000, weeks=8, stats_weeks=(6, 7)).release_weeks == (6, 7)


def test_the_stream_engine_still_releases(inputs: Path, work: Path) -> None:
    res = invoke(["stats", "--sets", str(inputs / "pop.parquet"), "--out", str(work / "s"),
                  "--engine", "stream", "--chunk-users", "64", "--epsilon", "1000"])
    assert res.exit_code == 0, res.output
    assert (work / "s" / "privacy_ledger.json").is_file()
