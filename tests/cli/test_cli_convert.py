"""``topicslab convert`` between every supported format: round trips through each, and bad
input as one line naming file and field, with nothing written."""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

from topicslab import io as tio
from topicslab.cli import app
from topicslab.datamodel import TopicSets

runner = CliRunner()

# (file name, --to), every writer the library has
TARGETS = [("s.parquet", None), ("s.csv", None), ("s.tsv", None), ("s.tfrecord", None),
           ("l.csv", "long"), ("l.parquet", "long"), ("p.csv", "profiles"),
           ("p.parquet", "profiles")]


def _sets(version: str = "v1") -> TopicSets:
    rng = np.random.default_rng(11)
    from topicslab.taxonomy import load

    size = load(version).size
    sets = np.full((9, 3, 5), -1, dtype=np.int16)
    for u in range(9):
        for w in range(3):
            n = int(rng.integers(0, 6))
            sets[u, w, :n] = np.sort(rng.choice(size, n, replace=False))
    sets[0, 0, :5] = np.arange(5)  # one full week: every format infers k = 5
    return TopicSets(sets, version, np.arange(100, 109, dtype=np.int64)[::-1].copy())


@pytest.mark.parametrize("name, to", TARGETS)
def test_round_trip_through_every_format(tmp_path, name, to):
    ts = _sets("v1")
    src = tmp_path / "src.parquet"
    tio.write_sets(src, ts)
    mid = tmp_path / name
    args = ["convert", str(src), str(mid)] + (["--to", to] if to else [])
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    assert "9 users × 3 weeks (k = 5, taxonomy v1)" in res.output
    back = tmp_path / "back.parquet"
    res = runner.invoke(app, ["convert", str(mid), str(back)] + (["--from", to] if to else []))
    assert res.exit_code == 0, res.output
    got = tio.read_sets(back)
    assert got.taxonomy.version == "v1"  # detected from the ids where the format has no metadata
    if to == "long":  # long tables list users ascending by id
        ts = ts.subset(np.argsort(ts.user_ids))
    np.testing.assert_array_equal(got.sets, ts.sets)
    np.testing.assert_array_equal(got.user_ids, ts.user_ids)


def test_tfrecord_options(tmp_path):
    src = tmp_path / "src.parquet"
    tio.write_sets(src, _sets("v2"))
    res = runner.invoke(app, ["convert", str(src), str(tmp_path / "r.tfrecord"), "--shards",
                              "2", "--user-ids", "int64"])
    assert res.exit_code == 0, res.output
    (_, data), = list(tio.iter_records(tmp_path / "r-00000-of-00002.tfrecord"))[:1]
    assert tio.decode_example(data)["user_id"].kind == "int64"


@pytest.mark.parametrize("args, field", [
    (["{src}", "{d}/o.csv", "--to", "xml"], "--to"),
    (["{src}", "{d}/o.csv", "--from", "json"], "--from"),
    (["{d}/missing.csv", "{d}/o.csv"], "SOURCE"),
    (["{src}", "{src}"], "TARGET"),
    (["{src}", "{d}/o.csv", "--shards", "2"], "--shards"),
    (["{src}", "{d}/o.tfrecord", "--user-ids", "text"], "--user-ids"),
    (["{src}", "{d}/o.csv", "--taxonomy", "v9"], "--taxonomy"),
    (["{src}", "{d}/nodir/o.csv"], "TARGET"),
    (["{src}", "{d}/o.xyz"], "give --to"),  # the command's option, not the library's format=
])
def test_bad_arguments_one_line_nothing_written(tmp_path, args, field):
    src = tmp_path / "src.parquet"
    tio.write_sets(src, _sets())
    before = sorted(p.name for p in tmp_path.iterdir())
    res = runner.invoke(app, ["convert", *[a.format(src=src, d=tmp_path) for a in args]])
    assert res.exit_code == 2, res.output
    line = res.output.strip()
    assert "\n" not in line and line.startswith("error:"), line
    if field is not None:
        assert field in line
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_bad_source_rows_named(tmp_path):
    src = tmp_path / "p.csv"
    src.write_text("t1,t2\n1,2\n3,x\n")
    res = runner.invoke(app, ["convert", str(src), str(tmp_path / "o.parquet")])
    assert res.exit_code == 2 and "row 2" in res.output and "'t2'" in res.output
    assert not (tmp_path / "o.parquet").exists()
