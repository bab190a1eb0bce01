"""What SGLang resolves of a deployment beside the memory flags (cited @0.5.23; what differs per release is in
vocab/releases/sglang.STEPS and vocab/releases/sglang_models.py):

- DP attention (srt/arg_groups/parallel_hook.py:39-61, :314-370): attention TP = TP / attn_dp
  (srt/runtime_context.py:73-76); mem_fraction_static's reserve adds `decode max_bs x attn_dp x 3`, x 1.5 more when
  max_bs > 300 (memory_hook.py:370-378), before chunked_prefill_size is divided by attn_dp (:326-336) and the
  prefill graphs re-clamped to it (:337-358); --max-running-requests counts every worker (per worker `// attn_dp`,
  kv_cache_configurator.py:3126-3129).
- Speculative decoding, SGLang's EAGLE family (EAGLE, EAGLE3, NEXTN / MTP): --max-running-requests defaults to 48
  (arg_groups/speculative_hook.py:1086-1094, after the fraction is set); the decode graphs use the speculative capture
  list (cuda_graph_hook.py:540-547); the draft's KV joins every token's cell, `int(cell x draft layers / layers)`
  (model_executor/pool_configurator.py:259-316), the draft's layers being its config's num_nextn_predict_layers, else
  num_hidden_layers, or without a draft path the target's num_nextn_predict_layers (none: no draft cell;
  model_runner_components/spec_aux_hidden_state.py:148-176).
- Multimodal (configs/model_config.py:690-717, :805-828): is_multimodal = the architecture is listed (or the config
  nests a text_config), multimodal enabled (off by default for Gemma-3, Llama-4, Step3-VL, Inkling) and not
  --language-model-only; the VLM adjustment when not --language-only (memory_hook.py:283-288, :417-462):
  `mfs x 0.95 x clamp(1 - 0.1 x (L x H^2 / (24 x 1024^2) - 1), 0.8, 1.05)`; the budget loses SGLANG_VLM_CACHE_SIZE_MB
  (+ SGLANG_MM_FEATURE_CACHE_MB with cuda_ipc / cuda_vmm transports), kv_cache_configurator.py:202-219, :3034-3038.
"""

from __future__ import annotations

from ...vocab.errors import UnsupportedError
from ...vocab.layout import Layout
from ...vocab.releases.sglang import SglangBehaviour, sglang_of
from ...vocab.releases.sglang_models import MULTIMODAL_ARCHS, PREFILL_GRAPH_MULTIMODAL, TEXT_ONLY_BY_DEFAULT, listed

SPEC_DEFAULT_REQUESTS = 48  # arg_groups/speculative_hook.py:1086-1090 @0.5.23


def attention_parallel(layout: Layout) -> tuple[int, int]:
    """(attention TP, attention DP) of one engine."""
    sg, tp = sglang_of(layout), layout.parallel.tensor_parallel_size
    dp = sg.attn_dp_size
    if tp % dp:
        raise UnsupportedError(f"{layout.source}: SGLang asserts tp_size % attn_dp_size == 0 (parallel_hook.py:325): "
                               f"TP {tp}, attention DP {dp}")
    return tp // dp, dp


def is_multimodal(layout: Layout, behaviour: SglangBehaviour) -> bool:
    """ModelConfig.is_multimodal (configs/model_config.py:690-717, :805-828 @0.5.23)."""
    sg = sglang_of(layout)
    enabled = sg.enable_multimodal
    if enabled is None:
        enabled = not listed(TEXT_ONLY_BY_DEFAULT, sg.architecture, behaviour.release)
    listed_mm = listed(MULTIMODAL_ARCHS, sg.architecture, behaviour.release) or sg.has_text_config
    return bool(enabled) and not sg.language_model_only and listed_mm


def multimodal_prefill_off(layout: Layout, behaviour: SglangBehaviour) -> bool:
    """A multimodal model loses its default prefill graph unless its architecture is allow-listed."""
    return is_multimodal(layout, behaviour) and not listed(PREFILL_GRAPH_MULTIMODAL, sglang_of(layout).architecture,
                                                           behaviour.release)


def vlm_factor(layout: Layout, behaviour: SglangBehaviour) -> float | None:
    """adjust_mem_fraction_for_vlm's factor (memory_hook.py:417-462 @0.5.23; 0.5.14 srt/server_args.py:6990-7030 the
    same), or None when SGLang does not adjust (not multimodal, --language-only, no vision config)."""
    sg = sglang_of(layout)
    if not is_multimodal(layout, behaviour) or sg.language_only:
        return None
    if sg.vision is None:
        if not sg.vision_source:
            return None  # no vision_config: SGLang leaves the fraction
        raise UnsupportedError(f"{layout.source}: SGLang lowers mem_fraction_static by the vision tower's size and "
                               f"{sg.vision_source}: give --mem-fraction-static")
    layers, hidden = sg.vision
    ratio = layers * (hidden ** 2) / (24 * (1024 ** 2))
    dynamic = max(0.8, min(1.05, 1.0 - 0.1 * (ratio - 1.0)))
    return 0.95 * dynamic


def mm_reservation_gib(layout: Layout, behaviour: SglangBehaviour) -> float:
    """mm_runtime_reservation_gb (kv_cache_configurator.py:202-219 @0.5.23): GiB off a multimodal model's budget."""
    sg = sglang_of(layout)
    if not is_multimodal(layout, behaviour) or not behaviour.mm_budget_reservation:
        return 0.0
    mb = sg.vlm_cache_size_mb + (sg.mm_feature_cache_mb if sg.mm_feature_transport in ("cuda_ipc", "cuda_vmm") else 0)
    return mb / 1024


def speculative(layout: Layout) -> bool:
    return sglang_of(layout).speculative_algorithm is not None


def resolved_requests(layout: Layout) -> int | None:
    """--max-running-requests as SGLang resolves it: the flag's, else 48 with a speculative draft, 256 for
    DeepSeek-V4 (arg_groups/deepseek_v4_hook.py:137-145 @0.5.23)."""
    sg = sglang_of(layout)
    if sg.max_running_requests is None and layout.model.is_dsv4:
        return 256
    if sg.max_running_requests is None and speculative(layout):
        return SPEC_DEFAULT_REQUESTS
    return sg.max_running_requests


def draft_layers(layout: Layout) -> int | None:
    """The draft's KV layers (spec_aux_hidden_state.py:148-176 @0.5.23), or None: no draft cell."""
    sg = sglang_of(layout)
    if not speculative(layout):
        return None
    if sg.speculative_draft_layers is not None:
        return sg.speculative_draft_layers
    return sg.num_nextn_predict_layers


__all__ = ["attention_parallel", "draft_layers", "is_multimodal", "mm_reservation_gib", "multimodal_prefill_off",
           "resolved_requests", "speculative", "vlm_factor"]
