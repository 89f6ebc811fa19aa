"""Bad input, the forty-fourth independent round: the same data written by other tools (Spark
and partitioned Parquet, pandas' index, compressed and spreadsheet CSV), NumPy array layouts
in the Python API, Typer's built-in options and the help at odd widths, SIGKILL at random
points, and the environment around the package.

- A directory of Parquet parts as Spark writes it (``part-*.parquet``, ``_SUCCESS``, ``.crc``)
  or a partitioned data set (``week=0/...``): "is a directory with no .tfrecord files (a
  directory is read as TFRecord shards)" -- neither what it holds nor how to read it.
- A visits log whose URLs are Parquet BINARY (no UTF-8 annotation, as Impala and older Hive
  and Spark write strings): "expected text, got column type dictionary<values=binary, ...>".
- A long (or profile) table saved by pandas with its index (``__index_level_0__``): "field
  'epoch_0_topics': no week column" -- the table was not recognised.
- ``p.csv.GZ``: its header was read gunzipped, its rows as gzip bytes ("Expected 5 columns,
  got 2: <binary>"); ``p.csv.bz2``, ``.xz``, ``.zst``: "cannot tell the format from the name:
  name the file ... .csv" (renamed so, it is read as text); a gzip file named ``p.csv``:
  "'utf-8' codec can't decode byte 0x8b".
- Spreadsheet CSV: a trailing comma on every line or pandas' unnamed index column gave
  "field '': unknown column" or, for a long or profile table, "no week column"; Excel's
  ``sep=,`` first line "missing column user_id".
- ``attacks.profile_anonymity`` of a big-endian array (``>i2``, ``>i8``): numba's
  "TypingError: non-precise type pyobject".
- Sets of no week: ``qif.distinct_profiles`` NumPy's "need sequence of keys with len > 0 in
  lexsort", ``validate.stationarity`` "need at least one array to stack"; of no slot,
  ``validate.distinct_topics`` "cannot reshape array of size 0".
- ``topicslab --version``: "No such option"; ``COLUMNS=1``: a help of box corners and no
  usage line; ``COLUMNS=20``: option names cut ("--timestamp-colu…"); ``COLUMNS=100000``:
  3.3 MB of help, every line padded out.
- A writer killed by SIGKILL (or a power loss) left its hidden temporary beside the output for
  good (``.p.parquet.XXXX.tmp``, ``.st.tmp-XXXX/``); the next write of that output now
  removes it.

The same contract as ``test_bad_inputs.py``: exit code 2, one line ``error: ...`` naming the
offending file, row or field, no traceback, and nothing written; from Python, an
``InputError`` naming the field.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from refusal import check_refused, console_script, invoke, random_profiles

from topicslab import io as tio
from topicslab.datamodel import TopicSets


@pytest.fixture(scope="module")
def sets() -> TopicSets:
    return TopicSets(random_profiles(60, 3), "v2", np.arange(60, dtype=np.int64) * 3 + 1)


def _same(got: TopicSets, want: TopicSets) -> None:
    assert np.array_equal(got.user_ids, want.user_ids)
    assert np.array_equal(got.topic_ids(), want.topic_ids())


# ------------------------------------------------------------------ other tools' files

def _spark_directory(where: Path, sets: TopicSets) -> Path:
    tio.write_sets(where / "one.parquet", sets)
    table = pq.read_table(where / "one.parquet").replace_schema_metadata(None)
    d = where / "spark.parquet"
    d.mkdir()
    for i, start in enumerate(range(0, sets.n_users, 20)):
        pq.write_table(table.slice(start, 20), d / f"part-{i:05d}-1c2d.snappy.parquet")
        (d / f".part-{i:05d}-1c2d.snappy.parquet.crc").write_bytes(b"crc")
    (d / "_SUCCESS").touch()
    (where / "one.parquet").unlink()
    return d


def _partitioned_directory(where: Path, sets: TopicSets) -> Path:
    tio.write_sets(where / "long.parquet", sets, format="long")
    d = where / "by_week"
    pq.write_to_dataset(pq.read_table(where / "long.parquet").replace_schema_metadata(None),
                        str(d), partition_cols=["week"])
    (where / "long.parquet").unlink()
    return d


@pytest.mark.parametrize("make", [_spark_directory, _partitioned_directory],
                         ids=["spark-parts", "hive-partitions"])
@pytest.mark.parametrize("command", ["convert", "stats"])
def test_a_directory_of_parquet_parts_is_named_as_such(work: Path, sets: TopicSets, make,
                                                       command: str) -> None:
    d = make(work, sets)
    args = ([command, str(d), "out.parquet"] if command == "convert"
            else [command, "--sets", str(d), "--out", "st"])
    res = invoke(args)
    line = check_refused(res.output, res.exit_code, str(d))
    assert "Parquet data set" in line and "pyarrow.parquet.read_table" in line, line
    assert not (work / "out.parquet").exists() and not (work / "st").exists()


def test_the_merge_a_parquet_directory_s_line_gives_reads_the_same_sets(
        work: Path, sets: TopicSets) -> None:
    d = _spark_directory(work, sets)
    pq.write_table(pq.read_table(d), work / "merged.parquet")
    _same(tio.read_sets(work / "merged.parquet"), sets)


@pytest.mark.parametrize("fmt", ["long", "profiles"])
def test_a_table_saved_by_pandas_with_its_index_is_read(work: Path, sets: TopicSets,
                                                        fmt: str) -> None:
    tio.write_sets(work / "plain.parquet", sets, format=fmt)
    frame = pq.read_table(work / "plain.parquet").replace_schema_metadata(None).to_pandas()
    frame.index = np.arange(len(frame)) ** 2  # no range: pandas keeps it as a column
    frame.to_parquet(work / "indexed.parquet")
    assert "__index_level_0__" in pq.read_schema(work / "indexed.parquet").names
    _same(tio.read_sets(work / "indexed.parquet"), tio.read_sets(work / "plain.parquet"))
    res = invoke(["convert", "indexed.parquet", "out.csv"])
    assert res.exit_code == 0, res.output


@pytest.mark.parametrize("fmt", ["csv", "long", "profiles"])
def test_a_gzip_table_named_in_capitals_is_read(work: Path, sets: TopicSets,
                                                fmt: str) -> None:
    tio.write_sets(work / "plain.csv", sets, format=fmt)
    (work / "p.csv.GZ").write_bytes(gzip.compress((work / "plain.csv").read_bytes()))
    _same(tio.read_sets(work / "p.csv.GZ"), tio.read_sets(work / "plain.csv"))
    res = invoke(["convert", "p.csv.GZ", "out.parquet"])
    assert res.exit_code == 0, res.output


@pytest.mark.parametrize(("suffix", "compress", "named"), [
    (".bz2", bz2.compress, "bzip2"), (".xz", lzma.compress, "xz"),
    (".zst", None, "zstd"), (".zip", None, "zip")])
def test_a_table_compressed_otherwise_than_gzip_says_so(work: Path, sets: TopicSets,
                                                       suffix: str, compress, named: str
                                                       ) -> None:
    tio.write_sets(work / "plain.csv", sets)
    data = (work / "plain.csv").read_bytes()
    (work / f"p.csv{suffix}").write_bytes(compress(data) if compress else data)
    res = invoke(["convert", f"p.csv{suffix}", "out.parquet"])
    line = check_refused(res.output, res.exit_code, f"p.csv{suffix}")
    assert f"compressed with {named}" in line and "gzip" in line, line


def test_a_gzip_table_without_the_gz_suffix_says_so(work: Path, sets: TopicSets) -> None:
    tio.write_sets(work / "plain.csv", sets)
    (work / "p.csv").write_bytes(gzip.compress((work / "plain.csv").read_bytes()))
    res = invoke(["convert", "p.csv", "out.parquet"])
    line = check_refused(res.output, res.exit_code, "p.csv")
    assert "gzip-compressed" in line and ".gz" in line, line


def _trailing_comma(text: str) -> str:
    return "".join(line + ",\n" for line in text.splitlines())


def _pandas_index(text: str) -> str:
    lines = text.splitlines()
    return "," + lines[0] + "\n" + "".join(f"{i},{line}\n" for i, line in enumerate(lines[1:]))


@pytest.mark.parametrize("fmt", ["csv", "long", "profiles"])
@pytest.mark.parametrize(("edit", "where"), [(_trailing_comma, "the last column"),
                                             (_pandas_index, "the first column")],
                         ids=["trailing-comma", "pandas-index"])
def test_an_unnamed_header_column_is_named(work: Path, sets: TopicSets, fmt: str, edit,
                                          where: str) -> None:
    tio.write_sets(work / "plain.csv", sets, format=fmt)
    (work / "p.csv").write_text(edit((work / "plain.csv").read_text()))
    res = invoke(["convert", "p.csv", "out.parquet"])
    line = check_refused(res.output, res.exit_code, "p.csv")
    assert f"{where} has no name in the header" in line and "field 'column " in line, line


@pytest.mark.parametrize("fmt", ["csv", "long"])
def test_a_spreadsheet_s_separator_line_is_named(work: Path, sets: TopicSets,
                                                 fmt: str) -> None:
    tio.write_sets(work / "plain.csv", sets, format=fmt)
    (work / "p.csv").write_text("sep=,\n" + (work / "plain.csv").read_text())
    res = invoke(["convert", "p.csv", "out.parquet"])
    line = check_refused(res.output, res.exit_code, "p.csv")
    assert "'sep=,' is a spreadsheet's separator hint" in line, line


def _visits_with_urls_as_bytes(work: Path, bad_row: int | None = None) -> None:
    import pyarrow as pa
    import pyarrow.csv as pacsv

    from topicslab.io.visits import sample_files

    visits, domains = sample_files()
    (work / "domains.csv").write_bytes(Path(domains).read_bytes())
    table = pacsv.read_csv(visits)
    pq.write_table(table, work / "text.parquet")
    urls = [u.encode() for u in table.column("url").to_pylist()]
    if bad_row is not None:
        urls[bad_row - 1] = b"https://ex\xffample.com/"
    pq.write_table(table.set_column(2, "url", pa.array(urls, pa.binary())),
                   work / "bytes.parquet")


def test_a_visits_log_whose_urls_are_parquet_binary_is_read(work: Path) -> None:
    _visits_with_urls_as_bytes(work)
    for name in ("text", "bytes"):
        res = invoke(["ingest", "--visits", f"{name}.parquet", "--domains", "domains.csv",
                      "--out", f"{name}-sets.parquet", "--quiet"])
        assert res.exit_code == 0, res.output
    _same(tio.read_sets(work / "bytes-sets.parquet"), tio.read_sets(work / "text-sets.parquet"))


def test_urls_that_are_not_utf8_are_refused_at_their_row(work: Path) -> None:
    _visits_with_urls_as_bytes(work, bad_row=8)
    res = invoke(["ingest", "--visits", "bytes.parquet", "--domains", "domains.csv",
                  "--out", "sets.parquet", "--quiet"])
    line = check_refused(res.output, res.exit_code, "bytes.parquet, row 8, field 'url'")
    assert "not UTF-8" in line, line
    assert not (work / "sets.parquet").exists()


# --------------------------------------------------------------------- array layouts

@pytest.mark.parametrize("dtype", [">i2", ">i8", ">u2"])
def test_profile_anonymity_takes_big_endian_arrays(dtype: str) -> None:
    from topicslab.attacks import profile_anonymity

    base = random_profiles(40, 3)
    want = profile_anonymity(base)
    assert profile_anonymity(base.astype(dtype)) == want
    assert profile_anonymity(TopicSets(base.astype(dtype), "v2")) == want


def test_sets_of_no_week_or_no_slot_are_refused_or_counted() -> None:
    from topicslab import qif, validate
    from topicslab.errors import InputError, TopicsLabError

    no_week = TopicSets(np.zeros((3, 0, 5), np.int16), "v2")
    with pytest.raises(TopicsLabError, match="no week"):
        qif.distinct_profiles(no_week)
    with pytest.raises(InputError, match="no week") as exc:
        validate.stationarity(no_week)
    assert exc.value.field == "sets"
    no_slot = TopicSets(np.zeros((3, 2, 0), np.int16), "v2")
    assert validate.distinct_topics(no_slot).tolist() == [0, 0, 0]


# ------------------------------------------------------------ Typer's options, the help

def test_version_is_shown() -> None:
    from topicslab import __version__

    res = invoke(["--version"])
    assert res.exit_code == 0, res.output
    assert res.output.strip() == f"topicslab {__version__}"


@pytest.mark.parametrize("columns", ["1", "20", "100000"])
def test_the_help_is_written_at_a_readable_width(tmp_path: Path, columns: str) -> None:
    res = console_script(["ingest", "--help"], {"COLUMNS": columns}, tmp_path)
    assert res.returncode == 0, res.stderr
    assert "Usage: topicslab ingest" in res.stdout
    assert "--timestamp-column" in res.stdout and "--top-unclassified" in res.stdout
    assert max(len(line) for line in res.stdout.splitlines()) <= 1000


# ------------------------------------------------------------- SIGKILL's leftovers

def _dead_writer_tag() -> str:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    from topicslab._atomic import _writer_tag

    return f"{_writer_tag()[:8]}{child.pid}-"  # (this host, boot and PID namespace)


def test_a_killed_writer_s_temporary_is_removed_by_the_next_write(work: Path) -> None:
    dead = _dead_writer_tag()
    stale_file = work / f".p.parquet.{dead}k7xgtl7f.tmp"
    stale_file.write_bytes(b"PAR1 half-written")
    stale_dir = work / f".st.tmp-{dead}uv6w_5ah"
    stale_dir.mkdir()
    (stale_dir / "q_single.json").write_text("{")
    from topicslab._atomic import _writer_tag

    live = work / f".p.parquet.{_writer_tag()}x.tmp"
    live.write_bytes(b"a live writer's")
    other = work / ".p.parquet.k7xgtl7f.tmp"  # (no writer named: not ours to remove)
    other.write_bytes(b"?")
    res = invoke(["population", "--users", "30", "--weeks", "2", "--out", "p.parquet"])
    assert res.exit_code == 0, res.output
    res = invoke(["stats", "--sets", "p.parquet", "--out", "st", "--weeks", "0,1"])
    assert res.exit_code == 0, res.output
    assert not stale_file.exists() and not stale_dir.exists()
    assert live.exists() and other.exists()
    assert tio.read_sets(work / "p.parquet").n_users == 30
