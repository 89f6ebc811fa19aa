"""Shared machinery of the format modules (private).

Offers ``lists_to_dense`` (ragged lists of taxonomy ids -> dense ``int16`` sets, one numba pass),
``week_list_arrays`` (the reverse, for writers), ``parse_int_strings`` (validate and convert text
cells), week-column discovery, the ``topicslab`` metadata block, and ``wrap_errors`` which turns
library exceptions into one-line ``InputError``s.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import stat
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
from numba import njit, prange

from topicslab._checks import MAX_COUNT, integer, is_integer, value_shown
from topicslab._json import (
    DuplicateKeyError,
    IntegerTooLargeError,
    bounded_int,
    dumps,
    loads,
    unique_keys,
)
from topicslab._kernels import sort_head
from topicslab.errors import FileFieldError, InputError, ParameterError, TopicsLabError
from topicslab.taxonomy import VERSIONS, Taxonomy, load, resolve

PathLike = str | os.PathLike[str]

#: Chrome's k; the width used when a file gives no other hint (every week empty).
DEFAULT_K = 5

#: the most weeks a file may span: what a generated population can hold (its top-k
#: randomness is keyed by user * 1024 + week); a long table's week numbers size the sets it
#: is read into, so a week of 10^9 would otherwise fill the memory
MAX_WEEKS = 1023
#: Key of the JSON block in Parquet key-value metadata.
META_KEY = b"topicslab"
#: Bumped when the on-disk layout changes incompatibly.
FORMAT_VERSION = 1

_INT_RE = r"^[+-]?[0-9]+$"


def sets_column(week: int) -> str:
    return f"epoch_{week}_topics"


def trace_column(week: int) -> str:
    return f"epoch_{week}_topic"


class ListError(Exception):
    """A problem at one list (a user-week) and optionally one value of a flattened layout.

    Raised by ``lists_to_dense``; each reader knows how to map the indices back to its own
    rows and fields, so the location is resolved there, not here.
    """

    def __init__(self, message: str, list_index: int, value_index: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.list_index = list_index
        self.value_index = value_index


_UNKNOWN, _LONG, _TWICE, _WIDE = 1, 2, 3, 4  # _dense_rows' failure codes, in priority order


def lists_to_dense(
    offsets: npt.NDArray[np.int64],
    values: npt.NDArray[np.int64],
    k: int,
    taxonomy: Taxonomy,
    *,
    dedupe: bool,
) -> npt.NDArray[np.int16]:
    """Dense ``int16[n, k]`` sets (sorted, ``-1`` last) from ragged lists of taxonomy ids.

    ``offsets`` has ``n + 1`` entries into ``values``. Duplicates inside a list are an error
    unless ``dedupe`` (raw release slots repeat topics legitimately). Raises ``ListError`` for
    the first list of the first failure in this order: an id not in the taxonomy, a list
    longer than k (without ``dedupe``), a topic twice (without ``dedupe``), more than k
    distinct topics.
    """
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    values = np.ascontiguousarray(values, dtype=np.int64)
    n = offsets.shape[0] - 1
    lengths = np.diff(offsets)
    width = max(k, int(lengths.max()) if n else 0)
    out = np.empty((n, k), dtype=np.int16)
    status = np.zeros(n, dtype=np.int8)
    _dense_rows(offsets, values, taxonomy.index_table, k, dedupe, width, out, status)
    # the first row of the most important failure, as one pass over every row found them
    for code in (_UNKNOWN, _LONG, _TWICE, _WIDE):
        hit = np.flatnonzero(status == code)
        if hit.size:
            raise _list_error(code, int(hit[0]), offsets, values, k, taxonomy)
    return out


@njit(cache=True)
def _dense_rows(offsets, values, lookup, k, dedupe, width, out, status):  # pragma: no cover
    """Each list as sorted dense indices in ``out[i]`` (``-1`` last), or a failure code in
    ``status[i]``. One thread: ~17 ns a list, and the readers call it per block of lists,
    where a parallel region's start cost more than it saved (8 vs 1.1 ms per 65,536 lists on
    2 busy cores)."""
    n = offsets.shape[0] - 1
    buf = np.empty(width, dtype=np.int64)
    for i in range(n):
        lo = offsets[i]
        length = offsets[i + 1] - lo
        for e in range(length):
            v = values[lo + e]
            d = lookup[v] if 0 <= v < lookup.shape[0] else -1
            if d < 0:
                status[i] = _UNKNOWN
                break
            buf[e] = d
        if status[i]:
            continue
        if not dedupe and length > k:
            status[i] = _LONG
            continue
        sort_head(buf, length)  # (raw release slots, with dedupe, can be long lists)
        kept = 0
        twice = False
        for e in range(length):
            if kept and buf[e] == buf[kept - 1]:
                twice = True
            else:
                buf[kept] = buf[e]
                kept += 1
        if twice and not dedupe:
            status[i] = _TWICE
        elif kept > k:
            status[i] = _WIDE
        else:
            for s in range(k):
                out[i, s] = buf[s] if s < kept else -1


def _list_error(code: int, i: int, offsets: npt.NDArray[np.int64],
                values: npt.NDArray[np.int64], k: int, taxonomy: Taxonomy) -> ListError:
    """The ``ListError`` of list ``i``, which failed with ``code``."""
    seg = values[offsets[i]:offsets[i + 1]]
    if code == _UNKNOWN:
        j = int(np.argmin(taxonomy.is_known(seg)))
        return ListError(f"topic id {int(seg[j])} is not in taxonomy {taxonomy.version}", i,
                         int(offsets[i]) + j)
    if code == _LONG:
        return ListError(f"{seg.shape[0]} topics in one week, more than k={k}", i,
                         int(offsets[i]) + k)
    distinct, seen = np.unique(taxonomy.index(seg), return_counts=True)
    if code == _TWICE:  # the smallest topic held twice, at its second place in the list
        topic = int(taxonomy.ids[distinct[seen > 1][0]])
        return ListError(f"topic id {topic} appears twice in one week", i,
                         int(offsets[i]) + int(np.flatnonzero(seg == topic)[1]))
    return ListError(f"{distinct.shape[0]} distinct topics in one week, more than k={k}", i)


def distinct_width(offsets: npt.NDArray[np.int64], values: npt.NDArray[np.int64]) -> int:
    """The largest number of distinct values in any list (0 when all are empty)."""
    n = offsets.shape[0] - 1
    if n == 0 or values.shape[0] == 0:
        return 0
    row = np.repeat(np.arange(n, dtype=np.int64), np.diff(offsets))
    order = np.lexsort((values, row))
    r, v = row[order], values[order]
    first = np.ones(r.shape[0], dtype=bool)
    first[1:] = (r[1:] != r[:-1]) | (v[1:] != v[:-1])
    return int(np.bincount(r[first], minlength=n).max())


def arrow_numbers(values: npt.ArrayLike, dtype: npt.DTypeLike | None = None) -> pa.Array:
    """A 1-d NumPy array of integers or floats as an Arrow array without nulls, sharing its
    memory. ``pa.array`` asks pandas whether a NumPy array is categorical, which imports
    pandas (0.4 s) into a command that never uses it: every ``topicslab run`` paid it in the
    population's writer."""
    arr = np.ascontiguousarray(values, dtype=dtype)
    if arr.ndim != 1 or arr.dtype.kind not in "iuf":  # (Arrow packs booleans in bits)
        raise TypeError(f"arrow_numbers takes a 1-d array of numbers, got {arr.dtype} "
                        f"{arr.shape}")
    return pa.Array.from_buffers(pa.from_numpy_dtype(arr.dtype), arr.shape[0],
                                 [None, pa.py_buffer(arr)])


def numpy_numbers(arr: pa.Array) -> npt.NDArray[Any]:
    """An Arrow array of integers or floats as NumPy, without a copy when it holds no nulls
    (its data buffer, from the array's offset); other arrays through ``to_numpy``, whose
    conversion imports pandas (0.4 s) the first time (as ``arrow_numbers``)."""
    t = arr.type
    if arr.null_count == 0 and (pa.types.is_integer(t) or pa.types.is_floating(t)):
        kind = "f" if pa.types.is_floating(t) else "i" if pa.types.is_signed_integer(t) else "u"
        dtype = np.dtype(f"{kind}{t.bit_width // 8}")
        data = arr.buffers()[1]
        if data is None:  # (an empty array may have no buffer)
            return np.empty(0, dtype=dtype)
        return np.frombuffer(data, dtype=dtype, count=len(arr),
                             offset=arr.offset * dtype.itemsize)
    return np.asarray(arr.to_numpy(zero_copy_only=False))


def week_list_arrays(sets: npt.NDArray[np.int16], taxonomy: Taxonomy) -> list[pa.ListArray]:
    """Arrow ``list<int32>`` per week of the non-empty slots of dense ``int16[n, W, k]``
    sets, as taxonomy ids (``taxonomy.id_of(sets)[:, w]``, the empty slots left out), in two
    compiled passes over the table (one counts every week's slots per user, one writes every
    week's ids) instead of a lookup, a transposed copy, a mask and a cumsum of the whole
    table (those were half of a Parquet writer's time: 0.82 s per 1M users × 8 weeks against
    0.81 s to encode them), and instead of a pass per week, which read the whole table once
    per week for a week's 10 bytes of each user's 80 (measured for 1M users × 8 weeks: 0.085
    instead of 0.15 s)."""
    arr = np.asarray(sets)
    if arr.ndim != 3 or arr.dtype != np.int16:
        raise TypeError(f"week_list_arrays takes int16[n, W, k] sets, got {arr.dtype} "
                        f"{arr.shape}")
    if arr.size and (int(arr.min()) < -1 or int(arr.max()) >= taxonomy.size):
        raise IndexError(f"dense topic index out of range 0..{taxonomy.size - 1}")
    n, weeks, _ = arr.shape
    if n and weeks and arr.shape[2] * n >= 2**31:  # (int32 offsets, as the lists had)
        raise ValueError("too many topics in one week for int32 list offsets")
    offsets = np.empty((weeks, n + 1), dtype=np.int32)
    offsets[:, 0] = 0
    _slot_counts(arr, offsets)
    np.cumsum(offsets, axis=1, out=offsets)
    # week w's ids are values[base[w]:base[w + 1]]
    base = np.zeros(weeks + 1, dtype=np.int64)
    np.cumsum(offsets[:, n], out=base[1:])
    values = np.empty(int(base[weeks]), dtype=np.int32)
    _slot_ids(arr, offsets, base, taxonomy.ids.astype(np.int32), values)
    return [pa.ListArray.from_arrays(arrow_numbers(offsets[w]),
                                     arrow_numbers(values[base[w]:base[w + 1]]))
            for w in range(weeks)]


#: users per parallel work item of ``_slot_counts`` / ``_slot_ids``
_SLOT_BLOCK = 1 << 14


@njit(cache=True, parallel=True)
def _slot_counts(sets, offsets):  # pragma: no cover
    """``offsets[w, u + 1]`` = user u's non-empty slots in week w (summed into offsets by the
    caller), every week from one read of each user's row."""
    n, weeks, k = sets.shape
    for b in prange((n + _SLOT_BLOCK - 1) // _SLOT_BLOCK):
        for u in range(b * _SLOT_BLOCK, min(n, (b + 1) * _SLOT_BLOCK)):
            for w in range(weeks):
                c = 0
                for s in range(k):
                    if sets[u, w, s] >= 0:
                        c += 1
                offsets[w, u + 1] = c


@njit(cache=True, parallel=True)
def _slot_ids(sets, offsets, base, ids, values):  # pragma: no cover
    """Every week's non-empty slots as taxonomy ids, user by user, slot by slot: week w's at
    ``values[base[w] + offsets[w, u]:]`` for user u."""
    n, weeks, k = sets.shape
    for b in prange((n + _SLOT_BLOCK - 1) // _SLOT_BLOCK):
        for u in range(b * _SLOT_BLOCK, min(n, (b + 1) * _SLOT_BLOCK)):
            for w in range(weeks):
                j = base[w] + offsets[w, u]
                for s in range(k):
                    d = sets[u, w, s]
                    if d >= 0:
                        values[j] = ids[d]
                        j += 1


def week_columns(names: Sequence[str], pattern: str, *, file: str) -> int:
    """Number of weeks W given columns ``pattern % w``; they must be exactly 0..W-1."""
    rx = re.compile("^" + pattern.replace("{w}", "([0-9]+)") + "$")
    seen: dict[int, str] = {}
    for name in names:
        if (m := rx.match(name)) is None:
            continue
        # before the run's check, which read a week given twice as the next week missing
        if (week := int(m.group(1))) in seen:
            raise InputError("duplicate column" if seen[week] == name else
                             f"week {week} is also column {seen[week]}", file=file, field=name)
        seen[week] = name
    weeks = sorted(seen)
    if not weeks:  # read as users of no weeks: "zero-size array" (exit code 1 in observe)
        raise InputError("no week column (week columns run 0, 1, 2, ...)", file=file,
                         field=pattern.replace("{w}", "0"))
    for expect, got in enumerate(weeks):
        if got != expect:
            raise InputError("missing week column (week columns must run 0, 1, 2, ...)",
                             file=file, field=pattern.replace("{w}", str(expect)))
    return len(weeks)


def parse_int_strings(
    arr: pa.Array, *, file: str, field: str, row_of: Any, allow_empty: bool = False
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
    """Integers from a string array; ``row_of(i)`` names the row of element ``i`` on error.

    Returns ``(values, present)``; empty strings are allowed (``present`` false) only when
    ``allow_empty``.
    """
    arr = pc.utf8_trim_whitespace(arr.cast(pa.string()) if arr.type != pa.string() else arr)
    if arr.null_count:
        arr = arr.fill_null("")
    empty = np.asarray(pc.equal(arr, "").to_numpy(zero_copy_only=False), dtype=bool)
    ok = np.asarray(pc.match_substring_regex(arr, _INT_RE).to_numpy(zero_copy_only=False),
                    dtype=bool)
    if allow_empty:
        ok |= empty
    if not ok.all():
        i = int(np.argmin(ok))
        raise InputError(f"expected an integer, got {arr[i].as_py()!r}", file=file,
                         row=row_of(i), field=field)
    filled = pc.if_else(pa.array(empty), "0", arr) if empty.any() else arr
    # the pattern takes "+5", Arrow's cast does not: "+5" was "integer 0 is outside the 64-bit
    # signed range", naming the first row
    filled = pc.replace_substring_regex(filled, r"^\+", "")
    try:
        out = pc.cast(filled, pa.int64()).to_numpy()
    except (pa.ArrowInvalid, OverflowError):
        # the regular expression passed every value: find the one past 64 bits to name its row
        texts = filled.to_pylist()
        i = next((j for j, t in enumerate(texts) if not -2**63 <= int(t) < 2**63), 0)
        raise InputError(f"integer {texts[i]} is outside the 64-bit signed range", file=file,
                         row=row_of(i), field=field) from None
    return np.asarray(out, dtype=np.int64), ~empty


def integer_values(
    arr: pa.Array, *, file: str, field: str, row_of: Any
) -> npt.NDArray[np.int64]:
    """An Arrow numeric array as ``int64``; floats must be whole, nulls and text are errors."""
    t = arr.type
    if arr.null_count:
        i = int(np.argmax(np.asarray(arr.is_null().to_numpy(zero_copy_only=False))))
        raise InputError("missing value", file=file, row=row_of(i), field=field)
    if pa.types.is_integer(t):
        v = numpy_numbers(arr)
        if v.dtype == np.uint64 and v.size and int(v.max()) > np.iinfo(np.int64).max:
            i = int(np.argmax(v > np.iinfo(np.int64).max))
            raise InputError(f"value {int(v[i])} is past the largest 64-bit signed integer "
                             f"({np.iinfo(np.int64).max})", file=file, row=row_of(i),
                             field=field)
        return np.asarray(v, dtype=np.int64)
    if pa.types.is_floating(t):
        v = np.asarray(numpy_numbers(arr), dtype=np.float64)
        whole = np.isfinite(v) & (v == np.round(v)) & (np.abs(v) < 2.0**62)
        if not whole.all():
            i = int(np.argmin(whole))
            raise InputError(f"expected an integer, got {float(v[i])!r}", file=file, row=row_of(i),
                             field=field)
        return v.astype(np.int64)
    i = 0
    raise InputError(f"expected integers, got column type {t}", file=file, row=row_of(i),
                     field=field)


def list_parts(arr: pa.Array) -> tuple[npt.NDArray[np.int64], pa.Array]:
    """``(offsets, flat values)`` of any Arrow list array; a null list counts as empty."""
    lengths = pc.list_value_length(arr)
    if lengths.null_count:
        lengths = lengths.fill_null(0)
    offsets = np.zeros(len(arr) + 1, dtype=np.int64)
    np.cumsum(np.asarray(numpy_numbers(lengths), dtype=np.int64), out=offsets[1:])
    return offsets, arr.flatten()


def pick_taxonomy(
    requested: Taxonomy | str | None, stored: str | None, *, file: str
) -> Taxonomy:
    """The taxonomy to read a file with: the caller's, else the file's, else v2."""
    if requested is None:
        if stored is None:
            return load("v2")
        if stored not in VERSIONS:
            raise InputError(f"the file's metadata names taxonomy {stored!r}, not one of "
                             f"{', '.join(VERSIONS)}; give the taxonomy (--taxonomy, or "
                             "taxonomy= from Python) to read it", file=file,
                             field="metadata.taxonomy")
        return load(stored)
    tax = resolve(requested)
    # (a file of custom taxonomy "mine" was read with another one, "other" or v2, of the
    # same ids: its topics taken for the other's labels without a word)
    if stored is not None and stored != tax.version:
        def name(v: object) -> str:
            return v if isinstance(v, str) and v.isprintable() else value_shown(v, 60)

        how = (f"leave taxonomy out to read it in {stored}" if stored in VERSIONS else
               f"give the taxonomy it was written with ({name(stored)})")
        raise ParameterError(f"the file says taxonomy {name(stored)}, but "
                             f"{name(tax.version)} was asked for; {how}",
                             file=file, field="taxonomy")
    return tax


def encode_meta(block: dict[str, Any]) -> bytes:
    """The ``topicslab`` JSON block (``_json.jsonable``'s rule; a value of no JSON kind in
    the user's provenance as its text)."""
    text = dumps(block, sort_keys=True, other=str)
    try:  # (an integer past 64 bits was written, and the file then refused when read back:
        # "corrupt topicslab metadata (not JSON)")
        loads(text, parse_int=bounded_int)
    except IntegerTooLargeError as exc:
        raise InputError(f"{exc}, which topicslab's files do not hold: give it as text",
                         field="metadata") from None
    return text.encode("utf-8")


def decode_meta(raw: dict[bytes, bytes] | None, *, file: str) -> dict[str, Any] | None:
    """The ``topicslab`` JSON block of Parquet key-value metadata, or None if absent."""
    if not raw or META_KEY not in raw:
        return None
    try:
        block = loads(raw[META_KEY].decode("utf-8"), parse_int=bounded_int,
                           object_pairs_hook=unique_keys)
    except DuplicateKeyError as exc:  # {"k": 5, "k": 7} read k = 7 without a word
        # (a FileFieldError: the CLI would blame its option of the same name, --k)
        raise FileFieldError(f"corrupt topicslab metadata ({exc})", file=file,
                             field=exc.key) from None
    except (UnicodeDecodeError, json.JSONDecodeError, IntegerTooLargeError):
        raise InputError("corrupt topicslab metadata (not JSON)", file=file) from None
    if not isinstance(block, dict):
        raise InputError("corrupt topicslab metadata (not an object)", file=file)
    return block


#: what each ``format`` of the metadata block holds, as the refusals say it
_FORMATS = {"topic_sets": "topic sets (wide)", "topic_sets_long": "topic sets (long)",
            "site_traces": "site traces"}


def check_block_format(block: dict[str, Any] | None, expected: str, *, file: str) -> None:
    """The metadata block's ``format`` and ``format_version``, when present, are what this
    reader reads: a block claiming other content (``"site_traces"`` on a topic-set table) or
    a later format (``format_version`` 99) was read without a word."""
    if block is None:
        return
    said = block.get("format")
    if said is not None and said != expected:
        what = _FORMATS.get(said) if isinstance(said, str) else None
        raise InputError(f"the topicslab metadata says the file holds "
                         f"{what or f'format {said!r}'}, but it is read as "
                         f"{_FORMATS[expected]} (format {expected!r}); give the file to the "
                         "command that reads it, or rewrite it (topicslab convert)",
                         file=file, field="metadata.format")
    version = block.get("format_version")
    if version is None:
        return
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise InputError(f"corrupt topicslab metadata: format_version must be a positive "
                         f"integer, got {version!r}; rewrite the file (or drop its topicslab "
                         "metadata)", file=file, field="metadata.format_version")
    if version > FORMAT_VERSION:
        raise InputError(f"written in format_version {version}, and this topicslab reads "
                         f"format_version {FORMAT_VERSION} only; upgrade topicslab (or "
                         "rewrite the file with this version)", file=file,
                         field="metadata.format_version")


def is_pattern(name: str) -> bool:
    """Whether ``name`` is a glob of TFRecord shards: it holds ``*``, ``?`` or ``[`` and no
    file of that very name exists (``pop[1].parquet``, which ``population --out`` writes,
    was read as a pattern: "no files match the pattern")."""
    return any(ch in name for ch in "*?[") and not os.path.lexists(name)


def missing(name: str) -> str:
    """Why ``name``, which ``os.path.exists`` does not find, cannot be read: no such file, or
    a symbolic link that cannot be followed (a link that loops round was "no such file",
    though ``ls`` lists it)."""
    if not os.path.islink(name):
        from topicslab._paths import unexpanded_tilde

        tilde = unexpanded_tilde(name)
        return f"no such file ({tilde})" if tilde else "no such file"
    try:
        os.stat(name)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return ("is a symbolic link that loops back on itself (too many levels of symbolic "
                    "links)")
    return f"is a symbolic link to {os.readlink(name)}, which does not exist"


def not_found(name: str, plain: str = "file not found") -> str:
    """``plain`` for a missing name, or what ``missing`` says of a symbolic link that cannot
    be followed (a dangling or looping link was "file not found", though ``ls`` lists it)."""
    return missing(name) if os.path.islink(name) else plain


def check_exists(path: PathLike) -> str:
    """``str(path)`` after checking it is a non-empty regular file."""
    from topicslab._paths import path_name

    name = path_name(path)
    if not os.path.exists(name):
        raise InputError(missing(name), file=name)
    if os.path.isdir(name):
        raise InputError(parquet_parts(name) or "is a directory, expected a file", file=name)
    if not stat.S_ISREG(os.stat(name).st_mode):
        # reading a pipe would wait for a writer forever, a device never ends
        raise InputError("is not a regular file (a pipe, socket or device); give a file",
                         file=name)
    if os.path.getsize(name) == 0:
        raise InputError("empty file", file=name)
    return name


_PANDAS_INDEX = re.compile(r"__index_level_[0-9]+__")


def data_columns(schema: pa.Schema) -> list[str]:
    """The schema's column names less the ones pandas wrote for a DataFrame's index
    (``df.to_parquet()`` keeps an index other than 0, 1, 2, ... as ``__index_level_0__``,
    listed in the file's pandas metadata): row labels, no data. A long or profile table
    saved so was not recognised ("no week column ... epoch_0_topics")."""
    try:
        index = (schema.pandas_metadata or {}).get("index_columns", [])
    except (ValueError, TypeError, AttributeError):  # (pandas metadata that is not JSON)
        index = []
    labels = {c for c in index if isinstance(c, str) and _PANDAS_INDEX.fullmatch(c)}
    return [n for n in schema.names if n not in labels]


def _holds_parquet(directory: str) -> bool:
    return any(f.lower().endswith((".parquet", ".pq")) and not f.startswith((".", "_"))
               and os.path.isfile(os.path.join(directory, f)) for f in os.listdir(directory))


def parquet_parts(directory: str) -> str | None:
    """What to say of a directory holding a Parquet data set written in parts -- Spark's
    ``part-*.parquet`` beside ``_SUCCESS`` and ``.crc`` files, or the ``week=0/``
    subdirectories of a partitioned (Hive-style) data set -- read where one file is expected;
    ``None`` for any other directory. It was "is a directory with no .tfrecord files" (read
    as TFRecord shards) or "is a directory, expected a file", naming neither what the
    directory holds nor how to read it."""
    try:
        entries = os.listdir(directory)
        partitioned = [e for e in entries if "=" in e.strip("=")
                       and os.path.isdir(os.path.join(directory, e))]
        if not _holds_parquet(directory) and not any(
                _holds_parquet(os.path.join(directory, e)) for e in partitioned):
            return None
    except OSError:
        return None
    how = (f"partitioned by {partitioned[0].split('=')[0]!r} (Hive-style {partitioned[0]}/ "
           "subdirectories)" if partitioned else "in part files (as Spark writes them)")
    return (f"is a directory holding a Parquet data set {how}, but topicslab reads one "
            "Parquet file here; merge the parts into one file first (in Python: "
            f"pyarrow.parquet.write_table(pyarrow.parquet.read_table({directory!r}), "
            "'one.parquet'))")


#: failures of the process's resources (open files, memory), which say nothing of the file;
#: and of a write while it is read (numba saving a kernel it compiled to its cache, past the
#: file-size limit or on a full disk: "not a valid Parquet file ([Errno 27] File too large)")
RESOURCE_ERRORS = (errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.EFBIG, errno.ENOSPC,
                   errno.EDQUOT)


@contextlib.contextmanager
def wrap_errors(file: str, what: str) -> Iterator[None]:
    """Turn pyarrow/OS/decoding failures into a one-line ``InputError`` naming ``file``.

    Our own errors pass through, gaining the file name if they lack one.
    """
    try:
        yield
    except InputError as exc:
        raise exc.located(file=file) from None
    except TopicsLabError as exc:
        raise InputError(str(exc), file=file) from None
    except (pa.ArrowException, OSError, UnicodeDecodeError, ValueError, KeyError) as exc:
        if isinstance(exc, OSError) and exc.errno in RESOURCE_ERRORS:
            # the process's limits, not the file: under ulimit -n 5 a good file was "not a
            # valid Parquet file ([Errno 24] Too many open files: '.../entry_points.txt')"
            raise
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"not a valid {what} file ({first})", file=file) from None


def check_unique_users(user_ids: npt.NDArray[np.int64], *, file: str, row_base: int = 0) -> None:
    """Strict mode: every user appears once (cheap when ids are already ascending)."""
    if user_ids.shape[0] < 2 or bool((np.diff(user_ids) > 0).all()):
        return
    order = np.argsort(user_ids, kind="stable")
    s = user_ids[order]
    same = s[1:] == s[:-1]
    if same.any():
        # the later occurrence in file order is the offending row
        rows = order[1:][same]
        i = int(rows.min())
        raise InputError(f"user id {int(user_ids[i])} appears more than once", file=file,
                         row=row_base + i + 1, field="user_id")


def release_arrow_memory() -> None:
    """Give the memory Arrow's pool keeps after a large read or write back to the system.

    The pool (mimalloc) keeps what a Parquet file's pages and buffers took for reuse: 0.58 GB
    after reading a 10M-user population (0.8 GB of sets), measured as the process's resident
    memory, which every later stage of a run then carried on top of its own (benchmarks/
    RESULTS.md). Nothing of the data read is touched.
    """
    pa.default_memory_pool().release_unused()


def check_sets_type(sets: Any, who: str) -> None:
    """A writer of topic sets given something else (an array failed inside the writer)."""
    from topicslab.datamodel import TopicSets

    if not isinstance(sets, TopicSets):
        raise TypeError(f"{who} takes TopicSets, got {type(sets).__name__}")


def check_sets_to_write(path: PathLike, sets: Any, who: str, *, validate: bool = True) -> None:
    """Refuse, before writing, ``sets`` that no reader takes back: each format's writer
    (write_sets_csv, _parquet, _tfrecord, _long and _profiles wrote them, and the file was
    refused when read, or read back changed; ``write_sets`` alone checked). ``validate``:
    also the topics' ranges and order (the Parquet writer checks them itself, chunk by
    chunk)."""
    from topicslab._paths import path_name

    # the name first, as write_sets checks it: each format's writer given True, None, an
    # open file or bytes failed deep inside with Python's TypeError ("expected str, bytes or
    # os.PathLike object, not bool", for bytes "a bytes-like object is required, not 'str'")
    path_name(path)
    check_sets_type(sets, who)
    if sets.k == 0 and sets.n_users and sets.n_weeks:
        # written, the Parquet file was refused by every reader ("corrupt topicslab metadata:
        # k must be ... 1..469") and a CSV read back with k = 5
        raise InputError(f"the sets hold no slot a week (shape {sets.sets.shape}, k = 0): no "
                         "reader takes such a file; give each week at least one slot (-1: "
                         "empty)", file=os.fspath(path), field="sets")
    ids = np.asarray(sets.user_ids)
    if ids.shape[0] > 1 and not bool((np.diff(ids) > 0).all()):
        uniq, counts = np.unique(ids, return_counts=True)
        if (counts > 1).any():  # written, every reader refused the file
            raise InputError(f"user id {int(uniq[np.argmax(counts > 1)])} appears more than "
                             "once in user_ids: no reader takes such a file; give each user "
                             "once", file=os.fspath(path), field="user_ids")
    if sets.n_weeks == 0:  # written, every reader refuses it (no week column), or a long
        # table read back with no user
        raise InputError(f"the sets hold no week (shape {sets.sets.shape}): no reader takes "
                         "such a file; give at least one week", file=os.fspath(path),
                         field="sets")
    if not validate:
        return
    try:  # (a CSV, long or profiles file of a topic twice in a week was written and refused
        # by its reader, a TFRecord read back without the repeat)
        sets.validate()
    except InputError as exc:
        raise InputError(f"user {exc.row} (index), {exc.field}: {exc.message}; no reader takes "
                         "such a file", file=os.fspath(path), field="sets") from None


#: the most topics a shipped taxonomy has (v2), the bound of ``k`` without a taxonomy object
MAX_TOPICS = 469

# The options every public reader takes (``read_sets`` and the readers of each format).
# NumPy integers (np.int64(5), as a user's arrays give them) were refused as "not an
# integer", and strict="no" was read as strict: the checks take numbers.Integral and bool


def check_k(k: object, taxonomy: object) -> int | None:
    """``k`` of a reader: ``None`` or an integer in 1..the taxonomy's topics. Every public
    reader checks it (``read_sets_tfrecord(k=-1)`` was NumPy's "negative dimensions are not
    allowed", ``read_sets_csv(k=True)`` "an integer is required"), not only ``read_sets``."""
    top = taxonomy.size if isinstance(taxonomy, Taxonomy) else MAX_TOPICS
    if k is None:
        return None
    if not is_integer(k) or not 1 <= int(k) <= top:  # type: ignore[call-overload]
        raise ParameterError(f"k must be an integer in 1..{top} (the taxonomy's topics), "
                             f"got {value_shown(k)}", field="k")
    return int(k)  # type: ignore[call-overload]


def check_batch_size(batch_size: object) -> int:
    """A reader's ``batch_size`` (``iter_sets_tfrecord(batch_size=0)`` read batches of one
    record, NaN and True without a word)."""
    if not is_integer(batch_size) or batch_size < 1:  # type: ignore[operator]
        raise ParameterError(f"batch_size must be a positive integer, got "
                             f"{value_shown(batch_size)}",
                             field="batch_size")
    # past 64 bits, pyarrow's OverflowError ("Python int too large to convert to C long")
    return integer(batch_size, "batch_size", at_least=1, at_most=MAX_COUNT)


def check_strict(strict: object) -> bool:
    """A reader's ``strict`` flag (anything was taken by its truth value)."""
    if not isinstance(strict, bool | np.bool_):
        raise ParameterError(f"strict must be True or False, got "
                             f"{value_shown(strict)}", field="strict")
    return bool(strict)
