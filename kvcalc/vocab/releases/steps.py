"""A behaviour step (one row of versions.STEPS), and the GPU memory model's steps: how each release turns the device
into the KV budget (v1/worker/gpu_worker.py determine_available_memory) and the defaults that feed it. Line numbers
are each wheel's (the gathered reading: /work/stage/gpu-memory/formula-by-release.md)."""

from __future__ import annotations


class Step:
    """One boundary of a behaviour: from release `first` on, `value` holds; `evidence` is the file (of `first`, and
    of the release before where it matters) that shows it. (A plain class: a NamedTuple costs ~0.7 M instructions
    to define, and start-up time is a target.)"""

    __slots__ = ("first", "value", "evidence")

    def __init__(self, first, value: object, evidence: str):
        self.first, self.value, self.evidence = first, value, evidence


CG_VAR = "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS"


def cg_env_enabled(value: str) -> bool:
    """The variable as envs.py reads it (0.18.0:1635-1637 ... 0.33.0:2219-2221: bool(int(os.getenv(CG_VAR, d)))): a
    ValueError where int() raises (vLLM stops at start-up)."""
    return bool(int(value))


MEMORY_STEPS: dict[str, tuple[Step, ...]] = {
    # A: requested - (weights + torch peak increase + non-torch increase); B: the same, CUDA graphs profiled inside the
    # measured block and logged, subtracted only with VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1 (default 0); C: the
    # estimate subtracted (default 1; Model Runner V2 estimates 0 up to 0.28); D: requested - (total consumed since
    # the init snapshot + transient peak headroom) - the estimate, graphs profiled after the measurement.
    "memory_budget": (
        Step((0, 0, 0), "A", "0.14.0 v1/worker/gpu_worker.py:341-343: requested_memory - non_kv_cache_memory "
                             "(weights + torch_peak_increase + non_torch_increase, utils/mem_utils.py:283-285)"),
        Step((0, 18, 0), "B", "0.18.0 gpu_worker.py:398-413: profile_cudagraph_memory() inside memory_profiling; "
                              "cg applied only if VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS (envs.py:1635-1637: "
                              "'0'); 0.17.0 gpu_worker.py:351-430 has no CUDA-graph profiling"),
        Step((0, 20, 0), "C", "0.20.0 envs.py:1724-1726: VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS default '1'; "
                              "gpu_worker.py:421-425 subtracts it (0.19.1 envs.py:1654-1656: '0')"),
        Step((0, 27, 0), "D", "0.27.0 utils/mem_utils.py:317-326: non_kv = total_consumed (init free - after free) "
                              "+ transient_peak_headroom; gpu_worker.py:512-517 profiles graphs after the block")),
    # The platforms whose workers profile the CUDA-graph estimate (0 elsewhere, whatever the variable says).
    "cudagraph_estimate_platforms": (
        Step((0, 0, 0), ("cuda",), "0.18.0 v1/worker/gpu_worker.py:398: `not current_platform.is_rocm()`; 0.21.0 "
                                   ":402-407, 0.25.1 :479: current_platform.is_cuda()"),
        Step((0, 26, 0), ("cuda", "rocm"), "0.26.0 v1/worker/gpu_worker.py:498-506: is_cuda_alike() (ROCm "
                                           "included, vllm#44825); 0.27.0 :508-517 the same"),
        Step((0, 31, 0), ("cuda", "rocm", "xpu"), "0.31.0 v1/worker/gpu_worker.py:635: is_cuda_alike() or is_xpu() "
                                                  "(0.33.0 :709)")),
    "default_gpu_memory_utilization": (
        Step((0, 0, 0), 0.9, "0.19.1 config/cache.py:41: gpu_memory_utilization = 0.9"),
        Step((0, 20, 0), 0.92, "0.20.0 config/cache.py:66: gpu_memory_utilization = 0.92")),
    # Which models run on Model Runner V2 by default (its CUDA-graph estimate is 0 up to 0.28.0).
    "mrv2_rule": (
        Step((0, 0, 0), "off", "0.21.0 envs.py:1711-1713: VLLM_USE_V2_MODEL_RUNNER default '0'"),
        Step((0, 22, 0), "qwen3", "0.22.0 config/vllm.py:69, 492-532: Qwen3ForCausalLM, dense, not quantized"),
        Step((0, 23, 0), "llama", "0.23.0 config/vllm.py:69-75: + LlamaForCausalLM, MistralForCausalLM"),
        Step((0, 24, 0), "listed", "0.24.0 config/vllm.py:68-77, 521-561: Qwen3, DeepseekV2, Qwen2Moe, GraniteMoe, "
                                   "Llama, Mistral; MoE and quantized allowed"),
        Step((0, 25, 0), "dense", "0.25.0 config/vllm.py:557-574: every dense generate model (+ the listed MoE); not "
                                  "hybrid"),
        Step((0, 29, 0), "all", "0.29.0 config/vllm.py:644-677: every model (unsupported features aside)")),
    "batch_class_large": (
        Step((0, 0, 0), False, "0.27.0 engine/arg_utils.py get_batch_defaults: >= 70 GiB is the top class"),
        Step((0, 28, 0), True, "0.28.0 engine/arg_utils.py:2582-2591: >= 160 GiB: 16384 tokens / 1024 seqs")),
    "batch_class_gb10_other": (
        Step((0, 0, 0), False, "0.32.0 engine/arg_utils.py get_batch_defaults: >= 70 GiB and not A100"),
        Step((0, 33, 0), True, "0.33.0 engine/arg_utils.py:2963, 2983-2987: GB10 (capability 12.1) in 'other'")),
    # vLLM's start-up refusal wording (No available memory for the cache blocks / To serve at least one request ...).
    "refusal_text": (
        Step((0, 0, 0), "v1", "0.21.0 v1/core/kv_cache_utils.py:615-643: \"models's max seq len\", no CPU clause"),
        Step((0, 22, 0), "v2", "0.22.0 v1/core/kv_cache_utils.py:697-728: \"model's\", CPU-backend clauses")),
    # The profile run's sampler, bytes per logit in quarters (engines/vllm/memory.py): before 0.17 top-k / top-p sort
    # every row (torch.sort: fp32 values and int64 indices, 12 B a logit more); 0.17 uses a Triton kernel for >= 8 rows.
    "sampler_quarters": (
        Step((0, 0, 0), 109, "0.16.0 v1/sample/ops/topk_topp_sampler.py:262 apply_top_k_top_p: logits.sort(dim=-1) on "
                             "every row"),
        Step((0, 17, 0), 61, "0.17.0 v1/sample/ops/topk_topp_sampler.py:245-255: a Triton top-k/top-p kernel for >= 8 "
                             "rows (no full-vocabulary sort)")),
    "max_capture_sm100": (
        Step((0, 0, 0), 512, "0.27.0 config/vllm.py _set_cudagraph_sizes: min(max_num_seqs x 2, 512)"),
        Step((0, 28, 0), 1024, "0.28.0 config/vllm.py:1938: 1024 on device capability family 100 (SM10x)")),
}


# Model-specific steps (DeepSeek-V4's groups and allocation, engines/vllm/dsv4.py) and the logged concurrency.
MODEL_STEPS: dict[str, tuple[Step, ...]] = {
    "concurrency_sum": (  # the logged maximum concurrency (equal pages: both give the same number)
        Step((0, 0, 0), False, "0.26.0 v1/core/kv_cache_utils.py:937-955: N / cdiv(n * sum M_g, page_0 * n)"),
        Step((0, 27, 0), True, "0.27.0 v1/core/kv_cache_utils.py:937-959: N / sum_g cdiv(M_g, page_g)")),
    "in_flight_reserve": (  # a sliding / chunked window keeps max_in_flight_tokens, not one batch's tokens
        Step((0, 0, 0), False, "0.25.1 v1/kv_cache_interface.py SlidingWindowSpec.max_memory_usage_bytes: "
                               "sliding_window - 1 + max_num_batched_tokens"),
        Step((0, 26, 0), True, "0.26.0 v1/kv_cache_interface.py:584,595 and config/vllm.py:525-533: "
                               "max_in_flight_tokens = max_concurrent_batches x max_num_batched_tokens")),
    "dsv4_fp4_indexer_row": (  # --attention-config use_fp4_indexer_cache: a row of its own (tools/logcheck refuses)
        Step((0, 0, 0), False, "0.26.0 models/deepseek_v4/attention.py:729-734: the MXFP4 indexer cache allocates "
                               "the FP8 row's 132 B"),
        Step((0, 27, 0), True, "0.27.0 models/deepseek_v4/attention.py:781-784: 64 packed values + 4 UE8M0 scales = "
                               "68 B")),
    "dsv4_grouping": (  # DeepSeek-V4's groups (engines/vllm/dsv4.py)
        Step((0, 0, 0), "padded", "0.20.0 v1/core/kv_cache_utils.py:1481-1579: keyed sets, state pages padded to "
                                  "the nearest MLA page (:1549)"),
        Step((0, 27, 0), "keyed", "0.27.0 v1/core/kv_cache_utils.py:1670-1756: keyed sets, no cross-group padding"),
        Step((0, 29, 0), "packed", "0.29.0 v1/core/kv_cache_utils.py:1668-1790 _get_packed_kv_cache_groups")),
    "dsv4_layout": (  # DeepSeek-V4's bytes per block id (engines/vllm/dsv4.py allocate)
        Step((0, 0, 0), "tuples", "0.20.0 v1/core/kv_cache_utils.py:1162-1216 _get_kv_cache_config_deepseek_v4"),
        Step((0, 23, 0), "buckets", "0.23.0 v1/core/kv_cache_utils.py:1196-1244 slots per page size"),
        Step((0, 27, 0), "slab", "0.27.0 v1/core/kv_cache_utils.py:1283-1358 _get_packed_kv_cache_layout"),
        Step((0, 29, 0), "packed", "0.29.0 v1/core/kv_cache_utils.py:1407-1500 one backing allocation")),
    "dsv4_auto_kv_dtype": (
        Step((0, 0, 0), False, "0.29.0 models/deepseek_v4/attention.py _resolve_dsv4_kv_cache_dtype: asserts fp8"),
        Step((0, 30, 0), True, "0.30.0 models/deepseek_v4/attention.py:109-110: auto -> fp8 -> fp8_ds_mla")),
}
