"""``topicslab._json``: the one serializer and its rule for non-finite numbers (NaN null,
±inf "inf" / "-inf"), and strict JSON out of it."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from topicslab._json import dumps, json_number, jsonable, number


def strict_loads(text: str) -> Any:
    """``json.loads`` that refuses the non-JSON tokens NaN, Infinity and -Infinity."""
    def refuse(name: str) -> None:
        raise AssertionError(f"{name} in the JSON")

    return json.loads(text, parse_constant=refuse)


class _WithToDict:
    def to_dict(self) -> dict[str, Any]:
        return {"x": math.nan, "y": (1, 2), 3: math.inf}


@pytest.mark.parametrize(("value", "expected"), [
    (math.nan, None), (math.inf, "inf"), (-math.inf, "-inf"), (1.5, 1.5), (0.0, 0.0),
    (-0.0, -0.0), (1e308, 1e308)])
def test_the_rule_for_one_float(value: float, expected: Any) -> None:
    assert json_number(value) == expected
    assert jsonable(value) == expected
    assert jsonable(np.float64(value)) == expected
    if not math.isfinite(value):
        assert jsonable(np.float32(value)) == expected


def test_number_reads_the_rule_back() -> None:
    assert number("inf") == math.inf and number("-inf") == -math.inf
    assert number(None) is None and number(0.25) == 0.25 and number("x") == "x"
    for x in (math.inf, -math.inf, 2.0):
        assert number(jsonable(x)) == x
    assert number(jsonable(math.nan)) is None


def test_containers_and_keys() -> None:
    got = jsonable({1: (1, 2.5, math.nan), (2, 3): [math.inf], "s": {3, 1, 2},
                    "f": frozenset({"b", "a"}), "none": None, "b": True})
    assert got == {"1": [1, 2.5, None], "(2, 3)": ["inf"], "s": [1, 2, 3], "f": ["a", "b"],
                   "none": None, "b": True}


def test_mixed_set_does_not_fail() -> None:
    assert sorted(map(str, jsonable({1, "a"}))) == ["1", "a"]


def test_numpy_scalars_and_arrays() -> None:
    got = jsonable({"i": np.int64(7), "b": np.bool_(True), "f": np.float32(0.5),
                    "a": np.array([1.0, np.nan, np.inf, -np.inf]),
                    "m": np.arange(4, dtype=np.int16).reshape(2, 2)})
    assert got == {"i": 7, "b": True, "f": 0.5, "a": [1.0, None, "inf", "-inf"],
                   "m": [[0, 1], [2, 3]]}
    assert type(got["i"]) is int and type(got["b"]) is bool and type(got["f"]) is float


def test_paths_and_to_dict() -> None:
    assert jsonable(Path("a") / "b.json") == str(Path("a") / "b.json")
    assert jsonable([_WithToDict()]) == [{"x": None, "y": [1, 2], "3": "inf"}]


def test_other_values_are_left_or_converted() -> None:
    obj = object()
    assert jsonable(obj) is obj
    with pytest.raises(TypeError):
        dumps({"o": obj})
    assert strict_loads(dumps({"o": complex(1, 2)}, other=str)) == {"o": "(1+2j)"}


def test_dumps_is_strict_json() -> None:
    doc = {"nan": math.nan, "inf": math.inf, "arr": np.array([np.nan, 1.0]),
           "nested": [{"e": -math.inf}]}
    text = dumps(doc, indent=1, sort_keys=True)
    assert strict_loads(text) == {"arr": [None, 1.0], "inf": "inf", "nan": None,
                                  "nested": [{"e": "-inf"}]}
    assert dumps(jsonable(doc)) == dumps(doc)  # (idempotent: the rule applied twice)
