"""Generate the reference population: simulated weekly visits -> the mechanism's own top-k.

For every user the numba kernel simulates (see ``params.py`` for the behavioural model):

1. a persistent activity level and a few weighted interests (drawn from the long-tailed topic
   popularity, with cross-category affinities between a user's interests);
2. ``burn_in_weeks`` drift steps before week 0, then one drift step per week (an interest is
   replaced with a topic-dependent probability: persistent but drifting interests);
3. each week a Poisson number of visits; a visit lands on an interest (by weight) or on an
   exploration topic, and counts for that topic, sometimes its parent (hierarchy) and sometimes
   co-tagged topics (sites carry several topics).

Each simulated week's topic visit counts are ranked by the mechanism's own rule
(``topicslab.api.topk.rank_row``, the row rule of ``top_k_sparse``) — Chrome's ranking (utility
bucket, then count, random ties) with uniform padding when fewer than k topics were seen (Dick
et al. §3, Algorithm 1). Sets are never drawn directly.

Randomness: every draw is ``hash3(key, user_id, week + burn_in, purpose << 32 | counter)`` with
the population stream key of the seed, and the top-k row keys are ``user_id * 1024 + week``; so
any slice of users regenerates identically whatever the chunking (and in parallel).

The kernel ranks each week as soon as it has counted it, so the visit counts are never written
out (``_visit_counts`` still writes them, as CSR, for the tests' cross-check against
``top_k_sparse``; at 10M users writing them and ranking them apart took most of the time).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt
from numba import njit, prange

from topicslab._checks import flag, integer
from topicslab._progress import task
from topicslab.api import Mechanism
from topicslab.api.hashing import (
    STREAM_PAD,
    STREAM_POPULATION,
    STREAM_TIEBREAK,
    below,
    derive_key,
    hash3,
    next_word,
    unit,
)
from topicslab.api.topk import rank_row
from topicslab.datamodel import TopicSets
from topicslab.population.params import MAX_INTERESTS, CompiledParams, PopulationParams
from topicslab.taxonomy import Taxonomy, resolve

GENERATOR_NAME = "topicslab.population.visits/1"

#: Row keys of the top-k randomness are ``user_id * ROW_STRIDE + week`` (weeks < ROW_STRIDE).
ROW_STRIDE = 1024

# Purposes of the hash draws (the high word of the counter argument).
_P_ACTIVITY = 1
_P_NINTEREST = 2
_P_WEIGHT = 3
_P_DRAW = 4
_P_DRIFT = 5
_P_WEEK = 6
_P_NVISIT = 7
_P_VISIT = 8
_P_REPEAT = 9
_USER_WEEK = 0xFFFF_FFFF  # the "week" word of user-level (persistent) draws

#: users generated at a time by default (``generate``'s ``chunk_users``)
CHUNK_USERS = 250_000

_BLOCK = 512  # users per parallel work item (scratch arrays are per block)

# What the kernel does with each simulated week (``_simulate``'s ``mode``).
_COUNT = 0     # count its distinct topics only
_CSR = 1       # write its visit counts (CSR, sized by a _COUNT pass)
_PROFILES = 2  # rank them into the week's top-k profile


@njit(cache=True, inline="always")
def _cnt(purpose: int, j: int) -> np.uint64:
    return np.uint64((purpose << 32) | j)


@njit(cache=True, inline="always")
def _normal(h: np.uint64) -> float:
    """Standard normal deviate from one hash (Box-Muller on two derived uniforms)."""
    u1 = 1.0 - unit(h)  # (0, 1]
    u2 = unit(next_word(h))
    return math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)


@njit(cache=True, inline="always")
def _poisson(lam: float, h: np.uint64) -> int:
    """Poisson deviate by CDF inversion; normal approximation for large means."""
    if lam <= 0.0:
        return 0
    if lam > 60.0:
        v = math.floor(lam + math.sqrt(lam) * _normal(h) + 0.5)
        return v if v > 0 else 0
    u = unit(h)
    p = math.exp(-lam)
    f = p
    n = 0
    while u > f and n < 400:
        n += 1
        p *= lam / n
        f += p
    return n


@njit(cache=True, inline="always")
def _alias(h: np.uint64, alias_p: np.ndarray, alias_i: np.ndarray) -> np.int64:
    i = below(h, alias_p.shape[0])
    if unit(next_word(h)) < alias_p[i]:
        return i
    return alias_i[i]


@njit(cache=True, inline="always")
def _draw_interest(h: np.uint64, prev: int, alias_p: np.ndarray, alias_i: np.ndarray,
                   aff_ptr: np.ndarray, aff_to: np.ndarray, aff_cum: np.ndarray,
                   aff_total: np.ndarray, aff_prob: np.ndarray) -> np.int64:
    """A new interest: an affinity neighbour of the previous interest, else by popularity."""
    if prev >= 0 and aff_prob[prev] > 0.0:
        h2 = next_word(next_word(h))
        if unit(h2) < aff_prob[prev]:
            x = unit(next_word(h2)) * aff_total[prev]
            lo = aff_ptr[prev]
            hi = aff_ptr[prev + 1]
            for e in range(lo, hi):
                if x < aff_cum[e]:
                    return aff_to[e]
            return aff_to[hi - 1]
    return _alias(h, alias_p, alias_i)


@njit(cache=True, inline="always")
def _visit(counts: np.ndarray, touched: np.ndarray, nt: int, topic: int, add: np.int32) -> int:
    """Count ``add`` (0 or 1) visits of ``topic`` in the week's ``counts``, listing it in
    ``touched[:nt]`` when first counted; returns the new ``nt``. No branch on the outcome:
    whether a visit's topic is new to the week, and whether a visit also counts for its
    parent or co-occurring topics, are coin tosses the branch predictor loses."""
    touched[nt] = topic  # (kept only when nt moves on)
    new = np.int64(counts[topic] == 0) & np.int64(add)
    counts[topic] += add
    return nt + int(new)


@njit(cache=True, parallel=True)
def _simulate(user_ids, n_weeks, key, scalars, burn_in, alias_p, alias_i, explore_p,
              explore_i, engagement, drift, parent,
              parent_tag, cot_ptr, cot_to, cot_p, aff_ptr, aff_to, aff_cum, aff_total, aff_prob,
              mode, distinct, indptr, out_topics, out_counts, bucket, tie_key, pad_key, k,
              out_sets):
    """Simulate visits of ``user_ids`` for weeks ``0..n_weeks-1``.

    Every mode stores the number of distinct topics of each user-week row
    (``distinct[u * n_weeks + w]``). ``mode == _PROFILES``: also rank each row's visit counts
    into its top-k profile ``out_sets[row]`` (``topk.rank_row``, Chrome's rule, row key
    ``user_id * ROW_STRIDE + week``). ``mode == _CSR``: write each row's topics and visit
    counts at ``indptr[row]`` of ``out_topics`` / ``out_counts`` instead (the CSR input of
    ``top_k_sparse``, which gives the same profiles).

    (numba keys this kernel's cache on this file: after editing ``rank_row`` alone, clear
    ``__pycache__``, or the cached kernel keeps the old row rule.)
    """
    n = user_ids.shape[0]
    m = alias_p.shape[0]
    act_mu = scalars[0]
    act_sigma = scalars[1]
    week_sigma = scalars[2]
    lam_int = scalars[3]
    w_sigma = scalars[4]
    explore = scalars[5]
    n_blocks = (n + _BLOCK - 1) // _BLOCK
    for blk in prange(n_blocks):
        counts = np.zeros(m, dtype=np.int32)
        touched = np.empty(m + 1, dtype=np.int64)  # (+1: ``_visit`` writes one past the end)
        slot_topic = np.empty(MAX_INTERESTS, dtype=np.int64)
        slot_cum = np.empty(MAX_INTERESTS, dtype=np.float64)
        slot_w = np.empty(MAX_INTERESTS, dtype=np.float64)
        row_counts = np.empty(m, dtype=np.int32)
        best_t = np.empty(k, dtype=np.int64)
        best_b = np.empty(k, dtype=np.int64)
        best_c = np.empty(k, dtype=np.float64)
        best_h = np.empty(k, dtype=np.uint64)
        for u in range(blk * _BLOCK, min(n, (blk + 1) * _BLOCK)):
            uid = np.uint64(user_ids[u])
            uw = np.uint64(_USER_WEEK)
            activity = math.exp(act_mu + act_sigma * _normal(
                hash3(key, uid, uw, _cnt(_P_ACTIVITY, 0))))
            n_int = 1 + _poisson(lam_int, hash3(key, uid, uw, _cnt(_P_NINTEREST, 0)))
            if n_int > MAX_INTERESTS:
                n_int = MAX_INTERESTS
            for j in range(n_int):
                slot_w[j] = math.exp(w_sigma * _normal(hash3(key, uid, uw, _cnt(_P_WEIGHT, j))))
            # interests at the start of the burn-in (week index 0 = burn-in start)
            prev = -1
            for j in range(n_int):
                t = _draw_interest(hash3(key, uid, np.uint64(0), _cnt(_P_DRAW, j)), prev,
                                   alias_p, alias_i, aff_ptr, aff_to, aff_cum, aff_total,
                                   aff_prob)
                slot_topic[j] = t
                prev = t
            for wk in range(1, burn_in + n_weeks):
                wkey = np.uint64(wk)
                # drift: an interest is replaced with its topic's weekly drift probability
                prev = -1
                for j in range(n_int):
                    hd = hash3(key, uid, wkey, _cnt(_P_DRIFT, j))
                    if unit(hd) < drift[slot_topic[j]]:
                        slot_topic[j] = _draw_interest(
                            hash3(key, uid, wkey, _cnt(_P_DRAW, j)), prev, alias_p, alias_i,
                            aff_ptr, aff_to, aff_cum, aff_total, aff_prob)
                    prev = slot_topic[j]
                week = wk - burn_in
                if week < 0:
                    continue
                # an interest's pull is its weight times its topic's engagement
                tot = 0.0
                for j in range(n_int):
                    tot += slot_w[j] * engagement[slot_topic[j]]
                    slot_cum[j] = tot
                lam = activity * math.exp(
                    week_sigma * _normal(hash3(key, uid, wkey, _cnt(_P_WEEK, 0)))
                    - 0.5 * week_sigma * week_sigma)
                n_visits = _poisson(lam, hash3(key, uid, wkey, _cnt(_P_NVISIT, 0)))
                nt = 0
                for v in range(n_visits):
                    h = hash3(key, uid, wkey, _cnt(_P_VISIT, v))
                    h1 = next_word(h)
                    if unit(h) < explore:
                        o = _alias(h1, explore_p, explore_i)
                    else:
                        # the first interest whose cumulative pull passes x: the cumulative
                        # pulls rise, so it is the number of them at or below x (counted
                        # without a branch per interest)
                        x = unit(h1) * tot
                        j = 0
                        for i in range(n_int - 1):
                            j += np.int64(x >= slot_cum[i])
                        o = slot_topic[j]
                    nt = _visit(counts, touched, nt, o, 1)
                    h2 = next_word(next_word(h1))
                    par = parent[o]
                    nt = _visit(counts, touched, nt, max(par, 0),
                                np.int32(par >= 0 and unit(h2) < parent_tag[o]))
                    for e in range(cot_ptr[o], cot_ptr[o + 1]):
                        h2 = next_word(h2)
                        nt = _visit(counts, touched, nt, cot_to[e], np.int32(unit(h2) < cot_p[e]))
                row = u * n_weeks + week
                distinct[row] = nt
                if mode == _PROFILES:
                    for i in range(nt):
                        row_counts[i] = counts[touched[i]]
                    rank_row(touched, row_counts, nt, bucket,
                             uid * np.uint64(ROW_STRIDE) + np.uint64(week), tie_key, pad_key,
                             m, k, best_t, best_b, best_c, best_h, out_sets[row])
                elif mode == _CSR:
                    base = indptr[row]
                    for i in range(nt):
                        out_topics[base + i] = touched[i]
                        out_counts[base + i] = counts[touched[i]]
                for i in range(nt):
                    counts[touched[i]] = 0


def _run_kernel(user_ids: npt.NDArray[np.int64], n_weeks: int, key: np.uint64,
                cp: CompiledParams, mode: int, distinct: npt.NDArray[np.int32], *,
                indptr: npt.NDArray[np.int64] | None = None,
                topics: npt.NDArray[np.int16] | None = None,
                counts: npt.NDArray[np.int32] | None = None,
                bucket: npt.NDArray[np.int8] | None = None, tie_key: int = 0,
                pad_key: int = 0, k: int = 1,
                sets: npt.NDArray[np.int16] | None = None) -> None:
    """``_simulate`` with the model's tables and empty arrays for what ``mode`` does not use."""
    def given(a: npt.NDArray[Any] | None, dtype: type, ndim: int = 1) -> npt.NDArray[Any]:
        return np.zeros((0,) * ndim, dtype=dtype) if a is None else a

    _simulate(user_ids, n_weeks, key, cp.scalars, cp.burn_in, cp.alias_p, cp.alias_i,
              cp.explore_p, cp.explore_i, cp.engagement, cp.drift, cp.parent, cp.parent_tag,
              cp.cot_ptr, cp.cot_to, cp.cot_p, cp.aff_ptr, cp.aff_to, cp.aff_cum,
              cp.aff_total, cp.aff_prob, mode, distinct, given(indptr, np.int64),
              given(topics, np.int16), given(counts, np.int32), given(bucket, np.int8),
              np.uint64(tie_key), np.uint64(pad_key), k, given(sets, np.int16, 2))


def _visit_counts(
    user_ids: npt.NDArray[np.int64], n_weeks: int, key: np.uint64, cp: CompiledParams
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int16], npt.NDArray[np.int32]]:
    """CSR weekly topic visit counts, one row per (user, week) in user-major order.

    Two passes of the kernel (the first sizes the arrays); the generator ranks the weeks
    inside one pass instead (``_profiles``), and the tests check both give the same sets."""
    n_rows = user_ids.shape[0] * n_weeks
    distinct = np.zeros(n_rows, dtype=np.int32)
    _run_kernel(user_ids, n_weeks, key, cp, _COUNT, distinct)
    indptr = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(distinct, out=indptr[1:])
    topics = np.empty(int(indptr[-1]), dtype=np.int16)
    counts = np.empty(int(indptr[-1]), dtype=np.int32)
    _run_kernel(user_ids, n_weeks, key, cp, _CSR, distinct, indptr=indptr, topics=topics,
                counts=counts)
    return indptr, topics, counts


def _profiles(user_ids: npt.NDArray[np.int64], n_weeks: int, seed: int, key: np.uint64,
              cp: CompiledParams, k: int, tax: Taxonomy
              ) -> tuple[npt.NDArray[np.int16], npt.NDArray[np.int32]]:
    """``int16[n * n_weeks, k]`` profiles (user-major rows) and each row's distinct topics:
    one pass, each simulated week ranked as soon as it is counted."""
    n_rows = user_ids.shape[0] * n_weeks
    distinct = np.zeros(n_rows, dtype=np.int32)
    sets = np.empty((n_rows, k), dtype=np.int16)
    _run_kernel(user_ids, n_weeks, key, cp, _PROFILES, distinct, bucket=tax.bucket,
                tie_key=int(derive_key(seed, STREAM_TIEBREAK)),
                pad_key=int(derive_key(seed, STREAM_PAD)), k=k, sets=sets)
    return sets, distinct


@njit(cache=True, parallel=True)
def _repeat_profiles(sets: np.ndarray, user_ids: np.ndarray, key: np.uint64, burn_in: int,
                     prob: float) -> None:
    """Routine weeks: week w (≥ 1) repeats the user's week w−1 profile with probability
    ``prob`` (in week order, so a run of routine weeks keeps one profile)."""
    n, w, k = sets.shape
    for u in prange(n):
        uid = np.uint64(user_ids[u])
        for wk in range(1, w):
            h = hash3(key, uid, np.uint64(wk + burn_in), _cnt(_P_REPEAT, 0))
            if unit(h) < prob:
                for s in range(k):
                    sets[u, wk, s] = sets[u, wk - 1, s]


def _generate_block(user_ids: npt.NDArray[np.int64], n_weeks: int, seed: int,
                    cp: CompiledParams, k: int, tax: Taxonomy
                    ) -> tuple[npt.NDArray[np.int16], int]:
    """Sets ``int16[n, n_weeks, k]`` of some users and the number of padded user-weeks."""
    key = derive_key(seed, STREAM_POPULATION)
    sets, distinct = _profiles(user_ids, n_weeks, seed, key, cp, k, tax)
    padded = int(np.count_nonzero(distinct < k))
    out = sets.reshape(user_ids.shape[0], n_weeks, k)
    if cp.profile_repeat > 0.0:
        _repeat_profiles(out, user_ids, key, cp.burn_in, cp.profile_repeat)
    return out, padded


def _check(n_users: int, n_weeks: int, k: int, first_user: int, tax: Taxonomy,
           params: object = None) -> None:
    # "10" and 10.7 failed inside; past 2^63 the first user's range came out negative and
    # the refusal blamed first_user
    n_users = integer(n_users, "n_users", at_least=0, at_most=2**63,
                      why="the users' ids are 64-bit signed integers")
    integer(n_weeks, "weeks", at_least=1, at_most=ROW_STRIDE - 1,
            why=f"the top-k randomness is keyed by user * {ROW_STRIDE} + week")
    Mechanism(k=k, taxonomy=tax)  # the profile size k, checked where it is defined
    # was a ValueError, not a refusal; and ids past 2^63 - 1 wrapped to negative ones
    integer(first_user, "first_user", at_least=0, at_most=2**63 - 1 - max(n_users - 1, 0),
            why=f"the ids of the {n_users:,} users are 64-bit signed integers")
    if params is not None and not isinstance(params, PopulationParams):
        # a dict failed deep in the generator ('dict' object has no attribute 'compile')
        raise TypeError(f"params takes PopulationParams (population.load_reference or "
                        f"PopulationParams.load), got {type(params).__name__}")
    if params is not None:
        # parameters built in Python were used as they came: explore_prob=2 or -0.5, a
        # negative or NaN sigma, and tables of another taxonomy generated a population
        params.check(tax)


def _metadata(seed: int, params: PopulationParams, k: int, n_weeks: int, padded: int,
              n_users: int) -> dict[str, object]:
    rows = n_users * n_weeks
    return {
        "generator": GENERATOR_NAME,
        "seed": seed,
        "params_fingerprint": params.fingerprint(),
        "k": k,
        "weeks": n_weeks,
        "padded_user_weeks": padded,
        "padded_share": padded / rows if rows else 0.0,
    }


def generate_chunks(
    n_users: int,
    n_weeks: int = 4,
    *,
    chunk_users: int = CHUNK_USERS,
    seed: int = 0,
    params: PopulationParams | None = None,
    k: int = 5,
    taxonomy: Taxonomy | str = "v2",
    first_user: int = 0,
    progress: bool = False,
) -> Iterator[TopicSets]:
    """Yield the population of users ``first_user .. first_user + n_users - 1`` in chunks.

    Each chunk is a ``TopicSets`` with its global ``user_ids``; concatenating the chunks gives
    exactly ``generate(n_users, ...)`` for any ``chunk_users`` (randomness is keyed per user).
    The arguments are checked when this is called, before the first chunk is asked for (a
    writer opened for the chunks is then never opened for nothing).
    """
    progress = flag(progress, "progress")
    from topicslab.population.params import load_reference

    tax = resolve(taxonomy)
    _check(n_users, n_weeks, k, first_user, tax, params)
    integer(chunk_users, "chunk_users", at_least=1)  # was a ValueError, not a refusal
    from topicslab._resources import require_memory

    # a chunk is generated whole (generate_chunks(10**9, chunk_users=10**9) was NumPy's
    # "MemoryError: Unable to allocate 7.45 GiB"): the population command's measured peak of
    # a chunk, about 80 bytes a user-week at k = 5, more with a wider k
    users = min(int(chunk_users), int(n_users))
    require_memory(float(users) * n_weeks * CHUNK_BYTES_PER_USER_WEEK * max(int(k), 5) / 5,
                   f"generating {users:,} users x {n_weeks:,} weeks at once",
                   field="chunk_users", hint="use a smaller chunk_users")
    par = params if params is not None else load_reference(tax)
    return _chunks(n_users, n_weeks, chunk_users, seed, par, k, tax, first_user, progress)


#: peak bytes of a user-week while a chunk is generated (the weekly visit counts, their CSR
#: index, the top-k sets and the row keys: ~65 measured, rounded up; the population command's
#: and the run's memory checks count with it)
CHUNK_BYTES_PER_USER_WEEK = 80


def _chunks(n_users: int, n_weeks: int, chunk_users: int, seed: int, par: PopulationParams,
            k: int, tax: Taxonomy, first_user: int, progress: bool) -> Iterator[TopicSets]:
    cp = par.compile(tax)
    with task("population", n_users, enabled=progress) as advance:
        for start in range(0, n_users, chunk_users):
            cnt = min(chunk_users, n_users - start)
            ids = np.arange(first_user + start, first_user + start + cnt, dtype=np.int64)
            sets, padded = _generate_block(ids, n_weeks, seed, cp, k, tax)
            yield TopicSets(sets, tax, ids, _metadata(seed, par, k, n_weeks, padded, cnt))
            advance(cnt)


def generate(
    n_users: int,
    n_weeks: int = 4,
    *,
    seed: int = 0,
    params: PopulationParams | None = None,
    k: int = 5,
    taxonomy: Taxonomy | str = "v2",
    first_user: int = 0,
    progress: bool = False,
    chunk_users: int = CHUNK_USERS,
) -> TopicSets:
    """Weekly top-k topic sets of ``n_users`` simulated users (the reference population).

    Args:
        n_users: number of users; their ids are ``first_user ..``.
        n_weeks: weeks per user (statistics are stationary across weeks).
        seed: seed of all randomness (visits, top-k tie-breaks and padding).
        params: population parameters (default: the calibrated ``load_reference(taxonomy)``).
        k: profile size (5 in Chrome).
        taxonomy: taxonomy version or object.
        first_user: id of the first user (regenerate any slice of a larger population).
        progress: show a progress bar.
        chunk_users: users simulated per chunk (memory bound; does not change the result).

    Returns:
        ``TopicSets`` with metadata ``generator``, ``seed``, ``params_fingerprint``,
        ``padded_share`` (share of user-weeks with fewer than k distinct topics seen).
    """
    progress = flag(progress, "progress")
    tax = resolve(taxonomy)
    _check(n_users, n_weeks, k, first_user, tax, params)
    from topicslab._resources import require_memory  # (generate(10**13) was a MemoryError)

    require_memory(float(n_users) * n_weeks * k * 2, f"the topic sets of {n_users:,} users",
                   field="n_users", hint="generate_chunks makes them a chunk at a time")
    out = np.empty((n_users, n_weeks, k), dtype=np.int16)
    padded = 0
    meta: dict[str, object] = {}
    for chunk in generate_chunks(n_users, n_weeks, chunk_users=chunk_users, seed=seed,
                                 params=params, k=k, taxonomy=tax, first_user=first_user,
                                 progress=progress):
        lo = int(chunk.user_ids[0]) - first_user
        out[lo:lo + chunk.n_users] = chunk.sets
        padded += int(chunk.metadata["padded_user_weeks"])
        meta = chunk.metadata
    if not meta:
        from topicslab.population.params import load_reference

        p = params if params is not None else load_reference(tax)
        meta = _metadata(seed, p, k, n_weeks, 0, 0)
    meta = dict(meta)
    meta["padded_user_weeks"] = padded
    meta["padded_share"] = padded / (n_users * n_weeks) if n_users else 0.0
    ids = np.arange(first_user, first_user + n_users, dtype=np.int64)
    return TopicSets(out, tax, ids, meta)
