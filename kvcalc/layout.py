"""A validated input, as frozen dataclasses: model, parallelism, cache, offload, vLLM release.

Nothing here reads files; `load.py` builds these from YAML and checks every key on the way.
Per-layer lists are already expanded (one entry per decoder layer), so later stages never
re-interpret `layer_pattern` or an int-or-list field.
"""

from __future__ import annotations

from dataclasses import dataclass, field

LAYER_KINDS = ("full_attention", "sliding_attention", "chunked_attention", "mla", "mamba", "none",
               "full_attention+mamba")
# Kinds that own a standard (non-MLA) attention module, and kinds that own a Mamba/linear state.
ATTENTION_KINDS = ("full_attention", "sliding_attention", "chunked_attention", "full_attention+mamba")
MAMBA_LAYER_KINDS = ("mamba", "full_attention+mamba")
MAMBA_KINDS = ("mamba1", "mamba2", "gated_delta_net", "short_conv", "linear_attention")
DRAFT_METHODS = ("eagle", "eagle3", "mtp")
HMA_CHOICES = ("auto", "on", "off")
EXECUTOR_BACKENDS = ("mp", "ray", "uni", "external_launcher")
PLATFORMS = ("cuda", "rocm", "xpu")

# KV cache dtype strings: (storage dtype or None for "the model's", extra quantisation, needs 0.20+).
KV_CACHE_DTYPE_TABLE = {
    "auto": (None, None, False),
    "bfloat16": ("bfloat16", None, False),
    "float16": ("float16", None, False),
    "half": ("float16", None, False),
    "float32": ("float32", None, False),
    "float": ("float32", None, False),
    "fp8": ("uint8", None, False),
    "fp8_e4m3": ("uint8", None, False),
    "fp8_e5m2": ("uint8", None, False),
    "fp8_inc": ("uint8", None, False),
    "int8": ("uint8", None, False),
    "fp8_ds_mla": ("uint8", None, False),
    "int8_per_token_head": ("uint8", "per_token_head", True),
    "fp8_per_token_head": ("uint8", "per_token_head", True),
    "nvfp4": ("uint8", "nvfp4", True),
}
KV_CACHE_DTYPES = tuple(KV_CACHE_DTYPE_TABLE)

# Per kind, the Hugging Face fields the state shapes need.
MAMBA_FIELDS = {
    "mamba1": ("hidden_size", "mamba_expand", "mamba_d_state", "mamba_d_conv"),
    "mamba2": ("mamba_num_heads", "mamba_head_dim", "n_groups", "ssm_state_size", "conv_kernel"),
    "gated_delta_net": (
        "linear_num_key_heads",
        "linear_num_value_heads",
        "linear_key_head_dim",
        "linear_value_head_dim",
        "linear_conv_kernel_dim",
    ),
    "short_conv": ("hidden_size", "conv_L_cache"),
    "linear_attention": ("num_attention_heads", "head_dim"),
}
MAMBA_OPTIONAL_FIELDS = {"mamba2": ("chunk_size", "intermediate_size"), "mamba1": ("chunk_size",)}

MAMBA_CACHE_MODES = ("auto", "none", "align", "all")


DEFAULT_BLOCK_SIZE = 16
DEFAULT_MLA_BLOCK_SIZE = 64  # FLASHMLA's block size, vLLM's pick for MLA models on Hopper


def base_block_size(block_size: int | None, is_mla: bool) -> int:
    """The GPU block size before any hybrid bump: the user's, else the backend default (16; 64 for MLA)."""
    if block_size is not None:
        return block_size
    return DEFAULT_MLA_BLOCK_SIZE if is_mla else DEFAULT_BLOCK_SIZE


@dataclass(frozen=True, kw_only=True)
class MambaLayout:
    kind: str
    # The kind's fields under their Hugging Face names, e.g. linear_num_key_heads=16.
    params: tuple[tuple[str, int], ...]

    def get(self, key: str) -> int:
        return dict(self.params)[key]

    def has(self, key: str) -> bool:
        return key in dict(self.params)


@dataclass(frozen=True, kw_only=True)
class DraftLayout:
    method: str
    num_layers: int
    num_kv_heads: int | None = None  # eagle / eagle3: the drafter's own total KV heads
    head_size: int | None = None
    head_size_v: int | None = None
    num_speculative_tokens: int = 1


@dataclass(frozen=True, kw_only=True)
class ModelLayout:
    name: str
    num_layers: int
    dtype: str  # torch dtype name of the served model (bfloat16, float16, float32)
    layer_types: tuple[str, ...]
    num_kv_heads: tuple[int, ...]  # per decoder layer, model total before TP
    head_size: tuple[int, ...]
    head_size_v: tuple[int, ...]
    sliding_window: int | None = None
    attention_chunk_size: int | None = None
    kv_lora_rank: int | None = None
    qk_rope_head_dim: int | None = None
    index_head_dim: int | None = None
    mamba: MambaLayout | None = None
    draft: DraftLayout | None = None
    # False for models whose attention computes heads // TP with no floor at 1 (gpt-oss): TP > heads is refused.
    kv_head_replication: bool = True

    @property
    def is_mla(self) -> bool:
        return "mla" in self.layer_types

    @property
    def has_mamba(self) -> bool:
        return any(k in MAMBA_LAYER_KINDS for k in self.layer_types)


@dataclass(frozen=True, kw_only=True)
class ParallelLayout:
    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    data_parallel_size: int = 1
    pp_layer_partition: tuple[int, ...] | None = None  # as VLLM_PP_LAYER_PARTITION
    distributed_executor_backend: str = "mp"  # mp | ray | uni | external_launcher
    nnodes: int = 1  # nodes one engine (DP replica) spans

    @property
    def world_size(self) -> int:
        # One engine's workers: PP x TP (PCP = 1). DP replicas are separate engines.
        return self.pipeline_parallel_size * self.tensor_parallel_size


@dataclass(frozen=True, kw_only=True)
class CacheLayout:
    block_size: int | None = None  # None: vLLM's backend default (16; 64 for MLA)
    kv_cache_dtype: str = "auto"
    kv_cache_dtype_skip_layers: tuple[int | str, ...] = ()
    kv_cache_memory: tuple[int, ...] | None = None  # one value for all workers, or one per worker
    num_gpu_blocks_override: int | None = None
    max_model_len: int = 0
    max_num_batched_tokens: int = 8192
    enable_prefix_caching: bool | None = None
    hybrid_kv_cache_manager: str = "auto"
    mamba_cache_dtype: str = "auto"
    mamba_ssm_cache_dtype: str = "auto"
    mamba_block_size: int | None = None
    mamba_cache_mode: str = "auto"

    def memory_for(self, worker: int) -> int | None:
        if self.kv_cache_memory is None:
            return None
        if len(self.kv_cache_memory) == 1:
            return self.kv_cache_memory[0]
        return self.kv_cache_memory[worker]


@dataclass(frozen=True, kw_only=True)
class OffloadLayout:
    cpu_bytes_to_use: int
    cpu_bytes_source: str = ""  # what the user wrote, echoed next to the exact byte count
    block_size: int | None = None  # offloaded block size in tokens
    blocks_per_chunk: int | None = None  # 0.26+: GPU blocks per CPU chunk (exclusive with block_size)


@dataclass(frozen=True, kw_only=True)
class Layout:
    model: ModelLayout
    parallel: ParallelLayout = field(default_factory=ParallelLayout)
    cache: CacheLayout = field(default_factory=CacheLayout)
    offload: OffloadLayout
    vllm_version: str
    platform: str = "cuda"  # cuda | rocm | xpu: decides whether 0.28+ has the shared host region
    source: str = "<layout>"  # where it came from, for error messages
    # (key path, where its value came from: a config.json key, a CLI flag, "layout file")
    provenance: tuple[tuple[str, str], ...] = ()
