"""CSV/TSV per-user weekly topic lists."""

from __future__ import annotations

import numpy as np
import pytest

from topicslab.datamodel import TopicSets
from topicslab.errors import InputError
from topicslab.io import read_sets_csv, write_sets_csv


@pytest.mark.parametrize("version", ["v1", "v2"])
@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".csv.gz"])
def test_round_trip(tmp_path, make_sets, same, version, suffix):
    ts = make_sets(version=version, seed=7)
    path = tmp_path / f"s{suffix}"
    write_sets_csv(path, ts)
    same(read_sets_csv(path, taxonomy=version, k=ts.k), ts, metadata=False)


def test_text_layout(tmp_path):
    ts = TopicSets(np.array([[[0, 5, -1], [-1, -1, -1]], [[1, 2, 3], [7, -1, -1]]], np.int16),
                   "v2", [10, 4])
    write_sets_csv(tmp_path / "a.csv", ts)
    assert (tmp_path / "a.csv").read_text() == (
        "user_id,epoch_0_topics,epoch_1_topics\n10,1;15,\n4,4;9;12,19\n")
    write_sets_csv(tmp_path / "a.tsv", ts)
    assert (tmp_path / "a.tsv").read_text().splitlines()[1] == "10\t1;15\t"
    write_sets_csv(tmp_path / "semi.txt", ts, delimiter="|")
    assert read_sets_csv(tmp_path / "semi.txt", delimiter="|").user_ids.tolist() == [10, 4]


def test_k_defaults_to_widest_week(tmp_path):
    p = tmp_path / "hand.csv"
    p.write_text("user_id,epoch_0_topics\n3, 1 ; 4 \n1,\n")
    ts = read_sets_csv(p)
    assert ts.k == 2 and ts.user_ids.tolist() == [3, 1]
    assert ts.topic_ids()[:, 0].tolist() == [[1, 4], [-1, -1]]


def test_header_only_is_empty_population(tmp_path):
    p = tmp_path / "h.csv"
    p.write_text("user_id,epoch_0_topics,epoch_1_topics\n")
    ts = read_sets_csv(p)
    assert ts.sets.shape == (0, 2, 5)


def _bad(tmp_path, text, match, row=None, field=None, **kwargs):
    p = tmp_path / "bad.csv"
    p.write_text(text)
    with pytest.raises(InputError) as info:
        read_sets_csv(p, **kwargs)
    msg = str(info.value)
    assert str(p) in msg and match in msg and "\n" not in msg, msg
    assert info.value.row == row and info.value.field == field, msg


def test_unknown_topic(tmp_path):
    # 2 is a v1 id v2 dropped: detected as v1 unless v2 is asked for
    _bad(tmp_path, "user_id,epoch_0_topics\n1,1;4\n2,1;2\n", "topic id 2", 2, "epoch_0_topics",
         taxonomy="v2")
    _bad(tmp_path, "user_id,epoch_0_topics\n1,1;400\n2,1;2\n", "topic id 2", 2,
         "epoch_0_topics")  # 400 is v2's only: v2, which lacks 2


def test_more_than_k(tmp_path):
    _bad(tmp_path, "user_id,epoch_0_topics\n1,1;4;9\n", "more than k=2", 1, "epoch_0_topics",
         k=2)


def test_duplicate_topic(tmp_path):
    _bad(tmp_path, "user_id,epoch_0_topics,epoch_1_topics\n1,1,4\n2,1,4;4\n", "appears twice",
         2, "epoch_1_topics")
    p = tmp_path / "bad.csv"
    assert read_sets_csv(p, strict=False).topic_ids()[1, 1].tolist() == [4]


def test_duplicate_user(tmp_path):
    _bad(tmp_path, "user_id,epoch_0_topics\n1,1\n1,4\n", "appears more than once", 2, "user_id")


def test_not_integers(tmp_path):
    _bad(tmp_path, "user_id,epoch_0_topics\n1,1\n2,news\n", "'news'", 2, "epoch_0_topics")
    _bad(tmp_path, "user_id,epoch_0_topics\n1,1;4.5\n", "'4.5'", 1, "epoch_0_topics")
    _bad(tmp_path, "user_id,epoch_0_topics\n1,1;;4\n", "''", 1, "epoch_0_topics")
    _bad(tmp_path, "user_id,epoch_0_topics\nabc,1\n", "'abc'", 1, "user_id")


def test_ragged_row(tmp_path):
    _bad(tmp_path, "user_id,epoch_0_topics\n1,1\n2,4,9\n", "expected 2 fields, got 3", 2)


def test_missing_columns(tmp_path):
    _bad(tmp_path, "user_id,epoch_0_topics,epoch_2_topics\n1,1,4\n", "missing week",
         field="epoch_1_topics")
    _bad(tmp_path, "id,epoch_0_topics\n1,1\n", "missing column", None, "user_id")  # no data row


def test_empty_file(tmp_path):
    _bad(tmp_path, "", "empty file")
    _bad(tmp_path, "\n\n", "empty file")  # the header is not a data row
