"""Shared HTML table helper of the report sections (QIF, disclosure, release report), whose
cells show numbers by the one rule of :func:`topicslab._numbers.format_number`."""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from topicslab._numbers import format_number

#: characters a page must not hold as they are: the control characters but tab and the line
#: breaks (C0, DEL, C1), the line and paragraph separators and the bidirectional overrides and
#: isolates. An input named with an escape sequence (``run --sets $'p\x1b[31m.parquet'``)
#: reached report.html raw (an HTML parse error, and the escape sequence itself to a
#: terminal that shows the file), where ``html.escape`` left it
_NOT_TEXT = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e"
                       "\u2066-\u2069]")


def text(value: str) -> str:
    """``value`` as safe HTML text: escaped, and each character of ``_NOT_TEXT`` written as
    Python writes it (``\\x1b``), as the error lines show a name."""
    return html.escape(_NOT_TEXT.sub(
        lambda found: found[0].encode("unicode_escape").decode("ascii"), value))


def cell(x: Any) -> str:
    """A value as safe HTML text: :func:`~topicslab._numbers.format_number`, escaped."""
    return text(format_number(x))


def table(caption: str, header: Sequence[str], rows: Iterable[Sequence[Any]], *,
          cell: Callable[[Any], str] = cell,
          cls: str | None = None) -> str:
    """An HTML table; ``cell`` turns each value into safe HTML text (by default numbers by
    the one rule, and everything escaped)."""
    head = "".join(f"<th>{text(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{cell(v)}</td>" for v in row) + "</tr>"
                   for row in rows)
    c = f' class="{cls}"' if cls else ""
    return (f"<table{c}><caption>{text(caption)}</caption>"
            f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
