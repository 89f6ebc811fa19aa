"""Topic popularity from one website's answers (Carey et al. App. D, Lemma 10).

``p[o] = P(o ∈ S_i^s)`` is not observable, but each answer equals ``o`` with probability
``q_in·p[o] + q_out·(1 − p[o])``, so the unbiased estimator from website 1's answers is

    p̂[o] = (1/N) Σ_i (1[W_i = o] − q_out) / (q_in − q_out),

and with probability ``1 − δ``, uniformly over the ``|T|`` topics (Hoeffding + union bound),

    |p̂[o] − p[o]| ≤ (1 / (q_in − q_out)) · sqrt(log(2|T|/δ) / (2N)).

The attack pools all weeks (``p_s[o] = p[o]``, E.1.2). As in the public reference
implementation a pseudo-count is added to every topic's count before estimating (so a topic
nobody was shown still gets a finite weight), and estimates are clipped into ``(0, 1)``.

Public names:
    estimate_popularity(answers, m, q_in, q_out, *, pseudo_count=1.0, clip=1e-6)
    lemma10_radius(n, m, q_in, q_out, delta)     the bound's half-width
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
from numba import njit, prange

from topicslab._checks import integer, integer_array, number, refuse

#: rows per block of ``_count_topics`` (each block counts into its own row of the partials)
_COUNT_BLOCK = 1 << 18


def estimate_popularity(
    answers: npt.ArrayLike,
    m: int,
    q_in: float,
    q_out: float,
    *,
    pseudo_count: float = 1.0,
    clip: float | None = 1e-6,
) -> npt.NDArray[np.float64]:
    """Lemma 10's estimate of ``p[o]`` for every topic ``o`` in ``0..m-1``.

    Args:
        answers: topic indices seen by one website (any shape; ``-1`` = withheld, ignored).
            Pass one week for ``p_s``, or all weeks for the pooled ``p`` of the attack.
        m: number of topics ``|T|``.
        q_in, q_out: answer probabilities of a topic in / not in the profile.
        pseudo_count: added to every topic's count (0 gives the plain estimator).
        clip: clip into ``[clip, 1 - clip]``; ``None`` leaves the raw (possibly negative) value.

    Returns:
        ``float64[m]``.
    """
    # (a NaN pseudo-count gave NaN popularities, float answers NumPy's casting TypeError,
    # ids below -1 were ignored as withheld; ParameterError is a ValueError, as before)
    # (2**70 topics was NumPy's "Maximum allowed dimension exceeded"; the QIF functions
    # take at most 10**6, as qif.MAX_TOPICS)
    m = integer(m, "m", at_least=1, at_most=10**6)
    q_in = number(q_in, "q_in", lo=0.0, hi=1.0)
    q_out = number(q_out, "q_out", lo=0.0, hi=1.0)
    if not q_in > q_out:
        raise refuse(f"need q_in > q_out, got {q_in} <= {q_out}", "q_in")
    pseudo_count = number(pseudo_count, "pseudo_count", lo=0.0)
    if clip is not None:
        clip = number(clip, "clip", lo=0.0, hi=0.5, lo_open=True, hi_open=True)
    tally = TopicTally.of(integer_array(answers, "answers"), m)
    tally.refuse_outside(m)
    return popularity_from_counts(tally.counts, q_in, q_out, pseudo_count=pseudo_count,
                                  clip=clip)


def popularity_from_counts(counts: npt.NDArray[np.int64], q_in: float, q_out: float, *,
                           pseudo_count: float = 1.0, clip: float | None = 1e-6,
                           ) -> npt.NDArray[np.float64]:
    """``estimate_popularity`` from each topic's number of answers (arguments checked by
    the caller)."""
    pooled = float(pseudo_count) + counts.astype(np.float64)
    total = pooled.sum()
    if total <= 0:
        raise refuse("no answers to estimate popularity from (and no pseudo-count)", "answers")
    p = (pooled / total - q_out) / (q_in - q_out)
    if clip is not None:
        p = np.clip(p, clip, 1.0 - clip)
    return p


class TopicTally:
    """Each topic's number of answers in an integer array, with the smallest and largest
    value seen (``low``, ``high``; 0 and -1 for no answers) and the number withheld (-1)."""

    def __init__(self, counts: npt.NDArray[np.int64], withheld: int, low: int, high: int):
        self.counts, self.withheld, self.low, self.high = counts, withheld, low, high

    @classmethod
    def of(cls, answers: npt.NDArray[np.integer], m: int) -> TopicTally:
        """One compiled pass over ``answers`` (any shape; a strided 2-d view is read in
        place): NumPy's ravel copied a trace table's column suffix, its bincount cast every
        answer to int64 and the range checks read the answers twice more (the paper
        preset's fidelity fits the asymmetric attack to 36 week columns of 10M users per
        trial and site: 2 s of them)."""
        a = answers if answers.ndim == 2 else answers.reshape(-1, 1)
        if a.dtype == np.uint64 and a.size and int(a.max()) > np.iinfo(np.int64).max:
            # (the kernel reads int64: such a value would come back as a negative topic)
            return cls(np.zeros(m, dtype=np.int64), 0, 0, int(a.max()))
        counts, withheld, low, high = _count_topics(a, np.int64(m))
        return cls(counts, int(withheld), int(low), int(high))

    def refuse_outside(self, m: int) -> None:
        """Refuse answers outside ``-1..m-1`` (the largest past the top first)."""
        if self.high >= m or self.low < -1:
            bad = self.high if self.high >= m else self.low
            raise refuse(f"answers hold topic {bad} but the taxonomy has {m} topics (-1: "
                         "withheld)", "answers")


@njit(cache=True, nogil=True, parallel=True)
def _count_topics(a: npt.NDArray[np.integer], m: np.int64,
                  ) -> tuple[npt.NDArray[np.int64], np.int64, np.int64, np.int64]:
    n, c = a.shape
    blocks = (n + _COUNT_BLOCK - 1) // _COUNT_BLOCK
    part = np.zeros((blocks, m + 1), dtype=np.int64)  # column m: withheld (-1)
    lows = np.zeros(blocks, dtype=np.int64)
    highs = np.full(blocks, -1, dtype=np.int64)
    for b in prange(blocks):
        low, high = np.int64(0), np.int64(-1)
        first = True
        for i in range(b * _COUNT_BLOCK, min(n, (b + 1) * _COUNT_BLOCK)):
            for j in range(c):
                v = np.int64(a[i, j])
                if first:
                    low, high, first = v, v, False
                low = min(low, v)
                high = max(high, v)
                if 0 <= v < m:
                    part[b, v] += 1
                elif v == -1:
                    part[b, m] += 1
        lows[b], highs[b] = low, high
    total = part.sum(axis=0)
    low = lows.min() if blocks else np.int64(0)
    high = highs.max() if blocks else np.int64(-1)
    return total[:m], total[m], low, high


def lemma10_radius(n: int, m: int, q_in: float, q_out: float, delta: float) -> float:
    """Half-width of Lemma 10's uniform confidence band (probability ``1 - delta``)."""
    n = integer(n, "n", at_least=1)  # ("10" was a TypeError, 2.5 users a radius)
    m = integer(m, "m", at_least=1)
    delta = number(delta, "delta", lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    q_in = number(q_in, "q_in", lo=0.0, hi=1.0)
    q_out = number(q_out, "q_out", lo=0.0, hi=1.0)
    if not q_in > q_out:
        raise refuse("need n >= 1, m >= 1, 0 < delta < 1 and q_in > q_out", "q_in")
    return math.sqrt(math.log(2 * m / delta) / (2 * n)) / (q_in - q_out)


__all__ = ["estimate_popularity", "lemma10_radius"]
