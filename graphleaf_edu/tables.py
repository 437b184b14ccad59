"""Tables of strings, as aligned plain text (for checked notebook output) or as HTML (for widgets)."""
from __future__ import annotations

import html
import unicodedata
from collections.abc import Iterable, Sequence

__all__ = ["html_table", "text_table"]

_CELL = "style='padding: 2px 8px; border-bottom: 1px solid #bbb; text-align: left; vertical-align: top'"


def text_table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """Columns padded to their widest cell, a rule under the headers, no trailing spaces. Widths are
    as a monospace font shows them: a Chinese character takes two columns."""
    cells = [list(map(str, headers))] + [list(map(str, row)) for row in rows]
    widths = [max(display_width(line[i]) for line in cells) for i in range(len(headers))]
    lines = [" | ".join(cell + " " * (width - display_width(cell)) for cell, width in zip(line, widths)).rstrip()
             for line in cells]
    lines.insert(1, "-+-".join("-" * width for width in widths))
    return "\n".join(lines)


def html_table(headers: Iterable[str], rows: Iterable[Iterable[object]]) -> str:
    """Every cell escaped and left-aligned; long text wraps inside its cell."""
    head = "".join(f"<th {_CELL}>{escape(header)}</th>" for header in headers)
    body = "".join("<tr>" + "".join(f"<td {_CELL}>{escape(cell)}</td>" for cell in row) + "</tr>" for row in rows)
    return f"<table style='border-collapse: collapse'><tr>{head}</tr>{body}</table>"


def display_width(text: str) -> int:
    """The columns ``text`` takes in a monospace font: two for wide (CJK) characters, one otherwise."""
    return sum(2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in text)


def escape(value: object) -> str:
    return html.escape(str(value), quote=True)
