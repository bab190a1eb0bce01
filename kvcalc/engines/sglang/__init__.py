"""SGLang as the serving engine. Layout -> the GPU stage: SGLang's view of the model (model.py), its
mem_fraction_static default, budget and token pool (memory.py), per release (vocab/releases/sglang.py). Imported only
for SGLang plans (a vLLM plan loads none of it: start-up time is a target)."""

from __future__ import annotations

from ...vocab.errors import UnsupportedError
from ...vocab.layout import Layout
from ...vocab.records import field, record
from ...vocab.releases.sglang import SglangBehaviour, sglang_of
from ...vocab.weights import WeightsSpec
from .memory import (GIB, Reserve, attention_backend, budget, default_fraction, free_before, requests,
                     stage_tokens)
from .model import SglangModel, StageCells, sglang_model


@record
class CellSize:
    """Bytes one token of max_total_num_tokens takes on one rank of a PP stage, per pool."""

    pp_rank: int = field("the stage")
    full: int = field("the full (or MLA) pool: layers x bytes per layer")
    swa: int = field("the sliding-window pool (hybrid SWA), per token of that pool")
    total: float = field("what the budget is divided by: full + swa_full_tokens_ratio x swa (hybrid SWA)")


@record
class SglangGpu:
    """One engine's GPU side as SGLang sizes it (the binding stage's figures where stages differ)."""

    attention_backend: str = field("SGLang's default backend on this GPU (fa3, flashinfer, triton, trtllm_mha, ...)")
    page_size: int = field("tokens per page: the flag's, else the backend's (1; 64 for TRT-LLM on SM100)")
    capacity_mib: int | None = field("nvidia-smi memory.total (what the defaults read)")
    mem_fraction_static: float | None = field("the fraction used (null when a budget was given in bytes)")
    mem_fraction_static_default: bool = field("true: SGLang's default for this GPU (reserve below), not a flag")
    reserve: Reserve | None = field("the default's terms (null when the flag sets the fraction)")
    free_before_bytes: int | None = field("free device memory before the weights load (pre_model_load_memory)")
    free_before_basis: str = field("flag | table")
    free_before_source: str = field("where it comes from")
    weights_bytes: tuple[int, ...] = field("per PP stage: the weights on one rank")
    weights_basis: str = field("flag (--weights-bytes) | exact | estimate (the parameter breakdown)")
    available_bytes: int | None = field("free after the weights load, MIN over the world: free_before - the largest "
                                        "weights")
    budget_bytes: int = field("int((available - free_before x (1 - mem_fraction_static)) x 2^30), from GiB floats")
    min_mem_fraction_static: float | None = field("1 - available / free_before: below it SGLang refuses to start")
    cell_size_bytes: tuple[CellSize, ...] = field("per PP stage and pool")
    max_total_num_tokens: int = field("the token pool: MIN over the stages, floored to the page, capped by the flag")
    full_max_total_num_tokens: int | None = field("hybrid SWA: the full pool's tokens")
    swa_max_total_num_tokens: int | None = field("hybrid SWA: the sliding-window pool's tokens")
    max_total_tokens_flag: int | None = field("--max-total-tokens")
    max_running_requests: int = field("min(clamp(tokens / context x 512, 2048, 4096), tokens // 2), or the flag's")
    context_length: int = field("--context-length (max_model_len)")
    kv_bytes_per_rank: int = field("bytes the pools allocate on the binding rank: (tokens + one padding page) x "
                                   "bytes per token")
    log_lines: tuple[str, ...] = field("what SGLang logs for this pool")


@record
class SglangStage:
    behaviour: SglangBehaviour
    model: SglangModel
    gpu: SglangGpu
    notes: tuple[str, ...] = ()


def _weights(layout: Layout, ranges: list[tuple[int, int]]) -> tuple[tuple[int, ...], str]:
    sg = sglang_of(layout)
    if sg.weights_bytes is not None:
        return (sg.weights_bytes,) * len(ranges), "flag"
    spec = layout.weights
    if not isinstance(spec, WeightsSpec):
        raise UnsupportedError(f"{layout.source}: SGLang's budget needs the weights on one GPU: give --weights-bytes "
                               f"(SGLang logs it as 'Load weight end. ... mem usage=X GB') or a config.json"
                               + (f" ({spec})" if spec else ""))
    from ..vllm.weights import stage_weights  # the weights figure, shared with vLLM's stage

    per = stage_weights(spec, dtype=layout.model.dtype, tp=layout.parallel.tensor_parallel_size, stages=ranges)
    basis = "estimate" if spec.has_vision or spec.quantization else "exact"
    return tuple(w.bytes_per_rank for w in per), basis


def _fraction(layout: Layout, behaviour: SglangBehaviour, mla: bool, backend: str) -> tuple[float, Reserve | None]:
    sg = sglang_of(layout)
    if sg.mem_fraction_static is not None:
        return sg.mem_fraction_static, None
    if sg.capacity_mib is None:
        raise UnsupportedError(f"{layout.source}: SGLang's default mem_fraction_static reads the GPU's capacity: give "
                               "--gpu NAME (or --gpu-capacity-mib) or --mem-fraction-static")
    if isinstance(layout.weights, WeightsSpec) and layout.weights.has_vision:
        raise UnsupportedError(f"{layout.source}: SGLang lowers its default mem_fraction_static for a multimodal model "
                               "by its vision tower's size (memory_hook.py adjust_mem_fraction_for_vlm, not modelled): "
                               "give --mem-fraction-static")
    reserve = default_fraction(layout, behaviour, mla, backend)
    return reserve.mem_fraction_static, reserve


def build_stage(layout: Layout, behaviour: SglangBehaviour) -> SglangStage:
    """Layout -> SGLang's pools, budget and tokens on one engine."""
    sg = sglang_of(layout)
    model = sglang_model(layout, behaviour.hybrid_swa(sg.architecture), behaviour.hybrid_swa_stage_layers)
    if sg.kv_budget_bytes is not None:  # --compare-engines: vLLM's --kv-cache-memory as the budget itself
        return _given_budget(layout, behaviour, model, sg.kv_budget_bytes)
    if sg.gpu_free_memory is None and sg.capacity_mib is None:
        raise UnsupportedError(f"{layout.source}: SGLang's budget starts from the GPU: give --gpu NAME, "
                               "--gpu-capacity-mib or --gpu-free-memory")
    arch = sg.device.arch if sg.device is not None else "sm90"
    backend, page = attention_backend(layout, arch, model.kind == "mla")
    mfs, reserve = _fraction(layout, behaviour, model.kind == "mla", backend)
    pre, pre_basis, pre_source = free_before(layout)
    if pre <= 0:
        raise UnsupportedError(f"{layout.source}: no free GPU memory before the weights load ({pre_source}): give "
                               "--gpu-free-memory or a GPU's real capacity")
    weights, w_basis = _weights(layout, [s.layers for s in model.stages])
    available = min(pre - w for w in weights)
    budget_bytes, minimum = budget(pre, available, mfs)
    return _tokens(layout, behaviour, model, budget_bytes, page, SglangGpu(
        attention_backend=backend, page_size=page, capacity_mib=sg.capacity_mib, mem_fraction_static=mfs,
        mem_fraction_static_default=reserve is not None, reserve=reserve, free_before_bytes=pre,
        free_before_basis=pre_basis, free_before_source=pre_source, weights_bytes=weights, weights_basis=w_basis,
        available_bytes=available, budget_bytes=budget_bytes, min_mem_fraction_static=minimum,
        cell_size_bytes=(), max_total_num_tokens=0, full_max_total_num_tokens=None, swa_max_total_num_tokens=None,
        max_total_tokens_flag=sg.max_total_tokens, max_running_requests=0, context_length=layout.cache.max_model_len,
        kv_bytes_per_rank=0, log_lines=()))


def _given_budget(layout: Layout, behaviour: SglangBehaviour, model: SglangModel, kv: int) -> SglangStage:
    """A budget given in bytes (vLLM's --kv-cache-memory for --compare-engines): the pool SGLang builds from it."""
    sg = sglang_of(layout)
    backend, page = attention_backend(layout, sg.device.arch if sg.device else "sm90", model.kind == "mla")
    return _tokens(layout, behaviour, model, kv, page, SglangGpu(
        attention_backend=backend, page_size=page, capacity_mib=sg.capacity_mib, mem_fraction_static=None,
        mem_fraction_static_default=False, reserve=None, free_before_bytes=None, free_before_basis="flag",
        free_before_source="a KV budget in bytes (vLLM's --kv-cache-memory, --compare-engines)",
        weights_bytes=(0,), weights_basis="flag", available_bytes=None, budget_bytes=kv,
        min_mem_fraction_static=None, cell_size_bytes=(), max_total_num_tokens=0, full_max_total_num_tokens=None,
        swa_max_total_num_tokens=None, max_total_tokens_flag=sg.max_total_tokens, max_running_requests=0,
        context_length=layout.cache.max_model_len, kv_bytes_per_rank=0, log_lines=()))


def _tokens(layout: Layout, behaviour: SglangBehaviour, model: SglangModel, budget_bytes: int, page: int,
            gpu: SglangGpu) -> SglangStage:
    from ...vocab.errors import StartupRefusal
    from ...vocab.records import replace

    sg = sglang_of(layout)
    ratio = sg.swa_full_tokens_ratio
    per = [stage_tokens(model, s.pp_rank, budget_bytes, page, ratio) for s in model.stages]
    full, swa = min(per)
    if sg.max_total_tokens is not None and sg.max_total_tokens < full:
        full = sg.max_total_tokens // page * page  # kv_cache_configurator.py:3100-3108, then re-aligned
        swa = min(int(full * ratio) // page * page, swa) if model.kind == "hybrid_swa" else 0
    if full <= 0:
        raise StartupRefusal(f"Not enough memory. Please try to increase "
                             f"--mem-fraction-static. Current value: mem_fraction_static={gpu.mem_fraction_static}")
    hybrid = model.kind == "hybrid_swa"
    cells = tuple(CellSize(pp_rank=s.pp_rank, full=s.full_bytes, swa=s.swa_bytes,
                           total=s.full_bytes + ratio * s.swa_bytes if hybrid else s.full_bytes)
                  for s in model.stages)
    bind = max(model.stages, key=lambda s: s.full_bytes + s.swa_bytes)
    allocated = (full + page) * bind.full_bytes + ((swa + page) * bind.swa_bytes if hybrid else 0)
    reqs = requests(full, layout.cache.max_model_len, sg.max_running_requests)
    gpu = replace(gpu, cell_size_bytes=cells, max_total_num_tokens=full,
                  full_max_total_num_tokens=full if hybrid else None, swa_max_total_num_tokens=swa if hybrid else None,
                  max_running_requests=reqs, kv_bytes_per_rank=allocated,
                  log_lines=_log_lines(model, bind, full, swa, page, reqs, layout))
    return SglangStage(behaviour=behaviour, model=model, gpu=gpu, notes=model.notes)


def _log_lines(model: SglangModel, s: StageCells, full: int, swa: int, page: int, reqs: int,
               layout: Layout) -> tuple[str, ...]:
    """srt/mem_cache/memory_pool.py:2073-2099 @0.5.23 (GB = 2^30 there; the pool holds tokens + one padding page),
    srt/mem_cache/swa_memory_pool.py:81-102 (the 'Full' and 'SWA' labels) and srt/managers/scheduler.py:1267-1276."""
    if model.kind == "mla":
        lines = [f"KV Cache is allocated. #tokens: {full}, KV size: {(full + page) * s.full_bytes / GIB:.2f} GB"]
    else:
        def sizes(label: str, tokens: int, layers: int, per_layer: int) -> str:
            k = (tokens + page) * layers * per_layer * model.head_dim // (model.head_dim + model.v_head_dim)
            v = (tokens + page) * layers * per_layer - k
            return (f"{label}KV Cache is allocated. #tokens: {tokens}, K size: {k / GIB:.2f} GB, "
                    f"V size: {v / GIB:.2f} GB")
        hybrid = model.kind == "hybrid_swa"
        lines = [sizes("Full " if hybrid else "", full, s.full_layers, s.full_bytes_per_layer)]
        if hybrid:
            lines.append(sizes("SWA ", swa, s.swa_layers, s.swa_bytes_per_layer))
    lines.append(f"max_total_num_tokens={full}, max_running_requests={reqs}, "
                 f"context_len={layout.cache.max_model_len}")
    return tuple(lines)


def _releases(layout: Layout) -> tuple[str, str]:
    sg = sglang_of(layout)
    return sg.version, sg.version_from


from ..base import Engine  # noqa: E402 - the engine door, after the stage it describes

ENGINE = Engine(name="sglang", title="SGLang", operations=frozenset(), release_key="sglang.version",
                release_flag="--sglang-version", releases=_releases,
                offers_text="drop --engine sglang for vLLM, or --compare-engines for both")
