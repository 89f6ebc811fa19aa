"""Error types: every user-facing failure is one line naming what was wrong and where.

``InputError`` carries the file, row and field of bad input so the CLI can print
``file:row: field: message`` and exit non-zero without a traceback. ``ParameterError`` is the
``InputError`` of a parameter outside its range, raised only by the typed parameter objects
(``topicslab.dp.PrivacyBudget``, ``topicslab.api.Mechanism``, ...), which check themselves
once when they are made.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


class TopicsLabError(Exception):
    """Base class of the errors the CLI reports as one line (no traceback)."""


class UnknownTopicError(TopicsLabError, KeyError):
    """A topic id that is not in the taxonomy in use."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else "unknown topic"


class InputError(TopicsLabError):
    """Malformed input data, located by file, row and field where known."""

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        row: int | None = None,
        field: str | None = None,
    ) -> None:
        self.message = message
        self.file = file
        self.row = row
        self.field = field
        super().__init__(self.__str__())

    def __str__(self) -> str:
        where = []
        if self.file is not None:
            where.append(str(self.file))
        if self.row is not None:
            where.append(f"row {self.row}")
        if self.field is not None:
            where.append(f"field {self.field!r}")
        prefix = ", ".join(where)
        return f"{prefix}: {self.message}" if prefix else self.message

    def located(
        self, *, file: str | None = None, row: int | None = None, field: str | None = None
    ) -> InputError:
        """A copy (of the same class) with missing location parts filled in."""
        cls = type(self)
        copy = cls.__new__(cls)
        copy.__dict__.update(self.__dict__)
        InputError.__init__(
            copy,
            self.message,
            file=self.file if self.file is not None else file,
            row=self.row if self.row is not None else row,
            field=self.field if self.field is not None else field,
        )
        return copy


class FileFieldError(InputError):
    """Bad input whose ``field`` is a field of ``file`` (``model.json``'s ``weeks``), never an
    option of the command that read it, even where an option has the same name."""


class ParameterError(InputError, ValueError):
    """A parameter value outside its range (ε ≤ 0, k above the taxonomy's size, ...).

    Raised by the parameter objects' own checks with ``field`` set to the parameter's name,
    which is also the name of the command's option (``epsilon`` -> ``--epsilon``), so the CLI
    names what the user typed. It is an ``InputError`` (one line, exit code 2) and a
    ``ValueError``, what a Python caller expects of a bad argument value.
    """


@contextlib.contextmanager
def naming_option(option: str, *, file: str | None = None) -> Iterator[None]:
    """An ``InputError`` about a file as a whole (no row, no field) raised inside names the
    option that gave the file (``field=option``); located errors pass as they are. With
    ``file``, only an error about that file: a block that reads two files names each by its
    own option."""
    try:
        yield
    except InputError as exc:
        if exc.row is not None or exc.field is not None:
            raise
        if file is not None and exc.file != file:
            raise
        raise exc.located(field=option) from None
