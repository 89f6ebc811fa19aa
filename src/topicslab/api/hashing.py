"""Keyed, counter-based randomness for the Topics API simulation.

Chrome seeds the choice of a (user, site, week) answer so that it is fixed for the week. We
model that with a keyed hash: every random decision is a pure function of
``(key, user, site, week[, counter])``, so any slice of users, sites or weeks can be regenerated
independently (and in parallel) with identical results, and no state is carried between calls.

The mixer is the SplitMix64 finaliser (Stafford's "Mix13" constants), applied once per input
word so each word is fully avalanched before the next is folded in. This is a *simulation*
generator with good statistical quality, not a cryptographic one: it stands in for the browser's
secret per-user seed, which the simulation does not need to keep from anyone.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from topicslab._checks import integer

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)
_S32 = np.uint64(32)
_S11 = np.uint64(11)

#: Domain separators: the same seed drives independent streams for different decisions.
STREAM_ANSWER = 0x5A5A_0001
STREAM_TIEBREAK = 0x5A5A_0002
STREAM_PAD = 0x5A5A_0003
STREAM_FILTER = 0x5A5A_0004
STREAM_POPULATION = 0x5A5A_0005


@njit(cache=True, inline="always")
def mix64(z: np.uint64) -> np.uint64:
    """SplitMix64 finaliser: a bijective 64-bit avalanche."""
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


@njit(cache=True, inline="always")
def hash3(key: np.uint64, a: np.uint64, b: np.uint64, c: np.uint64) -> np.uint64:
    """Keyed hash of three 64-bit words."""
    h = mix64(key ^ (a * _GOLDEN))
    h = mix64(h ^ (b * _M1))
    return mix64(h ^ (c * _M2))


@njit(cache=True, inline="always")
def hash4(key: np.uint64, a: np.uint64, b: np.uint64, c: np.uint64, d: np.uint64) -> np.uint64:
    """Keyed hash of four 64-bit words."""
    return mix64(hash3(key, a, b, c) ^ (d * _GOLDEN))


@njit(cache=True, inline="always")
def next_word(h: np.uint64) -> np.uint64:
    """A further independent-looking word from a hash value (for a second decision)."""
    return mix64(h + _GOLDEN)


@njit(cache=True, inline="always")
def below(h: np.uint64, n: np.int64) -> np.int64:
    """Uniform integer in ``[0, n)`` from the high 32 bits (Lemire's multiply-shift).

    The bias is at most n / 2**32 (< 1.1e-7 for n <= 469), far below any statistic we test.
    """
    return np.int64(((h >> _S32) * np.uint64(n)) >> _S32)


@njit(cache=True, inline="always")
def unit(h: np.uint64) -> float:
    """Uniform float in ``[0, 1)`` with 53 random bits."""
    return float(h >> _S11) * (1.0 / 9007199254740992.0)


def derive_key(seed: int, stream: int) -> np.uint64:
    """A 64-bit key for one decision stream of a seed (pure Python, called once per batch)."""
    mask = (1 << 64) - 1

    def _mix(z: int) -> int:
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        return z ^ (z >> 31)

    # (a float seed failed on '&': "unsupported operand type(s)")
    # (a seed past 64 bits was masked: 2**64 drew seed 0's users)
    seed = integer(seed, "seed", at_least=0, at_most=mask,
                   why="the keys are derived from a 64-bit seed")
    return np.uint64(_mix(_mix(seed) ^ ((stream * 0x9E3779B97F4A7C15) & mask)))


def probability_threshold(p: float) -> np.uint64:
    """Integer threshold t with ``P(h >> 11 < t) = p`` for 53-bit uniform words."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"probability must be in [0, 1], got {p}")
    return np.uint64(min(round(p * 2.0**53), 2**53))
