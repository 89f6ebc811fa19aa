"""Progress bars for long work (rich), silent unless asked for.

Library functions take ``progress: bool``; the CLI turns it on. Bars go to stderr so that
stdout stays parseable (``--json``).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import Any, Protocol

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)


def reader_gone(stream: Any) -> None:
    """The reader of ``stream`` went away (``topicslab reid ... | head``): what is still
    printed there goes to the null device, and the command goes on to write its files."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # closed or None
        pass


class QuietConsole(Console):
    """rich's console, which on a broken pipe ended the process at once with exit code 1
    and no line (its default ``on_broken_pipe``): ``reid --json R --figure F | head`` (or
    ``2>&1 | head``, through a progress bar) then wrote neither file, as the table is printed
    before them. A reader that stops reading does not stop the work: the console goes quiet
    and the command ends as it would have."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        reader_gone(sys.stderr if self.stderr else sys.stdout)


#: the bars on screen: a bar opened inside a generator stays open while the generator is
#: suspended, so an error or Ctrl-C raised in its consumer would print its line *above* the
#: bar's last frame (which rich draws when the generator is finally closed); ``close_bars``
#: lets the CLI end them first
_open_bars: list[Progress] = []


def close_bars() -> None:
    """Stop every bar still on screen, on the way to an error's or an interruption's line:
    cleared, not drawn (its last frame above the line made the error two lines)."""
    while _open_bars:
        _clear(_open_bars.pop())


def _clear(bar: Progress) -> None:
    """Stop ``bar`` without its last frame (or, off a terminal, the empty line that rich
    prints after the bar): what follows is an error's or an interruption's one line."""
    bar.live.transient = True
    bar.live.stop()
    bar.disable = True  # (Progress.stop would add the empty line; the bar is stopped)


class Advance(Protocol):
    def __call__(self, n: float = 1, info: str | None = None) -> None: ...


@contextlib.contextmanager
def task(description: str, total: float | None, enabled: bool = True) -> Iterator[Advance]:
    """A progress bar; yields ``advance(n, info=None)`` (``info``: a short status shown after
    the bar, e.g. a loss). No output when ``enabled`` is false."""
    from topicslab._atomic import raise_if_interrupted

    if not enabled:
        def quiet(n: float = 1, info: str | None = None) -> None:
            raise_if_interrupted()  # each step is a checkpoint for a swallowed Ctrl-C

        yield quiet
        return
    console = QuietConsole(stderr=True)
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        TextColumn("{task.fields[info]}"),
        console=console,
        transient=False,
    ) as bar:
        tid = bar.add_task(description, total=total, info="")
        _open_bars.append(bar)

        def advance(n: float = 1, info: str | None = None) -> None:
            raise_if_interrupted()
            if info is None:
                bar.advance(tid, n)
            else:
                bar.update(tid, advance=n, info=info)

        try:
            yield advance
        except BaseException:
            # a refusal found in the middle of the work (a week of more than k topics in the
            # first chunk, a user listed twice found after the pass) or an interruption: the
            # bar is cleared, so that the error's line is the only one (on a file or a pipe
            # the bar's last frame was printed above it)
            _clear(bar)
            raise
        finally:
            if bar in _open_bars:
                _open_bars.remove(bar)
