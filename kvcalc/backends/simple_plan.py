"""SimpleCPUOffloadConnector's pool of one engine, as the selected release sizes it (vocab/releases/simple.py): each
PP stage's workers from their own bytes per CPU block (the sum over the unique regions of their GPU KV cache), the
scheduler from rank 0's GPU KV bytes, and from 0.33.0 the MIN over every worker handed to both. Pure."""

from __future__ import annotations

from ..engines.vllm import GpuStage
from ..engines.vllm.specs import AttentionSpec, FullAttentionSpec, UniformTypeKVCacheSpecs
from ..engines.vllm.runs import ordered
from ..engines.vllm.tensors import WorkerConfig, log_numbers
from ..vocab.errors import known
from ..vocab.layout import Layout
from ..vocab.records import field, record, replace
from ..vocab.releases import simple as sr
from ..vocab.units import cdiv
from .base import Allocation, OutOfBounds


@record
class SimpleStage:
    """One PP stage's workers (the TP ranks of a stage are alike)."""

    pp_rank: int = field("the PP stage")
    bytes_per_block: int = field("the worker's bytes per CPU block: the sum over the unique block-strided regions of "
                                 "its GPU KV cache (v1/simple_kv_offload/worker.py register_kv_caches)")
    regions: int = field("unique GPU KV regions: one CPU tensor (or disk staging pair) each")
    local_capacity: int = field("the rank's capacity // bytes_per_block")
    num_cpu_blocks: int = field("CPU blocks its workers allocate: max(1, local_capacity), from 0.33.0 the MIN over "
                                "every worker (or num_cpu_blocks)")
    resident_bytes_per_worker: int = field("host bytes one worker keeps resident (pinned with cudaHostRegister)")
    disk_bytes_per_rank: int | None = field("disk: the rank's file, num_cpu_blocks x bytes_per_block; null in CPU "
                                            "mode")
    region_bytes: tuple[int, ...] = field(json=False)  # bytes per block of each region, in order


@record
class SimplePlan:
    """SimpleCPUOffloadConnector's pool of one engine on the selected release (JSON offload.simple)."""

    connector: str = field("SimpleCPUOffloadConnector")
    selected_by: str = field("what made vLLM start it")
    vllm_version: str = field("the selected release")
    enabled: bool = field("false: the connector is configured but stores nothing")
    reason: str | None = field("why it is disabled (prefix caching off), or null")
    mode: str = field("cpu | disk (kv_offload_backend, 0.28.0+)")
    world_size: int = field("the ranks cpu_bytes_to_use is split over")
    capacity_bytes_per_rank: int = field("cpu_bytes_to_use // world_size, or cpu_bytes_to_use_per_rank; disk mode: "
                                         "disk_capacity_bytes")
    capacity_from: str = field("which key the per-rank capacity came from")
    scheduler_bytes_per_block: int = field("rank 0's GPU KV cache bytes // num_gpu_blocks, what the scheduler divides "
                                           "by")
    bytes_per_block: int = field("the worst worker's bytes per CPU block (the sum over its regions)")
    num_cpu_blocks_scheduler: int = field("CPU blocks the scheduler hands out")
    num_cpu_blocks_per_rank: int = field("CPU blocks every rank holds: the MIN over the workers (what 0.33.0 "
                                         "allocates everywhere)")
    min_over_workers: bool = field("the release takes the MIN over workers (0.33.0+)")
    stages: tuple[SimpleStage, ...] = field("one per PP stage")
    out_of_bounds: OutOfBounds | None = field("CPU block ids the scheduler may hand out that a stage's workers never "
                                              "allocated, or null")
    tokens: int | None = field("tokens of max_model_len requests every rank holds, counted as vLLM counts its GPU "
                               "pool (KV cache size in tokens) for a pool of num_cpu_blocks_per_rank blocks")
    resident_bytes_per_engine: int = field("host bytes resident, all workers of one engine")
    disk_path: str | None = field("disk: the files' prefix")
    disk_files: tuple[str, ...] = field("disk: the files on one node ({disk_path}.rank_{device index})")
    disk_bytes_per_rank: int | None = field("disk: the worst rank's file size (ftruncate)")
    lazy_offload: bool = field("lazy mode: stores only when the GPU pool runs low")
    startup_error: str | None = field("why the release refuses to start the connector, or null")
    warnings: tuple[str, ...] = field(json=False)
    notes: tuple[str, ...] = field(json=False)
    allocations: tuple[tuple[Allocation, ...], ...] = field(json=False)  # per stage, one worker's


def regions(worker: WorkerConfig, rule: str, kv_first: bool,
            num_blocks: int | None) -> tuple[tuple[int, ...], str | None]:
    """(bytes per block of each unique region the worker copies, the error its register_kv_caches raises):
    "storages" 0.19.0-0.28.0: one per KV cache tensor's storage, K and V apart when the first layer's view puts them
    outermost (FlashAttention's (2, num_blocks, ...)); "first_view" 0.29.0: the one backing allocation viewed as
    (-1, num_blocks, first layer's page); "regions" 0.30.0+: one per layer slot (the layer stride is outermost in
    vLLM's default LBNHC layout), aliases of other groups dropped."""
    groups = worker.groups
    if not groups:
        return (), None
    if len(groups) == 1 and isinstance(groups[0].spec, UniformTypeKVCacheSpecs):
        pages = [(r.spec.page_size_bytes, isinstance(r.spec, AttentionSpec)) for _, _, r in ordered(groups[0].runs)]
    else:
        page = groups[0].spec.page_size_bytes
        pages = [(page, isinstance(next(g for g in groups if g.num_layers > i).spec, AttentionSpec))
                 for i in range(worker.num_tensors)]
    if rule == "first_view":
        first, total = pages[0][0], worker.bytes_per_block
        if total % first:
            n = "num_blocks" if num_blocks is None else f"{num_blocks}"
            size = "" if num_blocks is None else f" for input of size {num_blocks * total:,}"
            return (), (f"register_kv_caches views the one backing allocation as (-1, {n}, {first:,}) (the first "
                        f"layer's bytes per block) but a block is {total:,} B, not a multiple: RuntimeError shape "
                        f"'[-1, {n}, {first}]' is invalid{size} (v1/simple_kv_offload/worker.py:127)")
        return (first,) * (total // first), None
    if rule == "storages" and kv_first:
        return tuple(q for p, attn in pages for q in ((p // 2, p // 2) if attn else (p,))), None
    return tuple(p for p, _ in pages), None


def refusal(layout: Layout, stage: GpuStage, sb: sr.SimpleBehaviour) -> str | None:
    """What the connector refuses at start-up on this release, before any count (vLLM's messages)."""
    s, version = sr.simple_of(layout), stage.behaviour.version
    if not sb.available:
        return (f"vLLM {version} has no SimpleCPUOffloadConnector (it is in 0.19.0 and later): 'Unsupported "
                "connector type: SimpleCPUOffloadConnector' (kv_connector/factory.py)")
    if sb.disk_tier and s.kv_offload_backend == "disk":
        if s.disk_path is None:
            return sr.NO_DISK_PATH
        if sb.disk_capacity_checked and s.disk_capacity_bytes <= 0:
            return sr.NO_DISK_CAPACITY
    gpu = stage.gpu
    if not gpu.workers or not any(w.groups for w in gpu.workers):
        return "the model has no KV cache tensors to offload (manager.py _derive_cpu_config: assert kv_cache_tensors)"
    if not any(isinstance(g.spec, FullAttentionSpec) for g in gpu.scheduler_groups):
        return ("SimpleCPUOffloadScheduler needs a full-attention KV cache group for prefix matching "
                "(v1/simple_kv_offload/manager.py: assert 0 <= self.fa_gidx); this layout has none")
    if gpu.num_blocks == 0:
        return ("the GPU has 0 KV cache blocks: _derive_cpu_config divides by the GPU KV cache bytes "
                "(ZeroDivisionError)")
    return None


def capacity(layout: Layout, sb: sr.SimpleBehaviour, warnings: list[str]) -> tuple[int, int, str, str]:
    """(the worker's capacity per rank, the scheduler's, where it came from, the mode)."""
    s, world = sr.simple_of(layout), layout.parallel.world_size
    budget = sr.simple_budget(layout)
    cpu = budget // world
    cpu_from = f"cpu_bytes_to_use // world_size ({budget:,} // {world})"
    if s.cpu_bytes_to_use_per_rank is not None:
        if s.cpu_bytes_to_use_per_rank != cpu:
            warnings.append(f"cpu_bytes_to_use_per_rank ({s.cpu_bytes_to_use_per_rank / (1 << 30):.2f} GB) != "
                            f"cpu_bytes_to_use/world_size ({cpu / (1 << 30):.2f} GB). Using per-rank value.")
        cpu, cpu_from = s.cpu_bytes_to_use_per_rank, "cpu_bytes_to_use_per_rank"
    if s.kv_offload_backend == "disk" and not sb.disk_tier:
        warnings.append("this release ignores kv_offload_backend (the disk tier is from 0.28.0): the blocks are kept "
                        "in CPU memory")
    disk = s.kv_offload_backend == "disk" and sb.disk_tier
    if not disk:
        ignored = [k for k in sr.DISK_ONLY_KEYS if k in s.given]
        if ignored and sb.disk_tier:
            warnings.append(f'kv_offload_backend is "cpu", ignoring disk-only config: {", ".join(ignored)}. Set '
                            'kv_offload_backend="disk" to enable the disk backend.')
        return cpu, cpu, cpu_from, "cpu"
    # manager.py (0.28.0:83): the scheduler sizes from the disk capacity when it is > 0, else from the CPU one.
    return s.disk_capacity_bytes, (s.disk_capacity_bytes if s.disk_capacity_bytes > 0 else cpu), \
        "disk_capacity_bytes (per rank)", "disk"


def counts(stage: GpuStage, sb: sr.SimpleBehaviour, cap: int, cap_sched: int, requested: int | None,
           per_stage: list[tuple[int, tuple[int, ...]]]) -> tuple[int, list[int], list[int], str | None]:
    """(scheduler count, each stage's local capacity, each stage's workers' count, a worker's refusal)."""
    bpb0 = stage.gpu.workers[0].bytes_per_block
    local = [cap // b for b, _ in per_stage]
    if requested is not None and sb.num_cpu_blocks_key:
        # worker.py _resolve_num_cpu_blocks (0.33.0:182-192), then the scheduler's own check (manager.py:305-317).
        worst = min(range(len(local)), key=lambda i: local[i])
        if not 0 < requested <= local[worst]:
            return 0, local, [], (f"num_cpu_blocks={requested} must be between 1 and local offload capacity "
                                  f"{local[worst]} (PP stage {worst}'s workers, v1/simple_kv_offload/worker.py:189)")
        return requested, local, [requested] * len(local), None
    workers = [max(1, n) for n in local]
    if sb.min_over_workers:
        least = min(workers)
        return least, local, [least] * len(workers), None
    return max(1, cap_sched // bpb0), local, workers, None


def host_bytes(mode: str, n: int, regs: tuple[int, ...], slots: int) -> tuple[int, tuple[Allocation, ...]]:
    """One worker's resident host bytes and its allocations: CPU mode torch.zeros((n,) + region) per region, pinned
    with cudaHostRegister (worker.py _init_cpu_mode: no power-of-two rounding); disk mode a store and a load staging
    buffer per region, slots x region bytes + 4096 of alignment slack each (disk_backend.py _alloc_aligned)."""
    sizes: dict[int, int] = {}
    for r in regs:
        size = n * r if mode == "cpu" else max(1, slots) * r + sr.DISK_ALIGNMENT
        sizes[size] = sizes.get(size, 0) + (1 if mode == "cpu" else 2)
    allocs = tuple(Allocation(count=c, size=s, resident=s) for s, c in sizes.items())
    return sum(a.count * a.size for a in allocs), allocs


def tokens_held(stage: GpuStage, n: int) -> int | None:
    """Tokens of max_model_len requests a pool of n blocks holds, as vLLM counts the GPU pool it mirrors (the CPU
    KVCacheConfig is the GPU's with num_blocks = n: manager.py _derive_cpu_config)."""
    logs = log_numbers(replace(stage.gpu.workers[0], num_blocks=n), stage.layers.usage, stage.behaviour.log_family)
    return None if logs is None else logs.kv_cache_size_tokens


def out_of_bounds(sched: int, workers: list[int]) -> OutOfBounds | None:
    worst = min(range(len(workers)), key=lambda i: workers[i])
    return OutOfBounds(pp_rank=worst, first=workers[worst], last=sched - 1) if workers[worst] < sched else None


def disk_files(layout: Layout, mode: str) -> tuple[str, ...]:
    """worker.py (0.28.0:188): f"{disk_path}.rank_{device.index or 0}": the local GPU index, so one node's files."""
    if mode != "disk":
        return ()
    par = layout.parallel
    per_node = cdiv(par.workers_per_engine, par.nodes_per_engine)
    return tuple(f"{sr.simple_of(layout).disk_path}.rank_{i}" for i in range(per_node))


def kv_first(stage: GpuStage) -> bool:
    """The selected backend's KV cache is (2, num_blocks, ...) (FlashAttention's, Flex's, ROCm's)."""
    return stage.layers.attention.kv_first


def plan_simple(layout: Layout, stage: GpuStage) -> SimplePlan:
    """The connector's pool of one engine on the stage's release."""
    b, s = stage.behaviour, sr.simple_of(layout)
    sb = sr.simple_behaviour(b.release)
    warnings: list[str] = []
    notes = [f"SimpleCPUOffloadConnector's budget: {layout.offload.cpu_bytes_source}"] if s.budget_default else []
    if s.num_cpu_blocks is not None and sb.available and not sb.num_cpu_blocks_key:
        warnings.append(f"vLLM {b.version} ignores num_cpu_blocks (read from 0.33.0): the pool is sized from the "
                        "byte budget")
    cap, cap_sched, cap_from, mode = capacity(layout, sb, warnings)
    error = refusal(layout, stage, sb)
    per_stage: list[tuple[int, tuple[int, ...]]] = []
    for w in stage.gpu.workers if error is None else ():
        regs, crash = regions(w, sb.worker_bytes, kv_first(stage), stage.gpu.num_blocks)
        error = error or crash
        per_stage.append((w.bytes_per_block, regs))
    enabled = error is None and stage.layers.enable_prefix_caching
    if error is None and not enabled:
        warnings.append(sr.PREFIX_OFF)
    sched, local, workers, error = counts(stage, sb, cap, cap_sched, s.num_cpu_blocks, per_stage) \
        if error is None else (0, [], [], error)
    if error is not None or not enabled:
        workers, sched = [0] * len(per_stage), 0
    stages, allocations = _stages(mode, per_stage, local, workers, s.disk_buffer_slots)
    error = error or _disk_alignment(mode, stages, sb, s.use_page_cache)
    every = min(workers + [sched]) if workers else 0
    ok = enabled and error is None
    return SimplePlan(
        connector=sr.CONNECTOR, selected_by=s.selected_by, vllm_version=b.version, enabled=enabled,
        reason=None if enabled or error else sr.PREFIX_OFF, mode=mode, world_size=layout.parallel.world_size,
        capacity_bytes_per_rank=cap, capacity_from=cap_from,
        scheduler_bytes_per_block=stage.gpu.workers[0].bytes_per_block if stage.gpu.workers else 0,
        bytes_per_block=max((st.bytes_per_block for st in stages), default=0), num_cpu_blocks_scheduler=sched,
        num_cpu_blocks_per_rank=every, min_over_workers=sb.min_over_workers, stages=stages,
        out_of_bounds=out_of_bounds(sched, workers) if workers and ok else None,
        tokens=tokens_held(stage, every) if ok else 0,
        resident_bytes_per_engine=sum(st.resident_bytes_per_worker for st in stages)
        * layout.parallel.tensor_parallel_size,
        disk_path=s.disk_path if mode == "disk" else None, disk_files=disk_files(layout, mode),
        disk_bytes_per_rank=max((known(st.disk_bytes_per_rank) for st in stages), default=None) if mode == "disk"
        else None,
        lazy_offload=s.lazy_offload, startup_error=error, warnings=tuple(warnings), notes=tuple(notes),
        allocations=allocations)


def _stages(mode: str, per_stage: list[tuple[int, tuple[int, ...]]], local: list[int], workers: list[int],
            slots: int) -> tuple[tuple[SimpleStage, ...], tuple[tuple[Allocation, ...], ...]]:
    """Each PP stage's figures, and one worker's allocations per stage."""
    stages, allocations = [], []
    for i, ((bpb, regs), n) in enumerate(zip(per_stage, workers)):
        resident, allocs = host_bytes(mode, n, regs, slots) if n else (0, ())
        allocations.append(allocs)
        stages.append(SimpleStage(pp_rank=i, bytes_per_block=bpb, regions=len(regs),
                                  local_capacity=local[i] if local else 0, num_cpu_blocks=n,
                                  resident_bytes_per_worker=resident,
                                  disk_bytes_per_rank=n * bpb if mode == "disk" else None, region_bytes=regs))
    return tuple(stages), tuple(allocations)


def _disk_alignment(mode: str, stages: tuple[SimpleStage, ...], sb: sr.SimpleBehaviour, page_cache: bool) -> str | None:
    """disk_backend.py DiskBackend.init (0.28.0:102, 0.30.0:104): O_DIRECT needs whole 4096-byte blocks; 0.30.0+
    asserts it only without use_page_cache."""
    if mode != "disk" or (sb.disk_alignment_page_cache and page_cache):
        return None
    bad = next((st for st in stages if st.num_cpu_blocks and st.bytes_per_block % sr.DISK_ALIGNMENT), None)
    if bad is None:
        return None
    lift = "; use_page_cache lifts it" if sb.disk_alignment_page_cache else ""
    return (f"total_block_bytes={bad.bytes_per_block} not aligned to {sr.DISK_ALIGNMENT} (PP stage {bad.pp_rank}: "
            f"O_DIRECT reads whole 4096-byte blocks; v1/simple_kv_offload/disk_backend.py asserts it{lift})")
