"""Plain JSON values of metadata that may hold numpy scalars and arrays (shared by the model
and learned-attack files): keys become strings, non-finite floats ``null``."""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def jsonable(obj: Any) -> Any:
    """``obj`` with dict keys as strings, tuples as lists, numpy values as Python values and
    NaN/inf as ``None``, so ``json.dumps(..., allow_nan=False)`` accepts it."""
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
