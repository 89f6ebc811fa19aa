"""All-or-nothing writes: write to a temporary sibling, then rename over the final name.

A crash, an exception or Ctrl-C while writing never leaves a half-written file (or directory)
under the final name: the work happens under a hidden sibling (``.name.XXXX.tmp`` for a file,
``.name.tmp-XXXX`` for a directory) in the same directory -- so the closing ``rename`` stays
within one file system, where POSIX makes it atomic -- and the sibling is removed on failure.

Public names:
    atomic_path(path)                       a temporary file path, renamed to ``path``
    atomic_paths(paths, stale=())           several files that appear together, or none
    atomic_dir(path, owned=())              a temporary directory, renamed (or merged) to ``path``
    refuse_directories(paths, field)        before the work: no output file name is a directory
    write_text_atomic / write_bytes_atomic  one file in one call
    interrupts_deferred()                   Ctrl-C waits until the block ends
    latch_interrupts() / raise_if_interrupted() / clear_interrupt()
                                            a Ctrl-C that a library swallowed still stops
                                            the work (and no write commits after it)
    completed_writes() / forget_completed_writes()
                                            what was committed (for the CLI's interrupt line)
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import re
import shutil
import signal
import stat
import sys
import tempfile
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

#: paths committed since the last ``forget_completed_writes``: the CLI names them when a
#: command is interrupted (what was kept), so a user knows what is complete on disk
#: (bounded: a long library session writing many files must not grow it without end)
_completed: deque[Path] = deque(maxlen=256)


def completed_writes() -> list[Path]:
    """Final paths committed since ``forget_completed_writes`` that still exist (a file
    written inside a temporary directory has moved on with it, so it is not listed)."""
    seen: list[Path] = []
    for p in _completed:
        if p not in seen and p.exists():
            seen.append(p)
    return seen


def forget_completed_writes() -> None:
    """Start a new list of committed writes (one per CLI command)."""
    _completed.clear()


#: set by the latch's SIGINT handler: a ``KeyboardInterrupt`` raised where a library cannot
#: pass it on (a ctypes callback of numba's compiler prints "Exception ignored" and goes on)
#: is lost, but the flag is not, and the next checkpoint raises it again
_interrupt_seen = False


def _latch(signum: int, frame: FrameType | None) -> None:
    global _interrupt_seen
    _interrupt_seen = True
    raise KeyboardInterrupt


#: the signals other than SIGINT that end a command as Ctrl-C does (topicslab._main gives
#: them Python's handler when they are at their default); SIGUSR1, SIGUSR2 and SIGALRM,
#: whose default is to end the process too, did so on the spot, leaving the hidden temporary
#: of the output behind and no line (``kill -USR1``: exit status 138)
ENDING_SIGNALS = ("SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGALRM")


def latch_interrupts() -> Any:
    """Install the latching SIGINT handler (main thread only); returns the previous one.

    It raises ``KeyboardInterrupt`` as Python's own handler does, and also remembers the
    signal, so ``raise_if_interrupted`` -- called by every commit below and every progress
    step -- stops the work even when the first ``KeyboardInterrupt`` was swallowed.
    """
    if threading.current_thread() is not threading.main_thread():
        return None
    previous_hook = sys.unraisablehook

    def hook(unraisable: Any) -> None:
        # the swallowed Ctrl-C itself: Python would print "Exception ignored ..." and a
        # traceback; the latch has it, and the command's one line will say it stopped
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            global _interrupt_seen
            _interrupt_seen = True
            return
        previous_hook(unraisable)

    sys.unraisablehook = hook
    # kill, hang-up and Ctrl-\ end as Ctrl-C does (topicslab._main gives them Python's
    # handler); they are latched too, so that one a library swallows still ends as an
    # interruption
    for name in ENDING_SIGNALS:
        number = getattr(signal, name, None)
        if number is not None and signal.getsignal(number) is signal.default_int_handler:
            signal.signal(number, _latch)
    return signal.signal(signal.SIGINT, _latch)


#: why the command was stopped, when not by the user (the CPU time limit): said in its
#: ``interrupted:`` line
_stopped_by: str | None = None


def cpu_time_up(signum: int, frame: FrameType | None) -> None:
    """SIGXCPU, the CPU time limit's soft limit reached (``ulimit -t``): it ended the process
    on the spot (a core dump), with no line and the hidden temporary of the output left
    behind; it now stops the command as Ctrl-C does, latched, and says why. The kernel sends
    it again every second until the hard limit: once is enough, and a second one would
    interrupt the clean-up, so it is ignored from then on."""
    global _interrupt_seen, _stopped_by
    signal.signal(signum, signal.SIG_IGN)
    _interrupt_seen = True
    _stopped_by = "its CPU time limit, ulimit -t, was reached"
    raise KeyboardInterrupt


def stopped_by() -> str | None:
    """Why the command was stopped when it was not the user's Ctrl-C (or kill)."""
    return _stopped_by


def raise_if_interrupted() -> None:
    """Raise ``KeyboardInterrupt`` if a Ctrl-C was received and not yet handled."""
    if _interrupt_seen:
        raise KeyboardInterrupt


def interrupt_seen() -> bool:
    """Whether a Ctrl-C was received since ``clear_interrupt``."""
    return _interrupt_seen


def clear_interrupt() -> None:
    """Forget a handled Ctrl-C (the CLI calls it when a command starts and ends)."""
    global _interrupt_seen, _stopped_by
    _interrupt_seen = False
    _stopped_by = None


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def interrupts_deferred() -> Iterator[None]:
    """Hold back SIGINT until the block ends, then raise ``KeyboardInterrupt``.

    For the few renames that commit a set of files: a Ctrl-C between two of them would leave
    half of a new set next to half of the old one. Only the main thread can install signal
    handlers; elsewhere the block runs unprotected (Python delivers SIGINT to the main
    thread anyway).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []

    def hold(signum: int, _frame: FrameType | None) -> None:
        received.append(signum)

    # SIGTERM, SIGHUP, SIGQUIT and the others of ENDING_SIGNALS end a command like Ctrl-C
    # (topicslab._main): held back too, or a kill between two renames left new files beside
    # old ones (one new shard of three)
    previous = {number: signal.signal(number, hold) for number in _HELD
                if signal.getsignal(number) != signal.SIG_IGN}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    for number in dict.fromkeys(received):
        _deliver(number, previous[number])


#: the signals ``interrupts_deferred`` holds back (those this platform has)
_HELD = tuple(getattr(signal, name) for name in ("SIGINT", *ENDING_SIGNALS, "SIGXCPU")
              if hasattr(signal, name))


def _deliver(signum: int, handler: Any) -> None:
    """Give a held-back signal to the handler that was in place (Python's raises
    ``KeyboardInterrupt``; an ignored signal stays ignored)."""
    if callable(handler):
        handler(signum, None)
    elif handler == signal.SIG_DFL:
        signal.raise_signal(signum)
    elif handler is None:  # installed outside Python: act as Python's default would
        raise KeyboardInterrupt


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        # (a directory made read-only during the work: the unlink's PermissionError hid the
        # failure being cleaned up after)
        with contextlib.suppress(OSError):
            path.unlink()


_DIRECTORY_AT_FILE = ("is a directory, where a file of this output is written; remove or "
                      "rename it (or choose another output location)")


def refuse_directories(finals: Iterable[str | os.PathLike[str]],
                       field: str | None = None) -> None:
    """Refuse, before the work, output file names taken by a directory (a link to one is
    replaced, as the rename does). ``_refuse_kind_clash`` finds them only at the closing
    rename: after the work, its output already printed above the error line (disclosure's
    table, sample's progress bar) and fit's checkpoint left behind."""
    from topicslab.errors import InputError

    for final in finals:
        p = Path(final)
        if p.is_dir() and not p.is_symlink():
            raise InputError(_DIRECTORY_AT_FILE, file=os.fspath(p), field=field)


def _refuse_link(final: Path) -> None:
    """Refuse a symbolic link where a file is written, as the CLI's outputs do: the rename
    replaced the link itself, not the file it points to -- from Python, a link to /dev/stdout
    (or any file) became a regular file holding the output, the link gone without a word."""
    if final.is_symlink() and not final.is_dir():
        from topicslab.errors import InputError

        raise InputError(f"is a symbolic link (to {os.readlink(final)}); name the file "
                         "itself, or remove the link", file=os.fspath(final))


def _not_writable(exc: OSError, final: Path) -> Exception:
    """A directory where no file can be made (procfs, sysfs: "FileNotFoundError: [Errno 2]
    No such file or directory: '/proc/self/.status.....tmp'", a name the user never gave; a
    file where a directory of the name is) as the CLI's outputs refuse it, naming the
    output; other failures (a full disk, too many open files) as they were."""
    if exc.errno not in (errno.ENOENT, errno.EROFS, errno.ENOTDIR, errno.EINVAL,
                         errno.EEXIST):
        return exc
    from topicslab.errors import InputError

    if exc.errno in (errno.EEXIST, errno.ENOTDIR):  # (a file where a directory of the name
        # is: "FileExistsError: [Errno 17] File exists: 'a'" making a/x.csv's directory)
        part = next((d for d in reversed(final.parents) if d.exists() and not d.is_dir()),
                    final.parent)
        return InputError(f"directory {final.parent} cannot be made: {part} is a file; "
                          "choose another location", file=os.fspath(final))
    return InputError(f"directory {final.parent} is not writable ({exc.strerror}); choose "
                      "another location", file=os.fspath(final))


def _refuse_kind_clash(new: Path, final: Path) -> None:
    """Refuse, before any rename, a ``final`` name taken by the other kind: a directory
    where a file is written (or a file where a directory is). The rename failed after the
    work (IsADirectoryError, exit code 1), and inside a directory's merge the entries moved
    before it stayed: the old output mixed with the new."""
    if final.is_dir() and not final.is_symlink() and not new.is_dir():
        from topicslab.errors import InputError

        raise InputError(_DIRECTORY_AT_FILE, file=os.fspath(final))
    if new.is_dir() and (final.is_file() or final.is_symlink()):
        from topicslab.errors import InputError

        raise InputError("is a file, where a directory of this output is written; remove or "
                         "rename it (or choose another output location)", file=os.fspath(final))


def _denied(exc: BaseException, final: Path, tmps: Sequence[Path],
            where: Path | None = None) -> Exception | None:
    """A write refused by the file system's permissions (the output's directory made
    read-only during the work, so the closing rename failed) as a refusal naming ``final``
    and any temporary that could not be removed either; ``None`` for any other failure.
    The line named the hidden temporary and advised changing its permissions."""
    if not isinstance(exc, PermissionError) or exc.filename is None:
        return None
    where = where or (tmps[0].parent if tmps else final.parent)
    if os.path.abspath(where) == os.path.abspath(final.parent):
        where = final.parent  # (as the user named it: mkstemp's temporaries are absolute)
    # (absolute: mkstemp names the temporary it failed to make by its absolute path, so an
    # output given relative, o/c.csv, did not match, and the line named that temporary)
    name = Path(os.path.abspath(os.fsdecode(exc.filename)))
    ours = {Path(os.path.abspath(p)) for p in (final, where, *tmps)}
    if not ({name, name.parent} & ours):
        return None  # another file's (an input read during the work): its own line
    from topicslab.errors import InputError

    left = [t.name for t in tmps if os.path.lexists(t)]
    also = (f"; its temporary {left[0]} could not be removed either: remove it once the "
            "directory is writable" if left else "")
    return InputError(f"permission denied: directory {where} does not let this user "
                      f"create or replace files (did it change during the work?){also}; "
                      "change its permissions or choose another location",
                      file=os.fspath(final))


#: free bytes below which a failed write is taken for a full disk: the writers' own errors
#: may not say so (torch: "unexpected pos 2688 vs 2582"; safetensors: "I/O error ..."), and
#: none names the file
_FULL_DISK_BYTES = 1 << 20


def _past_size_limit(tmps: Sequence[Path], unlimited: bool = True) -> bool:
    """Whether a temporary (a file, or a file in a temporary directory) reached the
    file-size limit this process runs under (``ulimit -f``): an EFBIG raised elsewhere --
    numba saving its compiled code to its cache -- is not the output's to be named. Without
    a limit, ``unlimited`` (an EFBIG is then the file system's largest file, taken to be the
    output's)."""
    import resource

    limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    if limit == resource.RLIM_INFINITY:
        return unlimited
    for tmp in tmps:
        files = tmp.rglob("*") if tmp.is_dir() else [tmp]
        with contextlib.suppress(OSError):
            if any(f.is_file() and f.stat().st_size >= limit for f in files):
                return True
    return False


def _too_large(exc: BaseException, final: Path, tmps: Sequence[Path]) -> OSError | None:
    """The failure of a write to ``final`` as an ``OSError`` (EFBIG) naming ``final`` (or
    the file in it) when it outgrew the largest file allowed: the file-size limit (ulimit
    -f; Python ignores its SIGXFSZ) or the file system's. The writers' "OSError: [Errno 27]
    Error writing bytes to file" named no file and was exit code 1, though the user's
    limit; ``None`` for any other failure. Asked, as ``_full_disk``, before the temporaries
    ``tmps`` are removed."""
    from topicslab.errors import TopicsLabError

    if not isinstance(exc, Exception) or isinstance(exc, TopicsLabError):
        return None
    code = exc.errno if isinstance(exc, OSError) else None
    if code == errno.EFBIG:
        named = getattr(exc, "filename", None)
        if named is not None:
            # a file written into a temporary directory is named as it will be under the
            # final name ("rr/.stats.tmp-lg1919vc/q_single.json" was the line); another
            # (an inner write's, already named) stays as it is
            inside = next((Path(named).relative_to(tmp) for tmp in tmps
                           if Path(named).is_relative_to(tmp) and Path(named) != tmp), None)
            if inside is None:
                return None
            return OSError(code, os.strerror(code), os.fspath(final / inside))
        if not _past_size_limit(tmps):
            return None  # not this output's (numba's cache)
        return OSError(code, os.strerror(code), os.fspath(final))
    if code is None and _past_size_limit(tmps, unlimited=False):
        # a writer that says it its own way: torch's "RuntimeError: [enforce fail at
        # inline_container.cc:672] . unexpected pos 1984 vs 1878", exit code 1
        return OSError(errno.EFBIG, os.strerror(errno.EFBIG), os.fspath(final))
    return None


def _full_disk(exc: BaseException, final: Path) -> OSError | None:
    """The failure of a write to ``final`` as an ``OSError`` (ENOSPC or EDQUOT) naming
    ``final`` when the disk holding it is full; ``None`` for any other failure (Ctrl-C, a
    refusal of the data). Asked before the temporary is removed, while it holds the space."""
    from topicslab.errors import TopicsLabError

    if not isinstance(exc, Exception) or isinstance(exc, TopicsLabError):
        return None
    code = exc.errno if isinstance(exc, OSError) else None
    if code not in (errno.ENOSPC, errno.EDQUOT):
        try:
            if shutil.disk_usage(final.parent).free >= _FULL_DISK_BYTES:
                return None
        except OSError:
            return None
        code = errno.ENOSPC
    return OSError(code, os.strerror(code), os.fspath(final))


#: the most bytes of the final name a temporary's name repeats: a temporary is made inside
#: another (a fit's model directory inside the output's temporary, a sampled shard's writer
#: inside the set's), and each repeated the whole name plus 14 bytes, so a valid output name
#: of 228..240 bytes failed after the work ("File name too long"; the fit left its
#: checkpoints)
_TEMPORARY_STEM_BYTES = 200


def _stem(final: Path) -> str:
    """``final``'s name, cut to ``_TEMPORARY_STEM_BYTES`` (whole characters)."""
    name = final.name
    while len(os.fsencode(name)) > _TEMPORARY_STEM_BYTES:
        name = name[:-1]
    return name


@functools.cache
def _where_tag() -> str:
    """Where a process id means something (the host, its boot, its PID namespace: two
    containers of one host name on a shared volume, or a reboot, do not share process ids),
    as 8 hex digits; read once per process."""
    import socket
    import zlib

    where = [socket.gethostname()]
    with contextlib.suppress(OSError):
        where.append(Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii"))
    with contextlib.suppress(OSError):
        where.append(str(os.stat("/proc/self/ns/pid").st_ino))
    return f"{zlib.crc32(':'.join(where).encode()):08x}"


def _writer_tag() -> str:
    """This process in a temporary's name: ``_where_tag``, then the process id, so that a
    later write of the same output can tell a temporary whose writer is gone."""
    return f"{_where_tag()}{os.getpid()}-"


def _writer_gone(tag: str) -> bool:
    """True when ``tag`` (``_writer_tag``'s form) names a process of this host that has
    ended; a process of another host (a shared file system), or one still running, keeps
    its temporary."""
    own = _writer_tag()
    if not tag[:8] == own[:8] or not tag[8:].isdecimal():
        return False
    pid = int(tag[8:])
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # (another user's live process: EPERM)
        return False
    return False


def _remove_stale_temporaries(final: Path, where: Path) -> None:
    """Remove the temporaries of ``final`` in ``where`` that a killed writer left: kill -9,
    a power loss or the out-of-memory killer end a process before it can clean up, and its
    ``.p.parquet.XXXX.tmp`` (a ``.st.tmp-XXXX`` directory) stayed beside the output for
    good, as many as there were interruptions, however large."""
    stem = re.escape(_stem(final))
    pattern = re.compile(rf"\.{stem}\.(?:tmp-)?([0-9a-f]{{8}}[0-9]+)-[^/]*?(?:\.tmp)?")
    try:
        names = os.listdir(where)
    except OSError:
        return
    for name in names:
        m = pattern.fullmatch(name)
        if m is not None and _writer_gone(m.group(1)):
            with contextlib.suppress(OSError):
                _remove(where / name)


@contextlib.contextmanager
def _made_whole(made: list[Path]) -> Iterator[None]:
    """Make a temporary (appended to ``made`` as soon as it exists) with Ctrl-C and the
    ending signals held back, and remove it if the block fails or a held-back signal is
    then delivered: the caller's cleanup knows a temporary only once it has its name, and a
    kill that came just after ``mkstemp`` left the hidden temporary behind (a signal sent as
    the file appeared, about 1 case in 60)."""
    try:
        with interrupts_deferred():
            yield
    except BaseException:
        for tmp in made:
            _remove(tmp)
        raise


def _temporary_file(final: Path) -> Path:
    _remove_stale_temporaries(final, final.parent)
    made: list[Path] = []
    with _made_whole(made):
        fd, tmp_name = tempfile.mkstemp(prefix=f".{_stem(final)}.{_writer_tag()}",
                                        suffix=".tmp", dir=final.parent)
        made.append(Path(tmp_name))
        try:
            # 0600 whatever the umask: mkstemp's mode goes through it, and under a umask
            # that takes the owner's write permission (0277, 0777) the temporary came out
            # 0400 or 0000, so the writers that open it again by name (pyarrow, the CSV
            # writer) failed: "PermissionError: Failed to open local file
            # '.p.parquet.ra_h19am.tmp'", exit 1. The final name gets the umask's mode
            # (_give_usual_mode)
            os.fchmod(fd, 0o600)
        finally:
            os.close(fd)
    return made[0]


def _temporary_dir(final: Path, where: Path) -> Path:
    _remove_stale_temporaries(final, where)
    made: list[Path] = []
    with _made_whole(made):
        made.append(Path(tempfile.mkdtemp(prefix=f".{_stem(final)}.tmp-{_writer_tag()}",
                                          dir=where)))
        # (as _temporary_file: under umask 0277 the files in it were refused)
        os.chmod(made[0], 0o700)
    return made[0]


def _give_usual_mode(tmp: Path, mode: int, final: Path) -> None:
    """Give the temporary (0600/0700) the mode its final name will have: the mode of the
    file it replaces -- as open() keeps it when it overwrites a file: a population made
    private with chmod 600 came out 0644, readable by all, once written again -- else the
    mode open()/mkdir() would give a new one (``mode`` less the umask)."""
    if not tmp.exists():
        return
    if not tmp.is_dir() and final.is_file() and not final.is_symlink():
        with contextlib.suppress(OSError):
            os.chmod(tmp, stat.S_IMODE(final.stat().st_mode))
            return
    os.chmod(tmp, mode & ~_umask())


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; on success rename it to ``path``.

    On any exception (Ctrl-C included) the temporary file is removed and ``path`` is left
    untouched.
    """
    from topicslab._paths import path_name

    final = Path(path_name(path))
    _refuse_link(final)
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = _temporary_file(final)
    except PermissionError as exc:  # (the line named the temporary that was never made)
        raise _denied(exc, final, []) or exc from exc
    except OSError as exc:
        raise _not_writable(exc, final) from exc
    try:
        yield tmp
        raise_if_interrupted()
        _refuse_kind_clash(tmp, final)
        _give_usual_mode(tmp, 0o666, final)
        os.replace(tmp, final)
    except BaseException as exc:
        with interrupts_deferred():  # (a second Ctrl-C here left the temporary behind)
            full = _too_large(exc, final, [tmp]) or _full_disk(exc, final)
            _remove(tmp)
        if full is not None:
            raise full from exc
        denied = _denied(exc, final, [tmp])
        if denied is not None:
            raise denied from exc
        raise
    _completed.append(final.absolute())


@contextlib.contextmanager
def atomic_paths(paths: Sequence[str | os.PathLike[str]],
                 stale: Iterable[str | os.PathLike[str]]
                 | Callable[[], Iterable[str | os.PathLike[str]]] = ()
                 ) -> Iterator[list[Path]]:
    """Yield one temporary path per entry of ``paths``; on success rename them all.

    The renames run with Ctrl-C held back, so the set appears as a whole; then the ``stale``
    files that are not part of the new set are removed (e.g. the shards of an older set with
    another shard count). ``stale`` may be a function, asked at the commit: a set another
    command committed meanwhile is then older too (listed at the start, two concurrent
    writes of other shard counts both stayed). On failure every temporary is removed and
    nothing else changes.
    """
    finals = [Path(p) for p in paths]
    for final in finals:
        _refuse_link(final)
    tmps: list[Path] = []
    try:
        for final in finals:
            try:
                final.parent.mkdir(parents=True, exist_ok=True)
                tmps.append(_temporary_file(final))
            except PermissionError:
                raise
            except OSError as exc:
                raise _not_writable(exc, final) from exc
        yield tmps
        raise_if_interrupted()
        for tmp, final in zip(tmps, finals, strict=True):
            _refuse_kind_clash(tmp, final)
        # a set (shards): renamed one at a time, while no reader reads the directory
        together = bool(finals) and (len(finals) > 1 or callable(stale)
                                     or stale != ())
        from topicslab._paths import set_lock

        with (set_lock(finals[0].parent, shared=False) if together
              else contextlib.nullcontext()), interrupts_deferred():
            for tmp, final in zip(tmps, finals, strict=True):
                _give_usual_mode(tmp, 0o666, final)
                os.replace(tmp, final)
            new = {f.absolute() for f in finals}
            for old in stale() if callable(stale) else stale:
                if Path(old).absolute() not in new:
                    _remove(Path(old))
            # before a held-back Ctrl-C is delivered: the set is complete, and the
            # interrupted command's line must say so (it said "nothing written")
            _completed.extend(f.absolute() for f in finals)
    except BaseException as exc:
        with interrupts_deferred():  # (a second Ctrl-C here left temporaries behind)
            full = ((_too_large(exc, finals[0], tmps) or _full_disk(exc, finals[0]))
                    if finals else None)
            for tmp in tmps:
                _remove(tmp)
        if full is not None:
            raise full from exc
        denied = _denied(exc, finals[0], tmps) if finals else None
        if denied is not None:
            raise denied from exc
        raise


def _merge_into(tmp: Path, final: Path, owned: Sequence[str]) -> None:
    """Move every entry of ``tmp`` into the existing directory ``final``, replacing entries
    of the same name, and remove the ``owned`` names the new content lacks."""
    new_names = {entry.name for entry in tmp.iterdir()}
    for entry in tmp.iterdir():
        _refuse_kind_clash(entry, final / entry.name)
    for entry in tmp.iterdir():
        target = final / entry.name
        if entry.is_dir() and target.is_dir():
            _remove(target)  # os.replace cannot replace a non-empty directory
        elif entry.is_file() and target.is_file() and not target.is_symlink():
            # a replaced file keeps its mode, as atomic_path's does (a release's files made
            # private with chmod 600 came out 0644)
            with contextlib.suppress(OSError):
                os.chmod(entry, stat.S_IMODE(target.stat().st_mode))
        os.replace(entry, target)
    for name in owned:
        if name not in new_names:
            _remove(final / name)
    tmp.rmdir()


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike[str], owned: Sequence[str] = ()) -> Iterator[Path]:
    """Yield a temporary directory next to ``path``; on success it becomes ``path``.

    When ``path`` does not exist the temporary directory is renamed to it (one atomic step).
    When it exists -- a user's directory may hold other files -- the temporary is made inside
    it (on its file system, which a mount point's parent is not) and the new entries are moved
    into it with Ctrl-C held back, and the ``owned`` names that the new content lacks are
    removed, so no file of an older output remains mixed with the new one. On failure the
    temporary directory is removed and ``path`` is left untouched (an existing directory
    keeps its old content; a new one is never created).
    """
    if isinstance(path, str) and not path:
        # Path("") is ".": save_statistics("", ...) wrote the release into the working
        # directory, where the command line refuses an empty --out
        from topicslab.errors import InputError

        raise InputError(f"an empty path ({path!r}): name the directory to write ('.' for "
                         "the working directory)", field="directory")
    from topicslab._paths import path_name

    final = Path(path_name(path, "directory"))
    if final.exists() and not final.is_dir():  # (the rename failed after the work)
        from topicslab.errors import InputError

        raise InputError("is an existing file, and a directory is written here; choose "
                         "another name", file=os.fspath(final))
    final.parent.mkdir(parents=True, exist_ok=True)
    # an existing directory may be a mount point (a container's volume, a USB disk), on
    # another file system than its parent: the temporary lives inside it, or the merge's
    # renames failed after the work (EXDEV, "Invalid cross-device link", exit code 1)
    inside = final.is_dir()
    try:
        tmp = _temporary_dir(final, final if inside else final.parent)
    except PermissionError as exc:  # (the line named the temporary that was never made)
        raise _denied(exc, final, [], final if inside else None) or exc from exc
    try:
        yield tmp
        raise_if_interrupted()
        merge = inside or final.is_dir()
        from topicslab._paths import set_lock

        # the files are moved in one at a time: while no reader reads the directory
        with (set_lock(final, shared=False) if merge else contextlib.nullcontext()), \
                interrupts_deferred():
            if merge:
                _merge_into(tmp, final, owned)
            else:
                _give_usual_mode(tmp, 0o777, final)
                os.rename(tmp, final)
            _completed.append(final.absolute())  # before a held-back Ctrl-C is delivered
    except BaseException as exc:
        with interrupts_deferred():  # (a second Ctrl-C here left the temporary behind)
            full = _too_large(exc, final, [tmp]) or _full_disk(exc, final)
            _remove(tmp)
        if full is not None:
            raise full from exc
        denied = _denied(exc, final, [tmp])
        if denied is not None:
            raise denied from exc
        raise


def write_text_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` atomically."""
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)
