"""Bad input, the thirty-fourth independent round.

Leftovers of round 33:

- ``stats --engine spark``: every error or interruption printed ~9 lines of the JVM's and
  Spark's logs and ``[Stage N]`` progress bars above the ``error:`` line.
- ``--epsilon 'ln(3'`` (brackets unbalanced) was read as ln 3.
- ``topicslab --debug``: a refused input ended with exit code 1 (the traceback raised on).
- Parquet topic sets whose metadata claims ``format_version`` 99, or ``format:
  "site_traces"``, were read without a word.
- ``convert x.parquet out.csv --from csv``: the CSV reader's codec error.
- ``convert ... p.tfrecord --shards 3`` said "to p.tfrecord", a file that does not exist.
- ``run --stats S --sets P`` named no field.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
from pathlib import Path

import pytest
from refusal import (
    check_refused,
    console_script,
    invoke,
    invoke_refused,
    population_and_stats,
    tree,
)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """300 users (v2, 4 weeks) as ``pop.parquet``, their DP statistics ``stats``, and the
    population as CSV (``pop.csv``)."""
    d = tmp_path_factory.mktemp("round34")
    population_and_stats(d)
    res = invoke(["convert", str(d / "pop.parquet"), str(d / "pop.csv")])
    assert res.exit_code == 0, res.output
    return d


# ---- L1: Spark's logs and progress bars do not join the one line ---------------------------


def _no_spark() -> str | None:
    for mod in ("pyspark", "pandas"):
        if importlib.util.find_spec(mod) is None:
            return f"{mod} is not installed"
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "no Java runtime"
    return None


@pytest.mark.skipif(_no_spark() is not None, reason=str(_no_spark()))
def test_spark_engine_refusal_is_one_line(work: Path) -> None:
    """A refusal found once Spark runs (a week past the input's, seen by the Spark job):
    the JVM's "WARNING: Using incubator modules", "Using Spark's default log4j profile",
    WARN lines and ``[Stage 0:>`` bars came first."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"user_id": pa.array([1, 2, 3], pa.int64()),
                             "epoch_0_topics": pa.array([[1, 2], [3], [4]],
                                                        pa.list_(pa.int16()))}),
                   work / "one-week.parquet")
    before = tree(work)
    proc = console_script(["stats", "--sets", "one-week.parquet", "--engine", "spark",
                           "--out", "st"], {}, work)
    line = check_refused(proc.stderr, proc.returncode, "one-week.parquet, field '--weeks'")
    assert "the input has 1 week" in line
    assert tree(work) == before


def test_quiet_spark_config_keeps_the_users_settings() -> None:
    from topicslab.dp.spark import _quiet_config

    conf = _quiet_config({"spark.driver.extraJavaOptions": "-XX:+UseSerialGC",
                          "spark.ui.showConsoleProgress": "true"}, "/tmp/q.properties")
    assert conf["spark.ui.showConsoleProgress"] == "true"
    assert conf["spark.driver.extraJavaOptions"] == (
        "-XX:+UseSerialGC -Dlog4j2.configurationFile=file:/tmp/q.properties")
    assert _quiet_config({}, "/x")["spark.ui.showConsoleProgress"] == "false"


# ---- L2..L7: refused inputs ----------------------------------------------------------------


def _with_block(src: Path, dst: Path, **change: object) -> None:
    import pyarrow.parquet as pq

    table = pq.read_table(src)
    block = json.loads(table.schema.metadata[b"topicslab"])
    block.update(change)
    pq.write_table(table.replace_schema_metadata({b"topicslab": json.dumps(block)}), dst)


@pytest.mark.parametrize(("change", "named"), [
    ({"format_version": 99}, "field 'metadata.format_version': written in format_version 99, "
                             "and this topicslab reads format_version 1 only"),
    ({"format_version": "1"}, "field 'metadata.format_version': corrupt topicslab metadata"),
    ({"format": "site_traces"}, "field 'metadata.format': the topicslab metadata says the file "
                                "holds site traces"),
], ids=["future-version", "string-version", "traces-format"])
@pytest.mark.parametrize("command", ["stats", "convert"])
def test_parquet_metadata_of_another_format_is_refused(inputs: Path, work: Path,
                                                       change: dict, named: str,
                                                       command: str) -> None:
    """Was read as topic sets without a word."""
    _with_block(inputs / "pop.parquet", work / "tampered.parquet", **change)
    args = {"stats": ["stats", "--sets", "tampered.parquet", "--out", "st"],
            "convert": ["convert", "tampered.parquet", "out.csv"]}[command]
    before = tree(work)
    res = invoke(args)
    check_refused(res.output, res.exit_code, f"tampered.parquet, {named}")
    assert tree(work) == before


CASES = [
    ("epsilon-open-bracket", ["stats", "--sets", "{in}/pop.parquet", "--epsilon", "ln(3",
                              "--out", "{out}"], "field '--epsilon': cannot read epsilon 'ln(3'"),
    ("epsilon-close-bracket", ["stats", "--sets", "{in}/pop.parquet", "--epsilon", "ln3)",
                               "--out", "{out}"], "field '--epsilon': cannot read epsilon"),
    ("epsilon-double-bracket", ["stats", "--sets", "{in}/pop.parquet", "--epsilon", "ln((3))",
                                "--out", "{out}"], "field '--epsilon': cannot read epsilon"),
    ("from-csv-of-parquet", ["convert", "{in}/pop.parquet", "{out}.csv", "--from", "csv"],
     "pop.parquet, field '--from': --from csv contradicts the file's content, which is "
     "Parquet"),
    ("from-parquet-of-csv", ["convert", "{in}/pop.csv", "{out}.parquet", "--from", "parquet"],
     "pop.csv, field '--from': --from parquet contradicts the file's content"),
    ("from-tfrecord-of-csv", ["convert", "{in}/pop.csv", "{out}.parquet", "--from",
                              "tfrecord"], "pop.csv, field '--from': --from tfrecord "
                                           "contradicts the name's extension, which means csv"),
    ("run-sets-and-stats", ["run", "--stats", "{in}/stats", "--sets", "{in}/pop.parquet",
                            "--out", "{out}", "--preset", "smoke"],
     "field '--sets/--stats': give --sets or --stats, not both"),
]


@pytest.mark.parametrize(("name", "args", "named"), CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_refused(inputs: Path, work: Path, name: str, args: list[str],
                              named: str) -> None:
    invoke_refused(invoke, args, inputs, work, named)


def test_epsilon_symbolic_forms_still_read() -> None:
    from topicslab.cli._app import parse_epsilon

    for text in ("ln3", "ln(3)", "ln 3", " LN( 3 ) "):
        assert parse_epsilon(text) == pytest.approx(1.0986122886681098)


def test_from_agreeing_with_the_source_still_converts(inputs: Path, work: Path) -> None:
    for args in (["{in}/pop.csv", "a.parquet", "--from", "csv"],
                 ["{in}/pop.csv", "b.parquet", "--from", "tsv", "--lenient"],
                 ["{in}/pop.parquet", "c.csv", "--from", "parquet"]):
        res = invoke(["convert", *[a.format(**{"in": inputs}) for a in args]])
        if "tsv" in args:  # read as TSV, the CSV's header is the reader's to refuse
            assert res.exit_code == 2 and "contradicts" not in res.output, res.output
        else:
            assert res.exit_code == 0, res.output


# ---- L3: --debug keeps the exit code of bad input ------------------------------------------


def test_debug_refusal_exits_2_with_the_traceback(inputs: Path, work: Path) -> None:
    """Was exit code 1 (the InputError raised through)."""
    proc = console_script(["--debug", "stats", "--sets", str(inputs / "pop.parquet"),
                           "--epsilon", "0", "--out", "st"], {}, work)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith("error: field '--epsilon'")
    assert not (work / "st").exists()


# ---- L6: convert names the shards it wrote -------------------------------------------------


def test_convert_to_shards_names_the_shards(inputs: Path, work: Path) -> None:
    """Said "wrote ... to p.tfrecord", a file that does not exist."""
    res = invoke(["convert", str(inputs / "pop.parquet"), "p.tfrecord", "--shards", "3"])
    assert res.exit_code == 0, res.output
    assert not (work / "p.tfrecord").exists()
    assert "to 3 shards p-00000-of-00003.tfrecord ... p-00002-of-00003.tfrecord" in res.output
    assert "to p.tfrecord" not in res.output


# ---- fresh defects -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def outputs(inputs: Path) -> Path:
    """``inputs`` with site traces of the population (``traces.parquet``) and a run's output
    directory (``run``: its stages.json and its DP release, ``run/stats``)."""
    res = invoke(["observe", "--sets", str(inputs / "pop.parquet"), "--out",
                  str(inputs / "traces.parquet")])
    assert res.exit_code == 0, res.output
    run = inputs / "run"
    run.mkdir(exist_ok=True)
    (run / "stages.json").write_text("{}", encoding="utf-8")
    if not (run / "stats").exists():
        shutil.copytree(inputs / "stats", run / "stats")
    return inputs


FRESH = [
    # D1: disclosure --script of a binary file, a directory, a missing file: the codec's or
    # the OS's message ("[Errno 21] Is a directory: '.'"), and no field
    ("script-binary", ["disclosure", "--script", "{in}/pop.parquet"],
     "pop.parquet, field '--script': is not a text file in UTF-8 (byte 0x"),
    ("script-directory", ["disclosure", "--script", "{in}"],
     "field '--script': is a directory, not a query script"),
    ("script-missing", ["disclosure", "--script", "{in}/no-such.txt"],
     "no-such.txt, field '--script': no such file"),
    # D2: reid --traces of a directory: "site traces are stored as Parquet, not tfrecord"
    ("traces-stats-dir", ["reid", "--traces", "{in}/stats", "--no-progress"],
     "stats, field '--traces': is a directory holding DP statistics (topicslab stats), not "
     "site traces"),
    ("traces-run-dir", ["reid", "--traces", "{in}/run", "--no-progress"],
     "run, field '--traces': is a directory holding a run's output (topicslab run)"),
    ("traces-csv", ["reid", "--traces", "{in}/pop.csv", "--no-progress"],
     "pop.csv, field '--traces': site traces are stored as Parquet, not csv"),
    # D3: stats --explain of a run's directory or a missing one: "RUN/privacy_ledger.json: no
    # privacy ledger here", no field
    ("explain-run-dir", ["stats", "--explain", "{in}/run"],
     "run, field '--explain': no privacy ledger here: this directory holds a run's output, "
     "whose DP release is"),
    ("explain-missing", ["stats", "--explain", "{in}/no-such"],
     "no-such, field '--explain': no such file"),
    ("explain-a-parquet", ["stats", "--explain", "{in}/pop.parquet"],
     "pop.parquet, field '--explain': is not a statistics directory"),
    # D4: fit --target's refusal left out 'none', which its help offers
    ("fit-target-text", ["fit", "--stats", "{in}/stats", "--out", "{out}", "--types", "2",
                         "--target", "abc", "--no-progress"],
     "field '--target': --target must be 'bar', 'none' or a loss value, got 'abc'"),
]


@pytest.mark.parametrize(("name", "args", "named"), FRESH, ids=[c[0] for c in FRESH])
def test_fresh_bad_input_is_refused(outputs: Path, work: Path, name: str, args: list[str],
                                    named: str) -> None:
    invoke_refused(invoke, args, outputs, work, named)
