"""Bad input, the tenth independent round (issue 15): topic sets of another k given to ``run
--sets`` (refused only at the DP stage, after OUT/stages.json was written, without the file's
name) and to ``validate --synthetic`` (compared with a population of another k, silently), a
``run --stats`` directory without statistics not named as ``--stats``, and the Python API's
public functions given the wrong type (an ``AttributeError`` deep inside, a string read as
True or letter by letter, ``experiment.run`` leaving an empty OUT behind).

The same contract as ``test_bad_inputs.py``: exit code 2, one line ``error: ...`` naming the
offending option, file, row or field, no traceback, and nothing written (the test's directory,
also the current directory, is unchanged, and so are the inputs).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from refusal import check_refused, fit_small_model, invoke, random_profiles, tree

from topicslab import io as tio


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """300 users (taxonomy v2, k = 5), the same users at k = 8, DP statistics, a one-step
    model, and the population's site traces."""
    from topicslab import dp, population
    from topicslab.datamodel import TopicSets

    d = tmp_path_factory.mktemp("round10")
    sets = random_profiles(300, 4, seed=0)
    data = TopicSets(sets, "v2", np.arange(300, dtype=np.int64))
    tio.write_sets(d / "pop.parquet", data)
    tio.write_sets(d / "k8.parquet", population.generate(300, 4, k=8, seed=1))
    dp.save_statistics(d / "stats", dp.compute_statistics(data, epsilon=1e3, delta=1e-6,
                                                          seed=0))
    fit_small_model(invoke, d)
    res = invoke(["observe", "--sets", str(d / "pop.parquet"), "--out",
                              str(d / "traces.parquet")])
    assert res.exit_code == 0, res.output
    return {"dir": d}


P = "{in}/pop.parquet"
K8 = "{in}/k8.parquet"
S = "{in}/stats"
M = "{in}/model"
TR = "{in}/traces.parquet"
RUN = ["run", "--preset", "smoke", "--quiet", "--no-disclosure", "--out", "o"]
VAL = ["validate", "--stats", S, "--model", M, "--json", "v.json"]
FIT = ["fit", "--stats", S, "--types", "2", "--modes", "1", "--steps", "1", "--no-progress",
       "--out", "m"]
TRAIN = ["attack-train", "--sets", P, "--no-progress", "--epochs", "0", "--out", "a"]
REID = ["reid", "--sets", P, "--trials", "1", "--targets", "10", "--no-progress"]

CASES: list[tuple[str, list[str], str]] = [
    # defects of this round, fixed. 1: sets of another k failed at the DP stage, after
    # OUT/stages.json was written, with no file named
    ("run-sets-of-k8", [*RUN, "--sets", K8], "k8.parquet, row 1, field '--sets'"),
    # 2: synthetic sets of another k were compared with the population, silently
    ("validate-synthetic-of-k8", [*VAL, "--population", P, "--synthetic", K8],
     "field '--synthetic': holds 8 topics per week"),
    # 3: a --stats directory without statistics was named, but not as --stats
    ("run-stats-is-a-model", [*RUN, "--stats", M], "model, field '--stats'"),
    ("run-stats-is-the-inputs-dir", [*RUN, "--stats", "{in}"], "field '--stats'"),
    # new kinds that already passed: run's inputs made by other commands
    ("run-sets-is-traces", [*RUN, "--sets", TR], "holds site traces"),
    ("run-sets-is-a-stats-dir", [*RUN, "--sets", S],
     "field '--sets': is a directory holding DP statistics (topicslab stats), not topic sets"),
    ("run-stats-is-a-ledger-file", [*RUN, "--stats", S + "/privacy_ledger.json"],
     "field '--stats': is a file"),
    ("run-stats-with-taxonomy", [*RUN, "--stats", S, "--taxonomy", "v1"],
     "field '--taxonomy'"),
    ("run-learned-trials-without-learned", [*RUN, "--learned-trials", "2"],
     "field '--learned-trials'"),
    ("run-fit-minutes-inf", [*RUN, "--fit-minutes", "inf"], "field '--fit-minutes'"),
    # options at the edge of their range
    ("train-hard-fraction-nan", [*TRAIN, "--hard-fraction", "nan"], "field '--hard-fraction'"),
    ("train-weeks-past-the-sets", [*TRAIN, "--weeks", "9"], "field '--weeks'"),
    ("fit-lr-nan", [*FIT, "--lr", "nan"], "field '--lr'"),
    ("fit-target-negative", [*FIT, "--target", "-1"], "field '--target'"),
    ("fit-threads-past-the-cpus", [*FIT, "--threads", "100000"], "field '--threads'"),
    ("fit-json-same-as-export", [*FIT, "--export-release", "o.json", "--json", "o.json"],
     "field '--json'"),
    ("stats-split-negative", ["stats", "--sets", P, "--epsilon", "1000", "--out", "st",
                              "--split", "-0.25,0.75,0.5"], "field '--split'"),
    ("stats-epsilon-inf", ["stats", "--sets", P, "--epsilon", "inf", "--out", "st"],
     "field '--epsilon'"),
    ("sample-weeks-2000", ["sample", "--model", M, "--seed", "1", "--users", "10", "--weeks",
                           "2000", "--out", "s.parquet"], "field '--weeks'"),
    ("reid-weeks-range-backwards", [*REID, "--weeks", "4..2"], "field '--weeks'"),
    ("reid-k-with-traces", ["reid", "--traces", TR, "--k", "3", "--no-progress"],
     "field '--k'"),
    ("reid-attack-twice", [*REID, "--attack", "hamming,hamming"], "field '--attack'"),
    ("reid-device-with-hamming", [*REID, "--attack", "hamming", "--device", "cuda"],
     "field '--device'"),
    ("population-k-past-v1", ["population", "--users", "100", "--taxonomy", "v1", "--k",
                              "350", "--out", "p.parquet"], "field '--k'"),
    ("observe-sites-huge", ["observe", "--sets", P, "--out", "t.parquet", "--sites",
                            "100000000000"], "field '--sites'"),
    ("convert-shards-past-users", ["convert", P, "o.tfrecord", "--shards", "1000"],
     "field '--shards'"),
    ("disclosure-epochs-1024", ["disclosure", "--personas", "3", "--epochs", "1024"],
     "field '--epochs'"),
    ("validate-population-of-another-taxonomy", [*VAL, "--population", "{in}/v1.parquet"],
     "v1.parquet"),
]


@pytest.mark.parametrize(("name", "args", "named"), CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_refused(inputs: dict[str, Path], work: Path, name: str,
                              args: list[str], named: str) -> None:
    d = inputs["dir"]
    if "v1.parquet" in " ".join(args) and not (d / "v1.parquet").exists():
        from topicslab import population
        tio.write_sets(d / "v1.parquet", population.generate(300, 4, taxonomy="v1", seed=2))
    before, inputs_before = tree(work), tree(d)
    res = invoke([a.format(**{"in": d}) for a in args])
    check_refused(res.output, res.exit_code, named)
    assert tree(work) == before, "a refused command wrote into its output location"
    assert tree(d) == inputs_before, "a refused command changed an input"


def _api_cases() -> list[tuple[str, Any, type[Exception], str]]:
    from topicslab import api, experiment, model, population, validate

    return [
        ("answer-probability-of-a-string", lambda d: api.answer_probability("no"), TypeError,
         "in_profile"),
        ("answer-probability-mechanism-string",
         lambda d: api.answer_probability(True, "v2"), TypeError, "mechanism"),
        ("generate-params-dict", lambda d: population.generate(10, params={"a": 1}),
         TypeError, "params"),
        ("save-model-none", lambda d: model.save_model(d / "mm", None), TypeError,
         "save_model"),
        ("distinct-topics-of-an-array",
         lambda d: validate.distinct_topics(np.zeros((3, 4, 5), np.int16)), TypeError,
         "distinct_topics"),
        ("fit-quality-model-none",
         lambda d: validate.fit_quality(__import__("topicslab").dp.load_statistics(d / S[5:]),
                                        None), TypeError, "model"),
        ("fidelity-attacks-string",
         lambda d: validate.fidelity(tio.read_sets(d / P[5:]), tio.read_sets(d / P[5:]),
                                     attacks="hamming"), TypeError, "attacks"),
        ("verdict-none", lambda d: experiment.verdict(None), TypeError, "reid"),  # type: ignore[arg-type]
    ]


@pytest.mark.parametrize("case", _api_cases(), ids=[c[0] for c in _api_cases()])
def test_api_refuses_the_wrong_type(inputs: dict[str, Path], work: Path,
                                    case: tuple[str, Any, type[Exception], str]) -> None:
    """A wrong type failed deep inside (AttributeError) or was read wrongly; now a clear
    error naming the argument, and nothing written."""
    _, call, error, named = case
    before = tree(work)
    with pytest.raises(error, match=named):
        call(inputs["dir"])
    assert tree(work) == before


@pytest.mark.parametrize("kwargs", [{"seed": -1}, {"sets_path": "no-such.parquet"},
                                    {"stats_dir": "no-such-stats"}],
                         ids=["seed-negative", "sets-missing", "stats-missing"])
def test_api_run_leaves_no_output_directory(work: Path, kwargs: dict[str, Any]) -> None:
    """experiment.run created OUT before checking its seed and inputs: an empty directory was
    left behind (and a missing --sets was a bare FileNotFoundError)."""
    from topicslab import experiment
    from topicslab.errors import TopicsLabError

    with pytest.raises(TopicsLabError):
        experiment.run("smoke", work / "o", **kwargs)
    assert not (work / "o").exists()
