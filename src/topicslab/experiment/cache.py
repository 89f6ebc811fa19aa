"""Content-keyed stage cache of ``topicslab run``: a re-run redoes only what changed.

Each stage has a *key*: the sha256 of its name, its parameters, the keys of the stages it reads
(so a change propagates downstream), the package version and, for user-supplied inputs, a
fingerprint of the input's bytes. ``OUT/stages.json`` records, per stage, the key and the
stage's JSON summary once the stage has *finished* and its artefacts are on disk, with the
sha256 of each artefact's bytes and of the summary. A stage is reused only if its recorded key
equals the new one, its summary is the one it recorded (not edited by hand) and every artefact
still has the recorded content (a truncated or edited file, e.g. a copy cut
short, is not a finished stage); otherwise it runs again and ``lookup`` says why (for a stage
recorded with another key, which of the parameters recorded beside it changed). Artefacts are
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
from topicslab._json import dumps, loads, read_document
from topicslab.errors import InputError

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
        #: why a stage's record cannot be read ("" when it can): a re-run over a record cut
        #: short logged every stage as "running", as if none had ever finished
        self._unreadable = ""
        if enabled and path.exists():
            try:
                record = loads(read_document(path, _RECORD))
            except (OSError, ValueError, InputError):  # (past the size of any record too)
                record = None
            # an unreadable or foreign record: recompute everything
            self._record = record if isinstance(record, dict) else {}
            if not isinstance(record, dict):
                self._unreadable = f"{_RECORD} could not be read as a record of stages"

    @staticmethod
    def key(stage: str, params: dict[str, Any], upstream: list[str] | None = None) -> str:
        """The content key of ``stage`` run with ``params`` on ``upstream`` stage keys."""
        blob = dumps({"stage": stage, "params": params, "upstream": upstream or [],
                      "version": topicslab.__version__}, sort_keys=True, other=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def has_record(self, stage: str, key: str | None = None) -> bool:
        """Whether ``stage`` once finished with ``key`` (with any key when ``None``; its
        artefacts unchecked)."""
        rec = self._record.get(stage)
        return (self.enabled and isinstance(rec, dict) and "key" in rec
                and (key is None or rec.get("key") == key))

    def lookup(self, stage: str, key: str, artefacts: Sequence[str] = (),
               params: dict[str, Any] | None = None) -> Lookup:
        """The recorded summary if ``stage`` finished with ``key`` and its artefacts hold the
        bytes it wrote; else no summary and why (hashes each artefact once; ``params``, those
        of ``key``, name the options changed since the recorded run)."""
        if not self.enabled:
            return Lookup(None)
        rec = self._record.get(stage)
        if rec is None:
            return Lookup(None, self._unreadable)
        if not isinstance(rec, dict) or "key" not in rec:
            return Lookup(None, "its record is unreadable")
        if rec.get("key") != key:
            # (was "running", as if it had never run: a re-run with --seed 1 or --fit-steps 3
            # did not say why the finished stages were redone)
            return Lookup(None, self._changed(rec, params))
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

    @staticmethod
    def _changed(rec: dict[str, Any], params: dict[str, Any] | None) -> str:
        """Why a stage recorded with another key runs again: its parameters that changed
        (where both runs' are known), else its inputs."""
        recorded = rec.get("params")
        if isinstance(recorded, dict) and params is not None:
            now = _plain(params)
            changed = sorted(str(k) for k in set(recorded) | set(now)
                             if recorded.get(k) != now.get(k))
            if changed:
                return f"its parameters changed since the recorded run: {', '.join(changed)}"
        return ("it was recorded from other inputs: a stage it reads changed since, or the "
                "topicslab version")

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
               seconds: float | None = None, artefacts: Sequence[str] = (),
               params: dict[str, Any] | None = None) -> None:
        """Mark ``stage`` finished (after its artefacts were written) and remember the
        content of its ``artefacts`` (paths relative to the output directory) and the
        ``params`` of its key (to say which changed when a later run redoes it)."""
        self._record[stage] = {"key": key, "summary": summary,
                               "summary_sha256": _summary_digest(summary),
                               "seconds": seconds,
                               "artefacts": _artefact_digests(self.out, artefacts),
                               **({} if params is None else {"params": _plain(params)})}
        write_text_atomic(self.out / _RECORD,
                          dumps(self._record, indent=1))


def _plain(params: dict[str, Any]) -> dict[str, Any]:
    """``params`` as the key reads them (JSON; tuples as lists, other objects as text)."""
    plain = loads(dumps(params, sort_keys=True, other=str))
    return plain if isinstance(plain, dict) else {}


def _summary_digest(summary: dict[str, Any]) -> str:
    """sha256 of a stage summary's JSON (keys sorted: the same after a JSON round trip)."""
    blob = dumps(summary, sort_keys=True)
    return "sha256:" + hashlib.sha256(blob.encode()).hexdigest()

