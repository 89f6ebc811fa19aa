"""Exact closed-form statistics of the type mixture for all terms at once (spec 01 §4,
paper Appendix A), as a few dense tensor products.

Public names:
    slot_probabilities(theta) -> P            softmax over topics, ``[T, r, k, m]``
    subset_expansion(P) -> H                  ``H[i, S, t, o]`` for every subset S of slots
    presence(H) -> A                          ``A[i, t, o] = Pr(o ∈ S_i | I = t)``
    closed_forms(theta, week_pairs) -> (q_single[r, m], q_within[r, m, m], q_across[p, m, m])
    signed_gram(H, sign)                      ``Σ_S sign_S H_S^T H_S`` with a one-product backward
    subset_signs(k, dtype)                    the signs of the expansion

Derivation. With N(t, i, A) = Π_s (1 − Σ_{x∈A} P[t,i,s,x]) = Pr(S_i ∩ A = ∅ | I = t):

* q_single(i, o) = mean_t (1 − N(t,i,{o})) = mean_t A[i,t,o];
* q_across(i, j, o1, o2) = mean_t A[i,t,o1] A[j,t,o2]  → ``A_iᵀ A_j / T``, one product;
* q_within(i, o1, o2) = mean_t (1 − N({o1}) − N({o2}) + N({o1,o2})).

The pair term is made separable per slot: with a = P_s[o1], b = P_s[o2],
1 − a − b = (1 − a)(1 − b) − ab, so expanding the product over the k slots,

    N({o1,o2}) = Σ_{S ⊆ [k]} (−1)^{|S|} h_S(o1) h_S(o2),
    h_S(o) = Π_{s∈S} P_s[o] · Π_{s∉S} (1 − P_s[o])   (= Pr(exactly the slots S draw o)).

h_∅ = N({o}), so 1 − N1 − N2 + N12 = A(o1)A(o2) + Σ_{S≠∅} (−1)^{|S|} h_S(o1) h_S(o2): a signed
Gram matrix of 2^k rank-T blocks (2^k is the minimal separable rank of the product of k
rank-2 slot factors). Writing it with A in the S = ∅ block avoids the cancellation of
"1 − (numbers close to 1)" in float32, and A itself is summed from the positive h_S
(Σ_S h_S = 1) instead of computed as 1 − Π(1 − P).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

__all__ = [
    "closed_forms",
    "presence",
    "signed_gram",
    "slot_probabilities",
    "subset_expansion",
    "subset_signs",
]


def slot_probabilities(theta: torch.Tensor) -> torch.Tensor:
    """P[t, i, s, :] = softmax(theta[t, i, s, :]) (paper §5)."""
    return torch.softmax(theta, dim=-1)


def subset_expansion(P: torch.Tensor) -> torch.Tensor:
    """``H[i, S, t, o] = Π_{s∈S} P[t,i,s,o] Π_{s∉S} (1 − P[t,i,s,o])`` for all 2^k subsets.

    Subset ``S`` is encoded by the bits of its index (bit j = slot j). Built by doubling one
    slot at a time: 2 + 4 + ... + 2^k elementwise products per (t, o).
    """
    T, r, k, m = P.shape
    Pw = P.permute(1, 2, 0, 3)  # [r, k, T, m]
    H = torch.ones((r, 1, T, m), dtype=P.dtype, device=P.device)
    for s in range(k):
        p = Pw[:, s:s + 1]
        # new bit s is the high bit: index j + 2^s means "slot s draws o"
        H = torch.cat([H * (1 - p), H * p], dim=1)
    return H


def presence(H: torch.Tensor) -> torch.Tensor:
    """``A[i, t, o] = Pr(o ∈ S_i | I = t) = Σ_{S≠∅} h_S(o)`` (a sum of positive terms)."""
    return H[:, 1:].sum(dim=1)


def subset_signs(k: int, dtype: torch.dtype = torch.float32,
                 device: torch.device | str | None = None) -> torch.Tensor:
    """Signs of the expansion: ``(−1)^{|S|}``, and +1 for the S = ∅ block (which holds A)."""
    pc = torch.tensor([bin(j).count("1") for j in range(2 ** k)], device=device)
    sign = torch.where(pc % 2 == 0, 1.0, -1.0).to(dtype)
    sign[0] = 1.0
    return sign


class _SignedGram(torch.autograd.Function):
    """``G[i] = Σ_S sign_S H[i,S]ᵀ H[i,S]`` with the backward as one product.

    Autograd of ``(sign·H)ᵀ H`` would take two products for the gradient; since G is a
    symmetric form in H, ``dL/dH = sign · H (g + gᵀ)`` takes one.
    """

    @staticmethod
    def forward(ctx: Any, H: torch.Tensor, sign: torch.Tensor) -> torch.Tensor:
        r, J, T, m = H.shape
        Hs = H * sign.view(1, J, 1, 1)
        ctx.save_for_backward(Hs)
        return Hs.reshape(r, J * T, m).transpose(1, 2) @ H.reshape(r, J * T, m)

    @staticmethod
    def backward(ctx: Any, *grads: torch.Tensor) -> tuple[torch.Tensor, None]:
        (g,) = grads
        (Hs,) = ctx.saved_tensors
        r, J, T, m = Hs.shape
        gs = g + g.transpose(1, 2)
        return (Hs.reshape(r, J * T, m) @ gs).reshape(r, J, T, m), None


def signed_gram(H: torch.Tensor, sign: torch.Tensor) -> torch.Tensor:
    """``Σ_S sign_S H[:, S]ᵀ H[:, S]`` → ``[r, m, m]`` (differentiable in H)."""
    out: torch.Tensor = _SignedGram.apply(H, sign)
    return out


def closed_forms(theta: torch.Tensor, week_pairs: Sequence[tuple[int, int]] | None = None,
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Exact model statistics for all terms (differentiable in ``theta``).

    Args:
        theta: ``[T, r, k, m]`` slot logits.
        week_pairs: ordered week pairs (i, j) of q_across; default consecutive (i, i+1).

    Returns:
        ``q_single[r, m]``, ``q_within[r, m, m]`` (symmetric; its diagonal is meaningless —
        only o1 ≠ o2 are statistics), ``q_across[len(week_pairs), m, m]``.
    """
    T, r, k, _ = theta.shape
    pairs = [(i, i + 1) for i in range(r - 1)] if week_pairs is None else list(week_pairs)
    H = subset_expansion(slot_probabilities(theta))
    A = presence(H)  # [r, T, m]
    G = torch.cat([A.unsqueeze(1), H[:, 1:]], dim=1)
    del H
    q_within = signed_gram(G, subset_signs(k, theta.dtype, theta.device)) / T
    q_single = A.mean(dim=1)
    if pairs:
        left = torch.stack([A[i] for i, _ in pairs])
        right = torch.stack([A[j] for _, j in pairs])
        q_across = left.transpose(1, 2) @ right / T
    else:
        q_across = theta.new_zeros((0, theta.shape[3], theta.shape[3]))
    return q_single, q_within, q_across
