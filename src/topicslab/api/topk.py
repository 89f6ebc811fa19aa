"""Weekly profiles: the top-k topics of a week's topic visit counts (Dick et al. §3, Algorithm 1).

Ranking follows Chrome: utility bucket first (High before Standard), then visit count, ties
broken at random. A week with fewer than k distinct topics is padded with distinct topics drawn
uniformly at random from the whole taxonomy. Profiles are returned in the data model's layout:
``int16[n, k]`` dense indices, sorted ascending.

Randomness (tie-breaks and padding) is keyed by ``(seed, row_key, ...)``: pass ``row_keys`` that
identify each row globally (e.g. ``user_id * n_weeks + week``) to make any slice reproducible.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
from numba import njit, prange

from topicslab._checks import integer_array, refuse
from topicslab._kernels import sort_head
from topicslab.api.hashing import (
    STREAM_PAD,
    STREAM_TIEBREAK,
    below,
    derive_key,
    hash3,
)
from topicslab.taxonomy import Taxonomy, resolve

EMPTY = -1


@njit(cache=True, inline="always")
def _better(b1: int, c1: float, t1: np.uint64, b2: int, c2: float, t2: np.uint64) -> bool:
    if b1 != b2:
        return bool(b1 > b2)
    if c1 != c2:
        return bool(c1 > c2)
    return bool(t1 > t2)


@njit(cache=True)
def pad_row(row: np.ndarray, filled: int, k: int, m: int, pad_key: np.uint64,
            row_key: np.uint64) -> None:
    """Fill ``row[filled:k]`` with distinct uniform topics not already in ``row[:filled]``.

    Draw ``j`` of the row is ``hash(pad_key, row_key, j)``: rejection sampling of the
    taxonomy, so each padding topic is uniform over the topics not yet present.
    """
    j = np.uint64(0)
    n = filled
    while n < k:
        t = below(hash3(pad_key, row_key, j, np.uint64(0)), np.int64(m))
        j += np.uint64(1)
        dup = False
        for s in range(n):
            if row[s] == t:
                dup = True
                break
        if not dup:
            row[n] = t
            n += 1


@njit(cache=True)
def rank_row(topics, counts, n, bucket, row_key, tie_key, pad_key, m, k, best_t, best_b,
             best_c, best_h, out):
    """Write one row's profile into ``out[:k]``: the top k of ``topics[:n]`` (with their
    ``counts[:n]``; a count <= 0 is no visit) by Chrome's rule, padded, sorted ascending.

    ``best_*`` are scratch arrays of at least k entries, so that a caller looping over many
    rows allocates nothing per row (the population generator ranks its simulated weeks with
    this, without writing their visit counts out first).
    """
    filled = 0
    for e in range(n):
        c = float(counts[e])
        if c <= 0.0:
            continue
        t = np.int64(topics[e])
        b = np.int64(bucket[t])
        h = hash3(tie_key, row_key, np.uint64(t), np.uint64(0))
        if filled == k and not _better(b, c, h, best_b[k - 1], best_c[k - 1], best_h[k - 1]):
            continue
        # insertion into the descending list of the best so far
        pos = filled if filled < k else k - 1
        while pos > 0 and _better(b, c, h, best_b[pos - 1], best_c[pos - 1], best_h[pos - 1]):
            if pos < k:
                best_t[pos] = best_t[pos - 1]
                best_b[pos] = best_b[pos - 1]
                best_c[pos] = best_c[pos - 1]
                best_h[pos] = best_h[pos - 1]
            pos -= 1
        best_t[pos] = t
        best_b[pos] = b
        best_c[pos] = c
        best_h[pos] = h
        if filled < k:
            filled += 1
    if filled < k:
        pad_row(best_t, filled, k, m, pad_key, row_key)
    sort_head(best_t, k)
    for s in range(k):
        out[s] = best_t[s]


#: rows per parallel work item (scratch arrays are per item): fewer rows run on fewer threads,
#: which costs nothing at ~100 ns a row
_ROWS_PER_ITEM = 4096


@njit(cache=True, parallel=True)
def _topk_csr_kernel(indptr, topics, counts, bucket, row_keys, tie_key, pad_key, m, k, out):
    n = indptr.shape[0] - 1
    n_items = (n + _ROWS_PER_ITEM - 1) // _ROWS_PER_ITEM
    for item in prange(n_items):
        best_t = np.empty(k, dtype=np.int64)
        best_b = np.empty(k, dtype=np.int64)
        best_c = np.empty(k, dtype=np.float64)
        best_h = np.empty(k, dtype=np.uint64)
        for r in range(item * _ROWS_PER_ITEM, min(n, (item + 1) * _ROWS_PER_ITEM)):
            lo = indptr[r]
            hi = indptr[r + 1]
            rank_row(topics[lo:hi], counts[lo:hi], hi - lo, bucket, row_keys[r], tie_key,
                     pad_key, m, k, best_t, best_b, best_c, best_h, out[r])


@njit(cache=True, parallel=True)
def _first_repeat(indptr, topics, m):
    """(row, topic): the first row holding a topic twice and its smallest such topic, or
    (-1, -1). One pass with a per-item stamp table (a sort of every (row, topic) pair took
    most of the top-k time of a 10M-user population)."""
    n = indptr.shape[0] - 1
    n_items = (n + _ROWS_PER_ITEM - 1) // _ROWS_PER_ITEM
    first = np.full(n_items, -1, dtype=np.int64)
    for item in prange(n_items):
        stamp = np.full(m, -1, dtype=np.int64)
        for r in range(item * _ROWS_PER_ITEM, min(n, (item + 1) * _ROWS_PER_ITEM)):
            for e in range(indptr[r], indptr[r + 1]):
                t = topics[e]
                if stamp[t] == r:
                    first[item] = r
                    break
                stamp[t] = r
            if first[item] >= 0:
                break
    for item in range(n_items):
        r = first[item]
        if r >= 0:  # its smallest topic held twice: a count per topic (rows can be long)
            seen = np.zeros(m, dtype=np.int64)
            for e in range(indptr[r], indptr[r + 1]):
                seen[topics[e]] += 1
            for t in range(m):
                if seen[t] > 1:
                    return r, np.int64(t)
    return np.int64(-1), np.int64(-1)


def top_k_sparse(
    indptr: npt.ArrayLike,
    topics: npt.ArrayLike,
    counts: npt.ArrayLike,
    *,
    k: int = 5,
    taxonomy: Taxonomy | str = "v2",
    seed: int = 0,
    row_keys: npt.ArrayLike | None = None,
) -> npt.NDArray[np.int16]:
    """Top-k profiles from visit counts in CSR form (one row per user-week).

    Args:
        indptr: ``int64[n+1]`` row boundaries into ``topics``/``counts``.
        topics: dense topic indices; each topic at most once per row.
        counts: visit counts (any non-negative numbers; entries ``<= 0`` are ignored).
        k: profile size (5 in Chrome).
        taxonomy: supplies the utility buckets and the padding universe.
        seed: seed of the tie-break and padding randomness.
        row_keys: ``uint64[n]`` global identity of each row (default ``0..n-1``).

    Returns:
        ``int16[n, k]`` profiles, dense indices sorted ascending.
    """
    from topicslab.api.answers import Mechanism  # (answers imports this module)

    tax = resolve(taxonomy)
    k = Mechanism(k=k, taxonomy=tax).k  # the profile size, checked where it is defined
    # (a fractional row boundary was truncated, as a fractional topic was)
    ip = np.ascontiguousarray(integer_array(indptr, "indptr"), dtype=np.int64)
    tp = np.ascontiguousarray(integer_array(topics, "topics"))  # (a fraction truncated)
    ct = np.ascontiguousarray(counts)
    n = ip.shape[0] - 1
    if n < 0 or ip[0] != 0 or (np.diff(ip) < 0).any() or ip[-1] != tp.shape[0]:
        raise refuse("indptr must start at 0, be non-decreasing and end at len(topics)",
                     "indptr")
    if tp.shape != ct.shape:
        raise refuse("topics and counts must have the same length", "counts")
    ct = _check_counts(ct)
    if tp.size and (tp.min() < 0 or tp.max() >= tax.size):
        raise refuse(f"topic indices must be dense indices in 0..{tax.size - 1}", "topics")
    if tp.size:  # a topic twice in a row was ranked twice: a profile held it twice
        row, topic = _first_repeat(ip, tp, tax.size)
        if row >= 0:
            raise refuse(f"topic {topic} appears twice in row {row}; give each topic once "
                         "per row (add up its counts)", "topics")
    if row_keys is None:
        keys = np.arange(n, dtype=np.uint64)
    else:  # a fraction was truncated and a negative key wrapped past 2^63 (another row's)
        rk = integer_array(row_keys, "row_keys")
        if rk.size and rk.dtype.kind == "i" and int(rk.min()) < 0:
            raise refuse(f"row_keys must be non-negative, got {int(rk.min())}", "row_keys")
        keys = np.ascontiguousarray(rk, dtype=np.uint64)
    if keys.shape != (n,):
        raise refuse("row_keys must have one entry per row", "row_keys")
    out = np.empty((n, k), dtype=np.int16)
    _topk_csr_kernel(ip, tp, ct, tax.bucket, keys, derive_key(seed, STREAM_TIEBREAK),
                     derive_key(seed, STREAM_PAD), tax.size, k, out)
    return out


def _check_counts(counts: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """``counts`` in a type the kernel takes: booleans (visited or not) as 0/1 and half
    floats as float32 (both failed inside numba with a typing error)."""
    if counts.dtype.kind not in "iubf" or (counts.dtype.kind == "f"
                                           and np.isnan(counts).any()):
        raise refuse(f"counts must be numbers of visits, got {counts.dtype} values"
                     f"{' holding NaN' if counts.dtype.kind == 'f' else ''}", "counts")
    # (a negative count was read as no visit, and an infinite one ranked as it came)
    if counts.dtype.kind in "if" and counts.size and (
            float(counts.min()) < 0 or (counts.dtype.kind == "f" and np.isinf(counts).any())):
        raise refuse("counts must be numbers of visits >= 0 (finite), got "
                     f"{float(counts.min()) if float(counts.min()) < 0 else float('inf')}",
                     "counts")
    if counts.dtype.kind == "b":
        return counts.astype(np.uint8)
    if counts.dtype == np.float16:
        return counts.astype(np.float32)
    return counts


def top_k(
    counts: npt.ArrayLike,
    *,
    k: int = 5,
    taxonomy: Taxonomy | str = "v2",
    seed: int = 0,
    row_keys: npt.ArrayLike | None = None,
) -> npt.NDArray[np.int16]:
    """Top-k profiles from dense visit counts ``[..., m]`` (one row per user-week).

    Leading dimensions are kept: ``counts[n_users, n_weeks, m]`` gives ``int16[n_users,
    n_weeks, k]``. See ``top_k_sparse`` for the arguments and the ranking rule.
    """
    tax = resolve(taxonomy)
    arr = np.asarray(counts)
    if arr.ndim < 1 or arr.shape[-1] != tax.size:
        raise refuse(f"counts must have a last axis of {tax.size} topics, got {arr.shape}",
                     "counts")
    arr = _check_counts(arr)  # (a NaN is not > 0: read as no visit, silently)
    lead = arr.shape[:-1]
    flat = arr.reshape(-1, tax.size)
    rows, cols = np.nonzero(flat > 0)
    indptr = np.zeros(flat.shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=flat.shape[0]), out=indptr[1:])
    sets = top_k_sparse(indptr, cols.astype(np.int32), flat[rows, cols], k=k, taxonomy=tax,
                        seed=seed, row_keys=row_keys)
    return sets.reshape(*lead, k)


