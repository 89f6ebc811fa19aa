"""Sensitive personas for the Topics API (docs/design.md §Disclosure):
browsing -> top-k profiles -> answers.

A *sensitive category* is an interest outside the taxonomy that leaks through a few *proxy
topics* (bankruptcy -> Credit & Lending 447, Personal Loans 170, Credit Reporting & Monitoring
449, ...; the default v2 mapping is ``data/categories_v2.json``, see :func:`default_categories`).

Persona model (one persona = one browser; everything vectorised over personas and visits):

1. background interests: ``1 + Poisson(interests_mean - 1)`` distinct topics (at most
   ``max_interests``) drawn without replacement by topic popularity (the calibrated reference
   population's popularity for v2, uniform otherwise), with exponential (Dirichlet(1)) weights;
2. activity: ``visits_per_epoch`` times a log-normal factor (σ = ``activity_sigma``, mean 1);
   each epoch a Poisson number of visits;
3. a visit explores (probability ``explore``) a topic drawn by popularity, else lands on a
   background interest by weight;
4. a persona of sensitive category c with intensity ρ sends each visit from epoch ``onset`` on,
   with probability ρ, to one of c's proxy topics instead (uniformly, or by the proxy weights).

The weekly topic visit counts go through the mechanism's own ranking
(``topicslab.api.top_k_sparse``: utility bucket, then count, random ties, uniform padding), and
the probe sites receive ``topicslab.api.answers``. Every visit draws its uniforms whatever the
persona's category, so two calls that differ only in the labels (same seed and users) share
their background browsing: common random numbers for the white-box Monte Carlo.

Public names:
    SensitiveCategory, default_categories(taxonomy)
    PersonaModel
    Personas, simulate_personas(labels, rho, ...)
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from importlib import resources
from typing import Any

import numpy as np
import numpy.typing as npt

from topicslab._checks import flag, integer_array, is_integer, is_real, value_shown
from topicslab.api import Mechanism, answers, top_k_sparse
from topicslab.disclosure.design import ROW_STRIDE, DisclosureDesign
from topicslab.errors import InputError, UnknownTopicError
from topicslab.taxonomy import Taxonomy, resolve


@dataclass(frozen=True)
class SensitiveCategory:
    """A sensitive interest and the taxonomy ids of its proxy topics."""

    name: str
    proxies: tuple[int, ...]
    description: str = ""
    weights: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        if not self.name or not self.proxies:
            raise InputError("a sensitive category needs a name and at least one proxy topic",
                             field="proxies")
        if len(set(self.proxies)) != len(self.proxies):
            raise InputError(f"duplicate proxy topic in {self.name!r}", field="proxies")
        if self.weights is not None and (len(self.weights) != len(self.proxies)
                                         or min(self.weights) < 0 or sum(self.weights) <= 0):
            raise InputError(f"weights of {self.name!r} must be one non-negative number per "
                             "proxy, not all zero", field="weights")

    def to_dict(self, taxonomy: Taxonomy | str | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "description": self.description,
                               "proxies": list(self.proxies)}
        if self.weights is not None:
            out["weights"] = list(self.weights)
        if taxonomy is not None:
            tax = resolve(taxonomy)
            out["labels"] = [tax.label(t) for t in self.proxies]
        return out


@functools.cache
def _categories_v2() -> tuple[SensitiveCategory, ...]:
    src = resources.files("topicslab.disclosure").joinpath("data/categories_v2.json")
    data = json.loads(src.read_text(encoding="utf-8"))
    return tuple(
        SensitiveCategory(c["name"], tuple(int(p["id"]) for p in c["proxies"]),
                          c.get("description", ""))
        for c in data["categories"]
    )


@functools.cache
def _proxy_labels_v2() -> dict[int, str]:
    src = resources.files("topicslab.disclosure").joinpath("data/categories_v2.json")
    data = json.loads(src.read_text(encoding="utf-8"))
    return {int(p["id"]): p["label"] for c in data["categories"] for p in c["proxies"]}


def default_categories(taxonomy: Taxonomy | str = "v2") -> tuple[SensitiveCategory, ...]:
    """The documented default categories (``data/categories_v2.json``).

    For v2 the ids are used as shipped. For another taxonomy the proxies are looked up by
    their v2 *label*, else by the label's last component when exactly one topic has it (v1
    files Legal Services under /Law & Government/Legal); proxies without a match are dropped,
    and a category left with none is dropped (an error if none remains).
    """
    tax = resolve(taxonomy)
    cats = _categories_v2()
    labels = _proxy_labels_v2()
    if tax.version == "v2":
        for t, lab in labels.items():
            if tax.label(t) != lab:  # the shipped mapping must match the shipped taxonomy
                raise InputError(f"proxy {t} is {tax.label(t)!r} in v2, not {lab!r}",
                                 field="proxies")
        return cats
    leaves: dict[str, list[int]] = {}
    for tid, lab in zip(tax.ids.tolist(), tax.labels, strict=True):
        leaves.setdefault(lab.rsplit("/", 1)[-1], []).append(int(tid))
    out = []
    for c in cats:
        ids = []
        for t in c.proxies:
            try:
                ids.append(tax.find(labels[t]))
            except UnknownTopicError:
                match = leaves.get(labels[t].rsplit("/", 1)[-1], [])
                if len(match) == 1 and match[0] not in ids:
                    ids.append(match[0])
        if ids:
            out.append(SensitiveCategory(c.name, tuple(ids), c.description))
    if not out:
        raise InputError(f"no default proxy topic exists in taxonomy {tax.version}; pass "
                         "categories explicitly", field="categories")
    return tuple(out)


#: the most visits a persona makes in an epoch (a week): each is simulated, and a million a
#: week is past any browsing
MAX_VISITS_PER_EPOCH = 1e6
#: the largest sigma of the activity's log-normal factor (past it the factor overflows)
MAX_ACTIVITY_SIGMA = 10.0


@dataclass(frozen=True)
class PersonaModel:
    """Browsing behaviour of personas (see the module docstring)."""

    visits_per_epoch: float = 30.0
    activity_sigma: float = 0.5
    interests_mean: float = 5.0
    max_interests: int = 12
    explore: float = 0.15

    def __post_init__(self) -> None:
        # ("5" was a TypeError, max_interests=2.5 or NaN knobs blamed on interests_mean or
        # taken: each is named now, as the field of the model)
        for name in ("visits_per_epoch", "activity_sigma", "interests_mean", "explore"):
            v = getattr(self, name)
            if not is_real(v) or not math.isfinite(v):
                raise InputError(f"{name} must be a finite number, got "
                                 f"{value_shown(v)}", field="model")
        if not is_integer(self.max_interests) or self.max_interests < 1:
            raise InputError(f"max_interests must be a positive integer, got "
                             f"{value_shown(self.max_interests)}", field="model")
        checks = [
            # (1e308 was NumPy's "lam value too large" in the Poisson draw, and 1e7 a
            # simulation of every visit that ran out of memory; a sigma past 10 overflowed
            # the log-normal factor: "OverflowError: Numerical result out of range")
            (0 < self.visits_per_epoch <= MAX_VISITS_PER_EPOCH,
             f"visits_per_epoch must be in (0, {MAX_VISITS_PER_EPOCH:g}] (every visit is "
             "simulated)"),
            (0 <= self.activity_sigma <= MAX_ACTIVITY_SIGMA,
             f"activity_sigma must be in [0, {MAX_ACTIVITY_SIGMA:g}] (the log-normal "
             "factor's sigma)"),
            (1 <= self.interests_mean <= self.max_interests,
             "interests_mean must be in 1..max_interests"),
            (0.0 <= self.explore <= 1.0, "explore must be in [0, 1]"),
        ]
        for ok, msg in checks:
            if not ok:
                raise InputError(msg, field="model")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def topic_popularity(taxonomy: Taxonomy | str = "v2") -> npt.NDArray[np.float64]:
    """Relative popularity of each topic (dense order), summing to 1.

    v2: the calibrated reference population's interest popularity; other taxonomies: uniform.
    """
    tax = resolve(taxonomy)
    if tax.version == "v2":
        from topicslab.population import load_reference

        pop = load_reference("v2").popularity
        arr = np.array([float(pop.get(int(t), 0.0)) for t in tax.ids])
        if (arr > 0).all():
            return arr / arr.sum()
    return np.full(tax.size, 1.0 / tax.size)


@dataclass(frozen=True)
class Personas:
    """Simulated personas: labels, weekly profiles and the probe sites' answers.

    Attributes:
        labels: ``int[n]`` category index (``len(categories)`` = not sensitive).
        sets: ``int16[n, epochs, k]`` weekly top-k profiles (dense indices).
        answers: ``int16[probe_sites, n, epochs]`` the answer each probe site receives.
        user_ids: ``int64[n]`` the ids keying the mechanism's randomness.
        rho: the sensitive intensity.
    """

    labels: npt.NDArray[np.int64]
    sets: npt.NDArray[np.int16]
    answers: npt.NDArray[np.int16] | None
    user_ids: npt.NDArray[np.int64]
    rho: float


def _proxy_table(categories: Sequence[SensitiveCategory], tax: Taxonomy
                 ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    width = max(len(c.proxies) for c in categories)
    topics = np.zeros((len(categories), width), dtype=np.int64)
    cum = np.ones((len(categories), width), dtype=np.float64)
    for i, c in enumerate(categories):
        try:
            idx = tax.index(np.asarray(c.proxies))
        except UnknownTopicError as exc:
            raise InputError(f"category {c.name!r}: {exc}", field="proxies") from None
        w = np.asarray(c.weights if c.weights is not None else [1.0] * len(idx), dtype=float)
        topics[i, : len(idx)] = idx
        topics[i, len(idx):] = idx[-1]
        cum[i, : len(idx)] = np.cumsum(w) / w.sum()
    return topics, cum


def simulate_personas(
    labels: npt.ArrayLike,
    rho: float,
    *,
    categories: Sequence[SensitiveCategory],
    epochs: int = 8,
    model: PersonaModel | None = None,
    mechanism: Mechanism | None = None,
    probe_sites: int = 5,
    seed: int = 0,
    first_user: int = 0,
    onset: int = 0,
    popularity: npt.ArrayLike | None = None,
    with_answers: bool = True,
) -> Personas:
    """Simulate personas and the answers of ``probe_sites`` probe sites for every epoch.

    Args:
        labels: ``int[n]`` index into ``categories``, or ``len(categories)`` for a persona
            without a sensitive interest.
        rho: share of a sensitive persona's visits that go to its proxy topics (from ``onset``).
        categories: the sensitive categories.
        epochs: weeks simulated (one probe per site per epoch).
        model: browsing behaviour (defaults of :class:`PersonaModel`).
        mechanism: Topics API parameters (k = 5, p = 0.05, taxonomy v2).
        probe_sites: sites calling the API every epoch (site ids ``0..probe_sites-1``).
        seed: seed of the browsing draws and of the browser's keyed randomness.
        first_user: user id of the first persona (ids are consecutive; keep blocks disjoint).
        onset: first epoch of the sensitive interest.
        popularity: topic popularity (dense, default :func:`topic_popularity`).
        with_answers: also compute the probe sites' answers.
    """
    with_answers = flag(with_answers, "with_answers")
    mech = mechanism or Mechanism()
    tax = mech.tax
    m = tax.size
    mod = model or PersonaModel()
    lab = integer_array(labels, "labels").astype(np.int64)  # 0.5 was 0
    n_cat = len(categories)
    if lab.ndim != 1 or (lab.size and (lab.min() < 0 or lab.max() > n_cat)):
        raise InputError(f"labels must be category indices in 0..{n_cat}", field="labels")
    # rho, epochs, probe_sites, seed and onset: the experiment design's checks
    DisclosureDesign(rhos=(rho,), epochs=epochs, probe_sites=probe_sites, seed=seed,
                     onset=onset, whitebox=False)
    if first_user < 0:
        raise InputError("first_user must be >= 0", field="first_user")
    from topicslab._resources import require_memory
    from topicslab.disclosure.design import _BYTES_PER_EPOCH, _BYTES_PER_TOPIC, _BYTES_PER_VISIT

    # every visit is simulated (10 personas of 10**7 visits a week ran out of memory)
    require_memory(float(lab.size) * (_BYTES_PER_TOPIC * m + int(epochs) * (
        _BYTES_PER_VISIT * mod.visits_per_epoch + _BYTES_PER_EPOCH)),
        f"the visits of {lab.size:,} personas over {int(epochs)} epochs",
        field="labels", hint="simulate fewer personas (or fewer visits per epoch)")
    if n_cat < 1:
        raise InputError("at least one sensitive category is needed", field="categories")
    if isinstance(categories, str) or not all(isinstance(c, SensitiveCategory)
                                              for c in categories):  # (AttributeError)
        raise TypeError("categories takes SensitiveCategory objects (default_categories)")
    try:
        pop = (topic_popularity(tax) if popularity is None
               else np.asarray(popularity, dtype=float))
    except (TypeError, ValueError):
        raise InputError(f"popularity must be {m} non-negative weights", field="popularity") \
            from None
    # (NaN weights were taken: the interests were drawn from NaN probabilities)
    if (pop.shape != (m,) or not np.isfinite(pop).all() or (pop < 0).any()
            or pop.sum() <= 0):
        raise InputError(f"popularity must be {m} non-negative weights", field="popularity")
    pop = pop / pop.sum()
    proxy_topics, proxy_cum = _proxy_table(categories, tax)
    n = lab.size
    rng = np.random.default_rng([seed, first_user, 0x5E45])

    # 1. background interests: Gumbel-top-k = draws without replacement by popularity
    n_max = min(mod.max_interests, m)
    n_int = np.clip(1 + rng.poisson(mod.interests_mean - 1, n), 1, n_max)
    with np.errstate(divide="ignore"):
        keys = np.log(pop)[None, :] + rng.gumbel(size=(n, m))
    top = np.argpartition(-keys, n_max - 1, axis=1)[:, :n_max]
    order = np.argsort(-np.take_along_axis(keys, top, axis=1), axis=1)
    interests = np.take_along_axis(top, order, axis=1)
    w = rng.exponential(size=(n, n_max)) * (np.arange(n_max)[None, :] < n_int[:, None])
    cum_w = np.cumsum(w, axis=1) / w.sum(axis=1, keepdims=True)
    cum_w[:, -1] = 1.0

    # 2. activity and visits per epoch
    act = mod.visits_per_epoch * np.exp(mod.activity_sigma * rng.standard_normal(n)
                                        - mod.activity_sigma**2 / 2)
    n_visits = rng.poisson(np.repeat(act, epochs)).astype(np.int64)  # [n * epochs]
    row = np.repeat(np.arange(n * epochs, dtype=np.int64), n_visits)
    persona = row // epochs
    epoch = row % epochs
    v = row.size
    u_sens, u_explore, u_pick, u_proxy = rng.random((4, v))

    # 3. background destination (same draws whatever the label: common random numbers)
    explore = u_explore < mod.explore
    cum_pop = np.cumsum(pop)
    explore_topic = np.minimum(np.searchsorted(cum_pop, u_pick * cum_pop[-1], side="right"),
                               m - 1)
    # per-persona inverse CDF in one searchsorted: row i of cum_w + i lies in (i, i + 1]
    flat = (cum_w + np.arange(n)[:, None]).ravel()
    slot = np.searchsorted(flat, persona + u_pick, side="right") - persona * n_max
    topic = np.where(explore, explore_topic, interests[persona, np.minimum(slot, n_max - 1)])

    # 4. sensitive visits go to a proxy topic
    vl = lab[persona]
    sens = (vl < n_cat) & (epoch >= onset) & (u_sens < rho)
    if sens.any():
        c = vl[sens]
        j = (proxy_cum[c] < u_proxy[sens, None]).sum(axis=1)
        topic[sens] = proxy_topics[c, np.minimum(j, proxy_topics.shape[1] - 1)]

    # 5. weekly counts (CSR) -> the mechanism's top-k -> the probe sites' answers
    key = row * m + topic
    uniq, counts = np.unique(key, return_counts=True)
    rows_u = uniq // m
    indptr = np.zeros(n * epochs + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows_u, minlength=n * epochs), out=indptr[1:])
    user_ids = np.arange(first_user, first_user + n, dtype=np.int64)
    row_keys = (np.repeat(user_ids, epochs) * ROW_STRIDE
                + np.tile(np.arange(epochs), n)).astype(np.uint64)
    sets = top_k_sparse(indptr, (uniq % m).astype(np.int32), counts, k=mech.k, taxonomy=tax,
                        seed=seed, row_keys=row_keys).reshape(n, epochs, mech.k)
    ans = (answers(sets, probe_sites, seed=seed, mechanism=mech, user_ids=user_ids)
           if with_answers else None)
    return Personas(lab, sets, ans, user_ids, float(rho))


__all__ = ["PersonaModel", "Personas", "SensitiveCategory", "default_categories",
           "simulate_personas", "topic_popularity"]
