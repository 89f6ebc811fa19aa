"""Parse the Topics API explainer's taxonomy markdown tables (the upstream source format).

Used by the converter that builds the package's CSV copies (``topicslab.taxonomy.convert``).
Not needed at run time.
"""

from __future__ import annotations

import re
from pathlib import Path

_TOPIC_ROW = re.compile(r"^\|\s*(\d+)\s*\|\s*(/.*?)\s*\|\s*$")
_BUCKET_ROW = re.compile(r"^\|\s*(/[^|]*?)\s*\|\s*(Standard|High)\s*\|\s*$")


def parse_topics(path: str | Path) -> list[tuple[int, str]]:
    """(id, label) rows of a ``| ID | Topic |`` table, in file order."""
    rows = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        m = _TOPIC_ROW.match(line)
        if m:
            rows.append((int(m.group(1)), m.group(2)))
    if not rows:
        raise ValueError(f"{path}: no taxonomy rows found")
    return rows


def parse_buckets(path: str | Path) -> dict[str, str]:
    """Top-level label -> utility bucket ("Standard" or "High")."""
    out = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        m = _BUCKET_ROW.match(line)
        if m:
            out[m.group(1)] = m.group(2)
    if not out:
        raise ValueError(f"{path}: no bucket rows found")
    return out
