"""vLLM release -> behaviour. Every version difference kvcalc knows lives here, as data, with its evidence.

Three tables: `RELEASES`, every vLLM release from 0.14.0 to 0.33.0 (each one's wheel was read); `FAMILIES`, one record
per CPU-formula family; `STEPS`, one row per behaviour flag: the value it takes from each release on, each step citing
the file of the release where it first holds (and the last one before). `behaviour_for(version)` reads them once per
release; later stages never compare version strings (`kvcalc versions --boundaries` prints them).

Where these differ from ../shared/spec/vllm-kv-model.md, the wheels win (the spec read 17 releases and mapped
the others to the nearest older one): the shared region, page alignment and single-copy MLA start at 0.27.0, not
0.28.0; the single allocation at 0.29.0, not 0.30.0; the kv_tp_replicas test at 0.31.0, not 0.32.0; vLLM's
int(concurrency x max_model_len) token log at 0.20.1, not 0.21.0; the offloader's chunked-local refusal lasts to
0.27.1, not 0.22.x; ROCm loses the shared region at 0.31.0 and XPU gains it at 0.32.0."""

from __future__ import annotations

import re
from functools import cache, lru_cache

from ..errors import InternalError, StartupRefusal, UnsupportedError
from ..records import record
from .steps import MEMORY_STEPS, MODEL_STEPS, Step

Release = tuple[int, int, int]

# Every release on PyPI from 0.14.0 to 0.33.0; kvcalc read each one's wheel (vllm/**/*.py and METADATA).
RELEASES = ("0.14.0", "0.14.1", "0.15.0", "0.15.1", "0.16.0", "0.17.0", "0.17.1", "0.18.0", "0.18.1", "0.19.0",
            "0.19.1", "0.20.0", "0.20.1", "0.20.2", "0.21.0", "0.22.0", "0.22.1", "0.23.0", "0.24.0", "0.25.0",
            "0.25.1", "0.26.0", "0.27.0", "0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")
RELEASE_TUPLES: tuple[Release, ...] = tuple((int(a), int(b), int(c)) for a, b, c in (r.split(".") for r in RELEASES))
SUPPORTED_MIN: Release = RELEASE_TUPLES[0]
NEWEST: Release = RELEASE_TUPLES[-1]
DEFAULT_VERSION = "0.33.0"
HOST_PAGE = 4096  # mmap.PAGESIZE on x86-64; --host-page-size sets another (64 KiB on some arm64 kernels)

_VERSION_PATTERN = r"^v?(\d+)\.(\d+)(?:\.(\d+))?([.+\-]?[0-9A-Za-z.+\-]*)$"


@record
class OffloadRule:
    """How a family turns a worker's KV layout and the CPU budget into a CPU block (chunk) count."""

    unit: str  # "page_x_tensors" (0.14-0.19.1: page x len(tensors)) | "bytes_per_block" (sum(sizes) // num_blocks)
    chunks: bool  # 0.26+: counts are chunks of blocks_per_chunk GPU blocks (block_size sets it)
    host_aligned: bool  # 0.27+: chunks rounded up to the host page (mmap.PAGESIZE) for the shared region
    replication: bool  # 0.27+: MLA may be stored once (the test is the release's)
    single_allocation: bool  # 0.29+: one backing GPU allocation; every KVCacheTensor.size is the total


@record
class Family:
    """One release family: its releases, its CPU formula, and how it is shown."""

    id: str
    first: Release  # first release of the family (FAMILIES is in release order; the next one's first ends it)
    heading: str  # offload table column heading
    rule: OffloadRule | None  # None: manual (no formula)
    summary: str
    readme_formula: str  # the README table's "CPU count" cell
    action: str  # what a user should do about it
    readme_action: str  # the README table's "what to do" cell (markdown)
    evidence: str = ""  # the file of its first release that shows the formula
    # The release standing for the family when another is selected (pinned: a new release changes no other answer).
    representative: str | None = None

    @property
    def formula_rule(self) -> OffloadRule:  # `rule`, of a formula family (all but manual, before 0.14.0)
        if self.rule is None:
            raise InternalError(f"the {self.id} family has no CPU formula")
        return self.rule

    @property
    def releases(self) -> tuple[str, ...]:
        """The read releases of this family (computed once: every sweep point's report asks)."""
        return _family_releases(self.id)

    @property
    def versions(self) -> str:
        """Display range: '0.20.0 - 0.23.0' (JSON `versions`, `kvcalc versions`, the README)."""
        return _family_versions(self.id)


_OLD = OffloadRule(unit="page_x_tensors", chunks=False, host_aligned=False, replication=False,
                   single_allocation=False)
_FIXED = OffloadRule(unit="bytes_per_block", chunks=False, host_aligned=False, replication=False,
                     single_allocation=False)

# 0.19.1 v1/kv_offload/cpu/spec.py: page_size_bytes * len(kv_cache_config.kv_cache_tensors) * world_size (old);
# 0.20.0 same file: sum(tensor sizes) // num_blocks * world_size (fixed); 0.23.0 adds round_up(., 1) (no effect);
# 0.24.0 v1/kv_offload/cpu/spec.py: is_packed -> size[0] (packed); 0.26.0 offloading/config.py
# build_offloading_config: blocks_per_chunk (config); 0.27.0 v1/kv_offload/cpu/spec.py: BLOCK_SIZE_ALIGNMENT =
# SharedOffloadRegion.BLOCK_SIZE_ALIGNMENT (mmap.PAGESIZE) and replicated_layout (replicated); 0.29.0
# offloading/config.py: "Every KVCacheTensor describes placement within the same backing allocation" ->
# kv_cache_tensors[0].size // num_blocks (single-alloc).
FAMILIES: dict[str, Family] = {f.id: f for f in (
    Family(id="manual", first=(0, 0, 0), heading="manual", rule=None,
           summary="no formula: num_cpu_blocks is set by hand in kv_connector_extra_config",
           readme_formula="none: you set `num_cpu_blocks` yourself",
           action="kvcalc only echoes num_cpu_blocks; upgrade to size the pool from bytes",
           readme_action="kvcalc refuses; that number is the pool",
           evidence='0.13.0 v1/kv_offload/cpu.py: num_cpu_blocks = extra_config.get("num_cpu_blocks"), required'),
    Family(id="old", first=(0, 14, 0), heading="old 0.14.0–0.19.1", rule=_OLD,
           summary="C // (page x len(tensors) x world_size x f): counts a UniformType group's layers twice",
           readme_formula="`C // (page × len(tensors) × W × f)`",
           action="upgrade to >= 0.20.0 if your layout is UniformType (MLA + EAGLE, V3.2, per-layer heads, "
                  "skipped fp8 layers): stores go out of bounds",
           readme_action="**upgrade to ≥ 0.20.0 if your layout is UniformType** (MLA + EAGLE, DeepSeek-V3.2, "
                         "per-layer KV heads, fp8 skip layers): workers get ~1/L of the blocks the scheduler hands "
                         "out → out-of-bounds stores",
           evidence='0.14.0 v1/kv_offload/cpu.py: page_size_bytes * len(kv_cache_config.kv_cache_tensors) * world_size',
           representative="0.19.1"),
    Family(id="fixed", first=(0, 20, 0), heading="fixed 0.20.0–0.23.0", rule=_FIXED,
           summary="C // ((sum(tensor sizes) // num_blocks) x world_size x f): the worker's true bytes",
           readme_formula="`C // ((Σ sizes // N) × W × f)`",
           action="safe for UniformType; uneven PP stages still go out of bounds",
           readme_action="safe for UniformType; HMA stays off with the connector until 0.22",
           evidence='0.20.0 v1/kv_offload/cpu/spec.py: sum(t.size for t in kv_cache_tensors) // num_blocks '
                    '(0.19.1: page x len)', representative="0.23.0"),
    Family(id="packed", first=(0, 24, 0), heading="packed", rule=_FIXED,
           summary="as fixed; packed tensors (cross-layer blocks) count size[0], the total",
           readme_formula="as fixed (packed tensors count `size[0]`)",
           action="same counts as fixed for every classic layout",
           readme_action="same numbers for classic layouts",
           evidence='0.24.0 v1/kv_offload/cpu/spec.py: is_packed = any(t.block_stride ...) -> size[0] (0.23.0: sum)',
           representative="0.25.1"),
    Family(id="config", first=(0, 26, 0), heading="config",
           rule=OffloadRule(unit="bytes_per_block", chunks=True, host_aligned=False, replication=False,
                            single_allocation=False),
           summary="build_offloading_config: chunks of blocks_per_chunk GPU blocks (block_size x DCP)",
           readme_formula="chunks of `blocks_per_chunk` blocks",
           action="counts are chunks; blocks_per_chunk and block_size are exclusive",
           readme_action="hybrids need `--enable-prefix-caching`; `block_size` xor `blocks_per_chunk`",
           evidence='0.26.0 offloading/config.py build_offloading_config: blocks_per_chunk (0.25.1: block_size_factor)',
           representative="0.26.0"),
    Family(id="replicated", first=(0, 27, 0), heading="replicated",
           rule=OffloadRule(unit="bytes_per_block", chunks=True, host_aligned=True, replication=True,
                            single_allocation=False),
           summary="host-page aligned chunks in one shared host region; pure MLA under TP-only mp stored once",
           readme_formula="chunks rounded up to the host page (4096 B) in one shared `/dev/shm` region; pure MLA "
                          "TP-only `mp` stored once",
           action="pure-MLA TP-only runs get TP x more CPU blocks for the same budget",
           readme_action="pure-MLA TP runs get TP× more CPU blocks",
           evidence='0.27.0 v1/kv_offload/cpu/spec.py: BLOCK_SIZE_ALIGNMENT = SharedOffloadRegion.BLOCK_SIZE_ALIGNMENT '
                    '(mmap.PAGESIZE), replicated_layout (0.26.0: alignment 1, no region)',
           representative="0.28.0"),
    Family(id="single-alloc", first=(0, 29, 0), heading="single-alloc",
           rule=OffloadRule(unit="bytes_per_block", chunks=True, host_aligned=True, replication=True,
                            single_allocation=True),
           summary="one backing GPU allocation: bytes per block from size[0] // num_blocks; 0.31+ replicas test",
           readme_formula="as replicated, bytes per block from the one backing allocation; 0.31+ `kv_tp_replicas` "
                          "test",
           action="MLA models (incl. V3.2's indexer) keep one copy when every layer is MLA-like",
           readme_action="V3.2 stored once too (0.31+); 0.33 group-aware capacity (`CPUOffloadingInfo`)",
           evidence='0.29.0 offloading/config.py: kv_cache_tensors[0].size // num_blocks, one backing allocation '
                    '(0.28.0: packed-or-sum)', representative="0.33.0"),
)}


# One row per behaviour: steps in release order; a release takes the value of the last step at or below it.
STEPS: dict[str, tuple[Step, ...]] = {
    "group_threshold": (  # rule E's group-size threshold, numerator/denominator
        Step((0, 0, 0), (5, 4), "0.17.1 v1/core/kv_cache_utils.py: max_num_layers < min_num_layers * 1.25"),
        Step((0, 18, 0), (3, 2), "0.18.0 v1/core/kv_cache_utils.py: max_num_layers < min_num_layers * 1.5")),
    "log_family": (  # spec section 7
        Step((0, 0, 0), "L1", "0.20.0 v1/core/kv_cache_utils.py: num_tokens = num_blocks // len(groups) * "
                              "min_block_size"),
        Step((0, 20, 1), "L2", "0.20.1 v1/core/kv_cache_utils.py: num_tokens = int(max_concurrency * "
                               "max_model_len)"),
        Step((0, 28, 0), "L3", "0.28.0 v1/core/kv_cache_utils.py: one line 'GPU KV cache size: %s tokens, "
                               "Maximum concurrency ...' (0.27.1: two lines)")),
    "log_device_prefix": (Step((0, 0, 0), False, "0.29.0 v1/core/kv_cache_utils.py: 'GPU KV cache size'"),
                          Step((0, 30, 0), True, "0.30.0 v1/core/kv_cache_utils.py: '%s KV cache size', a device")),
    "sink_blocks_reserved": (Step((0, 0, 0), True, "0.29.0 v1/core/single_type_kv_cache_manager.py:1109-1112: pop"),
                             Step((0, 30, 0), False, "0.30.0 SinkFullAttentionManager takes no free blocks")),
    "sliding_page_uses_head_size_v": (
        Step((0, 0, 0), False, "0.19.1 v1/kv_cache_interface.py: SlidingWindowSpec page 2 * B * H * D * s"),
        Step((0, 20, 0), True, "0.20.0 v1/kv_cache_interface.py: SlidingWindowSpec page B * H * (D + Dv) * s")),
    # --block-size values the release's argument parser accepts (None: any positive integer).
    "block_size_choices": (
        Step((0, 0, 0), (1, 8, 16, 32, 64, 128, 256), "0.17.1 config/cache.py: BlockSize = Literal[1, 8, 16, 32, "
                                                       "64, 128, 256] (engine/arg_utils.py: the choices of "
                                                       "--block-size)"),
        Step((0, 18, 0), None, "0.18.0 config/cache.py: block_size: SkipValidation[int] (no BlockSize Literal); "
                               "0.26.0: Field(gt=0)")),
    "supports_skip_layers": (Step((0, 0, 0), False, "0.18.1 config/cache.py: no kv_cache_dtype_skip_layers"),
                             Step((0, 19, 0), True, "0.19.0 config/cache.py: kv_cache_dtype_skip_layers")),
    "supports_scaled_kv_dtypes": (
        Step((0, 0, 0), False, "0.19.1 config/cache.py: CacheDType without int8_per_token_head"),
        Step((0, 20, 0), True, "0.20.0 config/cache.py: int8_per_token_head, fp8_per_token_head, nvfp4")),
    "hybrid_kernel_uses_block_size": (  # spec 4.3
        Step((0, 0, 0), False, "0.19.1 model_executor/models/config.py: kernel block 16 (64 for MLA)"),
        Step((0, 20, 0), True, "0.20.0 platforms/interface.py _align_hybrid_block_size: max(backend's smallest "
                               "kernel block, block_size)")),
    "hybrid_prefix_caching": (  # prefix caching's default for hybrid (Mamba) models
        Step((0, 0, 0), False, "0.25.1 config/model.py:1883-1887 is_prefix_caching_supported: hybrid -> False"),
        Step((0, 26, 0), True, "0.26.0 config/model.py:1895-1897: 'Generative hybrid models support prefix caching' "
                               "(engine/arg_utils.py: enable_prefix_caching defaults to it)")),
    "hybrid_mla_floor_128": (
        Step((0, 0, 0), False, "0.26.0 platforms/interface.py: no MLA floor"),
        Step((0, 27, 0), True, "0.27.0 platforms/interface.py: kernel_block_alignment_size = "
                               "max(kernel_block_alignment_size, 128) for MLA")),
    "hybrid_backend_lcm": (
        Step((0, 0, 0), False, "0.31.0 platforms/interface.py: no backend_block_alignment"),
        Step((0, 32, 0), True, "0.32.0 platforms/interface.py: attn_block_size rounded to lcm of every "
                               "backend's smallest kernel block")),
    "hybrid_checkpoint_alignment": (
        Step((0, 0, 0), False, "0.32.0 platforms/interface.py: no prefill-checkpoint alignment"),
        Step((0, 33, 0), True, "0.33.0 platforms/interface.py: mode align: lcm(kernel, "
                               "get_mamba_prefill_checkpoint_alignment) (FlashInfer GDN: 64, gdn_attn.py)")),
    # Mamba cache modes a release accepts, and the one prefix caching picks (spec 4.2).
    "mamba_modes": (
        Step((0, 0, 0), ("none", "all"), "0.14.1 model_executor/models/config.py: no mamba_cache_mode; "
                                         "models without Mamba prefix caching turn prefix caching off"),
        Step((0, 15, 0), ("none", "all", "align"), "0.15.0 config/cache.py: MambaCacheMode = Literal['all', "
                                                   "'align', 'none']"),
        Step((0, 32, 0), ("none", "align"), "0.32.0 config/cache.py: MambaCacheMode = Literal['align', 'none']")),
    "mamba_default_all": (  # prefix caching on: "all" for models that support it (else "align"), or "align"
        Step((0, 0, 0), True, "0.27.1 model_executor/models/config.py: 'all' if "
                              "supports_mamba_prefix_caching else 'align'"),
        Step((0, 28, 0), False, "0.28.0 model_executor/models/config.py: mode none -> 'align' when prefix "
                                "caching is on")),
    # Prefix caching on, mode left at its default, a model that supports Mamba prefix caching: 'align' instead of
    # 'all' when a speculative config is set, for four releases only.
    "mamba_align_with_drafter": (
        Step((0, 0, 0), False, "0.19.1 model_executor/models/config.py MambaModelConfig.verify_and_update_config: "
                               "'all' if supports_mamba_prefix_caching else 'align', whatever the drafter"),
        Step((0, 20, 0), True, "0.20.0 model_executor/models/config.py:352-361: supports_mamba_prefix_caching and "
                               "speculative_config is not None -> 'align' (\"Mamba cache mode is set to 'align' ... "
                               "when prefix caching and speculative decoding are enabled\"); the same in 0.21.0"),
        Step((0, 22, 0), False, "0.22.0 model_executor/models/config.py: the speculative branch is gone")),
    "hma_default_with_connector": (
        Step((0, 0, 0), False, "0.21.0 config/vllm.py: HMA off whenever kv_transfer_config is set"),
        Step((0, 22, 0), True, "0.22.0 config/vllm.py: HMA off only if the connector does not subclass "
                               "SupportsHMA")),
    "hma_forced_on_allowed": (
        Step((0, 0, 0), False, "0.20.2 offloading_connector.py: class OffloadingConnector(KVConnectorBase_V1)"),
        Step((0, 21, 0), True, "0.21.0 offloading_connector.py: OffloadingConnector(KVConnectorBase_V1, "
                               "SupportsHMA)")),
    # Trap 14: with HMA on, the offloading scheduler asserts FullAttentionSpec for a chunked-local group.
    "offload_refuses_chunked_local": (
        Step((0, 0, 0), False, "0.20.2: the connector is not SupportsHMA, HMA is off, chunked layers fold"),
        Step((0, 21, 0), True, "0.21.0 offloading/scheduler.py get_sliding_window_size_in_blocks: "
                               "assert isinstance(kv_cache_spec, FullAttentionSpec); 0.27.1 "
                               "get_sliding_window_size_in_chunks: same assert"),
        Step((0, 28, 0), False, "0.28.0 offloading/scheduler.py: ChunkedLocalAttentionSpec -> "
                                "cdiv(attention_chunk_size, tokens_per_chunk)")),
    # The window a group's chunks are capped at, for capacity (spec 11): None = no per-group rule (one group).
    "window_rule": (
        Step((0, 0, 0), None, "0.20.2: HMA is off with the connector: one group"),
        Step((0, 21, 0), "sliding+mamba", "0.21.0 offloading/scheduler.py get_sliding_window_size_in_blocks: "
                                          "sliding window cdiv(w, offloaded block), Mamba 1, full none (0.26.0 "
                                          "renames it ..._in_chunks, cdiv(w, tokens_per_chunk): the same number)"),
        Step((0, 28, 0), "sliding+mamba+chunked", "0.28.0 offloading/scheduler.py: + chunked local cdiv(c, "
                                                  "tokens_per_chunk) (0.27.1: assert FullAttentionSpec)"),
        Step((0, 31, 0), "sliding+mamba+chunked+retained", "0.31.0 offloading/scheduler.py: sliding window "
                                                           "max(cdiv(w, t), cdiv(w - 1 + extra_retained_tokens, t))")),
    # Offload keys: the block hash alone (one key covers every group's bytes of a block), or (block hash, group
    # index). A release's own runs have one group until 0.21, so this shows in the old family's column of a
    # multi-group layout planned on a later release.
    "keys_per_group": (
        Step((0, 0, 0), False, "0.19.1 v1/kv_offload/abstract.py: keys are block hashes"),
        Step((0, 20, 0), True, "0.20.0 v1/kv_offload/abstract.py: make_offload_key(block_hash, group_idx)")),
    "capacity_metric": (
        Step((0, 0, 0), False, "0.32.0 v1/kv_offload/cpu: no CPUOffloadingInfo"),
        Step((0, 33, 0), True, "0.33.0 v1/kv_offload/cpu/common.py: CPUOffloadingInfo, published as "
                               "vllm:kv_offload_config_info")),
    # The offloading connector asks for one cross-layer KV tensor per worker (prefer_cross_layer_blocks); the model
    # runner gives it for one KV cache group of one attention spec whose backend orders a layers dimension after the
    # blocks (mixin.py use_uniform_kv_cache: FlashAttention, FlashInfer, Triton; MLA: mla_cross_layer, not 0.18-0.23).
    "cross_layer_blocks": (
        Step((0, 0, 0), True, "0.14.0 - 0.28.0 offloading_connector.py: prefer_cross_layer_blocks -> True"),
        Step((0, 29, 0), False, "0.29.0 offloading_connector.py: no prefer_cross_layer_blocks")),
    "mla_cross_layer": (
        Step((0, 0, 0), True, "0.14.0 v1/attention/backends/mla/common.py:320 (1, 0, 2, 3); v1/worker/kv_connector_"
                              "model_runner_mixin.py:207 compares lengths (0.17.1 mla_attention.py:1089)"),
        Step((0, 18, 0), False, "0.18.0 model_executor/layers/attention/mla_attention.py:1149 (0, 1, 2, 3); mixin.py"
                                ":200 stride_order[0] != 0 (0.23.0 mla_attention.py:1193)"),
        Step((0, 24, 0), True, "0.24.0 v1/attention/backends/mla/flashmla.py:66, the other 4 MLA backends (1, 0, "
                               "2, 3); mixin.py:158 indexes_kv_by_block_stride (0.26/0.28 flashmla.py:66); moot 0.29")),
    # How a worker's private pinned CPU tensors are laid out (when there is no shared region).
    "pinned_layout": (
        Step((0, 0, 0), "per_layer", "0.14.0 v1/kv_offload/worker/cpu_gpu.py: one torch.zeros(pin_memory) per "
                                     "layer of gpu_caches; 0.18.1 same, with K/V views of it"),
        Step((0, 19, 0), "per_tensor_split_kv", "0.19.0 offloading/worker.py: per KV cache tensor; FlashAttention's "
                                                "(2, num_blocks, ...) is unbound into K and V, one pinned tensor each"),
        Step((0, 23, 0), "per_tensor", "0.23.0 offloading/worker.py: one (num_blocks, page) tensor per KV cache "
                                       "tensor, no K/V split")),
    # Platforms whose workers share one /dev/shm region (cudaHostRegister) instead of private pinned tensors.
    "shared_region_platforms": (
        Step((0, 0, 0), (), "0.26.0 v1/kv_offload/cpu/spec.py: private pinned tensors only"),
        Step((0, 27, 0), ("cuda", "rocm"), "0.27.0 v1/kv_offload/cpu/spec.py _uses_shared_region: "
                                           "is_cuda_alike()"),
        Step((0, 31, 0), ("cuda",), "0.31.0 v1/kv_offload/cpu/spec.py: is_cuda_alike() and not is_rocm()"),
        Step((0, 32, 0), ("cuda", "xpu"), "0.32.0 v1/kv_offload/cpu/spec.py: (is_cuda_alike() and not is_rocm()) "
                                          "or is_xpu()")),
    "shm_free_space_check": (
        Step((0, 0, 0), False, "0.27.1 v1/kv_offload/cpu/shared_offload_region.py: no /dev/shm check"),
        Step((0, 28, 0), True, "0.28.0 v1/kv_offload/cpu/shared_offload_region.py: check_shm_free_space("
                               "total_size_bytes) raises RuntimeError")),
    "shm_message_named": (
        Step((0, 0, 0), False, "0.30.0 distributed/device_communicators/shm_broadcast.py: 'Insufficient space in "
                               "/dev/shm: ...'"),
        Step((0, 31, 0), True, "0.31.0 shm_broadcast.py check_shm_free_space(allocation_name=...): 'Insufficient "
                               "space in /dev/shm for CPU KV offload shared region in /dev/shm: ...'")),
    # The torch release the vLLM release pins (METADATA Requires-Dist), for the pinned allocator's rounding.
    "torch": (
        Step((0, 0, 0), "2.9.1", "0.16.0 METADATA: torch==2.9.1"),
        Step((0, 17, 0), "2.10.0", "0.17.0 METADATA: torch==2.10.0"),
        Step((0, 20, 0), "2.11.0", "0.20.0 METADATA: torch==2.11.0"),
        Step((0, 27, 0), "2.13.0", "0.27.0 METADATA: torch==2.13.0"),
        Step((0, 33, 0), "2.14.0", "0.33.0 METADATA: torch==2.14.0")),
    # What `--kv-offloading-backend lmcache --kv-offloading-size N` configures (config/vllm.py
    # _post_init_kv_transfer_config): LMCache's in-process connector with N / (TP x PP) GiB per rank, or from 0.23.0
    # the multi-process connector with no size at all.
    "lmcache_offloading_flag": (
        Step((0, 0, 0), "per_rank", "0.22.1 config/vllm.py: kv_connector = LMCacheConnectorV1, extra_config = "
                                    "{lmcache.local_cpu: True, lmcache.max_local_cpu_size: kv_offloading_size / "
                                    "num_kv_ranks (TP x PP)}"),
        Step((0, 23, 0), "mp", "0.23.0 config/vllm.py: kv_connector = LMCacheMPConnector; kv_offloading_size is "
                               "not propagated (the LMCache server sizes its own pool)")),
    # 0.27-0.30: one group whose spec is exactly MLA ("narrow"); 0.31+: kv_tp_replicas == TP.
    "replication_test": (
        Step((0, 0, 0), "narrow", "0.27.0 offloading/config.py: type(single_group_spec) is MLAAttentionSpec"),
        Step((0, 31, 0), "kv_tp_replicas", "0.31.0 offloading/config.py: kv_cache_config.kv_tp_replicas == "
                                           "tensor_parallel_size")),
    **MEMORY_STEPS,
    **MODEL_STEPS,
}

# PyTorch's caching host allocator rounds each pinned allocation up to PowerOf2Ceil(size) (torch 2.9.1-2.11.0
# include/ATen/core/CachingHostAllocator.h); torch 2.13.0 / 2.14.1 only if size <= pinned_max_round_threshold()
# (PYTORCH_ALLOC_CONF=pinned_max_round_threshold_mb:N) and <= pinned_max_cached_size() (c10/core/AllocatorConfig.h).
TORCH_ROUND_THRESHOLD = ("2.13.0", "2.14.0")


def _step(name: str, release: Release):
    value = STEPS[name][0].value
    for step in STEPS[name]:
        if release >= step.first:
            value = step.value
    return value


@record
class Behaviour:
    """What one vLLM release does, as far as KV layout and CPU offload sizing go (fields: see STEPS)."""

    version: str
    release: Release
    family: Family
    warning: str | None  # set when the version string had a suffix kvcalc ignored
    group_threshold: tuple[int, int]
    log_family: str
    log_device_prefix: bool
    sink_blocks_reserved: bool
    sliding_page_uses_head_size_v: bool
    block_size_choices: tuple[int, ...] | None
    supports_skip_layers: bool
    supports_scaled_kv_dtypes: bool
    hybrid_kernel_uses_block_size: bool
    hybrid_prefix_caching: bool
    hybrid_mla_floor_128: bool
    concurrency_sum: bool
    in_flight_reserve: bool
    dsv4_grouping: str
    dsv4_layout: str
    dsv4_auto_kv_dtype: bool
    dsv4_fp4_indexer_row: bool
    hybrid_backend_lcm: bool
    hybrid_checkpoint_alignment: bool
    mamba_modes: tuple[str, ...]
    mamba_default_all: bool
    mamba_align_with_drafter: bool
    hma_default_with_connector: bool
    hma_forced_on_allowed: bool
    offload_refuses_chunked_local: bool
    window_rule: str | None
    keys_per_group: bool
    capacity_metric: bool
    cross_layer_blocks: bool
    mla_cross_layer: bool
    pinned_layout: str
    shared_region_platforms: tuple[str, ...]
    shm_free_space_check: bool
    shm_message_named: bool
    torch: str
    replication_test: str
    lmcache_offloading_flag: str
    memory_budget: str  # the GPU KV budget's formula family (steps.py)
    cudagraph_estimate_platforms: tuple[str, ...]
    default_gpu_memory_utilization: float
    mrv2_rule: str
    batch_class_large: bool
    batch_class_gb10_other: bool
    max_capture_sm100: int
    refusal_text: str
    sampler_quarters: int

    @property
    def formula(self) -> str:
        return self.family.id

    @property
    def rule(self) -> OffloadRule:
        return self.family.formula_rule

    @property
    def torch_round_threshold(self) -> bool:
        """The pinned allocator takes pinned_max_round_threshold_mb (torch 2.13+)."""
        return self.torch in TORCH_ROUND_THRESHOLD


def parse_release(text: str) -> tuple[Release, str]:
    """`0.19.1` -> ((0, 19, 1), ''); the suffix (rc1, .post1, +cu128) is returned for a warning."""
    if isinstance(text, str):
        parts = text.strip().split(".")
        # The common spelling, 0.19.1, without the regex (compiling it is start-up time); the pattern reads it alike.
        if len(parts) == 3 and all(p.isascii() and p.isdigit() for p in parts):
            return (int(parts[0]), int(parts[1]), int(parts[2])), ""
    m = re.match(_VERSION_PATTERN, text.strip()) if isinstance(text, str) else None
    if not m:
        raise UnsupportedError(f"vLLM version {text!r} is not a release string such as 0.19.1")
    major, minor, patch = int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)
    return (major, minor, patch), m.group(4) or ""


@cache
def _family_releases(family_id: str) -> tuple[str, ...]:
    fam = FAMILIES[family_id]
    return tuple(r for r, t in zip(RELEASES, RELEASE_TUPLES) if family_of(t) is fam)


@cache
def _family_versions(family_id: str) -> str:
    if FAMILIES[family_id].rule is None:
        return "<= 0.13.x"
    rs = _family_releases(family_id)
    return rs[0] if len(rs) == 1 else f"{rs[0]} - {rs[-1]}"


def family_of(release: Release) -> Family:
    return [f for f in FAMILIES.values() if release >= f.first or f.id == "manual"][-1]


def supported_range() -> str:
    """The releases kvcalc models, for help texts: '0.14.0 to 0.33.0'."""
    return f"{RELEASES[0]} to {RELEASES[-1]}"


@lru_cache(maxsize=64)  # by the text as written: 0.19.1+local1, +local2, ... would each take an entry
def behaviour_for(version: str) -> Behaviour:
    """The behaviour of one release (cached: a sweep asks for the same few releases thousands of times)."""
    release, suffix = parse_release(version)
    if release < SUPPORTED_MIN:
        # 0.13.0 config/vllm.py: kv_offloading_backend "native" sets {"kv_bytes_per_rank": ..., "num_cpu_blocks": 0}
        # ("the actual calculation ... should be done after the model's KV cache is initialized"), and
        # v1/kv_offload/cpu.py raises "num_cpu_blocks must be specified" for a falsy value.
        raise UnsupportedError(
            f"vLLM {version}: releases up to 0.13.x take num_cpu_blocks directly in kv_connector_extra_config "
            f"(no formula to check: that number is the pool; 0.13.0's --kv-offloading-size writes num_cpu_blocks 0, "
            f"which its CPUOffloadingSpec refuses); kvcalc models {supported_range()}")
    if release > NEWEST:
        raise UnsupportedError(f"vLLM {version} is newer than every release kvcalc read (up to {RELEASES[-1]}); "
                               "its behaviour is not modelled")
    if release not in RELEASE_TUPLES:
        series = [r for r in RELEASES if r.startswith(f"{release[0]}.{release[1]}.")]
        raise UnsupportedError(f"vLLM {version} is not a release (kvcalc read every release from {RELEASES[0]} to "
                               f"{RELEASES[-1]}" + (f"; {release[0]}.{release[1]}.x: {', '.join(series)}"
                                                    if series else "") + ")")
    warning = (f"vLLM {version}: suffix {suffix!r} ignored, modelled as {'.'.join(map(str, release))}" if suffix
               else None)
    return Behaviour(version=version, release=release, family=family_of(release), warning=warning,
                     **{name: _step(name, release) for name in STEPS})


def decide_hma(behaviour: Behaviour, preference: str, *, wants_off_reason: str | None) -> tuple[bool, str]:
    """Is the hybrid KV cache manager on, with the OffloadingConnector configured (spec section 0.4)?

    `preference` is auto | on | off (vLLM's --[no-]disable-hybrid-kv-cache-manager); `wants_off_reason`
    names a model rule that turns HMA off (e.g. chunked-local attention with an EAGLE drafter).
    Returns (enabled, why) or raises StartupRefusal when the user forces it on and vLLM refuses.
    """
    if preference == "off":
        return False, "disabled by the user (--disable-hybrid-kv-cache-manager)"
    if preference == "on":
        if not behaviour.hma_forced_on_allowed:
            raise StartupRefusal(
                f"vLLM {behaviour.version} refuses to start: the hybrid KV cache manager was forced on but "
                "OffloadingConnector does not support it before 0.21.0"
            )
        if wants_off_reason:
            raise StartupRefusal(f"vLLM {behaviour.version} refuses to start: HMA forced on but {wants_off_reason}")
        return True, "forced on by the user (--no-disable-hybrid-kv-cache-manager)"
    if wants_off_reason:
        return False, wants_off_reason
    if behaviour.hma_default_with_connector:
        return True, "on: the OffloadingConnector supports the hybrid manager (0.22.0+)"
    return False, "off: vLLM disables the hybrid manager whenever a KV connector is set (before 0.22.0)"


REPRESENTATIVE = {f.id: f.representative for f in FAMILIES.values() if f.representative}
