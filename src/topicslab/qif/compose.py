"""Channel composition on explicit matrices: cascade, choices, Kronecker and parallel products.

Equation numbers refer to Alvim et al., "The Privacy-Utility Trade-off in the Topics API"
(CCS 2024).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np
import numpy.typing as npt

from topicslab._checks import integer, is_real, value_shown
from topicslab.qif.core import Array, as_channel
from topicslab.qif.errors import QIFError, QIFParameterError


def _check_r(r: float) -> float:
    if not is_real(r):  # ("0.5" was a TypeError: '<=' not supported between float and str)
        raise QIFParameterError(f"the choice probability r must be a number, got {value_shown(r)}",
                                field="r")
    if not 0.0 <= r <= 1.0:
        raise QIFError(f"the choice probability r must lie in [0, 1], got {r}")
    return float(r)


def cascade(c: npt.ArrayLike, d: npt.ArrayLike) -> Array:
    """Cascade ``CD`` (matrix product): the output of ``C`` is the input of ``D``."""
    a, b = as_channel(c), as_channel(d, "d")
    if a.shape[1] != b.shape[0]:
        raise QIFError(f"cannot cascade {a.shape} into {b.shape}: outputs != inputs")
    return a @ b


def choice_labels(y1: Sequence[Hashable], y2: Sequence[Hashable]) -> list[Hashable]:
    """Output labels of an internal choice: ``Y1`` then the labels of ``Y2`` not in ``Y1``."""
    for labels, name in ((y1, "y1"), (y2, "y2")):  # (None: Python's TypeError)
        if isinstance(labels, str | bytes) or not isinstance(labels, Sequence | np.ndarray):
            raise QIFParameterError(f"{name} must be a sequence of output labels, got "
                                    f"{type(labels).__name__}", field=name)
    seen = set(y1)
    return [*y1, *(y for y in y2 if y not in seen)]


def internal_choice(c1: npt.ArrayLike, c2: npt.ArrayLike, r: float,
                    y1: Sequence[Hashable] | None = None,
                    y2: Sequence[Hashable] | None = None) -> Array:
    """Internal fixed-probability choice ``C1 (+)_r C2``, eq 4.

    Shared outputs (same label) get ``(1-r) C1 + r C2``; outputs of only one channel get that
    channel's scaled column. Without labels both channels must have the same outputs in the
    same order. Columns follow :func:`choice_labels`.
    """
    a, b = as_channel(c1, "c1"), as_channel(c2, "c2")
    rr = _check_r(r)
    if a.shape[0] != b.shape[0]:
        raise QIFError("an internal choice needs channels on the same secrets")
    if y1 is None and y2 is None:
        if a.shape != b.shape:
            raise QIFError("without output labels the channels must have the same shape")
        return (1.0 - rr) * a + rr * b
    l1 = list(y1) if y1 is not None else list(range(a.shape[1]))
    l2 = list(y2) if y2 is not None else list(range(b.shape[1]))
    if len(l1) != a.shape[1] or len(l2) != b.shape[1]:
        raise QIFError("output labels must match the number of columns")
    labels = choice_labels(l1, l2)
    col = {y: i for i, y in enumerate(labels)}
    out = np.zeros((a.shape[0], len(labels)))
    out[:, : a.shape[1]] += (1.0 - rr) * a
    # Columns of C2 are added on top: a shared label accumulates both contributions.
    for j, y in enumerate(l2):
        out[:, col[y]] += rr * b[:, j]
    return out


def external_choice(c1: npt.ArrayLike, c2: npt.ArrayLike, r: float) -> Array:
    """External fixed-probability choice ``C1 [+]_r C2``, eq 29: disjoint union of outputs.

    The observer learns which channel ran, so outputs are never merged.
    """
    a, b = as_channel(c1, "c1"), as_channel(c2, "c2")
    rr = _check_r(r)
    if a.shape[0] != b.shape[0]:
        raise QIFError("an external choice needs channels on the same secrets")
    return np.hstack([(1.0 - rr) * a, rr * b])


def kron(a: npt.ArrayLike, b: npt.ArrayLike) -> Array:
    """Kronecker product, eq 24: ``(A (x) B)[(x, x'), (y, y')] = A[x, y] B[x', y']``.

    Models independent secrets (e.g. independent users or independent epochs) observed
    through independent channels; rows and columns are in lexicographic pair order.
    """
    return np.asarray(np.kron(as_channel(a, "a"), as_channel(b, "b")), dtype=np.float64)


def kron_power(a: npt.ArrayLike, n: int) -> Array:
    """The n-fold Kronecker power ``A^{(x)n}`` (eq 24), ``n >= 1``."""
    n = integer(n, "n", at_least=1, error=QIFParameterError,
                why="a Kronecker power needs n >= 1 copies")  # (2.5 was a TypeError)
    base = as_channel(a, "a")
    from topicslab._resources import require_memory  # (n = 60 was a MemoryError)

    require_memory(8.0 * float(base.size) ** min(n, 64), f"the {n}-fold Kronecker power of a "
                   f"{base.shape[0]} x {base.shape[1]} channel", field="n")
    out = base
    for _ in range(n - 1):
        out = np.asarray(np.kron(out, base), dtype=np.float64)
    return out


def parallel(c1: npt.ArrayLike, c2: npt.ArrayLike) -> Array:
    """Parallel composition, eq 30: ``(C1 || C2)[x, (y1, y2)] = C1[x, y1] C2[x, y2]``.

    The same secret is observed twice through independent noise (e.g. the same top-s set
    reported in two epochs, App. C); columns are in lexicographic pair order.
    """
    a, b = as_channel(c1, "c1"), as_channel(c2, "c2")
    if a.shape[0] != b.shape[0]:
        raise QIFError("a parallel composition needs channels on the same secrets")
    return (a[:, :, None] * b[:, None, :]).reshape(a.shape[0], -1)


def parallel_power(c: npt.ArrayLike, k: int) -> Array:
    """``C || C || ... || C`` (k copies, eq 30), ``k >= 1``."""
    # (k = 80 ran out of memory after minutes, k = 2.5 was a TypeError, k = True one copy)
    k = integer(k, "k", at_least=1, error=QIFParameterError,
                why="a parallel power needs k >= 1 copies")
    base = as_channel(c)
    from topicslab._resources import require_memory

    require_memory(8.0 * base.shape[0] * float(base.shape[1]) ** min(k, 64),
                   f"the {k}-fold parallel power of a {base.shape[0]} x {base.shape[1]} "
                   "channel", field="k")
    out = base
    for _ in range(k - 1):
        out = parallel(out, base)
    return out


__all__ = [
    "cascade",
    "choice_labels",
    "external_choice",
    "internal_choice",
    "kron",
    "kron_power",
    "parallel",
    "parallel_power",
]
