"""Readers of browsing histories and of domain classifications (the inputs of ``ingest``).

Alvim et al.'s pipeline starts from weekly browsing histories whose domains are classified
into topics; the Topics API then keeps a week's top topics. These readers bring the two inputs
into arrays, checking them as the other readers do (one-line ``InputError`` naming file, row
and field; rows are 1-based data rows, the header of a text file is row 0).

Public names:
    read_domain_table(path, *, taxonomy="v2") -> DomainTable
        CSV/TSV ``domain, topics`` (a list in one cell: ``1;2``, ``"1,2"``, ``[1, 2]`` or
        ``1 2``) or ``domain, topic_id`` (one row per pair), or JSON (``{"domain": [ids]}`` or
        ``[{"domain": ..., "topics": [...]}]``) -- the shape of Chrome's override list and of
        researchers' classified-domain lists. An empty list means "classified, no topic".
    iter_visits(path, *, week_column=None, timestamp_column=None, batch_rows=...)
        -> Iterator[VisitBatch]      a visits log (Parquet, CSV or TSV), in batches
    visits_time_range(path, ...) -> (first, last) microseconds since the Unix epoch (UTC)
    registrable_domain(host) -> str  the registrable domain (eTLD+1), Public Suffix List
    sample_files() -> (visits, domains)   the small shipped example (docs/ingest.md)
    hosts_of(pages) -> pa.Array      the lower-case host of URLs or host names (vectorised)

A visits log has a user column (``user_id`` or ``user``, integers), a time column (``week``:
integer epoch indices, or ``timestamp``/``time``/``visit_time``: Parquet timestamps, ISO-8601
text, or integer Unix seconds) and a page column (``url``, ``host`` or ``domain``).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from topicslab._checks import MAX_COUNT, integer, is_collection
from topicslab._json import (
    DuplicateKeyError,
    IntegerTooLargeError,
    bounded_int,
    loads,
    read_document,
    unique_keys,
)
from topicslab.errors import InputError
from topicslab.io._common import (
    PathLike,
    check_exists,
    integer_values,
    parse_int_strings,
    wrap_errors,
)
from topicslab.io.csv_sets import delimiter_for, read_header, read_text_table
from topicslab.taxonomy import Taxonomy, resolve

__all__ = [
    "DomainTable",
    "VisitBatch",
    "VisitColumns",
    "hosts_of",
    "iter_visits",
    "read_domain_table",
    "registrable_domain",
    "sample_files",
    "visit_columns",
    "visits_time_range",
]

USER_COLUMNS = ("user_id", "user")
WEEK_COLUMNS = ("week",)
TIME_COLUMNS = ("timestamp", "time", "visit_time")
PAGE_COLUMNS = ("url", "host", "domain")
DOMAIN_COLUMNS = ("domain", "host", "site")
TOPICS_COLUMNS = ("topics", "topic_ids")
TOPIC_COLUMNS = ("topic_id", "topic")

#: rows per batch of a visits log (a Parquet file is read this many rows at a time)
BATCH_ROWS = 1 << 21
_US_PER_S = 1_000_000
#: the visit times a report can show (Python's datetime: 0001-01-01 .. 9999-12-31 UTC), in
#: Unix seconds
_FIRST_S, _LAST_S = -62_135_596_800, 253_402_300_799

# scheme://user@HOST:port/path -> HOST (IPv6 literals keep their brackets)
# the host must end where a port, path, query, fragment or the text does: "http://a b.com/" and
# "http://[::1/" have none (they were read as the hosts "a" and "[")
# nor a control character ("https://exa\x1b[2Jmple.com/" was the domain "exa\x1b[2jmple.com",
# its escape sequence printed to the terminal by the summary)
_HOST_RE = (r"^\s*(?:[A-Za-z][A-Za-z0-9+.\-]*://)?(?:[^@/?#]*@)?"
            r"(?P<host>\[[^\]/\x00-\x1f\x7f-\x9f]*\]|[^:/?#\s\x00-\x1f\x7f-\x9f]*)"
            r"(?::[0-9]+)?(?:[/?#]|\s*$)")
_ZONE_RE = r"(?:[Zz]|[+-][0-9]{2}:?[0-9]{2})$"
_IP_RE = re.compile(r"[0-9.]+")


def sample_files() -> tuple[Path, Path]:
    """The shipped example: a 402-visit log of 12 users over 3 weeks (invented sites) and a
    table of 19 domains (one with no topic); three domains of the log are not in it."""
    base = Path(str(resources.files("topicslab.io") / "data"))
    return base / "visits_sample.csv", base / "domains_sample.csv"


@functools.cache
def _psl() -> Any:
    from publicsuffixlist import PublicSuffixList  # ships the list: works offline

    return PublicSuffixList()


def registrable_domain(host: str) -> str:
    """The registrable domain (public suffix plus one label) of a lower-case host.

    ``www.bbc.co.uk`` -> ``bbc.co.uk``, ``user.github.io`` -> ``user.github.io`` (a private
    suffix of the Public Suffix List). A host that has none -- an IP address, ``localhost``, a
    bare suffix -- is its own domain, so it is still counted (and reported if unclassified).
    """
    h = host.strip().lower().rstrip(".")
    if not h or h.startswith("[") or _IP_RE.fullmatch(h):
        return h
    if "xn--" in h:  # (Chrome's history holds IDNs as punycode: xn--bcher-kva.de was
        # another domain than bücher.de of the table, its visits unclassified)
        h = ".".join(_unicode_label(part) for part in h.split("."))
    found = _psl().privatesuffix(h)
    return str(found) if found else h


def _unicode_label(label: str) -> str:
    """A punycode label (``xn--bcher-kva``) in Unicode (``bücher``); any other as it is."""
    if not label.startswith("xn--"):
        return label
    try:
        text = label[4:].encode("ascii").decode("punycode").lower()
    except (UnicodeError, ValueError):  # not valid punycode: a label of its own
        return label
    return text if text and text.isprintable() and "." not in text else label


def hosts_of(pages: pa.Array) -> pa.Array:
    """Lower-case hosts of URLs or host names (``https://WWW.X.com:8080/a`` -> ``www.x.com``),
    with a trailing dot removed; vectorised (Arrow). A page with no readable host (a space
    inside the host, an unclosed ``[``, a port that is not a number) gives ``""``."""
    hosts = pc.struct_field(pc.extract_regex(pages, _HOST_RE), [0]).fill_null("")
    hosts = pc.utf8_lower(hosts)
    return pc.utf8_rtrim(hosts, characters=".")


# ---------------------------------------------------------------------------------------------
# the domain -> topics table


@dataclass(frozen=True)
class DomainTable:
    """Topics of registrable domains.

    Attributes:
        domains: the registrable domains, in file order.
        indptr: ``int64[n+1]``: the topics of domain ``i`` are ``topics[indptr[i]:indptr[i+1]]``.
        topics: dense topic indices of ``taxonomy`` (distinct within a domain).
        taxonomy: the taxonomy of the topic ids.
        source: the file it was read from (for provenance).
    """

    domains: tuple[str, ...]
    indptr: npt.NDArray[np.int64]
    topics: npt.NDArray[np.int32]
    taxonomy: Taxonomy
    source: str = ""

    def __post_init__(self) -> None:
        # built directly (not read or from_mapping): an unsorted indptr gave domains the
        # wrong topics without a word, one past the topics or an index outside the taxonomy
        # failed deep in ingest_visits with NumPy's "out is the wrong size"
        indptr, topics = np.asarray(self.indptr), np.asarray(self.topics)
        n = len(self.domains)
        if (indptr.ndim != 1 or indptr.shape[0] != n + 1 or int(indptr[0]) != 0
                or bool((np.diff(indptr) < 0).any()) or int(indptr[-1]) != topics.shape[0]):
            raise InputError(f"indptr must rise from 0 to the {topics.shape[0]} topics in "
                             f"{n + 1} steps (one more than the domains), got "
                             f"{indptr.tolist()[:10]}", file=self.source or None,
                             field="indptr")
        if topics.size and (int(topics.min()) < 0 or int(topics.max()) >= self.taxonomy.size):
            raise InputError(f"topics are dense indices of taxonomy {self.taxonomy.version} "
                             f"(0..{self.taxonomy.size - 1}), got {int(topics.max())} "
                             f"or {int(topics.min())}", file=self.source or None,
                             field="topics")

    @functools.cached_property
    def index(self) -> dict[str, int]:
        return {d: i for i, d in enumerate(self.domains)}

    def __len__(self) -> int:
        return len(self.domains)

    @classmethod
    def from_mapping(cls, mapping: dict[str, list[int]], *,
                     taxonomy: Taxonomy | str = "v2") -> DomainTable:
        """Build from ``{domain: [topic ids]}`` (domains reduced to registrable domains)."""
        rows: list[tuple[str, list[int]]] = []
        if not isinstance(mapping, Mapping):  # (a list or None was an AttributeError)
            raise InputError(f"mapping must be a dict of domain -> topic ids, got "
                             f"{type(mapping).__name__}", field="mapping")
        for d, ts in mapping.items():  # int() read 1.7 as topic 1 and "1;2" as ValueError
            # (a 0-d array was "iteration over a 0-d array")
            if not isinstance(ts, (list, tuple, np.ndarray)) or not is_collection(ts):
                raise InputError(f"expected a list of topic ids, got {ts!r}"[:120],
                                 file="<mapping>", field=str(d))
            rows.append((str(d), [integer(t, "topics") for t in ts]))
        return _build(rows, resolve(taxonomy), file="<mapping>", rows_of=None)


def _build(rows: list[tuple[str, list[int]]], tax: Taxonomy, *, file: str,
           rows_of: list[int] | None, fields: tuple[str, str] = ("domain", "topics"),
           ) -> DomainTable:
    """Check and index ``(domain, topic ids)`` rows; ``rows_of[i]`` is row i's file row."""
    lengths = np.fromiter((len(ids) for _, ids in rows), dtype=np.int64, count=len(rows))
    flat = np.fromiter((t for _, ids in rows for t in ids), dtype=np.int64,
                       count=int(lengths.sum()))
    offsets = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return _build_arrays([d for d, _ in rows], offsets, flat, tax, file=file, rows_of=rows_of,
                         fields=fields)


#: (and control characters: "news\x1b[31m.com" was a domain, its escape sequence printed)
_BAD_DOMAIN_CHARS = re.compile(r"[/:@\s\x00-\x1f\x7f-\x9f]")


def _build_arrays(names: list[str], offsets: npt.NDArray[np.int64], flat: npt.NDArray[np.int64],
                  tax: Taxonomy, *, file: str, rows_of: list[int] | None,
                  fields: tuple[str, str] = ("domain", "topics")) -> DomainTable:
    """Check and index domains ``names[i]`` with topic ids ``flat[offsets[i]:offsets[i+1]]``.

    The topic checks are vectorised; the per-domain work is the registrable-domain reduction.
    """
    def where(i: int) -> int | None:
        return None if rows_of is None else rows_of[i]

    n = len(names)
    lengths = np.diff(offsets)
    row = np.repeat(np.arange(n, dtype=np.int64), lengths)
    known = tax.is_known(flat)
    if not known.all():
        bad = int(np.argmin(known))
        raise InputError(f"topic id {int(flat[bad])} is not in taxonomy {tax.version}",
                         file=file, row=where(int(row[bad])), field=fields[1])
    dense = tax.index(flat).astype(np.int64) if flat.size else np.zeros(0, np.int64)
    order = np.lexsort((dense, row))
    dense, row = dense[order], row[order]  # ascending topics within each row
    dup = (row[1:] == row[:-1]) & (dense[1:] == dense[:-1])
    if dup.any():
        i = int(row[1:][dup][0])
        topic = int(tax.ids[dense[1:][dup][0]])
        raise InputError(f"topic id {topic} appears twice for {names[i]!r}", file=file,
                         row=where(i), field=fields[1])
    index: dict[str, int] = {}
    keep: list[int] = []
    for i, raw in enumerate(names):
        host = raw.strip().lower().rstrip(".")
        if "://" in host:
            host = hosts_of(pa.array([host]))[0].as_py() or ""
        if not host or _BAD_DOMAIN_CHARS.search(host):
            raise InputError(f"not a domain name: {raw!r}", file=file, row=where(i),
                             field=fields[0])
        dom = registrable_domain(host)
        seen = index.get(dom)
        if seen is None:
            index[dom] = i
            keep.append(i)
            continue
        mine = dense[offsets[i]:offsets[i + 1]]
        theirs = dense[offsets[seen]:offsets[seen + 1]]
        if not np.array_equal(mine, theirs):
            also = f" (row {where(seen)})" if rows_of is not None else ""
            raise InputError(f"{raw!r} reduces to the registrable domain {dom!r}, which an "
                             f"earlier entry{also} gives other topics; list each registrable "
                             "domain once", file=file, row=where(i), field=fields[0])
    kept = np.asarray(keep, dtype=np.int64)
    out_len = lengths[kept]
    indptr = np.zeros(kept.shape[0] + 1, dtype=np.int64)
    np.cumsum(out_len, out=indptr[1:])
    take = np.repeat(offsets[:-1][kept] - indptr[:-1], out_len) + np.arange(int(indptr[-1]))
    reduced = tuple(index)  # insertion order: the order of ``keep``
    return DomainTable(reduced, indptr, dense[take].astype(np.int32), tax, file)


def _topic_cells(cells: pa.Array, *, file: str, field: str,
                 ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """``(offsets, ids)`` of text cells listing topic ids (``1;2``, ``1,2``, ``[1, 2]``,
    ``1 2``; empty: none), vectorised; a bad token is an error naming its 1-based row."""
    text = pc.utf8_trim_whitespace(cells.fill_null("") if cells.null_count else cells)
    text = pc.utf8_trim_whitespace(pc.replace_substring_regex(text, r"^\[|\]$", ""))
    parts = pc.split_pattern_regex(text, r"[;,|\s]+")
    tokens = parts.flatten()
    n = len(cells)
    per_cell = np.asarray(pc.list_value_length(parts).to_numpy(), dtype=np.int64)
    owner = np.repeat(np.arange(n, dtype=np.int64), per_cell)
    present = np.asarray(pc.not_equal(tokens, "").to_numpy(zero_copy_only=False), dtype=bool)
    tokens = tokens.filter(pa.array(present))
    owner = owner[present]
    ok = np.asarray(pc.match_substring_regex(tokens, r"^[+-]?[0-9]{1,18}$")
                    .to_numpy(zero_copy_only=False), dtype=bool)
    if not ok.all():
        i = int(owner[int(np.argmin(ok))])
        raise InputError(f"expected topic ids (integers separated by ';'), got "
                         f"{cells[i].as_py()!r}", file=file, row=i + 1, field=field)
    ids = np.asarray(pc.cast(pc.replace_substring_regex(tokens, r"^\+", ""), pa.int64())
                     .to_numpy(), dtype=np.int64)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(owner, minlength=n), out=offsets[1:])
    return offsets, ids


def _split_topic_cell(cell: str, *, file: str, row: int, field: str) -> list[int]:
    text = cell.strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    parts = [p for p in re.split(r"[;,|\s]+", text) if p]
    out = []
    for p in parts:
        if not re.fullmatch(r"[+-]?[0-9]+", p):
            raise InputError(f"expected topic ids (integers separated by ';'), got {cell!r}",
                             file=file, row=row, field=field)
        out.append(int(p))
    return out


def _pick(names: list[str], wanted: tuple[str, ...]) -> str | None:
    low = {n.lower(): n for n in names}
    return next((low[w] for w in wanted if w in low), None)


def _read_domain_csv(file: str, tax: Taxonomy) -> DomainTable:
    delim = delimiter_for(file)
    names = read_header(file, delim)
    dom_col = _pick(names, DOMAIN_COLUMNS)
    list_col = _pick(names, TOPICS_COLUMNS)
    pair_col = _pick(names, TOPIC_COLUMNS)
    if dom_col is None:
        raise InputError("missing column (a domain table has the columns domain, topics)",
                         file=file, field="domain")
    if list_col is None and pair_col is None:
        raise InputError("missing column (a domain table has the columns domain, topics; or "
                         "domain, topic_id with one row per pair)", file=file,
                         field="topics")
    table = read_text_table(file, delim, names)
    doms = table.column(dom_col).to_pylist()
    if list_col is not None:
        names = [d or "" for d in doms]
        offsets, flat = _topic_cells(table.column(list_col).combine_chunks(), file=file,
                                     field=list_col)
        return _build_arrays(names, offsets, flat, tax, file=file,
                             rows_of=list(range(1, len(names) + 1)), fields=(dom_col, list_col))
    assert pair_col is not None
    ids, present = parse_int_strings(table.column(pair_col).combine_chunks(), file=file,
                                     field=pair_col, row_of=lambda i: i + 1, allow_empty=True)
    grouped: dict[str, list[int]] = {}
    first: dict[str, int] = {}
    for i, d in enumerate(doms):
        key = (d or "").strip()
        if key not in grouped:
            grouped[key] = []
            first[key] = i + 1
        if present[i]:
            if int(ids[i]) in grouped[key]:
                raise InputError(f"topic id {int(ids[i])} appears twice for {key!r}",
                                 file=file, row=i + 1, field=pair_col)
            grouped[key].append(int(ids[i]))
    keys = list(grouped)
    return _build([(k, grouped[k]) for k in keys], tax, file=file,
                  rows_of=[first[k] for k in keys], fields=(dom_col, pair_col))


def _read_domain_json(file: str, tax: Taxonomy) -> DomainTable:
    with wrap_errors(file, "JSON"):
        try:
            data = loads(read_document(file), object_pairs_hook=unique_keys,
                         parse_int=bounded_int)
        except json.JSONDecodeError as exc:
            raise InputError(f"not valid JSON ({exc.msg} at line {exc.lineno}, column "
                             f"{exc.colno})", file=file) from None
        except DuplicateKeyError as exc:  # {"a.com": [1], "a.com": [9]} kept [9] silently
            raise InputError(f"{exc.key!r} is given twice in one object; give each domain "
                             "(and each key) once", file=file, field=exc.key) from None
        except IntegerTooLargeError as exc:  # not a topic id (OverflowError, exit code 1)
            raise InputError(f"not a domain table ({exc})", file=file) from None
    rows: list[tuple[str, list[int]]] = []

    def ids_of(value: Any, row: int, field: str) -> list[int]:
        if isinstance(value, str):
            return _split_topic_cell(value, file=file, row=row, field=field)
        if not isinstance(value, list) or not all(
                isinstance(v, int) and not isinstance(v, bool) for v in value):
            raise InputError(f"expected a list of topic ids, got {value!r}"[:120], file=file,
                             row=row, field=field)
        return list(value)

    if isinstance(data, dict):
        for i, (dom, value) in enumerate(data.items()):
            rows.append((dom, ids_of(value, i + 1, dom)))
        return _build(rows, tax, file=file, rows_of=list(range(1, len(rows) + 1)),
                      fields=("domain", "topics"))
    if not isinstance(data, list):
        raise InputError("a JSON domain table is an object {domain: [topic ids]} or a list of "
                         "{\"domain\": ..., \"topics\": [...]}", file=file)
    for i, entry in enumerate(data):
        if not isinstance(entry, dict):
            raise InputError("expected an object with domain and topics", file=file, row=i + 1)
        dom_key = next((k for k in DOMAIN_COLUMNS if k in entry), None)
        top_key = next((k for k in TOPICS_COLUMNS if k in entry), None)
        if dom_key is None or not isinstance(entry[dom_key], str):
            raise InputError("missing or non-text domain", file=file, row=i + 1, field="domain")
        if top_key is None:
            raise InputError("missing topics", file=file, row=i + 1, field="topics")
        rows.append((entry[dom_key], ids_of(entry[top_key], i + 1, top_key)))
    return _build(rows, tax, file=file, rows_of=list(range(1, len(rows) + 1)))


def read_domain_table(path: PathLike, *, taxonomy: Taxonomy | str = "v2") -> DomainTable:
    """Read a domain -> topics table (see the module docstring for the accepted shapes).

    Domains are reduced to registrable domains, as visits are; two entries reducing to the
    same domain must agree. Topic ids are checked against ``taxonomy``. Rows in errors are
    1-based data rows (CSV) or entries (JSON).
    """
    file = check_exists(path)
    tax = resolve(taxonomy)
    low = file.lower()
    if low.endswith(".json"):
        return _read_domain_json(file, tax)
    if low.endswith((".csv", ".tsv", ".txt", ".tab")):
        return _read_domain_csv(file, tax)
    raise InputError("cannot tell the format of a domain table from the name: use .csv, "
                     ".tsv or .json", file=file)


# ---------------------------------------------------------------------------------------------
# the visits log


@dataclass
class VisitBatch:
    """Consecutive rows of a visits log.

    Attributes:
        first_row: the 1-based row of ``user[0]`` in the file.
        user: ``int64[n]`` user ids.
        time: ``int64[n]``: week indices (``is_week``) or microseconds since the Unix epoch.
        is_week: which of the two ``time`` holds.
        pages: the page column (URLs or hosts), Arrow strings (possibly dictionary-encoded).
        page_field: the page column's name (for error messages).
    """

    first_row: int
    user: npt.NDArray[np.int64]
    time: npt.NDArray[np.int64]
    is_week: bool
    pages: pa.Array
    page_field: str


@dataclass(frozen=True)
class VisitColumns:
    """The columns of a visits log that ``iter_visits`` reads (``is_week``: the time column
    holds week indices rather than timestamps)."""

    user: str
    time: str
    is_week: bool
    page: str


def _is_parquet(file: str) -> bool:
    return file.lower().endswith((".parquet", ".pq"))


def _layout(file: str, names: list[str], week_column: str | None,
            timestamp_column: str | None) -> VisitColumns:
    row = None  # a header fault has no data row (as in every other reader)
    dup = next((n for i, n in enumerate(names) if n in names[:i]), None)
    if dup is not None:  # (a KeyError out of Arrow's select, exit code 1)
        raise InputError("duplicate column", file=file, field=dup)
    if week_column is not None and timestamp_column is not None:
        raise InputError("give a week column or a timestamp column, not both",
                         field="week_column")
    user = _pick(names, USER_COLUMNS)
    if user is None:
        raise InputError("missing column (a visits log has user_id, week or timestamp, url "
                         "or host)", file=file, row=row, field="user_id")
    for given, what in ((week_column, "week_column"), (timestamp_column, "timestamp_column")):
        if given is not None and given not in names:
            raise InputError(f"no column {given!r} (the columns are {', '.join(names)})",
                             file=file, field=what)
    if week_column is not None or timestamp_column is not None:
        time, is_week = ((week_column, True) if week_column is not None
                         else (timestamp_column or "", False))
        if time == user:
            # the ids were read as times as well (Unix seconds 1, 2, ...: every visit in
            # week 0), silently
            raise InputError(f"column {time!r} holds the user ids; name the column of the "
                             "visit times", file=file,
                             field="week_column" if is_week else "timestamp_column")
    else:
        week = _pick(names, WEEK_COLUMNS)
        ts = _pick(names, TIME_COLUMNS)
        if week is not None and ts is not None:
            raise InputError(f"both a week column ({week}) and a timestamp column ({ts}); "
                             "choose one with --week-column or --timestamp-column", file=file,
                             row=row, field=week)
        if week is None and ts is None:
            raise InputError("missing column: a week column (week) or a timestamp column "
                             "(timestamp, time or visit_time)", file=file, row=row,
                             field="timestamp")
        time, is_week = (week, True) if week is not None else (ts or "", False)
    page = _pick(names, PAGE_COLUMNS)
    if page is None:
        raise InputError("missing column: the visited page (url, host or domain)", file=file,
                         row=row, field="url")
    return VisitColumns(user, time, is_week, page)


def _parse_text_times(arr: pa.Array, *, file: str, field: str, first_row: int,
                      ) -> npt.NDArray[np.int64]:
    """ISO-8601 text (a zone suffix is honoured, none means UTC) or integer Unix seconds."""
    arr = pc.utf8_trim_whitespace(arr.fill_null("") if arr.null_count else arr)
    empty = np.asarray(pc.equal(arr, "").to_numpy(zero_copy_only=False), dtype=bool)
    if empty.any():
        raise InputError("missing value", file=file, row=first_row + int(np.argmax(empty)),
                         field=field)
    digits = np.asarray(pc.match_substring_regex(arr, r"^[+-]?[0-9]+$")
                        .to_numpy(zero_copy_only=False), dtype=bool)
    zoned = np.asarray(pc.match_substring_regex(arr, _ZONE_RE)
                       .to_numpy(zero_copy_only=False), dtype=bool) & ~digits
    out = np.zeros(len(arr), dtype=np.int64)
    for mask, kind in ((digits, "seconds"), (zoned, "UTC"), (~digits & ~zoned, None)):
        if not mask.any():
            continue
        part = arr.filter(pa.array(mask))
        if kind == "seconds":  # "+5": the pattern takes it, Arrow's cast does not
            part = pc.replace_substring_regex(part, r"^\+", "")
        try:
            if kind == "seconds":
                secs = np.asarray(pc.cast(part, pa.int64()).to_numpy(), dtype=np.int64)
                row_numbers: list[int] = (first_row + np.flatnonzero(mask)).tolist()
                out[mask] = _checked_us(secs, _US_PER_S, file=file, field=field,
                                        row_of=row_numbers.__getitem__)
            else:
                ts = pc.cast(part, pa.timestamp("us", tz=kind))
                us = np.asarray(ts.cast(pa.int64()).to_numpy(), dtype=np.int64)
                # (year 0000, or 0001-01-01T00:30+01:00, read as a time before the year 1
                # in UTC: the report's datetime then failed, "OverflowError: date value
                # out of range", exit code 1, after all the work)
                late = us > _LAST_S * _US_PER_S
                early = us < _FIRST_S * _US_PER_S
                if late.any() or early.any():
                    j = int(np.argmax(late | early))
                    when = "after the year 9999" if late[j] else "before the year 1"
                    raise InputError(f"the time {part[j].as_py()!r} lies {when} in UTC; "
                                     "give a time of the years 1..9999", file=file,
                                     row=first_row + int(np.flatnonzero(mask)[j]),
                                     field=field)
                out[mask] = us
        except (pa.ArrowInvalid, OverflowError):
            rows = np.flatnonzero(mask)
            for j, value in enumerate(part.to_pylist()):  # the error path: find the row
                try:
                    (pc.cast(pa.array([value]), pa.int64()) if kind == "seconds" else
                     pc.cast(pa.array([value]), pa.timestamp("us", tz=kind)))
                    if kind == "seconds" and abs(int(value)) > 2**62 // _US_PER_S:
                        raise pa.ArrowInvalid("out of range")
                except (pa.ArrowInvalid, OverflowError):
                    raise InputError(f"cannot read a time from {value!r}: use ISO 8601 "
                                     "(2024-01-01T12:00:00Z) or Unix seconds", file=file,
                                     row=first_row + int(rows[j]), field=field) from None
            raise
    return out


def _checked_us(values: npt.NDArray[np.int64], to_us: int, *, file: str, field: str,
                row_of: Callable[[int], int]) -> npt.NDArray[np.int64]:
    """Times (seconds for ``to_us`` = 10^6, microseconds for 1) as microseconds, refusing a
    time outside the years 1..9999: Unix times in milliseconds (1704103200000) passed for
    seconds were read as the year 55973 and failed only at the report ("OverflowError: date
    value out of range", exit code 1), and microseconds wrapped around int64 silently."""
    per_s = _US_PER_S // to_us
    bad = (values < _FIRST_S * per_s) | (values > _LAST_S * per_s)
    if bad.any():
        i = int(np.argmax(bad))
        late = bool(values[i] > _LAST_S * per_s)
        when = "after the year 9999" if late else "before the year 1"
        if to_us == _US_PER_S:
            fix = (": milliseconds or microseconds? give Unix seconds (divide by 1,000 or "
                   "1,000,000)") if late else "; give Unix seconds"
            raise InputError(f"{int(values[i])} is not a time in Unix seconds: it lies {when}"
                             f"{fix}", file=file, row=row_of(i), field=field)
        raise InputError(f"the visit time lies {when}; check the column's unit", file=file,
                         row=row_of(i), field=field)
    return values * to_us


def _times(arr: pa.Array, *, file: str, field: str, first_row: int, is_week: bool,
           ) -> npt.NDArray[np.int64]:
    def row_of(i: int) -> int:
        return first_row + i

    if is_week:
        if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
            if arr.null_count or (len(arr) and bool(pc.any(pc.equal(
                    pc.utf8_trim_whitespace(arr), "")).as_py())):
                filled = arr.fill_null("")
                i = int(np.argmax(np.asarray(pc.equal(pc.utf8_trim_whitespace(filled), "")
                                             .to_numpy(zero_copy_only=False), dtype=bool)))
                raise InputError("missing value", file=file, row=row_of(i), field=field)
            weeks, _ = parse_int_strings(arr, file=file, field=field, row_of=row_of)
        else:
            weeks = integer_values(arr, file=file, field=field, row_of=row_of)
        if weeks.size and weeks.min() < 0:
            i = int(np.argmax(weeks < 0))
            raise InputError(f"week {int(weeks[i])} is negative (weeks count from 0)",
                             file=file, row=row_of(i), field=field)
        return weeks
    t = arr.type
    if pa.types.is_timestamp(t) or pa.types.is_date(t):
        if arr.null_count:
            i = int(np.argmax(np.asarray(arr.is_null().to_numpy(zero_copy_only=False))))
            raise InputError("missing value", file=file, row=row_of(i), field=field)
        us = arr.cast(pa.timestamp("us", tz=t.tz if pa.types.is_timestamp(t) else None))
        return _checked_us(np.asarray(us.cast(pa.int64()).to_numpy(), dtype=np.int64), 1,
                           file=file, field=field, row_of=row_of)
    if pa.types.is_integer(t):
        secs = integer_values(arr, file=file, field=field, row_of=row_of)
        return _checked_us(secs, _US_PER_S, file=file, field=field, row_of=row_of)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return _parse_text_times(arr, file=file, field=field, first_row=first_row)
    raise InputError(f"expected timestamps, got column type {t}", file=file, row=first_row,
                     field=field)


def _as_text(arr: pa.Array, *, file: str, field: str, first_row: int) -> pa.Array:
    """A column of bytes as text: Impala and older Hive and Spark write strings as Parquet
    BINARY without the UTF-8 annotation, which Arrow reads as ``binary`` (the line was
    "expected text, got column type dictionary<values=binary, ...>", a type the file does
    not hold); bytes that are not UTF-8 are refused, naming the first such row."""
    values = arr.dictionary if pa.types.is_dictionary(arr.type) else arr
    if not (pa.types.is_binary(values.type) or pa.types.is_large_binary(values.type)):
        return arr
    try:
        text = pc.cast(values, pa.large_string() if pa.types.is_large_binary(values.type)
                       else pa.string())
    except pa.ArrowInvalid:
        plain = arr.dictionary_decode() if pa.types.is_dictionary(arr.type) else arr
        bad = next(i for i, v in enumerate(plain.to_pylist()) if v is not None and not
                   _is_utf8(v))
        raise InputError("holds bytes that are not UTF-8 text (URLs or hosts are text); "
                         "write the column as UTF-8 strings", file=file,
                         row=first_row + bad, field=field) from None
    if pa.types.is_dictionary(arr.type):
        return pa.DictionaryArray.from_arrays(arr.indices, text)
    return text


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _pages(arr: pa.Array, *, file: str, field: str, first_row: int) -> pa.Array:
    arr = _as_text(arr, file=file, field=field, first_row=first_row)
    value_type = arr.type.value_type if pa.types.is_dictionary(arr.type) else arr.type
    if not (pa.types.is_string(value_type) or pa.types.is_large_string(value_type)):
        # (a dictionary was named as the file's type: "dictionary<values=int64, ...>")
        raise InputError(f"expected text (URLs or hosts), got column type {value_type}",
                         file=file, row=first_row, field=field)
    if arr.null_count:
        i = int(np.argmax(np.asarray(arr.is_null().to_numpy(zero_copy_only=False))))
        raise InputError("missing value", file=file, row=first_row + i, field=field)
    # a quote opened and not closed in the page column of a CSV log reads the lines after it
    # into this value, and the host before the line break was taken: those visits were lost
    # without a word (no URL or host name holds a line break)
    values = arr.dictionary if pa.types.is_dictionary(arr.type) else arr
    if pc.any(pc.match_substring_regex(values, "[\r\n]")).as_py():
        plain = arr.dictionary_decode() if pa.types.is_dictionary(arr.type) else arr
        i = pc.index(pc.match_substring_regex(plain, "[\r\n]"), True).as_py()
        raise InputError("holds a line break, which no URL or host name has (in a CSV file: a "
                         "quote opened and not closed, which reads the next lines into this "
                         "value); close the quote", file=file, row=first_row + i, field=field)
    return arr


def _batch(table: pa.Table | pa.RecordBatch, lay: VisitColumns, file: str,
           first_row: int) -> VisitBatch:
    def col(name: str) -> pa.Array:
        c = table.column(name)
        if isinstance(c, pa.ChunkedArray):
            return c.combine_chunks() if c.num_chunks != 1 else c.chunk(0)
        return c

    u = col(lay.user)
    if pa.types.is_string(u.type) or pa.types.is_large_string(u.type):
        users, _ = parse_int_strings(u, file=file, field=lay.user,
                                     row_of=lambda i: first_row + i)
    else:
        users = integer_values(u, file=file, field=lay.user, row_of=lambda i: first_row + i)
    times = _times(col(lay.time), file=file, field=lay.time, first_row=first_row,
                   is_week=lay.is_week)
    pages = _pages(col(lay.page), file=file, field=lay.page, first_row=first_row)
    return VisitBatch(first_row, users, times, lay.is_week, pages, lay.page)


def _open(file: str, week_column: str | None, timestamp_column: str | None,
          ) -> tuple[VisitColumns, Any]:
    if _is_parquet(file):
        with wrap_errors(file, "Parquet"):
            pf = pq.ParquetFile(file)
            names = pf.schema_arrow.names
        return _layout(file, names, week_column, timestamp_column), pf
    if not file.lower().endswith((".csv", ".tsv", ".txt", ".tab")):
        raise InputError("cannot tell the format of a visits log from the name: use "
                         ".parquet, .csv or .tsv", file=file)
    names = read_header(file, delimiter_for(file))
    return _layout(file, names, week_column, timestamp_column), names


def iter_visits(path: PathLike, *, week_column: str | None = None,
                timestamp_column: str | None = None,
                batch_rows: int = BATCH_ROWS) -> Iterator[VisitBatch]:
    """Yield a visits log in batches of at most ``batch_rows`` rows, checked.

    Parquet is streamed; CSV/TSV is read whole (as text) and then cut, so large logs belong in
    Parquet. Each column is checked as it is converted: an error names the file, the 1-based
    row and the column.
    """
    # 0 was range()'s ValueError, a negative number no batches at all (an empty log)
    batch_rows = integer(batch_rows, "batch_rows", at_least=1, at_most=MAX_COUNT)
    file = check_exists(path)
    lay, handle = _open(file, week_column, timestamp_column)
    cols = list(dict.fromkeys([lay.user, lay.time, lay.page]))
    if isinstance(handle, pq.ParquetFile):
        row = 1
        with wrap_errors(file, "Parquet"):
            # read as a dictionary: hosts repeat, so each distinct page is resolved once (not
            # a nested column, which Arrow cannot: "not a valid Parquet file (b'url')", where
            # _pages names the column's type)
            nested = pa.types.is_nested(handle.schema_arrow.field(lay.page).type)
            pf = pq.ParquetFile(file, read_dictionary=None if nested else [lay.page])
            for rb in pf.iter_batches(batch_size=batch_rows, columns=cols):
                yield _batch(rb, lay, file, row)
                row += rb.num_rows
        return
    table = read_text_table(file, delimiter_for(file), handle)
    for start in range(0, max(table.num_rows, 1), batch_rows):
        part = table.slice(start, batch_rows)
        if part.num_rows:
            yield _batch(part.select(cols), lay, file, start + 1)


def visit_columns(path: PathLike, *, week_column: str | None = None,
                  timestamp_column: str | None = None) -> VisitColumns:
    """Which columns of the log hold the user, the time and the page (see the module
    docstring for the names looked for); a missing or ambiguous one is an ``InputError``."""
    return _open(check_exists(path), week_column, timestamp_column)[0]


def visits_time_range(path: PathLike, *, week_column: str | None = None,
                      timestamp_column: str | None = None) -> tuple[int, int] | None:
    """The first and last visit time (µs since the Unix epoch, UTC); None for a week column
    or an empty log. Parquet row-group statistics are used when every row group has them."""
    file = check_exists(path)
    lay, handle = _open(file, week_column, timestamp_column)
    if lay.is_week:
        return None
    if isinstance(handle, pq.ParquetFile):
        meta = handle.metadata
        i = handle.schema_arrow.get_field_index(lay.time)
        t = handle.schema_arrow.field(i).type
        leaf = [j for j in range(meta.num_columns)
                if meta.schema.column(j).path.split(".")[0] == lay.time]
        if pa.types.is_timestamp(t) and len(leaf) == 1 and meta.num_row_groups:
            lo: list[int] = []
            hi: list[int] = []
            for g in range(meta.num_row_groups):
                st = meta.row_group(g).column(leaf[0]).statistics
                if st is None or not st.has_min_max or st.null_count:
                    break
                try:
                    lo.append(st.min)
                    hi.append(st.max)
                except (OverflowError, ValueError):
                    break  # a time past datetime's years: the full read below names its row
            else:
                arr = pa.array([min(lo), max(hi)], type=t)
                us = arr.cast(pa.timestamp("us", tz=t.tz)).cast(pa.int64()).to_pylist()
                return int(us[0]), int(us[1])
    first: int | None = None
    last: int | None = None
    for b in iter_visits(file, week_column=week_column, timestamp_column=timestamp_column):
        if b.time.size:
            first = int(b.time.min()) if first is None else min(first, int(b.time.min()))
            last = int(b.time.max()) if last is None else max(last, int(b.time.max()))
    return None if first is None or last is None else (first, last)
