"""GPU plan + CPU budget -> CPU block (chunk) counts of one vLLM family, on the scheduler and every worker: the
out-of-bounds verdict, pinned host bytes, unused budget (spec sections 8 and 9), and the tokens the tier really holds
(spec section 11).

One function does the counting for every family; a family's `OffloadRule` (vocab/releases/vllm.py) says which
bytes-per-block it reads, whether counts are chunks, the alignment and the replication test. The figures only reports
show (capacity, host memory, per-stage detail) are derived properties of the result, computed when first read.
"""

from __future__ import annotations

from math import gcd

from ..engines.vllm.grouping import KVCacheGroup
from ..engines.vllm.specs import (
    ChunkedLocalAttentionSpec,
    MambaSpec,
    MLAAttentionSpec,
    SlidingWindowSpec,
    UniformTypeKVCacheSpecs,
)
from ..engines.vllm.tensors import GpuPlan, WorkerConfig
from ..vocab.records import cached, record
from ..vocab.releases.vllm import FAMILIES, Behaviour, OffloadRule, behaviour_for
from ..vocab.units import cdiv, round_up
from .base import Capacity, HostMemory
from .pinned import host_memory


@record
class OffloadSettings:
    cpu_bytes: int
    block_size: int | None  # offloaded block size in tokens
    blocks_per_chunk: int | None  # 0.26+
    tp: int
    pp: int
    dp: int
    world_size: int  # vLLM's: PP x TP, x DP under external_launcher
    backend: str  # distributed executor backend: mp | ray | uni | external_launcher
    nnodes: int
    engines_per_node: int
    platform: str
    is_mla_model: bool
    max_model_len: int
    attention_backend: str
    host_page_size: int
    pinned_round_threshold_mb: int | None
    extra_retained_tokens: int  # 0.31+ sliding windows: max(0, num_prefill_lookahead_tokens - 1)


@record
class SideCount:
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


@record
class StageOffload:
    pp_rank: int
    count: SideCount
    bytes_per_block: int  # b_w, the worker's true GPU bytes per block
    pinned_bytes_per_worker: int
    out_of_bounds: bool
    bad_ids: tuple[int, int] | None  # first and last CPU block id the scheduler may use but the worker lacks
    wasted_bytes_per_worker: int  # rows the worker pinned that the scheduler never uses


@record
class FormulaResult:
    """One family's counts on this GPU plan; capacity, host memory and per-stage detail are derived."""

    family: str
    rule: OffloadRule
    behaviour: Behaviour  # the release whose rules the derived figures follow (the family's own)
    settings: OffloadSettings
    gpu: GpuPlan
    scheduler: SideCount
    stage_counts: tuple[SideCount, ...]
    factor: int  # block_size_factor (<= 0.24) or blocks_per_chunk (0.26+)
    replicated: bool

    @property
    def chunks(self) -> bool:
        return self.rule.chunks

    @property
    def alignment(self) -> int:
        return self.settings.host_page_size if self.rule.host_aligned else 1

    @property
    def shared_region(self) -> bool:
        """The workers share one /dev/shm region (0.27+ on the release's platforms)."""
        return self.settings.platform in self.behaviour.shared_region_platforms

    @property
    def out_of_bounds(self) -> bool:
        return any(self.scheduler.num_blocks > c.num_blocks for c in self.stage_counts)

    @cached
    def stages(self) -> tuple[StageOffload, ...]:
        sched, factor, copies = self.scheduler, self.factor, self.scheduler.copies
        out = []
        for w, mine in zip(self.gpu.workers, self.stage_counts):
            oob = sched.num_blocks > mine.num_blocks
            if self.shared_region:
                # One region per engine: every worker owns its slice (chunk // copies) of each of the N rows.
                pinned = sched.num_blocks * (sched.kv_bytes_per_offloaded_block // copies)
            else:
                pinned = mine.num_blocks * factor * w.bytes_per_block
            out.append(StageOffload(
                pp_rank=w.pp_rank, count=mine, bytes_per_block=w.bytes_per_block, pinned_bytes_per_worker=pinned,
                out_of_bounds=oob, bad_ids=(mine.num_blocks, sched.num_blocks - 1) if oob else None,
                wasted_bytes_per_worker=max(mine.num_blocks - sched.num_blocks, 0) * factor * w.bytes_per_block,
            ))
        return tuple(out)

    @property
    def pinned_bytes_per_engine(self) -> int:
        if self.shared_region:
            return self.scheduler.num_blocks * self.scheduler.aligned_bytes
        return sum(st.pinned_bytes_per_worker for st in self.stages) * self.settings.tp

    @property
    def unused_bytes(self) -> int:
        return self.settings.cpu_bytes - self.pinned_bytes_per_engine

    @cached
    def chunks_per_group(self) -> tuple[int, ...] | None:
        """Chunks one max_model_len request takes in each KV cache group: every group's block of a request is a
        separate offload key ((block hash, group) from 0.20.0, v1/kv_offload/abstract.py) taking a whole chunk,
        capped by the group's window (`get_sliding_window_size_in_chunks` of the release)."""
        mml = self.settings.max_model_len
        if mml <= 0 or not self.gpu.scheduler_groups:
            return None
        if not self.behaviour.keys_per_group:
            # Before 0.20.0 a key is the block hash alone: one CPU block holds every group's bytes of a block.
            return (cdiv(mml, self.gpu.hash_block_size * self.factor),)
        return tuple(min(cdiv(mml, g.spec.block_size * self.factor), w) if (w := self._window(g)) is not None
                     else cdiv(mml, g.spec.block_size * self.factor) for g in self.gpu.scheduler_groups)

    def _window(self, group: KVCacheGroup) -> int | None:
        """A group's window in chunks by the release's rule (None: attention reaches back without a bound)."""
        rule = self.behaviour.window_rule
        if rule is None:
            return None  # one group (HMA off with the connector): no per-group rule
        spec = group.spec
        t = spec.block_size * self.factor
        # 0.33.0 offloading/config.py reads the group's first layer spec (the flattened one here).
        if isinstance(spec, SlidingWindowSpec):
            w = spec.sliding_window
            if "retained" in rule:
                return max(cdiv(w, t), cdiv(w - 1 + self.settings.extra_retained_tokens, t))
            return cdiv(w, t)
        if isinstance(spec, ChunkedLocalAttentionSpec):
            return cdiv(spec.attention_chunk_size, t) if "chunked" in rule else None  # earlier: refused at start
        if isinstance(spec, MambaSpec):
            return 1  # "Mamba depends on a single state"
        return None

    def tokens(self, num_chunks: int) -> int | None:
        """Tokens of max_model_len requests that `num_chunks` chunks hold: num_chunks x mml // sum of the groups'
        chunks per request (0.33.0 v1/kv_offload/cpu/common.py _kv_cache_size_tokens)."""
        per_group = self.chunks_per_group
        if per_group is None:
            return None
        return num_chunks * self.settings.max_model_len // sum(per_group)

    @property
    def tokens_scheduler(self) -> int:
        """CPU tokens the scheduler believes it holds (group-aware)."""
        return self.tokens(self.scheduler.num_blocks) or 0

    @property
    def tokens_safe(self) -> int:
        """CPU tokens every worker actually has room for (group-aware)."""
        safe = min(min(c.num_blocks for c in self.stage_counts), self.scheduler.num_blocks)
        return self.tokens(safe) or 0

    @cached
    def capacity(self) -> Capacity:
        num = self.scheduler.num_blocks
        return Capacity(cpu_num_chunks=num, cpu_blocks_per_chunk=self.factor,
                        cpu_kv_cache_size_bytes=num * self.scheduler.aligned_bytes,
                        cpu_kv_cache_size_tokens=self.tokens(num), chunks_per_group=self.chunks_per_group)

    @cached
    def host(self) -> HostMemory:
        return host_memory(self)


def _unit_bytes(rule: OffloadRule, groups: tuple[KVCacheGroup, ...], worker: WorkerConfig) -> int:
    if rule.unit == "page_x_tensors":
        # 0.14.0-0.19.1: one page for all groups, times the number of tensors (a UniformType page is a sum).
        if len(groups) == 1:
            return groups[0].spec.page_size_bytes * worker.num_tensors
        pages = {g.spec.page_size_bytes for g in groups}
        if len(pages) != 1:  # pragma: no cover - rule D leaves one page; vLLM asserts otherwise
            raise AssertionError("one page size")
        return pages.pop() * worker.num_tensors
    if worker.num_blocks is None:
        # Unknown GPU block count: every size is page x N, so sum(sizes) // N is exactly the sum of pages.
        return worker.bytes_per_block
    if worker.num_blocks <= 0:
        return 0
    # sum(sizes) // N (0.20+), size[0] // N for packed tensors (0.24+) or the one backing allocation (0.29+):
    # all equal the worker's bytes per block for the classic shapes kvcalc models.
    return worker.total_bytes // worker.num_blocks


def _kv_tp_replicas(groups: tuple[KVCacheGroup, ...], tp: int) -> int:
    """0.31+: gcd over layers of TP // max_tp_shards; MLA and the V3.2 indexer declare 1 shard (-> TP)."""
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
    # 0.27.0+ v1/kv_offload/cpu/spec.py: replicated_layout = config.replicated_layout and _uses_shared_region().
    topology = (s.tp > 1 and s.pp == 1 and s.world_size == s.tp and s.backend == "mp" and s.nnodes == 1
                and s.platform in behaviour.shared_region_platforms)
    if not topology:
        return False
    if behaviour.replication_test == "narrow":
        # 0.27-0.30: exactly one group whose spec is exactly MLA, and the bytes are page x its layers.
        return (len(groups) == 1 and type(groups[0].spec) is MLAAttentionSpec
                and unit == groups[0].spec.page_size_bytes * groups[0].num_layers)
    return _kv_tp_replicas(groups, s.tp) == s.tp


def startup_check(rule: OffloadRule, gpu: GpuPlan, s: OffloadSettings) -> tuple[str | None, int]:
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


def _side(s: OffloadSettings, alignment: int, unit: int, copies: int, factor: int) -> SideCount:
    per_block = unit * copies
    per_offloaded = per_block * factor
    aligned = round_up(per_offloaded, alignment) if per_offloaded > 0 else 0
    n = s.cpu_bytes // aligned if aligned > 0 else 0
    return SideCount(unit_bytes=unit, copies=copies, kv_bytes_per_block=per_block,
                     kv_bytes_per_offloaded_block=per_offloaded, aligned_bytes=aligned, num_blocks=n)


def evaluate(family_id: str, gpu: GpuPlan, s: OffloadSettings, behaviour: Behaviour,
             checked: tuple[str | None, int] | None = None) -> FormulaResult | str:
    """One family's formula on this GPU plan: a FormulaResult, or the reason its connector fails at init.
    `behaviour`: the release whose rules the family follows; `checked`: the connector's start-up check, when a
    family with the same chunk rule already ran it."""
    rule = FAMILIES[family_id].rule
    error, factor = checked or startup_check(rule, gpu, s)
    if error:
        return error
    rank0 = gpu.workers[0]
    unit0 = _unit_bytes(rule, rank0.groups, rank0)
    # Decided once, on rank 0's real (unflattened) layers: both sides build the same connector config.
    replicated = _replicated(rule, behaviour, s, rank0.groups, unit0)
    copies = 1 if replicated else s.world_size
    # 0.27+ rounds chunks up to mmap.PAGESIZE (v1/kv_offload/cpu/spec.py BLOCK_SIZE_ALIGNMENT).
    alignment = s.host_page_size if rule.host_aligned else 1
    # Only the page x tensors rule reads the groups, and the scheduler's are flattened (UniformType -> first layer).
    sched_unit = _unit_bytes(rule, gpu.scheduler_groups, rank0) if rule.unit == "page_x_tensors" else unit0
    sched = _side(s, alignment, sched_unit, copies, factor)
    counts = []
    for w in gpu.workers:
        unit = unit0 if w is rank0 else _unit_bytes(rule, w.groups, w)
        counts.append(sched if unit == sched_unit else _side(s, alignment, unit, copies, factor))
    return FormulaResult(family=family_id, rule=rule, behaviour=behaviour, settings=s, gpu=gpu, scheduler=sched,
                         stage_counts=tuple(counts), factor=factor, replicated=replicated)


def family_behaviour(family_id: str, selected: Behaviour) -> Behaviour:
    """The release whose rules a family column follows: the selected release for its own family, else the
    family's representative release."""
    if family_id == selected.family.id:
        return selected
    return behaviour_for(FAMILIES[family_id].representative)
