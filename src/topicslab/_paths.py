"""Output locations checked before any work starts, and no empty directories left behind.

A command that computes for minutes and then cannot write its result wastes the run, and a
write into a bad location tends to fail with an ``OSError`` traceback; so every command checks
where it will write first and refuses a bad location as one ``InputError`` line naming the
option. A location is good when

* its parent directory exists and is writable (we do not create a tree of directories for a
  typo), and nothing on the way is a regular file;
* a file is expected and the name is not an existing directory (nor a device or pipe: the
  atomic rename would replace it), and its extension matches the format written;
* a directory is expected and the name is not an existing file, nor a directory holding
  another command's output (a fitted model, a learned attack, a DP release, a run): writing
  there would leave the two mixed (a learned attack's model.json beside a fit's checkpoints).

``exclusive_dir`` holds a run's directory for one command; ``set_lock`` holds a directory while a
set of its files is committed or read (the same lock: a command that holds it is not held up).

``no_new_empty_dirs`` removes the output directories a failed command created if nothing was
written into them (directories holding anything, e.g. fit checkpoints for ``--resume``, stay).
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from topicslab._json import loads, read_document
from topicslab.errors import InputError

__all__ = ["check_output_dir", "check_output_file", "exclusive_dir", "no_new_empty_dirs",
           "refuse_overwriting_inputs"]


def _writable(directory: Path) -> bool:
    # access() also reports EROFS (read-only file systems), even for root; but root passes
    # it on pseudo file systems that create no files (/proc, /sys), where the write failed
    # only after the work (exit code 1): so a probe file is created and removed at once
    from topicslab._atomic import interrupts_deferred

    if not os.access(directory, os.W_OK | os.X_OK):
        return False
    # (a kill just after the probe was made left it behind: held back until it is gone)
    with interrupts_deferred():
        try:
            fd, probe = tempfile.mkstemp(prefix=".topicslab-probe.", dir=directory)
        except OSError:
            return False
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(probe)
    return True


def _regular_file_above(path: Path) -> Path | None:
    """The first existing ancestor of ``path`` when it is not a directory."""
    for ancestor in path.parents:
        if ancestor.exists():
            return None if ancestor.is_dir() else ancestor
    return None


def _name_max(directory: Path) -> int:
    try:
        return os.pathconf(directory if directory.is_dir() else ".", "PC_NAME_MAX")
    except (OSError, ValueError):
        return 255


#: the longest path the operating system takes (Linux's PATH_MAX, with its final NUL)
_PATH_MAX = 4096


def printable(text: str) -> str:
    """``text`` with every character a terminal would not show as itself written as Python
    writes it (``\\x1b``, ``\\t``, ``\\u2028``): a control character or a line or
    paragraph separator in a name (an escape sequence that clears the screen, a tab shown as
    spaces, a form feed or bell shown as nothing, ``\\x85``/``\\u2028`` breaking the line, a
    right-to-left override turning the rest of the line round) makes a line that does not
    show the name, or is not one line."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape", "backslashreplace")
                   .decode("ascii") for c in text)


def not_utf8_name(value: str, field: str | None) -> InputError | None:
    """The refusal of a name that is not UTF-8 (bytes Python keeps as surrogates), or
    ``None`` for a UTF-8 name: the Parquet library failed on one after the work, as "the
    output cannot be shown in the terminal's encoding", or named the input with a codec's
    message (from Python, "UnicodeEncodeError: 'utf-8' codec can't encode character")."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        pass
    else:
        return None
    shown = os.fsencode(value).decode("utf-8", "backslashreplace")
    if shown == os.fsencode(value).decode("utf-8", "replace") and \
            sys.getfilesystemencoding().lower().replace("-", "") != "utf8":
        # the name is UTF-8; this Python decodes names as ASCII (the C locale with the
        # locale coercion and UTF-8 mode off): "the name is not valid UTF-8" was wrong
        return InputError(f"this Python reads file names as {sys.getfilesystemencoding()} "
                          "(the C or POSIX locale), so a UTF-8 name cannot be passed on; "
                          "run under a UTF-8 locale (LC_ALL=C.UTF-8) or set PYTHONUTF8=1",
                          file=shown, field=field)
    # (the line gave the Parquet and Arrow libraries as the reason for any option, a JSON or
    # PNG output's too; the outputs also record the names they read as text)
    return InputError("the name is not valid UTF-8, and topicslab takes UTF-8 names only "
                      "(the Parquet and Arrow libraries and the names recorded in its "
                      "outputs take no other); rename the file (or directory) or choose a "
                      "UTF-8 name", file=shown, field=field)


def path_name(path: object, field: str = "path") -> str:
    """``path`` as the name the file system takes: a ``str`` or an ``os.PathLike`` of one.
    Anything else -- bytes, an open file, a file descriptor, ``None`` -- was Python's
    ``TypeError`` deep in a reader or writer ("a bytes-like object is required, not 'str'",
    "expected str, bytes or os.PathLike object, not BufferedReader"), and a NUL character
    in the name its "ValueError: embedded null byte"."""
    try:
        name = os.fspath(path) if isinstance(path, str | os.PathLike) else None
    except TypeError:  # (an __fspath__ that returns no name: "expected P.__fspath__() to
        # return str or bytes, not int")
        name = None
    if not isinstance(name, str):
        opened = hasattr(path, "read") or hasattr(path, "write")
        raise InputError(f"expected a file or directory name (a str or pathlib.Path), got "
                         f"{type(path).__name__}"
                         + ("; topicslab opens files by name: give the file's name (f.name), "
                            "not the open file" if opened else ""), field=field)
    if "\x00" in name:
        raise InputError("the name holds a NUL character, which no file name can hold",
                         file=printable(name), field=field)
    problem = not_utf8_name(name, field)  # (as the CLI's options: pyarrow's
    # UnicodeEncodeError, an output's after the work)
    if problem is not None:
        raise problem
    return name


#: characters no output name may hold: control characters (C0, DEL, C1), the line and
#: paragraph separators, and the bidirectional overrides and isolates (which display the
#: rest of the name, and of any line that shows it, in another order)
_NOT_IN_NAMES = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _check_name(path: Path, option: str) -> None:
    """A name the error line and the file system can take (no line break or other control
    character, not too long)."""
    name = os.fspath(path)
    if any(c in name for c in "\n\r"):
        raise InputError("the name holds a line break; choose another name",
                         file=repr(name), field=option)
    bad = _NOT_IN_NAMES.search(name)
    if bad is not None:
        # a name that a terminal cannot show (an escape sequence in the summary's title,
        # a tab shown as spaces): written without a word, where a line break is refused
        raise InputError(f"the name holds the control character {printable(bad.group())} "
                         "(a terminal does not show it as itself); choose another name",
                         file=printable(name), field=option)
    if name.startswith("-"):
        # "--out -" (standard output) or "--out --no-progress" (the option after a missing
        # value) made a directory of that name, silently
        raise InputError("the name begins with '-': it reads as an option, or as standard "
                         "output, which this option cannot write; give the name (for a name "
                         f"that does begin with '-', give its full path, "
                         f"{os.path.abspath(name)})", file=name, field=option)
    refuse_relative_without_cwd(name, option)
    blocked = _unsearchable_above(path)
    if blocked is not None:
        # (the line named the output itself -- "d/p.parquet: permission denied: this user
        # may not read (or write) it" -- with no option, for a directory above it)
        raise unsearchable_error(blocked, name, option, "written")
    whole = len(os.fsencode(os.path.abspath(name))) + len(".XXXXXXXX.tmp")
    if whole >= _PATH_MAX:
        # the file system refuses the whole path (ENAMETOOLONG): an OSError, exit code 1
        raise InputError(f"the path is {whole - len('.XXXXXXXX.tmp'):,} bytes long, past the "
                         f"file system's limit of {_PATH_MAX:,} (less room for a temporary "
                         "name); choose a shorter path", file=name[:40] + "...", field=option)
    limit = _name_max(path.parent) - len(".." + ".XXXXXXXX.tmp")  # room for the temporary
    if len(os.fsencode(path.name)) > limit:
        raise InputError(f"the file name is {len(os.fsencode(path.name))} bytes long, more "
                         f"than {limit} (the file system's limit, less room for a temporary "
                         "name); choose a shorter name",
                         file=name[:40] + "...", field=option)


def _may_replace_others_files() -> bool:
    """Whether this process may remove other users' files from a sticky directory: root
    with CAP_FOWNER (a root without it, in a container, may not)."""
    if os.geteuid() != 0:
        return False
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            caps = next(ln.split()[1] for ln in status if ln.startswith("CapEff:"))
        return bool(int(caps, 16) & (1 << 3))  # CAP_FOWNER
    except (OSError, StopIteration, ValueError, IndexError):
        return True


def _owner_in_sticky_directory(path: Path) -> str | None:
    """The owner of ``path`` when it is another user's file in a sticky directory (``/tmp``)
    that this user does not own either: the closing rename over it is refused (EPERM);
    ``None`` otherwise."""
    import stat

    try:
        st, parent = path.lstat(), path.parent.stat()
    except OSError:
        return None
    me = os.geteuid()
    if (not parent.st_mode & stat.S_ISVTX or me in (st.st_uid, parent.st_uid)
            or _may_replace_others_files()):
        return None
    try:
        import pwd

        return pwd.getpwuid(st.st_uid).pw_name
    except (ImportError, KeyError):
        return f"user id {st.st_uid}"


def _relative_to_unsearchable_cwd(name: str | os.PathLike[str]) -> bool:
    """``name`` is relative and the working directory it is looked up from may not be
    searched ("../p.parquet" too, whose ".." ``abspath`` takes away: "no such file" for a
    file that is there)."""
    return not os.path.isabs(name) and not os.access(os.curdir, os.X_OK)


def _unsearchable_above(path: Path) -> Path | None:
    """The first existing directory above ``path`` that this user may not search (``x``):
    nothing under it can be looked at, so every later check saw a missing file or a
    ``PermissionError``."""
    try:
        if _relative_to_unsearchable_cwd(path):
            return Path(os.getcwd())
        above = Path(os.path.abspath(path)).parents
    except (OSError, ValueError):
        return None
    for directory in reversed(above):
        if not os.path.isdir(directory):
            return None  # missing: the parent's check names it
        if not os.access(directory, os.X_OK):
            return directory
    return None


def unsearchable_error(blocked: Path, name: str, option: str, done: str) -> InputError:
    """The line for ``name`` under ``blocked``, a directory this user may not search
    (``unsearchable``): nothing in it can be ``done`` ("written", "read or written")."""
    if _relative_to_unsearchable_cwd(name):
        return InputError(f"the working directory {blocked} cannot be searched by this user (it "
                          "lacks the x permission), so no name relative to it can be followed; "
                          "give the full path, or change its permissions (chmod u+rwx)",
                          file=name, field=option)
    return InputError(f"directory {blocked} cannot be searched by this user (it lacks the x "
                      f"permission), so nothing in it can be {done}; change its permissions "
                      "(chmod u+rwx) or choose another location", file=name, field=option)


def unsearchable(name: str) -> Path | None:
    """The directory that keeps this user from looking into ``name``: one above it that may
    not be searched, or ``name`` itself when it is such a directory; ``None`` if none."""
    above = _unsearchable_above(Path(name))
    if above is not None:
        return above
    if os.path.isdir(name) and not os.access(name, os.X_OK):
        return Path(name)
    return None


def refuse_relative_without_cwd(name: str, option: str) -> None:
    """Refuse a relative path when the working directory no longer exists (removed, by
    another shell or a clean-up, after the command's shell went into it): the path checks'
    ``abspath`` failed with "FileNotFoundError: [Errno 2] No such file or directory", exit
    code 1, naming nothing."""
    if os.path.isabs(name):
        return
    try:
        os.getcwd()
    except FileNotFoundError:
        raise InputError("a relative path, and the working directory no longer exists (it "
                         "was removed after the shell went into it); cd to an existing "
                         "directory, or give an absolute path", file=name,
                         field=option) from None


def unexpanded_tilde(name: str) -> str:
    """The advice for a path that starts with ``~`` the shell left as it was (quoted, or
    ``--out=~/x``): "create it first" made a directory named ``~`` ("" if not such a path)."""
    if not name.startswith("~") or os.path.exists(name.split("/", 1)[0]):
        return ""
    return (f"the shell did not expand {name.split('/', 1)[0]}, as it does not when ~ is quoted "
            "or follows '=': write the home directory out (e.g. $HOME/...), or give ~ unquoted "
            "as its own word")


def _uri_advice(name: str) -> str:
    """The advice for an output named as a URI (``s3://bucket/rel``, which ``pathlib`` makes
    ``s3:/bucket/rel``): "create it first" made a local directory named ``s3:`` ("" if not
    such a name)."""
    m = re.match(r"([A-Za-z][A-Za-z0-9+.-]*:)/", name)
    if m is None or os.path.exists(m.group(1)):
        return ""
    return (f"it reads as a URI ({m.group(1)}//...), and outputs are written to this "
            "machine's file system: give a local path")


def _check_parent(path: Path, option: str) -> None:
    name = os.fspath(path)
    blocker = _regular_file_above(path)
    if blocker is not None:
        raise InputError(f"{blocker} is a regular file, so nothing can be written under it; "
                         "choose another location", file=name, field=option)
    parent = path.parent
    if not parent.is_dir():
        raise InputError(f"directory {parent} does not exist; "
                         + (unexpanded_tilde(name) or _uri_advice(name)
                            or "create it first or choose another location"),
                         file=name, field=option)
    if not _writable(parent):
        raise InputError(f"directory {parent} is not writable; choose another location",
                         file=name, field=option)


#: the path options of the running command, as typed (``topicslab.cli`` fills it in; the
#: Python API leaves it empty): ``Path`` drops a trailing ``/``
typed_paths: dict[str, str] = {}


def check_output_file(path: str | os.PathLike[str], option: str,
                      suffixes: Sequence[str] = (), what: str = "") -> Path:
    """Refuse a bad location for the output file ``path`` given by ``option``.

    ``suffixes``: the accepted extensions (lower case, with the dot; e.g. ``(".parquet",)``);
    ``what``: the format, for the message (``"Parquet"``). ``.tfrecord`` may be followed by a
    shard suffix, as in ``synth.tfrecord-00000-of-00004``.
    """
    p = Path(path)
    name = os.fspath(p)
    if not name.strip() or p.name in ("", ".", ".."):
        # repr: a name of spaces would print as nothing
        raise InputError("an output file name is needed", file=repr(name), field=option)
    _check_name(p, option)
    if p.is_symlink() and not p.is_dir():
        # the atomic rename would replace the link itself, not the file it points to (and a
        # link to a missing directory would silently become a file here)
        raise InputError(f"is a symbolic link (to {os.readlink(p)}); name the file itself, or "
                         "remove the link", file=name, field=option)
    if p.is_dir():
        raise InputError("is an existing directory, and a file is written here; name a file "
                         f"(e.g. {p / ('out' + (suffixes[0] if suffixes else ''))})",
                         file=name, field=option)
    if p.exists() and not p.is_file():
        raise InputError("exists and is not a regular file; choose another name", file=name,
                         field=option)
    typed = typed_paths.get(option, "")
    if typed.endswith(("/", os.sep)) and typed.rstrip("/" + os.sep):
        # population --out p.parquet/ wrote the file p.parquet: the '/' asked for a
        # directory, and where one was meant the output landed beside it
        raise InputError("ends in '/', which names a directory, and this option writes a "
                         f"file; drop the '/' (or name a file in the directory, e.g. "
                         f"{p / ('out' + (suffixes[0] if suffixes else ''))})", file=typed,
                         field=option)
    low = p.name.lower()
    if suffixes and not any(low.endswith(s) or (s == ".tfrecord" and s + "-" in low)
                            for s in suffixes):
        fmt = f"{what} " if what else ""
        raise InputError(f"this option writes {fmt}files: the name must end in "
                         f"{' or '.join(suffixes)}", file=name, field=option)
    _check_parent(p, option)
    owner = _owner_in_sticky_directory(p)
    if owner is not None:
        # (the closing rename failed after the work: "directory /tmp does not let this user
        # create or replace files (did it change during the work?)")
        raise InputError(f"is a file of another user ({owner}) in {p.parent}, a directory "
                         "where only a file's owner may replace it (the sticky bit, as in "
                         "/tmp); choose another name", file=name, field=option)
    if p.is_file():
        # (reid --json model/model.json replaced a fitted model's metadata with a risk table:
        # the model could no longer be loaded; the same for a release's files)
        for kind in _output_kinds(p.parent):
            if p.name in _OWN_FILES[kind]:
                raise InputError(f"is a file of {OUTPUT_KINDS[kind]} in {p.parent}; writing "
                                 "here would destroy that output: choose another name",
                                 file=name, field=option)
    return p


#: the files that make up each kind of output: an output file of another command must not
#: replace one of them
_OWN_FILES = {
    "model": ("model.json", "model.safetensors", "fit_history.json"),
    "attack": ("model.json", "model.safetensors"),
    "stats": ("q_within.json", "q_across.json", "q_single.json", "q_overlap.json",
              "privacy_ledger.json", "taxonomy.json", "qwithin.json", "qacross.json"),
    # (the population and the synthetic release too: population --out run/pop.parquet
    # replaced the input of the run's DP release, which the next run released again)
    "run": ("stages.json", "results.json", "report.html", "pop.parquet", "synth.parquet"),
}


#: the directories of a run's output (``topicslab run``): its DP release, model and errors
_OWN_DIRS = ("stats", "model", "validation")


#: output kinds of the commands that write a directory, as the refusal names them
OUTPUT_KINDS = {"model": "a fitted model (topicslab fit)",
                "attack": "a learned attack (topicslab attack-train)",
                "stats": "DP statistics (topicslab stats)",
                "run": "a run's output (topicslab run)"}


def run_record(path: str | os.PathLike[str]) -> str | None:
    """``"the results.json of a run's output (topicslab run)"`` when ``path`` is a run's
    results.json or stages.json (beside a stages.json), else ``None``: given where another
    JSON file was expected, such a file was "invalid JSON: the integer ... is past 64 bits"
    (a capacity in its QIF section), as if it were corrupt."""
    p = Path(path)
    if p.name in ("results.json", "stages.json") and (p.parent / "stages.json").is_file():
        return f"the {p.name} of a run's output (topicslab run)"
    return None


def _output_kinds(directory: Path) -> dict[str, str]:
    """The kinds of topicslab output ``directory`` holds, each with the file that shows it."""
    found: dict[str, str] = {}
    if (directory / "stages.json").is_file():
        found["run"] = "stages.json"
    # every file of a release (the older schema's names too; taxonomy.json alone is too
    # common a name to tell)
    for name in ("q_within.json", "privacy_ledger.json", "q_single.json", "q_across.json",
                 "qwithin.json", "qacross.json"):
        if (directory / name).is_file():
            found.setdefault("stats", name)
    # an interrupted fit leaves its checkpoints (for --resume) and no model.json yet
    for name in ("checkpoints/checkpoint.pt", "fit_history.json"):
        if (directory / name).is_file():
            found.setdefault("model", name)
    meta = directory / "model.json"
    if meta.is_file():
        try:
            fmt = loads(read_document(meta, "model.json")).get("format")
        except (OSError, ValueError, AttributeError, InputError):  # (its reader says why)
            fmt = None
        if fmt == "topicslab-type-mixture":
            found["model"] = "model.json"
        elif fmt == "topicslab-learned-attack":
            found["attack"] = "model.json"
    return found


def other_output(directory: str | os.PathLike[str], kind: str) -> str | None:
    """``"is a directory holding <another kind>, not <kind>"`` when ``directory`` (read as
    output of ``kind``, a key of ``OUTPUT_KINDS``) holds another kind of output instead, else
    ``None``: a release given as a model was "S/model.json: file missing", a file under the
    directory, as if the model had lost a file."""
    p = Path(directory)
    if not os.fspath(directory).strip() or not p.is_dir():
        return None
    kinds = _output_kinds(p)
    if not kinds or kind in kinds:
        return None
    return (f"is a directory holding {OUTPUT_KINDS[next(iter(kinds))]}, not "
            f"{OUTPUT_KINDS[kind]}")


def not_topic_sets(directory: str | os.PathLike[str]) -> str | None:
    """Why ``directory``, read as topic sets (TFRecord shards, or Parquet parts for the
    stream engine), holds none: it is a directory of another topicslab output; else
    ``None``. A release was "no .tfrecord files", and a run's directory was read by the
    stream engine as one data set of its pop.parquet and synth.parquet ("user id 0 appears
    more than once")."""
    p = Path(directory)
    kinds = _output_kinds(p) if p.is_dir() else {}
    if not kinds:
        return None
    kind = next(iter(kinds))
    pop = p / "pop.parquet"
    hint = f" (the run's population is {pop})" if kind == "run" and pop.is_file() else ""
    return (f"is a directory holding {OUTPUT_KINDS[kind]}, not topic sets; give a file of "
            f"topic sets{hint}")


def check_output_dir(path: str | os.PathLike[str], option: str,
                     kind: str | None = None, files: Sequence[str] = ()) -> Path:
    """Refuse a bad location for the output directory ``path`` given by ``option``; with
    ``kind`` (a key of ``OUTPUT_KINDS``), also a directory holding another kind of output;
    with ``files`` (the names the command writes into it), one holding a directory of such
    a name (the closing rename refused it only after the work)."""
    p = Path(path)
    name = os.fspath(p)
    if not name.strip():
        # repr, as check_output_file's: a name of spaces was shown as '', a name the user did
        # not type
        raise InputError("an output directory name is needed", file=repr(name), field=option)
    _check_name(p, option)
    if p.is_symlink() and not p.exists():
        # a link to a missing directory: the directory's atomic rename failed only after the
        # work (attack-train trained, then exit 1); a link to an existing directory is written
        # through
        from topicslab.io._common import missing

        if "loops back" in (why := missing(name)):  # ("create it" cannot be done)
            raise InputError(f"{why}; remove the link, or name another directory", file=name,
                             field=option)
        raise InputError(f"is a symbolic link to a missing directory ({os.readlink(p)}); create "
                         "it, or name another directory", file=name, field=option)
    if p.exists() and not p.is_dir():
        raise InputError("is an existing file, and a directory is written here; choose "
                         "another name", file=name, field=option)
    if p.parent.is_dir() and p.name in _OWN_DIRS and "run" in _output_kinds(p.parent):
        # (stats --out run/stats and fit --out run/model replaced the run's DP release and
        # model under a results.json and report that described the old ones, and the next
        # run recomputed them over the command's output)
        raise InputError(f"is a directory of {OUTPUT_KINDS['run']} in {p.parent}; writing "
                         "here would destroy that output: choose another directory",
                         file=name, field=option)
    if p.is_dir():
        if not _writable(p):
            raise InputError("directory is not writable; choose another location", file=name,
                             field=option)
        if kind is not None:
            refuse_mixing(p, kind, option)
        from topicslab._atomic import refuse_directories

        refuse_directories((p / name for name in files), option)
        return p
    _check_parent(p, option)
    return p


def refuse_mixing(directory: str | os.PathLike[str], kind: str, field: str) -> None:
    """Refuse writing ``kind`` (a key of ``OUTPUT_KINDS``) into an existing ``directory`` that
    holds another kind of output: the CLI's check, and the API's save functions' (a model
    saved into a learned attack's directory replaced its model.json and weights)."""
    p = Path(path_name(directory, field))
    if not os.fspath(directory).strip() or not p.is_dir():  # ('' is refused by the writer)
        return
    for other, shown_by in _output_kinds(p).items():
        if other != kind:
            raise InputError(f"holds {OUTPUT_KINDS[other]} ({shown_by}); writing "
                             f"{OUTPUT_KINDS[kind]} there would mix the two: choose another "
                             "directory", file=os.fspath(p), field=field)


#: (device, inode) of the directories this process holds through ``exclusive_dir``: flock
#: refuses a second open description of this very process too, so without it the run's own
#: checks (``experiment.run`` inside ``topicslab run``'s hold) read their directory as held
#: by another command
_HELD_HERE: set[tuple[int, int]] = set()


def _identity(fd: int) -> tuple[int, int]:
    st = os.fstat(fd)
    return st.st_dev, st.st_ino


def _held_elsewhere(directory: Path) -> bool:
    """Whether another command holds ``directory`` through ``exclusive_dir``."""
    try:
        import fcntl
    except ImportError:  # (no flock here: nothing is held)
        return False
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return False
    try:
        if _identity(fd) in _HELD_HERE:
            return False
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # (releases the probe's own lock)
    return False


def held_elsewhere_error(directory: str | os.PathLike[str], option: str,
                         command: str = "run") -> InputError:
    """The refusal of a directory another command holds through ``exclusive_dir``."""
    return InputError(f"another topicslab {command} is writing this directory now; wait for "
                      f"it to finish, or choose another {option}", file=os.fspath(directory),
                      field=option)


def refuse_held_elsewhere(directory: str | os.PathLike[str], option: str,
                          command: str = "run") -> None:
    """Refuse, before checking what ``directory`` holds, one that another command is writing
    now: its half-made state (files, but no stages.json yet, during a run's first stage) was
    refused as "not a run's output directory"."""
    if Path(directory).is_dir() and _held_elsewhere(Path(directory)):
        raise held_elsewhere_error(directory, option, command)


@contextlib.contextmanager
def exclusive_dir(directory: str | os.PathLike[str], option: str,
                  command: str = "run") -> Iterator[None]:
    """Create ``directory`` if needed and hold it for this command alone: a second command
    writing into it at the same time is refused before any work (two ``run`` processes into
    one --out left a report and a release of one with the model of the other). An advisory
    lock (flock) of the directory itself: no lock file, released when the command ends, even
    killed."""
    path = Path(directory)
    path.mkdir(exist_ok=True)
    try:
        import fcntl
    except ImportError:  # (no flock on this platform: not held)
        yield
        return
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # (a directory that cannot be listed, only written: not held)
        yield
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise held_elsewhere_error(path, option, command) from None
        held = _identity(fd)
        _HELD_HERE.add(held)
        try:
            yield
        finally:
            _HELD_HERE.discard(held)
    finally:
        os.close(fd)


@contextlib.contextmanager
def set_lock(directory: str | os.PathLike[str], *, shared: bool) -> Iterator[None]:
    """Hold ``directory`` while a set of its files is committed (``shared=False``: the shards
    of a TFRecord set, the files of a DP release) or read (``shared=True``), so that a reader
    sees one write's set whole: one renamed file at a time, a reader of the shards while
    ``sample`` replaced them read shards of both draws (the same user ids, other users)
    without a word. An advisory flock of the directory (``exclusive_dir``'s lock: a command
    holding the directory already is not held up by itself); taken in short tries, so that a
    Ctrl-C still ends the wait; where no lock can be taken, nothing is held."""
    try:
        import fcntl
    except ImportError:  # (no flock on this platform)
        yield
        return
    try:
        # (a directory only: a pipe named as one waited here for a writer)
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)
                     | getattr(os, "O_NONBLOCK", 0))
    except OSError:  # (not a directory, or one that cannot be opened: the reader says why)
        yield
        return
    try:
        from topicslab._atomic import raise_if_interrupted

        if _identity(fd) not in _HELD_HERE:
            mode = (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB
            while True:
                try:
                    fcntl.flock(fd, mode)
                    break
                except BlockingIOError:
                    raise_if_interrupted()
                    time.sleep(0.02)
                except OSError:  # (a file system without flock: not held)
                    break
        yield
    finally:
        os.close(fd)  # (releases the lock)


def _remove_empty_tree(directory: Path) -> None:
    if _held_elsewhere(directory):  # created here, but another command writes into it now
        return
    for root, _dirs, _files in os.walk(directory, topdown=False):
        with contextlib.suppress(OSError):  # not empty: keep it
            os.rmdir(root)


@contextlib.contextmanager
def no_new_empty_dirs(*directories: str | os.PathLike[str] | None) -> Iterator[None]:
    """On failure, remove those of ``directories`` that did not exist before and hold no file."""
    new = [Path(d) for d in directories if d is not None and not Path(d).exists()]
    try:
        yield
    except BaseException:
        for d in new:
            if d.is_dir():
                _remove_empty_tree(d)
        raise


PathArg = str | os.PathLike[str] | None


def _where(path: str | os.PathLike[str]) -> tuple[Path, Path]:
    p = Path(os.path.abspath(os.fspath(path)))
    return p, Path(os.path.realpath(p))


def _same_or_inside(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """Whether ``a`` is ``b`` or lies under ``b`` (as written, or after following links)."""
    (a_abs, a_real), (b_abs, b_real) = _where(a), _where(b)
    return any(x == y or y in x.parents for x, y in ((a_abs, b_abs), (a_real, b_real)))


def _read_files(path: str | os.PathLike[str]) -> list[tuple[str, str]]:
    """What an input ``path`` reads, each with how the refusal shows it: the path itself, or
    for a pattern of TFRecord shards the files it matches (``convert 'd/p-*-of-00002.tfrecord'
    d/p.tfrecord --shards 3`` replaced the very shards it read)."""
    import glob

    from topicslab.io._common import is_pattern

    name = os.fspath(path)
    if not is_pattern(name):
        return [(name, name)]
    return [(f, f"{f} (matched by {name})") for f in sorted(glob.glob(name))]


def refuse_overwriting_inputs(outputs: Sequence[tuple[str, PathArg]],
                              inputs: Sequence[tuple[str, PathArg]] = ()) -> None:
    """Refuse, before any work, an output that would destroy an input or another output.

    ``outputs`` and ``inputs`` are ``(option, path)`` pairs (a ``None`` path is skipped). An
    output is refused when it is an input or lies inside an input directory, when it is
    another output, or when it lies inside another output (a directory the command writes).
    """
    outs = [(o, p) for o, p in outputs if p is not None and os.fspath(p).strip()]
    ins = [(o, p) for o, p in inputs if p is not None and os.fspath(p).strip()]
    for option, path in outs:
        for in_option, in_path in ins:
            for read, shown in _read_files(in_path):
                if _same_or_inside(path, read):
                    how = "is" if _where(path)[1] == _where(read)[1] else "lies inside"
                    raise InputError(f"{how} the input {in_option} {shown}; writing there "
                                     "would destroy the input; choose another name",
                                     file=os.fspath(path), field=option)
    for i, (option, path) in enumerate(outs):
        for other_option, other in outs[:i] + outs[i + 1:]:
            if _same_or_inside(path, other):
                same = _where(path)[1] == _where(other)[1]
                how = "is also" if same else "lies inside"
                raise InputError(f"{how} the output {other_option} {os.fspath(other)}; one "
                                 "output would overwrite the other; choose another name",
                                 file=os.fspath(path), field=option)
