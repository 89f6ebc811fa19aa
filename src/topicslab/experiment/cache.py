"""Content-keyed stage cache of ``topicslab run``: a re-run redoes only what changed.

Each stage has a *key*: the sha256 of its name, its parameters, the keys of the stages it reads
(so a change propagates downstream), the package version and, for user-supplied inputs, a
fingerprint of the input's bytes. ``OUT/stages.json`` records, per stage, the key and the
stage's JSON summary once the stage has *finished* and its artefacts are on disk. A stage is
reused only if its recorded key equals the new one and all its artefacts exist; otherwise it
runs again. Artefacts are written atomically and the record is written last, so an interrupted
run leaves at worst an unrecorded stage, which the next run recomputes.

Public names:
    StageCache(out_dir)            ``key``, ``lookup``, ``record``
    file_fingerprint(path)         sha256 of a file or of a directory's files
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import topicslab
from topicslab._atomic import write_text_atomic

_RECORD = "stages.json"


def file_fingerprint(path: str | Path) -> str:
    """sha256 of a file's bytes, or of a directory's files (names and bytes, sorted)."""
    p = Path(path)
    h = hashlib.sha256()
    files = sorted(f for f in p.rglob("*") if f.is_file()) if p.is_dir() else [p]
    for f in files:
        h.update(str(f.relative_to(p) if p.is_dir() else f.name).encode())
        with f.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    return "sha256:" + h.hexdigest()


class StageCache:
    """The record of finished stages under ``out_dir`` (see module docstring)."""

    def __init__(self, out_dir: str | Path, *, enabled: bool = True) -> None:
        self.out = Path(out_dir)
        self.enabled = enabled
        path = self.out / _RECORD
        self._record: dict[str, Any] = {}
        if enabled and path.exists():
            try:
                self._record = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                self._record = {}  # unreadable record: recompute everything

    @staticmethod
    def key(stage: str, params: dict[str, Any], upstream: list[str] | None = None) -> str:
        """The content key of ``stage`` run with ``params`` on ``upstream`` stage keys."""
        blob = json.dumps({"stage": stage, "params": params, "upstream": upstream or [],
                           "version": topicslab.__version__}, sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def lookup(self, stage: str, key: str,
               artefacts: Sequence[str] = ()) -> dict[str, Any] | None:
        """The recorded summary if ``stage`` finished with ``key`` and its artefacts exist."""
        if not self.enabled:
            return None
        rec = self._record.get(stage)
        if not rec or rec.get("key") != key:
            return None
        if any(not (self.out / a).exists() for a in artefacts):
            return None
        summary = rec.get("summary")
        return summary if isinstance(summary, dict) else None

    def seconds(self, stage: str) -> float | None:
        """Wall time the recorded run of ``stage`` took (``None`` if unknown)."""
        rec = self._record.get(stage) or {}
        sec = rec.get("seconds")
        return float(sec) if isinstance(sec, int | float) else None

    def record(self, stage: str, key: str, summary: dict[str, Any],
               seconds: float | None = None) -> None:
        """Mark ``stage`` finished (after its artefacts were written)."""
        self._record[stage] = {"key": key, "summary": summary, "seconds": seconds}
        write_text_atomic(self.out / _RECORD,
                          json.dumps(self._record, indent=1, default=_json_default))


def _json_default(x: Any) -> Any:
    import numpy as np

    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    raise TypeError(f"not JSON serialisable: {type(x).__name__}")
