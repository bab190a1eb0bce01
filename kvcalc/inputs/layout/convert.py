"""--compare-engines: a validated layout as the other engine would be told it, on the same model, GPUs and host.

- vLLM -> SGLang: the GPU by name (nvidia-smi's capacity from vocab/devices.DEVICES), SGLang's defaults for
  everything else (mem_fraction_static, page size), and vLLM's CPU budget per engine as HiCache's --hicache-size per
  rank (decimal GB, rounded down, as SGLang takes whole numbers): the same host bytes. Without a GPU, vLLM's
  --kv-cache-memory is SGLang's KV budget per GPU: the same bytes, divided by SGLang's cells.
- SGLang -> vLLM: the GPU by name (torch's total from vocab/devices.DEVICES: the budget is predicted per release),
  vLLM's defaults, and HiCache's bytes per engine as the native connector's cpu_bytes_to_use. An SGLang draft is
  refused by name (vLLM's drafter is another config); SGLang's --weights-bytes is SGLang's figure: vLLM weighs the
  model from its config (or says why it cannot).

Pure: the layout's model, parallelism and cache carry over unchanged."""

from __future__ import annotations

from ...vocab.devices import find_device
from ...vocab.errors import UnsupportedError
from ...vocab.layout import NO_CONNECTOR, GpuLayout, Layout, OffloadLayout
from ...vocab.records import replace
from ...vocab.releases.sglang import HiCacheLayout, SglangLayout, sglang_of


def as_sglang(layout: Layout, host_bytes_per_engine: int | None = None) -> Layout:
    """A vLLM layout as SGLang's (engine sglang): vLLM's own budget is HiCache's size (`host_bytes_per_engine`,
    the vLLM pool's, is not needed)."""
    device = find_device(layout.gpu.name) if layout.gpu.name else None
    if device is not None and device.smi_mib is None:
        device = None  # SGLang's defaults read nvidia-smi's capacity: unknown for this GPU
    hicache = HiCacheLayout()
    budget = layout.offload.cpu_bytes_to_use
    ranks = layout.parallel.workers_per_engine
    if budget:
        hicache = HiCacheLayout(enabled=True, size_gb=max(budget // ranks // 10**9, 1))
    arch = getattr(layout.weights, "architecture", None)
    sg = layout.sglang or SglangLayout(version_from="--compare-engines (kvcalc's newest)")
    if sg.capacity_mib is None and device is not None:
        sg = replace(sg, device=device, capacity_mib=device.smi_mib,
                     capacity_source=f"{device.name}: {device.smi_mib:,} MiB ({device.smi_source})")
    if not sg.hicache.enabled:
        sg = replace(sg, hicache=hicache)
    sg = replace(sg, architecture=sg.architecture or arch)
    memory = layout.cache.kv_cache_memory
    if sg.capacity_mib is None and sg.gpu_free_memory is None and memory is not None:
        sg = replace(sg, kv_budget_bytes=min(memory))  # no GPU named: the same KV budget per GPU
    return replace(layout, engine="sglang", sglang=sg, offload=NO_CONNECTOR)


def as_vllm(layout: Layout, host_bytes_per_engine: int | None) -> Layout:
    """An SGLang layout as vLLM's (engine vllm): HiCache's bytes per engine as the native connector's budget."""
    sg = sglang_of(layout)
    if sg.speculative_algorithm is not None:  # the draft's KV is part of SGLang's pools; vLLM's is its drafter's
        raise UnsupportedError(f"{layout.source}: SGLang's draft (--speculative-algorithm {sg.speculative_algorithm}) "
                               "is not told to vLLM (vLLM's drafter is --speculative-config): compare the engines "
                               "without it, or plan vLLM's line with its own --speculative-config")
    gpu = GpuLayout()
    device = sg.device
    if device is not None and device.total_bytes is not None:
        gpu = GpuLayout(name=device.name, total_memory=device.total_bytes,
                        total_source=device.total_text)
    cache = layout.cache
    if gpu.predicts:
        from .gpu import class_defaults

        cache = class_defaults(cache, gpu, layout.vllm_version)
    offload = NO_CONNECTOR
    if host_bytes_per_engine:
        offload = OffloadLayout(cpu_bytes_to_use=host_bytes_per_engine, backend="native",
                                cpu_bytes_source=f"{host_bytes_per_engine:,} B: SGLang's HiCache per engine "
                                                 "(--compare-engines)")
    return replace(layout, engine="vllm", sglang=None, gpu=gpu, cache=cache, offload=offload)


# The engine a layout is told as -> how (vocab.layout.ENGINES).
TOLD = {"sglang": as_sglang, "vllm": as_vllm}


def told(layout: Layout, engine: str, pool=None) -> Layout:
    """`layout` as `engine` would be told it, on the same model, GPUs and host (`pool`: the layout's own engine's
    host pool, whose bytes per engine become the other's budget where its own layout names none)."""
    how = TOLD.get(engine)
    if how is None:
        raise UnsupportedError(f"{layout.source}: kvcalc cannot yet tell engine {engine} this layout")
    return how(layout, None if pool is None else pool.pool_bytes_per_engine)
