"""The host memory the native connector's CPU tier really keeps resident: PyTorch's pinned tensors (rounded up by
its caching host allocator), or the shared /dev/shm region of 0.27+ (spec section 11)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..engines.vllm.specs import AttentionSpec, UniformTypeKVCacheSpecs
from ..engines.vllm.tensors import WorkerConfig
from ..vocab.kinds import ATTENTION_BACKENDS
from ..vocab.releases.vllm import Behaviour
from ..vocab.units import cdiv
from .base import Allocation, HostMemory, node_peak

if TYPE_CHECKING:
    from .formulas import FormulaResult, OffloadSettings, SideCount


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
    backend = ATTENTION_BACKENDS[s.attention_backend]
    groups = worker.groups
    if (b.cross_layer_blocks and not backend.mla and len(groups) == 1 and isinstance(groups[0].spec, AttentionSpec)
            and worker.num_tensors):
        # One cross-layer KV tensor (num_blocks, num_layers, ...): the worker pins one tensor of all its bytes
        # (offloading/worker.py register_cross_layers_kv_cache; 0.14.0 cpu_gpu.py "cross-layers tensor").
        size = rows * worker.bytes_per_block
        return (Allocation(count=1, size=size, resident=pinned_resident(size, b, s.pinned_round_threshold_mb)),)
    split = b.pinned_layout == "per_tensor_split_kv" and backend.kv_first
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
                for _ in range(r.count)]
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
