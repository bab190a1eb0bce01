"""LMCache as the offload backend: its CPU pool on every rank, from the same layout. Pure.

vLLM's LMCacheConnectorV1 hands the engine to LMCache's in-process adapter (lmcache.integration.vllm; vLLM's
lmcache_connector.py imports it unless extra_config use_native is set). The rules below are LMCache 0.5.6's; each
was checked to be the same in every release kvcalc read (0.3.10 - 0.5.6, lmcache_releases.py), with the file it
lives in (0.5.6 paths; older releases keep the same code in v1/manager.py or the adapter).

- One chunk (integration/vllm/vllm_service_factory.py get_or_create_metadata): kv_shape = (num_layer, 1 if MLA else
  2, chunk_size, num_kv_head, head_size) with num_layer = the target's layers on this PP stage
  (model_config.get_num_layers(parallel_config)) + the drafter's (calculate_draft_layers: EAGLE/EAGLE3/MTP
  draft_model_config.get_num_layers(parallel_config), i.e. vLLM's get_pp_indices of the drafter's layer count,
  falling back to 1 on any error), num_kv_head = model_config.get_num_kv_heads (1 for MLA, else max(1, heads //
  TP)), head_size = model_config.get_head_size (kv_lora_rank + qk_rope_head_dim for MLA), dtype =
  get_kv_cache_torch_dtype(cache_dtype, model dtype). The default GPU connector (VLLMPagedMemGPUConnectorV2,
  use_gpu_connector_v3 false) leaves metadata.kv_layer_groups_manager unset, so v1/metadata.py get_shapes is
  [kv_size, num_layer, chunk_size, heads x head_size]: every layer is sized alike. Drafter layers are sized with
  the target's heads and head size; sliding-window and chunked-local layers hold a full chunk like full attention.
- Bytes a chunk takes (v1/memory_allocators/tensor_memory_allocator.py, v1/memory_management.py AddressManager):
  rounded up to ALIGN_BYTES = 4096 (or extra_config local_cpu.pinned_align_bytes, 0.3.15+). With use_layerwise
  each layer of a chunk is its own object (v1/cache_engine.py store_layer: key.split_layers), aligned apart.
- The pool (v1/storage_backend/local_cpu_backend.py initialize_allocator): int(max_local_cpu_size * 1024**3) bytes
  per rank -- GiB, per rank, not per engine -- or first_rank_max_local_cpu_size on rank 0 when save_only_first_rank
  holds (extra_config, default: the model uses MLA; v1/cache_engine.py `... and metadata.use_mla`). It is pinned
  by LMCache's own cudaHostAlloc (v1/memory_management.py _allocate_cpu_memory -> lmcache.c_ops
  alloc_pinned_ptr; csrc/mem_alloc.cpp), not PyTorch's caching allocator: no power-of-two rounding, whole host
  pages (2 MiB pages with local_cpu_use_hugepages, v1/distributed/config.py HUGEPAGE_SIZE_BYTES). No pool when
  max_local_cpu_size <= 0 (v1/storage_backend/__init__.py CreateStorageBackends).
- Which ranks allocate (v1/cache_engine.py post_init): every rank, unless save_only_first_rank: then rank 0, the
  ranks in lookup_server_worker_ids (default [0] with MLA, v1/config.py _get_lookup_server_worker_ids) and, with
  enable_controller, the ranks in lmcache_worker_ids (default [0] with MLA); use_layerwise makes every rank
  allocate again.
- Disk (v1/storage_backend/local_disk_backend.py): int(max_local_disk_size * 1024**3) bytes per storing rank,
  filled with objects of their aligned (physical) size.
- Hidden states (0.5.1+, enable_hidden_state_cache): every LMCacheEngine -- every worker, MLA ranks that store no
  KV included, and the scheduler with enable_scheduler_bypass_lookup -- pins a second pool of
  int(max_hidden_state_cpu_size * 1024**3) bytes (default 2.0) at construction (v1/cache_engine.py:245-246 ->
  v1/hidden_state_store.py:74-81 MixedMemoryAllocator -> _allocate_cpu_memory, no hugepages).
- Start-up failures (_startup_failure): what raises on the ranks that build a StorageManager; LMCache from 0.3.14
  catches it and stores nothing, earlier releases stop vLLM's worker (vocab/releases/lmcache.py
  init_failure_degrades).
"""

from __future__ import annotations

from ..engines.vllm.layers import pp_split
from ..vocab.errors import StartupRefusal, UnsupportedError, known
from ..vocab.kinds import KV_DTYPES, HeadRuleError, KVQuant, LayerKind, heads_per_rank
from ..vocab.layout import Layout
from ..vocab.releases.lmcache import LMCacheLayout, init_failure_degrades, lmcache_of
from ..vocab.records import field, record, replace
from ..vocab.releases.vllm import Behaviour
from ..vocab.units import DTYPE_BYTES, round_up
from .base import node_peak

ALIGN_BYTES = 4096  # v1/memory_management.py AddressManager.ALIGN_BYTES
HUGEPAGE_BYTES = 2 << 20  # v1/distributed/config.py HUGEPAGE_SIZE_BYTES
GIB = 1024 ** 3
CONNECTOR = "LMCacheConnectorV1"


@record
class LMCacheStage:
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
class FirstRank:
    """Rank 0 with save_only_first_rank and first_rank_max_local_cpu_size: a pool of its own size."""

    pool_bytes: int = field("int(first_rank_max_local_cpu_size x 1024^3)")
    chunks: int = field("chunks it holds")
    tokens: int = field("tokens it holds")


@record
class VllmFlag:
    """vLLM's --kv-offloading-backend lmcache on the selected release."""

    kv_offloading_size: float = field("--kv-offloading-size, GiB for the engine")
    connector: str = field("the connector vLLM configures")
    # 0.14.0 - 0.22.1: kv_connector_extra_config = {"lmcache.local_cpu": True, "lmcache.max_local_cpu_size":
    # size / (TP x PP)}. (0.23.0+ names LMCacheMPConnector instead: backends/lmcache_mp.py.)
    max_local_cpu_size: float = field("what LMCache receives per rank (size / (TP x PP))")


@record
class LMCachePlan:
    version: str
    connector: str  # LMCacheConnectorV1
    chunk_size: int
    use_mla: bool
    save_only_first_rank: bool  # as LMCache settles it (extra_config and use_mla)
    local_cpu: bool
    use_layerwise: bool
    max_local_cpu_size: float
    first_rank_max_local_cpu_size: float | None
    alignment: int
    stages: tuple[LMCacheStage, ...]
    storing_ranks: int  # ranks of one engine that allocate a pool
    storing_rank_ids: tuple[int, ...]
    pool_bytes_per_storing_rank: int  # int(max_local_cpu_size * 1024**3)
    first_rank: FirstRank | None
    pool_bytes_per_engine: int
    resident_bytes_per_engine: int
    resident_bytes_per_node: int
    tokens_per_engine: int  # tokens every stage can hold (rank 0's with save_only_first_rank)
    disk_bytes_per_rank: int
    disk_chunks_per_rank: int
    vllm_flag: VllmFlag | None
    notes: tuple[str, ...]
    warnings: tuple[str, ...]
    hidden_state_pools: int = 0  # processes of one engine that pin a hidden-state pool (enable_hidden_state_cache)
    hidden_state_bytes: int = 0  # int(max_hidden_state_cpu_size * 1024**3), each
    degraded: str | None = None  # why LMCache's start-up failed and it runs storing nothing (0.3.14+)


def _refuse(layout: Layout, what: str) -> UnsupportedError:
    return UnsupportedError(f"{layout.source}: offload.backend lmcache: {what}")


def _model_shape(layout: Layout) -> tuple[int, int, int, int]:
    """(kv_size, KV heads per rank, head size, dtype bytes) as LMCache sizes every layer, refusing what its one
    per-model shape cannot describe."""
    m, cache = layout.model, layout.cache
    kinds = m.kinds
    if m.has_mamba:
        raise _refuse(layout, "Mamba / linear-attention layers: LMCache's in-process connector sizes every layer as "
                              "attention K/V (it serves hybrid models only through its multi-process server)")
    if m.index_head_dim is not None:
        raise _refuse(layout, "the DeepSeek-V3.2 indexer cache: LMCache's kv_shape has no place for it")
    if cache.kv_cache_dtype_skip_layers:
        raise _refuse(layout, "cache.kv_cache_dtype_skip_layers: LMCache sizes every layer with one dtype")
    row = KV_DTYPES.get(cache.kv_cache_dtype)
    if row is None or row.quant is not KVQuant.NONE or cache.kv_cache_dtype == "fp8_ds_mla":
        raise _refuse(layout, f"cache.kv_cache_dtype {cache.kv_cache_dtype!r}: LMCache sizes elements by "
                              "get_kv_cache_torch_dtype alone, without the per-token scales or packed layout")
    dtype_bytes = DTYPE_BYTES[row.storage or m.dtype]
    if LayerKind.MLA in kinds:
        if kinds != {LayerKind.MLA}:
            raise _refuse(layout, "MLA layers next to other attention kinds: LMCache sizes every layer as MLA")
        # vLLM model_config.get_head_size for MLA: kv_lora_rank + qk_rope_head_dim; get_num_kv_heads: 1.
        return 1, 1, m.mla_head_size, dtype_bytes
    attn = [i for i, k in enumerate(m.layer_types) if k.attention]
    heads = {m.num_kv_heads[i] for i in attn}
    sizes = {m.head_size[i] for i in attn} | {m.head_size_v[i] for i in attn}
    if len(heads) > 1 or len(sizes) > 1:
        raise _refuse(layout, "layers with different KV heads or head sizes: LMCache's kv_shape has one "
                              "(num_kv_head, head_size) for every layer")
    tp = layout.parallel.tensor_parallel_size
    try:
        per_rank = heads_per_rank(heads.pop(), tp, replicates=m.kv_head_replication)
    except HeadRuleError as e:
        raise _refuse(layout, f"model.num_kv_heads: {e}") from None
    return 2, per_rank, sizes.pop(), dtype_bytes


def _draft_layers(layout: Layout) -> list[int]:
    """Drafter layers LMCache adds on each stage: draft_model_config.get_num_layers(parallel_config) is vLLM's
    get_pp_indices of the drafter's layers for this rank's stage; with VLLM_PP_LAYER_PARTITION (which sums to the
    target's layers) get_pp_indices raises and calculate_draft_layers falls back to 1."""
    d, par = layout.model.draft, layout.parallel
    pp = par.pipeline_parallel_size
    if d is None or not d.num_layers:  # ngram / suffix drafting: calculate_draft_layers counts only EAGLE / MTP
        return [0] * pp
    if par.pp_layer_partition is not None and pp > 1:
        return [1] * pp
    return pp_split(d.num_layers, pp)


def _vllm_flag(lm: LMCacheLayout, behaviour: Behaviour, tp: int, pp: int) -> VllmFlag | None:
    if not lm.via_vllm_flag:
        return None
    size = known(lm.kv_offloading_size, "vLLM's --kv-offloading-size")  # set with via_vllm_flag
    # 0.14.0 - 0.22.1 config/vllm.py _post_init_kv_transfer_config: kv_gb_per_rank = kv_offloading_size /
    # num_kv_ranks (TP x PP), a float division, read by LMCache as float and pinned as int(x * 1024**3).
    return VllmFlag(kv_offloading_size=size, connector=CONNECTOR, max_local_cpu_size=size / (tp * pp))


def _pool_size(layout: Layout, behaviour: Behaviour, flag: VllmFlag | None, notes: list[str]) -> tuple[bool, float]:
    """(local_cpu, max_local_cpu_size) as the connector receives them: vLLM's flag overrides the LMCache config."""
    lm, par = lmcache_of(layout), layout.parallel
    if flag is not None:
        size = flag.max_local_cpu_size
        notes.append(f"vLLM {behaviour.version}: --kv-offloading-backend lmcache --kv-offloading-size "
                     f"{flag.kv_offloading_size:g} gives LMCache max_local_cpu_size {size:g} GiB per rank "
                     f"(the size / (TP {par.tensor_parallel_size} x PP {par.pipeline_parallel_size}), config/vllm.py), "
                     "overriding the LMCache config")
        return True, known(size, "the in-process connector's size")
    if "max_local_cpu_size" not in dict(lm.provenance):
        notes.append(f"LMCache max_local_cpu_size not set: its default {lm.max_local_cpu_size:g} GiB per rank "
                     "(v1/config.py)")
    return lm.local_cpu, lm.max_local_cpu_size


def _save_only_first_rank(layout: Layout) -> bool:
    """LMCache's save_only_first_rank as it settles it (extra_config, default: the model uses MLA; v1/cache_engine.py
    `... and metadata.use_mla`), refusing the topologies where its first rank is not what kvcalc can name."""
    lm, par, use_mla = lmcache_of(layout), layout.parallel, layout.model.is_mla
    sofr = (use_mla if lm.save_only_first_rank is None else lm.save_only_first_rank) and use_mla
    if sofr and par.pipeline_parallel_size > 1:
        raise _refuse(layout, "save_only_first_rank with pipeline parallelism: only global rank 0 stores "
                              "(v1/metadata.py first_rank = 0), so the other stages' layers are never stored; set "
                              "extra_config.save_only_first_rank false")
    if sofr and par.distributed_executor_backend == "external_launcher" and par.data_parallel_size > 1:
        raise _refuse(layout, "save_only_first_rank under external_launcher with DP > 1: every DP rank shares one "
                              "world, so which rank is LMCache's first rank (parallel_config.rank 0) depends on the "
                              "launcher; kvcalc does not model it")
    return sofr


def _storing_ranks(layout: Layout, sofr: bool) -> tuple[int, ...]:
    """The ranks of one engine that allocate a pool (v1/cache_engine.py post_init): every rank, unless
    save_only_first_rank: rank 0, the lookup servers' and (with enable_controller) the LMCache workers' ranks."""
    lm, par = lmcache_of(layout), layout.parallel
    world = par.tensor_parallel_size * par.pipeline_parallel_size
    if not sofr or lm.use_layerwise:
        return tuple(range(world))
    ids = {0} | set(lm.lookup_server_worker_ids or ())
    if lm.enable_controller:
        ids |= set(lm.lmcache_worker_ids or ())
    bad = sorted(i for i in ids if i >= world)
    if bad:
        raise _refuse(layout, f"worker id {bad[0]} in lookup_server_worker_ids / lmcache_worker_ids: one engine "
                              f"has ranks 0 - {world - 1} (LMCache asserts)")
    return tuple(sorted(ids))


def _stages(layout: Layout, shape: tuple[int, int, int, int], storing: tuple[int, ...], pool: int,
            local_cpu: bool, drafts: list[int]) -> list[LMCacheStage]:
    """One entry per PP stage: its chunk (the target's and the drafter's layers alike), and what a pool holds."""
    lm, par = lmcache_of(layout), layout.parallel
    kv_size, heads, head_size, dtype_bytes = shape
    align = lm.pinned_align_bytes or ALIGN_BYTES
    per_layer = kv_size * lm.chunk_size * heads * head_size * dtype_bytes  # one layer's slice of a chunk
    stages = []
    parts = pp_split(layout.model.num_layers, par.pipeline_parallel_size, par.pp_layer_partition)
    for rank, (n, d) in enumerate(zip(parts, drafts)):
        layers = n + d
        chunk = layers * per_layer
        aligned = layers * round_up(per_layer, align) if lm.use_layerwise else round_up(chunk, align)
        in_stage = sum(1 for i in storing if i // par.tensor_parallel_size == rank)
        chunks = pool // aligned if aligned and in_stage else 0
        stages.append(LMCacheStage(
            pp_rank=rank, num_layers=n, draft_layers=d, kv_size=kv_size, num_kv_heads=heads, head_size=head_size,
            dtype_bytes=dtype_bytes, chunk_bytes=chunk, chunk_bytes_aligned=aligned, chunks_per_rank=chunks,
            tokens_per_rank=chunks * lm.chunk_size if local_cpu else 0, storing_ranks=in_stage))
    return stages


def _draft_notes(layout: Layout, shape: tuple[int, int, int, int], drafts: list[int], notes: list[str],
                 warnings: list[str]) -> None:
    """How LMCache sizes a drafter's layers, where that is not how vLLM allocates them."""
    d, pp = layout.model.draft, layout.parallel.pipeline_parallel_size
    if d is None or not d.num_layers:
        return
    kv_size, heads, head_size, _ = shape
    own = (d.num_kv_heads, d.head_size) if d.method in ("eagle", "eagle3") else None
    if layout.model.is_mla or (own is not None and own != (None, None) and (
            d.head_size not in (None, head_size)
            or (d.num_kv_heads is not None and d.num_kv_heads != layout.model.num_kv_heads[-1]))):
        notes.append(f"LMCache sizes the {d.method} drafter's {d.num_layers} layer(s) like the target's "
                     f"({kv_size} x {heads} head(s) x {head_size}), not as vLLM allocates them "
                     "(calculate_draft_layers only adds to num_layer)")
    if pp > 1 and drafts[-1] < d.num_layers:
        warnings.append(f"LMCache counts the drafter's layers on PP stage(s) "
                        f"{', '.join(str(i) for i, n in enumerate(drafts) if n)} (get_pp_indices of the drafter's "
                        f"{d.num_layers} layer(s)), while vLLM places them on the last stage {pp - 1}")


def _startup_failure(lm: LMCacheLayout, max_size: float, first_size: float | None) -> tuple[str, str] | None:
    """(what LMCache raises while it starts, in its own words; where: "init" building the engine, before any pool,
    or "post_init" building a storing rank's StorageManager, after the hidden-state pools), or None. The rules and
    lines are LMCache 0.5.6's; each is the same in 0.3.10 - 0.5.6 (the hidden state in 0.5.1 - 0.5.6, the only
    releases that have it)."""
    if lm.enable_hidden_state_cache and int(lm.max_hidden_state_cpu_size * GIB) <= 0:
        # LMCacheEngine.__init__ (v1/cache_engine.py:245-246) builds the HiddenStateStore, which raises before it
        # allocates (v1/hidden_state_store.py:74-79); no engine, so no StorageManager and no pool either.
        return (("ValueError: max_hidden_state_cpu_size must be > 0 when enable_hidden_state_cache=True "
                 "(v1/hidden_state_store.py:76, building the LMCacheEngine)"), "init")
    if max_size <= 0:
        # v1/storage_backend/__init__.py:180-190 CreateStorageBackends creates no LocalCPUBackend ("No cpu memory
        # is allocated as max_local_cpu_size <= 0", whatever first_rank_max_local_cpu_size says); the StorageManager
        # a storing rank builds in post_init then fails.
        why = "max_local_cpu_size <= 0: LMCache creates no LocalCPUBackend (v1/storage_backend/__init__.py:180-190)"
        if lm.local_disk and lm.max_local_disk_size > 0:
            return ((f"{why} and the local disk backend needs one: AssertionError at `assert local_cpu_backend is "
                     "not None` (v1/storage_backend/__init__.py:222)"), "post_init")
        return ((f"{why} and the StorageManager takes it as its allocator: KeyError: 'LocalCPUBackend' "
                 "(v1/storage_backend/storage_manager.py:325)"), "post_init")
    if first_size is not None and first_size <= 0:
        # v1/storage_backend/local_cpu_backend.py:355-367 _calculate_effective_cpu_size on a save_only_first_rank
        # rank: min(0, available - reserve) is 0, and LMCache asserts it is positive.
        return (("extra_config.first_rank_max_local_cpu_size 0: AssertionError at `assert effective_cpu_size > 0` "
                 "(v1/storage_backend/local_cpu_backend.py:367)"), "post_init")
    return None


def _failed(layout: Layout, behaviour: Behaviour, failure: tuple[str, str], plan: LMCachePlan) -> LMCachePlan:
    """LMCache's start-up failed on its storing ranks: 0.3.14+ logs it and stores nothing (vLLM starts); earlier
    releases stop vLLM's worker (vocab/releases/lmcache.py init_failure_degrades)."""
    lm, par = lmcache_of(layout), layout.parallel
    what, phase = failure
    if not init_failure_degrades(lm.version):
        raise StartupRefusal(f"LMCache {lm.version} raises in rank 0's {phase}, which vLLM {behaviour.version}'s "
                             f"worker does not survive (LMCache catches it from 0.3.14): {what}")
    logged = ("Failed during post_init: ... System will operate in degraded mode (recompute).\" (v1/manager.py:"
              "212-238)" if phase == "post_init" else "Failed to initialize LMCacheManager components: ... System "
              "will operate in degraded mode (recompute).\" (v1/manager.py:104-110)")
    warning = (f"LMCache {lm.version} fails to start and stores nothing: {what}; it logs \"{logged} and vLLM "
               "starts without a CPU tier")
    pools = plan.hidden_state_pools if phase == "post_init" else 0
    resident = _resident(layout, (), [], plan.hidden_state_bytes, pools)
    stages = tuple(replace(st, chunks_per_rank=0, tokens_per_rank=0) for st in plan.stages)
    return replace(plan, stages=stages, pool_bytes_per_storing_rank=0, first_rank=None, pool_bytes_per_engine=0,
                   resident_bytes_per_engine=sum(resident), tokens_per_engine=0, disk_bytes_per_rank=0,
                   disk_chunks_per_rank=0, hidden_state_pools=pools, degraded=what,
                   resident_bytes_per_node=node_peak(resident, par.nodes_per_engine, par.engines_per_node),
                   warnings=plan.warnings + (warning,))


def _resident(layout: Layout, storing: tuple[int, ...], pools: list[int], hidden: int, hidden_pools: int) -> list[int]:
    """Host bytes each rank of one engine keeps resident: its KV pool (whole host pages, 2 MiB with
    local_cpu_use_hugepages) and its hidden-state pool (whole host pages); a scheduler's hidden-state pool is
    counted on rank 0, whose node runs it."""
    lm, par = lmcache_of(layout), layout.parallel
    world = par.tensor_parallel_size * par.pipeline_parallel_size
    page = HUGEPAGE_BYTES if lm.local_cpu_use_hugepages else layout.host.page_size
    out = [0] * world
    for i, p in zip(storing, pools):
        out[i] = round_up(p, page) if p else 0
    one = round_up(hidden, layout.host.page_size)
    for i in range(min(hidden_pools, world)):
        out[i] += one
    out[0] += one * max(0, hidden_pools - world)
    return out


def _hidden_pools(layout: Layout) -> tuple[int, int]:
    """(processes of one engine that pin a hidden-state pool, its bytes): every worker's LMCacheEngine, and the
    scheduler's with enable_scheduler_bypass_lookup (integration/vllm/vllm_service_factory.py:166-217 builds one
    there only then)."""
    lm, par = lmcache_of(layout), layout.parallel
    if not lm.enable_hidden_state_cache:
        return 0, 0
    world = par.tensor_parallel_size * par.pipeline_parallel_size
    return world + (1 if lm.enable_scheduler_bypass_lookup else 0), max(0, int(lm.max_hidden_state_cpu_size * GIB))


def plan_lmcache(layout: Layout, behaviour: Behaviour) -> LMCachePlan:
    lm, par = lmcache_of(layout), layout.parallel
    notes: list[str] = list(lm.notes)
    warnings: list[str] = []
    flag = _vllm_flag(lm, behaviour, par.tensor_parallel_size, par.pipeline_parallel_size)
    local_cpu, max_size = _pool_size(layout, behaviour, flag, notes)
    if lm.lazy_allocator:
        raise _refuse(layout, f"enable_lazy_memory_allocator: LMCache {lm.version} (0.3.10 - 0.3.12) pins the pool "
                              "lazily and grows it at run time; kvcalc does not model that")
    shape = _model_shape(layout)
    sofr = _save_only_first_rank(layout)
    storing = _storing_ranks(layout, sofr)
    per_rank_pool = int(max_size * GIB) if max_size > 0 else 0
    first_size = lm.first_rank_max_local_cpu_size if sofr and lm.first_rank_max_local_cpu_size is not None else None
    first_pool = (int(first_size * GIB) if first_size is not None else per_rank_pool) if max_size > 0 else 0
    drafts = _draft_layers(layout)
    stages = _stages(layout, shape, storing, per_rank_pool, local_cpu, drafts)
    _draft_notes(layout, shape, drafts, notes, warnings)
    first = None
    if first_size is not None:
        c = first_pool // stages[0].chunk_bytes_aligned if stages[0].chunk_bytes_aligned else 0
        first = FirstRank(pool_bytes=first_pool, chunks=c, tokens=c * lm.chunk_size if local_cpu else 0)
    pools = [first_pool if i == 0 else per_rank_pool for i in storing]
    hidden_pools, hidden = _hidden_pools(layout)
    resident = _resident(layout, storing, pools, hidden, hidden_pools)
    if sofr and not lm.use_layerwise:
        tokens = first.tokens if first is not None else stages[0].tokens_per_rank
    else:
        tokens = min(s.tokens_per_rank for s in stages)
    disk = int(lm.max_local_disk_size * GIB) if lm.local_disk else 0
    worst = max(s.chunk_bytes_aligned for s in stages)
    _pool_notes(layout, flag, sofr, storing, local_cpu, max_size, per_rank_pool, stages, worst, notes, warnings)
    _hidden_note(layout, hidden_pools, hidden, notes)
    out = LMCachePlan(
        version=lm.version, connector=CONNECTOR, chunk_size=lm.chunk_size, use_mla=layout.model.is_mla,
        save_only_first_rank=sofr, local_cpu=local_cpu, use_layerwise=lm.use_layerwise, max_local_cpu_size=max_size,
        first_rank_max_local_cpu_size=first_size, alignment=lm.pinned_align_bytes or ALIGN_BYTES, stages=tuple(stages),
        storing_ranks=len(storing), storing_rank_ids=storing, pool_bytes_per_storing_rank=per_rank_pool,
        first_rank=first, pool_bytes_per_engine=sum(pools), resident_bytes_per_engine=sum(resident),
        resident_bytes_per_node=node_peak(resident, par.nodes_per_engine, par.engines_per_node),
        tokens_per_engine=tokens,
        disk_bytes_per_rank=disk, disk_chunks_per_rank=disk // worst if worst else 0, vllm_flag=flag,
        notes=tuple(notes), warnings=tuple(warnings), hidden_state_pools=hidden_pools, hidden_state_bytes=hidden)
    failure = _startup_failure(lm, max_size, first_size)
    return out if failure is None else _failed(layout, behaviour, failure, out)


def _hidden_note(layout: Layout, pools: int, each: int, notes: list[str]) -> None:
    if pools:
        lm = lmcache_of(layout)
        notes.append(f"LMCache enable_hidden_state_cache: {pools} process(es) (every worker, MLA ranks that store no "
                     f"KV included{', and the scheduler' if lm.enable_scheduler_bypass_lookup else ''}) each pin a "
                     f"hidden-state pool of max_hidden_state_cpu_size {lm.max_hidden_state_cpu_size:g} GiB = "
                     f"{each:,} B besides the KV pool (v1/cache_engine.py:245, v1/hidden_state_store.py:74): "
                     "counted in the resident bytes")


def _pool_notes(layout: Layout, flag: VllmFlag | None, sofr: bool, storing: tuple[int, ...], local_cpu: bool,
                max_size: float, per_rank_pool: int, stages: list[LMCacheStage], worst: int, notes: list[str],
                warnings: list[str]) -> None:
    """What the pool's settings mean, in the order a reader meets them."""
    lm, par = lmcache_of(layout), layout.parallel
    world = par.tensor_parallel_size * par.pipeline_parallel_size
    if sofr:
        notes.append(f"LMCache save_only_first_rank (MLA): only rank(s) {', '.join(map(str, storing))} of "
                     f"{world} allocate a pool; the others receive rank 0's KV by broadcast")
        if flag is not None and len(storing) < world:
            warnings.append(f"LMCache stores MLA on rank 0 only: --kv-offloading-size {flag.kv_offloading_size:g} is "
                            f"divided by {world} ranks but only {len(storing)} pin a pool, so the engine uses "
                            f"{len(storing)}/{world} of it ({max_size:g} GiB)")
    if not local_cpu:
        notes.append("LMCache local_cpu false: the pool is still pinned (a staging buffer for disk/remote), but the "
                     "CPU tier serves no hits (0 tokens)")
    if sofr:
        # v1/storage_backend/local_cpu_backend.py:315-370 (the same in 0.3.10 - 0.5.6): with save_only_first_rank
        # every storing rank's pool is min(configured, psutil.virtual_memory().available / 2^30 - reserve)
        # (v1/system_detection.py:48-55), read as the rank starts: no input says what is free then.
        notes.append("LMCache caps the pool of each storing rank (save_only_first_rank) at psutil's available "
                     f"memory minus reserve_local_cpu_size ({lm.reserve_local_cpu_size:g} GiB) when the rank starts "
                     "(v1/storage_backend/local_cpu_backend.py:315-370, v1/system_detection.py:48-55): the node's "
                     "free memory at that moment (psutil reads the node's /proc/meminfo, not a pod's limit), which "
                     "kvcalc cannot know, --host-memory included; the figures are the configured size, an upper "
                     "bound")
    if max_size > 0 and per_rank_pool and min(s.chunks_per_rank for s in stages if s.storing_ranks) == 0:
        warnings.append(f"LMCache max_local_cpu_size {max_size:g} GiB ({per_rank_pool:,} B) holds no chunk of "
                        f"{worst:,} B: the CPU tier stores nothing")
    if lm.ignored:
        notes.append("LMCache keys that do not change the CPU pool: " + ", ".join(lm.ignored))


def check_hma(preference: str, version: str) -> None:
    """LMCacheConnectorV1 does not implement SupportsHMA (vLLM 0.33.0 kv_connector/v1/lmcache_connector.py), so
    vLLM turns the hybrid manager off with it (config/vllm.py) and refuses to start when it is forced on
    (kv_connector/factory.py: "does not support HMA but HMA is enabled")."""
    if preference == "on":
        raise StartupRefusal(f"vLLM {version} refuses to start: the hybrid KV cache manager was forced on but "
                             f"{CONNECTOR} does not support it")
