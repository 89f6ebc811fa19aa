"""The re-identification protocol (random-user model; Carey et al. §7, App. E) and its results.

One trial: website 1 holds the table of every user's r-week trace; a set of target users is
drawn without replacement; for each target the attacker sees its trace on website 2 and names
a user of website 1 (argmax of the attack's score, ties at random). Per target we record the
randomly tie-broken success, the exact expected success ``1/|argmax set|`` (if the true user is
in it) and the argmax set size. Several trials use fresh API randomness (and optionally fresh
populations); results give the mean over trials, the standard deviation over trials and 95%
confidence intervals.

The *matching setting* (``setting="matching"``) gives the attacker every user's website-2
trace under a random permutation; applying the random-user rule to each item (Lemma 5) has
exactly the random-user accuracy in expectation, so it is run with every user as a target.
With ``matching=MatchingOptions("assignment")`` each trial also runs the one-to-one matching
attack (``topicslab.attacks.matching``) of every attack on the same traces; its figures are
``AttackRisk.matching`` (JSON ``attacks[name]["matching"]``), next to the per-item figures.

Public names:
    ReidProtocol(targets, trials, setting, engine)     the protocol's parameters, checked once
    check_call_weeks(weeks, lookback)                  r call-weeks the engines support
    measure_risk(sets, *, attacks, weeks, targets, trials, seed, mechanism, progress,
                 populations, setting, engine)         -> RiskResult (traces simulated)
    measure_risk_traces(site1, site2=None, *, ...)     -> RiskResult (given traces)
    risk_curve(sets, weeks=(1, 2, 4, 6, 8), **options) -> RiskCurve
    split_sites(traces)                                (website 1, website 2) of a 2-site file
    trial_api_seed(seed, trial)                        the API secret of a trial
    RiskResult, AttackRisk, RiskCurve                  results with ``to_dict()``
    evaluate_attacks(site1, queries, true_rows, attacks, *, engine)
                                                       one trial's per-target outcomes
    evaluate_suffixes(site1, queries, true_rows, attacks, columns, *, engine)
                                                       the same for several suffixes of
                                                       weeks, from one count
    wilson_interval(successes, n), student_interval(values)
"""

from __future__ import annotations

import copy
import math
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from topicslab._checks import (
    MAX_COUNT,
    choice,
    flag,
    integer,
    object_or_keywords,
    refuse,
    value_shown,
)
from topicslab._progress import task
from topicslab.api import Mechanism, observe
from topicslab.api.answers import _mechanism
from topicslab.attacks.attack import MatchSetAttack, TraceAttack, make_attack
from topicslab.attacks.bruteforce import brute_force_outcomes
from topicslab.attacks.join import count_chunks
from topicslab.attacks.matching import MatchingOptions
from topicslab.attacks.outcomes import TargetOutcomes, outcomes_from_gains
from topicslab.attacks.scoring import MAX_WEEKS, match_masks, subset_scores
from topicslab.datamodel import ChunkedSets, SiteTraces, TopicSets
from topicslab.errors import InputError

_Z95 = 1.959963984540054
ENGINES = ("exact", "brute")
SETTINGS = ("random-user", "matching")

AnyAttack = MatchSetAttack | TraceAttack
AttackSpec = str | AnyAttack
Populations = Sequence[TopicSets | ChunkedSets] | Callable[[int], TopicSets | ChunkedSets]

#: bytes one trial keeps whatever the data: its figures per attack and its ``per_trial``
#: record (Python lists and dicts; generous)
TRIAL_BYTES = 1024
TRIAL_BYTES_PER_ATTACK = 512
#: bytes per target and observed week while a trial runs: its website-2 trace and its row of
#: website 1 (int16 each), the match masks; per target and attack: the gains (float64 per
#: week) and the outcomes (argmax size, best score, success: ~32 bytes)
TARGET_BYTES_PER_WEEK = 8
TARGET_BYTES_PER_ATTACK = 48
#: bytes per website-1 user and trace week: its trace, the engine's week-major copy and the
#: simulated answers of both sites (generous)
USER_BYTES_PER_WEEK = 16


def check_call_weeks(weeks: int, lookback: int = 1) -> int:
    """``weeks`` call-weeks (r) as the engines support them: 1..``MAX_WEEKS`` weeks of traces,
    ``weeks + lookback - 1`` with a lookback (each call reveals ``lookback`` epochs). The
    exact engine tabulates the 2^r match sets of every target, so r stops at ``MAX_WEEKS``.
    An r that fits alone but not with the lookback names ``lookback``."""
    r = integer(weeks, "weeks", at_least=1, at_most=MAX_WEEKS,
                why="the engines tabulate the 2^r match sets of every target")
    # (lookback 0 or -3 let more weeks through than MAX_WEEKS allows)
    lookback = integer(lookback, "lookback", at_least=1, why="a call reveals >= 1 epoch")
    if r + lookback - 1 > MAX_WEEKS:  # r alone fits: the lookback is what is too long
        raise refuse(f"{r} weeks with lookback {lookback} exceed {MAX_WEEKS}", "lookback",
                     f"each call reveals {lookback} epochs and traces span at most "
                     f"{MAX_WEEKS} weeks")
    return r


@dataclass(frozen=True)
class ReidProtocol:
    """The parameters of the re-identification protocol (Carey et al. §7, App. E), checked
    once: ``measure_risk``, ``measure_risk_traces`` and ``topicslab reid`` take one.

    A bad value is a ``ParameterError`` naming the field (``targets``, ``trials``,
    ``setting``, ``engine``: the reid options of the same names).

    Attributes:
        targets: targets per trial, drawn without replacement: a positive integer, or
            ``"all"`` (every user once: the expected risk is then exact for the trial). More
            targets than users is every user, with a note (the population is known only
            then). At least 1: a trial without a target measures nothing.
        trials: trials (fresh API randomness each), at least 1; their spread gives the 95%
            interval. Its upper end is the memory the trials' figures need (``memory``).
        setting: ``"random-user"`` (a random target per query) or ``"matching"`` (the
            attacker holds every user's website-2 trace, permuted: Lemma 5; every user is
            then a target).
        engine: ``"exact"`` (match-set counting) or ``"brute"`` (every pair; a reference
            for small data).
    """

    targets: int | str = 10240
    trials: int = 10
    setting: str = "random-user"
    engine: str = "exact"

    def __post_init__(self) -> None:
        t = self.targets
        if isinstance(t, str):
            word = t.strip().lower()
            # isdecimal, not isdigit: '²' is a digit int() cannot read (exit code 1)
            # (and ASCII: '５' was read as 5, where every option typed as a number refuses it)
            t = "all" if word == "all" else (int(word) if word.isascii() and word.isdecimal()
                                             else t)
        # (not t != "all": an array of target ids compared element-wise, and NumPy's "truth
        # value of an array is ambiguous" came out; the targets are a number, drawn at random)
        if not (isinstance(t, str) and t == "all"):
            if isinstance(t, str):
                raise refuse(f"targets must be a positive integer or 'all', got {value_shown(t)}",
                             "targets")
            t = integer(t, "targets", at_least=1, why="a trial needs a target")
        object.__setattr__(self, "targets", t)
        object.__setattr__(self, "trials", integer(
            self.trials, "trials", at_least=1, at_most=MAX_COUNT,
            why="the risk is measured over the trials"))
        choice(self.setting, "setting", SETTINGS)
        choice(self.engine, "engine", ENGINES)

    def target_count(self, users: int, notes: list[str] | None = None) -> int | None:
        """Targets per trial among ``users`` users; ``None`` for every user once (``"all"``,
        the matching setting, or more targets than users: noted in ``notes``)."""
        if self.setting == "matching" or self.targets == "all":
            return None
        assert isinstance(self.targets, int)
        if self.targets > users:
            if notes is not None:
                notes.append(f"{self.targets:,} targets requested but only {users:,} "
                             f"user{'' if users == 1 else 's'}: every user is a target")
            return None
        return self.targets

    def memory(self, users: int, weeks: int, attacks: int) -> tuple[float, float]:
        """Bytes the protocol needs beyond the loaded data, for ``users`` website-1 users,
        traces of ``weeks`` weeks and ``attacks`` attacks: (the users' and targets' part,
        the trials' part). A bound for refusing what cannot fit, not an exact account."""
        count = self.target_count(users)
        targets = users if count is None else count
        per_target = TARGET_BYTES_PER_WEEK * weeks + attacks * (
            TARGET_BYTES_PER_ATTACK + 8 * weeks
            + (8 << weeks if self.engine == "brute" else 0))  # brute: every match-set score
        work = float(users) * weeks * USER_BYTES_PER_WEEK + float(targets) * per_target
        return work, float(self.trials) * (TRIAL_BYTES + attacks * TRIAL_BYTES_PER_ATTACK)


def protocol_of(protocol: ReidProtocol | None, *, targets: int | str | None = None,
                trials: int | None = None, setting: str | None = None,
                engine: str | None = None, default_trials: int = 10) -> ReidProtocol:
    """``protocol``, or the one the keyword form describes (``None``: the default); both at
    once is a ``TypeError``."""
    return object_or_keywords(ReidProtocol, protocol, "protocol",
                              defaults={"trials": default_trials}, targets=targets,
                              trials=trials, setting=setting, engine=engine)


def wilson_interval(successes: int, n: int) -> tuple[float, float]:
    """95% Wilson score interval of a binomial proportion."""
    # (a fractional count was taken as a proportion, a negative n as none)
    n = integer(n, "n", at_least=0)
    if n == 0:
        return (0.0, 1.0)
    successes = integer(successes, "successes", at_least=0, at_most=n)
    p = successes / n
    z2 = _Z95 * _Z95
    denom = 1.0 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = _Z95 * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def student_interval(values: npt.ArrayLike) -> tuple[float, float]:
    """95% Student-t interval of the mean of ``values`` (needs at least two)."""
    from scipy import stats

    try:
        v = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise refuse("values must be numbers", "values") from None
    if v.ndim != 1 or v.size < 2:
        raise refuse(f"a t interval needs a list of at least two values, got shape "
                     f"{list(v.shape)}", "values")
    if not np.isfinite(v).all():  # (NaN gave the interval (nan, nan))
        raise refuse("values must be finite numbers (a trial's rate is NaN or infinite)",
                     "values")
    half = float(stats.t.ppf(0.975, v.size - 1)) * float(v.std(ddof=1)) / math.sqrt(v.size)
    mean = float(v.mean())
    return (mean - half, mean + half)


def _split(x: npt.NDArray[np.float64]) -> tuple[npt.NDArray[np.float64],
                                                 npt.NDArray[np.float64]]:
    """Veltkamp's split: ``x = hi + lo`` exactly, each half with at most 26 significant
    bits, so ``c * hi`` and ``c * lo`` are exact for integers ``c < 2^26``."""
    t = x * float(2**27 + 1)
    hi = t - (t - x)
    return hi, x - hi


def _expected_sums(outcomes: TargetOutcomes) -> tuple[float, float]:
    """``(math.fsum(e), math.fsum(e * e))`` of the per-target expectations ``e`` (1/|argmax|
    or 0), without a pass of Python over every target: ``e`` takes one value per argmax size,
    so the sums are ``Σ_s c_s·e_s`` over the sizes, each product split into two exact halves
    (the same exactly rounded results)."""
    inside = outcomes.argmax_size[outcomes.in_argmax]
    if inside.size == 0:
        return 0.0, 0.0
    tally = np.bincount(np.maximum(inside, 1))
    sizes = np.flatnonzero(tally)
    counts = tally[sizes]
    if counts.max() >= 2**26 or 8 * sizes.size > inside.size:
        # (many distinct sizes: summing per target is as fast)
        e = outcomes.expected()
        return math.fsum(e), math.fsum(e * e)
    c = counts.astype(np.float64)
    value = 1.0 / sizes.astype(np.float64)
    sums = []
    for v in (value, value * value):
        hi, lo = _split(v)
        sums.append(math.fsum(np.concatenate([c * hi, c * lo]).tolist()))
    return sums[0], sums[1]


@dataclass
class AttackRisk:
    """One attack's figures over the trials (per-trial arrays; summaries as properties)."""

    name: str
    risk: list[float] = field(default_factory=list)
    expected: list[float] = field(default_factory=list)
    expected_sumsq: list[float] = field(default_factory=list)
    correct: list[int] = field(default_factory=list)
    queries: list[int] = field(default_factory=list)
    in_argmax: list[float] = field(default_factory=list)
    argmax_size_mean: list[float] = field(default_factory=list)
    unique_share: list[float] = field(default_factory=list)
    description: dict[str, Any] = field(default_factory=dict)
    #: per trial, the one-to-one matching attack's figures (``MatchingOutcome.to_dict``);
    #: empty unless the matching setting ran with ``matching="assignment"``
    matching: list[dict[str, Any]] = field(default_factory=list)

    def add(self, outcomes: TargetOutcomes, success: npt.NDArray[np.bool_]) -> None:
        n = len(outcomes)
        self.correct.append(int(success.sum()))
        self.queries.append(n)
        self.risk.append(float(success.mean()) if n else 0.0)
        # exactly rounded sums: the same figure whatever the order of the targets
        total, sumsq = _expected_sums(outcomes)
        self.expected.append(total / n if n else 0.0)
        self.expected_sumsq.append(sumsq)
        self.in_argmax.append(float(outcomes.in_argmax.mean()) if n else 0.0)
        self.argmax_size_mean.append(float(outcomes.argmax_size.mean()) if n else 0.0)
        self.unique_share.append(float((outcomes.argmax_size == 1).mean()) if n else 0.0)

    def merge(self, other: AttackRisk) -> None:
        """Append the trials of ``other`` (the same attack measured again)."""
        for name in ("risk", "expected", "expected_sumsq", "correct", "queries", "in_argmax",
                     "argmax_size_mean", "unique_share", "matching"):
            getattr(self, name).extend(getattr(other, name))

    @property
    def trials(self) -> int:
        return len(self.risk)

    @property
    def risk_mean(self) -> float:
        """Mean over trials of the randomly tie-broken success rate."""
        return float(np.mean(self.risk)) if self.risk else 0.0

    @property
    def risk_std(self) -> float:
        """Standard deviation over trials (``ddof=1``; 0 for a single trial)."""
        return float(np.std(self.risk, ddof=1)) if len(self.risk) > 1 else 0.0

    @property
    def ci95_binomial(self) -> tuple[float, float]:
        """Wilson interval of the pooled successes over all trials' targets."""
        return wilson_interval(sum(self.correct), sum(self.queries))

    @property
    def ci95(self) -> tuple[float, float]:
        """95% interval of the risk: Student-t over trials, or Wilson for one trial."""
        if len(self.risk) > 1:
            lo, hi = student_interval(self.risk)
            return (max(0.0, lo), min(1.0, hi))
        return self.ci95_binomial

    @property
    def expected_risk_mean(self) -> float:
        """Mean over trials of the exact expected success (``1/|argmax|`` when inside)."""
        return float(np.mean(self.expected)) if self.expected else 0.0

    @property
    def expected_risk_se(self) -> float:
        """Standard error of the expected risk over every (trial, target): the per-target
        exact expectations pooled (their spread is the API's answer randomness and the choice
        of targets; with every user a target it is the only sampling noise left)."""
        n = sum(self.queries)
        if n < 2:
            return 0.0
        mean = math.fsum(e * q for e, q in zip(self.expected, self.queries, strict=True)) / n
        var = max(math.fsum(self.expected_sumsq) / n - mean * mean, 0.0)
        return math.sqrt(var / (n - 1))

    @property
    def expected_risk_std(self) -> float:
        return float(np.std(self.expected, ddof=1)) if len(self.expected) > 1 else 0.0

    @property
    def expected_ci95(self) -> tuple[float, float]:
        if len(self.expected) > 1:
            lo, hi = student_interval(self.expected)
            return (max(0.0, lo), min(1.0, hi))
        return (self.expected_risk_mean, self.expected_risk_mean)

    def matching_dict(self) -> dict[str, Any] | None:
        """The one-to-one matching attack over the trials (``None`` if it did not run): its
        success rate (mean over trials, Wilson interval of the pooled successes) next to the
        random-user rule's on the same traces."""
        if not self.matching:
            return None
        correct = sum(int(m["correct"]) for m in self.matching)
        traces = sum(int(m["traces"]) for m in self.matching)
        first = self.matching[0]
        return {
            "rate_mean": float(np.mean([m["rate"] for m in self.matching])),
            "ci95_binomial": list(wilson_interval(correct, traces)),
            "random_user_rate_mean": float(np.mean([m["random_user_rate"]
                                                    for m in self.matching])),
            "random_user_expected_mean": float(np.mean([m["random_user_expected"]
                                                        for m in self.matching])),
            "correct": correct, "traces": traces,
            "candidates": first["candidates"], "objective": first["objective"],
            "ties": "users and traces relabelled at random before the candidates, the solver "
                    "and the completion: one randomly tie-broken draw",
            "per_trial": self.matching,
        }

    def to_dict(self) -> dict[str, Any]:
        out = self._to_dict()
        found = self.matching_dict()
        if found is not None:
            out["matching"] = found
        return out

    def _to_dict(self) -> dict[str, Any]:
        return {
            "risk_mean": self.risk_mean,
            "risk_std": self.risk_std,
            "ci95": list(self.ci95),
            "ci95_binomial": list(self.ci95_binomial),
            "expected_risk_mean": self.expected_risk_mean,
            "expected_risk_std": self.expected_risk_std,
            "expected_risk_se": self.expected_risk_se,
            "expected_ci95": list(self.expected_ci95),
            "in_argmax_mean": float(np.mean(self.in_argmax)) if self.in_argmax else 0.0,
            "argmax_size_mean": (float(np.mean(self.argmax_size_mean))
                                 if self.argmax_size_mean else 0.0),
            "unique_argmax_share": (float(np.mean(self.unique_share))
                                    if self.unique_share else 0.0),
            "correct": int(sum(self.correct)),
            "queries": int(sum(self.queries)),
            "attack": self.description,
            "per_trial": [
                {"trial": i, "risk": self.risk[i], "expected_risk": self.expected[i],
                 "correct": self.correct[i], "targets": self.queries[i],
                 "in_argmax": self.in_argmax[i], "argmax_size_mean": self.argmax_size_mean[i],
                 "unique_argmax_share": self.unique_share[i]}
                for i in range(len(self.risk))
            ],
        }


@dataclass
class RiskResult:
    """Re-identification risk of several attacks under one protocol.

    ``attacks[name].risk_mean / risk_std / ci95 / expected_risk_mean`` are the headline
    figures; ``to_dict()`` gives the JSON layout of ``topicslab reid --json``.
    """

    attacks: dict[str, AttackRisk]
    users: int
    targets: int
    trials: int
    weeks: int
    trace_weeks: int
    seconds: float
    setting: str = "random-user"
    engine: str = "exact"
    seed: int = 0
    mechanism: dict[str, Any] | None = None
    per_trial: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "attacks": {name: a.to_dict() for name, a in self.attacks.items()},
            "users": self.users,
            "targets": self.targets,
            "trials": self.trials,
            "weeks": self.weeks,
            "trace_weeks": self.trace_weeks,
            "seconds": self.seconds,
            "setting": self.setting,
            "engine": self.engine,
            "seed": self.seed,
            "mechanism": self.mechanism,
            "per_trial": self.per_trial,
            "notes": self.notes,
        }


@dataclass
class RiskCurve:
    """Risk as a function of the number of observed weeks ``r``."""

    results: list[RiskResult]

    @property
    def weeks(self) -> list[int]:
        return [r.weeks for r in self.results]

    def to_dict(self) -> dict[str, Any]:
        return {"weeks": self.weeks, "curve": [r.to_dict() for r in self.results],
                "seconds": sum(r.seconds for r in self.results)}


def _attack_instances(attacks: Sequence[AttackSpec] | AttackSpec) -> list[AnyAttack]:
    try:  # (None, True or 1.5: Python's "object is not iterable")
        specs: Sequence[AttackSpec] = ([attacks] if isinstance(attacks, str | MatchSetAttack
                                                               | TraceAttack)
                                       else list(attacks))
    except TypeError:
        raise InputError(f"attacks must be an attack or a list of them (names such as "
                         f"'hamming', or attack objects), got {attacks!r}",
                         field="attacks") from None
    if not specs:
        raise InputError("no attack chosen", field="attack")
    out: list[AnyAttack] = []
    for spec in specs:
        att = make_attack(spec) if isinstance(spec, str) else spec
        if not isinstance(att, MatchSetAttack | TraceAttack):
            raise InputError(f"not an attack: {spec!r}", field="attack")
        out.append(att)
    names = [a.name for a in out]
    if len(set(names)) != len(names):
        raise InputError(f"attack names must be distinct, got {names}", field="attack")
    return out


def evaluate_attacks(
    site1: npt.NDArray[np.integer],
    queries: npt.NDArray[np.integer],
    true_rows: npt.NDArray[np.int64],
    attacks: Sequence[AnyAttack],
    *,
    engine: str = "exact",
    progress: bool = False,
) -> list[TargetOutcomes]:
    """One trial: the outcome of each (already fitted) attack on each query.

    The exact engine counts match sets once and every match-set attack is decided from the
    same counts; a ``TraceAttack`` decides its own.

    Args:
        site1: ``[n, r]`` website-1 table.
        queries: ``[Q, r]`` website-2 traces of the targets.
        true_rows: ``int64[Q]`` row of each target in ``site1`` (``-1``: not there).
        attacks: fitted attacks.
        engine: ``"exact"`` (counting) or ``"brute"`` (every pair; reference).
    """
    progress = flag(progress, "progress")
    return evaluate_suffixes(site1, queries, true_rows, [attacks], [site1.shape[1]],
                             engine=engine, progress=progress)[0]


def evaluate_suffixes(
    site1: npt.NDArray[np.integer],
    queries: npt.NDArray[np.integer],
    true_rows: npt.NDArray[np.int64],
    attacks: Sequence[Sequence[AnyAttack]],
    columns: Sequence[int],
    *,
    engine: str = "exact",
    progress: bool = False,
    seconds: dict[str, float] | None = None,
) -> list[list[TargetOutcomes]]:
    """``evaluate_attacks`` on the last ``columns[j]`` weeks of the traces, for every j, from
    one count of the full traces.

    The number of users agreeing with a query on a set of weeks does not depend on the other
    weeks, so the match-set counts of a suffix of ``c`` weeks are those of the full traces
    summed over the earlier weeks' bits (a marginal of ``N``): one scan of website 1 serves
    every r of a risk-vs-r curve (Carey et al. Fig. 2), instead of one scan per r.

    Whole-trace attacks (``TraceAttack``) are asked for their outcomes on the suffix; the
    match-set attacks share the engine's count.

    Args:
        attacks: per suffix, attacks already fitted on ``site1[:, -columns[j]:]``.
        columns: suffix lengths (1..r).
        seconds: if given, receives the seconds of the engine (``"match-set attacks"``) and
            of each whole-trace attack (by name, summed over the suffixes).
    """
    progress = flag(progress, "progress")
    engine = ReidProtocol(engine=engine).engine
    rows = np.asarray(true_rows, dtype=np.int64)
    width = site1.shape[1]
    if rows.shape != (np.shape(queries)[0],):
        raise ValueError("true_rows needs one row per query")
    if rows.size and (int(rows.min()) < -1 or int(rows.max()) >= site1.shape[0]):
        raise ValueError(f"true_rows must be rows of site1 (0..{site1.shape[0] - 1}) or -1 "
                         "(not there)")
    if len(attacks) != len(columns) or any(not 1 <= c <= width for c in columns):
        raise ValueError(f"need one attack list per suffix length in 1..{width}")
    timing = seconds if seconds is not None else {}
    t0 = time.perf_counter()
    match_sets = [[a for a in att if isinstance(a, MatchSetAttack)] for att in attacks]
    found = iter(_evaluate_match_sets(site1, queries, rows, match_sets, columns, engine,
                                      progress)) if any(match_sets) else None
    timing["match-set attacks"] = time.perf_counter() - t0
    out: list[list[TargetOutcomes]] = []
    for att, c in zip(attacks, columns, strict=True):
        per_r = next(found) if found is not None else []
        by_kind = iter(per_r)
        row: list[TargetOutcomes] = []
        for a in att:
            if isinstance(a, MatchSetAttack):
                row.append(next(by_kind))
                continue
            t1 = time.perf_counter()
            row.append(a.outcomes(np.ascontiguousarray(queries[:, width - int(c):]), rows))
            timing[a.name] = timing.get(a.name, 0.0) + time.perf_counter() - t1
        out.append(row)
    return out


def _evaluate_match_sets(
    site1: npt.NDArray[np.integer],
    queries: npt.NDArray[np.integer],
    rows: npt.NDArray[np.int64],
    attacks: Sequence[Sequence[MatchSetAttack]],
    columns: Sequence[int],
    engine: str,
    progress: bool,
) -> list[list[TargetOutcomes]]:
    """``evaluate_suffixes`` for match-set attacks: the exact engine's one count (or the
    brute-force reference)."""
    engine = ReidProtocol(engine=engine).engine
    width = site1.shape[1]
    safe = np.where(rows >= 0, rows, 0)
    true_masks = np.where(rows >= 0, match_masks(site1[safe], queries), -1)
    # suffix of c weeks = the high c bits of a match set over all weeks
    drops = [width - int(c) for c in columns]
    if engine == "brute":
        out = []
        for att, d in zip(attacks, drops, strict=True):
            s1, qs = np.ascontiguousarray(site1[:, d:]), np.ascontiguousarray(queries[:, d:])
            out.append(brute_force_outcomes(s1, qs, [subset_scores(a.gains(qs)) for a in att],
                                            np.where(true_masks >= 0, true_masks >> d, -1)))
        return out
    n_q = queries.shape[0]
    if n_q == 0:
        empty = TargetOutcomes(np.zeros(0, np.int64), np.zeros(0, np.bool_), np.zeros(0))
        return [[empty for _ in att] for att in attacks]
    # gains are per query: computed per chunk (every query's, for every suffix and attack,
    # would be 36 · Q float64 per attack at r = 8: 5.8 GB for 10M targets and two attacks)
    parts: list[list[list[TargetOutcomes]]] = [[[] for _ in att] for att in attacks]
    # every attack is decided from the same counts; with many queries (every user a target)
    # they come from one level-wise join instead of a scan of website 1 per chunk
    chunks = count_chunks(site1, queries, progress=progress)
    with task("match-set counts", n_q, enabled=progress) as advance:
        for lo, hi, counts in chunks:
            suffixes = _suffix_counts(counts, drops)
            for j, d in enumerate(drops):
                part = suffixes[d]
                masks = true_masks[lo:hi]
                masks = masks if d == 0 else np.where(masks >= 0, masks >> d, -1)
                chunk = np.ascontiguousarray(queries[lo:hi, d:])
                for i, a in enumerate(attacks[j]):
                    parts[j][i].append(outcomes_from_gains(part, a.gains(chunk), masks))
            advance(hi - lo)
    return [[TargetOutcomes(np.concatenate([p.argmax_size for p in ps]),
                            np.concatenate([p.in_argmax for p in ps]),
                            np.concatenate([p.best_score for p in ps])) for ps in per_r]
            for per_r in parts]


def _suffix_counts(counts: npt.NDArray[np.int64], drops: Sequence[int],
                   ) -> dict[int, npt.NDArray[np.int64]]:
    """``counts[:, M]`` summed over the low ``d`` bits of M (the counts of the last
    ``width − d`` weeks) for every ``d`` of ``drops``: one halving per bit, each the sum of
    adjacent columns (NumPy's reduction over a trailing axis of 2^d values spent 4 of the 30
    seconds of the paper preset's fidelity at 2M users in its inner loop's setup)."""
    out: dict[int, npt.NDArray[np.int64]] = {}
    table, dropped = counts, 0
    for d in sorted(set(drops)):
        while dropped < d:
            table = table[:, 0::2] + table[:, 1::2]
            dropped += 1
        out[d] = table
    return out


def _pick_targets(rng: np.random.Generator, n: int, count: int | None) -> npt.NDArray[np.int64]:
    if count is None:
        return rng.permutation(n).astype(np.int64)  # random order: the matching permutation
    return np.sort(rng.choice(n, size=count, replace=False)).astype(np.int64)


def _tie_rng(seed: int, trial: int, attack: str) -> np.random.Generator:
    """Tie-breaks of one attack in one trial (independent of which other attacks run)."""
    return np.random.default_rng([seed, trial, zlib.crc32(attack.encode())])


def trial_api_seed(seed: int, trial: int) -> int:
    """Fresh browser-side secret per trial, reproducible from (seed, trial)."""
    # (-1 was NumPy's "expected non-negative integer", 1.5 a TypeError, and "1" a seed of
    # its own)
    seed = integer(seed, "seed", at_least=0)
    trial = integer(trial, "trial", at_least=0)
    state = np.random.SeedSequence([seed, trial, 0x5EED]).generate_state(1, dtype=np.uint64)
    return int(state[0] >> np.uint64(1))


def _mechanism_for(sets: TopicSets | ChunkedSets, mechanism: Mechanism | None) -> Mechanism:
    if not isinstance(sets, TopicSets | ChunkedSets):  # (an array failed on a missing attribute)
        raise TypeError(f"the attacks take TopicSets, got {type(sets).__name__}")
    mech = _mechanism(mechanism, sets)  # ("v2" was an AttributeError: no attribute 'k')
    if mech.k != sets.k:
        raise InputError(f"mechanism k = {mech.k} but the topic sets hold k = {sets.k}",
                         field="k")
    if mech.tax.size != sets.taxonomy.size:
        raise InputError(f"mechanism taxonomy {mech.tax.version} does not match the sets' "
                         f"{sets.taxonomy.version}", field="taxonomy")
    return mech


def _mech_dict(mech: Mechanism) -> dict[str, Any]:
    return {"k": mech.k, "p": mech.p, "taxonomy": mech.tax.version, "topics": mech.tax.size,
            "lookback": mech.lookback, "q_in": mech.q_in, "q_out": mech.q_out}


def measure_risk(
    sets: TopicSets,
    *,
    attacks: Sequence[AttackSpec] | AttackSpec = ("hamming", "asymmetric"),
    weeks: int = 4,
    targets: int | str | None = None,
    trials: int | None = None,
    seed: int = 0,
    mechanism: Mechanism | None = None,
    progress: bool = True,
    populations: Populations | None = None,
    setting: str | None = None,
    engine: str | None = None,
    protocol: ReidProtocol | None = None,
    matching: MatchingOptions | None = None,
) -> RiskResult:
    """Cross-site re-identification risk of a population under the Topics API.

    Each trial simulates two websites' traces of the last ``weeks`` call-weeks with
    ``topicslab.api.observe`` and a fresh API seed, draws the targets, fits every attack on
    website 1 and attacks the targets' website-2 traces.

    Args:
        sets: the population's weekly topic sets (at least ``weeks + lookback - 1`` weeks).
        attacks: attack names (``available_attacks()``) or instances.
        weeks: call-weeks observed by each site (r).
        protocol: targets, trials, setting and engine (``ReidProtocol``), or the keywords
            (each ``None``: its default):
        targets: targets per trial (drawn without replacement; default 10240), or ``"all"``
            (every user once: the expected risk is then exact for the trial).
        trials: number of trials (fresh API randomness each; default 10).
        setting: ``"random-user"`` (default) or ``"matching"`` (Lemma 5: every user,
            per-item rule).
        engine: ``"exact"`` (default) or ``"brute"`` (reference; small data only).
        seed: seed of the API secrets, the target draws and the tie-breaks.
        mechanism: API parameters (default: ``k`` and taxonomy of ``sets``, ``p = 0.05``).
        progress: show a progress bar over the trials.
        populations: fresh populations, one per trial: a sequence or a callable
            ``trial -> TopicSets`` (default: ``sets`` in every trial).
        matching: with ``setting="matching"``, ``MatchingOptions("assignment", ...)`` also
            runs the one-to-one matching attack (``AttackRisk.matching``); default: Lemma 5's
            per-item rule only.
    """
    progress = flag(progress, "progress")
    protocol = protocol_of(protocol, targets=targets, trials=trials, setting=setting,
                           engine=engine)
    return _risk_trials(sets, [weeks], attacks=attacks, protocol=protocol, seed=seed,
                        mechanism=mechanism, progress=progress, populations=populations,
                        matching=matching)[0]


def _per_r_attacks(attacks: Sequence[AttackSpec] | AttackSpec, n: int,
                   ) -> list[list[AnyAttack]]:
    """One list of attack instances per r (an attack is fitted on the r-week table)."""
    att = _attack_instances(attacks)
    return [att] + [[copy.deepcopy(a) for a in att] for _ in range(n - 1)]


def _risk_trials(
    sets: TopicSets | ChunkedSets,
    rs: Sequence[int],
    *,
    attacks: Sequence[AttackSpec] | AttackSpec,
    protocol: ReidProtocol,
    seed: int,
    mechanism: Mechanism | None,
    progress: bool,
    populations: Populations | None,
    matching: MatchingOptions | None = None,
) -> list[RiskResult]:
    """``measure_risk`` for every r of ``rs`` with shared trials: the r-week traces of a trial
    are the last r call-weeks of the same simulated answers (answers are a function of the API
    secret, the user and the absolute week), the targets are the same, and one count of the
    longest traces serves every r (``evaluate_suffixes``). Each r's result is the one
    ``measure_risk(weeks=r)`` gives."""
    trials, setting, engine = protocol.trials, protocol.setting, protocol.engine
    seed = integer(seed, "seed", at_least=0)  # seed="1" was taken as it came
    assign = _assignment_of(matching, setting)
    mech = _mechanism_for(sets, mechanism)
    for r in rs:
        check_call_weeks(r, mech.lookback)
    weeks = max(rs)
    trace_weeks = weeks + mech.lookback - 1
    if populations is None and sets.n_weeks < trace_weeks:
        raise InputError(f"observing {weeks} call-week(s) with lookback {mech.lookback} needs "
                         f"{trace_weeks} weeks of profiles; the sets have {sets.n_weeks}",
                         field="weeks")
    att = _per_r_attacks(attacks, len(rs))
    _assignment_of(matching, setting, att[0])
    columns = [r + mech.lookback - 1 for r in rs]
    results = [{a.name: AttackRisk(a.name) for a in att[0]} for _ in rs]
    notes: list[str] = []
    per_trial: list[dict[str, Any]] = []
    t_start = time.perf_counter()
    n_targets = 0
    users = sets.n_users
    with task("re-identification trials", trials, enabled=progress) as advance:
        for trial in range(trials):
            t0 = time.perf_counter()
            pop = _population(sets, populations, trial)
            if pop.n_users == 0:  # (the risk of no users was reported as 0)
                raise InputError("the sets hold no users: there is nothing to attack",
                                 field="sets" if populations is None else "populations")
            if pop.k != mech.k or pop.taxonomy.size != mech.tax.size:
                raise InputError(f"population of trial {trial} does not match the mechanism",
                                 field="populations")
            if pop.n_weeks < trace_weeks:
                raise InputError(f"observing {weeks} call-week(s) with lookback "
                                 f"{mech.lookback} needs {trace_weeks} weeks of profiles; the "
                                 f"sets have {pop.n_weeks}", field="weeks")
            rng = np.random.default_rng([seed, trial])
            count = protocol.target_count(pop.n_users, notes if trial == 0 else None)
            chosen = _pick_targets(rng, pop.n_users, count)
            api_seed = trial_api_seed(seed, trial)
            site1, site2 = _trial_traces(pop, chosen, weeks, api_seed, mech)
            t_sim = time.perf_counter() - t0
            for att_r, c in zip(att, columns, strict=True):
                view = site1[:, site1.shape[1] - c:]
                for a in att_r:
                    a.fit(view if getattr(a, "fits_views", False)
                          else np.ascontiguousarray(view), mech)
            attack_seconds: dict[str, float] = {}
            outs = evaluate_suffixes(site1, site2, chosen, att, columns, engine=engine,
                                     seconds=attack_seconds)
            for res, att_r, outs_r in zip(results, att, outs, strict=True):
                for a, o in zip(att_r, outs_r, strict=True):
                    res[a.name].add(o, o.sample(_tie_rng(seed, trial, a.name)))
            if assign is not None:
                for res, att_r, c in zip(results, att, columns, strict=True):
                    _add_matching(res, site1[:, site1.shape[1] - c:],
                                  site2[:, site2.shape[1] - c:], chosen, _match_set(att_r),
                                  assign, seed, trial)
            n_targets = len(chosen)
            if trial == 0:
                users = pop.n_users
            per_trial.append({"trial": trial, "users": pop.n_users, "targets": len(chosen),
                              "api_seed": api_seed, "simulate_seconds": t_sim,
                              "attack_seconds": attack_seconds,
                              "seconds": time.perf_counter() - t0})
            # a trial's own population (``populations``: 0.8 GB at 10M users × 8 weeks) and
            # answers are let go before the next trial draws its own (measured: the paper
            # preset's synthetic re-identification peaked at two populations, 2.4 GB)
            del pop, site1, site2, outs
            advance(1)
    seconds = time.perf_counter() - t_start
    if len(rs) > 1:
        served = ", ".join(str(r) for r in rs)
        notes = [*notes, f"one count of the {weeks}-week traces served r = {served} "
                 "(seconds are the curve's)"]
    for res, att_r in zip(results, att, strict=True):
        for a in att_r:
            res[a.name].description = a.describe()
    return [RiskResult(res, users, n_targets, trials, r, c, seconds, setting, engine, seed,
                       _mech_dict(mech), per_trial, notes)
            for res, r, c in zip(results, rs, columns, strict=True)]


def _assignment_of(matching: MatchingOptions | None, setting: str,
                   attacks: Sequence[AnyAttack] = ()) -> MatchingOptions | None:
    """The options of the one-to-one matching attack to run, or ``None`` (per-item only)."""
    if matching is not None and not isinstance(matching, MatchingOptions):
        # (True or "assignment" was "AttributeError: 'str' object has no attribute
        # 'matching'")
        raise InputError(f"matching takes MatchingOptions (e.g. MatchingOptions("
                         f"'assignment')) or None, got {type(matching).__name__}",
                         field="matching")
    if matching is None or matching.matching == "per-item":
        return None
    if setting != "matching":
        raise InputError("the one-to-one matching attack needs every user's website-2 trace: "
                         "add --setting matching", field="matching")
    whole = [a.name for a in attacks if not isinstance(a, MatchSetAttack)]
    if whole:
        raise InputError(f"the one-to-one matching attack assigns on per-week match gains; "
                         f"{', '.join(whole)} scores whole traces: use --matching per-item",
                         field="matching")
    return matching


def _match_set(attacks: Sequence[AnyAttack]) -> list[MatchSetAttack]:
    """The attacks of a one-to-one matching run (``_assignment_of`` refused the others)."""
    return [a for a in attacks if isinstance(a, MatchSetAttack)]


def _add_matching(res: dict[str, AttackRisk], site1: npt.NDArray[np.integer],
                  queries: npt.NDArray[np.integer], chosen: npt.NDArray[np.int64],
                  attacks: Sequence[MatchSetAttack], options: MatchingOptions, seed: int,
                  trial: int) -> None:
    """One trial of the one-to-one matching attack of every (fitted) attack."""
    from topicslab.attacks.matching import matching_attack

    found = matching_attack(np.ascontiguousarray(site1), np.ascontiguousarray(queries),
                            chosen, attacks, candidates=options.candidates,
                            objective=options.objective, seed=[seed, trial, 0x4D41],
                            solver=options.solver)
    for m in found:
        res[m.name].matching.append({"trial": trial, **m.to_dict()})


def _population(sets: TopicSets | ChunkedSets, populations: Populations | None, trial: int,
                ) -> TopicSets | ChunkedSets:
    if populations is None:
        return sets
    if callable(populations):
        pop = populations(trial)
    else:
        if not isinstance(populations, Sequence):  # (5: "object of type 'int' has no len()")
            raise TypeError("populations takes a sequence of TopicSets (one per trial) or a "
                            f"function of the trial, got {type(populations).__name__}")
        if trial >= len(populations):
            raise InputError(f"{len(populations)} populations given for more trials",
                             field="populations")
        pop = populations[trial]
    if not isinstance(pop, TopicSets | ChunkedSets):
        raise InputError("populations must be TopicSets (or ChunkedSets)", field="populations")
    return pop


def _trial_traces(pop: TopicSets | ChunkedSets, chosen: npt.NDArray[np.int64], weeks: int,
                  api_seed: int, mech: Mechanism,
                  ) -> tuple[npt.NDArray[np.int16], npt.NDArray[np.int16]]:
    """(website 1's traces of every user, website 2's of the targets ``chosen``): answers
    are a function of the API secret, the user id and the week, so a population drawn chunk
    by chunk (``ChunkedSets``) gets the traces the whole table would, and is never held; a
    ``TopicSets`` is one chunk."""
    parts = [(0, pop)] if isinstance(pop, TopicSets) else pop.chunks()
    if len(chosen) == pop.n_users:  # every user a target (a permutation): its inverse
        order = np.empty_like(chosen)
        order[chosen] = np.arange(len(chosen), dtype=chosen.dtype)
        ranked = np.arange(len(chosen), dtype=chosen.dtype)
    else:
        order = np.argsort(chosen, kind="stable")
        ranked = chosen[order]
    site1: npt.NDArray[np.int16] | None = None
    site2: npt.NDArray[np.int16] | None = None
    for lo, part in parts:
        a = observe(part.sets, [0], weeks=weeks, seed=api_seed, mechanism=mech,
                    user_ids=part.user_ids)[0]
        if site1 is None:
            site1 = a if len(a) == pop.n_users else np.empty((pop.n_users, a.shape[1]),
                                                             dtype=a.dtype)
            site2 = np.empty((len(chosen), a.shape[1]), dtype=a.dtype)
        if site1 is not a:
            site1[lo:lo + len(a)] = a
        i, j = np.searchsorted(ranked, [lo, lo + len(a)])
        if j > i:
            rows = ranked[i:j] - lo
            assert site2 is not None
            site2[order[i:j]] = observe(part.sets[rows], [1], weeks=weeks, seed=api_seed,
                                        mechanism=mech, user_ids=part.user_ids[rows])[0]
    assert site1 is not None and site2 is not None
    return site1, site2


def split_sites(traces: SiteTraces) -> tuple[npt.NDArray[np.int16], npt.NDArray[np.int16]]:
    """Website 1 and website 2 of a two-site trace file: the smaller site id is website 1."""
    if not isinstance(traces, SiteTraces):  # (an AttributeError: no attribute 'n_sites')
        raise InputError(f"split_sites takes SiteTraces, got {type(traces).__name__}",
                         field="traces")
    if traces.n_sites != 2:
        raise InputError(f"need traces of exactly 2 sites, got {traces.n_sites}",
                         field="site")
    order = np.argsort(traces.site_ids, kind="stable")
    return traces.traces[order[0]], traces.traces[order[1]]


def measure_risk_traces(
    site1: npt.ArrayLike | SiteTraces,
    site2: npt.ArrayLike | None = None,
    *,
    attacks: Sequence[AttackSpec] | AttackSpec = ("hamming",),
    targets: int | str | None = None,
    trials: int | None = None,
    seed: int = 0,
    mechanism: Mechanism | None = None,
    progress: bool = True,
    setting: str | None = None,
    engine: str | None = None,
    protocol: ReidProtocol | None = None,
    matching: MatchingOptions | None = None,
) -> RiskResult:
    """Re-identification risk on given traces (any categorical sequences).

    Row ``i`` of both tables is the same user. Trials re-draw the targets and the tie-breaks
    only (the traces are fixed). ``site1`` may be a two-site ``SiteTraces`` (the smaller site
    id is website 1). The Hamming attack applies to any integer categories (``-1`` =
    missing); the asymmetric attack needs Topics API traces of ``mechanism``'s taxonomy.
    ``protocol``, ``matching`` or the keywords as ``measure_risk`` (default: one trial).
    """
    progress = flag(progress, "progress")
    protocol = protocol_of(protocol, targets=targets, trials=trials, setting=setting,
                           engine=engine, default_trials=1)
    trials, setting, engine = protocol.trials, protocol.setting, protocol.engine
    assign = _assignment_of(matching, setting)
    seed = integer(seed, "seed", at_least=0)  # (-1 was NumPy's ValueError, as in measure_risk)
    mech = None if mechanism is None else _mechanism(mechanism)
    if isinstance(site1, SiteTraces):
        if site2 is not None:
            raise InputError("pass either two arrays or one SiteTraces", field="traces")
        if mech is None:
            mech = Mechanism(taxonomy=site1.taxonomy)
        a1, a2 = split_sites(site1)
    else:
        if site2 is None:
            raise InputError("site2 traces are missing", field="traces")
        a1, a2 = np.asarray(site1), np.asarray(site2)
    if a1.ndim != 2 or a1.shape != a2.shape:
        raise InputError(f"site traces must both be [n_users, weeks] of the same shape, got "
                         f"{a1.shape} and {a2.shape}", field="traces")
    if not np.issubdtype(a1.dtype, np.integer) or not np.issubdtype(a2.dtype, np.integer):
        raise InputError("traces must hold integer categories", field="traces")
    if a1.size and min(int(a1.min()), int(a2.min())) < -1:
        raise InputError("categories must be >= 0 (-1 marks a missing answer)", field="traces")
    r = check_call_weeks(a1.shape[1])
    n = a1.shape[0]
    if n == 0:
        raise InputError("no users in the traces", field="traces")
    att = _attack_instances(attacks)
    _assignment_of(matching, setting, att)
    for a in att:
        a.fit(a1, mech)
    results = {a.name: AttackRisk(a.name, description=a.describe()) for a in att}
    notes: list[str] = []
    count = protocol.target_count(n, notes)
    per_trial: list[dict[str, Any]] = []
    t_start = time.perf_counter()
    with task("re-identification trials", trials, enabled=progress) as advance:
        for trial in range(trials):
            t0 = time.perf_counter()
            rng = np.random.default_rng([seed, trial])
            chosen = _pick_targets(rng, n, count)
            outs = evaluate_attacks(a1, a2[chosen], chosen, att, engine=engine)
            for a, o in zip(att, outs, strict=True):
                results[a.name].add(o, o.sample(_tie_rng(seed, trial, a.name)))
            if assign is not None:
                _add_matching(results, a1, a2[chosen], chosen, _match_set(att), assign, seed,
                              trial)
            per_trial.append({"trial": trial, "users": n, "targets": len(chosen),
                              "seconds": time.perf_counter() - t0})
            advance(1)
    for a in att:  # what whole-trace attacks recorded over the trials
        results[a.name].description = a.describe()
    return RiskResult(results, n, len(chosen), trials, r, r, time.perf_counter() - t_start,
                      setting, engine, seed, _mech_dict(mech) if mech else None, per_trial,
                      notes)


def risk_curve(
    sets: TopicSets | ChunkedSets,
    weeks: Sequence[int] = (1, 2, 4, 6, 8),
    **options: Any,
) -> RiskCurve:
    """``measure_risk`` for each number of observed weeks, with shared trials: the r-week
    traces are the last r weeks of the same simulated answers, and one count of the longest
    traces serves every r (each result equals ``measure_risk(sets, weeks=r, **options)``)."""
    if isinstance(weeks, (str, bytes)) or not hasattr(weeks, "__iter__"):
        # "12" was read as the weeks [1, 2], and 2.5 as 2
        raise TypeError(f"risk_curve weeks must be a sequence of ints, got {weeks!r}")
    rs = list(weeks)  # (before the test of none: a pandas Series has no truth value)
    if not rs:
        raise InputError("no weeks given for the curve", field="weeks")
    if len(set(rs)) != len(rs):  # the same r twice measures one point twice
        raise refuse(f"weeks must be distinct, got {rs}", "weeks")
    known = {"attacks", "targets", "trials", "seed", "mechanism", "progress", "populations",
             "setting", "engine", "protocol", "matching"}
    unknown = set(options) - known
    if unknown:
        raise TypeError(f"risk_curve() got unexpected options {sorted(unknown)}")
    protocol = protocol_of(options.get("protocol"), targets=options.get("targets"),
                           trials=options.get("trials"), setting=options.get("setting"),
                           engine=options.get("engine"))
    return RiskCurve(_risk_trials(
        sets, rs, attacks=options.get("attacks", ("hamming", "asymmetric")), protocol=protocol,
        seed=options.get("seed", 0), mechanism=options.get("mechanism"),
        progress=flag(options.get("progress", True), "progress"),
        populations=options.get("populations"),
        matching=options.get("matching")))


__all__ = [
    "ENGINES",
    "SETTINGS",
    "AttackRisk",
    "ReidProtocol",
    "RiskCurve",
    "RiskResult",
    "check_call_weeks",
    "evaluate_attacks",
    "evaluate_suffixes",
    "measure_risk",
    "measure_risk_traces",
    "risk_curve",
    "split_sites",
    "student_interval",
    "trial_api_seed",
    "wilson_interval",
]
