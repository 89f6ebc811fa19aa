"""Match sets and the score of a match set (docs/design.md §Exact attack engine).

Every attack of this package scores a site-1 user ``i`` against a query trace ``o`` (the target's
site-2 trace) through its *match set* ``M(i) = {s : W_i^s = o^s}`` only:

    score(i) = sum_{s in M(i)} gain[s]

with a per-query, per-week ``gain`` (1 for the Hamming attack; ``Δ(o^s)`` = mismatch − match
distance for the asymmetric attack of Theorem 1). A week where either side is missing (``-1``,
a withheld answer) never matches.

Exactness: two match sets holding the same multiset of gains must get bit-identical scores, so
ties are decided exactly. ``subset_scores`` therefore adds a subset's gains in one canonical
order (ascending gain value), the same for every subset of a query; both engines score through
this one table, so they can only disagree on *which users have which match set*.

Public names:
    match_masks(rows, queries)    int64 bit masks of the matching weeks (bit s = week s)
    subset_scores(gains)          float64[Q, 2^r] score of every match set, canonical sums
    MAX_WEEKS                     largest supported trace length (2^r match sets per query)
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from numba import njit, prange

from topicslab.errors import ParameterError

#: 2^r match sets are tracked per query; beyond this the tables stop being small.
MAX_WEEKS = 16


def match_masks(rows: npt.NDArray[np.integer], queries: npt.NDArray[np.integer]
                ) -> npt.NDArray[np.int64]:
    """Bit mask of the weeks where ``rows[j]`` and ``queries[j]`` agree (both present).

    Args:
        rows: ``[Q, r]`` site-1 traces (e.g. of each query's true user).
        queries: ``[Q, r]`` site-2 traces.
    """
    a = np.asarray(rows)
    b = np.asarray(queries)
    if a.ndim != 2 or a.shape != b.shape:
        raise ValueError(f"rows and queries must be [Q, r] traces of one shape, got "
                         f"{a.shape} and {b.shape}")
    agree = (a == b) & (b >= 0)
    weights = np.left_shift(np.int64(1), np.arange(a.shape[1], dtype=np.int64))
    return (agree.astype(np.int64) * weights).sum(axis=1)


@njit(cache=True, inline="always")
def top_bits(n_sets: int) -> np.ndarray:
    """``top[p]`` = the highest bit of ``p`` (``top[0] = top[1] = 0``)."""
    top = np.zeros(n_sets, dtype=np.int64)
    for p in range(2, n_sets):
        top[p] = top[p >> 1] + 1
    return top


@njit(cache=True, inline="always")
def score_scratch(r: int, n_sets: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``query_scores``' scratch: ``order`` (r), ``total`` and ``week_mask`` (2^r)."""
    return (np.empty(r, dtype=np.int64), np.empty(n_sets, dtype=np.float64),
            np.empty(n_sets, dtype=np.int64))


@njit(cache=True, inline="always")
def query_scores(gains: np.ndarray, q: int, top: np.ndarray, order: np.ndarray,
                 total: np.ndarray, week_mask: np.ndarray, dest: np.ndarray) -> None:
    """``dest[M]`` = the score of match set ``M`` of query ``q`` (``order``, ``total`` and
    ``week_mask`` are scratch of r and 2^r values).

    A set's sum in ascending order of the gains is the sum of the set without its largest
    gain, plus that gain (the same additions, in the same order, as summing left to right),
    so each of the 2^r sums takes one addition."""
    r = gains.shape[1]
    # stable insertion sort of the r gains (r <= 16): the order of the summation
    for j in range(r):
        v = gains[q, j]
        i = j
        while i > 0 and gains[q, order[i - 1]] > v:
            order[i] = order[i - 1]
            i -= 1
        order[i] = j
    total[0] = 0.0
    week_mask[0] = 0
    dest[0] = 0.0
    for p in range(1, dest.shape[0]):
        t = top[p]
        rest = p ^ (1 << t)
        w = order[t]
        total[p] = total[rest] + gains[q, w]
        week_mask[p] = week_mask[rest] | (1 << w)
        dest[week_mask[p]] = total[p]


@njit(cache=True, parallel=True)
def _subset_scores_kernel(gains: np.ndarray, out: np.ndarray) -> None:
    n_q, r = gains.shape
    n_sets = out.shape[1]
    top = top_bits(n_sets)
    block = 4096
    for b in prange((n_q + block - 1) // block):
        order, total, week_mask = score_scratch(r, n_sets)
        for q in range(b * block, min(n_q, (b + 1) * block)):
            query_scores(gains, q, top, order, total, week_mask, out[q])


def checked_gains(gains: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """``gains`` as a C-ordered ``float64[Q, r]`` of finite values, r <= ``MAX_WEEKS``."""
    # (ParameterError, a ValueError, as these were; text was NumPy's ValueError)
    try:
        g = np.ascontiguousarray(gains, dtype=np.float64)
    except (TypeError, ValueError):
        raise ParameterError("gains must be an array of numbers", field="gains") from None
    if g.ndim != 2:
        raise ParameterError(f"gains must be [n_queries, n_weeks], got shape {g.shape}",
                             field="gains")
    if g.shape[1] > MAX_WEEKS:
        raise ParameterError(f"at most {MAX_WEEKS} weeks are supported, got {g.shape[1]}",
                             field="gains")
    if not np.isfinite(g).all():
        raise ParameterError("gains must be finite", field="gains")
    return g


def subset_scores(gains: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Score of every match set of every query: ``float64[Q, 2^r]``.

    ``out[q, M] = sum_{s in M} gains[q, s]`` (bit ``s`` of ``M`` = week ``s``), summed in
    ascending order of the gain values so equal multisets give identical floats.
    """
    g = checked_gains(gains)
    out = np.empty((g.shape[0], 1 << g.shape[1]), dtype=np.float64)
    if g.shape[0]:
        _subset_scores_kernel(g, out)
    return out


__all__ = ["MAX_WEEKS", "match_masks", "subset_scores"]
