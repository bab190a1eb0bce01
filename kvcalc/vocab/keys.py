"""One table of the flags that set a layout key: the CLI options of every command, the layout key path each sets,
the `sweep` axes, and vLLM's own spelling (what `vllm-args` prints). A new flag is one row here.

Pure data and two small helpers; the CLI builds its Typer options from these rows.
"""

from __future__ import annotations

from typing import Any

from .records import record
from .units import SIZE_HELP
from .releases.lmcache import DEFAULT_LMCACHE_VERSION, LMCACHE_RELEASES
from .releases.vllm import DEFAULT_VERSION, supported_range

# Help groups, in the order `--help` shows them.
GROUPS = ("input", "parallelism", "cache", "offload", "release", "output", "checks")


@record
class Flag:
    name: str  # the Python parameter name
    spellings: tuple[str, ...]  # CLI spellings; "--a/--b" is an on/off pair
    path: str  # the layout key path the flag sets
    type: type  # int | str | float | bool
    help: str
    group: str
    sweep: bool = False  # a sweep axis (takes a comma list there)
    vllm: str | None = None  # vLLM's own flag
    label: str | None = None  # how errors name the flag (default: the first spelling)

    @property
    def named(self) -> str:
        return self.label or self.spellings[0]

    def value(self, raw: Any) -> Any:
        """The value the layout key gets from the flag's parsed value."""
        if self.name == "hma":
            return "on" if raw else "off"
        return raw


def _flag(name: str, spellings: tuple[str, ...], path: str, type_: type, help_: str, group: str, **kw) -> Flag:
    return Flag(name=name, spellings=spellings, path=path, type=type_, help=help_, group=group, **kw)


# Rows in the order sweep columns appear (tp, pp, block_size, cpu_bytes, kv_cache_dtype, vllm_version,
# offload_block_size); --help groups them by `group`.
LAYOUT_FLAGS: tuple[Flag, ...] = (
    _flag("tp", ("--tp", "--tensor-parallel-size"), "parallel.tensor_parallel_size", int, "tensor parallel size",
         "parallelism", sweep=True, vllm="--tensor-parallel-size"),
    _flag("pp", ("--pp", "--pipeline-parallel-size"), "parallel.pipeline_parallel_size", int,
         "pipeline parallel size", "parallelism", sweep=True, vllm="--pipeline-parallel-size"),
    _flag("dp", ("--dp", "--data-parallel-size"), "parallel.data_parallel_size", int, "data parallel size (engines)",
         "parallelism", vllm="--data-parallel-size"),
    _flag("backend", ("--distributed-executor-backend",), "parallel.distributed_executor_backend", str,
         "mp | ray | uni | external_launcher", "parallelism", vllm="--distributed-executor-backend"),
    _flag("nnodes", ("--nnodes",), "parallel.nnodes", int, "nodes one engine spans", "parallelism", vllm="--nnodes"),
    _flag("dp_local", ("--data-parallel-size-local",), "parallel.data_parallel_size_local", int,
          "DP replicas (engines) on one node: the node pays their host memory (default: every replica)",
          "parallelism", vllm="--data-parallel-size-local"),
    _flag("block_size", ("--block-size",), "cache.block_size", int, "GPU block size in tokens", "cache", sweep=True,
         vllm="--block-size"),
    _flag("kv_cache_memory", ("--kv-cache-memory",), "cache.kv_cache_memory", str,
         f"KV cache memory per GPU (vLLM's --kv-cache-memory-bytes). SIZE: {SIZE_HELP}", "cache",
         vllm="--kv-cache-memory-bytes"),
    _flag("num_gpu_blocks_override", ("--num-gpu-blocks-override",), "cache.num_gpu_blocks_override", int,
         "GPU blocks, instead of the count from memory", "cache", vllm="--num-gpu-blocks-override"),
    _flag("max_model_len", ("--max-model-len",), "cache.max_model_len", str, "tokens; 128K = 131072, 128k = 128000",
         "cache", vllm="--max-model-len"),
    _flag("max_num_batched_tokens", ("--max-num-batched-tokens",), "cache.max_num_batched_tokens", str,
         "tokens per scheduler step", "cache", vllm="--max-num-batched-tokens"),
    _flag("prefix", ("--enable-prefix-caching/--no-enable-prefix-caching",), "cache.enable_prefix_caching", bool,
         "prefix caching on/off (default: vLLM's)", "cache", vllm="--enable-prefix-caching",
         label="--enable-prefix-caching"),
    _flag("hma", ("--hma/--no-hma",), "cache.hybrid_kv_cache_manager", bool, "force the hybrid KV cache manager on/off",
         "cache", vllm="--no-disable-hybrid-kv-cache-manager"),
    _flag("cpu_bytes", ("--cpu-bytes",), "offload.cpu_bytes_to_use", str,
         f"cpu_bytes_to_use: the CPU budget of ONE engine (all TP x PP workers of one DP replica). SIZE: {SIZE_HELP}",
         "offload", sweep=True),
    _flag("kv_offloading_size", ("--kv-offloading-size",), "offload.kv_offloading_size", float,
         "as vLLM's flag: GiB, converted as int(X * 2**30)", "offload", vllm="--kv-offloading-size"),
    _flag("kv_cache_dtype", ("--kv-cache-dtype",), "cache.kv_cache_dtype", str, "vLLM's --kv-cache-dtype string",
         "cache", sweep=True, vllm="--kv-cache-dtype"),
    _flag("vllm_version", ("--vllm-version",), "vllm.version", str,
         f"vLLM release, {supported_range()} (default {DEFAULT_VERSION}); `kvcalc versions` lists the families",
         "release", sweep=True),
    _flag("platform", ("--platform",), "vllm.platform", str, "cuda | rocm | xpu", "release"),
    _flag("attention_backend", ("--attention-backend",), "vllm.attention_backend", str,
          "FLASH_ATTN | FLASHINFER | TRITON_ATTN | FLASHMLA | CUTLASS_MLA | FLASHINFER_MLA | TRITON_MLA | "
          "FLASH_ATTN_MLA (default FLASH_ATTN; FLASHMLA for MLA models, as vLLM picks on an H100)", "release",
          vllm="--attention-backend"),
    _flag("gpu_arch", ("--gpu-arch",), "vllm.gpu_arch", str, "sm90 (H100, default) | sm100 (B200)", "release"),
    _flag("host_page_size", ("--host-page-size",), "host.page_size", int,
          "the host's mmap.PAGESIZE: 4096 (x86-64, default) or 65536 (some arm64 kernels); 0.27+ aligns chunks "
          "to it", "offload"),
    _flag("pinned_round_threshold_mb", ("--pinned-round-threshold-mb",), "host.pinned_round_threshold_mb", int,
          "PYTORCH_ALLOC_CONF pinned_max_round_threshold_mb: pinned allocations above it are not rounded to a power "
          "of two (torch 2.13+, vLLM 0.27+; torch 2.9.1 - 2.11.0 always round)", "offload"),
    _flag("offload_block_size", ("--offload-block-size",), "offload.block_size", int, "offloaded block size in tokens",
         "offload", sweep=True),
    _flag("blocks_per_chunk", ("--blocks-per-chunk",), "offload.blocks_per_chunk", int,
         "0.26+: GPU blocks per CPU chunk", "offload"),
    _flag("offload_backend", ("--offload-backend",), "offload.backend", str,
          "native (vLLM's OffloadingConnector, default) | lmcache (LMCacheConnectorV1: LMCache's pool per rank)",
          "offload"),
    _flag("lmcache_version", ("--lmcache-version",), "offload.lmcache.version", str,
          f"LMCache release whose rules apply, {LMCACHE_RELEASES[0]} - {LMCACHE_RELEASES[-1]} (default "
          f"{DEFAULT_LMCACHE_VERSION})", "offload"),
    # LMCache's own config sources: no single layout key (lmcache_input.py turns them into offload.lmcache.* keys,
    # in LMCache's precedence); each implies --offload-backend lmcache.
    _flag("lmcache_config", ("--lmcache-config",), "", str,
          "an LMCache config YAML (what LMCACHE_CONFIG_FILE names); LMCACHE_* variables override it", "offload"),
    _flag("lmcache_env", ("--lmcache-env",), "", bool,
          "read LMCACHE_* variables (and LMCACHE_CONFIG_FILE) from this process's environment", "offload"),
    _flag("lmcache_env_file", ("--lmcache-env-file",), "", str,
          "read LMCACHE_* variables from a .env-style file (NAME=VALUE lines)", "offload"),
    _flag("draft_config", ("--draft-config",), "model.draft.hf_config", str, "an EAGLE/EAGLE3 drafter's config.json",
         "input"),
    _flag("speculative", ("--speculative",), "model.draft.method", str, "eagle | eagle3 | mtp", "input"),
)
FLAGS: dict[str, Flag] = {f.name: f for f in LAYOUT_FLAGS}
SWEEP_AXES: tuple[Flag, ...] = tuple(f for f in LAYOUT_FLAGS if f.sweep)
LMCACHE_SOURCES = ("lmcache_config", "lmcache_env", "lmcache_env_file")
