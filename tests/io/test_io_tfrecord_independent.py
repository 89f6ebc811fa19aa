"""The TFRecord kernels and the pure-Python oracles, both held to independent code: the
``protobuf`` package's parser and serializer of ``tf.train.Example`` (its schema declared here
from TensorFlow's published ``example.proto``/``feature.proto`` layout), framing read with
``struct``, and CRC32C from ``google_crc32c``.

The records are those of Dick et al.'s release (KDD 2025): ``user_id`` bytes ``b"user N"``,
``epoch_{w}_topics`` Int64List of raw slots, ``epoch_{w}_weights`` FloatList of 1.0.
"""

from __future__ import annotations

import struct

import google_crc32c
import numpy as np
import pytest
from _tfrecord_oracle import crc32c_table, read_sets_reference, write_sets_reference

from topicslab.datamodel import TopicSets
from topicslab.io import _tfrecord_fast as fast
from topicslab.io import crc32c, read_sets_tfrecord, write_sets_tfrecord

pb = pytest.importorskip("google.protobuf")
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory  # noqa: E402

F = descriptor_pb2.FieldDescriptorProto


def _example_class():
    """``tensorflow.Example`` as protobuf builds it from the schema (proto3, packed lists)."""
    fdp = descriptor_pb2.FileDescriptorProto(name="topicslab_test_example.proto",
                                             package="tensorflow", syntax="proto3")
    for name, typ in (("BytesList", F.TYPE_BYTES), ("FloatList", F.TYPE_FLOAT),
                      ("Int64List", F.TYPE_INT64)):
        field = fdp.message_type.add(name=name).field.add(
            name="value", number=1, label=F.LABEL_REPEATED, type=typ)
        if typ != F.TYPE_BYTES:
            field.options.packed = True
    feat = fdp.message_type.add(name="Feature")
    feat.oneof_decl.add(name="kind")
    for num, (name, tname) in enumerate((("bytes_list", "BytesList"),
                                         ("float_list", "FloatList"),
                                         ("int64_list", "Int64List")), start=1):
        feat.field.add(name=name, number=num, label=F.LABEL_OPTIONAL, type=F.TYPE_MESSAGE,
                       type_name=f".tensorflow.{tname}", oneof_index=0)
    feats = fdp.message_type.add(name="Features")
    entry = feats.nested_type.add(name="FeatureEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, label=F.LABEL_OPTIONAL, type=F.TYPE_STRING)
    entry.field.add(name="value", number=2, label=F.LABEL_OPTIONAL, type=F.TYPE_MESSAGE,
                    type_name=".tensorflow.Feature")
    feats.field.add(name="feature", number=1, label=F.LABEL_REPEATED, type=F.TYPE_MESSAGE,
                    type_name=".tensorflow.Features.FeatureEntry")
    fdp.message_type.add(name="Example").field.add(
        name="features", number=1, label=F.LABEL_OPTIONAL, type=F.TYPE_MESSAGE,
        type_name=".tensorflow.Features")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("tensorflow.Example"))


Example = _example_class()


def _masked(data: bytes) -> int:
    crc = google_crc32c.value(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _records(path) -> list[bytes]:
    """Framing read with struct; every CRC checked with google_crc32c."""
    raw = open(path, "rb").read()
    out, pos = [], 0
    while pos < len(raw):
        head = raw[pos:pos + 8]
        (length,) = struct.unpack("<Q", head)
        assert struct.unpack("<I", raw[pos + 8:pos + 12])[0] == _masked(head)
        data = raw[pos + 12:pos + 12 + length]
        assert struct.unpack("<I", raw[pos + 12 + length:pos + 16 + length])[0] == _masked(data)
        out.append(data)
        pos += 16 + length
    return out


def _frame(data: bytes) -> bytes:
    head = struct.pack("<Q", len(data))
    return head + struct.pack("<I", _masked(head)) + data + struct.pack("<I", _masked(data))


def _sampler_message(uid: int, slots: np.ndarray):
    """The message the release's sampler builds for one user: ``slots[weeks, k]`` ids."""
    ex = Example()
    fm = ex.features.feature
    fm["user_id"].bytes_list.value.append(f"user {uid}".encode())
    for w, row in enumerate(slots):
        fm[f"epoch_{w}_topics"].int64_list.value.extend(int(t) for t in row)
        fm[f"epoch_{w}_weights"].float_list.value.extend([1.0] * len(row))
    return ex


def _population(n: int, weeks: int, seed: int) -> TopicSets:
    rng = np.random.default_rng(seed)
    sets = np.full((n, weeks, 5), -1, dtype=np.int16)
    for u in range(n):
        for w in range(weeks):
            c = int(rng.integers(1, 6))
            sets[u, w, :c] = np.sort(rng.choice(469, c, replace=False))
    ids = rng.integers(-(2**63), 2**63 - 1, n, dtype=np.int64, endpoint=True)
    return TopicSets(sets, "v2", ids)


@pytest.mark.parametrize("writer", [write_sets_tfrecord, write_sets_reference])
@pytest.mark.parametrize("weeks", [1, 4, 12])  # 12: keys sort epoch_10 before epoch_1
def test_written_records_parse_with_protobuf(tmp_path, writer, weeks):
    ts = _population(25, weeks, seed=weeks)
    path = tmp_path / "w.tfrecord"
    writer(path, ts)
    ids = ts.topic_ids()
    recs = _records(path)
    assert len(recs) == ts.n_users
    for u, data in enumerate(recs):
        ex = Example.FromString(data)
        fm = ex.features.feature
        assert list(fm["user_id"].bytes_list.value) == [f"user {ts.user_ids[u]}".encode()]
        for w in range(weeks):
            slots = list(fm[f"epoch_{w}_topics"].int64_list.value)
            want = [int(t) for t in ids[u, w] if t >= 0]
            assert len(slots) == 5 and slots == want + [want[-1]] * (5 - len(want))
            assert list(fm[f"epoch_{w}_weights"].float_list.value) == [1.0] * 5
        # the bytes are protobuf's own deterministic serialization of the sampler's message
        assert Example.SerializeToString(ex, deterministic=True) == data
        slots = np.array([list(fm[f"epoch_{w}_topics"].int64_list.value)
                          for w in range(weeks)])
        assert _sampler_message(int(ts.user_ids[u]), slots).SerializeToString(
            deterministic=True) == data


@pytest.mark.parametrize("reader", [read_sets_tfrecord, read_sets_reference])
@pytest.mark.parametrize("deterministic", [True, False])
def test_protobuf_serialized_records_read_back(tmp_path, reader, deterministic):
    """Raw sampler draws (repeats, any order), serialized by protobuf in either map order."""
    rng = np.random.default_rng(7)
    v2 = np.array([1, 4, 9, 57, 243, 299, 400, 629])
    n, weeks = 30, 4
    draws = rng.choice(v2, (n, weeks, 5))
    blob = b"".join(_frame(_sampler_message(u * 3, draws[u]).SerializeToString(
        deterministic=deterministic)) for u in range(n))
    path = tmp_path / "r.tfrecord"
    path.write_bytes(blob)
    got = reader(path)
    assert got.taxonomy.version == "v2" and got.k == 5
    assert got.user_ids.tolist() == [3 * u for u in range(n)]
    ids = got.topic_ids()
    for u in range(n):
        for w in range(weeks):
            want = sorted(set(draws[u, w].tolist()))
            assert ids[u, w].tolist() == want + [-1] * (5 - len(want))


def test_three_crc32c_agree_with_the_package():
    rng = np.random.default_rng(3)
    for n in (0, 1, 7, 8, 9, 100, 1031):
        data = rng.integers(0, 256, n, dtype=np.uint8)
        b = data.tobytes()
        want = google_crc32c.value(b)
        assert crc32c(b) == want
        assert crc32c_table(b) == want
        assert fast.crc32c_range(data, 0, n, fast._T) == want
