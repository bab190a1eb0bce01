"""A validated input, as frozen records: model, parallelism, cache, offload, vLLM release.

Nothing here reads files; `load.py` builds these from YAML and checks every key on the way. Per-layer lists
are expanded (one entry per decoder layer), and `ModelLayout.layer_runs` compresses them once into runs of
equal layers, so later stages work per distinct layer shape, not per layer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import InternalError
from .kinds import GPU_ARCH_CAPABILITY, LayerKind, MAMBA_KINDS, MambaKind
from .records import cached, field, record

if TYPE_CHECKING:
    from typing import TypeVar

    from .releases.lmcache import LMCacheLayout
    from .releases.lmcache_mp import MPLayout
    from .releases.sglang import SglangLayout
    from .releases.simple import SimpleLayout
    from .weights import WeightsSpec

    _Sig = TypeVar("_Sig")

DRAFT_METHODS = ("eagle", "eagle3", "mtp", "dspark", "ngram", "suffix")
# Drafters with no model and so no KV layers (vLLM 0.33.0 config/speculative.py:74-82 SpeculativeMethod "ngram",
# "ngram_gpu", "suffix"): they still set num_speculative_tokens (Mamba conv rows, config/vllm.py) and count as a
# speculative config.
LAYERLESS_DRAFT_METHODS = ("ngram", "suffix")
HMA_CHOICES = ("auto", "on", "off")
EXECUTOR_BACKENDS = ("mp", "ray", "uni", "external_launcher")
PLATFORMS = ("cuda", "rocm", "xpu")
MAMBA_CACHE_MODES = ("auto", "none", "align", "all")
# the connectors (--compare-backends puts them side by side)
OFFLOAD_BACKENDS = ("native", "lmcache", "lmcache_mp", "simple")
# offload.backend: a connector, or none (vLLM without a KV connector: no budget, no connector, no LMCache key)
OFFLOAD_CHOICES = OFFLOAD_BACKENDS + ("none",)
ENGINES = ("vllm", "sglang")  # the serving engines kvcalc plans (--engine; --compare-engines puts them side by side)

DEFAULT_BLOCK_SIZE = 16
# The GPU class kvcalc assumes without --gpu or --gpu-arch (vLLM's backend and block size follow from it).
DEFAULT_GPU_CLASS = {"cuda": ("9.0", "an H100-class GPU"), "rocm": ("gfx942", "an MI300X-class GPU")}


@record
class MambaLayout:
    kind: str
    # The kind's fields under their Hugging Face names, e.g. linear_num_key_heads=16.
    params: tuple[tuple[str, int], ...]
    state_dtype: str | None = None  # the config's mamba_ssm_cache_dtype (what cache.mamba_ssm_cache_dtype auto takes)

    @cached
    def values(self) -> dict[str, int]:
        return dict(self.params)

    @property
    def row(self) -> MambaKind:
        return MAMBA_KINDS[self.kind]

    def get(self, key: str) -> int:
        return self.values[key]

    def has(self, key: str) -> bool:
        return key in self.values


@record
class DraftLayout:
    method: str
    num_layers: int
    num_kv_heads: int | None = None  # eagle / eagle3: the drafter's own total KV heads
    head_size: int | None = None
    head_size_v: int | None = None
    num_speculative_tokens: int = 1

    @property
    def shape(self) -> tuple[int, int, int]:
        """(KV heads, head size, value head size) of an eagle drafter's own attention (validation requires them)."""
        if self.num_kv_heads is None or self.head_size is None:
            raise InternalError(f"a {self.method} drafter has no attention shape of its own")
        return self.num_kv_heads, self.head_size, self.head_size_v or self.head_size


def _runs(sig: tuple[_Sig, ...]) -> tuple[tuple[_Sig, range], ...]:
    """Per-layer signatures -> the fewest (signature, range) runs that cover them in order: contiguous runs, or
    one strided run per offset of the sequence's period when that is fewer (Gemma-3's 5 sliding + 1 full
    repeated over 62 layers: 6 strided runs instead of 21 contiguous ones)."""
    n = len(sig)
    if n == 0:
        return ()
    if len(set(sig)) == 1:
        return ((sig[0], range(0, n)),)
    contiguous: list[tuple[_Sig, range]] = []
    start = 0
    for i in range(1, n + 1):
        if i == n or sig[i] != sig[start]:
            contiguous.append((sig[start], range(start, i)))
            start = i
    # The smallest period p with sig[i] == sig[i + p] (KMP failure function).
    fail = [0] * n
    k = 0
    for i in range(1, n):
        while k and sig[i] != sig[k]:
            k = fail[k - 1]
        if sig[i] == sig[k]:
            k += 1
        fail[i] = k
    p = n - fail[-1]
    if p < len(contiguous):
        return tuple((sig[o], range(o, n, p)) for o in range(p))
    return tuple(contiguous)


@record(cache_hash=True)  # the attention memo hashes it every plan (3.6 us uncached, a 61-layer model)
class ModelLayout:
    name: str
    num_layers: int
    dtype: str  # torch dtype name of the served model (bfloat16, float16, float32)
    layer_types: tuple[LayerKind, ...]
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
    num_attention_heads: int | None = None  # query heads before TP (MLA backends' priorities read them a rank)
    qk_nope_head_dim: int | None = None  # MLA: the FlashInfer MLA kernels' check
    attention_sinks: bool = False  # the attention layers pass sinks (gpt-oss)
    hf_model_type: str | None = None  # the config's top-level model_type (vLLM's is_mm_prefix_lm reads it)
    mm_prefix_lm: bool | None = None  # the config's own is_mm_prefix_lm
    bidirectional_vision: bool = False  # Gemma-4: text_config.use_bidirectional_attention == "vision"
    # True for models whose attention ignores --kv-cache-dtype (Falcon: built without the cache config).
    kv_cache_dtype_auto: bool = False
    mla_per_layer: int = 1  # LongCat-Flash: two MLA attentions (two KV caches) in every decoder layer
    sink_len: int | None = None  # openPangu's static sink tokens (SinkFullAttentionSpec.sink_len)
    index_skip_layers: frozenset[int] = frozenset()  # mla layers with no indexer cache of their own (HY-V4)
    requires_backend: str | None = None  # the attention backend the model asserts (Flint: FLASHINFER)
    head_size_v_since: str | None = None  # the first release keeping head_size_v (earlier: V padded to K's size)
    registered_since: str | None = None  # the first vLLM release listing the architecture (earlier ones refuse it)
    tp_must_divide: int | None = None  # the model refuses a TP size that does not divide it (Dory: 1)
    pipeline_parallel: bool = True  # False: the model class does not implement SupportsPP (PP > 1 refused)

    @cached
    def kinds(self) -> frozenset[LayerKind]:
        """The layer kinds present."""
        return frozenset(self.layer_types)

    @cached
    def is_mla(self) -> bool:
        """vLLM's use_mla: MLA layers, or DeepSeek-V4's (transformers_utils/model_arch_config_convertor.py:302
        @0.33.0)."""
        return LayerKind.MLA in self.kinds or self.is_dsv4

    @cached
    def is_dsv4(self) -> bool:
        return any(k.dsv4 for k in self.kinds)

    @cached
    def has_mamba(self) -> bool:
        return any(k.mamba for k in self.kinds)

    @cached
    def first_attention(self) -> int | None:
        """The index of the first decoder layer with attention (None: attention-free)."""
        return next((i for i, t in enumerate(self.layer_types) if t.attention), None)

    @cached
    def mla_head_size(self) -> int:
        """One MLA latent "head": kv_lora_rank + qk_rope_head_dim (validation requires both with MLA layers)."""
        if self.kv_lora_rank is None or self.qk_rope_head_dim is None:
            raise InternalError(f"{self.name}: an MLA spec was asked of a model without MLA layers")
        return self.kv_lora_rank + self.qk_rope_head_dim

    @property
    def mamba_section(self) -> MambaLayout:
        """`mamba`, where the model has Mamba layers (validation sets it with them)."""
        if self.mamba is None:
            raise InternalError(f"{self.name}: a Mamba spec was asked of a model without Mamba layers")
        return self.mamba

    @property
    def draft_section(self) -> DraftLayout:
        """`draft`, where the model has a drafter."""
        if self.draft is None:
            raise InternalError(f"{self.name}: a drafter's layers were asked of a model without one")
        return self.draft

    @cached
    def layer_runs(self) -> tuple[tuple[tuple[LayerKind, int, int, int], range], ...]:
        """Decoder layers as runs of one (kind, KV heads, head size, value head size); the heads and sizes of
        layers without standard attention are ignored (0)."""
        sig = tuple((k, h, d, dv) if k.attention else (k, 0, d, 0) if k.dsv4 else (k, 0, 0, 0)
                    for k, h, d, dv in zip(self.layer_types, self.num_kv_heads, self.head_size, self.head_size_v))
        return _runs(sig)


@record
class ParallelLayout:
    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    data_parallel_size: int = 1
    pp_layer_partition: tuple[int, ...] | None = None  # as VLLM_PP_LAYER_PARTITION
    distributed_executor_backend: str = "mp"  # mp | ray | uni | external_launcher
    nnodes: int = 1  # vLLM's --nnodes: the nodes of the whole DP x PP x TP world
    data_parallel_size_local: int | None = None  # DP replicas (engines) on one node; None: vLLM's inference

    @property
    def dp_local(self) -> int:
        """DP replicas on one node: --data-parallel-size-local, else vLLM's inference for nnodes > 1 (engine/
        arg_utils.py 0.14.0:1486-1490, 0.33.0:2442-2446: max(local_world_size // world_size_within_dp, 1), where
        local_world_size = DP x PP x TP // nnodes), else every replica."""
        if self.data_parallel_size_local is not None:
            return self.data_parallel_size_local
        if self.nnodes == 1:
            return self.data_parallel_size
        local_world = self.data_parallel_size * self.workers_per_engine // self.nnodes
        return max(local_world // self.workers_per_engine, 1)

    @property
    def nodes_per_engine(self) -> int:
        """The nodes one engine (DP replica) spans: ParallelConfig.nnodes_within_dp (config/parallel.py 0.14.0:
        448-454, 0.33.0:812-836): nnodes // (DP // DP local), at least 1."""
        if self.nnodes == 1:
            return 1
        return max(self.nnodes // max(self.data_parallel_size // self.dp_local, 1), 1)

    @property
    def engines_per_node(self) -> int:
        """Engines whose host memory one node pays: the DP replicas of its node group (each with the share of its
        ranks the node holds when an engine spans nodes_per_engine nodes)."""
        return self.dp_local

    @property
    def workers_per_engine(self) -> int:
        """One engine's GPU workers: PP x TP (PCP = 1). DP replicas are separate engines."""
        return self.pipeline_parallel_size * self.tensor_parallel_size

    @property
    def world_size(self) -> int:
        """vLLM's world_size as the offloader multiplies it: the engine's workers, times DP under
        external_launcher, which runs every DP rank in one world (spec trap 9)."""
        w = self.workers_per_engine
        return w * self.data_parallel_size if self.distributed_executor_backend == "external_launcher" else w


@record
class CacheLayout:
    block_size: int | None = None  # None: the selected backend's (engines/vllm/attention_block.py)
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
    max_num_seqs: int | None = None  # None: vLLM's default for the GPU class (1024 / 256)
    max_num_batched_tokens_given: bool = True  # False: the default, which a known GPU class replaces
    in_flight_batches: int | None = None  # vLLM 0.26+ max_concurrent_batches (None: one)
    enable_chunked_prefill: bool | None = None  # --[no-]enable-chunked-prefill; None: vLLM's default (on)
    allow_long_max_model_len: bool = False  # VLLM_ALLOW_LONG_MAX_MODEL_LEN=1: past the derived maximum is a warning

    def least_memory(self, workers: range) -> tuple[int, int] | None:
        """(the smallest KV memory among these workers, that worker), or None without KV memory."""
        if self.kv_cache_memory is None:
            return None
        if len(self.kv_cache_memory) == 1:
            return self.kv_cache_memory[0], workers[0]
        return min((self.kv_cache_memory[w], w) for w in workers)


@record
class OffloadLayout:
    cpu_bytes_to_use: int | None  # None: no budget given (the GPU side is planned, CPU counts are not)
    cpu_bytes_source: str = ""  # what the user wrote, echoed next to the exact byte count
    cpu_bytes_written: str | None = None  # cpu_bytes_to_use as written ("64GB"), without where it came from
    block_size: int | None = None  # offloaded block size in tokens
    blocks_per_chunk: int | None = None  # 0.26+: GPU blocks per CPU chunk (exclusive with block_size)
    # native (OffloadingConnector) | lmcache (LMCacheConnectorV1) | simple (SimpleCPU...) | none
    backend: str = "native"
    lmcache: LMCacheLayout | None = None  # backend lmcache: LMCache's config
    simple: SimpleLayout | None = None  # backend simple: SimpleCPUOffloadConnector's config
    # backend lmcache_mp (or lmcache through vLLM's flag on 0.23+): the LMCache MP server the connector attaches to
    lmcache_mp: MPLayout | None = None
    notes: tuple[str, ...] = ()  # what validation decided about the connector, for stderr

    @property
    def budget_given(self) -> bool:
        """A budget for the pool: cpu_bytes_to_use, or a backend that sizes its pool from its own config (LMCache's, or
        the LMCache server's command line)."""
        return self.cpu_bytes_to_use is not None or self.lmcache is not None or (
            self.lmcache_mp is not None and self.lmcache_mp.server is not None)


@record(cache_hash=True)
class GpuLayout:
    """The GPU an engine's workers run on, and what vLLM is told about its memory: the KV budget is predicted from
    it when cache.kv_cache_memory is not given (engines/vllm/memory.py)."""

    name: str | None = None  # the device's torch name, or a short form (vocab/devices.py)
    total_memory: int | None = None  # bytes, as torch reports them (mem_get_info total); from the device table or given
    total_source: str = ""  # where total_memory came from
    total_error_gib: str | None = None  # the total is an estimate (vocab/devices.py): its +- GiB
    rocm: bool = False  # an AMD GPU by name: vLLM runs its ROCm platform
    capability: str | None = None  # the named GPU's compute capability or gfx target (vocab/devices.py)
    memory_utilization: float | None = None  # --gpu-memory-utilization; None: the release's default
    used_memory: int | None = None  # bytes other processes hold when vLLM starts (--gpu-used-memory)
    enforce_eager: bool = False  # --enforce-eager: no CUDA graphs
    estimate_cudagraphs: bool | None = None  # VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS; None: the release's default
    estimate_cudagraphs_from: str = ""  # where it was set (a serve line's or manifest's env, the layout key)
    quantization: str | None = None  # runtime --quantization (fp8): linear weights stored in fp8

    @property
    def predicts(self) -> bool:
        """A total is known: the budget can be predicted."""
        return self.total_memory is not None


# vLLM without a KV connector (offload.backend none): what a layout without a budget, connector or LMCache key means.
NO_CONNECTOR = OffloadLayout(backend="none", cpu_bytes_to_use=None, cpu_bytes_source="not given")


@record
class HostLayout:
    """The host the engine runs on, as far as its CPU pool's resident memory goes."""

    page_size: int = 4096  # mmap.PAGESIZE: 4 KiB on x86-64, 64 KiB on some arm64 kernels
    pinned_round_threshold_mb: int | None = None  # PYTORCH_ALLOC_CONF=pinned_max_round_threshold_mb:N (torch 2.13+)
    free_hugepages: int | None = None  # 2 MiB hugepages free on the node (LMCache's MP server checks it at start)
    cpu_offload_gb: float = 0  # --cpu-offload-gb: GiB of weights each GPU rank keeps in pinned host memory

    @property
    def cpu_offload_bytes(self) -> int:
        """int(X * 1024**3) bytes (vLLM 0.33.0 model_executor/offloader/base.py:174 cpu_offload_max_bytes; the UVA
        offloader pins parameters up to it, offloader/uva.py:84-116)."""
        return int(self.cpu_offload_gb * 1024 ** 3)


@record
class ModelLimits:
    """What vLLM's config validation checks against the model's config.json (inputs/hf/limits.py)."""

    num_attention_heads: int | None = None  # the text config's: TP must divide them
    derived_max_model_len: int | float | None = None  # the length key (times a rope factor): --max-model-len's ceiling
    derived_key: str = ""  # the key it came from (max_position_embeddings, ...)
    model_max_length: int | None = None  # the config's model_max_length: a longer max_model_len is allowed below it
    sglang_context_length: int | None = None  # SGLang's derived context length: --context-length's ceiling


@record
class Layout:
    model: ModelLayout
    parallel: ParallelLayout = field(factory=ParallelLayout)
    cache: CacheLayout = field(factory=CacheLayout)
    offload: OffloadLayout
    host: HostLayout = field(factory=HostLayout)
    gpu: GpuLayout = field(factory=GpuLayout)
    # The parameter breakdown the memory model weighs (inputs/hf/weights.py), read only when a budget is predicted;
    # a string: why there is none.
    weights: WeightsSpec | str | None = None
    vllm_version: str
    # where the release came from: a flag, "layout file", a manifest's image, a log's banner; "default" when nothing
    # named one (kvcalc's newest: a warning, and --check refuses to gate on it)
    vllm_version_from: str = "default"
    platform: str = "cuda"  # cuda | rocm | xpu: decides which releases use the shared host region
    attention_backend: str | None = None  # --attention-backend; None: the release's own selection
    gpu_arch: str | None = None  # --gpu-arch (sm90 | sm100): the GPU class without a named GPU
    rocm_use_aiter: bool = False  # VLLM_ROCM_USE_AITER (ROCm's backend choice reads it)
    source: str = "<layout>"  # where it came from, for error messages
    # (key path, where its value came from: a config.json key, a CLI flag, "layout file")
    provenance: tuple[tuple[str, str], ...] = ()
    # the key paths the user set: the layout file's own keys, the flags', a server line's (a log that says otherwise
    # contradicts them: tools/logcheck.py)
    written: frozenset = frozenset()
    limits: ModelLimits | None = None  # the config's limits vLLM checks at start-up (None: no config.json read)
    # (key path, value) of the keys no stage reads yet (vocab/keys: Key.modelled False): validated, defaulted and
    # passed on (vllm-args spells them), until a stage needs the key in its own record.
    unmodelled: tuple[tuple[str, Any], ...] = ()
    engine: str = "vllm"  # vllm | sglang: which engine's rules plan it (ENGINES)
    sglang: SglangLayout | None = None  # engine sglang: SGLang's release and flags (vocab/releases/sglang.py)
    # a server line's words as given (a --serve line, `-- vllm serve ...`, a manifest's container command): what
    # vllm-args keeps of the line where it changes nothing (tools/serve_line.py); None for a layout file or config
    serve_argv: tuple[str, ...] | None = None

    @property
    def gpu_class(self) -> tuple[str, str]:
        """(the compute capability or gfx target vLLM's selection sees, where it came from): the named GPU's row,
        else --gpu-arch, else kvcalc's default class for the platform."""
        if self.gpu.capability is not None:
            return self.gpu.capability, f"{self.gpu.name} (the GPU row: compute capability {self.gpu.capability})"
        if self.gpu_arch is not None:
            cap = GPU_ARCH_CAPABILITY[self.gpu_arch]
            return cap, f"vllm.gpu_arch {self.gpu_arch} (compute capability {cap})"
        cap, what = DEFAULT_GPU_CLASS.get(self.platform, DEFAULT_GPU_CLASS["cuda"])
        return cap, f"kvcalc's default: {what} ({cap}), no --gpu named"

    @property
    def capability(self) -> str:
        """The compute capability (or gfx target) of the GPU class the plan assumes."""
        return self.gpu_class[0]
