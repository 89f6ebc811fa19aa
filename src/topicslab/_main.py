"""The ``topicslab`` console script's entry point: Ctrl-C while starting is one line too.

Importing the command-line interface (numpy, pyarrow, Typer) and building the Typer
application take about a second before the application's own Ctrl-C handling is in place; a
Ctrl-C in that window would print a Python traceback. This module imports nothing heavy, so it
can catch that ``KeyboardInterrupt`` and end as every interrupted command does: one
``interrupted:`` line and exit code 130 (nothing has been written yet).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import re
import sys
import warnings
from typing import Any

EXIT_INTERRUPTED = 130


#: TOPICSLAB_DEBUG values, case and surrounding spaces ignored (any value but "" and "0" used
#: to turn tracebacks on, so TOPICSLAB_DEBUG=false did); others are refused
_DEBUG_OFF = ("", "0", "false", "no", "off")
_DEBUG_ON = ("1", "true", "yes", "on")


def debug_environment() -> bool:
    """Whether TOPICSLAB_DEBUG asks for tracebacks (the CLI's --debug does too)."""
    return os.environ.get("TOPICSLAB_DEBUG", "").strip().lower() not in _DEBUG_OFF


def _debugging() -> bool:
    return "--debug" in sys.argv[1:] or debug_environment()


#: the values numba's NUMBA_THREADING_LAYER takes
_THREADING_LAYERS = ("default", "safe", "forksafe", "threadsafe", "tbb", "omp", "workqueue")


def _unparsed_environment(caught: list[warnings.WarningMessage]) -> str | None:
    """numba reads its NUMBA_* variables when it is imported and, failing to parse one,
    warns with the parser's traceback (NUMBA_OPT=abc, NUMBA_DISABLE_JIT=' '): that
    variable, as the one line; ``None`` when every variable was read."""
    for w in caught:
        m = re.match(r"Environment variable '(\w+)' is defined but its associated value "
                     r"'(.*)' could not be parsed", str(w.message), re.S)
        if m:
            why = str(w.message).strip().splitlines()[-1]
            return (f"environment variable {m.group(1)}={m.group(2)!r} cannot be read "
                    f"({why}); unset it or fix it")
    return None


def _environment_error() -> str | None:
    """Environment variables the libraries would fail on half-way, with a traceback (or
    read the wrong way round)."""
    debug = os.environ.get("TOPICSLAB_DEBUG")
    if debug is not None and debug.strip().lower() not in _DEBUG_OFF + _DEBUG_ON:
        return (f"environment variable TOPICSLAB_DEBUG={debug!r} must be 1 (show tracebacks) "
                "or 0; unset it or fix it")
    threads = os.environ.get("NUMBA_NUM_THREADS")
    # isdecimal, not isdigit: '²' is a digit that int() cannot read (a traceback here)
    if threads is not None and not (threads.strip().isdecimal() and int(threads) > 0):
        return (f"environment variable NUMBA_NUM_THREADS={threads!r} must be a positive "
                "integer; unset it or fix it")
    if threads is not None and int(threads) > (most := _most_threads()):
        # numba starts them all at the first parallel kernel: past what the system lets a
        # process start, libgomp's "Thread creation failed" (exit 1) or a segmentation fault
        # with no line at all
        return (f"environment variable NUMBA_NUM_THREADS={threads!r} asks for more threads "
                f"than this system lets a process start ({most:,}: the least of ulimit -u, "
                "kernel.threads-max, half of vm.max_map_count and the stacks (ulimit -s) "
                "that half of ulimit -v holds); unset it or give at most the CPUs' count")
    layer = os.environ.get("NUMBA_THREADING_LAYER")
    if layer is not None and layer not in _THREADING_LAYERS:
        # numba refuses it only at the first parallel kernel, as an unexpected failure
        return (f"environment variable NUMBA_THREADING_LAYER={layer!r} must be one of "
                f"{', '.join(_THREADING_LAYERS)}; unset it or fix it")
    encoding = getattr(sys.stdout, "encoding", None)
    if encoding:
        # the summaries and tables (×, →) failed to print only once the work was done and
        # the outputs written or replaced: exit 2 after the command had done what it was asked.
        # Through the stream's own error handler: the C locale's surrogateescape (LC_ALL=C
        # with UTF-8 mode off) fails on them as strict does, and was not checked
        try:
            "×→".encode(encoding, getattr(sys.stdout, "errors", None) or "strict")
        except (UnicodeEncodeError, LookupError):
            return (f"the output cannot be shown in the terminal's encoding ({encoding}); set "
                    "PYTHONIOENCODING=utf-8 (or a UTF-8 locale)")
    omp = os.environ.get("OMP_NUM_THREADS")
    # libgomp (loaded by numba's and torch's kernels) printed "libgomp: Invalid value for
    # environment variable OMP_NUM_THREADS" above the command's output and went on with its
    # default: a comma list of positive integers, as libgomp reads it
    if omp is not None and not all(n.strip().isdecimal() and int(n) > 0
                                   for n in omp.split(",")):
        return (f"environment variable OMP_NUM_THREADS={omp!r} must be a positive integer "
                "(or a comma list of them); unset it or fix it")
    if (problem := _openmp_error()) is not None:
        return problem
    for name in ("NUMBA_DISABLE_JIT", "NUMBA_BOUNDSCHECK"):
        # numba reads these as integers and, failing, prints a warning with a traceback
        value = os.environ.get(name)
        if value is not None and value.strip() != "" and not value.strip().isdecimal():
            return (f"environment variable {name}={value!r} must be 0 or 1; unset it or fix "
                    "it")
    return None


def _most_threads() -> int:
    """The most threads this process could start: a thread takes a process slot (ulimit -u,
    kernel.threads-max), two memory mappings (vm.max_map_count) and its stack (ulimit -s) of
    the address space (ulimit -v, of which the libraries take about half), whichever runs
    out first (2**31 when none can be read)."""
    limits = [2**31]
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_NPROC)[0]
        if soft != resource.RLIM_INFINITY and soft > 0:
            limits.append(soft)
        # NUMBA_NUM_THREADS=600 under ulimit -v 6000000 (6 GB; 8 MB stacks): "libgomp: Thread
        # creation failed: Resource temporarily unavailable", exit code 1, at the first kernel
        space = resource.getrlimit(resource.RLIMIT_AS)[0]
        stack = resource.getrlimit(resource.RLIMIT_STACK)[0]
        if stack == resource.RLIM_INFINITY or stack <= 0:
            stack = 8 << 20
        if space != resource.RLIM_INFINITY and space > 0:
            limits.append(space // 2 // stack)
    except (ImportError, OSError, ValueError, AttributeError):
        pass
    for name, share in (("kernel/threads-max", 1), ("vm/max_map_count", 2)):
        try:
            with open(f"/proc/sys/{name}", encoding="ascii") as f:
                limits.append(int(f.read().strip()) // share)
        except (OSError, ValueError):
            pass
    return max(1, min(limits))


#: the variables libgomp (OpenMP, loaded by numba's and torch's kernels) reads when it loads
#: (OMP_NUM_THREADS is checked on its own)
_OPENMP_PREFIXES = ("OMP_", "GOMP_")

#: how long libgomp may take to load and read them: milliseconds when it can (a fresh
#: interpreter loading it took 0.05 s on a loaded 2-core machine, 100 times less), and a
#: refused variable costs the user this wait
_OPENMP_SECONDS = 5


def _libgomp() -> str | None:
    """The OpenMP runtime the kernels load: torch's own copy, else the system's."""
    import glob
    import importlib.util

    spec = importlib.util.find_spec("torch")
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        found = sorted(glob.glob(os.path.join(folder, "lib", "libgomp*.so*")))
        if found:
            return found[0]
    import ctypes.util

    return ctypes.util.find_library("gomp")


def _openmp_error() -> str | None:
    """OpenMP variables libgomp cannot read (OMP_PROC_BIND=xyz, OMP_SCHEDULE=bogus,
    OMP_STACKSIZE=abc, ...): libgomp printed "libgomp: Invalid value for environment
    variable ..." above the command's output and went on with its default, as it did for
    OMP_NUM_THREADS. Its own grammar decides: the runtime is loaded in a separate process
    (only when such a variable is set) and what it says is the line."""
    names = sorted(n for n in os.environ
                   if n.startswith(_OPENMP_PREFIXES) and n != "OMP_NUM_THREADS")
    if not names:
        return None
    library = _libgomp()
    if library is None:
        return None
    import subprocess

    set_here = ", ".join(f"{n}={os.environ[n]!r}" for n in names)
    try:
        said = subprocess.run([sys.executable, "-I", "-S", "-c",
                               "import ctypes, sys; ctypes.CDLL(sys.argv[1])", library],
                              capture_output=True, text=True, timeout=_OPENMP_SECONDS,
                              check=False).stderr
    except subprocess.TimeoutExpired:
        # GOMP_CPU_AFFINITY=x: libgomp loops for ever reading it, and the command hung at its
        # first parallel kernel, deaf to kill (its handler waits for Python, which never runs)
        return (f"environment variable {set_here} keeps OpenMP (libgomp) from loading: it had "
                f"not finished reading it after {_OPENMP_SECONDS} s (a command would hang at "
                "its first parallel kernel); unset it or fix it")
    except (OSError, subprocess.SubprocessError):
        return None
    complaints = [ln.strip() for ln in said.splitlines() if ln.startswith("libgomp:")]
    if not complaints:
        return None
    named = [n for n in names if any(n in c.split() for c in complaints)]
    shown = ", ".join(f"{n}={os.environ[n]!r}" for n in named) if named else set_here
    return (f"environment variable {shown} cannot be read by OpenMP ({'; '.join(complaints)}); "
            "unset it or fix it")


#: the libraries each named threading layer can load (numba's _launch_threads; "default" and
#: "forksafe" fall back on the workqueue, which is always there)
_LAYER_LIBRARIES = {"tbb": ("tbb",), "safe": ("tbb",), "omp": ("omp",),
                    "threadsafe": ("tbb", "omp")}


def _threading_layer_error() -> str | None:
    """NUMBA_THREADING_LAYER naming a layer whose library is not installed here (tbb, safe:
    Intel TBB): numba refused it only at the first parallel kernel, as an unexpected failure
    (exit 1) after the work had begun; ``None`` when the layer can be loaded. Called once
    numba is imported."""
    layer = os.environ.get("NUMBA_THREADING_LAYER")
    if layer not in _LAYER_LIBRARIES:
        return None
    for library in _LAYER_LIBRARIES[layer]:
        try:
            if library == "tbb":
                from numba.np.ufunc.parallel import _check_tbb_version_compatible

                _check_tbb_version_compatible()
            importlib.import_module(f"numba.np.ufunc.{library}pool")
        except ImportError:
            continue
        return None
    needs = " or ".join({"tbb": "Intel TBB (pip install tbb)", "omp": "OpenMP"}[x]
                        for x in _LAYER_LIBRARIES[layer])
    return (f"environment variable NUMBA_THREADING_LAYER={layer!r} needs {needs}, which "
            "cannot be loaded here; unset it or use NUMBA_THREADING_LAYER=workqueue")


def _numba_cache_error(exc: RuntimeError) -> str | None:
    """numba compiles the package's kernels when it is imported and keeps the machine code in
    a cache: beside the sources, else in the user's cache directory (or NUMBA_CACHE_DIR).
    When none is writable -- the package installed read-only and a read-only or missing
    HOME, as in a container run as another user -- the import raised a RuntimeError with a
    traceback: that, as the one line; ``None`` for any other error."""
    m = re.match(r"cannot cache function '.*': no locator available for file '(.*)'",
                 str(exc))
    if m is None:
        return None
    where = os.environ.get("NUMBA_CACHE_DIR")
    tried = f", NUMBA_CACHE_DIR={where!r}" if where else ""
    # numba's user cache follows XDG_CACHE_HOME (the line named ~/.cache whatever it said)
    xdg = os.environ.get("XDG_CACHE_HOME")
    user = f"XDG_CACHE_HOME={xdg!r}" if xdg else "~/.cache"
    return (f"numba has nowhere to keep its compiled code: no writable directory among the "
            f"package's ({os.path.dirname(m.group(1))}), the user cache ({user}){tried}; "
            "set NUMBA_CACHE_DIR to a writable directory (e.g. NUMBA_CACHE_DIR=/tmp/numba)")


def _import_cli() -> tuple[Any, list[warnings.WarningMessage]]:
    """``topicslab.cli.main`` and the warnings of its import (numba's among them)."""
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            from topicslab.cli import main as cli_main
    except RuntimeError as exc:
        problem = _numba_cache_error(exc)
        if problem is None or _debugging():
            raise
        sys.stderr.write(f"error: {problem}\n")
        raise SystemExit(2) from None
    except (ImportError, OSError, MemoryError) as exc:
        problem = library_memory_error(exc)
        if problem is None or _debugging():
            raise
        sys.stderr.write(f"error: {problem}\n")
        raise SystemExit(1) from None
    return cli_main, caught


#: what the dynamic loader and Python say when a library cannot be mapped for want of memory
_NO_MEMORY_TO_LOAD = ("failed to map segment from shared object",
                      "cannot allocate memory in static TLS block")


def library_memory_error(exc: BaseException) -> str | None:
    """The line for a library that could not be loaded for want of memory -- under a memory
    limit (``ulimit -v``, ``ulimit -d``) too small for numba's, Arrow's or torch's shared
    objects: a traceback ending in llvmlite's "OSError: Could not find/load shared object
    file 'libllvmlite.so'", or "ImportError: libarrow.so.2600: failed to map segment from
    shared object" (exit code 1); ``None`` for any other failure."""
    texts: list[str] = []
    seen: BaseException | None = exc
    while seen is not None and len(texts) < 8:
        texts.append(str(seen))
        seen = seen.__cause__ or seen.__context__
    if not (isinstance(exc, MemoryError)
            or any(cue in text for cue in _NO_MEMORY_TO_LOAD for text in texts)):
        return None
    return (f"out of memory loading the libraries{memory_limits()}; raise the limits (or "
            "free memory) and run the command again")


def memory_limits() -> str:
    """" under this process's memory limits (ulimit -v N)" when such a limit is set, for an
    out-of-memory line; "" otherwise."""
    limits = []
    try:
        import resource

        for name, which in (("ulimit -v", resource.RLIMIT_AS), ("ulimit -d",
                                                                 resource.RLIMIT_DATA)):
            soft = resource.getrlimit(which)[0]
            if soft != resource.RLIM_INFINITY:
                limits.append(f"{name} {soft // 1024}")
    except (ImportError, OSError, ValueError):
        pass
    return f" under this process's memory limits ({', '.join(limits)})" if limits else ""


def _late_interrupts(code: object) -> None:
    """A Ctrl-C after the command has ended, while Python shuts down (thread pools, atexit
    handlers): after a success it is one ``interrupted:`` line naming the complete outputs and
    exit code 130, as during the command; after a failure, whose line is printed, it changes
    nothing."""
    import signal

    if _debugging() or not hasattr(signal, "SIGINT"):
        return

    def interrupted(signum: int, frame: object) -> None:
        if code not in (0, None):
            return
        try:
            from topicslab.cli._app import _interruption

            line = _interruption()
        except Exception:  # the line is all that is left to print
            line = "topicslab stopped while exiting; its outputs are complete"
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError, AttributeError):  # None: closed at start
                pass
        os.write(2, f"interrupted: {line}\n".encode(errors="replace"))
        os._exit(EXIT_INTERRUPTED)

    try:
        signal.signal(signal.SIGINT, interrupted)
    except ValueError:  # not the main thread
        pass


def _exit_now(code: object) -> None:
    """End the process once the command has ended: run the exit handlers and flush, then
    leave without the interpreter's finalization, during which Python puts SIGINT back to its
    default (a late Ctrl-C there ended the process with no line) and which frees what the
    command held for nothing."""
    import atexit

    if _debugging() or not (code is None or isinstance(code, int)):
        return
    # the command's line is printed: a library object's destructor failing from here on (an
    # interrupted numba compilation leaves llvmlite objects half built) is not the user's
    # concern, and Python would print it as "Exception ignored in ..." with a traceback
    sys.unraisablehook = lambda _unraisable: None
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):  # None: started with it closed (>&-)
            pass
    os._exit(0 if code is None else code)


#: the narrowest and widest output written: below 80 columns the help's tables cut the
#: option names ("--timestamp-colu…", and at COLUMNS=1 no usage line at all, only the
#: boxes' corners), and a result's numbers are cut the same way; at COLUMNS=100000 every
#: line of a help was padded out to 100,000 columns (3.3 MB for ``reid --help``)
WIDTHS = (80, 1000)


def _usable_width() -> None:
    """Write for a width within ``WIDTHS``: the terminal's, or ``COLUMNS``, brought into
    that range (a line wider than a narrow terminal wraps there, all of it shown)."""
    import shutil

    columns = shutil.get_terminal_size((80, 24)).columns
    lo, hi = WIDTHS
    if not lo <= columns <= hi:
        os.environ["COLUMNS"] = str(min(max(columns, lo), hi))


def main() -> None:
    """Run ``topicslab.cli.main``; a Ctrl-C before it takes over ends with one line."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdecimal() and int(columns) == 0:
        # COLUMNS=0 ("no width known", as Python's shutil.get_terminal_size reads it) made
        # rich print to a console 0 columns wide: nothing at all, not even the error line
        del os.environ["COLUMNS"]
    for name in ("COLUMNS", "LINES"):
        # rich reads a value that isdigit() as int() when its console is made: '²' is a digit
        # int() cannot read, a traceback before any command; rich ignores other text, so this
        # is ignored the same way
        size = os.environ.get(name, "")
        if size.isdigit() and not size.isdecimal():
            del os.environ[name]
    _usable_width()
    problem = _environment_error()
    if problem is not None:
        sys.stderr.write(f"error: {problem}\n")
        raise SystemExit(2)
    try:
        # before the libraries' import (half a second): a kill or a closed terminal in that
        # time ended the process with no line at all (exit status -15), where Ctrl-C said it
        _end_like_ctrl_c()
        cli_main, caught = _import_cli()
        problem = _unparsed_environment(caught) or _threading_layer_error()
        if problem is not None and not _debugging():
            sys.stderr.write(f"error: {problem}\n")
            raise SystemExit(2)
        for w in caught:  # the import's other warnings, through the filters as before
            if _debugging() or _unparsed_environment([w]) is None:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        _forget_earlier_command()
        if not _debugging():
            _quiet_root_logger()
        cli_main()
    except SystemExit as done:  # the command's end: a Ctrl-C while Python shuts down
        _late_interrupts(done.code)
        _exit_now(done.code)
        raise
    except KeyboardInterrupt:
        if _debugging():
            raise
        # said once: a further Ctrl-C while Python shuts down changes nothing (it ended the
        # process by the signal, exit status -2, with no line of its own)
        _late_interrupts(EXIT_INTERRUPTED)
        line = _interrupted_line()
        if line is not None:
            sys.stderr.write(f"interrupted: {line}\n")
        sys.stderr.flush()
        raise SystemExit(EXIT_INTERRUPTED) from None


def _end_like_ctrl_c() -> None:
    """kill (SIGTERM) ended the process on the spot, leaving the atomic writes' hidden
    temporaries behind and saying nothing, and so did closing the terminal or a dropped ssh
    connection (SIGHUP), and Ctrl-\\ (SIGQUIT: a core dump, a half-written hidden temporary
    left): all now end like Ctrl-C (cleaned up, one line). A signal the caller ignores stays
    ignored (``nohup topicslab run ...`` runs on after logout)."""
    import signal

    from topicslab._atomic import ENDING_SIGNALS, cpu_time_up

    for name in ENDING_SIGNALS:
        number = getattr(signal, name, None)
        with contextlib.suppress(ValueError, AttributeError):  # not the main thread
            if number is not None and signal.getsignal(number) == signal.SIG_DFL:
                signal.signal(number, signal.default_int_handler)
    number = getattr(signal, "SIGXCPU", None)
    with contextlib.suppress(ValueError, AttributeError):  # not the main thread
        if number is not None and signal.getsignal(number) == signal.SIG_DFL:
            signal.signal(number, cpu_time_up)


def _quiet_root_logger() -> None:
    """A library's log record on the root logger, unconfigured, printed itself with a
    traceback beside the one line (py4j, under ``stats --engine spark``, logged "ERROR:root:
    KeyboardInterrupt while sending command." and its traceback at Ctrl-C): ``logging``'s
    module functions configure a handler to standard error when the root logger has none,
    so it gets one that drops the records (``--debug`` shows them)."""
    import logging

    root = logging.getLogger()
    if not root.handlers:
        root.addHandler(logging.NullHandler())


def _forget_earlier_command() -> None:
    """No command has begun yet in this call (a command run earlier in this process, as tests
    do, is not the one a Ctrl-C now stops)."""
    state = getattr(sys.modules.get("topicslab.cli._app"), "_state", None)
    if isinstance(state, dict):
        state.update(command=None, kept=None, interrupted_said=False)


def _interrupted_line() -> str | None:
    """What a Ctrl-C that reached ``main`` says: nothing when the command already said it was
    interrupted (a second Ctrl-C while its exit unwound printed "stopped while starting;
    nothing written" under the command's own line); once a command has begun, what it kept
    (a Ctrl-C just after a command had written its outputs said "nothing written"); before,
    that topicslab was starting."""
    app = sys.modules.get("topicslab.cli._app")
    state = getattr(app, "_state", None)
    if isinstance(state, dict) and state.get("interrupted_said"):
        return None
    if isinstance(state, dict) and state.get("command"):
        try:
            return str(app._interruption())  # type: ignore[union-attr]
        except Exception:  # the line is all that is left to print
            pass
    return "topicslab stopped while starting; nothing written"


if __name__ == "__main__":
    main()
