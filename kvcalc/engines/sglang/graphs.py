"""SGLang's CUDA-graph configuration as each release resolves it, the part mem_fraction_static's reserve reads
(cited @0.5.23; what differs per release is vocab/releases/sglang.STEPS):

1. The flags (srt/arg_groups/cuda_graph_hook.py:32-100 parse_cuda_graph_config; 0.5.14 srt/server_args.py
   _parse_cuda_graph_config, the same precedence): defaults (decode full; prefill tc_piecewise in 0.5.14, breakable
   after), then --disable-cuda-graph (both off), --disable-prefill-cuda-graph / --disable-decode-cuda-graph, then
   --cuda-graph-backend-{decode,prefill}, --cuda-graph-max-bs-{decode,prefill}, --cuda-graph-bs-{decode,prefill}.
   A value set by a flag is "locked".
2. The auto-disable cascade, only while the prefill backend is not locked (cuda_graph_hook.py:118-172
   apply_cuda_graph_compatibility): the default prefill graph is turned off for PP (0.5.14, 0.5.19+), an MLA backend
   (0.5.15 - 0.5.17), HiCache (0.5.14). (DeepSeek-V3 on trtllm_mla loses its prefill graph too, :279-311, but that
   hook runs after mem_fraction_static is set, srt/arg_groups/pipeline.py:218 vs :245: the reserve keeps the graph's
   1.5 GiB, executed: B200 TP 8 0.844.)
3. The sizes (srt/arg_groups/memory_hook.py:89-268 handle_gpu_memory_settings): the GPU tier's decode max_bs (lowered
   to --max-running-requests from 0.5.22), the decode capture list (cuda_graph_hook.py:525-555; an explicit list sets
   max_bs = its max), the prefill max_bs (chunked_prefill_size; an MLA backend 2,048, 0.5.23 min(8,192, chunked);
   an opt-in breakable graph under PP at most 8,192 from 0.5.19; at most --max-total-tokens; before 0.5.17 at most
   --context-length when given) and its capture list (cuda_graph_hook.py:500-522).
"""

from __future__ import annotations

from ...vocab.layout import Layout
from ...vocab.records import field, record
from ...vocab.releases.sglang import SglangBehaviour, sglang_of
from ...vocab.releases.sglang_models import PREFILL_GRAPH_OFF_ARCHS, listed
from .deploy import multimodal_prefill_off

DISABLED = "disabled"


@record
class GraphPhase:
    """One phase's CUDA graphs as SGLang resolves them."""

    backend: str = field("full | breakable | tc_piecewise | disabled")
    backend_from: str = field("why: the release's default, a flag, or the rule that turned it off")
    max_bs: int = field("the largest capture (decode: requests; prefill: tokens)")
    capture_sizes: int = field("how many graphs are captured (len of the capture list)")


def prefill_capture_sizes(max_bs: int) -> list[int]:
    """srt/arg_groups/cuda_graph_hook.py:500-522 @0.5.23 generate_prefill_cuda_graph_batch_sizes (0.5.14 the same,
    srt/server_args.py _generate_prefill_cuda_graph_batch_sizes): none when max_bs < 4 (chunked prefill -1)."""
    sizes = (list(range(4, 33, 4)) + list(range(48, 257, 16)) + list(range(288, 513, 32)) +
             list(range(576, 1025, 64)) + list(range(1280, 4097, 256)) + list(range(4608, max_bs + 1, 512)))
    return [s for s in sizes if s <= max_bs]


def decode_capture_sizes(max_bs: int, speculative: bool) -> list[int]:
    """srt/arg_groups/cuda_graph_hook.py:525-555 @0.5.23 generate_decode_cuda_graph_batch_sizes (0.5.14
    srt/server_args.py the same): the normal list, or the speculative one (less padding below 64); max_bs added."""
    if not speculative:
        sizes = ([1, 2, 4, 8, 12] + list(range(16, 257, 8)) + list(range(272, 512, 16)) +
                 list(range(512, max_bs + 1, 32)))
    else:
        sizes = (list(range(1, 9)) + list(range(10, 33, 2)) + list(range(40, 65, 4)) + list(range(72, 257, 8)) +
                 list(range(272, max_bs + 1, 16)))
    sizes = [s for s in sizes if s <= max_bs]
    return sizes if max_bs in sizes else sizes + [max_bs]


def _backends(layout: Layout, behaviour: SglangBehaviour, mla: bool, attn: str) -> tuple[tuple[str, str], ...]:
    """((decode backend, from), (prefill backend, from)) after the flags and the auto-disable cascade."""
    sg = sglang_of(layout)
    default = behaviour.default_prefill_backend
    if sg.device is not None and sg.device.rocm:
        default = behaviour.rocm_prefill_backend  # on an AMD GPU (STEPS rocm_prefill_backend)
    decode, prefill = ("full", "default"), (default, f"SGLang {behaviour.version}'s default")
    if sg.disable_cuda_graph:
        decode = prefill = (DISABLED, "--disable-cuda-graph")
    if sg.disable_prefill_cuda_graph:
        prefill = (DISABLED, "--disable-prefill-cuda-graph")
    if sg.disable_decode_cuda_graph:
        decode = (DISABLED, "--disable-decode-cuda-graph")
    if sg.cuda_graph_backend_decode is not None:
        decode = (sg.cuda_graph_backend_decode, "--cuda-graph-backend-decode")
    if sg.cuda_graph_backend_prefill is not None:
        prefill = (sg.cuda_graph_backend_prefill, "--cuda-graph-backend-prefill")
    locked = prefill[1] != f"SGLang {behaviour.version}'s default"
    if not locked:
        off = _prefill_off(layout, behaviour, mla, attn)
        if off:
            prefill = (DISABLED, off)
    return decode, prefill


def _prefill_off(layout: Layout, behaviour: SglangBehaviour, mla: bool, attn: str) -> str | None:
    """The rule of SGLang's cascade that turns the default prefill graph off, or None."""
    b, sg = behaviour, sglang_of(layout)
    if layout.parallel.pipeline_parallel_size > 1 and b.pp_prefill_graph_off:
        return f"PP > 1 ({b.evidence('pp_prefill_graph')})"
    if mla and b.mla_prefill_graph_off:
        return f"an MLA backend ({b.evidence('mla_prefill_graph')})"
    if sg.hicache.enabled and b.hicache_prefill_graph_off:
        return f"HiCache ({b.evidence('hicache_prefill_graph')})"
    if sg.attn_dp_size > 1 and b.dp_attention_prefill_graph_off:
        return f"DP attention ({b.evidence('dp_attention_prefill_graph')})"
    if multimodal_prefill_off(layout, b):
        return ("a multimodal model not allow-listed (srt/configs/model_config.py "
                "multimodal_breakable_cuda_graph_supported_model_archs)")
    if listed(PREFILL_GRAPH_OFF_ARCHS, sg.architecture, b.release):
        return f"{sg.architecture} (srt/configs/model_config.py, the auto-disable rules of SGLang {b.version})"
    return None


def _prefill_max(layout: Layout, behaviour: SglangBehaviour, chunked: int, mla: bool, backend: str) -> int:
    """memory_hook.py:233-268 @0.5.23: the prefill graphs' largest capture when --cuda-graph-max-bs-prefill is not
    given; before 0.5.17 --context-length caps any."""
    sg = sglang_of(layout)
    top = sg.cuda_graph_max_bs_prefill
    if top is None:
        top = chunked if not mla else (2048 if behaviour.mla_prefill_max_bs == 2048 else min(8192, chunked))
        if layout.parallel.pipeline_parallel_size > 1 and behaviour.pp_prefill_graph_cap is not None \
                and backend == "breakable" and sg.cuda_graph_bs_prefill is None:
            top = min(top, behaviour.pp_prefill_graph_cap)
        if sg.max_total_tokens is not None:
            top = min(top, sg.max_total_tokens)
    if behaviour.prefill_graphs_clamped_to_context and sg.context_length_given:
        top = min(top, layout.cache.max_model_len)
    return top


def dp_clamp(layout: Layout, prefill: GraphPhase, chunked: int) -> GraphPhase:
    """parallel_hook.py:337-358 @0.5.23: after the fraction, DP attention divides chunked_prefill_size and re-clamps
    the prefill graphs to it (unless disabled or given)."""
    sg = sglang_of(layout)
    if prefill.backend == DISABLED or prefill.max_bs <= chunked or sg.cuda_graph_max_bs_prefill is not None:
        return prefill
    n = prefill.capture_sizes if sg.cuda_graph_bs_prefill is not None else len(prefill_capture_sizes(chunked))
    return GraphPhase(backend=prefill.backend, backend_from=prefill.backend_from, max_bs=chunked, capture_sizes=n)


def resolve_graphs(layout: Layout, behaviour: SglangBehaviour, mla: bool, backend: str, chunked: int,
                   decode_max_bs: int, speculative: bool = False) -> tuple[GraphPhase, GraphPhase]:
    """(decode, prefill) CUDA graphs for this layout (`backend`: the attention backend; `decode_max_bs`: the GPU
    tier's or the flag's)."""
    sg = sglang_of(layout)
    (dec, dec_from), (pre, pre_from) = _backends(layout, behaviour, mla, backend)
    if sg.cuda_graph_bs_decode is not None:
        decode_max_bs, n_decode = max(sg.cuda_graph_bs_decode), len(sg.cuda_graph_bs_decode)
    else:
        n_decode = len(decode_capture_sizes(decode_max_bs, speculative))
    top = _prefill_max(layout, behaviour, chunked, mla, pre)
    n_prefill = len(sg.cuda_graph_bs_prefill) if sg.cuda_graph_bs_prefill is not None else len(
        prefill_capture_sizes(top))
    return (GraphPhase(backend=dec, backend_from=dec_from, max_bs=decode_max_bs, capture_sizes=n_decode),
            GraphPhase(backend=pre, backend_from=pre_from, max_bs=top, capture_sizes=n_prefill))


__all__ = ["GraphPhase", "decode_capture_sizes", "prefill_capture_sizes", "resolve_graphs"]
