"""Spark engine (local[2]): counts equal the local and streaming engines' exactly.

One SparkSession for the module (JVM start-up and the first job dominate); skipped only when
pyspark (with its pandas/pyarrow ``sql`` extra) or Java is missing.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys

import numpy as np
import pytest
from test_stream import messy_lists, write_foreign  # same directory (pytest rootdir-less import)
from typer.testing import CliRunner

from topicslab import io as tio
from topicslab.cli import stats as _stats  # noqa: F401  (registers the command)
from topicslab.cli._app import app
from topicslab.dp import (
    bound_contributions,
    compute_statistics,
    load_statistics,
    pair_counts,
    save_statistics,
)
from topicslab.dp.stream import stream_counts
from topicslab.errors import InputError, TopicsLabError
from topicslab.population import generate

runner = CliRunner()


def _skip_reason() -> str | None:
    for mod in ("pyspark", "pandas"):
        if importlib.util.find_spec(mod) is None:
            return f"{mod} is not installed (pip install 'topicslab[spark]')"
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "no Java runtime (the Spark engine needs Java 17+)"
    return None


needs_spark = pytest.mark.skipif(_skip_reason() is not None, reason=str(_skip_reason()))


@pytest.fixture(scope="module")
def spark():
    from topicslab.dp.spark import spark_session

    conf = {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2",
            "spark.ui.showConsoleProgress": "false",
            # a short-lived test JVM: C1 only and the serial GC start ~1.5x faster on 2 cores
            "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"}
    with spark_session("local[2]", config=conf) as session:
        session.sparkContext.setLogLevel("ERROR")
        yield session


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    """A directory of three part files (three+ Spark partitions) of a messy population:
    generated users plus foreign rows with short, missing, repeated and over-long weeks."""
    d = tmp_path_factory.mktemp("sparkdata") / "sets"
    d.mkdir()
    pop = generate(1200, 2, seed=4, first_user=0)
    tio.write_sets(d / "part-000.parquet", pop.subset(slice(0, 600)), row_group_size=250)
    tio.write_sets(d / "part-001.parquet", pop.subset(slice(600, 1200)), row_group_size=250)
    uids = np.arange(5000, 5900, dtype=np.int64)[::-1]
    write_foreign(d / "part-002.parquet", uids, messy_lists(900, 2, 3), row_group_size=200)
    return d


@needs_spark
@pytest.mark.parametrize(("k", "bound"), [(5, "truncate"), (3, "truncate")])
def test_counts_equal_local_and_stream(spark, data_dir, k, bound):
    from topicslab.dp.spark import spark_counts

    # the local engine on the union of the parts (read as the io reader reads each)
    parts = [tio.read_sets(f, strict=False) for f in sorted(data_dir.glob("*.parquet"))]
    width = max(p.k for p in parts)
    sets = np.concatenate([np.pad(p.sets, ((0, 0), (0, 0), (0, width - p.k)),
                                  constant_values=-1) for p in parts])
    uids = np.concatenate([p.user_ids for p in parts])
    m = parts[0].taxonomy.size
    bounded, rep = bound_contributions(sets, m, k=k, bound=bound, seed=7, user_ids=uids)
    ref = pair_counts(bounded, m)
    st = stream_counts(data_dir, k=k, bound=bound, seed=7, strict=False, chunk_users=300)
    bc = spark_counts(data_dir, k=k, bound=bound, seed=7, strict=False, spark=spark,
                      batch_users=128)
    assert np.array_equal(bc.counts.within, ref.within)
    assert np.array_equal(bc.counts.across, ref.across)
    assert bc.bounding == rep == st.bounding
    assert bc.n_users == 2100
    assert bc.fingerprint == st.fingerprint


@needs_spark
def test_errors_are_one_line_input_errors(spark, data_dir, tmp_path):
    from topicslab.dp.spark import spark_counts

    with pytest.raises(InputError, match="more than k=5") as ei:
        spark_counts(data_dir, bound="reject", seed=1, strict=False, spark=spark)
    assert "\n" not in str(ei.value) and "user " in str(ei.value)
    dup = tmp_path / "dup"
    dup.mkdir()
    write_foreign(dup / "a.parquet", [1, 2, 3], [[[1]] * 3, [[4]] * 3])
    write_foreign(dup / "b.parquet", [7, 2], [[[1]] * 2, [[4]] * 2])
    with pytest.raises(InputError, match="user id 2 appears more than once"):
        spark_counts(dup, seed=1, spark=spark)
    with pytest.raises(InputError, match="cannot read as Parquet"):
        spark_counts(tmp_path / "missing", seed=1, spark=spark)


@needs_spark
def test_cli_release_is_the_local_release(spark, tmp_path):
    """``--engine spark`` (reusing the active session) releases exactly what the local
    engine releases with the same seed: same counts, same shared noise code."""
    pop = generate(1500, 2, seed=9)
    path = tmp_path / "pop.parquet"
    tio.write_sets(path, pop, row_group_size=300)
    local = compute_statistics(pop, seed=5)
    out = tmp_path / "rel"
    res = runner.invoke(app, ["stats", "--sets", str(path), "--out", str(out), "--engine",
                              "spark", "--master", "local[2]", "--seed", "5"])
    assert res.exit_code == 0, res.output
    save_statistics(tmp_path / "local", local)
    got, want = load_statistics(out), load_statistics(tmp_path / "local")
    assert np.array_equal(got.q_within, want.q_within)
    assert np.array_equal(got.q_across, want.q_across)
    ledger = json.loads((out / "privacy_ledger.json").read_text())
    assert ledger["audit"]["engine"] == "spark"
    assert ledger["audit"]["input_fingerprint"].startswith("mset-")
    assert spark.sparkContext._jsc is not None  # the CLI reused (did not stop) the session


@needs_spark
def test_cli_takes_a_uri_as_typed(spark, tmp_path):
    """``--sets hdfs:///data/sets`` (docs/cluster.md) reached the engine as ``hdfs:/data/sets``
    (pathlib drops a slash) and was refused as a local file ("reads topic sets in wide Parquet:
    convert the file first"); a URI Spark cannot read was a Java error, exit code 1."""
    res = runner.invoke(app, ["stats", "--sets", "hdfs:///data/sets", "--out",
                              str(tmp_path / "rel"), "--engine", "spark", "--master",
                              "local[2]"])
    assert res.exit_code == 2, res.output
    line = " ".join(res.output.split())
    assert line.startswith("error: hdfs:///data/sets, field '--sets': cannot read as Parquet "
                           "(java.io.IOException: Incomplete HDFS URI"), line
    assert not (tmp_path / "rel").exists()


def test_missing_pyspark_is_a_one_line_error(monkeypatch, tmp_path):
    from topicslab.dp import spark as sp

    monkeypatch.setitem(sys.modules, "pyspark", None)
    with pytest.raises(TopicsLabError, match=r"pip install 'topicslab\[spark\]'"):
        sp.spark_counts(tmp_path / "x.parquet", seed=0)
