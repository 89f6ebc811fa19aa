"""Numbers for people: the one rule of every table and sentence that shows a number (the HTML
report and its sections, the privacy ledger, the disclosure, QIF and re-identification tables of
the CLI).

Public names:
    format_number(x, *, percent=False, digits=4, decimals=1) -> str
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any

import numpy as np

#: what stands for a missing value (None) and for NaN, an undefined number
MISSING = "—"

#: the JSON encoding of an infinity (``topicslab._json.jsonable``): shown as ∞ / −∞ too
_JSON_INFINITY = {"inf": math.inf, "-inf": -math.inf}


def format_number(x: Any, *, percent: bool = False, digits: int = 4, decimals: int = 1) -> str:
    """``x`` as text for people, by one rule:

    - ``None`` and NaN: "—"; +inf and −inf: "∞" and "−∞" (also the strings ``"inf"`` and
      ``"-inf"``, the JSON encoding of an infinity, so a number read back from results.json
      reads as the number did);
    - bools: "yes" / "no";
    - integers (NumPy's too): exact, with thousands separators ("1,234,567");
    - other real numbers: ``digits`` significant digits with thousands separators ("0.1235",
      "1,235", "89.16"; trailing zeros dropped), to the unit from ``10**digits`` ("123,457"),
      and in scientific notation from 1e7 up and below 1e-3 ("1.235e+07", "1e-06");
    - with ``percent``, a fraction shown as a percentage with ``decimals`` decimal places
      (0.1234 → "12.3%");
    - anything else: ``str(x)`` (callers that write HTML escape the result).

    ``digits`` and ``decimals`` are for the few places that need another precision (the
    ledger's σ: 6 significant digits), not for a second rule."""
    if x is None:
        return MISSING
    if isinstance(x, str):
        if x not in _JSON_INFINITY:
            return x
        x = _JSON_INFINITY[x]
    if isinstance(x, bool | np.bool_):
        return "yes" if x else "no"
    if isinstance(x, Integral):
        # (exact also as a percentage: float() of an integer past 1e308 was an
        # OverflowError)
        if not percent:
            return f"{int(x):,}"
        return f"{100 * int(x):,}" + ("." + "0" * decimals if decimals > 0 else "") + "%"
    if not isinstance(x, Real):
        return str(x)
    try:
        v = float(x) + 0.0  # (-0.0 is 0)
    except OverflowError:  # (a Fraction past a float's range)
        return str(x)
    if math.isnan(v):
        return MISSING
    if math.isinf(v):
        return "∞" if v > 0 else "−∞"
    if percent:
        text = f"{100 * v:,.{decimals}f}"
        # (a small negative share rounded to zero is "0.0%", not "-0.0%")
        return (text[1:] if text.startswith("-") and float(text.replace(",", "")) == 0
                else text) + "%"
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 1e7 or a < 1e-3:
        return f"{v:.{digits}g}"
    text = f"{v:,.{digits}g}"
    # (from 10**digits, or rounded up to it: 9999.7 is "1e+04" to 4 significant digits)
    return f"{v:,.0f}" if "e" in text else text


__all__ = ["MISSING", "format_number"]
