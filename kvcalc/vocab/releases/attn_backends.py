"""vLLM's attention backends as each release's support checks see them: one row per backend and boundary.

A row holds what `AttentionBackend.validate_configuration` asks of the backend class from its release on, until the
backend's next row (inheritance resolved: ROCM_AITER_UNIFIED_ATTN subclasses ROCM_ATTN, the MLA backends
MLACommonBackend). The checks are vLLM's, in its order (v1/attention/backend.py validate_configuration, 0.14.0:210-265
... 0.33.0:278-369): head size, model dtype, KV cache dtype, block size (the user's only; 0.14-0.17 pass None), MLA,
sinks, sparse, compute capability, sliding window (0.26+), KV connector (0.23+), then `supports_combination`. Rules
that are code in vLLM (the FlashAttention version a device runs, FlashInfer's TRTLLM paths) are named here and
evaluated by engines/vllm/attention.py from the data of attn_rules.py. Only what kvcalc's inputs can reach is
recorded: a KV dtype kvcalc does not read (nvfp4_4over6, turboquant_*) changes no row. Evidence: the release's file
and lines of the row's change (/work/src/vllm/<release>/vllm/...; the first row cites 0.14.0 or the release that
added the backend).
"""

from __future__ import annotations

from ..records import record

Release = tuple[int, int, int]

F16_BF16 = ("float16", "bfloat16")
F16_BF16_F32 = ("float16", "bfloat16", "float32")
BF16 = ("bfloat16",)
KV_18 = ("auto", "float16", "bfloat16")  # 0.18.0 added float16 to every backend's list (CacheDType float16)
FP8_ALL = ("fp8", "fp8_e4m3", "fp8_e5m2")
MLA_HEADS_14 = (576,)  # MLACommonBackend.get_supported_head_sizes (kv_lora_rank 512 + qk_rope_head_dim 64)
MLA_HEADS_18 = (320, 576)
MLA_HEADS_30 = (320, 512, 576)


@record
class BackendRow:
    """One backend's support checks from release `first` on (see the module docstring)."""

    name: str  # the AttentionBackendEnum member
    first: Release
    evidence: str
    mla: bool = False
    sparse: bool = False
    dtypes: tuple[str, ...] = F16_BF16  # supported_dtypes (the model's dtype)
    kv: tuple[str, ...] | None = ("auto",)  # supported_kv_cache_dtypes; None: the class lists none (any)
    # How the class judges a KV dtype: "list" (in kv), or its own supports_kv_cache_dtype (attn_rules.KV_RULES).
    kv_rule: str = "list"
    heads: tuple[int, ...] | str = ()  # supported head sizes; (): any; a str: a rule (attn_rules.HEAD_RULES)
    cap: str = "*"  # supports_compute_capability, as a capability set (attn_rules.cap_in)
    sink: str = "no"  # supports_sink: "no", "yes" or a rule (attn_rules.SINK_RULES)
    sliding: bool = False  # supports_sliding_window (asked from 0.26.0; the base class says False)
    connector: bool = True  # supports_kv_connector (asked from 0.23.0)
    combo: tuple[str, ...] = ()  # supports_combination's checks, in order (attn_rules.COMBOS)
    kernel: tuple[int | str, ...] = ()  # get_supported_kernel_block_sizes: ints, "*16" for MultipleOf(16)
    block_ok: str | None = None  # a supports_block_size override ("*16": a multiple of 16)
    preferred: int | None = None  # a get_preferred_block_size override (a fixed size)
    kernel_rule: str | None = None  # kernel sizes that depend on the model (FlashAttention 4's hd256 pages)
    kv_format: str | None = None  # the KV format the MLA layer switches to for this backend (attn_rules.KV_FORMATS)
    refuse: tuple[str, ...] = ()  # the impl's own refusals once selected (attn_rules.REFUSALS)
    kv_first: bool = False  # KV cache shape (2, num_blocks, ...): K and V are separate halves


# A row as written: (name, first release, evidence, the fields it changes). The table is resolved per backend on
# first use (backend_row): a plan asks for a handful of the ~30 backends, and building all 87 records at import cost
# ~0.6 ms of a ~0.14 s cold start (2026-12-02).
Written = tuple[str, str, str, dict]


def _row(name: str, first: str, evidence: str, **changes) -> Written:
    """A row: the backend's previous row with `changes` (the first row of a backend: the defaults with them)."""
    return name, first, evidence, changes


_FA = "v1/attention/backends/flash_attn.py"
_FI = "v1/attention/backends/flashinfer.py"
_TR = "v1/attention/backends/triton_attn.py"
_MLA = "v1/attention/backends/mla/"
_ROCM = "v1/attention/backends/rocm_attn.py"
_AFA = "v1/attention/backends/rocm_aiter_fa.py"
_AUA = "v1/attention/backends/rocm_aiter_unified_attn.py"

WRITTEN: tuple[Written, ...] = (
    # --- CUDA, standard attention
    _row("FLASH_ATTN", "0.14.0", f"0.14.0 {_FA}:58-180: dtypes fp16/bf16 (:60); supports_kv_cache_dtype (:148-154) "
         "auto, fp8* only with flash_attn_supports_fp8(); head_size % 8 == 0 and <= 256 (:144-146); capability >= 8.0 "
         "(:162-164); sinks with flash_attn_supports_sinks() (:156-160); supports_combination: no sinks below 9.0 "
         "(:166-180); kernel [MultipleOf(16)] (:62-80)",
         kv_rule="fa14", heads="fa14", cap=">=8.0", sink="fa", sliding=True, combo=("sink_below_90",),
         kernel=("*16",), kv_first=True),
    _row("FLASH_ATTN", "0.15.0", f"0.15.0 {_FA}:150-156 supports_kv_cache_dtype: ['auto', 'bfloat16']",
         kv=("auto", "bfloat16")),
    _row("FLASH_ATTN", "0.18.0", f"0.18.0 {_FA}:166-172 supports_kv_cache_dtype: ['auto', 'float16', 'bfloat16']",
         kv=KV_18),
    _row("FLASH_ATTN", "0.20.0", f"0.20.0 {_FA}:177-193: is_quantized_kv_cache -> flash_attn_supports_fp8() (every "
         "quantized KV dtype, 0.19.1: fp8* only); head sizes <= 512 where FA4 is supported (:177-185)",
         kv_rule="fa20", heads="fa20"),
    _row("FLASH_ATTN", "0.22.0", f"0.22.0 {_FA}:182-193 supports_kv_cache_dtype: fp8 / fp8_e4m3 need FA3 on SM9x; "
         "other quantized dtypes are refused", kv_rule="fa22"),
    _row("FLASH_ATTN", "0.27.0", f"0.27.0 {_FA}:74-80 supported_kv_cache_dtypes + fp8, fp8_e4m3; :180-188 "
         "flash_attn_supports_kv_cache_dtype (FA3 on SM9x or FA4 on SM10x); supports_combination :204-239 'FP8 KV "
         "cache requires FA3 on SM90 or FA4 on SM100' with the layer's head size",
         kv=KV_18 + ("fp8", "fp8_e4m3"), kv_rule="fa27", combo=("sink_below_90", "fa_fp8_head")),
    _row("FLASH_ATTN", "0.29.0", f"0.29.0 {_FA}:111-126: FA4's head-size-256 kernel on SM10x/11x takes 128-token "
         "pages (_get_fa4_hd256_block_size; the preferred size too)", kernel_rule="fa4_hd256"),
    _row("FLASHINFER", "0.14.0", f"0.14.0 {_FI}:279-372: dtypes fp16/bf16 (:281); KV dtypes auto, fp8, fp8_e4m3, "
         "fp8_e5m2 (:282-287); head sizes 64, 128, 256 (:347-350); capability 7.5 - 12.1 (:352-356); sinks with "
         "TRTLLM attention (:358-372); kernel [16, 32, 64] (:289-293)",
         kv=("auto",) + FP8_ALL, heads=(64, 128, 256), cap=">=7.5&<=12.1", sink="fi", sliding=True,
         kernel=(16, 32, 64)),
    _row("FLASHINFER", "0.15.0", f"0.15.0 {_FI}:282-288 supported_kv_cache_dtypes + bfloat16",
         kv=("auto", "bfloat16") + FP8_ALL),
    _row("FLASHINFER", "0.18.0", f"0.18.0 {_FI}:292-299 supported_kv_cache_dtypes + float16", kv=KV_18 + FP8_ALL),
    _row("FLASHINFER", "0.21.0", f"0.21.0 {_FI}:329-337 supported_kv_cache_dtypes + nvfp4",
         kv=KV_18 + FP8_ALL + ("nvfp4",)),
    _row("FLASHINFER", "0.22.0", f"0.22.0 {_FI}:402-405 get_supported_head_sizes: [64, 128, 256, 512]",
         heads=(64, 128, 256, 512)),
    _row("FLASHINFER", "0.24.0", f"0.24.0 {_FI}:425-434 supports_compute_capability: 8.0 - 12.1 (SM75 broken, "
         "flashinfer#3620)", cap=">=8.0&<=12.1"),
    _row("FLASHINFER", "0.25.0", f"0.25.0 {_FI}:426-434 supports_kv_cache_dtype: nvfp4 only on SM10x with TRTLLM "
         "prefill and decode", kv_rule="fi25"),
    _row("FLASHINFER", "0.32.0", f"0.32.0 {_FI}:528-563: nvfp4 on the FA2 path (_nvfp4_kv_on_fa2); "
         "supports_combination refuses nvfp4 at head size 64 and with sinks on SM8x/9x/12x",
         kv_rule="fi32", combo=("fi_nvfp4",)),
    _row("TRITON_ATTN", "0.14.0", f"0.14.0 {_TR}:253-336: dtypes fp16/bf16/fp32 (:255-259); KV dtypes auto, fp8, "
         "fp8_e4m3, fp8_e5m2 (:260-265); head_size >= 32 (:312-314); any capability (:334-336); sinks (:320-322); "
         "kernel [MultipleOf(16)] (:267-269)",
         dtypes=F16_BF16_F32, kv=("auto",) + FP8_ALL, heads=">=32", sink="yes", sliding=True, kernel=("*16",)),
    _row("TRITON_ATTN", "0.15.0", f"0.15.0 {_TR}:262-268 supported_kv_cache_dtypes + bfloat16",
         kv=("auto", "bfloat16") + FP8_ALL),
    _row("TRITON_ATTN", "0.18.0", f"0.18.0 {_TR}:264-281 supported_kv_cache_dtypes + float16; supports_block_size: "
         "a multiple of 16", kv=KV_18 + FP8_ALL, block_ok="*16"),
    _row("TRITON_ATTN", "0.20.0", f"0.20.0 {_TR}:272-281 supported_kv_cache_dtypes + int8_per_token_head, "
         "fp8_per_token_head", kv=KV_18 + FP8_ALL + ("int8_per_token_head", "fp8_per_token_head")),
    _row("TRITON_ATTN", "0.24.0", f"0.24.0 {_TR}:482-502 TritonAttentionImpl: on CUDA an fp8 KV cache below SM89 and "
         "a bfloat16 KV cache below SM80 are refused", refuse=("triton_fp8_sm89",)),
    _row("FLEX_ATTENTION", "0.14.0", "0.14.0 v1/attention/backends/flex_attention.py:76-123: dtypes fp16/bf16/fp32 "
         "(:78-82); KV dtype auto (:83); any head size (:121-123); no sinks",
         dtypes=F16_BF16_F32, sliding=True, kv_first=True),
    _row("FLEX_ATTENTION", "0.15.0", "0.15.0 v1/attention/backends/flex_attention.py:83 ['auto', 'bfloat16']",
         kv=("auto", "bfloat16")),
    _row("FLEX_ATTENTION", "0.18.0", "0.18.0 v1/attention/backends/flex_attention.py:83-87 + float16", kv=KV_18),
    _row("FLEX_ATTENTION", "0.21.0", "0.21.0 v1/attention/backends/flex_attention.py:142-144 kernel [MultipleOf(16)]",
         kernel=("*16",)),
    _row("TURBOQUANT", "0.20.0", "0.20.0 v1/attention/backends/turboquant_attn.py:83-166: only turboquant_* KV dtypes "
         "(:93-98, :156-160)", kv=("turboquant_k8v4", "turboquant_4bit_nc", "turboquant_k3v4_nc", "turboquant_3bit_nc"),
         kernel=(16, 32, 64, 128)),
    # --- CUDA, MLA (MLACommonBackend: head sizes 576 <= 0.17.1, 320 / 576 0.18+, + 512 0.30+)
    _row("FLASH_ATTN_MLA", "0.14.0", f"0.14.0 {_MLA}flashattn_mla.py:44-82: KV dtype auto (:46); capability major 9 "
         "(:64-66); flash_attn_supports_mla() (:68-82); kernel [MultipleOf(16)]; MLA head sizes 576 "
         f"({_MLA}common.py:322-324)", mla=True, heads=MLA_HEADS_14, cap="9.x", combo=("fa_mla",), kernel=("*16",)),
    _row("FLASH_ATTN_MLA", "0.15.0", f"0.15.0 {_MLA}flashattn_mla.py:46-49 ['auto', 'bfloat16']",
         kv=("auto", "bfloat16")),
    _row("FLASH_ATTN_MLA", "0.18.0", f"0.18.0 {_MLA}flashattn_mla.py:47-51 + float16; MLA head sizes 320, 576 "
         "(model_executor/layers/attention/mla_attention.py:1152-1154)", kv=KV_18, heads=MLA_HEADS_18),
    _row("FLASH_ATTN_MLA", "0.30.0", "0.30.0 model_executor/layers/attention/mla_attention.py:1594-1596 MLA head sizes "
         "320, 512, 576", heads=MLA_HEADS_30),
    _row("FLASHMLA", "0.14.0", f"0.14.0 {_MLA}flashmla.py:44-91: KV dtypes auto, fp8, fp8_e4m3 (:46-50); capability "
         "major 9 or 10 (:68-70); FlashMLA dense on SM9x / sparse on SM9x-10x (:72-91, v1/attention/ops/flashmla.py:"
         "51-78); kernel [64] (:52-54)", mla=True, kv=("auto", "fp8", "fp8_e4m3"), heads=MLA_HEADS_14, cap="9.x|10.x",
         combo=("flashmla",), kernel=(64,)),
    _row("FLASHMLA", "0.15.0", f"0.15.0 {_MLA}flashmla.py:49-54 + bfloat16",
         kv=("auto", "bfloat16", "fp8", "fp8_e4m3")),
    _row("FLASHMLA", "0.18.0", f"0.18.0 {_MLA}flashmla.py:50-56 + float16; MLA head sizes 320, 576",
         kv=KV_18 + ("fp8", "fp8_e4m3"), heads=MLA_HEADS_18),
    _row("FLASHMLA", "0.30.0", "0.30.0 MLA head sizes 320, 512, 576", heads=MLA_HEADS_30),
    _row("FLASHINFER_MLA", "0.14.0", f"0.14.0 {_MLA}flashinfer_mla.py:37-63: KV dtypes auto, fp8, fp8_e4m3 (:39-43); "
         "capability major 10 (:61-63); kernel [32, 64] (:45-47)", mla=True, kv=("auto", "fp8", "fp8_e4m3"),
         heads=MLA_HEADS_14, cap="10.x", kernel=(32, 64)),
    _row("FLASHINFER_MLA", "0.15.0", f"0.15.0 {_MLA}flashinfer_mla.py:39-90: + bfloat16; supports_combination: "
         "qk_nope_head_dim == 128", kv=("auto", "bfloat16", "fp8", "fp8_e4m3"), combo=("qk_nope_128",)),
    _row("FLASHINFER_MLA", "0.18.0", f"0.18.0 {_MLA}flashinfer_mla.py:40-92: + float16; qk_nope_head_dim in [64, "
         "128]; MLA head sizes 320, 576", kv=KV_18 + ("fp8", "fp8_e4m3"), combo=("qk_nope_64_128",),
         heads=MLA_HEADS_18),
    _row("FLASHINFER_MLA", "0.19.0", f"0.19.0 {_MLA}flashinfer_mla.py:68-92 qk_nope_head_dim in [64, 128, 192]",
         combo=("qk_nope_64_128_192",)),
    _row("FLASHINFER_MLA", "0.30.0", "0.30.0 MLA head sizes 320, 512, 576", heads=MLA_HEADS_30),
    _row("CUTLASS_MLA", "0.14.0", f"0.14.0 {_MLA}cutlass_mla.py:37-63: KV dtypes auto, fp8, fp8_e4m3 (:39-43); "
         "capability major 10 (:61-63); kernel [128] (:45-47)", mla=True, kv=("auto", "fp8", "fp8_e4m3"),
         heads=MLA_HEADS_14, cap="10.x", kernel=(128,)),
    _row("CUTLASS_MLA", "0.15.0", f"0.15.0 {_MLA}cutlass_mla.py:39-44 + bfloat16",
         kv=("auto", "bfloat16", "fp8", "fp8_e4m3")),
    _row("CUTLASS_MLA", "0.18.0", f"0.18.0 {_MLA}cutlass_mla.py:40-46 + float16; MLA head sizes 320, 576",
         kv=KV_18 + ("fp8", "fp8_e4m3"), heads=MLA_HEADS_18),
    _row("CUTLASS_MLA", "0.30.0", "0.30.0 MLA head sizes 320, 512, 576", heads=MLA_HEADS_30),
    _row("TOKENSPEED_MLA", "0.21.0", f"0.21.0 {_MLA}tokenspeed_mla.py:59-124: KV dtypes fp8, fp8_e4m3 (:61-64); "
         "capability major 10 (:82-84); needs the tokenspeed_mla package (:86-124; not in vLLM's requirements, "
         "assumed absent)", mla=True, kv=("fp8", "fp8_e4m3"), heads=MLA_HEADS_18, cap="10.x",
         combo=("tokenspeed_absent",), kernel=(32, 64)),
    _row("TRITON_MLA", "0.14.0", f"0.14.0 {_MLA}triton_mla.py:29-43: KV dtype auto (:31); any capability (:41-43); "
         "TritonMLAImpl refuses a quantized KV cache ('TritonMLA V1 with FP8 KV cache not yet supported')",
         mla=True, heads=MLA_HEADS_14, refuse=("triton_mla_v1_fp8",)),
    _row("TRITON_MLA", "0.15.0", f"0.15.0 {_MLA}triton_mla.py:31-34 + bfloat16", kv=("auto", "bfloat16")),
    _row("TRITON_MLA", "0.18.0", f"0.18.0 {_MLA}triton_mla.py:32-52: + float16, fp8, fp8_e4m3; any head size; "
         "kernel [MultipleOf(16)]; block size a multiple of 16; the impl takes fp8", kv=KV_18 + ("fp8", "fp8_e4m3"),
         heads=(), kernel=("*16",), block_ok="*16", refuse=()),
    _row("TRITON_MLA", "0.26.0", f"0.26.0 {_MLA}triton_mla.py:183-204 TritonMLAImpl: on CUDA an fp8 KV cache below "
         "SM89 is refused", refuse=("triton_mla_fp8_sm89",)),
    # --- CUDA, sparse MLA (DeepSeek-V3.2's DSA: a model with index_topk)
    _row("FLASHMLA_SPARSE", "0.14.0", f"0.14.0 {_MLA}flashmla_sparse.py:73-108: dtype bf16 only (:75); KV dtypes "
         "auto, fp8_ds_mla (:76); head size 576 (:94-96); capability major 9 or 10 (:106-108); kernel [64] (:78-80)",
         mla=True, sparse=True, dtypes=BF16, kv=("auto", "fp8_ds_mla"), heads=(576,), cap="9.x|10.x", kernel=(64,)),
    _row("FLASHMLA_SPARSE", "0.15.0", f"0.15.0 {_MLA}flashmla_sparse.py:79-83 + bfloat16",
         kv=("auto", "bfloat16", "fp8_ds_mla")),
    _row("FLASHMLA_SPARSE", "0.18.0", f"0.18.0 {_MLA}flashmla_sparse.py:82-87 + fp8 (an alias of fp8_ds_mla); "
         "model_executor/layers/attention/mla_attention.py:342-356: an fp8 KV cache becomes fp8_ds_mla",
         kv=("auto", "bfloat16", "fp8_ds_mla", "fp8"), kv_format="ds_mla"),
    _row("FLASHMLA_SPARSE", "0.20.0", f"0.20.0 {_MLA}flashmla_sparse.py:118-121 head sizes 512, 576", heads=(512, 576)),
    _row("FLASHMLA_SPARSE", "0.22.0", f"0.22.0 {_MLA}flashmla_sparse.py:118-124 head size 576", heads=(576,)),
    _row("FLASHMLA_SPARSE", "0.31.0", f"0.31.0 {_MLA}flashmla_sparse.py:157-223 head sizes 576, 512 (512: bf16 NoPE "
         "on SM90 only)", heads=(576, 512), combo=("flashmla_sparse_512",)),
    _row("FLASHINFER_MLA_SPARSE", "0.17.0", f"0.17.0 {_MLA}flashinfer_mla_sparse.py:54-128: dtypes fp16/bf16 (:62); "
         "KV dtypes auto, bfloat16 (:63-66); head size 576 (:84-86); capability major 10 (:96-99); "
         "qk_nope_head_dim == 128 and index_topk (:101-128); kernel [32, 64] (:68-70)",
         mla=True, sparse=True, kv=("auto", "bfloat16"), heads=(576,), cap="10.x",
         combo=("qk_nope_128_sparse", "index_topk_fi"), kernel=(32, 64)),
    _row("FLASHINFER_MLA_SPARSE", "0.18.0", f"0.18.0 {_MLA}flashinfer_mla_sparse.py:63-69 + float16, fp8, fp8_e4m3",
         kv=KV_18 + ("fp8", "fp8_e4m3")),
    _row("FLASHINFER_MLA_SPARSE", "0.19.0", f"0.19.0 {_MLA}flashinfer_mla_sparse.py:104-131 qk_nope_head_dim in "
         "[128, 192]", combo=("qk_nope_128_192_sparse", "index_topk_fi")),
    _row("FLASHINFER_MLA_SPARSE", "0.24.0", f"0.24.0 {_MLA}flashinfer_mla_sparse.py:68-125 "
         "(FlashInferMLASparseTRTLLMBackend): fp8_ds_mla refused", combo=("no_fp8_ds_mla", "qk_nope_128_192_sparse",
                                                                          "index_topk_fi")),
    _row("FLASHINFER_MLA_SPARSE", "0.30.0", f"0.30.0 {_MLA}flashinfer_mla_sparse.py:56-61 head sizes 512, 576",
         heads=(512, 576)),
    _row("FLASHINFER_MLA_SPARSE_SM120", "0.24.0", f"0.24.0 {_MLA}flashinfer_mla_sparse.py:142-218: dtype bf16 "
         "(:145); KV dtypes auto, fp8, fp8_e4m3, fp8_ds_mla (:146-151); capability major 12 (:169-171); index_topk "
         "2048 (:173-218); kernel [64, 256]; model_executor/layers/attention/mla_attention.py:323-336: auto / fp8 / "
         "fp8_e4m3 become fp8_ds_mla", mla=True, sparse=True, dtypes=BF16,
         kv=("auto", "fp8", "fp8_e4m3", "fp8_ds_mla"), heads=(576,), cap="12.x", combo=("index_topk_2048",),
         kernel=(64, 256), kv_format="ds_mla_sm120"),
    _row("FLASHINFER_MLA_SPARSE_SM120", "0.30.0", "0.30.0 head sizes 512, 576", heads=(512, 576)),
    _row("FLASH_ATTN_MLA_SPARSE", "0.25.0", f"0.25.0 {_MLA}flashattn_mla_sparse.py:32-103: dtypes fp16/bf16; KV "
         "dtypes auto, float16, bfloat16 (:34-38); capability major 9 (:68-70); FP16/BF16 KV only, "
         "flash_attn_supports_mla(), index_topk (:72-103); kernel [64] (:40-42)", mla=True, sparse=True, kv=KV_18,
         cap="9.x", combo=("fa_mla_sparse_kv", "fa_mla", "index_topk_fa"), kernel=(64,)),
    _row("FLASHINFER_MLA_SPARSE_SM90", "0.30.0", f"0.30.0 {_MLA}flashinfer_mla_sparse_sm90.py:68-141: dtype bf16; KV "
         "dtypes auto, bfloat16, fp8, fp8_e4m3; head sizes 512, 576; capability major 9; needs FlashInfer's SM90 "
         "NoPE MLA (>= 0.6.18: has_flashinfer_sm90_nope_mla, taken as absent as in the executed vectors)",
         mla=True, sparse=True, dtypes=BF16, kv=("auto", "bfloat16", "fp8", "fp8_e4m3"), heads=(512, 576), cap="9.x",
         combo=("fi_sm90_absent",), kernel=("*64",)),
    _row("FLASH_ATTN_MLA_SPARSE_FA4", "0.33.0", f"0.33.0 {_MLA}flashattn_mla_sparse.py:275-342: dtype bf16; KV "
         "dtypes auto, bfloat16; head size 576; capability major 10 (FlashInferMLASparseTRTLLMBackend's); "
         "(kv_lora_rank, qk_rope_head_dim) == (512, 64) and 8 - 128 query heads a rank", mla=True, sparse=True,
         dtypes=BF16, kv=("auto", "bfloat16"), heads=(576,), cap="10.x",
         combo=("fa4_sparse_dims", "no_fp8_ds_mla", "qk_nope_128_192_sparse", "index_topk_fi"), kernel=("*64",)),
    # --- ROCm (0.14-0.17 choose by an if-chain that validates nothing: attn_rules.ROCM_CHAIN)
    _row("ROCM_ATTN", "0.14.0", f"0.14.0 {_ROCM}:157-183: dtypes fp16/bf16/fp32; head sizes 32 - 256 by 32 and 96 "
         "(:181-183; 0.17.0:183-185 + 80); kernel [16, 32, 544]", dtypes=F16_BF16_F32, kv=None,
         heads=(32, 64, 80, 96, 128, 160, 192, 224, 256), sliding=True, kernel=(16, 32, 544), kv_first=True),
    _row("ROCM_ATTN", "0.18.0", f"0.18.0 {_ROCM}:167-198: KV dtypes auto, float16, bfloat16, fp8, fp8_e4m3, fp8_e5m2; "
         "sinks; kernel [MultipleOf(16)]", kv=KV_18 + FP8_ALL, sink="yes", kernel=("*16",)),
    _row("ROCM_ATTN", "0.19.0", f"0.19.0 {_ROCM}:196-201 supports_sink: False", sink="no"),
    _row("ROCM_ATTN", "0.23.0", f"0.23.0 {_ROCM}:211-215 supports_kv_connector: False", connector=False),
    _row("ROCM_AITER_FA", "0.14.0", f"0.14.0 {_AFA}:517-527: dtypes fp16/bf16; head sizes 64, 128, 256; kernel [16, "
         "32] (0.16.0:682-684; the 0.29-0.31 shuffled-KV 128 is off by default); the impl takes no sinks "
         "(AiterFlashAttentionImpl.__init__, no sinks argument before 0.23.0)", heads=(64, 128, 256), kv=None,
         sliding=True, kernel=(16, 32), refuse=("aiter_fa_sinks",), kv_first=True),
    _row("ROCM_AITER_FA", "0.18.0", f"0.18.0 {_AFA}:737-795: KV dtypes auto, float16, bfloat16, fp8, fp8_e4m3, "
         "fp8_e5m2; MI300-class only (on_mi3xx; 0.27.0:777-784 get_cdna_version() > 2, the same targets)",
         kv=KV_18 + FP8_ALL, cap="mi3xx"),
    _row("ROCM_AITER_FA", "0.23.0", f"0.23.0 {_AFA}:713-715 supports_sink: True", sink="yes", refuse=()),
    _row("ROCM_AITER_UNIFIED_ATTN", "0.14.0", f"0.14.0 {_AUA}:24: RocmAttentionBackend's checks", dtypes=F16_BF16_F32,
         kv=None, heads=(32, 64, 96, 128, 160, 192, 224, 256), sliding=True, kernel=(16, 32, 544), kv_first=True),
    _row("ROCM_AITER_UNIFIED_ATTN", "0.18.0", f"0.18.0 {_AUA}:28-48: head_size >= 32; block size a multiple of 16; "
         "sinks; RocmAttentionBackend's KV dtypes", heads=">=32", kv=KV_18 + FP8_ALL, sink="yes", kernel=("*16",),
         block_ok="*16"),
    _row("ROCM_AITER_UNIFIED_ATTN", "0.19.0", f"0.19.0 {_AUA}:32-37 get_preferred_block_size: 64 ('[ROCM_AITER_"
         "UNIFIED_ATTN]: Setting kv cache block size to 64.')", preferred=64),
    _row("ROCM_AITER_UNIFIED_ATTN", "0.23.0", f"0.23.0 {_AUA}: RocmAttentionBackend.supports_kv_connector False "
         "(inherited)", connector=False),
    _row("ROCM_AITER_UNIFIED_ATTN", "0.25.0", f"0.25.0 {_AUA}:30-36: dtype bf16 only; KV dtypes auto, bfloat16, "
         "fp8, fp8_e4m3", dtypes=BF16, kv=("auto", "bfloat16", "fp8", "fp8_e4m3")),
    _row("ROCM_AITER_UNIFIED_ATTN", "0.26.0", f"0.26.0 {_AUA}:30-38: dtypes fp16/bf16; KV dtypes auto, float16, "
         "bfloat16, fp8, fp8_e4m3, fp8_e5m2", dtypes=F16_BF16, kv=KV_18 + FP8_ALL),
    _row("ROCM_AITER_UNIFIED_ATTN", "0.30.0", f"0.30.0 {_AUA}:96-98 supports_kv_connector: True", connector=True),
    _row("ROCM_AITER_MLA", "0.14.0", f"0.14.0 {_MLA}rocm_aiter_mla.py:23-26: kernel [1] (0.20.0: [MultipleOf(1)])",
         mla=True, kv=None, heads=MLA_HEADS_14, kernel=(1,)),
    _row("ROCM_AITER_MLA", "0.18.0", f"0.18.0 {_MLA}rocm_aiter_mla.py:26-38: dtypes fp16/bf16; KV dtypes auto, "
         "float16, bfloat16, fp8, fp8_e4m3, fp8_e5m2; any head size", kv=KV_18 + FP8_ALL, heads=()),
    _row("ROCM_AITER_TRITON_MLA", "0.14.0", f"0.14.0 {_MLA}aiter_triton_mla.py:6 (AiterMLABackend's checks)",
         mla=True, kv=None, heads=MLA_HEADS_14, kernel=(1,)),
    _row("ROCM_AITER_TRITON_MLA", "0.18.0", "0.18.0 AiterMLABackend's checks", kv=KV_18 + FP8_ALL, heads=()),
    _row("ROCM_AITER_MLA_SPARSE", "0.14.0", f"0.14.0 {_MLA}rocm_aiter_mla_sparse.py:33-68: head size 576",
         mla=True, sparse=True, kv=None, heads=(576,)),
    _row("ROCM_AITER_MLA_SPARSE", "0.18.0", f"0.18.0 {_MLA}rocm_aiter_mla_sparse.py:82-125: dtypes fp16/bf16; KV "
         "dtypes auto, float16, bfloat16; any head size; kernel [1]", kv=KV_18, heads=(), kernel=(1,)),
    _row("ROCM_AITER_MLA_SPARSE", "0.21.0", f"0.21.0 {_MLA}rocm_aiter_mla_sparse.py:266-276: + fp8, fp8_e4m3; kernel "
         "[1, 64] (0.28.0: [1, MultipleOf(16)])", kv=KV_18 + ("fp8", "fp8_e4m3"), kernel=(1, 64)),
    _row("ULTRAQUANT", "0.32.0", "0.32.0 v1/attention/backends/ultraquant_attn.py:63-99: only ultraquant_4bit",
         kv=("ultraquant_4bit",)),
    _row("ROCM_OCTAVE", "0.33.0", "0.33.0 v1/attention/backends/rocm_octave_attn.py:94-126: only octave_* KV dtypes",
         kv=("octave_k3v4", "octave_k3v3", "octave_k3v3_compact")),
    # --- fixed, not selected: DeepSeek-V3.2's indexer cache (v1/attention/backends/mla/indexer.py)
    _row("DEEPSEEK_V32_INDEXER", "0.14.0", f"0.14.0 {_MLA}indexer.py:27-34: kernel [1] on ROCm (0.21.0 [1, 64], "
         "0.28.0 [1, MultipleOf(16)]: 1 divides every size), [64] on CUDA", kv=None, kernel=("rocm:1", "cuda:64")),
)

_BY_NAME: dict[str, list[Written]] = {}
for _w in WRITTEN:
    _BY_NAME.setdefault(_w[0], []).append(_w)
_RESOLVED: dict[str, tuple[BackendRow, ...]] = {}


def rows_of(name: str) -> tuple[BackendRow, ...]:
    """Every row of backend `name`, in release order, each with its previous row's fields carried over."""
    rows = _RESOLVED.get(name)
    if rows is None:
        out: list[BackendRow] = []
        for _, first, evidence, changes in _BY_NAME.get(name, ()):
            base = {} if not out else {k: getattr(out[-1], k) for k in BackendRow.__annotations__
                                        if k not in ("name", "first", "evidence")}
            release = tuple(int(x) for x in first.split("."))
            out.append(BackendRow(name=name, first=release, evidence=evidence,  # type: ignore[arg-type]
                                  **{**base, **changes}))
        rows = _RESOLVED[name] = tuple(out)
    return rows


def backend_row(name: str, release: Release) -> BackendRow | None:
    """The row of `name` that holds on `release` (None: the release has no such backend yet)."""
    found = None
    for row in rows_of(name):
        if release >= row.first:
            found = row
    return found
