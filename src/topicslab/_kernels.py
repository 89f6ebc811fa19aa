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
