"""The count queries of Dick et al. §4.2, generalised to any number of weeks.

For bounded data (exactly k distinct sorted topics per user-week, see ``bounding``):

* ``within[w][i, j]`` (i < j, upper triangle only) = number of users with both topics i and j in
  week w — the paper's f11, f22 for weeks 0 and 1; C(m,2) values per week;
* ``across[w][i, j]`` = number of users with topic i in week w and topic j in week w+1 — the
  paper's f12 for weeks (0, 1); m² ordered values per consecutive week pair.

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


@dataclass(frozen=True)
class PairCounts:
    """Exact (private) counts: ``within int64[W, m, m]`` (upper triangle), ``across
    int64[W-1, m, m]``."""

    within: npt.NDArray[np.int64]
    across: npt.NDArray[np.int64]

    @property
    def m(self) -> int:
        return int(self.within.shape[1])

    @property
    def n_weeks(self) -> int:
        return int(self.within.shape[0])


@njit(cache=True, parallel=True)
def _count_kernel(s: np.ndarray, m: int, hist: np.ndarray) -> None:
    n, n_weeks, k = s.shape
    n_blocks = hist.shape[0]
    block = (n + n_blocks - 1) // n_blocks
    for t in prange(n_blocks):
        lo = t * block
        hi = min(n, lo + block)
        h = hist[t]
        for u in range(lo, hi):
            for w in range(n_weeks):
                for a in range(k):
                    base = np.int64(s[u, w, a]) * m
                    for b in range(a + 1, k):
                        h[w, base + s[u, w, b]] += 1
            for w in range(n_weeks - 1):
                for a in range(k):
                    base = np.int64(s[u, w, a]) * m
                    for b in range(k):
                        h[n_weeks + w, base + s[u, w + 1, b]] += 1


def pair_counts(bounded: npt.NDArray[np.int16], m: int) -> PairCounts:
    """Within-week (unordered) and consecutive across-week (ordered) pair counts.

    ``bounded`` must come from ``bound_contributions`` (rows sorted ascending, no empties):
    sortedness is what puts every within-week pair in the upper triangle.
    """
    s = np.ascontiguousarray(bounded, dtype=np.int16)
    if s.ndim != 3:
        raise ValueError("bounded sets must be [n_users, n_weeks, k]")
    n, n_weeks, _ = s.shape
    if n and ((s < 0).any() or (s >= m).any() or (np.diff(s, axis=-1) <= 0).any()):
        raise ValueError("pair_counts needs bounded sets (k distinct sorted topics per week)")
    n_queries = 2 * n_weeks - 1
    n_blocks = max(1, min(numba.get_num_threads(), n))
    hist = np.zeros((n_blocks, n_queries, m * m), dtype=np.int64)
    if n:
        _count_kernel(s, m, hist)
    total = hist.sum(axis=0).reshape(n_queries, m, m)
    return PairCounts(within=total[:n_weeks], across=total[n_weeks:])
