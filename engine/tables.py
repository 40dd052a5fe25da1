"""Tables for people, printed with rich: one function for li and the wrapper.

On a terminal the header is bold (no escape codes at all with ``NO_COLOR`` set) and
columns fit the terminal. Anything else - a pipe, a file, a test runner -
gets plain text: no escape codes, no wrapping or truncation, trailing spaces stripped,
so ``grep``/``awk`` keep working. Columns are separated by two spaces as before.

Cells are text, never rich markup (a PR title ``[link=http://evil]x[/link]`` would
otherwise print a hyperlink, and ``[/]`` stop the table with an error), and pass
:func:`engine.termsafe.terminal_safe` first: rich drops a few C0 controls (BEL, BS) but
prints ESC, the C1 controls and bidi controls as they are.
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from rich.console import Console
from rich.table import Table
from rich.text import Text

from engine.termsafe import terminal_safe

_UNBOUNDED_WIDTH = 100_000


def _table(
    headers: Sequence[str], rows: Sequence[Sequence[Any]], *, bold: bool, wrap: bool
) -> Table:
    grid = Table(
        box=None,
        pad_edge=False,
        show_edge=False,
        header_style="bold" if bold else "",
        highlight=False,
    )
    for header in headers:
        grid.add_column(Text(terminal_safe(header.upper())), no_wrap=not wrap, overflow="fold")
    for row in rows:
        grid.add_row(*(Text(terminal_safe("-" if cell is None else str(cell))) for cell in row))
    return grid


def print_table(
    headers: Sequence[str], rows: Sequence[Sequence[Any]], file: TextIO | None = None
) -> None:
    """Print ``rows`` under ``headers`` (None cells as ``-``)."""
    out = file if file is not None else sys.stdout
    if out.isatty():
        # NO_COLOR (any value, https://no-color.org): no escape codes at all.
        plain = bool(os.environ.get("NO_COLOR"))
        console = Console(file=out, no_color=plain, color_system=None if plain else "auto")
        console.print(_table(headers, rows, bold=not plain, wrap=True))
        return
    buffer = io.StringIO()
    Console(file=buffer, width=_UNBOUNDED_WIDTH, color_system=None, no_color=True).print(
        _table(headers, rows, bold=False, wrap=False)
    )
    out.write("".join(line.rstrip() + "\n" for line in buffer.getvalue().splitlines()))
    out.flush()
