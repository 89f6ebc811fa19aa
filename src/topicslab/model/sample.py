"""Sampling synthetic users from a type mixture (paper Algorithm 2), seeded, chunked and
streaming.

Public names:
    sample(model, n_users, *, seed, weeks=None, chunk_users=1_048_576, first_user=0,
           raw=False, progress=False, device="cpu") -> TopicSets        in memory
    sampler(model, *, seed, weeks=None) -> draw(first_user, n)        ranges of one draw
    sample_to_file(model, path, n_users, *, seed, weeks=None, format="parquet",
                   chunk_users=1_048_576, shards=None, progress=True,
                   device="cpu") -> list[str]
    week_map(fitted_weeks, weeks) -> int[weeks]                         the stationarity rule
    AliasTables / alias_tables(model)                                   Walker alias tables

Algorithm 2: pick a type I uniformly from [T]; for each week i and slot s draw
x_{i,s} ~ softmax(θ[I, i, s, :]); S_i = the distinct x_{i,·}. Sets may hold fewer than k topics
and are kept so (``-1`` empties); the Topics API pads them when traces are simulated.
Persistent types (``model.stay``): week 0 draws a mode μ ~ mode_weights[I] and the slots from
softmax(θ[I, μ, s, :]); in week i ≥ 1 the mode is kept with probability mode_stay[I] — then
slot s keeps x_{i−1,s} with probability stay[I, μ, s], else draws afresh — or a new mode is
drawn and all its slots afresh.

Randomness is counter-based (``topicslab.api.hashing``): user u's type and slot draws are pure
functions of (seed, u, week, slot), so the output does not depend on the chunk size or the
number of threads, and any range of users can be regenerated alone (``first_user``). Each slot
draw is one alias-table lookup (O(1), Walker/Vose), in a parallel numba kernel.

Devices: ``device="cpu"`` (the default) draws with the numba kernel; ``"cuda"`` (or a CUDA
``torch.device``) draws with PyTorch on the GPU (``topicslab.model._sample_torch``): the alias
tables are built once (numpy) and moved to the device, each chunk is drawn there and copied back
as int16 for the writers. The torch path evaluates the same hashes in int64 arithmetic and
compares the same float64 values, so it draws the same users bit for bit (same sets, same raw
slots, for any seed, chunking and ``first_user``). ``"auto"`` uses CUDA when
``torch.cuda.is_available()``, else the numba kernel; ``"cuda"`` without CUDA is an
``InputError``.

Stationarity rule for more weeks than were fitted (paper types; persistent types are
stationary by construction and sample any number of weeks): sampled week w uses fitted week
``w mod r`` of the user's type. Every fitted week carries the same targets (Dick et al. §4.1), so
each sampled week and each consecutive pair (i, i+1), i < r−1, keeps its fitted statistics;
the wrap-around pair (r−1 → 0) repeats every r weeks and is fitted only when the model was
fitted with ``cyclic=True`` (``model.week_pairs`` then contains ``(r−1, 0)``); otherwise its
statistics are the model's unconstrained q_across(θ; r−1, 0), whose errors ``topicslab
validate`` reports (``wrap_transition``; ``validate.fit_quality(..., week_pairs=[(r−1, 0)])``).

Output formats: Parquet through ``topicslab.io.SetsWriter`` (sets: distinct, sorted); the
release's TFRecord through ``topicslab.io.write_sets_tfrecord`` with the *raw* k slots per week
in draw order (duplicates possible, as in the release), one shard per chunk.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from numba import njit, prange

from topicslab._checks import flag, integer, value_shown
from topicslab._progress import task
from topicslab.api.hashing import below, derive_key, hash3, next_word
from topicslab.datamodel import TopicSets
from topicslab.errors import InputError
from topicslab.io._common import MAX_WEEKS
from topicslab.model.typemixture import TypeMixture

__all__ = ["AliasTables", "alias_tables", "sample", "sample_to_file", "sampler",
           "week_map"]

#: Domain separator of the sampler's hash stream (distinct from the API's streams).
STREAM_SAMPLE = 0x5A5A_0010
_TYPE_WORD = np.uint64(0xFFFF_FFFF)
_LOW32 = np.uint64(0xFFFF_FFFF)
_INV32 = 1.0 / 4294967296.0  # (the PyTorch path's float test of a slot draw)
_ALIAS_BITS = np.uint64(16)
_ALIAS_MASK = np.uint64(0xFFFF)
_INV53 = 1.0 / 9007199254740992.0

Format = Literal["parquet", "tfrecord"]


@dataclass(frozen=True)
class AliasTables:
    """Walker alias tables of every slot distribution: ``prob[t, i, s, j]`` (float64) is the
    chance of keeping column j, else ``alias[t, i, s, j]`` (int16) is drawn."""

    prob: npt.NDArray[np.float64]
    alias: npt.NDArray[np.int16]


@njit(cache=True, nogil=True, parallel=True)
def _build_alias(P: npt.NDArray[np.float64], prob: npt.NDArray[np.float64],
                 alias: npt.NDArray[np.int16]) -> None:
    """Vose's method per row of ``P[rows, m]`` (rows in parallel)."""
    rows, m = P.shape
    for r in prange(rows):
        small = np.empty(m, dtype=np.int64)
        large = np.empty(m, dtype=np.int64)
        scaled = P[r] * m
        ns = 0
        nl = 0
        for j in range(m):
            if scaled[j] < 1.0:
                small[ns] = j
                ns += 1
            else:
                large[nl] = j
                nl += 1
        while ns > 0 and nl > 0:
            ns -= 1
            s = small[ns]
            nl -= 1
            g = large[nl]
            prob[r, s] = scaled[s]
            alias[r, s] = g
            scaled[g] = (scaled[g] + scaled[s]) - 1.0
            if scaled[g] < 1.0:
                small[ns] = g
                ns += 1
            else:
                large[nl] = g
                nl += 1
        # leftovers are 1 up to rounding
        for i in range(nl):
            prob[r, large[i]] = 1.0
            alias[r, large[i]] = large[i]
        for i in range(ns):
            prob[r, small[i]] = 1.0
            alias[r, small[i]] = small[i]


def alias_tables(model: TypeMixture) -> AliasTables:
    """Alias tables of all T·r·k slot distributions of ``model`` (float64 softmax)."""
    if not isinstance(model, TypeMixture):  # (statistics failed on .slot_probabilities)
        raise TypeError(f"alias_tables takes a TypeMixture (a fitted model), got "
                        f"{type(model).__name__}")
    P = model.slot_probabilities()
    T, r, k, m = P.shape
    flat = np.ascontiguousarray(P.reshape(-1, m))
    prob = np.empty_like(flat)
    alias = np.empty(flat.shape, dtype=np.int16)
    _build_alias(flat, prob, alias)
    return AliasTables(prob.reshape(T, r, k, m), alias.reshape(T, r, k, m))


def _packed(tables: AliasTables) -> npt.NDArray[np.uint64]:
    """The alias tables as one word per entry for the numba kernel: ``alias`` in the low 16
    bits, above them the integer threshold ``⌈prob · 2^32⌉``.

    A slot draw keeps column j when its 32 low random bits x satisfy ``x · 2^-32 < prob``
    (the PyTorch path's test); for an integer x that is exactly ``x < ⌈prob · 2^32⌉`` (both
    sides scaled by a power of two, no rounding), so the same users are drawn. One 8-byte
    load per draw instead of a float64 and an int16 from two tables: the lookups were a third
    of the kernel's time (measured for 1M users × 8 weeks of raw slots on one core: 465 →
    310 ms).
    """
    # (Vose's rounding can leave a probability a hair outside [0, 1]: x < 0 never holds, as
    # x · 2^-32 < p never did; a threshold of 2^32 always holds, as for p >= 1)
    threshold = np.ceil(np.clip(tables.prob, 0.0, 1.0) * 4294967296.0).astype(np.uint64)
    return (threshold << np.uint64(16)) | tables.alias.astype(np.uint16).astype(np.uint64)


def week_map(fitted_weeks: int, weeks: int) -> npt.NDArray[np.int64]:
    """Fitted week used for each sampled week: ``w mod r`` (the stationarity rule)."""
    # (fitted_weeks=1.5 mapped weeks to 0, 1, 0.5, 0: a fractional week)
    # (2**70 weeks were NumPy's "Maximum allowed size exceeded", as many fitted weeks
    # "OverflowError: Python int too large to convert to C long")
    fitted_weeks = integer(fitted_weeks, "fitted_weeks", at_least=1, at_most=MAX_WEEKS,
                           why="the most weeks a file of topic sets holds")
    weeks = integer(weeks, "weeks", at_least=1, at_most=MAX_WEEKS,
                    why="the most weeks a file of topic sets holds")
    return np.arange(weeks, dtype=np.int64) % fitted_weeks


@njit(cache=True, nogil=True, parallel=True)
def _draw_types(key: np.uint64, first: np.int64, T: np.int64,
                types: npt.NDArray[np.int64]) -> None:
    for u in prange(types.shape[0]):
        types[u] = below(hash3(key, np.uint64(first + u), _TYPE_WORD, np.uint64(0)), T)


@njit(cache=True, nogil=True)
def _by_type(types: npt.NDArray[np.int64], T: int,
             ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Counting sort: users ``order[starts[t]:starts[t+1]]`` have type t."""
    starts = np.zeros(T + 1, dtype=np.int64)
    for u in range(types.shape[0]):
        starts[types[u] + 1] += 1
    for t in range(T):
        starts[t + 1] += starts[t]
    fill = starts[:-1].copy()
    order = np.empty(types.shape[0], dtype=np.int64)
    for u in range(types.shape[0]):
        t = types[u]
        order[fill[t]] = u
        fill[t] += 1
    return order, starts


@njit(cache=True, nogil=True, inline="always")
def _unit53(h: np.uint64) -> float:
    return float(h >> np.uint64(11)) * _INV53


@njit(cache=True, nogil=True, parallel=True)
def _sample_kernel(packed: npt.NDArray[np.uint64], wmap: npt.NDArray[np.int64],
                   stay: npt.NDArray[np.float64],
                   mode_cum: npt.NDArray[np.float64], mode_stay: npt.NDArray[np.float64],
                   key: np.uint64, first: np.int64, raw: bool, types: npt.NDArray[np.int64],
                   order: npt.NDArray[np.int64], starts: npt.NDArray[np.int64],
                   out: npt.NDArray[np.int16]) -> None:
    """Users are visited type by type (``order``/``starts``: a counting sort by type), so a
    type's alias rows stay in cache while its users are drawn: random access to the whole
    table (tens of MB) would make every slot draw a cache miss. Persistent types pass
    ``stay[T, M, k]``, the cumulative ``mode_cum[T, M]`` and ``mode_stay[T]`` (the alias
    tables' second axis is then the mode); the paper's pass empty arrays and ``wmap``.
    ``packed`` holds the alias tables (``_packed``)."""
    _, weeks, k = out.shape
    T = packed.shape[0]
    m = packed.shape[3]
    persistent = stay.shape[0] > 0
    for t in prange(T):
        buf = np.empty(k, dtype=np.int16)
        slots = np.empty(k, dtype=np.int16)
        for q in range(starts[t], starts[t + 1]):
            u = order[q]
            uid = np.uint64(first + u)
            mode = 0
            for w in range(weeks):
                h = hash3(key, uid, np.uint64(w), np.uint64(1))
                fw = wmap[w]
                kept = False
                if persistent:
                    hm = hash3(key, uid, np.uint64(w), np.uint64(3))
                    kept = w > 0 and _unit53(hm) < mode_stay[t]
                    if not kept:
                        x = _unit53(next_word(hm))
                        mode = 0
                        while mode < mode_cum.shape[1] - 1 and mode_cum[t, mode] <= x:
                            mode += 1
                    fw = mode
                hs = hash3(key, uid, np.uint64(w), np.uint64(2)) if kept else np.uint64(0)
                for s in range(k):
                    h = next_word(h)
                    if kept:
                        hs = next_word(hs)
                        if _unit53(hs) < stay[t, mode, s]:
                            continue  # the slot keeps last week's topic
                    j = below(h, m)
                    # low 32 bits decide between column j and its alias (the high 32 bits
                    # chose j): one 64-bit word per slot
                    word = packed[t, fw, s, j]
                    slots[s] = (np.int16(j) if (h & _LOW32) < (word >> _ALIAS_BITS)
                                else np.int16(word & _ALIAS_MASK))
                for s in range(k):
                    buf[s] = slots[s]
                if raw:
                    for s in range(k):
                        out[u, w, s] = buf[s]
                    continue
                # sort the k values, then drop repeats: the week's set, sorted, empties (-1)
                # last (the TopicSets convention). Both without branches on the values (an
                # insertion network of min/max pairs; a write that the next value overwrites
                # unless it is new): with an insertion sort's branches on the values, sorting
                # took 28% of the kernel's time (measured for 2M users × 8 weeks: 606 ms
                # sorted, 435 ms raw; 555 ms sorted without the branches, the same sets)
                for a in range(1, k):
                    for b in range(a, 0, -1):
                        lo_v = buf[b - 1]
                        hi_v = buf[b]
                        buf[b - 1] = min(lo_v, hi_v)
                        buf[b] = max(lo_v, hi_v)
                c = 0
                for a in range(k):
                    out[u, w, c] = buf[a]
                    c += 1 if a == 0 or buf[a] != buf[a - 1] else 0
                for a in range(c, k):
                    out[u, w, a] = -1


def _check(model: TypeMixture, n_users: int, seed: int, weeks: int | None,
           chunk_users: int) -> int:
    if not isinstance(model, TypeMixture):  # (statistics failed on a missing attribute)
        raise TypeError(f"sample takes a TypeMixture (a fitted model), got "
                        f"{type(model).__name__}")
    # n_users="5" was read as 5
    integer(n_users, "users", at_least=0)
    integer(seed, "seed", at_least=0)
    # (chunk_users=1.5 was taken as 1)
    integer(chunk_users, "chunk_users", at_least=1)
    # weeks=True drew one week, and 2.5 two
    w = model.weeks if weeks is None else integer(weeks, "weeks", at_least=1)
    if w < 1:
        raise InputError(f"weeks must be >= 1, got {weeks}", field="weeks")
    if w > MAX_WEEKS:  # (the CLI's bound; from Python 1024 weeks were drawn, and written)
        raise InputError(f"weeks must be at most {MAX_WEEKS} (the most weeks a population "
                         f"holds, and every reader reads), got {w}", field="weeks")
    if model.m > np.iinfo(np.int16).max:
        raise InputError("too many topics for int16 sets", field="theta")
    return w


def _provenance(model: TypeMixture, seed: int, weeks: int, raw: bool) -> dict[str, Any]:
    rule = ("a week keeps last week's mode with the type's mode stay (then each slot keeps "
            "its topic with its stay), else draws a mode and its slots afresh"
            if model.stay is not None else "sampled week w uses fitted week w mod r")
    return {"generator": f"topicslab.model.sample (Algorithm 2, {model.variant} types)",
            "seed": int(seed), "weeks": weeks, "fitted_weeks": model.weeks,
            "types": model.types, "model": model.variant, "week_rule": rule,
            "raw_slots": raw,
            "model_fingerprint": model.metadata.get("statistics_fingerprint")}


class _Sampler:
    """Holds the alias tables and key; draws any range of users."""

    def __init__(self, model: TypeMixture, seed: int, weeks: int,
                 torch_device: Any = None) -> None:
        self.tables = alias_tables(model)
        if model.stay is None or model.mode_weights is None or model.mode_stay is None:
            self.wmap = week_map(model.weeks, weeks)
            self.stay = np.zeros((0, 0, 0))
            self.mode_cum = np.zeros((0, 0))
            self.mode_stay = np.zeros(0)
        else:
            self.wmap = np.zeros(weeks, dtype=np.int64)
            self.stay = model.stay.astype(np.float64)
            weights = model.mode_weights.astype(np.float64)
            self.mode_cum = np.cumsum(weights / weights.sum(axis=1, keepdims=True), axis=1)
            self.mode_stay = model.mode_stay.astype(np.float64)
        self.key = derive_key(int(seed), STREAM_SAMPLE)
        self.weeks = weeks
        self.k = model.k
        self.torch: Any = None  # the tables on the torch device (None: the numba kernel)
        if torch_device is not None:
            from topicslab.model._sample_torch import TorchTables

            self.torch = TorchTables(self, torch_device)
        else:
            self.packed = _packed(self.tables)

    def draw(self, first: int, n: int, raw: bool,
             out: npt.NDArray[np.int16] | None = None) -> npt.NDArray[np.int16]:
        if self.torch is not None:
            from topicslab.model._sample_torch import draw_numpy

            return draw_numpy(self.torch, first, n, raw, out)
        if out is None:
            out = np.empty((n, self.weeks, self.k), dtype=np.int16)
        if n:
            T = self.tables.prob.shape[0]
            types = np.empty(n, dtype=np.int64)
            _draw_types(self.key, np.int64(first), np.int64(T), types)
            order, starts = _by_type(types, T)
            _sample_kernel(self.packed, self.wmap, self.stay,
                           self.mode_cum, self.mode_stay, self.key, np.int64(first), raw,
                           types, order, starts, out)
        return out


def sample(model: TypeMixture, n_users: int, *, seed: int, weeks: int | None = None,
           chunk_users: int = 1 << 20, first_user: int = 0, raw: bool = False,
           progress: bool = False, device: Any = "cpu") -> TopicSets:
    """Draw ``n_users`` synthetic users (ids ``first_user ..``) in memory.

    Args:
        model: the fitted type mixture.
        n_users: number of users.
        seed: reproducible randomness (output independent of ``chunk_users`` and threads).
        weeks: weeks per user (default: the fitted r; more use the stationarity rule).
        chunk_users: users per kernel call (progress granularity).
        first_user: global id of the first user (to regenerate a slice).
        raw: return the raw slots in draw order (duplicates, unsorted; NOT valid
            ``TopicSets`` sets; for the release's TFRecord layout) instead of the sets.
        progress: show a progress bar.
        device: ``"cpu"`` (numba kernel), ``"cuda"`` (PyTorch on the GPU, the same users bit
            for bit), ``"auto"`` (CUDA when available), or a ``torch.device``.
    """
    raw = flag(raw, "raw")
    progress = flag(progress, "progress")
    tdev = _torch_device(device)
    return _sample(model, n_users, seed=seed, weeks=weeks, chunk_users=chunk_users,
                   first_user=first_user, raw=raw, progress=progress, torch_device=tdev)


def _torch_device(device: Any) -> Any:
    """The torch device to draw on, or None for the numba kernel (every CPU device)."""
    if isinstance(device, str) and device.strip().lower() == "cpu":
        return None  # (without importing torch)
    import torch

    from topicslab.model.fit import resolve_device

    if isinstance(device, torch.device):
        if device.type not in ("cpu", "cuda"):
            raise InputError(f"device must be cpu, cuda or auto, got {value_shown(device)}",
                             field="device")
        d = resolve_device(str(device)) if device.type == "cuda" else device
    elif isinstance(device, str):
        d = resolve_device(device.strip())
    else:
        raise InputError(f"device must be cpu, cuda or auto, got "
                         f"{value_shown(device)}", field="device")
    return None if d.type == "cpu" else d


def _sample(model: TypeMixture, n_users: int, *, seed: int, weeks: int | None,
            chunk_users: int, first_user: int, raw: bool, progress: bool,
            torch_device: Any) -> TopicSets:
    """``sample`` on the numba kernel (``torch_device`` None) or the torch path on
    ``torch_device`` (any, the CPU included: the tests compare the two there)."""
    w = _check(model, n_users, seed, weeks, chunk_users)
    return _drawn(_Sampler(model, seed, w, torch_device), model, n_users, seed=seed,
                  chunk_users=chunk_users, first_user=first_user, raw=raw, progress=progress)


def _drawn(s: _Sampler, model: TypeMixture, n_users: int, *, seed: int, chunk_users: int,
           first_user: int, raw: bool, progress: bool) -> TopicSets:
    """Users ``first_user ..`` of the sampler ``s`` (of ``model``, ``seed``) as topic sets."""
    w = s.weeks
    # first_user=1.5 was taken as 1, -1 drew user -1, and ids past 2**63 - 1 wrapped to
    # negative ones ('3' and 2**63 were Python errors)
    first_user = integer(first_user, "first_user", at_least=0,
                         at_most=np.iinfo(np.int64).max - max(int(n_users) - 1, 0),
                         why="the users' ids are 64-bit signed integers")
    n = int(n_users)
    from topicslab._resources import require_memory

    # (sample(model, 10**10) was NumPy's "MemoryError: Unable to allocate 373. GiB", and
    # without a memory limit the kernel's writes woke the kernel's OOM killer)
    require_memory(float(n) * (w * model.k * 2 + 8), f"the topic sets of {n:,} synthetic users",
                   field="n_users", hint="draw fewer users, or stream them to a file "
                   "(sample_to_file, a chunk at a time)")
    out = np.empty((n, w, model.k), dtype=np.int16)
    with task("sampling users", n, progress) as advance:
        for lo in range(0, n, int(chunk_users)):
            hi = min(n, lo + int(chunk_users))
            s.draw(first_user + lo, hi - lo, raw, out[lo:hi])
            advance(hi - lo)
    ids = np.arange(first_user, first_user + n, dtype=np.int64)
    return TopicSets(out, model.taxonomy, ids, _provenance(model, seed, w, raw))


def sampler(model: TypeMixture, *, seed: int, weeks: int | None = None,
            ) -> Callable[[int, int], TopicSets]:
    """``draw(first_user, n)``: users ``first_user .. first_user + n - 1`` of
    ``sample(model, ..., seed=seed, weeks=weeks)`` on the numba kernel, the same users bit
    for bit, with the alias tables built once for every range drawn.

    For drawing a population a range at a time (``datamodel.ChunkedSets``): ``sample`` builds
    the tables of all T·r·k slot laws at each call (measured: 30 of the 320 ms of a call of
    1M users × 8 weeks, ten calls a draw of the paper's 10M users).
    """
    w = _check(model, 0, seed, weeks, 1)
    s = _Sampler(model, seed, w)

    def draw(first_user: int, n: int) -> TopicSets:
        _check(model, n, seed, weeks, 1)
        return _drawn(s, model, n, seed=seed, chunk_users=1 << 20, first_user=first_user,
                      raw=False, progress=False)

    return draw


def _chunks(n: int, size: int) -> Iterator[tuple[int, int]]:
    for lo in range(0, n, size):
        yield lo, min(n, lo + size)


def sample_to_file(model: TypeMixture, path: str | os.PathLike[str], n_users: int, *,
                   seed: int, weeks: int | None = None, format: Format = "parquet",
                   chunk_users: int = 1 << 20, shards: int | None = None,
                   progress: bool = True, device: Any = "cpu") -> list[str]:
    """Stream ``n_users`` synthetic users to ``path`` chunk by chunk (bounded memory).

    Parquet: one file, atomic (nothing under ``path`` on failure). TFRecord: the release's
    layout with raw slots; one shard per chunk (``shards`` overrides the count) named
    ``stem-NNNNN-of-MMMMM.tfrecord`` when more than one; the shards appear together when
    all are written, replacing every file of an earlier set at ``path`` (any shard count),
    and on failure nothing changes. Drawing the next chunk overlaps writing the previous
    one. Returns the file names. ``device`` as for ``sample`` (the same users on any).
    """
    progress = flag(progress, "progress")
    from topicslab import io as tio
    from topicslab._atomic import atomic_paths, refuse_directories
    from topicslab._resources import require_disk, require_memory
    from topicslab.io.tfrecord import MAX_SHARDS, shard_names, shard_set_on_disk

    tdev = _torch_device(device)
    w = _check(model, n_users, seed, weeks, chunk_users)
    # (the users' ids are int64: past them the ids wrapped, and 2**63 users or more were a
    # MemoryError listing the chunks)
    n = integer(n_users, "users", at_most=np.iinfo(np.int64).max,
                why="the users' ids are 64-bit signed integers")
    # (isinstance first: a pandas Series or NA was "truth value ... is ambiguous")
    if not isinstance(format, str) or format not in ("parquet", "tfrecord"):  # (checked
        # before any user is drawn)
        raise InputError(f"format must be parquet or tfrecord, got {value_shown(format)}",
                         field="format")
    try:
        named = tio.detect_format(path)
    except InputError:  # a name without a known extension: the format says
        named = format
    if named != format:  # (x.csv got Parquet bytes, which every reader of x.csv refused)
        raise InputError(f"the name says {named}, but format={format!r} writes {format}: name "
                         f"the file .{format}", file=os.fspath(path), field="format")
    # a file that surely cannot fit on its disk (2 bytes a user-week at least, the CLI's
    # bound): 2**63 - 1 users were drawn and written until the disk was full
    require_disk(2.0 * n * w, f"{n:,} synthetic users x {w} weeks", path, field="users",
                 hint="draw fewer users")
    s = _Sampler(model, seed, w, tdev)
    meta = _provenance(model, seed, w, format == "tfrecord")
    if format == "parquet" and shards is not None:  # (it was ignored)
        raise InputError("shards applies to format='tfrecord' only", field="shards")
    if format == "parquet":
        with tio.SetsWriter(path, model.taxonomy, model.k, w, meta) as writer, \
                task("sampling users", n, progress) as advance:
            def write(lo: int, arr: npt.NDArray[np.int16]) -> None:
                writer.write(TopicSets(arr, model.taxonomy,
                                       np.arange(lo, lo + arr.shape[0], dtype=np.int64),
                                       meta))
                advance(arr.shape[0])

            _pipeline(s, _chunks(n, int(chunk_users)), False, write)
        return [os.fspath(path)]
    if format != "tfrecord":
        raise InputError(f"format must be parquet or tfrecord, got {format!r}",
                         field="format")
    # (shards past the users wrote empty shard files, which every reader refuses; 2.5 was
    # taken as 2)
    n_shards = (max(1, math.ceil(n / int(chunk_users))) if shards is None
                else integer(shards, "shards", at_least=1, at_most=max(n, 1),
                             why="a shard holds at least one user"))
    if n_shards > MAX_SHARDS:  # (by default one a chunk: 10**12 users of chunks of 10 were
        # a MemoryError naming the shards)
        raise InputError(f"{n:,} users in chunks of {int(chunk_users):,} make {n_shards:,} "
                         f"shards, more than {MAX_SHARDS:,} (shard names count them in five "
                         "digits); give a larger chunk_users or fewer shards",
                         field="shards" if shards is not None else "chunk_users")
    # a shard is drawn whole (two at once: the next is drawn while one is written): shards=1
    # of 10**9 users was NumPy's "MemoryError: Unable to allocate 37.3 GiB"
    largest = -(-n // n_shards)
    require_memory(2.0 * largest * (w * model.k * 2 + 8),
                   f"shards of {largest:,} synthetic users", field="shards",
                   hint="give more shards (each is drawn and written whole)")
    names = shard_names(path, n_shards)
    refuse_directories(names)  # (else found after every user was drawn)
    bounds = np.linspace(0, n, n_shards + 1).astype(np.int64)
    ranges = [(int(bounds[i]), int(bounds[i + 1])) for i in range(n_shards)]
    # each shard goes to a hidden temporary; all are renamed together at the end and replace
    # the files of any earlier set at ``path`` (another shard count would otherwise remain
    # beside the new shards, and a reader of the directory would see both sets)
    with atomic_paths(names, stale=lambda: shard_set_on_disk(path)) as tmps, \
            task("sampling users", n, progress) as advance:
        def write_shard(lo: int, arr: npt.NDArray[np.int16]) -> None:
            i = ranges.index((lo, lo + arr.shape[0]))
            tio.write_sets_tfrecord(tmps[i], TopicSets(
                arr, model.taxonomy, np.arange(lo, lo + arr.shape[0], dtype=np.int64), meta))
            advance(arr.shape[0])

        _pipeline(s, ranges, True, write_shard)
    return names


def _pipeline(s: _Sampler, ranges: Iterable[tuple[int, int]], raw: bool,
              write: Callable[[int, npt.NDArray[np.int16]], None]) -> None:
    """Draw chunk c+1 while chunk c is written (the kernel and pyarrow release the GIL)."""
    pending: Future[None] | None = None
    with ThreadPoolExecutor(max_workers=1) as pool:
        try:
            for lo, hi in ranges:
                arr = s.draw(lo, hi - lo, raw)
                if pending is not None:
                    pending.result()
                pending = pool.submit(write, lo, arr)
            if pending is not None:
                pending.result()
        except BaseException:
            if pending is not None:
                _wait_out(pending)
            raise


def _wait_out(pending: Future[None]) -> None:
    """Let the chunk being written end (it stops at its next checkpoint once Ctrl-C is seen,
    removing its temporary) before the caller removes the set's: a second Ctrl-C during that
    wait cut it short, and the process ended with the writer's temporary left on disk."""
    while True:
        try:
            wait([pending])
            return
        except KeyboardInterrupt:
            continue

