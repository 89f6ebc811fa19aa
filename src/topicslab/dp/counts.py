"""The count queries of Dick et al. §4.2, generalised to any number of weeks.

For bounded data (exactly k distinct sorted topics per user-week, see ``bounding``):

* ``within[w][i, j]`` (i < j, upper triangle only) = number of users with both topics i and j in
  week w — the paper's f11, f22 for weeks 0 and 1; C(m,2) values per week;
* ``across[w][i, j]`` = number of users with topic i in week w and topic j in week w+1 — the
  paper's f12 for weeks (0, 1); m² ordered values per consecutive week pair;
* ``overlap[ℓ−1, j]`` (optional, ``overlap_counts``) = number of users sharing exactly j topics
  between the first week and the week ℓ later (the persistence statistic, not in the paper).

One pass over the users in a numba kernel: each thread owns a block of users and its own
histograms (pair code ``o1 * m + o2``), so there are no temporaries proportional to n and no
atomics; the per-thread histograms are summed at the end.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
import numpy.typing as npt
from numba import njit, prange

from topicslab._checks import integer, integer_array, refuse


@dataclass(frozen=True)
class PairCounts:
    """Exact (private) counts: ``within int64[W, m, m]`` (upper triangle), ``across
    int64[W-1, m, m]``, and ``overlap int64[L, k+1]`` when the release has the persistence
    statistic (``None`` otherwise)."""

    within: npt.NDArray[np.int64]
    across: npt.NDArray[np.int64]
    overlap: npt.NDArray[np.int64] | None = None

    @property
    def m(self) -> int:
        return int(self.within.shape[1])

    @property
    def n_weeks(self) -> int:
        return int(self.within.shape[0])


@njit(cache=True, parallel=True)
def _count_kernel(s: np.ndarray, m: int, hist: np.ndarray) -> None:
    """Table by table: a block's users count into one m × m table (within week w, or week w
    followed by w + 1) before the next, so the table stays in cache (0.9 MB of int32 for
    469 topics): all 2r − 1 tables at once, 26 MB a thread at r = 8, missed the caches on
    nearly every count."""
    n, n_weeks, k = s.shape
    n_blocks = hist.shape[0]
    block = (n + n_blocks - 1) // n_blocks
    for t in prange(n_blocks):
        lo = t * block
        hi = min(n, lo + block)
        for q in range(hist.shape[1]):
            h = hist[t, q]
            if q < n_weeks:
                for u in range(lo, hi):
                    for a in range(k):
                        base = np.int64(s[u, q, a]) * m
                        for b in range(a + 1, k):
                            h[base + s[u, q, b]] += 1
            else:
                w = q - n_weeks
                for u in range(lo, hi):
                    for a in range(k):
                        base = np.int64(s[u, w, a]) * m
                        for b in range(k):
                            h[base + s[u, w + 1, b]] += 1


#: the largest taxonomy the m x m count tables are built for (v2 has 469 topics; int16 ids)
MAX_TOPICS = 32767


def _int16_sets(value: object, field: str) -> npt.NDArray[np.int16]:
    """``value`` as contiguous int16 topic indices: integers (or whole floats) in -1..32767."""
    arr = integer_array(value, field)
    if arr.size and (int(arr.min()) < -1 or int(arr.max()) > MAX_TOPICS):
        raise refuse(f"{field} must hold topic indices in -1..{MAX_TOPICS}, got "
                     f"{int(arr.min())}..{int(arr.max())}", field)
    return np.ascontiguousarray(arr, dtype=np.int16)


def pair_counts(bounded: npt.NDArray[np.int16], m: int) -> PairCounts:
    """Within-week (unordered) and consecutive across-week (ordered) pair counts.

    ``bounded`` must come from ``bound_contributions`` (rows sorted ascending, no empties):
    sortedness is what puts every within-week pair in the upper triangle.
    """
    # (a fraction was truncated to a topic, and an int32 id past 32767 wrapped to another;
    # m = 10**6 was a MemoryError; ParameterError is a ValueError, as before)
    m = integer(m, "m", at_least=1, at_most=MAX_TOPICS, why="a taxonomy's size")
    s = _int16_sets(bounded, "bounded")
    if s.ndim != 3:
        raise refuse("bounded sets must be [n_users, n_weeks, k]", "bounded")
    if not (s.shape[1] and s.shape[2]):
        # (NumPy's "zero-size array to reduction operation minimum", or of no week and no
        # user "negative dimensions are not allowed")
        raise refuse(f"bounded sets must hold at least one week and k >= 1 topics a week, got "
                     f"shape {s.shape}", "bounded")
    n, n_weeks, _ = s.shape
    if n and (int(s.min()) < 0 or int(s.max()) >= m or not _rows_increasing(s)):
        raise refuse("pair_counts needs bounded sets (k distinct sorted topics per week)",
                     "bounded")
    n_queries = 2 * n_weeks - 1
    n_blocks = max(1, min(numba.get_num_threads(), n))
    from topicslab._resources import require_memory

    # a block's count of one pair is at most its users: int32 while they fit
    per_block = -(-n // n_blocks)
    cell = np.int32 if per_block < 2**31 else np.int64
    require_memory((np.dtype(cell).itemsize * n_blocks + 8.0) * n_queries * m * m,
                   f"the pair counts of {m:,} topics over {n_weeks} weeks", field="m")
    hist = np.zeros((n_blocks, n_queries, m * m), dtype=cell)
    if n:
        _count_kernel(s, m, hist)
    total = hist.sum(axis=0, dtype=np.int64).reshape(n_queries, m, m)
    return PairCounts(within=total[:n_weeks], across=total[n_weeks:])


@njit(cache=True)
def _rows_increasing(s: np.ndarray) -> bool:
    """Every week's row strictly increasing (without ``np.diff``'s copies: 1 GB of
    temporaries at the paper's scale)."""
    n, n_weeks, k = s.shape
    for u in range(n):
        for w in range(n_weeks):
            for j in range(1, k):
                if s[u, w, j] <= s[u, w, j - 1]:
                    return False
    return True


@njit(cache=True, parallel=True)
def _shared_kernel(s: np.ndarray, shared: np.ndarray) -> None:
    n, n_cols, k = s.shape
    for u in prange(n):
        for lag in range(1, n_cols):
            # both rows are sorted and distinct: a merge counts the shared topics
            a = 0
            b = 0
            count = 0
            while a < k and b < k:
                x = s[u, 0, a]
                y = s[u, lag, b]
                if x == y:
                    count += 1
                    a += 1
                    b += 1
                elif x < y:
                    a += 1
                else:
                    b += 1
            shared[u, lag - 1] = count


def overlap_counts(bounded: npt.NDArray[np.int16]) -> npt.NDArray[np.int64]:
    """``int64[L, k+1]``: how many users share exactly j topics between week 0 of
    ``bounded`` (``[n, 1 + L, k]``, from ``bound_contributions``) and week ℓ, ℓ = 1..L.

    Each user adds exactly one unit to one bin of every lag, whatever their topics: the L2
    sensitivity of the whole histogram is √L under add/remove-one-user.
    """
    s = _int16_sets(bounded, "bounded")  # (a fraction was truncated to a topic)
    if s.ndim != 3 or s.shape[1] < 2:
        raise refuse("overlap_counts needs bounded sets [n_users, 1 + lags, k]", "bounded")
    n, n_cols, k = s.shape
    if n and ((s < 0).any() or (np.diff(s, axis=-1) <= 0).any()):
        raise refuse("overlap_counts needs bounded sets (k distinct sorted topics per week)",
                     "bounded")
    # int16: k reaches the taxonomy's size (469), and int8 wrapped past 127 shared topics
    shared = np.zeros((n, n_cols - 1), dtype=np.int16)
    if n:
        _shared_kernel(s, shared)
    return np.stack([np.bincount(shared[:, lag], minlength=k + 1)[:k + 1]
                     for lag in range(n_cols - 1)]).astype(np.int64)
