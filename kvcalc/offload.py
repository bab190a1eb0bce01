"""GPU plan + CPU budget -> CPU block counts by the OLD and FIXED formulas, on the scheduler and every
worker; out-of-bounds verdict, pinned host bytes, unused budget (spec section 8)."""

from __future__ import annotations

from dataclasses import dataclass

from .grouping import KVCacheGroup
from .specs import ChunkedLocalAttentionSpec
from .tensors import GpuPlan, WorkerConfig


@dataclass(frozen=True, kw_only=True)
class SideCount:
    """One side's (scheduler or one PP stage's workers) use of a formula."""

    kv_bytes_per_block: int
    kv_bytes_per_offloaded_block: int
    num_blocks: int


@dataclass(frozen=True, kw_only=True)
class StageOffload:
    pp_rank: int
    count: SideCount
    bytes_per_block: int  # b_w, the worker's true GPU bytes per block
    pinned_bytes_per_worker: int
    out_of_bounds: bool
    bad_ids: tuple[int, int] | None  # first and last CPU block id the scheduler may use but the worker lacks
    wasted_bytes_per_worker: int  # rows the worker pinned that the scheduler never uses


@dataclass(frozen=True, kw_only=True)
class FormulaResult:
    formula: str
    scheduler: SideCount
    stages: tuple[StageOffload, ...]
    pinned_bytes_per_engine: int
    unused_bytes: int
    tokens_scheduler: int  # CPU tokens the scheduler believes it holds
    tokens_safe: int  # CPU tokens every worker actually has room for

    @property
    def out_of_bounds(self) -> bool:
        return any(s.out_of_bounds for s in self.stages)


@dataclass(frozen=True, kw_only=True)
class OffloadPlan:
    cpu_bytes_to_use: int
    block_size: int  # offloaded block size in tokens
    block_size_factor: int
    world_size: int
    startup_error: str | None
    results: dict[str, FormulaResult]  # keyed by formula id: "old", "fixed"
    warnings: tuple[str, ...]


def _old_per_block(groups: tuple[KVCacheGroup, ...], worker: WorkerConfig, world: int) -> int:
    """0.14.0-0.19.1: page_size x len(kv_cache_tensors) x world_size (one page over all groups)."""
    pages = {g.spec.page_size_bytes for g in groups}
    if len(pages) != 1:  # pragma: no cover - rule D leaves one page; vLLM asserts otherwise
        raise AssertionError("one page size")
    return pages.pop() * len(worker.tensors) * world


def _fixed_per_block(groups: tuple[KVCacheGroup, ...], worker: WorkerConfig, world: int) -> int:
    """0.20.0-0.22.x: sum(tensor sizes) // num_blocks x world_size (0 without blocks)."""
    if worker.num_blocks is None:
        # Unknown GPU block count: every size is page x N, so sum(sizes) // N is exactly the sum of pages.
        return worker.bytes_per_block * world
    if worker.num_blocks <= 0:
        return 0
    return worker.total_bytes // worker.num_blocks * world


# Each family's formula, keyed by the id versions.Family.formula names.
FORMULAS = {"old": _old_per_block, "fixed": _fixed_per_block}


def _side(per_block: int, f: int, budget: int) -> SideCount:
    per_offloaded = per_block * f
    n = budget // per_offloaded if per_offloaded > 0 else 0
    return SideCount(kv_bytes_per_block=per_block, kv_bytes_per_offloaded_block=per_offloaded, num_blocks=n)


def _startup_check(gpu: GpuPlan, offload_block_size: int | None, *, hma_enabled: bool,
                   refuses_chunked_local: bool) -> tuple[str | None, int]:
    """The OffloadingSpec's own checks at init (section 8.2). Returns (error, f)."""
    groups = gpu.scheduler_groups
    hb = gpu.hash_block_size
    for g in groups:
        if g.spec.block_size % hb:
            return (f"group block size {g.spec.block_size} is not a multiple of the engine block size {hb}: the "
                    "offloading connector fails at init (a Mamba group needs --enable-prefix-caching)"), 1
    if refuses_chunked_local and hma_enabled and any(isinstance(g.spec, ChunkedLocalAttentionSpec) for g in groups):
        return ("the offloading scheduler accepts only full-attention and sliding-window groups with the hybrid "
                "manager on; it asserts on this chunked-local group at startup"), 1
    if offload_block_size is None:
        return None, 1
    sizes = {g.spec.block_size for g in groups}
    if len(sizes) > 1:
        return (f"offload.block_size needs one GPU block size, but the groups have {sorted(sizes)}: the "
                "offloading connector asserts at init"), 1
    b = sizes.pop() if sizes else hb
    if offload_block_size % b:
        return f"offload.block_size {offload_block_size} is not a multiple of the GPU block size {b}", 1
    return None, offload_block_size // b


def plan_offload(gpu: GpuPlan, *, cpu_bytes: int, offload_block_size: int | None, world_size: int, tp: int,
                 hma_enabled: bool, refuses_chunked_local: bool) -> OffloadPlan:
    warnings: list[str] = []
    error, f = _startup_check(gpu, offload_block_size, hma_enabled=hma_enabled,
                              refuses_chunked_local=refuses_chunked_local)
    gpu_block = min((g.spec.block_size for g in gpu.scheduler_groups), default=gpu.hash_block_size)
    results: dict[str, FormulaResult] = {}
    if error is None and not gpu.scheduler_groups:
        error = "the model has no KV cache layers: nothing to offload"
    if error is None:
        if cpu_bytes == 0:
            warnings.append("cpu_bytes_to_use is 0: 0 CPU blocks, offloading stores nothing (vLLM refuses a falsy "
                            "cpu_bytes_to_use at startup)")
        rank0 = gpu.workers[0]
        for name, per_block in FORMULAS.items():
            sched = _side(per_block(gpu.scheduler_groups, rank0, world_size), f, cpu_bytes)
            stages = []
            for w in gpu.workers:
                mine = _side(per_block(w.groups, w, world_size), f, cpu_bytes)
                oob = sched.num_blocks > mine.num_blocks
                stages.append(StageOffload(
                    pp_rank=w.pp_rank, count=mine, bytes_per_block=w.bytes_per_block,
                    pinned_bytes_per_worker=mine.num_blocks * f * w.bytes_per_block,
                    out_of_bounds=oob,
                    bad_ids=(mine.num_blocks, sched.num_blocks - 1) if oob else None,
                    wasted_bytes_per_worker=max(mine.num_blocks - sched.num_blocks, 0) * f * w.bytes_per_block,
                ))
            pinned = sum(s.pinned_bytes_per_worker for s in stages) * tp
            tokens_per_block = f * gpu_block
            results[name] = FormulaResult(
                formula=name, scheduler=sched, stages=tuple(stages), pinned_bytes_per_engine=pinned,
                unused_bytes=cpu_bytes - pinned, tokens_scheduler=sched.num_blocks * tokens_per_block,
                tokens_safe=min(min(s.count.num_blocks for s in stages), sched.num_blocks) * tokens_per_block,
            )
        for name, r in results.items():
            if cpu_bytes and r.scheduler.num_blocks == 0 and r.scheduler.kv_bytes_per_block == 0:
                warnings.append(f"{name} formula: 0 CPU blocks because the GPU has 0 blocks")
            elif cpu_bytes and r.scheduler.num_blocks == 0:
                warnings.append(f"{name} formula: the budget is smaller than one CPU block "
                                f"({r.scheduler.kv_bytes_per_offloaded_block:,} B): 0 CPU blocks, offloading is inert")
    return OffloadPlan(cpu_bytes_to_use=cpu_bytes, block_size=f * gpu_block, block_size_factor=f,
                       world_size=world_size, startup_error=error, results=results, warnings=tuple(warnings))
