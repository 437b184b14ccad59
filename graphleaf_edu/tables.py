"""Tables of strings, as aligned plain text (for checked notebook output) or as HTML (for widgets)."""
from __future__ import annotations

import html
from collections.abc import Iterable, Sequence

__all__ = ["html_table", "text_table"]

_CELL = "style='padding: 2px 8px; border-bottom: 1px solid #bbb; text-align: left; vertical-align: top'"


def text_table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """Columns padded to their widest cell, a rule under the headers, no trailing spaces."""
    cells = [list(map(str, headers))] + [list(map(str, row)) for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(headers))]
    lines = [" | ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip() for line in cells]
    lines.insert(1, "-+-".join("-" * width for width in widths))
    return "\n".join(lines)


def html_table(headers: Iterable[str], rows: Iterable[Iterable[object]]) -> str:
    """Every cell escaped and left-aligned; long text wraps inside its cell."""
    head = "".join(f"<th {_CELL}>{escape(header)}</th>" for header in headers)
    body = "".join("<tr>" + "".join(f"<td {_CELL}>{escape(cell)}</td>" for cell in row) + "</tr>" for row in rows)
    return f"<table style='border-collapse: collapse'><tr>{head}</tr>{body}</table>"


def escape(value: object) -> str:
    return html.escape(str(value), quote=True)
