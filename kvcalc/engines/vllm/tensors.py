"""Groups + KV memory -> per-worker num_blocks and KV cache tensors, the min across workers, the
scheduler's view, and the numbers vLLM logs (spec sections 6 and 7).

A worker's tensors are described by their count and bytes per block; the tensor list itself (one entry per
tensor, with the layers sharing it) is expanded only when a report or --verify asks for it.
"""

from __future__ import annotations


from ...vocab.errors import StartupRefusal
from .grouping import Grouping, KVCacheGroup
from .layers import LayerPlan
from ...vocab.records import cached, record, replace
from .runs import layer_names, ordered, restrict
from .specs import UniformTypeKVCacheSpecs, UsageContext
from ...vocab.units import cdiv


@record
class KVCacheTensor:
    """One KV cache tensor (vLLM's KVCacheTensor)."""

    page_bytes: int  # bytes of this tensor per GPU block
    num_blocks: int | None  # None: no KV memory was given, the GPU block count is unknown
    shared_by: tuple[str, ...]

    @property
    def size(self) -> int | None:
        return None if self.num_blocks is None else self.page_bytes * self.num_blocks


def _uniform_type(groups: tuple[KVCacheGroup, ...]) -> bool:
    return len(groups) == 1 and isinstance(groups[0].spec, UniformTypeKVCacheSpecs)


@record
class WorkerConfig:
    """One worker's KVCacheConfig (TP ranks of a stage are identical, so one per PP stage)."""

    pp_rank: int
    num_blocks: int | None
    num_blocks_before_min: int | None
    groups: tuple[KVCacheGroup, ...]
    num_tensors: int  # len(kv_cache_tensors): one per layer (UniformType), else group_size
    bytes_per_block: int  # b_w: sum of tensor sizes / num_blocks, exact even when num_blocks is 0
    # DeepSeek-V4 (engines/vllm/dsv4.py): each KV cache tensor's bytes per block as the offloader sees them (one
    # packed tensor of the whole block id from 0.24.0); None: derived from the groups as below.
    tensor_pages: tuple[int, ...] | None = None

    @property
    def total_bytes(self) -> int | None:
        return None if self.num_blocks is None else self.bytes_per_block * self.num_blocks

    @cached
    def tensors(self) -> tuple[KVCacheTensor, ...]:
        """The tensor list, expanded: UniformType -> one per layer in registration order; otherwise tensor i
        is shared by layer i of every group that has one."""
        n = self.num_blocks
        if self.tensor_pages is not None:
            return tuple(KVCacheTensor(page_bytes=p, num_blocks=n, shared_by=()) for p in self.tensor_pages)
        if _uniform_type(self.groups):
            return tuple(KVCacheTensor(page_bytes=r.spec.page_size_bytes, num_blocks=n,
                                       shared_by=(f"model.layers.{i}.{r.module}",))
                         for i, _, r in ordered(self.groups[0].runs))
        if not self.groups:
            return ()
        page = self.groups[0].spec.page_size_bytes
        names = [layer_names(g.runs) for g in self.groups]
        return tuple(KVCacheTensor(page_bytes=page, num_blocks=n,
                                   shared_by=tuple(ns[i] for ns in names if i < len(ns)))
                     for i in range(self.num_tensors))


@record
class GpuPlan:
    workers: tuple[WorkerConfig, ...]  # one per PP stage, after the min
    scheduler_groups: tuple[KVCacheGroup, ...]  # rank 0's groups, UniformType flattened to the first layer
    num_blocks: int | None
    hash_block_size: int  # the engine's global block size = min group block size
    warnings: tuple[str, ...]


@record
class LogNumbers:
    family: str
    kv_cache_size_tokens: int
    max_concurrency: float  # vLLM computes it as a float and prints it with %.2f
    blocks_per_request: int
    max_model_len: int
    device: str

    @property
    def lines(self) -> tuple[str, ...]:
        """The lines vLLM prints (formatted on request: a sweep never shows them)."""
        size = f"{self.device} KV cache size: {self.kv_cache_size_tokens:,} tokens"
        conc = f"Maximum concurrency for {self.max_model_len:,} tokens per request: {self.max_concurrency:.2f}x"
        return (f"{size}, {conc}",) if self.family == "L3" else (size, conc)


def _project(groups: tuple[KVCacheGroup, ...], lo: int, hi: int) -> tuple[KVCacheGroup, ...]:
    out = []
    whole = True
    for g in groups:
        mine = restrict(g.runs, lo, hi)
        if mine == g.runs:
            out.append(g)  # the worker holds the whole group (no PP split): keep it, and its cached sizes
            continue
        whole = False
        spec = g.spec
        if isinstance(spec, UniformTypeKVCacheSpecs) and mine:
            spec = UniformTypeKVCacheSpecs.of(mine)  # the worker's page is the sum over its own layers
        out.append(KVCacheGroup(runs=mine, spec=spec))
    return groups if whole else tuple(out)


def _tensor_layout(groups: tuple[KVCacheGroup, ...]) -> tuple[int, int]:
    """(number of tensors, bytes one block costs) for a worker's projected groups (spec 6.2)."""
    if _uniform_type(groups):
        # One tensor per layer; a block costs the UniformType page, the sum of the layers' pages.
        return groups[0].num_layers, groups[0].spec.page_size_bytes
    group_size = max(g.num_layers for g in groups)
    if group_size == 0:
        raise StartupRefusal("a pipeline stage owns no KV cache layer of any group (vLLM asserts group_size > 0)")
    pages = {g.spec.page_size_bytes for g in groups}
    if len(pages) != 1:  # pragma: no cover - rule D guarantees one page
        raise StartupRefusal(f"groups with different page sizes {sorted(pages)}")
    return group_size, pages.pop() * group_size


def _needed_bytes(groups: tuple[KVCacheGroup, ...], usage: UsageContext, group_size: int) -> int:
    """Bytes one max-length request needs on this worker (vLLM's startup memory check); `group_size`: the
    largest group's layer count (_tensor_layout's tensor count)."""
    spec = groups[0].spec
    if len(groups) == 1 and isinstance(spec, UniformTypeKVCacheSpecs):
        return spec.summed_usage(usage)
    page = spec.page_size_bytes
    return group_size * page * sum(cdiv(g.spec.max_usage(usage), page) for g in groups)


def _gib(b: int) -> str:
    return str(round(b / (1 << 30), 2))  # vLLM utils/mem_utils.py format_gib


def largest_fitting_len(groups: tuple[KVCacheGroup, ...], usage: UsageContext, group_size: int, avail: int,
                        hi: int) -> int:
    """The largest max_model_len in 0..hi whose one request fits `avail` bytes (vLLM's _estimate_max_model_len: a
    binary search over the same check, v1/core/kv_cache_utils.py)."""
    lo = 0
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if _needed_bytes(groups, replace(usage, max_model_len=mid), group_size) <= avail:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _short(text: str) -> StartupRefusal:
    """vLLM's memory refusal (StartupRefusal.memory_short: more GPUs may start it)."""
    e = StartupRefusal(text)
    e.memory_short = True
    return e


def _check_enough(groups, usage: UsageContext, group_size: int, avail: int, worker: int, text: str) -> None:
    """vLLM's _check_enough_kv_cache_memory (v1/core/kv_cache_utils.py:609-643 @0.14.0, :697-728 @0.22.0; 0.33.0
    v1/core/kv_cache_planning.py:50-87), with its messages."""
    cpu = " (this flag also controls CPU memory reservation on the CPU backend, despite its name)" if text == "v2" \
        else ""
    if avail <= 0:
        raise _short(f"vLLM refuses to start (worker {worker}, KV budget {avail:,} B): No available memory for "
                             f"the cache blocks. Try increasing `gpu_memory_utilization` when initializing the "
                             f"engine{cpu}. See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for "
                             "more details.")
    needed = _needed_bytes(groups, usage, group_size)
    if needed > avail:
        est = largest_fitting_len(groups, usage, group_size, avail, usage.max_model_len - 1)
        estimated = f"Based on the available memory, the estimated maximum model length is {est}. " if est else ""
        whose, flag = ("model's", " (which also controls CPU memory on the CPU backend)") if text == "v2" else (
            "models's", "")
        raise _short(
            f"vLLM refuses to start (worker {worker}, {needed:,} B needed, {avail:,} B available): To serve at least "
            f"one request with the {whose} max seq len ({usage.max_model_len}), ({_gib(needed)} GiB KV cache is "
            f"needed, which is larger than the available KV cache memory ({_gib(avail)} GiB). {estimated}Try "
            f"increasing `gpu_memory_utilization`{flag} or decreasing `max_model_len` when initializing the engine. "
            "See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details.")


def build_gpu_plan(
    grouping: Grouping,
    layer_plan: LayerPlan,
    *,
    tp: int,
    memory,  # callable: a range of worker indices -> (least KV memory, its worker) or None
    num_gpu_blocks_override: int | None,
    refusal_text: str = "v2",  # the release's wording of its start-up refusals (steps.py refusal_text)
) -> GpuPlan:
    warnings: list[str] = []
    groups = grouping.groups
    usage = layer_plan.usage
    per_stage = []
    n_min = None
    for stage in layer_plan.stages:
        proj = _project(groups, *stage.owned) if groups else ()
        num_tensors, block_cost = _tensor_layout(proj) if groups else (0, 0)
        # TP ranks of a stage share their specs; the one with the least memory decides (num_blocks grows with
        # memory, and the startup memory check fails there first).
        least = memory(range(stage.pp_rank * tp, stage.pp_rank * tp + tp))
        if least is None:
            stage_blocks = num_gpu_blocks_override  # no memory given: the override, or unknown (None)
        else:
            avail, worker = least
            if groups:
                _check_enough(proj, usage, num_tensors, avail, worker, refusal_text)
                stage_blocks = avail // block_cost if block_cost else 0
            else:
                stage_blocks = 1  # attention-free: vLLM's placeholder config
            if num_gpu_blocks_override is not None:
                stage_blocks = num_gpu_blocks_override
        per_stage.append((stage.pp_rank, proj, num_tensors, block_cost, stage_blocks))
        if stage_blocks is not None and (n_min is None or stage_blocks < n_min):
            n_min = stage_blocks  # the min over the stages that know their count

    if n_min is None:
        warnings.append("no KV cache memory given (--kv-cache-memory): the GPU block count, tensor sizes and log "
                        "lines are not computed; the CPU counts do not depend on them")
    elif n_min == 0:
        warnings.append("GPU num_blocks is 0: vLLM would have no KV cache blocks; the fixed formula's CPU count is 0")
    workers = tuple([
        WorkerConfig(pp_rank=rank, num_blocks=n_min, num_blocks_before_min=nb, groups=proj, num_tensors=nt,
                     bytes_per_block=cost)
        for rank, proj, nt, cost, nb in per_stage
    ])
    sched = workers[0].groups
    only = sched[0].spec if len(sched) == 1 else None
    if isinstance(only, UniformTypeKVCacheSpecs):
        # The scheduler sees one layer's spec for the whole group: the first in registration order.
        sched = (KVCacheGroup(runs=sched[0].runs, spec=only.first),)
    hash_block = min(g.spec.block_size for g in groups) if groups else layer_plan.block_size
    return GpuPlan(workers=workers, scheduler_groups=sched, num_blocks=n_min, hash_block_size=hash_block,
                   warnings=tuple(warnings))


def log_numbers(worker: WorkerConfig, usage: UsageContext, log_family: str, device: str | None = None,
                per_group: bool = False) -> LogNumbers | None:
    """What vLLM logs for rank 0: KV cache size in tokens and the maximum concurrency (section 7).

    L1 (<= 0.20) and L2 (0.21-0.26) share the concurrency N / cdiv(n * sum M_g, P_0 * n); L3 (0.28+) uses
    N / sum_g cdiv(M_g, P_g). L1 counts tokens as N // G * min block size, L2/L3 as int(concurrency * mml).
    """
    groups = worker.groups
    if not groups or worker.num_blocks is None:
        return None
    if log_family == "L3" or per_group:  # per_group: 0.27.0+ (Behaviour.concurrency_sum)
        blocks_per_request = sum(cdiv(g.spec.max_usage(usage), g.spec.page_size_bytes) for g in groups)
    elif len(groups) == 1:
        # One group: n x M / (P x n) blocks, the same cdiv without the sums.
        g = groups[0]
        n = g.num_layers
        blocks_per_request = cdiv(n * g.spec.max_usage(usage), g.spec.page_size_bytes * n)
    else:
        n = max(g.num_layers for g in groups)
        per_request = n * sum(g.spec.max_usage(usage) for g in groups)
        blocks_per_request = cdiv(per_request, groups[0].spec.page_size_bytes * n)
    # vLLM divides as floats here; kvcalc does the same so the printed value matches to the digit.
    concurrency = worker.num_blocks / blocks_per_request
    if log_family == "L1":
        block = groups[0].spec.block_size if len(groups) == 1 else min(g.spec.block_size for g in groups)
        tokens = worker.num_blocks // len(groups) * block * usage.cp
    else:
        tokens = int(concurrency * usage.max_model_len)
    return LogNumbers(family=log_family, kv_cache_size_tokens=tokens, max_concurrency=concurrency,
                      blocks_per_request=blocks_per_request, max_model_len=usage.max_model_len, device=device or "GPU")
