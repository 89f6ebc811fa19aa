"""Bad input, the eighth independent round (issue 15): an output directory that already holds
another command's output (a learned attack written over a fit's model, DP statistics into a
model or a run directory), disclosure's band options checked only after the simulation had
started, and the CLI as a first-time user types it: option typos, ``--opt=value``, values
glued to short options, choices in the wrong case, files and directories of another command
given as inputs.

The same contract as ``test_bad_inputs.py``: exit code 2, one line ``error: ...`` naming the
offending option, file, row or field, no traceback, and nothing written (the test's directory,
also the current directory, is unchanged, and so are the inputs). Every case fails before any
real work, so the module runs in seconds.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from refusal import invoke, invoke_refused, population_and_stats


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """300 users (taxonomy v2), their site traces, DP statistics, a one-step model, a learned
    attack (epochs 0) and a directory standing for a run's output (its stages.json)."""

    d = tmp_path_factory.mktemp("round8")
    _data, pop = population_and_stats(d)
    for args in (["fit", "--stats", str(d / "stats"), "--out", str(d / "model"), "--types",
                  "2", "--modes", "1", "--steps", "1", "--no-progress"],
                 ["attack-train", "--sets", str(pop), "--out", str(d / "attack"), "--epochs",
                  "0", "--validation", "50", "--no-progress"],
                 ["observe", "--sets", str(pop), "--out", str(d / "traces.parquet")]):
        res = invoke(args)
        assert res.exit_code == 0, res.output
    (d / "run").mkdir()
    (d / "run" / "stages.json").write_text("{}")
    (d / "reid.json").write_text("{}")
    return {"pop": pop, "dir": d}


P = "{in}/pop.parquet"
STATS = ["stats", "--sets", P, "--epsilon", "1000", "--out"]
FIT = ["fit", "--stats", "{in}/stats", "--types", "2", "--modes", "1", "--steps", "1",
       "--no-progress", "--out"]
TRAIN = ["attack-train", "--sets", P, "--no-progress", "--epochs", "0", "--out"]
RUN = ["run", "--preset", "smoke", "--users", "500", "--out"]
REID = ["reid", "--sets", P, "--no-progress", "--trials", "1", "--targets", "10"]
SAMPLE = ["sample", "--users", "10", "--seed", "1", "--out", "{out}.parquet", "--model"]
DISC = ["disclosure", "--personas", "3", "--epochs", "2"]
MIX = "there would mix the two"

CASES: list[tuple[str, list[str], str]] = [
    # defects of this round, fixed: a directory holding another command's output was written
    # into (attack-train over a fit's model.json, leaving its checkpoints and history beside
    # a learned attack; stats' release files into a model, an attack or a run directory)
    ("train-out-is-a-fit-model", [*TRAIN, "{in}/model"],
     "field '--out': holds a fitted model (topicslab fit) (model.json); writing a learned"),
    ("train-out-is-stats", [*TRAIN, "{in}/stats"], MIX),
    ("train-out-is-a-run", [*TRAIN, "{in}/run"], "(stages.json)"),
    ("stats-out-is-a-fit-model", [*STATS, "{in}/model"], MIX),
    ("stats-out-is-an-attack", [*STATS, "{in}/attack"], "holds a learned attack"),
    ("stats-out-is-a-run", [*STATS, "{in}/run"], MIX),
    ("fit-out-is-an-attack", [*FIT, "{in}/attack"], MIX),
    ("fit-out-is-a-run", [*FIT, "{in}/run"], MIX),
    ("run-out-is-a-fit-model", [*RUN, "{in}/model"], MIX),
    ("run-out-is-stats", [*RUN, "{in}/stats"], "holds DP statistics"),
    # defect of this round, fixed: --sides/--n-sigma/--smoothing were checked only when the
    # bands were drawn, after the progress bar (two lines) and the training simulation
    ("disc-sides-wrong-case", [*DISC, "--sides", "Two"], "field '--sides'"),
    ("disc-n-sigma-nan", [*DISC, "--n-sigma", "nan"], "field '--n-sigma'"),
    ("disc-smoothing-negative", [*DISC, "--smoothing=-1"], "field '--smoothing'"),
    # new kinds that were already refused: the CLI as typed
    ("option-typo", ["reid", "--set", P], "No such option: --set"),
    ("equals-negative", ["population", "--users=-5", "--out=p.parquet"], "'--users'"),
    ("glued-short-value", ["population", "-n5x"], "'--users'"),
    ("glued-short-out-dash", ["population", "-n", "1000", "-o-p.parquet"],
     "field '--out': the name begins with '-'"),
    ("extra-positional", ["population", "extra", "--users", "1000"], "unexpected extra"),
    ("convert-three-paths", ["convert", P, "o.csv", "x.csv"], "unexpected extra"),
    ("taxonomy-upper-case", ["population", "--taxonomy", "V2", "--out", "p.parquet"],
     "field '--taxonomy'"),
    ("fit-model-wrong-case", [*FIT, "m", "--model", "Paper"], "field '--model'"),
    ("reid-attack-wrong-case", [*REID, "--attack", "Hamming"], "field '--attack'"),
    ("reid-setting-wrong-case", [*REID, "--setting", "Matching"], "field '--setting'"),
    ("reid-matching-typo", [*REID[:6], "--setting", "matching", "--matching", "asignment"],
     "field '--matching'"),
    ("reid-objective-without-assignment", [*REID, "--objective", "posterior"],
     "field '--objective'"),
    ("reid-figure-pdf", [*REID, "--bounds", "--figure", "f.pdf"], "field '--figure'"),
    ("reid-figure-is-a-directory", [*REID, "--bounds", "--figure", "{in}/run"],
     "field '--figure'"),
    # files and directories of another command given as inputs
    ("sample-model-is-an-attack", [*SAMPLE, "{in}/attack"],
     "attack, field '--model': is a directory holding a learned attack"),
    ("sample-model-is-stats", [*SAMPLE, "{in}/stats"],
     "stats, field '--model': is a directory holding DP statistics"),
    ("reid-attack-model-is-a-fit", [*REID, "--attack", "learned", "--attack-model",
                                    "{in}/model"],
     "model, field '--attack-model': is a directory holding a fitted model"),
    ("reid-sets-is-traces", ["reid", "--sets", "{in}/traces.parquet"], "give it as --traces"),
    ("reid-sets-is-json", [*REID[:1], "--sets", "{in}/reid.json"], "cannot tell the format"),
    ("fit-stats-is-a-model", ["fit", "--stats", "{in}/model", "--out", "m"], "q_within"),
    ("run-stats-is-a-model", [*RUN[:3], "--stats", "{in}/model", "--out", "o"], "q_within"),
    ("train-sets-is-traces", ["attack-train", "--sets", "{in}/traces.parquet", "--out", "a"],
     "holds site traces"),
    ("population-params-is-a-model", ["population", "--params", "{in}/model/model.json",
                                      "--out", "p.parquet"], "field '--params'"),
    ("stats-explain-with-sets", ["stats", "--explain", "{in}/stats", "--sets", P],
     "field '--sets'"),
]


@pytest.mark.parametrize(("name", "args", "named"), CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_refused(inputs: dict[str, Path], work: Path, name: str,
                              args: list[str], named: str) -> None:
    d = inputs["dir"]
    invoke_refused(invoke, args, d, work, named)


def test_an_output_of_the_same_kind_is_still_replaced(inputs: dict[str, Path],
                                                      work: Path) -> None:
    """The refusal above is for another command's output: a fit over an earlier fit, stats
    over an earlier release and a user's directory with other files are written as before."""
    d = inputs["dir"]
    for args in ([*FIT, str(work / "model")], [*FIT, str(work / "model")],
                 [*STATS, str(work / "stats")], [*STATS, str(work / "stats")]):
        args = [a.format(**{"in": d}) for a in args]
        res = invoke(args)
        assert res.exit_code == 0, res.output
    (work / "mine").mkdir()
    (work / "mine" / "notes.txt").write_text("x")
    res = invoke([
        a.format(**{"in": d}) for a in [*STATS, str(work / "mine")]])
    assert res.exit_code == 0, res.output
    assert (work / "mine" / "notes.txt").read_text() == "x"
    assert (work / "mine" / "q_within.json").is_file()
