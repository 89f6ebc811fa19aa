"""Parquet topic-set sequences: round trips, streaming, metadata, bad input, atomicity."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from topicslab.datamodel import TopicSets
from topicslab.errors import InputError
from topicslab.io import SetsWriter, iter_sets_parquet, read_sets_parquet, write_sets_parquet


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_round_trip(tmp_path, make_sets, same, version):
    ts = make_sets(version=version, seed=3)
    path = tmp_path / "s.parquet"
    write_sets_parquet(path, ts)
    back = read_sets_parquet(path)
    same(back, ts)
    assert back.taxonomy.version == version


def test_schema_and_metadata_on_disk(tmp_path, make_sets):
    ts = make_sets(n=5, weeks=3, k=4)
    path = tmp_path / "s.parquet"
    write_sets_parquet(path, ts)
    schema = pq.read_schema(path)
    assert schema.names == ["user_id", "epoch_0_topics", "epoch_1_topics", "epoch_2_topics"]
    assert schema.field("user_id").type == pa.int64()
    assert schema.field("epoch_1_topics").type == pa.list_(pa.int32())
    block = json.loads(schema.metadata[b"topicslab"])
    assert block["taxonomy"] == "v2" and block["k"] == 4 and block["weeks"] == 3
    assert block["provenance"] == ts.metadata
    table = pq.read_table(path)
    first = table.column("epoch_0_topics")[0].as_py()
    assert first == [int(t) for t in ts.topic_ids()[0, 0] if t >= 0]  # ids, not indices


def test_all_empty_and_zero_users(tmp_path, same):
    empty = TopicSets(np.full((3, 2, 5), -1, np.int16), "v2", [7, 8, 9], {})
    write_sets_parquet(tmp_path / "e.parquet", empty)
    same(read_sets_parquet(tmp_path / "e.parquet"), empty)
    none = TopicSets(np.zeros((0, 4, 5), np.int16), "v1")
    write_sets_parquet(tmp_path / "n.parquet", none)
    same(read_sets_parquet(tmp_path / "n.parquet"), none)


def test_iter_sets_and_writer_chunks(tmp_path, make_sets, same):
    ts = make_sets(n=100, seed=1)
    path = tmp_path / "chunks.parquet"
    with SetsWriter(path, "v2", 5, 4, ts.metadata, row_group_size=16) as w:
        for start in range(0, 100, 30):
            w.write(ts.subset(slice(start, start + 30)))
    chunks = list(iter_sets_parquet(path, batch_size=25))
    assert [len(c) for c in chunks] == [25, 25, 25, 25]
    whole = TopicSets(np.concatenate([c.sets for c in chunks]), "v2",
                      np.concatenate([c.user_ids for c in chunks]), chunks[0].metadata)
    same(whole, ts)


def test_writer_exception_leaves_nothing(tmp_path, make_sets):
    path = tmp_path / "w.parquet"
    with pytest.raises(RuntimeError), SetsWriter(path, "v2", 5, 4) as w:
        w.write(make_sets(n=10))
        raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []


def test_writer_rejects_mismatched_chunk(tmp_path, make_sets):
    path = tmp_path / "w.parquet"
    with pytest.raises(InputError, match="weeks"), SetsWriter(path, "v2", 5, 3) as w:
        w.write(make_sets(n=4, weeks=4))
    assert not path.exists()
    path.write_bytes(b"old")
    with pytest.raises(InputError), SetsWriter(path, "v2", 5, 4) as w:
        w.write(make_sets(n=4, version="v1"))
    assert path.read_bytes() == b"old"  # the previous file survives a failed rewrite


def _write(path, columns: dict, metadata: dict | None = None):
    table = pa.table(columns)
    if metadata is not None:
        table = table.replace_schema_metadata({b"topicslab": json.dumps(metadata)})
    pq.write_table(table, path)
    return str(path)


def _bad(path, match, **kwargs):
    with pytest.raises(InputError) as info:
        read_sets_parquet(path, **kwargs)
    text = str(info.value)
    assert str(path) in text
    assert match in text, text
    assert "\n" not in text
    return info.value


def test_unknown_topic(tmp_path):
    p = _write(tmp_path / "u.parquet", {"user_id": [1, 2], "epoch_0_topics": [[1], [2, 3]]})
    err = _bad(p, "topic id 2", taxonomy="v2")
    assert err.row == 2 and err.field == "epoch_0_topics"
    assert read_sets_parquet(p).taxonomy.version == "v1"  # no metadata: the ids say v1
    p = _write(tmp_path / "m.parquet", {"user_id": [1, 2], "epoch_0_topics": [[1], [2, 3]]},
               {"taxonomy": "v2"})
    err = _bad(p, "topic id 2")  # the metadata's taxonomy wins over detection
    assert err.row == 2 and err.field == "epoch_0_topics"


def test_too_many_topics(tmp_path):
    p = _write(tmp_path / "k.parquet", {"user_id": [1, 2], "epoch_0_topics": [[1], [1, 4, 9]]},
               {"taxonomy": "v2", "k": 2, "weeks": 1})
    err = _bad(p, "more than k=2")
    assert err.row == 2


def test_duplicates_strict_and_lenient(tmp_path):
    p = _write(tmp_path / "d.parquet", {"user_id": [5, 6], "epoch_0_topics": [[4, 9], [9, 4, 9]]})
    err = _bad(p, "appears twice")
    assert err.row == 2 and err.field == "epoch_0_topics"
    lenient = read_sets_parquet(p, strict=False, k=3)
    assert lenient.topic_ids()[1, 0].tolist() == [4, 9, -1]


def test_duplicate_user(tmp_path):
    p = _write(tmp_path / "du.parquet", {"user_id": [5, 3, 5], "epoch_0_topics": [[1], [], [4]]})
    err = _bad(p, "user id 5")
    assert err.row == 3 and err.field == "user_id"


def test_missing_week_column(tmp_path):
    p = _write(tmp_path / "m.parquet", {"user_id": [1], "epoch_0_topics": [[1]],
                                        "epoch_2_topics": [[1]]})
    err = _bad(p, "missing week")
    assert err.field == "epoch_1_topics"


def test_missing_user_column(tmp_path):
    p = _write(tmp_path / "nu.parquet", {"epoch_0_topics": [[1]]})
    assert _bad(p, "missing column").field == "user_id"


def test_wrong_types(tmp_path):
    p = _write(tmp_path / "s.parquet", {"user_id": [1, 2], "epoch_0_topics": [["1"], ["x"]]})
    assert _bad(p, "expected integers").field == "epoch_0_topics"
    p = _write(tmp_path / "f.parquet", {"user_id": [1, 2], "epoch_0_topics": [[1.0], [4.5]]})
    err = _bad(p, "expected an integer")
    assert err.row == 2
    p = _write(tmp_path / "ok.parquet", {"user_id": [1, 2], "epoch_0_topics": [[1.0], [4.0]]})
    assert read_sets_parquet(p).topic_ids()[1, 0, 0] == 4
    p = _write(tmp_path / "flat.parquet", {"user_id": [1], "epoch_0_topics": [1]})
    assert _bad(p, "expected a list").field == "epoch_0_topics"
    p = _write(tmp_path / "uid.parquet", {"user_id": ["a"], "epoch_0_topics": [[1]]})
    assert _bad(p, "expected integers").field == "user_id"
    p = _write(tmp_path / "null.parquet", {"user_id": [1, 2], "epoch_0_topics": [[1], [None]]})
    assert _bad(p, "missing value").row == 2


def test_null_list_is_empty_week(tmp_path):
    p = _write(tmp_path / "n.parquet", {"user_id": [1, 2], "epoch_0_topics": [[1], None]})
    assert read_sets_parquet(p).sets[1, 0].tolist() == [-1]


def test_not_parquet_empty_truncated_missing(tmp_path, make_sets):
    junk = tmp_path / "junk.parquet"
    junk.write_text("user_id,epoch_0_topics\n1,2\n")
    _bad(junk, "not a valid Parquet file")
    empty = tmp_path / "empty.parquet"
    empty.write_bytes(b"")
    _bad(empty, "empty file")
    good = tmp_path / "good.parquet"
    write_sets_parquet(good, make_sets(n=20))
    cut = tmp_path / "cut.parquet"
    cut.write_bytes(good.read_bytes()[:-30])
    _bad(cut, "not a valid Parquet file")
    _bad(tmp_path / "absent.parquet", "no such file")


def test_taxonomy_mismatch(tmp_path, make_sets):
    path = tmp_path / "v1.parquet"
    write_sets_parquet(path, make_sets(n=3, version="v1"))
    _bad(path, "taxonomy v1", taxonomy="v2")


def test_large_files_are_read_in_batches_identically(tmp_path, monkeypatch):
    from topicslab import population
    from topicslab.io import parquet_sets, read_sets, write_sets

    sets = population.generate(3_500, 3, seed=4)
    path = tmp_path / "big.parquet"
    write_sets(path, sets, row_group_size=700)
    whole = read_sets(path)
    monkeypatch.setattr(parquet_sets, "READ_BATCH", 1_000)
    batched = read_sets(path)
    np.testing.assert_array_equal(batched.sets, whole.sets)
    np.testing.assert_array_equal(batched.user_ids, whole.user_ids)
    assert batched.metadata == whole.metadata
    # a user id repeated in two different batches is still caught, with its row
    dup = sets.user_ids.copy()
    dup[3_000] = dup[10]
    # (written with pyarrow: every writer of topicslab refuses such sets)
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    table = table.set_column(table.schema.get_field_index("user_id"),
                             table.schema.field("user_id"), pa.array(dup))
    pq.write_table(table, path, row_group_size=700)
    with pytest.raises(InputError, match="row 3001"):
        read_sets(path)


def test_atomic_writes_get_the_umask_mode(tmp_path):
    import os

    from topicslab._atomic import write_text_atomic

    old = os.umask(0o022)
    try:
        write_text_atomic(tmp_path / "a.txt", "x")
    finally:
        os.umask(old)
    assert (tmp_path / "a.txt").stat().st_mode & 0o777 == 0o644


def test_arrow_memory_is_given_back_after_reading_and_writing(tmp_path, make_sets,
                                                              monkeypatch):
    """Arrow's pool keeps a large file's buffers (0.58 GB after a 10M-user population), which
    a run then carried through every later stage: the reader and the writer give it back,
    also when they fail."""
    import topicslab.io.parquet_sets as mod

    calls: list[str] = []
    monkeypatch.setattr(mod, "release_arrow_memory", lambda: calls.append("released"))
    ts = make_sets(n=40, weeks=2, seed=4)
    write_sets_parquet(tmp_path / "s.parquet", ts)
    assert calls == ["released"]
    read_sets_parquet(tmp_path / "s.parquet")
    assert calls == ["released"] * 2
    (tmp_path / "bad.parquet").write_bytes(b"PAR1 not parquet")
    with pytest.raises(InputError):
        read_sets_parquet(tmp_path / "bad.parquet")
    assert calls == ["released"] * 3
    with pytest.raises(RuntimeError), SetsWriter(tmp_path / "t.parquet", ts.taxonomy, ts.k,
                                                 ts.n_weeks, {}) as w:
        w.write(ts)
        raise RuntimeError("stopped")
    assert calls == ["released"] * 4 and not (tmp_path / "t.parquet").exists()
