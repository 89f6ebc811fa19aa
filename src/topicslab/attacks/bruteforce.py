"""The brute-force reference engine: compare every query with every site-1 user.

This is the definition of the attacks, implemented as directly as possible (as the public
reference pipelines do: every target against every query, no index): the match set of each
(user, query) pair is computed by comparing the two traces week by week, and scored through the
same canonical ``subset_scores`` table as the exact engine. ``O(n · Q · r)``: for tests and for
the speed-up figure of the benchmark, not for production sizes.

Public names:
    brute_force_counts(site1, queries)                 int64[Q, 2^r] match-set counts
    brute_force_outcomes(site1, queries, scores, true_masks) -> list[TargetOutcomes]
    brute_force_members(site1, queries, scores)        (query, user) pairs of the argmax sets
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from numba import njit, prange

from topicslab._checks import integer_array, refuse
from topicslab.attacks.outcomes import TargetOutcomes


@njit(cache=True, inline="always")
def _mask(row: np.ndarray, query: np.ndarray) -> np.int64:
    m = np.int64(0)
    for w in range(query.shape[0]):
        if query[w] >= 0 and row[w] == query[w]:
            m |= np.int64(1) << w
    return m


@njit(cache=True, parallel=True)
def _counts(site1: np.ndarray, queries: np.ndarray, out: np.ndarray) -> None:
    n = site1.shape[0]
    for q in prange(queries.shape[0]):
        for u in range(n):
            out[q, _mask(site1[u], queries[q])] += 1


@njit(cache=True, parallel=True)
def _outcomes(site1: np.ndarray, queries: np.ndarray, scores: np.ndarray,
              true_masks: np.ndarray, size: np.ndarray, inside: np.ndarray,
              best: np.ndarray) -> None:
    n = site1.shape[0]
    n_att = scores.shape[0]
    for q in prange(queries.shape[0]):
        for a in range(n_att):
            best[a, q] = -np.inf
            size[a, q] = 0
        for u in range(n):
            m = _mask(site1[u], queries[q])
            for a in range(n_att):
                s = scores[a, q, m]
                if s > best[a, q]:
                    best[a, q] = s
                    size[a, q] = 1
                elif s == best[a, q]:
                    size[a, q] += 1
        t = true_masks[q]
        for a in range(n_att):
            inside[a, q] = t >= 0 and n > 0 and scores[a, q, t] == best[a, q]


def _prepare(site1: npt.ArrayLike, queries: npt.ArrayLike
             ) -> tuple[npt.NDArray[np.integer], npt.NDArray[np.integer]]:
    # (fractional answers were compared as they came: no answer matched, silently;
    # ParameterError is a ValueError, as before)
    s1 = integer_array(site1, "site1")
    qs = integer_array(queries, "queries")
    if s1.ndim != 2 or qs.ndim != 2 or s1.shape[1] != qs.shape[1]:
        raise refuse("site1 [n, r] and queries [Q, r] must have the same number of weeks",
                     "queries")
    dt = np.result_type(s1.dtype, qs.dtype)
    return np.ascontiguousarray(s1, dtype=dt), np.ascontiguousarray(qs, dtype=dt)


def brute_force_counts(site1: npt.ArrayLike, queries: npt.ArrayLike) -> npt.NDArray[np.int64]:
    """Match-set counts by comparing every pair (reference for ``match_set_counts``)."""
    s1, qs = _prepare(site1, queries)
    out = np.zeros((qs.shape[0], 1 << qs.shape[1]), dtype=np.int64)
    if qs.shape[0]:
        _counts(s1, qs, out)
    return out


def brute_force_outcomes(
    site1: npt.ArrayLike,
    queries: npt.ArrayLike,
    scores: list[npt.NDArray[np.float64]],
    true_masks: npt.ArrayLike,
) -> list[TargetOutcomes]:
    """Per-attack outcomes by scoring every (user, query) pair.

    Args:
        site1, queries: ``[n, r]`` and ``[Q, r]`` traces.
        scores: one ``float64[Q, 2^r]`` table per attack (``subset_scores`` of its gains).
        true_masks: ``int64[Q]`` match set of each query's true user (``-1``: absent).
    """
    s1, qs = _prepare(site1, queries)
    n_q = qs.shape[0]
    sc = np.ascontiguousarray(np.stack(scores) if scores else
                              np.zeros((0, n_q, 1 << qs.shape[1])), dtype=np.float64)
    n_att = sc.shape[0]
    size = np.zeros((n_att, n_q), dtype=np.int64)
    inside = np.zeros((n_att, n_q), dtype=np.bool_)
    best = np.full((n_att, n_q), -np.inf)
    if n_q and n_att:
        _outcomes(s1, qs, sc, np.ascontiguousarray(true_masks, dtype=np.int64), size, inside,
                  best)
    return [TargetOutcomes(size[a], inside[a], best[a]) for a in range(n_att)]


def brute_force_members(
    site1: npt.ArrayLike,
    queries: npt.ArrayLike,
    scores: npt.NDArray[np.float64],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The argmax sets of one attack as sorted ``(query, user)`` pairs (small data only)."""
    s1, qs = _prepare(site1, queries)
    agree = (s1[None, :, :] == qs[:, None, :]) & (qs[:, None, :] >= 0)
    masks = (agree.astype(np.int64) << np.arange(qs.shape[1], dtype=np.int64)).sum(axis=2)
    user_scores = np.take_along_axis(np.asarray(scores), masks, axis=1)
    if user_scores.shape[1] == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    best = user_scores.max(axis=1, keepdims=True)
    q_idx, u_idx = np.nonzero(user_scores == best)
    return q_idx.astype(np.int64), u_idx.astype(np.int64)


__all__ = ["brute_force_counts", "brute_force_members", "brute_force_outcomes"]
