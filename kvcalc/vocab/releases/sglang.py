"""SGLang as the serving engine, as data: the releases kvcalc read, what differs between them (STEPS, each boundary
with the file that shows it on both sides), the GPUs SGLang sizes its defaults from (nvidia-smi's MiB, not torch's
total) and the architectures SGLang runs on a sliding-window (hybrid SWA) pool. Read from the wheels
(`pip download sglang==X --no-deps`, sglang/srt/...); imported only for SGLang plans (start-up time is a target).

The rules that hold in every release read (0.5.14 - 0.5.23) are cited where they are used (engines/sglang/,
backends/hicache.py); this module holds only what changes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..devices import Device
from ..errors import InternalError, UnsupportedError
from ..records import record
from . import DEFAULT_SGLANG_VERSION, SGLANG_RELEASES
from .steps import Step

if TYPE_CHECKING:
    from ..layout import Layout

Release = tuple[int, int, int, int]  # (0, 5, 15, 1) for 0.5.15.post1


def parse_release(text: str) -> Release:
    """'0.5.15.post1' -> (0, 5, 15, 1); a release kvcalc did not read is refused with the list."""
    if text not in SGLANG_RELEASES:
        raise UnsupportedError(f"SGLang {text!r} is not a release kvcalc models: {', '.join(SGLANG_RELEASES)} (read "
                               "from their wheels; older releases size their pools by rules kvcalc has not read)")
    main, _, post = text.partition(".post")
    a, b, c = (int(x) for x in main.split("."))
    return a, b, c, int(post or 0)


STEPS: dict[str, tuple[Step, ...]] = {
    # The GPU tier SGLang sizes chunked_prefill_size and the decode graphs' max batch from (20 - 35 GiB: A10, L4,
    # 4090, 5090): (chunked_prefill_size, max_bs at TP < 4, max_bs at TP >= 4). The other tiers are the same in every
    # release read (engines/sglang/memory.py TIERS).
    "small_gpu_tier": (
        Step((0, 5, 14, 0), (2048, 24, 80), "0.5.19 srt/arg_groups/memory_hook.py:74-87 (0.5.14 srt/server_args.py:"
                                            "3157-3170): chunked_prefill_size 2048, max_bs 24 if tp < 4 else 80"),
        Step((0, 5, 20, 0), (4096, 48, 160), "0.5.20 srt/arg_groups/memory_hook.py:100-116: chunked_prefill_size 4096, "
                                             "max_bs 48 if tp < 4 else 160")),
    # The decode graphs' reserve (max_bs x 2 MiB) with --disable-cuda-graph: still counted, or not.
    "decode_reserve_without_graphs": (
        Step((0, 5, 14, 0), True, "0.5.14 srt/server_args.py:3284-3285: reserved_mem += decode max_bs x 2, whatever "
                                  "the decode backend"),
        Step((0, 5, 15, 0), False, "0.5.15 srt/server_args.py:3639-3643: only when the decode backend is not "
                                   "DISABLED")),
    # --context-length caps the prefill graphs' max batch (so their count in the reserve).
    "prefill_graphs_clamped_to_context": (
        Step((0, 5, 14, 0), True, "0.5.16 srt/server_args.py:4039-4045 (0.5.14 :3261-3267): min(prefill max_bs, "
                                  "context_length) when --context-length is given"),
        Step((0, 5, 17, 0), False, "0.5.17 srt/server_args.py:4607-4870 _handle_gpu_memory_settings: no "
                                   "context_length clamp")),
    # With PP > 1 an opt-in breakable prefill graph (--cuda-graph-backend-prefill breakable) captures at most 8,192
    # tokens unless its sizes are given.
    "pp_prefill_graph_cap": (
        Step((0, 5, 14, 0), None, "0.5.18 srt/server_args.py _handle_gpu_memory_settings: no PP cap"),
        Step((0, 5, 19, 0), 8192, "0.5.19 srt/arg_groups/memory_hook.py:23, 196-204: "
                                  "_DEFAULT_PP_PREFILL_CUDA_GRAPH_MAX_TOKENS when pp_size > 1 and the backend is "
                                  "breakable")),
    # The prefill CUDA graph's default backend (srt/model_executor/cuda_graph_config.py default_cuda_graph_config).
    "default_prefill_backend": (
        Step((0, 5, 14, 0), "tc_piecewise", "0.5.14 srt/model_executor/cuda_graph_config.py:91: prefill backend "
                                            "TC_PIECEWISE"),
        Step((0, 5, 15, 0), "breakable", "0.5.15 srt/model_executor/cuda_graph_config.py:95: prefill backend "
                                         "BREAKABLE")),
    # On ROCm (torch.version.hip set: an AMD GPU) the default prefill graph is off in every release read, three ways;
    # executed on a mocked MI300X / MI355X for each release (tests/fixtures/sglang/rocm_vectors.json).
    "rocm_prefill_backend": (
        Step((0, 5, 14, 0), "disabled",
             "0.5.14 - 0.5.21: the default TC_PIECEWISE (0.5.14 srt/model_executor/cuda_graph_config.py:91 on every "
             "platform; 0.5.15 :95-101 - 0.5.21 :122-131 default_prefill_backend 'BREAKABLE if is_cuda() else "
             "TC_PIECEWISE') is turned off by the tc_piecewise rule 'non-CUDA hardware (HIP/NPU/CPU/MPS/XPU)' "
             "(0.5.14 srt/server_args.py:3011, 0.5.18 :4605, 0.5.19 - 0.5.21 srt/arg_groups/cuda_graph_hook.py:185); "
             "0.5.22 - 0.5.23 cuda_graph_config.py:119-123 'BREAKABLE if is_cuda() else DISABLED'"),),
    # PP > 1 turns the default prefill graph off (no prefill-graph reserve), unless the backend is given.
    "pp_prefill_graph": (
        Step((0, 5, 14, 0), "off", "0.5.14 srt/server_args.py:3009 _disable_tc_piecewise_cudagraph_if_incompatible: "
                                   "'pipeline parallelism (pp_size > 1)'"),
        Step((0, 5, 15, 0), "kept", "0.5.15 srt/server_args.py:3341 (0.5.18 :4666) "
                                    "_disable_breakable_cudagraph_if_incompatible: no PP rule"),
        Step((0, 5, 19, 0), "off", "0.5.19 srt/arg_groups/cuda_graph_hook.py:118-134 apply_cuda_graph_compatibility: "
                                   "'PP prefill graph replay is opt-in'")),
    # An MLA attention backend turns the default (breakable) prefill graph off: its 1.5 GiB reserve goes.
    "mla_prefill_graph": (
        Step((0, 5, 14, 0), "kept", "0.5.14 srt/server_args.py:3009: the tc_piecewise rules have no MLA rule"),
        Step((0, 5, 15, 0), "off", "0.5.15 srt/server_args.py:3341 breakable rules: 'MLA attention' (0.5.17 :4452: "
                                   "'MLA attention (non-DSA)')"),
        Step((0, 5, 18, 0), "kept", "0.5.18 srt/server_args.py:4666: no MLA rule")),
    # HiCache (--enable-hierarchical-cache) turns the default prefill graph off.
    "hicache_prefill_graph": (
        Step((0, 5, 14, 0), "off", "0.5.14 srt/server_args.py:3009 tc_piecewise rules: 'CPU offload / hierarchical "
                                   "cache'"),
        Step((0, 5, 15, 0), "kept", "0.5.15 srt/server_args.py:3341: the breakable rules have no HiCache rule")),
    # DP attention turns the default prefill graph off.
    "dp_attention_prefill_graph": (
        Step((0, 5, 14, 0), "off", "0.5.14 srt/server_args.py:3009 tc_piecewise rules: 'DP attention'"),
        Step((0, 5, 17, 0), "kept", "0.5.17 srt/server_args.py:4452 breakable rules: no DP attention rule (0.5.15 - "
                                    "0.5.16 :3341, :3763 have one)")),
    # The Mamba / GDN state pool, DP attention's per-rank pools, the speculative draft's cells, the multimodal
    # budget reservation and the SWA request cap: executed for 0.5.23 only (kv_cache_configurator.py /
    # pool_configurator.py; earlier releases size them in code whose API moved and was not run).
    "deployment_pools": (
        Step((0, 5, 14, 0), False, "0.5.22 srt/mem_cache/kv_cache_configurator.py: not executed"),
        Step((0, 5, 23, 0), True, "0.5.23 srt/mem_cache/kv_cache_configurator.py:2990-3409, "
                                  "srt/model_executor/pool_configurator.py:219-1046: executed "
                                  "(tests/fixtures/sglang/executed_vectors.json)")),
    # A multimodal model's budget loses SGLANG_VLM_CACHE_SIZE_MB (+ the GPU feature transports' cache), or not.
    "mm_budget_reservation": (
        Step((0, 5, 14, 0), False, "0.5.17 srt/mem_cache: no mm_runtime_reservation_gb; the embedding cache is "
                                   "allocated after the KV pool (0.5.14 srt/mem_cache/kv_cache_builder.py:239-240)"),
        Step((0, 5, 18, 0), True, "0.5.18 srt/mem_cache/kv_cache_configurator.py:130-150 mm_runtime_reservation_gb, "
                                  "subtracted at :1785-1789 (the same function through 0.5.23 :202-219, executed "
                                  "there)")),
    # The host memory HiCache may use: psutil's available, or min(that, the container's cgroup headroom).
    "cgroup_headroom": (
        Step((0, 5, 14, 0), False, "0.5.20 srt/mem_cache/pool_host/base.py: psutil.virtual_memory().available alone "
                                   "(no srt/mem_cache/host_memory.py)"),
        Step((0, 5, 21, 0), True, "0.5.21 srt/mem_cache/host_memory.py available_host_memory_bytes: min(psutil, "
                                  "_cgroup_memory_headroom); 0.5.23 :41-161")),
    # The cgroup's usage counts its page cache (0.5.21: "charged file cache is not assumed reclaimable") or not
    # (active_file + inactive_file credited). Both executed on a cgroup2 tree (notes/sglang2/cgroup_exec.py).
    "cgroup_page_cache": (
        Step((0, 5, 14, 0), "charged", "0.5.21 srt/mem_cache/host_memory.py:80 usage = memory.current, :94 "
                                       "'charged file cache is not assumed reclaimable'"),
        Step((0, 5, 22, 0), "reclaimable", "0.5.22 srt/mem_cache/host_memory.py:93-123 usage - (active_file + "
                                           "inactive_file) (0.5.23 the same)")),
    # An MLA backend's prefill graphs capture up to: 2,048 tokens, or min(8,192, chunked_prefill_size).
    "mla_prefill_max_bs": (
        Step((0, 5, 14, 0), 2048, "0.5.22 srt/arg_groups/memory_hook.py:240: prefill max_bs = 2048 for an MLA "
                                  "backend (0.5.14 srt/server_args.py:3246)"),
        Step((0, 5, 23, 0), 8192, "0.5.23 srt/arg_groups/memory_hook.py:238: min(8192, chunked_prefill_size)")),
    # A default decode max_bs above --max-running-requests is lowered to it.
    "decode_max_bs_capped_by_requests": (
        Step((0, 5, 14, 0), False, "0.5.21 srt/arg_groups/memory_hook.py:47-160: no cap"),
        Step((0, 5, 22, 0), True, "0.5.22 srt/arg_groups/memory_hook.py:83, 182-188: decode max_bs = "
                                  "max_running_requests when the default exceeds it")),
    # Hybrid SWA under PP: each stage's pools sized with the whole model's full / SWA layer counts, or its own.
    "hybrid_swa_stage_layers": (
        Step((0, 5, 14, 0), "model", "0.5.20 srt/model_executor/pool_configurator.py:566-567: "
                                     "len(model_config.full_attention_layer_ids), the whole model's"),
        Step((0, 5, 21, 0), "stage", "0.5.21 srt/model_executor/pool_configurator.py:581-582: "
                                     "len(kvc.layer_info.full_attention_layer_ids), this runner's slice")),
    # A host pool no larger than the device pool: refused at start-up, or a warning.
    "host_smaller_than_device": (
        Step((0, 5, 14, 0), "refused", "0.5.14 srt/mem_cache/pool_host/base.py:70-72: assert self.size > "
                                       "device_pool.size, 'The host memory should be larger than the device memory "
                                       "with the current protocol'"),
        Step((0, 5, 15, 0), "warning", "0.5.15 srt/mem_cache/pool_host/base.py:116: logger.warning('HiCache host KV "
                                       "pool (%d tokens) is smaller than the device pool ...')")),
    # The host guard: what one rank may claim. "node": psutil's available - 10 GiB, whatever the ranks on the host;
    # "per_rank": that divided by the ranks per host (TP x PP // nnodes).
    "host_guard": (
        Step((0, 5, 14, 0), "node", "0.5.18 srt/mem_cache/pool_host/base.py:144: available_bytes = "
                                    "host_mem.available - HICACHE_HOST_MEMORY_RESERVE_BYTES (10 GiB, :25)"),
        Step((0, 5, 19, 0), "per_rank", "0.5.19 srt/mem_cache/pool_host/base.py:32-56, 175: (available - 10 GiB) // "
                                        "ranks_per_host(), world_size // nnodes")),
    # A fixed --hicache-size with more than one device pool (SWA, Mamba): each pool got the whole size (2x per rank,
    # sglang#29034), or the size is split across the pools in proportion to their device bytes (#32373, #32915).
    "hicache_size_split": (
        Step((0, 5, 14, 0), False, "0.5.16 srt/mem_cache/hybrid_cache/hybrid_pool_assembler.py:262, 554, 647: "
                                   "server_args.hicache_size passed to every host pool"),
        Step((0, 5, 17, 0), True, "0.5.17 srt/mem_cache/hybrid_cache/hybrid_pool_assembler.py:97-109, 214-216: "
                                  "_split_hicache_size, hicache_size x device bytes / total device bytes")),
    # Neither --hicache-ratio nor --hicache-size: the default ratio as is, or reduced until the pools fit
    # --hicache-host-memory-fraction of the host (sglang#40135).
    "hicache_auto_size": (
        Step((0, 5, 14, 0), False, "0.5.20 srt/mem_cache/pool_host/base.py: no hicache_auto_size module; the ratio "
                                   "defaults to 2.0 (srt/arg_groups/fields/memory.py:110-113)"),
        Step((0, 5, 21, 0), True, "0.5.21 srt/mem_cache/hicache_auto_size.py:83-123: ratio = min(requested, budget x "
                                  "0.95 / device bytes), budget = host_memory_budget_bytes x fraction (0.8)")),
    # --hicache-host-memory-mode buffer_only (default ratio 1.2).
    "buffer_only": (
        Step((0, 5, 14, 0), False, "0.5.18 srt/server_args.py:2671-2674: hicache_ratio 'Defaults to 2.0'; no "
                                   "--hicache-host-memory-mode"),
        Step((0, 5, 19, 0), True, "0.5.19 srt/server_args.py:2730-2733: 'Defaults to 2.0 in cache mode, 1.2 in "
                                  "buffer_only mode'")),
}

# Architectures SGLang sizes as hybrid SWA (a full pool and a sliding-window pool of swa_full_tokens_ratio x its
# tokens), and the first release that lists each (srt/configs/model_config.py is_hybrid_swa_model, 0.5.9 - 0.5.23).
# Every other architecture holds full KV on every attention layer (Gemma-2/3, Mistral's sliding window, ...).
HYBRID_SWA_ARCHS: dict[str, Release] = {
    "GptOssForCausalLM": (0, 5, 9, 0), "Llama4ForConditionalGeneration": (0, 5, 9, 0),
    "Step3p5ForCausalLM": (0, 5, 9, 0), "MiMoV2FlashForCausalLM": (0, 5, 9, 0),
    "Gemma4ForCausalLM": (0, 5, 11, 0), "Gemma4ForConditionalGeneration": (0, 5, 11, 0),
    "LagunaForCausalLM": (0, 5, 12, 0), "MellumForCausalLM": (0, 5, 16, 0), "MuseGlimmerForCausalLM": (0, 5, 18, 0),
    "GraniteMoeSWAForCausalLM": (0, 5, 19, 0), "GraniteSWAForCausalLM": (0, 5, 19, 0),
    "BeamForCausalLM": (0, 5, 23, 0),
}
HYBRID_SWA_EVIDENCE = ("srt/configs/model_config.py is_hybrid_swa_model: 0.5.9:1320-1330, 0.5.16:1903-1927, "
                       "0.5.23:2651-2697 (SWA_SINK_ARCHS :88)")


# Free device memory before the weights load (`pre_model_load_memory`, srt/distributed/bootstrap.py
# measure_pre_model_load_memory: torch's free bytes after distributed init, MIN over the world), as a gap below
# nvidia-smi's capacity, from real start-up logs ("Load weight end. ... avail mem=A GB, mem usage=U GB": pre = A + U,
# GiB). The default of --gpu-free-memory; give it to pin SGLang's own figure.
FREE_GAP_MIB_TP1 = 991  # H100 TP 1: 81,559 MiB - (50.99 + 27.69) GiB x 1024 = 990.7 MiB (LMCache/LMCache#2400)
# H200 TP 8: 143,771 MiB - (12.25 + 125.65) GiB x 1024 = 2,561.4 MiB (SemiAnalysisAI/InferenceX#2128)
FREE_GAP_MIB_TP = 2561
FREE_GAP_SOURCE = ("a gap below nvidia-smi's capacity from real logs: 991 MiB at TP 1 (H100, LMCache/LMCache#2400: "
                   "'avail mem=50.99 GB, mem usage=27.69 GB'), 2,561 MiB at TP > 1 (H200 TP 8, "
                   "SemiAnalysisAI/InferenceX#2128: 'avail mem=12.25 GB, mem usage=125.65 GB')")


HICACHE_LAYOUTS = ("layer_first", "page_first", "page_first_direct", "page_first_kv_split", "page_head")
HICACHE_IO_BACKENDS = ("direct", "kernel")
HICACHE_WRITE_POLICIES = ("write_back", "write_through", "write_through_selective")
HICACHE_MODES = ("cache", "buffer_only")


@record
class HiCacheLayout:
    """--enable-hierarchical-cache and its flags (srt/arg_groups/fields/memory.py @0.5.23:98-160)."""

    enabled: bool = False
    ratio: float | None = None  # --hicache-ratio (None: the mode's default, 2.0 / 1.2, or auto-sized from 0.5.21)
    size_gb: int = 0  # --hicache-size: decimal GB per rank, whole numbers; overrides the ratio
    mem_layout: str = "page_first"
    host_memory_mode: str = "cache"
    io_backend: str = "kernel"
    write_policy: str = "write_through"
    storage_backend: str | None = None  # an L3 tier, sized by its own config
    host_memory_fraction: float = 0.8  # 0.5.21+: auto-size's share of the host (after the 10 GiB reserve)


@record
class SglangLayout:
    """What SGLang is told: its release, memory flags, the GPU as nvidia-smi reports it, pinned measurements."""

    version: str = DEFAULT_SGLANG_VERSION
    version_from: str = "default"
    mem_fraction_static: float | None = None  # None: SGLang's default for the GPU (engines/sglang/memory.py)
    max_total_tokens: int | None = None
    page_size: int | None = None  # None: SGLang's pick for the attention backend
    chunked_prefill_size: int | None = None  # <= 0: no chunked prefill
    cuda_graph_max_bs: int | None = None  # --cuda-graph-max-bs-decode
    disable_cuda_graph: bool = False
    cuda_graph_bs_decode: tuple[int, ...] | None = None
    cuda_graph_max_bs_prefill: int | None = None
    cuda_graph_bs_prefill: tuple[int, ...] | None = None
    cuda_graph_backend_decode: str | None = None  # full | breakable | tc_piecewise | disabled; None: the default
    cuda_graph_backend_prefill: str | None = None
    disable_prefill_cuda_graph: bool = False
    disable_decode_cuda_graph: bool = False
    max_prefill_tokens: int = 16384
    max_running_requests: int | None = None
    swa_full_tokens_ratio: float = 0.8
    device: Device | None = None  # the GPU by name (vocab/devices.py: nvidia-smi's capacity)
    capacity_mib: int | None = None  # nvidia-smi memory.total: given, or the device's
    capacity_source: str = ""
    gpu_free_memory: int | None = None  # bytes free before the weights load (pre_model_load_memory)
    weights_bytes: int | None = None  # bytes the weights take on one rank (free after load = free before - this)
    architecture: str | None = None  # the config's architectures[0]: SGLang's view of the model
    config_kv_heads: int | None = None  # the config's KV heads (get_total_num_kv_heads): ROCm's MLA backend
    context_length_given: bool = False  # --context-length (cache.max_model_len) given, not the config's
    kv_budget_bytes: int | None = None  # --compare-engines only: vLLM's --kv-cache-memory as SGLang's budget
    hicache: HiCacheLayout = HiCacheLayout()
    host_available: int | None = None  # psutil's available host memory on one node at start-up
    # the container's cgroup (memory.max, memory.high, memory.current, active_file + inactive_file), bytes
    host_cgroup: HostCgroup | None = None
    attn_dp_size: int = 1  # --attn-dp-size (or --enable-dp-attention with --dp-size)
    disable_radix_cache: bool = False
    disable_overlap_schedule: bool = False
    # Mamba / GDN hybrids' state pool
    mamba_ssm_dtype: str | None = None  # --mamba-ssm-dtype (None: the config's, else float32)
    max_mamba_cache_size: int | None = None
    mamba_full_memory_ratio: float = 0.9
    mamba_radix_cache_strategy: str = "auto"
    # speculative decoding
    speculative_algorithm: str | None = None  # EAGLE | EAGLE3 | NEXTN | MTP | STANDALONE (as SGLang spells them)
    speculative_draft_layers: int | None = None  # the draft's KV layers (its config's), None: the target's nextn
    speculative_draft_source: str = ""
    speculative_num_draft_tokens: int | None = None
    speculative_num_steps: int | None = None
    speculative_eagle_topk: int | None = None
    num_nextn_predict_layers: int | None = None  # the target config's (a path-less MTP draft's layers)
    model_type: str | None = None  # the config's model_type (DeepSeek-V4 / V4.1 differ in SGLang's pools)
    kv_source_layers: bool = False  # the config lists kv_source_layer_ids (DeepSeek-V4.1's shared compressed KV)
    swa_ratio_given: bool = False  # --swa-full-tokens-ratio given (DeepSeek-V4's default is the override's 0.1)
    # multimodal
    enable_multimodal: bool | None = None  # None: SGLang's default for the architecture
    language_only: bool = False
    language_model_only: bool = False
    vlm_cache_size_mb: int = 100  # SGLANG_VLM_CACHE_SIZE_MB
    mm_feature_transport: str = "cpu"
    mm_feature_cache_mb: int = 1024  # SGLANG_MM_FEATURE_CACHE_MB
    vision: tuple[int, int] | None = None  # (vision_config.num_hidden_layers, hidden_size) as SGLang reads them
    vision_source: str = ""
    has_text_config: bool = False  # the config nests a text_config: SGLang's multimodal sub-config


@record
class HostCgroup:
    """The container's memory cgroup at start-up (srt/mem_cache/host_memory.py:41-133 @0.5.23 reads it)."""

    limit: int | None = None  # memory.max
    high: int | None = None  # memory.high
    usage: int = 0  # memory.current
    file_cache: int = 0  # active_file + inactive_file of memory.stat (reclaimable)

    def headroom(self, cache_reclaimable: bool) -> int | None:
        """min over memory.max / memory.high of max(0, limit - usage), the usage less the page cache where it is
        reclaimable (STEPS cgroup_page_cache), or None without a limit (host_memory.py:98-127 @0.5.23)."""
        limits = [x for x in (self.limit, self.high) if x is not None]
        if not limits:
            return None
        usage = max(self.usage - self.file_cache, 0) if cache_reclaimable else self.usage
        return max(min(limits) - usage, 0)


def sglang_of(layout: Layout) -> SglangLayout:
    """The layout's SGLang section, for SGLang's own modules: an SGLang layout always has one."""
    sg = layout.sglang
    if sg is None:
        raise InternalError(f"{layout.source}: an SGLang stage was given a {layout.engine} layout")
    return sg


# SGLang's images: lmsysorg/sglang:v0.5.23 (-cu129, -runtime, ... suffixes), rocm/sgl-dev:v0.5.8.post1-rocm720-...:
# the release in the tag (docker/Dockerfile of the sglang repository tags images by release).
_IMAGE_TAG = r"v?(\d+\.\d+\.\d+(?:\.post\d+)?)(?:[-_].*)?"


def image_release(image: str) -> tuple[str | None, str]:
    """(the SGLang release an image's tag names, how it was read), or (None, why not)."""
    import re

    name, _, tag = image.rpartition("@")[0 if "@" in image else 2].rpartition(":")
    if "sgl" not in name.lower():
        return None, f"image {image!r} is not an SGLang image kvcalc reads"
    m = re.fullmatch(_IMAGE_TAG, tag) if tag else None
    if m is None:
        return None, f"image {image!r}: its tag names no SGLang release"
    if m.group(1) not in SGLANG_RELEASES:
        return None, f"image {image!r}: SGLang {m.group(1)} is not a release kvcalc models ({SGLANG_RELEASES[0]} - " \
                     f"{SGLANG_RELEASES[-1]})"
    return m.group(1), f"image {name}:{tag}"


@record
class SglangBehaviour:
    """What one SGLang release does, from STEPS."""

    version: str
    release: Release
    small_gpu_tier: tuple[int, int, int]
    decode_reserve_without_graphs: bool
    prefill_graphs_clamped_to_context: bool
    pp_prefill_graph_cap: int | None
    default_prefill_backend: str
    rocm_prefill_backend: str
    pp_prefill_graph_off: bool
    mla_prefill_graph_off: bool
    hicache_prefill_graph_off: bool
    mla_prefill_max_bs: int
    dp_attention_prefill_graph_off: bool
    deployment_pools: bool
    mm_budget_reservation: bool
    cgroup_headroom: bool
    cgroup_cache_reclaimable: bool
    decode_max_bs_capped_by_requests: bool
    hybrid_swa_stage_layers: bool
    host_smaller_refused: bool
    guard_per_rank: bool
    hicache_size_split: bool
    auto_size: bool
    buffer_only: bool

    # Duck-typed like vLLM's Behaviour where the gates read it: no /dev/shm region, no shm preflight.
    shm_free_space_check = False
    shm_message_named = False

    def evidence(self, name: str) -> str:
        return _step(name, self.release).evidence

    def hybrid_swa(self, architecture: str | None) -> bool:
        first = HYBRID_SWA_ARCHS.get(architecture or "")
        return first is not None and first <= self.release


def _step(name: str, release: Release) -> Step:
    found = STEPS[name][0]
    for s in STEPS[name]:
        if s.first <= release:
            found = s
    return found


def behaviour_for(version: str) -> SglangBehaviour:
    release = parse_release(version)

    def value(name: str):
        return _step(name, release).value

    return SglangBehaviour(
        version=version, release=release, small_gpu_tier=value("small_gpu_tier"),
        decode_reserve_without_graphs=value("decode_reserve_without_graphs"),
        prefill_graphs_clamped_to_context=value("prefill_graphs_clamped_to_context"),
        pp_prefill_graph_cap=value("pp_prefill_graph_cap"),
        default_prefill_backend=value("default_prefill_backend"),
        rocm_prefill_backend=value("rocm_prefill_backend"),
        pp_prefill_graph_off=value("pp_prefill_graph") == "off",
        mla_prefill_graph_off=value("mla_prefill_graph") == "off",
        hicache_prefill_graph_off=value("hicache_prefill_graph") == "off",
        mla_prefill_max_bs=value("mla_prefill_max_bs"),
        dp_attention_prefill_graph_off=value("dp_attention_prefill_graph") == "off",
        deployment_pools=value("deployment_pools"), mm_budget_reservation=value("mm_budget_reservation"),
        cgroup_headroom=value("cgroup_headroom"),
        cgroup_cache_reclaimable=value("cgroup_page_cache") == "reclaimable",
        decode_max_bs_capped_by_requests=value("decode_max_bs_capped_by_requests"),
        hybrid_swa_stage_layers=value("hybrid_swa_stage_layers") == "stage",
        host_smaller_refused=value("host_smaller_than_device") == "refused",
        guard_per_rank=value("host_guard") == "per_rank", hicache_size_split=value("hicache_size_split"),
        auto_size=value("hicache_auto_size"), buffer_only=value("buffer_only"))


__all__ = ["DEFAULT_SGLANG_VERSION", "SGLANG_RELEASES", "STEPS", "SglangBehaviour", "behaviour_for"]
