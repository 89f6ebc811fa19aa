"""A learned re-identification attack: the asymmetric attack plus a learned residual (Carey et
al. Appendix E.1.3).

Carey et al.'s strongest attacker is a trained similarity of two sites' r-week answer
sequences, trained with binary cross-entropy on one matching and ten non-matching pairs per
user. A first version of this module (format 1) learned it from scratch as an embedding + pair
scorer with faiss retrieval; it only ever matched the asymmetric attack, because retrieval
found the true user's trace among the top 256 for ~18% of targets. This version is built so
that it cannot start below the hand-made attack and training can only add to it:

Score of a website-1 trace ``x`` against a query ``o`` (the target's website-2 trace), per
query week ``s`` with topic ``t = o^s`` (present):

    score(x, o) = Σ_s [x^s = t]·(Δ(t) + a[t])          exact match (Theorem 1's gain + residual)
                + Σ_s [x^s ≠ t, x^s present]·pair[x^s, t]   same-week topic co-occurrence
                + Σ_s [t ∈ x^{w}, w ≠ s]·b[t]           the topic shown in another week
                + g[#weeks s matched exactly or in another week]

``Δ`` is the asymmetric attack's gain (Theorem 1 with Lemma 11), estimated from the attacked
website 1 exactly as ``AsymmetricAttack`` does (Lemma 10). With ``a``, ``pair``, ``b`` and
``g`` zero the model *is* the asymmetric attack (same gains, ties and best scores).
``pair`` is the evidence Theorem 1 leaves out: under its parametric family (Appendix D) every
mismatch costs the same, but for the same user both sites' answers of one week come from one weekly
profile, whose topics go together. It starts from a count on simulated pairs (``cooccurrence_llr``,
a plug-in estimate in the manner of Lemma 10); the cross-week term ``b`` (profiles persist across
weeks) and ``g`` start at zero.

Training (``train_attack``): the co-occurrence count is validated first (epoch 0); then every
epoch the mechanism simulates two sites' traces of the training population
(``topicslab.api.observe``, a fresh API secret: fresh pairs); a sample of users are queries;
per query 1 positive pair and ``negatives`` negatives, the *hard* ones drawn from the current
model's top ``hard_pool`` wrong candidates for that query (at the first epoch: the asymmetric
attack's with the counted co-occurrence), the rest uniform. Loss: binary cross-entropy over the 1 :
``negatives`` pairs (Carey et al.'s 1 : 10). After each epoch the exact expected risk on a
held-out validation trial (its own API secret and targets) is measured; a state is kept only if
it beats the asymmetric start by more than ``gate`` standard errors of the paired per-target
difference (and the states kept before), otherwise the attack stays the asymmetric one: more
epochs never make the validation risk worse.

Inference (``attack_outcomes``): exact over every website-1 user. Each query scans website 1's
distinct traces once (numba, queries in parallel): per query week a table gives the
contribution of every website-1 topic, so most traces cost ``c`` table reads; the few that show
one of the query's topics also get the cross-week and count terms. Contributions are summed in
fixed point (multiples of 2^-32, int64), which is exact and order-free, so equal multisets of
contributions tie exactly; ties are decided at that resolution (sums closer than about c·2^-33
may tie, float-equal sums of different contributions may not: neither was seen with real
gains). The best score reported is the float sum, in ascending order as
``scoring.subset_scores`` forms it, of the first trace of the argmax set. The attacker names a
uniform user among the best-scoring ones (expected success ``1/|argmax|`` when the true user is
in it, as for the other attacks). The *candidate recall* (share of targets whose true user
shares at least one topic with the query) is reported.

Public names:
    LearnedAttackConfig                     training options
    MatchScorer                             the learned terms (a, pair, b, g; bias, temperature)
    cooccurrence_llr(site1, site2, topics)  the counted start of the co-occurrence term
    LearnedAttack                           scorer + metadata; .terms() (a, b, g, pair)
    train_attack(sets, *, weeks, mechanism, config, seed, progress, device) -> LearnedAttack
    save_attack(directory, attack) / load_attack(directory, *, device)
    LearnedTraceAttack(attack)              the protocol's whole-trace attack (TraceAttack):
                                            measure_risk(sets, attacks=["asymmetric",
                                            LearnedTraceAttack(att)], weeks=att.weeks)
    attack_outcomes(attack, site1, queries, true_rows, *, mechanism) -> (TargetOutcomes, recall)
    measure_risk_learned(sets, attack, *, weeks, compare, ...) -> RiskResult
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from numbers import Integral, Real
from pathlib import Path
from typing import Any

import numba
import numpy as np
import numpy.typing as npt
import torch
from numba import njit, prange
from torch import nn

from topicslab._checks import flag, integer, is_integer, value_shown
from topicslab._json import (
    DuplicateKeyError,
    bounded_int,
    dumps,
    loads,
    read_document,
    unique_keys,
)
from topicslab._kernels import sort_head
from topicslab._progress import task
from topicslab.api import Mechanism, observe
from topicslab.api.answers import _mechanism
from topicslab.attacks.attack import TraceAttack
from topicslab.attacks.outcomes import TargetOutcomes
from topicslab.attacks.protocol import check_call_weeks
from topicslab.datamodel import TopicSets
from topicslab.errors import FileFieldError, InputError

WEIGHTS = "model.safetensors"
META = "model.json"
FORMAT = "topicslab-learned-attack"
#: 2: asymmetric attack + learned residual (exact inference); 1 (refused): embedding + pair
#: scorer with faiss retrieval
FORMAT_VERSION = 2
#: the most negative pairs per positive: training time grows linearly with them
MAX_NEGATIVES = 1000
#: Most training passes: early stopping keeps the best pass, and each pass is a full round of
#: fresh answers; a count past this is a typo that would run for days, not a plan.
MAX_EPOCHS = 1000


@dataclass(frozen=True)
class LearnedAttackConfig:
    """Training options of the learned attack.

    Attributes:
        negatives: non-matching pairs per matching pair (10 in Carey et al.).
        hard_fraction: share of the negatives drawn from the current model's top
            ``hard_pool`` wrong candidates of the query (the rest: uniform users).
        hard_pool: candidates per query the hard negatives are drawn from.
        epochs: passes (fresh API answers each); the best epoch on the validation trial is
            kept, the untrained start (the asymmetric attack) included. 0: only the counted
            co-occurrence term (epoch 0), gated like any epoch.
        queries_per_epoch: training queries (users) per epoch.
        batch_users: queries per optimiser step (each with 1 + ``negatives`` pairs).
        lr: Adam learning rate.
        l2: penalty on the learned terms (they start at zero: the asymmetric attack).
        validation: targets of the held-out validation trial (early stopping).
        listwise: weight of a softmax loss over each query's 1 + ``negatives`` pairs.
        pair_pseudo_count: shrinkage of the counted co-occurrence term (``cooccurrence_llr``).
        gate: a trained state is kept only if its validation risk beats the asymmetric start
            by more than ``gate`` standard errors of the paired per-target difference (>= 0:
            never worse on validation; < 0 turns the gate off, for diagnostics).
    """

    negatives: int = 10
    hard_fraction: float = 1.0
    hard_pool: int = 32
    epochs: int = 2
    queries_per_epoch: int = 32768
    batch_users: int = 2048
    lr: float = 0.01
    l2: float = 1e-4
    validation: int = 8192
    listwise: float = 0.0
    pair_pseudo_count: float = 5.0
    gate: float = 1.0

    def __post_init__(self) -> None:
        for name in ("negatives", "hard_pool", "epochs", "queries_per_epoch",
                     "batch_users", "validation"):
            v = getattr(self, name)
            least = 0 if name == "epochs" else 1  # 0 epochs: the counted co-occurrence only
            if isinstance(v, bool) or not isinstance(v, Integral) or v < least:
                kind = "a non-negative" if least == 0 else "a positive"
                raise InputError(f"must be {kind} integer, got {v!r}", field=name)
            object.__setattr__(self, name, int(v))  # a NumPy integer: model.json's int
        for name in ("hard_fraction", "lr", "l2", "listwise", "pair_pseudo_count", "gate"):
            v = getattr(self, name)
            # a string or None was a TypeError from the comparisons below; a NaN gate
            # compared false everywhere (the gate silently off); an infinite rate, weight
            # or count (1e400 in a model.json) trained on NaN losses without a word (the
            # gate alone may be infinite: -inf is off, as any negative gate)
            if (isinstance(v, bool) or not isinstance(v, Real) or math.isnan(v)
                    or (name != "gate" and math.isinf(v))):
                raise InputError(f"must be a finite number, got {v!r}", field=name)
            object.__setattr__(self, name, float(v))
        if self.negatives > MAX_NEGATIVES:
            raise InputError(f"must be at most {MAX_NEGATIVES:,} (Carey et al. use 10; every "
                             f"negative is one more pair per user and step), got "
                             f"{self.negatives:,}", field="negatives")
        if self.epochs > MAX_EPOCHS:
            raise InputError(f"must be at most {MAX_EPOCHS:,} (the best pass on validation "
                             f"is kept; a larger count is a typo), got {self.epochs:,}",
                             field="epochs")
        if not 0.0 <= self.hard_fraction <= 1.0:
            raise InputError(f"must lie in [0, 1], got {self.hard_fraction!r}",
                             field="hard_fraction")
        if not float(self.lr) > 0:
            raise InputError(f"must be positive, got {self.lr!r}", field="lr")
        for name in ("l2", "listwise", "pair_pseudo_count"):
            if not float(getattr(self, name)) >= 0:
                raise InputError(f"must be >= 0, got {getattr(self, name)!r}", field=name)


class MatchScorer(nn.Module):
    """The learned terms of the score (module docstring): ``exact`` (residual ``a`` on
    Theorem 1's gain), ``cross`` (``b``), ``count`` (``g``, indexed by the number of query
    weeks matched exactly or in another week); ``bias`` and ``log_temp`` (training only: the
    logit is ``bias + exp(log_temp) · score``, which changes no ranking). The learned terms
    start at zero (the bias at log(1/10), the 1 : 10 prior)."""

    def __init__(self, topics: int, trace_weeks: int) -> None:
        super().__init__()
        self.exact = nn.Parameter(torch.zeros(topics))
        self.cross = nn.Parameter(torch.zeros(topics))
        self.count = nn.Parameter(torch.zeros(trace_weeks + 1))
        # co-occurrence of a website-1 topic x with a different query topic o in the same
        # week, pair[x, o]: for the same user both answers come from one weekly profile, so
        # topics that share profiles are evidence (Theorem 1 counts every mismatch alike)
        self.pair = nn.Parameter(torch.zeros(topics, topics))
        self.bias = nn.Parameter(torch.full((), -float(np.log(10.0))))
        # logit = bias + exp(log_temp) * score: the BCE's calibration (hard negatives score
        # as high as the true user) goes into these two, which change no ranking, instead of
        # shrinking Theorem 1's gains through the residual
        self.log_temp = nn.Parameter(torch.full((), float(np.log(0.2))))

    def forward(self, delta: torch.Tensor, topics: torch.Tensor, site1: torch.Tensor,
                exact: torch.Tensor, cross: torch.Tensor) -> torch.Tensor:
        """Logits of pairs: ``delta`` ``[m]`` Theorem 1's gains; ``topics`` ``[P, c]`` the
        query's, ``site1`` ``[P, c]`` website 1's (``-1`` missing); ``exact``, ``cross``
        ``[P, c]`` 0/1 features. -> ``[P]``."""
        t = topics.clamp(min=0)
        x = site1.clamp(min=0)
        present = (topics >= 0).float()
        ex, cr = exact * present, cross * present
        mis = present * (site1 >= 0).float() * (1.0 - ex)
        pair = self.pair[x, t]
        score = ((ex * (delta[t] + self.exact[t])).sum(1) + (cr * self.cross[t]).sum(1)
                 + (mis * pair).sum(1))
        n = ((ex + cr) > 0).sum(1)
        return self.bias + self.log_temp.exp() * (score + self.count[n])


@dataclass
class LearnedAttack:
    """A trained learned attack.

    Attributes:
        scorer: the learned terms (``MatchScorer``).
        config: training options.
        topics: taxonomy size m; ``taxonomy``: its version.
        weeks: call-weeks r it was trained on; ``lookback``: epochs per call (the traces it
            reads have ``weeks + lookback - 1`` columns).
        metadata: training record (population size, seconds, losses, validation risks).
    """

    scorer: MatchScorer
    config: LearnedAttackConfig
    topics: int
    taxonomy: str
    weeks: int
    lookback: int = 1
    metadata: dict[str, Any] = field(default_factory=dict)
    device: str = "cpu"

    name = "learned"

    @property
    def trace_weeks(self) -> int:
        return self.weeks + self.lookback - 1

    def _check(self, traces: npt.NDArray[np.integer], what: str) -> None:
        if traces.ndim != 2 or traces.shape[1] != self.trace_weeks:
            raise InputError(f"{what} must be [n, {self.trace_weeks}] traces (the model was "
                             f"trained on r = {self.weeks}, lookback {self.lookback}), got "
                             f"{traces.shape}", field="weeks")
        if traces.size and (int(traces.max()) >= self.topics or int(traces.min()) < -1):
            raise InputError(f"{what} hold categories outside 0..{self.topics - 1}",
                             field="traces")

    def terms(self) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64],
                             npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """The learned terms ``(a, b, g, pw)`` as float64 (float32 values widened; the
        diagonal of ``pw`` is never read: a match is scored by ``a``)."""
        s = self.scorer
        a, b, g, pw = (p.detach().cpu().double().numpy().copy()
                       for p in (s.exact, s.cross, s.count, s.pair))
        np.fill_diagonal(pw, 0.0)
        return a, b, g, pw

    def describe(self) -> dict[str, Any]:
        a, b, g, pw = self.terms()
        return {"name": self.name, "weeks": self.weeks, "lookback": self.lookback,
                "taxonomy": self.taxonomy, "negatives": self.config.negatives,
                "hard_fraction": self.config.hard_fraction,
                "residual_abs_mean": float(np.abs(a).mean()),
                "cross_mean": float(b.mean()), "count_terms": [float(x) for x in g],
                "pair_abs_mean": float(np.abs(pw).mean()),
                "training": self.metadata}


def resolve_device(device: str) -> str:
    """``cpu``, ``cuda`` or ``auto`` (cuda when available) -> the torch device to use."""
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device not in ("cpu", "cuda"):
        raise InputError(f"device must be cpu, cuda or auto, got "
                         f"{value_shown(device)}", field="device")
    if device == "cuda" and not torch.cuda.is_available():
        raise InputError("CUDA is not available on this machine (torch.cuda.is_available() "
                         "is false); use --device cpu", field="device")
    return device


def _new_attack(topics: int, taxonomy: str, weeks: int, lookback: int,
                cfg: LearnedAttackConfig, device: str) -> LearnedAttack:
    c = weeks + lookback - 1
    return LearnedAttack(MatchScorer(topics, c).to(device), cfg, topics,
                         taxonomy, weeks, lookback, {}, device)


def theorem1_gains(site1: npt.NDArray[np.integer], mech: Mechanism) -> npt.NDArray[np.float64]:
    """Theorem 1's gain ``Δ(t)`` per topic, ``p`` estimated from website 1 (Lemma 10) with
    ``AsymmetricAttack``'s defaults: the same floats as the asymmetric attack's gains."""
    from topicslab.attacks.asymmetric import AsymmetricAttack

    att = AsymmetricAttack()
    att.fit(np.asarray(site1), mech)
    assert att.w_match is not None and att.w_mismatch is not None
    return att.w_mismatch - att.w_match


# ----------------------------------------------------------------------------- exact scoring


def _distinct_traces(site1: npt.NDArray[np.integer]
                     ) -> tuple[npt.NDArray[np.int16], npt.NDArray[np.int64],
                                npt.NDArray[np.int64]]:
    """(distinct rows, row -> distinct index, users per distinct row)."""
    arr = np.ascontiguousarray(site1, dtype=np.int16)
    c = arr.shape[1]
    if c <= 6:  # pack the row into one int64 (topics + 1 < 2^10)
        code = np.zeros(arr.shape[0], dtype=np.int64)
        for s in range(c):
            code = (code << 10) | (arr[:, s].astype(np.int64) + 1)
        _, first, inverse, counts = np.unique(code, return_index=True, return_inverse=True,
                                              return_counts=True)
        return arr[first], inverse.astype(np.int64), counts.astype(np.int64)
    uniq, inverse, counts = np.unique(arr, axis=0, return_inverse=True, return_counts=True)
    return uniq, inverse.reshape(-1).astype(np.int64), counts.astype(np.int64)


#: Scores are summed in fixed point: each contribution rounded to a multiple of 2^-32, as
#: int64. Integer addition is exact and order-free, so equal multisets of contributions tie
#: exactly without sorting each pair's contributions (the float path needed a canonical
#: order); ties are thus decided at 2^-32 resolution. The kernel keeps 5 low bits free for
#: its candidate count.
FIXED_SCALE = float(2**32)
#: Largest magnitude of one contribution: c of them (c <= 31) shifted by 5 bits stay far
#: inside int64.
MAX_TERM = 2.0**20


def _fixed(values: npt.NDArray[np.floating]) -> npt.NDArray[np.int64]:
    v = np.asarray(values, dtype=np.float64)
    if v.size and not (np.isfinite(v).all() and float(np.abs(v).max()) <= MAX_TERM):
        raise InputError(f"the attack's weights must be finite and within ±{MAX_TERM:g}; "
                         "retrain the model (topicslab attack-train)", field="attack_model")
    return np.round(v * FIXED_SCALE).astype(np.int64)


@njit(cache=True, inline="always")
def _pair_score(uniq, u, queries, q, ew, cw, gw, pw, buf):
    """Float score of distinct trace ``u`` against query ``q`` (the module docstring's
    formula), the contributions summed in ascending order as ``scoring.subset_scores`` does:
    the best score reported is this float, the asymmetric attack's own figure when every
    learned term is zero."""
    c = queries.shape[1]
    m = 0
    hits = 0
    for s in range(c):
        t = queries[q, s]
        if t < 0:
            continue
        hit = False
        x = uniq[u, s]
        if x == t:
            buf[m] = ew[q, s]
            m += 1
            hit = True
        elif x >= 0:
            buf[m] = pw[x, t]
            m += 1
        for w in range(c):
            if w != s and uniq[u, w] == t:
                buf[m] = cw[q, s]
                m += 1
                hit = True
                break
        if hit:
            hits += 1
    buf[m] = gw[hits]
    m += 1
    sort_head(buf, m)  # (m <= 2c + 1)
    total = 0.0
    for j in range(m):
        total += buf[j]
    return total


@njit(cache=True, parallel=True)
def _scan_queries(uniq, counts, queries, true_u, ewf, cwf, gwf, pwf, ew, cw, gw, pw,
                  n_blocks, size, inside, best, found, pool_ids):
    """Per query, over every distinct website-1 trace: argmax size, true user inside, best
    score; whether the true trace is a candidate (shares a topic with the query); and the
    ``pool`` best-scoring wrong candidates (hard negatives; ties in arbitrary order).

    One sequential pass per query (cache-friendly: no index). Per query week ``s`` a table
    ``T[s, x + 1]`` holds the fixed-point contribution of website-1 topic ``x`` in that week
    (exact weight, co-occurrence or 0), shifted left 5 bits, plus 1 when ``x`` is one of the
    query's topics. A trace's sum of its ``c`` table entries is therefore its additive score
    in the high bits and, in the low 5 bits (c < 32, no carry), how many of its weeks show a
    query topic: 0 for most traces, which need nothing else; the others get the cross-week
    and count terms from per-topic bitmasks of the query's weeks."""
    n_q, c = queries.shape
    n_u = uniq.shape[0]
    m = pwf.shape[0]
    pool = pool_ids.shape[1]
    per = (n_q + n_blocks - 1) // n_blocks
    for b in prange(n_blocks):
        table = np.zeros((c, m + 1), dtype=np.int64)
        weeks_of = np.zeros(m + 1, dtype=np.int64)
        psc = np.empty(max(pool, 1), dtype=np.int64)
        buf = np.empty(2 * c + 1, dtype=np.float64)
        for q in range(b * per, min(n_q, (b + 1) * per)):
            for x in range(m + 1):
                weeks_of[x] = 0
            for s in range(c):
                t = queries[q, s]
                if t >= 0:
                    weeks_of[t + 1] |= 1 << s
            for s in range(c):
                t = queries[q, s]
                table[s, 0] = 0
                for x in range(m):
                    table[s, x + 1] = (pwf[x, t] << 5) if t >= 0 else 0
                if t >= 0:
                    table[s, t + 1] = ewf[q, s] << 5
                for x in range(1, m + 1):
                    if weeks_of[x] != 0:
                        table[s, x] += 1
            tu = true_u[q]
            g0 = gwf[0]
            top = np.iinfo(np.int64).min
            top_u = -1
            n_top = 0
            has_true = False
            pn = 0
            pmin = 0
            for u in range(n_u):
                raw = np.int64(0)
                for w in range(c):
                    raw += table[w, uniq[u, w] + 1]
                if raw & 31:  # a candidate: shares a topic with the query
                    exact = 0
                    cross = 0
                    for w in range(c):
                        mw = weeks_of[uniq[u, w] + 1]
                        exact |= mw & (1 << w)
                        cross |= mw & ~(1 << w)
                    hit = exact | cross
                    n_hit = 0
                    sc = raw >> 5
                    for s in range(c):
                        if hit >> s & 1:
                            n_hit += 1
                        if cross >> s & 1:
                            sc += cwf[q, s]
                    sc += gwf[n_hit]
                    if pool > 0 and u != tu:
                        if pn < pool:
                            pool_ids[q, pn] = u
                            psc[pn] = sc
                            pn += 1
                            if pn == pool:
                                pmin = 0
                                for i in range(1, pool):
                                    if psc[i] < psc[pmin]:
                                        pmin = i
                        elif sc > psc[pmin]:
                            pool_ids[q, pmin] = u
                            psc[pmin] = sc
                            pmin = 0
                            for i in range(1, pool):
                                if psc[i] < psc[pmin]:
                                    pmin = i
                else:
                    sc = (raw >> 5) + g0
                if sc > top:
                    top = sc
                    top_u = u
                    n_top = counts[u]
                    has_true = u == tu
                elif sc == top:
                    n_top += counts[u]
                    if u == tu:
                        has_true = True
            cand_true = False
            if tu >= 0:
                for w in range(c):
                    if weeks_of[uniq[tu, w] + 1] != 0:
                        cand_true = True
            size[q] = n_top
            inside[q] = has_true and tu >= 0
            best[q] = _pair_score(uniq, top_u, queries, q, ew, cw, gw, pw, buf) if top_u >= 0 \
                else -np.inf
            found[q] = cand_true


class _Site1:
    """Website 1 prepared once: its distinct traces and how many users hold each."""

    def __init__(self, site1: npt.NDArray[np.integer], topics: int) -> None:
        self.n_users = int(site1.shape[0])
        self.topics = topics
        self.uniq, self.inverse, self.counts = _distinct_traces(site1)

    def run(self, queries: npt.NDArray[np.integer], true_rows: npt.NDArray[np.int64],
            ew: npt.NDArray[np.float64], cw: npt.NDArray[np.float64],
            gw: npt.NDArray[np.float64], pw: npt.NDArray[np.float64], pool: int = 0
            ) -> tuple[TargetOutcomes, npt.NDArray[np.bool_], npt.NDArray[np.int64]]:
        q = np.ascontiguousarray(queries, dtype=np.int16)
        n_q = q.shape[0]
        if q.shape[1] >= 32:
            raise InputError(f"the learned attack reads at most 31 trace weeks, got "
                             f"{q.shape[1]}", field="weeks")
        rows = np.asarray(true_rows, dtype=np.int64)
        true_u = np.where(rows >= 0, self.inverse[np.maximum(rows, 0)], -1) if n_q else rows
        size = np.zeros(n_q, dtype=np.int64)
        inside = np.zeros(n_q, dtype=np.bool_)
        best = np.full(n_q, -np.inf)
        found = np.zeros(n_q, dtype=np.bool_)
        pool_ids = np.full((n_q, pool), -1, dtype=np.int64)
        if n_q:
            pw_ = np.array(pw, dtype=np.float64)
            np.fill_diagonal(pw_, 0.0)  # never read as a match: a match is scored by ``a``
            ew_, cw_, gw_ = (np.ascontiguousarray(v, dtype=np.float64) for v in (ew, cw, gw))
            blocks = max(1, min(n_q, 4 * numba.get_num_threads()))
            _scan_queries(self.uniq, self.counts, q,
                          np.ascontiguousarray(true_u, dtype=np.int64),
                          _fixed(ew_), _fixed(cw_), _fixed(gw_), _fixed(pw_),
                          ew_, cw_, gw_, pw_, blocks, size, inside, best, found, pool_ids)
        return TargetOutcomes(size, inside, best), found, pool_ids


def _query_weights(queries: npt.NDArray[np.integer], delta: npt.NDArray[np.float64],
                   a: npt.NDArray[np.float64], b: npt.NDArray[np.float64]
                   ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Per query week: exact-match weight ``Δ(t) + a[t]`` and cross-week weight ``b[t]`` (0
    where the query's answer is missing). With ``a = 0`` the exact weights are the asymmetric
    attack's gains, bit for bit."""
    q = np.asarray(queries)
    idx = np.where(q >= 0, q, 0)
    ew = np.where(q >= 0, delta[idx] + a[idx], 0.0)
    cw = np.where(q >= 0, b[idx], 0.0)
    return ew, cw


def _features(uniq: npt.NDArray[np.int16], cand: npt.NDArray[np.int64],
              queries: npt.NDArray[np.integer]
              ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
    """0/1 ``exact``, ``cross`` ``[P, c]`` of pairs (distinct trace ``cand[p]``, query
    ``queries[p]``), as ``_pair_score`` reads them."""
    x = uniq[cand].astype(np.int64)
    o = np.asarray(queries, dtype=np.int64)
    present = o >= 0
    exact = (x == o) & present
    same = (x[:, None, :] == o[:, :, None]) & present[:, :, None]  # [P, s, w]
    c = o.shape[1]
    same &= ~np.eye(c, dtype=np.bool_)[None]
    cross = same.any(2)
    return exact.astype(np.float32), cross.astype(np.float32)


# ------------------------------------------------------------------------------- training


def cooccurrence_llr(site1: npt.NDArray[np.integer], site2: npt.NDArray[np.integer],
                     topics: int, pseudo_count: float = 5.0) -> npt.NDArray[np.float32]:
    """``float32[m, m]``: log of how often website 1 shows x while website 2 shows another
    topic o in the same week, *for the same user*, over how often independent users would
    (product of the two sites' answer frequencies), with ``pseudo_count`` added to both
    (shrinks rare pairs to 0). The diagonal (a match) is 0: Theorem 1 scores matches."""
    x = np.asarray(site1, dtype=np.int64)
    o = np.asarray(site2, dtype=np.int64)
    both = (x >= 0) & (o >= 0)
    mis = both & (x != o)
    cnt = np.bincount(x[mis] * topics + o[mis], minlength=topics * topics).reshape(
        topics, topics).astype(np.float64)
    px = np.bincount(x[both], minlength=topics) / max(int(both.sum()), 1)
    po = np.bincount(o[both], minlength=topics) / max(int(both.sum()), 1)
    expected = cnt.sum() * px[:, None] * po[None, :]
    llr = np.log((cnt + pseudo_count) / (expected + pseudo_count))
    np.fill_diagonal(llr, 0.0)
    return llr.astype(np.float32)


def train_attack(
    sets: TopicSets,
    *,
    weeks: int = 4,
    mechanism: Mechanism | None = None,
    config: LearnedAttackConfig | None = None,
    seed: int = 0,
    progress: bool = False,
    device: str = "cpu",
) -> LearnedAttack:
    """Train the learned attack on pairs the mechanism simulates from ``sets``.

    Args:
        sets: the training population (reference, synthetic or real topic sets); at least
            ``weeks + lookback - 1`` weeks and two users.
        weeks: call-weeks r of the traces (the attack applies to r-week traces only).
        mechanism: API parameters (default: ``k`` and taxonomy of ``sets``, ``p = 0.05``).
        config: training options (``LearnedAttackConfig``).
        seed: seed of the API secrets, queries, negatives and batches.
        progress: a progress bar over the epochs (loss and validation risk after the bar).
        device: ``cpu``, ``cuda`` or ``auto`` (the model is small: cpu is as fast).
    """
    progress = flag(progress, "progress")
    # (an array or a dict failed on a missing attribute; seed -1 or 2.5 was NumPy's
    # "expected non-negative integer" or "seed must be integer")
    if not isinstance(sets, TopicSets):
        raise TypeError(f"train_attack takes TopicSets, got {type(sets).__name__}")
    if config is not None and not isinstance(config, LearnedAttackConfig):
        raise TypeError(f"config takes a LearnedAttackConfig, got {type(config).__name__}")
    seed = integer(seed, "seed", at_least=0)
    cfg = config or LearnedAttackConfig()
    dev = resolve_device(device)
    mech = _mechanism(mechanism, sets)  # ("v2" was an AttributeError: no attribute 'k')
    if mech.k != sets.k or mech.tax.size != sets.taxonomy.size:
        raise InputError("the mechanism's k and taxonomy must be the training sets'",
                         field="mechanism")
    if not mech.q_in > mech.q_out:
        raise InputError("the learned attack builds on the asymmetric attack, which needs "
                         "p < 1", field="p")
    if not is_integer(weeks) or weeks < 1:  # (is_integer: a NumPy one too)
        raise InputError(f"weeks must be a positive integer, got "
                         f"{value_shown(weeks)}", field="weeks")
    weeks = int(weeks)
    c = weeks + mech.lookback - 1
    if sets.n_weeks < c:
        raise InputError(f"training on {weeks} call-week(s) with lookback {mech.lookback} "
                         f"needs {c} weeks of profiles; the sets have {sets.n_weeks}",
                         field="weeks")
    n = sets.n_users
    if n < 2:
        raise InputError("training needs at least two users", field="sets")
    torch.manual_seed(seed)
    m = mech.tax.size
    att = _new_attack(m, mech.tax.version, weeks, mech.lookback, cfg, dev)
    opt = torch.optim.Adam(att.scorer.parameters(), lr=cfg.lr)
    bce = nn.BCEWithLogitsLoss()
    n_hard = round(cfg.hard_fraction * cfg.negatives)
    t0 = time.perf_counter()

    def traces(tag: int) -> tuple[npt.NDArray[np.int16], npt.NDArray[np.int16]]:
        api_seed = int(np.random.default_rng([seed, tag, 0x1EA2]).integers(0, 2**62))
        tr = observe(sets.sets, [0, 1], weeks=weeks, seed=api_seed, mechanism=mech,
                     user_ids=sets.user_ids)
        return np.ascontiguousarray(tr[0]), np.ascontiguousarray(tr[1])

    # the validation trial: its own API secret and targets (early stopping, never trained on)
    v1, v2 = traces(0)
    v_rows = np.random.default_rng([seed, 0x7A1]).choice(n, min(cfg.validation, n),
                                                         replace=False).astype(np.int64)
    v_site, v_delta = _Site1(v1, m), theorem1_gains(v1, mech)

    def validate() -> npt.NDArray[np.float64]:
        a, b, g, pw = att.terms()
        ew, cw = _query_weights(v2[v_rows], v_delta, a, b)
        return v_site.run(v2[v_rows], v_rows, ew, cw, g, pw)[0].expected()

    # state 0 is the asymmetric attack itself (every learned term zero)
    e_start = validate()
    history: list[dict[str, Any]] = [{"epoch": -1, "what": "asymmetric attack (start)",
                                      "validation_risk": float(e_start.mean())}]
    best: dict[str, Any] = {"gain": 0.0, "state": None, "epoch": -1}

    def consider(epoch: int, extra: dict[str, Any]) -> None:
        """Keep this state if its validation risk beats the best so far *and* the asymmetric
        start by ``gate`` standard errors of the paired difference (per target): a noisy
        improvement is not taken, so the learned attack stays the asymmetric one unless
        training measurably helps."""
        e = validate()
        d = e - e_start
        gain = float(d.mean())
        se = float(d.std(ddof=1) / np.sqrt(len(d))) if len(d) > 1 else 0.0
        ok = gain > cfg.gate * se and (best["state"] is None or gain > best["gain"])
        history.append({"epoch": epoch, **extra, "validation_risk": float(e.mean()),
                        "validation_gain": gain, "validation_gain_se": se, "kept": ok})
        if ok:
            best.update(gain=gain, epoch=epoch,
                        state={k: v.detach().clone() for k, v in att.scorer.state_dict().items()})

    # epoch 0: the co-occurrence term estimated by counting (a Lemma 10-style plug-in, on
    # simulated pairs of the training population): log of observed over independent pairs
    c1, c2 = traces(cfg.epochs + 1)
    with torch.no_grad():
        att.scorer.pair.copy_(torch.as_tensor(cooccurrence_llr(c1, c2, m,
                                                               cfg.pair_pseudo_count)))
    consider(0, {"what": "co-occurrence counts"})
    n_q = min(cfg.queries_per_epoch, n)
    with task("training the learned attack", cfg.epochs, enabled=progress) as advance:
        for epoch in range(1, cfg.epochs + 1):
            rng = np.random.default_rng([seed, epoch, 0x5EED])
            site1, site2 = traces(epoch)
            s1 = _Site1(site1, m)
            delta = theorem1_gains(site1, mech)
            users = rng.choice(n, n_q, replace=False).astype(np.int64)
            q = site2[users]
            a, b, g, pw = att.terms()
            ew, cw = _query_weights(q, delta, a, b)
            # hard negatives: the current model's best wrong candidates of each query, the
            # confusions that decide the argmax (Carey et al.'s 1 : 10 pairs, made hard)
            _, _, pool = s1.run(q, users, ew, cw, g, pw, pool=cfg.hard_pool if n_hard else 0)
            n_u = s1.uniq.shape[0]
            true_u = s1.inverse[users]
            neg = rng.integers(0, n_u, size=(n_q, cfg.negatives))
            if n_hard:
                valid = (pool >= 0).sum(1)
                pick = (rng.random((n_q, n_hard)) * np.maximum(valid, 1)[:, None]).astype(
                    np.int64)
                hard = np.take_along_axis(pool, np.minimum(pick, max(cfg.hard_pool - 1, 0)),
                                          1) if pool.shape[1] else pick
                neg[:, :n_hard] = np.where(valid[:, None] > 0, hard, neg[:, :n_hard])
            own = neg == true_u[:, None]  # a negative is another trace
            neg[own] = (neg[own] + 1 + rng.integers(0, max(n_u - 1, 1), int(own.sum()))) % n_u
            cand = np.concatenate([true_u[:, None], neg], 1)  # [n_q, 1 + negatives]
            labels_np = np.zeros(cand.shape, dtype=np.float32)
            labels_np[:, 0] = 1.0
            qrep = np.repeat(q, cand.shape[1], 0)
            exact, cross = _features(s1.uniq, cand.reshape(-1), qrep)
            d_t = torch.as_tensor(delta, dtype=torch.float32, device=dev)
            tt = torch.from_numpy(qrep.astype(np.int64)).to(dev)
            xt = torch.from_numpy(s1.uniq[cand.reshape(-1)].astype(np.int64)).to(dev)
            ex_t, cr_t = torch.from_numpy(exact).to(dev), torch.from_numpy(cross).to(dev)
            lab = torch.from_numpy(labels_np.reshape(-1)).to(dev)
            per = cand.shape[1]
            total = 0.0
            att.scorer.train()
            for lo in range(0, n_q, cfg.batch_users):
                sl = slice(lo * per, min(n_q, lo + cfg.batch_users) * per)
                logits = att.scorer(d_t, tt[sl], xt[sl], ex_t[sl], cr_t[sl])
                loss = bce(logits, lab[sl])
                if cfg.listwise > 0:
                    # softmax over each query's 1 + negatives pairs (the true one first):
                    # how often the true user outranks the query's top confusions
                    grid = logits.reshape(-1, per)
                    loss = loss + cfg.listwise * nn.functional.cross_entropy(
                        grid, torch.zeros(grid.shape[0], dtype=torch.long, device=dev))
                sc = att.scorer
                reg = (sc.exact.square().mean() + sc.cross.square().mean()
                       + sc.count.square().mean())
                opt.zero_grad()
                (loss + cfg.l2 * reg).backward()
                opt.step()
                total += float(loss.detach()) * (sl.stop - sl.start)
            att.scorer.eval()
            consider(epoch, {"bce": total / (n_q * per)})
            advance(1, info=f"epoch {epoch} bce {total / (n_q * per):.4f} "
                            f"val {100 * history[-1]['validation_risk']:.2f}%")
    if best["state"] is None:  # nothing beat the start: the asymmetric attack itself
        att.scorer = MatchScorer(m, c).to(dev)
    else:
        att.scorer.load_state_dict(best["state"])
    att.scorer.eval()
    att.metadata = {"users": n, "epochs": cfg.epochs, "seconds": time.perf_counter() - t0,
                    "seed": seed, "device": dev, "p": mech.p, "k": mech.k,
                    "negatives_hard": n_hard, "history": history, "best_epoch": best["epoch"],
                    "validation_risk_start": float(e_start.mean()),
                    "validation_gain": best["gain"],
                    "source": sets.metadata.get("source", sets.metadata.get("generator"))}
    return att


# ------------------------------------------------------------------------------ model files


def _check_learned(attack: object) -> None:
    """A ``TypeError`` unless ``attack`` is a ``LearnedAttack``: anything else failed on a
    missing attribute (``save_attack(d, None)``: "AttributeError: 'NoneType' object has no
    attribute 'scorer'"), or only once an attack's trials had begun."""
    if not isinstance(attack, LearnedAttack):
        raise TypeError(f"attack takes a LearnedAttack (train_attack or load_attack), got "
                        f"{type(attack).__name__}")


def save_attack(directory: str | Path, attack: LearnedAttack) -> Path:
    """Write ``model.safetensors`` (the learned terms, float32, named ``scorer.*``) and
    ``model.json`` (format, version, taxonomy, weeks, lookback, options, training record) into
    ``directory``, both or neither (``topicslab._atomic.atomic_dir``)."""
    from safetensors.torch import save_file

    from topicslab._atomic import atomic_dir, atomic_path, write_text_atomic

    _check_learned(attack)
    state = {f"scorer.{k}": v.detach().cpu().float().contiguous()
             for k, v in attack.scorer.state_dict().items()}
    meta = {"format": FORMAT, "format_version": FORMAT_VERSION, "taxonomy": attack.taxonomy,
            "topics": attack.topics, "weeks": attack.weeks, "lookback": attack.lookback,
            "config": asdict(attack.config), "training": attack.metadata}
    from topicslab._paths import refuse_mixing

    refuse_mixing(directory, "attack", "directory")
    with atomic_dir(directory, owned=(WEIGHTS, META)) as tmp:
        with atomic_path(tmp / WEIGHTS) as w:
            save_file(state, str(w), metadata={"format": FORMAT})
        write_text_atomic(tmp / META, dumps(meta, indent=2) + "\n")
    return Path(directory)


def _positive(meta: dict[str, Any], name: str, file: str) -> int:
    # FileFieldError: model.json's 'weeks' is not the command's --weeks
    v = meta.get(name)
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise FileFieldError(f"must be a positive integer, got "
                             f"{value_shown(v)}", file=file, field=name)
    return v


def load_attack(directory: str | Path, *, device: str = "cpu") -> LearnedAttack:
    """Read a directory written by ``save_attack``; every fault is one ``InputError`` naming
    the file (and field)."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    from topicslab._paths import other_output
    from topicslab.io._common import missing
    from topicslab.taxonomy import VERSIONS, resolve

    d = Path(directory)
    if not d.exists():  # (was "not a directory")
        raise InputError(missing(str(d)), file=str(d))
    if not d.is_dir():
        raise InputError("not a directory (expected a learned-attack model directory)",
                         file=str(d))
    if (other := other_output(d, "attack")) is not None:  # (was "d/model.json: file missing")
        raise InputError(other, file=str(d))
    meta_file, weights_file = d / META, d / WEIGHTS
    for f in (meta_file, weights_file):
        if not f.is_file():
            raise InputError("file missing (not a learned-attack model directory?)",
                             file=str(f))
    mf = str(meta_file)
    try:
        meta = loads(read_document(meta_file, "model.json"), parse_int=bounded_int,
                          object_pairs_hook=unique_keys)
    except DuplicateKeyError as exc:  # a second "k" replaced the first silently
        raise FileFieldError(f"{exc.key!r} is given twice in one object; restore the file (or "
                             "retrain with topicslab attack-train)", file=mf,
                             field=exc.key) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise InputError(f"invalid JSON: {' '.join(str(exc).split())}", file=mf) from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise FileFieldError(f"not a {FORMAT} file", file=mf, field="format")
    if type(meta.get("format_version")) is not int or meta["format_version"] != FORMAT_VERSION:
        raise FileFieldError(f"unsupported format_version {meta.get('format_version')!r} (this "
                         f"topicslab reads version {FORMAT_VERSION}: retrain with topicslab "
                         f"attack-train)", file=mf, field="format_version")
    version = meta.get("taxonomy")
    if version not in VERSIONS:
        raise FileFieldError(f"unknown taxonomy {version!r}", file=mf, field="taxonomy")
    topics = _positive(meta, "topics", mf)
    if topics != resolve(version).size:
        raise FileFieldError(f"taxonomy {version} has {resolve(version).size} topics, not "
                         f"{topics}", file=mf, field="topics")
    weeks = _positive(meta, "weeks", mf)
    lookback = _positive(meta, "lookback", mf)
    try:  # what attack-train takes (a larger count sized the scorer past torch's)
        check_call_weeks(weeks, lookback)
    except InputError as exc:
        raise FileFieldError(exc.message, file=mf, field=exc.field) from None
    raw = meta.get("config")
    if not isinstance(raw, dict):
        raise FileFieldError("missing or not an object", file=mf, field="config")
    known = set(LearnedAttackConfig.__dataclass_fields__)
    try:
        cfg = LearnedAttackConfig(**{k: v for k, v in raw.items() if k in known})
    except InputError as exc:
        raise FileFieldError(exc.message, file=mf, field=f"config.{exc.field}") from None
    except TypeError as exc:
        raise FileFieldError(str(exc), file=mf, field="config") from None
    dev = resolve_device(device)
    att = _new_attack(topics, version, weeks, lookback, cfg, "cpu")
    try:
        # safetensors reports every failure to open as "No such file or directory" (a file
        # this user may not read too): open it first, for the real reason
        with open(weights_file, "rb"):
            pass
        state = load_file(str(weights_file))
    except OSError as exc:
        raise InputError(f"cannot read safetensors ({exc.strerror or exc})",
                         file=str(weights_file)) from None
    except (SafetensorError, ValueError) as exc:
        raise InputError(f"cannot read safetensors ({' '.join(str(exc).split())})",
                         file=str(weights_file)) from None
    expected = att.scorer.state_dict()
    for key, ref in expected.items():
        name = "scorer." + key
        t = state.get(name)
        if t is None:
            raise FileFieldError(f"no tensor named {name!r}", file=str(weights_file), field=name)
        if tuple(t.shape) != tuple(ref.shape):
            raise FileFieldError(f"shape {tuple(t.shape)}, model.json implies {tuple(ref.shape)}",
                             file=str(weights_file), field=name)
        if not torch.isfinite(t).all():
            raise FileFieldError("holds non-finite values", file=str(weights_file), field=name)
        if t.numel() and float(t.abs().max()) > MAX_TERM / 2:  # room for Δ in the sum
            raise FileFieldError(f"holds a value beyond ±{MAX_TERM / 2:g}, outside what the "
                                 "attack's fixed-point scores hold", file=str(weights_file),
                                 field=name)
    att.scorer.load_state_dict({k: state["scorer." + k].to(v.dtype)
                                for k, v in expected.items()})
    att.scorer.to(dev).eval()
    att.device = dev
    training = meta.get("training")
    att.metadata = training if isinstance(training, dict) else {}
    p = att.metadata.get("p")
    if p is not None and (isinstance(p, bool) or not isinstance(p, int | float)
                          or not 0 <= p <= 1):  # (NaN too) reid's note compares it
        raise FileFieldError(f"must be a probability in [0, 1], got {p!r}", file=mf,
                             field="training.p")
    return att


# -------------------------------------------------------------------------------- inference


class LearnedTraceAttack(TraceAttack):
    """A trained ``LearnedAttack`` as a whole-trace attack of the protocol (``measure_risk``,
    ``risk_curve`` and ``measure_risk_traces`` run it beside the match-set attacks).

    ``fit`` prepares website 1 (its distinct traces) and Theorem 1's gains Δ estimated from
    it as the asymmetric attack does; ``outcomes`` scans it once per query, exact over every
    website-1 user. Each call records the candidate recall (the share of queries whose true
    user shares a topic with the query) and the seconds of its stages; ``describe`` reports
    them (``candidate_recall``: one entry per call, i.e. per trial).
    """

    name = "learned"

    def __init__(self, attack: LearnedAttack) -> None:
        _check_learned(attack)
        self.attack = attack
        self.recall: list[float] = []
        self.stages: list[dict[str, float]] = []
        self._site: _Site1 | None = None
        self._delta: npt.NDArray[np.float64] | None = None
        self._index_seconds = 0.0

    def fit(self, site1: npt.NDArray[np.integer], mechanism: Mechanism | None = None) -> None:
        att = self.attack
        mech = mechanism or Mechanism(taxonomy=att.taxonomy, lookback=att.lookback)
        if mech.tax.size != att.topics:
            # the data's taxonomy, not the lookback, is what differs: name the model
            raise InputError(f"the learned attack was trained on taxonomy {att.taxonomy}, "
                             f"the traces are of taxonomy {mech.tax.version}: train one on "
                             f"sets of {mech.tax.version} (topicslab attack-train)",
                             field="attack_model")
        if mech.lookback != att.lookback:
            raise InputError(f"the learned attack was trained with lookback {att.lookback}, "
                             f"not {mech.lookback}", field="lookback")
        s1 = np.asarray(site1)
        if s1.ndim == 2 and s1.shape[1] != att.trace_weeks:
            raise InputError(f"the learned attack was trained on r = {att.weeks} call-weeks, "
                             f"not {s1.shape[1] - att.lookback + 1}", field="weeks")
        att._check(s1, "website 1's traces")
        t0 = time.perf_counter()
        self._site = _Site1(s1, att.topics)
        self._delta = theorem1_gains(s1, mech)
        self._index_seconds = time.perf_counter() - t0

    def outcomes(self, queries: npt.NDArray[np.integer],
                 true_rows: npt.NDArray[np.int64]) -> TargetOutcomes:
        out, _ = self.outcomes_and_candidates(queries, true_rows)
        return out

    def outcomes_and_candidates(self, queries: npt.NDArray[np.integer],
                                true_rows: npt.NDArray[np.int64]
                                ) -> tuple[TargetOutcomes, npt.NDArray[np.bool_]]:
        """``outcomes`` and ``bool[Q]``: whether each query's true user shares a topic with
        the query (a true row of -1 counts as not found)."""
        if self._site is None or self._delta is None:
            raise RuntimeError("fit the attack on website 1 first")
        q = np.asarray(queries)
        self.attack._check(q, "queries")
        rows = np.asarray(true_rows, dtype=np.int64)
        if rows.shape != (q.shape[0],):
            raise ValueError("one true row per query")
        t0 = time.perf_counter()
        a, b, g, pw = self.attack.terms()
        ew, cw = _query_weights(q, self._delta, a, b)
        out, found, _ = self._site.run(q, rows, ew, cw, g, pw)
        self.recall.append(float(found.mean()) if len(found) else 0.0)
        self.stages.append({"index": self._index_seconds, "score": time.perf_counter() - t0})
        return out, found

    def describe(self) -> dict[str, Any]:
        return {**self.attack.describe(), "candidate_recall": list(self.recall),
                "candidate_recall_mean": float(np.mean(self.recall)) if self.recall else None,
                "stages": list(self.stages)}


def attack_outcomes(
    attack: LearnedAttack,
    site1: npt.NDArray[np.integer],
    queries: npt.NDArray[np.integer],
    true_rows: npt.NDArray[np.int64],
    *,
    mechanism: Mechanism | None = None,
    timings: dict[str, float] | None = None,
) -> tuple[TargetOutcomes, npt.NDArray[np.bool_]]:
    """The learned attack on each query, exact over every website-1 user (one
    ``LearnedTraceAttack`` fitted on ``site1``).

    ``mechanism`` (default: ``p = 0.05``, the model's taxonomy and lookback, k = 5) gives
    Theorem 1's gains, estimated from ``site1`` as the asymmetric attack does. Returns the
    outcomes (argmax set: every website-1 user with the best score; ``best_score`` its score)
    and ``candidate``: ``bool[Q]``, whether each query's true user shares a topic with the
    query (the candidate recall is its mean; a true row of -1 counts as not found).
    ``timings`` (optional) receives the seconds of each stage (``index``, ``score``).
    """
    trace_attack = LearnedTraceAttack(attack)
    trace_attack.fit(site1, mechanism)
    out, found = trace_attack.outcomes_and_candidates(queries, true_rows)
    if timings is not None:
        timings.update(trace_attack.stages[-1])
    return out, found


def measure_risk_learned(
    sets: TopicSets,
    attack: LearnedAttack,
    *,
    weeks: int | None = None,
    compare: Sequence[str] = ("hamming", "asymmetric"),
    targets: int | str = 10240,
    trials: int = 10,
    seed: int = 0,
    mechanism: Mechanism | None = None,
    progress: bool = True,
) -> Any:
    """``measure_risk`` with the learned attack (a ``LearnedTraceAttack``) beside the
    hand-made ``compare`` attacks, in the same trials: the hand-made attacks' figures are
    ``measure_risk``'s. The learned attack's description gains ``candidate_recall`` (per
    trial: the share of targets whose true user shares a topic with the query) and the
    seconds of its stages. Returns a ``RiskResult``.
    """
    progress = flag(progress, "progress")
    from topicslab.attacks.protocol import ReidProtocol, measure_risk

    _check_learned(attack)
    if isinstance(compare, str):  # one name, as measure_risk's attacks ("hamming" was h, a, ...)
        compare = (compare,)
    r = attack.weeks if weeks is None else weeks
    if r != attack.weeks:
        raise InputError(f"the learned attack was trained on r = {attack.weeks} call-weeks, "
                         f"not {r}", field="weeks")
    if "learned" in compare:
        raise InputError("compare lists the hand-made attacks only", field="attack")
    return measure_risk(sets, attacks=[*compare, LearnedTraceAttack(attack)], weeks=r,
                        protocol=ReidProtocol(targets=targets, trials=trials), seed=seed,
                        mechanism=mechanism, progress=progress)


__all__ = [
    "FORMAT_VERSION",
    "LearnedAttack",
    "LearnedAttackConfig",
    "LearnedTraceAttack",
    "MatchScorer",
    "attack_outcomes",
    "cooccurrence_llr",
    "load_attack",
    "measure_risk_learned",
    "resolve_device",
    "save_attack",
    "theorem1_gains",
    "train_attack",
]
