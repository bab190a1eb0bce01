"""The report's sections shown only on request: --check's gates (and the refused report when the release would not
start), --compare-versions' releases, --compare-backends' entries, --verify's summary, and LMCache's pool. Apart
from sections.py, so a plain `kvcalc plan` does not define them (start-up time is a target)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..vocab.records import field, record

if TYPE_CHECKING:  # LMCache's module is imported only for LMCache layouts
    from ..backends.lmcache_plan import FirstRank, LMCacheStage, VllmFlag
    from ..backends.simple_plan import SimplePlan
    from .sections import FamilyEntry


@record
class LMCacheSection:
    """LMCache's CPU pool (offload.backend lmcache): per rank, as LMCache sizes it."""

    lmcache_version: str = field("the LMCache release whose rules apply")
    connector: str = field("LMCacheConnectorV1")
    modelled: bool = field("true (vLLM 0.23+'s --kv-offloading-backend lmcache is the MP server's pool: "
                           "offload.lmcache_mp)")
    chunk_size: int = field("tokens per chunk")
    use_mla: bool = field("the model uses MLA (one latent per token, replicated on every TP rank)")
    save_only_first_rank: bool = field("only rank 0 (and lookup/worker ids) store, as LMCache settles it")
    local_cpu: bool = field("the CPU tier serves hits (false: the pool is only a staging buffer)")
    use_layerwise: bool = field("chunks stored per layer")
    max_local_cpu_size: float = field("GiB per rank (LMCache: int(x x 1024^3) bytes)")
    first_rank_max_local_cpu_size: float | None = field("rank 0's own GiB with save_only_first_rank")
    alignment: int = field("bytes each chunk object is aligned to")
    stages: tuple[LMCacheStage, ...] = field("one per PP stage")
    storing_ranks: int | None = field("ranks of one engine that allocate a pool")
    storing_rank_ids: list[int] = field("their ranks (PP x TP order)")
    pool_bytes_per_storing_rank: int | None = field("int(max_local_cpu_size x 1024^3)")
    first_rank: FirstRank | None = field("rank 0's pool when first_rank_max_local_cpu_size sets it")
    pool_bytes_per_engine: int | None = field("all storing ranks of one engine")
    pool_bytes_all_replicas: int | None = field("x DP")
    resident_bytes_per_engine: int | None = field("pinned by cudaHostAlloc: whole host pages (2 MiB hugepages)")
    resident_bytes_per_node: int | None = field("the engines on one node, or the node with the most")
    tokens_per_engine: int | None = field("tokens every stage holds (rank 0's with save_only_first_rank)")
    disk_bytes_per_rank: int | None = field("int(max_local_disk_size x 1024^3) with local_disk")
    disk_chunks_per_rank: int | None = field("disk bytes // aligned chunk bytes")
    vllm_flag: VllmFlag | None = field("set through --kv-offloading-backend lmcache: what vLLM passes")
    config_from: dict[str, str] = field("LMCache key -> where its value came from")


@record
class BackendEntry:
    """One backend's CPU tier for --compare-backends."""

    backend: str = field("native | lmcache | lmcache_mp | simple")
    pool_bytes_per_engine: int | None = field("host bytes the pool takes, one engine")
    resident_bytes_per_engine: int | None = field("host bytes resident, one engine")
    resident_bytes_per_node: int | None = field("the node's")
    tokens: int | None = field("CPU tokens held (native: group-aware, every worker; LMCache: every stage; "
                               "LMCache MP server: this engine's share of the node's L1; simple: every rank)")
    unit_bytes: int | None = field("bytes one CPU block/chunk takes (worst stage)")
    tokens_per_unit: int | None = field("tokens per CPU block/chunk")
    startup_error: str | None = field("why it would not start, or null")


@record
class Check:
    """One --check gate."""

    name: str = field("startup | out_of_bounds | zero_cpu_blocks | cpu_smaller_than_gpu | host_memory | shm | "
                      "min_cpu_tokens")
    passed: bool = field("true only when the gate passed (status pass); false when it failed, was asked for and "
                         "could not be evaluated, or was skipped: status says which")
    status: str = field("pass | fail | unknown (asked for, not evaluable: exit 1) | skipped (not asked for)")
    reason: str = field("why, with the numbers")
    limit: int | None = field("what the gate allows (bytes or tokens)", omit_if_none=True, default=None)
    limit_from: str | None = field("where the limit came from (a flag, the manifest)", omit_if_none=True, default=None)
    need: int | None = field("what the plan needs, in the limit's unit", omit_if_none=True, default=None)
    margin: int | None = field("limit - need (negative: short)", omit_if_none=True, default=None)


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
    offload: FamilyEntry | None = field("its family entry (the native connector's)")
    simple: SimplePlan | None = field("offload.backend simple: SimpleCPUOffloadConnector's pool on that release",
                                      omit_if_none=True, default=None)


@record
class RefusedRelease:
    """A --compare-versions release that refuses the layout before any number exists."""

    vllm_version: str = field("release")
    family: None = field("null: refused")
    startup_error: str = field("the refusal")
    offload: None = field("null")
    simple = None  # (no SimpleCPUOffloadConnector section: refused)
    warning = None  # (no note on how it was modelled: it was not)


@record
class VerifySection:
    """--verify: the tensors rebuilt on torch's meta device."""

    ok: bool = field("every view tiles its tensor")
    torch_version: str = field("torch used")
    tensors_checked: int = field("tensors rebuilt")
    views_checked: int = field("layer views checked")
    summary: str = field("one line")


@record
class RefusedReport:
    """kvcalc plan --check --format json when the selected release refuses the layout at start-up."""

    schema_version: int = field("1")
    vllm_version: str = field("the selected vLLM release (engine sglang: the SGLang release)")
    source: str = field("the input file")
    checks: list[Check] = field("the failed startup gate")
    engine: str = field("vllm | sglang: the engine that refuses", default="vllm")
