"""One table of the layout's keys: one `Key` row per key a layout YAML may hold, with how its value is read (kind,
bounds, choices), its default and meaning, the kvcalc flag that sets it, vLLM's `serve` spelling and whether `sweep`
takes a list of it. A new key is one row here: validation (the unknown-key check, defaults, the simple typed reads),
the layout JSON Schema, the CLI options, `vllm serve` parsing, `vllm-args`, the sweep's axes and CSV columns and
`kvcalc init`'s key order all read this table. Rules between keys stay as code in inputs/layout/validate.py.

Pure data: building the table is one record per row at start-up (the CLI's cold start is a target).
"""

from __future__ import annotations

from typing import Any

from .kinds import GPU_ARCHS, KV_CACHE_DTYPES, LAYER_KINDS, MAMBA_KIND_NAMES
from .keys_host import HOST_ROWS
from .keys_lmcache_mp import LMCACHE_MP_ROWS
from .keys_model import MODEL_SHAPE_ROWS
from .layout import (DRAFT_METHODS, ENGINES, EXECUTOR_BACKENDS, HMA_CHOICES, MAMBA_CACHE_MODES, OFFLOAD_CHOICES,
                     PLATFORMS)
from .records import MISSING, fields, record
from .keys_sglang import sglang_rows
from .releases import DEFAULT_LMCACHE_VERSION, LMCACHE_RELEASES
from .releases.vllm import DEFAULT_VERSION, supported_range
from .releases.vllm_quant import ALL_METHODS
from .units import MODEL_DTYPES, SIZE_HELP

# Help groups, in the order `--help` shows them.
GROUPS = ("input", "parallelism", "cache", "gpu", "offload", "release", "output", "checks")

# How a key's value is read (inputs/layout/validate.py) and described (inputs/layout/schema.py). The simple kinds are
# read by their row alone: int (within minimum .. maximum or cap), choice (one of choices), str (text), bool, human
# (vLLM's human_readable_int, at least minimum). The others need code that knows them: section (a mapping of rows),
# const, path (a config.json), size (bytes: 64GiB), sizes (a size, or one per worker), gib (vLLM's GiB float), per_layer
# (an integer, or one per layer), kinds (layer kinds; minimum: the fewest items), ints (a list of integers),
# indices (layer indices or one of choices), choice_or_bool (YAML 1.1 reads on/off as booleans), version (a vLLM
# release), mamba (kind plus that kind's Hugging Face fields, vocab/kinds.MAMBA_KINDS), config (a connector's own
# config keys under their names: LMCache's, vocab/releases/lmcache.py).

# Bounds on what one plan may cost: the worst layout inside them (per-layer heads, 2,048 layers, 64 PP stages)
# plans and renders in ~1.5 s and ~35 MB on a 2-core box (benchmarks/README.md); past them the per-layer report
# alone grows without bound. Real models have at most a few hundred layers and stages.
MAX_LAYERS = 2048
MAX_PP = 64
MAX_DRAFT_LAYERS = 64


@record
class Key:
    path: str  # "cache.block_size"; "" for a flag that sets no single key (SOURCE_FLAGS)
    kind: str  # how the value is read and described (above)
    doc: str = ""  # what the key means: the layout schema's description
    default: Any = None  # the value when the key is absent (None: none)
    nullable: bool = False  # null is accepted (as absent)
    required: bool = False  # a layout YAML must hold it
    minimum: int = 0  # the least value (the fewest items for a list)
    maximum: int | None = None  # the greatest value, stated in the schema too
    cap: int | None = None  # a greatest value kvcalc enforces that the schema does not state
    choices: tuple = ()
    modelled: bool = True  # False: no stage reads the key yet; its value is kept in Layout.unmodelled
    # kvcalc's own flag
    flag: tuple[str, ...] = ()  # spellings; "--a/--b" is an on/off pair
    name: str = ""  # the Python parameter name (and the sweep's CSV column)
    help: str = ""
    panel: str = ""  # the --help group (GROUPS)
    label: str = ""  # how errors name the flag (default: its first spelling)
    switch: tuple = (True, False)  # the values an on/off pair sets
    sweep: int = 0  # a sweep axis: its CSV column (1 is the first); 0: not one
    # vLLM's `serve` flag
    vllm: tuple[str, ...] = ()  # spellings, the long one first (what vllm-args prints)
    vllm_parse: str = ""  # how vLLM reads the value: int | human (human_readable_int) | str | float | switch
    vllm_switch: tuple = (True, False)  # the values --flag and --no-flag set (vllm_parse switch)
    # When vllm-args spells the key: always | changed (the value differs from the default) | plan (its code works the
    # value out from the plan) | "" (not spelled: vLLM reads it from the model's config or from how it is launched)
    vllm_args: str = ""

    @property
    def parent(self) -> str:
        return self.path.rpartition(".")[0]

    @property
    def leaf(self) -> str:
        return self.path.rpartition(".")[2]

    @property
    def named(self) -> str:
        """How an error names the flag."""
        return self.label or self.flag[0]

    @property
    def pair(self) -> bool:
        """The flag is an on/off pair (--a/--b)."""
        return bool(self.flag) and "/" in self.flag[0]

    @property
    def cli_type(self) -> type:
        """The type the CLI parses the flag's value as."""
        if self.pair or self.kind == "bool":
            return bool
        return {"int": int, "gib": float, "fraction": float, "number": float}.get(self.kind, str)

    @property
    def vllm_flag(self) -> str | None:
        """vLLM's spelling of the flag (what vllm-args prints)."""
        return self.vllm[0] if self.vllm else None

    def value(self, raw: Any) -> Any:
        """The key's value from the flag's parsed value."""
        if self.pair:
            return self.switch[0] if raw else self.switch[1]
        return raw

    def vllm_spelled(self, value: Any) -> list[str]:
        """vLLM's arguments that set the key to `value`."""
        if self.vllm_parse == "switch":
            return [self.vllm[0] if value == self.vllm_switch[0] else "--no-" + self.vllm[0][2:]]
        return [self.vllm[0], str(value)]


_DEFAULTS = {f.name: f.default for f in fields(Key) if f.default is not MISSING}
_new, _set = object.__new__, object.__setattr__


def _k(path: str, kind: str, doc: str, **kw) -> Key:
    """One row, made without Key's constructor: the table is built at every start, and the constructor's per-call
    checks (and the compiled constructor a record class gets at its 64th instance) cost more than the rest of the
    table (~3 M instructions, ~0.7 % of `kvcalc plan`'s cold start). The same record Key(...) makes (tests/test_keys.py
    checks every row has exactly Key's fields)."""
    row = _new(Key)
    _set(row, "__dict__", {**_DEFAULTS, **kw, "path": path, "kind": kind, "doc": doc})
    return row


_MAMBA_DTYPES = ("auto", *MODEL_DTYPES)


# In this order: a section's keys in `kvcalc init`'s YAML, in its unknown-key message and (by help group) in --help;
# the keys vllm-args spells, in its output. The sweep's columns follow `sweep`, not this order.
KEYS: tuple[Key, ...] = (
    _k("schema_version", "const", "layout schema version: 1", default=1),
    _k("engine", "choice", "the serving engine whose rules plan the layout: vllm | sglang (then the sglang section)",
       default="vllm", choices=ENGINES, flag=("--engine",), name="engine", panel="release",
       help="vllm (default) | sglang: plan SGLang's token pool and HiCache host pool instead (--sglang-version)"),
    _k("model", "section", "the model: layer kinds and shapes, or hf_config", required=True),
    _k("model.hf_config", "path", "a Hugging Face config.json to read the model from; keys here override it"),
    _k("model.name", "str", "free text, shown in the report", default="unnamed model"),
    _k("model.num_layers", "int", f"decoder layers (at most {MAX_LAYERS:,})", minimum=1, maximum=MAX_LAYERS),
    _k("model.dtype", "choice", "model dtype; the KV dtype when cache.kv_cache_dtype is auto", default="bfloat16",
       choices=tuple(MODEL_DTYPES), vllm=("--dtype",), vllm_parse="str", flag=("--dtype",), name="dtype",
       panel="gpu", help="the dtype vLLM serves the model in (the weights' bytes; the KV dtype when auto)"),
    _k("model.layer_types", "kinds", "one kind per layer (full_attention, sliding_attention, chunked_attention, mla, "
       "mamba, none, full_attention+mamba)", choices=LAYER_KINDS),
    _k("model.layer_pattern", "kinds", "kinds repeated cyclically up to num_layers (default: every layer "
       "full_attention, or mla with kv_lora_rank)", choices=LAYER_KINDS, minimum=1),
    _k("model.num_kv_heads", "per_layer", "KV heads of the model before TP: one number, or one per layer", default=0,
       minimum=0),
    _k("model.head_size", "per_layer", "head size: one number, or one per layer", default=0, minimum=0),
    _k("model.head_size_v", "per_layer", "value head size (default head_size): one number, or one per layer",
       minimum=0, nullable=True),
    _k("model.sliding_window", "int", "window of the sliding_attention layers, tokens", minimum=1, nullable=True),
    _k("model.attention_chunk_size", "int", "chunk of the chunked_attention layers, tokens", minimum=1,
       nullable=True),
    _k("model.kv_lora_rank", "int", "MLA: latent size (one unsharded head of kv_lora_rank + qk_rope_head_dim)",
       minimum=1, nullable=True),
    _k("model.qk_rope_head_dim", "int", "MLA: rope part of the head", minimum=0, nullable=True),
    _k("model.qk_nope_head_dim", "int", "MLA: the non-rope part of a query head (the FlashInfer MLA kernels' check)",
       minimum=0, nullable=True),
    _k("model.num_attention_heads", "int", "query heads before TP (an MLA model's backend priorities read them a "
       "rank)", minimum=1, nullable=True),
    _k("model.attention_sinks", "bool", "the attention layers have sinks (gpt-oss): backends without sinks refuse "
       "them", default=False),
    _k("model.hf_model_type", "str", "the config's top-level model_type: vLLM's attention selection reads it "
       "(gemma3, paligemma, ... attend bidirectionally over image tokens: FLASH_ATTN and FLASHINFER refuse them)",
       nullable=True),
    _k("model.mm_prefix_lm", "bool", "the config's own is_mm_prefix_lm (read before the model-type list)",
       nullable=True),
    _k("model.bidirectional_vision", "bool", "Gemma-4: text_config.use_bidirectional_attention is \"vision\" (vLLM "
       "0.20+ reads it as is_mm_prefix_lm)", default=False),
    *(_k(path, kind, **kw) for path, kind, kw in MODEL_SHAPE_ROWS),
    _k("model.index_head_dim", "int", "DeepSeek-V3.2: the indexer's head next to every mla layer", minimum=1,
       nullable=True),
    _k("model.max_position_embeddings", "int", "default for cache.max_model_len", minimum=1, nullable=True),
    _k("model.kv_cache_dtype_auto", "bool", "true when the model's attention is built without vLLM's cache config "
       "(Falcon): its KV cache keeps the model dtype whatever cache.kv_cache_dtype says", default=False),
    _k("model.kv_head_replication", "bool", "false when the model's attention divides KV heads by TP without "
       "replicating (gpt-oss)", default=True),
    _k("model.mamba", "mamba", "the Mamba layers' state: kind and that kind's Hugging Face fields"),
    _k("model.mamba.kind", "choice", " | ".join(MAMBA_KIND_NAMES), choices=MAMBA_KIND_NAMES, required=True),
    _k("model.draft", "section", "speculative decoding layers on the last PP stage"),
    _k("model.draft.hf_config", "path", "the drafter's own config.json", flag=("--draft-config",),
       name="draft_config", help="an EAGLE/EAGLE3 drafter's config.json", panel="input"),
    _k("model.draft.method", "choice", "eagle | eagle3 (own attention shape) | mtp (the main model's layer shape) | "
       "ngram | suffix (no draft model: no KV layers)",
       choices=DRAFT_METHODS, flag=("--speculative",), name="speculative", help=" | ".join(DRAFT_METHODS),
       panel="input"),
    _k("model.draft.num_layers", "int", f"draft layers (at most {MAX_DRAFT_LAYERS})", default=1, minimum=1,
       maximum=MAX_DRAFT_LAYERS),
    _k("model.draft.num_kv_heads", "int", "eagle/eagle3: the drafter's KV heads", minimum=1),
    _k("model.draft.head_size", "int", "eagle/eagle3: the drafter's head size", minimum=1),
    _k("model.draft.head_size_v", "int", "eagle/eagle3: the drafter's value head size", minimum=1, nullable=True),
    _k("model.draft.num_speculative_tokens", "int", "speculative tokens (Mamba conv state rows, MTP retained tokens)",
       default=1, minimum=1, cap=1000),

    _k("parallel", "section", "parallelism of one engine, and the engines"),
    _k("parallel.tensor_parallel_size", "int", "TP size", default=1, minimum=1, cap=4096,
       flag=("--tp", "--tensor-parallel-size"), name="tp", help="tensor parallel size", panel="parallelism", sweep=1,
       vllm=("--tensor-parallel-size", "-tp"), vllm_parse="int", vllm_args="always"),
    _k("parallel.pipeline_parallel_size", "int", f"PP size (at most {MAX_PP})", default=1, minimum=1, maximum=MAX_PP,
       flag=("--pp", "--pipeline-parallel-size"), name="pp", help="pipeline parallel size", panel="parallelism",
       sweep=2, vllm=("--pipeline-parallel-size", "-pp"), vllm_parse="int", vllm_args="changed"),
    _k("parallel.data_parallel_size", "int", "DP size: engines, each with its own CPU budget", default=1, minimum=1,
       cap=65536, flag=("--dp", "--data-parallel-size"), name="dp", help="data parallel size (engines)",
       panel="parallelism", vllm=("--data-parallel-size", "-dp"), vllm_parse="int", vllm_args="changed"),
    _k("parallel.pp_layer_partition", "ints", "layers per PP stage, as VLLM_PP_LAYER_PARTITION", minimum=1),
    _k("parallel.distributed_executor_backend", "choice", "mp | ray | uni | external_launcher (which multiplies the "
       "world size by DP)", default="mp", choices=EXECUTOR_BACKENDS, flag=("--distributed-executor-backend",),
       name="backend", help=" | ".join(EXECUTOR_BACKENDS), panel="parallelism",
       vllm=("--distributed-executor-backend",), vllm_parse="str", vllm_args="changed"),
    _k("parallel.nnodes", "int", "vLLM's --nnodes: the nodes of the whole DP x PP x TP world", default=1, minimum=1,
       cap=65536, flag=("--nnodes",), name="nnodes",
       help="the nodes of the whole deployment (DP x PP x TP ranks over them), as vLLM's --nnodes",
       panel="parallelism", vllm=("--nnodes",), vllm_parse="int"),
    _k("parallel.data_parallel_size_local", "int", "engines on one node (default: every DP replica, or what vLLM "
       "infers from --nnodes)", minimum=1,
       nullable=True, flag=("--data-parallel-size-local",), name="dp_local",
       help="DP replicas (engines) on one node: the node pays their host memory (default: every replica)",
       panel="parallelism", vllm=("--data-parallel-size-local", "-dpl"), vllm_parse="int"),

    # Before cache: vllm-args spells --attention-backend before the cache's flags.
    _k("vllm", "section", "the vLLM release and platform"),
    _k("vllm.version", "version", f"the release, {supported_range()} (quoted if it has two parts)",
       default=DEFAULT_VERSION, flag=("--vllm-version",), name="vllm_version", panel="release", sweep=6,
       help=f"vLLM release, {supported_range()} (default {DEFAULT_VERSION}); `kvcalc versions` lists the families"),
    _k("vllm.platform", "choice", " | ".join(PLATFORMS), default="cuda", choices=PLATFORMS, flag=("--platform",),
       name="platform", help=" | ".join(PLATFORMS), panel="release"),
    _k("vllm.attention_backend_env", "str", "VLLM_ATTENTION_BACKEND in the engine's environment (a serve line's or "
       "manifest's variable sets it): vLLM 0.14.x takes it over --attention-backend; 0.15+ does not read it",
       nullable=True),
    _k("vllm.attention_backend", "str", "vLLM's --attention-backend, an AttentionBackendEnum name of the release "
       "(null: the backend the release selects for the GPU)", nullable=True, flag=("--attention-backend",),
       name="attention_backend", help="force vLLM's attention backend (FLASH_ATTN, FLASHINFER, TRITON_ATTN, FLASHMLA, "
       "FLASH_ATTN_MLA, FLASHINFER_MLA, ...; default: the release's own pick for the GPU)", panel="release",
       vllm=("--attention-backend",), vllm_parse="str", vllm_args="changed"),
    _k("vllm.gpu_arch", "choice", "sm90 (H100) | sm100 (B200): the GPU class without gpu.name (null: the named GPU's, "
       "else sm90)", nullable=True, choices=GPU_ARCHS, flag=("--gpu-arch",), name="gpu_arch", panel="release",
       help="sm90 (H100) | sm100 (B200): the GPU class without --gpu"),
    _k("vllm.rocm_use_aiter", "bool", "VLLM_ROCM_USE_AITER=1 in the engine's environment (ROCm's AITER backends; a "
       "serve line's or manifest's variable sets it)", default=False, flag=("--rocm-use-aiter",),
       name="rocm_use_aiter", panel="release", help="ROCm: VLLM_ROCM_USE_AITER=1 (AITER attention backends)"),

    *sglang_rows(_k),  # engine sglang: vocab/keys_sglang.py

    _k("cache", "section", "vLLM's cache config"),
    _k("cache.block_size", "int", "GPU block size in tokens (default: the attention backend's, 16; 64 for MLA)",
       minimum=1, cap=1 << 20, nullable=True, flag=("--block-size",), name="block_size",
       help="GPU block size in tokens", panel="cache", sweep=3, vllm=("--block-size",), vllm_parse="int",
       vllm_args="plan"),
    _k("cache.kv_cache_dtype", "choice", "KV cache dtype (auto: the model dtype)", default="auto",
       choices=KV_CACHE_DTYPES, flag=("--kv-cache-dtype",), name="kv_cache_dtype",
       help="vLLM's --kv-cache-dtype string", panel="cache", sweep=5, vllm=("--kv-cache-dtype",), vllm_parse="str",
       vllm_args="changed"),
    _k("cache.kv_cache_dtype_skip_layers", "indices", "layer indices, or sliding_window, kept at the model dtype "
       "(0.19.0+)", default=(), minimum=0, choices=("sliding_window",)),
    _k("cache.kv_cache_memory", "sizes", "KV cache memory per GPU (one size, or one per worker); without it the GPU "
       "block count is not computed", minimum=0, nullable=True, flag=("--kv-cache-memory",), name="kv_cache_memory",
       help=f"KV cache memory per GPU (vLLM's --kv-cache-memory-bytes). SIZE: {SIZE_HELP}", panel="cache",
       vllm=("--kv-cache-memory-bytes",), vllm_parse="human", vllm_args="plan"),
    _k("cache.num_gpu_blocks_override", "int", "GPU blocks instead of the count from memory", minimum=0,
       nullable=True, flag=("--num-gpu-blocks-override",), name="num_gpu_blocks_override",
       help="GPU blocks, instead of the count from memory", panel="cache", vllm=("--num-gpu-blocks-override",),
       vllm_parse="int", vllm_args="changed"),
    _k("cache.max_model_len", "human", "the longest request, tokens (128K = 131072, 128k = 128000)", minimum=1,
       flag=("--max-model-len",), name="max_model_len", help="tokens; 128K = 131072, 128k = 128000", panel="cache",
       vllm=("--max-model-len",), vllm_parse="human", vllm_args="always", sweep=10),
    _k("cache.max_num_batched_tokens", "human", "tokens per scheduler step", default=8192, minimum=1,
       flag=("--max-num-batched-tokens",), name="max_num_batched_tokens", help="tokens per scheduler step",
       panel="cache", vllm=("--max-num-batched-tokens",), vllm_parse="human", vllm_args="always"),
    _k("cache.enable_prefix_caching", "bool", "null: vLLM's default (on; off for models with Mamba layers)",
       nullable=True, flag=("--enable-prefix-caching/--no-enable-prefix-caching",), name="prefix",
       label="--enable-prefix-caching", help="prefix caching on/off (default: vLLM's)", panel="cache",
       vllm=("--enable-prefix-caching",), vllm_parse="switch", vllm_args="plan"),
    _k("cache.mamba_cache_dtype", "choice", "Mamba conv state dtype", default="auto", choices=_MAMBA_DTYPES,
       vllm=("--mamba-cache-dtype",), vllm_parse="str"),
    _k("cache.mamba_ssm_cache_dtype", "choice", "Mamba SSM state dtype (auto: the conv dtype)", default="auto",
       choices=_MAMBA_DTYPES, vllm=("--mamba-ssm-cache-dtype",), vllm_parse="str"),
    _k("cache.mamba_block_size", "int", "Mamba block size in tokens", minimum=1, nullable=True,
       vllm=("--mamba-block-size",), vllm_parse="int"),
    _k("cache.mamba_cache_mode", "choice", "auto | none | align | all (which the release accepts)", default="auto",
       choices=MAMBA_CACHE_MODES, vllm=("--mamba-cache-mode",), vllm_parse="str", vllm_args="plan"),
    _k("cache.enable_chunked_prefill", "bool", "null: vLLM's default (on); off, vLLM refuses max_num_batched_tokens "
       "below max_model_len", nullable=True,
       flag=("--enable-chunked-prefill/--no-enable-chunked-prefill",), name="chunked_prefill",
       label="--enable-chunked-prefill", help="chunked prefill on/off (default: vLLM's)", panel="cache",
       vllm=("--enable-chunked-prefill",), vllm_parse="switch", vllm_args="changed"),
    _k("cache.allow_long_max_model_len", "bool", "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 in the server's environment: "
       "max_model_len may pass the model's derived maximum (vLLM warns instead of refusing)", default=False),
    _k("cache.max_num_seqs", "int", "sequences per scheduler step (null: vLLM's default for the GPU class, 1024 or "
       "256); the profile run's sampler rows and the CUDA-graph sizes follow it", minimum=1, cap=1 << 20,
       nullable=True, flag=("--max-num-seqs",), name="max_num_seqs", help="sequences per step (default: vLLM's "
       "for the GPU class)", panel="gpu", vllm=("--max-num-seqs",), vllm_parse="int", vllm_args="changed"),
    _k("cache.hybrid_kv_cache_manager", "choice_or_bool", "auto (what vLLM decides for the release) | on | off",
       default="auto", choices=HMA_CHOICES, flag=("--hma/--no-hma",), name="hma", switch=("on", "off"),
       help="force the hybrid KV cache manager on/off", panel="cache", vllm=("--disable-hybrid-kv-cache-manager",),
       vllm_parse="switch", vllm_switch=("off", "on"), vllm_args="plan"),

    _k("gpu", "section", "the GPU the workers run on: with a total (name or total_memory) and no "
       "cache.kv_cache_memory, the KV budget is predicted per release"),
    _k("gpu.name", "str", "the device as torch names it (NVIDIA H100 80GB HBM3) or a short form (H100): its total "
       "from kvcalc's table of logged totals", flag=("--gpu",), name="gpu", panel="gpu", sweep=9,
       help="the GPU as torch names it or a short form (H100, A100-80GB, A10, GB10): predicts the KV budget"),
    _k("gpu.total_memory", "size", "the device's total as torch reports it (mem_get_info), instead of a name",
       flag=("--gpu-total-memory",), name="gpu_total_memory", panel="gpu",
       help=f"the device total as torch reports it (vLLM logs it as total_memory). SIZE: {SIZE_HELP}"),
    _k("gpu.memory_utilization", "fraction", "vLLM's --gpu-memory-utilization (null: the release's default, 0.9 "
       "up to 0.19.1, 0.92 from 0.20.0)", nullable=True, flag=("--gpu-memory-utilization",),
       name="gpu_memory_utilization", panel="gpu", sweep=8, help="fraction of the device vLLM requests (default: the "
       "release's)", vllm=("--gpu-memory-utilization",), vllm_parse="float", vllm_args="changed"),
    _k("gpu.used_memory", "size", "device memory other processes hold when vLLM starts (co-located engines, sleep "
       "mode, other tenants): vLLM refuses to start when total - used < total x utilization", nullable=True,
       flag=("--gpu-used-memory",), name="gpu_used_memory", panel="gpu",
       help=f"GPU memory already in use when vLLM starts (vLLM checks free >= total x utilization). SIZE: {SIZE_HELP}"),
    _k("gpu.estimate_cudagraphs", "bool", "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS in the engine's environment (a "
       "serve line's or manifest's variable sets it; null: the release's default, off up to 0.19.1, on from 0.20.0)",
       nullable=True),
    _k("gpu.enforce_eager", "bool", "no CUDA graphs (vLLM's --enforce-eager)", default=False,
       flag=("--enforce-eager",), name="enforce_eager", panel="gpu", help="no CUDA graphs: no graph memory",
       vllm=("--enforce-eager",), vllm_parse="switch", vllm_args="changed"),
    _k("gpu.quantization", "choice", "vLLM's --quantization: a runtime method for a checkpoint that is not "
       "quantized (fp8, fp8_per_block, bitsandbytes, experts_int8, ...: the weights at that method's bytes), or the "
       "quantized checkpoint's own method (its config's quant_method, or a Marlin / override form of it); each "
       "release accepts its own list (vocab/releases/vllm_quant.py)", nullable=True,
       choices=ALL_METHODS, flag=("--quantization",), name="quantization", panel="gpu",
       help="vLLM's --quantization (fp8, fp8_per_block, bitsandbytes, experts_int8, ...)",
       vllm=("--quantization", "-q"), vllm_parse="str", vllm_args="changed"),

    _k("offload", "section", "the CPU offload pool: the native offloading connector's budget (without one the GPU "
       "side alone is planned), or LMCache's config"),
    _k("offload.cpu_bytes_to_use", "size", "the CPU budget of one engine", flag=("--cpu-bytes",), name="cpu_bytes",
       help="cpu_bytes_to_use: the CPU budget of ONE engine (all TP x PP workers of one DP replica). SIZE: "
            f"{SIZE_HELP}", panel="offload", sweep=4),
    _k("offload.kv_offloading_size", "gib", "the budget as vLLM's --kv-offloading-size: GiB through a float",
       minimum=0, cap=1 << 30, flag=("--kv-offloading-size",), name="kv_offloading_size",
       help="as vLLM's flag: GiB, converted as int(X * 2**30)", panel="offload", vllm=("--kv-offloading-size",),
       vllm_parse="float", vllm_args="plan"),
    _k("offload.block_size", "int", "offloaded block size in tokens, a multiple of the GPU block size", minimum=1,
       nullable=True, flag=("--offload-block-size",), name="offload_block_size",
       help="offloaded block size in tokens", panel="offload", sweep=7),
    _k("offload.blocks_per_chunk", "int", "0.26+: GPU blocks per CPU chunk (instead of block_size)", minimum=1,
       nullable=True, flag=("--blocks-per-chunk",), name="blocks_per_chunk", help="0.26+: GPU blocks per CPU chunk",
       panel="offload"),
    _k("offload.backend", "choice", "native (vLLM's OffloadingConnector) | lmcache (LMCacheConnectorV1; with "
       "kv_offloading_size, vLLM's --kv-offloading-backend lmcache) | lmcache_mp (LMCacheMPConnector: the LMCache "
       "server's pool) | simple (SimpleCPUOffloadConnector) | none (no KV connector; absent: none when no budget, "
       "LMCache key or connector setting is given, else native)", default="native", choices=OFFLOAD_CHOICES,
       flag=("--offload-backend",), name="offload_backend", help="native (vLLM's OffloadingConnector, the default with "
       "a budget) | lmcache (LMCacheConnectorV1: LMCache's pool per rank; with --kv-offloading-size, vLLM's flag) | "
       "lmcache_mp (LMCacheMPConnector: the LMCache server's pool per node) | simple (SimpleCPUOffloadConnector) | "
       "none (no KV connector, the default without a budget)", panel="offload"),
    _k("offload.use_simple_kv_offload", "bool", "VLLM_USE_SIMPLE_KV_OFFLOAD=1 in the engine's environment: with "
       "kv_offloading_size, vLLM 0.19.0+ starts SimpleCPUOffloadConnector instead of OffloadingConnector",
       default=False),
    # backend simple: SimpleCPUOffloadConnector's kv_connector_extra_config keys, under vLLM's names (the budget is
    # offload.cpu_bytes_to_use or kv_offloading_size, for the engine; the connector's default is 8 GiB).
    _k("offload.simple", "section", "backend simple: SimpleCPUOffloadConnector's kv_connector_extra_config keys"),
    _k("offload.simple.cpu_bytes_to_use_per_rank", "size", "bytes per rank, instead of cpu_bytes_to_use // world "
       "size", nullable=True),
    _k("offload.simple.num_cpu_blocks", "int", "0.33.0+: the CPU blocks every rank allocates (at most its capacity)",
       minimum=1, nullable=True),
    _k("offload.simple.kv_offload_backend", "choice", "cpu | disk (0.28.0+: the blocks live in per-rank files)",
       default="cpu", choices=("cpu", "disk")),
    _k("offload.simple.disk_path", "str", "disk: the path prefix of the per-rank files ({disk_path}.rank_N)",
       nullable=True),
    _k("offload.simple.disk_capacity_bytes", "size", "disk: bytes per rank (default 100 GiB)",
       default=100 << 30),
    _k("offload.simple.disk_buffer_slots", "int", "disk: pinned staging slots per region (vLLM takes max(1, n))",
       default=2, minimum=0),
    _k("offload.simple.use_page_cache", "bool", "disk: buffered I/O instead of O_DIRECT", default=False),
    _k("offload.simple.lazy_offload", "bool", "store blocks only when the GPU pool runs low", default=False),
    _k("offload.lmcache", "config", "backend lmcache: LMCache config keys under their LMCache names (any key the "
       "release defines; those that do not change the CPU pool are listed in a note)"),
    _k("offload.lmcache.version", "choice", f"the LMCache release whose rules apply ({LMCACHE_RELEASES[0]} - "
       f"{LMCACHE_RELEASES[-1]}; default {DEFAULT_LMCACHE_VERSION})", default=DEFAULT_LMCACHE_VERSION,
       choices=LMCACHE_RELEASES, flag=("--lmcache-version",), name="lmcache_version", panel="offload",
       help=f"LMCache release whose rules apply, {LMCACHE_RELEASES[0]} - {LMCACHE_RELEASES[-1]} (default "
            f"{DEFAULT_LMCACHE_VERSION})"),
    *(_k(path, kind, **kw) for path, kind, kw in LMCACHE_MP_ROWS),

    *(_k(path, kind, **kw) for path, kind, kw in HOST_ROWS),
)

# Flags that set no single key: LMCache's own config sources (inputs/layout/lmcache_sources.py turns them into
# offload.lmcache.* keys, in LMCache's precedence); each implies --offload-backend lmcache.
SOURCE_FLAGS: tuple[Key, ...] = (
    _k("", "path", "", flag=("--lmcache-config",), name="lmcache_config", panel="offload",
       help="an LMCache config YAML (what LMCACHE_CONFIG_FILE names); LMCACHE_* variables override it"),
    _k("", "bool", "", flag=("--lmcache-env",), name="lmcache_env", panel="offload",
       help="read LMCACHE_* variables (and LMCACHE_CONFIG_FILE) from this process's environment"),
    _k("", "path", "", flag=("--lmcache-env-file",), name="lmcache_env_file", panel="offload",
       help="read LMCACHE_* variables from a .env-style file (NAME=VALUE lines)"),
    _k("", "str", "", flag=("--lmcache-server",), name="lmcache_server", panel="offload",
       help="the LMCache MP server's command line ('lmcache server --l1-size-gb 100 --eviction-policy LRU ...'), read "
            "as its parser reads it: the pool of LMCacheMPConnector"),
)



def _index() -> tuple[dict[str, Key], dict[str, tuple[str, ...]]]:
    by_path: dict[str, Key] = {}
    children: dict[str, list[str]] = {}
    for k in KEYS:
        by_path[k.path] = k
        parent, _, leaf = k.path.rpartition(".")
        children.setdefault(parent, []).append(leaf)
    return by_path, {parent: tuple(leaves) for parent, leaves in children.items()}


# KEY: path -> row; CHILDREN: a mapping's path ("" for the top level) -> its keys, in table order.
KEY, CHILDREN = _index()
# Every flag that sets a key, then LMCache's sources: the options every layout command takes, in this order.
FLAGS: dict[str, Key] = {k.name: k for k in KEYS + SOURCE_FLAGS if k.flag}
# The sweep's axes, in the order of its CSV columns.
SWEEP_AXES: tuple[Key, ...] = tuple(sorted((k for k in KEYS if k.sweep), key=lambda k: k.sweep))
# Keys no stage reads yet: validate reads them by their kind and keeps them in Layout.unmodelled.
UNMODELLED: tuple[Key, ...] = tuple(k for k in KEYS if not k.modelled)
