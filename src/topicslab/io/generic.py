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
``"tfrecord"`` (a name containing ``.tfrecord``, a directory of shards, or a glob),
``"long"`` (user-week-topic rows; its container follows the suffix) and ``"profiles"`` (one
row per user or user-week, topic columns ``t1..tk``: other tools' layout, see
``profiles``). Reading a ``.csv``, ``.tsv`` or ``.parquet`` whose columns are exactly
``user_id, week, topic_id`` picks ``"long"`` by itself, and one whose columns read as a
profile table picks ``"profiles"``. Files without metadata get their taxonomy from their ids
(``detect``) unless ``taxonomy`` is given. All writes are atomic.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from topicslab._checks import integer, is_integer, value_shown
from topicslab.datamodel import SiteTraces, TopicSets
from topicslab.errors import InputError, ParameterError
from topicslab.io._common import (
    RESOURCE_ERRORS,
    PathLike,
    check_batch_size,
    check_exists,
    check_k,
    check_sets_to_write,
    check_sets_type,
    check_strict,
    is_pattern,
)
from topicslab.io.csv_sets import read_sets_csv, write_sets_csv
from topicslab.io.long import is_long_table, read_sets_long, write_sets_long
from topicslab.io.parquet_sets import iter_sets_parquet, read_sets_parquet, write_sets_parquet
from topicslab.io.parquet_traces import read_traces_parquet, write_traces_parquet
from topicslab.io.profiles import is_profile_table, read_sets_profiles, write_sets_profiles
from topicslab.io.tfrecord import iter_sets_tfrecord, read_sets_tfrecord, write_sets_tfrecord
from topicslab.taxonomy import Taxonomy

__all__ = ["detect_format", "iter_sets", "read_sets", "read_traces", "write_sets",
           "write_traces"]

FORMATS = ("parquet", "csv", "tsv", "tfrecord", "long", "profiles")


def detect_format(path: PathLike) -> str:
    """The format implied by the name: parquet, csv, tsv or tfrecord."""
    from topicslab._paths import path_name

    name = path_name(path)
    low = os.path.basename(name).lower().removesuffix(".gz")
    if ".tfrecord" in low or os.path.isdir(name):
        return "tfrecord"
    if low.endswith((".parquet", ".pq")):
        return "parquet"
    if low.endswith((".tsv", ".tab")):
        return "tsv"
    if low.endswith((".csv", ".txt")):
        return "csv"
    if any(ch in name for ch in "*?["):
        return "tfrecord"  # shard globs are the only multi-file input
    if (why := _compressed(low)) is not None:
        raise InputError(why, file=name)
    raise InputError("cannot tell the format from the name: name the file with one of the "
                     "extensions .parquet, .pq, .csv, .txt, .tsv, .tab or .tfrecord (or, "
                     f"from Python, pass format= one of {', '.join(FORMATS)})", file=name)


#: suffixes of compressors other than gzip, with the command that undoes each
_COMPRESSORS = {".bz2": ("bzip2", "bunzip2 -k"), ".xz": ("xz", "unxz -k"),
                ".lzma": ("lzma", "unlzma -k"), ".zst": ("zstd", "unzstd"),
                ".zstd": ("zstd", "unzstd"), ".lz4": ("lz4", "unlz4"),
                ".br": ("brotli", "brotli -d"), ".zip": ("zip", "unzip"),
                ".7z": ("7-Zip", "7z x"), ".z": ("compress", "uncompress"),
                ".gzip": ("gzip", "")}


def _compressed(low: str) -> str | None:
    """What to say of a name such as ``p.csv.bz2``: a table compressed otherwise than with
    gzip, whose name told no format ("name the file with one of the extensions .parquet,
    ... .csv": renamed so, its compressed bytes would be read as text)."""
    suffix = os.path.splitext(low)[1]
    if suffix not in _COMPRESSORS or not os.path.splitext(low[:-len(suffix)])[1]:
        return None
    tool, undo = _COMPRESSORS[suffix]
    if suffix == ".gzip":
        return ("is named as gzip-compressed with the suffix .gzip; topicslab knows gzip by "
                "the suffix .gz: rename it (p.csv.gz, p.tsv.gz)")
    return (f"is compressed with {tool} ({suffix}), and topicslab reads and writes only "
            "gzip-compressed text tables (.csv.gz, .tsv.gz) besides plain files; decompress "
            f"it first ({undo} FILE), or compress the table with gzip (.csv.gz)")


def _format(path: PathLike, fmt: str | None, *, reading: bool = False) -> str:
    if fmt is None:
        fmt = detect_format(path)
    elif not isinstance(fmt, str) or fmt not in FORMATS:
        # (an array was NumPy's "truth value of an array is ambiguous", a list "unhashable")
        raise InputError(f"unknown format {value_shown(fmt)}; choose one of {', '.join(FORMATS)}",
                         file=os.fspath(path), field="format")
    name = os.fspath(path)
    if reading and fmt != "tfrecord" and is_pattern(name):
        # a pattern is a set of TFRecord shards only; 'p*.parquet' that matched files was read
        # as TFRecord ("length CRC mismatch"), and a file named 'pop[1].parquet' as a pattern
        import glob

        matches = len(glob.glob(name))
        if not matches:
            raise InputError("no such file", file=name)
        raise InputError(f"is a pattern (*, ? or [) matching {matches} file(s), but only "
                         "TFRecord shards are read as a set; give one file", file=name)
    return fmt


def read_sets(path: PathLike, *, taxonomy: Taxonomy | str | None = None,
              format: str | None = None, k: int | None = None, weeks: int | None = None,
              strict: bool = True) -> TopicSets:
    """Read topic-set sequences from any supported format (see the module docstring)."""
    k, strict = check_k(k, taxonomy), check_strict(strict)
    if weeks is not None:  # weeks="4" was compared with the file's 4: "has 4, expected 4"
        integer(weeks, "weeks", at_least=1, why="the weeks the file must hold")
    fmt = _format(path, format, reading=True)
    try:
        sets = _read_sets(path, fmt, format, taxonomy=taxonomy, k=k, weeks=weeks, strict=strict)
    except (OSError, EOFError) as exc:  # e.g. a truncated .gz: the file, not the program
        if isinstance(exc, FileNotFoundError) or (isinstance(exc, OSError)
                                                  and exc.errno in RESOURCE_ERRORS):
            raise  # (too many open files: the process's limit, not an incomplete file)
        why = " ".join(str(exc).split()) or type(exc).__name__
        raise InputError(f"cannot read the file ({why}); is it complete?",
                         file=os.fspath(path)) from None
    return _within_taxonomy(sets, k, path)


def _within_taxonomy(sets: TopicSets, k: int | None, path: PathLike) -> TopicSets:
    """``sets``, read with ``k`` no wider than their taxonomy: before it was read, only the
    largest taxonomy's size bounded ``k``, and sets of v1 (349 topics) widened to 400 were
    written with metadata every reader refuses."""
    if k is not None and k > sets.taxonomy.size:
        raise ParameterError(f"k must be an integer in 1..{sets.taxonomy.size} (the topics of "
                             f"taxonomy {sets.taxonomy.version}), got {k!r}", field="k",
                             file=os.fspath(path))
    return sets


def _check_write_options(path: PathLike, options: dict[str, Any]) -> None:
    """Refuse a location or an option the writer would fail on half-way (or silently)."""
    for name in ("shards", "row_group_size"):
        value = options.get(name)
        if value is not None and (not is_integer(value)
                                  or value < 1):
            raise ParameterError(f"{name} must be a positive integer, got {value_shown(value)}",
                                 field=name)
        if value is not None:
            options[name] = int(value)
    delimiter = options.get("delimiter")
    if delimiter is not None and (not isinstance(delimiter, str) or len(delimiter) != 1
                                  or delimiter in ';"\r\n' or delimiter.isalnum()):
        raise ParameterError("delimiter must be one character other than ';' (it separates "
                             f"the topics of a cell), a quote, a line break, a letter or a "
                             f"digit, got {delimiter!r}", field="delimiter")
    name = os.fspath(path)
    if os.path.isdir(name):
        raise InputError("is an existing directory; name a file", file=name)
    parent = os.path.dirname(os.path.abspath(name))
    if not os.path.isdir(parent):
        raise InputError(f"directory {parent} does not exist; create it first", file=name)


def _read_sets(path: PathLike, fmt: str, format: str | None, *,
               taxonomy: Taxonomy | str | None, k: int | None, weeks: int | None,
               strict: bool) -> TopicSets:
    fmt = _sniff(path, fmt, format)
    opts: dict[str, Any] = {"taxonomy": taxonomy, "k": k, "weeks": weeks, "strict": strict}
    if fmt == "parquet":
        return read_sets_parquet(path, **opts)
    if fmt in ("csv", "tsv"):
        # a format given reads its own separator (format="csv" of a .tsv file read tabs,
        # the option ignored without a word); named by the extension only otherwise
        delimiter = "\t" if fmt == "tsv" else "," if format == "csv" else None
        return read_sets_csv(path, delimiter=delimiter, **opts)
    if fmt == "tfrecord":
        return read_sets_tfrecord(path, **opts)
    if fmt == "profiles":
        return read_sets_profiles(path, **opts)
    return read_sets_long(path, **opts)


def _sniff(path: PathLike, fmt: str, format: str | None) -> str:
    """A table's layout when the caller named none: long, profiles, or the name's format."""
    if fmt in ("csv", "tsv", "parquet") and format is None:
        check_exists(path)  # before peeking at the header: a pipe would block the peek
        if is_long_table(path):
            return "long"
        if is_profile_table(path):
            return "profiles"
    return fmt


def write_sets(path: PathLike, sets: TopicSets, *, format: str | None = None,
               **options: Any) -> None:
    """Write topic-set sequences; ``options`` go to the format's writer (``delimiter`` for
    text, ``shards`` for TFRecord, ``row_group_size`` for Parquet)."""
    check_sets_type(sets, "write_sets")
    fmt = _format(path, format)
    _check_write_options(path, options)
    # (the TFRecord writer takes raw slots, as sample writes them: through write_sets, the
    # topics are checked for every format)
    check_sets_to_write(path, sets, "write_sets")
    shards = options.get("shards", 1)
    if fmt == "tfrecord" and shards > max(sets.n_users, 1):
        # as the commands: the empty shards were files every reader refuses ("empty file")
        raise ParameterError(f"shards must be in 1..{max(sets.n_users, 1)}, got {shards}: a "
                             "shard holds at least one user", field="shards")
    if fmt == "parquet":
        write_sets_parquet(path, sets, **options)
    elif fmt in ("csv", "tsv"):
        # as the reader: a format given writes its own separator, else the name's
        options.setdefault("delimiter",
                           "\t" if fmt == "tsv" else "," if format == "csv" else None)
        write_sets_csv(path, sets, **options)
    elif fmt == "tfrecord":
        write_sets_tfrecord(path, sets, **options)
    elif fmt == "profiles":
        write_sets_profiles(path, sets, **options)
    else:
        write_sets_long(path, sets, **options)


def iter_sets(path: PathLike, batch_size: int = 1 << 20, *,
              taxonomy: Taxonomy | str | None = None, format: str | None = None,
              k: int | None = None, strict: bool = True) -> Iterator[TopicSets]:
    """Yield ``TopicSets`` chunks of at most ``batch_size`` users.

    Parquet and TFRecord stream; text and long tables are read whole, then sliced.
    """
    k, strict = check_k(k, taxonomy), check_strict(strict)
    batch_size = check_batch_size(batch_size)
    fmt = _format(path, format, reading=True)
    if fmt == "parquet" and _sniff(path, fmt, format) == "parquet":
        for part in iter_sets_parquet(path, batch_size, taxonomy=taxonomy, k=k, strict=strict):
            yield _within_taxonomy(part, k, path)
        return
    if fmt == "tfrecord":
        for part in iter_sets_tfrecord(path, batch_size, taxonomy=taxonomy, k=k,
                                       strict=strict):
            yield _within_taxonomy(part, k, path)
        return
    whole = read_sets(path, taxonomy=taxonomy, format=format, k=k, strict=strict)
    for start in range(0, whole.n_users, batch_size):
        yield whole.subset(slice(start, start + batch_size))


def read_traces(path: PathLike, *, taxonomy: Taxonomy | str | None = None,
                format: str | None = None, strict: bool = True) -> SiteTraces:
    """Read site traces (Parquet)."""
    strict = check_strict(strict)
    from topicslab._paths import path_name

    name = path_name(path)
    if os.path.isdir(name):
        # (was "site traces are stored as Parquet, not tfrecord": a directory is read as
        # TFRecord shards only where topic sets are read)
        from pathlib import Path

        from topicslab._paths import OUTPUT_KINDS, _output_kinds

        kinds = _output_kinds(Path(name))
        what = (f"a directory holding {OUTPUT_KINDS[next(iter(kinds))]}" if kinds
                else "a directory")
        raise InputError(f"is {what}, not site traces: traces are one Parquet file (topicslab "
                         "observe writes them)", file=name)
    fmt = _format(path, format, reading=True)
    if fmt != "parquet":
        raise InputError(f"site traces are stored as Parquet, not {fmt}", file=name)
    return read_traces_parquet(path, taxonomy=taxonomy, strict=strict)


def write_traces(path: PathLike, traces: SiteTraces, *, format: str | None = None) -> None:
    """Write site traces (Parquet, atomic)."""
    if not isinstance(traces, SiteTraces):
        raise TypeError(f"write_traces takes SiteTraces, got {type(traces).__name__}")
    fmt = _format(path, format)
    if fmt != "parquet":
        raise InputError(f"site traces are stored as Parquet, not {fmt}", file=os.fspath(path))
    write_traces_parquet(path, traces)
