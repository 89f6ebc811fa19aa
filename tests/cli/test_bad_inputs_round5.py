"""Bad input, the fourth independent round (issue 15): files of the right name and the wrong
content, releases of one week, options that the chosen mode never reads, shard and ``.gz``
names that the file written would contradict, numba's environment variables, Ctrl-C in the
commands ``test_interruptions.py`` does not cover, and the Python readers and writers.

The same contract as ``test_bad_inputs.py``: exit code 2, one line ``error: ...`` naming the
offending option, file, row or field, no traceback, and nothing written (the test's directory,
also the current directory, is unchanged, and so are the inputs). Every case fails before any
real work (the one fit is a single step on 300 users), so the module runs in seconds.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from refusal import (
    check_refused,
    fit_small_model,
    invoke,
    invoke_refused,
    population_and_stats,
)

from topicslab import io as tio
from topicslab.errors import InputError


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A 4-week population of 300 users (taxonomy v2), its DP statistics and a release of
    one week, a one-step model, its site traces, files whose content contradicts their name
    or holds one defect each, a symbolic-link loop, visits and domain tables."""
    import gzip

    import pyarrow as pa
    import pyarrow.parquet as pq

    from topicslab import dp

    d = tmp_path_factory.mktemp("round5")
    data, pop = population_and_stats(d)
    tio.write_sets(d / "pop.csv", data.subset(slice(0, 20)))
    dp.save_statistics(d / "one-week", dp.compute_statistics(data, epsilon=1e3, delta=1e-6,
                                                             weeks=[0], seed=0))
    fit_small_model(invoke, d)
    res = invoke(["observe", "--sets", str(pop), "--out",
                              str(d / "traces.parquet")])
    assert res.exit_code == 0, res.output
    csv = (d / "pop.csv").read_text()
    (d / "csv-as.parquet").write_text(csv)
    (d / "pq-as.csv").write_bytes(pop.read_bytes())
    (d / "empty.tfrecord").write_bytes(b"")
    (d / "empty.csv.gz").write_bytes(gzip.compress(b""))
    table = pq.read_table(pop)
    meta = table.schema.metadata
    pq.write_table(table.slice(0, 0), d / "no-users.parquet")
    ids = pa.array([None, *range(1, 300)], pa.int64())
    pq.write_table(table.set_column(0, "user_id", ids).replace_schema_metadata(meta),
                   d / "null-id.parquet")
    name = table.column_names[1]
    as_text = [[str(x) for x in v] for v in table.column(1).to_pylist()]
    pq.write_table(table.set_column(1, name, pa.array(as_text)).replace_schema_metadata(meta),
                   d / "text-topics.parquet")
    nan = [[float(x) for x in v] for v in table.column(1).to_pylist()]
    nan[0][0] = float("nan")
    pq.write_table(table.set_column(1, name, pa.array(nan)).replace_schema_metadata(meta),
                   d / "nan-topic.parquet")
    pq.write_table(table.replace_schema_metadata({**meta, b"topicslab": b"{not json"}),
                   d / "bad-meta.parquet")
    os.symlink(d / "loop-b.parquet", d / "loop-a.parquet")
    os.symlink(d / "loop-a.parquet", d / "loop-b.parquet")
    os.symlink(pop, d / "link.parquet")
    (d / "long-negative-week.csv").write_text("user_id,week,topic_id\n1,0,1\n1,-1,2\n")
    topics = ",1,2,3,4,5\n2,7,8,9,10,11\n"
    (d / "count-huge.csv").write_text("count,t1,t2,t3,t4,t5\n1000000000000" + topics)
    (d / "count-zero.csv").write_text("count,t1,t2,t3,t4,t5\n0" + topics)
    (d / "two-weeks.csv").write_text("user,epoch,t1,t2,t3,t4,t5\n1,0,1,2,3,4,5\n"
                                     "1,1,1,2,3,4,6\n2,0,7,8,9,10,11\n2,1,7,8,9,10,12\n")
    (d / "visits.csv").write_text("user_id,timestamp,url\n1,2024-01-01T10:00:00Z,"
                                  "https://example.com/a\n2,2024-01-02T10:00:00Z,"
                                  "https://news.com/c\n")
    (d / "visits-future.csv").write_text("user_id,timestamp,url\n1,9999-01-01T10:00:00Z,"
                                         "https://example.com/a\n1,2024-01-01T10:00:00Z,"
                                         "https://news.com/b\n")
    (d / "domains.csv").write_text("domain,topics\nexample.com,1;4\nnews.com,9\n")
    (d / "domains-twice.csv").write_text("domain,topics\nexample.com,1;4\nexample.com,9\n")
    return {"pop": pop, "dir": d}


OBS = ["observe", "--out", "{out}.parquet", "--sets"]
STATS = ["stats", "--sets", "{in}/pop.parquet", "--out", "{out}"]
FIT = ["fit", "--stats", "{in}/stats", "--out", "{out}", "--no-progress"]
REID = ["reid", "--sets", "{in}/pop.parquet", "--no-progress", "--trials", "1", "--targets",
        "10"]
TRAIN = ["attack-train", "--sets", "{in}/pop.parquet", "--out", "{out}", "--no-progress",
         "--epochs", "0"]
SMOKE = ["run", "--preset", "smoke", "--quiet", "--out", "{out}"]
INGEST = ["ingest", "--out", "{out}.parquet", "-q", "--visits"]
DISC = ["disclosure", "-q", "--personas", "3", "--epochs", "2"]

CASES: list[tuple[str, list[str], str]] = [
    # defects of this round, fixed: a count column standing for 10^12 users (it ended in
    # "out of memory", exit 1, after trying), refused up front with the estimate
    ("obs-profile-count-past-the-memory", [*OBS, "{in}/count-huge.csv"],
     "count-huge.csv, row 1, field 'count'"),
    # a release of one week has no across-week query (q_across all zeros): a model of
    # several weeks fitted to it, or validated or run against it, learnt that no topic
    # persists, silently
    ("fit-one-week-release", [*FIT[:2], "{in}/one-week", *FIT[3:]],
     "one-week, field '--weeks': a model of 4 weeks needs statistics of a week pair"),
    ("validate-one-week-release", ["validate", "--stats", "{in}/one-week", "--model",
                                   "{in}/model", "--json", "{out}.json"],
     "one-week, field '--stats'"),
    ("run-one-week-release", [*SMOKE, "--stats", "{in}/one-week"], "one-week, field '--stats'"),
    # attack-train --epochs 0 runs no training pass: the options that size one were ignored
    *[(f"attack-train-epochs-0-{opt}", [*TRAIN, f"--{opt}", value], f"field '--{opt}'")
      for opt, value in (("batch-users", "64"), ("negatives", "3"), ("hard-fraction", "0.5"),
                         ("queries", "100"))],
    # --matching without --setting matching (at its default value too) was ignored
    ("reid-matching-default-without-setting", [*REID, "--matching", "per-item"],
     "field '--matching'"),
    ("reid-matching-assignment-without-setting", [*REID, "--matching", "assignment"],
     "field '--matching'"),
    # given traces are observed already: --lookback was only recorded in the JSON
    ("reid-traces-with-lookback", ["reid", "--traces", "{in}/traces.parquet", "--no-progress",
                                   "--lookback", "2"], "field '--lookback'"),
    # --learned-trials 10^8 started the run (and ran for hours); now the memory it keeps
    ("run-learned-trials-past-the-memory", [*SMOKE, "--learned", "--learned-trials",
                                            "100000000"], "field '--learned-trials'"),
    # a name the file written contradicts: one shard of a set written alone (the set then
    # misses its other shards), gzip on Parquet (written uncompressed)
    ("convert-target-names-one-shard", ["convert", "{in}/pop.parquet",
                                        "{out}.tfrecord-00000-of-00002"], "field 'TARGET'"),
    ("convert-target-names-one-shard-underscore", ["convert", "{in}/pop.parquet",
                                                   "{out}_00001-of-00003.tfrecord"],
     "field 'TARGET': names one shard of a set"),
    ("convert-parquet-gz", ["convert", "{in}/pop.parquet", "{out}.parquet.gz"],
     "field 'TARGET'"),
    ("convert-long-parquet-gz", ["convert", "{in}/pop.parquet", "{out}.parquet.gz", "--to",
                                 "long"], "field 'TARGET'"),
    ("sample-out-names-one-shard", ["sample", "--model", "{in}/model", "--users", "5", "--seed",
                                    "1", "--out", "{out}.tfrecord-00000-of-00002"],
     "field '--out': names one shard of a set"),
    # no users: convert wrote an empty TFRecord (or a header-only CSV) that every reader
    # refuses; run went through five stages and failed in the sixth, leaving them behind
    ("convert-no-users-to-tfrecord", ["convert", "{in}/no-users.parquet", "{out}.tfrecord"],
     "no-users.parquet, field 'SOURCE': holds no users"),
    ("convert-no-users-to-csv", ["convert", "{in}/no-users.parquet", "{out}.csv"],
     "field 'SOURCE'"),
    ("run-sets-no-users", [*SMOKE, "--sets", "{in}/no-users.parquet"],
     "no-users.parquet, field '--sets': holds no users"),
    # run's input stages printed "population: running" (or "dp_statistics: running") before
    # the error: two lines
    ("run-sets-too-few-weeks", [*SMOKE, "--sets", "{in}/two-weeks.csv"],
     "two-weeks.csv, field '--sets': the run needs 4 weeks, the file has 2"),
    ("run-stats-is-a-model", [*SMOKE, "--stats", "{in}/model"], "no q_within.json"),
    ("run-stats-is-a-file", [*SMOKE, "--stats", "{in}/pop.parquet"],
     "pop.parquet, field '--stats': is a file"),
    # new kinds that were already refused: content of another format under a right name
    ("obs-csv-named-parquet", [*OBS, "{in}/csv-as.parquet"], "csv-as.parquet"),
    ("obs-parquet-named-csv", [*OBS, "{in}/pq-as.csv"], "pq-as.csv"),
    ("obs-empty-tfrecord", [*OBS, "{in}/empty.tfrecord"],
     "empty.tfrecord, field '--sets': empty file"),
    ("obs-empty-csv-gz", [*OBS, "{in}/empty.csv.gz"], "empty.csv.gz, field '--sets': empty file"),
    ("convert-parquet-read-as-tfrecord", ["convert", "{in}/pop.parquet", "{out}.csv", "--from",
                                          "tfrecord"],
     "pop.parquet, field '--from': --from tfrecord contradicts the file's content"),
    ("run-sets-are-traces", [*SMOKE, "--sets", "{in}/traces.parquet"], "holds site traces"),
    ("sample-model-is-not-a-model", ["sample", "--model", "{in}/stats", "--users", "5",
                                     "--seed", "1", "--out", "{out}.parquet"],
     "stats, field '--model': is a directory holding DP statistics"),
    # Parquet cells of the wrong type, null or NaN; metadata that is not JSON
    ("obs-parquet-null-user-id", [*OBS, "{in}/null-id.parquet"], "row 1, field 'user_id'"),
    ("obs-parquet-text-topics", [*OBS, "{in}/text-topics.parquet"],
     "row 1, field 'epoch_0_topics'"),
    ("obs-parquet-nan-topic", [*OBS, "{in}/nan-topic.parquet"], "row 1, field 'epoch_0_topics'"),
    ("obs-parquet-metadata-not-json", [*OBS, "{in}/bad-meta.parquet"], "bad-meta.parquet"),
    ("obs-long-negative-week", [*OBS, "{in}/long-negative-week.csv"], "row 2, field 'week'"),
    ("obs-profile-count-zero", [*OBS, "{in}/count-zero.csv"], "row 1, field 'count'"),
    ("obs-symlink-loop", [*OBS, "{in}/loop-a.parquet"], "loop-a.parquet"),
    # devices, links and inputs where an output goes
    ("reid-json-dev-null", [*REID, "--json", "/dev/null"], "field '--json'"),
    ("qif-plot-dev-stdout", ["qif", "--plot", "/dev/stdout"], "field '--plot'"),
    ("convert-onto-the-source-through-a-link", ["convert", "{in}/link.parquet",
                                                "{in}/pop.parquet"], "field 'TARGET'"),
    ("ingest-unclassified-is-the-domains", [*INGEST, "{in}/visits.csv", "--domains",
                                            "{in}/domains.csv", "--unclassified",
                                            "{in}/domains.csv"], "field '--unclassified'"),
    ("ingest-unclassified-is-the-out", ["ingest", "--out", "{out}.csv", "-q", "--visits",
                                        "{in}/visits.csv", "--domains", "{in}/domains.csv",
                                        "--unclassified", "{out}.csv"], "field '--out'"),
    ("ingest-time-past-the-last-week", [*INGEST, "{in}/visits-future.csv", "--domains",
                                        "{in}/domains.csv"], "row 1, field 'timestamp'"),
    ("ingest-domain-twice", [*INGEST, "{in}/visits.csv", "--domains",
                             "{in}/domains-twice.csv"], "row 2, field 'domain'"),
    # numbers: ln of a negative, an underflowing delta, infinities and NaN
    ("stats-epsilon-ln-negative", [*STATS, "--epsilon", "ln(-1)"], "field '--epsilon'"),
    ("stats-delta-underflows-to-0", [*STATS, "--delta", "1e-400"], "field '--delta'"),
    ("stats-split-inf", [*STATS, "--split", "inf,0.25,0.5"], "field '--split'"),
    ("fit-target-nan", [*FIT, "--target", "nan"], "field '--target'"),
    ("fit-max-minutes-inf", [*FIT, "--max-minutes", "inf"], "field '--max-minutes'"),
    ("attack-train-hard-fraction-nan", [*TRAIN[:-2], "--hard-fraction", "nan"],
     "field '--hard-fraction'"),
    ("disc-smoothing-inf", [*DISC, "--smoothing", "inf"], "field '--smoothing'"),
    ("disc-n-sigma-nan", [*DISC, "--n-sigma", "nan"], "field '--n-sigma'"),
]


@pytest.mark.parametrize(("name", "args", "named"), CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_refused(inputs: dict[str, Path], work: Path, name: str,
                              args: list[str], named: str) -> None:
    invoke_refused(invoke, args, inputs["dir"], work, named)


def test_unicode_spaces_and_links_in_paths_work(inputs: dict[str, Path], work: Path) -> None:
    """The positive side of the cases above: a directory and file name with spaces and
    non-ASCII letters, reached through a symbolic link, reads and writes as any other."""
    folder = work / "daten ü"
    folder.mkdir()
    (folder / "pöp sets.parquet").symlink_to(inputs["pop"])
    res = invoke(["observe", "--sets", str(folder / "pöp sets.parquet"), "--out",
                              str(folder / "spuren ö.parquet")])
    assert res.exit_code == 0, res.output
    assert tio.read_traces(folder / "spuren ö.parquet").traces.shape == (2, 300, 4)


def _console(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    full = {**os.environ, **env, "PYTHONPATH": str(Path(tio.__file__).parents[2])}
    full.pop("TOPICSLAB_DEBUG", None)
    return subprocess.run([sys.executable, "-c", "from topicslab._main import main; main()",
                           *args], capture_output=True, text=True, env=full, check=False,
                          cwd=cwd)


@pytest.mark.parametrize("env", [{"NUMBA_OPT": "abc"}, {"NUMBA_DISABLE_JIT": " "},
                                 {"NUMBA_THREADING_LAYER": "bogus"}])
def test_numba_variables_it_cannot_read_are_one_line(tmp_path: Path,
                                                     env: dict[str, str]) -> None:
    """numba parses its variables when imported and warns with the parser's traceback (or,
    for the threading layer, fails at the first parallel kernel with exit code 1): one line
    naming the variable, exit code 2."""
    proc = _console(["qif"], env, tmp_path)
    check_refused(proc.stderr, proc.returncode, next(iter(env)))
    assert not list(tmp_path.iterdir())


Interrupter = Callable[..., None]


@pytest.mark.parametrize(("command", "patch"), [
    (["convert", "{in}/pop.csv", "out.tfrecord", "--shards", "2"], ("tio", "write_sets")),
    (["ingest", "--visits", "{in}/visits.csv", "--domains", "{in}/domains.csv", "--out",
      "out.parquet", "-q", "--unclassified", "u.csv"], ("tio", "write_sets")),
    (["reid", "--sets", "{in}/pop.parquet", "--no-progress", "--trials", "1", "--targets",
      "10", "--json", "r.json"], ("attacks", "measure_risk")),
    (["validate", "--stats", "{in}/stats", "--model", "{in}/model", "--json", "v.json"],
     ("validate", "stationarity")),
])
def test_ctrl_c_in_more_commands_is_one_line(inputs: dict[str, Path], work: Path,
                                             interrupt_on_call: Interrupter,
                                             command: list[str], patch: tuple[str, str]
                                             ) -> None:
    """Ctrl-C half-way through commands test_interruptions.py does not cover: exit 130, one
    ``interrupted:`` line (after the results printed so far), nothing written."""
    from topicslab import attacks, validate

    modules = {"tio": tio, "attacks": attacks, "validate": validate}
    interrupt_on_call(modules[patch[0]], patch[1])
    res = invoke([a.format(**{"in": inputs["dir"]}) for a in command])
    assert res.exit_code == 130, res.output
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert lines[-1] == f"interrupted: {command[0]} stopped; nothing written (no partial " \
                        "output left)", res.output
    assert "Traceback" not in res.output
    assert not list(work.iterdir())


def test_python_readers_and_writers_refuse_bad_arguments(inputs: dict[str, Path],
                                                         tmp_path: Path) -> None:
    """From Python: weeks="4" was compared with the file's 4 ("file has 4 weeks, expected
    4"); convert_sets overwrote its own source and wrote an empty TFRecord from a file with no
    users; write_sets and write_traces failed inside the writer on the wrong object."""
    from topicslab.errors import ParameterError

    d = inputs["dir"]
    with pytest.raises(ParameterError, match="weeks must be an integer"):
        tio.read_sets(inputs["pop"], weeks="4")  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="weeks must be >= 1"):
        tio.read_sets(inputs["pop"], weeks=0)
    stamp = inputs["pop"].stat().st_mtime_ns
    with pytest.raises(InputError, match="is the input source"):
        tio.convert_sets(d / "link.parquet", inputs["pop"])
    assert inputs["pop"].stat().st_mtime_ns == stamp
    with pytest.raises(InputError, match="holds no users"):
        tio.convert_sets(d / "no-users.parquet", tmp_path / "x.tfrecord")
    with pytest.raises(TypeError, match="TopicSets"):
        tio.write_sets(tmp_path / "x.parquet", np.zeros((3, 2, 5)))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="SiteTraces"):
        tio.write_traces(tmp_path / "t.parquet", tio.read_sets(inputs["pop"]))  # type: ignore[arg-type]
    with pytest.raises(InputError, match="row 1, field 'count'"):
        tio.read_sets_profiles(d / "count-huge.csv")
    assert not list(tmp_path.iterdir())
