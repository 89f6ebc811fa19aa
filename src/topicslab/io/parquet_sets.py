"""Topic-set sequences as Parquet: one row per user.

Public functions:
    write_sets_parquet(path, sets, *, row_group_size=1_048_576)
    read_sets_parquet(path, *, taxonomy=None, k=None, weeks=None, strict=True) -> TopicSets
    iter_sets_parquet(path, batch_size=1_048_576, *, taxonomy=None, k=None, strict=True)
        -> Iterator[TopicSets]
    SetsWriter(path, taxonomy, k, weeks, metadata=None)   append chunks, atomic on close

Layout: ``user_id`` (int64) and ``epoch_{w}_topics`` (``list<int32>`` of taxonomy ids, empty
slots dropped) for w = 0..W-1. The Parquet key-value metadata holds a JSON block under the key
``topicslab``: ``{"format": "topic_sets", "format_version", "taxonomy", "k", "weeks",
"provenance"}``, where provenance is ``TopicSets.metadata``. Files written by other tools (no
block) are read with taxonomy v2 (or the one passed) and k = the widest week.

Conversion is columnar (numpy offsets/values into ``ListArray.from_arrays``), never a Python
loop over users, so tens of millions of users take seconds.
"""

from __future__ import annotations

from collections.abc import Iterator
from types import TracebackType
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from topicslab._atomic import atomic_path
from topicslab._checks import MAX_COUNT, integer
from topicslab.datamodel import TopicSets
from topicslab.errors import InputError
from topicslab.io._common import (
    DEFAULT_K,
    FORMAT_VERSION,
    MAX_WEEKS,
    META_KEY,
    PathLike,
    arrow_numbers,
    check_block_format,
    check_exists,
    check_sets_to_write,
    check_unique_users,
    decode_meta,
    encode_meta,
    pick_taxonomy,
    release_arrow_memory,
    sets_column,
    week_columns,
    week_list_arrays,
    wrap_errors,
)
from topicslab.io.arrow import arrow_to_sets
from topicslab.taxonomy import Taxonomy, resolve

__all__ = ["SetsWriter", "iter_sets_parquet", "read_sets_parquet", "write_sets_parquet"]

ROW_GROUP = 1 << 20
#: the least bytes a user-week takes in a topic-set Parquet file: k = 5 of 469 topics hold
#: about 4.7 bytes of entropy and the calibrated population takes ~7; a lower bound, so that
#: the disk checks refuse only what surely cannot fit
PARQUET_BYTES_PER_USER_WEEK = 2

#: files with more rows (and a known k) are read batch by batch into one preallocated array;
#: an eighth of a row group per batch: reading 10M users × 8 weeks peaked at 2.74 GB with
#: whole row groups (their Arrow lists and conversion buffers) and 1.71 GB with this, in
#: 10.0 s instead of 12.0 s (benchmarks/RESULTS.md); smaller batches saved little more
READ_BATCH = ROW_GROUP // 8


def _schema(weeks: int, block: dict[str, Any]) -> pa.Schema:
    fields = [pa.field("user_id", pa.int64(), nullable=False)]
    fields += [pa.field(sets_column(w), pa.list_(pa.int32())) for w in range(weeks)]
    return pa.schema(fields, metadata={META_KEY: encode_meta(block)})


def _block(taxonomy: Taxonomy, k: int, weeks: int, metadata: dict[str, Any]) -> dict[str, Any]:
    return {"format": "topic_sets", "format_version": FORMAT_VERSION,
            "taxonomy": taxonomy.version, "k": k, "weeks": weeks, "provenance": metadata}


def _table(sets: TopicSets, schema: pa.Schema) -> pa.Table:
    cols = [arrow_numbers(sets.user_ids, np.int64)]
    cols += week_list_arrays(sets.sets, sets.taxonomy)
    return pa.Table.from_arrays(cols, schema=schema)


class SetsWriter:
    """Append ``TopicSets`` chunks to one Parquet file; atomic (renamed into place on close).

    Use as a context manager; an exception inside the ``with`` block (or ``abort()``) removes
    the temporary file and leaves nothing under ``path``. Each ``write`` becomes at least one
    row group, so chunks of ~1M users give a file that ``iter_sets_parquet`` streams well.
    """

    def __init__(self, path: PathLike, taxonomy: Taxonomy | str, k: int, weeks: int,
                 metadata: dict[str, Any] | None = None, *, row_group_size: int = ROW_GROUP,
                 ) -> None:
        from topicslab._paths import path_name

        # (True, None or an open file was "expected str, bytes or os.PathLike object")
        self.path = path_name(path)
        self.taxonomy = resolve(taxonomy)
        # int() took k = 1.5 as 1 and row_group_size = 1.5 as 1; k = 0 or 0 weeks wrote files
        # every reader refuses, and row_group_size = 0 failed at the first write (range())
        self.k = integer(k, "k", at_least=1, at_most=self.taxonomy.size,
                         why="a week holds 1 to m topic slots")
        self.weeks = integer(weeks, "weeks", at_least=1, at_most=MAX_WEEKS,
                             why=f"a file holds 1 to {MAX_WEEKS} weeks")
        self.row_group_size = integer(row_group_size, "row_group_size", at_least=1)
        if metadata is not None and not isinstance(metadata, dict):
            # (as TopicSets: a number was "'int' object is not iterable", text dict()'s
            # "dictionary update sequence element #0", and 0.0 or () were taken as no metadata)
            raise InputError(f"metadata must be a dict, got {type(metadata).__name__}",
                             field="metadata")
        self.rows = 0
        self._schema = _schema(self.weeks, _block(self.taxonomy, self.k, self.weeks,
                                                  dict(metadata or {})))
        self._atomic = atomic_path(self.path)
        tmp = self._atomic.__enter__()
        try:
            self._writer: pq.ParquetWriter | None = pq.ParquetWriter(
                tmp, self._schema, compression="zstd")
        except BaseException as exc:
            self._atomic.__exit__(type(exc), exc, exc.__traceback__)
            raise

    def write(self, sets: TopicSets) -> None:
        """Append a chunk (same taxonomy and weeks; at most k topics per week)."""
        if self._writer is None:
            raise ValueError("SetsWriter is closed")
        if sets.taxonomy.version != self.taxonomy.version:
            raise InputError(f"chunk uses taxonomy {sets.taxonomy.version}, writer "
                             f"{self.taxonomy.version}", file=self.path)
        if sets.n_weeks != self.weeks:
            raise InputError(f"chunk has {sets.n_weeks} weeks, writer {self.weeks}",
                             file=self.path)
        try:
            sets.validate()
        except InputError as exc:  # (the error named no file)
            raise exc.located(file=self.path) from None
        if sets.k > self.k and bool((sets.sets[..., self.k:] >= 0).any()):
            raise InputError(f"chunk has more than k={self.k} topics in a week",
                             file=self.path)
        for start in range(0, max(sets.n_users, 1), self.row_group_size):
            part = sets.subset(slice(start, start + self.row_group_size))
            self._writer.write_table(_table(part, self._schema))
        self.rows += sets.n_users

    def close(self) -> None:
        """Finish the file and move it to its final name."""
        if self._writer is None:
            return
        writer, self._writer = self._writer, None
        try:
            writer.close()
        except BaseException as exc:
            self._atomic.__exit__(type(exc), exc, exc.__traceback__)
            raise
        finally:
            release_arrow_memory()
        self._atomic.__exit__(None, None, None)

    def abort(self, cause: BaseException | None = None) -> None:
        """Discard everything written; nothing appears under ``path``. ``cause``, the failure
        that stopped the writing, lets ``atomic_path`` name the file when it is the disk's
        (full, or the file past the file-size limit)."""
        if self._writer is None:
            return
        writer, self._writer = self._writer, None
        try:
            writer.close()
        finally:
            release_arrow_memory()
            exc = cause if isinstance(cause, Exception) else RuntimeError("aborted")
            # (given a stand-in, atomic_path saw no EFBIG: "OSError: [Errno 27] Error
            # writing bytes to file", naming no file, exit code 1, under ulimit -f)
            self._atomic.__exit__(type(exc), exc, exc.__traceback__)

    def __enter__(self) -> SetsWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort(exc)


def write_sets_parquet(path: PathLike, sets: TopicSets, *, row_group_size: int = ROW_GROUP,
                       ) -> None:
    """Write ``sets`` to ``path`` (atomic)."""
    check_sets_to_write(path, sets, "write_sets_parquet", validate=False)  # (SetsWriter does)
    with SetsWriter(path, sets.taxonomy, sets.k, sets.n_weeks, sets.metadata,
                    row_group_size=row_group_size) as w:
        w.write(sets)


# --------------------------------------------------------------------------- reading

class TracesNotSetsError(InputError):
    """A traces file given where topic sets were expected."""


class _Plan:
    """What the file declares (or implies): taxonomy, k, weeks, provenance."""

    def __init__(self, file: str, schema: pa.Schema, taxonomy: Taxonomy | str | None,
                 k: int | None, weeks: int | None) -> None:
        block = decode_meta(schema.metadata, file=file)
        names = schema.names
        if "user_id" not in names:
            raise InputError("missing column", file=file, field="user_id")
        if "site" in names and "epoch_0_topic" in names and "epoch_0_topics" not in names:
            raise TracesNotSetsError("holds site traces (one answer per site, user and week, "
                                     "as observe writes), not topic sets", file=file)
        check_block_format(block, "topic_sets", file=file)
        self.weeks = week_columns(names, "epoch_{w}_topics", file=file)
        known = {sets_column(w) for w in range(self.weeks)}
        # other columns (a pandas index, ...) are left alone, but a misspelt week column
        # (epoch_3_topic) would drop a week without a word
        typo = next((n for n in names if n.lower().startswith("epoch") and n not in known),
                    None)
        if typo is not None:
            raise InputError("unknown week column: week columns are named epoch_0_topics, "
                             "epoch_1_topics, ...; rename or remove it", file=file, field=typo)
        if block is not None and isinstance(block.get("weeks"), int) \
                and block["weeks"] != self.weeks:
            raise InputError(f"metadata says {block['weeks']} weeks, columns give "
                             f"{self.weeks}", file=file,
                             field=sets_column(min(self.weeks, block["weeks"])))
        if weeks is not None and weeks != self.weeks:
            raise InputError(f"file has {self.weeks} weeks, expected {weeks}", file=file)
        stored_tax = block.get("taxonomy") if block else None
        self.taxonomy = pick_taxonomy(taxonomy, stored_tax, file=file)
        # no taxonomy given or stored: the first converted batch's ids detect it
        self.detect = taxonomy is None and stored_tax is None
        stored_k = block.get("k") if block else None
        if stored_k is not None and (isinstance(stored_k, bool) or not isinstance(stored_k, int)
                                     or not 1 <= stored_k <= self.taxonomy.size):
            raise InputError("corrupt topicslab metadata: k must be an integer in "
                             f"1..{self.taxonomy.size}, got {stored_k!r}; rewrite the file "
                             "(or drop its topicslab metadata)", file=file,
                             field="metadata.k")
        self.k: int | None = k if k is not None else (
            int(stored_k) if isinstance(stored_k, int) else None)
        prov = block.get("provenance") if block else None
        self.metadata: dict[str, Any] = prov if isinstance(prov, dict) else {}
        self.columns = ["user_id"] + [sets_column(w) for w in range(self.weeks)]


def _convert(file: str, cols: list[pa.Array], plan: _Plan, k: int | None, strict: bool,
             row_base: int) -> TopicSets:
    """A batch of columns (user_id, weeks...) -> TopicSets; rows numbered from row_base+1.
    Without a taxonomy given or stored, the first batch's ids detect it for the file."""
    got = arrow_to_sets(cols, [sets_column(w) for w in range(plan.weeks)],
                        taxonomy=None if plan.detect else plan.taxonomy, k=k, strict=strict,
                        file=file, row_base=row_base)
    plan.taxonomy, plan.detect = got.taxonomy, False
    if strict:
        check_unique_users(got.user_ids, file=file, row_base=row_base)
    got.metadata = dict(plan.metadata)
    return got


def read_sets_parquet(path: PathLike, *, taxonomy: Taxonomy | str | None = None,
                      k: int | None = None, weeks: int | None = None, strict: bool = True,
                      ) -> TopicSets:
    """Read a whole topic-set Parquet file.

    ``strict`` makes a repeated topic within a week, or a repeated user id, an error; with
    ``strict=False`` repeated topics are merged. Rows in errors are 1-based data rows.
    """
    file = check_exists(path)
    try:
        return _read_sets_parquet(file, taxonomy, k, weeks, strict)
    finally:
        release_arrow_memory()


def _read_sets_parquet(file: str, taxonomy: Taxonomy | str | None, k: int | None,
                       weeks: int | None, strict: bool) -> TopicSets:
    with wrap_errors(file, "Parquet"):
        # row group by row group: pre-buffering held the whole compressed file in Arrow's
        # pool (measured on a 10M-user, 450 MB file: pool peak 513 MB instead of 135 MB,
        # resident 657 MB instead of 315 MB, and 3.7 s instead of 2.8 s to read it through)
        pf = pq.ParquetFile(file, pre_buffer=False)
        plan = _Plan(file, pf.schema_arrow, taxonomy, k, weeks)
        n_rows = pf.metadata.num_rows
        if plan.k is not None and n_rows > READ_BATCH:
            # Known k: convert batch by batch into one preallocated array, so the peak is the
            # dense result plus one batch, not the whole Arrow table plus its conversion.
            out = np.full((n_rows, plan.weeks, plan.k), -1, dtype=np.int16)
            uids = np.empty(n_rows, dtype=np.int64)
            row = 0
            for batch in pf.iter_batches(batch_size=READ_BATCH, columns=plan.columns):
                chunk = _convert(file, [batch.column(i) for i in range(batch.num_columns)],
                                 plan, plan.k, strict, row)
                out[row:row + chunk.n_users] = chunk.sets
                uids[row:row + chunk.n_users] = chunk.user_ids
                row += chunk.n_users
            if strict:  # chunks checked their own ids; repeats across chunks are checked here
                check_unique_users(uids, file=file, row_base=0)
            return TopicSets(out, plan.taxonomy, uids, dict(plan.metadata))
        table = pf.read(columns=plan.columns)
        cols = [table.column(c).combine_chunks() if table.num_rows else
                pa.array([], type=table.schema.field(c).type) for c in plan.columns]
        cols = [c if isinstance(c, pa.Array) else pa.concat_arrays(c.chunks) for c in cols]
        return _convert(file, cols, plan, plan.k, strict, 0)


def iter_sets_parquet(path: PathLike, batch_size: int = ROW_GROUP, *,
                      taxonomy: Taxonomy | str | None = None, k: int | None = None,
                      strict: bool = True) -> Iterator[TopicSets]:
    """Yield ``TopicSets`` chunks of at most ``batch_size`` users (out-of-core reading).

    Every chunk has the same k: ``k`` if given, else the file's metadata, else 5 (a chunk
    cannot see the widest week of the whole file). Duplicate user ids are checked within a
    chunk only.
    """
    # batch_size 0 was "not a valid Parquet file (batch_size must be greater than zero)"
    batch_size = integer(batch_size, "batch_size", at_least=1, at_most=MAX_COUNT)
    file = check_exists(path)
    with wrap_errors(file, "Parquet"):
        pf = pq.ParquetFile(file, pre_buffer=False)  # (one row group at a time, as above)
        plan = _Plan(file, pf.schema_arrow, taxonomy, k, None)
        k_use = plan.k if plan.k is not None else DEFAULT_K
        row_base = 0
        for batch in pf.iter_batches(batch_size=batch_size, columns=plan.columns):
            cols = [batch.column(i) for i in range(batch.num_columns)]
            chunk = _convert(file, cols, plan, k_use, strict, row_base)
            row_base += batch.num_rows
            yield chunk
