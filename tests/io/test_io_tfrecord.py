"""TFRecord traces of the public release: CRC32C, framing, protobuf, sets, shards."""

from __future__ import annotations

import gzip
import struct

import numpy as np
import pytest
from _tfrecord_oracle import (
    crc32c_table,
    iter_sets_reference,
    read_sets_reference,
    write_sets_reference,
)

from topicslab.datamodel import TopicSets
from topicslab.errors import InputError
from topicslab.io import (
    crc32c,
    decode_example,
    encode_example,
    iter_records,
    iter_sets_tfrecord,
    masked_crc32c,
    read_sets_tfrecord,
    write_records,
    write_sets_tfrecord,
)
from topicslab.io.tfrecord import Feature

# tf.train.Example{epoch_0_topics: Int64List[1, 300], epoch_0_weights: FloatList[1.0, 1.0]},
# assembled by hand from the protobuf wire format: 0x0a = field 1 length-delimited, etc.
EXAMPLE = bytes.fromhex(
    "0a3c"                                              # Example.features, 60 bytes
    "0a19" "0a0e" + b"epoch_0_topics".hex()             # map entry, key
    + "1207" "1a05" "0a03" "01ac02"                     # Feature.int64_list, packed 1, 300
    + "0a1f" "0a0f" + b"epoch_0_weights".hex()
    + "120c" "120a" "0a08" "0000803f" "0000803f"        # Feature.float_list, packed 1.0, 1.0
)
# the record: u64 length 62, masked CRC32C of it, data, masked CRC32C of the data
RECORD = (bytes.fromhex("3e00000000000000") + struct.pack("<I", 0xE740D2D9) + EXAMPLE
          + struct.pack("<I", 0x935BC5DF))


@pytest.mark.parametrize("fn", [crc32c, crc32c_table])
def test_crc32c_vectors(fn):
    assert fn(b"123456789") == 0xE3069283
    assert fn(b"") == 0
    # RFC 3720 appendix B.4
    assert fn(bytes(32)) == 0x8A9136AA
    assert fn(b"\xff" * 32) == 0x62A8AB43
    assert fn(bytes(range(32))) == 0x46DD794E


def test_known_record_bytes(tmp_path):
    assert len(EXAMPLE) == 62
    ex = encode_example({"epoch_0_topics": [1, 300],
                         "epoch_0_weights": np.array([1.0, 1.0], np.float32)})
    assert ex == EXAMPLE
    path = tmp_path / "one.tfrecord"
    write_records(path, [EXAMPLE])
    assert path.read_bytes() == RECORD
    assert masked_crc32c(RECORD[:8]) == 0xE740D2D9
    assert list(iter_records(path)) == [(1, EXAMPLE)]
    feats = decode_example(EXAMPLE)
    assert feats["epoch_0_topics"] == Feature("int64", [1, 300])
    assert feats["epoch_0_weights"] == Feature("float", [1.0, 1.0])


def test_decode_unpacked_negative_and_bytes():
    ex = encode_example({"a": Feature("int64", [-1, 2**40]), "b": [b"xy", b""],
                         "c": Feature("float", [])})
    feats = decode_example(ex)
    assert feats["a"].values == [-1, 2**40]
    assert feats["b"] == Feature("bytes", [b"xy", b""])
    assert feats["c"] == Feature("float", [])
    # unpacked repeated int64 (field 1, varint) must parse too
    unpacked = bytes.fromhex("0a10" "0a0e" "0a01" "78" "1209" "1a07" "0801" "08ac02" "0803")
    assert decode_example(unpacked)["x"].values == [1, 300, 3]
    with pytest.raises(ValueError, match="malformed"):
        decode_example(EXAMPLE[:-3])


def test_release_style_slots_deduplicated(tmp_path):
    rec = encode_example({
        "epoch_0_topics": [1, 4, 4, 1, 9], "epoch_0_weights": [1.0] * 5,
        "epoch_1_topics": [9, 9, 9, 9, 9], "epoch_1_weights": [1.0] * 5,
    })
    path = tmp_path / "release.tfrecord"
    write_records(path, [rec, rec])
    ts = read_sets_tfrecord(path)
    assert ts.k == 5 and ts.user_ids.tolist() == [0, 1] and ts.taxonomy.version == "v2"
    assert ts.topic_ids()[0].tolist() == [[1, 4, 9, -1, -1], [9, -1, -1, -1, -1]]


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_round_trip(tmp_path, make_sets, same, version):
    ts = make_sets(version=version, seed=5)
    path = tmp_path / "s.tfrecord"
    write_sets_tfrecord(path, ts)
    same(read_sets_tfrecord(path, taxonomy=version), ts, metadata=False)


def test_written_slots_repeat_last_topic(tmp_path):
    ts = TopicSets(np.array([[[0, 3, -1, -1, -1], [-1] * 5]], np.int16), "v2", [42])
    path = tmp_path / "pad.tfrecord"
    write_sets_tfrecord(path, ts)
    (_, data), = iter_records(path)
    feats = decode_example(data)
    assert feats["epoch_0_topics"].values == [1, 12, 12, 12, 12]
    assert feats["epoch_0_weights"].values == [1.0] * 5
    assert feats["epoch_1_topics"].values == []
    assert feats["user_id"] == Feature("bytes", [b"user 42"])  # the release's id
    assert list(feats) == ["epoch_0_topics", "epoch_0_weights", "epoch_1_topics",
                           "epoch_1_weights", "user_id"]  # key order, as protobuf's own


def test_shards_glob_directory_and_streaming(tmp_path, make_sets, same):
    ts = make_sets(n=50, seed=2)
    names = write_sets_tfrecord(tmp_path / "d" / "topic_set_sequences.tfrecord", ts, shards=4)
    assert [n.rsplit("/", 1)[1] for n in names] == [
        f"topic_set_sequences-0000{i}-of-00004.tfrecord" for i in range(4)]
    same(read_sets_tfrecord(tmp_path / "d"), ts, metadata=False)
    same(read_sets_tfrecord(str(tmp_path / "d" / "*-of-00004.tfrecord")), ts, metadata=False)
    chunks = list(iter_sets_tfrecord(tmp_path / "d", batch_size=20))
    assert [len(c) for c in chunks] == [20, 20, 10]
    np.testing.assert_array_equal(np.concatenate([c.sets for c in chunks]), ts.sets)
    (tmp_path / "d" / "topic_set_sequences-00002-of-00004.tfrecord").unlink()
    with pytest.raises(InputError, match=r"1 of 4 shards missing, first .*-00002-of-00004"):
        read_sets_tfrecord(tmp_path / "d")


def test_gzip(tmp_path, make_sets, same):
    ts = make_sets(n=10)
    plain = tmp_path / "p.tfrecord"
    write_sets_tfrecord(plain, ts)
    gz = tmp_path / "p.tfrecord.gz"
    gz.write_bytes(gzip.compress(plain.read_bytes()))
    same(read_sets_tfrecord(gz), ts, metadata=False)


def _bad(path, match, row=None, field=None, **kwargs):
    with pytest.raises(InputError) as info:
        read_sets_tfrecord(path, **kwargs)
    msg = str(info.value)
    assert str(path) in msg and match in msg and "\n" not in msg, msg
    assert info.value.row == row and info.value.field == field, msg


def test_truncated_and_corrupt(tmp_path):
    good = RECORD * 3
    p = tmp_path / "t.tfrecord"
    p.write_bytes(good[:-5])
    _bad(p, "truncated record", 3, "data")
    p.write_bytes(good + b"\x01\x02")
    _bad(p, "truncated record header", 4, "length")
    flipped = bytearray(good)
    flipped[len(RECORD) + 20] ^= 0x40
    p.write_bytes(bytes(flipped))
    _bad(p, "data CRC mismatch", 2, "data")
    p.write_bytes(b"user_id,epoch_0_topics\n1,2;3\n")
    _bad(p, "length CRC mismatch", 1, "length")
    p.write_bytes(b"")
    _bad(p, "empty file")
    _bad(tmp_path / "nothing-here.tfrecord", "no such file")
    _bad(tmp_path / "nomatch-*.tfrecord", "no files match")


def test_bad_examples(tmp_path):
    p = tmp_path / "b.tfrecord"

    def put(*examples):
        write_records(p, [encode_example(e) for e in examples])

    put({"epoch_0_topics": [1]}, {"epoch_0_topics": [1, 2]})
    _bad(p, "topic id 2", 2, "epoch_0_topics", taxonomy="v2")
    assert read_sets_tfrecord(p).taxonomy.version == "v1"  # 2 is a v1 id only
    put({"epoch_0_topics": [629]}, {"epoch_0_topics": [1, 2]})
    _bad(p, "topic id 2 is not in taxonomy v2", 2, "epoch_0_topics")
    put({"epoch_0_topics": [1]}, {"epoch_0_topics": [1, 4, 9]})
    _bad(p, "more than k=2", 2, "epoch_0_topics", k=2)
    put({"epoch_0_topics": [1], "epoch_1_topics": [1]}, {"epoch_0_topics": [1]})
    _bad(p, "missing week", 2, "epoch_1_topics")
    put({"epoch_0_topics": [1], "epoch_2_topics": [1]})
    _bad(p, "missing week", 1, "epoch_1_topics")
    put({"epoch_0_topics": [1.0]})
    _bad(p, "Int64List", 1, "epoch_0_topics")
    put({"epoch_0_topics": [1], "user_id": [3]}, {"epoch_0_topics": [4], "user_id": [3]})
    _bad(p, "user id 3", 2, "user_id")
    write_records(p, [EXAMPLE[:-2]])
    _bad(p, "malformed", 1)


# ------------------------------------------------------------------ bulk (numba) paths
# The record-by-record oracles (tests/io/_tfrecord_oracle.py) are the reference; the bulk reader and
# writer must agree with it byte for byte, array for array and error for error.

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from topicslab.io import _tfrecord_fast as fast  # noqa: E402
from topicslab.io import tfrecord  # noqa: E402

_SETTINGS = settings(max_examples=60, deadline=None,
                     suppress_health_check=[HealthCheck.function_scoped_fixture])


def _outcome(fn, *args, **kwargs):
    """What a read gives: the arrays, or the error as the user sees it."""
    try:
        got = fn(*args, **kwargs)
        if not isinstance(got, TopicSets):  # an iterator of chunks: outcome per chunk
            out = []
            try:
                for chunk in got:
                    out.append(_outcome(lambda c=chunk: c))
            except Exception as exc:
                out.append(_error(exc))
            return out
    except Exception as exc:
        return _error(exc)
    return ("ok", got.taxonomy.version, got.sets.shape, got.sets.tolist(), got.user_ids.tolist())


def _error(exc):
    return ("error", type(exc).__name__, str(exc), getattr(exc, "row", None),
            getattr(exc, "field", None))


def _same_reads(path, **kwargs):
    fast_read = _outcome(read_sets_tfrecord, path, **kwargs)
    assert fast_read == _outcome(read_sets_reference, path, **kwargs)
    for batch in (1, 3, 1 << 16):
        kw = {key: v for key, v in kwargs.items() if key != "weeks"}
        got = _outcome(iter_sets_tfrecord, path, batch, **kw)
        assert got == _outcome(iter_sets_reference, path, batch, **kw)
    return fast_read


@st.composite
def _sets(draw):
    version = draw(st.sampled_from(["v1", "v2"]))
    size = 349 if version == "v1" else 469
    n = draw(st.integers(0, 8))
    weeks = draw(st.integers(0, 4))
    k = draw(st.integers(0, 6))
    rows = draw(st.lists(st.lists(st.lists(st.integers(-1, size - 1), min_size=k, max_size=k),
                                  min_size=weeks, max_size=weeks), min_size=n, max_size=n))
    sets = np.array(rows, dtype=np.int16).reshape(n, weeks, k)  # any order, duplicates too
    ids = draw(st.lists(st.integers(-2**63, 2**63 - 1), min_size=n, max_size=n))
    return TopicSets(sets, version, np.array(ids, dtype=np.int64))


@_SETTINGS
@given(sets=_sets(), shards=st.integers(1, 3),
       with_ids=st.sampled_from(["bytes", "int64", "none", True, False]))
def test_bulk_writer_is_byte_identical(tmp_path_factory, sets, shards, with_ids):
    d = tmp_path_factory.mktemp("w")
    if (sets.n_weeks == 0 or (sets.k == 0 and sets.n_users)
            or np.unique(sets.user_ids).size < sets.n_users):
        # sets no reader takes back (no week, a user twice) or reads back changed (k = 0):
        # refused, nothing written (raw slots, a topic twice in a week, are written)
        with pytest.raises(InputError):
            write_sets_tfrecord(d / "a" / "s.tfrecord", sets, shards=shards,
                                user_ids=with_ids)
        assert not (d / "a").exists() or not list((d / "a").iterdir())
        return
    got = write_sets_tfrecord(d / "a" / "s.tfrecord", sets, shards=shards, user_ids=with_ids)
    ref = write_sets_reference(d / "b" / "s.tfrecord", sets, shards=shards,
                                         user_ids=with_ids)
    for g, r in zip(got, ref, strict=True):
        with open(g, "rb") as fg, open(r, "rb") as fr:
            assert fg.read() == fr.read()


def test_bulk_writer_chunks_and_large_ids(tmp_path, make_sets, monkeypatch):
    monkeypatch.setattr(tfrecord, "_WRITE_CHUNK", 7)  # several kernel calls per shard
    ts = make_sets(n=40, seed=9)
    ts.user_ids[:4] = [0, -1, 2**63 - 1, -(2**63)]
    a = write_sets_tfrecord(tmp_path / "a.tfrecord", ts, shards=2)
    b = write_sets_reference(tmp_path / "b.tfrecord", ts, shards=2)
    for g, r in zip(a, b, strict=True):
        with open(g, "rb") as fg, open(r, "rb") as fr:
            assert fg.read() == fr.read()
    back = read_sets_tfrecord(str(tmp_path / "a-*.tfrecord"))
    np.testing.assert_array_equal(back.user_ids, ts.user_ids)
    np.testing.assert_array_equal(back.sets, ts.sets)


def _int64_feature(values, style):
    """Feature bytes of an Int64List written packed, unpacked, or as two packed runs."""
    put = tfrecord._put_varint
    if style == "unpacked":
        inner = b"".join(b"\x08" + put(v) for v in values)
    elif style == "split" and len(values) > 1:
        half = len(values) // 2
        inner = b"".join(tfrecord._len_field(0x0A, b"".join(put(v) for v in part))
                         for part in (values[:half], values[half:]))
    else:
        inner = tfrecord._len_field(0x0A, b"".join(put(v) for v in values)) if values else b""
    return tfrecord._len_field(0x1A, inner)


def _example(entries):
    return tfrecord._len_field(0x0A, b"".join(
        tfrecord._len_field(0x0A, tfrecord._len_field(0x0A, key.encode())
                            + tfrecord._len_field(0x12, feat))
        for key, feat in entries))


_EXTRA = [("weird", tfrecord._feature_bytes(Feature("bytes", [b"\xff\x00", b""]))),
          ("epoch_0_weights", tfrecord._feature_bytes(Feature("float", [1.0] * 5))),
          ("score", tfrecord._feature_bytes(Feature("float", [0.5]))),
          ("big", tfrecord._feature_bytes(Feature("int64", [-5, 2**62]))),
          ("epoch_9_topics", _int64_feature([1, 2], "packed")),  # beyond the weeks: ignored
          ("empty", b"")]


@st.composite
def _release_records(draw):
    """Release-like records: raw slots with duplicates (ids 1..629, all known in v2 are
    most of them), fewer slots sometimes, packed or unpacked, extra features, any order."""
    weeks = draw(st.integers(1, 4))
    with_ids = draw(st.sampled_from([False, "int64", "bytes", "bytes"]))
    n = draw(st.integers(1, 6))
    v2 = tfrecord.pick_taxonomy("v2", None, file="").ids.tolist()
    records = []
    for u in range(n):
        entries = []
        for w in range(weeks):
            slots = draw(st.sampled_from([5, 5, 5, 3, 1, 0, 7]))
            values = draw(st.lists(st.sampled_from(v2[:12] + v2[-3:]), min_size=slots,
                                   max_size=slots))
            style = draw(st.sampled_from(["packed", "unpacked", "split"]))
            entries.append((f"epoch_{w}_topics", _int64_feature(values, style)))
        if with_ids == "int64":
            entries.append(("user_id", _int64_feature([u * 1000 - 3], "packed")))
        elif with_ids:
            uid = draw(st.sampled_from([b"user %d" % (u * 1000 - 3), b"user 0", b"user 007",
                                        b"user -0", b"user x", b"user 9223372036854775808",
                                        b"user -9223372036854775808", b"user %d" % u]))
            entries.append(("user_id", tfrecord._feature_bytes(Feature("bytes", [uid]))))
        entries += draw(st.lists(st.sampled_from(_EXTRA), max_size=3))
        records.append(_example(draw(st.permutations(entries))))
    return records


@_SETTINGS
@given(records=_release_records(), split=st.integers(0, 6), k=st.sampled_from([None, 5, 3]))
def test_bulk_reader_matches_reference(tmp_path_factory, records, split, k):
    d = tmp_path_factory.mktemp("r")
    parts = [records[:split], records[split:]] if 0 < split < len(records) else [records]
    for i, part in enumerate(parts):
        write_records(d / f"s-{i:05d}-of-{len(parts):05d}.tfrecord", part)
    _same_reads(d, k=k)


@_SETTINGS
@given(records=_release_records(), data=st.data())
def test_bulk_reader_corrupt_bytes_match_reference(tmp_path_factory, records, data):
    """Mutated examples (re-framed with valid CRCs) and mutated files: whatever the reference
    does, reading or failing, the bulk reader does too."""
    d = tmp_path_factory.mktemp("c")
    i = data.draw(st.integers(0, len(records) - 1))
    rec = bytearray(records[i])
    how = data.draw(st.sampled_from(["flip", "cut", "insert"]))
    at = data.draw(st.integers(0, len(rec) - 1))
    if how == "flip":
        rec[at] ^= data.draw(st.integers(1, 255))
    elif how == "cut":
        del rec[at:]
    else:
        rec[at:at] = data.draw(st.binary(min_size=1, max_size=3))
    records = [*records[:i], bytes(rec), *records[i + 1:]]
    p = d / "c.tfrecord"
    write_records(p, records)
    _same_reads(p)
    raw = bytearray(p.read_bytes())  # now the framing: CRCs, lengths, truncation
    at = data.draw(st.integers(0, len(raw) - 1))
    if data.draw(st.booleans()):
        raw[at] ^= data.draw(st.integers(1, 255))
    else:
        del raw[at:]
    if raw:
        p.write_bytes(bytes(raw))
        _same_reads(p)


def test_bulk_reader_fallbacks_and_errors(tmp_path):
    p = tmp_path / "e.tfrecord"

    def check(*examples, **kwargs):
        write_records(p, list(examples))
        return _same_reads(p, **kwargs)

    t = [("epoch_0_topics", _int64_feature([1, 1, 4, 4, 1], "unpacked")),
         ("epoch_1_topics", _int64_feature([9], "packed"))]
    good = _example(t)
    ok = check(good, good)
    assert ok[0] == "ok"
    assert read_sets_tfrecord(p).topic_ids()[1].tolist() == [[1, 4, -1, -1, -1],
                                                            [9, -1, -1, -1, -1]]
    # a record with fewer slots, and one with more than k distinct topics
    assert check(good, _example([t[0], ("epoch_1_topics", _int64_feature([], "packed"))]))[0] \
        == "ok"
    got = check(good, _example([t[0], ("epoch_1_topics", _int64_feature([1, 4, 9, 12], "u"))]),
                k=3)
    assert got[2].endswith("4 distinct topics in one week, more than k=3"), got
    # unknown ids in a later week beat nothing; in an earlier week they win over too-many
    bad_id = _example([t[0], ("epoch_1_topics", _int64_feature([630], "packed"))])
    assert check(good, bad_id)[2:] == (f"{p}, row 2, field 'epoch_1_topics': topic id 630 "
                                       "is not in taxonomy v2", 2, "epoch_1_topics")
    wide = _example([("epoch_0_topics", _int64_feature([1, 4, 9, 12, 13, 15], "packed")), t[1]])
    assert check(good, bad_id, wide, k=5)[3:] == (3, "epoch_0_topics")  # week order first
    neg = _example([t[0], ("epoch_1_topics", _int64_feature([-1], "unpacked"))])
    assert "topic id -1 is not" in check(good, neg)[2]
    # odd layouts the kernel leaves to the reference: odd keys, repeated keys, float slots,
    # a Feature with two kinds, non-UTF-8 keys, more weeks, missing weeks, field order
    odd = [
        _example([*t, ("epoch_01_topics", _int64_feature([1], "packed"))]),
        _example([*t, t[0]]),
        _example([t[0], ("epoch_1_topics", tfrecord._feature_bytes(Feature("float", [1.0])))]),
        _example([t[0], ("epoch_1_topics", tfrecord._feature_bytes(Feature("float", [1.0]))
                         + _int64_feature([5], "packed"))]),
        _example([*t, ("\xe9t\xe9", b"")]).replace("\xe9t\xe9".encode(), b"\xe9t\xe9"),
        _example([*t, ("epoch_2_topics", _int64_feature([1], "packed"))]),
        _example([t[0]]),
        b"",
        b"\x12\x00" + good,
        tfrecord._len_field(0x0A, tfrecord._len_field(
            0x0A, tfrecord._len_field(0x12, t[0][1]) + tfrecord._len_field(0x0A, t[0][0].encode()))
            + good[2:]),
    ]
    for rec in odd:
        check(good, rec, good)
    # user ids: missing, two values, repeated
    uid = [("user_id", _int64_feature([7], "packed"))]
    check(_example(t + uid), _example(t))
    check(_example(t + uid), _example([*t, ("user_id", _int64_feature([7, 8], "packed"))]))
    assert check(_example(t + uid), _example(t + uid))[3:] == (2, "user_id")
    assert check(_example(t + uid), _example(t + uid), strict=False)[0] == "ok"


def test_bulk_reader_streams_until_the_error(tmp_path):
    """Chunks before a bad record are still delivered, as the record-by-record reader does."""
    recs = [encode_example({"epoch_0_topics": [(1, 4, 9)[i % 3]]}) for i in range(10)]
    p = tmp_path / "s.tfrecord"
    write_records(p, [*recs[:7], b"\x0a\x05", *recs[7:]])
    got = _outcome(iter_sets_tfrecord, p, 3)
    assert [g[0] for g in got] == ["ok", "ok", "error"] and got[-1][3] == 8
    assert got == _outcome(iter_sets_reference, p, 3)
    good = RECORD * 8
    p.write_bytes(good[:-5])
    got = _outcome(iter_sets_tfrecord, p, 3)
    assert [g[0] for g in got] == ["ok", "ok", "error"] and got[-1][3:] == (8, "data")


def test_kernel_crc_and_framing():
    rng = np.random.default_rng(3)
    for n in (0, 1, 7, 8, 9, 100, 4099):
        data = rng.integers(0, 256, n, dtype=np.uint8)
        assert fast.crc32c_range(data, 0, n, fast._T) == crc32c(data.tobytes())
    buf = np.frombuffer(RECORD * 3, dtype=np.uint8)
    starts, lengths, err = fast.frame_records(buf)
    assert starts.tolist() == [12, 12 + 78, 12 + 156] and lengths.tolist() == [62] * 3
    assert err == -1
    assert fast.frame_records(buf[:-1])[2] == 156
