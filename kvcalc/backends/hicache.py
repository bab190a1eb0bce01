"""SGLang's HiCache (--enable-hierarchical-cache): the pinned host (L2) KV pool every rank allocates, as a `Pool`
(backends/base.py) the gates, sweep rows and --compare-engines read. Cited @0.5.23; what differs per release is in
vocab/releases/sglang.STEPS.

Per rank and per device pool (srt/mem_cache/pool_host/base.py:186-240 HostKVCache.__init__):
- tokens: with --hicache-size (decimal GB, whole numbers) `int(size x 1e9 // bytes_per_token)`, MIN over the PP
  stages (:111-150 sync_fixed_hicache_size); else `int(device tokens x ratio)`, the ratio multiplying TOKENS; then
  `page_num = tokens // page + 1` (one padding page) and tokens = page_num x page.
- bytes per token: MHA `(head_dim + v_head_dim) x heads x layers x itemsize` (pool_host/mha.py:289-295), MLA
  `kv_cache_dim x itemsize x layers` (pool_host/mla.py:195-197): the device pool's cell. The layouts permute
  dimensions without changing bytes on CUDA; MHA refuses page_first_kv_split (mha.py:339), MLA page_head
  (mla.py:430).
- hybrid SWA: a host pool per device pool; a fixed --hicache-size is split in proportion to the device pools' bytes
  from 0.5.17 (srt/mem_cache/hybrid_cache/hybrid_pool_assembler.py:239-255), given whole to each before.
- the guard (:82-108, :246-258): requested bytes against (psutil available - 10 GiB) // ranks per host (TP x PP //
  nnodes), "Not enough host memory available. Requesting X GB but only have Y GB free."; auto-size (0.5.21+,
  srt/mem_cache/hicache_auto_size.py:83-125) when neither ratio nor size is given.
- pinning (srt/mem_cache/pool_host/common.py:330-350 alloc_with_host_register): torch.empty + cudaHostRegister in
  chunks: resident = requested, no power-of-two rounding (unlike vLLM's private pinned tensors), no /dev/shm region.
  Every rank holds its own copy (MLA latents too: srt/mem_cache/mla_host_dedup.py serves only the Mooncake linker,
  which excludes HiCache, arg_groups/hicache_hook.py:39-54).
"""

from __future__ import annotations

import math

from typing import TYPE_CHECKING

from ..vocab.errors import StartupRefusal, known
from ..vocab.records import field, record
from ..vocab.releases.sglang import sglang_of
from ..vocab.units import format_bytes
from .base import Pool, node_peak

if TYPE_CHECKING:
    from ..engines.sglang import SglangStage
    from ..vocab.layout import Layout

RESERVE = 10 << 30  # pool_host/base.py:28 HICACHE_HOST_MEMORY_RESERVE_BYTES
SLACK = 0.05  # hicache_auto_size.py:33 _ALLOCATION_SLACK_FRACTION
PINNING = ("torch.empty + cudaHostRegister (srt/mem_cache/pool_host/common.py alloc_with_host_register): resident = "
           "requested, no power-of-two rounding")


@record
class HostPool:
    """One host pool of one rank (the binding PP stage's bytes)."""

    pool: str = field("full | swa | mla (the device pool it mirrors)")
    device_tokens: int = field("the device pool's tokens (what the ratio multiplies)")
    bytes_per_token: int = field("host bytes one token takes (the device pool's cell)")
    size_gb_share: float | None = field("--hicache-size GB this pool gets (split by device bytes from 0.5.17)")
    size_tokens: int = field("host tokens, padding page included")
    bytes: int = field("size_tokens x bytes_per_token")


@record
class HiCacheSection:
    """The JSON sglang.hicache: what the host tier holds and pins."""

    enabled: bool = field("--enable-hierarchical-cache")
    layout: str | None = field("--hicache-mem-layout as SGLang resolves it (direct I/O turns page_first into "
                               "page_first_direct; the kernel backend the reverse)")
    io_backend: str | None = field("--hicache-io-backend as resolved")
    host_memory_mode: str | None = field("cache | buffer_only")
    ratio: float | None = field("host tokens per device token used (null with --hicache-size)")
    ratio_from: str | None = field("--hicache-ratio | default | auto-size | --hicache-size")
    size_gb: int | None = field("--hicache-size, decimal GB per rank")
    size_tokens_per_rank: int | None = field("the first pool's host tokens (every PP stage alike)")
    bytes_per_rank: int | None = field("every host pool of the binding rank")
    bytes_per_stage: tuple[int, ...] = field("per PP stage: one rank's host bytes")
    bytes_per_engine: int | None = field("every rank of one engine (TP x PP copies: no deduplication)")
    bytes_per_node: int | None = field("the node with the most: its ranks x the engines (DP replicas) it holds")
    pools: tuple[HostPool, ...] = field("per device pool")
    guard_bytes_per_rank: int | None = field("what one rank may claim: (host available - 10 GiB) // ranks per host "
                                             "(0.5.19+; the whole host before); null without --host-available")
    ranks_per_host: int = field("TP x PP // nnodes: what SGLang divides the host by")
    pinning: str = field("how the pages are pinned")
    storage_backend: str | None = field("--hicache-storage-backend: an L3 tier, sized by its own config")


def _layout(h) -> tuple[str, str]:
    """(layout, io backend) after arg_groups/hicache_hook.py:171-225 @0.5.23 resolve_layout_io_compatibility and
    resolve_storage_layout_compatibility."""
    layout, io = h.mem_layout, h.io_backend
    if layout == "page_first_direct" and io == "kernel":
        io = "direct"
    if layout == "page_first" and io == "direct":
        layout = "page_first_direct"
    if h.storage_backend == "mooncake" and layout == "layer_first":
        layout = "page_first_direct" if io == "direct" else "page_first"
    return layout, io


def layout_refusal(mem_layout: str, kind: str, version: str) -> str | None:
    """What SGLang says building the host pool with this --hicache-mem-layout (after _layout), or None: it builds.
    Executed at 0.5.23 (a real small device pool and SGLang's own host pool per layout, hostlayout23.py): MHA has no
    page_first_kv_split (pool_host/mha.py:339, also the hybrid SWA pools'), MLA no page_head (pool_host/mla.py:430),
    and MLA's page_first_kv_split reads the NPU's split device buffers, None on CUDA (pool_host/mla.py:197-210,
    :355)."""
    if kind == "mla" and mem_layout == "page_first_kv_split":
        return (f"SGLang {version} crashes building the host pool: AttributeError: 'NoneType' object has no attribute "
                "'index_layer_indices' (srt/mem_cache/pool_host/mla.py:355 @0.5.23: page_first_kv_split reads the "
                "device pool's NPU split buffers, which a CUDA MLA pool does not have); use page_first or "
                "layer_first")
    if kind == "mla" and mem_layout == "page_head" or kind != "mla" and mem_layout == "page_first_kv_split":
        where = "mla.py:430" if kind == "mla" else "mha.py:339"
        return (f"ValueError: Unsupported layout: {mem_layout} (srt/mem_cache/pool_host/{where} @0.5.23, the "
                f"{'MLA' if kind == 'mla' else 'MHA'} host pool)")
    return None


def _device_pools(stage: SglangStage) -> list[tuple[str, int, tuple[int, ...]]]:
    """(pool, device tokens, bytes per token per PP stage)."""
    gpu, m = stage.gpu, stage.model
    if m.kind == "hybrid_swa":
        full, swa = known(gpu.full_max_total_num_tokens), known(gpu.swa_max_total_num_tokens)  # hybrid SWA: both
        return [("full", full, tuple(s.full_bytes for s in m.stages)),
                ("swa", swa, tuple(s.swa_bytes for s in m.stages))]
    return [("mla" if m.kind == "mla" else "full", gpu.max_total_num_tokens, tuple(s.full_bytes for s in m.stages))]


def _ratio(layout: Layout, stage: SglangStage, pools, page: int, guard: int | None) -> tuple[float | None, str]:
    """The ratio the pools are sized with, and where it came from (hicache_hook.py:100-126 defaults; auto-size)."""
    h, b = sglang_of(layout).hicache, stage.behaviour
    if h.size_gb > 0:
        return None, "--hicache-size"
    if h.ratio is not None:
        return h.ratio, "--hicache-ratio"
    default = 1.2 if h.host_memory_mode == "buffer_only" else 2.0
    if not b.auto_size or guard is None:
        return default, "default"
    device = sum((t + page) * max(per) for _, t, per in pools)  # hicache_auto_size.py:44-79: the pools' bytes
    budget = int(guard * h.host_memory_fraction)
    ratio = min(default, budget * (1 - SLACK) / device)
    if ratio <= 0:
        raise StartupRefusal("No host memory is left for HiCache after the 10 GiB reserve; "
                             "set --hicache-ratio or --hicache-size explicitly.")
    return ratio, "auto-size"


def host_tokens(device_tokens: int, bytes_per_token: tuple[int, ...], page: int, ratio: float | None,
                size_gb: float | None) -> int:
    """One host pool's tokens (pool_host/base.py:215-230 @0.5.23): `int(size x 1e9 // bytes per token)` MIN over the
    PP stages with --hicache-size, else `int(device tokens x ratio)`; then one padding page."""
    if size_gb:
        size = min(int(size_gb * 1e9 // p) for p in bytes_per_token if p)
    else:
        product = device_tokens * known(ratio, "the host ratio")  # without --hicache-size: sized by its ratio
        if not math.isfinite(product):
            # pool_host/base.py:226 @0.5.23 int(device_capacity_tokens * host_to_device_ratio) raises OverflowError
            raise StartupRefusal(f"--hicache-ratio {ratio:g} x {device_tokens:,} device tokens: OverflowError: cannot "
                                 "convert float infinity to integer (the host pool's size)")
        size = int(product)
    return (size // page + 1) * page


def host_memory(available: int | None, headroom: int | None, headroom_read: bool) -> int | None:
    """available_host_memory_bytes (srt/mem_cache/host_memory.py:136-161 @0.5.23): min(psutil's available, the
    container's cgroup headroom); before 0.5.21 psutil's alone (STEPS cgroup_headroom)."""
    if headroom is None or not headroom_read:
        return available
    return headroom if available is None else min(available, headroom)


def _cgroup_notes(sg, b) -> list[str]:
    """What kvcalc assumed of the host memory SGLang reads."""
    headroom = None if sg.host_cgroup is None else sg.host_cgroup.headroom(b.cgroup_cache_reclaimable)
    if headroom is None:
        return []
    if not b.cgroup_headroom:
        return [f"SGLang {b.version} reads psutil's available host memory alone, not the container's cgroup "
                "(srt/mem_cache/host_memory.py came in 0.5.21)"]
    notes = [f"the cgroup's headroom: {format_bytes(headroom)} (its limit less its usage"
             + (" without the reclaimable page cache)" if b.cgroup_cache_reclaimable else
                f"; SGLang {b.version} counts the page cache as used)")]
    if not sg.host_cgroup.usage:
        notes.append("the cgroup's usage at start-up is assumed 0 (give --host-cgroup-usage: memory.current)")
    if sg.host_available is None:
        notes.append("psutil's available host memory (--host-available) is assumed above the cgroup's headroom")
    return notes


def guard_bytes(available: int, ranks: int, per_rank: bool) -> int:
    """What one rank may pin (pool_host/base.py:82-108 @0.5.23; the whole host before 0.5.19, STEPS host_guard)."""
    return (available - RESERVE) // (ranks if per_rank else 1)


def guard_refusal(requested: int, guard: int) -> str | None:
    """SGLang's message when a pool asks for more (pool_host/base.py:246-258 @0.5.23)."""
    if requested <= guard:
        return None
    return (f"Not enough host memory available. Requesting {requested / 1e9:.2f} GB but only have {guard / 1e9:.2f} "
            f"GB free. Please reduce the size of the hierarchical cache.")


def split_size(size_gb: int, device_bytes: list[int], split: bool) -> list[float]:
    """--hicache-size GB per host pool: split in proportion to the device pools' bytes (0.5.17+,
    hybrid_pool_assembler.py:239-255 @0.5.23 _split_hicache_size), or the whole size to each (sglang#29034)."""
    if not split:
        return [float(size_gb)] * len(device_bytes)
    total = sum(device_bytes)
    return [size_gb * b / total for b in device_bytes]


def _sizes(layout: Layout, stage: SglangStage, pools, ratio: float | None, page: int) -> list[tuple]:
    """Per device pool: (name, device tokens, binding bytes/token, GB share, host tokens, bytes per stage)."""
    h, b = sglang_of(layout).hicache, stage.behaviour
    # The device pools' bytes as get_kv_size_bytes reports them: (tokens + one padding page) x bytes per token.
    shares = split_size(h.size_gb, [(t + page) * per[0] for _, t, per in pools], b.hicache_size_split)
    out = []
    for i, (name, tokens, per) in enumerate(pools):
        share = shares[i] if h.size_gb > 0 else None
        size = host_tokens(tokens, per, page, ratio, share)
        if size <= tokens and b.host_smaller_refused:
            raise StartupRefusal("The host memory should be larger than the device memory "
                                 f"with the current protocol ({name} pool: {size:,} host tokens, {tokens:,} device)")
        out.append((name, tokens, max(per), share, size, tuple(size * p for p in per)))
    return out


def hicache_section(layout: Layout, stage: SglangStage) -> tuple[HiCacheSection, tuple[str, ...]]:
    """The host tier of one engine, and its notes; SGLang's own start-up refusals raise StartupRefusal."""
    sg, par = sglang_of(layout), layout.parallel
    h, b, page = sg.hicache, stage.behaviour, stage.gpu.page_size
    ranks = max(par.tensor_parallel_size * par.pipeline_parallel_size // par.nnodes, 1)
    if not h.enabled:
        return HiCacheSection(enabled=False, layout=None, io_backend=None, host_memory_mode=None, ratio=None,
                              ratio_from=None, size_gb=None, size_tokens_per_rank=None, bytes_per_rank=None,
                              bytes_per_stage=(), bytes_per_engine=None, bytes_per_node=None, pools=(),
                              guard_bytes_per_rank=None, ranks_per_host=ranks, pinning=PINNING,
                              storage_backend=None), ()
    # DP attention's host pools are the base HostKVCache of each worker's device pool (executed at 0.5.23 through
    # hicache23.py: R1 / Llama-3.3-70B at TP 8 x DP 8, auto-size and --hicache-size); before 0.5.23 not executed.
    unexecuted = [w for w, on in (("a Mamba / GDN state pool", stage.gpu.mamba is not None),
                                  ("DP attention", stage.gpu.attn_dp_size > 1 and not b.deployment_pools),
                                  ("a speculative draft", any(c.draft for c in stage.gpu.cell_size_bytes)))
                  if on]
    if unexecuted:
        from ..vocab.errors import UnsupportedError

        raise UnsupportedError(f"{layout.source}: HiCache's host pools with {' and '.join(unexecuted)} are not "
                               "modelled for SGLang (srt/mem_cache/hybrid_cache/hybrid_pool_assembler.py sizes them; "
                               "not executed)")
    mem_layout, io = _layout(h)
    refusal = layout_refusal(mem_layout, stage.model.kind, b.version)
    if refusal:
        raise StartupRefusal(refusal)
    headroom = None if sg.host_cgroup is None else sg.host_cgroup.headroom(b.cgroup_cache_reclaimable)
    available = host_memory(sg.host_available, headroom, b.cgroup_headroom)
    guard = None if available is None else guard_bytes(available, ranks, b.guard_per_rank)
    pools = _device_pools(stage)
    ratio, ratio_from = _ratio(layout, stage, pools, page, guard)
    sized = _sizes(layout, stage, pools, ratio, page)
    per_stage = tuple(sum(s[5][i] for s in sized) for i in range(len(stage.model.stages)))
    for name, _, _, _, _, stage_bytes in sized:
        refusal = None if guard is None else guard_refusal(max(stage_bytes), guard)
        if refusal:
            raise StartupRefusal(f"{refusal} ({name} pool)")
    tp = par.tensor_parallel_size
    per_rank = [v for v in per_stage for _ in range(tp)]
    notes = [f"HiCache pins each rank's pool with {PINNING}; {len(per_rank)} ranks, each its own copy"]
    if h.storage_backend:
        notes.append(f"--hicache-storage-backend {h.storage_backend}: an L3 tier below the host pool, sized by its "
                     "own config (not modelled)")
    notes += _cgroup_notes(sg, b)
    if ratio_from == "default" and b.auto_size:
        notes.append("SGLang 0.5.21+ reduces the default ratio until the pools fit --hicache-host-memory-fraction of "
                     "the host: give --host-available to compute it (planned at the default ratio)")
    return HiCacheSection(
        enabled=True, layout=mem_layout, io_backend=io, host_memory_mode=h.host_memory_mode, ratio=ratio,
        ratio_from=ratio_from, size_gb=h.size_gb or None, size_tokens_per_rank=sized[0][4],
        bytes_per_rank=max(per_stage), bytes_per_stage=per_stage, bytes_per_engine=sum(per_rank),
        bytes_per_node=node_peak(per_rank, par.nnodes, par.engines_per_node),
        pools=tuple(HostPool(pool=n, device_tokens=t, bytes_per_token=bpt, size_gb_share=sh, size_tokens=sz,
                             bytes=max(sb)) for n, t, bpt, sh, sz, sb in sized),
        guard_bytes_per_rank=guard, ranks_per_host=ranks, pinning=PINNING,
        storage_backend=h.storage_backend), tuple(notes)


@record
class HiCachePool(Pool):
    """SGLang's host tier as every consumer reads it (backends/base.Pool)."""

    section: HiCacheSection
    behaviour_version: str
    gpu_tokens: int
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    backend = "hicache"
    connector = "SGLang's HiCache host pool"
    family = "hicache"
    startup_error = None
    not_modelled = None
    unit = "tokens"
    tokens_per_unit = 1
    tokens_holder = "each rank's HiCache pool holds"
    splits_scheduler = False
    out_of_bounds = None
    shm_bytes_per_engine = 0
    shm_bytes_per_node = 0
    unused_bytes = None
    kept = "pinned in place with cudaHostRegister (no power-of-two rounding)"
    shm_none = "HiCache pins torch.empty buffers with cudaHostRegister: no /dev/shm region"
    capacity = None

    @property
    def empty(self) -> bool:
        return not self.section.enabled

    @property
    def budget_bytes(self) -> int | None:
        return self.section.bytes_per_engine

    @property
    def units_scheduler(self) -> int | None:
        return self.section.size_tokens_per_rank

    units_worst = units_scheduler
    tokens = units_scheduler

    @property
    def unit_bytes(self) -> int | None:
        return sum(p.bytes_per_token for p in self.section.pools) or None

    @property
    def pool_bytes_per_engine(self) -> int | None:
        return self.section.bytes_per_engine

    resident_bytes_per_engine = pool_bytes_per_engine

    @property
    def resident_bytes_per_node(self) -> int | None:
        return self.section.bytes_per_node

    @property
    def stored(self) -> str:
        return "no host tier" if self.empty else f"{self.section.size_tokens_per_rank:,} host tokens per rank"

    nothing = "no host tier (HiCache off)"

    @property
    def verdict(self) -> str:
        s = self.section
        if not s.enabled:
            return (f"Verdict: SGLang {self.behaviour_version}: {self.gpu_tokens:,} GPU tokens, no host tier "
                    "(--enable-hierarchical-cache adds one).")
        return (f"Verdict: SGLang {self.behaviour_version}: {self.gpu_tokens:,} GPU tokens; HiCache holds "
                f"{s.size_tokens_per_rank:,} tokens per rank and pins {format_bytes(known(s.bytes_per_rank))} a rank, "
                f"{format_bytes(known(s.bytes_per_node))} on the busiest node.")


def _warnings(layout: Layout, stage: SglangStage, s: HiCacheSection) -> tuple[str, ...]:
    """SGLang's own sizing bugs and warnings where they touch this plan, each with its size here."""
    b, out = stage.behaviour, []
    if not s.enabled:
        return ()
    if s.size_gb and len(s.pools) > 1 and not b.hicache_size_split:
        out.append(f"SGLang {b.version} gives --hicache-size {s.size_gb} GB to each of its {len(s.pools)} host pools "
                   f"(sglang#29034, #32373; split by device bytes from 0.5.17): "
                   f"{known(s.bytes_per_rank) / 1e9:.2f} GB a rank, not {s.size_gb}")
    for p in s.pools:
        if p.size_tokens <= p.device_tokens:  # pool_host/base.py:231-240 @0.5.23, logged at start-up
            out.append(f"HiCache {p.pool} host pool ({p.size_tokens:,} tokens) is smaller than the device pool "
                       f"({p.device_tokens:,} tokens): L2 cache effectiveness is reduced (SGLang's own warning)")
    return tuple(out)


def hicache_pool(layout: Layout, stage: SglangStage) -> HiCachePool:
    section, notes = hicache_section(layout, stage)
    return HiCachePool(section=section, behaviour_version=stage.behaviour.version,
                       gpu_tokens=stage.gpu.max_total_num_tokens, notes=notes,
                       warnings=_warnings(layout, stage, section))
