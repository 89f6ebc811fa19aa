"""Corollary 1 (Carey et al.) exactly at r = 4 weeks, by the best cover of each 3-week prefix.

Under the Topics API every week's answer has one of two values for a user: q_in when the
answer is in the user's top-k set of that week, q_out otherwise. So for a trace o,
``max_u P[u, o] = q_out^r (q_in/q_out)^{M(o)}`` where ``M(o) = max_u |{s : o^s ∈ S_u^s}|`` is
the number of weeks the best-covering user covers, and Corollary 1's sum depends on the
traces only through M. ``ProductChannel`` (general values) enumerates the |T|^r trace cells;
at r = 4 that is 4.8·10^10 for the v2 taxonomy. Here only the 3-week prefixes x = (o^1, o^2,
o^3) are enumerated (|T|^3 = 1.0·10^8), and the fourth week is counted in one step:

    with c = max_u |{s ≤ 3 : x^s ∈ S_u^s}|   and   B = ∪ {S_u^4 : u covers c prefix weeks},
    M(x, o^4) = c + [o^4 ∈ B],   so   Σ_{o^4} max_u P = q_in^c q_out^{4−c} (|T| − |B|)
                                                     + q_in^{c+1} q_out^{3−c} |B|

(a user covering fewer than c prefix weeks reaches at most c, which the best already has).
B is a union of week-4 sets held as 64-bit bitsets, chosen by c:

* c = 3: the users holding all three prefix topics (found per (o^1, o^2) through a list of
  the users holding that pair, their week-3 topics ORed into a per-pair table);
* c = 2: ``B12[o^1, o^2] | B13[o^1, o^3] | B23[o^2, o^3]`` (the week-4 sets of the users
  holding that pair of prefix topics; none holds all three);
* c = 1: ``B1[o^1] | B2[o^2] | B3[o^3]``; c = 0: every user's week-4 set.

Cost: |T|^3 prefixes × (|T|/64 words) plus n·k^2 pair-list entries and n·k^3 ORs; memory
three |T|^2 pair tables of bitsets (42 MB for the v2 taxonomy) and an n·k^2 list. Only
Corollary 1: Lemma 4, Lemma 9 and Lemma 2 (per-topic values) need more than the best cover.

Public names:
    corollary1_four_weeks(profiles, m, q_in, q_out) -> float
"""

from __future__ import annotations

import numba
import numpy as np
import numpy.typing as npt
from numba import njit, prange

from topicslab._checks import integer, integer_array, number
from topicslab._kernels import popcount
from topicslab.qif.errors import QIFError, QIFParameterError

__all__ = ["corollary1_four_weeks"]

U64 = npt.NDArray[np.uint64]


@njit(cache=True)
def _tables(p: npt.NDArray[np.int32], m: int, words: int):
    """Week-4 bitsets per user, per held prefix topic (B1..B3), per held pair (B12, B13,
    B23), the holder flags, and the users of each (o^1, o^2) pair as a CSR list."""
    n, _, k = p.shape
    s4 = np.zeros((n, words), dtype=np.uint64)
    all4 = np.zeros(words, dtype=np.uint64)
    b1 = np.zeros((3, m, words), dtype=np.uint64)
    h1 = np.zeros((3, m), dtype=np.bool_)
    b2 = np.zeros((3, m * m, words), dtype=np.uint64)  # pairs (1, 2), (1, 3), (2, 3)
    h2 = np.zeros((3, m * m), dtype=np.bool_)
    start = np.zeros(m * m + 1, dtype=np.int64)
    for u in range(n):
        for j in range(k):
            t = p[u, 3, j]
            if t >= 0:
                s4[u, t >> 6] |= np.uint64(1) << np.uint64(t & 63)
        for w in range(words):
            all4[w] |= s4[u, w]
        for s in range(3):
            for j in range(k):
                t = p[u, s, j]
                if t >= 0:
                    h1[s, t] = True
                    for w in range(words):
                        b1[s, t, w] |= s4[u, w]
        for pair in range(3):
            a, b = (0, 1) if pair == 0 else ((0, 2) if pair == 1 else (1, 2))
            for i in range(k):
                ta = p[u, a, i]
                if ta < 0:
                    continue
                for j in range(k):
                    tb = p[u, b, j]
                    if tb < 0:
                        continue
                    code = ta * m + tb
                    h2[pair, code] = True
                    for w in range(words):
                        b2[pair, code, w] |= s4[u, w]
                    if pair == 0:
                        start[code + 1] += 1
    for c in range(m * m):
        start[c + 1] += start[c]
    users = np.empty(start[m * m], dtype=np.int32)
    fill = start[:-1].copy()
    for u in range(n):
        for i in range(k):
            ta = p[u, 0, i]
            if ta < 0:
                continue
            for j in range(k):
                tb = p[u, 1, j]
                if tb < 0:
                    continue
                code = ta * m + tb
                users[fill[code]] = u
                fill[code] += 1
    return s4, all4, b1, h1, b2, h2, start, users


@njit(cache=True, parallel=True)
def _levels(p: npt.NDArray[np.int32], m: int, words: int, threads: int):
    """Per cover level c = 0..3 of the 3-week prefixes: how many prefixes (``count``) and the
    summed |B| (``covered``), exact integers."""
    s4, all4, b1, h1, b2, h2, start, users = _tables(p, m, words)
    k = p.shape[2]
    count = np.zeros((m, 4), dtype=np.int64)
    covered = np.zeros((m, 4), dtype=np.int64)
    # first topics dealt out to the ``threads`` in turn: prange gives each thread one
    # contiguous block of topic ids, and popular topics sit together in the taxonomy
    # (measured at 200K users: 1.35 against 0.56 CPU seconds per thread)
    threads = max(1, threads)
    for part in prange(threads):
        for x1 in range(part, m, threads):
            t3 = np.zeros((m, words), dtype=np.uint64)
            has3 = np.zeros(m, dtype=np.bool_)
            touched = np.empty(m, dtype=np.int64)
            for x2 in range(m):
                code12 = x1 * m + x2
                n_touched = 0
                for idx in range(start[code12], start[code12 + 1]):
                    u = users[idx]
                    for j in range(k):
                        t = p[u, 2, j]
                        if t < 0:
                            continue
                        if not has3[t]:
                            has3[t] = True
                            touched[n_touched] = t
                            n_touched += 1
                        for w in range(words):
                            t3[t, w] |= s4[u, w]
                pair12 = h2[0, code12]
                for x3 in range(m):
                    pc = 0
                    if has3[x3]:
                        level = 3
                        for w in range(words):
                            pc += popcount(t3[x3, w])
                    elif pair12 or h2[1, x1 * m + x3] or h2[2, x2 * m + x3]:
                        level = 2
                        for w in range(words):
                            pc += popcount(b2[0, code12, w] | b2[1, x1 * m + x3, w]
                                            | b2[2, x2 * m + x3, w])
                    elif h1[0, x1] or h1[1, x2] or h1[2, x3]:
                        level = 1
                        for w in range(words):
                            pc += popcount(b1[0, x1, w] | b1[1, x2, w] | b1[2, x3, w])
                    else:
                        level = 0
                        for w in range(words):
                            pc += popcount(all4[w])
                    count[x1, level] += 1
                    covered[x1, level] += pc
                for i in range(n_touched):  # reset only what this pair wrote
                    t = touched[i]
                    has3[t] = False
                    for w in range(words):
                        t3[t, w] = np.uint64(0)
    return count.sum(axis=0), covered.sum(axis=0)


def corollary1_four_weeks(profiles: npt.ArrayLike, m: int, q_in: float, q_out: float) -> float:
    """Corollary 1's ``(1/n) Σ_o max_u P[u, o]`` over all |T|^4 traces of four weeks.

    Args:
        profiles: ``int[n, 4, k]`` topic indices in ``0..m-1`` per user and week (``-1``:
            an empty slot; every user must hold a topic every week).
        m: taxonomy size |T|.
        q_in, q_out: the answer's probability for a topic in / outside the week's set
            (``q_in ≥ q_out ≥ 0``).
    """
    # m=469.5 failed inside numba, m=10**12 on the allocation; q_in=5 and NaN/fractional
    # topic ids (cast) were taken
    m = integer(m, "m", at_least=1, error=QIFParameterError)
    q_in = number(q_in, "q_in", lo=0, hi=1, error=QIFParameterError)
    q_out = number(q_out, "q_out", lo=0, hi=1, error=QIFParameterError)
    arr = integer_array(profiles, "profiles", error=QIFParameterError)
    if arr.ndim != 3 or arr.shape[1] != 4 or arr.shape[0] < 1 or arr.shape[2] < 1:
        raise QIFError(f"profiles must be a non-empty [users, 4, slots] array, got shape "
                       f"{arr.shape}")
    if ((arr < -1) | (arr >= m)).any():
        raise QIFError(f"a topic index is outside [0, {m})")
    if not (arr >= 0).any(axis=2).all():
        raise QIFError("every user must hold a topic in every week")
    if not q_in >= q_out >= 0:
        raise QIFError(f"need q_in >= q_out >= 0, got q_in {q_in}, q_out {q_out}")
    words = (m + 63) // 64
    from topicslab._resources import require_memory

    require_memory(3.0 * m * m * (8 * words + 9) + 8.0 * arr.shape[0] * words,
                   f"Corollary 1's pair tables over m = {m:,} topics", field="m")
    count, covered = _levels(np.ascontiguousarray(arr, dtype=np.int32), int(m), words,
                             numba.get_num_threads())
    total = 0.0
    for c in range(4):
        # exact integer counts; the powers are where rounding enters (0.0 ** 0 == 1)
        total += (q_in**c * q_out ** (4 - c) * float(m * int(count[c]) - int(covered[c]))
                  + q_in ** (c + 1) * q_out ** (3 - c) * float(covered[c]))
    return total / arr.shape[0]
