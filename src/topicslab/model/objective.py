"""The objective J of the paper (§5.1, spec 01 §4) and the per-term errors behind the quality
bar.

Public names:
    Objective(targets, weeks, week_pairs=None, device="cpu", dtype=torch.float32)
        .sse(theta) -> (sum of squared errors, (q_single, q_within, q_across))
        .loss(theta) -> J = sse / n_terms
        .batch_sse(P, idx) -> SSE of the terms ``idx`` only (the paper's minibatches)
        .quality(qs, qw, qa) -> (share_abs, share_rel)
    exact_loss(theta, targets, week_pairs=None) -> float     J in float64 (the check)
    QualityBar(abs_tol=1e-3, abs_share=0.999, rel_tol=0.2, rel_share=0.9, rel_min_target=1e-3)

J(θ) = (1/N) [Σ_i Σ_o (q_single(θ;i,o) − q*_single(o))² + Σ_i Σ_{o1<o2} (q_within(θ;i,o1,o2) −
q*_within(o1,o2))² + Σ_{(i,j)} Σ_{o1,o2} (q_across(θ;i,j,o1,o2) − q*_across(o1,o2))²].

The fitters minimise the *sum* of squared errors (N·J): with ~1.1M terms, gradients of the mean
are far below Adam's ε = 1e-8 and its steps would silently vanish (spec 01 §4, "Pitfall").

``single_weight="relative"`` (the default fitter's choice) weights the r·m single terms by
(mean target / target)²: equal weight for equal *relative* error. Why: DP q_single are row
sums of clipped noisy pairs, biased upwards (Σ_o q*_single ≈ 5.7 at 1M users), while any
model has Σ_o q_single = E|S| ≤ k. Plain least squares spreads that unavoidable deficit
evenly (≈ 0.15 pp on every topic: every small topic then misses by > 20%); relative weights
spread it in proportion to the targets (≈ 12% on every topic).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch

from topicslab.model.closed_forms import closed_forms
from topicslab.model.targets import Targets, n_terms

__all__ = ["Objective", "QualityBar", "exact_loss"]


@dataclass(frozen=True)
class QualityBar:
    """The quality bar (issue 4; the paper's Fig. 3 bar, raised): a share ``abs_share`` of all
    terms within ``abs_tol`` absolute error, and of the terms whose target is at least
    ``rel_min_target`` a share ``rel_share`` within ``rel_tol`` relative error."""

    abs_tol: float = 1e-3
    abs_share: float = 0.999
    rel_tol: float = 0.2
    rel_share: float = 0.9
    rel_min_target: float = 1e-3

    def met(self, share_abs: float, share_rel: float) -> bool:
        return share_abs >= self.abs_share and share_rel >= self.rel_share

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Objective:
    """J and its pieces for one set of targets, on one device and dtype."""

    def __init__(self, targets: Targets, weeks: int,
                 week_pairs: Sequence[tuple[int, int]] | None = None, *,
                 device: torch.device | str = "cpu", dtype: torch.dtype = torch.float32,
                 bar: QualityBar | None = None, single_weight: str = "uniform") -> None:
        self.targets = targets
        self.weeks = int(weeks)
        self.pairs = ([(i, i + 1) for i in range(self.weeks - 1)] if week_pairs is None
                      else [(int(a), int(b)) for a, b in week_pairs])
        self.device = torch.device(device)
        self.dtype = dtype
        self.bar = bar or QualityBar()
        m = targets.m
        self.m = m
        self.n_terms = n_terms(self.weeks, m, len(self.pairs))
        kw: dict[str, Any] = {"device": self.device, "dtype": dtype}
        self.ts = torch.tensor(targets.q_single, **kw)
        self.tw = torch.tensor(targets.q_within, **kw)
        self.ta = torch.tensor(targets.q_across, **kw)
        self.upper = torch.triu(torch.ones(m, m, dtype=torch.bool, device=self.device), 1)
        self.iu = torch.triu_indices(m, m, 1, device=self.device)
        # targets of every term in term order (see targets.py), for errors and minibatches
        self.term_targets = torch.cat([
            self.ts.repeat(self.weeks),
            self.tw[self.iu[0], self.iu[1]].repeat(self.weeks),
            self.ta.reshape(-1).repeat(len(self.pairs))])
        self.rel_mask = self.term_targets >= self.bar.rel_min_target
        if single_weight == "uniform":
            self.single_w = torch.ones_like(self.ts)
        elif single_weight == "relative":
            # equal weight for equal *relative* error: (mean target / target)^2
            self.single_w = (self.ts.mean() / self.ts.clamp(min=1e-6)) ** 2
        else:
            raise ValueError(f"single_weight must be uniform or relative, got {single_weight}")

    # ------------------------------------------------------------------ full objective
    def sse(self, theta: torch.Tensor,
            ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
        """Sum of squared errors over all terms (= N·J) and the model statistics."""
        qs, qw, qa = closed_forms(theta, self.pairs)
        total = ((qs - self.ts) ** 2).sum()
        total = total + (((qw - self.tw) ** 2) * self.upper).sum()
        if self.pairs:
            total = total + ((qa - self.ta) ** 2).sum()
        return total, (qs, qw, qa)

    def fit_sse(self, theta: torch.Tensor,
                ) -> tuple[torch.Tensor, torch.Tensor,
                           tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
        """(the fitting objective: SSE with the single terms weighted, the plain SSE = N·J,
        the model statistics)."""
        qs, qw, qa = closed_forms(theta, self.pairs)
        d2 = (qs - self.ts) ** 2
        rest = (((qw - self.tw) ** 2) * self.upper).sum()
        if self.pairs:
            rest = rest + ((qa - self.ta) ** 2).sum()
        weighted = (d2 * self.single_w).sum() + rest
        plain = d2.sum().detach() + rest.detach()
        return weighted, plain, (qs, qw, qa)

    def loss(self, theta: torch.Tensor) -> torch.Tensor:
        """J(θ), the mean over all terms."""
        return self.sse(theta)[0] / self.n_terms

    def terms(self, qs: torch.Tensor, qw: torch.Tensor, qa: torch.Tensor) -> torch.Tensor:
        """Model statistics flattened in term order."""
        return torch.cat([qs.reshape(-1), qw[:, self.iu[0], self.iu[1]].reshape(-1),
                          qa.reshape(-1)])

    @torch.no_grad()
    def quality(self, qs: torch.Tensor, qw: torch.Tensor, qa: torch.Tensor,
                ) -> tuple[float, float]:
        """(share of terms within ``abs_tol``, share of large terms within ``rel_tol``)."""
        err = (self.terms(qs, qw, qa) - self.term_targets).abs()
        share_abs = float((err <= self.bar.abs_tol).double().mean())
        big = self.rel_mask
        rel = err[big] / self.term_targets[big]
        share_rel = float((rel <= self.bar.rel_tol).double().mean()) if bool(big.any()) \
            else 1.0
        return share_abs, share_rel

    # ------------------------------------------------------------------ minibatches
    def batch_sse(self, P: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        """SSE of the terms ``idx`` (term order) from slot probabilities ``P[T, r, k, m]``.

        Each term is computed exactly from its own slots: rows ``(week, topic)`` of P are
        gathered as ``[B, T, k]`` blocks (``index_select``, whose backward is a fast
        ``index_add``), so the cost is O(B·T·k), independent of the number of terms.
        """
        r, m = self.weeks, self.m
        T, _, k, _ = P.shape
        n_single, n_within = r * m, r * (m * (m - 1) // 2)
        rows = P.permute(1, 3, 2, 0).reshape(r * m, k * T)

        def slots(week: torch.Tensor, topic: torch.Tensor) -> torch.Tensor:
            return rows.index_select(0, week * m + topic).view(-1, k, T)

        def prod(x: torch.Tensor) -> torch.Tensor:
            # Π over the k slots as plain products: torch.prod's backward (division with
            # zero handling) costs several times more
            parts = x.unbind(1)  # unbind's backward is one stack (slicing's is k fills)
            out = parts[0]
            for part in parts[1:]:
                out = out * part
            return out  # [B, T]

        def present(week: torch.Tensor, topic: torch.Tensor) -> torch.Tensor:
            return 1 - prod(1 - slots(week, topic))

        out = P.new_zeros(())
        tgt = self.term_targets[idx]
        sel = idx < n_single
        if bool(sel.any()):
            j = idx[sel]
            a = present(j // m, j % m)
            out = out + ((a.mean(dim=1) - tgt[sel]) ** 2).sum()
        sel = (idx >= n_single) & (idx < n_single + n_within)
        if bool(sel.any()):
            j = idx[sel] - n_single
            npair = m * (m - 1) // 2
            wk, q = j // npair, j % npair
            pa, pb = slots(wk, self.iu[0][q]), slots(wk, self.iu[1][q])
            n1, n2, n12 = prod(1 - pa), prod(1 - pb), prod(1 - pa - pb)
            q_w = (1 - n1 - n2 + n12).mean(dim=1)
            out = out + ((q_w - tgt[sel]) ** 2).sum()
        sel = idx >= n_single + n_within
        if self.pairs and bool(sel.any()):
            j = idx[sel] - n_single - n_within
            pi, rest = j // (m * m), j % (m * m)
            left = torch.tensor([a for a, _ in self.pairs], device=P.device)[pi]
            right = torch.tensor([b for _, b in self.pairs], device=P.device)[pi]
            a1 = present(left, rest // m)
            a2 = present(right, rest % m)
            out = out + (((a1 * a2).mean(dim=1) - tgt[sel]) ** 2).sum()
        return out


def exact_loss(theta: torch.Tensor | np.ndarray[Any, Any], targets: Targets,
               week_pairs: Sequence[tuple[int, int]] | None = None) -> float:
    """J(θ) computed in float64 on the CPU (the check of a float32 fit)."""
    th = torch.as_tensor(np.asarray(theta) if not isinstance(theta, torch.Tensor) else theta)
    th = th.detach().to("cpu", torch.float64)
    obj = Objective(targets, th.shape[1], week_pairs, dtype=torch.float64)
    with torch.no_grad():
        return float(obj.loss(th))
