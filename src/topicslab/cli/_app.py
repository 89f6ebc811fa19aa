"""The ``topicslab`` Typer application and its shared helpers.

Every command lives in its own module of this package, registers itself on ``app`` and
delegates to a documented library function; this package only parses options and prints.

Failures never show a traceback unless ``topicslab --debug`` (or ``TOPICSLAB_DEBUG=1``) asks
for one: bad input -- an option Typer refuses or a ``TopicsLabError`` -- is one line
``error: <file>, row <n>, field <f>: <message>`` and exit code 2; anything else is one line
naming the exception and exit code 1. Ctrl-C is one line ``interrupted: <command> stopped;
<what was kept>`` and exit code 130: every writer is all-or-nothing (``topicslab._atomic``), so
what is on disk is either complete or untouched, and the line says which complete outputs the
command had already written (or what a command registered with ``on_interrupt``, such as the
stages ``run`` keeps). The handling lives in the application's group class so that
``CliRunner`` tests see exactly what a user sees.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import math
import os
import re
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from typer.core import TyperCommand, TyperGroup

from topicslab._progress import QuietConsole, reader_gone

#: exit codes: bad input (as click's usage errors), an unexpected failure, Ctrl-C
EXIT_BAD_INPUT = 2
EXIT_FAILURE = 1
EXIT_INTERRUPTED = 130

#: the largest seed an option takes (a signed 64-bit integer: numpy and torch take no more,
#: and larger ones would wrap around to small seeds or overflow after the work started)
MAX_SEED = 2**63 - 1

#: what the group callback learnt of this invocation: --debug, the command's name and what
#: the command keeps when interrupted (``on_interrupt``)
_state: dict[str, Any] = {"debug": False, "command": None, "kept": None,
                         "interrupted_said": False, "typed": {}}

InterruptNote = str | Callable[[], str | None]

#: help of ``--taxonomy`` on the commands that read topic sets
SETS_TAXONOMY_HELP = ("Taxonomy of the topic ids in --sets: v1 | v2 (default: the file's "
                      "metadata, else detected from the ids).")


def sets_taxonomy(value: str | None, option: str = "--taxonomy") -> str | None:
    """A ``--taxonomy`` for reading topic sets, checked before any data is read."""
    from topicslab.errors import InputError
    from topicslab.taxonomy import VERSIONS

    if value is not None and value not in VERSIONS:
        raise InputError(f"unknown taxonomy version {value!r}; choose one of "
                         f"{', '.join(VERSIONS)}", field=option)
    return value


def on_interrupt(note: InterruptNote | None) -> None:
    """Say what this command leaves on disk if Ctrl-C stops it (the part after ``stopped;``).

    ``note`` may be a function, asked only when the interruption happens; when it (or the
    function) gives ``None``, the line lists the complete outputs written so far.
    """
    _state["kept"] = note


#: the interruption of a command that ends the process, kept until ``_main._exit_now``
#: leaves with ``os._exit`` (``OneLineErrors._print_interrupted``)
_INTERRUPTIONS: list[BaseException] = []


class _Interrupted(BaseException):
    """Ctrl-C, carried past Typer (which would turn ``KeyboardInterrupt`` into a silent exit
    130) to the group's handler; a ``BaseException`` so no ``except Exception`` swallows it."""

    def __init__(self, original: BaseException) -> None:
        super().__init__()
        self.original = original


def _what_was_kept() -> str:
    from topicslab._atomic import completed_writes

    note = _state["kept"]
    text = note() if callable(note) else note
    if text:
        return text
    done = completed_writes()
    if not done:
        return "nothing written (no partial output left)"
    cwd = Path.cwd()
    names = ", ".join(str(p.relative_to(cwd)) if p.is_relative_to(cwd) else str(p)
                      for p in done)
    return f"kept the complete {names}; nothing half-written"


def _interruption() -> str:
    """The interrupt line after ``interrupted:``: which command stopped and what it kept."""
    from topicslab._atomic import stopped_by

    command = _state["command"] or "topicslab"
    why = stopped_by()  # (not the user: the CPU time limit)
    return f"{command} stopped{f' ({why})' if why else ''}; {_what_was_kept()}"


def _debugging() -> bool:
    from topicslab._main import debug_environment

    return bool(_state["debug"]) or debug_environment()


def print_error(message: str) -> None:
    """The one line every failure ends with (never wrapped, whatever the terminal width)."""
    from topicslab._progress import close_bars

    close_bars()  # a bar left open by a suspended generator must not draw after the line
    # a line break in a name the message quotes (an input file called "a\nb.parquet") made
    # the line two, and another control character (an escape sequence, a tab, \x85, \u2028,
    # a right-to-left override) a line that does not show the name: shown escaped, as
    # Python writes it
    try:
        from topicslab._paths import printable

        message = _bytes_shown(_shortened_values(printable(message)))
    except MemoryError:
        message = message.replace("\r", "\\r").replace("\n", "\\n")
    try:
        err.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    except MemoryError:
        # out of memory, rich cannot print the line (it imports its emoji table to do so):
        # a MemoryError traceback under "out of memory" was all that showed; plain text
        with contextlib.suppress(OSError, ValueError, AttributeError, MemoryError):
            sys.stderr.write(f"error: {message}\n")
            sys.stderr.flush()
    except (OSError, ValueError):
        # standard error full or closed (2>/dev/full): the line cannot be shown, but the exit
        # code still tells a refusal (2) from a failure; it was 1, from the print failing
        pass


#: a run of 200 characters or more that are only digits, signs, points, commas, brackets and
#: spaces: a value the line quotes if 100 of them are digits (``--weeks 0..19999`` quoted as a
#: list of 20,000 weeks, a 5,000-digit ``--epsilon``); words have letters, so no name or
#: explanation is cut. (No end is required of the run: a pattern that asked for a digit at
#: its end backtracked over every run that lacks one, 64 s for a line of 129K dashes.)
_LONG_VALUE = re.compile(r"[-+0-9\[(][-+0-9.,_eE\[\]() ]{199,}")


def _shortened_values(message: str) -> str:
    """``message`` with each long value (``_LONG_VALUE``) cut to its ends and its length: a
    line of 129 KB was one line, but no terminal shows it."""
    def cut(found: re.Match[str]) -> str:
        run = found[0].rstrip()
        after = found[0][len(run):]  # the spaces after it stay
        if len(run) < 200 or sum(c.isdigit() for c in run) < 100:
            return found[0]  # dashes, spaces, a number and a gap: not a long value
        return f"{run[:40]} ... {run[-20:]} ({len(run):,} characters){after}"

    return _LONG_VALUE.sub(cut, message)


def _print_traceback() -> None:
    """``--debug``: the traceback of the exception being handled, on standard error (above
    the one line, whose exit code stays that of bad input)."""
    import traceback

    try:
        traceback.print_exc(file=sys.stderr)
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):  # standard error full, closed or None
        pass


def _out_of_memory() -> str:
    """The line of a command that ran out of memory."""
    from topicslab._main import memory_limits

    # (under a limit, the libraries' own share may be what ran out: say so)
    limits = memory_limits()
    return (f"out of memory{limits}: use fewer users, weeks or types"
            + (", or raise the limits" if limits else ""))


def _usage_message(exc: Any) -> str:
    from typer._click.exceptions import UsageError

    text = " ".join(exc.format_message().split())  # click's messages may span lines
    if isinstance(exc, UsageError) and exc.ctx is not None:
        return f"{text} (see '{exc.ctx.command_path} --help')"
    return text


def _not_a_number(exc: Any, args: list[str]) -> str | None:
    """NaN given to a bounded option: click says it is above the maximum; say what it is."""
    param = getattr(exc, "param", None)
    if param is None:
        return None
    opts = [o for o in getattr(param, "opts", []) if o.startswith("-")]
    values = [args[i + 1] for i, a in enumerate(args[:-1]) if a in opts]
    values += [a.split("=", 1)[1] for a in args if a.split("=", 1)[0] in opts and "=" in a]
    long_opts = [o for o in opts if o.startswith("--")] or opts
    undecodable = [v for v in values if _NOT_UTF8.search(v)]
    if undecodable:
        # (a byte that is not UTF-8, ``--m $'\xff'``: "Input should be a valid string,
        # unable to parse raw data as a unicode string", of an option that takes a number)
        return (f"Invalid value for '{long_opts[0]}': {undecodable[0]!r} is not UTF-8 text; "
                f"type the value again (see 'topicslab {_state['command'] or ''} --help')")
    if not any(v.strip().lower().lstrip("+-") == "nan" for v in values):
        return None
    return (f"Invalid value for '{long_opts[0]}': nan is not a number; give a number in the "
            f"option's range (see 'topicslab {_state['command'] or ''} --help')")


#: a byte of the command line that is not UTF-8, as Python carries it (surrogateescape)
_NOT_UTF8 = re.compile("[\udc80-\udcff]")

#: such a byte as ``printable`` or ``repr`` writes it (``\udcff``), not after an escaped
#: backslash
_NOT_UTF8_SHOWN = re.compile(r"(?<!\\)((?:\\\\)*)\\udc([89a-f][0-9a-f])")


def _bytes_shown(message: str) -> str:
    """``message`` with each byte that is not UTF-8 shown as the byte (``\\xff``), as the
    names of files are: a value typed with such a byte (``--epsilon $'\\xff'``) was shown as
    Python's surrogate, "cannot read epsilon '\\udcff'", a character the user never typed."""
    return _NOT_UTF8_SHOWN.sub(lambda m: f"{m[1]}\\x{m[2]}", message)


def _check_given_once(command: Any, name: str | None, args: list[str], parent: Any) -> None:
    """Refuse an option given twice (``--p 0.9 --p 0.1``: click keeps the last without a
    word) and an empty path (``--sets ''``, which ``pathlib`` reads as the current
    directory), naming the option; the command's own parser finds the options, and what it
    cannot parse is left to the real parsing to report."""
    from topicslab._paths import typed_paths
    from topicslab.errors import InputError

    typed_paths.clear()  # (a command run earlier in this process typed its own)
    try:
        sub = command.context_class(command, info_name=name, parent=parent)
        opts, _, order = command.make_parser(sub).parse_args(args=list(args))
    except Exception:
        return
    seen: set[str] = set()
    _state["typed"] = {}
    for param in order:
        if getattr(param, "param_type_name", None) == "argument" and param.name:
            # convert's SOURCE and TARGET: the checks of a path below, not the count
            # (convert '' out.csv read the current directory's TFRecord shards, silently)
            _check_path_value(param, opts.get(param.name), param.name.upper())
            continue
        if getattr(param, "multiple", True) or getattr(param, "count", True) or not param.opts:
            continue
        option = next((o for o in param.opts if o.startswith("--")), param.opts[0])
        if param.name in seen:
            flags = "/".join([option, *getattr(param, "secondary_opts", [])])
            raise InputError(f"{flags} is given more than once; give it once (the last value "
                             "would silently replace the others)", field=option)
        seen.add(param.name)
        _state["typed"][param.name] = opts.get(param.name)
        _check_path_value(param, opts.get(param.name), option)


def _check_working_directory() -> None:
    """Refuse to start in a working directory that no longer exists (removed after the
    shell went into it), the typed paths all absolute (a relative one is refused by its
    option): numba, compiling a kernel, asks for it, and an absolute input was then "not a
    valid Parquet file ([Errno 2] No such file or directory)"."""
    from topicslab.errors import InputError

    try:
        os.getcwd()
    except FileNotFoundError:
        raise InputError("the working directory no longer exists (it was removed after the "
                         "shell went into it), and the libraries need one; cd to an existing "
                         "directory and run the command again") from None


def typed_text(name: str) -> Any:
    """The text the user typed for the running command's parameter ``name`` (``None`` if not
    given): a ``Path`` option's value has lost what ``pathlib`` drops, as the second slash of
    ``hdfs://`` (``hdfs:/data``)."""
    return _state.get("typed", {}).get(name)


def _check_path_value(param: Any, value: Any, option: str) -> None:
    """Refuse, for a path parameter, an empty name, a non-UTF-8 name and a pipe or device."""
    from topicslab.errors import InputError

    descriptor = getattr(param, "type_descriptor", None)
    if getattr(descriptor, "annotation", None) is not Path or not isinstance(value, str):
        return
    if value == "":
        raise InputError("an empty name (it would mean the current directory); name a "
                         "file or directory", field=option)
    from topicslab._paths import not_utf8_name

    problem = not_utf8_name(value, option)
    if problem is not None:
        raise problem from None
    from topicslab._paths import unsearchable, unsearchable_error

    blocked = unsearchable(value)
    if blocked is not None:
        # (an input in such a directory was "dd/pop.parquet, field '--sets': no such file",
        # and a model directory readable but not searchable "dd/model/stages.json:
        # permission denied", a file that is not there)
        raise unsearchable_error(blocked, value, option, "read or written")
    if _is_special_file(value):
        # a pipe would block the command forever (reading it waits for a writer,
        # writing it for a reader); a device is no file to read or replace
        raise InputError("is a pipe, socket or device, not a file; give a regular file "
                         "or directory", file=value, field=option)
    from topicslab._paths import refuse_relative_without_cwd, typed_paths

    refuse_relative_without_cwd(value, option)  # (an input's too, before any is read)
    typed_paths[option] = value  # (as typed: Path drops a trailing '/')


def given(name: str) -> bool:
    """Whether the running command's parameter ``name`` was given (on the command line or
    from the environment), not left at its default: an option that does not apply to the
    mode chosen is refused only when the user actually typed it."""
    from typer._click.core import ParameterSource
    from typer._click.globals import get_current_context

    ctx = get_current_context(silent=True)
    if ctx is None:
        return False
    return ctx.get_parameter_source(name) in (ParameterSource.COMMANDLINE,
                                              ParameterSource.ENVIRONMENT)


def _is_special_file(name: str) -> bool:
    import stat

    try:
        mode = os.stat(name).st_mode
    except (OSError, ValueError):
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def _file_system_problem(exc: Exception) -> str | None:
    """The line for an ``OSError`` that the user's files or disk caused, not the program: a
    file or directory this user may not read (a release directory without search
    permission, an unreadable ``q_within.json``: "PermissionError", exit code 1), and a full
    disk or quota (the writers named no file; ``topicslab._atomic`` names the output it was
    writing). ``None`` for any other error."""
    if not isinstance(exc, OSError):
        return None
    name = os.fsdecode(exc.filename) if exc.filename is not None else None
    if exc.errno in (errno.EACCES, errno.EPERM) and name is not None:
        return (f"{name}: permission denied: this user may not read (or write) it; change "
                "its permissions (a directory needs read and search, r-x) or choose another "
                "location")
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        full = ("no space left on the device" if exc.errno == errno.ENOSPC
                else "disk quota exceeded")
        if name is None:  # the standard output (every file goes through _atomic)
            # (``convert a.parquet b.parquet > /dev/full`` said "no space left on the
            # device" beside the complete b.parquet it had written, naming neither)
            return (f"the standard output: {full}, so the results shown there are cut short "
                    f"({_what_was_kept()}); free some space or send the output elsewhere")
        return (f"{name}: {full}, so it was not written ({_left_behind()}); free some space "
                "or choose another location")
    if exc.errno in (errno.EMFILE, errno.ENFILE):
        # the open-file limit (ulimit -n) or the system's table: "OSError: [Errno 24] Too
        # many open files: '.../encodings/cp437.py'", exit code 1, the user's limit
        return (f"too many open files: {_open_file_limit()}; raise the limit (ulimit -n 1024) "
                "and run the command again")
    if exc.errno == errno.EFBIG:
        # the file-size limit this process runs under (ulimit -f) or the file system's
        # largest file: "OSError: [Errno 27] Error writing bytes to file", exit code 1
        limit = ("larger than the largest file allowed (the file-size limit, ulimit -f, or "
                 "the file system's)")
        if name is None:  # the standard output, or a library's own file (numba's cache)
            return (f"a file written (the standard output, or a cache) grew {limit} "
                    f"({_what_was_kept()}); raise the limit or send the output elsewhere")
        return (f"{name}: {limit}, so it was not written ({_left_behind()}); raise the "
                "limit or choose another location")
    if name is not None:
        # (a rename's destination, the output, rather than its hidden temporary)
        final = exc.filename2 if exc.filename2 is not None else exc.filename
        return _location_changed(exc.errno, os.fsdecode(final))
    return None


def _left_behind() -> str:
    """What a command that failed writing leaves on disk, for the line of a full disk: what
    an interruption would keep (a fit's checkpoints, a run's finished stages, an output
    written before the failing one). The line said "nothing half-written is left" beside a
    fit's 80 KB checkpoint on the full disk (kept for --resume, which it did not mention)
    and a run's finished stages."""
    from topicslab._atomic import completed_writes

    note = _state["kept"]
    if not (note() if callable(note) else note) and not completed_writes():
        return "nothing half-written is left"
    return _what_was_kept()


def _open_file_limit() -> str:
    """The open-file limit this process runs under, for the line of EMFILE."""
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        if soft != resource.RLIM_INFINITY:
            return (f"this process may hold {soft:,} at once (ulimit -n), or the system's "
                    "limit was reached")
    except (ImportError, OSError, ValueError):
        pass
    return "the limit of this process (ulimit -n) or of the system was reached"


def _location_changed(code: int | None, name: str) -> str | None:
    """The line for a location changed during the work (checked before it): the output's
    directory removed or moved (``FileNotFoundError`` on the closing rename), a file put
    where one of its directories was (``NotADirectoryError``, ``FileExistsError`` of the
    directory's creation): each was "error: FileNotFoundError: ..." and exit code 1, though
    the user's doing. ``None`` for a missing file in a directory that exists (a bug's
    missing file keeps its exit code 1)."""
    path = Path(name)
    if code == errno.ENOENT:
        gone = next((p for p in path.parents if not p.exists()), None)
        if gone is None:
            return None
        while not gone.parent.exists():
            gone = gone.parent
        return (f"{name}: directory {gone} no longer exists: it was removed or moved while "
                "the command ran (nothing half-written is left); run the command again")
    if code in (errno.ENOTDIR, errno.EEXIST):
        blocker = next((p for p in (path, *path.parents)
                        if p.exists() and not p.is_dir()), None)
        if blocker is None:
            return None
        what = "is" if blocker == path else f"{blocker} is"
        return (f"{name}: {what} a file where a directory was expected (was it replaced "
                "while the command ran?); remove it or choose another location, and run the "
                "command again")
    return None


def _reader_may_leave(format_help: Callable[..., Any]) -> Callable[..., Any]:
    """``format_help`` (Typer's, which prints the help on its own rich console), ending
    quietly when the help's reader goes away: rich's console then raised ``SystemExit(1)``,
    so ``topicslab --help | head -1`` (``topicslab stats --help | head``, ``topicslab``
    alone) ended with exit code 1, where a command's output cut short the same way ends as
    the command would have. Rich has sent what is left to the null device by then."""
    @functools.wraps(format_help)
    def quiet(self: Any, ctx: Any, formatter: Any) -> Any:
        try:
            return format_help(self, ctx, formatter)
        except SystemExit as exc:
            if exc.code != 1:
                raise
            return None
    return quiet


TyperCommand.format_help = _reader_may_leave(TyperCommand.format_help)  # type: ignore[method-assign]


class OneLineErrors(TyperGroup):
    """The ``topicslab`` group: turns every failure into one line and an exit code."""

    format_help = _reader_may_leave(TyperGroup.format_help)

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True,
             windows_expand_args: bool = True, **extra: Any) -> Any:
        extra["windows_expand_args"] = windows_expand_args
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        _state.update(debug=False, command=None, kept=None, interrupted_said=False)
        sys.exit(self._run(args, prog_name, complete_var, **extra))

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        name, command, rest = super().resolve_command(ctx, args)
        if command is not None and not ctx.resilient_parsing:
            _check_given_once(command, name, rest, ctx)
            if not any(a == "--help" for a in rest):
                _check_working_directory()
        return name, command, rest

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt as exc:
            raise _Interrupted(exc) from exc

    def _run(self, args: Sequence[str] | None, prog_name: str | None,
             complete_var: str | None, **extra: Any) -> int:
        from topicslab._atomic import clear_interrupt, forget_completed_writes, interrupt_seen

        forget_completed_writes()
        clear_interrupt()
        # a umask that takes the owner's own permissions (0277, 0777) made every output one
        # this user could not write into or read back: each writer failed at its temporary
        # ("PermissionError: Failed to open local file", exit 1), and a run could not have
        # read its own release. Only the group's and others' bits of the umask are kept
        mask = os.umask(0o022)
        os.umask(mask & 0o077)
        try:
            with warnings.catch_warnings():
                if not _debugging():  # library warnings would add lines to the one-line contract
                    warnings.simplefilter("ignore")
                code = self._run_quietly(args, prog_name, complete_var, **extra)
            if code == 0 and interrupt_seen():
                # a Ctrl-C whose KeyboardInterrupt a library swallowed after the last
                # checkpoint: the outputs are complete, but the user asked to stop
                self._print_interrupted()
                return EXIT_INTERRUPTED
            return code
        finally:
            clear_interrupt()
            os.umask(mask)

    def _run_quietly(self, args: Sequence[str] | None, prog_name: str | None,
                     complete_var: str | None, **extra: Any) -> int:
        from typer._click.exceptions import ClickException, NoArgsIsHelpError
        from typer.exceptions import Abort

        from topicslab._atomic import interrupt_seen
        from topicslab.errors import TopicsLabError

        try:
            rv = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except NoArgsIsHelpError as exc:
            out.print(exc.format_message(), highlight=False, markup=False)
            return EXIT_BAD_INPUT
        except ClickException as exc:
            print_error(_not_a_number(exc, sys.argv[1:] if args is None else list(args))
                        or _usage_message(exc))
            return exc.exit_code
        except TopicsLabError as exc:
            if _debugging():  # the traceback, then the line and the exit code of bad input
                _print_traceback()
            if interrupt_seen():  # see below: a swallowed Ctrl-C, then a reader's wrapping
                self._print_interrupted(exc)
                return EXIT_INTERRUPTED
            print_error(str(self._on_option(exc)))
            return EXIT_BAD_INPUT
        except _Interrupted as exc:
            if _debugging():
                raise exc.original from None
            self._print_interrupted(exc)
            return EXIT_INTERRUPTED
        except (Abort, KeyboardInterrupt) as exc:  # an aborted prompt (end of input), or
            # Ctrl-C that reached here unwrapped
            self._print_interrupted(exc)
            return EXIT_INTERRUPTED
        except UnicodeEncodeError as exc:
            if _debugging():
                _print_traceback()
            print_error(f"the output cannot be shown in the terminal's encoding "
                        f"({exc.encoding}); set PYTHONIOENCODING=utf-8 (or a UTF-8 locale)")
            return EXIT_BAD_INPUT
        except MemoryError:
            if _debugging():
                raise
            print_error(_out_of_memory())
            return EXIT_FAILURE
        except Exception as exc:
            bad_input = ((isinstance(exc, OSError) and exc.errno == errno.ENAMETOOLONG)
                         or _file_system_problem(exc) is not None)
            if _debugging() and not bad_input:
                raise
            if _debugging():  # a refusal still exits 2 under --debug (it was 1)
                _print_traceback()
            if interrupt_seen():
                # a Ctrl-C that a library turned into another error (pyarrow's argument
                # packing raised "TypeError: Got unexpected argument type <class 'str'> for
                # compute function", exit code 1)
                self._print_interrupted(exc)
                return EXIT_INTERRUPTED
            if isinstance(exc, OSError) and exc.errno == errno.ENAMETOOLONG:
                # a path the user gave that no file system takes (an input directory of
                # 5,000 bytes was "OSError: File name too long", exit code 1); output paths
                # are refused before any work by topicslab._paths
                name = os.fsdecode(exc.filename or "")
                print_error(f"{name[:40]}...: the path is {len(os.fsencode(name)):,} bytes "
                            "long, longer than the file system takes; choose a shorter path")
                return EXIT_BAD_INPUT
            problem = _file_system_problem(exc)
            if problem is not None:
                print_error(problem)
                return EXIT_BAD_INPUT
            from topicslab._main import library_memory_error

            problem = library_memory_error(exc)  # (a library imported late, as pyarrow)
            if problem is not None:
                print_error(problem)
                return EXIT_FAILURE
            if isinstance(exc, OSError) and exc.errno == errno.ENOMEM:
                # the system's MemoryError (a mapping refused while a file is read, which
                # the readers now leave to this line rather than call the file invalid)
                print_error(_out_of_memory())
                return EXIT_FAILURE
            print_error(f"{type(exc).__name__}: {' '.join(str(exc).split())} "
                        "(rerun with topicslab --debug for the traceback)")
            return EXIT_FAILURE
        # standalone_mode=False returns the code of an explicit Exit (--help: 0)
        code = rv if isinstance(rv, int) and not isinstance(rv, bool) else 0
        if code == EXIT_INTERRUPTED and not _state.get("interrupted_said"):
            # a Ctrl-C while Typer parsed the arguments (it imports pydantic then), before
            # the command began: Typer turns it into Exit(130), which ended with no line
            self._print_interrupted()
        return code

    @staticmethod
    def _print_interrupted(exc: BaseException | None = None) -> None:
        """The one ``interrupted:`` line of the interruption ``exc`` (none: a Ctrl-C seen
        after the command's end)."""
        from topicslab._progress import close_bars

        close_bars()
        _state["interrupted_said"] = True  # (a second Ctrl-C while exiting: no second line)
        try:
            err.print(f"[yellow]interrupted:[/] {escape(_interruption())}",
                      highlight=False, soft_wrap=True)
        except (OSError, ValueError):  # standard error full or closed: the exit code stays
            pass
        if not _debugging() and _state.get("ends_process"):
            # the line is all there is to say: a library object's destructor failing while
            # the interrupted work unwinds or Python shuts down (an interrupted numba
            # compilation leaves llvmlite objects half built) would add "Exception ignored
            # in ..." and a traceback; only when the process ends with the command (``main``)
            sys.unraisablehook = lambda _unraisable: None
            # and destroying those objects crashed the process (SIGSEGV, exit status -11)
            # after the line, once the interrupted frames were freed: they are kept until
            # the process leaves with os._exit
            if exc is not None:
                _INTERRUPTIONS.append(exc)

    def _on_option(self, exc: Exception) -> Exception:
        """The library names a bad argument by its Python name (``probe_sites``); the user
        typed an option (``--probe-sites``): name that. Errors located in a file's row keep
        their field, which is a column of the file, and so does a ``FileFieldError``."""
        from topicslab.errors import FileFieldError, InputError

        if not isinstance(exc, InputError) or not exc.field or exc.row is not None:
            return exc
        if isinstance(exc, FileFieldError):
            return exc  # a field of the file (model.json's 'weeks'), not an option
        command = self.commands.get(_state["command"] or "")
        name = exc.field.lstrip("-").replace("-", "_")
        for param in command.params if command is not None else []:
            long_options = [o for o in param.opts if o.startswith("--")]
            if param.name == name and long_options:
                return InputError(exc.message, file=exc.file, field=long_options[0])
        return exc


app = typer.Typer(
    name="topicslab",
    help="Simulate, release and attack interest-based advertising APIs (Chrome's Topics API).",
    cls=OneLineErrors,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _show_version(value: bool) -> None:
    """``--version``: was "No such option: --version", and a bug report could not say which
    topicslab it came from."""
    if value:
        from topicslab import __version__

        echo_data(f"topicslab {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    ctx: typer.Context,
    debug: bool = typer.Option(False, "--debug",
                               help="Show the traceback of a failure (else one line)."),
    version: bool = typer.Option(False, "--version", callback=_show_version, is_eager=True,
                                 help="Show the version and exit."),
) -> None:
    """Simulate, release and attack interest-based advertising APIs (Chrome's Topics API)."""
    _state.update(debug=debug, command=ctx.invoked_subcommand)


def echo_data(text: str) -> None:
    """``text`` and a line break on standard output (JSON printed for a program to read); a
    reader gone away (broken pipe) is the console's case: nothing more is shown there, and
    the command goes on (``qif --json --plot F | head`` wrote no figure, exit code 1)."""
    try:
        sys.stdout.flush()  # (what the command printed before)
        _write_all(text + "\n")
    except BrokenPipeError:
        reader_gone(sys.stdout)
    except (AttributeError, ValueError):  # started with standard output closed (>&-)
        pass


def _write_all(text: str) -> None:
    """``text`` on standard output, every byte or an ``OSError``. Python's buffered stream
    took a short write as complete: past the file-size limit (``qif --json > F`` under
    ulimit -f) the JSON was cut at the limit, silently, with exit code 0; the descriptor's
    own writes go on until the error (EFBIG) that says why."""
    try:
        fd = sys.stdout.fileno()
    except (OSError, ValueError, AttributeError):  # not a file (a test's capture): as before
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    data = memoryview(text.encode(sys.stdout.encoding or "utf-8"))
    while data:
        data = data[os.write(fd, data):]


#: stdout for results, stderr for progress and diagnostics (a reader that stops reading, as
#: ``| head`` does, does not stop the command: ``topicslab._progress.QuietConsole``)
out = QuietConsole()
err = QuietConsole(stderr=True)


def parse_epsilon(text: str, option: str = "--epsilon") -> float:
    """Accept a float or the papers' symbolic budgets ``ln3``/``ln(3)``/``ln2``; what cannot
    be read is bad input naming ``option`` (its range is the library's to check)."""
    import re

    from topicslab.errors import InputError

    # the spaces of ``ln 3`` or ``ln (3)`` go, not those inside a number: ``--epsilon '1 0'``
    # was read as 10 (and ``ln 1 0`` as ln 10), a budget ten times the one typed
    split_number = re.search(r"[0-9.e+-]\s+[0-9.e+-]", text.lower()) is not None
    t = text.strip().lower().replace(" ", "")
    # ln3 or ln(3), the brackets balanced (``ln(3`` and ``ln3)`` were read as ln 3)
    m = re.fullmatch(r"ln(?:\(([^()]*)\)|([^()]*))", t)
    try:
        if (t.startswith("ln") and m is None) or not t.isascii() or split_number:
            raise ValueError(t)  # ('３' was read as 3)
        return math.log(float(m.group(1) or m.group(2) or "")) if m else float(t)
    except ValueError:
        raise InputError(f"cannot read epsilon {text!r}: use a number or lnX (e.g. ln3)",
                         field=option) from None
