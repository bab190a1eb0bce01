"""An SGLang report (engines/sglang/report.SglangReport) -> rich renderables for people: the GPU line, the token
pool, HiCache's host pool, the budget's terms and --compare-engines. Never prints; imported only for SGLang
reports and --compare-engines tables (start-up time is a target)."""

from __future__ import annotations

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from ...report.fit import FitTable
from ...vocab.units import exact_bytes, format_bytes

GIB, MIB = 1 << 30, 1 << 20


def _table(style, title: str, *columns: str, header: bool = True) -> Table:
    t = FitTable(title=title, title_justify="left", box=style.box, show_edge=False, pad_edge=False,
                 show_header=header, title_style="bold")  # a number is never cut (report/fit.py)
    for c in columns:
        t.add_column(c, overflow="fold")
    return t


def _n(n) -> str:
    return "—" if n is None else f"{n:,}"


def gpu_line(report, style, width: int = 40) -> Text:
    """`GPU [WWWWKKKK....] 79.65 GiB: W 14.99 + K 50.31 + slack 13.38 + used 0.97` per rank: nvidia-smi's
    capacity, the weights, the KV budget, the (1 - mem_fraction_static) slack SGLang leaves for activations and
    graphs, and what was in use before the load."""
    m = report.sglang.memory
    total = (m.capacity_mib or 0) * MIB or m.free_before_bytes
    weights = max(m.weights_bytes)
    slack = m.available_bytes - m.budget_bytes
    used = total - m.free_before_bytes
    parts = [("W", weights), ("K", m.budget_bytes), ("S", slack), ("U", used)]
    bar = "".join(letter * round(width * max(b, 0) / total) for letter, b in parts)[:width]
    bar += style.empty * (width - len(bar))
    return Text(f"GPU [{bar}] {total / GIB:.2f} GiB: W {weights / GIB:.2f} + KV {m.budget_bytes / GIB:.2f} + "
                f"slack {slack / GIB:.2f} + in use before load {used / GIB:.2f}")


def gpu_headline(report) -> Text:
    """The first answer (issue 35): the GPU KV tokens and how many context_length requests they hold at once
    (max_total_num_tokens / context_length; max_running_requests, in the token pool's table, caps the running
    requests besides)."""
    sg = report.sglang
    tokens, ctx = sg.max_total_num_tokens, sg.memory.context_length
    return Text(f"GPU KV cache: {tokens:,} tokens = {tokens / ctx:,.2f} × context_length {ctx:,}")


def render(report, style) -> list[RenderableType]:
    sg, par = report.sglang, report.parallel
    m, h = sg.memory, sg.hicache
    head = Text()
    head.append(report.model.name, style="bold")
    named = "assumed: no release named" if sg.version_from == "default" else "from " + sg.version_from
    head.append(f" — SGLang {sg.version} ({named}) — "
                f"TP {par.tensor_parallel_size} × PP {par.pipeline_parallel_size}, DP {par.data_parallel_size}")
    out: list[RenderableType] = [head, gpu_headline(report), gpu_line(report, style)]
    t = _table(style, "GPU token pool (SGLang)", "", "", header=False)
    how = "SGLang's default" if sg.mem_fraction_static_default else "the flag"
    if m.aiter_factor is not None:
        how += f" x {m.aiter_factor}: the aiter backend with a context over 8,192 (attention_hook.py:243-269)"
    t.add_row("mem_fraction_static", f"{sg.mem_fraction_static} ({how}); below {sg.min_mem_fraction_static:.4f} "
                                     "SGLang refuses to start")
    if m.reserve is not None:
        r = m.reserve
        d, p = r.decode_graphs, r.prefill_graphs
        t.add_row("its reserve", f"{r.reserved_mib:,.0f} MiB of {m.capacity_mib:,} MiB (activations "
                                 f"{r.activation_tokens:,} tokens, chunked prefill {r.chunked_prefill_size:,})")
        t.add_row("decode graphs", f"{d.backend} ({d.backend_from}): {d.capture_sizes} sizes to {d.max_bs}")
        t.add_row("prefill graphs", f"{p.backend} ({p.backend_from}): {p.capture_sizes} sizes to {p.max_bs:,}")
    t.add_row("free before load", f"{exact_bytes(m.free_before_bytes)} ({m.free_before_basis})")
    t.add_row("weights per rank", ", ".join(format_bytes(w) for w in m.weights_bytes) + f" ({m.weights_basis})")
    t.add_row("KV budget per rank", exact_bytes(m.budget_bytes))
    if m.dsv4 is not None:  # DSV4PoolConfigurator's coefficient (engines/sglang/dsv4.py)
        d = m.dsv4
        t.add_row("bytes per token", f"{d.bytes_per_full_token:,.2f} = {d.swa_ratio} x {d.bytes_per_swa_token:,.2f} "
                                     f"SWA slot + the compressed pools ({d.c4_layers} c4, {d.c128_layers} c128 "
                                     f"layers); c128 state {format_bytes(d.fixed_bytes)} first")
    else:
        t.add_row("bytes per token", "; ".join(
            f"stage {c.pp_rank}: {c.full:,}" + (f" + {c.swa:,} SWA" if c.swa else "") for c in sg.cell_size_bytes))
    t.add_row("max_total_num_tokens", f"{sg.max_total_num_tokens:,} ({sg.kind}, page {sg.page_size}, backend "
                                      f"{m.attention_backend})")
    if m.swa_max_total_num_tokens is not None:
        t.add_row("SWA pool tokens", _n(m.swa_max_total_num_tokens))
    t.add_row("max_running_requests", _n(m.max_running_requests))
    for line in m.log_lines:
        t.add_row("log", line)
    out.append(t)
    out.append(hicache_table(h, style))
    if report.engines is not None:
        from ...report.table_engines import engines_table

        out.append(engines_table(report.engines, style))
    out.append(Text(report.verdict, style="" if style.plain else "bold green"))
    return out


def render_summary(report, style) -> list[RenderableType]:
    """plan --summary on an SGLang plan: the title, the GPU KV cache line, the GPU bar and the Verdict (render's
    first three and last lines)."""
    full = render(report, style)
    return full[:3] + full[-1:]


def hicache_table(h, style) -> Table:
    t = _table(style, "HiCache host pool (per rank)", "", "", header=False)
    if not h.enabled:
        t.add_row("HiCache", "off (--enable-hierarchical-cache)")
        return t
    how = f"--hicache-size {h.size_gb} GB (decimal)" if h.size_gb else f"ratio {h.ratio:g} ({h.ratio_from})"
    t.add_row("sized by", how)
    t.add_row("layout / io", f"{h.layout} / {h.io_backend} ({h.host_memory_mode})")
    for p in h.pools:
        t.add_row(f"{p.pool} pool", f"{p.size_tokens:,} tokens x {p.bytes_per_token:,} B = {exact_bytes(p.bytes)} "
                                    f"(device {p.device_tokens:,})")
    t.add_row("per rank / engine / node", f"{format_bytes(h.bytes_per_rank)} / {format_bytes(h.bytes_per_engine)} / "
                                          f"{format_bytes(h.bytes_per_node)}")
    t.add_row("guard per rank", "— (--host-available)" if h.guard_bytes_per_rank is None else
              f"{format_bytes(h.guard_bytes_per_rank)} ({h.ranks_per_host} rank(s) per host)")
    t.add_row("pinning", h.pinning)
    if h.storage_backend:
        t.add_row("L3 storage", f"{h.storage_backend} (sized by its own config)")
    return t


def gpu_size_text(doc: dict) -> str:
    """`kvcalc size --gpu-tokens N` for SGLang, in words."""
    if doc["refusal"]:
        return f"SGLang {doc['sglang_version']}: {doc['refusal']}\n"
    return (f"SGLang {doc['sglang_version']}: --mem-fraction-static {doc['mem_fraction_static']} holds "
            f"{doc['max_total_num_tokens']:,} tokens (target {doc['target_tokens']:,}; "
            f"context {doc['context_length']:,})\n")
