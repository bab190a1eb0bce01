"""Groups + KV memory -> per-worker num_blocks and KV cache tensors, the min across workers, the
scheduler's view, and the numbers vLLM logs (spec sections 6 and 7)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

from .errors import StartupRefusal
from .grouping import Grouping, KVCacheGroup
from .layers import LayerPlan
from .specs import KVCacheSpec, UniformTypeKVCacheSpecs, UsageContext
from .units import cdiv


class KVCacheTensor(NamedTuple):
    """One KV cache tensor (vLLM's KVCacheTensor). A named tuple, not a dataclass: a plan builds one per layer,
    and a frozen dataclass's __init__ costs several times more."""

    page_bytes: int  # bytes of this tensor per GPU block
    num_blocks: int | None  # None: no KV memory was given, the GPU block count is unknown
    shared_by: tuple[str, ...]

    @property
    def size(self) -> int | None:
        return None if self.num_blocks is None else self.page_bytes * self.num_blocks


@dataclass(frozen=True, kw_only=True)
class WorkerConfig:
    """One worker's KVCacheConfig (TP ranks of a stage are identical, so one per PP stage)."""

    pp_rank: int
    num_blocks: int | None
    num_blocks_before_min: int | None
    groups: tuple[KVCacheGroup, ...]
    tensors: tuple[KVCacheTensor, ...]

    @cached_property
    def bytes_per_block(self) -> int:
        # b_w: sum of tensor sizes / num_blocks, kept exact even when num_blocks is 0.
        return sum(t.page_bytes for t in self.tensors)

    @cached_property
    def total_bytes(self) -> int | None:
        if self.num_blocks is None:
            return None
        return sum(t.size for t in self.tensors)

    @property
    def num_layers(self) -> int:
        return sum(len(g.layer_names) for g in self.groups)


class GpuPlan(NamedTuple):
    workers: tuple[WorkerConfig, ...]  # one per PP stage, after the min
    scheduler_groups: tuple[KVCacheGroup, ...]  # rank 0's groups, UniformType flattened to the first layer
    num_blocks: int | None
    hash_block_size: int  # the engine's global block size = min group block size
    warnings: tuple[str, ...]


class LogNumbers(NamedTuple):
    family: str
    kv_cache_size_tokens: int
    max_concurrency: float  # vLLM computes it as a float and prints it with %.2f
    blocks_per_request: int
    lines: tuple[str, ...]


def _project(groups: tuple[KVCacheGroup, ...], names: set[str]) -> tuple[KVCacheGroup, ...]:
    out = []
    for g in groups:
        mine = tuple(n for n in g.layer_names if n in names)
        if len(mine) == len(g.layer_names):
            out.append(g)  # the worker holds the whole group (no PP split): keep it, and its cached sizes
            continue
        spec = g.spec.restricted_to(list(mine)) if isinstance(g.spec, UniformTypeKVCacheSpecs) else g.spec
        out.append(KVCacheGroup(layer_names=mine, spec=spec))
    return tuple(out)


def _tensor_pages(groups: tuple[KVCacheGroup, ...]) -> tuple[int, list[tuple[int, tuple[str, ...]]]]:
    """(bytes one block costs per 'slot', [(tensor page, shared_by)]) for a worker's projected groups."""
    if len(groups) == 1 and isinstance(groups[0].spec, UniformTypeKVCacheSpecs):
        by_layer = groups[0].spec.spec_by_layer
        return groups[0].spec.page_size_bytes, [(by_layer[n].page_size_bytes, (n,)) for n in groups[0].layer_names]
    group_size = max(len(g.layer_names) for g in groups)
    if group_size == 0:
        raise StartupRefusal("a pipeline stage owns no KV cache layer of any group (vLLM asserts group_size > 0)")
    pages = {g.spec.page_size_bytes for g in groups}
    if len(pages) != 1:  # pragma: no cover - rule D guarantees one page
        raise StartupRefusal(f"groups with different page sizes {sorted(pages)}")
    page = pages.pop()
    tensors = []
    for i in range(group_size):
        shared = tuple(g.layer_names[i] for g in groups if i < len(g.layer_names))
        tensors.append((page, shared))
    return page * group_size, tensors


def _needed_bytes(groups: tuple[KVCacheGroup, ...], usage: UsageContext) -> int:
    """Bytes one max-length request needs on this worker (vLLM's startup memory check)."""
    if len(groups) == 1 and isinstance(groups[0].spec, UniformTypeKVCacheSpecs):
        # Count shared spec objects by identity (hashing 62 dataclasses costs more than the arithmetic).
        counts = Counter(id(s) for _, s in groups[0].spec.specs)
        by_id = {id(s): s for _, s in groups[0].spec.specs}
        return sum(n * by_id[i].max_memory_usage_bytes(usage) for i, n in counts.items())
    group_size = max(len(g.layer_names) for g in groups)
    page = groups[0].spec.page_size_bytes
    return group_size * page * sum(cdiv(g.spec.max_memory_usage_bytes(usage), page) for g in groups)


def build_gpu_plan(
    grouping: Grouping,
    layer_plan: LayerPlan,
    *,
    tp: int,
    memory_for_worker,  # callable worker index -> bytes or None
    num_gpu_blocks_override: int | None,
) -> GpuPlan:
    warnings: list[str] = []
    groups = grouping.groups
    usage = layer_plan.usage
    per_stage: list[tuple[int, tuple[KVCacheGroup, ...], list[tuple[int, tuple[str, ...]]], int]] = []
    for stage in layer_plan.stages:
        names = {n for n, _ in stage.layers}
        proj = _project(groups, names) if groups else ()
        if groups:
            block_cost, tensor_pages = _tensor_pages(proj)
        else:
            block_cost, tensor_pages = 0, []
        # TP ranks of a stage share their specs; the one with the least memory decides (num_blocks grows with
        # memory, and the startup memory check fails there first).
        ranks = [stage.pp_rank * tp + r for r in range(tp)]
        known = [(memory_for_worker(w), w) for w in ranks if memory_for_worker(w) is not None]
        if not known:
            stage_blocks = num_gpu_blocks_override  # no memory given: the override, or unknown (None)
        else:
            avail, worker = min(known)
            if groups:
                if avail <= 0:
                    raise StartupRefusal(f"vLLM refuses to start: worker {worker} has no available memory for the cache blocks "
                                          f"(cache.kv_cache_memory is {avail})")
                needed = _needed_bytes(proj, usage)
                if needed > avail:
                    raise StartupRefusal(
                        f"worker {worker}: one request of max_model_len {usage.max_model_len:,} tokens needs "
                        f"{needed:,} B of KV cache, more than the {avail:,} B available; vLLM refuses to start"
                    )
                stage_blocks = avail // block_cost if block_cost else 0
            else:
                stage_blocks = 1  # attention-free: vLLM's placeholder config
            if num_gpu_blocks_override is not None:
                stage_blocks = num_gpu_blocks_override
        per_stage.append((stage.pp_rank, proj, tensor_pages, stage_blocks))

    known = [nb for *_, nb in per_stage if nb is not None]
    n_min = min(known) if known else None
    if n_min is None:
        warnings.append("no KV cache memory given (--kv-cache-memory): the GPU block count, tensor sizes and log "
                        "lines are not computed; the CPU counts do not depend on them")
    elif n_min == 0:
        warnings.append("GPU num_blocks is 0: vLLM would have no KV cache blocks; the fixed formula's CPU count is 0")
    workers = tuple(
        WorkerConfig(
            pp_rank=rank, num_blocks=n_min, num_blocks_before_min=nb, groups=proj,
            tensors=tuple(KVCacheTensor(page_bytes=p, num_blocks=n_min, shared_by=s) for p, s in tp_list),
        )
        for rank, proj, tp_list, nb in per_stage
    )
    sched = []
    for g in workers[0].groups:
        spec: KVCacheSpec = g.spec
        if isinstance(spec, UniformTypeKVCacheSpecs):
            # The scheduler sees one layer's spec for the whole group: the first in registration order.
            spec = spec.first_spec()
        sched.append(KVCacheGroup(layer_names=g.layer_names, spec=spec))
    hash_block = min((g.spec.block_size for g in groups), default=layer_plan.block_size)
    return GpuPlan(workers=workers, scheduler_groups=tuple(sched), num_blocks=n_min, hash_block_size=hash_block,
                   warnings=tuple(warnings))


def log_numbers(worker: WorkerConfig, usage: UsageContext, log_family: str, device: str | None = None
                ) -> LogNumbers | None:
    """What vLLM logs for rank 0: KV cache size in tokens and the maximum concurrency (section 7).

    L1 (<= 0.20) and L2 (0.21-0.26) share the concurrency N / cdiv(n * sum M_g, P_0 * n); L3 (0.28+) uses
    N / sum_g cdiv(M_g, P_g). L1 counts tokens as N // G * min block size, L2/L3 as int(concurrency * mml).
    """
    groups = worker.groups
    if not groups or worker.num_blocks is None:
        return None
    if log_family == "L3":
        blocks_per_request = sum(cdiv(g.spec.max_memory_usage_bytes(usage), g.spec.page_size_bytes) for g in groups)
    else:
        n = max(len(g.layer_names) for g in groups)
        per_request = n * sum(g.spec.max_memory_usage_bytes(usage) for g in groups)
        blocks_per_request = cdiv(per_request, groups[0].spec.page_size_bytes * n)
    # vLLM divides as floats here; kvcalc does the same so the printed value matches to the digit.
    concurrency = worker.num_blocks / blocks_per_request
    if log_family == "L1":
        tokens = worker.num_blocks // len(groups) * min(g.spec.block_size for g in groups) * usage.cp
    else:
        tokens = int(concurrency * usage.max_model_len)
    size = f"{device or 'GPU'} KV cache size: {tokens:,} tokens"
    conc = f"Maximum concurrency for {usage.max_model_len:,} tokens per request: {concurrency:.2f}x"
    lines = (f"{size}, {conc}",) if log_family == "L3" else (size, conc)
    return LogNumbers(family=log_family, kv_cache_size_tokens=tokens, max_concurrency=concurrency,
                      blocks_per_request=blocks_per_request, lines=lines)
