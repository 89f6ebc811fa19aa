"""The in-memory data model shared by every stage (docs/design.md §Data model).

* ``TopicSets``: weekly topic sets per user, ``int16[n_users, n_weeks, k]`` dense indices, each
  week's row distinct and sorted with empty slots (``-1``) last.
* ``SiteTraces``: the topic each site saw each week, ``int16[n_sites, n_users, n_weeks]``.
* ``ChunkedSets``: the topic sets of users drawn a chunk at a time on demand (a synthetic
  population the attacks read once, never held whole: 0.8 GB at 10M users × 8 weeks).

Both carry their taxonomy and the global ``user_ids`` (int64) so files round-trip exactly.
Files and user-facing outputs use taxonomy ids; conversion happens in ``topicslab.io``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from numba import njit, prange

from topicslab._checks import flag, integer_array, is_integer, value_shown
from topicslab.errors import InputError
from topicslab.taxonomy import Taxonomy, resolve

EMPTY = -1


def canonicalize_sets(sets: npt.ArrayLike) -> npt.NDArray[np.int16]:
    """Sort each week's row ascending with empty slots last; duplicates are kept.

    Vectorised: empties are mapped above every topic index, sorted, then mapped back.
    """
    arr = np.asarray(sets)
    big = np.iinfo(np.int16).max
    tmp = np.where(arr < 0, big, arr).astype(np.int16)
    tmp.sort(axis=-1)
    return np.where(tmp == big, EMPTY, tmp).astype(np.int16)


def set_sizes(sets: npt.NDArray[np.integer]) -> npt.NDArray[np.int64]:
    """Non-empty slots along the last axis (a week's set size), as ``(sets >= 0).sum(-1)``.

    Added slot by slot: NumPy's reduction over a last axis of five slots took 0.55 s of 9M
    users × 3 weeks, this 0.1 s."""
    held = np.asarray(sets) >= 0
    sizes = np.zeros(held.shape[:-1], dtype=np.int64)
    for j in range(held.shape[-1]):
        sizes += held[..., j]
    return sizes


@njit(cache=True, parallel=True)
def _first_problems(sets: npt.NDArray[np.integer], m: int, allow_empty: bool,
                    first: npt.NDArray[np.int64]) -> None:
    """``first[0]``: the first user-week (``u · weeks + w``) holding an index outside
    ``-1..m-1`` (or an empty slot, unless ``allow_empty``); ``first[1]``: the first whose
    topics are not distinct and sorted with empties last; -1 where none."""
    n, weeks, k = sets.shape
    block = 1 << 14
    n_blocks = (n + block - 1) // block
    found = np.full((n_blocks, 2), -1, dtype=np.int64)
    for b in prange(n_blocks):
        for u in range(b * block, min(n, (b + 1) * block)):
            for w in range(weeks):
                row = u * weeks + w
                for j in range(k):
                    v = sets[u, w, j]
                    if found[b, 0] < 0 and (v < -1 or v >= m or (v == -1 and not allow_empty)):
                        found[b, 0] = row
                    if found[b, 1] < 0 and j > 0 and v >= 0 and (
                            v <= sets[u, w, j - 1] or sets[u, w, j - 1] == -1):
                        found[b, 1] = row
            if found[b, 0] >= 0 and found[b, 1] >= 0:
                break
    for i in range(2):
        for b in range(n_blocks):
            if found[b, i] >= 0:
                first[i] = found[b, i]
                break


@dataclass
class TopicSets:
    """Topic-set sequences of a population (real, reference or synthetic).

    Attributes:
        sets: ``int16[n_users, n_weeks, k]`` dense topic indices, rows sorted, ``-1`` empty.
        taxonomy: the taxonomy of the dense indices.
        user_ids: ``int64[n_users]`` global user ids (default ``0..n-1``).
        metadata: provenance (generator, seed, parameters, source file), kept in files.
    """

    sets: npt.NDArray[np.int16]
    taxonomy: Taxonomy
    user_ids: npt.NDArray[np.int64] = field(default=None)  # type: ignore[arg-type]
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.taxonomy = resolve(self.taxonomy)
        # a NaN or a fraction was cast to a topic id, and an id past the taxonomy kept
        self.sets = integer_array(self.sets, "sets")
        if self.sets.ndim != 3:
            raise InputError(f"topic sets must be [n_users, n_weeks, k], got {self.sets.shape}")
        if not isinstance(self.metadata, dict):
            # a string failed only when the sets were written (ValueError: dictionary update)
            raise InputError(f"metadata must be a dict, got {type(self.metadata).__name__}",
                             field="metadata")
        if self.sets.size and (self.sets.min() < EMPTY
                               or self.sets.max() >= self.taxonomy.size):
            raise InputError(f"topic sets must hold topic indices 0..{self.taxonomy.size - 1}"
                             f" of taxonomy {self.taxonomy.version} or {EMPTY} (empty), got "
                             f"{int(self.sets.min())}..{int(self.sets.max())}", field="sets")
        if self.sets.dtype != np.int16:
            self.sets = self.sets.astype(np.int16)
        if self.user_ids is None:
            self.user_ids = np.arange(self.sets.shape[0], dtype=np.int64)
        else:
            # a fraction was truncated, text read as numbers and an id past 64 bits wrapped
            ids = integer_array(self.user_ids, "user_ids")
            if ids.size and (int(ids.max()) > np.iinfo(np.int64).max
                             or int(ids.min()) < np.iinfo(np.int64).min):
                raise InputError("user_ids must be 64-bit signed integers, got "
                                 f"{int(ids.max()) if ids.max() > 0 else int(ids.min())}",
                                 field="user_ids")
            self.user_ids = ids.astype(np.int64)
            if self.user_ids.shape != (self.sets.shape[0],):
                raise InputError("user_ids must have one entry per user")

    @property
    def n_users(self) -> int:
        return int(self.sets.shape[0])

    @property
    def n_weeks(self) -> int:
        return int(self.sets.shape[1])

    @property
    def k(self) -> int:
        return int(self.sets.shape[2])

    def __len__(self) -> int:
        return self.n_users

    def __repr__(self) -> str:
        return (f"TopicSets(users={self.n_users:,}, weeks={self.n_weeks}, k={self.k}, "
                f"taxonomy={self.taxonomy.version})")

    def subset(self, users: Any = None, weeks: Any = None) -> TopicSets:
        """A view on some users and/or weeks (ids and metadata kept)."""
        u = slice(None) if users is None else users
        w = slice(None) if weeks is None else weeks
        for name, index, axis in (("users", u, 0), ("weeks", w, 1)):
            # an index past the table or of no index kind was NumPy's IndexError, and one
            # number (not a slice or a list) dropped the axis: "must be [n_users, n_weeks, k]"
            if isinstance(index, int | np.integer) and not isinstance(index, bool):
                raise TypeError(f"subset takes a slice, a list or a mask as {name}, got the "
                                f"number {index} (e.g. [{index}] for that one)")
            try:
                np.empty(self.sets.shape[axis], dtype=np.bool_)[index]
            except IndexError as exc:
                raise InputError(f"cannot select {name} {index!r} of {self.sets.shape[axis]}: "
                                 f"{exc}", field=name) from None
        return TopicSets(self.sets[u][:, w], self.taxonomy, self.user_ids[u],
                         dict(self.metadata))

    def validate(self, *, allow_empty: bool = True) -> None:
        """Check ranges, sortedness and distinctness; raise ``InputError`` naming the row."""
        m = self.taxonomy.size
        # a flag: the compiled pass took "no" or NaN as true, and 2**70, None or text failed
        # in numba ("OverflowError", "TypingError: non-precise type pyobject"), or compiled a
        # kernel for each new type (an array of text: minutes)
        allow_empty = flag(allow_empty, "allow_empty")
        # one compiled pass (the masks of 1M users in blocks took 0.35 s of every 1M users
        # written); ranges first everywhere, then the order, as before
        sets = np.ascontiguousarray(self.sets)
        first = np.full(2, -1, dtype=np.int64)
        if sets.size:
            _first_problems(sets, m, allow_empty, first)
        if first[0] >= 0:
            u, w = divmod(int(first[0]), sets.shape[1])
            raise InputError(f"topic index {int(sets[u, w].max())} out of range", row=u,
                             field=f"epoch_{w}_topics")
        if first[1] >= 0:
            u, w = divmod(int(first[1]), sets.shape[1])
            raise InputError("topics must be distinct, sorted, with empty slots last", row=u,
                             field=f"epoch_{w}_topics")

    def topic_ids(self) -> npt.NDArray[np.int32]:
        """The sets as taxonomy ids (``-1`` stays ``-1``)."""
        return self.taxonomy.id_of(self.sets)


@dataclass
class SiteTraces:
    """The answers sites received: ``int16[n_sites, n_users, n_weeks]`` dense indices.

    ``-1`` marks a withheld answer (caller filtering). ``site_ids`` name the sites.
    """

    traces: npt.NDArray[np.int16]
    taxonomy: Taxonomy
    user_ids: npt.NDArray[np.int64] = field(default=None)  # type: ignore[arg-type]
    site_ids: npt.NDArray[np.int64] = field(default=None)  # type: ignore[arg-type]
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.taxonomy = resolve(self.taxonomy)
        # as TopicSets: a NaN or a fraction was cast to a topic (NaN to 0), an answer past
        # the taxonomy (or an int32 past int16) kept or an OverflowError, text a ValueError,
        # and fractional user or site ids truncated
        self.traces = integer_array(self.traces, "traces")
        if self.traces.ndim != 3:
            raise InputError(
                f"site traces must be [n_sites, n_users, n_weeks], got {self.traces.shape}")
        if self.traces.size and (self.traces.min() < EMPTY
                                 or self.traces.max() >= self.taxonomy.size):
            raise InputError(f"site traces must hold topic indices 0..{self.taxonomy.size - 1}"
                             f" of taxonomy {self.taxonomy.version} or {EMPTY} (withheld), got "
                             f"{int(self.traces.min())}..{int(self.traces.max())}",
                             field="traces")
        if self.traces.dtype != np.int16:
            self.traces = self.traces.astype(np.int16)
        n_sites, n_users, _ = self.traces.shape
        for name, n in (("user_ids", n_users), ("site_ids", n_sites)):
            given = getattr(self, name)
            if given is None:
                setattr(self, name, np.arange(n, dtype=np.int64))
                continue
            ids = integer_array(given, name)
            if ids.size and (int(ids.max()) > np.iinfo(np.int64).max
                             or int(ids.min()) < np.iinfo(np.int64).min):
                raise InputError(f"{name} must be 64-bit signed integers", field=name)
            setattr(self, name, ids.astype(np.int64))
        if self.user_ids.shape != (n_users,) or self.site_ids.shape != (n_sites,):
            raise InputError("user_ids / site_ids do not match the traces' shape")

    @property
    def n_sites(self) -> int:
        return int(self.traces.shape[0])

    @property
    def n_users(self) -> int:
        return int(self.traces.shape[1])

    @property
    def n_weeks(self) -> int:
        return int(self.traces.shape[2])

    def __repr__(self) -> str:
        return (f"SiteTraces(sites={self.n_sites}, users={self.n_users:,}, "
                f"weeks={self.n_weeks}, taxonomy={self.taxonomy.version})")


@dataclass(frozen=True)
class ChunkedSets:
    """``n_users`` users' topic sets, drawn ``chunk_users`` at a time by ``draw(first_user,
    n) -> TopicSets`` (users ``first_user .. first_user + n - 1``, their ids included).

    For work that reads a population once, in user order (the attacks' simulated answers,
    which are a function of the user id: a chunk gets the answers it would get inside the
    whole table), so the whole table never exists. ``draw`` must return the same users for
    the same arguments (a seeded sampler: ``model.sample(..., first_user=...)``).
    """

    draw: Callable[[int, int], TopicSets]
    n_users: int
    n_weeks: int
    k: int
    taxonomy: Taxonomy
    chunk_users: int = 1 << 20

    def __post_init__(self) -> None:
        if not callable(self.draw):  # (failed at the first chunk, as "'int' object is not
            # callable")
            raise TypeError("ChunkedSets takes a function draw(first_user, n) -> TopicSets, "
                            f"got {type(self.draw).__name__}")
        # a version name ("v2", as TopicSets takes) was kept as text: an AttributeError
        # ('str' object has no attribute 'size') deep in the attacks
        object.__setattr__(self, "taxonomy", resolve(self.taxonomy))
        for name in ("n_users", "n_weeks", "k", "chunk_users"):
            value = getattr(self, name)
            if not is_integer(value) or value < (
                    0 if name == "n_users" else 1):
                raise InputError(f"{name} must be a positive integer, got {value_shown(value)}",
                                 field=name)

    def chunks(self) -> Iterator[tuple[int, TopicSets]]:
        """``(first_user, sets)`` of each chunk, in user order (each checked against the
        declared shape)."""
        for lo in range(0, self.n_users, self.chunk_users):
            n = min(self.chunk_users, self.n_users - lo)
            part = self.draw(lo, n)
            if not isinstance(part, TopicSets) or part.sets.shape != (n, self.n_weeks, self.k):
                shape = getattr(getattr(part, "sets", None), "shape", type(part).__name__)
                raise InputError(f"a chunk of users {lo}..{lo + n - 1} came back as {shape}, "
                                 f"not {n} users × {self.n_weeks} weeks × {self.k} topics",
                                 field="draw")
            if part.taxonomy.version != self.taxonomy.version:
                # (its topic indices were read as the declared taxonomy's: other topics)
                raise InputError(f"a chunk of users {lo}..{lo + n - 1} came back in taxonomy "
                                 f"{part.taxonomy.version}, not the declared "
                                 f"{self.taxonomy.version}", field="draw")
            yield lo, part

    def whole(self) -> TopicSets:
        """Every chunk in one table (for tests and small populations)."""
        parts = [p for _, p in self.chunks()]
        if not parts:
            return TopicSets(np.zeros((0, self.n_weeks, self.k), dtype=np.int16),
                             self.taxonomy)
        return TopicSets(np.concatenate([p.sets for p in parts]), self.taxonomy,
                         np.concatenate([p.user_ids for p in parts]),
                         dict(parts[0].metadata))
