"""Parameters of the behavioural reference population (what the generator is driven by).

The population is a *visits-based* simulator (deliberately not the type mixture of Dick et al. §5):
each user has a persistent activity level and a handful of drifting interests; each week they
make a random number of site visits, each visit lands on one of their interests (or, sometimes,
on a random "exploration" topic), and a site may carry further topics (its parent in the
hierarchy, or an affine topic such as News with Arts & Entertainment). The weekly topic visit
counts then go through the mechanism's own top-k with padding (Dick et al. §3, Algorithm 1).

``PopulationParams`` holds the scalars of that process plus sparse per-topic / per-pair tables
keyed by *taxonomy ids* (so the JSON is readable and stable); ``compile`` turns them into the
dense arrays the numba kernel reads. ``load_reference`` returns the calibrated parameters shipped
in ``population/data/reference_<taxonomy>.json``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from topicslab._atomic import write_text_atomic
from topicslab._checks import is_real, value_shown
from topicslab._json import (
    DuplicateKeyError,
    IntegerTooLargeError,
    bounded_int,
    dumps,
    loads,
    read_document,
    unique_keys,
)
from topicslab.errors import FileFieldError, InputError
from topicslab.taxonomy import VERSIONS, Taxonomy, resolve

#: Upper bound of interests per user (kernel scratch size).
MAX_INTERESTS = 24

_TOPIC_TABLES = ("popularity", "explore_popularity", "engagement", "drift_factor", "parent_tag")
_PAIR_TABLES = ("cotags", "site_tags", "affinities")

#: the ranges a parameters file may give: generous around the calibrated values, narrow enough
#: for the simulation to stay tractable (a user's weekly visits are exp(N(mean, sigma²)))
_SCALAR_RANGES: dict[str, tuple[float, float]] = {
    "activity_log_mean": (-10.0, 10.0), "activity_log_sigma": (0.0, 3.0),
    "weekly_log_sigma": (0.0, 3.0), "interests_mean": (0.0, float(MAX_INTERESTS)),
    "interest_weight_sigma": (0.0, 3.0), "explore_prob": (0.0, 1.0), "drift_base": (0.0, 1.0),
    "parent_tag_prob": (0.0, 1.0), "affinity_cap": (0.0, 1.0), "profile_repeat": (0.0, 1.0),
}
#: per-topic values: weights are positive (popularity: every topic has some), the others
#: non-negative multipliers or probabilities
_TABLE_RANGES: dict[str, tuple[float, float, bool]] = {
    "popularity": (0.0, math.inf, True), "explore_popularity": (0.0, math.inf, True),
    "engagement": (0.0, math.inf, False), "drift_factor": (0.0, math.inf, False),
    "parent_tag": (0.0, 1.0, False),
}
#: burn-in drift steps before week 0 (as many as the weeks a population may hold)
_MAX_BURN_IN = 1023


def _real(value: object, field: str, lo: float, hi: float, lo_open: bool = False) -> float:
    """``value`` if it is a finite number in the range, else a ``FileFieldError``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise FileFieldError(f"must be a number, got {value!r}", field=field)
    try:
        v = float(value)
    except OverflowError:  # an int past a float's range (from Python; a file's is refused)
        v = math.inf
    below = v <= lo if lo_open else v < lo
    if not math.isfinite(v) or below or v > hi:
        shown = f"{'(' if lo_open else '['}{lo:g}, {hi:g}]" if math.isfinite(hi) else \
            f"{'>' if lo_open else '>='} {lo:g}"
        raise FileFieldError(f"must be a finite number {'in ' if math.isfinite(hi) else ''}"
                             f"{shown}, got {v:g}", field=field)
    return v


def _topic_id(key: object, field: str) -> int:
    text = str(key).strip()
    digits = text.lstrip("+-")
    # (isdigit() also takes other scripts' digits: "１" was read as topic 1)
    if isinstance(key, bool) or not (digits.isascii() and digits.isdigit()):
        raise FileFieldError(f"topic ids are integers, got {key!r}", field=field)
    return int(text)


def _check_document(doc: dict[str, Any]) -> None:
    """Every value of a parameters document has the type and range its field takes."""
    for name, (lo, hi) in _SCALAR_RANGES.items():
        if name in doc:
            _real(doc[name], name, lo, hi)
    if "burn_in_weeks" in doc:
        v = doc["burn_in_weeks"]
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= _MAX_BURN_IN:
            raise FileFieldError(f"must be an integer in 0..{_MAX_BURN_IN}, got {v!r}",
                                 field="burn_in_weeks")
    if "taxonomy" in doc and doc["taxonomy"] not in VERSIONS:
        raise FileFieldError(f"unknown taxonomy {doc['taxonomy']!r}; one of "
                             f"{', '.join(VERSIONS)}", field="taxonomy")
    if "notes" in doc and not isinstance(doc["notes"], str):
        raise FileFieldError(f"must be text, got {doc['notes']!r}", field="notes")
    for name, (lo, hi, lo_open) in _TABLE_RANGES.items():
        table = doc.get(name, {})
        if not isinstance(table, dict):
            raise FileFieldError("must be an object of topic id: value", field=name)
        named: dict[int, object] = {}
        for key, value in table.items():
            topic = _topic_id(key, name)
            if topic in named:  # ("1" and "01": the second value replaced the first)
                raise FileFieldError(f"keys {named[topic]!r} and {key!r} name the same topic "
                                     f"{topic}; give each topic once", field=name)
            named[topic] = key
            _real(value, f"{name}.{key}", lo, hi, lo_open)
    for name in _PAIR_TABLES:
        pairs = doc.get(name, [])
        if not isinstance(pairs, list):
            raise FileFieldError("must be a list of [topic, topic, value]", field=name)
        for i, pair in enumerate(pairs):
            where = f"{name}[{i}]"
            if not isinstance(pair, list) or len(pair) != 3:
                raise FileFieldError(f"must be [topic, topic, value], got {pair!r}",
                                     field=where)
            a, b = _topic_id(pair[0], where), _topic_id(pair[1], where)
            if a == b:  # (was a ValueError when the generator built its tables: exit 1)
                raise FileFieldError(f"names topic {a} twice, got {pair!r}: a pair links two "
                                     "different topics", field=where)
            _real(pair[2], where, 0.0, math.inf)


@dataclass
class PopulationParams:
    """Parameters of the visits-based population (see the module docstring).

    Scalars:
        activity_log_mean, activity_log_sigma: a user's mean number of topic-bearing site visits
            per week is ``exp(N(activity_log_mean, activity_log_sigma²))`` (heterogeneous
            activity: light users see fewer than k topics and get padded).
        weekly_log_sigma: week-to-week log-normal jitter of that mean (busy and quiet weeks).
        interests_mean: a user has ``1 + Poisson(interests_mean)`` interests (capped).
        interest_weight_sigma: interest weights are ``exp(N(0, sigma²))`` (one dominant
            interest for some users, spread attention for others).
        explore_prob: share of visits that land on a fresh topic drawn from the popularity
            (one-off visits, not persistent).
        drift_base: weekly probability that an interest is replaced (persistent but drifting
            interests); multiplied per topic by ``drift_factor``.
        burn_in_weeks: drift steps simulated before week 0 so week 0 is already stationary.
        parent_tag_prob: probability that a visit to a subtopic's site also counts for its
            parent topic (hierarchy correlation); overridden per topic by ``parent_tag``.
        affinity_cap: cap on the probability that an interest is drawn from the affinity
            neighbours of the user's previous interest.
        profile_repeat: probability that a user's weekly profile is exactly last week's
            (a routine week; 0 in the calibrated population, 1 = fully stable profiles; see
            ``topicslab.population.stress``).

    Tables (keys are taxonomy ids):
        popularity: relative weight of each topic as an interest (all topics must be present
            and positive: a long tail, never zero).
        explore_popularity: relative weight of each topic as a one-off exploration visit
            (default: ``popularity``); kept separate so that making a topic a more common
            *interest* does not also make it a more common *transient* visit.
        engagement: per-topic multiplier of an interest's weight (habitual topics such as
            news get visited every week; default 1).
        drift_factor: per-topic multiplier of ``drift_base`` (sticky vs fleeting topics).
        parent_tag: per-topic override of ``parent_tag_prob``.
        cotags: ``[a, b, p]``: a visit to topic a's site also counts for b with probability p,
            and vice versa (sites carry several topics; within-week correlation).
        site_tags: ``[a, b, p]``: directed co-tags, a visit to a's site also counts for b
            (e.g. shopping sites carry their product categories).
        affinities: ``[a, b, w]``: a user interested in a tends to be interested in b too, and
            vice versa (user-level, persistent cross-category affinity).
    """

    taxonomy: str = "v2"
    activity_log_mean: float = 2.0
    activity_log_sigma: float = 1.0
    weekly_log_sigma: float = 0.4
    interests_mean: float = 3.0
    interest_weight_sigma: float = 1.0
    explore_prob: float = 0.15
    drift_base: float = 0.05
    burn_in_weeks: int = 12
    parent_tag_prob: float = 0.1
    affinity_cap: float = 0.8
    profile_repeat: float = 0.0
    popularity: dict[int, float] = field(default_factory=dict)
    explore_popularity: dict[int, float] = field(default_factory=dict)
    engagement: dict[int, float] = field(default_factory=dict)
    drift_factor: dict[int, float] = field(default_factory=dict)
    parent_tag: dict[int, float] = field(default_factory=dict)
    cotags: list[list[float]] = field(default_factory=list)
    site_tags: list[list[float]] = field(default_factory=list)
    affinities: list[list[float]] = field(default_factory=list)
    notes: str = ""

    # ----------------------------------------------------------------- JSON
    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        for name in _TOPIC_TABLES:
            d[name] = {str(k): float(v) for k, v in sorted(d[name].items())}
        for name in _PAIR_TABLES:
            d[name] = [[int(a), int(b), float(p)] for a, b, p in getattr(self, name)]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PopulationParams:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"unknown population parameter(s): {sorted(unknown)}")
        kw = dict(d)
        for name in _TOPIC_TABLES:
            if name in kw:
                kw[name] = {int(k): float(v) for k, v in kw[name].items()}
        for name in _PAIR_TABLES:
            if name in kw:
                kw[name] = [[int(a), int(b), float(p)] for a, b, p in kw[name]]
        return cls(**kw)

    def to_json(self) -> str:
        return dumps(self.to_dict(), indent=1, sort_keys=False)

    @classmethod
    def from_json(cls, text: str) -> PopulationParams:
        """Parameters from JSON text, checked as ``load`` checks a file (``from_json("[]")``
        was the defaults, and a NaN or a value out of range was taken as it came)."""
        return cls._parse(text, None, None)

    def save(self, path: str | Path) -> None:
        """Write the parameters as JSON (atomically)."""
        write_text_atomic(path, self.to_json() + "\n")

    @classmethod
    def load(cls, path: str | Path, taxonomy: Taxonomy | str | None = None
             ) -> PopulationParams:
        """Read a parameters JSON file; a missing, unreadable or malformed file, or a value
        outside its field's range, is an ``InputError`` naming the file and the field.
        ``taxonomy``: the taxonomy the parameters will drive (the file's own by default);
        its topics must be the ones the tables give."""
        name = str(path)
        try:
            text = read_document(path, "parameters file")
        except FileNotFoundError:
            from topicslab.io._common import not_found

            raise InputError(not_found(name), file=name) from None
        except IsADirectoryError:
            raise InputError("is a directory; give the parameters JSON file", file=name) from None
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"cannot read the file ({exc})", file=name) from None
        return cls._parse(text, name, taxonomy)

    @classmethod
    def _parse(cls, text: str, name: str | None, taxonomy: Taxonomy | str | None
               ) -> PopulationParams:
        """``load`` and ``from_json``: the text of file ``name`` (None: not a file)."""
        try:
            # a byte-order mark (Notepad's "UTF-8") is no part of the document
            doc = loads(text.removeprefix("\ufeff"), object_pairs_hook=unique_keys,
                             parse_int=bounded_int)
        except json.JSONDecodeError as exc:
            raise InputError(f"not valid JSON ({exc.msg}, line {exc.lineno} column "
                             f"{exc.colno}){'; is the file complete?' if name else ''}",
                             file=name) from None
        except DuplicateKeyError as exc:  # the last value won silently
            raise InputError(f"{exc.key!r} is given twice in one object; give each parameter "
                             "(and each topic of a table) once", file=name,
                             field=exc.key) from None
        except IntegerTooLargeError as exc:
            raise InputError(f"not valid parameters ({exc})", file=name) from None
        if not isinstance(doc, dict):
            raise InputError("population parameters are a JSON object, got "
                             f"{type(doc).__name__}", file=name)
        try:
            _check_document(doc)
            params = cls.from_dict(doc)
        except InputError as exc:
            raise exc.located(file=name) from None
        except (ValueError, TypeError, AttributeError) as exc:
            raise InputError(f"not valid population parameters: {exc}", file=name) from None
        try:
            params.check_topics(params.taxonomy if taxonomy is None else taxonomy)
        except InputError as exc:
            raise exc.located(file=name) from None
        return params

    def check(self, taxonomy: Taxonomy | str) -> None:
        """Every field in its type and range (as a parameters file's are checked) and the
        tables fit ``taxonomy`` (``check_topics``): a ``FileFieldError`` naming the field."""
        for name in _TOPIC_TABLES:  # (before to_dict: a number or None was "AttributeError:
            # 'float' object has no attribute 'items'", a value "0.5" read as 0.5 and "x"
            # float()'s ValueError)
            table = getattr(self, name)
            if not isinstance(table, dict):
                raise FileFieldError(f"must be a dict of topic id: value, got "
                                     f"{value_shown(table, 60)}", field=name)
            for key, value in table.items():
                if not is_real(value):
                    raise FileFieldError(f"must be a number, got {value_shown(value, 60)}",
                                         field=f"{name}.{key}")
        for name in _PAIR_TABLES:  # (before to_dict: [1] was Python's "not enough values to
            # unpack", and a topic id 1.5 was truncated to 1 on the way to the check)
            if not isinstance(getattr(self, name), list | tuple):  # ("'float' object is not
                # iterable")
                raise FileFieldError(f"must be a list of [topic, topic, value], got "
                                     f"{value_shown(getattr(self, name), 60)}", field=name)
            for i, pair in enumerate(getattr(self, name)):
                if (not isinstance(pair, list | tuple) or len(pair) != 3
                        or not all(isinstance(x, int | float) and not isinstance(x, bool)
                                   for x in pair)
                        or not all(float(x).is_integer() for x in pair[:2])):
                    raise FileFieldError(f"must be [topic, topic, value], got {pair!r}",
                                         field=f"{name}[{i}]")
        _check_document(self.to_dict())
        self.check_topics(taxonomy)

    def check_topics(self, taxonomy: Taxonomy | str) -> None:
        """The tables fit ``taxonomy``: it is the parameters' own, every topic is one of its
        topics and every topic has a popularity (a ``FileFieldError`` naming the table)."""
        tax = resolve(taxonomy)
        if self.taxonomy != tax.version:
            raise FileFieldError(f"the parameters are for taxonomy {self.taxonomy}, not "
                                 f"{tax.version} (pass --taxonomy {self.taxonomy})",
                                 field="taxonomy")
        known = {int(i) for i in tax.ids}
        for name in _TOPIC_TABLES:
            unknown = sorted(set(getattr(self, name)) - known)
            if unknown:
                raise FileFieldError(f"topic id {unknown[0]} is not in taxonomy {tax.version} "
                                     f"({len(unknown)} unknown)", field=name)
        for name in _PAIR_TABLES:
            for i, (a, b, _) in enumerate(getattr(self, name)):
                for t in (a, b):
                    if int(t) not in known:
                        raise FileFieldError(f"topic id {int(t)} is not in taxonomy "
                                             f"{tax.version}", field=f"{name}[{i}]")
        for name in ("popularity", "explore_popularity"):
            table = getattr(self, name)
            missing = len(known - set(table))
            if missing and (table or name == "popularity"):
                raise FileFieldError(f"{missing} of the {tax.size} topics have no weight: give "
                                     "every topic a positive weight", field=name)

    def fingerprint(self) -> str:
        """Short stable hash of the parameters (recorded in the generated sets' metadata)."""
        blob = dumps(self.to_dict(), sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:16]

    def copy(self) -> PopulationParams:
        return PopulationParams.from_dict(self.to_dict())

    # ----------------------------------------------------------------- kernel form
    def compile(self, taxonomy: Taxonomy | str | None = None) -> CompiledParams:
        """Dense arrays (dense topic indices) for the generator kernel."""
        tax = resolve(taxonomy if taxonomy is not None else self.taxonomy)
        m = tax.size
        pop = _dense(tax, self.popularity, 0.0)
        if not (pop > 0).all():
            raise ValueError("popularity must give every topic a positive weight")
        expl = _dense(tax, self.explore_popularity, 0.0) if self.explore_popularity else pop
        if not (expl > 0).all():
            raise ValueError("explore_popularity must give every topic a positive weight")
        engage = _dense(tax, self.engagement, 1.0)
        drift = np.full(m, self.drift_base, dtype=np.float64)
        for tid, f in self.drift_factor.items():
            drift[int(tax.index(tid))] *= f
        ptag = np.full(m, self.parent_tag_prob, dtype=np.float64)
        for tid, p in self.parent_tag.items():
            ptag[int(tax.index(tid))] = p
        ptag[tax.parent < 0] = 0.0
        cot_ptr, cot_to, cot_w = _pair_csr(tax, self.cotags, self.site_tags)
        aff_ptr, aff_to, aff_w = _pair_csr(tax, self.affinities, [])
        aff_cum = np.zeros_like(aff_w)
        aff_total = np.zeros(m, dtype=np.float64)
        for o in range(m):
            lo, hi = aff_ptr[o], aff_ptr[o + 1]
            if hi > lo:
                aff_cum[lo:hi] = np.cumsum(aff_w[lo:hi])
                aff_total[o] = aff_cum[hi - 1]
        aff_prob = np.minimum(aff_total, self.affinity_cap)
        alias_p, alias_i = alias_table(pop / pop.sum())
        ex_p, ex_i = alias_table(expl / expl.sum())
        return CompiledParams(
            m=m,
            scalars=np.array([self.activity_log_mean, self.activity_log_sigma,
                              self.weekly_log_sigma, self.interests_mean,
                              self.interest_weight_sigma, self.explore_prob],
                             dtype=np.float64),
            burn_in=int(self.burn_in_weeks),
            profile_repeat=float(min(max(self.profile_repeat, 0.0), 1.0)),
            alias_p=alias_p, alias_i=alias_i, explore_p=ex_p, explore_i=ex_i,
            engagement=engage,
            drift=np.clip(drift, 0.0, 1.0),
            parent=tax.parent.astype(np.int64), parent_tag=np.clip(ptag, 0.0, 1.0),
            cot_ptr=cot_ptr, cot_to=cot_to, cot_p=np.clip(cot_w, 0.0, 1.0),
            aff_ptr=aff_ptr, aff_to=aff_to, aff_cum=aff_cum, aff_total=aff_total,
            aff_prob=aff_prob,
        )


@dataclass
class CompiledParams:
    """Dense kernel arrays of a ``PopulationParams`` (dense topic indices)."""

    m: int
    scalars: npt.NDArray[np.float64]
    burn_in: int
    profile_repeat: float
    alias_p: npt.NDArray[np.float64]
    alias_i: npt.NDArray[np.int64]
    explore_p: npt.NDArray[np.float64]
    explore_i: npt.NDArray[np.int64]
    engagement: npt.NDArray[np.float64]
    drift: npt.NDArray[np.float64]
    parent: npt.NDArray[np.int64]
    parent_tag: npt.NDArray[np.float64]
    cot_ptr: npt.NDArray[np.int64]
    cot_to: npt.NDArray[np.int64]
    cot_p: npt.NDArray[np.float64]
    aff_ptr: npt.NDArray[np.int64]
    aff_to: npt.NDArray[np.int64]
    aff_cum: npt.NDArray[np.float64]
    aff_total: npt.NDArray[np.float64]
    aff_prob: npt.NDArray[np.float64]


def _dense(tax: Taxonomy, table: dict[int, float], default: float) -> npt.NDArray[np.float64]:
    out = np.full(tax.size, default, dtype=np.float64)
    if table:
        idx = tax.index(np.fromiter(table.keys(), dtype=np.int64))
        out[idx] = np.fromiter(table.values(), dtype=np.float64)
    return out


def _pair_csr(
    tax: Taxonomy, symmetric: list[list[float]], directed: list[list[float]]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """CSR rows per topic from ``[id_a, id_b, value]`` entries (symmetric ones both ways)."""
    m = tax.size
    src: list[int] = []
    dst: list[int] = []
    val: list[float] = []
    for entries, both in ((symmetric, True), (directed, False)):
        for a, b, v in entries:
            ia, ib = int(tax.index(int(a))), int(tax.index(int(b)))
            if ia == ib:
                raise ValueError(f"pair entry ({a}, {b}) must name two different topics")
            src.append(ia)
            dst.append(ib)
            val.append(float(v))
            if both:
                src.append(ib)
                dst.append(ia)
                val.append(float(v))
    s = np.array(src, dtype=np.int64)
    order = np.argsort(s, kind="stable")
    ptr = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(np.bincount(s, minlength=m), out=ptr[1:])
    return (ptr, np.array(dst, dtype=np.int64)[order],
            np.array(val, dtype=np.float64)[order])


def alias_table(p: npt.NDArray[np.float64]) -> tuple[npt.NDArray[np.float64],
                                                      npt.NDArray[np.int64]]:
    """Walker/Vose alias table of a probability vector (O(1) sampling in the kernel)."""
    n = p.shape[0]
    scaled = p * n
    prob = np.zeros(n, dtype=np.float64)
    alias = np.arange(n, dtype=np.int64)
    small = [i for i in range(n) if scaled[i] < 1.0]
    large = [i for i in range(n) if scaled[i] >= 1.0]
    while small and large:
        s = small.pop()
        g = large.pop()
        prob[s] = scaled[s]
        alias[s] = g
        scaled[g] = scaled[g] + scaled[s] - 1.0
        (small if scaled[g] < 1.0 else large).append(g)
    for i in large + small:
        prob[i] = 1.0
    return prob, alias


def reference_path(taxonomy: str = "v2") -> Path:
    """Where the shipped calibrated parameters live (inside the package)."""
    return Path(str(resources.files("topicslab.population").joinpath(
        f"data/reference_{taxonomy}.json")))


def load_reference(taxonomy: Taxonomy | str = "v2") -> PopulationParams:
    """The calibrated reference parameters of a taxonomy.

    v2 is shipped calibrated; another taxonomy (v1) gets the v2 parameters carried over by
    topic label (``transfer``): a valid population of that taxonomy, not a calibration of it.
    """
    tax = resolve(taxonomy)
    path = reference_path(tax.version)
    if tax.version in VERSIONS and path.exists():
        return PopulationParams.load(path)
    # a custom taxonomy is carried over as itself (its version name was looked up as a
    # shipped one: "unknown taxonomy version 't5'; choose one of ('v1', 'v2')")
    return transfer(PopulationParams.load(reference_path("v2")), tax)


#: Popularity factor per hierarchy level a topic's nearest labelled ancestor is above it.
_TRANSFER_DEPTH_FACTOR = 0.3


def transfer(params: PopulationParams, taxonomy: Taxonomy | str) -> PopulationParams:
    """``params`` carried over to another taxonomy by topic label.

    A topic whose label exists in the source taxonomy takes that topic's values; any other
    takes its nearest ancestor path that exists there (popularity × 0.3 per level up, never
    below the source's smallest value), and neutral defaults in the other tables. Pair tables
    keep the entries whose both topics carry over exactly.
    """
    src = resolve(params.taxonomy)
    dst = resolve(taxonomy)
    by_label = {lab: int(i) for i, lab in zip(src.ids, src.labels, strict=True)}
    exact: dict[int, int] = {}
    out = params.copy()
    out.taxonomy = dst.version
    floor = min(params.popularity.values()) if params.popularity else 1.0
    tables: dict[str, dict[int, float]] = {"popularity": {}, "explore_popularity": {}}
    for tid, label in zip(dst.ids, dst.labels, strict=True):
        path, up = label, 0
        while path and path not in by_label:
            path, up = path.rsplit("/", 1)[0], up + 1
        if not path:
            tables["popularity"][int(tid)] = floor
            tables["explore_popularity"][int(tid)] = floor
            continue
        sid = by_label[path]
        if up == 0:
            exact[int(tid)] = sid
        f = _TRANSFER_DEPTH_FACTOR ** up
        for name in ("popularity", "explore_popularity"):
            table = getattr(params, name) or params.popularity
            tables[name][int(tid)] = max(float(table.get(sid, floor)) * f, floor)
    out.popularity = tables["popularity"]
    out.explore_popularity = tables["explore_popularity"]
    back = {v: k for k, v in exact.items()}
    for name in ("engagement", "drift_factor", "parent_tag"):
        table = getattr(params, name)
        setattr(out, name, {back[s]: v for s, v in table.items() if s in back})
    for name in ("cotags", "site_tags", "affinities"):
        setattr(out, name, [[back[int(a)], back[int(b)], v]
                            for a, b, v in getattr(params, name)
                            if int(a) in back and int(b) in back])
    out.notes = f"carried over from taxonomy {src.version} by topic label"
    return out
