"""Contribution bounding: make the L2 sensitivities of Dick et al. §4.2 (Lemma) true.

The lemma Δ2(f_ww) = sqrt(C(k,2)), Δ2(f_w,w+1) = k holds only if every user contributes exactly
one set of exactly ``k`` distinct topics to every week. ``bound_contributions`` enforces that:

* duplicates inside a week are removed (a set has no multiplicity);
* a week with more than ``k`` distinct topics is rejected (``bound="reject"``, an ``InputError``
  naming the user row and week) or truncated deterministically to its ``k`` lowest dense indices
  (``bound="truncate"``; deterministic so the same input always gives the same bounded data);
* a week with fewer than ``k`` topics is padded with distinct uniformly random topics, as the
  Topics API itself pads short profiles (Dick et al. §3, Algorithm 1);
* **missing weeks**: an all-empty week is padded entirely with random topics. Why this keeps Δ2
  exact: after bounding, *every* user (present or added) contributes a 0/1 vector with exactly
  C(k,2) ones to each within-week count and exactly k² ones to each across-week count, whatever
  their raw data looked like, so adding/removing one user moves each count vector by exactly
  sqrt(C(k,2)) resp. k in L2. Dropping the user-week instead would also respect the bound
  (fewer ones), but it would make the user count differ between weeks and bias the estimate
  n = Σ f_ww / C(k,2) used in post-processing (Dick et al. §4.2); padding keeps every week's total
  exactly n·C(k,2).

Padding randomness is keyed (``topicslab.api.hashing``) by ``(seed, user_id * n_weeks + week)``:
reproducible with a seed, from ``secrets`` otherwise. Which topics are padded or kept never
affects the sensitivity, only the (post-processed) statistics.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

import numba
import numpy as np
import numpy.typing as npt
from numba import njit, prange

from topicslab._checks import integer, integer_array
from topicslab.api.hashing import STREAM_PAD, derive_key
from topicslab.api.topk import pad_row
from topicslab.dp.counts import MAX_TOPICS
from topicslab.dp.params import BoundMode, ContributionBound, contribution_of
from topicslab.errors import InputError

EMPTY = -1
__all__ = ["EMPTY", "BoundMode", "BoundingReport", "bound_contributions", "distinct_per_week"]


@dataclass(frozen=True)
class BoundingReport:
    """What bounding changed (audit data: derived from the private input, NOT private)."""

    duplicates_removed: int
    weeks_truncated: int
    weeks_padded: int
    weeks_missing: int
    padded_slots: int


@njit(cache=True, parallel=True)
def _pad_rows(flat: np.ndarray, rows: np.ndarray, filled: np.ndarray, row_keys: np.ndarray,
              k: int, m: int, pad_key: np.uint64) -> None:
    for i in prange(rows.shape[0]):
        r = rows[i]
        row = np.empty(k, dtype=np.int64)
        for s in range(k):
            row[s] = flat[r, s]
        pad_row(row, filled[i], k, m, pad_key, row_keys[i])
        row.sort()
        for s in range(k):
            flat[r, s] = row[s]


@njit(cache=True)
def _row_keys(rows: np.ndarray, ukeys: np.ndarray, n_weeks: int) -> np.ndarray:
    """``ukeys[row // n_weeks] · n_weeks + row % n_weeks`` (uint64, wrapping as NumPy's) of
    each padded row: its key without three temporaries of every padded row (45M rows of
    360 MB each at the paper's scale)."""
    out = np.empty(rows.size, dtype=np.uint64)
    w = np.uint64(n_weeks)
    for i in range(rows.size):
        out[i] = ukeys[rows[i] // n_weeks] * w + np.uint64(rows[i] % n_weeks)
    return out


@njit(cache=True, parallel=True)
def _distinct_kernel(a: np.ndarray, out: np.ndarray, count: np.ndarray,
                     dups: np.ndarray) -> None:
    """Row by row (``[rows, width]``): the distinct topics ascending, empties (any negative)
    last as -1, their number, and the repeats dropped (per thread in ``dups``)."""
    rows, width = a.shape
    n_blocks = dups.shape[0]
    per = (rows + n_blocks - 1) // n_blocks
    for b in prange(n_blocks):
        buf = np.empty(width, dtype=np.int16)
        dropped = 0
        for r in range(b * per, min(rows, (b + 1) * per)):
            n = 0
            for j in range(width):
                v = a[r, j]
                if v < 0:
                    continue
                i = n  # insertion sort of the row's topics
                while i > 0 and buf[i - 1] > v:
                    buf[i] = buf[i - 1]
                    i -= 1
                buf[i] = v
                n += 1
            c = 0
            for j in range(n):
                if j > 0 and buf[j] == buf[j - 1]:
                    dropped += 1
                    continue
                out[r, c] = buf[j]
                c += 1
            for j in range(c, width):
                out[r, j] = EMPTY
            count[r] = c
        dups[b] = dropped


def _distinct_rows(a: npt.NDArray[np.int16]
                   ) -> tuple[npt.NDArray[np.int16], int, npt.NDArray[np.int16]]:
    """Each row sorted with its repeats made empty (empties last), how many repeats, and each
    row's distinct topics. One compiled pass: NumPy's sort of five-slot rows (twice when a
    row repeats a topic) took 1.8 s of 2M users × 8 weeks."""
    flat = np.ascontiguousarray(a, dtype=np.int16).reshape(-1, a.shape[-1])
    out = np.empty_like(flat)
    count = np.empty(flat.shape[0], dtype=np.int16)
    dups = np.zeros(max(1, min(numba.get_num_threads(), flat.shape[0])), dtype=np.int64)
    if flat.size:
        _distinct_kernel(flat, out, count, dups)
    return out.reshape(a.shape), int(dups.sum()), count.reshape(a.shape[:-1])


def distinct_per_week(sets: npt.ArrayLike) -> npt.NDArray[np.int64]:
    """``[n_users, n_weeks]``: the distinct topics of each user-week (empties and repeats not
    counted), what contribution bounding compares with k."""
    return _distinct_rows(np.asarray(sets).astype(np.int16, copy=False))[2].astype(np.int64)


def bound_contributions(
    sets: npt.ArrayLike,
    m: int,
    *,
    k: int | None = None,
    bound: BoundMode | None = None,
    seed: int | None = None,
    user_ids: npt.ArrayLike | None = None,
    contribution: ContributionBound | None = None,
) -> tuple[npt.NDArray[np.int16], BoundingReport]:
    """Return ``int16[n, weeks, k]``: exactly ``k`` distinct sorted topics per user-week.

    Args:
        sets: ``[n_users, n_weeks, width]`` dense indices, ``-1`` empty (any order, duplicates
            allowed); ``width`` may differ from ``k``; the weeks already selected.
        m: taxonomy size (padding universe; indices must be in ``0..m-1``).
        contribution: ``k`` and ``bound`` (its ``weeks`` are not used here), or the keywords:
        k: topics per week after bounding (default 5, as in the paper).
        bound: ``"reject"`` (default) over-long weeks with an ``InputError`` or
            ``"truncate"`` them.
        seed: padding seed (``None``: drawn from ``secrets``).
        user_ids: global user ids keying the padding (default ``0..n-1``).
    """
    contribution = contribution_of(contribution, k=k, bound=bound)
    # (None or text: "'>' not supported between instances of 'int' and 'NoneType'")
    m = integer(m, "m", at_least=1, at_most=MAX_TOPICS, why="the taxonomy size")
    contribution.check_topics(m)
    k, bound = contribution.k, contribution.bound
    # a fraction was truncated to a topic, and an index past int16 wrapped (65546 became
    # topic 10) before the range check
    a = integer_array(sets, "sets")
    if a.ndim != 3:
        raise InputError(f"topic sets must be [n_users, n_weeks, k], got shape {a.shape}")
    uids = (np.arange(a.shape[0], dtype=np.int64) if user_ids is None
            else integer_array(user_ids, "user_ids").astype(np.int64))
    n, n_weeks, _ = a.shape
    if n and n_weeks and not a.shape[2]:
        # (NumPy's "cannot reshape array of size 0 into shape (0)"; the writers refuse such
        # sets too)
        raise InputError(f"the sets hold no slot a week (shape {a.shape}); give each week at "
                         "least one slot (-1: empty)", field="sets")
    # user_ids of another length and seed=-1 or 1.5 were taken, whether padding used them or not
    if uids.shape != (n,):
        raise InputError(f"user_ids must have one entry per user ({n}), got shape {uids.shape}",
                         field="user_ids")
    if seed is not None:
        seed = integer(seed, "seed", at_least=0, at_most=2**64 - 1)
    # (the extremes first: the masks are only built to name the row of a bad index)
    if a.size and (int(a.min()) < EMPTY or int(a.max()) >= m):
        u, w, s = np.argwhere((a < EMPTY) | (a >= m))[0]
        raise InputError(f"topic index {int(a[u, w, s])} out of range 0..{m - 1}",
                         row=int(u) + 1, field=f"epoch_{w}_topics")
    a = a.astype(np.int16, copy=False)
    a, n_dup, count = _distinct_rows(a)  # (count: int16; int64 was 0.6 GB at 10M × 8 weeks)
    over = count > k
    n_over = int(over.sum())
    if n_over and bound == "reject":
        u, w = np.argwhere(over)[0]
        uid = int(uids[u])
        raise InputError(
            f"user {uid} has {int(count[u, w])} distinct topics in week {int(w)}, more than "
            f"k={k} (use bound='truncate' / --bound truncate to keep the {k} lowest ids)",
            row=int(u) + 1, field=f"epoch_{w}_topics")
    width = a.shape[2]
    if width >= k:
        # sorted ascending: the first k are the k lowest dense indices (= lowest taxonomy ids)
        out = np.ascontiguousarray(a[..., :k])
    else:
        out = np.full((n, n_weeks, k), EMPTY, dtype=np.int16)
        out[..., :width] = a
    count = np.minimum(count, k)
    short = count < k
    if short.any():
        ukeys = uids.astype(np.uint64)
        rows = np.flatnonzero(short.ravel())
        row_keys = _row_keys(rows, ukeys, n_weeks)
        key_seed = secrets.randbits(63) if seed is None else int(seed)
        flat = out.reshape(n * n_weeks, k)
        _pad_rows(flat, rows.astype(np.int64), count.ravel()[rows].astype(np.int64),
                  row_keys, k, m, derive_key(key_seed, STREAM_PAD))
    report = BoundingReport(
        duplicates_removed=n_dup,
        weeks_truncated=n_over,
        weeks_padded=int(short.sum()),
        weeks_missing=int((count == 0).sum()),
        padded_slots=int((k - count).sum()),
    )
    return out, report
