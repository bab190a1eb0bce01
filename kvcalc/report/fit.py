"""A table that never cuts a number, at any console width (issue 21: `655,360,000,00` at 80 columns).

Rich shrinks a table that is too wide by folding its widest columns, inside words and numbers alike, and cuts a
no-wrap column with an ellipsis. `FitTable` chooses the column widths itself when it is drawn (the console's width
is known only then): every column keeps at least its longest word, and a cell that is a number (with its unit) is
one word; words wrap at spaces. When even that does not fit, the table is drawn vertically: one block per value
column (a table whose first column names the rows: one block per release or backend) or one block per row (a
table of records: one block per family, point or gate). The title is a line of its own at the console's width."""

from __future__ import annotations

from rich.console import Group
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def _plain(cell) -> str | None:
    if isinstance(cell, str):
        return cell
    return cell.plain if isinstance(cell, Text) else None


def _words(line: str) -> list[str]:
    """The words of a line, a number and its byte unit as one (`64.00 GiB`: rich may wrap between them only
    when the column is narrower than both)."""
    out: list[str] = []
    for w in line.split():
        if out and w.rstrip(",;:)") in UNITS and any(c.isdigit() for c in out[-1]):
            out[-1] += " " + w
        else:
            out.append(w)
    return out


def _widths(cell) -> tuple[int, int]:
    """(narrowest width without breaking a word or a number, widest line) of one cell."""
    text = _plain(cell)
    if text is None:
        return 1, 1
    lines = text.split("\n")
    return (max((len(w) for line in lines for w in _words(line)), default=0),
            max(len(line) for line in lines))


class FitTable(Table):
    """rich's Table with kvcalc's width rule (module doc). `by`: "column" when the first column labels the rows and
    every other column is one subject (a release, a backend, a stage), "row" when each row is one record."""

    def __init__(self, *args, by: str = "row", narrow=None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.by = by
        self.narrow = narrow  # a callable giving the renderable drawn instead of the blocks, when it has one

    def _cells(self, column) -> list:
        return ([column.header] if self.show_header else []) + list(column.cells)

    def fit(self, max_width: int) -> list[int] | None:
        """Content widths that fit `max_width` without breaking a word or number (the widest columns give way
        first); None when the narrowest such widths do not fit."""
        cols = self.columns
        mins, maxs, body = [], [], []
        for col in cols:
            sizes = [_widths(c) for c in self._cells(col)] or [(1, 1)]
            widest = max(m for _, m in sizes)
            maxs.append(widest)
            mins.append(widest if col.no_wrap else max(m for m, _ in sizes))
            body.append(max([widest if col.no_wrap else m for _, m in map(_widths, col.cells)] or [0]))
        # rich counts each column's left and right padding, edge columns too (Table._get_padding_width).
        _, right, _, left = self.padding
        extra = (len(cols) - 1 if self.box else 0) + (2 if self.box and self.show_edge else 0)
        room = max_width - extra - (left + right) * len(cols)
        if sum(mins) > room:
            return None
        widths = list(maxs)
        # First the headings wrap (a column no wider than its widest cell), then the widest columns give way.
        for k, floor in enumerate(max(m, b) for m, b in zip(mins, body)):
            if sum(widths) > room:
                widths[k] -= min(widths[k] - floor, sum(widths) - room) if widths[k] > floor else 0
        while sum(widths) > room:
            i = max((k for k in range(len(cols)) if widths[k] > mins[k]), key=lambda k: widths[k])
            widths[i] -= 1
        return widths

    def __rich_console__(self, console, options):
        title, caption = self.title, self.caption
        if title:
            yield Text(str(title), style=self.title_style or "")  # (kvcalc's titles are text)
        widths = self.fit(options.max_width)
        if widths is None and self.columns:
            yield from ([self.narrow()] if self.narrow is not None else self._vertical())
        else:
            saved = [c.width for c in self.columns]
            self.title = self.caption = None
            for col, w in zip(self.columns, widths or []):
                col.width = w
            try:
                yield from super().__rich_console__(console, options)
            finally:
                self.title, self.caption = title, caption
                for col, was in zip(self.columns, saved):
                    col.width = was
        if caption:
            yield Text(str(caption))

    def _block(self, heading, rows: list[tuple]) -> list:
        def lines() -> Group:
            # Even a label and its value do not fit side by side (a word wider than the console): one line each,
            # the value under its label, folded only where a single word is wider than the console.
            return Group(*(Text.assemble(label, ": ", value) if isinstance(value, (str, Text)) else value
                           for label, value in rows))

        t = FitTable(box=None, show_header=False, show_edge=False, pad_edge=False, narrow=lines)
        t.add_column(overflow="fold")
        t.add_column(overflow="fold")
        for label, value in rows:
            t.add_row(label, value)
        return [Text.assemble(heading, style="bold") if isinstance(heading, str) else heading, Padding(t, (0, 0, 0, 2))]

    def _vertical(self):
        """One block per value column (by="column") or per row (by="row"), each a table of label and value."""
        cols = self.columns
        columns = [list(c.cells) for c in cols]
        parts: list = []
        if self.by == "column" and len(cols) > 1:
            for col, cells in zip(cols[1:], columns[1:]):
                parts += self._block(col.header, list(zip(columns[0], cells)))
        else:
            names = [_plain(c.header) or "" for c in cols] if self.show_header else [""] * len(cols)
            for row in zip(*columns):
                head = f"{names[0]}: {_plain(row[0])}" if names[0] else row[0]
                parts += self._block(head, list(zip(names[1:], row[1:])))
        yield Group(*parts)
