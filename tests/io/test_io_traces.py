"""Parquet site traces: round trip, layout, bad input."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from topicslab.datamodel import SiteTraces
from topicslab.errors import InputError
from topicslab.io import read_traces, read_traces_parquet, write_traces, write_traces_parquet


def _traces(version="v2", seed=0):
    rng = np.random.default_rng(seed)
    size = 349 if version == "v1" else 469
    t = rng.integers(0, size, (3, 6, 4)).astype(np.int16)
    t[rng.random(t.shape) < 0.2] = -1  # withheld answers
    return SiteTraces(t, version, user_ids=np.array([9, 2, 70, 4, 11, 3]) * 1000,
                      site_ids=np.array([501, 17, 90]), metadata={"sites": "random", "p": 0.05})


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_round_trip(tmp_path, version):
    tr = _traces(version)
    write_traces(tmp_path / "t.parquet", tr)
    back = read_traces(tmp_path / "t.parquet")
    np.testing.assert_array_equal(back.traces, tr.traces)
    np.testing.assert_array_equal(back.user_ids, tr.user_ids)
    np.testing.assert_array_equal(back.site_ids, tr.site_ids)
    assert back.metadata == tr.metadata and back.taxonomy.version == version


def test_layout(tmp_path):
    tr = _traces()
    write_traces_parquet(tmp_path / "t.parquet", tr)
    table = pq.read_table(tmp_path / "t.parquet")
    assert table.column_names == ["user_id", "site", "epoch_0_topic", "epoch_1_topic",
                                  "epoch_2_topic", "epoch_3_topic"]
    assert table.num_rows == 18
    assert table.column("epoch_0_topic").type == pa.int32()
    withheld = int((tr.traces[..., 0] < 0).sum())
    assert table.column("epoch_0_topic").null_count == withheld


def test_missing_pairs_read_as_withheld(tmp_path):
    p = tmp_path / "sparse.parquet"
    pq.write_table(pa.table({"user_id": [1, 2, 1], "site": [10, 10, 20],
                             "epoch_0_topic": pa.array([1, 4, None], pa.int32())}), p)
    tr = read_traces_parquet(p)
    assert tr.taxonomy.id_of(tr.traces[..., 0]).tolist() == [[1, 4], [-1, -1]]


@pytest.mark.parametrize(("columns", "match", "row", "field"), [
    ({"user_id": [1, 2], "site": [1, 1], "epoch_0_topic": [1, 2]}, "topic id 2", 2,
     "epoch_0_topic"),
    ({"user_id": [1, 1], "site": [1, 1], "epoch_0_topic": [1, 1]}, "twice", 2, "site"),
    ({"user_id": [1], "epoch_0_topic": [1]}, "missing column", None, "site"),
    ({"user_id": [1], "site": [1], "epoch_1_topic": [1]}, "missing week", None,
     "epoch_0_topic"),
    ({"user_id": [1], "site": ["a"], "epoch_0_topic": [1]}, "expected integers", 1, "site"),
    ({"user_id": [1, 2], "site": [1, 1], "epoch_0_topic": [1.0, 2.5]}, "expected an integer",
     2, "epoch_0_topic"),
])
def test_bad_input(tmp_path, columns, match, row, field):
    p = tmp_path / "bad.parquet"
    pq.write_table(pa.table(columns), p)
    with pytest.raises(InputError) as info:
        read_traces_parquet(p)
    assert match in str(info.value) and str(p) in str(info.value)
    assert info.value.row == row and info.value.field == field


def test_not_parquet(tmp_path):
    p = tmp_path / "t.parquet"
    p.write_bytes(b"PAR1 this is not parquet")
    with pytest.raises(InputError, match="not a valid Parquet"):
        read_traces(p)
    with pytest.raises(InputError, match="Parquet"):
        read_traces(tmp_path / "t.csv")
