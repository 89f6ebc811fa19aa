"""Shared HTML table helper of the report sections (QIF, disclosure, release report)."""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable, Sequence
from typing import Any


def table(caption: str, header: Sequence[str], rows: Iterable[Sequence[Any]], *,
          cell: Callable[[Any], str] = lambda v: html.escape(str(v)),
          cls: str | None = None) -> str:
    """An HTML table; ``cell`` turns each value into safe HTML text (escaped by default)."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{cell(v)}</td>" for v in row) + "</tr>"
                   for row in rows)
    c = f' class="{cls}"' if cls else ""
    return (f"<table{c}><caption>{html.escape(caption)}</caption>"
            f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
