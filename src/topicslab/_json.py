"""The one serializer of topicslab's JSON (results.json and the stage records, every ``--json``
file or print, the model and learned-attack files, the Parquet metadata block), and the reading
of JSON a person writes by hand, where a key given twice is an error.

The rule for numbers JSON has no value for (strict JSON has no ``NaN`` or ``Infinity``):

- NaN (an undefined or unknown number) is ``null``;
- +inf and -inf (a value that is legitimately infinite: QIF's ε and capacities at r = 0, a bound
  or band limit that is infinite) are the strings ``"inf"`` and ``"-inf"``, so a reader can
  tell "infinite" from "unknown"; :func:`number` reads them back as floats.

Every writer serialises through :func:`jsonable` (or :func:`dumps`, which also refuses
``NaN``/``Infinity`` tokens with ``allow_nan=False``).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from typing import Any

import numpy as np

from topicslab.errors import InputError

#: the JSON encoding of +inf and -inf
INF, NEG_INF = "inf", "-inf"


def json_number(x: float) -> float | str | None:
    """One float by the rule: itself if finite, ``None`` for NaN, ``"inf"``/``"-inf"``."""
    if math.isfinite(x):
        return x
    if math.isnan(x):
        return None
    return INF if x > 0 else NEG_INF


def number(x: Any) -> Any:
    """The reading of :func:`json_number`: ``"inf"``/``"-inf"`` as ``±math.inf``, every other
    value (a number, ``None`` for NaN) as it is."""
    if isinstance(x, str) and x in (INF, NEG_INF):
        return math.inf if x == INF else -math.inf
    return x


def jsonable(obj: Any, *, other: Callable[[Any], Any] | None = None) -> Any:
    """``obj`` as plain JSON values, so ``json.dumps(..., allow_nan=False)`` accepts it:
    dict keys as strings, tuples as lists, sets as sorted lists, numpy scalars and arrays
    (NaN inside arrays too) as Python values, paths as strings, objects with a ``to_dict`` as
    their dict, and non-finite floats by the module's rule (NaN ``null``, ±inf ``"inf"`` /
    ``"-inf"``). ``other`` converts a value of no JSON kind (``str`` for metadata a user
    gave); without it such a value is left for ``json.dumps`` to refuse."""
    if hasattr(obj, "to_dict") and not isinstance(obj, np.ndarray | np.generic):
        obj = obj.to_dict()
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    if isinstance(obj, dict):
        out: dict[str, Any] = {}
        given: dict[str, Any] = {}
        for k, v in obj.items():
            key = str(k)
            if key in out:  # ({1: "a", "1": "b"} kept one of the two values without a word)
                raise ValueError(f"the keys {given[key]!r} and {k!r} are both {key!r} in "
                                 "JSON: one value would be lost; give distinct keys")
            given[key] = k
            out[key] = jsonable(v, other=other)
        return out
    if isinstance(obj, list | tuple):
        return [jsonable(v, other=other) for v in obj]
    if isinstance(obj, set | frozenset):
        items = [jsonable(v, other=other) for v in obj]
        try:
            return sorted(items)
        except TypeError:  # (mixed kinds: in the order of their text)
            return sorted(items, key=repr)
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist(), other=other)
    if isinstance(obj, float):
        return json_number(obj)
    if obj is None or isinstance(obj, str | int):
        return obj
    return obj if other is None else other(obj)


def dumps(obj: Any, **kwargs: Any) -> str:
    """``json.dumps`` of ``jsonable(obj)`` with ``allow_nan=False`` (``kwargs``: ``indent``,
    ``sort_keys``, ``ensure_ascii``; ``other`` goes to :func:`jsonable`)."""
    other = kwargs.pop("other", None)
    try:
        plain = jsonable(obj, other=other)
    except RecursionError:  # (a dict or list holding itself: RecursionError, no word of why)
        raise ValueError("cannot write as JSON: it holds itself (a circular reference) or "
                         "is nested too deeply") from None
    return json.dumps(plain, allow_nan=False, **kwargs)


class DuplicateKeyError(ValueError):
    """A JSON object gives one key twice (``key``)."""

    def __init__(self, key: str) -> None:
        super().__init__(f"{key!r} is given twice in one JSON object")
        self.key = key


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` for JSON written by hand (a domain table, population
    parameters): ``json`` keeps the last value of a key given twice without a word, so a
    domain listed twice, or a parameter set at the top and again further down, silently lost
    one of its values; here it is a ``DuplicateKeyError``."""
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise DuplicateKeyError(key)
        obj[key] = value
    return obj


class IntegerTooLargeError(ValueError):
    """A JSON integer past 64 bits: no field of topicslab's files holds one, and one past a
    float's range ended in an ``OverflowError`` in the checks of the value (past 4,300
    digits Python's ``int`` refuses it with a ``ValueError``)."""


def bounded_int(text: str) -> int:
    """``parse_int`` for topicslab's JSON files: an integer of 64 bits at most, else an
    ``IntegerTooLargeError``."""
    digits = text.lstrip("-")
    if len(digits) > 20 or not -(2**63) <= (value := int(text)) < 2**64:
        raise IntegerTooLargeError(f"the integer {text[:12]}{'…' if len(text) > 12 else ''} "
                                   f"({len(digits)} digits) is past 64 bits")
    return value


#: the byte-order marks of text that is not UTF-8 (UTF-32's first: it opens like UTF-16's)
_WIDE_MARKS = ((b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"),
               (b"\xff\xfe", "UTF-16"), (b"\xfe\xff", "UTF-16"))


def wide_text(head: bytes) -> str | None:
    """``"UTF-16"`` or ``"UTF-32"`` when ``head``, a file's first bytes, opens text of that
    encoding (its byte-order mark, or characters with a NUL byte between them: UTF-16 without
    a mark); ``None`` otherwise. Excel's "Unicode Text" and Windows PowerShell's ``Out-File``
    write UTF-16, where topicslab reads UTF-8: such a file was "'utf-8' codec can't decode
    byte 0xff in position 0" or "the first line holds NUL bytes", no word of the encoding."""
    for mark, name in _WIDE_MARKS:
        if head.startswith(mark):
            return name
    pairs = head[:4]
    if len(pairs) == 4 and any(pairs[nul::2] == b"\0\0" and 0 not in pairs[1 - nul::2]
                               for nul in (0, 1)):
        return "UTF-16"
    return None


def wide_text_advice(encoding: str) -> str:
    """What to do with a file of ``encoding`` (``wide_text``'s answer)."""
    return (f"is {encoding} text, and topicslab reads UTF-8: save it as UTF-8 (e.g. iconv -f "
            f"{encoding} -t UTF-8 FILE > NEW)")


class WideTextError(UnicodeDecodeError):
    """A JSON file of UTF-16 or UTF-32 text: a ``UnicodeDecodeError`` (what its readers catch)
    that says so."""

    def __str__(self) -> str:
        return f"the file {wide_text_advice(self.encoding)}"


#: the largest metadata file read (a privacy ledger, a model's or a learned attack's
#: model.json, population parameters: kilobytes): a large file given in its place (a
#: population, a log) was read whole into memory before it was found not to be one -- under
#: a memory limit "out of memory ...: use fewer users, weeks or types", exit code 1
MAX_METADATA_BYTES = 64 << 20


def read_document(path: str | os.PathLike[str], what: str | None = None) -> str:
    """The text of the file ``path`` (a JSON document, a query script): UTF-8, with or without
    a byte-order mark; a file of UTF-16 or UTF-32 text raises ``WideTextError``. ``what``
    names a metadata file (``"privacy ledger"``), which is refused past
    ``MAX_METADATA_BYTES``, before it is read."""
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if what is not None and size > MAX_METADATA_BYTES:
            raise InputError(f"is {size / 2**20:,.0f} MiB, far larger than any {what} (at "
                             f"most {MAX_METADATA_BYTES >> 20} MiB): is it the right file?",
                             file=os.fspath(path))
        data = fh.read()
    wide = wide_text(data[:4])
    if wide is not None:
        raise WideTextError(wide, data[:4], 0, 1, "not UTF-8")
    return data.decode("utf-8-sig")


#: the nesting reported for a document ``json`` cannot read for its depth
_DEEP = 500


def loads(text: str | bytes, **options: Any) -> Any:
    """``json.loads`` for files a command reads: a document nested past the interpreter's
    recursion limit (``[[[[...``) raised ``RecursionError``, which no reader's ``except
    json.JSONDecodeError`` caught (exit code 1, the file unnamed); here it is a
    ``json.JSONDecodeError`` at the first bracket past ``_DEEP`` levels."""
    try:
        return json.loads(text, **options)
    except RecursionError:
        doc = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
        raise json.JSONDecodeError(f"nested more than {_DEEP} levels deep", doc,
                                   _depth_past(doc, _DEEP)) from None


def _depth_past(doc: str, limit: int) -> int:
    """Index of the first ``[`` or ``{`` (outside strings) past ``limit`` levels, else 0."""
    depth, in_string, escaped = 0, False, False
    for i, ch in enumerate(doc):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > limit:
                return i
        elif ch in "]}":
            depth -= 1
    return 0
