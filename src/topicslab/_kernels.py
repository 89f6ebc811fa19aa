"""Small numba helpers shared by the kernels (private)."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, inline="always")
def sort_head(buf: np.ndarray, n: int) -> None:  # pragma: no cover
    """Sort ``buf[:n]`` in place: insertion sort for the handful of slots of a profile or a
    week's list, NumPy's sort past 16 (long raw lists)."""
    if n > 16:
        buf[:n].sort()
        return
    for e in range(1, n):
        t = buf[e]
        j = e
        while j > 0 and buf[j - 1] > t:
            buf[j] = buf[j - 1]
            j -= 1
        buf[j] = t


@njit(cache=True)
def popcount(x: np.uint64) -> int:  # pragma: no cover
    """Number of set bits of a 64-bit word (SWAR: no loop over the bits)."""
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return int((x * np.uint64(0x0101010101010101)) >> np.uint64(56))
