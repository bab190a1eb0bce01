"""SimpleCPUOffloadConnector's offload table for people (report.offload.simple), and `kvcalc size`'s answer for it.
Imported by table.py only for that backend's reports."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from typing import TYPE_CHECKING

from ..vocab.units import exact_bytes

if TYPE_CHECKING:
    from ..backends.simple_plan import SimplePlan
    from .sections import OffloadSection


def _n(n: int | None) -> str:
    return "—" if n is None else f"{n:,}"


def simple_table(off: OffloadSection, sp: SimplePlan, style, table) -> RenderableType:
    """The connector's pool (`sp`: the offload section's `simple`) per PP stage, then the engine's; `table`: table.py's
    table maker."""
    head = (f"CPU offload through {sp.connector} (vLLM {sp.vllm_version}, {sp.mode} mode, selected by "
            f"{sp.selected_by}): cpu_bytes_to_use = {exact_bytes(off.cpu_bytes_to_use)}, from "
            f"{off.cpu_bytes_source!r}")
    if sp.startup_error:
        return Group(Text(head, style="bold"), Text(f"startup failure: {sp.startup_error}", style="bold red"))
    if not sp.enabled:
        return Group(Text(head, style="bold"), Text(f"disabled: {sp.reason}", style="bold"))
    t = table(style, head, "", *(f"stage {st.pp_rank}" for st in sp.stages))

    def row(label: str, get) -> None:
        t.add_row(label, *(get(st) for st in sp.stages))

    row("bytes per CPU block (sum over regions)", lambda st: _n(st.bytes_per_block))
    row("unique GPU KV regions", lambda st: _n(st.regions))
    row("capacity // bytes per block", lambda st: _n(st.local_capacity))
    row("CPU blocks its workers allocate", lambda st: _n(st.num_cpu_blocks))
    row("host bytes resident, one worker", lambda st: _n(st.resident_bytes_per_worker))
    if sp.mode == "disk":
        row("disk bytes, one rank", lambda st: _n(st.disk_bytes_per_rank))
    e = table(style, "SimpleCPUOffloadConnector, one engine", "", "", header=False)
    e.add_row("capacity per rank", f"{exact_bytes(sp.capacity_bytes_per_rank)}: {sp.capacity_from}")
    e.add_row("CPU blocks, scheduler", f"{sp.num_cpu_blocks_scheduler:,} (rank 0's GPU KV bytes per block "
                                       f"{sp.scheduler_bytes_per_block:,})")
    e.add_row("CPU blocks on every rank", f"{sp.num_cpu_blocks_per_rank:,}" + (" (the MIN over workers)"
                                                                            if sp.min_over_workers else ""))
    e.add_row("CPU tokens held (every rank)", _n(sp.tokens))
    e.add_row("host bytes resident, engine", exact_bytes(sp.resident_bytes_per_engine))
    if off.host is not None:
        e.add_row("host bytes resident, node", exact_bytes(off.host.resident_bytes_per_node))
    if sp.mode == "disk":
        e.add_row("disk files (one node)", ", ".join(sp.disk_files))
    ids = sp.out_of_bounds
    red = "" if style.plain else "bold red"
    e.add_row("out-of-bounds CPU stores", Text(f"YES ids {ids.first:,}–{ids.last:,} (PP stage {ids.pp_rank})",
                                               style=red) if ids else "no")
    return Group(t, e)


def render_simple_sizing(answer, target, style, table) -> RenderableType:
    want = (f"{target.tokens:,} tokens" if target.tokens is not None else f"{target.units:,} CPU blocks"
            if target.units is not None else f"resident <= {exact_bytes(target.resident)} per node")
    t = table(style, f"SimpleCPUOffloadConnector on vLLM {answer.vllm_version} ({answer.mode} mode): {want}", "", "",
              header=False)
    if answer.startup_error or answer.note:
        t.add_row("no answer", answer.startup_error or answer.note)
        return t
    if answer.cpu_bytes_to_use is not None:
        t.add_row("cpu_bytes_to_use (engine)", exact_bytes(answer.cpu_bytes_to_use))
        t.add_row("--kv-offloading-size", f"{answer.kv_offloading_size_gib:g} (with VLLM_USE_SIMPLE_KV_OFFLOAD=1)")
    t.add_row("disk_capacity_bytes (per rank)" if answer.mode == "disk" else "cpu_bytes_to_use_per_rank",
              exact_bytes(answer.bytes_per_rank))
    t.add_row("CPU blocks on every rank", _n(answer.num_cpu_blocks_per_rank))
    t.add_row("CPU tokens held", _n(answer.tokens))
    t.add_row("host bytes resident, node", exact_bytes(answer.resident_bytes_per_node))
    return t
