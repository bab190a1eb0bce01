"""Plan -> the typed report: frozen records for every section, built once, read by every renderer and gate.

The JSON output is `records.to_json(report)` (same keys as the record fields) and `kvcalc schema output` is
generated from these classes and their field descriptions. Renderers, `--check` gates, `sweep` and `size`
read these objects; nothing reads a section back by string keys.
"""

from __future__ import annotations

import re
from collections import Counter

from .. import __version__
from ..pipeline import Plan
from ..vocab.records import field, record
from ..engines.vllm.specs import KVCacheSpec, MambaSpec, UniformTypeKVCacheSpecs
from ..vocab.units import format_bytes
from ..vocab.releases.vllm import FAMILIES

SCHEMA_VERSION = 1


# ---------------------------------------------------------------------------------------------------------
# Sections

@record
class ModelField:
    """One model field a number rests on, and where its value came from."""

    field_: str = field("the layout key (under model., or cache. for Mamba state dtypes)")
    value: int | str | list[int] = field("its value; a list when layers differ")
    from_: str = field("the config key, flag or 'layout file' it came from")


@record
class DraftSummary:
    """The speculative-decoding drafter whose layers sit on the last PP stage."""

    method: str = field("eagle, eagle3 or mtp")
    num_layers: int = field("drafter (or MTP) layers added after the target's")


@record
class ModelSection:
    """The model as kvcalc read it."""

    name: str = field("free text from the layout or config")
    num_layers: int = field("decoder layers of the target model")
    dtype: str = field("torch dtype the model is served in")
    layer_kinds: dict[str, int] = field("decoder layers per layer kind")
    layer_kinds_from: str = field("where the layer kinds came from")
    fields: list[ModelField] = field("every model field the numbers rest on, with its source")
    draft: DraftSummary | None = field("the drafter, or null")


@record
class ParallelSection:
    """One engine's parallelism."""

    tensor_parallel_size: int = field("TP")
    pipeline_parallel_size: int = field("PP")
    data_parallel_size: int = field("DP: engines, each with its own CPU pool")
    world_size: int = field("vLLM's world_size: PP x TP, times DP under external_launcher")


@record
class CacheSection:
    """Cache settings as the selected release settles them."""

    kv_cache_dtype: str = field("vLLM's --kv-cache-dtype string")
    kv_cache_memory: list[int] | None = field("KV memory per GPU in bytes (one value, or one per worker)")
    num_gpu_blocks_override: int | None = field("--num-gpu-blocks-override")
    max_model_len: int = field("tokens of the longest request")
    max_num_batched_tokens: int = field("tokens per scheduler step")
    enable_prefix_caching: bool = field("prefix caching on, after vLLM's default")
    mamba_cache_mode: str | None = field("Mamba cache mode (none | align | all); null without Mamba layers")
    mamba_block_size: int | None = field("Mamba group block size in tokens")
    hybrid_kv_cache_manager: bool = field("the hybrid KV cache manager is on")
    hybrid_kv_cache_manager_reason: str = field("why it is on or off")


@record
class SpecSummary:
    """A KV cache spec: its kind, block size and page, and the fields of that kind."""

    kind: str = field("full_attention | sliding_attention | chunked_attention | mla | mla_indexer | mamba | "
                      "uniform_type | cross_attention")
    block_size: int = field("tokens per GPU block of this spec")
    page_size_bytes: int = field("bytes one layer of this spec needs per GPU block")
    member_kinds: list[str] | None = field("uniform_type: the member specs' kinds", omit_if_none=True)
    member_pages: list[int] | None = field("uniform_type: the member specs' distinct pages", omit_if_none=True)
    state_shapes: list[list[int]] | None = field("mamba: per-sequence state shapes", omit_if_none=True)
    state_dtypes: list[str] | None = field("mamba: their dtypes", omit_if_none=True)
    real_page_size_bytes: int | None = field("mamba: the page before padding", omit_if_none=True)
    num_kv_heads: int | None = field("attention: KV heads per rank", omit_if_none=True)
    head_size: int | None = field("attention: key head size", omit_if_none=True)
    dtype: str | None = field("attention: element dtype", omit_if_none=True)
    sliding_window: int | None = field("sliding window (or the folded window with HMA off)", omit_if_none=True)
    attention_chunk_size: int | None = field("chunked local attention chunk", omit_if_none=True)
    cache_dtype_str: str | None = field("MLA: the cache-dtype string", omit_if_none=True)


@record
class GroupSummary(SpecSummary):
    """A KV cache group: its spec and its layers."""

    layers: list[str] = field("vLLM's layer names, in registration order")


@record
class TensorEntry:
    """One KV cache tensor of a worker."""

    size: int | None = field("bytes; null when the GPU block count is unknown")
    page_bytes: int = field("bytes per GPU block")
    shared_by: list[str] = field("the layers that view it")


@record
class BackingAllocation:
    """0.30+: the one GPU allocation the tensors are views of."""

    bytes_per_block: int = field("bytes per GPU block")
    size: int | None = field("bytes")


@record
class WorkerSection:
    """One PP stage's workers (its TP ranks are identical)."""

    pp_rank: int = field("pipeline stage")
    decoder_layers: list[int] = field("[first, end) decoder layer indices")
    num_blocks: int | None = field("GPU blocks after the min over workers")
    num_blocks_before_min: int | None = field("this stage's own GPU block count")
    bytes_per_block: int = field("b_w: the stage's bytes per GPU block")
    total_bytes: int | None = field("KV cache bytes on one GPU")
    tensors: list[TensorEntry] = field("vLLM's KVCacheTensor list")
    backing_allocation: BackingAllocation | None = field("0.30+: the single backing allocation; else null")


@record
class GpuSection:
    """The GPU KV cache vLLM builds, and what it logs."""

    block_size: int = field("the engine's block size: the smallest group block size")
    attention_block_size: int = field("attention block size after defaults and the hybrid bump")
    num_blocks: int | None = field("GPU blocks (null without KV memory)")
    kv_cache_size_tokens: int | None = field("the logged 'GPU KV cache size' in tokens")
    max_concurrency: float | None = field("the logged maximum concurrency")
    log_family: str = field("L1 | L2 | L3: which log formulas the release uses")
    log_lines: list[str] = field("the lines vLLM logs")
    grouping: str = field("empty | uniform | uniform_type | hybrid")
    groups: list[GroupSummary] = field("KV cache groups")
    scheduler_groups: list[SpecSummary] = field("rank 0's groups as the scheduler sees them (UniformType flattened)")
    workers: list[WorkerSection] = field("one per PP stage")


@record
class OutOfBoundsIds:
    """CPU ids the scheduler may hand out that a worker never allocated."""

    pp_rank: int = field("the worst stage")
    first: int = field("first bad id")
    last: int = field("last bad id")


@record
class ChunksPerRequest:
    """The CPU chunks one max_model_len request occupies: one per key (block hash, KV cache group)."""

    per_group: list[int] = field("per KV cache group: cdiv(max_model_len, tokens per chunk), capped by its window")
    total: int = field("their sum")


@record
class CapacitySection:
    """What the CPU tier holds, by vLLM 0.33.0's CPUOffloadingInfo (v1/kv_offload/cpu/common.py); for earlier
    releases the same quantities by that release's rules."""

    cpu_num_chunks: int = field("CPU chunks (blocks before 0.26) the scheduler hands out")
    cpu_blocks_per_chunk: int = field("GPU blocks per chunk (the block-size factor before 0.26)")
    cpu_kv_cache_size_bytes: int = field("chunks x aligned chunk bytes")
    cpu_kv_cache_size_tokens: int | None = field("tokens of max_model_len requests the tier holds: chunks x "
                                                 "max_model_len // chunks per request; null without max_model_len")
    chunks_per_request: ChunksPerRequest | None = field("chunks one max_model_len request occupies")


@record
class AllocationEntry:
    """Pinned host allocations of one size on one worker."""

    count: int = field("how many")
    size: int = field("bytes each, as requested")
    resident: int = field("bytes each, as resident (PyTorch's pinned allocator rounds up)")


@record
class HostSection:
    """Host memory the CPU tier really takes."""

    requested_bytes_per_engine: int = field("cpu_bytes_to_use: what was asked for")
    resident_bytes_per_worker: list[int] = field("per PP stage: one worker's resident bytes")
    resident_bytes_per_engine: int = field("all workers of one engine")
    resident_bytes_per_node: int = field("the engines (DP replicas) on one node, or the node with the most")
    shm_bytes_per_engine: int = field("the /dev/shm region of one engine (0 without a shared region)")
    shm_bytes_per_node: int = field("/dev/shm one node must have free")
    host_page_size: int = field("mmap.PAGESIZE the region's chunks are aligned to")
    pinned_rounding: str = field("power_of_two | none | threshold:N (MiB, PYTORCH_ALLOC_CONF)")
    allocations_per_worker: list[list[AllocationEntry]] = field("per PP stage: the worker's private pinned "
                                                                "tensors (empty with a shared region)")
    note: str | None = field("why resident differs from requested, and what to do")


@record
class FamilyEntry:
    """One release family's CPU count on this layout (scheduler and every stage)."""

    family: str = field("family id")
    versions: str = field("its releases")
    kv_bytes_per_block: int = field("scheduler: bytes per GPU block x copies")
    kv_bytes_per_offloaded_block: int = field("scheduler: bytes per CPU block/chunk before alignment")
    num_blocks_scheduler: int = field("CPU blocks/chunks the scheduler hands out")
    num_blocks_workers: list[int] = field("CPU blocks/chunks each PP stage's workers allocate")
    kv_bytes_per_block_workers: list[int] = field("per stage: bytes per GPU block x copies")
    cpu_tokens_scheduler: int = field("tokens the scheduler believes it holds")
    cpu_tokens_safe: int = field("tokens every worker has room for")
    out_of_bounds: bool = field("the scheduler can hand out ids a worker lacks")
    out_of_bounds_ids: OutOfBoundsIds | None = field("the bad id range, or null")
    pinned_bytes_per_worker: list[int] = field("host bytes pinned per worker, per stage")
    pinned_bytes_per_engine: int = field("host bytes pinned by one engine")
    pinned_bytes_all_replicas: int = field("x DP")
    unused_bytes: int = field("budget minus pinned")
    wasted_bytes_per_worker: list[int] = field("rows a worker pinned that the scheduler never uses, per stage")
    note: str | None = field("how this family's own releases would lay the model out, when that differs")
    unit: str = field("blocks | chunks")
    block_size_factor: int = field("offloaded block / GPU block (blocks_per_chunk from 0.26)")
    copies: int = field("copies of each block: world size, or 1 for replicated MLA")
    replicated: bool = field("MLA stored once (0.28+)")
    alignment: int = field("bytes each CPU chunk is rounded up to")
    aligned_bytes: int = field("scheduler: bytes per CPU block/chunk after alignment")
    padding_bytes: int = field("aligned minus unaligned")
    shared_region: bool = field("one shared /dev/shm host region per engine (0.27+ on the release's platforms)")
    capacity: CapacitySection = field("what the tier holds, group-aware")
    host: HostSection = field("host memory resident")
    vllm_version: str | None = field("with --compare-versions: the release standing for the family",
                                     omit_if_none=True)


@record
class LMCacheStageEntry:
    """One PP stage's ranks under LMCache (its TP ranks are alike)."""

    pp_rank: int = field("pipeline stage")
    num_layers: int = field("the target's layers on this stage")
    draft_layers: int = field("drafter layers LMCache adds to the chunk (sized like the target's)")
    kv_size: int = field("2: K and V; 1: MLA's latent")
    num_kv_heads: int = field("KV heads per rank (1 for MLA)")
    head_size: int = field("head size (kv_lora_rank + qk_rope_head_dim for MLA)")
    dtype_bytes: int = field("bytes per element (get_kv_cache_torch_dtype)")
    chunk_bytes: int = field("one chunk: kv_size x layers x chunk_size x heads x head_size x dtype bytes")
    chunk_bytes_aligned: int = field("what a chunk takes in the pool (4096-aligned; per layer with use_layerwise)")
    chunks_per_rank: int = field("chunks a storing rank's pool holds (0 when this stage's ranks store nothing)")
    tokens_per_rank: int = field("chunks x chunk_size (0 with local_cpu false)")
    storing_ranks: int = field("this stage's ranks that allocate a pool")


@record
class LMCacheFirstRank:
    """Rank 0 with save_only_first_rank and first_rank_max_local_cpu_size: a pool of its own size."""

    pool_bytes: int = field("int(first_rank_max_local_cpu_size x 1024^3)")
    chunks: int = field("chunks it holds")
    tokens: int = field("tokens it holds")


@record
class LMCacheVllmFlag:
    """vLLM's --kv-offloading-backend lmcache on the selected release."""

    kv_offloading_size: float = field("--kv-offloading-size, GiB for the engine")
    connector: str = field("the connector vLLM configures")
    max_local_cpu_size: float | None = field("what LMCache receives per rank (size / (TP x PP)); null: nothing "
                                             "(0.23.0+: the multi-process connector)")


@record
class LMCacheSection:
    """LMCache's CPU pool (offload.backend lmcache): per rank, as LMCache sizes it."""

    lmcache_version: str = field("the LMCache release whose rules apply")
    connector: str = field("LMCacheConnectorV1 | LMCacheMPConnector")
    modelled: bool = field("false: the multi-process connector's pool lives in the LMCache server (not modelled)")
    chunk_size: int = field("tokens per chunk")
    use_mla: bool = field("the model uses MLA (one latent per token, replicated on every TP rank)")
    save_only_first_rank: bool = field("only rank 0 (and lookup/worker ids) store, as LMCache settles it")
    local_cpu: bool = field("the CPU tier serves hits (false: the pool is only a staging buffer)")
    use_layerwise: bool = field("chunks stored per layer")
    max_local_cpu_size: float = field("GiB per rank (LMCache: int(x x 1024^3) bytes)")
    first_rank_max_local_cpu_size: float | None = field("rank 0's own GiB with save_only_first_rank")
    alignment: int = field("bytes each chunk object is aligned to")
    stages: list[LMCacheStageEntry] = field("one per PP stage")
    storing_ranks: int | None = field("ranks of one engine that allocate a pool")
    storing_rank_ids: list[int] = field("their ranks (PP x TP order)")
    pool_bytes_per_storing_rank: int | None = field("int(max_local_cpu_size x 1024^3)")
    first_rank: LMCacheFirstRank | None = field("rank 0's pool when first_rank_max_local_cpu_size sets it")
    pool_bytes_per_engine: int | None = field("all storing ranks of one engine")
    pool_bytes_all_replicas: int | None = field("x DP")
    resident_bytes_per_engine: int | None = field("pinned by cudaHostAlloc: whole host pages (2 MiB hugepages)")
    resident_bytes_per_node: int | None = field("the engines on one node, or the node with the most")
    tokens_per_engine: int | None = field("tokens every stage holds (rank 0's with save_only_first_rank)")
    disk_bytes_per_rank: int | None = field("int(max_local_disk_size x 1024^3) with local_disk")
    disk_chunks_per_rank: int | None = field("disk bytes // aligned chunk bytes")
    vllm_flag: LMCacheVllmFlag | None = field("set through --kv-offloading-backend lmcache: what vLLM passes")
    config_from: dict[str, str] = field("LMCache key -> where its value came from")


@record
class BackendEntry:
    """One backend's CPU tier for --compare-backends."""

    backend: str = field("native | lmcache")
    pool_bytes_per_engine: int | None = field("host bytes the pool takes, one engine")
    resident_bytes_per_engine: int | None = field("host bytes resident, one engine")
    resident_bytes_per_node: int | None = field("the node's")
    tokens: int | None = field("CPU tokens held (native: group-aware, every worker; LMCache: every stage)")
    unit_bytes: int | None = field("bytes one CPU block/chunk takes (worst stage)")
    tokens_per_unit: int | None = field("tokens per CPU block/chunk")
    startup_error: str | None = field("why it would not start, or null")


@record
class OffloadSection:
    """The CPU offload pool: the native offloading connector's, or LMCache's (offload.lmcache)."""

    backend: str = field("native (vLLM's OffloadingConnector) | lmcache (LMCacheConnectorV1)")
    cpu_bytes_to_use: int | None = field("the CPU budget of one engine, bytes (null: none given, no CPU counts)")
    cpu_bytes_source: str = field("what the budget was given as")
    block_size: int = field("offloaded block size in tokens (selected family)")
    block_size_factor: int = field("offloaded block / GPU block")
    startup_error: str | None = field("why the selected release's connector fails at start-up, or null")
    selected: FamilyEntry | None = field("the selected release's family entry (null when it would not start)")
    errors: dict[str, str] = field("family id -> why that family's connector fails at init")
    old: FamilyEntry | None = field("the 0.14.0-0.19.1 formula on this layout")
    fixed: FamilyEntry | None = field("the 0.20.0+ formula on this layout")
    out_of_bounds: bool | None = field("the selected release goes out of bounds (null when it would not start)")
    pinned_bytes_per_engine: int | None = field("selected: host bytes pinned by one engine")
    unused_bytes: int | None = field("selected: budget minus pinned")
    data_parallel_size: int = field("engines")
    cpu_bytes_all_replicas: int | None = field("budget x DP")
    host: HostSection | None = field("selected: host memory resident")
    families: dict[str, FamilyEntry] | None = field("with --compare-versions: one entry per family",
                                                    omit_if_none=True)
    lmcache: LMCacheSection | None = field("offload.backend lmcache: LMCache's pool; null for the native backend")
    backends: list[BackendEntry] | None = field("with --compare-backends: native and LMCache side by side",
                                                omit_if_none=True)


@record
class Check:
    """One --check gate."""

    name: str = field("startup | out_of_bounds | zero_cpu_blocks | cpu_smaller_than_gpu | host_memory | "
                      "min_cpu_tokens")
    passed: bool = field("the gate passed")
    reason: str = field("why, with the numbers")


@record
class PlannedRelease:
    """One column of --compare-versions: what that release builds and how many CPU blocks it gets."""

    vllm_version: str = field("release")
    family: str = field("its family")
    warning: str | None = field("a note on how the release was modelled")
    hybrid_kv_cache_manager: bool = field("HMA on")
    grouping: str = field("grouping rule")
    num_groups: int = field("KV cache groups")
    gpu_num_blocks: int | None = field("GPU blocks")
    kv_cache_size_tokens: int | None = field("logged GPU KV cache tokens")
    max_concurrency: float | None = field("logged maximum concurrency")
    startup_error: str | None = field("why its offloading connector fails at start-up, or null")
    offload: FamilyEntry | None = field("its family entry")


@record
class RefusedRelease:
    """A --compare-versions release that refuses the layout before any number exists."""

    vllm_version: str = field("release")
    family: None = field("null: refused")
    startup_error: str = field("the refusal")
    offload: None = field("null")


@record
class VerifySection:
    """--verify: the tensors rebuilt on torch's meta device."""

    ok: bool = field("every view tiles its tensor")
    torch_version: str = field("torch used")
    tensors_checked: int = field("tensors rebuilt")
    views_checked: int = field("layer views checked")
    summary: str = field("one line")


@record
class Report:
    """kvcalc plan --format json, schema version 1."""

    schema_version: int = field("1")
    kvcalc_version: str = field("kvcalc release")
    source: str = field("the input file")
    vllm_version: str = field("the selected vLLM release")
    family: str = field("old | fixed | packed | config | replicated | single-alloc")
    model: ModelSection = field("the model")
    parallel: ParallelSection = field("parallelism")
    cache: CacheSection = field("cache settings")
    gpu: GpuSection = field("the GPU KV cache")
    offload: OffloadSection = field("the CPU offload pool")
    notes: list[str] = field("informational notes (also on stderr)")
    warnings: list[str] = field("things to act on (also on stderr)")
    checks: list[Check] | None = field("with --check: the gates", omit_if_none=True)
    releases: list[PlannedRelease | RefusedRelease] | None = field("with --compare-versions: one entry per release",
                                                                    omit_if_none=True)
    verify: VerifySection | None = field("with --verify", omit_if_none=True)
    error: str | None = field("the selected release would not start: why (kvcalc exits 2, or 1 under --check)",
                              omit_if_none=True)


@record
class RefusedReport:
    """kvcalc plan --check --format json when the selected release refuses the layout at start-up."""

    schema_version: int = field("1")
    vllm_version: str = field("the selected vLLM release")
    source: str = field("the input file")
    checks: list[Check] = field("the failed startup gate")


# ---------------------------------------------------------------------------------------------------------
# Builders

def spec_summary(spec: KVCacheSpec, cls=SpecSummary, **extra) -> SpecSummary:
    kw: dict = {"kind": spec.kind, "block_size": spec.block_size, "page_size_bytes": spec.page_size_bytes}
    if isinstance(spec, UniformTypeKVCacheSpecs):
        kw["member_kinds"] = sorted({s.kind for s in spec.distinct_specs})
        kw["member_pages"] = sorted({s.page_size_bytes for s in spec.distinct_specs})
    elif isinstance(spec, MambaSpec):
        kw["state_shapes"] = [list(s) for s in spec.shapes]
        kw["state_dtypes"] = list(spec.dtypes)
        kw["real_page_size_bytes"] = spec.real_page_size_bytes
    else:
        kw.update(num_kv_heads=spec.num_kv_heads, head_size=spec.head_size, dtype=spec.dtype,
                  sliding_window=getattr(spec, "sliding_window", None),
                  attention_chunk_size=getattr(spec, "attention_chunk_size", None),
                  cache_dtype_str=getattr(spec, "cache_dtype_str", None))
    return cls(**kw, **extra)


def family_entry(plan: Plan, name: str, *, with_note: bool = True) -> FamilyEntry | None:
    """One family's CPU count on this plan. `with_note` plans the model a second time when the family's own
    releases would lay it out differently (only reports that show the note ask for it)."""
    r = plan.offload.results.get(name)
    if r is None:
        return None
    fam = FAMILIES[name]
    worst = min((s for s in r.stages if s.out_of_bounds), key=lambda s: s.count.num_blocks, default=None)
    dp = plan.layout.parallel.data_parallel_size
    return FamilyEntry(
        family=fam.id, versions=fam.versions,
        kv_bytes_per_block=r.scheduler.kv_bytes_per_block,
        kv_bytes_per_offloaded_block=r.scheduler.kv_bytes_per_offloaded_block,
        num_blocks_scheduler=r.scheduler.num_blocks,
        num_blocks_workers=[s.count.num_blocks for s in r.stages],
        kv_bytes_per_block_workers=[s.count.kv_bytes_per_block for s in r.stages],
        cpu_tokens_scheduler=r.tokens_scheduler, cpu_tokens_safe=r.tokens_safe, out_of_bounds=r.out_of_bounds,
        out_of_bounds_ids=None if worst is None else OutOfBoundsIds(pp_rank=worst.pp_rank, first=worst.bad_ids[0],
                                                                    last=worst.bad_ids[1]),
        pinned_bytes_per_worker=[s.pinned_bytes_per_worker for s in r.stages],
        pinned_bytes_per_engine=r.pinned_bytes_per_engine,
        pinned_bytes_all_replicas=r.pinned_bytes_per_engine * dp,
        unused_bytes=r.unused_bytes,
        wasted_bytes_per_worker=[s.wasted_bytes_per_worker for s in r.stages],
        note=plan.formula_notes.get(name) if with_note else None,
        unit="chunks" if r.chunks else "blocks", block_size_factor=r.factor, copies=r.scheduler.copies,
        replicated=r.replicated, alignment=r.alignment, aligned_bytes=r.scheduler.aligned_bytes,
        padding_bytes=r.scheduler.padding_bytes, shared_region=r.shared_region,
        capacity=capacity_section(r), host=host_section(r),
    )


def capacity_section(r) -> CapacitySection:
    c = r.capacity
    per = None if c.chunks_per_group is None else ChunksPerRequest(per_group=list(c.chunks_per_group),
                                                                   total=sum(c.chunks_per_group))
    return CapacitySection(cpu_num_chunks=c.cpu_num_chunks, cpu_blocks_per_chunk=c.cpu_blocks_per_chunk,
                           cpu_kv_cache_size_bytes=c.cpu_kv_cache_size_bytes,
                           cpu_kv_cache_size_tokens=c.cpu_kv_cache_size_tokens, chunks_per_request=per)


def host_section(r) -> HostSection:
    h = r.host
    return HostSection(
        requested_bytes_per_engine=h.requested_bytes_per_engine,
        resident_bytes_per_worker=list(h.resident_bytes_per_worker),
        resident_bytes_per_engine=h.resident_bytes_per_engine, resident_bytes_per_node=h.resident_bytes_per_node,
        shm_bytes_per_engine=h.shm_bytes_per_engine, shm_bytes_per_node=h.shm_bytes_per_node,
        host_page_size=h.host_page_size, pinned_rounding=h.pinned_rounding,
        allocations_per_worker=[[AllocationEntry(count=a.count, size=a.size, resident=a.resident) for a in allocs]
                                for allocs in h.allocations_per_worker],
        note=host_note(h),
    )


def host_note(h) -> str | None:
    """Why resident differs from requested (the worst rounding), with the exact budget that avoids it: 61
    tensors of 268.52 MiB each round up to 512 MiB; 65,482,260,480 B keeps each at 256 MiB (offload._worst_rounding)."""
    a = h.worst_allocation
    if a is not None:
        lower = a.resident // 2
        tip = (f": a budget of {h.smaller_budget:,} B ({format_bytes(h.smaller_budget)}) keeps each at "
               f"{format_bytes(lower)}" if h.smaller_budget and a.resident - a.size > a.size // 8 else "")
        # (The tip only when rounding costs more than 1/8 of the tensor: 255.94 MiB -> 256 MiB needs no halving.)
        return (f"{a.count} pinned tensor(s) of {format_bytes(a.size)} per worker each round up to "
                f"{format_bytes(a.resident)} (PyTorch's pinned allocator rounds to a power of two){tip}")
    if h.shared_region and h.resident_bytes_per_engine != h.requested_bytes_per_engine:
        return (f"the /dev/shm region is whole chunks ({format_bytes(h.resident_bytes_per_engine)} of the "
                f"{format_bytes(h.requested_bytes_per_engine)} asked for); no allocator rounding")
    return None


def _one(values: tuple) -> object:
    """A per-layer tuple shown as one value when every layer agrees."""
    return values[0] if len(set(values)) == 1 else list(values)


def _layer_kinds_from(lay) -> str:
    """Where the layer kinds came from: the config key that set them, the default a config implies, or the layout."""
    prov = dict(lay.provenance)
    if "model.layer_types" in prov:
        return prov["model.layer_types"]
    if prov:  # read from a config.json that states no layer types
        return ("config: every layer mla (kv_lora_rank is set)" if lay.model.is_mla else
                "config: every layer full_attention (it states no layer types)")
    return "layout file"


def model_fields(plan: Plan) -> list[ModelField]:
    """The model fields the numbers rest on, with where each came from, for checking against a config."""
    m = plan.layout.model
    prov = dict(plan.layout.provenance)
    rows: list[tuple[str, object]] = [("dtype", m.dtype)]
    attn = [i for i, k in enumerate(m.layer_types) if k.attention]
    if attn:
        rows += [("num_kv_heads", _one(tuple(m.num_kv_heads[i] for i in attn))),
                 ("head_size", _one(tuple(m.head_size[i] for i in attn)))]
        if any(m.head_size_v[i] != m.head_size[i] for i in attn):
            rows.append(("head_size_v", _one(tuple(m.head_size_v[i] for i in attn))))
    for key in ("sliding_window", "attention_chunk_size", "kv_lora_rank", "qk_rope_head_dim", "index_head_dim"):
        if getattr(m, key) is not None:
            rows.append((key, getattr(m, key)))
    if m.mamba is not None:
        rows.append(("mamba.kind", m.mamba.kind))
        rows += [(f"mamba.{k}", v) for k, v in m.mamba.params]
    if m.draft is not None:
        rows += [(f"draft.{k}", getattr(m.draft, k)) for k in ("method", "num_layers", "num_kv_heads", "head_size")
                 if getattr(m.draft, k) is not None]
    out = [ModelField(field_=k, value=v, from_=prov.get(f"model.{k}", "layout file")) for k, v in rows]
    if m.mamba is not None:
        for key in ("mamba_cache_dtype", "mamba_ssm_cache_dtype"):
            value = getattr(plan.layout.cache, key)
            out.append(ModelField(field_=f"cache.{key}", value=value,
                                  from_=prov.get(f"cache.{key}", "layout file" if value != "auto" else "default")))
    return out


def gpu_section(plan: Plan) -> GpuSection:
    gpu = plan.gpu
    single = plan.behaviour.rule.single_allocation
    return GpuSection(
        block_size=gpu.hash_block_size, attention_block_size=plan.layers.block_size, num_blocks=gpu.num_blocks,
        kv_cache_size_tokens=None if plan.logs is None else plan.logs.kv_cache_size_tokens,
        max_concurrency=None if plan.logs is None else plan.logs.max_concurrency,
        log_family=plan.behaviour.log_family, log_lines=[] if plan.logs is None else list(plan.logs.lines),
        grouping=plan.grouping.rule,
        groups=[spec_summary(g.spec, GroupSummary, layers=list(g.layer_names)) for g in plan.grouping.groups],
        scheduler_groups=[spec_summary(g.spec) for g in gpu.scheduler_groups],
        workers=[
            WorkerSection(
                pp_rank=w.pp_rank, decoder_layers=list(plan.layers.stages[w.pp_rank].decoder_layers),
                num_blocks=w.num_blocks, num_blocks_before_min=w.num_blocks_before_min,
                bytes_per_block=w.bytes_per_block, total_bytes=w.total_bytes,
                tensors=[TensorEntry(size=t.size, page_bytes=t.page_bytes, shared_by=list(t.shared_by))
                         for t in w.tensors],
                # 0.30+: the tensors above are per-layer views inside one backing allocation, and vLLM's
                # KVCacheTensor entries each carry that allocation's total size.
                backing_allocation=BackingAllocation(bytes_per_block=w.bytes_per_block, size=w.total_bytes)
                if single else None,
            )
            for w in gpu.workers
        ],
    )


def lmcache_section(plan: Plan) -> LMCacheSection | None:
    lc = plan.lmcache
    if lc is None:
        return None
    m = lc.modelled
    dp = plan.layout.parallel.data_parallel_size

    def known(value):
        return value if m else None

    flag = lc.vllm_flag
    return LMCacheSection(
        lmcache_version=lc.version, connector=lc.connector, modelled=m, chunk_size=lc.chunk_size, use_mla=lc.use_mla,
        save_only_first_rank=lc.save_only_first_rank, local_cpu=lc.local_cpu, use_layerwise=lc.use_layerwise,
        max_local_cpu_size=lc.max_local_cpu_size, first_rank_max_local_cpu_size=lc.first_rank_max_local_cpu_size,
        alignment=lc.alignment,
        stages=[LMCacheStageEntry(
            pp_rank=st.pp_rank, num_layers=st.num_layers, draft_layers=st.draft_layers, kv_size=st.kv_size,
            num_kv_heads=st.num_kv_heads, head_size=st.head_size, dtype_bytes=st.dtype_bytes,
            chunk_bytes=st.chunk_bytes, chunk_bytes_aligned=st.chunk_bytes_aligned, chunks_per_rank=st.chunks_per_rank,
            tokens_per_rank=st.tokens_per_rank, storing_ranks=st.storing_ranks) for st in lc.stages],
        storing_ranks=known(lc.storing_ranks), storing_rank_ids=list(lc.storing_rank_ids),
        pool_bytes_per_storing_rank=known(lc.pool_bytes_per_storing_rank),
        first_rank=None if lc.first_rank is None else LMCacheFirstRank(
            pool_bytes=lc.first_rank.pool_bytes, chunks=lc.first_rank.chunks, tokens=lc.first_rank.tokens),
        pool_bytes_per_engine=known(lc.pool_bytes_per_engine),
        pool_bytes_all_replicas=known(lc.pool_bytes_per_engine * dp),
        resident_bytes_per_engine=known(lc.resident_bytes_per_engine),
        resident_bytes_per_node=known(lc.resident_bytes_per_node), tokens_per_engine=known(lc.tokens_per_engine),
        disk_bytes_per_rank=known(lc.disk_bytes_per_rank), disk_chunks_per_rank=known(lc.disk_chunks_per_rank),
        vllm_flag=None if flag is None else LMCacheVllmFlag(
            kv_offloading_size=flag.kv_offloading_size, connector=flag.connector,
            max_local_cpu_size=flag.max_local_cpu_size),
        config_from=dict(plan.layout.offload.lmcache.provenance),
    )


def offload_section(plan: Plan, *, with_notes: bool = True, families: dict[str, FamilyEntry] | None = None,
                    backends: list[BackendEntry] | None = None) -> OffloadSection:
    off, par = plan.offload, plan.layout.parallel
    # A release that would not start has no pool: its counts, verdict and host bytes are null, not numbers a
    # pipeline could read as a plan (the old / fixed columns stay: what each formula gives on this layout).
    budget = plan.layout.offload.cpu_bytes_to_use
    if budget is None:
        # No budget: nothing to count. The per-block bytes are the GPU side's (gpu.workers[].bytes_per_block).
        return OffloadSection(
            backend=plan.layout.offload.backend,
            cpu_bytes_to_use=None, cpu_bytes_source=plan.layout.offload.cpu_bytes_source, block_size=off.block_size,
            block_size_factor=off.block_size_factor, startup_error=off.startup_error, selected=None,
            errors=dict(off.errors), old=None, fixed=None, out_of_bounds=None, pinned_bytes_per_engine=None,
            unused_bytes=None, data_parallel_size=par.data_parallel_size, cpu_bytes_all_replicas=None, host=None,
            families=None, lmcache=lmcache_section(plan), backends=backends)
    own = family_entry(plan, plan.selected, with_note=with_notes)
    selected = None if off.startup_error else own
    entries = {name: (own if name == plan.selected else family_entry(plan, name, with_note=with_notes))
               for name in ("old", "fixed")}
    return OffloadSection(
        backend=plan.layout.offload.backend, lmcache=None, backends=backends,
        cpu_bytes_to_use=off.cpu_bytes_to_use, cpu_bytes_source=plan.layout.offload.cpu_bytes_source,
        block_size=off.block_size, block_size_factor=off.block_size_factor, startup_error=off.startup_error,
        selected=selected, errors=dict(off.errors), old=entries["old"], fixed=entries["fixed"],
        out_of_bounds=None if selected is None else selected.out_of_bounds,
        pinned_bytes_per_engine=None if selected is None else selected.pinned_bytes_per_engine,
        unused_bytes=None if selected is None else selected.unused_bytes,
        data_parallel_size=par.data_parallel_size, cpu_bytes_all_replicas=budget * par.data_parallel_size,
        host=None if selected is None else selected.host, families=families,
    )


def backend_entries(results: list[tuple[str, object]]) -> list[BackendEntry]:
    """--compare-backends: one entry per backend (plan.compare_backends)."""

    def without_figures(name: str, error: str | None, tokens_per_unit: int | None = None) -> BackendEntry:
        return BackendEntry(backend=name, pool_bytes_per_engine=None, resident_bytes_per_engine=None,
                            resident_bytes_per_node=None, tokens=None, unit_bytes=None,
                            tokens_per_unit=tokens_per_unit, startup_error=error)

    out = []
    for name, p in results:
        if not isinstance(p, Plan):
            out.append(without_figures(name, p.one_line()))
        elif name == "lmcache":
            lc = p.lmcache
            if not lc.modelled:
                out.append(without_figures(name, "not modelled (multi-process connector)", lc.chunk_size))
                continue
            out.append(BackendEntry(
                backend=name, pool_bytes_per_engine=lc.pool_bytes_per_engine,
                resident_bytes_per_engine=lc.resident_bytes_per_engine,
                resident_bytes_per_node=lc.resident_bytes_per_node, tokens=lc.tokens_per_engine,
                unit_bytes=max(st.chunk_bytes_aligned for st in lc.stages), tokens_per_unit=lc.chunk_size,
                startup_error=None))
        else:
            r, err = p.offload.selected_result, p.offload.startup_error
            if err or r is None:
                out.append(without_figures(name, err))
                continue
            out.append(BackendEntry(
                backend=name, pool_bytes_per_engine=r.pinned_bytes_per_engine,
                resident_bytes_per_engine=r.host.resident_bytes_per_engine,
                resident_bytes_per_node=r.host.resident_bytes_per_node, tokens=r.tokens_safe,
                unit_bytes=max([r.scheduler.aligned_bytes] + [c.aligned_bytes for c in r.stage_counts]),
                tokens_per_unit=p.offload.block_size, startup_error=None))
    return out


def release_entry(version: str, result) -> PlannedRelease | RefusedRelease:
    """One column of --compare-versions."""
    if not isinstance(result, Plan):
        return RefusedRelease(vllm_version=version, family=None, startup_error=result.one_line(), offload=None)
    return PlannedRelease(
        vllm_version=version, family=result.behaviour.family.id, warning=result.behaviour.warning,
        hybrid_kv_cache_manager=result.hma_enabled, grouping=result.grouping.rule,
        num_groups=len(result.grouping.groups), gpu_num_blocks=result.gpu.num_blocks,
        kv_cache_size_tokens=None if result.logs is None else result.logs.kv_cache_size_tokens,
        max_concurrency=None if result.logs is None else result.logs.max_concurrency,
        startup_error=result.offload.startup_error,
        offload=None if result.offload.startup_error or result.layout.offload.cpu_bytes_to_use is None
        else family_entry(result, result.selected),
    )


def build_report(plan: Plan, *, releases: list[tuple[str, object]] | None = None, gates=None,
                 verify: VerifySection | None = None, backends: list[BackendEntry] | None = None) -> Report:
    """The report, built once. `releases` (from plan.compare) adds the comparison; `gates` is a callable
    (gpu section, offload section, parallel section) -> checks, evaluated on the sections before assembly."""
    lay, par, cache = plan.layout, plan.layout.parallel, plan.layout.cache
    kinds = Counter(lay.model.layer_types)
    rel = None
    families = None
    if releases is not None:
        rel = [release_entry(v, r) for v, r in releases]
        families = {}
        for e in rel:
            if isinstance(e, PlannedRelease) and e.offload is not None:
                families[e.family] = _with_version(e.offload, e.vllm_version)
    gpu = gpu_section(plan)
    offload = offload_section(plan, families=families, backends=backends)
    parallel = ParallelSection(tensor_parallel_size=par.tensor_parallel_size,
                               pipeline_parallel_size=par.pipeline_parallel_size,
                               data_parallel_size=par.data_parallel_size, world_size=par.world_size)
    return Report(
        schema_version=SCHEMA_VERSION, kvcalc_version=__version__, source=lay.source,
        vllm_version=plan.behaviour.version, family=plan.behaviour.family.id,
        model=ModelSection(
            name=lay.model.name, num_layers=lay.model.num_layers, dtype=lay.model.dtype,
            layer_kinds={k.value: n for k, n in sorted(kinds.items())},
            layer_kinds_from=_layer_kinds_from(lay),
            fields=model_fields(plan),
            draft=None if lay.model.draft is None else DraftSummary(method=lay.model.draft.method,
                                                                    num_layers=lay.model.draft.num_layers),
        ),
        parallel=parallel,
        cache=CacheSection(
            kv_cache_dtype=cache.kv_cache_dtype,
            kv_cache_memory=None if cache.kv_cache_memory is None else list(cache.kv_cache_memory),
            num_gpu_blocks_override=cache.num_gpu_blocks_override, max_model_len=cache.max_model_len,
            max_num_batched_tokens=cache.max_num_batched_tokens,
            enable_prefix_caching=plan.layers.enable_prefix_caching,
            mamba_cache_mode=plan.layers.mamba_cache_mode if lay.model.has_mamba else None,
            mamba_block_size=plan.layers.mamba_block_size, hybrid_kv_cache_manager=plan.hma_enabled,
            hybrid_kv_cache_manager_reason=plan.hma_reason,
        ),
        gpu=gpu, offload=offload, notes=list(plan.notes), warnings=list(plan.warnings),
        checks=None if gates is None else gates(gpu, offload, parallel, plan.behaviour.version),
        releases=rel, verify=verify,
        error=None if not plan.offload.startup_error else
        f"vLLM {plan.behaviour.version} refuses to start the offloading connector: {plan.offload.startup_error}",
    )


def _with_version(entry: FamilyEntry, version: str) -> FamilyEntry:
    from ..vocab.records import replace

    return replace(entry, vllm_version=version)


# ---------------------------------------------------------------------------------------------------------
# Layer-name ranges for people

_LAYER_RE = r"^model\.layers\.(\d+)\.(.+)$"


def collapse_layers(names: list[str]) -> str:
    """Layer names -> a short range text, per module suffix in order of first appearance:
    61 x 'model.layers.{i}.self_attn.attn' -> 'layers 0–60 self_attn.attn';
    Qwen3-Next's GDN group {0, 4, ..., 44} -> 'layers 0–44 step 4 linear_attn'."""
    by_suffix: dict[str, list[int]] = {}
    others: list[str] = []
    for name in names:
        m = re.match(_LAYER_RE, name)
        if m:
            by_suffix.setdefault(m.group(2), []).append(int(m.group(1)))
        else:
            others.append(name)
    parts = []
    for suffix, idx in by_suffix.items():
        parts.append(f"{_ranges(idx)} {suffix}")
    text = "; ".join(parts)
    if others:
        text = "; ".join(filter(None, [text] + others))
    return ("layers " + text) if by_suffix else text


def _ranges(idx: list[int]) -> str:
    """[0, 1, 2, 3, 10] -> '0–3, 10'; [0, 4, 8] -> '0–8 step 4'."""
    out = []
    i = 0
    while i < len(idx):
        j = i
        if i + 1 < len(idx):
            step = idx[i + 1] - idx[i]
            while j + 1 < len(idx) and idx[j + 1] - idx[j] == step and step > 0:
                j += 1
        if j - i >= 2:
            step = idx[i + 1] - idx[i]
            out.append(f"{idx[i]}–{idx[j]}" + ("" if step == 1 else f" step {step}"))
            i = j + 1
        else:
            out.append(str(idx[i]))
            i += 1
    return ", ".join(out)
