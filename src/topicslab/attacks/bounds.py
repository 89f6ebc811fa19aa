"""Bounds on re-identification accuracy (Carey et al. §4-5, App. A-B).

For an explicit representation matrix ``P`` (n users × m representations, row-stochastic):

* Corollary 1 (full information, tight):  Acc_R ≤ ‖P‖_{∞,1}/n = (1/n) Σ_o max_i P[i,o];
* Lemma 2 (partial information): the same norm of ``E[P | W]``, achieved by the Bayes rule;
* Lemma 4 (matching setting):  Acc_M ≤ (1/n) Σ_o (1 − Π_i (1 − P[i,o]));
* Lemma 3 ((ε,δ)-LDP):  Acc_R ≤ (e^ε + min(n,m)·δ)/n;  Lemma 7 (k-anonymity):  Acc_R ≤ 1/k;
* Lemma 9 (mutual information):  Acc_R ≤ (1 + MI(I;O))/log n.

For the Topics API over a population (``reid_bounds``): the representation of user i is the
r-week trace, ``P[i,o] = Π_s (q_in if o^s ∈ S_i^s else q_out)`` over ``|T|^r`` traces. The LDP
bound uses the API's per-answer ``ε = ln(q_in/q_out)`` composed over the r answers; the
k-anonymity figures are those of the r-week profile sets themselves (the representation if the
API revealed profiles); the full-information (Corollary 1: the Bayes-optimal attacker's exact
risk), matching (Lemma 4), partial-information (Lemma 2) and mutual-information (Lemma 9)
figures are exact sums over all ``|T|^r`` traces computed without materialising P
(``topicslab.qif.product_channel``: slices of the trace space, users grouped by the topics
they hold; time ∝ ``|T'|^r`` for the |T'| topics that occur, memory ∝ ``|T'|^2``): three weeks
of the full taxonomy take seconds at 1M users, four weeks ~500× longer, so by default they are
computed up to ``max_cells`` (three weeks) and reported as ``None`` beyond, except
Corollary 1 at four weeks, which depends on a trace only through how many weeks its best user
covers (``topicslab.qif.coverage``: |T|^3 prefixes, seconds at 1M users). The partial-
information bound uses the parametric model of Theorem 1 (the optimal attacker is then the
asymmetric attack).

Public names:
    full_information_bound(P), partial_information_bound(EP), matching_bound(P)
    optimal_matching_accuracy(P)        exact optimum of the matching setting (tiny n)
    ldp_bound(n, m, epsilon, delta=0), ldp_delta(P, epsilon), k_anonymity(P),
    mutual_information_bound(P), answer_epsilon(mechanism)
    profile_anonymity(sets)             k, distinct and unique r-week profiles
    reid_bounds(sets, *, weeks=4, mechanism=None, seed=0, popularity="profiles") -> ReidBounds
"""

from __future__ import annotations

import itertools
import math
import os
from dataclasses import asdict, dataclass, field
from numbers import Real
from typing import Any

import numpy as np
import numpy.typing as npt
from numba import njit, prange

from topicslab._checks import (
    MAX_COUNT,
    flag,
    integer,
    integer_array,
    number,
    refuse_complex,
    value_shown,
)
from topicslab._json import json_number
from topicslab.api import Mechanism, observe
from topicslab.api.answers import _mechanism
from topicslab.attacks.asymmetric import asymmetric_weights
from topicslab.attacks.popularity import estimate_popularity
from topicslab.datamodel import TopicSets
from topicslab.errors import InputError
from topicslab.qif.coverage import corollary1_four_weeks
from topicslab.qif.product_channel import ProductChannel, topics_channel

#: Default limit on the trace cells an exact bound visits (``ProductChannel.cells``).
MAX_CELLS = 500_000_000
#: Corollary 1 at four weeks enumerates |T|^3 prefixes (``qif.coverage``): up to 2e8 (a
#: taxonomy of 584 topics; v2's 469 give 1.0e8, about 10 s at 1M users, and three |T|^2 bitset
#: tables of 42 MB), not for taxonomies so large that it would take hours.
MAX_PREFIXES = 200_000_000

# ---------------------------------------------------------------- explicit matrices


def _matrix(p: npt.ArrayLike, name: str = "P") -> npt.NDArray[np.float64]:
    refuse_complex(p, name)
    try:
        arr = np.asarray(p, dtype=np.float64)
    except (TypeError, ValueError):  # (NumPy's "could not convert string to float")
        raise InputError(f"{name} must be a matrix of probabilities", field=name) from None
    if arr.ndim != 2 or arr.shape[0] < 1 or arr.shape[1] < 1:
        raise InputError(f"{name} must be a non-empty [users, representations] matrix",
                         field=name)
    if not np.isfinite(arr).all() or (arr < 0).any():
        raise InputError(f"{name} must hold finite non-negative probabilities", field=name)
    if not np.allclose(arr.sum(axis=1), 1.0, atol=1e-9):
        raise InputError(f"every row of {name} must sum to 1 (row-stochastic)", field=name)
    return arr


def full_information_bound(p: npt.ArrayLike) -> float:
    """Corollary 1: ``‖P‖_{∞,1}/n``, the best random-user accuracy knowing P (tight)."""
    arr = _matrix(p)
    return float(arr.max(axis=0).sum() / arr.shape[0])


def partial_information_bound(expected_p: npt.ArrayLike) -> float:
    """Lemma 2: ``‖E[P | W]‖_{∞,1}/n``, achieved by naming ``argmax_i E[P | W][i, o]``."""
    return full_information_bound(expected_p)


def matching_bound(p: npt.ArrayLike) -> float:
    """Lemma 4: expected number of distinct representations over n (matching setting)."""
    arr = _matrix(p)
    # Π_i (1 − P[i,o]) in log space; log1p(−1) = −inf gives exactly 0
    with np.errstate(divide="ignore"):
        log_none = np.log1p(-arr).sum(axis=0)
    return float((1.0 - np.exp(log_none)).sum() / arr.shape[0])


def optimal_matching_accuracy(p: npt.ArrayLike, *, max_work: int = 5_000_000) -> float:
    """The best matching-setting accuracy, by enumerating observations and permutations.

    For each observation vector the optimal rule names, for item i, the user j maximising the
    posterior ``P(π(i) = j | O)`` (uniform permutation prior). Exponential: tiny n only.
    """
    limit = integer(max_work, "max_work", at_least=1, at_most=MAX_COUNT)
    arr = _matrix(p)
    n, m = arr.shape
    # the number of steps, m^n n! n, by its logarithm first: of a P of a few thousand users
    # the exact integer took seconds to compute and then could not be written in the
    # message ("Exceeds the limit (4300 digits) for integer string conversion", a ValueError)
    log10_work = (n * math.log10(m) + math.lgamma(n + 1) / math.log(10) + math.log10(n))
    if log10_work > math.log10(limit) + 1:
        raise InputError(f"exact matching optimum needs about 10^{log10_work:.0f} steps "
                         f"(> {limit:,}); use a smaller example", field="P")
    work = m**n * math.factorial(n) * n
    if work > limit:
        raise InputError(f"exact matching optimum needs {work:,} steps (> {limit:,}); "
                         "use a smaller example", field="P")
    perms = np.array(list(itertools.permutations(range(n))), dtype=np.int64)  # π(i) = perm[i]
    total = 0.0
    items = np.arange(n)
    for obs in itertools.product(range(m), repeat=n):
        o = np.asarray(obs)
        weight = arr[perms, o[None, :]].prod(axis=1) / perms.shape[0]  # P(π) P(O | π)
        # joint mass of (π(i) = j, O): sum the permutations' weights per (i, j)
        joint = np.zeros((n, n))
        np.add.at(joint, (np.broadcast_to(items, perms.shape), perms),
                  np.broadcast_to(weight[:, None], perms.shape))
        total += joint.max(axis=1).sum()
    return float(total / n)


def ldp_bound(n: int, m: int, epsilon: float, delta: float = 0.0) -> float:
    """Lemma 3: ``(e^ε + min(n, m)·δ)/n`` (may exceed 1: then the bound is vacuous)."""
    # (epsilon = NaN gave NaN, 1e308 an OverflowError, n = 2.5 a bound for 2.5 users, and a
    # bad n, m or delta was reported as epsilon)
    n = integer(n, "n", at_least=1)
    m = integer(m, "m", at_least=1)
    eps = _epsilon(epsilon)
    delta = number(delta, "delta", lo=0.0, hi=1.0)
    return (_exp(eps) + min(n, m) * delta) / n


def _epsilon(epsilon: float) -> float:
    """An LDP epsilon: a number >= 0, infinity included (a mechanism with p = 0)."""
    if isinstance(epsilon, Real) and not isinstance(epsilon, bool) and epsilon == math.inf:
        return math.inf
    return number(epsilon, "epsilon", lo=0.0, why="an LDP epsilon is a number >= 0 or infinity")


def _exp(x: float) -> float:
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


def ldp_delta(p: npt.ArrayLike, epsilon: float) -> float:
    """Smallest δ for which P satisfies (ε, δ)-LDP (eq. 1): ``max_{i,j} Σ_o (P_i − e^ε P_j)_+``.

    (The worst event for a pair (i, j) is ``{o : P[i,o] > e^ε P[j,o]}``.)
    """
    arr = _matrix(p)
    scale = _exp(_epsilon(epsilon))  # (NaN gave delta 0, 1e308 an OverflowError)
    worst = 0.0
    for i in range(arr.shape[0]):
        worst = max(worst, float(np.maximum(arr[i][None, :] - scale * arr, 0.0).sum(axis=1)
                                 .max()))
    return min(1.0, worst)


def k_anonymity(p: npt.ArrayLike) -> int | None:
    """Lemma 7's k (every row one-hot, each representation shared by >= k users), else None."""
    arr = _matrix(p)
    one_hot = np.isclose(arr.max(axis=1), 1.0, atol=1e-12)
    if not one_hot.all():
        return None
    groups = np.bincount(arr.argmax(axis=1), minlength=arr.shape[1])
    return int(groups[groups > 0].min())


def mutual_information_bound(p: npt.ArrayLike) -> float:
    """Lemma 9: ``(1 + MI(I; O))/log n`` with a uniform user (natural logarithms)."""
    arr = _matrix(p)
    n = arr.shape[0]
    if n < 2:
        raise InputError("the mutual-information bound needs at least two users", field="P")
    marg = arr.mean(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(arr > 0, arr * np.log(arr / marg[None, :]), 0.0)
    mi = float(terms.sum() / n)
    return (1.0 + mi) / math.log(n)


def answer_epsilon(mechanism: Mechanism | None = None) -> float:
    """The API's per-answer LDP ε: ``ln(q_in / q_out)`` (δ = 0); ∞ when p = 0."""
    if mechanism is not None and not isinstance(mechanism, Mechanism):  # (AttributeError)
        raise TypeError(f"mechanism takes a Mechanism, got {type(mechanism).__name__}")
    mech = mechanism or Mechanism()
    return math.inf if mech.q_out == 0 else math.log(mech.q_in / mech.q_out)


# ---------------------------------------------------------------- Topics API population


@njit(cache=True, parallel=True)
def _row_hashes(rows: np.ndarray, out: np.ndarray) -> None:
    n, width = rows.shape
    for i in prange(n):
        h = np.uint64(0x9E3779B97F4A7C15)
        for j in range(width):
            z = h ^ (np.uint64(rows[i, j] + 2) * np.uint64(0xBF58476D1CE4E5B9))
            z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
            h = z ^ (z >> np.uint64(31))
        out[i] = h


@njit(cache=True)
def _groups(rows: np.ndarray, order: np.ndarray, hashes: np.ndarray,
            sizes: np.ndarray) -> np.int64:
    """Group sizes of equal rows along the hash order; -1 if a hash collision is found."""
    n, width = rows.shape
    n_groups = 0
    i = 0
    while i < n:
        j = i + 1
        a = order[i]
        while j < n and hashes[order[j]] == hashes[a]:
            b = order[j]
            for c in range(width):
                if rows[a, c] != rows[b, c]:
                    return np.int64(-1)
            j += 1
        sizes[n_groups] = j - i
        n_groups += 1
        i = j
    return np.int64(n_groups)


@dataclass(frozen=True)
class ProfileAnonymity:
    """k-anonymity of the r-week profile sets (as if the API revealed them)."""

    users: int
    distinct: int
    unique: int
    k: int

    @property
    def bound(self) -> float:
        """Lemma 7: ``1/k``."""
        return 1.0 / self.k

    @property
    def full_information(self) -> float:
        """Corollary 1 for the one-hot profile representation: distinct profiles / n."""
        return self.distinct / self.users


def profile_anonymity(sets: npt.ArrayLike | TopicSets) -> ProfileAnonymity:
    """Group users by their whole profile sequence (``[n, weeks, k]``, rows canonical; or
    ``TopicSets``)."""
    if isinstance(sets, TopicSets):  # (was "sets must be an integer array, got dtype object")
        sets = sets.sets
    arr = integer_array(sets, "sets")  # (fractions were hashed as profiles of their own)
    if arr.ndim != 3 or arr.shape[0] < 1:
        raise InputError("profile sets must be a non-empty [users, weeks, k] array",
                         field="sets")
    rows = np.ascontiguousarray(arr.reshape(arr.shape[0], -1))
    hashes = np.empty(rows.shape[0], dtype=np.uint64)
    _row_hashes(rows, hashes)
    order = np.argsort(hashes, kind="stable")
    sizes = np.empty(rows.shape[0], dtype=np.int64)
    n_groups = int(_groups(rows, order, hashes, sizes))
    if n_groups < 0:  # a 64-bit collision (probability ~ n^2 / 2^65): exact fallback
        _, counts = np.unique(rows, axis=0, return_counts=True)
        sizes, n_groups = counts.astype(np.int64), counts.shape[0]
    g = sizes[:n_groups]
    return ProfileAnonymity(int(rows.shape[0]), n_groups, int((g == 1).sum()), int(g.min()))


def _week_counts(sets_w: npt.NDArray[np.integer], m: int) -> npt.NDArray[np.int64]:
    v = sets_w[sets_w >= 0].astype(np.int64)
    return np.bincount(v, minlength=m)


@dataclass
class ReidBounds:
    """The framework's bounds for one population and trace length (``to_dict()``-able).

    ``None`` marks a bound whose exact sum over the ``|T|^r`` traces visits more than
    ``max_cells`` cells (``exact_cells`` says how many it would; ``notes`` says so).
    ``mutual_information`` is MI(I; O) in nats under a uniform user (Lemma 9's bound
    ``(1 + MI)/ln n`` next to it).
    """

    users: int
    weeks: int
    trace_weeks: int
    topics: int
    q_in: float
    q_out: float
    epsilon_answer: float
    epsilon_trace: float
    ldp_bound: float
    ldp_bound_answer: float
    k_anonymity: int
    k_anonymity_bound: float
    distinct_profiles: int
    unique_profiles: int
    profile_full_information: float
    full_information_bound: float | None = None
    full_information_interval: tuple[float, float] | None = None
    matching_bound: float | None = None
    partial_information_bound: float | None = None
    partial_information_popularity: str | None = None
    mutual_information: float | None = None
    mutual_information_bound: float | None = None
    exact_cells: int | None = None
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        # (an infinite bound by the one JSON rule: "inf")
        return {key: json_number(value) if isinstance(value, float) else value
                for key, value in asdict(self).items()}


def _partial_channel(answers: npt.NDArray[np.int16], popularity: npt.NDArray[np.float64],
                     mech: Mechanism) -> ProductChannel:
    """Lemma 2 under Theorem 1's model as a product channel: user i "holds" its website-1
    answer ``W_i^s`` at week s, and ``E[P_s[i, t] | W_i^s]`` is the model's match probability
    ``g_match(t)`` if ``t = W_i^s``, its mismatch probability ``g_mis(t)`` otherwise (both
    depend on the topic: the values are per topic, nothing is collapsed)."""
    n, r = answers.shape
    m = popularity.shape[0]
    w_match, w_mis = asymmetric_weights(popularity, mech.q_in, mech.q_out, mech.k)
    g_match, g_mis = np.exp(-w_match), np.exp(-w_mis)
    # g_match >= g_mis up to rounding where p -> 1 (both tend to q_in): the max is unchanged
    g_match = np.maximum(g_match, g_mis)
    return topics_channel(answers[:, :, None], m, np.ones((n, r)),
                          np.broadcast_to(g_mis, (r, m)), alpha=np.broadcast_to(g_match, (r, m)))


def _answer_entropy(mech: Mechanism, m: int) -> float:
    """H of one week's answer given the profile: q_in on the k topics, q_out on the rest."""
    h = -mech.k * mech.q_in * math.log(mech.q_in)
    if mech.q_out > 0:
        h -= (m - mech.k) * mech.q_out * math.log(mech.q_out)
    return h


def reid_bounds(
    sets: TopicSets,
    *,
    weeks: int = 4,
    mechanism: Mechanism | None = None,
    seed: int = 0,
    popularity: str = "profiles",
    max_cells: int = MAX_CELLS,
    certify: bool = False,
    certify_log: str | os.PathLike[str] | None = None,
    progress: bool = False,
) -> ReidBounds:
    """The framework's bounds for the Topics API traces of a population.

    Args:
        sets: the population (full profiles: no empty slots).
        weeks: call-weeks observed (the trace has ``weeks + lookback - 1`` answers).
        mechanism: API parameters (default: the sets' k and taxonomy, p = 0.05).
        seed: API secret for website 1's answers ``W`` (partial-information bound).
        popularity: ``"profiles"`` (the model's p from the population: an attacker that knows
            D) or ``"site1"`` (Lemma 10 from website 1, as the asymmetric attack does).
        max_cells: the sums over all ``|T|^r`` traces (Corollary 1, Lemmas 2, 4, 9) are exact
            and computed when they visit at most this many cells (``ProductChannel``: 1e8
            for three weeks of the v2 taxonomy, seconds at 1M users; 4.8e10 for four, hours).
            Corollary 1 alone is exact at four trace weeks whatever ``max_cells``
            (``qif.coverage``: |T|^3 prefixes, about 10 s at 1M users).
        certify: where Corollary 1 is not exact, bracket it between certified bounds
            (``full_information_interval``; ``qif.cover_levels``: exact counts of unions of
            the users' boxes; at 1M users about 5 minutes at five weeks, 30 at six, 3× more a
            week beyond).
        certify_log: a walk log file for the certified interval (``qif.walk_log``): each
            finished walk is recorded, and a re-run given the same file resumes where it
            stopped (hours at 1M users from seven weeks).
        progress: a progress bar for the certified interval.
    """
    progress = flag(progress, "progress")
    if not isinstance(sets, TopicSets):  # (an array failed on .k)
        raise TypeError(f"reid_bounds takes TopicSets, got {type(sets).__name__}")
    # weeks=1.5 and seed=1.5 were TypeErrors, seed=-1 a ValueError, and max_cells=-1 or 2.5
    # was taken as it came
    weeks = integer(weeks, "weeks", at_least=1, at_most=MAX_COUNT)
    seed = integer(seed, "seed", at_least=0, at_most=2**64 - 1)
    max_cells = integer(max_cells, "max_cells", at_least=0)
    if not isinstance(certify, bool):
        raise InputError(f"certify must be True or False, got {value_shown(certify)}",
                         field="certify")
    if certify_log is not None:
        if not certify:
            raise InputError("certify_log records the certified interval's walks: add "
                             "certify=True", field="certify_log")
        from topicslab.qif.walk_log import check_walk_log

        # before the bounds' own work: a file that cannot serve is refused now, not after
        check_walk_log(certify_log, field="certify_log")
    # (a number or text as mechanism: an AttributeError on .k)
    mech = _mechanism(mechanism, sets)
    if mech.k != sets.k or mech.tax.size != sets.taxonomy.size:
        raise InputError("the mechanism's k / taxonomy do not match the sets", field="k")
    # (an array of popularities was NumPy's "truth value of an array is ambiguous")
    if not isinstance(popularity, str) or popularity not in ("profiles", "site1"):
        raise InputError("popularity must be 'profiles' or 'site1'", field="popularity")
    if not mech.q_in > mech.q_out:
        raise InputError("the bounds need p < 1: with p = 1 every answer is a random topic, "
                         "as likely outside the profile as in it (q_in = q_out), and the "
                         "partial-information bound's weights are undefined", field="p")
    trace_weeks = weeks + mech.lookback - 1
    if weeks < 1 or trace_weeks > sets.n_weeks:
        raise InputError(f"{weeks} call-week(s) with lookback {mech.lookback} need "
                         f"{trace_weeks} weeks of profiles; the sets have {sets.n_weeks}",
                         field="weeks")
    profiles = sets.sets[:, sets.n_weeks - trace_weeks:]
    if (profiles < 0).any():
        raise InputError("the bounds need full profiles (k topics every week); these sets "
                         "have empty slots", field="sets")
    n, m = sets.n_users, mech.tax.size
    eps = answer_epsilon(mech)
    eps_trace = eps * trace_weeks
    anon = profile_anonymity(profiles)
    ldp = math.inf if math.isinf(eps_trace) or eps_trace > 700 else ldp_bound(
        n, max(1, min(m**trace_weeks, 2**62)), eps_trace)
    ldp_one = math.inf if math.isinf(eps) else ldp_bound(n, m, eps)
    out = ReidBounds(n, weeks, trace_weeks, m, mech.q_in, mech.q_out, eps, eps_trace, ldp,
                     ldp_one, anon.k, anon.bound, anon.distinct, anon.unique, anon.full_information)
    channel = topics_channel(profiles, m, mech.q_in, mech.q_out)
    out.exact_cells = channel.cells
    if channel.cells <= max_cells:
        out.full_information_bound = channel.max_sum(np.full(n, 1.0 / n))
        out.matching_bound = channel.none_sum() / n
        out.mutual_information = max(0.0, channel.entropy()
                                     - trace_weeks * _answer_entropy(mech, m))
        if n >= 2:
            out.mutual_information_bound = (1.0 + out.mutual_information) / math.log(n)
        from topicslab.attacks.protocol import trial_api_seed

        answers = observe(sets.sets, [0], weeks=weeks, seed=trial_api_seed(seed, 0),
                          mechanism=mech, user_ids=sets.user_ids)[0]
        if popularity == "profiles":
            cover = sum(_week_counts(profiles[:, s], m) for s in range(trace_weeks))
            p = np.clip(cover / (n * trace_weeks), 1e-6, 1 - 1e-6)
        else:
            p = estimate_popularity(answers, m, mech.q_in, mech.q_out)
        partial = _partial_channel(answers, p, mech)
        if partial.cells <= max_cells:
            out.partial_information_bound = partial.max_sum(np.full(n, 1.0 / n))
            out.partial_information_popularity = popularity
        else:
            out.notes.append(f"the partial-information bound sums over {partial.cells:.3g} "
                             f"trace cells (> max_cells {max_cells:.3g})")
    elif trace_weeks == 4 and m**3 <= MAX_PREFIXES:
        # Corollary 1 depends on a trace only through how many weeks its best user covers:
        # |T|^3 prefixes instead of |T|^4 cells (qif.coverage)
        out.full_information_bound = corollary1_four_weeks(profiles, m, mech.q_in, mech.q_out)
        out.notes.append(f"Corollary 1 exact by the best cover of each 3-week prefix; the "
                         f"matching, partial-information and mutual-information bounds sum "
                         f"over {channel.cells:.3g} trace cells (> max_cells {max_cells:.3g})")
    else:
        out.notes.append(f"full-information, matching, partial-information and mutual-"
                         f"information bounds sum over {channel.cells:.3g} trace cells "
                         f"(> max_cells {max_cells:.3g}; Corollary 1 is exact up to 4 weeks of "
                         f"a taxonomy of up to 584 topics, the others up to 3 weeks of the "
                         f"full taxonomy by default)")
    if certify and out.full_information_bound is None:
        from topicslab.qif.cover_levels import cover_levels

        levels = cover_levels(profiles, m, progress=progress, log=certify_log)
        out.full_information_interval = levels.corollary1(mech.q_in, mech.q_out)
        out.notes.append("Corollary 1 between certified bounds (exact counts of the users' "
                         "box unions per cover level; qif.cover_levels)")
        if certify_log is not None:
            rest = levels.box_walks - levels.logged
            out.notes.append(f"walk log {certify_log}: {levels.logged} of the "
                             f"{levels.box_walks} walks read from it"
                             + (f", {rest} counted and added" if rest else ""))
    if ldp >= 1:
        out.notes.append("the LDP bound exceeds 1 (vacuous): the per-answer epsilon is large")
    return out


__all__ = [
    "ProfileAnonymity",
    "ReidBounds",
    "answer_epsilon",
    "full_information_bound",
    "k_anonymity",
    "ldp_bound",
    "ldp_delta",
    "matching_bound",
    "mutual_information_bound",
    "optimal_matching_accuracy",
    "partial_information_bound",
    "profile_anonymity",
    "reid_bounds",
]
