"""Numba kernels behind the bulk TFRecord paths of ``tfrecord.py`` (private).

The pure-Python codec in ``tfrecord.py`` costs ~50-100 us per record, minutes for the release's
10M users. These kernels handle whole shards held in one ``uint8`` buffer:

    frame_records(buf, verify)      offsets and lengths of the well-framed records, CRCs checked
    decode_records(...)             release-layout records -> raw topic slots and user ids
    dense_sets(...)                 raw slots -> sorted, deduplicated dense ``int16`` sets
    encoded_sizes(...) / encode_records(...)
                                    topic sets -> framed records, byte-identical to the
                                    reference encoder

Why hand-written where ``protobuf`` exists (measured, 100K release-layout users of 4 weeks, 2
cores): the whole bulk read (framing, CRCs, decoding, dense sets) takes 3.8 us a record, the
``protobuf`` package (upb) 20.5 us only to parse a record and pull its lists out; the bulk
write takes 5.9 us a record from the arrays, while ``protobuf`` spends 2.7 us only serializing
an already built message (building its nine map entries from Python costs more). At the
release's 10M users that is ~40 s against several minutes. ``protobuf`` is the tests'
independent reference instead (``tests/io/test_io_tfrecord_independent.py``).

They only take the common, well-formed path. Anything else (a framing error, an unexpected
protobuf field, a non-ASCII key, a duplicated key, a missing week, an unknown topic, ...) is
reported back rather than handled, and the caller reruns the pure-Python code on that record
or list, which stays the reference for behaviour and error messages.
"""

from __future__ import annotations

import numba
import numpy as np
import numpy.typing as npt

__all__ = [
    "FALLBACK",
    "crc32c_range",
    "decode_records",
    "dense_sets",
    "encode_records",
    "encoded_sizes",
    "frame_records",
    "week_order",
]

_POLY = 0x82F63B78  # reflected Castagnoli polynomial
_MASK = 0xFFFFFFFF
_MASK_DELTA = 0xA282EAD8
#: ``decode_records`` status of a record the kernel left to the pure-Python decoder.
FALLBACK = 1


def _crc_tables() -> npt.NDArray[np.int64]:
    """Slicing-by-8 tables: row s advances a byte's CRC by s further zero bytes, so eight
    input bytes are folded in per step instead of one (about 5x the byte-wise loop)."""
    t = np.zeros((8, 256), dtype=np.int64)
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ _POLY if c & 1 else c >> 1
        t[0, i] = c
    for s in range(1, 8):
        for i in range(256):
            t[s, i] = (t[s - 1, i] >> 8) ^ t[0, t[s - 1, i] & 0xFF]
    return t


_T = _crc_tables()
_T.setflags(write=False)


@numba.njit(cache=True, nogil=True)
def crc32c_range(buf: npt.NDArray[np.uint8], start: int, stop: int,
                 t: npt.NDArray[np.int64]) -> int:
    """CRC32C of ``buf[start:stop]`` (int64 arithmetic keeps numba's typing simple)."""
    crc = np.int64(_MASK)
    p = start
    while p + 8 <= stop:
        lo = crc ^ (np.int64(buf[p]) | (np.int64(buf[p + 1]) << 8)
                    | (np.int64(buf[p + 2]) << 16) | (np.int64(buf[p + 3]) << 24))
        crc = (t[7, lo & 0xFF] ^ t[6, (lo >> 8) & 0xFF] ^ t[5, (lo >> 16) & 0xFF]
               ^ t[4, (lo >> 24) & 0xFF] ^ t[3, buf[p + 4]] ^ t[2, buf[p + 5]]
               ^ t[1, buf[p + 6]] ^ t[0, buf[p + 7]])
        p += 8
    while p < stop:
        crc = t[0, (crc ^ buf[p]) & 0xFF] ^ (crc >> 8)
        p += 1
    return int(crc ^ _MASK)


@numba.njit(cache=True, nogil=True)
def _masked(crc: int) -> int:
    return ((((crc >> 15) | (crc << 17)) & _MASK) + _MASK_DELTA) & _MASK


@numba.njit(cache=True, nogil=True)
def _u32(buf: npt.NDArray[np.uint8], p: int) -> int:
    return int(np.int64(buf[p]) | (np.int64(buf[p + 1]) << 8) | (np.int64(buf[p + 2]) << 16)
               | (np.int64(buf[p + 3]) << 24))


@numba.njit(cache=True, nogil=True)
def _frame(buf: npt.NDArray[np.uint8], verify: bool, t: npt.NDArray[np.int64],
           ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], int]:
    end = buf.shape[0]
    cap = end // 16 + 1  # a record takes at least 16 bytes (12 of header, 4 of data CRC)
    starts = np.empty(cap, dtype=np.int64)
    lengths = np.empty(cap, dtype=np.int64)
    n = 0
    pos = 0
    while pos < end:
        if pos + 12 > end:
            return starts[:n], lengths[:n], pos
        length = np.int64(0)
        for j in range(8):
            length |= np.int64(buf[pos + j]) << (8 * j)  # a length >= 2**63 turns negative
        if verify and _masked(crc32c_range(buf, pos, pos + 8, t)) != _u32(buf, pos + 8):
            return starts[:n], lengths[:n], pos
        start = pos + 12
        if length < 0 or length > end - start - 4:
            return starts[:n], lengths[:n], pos
        stop = start + int(length)
        if verify and _masked(crc32c_range(buf, start, stop, t)) != _u32(buf, stop):
            return starts[:n], lengths[:n], pos
        starts[n] = start
        lengths[n] = length
        n += 1
        pos = stop + 4
    return starts[:n], lengths[:n], -1


def frame_records(buf: npt.NDArray[np.uint8], verify: bool = True,
                  ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], int]:
    """``(data starts, data lengths, error offset)`` of the records of a TFRecord buffer.

    The records end at the first framing problem, whose offset is returned (``-1``: none);
    the caller re-reads that record with the reference code for the exact error.
    """
    return _frame(buf, verify, _T)


# ---------------------------------------------------------------------------- decoding

@numba.njit(cache=True, nogil=True)
def _varint(buf: npt.NDArray[np.uint8], pos: int, end: int) -> tuple[np.uint64, int]:
    """``(value, next position)``; position ``-1`` where the reference decoder would fail or
    would produce a value wider than 64 bits."""
    result = np.uint64(0)
    shift = 0
    while True:
        if pos >= end:
            return result, -1
        b = buf[pos]
        pos += 1
        if shift == 63 and b > 1:
            return result, -1
        result |= np.uint64(b & 0x7F) << np.uint64(shift)
        if b < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            return result, -1


@numba.njit(cache=True, nogil=True)
def _span(buf: npt.NDArray[np.uint8], pos: int, end: int) -> tuple[int, int]:
    """A length-delimited payload ``(start, stop)`` that fits before ``end``, or ``(-1, -1)``."""
    if pos < end and buf[pos] < 0x80:
        n = int(np.int64(buf[pos]))
        pos += 1
    else:
        v, pos = _varint(buf, pos, end)
        if pos < 0 or v > np.uint64(end - pos):
            return -1, -1
        n = int(np.int64(v))
    if n > end - pos:
        return -1, -1
    return pos, pos + n


_PREFIX = np.frombuffer(b"epoch_", dtype=np.uint8)
_SUFFIX = np.frombuffer(b"_topics", dtype=np.uint8)
_USER_ID = np.frombuffer(b"user_id", dtype=np.uint8)
_USER_ = np.frombuffer(b"user ", dtype=np.uint8)  # the release's id values: b"user N"
_UNWANTED, _UID, _ODD = -2, -1, -3


@numba.njit(cache=True, nogil=True)
def _key(buf: npt.NDArray[np.uint8], ks: int, ke: int) -> int:
    """A week number for ``epoch_{w}_topics``, ``_UID`` for ``user_id``, ``_UNWANTED`` for a
    key the reader skips, ``_ODD`` for one the reference must judge (non-ASCII, so possibly
    bad UTF-8, or a wanted name that is not a canonical week, like ``epoch_01_topics``)."""
    n = ke - ks
    for p in range(ks, ke):
        if buf[p] >= 0x80:
            return _ODD
    if n == 7:
        same = True
        for j in range(7):
            if buf[ks + j] != _USER_ID[j]:
                same = False
        if same:
            return _UID
    if n < 12:
        return _UNWANTED
    for j in range(6):
        if buf[ks + j] != _PREFIX[j]:
            return _UNWANTED
    for j in range(7):
        if buf[ke - 7 + j] != _SUFFIX[j]:
            return _UNWANTED
    digits = n - 13
    if digits < 1 or digits > 9 or (digits > 1 and buf[ks + 6] == 48):
        return _ODD
    w = 0
    for p in range(ks + 6, ke - 7):
        d = int(np.int64(buf[p])) - 48
        if d < 0 or d > 9:
            return _ODD
        w = w * 10 + d
    return w


@numba.njit(cache=True, nogil=True)
def _int64_feature(buf: npt.NDArray[np.uint8], vs: int, ve: int, row: npt.NDArray[np.int64],
                   cap: int) -> int:
    """Values of a ``Feature`` that holds an ``Int64List`` (packed or not) or nothing; stores
    the first ``cap`` in ``row`` and returns how many there are, ``-1`` for any other shape."""
    if vs == ve:
        return 0  # a Feature without a kind reads as an empty int64 list
    if buf[vs] != 0x1A:
        return -1
    a, b = _span(buf, vs + 1, ve)
    if a < 0 or b != ve:
        return -1
    c = 0
    while a < b:
        tag = buf[a]
        a += 1
        if tag == 0x0A:
            p, q = _span(buf, a, b)
            if p < 0:
                return -1
            while p < q:
                if buf[p] < 0x80:
                    v = np.uint64(buf[p])
                    p += 1
                else:
                    v, p = _varint(buf, p, q)
                    if p < 0:
                        return -1
                if c < cap:
                    row[c] = np.int64(v)
                c += 1
            a = q
        elif tag == 0x08:
            v, a = _varint(buf, a, b)
            if a < 0:
                return -1
            if c < cap:
                row[c] = np.int64(v)
            c += 1
        else:
            return -1
    return c


_LIMIT = np.uint64(1) << np.uint64(63)  # |int64 min|


@numba.njit(cache=True, nogil=True)
def _bytes_id(buf: npt.NDArray[np.uint8], vs: int, ve: int,
              scratch: npt.NDArray[np.int64]) -> int:
    """The release's id: a ``Feature`` holding a ``BytesList`` of one canonical ``b"user N"``
    (N an int64, no leading zeros, no ``-0``); stores N in ``scratch[0]`` and returns 1, or
    ``-1`` for anything else (the reference then reads or rejects it)."""
    a, b = _span(buf, vs + 1, ve)
    if a < 0 or b != ve or a >= b or buf[a] != 0x0A:
        return -1
    p, q = _span(buf, a + 1, b)
    if p < 0 or q != b or q - p < 6:
        return -1
    for j in range(5):
        if buf[p + j] != _USER_[j]:
            return -1
    p += 5
    neg = buf[p] == 45
    if neg:
        p += 1
    n = q - p
    if n < 1 or n > 19 or (buf[p] == 48 and (n > 1 or neg)):
        return -1
    m = np.uint64(0)
    for j in range(p, q):
        d = int(np.int64(buf[j])) - 48
        if d < 0 or d > 9:
            return -1
        m = m * np.uint64(10) + np.uint64(d)  # 19 digits cannot overflow 64 bits
    if m > _LIMIT or (m == _LIMIT and not neg):
        return -1
    if neg:
        scratch[0] = -np.int64(m - np.uint64(1)) - 1
    else:
        scratch[0] = np.int64(m)
    return 1


@numba.njit(cache=True, nogil=True)
def _decode_one(buf: npt.NDArray[np.uint8], s: int, e: int, i: int, weeks: int,
                has_ids: bool, vals: npt.NDArray[np.int64], counts: npt.NDArray[np.int32],
                uids: npt.NDArray[np.int64], seen: npt.NDArray[np.uint8],
                scratch: npt.NDArray[np.int64]) -> int:
    """Decode record ``i``; its widest week list, or ``-1`` to leave it to the reference."""
    cap = vals.shape[2]
    if s >= e or buf[s] != 0x0A:
        return -1
    fs, fe = _span(buf, s + 1, e)
    if fs < 0 or fe != e:  # one Features message and nothing else
        return -1
    seen[:] = 0
    got_uid = False
    widest = 0
    p = fs
    while p < fe:
        if buf[p] != 0x0A:
            return -1
        es, ee = _span(buf, p + 1, fe)
        if es < 0 or es >= ee or buf[es] != 0x0A:
            return -1
        ks, ke = _span(buf, es + 1, ee)
        if ks < 0 or ke >= ee or buf[ke] != 0x12:
            return -1
        vs, ve = _span(buf, ke + 1, ee)
        if vs < 0 or ve != ee:
            return -1
        p = ee
        kind = _key(buf, ks, ke)
        if kind == _UNWANTED:
            continue
        if kind == _ODD or kind == weeks:  # week W: the reference reports "more weeks"
            return -1
        if kind == _UID:
            if vs < ve and buf[vs] == 0x0A:
                c = _bytes_id(buf, vs, ve, scratch)
            else:
                c = _int64_feature(buf, vs, ve, scratch, 1)
            if c < 0:
                return -1
            if has_ids:
                if got_uid or c != 1:
                    return -1
                got_uid = True
                uids[i] = scratch[0]
        elif kind < weeks:
            if seen[kind]:
                return -1  # a repeated key: the last one wins in the reference
            seen[kind] = 1
            c = _int64_feature(buf, vs, ve, vals[i, kind], cap)
            if c < 0:
                return -1
            counts[i, kind] = c
            widest = max(widest, c)
        elif _int64_feature(buf, vs, ve, scratch, 0) < 0:  # a later week: checked, unused
            return -1
    for w in range(weeks):
        if not seen[w]:
            return -1
    if has_ids and not got_uid:
        return -1
    return widest


@numba.njit(cache=True, nogil=True)
def _decode(buf: npt.NDArray[np.uint8], starts: npt.NDArray[np.int64],
            lengths: npt.NDArray[np.int64], weeks: int, has_ids: bool,
            vals: npt.NDArray[np.int64], counts: npt.NDArray[np.int32],
            uids: npt.NDArray[np.int64], status: npt.NDArray[np.uint8]) -> int:
    seen = np.zeros(weeks + 1, dtype=np.uint8)
    scratch = np.zeros(1, dtype=np.int64)
    widest = 0
    for i in range(starts.shape[0]):
        got = _decode_one(buf, starts[i], starts[i] + lengths[i], i, weeks, has_ids, vals,
                          counts, uids, seen, scratch)
        if got < 0:
            status[i] = FALLBACK
            counts[i, :] = 0
        else:
            status[i] = 0
            widest = max(widest, got)
    return widest


def decode_records(buf: npt.NDArray[np.uint8], starts: npt.NDArray[np.int64],
                   lengths: npt.NDArray[np.int64], weeks: int, has_ids: bool, slots: int = 5,
                   ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int32],
                              npt.NDArray[np.int64], npt.NDArray[np.uint8]]:
    """``(vals[n, weeks, S], counts[n, weeks], user ids[n], status[n])`` of release-layout
    records: week w's raw slots are ``vals[i, w, :counts[i, w]]``. Records with status
    ``FALLBACK`` are left empty for the reference decoder. ``S`` starts at ``slots`` and
    grows (one more pass) when a list is wider."""
    n = starts.shape[0]
    while True:
        vals = np.zeros((n, weeks, slots), dtype=np.int64)
        counts = np.zeros((n, weeks), dtype=np.int32)
        uids = np.zeros(n, dtype=np.int64)
        status = np.zeros(n, dtype=np.uint8)
        widest = _decode(buf, starts, lengths, weeks, has_ids, vals, counts, uids, status)
        if widest <= slots:
            return vals, counts, uids, status
        slots = widest


# ------------------------------------------------------------------------------- sets

@numba.njit(cache=True, nogil=True)
def _dense(vals: npt.NDArray[np.int64], counts: npt.NDArray[np.int32],
           lut: npt.NDArray[np.int16], k: int, out: npt.NDArray[np.int16],
           first_bad: npt.NDArray[np.int64]) -> None:
    n, weeks = counts.shape
    tmp = np.empty(max(vals.shape[2], 1), dtype=np.int16)
    for i in range(n):
        for w in range(weeks):
            c = counts[i, w]
            bad = False
            for j in range(c):
                v = vals[i, w, j]
                if v < 0 or v >= lut.shape[0] or lut[v] < 0:
                    bad = True
                    break
                # insertion sort: lists hold a handful of slots
                d = lut[v]
                m = j
                while m > 0 and tmp[m - 1] > d:
                    tmp[m] = tmp[m - 1]
                    m -= 1
                tmp[m] = d
            if bad:
                if first_bad[0, w] < 0:
                    first_bad[0, w] = i
                continue
            distinct = 0
            for j in range(c):
                if distinct == 0 or tmp[j] != tmp[distinct - 1]:
                    tmp[distinct] = tmp[j]
                    distinct += 1
            if distinct > k and first_bad[1, w] < 0:
                first_bad[1, w] = i
            for j in range(k):
                out[i, w, j] = tmp[j] if j < distinct else -1


def dense_sets(vals: npt.NDArray[np.int64], counts: npt.NDArray[np.int32],
               lut: npt.NDArray[np.int16], k: int, out: npt.NDArray[np.int16],
               ) -> npt.NDArray[np.int64]:
    """Fill ``out[n, weeks, k]`` with each list's distinct dense indices, ascending, ``-1``
    after. ``lut`` maps taxonomy ids to dense indices (``-1``: unknown). Returns
    ``first_bad[2, weeks]``: per week the first row with an unknown id (row 0) and the first
    with more than k distinct topics (row 1), ``-1`` if none; those rows are not valid."""
    first_bad = np.full((2, counts.shape[1]), -1, dtype=np.int64)
    _dense(vals, counts, lut, k, out, first_bad)
    return first_bad


# ---------------------------------------------------------------------------- encoding

@numba.njit(cache=True, nogil=True)
def _vsize(v: np.uint64) -> int:
    n = 1
    while v >= np.uint64(0x80):
        v >>= np.uint64(7)
        n += 1
    return n


@numba.njit(cache=True, nogil=True)
def _put(out: npt.NDArray[np.uint8], p: int, v: np.uint64) -> int:
    while v >= np.uint64(0x80):
        out[p] = np.uint8((v & np.uint64(0x7F)) | np.uint64(0x80))
        v >>= np.uint64(7)
        p += 1
    out[p] = np.uint8(v)
    return p + 1


@numba.njit(cache=True, nogil=True)
def _field(payload: int) -> int:
    """Size of a length-delimited field (one-byte tag) with a payload of that size."""
    return 1 + _vsize(np.uint64(payload)) + payload


@numba.njit(cache=True, nogil=True)
def _week_sizes(ids: npt.NDArray[np.int32], u: int, w: int,
                ) -> tuple[int, int, int, int, int]:
    """``(topics payload, last topic, slots, topics Feature, weights Feature)`` sizes of one
    week: the non-empty topics, the last repeated into the remaining slots."""
    k = ids.shape[2]
    packed = 0
    c = 0
    last = 0
    for j in range(k):
        t = ids[u, w, j]
        if t >= 0:
            packed += _vsize(np.uint64(t))
            last = t
            c += 1
    slots = k if c else 0
    packed += (k - c) * _vsize(np.uint64(last)) if c else 0
    tfeat = _field(_field(packed) if slots else 0)
    wfeat = _field(_field(4 * slots) if slots else 0)
    return packed, last, slots, tfeat, wfeat


@numba.njit(cache=True, nogil=True)
def _entry(key_len: int, feat: int) -> int:
    return _field(_field(key_len) + _field(feat))


#: ``encode_records`` id modes: no id, an Int64List id, the release's ``b"user N"``.
_NO_ID, _INT_ID, _BYTES_ID = 0, 1, 2
_ID_MODES = {"none": _NO_ID, "int64": _INT_ID, "bytes": _BYTES_ID}


@numba.njit(cache=True, nogil=True)
def _magnitude(v: int) -> np.uint64:
    """``|v|`` of an int64 without overflow at -2**63."""
    if v < 0:
        return np.uint64(-(v + 1)) + np.uint64(1)
    return np.uint64(v)


@numba.njit(cache=True, nogil=True)
def _id_text_len(uid: int) -> int:
    """Length of ``b"user N"`` for N = uid."""
    m = _magnitude(uid)
    n = 1
    while m >= np.uint64(10):
        m //= np.uint64(10)
        n += 1
    return 5 + n + (1 if uid < 0 else 0)


@numba.njit(cache=True, nogil=True)
def _uid_payload(uid: int, mode: int) -> int:
    """Payload size of the id's list (the Int64List or BytesList message)."""
    if mode == _BYTES_ID:
        return _field(_id_text_len(uid))
    return _field(_vsize(np.uint64(uid)))


@numba.njit(cache=True, nogil=True)
def _uid_feature(uid: int, mode: int) -> int:
    return _field(_uid_payload(uid, mode))


@numba.njit(cache=True, nogil=True)
def _put_id_text(out: npt.NDArray[np.uint8], p: int, uid: int) -> int:
    """Write ``b"user N"`` at ``p``; the position after it."""
    for j in range(5):
        out[p + j] = _USER_[j]
    end = p + _id_text_len(uid)
    p += 5
    if uid < 0:
        out[p] = 45  # "-"
    m = _magnitude(uid)
    q = end - 1
    while True:
        out[q] = np.uint8(48 + int(m % np.uint64(10)))
        m //= np.uint64(10)
        q -= 1
        if m == np.uint64(0):
            break
    return end


@numba.njit(cache=True, nogil=True)
def _entries_size(ids: npt.NDArray[np.int32], uids: npt.NDArray[np.int64], u: int,
                  mode: int, key_off: npt.NDArray[np.int64]) -> int:
    """Size of user u's map entries: the payload of the Example's one Features field."""
    weeks = ids.shape[1]
    total = 0
    for w in range(weeks):
        _, _, _, tfeat, wfeat = _week_sizes(ids, u, w)
        total += _entry(key_off[2 * w + 1] - key_off[2 * w], tfeat)
        total += _entry(key_off[2 * w + 2] - key_off[2 * w + 1], wfeat)
    if mode != _NO_ID:
        total += _entry(key_off[2 * weeks + 1] - key_off[2 * weeks], _uid_feature(uids[u], mode))
    return total


@numba.njit(cache=True, nogil=True)
def _sizes(ids: npt.NDArray[np.int32], uids: npt.NDArray[np.int64], mode: int,
           key_off: npt.NDArray[np.int64], out: npt.NDArray[np.int64]) -> None:
    for u in range(ids.shape[0]):
        out[u] = _field(_entries_size(ids, uids, u, mode, key_off))


def encoded_sizes(ids: npt.NDArray[np.int32], uids: npt.NDArray[np.int64], id_kind: str,
                  key_off: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Serialized ``tf.train.Example`` size of each user (framing excluded)."""
    out = np.empty(ids.shape[0], dtype=np.int64)
    _sizes(ids, uids, _ID_MODES[id_kind], key_off, out)
    return out


@numba.njit(cache=True, nogil=True)
def _put_entry_head(out: npt.NDArray[np.uint8], p: int, keys: npt.NDArray[np.uint8],
                    ka: int, kb: int, feat: int) -> int:
    """Map entry tag and length, the key field, and the value field's tag and length."""
    out[p] = 0x0A
    p = _put(out, p + 1, np.uint64(_field(kb - ka) + _field(feat)))
    out[p] = 0x0A
    p = _put(out, p + 1, np.uint64(kb - ka))
    out[p:p + kb - ka] = keys[ka:kb]
    p += kb - ka
    out[p] = 0x12
    return _put(out, p + 1, np.uint64(feat))


@numba.njit(cache=True, nogil=True)
def _encode(ids: npt.NDArray[np.int32], uids: npt.NDArray[np.int64], mode: int,
            keys: npt.NDArray[np.uint8], key_off: npt.NDArray[np.int64],
            sizes: npt.NDArray[np.int64], out: npt.NDArray[np.uint8],
            t: npt.NDArray[np.int64], order: npt.NDArray[np.int64]) -> None:
    weeks = ids.shape[1]
    p = 0
    for u in range(ids.shape[0]):
        size = sizes[u]
        head = p
        for j in range(8):
            out[p + j] = np.uint8((size >> (8 * j)) & 0xFF)
        crc = _masked(crc32c_range(out, head, head + 8, t))
        for j in range(4):
            out[p + 8 + j] = np.uint8((crc >> (8 * j)) & 0xFF)
        start = p + 12
        out[start] = 0x0A
        p = _put(out, start + 1, np.uint64(_entries_size(ids, uids, u, mode, key_off)))
        for jw in range(weeks):
            w = order[jw]
            packed, last, slots, tfeat, wfeat = _week_sizes(ids, u, w)
            p = _put_entry_head(out, p, keys, key_off[2 * w], key_off[2 * w + 1], tfeat)
            out[p] = 0x1A
            if slots:
                p = _put(out, p + 1, np.uint64(_field(packed)))
                out[p] = 0x0A
                p = _put(out, p + 1, np.uint64(packed))
                c = 0
                for j in range(ids.shape[2]):
                    v = ids[u, w, j]
                    if v >= 0:
                        p = _put(out, p, np.uint64(v))
                        c += 1
                for _ in range(slots - c):
                    p = _put(out, p, np.uint64(last))
            else:
                out[p + 1] = 0
                p += 2
            p = _put_entry_head(out, p, keys, key_off[2 * w + 1], key_off[2 * w + 2], wfeat)
            out[p] = 0x12
            if slots:
                p = _put(out, p + 1, np.uint64(_field(4 * slots)))
                out[p] = 0x0A
                p = _put(out, p + 1, np.uint64(4 * slots))
                for _ in range(slots):  # float32 1.0, little-endian
                    out[p] = 0
                    out[p + 1] = 0
                    out[p + 2] = 0x80
                    out[p + 3] = 0x3F
                    p += 4
            else:
                out[p + 1] = 0
                p += 2
        if mode != _NO_ID:  # last: "user_id" sorts after every "epoch_..." key
            uid = uids[u]
            inner = _uid_payload(uid, mode)
            p = _put_entry_head(out, p, keys, key_off[2 * weeks], key_off[2 * weeks + 1],
                                _field(inner))
            out[p] = 0x1A if mode == _INT_ID else 0x0A  # Feature.int64_list / .bytes_list
            p = _put(out, p + 1, np.uint64(inner))
            out[p] = 0x0A
            if mode == _INT_ID:  # negative ids: 10-byte two's complement varints
                p = _put(out, p + 1, np.uint64(_vsize(np.uint64(uid))))
                p = _put(out, p, np.uint64(uid))
            else:
                p = _put(out, p + 1, np.uint64(_id_text_len(uid)))
                p = _put_id_text(out, p, uid)
        crc = _masked(crc32c_range(out, start, p, t))
        for j in range(4):
            out[p + j] = np.uint8((crc >> (8 * j)) & 0xFF)
        p += 4


def week_order(weeks: int) -> npt.NDArray[np.int64]:
    """Weeks in the byte order of their keys (``epoch_10_topics`` sorts before
    ``epoch_1_topics``); a week's ``_topics`` key sorts just before its ``_weights``."""
    return np.array(sorted(range(weeks), key=lambda w: f"epoch_{w}_topics".encode()),
                    dtype=np.int64)


def encode_records(ids: npt.NDArray[np.int32], uids: npt.NDArray[np.int64], id_kind: str,
                   keys: npt.NDArray[np.uint8], key_off: npt.NDArray[np.int64],
                   ) -> npt.NDArray[np.uint8]:
    """Framed release-layout records of ``ids[n, weeks, k]`` (taxonomy ids, ``-1`` empty),
    in one buffer. ``keys[key_off[j]:key_off[j + 1]]`` are the feature names: week w's topics
    at ``j = 2w``, its weights at ``2w + 1``, then ``user_id`` (``"bytes"`` writes the
    release's ``b"user N"``, ``"none"`` no id). Map entries go in key order, as protobuf's
    deterministic serialization writes them: weeks in ``week_order(weeks)``, ``user_id``
    last."""
    sizes = encoded_sizes(ids, uids, id_kind, key_off)
    out = np.empty(int(sizes.sum()) + 16 * ids.shape[0], dtype=np.uint8)
    _encode(ids, uids, _ID_MODES[id_kind], keys, key_off, sizes, out, _T,
            week_order(ids.shape[1]))
    return out
