"""Per-target outcomes of an attack: argmax set size, membership, exact and sampled success.

For a query (a target's site-2 trace) the attacker names a user of site 1 uniformly at random
among the *argmax set* (the users with the best score, ties broken at random; Carey et al.
App. D). So
given the argmax set ``A`` and the true user ``u*``:

* exact expected success = ``1/|A|`` if ``u* ∈ A`` else 0 (Lemma 1 with the rule's matrix A);
* the randomly tie-broken success is a Bernoulli draw with that probability; sampling "is the
  named user the true one" directly (draw a uniform position in ``A``) avoids materialising A.

Public names:
    TargetOutcomes                       argmax_size, in_argmax, best_score; expected(), sample()
    outcomes_from_counts(counts, scores, true_masks)
                                         the argmax decision from match-set counts
    outcomes_from_gains(counts, gains, true_masks)
                                         the same with the scores computed per query
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from numba import njit, prange

from topicslab.attacks.scoring import checked_gains, query_scores, score_scratch, top_bits


@dataclass(frozen=True)
class TargetOutcomes:
    """What one attack achieved on each query.

    Attributes:
        argmax_size: ``int64[Q]`` number of site-1 users with the best score.
        in_argmax: ``bool[Q]`` whether the true user is among them.
        best_score: ``float64[Q]`` the best score (sum of gains of the best match set).
    """

    argmax_size: npt.NDArray[np.int64]
    in_argmax: npt.NDArray[np.bool_]
    best_score: npt.NDArray[np.float64]

    def __len__(self) -> int:
        return int(self.argmax_size.shape[0])

    def expected(self) -> npt.NDArray[np.float64]:
        """Exact expected success of the randomly tie-broken attacker, per query."""
        size = np.maximum(self.argmax_size, 1).astype(np.float64)
        return np.where(self.in_argmax, 1.0 / size, 0.0)

    def sample(self, rng: np.random.Generator) -> npt.NDArray[np.bool_]:
        """Randomly tie-broken success: the named user is a uniform member of the argmax set."""
        pick = rng.integers(0, np.maximum(self.argmax_size, 1))
        return self.in_argmax & (pick == 0)


@njit(cache=True, inline="always")
def _decide_row(counts: np.ndarray, scores: np.ndarray, true_mask: int, q: int,
                size: np.ndarray, inside: np.ndarray, best_out: np.ndarray) -> None:
    n_sets = counts.shape[1]
    best = -np.inf
    for m in range(n_sets):
        if counts[q, m] > 0 and scores[m] > best:
            best = scores[m]
    total = 0
    for m in range(n_sets):
        if counts[q, m] > 0 and scores[m] == best:
            total += counts[q, m]
    size[q] = total
    best_out[q] = best
    inside[q] = true_mask >= 0 and counts[q, true_mask] > 0 and scores[true_mask] == best


@njit(cache=True, parallel=True)
def _decide(counts: np.ndarray, scores: np.ndarray, true_masks: np.ndarray,
            size: np.ndarray, inside: np.ndarray, best_out: np.ndarray) -> None:
    for q in prange(counts.shape[0]):
        _decide_row(counts, scores[q], true_masks[q], q, size, inside, best_out)


@njit(cache=True, parallel=True)
def _decide_from_gains(counts: np.ndarray, gains: np.ndarray, true_masks: np.ndarray,
                       size: np.ndarray, inside: np.ndarray, best_out: np.ndarray) -> None:
    n_q, n_sets = counts.shape
    r = gains.shape[1]
    top = top_bits(n_sets)
    block = 1024
    for b in prange((n_q + block - 1) // block):
        order, total, week_mask = score_scratch(r, n_sets)
        scores = np.empty(n_sets, dtype=np.float64)
        for q in range(b * block, min(n_q, (b + 1) * block)):
            query_scores(gains, q, top, order, total, week_mask, scores)
            _decide_row(counts, scores, true_masks[q], q, size, inside, best_out)


def outcomes_from_counts(counts: npt.NDArray[np.int64], scores: npt.NDArray[np.float64],
                         true_masks: npt.NDArray[np.int64]) -> TargetOutcomes:
    """The argmax decision of one attack from the exact match-set counts.

    Args:
        counts: ``int64[Q, 2^r]``: ``counts[q, M]`` = number of site-1 users whose match set
            with query ``q`` is exactly ``M``.
        scores: ``float64[Q, 2^r]`` from ``subset_scores`` (the attack's gains).
        true_masks: ``int64[Q]`` match set of each query's true user (``-1``: not on site 1).
    """
    c = np.ascontiguousarray(counts, dtype=np.int64)
    s = np.ascontiguousarray(scores, dtype=np.float64)
    t = np.ascontiguousarray(true_masks, dtype=np.int64)
    if c.shape != s.shape or t.shape != (c.shape[0],):
        raise ValueError("counts, scores and true_masks do not match")
    return _decided(_decide, c, s, t)


def outcomes_from_gains(counts: npt.NDArray[np.int64], gains: npt.ArrayLike,
                        true_masks: npt.NDArray[np.int64]) -> TargetOutcomes:
    """``outcomes_from_counts(counts, subset_scores(gains), true_masks)``, the same outcomes,
    with each query's 2^r scores computed beside its decision instead of a ``[Q, 2^r]``
    table written and read back (the paper preset's fidelity stage scores 200K targets
    × 2^8 match sets per r, attack, trial and side: 2 s of its 30 at 2M users)."""
    c = np.ascontiguousarray(counts, dtype=np.int64)
    g = checked_gains(gains)
    t = np.ascontiguousarray(true_masks, dtype=np.int64)
    if c.ndim != 2 or g.shape[0] != c.shape[0] or c.shape[1] != 1 << g.shape[1] \
            or t.shape != (c.shape[0],):
        raise ValueError("counts, gains and true_masks do not match")
    return _decided(_decide_from_gains, c, g, t)


def _decided(kernel: Any, counts: npt.NDArray[np.int64], values: npt.NDArray[np.float64],
             true_masks: npt.NDArray[np.int64]) -> TargetOutcomes:
    """The outcomes ``kernel`` (``_decide`` of scores, ``_decide_from_gains`` of gains)
    finds for checked arrays."""
    n_q = counts.shape[0]
    size = np.zeros(n_q, dtype=np.int64)
    inside = np.zeros(n_q, dtype=np.bool_)
    best = np.full(n_q, -np.inf)
    if n_q:
        kernel(counts, values, true_masks, size, inside, best)
    return TargetOutcomes(size, inside, best)


__all__ = ["TargetOutcomes", "outcomes_from_counts", "outcomes_from_gains"]
