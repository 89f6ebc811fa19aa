"""Profile tables from other tools (one row per user or user-week, topic columns t1..tk) and
taxonomy detection from the ids."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from topicslab.errors import InputError
from topicslab.io import detect_taxonomy, read_sets, read_sets_profiles, write_sets
from topicslab.io.profiles import is_profile_table, write_sets_profiles

# v1 ids: 43 and 57 are absent from v2 (the "topic id 43 is not in taxonomy v2")
V1_FILE = "t1,t2,t3,t4,t5,count\n1,43,57,100,200,2\n3,4,,,,1\n"


def test_v1_profiles_with_counts(tmp_path):
    p = tmp_path / "v1.csv"
    p.write_text(V1_FILE)
    assert is_profile_table(p)
    ts = read_sets(p)
    assert ts.taxonomy.version == "v1" and ts.sets.shape == (3, 1, 5)
    assert ts.user_ids.tolist() == [0, 1, 2]
    assert ts.topic_ids()[:, 0].tolist() == [[1, 43, 57, 100, 200], [1, 43, 57, 100, 200],
                                             [3, 4, -1, -1, -1]]
    with pytest.raises(InputError, match="topic id 43 is not in taxonomy v2") as info:
        read_sets(p, taxonomy="v2")
    assert (info.value.row, info.value.field) == (1, "t2")


@pytest.mark.parametrize("header", ["topic1\ttopic2\tuser_id", "Topic_1\tTOPIC 2\tUser ID",
                                    "topic_id_0\ttopic_id_1\tuid"])
def test_header_variants(tmp_path, header):
    p = tmp_path / "h.tsv"
    p.write_text(f"{header}\n1\t400\t9\n250\t\t7\n")
    ts = read_sets(p)
    assert ts.taxonomy.version == "v2"  # 400 is v2's only
    assert ts.user_ids.tolist() == [9, 7] and ts.k == 2
    assert ts.topic_ids()[:, 0].tolist() == [[1, 400], [250, -1]]


def test_headerless_and_minus_one_padding(tmp_path):
    p = tmp_path / "n.csv"
    p.write_text("1,2,3\n4,-1,-1\n")
    ts = read_sets_profiles(p)
    assert ts.taxonomy.version == "v1" and ts.user_ids.tolist() == [0, 1]
    assert ts.topic_ids()[:, 0].tolist() == [[1, 2, 3], [4, -1, -1]]
    p.write_text("1,2,3\n4,x,1\n")
    with pytest.raises(InputError) as info:
        read_sets_profiles(p)
    assert (info.value.row, info.value.field) == (2, "column 2")


def test_user_week_rows_and_parquet(tmp_path):
    table = pa.table({"user": [5, 5, 2], "epoch": [1, 3, 2], "t1": [1, 4, None],
                      "t2": [None, 9, None]})
    p = tmp_path / "w.parquet"
    pq.write_table(table, p)
    ts = read_sets(p)
    assert ts.user_ids.tolist() == [5, 2] and ts.sets.shape == (2, 3, 2)
    assert ts.topic_ids().tolist() == [[[1, -1], [-1, -1], [4, 9]],
                                       [[-1, -1], [-1, -1], [-1, -1]]]


@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".parquet"])
def test_round_trip(tmp_path, make_sets, same, suffix):
    for weeks in (1, 3):
        ts = make_sets(n=12, weeks=weeks, version="v1", seed=weeks)
        p = tmp_path / f"r{weeks}{suffix}"
        write_sets(p, ts, format="profiles")
        back = read_sets(p, k=ts.k)
        same(back, ts, metadata=False)


@pytest.mark.parametrize("text, match, row, field", [
    ("t1,t2,count\n1,2,0\n", "positive integer", 1, "count"),
    ("t1,t2,count\n1,2,x\n", "expected an integer", 1, "count"),
    ("t1,t3\n1,2\n", "numbered consecutively", None, "t3"),
    ("t1,label\n1,a\n", "unknown column", None, "label"),
    ("t1,week\n1,0\n", "needs a user_id", None, "week"),
    ("user_id,t1,count\n1,1,2\n", "cannot share one user id", None, "count"),
    ("user_id,week,t1\n1,0,1\n1,0,4\n", "appears twice", 2, "week"),
    ("user_id,t1\n1,1\n1,4\n", "appears more than once", 2, "user_id"),
    ("t1,t2\n1,1\n", "appears twice", 1, "t2"),
    ("t1,t2\n1,700\n", "topic id 700", 1, "t2"),
    ("t1,t2\n1\n", "expected 2 fields", 1, None),
])
def test_bad_input_names_file_row_field(tmp_path, text, match, row, field):
    p = tmp_path / "bad.csv"
    p.write_text(text)
    with pytest.raises(InputError) as info:
        read_sets_profiles(p)
    msg = str(info.value)
    assert match in msg and str(p) in msg and "\n" not in msg, msg
    assert (info.value.row, info.value.field) == (row, field), msg


def test_writer_is_all_or_nothing(tmp_path, make_sets, monkeypatch):
    p = tmp_path / "out.csv"
    p.write_text("old")
    import pyarrow.csv as pacsv

    def boom(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(pacsv, "write_csv", boom)
    with pytest.raises(OSError):
        write_sets_profiles(p, make_sets(n=3))
    assert p.read_text() == "old" and sorted(x.name for x in tmp_path.iterdir()) == ["out.csv"]


def test_detect_taxonomy_rule():
    assert detect_taxonomy(np.array([1, 400])).version == "v2"
    assert detect_taxonomy(np.array([[1, 43], [-1, -1]])).version == "v1"
    assert detect_taxonomy(np.array([1, 243])).version == "v2"  # in both: the current one
    assert detect_taxonomy(np.array([43, 630])).version == "v2"  # neither: v2 reports it
    assert detect_taxonomy(np.zeros(0)).version == "v2"
