"""The native connector's offload detail for people: one column per release (the old and fixed families on their
own releases, the selected release's family), every figure in bytes, the refusal of a release that has none.
Imported by table.py, which passes its table maker (`table`)."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from ..vocab.releases.vllm import FAMILIES
from ..vocab.units import exact_bytes, format_bytes
from .sections import FamilyEntry, Report, offload_of


_b = exact_bytes


def _n(n: int | None) -> str:
    return "—" if n is None else f"{n:,}"


def release_columns(report: Report) -> list[tuple[str, FamilyEntry | None, str]]:
    """(header, entry, family id): old and fixed always, then the selected release's family if it is another. Each
    column is its family on one release (JSON offload.old/fixed.vllm_version): the selected release for its own
    family, else the family's representative release planned whole (report.representative_entry)."""
    off = offload_of(report)

    def head(fam: str) -> str:
        return f"{fam} {report.vllm_version if fam == report.family else FAMILIES[fam].representative}"

    cols = [(head("old"), off.old, "old"), (head("fixed"), off.fixed, "fixed")]
    if report.family not in ("old", "fixed"):
        cols.append((head(report.family), off.selected, report.family))
    return cols


def refusals(report: Report, cols) -> list[Text]:
    """Under a table of release columns: why a column has no numbers (its release refuses the layout, or its
    offloading connector fails at start-up), in that release's words."""
    errors = offload_of(report).errors
    return [Text(f"{h}: {errors[fam]}") for h, e, fam in cols if e is None and fam in errors]


def native_table(report: Report, style, table) -> RenderableType:
    """`CPU offload: …`: the title with the budget, then the columns' figures (or the selected release's start-up
    failure)."""
    off = offload_of(report)
    f = off.block_size_factor
    title = (f"CPU offload: cpu_bytes_to_use = {_b(off.cpu_bytes_to_use)}, from {off.cpu_bytes_source!r}; "
             f"offloaded block {off.block_size} tokens ({f} GPU block{'s' if f > 1 else ''})")
    if off.startup_error:
        return Group(Text(title, style="bold"), Text(f"startup failure: {off.startup_error}", style="bold red"))
    cols = release_columns(report)
    t = table(style, title, "", *(c[0] for c in cols))
    _rows(report, t, cols)
    return Group(t, *refusals(report, cols), *_family_notes(cols))


def _rows(report: Report, t, cols) -> None:
    """Every figure of every column, one row each (per PP stage where the stages differ)."""
    off = offload_of(report)
    live = [c for c in cols if c[1] is not None]

    def row(label: str, get) -> None:
        t.add_row(label, *(_n(get(e)) if e is not None else "—" for _, e, _ in cols))

    stages = range(len(live[0][1].num_blocks_workers)) if live else range(0)
    many = len(stages) > 1  # PP > 1: one row per stage; else the workers are alike

    def each(what: str, i: int, one: str = "workers") -> str:
        return f"{what}, stage {i} {one}" if many else f"{what}, {one}"

    row("bytes per CPU block/chunk, scheduler", lambda e: e.aligned_bytes)
    for i in stages:
        row(each("bytes per CPU block/chunk", i), lambda e, i=i: e.kv_bytes_per_block_workers[i]
            * e.block_size_factor)
    t.add_row("copies of each block (one per worker; 1: stored once)", *(str(e.copies) if e else "—"
                                                                          for _, e, _ in cols))
    row("CPU blocks/chunks, scheduler", lambda e: e.num_blocks_scheduler)
    for i in stages:
        row(each("CPU blocks/chunks", i), lambda e, i=i: e.num_blocks_workers[i])
    row("chunks per max_model_len request", lambda e: e.capacity.chunks_per_request.total
        if e.capacity.chunks_per_request else None)
    row("CPU tokens, scheduler's count", lambda e: e.cpu_tokens_scheduler)
    row("CPU tokens every worker holds", lambda e: e.cpu_tokens_safe)
    for i in stages:
        row(each("host bytes pinned", i, "one worker"), lambda e, i=i: e.pinned_bytes_per_worker[i])
    row("host bytes pinned, engine", lambda e: e.pinned_bytes_per_engine)
    row("budget unused (bytes)", lambda e: e.unused_bytes)
    row("host bytes resident, engine", lambda e: e.host.resident_bytes_per_engine)
    row("host bytes resident, node", lambda e: e.host.resident_bytes_per_node)
    row("/dev/shm needed, node", lambda e: e.host.shm_bytes_per_node)
    dp = report.parallel.data_parallel_size
    if dp > 1:
        row(f"host bytes pinned, {dp} DP replicas", lambda e: e.pinned_bytes_all_replicas)
    if live and len(live) >= 2:
        base = off.fixed or live[-1][1]
        t.add_row("worst worker's CPU blocks ÷ the fixed column's", *(
            _ratio(min(e.num_blocks_workers), min(base.num_blocks_workers)) if e else "—" for _, e, _ in cols))

    def oob(e: FamilyEntry | None) -> str:
        if e is None:
            return "refused (below)"
        ids = e.out_of_bounds_ids
        return f"YES ids {ids.first:,}–{ids.last:,}" if ids else "no"

    t.add_row("out-of-bounds CPU stores", *(oob(e) for _, e, _ in cols))


def _family_notes(cols) -> list[Text]:
    """Under the table: what each column pins, how its release lays the model out (when not as the selected one),
    its host memory."""
    parts = [Text("; ".join(f"{fam}: pins {format_bytes(e.pinned_bytes_per_engine)}, "
                            f"{format_bytes(e.unused_bytes)} unused" for _, e, fam in cols if e))]
    for _, e, fam in cols:
        if e and e.note:
            parts.append(Text(f"{fam}: {e.note}"))
        if e and e.host.note:
            parts.append(Text(f"{fam} host memory: {e.host.note}"))
    return parts


def _ratio(a: int, b: int) -> str:
    if b == 0:
        return "—"
    return f"{a / b:.4f}" if a < b else f"{a / b:.3f}"


