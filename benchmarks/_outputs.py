"""The benchmark scripts' output files under the command line's promises (README.md, "Bad
input"): an output is checked before the work starts (a missing directory, a directory under
the name, a wrong extension), written whole, and a refusal is one ``error:`` line with exit
code 2. A ``--json`` or ``--figure`` in a missing directory failed with a traceback after the
work (hours for ``bench_fidelity.py`` at its defaults), and ``open(..., "w")`` left a
half-written file when interrupted. Imported by the scripts as ``_outputs`` (Python puts the
script's directory first on the path)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import NoReturn

from topicslab._atomic import write_bytes_atomic, write_text_atomic
from topicslab._paths import check_output_file
from topicslab.errors import InputError

#: the extensions of each kind of output
SUFFIXES = {"json": (".json",), "png": (".png",)}


def checked(path: str | None, option: str, kind: str) -> str | None:
    """``path`` (``None`` when not asked for), refused now if it cannot be written later."""
    if path is not None:
        check_output_file(path, option, SUFFIXES[kind], kind.upper())
    return path


def write(path: str, data: str | bytes) -> None:
    """``data`` into ``path``, whole or not at all."""
    if isinstance(data, bytes):
        write_bytes_atomic(path, data)
    else:
        write_text_atomic(path, data)


def refuse(line: str) -> NoReturn:
    """End the script as a refused input: one ``error:`` line, exit code 2."""
    sys.stderr.write(f"error: {line}\n")
    raise SystemExit(2)


def run(main: Callable[[], None]) -> None:
    """``main()``; a refused input is one ``error:`` line and exit code 2, no traceback."""
    try:
        main()
    except InputError as exc:
        refuse(str(exc))
