"""Data-dependent QIF tables on a population of top-s sets (Tables 2-4 analogues, App. C).

The secrets are users (uniform prior, privacy: Table 2) or their distinct profiles (the
data-dependent prior, utility: Tables 3-4). A *profile* is a user's top-s set in one epoch,
or the sequence of sets over several epochs. All quantities are computed from the distinct
profiles and their multiplicities, never from a users x outputs matrix.

Modelling choices (documented because the paper's data never has them):

* Sets may have fewer than s topics (empty slots ``-1``); a set with n topics reports each of
  them with probability ``(1-r)/n + r/m`` (eq 11 with s replaced by n).
* An epoch whose set is empty reports a distinguished "no topic" output (the API answers with
  an empty list), deterministically. Tuples of outputs are therefore partitioned by where the
  "no topic" outputs fall, and each part is served by exactly the users with that pattern.
* Several epochs compose in parallel (eq 30): the k outputs are drawn independently given the
  user's k sets. The value ``sum_t max_u w_u prod_i C_i[u, t_i]`` is computed exactly slice by
  slice over the topics that occur (all other topics are interchangeable; memory m^2, time
  proportional to the cells visited: ``product_channel``) when it visits at most
  ``max_cells`` cells (three epochs of the full taxonomy by default); otherwise only certified
  bounds are returned.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numba
import numpy as np
import numpy.typing as npt
from numba import njit, prange

from topicslab._checks import MAX_COUNT, integer, integer_array, is_integer, number
from topicslab._kernels import sort_head
from topicslab.datamodel import TopicSets, set_sizes
from topicslab.qif.errors import QIFError, QIFParameterError
from topicslab.qif.product_channel import ProductChannel, max_sums, topics_channel
from topicslab.qif.topics import (
    MAX_EPOCHS,
    MAX_TOPICS,
    check_params,
    generalisation_capacity,
    iba_theorem7_bounds,
    iba_tight_lower_bound,
    reporting_bayes_capacity,
)

#: the most digits of an exact count the tables hold (Python prints 4,300 at most)
_MAX_DIGITS = 4000

I16 = npt.NDArray[np.int16]
I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
Weeks = int | slice | list[int] | range | None

#: Default limit on the output cells a multi-epoch exact computation visits (time, not
#: memory: ~1e8 cells, three epochs of the v2 taxonomy, take seconds at 1M profiles; four
#: epochs, 4.8e10, take hours and get certified bounds unless the limit is raised).
MAX_CELLS = 500_000_000


@dataclass
class Profiles:
    """Distinct profiles of a population and how many users share each.

    Attributes:
        sets: ``int16[n_distinct, n_epochs, k]`` distinct profiles (rows sorted, ``-1`` empty).
        counts: ``int64[n_distinct]`` users per profile.
        inverse: ``int64[n_users]`` the profile of each user.
        m: taxonomy size.
    """

    sets: I16
    counts: I64
    inverse: I64
    m: int

    @property
    def n_users(self) -> int:
        return int(self.inverse.shape[0])

    @property
    def n_distinct(self) -> int:
        return int(self.counts.shape[0])

    @property
    def k_anonymity(self) -> int:
        """The least number of users sharing a profile (Sec. 3.2; ``C_G``'s k)."""
        return int(self.counts.min()) if self.n_distinct else 0

    @property
    def n_unique_users(self) -> int:
        """Users alone with their profile (re-identified by ``C_G``)."""
        return int((self.counts == 1).sum())

    def m_prime(self) -> int:
        """m': the number of distinct topics that occur (eqs 17-21)."""
        vals = self.sets[self.sets >= 0]
        return int(np.unique(vals).shape[0])


def _as_array(sets: TopicSets | npt.ArrayLike, m: int | None) -> tuple[I16, int]:
    if m is not None:  # ('3' and [3] were TypeErrors of a comparison, NaN int()'s ValueError)
        # (2**70: numba's TypingError "Int value is too large")
        m = integer(m, "m", at_least=1, at_most=MAX_TOPICS, error=QIFParameterError,
                    why="the taxonomy size")
    if isinstance(sets, TopicSets):
        if m is not None and m < sets.taxonomy.size:
            raise QIFParameterError(f"m must be at least the {sets.taxonomy.size} topics of the "
                                    f"data's taxonomy {sets.taxonomy.version}, got {m}",
                                    field="m")
        return sets.sets, int(sets.taxonomy.size if m is None else m)
    arr = integer_array(sets, "sets", error=QIFParameterError)  # (NaN was cast to a topic)
    if arr.ndim == 2:  # one epoch given as [n_users, k]
        arr = arr[:, None, :]
    if arr.ndim != 3:
        raise QIFError(f"topic sets must be [n_users, n_epochs, k], got shape {arr.shape}")
    if m is None:
        raise QIFError("m (the taxonomy size) is needed for a raw array of topic sets")
    return arr.astype(np.int16, copy=False), int(m)


def _epoch_list(n_weeks: int, weeks: Weeks) -> list[int]:
    if weeks is None:
        return list(range(n_weeks))
    if isinstance(weeks, slice):
        return list(range(n_weeks))[weeks]
    idx: list[Any]
    try:
        # (text is no list of weeks: b'3' was read as week 51, its byte)
        given: Any = weeks
        idx = [given] if isinstance(given, int | np.integer | str | bytes) else list(given)
    except TypeError:  # weeks=1.5 was "'float' object is not iterable": refused below
        idx = [weeks]
    if not idx:
        raise QIFParameterError("no epoch selected", field="weeks")
    for w in idx:
        # True was week 1; a NumPy integer was "not iterable"
        if not is_integer(w):
            raise QIFParameterError(f"weeks must be week indices (integers), got {w!r}",
                                    field="weeks")
        if not -n_weeks <= int(w) < n_weeks:
            raise QIFParameterError(f"week {w} is out of range: the data has {n_weeks} weeks",
                                    field="weeks")
    out = [int(w) % n_weeks for w in idx]
    if len(set(out)) != len(out):  # (a week twice was a profile of two identical epochs)
        raise QIFParameterError(f"weeks {[int(w) for w in idx]} name a week twice; give each "
                                "week once", field="weeks")
    return out


def distinct_profiles(sets: TopicSets | npt.ArrayLike, *, m: int | None = None,
                      weeks: Weeks = None) -> Profiles:
    """Group users by profile (the set, or sequence of sets, in ``weeks``); vectorised.

    Each week's set is packed into one int64 (``bits`` per slot), so grouping sorts rows of
    one int64 per week (``_unique_rows``) even for millions of users.
    """
    raw, mm = _as_array(sets, m)
    idx = np.asarray(_epoch_list(raw.shape[1], weeks), dtype=np.int64)
    if raw.shape[0] == 0:
        raise QIFParameterError("the population is empty", field="sets")
    if len(idx) == 0:  # (NumPy's "need sequence of keys with len > 0 in lexsort")
        raise QIFParameterError(f"the topic sets hold no week (shape {tuple(raw.shape)}); "
                                "give sets of at least one week", field="sets")
    n, w, k = raw.shape[0], len(idx), raw.shape[2]
    bits = max(1, math.ceil(math.log2(mm + 1)))
    # one pass over the users on every core: each week's set canonical (``canonicalize_sets``)
    # and packed slot by slot (-1, empty, -> 0) into one int64. The NumPy passes (a sort of
    # the slots, the range test, a shift and an or per slot) took 5 s of the three-epoch
    # tables of 10M users on one core; an int64 copy of every slot at once was 2.4 GB
    pack = bits * k <= 63
    arr, codes, bad = _canonical_codes(raw, idx, mm, bits, pack)  # (any layout: no copy)
    if bad:
        raise QIFError(f"a topic index is outside [0, {mm})")
    if not pack:  # too wide to pack: fall back to row-wise unique on the raw slots
        codes = arr.reshape(n, w * k).astype(np.int64)
    # (one week too: the same groups as np.unique's stable sort, on every core)
    first, inverse, counts = _unique_rows(codes)
    return Profiles(arr[first], counts, inverse, mm)


@njit(cache=True, parallel=True)
def _canonical_codes(raw: I16, weeks: I64, m: int, bits: int,
                     pack: bool) -> tuple[I16, I64, bool]:
    """The weeks ``weeks`` of ``raw`` with each set sorted ascending, empty slots last
    (``canonicalize_sets``: a negative slot, or 32,767, is empty), the sets packed into
    codes (``bits`` per slot, empty -> 0; ``[0, 0]`` unless ``pack``), and whether a topic is
    ``m`` or more."""
    n, k = raw.shape[0], raw.shape[2]
    w = weeks.shape[0]
    big = np.int16(32767)
    arr = np.empty((n, w, k), dtype=np.int16)
    codes = np.zeros((n, w) if pack else (0, 0), dtype=np.int64)
    bad = np.zeros(n, dtype=np.bool_)
    for u in prange(n):
        for i in range(w):
            row = arr[u, i]
            for j in range(k):
                v = raw[u, weeks[i], j]
                row[j] = big if v < 0 else v
            sort_head(row, k)
            code = 0
            for j in range(k):
                v = row[j]
                if v == big:
                    v = -1
                    row[j] = -1
                elif v >= m:
                    bad[u] = True
                code = (code << bits) | (v + 1)
            if pack:
                codes[u, i] = code
    return arr, codes, bool(bad.any())


def _unique_rows(codes: I64) -> tuple[I64, I64, I64]:
    """``np.unique(codes, axis=0, return_index, return_inverse, return_counts)`` without its
    row-as-bytes sort: groups in lexicographic order of the rows (first column most
    significant), ``first`` each group's first occurrence.

    Rows are bucketed by the high bits of their first column (a stable counting sort), then
    every bucket is sorted on its own, on every core: a stable ``lexsort`` of all 10M rows
    of the three-week QIF table was 8.5 s on one core. Equal rows share a bucket and buckets
    follow the order of the first column, so the groups, their order and each group's first
    occurrence are those of the stable lexsort (tested against it)."""
    n = codes.shape[0]
    if n == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    codes = np.ascontiguousarray(codes, dtype=np.int64)
    lo, hi = int(codes[:, 0].min()), int(codes[:, 0].max())
    if hi - lo >= 2**63:  # (the kernel's key - lo would wrap; not reached by packed sets)
        return _lexsort_unique_rows(codes)
    shift = max(0, (hi - lo).bit_length() - _BUCKET_BITS)
    n_buckets = ((hi - lo) >> shift) + 1
    chunks = max(1, min(n // 4096 + 1, 4 * numba.get_num_threads()))
    perm, start = _bucket_rows(codes, lo, shift, n_buckets, chunks)
    groups = _sort_buckets(codes, perm, start)
    base = np.zeros(n_buckets + 1, dtype=np.int64)
    np.cumsum(groups, out=base[1:])
    return _group_rows(codes, perm, start, base)


def _lexsort_unique_rows(codes: I64) -> tuple[I64, I64, I64]:
    """``_unique_rows`` by one stable ``lexsort`` of the columns (one core)."""
    order = np.lexsort(codes.T[::-1])
    srt = codes[order]
    starts = np.ones(len(order), dtype=bool)
    starts[1:] = (srt[1:] != srt[:-1]).any(axis=1)
    inverse = np.empty(len(order), dtype=np.int64)
    inverse[order] = np.cumsum(starts) - 1
    first = order[starts]
    counts = np.diff(np.append(np.flatnonzero(starts), len(order)))
    return first.astype(np.int64), inverse, counts.astype(np.int64)


#: a first column's high bits that pick its bucket (65,536 buckets at most)
_BUCKET_BITS = 16


@njit(cache=True, parallel=True)
def _bucket_rows(codes: I64, lo: int, shift: int, n_buckets: int,
                 chunks: int) -> tuple[I64, I64]:
    """Row indices by bucket ``(codes[u, 0] - lo) >> shift``, each bucket's in increasing
    order (chunks of rows count and place their own, in order), and the buckets' starts."""
    n = codes.shape[0]
    per = (n + chunks - 1) // chunks
    counts = np.zeros((chunks, n_buckets), dtype=np.int64)
    for c in prange(chunks):
        for u in range(c * per, min(n, (c + 1) * per)):
            counts[c, (codes[u, 0] - lo) >> shift] += 1
    start = np.empty(n_buckets + 1, dtype=np.int64)
    at = np.empty((chunks, n_buckets), dtype=np.int64)
    pos = 0
    for b in range(n_buckets):
        start[b] = pos
        for c in range(chunks):
            at[c, b] = pos
            pos += counts[c, b]
    start[n_buckets] = pos
    perm = np.empty(n, dtype=np.int64)
    for c in prange(chunks):
        for u in range(c * per, min(n, (c + 1) * per)):
            b = (codes[u, 0] - lo) >> shift
            perm[at[c, b]] = u
            at[c, b] += 1
    return perm, start


@njit(cache=True)
def _row_less(codes: I64, a: int, b: int) -> bool:
    """Row ``a`` before row ``b``: lexicographically, then by index (a stable sort's order)."""
    for j in range(codes.shape[1]):
        if codes[a, j] != codes[b, j]:
            return codes[a, j] < codes[b, j]
    return a < b


@njit(cache=True)
def _same_row(codes: I64, a: int, b: int) -> bool:
    for j in range(codes.shape[1]):
        if codes[a, j] != codes[b, j]:
            return False
    return True


@njit(cache=True, parallel=True)
def _sort_buckets(codes: I64, perm: I64, start: I64) -> I64:
    """Sort each bucket's rows in place (lexicographic, ties by index); its number of
    distinct rows. Buckets are visited in a stride order, so that the cores' contiguous
    shares of the loop mix full and empty buckets."""
    n_buckets = start.shape[0] - 1
    groups = np.zeros(n_buckets, dtype=np.int64)
    size = 1
    while size < n_buckets:
        size *= 2
    for j in prange(size):
        b = (j * 40503) & (size - 1)  # (odd: a permutation of 0..size-1)
        if b >= n_buckets:
            continue
        lo, hi = start[b], start[b + 1]
        m = hi - lo
        if m == 0:
            continue
        if m <= 32:
            for t in range(lo + 1, hi):
                u = perm[t]
                s = t - 1
                while s >= lo and _row_less(codes, u, perm[s]):
                    perm[s + 1] = perm[s]
                    s -= 1
                perm[s + 1] = u
        else:
            idx = perm[lo:hi].copy()
            keys = np.empty(m, dtype=np.int64)
            for col in range(codes.shape[1] - 1, -1, -1):  # least significant first, stable
                for t in range(m):
                    keys[t] = codes[idx[t], col]
                idx = idx[np.argsort(keys, kind="mergesort")]
            perm[lo:hi] = idx
        g = 1
        for t in range(lo + 1, hi):
            if not _same_row(codes, perm[t], perm[t - 1]):
                g += 1
        groups[b] = g
    return groups


@njit(cache=True, parallel=True)
def _group_rows(codes: I64, perm: I64, start: I64, base: I64) -> tuple[I64, I64, I64]:
    """``first``, ``inverse`` and ``counts`` of the sorted buckets (bucket b's groups are
    numbered from ``base[b]``)."""
    n_buckets = start.shape[0] - 1
    n_groups = base[n_buckets]
    first = np.empty(n_groups, dtype=np.int64)
    counts = np.zeros(n_groups, dtype=np.int64)
    inverse = np.empty(perm.shape[0], dtype=np.int64)
    for b in prange(n_buckets):
        g = base[b] - 1
        for t in range(start[b], start[b + 1]):
            u = perm[t]
            if t == start[b] or not _same_row(codes, u, perm[t - 1]):
                g += 1
                first[g] = u
            counts[g] += 1
            inverse[u] = g
    return first, inverse, counts


# --------------------------------------------------------------------------------------------
# sum_t max_u w_u prod_i C_i[u, t_i] for the reporting channel, by structure


@dataclass
class Value:
    """An exact value, or (when the exact computation is too large) certified bounds."""

    value: float | None
    lower: float
    upper: float

    @property
    def exact(self) -> bool:
        return self.value is not None


#: profiles per parallel work item of ``_best_per_topic`` (each keeps its own maxima)
_BEST_BLOCK = 1 << 16


@njit(cache=True, parallel=True)
def _best_per_topic(topics: I16, w: F64, one_minus_r: float, q: float, best: F64) -> None:
    """``best[t] = max(best[t], max_{u: t in sigma_u} w_u ((1 - r)/|sigma_u| + q))`` in one
    pass over the slots (the set sizes, masks, broadcasts and casts it replaces were ~40% of
    the QIF tables' time); each value is computed as the NumPy expression would be. Blocks of
    profiles in parallel, each into its own maxima, then the largest of them (a maximum is
    exact in any order: the same values)."""
    n, m = topics.shape[0], best.shape[0]
    n_blocks = (n + _BEST_BLOCK - 1) // _BEST_BLOCK
    parts = np.empty((n_blocks, m))
    for b in prange(n_blocks):
        part = parts[b]
        part[:] = best
        for u in range(b * _BEST_BLOCK, min(n, (b + 1) * _BEST_BLOCK)):
            size = 0
            for j in range(topics.shape[1]):
                if topics[u, j] >= 0:
                    size += 1
            if size == 0:
                continue
            pv = w[u] * (one_minus_r / size + q)
            for j in range(topics.shape[1]):
                t = topics[u, j]
                if t >= 0 and pv > part[t]:
                    part[t] = pv
    for b in range(n_blocks):
        for t in range(m):
            if parts[b, t] > best[t]:
                best[t] = parts[b, t]


@njit(cache=True)
def _cooccurrence(topics: Any, extra: F64, m: int) -> F64:
    """``co[a, b] = Σ_{σ ∋ a, b} extra_σ`` (``a = b`` included), summed in the order of
    ``np.bincount`` over the flattened (set, i, j) pairs: the same floats, without the
    ``[n, k, k]`` temporaries."""
    co = np.zeros(m * m)
    n, k = topics.shape
    for u in range(n):
        e = extra[u]
        for i in range(k):
            a = topics[u, i]
            if a < 0:
                continue
            for j in range(k):
                b = topics[u, j]
                if b >= 0:
                    co[a * m + b] += e
    return co.reshape(m, m)


def _single_epoch_sum(topics: I16, w: F64, m: int, r: float) -> float:
    """``sum_t max_u w_u C[sigma_u, t]`` for non-empty sets (eqs 7, 11)."""
    q = r / m
    best = np.full(m, q * float(w.max()))  # a topic outside sigma_u still has probability q
    # (a position's strided view as it is: its contiguous copy, 28 per QIF section, was
    # 1.5 s of it at 10M users)
    _best_per_topic(np.asarray(topics), np.ascontiguousarray(w, dtype=np.float64),
                    1.0 - r, q, best)
    return float(best.sum())


def _nonempty_sums(sets: I16, configs: list[tuple[F64, float]], m: int,
                   max_cells: int) -> list[Value]:
    """``sum_{t in [m]^k} max_u w_u prod_i c(u, i, t_i)`` when no profile has an empty epoch.

    One value per ``(w, r)`` in ``configs``. With ``c = p_u,i`` on ``sigma_u^i`` and ``q``
    elsewhere and ``p > q``, the sum is computed exactly by ``ProductChannel`` (slices of the
    output space; topics that occur nowhere at a position merged into one index) when it
    visits at most ``max_cells`` table cells, else only the certified bounds.
    """
    k = sets.shape[1]
    results: list[Value] = []
    if k == 1:
        for w, r in configs:
            v = _single_epoch_sum(sets[:, 0, :], w, m, r)
            results.append(Value(v, v, v))
        return results
    sizes = (sets >= 0).sum(axis=2, dtype=np.int8)
    channels: list[ProductChannel] = []
    # eq 11's value of a held topic depends on the set's size only: one table of values per
    # r, indexed by the sizes (an int8 per profile and position; a float64 per r was 0.5 GB
    # at 10M users × 3 epochs). Entry 0 is never read (every set here holds a topic).
    rs = list(dict.fromkeys(r for _, r in configs))
    size_range = np.arange(sets.shape[2] + 1, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        cins = {r: (1.0 - r) / size_range + r / m for r in rs}
    caps_of: dict[float, list[float]] = {}  # (of r only: the weightings share them)
    for w, r in configs:
        # Bounds: fixing the best user for one position (the other positions' outputs sum to
        # 1 for that user) gives a lower bound; max of a product <= product of the maxima,
        # and sum_t max_u <= sum_u, give upper bounds.
        lower = max(_single_epoch_sum(sets[:, i, :], w, m, r) for i in range(k))
        if r not in caps_of:
            ones = np.ones_like(w)
            caps_of[r] = [_single_epoch_sum(sets[:, i, :], ones, m, r) for i in range(k)]
        caps = caps_of[r]
        upper = min(float(w.max()) * math.prod(caps), float(w.sum()))
        results.append(Value(None, lower, upper))
        # eq 11 per position with each set's own size; the configurations share the sets
        cin = cins[r]
        if not channels:
            channels.append(topics_channel(sets, m, cin, r / m, cin_codes=sizes))
        else:
            channels.append(replace(channels[0], cin=cin,
                                    beta=np.where(channels[0].mult > 0, r / m, 0.0)))
    if channels[0].cells > max_cells:
        return results
    values = max_sums([(ch, w) for ch, (w, _) in zip(channels, configs, strict=True)])
    return [Value(v, res.lower, res.upper) for v, res in zip(values, results, strict=True)]


def _profile_weights(weights: npt.ArrayLike, n: int) -> npt.NDArray[np.float64]:
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (n,) or not np.isfinite(w).all() or (w < 0).any():
        raise QIFParameterError(f"weights must be {n} finite non-negative numbers, one per "
                                f"distinct profile, got shape {w.shape}", field="weights")
    return w


def channel_sums(profiles: Profiles, configs: list[tuple[npt.ArrayLike, float]],
                 max_cells: int = MAX_CELLS) -> list[Value]:
    """:func:`channel_sum` for several ``(weights, r)`` at once (shared scatter indices)."""
    # (r = NaN gave NaN values, a weights vector of another length an IndexError, and
    # max_cells = -1 or 2.5 was taken as it came)
    n = profiles.sets.shape[0]
    cfg = [(_profile_weights(w, n), number(r, "r", lo=0.0, hi=1.0, error=QIFParameterError,
                                          why="r is the probability of a random topic"))
           for w, r in configs]
    max_cells = integer(max_cells, "max_cells", at_least=0, error=QIFParameterError)
    sets = profiles.sets
    empty: npt.NDArray[np.bool_] = np.asarray((sets < 0).all(axis=2))  # [n_distinct, k]
    # Group profiles by where their "no topic" epochs are: each group serves its own tuples.
    # (the pattern of empty epochs as bits, first epoch most significant: the same groups in
    # the same order as a row sort, by a 1-d unique)
    if empty.shape[1] <= 62:
        bits = np.left_shift(np.int64(1), np.arange(empty.shape[1] - 1, -1, -1, dtype=np.int64))
        _, inv = np.unique((empty.astype(np.int64) * bits).sum(axis=1), return_inverse=True)
    else:
        _, inv = np.unique(empty, axis=0, return_inverse=True)
    keys: I64 = np.asarray(inv, dtype=np.int64).ravel()
    value = [0.0] * len(cfg)
    lower = [0.0] * len(cfg)
    upper = [0.0] * len(cfg)
    exact = [True] * len(cfg)
    for key in np.unique(keys):
        sel: npt.NDArray[np.bool_] = np.asarray(keys == key)
        first = int(np.flatnonzero(sel)[0])
        pos = np.flatnonzero(np.logical_not(empty[first]))
        if pos.size == 0:  # only the all-"no topic" tuple, observed with probability 1
            parts = [Value(float(w[sel].max()), float(w[sel].max()), float(w[sel].max()))
                     for w, _ in cfg]
        else:
            whole = bool(sel.all())  # (one group: no copies of the sets and weights)
            part = sets if whole and pos.size == sets.shape[1] else sets[sel][:, pos, :]
            parts = _nonempty_sums(part, [(w if whole else w[sel], r) for w, r in cfg],
                                   profiles.m, max_cells)
        for i, res in enumerate(parts):
            lower[i] += res.lower
            upper[i] += res.upper
            if res.value is None:
                exact[i] = False
            else:
                value[i] += res.value
    return [Value(value[i] if exact[i] else None, lower[i], upper[i]) for i in range(len(cfg))]


def channel_sum(profiles: Profiles, weights: npt.ArrayLike, r: float,
                max_cells: int = MAX_CELLS) -> Value:
    """``sum_t max_u w_u prod_i C_i[u, t_i]`` over the k-epoch reporting channel ``C_BN(+)_rDP``.

    With ``w = 1`` per distinct profile this is the multiplicative Bayes leakage under the
    uniform prior on users (eqs 8, 21; duplicates share a row); with ``w = pi`` it is the
    posterior Bayes vulnerability (eq 7). ``r = 0`` gives ``C_BN``.
    """
    return channel_sums(profiles, [(weights, r)], max_cells)[0]


# --------------------------------------------------------------------------------------------
# IBA gain (eq 28) on one epoch


def iba_vulnerabilities(topics: npt.ArrayLike, weights: npt.ArrayLike, m: int,
                        r: float) -> tuple[float, float]:
    """Prior (Thm 4) and posterior IBA vulnerability for ``C_BN(+)_rDP`` on a prior over sets.

    ``topics`` is ``[n_sets, k]`` (non-empty sets, ``-1`` padding), ``weights`` their prior.
    Posterior: ``sum_t max_t' [q pi(t') + sum_{sigma ni t, t'} pi_sigma (p_sigma - q)]`` with
    ``pi(t') = sum_{sigma ni t'} pi_sigma``; the co-occurrence matrix is an m x m bincount.
    """
    # nothing was checked: a topic id >= m wrote past the co-occurrence matrix (a
    # segmentation fault), a topic twice in a set gave a vulnerability of 2, weights of
    # another length NumPy's broadcast ValueError, m = 0 a ZeroDivisionError
    m = integer(m, "m", at_least=1, at_most=MAX_TOPICS, error=QIFParameterError)
    r = number(r, "r", lo=0.0, hi=1.0, error=QIFParameterError,
               why="r is the probability of a random topic")
    tp = integer_array(topics, "topics", error=QIFParameterError)
    if tp.dtype not in (np.int16, np.int32, np.int64):
        tp = tp.astype(np.int64)
    # (a population's int16 sets stay int16: their int64 copy and its sorted copy were the
    # QIF section's peak, 0.6 GB at 10M users)
    if tp.ndim != 2:
        raise QIFParameterError(f"topics must be an [n_sets, k] array, got shape {tp.shape}",
                                field="topics")
    if ((tp < -1) | (tp >= m)).any():
        raise QIFParameterError(f"a topic index is outside [0, {m}) (-1 pads a set)",
                                field="topics")
    srt = np.sort(tp, axis=1)
    if ((srt[:, 1:] == srt[:, :-1]) & (srt[:, 1:] >= 0)).any():
        raise QIFParameterError("a set holds the same topic twice", field="topics")
    try:
        w = np.asarray(weights, dtype=np.float64)
    except (TypeError, ValueError):  # text, ragged lists
        w = np.array([np.nan])
    if w.shape != (tp.shape[0],) or not np.isfinite(w).all() or (w < 0).any():
        raise QIFParameterError(f"weights must be {tp.shape[0]} finite non-negative numbers, "
                                f"one per set, got shape {w.shape}", field="weights")
    from topicslab._resources import require_memory

    require_memory(8.0 * m * m, f"the IBA gain's co-occurrence matrix over m = {m:,} topics",
                   field="m")
    valid = tp >= 0
    n = valid.sum(axis=1)
    if (n == 0).any():
        raise QIFError("the IBA gain is defined on non-empty sets")
    q = r / m
    mass = np.bincount(tp[valid], weights=np.broadcast_to(w[:, None], tp.shape)[valid],
                       minlength=m)
    prior = float(mass.max())
    extra = w * ((1.0 - r) / n)  # p_sigma - q
    co = _cooccurrence(np.ascontiguousarray(tp), np.ascontiguousarray(extra), m)
    post = float((co + q * mass[None, :]).max(axis=1).sum())
    return prior, post


# --------------------------------------------------------------------------------------------
# Tables


@dataclass
class PopulationTables:
    """Tables 2-4 analogues for one epoch or a sequence of epochs.

    Table 2 (privacy, uniform prior on the N users, leakages = capacities where noted):
    ``leak_cookies`` (C_C = C_BH C_U, N), ``leak_generalisation`` (C_BH C_G, |Sigma|, eq 16),
    ``leak_bounded_noise`` (C_BH C_G C_BN, m'/s for full sets, eq 18), ``leak_topics``
    (C_T, r + m'(1-r)/s, eq 21).
    Table 3 (Bayes vulnerability): ``prior_users`` = 1/N for C_U and C_G (posteriors 1 and
    |Sigma|/N); ``prior_sets`` = max_sigma pi_sigma for C_BN and C_BN(+)DP (posteriors
    ``post_bounded_noise``, ``post_reporting``).
    The ``cap_*`` fields are the paper's capacities for full sets of size s; data with shorter
    sets (``min_set_size < s``) or empty epochs can exceed them (a set of n topics reports
    each with probability about 1/n; "no topic" is one more output). For several epochs they
    are Kronecker-product capacities (Theorem 2), which bound the sequence channel.
    Table 4 (IBA, one epoch only): prior (Thm 4), posteriors for C_BN (Thm 5) and C_BN(+)DP,
    the Theorem 7 bounds and the tighter lower bound.
    """

    epochs: list[int]
    m: int
    s: int
    r: float
    n_users: int
    n_profiles: int
    m_prime: int
    k_anonymity: int
    n_unique_users: int
    n_empty: int
    min_set_size: int
    # Table 2
    leak_cookies: int
    leak_generalisation: int
    leak_bounded_noise: float | None
    leak_topics: float | None
    # theoretical capacities (eqs 16, 18, 21; Kronecker bound for several epochs)
    cap_generalisation: int
    cap_bounded_noise: float
    cap_topics: float
    # Table 3
    prior_users: float
    post_cookies: float
    post_generalisation: float
    prior_sets: float
    post_bounded_noise: float | None
    post_reporting: float | None
    # Table 4 (single epoch)
    iba_prior: float | None = None
    iba_post_bounded_noise: float | None = None
    iba_post_reporting: float | None = None
    iba_thm7_lower: float | None = None
    iba_thm7_upper: float | None = None
    iba_tight_lower: float | None = None
    # bounds when a multi-epoch exact computation was too large
    bounds: dict[str, tuple[float, float]] = field(default_factory=dict)

    @property
    def bayes_leakage_reporting(self) -> float | None:
        """Multiplicative Bayes leakage of C_BN(+)DP on the set prior (eq 3; Sec. 5.4.2)."""
        return None if self.post_reporting is None else self.post_reporting / self.prior_sets

    @property
    def iba_leakage_reporting(self) -> float | None:
        """Multiplicative IBA leakage of C_BN(+)DP (eq 3; Sec. 5.4.2)."""
        if self.iba_post_reporting is None or not self.iba_prior:
            return None
        return self.iba_post_reporting / self.iba_prior

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["bayes_leakage_reporting"] = self.bayes_leakage_reporting
        d["iba_leakage_reporting"] = self.iba_leakage_reporting
        d["bounds"] = {k: list(v) for k, v in self.bounds.items()}
        return d


def tables_memory(n_users: int, m: int, n_epochs: int, slots: int,
                  max_cells: int = MAX_CELLS) -> float:
    """Bytes ``population_tables`` needs beyond the data, roughly and from above, to refuse up
    front what cannot fit: grouping the profiles (canonical sets, packed codes, the sort: ~16
    bytes a slot plus 96 a user); for one epoch the IBA vulnerabilities' m x m co-occurrence
    table (float64: the bincount, its reshaped sum with q·mass, the row maxima: three of
    them); for several the distinct profiles kept (~2 bytes a slot plus 24 a user) under the
    product channels (int32 sets and holder lists, the values of two r shared by the four
    configurations, ~10 bytes a slot plus 40 an epoch and 32 a user), and per thread two
    (m + 1)^2 slice tables. Measured at 10M users × 3 epochs × 5 slots: 1.92 GB traced
    against 3.79 GB estimated (benchmarks/RESULTS.md, 2026-11-26): an estimate from above,
    since a refusal of work that would fit costs less than a run killed for memory."""
    # (NaN or negative users gave an estimate of NaN or below zero: nothing refused)
    users, m, n_epochs, slots, _ = (  # (10**400 users: OverflowError, a float's)
        integer(v, name, at_least=lo, at_most=MAX_COUNT, error=QIFParameterError)
        for v, name, lo in ((n_users, "n_users", 0), (m, "m", 1), (n_epochs, "n_epochs", 1),
                            (slots, "slots", 1),
                            # (unused by the estimate, but not taken whatever it is: None, text
                            # or an object were accepted without a word)
                            (max_cells, "max_cells", 1)))
    n = float(users)
    grouping = n * (n_epochs * slots * 16 + 96)
    if n_epochs == 1:
        return grouping + 3 * 8.0 * m * m
    kept = n * (n_epochs * slots * 2 + 24)
    channels = n * n_epochs * (slots * 10 + 40) + 32 * n
    return max(grouping, kept + channels) + 2 * 8.0 * (m + 1) ** 2 * 64


def population_tables(sets: TopicSets | npt.ArrayLike, *, weeks: Weeks = 0,
                      r: float = 0.05, s: int | None = None, m: int | None = None,
                      max_cells: int = MAX_CELLS) -> PopulationTables:
    """Tables 2-4 analogues for the profiles in ``weeks`` (an int: one epoch).

    ``s`` defaults to the number of slots of the data and ``m`` to the taxonomy size; the
    channels use each set's actual size (see the module docstring).
    """
    raw, mm = _as_array(sets, m)
    epochs = _epoch_list(raw.shape[1], weeks)
    if len(epochs) > MAX_EPOCHS:
        # (200 weeks: (m / s)^200 was "OverflowError: (34, 'Numerical result out of range')",
        # exit 1, after the profiles were grouped)
        raise QIFParameterError(f"a profile of at most {MAX_EPOCHS} weeks, got {len(epochs)}: "
                                "its capacities, C(m, s)^weeks and (m / s)^weeks, pass a "
                                "float's range beyond; give fewer weeks", field="weeks")
    max_cells = integer(max_cells, "max_cells", at_least=0, error=QIFParameterError)
    prof = distinct_profiles(raw, m=mm, weeks=epochs)
    n_ep, slots = prof.sets.shape[1], prof.sets.shape[2]
    # ([3] was int()'s TypeError, NaN its ValueError, 2.7 was read as 2)
    ss = slots if s is None else integer(s, "s", at_least=1, error=QIFParameterError)
    check_params(mm, ss, r)
    widest = int(set_sizes(prof.sets).max()) if prof.sets.size else 0
    if ss < widest:
        # the capacities of top-s sets would bound a channel that answers from bigger sets
        raise QIFParameterError(f"s must be at least the {widest} topics of the data's widest "
                                f"week, got {ss}", field="s")
    n = prof.n_users
    counts = prof.counts.astype(np.float64)
    pi = counts / n
    ones = np.ones(prof.n_distinct)
    leak_bn, leak_t, post_bn, post_t = channel_sums(
        prof, [(ones, 0.0), (ones, r), (pi, 0.0), (pi, r)], max_cells)
    bounds = {name: (v.lower, v.upper) for name, v in
              (("leak_bounded_noise", leak_bn), ("leak_topics", leak_t),
               ("post_bounded_noise", post_bn), ("post_reporting", post_t)) if not v.exact}
    sizes = set_sizes(prof.sets)  # (not held through the channel sums, the peak)
    min_size = int(sizes[sizes > 0].min()) if (sizes > 0).any() else 0
    empty_users = int(counts[(sizes == 0).any(axis=1)].sum())
    sets_count = generalisation_capacity(mm, ss)
    digits = int(sets_count.bit_length() * n_ep * math.log10(2)) + 1
    if digits > _MAX_DIGITS:
        # (s = 234 over 40 weeks: C(469, 234)^40, an integer of ~5,600 digits, failed its
        # printing, "ValueError: Exceeds the limit (4300 digits) for integer string
        # conversion", exit 1)
        raise QIFParameterError(f"C(m, s)^weeks = C({mm}, {ss})^{n_ep} has about {digits:,} "
                                f"digits, past the {_MAX_DIGITS:,} an exact table can print; "
                                "give fewer weeks or a smaller s", field="weeks")
    tables = PopulationTables(
        epochs=epochs, m=mm, s=ss, r=float(r), n_users=n, n_profiles=prof.n_distinct,
        m_prime=prof.m_prime(), k_anonymity=prof.k_anonymity,
        n_unique_users=prof.n_unique_users, n_empty=empty_users, min_set_size=min_size,
        leak_cookies=n, leak_generalisation=prof.n_distinct,
        leak_bounded_noise=leak_bn.value, leak_topics=leak_t.value,
        cap_generalisation=sets_count ** n_ep,
        cap_bounded_noise=(mm / ss) ** n_ep,
        # Several epochs: rows are sequences of sets, a sub-matrix of the Kronecker power,
        # whose capacity is the product (Theorem 2).
        cap_topics=reporting_bayes_capacity(mm, ss, r) ** n_ep,
        prior_users=1.0 / n, post_cookies=1.0, post_generalisation=prof.n_distinct / n,
        prior_sets=float(pi.max()), post_bounded_noise=post_bn.value,
        post_reporting=post_t.value, bounds=bounds,
    )
    if n_ep == 1:
        nonempty = sizes[:, 0] > 0
        if nonempty.any():
            topics = prof.sets[nonempty, 0, :]
            w = counts[nonempty] / counts[nonempty].sum()
            prior, post = iba_vulnerabilities(topics, w, mm, r)
            _, post_bn_iba = iba_vulnerabilities(topics, w, mm, 0.0)
            lo, hi = iba_theorem7_bounds(r, prior)
            mean_size = float((sizes[nonempty, 0] * w).sum())
            tables.iba_prior = prior
            tables.iba_post_bounded_noise = post_bn_iba
            tables.iba_post_reporting = post
            tables.iba_thm7_lower = lo
            tables.iba_thm7_upper = hi
            tables.iba_tight_lower = iba_tight_lower_bound(mm, mean_size, r)
    return tables


__all__ = [
    "MAX_CELLS",
    "PopulationTables",
    "Profiles",
    "Value",
    "channel_sum",
    "channel_sums",
    "distinct_profiles",
    "iba_vulnerabilities",
    "population_tables",
    "tables_memory",
]
