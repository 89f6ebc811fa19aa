"""The fitting targets: DP statistics checked and laid out as the terms of J
(Dick et al. §5.1).

Public names:
    Targets                        q_single[m], q_within[m, m], q_across[m, m], taxonomy, k,
                                   fingerprint; ``Targets.from_statistics(stats)``
    check_statistics(stats)        reject NaN / infinite / negative / > 1 / wrongly shaped
                                   statistics or a taxonomy that does not match them
    statistics_fingerprint(stats)  sha256 of the targets (recorded in ``model.json``)
    n_terms(r, m, n_pairs)         number of terms of J
    target_terms(targets, r, n_pairs) -> float64[N]   the targets in term order
    model_terms(qs, qw, qa) -> float64[N]              model statistics in the same order

Term order (used by the objective, the fitter's minibatches and ``topicslab.validate``):
singles ``(i, o)`` for weeks i = 0..r−1; within ``(i, o1 < o2)`` row-major upper triangle per
week; across ``(pair p, o1, o2)`` row-major per week pair. N = r·m + r·C(m,2) + p·m².

Only DP statistics enter here (post-processing): this package never sees a population.
"""

from __future__ import annotations

import hashlib
import math
import os
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from topicslab._checks import integer, is_integer, refuse_complex
from topicslab.errors import InputError
from topicslab.taxonomy import Taxonomy, resolve

__all__ = [
    "Targets",
    "check_statistics",
    "model_terms",
    "n_terms",
    "statistics_fingerprint",
    "target_terms",
]

_FIELDS = ("q_single", "q_within", "q_across")
_FAMILIES = ("single", "within", "across")


def _statistic(stats: Any, name: str) -> npt.NDArray[np.float64]:
    """``stats.name`` as float64; a model (whose ``q_single`` is a method) or another object
    was "float() argument must be ... not 'method'"."""
    from topicslab._checks import host_values

    value = getattr(stats, name, None)
    if not callable(value):
        value = host_values(value, name)  # (a tensor that requires grad)
        try:
            return np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            pass
    raise InputError(f"{type(stats).__name__} holds no {name} array: give DP statistics "
                     "(dp.load_statistics or dp.compute_statistics)", field=name)


def check_statistics(stats: Any) -> None:
    """Raise ``InputError`` naming the field and entry of the first bad statistic.

    Checks: a taxonomy, k ≥ 2, shapes ``[m]``, ``[m, m]``, ``[m, m]`` with m the taxonomy's
    size (a mismatch means statistics of another taxonomy), every value finite and in
    [0, 1], q_within symmetric with a zero diagonal.
    """
    if not all(hasattr(stats, name) for name in ("taxonomy", *_FIELDS)):
        # a path, a dict or None: "field 'taxonomy': statistics carry no usable taxonomy
        # ('str' object has no attribute 'taxonomy')", a field the caller did not give
        hint = (f"; load them first: dp.load_statistics({os.fspath(stats)!r})"
                if isinstance(stats, str | os.PathLike) else "")
        raise InputError(f"expected DP statistics (dp.load_statistics or "
                         f"dp.compute_statistics), got {type(stats).__name__}{hint}",
                         field="stats")
    try:
        tax = resolve(stats.taxonomy)
    except Exception as exc:
        raise InputError(f"statistics carry no usable taxonomy ({exc})",
                         field="taxonomy") from None
    k = getattr(stats, "k", None)
    if not is_integer(k) or int(k) < 2:  # type: ignore[arg-type]
        raise InputError(f"k must be an integer >= 2, got {k!r}", field="k")
    m = tax.size
    shapes = {"q_single": (m,), "q_within": (m, m), "q_across": (m, m)}
    for name in _FIELDS:
        arr = _statistic(stats, name)
        if arr.shape != shapes[name]:
            raise InputError(
                f"shape {arr.shape} does not match taxonomy {tax.version} "
                f"({m} topics, expected {shapes[name]}): statistics of another taxonomy?",
                field=name)
        bad = ~np.isfinite(arr)
        if bad.any():
            idx = tuple(int(x) for x in np.argwhere(bad)[0])
            raise InputError(f"value {arr[idx]} at {_topics(tax, idx)} is not finite",
                             field=name)
        for cond, what in ((arr < 0, "negative"), (arr > 1, "greater than 1")):
            if cond.any():
                idx = tuple(int(x) for x in np.argwhere(cond)[0])
                raise InputError(f"value {arr[idx]:.6g} at {_topics(tax, idx)} is {what} "
                                 "(not a probability)", field=name)
    qw = _statistic(stats, "q_within")
    if np.abs(np.diagonal(qw)).max(initial=0.0) > 0:
        raise InputError("diagonal must be zero (pairs of two different topics)",
                         field="q_within")
    asym = np.abs(qw - qw.T)
    if asym.max(initial=0.0) > 1e-12:
        idx = tuple(int(x) for x in np.unravel_index(int(np.argmax(asym)), asym.shape))
        raise InputError(f"not symmetric at {_topics(tax, idx)}", field="q_within")


def _topics(tax: Taxonomy, idx: tuple[int, ...]) -> str:
    ids = [int(tax.ids[i]) for i in idx]
    return "topic " + " -> ".join(str(i) for i in ids)


def check_overlap(q_overlap: Any, k: int) -> npt.NDArray[np.float64] | None:
    """The persistence statistic ``[L, k+1]`` checked (finite, in [0, 1], rows summing to 1),
    or ``None`` (``dp.postprocess.check_overlap``, which ``DPStatistics`` also runs)."""
    if q_overlap is None:
        return None
    from topicslab.dp.postprocess import check_overlap as check

    return check(q_overlap, k)


def statistics_fingerprint(stats: Any) -> str:
    """``sha256:`` of taxonomy version, k and the target arrays (float64 bytes; the
    persistence statistic too when the release has one)."""
    h = hashlib.sha256()
    tax = resolve(stats.taxonomy)
    h.update(repr((tax.version, int(stats.k))).encode())
    for name in _FIELDS:
        h.update(np.ascontiguousarray(_statistic(stats, name)).tobytes())
    overlap = getattr(stats, "q_overlap", None)
    if overlap is not None:
        h.update(b"q_overlap")
        h.update(np.ascontiguousarray(overlap, dtype=np.float64).tobytes())
    return "sha256:" + h.hexdigest()


@dataclass(frozen=True)
class Targets:
    """Checked DP statistics, the targets q* of J."""

    q_single: npt.NDArray[np.float64]
    q_within: npt.NDArray[np.float64]
    q_across: npt.NDArray[np.float64]
    taxonomy: Taxonomy
    k: int
    fingerprint: str
    #: standard deviation of the DP noise on one term of each family (``single``,
    #: ``within``, ``across``), from the privacy ledger; ``None`` when unknown
    noise_sigma: dict[str, float] | None = None
    #: the persistence statistic ``[L, k+1]`` (overlap of week J and J + ℓ), ``None`` when the
    #: release has none
    q_overlap: npt.NDArray[np.float64] | None = None

    @classmethod
    def from_statistics(cls, stats: Any) -> Targets:
        """Check ``stats`` (a ``DPStatistics`` or anything with its fields) and wrap it; the
        noise scale comes from ``stats.noise_sigmas()`` when it has one (public: the ledger)."""
        check_statistics(stats)
        sigmas = getattr(stats, "noise_sigmas", None)
        noise = sigmas() if callable(sigmas) else None
        if noise is not None and not all(math.isfinite(float(noise.get(f, math.nan))) and
                                         float(noise[f]) >= 0 for f in _FAMILIES):
            noise = None
        overlap = check_overlap(getattr(stats, "q_overlap", None), int(stats.k))
        families = _FAMILIES + (("overlap",) if noise is not None and "overlap" in noise
                                and math.isfinite(float(noise["overlap"]))
                                and float(noise["overlap"]) >= 0 else ())
        return cls(_statistic(stats, "q_single").copy(), _statistic(stats, "q_within").copy(),
                   _statistic(stats, "q_across").copy(),
                   resolve(stats.taxonomy), int(stats.k), statistics_fingerprint(stats),
                   None if noise is None else {f: float(noise[f]) for f in families},
                   overlap)

    @property
    def m(self) -> int:
        return self.taxonomy.size


def n_terms(r: int, m: int, n_pairs: int | None = None) -> int:
    """Number of terms of J: r·m + r·C(m, 2) + p·m² (p = r − 1 consecutive pairs by default);
    1,100,743 for m = 469, r = 4."""
    r, p = _weeks_and_pairs(r, n_pairs)
    m = integer(m, "m", at_least=1)
    return r * m + r * math.comb(m, 2) + p * m * m


def _weeks_and_pairs(r: object, n_pairs: object) -> tuple[int, int]:
    """``r`` weeks (at least one) and ``n_pairs`` week pairs (``r - 1`` if ``None``): r = 0
    counted a negative number of terms (-219,961 at m = 469), r = 1.5 a fraction."""
    weeks = integer(r, "r", at_least=1)
    pairs = weeks - 1 if n_pairs is None else integer(n_pairs, "n_pairs", at_least=0)
    return weeks, pairs


def target_terms(targets: Targets, r: int, n_pairs: int | None = None,
                 ) -> npt.NDArray[np.float64]:
    """The targets of every term of J, in term order (stationarity: the same q* each week)."""
    r, p = _weeks_and_pairs(r, n_pairs)
    iu = np.triu_indices(targets.m, 1)
    return np.concatenate([np.tile(targets.q_single, r),
                           np.tile(targets.q_within[iu], r),
                           np.tile(targets.q_across.ravel(), p)])


def model_terms(q_single: npt.ArrayLike, q_within: npt.ArrayLike, q_across: npt.ArrayLike,
                ) -> npt.NDArray[np.float64]:
    """Model statistics ``[r, m]``, ``[r, m, m]``, ``[p, m, m]`` flattened in term order."""
    for name, value in (("q_single", q_single), ("q_within", q_within),
                        ("q_across", q_across)):
        refuse_complex(value, name)  # (the real part was taken, with a warning at most)
    qs = np.asarray(q_single, dtype=np.float64)
    qw = np.asarray(q_within, dtype=np.float64)
    qa = np.asarray(q_across, dtype=np.float64)
    m = qs.shape[-1] if qs.ndim == 2 else 0
    if (qs.ndim != 2 or qw.shape != (qs.shape[0], m, m) or qa.ndim != 3
            or qa.shape[1:] != (m, m)):
        # another shape was NumPy's IndexError ("too many indices for array"), or terms of
        # the wrong count without a word
        raise InputError(f"the statistics must be q_single [r, m], q_within [r, m, m] and "
                         f"q_across [p, m, m], got shapes {qs.shape}, {qw.shape} and "
                         f"{qa.shape}", field="q_within")
    iu = np.triu_indices(m, 1)
    return np.concatenate([qs.ravel(), qw[:, iu[0], iu[1]].ravel(), qa.ravel()])
