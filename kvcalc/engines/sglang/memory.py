"""SGLang's GPU budget and token pool, as each release computes them (cited @0.5.23; vocab/releases/sglang.STEPS
holds what differs):

1. `mem_fraction_static` default (srt/arg_groups/memory_hook.py:47-343 handle_gpu_memory_settings): the GPU tier of
   nvidia-smi's capacity picks chunked_prefill_size and the decode graphs' max batch (:89-170); then
   `reserved = 512 + max(chunked, 2048) x 1.5 + tp x pp / 8 x 1024 + graphs` MiB (:309-313), graphs = decode max_bs
   x 2 + the prefill graphs (len(capture sizes) x 8, or 1.5 GiB with an MLA backend, :357-399), at least 10 GiB on
   GPUs over 60 GiB (:314-315); `round((capacity - reserved) / capacity, 3)` (:324-328).
2. The budget after the weights load (srt/mem_cache/kv_cache_configurator.py:2990-3060 _profile_available_bytes):
   `rest = available - pre_model_load_memory x (1 - mem_fraction_static)` in GiB floats, both MIN over the world
   group; `rest <= 0` is SGLang's start-up refusal naming `1 - available / pre`, the minimum viable fraction;
   `int(rest x 2^30)` bytes.
3. Tokens (srt/model_executor/pool_configurator.py:637-653, 907-922): `bytes // cell`, floored to the page size
   (hybrid SWA: `int(bytes // (full + ratio x swa))`, then the SWA pool `int(full x ratio)` floored), capped by
   --max-total-tokens and MIN over the PP stages (kv_cache_configurator.py:3090-3117); `<= 0` is 'Not enough memory.
   Please try to increase --mem-fraction-static.' (pool_configurator.py:94-99).
4. max_running_requests (kv_cache_configurator.py:3119-3171): min(clamp(int(tokens / context x 512), 2048, 4096),
   tokens // 2), or the flag's (per DP worker) at most tokens // 2.

No profiling pass enters the budget: activations and graphs live in the (1 - mem_fraction_static) slack.
"""

from __future__ import annotations

import math

from ...vocab.errors import StartupRefusal, UnsupportedError, known
from ...vocab.layout import Layout
from ...vocab.records import field, record
from ...vocab.releases.sglang import (FREE_GAP_MIB_TP, FREE_GAP_MIB_TP1, FREE_GAP_SOURCE, SglangBehaviour,
                                      SglangLayout, sglang_of)
from .deploy import speculative, vlm_factor
from .graphs import DISABLED, GraphPhase, dp_clamp, resolve_graphs
from .model import SglangModel

MIB, GIB = 1 << 20, 1 << 30
# (capacity below MiB, chunked_prefill_size, decode max_bs at TP < 4, at TP >= 4): memory_hook.py:89-170 @0.5.23.
# The 20 - 35 GiB tier differs per release (vocab/releases/sglang.STEPS small_gpu_tier).
TIERS = ((20 * 1024, 2048, 8, 8), (35 * 1024, None, None, None), (60 * 1024, 4096, 32, 160),
         (90 * 1024, 8192, 256, 512), (160 * 1024, 8192, 256, 512), (None, 16384, 512, 512))
DEEPSEEK_MLA = ("DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM")
# Models with attention sinks, which FlashInfer does not run (model_override_base.py:330-334 @0.5.23).
ATTENTION_SINKS = ("GptOssForCausalLM",)


@record
class Reserve:
    """mem_fraction_static's default and the terms of its reserve (MiB)."""

    chunked_prefill_size: int = field("tokens per prefill chunk (the flag's, else the GPU tier's; <= 0: none)")
    activation_tokens: int = field("max(chunked_prefill_size, 2048), or max(--max-prefill-tokens, 2048) without "
                                   "chunked prefill: x 1.5 MiB")
    cuda_graph_max_bs: int = field("the decode graphs' max batch (the flag's, the list's max, else the tier's)")
    decode_graphs: GraphPhase = field("the decode CUDA graphs: max_bs x 2 MiB unless disabled")
    prefill_graphs: GraphPhase = field("the prefill CUDA graphs: capture sizes x 8 MiB (MLA: a flat 1.5 GiB) unless "
                                       "disabled")
    dp_attention_mib: float = field("DP attention's padding: decode max_bs x attn_dp x 3, x 1.5 more above 300")
    reserved_mib: float = field("512 + activations + parallel slack + graphs, at least 10 GiB above 60 GiB")
    vlm_factor: float | None = field("a multimodal model's adjustment (0.95 x the vision tower's), or null")
    mem_fraction_static: float = field("round((capacity - reserved) / capacity, 3), x the VLM factor")


def gpu_defaults(sg: SglangLayout, behaviour: SglangBehaviour, tp: int) -> tuple[int, int]:
    """(chunked_prefill_size, decode max_bs) for the GPU tier, the flags winning (memory_hook.py:89-188)."""
    cap = known(sg.capacity_mib, "the GPU's capacity (the defaults read it)")
    for top, chunked, small, large in TIERS:
        if top is None or cap < top:
            if chunked is None:
                chunked, small, large = behaviour.small_gpu_tier
            break
    max_bs = sg.cuda_graph_max_bs
    if max_bs is None:
        max_bs = known(small if tp < 4 else large, "a tier's max batch")  # the last tier catches every GPU
        if behaviour.decode_max_bs_capped_by_requests and sg.max_running_requests is not None \
                and max_bs > sg.max_running_requests:
            max_bs = sg.max_running_requests  # memory_hook.py:182-188: the default never exceeds the requests
    return (sg.chunked_prefill_size if sg.chunked_prefill_size is not None else known(chunked)), max_bs


def default_fraction(layout: Layout, behaviour: SglangBehaviour, mla: bool, backend: str = "fa3") -> Reserve:
    """SGLang's mem_fraction_static when none is given (memory_hook.py:281-343, reserve_for_graph_mb :357-399
    @0.5.23; 0.5.14 srt/server_args.py:3270-3310 the same terms): `backend` is the attention backend."""
    sg, par = sglang_of(layout), layout.parallel
    tp, pp = par.tensor_parallel_size, par.pipeline_parallel_size
    chunked, max_bs = gpu_defaults(sg, behaviour, tp)
    decode, prefill = resolve_graphs(layout, behaviour, mla, backend, chunked, max_bs, speculative(layout))
    # memory_hook.py:304-307: the activation tokens, max_prefill_tokens when chunked prefill is off
    activation = max(chunked, 2048) if chunked > 0 else max(sg.max_prefill_tokens, 2048)
    reserved = 512 + activation * 1.5 + tp * pp / 8 * 1024
    if decode.backend != DISABLED or behaviour.decode_reserve_without_graphs:
        reserved += decode.max_bs * 2  # :364-368
    dp_mib = 0.0
    if sg.attn_dp_size > 1:  # :370-378
        dp_mib = decode.max_bs * sg.attn_dp_size * 3 + (decode.max_bs * sg.attn_dp_size * 1.5
                                                        if decode.max_bs > 300 else 0)
        reserved += dp_mib
    if prefill.backend != DISABLED:  # :380-389
        reserved += 1.5 * 1024 if mla else prefill.capture_sizes * 8
    cap = known(sg.capacity_mib, "the GPU's capacity (the default reads it)")
    if cap > 60 * 1024:
        reserved = max(reserved, 10 * 1024)  # :314-315
    mfs = round((cap - reserved) / cap, 3)
    factor = vlm_factor(layout, behaviour)
    if factor is not None:
        mfs = mfs * factor  # :331-337: not rounded again
    if sg.attn_dp_size > 1:
        prefill = dp_clamp(layout, prefill, chunked // sg.attn_dp_size)
    return Reserve(chunked_prefill_size=chunked, activation_tokens=activation, cuda_graph_max_bs=decode.max_bs,
                   decode_graphs=decode, prefill_graphs=prefill, dp_attention_mib=dp_mib, reserved_mib=reserved,
                   vlm_factor=factor, mem_fraction_static=mfs)


def attention_backend(layout: Layout, arch: str, mla: bool) -> tuple[str, int]:
    """(SGLang's default attention backend, its page size) on this GPU (srt/arg_groups/model_override_base.py:277-
    350 get_default_attn_backend; srt/arg_groups/overrides.py:1143-1200 page constraints, :1343-1363 default 1;
    srt/arg_groups/model_overrides/deepseek_v2.py:179-187 trtllm_mla on SM100)."""
    sg = sglang_of(layout)
    if layout.model.is_dsv4:  # model_overrides/deepseek_v4.py:24-62 @0.5.23: backend dsv4, page 256 on CUDA
        return "dsv4", 256
    if arch.startswith("gfx"):
        return _rocm_backend(layout, mla), sg.page_size or 1
    sinks = sg.architecture in ATTENTION_SINKS
    # :305-320 is_no_spec_infer_or_topk_one: a draft with top-k > 1 keeps neither fa3 nor trtllm_mha for MHA
    multi = sg.speculative_algorithm is not None and (sg.speculative_eagle_topk or 1) > 1
    if not mla and arch == "sm100" and sg.speculative_algorithm is not None and sg.speculative_eagle_topk is None:
        raise UnsupportedError(f"{layout.source}: SGLang's default attention backend on SM100 with a draft and no "
                               "--speculative-eagle-topk depends on the algorithm's own top-k (model_override_base.py:"
                               "312-320): give --speculative-eagle-topk")
    if arch == "sm90":
        backend = "fa3" if mla or not multi else ("triton" if sinks else "flashinfer")
    elif arch == "sm100":
        backend = ("trtllm_mla" if sg.architecture in DEEPSEEK_MLA else "flashinfer") if mla else (
            "trtllm_mha" if not multi else ("triton" if sinks else "flashinfer"))
    else:
        backend = "triton" if mla or sinks else "flashinfer"
    page = sg.page_size or 1
    if backend == "trtllm_mha" and page not in (16, 32, 64, 128) or backend == "trtllm_mla" and page not in (32, 64):
        page = 64
    return backend, page


def _rocm_backend(layout: Layout, mla: bool) -> str:
    """SGLang's default attention backend on ROCm (model_override_base.py:325-326, :341-347 @0.5.23; 0.5.22
    :316-317, :331-337): aiter for MHA (and for gpt-oss, model_overrides/gpt_oss.py:38-39); for MLA aiter only with 16
    or 128 KV heads a TP rank (the config's KV heads // TP: 'current aiter only support head number 16 or 128'),
    else triton. The page stays 1 (overrides.py:1343-1366 _page_size_default: 64 only with
    SGLANG_AITER_KV_CACHE_LAYOUT=vectorized_5d, which kvcalc does not read: give --page-size 64 then)."""
    if not mla:
        return "aiter"
    sg = sglang_of(layout)
    heads = sg.config_kv_heads
    if heads is None:
        raise UnsupportedError(f"{layout.source}: SGLang's MLA backend on ROCm follows the config's KV heads (aiter "
                               "with 16 or 128 a TP rank, else triton): give the model's config.json")
    return "aiter" if max(1, heads // layout.parallel.tensor_parallel_size) in (16, 128) else "triton"


AITER_FACTOR = 0.85  # attention_hook.py:243-269 @0.5.23 (0.5.22 :243-268)


def aiter_factor(layout: Layout, backend: str) -> float | None:
    """mem_fraction_static x 0.85 when the aiter backend serves a context over 8,192 tokens ('to reserve non-static
    workspace'), the flag's fraction too (unless SGLANG_AITER_HONOR_EXPLICIT_MEM_FRACTION is set, not read): after
    the default is set (srt/arg_groups/pipeline.py), not rounded again. None: no factor."""
    context = layout.cache.max_model_len
    return AITER_FACTOR if backend == "aiter" and context is not None and context > 8192 else None


def free_before(layout: Layout) -> tuple[int, str, str]:
    """(bytes free before the weights load, basis, source): --gpu-free-memory, else nvidia-smi's capacity less the
    gap real logs show."""
    sg = sglang_of(layout)
    if sg.gpu_free_memory is not None:
        return sg.gpu_free_memory, "flag", "--gpu-free-memory (pre_model_load_memory as SGLang measures it)"
    gap = FREE_GAP_MIB_TP1 if layout.parallel.tensor_parallel_size == 1 else FREE_GAP_MIB_TP
    cap = known(sg.capacity_mib, "the GPU's capacity (without --gpu-free-memory)")
    if sg.device is not None and sg.device.rocm:
        return (cap - gap) * MIB, "estimate", (f"{cap:,} MiB - {gap:,} MiB, an estimate on ROCm (CUDA's gap; no ROCm "
                                               f"start-up log read: give --gpu-free-memory): {FREE_GAP_SOURCE}")
    return (cap - gap) * MIB, "table", f"{cap:,} MiB - {gap:,} MiB: {FREE_GAP_SOURCE}"


def _world_float(x: int, world: int) -> float:
    """utils/common.py:569-574 @0.5.23 get_available_gpu_memory: with more than one rank the free bytes go through a
    float32 all_reduce (MIN over the world) before they are turned into GiB."""
    if world <= 1:
        return float(x)
    import struct

    return struct.unpack("f", struct.pack("f", float(x)))[0]


def rest_gib(pre: int, available: int, mfs: float, world: int = 1) -> tuple[float, float]:
    """(the budget in GiB before the multimodal reservation and the Mamba pool, the minimum viable fraction) as
    kv_cache_configurator.py:2990-3041 _profile_available_bytes computes them: `available - pre x (1 - mfs)`, GiB
    floats, each measured through the world's float32 MIN (distributed/bootstrap.py:207-212)."""
    pre_gib, avail_gib = _world_float(pre, world) / GIB, _world_float(available, world) / GIB
    return avail_gib - pre_gib * (1 - mfs), 1 - avail_gib / pre_gib


def none_left(mfs: float, minimum: float) -> StartupRefusal:
    """SGLang's refusal when nothing is left for the KV cache (kv_cache_configurator.py:3043-3058 @0.5.23)."""
    suggested = math.ceil(minimum * 1000) / 1000
    e = StartupRefusal(
        f"Loaded weights leave no GPU memory for the KV cache under "
        f"--mem-fraction-static={mfs}. Raise --mem-fraction-static above {suggested:.3f} (minimum viable = 1 - "
        f"available/pre = {minimum:.4f}). If using speculative decoding, draft weights are now counted.")
    e.memory_short = True  # more GPUs may start it (tools/loading.py); the caller names the weights
    return e


def budget(pre: int, available: int, mfs: float, world: int = 1) -> tuple[int, float]:
    """(the KV budget in bytes, the minimum viable fraction): rest_gib, refused when nothing is left."""
    rest, minimum = rest_gib(pre, available, mfs, world)
    if rest <= 0:
        e = none_left(mfs, minimum)
        e.weights_bytes, e.requested_bytes, e.requested_what = pre - available, pre, "free before the weights load"
        raise e
    return int(rest * GIB), minimum


def stage_tokens(model: SglangModel, rank: int, budget_bytes: int, page: int, ratio: float,
                 draft: int = 0) -> tuple[int, int]:
    """(full-pool tokens, SWA-pool tokens) one stage's budget holds, floored to the page (`draft`: the draft's bytes
    a token, pool_configurator.py:259-316 @0.5.23)."""
    s = model.stages[rank]
    if model.kind == "hybrid_swa":
        if s.full_layers == 0:  # pool_configurator.py:862-877: all-SWA stage, no ratio
            t = int(budget_bytes // s.swa_bytes) // page * page
            return t, t
        full = int(budget_bytes // (s.full_bytes + ratio * s.swa_bytes)) // page * page
        return full, int(full * ratio) // page * page
    if not s.full_bytes:
        if model.mamba_layers and any(x.full_bytes for x in model.stages):
            return NO_KV_STAGE, 0  # pool_configurator.py:238-246: KV on another stage, the MIN ignores this one
        raise UnsupportedError("a PP stage without KV layers is not modelled for SGLang")
    return budget_bytes // (s.full_bytes + draft) // page * page, 0


NO_KV_STAGE = (1 << 63) - 1  # torch.iinfo(torch.int64).max


def requests(tokens: int, context: int, flag: int | None, attn_dp: int = 1) -> int:
    """max_running_requests per DP worker (kv_cache_configurator.py:3119-3132 @0.5.23): the flag's // attn_dp, else
    min(clamp(int(tokens / context x 512), 2048, 4096), tokens // 2)."""
    if flag is not None:
        return min(max(1, flag // attn_dp), tokens // 2)
    estimated = max(min(int(tokens / context * 512), 4096), 2048)
    return min(estimated, tokens // 2)


__all__ = ["aiter_factor", "attention_backend", "budget", "default_fraction", "free_before", "none_left", "requests",
           "rest_gib", "stage_tokens"]
