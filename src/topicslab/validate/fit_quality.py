"""Fit quality: absolute and relative errors of every term of J (paper Fig. 3 and 4).

Public names:
    fit_quality(stats, model, *, bar=QualityBar()) -> FitQuality
    FitQuality     share_abs_within_0_1pp, share_rel_within_20pct, abs_errors, rel_errors,
                   per-family breakdown, loss, histograms/CDFs; ``to_dict()``

Errors are model minus target (signed), over the terms of J for the model's weeks and fitted
week pairs (singles, within-week pairs o1 < o2, across-week ordered pairs), targets being the
DP statistics the fitter saw. Absolute errors are in probability units (0.1 percentage point
= 1e-3); relative errors are (model − target) / target over the terms with target ≥ 0.1%.

Against the noise: at small populations the targets themselves are noisy (the DP noise on a
term is σ/n̂, from the ledger: ``DPStatistics.noise_sigmas``), so a 20%-relative bar compares
the model with noise. ``share_within_2sigma`` is the share of terms whose error is within two
noise standard deviations of their target — about 95% for a model that is as close to the
truth as the noise lets anyone tell (and more when it also fits part of the noise).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from topicslab._checks import integer
from topicslab.errors import InputError
from topicslab.model import QualityBar, Targets, TypeMixture, model_terms, target_terms

__all__ = ["FitQuality", "fit_quality"]

FAMILIES = ("single", "within", "across")
#: Histogram bins of Fig. 4: absolute error in percentage points, relative error in percent.
ABS_BINS_PP = np.linspace(-0.2, 0.2, 81)
REL_BINS_PCT = np.linspace(-100.0, 100.0, 81)
#: CDF evaluation points of Fig. 3 (|error|).
ABS_CDF_PP = np.array([0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0])
REL_CDF_PCT = np.array([1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 50.0, 100.0])


@dataclass
class FitQuality:
    """Errors of a fitted model against its targets.

    Attributes:
        share_abs_within_0_1pp: share of all terms with |error| ≤ ``bar.abs_tol``.
        share_rel_within_20pct: share of terms with target ≥ ``bar.rel_min_target`` whose
            relative error is within ``bar.rel_tol``.
        abs_errors: ``float64[N]`` signed errors of all terms (term order of J).
        rel_errors: ``float64[n_rel]`` signed relative errors of the large terms.
        families: family name of each term (``single``/``within``/``across``).
        loss: J, the mean squared error over all terms.
        bar: the thresholds; ``met``: whether both shares reach the bar.
    """

    share_abs_within_0_1pp: float
    share_rel_within_20pct: float
    abs_errors: npt.NDArray[np.float64]
    rel_errors: npt.NDArray[np.float64]
    families: npt.NDArray[np.int8]
    rel_families: npt.NDArray[np.int8]
    loss: float
    bar: QualityBar = field(default_factory=QualityBar)
    noise_sigma: dict[str, float] | None = None

    @property
    def share_within_2sigma(self) -> float | None:
        """Share of all terms within two DP-noise standard deviations (``None`` without the
        ledger's noise scale)."""
        if self.noise_sigma is None:
            return None
        return float(np.mean(self._within_2sigma()))

    def _within_2sigma(self) -> npt.NDArray[np.bool_]:
        assert self.noise_sigma is not None
        sig = np.array([self.noise_sigma[f] for f in FAMILIES])[self.families]
        return np.asarray(np.abs(self.abs_errors) <= 2.0 * sig)

    @property
    def met(self) -> bool:
        return self.bar.met(self.share_abs_within_0_1pp, self.share_rel_within_20pct)

    @property
    def n_terms(self) -> int:
        return int(self.abs_errors.shape[0])

    def by_family(self) -> dict[str, dict[str, float]]:
        """Term counts, both shares and the mean error per family."""
        out = {}
        for f, name in enumerate(FAMILIES):
            a = self.abs_errors[self.families == f]
            r = self.rel_errors[self.rel_families == f]
            if a.size == 0:
                continue
            out[name] = {
                "terms": int(a.size),
                "share_abs_within": float(np.mean(np.abs(a) <= self.bar.abs_tol)),
                "mean_error": float(a.mean()),
                "mean_abs_error": float(np.abs(a).mean()),
                "rel_terms": int(r.size),
                "share_rel_within": float(np.mean(np.abs(r) <= self.bar.rel_tol))
                if r.size else float("nan"),
            }
            if self.noise_sigma is not None:
                out[name]["noise_sigma"] = self.noise_sigma[name]
                out[name]["share_within_2sigma"] = float(
                    np.mean(self._within_2sigma()[self.families == f]))
        return out

    def to_dict(self, arrays: bool = False) -> dict[str, Any]:
        """JSON-ready summary with the Fig. 3 CDFs and Fig. 4 histograms (``arrays`` adds the
        raw error arrays)."""
        pp = self.abs_errors * 100.0
        pct = self.rel_errors * 100.0
        d: dict[str, Any] = {
            "share_abs_within_0_1pp": self.share_abs_within_0_1pp,
            "share_rel_within_20pct": self.share_rel_within_20pct,
            "met": self.met,
            "share_within_2sigma": self.share_within_2sigma,
            "noise_sigma": self.noise_sigma,
            "bar": self.bar.to_dict(),
            "loss": self.loss,
            "terms": self.n_terms,
            "rel_terms": int(self.rel_errors.shape[0]),
            "by_family": self.by_family(),
            "abs_error_pp": {
                "mean": float(pp.mean()), "median": float(np.median(pp)),
                "quantiles_abs": _quantiles(np.abs(pp)),
                "cdf": {"x": ABS_CDF_PP.tolist(),
                        "share": [float(np.mean(np.abs(pp) <= x)) for x in ABS_CDF_PP]},
                "histogram": _hist(pp, ABS_BINS_PP),
            },
            "rel_error_pct": {
                "mean": float(pct.mean()) if pct.size else float("nan"),
                "median": float(np.median(pct)) if pct.size else float("nan"),
                "quantiles_abs": _quantiles(np.abs(pct)),
                "cdf": {"x": REL_CDF_PCT.tolist(),
                        "share": [float(np.mean(np.abs(pct) <= x)) if pct.size else 1.0
                                  for x in REL_CDF_PCT]},
                "histogram": _hist(pct, REL_BINS_PCT),
            },
        }
        if arrays:
            d["abs_errors"] = self.abs_errors.tolist()
            d["rel_errors"] = self.rel_errors.tolist()
        return d


def _quantiles(x: npt.NDArray[np.float64]) -> dict[str, float]:
    if x.size == 0:
        return {}
    qs = (0.5, 0.9, 0.99, 0.999, 1.0)
    return {f"q{q:g}": float(v) for q, v in zip(qs, np.quantile(x, qs), strict=True)}


def _hist(x: npt.NDArray[np.float64], bins: npt.NDArray[np.float64]) -> dict[str, Any]:
    counts, edges = np.histogram(np.clip(x, bins[0], bins[-1]), bins=bins)
    return {"edges": edges.tolist(), "counts": counts.tolist()}


def fit_quality(stats: Any, model: TypeMixture, *, bar: QualityBar | None = None,
                week_pairs: list[tuple[int, int]] | None = None) -> FitQuality:
    """Errors of every term of J for ``model`` against the DP statistics ``stats``.

    ``week_pairs`` replaces the model's fitted week pairs for the across terms (e.g.
    ``[(r - 1, 0)]``: how well the unfitted wrap-around transition of the stationarity
    rule matches q_across)."""
    if not isinstance(model, TypeMixture):  # None failed on .taxonomy (AttributeError)
        raise TypeError(f"fit_quality takes a TypeMixture (a fitted model) as model, got "
                        f"{type(model).__name__}")
    if bar is not None and not isinstance(bar, QualityBar):  # (a str failed on an attribute)
        raise TypeError(f"bar takes a QualityBar, got {type(bar).__name__}")
    bar = bar or QualityBar()
    targets = Targets.from_statistics(stats)
    if targets.taxonomy.version != model.taxonomy.version:
        raise InputError(f"statistics use taxonomy {targets.taxonomy.version}, the model "
                         f"{model.taxonomy.version}", field="taxonomy")
    if targets.k != model.k:
        raise InputError(f"statistics have k={targets.k}, the model k={model.k}", field="k")
    # (a week past the model's, or a negative one, was taken as it came; 1.5 as week 1)
    last = model.weeks - 1
    given = None if week_pairs is None else _pairs_of(week_pairs)
    if week_pairs is not None and given is None:
        # (True, 1.5 or [1] was Python's "object is not iterable" or an unpacking ValueError)
        raise InputError(f"week_pairs must be a list of (week, next week) pairs such as "
                         f"[(0, 1)], got {week_pairs!r}", field="week_pairs")
    pairs = model.week_pairs if given is None else [
        (integer(a, "week_pairs", at_least=0, at_most=last),
         integer(b, "week_pairs", at_least=0, at_most=last)) for a, b in given]
    from topicslab.model.fit import has_week_pair

    if pairs and not has_week_pair(getattr(stats, "ledger", None)):
        # (its all-zero q_across was scored as targets: 219,961 across terms against zeros,
        # where the fit refuses the combination)
        raise InputError(f"a model of {model.weeks} weeks is scored on across-week terms, but "
                         "the release has one week (its privacy ledger lists no across-week "
                         "query): score a one-week model, or statistics of two weeks",
                         field="weeks")
    qs, qw, qa = model.statistics(pairs)
    got = model_terms(qs, qw, qa)
    want = target_terms(targets, model.weeks, len(pairs))
    m, r = model.m, model.weeks
    fam = np.concatenate([np.zeros(r * m, np.int8),
                          np.ones(r * (m * (m - 1) // 2), np.int8),
                          np.full(len(pairs) * m * m, 2, np.int8)])
    err = got - want
    big = want >= bar.rel_min_target
    rel = err[big] / want[big]
    return FitQuality(
        share_abs_within_0_1pp=float(np.mean(np.abs(err) <= bar.abs_tol)),
        share_rel_within_20pct=float(np.mean(np.abs(rel) <= bar.rel_tol)) if rel.size
        else 1.0,
        abs_errors=err, rel_errors=rel, families=fam, rel_families=fam[big],
        loss=float(np.mean(err ** 2)), bar=bar, noise_sigma=_noise_sigma(stats))


def _noise_sigma(stats: Any) -> dict[str, float] | None:
    get = getattr(stats, "noise_sigmas", None)
    sig = get() if callable(get) else None
    if sig is None or not all(np.isfinite(v) and v > 0 for v in sig.values()):
        return None
    return {k: float(v) for k, v in sig.items()}


def _pairs_of(value: object) -> list[tuple[Any, ...]] | None:
    """``value``'s pairs, read once (a generator is consumed), or ``None`` when it is not a
    sequence of pairs; the items' values are checked after."""
    if isinstance(value, str | bytes):
        return None
    try:
        items = list(value)  # type: ignore[call-overload]
        pairs = [tuple(p) for p in items if not isinstance(p, str | bytes)]
    except TypeError:  # (not iterable; a 0-d array is Iterable by its type, not iterable)
        return None
    return pairs if len(pairs) == len(items) and all(len(p) == 2 for p in pairs) else None

