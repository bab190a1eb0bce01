"""SGLang as the serving engine. Layout -> the GPU stage: SGLang's view of the model (model.py), its
mem_fraction_static default, budget and token pool (memory.py), per release (vocab/releases/sglang.py). Imported only
for SGLang plans (a vLLM plan loads none of it: start-up time is a target)."""

from __future__ import annotations

from ...vocab.errors import StartupRefusal, UnsupportedError, known
from ...vocab.layout import Layout
from ...vocab.records import field, record
from ...vocab.releases.sglang import SglangBehaviour, sglang_of
from ...vocab.weights import WeightsSpec
from .deploy import attention_parallel, mm_reservation_gib, speculative
from .mamba import MambaState
from .memory import (GIB, Reserve, aiter_factor, attention_backend, default_fraction, free_before, gpu_defaults,
                     rest_gib)
from .model import SglangModel, StageCells, sglang_model
from .dsv4 import Dsv4Pools
from .pools import Pools, size_pools


@record
class CellSize:
    """Bytes one token of max_total_num_tokens takes on one rank of a PP stage, per pool."""

    pp_rank: int = field("the stage")
    full: int = field("the full (or MLA) pool: layers x bytes per layer")
    swa: int = field("the sliding-window pool (hybrid SWA), per token of that pool")
    total: float = field("what the budget is divided by: full + swa_full_tokens_ratio x swa (hybrid SWA), + draft")
    draft: int = field("the speculative draft's KV a token (EAGLE family: int(full x draft layers / layers))",
                       default=0)


@record
class SglangGpu:
    """One engine's GPU side as SGLang sizes it (the binding stage's figures where stages differ)."""

    attention_backend: str = field("SGLang's default backend on this GPU (fa3, flashinfer, triton, trtllm_mha, ...)")
    page_size: int = field("tokens per page: the flag's, else the backend's (1; 64 for TRT-LLM on SM100)")
    capacity_mib: int | None = field("nvidia-smi memory.total (ROCm: rocminfo's Pool 1; what the defaults read)")
    mem_fraction_static: float | None = field("the fraction used (null when a budget was given in bytes)")
    mem_fraction_static_default: bool = field("true: SGLang's default for this GPU (reserve below), not a flag")
    reserve: Reserve | None = field("the default's terms (null when the flag sets the fraction)")
    free_before_bytes: int | None = field("free device memory before the weights load (pre_model_load_memory)")
    free_before_basis: str = field("flag | table | estimate (ROCm: CUDA's gap below the capacity)")
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
    attn_tp_size: int = field("attention TP: TP / attention DP", default=1)
    attn_dp_size: int = field("attention DP (--attn-dp-size, --enable-dp-attention --dp-size)", default=1)
    chunked_prefill_size: int | None = field("as the scheduler runs it (DP attention divides it)", default=None)
    configurator: str = field("the pool configurator SGLang picks", default="")
    swa_cap: int | None = field("SWARequestCap: the SWA tokens --max-running-requests needs", default=None)
    mamba: MambaState | None = field("the Mamba / GDN state pool, carved out of the budget first", default=None)
    mm_reservation_mib: float = field("the multimodal reservation off the budget (SGLANG_VLM_CACHE_SIZE_MB ...)",
                                      default=0.0)
    dsv4: Dsv4Pools | None = field("DeepSeek-V4's compressed pools (DSV4PoolConfigurator)", default=None)
    aiter_factor: float | None = field("ROCm: 0.85, the aiter backend's factor on mem_fraction_static with a context "
                                       "over 8,192 (srt/arg_groups/attention_hook.py:243-269 @0.5.23), or null",
                                       default=None)


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
    return tuple(w.bytes_per_rank for w in per), spec.basis()


def _fraction(layout: Layout, behaviour: SglangBehaviour, mla: bool, backend: str) -> tuple[float, Reserve | None]:
    """The fraction the pools use: the flag's or the default, x the aiter factor on ROCm (memory.aiter_factor)."""
    sg = sglang_of(layout)
    factor = aiter_factor(layout, backend)
    if sg.mem_fraction_static is not None:
        return sg.mem_fraction_static * (factor or 1), None
    if sg.capacity_mib is None:
        raise UnsupportedError(f"{layout.source}: SGLang's default mem_fraction_static reads the GPU's capacity: give "
                               "--gpu NAME (or --gpu-capacity-mib) or --mem-fraction-static")
    reserve = default_fraction(layout, behaviour, mla, backend)
    mfs = reserve.mem_fraction_static
    return (mfs * factor if factor is not None else mfs), reserve


def rocm_refusal(layout: Layout, model: SglangModel) -> str | None:
    """Why kvcalc does not plan this SGLang deployment on an AMD GPU, or None. What was executed on ROCm (every
    release 0.5.14 - 0.5.23: tests/fixtures/sglang/rocm_vectors.json): the backend, page, fraction and prefill graph
    of MHA, MLA and hybrid SWA models, DP attention on 0.5.23; the parts with HIP branches of their own not run are
    refused by name."""
    sg = sglang_of(layout)
    if sg.device is None or not sg.device.rocm:
        return None
    what = [w for w, on in (("DeepSeek-V4 (srt/arg_groups/model_overrides/deepseek_v4.py's HIP backends)",
                             model.kind == "dsv4"),
                            ("a Mamba / GDN state pool (mamba_hook.py's HIP rules)", model.mamba_layers),
                            ("a speculative draft (speculative_hook.py's HIP rules)", speculative(layout))) if on]
    if not what:
        return None
    return (f"SGLang on {sg.device.name} (ROCm) with {' and '.join(what)} is not modelled (its HIP branches were not "
            "executed): plan it on a CUDA GPU, or vLLM on this one")


def _executed(layout: Layout, behaviour: SglangBehaviour, model: SglangModel) -> None:
    """Refuse, by name, a deployment whose pool code kvcalc did not execute for this release (STEPS
    deployment_pools: 0.5.23's kv_cache_configurator / pool_configurator)."""
    sg = sglang_of(layout)
    what = [w for w, on in (("a Mamba / GDN state pool", model.mamba_layers), ("DP attention", sg.attn_dp_size > 1),
                            ("a speculative draft", speculative(layout)),
                            ("the SWA request cap", model.kind == "hybrid_swa" and sg.disable_radix_cache))
            if on]
    if what and not behaviour.deployment_pools:
        raise UnsupportedError(f"{layout.source}: SGLang {behaviour.version}'s pools with {' and '.join(what)} are not "
                               "modelled (kvcalc executed 0.5.23's pool code, srt/mem_cache/kv_cache_configurator.py; "
                               "earlier releases' differs and was not run): plan it with --sglang-version 0.5.23")
    if (sg.attn_dp_size > 1 or speculative(layout)) and sg.weights_bytes is None:
        why = ("DP attention the attention weights split by TP / DP" if sg.attn_dp_size > 1 else
               "a speculative draft its weights load too")
        raise UnsupportedError(f"{layout.source}: give --weights-bytes: with {why}, which kvcalc's parameter "
                               "breakdown does not count (SGLang logs 'Load weight end. ... mem usage=X GB')")
    if speculative(layout) and model.kind == "hybrid_swa":
        raise UnsupportedError(f"{layout.source}: a speculative draft on a hybrid SWA pool is not modelled for SGLang")
    if speculative(layout) and model.mamba_layers and sg.speculative_num_draft_tokens is None:
        raise UnsupportedError(f"{layout.source}: the Mamba state pool with a draft reserves "
                               "--speculative-num-draft-tokens intermediate states: give it")


def build_stage(layout: Layout, behaviour: SglangBehaviour) -> SglangStage:
    """Layout -> SGLang's pools, budget and tokens on one engine."""
    sg = sglang_of(layout)
    attn = attention_parallel(layout)
    model = sglang_model(layout, behaviour.hybrid_swa(sg.architecture), behaviour.hybrid_swa_stage_layers, attn[0])
    mm = mm_reservation_gib(layout, behaviour)
    _executed(layout, behaviour, model)
    rocm = rocm_refusal(layout, model)
    if rocm:
        raise UnsupportedError(f"{layout.source}: {rocm}")
    if model.kind == "dsv4":
        from .dsv4 import refusal

        why = refusal(layout, behaviour)
        if why:
            raise UnsupportedError(f"{layout.source}: {why}")
    if sg.kv_budget_bytes is not None:  # --compare-engines: vLLM's --kv-cache-memory as the budget itself
        return _given_budget(layout, behaviour, model, sg.kv_budget_bytes, attn)
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
    if available <= 0:
        raise _weights_exceed(pre, weights, w_basis)
    world = layout.parallel.tensor_parallel_size * layout.parallel.pipeline_parallel_size
    rest, minimum = rest_gib(pre, available, mfs, world)
    gpu = SglangGpu(
        attention_backend=backend, page_size=page, capacity_mib=sg.capacity_mib, mem_fraction_static=mfs,
        mem_fraction_static_default=reserve is not None, reserve=reserve, free_before_bytes=pre,
        free_before_basis=pre_basis, free_before_source=pre_source, weights_bytes=weights, weights_basis=w_basis,
        available_bytes=available, budget_bytes=0, min_mem_fraction_static=minimum,
        cell_size_bytes=(), max_total_num_tokens=0, full_max_total_num_tokens=None, swa_max_total_num_tokens=None,
        max_total_tokens_flag=sg.max_total_tokens, max_running_requests=0, context_length=layout.cache.max_model_len,
        kv_bytes_per_rank=0, log_lines=(), attn_tp_size=attn[0], attn_dp_size=attn[1], mm_reservation_mib=mm * 1024,
        aiter_factor=aiter_factor(layout, backend))
    return _tokens(layout, behaviour, model, rest, page, gpu)


def _weights_exceed(pre: int, weights: tuple[int, ...], basis: str):
    """The real reason when the weights do not fit: they exceed the free memory before the load, so SGLang runs out
    of memory loading them, before it sizes the KV cache (its 'Raise --mem-fraction-static above 1.0xx' would name a
    fraction over 1, which no flag can give)."""

    worst = max(weights)
    stage = f" (PP stage {weights.index(worst)})" if len(weights) > 1 else ""
    e = StartupRefusal(
        f"the weights ({worst / GIB:.2f} GiB a GPU{stage}, {basis}) exceed the free GPU memory before the load "
        f"({pre / GIB:.2f} GiB): SGLang runs out of memory loading them, before the KV cache is sized, whatever "
        "--mem-fraction-static says; spread them over more GPUs (--tp-size, --pp-size), load fewer bytes a weight "
        "(a quantized checkpoint) or use a GPU with more memory")
    e.memory_short, e.weights_bytes, e.requested_bytes = True, worst, pre  # more GPUs may load them
    e.requested_what = "free before the weights load"
    return e


def _given_budget(layout: Layout, behaviour: SglangBehaviour, model: SglangModel, kv: int,
                  attn: tuple[int, int]) -> SglangStage:
    """A budget given in bytes (vLLM's --kv-cache-memory for --compare-engines): the pool SGLang builds from it."""
    sg = sglang_of(layout)
    backend, page = attention_backend(layout, sg.device.arch if sg.device else "sm90", model.kind == "mla")
    return _tokens(layout, behaviour, model, kv / GIB, page, SglangGpu(
        attention_backend=backend, page_size=page, capacity_mib=sg.capacity_mib, mem_fraction_static=None,
        mem_fraction_static_default=False, reserve=None, free_before_bytes=None, free_before_basis="flag",
        free_before_source="a KV budget in bytes (vLLM's --kv-cache-memory, --compare-engines)",
        weights_bytes=(0,), weights_basis="flag", available_bytes=None, budget_bytes=kv,
        min_mem_fraction_static=None, cell_size_bytes=(), max_total_num_tokens=0, full_max_total_num_tokens=None,
        swa_max_total_num_tokens=None, max_total_tokens_flag=sg.max_total_tokens, max_running_requests=0,
        context_length=layout.cache.max_model_len, kv_bytes_per_rank=0, log_lines=(), attn_tp_size=attn[0],
        attn_dp_size=attn[1]))


def _chunked(layout: Layout, behaviour: SglangBehaviour, gpu: SglangGpu) -> int:
    """chunked_prefill_size as the scheduler runs it: the reserve's (or the tier's), // attention DP
    (parallel_hook.py:326-336 @0.5.23)."""
    sg = sglang_of(layout)
    chunked = gpu.reserve.chunked_prefill_size if gpu.reserve is not None else (
        gpu_defaults(sg, behaviour, layout.parallel.tensor_parallel_size)[0] if sg.capacity_mib is not None
        else sg.chunked_prefill_size if sg.chunked_prefill_size is not None else 8192)
    return chunked // gpu.attn_dp_size if gpu.attn_dp_size > 1 else chunked


def _tokens(layout: Layout, behaviour: SglangBehaviour, model: SglangModel, rest: float, page: int,
            gpu: SglangGpu) -> SglangStage:
    from ...vocab.records import replace

    sg = sglang_of(layout)
    chunked = _chunked(layout, behaviour, gpu)
    try:
        pools = size_pools(layout, model, rest, gpu.mem_fraction_static or 0.0, gpu.min_mem_fraction_static or 0.0,
                           page, chunked, (gpu.attn_tp_size, gpu.attn_dp_size), gpu.mm_reservation_mib / 1024)
    except StartupRefusal as e:  # a memory refusal of a predicted budget names the weights (tools/loading.py)
        if e.memory_short and e.weights_bytes is None and gpu.free_before_bytes is not None:
            e.weights_bytes, e.requested_bytes = max(gpu.weights_bytes), gpu.free_before_bytes
            e.requested_what = "free before the weights load"
        raise
    full, swa = pools.full_tokens, pools.swa_tokens
    if pools.dsv4 is not None:
        return _dsv4_stage(layout, behaviour, model, gpu, pools, chunked)
    ratio = sg.swa_full_tokens_ratio
    hybrid = model.kind == "hybrid_swa"
    cells = tuple(CellSize(pp_rank=s.pp_rank, full=s.full_bytes, swa=s.swa_bytes, draft=d,
                           total=s.full_bytes + ratio * s.swa_bytes if hybrid else s.full_bytes + d)
                  for s, d in zip(model.stages, pools.draft_bytes))
    bind = max(model.stages, key=lambda s: s.full_bytes + s.swa_bytes + pools.draft_bytes[s.pp_rank])
    allocated = (full + page) * (bind.full_bytes + pools.draft_bytes[bind.pp_rank]) + (
        (swa + page) * bind.swa_bytes if hybrid else 0) + (pools.mamba.bytes if pools.mamba else 0)
    gpu = replace(gpu, budget_bytes=pools.budget_bytes, cell_size_bytes=cells, max_total_num_tokens=full,
                  full_max_total_num_tokens=full if hybrid else None, swa_max_total_num_tokens=swa if hybrid else None,
                  max_running_requests=pools.max_running_requests, kv_bytes_per_rank=allocated,
                  chunked_prefill_size=chunked, configurator=pools.configurator, swa_cap=pools.swa_cap,
                  mamba=pools.mamba,
                  log_lines=_log_lines(model, bind, full, swa, page, pools.max_running_requests, layout))
    return SglangStage(behaviour=behaviour, model=model, gpu=gpu, notes=model.notes)


def _dsv4_stage(layout: Layout, behaviour: SglangBehaviour, model: SglangModel, gpu: SglangGpu, pools: Pools,
                chunked: int) -> SglangStage:
    """DeepSeek-V4's pools: the SWA slot and the compressed pools' bytes a full token (the coefficient is total)."""
    from ...vocab.records import replace
    from .dsv4 import log_line

    d, full, swa = known(pools.dsv4, "DeepSeek-V4's pools"), pools.full_tokens, pools.swa_tokens
    compressed = d.bytes_per_full_token - d.swa_ratio * d.bytes_per_swa_token
    cells = (CellSize(pp_rank=0, full=int(compressed), swa=int(d.bytes_per_swa_token), total=d.bytes_per_full_token),)
    reqs = pools.max_running_requests
    gpu = replace(gpu, budget_bytes=pools.budget_bytes, cell_size_bytes=cells, max_total_num_tokens=full,
                  full_max_total_num_tokens=full, swa_max_total_num_tokens=swa, max_running_requests=reqs,
                  kv_bytes_per_rank=int(full * d.bytes_per_full_token) + d.fixed_bytes, chunked_prefill_size=chunked,
                  configurator=pools.configurator, dsv4=d,
                  log_lines=(log_line(full, swa, d), f"max_total_num_tokens={full}, max_running_requests={reqs}, "
                                                      f"context_len={layout.cache.max_model_len}"))
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
