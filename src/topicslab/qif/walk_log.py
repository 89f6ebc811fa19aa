"""A resumable record of the cover levels' walks, so hours of exact counting survive a stop.

The certified bracket of Corollary 1 (``qif.cover_levels``) at 1M users and seven weeks is 99
walks and hours of work. A walk's sums are exact integers fixed by the profiles, the
taxonomy size, the counting code and what the walk counts (its tuple weeks and specs). So a
log of the finished walks is enough to resume: a re-run given the same log skips the walks
the log holds and gives the same bracket.

The log is a JSON-lines file: a header line (the format and its version), then one line per
finished walk: a SHA-256 fingerprint of the walk's input (the checked, ordered profiles, m and
the counting walk's version ``box_unions.WALK_VERSION``, so a log of older counting code is
not reused), the walk's tuple weeks and specs, its sums, and a digest of the line. One log can
serve several computations (the r of a risk curve, other populations): each finds its own
walks by fingerprint and leaves the others' lines as they are.

The digest catches a damaged line (a bit flipped, a line cut or merged), not a deliberate
edit: anyone can recompute it. A log is as trustworthy as the place it is kept.

Each line is written with one append and synced when its walk ends; the file is locked while a
computation has it open (one writer at a time), so an interruption loses at most the walk
under way, and a last line cut short by a crash is dropped when the log is opened again.
Errors name the file, the line (1-based) and the field.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import TracebackType

import numpy as np
import numpy.typing as npt

from topicslab._checks import value_shown
from topicslab._json import loads
from topicslab.errors import InputError

try:  # POSIX: one writer at a time
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["WalkLog", "check_walk_log", "fingerprint", "logged_walks"]

FORMAT = "topicslab.cover_levels.walks"
VERSION = 1


def fingerprint(p: npt.NDArray[np.int32], m: int) -> str:
    """SHA-256 over the walks' input and the code that counts them: the profiles (shape and
    topic ids), m and ``box_unions.WALK_VERSION``."""
    from topicslab.qif.box_unions import WALK_VERSION

    h = hashlib.sha256()
    h.update(json.dumps([list(p.shape), int(m), WALK_VERSION]).encode())
    h.update(np.ascontiguousarray(p, dtype="<i4").tobytes())
    return h.hexdigest()


def _key(weeks: Sequence[int], specs: Sequence[Sequence[Sequence[int]]]) -> str:
    return json.dumps([[int(w) for w in weeks],
                       [[[int(w) for w in g] for g in spec] for spec in specs]])


def _digest(print_: str, key: str, sums: Sequence[int]) -> str:
    return hashlib.sha256(f"{print_}|{key}|{json.dumps(list(sums))}".encode()).hexdigest()[:32]


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


class _Lines:
    """The checked walk lines of a log's text: (row, fingerprint, key, sums) each, and how
    many bytes end with the last complete line."""

    def __init__(self, data: bytes, fail: _Fail) -> None:
        lines = data.split(b"\n")
        complete = lines[:-1]  # what follows the last newline was cut short by a crash
        self.good_length = len(data) - len(lines[-1])
        if not complete:
            raise fail("is not a walk log of topicslab's cover levels (no header line); name "
                       "a new file or remove this one", row=1)
        try:
            header = loads(complete[0])
        except (ValueError, UnicodeDecodeError):
            header = None
        if not isinstance(header, dict):
            raise fail("is not a walk log of topicslab's cover levels (its first line is not "
                       "the log's header); name a new file or remove this one", row=1)
        if header.get("format") != FORMAT:
            raise fail(f"is not a walk log of topicslab's cover levels (format "
                       f"{header.get('format')!r}); name a new file", row=1, field="format")
        version = header.get("version")
        if type(version) is not int or version != VERSION:
            raise fail(f"walk log version {version!r} is not supported (this version reads "
                       f"{VERSION}); name a new file", row=1, field="version")
        self.walks: list[tuple[int, str, str, list[int]]] = []
        first_row: dict[tuple[str, str], tuple[int, list[int]]] = {}
        for row, raw in enumerate(complete[1:], 2):
            if not raw.strip():
                continue
            print_, key, sums = _walk_line(raw, row, fail)
            seen = first_row.setdefault((print_, key), (row, sums))
            if seen[1] != sums:
                # (a line copied and changed, digest recomputed: the later one replaced the
                # earlier, and a bracket came out wrong)
                raise fail(f"repeats the walk of row {seen[0]} with other sums; the log is "
                           "damaged: remove the wrong line (or both: the walk is then done "
                           "again)", row=row, field="sums")
            self.walks.append((row, print_, key, sums))


class _Fail:
    """Located errors about one log file."""

    def __init__(self, path: Path, field: str | None) -> None:
        self.path, self.field = path, field

    def __call__(self, message: str, row: int | None = None,
                 field: str | None = None) -> InputError:
        return InputError(message, file=str(self.path), row=row,
                          field=field if field is not None else self.field)


def _walk_line(raw: bytes, row: int, fail: _Fail) -> tuple[str, str, list[int]]:
    try:
        obj = loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise fail(f"not a JSON line ({exc}); the log is damaged: remove this line (its walk "
                   "is then done again)", row=row) from None
    if not isinstance(obj, dict):
        raise fail("not a JSON object; the log is damaged: remove this line", row=row)
    print_, walk, sums, digest = (obj.get(f) for f in ("fingerprint", "walk", "sums",
                                                       "digest"))
    if not isinstance(print_, str):
        raise fail("must be the walk input's SHA-256 (text)", row=row, field="fingerprint")
    if not (isinstance(walk, list) and len(walk) == 2 and _ints(walk[0])
            and isinstance(walk[1], list)
            and all(isinstance(s, list) and all(_ints(g) for g in s) for s in walk[1])):
        raise fail("must be [tuple weeks, specs] (lists of week indices)", row=row,
                   field="walk")
    if not (isinstance(sums, list) and _ints(sums) and len(sums) == len(walk[1])
            and all(v >= 0 for v in sums)):
        raise fail("must be one non-negative integer per spec", row=row, field="sums")
    key = _key(walk[0], walk[1])
    if digest != _digest(print_, key, sums):
        raise fail("does not match the line (damaged): remove this line, and its walk is done "
                   "again", row=row, field="digest")
    return print_, key, list(sums)


def _ints(value: object) -> bool:
    return isinstance(value, list) and all(
        isinstance(v, int) and not isinstance(v, bool) for v in value)


def _path(path: object, field: str | None) -> Path:
    if isinstance(path, bytes) or not isinstance(path, str | os.PathLike):
        raise InputError(f"must be a file path, got {value_shown(path)}", field=field or "log")
    if "\0" in os.fspath(path):  # (Python's bare "embedded null byte")
        raise InputError(f"a file path cannot hold a NUL character, got {path!r}",
                         field=field or "log")
    return Path(path)


def _read(path: Path, fail: _Fail) -> bytes | None:
    """The log's bytes, None when there is no file yet."""
    try:
        if path.is_dir():
            raise fail(f"is a directory; name a file for the walk log (e.g. "
                       f"{path / 'walks.jsonl'})")
        if path.exists() and not path.is_file():
            # (a FIFO hung the read for ever; /dev/null was read as a log with no header)
            raise fail("is not a regular file (a device, pipe or socket); name a file for "
                       "the walk log")
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise fail(f"cannot read the walk log: {_reason(exc)}") from None


def check_walk_log(path: str | os.PathLike[str], *, field: str | None = None) -> None:
    """Refuse, before any work, a file that cannot serve as a walk log: not a log, a damaged
    line, not writable. A missing file is fine (it is created when the walks start)."""
    where = _path(path, field)
    fail = _Fail(where, field)
    data = _read(where, fail)
    if data is None:
        return
    _Lines(data, fail)
    if not os.access(where, os.W_OK):
        raise fail("is not writable: the walks counted would not be kept; make it writable "
                   "or name another file")


def logged_walks(path: str | os.PathLike[str]) -> int:
    """How many walks the log at ``path`` holds (every computation's; 0 without a file)."""
    where = _path(path, None)
    data = _read(where, _Fail(where, None))
    return 0 if data is None else len(_Lines(data, _Fail(where, None)).walks)


class WalkLog:
    """The finished walks of one cover-levels computation, read from and appended to ``path``;
    the file is held (locked) until ``close``. Use as a context manager.

    Args:
        path: the log file; created (with its header) when missing.
        p: the profiles as the walks take them (checked and ordered by ``cover_levels``).
        m: the taxonomy size.
        field: the option or argument to name in errors about the file as a whole (None:
            the file alone; the CLI fills in its option).
    """

    def __init__(self, path: str | os.PathLike[str], p: npt.NDArray[np.int32], m: int, *,
                 field: str | None = None) -> None:
        self.path = _path(path, field)
        self._fail = _Fail(self.path, field)
        self.fingerprint = fingerprint(p, m)
        self._walks: dict[str, list[int]] = {}
        #: walks answered from the log (``get``) and walks added (``add``)
        self.reused = 0
        self.added = 0
        if _read(self.path, self._fail) is None:
            self._create()
        self._fd: int | None = self._open()
        try:
            data = self._bytes()
            lines = _Lines(data, self._fail)
            for _, print_, key, sums in lines.walks:
                if print_ == self.fingerprint:  # another computation's walk stays as it is
                    self._walks[key] = sums
            if lines.good_length < len(data):
                # drop the cut line, so the next walk's line starts on a line of its own
                os.ftruncate(self._fd, lines.good_length)
        except OSError as exc:  # (ftruncate of a file opened for writing: hardly ever)
            self.close()
            raise self._fail(f"cannot drop the cut last line: {_reason(exc)}") from None
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> WalkLog:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Release the file (its lock goes with the descriptor)."""
        fd = getattr(self, "_fd", None)
        if fd is not None:
            self._fd = None
            os.close(fd)

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
        """Record a finished walk: one append of its line, then synced."""
        key = _key(weeks, specs)
        sums = [int(v) for v in sums]
        data = self._line(key, sums)
        try:
            if self._fd is None:
                raise OSError("the log was closed")
            if self._gone():
                # removed (or replaced) while the walks ran: the appends went to a file no
                # one would read again; a new log gets every walk of this computation so far
                self._walks[key] = sums
                self._rewrite()
                self.added += 1
                return
            written = os.write(self._fd, data)
            if written != len(data):  # (a short write: the disk filled up mid-line)
                raise OSError(f"only {written} of {len(data)} bytes written")
            os.fsync(self._fd)
        except OSError as exc:
            raise self._fail(f"cannot append to the walk log: {_reason(exc)}; free space or "
                             "name another file (the walks logged so far are kept; a cut last "
                             "line is dropped when it is opened again)") from None
        self._walks[key] = sums
        self.added += 1

    def _line(self, key: str, sums: Sequence[int]) -> bytes:
        return (json.dumps({"fingerprint": self.fingerprint, "walk": json.loads(key),
                            "sums": list(sums),
                            "digest": _digest(self.fingerprint, key, sums)}) + "\n").encode()

    def _gone(self) -> bool:
        """Whether the path no longer names the file this log holds open."""
        assert self._fd is not None
        try:
            held, there = os.fstat(self._fd), os.stat(self.path)
        except FileNotFoundError:
            return True
        return (held.st_dev, held.st_ino) != (there.st_dev, there.st_ino)

    def _rewrite(self) -> None:
        self.close()
        data = _read(self.path, self._fail)
        if data is None:
            self._create()
        else:  # replaced: appended to only if it is a log
            _Lines(data, self._fail)
        self._fd = self._open()
        for key, sums in self._walks.items():
            os.write(self._fd, self._line(key, sums))
        os.fsync(self._fd)

    def _create(self) -> None:
        """A new log with its header, created whole (a link of a complete temporary): two
        computations starting at once cannot both create it."""
        tmp = self.path.with_name(f".{self.path.name}.tmp-{os.getpid()}")
        try:
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(json.dumps({"format": FORMAT, "version": VERSION}) + "\n")
                f.flush()
                os.fsync(f.fileno())
            with contextlib.suppress(FileExistsError):  # another one made it first: use it
                os.link(tmp, self.path)
        except OSError as exc:
            raise self._fail(f"cannot create the walk log: {_reason(exc)}") from None
        finally:  # (also on Ctrl-C: no temporary left behind)
            with contextlib.suppress(OSError):
                tmp.unlink()

    def _open(self) -> int:
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_APPEND)
        except OSError as exc:
            raise self._fail(f"cannot open the walk log for appending: {_reason(exc)}; make "
                             "it writable or name another file") from None
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                raise self._fail("is in use by another computation (a walk log takes one "
                                 "writer at a time): wait for it to end, or name another "
                                 "file") from None
        return fd

    def _bytes(self) -> bytes:
        assert self._fd is not None
        chunks: list[bytes] = []
        offset = 0
        while True:
            chunk = os.pread(self._fd, 1 << 20, offset)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            offset += len(chunk)


@contextlib.contextmanager
def opened(path: str | os.PathLike[str] | None, p: npt.NDArray[np.int32], m: int,
           field: str | None = None) -> Iterator[WalkLog | None]:
    """``WalkLog`` as a context (None passes through: no log)."""
    if path is None:
        yield None
        return
    with WalkLog(path, p, m, field=field) as log:
        yield log
