"""How persistent types reproduce the persistence statistic: the overlap of a user's topic
sets ℓ weeks apart (docs/fidelity.md §4c).

Public names:
    factorial_moments(hist) -> [..., 3]          E[O], E[O(O−1)], E[O(O−1)(O−2)] of [..., k+1]
    overlap_moments(theta, mode_weights, mode_stay, log_slot_stay, lags) -> [L, 3]
    sampled_overlap(model, lags, users, seed) -> float64[L, k+1]
    overlap_histogram(sets, lags) -> float64[L, k+1]     the same of given topic sets
    PersistenceTerm(q_overlap, weight=..., refresh_every=..., users=..., seed=...)

Why. Pair statistics fix the *mean* overlap O_ℓ = |S_J ∩ S_{J+ℓ}| at ℓ = 1 (the trace of
q_across) and nothing of its spread or of longer lags. Two populations with the same pair
statistics can differ in both, and the re-identification risk of r-week traces follows the
spread: a model that keeps some users' whole profile and redraws others' (bimodal O) makes
fewer traces unique than one in which every user's interests drift a little (measured on the
reference population: the same E[O_1] = 1.42, Pr(O_1 = 0) 0.21 in the population against 0.32
in the synthetic data, Hamming risk −3% at r = 5..7).

The model side. Given a component c = (type, mode) whose mode was kept for ℓ weeks, topic o
is in both weeks with probability d_c(o) = 1 − 2 Π_s(1 − P_s(o)) + Π_s (1 − P_s(o))(1 −
P_s(o) + σ_s^ℓ P_s(o)) (closed_forms' diagonal); after a redraw, with A_μ(o)·A_μ'(o) for the
two modes. Treating topics as independent given the component (a Poisson-binomial) gives the
factorial moments Σd, (Σd)² − Σd², (Σd)³ − 3ΣdΣd² + 2Σd³, mixed over components and over
kept/redrawn modes (ρ_t^ℓ). The first moment is exact; the others ignore the slots' negative
dependence (a user has at most k topics), which the mixture does not see. That error is a
property of the model alone, so it is measured on the model itself: every ``refresh_every``
steps ``PersistenceTerm`` samples ``users`` synthetic users, and the fit matches the
*sampled* moments (closed form + the last measured offset) to the released ones while the
gradient comes from the closed form. Only DP statistics and the model enter: no private data.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

__all__ = ["PersistenceTerm", "factorial_moments", "overlap_histogram", "overlap_moments",
           "sampled_overlap"]

#: moments matched per lag: E[O], E[O(O−1)], E[O(O−1)(O−2)]
MOMENTS = 3


def factorial_moments(hist: torch.Tensor | npt.ArrayLike) -> torch.Tensor:
    """The first three factorial moments of overlap distributions ``[..., k+1]``."""
    h = torch.as_tensor(hist, dtype=torch.float64)
    j = torch.arange(h.shape[-1], dtype=torch.float64)
    return torch.stack([(h * j).sum(-1), (h * j * (j - 1)).sum(-1),
                        (h * j * (j - 1) * (j - 2)).sum(-1)], dim=-1)


def _poisson_binomial(s1: torch.Tensor, s2: torch.Tensor, s3: torch.Tensor) -> torch.Tensor:
    # factorial moments of a sum of independent Bernoulli(p_o) from the power sums Σp^i
    return torch.stack([s1, s1 * s1 - s2, s1 ** 3 - 3 * s1 * s2 + 2 * s3], dim=-1)


def overlap_moments(theta: torch.Tensor, mode_weights: torch.Tensor, mode_stay: torch.Tensor,
                    log_slot_stay: torch.Tensor, lags: Sequence[int]) -> torch.Tensor:
    """``[len(lags), 3]`` factorial moments of O_ℓ under persistent types (module docstring;
    differentiable; the arguments as ``closed_forms.persistent_forms``)."""
    # float64: ``1 − 2·none + Π…`` below cancels for rare topics in float32
    dtype = theta.dtype
    theta, mode_weights, mode_stay, log_slot_stay = (
        x.to(torch.float64) for x in (theta, mode_weights, mode_stay, log_slot_stay))
    P = torch.softmax(theta, dim=-1)
    one_minus = 1 - P
    none = one_minus.prod(dim=2)  # [T, M, m]: Pr(o ∉ S | mode)
    A = 1 - none
    # redrawn mode: S_J from mode μ, S_{J+ℓ} from μ' ~ w, independent given the type
    powers = [A, A * A, A * A * A]
    red = _poisson_binomial(*(x @ x.transpose(1, 2) for x in powers))  # [T, M, M, 3]
    red_t = torch.einsum("tm,tn,tmnj->tj", mode_weights, mode_weights, red)
    lag = torch.tensor([float(x) for x in lags], dtype=theta.dtype, device=theta.device)
    stay = torch.exp(lag.view(-1, 1, 1, 1, 1)
                     * log_slot_stay.clamp(min=-1000.0).unsqueeze(0).unsqueeze(-1))
    both = (1 - 2 * none + (one_minus * (one_minus + stay * P)).prod(dim=3)).clamp(0.0, 1.0)
    kept = _poisson_binomial(both.sum(-1), (both ** 2).sum(-1), (both ** 3).sum(-1))
    kept_t = torch.einsum("tm,ltmj->ltj", mode_weights, kept)  # [L, T, 3]
    rho = (mode_stay.unsqueeze(0) ** lag.view(-1, 1)).unsqueeze(-1)  # [L, T, 1]
    return (rho * kept_t + (1 - rho) * red_t).mean(dim=1).to(dtype)


def sampled_overlap(model: Any, lags: int, users: int, seed: int) -> npt.NDArray[np.float64]:
    """``[lags, k+1]`` overlap distribution of ``users`` users sampled from ``model`` (a
    ``TypeMixture``), week 0 against weeks 1..lags (sets of fewer than k topics count what
    they hold)."""
    from topicslab.model.sample import sample

    return overlap_histogram(sample(model, int(users), seed=int(seed),
                                    weeks=int(lags) + 1).sets, lags)


def overlap_histogram(sets: npt.NDArray[np.int16], lags: int) -> npt.NDArray[np.float64]:
    """``[lags, k+1]`` share of users sharing j topics between week 0 of ``sets`` (``[n,
    weeks, k]``, ``-1`` empty) and week ℓ = 1..lags."""
    k = sets.shape[2]
    first = sets[:, 0, :, None]
    out = np.empty((lags, k + 1))
    for lag in range(1, lags + 1):
        shared = ((first == sets[:, lag, None, :]) & (first >= 0)).sum(axis=(1, 2))
        out[lag - 1] = np.bincount(shared, minlength=k + 1)[:k + 1] / sets.shape[0]
    return out


def _moment_sd(sigma: float, k: int) -> torch.Tensor:
    """Standard deviation of each factorial moment from independent noise ``sigma`` on each
    bin (the released histogram's DP noise; its normalisation is ignored)."""
    j = torch.arange(k + 1, dtype=torch.float64)
    coef = torch.stack([j, j * (j - 1), j * (j - 1) * (j - 2)])
    return sigma * torch.sqrt((coef * coef).sum(dim=1))


def _sampled_sd(hist: npt.NDArray[np.float64], users: int) -> torch.Tensor:
    """``[L, 3]`` Monte Carlo standard errors of the factorial moments of ``users`` draws."""
    h = torch.as_tensor(hist, dtype=torch.float64)
    j = torch.arange(h.shape[-1], dtype=torch.float64)
    f = torch.stack([j, j * (j - 1), j * (j - 1) * (j - 2)])  # [3, k+1]
    mean = h @ f.T
    second = h @ (f * f).T
    return torch.sqrt((second - mean * mean).clamp(min=0.0) / users)


@dataclass
class PersistenceTerm:
    """The persistence statistic's term of the fit (module docstring).

    ``Σ_ℓ,i ((F̂_ℓi + b_ℓi − F*_ℓi) / s_ℓi)²``: F̂ the closed-form factorial moments, b their
    offset to the moments of ``users`` users sampled from the model (re-measured every
    ``refresh_every`` steps), F* the released moments and s_ℓi = √((tolerance·F*)² + σ²_DP),
    so that an error of ``tolerance`` (relative) on a moment costs 1 — unless the DP noise of
    the released moment (``noise_sigma``: the ledger's σ per bin over n) is larger.

    ``met()``: every sampled moment within 2√(s² + its Monte Carlo variance) of F*.
    """

    q_overlap: npt.NDArray[np.float64]
    noise_sigma: float = 0.0
    weight: float = 0.03
    refresh_every: int = 20
    users: int = 200_000
    seed: int = 0
    tolerance: float = 0.01
    offset: torch.Tensor | None = field(default=None, repr=False)
    last_sampled: torch.Tensor | None = field(default=None, repr=False)
    sampled_sd: torch.Tensor | None = field(default=None, repr=False)
    #: the step of the last measurement (-1: none), and whether the next ``sse`` must
    #: measure again (the fitter asks before it trusts ``met``)
    refreshed_at: int = -1
    due: bool = False

    def __post_init__(self) -> None:
        self.target = factorial_moments(self.q_overlap)
        self.lags = list(range(1, self.q_overlap.shape[0] + 1))
        k = self.q_overlap.shape[1] - 1
        dp_sd = _moment_sd(float(self.noise_sigma), k)
        # a moment of 0 (no user keeps 3 topics) is matched to within 1e-3 users' worth
        self.scale = torch.sqrt((self.tolerance * self.target.clamp(min=0.1)) ** 2
                                + dp_sd ** 2)

    def measure(self, build: Callable[[], Any], step: int) -> None:
        """Sample ``users`` users of the current model and keep their moments."""
        hist = sampled_overlap(build(), len(self.lags), self.users, self.seed + step)
        self.last_sampled = factorial_moments(hist)
        self.sampled_sd = _sampled_sd(hist, self.users)
        self.refreshed_at = int(step)
        self.due = False

    def refresh(self, closed: torch.Tensor, build: Callable[[], Any], step: int) -> None:
        """Measure the closed form's offset on ``users`` users of the current model."""
        self.measure(build, step)
        assert self.last_sampled is not None
        offset = self.last_sampled - closed.detach().to(torch.float64).cpu()
        offset[:, 0] = 0.0  # the first moment's closed form is exact: no sampling noise
        self.offset = offset

    def state(self) -> dict[str, Any]:
        """What a checkpoint keeps, so that a resumed fit takes the same steps."""
        return {"offset": self.offset, "last_sampled": self.last_sampled,
                "sampled_sd": self.sampled_sd, "refreshed_at": self.refreshed_at,
                "due": self.due}

    def restore(self, state: dict[str, Any]) -> None:
        self.offset = state["offset"]
        self.last_sampled = state["last_sampled"]
        self.sampled_sd = state["sampled_sd"]
        self.refreshed_at = int(state["refreshed_at"])
        self.due = bool(state["due"])

    def sse(self, params: dict[str, torch.Tensor], laws: Callable[[dict[str, torch.Tensor]],
            tuple[torch.Tensor, torch.Tensor, torch.Tensor]],
            build: Callable[[], Any], step: int) -> torch.Tensor:
        """The term (a scalar tensor, differentiable in ``params``)."""
        weights, mode_stay, log_slot_stay = laws(params)
        closed = overlap_moments(params["theta"], weights, mode_stay, log_slot_stay,
                                 self.lags)
        if self.offset is None or self.due or step % self.refresh_every == 0:
            self.refresh(closed, build, step)
        assert self.offset is not None
        dev, dt = closed.device, closed.dtype
        err = ((closed + self.offset.to(dev, dt) - self.target.to(dev, dt))
               / self.scale.to(dev, dt))
        return (err * err).sum()

    def relative_errors(self) -> npt.NDArray[np.float64] | None:
        """``[L, 3]`` relative errors of the last sampled moments (``None`` before any)."""
        if self.last_sampled is None:
            return None
        return ((self.last_sampled - self.target) / self.target.clamp(min=0.1)).numpy()

    def met(self) -> bool:
        """Every sampled moment within two standard deviations of its target (module
        docstring)."""
        if self.last_sampled is None or self.sampled_sd is None:
            return False
        bound = 2 * torch.sqrt(self.scale ** 2 + self.sampled_sd ** 2)
        return bool(((self.last_sampled - self.target).abs() <= bound).all())
