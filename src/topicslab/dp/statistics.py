"""``compute_statistics``: topic sets -> DP statistics + privacy ledger (spec 01 §2-§3).

Pipeline (paper §4.2): contribution bounding (``bounding``) -> exact pair counts (``counts``) ->
calibrated Gaussian mechanisms (``mechanism``) with discrete Gaussian noise (``noise``) ->
post-processing to probabilities (``postprocess``) -> composed accounting (``accounting``) and
ledger (``ledger``). Only the noisy counts leave this function's private part: everything from
post-processing on sees no user data.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

import topicslab
from topicslab.datamodel import TopicSets
from topicslab.dp import accounting as acc
from topicslab.dp.bounding import BoundMode, bound_contributions
from topicslab.dp.counts import pair_counts
from topicslab.dp.ledger import PrivacyLedger
from topicslab.dp.mechanism import Accounting, plan_queries
from topicslab.dp.noise import RandomWords, discrete_gaussian, sampled_sigma
from topicslab.dp.postprocess import to_probabilities
from topicslab.taxonomy import Taxonomy

LN3 = math.log(3)


@dataclass
class DPStatistics:
    """DP statistics of topic sets (ARCHITECTURE.md data model).

    Attributes:
        q_single: ``float64[m]`` Pr(o ∈ S_J).
        q_within: ``float64[m, m]`` Pr({o1, o2} ⊆ S_J), symmetric, zero diagonal.
        q_across: ``float64[m, m]`` Pr(o1 ∈ S_{J-1} ∧ o2 ∈ S_J), ordered.
        n_estimate: estimated user count (NaN when read from a release that does not carry it).
        taxonomy: taxonomy of the dense indices.
        k: topics per weekly set.
        ledger: the privacy ledger (``None`` for statistics read without one).
    """

    q_single: npt.NDArray[np.float64]
    q_within: npt.NDArray[np.float64]
    q_across: npt.NDArray[np.float64]
    n_estimate: float
    taxonomy: Taxonomy
    k: int
    ledger: PrivacyLedger | None = None


def fingerprint(bounded: npt.NDArray[np.int16], user_ids: npt.NDArray[np.int64]) -> str:
    """sha256 over the bounded arrays (shape, dtype, topics, user ids)."""
    h = hashlib.sha256()
    h.update(repr((bounded.shape, str(bounded.dtype))).encode())
    h.update(np.ascontiguousarray(bounded).tobytes())
    h.update(np.ascontiguousarray(user_ids, dtype=np.int64).tobytes())
    return "sha256:" + h.hexdigest()


def _claim(target_eps: float, delta: float, accounting: str,
           composition: dict[str, Any]) -> dict[str, Any]:
    zc = composition["zcdp"]["epsilon"]
    pld_eps = composition["discrete_pld"]["epsilon"]
    if zc <= target_eps * (1 + 1e-9):
        basis = (f"rigorous for the discrete Gaussian noise actually added: it is "
                 f"rho={composition['zcdp']['rho']:.6g}-zCDP (Canonne-Kamath-Steinke 2020), "
                 f"which implies ({zc:.6g}, {delta:g})-DP <= target")
    else:
        basis = ("Gaussian analysis: the composed continuous-Gaussian guarantee meets the target"
                 f" exactly ({accounting} accounting); for the discrete noise actually added the "
                 f"library's PLD accountant gives epsilon={pld_eps} (numerical) and the "
                 f"rigorous closed-form zCDP bound gives epsilon={zc:.6g}")
    return {"epsilon": target_eps, "delta": delta, "basis": basis,
            "rigorous_discrete_epsilon": zc}


def compute_statistics(
    data: TopicSets,
    *,
    weeks: Sequence[int] | None = None,
    k: int = 5,
    epsilon: float = LN3,
    delta: float = 1e-15,
    split: Sequence[float] | None = None,
    accounting: Accounting = "paper",
    bound: BoundMode = "reject",
    seed: int | None = None,
) -> DPStatistics:
    """DP q_single / q_within / q_across of ``data`` with an exact privacy ledger.

    Args:
        data: topic-set sequences (dense indices, ``-1`` empty).
        weeks: weeks to use (default: all; the paper used weeks 0 and 1).
        k: topics per week after contribution bounding (paper: 5).
        epsilon, delta: total budget (paper: ln 3, 1e-15), add/remove-one-user neighbours.
        split: budget share per query: within-week queries (one per week) then across-week
            queries (one per consecutive pair); default half/half (paper: 25/25/50).
        accounting: ``"paper"`` (basic composition) or ``"tight"`` (exact Gaussian
            composition; same split of μ²; less noise).
        bound: ``"reject"`` or ``"truncate"`` weeks with more than ``k`` topics.
        seed: reproducible padding and noise; the noise is then NOT cryptographically secure
            (recorded in the ledger). ``None``: OS CSPRNG.
    """
    if not epsilon > 0 or not math.isfinite(epsilon):
        raise ValueError(f"epsilon must be a positive number, got {epsilon}")
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta}")
    tax = data.taxonomy
    m = tax.size
    w_sel = list(range(data.n_weeks)) if weeks is None else [int(w) for w in weeks]
    if not w_sel or any(not 0 <= w < data.n_weeks for w in w_sel):
        raise ValueError(f"weeks must be in 0..{data.n_weeks - 1}, got {w_sel}")
    queries = plan_queries(len(w_sel), k, m, epsilon=epsilon, delta=delta, split=split,
                           accounting=accounting)
    # ---- private part: bounding, exact counts, noise --------------------------------
    bounded, report = bound_contributions(data.sets[:, w_sel, :], m, k=k, bound=bound,
                                          seed=seed, user_ids=data.user_ids)
    counts = pair_counts(bounded, m)
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
    fp = fingerprint(bounded, data.user_ids)
    del bounded, counts
    # ---- post-processing: only noisy counts from here on -------------------------------
    q_single, q_within, q_across, n_hat = to_probabilities(noisy_within, noisy_across,
                                                           queries, k)
    sampled = [sampled_sigma(q.sigma) for q in queries]
    composition = acc.compose(queries, delta, sampled)
    mechs = []
    for q, s in zip(queries, sampled, strict=True):
        d = q.to_dict()
        d["weeks"] = [w_sel[j] for j in q.weeks]
        d["sigma_sampled"] = s
        mechs.append(d)
    noise_vs_paper = None
    if accounting == "tight":
        paper = plan_queries(len(w_sel), k, m, epsilon=epsilon, delta=delta, split=split,
                             accounting="paper")
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
                        "normalised by n; clipped to [0, 1]; q_single = row sums of "
                        "q_within / (k - 1)",
        package={"name": "topicslab", "version": topicslab.__version__},
        created=_dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        noise_vs_paper=noise_vs_paper,
        audit={"input_fingerprint": fp,
               "bounding": {k2: int(v) for k2, v in vars(report).items()},
               "note": "derived from the private input; NOT differentially private; "
                       "drop before publishing"},
    )
    return DPStatistics(q_single, q_within, q_across, n_hat, tax, k, ledger)
