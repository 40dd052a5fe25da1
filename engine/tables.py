"""Tables for people, printed with rich: one function for li and the wrapper.

On a terminal the header is bold (no escape codes at all with ``NO_COLOR`` set) and
no value is ever split mid-word: a column of prose (a cell with spaces, longer than
:data:`PROSE_LONGER_THAN`) wraps at spaces to fit the terminal; every other column - names,
SHAs, reason codes, timestamps - keeps each value whole on one line. When the whole values
alone are wider than the terminal, the table is that wide (the terminal folds the lines;
a copied value stays whole). Anything else - a pipe, a file, a test runner -
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

from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

from engine.termsafe import terminal_safe

_UNBOUNDED_WIDTH = 100_000
_GAP = 2  # columns are separated by two spaces
PROSE_LONGER_THAN = 20  # "2 of fire 5" or "every 5m" stays whole; a sentence may wrap


def _cells(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[list[str]]:
    """Header and rows as the text shown: upper-case header, ``-`` for None, terminal-safe."""
    shown = [[terminal_safe(h.upper()) for h in headers]]
    shown += [[terminal_safe("-" if cell is None else str(cell)) for cell in row] for row in rows]
    width = max(len(line) for line in shown)
    return [line + [""] * (width - len(line)) for line in shown]  # rich pads short rows too


def _prose_widths(columns: list[list[str]], terminal: int) -> dict[int, int]:
    """Widths for the prose columns: at least their longest word, sharing what is left."""
    prose = [
        i
        for i, column in enumerate(columns)
        if any(" " in cell and cell_len(cell) > PROSE_LONGER_THAN for cell in column[1:])
    ]
    widest = {i: max(cell_len(cell) for cell in column) for i, column in enumerate(columns)}
    fixed = sum(w for i, w in widest.items() if i not in prose) + _GAP * (len(columns) - 1)
    least = {i: max(cell_len(word) for cell in columns[i] for word in cell.split()) for i in prose}
    spare = max(0, terminal - fixed - sum(least.values()))
    give = {i: widest[i] - least[i] for i in prose}
    wanted = sum(give.values())
    if spare >= wanted:
        return {i: widest[i] for i in prose}
    return {i: least[i] + give[i] * spare // wanted for i in prose}


def _table(
    headers: Sequence[str], rows: Sequence[Sequence[Any]], *, bold: bool, terminal: int | None
) -> Table:
    """The table; with ``terminal`` (its width) prose columns wrap to fit it."""
    grid = Table(
        box=None,
        pad_edge=False,
        show_edge=False,
        header_style="bold" if bold else "",
        highlight=False,
    )
    shown = _cells(headers, rows)
    columns = [list(column) for column in zip(*shown, strict=True)]
    widths = {} if terminal is None or not rows else _prose_widths(columns, terminal)
    for i, header in enumerate(shown[0]):
        grid.add_column(Text(header), no_wrap=i not in widths, width=widths.get(i))
    for row in shown[1:]:
        grid.add_row(*(Text(cell) for cell in row))
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
        table = _table(headers, rows, bold=not plain, terminal=console.width)
        needed = console.measure(table, options=console.options.update_width(_UNBOUNDED_WIDTH))
        console.width = max(console.width, needed.maximum)  # whole values beat fitting
        console.print(table)
        return
    buffer = io.StringIO()
    Console(file=buffer, width=_UNBOUNDED_WIDTH, color_system=None, no_color=True).print(
        _table(headers, rows, bold=False, terminal=None)
    )
    out.write("".join(line.rstrip() + "\n" for line in buffer.getvalue().splitlines()))
    out.flush()
