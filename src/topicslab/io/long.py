"""Long user-week-topic tables (CSV, TSV or Parquet): one row per topic.

Public functions:
    write_sets_long(path, sets, *, delimiter=None)
    read_sets_long(path, *, taxonomy=None, k=None, weeks=None, strict=True, delimiter=None)
        -> TopicSets
    is_long_table(path) -> bool       sniff the header/schema for exactly these three columns

Columns ``user_id, week, topic_id``. The container follows the suffix: ``.parquet`` is Parquet
(with the ``topicslab`` metadata block: taxonomy, k, weeks, provenance), anything else is
delimited text (tab for ``.tsv``). A row with an empty (null) ``topic_id`` records a user-week
with no topics; the writer emits one for every empty week, so users whose weeks are all empty,
and trailing empty weeks, survive a round trip. The reader sorts users by id and spans weeks
0..max (or ``weeks``).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.parquet as pq

from topicslab._atomic import atomic_path
from topicslab.datamodel import TopicSets
from topicslab.errors import InputError
from topicslab.io._common import (
    DEFAULT_K,
    FORMAT_VERSION,
    MAX_WEEKS,
    META_KEY,
    ListError,
    PathLike,
    check_block_format,
    check_exists,
    check_k,
    check_sets_to_write,
    check_strict,
    data_columns,
    decode_meta,
    distinct_width,
    encode_meta,
    integer_values,
    lists_to_dense,
    parse_int_strings,
    wrap_errors,
)
from topicslab.io.csv_sets import (
    check_named,
    delimiter_for,
    read_header,
    read_text_table,
    write_text_table,
)
from topicslab.io.detect import taxonomy_for
from topicslab.taxonomy import Taxonomy

__all__ = ["is_long_table", "read_sets_long", "write_sets_long"]

COLUMNS = ("user_id", "week", "topic_id")


def _is_parquet(path: PathLike) -> bool:
    return os.fspath(path).lower().endswith((".parquet", ".pq"))


def is_long_table(path: PathLike, delimiter: str | None = None) -> bool:
    """True if the file's columns are exactly ``user_id, week, topic_id`` (any order)."""
    file = os.fspath(path)
    try:
        if _is_parquet(file):
            names = data_columns(pq.ParquetFile(file).schema_arrow)
        else:
            names = read_header(file, delimiter_for(file, delimiter))
    except (InputError, pa.ArrowException, OSError):
        return False
    return sorted(names) == sorted(COLUMNS)


def write_sets_long(path: PathLike, sets: TopicSets, *, delimiter: str | None = None) -> None:
    """Write ``sets`` as a long table (atomic); see the module docstring for empty weeks."""
    check_sets_to_write(path, sets, "write_sets_long")
    ids = sets.topic_ids()
    weeks = ids.shape[1]
    present = ids >= 0
    u, w, s = np.nonzero(present)
    eu, ew = np.nonzero(~present.any(axis=2))
    user = np.concatenate([u, eu])
    week = np.concatenate([w, ew])
    # merge the empty-week rows into (user, week) order; topics of a week stay ascending
    order = np.argsort(user * max(weeks, 1) + week, kind="stable")
    topic = np.concatenate([ids[u, w, s], np.full(eu.shape[0], -1, dtype=np.int32)])[order]
    cols = [pa.array(sets.user_ids[user[order]], type=pa.int64()),
            pa.array(week[order], type=pa.int32()),
            pa.array(topic, type=pa.int32(), mask=topic < 0)]
    if _is_parquet(path):
        block = {"format": "topic_sets_long", "format_version": FORMAT_VERSION,
                 "taxonomy": sets.taxonomy.version, "k": sets.k, "weeks": weeks,
                 "provenance": sets.metadata}
        schema = pa.schema([pa.field("user_id", pa.int64(), nullable=False),
                            pa.field("week", pa.int32(), nullable=False),
                            pa.field("topic_id", pa.int32())],
                           metadata={META_KEY: encode_meta(block)})
        table = pa.Table.from_arrays(cols, schema=schema)
        with atomic_path(path) as tmp:
            pq.write_table(table, tmp, compression="zstd")
    else:
        write_text_table(path, pa.Table.from_arrays(cols, names=list(COLUMNS)),
                         delimiter_for(path, delimiter))


def _columns(file: str, delimiter: str | None) -> tuple[
        npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64],
        npt.NDArray[np.bool_], dict[str, Any] | None]:
    """user, week, topic (0 where absent), topic-present mask, metadata block."""
    def row_of(i: int) -> int:
        return i + 1

    if _is_parquet(file):
        with wrap_errors(file, "Parquet"):
            pf = pq.ParquetFile(file)
            block = decode_meta(pf.schema_arrow.metadata, file=file)
            for name in COLUMNS:
                if name not in pf.schema_arrow.names:
                    raise InputError("missing column", file=file, field=name)
            check_block_format(block, "topic_sets_long", file=file)
            table = pf.read(columns=list(COLUMNS))

            def col(name: str) -> pa.Array:
                c = table.column(name)
                return pa.concat_arrays(c.chunks) if c.num_chunks else pa.array([], c.type)

            user = integer_values(col("user_id"), file=file, field="user_id", row_of=row_of)
            week = integer_values(col("week"), file=file, field="week", row_of=row_of)
            t = col("topic_id")
            present = ~np.asarray(t.is_null().to_numpy(zero_copy_only=False), dtype=bool)
            rows = np.flatnonzero(present)
            vals = integer_values(t.filter(pa.array(present)) if t.null_count else t,
                                  file=file, field="topic_id",
                                  row_of=lambda j: int(rows[j]) + 1)
            topic = np.zeros(user.shape[0], dtype=np.int64)
            topic[present] = vals
            return user, week, topic, present, block
    delim = delimiter_for(file, delimiter)
    names = read_header(file, delim)
    check_named(names, file)
    for name in COLUMNS:
        if name not in names:
            raise InputError("missing column", file=file, field=name)
    table = read_text_table(file, delim, names)
    with wrap_errors(file, "CSV"):
        user, _ = parse_int_strings(table.column("user_id").combine_chunks(), file=file,
                                    field="user_id", row_of=row_of)
        week, _ = parse_int_strings(table.column("week").combine_chunks(), file=file,
                                    field="week", row_of=row_of)
        topic, present = parse_int_strings(table.column("topic_id").combine_chunks(),
                                           file=file, field="topic_id", row_of=row_of,
                                           allow_empty=True)
        return user, week, topic, present, None


def _check_dense_size(users: int, weeks: int, file: str) -> None:
    """Refuse grouping more (user, week) lists than fit in memory: their offsets and counts
    (16 bytes) and the dense sets (at least 10: five int16 topics), naming the file."""
    from topicslab._resources import require_memory

    try:
        require_memory(float(users) * weeks * 26, f"{users:,} users x {weeks:,} weeks",
                       field="week")
    except InputError as exc:
        raise exc.located(file=file) from None


def read_sets_long(path: PathLike, *, taxonomy: Taxonomy | str | None = None,
                   k: int | None = None, weeks: int | None = None, strict: bool = True,
                   delimiter: str | None = None) -> TopicSets:
    """Group a long table into ``TopicSets`` (users ascending by id).

    ``strict`` makes a repeated (user, week, topic) row an error; otherwise repeats merge.
    Rows in errors are 1-based data rows.
    """
    k, strict = check_k(k, taxonomy), check_strict(strict)  # (as read_sets checks them)
    file = check_exists(path)
    user, week, topic, present, block = _columns(file, delimiter)
    tax = taxonomy_for(taxonomy, block.get("taxonomy") if block else None, topic[present],
                       file=file)
    if k is None and block is not None and isinstance(block.get("k"), int):
        k = int(block["k"])
    if weeks is None and block is not None and isinstance(block.get("weeks"), int):
        weeks = int(block["weeks"])
    prov = block.get("provenance") if block else None
    metadata: dict[str, Any] = prov if isinstance(prov, dict) else {}
    if week.shape[0] and int(week.min()) < 0:
        i = int(np.argmax(week < 0))
        raise InputError(f"week {int(week[i])} is negative", file=file, row=i + 1, field="week")
    if week.shape[0] and int(week.max()) >= MAX_WEEKS:
        i = int(np.argmax(week >= MAX_WEEKS))
        raise InputError(f"week {int(week[i])} is past the last week a file may hold "
                         f"({MAX_WEEKS - 1}: at most {MAX_WEEKS} weeks, as a population)",
                         file=file, row=i + 1, field="week")
    if weeks is not None and not 0 <= weeks <= MAX_WEEKS:
        raise InputError(f"weeks must be in 0..{MAX_WEEKS}, got {weeks}", file=file,
                         field="metadata.weeks" if block and "weeks" in block else "weeks")
    n_weeks = weeks if weeks is not None else (int(week.max()) + 1 if week.shape[0] else 0)
    if week.shape[0] and int(week.max()) >= n_weeks:
        i = int(np.argmax(week >= n_weeks))
        raise InputError(f"week {int(week[i])} is beyond the {n_weeks} weeks expected",
                         file=file, row=i + 1, field="week")
    user_ids, u_pos = np.unique(user, return_inverse=True)
    u_pos = u_pos.reshape(-1)
    n = user_ids.shape[0]
    # one list per (user, week): sort the topic rows by that key, keeping file order inside
    _check_dense_size(n, n_weeks, file)
    key = u_pos * max(n_weeks, 1) + week
    rows = np.flatnonzero(present)
    order = rows[np.argsort(key[rows], kind="stable")]
    counts = np.bincount(key[order], minlength=n * n_weeks)
    offsets = np.zeros(n * n_weeks + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    if k is None:
        k = (int(counts.max()) if strict else distinct_width(offsets, topic[order])) \
            if counts.shape[0] else 0
        k = k or DEFAULT_K
    try:
        dense = lists_to_dense(offsets, topic[order], k, tax, dedupe=not strict)
    except ListError as err:
        j = err.value_index
        if j is None:
            j = int(offsets[err.list_index])
        raise InputError(err.message, file=file, row=int(order[j]) + 1,
                         field="topic_id") from None
    return TopicSets(dense.reshape(n, n_weeks, k), tax, user_ids.astype(np.int64), metadata)
