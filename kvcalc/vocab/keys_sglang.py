"""The layout keys of engine sglang: one Key row per key of the `sglang` section (vocab/keys.py splices them into
KEYS, in this order). SGLang's spellings on a serve line are read by inputs/serve/sglang.py; cache.max_model_len is
--context-length, cache.kv_cache_dtype --kv-cache-dtype, parallel.* --tp-size / --pp-size / --dp-size. Pure data."""

from __future__ import annotations

from .releases import DEFAULT_SGLANG_VERSION, SGLANG_RELEASES
from .units import SIZE_HELP

# --cuda-graph-backend-{decode,prefill} (srt/model_executor/cuda_graph_config.py ALLOWED_BACKENDS_PER_PHASE: every
# release's parser lists its own; tc_piecewise until 0.5.19).
GRAPH_BACKENDS = ("full", "breakable", "tc_piecewise", "disabled")


def _memory(_k) -> tuple:
    """The release and the memory flags."""
    return (
    _k("sglang", "section", "engine sglang: SGLang's release, memory flags and HiCache"),
    _k("sglang.version", "choice", f"the SGLang release, {SGLANG_RELEASES[0]} - {SGLANG_RELEASES[-1]} (quoted)",
       default=DEFAULT_SGLANG_VERSION, choices=SGLANG_RELEASES, flag=("--sglang-version",), name="sglang_version",
       panel="release", help=f"SGLang release, {SGLANG_RELEASES[0]} - {SGLANG_RELEASES[-1]} (default "
                             f"{DEFAULT_SGLANG_VERSION}); with --engine sglang"),
    _k("sglang.mem_fraction_static", "fraction", "--mem-fraction-static (null: SGLang's default for the GPU)",
       nullable=True, flag=("--mem-fraction-static",), name="mem_fraction_static", panel="gpu",
       help="SGLang's --mem-fraction-static (default: SGLang's for the GPU, TP x PP and chunked prefill)"),
    _k("sglang.max_total_tokens", "int", "--max-total-tokens: a cap on the token pool", minimum=1, nullable=True,
       flag=("--max-total-tokens",), name="max_total_tokens", panel="cache", help="SGLang: cap the token pool"),
    _k("sglang.page_size", "int", "--page-size: tokens per page (null: the attention backend's, 1 or 64)", minimum=1,
       cap=1 << 20, nullable=True, flag=("--page-size",), name="page_size", panel="cache",
       help="SGLang: tokens per page (default: the attention backend's)"),
    _k("sglang.chunked_prefill_size", "int", "--chunked-prefill-size (null: the GPU tier's; -1 or 0: no chunked "
       "prefill)", minimum=-1,
       nullable=True, flag=("--chunked-prefill-size",), name="chunked_prefill_size", panel="gpu",
       help="SGLang: tokens per prefill chunk (default: the GPU tier's; -1: no chunked prefill)"),
    )


def _graphs(_k) -> tuple:
    """The CUDA-graph flags (mem_fraction_static's reserve)."""
    return (
    _k("sglang.cuda_graph_max_bs", "int", "--cuda-graph-max-bs-decode (until 0.5.19 also --cuda-graph-max-bs; "
       "null: the GPU tier's)", minimum=1, nullable=True, flag=("--cuda-graph-max-bs", "--cuda-graph-max-bs-decode"),
       name="cuda_graph_max_bs", panel="gpu", help="SGLang: the decode graphs' max batch"),
    _k("sglang.disable_cuda_graph", "bool", "--disable-cuda-graph: no graph reserve", default=False,
       flag=("--disable-cuda-graph",), name="disable_cuda_graph", panel="gpu", help="SGLang: no CUDA graphs"),
    _k("sglang.cuda_graph_bs_decode", "ints", "--cuda-graph-bs-decode: the decode graphs' batch sizes (their max is "
       "the max batch)", minimum=1, nullable=True, flag=("--cuda-graph-bs-decode",), name="cuda_graph_bs_decode",
       panel="gpu", help="SGLang: the decode graphs' batch sizes, comma-separated (1,2,4,8)"),
    _k("sglang.cuda_graph_max_bs_prefill", "int", "--cuda-graph-max-bs-prefill: the prefill graphs' largest token "
       "count (null: chunked_prefill_size)", minimum=1, nullable=True, flag=("--cuda-graph-max-bs-prefill",),
       name="cuda_graph_max_bs_prefill", panel="gpu", help="SGLang: the prefill graphs' largest capture (tokens)"),
    _k("sglang.cuda_graph_bs_prefill", "ints", "--cuda-graph-bs-prefill: the prefill graphs' token counts", minimum=1,
       nullable=True, flag=("--cuda-graph-bs-prefill",), name="cuda_graph_bs_prefill", panel="gpu",
       help="SGLang: the prefill graphs' capture sizes, comma-separated (512,1024,2048)"),
    _k("sglang.cuda_graph_backend_decode", "choice", "--cuda-graph-backend-decode (null: full; disabled: no decode "
       "graphs)", choices=GRAPH_BACKENDS, nullable=True, flag=("--cuda-graph-backend-decode",),
       name="cuda_graph_backend_decode", panel="gpu", help="SGLang: " + " | ".join(GRAPH_BACKENDS)),
    _k("sglang.cuda_graph_backend_prefill", "choice", "--cuda-graph-backend-prefill (null: the release's default, "
       "turned off where SGLang turns it off; given: kept)", choices=GRAPH_BACKENDS, nullable=True,
       flag=("--cuda-graph-backend-prefill",), name="cuda_graph_backend_prefill", panel="gpu",
       help="SGLang: " + " | ".join(GRAPH_BACKENDS) + " (an explicit backend skips SGLang's auto-disable)"),
    _k("sglang.disable_prefill_cuda_graph", "bool", "--disable-prefill-cuda-graph", default=False,
       flag=("--disable-prefill-cuda-graph",), name="disable_prefill_cuda_graph", panel="gpu",
       help="SGLang: no prefill CUDA graphs"),
    _k("sglang.disable_decode_cuda_graph", "bool", "--disable-decode-cuda-graph", default=False,
       flag=("--disable-decode-cuda-graph",), name="disable_decode_cuda_graph", panel="gpu",
       help="SGLang: no decode CUDA graphs"),
    _k("sglang.max_prefill_tokens", "int", "--max-prefill-tokens (the activation reserve without chunked prefill)",
       default=16384, minimum=1, flag=("--max-prefill-tokens",), name="max_prefill_tokens", panel="gpu",
       help="SGLang: tokens of one prefill batch (default 16384; reserved when chunked prefill is off)"),
    )


def _gpu(_k) -> tuple:
    """Requests, the SWA ratio and the GPU's measured figures."""
    return (
    _k("sglang.max_running_requests", "int", "--max-running-requests", minimum=1, nullable=True,
       flag=("--max-running-requests",), name="max_running_requests", panel="cache",
       help="SGLang: requests running at once (default: from the token pool)"),
    _k("sglang.swa_full_tokens_ratio", "number", "--swa-full-tokens-ratio: hybrid SWA pool tokens per full-pool token",
       default=0.8, flag=("--swa-full-tokens-ratio",), name="swa_full_tokens_ratio", panel="cache",
       help="SGLang: SWA pool tokens per full-pool token (default 0.8)"),
    _k("sglang.gpu_capacity_mib", "int", "nvidia-smi memory.total in MiB, instead of gpu.name (what SGLang's defaults "
       "read)", minimum=1, nullable=True, flag=("--gpu-capacity-mib",), name="gpu_capacity_mib", panel="gpu",
       help="SGLang: the GPU's memory as nvidia-smi reports it, MiB"),
    _k("sglang.gpu_free_memory", "size", "free device memory before the weights load, as SGLang measures it "
       "(pre_model_load_memory; default: nvidia-smi's capacity less a gap from real logs)", nullable=True,
       flag=("--gpu-free-memory",), name="gpu_free_memory", panel="gpu",
       help=f"SGLang: free GPU memory before the weights load ('Load weight begin. avail mem'). SIZE: {SIZE_HELP}"),
    _k("sglang.weights_bytes", "size", "the weights on one GPU (free after load = free before - this; default: the "
       "parameter breakdown)", nullable=True, flag=("--weights-bytes",), name="weights_bytes", panel="gpu",
       help=f"SGLang: the weights on one GPU ('Load weight end ... mem usage'). SIZE: {SIZE_HELP}"),
    )


def _hicache(_k) -> tuple:
    """HiCache's host pool."""
    return (
    _k("sglang.hicache", "section", "--enable-hierarchical-cache and its flags: the host (L2) KV pool per rank"),
    _k("sglang.hicache.enabled", "bool", "--enable-hierarchical-cache", default=False,
       flag=("--enable-hierarchical-cache",), name="hicache", panel="offload",
       help="SGLang: HiCache, a pinned host KV pool per rank"),
    _k("sglang.hicache.ratio", "number", "--hicache-ratio: host tokens per device token (null: 2.0, 1.2 in "
       "buffer_only; 0.5.21+ reduced to fit the host when neither ratio nor size is given)", nullable=True,
       flag=("--hicache-ratio",), name="hicache_ratio", panel="offload", help="SGLang: host tokens per device token"),
    _k("sglang.hicache.size", "int", "--hicache-size: DECIMAL GB per rank, whole numbers (overrides the ratio)",
       default=0, minimum=0, cap=1 << 30, flag=("--hicache-size",), name="hicache_size", panel="offload",
       help="SGLang: host pool per rank in decimal GB (10^9 B), whole numbers"),
    _k("sglang.hicache.mem_layout", "choice", "--hicache-mem-layout", default="page_first",
       choices=("layer_first", "page_first", "page_first_direct", "page_first_kv_split", "page_head"),
       flag=("--hicache-mem-layout",), name="hicache_mem_layout", panel="offload",
       help="SGLang: layer_first | page_first | page_first_direct | page_first_kv_split | page_head"),
    _k("sglang.hicache.host_memory_mode", "choice", "--hicache-host-memory-mode (0.5.19+)", default="cache",
       choices=("cache", "buffer_only"), flag=("--hicache-host-memory-mode",), name="hicache_host_memory_mode",
       panel="offload", help="SGLang: cache | buffer_only (0.5.19+)"),
    _k("sglang.hicache.io_backend", "choice", "--hicache-io-backend", default="kernel", choices=("direct", "kernel"),
       flag=("--hicache-io-backend",), name="hicache_io_backend", panel="offload", help="SGLang: direct | kernel"),
    _k("sglang.hicache.write_policy", "choice", "--hicache-write-policy", default="write_through",
       choices=("write_back", "write_through", "write_through_selective"), flag=("--hicache-write-policy",),
       name="hicache_write_policy", panel="offload", help="SGLang: write_back | write_through | "
       "write_through_selective"),
    _k("sglang.hicache.storage_backend", "str", "--hicache-storage-backend: an L3 tier (file, mooncake, hf3fs, nixl, "
       "...), sized by its own config", nullable=True, flag=("--hicache-storage-backend",),
       name="hicache_storage_backend", panel="offload", help="SGLang: an L3 storage tier (named, not sized)"),
    _k("sglang.hicache.host_memory_fraction", "fraction", "--hicache-host-memory-fraction (0.5.21+ auto-size)",
       default=0.8, flag=("--hicache-host-memory-fraction",), name="hicache_host_memory_fraction", panel="offload",
       help="SGLang 0.5.21+: the host's share auto-sizing may use (default 0.8)"),
    )


def _deployment(_k) -> tuple:
    """DP attention, the radix cache, Mamba / GDN state, speculative decoding, multimodal."""
    return (
    _k("sglang.attn_dp_size", "int", "--attn-dp-size (or --enable-dp-attention with --dp-size): attention data "
       "parallelism inside TP (attention TP = TP / it)", default=1, minimum=1, cap=4096, flag=("--attn-dp-size",),
       name="attn_dp_size", panel="parallelism", help="SGLang: DP attention's width (attention TP = TP / this)"),
    _k("sglang.disable_radix_cache", "bool", "--disable-radix-cache", default=False, flag=("--disable-radix-cache",),
       name="disable_radix_cache", panel="cache", help="SGLang: no prefix (radix) cache"),
    _k("sglang.disable_overlap_schedule", "bool", "--disable-overlap-schedule (PP turns it on itself)", default=False,
       flag=("--disable-overlap-schedule",), name="disable_overlap_schedule", panel="cache",
       help="SGLang: no overlap schedule (the Mamba pool's tracking slots, the SWA cap's chunks in flight)"),
    _k("sglang.mamba_ssm_dtype", "choice", "--mamba-ssm-dtype (null: the config's mamba_ssm_dtype, else float32)",
       choices=("float32", "bfloat16", "float16"), nullable=True, flag=("--mamba-ssm-dtype",), name="mamba_ssm_dtype",
       panel="cache", help="SGLang: the Mamba / GDN SSM state's dtype (float32 | bfloat16 | float16)"),
    _k("sglang.max_mamba_cache_size", "int", "--max-mamba-cache-size: Mamba state slots (null: from the budget)",
       minimum=1, nullable=True, flag=("--max-mamba-cache-size",), name="max_mamba_cache_size", panel="cache",
       help="SGLang: Mamba / GDN state slots (default: mamba-full-memory-ratio of the budget)"),
    _k("sglang.mamba_full_memory_ratio", "number", "--mamba-full-memory-ratio: Mamba state bytes per KV byte",
       default=0.9, flag=("--mamba-full-memory-ratio",), name="mamba_full_memory_ratio", panel="cache",
       help="SGLang: the Mamba state pool's share, r / (1 + r) of the budget (default 0.9)"),
    _k("sglang.mamba_radix_cache_strategy", "choice", "--mamba-radix-cache-strategy (auto: extra_buffer for the "
       "hybrids modelled)", default="auto", choices=("auto", "no_buffer", "extra_buffer", "extra_buffer_lazy"),
       flag=("--mamba-radix-cache-strategy",), name="mamba_radix_cache_strategy", panel="cache",
       help="SGLang: auto | no_buffer | extra_buffer | extra_buffer_lazy (state slots per request)"),
    _k("sglang.speculative_algorithm", "choice", "--speculative-algorithm (EAGLE, EAGLE3, NEXTN and MTP: SGLang's "
       "EAGLE family)", choices=("EAGLE", "EAGLE3", "NEXTN", "MTP"), nullable=True,
       flag=("--speculative-algorithm",), name="speculative_algorithm", panel="input",
       help="SGLang: EAGLE | EAGLE3 | NEXTN | MTP (the draft's KV joins every token's cell)"),
    _k("sglang.speculative_draft_model_path", "path", "--speculative-draft-model-path: the draft's config.json (its "
       "layers)", flag=("--speculative-draft-model-path",), name="speculative_draft_model_path", panel="input",
       help="SGLang: the draft model's config.json or directory"),
    _k("sglang.speculative_num_draft_tokens", "int", "--speculative-num-draft-tokens (Mamba hybrids: the state "
       "pool's intermediate states)", minimum=1, nullable=True, flag=("--speculative-num-draft-tokens",),
       name="speculative_num_draft_tokens", panel="input", help="SGLang: draft tokens verified per step"),
    _k("sglang.speculative_num_steps", "int", "--speculative-num-steps", minimum=1, nullable=True,
       flag=("--speculative-num-steps",), name="speculative_num_steps", panel="input",
       help="SGLang: draft steps (kept; the pools do not read it)"),
    _k("sglang.speculative_eagle_topk", "int", "--speculative-eagle-topk", minimum=1, nullable=True,
       flag=("--speculative-eagle-topk",), name="speculative_eagle_topk", panel="input",
       help="SGLang: EAGLE's top-k (kept; the pools do not read it)"),
    _k("sglang.enable_multimodal", "bool", "--enable-multimodal (null: SGLang's default: off for Gemma-3, Llama-4, "
       "Step3-VL, Inkling)", nullable=True, flag=("--enable-multimodal",), name="enable_multimodal", panel="input",
       help="SGLang: serve the vision tower (Gemma-3 and Llama-4 are text-only without it)"),
    _k("sglang.language_only", "bool", "--language-only: the language half of an encoder-disaggregated pair",
       default=False, flag=("--language-only",), name="language_only", panel="input",
       help="SGLang: the language model of an encoder/language split (no VLM fraction adjustment)"),
    _k("sglang.language_model_only", "bool", "--language-model-only (0.5.19+): the language model alone",
       default=False, flag=("--language-model-only",), name="language_model_only", panel="input",
       help="SGLang 0.5.19+: load the language model alone (not multimodal)"),
    _k("sglang.vlm_cache_size_mb", "int", "SGLANG_VLM_CACHE_SIZE_MB: the multimodal embedding cache, off the KV "
       "budget", default=100, minimum=0, cap=1 << 30, flag=("--vlm-cache-size-mb",), name="vlm_cache_size_mb",
       panel="gpu", help="SGLang: SGLANG_VLM_CACHE_SIZE_MB (default 100), reserved off a multimodal model's budget"),
    _k("sglang.mm_feature_transport", "choice", "--mm-feature-transport (cuda_ipc / cuda_vmm add "
       "SGLANG_MM_FEATURE_CACHE_MB to the reservation)", default="cpu", choices=("cpu", "cuda_ipc", "cuda_vmm"),
       flag=("--mm-feature-transport",), name="mm_feature_transport", panel="gpu",
       help="SGLang: cpu | cuda_ipc | cuda_vmm (GPU transports reserve SGLANG_MM_FEATURE_CACHE_MB)"),
    _k("sglang.mm_feature_cache_mb", "int", "SGLANG_MM_FEATURE_CACHE_MB (GPU feature transports)", default=1024,
       minimum=0, cap=1 << 30, flag=("--mm-feature-cache-mb",), name="mm_feature_cache_mb", panel="gpu",
       help="SGLang: SGLANG_MM_FEATURE_CACHE_MB (default 1024) with --mm-feature-transport cuda_ipc / cuda_vmm"),
    )


def sglang_rows(_k) -> tuple:
    """The rows, made by keys.py's row factory, in the section's order."""
    return (*_memory(_k), *_graphs(_k), *_gpu(_k), *_deployment(_k), *_hicache(_k))
