"""`kvcalc size` for people: the budget each family needs for a target (native), LMCache's, the simple
connector's (report/table_simple.py). Never prints; the CLI owns the console."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from ..vocab.units import exact_bytes, format_bytes
from .table import Style, new_table as _table

_b = exact_bytes


def _n(n: int | None) -> str:
    return "—" if n is None else f"{n:,}"


def _sizing_title(key: str, tokens: int | None, count: int | None, unit: str, resident: int | None) -> str:
    """The title of a `size` answer: the smallest `key` for a token or unit count, else the largest under a
    resident-memory cap."""
    if tokens is not None:
        return f"Smallest {key} holding {tokens:,} CPU tokens"
    if count is not None:
        return f"Smallest {key} holding {count:,} {unit}"
    return f"Largest {key} keeping one node's resident host memory under {_b(resident)}"


def render_size(answer, target, style: Style = Style()) -> RenderableType:
    """`kvcalc size`: each backend's answer as its own table (the native connector's per family, LMCache's one; a
    backend without a table of its own: its JSON answer as rows)."""
    own = SIZE_RENDERERS.get(answer.backend)
    if own is not None:
        return own(answer, target, style)
    t = _table(style, f"{answer.backend}: the budget for the target", "", "", header=False)
    for key, value in answer.document("", target).items():
        t.add_row(key, "—" if value is None else str(value))
    return t


def render_sizing(rows, tokens: int | None, blocks: int | None, resident: int | None = None,
                  style: Style = Style()) -> RenderableType:
    title = _sizing_title("cpu_bytes_to_use", tokens, blocks, "CPU blocks", resident)
    t = _table(style, title, "family", "release", "cpu_bytes_to_use", "GiB flag", "blocks", "tokens",
               "resident, node", "/dev/shm, node", "safe?")
    t.narrow = lambda: _sizing_lines(rows)
    notes = []
    for r in rows:
        if r.startup_error:
            t.add_row(r.family, r.vllm_version, "—", "—", "—", "—", "—", "—", "refused")
            notes.append(Text(f"{r.family} ({r.vllm_version}): {r.startup_error}"))
            continue
        if r.cpu_bytes_to_use is None:  # no budget helps: the note says why
            t.add_row(r.family, r.vllm_version, "none helps", "—", "—", "—", "—", "—", "NO: out of bounds")
            notes.append(Text(f"{r.family}: {r.note}"))
            continue
        t.add_row(r.family, r.vllm_version, f"{r.cpu_bytes_to_use:,}", f"{r.kv_offloading_size_gib:g}",
                  f"{r.num_blocks:,} {r.unit}", f"{r.tokens:,}", format_bytes(r.resident_bytes_per_node),
                  format_bytes(r.shm_bytes_per_node), "NO: out of bounds" if r.out_of_bounds_at_any_budget else "yes")
        if r.note:
            notes.append(Text(f"{r.family}: {r.note}"))
    return Group(t, *notes)


def _sizing_lines(rows) -> RenderableType:
    """The sizing table too wide for the console: one paragraph per family, the same figures in words."""
    lines = []
    for r in rows:
        head = f"{r.family} {r.vllm_version}: "
        if r.startup_error:
            lines.append(Text(head + "refused at startup (below)"))
        elif r.cpu_bytes_to_use is None:
            lines.append(Text(head + "no budget helps: out of bounds at any budget"))
        else:
            lines.append(Text(
                head + f"cpu_bytes_to_use {r.cpu_bytes_to_use:,} (GiB flag {r.kv_offloading_size_gib:g}): "
                f"{r.num_blocks:,} {r.unit}, {r.tokens:,} tokens; per node resident "
                f"{format_bytes(r.resident_bytes_per_node)}, /dev/shm {format_bytes(r.shm_bytes_per_node)}; "
                + ("NOT safe: out of bounds at any budget" if r.out_of_bounds_at_any_budget else "safe")))
    return Group(*lines)


def render_lmcache_sizing(row, tokens: int | None, chunks: int | None, resident: int | None,
                          style: Style = Style()) -> RenderableType:
    title = _sizing_title(f"LMCache {row.key}", tokens, chunks, "chunks per rank", resident)
    t = _table(style, title, "", "", header=False)
    if row.gib is None:
        t.add_row("answer", "none")
    else:
        t.add_row(row.key, f"{row.gib:g} (GiB per rank)")
        t.add_row("pinned per storing rank", _b(row.pool_bytes_per_rank))
        t.add_row("chunks per rank (worst stage)", _n(row.chunks_per_rank))
        t.add_row("tokens held", _n(row.tokens))
        t.add_row("storing ranks", _n(row.storing_ranks))
        t.add_row("pool, engine", _b(row.pool_bytes_per_engine))
        t.add_row("resident, node", _b(row.resident_bytes_per_node))
    parts: list[RenderableType] = [t]
    if row.note:
        parts.append(Text(row.note))
    return Group(*parts)


def _simple(answer, target, style: Style) -> RenderableType:
    from .table_simple import render_simple_sizing

    return render_simple_sizing(answer, target, style, _table)


def _lmcache_mp(answer, target, style: Style) -> RenderableType:
    from .table_lmcache_mp import render_mp_sizing

    return render_mp_sizing(answer, target, style, _table)


# A backend's answer -> its own table (a backend without one: its JSON answer as rows).
SIZE_RENDERERS = {
    "native": lambda a, t, style: render_sizing(a.rows, t.tokens, t.units, t.resident, style),
    "lmcache": lambda a, t, style: render_lmcache_sizing(a, t.tokens, t.units, t.resident, style),
    "lmcache_mp": _lmcache_mp,
    "simple": _simple,
}
