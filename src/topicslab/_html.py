"""Shared HTML table helper of the report sections (QIF, disclosure, release report), whose
cells show numbers by the one rule of :func:`topicslab._numbers.format_number`."""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from topicslab._numbers import format_number


def cell(x: Any) -> str:
    """A value as safe HTML text: :func:`~topicslab._numbers.format_number`, escaped."""
    return html.escape(format_number(x))


def table(caption: str, header: Sequence[str], rows: Iterable[Sequence[Any]], *,
          cell: Callable[[Any], str] = cell,
          cls: str | None = None) -> str:
    """An HTML table; ``cell`` turns each value into safe HTML text (by default numbers by
    the one rule, and everything escaped)."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{cell(v)}</td>" for v in row) + "</tr>"
                   for row in rows)
    c = f' class="{cls}"' if cls else ""
    return (f"<table{c}><caption>{html.escape(caption)}</caption>"
            f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
