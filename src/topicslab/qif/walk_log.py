"""A resumable record of the cover levels' walks, so hours of exact counting survive a stop.

The certified bracket of Corollary 1 (``qif.cover_levels``) at 1M users and seven weeks is 99
walks and hours of work. A walk's sums are exact integers fixed by the profiles, the
taxonomy size and what the walk counts (its tuple weeks and specs). So a log of the finished
walks is enough to resume: a re-run given the same log skips the walks the log holds and
gives the same bracket.

The log is a JSON-lines file: a header line (the format and its version), then one line per
finished walk: a SHA-256 fingerprint of the walk's input (the checked, ordered profiles and
m) with their shape, the walk's tuple weeks and specs, its sums, and a digest of all of it
(a damaged or edited line is refused). One log can serve several computations (the r of a
risk curve, other populations): each finds its own walks by fingerprint and leaves the
others' lines as they are.

Each line is written, flushed and synced when its walk ends, so an interruption loses at most
the walk under way; a last line cut short by the interruption is dropped when the log is
opened again. Errors name the file, the line (1-based) and the field; ``check`` finds them
before any work (``reid_bounds`` and ``reid --certify-log`` call it before their other work),
and a log removed while the walks run is written again whole.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from topicslab._json import loads
from topicslab.errors import InputError

__all__ = ["WalkLog", "check", "fingerprint"]

FORMAT = "topicslab.cover_levels.walks"
VERSION = 1


def fingerprint(p: npt.NDArray[np.int32], m: int) -> str:
    """SHA-256 over the walks' input: the profiles (shape and topic ids) and m."""
    h = hashlib.sha256()
    h.update(json.dumps([list(p.shape), int(m)]).encode())
    h.update(np.ascontiguousarray(p, dtype="<i4").tobytes())
    return h.hexdigest()


def _key(weeks: Sequence[int], specs: Sequence[Sequence[Sequence[int]]]) -> str:
    return json.dumps([[int(w) for w in weeks],
                       [[[int(w) for w in g] for g in spec] for spec in specs]])


def _digest(print_: str, key: str, sums: Sequence[int]) -> str:
    return hashlib.sha256(f"{print_}|{key}|{json.dumps(list(sums))}".encode()).hexdigest()[:32]


class WalkLog:
    """The finished walks of one cover-levels computation, read from and appended to ``path``.

    Args:
        path: the log file; created (with its header) when missing.
        p: the profiles as the walks take them (checked and ordered by ``cover_levels``).
        m: the taxonomy size.
        field: the option or argument to name in errors about the file as a whole (None:
            the file alone; the CLI fills in its option).
    """

    def __init__(self, path: str | os.PathLike[str], p: npt.NDArray[np.int32], m: int, *,
                 field: str | None = None) -> None:
        self.path = _log_path(path, field)
        self.field = field
        self.fingerprint = fingerprint(p, m)
        self._shape = [*map(int, p.shape), int(m)]
        self._walks: dict[str, list[int]] = {}
        self.reused = 0
        if self.path.exists():
            self._read()
        else:
            self._create()

    def __len__(self) -> int:
        return len(self._walks)

    def get(self, weeks: Sequence[int],
            specs: Sequence[Sequence[Sequence[int]]]) -> list[int] | None:
        """The sums of this walk if the log holds it, else None."""
        found = self._walks.get(_key(weeks, specs))
        if found is not None:
            self.reused += 1
        return found

    def add(self, weeks: Sequence[int], specs: Sequence[Sequence[Sequence[int]]],
            sums: Sequence[int]) -> None:
        """Record a finished walk (appended and synced at once)."""
        key = _key(weeks, specs)
        sums = [int(v) for v in sums]
        self._walks[key] = sums
        try:
            try:
                # (no O_CREAT: a log removed during the walks came back as lines with no
                # header, and the re-run refused the whole file)
                fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
            except FileNotFoundError:
                self._create()
                fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
                lines = [self._line(k, v) for k, v in self._walks.items()]
            else:
                lines = [self._line(key, sums)]
            with open(fd, "a", encoding="utf-8") as f:
                f.write("".join(lines))
                f.flush()
                os.fsync(f.fileno())
        except OSError as exc:
            raise InputError(f"cannot append to the walk log: {exc.strerror or exc}",
                             file=str(self.path), field=self.field) from None

    def _line(self, key: str, sums: list[int]) -> str:
        return json.dumps({"fingerprint": self.fingerprint, "shape": self._shape,
                           "walk": json.loads(key), "sums": sums,
                           "digest": _digest(self.fingerprint, key, sums)}) + "\n"

    def _fail(self, message: str, row: int | None = None,
              field: str | None = None) -> InputError:
        return InputError(message, file=str(self.path), row=row,
                          field=field if field is not None else self.field)

    def _create(self) -> None:
        tmp = self.path.with_name(f".{self.path.name}.tmp-{os.getpid()}")
        try:
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(json.dumps({"format": FORMAT, "version": VERSION}) + "\n")
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except OSError as exc:
            # (under a regular file the unlink failed too: NotADirectoryError, a traceback)
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise self._fail(f"cannot create the walk log: {exc.strerror or exc}") from None

    def _read(self) -> None:
        entries, keep = _entries(self.path, self.field)
        _appendable(self.path, self.field)
        for print_, key, sums in entries:
            if print_ == self.fingerprint:  # another computation's walk stays as it is
                self._walks[key] = sums
        if keep is not None:
            # drop the cut line, so the next walk's line starts on a line of its own
            try:
                with open(self.path, "r+b") as f:
                    f.truncate(keep)
            except OSError as exc:
                raise _fail(self.path, self.field,
                            f"cannot drop the cut last line: {exc.strerror or exc}") from None


def check(path: str | os.PathLike[str], *, field: str | None = None) -> None:
    """Refuse, before any work, a walk log that a computation would refuse when its walks
    begin: a file that is not a log, a damaged or edited line, a log that cannot be appended
    to, a location that cannot hold one (``reid --certify-log`` found it out after all the
    attacks' trials, when the certified bracket began). A missing file is fine: the walks
    create it."""
    where = _log_path(path, field)
    if where.exists():
        _entries(where, field)
        _appendable(where, field)
    elif not where.parent.is_dir():
        raise _fail(where, field, f"cannot create the walk log: directory {where.parent} "
                                  "does not exist; create it first or name another file")


def _fail(path: Path, field: str | None, message: str, row: int | None = None,
          line_field: str | None = None) -> InputError:
    return InputError(message, file=str(path), row=row,
                      field=line_field if line_field is not None else field)


def _log_path(path: object, field: str | None) -> Path:
    """``path`` as the walk log's location, refused when no log can be read or kept there."""
    if isinstance(path, bytes) or not isinstance(path, str | os.PathLike):
        raise InputError(f"must be a file path, got {path!r}", field=field or "log")
    where = Path(path)
    if "\0" in os.fspath(where):  # (open's ValueError "embedded null byte")
        raise InputError(f"must be a file path, got {os.fspath(where)!r} (a NUL character)",
                         field=field or "log")
    if where.is_dir():
        raise InputError("is a directory; name a file for the walk log (e.g. "
                         f"{where / 'walks.jsonl'})", file=str(where), field=field)
    if where.exists() and not where.is_file():
        # a FIFO hung the read for ever; /dev/null read as a log with no header
        raise InputError("is not a regular file (a device, pipe or socket); name a file for "
                         "the walk log", file=str(where), field=field)
    return where


def _appendable(path: Path, field: str | None) -> None:
    # a log that can be read but not appended to failed only when the first walk ended
    try:
        with open(path, "ab"):
            pass
    except OSError as exc:
        raise _fail(path, field, f"cannot append to the walk log: {exc.strerror or exc}; "
                                 "make it writable or name another file") from None


def _entries(path: Path,
             field: str | None) -> tuple[list[tuple[str, str, list[int]]], int | None]:
    """The log's checked walk lines, as (fingerprint, walk key, sums), and, when a stop cut
    the last line short, the length to keep without it (else None)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise _fail(path, field, f"cannot read the walk log: {exc.strerror or exc}") from None
    lines = data.split(b"\n")
    complete = lines[:-1]  # what follows the last newline was cut short by a stop
    if not complete:
        raise _fail(path, field, "is not a walk log of topicslab's cover levels (no header "
                                 "line); name a new file or remove this one", row=1)
    try:
        header = loads(complete[0])
    except (ValueError, UnicodeDecodeError):
        header = None
    if not isinstance(header, dict):
        raise _fail(path, field, "is not a walk log of topicslab's cover levels (its first "
                                 "line is not the log's header); name a new file or remove "
                                 "this one", row=1)
    if header.get("format") != FORMAT:
        raise _fail(path, field, f"is not a walk log of topicslab's cover levels (format "
                                 f"{header.get('format')!r}); name a new file", row=1,
                    line_field="format")
    version = header.get("version")
    if type(version) is not int or version != VERSION:  # (true and 1.0 passed as 1)
        raise _fail(path, field, f"walk log version {version!r} is not supported (this "
                                 f"version reads {VERSION})", row=1, line_field="version")
    entries = []
    for row, raw in enumerate(complete[1:], 2):
        if raw.strip():
            entries.append(_line(path, field, _object(path, field, raw, row), row))
    return entries, (len(data) - len(lines[-1])) if lines[-1] else None


def _object(path: Path, field: str | None, raw: bytes, row: int) -> dict[str, object]:
    try:
        obj = loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise _fail(path, field, f"not a JSON line ({exc}); the log is damaged: remove this "
                                 "line (its walk is then done again)", row=row) from None
    if not isinstance(obj, dict):
        raise _fail(path, field, "not a JSON object; the log is damaged", row=row)
    return obj


def _line(path: Path, field: str | None, obj: dict[str, object],
          row: int) -> tuple[str, str, list[int]]:
    print_, walk, sums, digest = (obj.get(f) for f in ("fingerprint", "walk", "sums",
                                                       "digest"))
    if not isinstance(print_, str):
        raise _fail(path, field, "must be the walk input's SHA-256 (text)", row=row,
                    line_field="fingerprint")
    if not (isinstance(walk, list) and len(walk) == 2 and _ints(walk[0])
            and isinstance(walk[1], list)
            and all(isinstance(s, list) and all(_ints(g) for g in s) for s in walk[1])):
        raise _fail(path, field, "must be [tuple weeks, specs] (lists of week indices)",
                    row=row, line_field="walk")
    if not (_ints(sums) and isinstance(sums, list) and len(sums) == len(walk[1])
            and all(v >= 0 for v in sums)):
        raise _fail(path, field, "must be one non-negative integer per spec", row=row,
                    line_field="sums")
    key = _key(walk[0], walk[1])
    if digest != _digest(print_, key, sums):
        raise _fail(path, field, "does not match the line (damaged or edited): remove this "
                                 "line, and its walk is done again", row=row,
                    line_field="digest")
    return print_, key, list(sums)


def _ints(value: object) -> bool:
    return isinstance(value, list) and all(
        isinstance(v, int) and not isinstance(v, bool) for v in value)
