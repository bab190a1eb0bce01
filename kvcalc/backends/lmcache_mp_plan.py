"""LMCache's multi-process server as the host pool: its L1 (one per node, shared by every engine and rank that
registers with it), what one chunk of one rank costs in it, what it holds and what the server puts on every GPU.
The rules are LMCache 0.5.6's (vocab/releases/lmcache_mp.py for the server's settings); every figure was checked
against LMCache's own code run on CPU (tests/fixtures/lmcache_mp/vectors.json). Pure.

- The pool (v1/distributed/memory_manager/l1_memory_manager.py:44-90 create_memory_allocator): lazy by default
  (LazyMemoryAllocator), else MixedMemoryAllocator (eager: cudaHostAlloc; hugepages; a /dev/shm segment with
  --shm-name). l1_pool below.
- One object = one chunk of one rank (cache_context.py:264-300, utils.py:103-114: kv_size x layers x chunk x
  heads x head size x itemsize, summed over the rank's kernel groups, which share one object group unless they are
  sliding-window or recurrent: kv_layer_groups.py:666-722 _detect_object_groups), rounded up to --l1-align-bytes
  (v1/memory_management.py:1361-1371); no header: the only overhead is the alignment.
- Who writes (integration/vllm/vllm_multi_process_adapter.py:362-459 ParallelStrategy): every rank, unless the
  model is MLA-only (utils.py:348-356: use_mla and not hybrid): then the first TP rank of each PP stage alone, the
  latent being the same on every TP rank (:395-399, :451-459).
- What it holds: whole chunks; an allocation that does not fit fails (OUT_OF_MEMORY: the chunk is not stored,
  l1_manager.py:469-553), and eviction starts once usage >= --eviction-trigger-watermark, checked once a second
  (storage_controllers/eviction_controller.py:160-190: `used / total < watermark`).
"""

from __future__ import annotations

import math

from ..engines.vllm import GpuStage
from ..engines.vllm.specs import ChunkedLocalAttentionSpec, FullAttentionSpec, MLAAttentionSpec, SlidingWindowSpec
from ..vocab.errors import StartupRefusal, UnsupportedError, known
from ..vocab.kinds import KVQuant
from ..vocab.layout import Layout
from ..vocab.records import field, record
from ..vocab.releases import lmcache_mp as mp
from ..vocab.units import DTYPE_BYTES
from .lmcache_mp_notes import advise


@record
class L1Pool:
    """The server's L1 as its allocator builds it (one per node)."""

    allocator: str = field("LazyMemoryAllocator | MixedMemoryAllocator")
    mode: str = field("lazy | eager (cudaHostAlloc) | hugepages | shm (a /dev/shm segment)")
    size_bytes: int = field("int(--l1-size-gb x 2^30)")
    init_bytes: int = field("lazy: min(int(--l1-init-size-gb x 2^30), size): pinned at start")
    align_bytes: int = field("--l1-align-bytes: every object is rounded up to it")
    reserved_bytes: int = field("virtual bytes reserved at start (lazy: the 64 MiB-rounded pool + align - 1)")
    resident_bytes_initial: int = field("bytes pinned (resident) when the server has started")
    resident_bytes: int = field("bytes pinned once the lazy pool has grown: the whole (64 MiB-rounded) pool")
    heap_bytes_initial: int = field("bytes objects can use at start")
    heap_bytes: int = field("bytes objects can use once grown")
    background_pin_calls: int = field("lazy: 64 MiB cudaHostRegister calls a background thread makes after start, "
                                      "whether or not anything is cached")
    hugepages: int = field("hugepages: 2 MiB pages the pool takes (the host needs that many free)")
    shm_bytes: int = field("shm: the /dev/shm segment the pool lives in (0 otherwise)")


@record
class MPStage:
    """One PP stage's ranks as the server sees them (the TP ranks of a stage are alike)."""

    pp_rank: int = field("pipeline stage")
    layers: int = field("KV layers one rank registers (the drafter's on the last stage)")
    bytes_per_token: int = field("one rank's KV bytes per token: over its layers, K and V x heads x head size x dtype "
                                 "bytes (MLA: the latent alone)")
    object_bytes: int = field("one chunk of one rank: chunk_size x bytes_per_token")
    object_bytes_aligned: int = field("what that object takes in the L1: rounded up to --l1-align-bytes")
    ranks: int = field("ranks of the stage (TP): each registers with the server")
    writer_ranks: int = field("ranks that store an object per chunk: every rank, or 1 for an MLA-only model")
    staging_bytes_per_gpu: int = field("what the server allocates on each GPU of the stage: 4 objects (_TempGPUBuffer) "
                                       "+ the 8 MiB block-id buffer, beside its CUDA context")


@record
class MPPlan:
    """LMCache's MP server behind LMCacheMPConnector (JSON offload.lmcache_mp)."""

    lmcache_version: str = field("the LMCache release whose server rules apply")
    connector: str = field("LMCacheMPConnector")
    selected_by: str = field("what made vLLM start the connector")
    server_given: bool = field("the server's settings were given (false: no figures)")
    server_from: dict[str, str] = field("each server option given -> where its value came from")
    chunk_size: int = field("tokens per chunk (the server's --chunk-size)")
    eviction_policy: str | None = field("--eviction-policy")
    eviction_trigger_watermark: float = field("usage at which the once-a-second eviction starts")
    pool: L1Pool | None = field("the L1 (null without the server's settings)")
    stages: tuple[MPStage, ...] = field("one per PP stage")
    objects_per_chunk: int = field("objects one chunk of one engine takes: TP x PP, or PP for MLA-only")
    bytes_per_chunk: int = field("their aligned bytes: what one chunk of one engine costs in the L1")
    engines_per_node: int = field("engines (DP replicas) on one node: they share its one server")
    chunks_held: int | None = field("whole chunks the node's L1 holds: heap // bytes_per_chunk")
    tokens_held: int | None = field("chunks_held x chunk_size, every engine on the node together")
    tokens_held_at_start: int | None = field("lazy: what the heap holds when the server starts")
    tokens_before_eviction: int | None = field("tokens stored before usage reaches the eviction watermark")
    tokens_per_engine: int | None = field("one engine's equal share: (chunks_held // engines) x chunk_size")
    staging_bytes_per_gpu: int = field("the most the server allocates on one GPU (outside vLLM's "
                                       "--gpu-memory-utilization)")
    gpu_room_bytes: int | None = field("what vLLM leaves unrequested on a GPU: total - ceil(total x utilization); "
                                       "null without a GPU total")
    kv_offloading_size: float | None = field("vLLM's --kv-offloading-size: it selects the connector and sizes "
                                             "nothing (0.23.0+)")
    startup_error: str | None = field("why the server (and so vLLM) does not start, or null")
    notes: tuple[str, ...] = field(json=False, default=())
    warnings: tuple[str, ...] = field(json=False, default=())


def l1_pool(s: mp.MPServer) -> L1Pool:
    """The L1 the server builds (l1_memory_manager.py:44-90) from settings the config accepted."""
    size, align = int(known(s.l1_size_gb) * mp.GIB), s.l1_align_bytes  # distributed/config.py:1095 (a started server's)
    if s.use_lazy:
        # lazy_memory_allocator.py: init and final rounded up to 64 MiB (:99-101); final + align - 1 reserved with
        # torch.empty, not pinned (:121-132); the first `init` bytes pinned by one cudaHostRegister (:145) and the
        # heap starts there (:148-152); a daemon thread pins the rest in 64 MiB steps and grows the heap every
        # 1 GiB until the whole pool is pinned (:337-362), whatever is cached.
        init = min(int(s.l1_init_size_gb * mp.GIB), size)  # config.py:1097, :315
        curr, final = mp.align_up(init, mp.PIN_CHUNK_BYTES), mp.align_up(size, mp.PIN_CHUNK_BYTES)
        return L1Pool(allocator="LazyMemoryAllocator", mode="lazy", size_bytes=size, init_bytes=init,
                      align_bytes=align, reserved_bytes=final + align - 1, resident_bytes_initial=curr,
                      resident_bytes=final, heap_bytes_initial=curr, heap_bytes=final,
                      background_pin_calls=(final - curr) // mp.PIN_CHUNK_BYTES, hugepages=0, shm_bytes=0)
    # MixedMemoryAllocator (mixed_memory_allocator.py:58-62 -> memory_management.py:573-621 _allocate_cpu_memory):
    # size 0 is an empty tensor; else one pinned allocation, resident at once: cudaHostAlloc, a 2 MiB-rounded
    # hugepage mmap + cudaHostRegister (the heap stays `size`, :617-621), or with --shm-name a /dev/shm segment
    # (shm_open + ftruncate + first touch + cudaHostRegister; l1_memory_manager.py:66-77 keeps the name).
    mode = "hugepages" if s.l1_use_hugepages else "shm" if s.shm_name else "eager"
    held = mp.align_up(size, mp.HUGEPAGE_BYTES) if mode == "hugepages" and size else size
    return L1Pool(allocator="MixedMemoryAllocator", mode=mode, size_bytes=size, init_bytes=size, align_bytes=align,
                  reserved_bytes=held, resident_bytes_initial=held, resident_bytes=held, heap_bytes_initial=size,
                  heap_bytes=size, background_pin_calls=0,
                  hugepages=held // mp.HUGEPAGE_BYTES if mode == "hugepages" else 0,
                  shm_bytes=size if mode == "shm" else 0)


def _refuse(layout: Layout, what: str) -> UnsupportedError:
    return UnsupportedError(f"{layout.source}: LMCache's MP server: {what}")


def _layer_bytes(layout: Layout, spec, hma: bool) -> int:
    """One layer's KV bytes per token as the server sees the rank's tensor (kv_layer_groups.py:126-155: kv_size 2,
    or 1 for MLA with one head; heads and head size of this rank; the tensor's dtype: fp8 is torch.uint8, 1 byte,
    vLLM 0.23.0 utils/torch_utils.py:38-39), or a refusal for what its grouping does not store as whole chunks."""
    if isinstance(spec, MLAAttentionSpec):
        if spec.is_indexer or spec.cache_dtype_str == "fp8_ds_mla":
            raise _refuse(layout, "DeepSeek-V3.2's indexer cache and the fp8_ds_mla layout are not modelled")
        return spec.num_kv_heads * spec.head_size * DTYPE_BYTES[spec.dtype]
    if isinstance(spec, (SlidingWindowSpec, ChunkedLocalAttentionSpec)) and hma:
        # integration/vllm/kv_cache_groups.py:74-132: a SlidingWindowSpec group keeps only each chunk's window
        # (kv_layer_groups.py:562-625); chunked-local layers sit in groups of their own.
        raise _refuse(layout, "sliding-window / chunked-local layers in KV cache groups of their own (the hybrid "
                              "manager is on): the server's windowed objects are not modelled; "
                              "--disable-hybrid-kv-cache-manager stores them as full attention, which kvcalc models")
    if not isinstance(spec, (FullAttentionSpec, SlidingWindowSpec, ChunkedLocalAttentionSpec)):
        raise _refuse(layout, f"{spec.kind} layers (Mamba / linear-attention state pages) are not modelled")
    if spec.kv_quant is not KVQuant.NONE or spec.head_size_v != spec.head_size:
        # noonghunna/club-3090#422 measured ~131 KB/token in MP L1 against 18.9 KB on the GPU with int8 per-token-head
        # KV: what the server registers for scaled / packed layouts was not read.
        raise _refuse(layout, "a KV layout with per-token scales, packed elements or a value head size of its own: "
                              "what the server registers for it is not modelled")
    return 2 * spec.num_kv_heads * spec.head_size * DTYPE_BYTES[spec.dtype]


def stages_of(layout: Layout, stage: GpuStage, chunk: int, align: int) -> tuple[MPStage, ...]:
    """Each PP stage's rank as the server sees it: the layers it registers (register_kv_caches sends every KV tensor of
    the worker, integration/vllm/lmcache_mp_connector.py:859-894), its object, its writers and its GPU staging."""
    tp = layout.parallel.tensor_parallel_size
    writers = 1 if mp.mla_only(layout.model) else tp
    out = []
    for st in stage.layers.stages:
        per_token = sum(_layer_bytes(layout, r.spec, stage.hma_enabled) * len(r.indices) for r in st.runs)
        obj = chunk * per_token
        out.append(MPStage(pp_rank=st.pp_rank, layers=sum(len(r.indices) for r in st.runs), bytes_per_token=per_token,
                           object_bytes=obj, object_bytes_aligned=mp.align_up(obj, align), ranks=tp,
                           writer_ranks=writers,
                           staging_bytes_per_gpu=mp.STAGING_OBJECTS * obj + mp.BLOCK_IDS_BYTES))
    return tuple(out)


def below_watermark(chunks: int, per_chunk: int, heap: int, watermark: float) -> int:
    """The most whole chunks stored with usage still below the watermark, as the eviction loop compares it: the float
    `used / total < watermark` (eviction_controller.py:167-170), used = chunks x aligned bytes."""
    if not heap or not per_chunk:
        return 0
    if not math.isfinite(watermark):  # argparse's float() takes nan / inf: `usage < nan` is never true
        return chunks if watermark > 0 else 0
    k = min(chunks, max(0, int(watermark * heap) // per_chunk))
    while k > 0 and k * per_chunk / heap >= watermark:
        k -= 1
    while k < chunks and (k + 1) * per_chunk / heap < watermark:
        k += 1
    return k


def vllm_refusal(layout: Layout, stage: GpuStage, chunk: int) -> None:
    """What vLLM's worker refuses when its adapter meets the server (the vLLM side of a start-up)."""
    block = stage.layers.block_size
    if chunk <= 0:
        raise _refuse(layout, f"--chunk-size {chunk} (LMCache's parser and config accept it): chunks of no tokens "
                              "store nothing; not modelled")
    if chunk % block:
        # integration/vllm/vllm_multi_process_adapter.py:1499-1505 (LMCacheMPWorkerAdapter.__init__, in vLLM's worker)
        raise StartupRefusal(f"vLLM {stage.behaviour.version}'s worker stops: ValueError: LMCache chunk size {chunk} "
                             f"must be a multiple of {block} (the vLLM block size scaled by "
                             f"decode_context_parallel_size). Set --chunk-size to a multiple of {block}. "
                             "(integration/vllm/vllm_multi_process_adapter.py:1499-1505)")


def server_startup(layout: Layout, s: mp.MPServer) -> str | None:
    """Why the server does not start (LMCache's own words, in the order `lmcache server` meets them: the MP config,
    the storage config, the allocator), or None; what it would start in a way kvcalc does not model is refused."""
    why = mp.mp_refusal(s) or mp.storage_refusal(s, layout.host.free_hugepages)
    if why is not None:
        return why
    for given, what in ((s.l1_manager, "--l1-manager (tagged L1s: DRAM / DEVDAX / GDS)"),
                        (s.gds_l1_path, "--gds-l1-path (an NVMe slab through GPUDirect Storage)"),
                        (s.l1_devdax_path, "--l1-devdax-path (a DAX-backed L1)"),
                        (s.l2_store_policy == "skip_l1", "--l2-store-policy skip_l1 (keys leave the L1 once in L2)")):
        if given:
            raise _refuse(layout, f"{what} is not modelled; kvcalc sizes the legacy pinned-DRAM L1")
    why = mp.allocator_refusal(s)
    if why is not None:
        return why
    if int(known(s.l1_size_gb) * mp.GIB) < 0 or (s.use_lazy and s.l1_init_size_gb < 0):  # (the config has one)
        # eager: cudaHostAlloc of a negative size; lazy: cudaHostRegister of a negative one (native calls whose error
        # cannot be run on a CPU box: vectors.json marks it undetermined).
        raise _refuse(layout, "a negative --l1-size-gb / --l1-init-size-gb reaches the native pinning call, whose "
                              "error kvcalc does not reproduce; the server does not start")
    return None


def plan_mp(layout: Layout, stage: GpuStage, mpl: mp.MPLayout) -> MPPlan:
    """The MP server's pool for this engine's layout, on its node."""
    b, par = stage.behaviour, layout.parallel
    if b.release < mp.OWN_CONNECTOR:
        raise _refuse(layout, f"vLLM {b.version} runs its own builtin LMCacheMPConnector (from 0.22.0 it imports "
                              "LMCache's: lmcache_mp_connector.py 0.22.0:1201-1226); not modelled")
    if par.nodes_per_engine > 1:
        raise _refuse(layout, f"an engine over {par.nodes_per_engine} nodes registers with one server per node "
                              "(lmcache.mp.server_urls); kvcalc models an engine on one node")
    s = mpl.server
    chunk = s.chunk_size if s is not None else mp.MPServer().chunk_size
    vllm_refusal(layout, stage, chunk)
    stages = stages_of(layout, stage, chunk, s.l1_align_bytes if s is not None else mp.MPServer().l1_align_bytes)
    per_chunk = sum(st.writer_ranks * st.object_bytes_aligned for st in stages)
    error = None if s is None else server_startup(layout, s)
    pool = None if s is None or error is not None else l1_pool(s)
    engines = par.engines_per_node
    held = None if pool is None else pool.heap_bytes // per_chunk
    room = None
    if layout.gpu.total_memory is not None:
        util = layout.gpu.memory_utilization or b.default_gpu_memory_utilization
        room = layout.gpu.total_memory - math.ceil(layout.gpu.total_memory * util)  # v1/worker/utils.py
    out = MPPlan(
        lmcache_version=mp.MP_VERSION, connector=mp.CONNECTOR, selected_by=mpl.selected_by, server_given=s is not None,
        server_from={} if s is None else dict(s.given), chunk_size=chunk,
        eviction_policy=None if s is None else s.eviction_policy,
        eviction_trigger_watermark=mp.MPServer().eviction_trigger_watermark if s is None
        else s.eviction_trigger_watermark, pool=pool, stages=stages,
        objects_per_chunk=sum(st.writer_ranks for st in stages),
        bytes_per_chunk=per_chunk, engines_per_node=engines, chunks_held=held,
        tokens_held=None if held is None else held * chunk,
        tokens_held_at_start=None if pool is None else pool.heap_bytes_initial // per_chunk * chunk,
        tokens_before_eviction=None if pool is None else
        below_watermark(known(held), per_chunk, pool.heap_bytes, known(s).eviction_trigger_watermark) * chunk,
        tokens_per_engine=None if held is None else held // engines * chunk,
        staging_bytes_per_gpu=max(st.staging_bytes_per_gpu for st in stages), gpu_room_bytes=room,
        kv_offloading_size=mpl.kv_offloading_size,
        startup_error=None if error is None else startup_text(error))
    return advise(layout, stage, mpl, out)


def startup_text(why: str) -> str:
    """The server's start-up failure, and what it does to vLLM: the connector waits for a server that never comes."""
    return (f"the LMCache server does not start: {why}; vLLM's LMCacheMPConnector then stops after "
            "lmcache.mp.mq_timeout (300 s): ConnectionError: Cannot reach the LMCache MP server at "
            "'tcp://localhost:5555' within 300.0s. (integration/vllm/vllm_multi_process_adapter.py:305-333)")
