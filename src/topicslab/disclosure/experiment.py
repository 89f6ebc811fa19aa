"""Sensitive-interest disclosure through the Topics API: black-box PRI and white-box check.

For each intensity ρ (docs/design.md §Disclosure):

1. **Training personas** (``train_personas`` per group; groups = each sensitive category and
   the non-sensitive ``other``) browse for ``epochs`` epochs; every epoch each of
   ``probe_sites`` probe sites calls the API (``topicslab.api.answers``). Each answer is a
   one-term advert labelled with its persona's group: the PRI estimator is fitted on them
   (dictionary = taxonomy ids seen), and the bands on the training probes' M̂ (one probe = the
   answers of all probe sites in one epoch).
2. **Test personas** (``personas`` per group, disjoint users) give M̂ per epoch; the paper's
   rules and evaluation apply unchanged (a session = the first 5 probe epochs; one epoch between
   probes for the adaptation estimate).
3. **White box**: ``mc_samples`` trajectories per group from the same persona model (common
   random numbers across groups) give P(o_1..k | c) and ln M_k(c) for every test persona;
   we report the first epoch with ln M_k(c) > ε for the persona's own category (sensitive
   personas) and for any sensitive category (non-sensitive personas: a false belief).

All groups use the same seed for every ρ, so the personas differ between ρ only in the visits
sent to proxy topics (common random numbers: the rates vary smoothly with ρ).

Public names:
    topics_experiment(*, rhos, epochs, personas, seed, epsilon, taxonomy, progress, ...)
        -> DisclosureResult
    DisclosureResult, RhoResult, topic_m_hat
"""

from __future__ import annotations

import functools
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from topicslab._checks import flag, integer_array
from topicslab._progress import task
from topicslab.api import Mechanism
from topicslab.disclosure.bands import Bands, learn_bands
from topicslab.disclosure.design import DEFAULT_RHOS, DisclosureDesign
from topicslab.disclosure.detection import Detector
from topicslab.disclosure.evaluation import Evaluation, evaluate, wilson_interval
from topicslab.disclosure.personas import (
    PersonaModel,
    SensitiveCategory,
    default_categories,
    simulate_personas,
)
from topicslab.disclosure.pri import OTHER, PRI
from topicslab.disclosure.whitebox import first_violation, log_likelihood, log_ratio
from topicslab.errors import InputError
from topicslab.taxonomy import Taxonomy, resolve

#: White-box prior of each sensitive category (the rest of the mass is non-sensitive).
DEFAULT_PRIOR = 0.05
#: First user id of each persona block (disjoint keyed randomness).
_TRAIN_USERS, _TEST_USERS, _MC_USERS = 0, 1_000_000, 2_000_000


def topic_m_hat(answers: npt.ArrayLike, pri: PRI, taxonomy: Taxonomy | str
                ) -> npt.NDArray[np.float64]:
    """M̂ (eq 17) of every (persona, epoch) probe from one-term adverts.

    ``answers[sites, n, epochs]`` (dense indices, -1 withheld) -> ``float64[n, epochs, C]``:
    p̂_{a_k}(t) is the number of probe sites answering t, so M̂_k(c) = Σ_sites r(c, answer).
    """
    tax = resolve(taxonomy)
    arr = integer_array(answers, "answers")  # (3.7 was topic 3)
    if arr.ndim != 3:
        raise InputError(f"answers must be [sites, n, epochs], got {arr.shape}",
                         field="answers")
    if arr.size and (int(arr.min()) < -1 or int(arr.max()) >= tax.size):
        # m was read as a withheld answer, past it an IndexError
        raise InputError(f"answers are dense indices of taxonomy {tax.version} (0.."
                         f"{tax.size - 1}, -1 withheld), got {int(arr.max())} or "
                         f"{int(arr.min())}", field="answers")
    c = len(pri.categories)
    dense = np.zeros((tax.size + 1, c))  # row m: withheld answers and unseen topics give 0
    if len(pri.dictionary):
        terms = pri.dictionary.terms
        if not all(isinstance(t, int | np.integer) and not isinstance(t, bool) for t in terms):
            raise InputError("the PRI's terms are not topic ids (it was fitted on words?): give "
                             "a PRI fitted on Topics API answers", field="pri")
        dense[tax.index(np.asarray(terms, dtype=np.int64))] = pri.ratio.T
    idx = np.where(arr >= 0, arr, tax.size).astype(np.int64)
    out: npt.NDArray[np.float64] = dense[idx].sum(axis=0)
    return out


def _fit_topics(answers: npt.NDArray[np.int16], labels: npt.NDArray[np.int64],
                names: Sequence[str], tax: Taxonomy, smoothing: float = 0.0) -> PRI:
    m = tax.size
    lab = np.broadcast_to(labels[None, :, None], answers.shape)
    ok = answers >= 0
    counts = np.bincount(lab[ok] * m + answers[ok], minlength=len(names) * m)
    n_ads = np.bincount(lab[ok], minlength=len(names))
    return PRI.fit_counts(counts.reshape(len(names), m), n_ads, tuple(int(t) for t in tax.ids),
                          names, other=OTHER, smoothing=smoothing)


def _rate(k: int, n: int) -> dict[str, Any]:
    lo, hi = wilson_interval(k, n)
    return {"rate": k / n if n else None, "count": int(k), "n": int(n), "ci95": [lo, hi]}


@dataclass(frozen=True)
class RhoResult:
    """Everything measured at one intensity ρ."""

    rho: float
    evaluation: Evaluation
    bands: Bands
    detection: dict[str, Any]
    false_positive: dict[str, Any]
    whitebox: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        ev = self.evaluation
        return {"rho": self.rho, "detection": self.detection,
                "false_positive": self.false_positive,
                "time_to_detection": ev.time_to_detection,
                "per_topic": [t.to_dict() for t in ev.per_topic],
                "whitebox": self.whitebox, "bands": self.bands.to_dict(),
                "evaluation": ev.to_dict()}


@dataclass(frozen=True)
class DisclosureResult:
    """Result of :func:`topics_experiment` (``to_dict()`` is JSON-ready)."""

    settings: dict[str, Any]
    categories: tuple[SensitiveCategory, ...]
    per_rho: tuple[RhoResult, ...]
    seconds: float
    taxonomy: Taxonomy | None = None

    @property
    def rhos(self) -> list[float]:
        return [r.rho for r in self.per_rho]

    @property
    def detection_rates(self) -> list[float | None]:
        return [r.detection["rate"] for r in self.per_rho]

    @property
    def false_positive_rates(self) -> list[float | None]:
        return [r.false_positive["rate"] for r in self.per_rho]

    def to_dict(self) -> dict[str, Any]:
        tax = self.taxonomy if self.taxonomy is not None else self.settings["taxonomy"]
        return {"settings": dict(self.settings),
                "categories": [c.to_dict(tax) for c in self.categories],
                "per_rho": [r.to_dict() for r in self.per_rho],
                "seconds": self.seconds}


def _whitebox_summary(ln_m: npt.NDArray[np.float64], labels: npt.NDArray[np.int64],
                      n_cat: int, epsilon: float) -> dict[str, Any]:
    """First epochs with ln M > ε (own category / any sensitive one) and mean ln M curves."""
    w = ln_m.shape[1]
    sens = labels < n_cat
    own = ln_m[sens, :, labels[sens]] if sens.any() else np.zeros((0, w))
    first_own = first_violation(own, epsilon)
    worst = ln_m[~sens][:, :, :n_cat].max(axis=2) if (~sens).any() else np.zeros((0, w))
    first_other = first_violation(worst, epsilon)

    def cumulative(first: npt.NDArray[np.int64]) -> list[float | None]:
        return [float(((first > 0) & (first <= k)).mean()) if first.size else None
                for k in range(1, w + 1)]

    hit = first_own[first_own > 0]
    per_cat = []
    for c in range(n_cat):
        f = first_own[labels[sens] == c]
        h = f[f > 0]
        per_cat.append({"violated": float((f > 0).mean()) if f.size else None,
                        "median_first_epoch": float(np.median(h)) if h.size else None})
    return {
        "epsilon": epsilon,
        "sensitive_personas": int(sens.sum()),
        "violated": float((first_own > 0).mean()) if first_own.size else None,
        "first_epoch_median": float(np.median(hit)) if hit.size else None,
        "first_epoch_mean": float(hit.mean()) if hit.size else None,
        "first_epoch": int(hit.min()) if hit.size else None,
        "cumulative_violation": cumulative(first_own),
        "mean_ln_m": [float(x) for x in own.mean(axis=0)] if own.size else [],
        "median_ln_m": [float(x) for x in np.median(own, axis=0)] if own.size else [],
        "other_personas": int((~sens).sum()),
        "other_violated": float((first_other > 0).mean()) if first_other.size else None,
        "other_cumulative_violation": cumulative(first_other),
        "other_mean_max_ln_m": [float(x) for x in worst.mean(axis=0)] if worst.size else [],
        "other_median_max_ln_m": ([float(x) for x in np.median(worst, axis=0)]
                                  if worst.size else []),
        "per_category": per_cat,
    }


def _check_memory(design: DisclosureDesign, topics: int, groups: int, model: Any,
                  k: Any) -> None:
    """Refuse a design whose simulations cannot fit in memory, naming the field whose
    personas weigh most (the CLI checked, the Python API did not: mc_samples=10**9 was
    NumPy's "MemoryError: Unable to allocate 7.45 GiB")."""
    from topicslab._resources import require_memory

    visits = model.visits_per_epoch if isinstance(model, PersonaModel) else \
        PersonaModel().visits_per_epoch
    parts = design.memory(topics, groups, visits, k if isinstance(k, int) else 5)
    field = max(parts, key=lambda name: parts[name])
    what = {"personas": f"{design.personas:,} test personas",
            "train_personas": f"{design.n_train:,} training personas",
            "mc_samples": f"{design.mc_samples:,} white-box Monte Carlo personas"}[field]
    require_memory(parts[field], f"simulating {what} per group ({groups} groups, "
                   f"{design.epochs} epochs)", field=field, hint=f"use fewer {field}")


def topics_experiment(
    *,
    rhos: Sequence[float] | None = None,
    epochs: int | None = None,
    personas: int | None = None,
    train_personas: int | None = None,
    probe_sites: int | None = None,
    mc_samples: int | None = None,
    mc_epochs: int | None = None,
    seed: int | None = None,
    epsilon: float | None = None,
    taxonomy: Taxonomy | str | None = None,
    categories: Sequence[SensitiveCategory] | None = None,
    model: PersonaModel | None = None,
    k: int = 5,
    p: float = 0.05,
    smoothing: float = 0.0,
    n_sigma: float = 3.0,
    sides: str = "two",
    clip: bool = False,
    session_probes: int = 5,
    onset: int | None = None,
    prior: Mapping[str, float] | None = None,
    whitebox: bool | None = None,
    progress: bool = True,
    design: DisclosureDesign | None = None,
) -> DisclosureResult:
    """Detection of sensitive interests from Topics API answers, for each intensity ρ.

    Args:
        design: the experiment's sizes, intensities and budget (``DisclosureDesign``,
            checked once), or its keywords (each ``None``: its default):
        rhos: intensities (share of a sensitive persona's visits to its proxy topics).
        epochs: epochs simulated; the session rule uses the first ``session_probes``.
        personas: test personas per group (each sensitive category, and ``other``).
        train_personas: training personas per group (default: ``personas``).
        probe_sites: probe sites calling the API every epoch.
        mc_samples: white-box Monte Carlo personas per group.
        mc_epochs: epochs simulated per Monte Carlo persona (its pool of sets per phase;
            default ``epochs``).
        seed: seed of everything (browsing and the browser's keyed randomness).
        epsilon: the budget ε of Def 4.1 (default ln 2).
        onset: first epoch of the sensitive browsing.
        whitebox: run the white-box check.
        taxonomy: taxonomy version or object (default v2).
        categories: sensitive categories (default :func:`default_categories`).
        model: persona browsing model.
        k, p: the mechanism's profile size and random-answer probability.
        smoothing: additive smoothing of the PRI ratio (0: the paper's estimator).
        n_sigma, sides, clip: band options (paper: 3, two-sided, no clipping).
        session_probes: probes of a session (5).
        prior: white-box prior π over groups by name (default: ``DEFAULT_PRIOR`` = 5% for
            each sensitive category, the rest non-sensitive).
        progress: show a progress bar (stderr).
    """
    clip = flag(clip, "clip")
    progress = flag(progress, "progress")
    given: dict[str, Any] = {name: value for name, value in (
        ("rhos", rhos), ("epochs", epochs), ("personas", personas),
        ("train_personas", train_personas), ("probe_sites", probe_sites),
        ("mc_samples", mc_samples), ("mc_epochs", mc_epochs), ("seed", seed),
        ("epsilon", epsilon), ("onset", onset), ("whitebox", whitebox)) if value is not None}
    if design is None:
        design = DisclosureDesign(**given)
    elif given:
        raise TypeError(f"pass design= or {'/'.join(given)}=, not both")
    tax = resolve(taxonomy if taxonomy is not None else "v2")
    mech = Mechanism(k=k, p=p, taxonomy=tax)
    cats = tuple(categories) if categories is not None else default_categories(tax)
    names = (*(c.name for c in cats), OTHER)
    if len(set(names)) != len(names):
        raise InputError(f"category names must be distinct and not {OTHER!r}",
                         field="categories")
    design.check_groups(len(names))
    _check_memory(design, tax.size, len(names), model, k)
    rho_list = list(design.rhos)
    epochs, personas, n_train = design.epochs, design.personas, design.n_train
    probe_sites, mc_samples, seed = design.probe_sites, design.mc_samples, design.seed
    epsilon, onset, whitebox = design.epsilon, design.onset, design.whitebox
    pool_epochs = design.pool_epochs
    n_groups = len(names)
    train_lab = np.repeat(np.arange(n_groups), n_train)
    test_lab = np.repeat(np.arange(n_groups), personas)
    if prior is None:
        share = DEFAULT_PRIOR if DEFAULT_PRIOR * len(cats) < 1 else 1.0 / n_groups
        pi = np.array([share] * len(cats) + [1.0 - share * len(cats)])
    else:
        unknown = set(prior) - set(names)
        if unknown:
            raise InputError(f"prior names unknown groups: {', '.join(sorted(unknown))}",
                             field="prior")
        pi = np.array([float(prior.get(nm, 0.0)) for nm in names])
        if (pi < 0).any() or pi.sum() <= 0:
            raise InputError("the prior must be non-negative and not all zero", field="prior")
    model = model or PersonaModel()
    common = functools.partial(simulate_personas, categories=cats, epochs=epochs, model=model,
                               mechanism=mech, probe_sites=probe_sites, seed=seed, onset=onset)
    start = time.perf_counter()
    steps_per_rho = 3 + (n_groups if whitebox else 0)
    results = []
    with task("disclosure", len(rho_list) * steps_per_rho, progress) as advance:
        for rho in rho_list:
            train = common(train_lab, rho, first_user=_TRAIN_USERS)
            assert train.answers is not None
            pri = _fit_topics(train.answers, train_lab, names, tax, smoothing)
            mh_train = topic_m_hat(train.answers, pri, tax)
            bands = learn_bands(mh_train.reshape(-1, n_groups), np.repeat(train_lab, epochs),
                                names, n_sigma=n_sigma, sides=sides, clip=clip)
            detector = Detector(bands, OTHER, session_probes)
            advance()
            test = common(test_lab, rho, first_user=_TEST_USERS)
            assert test.answers is not None
            advance()
            mh_test = topic_m_hat(test.answers, pri, tax)
            ev = evaluate(mh_test, test_lab, detector, queries_between_probes=1.0)
            is_sens = test_lab < len(cats)
            det = detector.session(mh_test)
            detection = _rate(int(det[is_sens].sum()), int(is_sens.sum()))
            false_pos = _rate(int(det[~is_sens].sum()), int((~is_sens).sum()))
            advance()
            wb: dict[str, Any] = {}
            if whitebox:
                obs = np.moveaxis(test.answers, 0, 1)  # [n, sites, epochs]
                ll = np.empty((n_groups, obs.shape[0], epochs))
                obs_phase = (np.arange(epochs) >= onset).astype(np.int64)
                phases = sorted(set(obs_phase.tolist()))
                for g in range(n_groups):
                    # the same personas (seed, users) before (phase 0) and after the onset
                    pools = [simulate_personas(
                        np.full(mc_samples, g), rho, categories=cats, epochs=pool_epochs,
                        model=model, mechanism=mech, probe_sites=probe_sites, seed=seed,
                        onset=0 if ph else pool_epochs, first_user=_MC_USERS,
                        with_answers=False).sets for ph in phases]
                    ll[g] = log_likelihood(obs, np.concatenate(pools, axis=1), mech,
                                           obs_phase=obs_phase,
                                           pool_phase=np.repeat(phases, pool_epochs))
                    advance()
                wb = _whitebox_summary(log_ratio(ll, pi), test_lab, len(cats), epsilon)
            results.append(RhoResult(rho, ev, bands, detection, false_pos, wb))
    settings = {
        "rhos": rho_list, "epochs": epochs, "personas": personas, "train_personas": n_train,
        "probe_sites": probe_sites, "smoothing": smoothing,
        "mc_samples": mc_samples if whitebox else 0,
        "mc_epochs": pool_epochs if whitebox else 0, "seed": seed,
        "epsilon": epsilon, "taxonomy": tax.version, "k": k, "p": p, "n_sigma": n_sigma,
        "sides": sides, "clip": clip, "session_probes": session_probes, "onset": onset,
        "prior": {nm: float(v / pi.sum()) for nm, v in zip(names, pi, strict=True)},
        "model": model.to_dict(),
    }
    return DisclosureResult(settings, cats, tuple(results), time.perf_counter() - start, tax)


__all__ = ["DEFAULT_RHOS", "DisclosureResult", "RhoResult", "topic_m_hat", "topics_experiment"]
