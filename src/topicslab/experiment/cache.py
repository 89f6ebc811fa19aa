"""Content-keyed stage cache of ``topicslab run``: a re-run redoes only what changed.

Each stage has a *key*: the sha256 of its name, its parameters, the keys of the stages it reads
(so a change propagates downstream), the package version and, for user-supplied inputs, a
fingerprint of the input's bytes. ``OUT/stages.json`` records, per stage, the key and the
stage's JSON summary once the stage has *finished* and its artefacts are on disk, with the
sha256 of each artefact's bytes and of the summary. A stage is reused only if its recorded key
equals the new one, its summary is the one it recorded (not edited by hand) and every artefact
still has the recorded content (a truncated or edited file, e.g. a copy cut
short, is not a finished stage); otherwise it runs again and ``lookup`` says why. Artefacts are
written atomically and the record is written last, so an interrupted run leaves at worst an
unrecorded stage, which the next run recomputes. Each artefact is hashed once per run: when the
stage finishes, or when its cached copy is checked (a 450 MB file takes about a second).

Public names:
    StageCache(out_dir)            ``key``, ``lookup`` -> ``Lookup``, ``has_record``, ``record``
    file_fingerprint(path)         sha256 of a file or of a directory's files
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import topicslab
from topicslab._atomic import write_text_atomic
from topicslab._json import dumps, loads

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


class Lookup(NamedTuple):
    """The answer of ``StageCache.lookup``: the recorded summary of a reusable stage, or
    ``None`` and the reason it must run (``""`` when it never finished with this key)."""

    summary: dict[str, Any] | None
    reason: str = ""


def _artefact_digests(out: Path, artefacts: Sequence[str]) -> dict[str, str]:
    return {a: file_fingerprint(out / a) for a in artefacts}


def _changed_artefact(out: Path, recorded: Any, artefacts: Sequence[str]) -> str | None:
    """Why the artefacts on disk are not those the stage wrote (``None``: they are)."""
    if not isinstance(recorded, dict):
        recorded = {}
    for a in artefacts:
        path = out / a
        if not path.exists():
            return f"{a} is missing"
        digest = recorded.get(a)
        if not isinstance(digest, str):
            return f"no content hash of {a} was recorded"
        if file_fingerprint(path) != digest:
            return f"{a} was truncated or changed after the stage wrote it"
    return None


class StageCache:
    """The record of finished stages under ``out_dir`` (see module docstring)."""

    def __init__(self, out_dir: str | Path, *, enabled: bool = True) -> None:
        self.out = Path(out_dir)
        self.enabled = enabled
        path = self.out / _RECORD
        self._record: dict[str, Any] = {}
        if enabled and path.exists():
            try:
                record = loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                record = {}
            # an unreadable or foreign record: recompute everything
            self._record = record if isinstance(record, dict) else {}

    @staticmethod
    def key(stage: str, params: dict[str, Any], upstream: list[str] | None = None) -> str:
        """The content key of ``stage`` run with ``params`` on ``upstream`` stage keys."""
        blob = dumps({"stage": stage, "params": params, "upstream": upstream or [],
                      "version": topicslab.__version__}, sort_keys=True, other=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def has_record(self, stage: str, key: str) -> bool:
        """Whether ``stage`` once finished with ``key`` (its artefacts unchecked)."""
        rec = self._record.get(stage)
        return self.enabled and isinstance(rec, dict) and rec.get("key") == key

    def lookup(self, stage: str, key: str, artefacts: Sequence[str] = ()) -> Lookup:
        """The recorded summary if ``stage`` finished with ``key`` and its artefacts hold the
        bytes it wrote; else no summary and why (hashes each artefact once)."""
        if not self.enabled:
            return Lookup(None)
        rec = self._record.get(stage)
        if not isinstance(rec, dict) or rec.get("key") != key:
            return Lookup(None)
        summary = rec.get("summary")
        if not isinstance(summary, dict):
            return Lookup(None, "its record is unreadable")
        # a summary edited by hand (a key deleted, a number made text) ended the run in a
        # KeyError or TypeError, or went into the report as it was
        digest = rec.get("summary_sha256")
        if not isinstance(digest, str):
            return Lookup(None, "no hash of its summary was recorded")
        if _summary_digest(summary) != digest:
            return Lookup(None, "its summary in stages.json was changed after the stage "
                                "wrote it")
        changed = _changed_artefact(self.out, rec.get("artefacts"), artefacts)
        if changed is not None:
            return Lookup(None, changed)
        return Lookup(summary)

    def seconds(self, stage: str) -> float | None:
        """Wall time the recorded run of ``stage`` took (``None`` if unknown)."""
        rec = self._record.get(stage)
        sec = rec.get("seconds") if isinstance(rec, dict) else None
        # (not covered by the record's hashes: 1e400 edited in, read as inf, failed the run
        # at its very end, naming results.json; true or -5 went into the report)
        if isinstance(sec, bool) or not isinstance(sec, int | float):
            return None
        try:
            value = float(sec)
        except OverflowError:  # (an integer past a float's range)
            return None
        return value if math.isfinite(value) and value >= 0 else None

    def record(self, stage: str, key: str, summary: dict[str, Any],
               seconds: float | None = None, artefacts: Sequence[str] = ()) -> None:
        """Mark ``stage`` finished (after its artefacts were written) and remember the
        content of its ``artefacts`` (paths relative to the output directory)."""
        self._record[stage] = {"key": key, "summary": summary,
                               "summary_sha256": _summary_digest(summary),
                               "seconds": seconds,
                               "artefacts": _artefact_digests(self.out, artefacts)}
        write_text_atomic(self.out / _RECORD,
                          dumps(self._record, indent=1))


def _summary_digest(summary: dict[str, Any]) -> str:
    """sha256 of a stage summary's JSON (keys sorted: the same after a JSON round trip)."""
    blob = dumps(summary, sort_keys=True)
    return "sha256:" + hashlib.sha256(blob.encode()).hexdigest()

