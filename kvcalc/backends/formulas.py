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
    AttentionSpec,
    ChunkedLocalAttentionSpec,
    MambaSpec,
    MLAAttentionSpec,
    SlidingWindowMLASpec,
    SlidingWindowSpec,
    UniformTypeKVCacheSpecs,
)
from ..engines.vllm.tensors import GpuPlan, WorkerConfig
from ..vocab.errors import UnsupportedError, known
from ..vocab.releases.attn_backends import backend_row
from ..vocab.records import cached, record
from ..vocab.releases.vllm import FAMILIES, Behaviour, OffloadRule, behaviour_for
from ..vocab.units import cdiv, round_up
from .base import Allocation, Capacity, HostMemory, OutOfBounds, node_peak


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
    prefix_caching: bool = False  # the cache's: a pure-Mamba model's state per block then (not modelled here)


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

    @property
    def ids(self) -> OutOfBounds | None:
        """The ids out of bounds on this stage, or None."""
        return None if self.bad_ids is None else OutOfBounds(pp_rank=self.pp_rank, first=self.bad_ids[0],
                                                             last=self.bad_ids[1])


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
    return known(worker.total_bytes, "a worker's bytes with its block count") // worker.num_blocks


def _kv_tp_replicas(groups: tuple[KVCacheGroup, ...], tp: int) -> int:
    """0.31+: gcd over layers of TP // max_tp_shards; MLA and the V3.2 indexer declare 1 shard (-> TP)."""
    result = tp
    for g in groups:
        specs = g.spec.distinct_specs if isinstance(g.spec, UniformTypeKVCacheSpecs) else (g.spec,)
        for s in specs:
            # SlidingWindowMLASpec (DeepSeek-V4) declares max_tp_shards=1 too (0.31.0 v1/kv_cache_interface.py).
            result = gcd(result, tp if isinstance(s, (MLAAttentionSpec, SlidingWindowMLASpec)) else 1)
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
    if hb is None or any(g.spec.block_size is None for g in groups) or \
            s.prefix_caching and all(g.spec.kind == "mamba" for g in groups):
        # A pure Mamba model with prefix caching: what the connector does with groups that are all recurrent state
        # is not modelled; refused rather than computed from nothing.
        raise UnsupportedError("a model whose every layer is Mamba, with prefix caching: the block size vLLM gives "
                               "its state (mamba_block_size) is not modelled; plan it without --enable-prefix-caching")
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
    rule = FAMILIES[family_id].formula_rule
    error, factor = checked or startup_check(rule, gpu, s)
    if error:
        return error
    if rule.unit == "page_x_tensors" and len({g.spec.page_size_bytes for g in gpu.workers[0].groups}) > 1:
        # 0.14.0-0.19.1 v1/kv_offload/cpu/spec.py: one page size for every group, or it asserts (only a model
        # whose groups keep their own pages, DeepSeek-V4, registered from 0.20.0, gets here).
        return "the groups' pages differ: this formula's connector asserts one page size at init"
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


# ---------------------------------------------------------------------------------------------------------
# The host memory the CPU tier really keeps resident: PyTorch's pinned tensors (rounded up by its caching host
# allocator), or the shared /dev/shm region of 0.27+ (spec section 11).

def _power_of_two_ceil(n: int) -> int:
    """c10::llvm::PowerOf2Ceil: the smallest power of two >= n (2,236,817,408 -> 4,294,967,296)."""
    return 1 << (n - 1).bit_length() if n > 1 else n


def pinned_resident(size: int, behaviour: Behaviour, threshold_mb: int | None) -> int:
    """Bytes one torch pinned allocation of `size` bytes keeps resident. PyTorch's caching host allocator rounds
    it up to a power of two (torch 2.9.1 - 2.11.0 include/ATen/core/CachingHostAllocator.h: always; torch 2.13+:
    unless size > pinned_max_round_threshold_mb, from PYTORCH_ALLOC_CONF)."""
    if threshold_mb is not None and behaviour.torch_round_threshold and size > threshold_mb << 20:
        return size
    return _power_of_two_ceil(size)


def host_memory(r: FormulaResult) -> HostMemory:
    s, b = r.settings, r.behaviour
    workers = r.gpu.workers
    if r.shared_region:
        # 0.27.0+ v1/kv_offload/cpu/shared_offload_region.py: one file /dev/shm/vllm_offload_{engine_id}.mmap of
        # num_chunks x aligned chunk bytes, registered with cudaHostRegister (no allocator rounding); each worker
        # populates its slot of every row (0.33 splits the file into <= 32 segments of >= 1 GiB: same total).
        region = r.scheduler.num_blocks * r.scheduler.aligned_bytes
        cpu_page = r.scheduler.kv_bytes_per_offloaded_block // r.scheduler.copies
        per_worker = tuple(r.scheduler.num_blocks * cpu_page for _ in workers)
        per_node = region * s.engines_per_node
        if s.nnodes > 1 and not r.replicated:
            per_node = _region_share_per_node(r, region) * s.engines_per_node
        return HostMemory(
            requested_bytes_per_engine=s.cpu_bytes, resident_bytes_per_worker=per_worker,
            resident_bytes_per_engine=region, resident_bytes_per_node=per_node, shm_bytes_per_engine=region,
            shm_bytes_per_node=region * s.engines_per_node, host_page_size=s.host_page_size, pinned_rounding="none",
            allocations_per_worker=tuple(() for _ in workers), shared_region=True)
    rounding = "power_of_two"
    if s.pinned_round_threshold_mb is not None and b.torch_round_threshold:
        rounding = f"threshold:{s.pinned_round_threshold_mb}"
    per_stage_allocs = tuple(_private_allocations(r, w, c) for w, c in zip(workers, r.stage_counts))
    per_worker = tuple(sum(a.count * a.resident for a in allocs) for allocs in per_stage_allocs)
    per_engine = sum(per_worker) * s.tp
    worst, smaller = _worst_rounding(r, per_stage_allocs)
    return HostMemory(
        worst_allocation=worst, smaller_budget=smaller,
        requested_bytes_per_engine=s.cpu_bytes, resident_bytes_per_worker=per_worker,
        resident_bytes_per_engine=per_engine, resident_bytes_per_node=_per_node(per_worker, s),
        shm_bytes_per_engine=0, shm_bytes_per_node=0, host_page_size=s.host_page_size, pinned_rounding=rounding,
        allocations_per_worker=per_stage_allocs, shared_region=False)


def _worst_rounding(r: FormulaResult, per_stage: tuple[tuple[Allocation, ...], ...]):
    """The allocation losing most bytes to rounding, and the largest budget (bytes, one engine) that keeps it at
    the power of two below. A tensor is rows x part bytes with rows = n x factor for the stage's count n =
    C // aligned_bytes; it fits `lower` for n' = lower // (factor x part), and C = n' x aligned_bytes gives
    exactly n'. (64 GiB on DeepSeek-V3 TP 4, 0.19.1: 61 tensors of 3,819 x 73,728 B = 268.5 MiB pin 512 MiB;
    n' = 268,435,456 // 73,728 = 3,640 -> 3,640 x 17,989,632 = 65,482,260,480 B keeps each at 256 MiB.)"""
    worst = None
    for allocs, count in zip(per_stage, r.stage_counts):
        for a in allocs:
            waste = (a.resident - a.size) * a.count
            if waste > 0 and (worst is None or waste > worst[0]):
                worst = (waste, a, count)
    if worst is None:
        return None, None
    _, a, count = worst
    rows = count.num_blocks * r.factor
    part = a.size // rows
    lower = a.resident // 2
    n = lower // (r.factor * part)
    return a, (n * count.aligned_bytes if n > 0 else None)


def _private_allocations(r: FormulaResult, worker: WorkerConfig, count: SideCount) -> tuple[Allocation, ...]:
    """One worker's torch.zeros((num_cpu_blocks, page), pin_memory=True) tensors, by the release's layout: one
    cross-layer tensor when the runner gave one (0.14-0.28, see STEPS['cross_layer_blocks']); else 0.14-0.18 one
    per layer (v1/kv_offload/worker/cpu_gpu.py), 0.19-0.22 one per KV cache tensor with FlashAttention's
    (2, num_blocks, ...) unbound into a K and a V tensor of half a page each (offloading/worker.py), 0.23+ one
    per KV cache tensor."""
    s, b = r.settings, r.behaviour
    rows = count.num_blocks * r.factor  # pre-0.26: num_cpu_blocks x block_size_factor; 0.26+: chunks x bpc
    backend = backend_row(s.attention_backend, b.release)
    groups = worker.groups
    if worker.tensor_pages is not None:
        # DeepSeek-V4: one pinned tensor per canonical GPU tensor (0.20.0-0.23.0 offloading/worker.py), the one
        # packed block-id tensor from 0.24.0 (0.24.0 offloading/worker.py:140-165).
        counts: dict[int, int] = {}
        for page in worker.tensor_pages:
            counts[rows * page] = counts.get(rows * page, 0) + 1
        return tuple(Allocation(count=k, size=size, resident=pinned_resident(size, b, s.pinned_round_threshold_mb))
                     for size, k in counts.items())
    if (b.cross_layer_blocks and (b.mla_cross_layer or backend is None or not backend.mla) and len(groups) == 1
            and isinstance(groups[0].spec, AttentionSpec) and worker.num_tensors):
        # One cross-layer KV tensor (num_blocks, num_layers, ...): the worker pins one tensor of all its bytes
        # (offloading/worker.py register_cross_layers_kv_cache; 0.14.0 cpu_gpu.py "cross-layers tensor").
        # MLA too where its backend orders the layers dimension after the blocks (STEPS['mla_cross_layer']:
        # 0.14-0.17 and 0.24+, e.g. 0.26.0 v1/attention/backends/mla/flashmla.py:66 (1, 0, 2, 3) read by
        # v1/worker/kv_connector_model_runner_mixin.py:158), not the identity order of 0.18-0.23.
        size = rows * worker.bytes_per_block
        return (Allocation(count=1, size=size, resident=pinned_resident(size, b, s.pinned_round_threshold_mb)),)
    split = b.pinned_layout == "per_tensor_split_kv" and backend is not None and backend.kv_first
    sizes: dict[int, int] = {}
    for t in _tensor_pages(worker):
        page, attention = t
        parts = (page // 2, page // 2) if split and attention else (page,)
        for part in parts:
            size = rows * part
            sizes[size] = sizes.get(size, 0) + 1
    return tuple(Allocation(count=n, size=size, resident=pinned_resident(size, b, s.pinned_round_threshold_mb))
                 for size, n in sizes.items())


def _tensor_pages(worker: WorkerConfig) -> list[tuple[int, bool]]:
    """(page bytes, its first layer is attention) per KV cache tensor of a worker, without expanding names."""
    groups = worker.groups
    if len(groups) == 1 and isinstance(groups[0].spec, UniformTypeKVCacheSpecs):
        return [(r.spec.page_size_bytes, isinstance(r.spec, AttentionSpec)) for r in groups[0].runs
                for _ in r.indices]
    if not groups:
        return []
    page = groups[0].spec.page_size_bytes
    # Tensor i is shared by layer i of every group; its first layer (group order) decides the view.
    out = []
    for i in range(worker.num_tensors):
        first = next(g for g in groups if g.num_layers > i)
        out.append((page, isinstance(first.spec, AttentionSpec)))
    return out


def _per_node(per_worker: tuple[int, ...], s: OffloadSettings) -> int:
    """Private tensors: the node with the most workers' bytes."""
    return node_peak([per_worker[rank // s.tp] for rank in range(s.tp * s.pp)], s.nnodes, s.engines_per_node)


def _region_share_per_node(r: FormulaResult, region: int) -> int:
    """A region spread over nodes: each node's /dev/shm file is sized whole, but only the pages of its own
    workers' slots are populated (shared_offload_region.py populates rank slots): the largest node's share."""
    s, page = r.settings, r.settings.host_page_size
    cpu_page = r.scheduler.kv_bytes_per_offloaded_block // r.scheduler.copies
    ranks = s.world_size
    k = cdiv(ranks, s.nnodes)
    worst = 0
    for first in range(0, ranks, k):
        start, end = first * cpu_page, min(first + k, ranks) * cpu_page
        pages = cdiv(end, page) - start // page
        worst = max(worst, pages * page)
    return min(region, r.scheduler.num_blocks * worst)
