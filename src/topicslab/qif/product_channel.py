"""Exact sums over every output of a product channel of sets (the Topics API over r epochs).

The channel: user u holds a set σ_u^i in each of k positions (epochs, or weeks of a trace);
position i reports topic t with value ``cin[u, i] · α_i[t]`` when t ∈ σ_u^i and ``β_i[t]``
otherwise, and the positions are independent given the user (Alvim et al. eq 30; Carey et
al. App. D: ``P[u, t] = Π_i (q_in if t_i ∈ S_u^i else q_out)``). With a weight ``w_u`` per
user, ``v_u(t) = w_u Π_i (...)``. Three sums over the m^k outputs t are what the bounds need:

* ``max_sum``:  ``Σ_t max_u v_u(t)`` — posterior Bayes vulnerability (Alvim et al. eq 7),
  Carey et al.'s Corollary 1 (``w = 1/n``) and, with the model's posterior as the channel,
  Lemma 2;
* ``none_sum``: ``Σ_t (1 − Π_u (1 − v_u(t)))`` — Lemma 4 (expected distinct representations);
* ``entropy``:  ``−Σ_t v̄(t) log v̄(t)`` with ``v̄ = Σ_u v_u`` — H(O) for Lemma 9's mutual
  information.

Why it is exact without the m^k tensor. A topic that no user holds at a position only ever
takes the β value there, so all such topics of a position collapse into one index with a
multiplicity. The outputs are then enumerated as *slices*: the first k − 2 positions fix a
prefix x, the last two form a dense 2-d table. A user holding none of the prefix topics has
the same value on every slice (up to the factor ``Π_i β_i[x_i]``), so those users are summed
once into a per-slice-invariant table; only the users holding a prefix topic (found through
per-position inverted lists) are added to each slice. For the maximum this is exact because
every user's value is at least its "prefix not held" value (cin·α ≥ β is required); for the
sums the invariant table is corrected by each prefix holder's difference.

Cost: ``cells = Π_i D_i`` table cells (``D_i`` = topics held at position i, plus one when
some topic is held by nobody) plus, per slice, the prefix holders times ``(1 + s)^2`` (s =
set size). Memory: two ``D_{k−2} × D_{k−1}`` tables per thread. With the whole v2 taxonomy
held at every position (469 topics), 3 positions are 1.0·10^8 cells (a fraction of a second
on a laptop core), 4 positions 4.8·10^10 (minutes), 5 positions 2.3·10^13 (out of reach):
``cells`` says beforehand which it is.

Public names:
    ProductChannel(local, mult, cin, alpha, beta)     a channel in collapsed-index form
    topics_channel(sets, m, cin, q, ...)              the Topics reporting channel of sets
    ProductChannel.cells                              slice-table cells an exact sum visits
    ProductChannel.max_sum(w), .none_sum(), .entropy()
    max_sums([(channel, w), ...])                     several maxima in one pass (same sets)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np
import numpy.typing as npt
from numba import njit, prange

from topicslab.qif.errors import QIFError

F64 = npt.NDArray[np.float64]
I32 = npt.NDArray[np.int32]
I64 = npt.NDArray[np.int64]

__all__ = ["ProductChannel", "max_sums", "topics_channel"]

_MODE_NONE = 0  # Σ_t (1 − Π_u (1 − v_u))  (Lemma 4)
_MODE_ENTROPY = 1  # −Σ_t v̄ log v̄


# ------------------------------------------------------------------------------ shared pieces


@njit(cache=True)
def _holds(local: I32, u: int, i: int, t: int) -> bool:
    for s in range(local.shape[2]):
        if local[u, i, s] == t:
            return True
    return False


@njit(cache=True)
def _prefix_of(index: int, dims: I64, p: int, out: I64) -> None:
    """Mixed-radix digits of a slice index (first position most significant)."""
    for i in range(p - 1, -1, -1):
        out[i] = index % dims[i]
        index //= dims[i]


@njit(cache=True, inline="always")
def _value(cin: F64, codes: Any, row: int, u: int, i: int) -> float:
    """User ``u``'s held-topic value at position ``i`` in values row ``row``: ``cin[row,
    codes[u, i]]`` (coded values: a few distinct values, one small code per user and
    position), or ``cin[row, u·k + i]`` when ``codes`` has no rows (dense ``[n, k]``
    values flattened; ``k = codes.shape[1]``)."""
    if codes.shape[0] == 0:
        return cin[row, u * codes.shape[1] + i]
    return cin[row, codes[u, i]]


# ------------------------------------------------------------------------------ maximum


@njit(cache=True, parallel=True)
def _max_layer(local: I32, cin: F64, codes: Any, w: F64, ci: I64, wi: I64, alpha: F64,
               beta: F64, da: int, db: int) -> F64:
    """``M0[c, a, b] = max_u w_cu f_a f_b`` for every configuration c, over every user as if
    it held no prefix topic (configuration c takes the values of row ``ci[c]`` of ``cin``
    (``_value``) and weights ``w[wi[c]]``: configurations share them instead of each holding
    a copy). The configurations are independent passes, one per core (the QIF tables have
    four)."""
    n_cfg = ci.shape[0]
    k = local.shape[1]
    ia, ib = k - 2, k - 1
    out = np.empty((n_cfg, da, db))
    for c in prange(n_cfg):
        cc, wc = ci[c], wi[c]
        g0 = 0.0
        r0 = np.zeros(da)
        c0 = np.zeros(db)
        cell0 = np.zeros((da, db))
        for u in range(local.shape[0]):
            wu = w[wc, u]
            if wu > g0:
                g0 = wu
            ca, cb = _value(cin, codes, cc, u, ia), _value(cin, codes, cc, u, ib)
            va, vb = wu * ca, wu * cb
            vab = wu * ca * cb
            for s in range(local.shape[2]):
                a = local[u, ia, s]
                if a >= 0 and va > r0[a]:
                    r0[a] = va
                b = local[u, ib, s]
                if b >= 0 and vb > c0[b]:
                    c0[b] = vb
            for s in range(local.shape[2]):
                a = local[u, ia, s]
                if a < 0:
                    continue
                for s2 in range(local.shape[2]):
                    b = local[u, ib, s2]
                    if b >= 0 and vab > cell0[a, b]:
                        cell0[a, b] = vab
        for a in range(da):
            aa, ba = alpha[c, ia, a], beta[c, ia, a]
            for b in range(db):
                ab, bb = alpha[c, ib, b], beta[c, ib, b]
                v = max(g0 * ba * bb, r0[a] * aa * bb, c0[b] * ba * ab, cell0[a, b] * aa * ab)
                out[c, a, b] = v
    return out


@njit(cache=True, parallel=True)
def _max_slices(local: I32, cin: F64, codes: Any, w: F64, ci: I64, wi: I64, alpha: F64,
                beta: F64, mult: F64, dims: I64, ptr: I64, users: I32, m0: F64,
                n_blocks: int) -> F64:
    """Per configuration, the sum over every slice of the max over users (module docstring):
    the invariant table ``m0`` scaled by the prefix's β, overlaid with the prefix holders
    (configuration c: values row ``ci[c]`` of ``cin`` (``_value``), weights ``w[wi[c]]``)."""
    n_cfg = ci.shape[0]
    k = local.shape[1]
    p = k - 2
    ia, ib = k - 2, k - 1
    da, db = dims[ia], dims[ib]
    stride = ptr.shape[0] // max(p, 1)
    n_slices = 1
    for i in range(p):
        n_slices *= dims[i]
    per = (n_slices + n_blocks - 1) // n_blocks
    totals = np.zeros((n_blocks, n_cfg))
    for blk in prange(n_blocks):
        lo = blk * per
        hi = min(n_slices, lo + per)
        x = np.zeros(max(p, 1), dtype=np.int64)
        og = np.zeros(n_cfg)
        base = np.zeros(n_cfg)
        vab = np.zeros(n_cfg)
        orow = np.zeros((n_cfg, da))
        ocol = np.zeros((n_cfg, db))
        ocell = np.zeros((da * db, n_cfg))  # (a cell's configurations in one cache line)
        mark = np.zeros(da * db, dtype=np.bool_)
        touched = np.empty(da * db, dtype=np.int64)
        xr = np.empty(da)
        zc = np.empty(db)
        for sl in range(lo, hi):
            _prefix_of(sl, dims, p, x)
            weight = 1.0
            for i in range(p):
                weight *= mult[0, i, x[i]]
            og[:] = 0.0
            n_touched = 0
            # the users holding a prefix topic, each once (skip if held at an earlier position)
            for i in range(p):
                for j in range(ptr[i * stride + x[i]], ptr[i * stride + x[i] + 1]):
                    u = users[j]
                    seen = False
                    for i2 in range(i):
                        if _holds(local, u, i2, x[i2]):
                            seen = True
                            break
                    if seen:
                        continue
                    for c in range(n_cfg):
                        base[c] = w[wi[c], u]
                    for i2 in range(p):
                        held = _holds(local, u, i2, x[i2])
                        for c in range(n_cfg):
                            if held:
                                base[c] *= (_value(cin, codes, ci[c], u, i2)
                                            * alpha[c, i2, x[i2]])
                            else:
                                base[c] *= beta[c, i2, x[i2]]
                    for c in range(n_cfg):
                        bc = base[c]
                        if bc > og[c]:
                            og[c] = bc
                        va = bc * _value(cin, codes, ci[c], u, ia)
                        vb = bc * _value(cin, codes, ci[c], u, ib)
                        for s in range(local.shape[2]):
                            a = local[u, ia, s]
                            if a >= 0 and va > orow[c, a]:
                                orow[c, a] = va
                            b = local[u, ib, s]
                            if b >= 0 and vb > ocol[c, b]:
                                ocol[c, b] = vb
                    # (the user's value in every configuration, once: the compiler cannot
                    # hoist it out of the cell loop, which writes ocell)
                    for c in range(n_cfg):
                        vab[c] = (base[c] * _value(cin, codes, ci[c], u, ia)
                                  * _value(cin, codes, ci[c], u, ib))
                    for s in range(local.shape[2]):
                        a = local[u, ia, s]
                        if a < 0:
                            continue
                        for s2 in range(local.shape[2]):
                            b = local[u, ib, s2]
                            if b < 0:
                                continue
                            cell = a * db + b
                            if not mark[cell]:
                                mark[cell] = True
                                touched[n_touched] = cell
                                n_touched += 1
                            for c in range(n_cfg):
                                if vab[c] > ocell[cell, c]:
                                    ocell[cell, c] = vab[c]
            for c in range(n_cfg):
                scale = 1.0
                for i in range(p):
                    scale *= beta[c, i, x[i]]
                for b in range(db):
                    zc[b] = ocol[c, b] * alpha[c, ib, b]
                for a in range(da):
                    xr[a] = max(og[c] * beta[c, ia, a], orow[c, a] * alpha[c, ia, a])
                slice_sum = 0.0
                for a in range(da):
                    xa, ba, aa = xr[a], beta[c, ia, a], alpha[c, ia, a]
                    row = 0.0
                    for b in range(db):
                        v = max(scale * m0[c, a, b], xa * beta[c, ib, b], ba * zc[b],
                                aa * alpha[c, ib, b] * ocell[a * db + b, c])
                        row += mult[0, ib, b] * v
                    slice_sum += mult[0, ia, a] * row
                totals[blk, c] += weight * slice_sum
            # reset the overlay for the next slice
            for j in range(n_touched):
                cell = touched[j]
                mark[cell] = False
                for c in range(n_cfg):
                    ocell[cell, c] = 0.0
            orow[:, :] = 0.0
            ocol[:, :] = 0.0
    return totals


# ------------------------------------------------------------------------------ sums


@njit(cache=True)
def _phi(v: float, mode: int) -> float:
    if mode == _MODE_NONE:
        return math.log1p(-v) if v < 1.0 else -1e300
    return v


@njit(cache=True)
def _add_user(local: I32, cin: F64, q: F64, u: int, base: float, sign: float, mode: int,
              acc: F64, rows: F64, cols: F64, cells: F64, touched: I64, mark: npt.NDArray[
                  np.bool_], n_touched: int) -> int:
    """Add ``sign ×`` user u's Möbius terms on the last two positions (base = its value
    on the prefix positions times w_u): ``φ(b q q)`` everywhere, the row/column differences
    where it holds a, b, and the interaction where it holds both."""
    k = local.shape[1]
    ia, ib = k - 2, k - 1
    qa, qb = q[ia], q[ib]
    ca, cb = cin[u, ia], cin[u, ib]
    f00 = _phi(base * qa * qb, mode)
    f10 = _phi(base * ca * qb, mode)
    f01 = _phi(base * qa * cb, mode)
    f11 = _phi(base * ca * cb, mode)
    acc[0] += sign * f00
    for s in range(local.shape[2]):
        a = local[u, ia, s]
        if a >= 0:
            rows[a] += sign * (f10 - f00)
        b = local[u, ib, s]
        if b >= 0:
            cols[b] += sign * (f01 - f00)
    inter = sign * (f11 - f10 - f01 + f00)
    for s in range(local.shape[2]):
        a = local[u, ia, s]
        if a < 0:
            continue
        for s2 in range(local.shape[2]):
            b = local[u, ib, s2]
            if b < 0:
                continue
            c = a * cols.shape[0] + b
            if n_touched >= 0 and not mark[c]:
                mark[c] = True
                touched[n_touched] = c
                n_touched += 1
            cells[c] += inter
    return n_touched


@njit(cache=True)
def _sum_layer(local: I32, cin: F64, w: F64, q: F64, da: int, db: int, mode: int,
               ) -> tuple[F64, F64, F64, F64]:
    p = local.shape[1] - 2
    qp = 1.0
    for i in range(p):
        qp *= q[i]
    acc = np.zeros(1)
    rows = np.zeros(da)
    cols = np.zeros(db)
    cells = np.zeros(da * db)
    dummy = np.empty(0, dtype=np.int64)
    no_mark = np.zeros(0, dtype=np.bool_)
    for u in range(local.shape[0]):
        _add_user(local, cin, q, u, w[u] * qp, 1.0, mode, acc, rows, cols, cells, dummy,
                  no_mark, -1)
    return acc, rows, cols, cells


@njit(cache=True, parallel=True)
def _sum_slices(local: I32, cin: F64, w: F64, q: F64, mult: F64, dims: I64, ptr: I64,
                users: I32, acc0: F64, rows0: F64, cols0: F64, cells0: F64, mode: int,
                n_blocks: int) -> F64:
    k = local.shape[1]
    p = k - 2
    ia, ib = k - 2, k - 1
    da, db = dims[ia], dims[ib]
    stride = ptr.shape[0] // max(p, 1)
    n_slices = 1
    for i in range(p):
        n_slices *= dims[i]
    qp = 1.0
    for i in range(p):
        qp *= q[i]
    per = (n_slices + n_blocks - 1) // n_blocks
    totals = np.zeros(n_blocks)
    for blk in prange(n_blocks):
        lo = blk * per
        hi = min(n_slices, lo + per)
        x = np.zeros(max(p, 1), dtype=np.int64)
        acc = np.zeros(1)
        rows = np.empty(da)
        cols = np.empty(db)
        cells = cells0.copy()
        touched = np.empty(da * db, dtype=np.int64)
        mark = np.zeros(da * db, dtype=np.bool_)
        total = 0.0
        for sl in range(lo, hi):
            _prefix_of(sl, dims, p, x)
            weight = 1.0
            for i in range(p):
                weight *= mult[i, x[i]]
            acc[0] = acc0[0]
            rows[:] = rows0
            cols[:] = cols0
            n_touched = 0
            for i in range(p):
                for j in range(ptr[i * stride + x[i]], ptr[i * stride + x[i] + 1]):
                    u = users[j]
                    seen = False
                    for i2 in range(i):
                        if _holds(local, u, i2, x[i2]):
                            seen = True
                            break
                    if seen:
                        continue
                    base = w[u]
                    for i2 in range(p):
                        if _holds(local, u, i2, x[i2]):
                            base *= cin[u, i2]
                        else:
                            base *= q[i2]
                    # replace the user's "holds no prefix topic" terms by its true ones
                    _add_user(local, cin, q, u, w[u] * qp, -1.0, mode, acc, rows, cols, cells,
                              touched, mark, -1)
                    n_touched = _add_user(local, cin, q, u, base, 1.0, mode, acc, rows, cols,
                                          cells, touched, mark, n_touched)
            slice_sum = 0.0
            for a in range(da):
                row = 0.0
                ra = acc[0] + rows[a]
                for b in range(db):
                    s = ra + cols[b] + cells[a * db + b]
                    if mode == _MODE_NONE:
                        v = -math.expm1(s)
                    else:
                        v = -s * math.log(s) if s > 0.0 else 0.0
                    row += mult[ib, b] * v
                slice_sum += mult[ia, a] * row
            total += weight * slice_sum
            for j in range(n_touched):
                c = touched[j]
                cells[c] = cells0[c]
                mark[c] = False
        totals[blk] = total
    return totals


# ------------------------------------------------------------------------------ the type


@njit(cache=True)
def _fill_lists(local: I32, p: int, width: int, ptr: I64, users: I32) -> None:
    """Counting sort of (position, topic) → holders: each list in ascending user order (the
    order of a stable sort of the flattened slots by topic)."""
    n, _, s = local.shape
    offset = 0
    for i in range(p):
        base = i * width
        for u in range(n):
            for j in range(s):
                t = local[u, i, j]
                if t >= 0:
                    ptr[base + t + 1] += 1
        ptr[base] = offset
        for x in range(1, width):
            ptr[base + x] += ptr[base + x - 1]
        offset = ptr[base + width - 1]
        fill = ptr[base:base + width].copy()
        for u in range(n):
            for j in range(s):
                t = local[u, i, j]
                if t >= 0:
                    users[fill[t]] = u
                    fill[t] += 1


def _inverted_lists(local: I32, dims: I64, p: int) -> tuple[I64, I32]:
    """CSR lists ``users holding local topic x at position i`` for the prefix positions,
    flattened as ``ptr[i * (D + 1) + x]`` with D = max dims.

    Filled by a counting sort in place: the argsort of every (user, slot) pair it replaces
    took ~6 int64 copies of the slots (2.4 GB for the three-epoch tables of 10M users)."""
    n = local.shape[0]
    if n >= 2**31:
        raise QIFError(f"{n} users: the holder lists index users with 32-bit integers")
    width = int(dims.max()) + 1 if p else 1
    ptr = np.zeros(max(p, 1) * width, dtype=np.int64)
    held = int((local[:, :p, :] >= 0).sum()) if p else 0
    users = np.empty(held, dtype=np.int32)
    if p:
        _fill_lists(local, p, width, ptr, users)
    return ptr, users


@dataclass(frozen=True)
class ProductChannel:
    """A product channel of sets in collapsed-index form (module docstring).

    Attributes:
        local: ``int16[n, k, s]`` (``int32`` past 32,767 indices) each user's set at each
            position as collapsed topic indices (``-1`` for an empty slot); at least two
            positions.
        mult: ``float64[k, D]`` how many topics each collapsed index stands for (0 pads).
        cin: ``float64[n, k]`` the value factor of a held topic; or, with ``cin_codes``, the
            table ``float64[c]`` of its distinct values.
        alpha: ``float64[k, D]`` per-topic factor of a held topic (1 for the Topics API).
        beta: ``float64[k, D]`` the value of a topic not held (q for the Topics API).
        dims: ``int64[k]`` collapsed indices per position.
        cin_codes: ``None``, or ``int[n, k]`` each user's index into ``cin`` at each position
            (Alvim et al.'s values depend on the set's size only: an ``int8`` per user and
            position instead of a ``float64`` per configuration; 0.5 GB less at 10M users × 3
            epochs and two values of r).
    """

    local: I32
    mult: F64
    cin: F64
    alpha: F64
    beta: F64
    dims: I64
    cin_codes: npt.NDArray[np.integer] | None = None

    def __post_init__(self) -> None:
        # the kernels index the tables with the collapsed indices unchecked: a channel built
        # by hand with a dimension too small read and wrote past its arrays (the process
        # ended in "corrupted size vs. prev_size", or a sum of garbage)
        local = self.local
        if (not isinstance(local, np.ndarray) or local.ndim != 3 or local.shape[1] < 2
                or local.dtype not in (np.int16, np.int32)):
            raise QIFError("local must be an int16 or int32 [users, positions, slots] array "
                           "of at least two positions")
        n, k, _ = local.shape
        dims = self.dims
        if (not isinstance(dims, np.ndarray) or dims.dtype != np.int64 or dims.shape != (k,)
                or (k and int(dims.min()) < 1)):
            raise QIFError(f"dims must be int64[{k}], at least 1 index per position")
        width = int(dims.max())
        for name in ("mult", "alpha", "beta"):
            table = getattr(self, name)
            if (not isinstance(table, np.ndarray) or table.dtype != np.float64
                    or table.ndim != 2 or table.shape[0] != k or table.shape[1] < width):
                raise QIFError(f"{name} must be float64[{k}, at least {width}] (one row per "
                               "position, a column per collapsed index)")
        # (each position's largest index through a C-order 2-d reduction: ``max(axis=(0,
        # 2))`` took 0.8 s of 10M users × 3 positions, 0.15 s this way)
        if local.size and (int(local.min()) < -1
                           or (local.reshape(n, -1).max(axis=0).reshape(k, -1).max(axis=1)
                               >= dims).any()):
            raise QIFError("local must hold collapsed indices 0..dims-1 of each position "
                           "(-1: an empty slot)")
        cin, codes = self.cin, self.cin_codes
        if not isinstance(cin, np.ndarray) or cin.dtype != np.float64:
            raise QIFError("cin must be a float64 array")
        if codes is None:
            if cin.shape != (n, k):
                raise QIFError(f"cin must be float64[{n}, {k}] (one value per user and "
                               "position)")
        elif (not isinstance(codes, np.ndarray) or not np.issubdtype(codes.dtype, np.integer)
              or codes.shape != (n, k) or cin.ndim != 1
              or (codes.size and (int(codes.min()) < 0 or int(codes.max()) >= cin.size))):
            raise QIFError(f"cin_codes must be [{n}, {k}] integer indices into the 1-D table "
                           "cin")

    def dense_cin(self) -> F64:
        """``float64[n, k]`` the value factor of each user's held topic at each position."""
        return self.cin if self.cin_codes is None else self.cin[self.cin_codes]

    def cin_min(self) -> F64:
        """``float64[k]`` each position's smallest held-topic value over the users."""
        if self.cin_codes is None:
            return np.asarray(self.cin.min(axis=0), dtype=np.float64)
        out = np.empty(self.cin_codes.shape[1])
        for i in range(out.size):  # (the codes present at the position: no sort of n codes)
            present = np.zeros(self.cin.size, dtype=bool)
            present[self.cin_codes[:, i]] = True
            out[i] = self.cin[present].min()
        return out

    @property
    def users(self) -> int:
        return int(self.local.shape[0])

    @property
    def positions(self) -> int:
        return int(self.local.shape[1])

    @property
    def cells(self) -> int:
        """Slice-table cells an exact sum visits (its time is about proportional)."""
        return math.prod(int(d) for d in self.dims)

    def _blocks(self) -> int:
        slices = math.prod(int(d) for d in self.dims[:-2])
        return max(1, min(slices, 8 * numba.get_num_threads()))

    def max_sum(self, weights: npt.ArrayLike) -> float:
        """``Σ_t max_u w_u Π_i (...)`` (exact)."""
        return max_sums([(self, weights)])[0]

    def _sums(self, weights: F64, mode: int) -> float:
        used = np.arange(self.beta.shape[1])[None, :] < self.dims[:, None]
        if not (np.allclose(self.alpha[used], 1.0)
                and np.allclose(np.where(used, self.beta, self.beta[:, :1]), self.beta[:, :1])):
            raise QIFError("these sums need topic-independent values (alpha = 1, one beta "
                           "per position)")
        k = self.positions
        q = np.ascontiguousarray(self.beta[:, 0])
        da, db = int(self.dims[k - 2]), int(self.dims[k - 1])
        cin = np.ascontiguousarray(self.dense_cin())
        acc0, rows0, cols0, cells0 = _sum_layer(self.local, cin, weights, q, da, db, mode)
        ptr, users = _inverted_lists(self.local, self.dims, k - 2)
        totals = _sum_slices(self.local, cin, weights, q, self.mult, self.dims, ptr,
                             users, acc0, rows0, cols0, cells0, mode, self._blocks())
        return float(totals.sum())

    def none_sum(self) -> float:
        """``Σ_t (1 − Π_u (1 − v_u(t)))`` with ``w = 1`` (Lemma 4's expected number of
        distinct representations)."""
        return self._sums(np.ones(self.users), _MODE_NONE)

    def entropy(self, weights: npt.ArrayLike | None = None) -> float:
        """``H = −Σ_t v̄ log v̄``, ``v̄(t) = Σ_u w_u Π_i (...)`` (nats; weights default 1/n:
        the output entropy under a uniform user)."""
        w = (np.full(self.users, 1.0 / self.users) if weights is None
             else _weights(weights, self.users))
        return self._sums(w, _MODE_ENTROPY)


def max_sums(configs: list[tuple[ProductChannel, npt.ArrayLike]]) -> list[float]:
    """``ProductChannel.max_sum`` of several channels over the same sets (same ``local``,
    ``mult`` and ``dims``; values and weights may differ) in one pass over the users."""
    # (no configuration was an IndexError, an item not a (channel, weights) pair an
    # AttributeError)
    if not isinstance(configs, list | tuple) or not all(
            isinstance(c, tuple) and len(c) == 2 and isinstance(c[0], ProductChannel)
            for c in configs):
        raise TypeError("max_sums takes a list of (ProductChannel, weights) pairs")
    if not configs:
        return []
    first = configs[0][0]
    n_cfg = len(configs)
    # configurations that share a values or weights array (the QIF tables: two r values
    # by two weightings) share its one row: stacking a copy per configuration was 1.3 GB of
    # the three-epoch tables of 10M users
    k = first.positions
    # coded values when every channel codes them alike (one code table, a values row per
    # configuration); else dense [n, k] rows, flattened (``_value``)
    coded = first.cin_codes is not None and all(
        ch.cin_codes is first.cin_codes for ch, _ in configs)
    ws: list[F64] = []
    cins: list[F64] = []
    wi = np.empty(n_cfg, dtype=np.int64)
    ci = np.empty(n_cfg, dtype=np.int64)
    alphas, betas = [], []
    for c, (ch, weights) in enumerate(configs):
        if ch.local is not first.local and not np.array_equal(ch.local, first.local):
            raise QIFError("max_sums needs channels over the same sets")
        w = _weights(weights, ch.users)
        low = ch.cin_min()[:, None] * ch.alpha
        if (low < ch.beta * (1 - 1e-12)).any():
            raise QIFError("a held topic must be at least as likely as one not held")
        wi[c] = _row_of(ws, w)
        ci[c] = _row_of(cins, np.asarray(ch.cin, dtype=np.float64) if coded
                        else ch.dense_cin())
        alphas.append(ch.alpha)
        betas.append(ch.beta)
    w_all, cin_all = _stacked(ws), _stacked(cins)
    del ws, cins
    if coded:
        assert first.cin_codes is not None
        codes: npt.NDArray[np.integer] = np.ascontiguousarray(first.cin_codes)
    else:  # (a view: the stacked rows are contiguous)
        cin_all = np.ascontiguousarray(cin_all).reshape(cin_all.shape[0], -1)
        codes = np.zeros((0, k), dtype=np.int8)
    alpha_all, beta_all = np.stack(alphas), np.stack(betas)
    da, db = int(first.dims[k - 2]), int(first.dims[k - 1])
    m0 = _max_layer(first.local, cin_all, codes, w_all, ci, wi, alpha_all, beta_all, da, db)
    ptr, users = _inverted_lists(first.local, first.dims, k - 2)
    totals = _max_slices(first.local, cin_all, codes, w_all, ci, wi, alpha_all, beta_all,
                         first.mult[None], first.dims, ptr, users, m0, first._blocks())
    return [float(v) for v in totals.sum(axis=0)[:n_cfg]]


def _weights(weights: npt.ArrayLike, users: int) -> F64:
    """``weights`` as ``float64[users]``, finite and non-negative (``entropy`` took any
    length, and its kernel read past a shorter array)."""
    try:
        w = np.ascontiguousarray(weights, dtype=np.float64)
    except (TypeError, ValueError):
        w = np.zeros(0)
    if w.shape != (users,) or not np.isfinite(w).all() or (w < 0).any():
        raise QIFError("weights must be one finite non-negative number per user")
    return w


def _stacked(rows: list[F64]) -> F64:
    """``np.stack(rows)``, or without a copy the array whose rows they already are (values
    the caller laid out as one ``[configurations, n, k]`` array, ``topics_channel``'s)."""
    root = rows[0]
    while isinstance(root.base, np.ndarray):
        root = root.base
    if (root.ndim == rows[0].ndim + 1 and root.shape[0] == len(rows)
            and root.dtype == rows[0].dtype and root.flags.c_contiguous
            and all(_layout(r) == _layout(root[j]) for j, r in enumerate(rows))):
        return root
    return np.stack(rows)


def _layout(x: F64) -> tuple[Any, ...]:
    return (x.__array_interface__["data"][0], x.shape, x.strides, x.dtype)


def _row_of(rows: list[F64], x: F64) -> int:
    """Index of ``x`` in ``rows`` (the same array, or a view of the same memory with the same
    layout), appending it when absent."""
    key = _layout(x)
    for j, row in enumerate(rows):
        if row is x or _layout(row) == key:
            return j
    rows.append(x)
    return len(rows) - 1


def topics_channel(sets: npt.ArrayLike, m: int, cin: npt.ArrayLike, q: float | npt.ArrayLike,
                   *, alpha: npt.ArrayLike | None = None,
                   cin_codes: npt.ArrayLike | None = None) -> ProductChannel:
    """The reporting channel of sets ``int[n, k, s]`` (``-1`` empty slots; every user holds
    a topic at every position) over topics ``0..m-1``.

    ``cin[u, i]`` is the value of a held topic (``(1 − r)/|σ| + r/m`` for Alvim et al.'s
    C_BN(+)_rDP, ``q_in`` for Carey et al.), ``q`` the value of any other topic: a number, one
    per position, or ``[k, m]`` per topic (then topics are not collapsed); ``alpha`` an
    optional ``[k, m]`` per-topic factor of held topics. With ``cin_codes`` (``int[n, k]``),
    ``cin`` is the table of values they index instead (``ProductChannel.cin_codes``).
    """
    arr = np.asarray(sets)
    if not np.issubdtype(arr.dtype, np.integer):  # (fractions: an IndexError inside)
        raise QIFError(f"sets must be an integer array of topic indices, got dtype {arr.dtype}")
    if arr.ndim != 3 or arr.shape[0] < 1 or arr.shape[1] < 1:
        raise QIFError(f"sets must be a non-empty [users, positions, slots] array, got shape "
                       f"{arr.shape}")
    if arr.size and (int(arr.min()) < -1 or int(arr.max()) >= m):
        raise QIFError(f"a topic index is outside [0, {m})")
    if not (arr >= 0).any(axis=2).all():
        raise QIFError("every user must hold a topic at every position")
    n, k, s = arr.shape
    codes: npt.NDArray[np.integer] | None = None
    if cin_codes is not None:
        codes = np.asarray(cin_codes)
        cin_a = np.asarray(cin, dtype=np.float64)
        if (codes.shape != (n, k) or not np.issubdtype(codes.dtype, np.integer)
                or cin_a.ndim != 1 or int(codes.min()) < 0
                or int(codes.max()) >= cin_a.size):
            raise QIFError(f"cin_codes must be [{n}, {k}] integer indices into the 1-D table "
                           "cin")
    else:
        cin_a = np.broadcast_to(np.asarray(cin, dtype=np.float64), (n, k))
    q_arr = np.asarray(q, dtype=np.float64)
    per_topic = q_arr.ndim == 2 or alpha is not None
    beta_full = np.broadcast_to(q_arr.reshape(-1, 1) if q_arr.ndim == 1 else q_arr,
                                (k, m)).astype(np.float64)
    alpha_full = (np.ones((k, m)) if alpha is None
                  else np.broadcast_to(np.asarray(alpha, dtype=np.float64), (k, m)))
    padded = k == 1
    if padded:  # a second position every user reports with value 1 changes no sum
        arr = np.concatenate([arr, np.full((n, 1, s), -1, dtype=arr.dtype)], axis=1)
        if codes is None:
            cin_a = np.concatenate([cin_a, np.ones((n, 1))], axis=1)
        else:  # (the padding position's value 1 is the table's last entry)
            cin_a = np.append(cin_a, 1.0)
            codes = np.concatenate(
                [codes, np.full((n, 1), cin_a.size - 1, dtype=codes.dtype)], axis=1)
        beta_full = np.concatenate([beta_full, np.ones((1, m))], axis=0)
        alpha_full = np.concatenate([alpha_full, np.ones((1, m))], axis=0)
        k = 2
    # each position's collapsed indices: every topic when values are per topic, else the
    # topics held there plus one index for all the others (they only ever take beta)
    index_topics, others = [], []
    for i in range(k):
        if padded and i == k - 1:
            index_topics.append(np.zeros(0, dtype=np.int64))
            others.append(np.zeros(1, dtype=np.int64))  # one output, value 1
            continue
        # (the topics held: a presence table, not np.unique's sort or hash of n·s slots; the
        # held slots in the sets' own type, not an intp copy of every slot: 0.8 GB at 10M)
        present = np.zeros(m, dtype=bool)
        col = arr[:, i, :]
        present[col[col >= 0]] = True
        held = np.flatnonzero(present).astype(np.int64)
        topics = np.arange(m) if per_topic else held
        index_topics.append(topics)
        others.append(np.setdiff1d(np.arange(m), topics))
    dims = [t.size + (1 if o.size else 0) for t, o in zip(index_topics, others, strict=True)]
    width = max(dims)
    # int16 when every collapsed index fits (half the memory of the largest array here:
    # 0.3 GB at 10M users × 3 epochs); the kernels take either
    index_type = np.int16 if width < 2**15 else np.int32
    local = np.full((n, k, s), -1, dtype=index_type)
    mult = np.zeros((k, width))
    alpha_c = np.ones((k, width))
    beta_c = np.zeros((k, width))
    for i, (topics, rest) in enumerate(zip(index_topics, others, strict=True)):
        lut = np.full(m + 1, -1, dtype=index_type)  # the last entry: an empty slot
        lut[topics] = np.arange(topics.size)
        col = arr[:, i, :]
        local[:, i, :] = lut[np.where(col >= 0, col, np.int32(m))]
        mult[i, :topics.size] = 1.0
        alpha_c[i, :topics.size] = alpha_full[i, topics]
        beta_c[i, :topics.size] = beta_full[i, topics]
        if rest.size:
            mult[i, topics.size] = float(rest.size)
            beta_c[i, topics.size] = beta_full[i, rest[0]]
    return ProductChannel(local, mult, np.ascontiguousarray(cin_a), alpha_c, beta_c,
                          np.asarray(dims, dtype=np.int64), cin_codes=codes)
