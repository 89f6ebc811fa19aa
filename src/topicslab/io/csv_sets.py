"""Per-user weekly topic lists as CSV or TSV.

Public functions:
    write_sets_csv(path, sets, *, delimiter=None)
    read_sets_csv(path, *, taxonomy=None, k=None, weeks=None, strict=True, delimiter=None)
        -> TopicSets
    delimiter_for(path, delimiter=None) -> str

Layout: header ``user_id,epoch_0_topics,epoch_1_topics,...``; each cell a ``;``-separated list
of taxonomy ids, an empty cell for an empty week. The delimiter is a tab for ``.tsv`` (also
``.tsv.gz``), else a comma, unless given. CSV carries no metadata: the taxonomy is detected
from the ids (``topicslab.io.detect``) and k defaults to the widest week (pass both to
round-trip a population with short weeks).

Parsing is columnar (pyarrow.csv, then Arrow string kernels); the standard library ``csv``
module runs only after a parse failure, to find the offending row.
"""

from __future__ import annotations

import csv
import gzip
import os
import re
from typing import IO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from topicslab._atomic import atomic_path
from topicslab._json import wide_text, wide_text_advice
from topicslab.datamodel import TopicSets
from topicslab.errors import InputError
from topicslab.io._common import (
    DEFAULT_K,
    ListError,
    PathLike,
    check_exists,
    check_k,
    check_sets_to_write,
    check_strict,
    check_unique_users,
    distinct_width,
    lists_to_dense,
    parse_int_strings,
    sets_column,
    week_columns,
    week_list_arrays,
    wrap_errors,
)
from topicslab.io.detect import taxonomy_for
from topicslab.taxonomy import Taxonomy

__all__ = ["delimiter_for", "read_sets_csv", "write_sets_csv"]


def delimiter_for(path: PathLike, delimiter: str | None = None) -> str:
    """The delimiter to use: ``delimiter`` if given, a tab for ``*.tsv[.gz]``, else a comma."""
    if delimiter is not None:
        # (a number was "TypeError: object of type 'int' has no len()", a list an
        # AttributeError in the writer, and a digit or ';' pyarrow's "CSV values may not
        # contain structural characters": the cells hold digits and ';')
        if not isinstance(delimiter, str) or len(delimiter) != 1:
            raise InputError(f"delimiter must be one character, got {delimiter!r}",
                             field="delimiter")
        if delimiter.isdigit() or delimiter in ';"\r\n-':
            raise InputError(f"delimiter {delimiter!r} would occur in the cells (topic ids, "
                             "user ids and the ';' between a week's topics); choose another, "
                             "such as ',' or a tab", field="delimiter")
        return delimiter
    name = os.fspath(path).lower().removesuffix(".gz")
    return "\t" if name.endswith((".tsv", ".tab")) else ","


def _open_text(file: str) -> IO[str]:
    if file.lower().endswith(".gz"):
        return gzip.open(file, "rt", encoding="utf-8-sig", newline="")
    return open(file, encoding="utf-8-sig", newline="")


#: the longest header line read: a file whose first line is longer (a binary file or a
#: file of NUL bytes named .csv) was read whole into memory, then failed with "field larger
#: than field limit", exit code 1 and no file named
MAX_HEADER_CHARS = 1 << 20


def _refuse_unnamed_gzip(file: str) -> None:
    """A gzip-compressed table whose name lacks ``.gz`` was "not a valid CSV file ('utf-8'
    codec can't decode byte 0x8b in position 1)"; a table of UTF-16 text (Excel's "Unicode
    Text") the same of byte 0xff, or "the first line holds NUL bytes" without its mark."""
    if file.lower().endswith(".gz"):
        return
    with wrap_errors(file, "CSV"), open(file, "rb") as fh:
        magic = fh.read(4)
    if magic[:2] == b"\x1f\x8b":
        raise InputError("is gzip-compressed, but its name does not end in .gz: add .gz to "
                         "the name (p.csv.gz) or decompress it (gunzip)", file=file)
    if (wide := wide_text(magic)) is not None:
        raise InputError(wide_text_advice(wide), file=file)


def read_header(file: str, delimiter: str) -> list[str]:
    """Column names from the first line (an empty or blank first line is an error)."""
    _refuse_unnamed_gzip(file)
    with wrap_errors(file, "CSV"), _open_text(file) as fh:
        line = fh.readline(MAX_HEADER_CHARS + 1)
        rest = fh.readline(MAX_HEADER_CHARS + 1) if not line.strip() else ""
    if len(line) > MAX_HEADER_CHARS or "\0" in line:
        what = "is longer than 1 MiB" if len(line) > MAX_HEADER_CHARS else "holds NUL bytes"
        raise InputError(f"the first line {what}: it is no header of column names (is this "
                         "a text table?)", file=file)
    if not line.strip():
        if rest.strip():
            raise InputError("the first line is blank; the header (user_id, epoch_0_topics, "
                             "...) must be the first line: remove the blank line", file=file)
        raise InputError("empty file (no header line)", file=file)
    if re.fullmatch(r"sep=.", line.strip(), flags=re.IGNORECASE):
        # Excel's separator hint: the header was read as one column "sep=," ("missing
        # column")
        raise InputError(f"the first line {line.strip()!r} is a spreadsheet's separator hint, "
                         "not the header of column names; remove that line", file=file)
    try:
        return [c.strip() for c in next(csv.reader([line], delimiter=delimiter))]
    except csv.Error as exc:
        raise InputError(f"unreadable header ({exc})", file=file) from None


def check_named(names: list[str], file: str) -> None:
    """Refuse a header cell with no name: a spreadsheet's trailing empty column (a comma at
    the end of every line) or pandas' unnamed index (``df.to_csv()`` without
    ``index=False``). It was "field '': unknown column", "field '': duplicate column", or,
    for a long or profile table no longer recognised, "no week column ... epoch_0_topics"."""
    blank = next((i for i, n in enumerate(names) if not n), None)
    if blank is None:
        return
    where = ("the last column" if blank == len(names) - 1 else
             "the first column" if blank == 0 else f"column {blank + 1}")
    why = (" (a comma at the end of each line, as spreadsheets export empty columns)"
           if blank == len(names) - 1 else " (an index pandas wrote: to_csv(index=False) "
           "leaves it out)" if blank == 0 else "")
    raise InputError(f"{where} has no name in the header{why}; remove that column",
                     file=file, field=f"column {blank + 1}")


def locate_parse_error(file: str, delimiter: str, ncols: int, arrow_message: str) -> InputError:
    """Find the first ragged row with the ``csv`` module (data rows are 1-based)."""
    try:
        with _open_text(file) as fh:
            reader = csv.reader(fh, delimiter=delimiter, strict=True)
            next(reader, None)
            row = 0
            for rec in reader:
                if not rec:
                    continue  # pyarrow skips blank lines too
                row += 1
                if len(rec) != ncols:
                    return InputError(f"expected {ncols} fields, got {len(rec)}", file=file,
                                      row=row)
    except (csv.Error, UnicodeDecodeError, OSError) as exc:
        return InputError(f"unreadable ({exc})", file=file, row=row + 1)
    first = arrow_message.strip().splitlines()[0] if arrow_message.strip() else "parse error"
    return InputError(f"cannot parse ({first})", file=file)


def text_stream(file: str) -> pa.NativeFile:
    """``file`` opened for pyarrow's CSV reader, gunzipped where its name ends in ``.gz`` in
    any case, as ``_open_text`` reads the header: given a name, the reader picks a codec by
    the exact suffix, so ``p.csv.GZ`` had its header read and its gzip bytes parsed as text
    ("Expected 5 columns, got 2: <binary>"), and ``format='csv'`` on ``p.csv.bz2`` the
    reverse."""
    return pa.input_stream(file, compression="gzip" if file.lower().endswith(".gz") else None)


def read_text_table(file: str, delimiter: str, names: list[str]) -> pa.Table:
    """All columns as strings; ragged or undecodable rows become a located ``InputError``."""
    try:
        with text_stream(file) as source:
            return pacsv.read_csv(
                source,
                read_options=pacsv.ReadOptions(column_names=names, skip_rows=1),
                parse_options=pacsv.ParseOptions(delimiter=delimiter),
                convert_options=pacsv.ConvertOptions(
                    column_types={n: pa.string() for n in names}, strings_can_be_null=False),
            )
    except pa.ArrowException as exc:
        if _header_only(file):
            # a header with no line break after it (echo -n, or a program writing no row)
            # was pyarrow's "cannot parse (Could not skip initial 1 rows from CSV file, either
            # file is too short or header is larger than block size)", where the same header
            # with its line break is a table of no rows, refused (or taken) as such
            return pa.table({n: pa.array([], pa.string()) for n in names})
        raise locate_parse_error(file, delimiter, len(names), str(exc)) from None


def _header_only(file: str) -> bool:
    """Whether ``file`` holds its header line and nothing else (blank lines aside)."""
    try:
        with _open_text(file) as fh:
            fh.readline(MAX_HEADER_CHARS + 1)
            return not fh.read(1 << 16).strip()
    except (OSError, UnicodeDecodeError, EOFError):
        return False


def read_sets_csv(path: PathLike, *, taxonomy: Taxonomy | str | None = None,
                  k: int | None = None, weeks: int | None = None, strict: bool = True,
                  delimiter: str | None = None) -> TopicSets:
    """Read per-user weekly topic lists.

    ``strict`` makes a topic repeated within a cell, or a repeated user id, an error; with
    ``strict=False`` repeated topics are merged. Rows in errors are 1-based data rows (the
    header is not counted).
    """
    k, strict = check_k(k, taxonomy), check_strict(strict)  # (as read_sets checks them)
    file = check_exists(path)
    delim = delimiter_for(file, delimiter)
    names = read_header(file, delim)
    check_named(names, file)
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise InputError("duplicate column", file=file, field=dup)
    if "user_id" not in names:
        other = next((d for d in ("\t", ",", ";") if d != delim and len(names) == 1
                      and d in names[0]), None)
        if other is not None:
            # no extension names ';' ("name the file .csv" was said of a .csv file)
            named = "tsv" if other == chr(9) else "csv"
            fix = ("separate the columns with ',' (or tabs, in a .tsv file)" if other == ";"
                   else f"read it as {named} (format='{named}', convert --from {named})"
                   if delimiter is not None and delimiter != delimiter_for(file)
                   else f"name the file .{named} (or separate the columns as its extension "
                   "says)")
            raise InputError(f"missing column: the header is separated by {other!r}, not "
                             f"{delim!r}; {fix}", file=file, field="user_id")
        raise InputError("missing column", file=file, field="user_id")
    n_weeks = week_columns(names, "epoch_{w}_topics", file=file)
    known = {"user_id", *(sets_column(w) for w in range(n_weeks))}
    unknown = next((n for n in names if n not in known), None)
    if unknown is not None:
        # a misspelt week column (epoch_3_topic) would otherwise drop a week without a word
        raise InputError("unknown column: a topic-set table has user_id and epoch_0_topics, "
                         "epoch_1_topics, ... only; remove or rename it", file=file,
                         field=unknown)
    if weeks is not None and weeks != n_weeks:
        raise InputError(f"file has {n_weeks} weeks, expected {weeks}", file=file)
    table = read_text_table(file, delim, names)
    with wrap_errors(file, "CSV"):
        def row_of(i: int) -> int:
            return i + 1

        user_ids, _ = parse_int_strings(table.column("user_id").combine_chunks(), file=file,
                                        field="user_id", row_of=row_of)
        if strict:
            check_unique_users(user_ids, file=file)
        n = user_ids.shape[0]
        parts = []
        for w in range(n_weeks):
            field = sets_column(w)
            cells = pc.utf8_trim_whitespace(table.column(field).combine_chunks())
            empty = np.asarray(pc.equal(cells, "").to_numpy(zero_copy_only=False), dtype=bool)
            split = pc.split_pattern(cells, ";")
            lengths = np.asarray(pc.list_value_length(split).to_numpy(), dtype=np.int64)
            # an empty cell splits to [""]: keep it as a row with no values
            keep = np.repeat(~empty, lengths)
            lengths = np.where(empty, 0, lengths)
            offsets = np.zeros(n + 1, dtype=np.int64)
            np.cumsum(lengths, out=offsets[1:])
            tokens = split.flatten().filter(pa.array(keep))

            def token_row(j: int, offsets: np.ndarray = offsets) -> int:
                return int(np.searchsorted(offsets, j, side="right"))

            values, _ = parse_int_strings(tokens, file=file, field=field, row_of=token_row)
            parts.append((offsets, values))
        every = np.concatenate([np.zeros(0, np.int64)] + [v for _, v in parts])
        tax = taxonomy_for(taxonomy, None, every, file=file)
        if k is None:
            k = max((int(np.diff(o).max()) if strict else distinct_width(o, v)
                     for o, v in parts if n), default=0) or DEFAULT_K
        out = np.full((n, n_weeks, k), -1, dtype=np.int16)
        for w, (offsets, values) in enumerate(parts):
            try:
                out[:, w, :] = lists_to_dense(offsets, values, k, tax, dedupe=not strict)
            except ListError as err:
                raise InputError(err.message, file=file, row=err.list_index + 1,
                                 field=sets_column(w)) from None
        return TopicSets(out, tax, user_ids, {})


def write_sets_csv(path: PathLike, sets: TopicSets, *, delimiter: str | None = None) -> None:
    """Write ``sets`` as CSV/TSV (atomic). Cells list taxonomy ids ascending by dense index,
    which is ascending by id."""
    check_sets_to_write(path, sets, "write_sets_csv")
    delim = delimiter_for(path, delimiter)
    cols: list[pa.Array] = [pa.array(sets.user_ids, type=pa.int64())]
    names = ["user_id"]
    for w, lists in enumerate(week_list_arrays(sets.sets, sets.taxonomy)):
        as_text = pc.cast(lists, pa.list_(pa.string()))
        cols.append(pc.binary_join(as_text, ";"))
        names.append(sets_column(w))
    table = pa.Table.from_arrays(cols, names=names)
    write_text_table(path, table, delim)


def write_text_table(path: PathLike, table: pa.Table, delimiter: str) -> None:
    """Write ``table`` as delimited text with a plain (unquoted) header; atomic; ``.gz``
    compresses. Cells must not contain the delimiter or quotes (ours are digits and ``;``)."""
    # pyarrow quotes header names; write our own header so files look like hand-made ones
    header = (delimiter.join(table.column_names) + "\n").encode("utf-8")
    opts = pacsv.WriteOptions(include_header=False, delimiter=delimiter, quoting_style="none")
    with atomic_path(path) as tmp:
        if os.fspath(path).lower().endswith(".gz"):
            out: pa.NativeFile = pa.CompressedOutputStream(str(tmp), "gzip")
        else:
            out = pa.OSFile(str(tmp), "wb")
        with out:
            out.write(header)
            if table.num_rows:
                pacsv.write_csv(table, out, write_options=opts)
