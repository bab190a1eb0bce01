"""The LMCache MP server's offload table for people (report.offload.lmcache_mp), and `kvcalc size`'s answer for it.
Imported by table.py and table_size.py only for that backend's reports."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from typing import TYPE_CHECKING

from ..vocab.releases.lmcache_mp import number
from ..vocab.units import exact_bytes

if TYPE_CHECKING:
    from ..backends.lmcache_mp_plan import MPPlan


def _n(n: int | None) -> str:
    return "—" if n is None else f"{n:,}"


def _per_token(bytes_per_chunk: int, chunk: int) -> str:
    """Bytes per token, exact: an integer when the chunk divides evenly, else the fraction's decimal."""
    whole, rest = divmod(bytes_per_chunk, chunk)
    return f"{whole:,}" if not rest else f"{bytes_per_chunk / chunk:,.2f}"


def lmcache_mp_table(m: MPPlan, style, table) -> RenderableType:
    """The server's pool (`m`: the offload section's `lmcache_mp`): per PP stage what one rank registers and stores,
    then the node's L1; `table`: table.py's table maker."""
    head = (f"CPU offload through the LMCache {m.lmcache_version} MP server ({m.connector}, selected by "
            f"{m.selected_by}): chunk {m.chunk_size} tokens")
    t = table(style, head, "", *(f"stage {st.pp_rank}" for st in m.stages))

    def row(label: str, get) -> None:
        t.add_row(label, *(get(st) for st in m.stages))

    row("KV layers one rank registers", lambda st: _n(st.layers))
    row("bytes per token, one rank", lambda st: _n(st.bytes_per_token))
    row("object: one chunk of one rank (aligned)", lambda st: f"{st.object_bytes:,} ({st.object_bytes_aligned:,})")
    row("ranks / writers per chunk", lambda st: f"{st.ranks} / {st.writer_ranks}")
    row("server's buffers on each GPU", lambda st: exact_bytes(st.staging_bytes_per_gpu))
    e = table(style, "The node's LMCache server (one L1, shared by its engines)", "", "", header=False)
    e.add_row("one chunk of this engine", f"{m.objects_per_chunk} object(s), {m.bytes_per_chunk:,} B "
                                          f"({_per_token(m.bytes_per_chunk, m.chunk_size)} B per token)")
    if m.startup_error:
        e.add_row("starts", Text(f"no: {m.startup_error}", style="" if style.plain else "bold red"))
        return Group(t, e)
    p = m.pool
    if p is None:
        e.add_row("L1", "the server's command line was not given (--lmcache-server): no figures")
        return Group(t, e)
    e.add_row("L1 (--l1-size-gb)", f"{exact_bytes(p.size_bytes)}, {p.mode} ({p.allocator})")
    e.add_row("pinned at start / once grown",
              f"{exact_bytes(p.resident_bytes_initial)} / {exact_bytes(p.resident_bytes)}"
              + (f" ({p.background_pin_calls:,} background 64 MiB pins)" if p.background_pin_calls else ""))
    e.add_row("reserved (virtual)", exact_bytes(p.reserved_bytes))
    if p.hugepages:
        e.add_row("2 MiB hugepages", _n(p.hugepages))
    if p.shm_bytes:
        e.add_row("/dev/shm segment", exact_bytes(p.shm_bytes))
    e.add_row("chunks held (node)", _n(m.chunks_held))
    e.add_row("tokens held (node)", _n(m.tokens_held) + (f"; {_n(m.tokens_held_at_start)} at start"
                                                          if m.tokens_held_at_start != m.tokens_held else ""))
    e.add_row("tokens before eviction starts", f"{_n(m.tokens_before_eviction)} (usage "
                                               f"{m.eviction_trigger_watermark:g}, {m.eviction_policy})")
    if m.engines_per_node > 1:
        e.add_row("tokens per engine (equal share)", f"{_n(m.tokens_per_engine)} of {m.engines_per_node} engines")
    if m.kv_offloading_size is not None:
        e.add_row("vLLM's --kv-offloading-size", f"{number(m.kv_offloading_size)}: selects the connector, sizes "
                                                 "nothing")
    return Group(t, e)


def render_mp_sizing(answer, target, style, table) -> RenderableType:
    """`kvcalc size`'s answer: the --l1-size-gb that holds the target (or stays under a resident limit)."""
    want = (f"{target.tokens:,} tokens" if target.tokens is not None else f"{target.units:,} chunks"
            if target.units is not None else f"at most {target.resident:,} B resident on one node")
    t = table(style, f"LMCache MP server: the --l1-size-gb for {want}", "", "", header=False)
    if answer.l1_size_gb is None:
        t.add_row("no answer", answer.note or "—")
        return t
    t.add_row("--l1-size-gb", f"{number(answer.l1_size_gb)} ({exact_bytes(answer.size_bytes)})")
    t.add_row("to keep it below the eviction watermark", "—" if answer.l1_size_gb_below_watermark is None else
              number(answer.l1_size_gb_below_watermark))
    t.add_row("chunks / tokens it holds (node)", f"{_n(answer.chunks_held)} / {_n(answer.tokens_held)}")
    t.add_row("host memory it pins (node)", exact_bytes(answer.resident_bytes_per_node))
    t.add_row("one chunk of this engine", f"{answer.bytes_per_chunk:,} B")
    if answer.note:
        t.add_row("note", answer.note)
    return t
