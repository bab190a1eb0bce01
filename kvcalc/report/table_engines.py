"""--compare-engines as a table for people: one row per engine. Never prints."""

from __future__ import annotations

from rich.table import Table

from ..vocab.units import format_bytes
from .fit import FitTable


def _n(n) -> str:
    return "—" if n is None else f"{n:,}"


def _table(style, title: str, *columns: str) -> Table:
    # FitTable: a number is never cut (one block per engine when even the narrowest columns do not fit)
    t = FitTable(title=title, title_justify="left", box=style.box, show_edge=False, pad_edge=False, title_style="bold",
                 by="row")
    for c in columns:
        t.add_column(c, overflow="fold")
    return t


def engines_table(entries, style) -> Table:
    t = _table(style, "Engines (--compare-engines): same model, GPUs and host", "engine", "GPU tokens",
               "host tokens", "host bytes, node", "/dev/shm, node", "refuses")
    for e in entries:
        t.add_row(f"{e.engine} {e.version}".strip(), _n(e.gpu_tokens), _n(e.host_tokens),
                  "—" if e.host_bytes_per_node is None else format_bytes(e.host_bytes_per_node),
                  "—" if e.shm_bytes_per_node is None else format_bytes(e.shm_bytes_per_node), e.refusal or "no")
    return t
