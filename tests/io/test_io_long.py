"""Long user-week-topic tables (CSV, TSV, Parquet)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from topicslab.datamodel import TopicSets
from topicslab.errors import InputError
from topicslab.io import read_sets_long, write_sets_long


def _sorted_by_user(ts: TopicSets) -> TopicSets:
    order = np.argsort(ts.user_ids)
    return TopicSets(ts.sets[order], ts.taxonomy, ts.user_ids[order], ts.metadata)


@pytest.mark.parametrize("version", ["v1", "v2"])
@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".parquet"])
def test_round_trip(tmp_path, make_sets, same, version, suffix):
    ts = make_sets(version=version, seed=11, p_short=0.6)
    ts.sets[0] = -1  # a user with no topics at all still comes back
    ts.sets[:, -1] = -1  # and so does an all-empty last week
    path = tmp_path / f"long{suffix}"
    write_sets_long(path, ts)
    back = read_sets_long(path, taxonomy=version, k=ts.k)
    same(back, _sorted_by_user(ts), metadata=suffix == ".parquet")


def test_layout_and_grouping(tmp_path):
    p = tmp_path / "hand.csv"
    p.write_text("user_id,week,topic_id\n20,1,9\n5,0,4\n20,1,1\n5,2,\n")
    ts = read_sets_long(p)
    assert ts.user_ids.tolist() == [5, 20] and ts.sets.shape == (2, 3, 2)
    assert ts.topic_ids().tolist() == [[[4, -1], [-1, -1], [-1, -1]],
                                       [[-1, -1], [1, 9], [-1, -1]]]
    assert read_sets_long(p, weeks=5, k=5).sets.shape == (2, 5, 5)


def _bad(path, match, row=None, field=None, **kwargs):
    with pytest.raises(InputError) as info:
        read_sets_long(path, **kwargs)
    msg = str(info.value)
    assert str(path) in msg and match in msg and "\n" not in msg, msg
    assert info.value.row == row and info.value.field == field, msg


def test_bad_csv(tmp_path):
    p = tmp_path / "b.csv"
    p.write_text("user_id,week,topic_id\n1,0,1\n1,0,2\n")
    _bad(p, "topic id 2", 2, "topic_id", taxonomy="v2")
    assert read_sets_long(p).taxonomy.version == "v1"  # 2 is a v1 id only
    p.write_text("user_id,week,topic_id\n1,0,629\n1,0,2\n")
    _bad(p, "topic id 2 is not in taxonomy v2", 2, "topic_id")  # in neither: v2's error
    p.write_text("user_id,week,topic_id\n1,0,4\n2,0,1\n1,0,4\n")
    _bad(p, "appears twice", 3, "topic_id")
    assert read_sets_long(p, strict=False).topic_ids()[0, 0].tolist() == [4]
    p.write_text("user_id,week,topic_id\n1,0,1\n1,0,4\n1,0,9\n")
    _bad(p, "more than k=2", 3, "topic_id", k=2)
    p.write_text("user_id,week,topic_id\n1,x,1\n")
    _bad(p, "'x'", 1, "week")
    p.write_text("user_id,week,topic_id\n1,-1,1\n")
    _bad(p, "negative", 1, "week")
    p.write_text("user_id,week,topic_id\n1,0,1\n1,3,1\n")
    _bad(p, "beyond", 2, "week", weeks=2)
    p.write_text("user_id,week,topic_id\n1,0\n")
    _bad(p, "expected 3 fields", 1)
    p.write_text("user_id,topic_id\n1,0\n")
    _bad(p, "missing column", None, "week")


def test_bad_parquet(tmp_path):
    p = tmp_path / "b.parquet"
    pq.write_table(pa.table({"user_id": [1, 2], "week": [0, 0], "topic_id": ["1", "4"]}), p)
    _bad(p, "expected integers", 1, "topic_id")
    pq.write_table(pa.table({"user_id": [1, 2], "week": [0.0, 0.5], "topic_id": [1, 4]}), p)
    _bad(p, "expected an integer", 2, "week")
    p.write_bytes(b"garbage")
    _bad(p, "not a valid Parquet")
