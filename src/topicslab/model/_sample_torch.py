"""The sampler's draw in PyTorch (for CUDA): the same users as the numba kernel, bit for bit.

``topicslab.model.sample`` draws with a numba kernel on the CPU; ``device="cuda"`` (or
``"auto"`` where CUDA is available) draws here instead. Every random decision is the same
counter-based hash of (seed, user, week, slot) as in ``topicslab.api.hashing``, evaluated on
int64 tensors: XOR, addition and multiplication of int64 wrap modulo 2**64 exactly as uint64 does
(two's complement), constants of 2**63 and above are given as their signed equivalents, and the
right shifts of the unsigned arithmetic are logical shifts (an arithmetic shift, then a mask).
The floats compared are the kernel's: ``(h >>> 11) / 2**53`` and ``(h & 0xFFFFFFFF) / 2**32``
are exact in float64, and the tables compared against are the same float64 arrays.

The draw is vectorised over users; only the weeks and the k slots are loops. The kernel's
order of users by type (for its cache) does not change any user's draw, so it is not needed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
import torch

from topicslab.api import hashing
from topicslab.model.sample import _INV32, _INV53, _TYPE_WORD

if TYPE_CHECKING:
    from topicslab.model.sample import _Sampler

_U64 = 1 << 64


def _s64(x: int) -> int:
    """The int64 with the bits of the uint64 ``x`` (taken modulo 2**64)."""
    x %= _U64
    return x - _U64 if x >= 1 << 63 else x


# the constants of ``hashing`` (uint64 there), as Python ints and their int64 bit patterns
_M1 = int(hashing._M1)
_M2 = int(hashing._M2)
_M1_S = _s64(_M1)
_M2_S = _s64(_M2)
_GOLDEN_S = _s64(int(hashing._GOLDEN))


def _shr(x: torch.Tensor, s: int) -> torch.Tensor:
    """Logical right shift of int64 bits read as uint64."""
    return (x >> s) & ((1 << (64 - s)) - 1)


def _mix64(z: torch.Tensor) -> torch.Tensor:
    z = (z ^ _shr(z, 30)) * _M1_S
    z = (z ^ _shr(z, 27)) * _M2_S
    return z ^ _shr(z, 31)


def _hash3(key: int, a: torch.Tensor, b: int, c: int) -> torch.Tensor:
    """``hashing.hash3`` with a tensor ``a`` and integer ``key``, ``b``, ``c``."""
    h = _mix64(a * _GOLDEN_S ^ _s64(key))
    h = _mix64(h ^ _s64(b * _M1))
    return _mix64(h ^ _s64(c * _M2))


def _next_word(h: torch.Tensor) -> torch.Tensor:
    return _mix64(h + _GOLDEN_S)


def _below(h: torch.Tensor, n: int) -> torch.Tensor:
    """``hashing.below``: ((h >>> 32) · n) >>> 32, the product < 2**63 for n < 2**31."""
    return _shr(_shr(h, 32) * n, 32)


def _unit53(h: torch.Tensor) -> torch.Tensor:
    return _shr(h, 11).to(torch.float64) * _INV53


class TorchTables:
    """The sampler's tables on a torch device (built once per ``sample`` call)."""

    def __init__(self, s: _Sampler, device: torch.device) -> None:
        prob, alias = s.tables.prob, s.tables.alias
        self.device = device
        self.T, self.R, self.k, self.m = (int(d) for d in prob.shape)
        self.prob = torch.as_tensor(np.ascontiguousarray(prob).reshape(-1), device=device)
        self.alias = torch.as_tensor(
            np.ascontiguousarray(alias).reshape(-1).astype(np.int64), device=device)
        self.wmap = [int(x) for x in s.wmap]
        self.persistent = s.stay.shape[0] > 0
        self.stay = torch.as_tensor(np.ascontiguousarray(s.stay, dtype=np.float64),
                                    device=device)
        self.mode_cum = torch.as_tensor(np.ascontiguousarray(s.mode_cum, dtype=np.float64),
                                        device=device)
        self.mode_stay = torch.as_tensor(np.ascontiguousarray(s.mode_stay, dtype=np.float64),
                                         device=device)
        self.key = int(s.key)
        self.weeks = s.weeks


def draw_torch(tabs: TorchTables, first: int, n: int, raw: bool) -> torch.Tensor:
    """Users ``first .. first + n`` as an int16 tensor ``[n, weeks, k]`` on ``tabs.device``:
    the kernel's sets (sorted, distinct, ``-1`` last) or, with ``raw``, its slots."""
    dev = tabs.device
    k, m, R, weeks = tabs.k, tabs.m, tabs.R, tabs.weeks
    out = torch.empty((n, weeks, k), dtype=torch.int16, device=dev)
    if n == 0:
        return out
    uid = torch.arange(first, first + n, dtype=torch.int64, device=dev)
    types = _below(_hash3(tabs.key, uid, int(_TYPE_WORD), 0), tabs.T)
    slots = torch.zeros((n, k), dtype=torch.int64, device=dev)
    mode = torch.zeros(n, dtype=torch.int64, device=dev)
    if tabs.persistent:
        M = tabs.mode_cum.shape[1]
        cum = tabs.mode_cum[types, : M - 1]  # [n, M-1]
        mstay = tabs.mode_stay[types]
    for w in range(weeks):
        h = _hash3(tabs.key, uid, w, 1)
        kept = None
        if tabs.persistent:
            hm = _hash3(tabs.key, uid, w, 3)
            kept = (_unit53(hm) < mstay) if w > 0 else torch.zeros_like(uid, dtype=torch.bool)
            x = _unit53(_next_word(hm))
            # the kernel's ``while mode < M-1 and mode_cum[t, mode] <= x: mode += 1``: the
            # number of leading entries of mode_cum[t, :M-1] that are <= x
            fresh = torch.cumprod((cum <= x[:, None]).to(torch.int64), dim=1).sum(dim=1)
            mode = torch.where(kept, mode, fresh)
            fw = mode
            hs = _hash3(tabs.key, uid, w, 2)
            stay_u = tabs.stay[types, mode]  # [n, k]
        else:
            fw = torch.full_like(uid, tabs.wmap[w])
        base = ((types * R + fw) * k) * m  # [n]
        for s in range(k):
            h = _next_word(h)
            j = _below(h, m)
            idx = base + s * m + j
            low = (h & 0xFFFF_FFFF).to(torch.float64) * _INV32
            new = torch.where(low < tabs.prob[idx], j, tabs.alias[idx])
            if kept is not None:
                hs = _next_word(hs)
                keep = kept & (_unit53(hs) < stay_u[:, s])
                new = torch.where(keep, slots[:, s], new)
            slots[:, s] = new
        if raw:
            out[:, w, :] = slots.to(torch.int16)
            continue
        srt = torch.sort(slots, dim=1).values
        rep = torch.zeros_like(srt, dtype=torch.bool)
        rep[:, 1:] = srt[:, 1:] == srt[:, :-1]
        big = torch.iinfo(torch.int64).max
        compact = torch.sort(torch.where(rep, big, srt), dim=1).values
        out[:, w, :] = torch.where(compact == big, -1, compact).to(torch.int16)
    return out


def draw_numpy(tabs: TorchTables, first: int, n: int, raw: bool,
               out: npt.NDArray[np.int16] | None = None) -> npt.NDArray[np.int16]:
    """``draw_torch`` copied back to the host (into ``out`` when given)."""
    arr = draw_torch(tabs, first, n, raw).cpu().numpy()
    if out is None:
        return arr
    out[...] = arr
    return out
