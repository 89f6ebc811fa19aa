"""The objective J of Dick et al. (§5.1, App. A) and the per-term errors behind the quality
bar.

Public names:
    Objective(targets, weeks, week_pairs=None, device="cpu", dtype=torch.float32, rows=None)
        .sse_of(qs, qw, qa) -> N·J of a model's statistics (any variant, in its rows)
        .sse(theta) -> (N·J, (q_single, q_within, q_across)) of the paper's types
        .loss(theta) -> J = sse / n_terms
        .batch_sse(P, idx) -> SSE of the terms ``idx`` only (the paper's minibatches)
        .quality(qs, qw, qa) -> (share_abs, share_rel)
    exact_loss(theta, targets, week_pairs=None) -> float     J in float64 (the check)
    QualityBar(abs_tol=1e-3, abs_share=0.999, rel_tol=0.2, rel_share=0.9, rel_min_target=1e-3)

J(θ) = (1/N) [Σ_i Σ_o (q_single(θ;i,o) − q*_single(o))² + Σ_i Σ_{o1<o2} (q_within(θ;i,o1,o2) −
q*_within(o1,o2))² + Σ_{(i,j)} Σ_{o1,o2} (q_across(θ;i,j,o1,o2) − q*_across(o1,o2))²].

The fitters minimise the *sum* of squared errors (N·J): with ~1.1M terms, gradients of the mean
are far below Adam's ε = 1e-8 and its steps would silently vanish (docs/design.md §Objective).

``single_weight="relative"`` weights the r·m single terms by (mean target / target)²: equal
weight for equal *relative* error. It was the default while DP q_single were row sums of
*clipped* noisy pairs, biased upwards (Σ_o q*_single ≈ 5.7 at 1M users, beyond any model's
E|S| ≤ k). Since q_single is summed before clipping (``dp.postprocess``) it is unbiased, and
plain J (``"uniform"``, the paper's objective and the default) keeps the synthetic data's
re-identification risk closer to the population's: measured on the 1M-user reference
population at ε = ln 3, persistent types, relative weights over-state the Hamming risk by
+3.9% at r = 2 and +3.6% at r = 4, uniform weights by +1.2% and +0.7% (benchmarks/RESULTS.md,
"Release fidelity").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch

from topicslab._checks import number
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

    def __post_init__(self) -> None:
        # (a share of 2 could never be met, a negative or NaN tolerance met nothing, silently)
        for name in ("abs_tol", "rel_tol", "rel_min_target"):
            object.__setattr__(self, name, number(getattr(self, name), name, lo=0.0))
        for name in ("abs_share", "rel_share"):
            object.__setattr__(self, name, number(getattr(self, name), name, lo=0.0, hi=1.0,
                                                  why="a share of the terms"))

    def met(self, share_abs: float, share_rel: float) -> bool:
        return share_abs >= self.abs_share and share_rel >= self.rel_share

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Objective:
    """J and its pieces for one set of targets, on one device and dtype.

    J always counts the terms of ``weeks`` weeks and ``week_pairs``. A model variant computes
    its statistics in *rows* (``rows=(single_rows, pair_rows)``: how many of J's weeks and
    week pairs each row of ``q_single``/``q_within`` and of ``q_across`` stands for): the
    paper's types have one row per week and per pair (the default), persistent types one row
    for all weeks and one for all consecutive pairs, since their weeks are identical.
    """

    def __init__(self, targets: Targets, weeks: int,
                 week_pairs: Sequence[tuple[int, int]] | None = None, *,
                 device: torch.device | str = "cpu", dtype: torch.dtype = torch.float32,
                 bar: QualityBar | None = None, single_weight: str = "uniform",
                 rows: tuple[Sequence[float], Sequence[float]] | None = None) -> None:
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
        single_rows, pair_rows = rows if rows is not None else (
            [1.0] * self.weeks, [1.0] * len(self.pairs))
        if (abs(sum(single_rows) - self.weeks) > 1e-9
                or abs(sum(pair_rows) - len(self.pairs)) > 1e-9):
            raise ValueError(f"rows {rows} do not add up to {self.weeks} weeks and "
                             f"{len(self.pairs)} pairs")
        kw: dict[str, Any] = {"device": self.device, "dtype": dtype}
        self.row_single = torch.tensor(list(single_rows), **kw)
        self.row_pair = torch.tensor(list(pair_rows), **kw)
        self.ts = torch.tensor(targets.q_single, **kw)
        self.tw = torch.tensor(targets.q_within, **kw)
        self.ta = torch.tensor(targets.q_across, **kw)
        self.upper = torch.triu(torch.ones(m, m, dtype=torch.bool, device=self.device), 1)
        self.iu = torch.triu_indices(m, m, 1, device=self.device)
        n_s, n_p = len(single_rows), len(pair_rows)
        # targets and multiplicities of every term in row order (see targets.py)
        self.term_targets = torch.cat([
            self.ts.repeat(n_s), self.tw[self.iu[0], self.iu[1]].repeat(n_s),
            self.ta.reshape(-1).repeat(n_p)])
        self.term_weights = torch.cat([
            self.row_single.repeat_interleave(m),
            self.row_single.repeat_interleave(self.iu.shape[1]),
            self.row_pair.repeat_interleave(m * m)])
        self.rel_mask = self.term_targets >= self.bar.rel_min_target
        if single_weight == "uniform":
            self.single_w = torch.ones_like(self.ts)
        elif single_weight == "relative":
            # equal weight for equal *relative* error: (mean target / target)^2
            self.single_w = (self.ts.mean() / self.ts.clamp(min=1e-6)) ** 2
        else:
            raise ValueError(f"single_weight must be uniform or relative, got {single_weight}")

    def noise_floor(self) -> float | None:
        """The J that the true statistics themselves would have against these targets: the
        DP noise's expected squared error per term, averaged like J (``None`` without the
        noise scale).

        A released term is the true frequency t plus Gaussian noise σ, clipped at 0, so its
        expected squared error is ``σ² v(t/σ)`` with ``v(a) = E[(max(a + Z, 0) − a)²] =
        Φ(a) − aφ(a) + a²Φ(−a)`` (σ² for large terms, σ²/2 at t = 0). t is unknown; the
        target (≥ 0) stands in for it, which errs high for small terms (noise pushes their
        clipped targets up), so the floor errs on the side of fitting a little less closely
        than the truth would. Measured on 1M-user populations at ε = ln 3: 3.10e-9 against
        2.84e-9 for the true statistics (reference), 2.96e-9 vs 2.62e-9 (stable interests),
        3.01e-9 vs 2.70e-9 (grouped interests).
        """
        sig = self.targets.noise_sigma
        if sig is None:
            return None
        kw: dict[str, Any] = {"device": self.device, "dtype": torch.float64}
        m, n_within, n_s = self.m, self.iu.shape[1], len(self.row_single)
        # term order: singles of every row, within pairs of every row, across of every pair
        sigma = torch.cat([torch.full((m * n_s,), sig["single"], **kw),
                           torch.full((n_within * n_s,), sig["within"], **kw),
                           torch.full((m * m * len(self.row_pair),), sig["across"], **kw)])
        if bool((sigma <= 0).any()):
            return None
        a = self.term_targets.to(torch.float64).clamp(min=0.0) / sigma
        pdf = torch.exp(-0.5 * a * a) / math.sqrt(2.0 * math.pi)
        v = torch.special.ndtr(a) - a * pdf + a * a * torch.special.ndtr(-a)
        w = self.term_weights.to(torch.float64)
        return float((w * sigma * sigma * v).sum() / w.sum())

    # ------------------------------------------------------------------ full objective
    def _parts(self, qs: torch.Tensor, qw: torch.Tensor, qa: torch.Tensor,
               ) -> tuple[torch.Tensor, torch.Tensor]:
        """(per-row single squared errors ``[R, m]``, the within and across SSE)."""
        d2 = (qs - self.ts) ** 2
        w2 = (((qw - self.tw) ** 2) * self.upper).sum(dim=(1, 2))
        rest = (w2 * self.row_single).sum()
        if self.pairs:
            a2 = ((qa - self.ta) ** 2).sum(dim=(1, 2))
            rest = rest + (a2 * self.row_pair).sum()
        return d2, rest

    def sse_of(self, qs: torch.Tensor, qw: torch.Tensor, qa: torch.Tensor) -> torch.Tensor:
        """N·J of model statistics in this objective's rows."""
        d2, rest = self._parts(qs, qw, qa)
        return (d2.sum(dim=1) * self.row_single).sum() + rest

    def fit_sse_of(self, qs: torch.Tensor, qw: torch.Tensor, qa: torch.Tensor,
                   ) -> tuple[torch.Tensor, torch.Tensor]:
        """(the fitting objective: N·J with the single terms weighted, the plain N·J)."""
        d2, rest = self._parts(qs, qw, qa)
        weighted = ((d2 * self.single_w).sum(dim=1) * self.row_single).sum() + rest
        plain = (d2.sum(dim=1) * self.row_single).sum().detach() + rest.detach()
        return weighted, plain

    def sse(self, theta: torch.Tensor,
            ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
        """Sum of squared errors over all terms (= N·J) of the paper's types ``theta``, and
        their statistics."""
        qs, qw, qa = closed_forms(theta, self.pairs)
        return self.sse_of(qs, qw, qa), (qs, qw, qa)

    def loss(self, theta: torch.Tensor) -> torch.Tensor:
        """J(θ) of the paper's types, the mean over all terms."""
        return self.sse(theta)[0] / self.n_terms

    def terms(self, qs: torch.Tensor, qw: torch.Tensor, qa: torch.Tensor) -> torch.Tensor:
        """Model statistics flattened in row order."""
        return torch.cat([qs.reshape(-1), qw[:, self.iu[0], self.iu[1]].reshape(-1),
                          qa.reshape(-1)])

    @torch.no_grad()
    def quality(self, qs: torch.Tensor, qw: torch.Tensor, qa: torch.Tensor,
                ) -> tuple[float, float]:
        """(share of J's terms within ``abs_tol``, share of its large terms within
        ``rel_tol``)."""
        err = (self.terms(qs, qw, qa) - self.term_targets).abs()
        w = self.term_weights
        share_abs = float((w * (err <= self.bar.abs_tol)).sum() / w.sum())
        big = self.rel_mask
        if not bool(big.any()):
            return share_abs, 1.0
        rel = err[big] / self.term_targets[big]
        share_rel = float((w[big] * (rel <= self.bar.rel_tol)).sum() / w[big].sum())
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
