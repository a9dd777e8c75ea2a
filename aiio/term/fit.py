"""Tables that fit the terminal: when a table's columns cannot fit the width without cutting
words to an ellipsis, it is drawn as one block per row (column name, value) instead."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

from rich.console import Console, ConsoleOptions, RenderResult
from rich.table import Table


class Fitted:
    """A table drawn as it is when it fits; else without the fewest of the columns it may
    leave out (`may_leave_out`) that make it fit; else as blocks. Decided at the width it
    is drawn."""

    def __init__(self, table: Table) -> None:
        self.table = table

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if _leaves_out(self.table) and not _a_line_a_row(console, options, self.table):
            # a row over two lines (a latency cut as "10.16 / ms") reads worse than a
            # column left out: the first narrower table that keeps a line a row, if any
            narrower = next((t for t in _narrowed(self.table)
                             if _a_line_a_row(console, options, t)), None)
            if narrower is not None:
                yield narrower
                return
        if _fits(console, options, self.table):
            yield self.table
        elif len(self.table.columns) <= 2:  # already one row per figure: wrap, never cut
            for column in self.table.columns:
                column.overflow = "fold"
            yield self.table
        else:
            yield next((t for t in _narrowed(self.table) if _fits(console, options, t)),
                       blocks(self.table))


def may_leave_out(table: Table, headers: tuple[str, ...], where: str) -> Table:
    """Mark columns a narrow terminal may drop, first named first, keeping a row per line;
    the caption then says which and `where` they are. A table of one block per row was
    10 lines a client."""
    table.aiio_leave_out = (headers, where)  # type: ignore[attr-defined]
    return table


def _leaves_out(table: Table) -> bool:
    return bool(getattr(table, "aiio_leave_out", ((), ""))[0])


def _a_line_a_row(console: Console, options: ConsoleOptions, table: Table) -> bool:
    """Whether the table fits (`_fits`) with each row drawn on one line: counted between
    the line under the header and the bottom line (the header itself may wrap)."""
    if not _fits(console, options, table):
        return False
    drawn = ["".join(seg.text for seg in line)
             for line in console.render_lines(table, options, pad=False)]
    under = next((i for i, line in enumerate(drawn) if line[:1] and line[:1] in "┡╞├"), None)
    if under is None:
        under = next((i for i, line in enumerate(drawn) if line.strip()
                      and set(line.strip()) <= set("─━═")), None)
    if under is not None and _lost_a_column(table, drawn[:under]):
        return False
    if under is not None and drawn[under][:1] in "┡╞├":
        body = [line for line in drawn[under + 1:] if line[:1] == "│"]
        return len(body) <= table.row_count
    # a table without side edges (box.SIMPLE_HEAD): its rows run from the rule under the
    # header to the blank line of its bottom edge
    if under is None:  # no header line to count from: nothing to tell
        return True
    body = itertools.takewhile(str.strip, drawn[under + 1:])
    return sum(1 for _ in body) <= table.row_count


def _lost_a_column(table: Table, header_lines: list[str]) -> bool:
    """Whether a column is missing from the drawn header: kept-whole one-word columns can
    squeeze a wrapping column to nothing, which no ellipsis shows."""
    words = {w for line in header_lines for w in line.replace("│", " ").split()}
    return any(_plain(c.header).split()[:1] and _plain(c.header).split()[0] not in words
               for c in table.columns)


def _fits(console: Console, options: ConsoleOptions, table: Table) -> bool:
    return not cuts_words(console, options, table) or _keep_words(console, options, table)


def _narrowed(table: Table) -> Iterator[Table]:
    """The table without one more of the columns it may leave out each time, in the order
    it names them; nothing when it names none."""
    headers, where = getattr(table, "aiio_leave_out", ((), ""))
    for n in range(1, len(headers) + 1):
        kept = [c for c in table.columns if _plain(c.header) not in headers[:n]]
        if len(kept) == len(table.columns):
            continue
        left = ", ".join(_plain(c.header) for c in table.columns if c not in kept)
        out = Table(title=table.title, title_justify=table.title_justify, box=table.box,
                    caption=f"left out at this width: {left} ({where})")
        for column in kept:
            out.add_column(column.header, justify=column.justify)
        for row in zip(*(list(c.cells) for c in kept), strict=True):
            out.add_row(*row)
        yield out


def cuts_words(console: Console, options: ConsoleOptions, table: Table) -> bool:
    """Would drawing the table at this width cut a cell to an ellipsis? Drawn to find out:
    rich narrows the widest columns first, so summing the columns' minimum widths can say
    "fits" while a narrow column still gets cut."""
    ellipsis = "\u2026"
    drawn = "".join(seg.text for line in console.render_lines(table, options, pad=False)
                    for seg in line)
    if ellipsis not in drawn:
        return False
    return not any(ellipsis in _plain(cell) for column in table.columns for cell in column.cells)


def _keep_words(console: Console, options: ConsoleOptions, table: Table) -> bool:
    """Try again with one-word columns (names, numbers) kept whole, so only the columns with
    several words wrap; rich otherwise narrows the widest column first, whatever it holds.
    Leaves the table as it was when that does not help."""
    before = [c.no_wrap for c in table.columns]
    for column in table.columns:
        column.no_wrap = column.no_wrap or not any(
            " " in _plain(cell).strip() for cell in column.cells)
    if not cuts_words(console, options, table):
        return True
    for column, no_wrap in zip(table.columns, before, strict=True):
        column.no_wrap = no_wrap
    return False


def fit(obj: Any) -> Any:
    """Wrap a rich Table so it fits; anything else is returned as it is."""
    return Fitted(obj) if isinstance(obj, Table) else obj


def blocks(table: Table) -> Table:
    """The same cells, one block per row: each column's name beside its value."""
    out = Table(title=table.title, title_justify=table.title_justify, show_header=False,
                box=table.box)
    out.add_column(style="bold", overflow="fold")
    out.add_column(overflow="fold")  # a long path folds onto the next line, never cut
    names = [_plain(c.header) for c in table.columns]
    rows = list(zip(*(list(c.cells) for c in table.columns), strict=True))
    for i, row in enumerate(rows):
        for j, (name, cell) in enumerate(zip(names, row, strict=True)):
            out.add_row(name or "-", cell, end_section=j == len(row) - 1 and i < len(rows) - 1)
    return out


def _plain(cell: Any) -> str:
    return cell.plain if hasattr(cell, "plain") else str(cell)
