"""Command-line interface: ``topicslab <command>``; see ``topicslab --help``.

Each command module registers itself on the shared Typer ``app``, whose group class
(``_app.OneLineErrors``) turns every failure into one line: bad input (a refused option, the
library's ``TopicsLabError``) exits with code 2, anything else with 1, never with a traceback
unless ``topicslab --debug`` asks for it.
"""

from __future__ import annotations

from topicslab.cli import attack_train as _attack_train  # noqa: F401  (registers commands)
from topicslab.cli import convert as _convert  # noqa: F401
from topicslab.cli import disclosure as _disclosure  # noqa: F401
from topicslab.cli import ingest as _ingest  # noqa: F401
from topicslab.cli import model as _model  # noqa: F401
from topicslab.cli import population as _population  # noqa: F401
from topicslab.cli import qif as _qif  # noqa: F401
from topicslab.cli import reid as _reid  # noqa: F401
from topicslab.cli import run as _run  # noqa: F401
from topicslab.cli import stats as _stats  # noqa: F401
from topicslab.cli._app import app

__all__ = ["app", "main"]


def main() -> None:
    """Entry point of the ``topicslab`` console script (the group prints failures)."""
    from topicslab._atomic import latch_interrupts
    from topicslab.cli._app import _state

    _state["ends_process"] = True  # the process ends with the command
    latch_interrupts()  # a Ctrl-C swallowed inside a library still stops the command
    app(prog_name="topicslab")
