"""``topicslab._numbers.format_number``: the one rule for numbers people read."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from topicslab._numbers import format_number


@pytest.mark.parametrize(("value", "text"), [
    (None, "—"), (math.nan, "—"), (np.float64("nan"), "—"),
    (math.inf, "∞"), (-math.inf, "−∞"), ("inf", "∞"), ("-inf", "−∞"),
    (True, "yes"), (False, "no"), (np.bool_(True), "yes"),
    (0, "0"), (7, "7"), (-1234, "-1,234"), (1234567, "1,234,567"),
    (np.int64(10**9), "1,000,000,000"),
    (0.0, "0"), (-0.0, "0"), (0.5, "0.5"), (0.12345678, "0.1235"), (89.16012, "89.16"),
    (1234.5, "1,234"), (9999.7, "10,000"), (123456.7, "123,457"), (-2.5, "-2.5"),
    (12345678.0, "1.235e+07"), (1e-6, "1e-06"), (0.000123456, "0.0001235"),
    (np.float32(2.5), "2.5"), (Fraction(1, 4), "0.25"),
    ("text", "text"), ("<b>", "<b>"), ([1, 2], "[1, 2]")])
def test_every_kind_of_value(value: object, text: str) -> None:
    assert format_number(value) == text


@pytest.mark.parametrize(("value", "text"), [
    (0.1234, "12.3%"), (1, "100.0%"), (0, "0.0%"), (0.00004, "0.0%"), (-0.00001, "0.0%"),
    (-0.5, "-50.0%"),
    (None, "—"), (math.nan, "—"), (math.inf, "∞"), (True, "yes")])
def test_percentages(value: object, text: str) -> None:
    assert format_number(value, percent=True) == text


def test_precision_is_an_argument() -> None:
    assert format_number(12.3456789, digits=6) == "12.3457"
    assert format_number(1783.2345, digits=6) == "1,783.23"
    assert format_number(1e-5, digits=6) == "1e-05"
    assert format_number(0.123456, percent=True, decimals=3) == "12.346%"
    assert format_number(math.inf, digits=6) == "∞"
