"""From browsing histories to weekly Topics API profiles (``topicslab ingest``).

Alvim et al. (their model of the Topics API) describe the browser's side of the mechanism:
the pages of a week's browsing history are mapped to their domains, each domain to its topics
(Chrome's classifier, or its override list for popular domains), the week's topics are counted
(one per visit of a domain carrying the topic), and the week's profile is the top k = 5 of those
counts -- utility bucket first, then count, ties at random, padded with random topics when
fewer than k were observed. This module does the counting and hands the counts to the
mechanism's own ranking (``topicslab.api.topk.top_k_sparse``), so an ingested profile is by
construction the profile the mechanism defines; nothing here re-implements the ranking rule.

Epochs are 7-day windows from a start date (default: midnight UTC of the first visit's day),
as Chrome's epochs are one week long; a log may instead carry the week index itself.

Public names:
    ingest_visits(visits, domains, *, epoch_start=None, ...) -> Ingested
    TopicCounter        streaming (user, week, topic) visit counts (numba hash tables)
    WeeklyCounts        the counts in CSR form, one row per (user, week)
    profiles_of(counts, *, k=5, seed=0) -> TopicSets     the mechanism's top-k of each row
    IngestReport        what was read: visits, users, weeks, unclassified domains, padding
"""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
from numba import njit

from topicslab._checks import flag, integer, is_integer, value_shown
from topicslab._progress import task
from topicslab.api.hashing import mix64
from topicslab.api.topk import top_k_sparse
from topicslab.datamodel import TopicSets
from topicslab.errors import InputError, ParameterError
from topicslab.io._common import MAX_WEEKS as FILE_WEEKS
from topicslab.io.visits import (
    _FIRST_S,
    _LAST_S,
    DomainTable,
    VisitBatch,
    hosts_of,
    iter_visits,
    read_domain_table,
    registrable_domain,
    visit_columns,
    visits_time_range,
)
from topicslab.taxonomy import Taxonomy, resolve

__all__ = ["IngestReport", "Ingested", "TopicCounter", "WeeklyCounts", "ingest_visits",
           "profiles_of", "row_key"]

# A count's key packs (user index, week, topic) into one int64: 38 + 16 + 9 bits.
_TOPIC_BITS = 9  # dense topic indices < 512 (v2 has 469)
_WEEK_BITS = 16
#: the most weeks a log may span (1,256 years of weekly epochs)
MAX_WEEKS = 1 << _WEEK_BITS
_MAX_USERS = 1 << (63 - _TOPIC_BITS - _WEEK_BITS)
_US_PER_WEEK = 7 * 86_400 * 1_000_000
_MISSING_HOST = -2


# ---------------------------------------------------------------------------------------------
# numba kernels: open addressing, linear probing; tables are kept at most half full


@njit(cache=True)
def _count_kernel(users, weeks, codes, dom_indptr, dom_topics, ukeys, uvals, user_list,
                  ckeys, cvals, state):  # pragma: no cover - compiled
    umask = ukeys.shape[0] - 1
    cmask = ckeys.shape[0] - 1
    nu = state[0]
    ne = state[1]
    prev = np.int64(0)
    h = np.int64(-1)
    for i in range(users.shape[0]):
        u = users[i]
        if h >= 0 and u == prev:  # logs grouped by user: one lookup per run of visits
            pass
        else:
            h = np.int64(mix64(np.uint64(u)) >> np.uint64(2)) & umask
            prev = u
        while True:
            if uvals[h] < 0:
                ukeys[h] = u
                uvals[h] = nu
                user_list[nu] = u
                nu += 1
                break
            if ukeys[h] == u:
                break
            h = (h + 1) & umask
        c = codes[i]
        if c < 0:
            continue
        base = (uvals[h] << (_WEEK_BITS + _TOPIC_BITS)) | (weeks[i] << _TOPIC_BITS)
        for e in range(dom_indptr[c], dom_indptr[c + 1]):
            key = base | np.int64(dom_topics[e])
            g = np.int64(mix64(np.uint64(key)) >> np.uint64(2)) & cmask
            while True:
                kk = ckeys[g]
                if kk == key:
                    cvals[g] += 1
                    break
                if kk < 0:
                    ckeys[g] = key
                    cvals[g] = 1
                    ne += 1
                    break
                g = (g + 1) & cmask
    state[0] = nu
    state[1] = ne


@njit(cache=True)
def _rehash_counts(old_keys, old_vals, new_keys, new_vals):  # pragma: no cover - compiled
    mask = new_keys.shape[0] - 1
    for i in range(old_keys.shape[0]):
        key = old_keys[i]
        if key < 0:
            continue
        g = np.int64(mix64(np.uint64(key)) >> np.uint64(2)) & mask
        while new_keys[g] >= 0:
            g = (g + 1) & mask
        new_keys[g] = key
        new_vals[g] = old_vals[i]


@njit(cache=True)
def _rehash_users(old_keys, old_vals, new_keys, new_vals):  # pragma: no cover - compiled
    mask = new_keys.shape[0] - 1
    for i in range(old_keys.shape[0]):
        if old_vals[i] < 0:
            continue
        g = np.int64(mix64(np.uint64(old_keys[i])) >> np.uint64(2)) & mask
        while new_vals[g] >= 0:
            g = (g + 1) & mask
        new_keys[g] = old_keys[i]
        new_vals[g] = old_vals[i]


def _capacity(needed: int) -> int:
    """A power of two at least twice ``needed`` (load factor at most 1/2)."""
    return 1 << max(10, int(2 * max(needed, 1) - 1).bit_length())


@dataclass
class WeeklyCounts:
    """Per-(user, week) topic visit counts in CSR form.

    Row ``r = i * n_weeks + w`` is user ``user_ids[i]``'s week ``w``; its topics (dense
    indices) and counts are ``topics[indptr[r]:indptr[r+1]]`` and ``counts[...]``. Users are
    sorted by id; every user of the log has all ``n_weeks`` rows (possibly empty).
    """

    user_ids: npt.NDArray[np.int64]
    n_weeks: int
    indptr: npt.NDArray[np.int64]
    topics: npt.NDArray[np.int32]
    counts: npt.NDArray[np.int64]
    taxonomy: Taxonomy

    def dense(self) -> npt.NDArray[np.int64]:
        """``int64[n_users, n_weeks, m]`` (small inputs only: tests, inspection)."""
        n = self.user_ids.shape[0] * self.n_weeks
        out = np.zeros((n, self.taxonomy.size), dtype=np.int64)
        rows = np.repeat(np.arange(n), np.diff(self.indptr))
        out[rows, self.topics] = self.counts
        return out.reshape(self.user_ids.shape[0], self.n_weeks, self.taxonomy.size)


class TopicCounter:
    """Streaming counts of (user, week, topic) visits: ``add`` batches, then ``result``.

    A visit of a domain with topics ``T`` adds one to each topic of ``T`` in its user's week.
    Users are registered on every visit, so a user whose visits are all unclassified still
    gets (empty, hence fully padded) weeks. Memory grows with the number of distinct
    (user, week, topic) triples, not with the number of visits.
    """

    def __init__(self, table: DomainTable) -> None:
        if table.taxonomy.size > 1 << _TOPIC_BITS:
            raise ParameterError(f"taxonomies of at most {1 << _TOPIC_BITS} topics are "
                                 "supported", field="taxonomy")
        self.table = table
        self._indptr = np.ascontiguousarray(table.indptr, dtype=np.int64)
        self._topics = np.ascontiguousarray(table.topics, dtype=np.int32)
        self._ntopics = np.diff(self._indptr)
        self._ukeys = np.zeros(_capacity(1), dtype=np.int64)
        self._uvals = np.full(self._ukeys.shape[0], -1, dtype=np.int64)
        self._users = np.zeros(self._ukeys.shape[0] // 2, dtype=np.int64)
        self._ckeys = np.full(_capacity(1), -1, dtype=np.int64)
        self._cvals = np.zeros(self._ckeys.shape[0], dtype=np.int64)
        self._state = np.zeros(2, dtype=np.int64)  # users, entries
        self.max_week = -1

    @property
    def n_users(self) -> int:
        return int(self._state[0])

    def _reserve(self, users: int, entries: int) -> None:
        need_u = int(self._state[0]) + users
        if 2 * need_u > self._ukeys.shape[0]:
            cap = _capacity(need_u)
            keys = np.zeros(cap, dtype=np.int64)
            vals = np.full(cap, -1, dtype=np.int64)
            _rehash_users(self._ukeys, self._uvals, keys, vals)
            self._ukeys, self._uvals = keys, vals
        if need_u > self._users.shape[0]:
            grown = np.zeros(max(need_u, 2 * self._users.shape[0]), dtype=np.int64)
            grown[: self._users.shape[0]] = self._users
            self._users = grown
        need_c = int(self._state[1]) + entries
        if 2 * need_c > self._ckeys.shape[0]:
            cap = _capacity(need_c)
            keys = np.full(cap, -1, dtype=np.int64)
            vals = np.zeros(cap, dtype=np.int64)
            _rehash_counts(self._ckeys, self._cvals, keys, vals)
            self._ckeys, self._cvals = keys, vals

    def add(self, users: npt.ArrayLike, weeks: npt.ArrayLike, codes: npt.ArrayLike) -> None:
        """Count visits: ``users`` (int64 ids), ``weeks`` (0..MAX_WEEKS-1) and ``codes``, each
        visit's row in the domain table (``-1``: unclassified, counted by no topic)."""
        u = np.ascontiguousarray(users, dtype=np.int64)
        w = np.ascontiguousarray(weeks, dtype=np.int64)
        c = np.ascontiguousarray(codes, dtype=np.int64)
        if not u.shape == w.shape == c.shape or u.ndim != 1:
            raise ValueError("users, weeks and codes must be 1-D arrays of one length")
        if not u.size:
            return
        if w.min() < 0 or w.max() >= MAX_WEEKS:
            raise ValueError(f"weeks must lie in 0..{MAX_WEEKS - 1}")
        if c.max() >= len(self.table) or c.min() < -1:
            raise ValueError("codes must be rows of the domain table or -1")
        expanded = int(self._ntopics[c[c >= 0]].sum())
        self._reserve(u.shape[0], expanded)
        if int(self._state[0]) + u.shape[0] > _MAX_USERS:
            raise ValueError(f"at most {_MAX_USERS} users are supported")
        _count_kernel(u, w, c, self._indptr, self._topics, self._ukeys, self._uvals,
                      self._users, self._ckeys, self._cvals, self._state)
        self.max_week = max(self.max_week, int(w.max()))

    def result(self, n_weeks: int | None = None, *, release: bool = False) -> WeeklyCounts:
        """The counts so far, users sorted by id, weeks ``0..n_weeks-1`` (default: up to the
        last week seen). ``release`` frees the counting table first (the counter is then
        spent): the peak memory of a large log is the table or the result, not both."""
        weeks = self.max_week + 1 if n_weeks is None else n_weeks
        if weeks <= self.max_week:
            raise ValueError(f"n_weeks={weeks} but week {self.max_week} was seen")
        if self._ckeys.shape[0] == 0:
            raise ValueError("this counter's table was released by result(release=True)")
        nu = int(self._state[0])
        ids = self._users[:nu].copy()
        order = np.argsort(ids, kind="stable")
        rank = np.empty(nu, dtype=np.int64)
        rank[order] = np.arange(nu, dtype=np.int64)
        occupied = np.flatnonzero(self._ckeys >= 0)
        keys = self._ckeys[occupied]
        vals = self._cvals[occupied]
        del occupied
        if release:
            self._ckeys = np.zeros(0, dtype=np.int64)
            self._cvals = np.zeros(0, dtype=np.int64)
        tp = (keys & ((1 << _TOPIC_BITS) - 1)).astype(np.int32)
        row = rank[keys >> (_WEEK_BITS + _TOPIC_BITS)] * max(weeks, 1)
        row += (keys >> _TOPIC_BITS) & (MAX_WEEKS - 1)
        del keys
        by_row = np.argsort(row, kind="stable")
        n_rows = nu * weeks
        indptr = np.zeros(n_rows + 1, dtype=np.int64)
        np.cumsum(np.bincount(row, minlength=n_rows), out=indptr[1:])
        return WeeklyCounts(ids[order], weeks, indptr, tp[by_row], vals[by_row],
                            self.table.taxonomy)


def row_key(user_ids: npt.ArrayLike, weeks: npt.ArrayLike) -> npt.NDArray[np.uint64]:
    """The mechanism's row key of (user, week): ``user_id * 2**16 + week`` (mod 2**64)."""
    u = np.asarray(user_ids, dtype=np.int64).astype(np.uint64)
    return (u << np.uint64(_WEEK_BITS)) | np.asarray(weeks, dtype=np.uint64)


def profiles_of(counts: WeeklyCounts, *, k: int = 5, seed: int = 0) -> TopicSets:
    """Each (user, week)'s top-k profile by the mechanism's rule (``top_k_sparse``).

    The randomness of a row (tie-breaks, padding) is keyed by ``row_key(user_id, week)``, so
    a user's week does not depend on the other users of the log nor on the weeks it spans.
    """
    n, w = counts.user_ids.shape[0], counts.n_weeks
    keys = row_key(counts.user_ids[:, None], np.arange(w)[None, :]).reshape(-1)
    flat = top_k_sparse(counts.indptr, counts.topics, counts.counts, k=k,
                        taxonomy=counts.taxonomy, seed=seed, row_keys=keys)
    return TopicSets(flat.reshape(n, w, k), counts.taxonomy, counts.user_ids)


# ---------------------------------------------------------------------------------------------
# domains of the visits


class _Domains:
    """Registrable domains seen in the log, their table rows and their visit counts."""

    def __init__(self, table: DomainTable) -> None:
        self.table = table
        self.names: list[str] = []
        self.by_name: dict[str, int] = {}
        self.by_host: dict[str, int] = {}
        self.code = np.zeros(0, dtype=np.int64)
        self.visits = np.zeros(0, dtype=np.int64)
        self._last: tuple[pa.Array, npt.NDArray[np.int64]] | None = None

    def _id(self, host: str) -> int:
        got = self.by_host.get(host)
        if got is not None:
            return got
        if not host:
            return _MISSING_HOST
        dom = registrable_domain(host)
        gid = self.by_name.get(dom)
        if gid is None:
            gid = len(self.names)
            self.by_name[dom] = gid
            self.names.append(dom)
        self.by_host[host] = gid
        return gid

    def resolve(self, batch: VisitBatch, file: str) -> npt.NDArray[np.int64]:
        """Each visit's domain-table row (``-1``: not in the table); counts visits per domain."""
        pages = batch.pages
        if not pa.types.is_dictionary(pages.type):
            pages = pages.dictionary_encode()
        idx = np.asarray(pages.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
        dictionary = pages.dictionary
        if self._last is not None and self._last[0].equals(dictionary):
            ids = self._last[1]  # Parquet repeats a column chunk's dictionary per batch
        else:
            hosts = hosts_of(dictionary).dictionary_encode()
            names = hosts.dictionary.to_pylist()
            per_host = np.array([self._id(h) for h in names], dtype=np.int64)
            ids = per_host[np.asarray(hosts.indices.to_numpy(zero_copy_only=False),
                                      dtype=np.int64)]
            self._last = (dictionary, ids)
        gid = ids[idx]
        if gid.size and gid.min() == _MISSING_HOST:
            i = int(np.argmax(gid == _MISSING_HOST))
            raise InputError(f"no host name in {pages[i].as_py()!r}: give a URL "
                             "(https://host/path) or a host name", file=file,
                             row=batch.first_row + i, field=batch.page_field)
        n = len(self.names)
        if self.code.shape[0] < n:
            index = self.table.index
            new = [index.get(d, -1) for d in self.names[self.code.shape[0]:]]
            self.code = np.concatenate([self.code, np.array(new, dtype=np.int64)])
            self.visits = np.concatenate([self.visits,
                                          np.zeros(n - self.visits.shape[0], dtype=np.int64)])
        self.visits += np.bincount(gid, minlength=n)
        return self.code[gid]


# ---------------------------------------------------------------------------------------------
# the pipeline


@dataclass
class IngestReport:
    """What ``ingest_visits`` read and how the profiles came about.

    ``unclassified`` lists every domain absent from the domain table with its visits, most
    visited first: those visits count towards no topic (they are reported, never dropped
    silently). ``no_topic_visits`` are visits of domains the table lists with no topic.
    ``padded_user_weeks`` had fewer than k observed topics (so random topics fill the
    profile); ``empty_user_weeks`` had none (a fully random profile).
    """

    visits: int
    users: int
    weeks: int
    epoch_start: str | None
    domains_seen: int
    classified_visits: int
    no_topic_visits: int
    unclassified_visits: int
    unclassified: list[tuple[str, int]] = field(default_factory=list)
    padded_user_weeks: int = 0
    empty_user_weeks: int = 0

    @property
    def unclassified_domains(self) -> int:
        return len(self.unclassified)

    def as_dict(self, top: int = 20) -> dict[str, Any]:
        """A JSON-friendly summary with the ``top`` most visited unclassified domains."""
        return {"visits": self.visits, "users": self.users, "weeks": self.weeks,
                "epoch_start": self.epoch_start, "domains_seen": self.domains_seen,
                "classified_visits": self.classified_visits,
                "no_topic_visits": self.no_topic_visits,
                "unclassified_visits": self.unclassified_visits,
                "unclassified_domains": self.unclassified_domains,
                "top_unclassified": [[d, v] for d, v in self.unclassified[:top]],
                "padded_user_weeks": self.padded_user_weeks,
                "empty_user_weeks": self.empty_user_weeks}


@dataclass
class Ingested:
    """The result of ``ingest_visits``: the profiles, the counts behind them, the report."""

    sets: TopicSets
    counts: WeeklyCounts
    report: IngestReport


def _start_us(epoch_start: dt.date | dt.datetime | str) -> int:
    if isinstance(epoch_start, str):
        try:
            epoch_start = dt.datetime.fromisoformat(epoch_start.strip().replace("Z", "+00:00"))
        except ValueError:
            raise ParameterError(f"cannot read the epoch start {epoch_start!r}: use a date "
                                 "such as 2024-01-01", field="epoch_start") from None
    if not isinstance(epoch_start, dt.date):  # (5 was an AttributeError on .year)
        raise ParameterError(f"epoch_start must be a date, a datetime or ISO 8601 text, got "
                             f"{epoch_start!r}", field="epoch_start")
    if not isinstance(epoch_start, dt.datetime):
        epoch_start = dt.datetime(epoch_start.year, epoch_start.month, epoch_start.day)
    if epoch_start.tzinfo is None:
        epoch_start = epoch_start.replace(tzinfo=dt.UTC)
    delta = epoch_start - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    us = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    if not _FIRST_S * 1_000_000 <= us <= _LAST_S * 1_000_000 + 999_999:
        # (0001-01-01T00:00+01:00 lies in the year 0 in UTC: the report's datetime of it
        # failed, "OverflowError: date value out of range", exit 1, after all the work)
        raise ParameterError(f"the epoch start {epoch_start.isoformat()} lies outside the "
                             "years 1..9999 in UTC; give a later or earlier start",
                             field="epoch_start")
    return us


def _iso(us: int) -> str:
    t = dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(microseconds=us)
    return t.isoformat().replace("+00:00", "Z")


def _total_rows(path: str) -> int | None:
    if path.lower().endswith((".parquet", ".pq")):
        import pyarrow.parquet as pq

        try:
            return int(pq.ParquetFile(path).metadata.num_rows)
        except (pa.ArrowException, OSError):
            return None
    return None


def ingest_visits(
    visits: str | os.PathLike[str],
    domains: str | os.PathLike[str] | DomainTable,
    *,
    epoch_start: dt.date | dt.datetime | str | None = None,
    week_column: str | None = None,
    timestamp_column: str | None = None,
    k: int = 5,
    taxonomy: Taxonomy | str | None = None,
    seed: int = 0,
    batch_rows: int | None = None,
    progress: bool = False,
) -> Ingested:
    """Weekly top-k profiles of the users of a visits log (see the module docstring).

    Args:
        visits: the log (Parquet, CSV or TSV; see ``topicslab.io.visits``).
        domains: a domain table file or a ``DomainTable``.
        epoch_start: start of epoch 0 (a date: midnight UTC; or a datetime); default the
            first visit's day. Only for logs with timestamps; a visit before it is an error.
        week_column / timestamp_column: the time column, when the default names do not apply.
        k: profile size (Chrome: 5).
        taxonomy: the taxonomy of the domain table's topic ids (default v2; a ``DomainTable``
            brings its own).
        seed: seed of the mechanism's tie-break and padding randomness.
        batch_rows: rows per batch (memory vs. overhead).
        progress: show a progress bar (stderr).
    """
    progress = flag(progress, "progress")
    from topicslab.io.visits import BATCH_ROWS

    file = os.fspath(visits)
    if isinstance(domains, DomainTable):
        if taxonomy is not None and resolve(taxonomy).version != domains.taxonomy.version:
            raise ParameterError(f"the domain table uses taxonomy {domains.taxonomy.version}, "
                                 f"not {resolve(taxonomy).version}", field="taxonomy")
        table = domains
    else:
        table = read_domain_table(domains, taxonomy=taxonomy or "v2")
    if not len(table):  # every visit would be unclassified: profiles of padding topics only
        raise InputError("the domain table lists no domains; give the table of classified "
                         "domains", file=table.source or None, field=None)
    tax = table.taxonomy
    if not is_integer(k) or not 1 <= k <= tax.size:  # (is_integer: a NumPy one too)
        raise ParameterError(f"k must be an integer in 1..{tax.size}, got "
                             f"{value_shown(k)}", field="k")
    k = int(k)
    if batch_rows is not None:  # (0 was read as "the default", silently)
        integer(batch_rows, "batch_rows", at_least=1)
    cols = visit_columns(file, week_column=week_column, timestamp_column=timestamp_column)
    is_week = cols.is_week
    if is_week and epoch_start is not None:
        raise ParameterError("the log gives week indices; an epoch start applies to "
                             "timestamps only", field="epoch_start")
    start: int | None = None
    if not is_week:
        if epoch_start is not None:
            start = _start_us(epoch_start)
        else:
            rng = visits_time_range(file, week_column=week_column,
                                    timestamp_column=timestamp_column)
            first = rng[0] if rng is not None else 0
            start = first - first % (86_400 * 1_000_000)  # midnight UTC of the first day
    counter = TopicCounter(table)
    doms = _Domains(table)
    n_visits = 0
    with task("ingest visits", _total_rows(file), enabled=progress) as advance:
        for b in iter_visits(file, week_column=week_column, timestamp_column=timestamp_column,
                             batch_rows=BATCH_ROWS if batch_rows is None else batch_rows):
            if b.is_week:
                weeks = b.time
            else:
                assert start is not None
                early = b.time < start
                if early.any():
                    i = int(np.argmax(early))
                    raise InputError(f"visit at {_iso(int(b.time[i]))} is before the epoch "
                                     f"start {_iso(start)}; choose an earlier epoch start",
                                     file=file, row=b.first_row + i, field=cols.time)
                weeks = (b.time - start) // _US_PER_WEEK
            # the files' bound, not the counter's (MAX_WEEKS): a log spanning more weeks (a
            # far too early --epoch-start, a stray week number) was written as sets of
            # thousands of padded weeks, which the long format then refused to read back
            if weeks.size and weeks.max() >= FILE_WEEKS:
                i = int(np.argmax(weeks >= FILE_WEEKS))
                hint = ("check the log's week numbers" if b.is_week
                        else "check the log's times, or give a later --epoch-start"
                        if epoch_start is not None else
                        f"epoch 0 starts at the log's earliest visit ({_iso(start or 0)}); check "
                        "the log's earliest and latest times, or give --epoch-start")
                raise InputError(f"week {int(weeks[i])} is past the last week a file may hold "
                                 f"({FILE_WEEKS - 1}: at most {FILE_WEEKS} weeks, as a "
                                 f"population); {hint}",
                                 file=file, row=b.first_row + i, field=cols.time)
            codes = doms.resolve(b, file)
            counter.add(b.user, weeks, codes)
            n_visits += b.user.shape[0]
            advance(b.user.shape[0])
    if n_visits == 0:
        raise InputError("the log holds no visits (a header and no rows)", file=file)
    from topicslab._resources import require_memory

    # the profiles are dense: every user gets every week from the first visit to the last, so
    # one stray early time (0 = 1970) makes thousands of padded weeks per user; checked
    # before they are built. Bytes: int16 sets plus the padding's work arrays, ~24 a topic
    # slot (measured: 5,000 users x 100 weeks at k = 469 peaked at 5.6 GB; the 8 counted
    # before let a log 3x too large through, round 28 of bad inputs)
    users, span = counter.n_users, counter.max_week + 1
    try:
        require_memory(float(users) * span * k * 24,
                       f"the profiles of {users:,} users x {span:,} weeks (the log's time "
                       "span)", field=cols.time, hint="check the log's earliest and latest "
                       "times, give --epoch-start, or a smaller --k")
    except InputError as exc:
        raise exc.located(file=file) from None
    counts = counter.result(release=True)
    del counter
    sets = profiles_of(counts, k=k, seed=seed)
    report = _report(doms, counts, n_visits, k, None if start is None else _iso(start))
    sets.metadata = {"generator": "topicslab ingest", "visits": file,
                     "domains": table.source, "k": k, "seed": seed,
                     "epoch_start": report.epoch_start,
                     "report": report.as_dict()}
    return Ingested(sets, counts, report)


def _report(doms: _Domains, counts: WeeklyCounts, n_visits: int, k: int,
            epoch_start: str | None) -> IngestReport:
    listed = doms.code >= 0
    ntop = np.diff(doms.table.indptr)
    with_topics = listed.copy()
    with_topics[listed] = ntop[doms.code[listed]] > 0
    unclassified = sorted(((doms.names[i], int(doms.visits[i]))
                           for i in np.flatnonzero(~listed)), key=lambda p: (-p[1], p[0]))
    per_row = np.diff(counts.indptr)
    return IngestReport(
        visits=n_visits, users=int(counts.user_ids.shape[0]), weeks=counts.n_weeks,
        epoch_start=epoch_start, domains_seen=len(doms.names),
        classified_visits=int(doms.visits[with_topics].sum()),
        no_topic_visits=int(doms.visits[listed & ~with_topics].sum()),
        unclassified_visits=int(doms.visits[~listed].sum()),
        unclassified=unclassified,
        padded_user_weeks=int((per_row < k).sum()),
        empty_user_weeks=int((per_row == 0).sum()))
