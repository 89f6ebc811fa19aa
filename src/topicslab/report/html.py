"""One self-contained HTML report: inline CSS, PNG figures as ``data:`` URIs, no scripts, no
external resources, so it opens offline and can be mailed as one file.

Public names:
    Section(id, title, html)             one part of the report
    table(caption, header, rows)         an HTML table from rows of values
    figure(png, caption)                 an embedded PNG with its caption
    render(title, verdict, sections)     the whole document
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from topicslab._html import cell
from topicslab._html import table as _table
from topicslab._html import text as _text
from topicslab.report.figures import data_uri

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#1d2330}
main{max-width:1060px;margin:0 auto;padding:24px}
h1{font-size:26px;margin:0 0 4px}h2{font-size:20px;border-bottom:1px solid #dde;padding-bottom:4px;
margin-top:36px}h3{font-size:16px}
.verdict{padding:12px 16px;border-radius:6px;margin:16px 0;font-weight:600}
.pass{background:#e6f4ea;border:1px solid #7cc08a}.fail{background:#fdecea;border:1px solid #e08b83}
.note{background:#fff7e0;border:1px solid #e7c25b;padding:8px 12px;border-radius:6px}
table{border-collapse:collapse;margin:10px 0 18px;font-size:13px}
caption{text-align:left;font-weight:600;padding:4px 0}
th,td{border:1px solid #d5d9e2;padding:3px 8px;text-align:right;vertical-align:top}
th{background:#f2f4f8}td:first-child,th:first-child{text-align:left}
figure{margin:12px 0 22px}figure img{max-width:100%;border:1px solid #eee}
figcaption{font-size:12px;color:#555}nav ol{columns:2}code{background:#f2f4f8;padding:0 3px}
"""


@dataclass(frozen=True)
class Section:
    """A titled part of the report; ``html`` is a trusted fragment built by this package."""

    id: str
    title: str
    html: str


#: a value as safe HTML text, numbers by the one rule (``topicslab._numbers.format_number``)
fmt = cell


def table(caption: str, header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """An HTML table; cells go through :func:`fmt` (strings are escaped)."""
    return _table(caption, header, rows, cell=fmt)


def figure(png: bytes, caption: str) -> str:
    """An embedded PNG figure."""
    cap = _text(caption)
    return (f'<figure><img alt="{cap}" src="{data_uri(png)}"/>'
            f"<figcaption>{cap}</figcaption></figure>")


def paragraph(text: str, cls: str | None = None) -> str:
    """An escaped paragraph (optionally with a CSS class such as ``note``)."""
    c = f' class="{cls}"' if cls else ""
    return f"<p{c}>{_text(text)}</p>"


def render(title: str, subtitle: str, verdict: tuple[bool | None, str],
           sections: Sequence[Section]) -> str:
    """The whole HTML document: header, verdict line, contents, sections."""
    ok, text = verdict
    cls = "note" if ok is None else ("pass" if ok else "fail")
    toc = "".join(f'<li><a href="#{s.id}">{_text(s.title)}</a></li>' for s in sections)
    body = "".join(f'<section id="{s.id}"><h2>{_text(s.title)}</h2>{s.html}</section>'
                   for s in sections)
    return ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"/>"
            f"<title>{_text(title)}</title><style>{_CSS}</style></head><body><main>"
            f"<h1>{_text(title)}</h1><p>{_text(subtitle)}</p>"
            f'<div class="verdict {cls}">{_text(text)}</div>'
            f"<nav><h3>Contents</h3><ol>{toc}</ol></nav>{body}</main></body></html>")


__all__ = ["Section", "figure", "fmt", "paragraph", "render", "table"]
