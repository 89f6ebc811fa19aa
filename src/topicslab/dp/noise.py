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
"""

from __future__ import annotations

import math
import os
from fractions import Fraction

import numpy as np
import numpy.typing as npt

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


def _bern_ratio(rw: RandomWords, num: npt.NDArray[np.int64],
                den: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
    """Bernoulli(num/den), exact."""
    return rw.below(den) < num


def _bern_exp_frac(rw: RandomWords, r: npt.NDArray[np.int64],
                   d: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
    """Bernoulli(exp(−r/d)) for 0 ≤ r/d ≤ 1 (CKS Algorithm 1): K odd with P = e^{−γ}."""
    kk = np.ones(r.shape[0], dtype=np.int64)
    act = np.arange(r.shape[0])
    while act.size:
        a = _bern_ratio(rw, r[act], d[act] * kk[act])
        act = act[a]
        kk[act] += 1
        act = act[kk[act] < _K_MAX]
    return (kk % 2) == 1


def bernoulli_exp(rw: RandomWords, num: npt.NDArray[np.int64],
                  den: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
    """Bernoulli(exp(−num/den)) for integers num ≥ 0, den > 0, exact."""
    num = np.asarray(num, dtype=np.int64)
    den = np.asarray(den, dtype=np.int64)
    result = np.ones(num.shape[0], dtype=bool)
    whole = num // den
    act = np.flatnonzero(whole > 0)
    left = whole[act]
    one = np.ones(1, dtype=np.int64)
    while act.size:
        ok = _bern_exp_frac(rw, np.broadcast_to(one, act.shape).copy(),
                            np.broadcast_to(one, act.shape).copy())
        result[act[~ok]] = False
        act, left = act[ok], left[ok] - 1
        keep = left > 0
        act, left = act[keep], left[keep]
    idx = np.flatnonzero(result)
    result[idx] = _bern_exp_frac(rw, num[idx] % den[idx], den[idx])
    return result


def _discrete_laplace(rw: RandomWords, n: int, t: int) -> npt.NDArray[np.int64]:
    """n samples with P(x) ∝ exp(−|x|/t) (CKS Algorithm 2)."""
    out = np.empty(n, dtype=np.int64)
    todo = np.arange(n)
    tt = np.full(n, t, dtype=np.int64)
    while todo.size:
        u = rw.below(tt[:todo.size])
        keep = bernoulli_exp(rw, u, tt[:todo.size])
        cand, u = todo[keep], u[keep]
        m = cand.size
        v = np.zeros(m, dtype=np.int64)
        act = np.arange(m)
        ones = np.ones(m, dtype=np.int64)
        while act.size:
            a = bernoulli_exp(rw, ones[:act.size], ones[:act.size])
            act = act[a]
            v[act] += 1
        x = u + t * v
        neg = (rw.words(m) & np.uint64(1)).astype(bool)
        valid = ~(neg & (x == 0))
        y = np.where(neg, -x, x)
        out[cand[valid]] = y[valid]
        # rejected by the first Bernoulli or (negative, zero): draw again
        todo = np.concatenate([todo[~keep], cand[~valid]])
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
    den_val = 2 * p * q * t * t
    out = np.empty(n, dtype=np.int64)
    todo = np.arange(n)
    while todo.size:
        y = _discrete_laplace(rw, todo.size, t)
        ok = np.abs(y) <= y_max
        diff = np.abs(y) * (q * t) - p
        num = np.where(ok, diff * diff, 0)
        acc = bernoulli_exp(rw, num, np.full(y.shape[0], den_val, dtype=np.int64)) & ok
        out[todo[acc]] = y[acc]
        todo = todo[~acc]
    return out


def sampled_sigma(sigma: float) -> float:
    """The discrete Gaussian parameter actually used for a calibrated σ (≥ σ)."""
    p, q = sigma_rational(sigma)
    return math.sqrt(p / q)
