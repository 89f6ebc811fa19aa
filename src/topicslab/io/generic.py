"""Format-agnostic entry points that dispatch on the file name (or ``format=``).

Public functions:
    read_sets(path, *, taxonomy=None, format=None, k=None, weeks=None, strict=True)
        -> TopicSets
    write_sets(path, sets, *, format=None, **options)
    iter_sets(path, batch_size=1_048_576, *, taxonomy=None, format=None, k=None, strict=True)
        -> Iterator[TopicSets]
    read_traces(path, *, taxonomy=None, format=None, strict=True) -> SiteTraces
    write_traces(path, traces, *, format=None)
    detect_format(path) -> str

Formats: ``"parquet"`` (``.parquet``/``.pq``), ``"csv"`` (``.csv``), ``"tsv"`` (``.tsv``),
``"tfrecord"`` (a name containing ``.tfrecord``, a directory of shards, or a glob), and
``"long"`` (user-week-topic rows; its container follows the suffix). Reading a ``.csv``,
``.tsv`` or ``.parquet`` whose columns are exactly ``user_id, week, topic_id`` picks
``"long"`` by itself. All writes are atomic.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from topicslab.datamodel import SiteTraces, TopicSets
from topicslab.errors import InputError
from topicslab.io._common import PathLike
from topicslab.io.csv_sets import read_sets_csv, write_sets_csv
from topicslab.io.long import is_long_table, read_sets_long, write_sets_long
from topicslab.io.parquet_sets import iter_sets_parquet, read_sets_parquet, write_sets_parquet
from topicslab.io.parquet_traces import read_traces_parquet, write_traces_parquet
from topicslab.io.tfrecord import iter_sets_tfrecord, read_sets_tfrecord, write_sets_tfrecord
from topicslab.taxonomy import Taxonomy

__all__ = ["detect_format", "iter_sets", "read_sets", "read_traces", "write_sets",
           "write_traces"]

FORMATS = ("parquet", "csv", "tsv", "tfrecord", "long")


def detect_format(path: PathLike) -> str:
    """The format implied by the name: parquet, csv, tsv or tfrecord."""
    name = os.fspath(path)
    low = os.path.basename(name).lower().removesuffix(".gz")
    if ".tfrecord" in low or os.path.isdir(name):
        return "tfrecord"
    if any(ch in name for ch in "*?["):
        return "tfrecord"  # shard globs are the only multi-file input
    if low.endswith((".parquet", ".pq")):
        return "parquet"
    if low.endswith((".tsv", ".tab")):
        return "tsv"
    if low.endswith((".csv", ".txt")):
        return "csv"
    raise InputError("cannot tell the format from the name; pass format= (one of "
                     f"{', '.join(FORMATS)})", file=name)


def _format(path: PathLike, fmt: str | None) -> str:
    if fmt is None:
        return detect_format(path)
    if fmt not in FORMATS:
        raise InputError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}",
                         file=os.fspath(path))
    return fmt


def read_sets(path: PathLike, *, taxonomy: Taxonomy | str | None = None,
              format: str | None = None, k: int | None = None, weeks: int | None = None,
              strict: bool = True) -> TopicSets:
    """Read topic-set sequences from any supported format (see the module docstring)."""
    fmt = _format(path, format)
    if fmt in ("csv", "tsv", "parquet") and format is None and is_long_table(path):
        fmt = "long"
    opts: dict[str, Any] = {"taxonomy": taxonomy, "k": k, "weeks": weeks, "strict": strict}
    if fmt == "parquet":
        return read_sets_parquet(path, **opts)
    if fmt in ("csv", "tsv"):
        return read_sets_csv(path, delimiter="\t" if fmt == "tsv" else None, **opts)
    if fmt == "tfrecord":
        return read_sets_tfrecord(path, **opts)
    return read_sets_long(path, **opts)


def write_sets(path: PathLike, sets: TopicSets, *, format: str | None = None,
               **options: Any) -> None:
    """Write topic-set sequences; ``options`` go to the format's writer (``delimiter`` for
    text, ``shards`` for TFRecord, ``row_group_size`` for Parquet)."""
    fmt = _format(path, format)
    if fmt == "parquet":
        write_sets_parquet(path, sets, **options)
    elif fmt in ("csv", "tsv"):
        options.setdefault("delimiter", "\t" if fmt == "tsv" else None)
        write_sets_csv(path, sets, **options)
    elif fmt == "tfrecord":
        write_sets_tfrecord(path, sets, **options)
    else:
        write_sets_long(path, sets, **options)


def iter_sets(path: PathLike, batch_size: int = 1 << 20, *,
              taxonomy: Taxonomy | str | None = None, format: str | None = None,
              k: int | None = None, strict: bool = True) -> Iterator[TopicSets]:
    """Yield ``TopicSets`` chunks of at most ``batch_size`` users.

    Parquet and TFRecord stream; text and long tables are read whole, then sliced.
    """
    fmt = _format(path, format)
    if fmt == "parquet" and not (format is None and is_long_table(path)):
        yield from iter_sets_parquet(path, batch_size, taxonomy=taxonomy, k=k, strict=strict)
        return
    if fmt == "tfrecord":
        yield from iter_sets_tfrecord(path, batch_size, taxonomy=taxonomy, k=k, strict=strict)
        return
    whole = read_sets(path, taxonomy=taxonomy, format=format, k=k, strict=strict)
    for start in range(0, whole.n_users, batch_size):
        yield whole.subset(slice(start, start + batch_size))


def read_traces(path: PathLike, *, taxonomy: Taxonomy | str | None = None,
                format: str | None = None, strict: bool = True) -> SiteTraces:
    """Read site traces (Parquet)."""
    fmt = _format(path, format)
    if fmt != "parquet":
        raise InputError(f"site traces are stored as Parquet, not {fmt}", file=os.fspath(path))
    return read_traces_parquet(path, taxonomy=taxonomy, strict=strict)


def write_traces(path: PathLike, traces: SiteTraces, *, format: str | None = None) -> None:
    """Write site traces (Parquet, atomic)."""
    fmt = _format(path, format)
    if fmt != "parquet":
        raise InputError(f"site traces are stored as Parquet, not {fmt}", file=os.fspath(path))
    write_traces_parquet(path, traces)
