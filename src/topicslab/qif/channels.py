"""Explicit (materialised) channels of the Topics API model, for small m and s.

These matrices exist to check the structured, closed-form computations of
:mod:`topicslab.qif.topics` by brute force; for m = 629, s = 5 there are C(629, 5) ~ 8e11 rows
and nothing here should be called (see ``MAX_ROWS``).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import numpy.typing as npt

from topicslab._checks import integer, integer_array
from topicslab.qif.core import Array
from topicslab.qif.errors import QIFError, QIFParameterError
from topicslab.qif.topics import check_params, counting_pq, p_q

#: Refuse to materialise channels with more rows than this (memory and time guard).
MAX_ROWS = 200_000


def identity_channel(n: int) -> Array:
    """The identity channel (e.g. ``C_BH``, ``C_U``: users -> histories -> uids, Alg. 1)."""
    # (n = 10**6 was a MemoryError of 7.28 TiB, 2.5 a TypeError)
    n = integer(n, "n", at_least=1, error=QIFParameterError, why="a channel needs a secret")
    from topicslab._resources import require_memory

    require_memory(8.0 * n * n, f"the identity channel on {n:,} secrets", field="n")
    return np.eye(n)


def deterministic_channel(outputs: npt.ArrayLike, n_outputs: int | None = None) -> Array:
    """The 0/1 channel of a function ``x -> outputs[x]`` (e.g. ``C_G``: user -> top-s set)."""
    # (0.5 was cast to column 0, an index of 10**12 a MemoryError of 7.28 TiB)
    f = np.asarray(integer_array(outputs, "outputs", error=QIFParameterError), dtype=np.int64)
    if f.ndim != 1 or f.size == 0 or (f < 0).any():
        raise QIFError("outputs must be a non-empty vector of non-negative column indices")
    n = int(f.max()) + 1 if n_outputs is None else integer(
        n_outputs, "n_outputs", at_least=1, error=QIFParameterError)
    if (f >= n).any():
        raise QIFError("an output index exceeds n_outputs")
    from topicslab._resources import require_memory

    require_memory(8.0 * f.shape[0] * n, f"a deterministic channel of {f.shape[0]:,} x {n:,}",
                   field="n_outputs" if n_outputs is not None else "outputs")
    out = np.zeros((f.shape[0], n))
    out[np.arange(f.shape[0]), f] = 1.0
    return out


def generalisation_channel(profiles: npt.ArrayLike) -> tuple[Array, npt.NDArray[np.int64]]:
    """``C_G`` (Alg. 2, lines 1-3): users (rows of ``profiles``) -> their distinct top-s sets.

    ``profiles`` is any ``[n_users, ...]`` array (a set per user, or a sequence of sets for
    several epochs). Returns the deterministic matrix (columns = distinct profiles in
    ``np.unique`` order) and those distinct profiles' first-user indices.
    """
    # (no users was NumPy's reshape ValueError, a string an IndexError, and a fraction or
    # NaN was taken as a topic of its own)
    arr = np.asarray(integer_array(profiles, "profiles", error=QIFParameterError))
    if arr.ndim == 0 or arr.shape[0] == 0:
        raise QIFParameterError(f"profiles must be an [n_users, ...] array of at least one "
                                f"user, got shape {arr.shape}", field="profiles")
    flat = arr.reshape(arr.shape[0], -1)
    _, first, inverse = np.unique(flat, axis=0, return_index=True, return_inverse=True)
    return deterministic_channel(inverse.ravel(), first.shape[0]), first.astype(np.int64)


def all_sets(m: int, s: int) -> npt.NDArray[np.int64]:
    """Every s-subset of ``range(m)`` in lexicographic order, as ``int64[C(m, s), s]``."""
    check_params(m, s, 0.0)
    n = math.comb(m, s)
    if n > MAX_ROWS:
        raise QIFError(f"C({m}, {s}) = {n:,} sets is too many to materialise")
    return np.array(list(itertools.combinations(range(m), s)), dtype=np.int64).reshape(n, s)


def _membership(m: int, sets: npt.ArrayLike | None, s: int) -> npt.NDArray[np.bool_]:
    # (a fractional id was truncated to a topic, NaN cast to one)
    rows = all_sets(m, s) if sets is None else np.asarray(
        integer_array(sets, "sets", error=QIFParameterError), dtype=np.int64)
    if rows.ndim != 2 or rows.shape[0] > MAX_ROWS:
        raise QIFError("sets must be a [n_sets, s] matrix of at most MAX_ROWS rows")
    if ((rows < 0) | (rows >= m)).any():
        raise QIFError("a topic index is outside range(m)")
    member = np.zeros((rows.shape[0], m), dtype=bool)
    member[np.repeat(np.arange(rows.shape[0]), rows.shape[1]), rows.ravel()] = True
    if (member.sum(axis=1) != s).any():
        raise QIFError(f"every set must have {s} distinct topics")
    return member


def bounded_noise_channel(m: int, s: int, sets: npt.ArrayLike | None = None) -> Array:
    """``C_BN[sigma, t] = 1/s`` if ``t in sigma`` else 0 (Alg. 3 without the random topic)."""
    check_params(m, s, 0.0)
    return _membership(m, sets, s) / s


def dp_channel(m: int, s: int, sets: npt.ArrayLike | None = None) -> Array:
    """``C_DP[sigma, t] = 1/m``: a topic drawn uniformly from the whole taxonomy."""
    check_params(m, s, 0.0)
    # the sets are checked as the other channels check them (topic 20 with m = 10, or sets
    # of another size, were taken: only their count was read)
    n = math.comb(m, s) if sets is None else _membership(m, sets, s).shape[0]
    if n > MAX_ROWS:  # (C(469, 5) rows: "MemoryError: Unable to allocate 632. TiB")
        raise QIFError(f"{n:,} sets is too many to materialise (at most {MAX_ROWS:,} rows)")
    return np.full((n, m), 1.0 / m)


def reporting_channel(m: int, s: int, r: float, sets: npt.ArrayLike | None = None) -> Array:
    """``C_BN (+)_r DP``, eq 11: ``(1-r)/s + r/m`` if ``t in sigma`` else ``r/m``.

    Rows are ``sets`` (default: all C(m, s) sets, lexicographic), columns the m topics.
    """
    check_params(m, s, r)
    p, q = p_q(m, s, r)
    return np.where(_membership(m, sets, s), p, q)


def counting_channel(m: int, s: int, r: float) -> Array:
    """``C_in``, eq 25: rows ``t in sigma`` -> ``[p, 1-p]``, ``t not in sigma`` -> ``[q, 1-q]``.

    Warner-style randomised response on whether a given topic is in a user's top-s set.
    """
    p, q = counting_pq(m, s, r)
    return np.array([[p, 1.0 - p], [q, 1.0 - q]])


__all__ = [
    "MAX_ROWS",
    "all_sets",
    "bounded_noise_channel",
    "counting_channel",
    "deterministic_channel",
    "dp_channel",
    "generalisation_channel",
    "identity_channel",
    "reporting_channel",
]
