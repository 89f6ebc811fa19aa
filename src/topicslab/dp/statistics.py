"""``compute_statistics``: topic sets -> DP statistics + privacy ledger (Dick et al. §4.1-4.2).

Pipeline (paper §4.2): contribution bounding (``bounding``) -> exact pair counts (``counts``) ->
calibrated Gaussian mechanisms (``mechanism``) with discrete Gaussian noise (``noise``) ->
post-processing to probabilities (``postprocess``) -> composed accounting (``accounting``) and
ledger (``ledger``). Only the noisy counts leave this function's private part: everything from
post-processing on sees no user data.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

import topicslab
from topicslab._checks import choice, integer
from topicslab.datamodel import TopicSets
from topicslab.dp import accounting as acc
from topicslab.dp.bounding import BoundingReport, bound_contributions
from topicslab.dp.counts import PairCounts, overlap_counts, pair_counts
from topicslab.dp.ledger import PrivacyLedger
from topicslab.dp.mechanism import plan_queries
from topicslab.dp.noise import RandomWords, discrete_gaussian, sampled_sigma
from topicslab.dp.params import (
    BOUND_MODES,
    LN3,
    Accounting,
    BoundMode,
    ContributionBound,
    PrivacyBudget,
    budget_of,
    contribution_of,
)
from topicslab.dp.postprocess import (
    check_overlap,
    overlap_probabilities,
    term_sigmas,
    to_probabilities,
)
from topicslab.errors import InputError
from topicslab.io._common import check_unique_users
from topicslab.taxonomy import Taxonomy, resolve

__all__ = ["LN3", "DPStatistics", "compute_statistics", "fingerprint", "release_counts"]

def check_seed(seed: object) -> int | None:
    """``seed`` (``None``: the OS CSPRNG) as an integer in 0..2^63-1, the CLI's bound, which
    leaves room for the overlap weeks' offset. ``seed="0"`` was taken as it came, 1.5 was
    truncated to 1, and past 64 bits the padding's key was masked (2**64 padded as seed 0)."""
    return None if seed is None else integer(seed, "seed", at_least=0, at_most=2**63 - 1)


#: offset of the overlap weeks' padding seed from the release's (``compute_statistics``)
_OVERLAP_SEED = 0x5EED_0F


@dataclass
class DPStatistics:
    """DP statistics of topic sets (docs/design.md §Data model).

    Attributes:
        q_single: ``float64[m]`` Pr(o ∈ S_J).
        q_within: ``float64[m, m]`` Pr({o1, o2} ⊆ S_J), symmetric, zero diagonal.
        q_across: ``float64[m, m]`` Pr(o1 ∈ S_{J-1} ∧ o2 ∈ S_J), ordered.
        n_estimate: estimated user count (NaN when read from a release that does not carry it).
        taxonomy: taxonomy of the dense indices.
        k: topics per weekly set.
        ledger: the privacy ledger (``None`` for statistics read without one).
        q_overlap: ``float64[L, k+1]`` Pr(|S_J ∩ S_{J+ℓ}| = j) for ℓ = 1..L, the persistence
            statistic (``ContributionBound.overlap_lags``; each row sums to 1); ``None`` for
            releases without it (the paper's).
    """

    q_single: npt.NDArray[np.float64]
    q_within: npt.NDArray[np.float64]
    q_across: npt.NDArray[np.float64]
    n_estimate: float
    taxonomy: Taxonomy
    k: int
    ledger: PrivacyLedger | None = None
    q_overlap: npt.NDArray[np.float64] | None = None

    def __post_init__(self) -> None:
        # a table of another shape was saved as it came, and the release's own reader then
        # refused it
        if self.q_overlap is not None:
            self.q_overlap = check_overlap(self.q_overlap, int(self.k))

    def noise_sigmas(self) -> dict[str, float] | None:
        """Standard deviation of the DP noise on one term of each statistic (``single``,
        ``within``, ``across``), from the ledger's σ and the estimated n; ``None`` without
        a ledger or n (statistics read from elsewhere). See ``postprocess.term_sigmas``."""
        n = self.n_estimate
        if self.ledger is not None and not math.isfinite(n):
            n = float(self.ledger.extra.get("n_estimate", math.nan))
        if self.ledger is None or not (math.isfinite(n) and n > 0):
            return None
        mech = self.ledger.mechanisms
        within = [float(q.get("sigma_sampled", q["sigma"])) for q in mech
                  if str(q["name"]).startswith("within")]
        across = [float(q.get("sigma_sampled", q["sigma"])) for q in mech
                  if str(q["name"]).startswith("across")]
        out = term_sigmas(within, across, n, self.k, self.taxonomy.size)
        overlap = [float(q.get("sigma_sampled", q["sigma"])) for q in mech
                   if q["name"] == "overlap"]
        if overlap:
            out["overlap"] = overlap[0] / n
        return out


def fingerprint(bounded: npt.NDArray[np.int16], user_ids: npt.NDArray[np.int64]) -> str:
    """sha256 over the bounded arrays (shape, dtype, topics, user ids)."""
    h = hashlib.sha256()
    h.update(repr((bounded.shape, str(bounded.dtype))).encode())
    # the arrays' own buffers (``tobytes`` copied 0.8 GB at the paper's scale): same bytes
    h.update(np.ascontiguousarray(bounded))  # type: ignore[arg-type]  # (a buffer)
    h.update(np.ascontiguousarray(user_ids, dtype=np.int64))  # type: ignore[arg-type]
    return "sha256:" + h.hexdigest()


def _claim(target_eps: float, delta: float, accounting: str,
           composition: dict[str, Any]) -> dict[str, Any]:
    """What the ledger promises: only a guarantee proven for the noise actually added.

    The discrete Gaussian noise is ρ-zCDP with the composed ρ (Canonne-Kamath-Steinke 2020);
    its (ε, δ) conversion by the library is a proven bound. If the requested budget is not
    covered by it (possible in "paper" mode, whose per-query calibration is for continuous
    Gaussians, at unusual budgets), the claim is the proven ε, not the target, with a warning.
    """
    zc = composition["zcdp"]["epsilon"]
    rho = composition["zcdp"]["rho"]
    if zc <= target_eps * (1 + 1e-9):
        return {"epsilon": target_eps, "delta": delta, "proven": True,
                "basis": f"proven for the discrete Gaussian noise actually added: the release "
                         f"is rho={rho:.6g}-zCDP (Canonne-Kamath-Steinke 2020), which implies "
                         f"({zc:.6g}, {delta:g})-DP <= the target ({accounting} accounting)",
                "rigorous_discrete_epsilon": zc}
    return {"epsilon": zc, "delta": delta, "proven": True,
            "warning": f"the target epsilon={target_eps:.6g} holds only for continuous Gaussian"
                       f" noise ({accounting} accounting); the proven guarantee of the discrete "
                       f"noise actually added is epsilon={zc:.6g}; use --accounting tight to "
                       "meet the target",
            "basis": f"rho={rho:.6g}-zCDP of the discrete Gaussian noise "
                     "(Canonne-Kamath-Steinke 2020), converted by dp_accounting",
            "rigorous_discrete_epsilon": zc}


def compute_statistics(
    data: TopicSets,
    *,
    weeks: Sequence[int] | None = None,
    k: int | None = None,
    epsilon: float | None = None,
    delta: float | None = None,
    split: Sequence[float] | None = None,
    accounting: Accounting | None = None,
    bound: BoundMode | None = None,
    seed: int | None = None,
    budget: PrivacyBudget | None = None,
    contribution: ContributionBound | None = None,
    overlap_lags: int | None = None,
) -> DPStatistics:
    """DP q_single / q_within / q_across of ``data`` with an exact privacy ledger.

    Args:
        data: topic-set sequences (dense indices, ``-1`` empty).
        budget: the total (ε, δ), accounting and split (``topicslab.dp.PrivacyBudget``);
            or the keywords (each ``None``: its default):
        epsilon, delta: total budget (paper: ln 3, 1e-15), add/remove-one-user neighbours.
        split: budget share per query: within-week queries (one per week) then across-week
            queries (one per consecutive pair); default half/half (paper: 25/25/50).
        accounting: ``"paper"`` (basic composition, the default) or ``"tight"`` (one zCDP
            budget for the whole release, proven for the discrete noise; same split; less
            noise).
        contribution: ``k``, ``bound`` and ``weeks`` (``topicslab.dp.ContributionBound``); or
            the keywords:
        weeks: weeks to use (default: the paper's first two, ``(0, 1)``; one week if the data
            has only one).
        k: topics per week after contribution bounding (paper: 5).
        bound: ``"reject"`` (default) or ``"truncate"`` weeks with more than ``k`` topics.
        overlap_lags: L > 0 adds the persistence statistic over weeks w0 + 1..w0 + L
            (``ContributionBound``; default 0: the paper's release).
        seed: reproducible padding and noise; the noise is then NOT cryptographically secure
            (recorded in the ledger). ``None``: OS CSPRNG.
    """
    if not isinstance(data, TopicSets):  # (an array failed on a missing attribute)
        raise TypeError(f"compute_statistics takes TopicSets, got {type(data).__name__}")
    seed = check_seed(seed)
    if data.n_users == 0:  # a release of no one is noise only
        raise InputError("the topic sets hold no users", field="data")
    budget = budget_of(budget, epsilon=epsilon, delta=delta, split=split,
                       accounting=accounting)
    contribution = contribution_of(contribution, k=k, bound=bound, weeks=weeks,
                                   overlap_lags=overlap_lags)
    w_sel = contribution.select_weeks(data.n_weeks)
    w_over = contribution.overlap_weeks(data.n_weeks)
    # a split of the wrong length fails before the private part
    budget.shares(len(w_sel), overlap=bool(w_over))
    # One row per user is what makes the sensitivities true under add/remove-one-user: a user
    # listed twice would contribute twice.
    check_unique_users(np.asarray(data.user_ids, dtype=np.int64), file="(input)")
    # ---- private part: bounding and exact counts ------------------------------------
    # (every week in order: the sets themselves, not a copy of a 10M-user table)
    chosen = data.sets if w_sel == list(range(data.n_weeks)) else data.sets[:, w_sel, :]
    bounded, report = bound_contributions(chosen, data.taxonomy.size,
                                          contribution=contribution, seed=seed,
                                          user_ids=data.user_ids)
    counts = pair_counts(bounded, data.taxonomy.size)
    if w_over:
        # the overlap weeks are bounded apart (padding keyed by position among the bounded
        # weeks: the released weeks keep their own draws), from a seed of their own
        extra = [w for w in w_over if w not in w_sel]
        later = bound_contributions(data.sets[:, extra, :], data.taxonomy.size,
                                    contribution=contribution,
                                    seed=None if seed is None else seed + _OVERLAP_SEED,
                                    user_ids=data.user_ids)[0] if extra else bounded[:, :0]
        both = np.concatenate([bounded, later], axis=1)
        cols = [0] + [(w_sel + extra).index(w) for w in w_over]
        counts = dataclasses.replace(counts, overlap=overlap_counts(both[:, cols]))
        del both, later
    fp = fingerprint(bounded, data.user_ids)
    del bounded
    return release_counts(counts, data.taxonomy, k=contribution.k, weeks=w_sel, budget=budget,
                          bound=contribution.bound, seed=seed, bounding=report,
                          input_fingerprint=fp, overlap_weeks=w_over)


def release_counts(
    counts: PairCounts,
    taxonomy: Taxonomy,
    *,
    k: int,
    weeks: Sequence[int],
    epsilon: float | None = None,
    delta: float | None = None,
    split: Sequence[float] | None = None,
    accounting: Accounting | None = None,
    bound: BoundMode = "reject",
    seed: int | None = None,
    bounding: BoundingReport | None = None,
    input_fingerprint: str = "",
    engine: str = "local",
    budget: PrivacyBudget | None = None,
    overlap_weeks: Sequence[int] = (),
) -> DPStatistics:
    """The Gaussian mechanisms, post-processing and ledger, from exact bounded counts.

    Every backend (in-memory, out-of-core, Spark) computes ``counts`` from data bounded by
    ``bound_contributions`` and calls this one function, so the noise, the accounting and the
    ledger are the same code whatever computed the counts.

    Args:
        counts: exact pair counts of bounded data (``within[w]`` upper triangles,
            ``across[w]`` for weeks w, w+1 of ``weeks``).
        taxonomy: taxonomy of the dense indices (``counts.m`` topics).
        k: topics per user-week after bounding (sets the sensitivities).
        weeks: the data's week numbers the counts refer to (ledger labels).
        bounding: what bounding changed (audit part of the ledger).
        input_fingerprint: identifies the private input (audit part of the ledger).
        engine: which backend computed the counts (ledger).
        overlap_weeks: the weeks w0 + 1..w0 + L of ``counts.overlap`` (ledger labels); empty
            when the counts have no persistence statistic.
        Other args: as ``compute_statistics`` (``k`` and ``bound`` are those the counts were
        bounded with: recorded, not checked again).
    """
    # (a bound of "xyz" was recorded in a ledger load_statistics refuses, a version text and
    # counts of another type failed on a missing attribute)
    if not isinstance(counts, PairCounts):
        raise TypeError(f"release_counts takes PairCounts (pair_counts), got "
                        f"{type(counts).__name__}")
    taxonomy = resolve(taxonomy)
    choice(bound, "bound", BOUND_MODES)
    if not isinstance(engine, str) or not isinstance(input_fingerprint, str):
        raise TypeError("engine and input_fingerprint are text (recorded in the ledger)")
    budget = budget_of(budget, epsilon=epsilon, delta=delta, split=split,
                       accounting=accounting)
    epsilon, delta, accounting = budget.epsilon, budget.delta, budget.accounting
    m = taxonomy.size
    seed = check_seed(seed)  # (seed=1.5 was the noise of seed 1)
    # (a fraction was truncated to a week, a week given twice labelled two releases alike)
    w_sel = [integer(w, "weeks", at_least=0) for w in weeks]
    if len(set(w_sel)) != len(w_sel):
        raise InputError(f"weeks {w_sel} name a week twice; give each week once", field="weeks")
    if counts.m != m or counts.n_weeks != len(w_sel) or counts.across.shape[0] != len(w_sel) - 1:
        raise ValueError(f"counts of shape within {counts.within.shape}, across "
                         f"{counts.across.shape} do not match {len(w_sel)} weeks of {m} topics")
    w_over = [int(w) for w in overlap_weeks]
    lags = 0 if counts.overlap is None else int(counts.overlap.shape[0])
    if lags != len(w_over) or (counts.overlap is not None
                               and counts.overlap.shape != (lags, k + 1)):
        shape = None if counts.overlap is None else counts.overlap.shape
        raise ValueError(f"overlap counts {shape} do not match {len(w_over)} overlap weeks and "
                         f"k = {k}")
    queries = plan_queries(len(w_sel), k, m, budget=budget, overlap_lags=lags)
    # ---- private part: noise on the exact counts --------------------------------------
    rw = RandomWords(seed)
    iu = np.triu_indices(m, 1)
    noisy_within, noisy_across = [], []
    for w in range(len(w_sel)):
        q = queries[w]
        f = np.zeros((m, m), dtype=np.float64)
        f[iu] = counts.within[w][iu] + discrete_gaussian(q.dims, q.sigma, rw)
        noisy_within.append(f)
    for i in range(len(w_sel) - 1):
        q = queries[len(w_sel) + i]
        noise = discrete_gaussian(q.dims, q.sigma, rw).reshape(m, m)
        noisy_across.append((counts.across[i] + noise).astype(np.float64))
    noisy_overlap = None
    if counts.overlap is not None:
        q = queries[-1]
        noisy_overlap = (counts.overlap + discrete_gaussian(q.dims, q.sigma, rw)
                         .reshape(counts.overlap.shape)).astype(np.float64)
    del counts
    # ---- post-processing: only noisy counts from here on -------------------------------
    q_single, q_within, q_across, n_hat = to_probabilities(noisy_within, noisy_across,
                                                           queries[:2 * len(w_sel) - 1], k)
    q_overlap = None if noisy_overlap is None else overlap_probabilities(noisy_overlap)
    sampled = [sampled_sigma(q.sigma) for q in queries]
    composition = acc.compose(queries, delta, sampled)
    mechs = []
    week_of = w_sel + [w for w in w_over if w not in w_sel]
    for q, s in zip(queries, sampled, strict=True):
        d = q.to_dict()
        d["weeks"] = ([w_sel[0], *w_over] if q.name == "overlap"
                      else [week_of[j] for j in q.weeks])
        d["sigma_sampled"] = s
        mechs.append(d)
    noise_vs_paper = None
    if accounting == "tight":
        paper = plan_queries(len(w_sel), k, m,
                             budget=dataclasses.replace(budget, accounting="paper"),
                             overlap_lags=lags)
        noise_vs_paper = [{"name": q.name, "sigma_paper": p.sigma, "sigma": q.sigma,
                           "sigma_ratio": q.sigma / p.sigma,
                           "variance_saved": 1 - (q.sigma / p.sigma) ** 2}
                          for q, p in zip(queries, paper, strict=True)]
    ledger = PrivacyLedger(
        target={"epsilon": epsilon, "delta": delta},
        accounting=accounting,
        split=[q.share for q in queries],
        neighbouring_relation=acc.NEIGHBOURING,
        contribution_bounding={
            "k": k, "weeks": w_sel, "over_long": bound,
            **({"overlap_weeks": w_over} if w_over else {}),
            "rule": "exactly k distinct topics per user and week: duplicates removed, short "
                    "and missing weeks padded with distinct uniform random topics (as the "
                    "Topics API pads), over-long weeks rejected or truncated to the k lowest "
                    "ids",
        },
        mechanisms=mechs,
        composition=composition,
        claimed=_claim(epsilon, delta, accounting, composition),
        noise={
            "distribution": "discrete Gaussian N_Z(0, sigma_sampled^2) on integer counts",
            "sampler": "Canonne-Kamath-Steinke 2020 Alg. 1-3, exact integer arithmetic, "
                       "sigma^2 rounded up to a dyadic rational",
            "source": "os.urandom (OS CSPRNG)" if seed is None
                      else f"PCG64 seeded with {seed}",
            "cryptographically_secure": seed is None,
            "seed": seed,
        },
        post_processing="n estimated from the noisy totals (inverse-variance weighted "
                        "sum f_ww / C(k,2) and sum f_w,w+1 / k^2); weeks averaged; "
                        "normalised by n; clipped to [0, 1]; q_single = row sums of the "
                        "unclipped q_within / (k - 1), then clipped"
                        + ("; q_overlap: each lag's noisy histogram clipped at 0 and "
                           "normalised to sum 1" if w_over else ""),
        package={"name": "topicslab", "version": topicslab.__version__},
        created=_dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        noise_vs_paper=noise_vs_paper,
        # public: computed from the noisy counts only; lets readers of the release recover
        # the noise scale of each statistic (σ / n̂)
        extra={"n_estimate": float(n_hat)},
        audit={"input_fingerprint": input_fingerprint,
               "engine": engine,
               "bounding": ({k2: int(v) for k2, v in vars(bounding).items()}
                            if bounding is not None else None),
               "note": "derived from the private input; NOT differentially private; "
                       "drop before publishing"},
    )
    return DPStatistics(q_single, q_within, q_across, n_hat, taxonomy, k, ledger, q_overlap)
