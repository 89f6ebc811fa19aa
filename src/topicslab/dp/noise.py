"""Discrete Gaussian noise on integer counts (Canonne, Kamath & Steinke 2020, Algorithms 1-3).

Why discrete: continuous Gaussian noise in floating point leaks through its low-order bits
(Mironov 2012's attack on textbook Laplace samplers applies to any float noise added to an exact
value). Here the counts are integers and the noise is an *integer* drawn exactly from the
discrete Gaussian N_Z(0, σ²) (P(x) ∝ exp(−x²/2σ²), x ∈ Z), so the released value carries no
data-dependent low-order bits.

Exactness: the sampler uses only integer arithmetic and exact uniform integers (rejection from
masked 64-bit words): Bernoulli(exp(−γ)) for rational γ (Alg. 1, with the integer part of γ as
repeated Bernoulli(exp(−1))), the discrete Laplace (Alg. 2) and the rejection step (Alg. 3).
σ² is first rounded *up* to a dyadic rational p/q (q = 2^b, as large as int64 allows), so the
noise is slightly larger than calibrated, never smaller. Two documented cut-offs keep int64
arithmetic exact; both change the output distribution by less than 1e-300 per sample:
candidates with |Y| > σ²/t + 40σ (acceptance probability < e^-800) are rejected outright, and
Algorithm 1's counter stops at 64 (probability < 1/64!).

Randomness: ``os.urandom`` (the OS CSPRNG) by default. With ``seed`` the same algorithm runs on a
PCG64 stream instead: reproducible, but NOT cryptographically secure — the ledger says so.

Speed: the algorithms run one sample after another in a compiled (numba) kernel over a buffer of
random words, ~16 words a sample; the 7 tables of a 4-week release (1.1M samples) took 1.42 s as
vectorised NumPy rounds (thousands of passes over shrinking index sets), 0.47 s here, most of it
``os.urandom`` itself (benchmarks/bench_noise.py). Reading the words as a stream of bits (6 for
a uniform integer below 64) took 8 times fewer words but made the kernel 2.4 times slower:
0.61 s. A sample that runs past the buffer is drawn again from its first word once the buffer
is refilled, so every sample is a function of the words from its start, and the refills change
nothing in the output's distribution. A Bernoulli whose outcome is certain (probability 0, or a
uniform below 1) takes no word.
"""

from __future__ import annotations

import math
import os
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt
from numba import njit

from topicslab._checks import integer, number

_K_MAX = 64
_TAIL_SIGMAS = 40
_LIMIT = 2**62


class RandomWords:
    """Uniform 64-bit words from ``os.urandom`` (default) or a seeded PCG64 stream."""

    def __init__(self, seed: int | None = None) -> None:
        # (seed=1.5 or "1" was the stream of seed 1)
        seed = None if seed is None else integer(seed, "seed", at_least=0, at_most=2**64 - 1)
        self.seed = seed
        self._gen = None if seed is None else np.random.PCG64(np.random.SeedSequence(
            [int(seed), 0x7D9_D15C])).random_raw
        self.secure = seed is None

    def words(self, n: int) -> npt.NDArray[np.uint64]:
        if n <= 0:
            return np.empty(0, dtype=np.uint64)
        if self._gen is None:
            return np.frombuffer(os.urandom(8 * n), dtype=np.uint64).copy()
        return np.asarray(self._gen(n), dtype=np.uint64)

    def below(self, bound: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """Exact uniform integers in ``[0, bound)`` (elementwise, ``1 <= bound <= 2**63``)."""
        b = np.asarray(bound, dtype=np.int64).astype(np.uint64)
        mask = b - np.uint64(1)
        for sh in (1, 2, 4, 8, 16, 32):
            mask |= mask >> np.uint64(sh)
        out = np.empty(b.shape[0], dtype=np.uint64)
        todo = np.arange(b.shape[0])
        while todo.size:
            w = self.words(todo.size) & mask[todo]
            ok = w < b[todo]
            out[todo[ok]] = w[ok]
            todo = todo[~ok]
        return out.astype(np.int64)


# ------------------------------------------------------------------- the compiled algorithms
# Each returns its result and the next word's position, or position -1 when the buffer ran out
# (the caller then gives up the sample, to be drawn again from its first word).


@njit(cache=True, inline="always")
def _below(words: np.ndarray, pos: int, bound: int) -> tuple[int, int]:  # pragma: no cover
    """An exact uniform integer in ``[0, bound)``, ``1 <= bound <= 2**62``: masked words,
    rejected above the bound (fewer than half are)."""
    if bound == 1:
        return 0, pos
    b = np.uint64(bound)
    mask = b - np.uint64(1)
    for sh in (1, 2, 4, 8, 16, 32):
        mask |= mask >> np.uint64(sh)
    while pos < words.size:
        w = words[pos] & mask
        pos += 1
        if w < b:
            return int(w), pos
    return 0, -1


@njit(cache=True, inline="always")
def _bern_exp_frac(words: np.ndarray, pos: int, r: int,
                   d: int) -> tuple[bool, int]:  # pragma: no cover
    """Bernoulli(exp(−r/d)) for 0 ≤ r/d ≤ 1 (CKS Algorithm 1): K grows while
    Bernoulli(γ/K) succeeds; K is odd with probability e^{−γ}."""
    k = 1
    while r > 0:  # (Bernoulli(0) fails without a word)
        v, pos = _below(words, pos, d * k)
        if pos < 0:
            return False, pos
        if v >= r:
            break
        k += 1
        if k >= _K_MAX:
            break
    return k % 2 == 1, pos


@njit(cache=True)
def _bernoulli_exp_one(words: np.ndarray, pos: int, num: int,
                       den: int) -> tuple[bool, int]:  # pragma: no cover
    """Bernoulli(exp(−num/den)), integers num ≥ 0, den > 0: the integer part as repeated
    Bernoulli(exp(−1)), then the fraction."""
    for _ in range(num // den):
        ok, pos = _bern_exp_frac(words, pos, 1, 1)
        if pos < 0 or not ok:
            return False, pos
    return _bern_exp_frac(words, pos, num % den, den)


@njit(cache=True)
def _discrete_laplace_one(words: np.ndarray, pos: int,
                          t: int) -> tuple[int, int]:  # pragma: no cover
    """P(x) ∝ exp(−|x|/t) (CKS Algorithm 2)."""
    while True:
        u, pos = _below(words, pos, t)
        if pos < 0:
            return 0, pos
        keep, pos = _bernoulli_exp_one(words, pos, u, t)
        if pos < 0:
            return 0, pos
        if not keep:
            continue
        v = 0
        while True:
            more, pos = _bernoulli_exp_one(words, pos, 1, 1)
            if pos < 0:
                return 0, pos
            if not more:
                break
            v += 1
        x = u + t * v
        if pos >= words.size:
            return 0, -1
        negative = (words[pos] & np.uint64(1)) == np.uint64(1)
        pos += 1
        if negative and x == 0:  # (−0 and +0 are one value: drawn again)
            continue
        return (-x if negative else x), pos


@njit(cache=True)
def _gaussian_kernel(words: np.ndarray, out: np.ndarray, start: int, p: int, q: int,
                     t: int, y_max: int, den: int) -> tuple[int, int]:  # pragma: no cover
    """Fill ``out[start:]`` (CKS Algorithm 3); returns (samples done, words used): short of
    ``out.size`` when the words ran out, the position then that of the unfinished sample's
    first word."""
    pos = 0
    for i in range(start, out.size):
        first = pos
        while True:
            y, pos = _discrete_laplace_one(words, pos, t)
            if pos < 0:
                return i, first
            a = abs(y)
            if a > y_max:  # (acceptance below e^-800: the documented cut-off)
                continue
            diff = a * (q * t) - p
            accept, pos = _bernoulli_exp_one(words, pos, diff * diff, den)
            if pos < 0:
                return i, first
            if accept:
                out[i] = y
                break
    return out.size, pos


@njit(cache=True)
def _bernoulli_exp_kernel(words: np.ndarray, out: np.ndarray, start: int, num: np.ndarray,
                          den: np.ndarray) -> tuple[int, int]:  # pragma: no cover
    """``out[i]`` = Bernoulli(exp(−num[i]/den[i])) from ``start`` on (as ``_gaussian_kernel``)."""
    pos = 0
    for i in range(start, out.size):
        first = pos
        hit, pos = _bernoulli_exp_one(words, pos, num[i], den[i])
        if pos < 0:
            return i, first
        out[i] = hit
    return out.size, pos


#: words a discrete Gaussian sample takes on average at the release's σ (~16 measured at
#: σ = 63), over-asked a little so that most draws need one refill or none
_WORDS_PER_SAMPLE = 18
#: the fewest and the most words asked for at once (8 KB, 16 MB)
_MIN_WORDS, _MAX_WORDS = 1 << 10, 1 << 21


def _fill(rw: RandomWords, out: np.ndarray, kernel: Any, *args: Any) -> None:
    """Run ``kernel`` over fresh words until ``out`` is full; an unfinished sample's words
    are kept and the sample drawn again from its first one."""
    done, left = 0, np.empty(0, dtype=np.uint64)
    while done < out.size:
        ask = min(_MAX_WORDS, max(_MIN_WORDS, _WORDS_PER_SAMPLE * (out.size - done)))
        words = np.concatenate([left, rw.words(ask)])
        done, used = kernel(words, out, done, *args)
        left = words[used:]


def bernoulli_exp(rw: RandomWords, num: npt.NDArray[np.int64],
                  den: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
    """Bernoulli(exp(−num/den)) for integers num ≥ 0, den > 0, exact (elementwise)."""
    # (the kernel indexes both without bounds checks)
    num, den = (np.ascontiguousarray(a, dtype=np.int64).ravel()
                for a in np.broadcast_arrays(num, den))
    out = np.empty(num.shape[0], dtype=np.bool_)
    _fill(rw, out, _bernoulli_exp_kernel, num, den)
    return out


def sigma_rational(sigma: float) -> tuple[int, int]:
    """σ² rounded up to p/q with q a power of two chosen so every int64 product is exact."""
    s2 = Fraction(sigma) ** 2
    for b in range(40 if s2 < 2**64 else -1, -1, -1):  # (1e200 overflowed a float below)
        q = 2**b
        p = math.ceil(s2 * q)
        t = math.isqrt(p // q) + 1
        y_max = math.ceil(Fraction(p, q * t)) + math.ceil(_TAIL_SIGMAS * math.sqrt(p / q)) + 1
        if (y_max * q * t + p) ** 2 < _LIMIT and 2 * p * q * t * t * _K_MAX < _LIMIT:
            return p, q
    from topicslab.errors import ParameterError

    raise ParameterError(f"the noise this budget needs (sigma={sigma:g}) is too large for "
                         "the exact int64 discrete Gaussian sampler (limit about 7000): use a "
                         "larger epsilon or delta", field="epsilon")


def discrete_gaussian(n: int, sigma: float, rw: RandomWords) -> npt.NDArray[np.int64]:
    """``n`` exact samples of N_Z(0, σ'²), σ'² = ``sigma_rational(sigma)`` ≥ σ² (CKS Alg. 3)."""
    # (n = -1 or 2.5 was NumPy's error, sigma = 1e200 an OverflowError, rw=None an
    # AttributeError; ParameterError is a ValueError, as before)
    n = integer(n, "n", at_least=0)
    sigma = number(sigma, "sigma", lo=0.0, lo_open=True)
    if not isinstance(rw, RandomWords):
        raise TypeError(f"rw takes RandomWords, got {type(rw).__name__}")
    from topicslab._resources import require_memory

    # (n = 10**11 was NumPy's "MemoryError: Unable to allocate 745. GiB"; the draw holds
    # the output, the pending indices and a few temporaries of n int64s)
    require_memory(48.0 * n, f"{n:,} discrete Gaussian samples", field="n")
    p, q = sigma_rational(sigma)
    t = math.isqrt(p // q) + 1
    y_max = math.ceil(Fraction(p, q * t)) + math.ceil(_TAIL_SIGMAS * math.sqrt(p / q))
    out = np.empty(n, dtype=np.int64)
    _fill(rw, out, _gaussian_kernel, p, q, t, y_max, 2 * p * q * t * t)
    return out


def sampled_sigma(sigma: float) -> float:
    """The discrete Gaussian parameter actually used for a calibrated σ (≥ σ)."""
    p, q = sigma_rational(sigma)
    return math.sqrt(p / q)
