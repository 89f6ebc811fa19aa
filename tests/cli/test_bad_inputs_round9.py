"""Bad input, the ninth independent round (issue 15): output locations that pass ``access()``
for root but take no files (/proc, /sys; the write failed after the work, exit code 1), DP
statistics and an interrupted fit that the output-kind check did not recognise (a release
without q_within.json or its ledger, the older schema's qwithin.json, a fit's checkpoints
without model.json yet), an option that does not apply typed at its default value
(``disclosure --example --sides two``, ``stats --explain --k 5``, ``validate --tolerance 0.02``
without --risk), and ``validate``'s options, which no round had reached.

The same contract as ``test_bad_inputs.py``: exit code 2, one line ``error: ...`` naming the
offending option, file, row or field, no traceback, and nothing written (the test's directory,
also the current directory, is unchanged, and so are the inputs).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from refusal import check_refused, fit_small_model, invoke, population_and_stats, tree


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """300 users (taxonomy v2), DP statistics, a one-step model; copies of the statistics and
    the model cut down to what the output-kind check must still recognise."""

    d = tmp_path_factory.mktemp("round9")
    _data, pop = population_and_stats(d)
    fit_small_model(invoke, d)
    # a release under the older names, without its ledger
    shutil.copytree(d / "stats", d / "legacy")
    (d / "legacy" / "q_within.json").rename(d / "legacy" / "qwithin.json")
    (d / "legacy" / "privacy_ledger.json").unlink()
    for name in ("q_single.json", "q_across.json"):
        (d / "legacy" / name).unlink()
    # what an interrupted fit leaves: checkpoints, no model yet
    shutil.copytree(d / "model", d / "interrupted")
    for name in ("model.json", "model.safetensors", "fit_history.json"):
        (d / "interrupted" / name).unlink()
    return {"pop": pop, "dir": d}


P = "{in}/pop.parquet"
S = "{in}/stats"
M = "{in}/model"
STATS = ["stats", "--sets", P, "--epsilon", "1000", "--out"]
FIT = ["fit", "--stats", S, "--types", "2", "--modes", "1", "--steps", "1", "--no-progress",
       "--out"]
TRAIN = ["attack-train", "--sets", P, "--no-progress", "--epochs", "0", "--out"]
VAL = ["validate", "--stats", S, "--model", M]
J = ["--json", "v.json"]
EXAMPLE = ["disclosure", "--example"]
PROC = "directory /proc is not writable"
MIX = "there would mix the two"
NOT_FOR_EXAMPLE = "which --example does not run"

CASES: list[tuple[str, list[str], str]] = [
    # defects of this round, fixed. 1: /proc passes access(W_OK) for root, so the work ran
    # and the write failed after it (FileNotFoundError, exit code 1)
    ("validate-json-in-proc", [*VAL, "--json", "/proc/v.json"], PROC),
    ("observe-out-in-proc", ["observe", "--sets", P, "--out", "/proc/t.parquet"], PROC),
    ("convert-target-in-proc", ["convert", P, "/proc/o.csv"], PROC),
    ("stats-out-in-proc", [*STATS, "/proc/st"], PROC),
    ("fit-out-is-proc", [*FIT, "/proc"], "field '--out': directory is not writable"),
    ("train-out-in-proc", [*TRAIN, "/proc/a"], PROC),
    ("reid-json-in-proc", ["reid", "--sets", P, "--trials", "1", "--targets", "10", "--json",
                           "/proc/r.json"], PROC),
    ("disclosure-figures-in-proc", ["disclosure", "--personas", "3", "--epochs", "2",
                                    "--figures", "/proc/figs"], PROC),
    ("disclosure-json-in-proc", [*EXAMPLE, "--json", "/proc/d.json"], PROC),
    # 2: a release without q_within.json and its ledger, and an interrupted fit's checkpoints,
    # were not recognised: fit and attack-train wrote into them
    ("fit-out-is-a-legacy-release", [*FIT, "{in}/legacy"], MIX),
    ("train-out-is-a-legacy-release", [*TRAIN, "{in}/legacy"], "holds DP statistics"),
    ("stats-out-is-an-interrupted-fit", [*STATS, "{in}/interrupted"],
     "(checkpoints/checkpoint.pt)"),
    ("train-out-is-an-interrupted-fit", [*TRAIN, "{in}/interrupted"], MIX),
    # 3: an option that does not apply, typed at its default value, was accepted
    ("example-whitebox", [*EXAMPLE, "--whitebox"], NOT_FOR_EXAMPLE),
    ("example-sides-two", [*EXAMPLE, "--sides", "two"], "field '--sides'"),
    ("example-personas-200", [*EXAMPLE, "--personas", "200"], "field '--personas'"),
    ("example-seed-0", [*EXAMPLE, "--seed", "0"], "field '--seed'"),
    ("explain-k-5", ["stats", "--explain", S, "--k", "5"], "field '--k'"),
    ("explain-epsilon-ln3", ["stats", "--explain", S, "--epsilon", "ln3"], "field '--epsilon'"),
    ("stats-local-chunk-users-default", [*STATS, "st", "--engine", "local", "--chunk-users",
                                         "1048576"], "field '--chunk-users'"),
    ("validate-risk-trials-2-without-risk", [*VAL, *J, "--risk-trials", "2"],
     "field '--risk-trials'"),
    ("validate-tolerance-default-without-risk", [*VAL, *J, "--tolerance", "0.02"],
     "field '--tolerance'"),
    ("validate-seed-0-with-synthetic", [*VAL, *J, "--population", P, "--synthetic", P,
                                        "--seed", "0"], "field '--seed'"),
    ("qif-sets-with-epochs-1", ["qif", "--sets", P, "--epochs", "1"], "field '--epochs'"),
    # new kinds that already passed: validate's options and outputs
    ("validate-without-json", VAL, "Missing option '--json'"),
    ("validate-json-is-a-directory", [*VAL, "--json", "{in}/stats"], "is an existing directory"),
    ("validate-json-txt", [*VAL, "--json", "v.txt"], "must end in .json"),
    ("validate-json-inside-model", [*VAL, "--json", M + "/v.json"], "input --model"),
    ("validate-json-dotdot", [*VAL, "--json", ".."], "an output file name is needed"),
    ("validate-risk-without-population", [*VAL, *J, "--risk"], "give --population"),
    ("validate-tolerance-nan", [*VAL, *J, "--population", P, "--risk", "--tolerance", "nan"],
     "'--tolerance'"),
    ("validate-weeks-past-population", [*VAL, *J, "--population", P, "--weeks", "9"],
     "field '--weeks'"),
    ("validate-users-without-population", [*VAL, *J, "--users", "10"], "field '--users'"),
    ("validate-model-is-stats", ["validate", "--stats", S, "--model", S, *J],
     "field '--model': is a directory holding DP statistics"),
    ("validate-stats-is-a-model", ["validate", "--stats", M, "--model", M, *J], "q_within"),
    ("validate-json-twice", [*VAL, *J, "--json", "w.json"], "more than once"),
    # output edges: a directory that is a file, a missing directory on /dev/shm, ., ..
    ("fit-out-is-a-file", [*FIT, P], "is an existing file"),
    ("population-out-missing-dir-on-shm", ["population", "--users", "100", "--out",
                                           "/dev/shm/topicslab-no-such-dir/p.parquet"],
     "does not exist"),
    ("sample-out-dot", ["sample", "--model", M, "--users", "10", "--seed", "1", "--out", "."],
     "an output file name is needed"),
    ("convert-target-dotdot", ["convert", P, ".."], "an output file name is needed"),
    ("example-figures", [*EXAMPLE, "--figures", "f"], "field '--figures'"),
    ("example-no-whitebox", [*EXAMPLE, "--no-whitebox"], NOT_FOR_EXAMPLE),
]


@pytest.mark.parametrize(("name", "args", "named"), CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_refused(inputs: dict[str, Path], work: Path, name: str,
                              args: list[str], named: str) -> None:
    d = inputs["dir"]
    before, inputs_before = tree(work), tree(d)
    filled = [a.format(**{"in": d}) for a in args]
    res = invoke(filled)
    check_refused(res.output, res.exit_code, named)
    assert tree(work) == before, "a refused command wrote into its output location"
    assert tree(d) == inputs_before, "a refused command changed an input"


def test_a_user_directory_and_a_same_kind_output_still_receive_the_output(
        inputs: dict[str, Path], work: Path) -> None:
    """The wider output-kind check refuses no directory it should not: an empty one, one of a
    user's files, and a fit over an interrupted fit's checkpoints (what --resume is for)."""
    d = inputs["dir"]
    (work / "mine").mkdir()
    (work / "mine" / "notes.txt").write_text("x")
    (work / "empty").mkdir()
    shutil.copytree(d / "interrupted", work / "interrupted")
    for args in ([*STATS, str(work / "mine")], [*TRAIN, str(work / "empty")],
                 [*FIT, str(work / "interrupted")]):
        res = invoke([a.format(**{"in": d}) for a in args])
        assert res.exit_code == 0, res.output
    assert (work / "mine" / "notes.txt").read_text() == "x"
    assert (work / "interrupted" / "model.json").is_file()


def test_standard_output_closed(work: Path) -> None:
    """``>&-``: the command ran, then flushing the missing standard output at exit was a
    traceback (AttributeError) and exit code 1."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-m", "topicslab", "qif", "--m", "10"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, text=True,
                          preexec_fn=lambda: os.close(1), check=False)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr


def test_sigterm_leaves_no_temporary(work: Path) -> None:
    """``kill`` (SIGTERM) ended the process on the spot: exit code 143, no line, and the
    atomic write's hidden temporary (``.big.parquet.XXXXXXXX.tmp``) left behind. It now ends
    as Ctrl-C does: one ``interrupted:`` line, exit code 130, nothing left."""
    import signal
    import time

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen([sys.executable, "-m", "topicslab", "population", "--users",
                             "3000000", "--chunk-users", "100000", "--out", "big.parquet"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
                            text=True)
    deadline = time.monotonic() + 60
    while not any(work.iterdir()) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)  # until the write has begun
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1].startswith("interrupted: population stopped"), err
    assert list(work.iterdir()) == []
