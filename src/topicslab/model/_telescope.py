"""The diagonal of a persistent component's across-week statistic: ``Π_s x_s − Π_s y_s``
summed as a telescope of non-negative terms (``closed_forms.persistent_forms``).

With u = 1 − P_s[o] and σ a slot's stay over the lag, ``y_s = u²``, ``d_s = u P σ`` and
``x_s = y_s + d_s``; then ``Π x − Π y = Σ_j (Π_{s<j} x_s) d_j (Π_{s>j} y_s)``, every term
≥ 0, so nothing cancels in float32 (closed_forms' module docstring).

Public names:
    telescope(u, P, stay) -> [C, m]   the telescope of every component and topic,
                                      differentiable in all three
    telescope_tensors(u, P, stay)     the same by tensor operations (any device)

On a CPU the forward and the backward are each one compiled pass over the components, a
component's ``[k, m]`` blocks in the cache and the topics the inner, vectorised loops: torch's
autograd of the same sum took ~20 elementwise kernels of ``[C, m]`` forward and twice that
backward, a fifth of a default fit step (measured, benchmarks/RESULTS.md). The forward takes
the same float operations in the same order as the tensor version (``telescope_tensors``,
kept for other devices), so its values are the same bit for bit. The backward sums
non-negative terms too:

    ∂/∂d_i = B_i F_i + B_i E_i,   ∂/∂y_i = B_i E_i + F_i D_i,

with ``B_i = Π_{s<i} x_s``, ``F_i = Π_{s>i} y_s``, ``E_i = Σ_{j>i} (Π_{i<s<j} x_s) d_j F_j``
(``∂/∂x_i``, over B_i) and ``D_i = Σ_{j<i} B_j d_j Π_{j<s<i} y_s`` (``∂/∂y_i`` through the
F of earlier terms, over F_i), each a short recurrence.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numba
import numpy as np
import torch
from numba import njit, prange

__all__ = ["telescope", "telescope_tensors"]


def telescope_tensors(u: torch.Tensor, P: torch.Tensor, stay: torch.Tensor) -> torch.Tensor:
    """The telescope by tensor operations (any device; autograd differentiates it).
    ``u, P``: ``[C, k, m]``; ``stay``: ``[C, k]``."""
    y = (u * u).unbind(dim=1)
    d = (u * P * stay.unsqueeze(-1)).unbind(dim=1)
    x = [yj + dj for yj, dj in zip(y, d, strict=True)]
    k = len(x)
    ones = torch.ones_like(x[0])
    before, after = [ones], [ones]
    for j in range(k - 1):
        before.append(before[-1] * x[j])
        after.append(after[-1] * y[k - 1 - j])
    after = after[::-1]
    return sum((b * dj * a for b, dj, a in zip(before, d, after, strict=True)),
               torch.zeros_like(x[0]))


@njit(cache=True, inline="always")
def _slot_terms(u: np.ndarray, P: np.ndarray, stay: np.ndarray, c: int, x: np.ndarray,
                y: np.ndarray, d: np.ndarray, after: np.ndarray,
                before: np.ndarray) -> None:  # pragma: no cover (compiled)
    """``[k, m]`` blocks of component c: x, y, d of each slot and topic, ``after[j] =
    Π_{s>j} y_s`` and ``before[j] = Π_{s<j} x_s``, in the tensor version's order (after[k-1]
    = 1, after[j] = after[j+1]·y[j+1]; before[0] = 1, before[j] = before[j-1]·x[j-1]).
    Topics are the inner loops: contiguous, independent, vectorised by the compiler."""
    k, m = u.shape[1], u.shape[2]
    for s in range(k):
        w = stay[c, s]
        for o in range(m):
            us = u[c, s, o]
            y[s, o] = us * us
            d[s, o] = us * P[c, s, o] * w
            x[s, o] = y[s, o] + d[s, o]
    after[k - 1] = 1
    for s in range(k - 2, -1, -1):
        for o in range(m):
            after[s, o] = after[s + 1, o] * y[s + 1, o]
    before[0] = 1
    for s in range(1, k):
        for o in range(m):
            before[s, o] = before[s - 1, o] * x[s - 1, o]


@njit(cache=True, parallel=True)
def _forward(u: np.ndarray, P: np.ndarray, stay: np.ndarray,
             out: np.ndarray) -> None:  # pragma: no cover (compiled)
    C, k, m = u.shape
    for c in prange(C):
        x, y, d, after, before = np.empty((5, k, m), dtype=u.dtype)
        _slot_terms(u, P, stay, c, x, y, d, after, before)
        total = out[c]
        total[:] = 0
        for s in range(k):  # the terms added from 0 upwards, as the tensor version does
            for o in range(m):
                total[o] = total[o] + before[s, o] * d[s, o] * after[s, o]


@njit(cache=True, parallel=True)
def _backward(u: np.ndarray, P: np.ndarray, stay: np.ndarray, g: np.ndarray,
              du: np.ndarray, dP: np.ndarray,
              dstay: np.ndarray) -> None:  # pragma: no cover (compiled)
    C, k, m = u.shape
    for c in prange(C):
        x, y, d, after, before, gx = np.empty((6, k, m), dtype=u.dtype)
        e, dd = np.zeros((2, m), dtype=u.dtype)
        _slot_terms(u, P, stay, c, x, y, d, after, before)
        gc = g[c]
        # E_i from the last slot down, D_i from the first up (module docstring)
        for s in range(k - 1, -1, -1):
            for o in range(m):
                gx[s, o] = before[s, o] * e[o]
                e[o] = d[s, o] * after[s, o] + x[s, o] * e[o]
        for s in range(k):
            w = stay[c, s]
            total = 0.0  # (the stay's gradient, a sum over the m topics, in float64)
            for o in range(m):
                grad_d = (before[s, o] * after[s, o] + gx[s, o]) * gc[o]
                grad_y = (gx[s, o] + after[s, o] * dd[o]) * gc[o]
                dd[o] = dd[o] * y[s, o] + before[s, o] * d[s, o]
                us = u[c, s, o]
                ps = P[c, s, o]
                # y = u², d = u·P·σ
                du[c, s, o] = (us + us) * grad_y + ps * w * grad_d
                dP[c, s, o] = us * w * grad_d
                total += us * ps * grad_d
            dstay[c, s] = total


@contextlib.contextmanager
def _numba_threads() -> Iterator[None]:
    """numba's threads no more than torch's for the call: the fit picks torch's thread count
    by measurement (one on a busy machine, ``fit(threads=...)``), and the kernels follow it."""
    before = numba.get_num_threads()
    limit = int(getattr(numba.config, "NUMBA_NUM_THREADS", 1))
    numba.set_num_threads(max(1, min(torch.get_num_threads(), limit)))
    try:
        yield
    finally:
        numba.set_num_threads(before)


class _Telescope(torch.autograd.Function):
    """``telescope`` on a CPU: one compiled pass forward, one backward."""

    @staticmethod
    def forward(ctx: Any, u: torch.Tensor, P: torch.Tensor, stay: torch.Tensor) -> torch.Tensor:
        u, P, stay = u.contiguous(), P.contiguous(), stay.contiguous()
        ctx.save_for_backward(u, P, stay)
        out = u.new_empty((u.shape[0], u.shape[2]))
        with _numba_threads():
            _forward(u.detach().numpy(), P.detach().numpy(), stay.detach().numpy(),
                     out.numpy())
        return out

    @staticmethod
    @torch.autograd.function.once_differentiable  # (no second derivatives: say so if asked)
    def backward(ctx: Any, *grads: torch.Tensor) -> tuple[torch.Tensor, ...]:
        (g,) = grads
        u, P, stay = ctx.saved_tensors
        du, dP, dstay = torch.empty_like(u), torch.empty_like(P), torch.empty_like(stay)
        with _numba_threads():
            _backward(u.detach().numpy(), P.detach().numpy(), stay.detach().numpy(),
                      g.detach().contiguous().numpy(), du.numpy(), dP.numpy(), dstay.numpy())
        return du, dP, dstay


def telescope(u: torch.Tensor, P: torch.Tensor, stay: torch.Tensor) -> torch.Tensor:
    """``Σ_j (Π_{s<j} x_s) d_j (Π_{s>j} y_s)`` for every component and topic, ``[C, m]``
    (module docstring). ``u = 1 − P`` and ``P``: ``[C, k, m]``; ``stay``: ``[C, k]``, each
    slot's stay over the lag. Compiled on a CPU for float32 and float64 tensors, by tensor
    operations elsewhere; differentiable in all three."""
    if (u.dim() == 3 and u.shape[1] >= 1 and P.shape == u.shape
            and stay.shape == u.shape[:2] and u.dtype in (torch.float32, torch.float64)
            and P.dtype == u.dtype and stay.dtype == u.dtype
            and u.device.type == P.device.type == stay.device.type == "cpu"):
        # (the kernels index without bounds checks: other shapes, which broadcast or are
        # errors, take the tensor version)
        out: torch.Tensor = _Telescope.apply(u, P, stay)
        return out
    return telescope_tensors(u, P, stay)
