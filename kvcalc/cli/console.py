"""The streams and the renderers' entry points: stdout for data, stderr for diagnostics, ASCII spellings for a stream
that cannot encode kvcalc's characters, and the console renderers print on (a fixed width when piped, no colour unless
a terminal)."""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager

from ..vocab.errors import KvcalcError, LayoutError


def plain() -> bool:
    """No colour and no box characters when stdout is not a terminal, or NO_COLOR is set."""
    return not sys.stdout.isatty() or bool(os.environ.get("NO_COLOR"))


def console(width_when_piped: int):
    from rich.console import Console

    # Pipes and files get a fixed width (rich would pick 80) unless COLUMNS says otherwise; a COLUMNS that is no
    # usable width (0, 1, "abc": rich would print nothing at all) is ignored.
    columns = os.environ.get("COLUMNS", "")
    usable = columns.isascii() and columns.isdigit() and len(columns) <= 5 and int(columns) >= 40
    for name in ("COLUMNS", "LINES"):  # rich reads both itself, with int(): '²' or 5,000 digits would raise there
        text = os.environ.get(name, "")
        if text and not (text.isascii() and text.isdigit() and len(text) <= 5):
            del os.environ[name]
    width: int | None
    if usable:
        width = int(columns)
    elif sys.stdout.isatty():
        width = None if not columns else 80  # the terminal's own width, unless COLUMNS is set and unusable
    else:
        width = width_when_piped
    # markup=False: text from inputs (a path "[red]x[/red]", a model name with "[/]") is shown as written.
    return Console(soft_wrap=False, highlight=False, emoji=False, markup=False, width=width,
                   no_color=plain() or None, color_system=None if plain() else "auto")


LOST: list[str] = []  # diagnostics that could not be written (a closed or full stderr): main exits 74 for them


def err(text: str) -> None:
    """One diagnostic line on stderr; control characters from inputs (a terminal escape in a key name) are shown
    escaped, never sent raw. A stderr that cannot be written is remembered, not a crash."""
    try:
        sys.stderr.write(printable(text) + "\n")
        sys.stderr.flush()
    except (OSError, AttributeError, ValueError):
        LOST.append(text)


def printable(text: str) -> str:
    """`text` with control characters (ESC, BEL, CR, …; newlines included: a diagnostic is one line) written as
    escapes: what an input says cannot move the cursor or recolour the terminal."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class ClosedStream:
    """What sys.stdout is when the process started with it closed (`kvcalc … >&-`): writing fails as a write to a
    closed descriptor does, which main reports as exit 74."""

    encoding = "utf-8"

    def isatty(self) -> bool:
        return False

    def write(self, text: str) -> int:
        import errno

        raise OSError(errno.EBADF, "standard output is closed")

    def flush(self) -> None:
        pass

    def fileno(self) -> int:
        import io

        raise io.UnsupportedOperation("closed")


def quiet_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not fail a second time."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


# What kvcalc prints beyond ASCII, and its ASCII spelling for a stream that cannot encode it (a C or latin-1
# locale): the output stays readable instead of failing with UnicodeEncodeError.
_ASCII = str.maketrans({"—": "-", "–": "-", "×": "x", "≥": ">=", "≤": "<=", "÷": "/", "█": "#", "…": "...",
                        "─": "-", "━": "-", "│": "|", "·": ".", "±": "+-", "²": "^2", "→": "->", "’": "'"})


class AsciiStream:
    """A text stream that writes what its encoding cannot hold in ASCII (_ASCII, then '?')."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(text.translate(_ASCII))
        return len(text)

    def __getattr__(self, name):
        return getattr(self._stream, name)


def encodable_streams() -> None:
    if sys.stdout is None:
        sys.stdout = ClosedStream()
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is None or isinstance(stream, ClosedStream):
            continue
        encoding = getattr(stream, "encoding", None) or "utf-8"
        try:
            "—×≥█".encode(encoding)
        except (UnicodeEncodeError, LookupError):
            try:
                stream.reconfigure(errors="replace")
            except (AttributeError, ValueError):
                pass
            setattr(sys, name, AsciiStream(stream))


def name_source(e: KvcalcError, source: str) -> None:
    """Name the file for refusals raised deep in the core (startup rules, unsupported settings). A LayoutError
    names its own file already (the layout, or the log / scrape it was reading)."""
    if not isinstance(e, LayoutError) and not str(e).startswith(source):
        e.args = (f"{source}: {e}",)


@contextmanager
def naming(source: str):
    """Refusals raised inside the block name the layout file."""
    try:
        yield
    except KvcalcError as e:
        name_source(e, source)
        raise


CHECK_WORDS = {"pass": "passed", "fail": "failed", "unknown": "not evaluated", "skipped": "skipped"}


def report_checks(checks) -> None:
    """Every gate on stderr, one line each (`check failed: …` for the ones that fail the run), then a count."""
    counts: dict[str, int] = {}
    for c in checks:
        status = c.status
        counts[status] = counts.get(status, 0) + 1
        err(f"check {CHECK_WORDS[status]}: {c.name}: {c.reason}")
    err("checks: " + ", ".join(f"{n} {CHECK_WORDS[s]}" for s, n in counts.items()))


def print_table(report) -> None:
    """The report's table, by its engine's renderer (engines/<name>/table.py)."""
    from ..engines.base import hook
    from ..report.table import Style

    out = console(100)
    for item in hook(report.engine, "table").render(report, Style(plain=plain())):
        out.print(item)


def print_summary(report) -> None:
    """plan --summary: the table's first screen only."""
    from ..engines.base import hook
    from ..report.table import Style

    out = console(100)
    for item in hook(report.engine, "table").render_summary(report, Style(plain=plain())):
        out.print(item)


def print_json(report) -> None:
    from ..report.json import render

    sys.stdout.write(render(report))


# Every --format value maps to exactly one renderer (a test walks the enum).
RENDERERS = {"table": print_table, "json": print_json}


def write_sweep(rows, fmt: str, source: str, total: int, shown: list[str]) -> None:
    """A sweep's rows as they come (the grid is never held): JSON lines, CSV, or a table of the `shown` columns."""
    if fmt == "jsonl":
        import json

        for row in rows:
            sys.stdout.write(json.dumps(row, sort_keys=True) + "\n")
    elif fmt == "csv":
        import csv

        from ..tools.sweep import COLUMNS

        writer = csv.DictWriter(sys.stdout, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: "" if v is None else v for k, v in row.items()})
    else:
        from ..report.commands import render_sweep

        console(140).print(render_sweep(rows, shown, source, total))
