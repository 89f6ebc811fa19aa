"""QIF primitives on explicit channel matrices (Alvim et al., CCS 2024, Sec. 2.3).

A channel ``C`` is a row-stochastic matrix ``X x Y`` with ``C[x, y] = P(y | x)``; a prior ``pi``
is a distribution on ``X``; a gain function is a matrix ``G`` of shape ``W x X`` (actions by
secrets). ``G=None`` means the identity gain, i.e. Bayes vulnerability (eqs 5-7).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from topicslab._checks import integer, is_integer, value_shown
from topicslab.qif.errors import QIFError, QIFParameterError

Array = npt.NDArray[np.float64]

#: Tolerance for row sums and prior sums (channels are built from floats).
_ATOL = 1e-9


def as_channel(c: npt.ArrayLike, field: str = "c") -> Array:
    """Validate and return ``c`` as a float row-stochastic matrix; a refusal names the
    caller's argument ``field`` (``parallel(c1, c2)`` said "a channel must be a non-empty
    2-d matrix" of either, naming neither)."""
    arr = _floats(c, "a channel", field)
    # (a channel of no secret or no output passed: k_anonymity and bayes_capacity then
    # failed on NumPy's "zero-size array to reduction operation" ValueError)
    if arr.ndim != 2 or 0 in arr.shape:
        raise QIFParameterError(f"a channel must be a non-empty 2-d matrix, got shape "
                                f"{arr.shape}", field=field)
    if (arr < -_ATOL).any():
        raise QIFParameterError("a channel must not have negative entries", field=field)
    if not np.allclose(arr.sum(axis=1), 1.0, atol=1e-7):
        raise QIFParameterError("every row of a channel must sum to 1", field=field)
    return arr


def as_prior(pi: npt.ArrayLike, n: int | None = None, field: str = "pi") -> Array:
    """Validate and return ``pi`` as a probability vector (of length ``n`` if given)."""
    if n is not None:  # (a pandas Series was "truth value of a Series is ambiguous", and
        # "2" or 2.5 "must be a vector of length 2" for a vector of two)
        n = integer(n, "n", at_least=1, error=QIFParameterError)
    arr = _floats(pi, "the prior", field)
    if arr.ndim != 1 or (n is not None and arr.shape[0] != n):
        # (without n: "must be a vector of length None")
        length = "" if n is None else f" of length {n}"
        raise QIFParameterError(f"the prior must be a vector{length}, got shape {arr.shape}",
                                field=field)
    if (arr < -_ATOL).any() or not math.isclose(float(arr.sum()), 1.0, abs_tol=1e-7):
        raise QIFParameterError("the prior must be a probability distribution", field=field)
    return arr


def uniform(n: int) -> Array:
    """The uniform prior on ``n`` secrets (the 'vanilla' prior of Bayes capacity, eq 8)."""
    # n=True was one secret, 2.5 a TypeError and 10**12 a MemoryError (7.28 TiB)
    if not is_integer(n):
        raise QIFParameterError(f"n must be a number of secrets, got {value_shown(n)}", field="n")
    if n < 1:
        raise QIFParameterError(f"n must be at least 1, got {n}: a prior needs at least one "
                                "secret", field="n")
    from topicslab._resources import require_memory

    require_memory(8.0 * n, f"a prior on {n:,} secrets", field="n")
    return np.full(int(n), 1.0 / n)


def _gain(g: npt.ArrayLike | None, n_secrets: int) -> Array | None:
    if g is None:
        return None
    arr = _floats(g, "a gain matrix", "g")
    if arr.ndim != 2 or arr.shape[1] != n_secrets or arr.shape[0] == 0:
        raise QIFParameterError(f"a gain matrix must be W x {n_secrets}, got shape "
                                f"{arr.shape}", field="g")
    if not np.isfinite(arr).all():  # (a NaN gain gave a NaN vulnerability)
        raise QIFParameterError("a gain matrix must hold finite numbers", field="g")
    return arr


def _floats(value: npt.ArrayLike, what: str, field: str) -> Array:
    """``value`` (the argument ``field``) as a float array; text or ragged lists are refused
    (they were NumPy's "could not convert" or "inhomogeneous shape" ``ValueError``)."""
    from topicslab._checks import host_values, refuse_complex

    held = host_values(value, field, error=QIFParameterError)
    refuse_complex(held, field, error=QIFParameterError)
    try:
        return np.asarray(held, dtype=np.float64)
    except (TypeError, ValueError):
        raise QIFParameterError(f"{what} must be a numeric array, got {str(value)[:40]!r}",
                                field=field) from None


def prior_vulnerability(pi: npt.ArrayLike, g: npt.ArrayLike | None = None) -> float:
    """Prior g-vulnerability, eq 1: ``V_g(pi) = max_w sum_x pi_x g(w, x)``.

    With ``g=None`` this is prior Bayes vulnerability ``max_x pi_x`` (eq 5).
    """
    p = as_prior(pi)
    gm = _gain(g, p.shape[0])
    if gm is None:
        return float(p.max())
    return float((gm @ p).max())


def joint(pi: npt.ArrayLike, c: npt.ArrayLike) -> Array:
    """Joint matrix ``J[x, y] = pi_x C[x, y]``."""
    ch = as_channel(c)
    p = as_prior(pi, ch.shape[0])
    return p[:, None] * ch


def posterior_vulnerability(pi: npt.ArrayLike, c: npt.ArrayLike,
                            g: npt.ArrayLike | None = None) -> float:
    """Posterior g-vulnerability, eq 2: ``sum_y max_w sum_x pi_x C[x, y] g(w, x)``.

    With ``g=None`` this is posterior Bayes vulnerability ``sum_y max_x J[x, y]`` (eq 7).
    """
    j = joint(pi, c)
    gm = _gain(g, j.shape[0])
    if gm is None:
        return float(j.max(axis=0).sum())
    # (W x X) @ (X x Y): expected gain of each action for each observation.
    return float((gm @ j).max(axis=0).sum())


def multiplicative_leakage(pi: npt.ArrayLike, c: npt.ArrayLike,
                           g: npt.ArrayLike | None = None) -> float:
    """Multiplicative g-leakage, eq 3: ``V_g[pi > C] / V_g(pi)``."""
    prior = prior_vulnerability(pi, g)
    if prior <= 0:
        raise QIFError("multiplicative leakage needs a positive prior vulnerability")
    return posterior_vulnerability(pi, c, g) / prior


def bayes_capacity(c: npt.ArrayLike) -> float:
    """Multiplicative Bayes capacity, eq 8: ``ML^x_1(D, C) = sum_y max_x C[x, y]``.

    It is the leakage under the uniform prior and bounds ``L^x_g(pi, C)`` for every prior and
    every non-negative gain function (the 'Miracle' theorem), and by the Dalenius bound (eq 10)
    the leakage about any secret correlated with ``X``.
    """
    return float(as_channel(c).max(axis=0).sum())


def max_case_capacity(c: npt.ArrayLike) -> float:
    """Max-case capacity, eq 9: ``max_{x, x', y : C[x', y] > 0} C[x, y] / C[x', y]``.

    Equals ``e^epsilon`` for DP with the discrete metric. A column mixing zeros and non-zeros
    distinguishes some pair of secrets perfectly, so the ratio (and epsilon) is infinite.
    All-zero columns are never observed and are ignored.
    """
    ch = as_channel(c)
    col_max = ch.max(axis=0)
    col_min = ch.min(axis=0)
    seen = col_max > 0
    if not seen.any():
        raise QIFError("the channel has no observable output")
    if (col_min[seen] <= 0).any():
        return math.inf
    return float((col_max[seen] / col_min[seen]).max())


def epsilon(c: npt.ArrayLike) -> float:
    """Local DP parameter for the discrete metric: ``ln ML^max(C)`` (eqs 9, 22)."""
    return math.log(max_case_capacity(c))


def is_deterministic(c: npt.ArrayLike) -> bool:
    """Whether every row of ``c`` has a single 1 (a function ``X -> Y``)."""
    ch = as_channel(c)
    return bool(np.all((ch == 0) | (ch == 1)) and np.all((ch == 1).sum(axis=1) == 1))


def k_anonymity(c: npt.ArrayLike) -> int:
    """k of a deterministic channel: the least number of 1s in an observable column.

    Sec. 3.2: ``k`` is the minimum count of 1s over the columns of ``C_G``; ``k = 1`` means some
    output identifies its input.
    """
    ch = as_channel(c)
    if not is_deterministic(ch):
        raise QIFError("k-anonymity is defined for deterministic channels only")
    counts = (ch == 1).sum(axis=0)
    return int(counts[counts > 0].min())


__all__ = [
    "as_channel",
    "as_prior",
    "bayes_capacity",
    "epsilon",
    "is_deterministic",
    "joint",
    "k_anonymity",
    "max_case_capacity",
    "multiplicative_leakage",
    "posterior_vulnerability",
    "prior_vulnerability",
    "uniform",
]
