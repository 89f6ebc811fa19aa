"""Bad input, the sixth independent round (issue 15): output names that begin with ``-`` (the
``-`` of standard output, or the next option taken as the value of one left empty), paths
longer than the file system takes (as outputs and as input directories), inputs under a
regular file or on a device, options given twice under their short and long names, options
the chosen mode never reads, and the Python API's public functions given the wrong types.

The same contract as ``test_bad_inputs.py``: exit code 2, one line ``error: ...`` naming the
offending option, file, row or field, no traceback, and nothing written (the test's directory,
also the current directory, is unchanged, and so are the inputs). Every case fails before any
real work (the one fit is a single step on 300 users), so the module runs in seconds.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from refusal import fit_small_model, invoke, invoke_refused, population_and_stats

from topicslab import io as tio

#: a path of 25 directories of 200 bytes: past Linux's PATH_MAX of 4,096 bytes, while each
#: name is within the 255 bytes of one name
DEEP = "/".join(["d" * 200] * 25)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A 4-week population of 300 users (taxonomy v2), its DP statistics, a one-step model,
    an attack model (epochs 0), visits and a domain table."""

    d = tmp_path_factory.mktemp("round6")
    _data, pop = population_and_stats(d)
    fit_small_model(invoke, d)
    res = invoke(["attack-train", "--sets", str(pop), "--out", str(d / "attack"),
                              "--epochs", "0", "--validation", "50", "--no-progress"])
    assert res.exit_code == 0, res.output
    res = invoke(["observe", "--sets", str(pop), "--out",
                              str(d / "traces.parquet")])
    assert res.exit_code == 0, res.output
    (d / "visits.csv").write_text("user_id,timestamp,url\n1,2024-01-01T10:00:00Z,"
                                  "https://example.com/a\n2,2024-01-09T10:00:00Z,"
                                  "https://news.com/c\n")
    (d / "domains.csv").write_text("domain,topics\nexample.com,1;4\nnews.com,9\n")
    return {"pop": pop, "dir": d}


OBS = ["observe", "--sets", "{in}/pop.parquet"]
STATS = ["stats", "--sets", "{in}/pop.parquet", "--epsilon", "1000"]
FIT = ["fit", "--stats", "{in}/stats", "--types", "2", "--modes", "1", "--steps", "1",
       "--no-progress"]
SAMPLE = ["sample", "--model", "{in}/model", "--users", "5", "--seed", "1"]
REID = ["reid", "--sets", "{in}/pop.parquet", "--no-progress", "--trials", "1"]
TRAIN = ["attack-train", "--sets", "{in}/pop.parquet", "--no-progress", "--epochs", "0"]
SMOKE = ["run", "--preset", "smoke", "--quiet"]
DISC = ["disclosure", "-q", "--personas", "3", "--epochs", "2"]
INGEST = ["ingest", "--visits", "{in}/visits.csv", "--domains", "{in}/domains.csv", "--out",
          "{out}.parquet", "-q"]

CASES: list[tuple[str, list[str], str]] = [
    # defects of this round, fixed: "-" (standard output) as an output directory made a
    # directory named "-" and wrote the release, the model, the attack or the run into it
    ("stats-out-dash", [*STATS, "--out", "-"], "-, field '--out': the name begins with '-'"),
    ("fit-out-dash", [*FIT, "--out", "-"], "field '--out': the name begins with '-'"),
    ("attack-train-out-dash", [*TRAIN, "--out", "-"], "field '--out'"),
    ("disc-figures-dash", [*DISC, "--figures", "-"], "field '--figures'"),
    ("run-out-dash", [*SMOKE, "--out", "-"], "field '--out'"),
    # ... and so did the next option, taken as the value of an --out left empty
    ("fit-out-takes-the-next-option", [*FIT[:-1], "--out", "--no-progress"],
     "--no-progress, field '--out': the name begins with '-'"),
    ("attack-train-out-takes-the-next-option", [*TRAIN[:3], "--epochs", "0", "--out",
                                                "--no-progress"], "field '--out'"),
    ("run-out-takes-the-next-option", ["run", "--preset", "smoke", "--out", "-q"],
     "-q, field '--out'"),
    # a file name beginning with "-": refused the same way (it was refused only by chance,
    # by its extension)
    ("reid-json-dash", [*REID, "--targets", "10", "--json", "-"], "field '--json'"),
    ("obs-out-dash-name", [*OBS, "--out", "-t.parquet"],
     "field '--out': the name begins with '-'"),
    # a path past PATH_MAX: as an output, refused up front; as an input directory it ended
    # in "OSError: [Errno 36] File name too long", exit code 1
    ("obs-out-past-path-max", [*OBS, "--out", "{out}/" + DEEP + "/t.parquet"],
     "field '--out': the path is"),
    ("run-out-past-path-max", [*SMOKE, "--out", "{out}/" + DEEP], "field '--out'"),
    ("fit-stats-past-path-max", ["fit", "--stats", "{out}/" + DEEP, "--out", "{out}",
                                 "--no-progress"], "longer than the file system takes"),
    ("sample-model-past-path-max", ["sample", "--model", "{out}/" + DEEP, "--users", "5",
                                    "--seed", "1", "--out", "{out}.parquet"],
     "longer than the file system takes"),
    ("reid-attack-model-past-path-max", [*REID, "--attack", "learned", "--attack-model",
                                         "{out}/" + DEEP], "longer than the file system"),
    ("explain-past-path-max", ["stats", "--explain", "{out}/" + DEEP],
     "longer than the file system takes"),
    ("convert-source-past-path-max", ["convert", "{out}/" + DEEP + "/x.parquet",
                                      "{out}.csv"], "longer than the file system takes"),
    ("fit-stats-name-300-bytes", ["fit", "--stats", "a" * 300, "--out", "{out}",
                                  "--no-progress"], "longer than the file system takes"),
    # new kinds that were already refused: inputs under a regular file, or a device
    ("obs-sets-under-a-file", ["observe", "--out", "{out}.parquet", "--sets",
                               "{in}/pop.parquet/x.parquet"], "no such file"),
    ("fit-stats-under-a-file", ["fit", "--stats", "{in}/pop.parquet/s", "--out", "{out}"],
     # round 13: said "no q_within.json in this directory"
     "pop.parquet/s, field '--stats': does not exist"),
    ("run-stats-under-a-file", [*SMOKE, "--out", "{out}", "--stats", "{in}/pop.parquet/s"],
     "field '--stats': directory not found"),
    ("obs-sets-dev-zero", ["observe", "--sets", "/dev/zero", "--out", "{out}.parquet"],
     "/dev/zero, field '--sets'"),
    ("disc-script-dev-zero", ["disclosure", "--script", "/dev/zero"], "field '--script'"),
    ("obs-out-nul-byte", [*OBS, "--out", "t\x00.parquet"], "'--out'"),
    # an option given twice under its short and long names, or as flag and negation
    ("obs-out-short-and-long", [*OBS, "-o", "{out}.parquet", "--out", "{out}2.parquet"],
     "field '--out': --out is given more than once"),
    ("fit-types-short-and-long", [*FIT, "--out", "{out}", "-T", "3"], "field '--types'"),
    ("disc-whitebox-and-no-whitebox", [*DISC, "--whitebox", "--no-whitebox"],
     "field '--whitebox'"),
    # options the mode does not read, values at the edge
    ("fit-target-twice", [*FIT, "--out", "{out}", "--target", "bar", "--target", "none"],
     "field '--target'"),
    ("fit-resume-without-checkpoint", [*FIT, "--out", "{out}", "--resume"],
     "field '--resume'"),
    ("sample-shards-with-parquet", [*SAMPLE, "--out", "{out}.parquet", "--shards", "2"],
     "field '--shards'"),
    ("qif-epochs-reversed", ["qif", "--epochs", "5..2"], "field '--epochs'"),
    ("qif-epochs-41", ["qif", "--epochs", "41"], "field '--epochs'"),
    ("reid-learned-in-matching", [*REID, "--setting", "matching", "--attack", "learned",
                                  "--attack-model", "{in}/attack"], "field '--setting'"),
    ("reid-candidates-0", [*REID, "--setting", "matching", "--matching", "assignment",
                           "--candidates", "0"], "field '--candidates'"),
    ("reid-traces-with-taxonomy", ["reid", "--traces", "{in}/traces.parquet", "--no-progress",
                                   "--taxonomy", "v2"], "field '--taxonomy'"),
    ("attack-train-weeks-past-the-sets", [*TRAIN, "--out", "{out}", "--weeks", "5"],
     "field '--weeks'"),
    ("obs-lookback-past-the-weeks", [*OBS, "--out", "{out}.parquet", "--lookback", "5"],
     "field '--lookback'"),
    ("ingest-epoch-start-after-the-visits", [*INGEST, "--epoch-start", "2030-01-01"],
     "row 1, field 'timestamp'"),
    ("stats-explain-with-engine", ["stats", "--explain", "{in}/stats", "--engine", "stream"],
     "field '--engine'"),
    ("stats-split-for-one-week", [*STATS, "--out", "{out}", "--weeks", "0", "--split",
                                  "0.25,0.25,0.5"], "field '--split'"),
    ("pop-taxonomy-upper-case", ["population", "--users", "10", "--taxonomy", "V2", "--out",
                                 "{out}.parquet"], "field '--taxonomy'"),
    ("run-stats-with-taxonomy", [*SMOKE, "--out", "{out}", "--stats", "{in}/stats",
                                 "--taxonomy", "v2"], "field '--taxonomy'"),
]


@pytest.mark.parametrize(("name", "args", "named"), CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_refused(inputs: dict[str, Path], work: Path, name: str,
                              args: list[str], named: str) -> None:
    invoke_refused(invoke, args, inputs["dir"], work, named)


def test_a_name_beginning_with_a_dash_works_as_a_full_path(inputs: dict[str, Path],
                                                           work: Path) -> None:
    """The way out the refusal names: the same name given as its full path is written."""
    res = invoke(["observe", "--sets", str(inputs["pop"]), "--out",
                              str(work / "-t.parquet")])
    assert res.exit_code == 0, res.output
    assert tio.read_traces(work / "-t.parquet").traces.shape == (2, 300, 4)


def test_python_api_refuses_the_wrong_types(inputs: dict[str, Path], tmp_path: Path) -> None:
    """From Python: generate("10") and a float seed failed inside the generator; observe
    read sites="2" as 2, gave no trace for sites=0, accepted float topic ids and said
    "sets have 0 weeks" of a TopicSets or a 2-D array; compute_statistics, save_statistics,
    sample and measure_risk failed on a missing attribute of the wrong object, and sample
    read n_users="5" as 5."""
    from topicslab import api, attacks, dp, population
    from topicslab import model as tm
    from topicslab.errors import InputError, ParameterError

    sets = tio.read_sets(inputs["pop"])
    stats = dp.load_statistics(inputs["dir"] / "stats")
    model = tm.load_model(inputs["dir"] / "model")
    with pytest.raises(ParameterError, match="n_users must be an integer"):
        population.generate("10", n_weeks=4)  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="n_users must be an integer"):
        population.generate(10.7, n_weeks=4)  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="seed must be an integer"):
        population.generate(10, n_weeks=4, seed=1.5)  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="sites must be an integer"):
        api.observe(sets.sets, sites="2")  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="sites must be >= 1"):
        api.observe(sets.sets, sites=0)
    with pytest.raises(ParameterError, match="integer array"):
        api.observe(sets.sets.astype(float))
    with pytest.raises(ParameterError, match="integer array"):
        api.observe(sets.sets[:, 0])
    with pytest.raises(TypeError, match=r"pass TopicSets\.sets"):
        api.observe(sets)
    with pytest.raises(TypeError, match="TopicSets"):
        dp.compute_statistics(sets.sets, epsilon=1.0, delta=1e-6)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="DPStatistics"):
        dp.save_statistics(tmp_path / "s", sets)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="TypeMixture"):
        tm.sample(stats, 5, seed=1)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="users must be an integer"):
        tm.sample(model, "5", seed=1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="TopicSets"):
        attacks.measure_risk(sets.sets, weeks=4, targets=10, trials=1)  # type: ignore[arg-type]
    assert api.observe(sets.sets.tolist(), sites=1).shape == (1, 300, 4)  # lists still work
    assert not list(tmp_path.iterdir())
