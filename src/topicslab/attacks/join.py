"""The exact engine for many queries: match-set counts when (nearly) every user is a target.

``engine.MatchSetCounter`` scans website 1 once per chunk of queries; with every user a
target that is ``n · Q · 2^r / chunk`` work, quadratic in the population: at 10M users and
r = 8 weeks, 600 scans of 10M users. Here the counts ``A_q(T)`` (site-1 users agreeing with
query ``q`` on every week of ``T``) are instead tabulated once for a fixed set of queries,
one subset ``T`` at a time and level by level (``|T| = 1, 2, ..., r``):

- a projection ``o|_T`` can have ``A > 0`` only if it occurs on both sides, and a user or a
  query can share its projection on ``T`` only if it shares its projection on every subset
  of ``T`` missing one week (Apriori, on both sides: kept as one hit bitset per subset of the
  previous level, for users and for queries);
- per subset, the candidate queries' distinct projections go into a hash table (key: XOR of
  one 64-bit word per (week, category), as in ``engine``; every hit verified against a
  representative query, so a hash collision can never be miscounted), the candidate users
  count into it, and only the projections some user has are kept: that subset's *joined
  table*. Subsets of one level run in parallel (one thread each). Over a small alphabet
  (the Topics API's 469 topics) the singletons and pairs of weeks need no table: their
  projections index dense arrays of counts (``_join_dense``; 24.6 MB at r = 8), which the
  lookups read too — 36 of a query's ~95 lookups at r = 8.

Then ``counts(lo, hi)`` reads ``A_q(T)`` of any rows of the query set and applies the same
Möbius inversion as ``engine``, so both return the same numbers. Where ``2^r · Q`` counts fit
``_MATRIX_BYTES`` they are written into a matrix as each subset is joined (its candidate
queries' slots hold them) and read from it; otherwise from the joined tables (a query probes
``T`` only if every subset of ``T`` missing one week had ``A > 0``).

Work: about ``(n + Q) · (number of subsets whose sub-projections are all shared)`` hash probes
instead of ``n · Q · 2^r / chunk``; memory: the joined tables (16 bytes per slot, 10/7 slots
per projection shared by a user and a query), within a budget (``JoinTooLarge`` past it), and
two levels of hit bitsets (one bit per user or query and subset). At 1M users and r = 8 with
every user a target the joined tables hold 13.7M projections (0.31 GB); at 10M users, 150M
(``benchmarks/RESULTS.md``, "The exact engine with every user a target").

Public names:
    JoinedCounts(site1, queries, *, progress=False, max_bytes=None)
                                                      tables for a fixed query set
    JoinTooLarge                                      raised past the memory budget
    JoinedCounts.counts(lo, hi) -> int64[hi - lo, 2^r]  the same as ``match_set_counts``
    prefer_join(n_users, n_queries, weeks)            whether this engine is the faster one
    count_chunks(site1, queries, *, progress=False)   (lo, hi, counts) per chunk of queries,
                                                      from whichever engine is faster
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np
import numpy.typing as npt
from numba import njit, prange
from numba.cpython.unsafe.numbers import trailing_zeros

from topicslab._checks import MAX_COUNT, flag, integer, number
from topicslab._progress import task
from topicslab._resources import available_memory
from topicslab.attacks.engine import (
    _M1,
    _ONE,
    _S29,
    _S31,
    _TOP,
    MAX_WEEKS,
    MatchSetCounter,
    _check,
    _direct_values,
    _levels,
    _zval,
    chunk_cells,
    high_bit,
)

_ALL = ~np.uint64(0)
_S32 = np.uint64(32)


@njit(cache=True, inline="always")
def _candidates(prev, rank, t, j, k, first_level_word):
    """Word ``j`` of the candidate bitset of subset ``t`` (size ``k``): the AND of the hit
    bitsets of its subsets missing one week (every row at level 1)."""
    if k == 1:
        return first_level_word
    c = _ALL
    rest = t
    while rest and c:
        low = rest & -rest
        c &= prev[rank[t ^ low], j]
        rest ^= low
    return c


@njit(cache=True, inline="always")
def _tail_mask(n, j):
    """Word ``j``'s valid bits (the last word of a bitset may run past ``n`` rows)."""
    left = n - (j << 6)
    if left >= 64:
        return _ALL
    return (_ONE << np.uint64(left)) - _ONE


@njit(cache=True, inline="always")
def _extend(h, v, w, pos, bits, exact):
    """Key of a projection extended by value ``v`` of week ``w`` (its ``pos``-th week).

    Exact keys pack ``v + 1`` in ``bits`` bits per week (``bits · |T| <= 63``: equal keys are
    equal projections, no check needed); otherwise the XOR of per-(week, value) words."""
    if exact:
        return h | (np.uint64(v + 1) << np.uint64(bits * pos))
    return h ^ _zval(w, v)


@njit(cache=True, inline="always")
def _slot(h, size):
    """Home slot of key ``h`` in a table of ``size`` slots (keys are not uniform: mixed)."""
    z = (h ^ (h >> _S31)) * _M1
    # the mixed key's high 32 bits scaled to [0, size): a multiply and a shift where a modulo
    # was a 64-bit division on every probe's path (tables stay below 2^32 slots)
    return np.int64((((z ^ (z >> _S29)) >> _S32) * np.uint64(size)) >> _S32)


@njit(cache=True, inline="always")
def _key(row, t, bits, exact):
    """Key of ``row``'s projection on ``t`` (a query's row or a user's column of website 1;
    0 when a week of ``t`` is missing)."""
    h = np.uint64(0)
    rest = t
    pos = 0
    while rest:
        w = int(trailing_zeros(np.uint64(rest)))
        rest &= rest - 1
        v = np.int64(row[w])
        if v < 0:
            return np.uint64(0)
        h = _extend(h, v, w, pos, bits, exact)
        pos += 1
    return h | _TOP


@njit(cache=True, inline="always")
def _agree(a, b, t, r):
    """Whether rows ``a`` and ``b`` hold the same projection on ``t``."""
    for w in range(r):
        if (t >> w) & 1 and a[w] != b[w]:
            return False
    return True


@njit(cache=True, inline="always")
def _probe(tab, slots, h, row, queries, t, r, exact):
    """Slot of ``row``'s projection (key ``h``) in a build table, or the empty slot where it
    would go (hits are verified against the representative query unless keys are exact)."""
    i = _slot(h, slots)
    while True:
        hv = tab[0, i]
        if hv == 0 or (hv == h and (exact or _agree(queries[np.int64(tab[1, i])], row, t, r))):
            return i
        i = i + 1 if i + 1 < slots else 0


#: exact keys of at most this many bits are probed in a table of one word per slot
#: (``_packed_copy``): subsets of 3 weeks over the Topics API's 469 topics (27 bits)
_PACKED_BITS = 31
_LOW31 = (_ONE << np.uint64(31)) - _ONE
_FLAG31 = _ONE << np.uint64(31)
_LOW32 = (_ONE << _S32) - _ONE


@njit(cache=True, inline="always")
def _packed_copy(tab, slots):
    """A copy of one word per slot of a build table ``tab`` (keys, representatives, counts)
    whose exact keys fit 31 bits: the key's bits and an occupied flag above the slot's
    count. A user's probe then reads one 8-byte word where it read a key and wrote a count
    16 bytes apart in separate rows; the table is a third of the size and stays in the core's
    cache longer (15% less time for the three-week subsets of 5M users, the join's largest
    level). Its slots are ``tab``'s (same keys, same order of insertion)."""
    packed = np.zeros(slots, dtype=np.uint64)
    for i in range(slots):
        if tab[0, i] != 0:
            packed[i] = ((tab[0, i] & _LOW31) | _FLAG31) << _S32
    return packed


@njit(cache=True, inline="always")
def _count_packed(packed, slots, h):
    """Count a user of exact key ``h`` into ``packed`` (``_packed_copy``); whether it is
    there."""
    want = (h & _LOW31) | _FLAG31
    i = _slot(h, slots)
    while True:
        e = packed[i]
        if e == 0:
            return False
        if (e >> _S32) == want:
            packed[i] = e + _ONE
            return True
        i = i + 1 if i + 1 < slots else 0


@njit(cache=True, nogil=True)
def _join_subset(columns, queries, t, k, prev_u, prev_q, rank, cur_u, cur_q, row, distinct,
                 bits, a_row):
    """The joined table of subset ``t`` and its hit bitsets (row ``row`` of ``cur_u`` and
    ``cur_q``). ``distinct`` bounds the number of distinct projections (alphabet^k).

    Returns the number of shared projections and, unless ``a_row`` (``A_q(t)`` of every
    query: the matrix of ``JoinedCounts``) is given, the projections as ``uint64[shared,
    2]``: the key and ``representative query << 32 | site-1 count`` (a joined table's slot:
    one cache line per probe)."""
    r, n = columns.shape
    n_q = queries.shape[0]
    words_u = (n + 63) >> 6
    words_q = (n_q + 63) >> 6
    exact = bits * k <= 63
    # the candidate queries' distinct projections
    n_cand = 0
    for j in range(words_q):
        c = _candidates(prev_q, rank, t, j, k, _ALL) & _tail_mask(n_q, j)
        while c:
            c &= c - _ONE
            n_cand += 1
    slots = max(16, 2 * min(n_cand, distinct))
    tab = np.zeros((3, slots), dtype=np.uint64)  # keys, representative queries, counts
    cand_q = np.empty(n_cand, dtype=np.int64)
    cand_slot = np.empty(n_cand, dtype=np.int64)
    m = 0
    for j in range(words_q):
        c = _candidates(prev_q, rank, t, j, k, _ALL) & _tail_mask(n_q, j)
        while c:
            q = (j << 6) + int(trailing_zeros(c))
            c &= c - _ONE
            h = _key(queries[q], t, bits, exact)
            if h == 0:
                continue
            i = _probe(tab, slots, h, queries[q], queries, t, r, exact)
            if tab[0, i] == 0:
                tab[0, i] = h
                tab[1, i] = np.uint64(q)
            cand_q[m] = q
            cand_slot[m] = i
            m += 1
    # the candidate users count into it; a user found there shares its projection
    use_packed = m > 0 and exact and bits * k <= _PACKED_BITS
    packed = _packed_copy(tab, slots) if use_packed else np.zeros(0, dtype=np.uint64)
    if m:
        for j in range(words_u):
            c = _candidates(prev_u, rank, t, j, k, _ALL) & _tail_mask(n, j)
            while c:
                u = (j << 6) + int(trailing_zeros(c))
                c &= c - _ONE
                h = _key(columns[:, u], t, bits, exact)
                if h == 0:
                    continue
                if use_packed:
                    hit = _count_packed(packed, slots, h)
                else:
                    i = _probe(tab, slots, h, columns[:, u], queries, t, r, exact)
                    hit = tab[0, i] != 0
                    if hit:
                        tab[2, i] += _ONE
                if hit:
                    cur_u[row, j] |= _ONE << np.uint64(u & 63)
    if use_packed:  # the counts back into the table
        for i in range(slots):
            tab[2, i] = packed[i] & _LOW32
    matrix = a_row.shape[0] > 0
    for s in range(m):
        if tab[2, cand_slot[s]] > 0:
            q = cand_q[s]
            cur_q[row, q >> 6] |= _ONE << np.uint64(q & 63)
            if matrix:
                a_row[q] = np.int32(tab[2, cand_slot[s]])
    shared = 0
    for i in range(slots):
        if tab[2, i] > 0:
            shared += 1
    # only the projections a user shares are kept (for the tables: the matrix holds counts)
    out = np.empty((0 if matrix else shared, 2), dtype=np.uint64)
    if matrix:
        return shared, out
    o = 0
    for i in range(slots):
        if tab[2, i] > 0:
            out[o, 0] = tab[0, i]
            out[o, 1] = (tab[1, i] << _S32) | tab[2, i]
            o += 1
    return shared, out


@njit(cache=True, inline="always")
def _dense_cell(v1, v2, k, n_values):
    """A singleton's (``v1``) or a pair's (``v1`` of the lower week, ``v2`` of the higher)
    cell of the dense arrays; -1 when a week is missing."""
    if v1 < 0 or v2 < 0:
        return np.int64(-1)
    return v1 * n_values + v2 if k == 2 else v1


@njit(cache=True, nogil=True)
def _join_dense(columns, queries, t, k, prev_u, prev_q, rank, cur_u, cur_q, row, n_values,
                counts, a_row):
    """``_join_subset`` of a singleton or a pair (``k <= 2``) over a small alphabet: the
    projections index a dense array (``_dense_cell``), so nothing is hashed or verified.
    ``counts`` (the subset's row of ``_lookup``'s dense arrays) gets the number of users
    holding each projection some query holds, 0 elsewhere; the hit bitsets are
    ``_join_subset``'s, and so is ``a_row``. Returns the number of shared projections."""
    n = columns.shape[1]
    n_q = queries.shape[0]
    w1 = int(trailing_zeros(np.uint64(t)))
    w2 = int(trailing_zeros(np.uint64(t ^ (np.int64(1) << w1)))) if k == 2 else w1
    held = np.zeros(n_values if k == 1 else n_values * n_values, dtype=np.bool_)
    for j in range((n_q + 63) >> 6):
        c = _candidates(prev_q, rank, t, j, k, _ALL) & _tail_mask(n_q, j)
        while c:
            q = (j << 6) + int(trailing_zeros(c))
            c &= c - _ONE
            p = _dense_cell(np.int64(queries[q, w1]), np.int64(queries[q, w2]), k, n_values)
            if p >= 0:
                held[p] = True
    for j in range((n + 63) >> 6):
        c = _candidates(prev_u, rank, t, j, k, _ALL) & _tail_mask(n, j)
        while c:
            u = (j << 6) + int(trailing_zeros(c))
            c &= c - _ONE
            p = _dense_cell(np.int64(columns[w1, u]), np.int64(columns[w2, u]), k, n_values)
            if p >= 0 and held[p]:
                counts[p] += 1
                cur_u[row, j] |= _ONE << np.uint64(u & 63)
    for j in range((n_q + 63) >> 6):
        c = _candidates(prev_q, rank, t, j, k, _ALL) & _tail_mask(n_q, j)
        while c:
            q = (j << 6) + int(trailing_zeros(c))
            c &= c - _ONE
            p = _dense_cell(np.int64(queries[q, w1]), np.int64(queries[q, w2]), k, n_values)
            if p >= 0 and counts[p] > 0:
                cur_q[row, q >> 6] |= _ONE << np.uint64(q & 63)
                if a_row.shape[0]:
                    a_row[q] = counts[p]
    return int((counts > 0).sum())


#: the largest matrix of counts (``JoinedCounts``: 4 bytes per query and subset of weeks) read
#: instead of the joined tables: 205 MB for the paper preset's 200,000 targets at 8 weeks;
#: every user of 1M a target at 8 weeks (1 GB) keeps the tables (0.31 GB)
_MATRIX_BYTES = 512 << 20

#: slots per projection: a load of at most 0.7 keeps linear probing short (about 2 probes for
#: a key present, 6 for one absent) at 16 bytes a slot
SLOTS_PER_ENTRY = 10 / 7


class JoinTooLarge(MemoryError):
    """The joined tables would outgrow their memory budget."""


def table_slots(entries: int) -> int:
    """Slots of a joined table of ``entries`` projections (``SLOTS_PER_ENTRY`` each)."""
    return 0 if entries == 0 else max(4, -(-entries * 10 // 7))


@njit(cache=True, nogil=True)
def _place(entries, table, off, size):
    """Insert one subset's entries into its slice ``table[off:off + size]``."""
    for e in range(entries.shape[0]):
        o = _slot(entries[e, 0], size)
        while table[off + o, 0] != 0:
            o = o + 1 if o + 1 < size else 0
        table[off + o, 0] = entries[e, 0]
        table[off + o, 1] = entries[e, 1]


@njit(cache=True, parallel=True)
def _lookup(queries, lo, hi, offsets, tab, n_users, bits, single, pairs, n_values, rank,
            out):
    """``out[i]`` = exact match-set counts of query ``lo + i`` from the joined tables (the
    singletons and pairs from their dense arrays when ``n_values > 0``: 36 of a query's ~46
    lookups at r = 8, each a load in a 0.9 MB row instead of a probe in tables of gigabytes)."""
    r = queries.shape[1]
    n_sets = 1 << r
    for i in prange(hi - lo):
        q = lo + i
        a = out[i]
        a[0] = n_users
        exact_h = np.zeros(n_sets, dtype=np.uint64)
        size_of = np.zeros(n_sets, dtype=np.int64)
        for t in range(1, n_sets):
            # a subset's subsets missing one week are smaller numbers: already filled
            hb = high_bit(t)
            parent = t ^ (1 << hb)
            k = size_of[parent] + 1
            size_of[t] = k
            a[t] = 0
            v = np.int64(queries[q, hb])
            if v < 0:
                continue
            # Apriori: A(T) > 0 needs A > 0 on every subset missing one week (for a single
            # week that is the empty set, A = n); the parent's keys are then computed
            ok = True
            rest = t
            while rest:
                low = rest & -rest
                if a[t ^ low] == 0:
                    ok = False
                    break
                rest ^= low
            if not ok:
                continue
            if n_values and k <= 2:
                exact_h[t] = _extend(exact_h[parent], v, hb, k - 1, bits, True)
                if k == 1:
                    a[t] = single[hb, v]
                else:
                    low = int(trailing_zeros(np.uint64(parent)))
                    a[t] = pairs[rank[t], np.int64(queries[q, low]) * n_values + v]
                continue
            exact = bits * k <= 63
            if exact:  # built from the parent's key; the few longer subsets hash the row
                exact_h[t] = _extend(exact_h[parent], v, hb, k - 1, bits, True)
                h = exact_h[t] | _TOP
            else:
                h = _key(queries[q], t, bits, False)
            off = offsets[t]
            size = offsets[t + 1] - off
            if size == 0:
                continue
            s = _slot(h, size)
            while True:
                hv = tab[off + s, 0]
                if hv == 0:
                    break
                if hv == h and (exact or _agree(
                        queries[np.int64(tab[off + s, 1] >> _S32)], queries[q], t, r)):
                    a[t] = np.int64(tab[off + s, 1] & _LOW32)
                    break
                s = s + 1 if s + 1 < size else 0
        # superset Möbius inversion: A(T) -> N(M), as engine._reduce_moebius
        for w in range(r):
            bit = 1 << w
            for t in range(n_sets):
                if not t & bit:
                    a[t] -= a[t | bit]


@njit(cache=True, parallel=True)
def _from_matrix(matrix, lo, hi, n_users, out):
    """``out[i]`` = exact match-set counts of query ``lo + i`` from the matrix of ``A_q(T)``
    (``A(∅) = n``), by the Möbius inversion of ``_lookup``."""
    n_sets = matrix.shape[0]
    r = 0
    while (1 << r) < n_sets:
        r += 1
    n_blocks = (hi - lo + 63) // 64
    for blk in prange(n_blocks):
        start = blk * 64
        stop = min(hi - lo, start + 64)
        for t in range(n_sets):  # a row's 64 queries are one read
            for i in range(start, stop):
                out[i, t] = n_users if t == 0 else matrix[t, lo + i]
        for i in range(start, stop):
            a = out[i]
            for w in range(r):
                bit = 1 << w
                for t in range(n_sets):
                    if not t & bit:
                        a[t] -= a[t | bit]


def _common_dtype(site1: np.ndarray, queries: np.ndarray) -> np.dtype:
    """One signed integer dtype for both tables (the kernels read -1 as missing): an unsigned
    table was an OverflowError (its ``max(initial=-1)``), and uint64 beside a signed table a
    float64 ``result_type``; a category past int64 would have read as missing."""
    dt = np.result_type(site1.dtype, queries.dtype)
    if np.issubdtype(dt, np.signedinteger):
        return dt
    top = max(int(site1.max(initial=0)), int(queries.max(initial=0)))
    if top > MAX_COUNT:
        raise ValueError(f"categories must be below 2^63, got {top}")
    return np.dtype(np.int64)


class JoinedCounts:
    """Website 1 joined with a fixed set of queries (module docstring).

    Args:
        site1: ``[n, r]`` integer traces of website 1 (``-1`` = missing, never matches).
        queries: ``[Q, r]`` traces on website 2; ``counts(lo, hi)`` answers rows of it.
        progress: a progress bar over the subsets.
        max_bytes: the tables' memory budget (default: half the memory available); past it
            the build stops with ``JoinTooLarge`` (the scanning engine needs no such tables).
    """

    def __init__(self, site1: npt.ArrayLike, queries: npt.ArrayLike, *,
                 progress: bool = False, max_bytes: float | None = None) -> None:
        progress = flag(progress, "progress")
        if max_bytes is None:
            free = available_memory()
            max_bytes = None if free is None else free / 2
        else:  # (NaN was no budget at all, -1 "outgrow -0.0 GiB", text a TypeError)
            max_bytes = number(max_bytes, "max_bytes", lo=0, lo_open=True,
                               why="the joined tables' memory budget, in bytes")
        s1 = np.asarray(site1)
        qs = np.asarray(queries)
        _check(s1, qs)
        dt = _common_dtype(s1, qs)
        columns = np.ascontiguousarray(s1.T, dtype=dt)
        self._queries = np.ascontiguousarray(qs, dtype=dt)
        self.n_users, self.n_weeks = (int(x) for x in s1.shape)
        self.n_queries = int(qs.shape[0])
        r = self.n_weeks
        level_sets, level_start, rank = _levels(r)
        alphabet = 1 + max(int(columns.max(initial=-1)), int(self._queries.max(initial=-1)), 0)
        # exact keys hold value + 1 (0 .. alphabet) in ``bits`` bits per week
        bits = self._bits = max(1, int(alphabet).bit_length())
        entries: list[np.ndarray | None] = [None] * (1 << r)
        # a small alphabet's singletons and pairs: dense arrays of counts (``_join_dense``,
        # ``_lookup``) instead of hash tables
        self._values = values = _direct_values(r, alphabet - 1)
        self._single = np.zeros((r, values), dtype=np.int32)
        self._pairs = np.zeros((r * (r - 1) // 2 if values else 0, values ** 2), dtype=np.int32)
        self._rank = rank
        self.shared = 0  #: projections kept (shared by a user and a query), every subset
        # A_q(T) of every query and subset, filled as the subsets are joined, when it fits:
        # the counts are then read from it, where the tables took a probe per subset and
        # query (random reads in tables of hundreds of MB: a fifth of the fidelity stage)
        cells = (1 << r) * self.n_queries * 4
        use_matrix = cells <= min(_MATRIX_BYTES, max_bytes if max_bytes is not None
                                  else _MATRIX_BYTES)
        self._matrix = np.zeros(((1 << r) if use_matrix else 0, self.n_queries),
                                dtype=np.int32)
        no_row = np.zeros(0, dtype=np.int32)
        words_u = (self.n_users + 63) >> 6
        words_q = (self.n_queries + 63) >> 6
        prev_u = np.zeros((1, 1), dtype=np.uint64)
        prev_q = np.zeros((1, 1), dtype=np.uint64)
        threads = max(1, min(numba.get_num_threads(), os.cpu_count() or 1))
        held = 0
        with task("match-set join", (1 << r) - 1, enabled=progress) as advance, \
                ThreadPoolExecutor(threads) as pool:
            for k in range(1, r + 1):
                subsets = [int(t) for t in level_sets[level_start[k]:level_start[k + 1]]]
                cur_u = np.zeros((len(subsets), words_u), dtype=np.uint64)
                cur_q = np.zeros((len(subsets), words_q), dtype=np.uint64)

                def one(t: int, k: int = k, pu: np.ndarray = prev_u, pq: np.ndarray = prev_q,
                        cu: np.ndarray = cur_u, cq: np.ndarray = cur_q
                        ) -> tuple[int, int, np.ndarray | None]:
                    a_row = self._matrix[t] if use_matrix else no_row
                    if values and k <= 2:
                        dense = self._single[rank[t]] if k == 1 else self._pairs[rank[t]]
                        return t, int(_join_dense(columns, self._queries, np.int64(t),
                                                  np.int64(k), pu, pq, rank, cu, cq,
                                                  np.int64(rank[t]), np.int64(values),
                                                  dense, a_row)), None
                    shared, kept = _join_subset(
                        columns, self._queries, np.int64(t), np.int64(k), pu, pq, rank, cu,
                        cq, np.int64(rank[t]), np.int64(min(alphabet ** k, 1 << 62)),
                        np.int64(bits), a_row)
                    return t, int(shared), None if use_matrix else kept

                for t, shared, kept in pool.map(one, subsets):
                    if kept is None:
                        self.shared += shared
                    else:
                        entries[t] = kept
                        held += kept.nbytes
                    advance(1)
                if max_bytes is not None and held * (1 + SLOTS_PER_ENTRY) > max_bytes:
                    # the entries so far and the table they will fill, never smaller later
                    raise JoinTooLarge(f"the joined tables outgrow {max_bytes / 2**30:.1f} GiB "
                                       f"at {k} of {r} weeks")
                prev_u, prev_q = cur_u, cur_q
                if not prev_q.any():  # nothing shared at this size: nothing larger either
                    advance(int(level_start[r + 1] - level_start[k + 1]))
                    break
        del prev_u, prev_q
        if use_matrix:  # the dense arrays counted the singletons and pairs: no longer read
            self._single = self._single[:0]
            self._pairs = self._pairs[:0]
        # one flat table (a slice per subset), filled subset by subset while each subset's
        # entries are let go: the entries and the table are never both held in full
        sizes = np.array([0 if e is None else table_slots(e.shape[0]) for e in entries],
                         dtype=np.int64)
        self._offsets = np.zeros((1 << r) + 1, dtype=np.int64)
        np.cumsum(sizes, out=self._offsets[1:])
        self._table = np.zeros((int(self._offsets[-1]), 2), dtype=np.uint64)
        for t in range(1 << r):
            e = entries[t]
            if e is not None:
                _place(e, self._table, np.int64(self._offsets[t]), np.int64(sizes[t]))
                self.shared += int(e.shape[0])
                entries[t] = None

    @property
    def nbytes(self) -> int:
        """Bytes of the joined tables (and the dense arrays of singletons and pairs), or of
        the matrix of counts."""
        return int(self._table.nbytes + self._single.nbytes + self._pairs.nbytes
                   + self._matrix.nbytes)

    def counts(self, lo: int = 0, hi: int | None = None) -> npt.NDArray[np.int64]:
        """``counts[i, M]`` for query rows ``lo..hi``: as ``engine.match_set_counts``."""
        # (True was row 1, "3" a TypeError of the comparison)
        lo = integer(lo, "lo")
        hi = self.n_queries if hi is None else integer(hi, "hi")
        if not 0 <= lo <= hi <= self.n_queries:
            raise ValueError(f"query rows {lo}..{hi} outside 0..{self.n_queries}")
        out = np.empty((hi - lo, 1 << self.n_weeks), dtype=np.int64)
        if self._matrix.shape[0]:
            _from_matrix(self._matrix, np.int64(lo), np.int64(hi), np.int64(self.n_users),
                         out)
            return out
        _lookup(self._queries, np.int64(lo), np.int64(hi), self._offsets, self._table,
                np.int64(self.n_users), np.int64(self._bits), self._single, self._pairs,
                np.int64(self._values), self._rank, out)
        return out


def prefer_join(n_users: int, n_queries: int, weeks: int) -> bool:
    """Whether ``JoinedCounts`` beats per-chunk scans: when the queries take more than one
    scan of website 1 (``Q · 2^r > chunk_cells``). Measured (``benchmarks/
    bench_engine_join.py``, 1M users, every user a target): at 3.8 scans (r = 4) the join
    took 3.5 s against 4.4 s, at 61 scans (r = 8) 35 s against 79 s."""
    # (weeks -1 was "negative shift count", 1000 True, a negative count False)
    n_users = integer(n_users, "n_users", at_least=0)
    n_queries = integer(n_queries, "n_queries", at_least=0)
    weeks = integer(weeks, "weeks", at_least=1, at_most=MAX_WEEKS,
                    why="the engines tabulate the 2^r match sets of every query")
    scans = n_queries * (1 << weeks) / chunk_cells()
    return n_users > 0 and scans > 1


def count_chunks(site1: npt.NDArray[np.integer], queries: npt.NDArray[np.integer], *,
                 progress: bool = False
                 ) -> Iterator[tuple[int, int, npt.NDArray[np.int64]]]:
    """``(lo, hi, counts)`` for consecutive chunks of the queries, ``counts`` as
    ``engine.match_set_counts(site1, queries[lo:hi])``: from one join when it is the faster
    engine (``prefer_join``) and fits its memory budget, else from one scan per chunk. Chunks
    keep each ``[chunk, 2^r]`` table small either way.

    The join is built here, before the first chunk is asked for (with its own progress bar:
    open the caller's bar over the chunks after this call, rich shows one at a time)."""
    progress = flag(progress, "progress")  # (was checked only when the join was chosen)
    site1, queries = np.asarray(site1), np.asarray(queries)  # (lists: AttributeError)
    counter = MatchSetCounter(site1)
    _check(site1, queries)
    n_q = queries.shape[0]
    joined = None
    if prefer_join(site1.shape[0], n_q, site1.shape[1]):
        try:
            joined = JoinedCounts(site1, queries, progress=progress)
        except JoinTooLarge:  # the scans take longer but hold no tables
            joined = None

    def chunks() -> Iterator[tuple[int, int, npt.NDArray[np.int64]]]:
        for lo in range(0, n_q, counter.chunk):
            hi = min(n_q, lo + counter.chunk)
            yield lo, hi, (joined.counts(lo, hi) if joined is not None
                           else counter.counts(queries[lo:hi]))

    return chunks()


__all__ = ["JoinTooLarge", "JoinedCounts", "count_chunks", "prefer_join"]
