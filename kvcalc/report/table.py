"""Report -> rich renderables for people. Never prints; the CLI owns the console. No module state: every
function takes the report records and a `Style`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from ..vocab.errors import known
from ..vocab.records import record
from .fit import FitTable
from .report import collapse_layers
from .sections import Report
from .verdict import gib
from .table_offload import native_table, refusals, release_columns
from ..vocab.units import exact_bytes, format_bytes

if TYPE_CHECKING:
    from .optional import BackendEntry, LMCacheSection, PlannedRelease, RefusedRelease


@record
class Style:
    """How to draw: plain = no box characters and no colour (stdout not a terminal, or NO_COLOR)."""

    plain: bool = False

    @property
    def box(self):
        return None if self.plain else box.SIMPLE_HEAD

    @property
    def fill(self) -> str:
        return "#" if self.plain else "█"

    @property
    def empty(self) -> str:
        return "." if self.plain else " "


_b = exact_bytes  # '68,719,476,736 B (64 GiB)'; '—' for None


def _n(n: int | None) -> str:
    return "—" if n is None else f"{n:,}"


def _table(style: Style, title: str, *columns: str, header: bool = True, by: str | None = None) -> FitTable:
    """A table that never cuts a number (report/fit.py); `by`: how it goes vertical when the width is too small
    (default: one block per column when the first column is an unnamed label column, else one per row)."""
    if by is None:
        by = "column" if header and len(columns) > 2 and columns[0] == "" else "row"
    t = FitTable(title=title, title_justify="left", box=style.box, show_edge=False, by=by,
                 pad_edge=False, show_header=header, title_style="bold")
    for c in columns:
        t.add_column(c, overflow="fold")
    return t


TENSOR_ROWS = 12  # per stage: a model with a different page on every layer would print one row per layer


def _runs(tensors) -> list[tuple[int, int | None, list[str]]]:
    """Consecutive tensors of one size (page, when sizes are unknown) -> (count, size, layers sharing them)."""
    runs: list[tuple[int, int | None, list[str]]] = []
    last = None
    for t in tensors:
        key = (t.size, t.page_bytes)
        if runs and key == last:
            count, size, names = runs[-1]
            runs[-1] = (count + 1, size, names + t.shared_by)
        else:
            runs.append((1, t.size, list(t.shared_by)))
        last = key
    return runs


def render_summary(report: Report, style: Style = Style()) -> list[RenderableType]:
    """The first screen (plan --summary): the heading, the Summary, the GPU lines, the Verdict, the Checks."""
    m, par = report.model, report.parallel
    head = Text()
    head.append(f"{m.name}", style="bold")
    head.append(f" — vLLM {report.vllm_version} ({_release_from(report.vllm_version_from)}; family "
                f"{report.family}) — "
                f"TP {par.tensor_parallel_size} × PP {par.pipeline_parallel_size} "
                f"(world {par.world_size}), DP {par.data_parallel_size}")
    out: list[RenderableType] = [head, gpu_headline(report), *summary(report, style)]
    if report.checks is not None:
        out.append(checks_table(report.checks, style))
    return out


def gpu_headline(report: Report) -> Text:
    """The first answer (issue 35): the GPU KV tokens and the requests of max_model_len they hold at once (vLLM's
    "Maximum concurrency"), as the release logs them; what to give when the block count is unknown."""
    g, mml = report.gpu, report.cache.max_model_len
    if g.num_blocks is None:
        return Text("GPU KV cache: not computed: give --gpu NAME (or --gpu-total-memory) to predict the budget, or "
                    "--kv-cache-memory")
    if g.kv_cache_size_tokens is None:
        return Text(f"GPU KV cache: {g.num_blocks:,} blocks (no attention layers: no token count)")
    return Text(f"GPU KV cache: {g.kv_cache_size_tokens:,} tokens ({g.num_blocks:,} blocks) = "
                f"{g.max_concurrency:,.2f} × max_model_len {mml:,}")


def render(report: Report, style: Style = Style()) -> list[RenderableType]:
    """The plan for people: the first screen (render_summary), then the detail."""
    out = render_summary(report, style)
    out += [_layout_table(report, style),
                                 _fields_table(report, style), _groups_table(report, style)]
    out += [_tensor_table(report, w, style) for w in report.gpu.workers]
    g = _table(style, f"GPU (what vLLM {report.vllm_version} logs at start-up: rule {report.gpu.log_family})", "", "",
               header=False)
    g.add_row("num_gpu_blocks", _n(report.gpu.num_blocks))
    for line in report.gpu.log_lines:
        g.add_row("log", line)
    out += [g, _offload_table(report, style)]
    if report.offload is not None and report.offload.backends:
        out.append(_backends_table(report.offload.backends, style))
    bars = memory_bars(report, style)
    if bars is not None:
        out.append(bars)
    return out


CHECK_STATUS = {"pass": "passed", "fail": "FAILED", "unknown": "NOT EVALUATED", "skipped": "skipped"}


def checks_table(checks, style: Style) -> Table:
    """--check: every gate, its status, and the limit it compared against with where it came from and the margin."""
    t = _table(style, "Checks (--check; each gate's reason is on stderr)", "gate", "status", "needs", "limit",
               "margin", "limit from")
    for c in checks:
        fmt = _signed_bytes if c.name in BYTE_GATES else _n
        t.add_row(c.name, CHECK_STATUS[c.status], fmt(c.need), fmt(c.limit), fmt(c.margin), c.limit_from or "—")
    return t


BYTE_GATES = ("host_memory", "shm")


def _signed_bytes(n: int | None) -> str:
    """A gate's bytes in binary units (the exact count is in the JSON); a negative margin keeps its sign."""
    return "—" if n is None else ("-" + format_bytes(-n) if n < 0 else format_bytes(n))


def _release_from(source: str) -> str:
    return "assumed: no release named" if source == "default" else f"from {source}"


def _kinds(report: Report) -> str:
    return ", ".join(f"{n} {k}" for k, n in report.model.layer_kinds.items())


def _layout_table(report: Report, style: Style) -> Table:
    m, cache, gpu = report.model, report.cache, report.gpu
    draft = (f" + {m.draft.num_layers} {m.draft.method} draft layer(s)" if m.draft.num_layers else
             f" + {m.draft.method} drafting (no draft layers)") if m.draft else ""
    lay = _table(style, "Layout", "", "", header=False)
    lay.add_row("layers", f"{m.num_layers}: {_kinds(report)}{draft}")
    lay.add_row("dtype / KV dtype", f"{m.dtype} / {cache.kv_cache_dtype}")
    lay.add_row("block size", f"{gpu.attention_block_size} tokens" + (
        f" (Mamba {cache.mamba_block_size}, mode {cache.mamba_cache_mode})" if cache.mamba_cache_mode else ""))
    att = gpu.attention
    for c in att.choices if att is not None else ():
        lay.add_row("attention backend", f"{c.backend} ({c.layers}): {c.why}")
    if att is not None and att.choices:
        lay.add_row("GPU class", att.gpu_class_basis)
    if cache.kv_cache_memory is not None:
        memory = ", ".join(_b(x) for x in cache.kv_cache_memory)
    elif cache.num_gpu_blocks_override is not None:
        memory = f"not given (num_gpu_blocks_override {cache.num_gpu_blocks_override:,})"
    elif report.gpu.memory is not None and report.gpu.memory.kv_cache_bytes is not None:
        memory = f"predicted: {_b(report.gpu.memory.kv_cache_bytes)} (the GPU line above; JSON gpu.memory)"
    else:
        memory = "not given: GPU block count unknown (--kv-cache-memory)"
    lay.add_row("KV memory per GPU", memory)
    lay.add_row("max_model_len", f"{cache.max_model_len:,} tokens")
    lay.add_row("prefix caching", "on" if cache.enable_prefix_caching else "off")
    lay.add_row("hybrid KV cache manager", cache.hybrid_kv_cache_manager_reason)
    return lay


def _fields_table(report: Report, style: Style) -> Table:
    fields = _table(style, "Model fields (what each number rests on)", "field", "value", "from")
    fields.add_row("layer kinds", _kinds(report), report.model.layer_kinds_from)
    for f in report.model.fields:
        value = f.value
        text = ", ".join(map(str, value)) if isinstance(value, list) else str(value)
        if f.field_ == "num_kv_heads":
            text += f" (model total; TP {report.parallel.tensor_parallel_size})"
        fields.add_row(f.field_, text, f.from_)
    return fields


def _groups_table(report: Report, style: Style) -> Table:
    groups = _table(style, f"KV cache groups ({report.gpu.grouping})", "#", "kind", "block", "page", "layers")
    for i, g in enumerate(report.gpu.groups):
        kind = g.kind
        if g.member_kinds:
            kind += " [" + " + ".join(g.member_kinds) + "]"
        groups.add_row(str(i), kind, str(g.block_size), _b(g.page_size_bytes),
                       f"{len(g.layers)}: {collapse_layers(g.layers)}")
    return groups


def _tensor_table(report: Report, w, style: Style) -> Table:
    tp = report.parallel.tensor_parallel_size
    where = f"on each of the {tp} TP ranks" if tp > 1 else "on the GPU"
    stage = f", PP stage {w.pp_rank}" if report.parallel.pipeline_parallel_size > 1 else ""
    title = (f"KV cache tensors{stage} (decoder layers {w.decoder_layers[0]}–{w.decoder_layers[1] - 1}; {where})")
    tt = _table(style, title, "tensors", "size each", "shared by")
    runs = _runs(w.tensors)
    for count, size, names in runs[:TENSOR_ROWS]:
        tt.add_row(f"{count} ×", _b(size), collapse_layers(names))
    if len(runs) > TENSOR_ROWS:
        rest = runs[TENSOR_ROWS:]
        tt.add_row(f"{sum(c for c, _, _ in rest)} ×", "…", f"{len(rest)} more row(s) of other sizes (the JSON "
                                                          "lists every tensor)")
    tt.add_row("total", _b(w.total_bytes),
               f"{_n(w.num_blocks)} blocks × {w.bytes_per_block:,} B per block"
               + (f" (this stage alone: {w.num_blocks_before_min:,})"
                  if w.num_blocks_before_min != w.num_blocks else ""))
    return tt


def summary(report: Report, style: Style) -> list[RenderableType]:
    """The first screen (<= 20 lines at 80 columns): per release column the CPU counts, the tokens held, the host
    memory resident and /dev/shm in GiB (exact bytes: the JSON and the offload table), the out-of-bounds answer,
    then the verdict; the detail follows."""
    off = report.offload
    out: list[RenderableType] = []
    if off is not None and off.cpu_bytes_to_use is not None and not off.startup_error and off.simple is None:
        cols = release_columns(report)
        t = _table(style, f"Summary: {gib(off.cpu_bytes_to_use)} CPU budget per engine", "", *(c[0] for c in cols))

        def row(label: str, get, fmt=_n) -> None:
            t.add_row(label, *(fmt(get(e)) if e is not None else "—" for _, e, _ in cols))

        row("CPU blocks/chunks, scheduler", lambda e: e.num_blocks_scheduler)
        row("CPU blocks/chunks, worst worker", lambda e: min(e.num_blocks_workers))
        row("CPU tokens held (every worker)", lambda e: e.cpu_tokens_safe)
        row("host memory resident, node", lambda e: e.host.resident_bytes_per_node, gib)
        row("/dev/shm region, node", lambda e: e.host.shm_bytes_per_node, lambda b: gib(b) if b else "none")
        red = "" if style.plain else "bold red"
        t.add_row("out of bounds", *((Text("YES", style=red) if e.out_of_bounds else "no") if e else "refused (below)"
                                     for _, e, _ in cols))
        out += [t, *refusals(report, cols)]
    out += gpu_memory_lines(report)
    text = report.verdict
    unsafe = "UNSAFE" in text or "would not start" in text or "WOULD NOT START" in text
    out.append(Text(text, style="" if style.plain else ("bold red" if unsafe else "bold green")))
    return out


def _gib(b: int) -> str:
    return f"{b / (1 << 30):.2f}"


def gpu_memory_lines(report: Report, width: int = 40) -> list[RenderableType]:
    """One line per GPU (each PP stage's ranks alike): a bar of the device, W weights, A peak activation, N non-torch,
    G CUDA graphs, K the KV budget, . what vLLM does not request; then the figures in GiB. Letters, not colours."""
    m = report.gpu.memory
    if m is None or not m.workers:
        if m is not None and m.kv_cache_bytes is not None:
            return [Text(f"GPU KV budget: {_gib(m.kv_cache_bytes)} GiB per GPU (--kv-cache-memory)")]
        return []
    # Per-stage figures: a predicted budget, whose terms are all known.
    total, requested, kv = known(m.total_bytes), known(m.requested_bytes), known(m.kv_cache_bytes)
    out: list[RenderableType] = []
    for w in m.workers:
        parts = [("W", w.weights_bytes), ("A", w.activation_peak_bytes), ("N", w.non_torch_bytes),
                 ("G", w.cudagraph_bytes), ("K", max(w.kv_cache_bytes, 0)),
                 (".", max(total - requested, 0))]
        bar = "".join(ch * (b * width // total) for ch, b in parts)[:width].ljust(width, ".")
        stage = f"stage {w.pp_rank} " if len(m.workers) > 1 else ""
        out.append(Text(f"GPU {stage}[{bar}] {_gib(total)} GiB: W {_gib(w.weights_bytes)} + A "
                        f"{_gib(w.activation_peak_bytes)} + N {_gib(w.non_torch_bytes)} + G {_gib(w.cudagraph_bytes)}"
                        f" + KV {_gib(w.kv_cache_bytes)} + free {_gib(total - requested)}"))
    out.append(Text(f"KV budget predicted for vLLM {report.vllm_version} (budget formula {m.family}, "
                    f"utilization {m.utilization}): "
                    f"{_gib(kv)} GiB per GPU; weights {_basis(m, 'weights')}, activation/graphs estimates "
                    "(JSON gpu.memory.terms)"))
    return out


def _basis(memory, term: str) -> str:
    """A term's basis word as the JSON's gpu.memory.terms gives it (one word for it everywhere: issue 35)."""
    return next((t.basis for t in memory.terms if t.name == term), "unknown")


def memory_bars(report: Report, style: Style = Style(), width: int = 40) -> RenderableType | None:
    """A bar per memory tier of one engine: GPU KV cache, CPU resident, CPU budget unused (selected release)."""
    off, gpu = report.offload, report.gpu
    if off is None or off.selected is None:
        return None
    sel = off.selected
    world = report.parallel.world_size
    # With a block count every stage's bytes are known (a stage's total_bytes is null only without one).
    gpu_bytes = sum(w.total_bytes or 0 for w in gpu.workers) * report.parallel.tensor_parallel_size \
        if gpu.num_blocks is not None else None
    tiers = [("GPU KV cache (engine)", gpu_bytes), ("CPU resident", sel.host.resident_bytes_per_engine),
             ("CPU budget unused", max(sel.unused_bytes, 0))]
    top = max((b for _, b in tiers if b), default=0)
    if top == 0:
        return None
    t = _table(style, f"Memory tiers, one engine ({world} worker(s))", "", "", "", header=False)
    for label, b in tiers:
        if b is None:
            t.add_row(label, "unknown (no KV memory given)", "")
            continue
        n = (b * width + top - 1) // top if b else 0  # ceiling: a non-zero tier shows at least one cell
        t.add_row(label, (style.fill * n).ljust(width, style.empty), format_bytes(b))
    return t


def _lmcache_table(report: Report, lc: LMCacheSection, style: Style) -> RenderableType:
    head = (f"CPU offload through LMCache {lc.lmcache_version} ({lc.connector}): chunk {lc.chunk_size} tokens, "
            f"max_local_cpu_size {lc.max_local_cpu_size:g} GiB per rank")
    storing = known(lc.storing_ranks, "a pool's storing ranks")  # null only in no report of this table
    t = _table(style, head, "", *(f"stage {st.pp_rank}" for st in lc.stages))

    def row(label: str, get) -> None:
        t.add_row(label, *(get(st) for st in lc.stages))

    row("layers in a chunk (+ drafter)", lambda st: f"{st.num_layers}" + (f" + {st.draft_layers}" if st.draft_layers
                                                                           else ""))
    row("K/V × heads × head size × bytes", lambda st: f"{st.kv_size} × {st.num_kv_heads} × {st.head_size} × "
                                                    f"{st.dtype_bytes}")
    row("bytes per chunk (aligned)", lambda st: f"{st.chunk_bytes:,} ({st.chunk_bytes_aligned:,})")
    row("storing ranks", lambda st: str(st.storing_ranks))
    row("chunks per storing rank", lambda st: _n(st.chunks_per_rank))
    row("tokens per storing rank", lambda st: _n(st.tokens_per_rank))
    e = _table(style, "LMCache, one engine", "", "", header=False)
    ranks = report.parallel.tensor_parallel_size * report.parallel.pipeline_parallel_size
    e.add_row("storing ranks", f"{storing} of {ranks}"
              + (" (save_only_first_rank: MLA stored once)" if lc.save_only_first_rank else ""))
    if lc.first_rank is None or storing > 1:
        e.add_row("pool per storing rank" + (" (not rank 0)" if lc.first_rank else ""),
                  _b(lc.pool_bytes_per_storing_rank))
    if lc.first_rank is not None:
        e.add_row("pool of rank 0", f"{_b(lc.first_rank.pool_bytes)}: {lc.first_rank.chunks:,} chunks, "
                                    f"{lc.first_rank.tokens:,} tokens")
    e.add_row("pool, engine", _b(lc.pool_bytes_per_engine))
    e.add_row("host bytes resident, engine", _b(lc.resident_bytes_per_engine))
    e.add_row("host bytes resident, node", _b(lc.resident_bytes_per_node))
    e.add_row("CPU tokens held (every stage)", _n(lc.tokens_per_engine))
    if lc.disk_bytes_per_rank:
        e.add_row("local disk per storing rank", f"{_b(lc.disk_bytes_per_rank)}: {lc.disk_chunks_per_rank:,} chunks")
    if lc.vllm_flag is not None:
        e.add_row("from vLLM's flag", f"--kv-offloading-size {lc.vllm_flag.kv_offloading_size:g} -> "
                                      f"max_local_cpu_size {lc.vllm_flag.max_local_cpu_size:g} per rank")
    return Group(t, e)


def _backends_table(entries: list[BackendEntry], style: Style) -> RenderableType:
    t = _table(style, "Backends, the same host budget", "", *(e.backend for e in entries))
    t.add_row("pool, engine", *(_b(e.pool_bytes_per_engine) for e in entries))
    t.add_row("resident, engine", *(_b(e.resident_bytes_per_engine) for e in entries))
    t.add_row("resident, node", *(_b(e.resident_bytes_per_node) for e in entries))
    t.add_row("bytes per CPU block/chunk", *(_n(e.unit_bytes) for e in entries))
    t.add_row("tokens per CPU block/chunk", *(_n(e.tokens_per_unit) for e in entries))
    t.add_row("CPU tokens held", *(_n(e.tokens) for e in entries))
    t.add_row("starts", *("yes" if e.startup_error is None else f"no: {e.startup_error}" for e in entries))
    return t


def _offload_table(report: Report, style: Style) -> RenderableType:
    off = report.offload
    if off is None:
        return Text(f"CPU offload: none ({report.offload_reason})", style="bold")
    if off.lmcache is not None:
        return _lmcache_table(report, off.lmcache, style)
    if off.simple is not None:
        from .table_simple import simple_table  # that backend's reports only

        return simple_table(off, off.simple, style, _table)
    if off.lmcache_mp is not None:
        from .table_lmcache_mp import lmcache_mp_table  # that backend's reports only

        return lmcache_mp_table(off.lmcache_mp, style, _table)
    if off.cpu_bytes_to_use is None:
        return Text("CPU offload: no CPU budget given (--cpu-bytes or --kv-offloading-size): no CPU counts",
                    style="bold")
    return native_table(report, style, _table)


def render_comparison(rels: list[PlannedRelease | RefusedRelease], style: Style = Style()) -> RenderableType:
    """--compare-versions: one column per release."""
    t = _table(style, "The same layout, release by release", "", *(r.vllm_version for r in rels))

    def row(label: str, get) -> None:
        t.add_row(label, *(get(r) for r in rels))

    def off(key: str, fmt=_n):
        return lambda r: fmt(getattr(r.offload, key)) if r.offload else "—"

    row("family", lambda r: r.family or "refused")
    row("hybrid KV cache manager", lambda r: "—" if r.family is None else ("on" if r.hybrid_kv_cache_manager
                                                                           else "off"))
    row("groups", lambda r: "—" if r.family is None else f"{r.num_groups} ({r.grouping})")
    row("GPU blocks", lambda r: "—" if r.family is None else _n(r.gpu_num_blocks))
    row("logged KV cache tokens", lambda r: "—" if r.family is None else _n(r.kv_cache_size_tokens))
    row("CPU blocks/chunks, scheduler", off("num_blocks_scheduler"))
    row("CPU blocks/chunks, worst worker", lambda r: _n(min(r.offload.num_blocks_workers)) if r.offload else "—")
    row("copies of each block", off("copies"))
    row("bytes per block/chunk (aligned)", off("aligned_bytes"))
    row("CPU tokens every worker holds", off("cpu_tokens_safe"))
    row("budget unused (bytes)", off("unused_bytes"))
    row("out of bounds", lambda r: ("YES" if r.offload.out_of_bounds else "no") if r.offload else
        "fails at startup" if r.startup_error or r.family is None else "—" if r.simple
        else "— (no CPU budget)")
    if any(r.simple for r in rels):  # SimpleCPUOffloadConnector's pool, release by release
        def sp(get):
            return lambda r: get(r.simple) if r.simple and not r.startup_error else "—"

        row("simple: CPU blocks, scheduler", sp(lambda s: _n(s.num_cpu_blocks_scheduler)))
        row("simple: CPU blocks, every rank", sp(lambda s: _n(s.num_cpu_blocks_per_rank)))
        row("simple: out of bounds", sp(lambda s: "YES" if s.out_of_bounds else "no"))
    notes = [Text(f"{r.vllm_version}: {r.startup_error}") for r in rels if r.startup_error]
    notes += [Text(f"{r.vllm_version}: {r.warning}") for r in rels if r.warning]
    return Group(t, *notes)


new_table = _table  # the size renderers' (report/table_size.py) way to the same table style
