"""The exact engine: match-set counts without comparing every (user, query) pair
(docs/design.md §Exact attack engine).

For a query trace ``o`` and every subset ``T`` of weeks let ``A(T)`` be the number of site-1
users agreeing with ``o`` on all weeks of ``T`` (``A(∅) = n``). The number of users whose match
set is *exactly* ``M`` follows by Möbius inversion over the subset lattice,

    N(M) = sum_{T ⊇ M} (-1)^{|T|-|M|} A(T),

and ``N`` is all any match-set attack needs (``outcomes.outcomes_from_counts``): the best score
over the match sets that occur, how many users reach it, and whether the true user does.

``A(T)`` is a group-by on the projected traces restricted to the keys the queries hold:

1. *build* — for every non-empty ``T`` a small open-addressing hash table of the distinct
   projections ``o|_T`` of the queries. Over a small alphabet a key is exact: ``v + 1`` packed
   in ``bits`` bits per week, for every ``T`` of up to ``63 // bits`` weeks (7 of the Topics
   API's 8: ``exact_key``). Otherwise it is the XOR of one random 64-bit word per (week,
   category) (tabulation hashing), and every hit is verified against a representative
   query, so a hash collision can never be miscounted.
2. *scan* — one parallel pass over the site-1 users (numba ``prange``, one user slice and one
   set of counters per thread: no atomics), in blocks of users, subset by subset in order of
   size. A user's "hit" subsets (those ``T`` whose projection equals some query's) are closed
   under taking subsets, so the candidates for ``T`` are the AND of the hit bitsets of T's
   subsets missing one week (Apriori pruning, 64 users per word): a user probes a few dozen
   tables instead of ``2^r - 1``, and each table stays in cache while it is probed.
   With a small alphabet (the Topics API's 469 topics) the singletons and pairs of weeks —
   36 of a user's ~46 probes at r = 8 — read their slot from dense arrays indexed by the
   categories themselves (one load, no hash, nothing to verify), and the per-week words come
   from a table of the alphabet, so a block holds 2^19 users instead of 2^16 and every
   table is read 8x less often: 1.9x less work at r = 8 (benchmarks/RESULTS.md). A probe's
   outcome is counted without a branch (``_count_hit``): whether a user holds some query's
   projection is a coin toss to the branch predictor.
3. *reduce* — per query, ``A(T)`` is the sum over threads of the counter of its key, then the
   Möbius transform gives ``N``.

Work is ``O(n · hits + Q · 2^r)`` instead of ``O(n · Q · r)``. Queries are processed in chunks
so the tables stay small (``chunk · 2^r`` bounded); each chunk is one scan over site 1.

Public names:
    MatchSetCounter(site1)        website 1 prepared once; ``.counts(queries)`` per batch
    match_set_counts(site1, queries, *, query_chunk=None, progress=False) -> int64[Q, 2^r]
    argmax_members(site1, queries, counts, scores) -> (query, user) pairs of the argmax sets
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
import numpy.typing as npt
from numba import njit, prange
from numba.cpython.unsafe.numbers import trailing_zeros

from topicslab._checks import flag, integer
from topicslab._kernels import popcount
from topicslab._progress import task
from topicslab.attacks.scoring import MAX_WEEKS
from topicslab.errors import ParameterError

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_TOP = np.uint64(1) << np.uint64(63)
_ONE = np.uint64(1)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S29 = np.uint64(29)
_S31 = np.uint64(31)

#: ``chunk · 2^r`` (hash-table slots ~ 2-4x that, one int32 counter per slot and thread) is
#: kept below ``_CHUNK_CELLS_ALL_THREADS / threads``, within ``_CHUNK_CELLS_MIN`` and
#: ``_CHUNK_CELLS_MAX``: the per-thread counters then stay ~0.4 GB in all on machines with many
#: threads. Larger chunks mean fewer scans of website 1 but tables that leave the caches:
#: at 1M users, r = 4 on 2 threads, 2^22, 2^23 and 2^24 cells took the same time within the
#: noise (3.6-5.4 s per risk curve, quiet machine) and 2^24 cost +0.5 GB, so 2^22 stays.
_CHUNK_CELLS_ALL_THREADS = 1 << 25
_CHUNK_CELLS_MIN = 1 << 20
_CHUNK_CELLS_MAX = 1 << 22


def chunk_cells(threads: int | None = None) -> int:
    """Cells (``queries · 2^r``) of one scan's tables for ``threads`` numba threads."""
    t = max(1, numba.get_num_threads() if threads is None else int(threads))
    return min(_CHUNK_CELLS_MAX, max(_CHUNK_CELLS_MIN, _CHUNK_CELLS_ALL_THREADS // t))


@njit(cache=True, inline="always")
def _zval(w, v):
    """Random 64-bit word of category ``v`` in week ``w``. The key of a projection ``o|_T`` is
    the XOR of its words (tabulation hashing: one load and one XOR per week in the scan)."""
    z = (np.uint64(v + 1) * _GOLDEN) ^ (np.uint64(w + 1) * _M2)
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


@njit(cache=True, inline="always")
def high_bit(t):
    """Index of the highest set bit of ``t > 0``: a subset is built from its *parent*
    ``t ^ (1 << high_bit(t))``, a smaller number, so ascending ``t`` meets parents first."""
    hb = 0
    x = t >> 1
    while x:
        hb += 1
        x >>= 1
    return hb


@njit(cache=True, inline="always")
def exact_key(k, bits):
    """Whether a subset of ``k`` weeks has *exact* keys: ``v + 1`` packed in ``bits`` bits per
    week, in ascending week order (``bits > 0`` and ``bits · k <= 63``). Equal exact keys
    are equal projections, so a hit needs no check against a representative query; over the
    Topics API's 469 topics (9 bits) every subset of up to 7 weeks has them."""
    return bits > 0 and bits * k <= 63


@njit(cache=True, inline="always")
def _home(h, mask):
    """Home slot of key ``h`` in a table of ``mask + 1`` slots: exact keys are not uniform
    (their low bits are the first week's value), so they are mixed first."""
    z = (h ^ (h >> _S31)) * _M1
    return (z ^ (z >> _S29)) & mask


@njit(cache=True, parallel=True)
def _query_hashes(queries: np.ndarray, out: np.ndarray, bits: np.int64) -> None:
    """``out[q, T]`` = key of ``queries[q]`` projected on ``T`` (0: a week of T is missing):
    exact (``exact_key``) where ``bits`` allows, else the XOR of per-(week, value) words.

    Keys carry the top bit (so 0 can mark an empty slot); ``_home`` gives their slot.
    """
    n_q, r = queries.shape
    n_sets = out.shape[1]
    for q in prange(n_q):
        xs = np.zeros(n_sets, dtype=np.uint64)
        packed = np.zeros(n_sets, dtype=np.uint64)
        size = np.zeros(n_sets, dtype=np.int64)
        ok = np.zeros(n_sets, dtype=np.bool_)
        ok[0] = True
        out[q, 0] = _TOP
        for t in range(1, n_sets):
            hb = high_bit(t)
            parent = t ^ (1 << hb)
            v = np.int64(queries[q, hb])
            size[t] = size[parent] + 1
            if ok[parent] and v >= 0:
                ok[t] = True
                xs[t] = xs[parent] ^ _zval(hb, v)
                if exact_key(size[t], bits):  # (then so is its parent's)
                    # the new week is t's highest: it takes the last position
                    packed[t] = packed[parent] | (np.uint64(v + 1)
                                                  << np.uint64(bits * (size[t] - 1)))
                    out[q, t] = packed[t] | _TOP
                else:
                    out[q, t] = xs[t] | _TOP
            else:
                out[q, t] = 0
        _ = r


@njit(cache=True, inline="always")
def _same_on(queries, q0, row, t, r):
    for w in range(r):
        if (t >> w) & 1 and queries[q0, w] != row[w]:
            return False
    return True


@njit(cache=True, parallel=True)
def _build(queries: np.ndarray, qh: np.ndarray, scratch_slots: np.int64,
           sizes: np.ndarray, bits: np.int64) -> None:
    """Number of distinct projections per subset (sizes the final tables); subsets in
    parallel, each with its own scratch table."""
    n_q, r = queries.shape
    n_sets = qh.shape[1]
    smask = np.uint64(scratch_slots - 1)
    for t in prange(1, n_sets):
        exact = exact_key(popcount(np.uint64(t)), bits)
        scratch_h = np.zeros(scratch_slots, dtype=np.uint64)
        scratch_q = np.zeros(scratch_slots, dtype=np.int64)
        distinct = 0
        for q in range(n_q):
            h = qh[q, t]
            if h == 0:
                continue
            i = _home(h, smask)
            while True:
                hv = scratch_h[i]
                if hv == 0:
                    scratch_h[i] = h
                    scratch_q[i] = q
                    distinct += 1
                    break
                if hv == h and (exact or _same_on(queries, scratch_q[i], queries[q], t, r)):
                    break
                i = (i + _ONE) & smask
        size = 1
        while size < 2 * distinct:
            size <<= 1
        sizes[t] = size


@njit(cache=True, parallel=True)
def _fill(queries: np.ndarray, qh: np.ndarray, offsets: np.ndarray, tab: np.ndarray,
          qslot: np.ndarray, bits: np.int64) -> None:
    """Each subset's table (its own slice of ``tab`` and column of ``qslot``: subsets in
    parallel)."""
    n_q, r = queries.shape
    n_sets = qh.shape[1]
    for t in prange(1, n_sets):
        exact = exact_key(popcount(np.uint64(t)), bits)
        off = offsets[t]
        slots = offsets[t + 1] - off
        msk = np.uint64(slots - 1)
        for q in range(n_q):
            h = qh[q, t]
            if h == 0:
                qslot[q, t] = -1
                continue
            i = _home(h, msk)
            while True:
                hv = tab[0, off + i]
                if hv == 0:
                    tab[0, off + i] = h
                    tab[1, off + i] = np.uint64(q)
                    qslot[q, t] = off + np.int64(i)
                    break
                if hv == h and (exact or _same_on(queries, np.int64(tab[1, off + i]), queries[q],
                                                  t, r)):
                    qslot[q, t] = off + np.int64(i)
                    break
                i = (i + _ONE) & msk


@njit(cache=True, inline="always")
def _probe(queries, columns, idx, t, h, off, slots, tab, r, exact):
    """Slot of user ``idx``'s key on T in T's table, or -1 (verified unless the key is
    ``exact``: no false hit)."""
    msk = np.uint64(slots - 1)
    i = _home(h, msk)
    while True:
        hv = tab[0, off + i]
        if hv == 0:
            return np.int64(-1)
        if hv == h:
            if exact:
                return off + np.int64(i)
            q0 = np.int64(tab[1, off + i])
            same = True
            for w in range(r):
                if (t >> w) & 1 and queries[q0, w] != columns[w, idx]:
                    same = False
                    break
            if same:
                return off + np.int64(i)
        i = (i + _ONE) & msk


@njit(cache=True, inline="always")
def _count_hit(cnt, found, hits, u):
    """Count a probe's slot ``found`` (-1: no query holds the key) and set user ``u``'s bit of
    the word ``hits``, without a branch on the outcome: whether a user's key is some query's is
    a coin toss the branch predictor loses (the pairs of weeks took 40% less time so)."""
    hit = np.int64(found >= 0)
    cnt[max(found, 0)] += hit  # (a miss adds 0 to slot 0)
    return hits | (np.uint64(hit) << np.uint64(u & 63))


@njit(cache=True, parallel=True)
def _scan(columns: np.ndarray, queries: np.ndarray, offsets: np.ndarray, tab: np.ndarray,
          counts: np.ndarray, level_sets: np.ndarray, level_start: np.ndarray,
          rank: np.ndarray, block_users: np.int64, single: np.ndarray, pairs: np.ndarray,
          n_values: np.int64, bits: np.int64) -> None:
    """Count, per table slot, the site-1 users whose projection equals the slot's key.

    ``columns`` is site 1 week-major (``[r, n]``). Each thread owns a slice of users, cut into
    blocks; per block the subsets are processed level by level (``|T| = 1, 2, ...``) and, within
    a level, one subset at a time: the candidate users of ``T`` are the bitwise AND of the hit
    bitsets of the subsets of T missing one week (Apriori: a user agreeing with some query on T
    agrees with it on every subset), and only they compute their key (XOR of per-week words,
    computed once per block) and probe T's table, which stays in cache while it is probed.
    Only two levels of bitsets are kept.

    With a small alphabet (``n_values > 0``) the singletons and pairs of weeks, nearly all
    of a user's probes (8 + 28 of ~46 at r = 8), read their slot from dense arrays instead:
    ``single[w, v]`` and ``pairs[rank[T], v1·n_values + v2]`` (v1 in T's lower week), ``-1``
    where no query holds the key: one load, no hash, no verification (``_direct_slots``).
    """
    r, n = columns.shape
    n_threads = counts.shape[0]
    per = (n + n_threads - 1) // n_threads
    words = block_users >> 6
    widest = 0
    for k in range(1, r + 1):
        widest = max(widest, level_start[k + 1] - level_start[k])
    for b in prange(n_threads):
        cnt = counts[b]
        prev = np.zeros((widest, words), dtype=np.uint64)
        cur = np.zeros((widest, words), dtype=np.uint64)
        # a user's per-week words: from the alphabet's table, else computed once per block
        zb = np.zeros((r, 1 if n_values else block_users), dtype=np.uint64)
        zv = np.zeros((r, n_values), dtype=np.uint64)
        for w in range(r):
            for cat in range(n_values):
                zv[w, cat] = _zval(w, cat)
        lo = b * per
        hi = min(n, lo + per)
        for start in range(lo, hi, block_users):
            size = min(hi, start + block_users) - start
            n_words = (size + 63) >> 6
            # level 1: every present week probes its singleton table
            any_hit = False
            for w in range(r):
                t = np.int64(1) << w
                off = offsets[t]
                slots = offsets[t + 1] - off
                col = rank[t]
                hits = np.uint64(0)
                for u in range(size):
                    v = np.int64(columns[w, start + u])
                    if n_values:
                        found = np.int64(single[w, v]) if v >= 0 else np.int64(-1)
                    elif v >= 0:
                        z = _zval(w, v)
                        zb[w, u] = z
                        found = _probe(queries, columns, start + u, t, z | _TOP, off, slots,
                                       tab, r, False)
                    else:
                        found = np.int64(-1)
                    hits = _count_hit(cnt, found, hits, u)
                    if (u & 63) == 63 or u == size - 1:
                        cur[col, u >> 6] = hits
                        any_hit = any_hit or hits != 0
                        hits = np.uint64(0)
            for k in range(2, r + 1):
                if not any_hit:
                    break
                prev, cur = cur, prev
                any_hit = False
                for idx in range(level_start[k], level_start[k + 1]):
                    t = level_sets[idx]
                    exact = exact_key(k, bits)
                    col = rank[t]
                    off = offsets[t]
                    slots = offsets[t + 1] - off
                    for j in range(n_words):
                        c = ~np.uint64(0)
                        rest = t
                        while rest and c:
                            low = rest & -rest
                            c &= prev[rank[t ^ low], j]
                            rest ^= low
                        hits = np.uint64(0)
                        while c:
                            u = (j << 6) + int(trailing_zeros(c))  # type: ignore[call-arg]
                            c &= c - _ONE
                            if k == 2 and n_values:
                                w1 = int(trailing_zeros(np.uint64(t)))
                                w2 = int(trailing_zeros(np.uint64(t ^ (1 << w1))))
                                v12 = (np.int64(columns[w1, start + u]) * n_values
                                       + np.int64(columns[w2, start + u]))
                                hits = _count_hit(cnt, np.int64(pairs[col, v12]), hits, u)
                                continue
                            h = np.uint64(0)
                            rest = t
                            if exact:
                                shift = np.uint64(0)
                                while rest:
                                    w = int(trailing_zeros(np.uint64(rest)))
                                    rest &= rest - 1
                                    h |= np.uint64(np.int64(columns[w, start + u]) + 1) << shift
                                    shift += np.uint64(bits)
                            else:
                                while rest:
                                    w = int(trailing_zeros(np.uint64(rest)))
                                    rest &= rest - 1
                                    h ^= (zv[w, np.int64(columns[w, start + u])] if n_values
                                          else zb[w, u])
                            h |= _TOP
                            found = _probe(queries, columns, start + u, t, h, off, slots, tab,
                                           r, exact)
                            hits = _count_hit(cnt, found, hits, u)
                        cur[col, j] = hits
                        any_hit = any_hit or hits != 0


@njit(cache=True)
def _direct_slots(queries: np.ndarray, qslot: np.ndarray, rank: np.ndarray,
                  single: np.ndarray, pairs: np.ndarray, n_values: np.int64) -> None:
    """The dense slot arrays of the singletons and pairs of weeks (``_scan``), from the
    queries' slots in the hash tables: the same slot either way, so the counts are too."""
    n_q, r = queries.shape
    for q in range(n_q):
        for w in range(r):
            sl = qslot[q, np.int64(1) << w]
            if sl >= 0:
                single[w, np.int64(queries[q, w])] = sl
            for w2 in range(w + 1, r):
                t = (np.int64(1) << w) | (np.int64(1) << w2)
                sl = qslot[q, t]
                if sl >= 0:
                    pairs[rank[t], np.int64(queries[q, w]) * n_values
                          + np.int64(queries[q, w2])] = sl


@njit(cache=True, parallel=True)
def _reduce_moebius(counts: np.ndarray, qslot: np.ndarray, n_users: np.int64, r: np.int64,
                    out: np.ndarray) -> None:
    n_q, n_sets = qslot.shape
    n_blocks = counts.shape[0]
    for q in prange(n_q):
        a = out[q]
        a[0] = n_users
        for t in range(1, n_sets):
            sl = qslot[q, t]
            total = 0
            if sl >= 0:
                for b in range(n_blocks):
                    total += counts[b, sl]
            a[t] = total
        # superset Möbius inversion: A(T) -> N(M) (number with exactly match set M)
        for w in range(r):
            bit = 1 << w
            for t in range(n_sets):
                if not t & bit:
                    a[t] -= a[t | bit]


def _levels(r: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64],
                             npt.NDArray[np.int64]]:
    """Non-empty subsets of ``r`` weeks grouped by size: ``level_sets[level_start[k]:
    level_start[k + 1]]`` are the subsets of size k (ascending); ``rank[T]`` = position of T
    within its level (its bitset row)."""
    sets = np.arange(1, 1 << r, dtype=np.int64)
    size = np.array([bin(int(t)).count("1") for t in sets], dtype=np.int64)
    order = np.lexsort((sets, size))
    level_sets = sets[order]
    level_start = np.zeros(r + 2, dtype=np.int64)
    level_start[1:] = np.searchsorted(size[order], np.arange(1, r + 2), side="left")
    rank = np.zeros(1 << r, dtype=np.int64)
    rank[level_sets] = np.arange(level_sets.size) - level_start[size[order]]
    return level_sets, level_start, rank


def _traces(value: npt.ArrayLike, name: str) -> npt.NDArray[Any]:
    """``value`` as a 2-D array of traces, integers in the machine's byte order: a number was
    NumPy's IndexError ("too many indices for array: array is 0-dimensional"), a big-endian
    array (``>i2``) numba's "TypingError: non-precise type pyobject"."""
    arr = np.asarray(value)
    if arr.ndim != 2:
        # a ParameterError (an InputError, and the ValueError it was): a plain ValueError
        # named the argument in its text only, and the CLI showed it as an internal failure
        raise ParameterError(f"{name} must be a 2-D [rows, weeks] array of traces, got shape "
                             f"{arr.shape}", field=name)
    if arr.dtype.kind in "iu" and not arr.dtype.isnative:
        arr = arr.astype(arr.dtype.newbyteorder("="))
    return arr


def _check(site1: npt.NDArray[np.integer], queries: npt.NDArray[np.integer],
           *, values: bool = True) -> None:
    # ParameterErrors naming the argument (InputErrors, and the ValueErrors they were)
    if site1.ndim != 2 or queries.ndim != 2:
        raise ParameterError("site1 and queries must be 2-D [rows, weeks] arrays",
                             field="site1" if site1.ndim != 2 else "queries")
    if site1.shape[1] != queries.shape[1]:
        raise ParameterError(f"site1 has {site1.shape[1]} weeks but queries have "
                             f"{queries.shape[1]}", field="queries")
    if not 1 <= site1.shape[1] <= MAX_WEEKS:
        raise ParameterError(f"traces must have 1..{MAX_WEEKS} weeks, got {site1.shape[1]}",
                             field="site1")
    for name, arr in (("site1", site1), ("queries", queries)):
        if name == "site1" and not values:
            continue
        # (durations are integers to NumPy: int() of their minimum failed, "int() argument
        # must be ... not 'datetime.timedelta'")
        if not np.issubdtype(arr.dtype, np.integer) or arr.dtype.kind == "m":
            raise ParameterError(f"{name} must hold integer categories, got {arr.dtype}",
                                 field=name)
        if arr.size and arr.min() < -1:
            raise ParameterError(f"{name} must hold categories >= 0 (or -1 for missing)",
                                 field=name)
    if site1.shape[0] >= 2**31:
        raise ParameterError("at most 2^31 - 1 site-1 users are supported", field="site1")


#: the singletons' and pairs' dense slot arrays (``_scan``) are used while they take at most
#: this many bytes (``C(r, 2) · n_values² · 4``): 24.6 MB for the v2 taxonomy's 469 topics at
#: r = 8 (0.9 MB a pair, processed one pair at a time per block of users, so in cache)
_DIRECT_BYTES = 64 << 20


def _direct_values(r: int, top: int) -> int:
    """``n_values`` of the dense arrays for categories ``0..top`` (0: hash tables only)."""
    n_values = top + 1
    pairs = r * (r - 1) // 2
    fits = n_values > 0 and 4 * max(pairs, 1) * n_values * n_values <= _DIRECT_BYTES
    return n_values if fits else 0


def _chunk_counts(columns: npt.NDArray[np.integer], queries: npt.NDArray[np.integer],
                  top: int = -1) -> npt.NDArray[np.int64]:
    """Match-set counts of one chunk of queries; ``top``: the largest category of
    ``columns`` (-1: unknown, then the hash tables serve every probe)."""
    r, n = columns.shape
    n_q = queries.shape[0]
    n_sets = 1 << r
    n_values = _direct_values(r, max(top, int(queries.max(initial=-1)))) if n and top >= 0 else 0
    # exact keys over the alphabet's values (``exact_key``): the scan then verifies no hit
    # of up to 63 // bits weeks against a query (values v + 1 in 1..n_values)
    bits = int(n_values).bit_length() if n_values else 0
    qh = np.empty((n_q, n_sets), dtype=np.uint64)
    _query_hashes(queries, qh, np.int64(bits))
    scratch = 1
    while scratch < 2 * max(n_q, 1):
        scratch <<= 1
    sizes = np.ones(n_sets, dtype=np.int64)
    sizes[0] = 0  # T = ∅ needs no table (A(∅) = n)
    _build(queries, qh, np.int64(scratch), sizes, np.int64(bits))
    offsets = np.zeros(n_sets + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    total = int(offsets[-1])
    tab = np.zeros((2, total), dtype=np.uint64)  # keys, then representatives
    qslot = np.full((n_q, n_sets), -1, dtype=np.int64)
    _fill(queries, qh, offsets, tab, qslot, np.int64(bits))
    n_threads = max(1, min(numba.get_num_threads(), n))
    counts = np.zeros((n_threads, total), dtype=np.int32)
    if n:
        level_sets, level_start, rank = _levels(r)
        widest = int(np.diff(level_start[1:]).max())
        # two levels of per-subset hit bitsets of a block of users stay within ~32 MB. A
        # block reads every subset's table once, so larger blocks read them fewer times:
        # 2^19 users instead of 2^16 took 1.32 s instead of 1.88 s of one core (2M users,
        # r = 8, 10,240 queries; benchmarks/RESULTS.md). Without the alphabet's table the
        # per-week words are kept per user (8 bytes per user and week), so blocks stay small
        cap = 1 << (19 if n_values else 16)
        block_users = max(64, min(cap, ((1 << 27) // widest) >> 6 << 6))
        single = np.full((r, n_values), -1, dtype=np.int32)
        pairs = np.full((r * (r - 1) // 2 if n_values else 0, n_values * n_values), -1,
                        dtype=np.int32)
        if n_values:
            _direct_slots(queries, qslot, rank, single, pairs, np.int64(n_values))
        _scan(columns, queries, offsets, tab, counts, level_sets, level_start, rank,
              np.int64(block_users), single, pairs, np.int64(n_values), np.int64(bits))
    out = np.empty((n_q, n_sets), dtype=np.int64)
    _reduce_moebius(counts, qslot, np.int64(n), np.int64(r), out)
    return out


class MatchSetCounter:
    """Website 1's table prepared for counting (week-major copy); reuse it across chunks.

    Args:
        site1: ``[n, r]`` integer traces of website 1 (any categorical alphabet; ``-1`` =
            missing, never matches).
    """

    def __init__(self, site1: npt.ArrayLike) -> None:
        s1 = _traces(site1, "site1")
        _check(s1, s1[:0])
        self.n_users, self.n_weeks = (int(x) for x in s1.shape)
        self._columns = np.ascontiguousarray(s1.T)  # week-major: a subset reads its weeks
        #: the largest category (the dense slot arrays' width, ``_direct_values``)
        self._top = int(s1.max(initial=-1))
        #: default queries per scan: keeps ``chunk · 2^r`` (tables, counts) bounded
        self.chunk = max(1, chunk_cells() >> self.n_weeks)

    def counts(self, queries: npt.ArrayLike) -> npt.NDArray[np.int64]:
        """Match-set counts of one batch of queries (one scan over website 1)."""
        qs = _traces(queries, "queries")
        _check(self._columns.T, qs, values=False)
        cols = self._columns
        dt = np.result_type(cols.dtype, qs.dtype)
        if dt != cols.dtype:
            info = np.iinfo(cols.dtype)
            if qs.size == 0 or (qs.min() >= info.min and qs.max() <= info.max):
                dt = cols.dtype
            else:
                cols = cols.astype(dt)
        return _chunk_counts(cols, np.ascontiguousarray(qs, dtype=dt), self._top)


def match_set_counts(
    site1: npt.ArrayLike | MatchSetCounter,
    queries: npt.ArrayLike,
    *,
    query_chunk: int | None = None,
    progress: bool = False,
) -> npt.NDArray[np.int64]:
    """``counts[q, M]`` = number of site-1 users whose match set with query ``q`` is exactly M.

    Args:
        site1: ``[n, r]`` integer traces of website 1 (any categorical alphabet; ``-1`` =
            missing, never matches), or a prepared ``MatchSetCounter``.
        queries: ``[Q, r]`` traces on website 2 (the targets).
        query_chunk: queries per scan (default: ``chunk · 2^r <= chunk_cells()``).
        progress: show a progress bar over the chunks.

    Returns:
        ``int64[Q, 2^r]``; each row sums to ``n``. Bit ``s`` of ``M`` is week ``s``.
    """
    progress = flag(progress, "progress")
    counter = site1 if isinstance(site1, MatchSetCounter) else MatchSetCounter(site1)
    qs = _traces(queries, "queries")
    _check(counter._columns.T, qs, values=False)
    n_q = qs.shape[0]
    # ("2", NaN or 1.5 were TypeErrors of a comparison or of range, True one query a scan)
    chunk = (integer(query_chunk, "query_chunk", at_least=1) if query_chunk is not None
             else counter.chunk)
    out = np.empty((n_q, 1 << counter.n_weeks), dtype=np.int64)
    with task("match-set counts", n_q, enabled=progress) as advance:
        for lo in range(0, n_q, chunk):
            hi = min(n_q, lo + chunk)
            out[lo:hi] = counter.counts(qs[lo:hi])
            advance(hi - lo)
    return out


@njit(cache=True)
def _members_kernel(site1: np.ndarray, queries: np.ndarray, wanted: np.ndarray,
                    qh: np.ndarray, out_q: np.ndarray, out_u: np.ndarray) -> int:
    """Pairs (q, u) with u's exact match set with q flagged in ``wanted[q]`` (non-empty sets).

    Uses the same projected-key lookup as the scan: a user agreeing with ``q`` exactly on a
    non-empty ``M`` is found from the key ``o_q|_M``; the exact match set is then checked.
    """
    n, r = site1.shape
    n_q, n_sets = wanted.shape
    # key -> queries holding it, per subset: sort (t, hash) pairs once
    keys = np.empty(n_q * n_sets, dtype=np.uint64)
    tags = np.empty(n_q * n_sets, dtype=np.int64)
    m = 0
    for q in range(n_q):
        for t in range(1, n_sets):
            if wanted[q, t] and qh[q, t] != 0:
                keys[m] = qh[q, t] ^ (np.uint64(t) * _GOLDEN)
                tags[m] = q * n_sets + t
                m += 1
    order = np.argsort(keys[:m])
    skeys = keys[:m][order]
    stags = tags[:m][order]
    found = 0
    for u in range(n):
        row = site1[u]
        for t in range(1, n_sets):
            h = np.uint64(0)
            ok = True
            for w in range(r):
                if (t >> w) & 1:
                    v = np.int64(row[w])
                    if v < 0:
                        ok = False
                        break
                    h ^= _zval(w, v)
            h |= _TOP
            if not ok:
                continue
            key = h ^ (np.uint64(t) * _GOLDEN)
            i = np.searchsorted(skeys, key)
            while i < m and skeys[i] == key:
                q = stags[i] // n_sets
                tt = stags[i] % n_sets
                if tt == t:
                    exact = 0
                    for w in range(r):
                        if queries[q, w] >= 0 and queries[q, w] == row[w]:
                            exact |= 1 << w
                    if exact == t:
                        if found < out_q.shape[0]:
                            out_q[found] = q
                            out_u[found] = u
                        found += 1
                i += 1
    return found


def argmax_members(
    site1: npt.ArrayLike,
    queries: npt.ArrayLike,
    counts: npt.NDArray[np.int64],
    scores: npt.NDArray[np.float64],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Materialise the argmax sets: ``(query, user)`` index pairs, sorted.

    For checks on small data (the output is ``sum |argmax set|`` long). Only the best match
    sets of each query are looked up; a query whose best match set is the empty set (nobody
    matches it anywhere, or no gain is positive) falls back to scanning every user for it.
    """
    s1 = np.asarray(site1)
    qs = np.asarray(queries)
    _check(s1, qs)
    dt = np.result_type(s1.dtype, qs.dtype)
    s1 = np.ascontiguousarray(s1, dtype=dt)
    qs = np.ascontiguousarray(qs, dtype=dt)
    c = np.asarray(counts)
    sc = np.asarray(scores)
    present = c > 0
    best = np.where(present, sc, -np.inf).max(axis=1, initial=-np.inf)
    wanted = present & (sc == best[:, None])
    qh = np.empty(wanted.shape, dtype=np.uint64)
    _query_hashes(qs, qh, np.int64(0))  # (the XOR keys ``_members_kernel`` recomputes)
    cap = int(np.where(wanted[:, 1:], c[:, 1:], 0).sum())
    out_q = np.empty(cap, dtype=np.int64)
    out_u = np.empty(cap, dtype=np.int64)
    found = int(_members_kernel(s1, qs, wanted, qh, out_q, out_u))
    pairs_q = [out_q[:found]]
    pairs_u = [out_u[:found]]
    for q in np.flatnonzero(wanted[:, 0]):
        agree = (s1 == qs[q]) & (qs[q] >= 0)
        users = np.flatnonzero(~agree.any(axis=1))
        pairs_q.append(np.full(users.shape[0], q, dtype=np.int64))
        pairs_u.append(users.astype(np.int64))
    aq = np.concatenate(pairs_q)
    au = np.concatenate(pairs_u)
    order = np.lexsort((au, aq))
    return aq[order], au[order]


__all__ = ["MatchSetCounter", "argmax_members", "match_set_counts"]
