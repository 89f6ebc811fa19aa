"""Out-of-core DP statistics: stream Parquet in chunks, bound and count each chunk, sum.

The counts of Dick et al. §4.2 are sums over users, and contribution bounding treats every user on
its own (its padding is keyed by ``(seed, user_id, week)``, see ``bounding``), so bounding and
counting a file chunk by chunk and adding the per-chunk counts gives *exactly* the counts of
bounding and counting the whole file at once. Memory is O(chunk + m²): one decoded chunk and
the ``(2W-1) × m²`` int64 count accumulator (5.3 MB for two weeks of taxonomy v2). The noise,
the post-processing and the ledger are the shared ``statistics.release_counts``.

Public names:
    stream_statistics(path, ...) -> DPStatistics   the release, out of core (engine "stream")
    stream_counts(path, ...) -> BoundedCounts      the exact bounded counts only (tests,
                                                   benchmarks, audits)
    BoundedCounts                                  counts + bounding report + user count +
                                                   input fingerprint
    CountAccumulator                               per-chunk bounding + counting + sums; the
                                                   Spark backend runs it in each partition
    multiset_fingerprint(...)                      the order-independent input fingerprint
    input_users(path)                              user count of a Parquet input (footers)
    parquet_plan(schema, ...)                      footer metadata (shared with the Spark
                                                   engine; batches become dense sets through
                                                   ``topicslab.io.arrow_to_sets``)

Input: a topic-set Parquet file (``topicslab.io`` layout: ``user_id``, ``epoch_{w}_topics``)
or a directory of such files (``*.parquet``, e.g. a Spark output; read in name order). Other
formats go through ``topicslab.io.iter_sets`` (CSV and long tables are read whole there).

Reading follows ``topicslab.io.read_sets``: the file's taxonomy (metadata, else v2), topic ids
checked against it, a repeated topic in a week an error unless ``strict=False`` (then merged).
The batch width is the widest list of the batch (bounding does not depend on the width), so
over-long weeks always reach ``bound`` (reject/truncate) as in the in-memory path — even in a
file whose metadata declares a smaller k, which ``read_sets`` refuses outright.

A user id may appear only once in the whole input (a user's whole sequence is the unit of
privacy, Dick et al. §4.2): checked per chunk, then across chunks from their id ranges (free for
files sorted by user id, as the generator and ``SetsWriter`` write them); overlapping ranges
trigger an exact check over the ``user_id`` column (8 bytes/user).

Input fingerprint (ledger audit field): the in-memory engine hashes the bounded array in file
order (sha256); a streamed or distributed input has no single order, so these engines record
``multiset_fingerprint``: two 64-bit sums (mod 2^64) of per-user SplitMix64 hashes of
``(user_id, bounded sets)`` — the same for any chunking, partitioning or row order of the same
users, different from the in-memory engine's value. An audit label, not a cryptographic
commitment.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import os
import secrets
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.parquet as pq
from numba import njit, prange

from topicslab._checks import MAX_COUNT, flag, integer
from topicslab._json import dumps
from topicslab._progress import task
from topicslab.api.hashing import mix64
from topicslab.dp.bounding import BoundingReport, bound_contributions
from topicslab.dp.counts import PairCounts, pair_counts
from topicslab.dp.params import (
    Accounting,
    BoundMode,
    ContributionBound,
    PrivacyBudget,
    budget_of,
    contribution_of,
    refuse_overlap,
)
from topicslab.dp.statistics import DPStatistics, check_seed, release_counts
from topicslab.errors import InputError
from topicslab.taxonomy import Taxonomy

__all__ = ["BoundedCounts", "CountAccumulator", "input_users", "multiset_fingerprint",
           "stream_counts", "stream_statistics"]

#: Users per chunk: the io writer's row group, so one chunk is one decoded row group.
CHUNK_USERS = 1 << 20
#: Cache-sized blocks for the list -> dense conversion (as ``topicslab.io`` does).
_REPORT_FIELDS = tuple(f.name for f in dataclasses.fields(BoundingReport))
_LANE_B = np.uint64(0x9E3779B97F4A7C15)
_FP_KEY = np.uint64(0x7F4A7C159E3779B9)
_LONG_COLUMNS = ["topic_id", "user_id", "week"]

PathLike = str | os.PathLike[str]


@dataclass(frozen=True)
class BoundedCounts:
    """Exact pair counts of contribution-bounded data, with their audit data.

    Attributes:
        counts: ``PairCounts`` (within ``int64[W, m, m]``, across ``int64[W-1, m, m]``).
        bounding: what bounding changed, summed over chunks / partitions.
        n_users: users counted (private; audit only).
        fingerprint: ``multiset_fingerprint`` of the bounded input.
        weeks: the data's week numbers the counts refer to.
        taxonomy: taxonomy of the dense indices.
        k: topics per user-week after bounding.
    """

    counts: PairCounts
    bounding: BoundingReport
    n_users: int
    fingerprint: str
    weeks: list[int]
    taxonomy: Taxonomy
    k: int


# --------------------------------------------------------------------------- fingerprint

@njit(cache=True, parallel=True)
def _fingerprint_lanes(bounded: np.ndarray, uids: np.ndarray) -> tuple[np.uint64, np.uint64]:
    n, n_weeks, k = bounded.shape
    a = np.uint64(0)
    b = np.uint64(0)
    for u in prange(n):
        h = mix64(_FP_KEY ^ np.uint64(uids[u]))
        for w in range(n_weeks):
            for s in range(k):
                h = mix64(h ^ (np.uint64(np.int64(bounded[u, w, s]) + 1)
                               + np.uint64((w * k + s) << 16)))
        a += h
        b += mix64(h ^ _LANE_B)
    return a, b


def multiset_fingerprint(n_users: int, n_weeks: int, k: int, m: int,
                         lanes: tuple[int, int]) -> str:
    """The input fingerprint of the streaming engines from the summed per-user hash lanes."""
    doc = dumps({"n_users": int(n_users), "weeks": int(n_weeks), "k": int(k), "m": int(m),
                 "lanes": [int(x) % (1 << 64) for x in lanes]}, sort_keys=True)
    return "mset-splitmix64-sha256:" + hashlib.sha256(doc.encode()).hexdigest()


# --------------------------------------------------------------------------- accumulating

def _unique_range(uids: npt.NDArray[np.int64]) -> tuple[int, int] | int:
    """``(min, max)`` of a chunk's user ids if they are distinct, else the first repeated
    position (the later occurrence in chunk order)."""
    if uids.shape[0] == 0:
        return (0, -1)
    if uids.shape[0] == 1 or bool((np.diff(uids) > 0).all()):
        return (int(uids[0]), int(uids[-1]))
    order = np.argsort(uids, kind="stable")
    s = uids[order]
    same = s[1:] == s[:-1]
    if same.any():
        return int(order[1:][same].min())
    return (int(s[0]), int(s[-1]))


class CountAccumulator:
    """Bound and count chunks of users; keep the exact sums (Dick et al. §4.2 counts).

    ``add`` bounds a chunk with ``bound_contributions`` (global user ids and one padding seed,
    so the result is the whole-input bounding's) and adds its ``pair_counts``; ``result``
    returns the ``BoundedCounts`` once every chunk is in. Also tracks the user-id ranges for
    the cross-chunk uniqueness check (``ranges_disjoint``).
    """

    def __init__(self, m: int, n_weeks: int, *, k: int, bound: BoundMode, pad_seed: int) -> None:
        if n_weeks < 1:
            raise ValueError("need at least one week")
        self.m = int(m)
        self.n_weeks = int(n_weeks)
        self.k = int(k)
        self.bound: BoundMode = bound
        self.pad_seed = int(pad_seed)
        self.hist = np.zeros((2 * n_weeks - 1, m, m), dtype=np.int64)
        self.report = np.zeros(len(_REPORT_FIELDS), dtype=np.int64)
        self.n_users = 0
        self.lanes = [0, 0]
        self.ranges: list[tuple[int, int]] = []

    def add(self, user_ids: npt.NDArray[np.int64], sets: npt.NDArray[np.int16], *,
            file: str | None = None, row_base: int | None = None) -> None:
        """Bound and count one chunk: ``sets`` is ``int16[n, n_weeks, width]`` dense indices
        (``-1`` empty, any order, any width), ``user_ids`` their global ids.

        Errors name ``file`` and the 1-based data row ``row_base + i + 1`` (if ``row_base``).
        """
        uids = np.asarray(user_ids, dtype=np.int64)
        rng = _unique_range(uids)
        if isinstance(rng, int):
            raise InputError(f"user id {int(uids[rng])} appears more than once", file=file,
                             row=None if row_base is None else row_base + rng + 1,
                             field="user_id")
        try:
            bounded, rep = bound_contributions(sets, self.m, k=self.k, bound=self.bound,
                                               seed=self.pad_seed, user_ids=uids)
        except InputError as exc:
            row = None if (row_base is None or exc.row is None) else row_base + exc.row
            raise InputError(exc.message, file=file, row=row, field=exc.field) from None
        pc = pair_counts(bounded, self.m)
        nw = self.n_weeks
        self.hist[:nw] += pc.within
        self.hist[nw:] += pc.across
        self.report += np.array([getattr(rep, f) for f in _REPORT_FIELDS], dtype=np.int64)
        if uids.shape[0]:
            a, b = _fingerprint_lanes(bounded, uids)
            self.lanes = [(self.lanes[0] + int(a)) % (1 << 64),
                          (self.lanes[1] + int(b)) % (1 << 64)]
            self._add_range(rng)
        self.n_users += int(uids.shape[0])

    def _add_range(self, rng: tuple[int, int]) -> None:
        # ascending chunks (the usual layout) coalesce into one range; a later chunk falling
        # into a coalesced gap only costs the exact check, never a wrong answer
        if self.ranges and rng[0] > self.ranges[-1][1]:
            self.ranges[-1] = (self.ranges[-1][0], rng[1])
        else:
            self.ranges.append(rng)

    def bounding_report(self) -> BoundingReport:
        return BoundingReport(**{f: int(v) for f, v in zip(_REPORT_FIELDS, self.report,
                                                            strict=True)})

    def result(self, taxonomy: Taxonomy, weeks: Sequence[int]) -> BoundedCounts:
        nw = self.n_weeks
        counts = PairCounts(within=self.hist[:nw], across=self.hist[nw:])
        fp = multiset_fingerprint(self.n_users, nw, self.k, self.m,
                                  (self.lanes[0], self.lanes[1]))
        return BoundedCounts(counts, self.bounding_report(), self.n_users, fp,
                             [int(w) for w in weeks], taxonomy, self.k)


def ranges_disjoint(ranges: Sequence[tuple[int, int]]) -> bool:
    """True if the closed id ranges of chunks with distinct ids are pairwise disjoint (then
    no user id repeats across chunks)."""
    r = sorted(ranges)
    return all(r[i + 1][0] > r[i][1] for i in range(len(r) - 1))


# --------------------------------------------------------------------------- reading

@dataclass(frozen=True)
class ParquetPlan:
    """What a topic-set Parquet input declares: its taxonomy and number of weeks."""

    taxonomy: Taxonomy
    n_weeks: int


def parquet_plan(schema: pa.Schema, *, file: str, taxonomy: Taxonomy | str | None
                 ) -> ParquetPlan:
    """Read the ``topicslab`` metadata block and the week columns of a schema, checked as the
    sets reader checks them (a misspelt week column, metadata whose weeks contradict the
    columns, or a corrupt k were read as they came: the week dropped without a word)."""
    from topicslab.io.parquet_sets import _Plan

    plan = _Plan(file, schema, taxonomy, None, None)
    return ParquetPlan(plan.taxonomy, plan.weeks)


def _parquet_files(path: str) -> list[str]:
    if os.path.isdir(path):
        from topicslab._paths import not_topic_sets

        if (why := not_topic_sets(path)) is not None:  # (a run's pop and synth read as one)
            raise InputError(why, file=path)
        files = sorted(os.path.join(path, f) for f in os.listdir(path)
                       if f.endswith((".parquet", ".pq")) and not f.startswith((".", "_")))
        if not files:
            raise InputError("directory holds no .parquet files", file=path)
        return files
    from topicslab.io._common import check_exists

    return [check_exists(path)]


def _is_wide_parquet(path: str) -> bool:
    """True for a wide topic-set Parquet file or a directory of them (the streamed layout)."""
    if os.path.isdir(path):
        return any(f.endswith((".parquet", ".pq")) for f in os.listdir(path))
    if not path.lower().endswith((".parquet", ".pq")):
        return False
    from topicslab.io._common import data_columns
    from topicslab.io.profiles import is_profile_table

    try:
        names = data_columns(pq.read_schema(path))  # (less a pandas index)
    except (pa.ArrowException, OSError):
        return True  # let the Parquet reader report the problem

    return sorted(names) != _LONG_COLUMNS and not is_profile_table(path)


def _check_unique_exact(files: Sequence[str]) -> None:
    """Exact cross-chunk uniqueness check over the ``user_id`` column(s): 8 bytes/user."""
    ids = []
    for f in files:
        col = pq.read_table(f, columns=["user_id"]).column(0)
        ids.append(np.asarray(col.to_numpy(), dtype=np.int64))
    allid = np.concatenate(ids) if ids else np.zeros(0, dtype=np.int64)
    s = np.sort(allid)
    same = np.flatnonzero(s[1:] == s[:-1])
    if same.size:
        uid = int(s[same[0]])
        pos = int(np.flatnonzero(allid == uid)[1])
        sizes = np.cumsum([a.shape[0] for a in ids])
        fi = int(np.searchsorted(sizes, pos, side="right"))
        row = pos - (int(sizes[fi - 1]) if fi else 0) + 1
        raise InputError(f"user id {uid} appears more than once", file=files[fi], row=row,
                         field="user_id")


def _iter_parquet(files: Sequence[str], plan: ParquetPlan, w_sel: Sequence[int],
                  chunk_users: int, taxonomy: Taxonomy | str | None, strict: bool,
                  ) -> Iterator[tuple[str, int, npt.NDArray[np.int64], npt.NDArray[np.int16]]]:
    from topicslab.io._common import wrap_errors
    from topicslab.io.arrow import arrow_to_sets

    fields = [f"epoch_{w}_topics" for w in w_sel]
    for file in files:
        with wrap_errors(file, "Parquet"):
            # pre_buffer keeps every row group's compressed pages cached until the file is
            # closed (~12 MB per 1M users here): memory would grow with n, so turn it off
            pf = pq.ParquetFile(file, pre_buffer=False)
            fplan = parquet_plan(pf.schema_arrow, file=file,
                                 taxonomy=plan.taxonomy if taxonomy is None else taxonomy)
            if fplan.n_weeks != plan.n_weeks or fplan.taxonomy.version != plan.taxonomy.version:
                raise InputError(f"{fplan.n_weeks} weeks of taxonomy {fplan.taxonomy.version}"
                                 f", but the first file has {plan.n_weeks} of "
                                 f"{plan.taxonomy.version}", file=file)
            row_base = 0
            for batch in pf.iter_batches(batch_size=chunk_users, columns=["user_id", *fields]):
                got = arrow_to_sets(
                    [batch.column(i) for i in range(batch.num_columns)], fields,
                    taxonomy=plan.taxonomy, strict=strict, file=file, row_base=row_base,
                    empty_k=1, name_users=True)
                yield file, row_base, got.user_ids, got.sets
                row_base += batch.num_rows


def stream_counts(
    path: PathLike,
    *,
    weeks: Sequence[int] | None = None,
    k: int | None = None,
    bound: BoundMode | None = None,
    seed: int | None = None,
    chunk_users: int = CHUNK_USERS,
    taxonomy: Taxonomy | str | None = None,
    strict: bool = True,
    progress: bool = False,
    contribution: ContributionBound | None = None,
) -> BoundedCounts:
    """Exact pair counts of the contribution-bounded input, streamed chunk by chunk.

    Equal to ``pair_counts(bound_contributions(sets[:, weeks], m, k=k, bound=bound,
    seed=seed, user_ids=ids), m)`` of the whole input read in memory (for ``seed=None`` one
    padding seed is drawn from ``secrets`` for all chunks).

    Args:
        path: topic-set Parquet file or directory of Parquet files (other formats: through
            ``topicslab.io.iter_sets``).
        contribution: ``k``, ``bound`` and ``weeks`` (``ContributionBound``), or the
            keywords ``weeks``, ``k``, ``bound`` (as ``compute_statistics``).
        seed: as ``compute_statistics``.
        chunk_users: users per chunk (memory ≈ 100 bytes × chunk_users + 5.3 MB).
        taxonomy: taxonomy to read with (default: the file's, else v2).
        strict: a repeated topic in a week is an error (else merged), as ``read_sets``.
        progress: show a progress bar (stderr).
    """
    # (chunk_users=1.5 was read in chunks of 1; seed=1.5 padded as seed 1, and 2**64 as 0)
    progress = flag(progress, "progress")
    strict = flag(strict, "strict")
    chunk_users = integer(chunk_users, "chunk_users", at_least=1, at_most=MAX_COUNT)
    seed = check_seed(seed)
    contribution = contribution_of(contribution, k=k, bound=bound, weeks=weeks)
    refuse_overlap(contribution, "stream")
    name = os.fspath(path)
    pad_seed = secrets.randbits(63) if seed is None else seed
    if not _is_wide_parquet(name):
        return _stream_other(name, contribution=contribution, pad_seed=pad_seed,
                             chunk_users=chunk_users, taxonomy=taxonomy, strict=strict,
                             progress=progress)
    from topicslab.io._common import wrap_errors

    files = _parquet_files(name)
    with wrap_errors(files[0], "Parquet"):
        first = pq.ParquetFile(files[0])
        plan = parquet_plan(first.schema_arrow, file=files[0], taxonomy=taxonomy)
        total = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
    if total == 0:  # the local engine refuses it; this one released noise only
        raise InputError("the topic sets hold no users", file=files[0])
    w_sel = contribution.select_weeks(plan.n_weeks)
    contribution.check_topics(plan.taxonomy.size)
    k = contribution.k
    acc = CountAccumulator(plan.taxonomy.size, len(w_sel), k=k, bound=contribution.bound,
                           pad_seed=pad_seed)
    with task("DP counts (stream)", total, enabled=progress) as advance:
        for file, row_base, uids, dense in _iter_parquet(files, plan, w_sel, chunk_users,
                                                         taxonomy, strict):
            acc.add(uids, dense, file=file, row_base=row_base)
            advance(uids.shape[0])
        if not ranges_disjoint(acc.ranges):  # (inside the bar: a refusal clears it)
            _check_unique_exact(files)
    return acc.result(plan.taxonomy, w_sel)


def _stream_other(path: str, *, contribution: ContributionBound, pad_seed: int,
                  chunk_users: int, taxonomy: Taxonomy | str | None, strict: bool,
                  progress: bool) -> BoundedCounts:
    """Formats other than wide Parquet: chunks from ``topicslab.io.iter_sets``."""
    from topicslab import io as tio

    acc: CountAccumulator | None = None
    tax: Taxonomy | None = None
    w_sel: list[int] = []
    seen: list[npt.NDArray[np.int64]] = []
    chunks = tio.iter_sets(path, chunk_users, taxonomy=taxonomy, strict=strict)
    # the header and the first rows are read before the bar is drawn: a file refused there
    # printed the bar's line above the error's
    first = next(chunks, None)
    if first is None:  # (before the bar, whose line was printed above the error's)
        raise InputError("the topic sets hold no users", file=path)
    with task("DP counts (stream)", None, enabled=progress) as advance:
        for chunk in itertools.chain([first], chunks):
            if acc is None:
                tax = chunk.taxonomy
                w_sel = contribution.select_weeks(chunk.n_weeks)
                contribution.check_topics(tax.size)
                acc = CountAccumulator(tax.size, len(w_sel), k=contribution.k,
                                       bound=contribution.bound, pad_seed=pad_seed)
            acc.add(chunk.user_ids, chunk.sets[:, w_sel, :], file=path)
            seen.append(chunk.user_ids)
            advance(chunk.n_users)
        if acc is not None and not ranges_disjoint(acc.ranges):
            # (inside the bar: a refusal clears it, and the error's line is the only one)
            allid = np.sort(np.concatenate(seen))
            same = np.flatnonzero(allid[1:] == allid[:-1])
            if same.size:
                raise InputError(f"user id {int(allid[same[0]])} appears more than once",
                                 file=path, field="user_id")
    assert acc is not None and tax is not None
    return acc.result(tax, w_sel)


def stream_statistics(
    path: PathLike,
    *,
    weeks: Sequence[int] | None = None,
    k: int | None = None,
    epsilon: float | None = None,
    delta: float | None = None,
    split: Sequence[float] | None = None,
    accounting: Accounting | None = None,
    bound: BoundMode | None = None,
    seed: int | None = None,
    chunk_users: int = CHUNK_USERS,
    taxonomy: Taxonomy | str | None = None,
    strict: bool = True,
    progress: bool = False,
    budget: PrivacyBudget | None = None,
    contribution: ContributionBound | None = None,
) -> DPStatistics:
    """DP statistics of a (large) topic-set file, out of core: ``stream_counts`` then the
    shared ``release_counts`` (same noise, post-processing and ledger as
    ``compute_statistics``; the ledger records ``engine="stream"``).

    Args: as ``compute_statistics`` and ``stream_counts``. The split's length is checked
    against the input's weeks before the pass over the data where the footers tell them.
    """
    from topicslab._paths import path_name

    progress = flag(progress, "progress")
    strict = flag(strict, "strict")
    path_name(path)  # (None or True was "expected str, bytes or os.PathLike object")
    budget = budget_of(budget, epsilon=epsilon, delta=delta, split=split,
                       accounting=accounting)
    contribution = contribution_of(contribution, k=k, bound=bound, weeks=weeks)
    refuse_overlap(contribution, "stream")
    check_split_early(budget, contribution, _file_weeks(os.fspath(path)))
    bc = stream_counts(path, seed=seed, chunk_users=chunk_users, taxonomy=taxonomy,
                       strict=strict, progress=progress, contribution=contribution)
    return release_bounded(bc, budget=budget, bound=contribution.bound, seed=seed,
                           engine="stream")


def check_split_early(budget: PrivacyBudget, contribution: ContributionBound,
                      input_weeks: int | None) -> None:
    """Refuse a split of the wrong length before an expensive pass over the data
    (``input_weeks``: the input's week count, None if unknown yet)."""
    n_used = len(contribution.weeks) if contribution.weeks is not None else (
        None if input_weeks is None else min(2, input_weeks))
    if n_used:
        budget.shares(n_used)


def input_users(path: PathLike) -> int | None:
    """Users (rows) of a wide Parquet input from its footers alone; None for other inputs."""
    name = os.fspath(path)
    try:
        if not _is_wide_parquet(name):
            return None
        return sum(pq.ParquetFile(f).metadata.num_rows for f in _parquet_files(name))
    except (InputError, pa.ArrowException, OSError):
        return None


def _file_weeks(path: str) -> int | None:
    """Week columns of a wide Parquet input (None if not one, or unreadable)."""
    try:
        if not _is_wide_parquet(path):
            return None
        name = _parquet_files(path)[0]
        names = pq.read_schema(name).names
    except (InputError, pa.ArrowException, OSError):
        return None
    return sum(1 for c in names if c.startswith("epoch_") and c.endswith("_topics"))


def release_bounded(bc: BoundedCounts, *, budget: PrivacyBudget, bound: BoundMode,
                    seed: int | None, engine: str) -> DPStatistics:
    """``release_counts`` of ``BoundedCounts`` (the shared noise + post-processing + ledger)."""
    return release_counts(bc.counts, bc.taxonomy, k=bc.k, weeks=bc.weeks, budget=budget,
                          bound=bound, seed=seed, bounding=bc.bounding,
                          input_fingerprint=bc.fingerprint, engine=engine)
