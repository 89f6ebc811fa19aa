"""Plain JSON values of metadata that may hold numpy scalars and arrays (shared by the model
and learned-attack files): keys become strings, non-finite floats ``null``; and the reading
of JSON a person writes by hand, where a key given twice is an error."""

from __future__ import annotations

import json
import math
import os
from typing import Any

import numpy as np


def jsonable(obj: Any) -> Any:
    """``obj`` with dict keys as strings, tuples as lists, numpy values as Python values,
    paths as strings, objects with a ``to_dict`` as their dict and NaN/inf as ``None``, so
    ``json.dumps(..., allow_nan=False)`` accepts it (results.json, the model and attack
    files and every ``--json`` write through this one rule)."""
    if hasattr(obj, "to_dict") and not isinstance(obj, np.ndarray | np.generic):
        obj = obj.to_dict()
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist())
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


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
