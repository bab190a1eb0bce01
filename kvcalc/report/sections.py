"""The typed report: frozen records for every section, read by every renderer. They embed the computation's own
records where those are what the output shows (HostMemory, Capacity, Allocation, OutOfBounds, LMCache's stages),
so a new output field is the record field with its doc, and the renderer's row.

The JSON output is `records.to_json(report)` (same keys as the record fields and outputs) and `kvcalc schema output`
is generated from these classes and their field descriptions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..backends.base import Capacity, HostMemory, OutOfBounds
from ..vocab.errors import InternalError
from ..vocab.records import field, record

if TYPE_CHECKING:  # the sections shown on request, defined in optional.py (start-up time is a target)
    from ..backends.lmcache_mp_plan import MPPlan
    from ..backends.simple_plan import SimplePlan
    from ..engines.vllm.memory import GpuMemory
    from .optional import BackendEntry, Check, LMCacheSection, PlannedRelease, RefusedRelease, VerifySection
    from .engines import EngineEntry

SCHEMA_VERSION = 1


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
    member_kinds: list[str] | None = field("uniform_type: the member specs' kinds", omit_if_none=True, default=None)
    member_pages: list[int] | None = field("uniform_type: the member specs' distinct pages", omit_if_none=True,
                                           default=None)
    state_shapes: list[list[int]] | None = field("mamba: per-sequence state shapes", omit_if_none=True, default=None)
    state_dtypes: list[str] | None = field("mamba: their dtypes", omit_if_none=True, default=None)
    real_page_size_bytes: int | None = field("mamba: the page before padding", omit_if_none=True, default=None)
    num_kv_heads: int | None = field("attention: KV heads per rank", omit_if_none=True, default=None)
    head_size: int | None = field("attention: key head size", omit_if_none=True, default=None)
    dtype: str | None = field("attention: element dtype", omit_if_none=True, default=None)
    sliding_window: int | None = field("sliding window (or the folded window with HMA off)", omit_if_none=True,
                                       default=None)
    attention_chunk_size: int | None = field("chunked local attention chunk", omit_if_none=True, default=None)
    cache_dtype_str: str | None = field("MLA: the cache-dtype string", omit_if_none=True, default=None)


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
class AttentionChoiceEntry:
    """The backend one kind of attention layer gets."""

    layers: str = field("which layers (vLLM builds one AttentionSelectorConfig per kind)")
    backend: str = field("the AttentionBackendEnum member vLLM uses")
    how: str = field("priority (the first valid of the release's list) | selected (--attention-backend) | forced "
                     "(0.14-0.17 check_and_update_config's MLA default) | chain (ROCm 0.14-0.17) | model")
    why: str = field("the reason, in words")
    rejected: list[str] = field("the backends tried before it and vLLM's reasons for refusing them")


@record
class AttentionSection:
    """The attention backend vLLM selects on the GPU class and the block size that follows."""

    gpu_class: str = field("the compute capability (CUDA) or gfx target (ROCm) the selection sees")
    gpu_class_basis: str = field("where it came from: the named GPU's row, --gpu-arch, or kvcalc's default")
    platform: str = field("cuda | rocm")
    choices: list[AttentionChoiceEntry] = field("one per kind of attention layer, in layer order")
    block_size: int = field("the block size the backends give, before the hybrid alignment")
    block_basis: str = field("why that size")


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
    memory: GpuMemory | None = field("with a GPU (--gpu / --gpu-total-memory): the KV budget, predicted per release "
                                     "with each term's basis, or the flag's", omit_if_none=True)
    attention: AttentionSection | None = field("the attention backend vLLM selects and why", omit_if_none=True,
                                               default=None)


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
    out_of_bounds_ids: OutOfBounds | None = field("the bad id range, or null")
    pinned_bytes_per_worker: list[int] = field("host bytes pinned per worker, per stage")
    pinned_bytes_per_engine: int = field("host bytes pinned by one engine")
    pinned_bytes_all_replicas: int = field("x DP")
    unused_bytes: int = field("budget minus pinned")
    wasted_bytes_per_worker: list[int] = field("rows a worker pinned that the scheduler never uses, per stage")
    note: str | None = field("how this entry's release lays the model out, when that differs from the selected "
                             "release's")
    unit: str = field("blocks | chunks")
    block_size_factor: int = field("offloaded block / GPU block (blocks_per_chunk from 0.26)")
    copies: int = field("copies of each block: world size, or 1 for replicated MLA")
    replicated: bool = field("MLA stored once (0.28+)")
    alignment: int = field("bytes each CPU chunk is rounded up to")
    aligned_bytes: int = field("scheduler: bytes per CPU block/chunk after alignment")
    padding_bytes: int = field("aligned minus unaligned")
    shared_region: bool = field("one shared /dev/shm host region per engine (0.27+ on the release's platforms)")
    capacity: Capacity = field("what the tier holds, group-aware")
    host: HostMemory = field("host memory resident")
    vllm_version: str | None = field("the release this entry was planned on (old / fixed: the selected release for "
                                     "its own family, else the family's representative)", omit_if_none=True,
                                     default=None)


@record
class OffloadSection:
    """The CPU offload pool: the native offloading connector's, or LMCache's (offload.lmcache)."""

    backend: str = field("native (vLLM's OffloadingConnector) | lmcache (LMCacheConnectorV1) | lmcache_mp "
                         "(LMCacheMPConnector and the LMCache server) | simple (SimpleCPUOffloadConnector)")
    cpu_bytes_to_use: int | None = field("the CPU budget of one engine, bytes (null: none given, no CPU counts)")
    cpu_bytes_source: str = field("what the budget was given as")
    block_size: int = field("offloaded block size in tokens (selected family)")
    block_size_factor: int = field("offloaded block / GPU block")
    startup_error: str | None = field("why the selected release's connector fails at start-up, or null")
    selected: FamilyEntry | None = field("the selected release's family entry (null when it would not start)")
    errors: dict[str, str] = field("family id -> why that family's release refuses the layout or fails to start "
                                   "its connector")
    old: FamilyEntry | None = field("the old family (0.14.0-0.19.1) on its own release, planned whole: the selected "
                                    "release if old, else 0.19.1; null when it refuses (errors.old)")
    fixed: FamilyEntry | None = field("the fixed family (0.20.0-0.23.0) on its own release: the selected release if "
                                      "fixed, else 0.23.0; null when it refuses (errors.fixed)")
    out_of_bounds: bool | None = field("the selected release goes out of bounds (null when it would not start)")
    pinned_bytes_per_engine: int | None = field("selected: host bytes pinned by one engine")
    unused_bytes: int | None = field("selected: budget minus pinned")
    data_parallel_size: int = field("engines")
    cpu_bytes_all_replicas: int | None = field("budget x DP")
    host: HostMemory | None = field("selected: host memory resident")
    families: dict[str, FamilyEntry] | None = field("with --compare-versions: one entry per family",
                                                    omit_if_none=True, default=None)
    lmcache: LMCacheSection | None = field("offload.backend lmcache: LMCache's pool; null for the native backend")
    backends: list[BackendEntry] | None = field("with --compare-backends: native, LMCache, the LMCache MP server "
                                                "and simple side by side",
                                                omit_if_none=True, default=None)
    simple: SimplePlan | None = field("offload.backend simple: SimpleCPUOffloadConnector's pool (absent for the other "
                                      "backends)", omit_if_none=True, default=None)
    lmcache_mp: MPPlan | None = field("offload.backend lmcache_mp (and vLLM 0.23+'s --kv-offloading-backend lmcache): "
                                      "the LMCache MP server's pool (absent for the other backends)", omit_if_none=True,
                                      default=None)


@record
class Report:
    """kvcalc plan --format json, schema version 1."""

    schema_version: int = field("1")
    kvcalc_version: str = field("kvcalc release")
    source: str = field("the input file")
    vllm_version: str = field("the selected vLLM release")
    vllm_version_from: str = field("where the release came from: a flag (--vllm-version), 'layout file', a "
                                   "manifest's image tag, a log's banner, or 'default' (kvcalc's newest, with a "
                                   "warning; --check refuses it)")
    family: str = field("old | fixed | packed | config | replicated | single-alloc")
    model: ModelSection = field("the model")
    parallel: ParallelSection = field("parallelism")
    cache: CacheSection = field("cache settings")
    gpu: GpuSection = field("the GPU KV cache")
    offload: OffloadSection | None = field("the CPU offload pool; null without a KV connector (offload_reason says "
                                           "why)")
    offload_reason: str | None = field("why offload is null: vLLM runs without a KV connector", omit_if_none=True,
                                       default=None)
    notes: list[str] = field("informational notes (also on stderr)")
    warnings: list[str] = field("things to act on (also on stderr)")
    checks: list[Check] | None = field("with --check: the gates", omit_if_none=True, default=None)
    releases: list[PlannedRelease | RefusedRelease] | None = field("with --compare-versions: one entry per release",
                                                                    omit_if_none=True, default=None)
    verify: VerifySection | None = field("with --verify", omit_if_none=True, default=None)
    engine: str = field("vllm | sglang: the serving engine whose rules planned it (an SGLang plan's document is "
                        "SglangReport: engine, model, parallel, sglang)", default="vllm")
    engines: list[EngineEntry] | None = field("with --compare-engines: vLLM and SGLang on the same model, GPUs and "
                                              "host", omit_if_none=True, default=None)
    error: str | None = field("the selected release would not start: why (kvcalc exits 2, or 1 under --check)",
                              omit_if_none=True, default=None)
    verdict: str = field(json=False)  # the pool's headline, for people (the table's first screen)


def offload_of(report: Report) -> OffloadSection:
    """The report's offload section, for the renderers of a connector's pool (only a plan without a KV connector
    has none, and its report never reaches them)."""
    if report.offload is None:
        raise InternalError(f"{report.source}: a connector's renderer was given a report without a connector")
    return report.offload
