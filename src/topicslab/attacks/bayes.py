"""The Bayes-optimal attacker with full information (Carey et al. Corollary 1), on sampled traces.

The attacker knows every user's r-week profile; it sees a target's trace o (one answer a week:
a topic of the week's top-k set with probability q_in each, any other topic with q_out) and
names the user maximising ``P[i, o] = Π_s (q_in if o^s ∈ S_i^s else q_out)``: with full
profiles, the user whose profile *covers* the most weeks of the trace, ties at random. Its
accuracy averaged over the channel is exactly Corollary 1's ``‖P‖_{∞,1}/n``.

``reid_bounds`` computes that value exactly while the sum over the |T|^r traces is affordable
(three weeks of the v2 taxonomy). Beyond, this module measures the same attacker the way the
attacks are measured: every user (or a sample) is a target with one trace drawn from the
channel, and each target's success is its exact expectation over the tie-break
(``1/|argmax|`` when it is in the argmax set). The mean is an unbiased estimate of Corollary 1
with a CLT interval; it is not a certified bound.

Why it is fast. A user covering at least c of the r weeks must hold the trace's topic in at
least one of any r − c + 1 weeks; with c the target's own coverage, the candidates are the
holders of the trace's topic in the r − c + 1 weeks whose holder lists are shortest (per-week
inverted lists), each checked in O(r k). Usually c = r and a single list is scanned.

Public names:
    BayesRisk                                      result (``to_dict()``)
    bayes_risk(sets, *, weeks=4, mechanism=None, targets=None, seed=0) -> BayesRisk
    expected_successes(profiles, targets, traces, m)   per-target success and argmax size
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from numba import njit, prange

from topicslab._checks import integer
from topicslab.api import Mechanism
from topicslab.api.answers import _mechanism
from topicslab.datamodel import TopicSets
from topicslab.errors import InputError

__all__ = ["BayesRisk", "bayes_risk", "expected_successes"]


@dataclass(frozen=True)
class BayesRisk:
    """The full-information Bayes attacker's risk on one sampled trace per target."""

    weeks: int
    users: int
    targets: int
    risk: float
    ci95: tuple[float, float]
    argmax_size_mean: float

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["ci95"] = list(self.ci95)
        return d


@njit(cache=True)
def _coverage(profiles: npt.NDArray[np.int16], v: int, trace: npt.NDArray[np.int64]) -> int:
    c = 0
    for s in range(profiles.shape[1]):
        for j in range(profiles.shape[2]):
            if profiles[v, s, j] == trace[s]:
                c += 1
                break
    return c


@njit(cache=True, parallel=True)
def _expected_success(profiles: npt.NDArray[np.int16], ptr: npt.NDArray[np.int64],
                      holders: npt.NDArray[np.int64], targets: npt.NDArray[np.int64],
                      traces: npt.NDArray[np.int64], m: int,
                      out: npt.NDArray[np.float64], ties: npt.NDArray[np.int64]) -> None:
    n, r, _ = profiles.shape
    for j in prange(targets.shape[0]):
        u = targets[j]
        trace = traces[j]
        c = _coverage(profiles, u, trace)
        if c == 0:  # no week covered: every user with no covered week ties
            ahead = 0
            tied = 0
            for v in range(n):
                cv = _coverage(profiles, v, trace)
                if cv > 0:
                    ahead += 1
                else:
                    tied += 1
            out[j] = 0.0 if ahead else 1.0 / tied
            ties[j] = -1 if ahead else tied
            continue
        # the r − c + 1 weeks whose holder lists for the trace's topic are shortest
        sizes = np.empty(r, dtype=np.int64)
        for s in range(r):
            t = trace[s]
            sizes[s] = ptr[s * (m + 1) + t + 1] - ptr[s * (m + 1) + t]
        order = np.argsort(sizes)
        chosen = order[:r - c + 1]
        ahead = 0
        tied = 0
        for a in range(chosen.shape[0]):
            s = chosen[a]
            t = trace[s]
            for idx in range(ptr[s * (m + 1) + t], ptr[s * (m + 1) + t + 1]):
                v = holders[idx]
                # count each candidate once: in the first chosen week where it holds the topic
                earlier = False
                for b in range(a):
                    s2 = chosen[b]
                    for jj in range(profiles.shape[2]):
                        if profiles[v, s2, jj] == trace[s2]:
                            earlier = True
                            break
                    if earlier:
                        break
                if earlier:
                    continue
                cv = _coverage(profiles, v, trace)
                if cv > c:
                    ahead += 1
                    break  # a user covers more weeks: the target is never named
                if cv == c:
                    tied += 1
            if ahead:
                break
        out[j] = 0.0 if ahead else 1.0 / tied
        ties[j] = -1 if ahead else tied


def _holder_lists(profiles: npt.NDArray[np.int16], m: int,
                  ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """CSR ``ptr[s * (m + 1) + t] .. ptr[s * (m + 1) + t + 1]``: the users holding t in week s."""
    n, r, k = profiles.shape
    ptr = np.zeros(r * (m + 1), dtype=np.int64)
    chunks = []
    offset = 0
    owner = np.repeat(np.arange(n, dtype=np.int64), k)
    for s in range(r):
        topics = profiles[:, s, :].ravel().astype(np.int64)
        keep = topics >= 0
        order = np.argsort(topics[keep], kind="stable")
        counts = np.bincount(topics[keep], minlength=m)
        ptr[s * (m + 1):(s + 1) * (m + 1)] = np.concatenate([[0], np.cumsum(counts)]) + offset
        chunks.append(owner[keep][order])
        offset += int(keep.sum())
    return ptr, np.concatenate(chunks)


def _sample_traces(profiles: npt.NDArray[np.int16], targets: npt.NDArray[np.int64],
                   mech: Mechanism, rng: np.random.Generator) -> npt.NDArray[np.int64]:
    """One answer a week per target: a uniform topic of its set with probability 1 − p,
    else a uniform topic of the taxonomy (so q_in = (1 − p)/k + p/|T|, q_out = p/|T|)."""
    t, r, k = targets.shape[0], profiles.shape[1], profiles.shape[2]
    own = profiles[targets][np.arange(t)[:, None], np.arange(r)[None, :],
                            rng.integers(0, k, size=(t, r))]
    noise = rng.random((t, r)) < mech.p
    random_topic = rng.integers(0, mech.tax.size, size=(t, r))
    return np.where(noise, random_topic, own).astype(np.int64)


def bayes_risk(sets: TopicSets, *, weeks: int = 4, mechanism: Mechanism | None = None,
               targets: int | None = None, seed: int = 0) -> BayesRisk:
    """The full-information Bayes attacker's risk over the last ``weeks`` weeks of ``sets``.

    Args:
        sets: full profiles (k topics every week).
        weeks: r, the weeks of the trace (1..weeks of the data).
        mechanism: the API's p, k and taxonomy (default: the data's, p = 0.05).
        targets: how many users are targets (a uniform sample without replacement); ``None``
            for every user.
        seed: draws the targets and their traces.
    """
    if not isinstance(sets, TopicSets):  # (an array or None: an AttributeError on .k)
        raise TypeError(f"bayes_risk takes TopicSets, got {type(sets).__name__}")
    # (a number or text as mechanism: an AttributeError on .k)
    mech = _mechanism(mechanism, sets)
    if mech.k != sets.k or mech.tax.size != sets.taxonomy.size:
        raise InputError("the mechanism's k / taxonomy do not match the sets", field="k")
    if sets.n_users == 0:  # (a ZeroDivisionError in the interval)
        raise InputError("the sets hold no users: there is nothing to attack", field="sets")
    r = integer(weeks, "weeks", at_least=1)
    if r > sets.n_weeks:
        raise InputError(f"{r} weeks asked, the sets have {sets.n_weeks}", field="weeks")
    profiles = np.ascontiguousarray(sets.sets[:, sets.n_weeks - r:])
    if (profiles < 0).any():
        raise InputError("the Bayes attacker needs full profiles (k topics every week); "
                         "these sets have empty slots", field="sets")
    n, m = sets.n_users, mech.tax.size
    rng = np.random.default_rng(integer(seed, "seed", at_least=0))
    if targets is None:
        chosen = np.arange(n, dtype=np.int64)
    else:
        count = integer(targets, "targets", at_least=1)
        if count > n:
            raise InputError(f"{count} targets asked, the population has {n} users",
                             field="targets")
        chosen = np.sort(rng.choice(n, count, replace=False)).astype(np.int64)
    traces = _sample_traces(profiles, chosen, mech, rng)
    out, ties = expected_successes(profiles, chosen, traces, m)
    mean = float(out.mean())
    # CLT over targets: their traces are independent draws given the profiles (no
    # finite-population correction: even with every user a target the traces vary)
    sd = float(out.std(ddof=1)) if out.shape[0] > 1 else 0.0
    half = 1.96 * sd / math.sqrt(out.shape[0])
    named = ties[ties >= 0]
    return BayesRisk(r, n, int(out.shape[0]), mean,
                     (max(0.0, mean - half), min(1.0, mean + half)),
                     float(named.mean()) if named.size else 0.0)


def expected_successes(profiles: npt.NDArray[np.int16], targets: npt.NDArray[np.int64],
                       traces: npt.NDArray[np.int64], m: int,
                       ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]:
    """Per target (with its trace), the Bayes attacker's expected success over the tie-break
    and the size of the argmax set (``-1`` where another user covers more weeks)."""
    prof = np.ascontiguousarray(profiles, dtype=np.int16)
    ptr, holders = _holder_lists(prof, m)
    out = np.empty(targets.shape[0])
    ties = np.empty(targets.shape[0], dtype=np.int64)
    _expected_success(prof, ptr, holders, np.ascontiguousarray(targets, dtype=np.int64),
                      np.ascontiguousarray(traces, dtype=np.int64), m, out, ties)
    return out, ties
