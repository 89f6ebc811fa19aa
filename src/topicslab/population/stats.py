"""Exact (non-private) statistics of topic-set sequences and the calibration table.

Definitions (Dick et al. §4.1), U a random user, J a random week (or consecutive week pair):
q_single(o) = P(o in S_J), q_within(o1, o2) = P({o1, o2} ⊆ S_J) for unordered pairs (stored
symmetric, zero diagonal), q_across(o1, o2) = P(o1 in S_{J-1}, o2 in S_J) (ordered, diagonal
allowed). Counting runs in a numba kernel over users, with one pair-count matrix per worker
block (reduced at the end), so memory does not grow with the number of users.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from numba import njit, prange

from topicslab.datamodel import TopicSets
from topicslab.population.targets import Target, published_targets


@njit(cache=True, parallel=True)
def _count_kernel(sets, m, n_blocks, first, stop, cell):
    """Counts of singles and within-week pairs (once per unordered pair, in set order) of
    weeks ``first..stop-1``, and of across-week pairs of the transitions from them, summed
    over those weeks. One week at a time keeps each block's tables in cache: counting every
    week into tables of its own was slower than counting the weeks apart (4.8 vs 3.0 s for 2M
    users x 8 weeks); and within one week, the within-week table first, then the across one,
    each of ``cell`` (int32 while a block's users fit: 0.9 MB for 469 topics), not both of
    int64 at once (3.5 MB a thread, past a core's cache: 5.3 s of 10M users x 8 weeks)."""
    n, w, k = sets.shape
    single = np.zeros((n_blocks, m), dtype=np.int64)
    within = np.zeros((n_blocks, m, m), dtype=cell)
    across = np.zeros((n_blocks, m, m), dtype=cell)
    per = (n + n_blocks - 1) // n_blocks
    for b in prange(n_blocks):
        for j in range(first, stop):
            for u in range(b * per, min(n, (b + 1) * per)):
                for s in range(k):
                    a = sets[u, j, s]
                    if a < 0:
                        continue
                    single[b, a] += 1
                    for t in range(s + 1, k):
                        c = sets[u, j, t]
                        if c >= 0 and c != a:
                            within[b, a, c] += 1
            if j + 1 < w:
                for u in range(b * per, min(n, (b + 1) * per)):
                    for s in range(k):
                        a = sets[u, j, s]
                        if a < 0:
                            continue
                        for t in range(k):
                            c = sets[u, j + 1, t]
                            if c >= 0:
                                across[b, a, c] += 1
    return (single.sum(axis=0), within.astype(np.int64).sum(axis=0),
            across.astype(np.int64).sum(axis=0))


def _counted(sets: TopicSets | npt.ArrayLike, m: int | None, per_week: bool
             ) -> tuple[int, int, npt.NDArray[np.int64], npt.NDArray[np.int64],
                        npt.NDArray[np.int64]]:
    """``(n, w, single, within, across)`` counts of checked sets (``_count_kernel``), with
    ``within`` made symmetric."""
    from numba import get_num_threads

    from topicslab._checks import integer, integer_array, refuse
    from topicslab._resources import require_memory

    if isinstance(sets, TopicSets):
        arr = sets.sets
        # (m=10 was ignored without a word: the statistics are of the taxonomy's topics)
        if m is not None and integer(m, "m") != sets.taxonomy.size:
            raise refuse(f"m is the taxonomy's size for TopicSets: {sets.taxonomy.size} "
                         f"({sets.taxonomy.version}), got {m}; leave it out", "m")
        m = sets.taxonomy.size
    else:
        # m = 0 (or below a topic of the sets) let the kernel write past its tables: the
        # process died of a corrupted heap ("malloc(): invalid next size"); a fraction was
        # truncated to a topic
        if m is None:
            raise refuse("m (taxonomy size) is required for a bare array", "m")
        m = integer(m, "m", at_least=1)
        arr = integer_array(sets, "sets")
        if arr.ndim == 3 and arr.size and (int(arr.min()) < -1 or int(arr.max()) >= m):
            raise refuse(f"sets must hold dense topic indices in 0..{m - 1} or -1 (empty), "
                         f"got {int(arr.min())}..{int(arr.max())}", "sets")
    if arr.ndim != 3:
        raise refuse(f"sets must be [n_users, n_weeks, k], got {arr.shape}", "sets")
    n, w, _ = arr.shape
    if n == 0:
        raise refuse("sets hold no users", "sets")
    if w == 0:  # (the averages were NaN, a warning at most, and per week max()'s ValueError)
        raise refuse(f"sets hold no week (shape {arr.shape}); give at least one week", "sets")
    # one block per thread (the counts are integers: the same whatever the blocks)
    n_blocks = max(1, min(8, get_num_threads(), n // 4096))
    # the three m x m tables of each block, their sums and (per week) the results
    require_memory(8.0 * m * m * (2 * n_blocks + 3 + (2 * w if per_week else 0)),
                   f"the statistics of {m:,} topics", field="m")
    arr = np.ascontiguousarray(arr, dtype=np.int16)
    spans = [(j, j + 1) for j in range(w)] if per_week else [(0, w)]
    # a block's count of one pair is at most its users times the weeks of a call
    per_block = -(-n // n_blocks) * max(b - a for a, b in spans)
    cell = np.int32 if per_block < 2**31 else np.int64
    counted = [_count_kernel(arr, int(m), n_blocks, a, b, cell) for a, b in spans]
    single, within, across = (np.stack([c[i] for c in counted]) for i in range(3))
    within += within.transpose(0, 2, 1)  # pairs were counted once, in set order
    return n, w, single, within, across


def empirical_statistics(
    sets: TopicSets | npt.ArrayLike, m: int | None = None
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """``q_single[m]``, ``q_within[m, m]`` (symmetric), ``q_across[m, m]`` of topic sets.

    ``q_single``/``q_within`` average over all weeks, ``q_across`` over all consecutive week
    pairs (stationarity, Dick et al. §4.1). Empty slots (``-1``) are skipped.
    """
    n, w, single, within, across = _counted(sets, m, per_week=False)
    q_single = single[0] / (n * w)
    q_within = within[0] / (n * w)
    q_across = across[0] / (n * (w - 1)) if w > 1 else np.zeros(within.shape[1:])
    return q_single, q_within, q_across


def weekly_empirical_statistics(
    sets: TopicSets | npt.ArrayLike, m: int | None = None
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """``empirical_statistics`` of each week apart, one kernel call per week (each block's
    tables stay in cache):
    ``q_single[w, m]`` and ``q_within[w, m, m]`` of each week, ``q_across[w - 1, m, m]`` of
    each transition (weeks j, j + 1). Equal to ``empirical_statistics`` of ``sets[:, j:j+1]``
    (and, for ``q_across``, of ``sets[:, j:j+2]``), which counted each week up to three times.
    """
    n, w, single, within, across = _counted(sets, m, per_week=True)
    return single / n, within / n, across[:w - 1] / n


@dataclass(frozen=True)
class CalibrationRow:
    """One published value next to the generated one."""

    target: Target
    generated: float

    @property
    def name(self) -> str:
        return self.target.name

    @property
    def published(self) -> float:
        return self.target.value

    @property
    def rel_error(self) -> float:
        return (self.generated - self.target.value) / self.target.value

    @property
    def ok(self) -> bool:
        return abs(self.rel_error) <= self.target.tolerance


@dataclass(frozen=True)
class CalibrationTable:
    """All calibration rows plus the share of padded user-weeks (if the sets recorded it)."""

    rows: list[CalibrationRow]
    padded_share: float | None
    n_users: int
    n_weeks: int

    @property
    def all_ok(self) -> bool:
        return all(r.ok for r in self.rows)

    def failures(self) -> list[CalibrationRow]:
        return [r for r in self.rows if not r.ok]

    def to_records(self) -> list[dict[str, object]]:
        """JSON-ready rows: name, kind, published, generated, relative_error, tolerance, ok."""
        return [
            {"name": r.name, "kind": r.target.kind, "published": r.published,
             "generated": r.generated, "relative_error": r.rel_error,
             "tolerance": r.target.tolerance, "within_tolerance": r.ok}
            for r in self.rows
        ]

    def to_text(self) -> str:
        """A fixed-width table (percent values; persistence as a ratio)."""
        lines = [f"{'statistic':<78} {'published':>9} {'generated':>9} {'rel.err':>8} "
                 f"{'tol':>5} ok"]
        for r in self.rows:
            pct = r.target.kind != "persistence"
            f = 100.0 if pct else 1.0
            lines.append(f"{r.name:<78} {r.published * f:9.3f} {r.generated * f:9.3f} "
                         f"{r.rel_error * 100:7.1f}% {r.target.tolerance * 100:4.0f}% "
                         f"{'yes' if r.ok else 'NO'}")
        ps = "n/a" if self.padded_share is None else f"{self.padded_share * 100:.1f}%"
        lines.append(f"users={self.n_users:,} weeks={self.n_weeks} padded user-weeks={ps} "
                     f"within tolerance: {sum(r.ok for r in self.rows)}/{len(self.rows)}")
        return "\n".join(lines)


def target_values(
    targets: list[Target],
    stats: tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.float64]],
    *,
    index_of: dict[int, int],
) -> npt.NDArray[np.float64]:
    """Generated values of ``targets`` from ``(q_single, q_within, q_across)``."""
    q1, q2, qa = stats
    out = np.empty(len(targets), dtype=np.float64)
    for i, t in enumerate(targets):
        d = [index_of[x] for x in t.ids]
        if t.kind == "single":
            out[i] = q1[d[0]]
        elif t.kind == "within":
            out[i] = q2[d[0], d[1]]
        elif t.kind == "across":
            out[i] = qa[d[0], d[1]]
        else:
            out[i] = qa[d[0], d[0]] / q1[d[0]] if q1[d[0]] > 0 else 0.0
    return out


def calibration_table(sets: TopicSets) -> CalibrationTable:
    """Published vs generated for the 30 published values and 5 persistence ratios."""
    if not isinstance(sets, TopicSets):  # an array failed on .taxonomy (AttributeError)
        raise TypeError(f"calibration_table takes TopicSets, got {type(sets).__name__}")
    tax = sets.taxonomy
    targets = published_targets(tax)
    if sets.n_weeks < 2:
        from topicslab._checks import refuse
        from topicslab.population.targets import ACROSS_WHY

        raise refuse(f"sets must hold at least 2 weeks, got {sets.n_weeks}", "sets", ACROSS_WHY)
    stats = empirical_statistics(sets)
    ids = sorted({x for t in targets for x in t.ids})
    index_of = {x: int(tax.index(x)) for x in ids}
    gen = target_values(targets, stats, index_of=index_of)
    ps = sets.metadata.get("padded_share")
    rows = [CalibrationRow(t, float(g)) for t, g in zip(targets, gen, strict=True)]
    return CalibrationTable(rows, None if ps is None else float(ps), sets.n_users,
                            sets.n_weeks)
