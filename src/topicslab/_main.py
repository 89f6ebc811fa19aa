"""The ``topicslab`` console script's entry point: Ctrl-C while starting is one line too.

Importing the command-line interface (numpy, pyarrow, Typer) and building the Typer
application take about a second before the application's own Ctrl-C handling is in place; a
Ctrl-C in that window would print a Python traceback. This module imports nothing heavy, so it
can catch that ``KeyboardInterrupt`` and end as every interrupted command does: one
``interrupted:`` line and exit code 130 (nothing has been written yet).
"""

from __future__ import annotations

import os
import sys

EXIT_INTERRUPTED = 130


def _debugging() -> bool:
    return "--debug" in sys.argv[1:] or os.environ.get("TOPICSLAB_DEBUG", "") not in ("", "0")


def _environment_error() -> str | None:
    """Environment variables the libraries would fail on half-way, with a traceback."""
    threads = os.environ.get("NUMBA_NUM_THREADS")
    if threads is not None and not (threads.strip().isdigit() and int(threads) > 0):
        return (f"environment variable NUMBA_NUM_THREADS={threads!r} must be a positive "
                "integer; unset it or fix it")
    return None


def main() -> None:
    """Run ``topicslab.cli.main``; a Ctrl-C before it takes over ends with one line."""
    problem = _environment_error()
    if problem is not None:
        sys.stderr.write(f"error: {problem}\n")
        raise SystemExit(2)
    try:
        from topicslab.cli import main as cli_main

        cli_main()
    except KeyboardInterrupt:
        if _debugging():
            raise
        sys.stderr.write("interrupted: topicslab stopped while starting; nothing written\n")
        sys.stderr.flush()
        raise SystemExit(EXIT_INTERRUPTED) from None


if __name__ == "__main__":
    main()
