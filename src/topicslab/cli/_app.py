"""The ``topicslab`` Typer application and its shared helpers.

Every command lives in its own module of this package, registers itself on ``app`` and
delegates to a documented library function; this package only parses options and prints.
"""

from __future__ import annotations

import math

import typer
from rich.console import Console

app = typer.Typer(
    name="topicslab",
    help="Simulate, release and attack interest-based advertising APIs (Chrome's Topics API).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

#: stdout for results, stderr for progress and diagnostics.
out = Console()
err = Console(stderr=True)


def parse_epsilon(text: str) -> float:
    """Accept a float or the papers' symbolic budgets ``ln3``/``ln(3)``/``ln2``."""
    t = text.strip().lower().replace(" ", "")
    if t.startswith("ln"):
        arg = t[2:].strip("()")
        try:
            return math.log(float(arg))
        except ValueError:
            raise typer.BadParameter(f"cannot read epsilon {text!r}") from None
    try:
        return float(t)
    except ValueError:
        raise typer.BadParameter(f"cannot read epsilon {text!r}") from None
