"""Profile tables from other tools: one row per user (or per user and week), one column per
topic slot.

Public functions:
    read_sets_profiles(path, *, taxonomy=None, k=None, weeks=None, strict=True, delimiter=None)
        -> TopicSets
    write_sets_profiles(path, sets, *, delimiter=None)
    is_profile_table(path, delimiter=None) -> bool     sniff the header/schema

Academic Topics API simulators publish a user's top-k profile of one epoch (Chrome keeps the
top 5 topics of each epoch) as a row of k topic-id columns, often without a user id and with
a count of identical users. Columns, by name, any case, spaces, ``_`` and ``-`` ignored:

* topic slots: ``t1..tk``, ``topic1..``, ``topic_1..``, ``topic_id_1..`` (numbered from 0 or 1,
  consecutively); a cell is a taxonomy id, empty (or ``-1``) for an unused slot;
* optional ``user_id`` (also ``user``, ``uid``, ``id``);
* optional ``week`` (also ``epoch``): rows are user-weeks, grouped by user id (so it needs
  ``user_id``; users keep the order of their first row); weeks are numbered from the
  smallest one present, a missing user-week is empty;
* optional ``count`` (also ``n``, ``users``, ``n_users``, ``num_users``, ``multiplicity``):
  the row stands for that many identical users (a positive integer); only without user ids.

A file whose first line is all integers (or empty cells) has no header: every column is a
topic slot. Without a week column each row is one user's profile of a single week; without
user ids users are numbered 0, 1, ... in row order (after counts are expanded). The taxonomy
is detected from the ids (``topicslab.io.detect``) unless given. The container follows the
suffix: ``.parquet``/``.pq`` is Parquet, anything else delimited text (tab for ``.tsv``).
The writer emits ``user_id``, ``week`` (only for more than one week) and ``t1..tk``, one row
per user-week.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from topicslab._atomic import atomic_path
from topicslab.datamodel import TopicSets
from topicslab.errors import InputError
from topicslab.io._common import (
    DEFAULT_K,
    MAX_WEEKS,
    ListError,
    PathLike,
    check_exists,
    check_k,
    check_sets_to_write,
    check_strict,
    check_unique_users,
    data_columns,
    distinct_width,
    integer_values,
    lists_to_dense,
    parse_int_strings,
    wrap_errors,
)
from topicslab.io.csv_sets import (
    check_named,
    delimiter_for,
    locate_parse_error,
    read_header,
    read_text_table,
    text_stream,
    write_text_table,
)
from topicslab.io.detect import taxonomy_for
from topicslab.taxonomy import Taxonomy

__all__ = ["is_profile_table", "read_sets_profiles", "write_sets_profiles"]

_TOPIC_RE = re.compile(r"^(?:t|topic|topics|topicid)([0-9]+)$")
_ROLES = {
    "user": {"userid", "user", "uid", "id"},
    "week": {"week", "epoch", "weekid", "epochid"},
    "count": {"count", "n", "users", "nusers", "numusers", "multiplicity"},
}
_INT_CELL = re.compile(r"^\s*[+-]?[0-9]*\s*$")


def _norm(name: str) -> str:
    return re.sub(r"[\s_\-]", "", name).lower()


def _is_parquet(path: str) -> bool:
    return path.lower().endswith((".parquet", ".pq"))


@dataclass
class _Layout:
    """Which column plays which part; ``topics`` in slot order."""

    topics: list[str]
    user: str | None = None
    week: str | None = None
    count: str | None = None


def _layout(names: list[str], *, file: str) -> _Layout:
    slots: list[tuple[int, str]] = []
    roles: dict[str, str] = {}
    for name in names:
        key = _norm(name)
        m = _TOPIC_RE.match(key)
        if m:
            slots.append((int(m.group(1)), name))
            continue
        role = next((r for r, keys in _ROLES.items() if key in keys), None)
        if role is None:
            raise InputError("unknown column: a profile table has topic columns t1..tk and "
                             "optionally user_id, week (or epoch) and count", file=file,
                             field=name)
        if role in roles:
            raise InputError(f"two {role} columns ({roles[role]!r} and {name!r})", file=file,
                             field=name)
        roles[role] = name
    if not slots:
        raise InputError("no topic columns (t1..tk, topic1..topick)", file=file)
    slots.sort()
    first = slots[0][0]
    for expect, (num, name) in enumerate(slots, start=first):
        if first > 1 or num != expect:
            raise InputError("topic columns must be numbered consecutively from 0 or 1",
                             file=file, field=name)
    if roles.get("week") and not roles.get("user"):
        raise InputError("a week column needs a user_id column (to group a user's weeks)",
                         file=file, field=roles["week"])
    if roles.get("count") and roles.get("user"):
        raise InputError("a count column stands for that many identical users, which "
                         "cannot share one user id: drop the count or the user_id column",
                         file=file, field=roles["count"])
    return _Layout([n for _, n in slots], roles.get("user"), roles.get("week"),
                   roles.get("count"))


def _headerless(names: list[str]) -> bool:
    return bool(names) and all(_INT_CELL.match(n) for n in names) and any(n.strip()
                                                                         for n in names)


def is_profile_table(path: PathLike, delimiter: str | None = None) -> bool:
    """True if the columns read as a profile table (see the module docstring)."""
    file = os.fspath(path)
    try:
        if _is_parquet(file):
            names = data_columns(pq.ParquetFile(file).schema_arrow)
        else:
            names = read_header(file, delimiter_for(file, delimiter))
            if _headerless(names):
                return True
        _layout(names, file=file)
    except (InputError, pa.ArrowException, OSError):
        return False
    return True


# ------------------------------------------------------------------------------ reading

class _Columns:
    """The parsed columns: topic ids ``[rows, slots]`` (``present`` marks used slots), and
    user ids, weeks and counts where the file has them."""

    def __init__(self, topics: npt.NDArray[np.int64], present: npt.NDArray[np.bool_],
                 user: npt.NDArray[np.int64] | None, week: npt.NDArray[np.int64] | None,
                 count: npt.NDArray[np.int64] | None, layout: _Layout) -> None:
        self.topics = topics
        self.present = present
        self.user = user
        self.week = week
        self.count = count
        self.layout = layout


def _row(i: int) -> int:
    return i + 1


def _text_columns(file: str, delimiter: str | None) -> _Columns:
    delim = delimiter_for(file, delimiter)
    names = read_header(file, delim)
    if _headerless(names):
        layout = _Layout([f"column {j + 1}" for j in range(len(names))])
        try:
            with text_stream(file) as source:  # (gunzipped as the header was)
                table = pacsv.read_csv(
                    source, read_options=pacsv.ReadOptions(column_names=layout.topics),
                    parse_options=pacsv.ParseOptions(delimiter=delim),
                    convert_options=pacsv.ConvertOptions(
                        column_types={n: pa.string() for n in layout.topics},
                        strings_can_be_null=False))
        except pa.ArrowException as exc:
            err = locate_parse_error(file, delim, len(names), str(exc))
            raise InputError(err.message, file=file,
                             row=None if err.row is None else err.row + 1) from None
    else:
        check_named(names, file)
        if len(set(names)) != len(names):
            dup = next(n for n in names if names.count(n) > 1)
            raise InputError("duplicate column", file=file, field=dup)
        layout = _layout(names, file=file)
        table = read_text_table(file, delim, names)
    with wrap_errors(file, "CSV"):
        n = table.num_rows
        topics = np.zeros((n, len(layout.topics)), dtype=np.int64)
        present = np.zeros((n, len(layout.topics)), dtype=bool)
        for j, name in enumerate(layout.topics):
            topics[:, j], present[:, j] = parse_int_strings(
                table.column(name).combine_chunks(), file=file, field=name, row_of=_row,
                allow_empty=True)

        def ints(name: str | None) -> npt.NDArray[np.int64] | None:
            if name is None:
                return None
            return parse_int_strings(table.column(name).combine_chunks(), file=file,
                                     field=name, row_of=_row)[0]

        return _Columns(topics, present, ints(layout.user), ints(layout.week),
                        ints(layout.count), layout)


def _parquet_columns(file: str) -> _Columns:
    with wrap_errors(file, "Parquet"):
        table = pq.read_table(file)
        layout = _layout(data_columns(table.schema), file=file)
        n = table.num_rows

        def col(name: str) -> pa.Array:
            c = table.column(name)
            return pa.concat_arrays(c.chunks) if c.num_chunks else pa.array([], c.type)

        topics = np.zeros((n, len(layout.topics)), dtype=np.int64)
        present = np.zeros((n, len(layout.topics)), dtype=bool)
        for j, name in enumerate(layout.topics):
            arr = col(name)
            has = ~np.asarray(arr.is_null().to_numpy(zero_copy_only=False), dtype=bool)
            rows = np.flatnonzero(has)
            topics[has, j] = integer_values(arr.filter(pa.array(has)) if arr.null_count
                                            else arr, file=file, field=name,
                                            row_of=lambda i, rows=rows: int(rows[i]) + 1)
            present[:, j] = has

        def ints(name: str | None) -> npt.NDArray[np.int64] | None:
            return None if name is None else integer_values(col(name), file=file, field=name,
                                                            row_of=_row)

        return _Columns(topics, present, ints(layout.user), ints(layout.week),
                        ints(layout.count), layout)


def read_sets_profiles(path: PathLike, *, taxonomy: Taxonomy | str | None = None,
                       k: int | None = None, weeks: int | None = None, strict: bool = True,
                       delimiter: str | None = None) -> TopicSets:
    """Read a profile table (see the module docstring) into ``TopicSets``.

    ``strict`` makes a topic repeated within a row, or a repeated user (or user-week), an
    error; with ``strict=False`` repeated topics merge. Rows in errors are 1-based data rows.
    """
    k, strict = check_k(k, taxonomy), check_strict(strict)  # (as read_sets checks them)
    file = check_exists(path)
    c = _parquet_columns(file) if _is_parquet(file) else _text_columns(file, delimiter)
    present = c.present & (c.topics >= 0)  # -1: an unused slot, as in topicslab's arrays
    n = c.topics.shape[0]
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(present.sum(axis=1), out=offsets[1:])
    values = c.topics[present]
    slot_of = np.nonzero(present)[1]
    tax = taxonomy_for(taxonomy, None, values, file=file)
    if k is None:
        k = (int(np.diff(offsets).max()) if strict else distinct_width(offsets, values)) \
            if n else 0
        k = k or DEFAULT_K
    try:
        dense = lists_to_dense(offsets, values, k, tax, dedupe=not strict)
    except ListError as err:
        j = err.value_index
        field = c.layout.topics[int(slot_of[j])] if j is not None and j < values.shape[0] \
            else c.layout.topics[min(k, len(c.layout.topics) - 1)]
        raise InputError(err.message, file=file, row=err.list_index + 1, field=field) from None
    if c.week is not None:
        assert c.user is not None and c.layout.week is not None
        return _by_week(dense, c.user, c.week, weeks, tax, strict, file, c.layout.week)
    if weeks is not None and weeks != 1:
        raise InputError(f"file has 1 week (no week column), expected {weeks}", file=file)
    if c.count is not None:
        assert c.layout.count is not None
        bad = c.count < 1
        if bad.any():
            i = int(np.argmax(bad))
            raise InputError(f"count must be a positive integer (the users the row stands "
                             f"for), got {int(c.count[i])}", file=file, row=i + 1,
                             field=c.layout.count)
        _check_expanded_size(c.count, k, file, c.layout.count)
        dense = np.repeat(dense, c.count, axis=0)
    if c.user is not None:
        user_ids = c.user
        if strict:
            check_unique_users(user_ids, file=file)
    else:
        user_ids = np.arange(dense.shape[0], dtype=np.int64)
    return TopicSets(np.ascontiguousarray(dense[:, None, :]), tax, user_ids, {})


def _check_expanded_size(count: npt.NDArray[np.int64], k: int, file: str, field: str) -> None:
    """Refuse counts that stand for more users than fit in memory (a stray 10^12 failed as
    "out of memory" once the repeat was tried), naming the file and the count column; the
    row is the largest count's."""
    from topicslab._resources import require_memory

    users = float(count.sum(dtype=np.float64))
    try:
        require_memory(users * k * 2, f"expanding the counts to {users:,.0f} users",
                       field=field, hint="check the largest count")
    except InputError as exc:
        raise exc.located(file=file, row=int(np.argmax(count)) + 1) from None


def _by_week(dense: npt.NDArray[np.int16], user: npt.NDArray[np.int64],
             week: npt.NDArray[np.int64], weeks: int | None, tax: Taxonomy, strict: bool,
             file: str, field: str) -> TopicSets:
    """Rows of user-weeks -> users in order of first appearance, weeks from the smallest
    present."""
    base = int(week.min()) if week.shape[0] else 0
    if week.shape[0] and int(week.max()) - base >= MAX_WEEKS:
        # (a week of 2147483648 tried a dense array of 2^31 weeks: "MemoryError: Unable to
        # allocate 5.86 TiB", where a long table's week is refused; and a span past 2^63 wrapped
        # around in the subtraction below)
        i = int(np.argmax(week == week.max()))
        raise InputError(f"week {int(week[i])} is {int(week[i]) - base:,} weeks after the "
                         f"first ({base}): past the last week a file may hold (at most "
                         f"{MAX_WEEKS} weeks, as a population)", file=file, row=i + 1,
                         field=field)
    w = week - base
    span = int(w.max()) + 1 if w.shape[0] else 0
    n_weeks = span if weeks is None else weeks
    if span > n_weeks:
        i = int(np.argmax(w >= n_weeks))
        raise InputError(f"week {int(week[i])} is beyond the {n_weeks} weeks expected "
                         f"(weeks count from {base}, the smallest in the file)", file=file,
                         row=i + 1, field=field)
    uniq, first, inv = np.unique(user, return_index=True, return_inverse=True)
    appear = np.argsort(first, kind="stable")  # users in order of first appearance
    rank = np.empty_like(appear)
    rank[appear] = np.arange(appear.shape[0])
    pos = rank[inv.reshape(-1)]
    user_ids = uniq[appear]
    key = pos * max(n_weeks, 1) + w
    order = np.argsort(key, kind="stable")
    again = np.flatnonzero(key[order][1:] == key[order][:-1])
    if again.size:
        i = int(order[again + 1].min())
        what = "appears twice" if strict else "appears twice (rows cannot be merged)"
        raise InputError(f"user {int(user[i])} week {int(week[i])} {what}", file=file,
                         row=i + 1, field=field)
    out = np.full((user_ids.shape[0], n_weeks, dense.shape[1]), -1, dtype=np.int16)
    out[pos, w] = dense
    return TopicSets(out, tax, user_ids.astype(np.int64), {})


# ------------------------------------------------------------------------------ writing

def write_sets_profiles(path: PathLike, sets: TopicSets, *, delimiter: str | None = None,
                        ) -> None:
    """Write ``sets`` as a profile table (atomic): ``user_id``, ``week`` when there is more
    than one, ``t1..tk``; one row per user-week, empty cells for unused slots."""
    check_sets_to_write(path, sets, "write_sets_profiles")
    ids = sets.topic_ids()
    n, weeks, k = ids.shape
    flat = ids.reshape(n * weeks, k)
    cols: list[pa.Array] = [pa.array(np.repeat(sets.user_ids, weeks), type=pa.int64())]
    names = ["user_id"]
    if weeks != 1:
        cols.append(pa.array(np.tile(np.arange(weeks, dtype=np.int64), n)))
        names.append("week")
    for j in range(k):
        cols.append(pa.array(flat[:, j], mask=flat[:, j] < 0, type=pa.int32()))
        names.append(f"t{j + 1}")
    table = pa.Table.from_arrays(cols, names=names)
    if _is_parquet(os.fspath(path)):
        with atomic_path(path) as tmp:
            pq.write_table(table, tmp, compression="zstd")
    else:
        write_text_table(path, table, delimiter_for(path, delimiter))
