"""SGLang's Mamba / GDN state pool (hybrid models: Qwen3-Next, Qwen3.5, Nemotron-H), carved out of the KV budget
before the token pool is sized (cited @0.5.23, the release whose pool code was executed):

- per request (srt/configs/mamba_utils.py:114-125 mamba_cache_per_req, :205-244 Mamba2StateShape.create): every
  Mamba layer's conv state `(conv_dim / tp) x (conv_kernel - 1)` at the conv dtype (bfloat16, SGLANG_MAMBA_CONV_DTYPE)
  and its SSM state `(heads / tp) x head_dim x state_size` at the SSM dtype (float32; the config's
  [text_config.]mamba_ssm_dtype; --mamba-ssm-dtype, which sets SGLANG_MAMBA_SSM_DTYPE,
  srt/arg_groups/serving_hook.py:439-440). conv_dim = intermediate + 2 x groups x state_size, groups extended when
  not a multiple of tp (extra_groups_for_head_shards). Nemotron-H (configs/nemotron_h.py:425-439): intermediate =
  mamba heads x head_dim; GDN (configs/qwen3_next.py:288-313): intermediate = value heads x value dim, groups = key
  heads, heads = value heads, head_dim = value dim, state_size = key dim. TP: the attention TP.
- the pool (srt/mem_cache/kv_cache_configurator.py:3229-3409 _handle_max_mamba_cache): a stage is charged its share
  of the Mamba layers (the largest stage's); --max-mamba-cache-size K (per DP worker: // attn_dp), else without the
  radix cache and with --max-running-requests K = requests // attn_dp, else
  `K = int((rest x r / (1 + r) x 2^30 - per_req) // per_req)`, r = --mamba-full-memory-ratio (0.9,
  srt/arg_groups/fields/schedule.py:220-227); speculative decoding solves K jointly with the intermediate states
  (:3356-3378). Then `rest -= (K + 1) x per_req` (the pool's padding slot).
- requests (:3062-3088, :3134-3158): at most K // ratio, ratio 3 with the radix cache (+ 2 tracking slots with its
  extra buffer, + 1 lazy; srt/mem_cache/allocation_sizing.py:11-19), 1 without.
"""

from __future__ import annotations


from ...vocab.errors import StartupRefusal, UnsupportedError
from ...vocab.layout import Layout
from ...vocab.records import field, record
from ...vocab.releases.sglang import sglang_of

# The hybrid architectures whose state pool was executed (0.5.23, tests/fixtures/sglang/executed_vectors.json) and
# the Mamba kind kvcalc reads their configs as. srt/arg_groups/overrides.py:455-485: their
# --mamba-radix-cache-strategy auto is extra_buffer (overlap schedule on).
ARCHS = {"Qwen3NextForCausalLM": "gated_delta_net", "Qwen3_5MoeForConditionalGeneration": "gated_delta_net",
         "Qwen3_5ForConditionalGeneration": "gated_delta_net", "NemotronHForCausalLM": "mamba2"}
SSM_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
RATIO_BASE = 3  # kv_cache_configurator.py:227 MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO
TRACKING = {"auto": 2, "extra_buffer": 2, "extra_buffer_lazy": 1, "no_buffer": 0}


@record
class MambaState:
    """The state pool's terms on one rank."""

    kind: str = field("mamba2 | gated_delta_net")
    layers: int = field("Mamba / linear-attention layers in the model")
    stage_layers: int = field("the largest PP stage's share (what every stage is charged)")
    conv_bytes: int = field("one layer's conv state for one request")
    ssm_bytes: int = field("one layer's SSM state for one request")
    ssm_dtype: str = field("the SSM state's dtype")
    per_req: int = field("mamba_cache_per_req: every Mamba layer's states for one request")
    stage_per_req: int = field("int(per_req x stage_layers / layers)")
    max_mamba_cache_size: int = field("K: state slots per DP worker")
    ratio: int = field("state slots a running request needs: max_running_requests <= K // ratio")
    bytes: int = field("(K + 1) x stage_per_req: the pool, its padding slot included")


def _divide(a: int, b: int, what: str) -> int:
    if a % b:
        raise UnsupportedError(f"SGLang asserts {what} ({a}) divisible by the attention TP ({b}) "
                               "(srt/distributed/utils.py divide)")
    return a // b


def state_shape(layout: Layout, attn_tp: int) -> tuple[str, int, int, int]:
    """(kind, Mamba layers, conv bytes, SSM bytes) of one layer for one request."""
    m, sg = layout.model, sglang_of(layout)
    kind = ARCHS.get(sg.architecture or "")
    if kind is None or m.mamba is None or m.mamba.kind != kind:
        raise UnsupportedError(f"{layout.source}: SGLang's state pool is modelled for {', '.join(ARCHS)} (executed "
                               f"at 0.5.23), not {sg.architecture} ({m.mamba.kind if m.mamba else 'no Mamba'})")
    p = m.mamba.values
    if kind == "mamba2":
        heads, head_dim, groups = p["mamba_num_heads"], p["mamba_head_dim"], p["n_groups"]
        state, kernel = p["ssm_state_size"], p["conv_kernel"]
    else:
        heads, head_dim, groups = p["linear_num_value_heads"], p["linear_value_head_dim"], p["linear_num_key_heads"]
        state, kernel = p["linear_key_head_dim"], p["linear_conv_kernel_dim"]
    intermediate = heads * head_dim
    if groups % attn_tp:
        groups += attn_tp - groups  # mamba_utils.py:28-37 extra_groups_for_head_shards
    conv = _divide(intermediate + 2 * groups * state, attn_tp, "conv_dim") * (kernel - 1)
    ssm = _divide(heads, attn_tp, "the SSM heads") * head_dim * state
    conv_bytes = 2  # SGLANG_MAMBA_CONV_DTYPE default bfloat16 (mamba_utils.py:62)
    ssm_dtype = sg.mamba_ssm_dtype or (m.mamba.state_dtype if m.mamba.state_dtype in SSM_BYTES else "float32")
    layers = sum(1 for k in m.layer_types if k.mamba)
    return ssm_dtype, layers, conv * conv_bytes, ssm * SSM_BYTES[ssm_dtype]


def mamba_ratio(layout: Layout) -> int:
    """kv_cache_configurator.py:3062-3088 _calculate_mamba_ratio: 1 without the radix cache, else 3 + the extra
    buffer's tracking slots (srt/mem_cache/allocation_sizing.py:11-19: 2 with the overlap schedule, 1 without or
    lazy). --mamba-radix-cache-strategy auto is extra_buffer unless --disable-overlap-schedule with page 1
    (srt/arg_groups/overrides.py:477-486); PP turns the overlap schedule off afterwards (:1619-1624), so a PP stage
    keeps the extra buffer with one tracking slot (executed: Qwen3-Next TP 2 x PP 2, K 709, 177 requests)."""
    sg = sglang_of(layout)
    if sg.disable_radix_cache:
        return 1
    strategy = sg.mamba_radix_cache_strategy
    if strategy == "auto":
        strategy = "extra_buffer" if not sg.disable_overlap_schedule or (sg.page_size or 1) > 1 else "no_buffer"
    overlap = not sg.disable_overlap_schedule and layout.parallel.pipeline_parallel_size == 1
    if strategy == "extra_buffer":
        return RATIO_BASE + (2 if overlap else 1)
    return RATIO_BASE + TRACKING[strategy]


def carve(layout: Layout, rest_gib: float, attn_tp: int, attn_dp: int, stage_layers: int,
          spec_tokens: int | None, requests: int | None) -> tuple[float, MambaState]:
    """(rest after the state pool, GiB; the pool) from the budget `rest_gib` (kv_cache_configurator.py:3229-3409).
    `spec_tokens`: --speculative-num-draft-tokens with a draft; `requests`: --max-running-requests as resolved."""
    sg = sglang_of(layout)
    ssm_dtype, layers, conv_b, ssm_b = state_shape(layout, attn_tp)
    per_req = (conv_b + ssm_b) * layers
    stage_per_req = int(per_req * (stage_layers / max(layers, 1)))
    ratio = mamba_ratio(layout)
    reqs = requests or 1  # with a draft SGLang has resolved it (48 by default): speculative_hook.py:1086-1090
    if sg.max_mamba_cache_size is not None:
        k = sg.max_mamba_cache_size // attn_dp
        if spec_tokens:
            capped = min(max(1, reqs // attn_dp), sg.max_mamba_cache_size // ratio)
            rest_gib -= stage_per_req * (capped + 1) * spec_tokens / (1 << 30)
    elif sg.disable_radix_cache and requests is not None:
        k = max(1, requests // attn_dp)
        if spec_tokens:
            rest_gib -= stage_per_req * (k + 1) * spec_tokens / (1 << 30)
    else:
        r = sg.mamba_full_memory_ratio
        budget = rest_gib * r / (1 + r) * (1 << 30)
        if spec_tokens:
            k = int((budget - stage_per_req * (1 + spec_tokens)) // (stage_per_req * (1 + spec_tokens / ratio)))
            capped = min(max(1, reqs // attn_dp), k // ratio)
            rest_gib -= stage_per_req * (capped + 1) * spec_tokens / (1 << 30)
        else:
            k = int((budget - stage_per_req) // stage_per_req)
    if k <= 0:
        raise StartupRefusal(
            f"Not enough GPU memory for hybrid (mamba/linear-attention) state cache. Computed max_mamba_cache_size={k} "
            f"(total_rest_memory={rest_gib:.2f} GB, mamba_cache_per_req={stage_per_req / (1 << 20):.2f} MB). Try: (1) "
            "reduce --max-running-requests, (2) increase --mem-fraction-static, (3) reduce "
            "--speculative-num-draft-tokens, or (4) use GPUs with more memory.")
    state = MambaState(kind=ARCHS[sg.architecture or ""], layers=layers, stage_layers=stage_layers, conv_bytes=conv_b,
                       ssm_bytes=ssm_b, ssm_dtype=ssm_dtype, per_req=per_req, stage_per_req=stage_per_req,
                       max_mamba_cache_size=k, ratio=ratio, bytes=(k + 1) * stage_per_req)
    return rest_gib - (k + 1) * stage_per_req / (1 << 30), state


def cap_requests(requests: int, state: MambaState) -> int:
    """kv_cache_configurator.py:3134-3158: max_running_requests at most K // ratio; SGLang refuses 0."""
    cap = state.max_mamba_cache_size // state.ratio
    if min(requests, cap) <= 0:
        raise StartupRefusal(
            f"Hybrid (mamba/linear-attention) state cache is too small to serve any requests. max_mamba_cache_size="
            f"{state.max_mamba_cache_size}, mamba_ratio={state.ratio}, resulting max_num_reqs={min(requests, cap)}. "
            "Try: (1) reduce --max-running-requests, (2) increase --mem-fraction-static, or (3) use GPUs with more "
            "memory.")
    return min(requests, cap)


__all__ = ["MambaState", "cap_requests", "carve"]
