"""GPU-side sizing (`kvcalc size --gpu-tokens N` / `--concurrency C`): the GPU blocks a target needs, the
--kv-cache-memory-bytes that gives them, the smallest --gpu-memory-utilization that gives them on the layout's GPU
(the predicted non-KV terms do not depend on the utilization: the budget is ceil(total x u) minus them), and the
smallest TP x PP that holds the target at the layout's utilization. Pure."""

from __future__ import annotations

import math

from ..pipeline import Plan, plan_vllm as plan  # vLLM's operation: its plan
from ..vocab.errors import KvcalcError, StartupRefusal, known
from ..vocab.layout import Layout
from ..vocab.records import replace

from .loading import smallest_where

MAX_BLOCKS = 1 << 40


def _meets(p: Plan, tokens: int | None, concurrency: float | None) -> bool:
    logs = p.logs
    if logs is None:
        return False
    if tokens is not None:
        return logs.kv_cache_size_tokens >= tokens
    return logs.max_concurrency >= known(concurrency, "a concurrency target")  # no token target: this one


def blocks_needed(layout: Layout, tokens: int | None, concurrency: float | None) -> tuple[int, Plan]:
    """The fewest GPU blocks whose logged KV cache size (or maximum concurrency) reaches the target, and its plan:
    a binary search over num_gpu_blocks_override (the logged numbers grow with the blocks)."""
    base = replace(layout, cache=replace(layout.cache, kv_cache_memory=None),
                   gpu=replace(layout.gpu, total_memory=None, name=None))

    def at(n: int):
        return plan(replace(base, cache=replace(base.cache, num_gpu_blocks_override=n)))

    lo, hi = 1, 1
    while not _meets(at(hi), tokens, concurrency):
        lo, hi = hi + 1, hi * 2
        if hi > MAX_BLOCKS:
            raise KvcalcError(f"{layout.source}: no GPU block count up to {MAX_BLOCKS:,} reaches the target")
    while lo < hi:
        mid = (lo + hi) // 2
        if _meets(at(mid), tokens, concurrency):
            hi = mid
        else:
            lo = mid + 1
    return lo, at(lo)


def smallest_utilization(layout: Layout, blocks: int, bytes_per_block: list[int]) -> tuple[float | None, str]:
    """The smallest utilization (4 decimals, vLLM's float) whose predicted budget gives `blocks` on every stage."""
    probe = replace(layout, gpu=replace(layout.gpu, memory_utilization=1.0))
    try:
        memory = known(plan(probe).memory, "the predicted budget")  # the layout's GPU predicts one, every term known
    except StartupRefusal as e:  # the model does not load at this TP x PP (smallest_parallel says which does)
        if not e.memory_short:
            raise
        weights = "" if e.weights_bytes is None else f": its weights take {e.weights_bytes:,} B a GPU"
        return None, f"the model does not load at this TP x PP even at utilization 1.0{weights}"
    total, requested = known(memory.total_bytes), known(memory.requested_bytes)
    # Each stage's non-KV terms are requested - its budget; they do not depend on the utilization.
    need = max(blocks * b + requested - w.kv_cache_bytes for w, b in zip(memory.workers, bytes_per_block))
    if need > total:
        return None, f"even utilization 1.0 leaves {known(memory.kv_cache_bytes):,} B of KV cache on the binding stage"
    u = math.ceil(need * 10000 / total) / 10000
    while math.ceil(total * u) < need:  # the float product, as vLLM's request_memory takes it
        u = round(u + 0.0001, 4)
    return u, f"ceil({total:,} x {u}) covers the predicted non-KV terms and {blocks:,} blocks on every stage"


def smallest_parallel(layout: Layout, tokens: int | None, concurrency: float | None) -> dict | None:
    """The smallest TP x PP (by GPUs, then PP stages) whose predicted budget reaches the target at the layout's
    utilization, or None."""
    found = smallest_where(layout, lambda p: _meets(p, tokens, concurrency))
    if found is None:
        return None
    tp, pp, p = found
    return {"tensor_parallel_size": tp, "pipeline_parallel_size": pp, "num_gpu_blocks": p.gpu.num_blocks,
            "kv_cache_size_tokens": known(p.logs).kv_cache_size_tokens,  # _meets read them
            "kv_cache_bytes": known(p.memory).kv_cache_bytes}  # the layout's GPU predicts it


def size_gpu(layout: Layout, tokens: int | None, concurrency: float | None) -> dict:
    """The answer as a JSON-ready document."""
    blocks, p = blocks_needed(layout, tokens, concurrency)
    logs = known(p.logs, "the logged KV cache size")  # blocks_needed's plan meets the target: it has them
    per_block = [w.bytes_per_block for w in p.gpu.workers]
    doc: dict = {
        "source": layout.source, "vllm_version": p.behaviour.version, "gpu_tokens": tokens,
        "concurrency": concurrency, "max_model_len": layout.cache.max_model_len, "num_gpu_blocks": blocks,
        "kv_cache_size_tokens": logs.kv_cache_size_tokens, "max_concurrency": round(logs.max_concurrency, 2),
        "kv_cache_memory_bytes": blocks * max(per_block), "gpu_memory_utilization": None, "utilization_note": None,
        "smallest_parallel": None}
    if layout.gpu.predicts:
        doc["gpu_memory_utilization"], doc["utilization_note"] = smallest_utilization(layout, blocks, per_block)
        doc["smallest_parallel"] = smallest_parallel(layout, tokens, concurrency)
    return doc
