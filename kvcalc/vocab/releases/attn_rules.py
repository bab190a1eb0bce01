"""How each vLLM release picks the attention backend and the KV block size that follows, as data (ATTENTION_STEPS:
one row per boundary with its evidence), and the vocabulary the backend rows (attn_backends.py) name: capability
sets, the FlashAttention / FlashInfer / FlashMLA device rules, the combination checks and their reasons, the impl's
refusals. engines/vllm/attention.py evaluates them; nothing here compares a version string.

Capability sets (`cap_in`): "*" any GPU; "9.x" a major (vLLM's is_device_capability_family(90)); "=9.0" one
capability (is_device_capability(90)); ">=8.0" / "<=12.1" bounds, joined by "&"; alternatives joined by "|"; on
ROCm the gfx target: "gfx9" (on_gfx9), "mi3xx" (gfx942 / gfx950: on_mi3xx), "cdna3+" (get_cdna_version() > 2).
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

from .steps import Step

Release = tuple[int, int, int]


@lru_cache(maxsize=256)
def cap_in(cap: str, spec: str) -> bool:
    """Is capability `cap` ("9.0", "10.3", "gfx942") in the set `spec`?"""
    if spec == "*":
        return True
    for alt in spec.split("|"):
        if all(_one(cap, part) for part in alt.split("&")):
            return True
    return False


_ROCM_SETS = {"gfx9": ("gfx90a", "gfx942", "gfx950"), "mi3xx": ("gfx942", "gfx950"), "cdna3+": ("gfx942", "gfx950")}


def _one(cap: str, part: str) -> bool:
    if part in _ROCM_SETS:
        return cap in _ROCM_SETS[part]
    if cap.startswith("gfx"):
        return False  # a CUDA capability set holds no gfx target
    major, minor = (int(x) for x in cap.split("."))
    if part.endswith(".x"):
        return major == int(part[:-2])
    if part.startswith("="):
        return cap == part[1:]
    bound = tuple(int(x) for x in part[2:].split("."))
    if part.startswith(">="):
        return (major, minor) >= bound
    return (major, minor) <= bound  # "<="


# One row per behaviour: a release takes the value of the last step at or below it (as vllm.STEPS).
ATTENTION_STEPS: dict[str, tuple[Step, ...]] = {
    "cuda_priorities": (  # attn_priorities.CUDA_LISTS
        Step((0, 0, 0), "c14", "0.14.0 platforms/cuda.py:44-82 _get_backend_priorities"),
        Step((0, 15, 0), "c15", "0.15.0 platforms/cuda.py:44-82: FLASHINFER_MLA before CUTLASS_MLA on family 100 "
                                "(0.14.1:51-59 CUTLASS_MLA first)"),
        Step((0, 17, 0), "c17", "0.17.0 platforms/cuda.py:47-97: num_heads <= 16 puts FLASHINFER_MLA_SPARSE first "
                                "on family 100 (0.16.0: FLASHMLA_SPARSE only)"),
        Step((0, 19, 0), "c19", "0.19.0 platforms/cuda.py:50-113: kv_cache_dtype.startswith('fp8') puts "
                                "FLASHINFER_MLA_SPARSE first on family 100"),
        Step((0, 20, 0), "c20", "0.20.0 platforms/cuda.py:78-143: TURBOQUANT last; is_quantized_kv_cache for the "
                                "sparse tail"),
        Step((0, 21, 0), "c21", "0.21.0 platforms/cuda.py:78-147: TOKENSPEED_MLA after FLASHINFER_MLA"),
        Step((0, 24, 0), "c24", "0.24.0 platforms/cuda.py:83-159: major 12 MLA [TRITON_MLA, "
                                "FLASHINFER_MLA_SPARSE_SM120] (0.23.0: the other list)"),
        Step((0, 25, 0), "c25", "0.25.0 platforms/cuda.py:82-159: FLASH_ATTN_MLA_SPARSE before FLASHMLA_SPARSE"),
        Step((0, 30, 0), "c30", "0.30.0 platforms/cuda.py:82-179: FLASHINFER_MLA_SPARSE_SM90 in the sparse tail"),
        Step((0, 33, 0), "c33", "0.33.0 platforms/cuda.py:83-181: FLASH_ATTN_MLA_SPARSE_FA4 first for bf16 with <= 16 "
                                "heads on family 100")),
    "rocm_priorities": (  # None: 0.14-0.17's if-chain (RocmPlatform.get_attn_backend_cls), no validation
        Step((0, 0, 0), None, "0.17.1 platforms/rocm.py:352-469: an if-chain on VLLM_ROCM_USE_AITER, no "
                              "validate_configuration"),
        Step((0, 18, 0), "r18", "0.18.0 platforms/rocm.py:309-352 _get_backend_priorities + :431-503 validation"),
        Step((0, 19, 0), "r19", "0.19.0 platforms/rocm.py:308-338: [ROCM_ATTN, ROCM_AITER_FA, "
                                "ROCM_AITER_UNIFIED_ATTN, TRITON_ATTN]"),
        Step((0, 20, 0), "r20", "0.20.0 platforms/rocm.py:357-388: + TURBOQUANT"),
        Step((0, 23, 0), "r23", "0.23.0 platforms/rocm.py:389-423: no ROCM_ATTN with a KV connector (:411-415); "
                                "v1/attention/selector.py:86-89 use_kv_connector"),
        Step((0, 32, 0), "r32", "0.32.0 platforms/rocm.py:478-515: + ULTRAQUANT"),
        Step((0, 33, 0), "r33", "0.33.0 platforms/rocm.py:531-569: + ROCM_OCTAVE")),
    "block_rule": (
        Step((0, 0, 0), "forced", "0.17.1 platforms/cuda.py:167-297 check_and_update_config: 16, forced for MLA "
                                  "backends at config time; validation sees block_size None (cuda.py:298 @0.14.0)"),
        Step((0, 18, 0), "first", "0.18.0 platforms/interface.py:426-474 update_block_size_for_backend (vllm#35122): "
                                  "the first layer's backend's get_preferred_block_size, after load_model"),
        Step((0, 20, 0), "first_non_ssm", "0.20.0 platforms/interface.py:442-499: the first non-SSM backend's "
                                          "preference (_find_non_ssm_backend)"),
        Step((0, 31, 0), "lcm", "0.31.0 platforms/interface.py:594-708 (vllm#49845): a size every non-SSM backend "
                                "supports (_preferred_block_size_for_backends)")),
    "mla_forcing": (  # 0.14-0.17 check_and_update_config's MLA defaults (block_rule forced)
        Step((0, 0, 0), "cutlass", "0.14.0 platforms/cuda.py:175-228: family 100 without index_topk -> CUTLASS_MLA "
                                   "(backend set, block 128); else FlashMLA's block 64 where FlashMLA dense runs"),
        Step((0, 15, 0), "flashinfer", "0.15.0 platforms/cuda.py:183-242: family 100 with qk_nope_head_dim 128 -> "
                                       "FLASHINFER_MLA (backend set, block 64); other family 100 -> CUTLASS_MLA's "
                                       "block 128 (backend not set)"),
        Step((0, 18, 0), None, "0.18.0 platforms/cuda.py:167-187: no MLA forcing")),
    "rocm_block": (  # ROCm's block size before update_block_size_for_backend (a no-op override in 0.18)
        Step((0, 0, 0), "config", "0.18.1 platforms/rocm.py:692-707 check_and_update_config: 64 with "
                                  "VLLM_ROCM_USE_AITER and VLLM_ROCM_USE_AITER_UNIFIED_ATTENTION (default off), "
                                  "else 16; :712-716 update_block_size_for_backend does nothing"),
        Step((0, 19, 0), "backend", "0.19.0 platforms/rocm.py: no override, the platform's rule (block_rule)")),
    "fa_sink_caps": (  # flash_attn_supports_sinks(): the FlashAttention version the device defaults to
        Step((0, 0, 0), "9.x", "0.19.1 v1/attention/backends/fa_utils.py:164-168: get_flash_attn_version() == 3 "
                               "(FA3: major 9)"),
        Step((0, 20, 0), "9.x|10.x", "0.20.0 v1/attention/backends/fa_utils.py:200-203: version in (3, 4) (FA4 is "
                                     "major 10's default from 0.17.0, fa_utils.py:70-75 @0.17.0)")),
    "fa4_caps": (  # is_fa_version_supported(4): FlashAttention's head sizes above 256 (0.20+) need it
        Step((0, 0, 0), "10.x", "0.16.0 vllm_flash_attn/flash_attn_interface.py:57-63: FA4 on major 10 only"),
        Step((0, 17, 0), "9.x|10.x|11.x", "0.17.0 vllm_flash_attn/flash_attn_interface.py:72-86: 9.x, 10.x, 11.x")),
    "fa4_head192_v128": (  # FA4 on Blackwell keeps head size 192 only with value head 128
        Step((0, 0, 0), False, "0.32.0 v1/attention/backends/fa_utils.py:186-200: head_size > 128 and != 192 -> FA2"),
        Step((0, 33, 0), True, "0.33.0 v1/attention/backends/fa_utils.py:192-206: (256, 256) or (192, 128) keep FA4")),
    # ModelConfig.is_mm_prefix_lm: the config's own is_mm_prefix_lm, else its model_type in this list; the selector gets
    # use_mm_prefix, and a backend without supports_mm_prefix() is refused ("partial multimodal token full
    # attention not supported", v1/attention/backend.py validate_configuration 0.14.0:233 ... 0.33.0:310).
    "mm_prefix_models": (
        Step((0, 0, 0), ("gemma3", "paligemma"), "0.14.0 config/model.py is_mm_prefix_lm MM_PREFIX_LM_MODELS"),
        Step((0, 15, 0), ("gemma3", "molmo2", "paligemma"), "0.15.0 config/model.py: + molmo2"),
        Step((0, 18, 0), ("bagel", "gemma3", "molmo2", "paligemma"), "0.18.0 config/model.py: + bagel"),
        Step((0, 20, 0), ("bagel", "gemma3", "molmo2", "paligemma", "umm"), "0.20.0 transformers_utils/"
             "model_arch_config_convertor.py ModelArchConfigConvertorBase.is_mm_prefix_lm: + umm"),
        Step((0, 21, 0), ("bagel", "gemma3", "molmo2", "moondream3", "paligemma", "umm"), "0.21.0 the same: + "
             "moondream3"),
        Step((0, 29, 0), ("bagel", "gemma3", "molmo2", "moondream3", "paligemma"), "0.29.0 the same: - umm")),
    # The model types Gemma-4's convertor answers is_mm_prefix_lm for, with text_config.use_bidirectional_attention ==
    # "vision" (0.20.0 transformers_utils/model_arch_config_convertor.py:478-483, :505-506); 0.19 reads the list
    # alone, where gemma4 is not.
    "vision_prefix_types": (
        Step((0, 0, 0), (), "0.19.1 config/model.py is_mm_prefix_lm: the list only"),
        Step((0, 20, 0), ("gemma4", "gemma4_text"), "0.20.0 model_arch_config_convertor.py:478-506"),
        Step((0, 23, 0), ("gemma4", "gemma4_text", "gemma4_unified", "gemma4_unified_text"), "0.23.0 the same table"),
        Step((0, 24, 0), ("diffusion_gemma_text", "gemma4", "gemma4_text", "gemma4_unified", "gemma4_unified_text"),
             "0.24.0 model_arch_config_convertor.py:564-600 and its table"),
        Step((0, 31, 0), ("diffusion_gemma", "diffusion_gemma_text", "gemma4", "gemma4_text", "gemma4_unified",
                          "gemma4_unified_text"), "0.31.0 model_arch_config_convertor.py:734 and its table")),
    # VLLM_ATTENTION_BACKEND: 0.14.x's AttentionConfig.__post_init__ sets the backend from it, over the flag
    # (config/attention.py:73-93 @0.14.0, envs.py:687-695 env_with_choices, case-sensitive); 0.15.0's envs.py has none.
    "backend_env": (
        Step((0, 0, 0), True, "0.14.1 config/attention.py:93 _set_from_env_if_set(backend, VLLM_ATTENTION_BACKEND)"),
        Step((0, 15, 0), False, "0.15.0 envs.py: no VLLM_ATTENTION_BACKEND; config/attention.py reads no variable")),
    "fi_sink_caps": (  # FlashInferBackend.supports_sink: TRTLLM decode / prefill (NVIDIA artifactory reachable)
        Step((0, 0, 0), "10.x", "0.27.1 v1/attention/backends/flashinfer.py:472-490: SM10x TRTLLM only"),
        Step((0, 28, 0), "10.x|12.x", "0.28.0 v1/attention/backends/flashinfer.py:542-560: + SM12x XQA"),
        Step((0, 30, 0), "=9.0|10.x|12.x", "0.30.0 v1/attention/backends/flashinfer.py:520-540: + SM90 XQA")),
    "aiter_arches": (  # is_aiter_found_and_supported (aiter installed)
        Step((0, 0, 0), "gfx9", "0.18.1 _aiter_ops.py:36-56: on_gfx9()"),
        Step((0, 19, 0), "mi3xx", "0.19.0 _aiter_ops.py:36-56: on_mi3xx() (0.27.0: get_cdna_version() > 2, the same "
                                  "targets)")),
    "sparse_kv_format": (  # DeepSeek-V3.2's fp8 KV cache: fp8_ds_mla for the model (<= 0.17) or the backend (0.18+)
        Step((0, 0, 0), "model", "0.17.1 model_executor/models/config.py:584-604 DeepseekV32ForCausalLM: fp8* -> "
                                 "fp8_ds_mla, bfloat16 -> auto, whatever the backend"),
        Step((0, 18, 0), "backend", "0.18.0 model_executor/layers/attention/mla_attention.py:342-356: the backend's "
                                    "format (BackendRow.kv_format)")),
    "hybrid_fi_hd256": (  # the config-time hybrid alignment's FlashInfer head-256 rule on family 100
        Step((0, 0, 0), True, "0.17.1 model_executor/models/config.py:469-480: kernel alignment 32 for head size 256 "
                              "on family 100 with FlashInfer (or no backend named)"),
        Step((0, 18, 0), False, "0.18.0 model_executor/models/config.py: 16 for every standard-attention model")),
    "asks_sliding": (
        Step((0, 0, 0), False, "0.25.1 v1/attention/backend.py:308-376 validate_configuration: no sliding check"),
        Step((0, 26, 0), True, "0.26.0 v1/attention/backend.py:319-393: has_sliding_window and not "
                               "supports_sliding_window -> 'sliding window not supported'")),
    "asks_connector": (
        Step((0, 0, 0), False, "0.22.1 v1/attention/backend.py:270-334: no KV connector check"),
        Step((0, 23, 0), True, "0.23.0 v1/attention/backend.py:274-341: use_kv_connector and not "
                               "supports_kv_connector -> 'KV connector not supported'")),
    "sink_reason": (
        Step((0, 0, 0), "sink setting not supported", "0.17.1 v1/attention/backend.py:262"),
        Step((0, 18, 0), "attention sinks not supported", "0.18.0 v1/attention/backend.py:287")),
    "candidates_log": (  # CudaPlatformBase.get_attn_backend_cls's info_once
        Step((0, 0, 0), "tuple", "0.15.1 platforms/cuda.py:364: 'Using %s attention backend out of potential "
                                 "backends: %s' with a tuple of names"),
        Step((0, 16, 0), "list", "0.16.0 platforms/cuda.py:367: '... potential backends: %s.' with ['A', 'B']")),
    "block_log": (  # Platform.update_block_size_for_backend's info (only for a size other than 16)
        Step((0, 0, 0), None, "0.17.1: 'Forcing kv cache block size to N for X backend.' (cuda.py:211-252)"),
        Step((0, 18, 0), "backend", "0.18.0 platforms/interface.py:469: 'Setting kv cache block size to %d for %s "
                                    "backend.'"),
        Step((0, 31, 0), "backends", "0.31.0 platforms/interface.py:692: '... for %s backend(s).' (names joined by "
                                     "'/')")),
    "selector_repr": (  # AttentionSelectorConfig.__repr__'s fields (v1/attention/selector.py), after attn_type
        Step((0, 0, 0), ("attn_type",), "0.14.0 v1/attention/selector.py:32-43"),
        Step((0, 17, 0), ("use_per_head_quant_scales", "attn_type"), "0.17.0 v1/attention/selector.py:33-45"),
        Step((0, 20, 0), ("use_per_head_quant_scales", "attn_type", "use_non_causal", "use_batch_invariant"),
             "0.20.0 v1/attention/selector.py:36-50"),
        Step((0, 23, 0), ("use_per_head_quant_scales", "attn_type", "use_non_causal", "use_batch_invariant",
                          "use_kv_connector"), "0.23.0 v1/attention/selector.py:36-51"),
        Step((0, 26, 0), ("use_per_head_quant_scales", "attn_type", "has_sliding_window", "use_non_causal",
                          "use_batch_invariant", "use_kv_connector", "use_pcp"),
             "0.26.0 v1/attention/selector.py:41-58"),
        Step((0, 28, 0), ("use_per_head_quant_scales", "attn_type", "has_sliding_window", "use_non_causal",
                          "use_batch_invariant", "use_kv_connector", "use_adaptive_verification", "use_pcp"),
             "0.28.0 v1/attention/selector.py:42-60"),
        Step((0, 29, 0), ("use_per_head_quant_scales", "attn_type", "has_sliding_window", "use_non_causal",
                          "use_batch_invariant", "use_kv_connector", "use_adaptive_verification", "use_pcp",
                          "use_dcp"), "0.29.0 v1/attention/selector.py:40-59"),
        Step((0, 30, 0), ("use_per_head_quant_scales", "attn_type", "has_sliding_window", "use_non_causal",
                          "use_batch_invariant", "use_kv_connector", "use_adaptive_verification", "use_pcp",
                          "use_dcp", "use_rswa"), "0.30.0 v1/attention/selector.py:41-61")),
}


class AttentionRules:
    """What one release does in backend selection (fields: ATTENTION_STEPS)."""

    __slots__ = tuple(ATTENTION_STEPS) + ("release",)
    if TYPE_CHECKING:  # one attribute per ATTENTION_STEPS row, set by __init__
        cuda_priorities: str
        rocm_priorities: str | None
        block_rule: str
        mla_forcing: str | None
        rocm_block: str
        fa_sink_caps: str
        fa4_caps: str
        fa4_head192_v128: bool
        mm_prefix_models: tuple[str, ...]
        vision_prefix_types: tuple[str, ...]
        backend_env: bool
        fi_sink_caps: str
        aiter_arches: str
        sparse_kv_format: str
        hybrid_fi_hd256: bool
        asks_sliding: bool
        asks_connector: bool
        sink_reason: str
        candidates_log: str
        block_log: str | None
        selector_repr: tuple[str, ...]

    def __init__(self, release: Release):
        self.release = release
        for name, steps in ATTENTION_STEPS.items():
            value = steps[0].value
            for step in steps:
                if release >= step.first:
                    value = step.value
            setattr(self, name, value)


@lru_cache(maxsize=64)
def attention_rules(release: Release) -> AttentionRules:
    return AttentionRules(release)


# supports_combination's checks (attn_backends.BackendRow.combo): name -> vLLM's reason (format fields: the layout's).
COMBO_REASONS: dict[str, str] = {
    "sink_below_90": "sink not supported on compute capability < 9.0",
    "fa_fp8_head": "FP8 KV cache requires FA3 on SM90 or FA4 on SM100",
    "fi_nvfp4": "fa2 prefill misreads an NVFP4 KV cache at head_size 64",
    "fa_mla": "FlashAttention MLA not supported on this device",
    "flashmla": "{flashmla}",
    "qk_nope_128": "FlashInfer MLA kernel requires qk_nope_head_dim == 128, but got {qk_nope}",
    "qk_nope_64_128": "FlashInfer MLA kernel requires qk_nope_head_dim in [64, 128], but got {qk_nope}",
    "qk_nope_64_128_192": "FlashInfer MLA kernel requires qk_nope_head_dim in [64, 128, 192], but got {qk_nope}",
    "tokenspeed_absent": "tokenspeed_mla package is not installed. Install it with: `uv pip install tokenspeed-mla`",
    "flashmla_sparse_512": "FLASHMLA_SPARSE supports head_size 512 only with bf16 kv-cache on SM90 (NoPE)",
    "qk_nope_128_sparse": "FlashInfer MLA Sparse kernel requires qk_nope_head_dim == 128, but got {qk_nope}",
    "qk_nope_128_192_sparse": "FlashInfer MLA Sparse kernel requires qk_nope_head_dim in [128, 192], but got "
                              "{qk_nope}",
    "index_topk_fi": "FlashInfer MLA Sparse requires model with index_topk config",
    "no_fp8_ds_mla": "FLASHINFER_MLA_SPARSE SM10 does not support fp8_ds_mla kv-cache dtype",
    "index_topk_2048": "FLASHINFER_MLA_SPARSE_SM120 requires a model with index_topk config",
    "fa_mla_sparse_kv": "FlashAttention MLA Sparse currently supports only FP16/BF16 KV cache",
    "index_topk_fa": "FlashAttention MLA Sparse requires model with index_topk",
    "fi_sm90_absent": "FLASHINFER_MLA_SPARSE_SM90 requires FlashInfer with SM90 MLA support (ckv_scale_arr in "
                      "BatchMLAPagedAttentionWrapper.run, FlashInfer >= 0.6.18)",
    "fa4_sparse_dims": "FA4 sparse MLA requires (8, 16, 32, 64, 128) gathered query heads, got num_heads={heads}",
}
FLASHMLA_DENSE_REASON = "FlashMLA Dense is only supported on Hopper devices."
# is_flashmla_sparse_supported's words: 0.14-0.23 "Blackwell devices.", 0.24+ "Blackwell DC devices."
FLASHMLA_SPARSE_REASONS = ((0, 0, 0), "FlashMLA Sparse is only supported on Hopper and Blackwell devices."), \
    ((0, 24, 0), "FlashMLA Sparse is only supported on Hopper and Blackwell DC devices.")

# The impl's refusals once a backend is selected (attn_backends.BackendRow.refuse): vLLM's error, as printed.
REFUSALS: dict[str, str] = {
    # v1/attention/backends/triton_attn.py:482-496 @0.24.0 (0.33.0 the same)
    "triton_fp8_sm89": "ValueError: FP8 KV cache is not supported by the Triton attention backend on {device} "
                       "(compute capability {cap}); native FP8 (fp8e4nv) requires SM89+. Re-run with --kv-cache-dtype "
                       "{suggested}.",
    # v1/attention/backends/mla/triton_mla.py:183-198 @0.26.0
    "triton_mla_fp8_sm89": "ValueError: FP8 KV cache is not supported by the Triton MLA backend on {device} "
                           "(compute capability {cap}); native FP8 (fp8e4nv) requires SM89+. Re-run with "
                           "--kv-cache-dtype {suggested}.",
    # v1/attention/backends/mla/triton_mla.py:96-99 @0.17.0
    "triton_mla_v1_fp8": "NotImplementedError: TritonMLA V1 with FP8 KV cache not yet supported",
    # v1/attention/backends/rocm_aiter_fa.py AiterFlashAttentionImpl.__init__ (no sinks argument before 0.23.0)
    "aiter_fa_sinks": "TypeError: AiterFlashAttentionImpl.__init__() got an unexpected keyword argument 'sinks'",
}

# 0.14-0.17 check_and_update_config's forced MLA block sizes: backend -> (block sizes kept, forced size, vLLM's name).
FORCED_MLA_BLOCKS: dict[str, tuple[str, int, str]] = {
    "FLASHMLA": ("%64", 64, "FlashMLA"),  # only where FlashMLA dense runs (SM9x)
    "CUTLASS_MLA": ("%128", 128, "CUTLASS_MLA"),
    "FLASHINFER_MLA": ("32|%64", 64, "FlashInferMLA"),
    "FLASHMLA_SPARSE": ("64", 64, "FlashMLASparse"),
    "FLASHINFER_MLA_SPARSE": ("32|64", 64, "FlashInferMLASparse"),
}
