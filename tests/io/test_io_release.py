"""The public release's TFRecord layout, byte for byte.

Dick et al., "Differentially Private Synthetic Data Release for Topics API Outputs" (KDD 2025),
publish 10M synthetic users as ``topic_set_sequences-NNNNN-of-00100.tfrecord``; their sampler
writes each user as a ``tf.train.Example`` with ``user_id`` a BytesList ``b"user N"``, then per
week ``epoch_{w}_topics`` (Int64List, 5 raw slots) and ``epoch_{w}_weights`` (FloatList of
1.0). The records below are assembled by hand from the protobuf wire format and TFRecord
framing, independently of topicslab's encoder; the CRCs come from ``google_crc32c`` directly.
"""

from __future__ import annotations

import struct

import google_crc32c
import numpy as np
import pytest

from topicslab.datamodel import TopicSets
from topicslab.errors import InputError
from topicslab.io import read_sets_tfrecord, write_records, write_sets_tfrecord
from topicslab.io.tfrecord import tfrecord_files


def _masked(data: bytes) -> int:
    crc = google_crc32c.value(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _frame(data: bytes) -> bytes:
    head = struct.pack("<Q", len(data))
    return head + struct.pack("<I", _masked(head)) + data + struct.pack("<I", _masked(data))


def _ld(tag: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field (payloads here stay under 128 bytes)."""
    assert len(payload) < 128
    return bytes([tag, len(payload)]) + payload


ONES = "0000803f" * 5  # five float32 1.0, little-endian

# user 7, one week, slots [1, 243, 299, 299, 299] (1, /News, /Sports of taxonomy v2)
USER_ID_ENTRY = ("0a15" "0a07" + b"user_id".hex()        # map entry 21 bytes, key
                 + "120a" "0a08" "0a06" + b"user 7".hex())  # Feature.bytes_list, one value
TOPICS_ENTRY = ("0a1f" "0a0e" + b"epoch_0_topics".hex()
                + "120d" "1a0b" "0a09" "01" "f301" "ab02" "ab02" "ab02")  # packed varints
WEIGHTS_ENTRY = ("0a2b" "0a0f" + b"epoch_0_weights".hex()
                 + "1218" "1216" "0a14" + ONES)                # Feature.float_list, packed
# map entries in key order (protobuf's deterministic serialization): user_id sorts last
SAMPLER_EXAMPLE = bytes.fromhex("0a65" + TOPICS_ENTRY + WEIGHTS_ENTRY + USER_ID_ENTRY)


def test_hand_built_record_is_what_the_writer_emits(tmp_path):
    assert len(SAMPLER_EXAMPLE) == 2 + 0x65
    ts = TopicSets(np.array([[[0, 0, 0, -1, -1]]], np.int16), "v2", [7])
    ts.sets[0, 0, :3] = ts.taxonomy.index(np.array([1, 243, 299]))
    path = tmp_path / "one.tfrecord"
    write_sets_tfrecord(path, ts)
    assert path.read_bytes() == _frame(SAMPLER_EXAMPLE)
    back = read_sets_tfrecord(path)
    assert back.user_ids.tolist() == [7]
    assert back.topic_ids().tolist() == [[[1, 243, 299, -1, -1]]]


def test_sampler_records_read_back_exactly(tmp_path):
    """Raw draws with repeats, in draw order, map entries in any order: sets and ids exact."""
    def example(uid: bytes, slots: list[int], id_last: bool = False) -> bytes:
        varints = b"".join(bytes([v]) if v < 128 else bytes([(v & 0x7F) | 0x80, v >> 7])
                           for v in slots)
        ids = bytes.fromhex("0a15" "0a07") + b"user_id" + bytes.fromhex("120a" "0a08" "0a06") \
            + uid
        topics = _ld(0x0A, _ld(0x0A, b"epoch_0_topics")
                     + _ld(0x12, _ld(0x1A, _ld(0x0A, varints))))
        weights = bytes.fromhex(WEIGHTS_ENTRY)
        body = topics + weights + ids if id_last else ids + topics + weights
        return bytes([0x0A, len(body)]) + body

    recs = [example(b"user 0", [299, 1, 299, 243, 1]),
            example(b"user 1", [243, 243, 243, 243, 243], id_last=True),
            example(b"user 9", [1, 1, 1, 1, 1])]
    d = tmp_path / "release"
    d.mkdir()
    # the sampler deals records round-robin over shards named prefix_NNNNN-of-MMMMM
    (d / "s_00000-of-00002.tfrecord").write_bytes(_frame(recs[0]) + _frame(recs[2]))
    (d / "s_00001-of-00002.tfrecord").write_bytes(_frame(recs[1]))
    got = read_sets_tfrecord(d)
    assert got.k == 5 and got.taxonomy.version == "v2"
    assert got.user_ids.tolist() == [0, 9, 1]
    assert got.topic_ids()[:, 0].tolist() == [[1, 243, 299, -1, -1], [1, -1, -1, -1, -1],
                                              [243, -1, -1, -1, -1]]
    (d / "s_00001-of-00002.tfrecord").unlink()
    with pytest.raises(InputError, match="1 of 2 shards missing, first s_00001-of-00002"):
        tfrecord_files(d)


@pytest.mark.parametrize("ids", ["bytes", "int64", "none"])
def test_round_trip_every_id_kind(tmp_path, make_sets, same, ids):
    ts = make_sets(n=30, seed=4)
    ts.user_ids[:3] = [0, -(2**63), 2**63 - 1]
    path = tmp_path / f"{ids}.tfrecord"
    write_sets_tfrecord(path, ts, shards=2, user_ids=ids)
    back = read_sets_tfrecord(str(tmp_path / f"{ids}-*.tfrecord"))
    if ids == "none":
        np.testing.assert_array_equal(back.sets, ts.sets)
        assert back.user_ids.tolist() == list(range(30))
    else:
        same(back, ts, metadata=False)


@pytest.mark.parametrize("uid", [b"user 007", b"user -0", b"u 7", b"user 9223372036854775808",
                                 b"user 1 "])
def test_bad_release_ids_name_record_and_field(tmp_path, uid):
    body = _ld(0x0A, _ld(0x0A, b"user_id") + _ld(0x12, _ld(0x0A, _ld(0x0A, uid))))
    body += bytes.fromhex(TOPICS_ENTRY)
    good = SAMPLER_EXAMPLE
    path = tmp_path / "bad.tfrecord"
    write_records(path, [good, bytes([0x0A, len(body)]) + body])
    with pytest.raises(InputError) as info:
        read_sets_tfrecord(path)
    err = info.value
    assert (err.row, err.field) == (2, "user_id") and "user N" in str(err)
    assert str(path) in str(err) and "\n" not in str(err)


def test_unknown_id_kind_refused(tmp_path, make_sets):
    with pytest.raises(ValueError, match="user_ids must be one of"):
        write_sets_tfrecord(tmp_path / "x.tfrecord", make_sets(n=2), user_ids="text")
    assert not (tmp_path / "x.tfrecord").exists()
