"""The ``Taxonomy`` type: topic ids, labels, hierarchy and utility buckets.

Internally topics are *dense indices* ``0..m-1`` in ascending-id order; files and user-facing
outputs use taxonomy ids (v2 ids run 1..629 with gaps). ``Taxonomy.index`` and ``Taxonomy.ids``
convert between the two, vectorised.
"""

from __future__ import annotations

import csv
import functools
import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import resources

import numpy as np
import numpy.typing as npt

from topicslab._checks import integer, shown, value_shown
from topicslab.errors import ParameterError, UnknownTopicError

#: Utility bucket codes. Chrome ranks a week's topics by bucket first (High before Standard).
STANDARD = 0
HIGH = 1
_BUCKET_CODES = {"Standard": STANDARD, "High": HIGH}
_BUCKET_NAMES = {v: k for k, v in _BUCKET_CODES.items()}

VERSIONS = ("v1", "v2")


@dataclass(frozen=True, eq=False)
class Taxonomy:
    """An immutable topic taxonomy.

    Attributes:
        version: ``"v1"`` or ``"v2"`` (or a caller-chosen name for a custom taxonomy).
        ids: ``int32[m]`` taxonomy ids, strictly ascending; dense index ``i`` is ``ids[i]``.
        labels: label path of each topic, e.g. ``"/Sports/Soccer"``.
        parent: ``int32[m]`` dense index of the parent topic, ``-1`` for a top-level topic.
        bucket: ``int8[m]`` utility bucket (``HIGH`` = 1, ``STANDARD`` = 0), inherited from the
            top-level ancestor. Taxonomy v1 predates buckets: all its topics are Standard, so
            ranking is by count alone.
    """

    version: str
    ids: npt.NDArray[np.int32]
    labels: tuple[str, ...]
    parent: npt.NDArray[np.int32]
    bucket: npt.NDArray[np.int8]
    _lookup: npt.NDArray[np.int32] = field(repr=False, compare=False)

    @classmethod
    def from_rows(
        cls,
        version: str,
        rows: list[tuple[int, str]],
        buckets: dict[str, str] | None = None,
    ) -> Taxonomy:
        """Build from ``(id, label)`` rows; parents come from the label paths.

        ``buckets`` maps top-level labels to ``"High"``/``"Standard"``; a top-level topic missing
        from it (or ``buckets=None``) is Standard.
        """
        if isinstance(version, str) and version in VERSIONS:
            # (a custom taxonomy named "v2" was written to files as v2 and read back in the
            # shipped v2, its ids read as that taxonomy's topics without a word)
            raise ParameterError(f"version {version!r} is the name of a shipped taxonomy "
                                 "(topicslab.taxonomy.load); give a custom taxonomy a name "
                                 "of its own", field="version")
        return cls._build(version, rows, buckets, given=True)

    @classmethod
    def _build(cls, version: str, rows: list[tuple[int, str]],
               buckets: dict[str, str] | None = None, *, given: bool = False) -> Taxonomy:
        """``from_rows`` without its reserved names (the shipped taxonomies are built here;
        their buckets file may name topics of the other version: ``given`` is False)."""
        version, rows, buckets = _checked_rows(version, rows, buckets, given)
        ids = np.array([r[0] for r in rows], dtype=np.int32)
        labels = tuple(r[1] for r in rows)
        by_label = {lab: i for i, lab in enumerate(labels)}
        parent = np.full(len(ids), -1, dtype=np.int32)
        bucket = np.zeros(len(ids), dtype=np.int8)
        for i, lab in enumerate(labels):
            head, _, _ = lab.rpartition("/")
            if head:
                if head not in by_label:
                    raise ParameterError(f"the parent {shown(head)!r} of topic {int(ids[i])} "
                                         f"({shown(lab)!r}) is not in the taxonomy; add it "
                                         "or shorten the label", field="rows")
                parent[i] = by_label[head]
            top = "/" + lab.split("/")[1]
            bucket[i] = _BUCKET_CODES[(buckets or {}).get(top, "Standard")]
        lookup = np.full(int(ids[-1]) + 1, -1, dtype=np.int32)
        lookup[ids] = np.arange(len(ids), dtype=np.int32)
        for arr in (ids, parent, bucket, lookup):
            arr.setflags(write=False)
        return cls(version, ids, labels, parent, bucket, lookup)

    # ----------------------------------------------------------------- basic facts
    @property
    def size(self) -> int:
        """Number of topics m (349 for v1, 469 for v2)."""
        return int(self.ids.shape[0])

    def __len__(self) -> int:
        return self.size

    @property
    def max_id(self) -> int:
        """Largest topic id (629 for v2; the QIF paper uses it as m)."""
        return int(self.ids[-1])

    def __repr__(self) -> str:
        return f"Taxonomy({self.version!r}, topics={self.size}, ids={self.ids[0]}..{self.max_id})"

    # ------------------------------------------------------------ id <-> dense index
    @property
    def index_table(self) -> npt.NDArray[np.int32]:
        """``int32[max id + 1]``: the dense index of each taxonomy id, ``-1`` for an id not in
        the taxonomy (what ``index`` looks up, for kernels that map ids themselves)."""
        return self._lookup

    def index(self, topic_ids: npt.ArrayLike) -> npt.NDArray[np.int32]:
        """Dense indices of taxonomy ids (vectorised). Raises ``UnknownTopicError``."""
        arr = np.asarray(topic_ids)
        if arr.dtype.kind not in "iu":
            if arr.size == 0:
                arr = arr.astype(np.int64)
            else:
                raise UnknownTopicError(f"topic ids must be integers, got {arr.dtype}")
        flat = arr.astype(np.int64, copy=False)
        ok = (flat >= 0) & (flat < self._lookup.shape[0])
        out = np.full(flat.shape, -1, dtype=np.int32)
        out[ok] = self._lookup[flat[ok]]
        bad = out < 0
        if bad.any():
            first = int(flat[bad].flat[0])
            raise UnknownTopicError(
                f"topic id {first} is not in taxonomy {self.version} ({int(bad.sum())} unknown)"
            )
        return out

    def is_known(self, topic_ids: npt.ArrayLike) -> npt.NDArray[np.bool_]:
        """Boolean mask: which ids belong to this taxonomy."""
        arr = np.asarray(topic_ids)
        if arr.dtype.kind not in "iuf":
            # (text was int()'s ValueError, None its TypeError, 2**70 (an object array)
            # "Python int too large to convert to C long", and True topic 1, known)
            if arr.dtype.kind == "O" and all(isinstance(v, int) and not isinstance(v, bool)
                                             for v in arr.flat):
                # integers past int64 among them (no topic's id): one by one
                size = self._lookup.shape[0]
                return np.array([0 <= v < size and bool(self._lookup[v] >= 0)
                                 for v in arr.flat], dtype=bool).reshape(arr.shape)
            raise ParameterError(f"topic ids must be numbers, got dtype {arr.dtype}",
                                 field="topic_ids")
        if arr.dtype.kind == "f":  # (1.5 was topic 1, known; NaN a cast to garbage)
            whole = np.isfinite(arr) & (arr == np.trunc(arr))
            arr = np.where(whole, arr, -1)
        flat = arr.astype(np.int64)
        ok = (flat >= 0) & (flat < self._lookup.shape[0])
        out = np.zeros(flat.shape, dtype=bool)
        out[ok] = self._lookup[flat[ok]] >= 0
        return out

    def id_of(self, dense: npt.ArrayLike) -> npt.NDArray[np.int32]:
        """Taxonomy ids of dense indices; ``-1`` (empty slot) maps to ``-1``."""
        arr = np.asarray(dense)
        if arr.dtype.kind not in "iu" and arr.size:  # (1.5 was read as dense index 1)
            raise UnknownTopicError(f"dense topic indices must be integers, got {arr.dtype}")
        if arr.size and (int(arr.min()) < -1 or int(arr.max()) >= self.size):
            raise IndexError(f"dense topic index out of range 0..{self.size - 1}")
        # one lookup in a table shifted by one (-1 -> -1): no int64 copy, mask or clip of a
        # 10M-user table (the index is shifted in its own type where that type holds size)
        shifted = np.empty(self.size + 1, dtype=np.int32)
        shifted[0] = -1
        shifted[1:] = self.ids
        fits = arr.dtype.kind == "i" and np.iinfo(arr.dtype).max > self.size
        index = arr + np.ones((), dtype=arr.dtype) if fits else arr.astype(np.int64) + 1
        return np.asarray(shifted[index])

    # ------------------------------------------------------------------ labels
    def label(self, topic_id: int) -> str:
        """Label path of a taxonomy id."""
        if np.ndim(topic_id) != 0:  # (a list was "only 0-dimensional arrays can be converted")
            raise ParameterError(f"label takes one topic id, got {topic_id!r:.60}",
                                 field="topic_id")
        return self.labels[int(self.index(topic_id))]

    def find(self, label: str) -> int:
        """Taxonomy id of a label path (exact match)."""
        try:
            return int(self.ids[self.labels.index(label)])
        except ValueError:
            raise UnknownTopicError(f"no topic labelled {label!r} in {self.version}") from None

    # --------------------------------------------------------------- hierarchy
    @functools.cached_property
    def depth(self) -> npt.NDArray[np.int8]:
        """Depth of each topic (1 for top-level), dense order."""
        return np.array([lab.count("/") for lab in self.labels], dtype=np.int8)

    @functools.cached_property
    def top_level(self) -> npt.NDArray[np.int32]:
        """Dense index of each topic's top-level ancestor (itself for a top-level topic)."""
        top = np.arange(self.size, dtype=np.int32)
        for _ in range(int(self.depth.max())):
            has_parent = self.parent[top] >= 0
            top = np.where(has_parent, self.parent[top], top).astype(np.int32)
        return top

    def _dense(self, dense: object) -> int:
        """One dense index ``dense``, checked: -1 read the last topic (NumPy's index from the
        end), 1.5, text or None were NumPy's IndexError, True topic 1, and past the end
        "index 1000 is out of bounds for axis 0 with size 469"."""
        return integer(dense, "dense", at_least=0, at_most=self.size - 1,
                       why=f"a dense topic index of taxonomy {self.version}")

    def ancestors(self, dense: int) -> list[int]:
        """Dense indices of the ancestors of a topic, nearest first."""
        out = []
        p = int(self.parent[self._dense(dense)])
        while p >= 0:
            out.append(p)
            p = int(self.parent[p])
        return out

    def children(self, dense: int) -> npt.NDArray[np.int32]:
        """Dense indices of the direct children of a topic."""
        return np.flatnonzero(self.parent == self._dense(dense)).astype(np.int32)

    def bucket_name(self, dense: int) -> str:
        """``"High"`` or ``"Standard"``."""
        return _BUCKET_NAMES[int(self.bucket[self._dense(dense)])]


#: the largest topic id of a custom taxonomy: ``index`` looks ids up in a table of one entry
#: per id up to the largest (an id of 2**31 - 1 asked for an 8 GiB table: MemoryError)
MAX_TOPIC_ID = 2**24 - 1
#: the most topics of a taxonomy: ``TopicSets`` hold dense indices as ``int16`` (and
#: ``canonicalize_sets`` sorts the empty slot as its largest value)
MAX_TOPICS = 2**15 - 1


def _checked_rows(version: object, rows: object, buckets: object, given: bool = True
                  ) -> tuple[str, list[tuple[int, str]], dict[str, str]]:
    """``from_rows``'s arguments, checked: each a ``ParameterError`` naming the argument (they
    were bare ``IndexError``/``KeyError``/``AttributeError``/``TypeError``s, or taken: an id
    of 1.5 or True read as topic 1, a label ``"/"`` or ``"/a/"`` of no name, a version or
    label holding a line break that split every one-line error naming it)."""
    if not isinstance(version, str) or not version.strip() or not version.isprintable():
        raise ParameterError(f"version must be a non-empty one-line name, got "
                             f"{value_shown(version, 60)}", field="version")
    if isinstance(rows, str | bytes | dict) or not isinstance(rows, Iterable):
        raise ParameterError(f"rows must be a list of (id, label) pairs, got "
                             f"{value_shown(rows, 60)}", field="rows")
    checked: list[tuple[int, str]] = []
    for n, row in enumerate(rows):
        if not isinstance(row, tuple | list) or len(row) != 2:
            raise ParameterError(f"rows[{n}] must be an (id, label) pair, got "
                                 f"{value_shown(row, 60)}", field="rows")
        tid = integer(row[0], f"rows[{n}] id", at_least=1, at_most=MAX_TOPIC_ID,
                      why="a topic id is a positive integer")
        lab = row[1]
        if (not isinstance(lab, str) or not lab.startswith("/") or "\n" in lab
                or "\r" in lab or "" in lab[1:].split("/")):
            raise ParameterError(f"rows[{n}] label must be a one-line path of named parts "
                                 f"such as '/Sports/Soccer', got {value_shown(lab, 60)}",
                                 field="rows")
        checked.append((tid, lab))
    if not checked:
        raise ParameterError("rows is empty: a taxonomy needs at least one topic", field="rows")
    if len(checked) > MAX_TOPICS:
        # (40,000 topics: top_k's profiles and TopicSets' indices wrapped around int16,
        # topic 39999 held as -25537, without a word)
        raise ParameterError(f"rows holds {len(checked):,} topics; a taxonomy holds at most "
                             f"{MAX_TOPICS:,} (topic sets hold dense indices as int16)",
                             field="rows")
    checked.sort()
    for (a, la), (b, lb) in itertools.pairwise(checked):
        if a == b:
            raise ParameterError(f"topic id {a} is given twice ({shown(la)!r} and "
                                 f"{shown(lb)!r}); ids must be distinct", field="rows")
    labels = [lab for _, lab in checked]
    if len(set(labels)) != len(labels):
        twice = next(lab for lab in labels if labels.count(lab) > 1)
        raise ParameterError(f"label {shown(twice)!r} is given to two topics; labels must be "
                             "distinct", field="rows")
    if buckets is None:
        return version, checked, {}
    if not isinstance(buckets, dict):
        raise ParameterError(f"buckets must be a dict of top-level label to 'High' or "
                             f"'Standard', got {value_shown(buckets, 60)}", field="buckets")
    tops = {lab for lab in labels if lab.count("/") == 1}
    for key, name in buckets.items():
        if key not in tops and given:
            raise ParameterError(f"buckets names {value_shown(key, 60)}, not a top-level "
                                 "label of the taxonomy (its topics would be Standard "
                                 "unsaid)", field="buckets")
        if name not in _BUCKET_CODES:
            raise ParameterError(f"buckets[{shown(key)!r}] must be 'High' or 'Standard', got "
                                 f"{value_shown(name, 60)}", field="buckets")
    return version, checked, buckets


def _read_csv(version: str) -> tuple[list[tuple[int, str]], dict[str, str]]:
    text = resources.files("topicslab.taxonomy").joinpath(f"data/taxonomy_{version}.csv")
    rows: list[tuple[int, str]] = []
    buckets: dict[str, str] = {}
    with text.open("r", encoding="utf-8") as fh:
        for rec in csv.DictReader(fh):
            rows.append((int(rec["id"]), rec["label"]))
            if rec["label"].count("/") == 1 and rec["bucket"]:
                buckets[rec["label"]] = rec["bucket"]
    return rows, buckets


def load(version: str = "v2") -> Taxonomy:
    """The shipped taxonomy ``"v1"`` (349 topics) or ``"v2"`` (469 topics, the default)."""
    if isinstance(version, Taxonomy):  # tolerate callers passing a Taxonomy through
        return version
    # checked before the cache: a value that cannot be hashed (["v2"], a dict, an array),
    # given to any function's taxonomy=, was the cache's "TypeError: unhashable type: 'list'"
    if not isinstance(version, str) or version not in VERSIONS:
        from topicslab._checks import value_shown

        raise UnknownTopicError(f"unknown taxonomy version {value_shown(version)}; choose one "
                                f"of {VERSIONS}")
    return _load(str(version))


@functools.cache
def _load(version: str) -> Taxonomy:
    rows, buckets = _read_csv(version)
    return Taxonomy._build(version, rows, buckets if buckets else None)


def resolve(taxonomy: Taxonomy | str) -> Taxonomy:
    """Accept a ``Taxonomy`` or a version name."""
    return taxonomy if isinstance(taxonomy, Taxonomy) else load(taxonomy)
