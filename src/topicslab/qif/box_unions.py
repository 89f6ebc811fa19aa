"""Exact sums over the unions of the users' *boxes*: the counting walk of the cover levels.

A user's box over weeks Z is Π_{s∈Z} S_u^s (its week sets' product). ``box_sums`` sums, over
the tuples z of the weeks Z covered by at least one user's box, a function of the users H(z)
whose box holds z: a product of unions of their week sets or 2-week boxes, or the number of
triples whose three pairs are each covered by a user of H(z). ``qif.cover_levels`` reads the
sizes of the cover levels of Corollary 1 (Carey et al.) off such sums.

One depth-first walk over the weeks Z groups the users by topic (a counting sort per node) and
stops as soon as a node's users can be counted in closed form: one user (or users holding the
same sets from there on) covers its whole remaining sub-box; up to four users,
inclusion–exclusion over their subsets (a pair of topics lies in some user's box exactly when
the two topics' sets of holders meet). A leaf's unions are bitset rows over its users' own
topics (a word or two a row); where every group is a single week, a node one tuple week above
the leaves values all its children in one pass. Its cost is the number of (user, node) pairs
above those nodes: up to n·k^{|Z|} for a population whose users share long runs of topics,
much less when they diverge. The walks below the first week's topics run in parallel. The
sums are exact integers (int64, with a float64 shadow that refuses a sum past 2^62).

Public names:
    box_sums(profiles, m, weeks, specs) -> list[int]
"""

from __future__ import annotations

from collections.abc import Sequence

import numba
import numpy as np
import numpy.typing as npt
from numba import njit, prange

from topicslab._checks import integer, integer_array
from topicslab._kernels import popcount
from topicslab.qif.errors import QIFError, QIFParameterError

__all__ = ["WALK_VERSION", "box_sums", "checked_profiles", "walk_sums"]

#: the counting walk's version: part of a walk log's fingerprint (``qif.walk_log``), so sums
#: logged by other counting code are not reused. Raise it with any change of what a walk
#: returns for given profiles, weeks and specs (a fix included).
WALK_VERSION = 1

I32 = npt.NDArray[np.int32]
I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]


# The leaf's helpers index their scratch arrays by offsets, not slices: a slice is an array
# object of its own in numba (reference counted), and a leaf took ~20 of them (measured: a
# third of a quad walk's leaves' time).


@njit(cache=True)
def _local_ids(p: I32, buf: I32, s0: int, e0: int, w: int, lid: I64, tops: I64,
               off: int) -> int:
    """Number the distinct week-w topics of the users ``buf[s0:e0]`` 0, 1, ...
    (``lid[off + topic]``, −1 for the others; ``tops[off:]`` lists them in that order);
    returns how many there are, the size of the week's union."""
    k = p.shape[2]
    n_local = 0
    for i in range(s0, e0):
        u = buf[i]
        for a in range(k):
            t = p[u, w, a]
            if lid[off + t] < 0:
                lid[off + t] = n_local
                tops[off + n_local] = t
                n_local += 1
    return n_local


@njit(cache=True)
def _forget_ids(lid: I64, tops: I64, off: int, n_local: int) -> None:
    """Undo ``_local_ids`` (its ``n_local`` topics at offset ``off``): −1 again."""
    for j in range(n_local):
        lid[off + tops[off + j]] = -1


@njit(cache=True)
def _local_rows(p: I32, buf: I32, s0: int, e0: int, w1: int, w2: int, lid: I64, o1: int,
                o2: int, rows: npt.NDArray[np.uint64], r0: int, width: int,
                umask: npt.NDArray[np.uint64]) -> None:
    """OR each user's week-w2 set into the row (``width`` words from ``rows[r0]``) of each of
    its week-w1 topics, over local topic numbers (``_local_ids``, at offsets o1 and o2). The
    user's set is made a bit mask once: k + k·width operations a user, not k² bit by bit."""
    k = p.shape[2]
    one = np.uint64(1)
    for i in range(s0, e0):
        u = buf[i]
        for v in range(width):
            umask[v] = 0
        for b in range(k):
            y = lid[o2 + p[u, w2, b]]
            umask[y >> 6] |= one << np.uint64(y & 63)
        for a in range(k):
            x = r0 + lid[o1 + p[u, w1, a]] * width
            for v in range(width):
                rows[x + v] |= umask[v]


@njit(cache=True)
def _box_pairs(p: I32, buf: I32, s0: int, e0: int, ga: int, gb: int, gw: I64, lid: I64,
               n_local: I64, rows: npt.NDArray[np.uint64], umask: npt.NDArray[np.uint64]) -> int:
    """|∪_u S_u^a × S_u^b| (a, b: the group weeks ``gw[ga]``, ``gw[gb]``): per week-a topic,
    the bitset of week-b topics beside it, over the users' own topics of each week (a row
    is a word or two instead of ⌈m/64⌉)."""
    m = lid.shape[0] // n_local.shape[0]
    na, nb = n_local[ga], n_local[gb]
    width = (nb + 63) // 64
    _local_rows(p, buf, s0, e0, gw[ga], gw[gb], lid, ga * m, gb * m, rows, 0, width, umask)
    count = 0
    for i in range(na * width):
        count += popcount(rows[i])
        rows[i] = 0
    return count


@njit(cache=True)
def _pairwise3(p: I32, buf: I32, s0: int, e0: int, ga: int, gb: int, gc: int, gw: I64,
               lid: I64, n_local: I64, scratch: npt.NDArray[np.uint64],
               umask: npt.NDArray[np.uint64]) -> int:
    """#{(x, y, z) : (x, y), (x, z) and (y, z) each in some user's 2-week box} over the
    group weeks (a, b, c) = ``gw[ga], gw[gb], gw[gc]``: Σ_x Σ_{y ∈ ab[x]} |ac[x] ∩ bc[y]|,
    on bitset rows over the users' own topics of each week (``_local_ids``)."""
    m = lid.shape[0] // n_local.shape[0]
    na, nb, nc = n_local[ga], n_local[gb], n_local[gc]
    wbw = (nb + 63) // 64
    wcw = (nc + 63) // 64
    ac = na * wbw  # the rows ab, ac, bc one after the other, all zero between calls
    bc = ac + na * wcw
    used = bc + nb * wcw
    _local_rows(p, buf, s0, e0, gw[ga], gw[gb], lid, ga * m, gb * m, scratch, 0, wbw, umask)
    _local_rows(p, buf, s0, e0, gw[ga], gw[gc], lid, ga * m, gc * m, scratch, ac, wcw, umask)
    _local_rows(p, buf, s0, e0, gw[gb], gw[gc], lid, gb * m, gc * m, scratch, bc, wcw, umask)
    one = np.uint64(1)
    count = 0
    for x in range(na):
        for w in range(wbw):
            bitsy = scratch[x * wbw + w]
            while bitsy:
                low = bitsy & (~bitsy + one)
                y = w * 64 + popcount(low - one)
                bitsy ^= low
                for v in range(wcw):
                    count += popcount(scratch[ac + x * wcw + v] & scratch[bc + y * wcw + v])
    for i in range(used):
        scratch[i] = 0
    return count


@njit(cache=True)
def _leaf(p: I32, buf: I32, s0: int, e0: int, specs: I64, gw: I64, slot: I64, out: I64,
          fout: F64, scratch: npt.NDArray[np.uint64], umask: npt.NDArray[np.uint64],
          lid: I64, tops: I64, n_local: I64) -> None:
    """Add each spec's product over its groups for the users ``buf[s0:e0]`` (one covered
    tuple). Each group week's topics are numbered once for all the specs (``_local_ids``;
    the count is the week's union): the specs of a triple walk ask for each of its weeks
    three times, a quad walk's for each of its weeks in three pairs."""
    m = lid.shape[0] // n_local.shape[0]
    for g in range(gw.shape[0]):
        n_local[g] = _local_ids(p, buf, s0, e0, gw[g], lid, tops, g * m)
    for s in range(specs.shape[0]):
        v = 1
        for g in range(specs.shape[1]):
            a, b, c = specs[s, g, 0], specs[s, g, 1], specs[s, g, 2]
            if a < 0:
                continue
            if b < 0:
                v *= n_local[slot[a]]
            elif c < 0:
                v *= _box_pairs(p, buf, s0, e0, slot[a], slot[b], gw, lid, n_local, scratch,
                                umask)
            else:
                v *= _pairwise3(p, buf, s0, e0, slot[a], slot[b], slot[c], gw, lid, n_local,
                                scratch, umask)
            if v == 0:
                break
        out[s] += v
        fout[s] += v
    for g in range(gw.shape[0]):
        _forget_ids(lid, tops, g * m, n_local[g])


@njit(cache=True)
def _last_week(p: I32, buf: I32, s0: int, e0: int, w: int, gw: I64, specs: I64, slot: I64,
               out: I64, fout: F64, rows: npt.NDArray[np.uint64],
               umask: npt.NDArray[np.uint64], lid: I64, tops: I64, n_local: I64,
               offsets: I64, sizes: I64) -> None:
    """A node whose last tuple week w is left, every spec's groups single weeks: each of its
    users' week-w topics t closes a covered tuple whose holders H_t add Π_g |∪_{u∈H_t} S_u^g|.
    One pass over the node's users ORs each user's group-week set into the row of each of its
    week-w topics, so each t's unions are popcounts, instead of a child node and a leaf per
    topic (measured: the leaves were half a walk's time with single-week groups)."""
    groups = n_local.shape[0] - 1  # slot ``groups`` numbers the week-w topics
    m = lid.shape[0] // n_local.shape[0]
    ow = groups * m
    nw = _local_ids(p, buf, s0, e0, w, lid, tops, ow)
    off = 0
    for g in range(gw.shape[0]):
        n_local[g] = _local_ids(p, buf, s0, e0, gw[g], lid, tops, g * m)
        width = (n_local[g] + 63) // 64
        offsets[g] = off
        _local_rows(p, buf, s0, e0, w, gw[g], lid, ow, g * m, rows, off, width, umask)
        off += nw * width
    for t in range(nw):
        for g in range(gw.shape[0]):
            width = (n_local[g] + 63) // 64
            c = 0
            for v in range(offsets[g] + t * width, offsets[g] + (t + 1) * width):
                c += popcount(rows[v])
            sizes[g] = c
        for s in range(specs.shape[0]):
            v = 1
            for g in range(specs.shape[1]):
                a = specs[s, g, 0]
                if a >= 0:
                    v *= sizes[slot[a]]
            out[s] += v
            fout[s] += v
    for i in range(off):
        rows[i] = 0
    for g in range(gw.shape[0]):
        _forget_ids(lid, tops, g * m, n_local[g])
    _forget_ids(lid, tops, ow, nw)


#: nodes with at most this many users are counted in closed form (inclusion–exclusion over
#: the 2^h − 1 subsets of their users) instead of walked
SMALL = 4


@njit(cache=True)
def _membership(p: I32, buf: I32, s0: int, e0: int, gw: I64, tmask: I64, count: I64,
                masks: I64, n_masks: I64) -> None:
    """For the users ``buf[s0:e0]`` (h ≤ SMALL) and each group week ``gw[g]``:
    ``count[g, M]`` topics are held by exactly the users of bit set M (bit b: user
    ``buf[s0 + b]``), and ``masks[g, :n_masks[g]]`` lists the M that occur."""
    k = p.shape[2]
    h = e0 - s0
    for g in range(gw.shape[0]):
        w = gw[g]
        count[g, :] = 0
        for b in range(h):
            u = buf[s0 + b]
            for a in range(k):
                tmask[p[u, w, a]] |= 1 << b
        for b in range(h):
            u = buf[s0 + b]
            for a in range(k):
                t = p[u, w, a]
                if tmask[t]:
                    count[g, tmask[t]] += 1
                    tmask[t] = 0
        nm = 0
        for mk in range(1, 1 << h):
            if count[g, mk]:
                masks[g, nm] = mk
                nm += 1
        n_masks[g] = nm


@njit(cache=True)
def _masked_value(specs: I64, s: int, S: int, slot: I64, count: I64, masks: I64,
                  n_masks: I64) -> int:
    """Spec ``s``'s product over its groups for the users of bit set S, from the topics'
    membership sets (``_membership``): a pair (x, y) lies in some user's 2-week box exactly
    when M(x) ∩ M(y) ∩ S ≠ ∅, so a union is a sum over membership sets, not over topics
    (the bitset rows of ``_leaf`` cost ~5× more on the nodes of 2–4 users)."""
    v = 1
    for grp in range(specs.shape[1]):
        a, b, c = specs[s, grp, 0], specs[s, grp, 1], specs[s, grp, 2]
        if a < 0:
            continue
        ga = slot[a]
        x = 0
        if b < 0:
            for i in range(n_masks[ga]):
                if masks[ga, i] & S:
                    x += count[ga, masks[ga, i]]
        else:
            # pairs (c < 0), or triples whose three pairs each meet S
            gb = slot[b]
            gc = slot[c] if c >= 0 else -1
            for i in range(n_masks[ga]):
                ma = masks[ga, i] & S
                if ma == 0:
                    continue
                na = count[ga, masks[ga, i]]
                for j in range(n_masks[gb]):
                    mb = masks[gb, j] & S
                    if ma & mb == 0:
                        continue
                    nab = na * count[gb, masks[gb, j]]
                    if gc < 0:
                        x += nab
                        continue
                    for q in range(n_masks[gc]):
                        mc = masks[gc, q]
                        if ma & mc and mb & mc:
                            x += nab * count[gc, mc]
        v *= x
        if v == 0:
            break
    return v


@njit(cache=True)
def _few(p: I32, buf: I32, s0: int, e0: int, zw: I64, d: int, gw: I64, specs: I64,
         tail: I64, out: I64, fout: F64, inter: I64, slot: I64, tmask: I64, count: I64,
         masks: I64, n_masks: I64) -> None:
    """A node of h ≤ SMALL users below depth d: the tuples of the remaining weeks covered by
    exactly the users S number e(S) = Σ_{S' ⊇ S} (−1)^{|S' − S|} I(S'), I(S') = Π_w
    |∩_{u∈S'} S_u^w| (Möbius over supersets), and each such tuple adds every spec's value
    for the users S (``_masked_value``)."""
    k = p.shape[2]
    nz = zw.shape[0]
    h = e0 - s0
    full = (1 << h) - 1
    for mask in range(1, full + 1):
        size = 1
        for j in range(d, nz):
            common = 0
            first = -1
            for b in range(h):
                if mask >> b & 1:
                    first = b
                    break
            u0 = buf[s0 + first]
            for a in range(k):
                t = p[u0, zw[j], a]
                inall = True
                for b in range(first + 1, h):
                    if mask >> b & 1:
                        u = buf[s0 + b]
                        hit = False
                        for c in range(k):
                            if p[u, zw[j], c] == t:
                                hit = True
                                break
                        if not hit:
                            inall = False
                            break
                if inall:
                    common += 1
            size *= common
            if size == 0:
                break
        inter[mask] = size
    if gw.shape[0]:
        _membership(p, buf, s0, e0, gw, tmask, count, masks, n_masks)
    for mask in range(1, full + 1):
        exact = 0
        for sup in range(mask, full + 1):
            if sup & mask == mask:
                extra = 0
                rest = sup ^ mask
                while rest:
                    rest &= rest - 1
                    extra += 1
                exact += -inter[sup] if extra & 1 else inter[sup]
        if exact == 0:
            continue
        single = mask & (mask - 1) == 0
        for s in range(specs.shape[0]):
            v = tail[s, nz] if single else _masked_value(specs, s, mask, slot, count, masks,
                                                         n_masks)
            out[s] += exact * v
            fout[s] += float(exact) * float(v)


@njit(cache=True)
def _alike(p: I32, buf: I32, s0: int, e0: int, zw: I64, d: int, gw: I64) -> bool:
    """Whether the users buf[s0:e0] hold the same sets in the tuple weeks from depth d on and
    in the groups' weeks: then they cover the same sub-box with the same unions, as one user
    (identical or converging users made the walk exponential in the weeks)."""
    k = p.shape[2]
    u0 = buf[s0]
    for i in range(s0 + 1, e0):
        u = buf[i]
        for j in range(d, zw.shape[0]):
            for a in range(k):
                if p[u, zw[j], a] != p[u0, zw[j], a]:
                    return False
        for j in range(gw.shape[0]):
            for a in range(k):
                if p[u, gw[j], a] != p[u0, gw[j], a]:
                    return False
    return True


@njit(cache=True)
def _slots(gw: I64, r: int) -> I64:
    """Each group week's index in ``gw`` (−1 for the other weeks of the r)."""
    slot = np.full(r, -1, dtype=np.int64)
    for g in range(gw.shape[0]):
        slot[gw[g]] = g
    return slot


@njit(cache=True)
def _walk(p: I32, zw: I64, gw: I64, specs: I64, tail: I64, m: int, first: I32, out: I64,
          fout: F64, singles: bool) -> None:
    """Depth-first walk over the covered tuples of the weeks ``zw`` below one first-week
    topic (its holders ``first``); adds every spec's sum into ``out``."""
    k = p.shape[2]
    nz = zw.shape[0]
    words = (m + 63) // 64
    h0 = first.shape[0]
    buf = np.empty(2 * h0 * k + 64, dtype=np.int32)
    buf[:h0] = first
    cap = m * (nz + 1) + 4
    fdepth = np.empty(cap, dtype=np.int64)
    fs = np.empty(cap, dtype=np.int64)
    fe = np.empty(cap, dtype=np.int64)
    fdepth[0], fs[0], fe[0] = 1, 0, h0
    sp = 1
    groups = gw.shape[0] + 1  # the group weeks' local numbers, and a tuple week's
    lid = np.full(groups * m, -1, dtype=np.int64)
    tops = np.empty(groups * m, dtype=np.int64)
    n_local = np.zeros(groups, dtype=np.int64)
    scratch = np.zeros(max(3, gw.shape[0]) * m * words, dtype=np.uint64)
    umask = np.zeros(words, dtype=np.uint64)
    offsets = np.zeros(groups, dtype=np.int64)
    sizes = np.zeros(groups, dtype=np.int64)
    cnt = np.zeros(m + 1, dtype=np.int64)
    keys = np.empty(64, dtype=np.int32)
    vals = np.empty(64, dtype=np.int32)
    inter = np.zeros(1 << SMALL, dtype=np.int64)
    slot = _slots(gw, p.shape[1])  # a group week's row in count/masks, lid, n_local
    tmask = np.zeros(m, dtype=np.int64)
    count = np.zeros((gw.shape[0], 1 << SMALL), dtype=np.int64)
    masks = np.zeros((gw.shape[0], 1 << SMALL), dtype=np.int64)
    n_masks = np.zeros(gw.shape[0], dtype=np.int64)
    while sp > 0:
        sp -= 1
        d, s0, e0 = fdepth[sp], fs[sp], fe[sp]
        h = e0 - s0
        if h > 1 and _alike(p, buf, s0, e0, zw, d, gw):
            h = 1  # the same sets from here on: one user's sub-box and unions
        if h == 1:
            # one user: every tuple of its remaining sub-box is covered by it alone
            for s in range(specs.shape[0]):
                out[s] += tail[s, d]
                fout[s] += tail[s, d]
            continue
        if d == nz:
            _leaf(p, buf, s0, e0, specs, gw, slot, out, fout, scratch, umask, lid, tops,
                  n_local)
            continue
        if h <= SMALL:
            _few(p, buf, s0, e0, zw, d, gw, specs, tail, out, fout, inter, slot, tmask,
                 count, masks, n_masks)
            continue
        if singles and d == nz - 1:
            _last_week(p, buf, s0, e0, zw[d], gw, specs, slot, out, fout, scratch, umask,
                       lid, tops, n_local, offsets, sizes)
            continue
        w = zw[d]
        ne = h * k
        top = e0
        if top + ne > buf.shape[0]:
            grown = np.empty(max(2 * buf.shape[0], top + ne), dtype=np.int32)
            grown[:top] = buf[:top]
            buf = grown
        if ne <= 48:
            # a few users: insertion sort of (topic, user) beats a pass over m counters
            q = 0
            for i in range(s0, e0):
                u = buf[i]
                for a in range(k):
                    t = p[u, w, a]
                    j = q
                    while j > 0 and keys[j - 1] > t:
                        keys[j] = keys[j - 1]
                        vals[j] = vals[j - 1]
                        j -= 1
                    keys[j] = t
                    vals[j] = u
                    q += 1
            i = 0
            while i < ne:
                j = i
                while j < ne and keys[j] == keys[i]:
                    buf[top + j - i] = vals[j]
                    j += 1
                fdepth[sp], fs[sp], fe[sp] = d + 1, top, top + (j - i)
                sp += 1
                top += j - i
                i = j
        else:
            for i in range(s0, e0):
                u = buf[i]
                for a in range(k):
                    cnt[p[u, w, a] + 1] += 1
            for t in range(m):
                cnt[t + 1] += cnt[t]
            for i in range(s0, e0):
                u = buf[i]
                for a in range(k):
                    t = p[u, w, a]
                    buf[top + cnt[t]] = u
                    cnt[t] += 1
            prev = 0
            for t in range(m):  # cnt[t] is now where topic t's group ends
                if cnt[t] > prev:
                    fdepth[sp], fs[sp], fe[sp] = d + 1, top + prev, top + cnt[t]
                    sp += 1
                    prev = cnt[t]
            cnt[:] = 0


@njit(cache=True, parallel=True)
def _box_sums(p: I32, zw: I64, gw: I64, specs: I64, tail: I64, m: int,
              threads: int, singles: bool) -> tuple[I64, F64]:
    n, _, k = p.shape
    w = zw[0]
    start = np.zeros(m + 1, dtype=np.int64)
    for u in range(n):
        for a in range(k):
            start[p[u, w, a] + 1] += 1
    for t in range(m):
        start[t + 1] += start[t]
    holders = np.empty(start[m], dtype=np.int32)
    fill = start[:-1].copy()
    for u in range(n):
        for a in range(k):
            t = p[u, w, a]
            holders[fill[t]] = u
            fill[t] += 1
    order = np.argsort(start[:-1] - start[1:])  # the largest groups first
    out = np.zeros((m, specs.shape[0]), dtype=np.int64)
    fout = np.zeros((m, specs.shape[0]), dtype=np.float64)
    # prange hands each thread one contiguous block of its range (whatever
    # parallel_chunksize says, under the OpenMP layer): over topics ordered largest first,
    # the first thread got all the large walks (measured: 5.9 against 0.6 CPU seconds, a
    # 7-week walk at 1M users on one core). Dealt out in turn instead, largest first, each
    # of the ``threads`` gets about the same share. (The caller passes numba's thread count:
    # called in here, numba.get_num_threads made the kernel uncachable, "dynamic globals".)
    threads = max(1, threads)
    for j in prange(threads):
        for i in range(j, m, threads):
            t = order[i]
            if start[t + 1] > start[t]:
                _walk(p, zw, gw, specs, tail, m, holders[start[t]:start[t + 1]], out[t],
                      fout[t], singles)
    return out.sum(axis=0), fout.sum(axis=0)


@njit(cache=True)
def _leaf_all(p: I32, specs: I64, gw: I64, m: int) -> tuple[I64, F64]:
    out = np.zeros(specs.shape[0], dtype=np.int64)
    fout = np.zeros(specs.shape[0], dtype=np.float64)
    words = (m + 63) // 64
    groups = max(1, gw.shape[0])
    slot = _slots(gw, p.shape[1])
    users = np.arange(p.shape[0]).astype(np.int32)
    _leaf(p, users, 0, p.shape[0], specs, gw, slot, out, fout,
          np.zeros(3 * m * words, dtype=np.uint64), np.zeros(words, dtype=np.uint64),
          np.full(groups * m, -1, dtype=np.int64), np.empty(groups * m, dtype=np.int64),
          np.zeros(groups, dtype=np.int64))
    return out, fout


Group = Sequence[int]


def box_sums(profiles: npt.ArrayLike, m: int, weeks: Sequence[int],
             specs: Sequence[Sequence[Group]] = ((),)) -> list[int]:
    """For each spec (a list of groups of 1–3 weeks outside ``weeks``), the exact sum over the
    tuples z of ``weeks`` covered by at least one user's box of Π over the groups of:

    * one week w: ``|∪_{u∈H(z)} S_u^w|``;
    * two weeks (w1, w2): ``|∪_{u∈H(z)} S_u^w1 × S_u^w2|``;
    * three weeks (a, b, c): the triples whose three pairs each lie in some user's 2-week box;

    H(z): the users whose box over ``weeks`` holds z. The empty spec counts the covered
    tuples (the size of the union of the boxes).

    Args:
        profiles: ``int[n, r, k]`` topic indices in ``0..m-1``, a full set every week.
        m: taxonomy size |T|.
        weeks: the weeks Z of the tuples (distinct, may be empty: then H = every user).
        specs: the functions to sum; groups within a spec use distinct weeks outside Z.
    """
    # the profiles went to the walk unchecked: a topic id >= m, a negative one, m = 0 or
    # True, or NaN (cast) wrote outside its arrays (a segmentation fault); weeks "01" or
    # [0.5] were cast to weeks 0, 1 and 0
    p, m = checked_profiles(profiles, m, users_at_least=0)
    return walk_sums(p, m, _weeks(weeks, "weeks"),
                 [[_weeks(g, "a group") for g in _sequence(spec, "a spec")]
                  for spec in _sequence(specs, "specs")])


def _sequence(value: object, what: str) -> list[object]:
    if isinstance(value, str | bytes) or not isinstance(value, Sequence | np.ndarray):
        raise QIFError(f"{what} must be a sequence, got {value!r}")
    return list(value)


def _weeks(value: object, what: str) -> list[int]:
    """A sequence of week indices (integers, not bools), checked against r by ``walk_sums``."""
    return [integer(w, f"{what}'s week", error=QIFParameterError)
            for w in _sequence(value, what)]


def walk_sums(p: I32, m: int, weeks: list[int], specs: list[list[list[int]]]) -> list[int]:
    """``box_sums`` of checked profiles (``checked_profiles``), weeks and specs."""
    n, r, k = p.shape
    zw = np.asarray(weeks, dtype=np.int64)
    arr = np.full((len(specs), max(1, max((len(s) for s in specs), default=1)), 3), -1,
                  dtype=np.int64)
    for i, spec in enumerate(specs):
        for j, group in enumerate(spec):
            if not 1 <= len(group) <= 3:
                raise QIFError(f"a group has 1 to 3 weeks, got {list(group)}")
            arr[i, j, :len(group)] = list(group)
    used = [w for spec in specs for g in spec for w in g]
    if len(set(zw.tolist())) != len(zw) or any(not 0 <= w < r for w in [*zw.tolist(), *used]):
        raise QIFError(f"weeks must be distinct and in 0..{r - 1}")
    if set(zw.tolist()) & set(used):
        raise QIFError("a group's week is one of the tuple weeks")
    if n == 0:
        return [0] * len(specs)
    every_group_week = np.unique(arr[arr >= 0]).astype(np.int64)
    if len(zw) == 0:
        return _exact(*_leaf_all(p, arr, every_group_week, int(m)))
    # a single user's sub-box below depth d: k per remaining tuple week, k^|g| per group
    tail = np.zeros((len(specs), len(zw) + 1), dtype=np.int64)
    for i, spec in enumerate(specs):
        group_weeks = sum(len(g) for g in spec)
        for d in range(len(zw) + 1):
            tail[i, d] = k ** (len(zw) - d + group_weeks)
    singles = bool((arr[:, :, 1] < 0).all())  # every group one week (or none)
    return _exact(*_box_sums(p, zw, every_group_week, arr, tail, int(m),
                             numba.get_num_threads(), singles))


def _exact(sums: I64, shadow: F64) -> list[int]:
    # the walk adds in int64; its float64 shadow says whether a sum could have wrapped
    if (shadow > 2.0**62).any():
        raise QIFError("a box sum exceeds 2^62: too many users or weeks for the exact counts")
    return [int(v) for v in sums]


def checked_profiles(profiles: npt.ArrayLike, m: int, *,
                     users_at_least: int = 1) -> tuple[I32, int]:
    """The profiles as the walk takes them (``int32[n, r, k]``, each week's set sorted) and
    m, checked: full profiles of distinct topics in ``0..m-1``, and the walk's bitsets within
    the machine's memory."""
    # topic ids are 32-bit in the walk (an id past 2^31 wrapped), and each of its threads
    # keeps three m x m bitsets: m = 10**12 failed on the allocation, m = 2**31 + 20 was
    # killed by the kernel
    m = integer(m, "m", at_least=1, at_most=2**31 - 1, error=QIFParameterError)
    arr = integer_array(profiles, "profiles", error=QIFParameterError)
    if (arr.ndim != 3 or arr.shape[0] < users_at_least or arr.shape[1] < 1
            or arr.shape[2] < 1):
        raise QIFParameterError(f"profiles must be a non-empty [users, weeks, slots] array, "
                                f"got shape {arr.shape}", field="profiles")
    if ((arr < 0) | (arr >= m)).any():
        raise QIFParameterError(f"a topic index is outside [0, {m}) (the bounds need full "
                                "profiles)", field="profiles")
    srt = np.sort(arr, axis=2)
    if (srt[:, :, 1:] == srt[:, :, :-1]).any():
        raise QIFParameterError("a user holds the same topic twice in a week",
                                field="profiles")

    from topicslab._resources import require_memory

    words = (m + 63) // 64
    require_memory(numba.get_num_threads() * (24.0 * m * words + 8.0 * m * (arr.shape[1] + 9)),
                   f"the cover levels' bitsets over m = {m:,} topics", field="m")
    # each week's set in topic order: users with the same sets then have the same rows,
    # which the walk's test of alike users compares (the sums do not depend on the order)
    return np.ascontiguousarray(np.sort(arr, axis=2), dtype=np.int32), m
