"""GPU plan + CPU budget -> CPU block (chunk) counts per vLLM family, on the scheduler and every worker;
out-of-bounds verdict, pinned host bytes, unused budget (spec sections 8 and 9).

One function does the arithmetic for every family; a family's `OffloadRule` (versions.py) says which
bytes-per-block it reads, whether counts are chunks, the alignment and the replication test.
"""

from __future__ import annotations

from typing import NamedTuple
from math import gcd

from .grouping import KVCacheGroup
from .specs import ChunkedLocalAttentionSpec, MLAAttentionSpec, UniformTypeKVCacheSpecs
from .tensors import GpuPlan, WorkerConfig
from .units import round_up
from .versions import FAMILIES, Behaviour, OffloadRule

class OffloadSettings(NamedTuple):
    cpu_bytes: int
    block_size: int | None  # offloaded block size in tokens
    blocks_per_chunk: int | None  # 0.26+
    tp: int
    pp: int
    dp: int
    backend: str  # distributed executor backend: mp | ray | uni | external_launcher
    nnodes: int
    platform: str
    is_mla_model: bool

    @property
    def world_size(self) -> int:
        # external_launcher runs every DP rank in one world: W is multiplied by DP (trap 9).
        w = self.tp * self.pp
        return w * self.dp if self.backend == "external_launcher" else w


class SideCount(NamedTuple):
    """One side's (scheduler, or one PP stage's workers) use of a family's formula."""

    unit_bytes: int  # bytes per GPU block the formula reads (page x tensors, or sum(sizes) // num_blocks)
    copies: int  # world size, or 1 for a replicated (single-copy) MLA layout
    kv_bytes_per_block: int  # unit x copies
    kv_bytes_per_offloaded_block: int  # x block_size_factor (or blocks_per_chunk): one CPU block / chunk
    aligned_bytes: int  # rounded up to the family's alignment
    num_blocks: int

    @property
    def padding_bytes(self) -> int:
        return self.aligned_bytes - self.kv_bytes_per_offloaded_block


class StageOffload(NamedTuple):
    pp_rank: int
    count: SideCount
    bytes_per_block: int  # b_w, the worker's true GPU bytes per block
    pinned_bytes_per_worker: int
    out_of_bounds: bool
    bad_ids: tuple[int, int] | None  # first and last CPU block id the scheduler may use but the worker lacks
    wasted_bytes_per_worker: int  # rows the worker pinned that the scheduler never uses


class FormulaResult(NamedTuple):
    family: str
    scheduler: SideCount
    stages: tuple[StageOffload, ...]
    factor: int  # block_size_factor (<= 0.24) or blocks_per_chunk (0.26+)
    chunks: bool
    replicated: bool
    shared_region: bool
    pinned_bytes_per_engine: int
    unused_bytes: int
    tokens_scheduler: int  # CPU tokens the scheduler believes it holds
    tokens_safe: int  # CPU tokens every worker actually has room for

    @property
    def out_of_bounds(self) -> bool:
        return any(s.out_of_bounds for s in self.stages)


class OffloadPlan(NamedTuple):
    cpu_bytes_to_use: int
    block_size: int  # offloaded block size in tokens (selected family)
    block_size_factor: int
    world_size: int
    startup_error: str | None  # the selected release's
    results: dict[str, FormulaResult]  # keyed by family id
    errors: dict[str, str]  # family id -> why that family's connector fails at init
    warnings: tuple[str, ...]


def _unit_bytes(rule: OffloadRule, groups: tuple[KVCacheGroup, ...], worker: WorkerConfig) -> int:
    if rule.unit == "page_x_tensors":
        # 0.14.0-0.19.1: one page for all groups, times the number of tensors (a UniformType page is a sum).
        pages = {g.spec.page_size_bytes for g in groups}
        if len(pages) != 1:  # pragma: no cover - rule D leaves one page; vLLM asserts otherwise
            raise AssertionError("one page size")
        return pages.pop() * worker.num_tensors
    if worker.num_blocks is None:
        # Unknown GPU block count: every size is page x N, so sum(sizes) // N is exactly the sum of pages.
        return worker.bytes_per_block
    if worker.num_blocks <= 0:
        return 0
    # sum(sizes) // N (0.20+), size[0] // N for packed tensors (0.24+) or the one backing allocation (0.30+):
    # all equal the worker's bytes per block for the classic shapes kvcalc models.
    return worker.total_bytes // worker.num_blocks


def _kv_tp_replicas(groups: tuple[KVCacheGroup, ...], tp: int) -> int:
    """0.32+: gcd over layers of TP // max_tp_shards; MLA and the V3.2 indexer declare 1 shard (-> TP)."""
    result = tp
    for g in groups:
        specs = g.spec.distinct_specs if isinstance(g.spec, UniformTypeKVCacheSpecs) else (g.spec,)
        for s in specs:
            result = gcd(result, tp if isinstance(s, MLAAttentionSpec) else 1)
    return result


def _replicated(rule: OffloadRule, behaviour: Behaviour, s: OffloadSettings, groups: tuple[KVCacheGroup, ...],
                unit: int) -> bool:
    if not rule.replication or not s.is_mla_model or unit <= 0:
        return False
    topology = (s.tp > 1 and s.pp == 1 and s.world_size == s.tp and s.backend == "mp" and s.nnodes == 1
                and s.platform in behaviour.replication_platforms)
    if not topology:
        return False
    if behaviour.replication_test == "narrow":
        # 0.28-0.30: exactly one group whose spec is exactly MLA, and the bytes are page x its layers.
        return (len(groups) == 1 and type(groups[0].spec) is MLAAttentionSpec
                and unit == groups[0].spec.page_size_bytes * groups[0].num_layers)
    return _kv_tp_replicas(groups, s.tp) == s.tp


def _startup_check(rule: OffloadRule, gpu: GpuPlan, s: OffloadSettings) -> tuple[str | None, int]:
    """The connector's own checks at init. Returns (error, factor: block_size_factor or blocks_per_chunk)."""
    groups = gpu.scheduler_groups
    hb = gpu.hash_block_size
    if not groups:
        return "the model has no KV cache layers: nothing to offload", 1
    for g in groups:
        if g.spec.block_size % hb:
            hint = "--enable-prefix-caching" if rule.chunks else "a Mamba group needs --enable-prefix-caching"
            return (f"group block size {g.spec.block_size} is not a multiple of the engine block size {hb}: the "
                    f"offloading connector fails at init ({hint})"), 1
    sizes = {g.spec.block_size for g in groups}
    if rule.chunks:
        if s.block_size is not None and s.blocks_per_chunk is not None:
            return "blocks_per_chunk and block_size are mutually exclusive (ValueError at init)", 1
        if s.blocks_per_chunk is not None:
            return None, s.blocks_per_chunk
    if s.block_size is None:
        return None, 1
    if len(sizes) > 1:
        return (f"offload.block_size needs one GPU block size, but the groups have {sorted(sizes)}: the "
                "offloading connector asserts at init"), 1
    b = sizes.pop()
    if s.block_size % b:
        return f"offload.block_size {s.block_size} is not a multiple of the GPU block size {b}", 1
    return None, s.block_size // b


def _side(rule: OffloadRule, s: OffloadSettings, unit: int, copies: int, factor: int) -> SideCount:
    per_block = unit * copies
    per_offloaded = per_block * factor
    aligned = round_up(per_offloaded, rule.alignment) if per_offloaded > 0 else 0
    n = s.cpu_bytes // aligned if aligned > 0 else 0
    return SideCount(unit_bytes=unit, copies=copies, kv_bytes_per_block=per_block,
                     kv_bytes_per_offloaded_block=per_offloaded, aligned_bytes=aligned, num_blocks=n)


def evaluate(family_id: str, gpu: GpuPlan, s: OffloadSettings, behaviour: Behaviour,
             checked: tuple[str | None, int] | None = None) -> FormulaResult | str:
    """One family's formula on this GPU plan: a FormulaResult, or the reason its connector fails at init.
    `checked`: the connector's start-up check, when a family with the same chunk rule already ran it."""
    rule = FAMILIES[family_id].rule
    error, factor = checked or _startup_check(rule, gpu, s)
    if error:
        return error
    rank0 = gpu.workers[0]
    unit0 = _unit_bytes(rule, rank0.groups, rank0)
    # Decided once, on rank 0's real (unflattened) layers: both sides build the same connector config.
    replicated = _replicated(rule, behaviour, s, rank0.groups, unit0)
    copies = 1 if replicated else s.world_size
    # Only the page x tensors rule reads the groups, and the scheduler's are flattened (UniformType -> first layer).
    sched_unit = _unit_bytes(rule, gpu.scheduler_groups, rank0) if rule.unit == "page_x_tensors" else unit0
    sched = _side(rule, s, sched_unit, copies, factor)
    stages = []
    for w in gpu.workers:
        unit = unit0 if w is rank0 else _unit_bytes(rule, w.groups, w)
        mine = sched if unit == sched_unit else _side(rule, s, unit, copies, factor)
        oob = sched.num_blocks > mine.num_blocks
        if rule.shared_region:
            # One region per engine: every worker owns its slice (chunk // copies) of each of the N rows.
            pinned = sched.num_blocks * (sched.kv_bytes_per_offloaded_block // copies)
        else:
            pinned = mine.num_blocks * factor * w.bytes_per_block
        stages.append(StageOffload(
            pp_rank=w.pp_rank, count=mine, bytes_per_block=w.bytes_per_block, pinned_bytes_per_worker=pinned,
            out_of_bounds=oob, bad_ids=(mine.num_blocks, sched.num_blocks - 1) if oob else None,
            wasted_bytes_per_worker=max(mine.num_blocks - sched.num_blocks, 0) * factor * w.bytes_per_block,
        ))
    if rule.shared_region:
        engine = sched.num_blocks * sched.aligned_bytes
    else:
        engine = sum(st.pinned_bytes_per_worker for st in stages) * s.tp
    tokens_per_block = factor * gpu.hash_block_size
    return FormulaResult(
        family=family_id, scheduler=sched, stages=tuple(stages), factor=factor, chunks=rule.chunks,
        replicated=replicated, shared_region=rule.shared_region, pinned_bytes_per_engine=engine,
        unused_bytes=s.cpu_bytes - engine, tokens_scheduler=sched.num_blocks * tokens_per_block,
        tokens_safe=min(min(st.count.num_blocks for st in stages), sched.num_blocks) * tokens_per_block,
    )


def plan_offload(gpu: GpuPlan, s: OffloadSettings, behaviour: Behaviour, *, hma_enabled: bool,
                 families: tuple[str, ...]) -> OffloadPlan:
    warnings: list[str] = []
    results: dict[str, FormulaResult] = {}
    errors: dict[str, str] = {}
    selected_error = None
    if behaviour.offload_refuses_chunked_local and hma_enabled and any(
            isinstance(g.spec, ChunkedLocalAttentionSpec) for g in gpu.scheduler_groups):
        selected_error = ("the offloading scheduler accepts only full-attention and sliding-window groups with the "
                          "hybrid manager on; it asserts on this chunked-local group at startup")
    checks: dict[bool, tuple[str | None, int]] = {}  # the start-up check depends only on the chunk rule
    for fam in dict.fromkeys(families):
        rule = FAMILIES[fam].rule
        if rule.chunks not in checks:
            checks[rule.chunks] = _startup_check(rule, gpu, s)
        out = evaluate(fam, gpu, s, behaviour, checks[rule.chunks])
        if isinstance(out, str):
            errors[fam] = out
        else:
            results[fam] = out
    selected_error = selected_error or errors.get(behaviour.formula)
    if selected_error is None:
        if s.cpu_bytes == 0:
            warnings.append("cpu_bytes_to_use is 0: 0 CPU blocks, offloading stores nothing (vLLM refuses a falsy "
                            "cpu_bytes_to_use at startup)")
        for name, r in results.items():
            if s.cpu_bytes and r.scheduler.num_blocks == 0 and r.scheduler.kv_bytes_per_block == 0:
                warnings.append(f"{name} formula: 0 CPU blocks because the GPU has 0 blocks")
            elif s.cpu_bytes and r.scheduler.num_blocks == 0:
                warnings.append(f"{name} formula: the budget is smaller than one CPU block "
                                f"({r.scheduler.aligned_bytes:,} B): 0 CPU blocks, offloading is inert")
    sel = results.get(behaviour.formula)
    factor = sel.factor if sel else 1
    return OffloadPlan(cpu_bytes_to_use=s.cpu_bytes, block_size=factor * gpu.hash_block_size, block_size_factor=factor,
                       world_size=s.world_size, startup_error=selected_error, results=results, errors=errors,
                       warnings=tuple(warnings))
