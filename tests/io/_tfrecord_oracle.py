"""Test oracles of the TFRecord paths: record-by-record pure-Python reading and writing, and
a table-driven CRC32C.

The library reads and writes topic sets through numba kernels (``topicslab.io._tfrecord_
fast``), CRC32C through the ``google-crc32c`` package. These slow, plain versions are what the
tests hold them to; ``test_io_tfrecord_independent`` holds both to the ``protobuf`` package's
own parser of ``tf.train.Example`` (the layout of Dick et al.'s release).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import numpy.typing as npt

from topicslab._atomic import atomic_paths
from topicslab.datamodel import TopicSets
from topicslab.errors import InputError
from topicslab.io._common import PathLike, sets_column
from topicslab.io.tfrecord import (
    Feature,
    _feature_bytes,
    _frame,
    _id_kind,
    _len_field,
    _Reader,
    shard_names,
    shard_set_on_disk,
    user_id_bytes,
)
from topicslab.taxonomy import Taxonomy

_POLY = 0x82F63B78  # reflected Castagnoli polynomial (RFC 3720, appendix B.4)
_TABLE = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ _POLY if _c & 1 else _c >> 1
    _TABLE.append(_c)


def crc32c_table(data: bytes) -> int:
    """CRC32C a byte at a time with a 256-entry table."""
    crc = 0xFFFFFFFF
    for b in bytes(data):
        crc = _TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def read_sets_reference(path: PathLike, *, taxonomy: Taxonomy | str | None = None,
                        k: int | None = None, weeks: int | None = None, strict: bool = True,
                        ) -> TopicSets:
    """``read_sets_tfrecord`` done record by record in pure Python."""
    reader = _Reader(path, taxonomy, k, weeks, strict)
    batches = list(reader.batches(1 << 62))
    if not batches:
        raise InputError("no records", file=reader.files[0])
    batch = batches[0]
    if k is None:
        k = max((max(lens, default=0) for lens in batch.lengths), default=0) or 5
    return reader.convert(batch, k)


def iter_sets_reference(path: PathLike, batch_size: int = 1 << 16, *,
                        taxonomy: Taxonomy | str | None = None, k: int | None = None,
                        strict: bool = True) -> Iterator[TopicSets]:
    """``iter_sets_tfrecord`` done record by record in pure Python."""
    reader = _Reader(path, taxonomy, k, None, strict)
    for batch in reader.batches(batch_size):
        yield reader.convert(batch, k if k is not None else 5)


def _example_records(sets: TopicSets, ids: npt.NDArray[np.int32], users: range,
                     id_kind: str) -> Iterator[bytes]:
    weights: dict[int, bytes] = {}
    keys = [(sets_column(w).encode(), f"epoch_{w}_weights".encode())
            for w in range(sets.n_weeks)]
    for u in users:
        entries = []
        for w in sorted(range(sets.n_weeks), key=lambda w: keys[w][0]):  # key order
            tkey, wkey = keys[w]
            topics = [int(t) for t in ids[u, w] if t >= 0]
            if topics:
                topics += [topics[-1]] * (sets.k - len(topics))
            slots = len(topics)
            if slots not in weights:
                weights[slots] = _feature_bytes(Feature("float", [1.0] * slots))
            entries.append(_len_field(0x0A, _len_field(0x0A, tkey) + _len_field(
                0x12, _feature_bytes(Feature("int64", topics)))))
            entries.append(_len_field(0x0A, _len_field(0x0A, wkey)
                                      + _len_field(0x12, weights[slots])))
        if id_kind != "none":
            uid = int(sets.user_ids[u])
            feat = (Feature("bytes", [user_id_bytes(uid)]) if id_kind == "bytes"
                    else Feature("int64", [uid]))
            entries.append(_len_field(0x0A, _len_field(0x0A, b"user_id")
                                      + _len_field(0x12, _feature_bytes(feat))))
        yield _len_field(0x0A, b"".join(entries))


def write_sets_reference(path: PathLike, sets: TopicSets, *, shards: int = 1,
                         user_ids: str | bool = "bytes") -> list[str]:
    """``write_sets_tfrecord`` done record by record in pure Python."""
    if shards < 1:
        raise ValueError("shards must be >= 1")
    id_kind = _id_kind(user_ids)
    names = shard_names(path, shards)
    bounds = np.linspace(0, sets.n_users, shards + 1).astype(int)
    ids = sets.topic_ids()
    with atomic_paths(names, stale=shard_set_on_disk(path)) as tmps:
        for i, tmp in enumerate(tmps):
            users = range(int(bounds[i]), int(bounds[i + 1]))
            with open(tmp, "wb") as fh:
                for data in _example_records(sets, ids, users, id_kind):
                    fh.write(_frame(data))
    return names
