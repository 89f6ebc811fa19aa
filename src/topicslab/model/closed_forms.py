"""Exact closed-form statistics of the type mixture for all terms at once (Dick et al. §5, App. A,
paper Appendix A), as a few dense tensor products.

Public names:
    slot_probabilities(theta) -> P            softmax over topics, ``[T, r, k, m]``
    subset_expansion(P) -> H                  ``H[i, S, t, o]`` for every subset S of slots
    presence(H) -> A                          ``A[i, t, o] = Pr(o ∈ S_i | I = t)``
    closed_forms(theta, week_pairs) -> (q_single[r, m], q_within[r, m, m], q_across[p, m, m])
    persistent_forms(theta, log_stay, lags) -> (q_single[m], q_within[m, m], q_across[l, m, m])
    signed_gram(H, sign)                      ``Σ_S sign_S H_S^T H_S`` with a one-product backward
    weighted_gram(H, w)                       ``Σ_rows w_row h_rowᵀ h_row``, differentiable in w
    subset_signs(k, dtype)                    the signs of the expansion
    kept_rows(norms, tolerance) -> idx        the expansion's rows a fit step needs

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

Truncating the expansion (``tolerance``). Row S of a component contributes the rank-one
matrix ±w h_S h_Sᵀ, of Frobenius norm w‖h_S‖². For |S| ≥ 2, h_S(o) is a product of two or more
slot probabilities and nearly every such row is tiny: on the default fit of a 1M-user release,
dropping all but 4,600 of the 15,500 rows (S ≠ ∅) changes the pair statistics by less than
1e-3 of the DP noise's Frobenius norm (benchmarks/RESULTS.md). ``tolerance > 0`` drops the
smallest rows whose norms add up to at most ``tolerance``, so every pair statistic changes by
at most that much in Frobenius norm (triangle inequality) while the Gram products, most of a
fit step, shrink with the rows kept.
The presence rows (the ∅ block) are always kept, so q_single and the diagonal stay exact.
``tolerance = 0`` (the default) is the exact expansion. For persistent types the rows are
chosen from norms computed without autograd (``_expansion_norms``, a product of two halves
of the slots) and only the kept rows are then computed with it (``_expansion_rows``); a Gram
product on a CPU multiplies only the blocks on and above its diagonal (``_symmetric_product``).
Together: a default fit of 300 steps in 50 s instead of 67 s of one core, J the same to 7
digits (benchmarks/RESULTS.md).

Persistent types (``persistent_forms``). A type t has M *modes* (weekly themes) with weights
w_tμ; each mode has its own k slot laws P_tμs, shared by all weeks. In week 0 the user's mode is
drawn from w_t and its slots from the mode's laws. In every later week the mode is kept with
probability ρ_t (the type's *mode stay*) — and then each slot keeps last week's topic with
probability σ_tμs (its *slot stay*), else draws afresh — or, with probability 1 − ρ_t, a new
mode is drawn from w_t and all its slots afresh. The chain is stationary: every week has the
law of week 0, so with components c = (t, μ) weighted by w_c/T,

    q_single(o) = Σ_c (w_c/T) A_c(o),   q_within = Σ_c (w_c/T) W_c   (the paper's per-type
    forms above, one component per type-mode).

Weeks ℓ apart: with probability ρ_t^ℓ the mode was never redrawn and each slot is a Markov
chain with stay σ (unchanged with probability σ^ℓ); otherwise the later week is a fresh draw
from the type, independent of the earlier one given t:

    q_across(ℓ) = Σ_c (ρ_t^ℓ w_c/T) C_c^ℓ + Σ_t ((1 − ρ_t^ℓ)/T) Ā_t ⊗ Ā_t,   Ā_t = Σ_μ w_tμ A_tμ.

C_c^ℓ is one component's slot-chain term. With a = P_s[o1], b = P_s[o2], a slot's factor of
Pr(o1 ∉ S_i, o2 ∉ S_{i+ℓ}) is 1 − a − b + (1 − σ^ℓ)ab (o1 ≠ o2), and (1 − a)(1 − b) − σ^ℓ ab
expands exactly like the within-week product:

    C(o1, o2) = A(o1)A(o2) + Σ_{S≠∅} (−1)^{|S|} σ_S^ℓ h_S(o1) h_S(o2),

σ_S = Π_{s∈S} σ_s: the same signed Gram with block S scaled by σ_S^{ℓ/2} on both sides. On the
diagonal (o1 = o2 = o) the factor is (1 − a)(1 − a + σ^ℓ a), so C(o, o) = A² + Π_s x_s − Π_s y_s
with x_s = (1 − a)(1 − a + σ^ℓ a), y_s = (1 − a)²; the difference of products is summed as a
telescope of non-negative terms (no cancellation in float32). One mode (M = 1) is a type whose
slots stay with probability ρ_t σ_ts; ρ = σ = 0 is the paper's type with identical weeks.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from topicslab._checks import is_integer, number, refuse
from topicslab.model._telescope import telescope

__all__ = [
    "closed_forms",
    "kept_rows",
    "persistent_forms",
    "presence",
    "signed_gram",
    "slot_probabilities",
    "subset_expansion",
    "subset_signs",
    "weighted_gram",
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
        return torch.stack([_rows_times(Hs[i].reshape(J * T, m), gs[i]) for i in range(r)]
                           ).reshape(r, J, T, m), None


#: column blocks of ``_symmetric_product`` on a CPU: 4 computes 10 of 16 blocks (measured:
#: 16 instead of 22 ms of one core for the default fit's 4,900 × 469 rows, and no gain past 4)
_CPU_BLOCKS = 4


#: rows per block of ``_rows_times`` on a CPU (measured, one core: 27.5 ms per 256-row blocks
#: against 46.3 ms for one product of the default fit's 5,300 × 469 rows by 469 × 469; 128
#: and 384 the same as 256)
_CPU_ROW_BLOCK = 256


def _rows_times(X: torch.Tensor, S: torch.Tensor) -> torch.Tensor:
    """``X @ S`` for a tall ``X [n, m]`` and a square ``S [m, m]``.

    On a CPU the rows go through in blocks: MKL multiplies a tall matrix with an odd number of
    columns (469 topics) at half the rate it reaches on blocks of a few hundred rows, whose
    operands stay in the cache; on a GPU one product is fastest.
    """
    n = X.shape[0]
    if X.device.type != "cpu" or n <= 2 * _CPU_ROW_BLOCK:
        return X @ S
    out = X.new_empty((n, S.shape[1]))
    for lo in range(0, n, _CPU_ROW_BLOCK):
        torch.mm(X[lo:lo + _CPU_ROW_BLOCK], S, out=out[lo:lo + _CPU_ROW_BLOCK])
    return out


def _symmetric_product(Y: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
    """``Yᵀ X`` for a product known to be symmetric (Y = X scaled by row), ``[m, m]``.

    On a CPU only the blocks on and above the diagonal are multiplied, the others are their
    transposes (BLAS has no weighted ``syrk``); on a GPU one product is faster than several.
    """
    m = X.shape[1]
    if X.device.type != "cpu" or m < 2 * _CPU_BLOCKS:
        return Y.T @ X
    cuts = [round(i * m / _CPU_BLOCKS) for i in range(_CPU_BLOCKS + 1)]
    G = X.new_empty((m, m))
    for lo, hi in itertools.pairwise(cuts):
        G[lo:hi, lo:] = Y[:, lo:hi].T @ X[:, lo:]
        G[hi:, lo:hi] = G[lo:hi, hi:].T
    return G


class _WeightedGram(torch.autograd.Function):
    """``G = Σ_rows w_row h_row h_rowᵀ`` over rows (S, c) of ``H[J, C, m]`` with row weights
    ``w[J, C]``, differentiable in both; the backward is one product.

    With ``M = H (g + gᵀ)``: ``dL/dH = w ⊙ M`` and ``dL/dw = ½ Σ_o M ⊙ H``. Weighting rows
    here, instead of scaling H by √w before a plain Gram, saves two passes over H forward and
    four backward (measured: the elementwise products were half of a persistent fit step).
    """

    @staticmethod
    def forward(ctx: Any, H: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        J, C, m = H.shape
        ctx.save_for_backward(H, w)
        return _symmetric_product((H * w.unsqueeze(-1)).reshape(J * C, m), H.reshape(J * C, m))

    @staticmethod
    def backward(ctx: Any, *grads: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        (g,) = grads
        H, w = ctx.saved_tensors
        J, C, m = H.shape
        M = _rows_times(H.reshape(J * C, m), g + g.T).reshape(J, C, m)
        # (constant weights, as the truncated paper forms pass, need no gradient pass)
        dw = 0.5 * (M * H).sum(dim=-1) if ctx.needs_input_grad[1] else None
        return M * w.unsqueeze(-1), dw


def weighted_gram(H: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """``Σ_{j,c} w[j, c] H[j, c]ᵀ H[j, c]`` → ``[m, m]`` (differentiable in H and w)."""
    out: torch.Tensor = _WeightedGram.apply(H, w)
    return out


def signed_gram(H: torch.Tensor, sign: torch.Tensor) -> torch.Tensor:
    """``Σ_S sign_S H[:, S]ᵀ H[:, S]`` → ``[r, m, m]`` (differentiable in H)."""
    out: torch.Tensor = _SignedGram.apply(H, sign)
    return out


def kept_rows(norms: torch.Tensor, tolerance: float) -> torch.Tensor:
    """Indices (ascending) of the rows of ``norms`` (``[J, C]`` Frobenius norms of the rows'
    rank-one terms, flattened row-major) kept when the smallest rows whose norms add up to at
    most ``tolerance`` are dropped; rows of block 0 (the presence rows) are always kept."""
    flat = norms.detach().reshape(-1).to(torch.float64)
    C = norms.shape[1]
    if flat.device.type == "cpu":
        # NumPy's sort (AVX-512 where the CPU has it): 0.15 ms for the default fit's 15,500
        # rows against torch's 0.83 ms, twice or more a step (measured)
        order = torch.from_numpy(np.argsort(flat[C:].numpy())) + C
    else:
        order = torch.argsort(flat[C:]) + C
    dropped = torch.cumsum(flat[order], dim=0) <= float(tolerance)
    keep = torch.cat([torch.arange(C, device=flat.device), order[~dropped]])
    return torch.sort(keep).values


def _tolerance(value: object) -> float:
    """``tolerance`` checked: a finite number >= 0 (NaN or a negative one computed the exact
    expansion, inf dropped every row but the presence rows, text was a TypeError)."""
    return number(value, "tolerance", lo=0,
                  why="the Frobenius error allowed in each pair statistic (0: exact)")


def _tensor(value: object, field: str, shape: str, ndim: int) -> torch.Tensor:
    """``value`` if it is a floating tensor of ``ndim`` dimensions (``shape`` names them),
    none of them empty: another rank was NumPy's or torch's unpacking error."""
    if not isinstance(value, torch.Tensor) or not value.is_floating_point():
        raise refuse(f"{field} must be a floating-point torch tensor {shape}, got "
                     f"{type(value).__name__}"
                     f"{'' if not isinstance(value, torch.Tensor) else ' of ' + str(value.dtype)}",
                     field)
    if value.dim() != ndim or 0 in value.shape:
        raise refuse(f"{field} must be a tensor {shape}, got shape {list(value.shape)}", field)
    return value


def _expansion_memory(k: int, rows: int, m: int, itemsize: int) -> None:
    """Refuse an expansion of 2^k subsets of ``rows`` slot laws over ``m`` topics that cannot
    fit in memory (a model of k = 22 asked torch for 8 GB blocks). Checked only past 2^26
    elements: the fit calls these forms every step, and its sizes stay far below."""
    elements = 2.0**k * rows * m
    if elements > 2**26:
        from topicslab._resources import require_memory

        require_memory(3.0 * itemsize * elements, f"the subset expansion of k = {k} slots "
                       f"(2^{k} subsets of {rows:,} slot laws)", field="theta")


def closed_forms(theta: torch.Tensor, week_pairs: Sequence[tuple[int, int]] | None = None,
                 tolerance: float = 0.0,
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Exact model statistics for all terms (differentiable in ``theta``).

    Args:
        theta: ``[T, r, k, m]`` slot logits.
        week_pairs: ordered week pairs (i, j) of q_across; default consecutive (i, i+1).
        tolerance: the Frobenius error allowed in each week's q_within (module docstring;
            0: exact).

    Returns:
        ``q_single[r, m]``, ``q_within[r, m, m]`` (symmetric; its diagonal is meaningless —
        only o1 ≠ o2 are statistics), ``q_across[len(week_pairs), m, m]``.
    """
    tolerance = _tolerance(tolerance)
    T, r, k, m_ = _tensor(theta, "theta", "[T, r, k, m]", 4).shape
    _expansion_memory(k, T * r, m_, theta.element_size())
    pairs = [(i, i + 1) for i in range(r - 1)] if week_pairs is None else list(week_pairs)
    if not all(isinstance(p, tuple | list) and len(p) == 2
               and all(is_integer(w) and 0 <= w < r for w in p)
               for p in pairs):  # (an IndexError out of the expansion, or a wrong week)
        raise refuse(f"week_pairs must be pairs (i, j) of weeks in 0..{r - 1}, got "
                     f"{week_pairs!r:.80}", "week_pairs")
    H = subset_expansion(slot_probabilities(theta))
    A = presence(H)  # [r, T, m]
    G = torch.cat([A.unsqueeze(1), H[:, 1:]], dim=1)
    del H
    sign = subset_signs(k, theta.dtype, theta.device)
    if tolerance > 0:
        # each week keeps its own rows (its weights are all 1/T)
        flat = G.reshape(r, -1, G.shape[-1])
        rows = []
        for i in range(r):
            with torch.no_grad():
                keep = kept_rows((G[i] * G[i]).sum(dim=-1) / T, tolerance)
            w = (sign[keep // T] / T).unsqueeze(0)  # row j is subset j // T, type j % T
            rows.append(weighted_gram(flat[i].index_select(0, keep).unsqueeze(0), w))
        q_within = torch.stack(rows)
    else:
        q_within = signed_gram(G, sign) / T
    q_single = A.mean(dim=1)
    if pairs:
        left = torch.stack([A[i] for i, _ in pairs])
        right = torch.stack([A[j] for _, j in pairs])
        q_across = left.transpose(1, 2) @ right / T
    else:
        q_across = theta.new_zeros((0, theta.shape[3], theta.shape[3]))
    return q_single, q_within, q_across


def _subset_bits(k: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """``bits[S, s] = 1`` when slot s is in subset S (subset index bits, as in H)."""
    return torch.tensor([[(j >> s) & 1 for s in range(k)] for j in range(2 ** k)],
                        dtype=dtype, device=device)


def _log_expansion(logP: torch.Tensor, log1mP: torch.Tensor) -> torch.Tensor:
    """``H[S, c, o] = h_S(o)`` for every non-empty subset S, from ``logP``/``log1mP``
    ``[C, k, m]`` (log P and log(1 − P), both ≤ 0, −inf clamped).

    ``log h_S = Σ_{s∈S} log P_s + Σ_{s∉S} log(1 − P_s)``: one product of the subsets'
    membership bits with the stacked logs, then one ``exp``. Every summand is ≤ 0, so nothing
    cancels: the relative error of h_S is a few ulp times |log h_S|, small exactly where h_S
    matters. Autograd of this takes two passes over H backward; the slot-by-slot doubling of
    ``subset_expansion`` took ~2^(k+1) elementwise kernels each way (measured: half of a
    persistent fit step).
    """
    C, k, m = logP.shape
    # the non-empty subsets' membership bits [2^k − 1, 2k] (in S, then not in S) times the
    # stacked logs [2k, C·m]
    bits = _subset_bits(k, logP.dtype, logP.device)[1:]
    member = torch.cat([bits, 1 - bits], dim=1)
    logs = torch.cat([logP, log1mP], dim=1).transpose(0, 1).reshape(2 * k, C * m)
    return torch.exp(member @ logs).view(-1, C, m)


def _expansion_norms(P: torch.Tensor, one_minus: torch.Tensor) -> torch.Tensor:
    """``Σ_o h_S(o)²`` for every non-empty subset S and component: ``[2^k − 1, C]``, no
    gradient, from ``P`` and ``1 − P`` ``[C, k, m]``.

    ``h_S(o)² = Π_{s∈S} P_s(o)² Π_{s∉S} (1 − P_s(o))²`` splits over two groups of slots:
    with ``U[c, S₁, o]`` the products over the first ⌊k/2⌋ slots and ``V[c, S₂, o]`` over
    the others, the norms are ``U Vᵀ`` per component, a small batched product, instead of
    2^k − 1 rows of m exponentials (measured: 3.6× faster for the default model; the same
    norms to 1e-5 relative in float32, which only rank rows for ``kept_rows``). Products too
    small for the float underflow to 0 here as the exponentials did."""
    C, k, m = P.shape
    with torch.no_grad():
        inside, outside = torch.square(P), torch.square(one_minus)

        def products(slots: range) -> torch.Tensor:
            # bit i of a subset index is slot slots[i]: each slot doubles the table
            X = P.new_empty((C, 2 ** len(slots), m))
            X[:, 0] = 1.0
            size = 1
            for j in slots:
                torch.mul(X[:, :size], inside[:, j:j + 1], out=X[:, size:2 * size])
                X[:, :size] *= outside[:, j:j + 1]
                size *= 2
            return X

        half = k // 2
        table = torch.bmm(products(range(half)), products(range(half, k)).transpose(1, 2))
        # subset S = S₁ + 2^half S₂
        return table.transpose(1, 2).reshape(C, 2 ** k)[:, 1:].T


def _expansion_rows(logP: torch.Tensor, log1mP: torch.Tensor,
                    rows: torch.Tensor) -> torch.Tensor:
    """``h_S(o)`` for the given rows only: ``rows`` index ``_log_expansion``'s flattened
    ``[2^k − 1, C]`` (row ``S − 1``, component ``c``); returns ``[len(rows), m]``.

    The same sum of non-positive logs as ``_log_expansion``, gathered per slot: for a fit
    step that keeps a third of the rows (``kept_rows``) this is a third of the work forward,
    and the backward scatters into the ``[C, 2, k, m]`` logs instead of filling and
    multiplying a gradient of every row (measured: a quarter of a persistent fit step).
    """
    C, k, m = logP.shape
    subset = rows // C + 1
    comp = rows % C
    logs = torch.stack([log1mP, logP], dim=1).reshape(C * 2 * k, m)  # [c, in S?, slot]
    slots = torch.arange(k, device=rows.device)
    member = (subset.unsqueeze(1) >> slots) & 1  # [R, k]
    # one bag of k log rows per expansion row: a summed gather whose backward is one
    # scatter into the logs
    bags = (comp.unsqueeze(1) * 2 + member) * k + slots
    return torch.exp(torch.nn.functional.embedding_bag(bags, logs, mode="sum"))


def persistent_forms(theta: torch.Tensor, mode_weights: torch.Tensor, mode_stay: torch.Tensor,
                     log_slot_stay: torch.Tensor, lags: Sequence[int] = (1,),
                     tolerance: float = 0.0,
                     ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Exact statistics of persistent types with weekly modes (module docstring);
    differentiable in every argument.

    Args:
        theta: ``[T, M, k, m]`` slot logits of each type's modes (shared by all weeks).
        mode_weights: ``[T, M]`` each type's mode probabilities (rows sum to 1).
        mode_stay: ``[T]`` probability that a week keeps last week's mode (ρ).
        log_slot_stay: ``[T, M, k]`` log of each slot's stay probability (σ; −inf for 0).
        lags: week distances ℓ ≥ 1 of the across-week statistics (1 = consecutive weeks).
        tolerance: the Frobenius error allowed in q_within and each q_across off the
            diagonal (module docstring; 0: exact). Each of them drops its own rows, by its
            own row weights (w/T within, σ_S^ℓ ρ^ℓ w/T across).

    Returns:
        ``q_single[m]``, ``q_within[m, m]`` (diagonal meaningless), ``q_across[len(lags), m, m]``.
    """
    tolerance = _tolerance(tolerance)
    T, M, k, m = _tensor(theta, "theta", "[T, M, k, m]", 4).shape
    _expansion_memory(k, T * M, m, theta.element_size())
    for field, value, shape in (("mode_weights", mode_weights, [T, M]),
                                ("mode_stay", mode_stay, [T]),
                                ("log_slot_stay", log_slot_stay, [T, M, k])):
        names = {1: "[T]", 2: "[T, M]", 3: "[T, M, k]"}[len(shape)]
        if list(_tensor(value, field, names, len(shape)).shape) != shape:
            raise refuse(f"{field} must be a tensor {names} = {shape} (theta's), got shape "
                         f"{list(value.shape)}", field)
    if not all(is_integer(g) and g >= 1 for g in lags):
        raise refuse(f"lags must be week distances >= 1, got {lags!r:.80}", "lags")
    C = T * M
    logP = torch.log_softmax(theta, dim=-1).reshape(C, k, m)
    P = torch.exp(logP)
    # −1000 is "log 0" at every precision (e^−1000 = 0) and keeps 0 · (−inf) out of products
    log1mP = torch.log1p(-P).clamp(min=-1000.0)
    # Pr(o ∈ S) = 1 − Π_s (1 − P_s) without cancellation (expm1)
    A = -torch.expm1(log1mP.sum(dim=1))  # [C, m]
    one_minus = torch.exp(log1mP)
    w = mode_weights.reshape(C)
    sign = subset_signs(k, theta.dtype, theta.device).unsqueeze(-1)  # [2^k, 1]
    log_slot_stay = log_slot_stay.reshape(C, k).clamp(min=-1000.0)
    log_sigma_S = _subset_bits(k, theta.dtype, theta.device) @ log_slot_stay.T  # [2^k, C]
    # each statistic's rows: the within Gram's (None: all rows), then each lag's
    keeps: list[torch.Tensor | None] = [None] * (1 + len(lags))
    if tolerance > 0:
        # rows chosen on the whole expansion without autograd, then only the kept rows
        # computed with it (the presence rows, block 0, are always kept: their norm is moot).
        # Each statistic drops its own smallest rows: a row's across weight σ_S^ℓ ρ^ℓ w/T is
        # at most its within weight w/T and most slots rarely stay, so the across Grams
        # keep about half the within Gram's rows (measured, benchmarks/RESULTS.md)
        with torch.no_grad():
            sq = _expansion_norms(P.detach(), one_minus.detach())
            empty = torch.zeros_like(w).unsqueeze(0)
            within_w = (w / T).abs().detach()
            keeps[0] = kept_rows(torch.cat([empty, within_w * sq]), tolerance)
            for i, lag in enumerate(lags, start=1):
                stay = torch.exp(float(lag) * log_sigma_S[1:].detach()) * (
                    mode_stay.detach() ** int(lag)).repeat_interleave(M)
                keeps[i] = kept_rows(torch.cat([empty, (stay * within_w * sq).abs()]),
                                     tolerance)
        union = torch.unique(torch.cat([kk for kk in keeps if kk is not None]))
        G = torch.cat([A, _expansion_rows(logP, log1mP, union[C:] - C)])
    else:
        G = torch.cat([A.unsqueeze(0), _log_expansion(logP, log1mP)], dim=0)  # A: ∅ block

    def gram(weights: torch.Tensor, keep: torch.Tensor | None) -> torch.Tensor:
        """``weighted_gram`` of the rows ``keep`` with row weights ``[2^k, C]`` (all rows
        without a tolerance)."""
        if keep is None:
            return weighted_gram(G, weights)
        rows = G
        if len(keep) != len(union):  # (the union is sorted, so are the rows of each set)
            rows = G.index_select(0, torch.searchsorted(union, keep))
        return weighted_gram(rows.unsqueeze(0), weights.reshape(1, -1).index_select(1, keep))
    q_within = gram(sign * (w / T), keeps[0])
    q_single = (w.view(C, 1) * A).sum(dim=0) / T
    Abar = (mode_weights.unsqueeze(-1) * A.view(T, M, m)).sum(dim=1)  # [T, m]
    eye = torch.eye(m, dtype=torch.bool, device=theta.device)
    across = []
    for i, lag in enumerate(lags, start=1):
        kept = mode_stay ** int(lag)  # [T]: the mode was never redrawn
        comp = kept.repeat_interleave(M) * w / T  # [C]
        # row (S, c) weighs sign_S σ_S^ℓ comp_c; the ∅ block (A ⊗ A) has σ_∅ = 1
        qa = gram(sign * torch.exp(float(lag) * log_sigma_S) * comp, keeps[i])
        # the diagonal: Π_s x_s − Π_s y_s as a telescope of non-negative terms,
        # x = (1 − a)(1 − a + σa), y = (1 − a)², d = x − y = (1 − a)σa
        tele = telescope(one_minus, P, torch.exp(float(lag) * log_slot_stay))
        diag = (comp.view(C, 1) * (A ** 2 + tele)).sum(dim=0)
        qa = torch.where(eye, torch.diag_embed(diag), qa)
        # the mode was redrawn: the two weeks are independent given the type
        qa = qa + (Abar.T * ((1 - kept) / T).view(1, T)) @ Abar
        across.append(qa)
    q_across = torch.stack(across) if across else theta.new_zeros((0, m, m))
    return q_single, q_within, q_across
