"""The public release's TFRecord traces, read and written without TensorFlow.

Public functions:
    read_sets_tfrecord(path, *, taxonomy=None, k=None, weeks=None, strict=True) -> TopicSets
    iter_sets_tfrecord(path, batch_size=65_536, *, taxonomy=None, k=None, strict=True)
        -> Iterator[TopicSets]
    write_sets_tfrecord(path, sets, *, shards=1, user_ids="bytes") -> list[str]
    tfrecord_files(path) -> list[str]          a file, a directory of shards, or a glob
    shard_names(path, shards) -> list[str]     the files of a set of ``shards`` at ``path``
    shard_set_on_disk(path) -> list[str]       the files an earlier write to ``path`` left
    iter_records(path, *, verify=True) -> Iterator[tuple[int, bytes]]   (record number, data)
    write_records(path, records)               atomic
    encode_example(features) -> bytes          minimal ``tf.train.Example`` protobuf codec
    decode_example(data) -> dict[str, Feature]
    Feature                                    (kind, values), kind "int64" | "float" | "bytes"

Framing (per record): uint64 length, uint32 masked CRC32C of those 8 bytes, the data, uint32
masked CRC32C of the data, all little-endian. CRCs are verified on read; a mismatch or a
truncated record is an ``InputError`` naming the file and the 1-based record number. Gzip
files (``.gz`` or gzip magic) are decompressed.

Example layout (the release's, as the sampler of Dick et al., "Differentially Private
Synthetic Data Release for Topics API Outputs" (KDD 2025), writes it; see their data README):
``user_id`` a BytesList of one value ``b"user N"``, then per week w ``epoch_{w}_topics`` an
Int64List of k raw slots (duplicates possible) and ``epoch_{w}_weights`` a FloatList of as many
1.0. Reading merges a week's slots into a set (fewer distinct topics leave ``-1`` empties); k
defaults to the widest slot list. A user id may be that ``b"user N"`` (N read back as the id)
or one int64 (earlier topicslab files); without any, users are numbered by record order across
the shards. Writing emits each set's topics ascending and, to keep k slots, repeats the last
topic into the empty slots (the set is unchanged); an empty week is written as empty lists,
which the release never contains. ``user_ids="bytes"`` (the default) writes the release's id,
``"int64"`` an Int64List id, ``"none"`` no id. Protobuf leaves the order of map entries to the
writer (the sampler's runtime writes them in hash-table order; every parser accepts any
order): topicslab writes them in key order, as protobuf's deterministic serialization does,
so a record is byte-identical to ``SerializeToString(deterministic=True)`` of the message the
sampler builds. Shards are
named ``stem-NNNNN-of-MMMMM`` (the release's files) or ``stem_NNNNN-of-MMMMM`` (the sampler's
default output names). TFRecord carries no metadata.

Bulk reads and writes of topic sets run through the numba kernels of ``_tfrecord_fast`` (a
shard at a time in one buffer, ~1-2 us a record instead of ~50-100). The kernels take only
the common, well-formed layout; any record or list they do not take is decoded or checked by
the pure-Python decoder below, so results and error messages are the same either way. The
record-by-record reader and writer built on that codec are test oracles (``tests/io/
_tfrecord_oracle.py``): the tests compare them, the kernels and an independent protobuf
parser on random and corrupted data.
"""

from __future__ import annotations

import glob
import gzip
import os
import re
import struct
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from topicslab._atomic import atomic_path, atomic_paths, raise_if_interrupted
from topicslab._checks import integer, value_shown
from topicslab._paths import set_lock
from topicslab.datamodel import TopicSets
from topicslab.errors import InputError, ParameterError
from topicslab.io import _tfrecord_fast as _fast
from topicslab.io._common import (
    ListError,
    PathLike,
    check_batch_size,
    check_exists,
    check_k,
    check_sets_to_write,
    check_strict,
    check_unique_users,
    is_pattern,
    lists_to_dense,
    parquet_parts,
    pick_taxonomy,
    sets_column,
)
from topicslab.io._crc32c import masked_crc32c
from topicslab.io.detect import detect_taxonomy
from topicslab.taxonomy import Taxonomy

__all__ = [
    "Feature",
    "decode_example",
    "encode_example",
    "iter_records",
    "iter_sets_tfrecord",
    "read_sets_tfrecord",
    "tfrecord_files",
    "write_records",
    "write_sets_tfrecord",
]

_HEADER = struct.Struct("<QI")
_U32 = struct.Struct("<I")
_SHARD_RE = re.compile(r"^(?P<stem>.*[-_])(?P<i>[0-9]{5})-of-(?P<n>[0-9]{5})(?P<ext>.*)$")
#: The release's user id: ``b"user N"``, N canonical decimal (no sign but ``-``, no leading 0).
_USER_RE = re.compile(rb"^user (0|-?[1-9][0-9]{0,18})$")
_ID_KINDS = ("bytes", "int64", "none")
_WEEK_RE = re.compile(r"^epoch_([0-9]+)_topics$")


# ---------------------------------------------------------------------------- framing

def _load_bytes(file: str) -> bytes:
    with open(file, "rb") as fh:
        data = fh.read()
    if data[:2] == b"\x1f\x8b":
        try:
            return gzip.decompress(data)
        except (OSError, EOFError) as exc:
            raise InputError(f"corrupt gzip stream ({exc})", file=file) from None
    return data


def _read_file(path: PathLike) -> tuple[str, bytes]:
    """``(file name, whole decompressed contents)`` of one TFRecord file."""
    file = check_exists(path)
    try:
        return file, _load_bytes(file)
    except OSError as exc:
        raise InputError(f"cannot read ({exc.strerror or exc})", file=file) from None


def _record_at(buf: bytes, pos: int, rec: int, file: str, verify: bool) -> tuple[bytes, int]:
    """``(data, next offset)`` of the record at ``pos``, numbered ``rec``; the reference for
    framing errors (the bulk reader comes here for the exact message)."""
    end = len(buf)
    if pos + _HEADER.size > end:
        raise InputError("truncated record header", file=file, row=rec, field="length")
    length, len_crc = _HEADER.unpack_from(buf, pos)
    if verify and masked_crc32c(buf[pos:pos + 8]) != len_crc:
        raise InputError("length CRC mismatch (corrupt or not a TFRecord file)", file=file,
                         row=rec, field="length")
    start = pos + _HEADER.size
    stop = start + length
    if stop + 4 > end:
        raise InputError(f"truncated record (needs {length} bytes of data)", file=file,
                         row=rec, field="data")
    data = buf[start:stop]
    if verify and masked_crc32c(data) != _U32.unpack_from(buf, stop)[0]:
        raise InputError("data CRC mismatch (corrupt file)", file=file, row=rec,
                         field="data")
    return data, stop + 4


def _records_from(buf: bytes, pos: int, rec: int, file: str, verify: bool,
                  ) -> Iterator[tuple[int, bytes]]:
    """Records from offset ``pos`` on, the first numbered ``rec + 1``."""
    while pos < len(buf):
        rec += 1
        data, pos = _record_at(buf, pos, rec, file, verify)
        yield rec, data


def iter_records(path: PathLike, *, verify: bool = True) -> Iterator[tuple[int, bytes]]:
    """Yield ``(record number from 1, data)`` of one TFRecord file."""
    from topicslab._checks import flag

    verify = flag(verify, "verify")  # ("no" checked every CRC all the same)
    file, buf = _read_file(path)
    yield from _records_from(buf, 0, 0, file, verify)


def _frame(data: bytes) -> bytes:
    head = struct.pack("<Q", len(data))
    return b"".join((head, _U32.pack(masked_crc32c(head)), data,
                     _U32.pack(masked_crc32c(data))))


def write_records(path: PathLike, records: Iterable[bytes]) -> None:
    """Write framed records to ``path`` (atomic)."""
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        for data in records:
            fh.write(_frame(data))


# --------------------------------------------------------------------------- protobuf

class Feature(NamedTuple):
    """One ``tf.train.Feature``: kind ``"int64"``, ``"float"`` or ``"bytes"`` and values."""

    kind: str
    values: list[Any]


class _ProtoError(Exception):
    pass


def _varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= end:
            raise _ProtoError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise _ProtoError("varint longer than 10 bytes")


def _skip(buf: bytes, pos: int, end: int, wire: int) -> int:
    if wire == 0:
        return _varint(buf, pos, end)[1]
    if wire == 1:
        pos += 8
    elif wire == 2:
        n, pos = _varint(buf, pos, end)
        pos += n
    elif wire == 5:
        pos += 4
    else:
        raise _ProtoError(f"unsupported wire type {wire}")
    if pos > end:
        raise _ProtoError("truncated field")
    return pos


def _span(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    if pos < end and buf[pos] < 0x80:  # lengths under 128 bytes: the common case
        n = buf[pos]
        pos += 1
    else:
        n, pos = _varint(buf, pos, end)
    if pos + n > end:
        raise _ProtoError("length-delimited field runs past its message")
    return pos, pos + n


def _signed(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


def _int64_list(buf: bytes, pos: int, end: int) -> list[int]:
    out: list[int] = []
    while pos < end:
        tag, pos = _varint(buf, pos, end)
        if tag == 0x0A:  # packed (what writers emit)
            a, b = _span(buf, pos, end)
            while a < b:
                v = buf[a]
                if v < 0x80:
                    out.append(v)
                    a += 1
                else:
                    v, a = _varint(buf, a, b)
                    out.append(_signed(v))
            pos = b
        elif tag == 0x08:  # unpacked repeated: parsers must accept both encodings
            v, pos = _varint(buf, pos, end)
            out.append(_signed(v))
        else:
            pos = _skip(buf, pos, end, tag & 7)
    return out


def _float_list(buf: bytes, pos: int, end: int) -> list[float]:
    out: list[float] = []
    while pos < end:
        tag, pos = _varint(buf, pos, end)
        if tag == 0x0A:
            a, b = _span(buf, pos, end)
            if (b - a) % 4:
                raise _ProtoError("packed floats not a multiple of 4 bytes")
            out.extend(struct.unpack_from(f"<{(b - a) // 4}f", buf, a))
            pos = b
        elif tag == 0x0D:
            if pos + 4 > end:
                raise _ProtoError("truncated float")
            out.append(struct.unpack_from("<f", buf, pos)[0])
            pos += 4
        else:
            pos = _skip(buf, pos, end, tag & 7)
    return out


def _bytes_list(buf: bytes, pos: int, end: int) -> list[bytes]:
    out: list[bytes] = []
    while pos < end:
        tag, pos = _varint(buf, pos, end)
        if tag == 0x0A:
            a, b = _span(buf, pos, end)
            out.append(bytes(buf[a:b]))
            pos = b
        else:
            pos = _skip(buf, pos, end, tag & 7)
    return out


_ListParser = Callable[[bytes, int, int], list[Any]]
_KINDS: dict[int, tuple[str, _ListParser]] = {
    0x0A: ("bytes", _bytes_list), 0x12: ("float", _float_list), 0x1A: ("int64", _int64_list)}


def _feature(buf: bytes, pos: int, end: int) -> Feature:
    feat = Feature("int64", [])  # a Feature with no kind set reads as an empty list
    while pos < end:
        tag, pos = _varint(buf, pos, end)
        if tag in _KINDS:
            a, b = _span(buf, pos, end)
            kind, parse = _KINDS[tag]
            feat = Feature(kind, parse(buf, a, b))
            pos = b
        else:
            pos = _skip(buf, pos, end, tag & 7)
    return feat


def decode_example(data: bytes, keys: Callable[[str], bool] | None = None,
                   ) -> dict[str, Feature]:
    """Features of a serialized ``tf.train.Example`` (unknown fields are skipped); with
    ``keys``, only the features whose name it accepts are decoded.

    Raises ``ValueError`` on malformed bytes.
    """
    out: dict[str, Feature] = {}
    try:
        _decode_example(data, out, keys)
    except (_ProtoError, UnicodeDecodeError, struct.error) as exc:
        raise ValueError(f"malformed tf.train.Example: {exc}") from None
    return out


def _decode_example(buf: bytes, out: dict[str, Feature],
                    keys: Callable[[str], bool] | None) -> None:
    pos, end = 0, len(buf)
    while pos < end:
        tag, pos = _varint(buf, pos, end)
        if tag != 0x0A:  # Example.features
            pos = _skip(buf, pos, end, tag & 7)
            continue
        fpos, fend = _span(buf, pos, end)
        pos = fend
        while fpos < fend:  # Features.feature: map<string, Feature> entries
            tag, fpos = _varint(buf, fpos, fend)
            if tag != 0x0A:
                fpos = _skip(buf, fpos, fend, tag & 7)
                continue
            epos, eend = _span(buf, fpos, fend)
            fpos = eend
            key, feat = "", Feature("int64", [])
            while epos < eend:
                tag, epos = _varint(buf, epos, eend)
                if tag == 0x0A:
                    a, b = _span(buf, epos, eend)
                    key = bytes(buf[a:b]).decode("utf-8")
                    epos = b
                elif tag == 0x12:
                    a, b = _span(buf, epos, eend)
                    # the key precedes the value in every writer's output; decoding only
                    # wanted values skips the release's weights, half of each record
                    if keys is None or not key or keys(key):
                        feat = _feature(buf, a, b)
                    epos = b
                else:
                    epos = _skip(buf, epos, eend, tag & 7)
            if keys is None or keys(key):
                out[key] = feat


def _put_varint(v: int) -> bytes:
    if v < 0:
        v += 1 << 64  # int64 negatives are 10-byte two's complement varints
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def _len_field(tag: int, payload: bytes) -> bytes:
    return bytes((tag,)) + _put_varint(len(payload)) + payload


def _feature_bytes(value: Feature | Sequence[Any] | npt.NDArray[Any]) -> bytes:
    if isinstance(value, Feature):
        kind, vals = value.kind, list(value.values)
    else:
        arr = np.asarray(value)
        if arr.dtype.kind in "iub" or arr.size == 0:
            kind, vals = "int64", [int(x) for x in arr.ravel()]
        elif arr.dtype.kind == "f":
            kind, vals = "float", [float(x) for x in arr.ravel()]
        elif arr.dtype.kind in "SO":
            kind, vals = "bytes", [bytes(x) for x in arr.ravel()]
        else:
            raise TypeError(f"cannot encode a feature of dtype {arr.dtype}")
    if kind == "int64":
        inner = _len_field(0x0A, b"".join(_put_varint(int(v)) for v in vals)) if vals else b""
        return _len_field(0x1A, inner)
    if kind == "float":
        inner = _len_field(0x0A, struct.pack(f"<{len(vals)}f", *vals)) if vals else b""
        return _len_field(0x12, inner)
    if kind == "bytes":
        return _len_field(0x0A, b"".join(_len_field(0x0A, bytes(v)) for v in vals))
    raise TypeError(f"unknown feature kind {kind!r}")


def encode_example(features: Mapping[str, Feature | Sequence[Any] | npt.NDArray[Any]],
                   ) -> bytes:
    """Serialize a ``tf.train.Example``; a plain sequence's kind follows its numpy dtype
    (integers -> Int64List, floats -> FloatList, bytes -> BytesList). Keys keep the mapping's
    order."""
    entries = b"".join(
        _len_field(0x0A, _len_field(0x0A, key.encode("utf-8"))
                   + _len_field(0x12, _feature_bytes(value)))
        for key, value in features.items())
    return _len_field(0x0A, entries)


# ----------------------------------------------------------------------------- files

def _one_file(file: str) -> str:
    """``file``, unless it is one shard of a set whose other shards lie beside it: named
    alone (tab completion offers the first shard), it was read as if it were the whole data
    set, half or a tenth of the users, without a word. A shard with no sibling (downloaded or
    copied alone) is read on its own."""
    m = _SHARD_RE.match(os.path.basename(file))
    if m is None or int(m.group("n")) < 2:
        return file
    folder = os.path.dirname(file)
    stem, total, ext = m.group("stem"), m.group("n"), m.group("ext")
    others = [j for j in range(int(total)) if j != int(m.group("i"))
              and os.path.isfile(os.path.join(folder, f"{stem}{j:05d}-of-{total}{ext}"))]
    if not others:
        return file
    pattern = os.path.join(folder, f"{stem}*-of-{total}{ext}")
    raise InputError(f"is one shard of a set of {int(total)} whose other shards lie beside it: "
                     f"alone it holds only part of the users; give the set as "
                     f"'{pattern}' (or its directory), or copy the shard elsewhere to read it "
                     "alone", file=file)


def tfrecord_files(path: PathLike) -> list[str]:
    """The files behind ``path``: itself, every ``*.tfrecord*`` in a directory, or a glob's
    matches; sorted. Names of the form ``stem-NNNNN-of-MMMMM`` must form a complete set."""
    name = os.fspath(path)
    if os.path.isdir(name):
        files = sorted(os.path.join(name, f) for f in os.listdir(name)
                       if ".tfrecord" in f and not f.startswith("."))
        if not files:
            from topicslab._paths import not_topic_sets

            if (why := not_topic_sets(name) or parquet_parts(name)) is not None:
                raise InputError(why, file=name)  # (was "no .tfrecord files")
            # a directory is read as a TFRecord shard set; say so, whatever its name suggests
            raise InputError("is a directory with no .tfrecord files (a directory is read as "
                             "TFRecord shards); give a file or a shard directory", file=name)
    elif is_pattern(name):
        files = sorted(f for f in glob.glob(name) if os.path.isfile(f))
        if not files:
            raise InputError("no files match the pattern", file=name)
    else:
        return [_one_file(check_exists(name))]
    matches = [_SHARD_RE.match(os.path.basename(f)) for f in files]
    if all(matches):
        groups = {(m.group("stem"), m.group("n"), m.group("ext")) for m in matches if m}
        if len(groups) == 1:
            stem, total, ext = groups.pop()
            have = {int(m.group("i")) for m in matches if m}
            missing = sorted(set(range(int(total))) - have)
            if missing:
                raise InputError(f"{len(missing)} of {int(total)} shards missing, first "
                                 f"{stem}{missing[0]:05d}-of-{total}{ext}", file=name)
    return files


def _wanted(key: str) -> bool:
    # every epoch feature but the weights: a misspelt week (epoch_3_topic) must be seen
    return key == "user_id" or (key.startswith("epoch") and not key.endswith("_weights"))


def _record_lists(feats: dict[str, Feature], weeks: int, has_ids: bool, file: str, rec: int,
                  ) -> tuple[list[list[int]], int | None]:
    """One decoded record's raw slot lists per week and user id (None without ids), after
    the per-record checks; shared by the reference reader and the bulk reader's fallback."""
    extra = f"epoch_{weeks}_topics"
    if extra in feats:
        raise InputError("more weeks than the first record", file=file, row=rec,
                         field=extra)
    lists: list[list[int]] = []
    for w in range(weeks):
        field = sets_column(w)
        feat = feats.get(field)
        if feat is None:
            raise InputError("missing week feature", file=file, row=rec, field=field)
        if feat.kind != "int64":
            raise InputError(f"expected an Int64List, got a {feat.kind} list", file=file,
                             row=rec, field=field)
        lists.append(feat.values)
    if not has_ids:
        return lists, None
    return lists, _user_id(feats.get("user_id"), file, rec)


def _user_id(uid: Feature | None, file: str, rec: int) -> int:
    """A record's user id: one int64, or the release's one ``b"user N"``."""
    if uid is not None and len(uid.values) == 1:
        if uid.kind == "int64":
            return int(uid.values[0])
        if uid.kind == "bytes":
            m = _USER_RE.match(uid.values[0])
            if m and -(1 << 63) <= int(m.group(1)) < 1 << 63:
                return int(m.group(1))
            raise InputError(f"expected a user id b'user N' with N a 64-bit integer (as the "
                             f"release writes), got {uid.values[0][:40]!r}", file=file,
                             row=rec, field="user_id")
    raise InputError("expected one user id: an int64, or bytes b'user N' as the release "
                     "writes", file=file, row=rec, field="user_id")


def _decode_record(data: bytes, file: str, rec: int) -> dict[str, Feature]:
    try:
        return decode_example(data, _wanted)
    except ValueError as exc:
        raise InputError(str(exc), file=file, row=rec) from None


class _Batch:
    """Raw slot lists of a run of records, gathered before one vectorised conversion."""

    def __init__(self, weeks: int) -> None:
        self.values: list[list[int]] = [[] for _ in range(weeks)]
        self.lengths: list[list[int]] = [[] for _ in range(weeks)]
        self.user_ids: list[int] = []
        self.where: list[tuple[str, int]] = []  # (file, record) of each row, for errors

    def __len__(self) -> int:
        return len(self.where)


class _Reader:
    """The pure-Python reader: record by record. It is the reference the bulk reader
    (``_FastReader``) is tested against, and that reader shares its setup."""

    def __init__(self, path: PathLike, taxonomy: Taxonomy | str | None, k: int | None,
                 weeks: int | None, strict: bool) -> None:
        self.files = tfrecord_files(path)
        # without a taxonomy, the first conversion detects it from the ids (then it stays)
        self.detect = taxonomy is None
        self.taxonomy = pick_taxonomy(taxonomy, None, file=self.files[0])
        self.k = k
        self.weeks = weeks
        self.strict = strict
        self.has_ids: bool | None = None
        self.next_id = 0

    def _setup(self, feats: dict[str, Feature], file: str, rec: int) -> None:
        found = sorted(int(m.group(1)) for key in feats if (m := _WEEK_RE.match(key)))
        odd = next((key for key in feats if key.startswith("epoch")
                    and not _WEEK_RE.match(key)), None)
        if odd is not None:  # as the Parquet reader: the week was dropped without a word
            raise InputError("unknown week feature: week features are named epoch_0_topics, "
                             "epoch_1_topics, ... (with epoch_N_weights); rename or remove it",
                             file=file, row=rec, field=odd)
        if not found:  # read as users of no weeks, which the commands could not handle
            raise InputError("no week feature (week features run 0, 1, 2, ...)", file=file,
                             row=rec, field=sets_column(0))
        for expect, got in enumerate(found):
            if got != expect:
                raise InputError("missing week feature", file=file, row=rec,
                                 field=sets_column(expect))
        if self.weeks is not None and self.weeks != len(found):
            raise InputError(f"records have {len(found)} weeks, expected {self.weeks}",
                             file=file, row=rec)
        self.weeks = len(found)
        self.has_ids = "user_id" in feats

    def batches(self, batch_size: int) -> Iterator[_Batch]:
        batch: _Batch | None = None
        for file in self.files:
            for rec, data in iter_records(file):
                feats = _decode_record(data, file, rec)
                if self.has_ids is None:
                    self._setup(feats, file, rec)
                assert self.weeks is not None
                if batch is None:
                    batch = _Batch(self.weeks)
                self._add(batch, feats, file, rec)
                if len(batch) >= batch_size:
                    yield batch
                    batch = None
        if batch is not None:
            yield batch

    def _add(self, batch: _Batch, feats: dict[str, Feature], file: str, rec: int) -> None:
        assert self.weeks is not None
        lists, uid = _record_lists(feats, self.weeks, bool(self.has_ids), file, rec)
        for w, values in enumerate(lists):
            batch.values[w].extend(values)
            batch.lengths[w].append(len(values))
        if uid is not None:
            batch.user_ids.append(uid)
        else:
            batch.user_ids.append(self.next_id)
            self.next_id += 1
        batch.where.append((file, rec))

    def settle_taxonomy(self, values: npt.NDArray[np.int64]) -> None:
        """Detect the taxonomy from the first converted ids when none was given."""
        if self.detect:
            self.taxonomy = detect_taxonomy(values)
            self.detect = False

    def convert(self, batch: _Batch, k: int) -> TopicSets:
        assert self.weeks is not None
        n = len(batch)
        self.settle_taxonomy(np.asarray([v for week in batch.values for v in week],
                                        dtype=np.int64))
        out = np.full((n, self.weeks, k), -1, dtype=np.int16)
        for w in range(self.weeks):
            offsets = np.zeros(n + 1, dtype=np.int64)
            np.cumsum(np.asarray(batch.lengths[w], dtype=np.int64), out=offsets[1:])
            try:
                values = np.asarray(batch.values[w], dtype=np.int64)
                out[:, w, :] = lists_to_dense(offsets, values, k, self.taxonomy, dedupe=True)
            except ListError as err:
                file, rec = batch.where[err.list_index]
                raise InputError(err.message, file=file, row=rec,
                                 field=sets_column(w)) from None
        user_ids = np.asarray(batch.user_ids, dtype=np.int64)
        if self.strict and self.has_ids:
            try:
                check_unique_users(user_ids, file="")
            except InputError as err:
                assert err.row is not None
                file, rec = batch.where[err.row - 1]
                raise InputError(err.message, file=file, row=rec, field="user_id") from None
        return TopicSets(out, self.taxonomy, user_ids, {})


class _Chunk:
    """Consecutive records of one file as arrays: week w's raw slots of row i are
    ``vals[i, w, :counts[i, w]]``; row 0 is record number ``rec0``."""

    def __init__(self, vals: npt.NDArray[np.int64], counts: npt.NDArray[np.int32],
                 user_ids: npt.NDArray[np.int64], file: str, rec0: int) -> None:
        self.vals = vals
        self.counts = counts
        self.user_ids = user_ids
        self.file = file
        self.rec0 = rec0

    def __len__(self) -> int:
        return int(self.counts.shape[0])

    def split(self, n: int) -> tuple[_Chunk, _Chunk]:
        return (_Chunk(self.vals[:n], self.counts[:n], self.user_ids[:n], self.file,
                       self.rec0),
                _Chunk(self.vals[n:], self.counts[n:], self.user_ids[n:], self.file,
                       self.rec0 + n))

    def widest(self) -> int:
        return int(self.counts.max()) if self.counts.size else 0


class _FastReader(_Reader):
    """The bulk reader: a whole file at a time through the numba kernels of
    ``_tfrecord_fast``; a record they do not take goes through the reference decoder and
    checks, so results and errors (and their order) are the reference's."""

    def chunks(self) -> Iterator[_Chunk]:
        for name in self.files:
            file, buf = _read_file(name)
            arr = np.frombuffer(buf, dtype=np.uint8)
            starts, lengths, err_pos = _fast.frame_records(arr)
            n = int(starts.shape[0])
            if n:
                if self.has_ids is None:
                    first = bytes(buf[int(starts[0]):int(starts[0] + lengths[0])])
                    self._setup(_decode_record(first, file, 1), file, 1)
                yield from self._decoded(buf, arr, starts, lengths, file)
            if err_pos >= 0:
                # _record_at raises the exact framing error; were the kernel stricter than
                # the reference, the rest of the file is read the reference way instead
                yield from self._slow_chunks(_records_from(buf, err_pos, n, file, True), file)

    def _decoded(self, buf: bytes, arr: npt.NDArray[np.uint8], starts: npt.NDArray[np.int64],
                 lengths: npt.NDArray[np.int64], file: str) -> Iterator[_Chunk]:
        assert self.weeks is not None and self.has_ids is not None
        vals, counts, uids, status = _fast.decode_records(arr, starts, lengths, self.weeks,
                                                          self.has_ids)
        n = int(starts.shape[0])
        error: InputError | None = None
        fixes: list[tuple[int, list[list[int]], int | None]] = []
        for i in np.flatnonzero(status).tolist():
            data = bytes(buf[int(starts[i]):int(starts[i] + lengths[i])])
            try:
                lists, uid = _record_lists(_decode_record(data, file, i + 1), self.weeks,
                                           self.has_ids, file, i + 1)
            except InputError as exc:
                n, error = i, exc  # records before it still form a chunk, as in a stream
                break
            fixes.append((i, lists, uid))
        vals, counts, uids = self._fill(vals[:n], counts[:n], uids[:n], fixes)
        if n:
            yield _Chunk(vals, counts, uids, file, 1)
        if error is not None:
            raise error

    def _slow_chunks(self, records: Iterator[tuple[int, bytes]], file: str,
                     ) -> Iterator[_Chunk]:
        rows: list[tuple[int, list[list[int]], int | None]] = []
        rec0 = 0
        error: InputError | None = None
        try:
            for rec, data in records:
                rec0 = rec0 or rec
                feats = _decode_record(data, file, rec)
                if self.has_ids is None:
                    self._setup(feats, file, rec)
                assert self.weeks is not None
                lists, uid = _record_lists(feats, self.weeks, bool(self.has_ids), file, rec)
                rows.append((rec - rec0, lists, uid))
        except InputError as exc:
            error = exc
        if rows:
            assert self.weeks is not None
            n = len(rows)
            vals, counts, uids = self._fill(np.zeros((n, self.weeks, 0), np.int64),
                                            np.zeros((n, self.weeks), np.int32),
                                            np.zeros(n, np.int64), rows)
            yield _Chunk(vals, counts, uids, file, rec0)
        if error is not None:
            raise error

    def _fill(self, vals: npt.NDArray[np.int64], counts: npt.NDArray[np.int32],
              uids: npt.NDArray[np.int64],
              rows: list[tuple[int, list[list[int]], int | None]],
              ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int32], npt.NDArray[np.int64]]:
        """Put reference-decoded rows into the arrays; number users without ids."""
        wide = max((len(lst) for _, lists, _ in rows for lst in lists), default=0)
        if wide > vals.shape[2]:
            grown = np.zeros((vals.shape[0], vals.shape[1], wide), dtype=np.int64)
            grown[:, :, :vals.shape[2]] = vals
            vals = grown
        for i, lists, uid in rows:
            for w, values in enumerate(lists):
                counts[i, w] = len(values)
                vals[i, w, :len(values)] = values
            if uid is not None:
                uids[i] = uid
        if not self.has_ids:
            uids = np.arange(self.next_id, self.next_id + uids.shape[0], dtype=np.int64)
            self.next_id += uids.shape[0]
        return vals, counts, uids

    def convert_chunks(self, chunks: list[_Chunk], k: int) -> TopicSets:
        assert self.weeks is not None
        n = sum(len(c) for c in chunks)
        if self.detect:
            slot = np.arange(max((c.vals.shape[2] for c in chunks), default=0))
            self.settle_taxonomy(np.concatenate(
                [np.zeros(0, np.int64)]
                + [c.vals[slot[:c.vals.shape[2]] < c.counts[..., None]] for c in chunks]))
        out = np.empty((n, self.weeks, k), dtype=np.int16)
        ids = self.taxonomy.ids
        lut = np.full(int(ids.max()) + 1 if ids.size else 0, -1, dtype=np.int16)
        lut[ids] = np.arange(ids.shape[0], dtype=np.int16)
        first = np.full((2, self.weeks), -1, dtype=np.int64)
        base = 0
        for c in chunks:
            bad = _fast.dense_sets(c.vals, c.counts, lut, k, out[base:base + len(c)])
            take = (first < 0) & (bad >= 0)
            first[take] = bad[take] + base
            base += len(c)
        if (first >= 0).any():
            self._raise_set_error(chunks, first, k)
        user_ids = (np.concatenate([c.user_ids for c in chunks]) if chunks
                    else np.zeros(0, dtype=np.int64))
        if self.strict and self.has_ids:
            try:
                check_unique_users(user_ids, file="")
            except InputError as err:
                assert err.row is not None
                file, rec = self._where(chunks, err.row - 1)
                raise InputError(err.message, file=file, row=rec, field="user_id") from None
        return TopicSets(out, self.taxonomy, user_ids, {})

    @staticmethod
    def _where(chunks: list[_Chunk], row: int) -> tuple[str, int]:
        for c in chunks:
            if row < len(c):
                return c.file, c.rec0 + row
            row -= len(c)
        raise IndexError(row)

    def _raise_set_error(self, chunks: list[_Chunk], first: npt.NDArray[np.int64],
                         k: int) -> None:
        """Raise the reference's error: week by week, ``lists_to_dense`` on the week's first
        list with an unknown id and its first with too many topics (the only lists its
        checks could stop at), or on the whole week should those two not reproduce it."""
        assert self.weeks is not None
        starts = np.cumsum([0] + [len(c) for c in chunks])
        for w in range(self.weeks):
            rows = sorted({int(r) for r in first[:, w] if r >= 0})
            if not rows:
                continue
            for subset in (rows, None):
                lists: list[npt.NDArray[np.int64]] = []
                index = []
                for j, c in enumerate(chunks):
                    lo, hi = int(starts[j]), int(starts[j + 1])
                    pick = range(len(c)) if subset is None else \
                        [r - lo for r in subset if lo <= r < hi]
                    for i in pick:
                        lists.append(c.vals[i, w, :c.counts[i, w]])
                        index.append(lo + i)
                offsets = np.zeros(len(lists) + 1, dtype=np.int64)
                np.cumsum([len(x) for x in lists], out=offsets[1:])
                values = np.concatenate(lists) if lists else np.zeros(0, dtype=np.int64)
                try:
                    lists_to_dense(offsets, values, k, self.taxonomy, dedupe=True)
                except ListError as err:
                    file, rec = self._where(chunks, index[err.list_index])
                    raise InputError(err.message, file=file, row=rec,
                                     field=sets_column(w)) from None
        raise AssertionError("the set kernel flagged a list the reference accepts")


def read_sets_tfrecord(path: PathLike, *, taxonomy: Taxonomy | str | None = None,
                       k: int | None = None, weeks: int | None = None, strict: bool = True,
                       ) -> TopicSets:
    """Read release-style TFRecord traces (one file, a shard directory or a glob).

    Raw slots are merged into sets; k defaults to the widest slot list (5 for the release).
    ``strict`` makes a repeated ``user_id`` an error. Errors name the file and the 1-based
    record number.
    """
    from topicslab._paths import path_name

    k, strict = check_k(k, taxonomy), check_strict(strict)  # (as read_sets checks them)
    name = path_name(path)
    # listed and read while no writer commits a set there: a read while ``sample`` replaced
    # the shards took shards of both draws, without a word
    with set_lock(name if os.path.isdir(name) else os.path.dirname(name) or ".",
                  shared=True):
        reader = _FastReader(name, taxonomy, k, weeks, strict)
        chunks = list(reader.chunks())
    if not chunks:
        raise InputError("no records", file=reader.files[0])
    if k is None:
        k = max(c.widest() for c in chunks) or 5
    return reader.convert_chunks(chunks, k)


def iter_sets_tfrecord(path: PathLike, batch_size: int = 1 << 16, *,
                       taxonomy: Taxonomy | str | None = None, k: int | None = None,
                       strict: bool = True) -> Iterator[TopicSets]:
    """Yield ``TopicSets`` chunks of at most ``batch_size`` records, shard after shard.

    Every chunk has the same k: ``k`` if given, else 5 (the release's). Duplicate user ids
    are checked within a chunk only.
    """
    from topicslab._paths import path_name

    # (batch_size 0, -1, NaN or True read batches of one record, without a word)
    k, strict = check_k(k, taxonomy), check_strict(strict)
    batch_size = check_batch_size(batch_size)
    reader = _FastReader(path_name(path), taxonomy, k, None, strict)
    width = k if k is not None else 5
    pending: list[_Chunk] = []
    have = 0
    for chunk in reader.chunks():
        while len(chunk):
            head, chunk = chunk.split(max(1, batch_size - have))
            pending.append(head)
            have += len(head)
            if have >= batch_size:
                yield reader.convert_chunks(pending, width)
                pending, have = [], 0
    if pending:
        yield reader.convert_chunks(pending, width)


def shard_names(path: PathLike, shards: int) -> list[str]:
    """The files a set of ``shards`` written to ``path`` consists of: ``path`` itself for
    one shard, else ``stem-NNNNN-of-MMMMM.tfrecord`` beside it."""
    name = os.fspath(path)
    if shards == 1:
        return [name]
    base = os.path.basename(name)
    stem, dot, ext = base.partition(".tfrecord")
    return [os.path.join(os.path.dirname(name), f"{stem}-{i:05d}-of-{shards:05d}{dot}{ext}")
            for i in range(shards)]


def shard_set_on_disk(path: PathLike) -> list[str]:
    """The files an earlier write to ``path`` left, whatever its shard count: ``path`` and
    every ``stem-NNNNN-of-MMMMM.tfrecord`` beside it. A new write replaces them as a whole:
    shards of two sets in one directory would be read together (duplicate users)."""
    name = os.fspath(path)
    folder = os.path.dirname(name) or "."
    base = os.path.basename(name)
    stem, dot, ext = base.partition(".tfrecord")
    shard = re.compile(re.escape(stem) + r"-[0-9]{5}-of-[0-9]{5}" + re.escape(dot + ext) + "$")
    try:
        entries = os.listdir(folder)
    except OSError:
        return []
    return sorted(os.path.join(folder, f) for f in entries if f == base or shard.match(f))



def user_id_bytes(uid: int) -> bytes:
    """The release's user id value for ``uid``: ``b"user N"``."""
    return f"user {int(uid)}".encode()


def _id_kind(user_ids: str | bool) -> str:
    """``user_ids`` of the writers as one of ``_ID_KINDS`` (True: the release's bytes)."""
    if user_ids is True or user_ids is False:
        return "bytes" if user_ids else "none"
    if not isinstance(user_ids, str) or user_ids not in _ID_KINDS:
        raise ParameterError(f"user_ids must be one of {', '.join(_ID_KINDS)}, got "
                             f"{value_shown(user_ids)}", field="user_ids")
    return str(user_ids)


#: Users encoded per kernel call: bounds the buffer (~350 bytes a user) whatever the shard.
_WRITE_CHUNK = 1 << 17


def _feature_keys(weeks: int) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]:
    """The feature names the encoder kernel writes, as one byte buffer and its offsets."""
    names = [part for w in range(weeks) for part in (sets_column(w), f"epoch_{w}_weights")]
    raw = [name.encode() for name in [*names, "user_id"]]
    offsets = np.zeros(len(raw) + 1, dtype=np.int64)
    np.cumsum([len(r) for r in raw], out=offsets[1:])
    return np.frombuffer(b"".join(raw), dtype=np.uint8), offsets


#: the most shards of a set: their names count them in five digits (stem-NNNNN-of-MMMMM)
MAX_SHARDS = 99_999


def write_sets_tfrecord(path: PathLike, sets: TopicSets, *, shards: int = 1,
                        user_ids: str | bool = "bytes") -> list[str]:
    """Write ``sets`` as release-style TFRecord, split into ``shards`` files named
    ``stem-NNNNN-of-MMMMM.tfrecord`` when more than one. All shards appear together or not
    at all, and replace the whole set an earlier write to ``path`` left (any shard count).
    ``user_ids``: ``"bytes"`` the release's ``b"user N"``, ``"int64"``, or ``"none"``.
    Returns the file names."""
    # (raw slots, a topic twice in a week, are the release layout: sample writes them)
    check_sets_to_write(path, sets, "write_sets_tfrecord", validate=False)
    # (2**70 shards named shard after shard for ever, "x" and NaN were TypeErrors of a
    # comparison, and 0 a ValueError naming no field)
    shards = integer(shards, "shards", at_least=1, at_most=MAX_SHARDS,
                     why="shard names count them in five digits")
    id_kind = _id_kind(user_ids)
    names = shard_names(path, shards)
    bounds = np.linspace(0, sets.n_users, shards + 1).astype(int)
    keys, key_off = _feature_keys(sets.n_weeks)
    uids = np.ascontiguousarray(sets.user_ids, dtype=np.int64)
    with atomic_paths(names, stale=lambda: shard_set_on_disk(path)) as tmps:
        for i, tmp in enumerate(tmps):
            with open(tmp, "wb") as fh:
                for lo in range(int(bounds[i]), int(bounds[i + 1]), _WRITE_CHUNK):
                    raise_if_interrupted()  # (also in the sampler's writer thread)
                    hi = min(lo + _WRITE_CHUNK, int(bounds[i + 1]))
                    ids = np.ascontiguousarray(sets.taxonomy.id_of(sets.sets[lo:hi]),
                                               dtype=np.int32)
                    fh.write(_fast.encode_records(ids, uids[lo:hi], id_kind, keys,
                                                  key_off).data)
    return names
