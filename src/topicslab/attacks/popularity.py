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
    if not q_in > q_out:
        raise ValueError(f"need q_in > q_out, got {q_in} <= {q_out}")
    if pseudo_count < 0:
        raise ValueError("pseudo_count must be >= 0")
    a = np.asarray(answers).ravel()
    if a.size and a.max() >= m:
        raise ValueError(f"answers hold topic {int(a.max())} but the taxonomy has {m} topics")
    counts = np.full(m, float(pseudo_count))
    step = 1 << 22  # chunks: no n·r-sized int64 copy of the answers
    for lo in range(0, a.size, step):
        part = a[lo:lo + step]
        counts += np.bincount(part[part >= 0], minlength=m)[:m]
    total = counts.sum()
    if total <= 0:
        raise ValueError("no answers to estimate popularity from (and no pseudo-count)")
    p = (counts / total - q_out) / (q_in - q_out)
    if clip is not None:
        if not 0 < clip < 0.5:
            raise ValueError("clip must be in (0, 0.5)")
        p = np.clip(p, clip, 1.0 - clip)
    return p


def lemma10_radius(n: int, m: int, q_in: float, q_out: float, delta: float) -> float:
    """Half-width of Lemma 10's uniform confidence band (probability ``1 - delta``)."""
    if n < 1 or m < 1 or not 0 < delta < 1 or not q_in > q_out:
        raise ValueError("need n >= 1, m >= 1, 0 < delta < 1 and q_in > q_out")
    return math.sqrt(math.log(2 * m / delta) / (2 * n)) / (q_in - q_out)


__all__ = ["estimate_popularity", "lemma10_radius"]
