"""Progress bars for long work (rich), silent unless asked for.

Library functions take ``progress: bool``; the CLI turns it on. Bars go to stderr so that
stdout stays parseable (``--json``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Protocol

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)


class Advance(Protocol):
    def __call__(self, n: float = 1) -> None: ...


@contextlib.contextmanager
def task(description: str, total: float | None, enabled: bool = True) -> Iterator[Advance]:
    """A progress bar; yields ``advance(n)``. No output when ``enabled`` is false."""
    if not enabled:
        yield lambda n=1: None
        return
    console = Console(stderr=True)
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    ) as bar:
        tid = bar.add_task(description, total=total)
        yield lambda n=1: bar.advance(tid, n)
