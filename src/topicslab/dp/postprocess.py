"""Noisy counts -> q_single, q_within, q_across (Dick et al. §4.1-4.2).

Pure post-processing of the released noisy counts (free under DP; never touches the data):

* **User count.** n is private under add/remove neighbours, so it is estimated from the noisy
  counts. After bounding every user adds exactly C(k,2) to Σ f_ww and k² to Σ f_w,w+1, so
  n̂_w = Σ f̃_ww / C(k,2) and n̂_w,w+1 = Σ f̃_w,w+1 / k² are unbiased; their noise variances are
  dims·σ²/C(k,2)² and m²σ²/k⁴, and we combine all of them by inverse-variance weighting.
* **Normalise** each noisy query by n̂ (q_within(o1,o2) = Pr({o1,o2} ⊆ S_J), so
  Σ_{o1<o2} q_within = C(k,2)); **average** the weeks with equal weights (J is a uniform week,
  Dick et al. §4.1; the paper's average of normalised f11 and f22); **clip** to [0, 1] after
  averaging (clipping each week first would add more positive bias).
* q_within is stored as a symmetric matrix with a zero diagonal (both orders of a pair hold the
  same value); q_single(o) = Σ_{o2 ≠ o} q_within(o, o2) / (k − 1) (Dick et al. §4.1 identity),
  summed over the *unclipped* noisy q_within and clipped afterwards: clipping each of the
  m − 1 terms first would add E[max(noise, 0)] ≈ 0.4σ/n per term, a positive bias of about
  0.4·(m−1)σ/((k−1)n) on every q_single (≈ 0.4 percentage points at n = 1M, σ = 86).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from topicslab.dp.mechanism import GaussianQuery
from topicslab.errors import InputError

F64 = npt.NDArray[np.float64]


def estimate_users(within: Sequence[F64], across: Sequence[F64], k: int, m: int,
                   within_sigma: Sequence[float], across_sigma: Sequence[float]) -> float:
    """Inverse-variance weighted n̂ from the noisy totals (see module docstring)."""
    pairs = k * (k - 1) // 2
    iu = np.triu_indices(m, 1)
    ests, weights = [], []
    for f, s in zip(within, within_sigma, strict=True):
        ests.append(float(f[iu].sum()) / pairs)
        weights.append(pairs**2 / (len(iu[0]) * s * s))
    for f, s in zip(across, across_sigma, strict=True):
        ests.append(float(f.sum()) / (k * k))
        weights.append(k**4 / (m * m * s * s))
    w = np.asarray(weights)
    return float(np.dot(w, ests) / w.sum())


def symmetric_from_upper(upper: F64) -> F64:
    """Symmetric matrix with zero diagonal from the strict upper triangle of ``upper``."""
    u = np.triu(upper, 1)
    return u + u.T


def single_from_within(q_within: F64, k: int) -> F64:
    """q_single(o) = Σ_{o2≠o} q_within(o, o2) / (k − 1)."""
    return np.asarray(q_within.sum(axis=1) / (k - 1), dtype=np.float64)


def to_probabilities(
    noisy_within: Sequence[F64],
    noisy_across: Sequence[F64],
    queries: Sequence[GaussianQuery],
    k: int,
) -> tuple[F64, F64, F64, float]:
    """``(q_single, q_within, q_across, n_estimate)`` from the noisy counts."""
    m = noisy_within[0].shape[0]
    n_w = len(noisy_within)
    sig_w = [q.sigma for q in queries[:n_w]]
    sig_a = [q.sigma for q in queries[n_w:]]
    n_hat = max(estimate_users(noisy_within, noisy_across, k, m, sig_w, sig_a), 1.0)
    raw_within = np.mean([symmetric_from_upper(f) for f in noisy_within], axis=0) / n_hat
    q_single = np.clip(single_from_within(raw_within, k), 0.0, 1.0)
    q_within = np.clip(raw_within, 0.0, 1.0)
    if noisy_across:
        q_across = np.clip(np.mean(list(noisy_across), axis=0) / n_hat, 0.0, 1.0)
    else:
        q_across = np.zeros((m, m))
    return q_single, q_within, q_across, n_hat


def term_sigmas(within_sigma: Sequence[float], across_sigma: Sequence[float], n_hat: float,
                k: int, m: int) -> dict[str, float]:
    """Noise standard deviation of one released term of each statistic (n̂ taken as exact).

    q_within averages the weeks' noisy counts over n̂: σ_w = √(Σ σ_i²) / (W n̂);
    q_single sums m − 1 of those over k − 1: σ_s = σ_w √(m − 1) / (k − 1);
    q_across averages the pairs' noisy counts: σ_a = √(Σ σ_j²) / (P n̂).
    """
    sw = math.sqrt(sum(s * s for s in within_sigma)) / (len(within_sigma) * n_hat)
    sa = (math.sqrt(sum(s * s for s in across_sigma)) / (len(across_sigma) * n_hat)
          if across_sigma else math.nan)
    return {"single": sw * math.sqrt(m - 1) / (k - 1), "within": sw, "across": sa}


def overlap_probabilities(noisy: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """The persistence statistic's noisy histograms ``[L, k+1]`` as distributions: clipped at
    0 and each lag normalised to sum 1 (post-processing: no privacy cost). Dividing by a
    lag's own noisy total rather than by n̂ keeps every row a distribution; the two differ by
    the noise of one total (~σ√(k+1)/n)."""
    h = np.clip(np.asarray(noisy, dtype=np.float64), 0.0, None)
    tot = h.sum(axis=1, keepdims=True)
    if (tot <= 0).any():
        raise InputError("the persistence statistic is all noise (a lag's histogram sums to "
                         "0 after clipping): too few users for the budget", field="overlap")
    return h / tot


def check_overlap(q_overlap: Any, k: int) -> npt.NDArray[np.float64] | None:
    """The persistence statistic ``[L, k+1]`` checked (finite, in [0, 1], rows summing to 1),
    as a float64 copy, or ``None``."""
    if q_overlap is None:
        return None
    arr = np.asarray(q_overlap, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[0] < 1 or arr.shape[1] != k + 1:
        raise InputError(f"shape {arr.shape} is not [lags, k + 1 = {k + 1}]", field="q_overlap")
    if not np.isfinite(arr).all() or (arr < 0).any() or (arr > 1).any():
        raise InputError("values must be probabilities in [0, 1]", field="q_overlap")
    bad = np.flatnonzero(np.abs(arr.sum(axis=1) - 1) > 1e-6)
    if bad.size:
        raise InputError(f"lag {int(bad[0]) + 1} sums to {arr[bad[0]].sum():.6g}, not 1",
                         field="q_overlap")
    return arr.copy()
