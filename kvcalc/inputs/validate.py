"""An expanded layout dict -> a validated `Layout`.

Every key is checked here, so later stages can trust types and ranges; every refusal is a
LayoutError naming the file, the key path (and the CLI flag when a flag set it) and what was expected.
"""

from __future__ import annotations

import math
from typing import Any

from ..vocab.errors import LayoutError, UnsupportedError
from ..vocab.kinds import ATTENTION_BACKEND_NAMES, ATTENTION_BACKENDS, GPU_ARCHS, KV_CACHE_DTYPES, LAYER_KINDS, MAMBA_KIND_NAMES, MAMBA_KINDS, HeadRuleError, LayerKind, heads_per_rank
from ..vocab.layout import (
    DRAFT_METHODS,
    EXECUTOR_BACKENDS,
    OFFLOAD_BACKENDS,
    PLATFORMS,
    HMA_CHOICES,
    MAMBA_CACHE_MODES,
    CacheLayout,
    DraftLayout,
    HostLayout,
    Layout,
    MambaLayout,
    ModelLayout,
    OffloadLayout,
    ParallelLayout,
    base_block_size,
)
from ..vocab.releases import lmcache as lmr
from ..vocab.records import replace
from ..vocab.units import MODEL_DTYPES, gib_float_to_bytes
from ..vocab.releases.vllm import DEFAULT_VERSION, behaviour_for
from .validate_lmcache import lmcache_offload
from .values import Reader

SCHEMA_VERSION = 1

TOP_KEYS = ("schema_version", "model", "parallel", "cache", "offload", "host", "vllm")
MODEL_KEYS = (
    "name", "num_layers", "dtype", "layer_types", "layer_pattern", "num_kv_heads", "head_size", "head_size_v",
    "sliding_window", "attention_chunk_size", "kv_lora_rank", "qk_rope_head_dim", "index_head_dim", "mamba",
    "draft", "max_position_embeddings", "hf_config", "kv_head_replication",
)
DRAFT_KEYS = ("method", "num_layers", "num_kv_heads", "head_size", "head_size_v", "num_speculative_tokens",
              "hf_config")
PARALLEL_KEYS = ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size", "data_parallel_size_local",
                 "pp_layer_partition",
                 "distributed_executor_backend", "nnodes")
CACHE_KEYS = (
    "block_size", "kv_cache_dtype", "kv_cache_dtype_skip_layers", "kv_cache_memory", "num_gpu_blocks_override",
    "max_model_len", "max_num_batched_tokens", "enable_prefix_caching", "hybrid_kv_cache_manager",
    "mamba_cache_dtype", "mamba_ssm_cache_dtype", "mamba_block_size", "mamba_cache_mode",
)
# Bounds on what one plan may cost: the worst layout inside them (per-layer heads, 2,048 layers, 64 PP stages)
# plans and renders in ~1.5 s and ~35 MB on a 2-core box (benchmarks/README.md); past them the per-layer report
# alone grows without bound. Real models have at most a few hundred layers and stages.
MAX_LAYERS = 2048
MAX_PP = 64
MAX_DRAFT_LAYERS = 64
OFFLOAD_KEYS = ("backend", "cpu_bytes_to_use", "kv_offloading_size", "block_size", "blocks_per_chunk", "lmcache")
VLLM_KEYS = ("version", "platform", "attention_backend", "gpu_arch")
HOST_KEYS = ("page_size", "pinned_round_threshold_mb")

















def validate(top: dict, *, source: str, overrides: dict[str, tuple[Any, str]] | None = None,
             origin: dict[str, str] | None = None, model: ModelLayout | None = None) -> Layout:
    """An expanded layout dict -> Layout, or a LayoutError naming the key (and the flag that set it).
    `model`: the already validated `model` section of this same dict (a sweep validates it once)."""
    r = Reader(source, {path: flag for path, (_, flag) in (overrides or {}).items()})
    if top.get("schema_version", SCHEMA_VERSION) != SCHEMA_VERSION:
        raise r.fail("schema_version", f"{SCHEMA_VERSION}", top.get("schema_version"))
    if "model" not in top:
        raise r.fail("model", "a model section (see the README's layout format)")
    model = model or _model(r, top.get("model"))
    parallel = _parallel(r, top.get("parallel"), model)
    mpe = top["model"].get("max_position_embeddings") if isinstance(top.get("model"), dict) else None
    if mpe is not None:
        mpe = r.int_(mpe, "model.max_position_embeddings", minimum=1)
    cache = _cache(r, top.get("cache"), model, parallel, mpe)
    vllm = r.mapping(top.get("vllm"), "vllm", VLLM_KEYS)
    version = vllm.get("version", DEFAULT_VERSION)
    if isinstance(version, float):
        raise r.fail("vllm.version", "a quoted release string such as '0.20.0' (YAML read this as a number)", version)
    version = r.str_(version, "vllm.version")
    try:
        behaviour_for(version)
    except UnsupportedError as e:
        raise UnsupportedError(f"{source}: {r.where('vllm.version')}: {e}") from None
    platform = r.choice(vllm.get("platform", "cuda"), "vllm.platform", PLATFORMS)
    backend = vllm.get("attention_backend")
    if backend is not None:
        backend = r.choice(backend, "vllm.attention_backend", ATTENTION_BACKEND_NAMES)
        if ATTENTION_BACKENDS[backend].mla != model.is_mla:
            kind = "an MLA" if model.is_mla else "a non-MLA"
            names = [b for b, row in ATTENTION_BACKENDS.items() if row.mla == model.is_mla]
            raise r.fail("vllm.attention_backend", f"{kind} attention backend for this model (one of "
                         f"{', '.join(names)})", backend)
    gpu_arch = r.choice(vllm.get("gpu_arch", "sm90"), "vllm.gpu_arch", GPU_ARCHS)
    offload = _offload(r, top.get("offload"), model, cache, backend)
    host = _host(r, top.get("host"))
    return Layout(model=model, parallel=parallel, cache=cache, offload=offload, host=host, vllm_version=version,
                  source=source, platform=platform, attention_backend=backend, gpu_arch=gpu_arch,
                  provenance=tuple(sorted((origin or {}).items())))


def _host(r: Reader, data: Any) -> HostLayout:
    h = r.mapping(data, "host", HOST_KEYS)
    page = r.int_(h.get("page_size", 4096), "host.page_size", minimum=4096, maximum=1 << 30)
    if page & (page - 1):
        raise r.fail("host.page_size", "a power of two >= 4096 (the host's mmap.PAGESIZE)", page)
    threshold = h.get("pinned_round_threshold_mb")
    if threshold is not None:
        threshold = r.int_(threshold, "host.pinned_round_threshold_mb", minimum=0, maximum=1 << 40)
    return HostLayout(page_size=page, pinned_round_threshold_mb=threshold)


def validate_offload(top: dict, base: Layout, *, flags: dict[str, str]) -> Layout:
    """`base` with the offload section of `top` (a layout dict that differs from base's only there); `flags`: key
    path -> the flag that set it (named in error messages and in the budget's source)."""
    r = Reader(base.source, flags)
    return replace(base, offload=_offload(r, top.get("offload"), base.model, base.cache, base.attention_backend))


def validate_model(top: dict, *, source: str) -> ModelLayout:
    """The `model` section of an expanded layout dict alone."""
    if "model" not in top:
        raise LayoutError(source, "model", "a model section (see the README's layout format)")
    return _model(Reader(source, {}), top.get("model"))


def _model(r: Reader, data: Any) -> ModelLayout:
    m = r.mapping(data, "model", MODEL_KEYS)
    if "num_layers" not in m:
        raise r.fail("model.num_layers", "the number of decoder layers")
    n = r.int_(m["num_layers"], "model.num_layers", minimum=1, maximum=MAX_LAYERS)
    name = r.str_(m.get("name", "unnamed model"), "model.name")
    dtype_name = m.get("dtype", "bfloat16")
    if not isinstance(dtype_name, str) or dtype_name not in MODEL_DTYPES:
        raise r.fail("model.dtype", f"one of {', '.join(MODEL_DTYPES)}", dtype_name)
    dtype = MODEL_DTYPES[dtype_name]

    kv_lora = r.opt_int(m, "kv_lora_rank", "model")
    if m.get("layer_types") is not None and m.get("layer_pattern") is not None:
        raise r.fail("model.layer_pattern", "either layer_types or layer_pattern, not both")
    default_kind = LayerKind.MLA if kv_lora else LayerKind.FULL
    if m.get("layer_types") is not None:
        raw = m["layer_types"]
        if not isinstance(raw, list) or len(raw) != n:
            raise r.fail("model.layer_types", f"a list of {n} layer kinds (one per layer)",
                          f"a list of {len(raw)}" if isinstance(raw, list) else raw)
        kinds = tuple(LayerKind(r.choice(v, f"model.layer_types[{i}]", LAYER_KINDS)) for i, v in enumerate(raw))
    elif m.get("layer_pattern") is not None:
        raw = m["layer_pattern"]
        if not isinstance(raw, list) or not raw or len(raw) > n:
            raise r.fail("model.layer_pattern", f"a non-empty list of at most {n} layer kinds", raw)
        pattern = [LayerKind(r.choice(v, f"model.layer_pattern[{i}]", LAYER_KINDS)) for i, v in enumerate(raw)]
        kinds = tuple(pattern[i % len(pattern)] for i in range(n))
    else:
        kinds = (default_kind,) * n
    present = set(kinds)
    std_attn = {k for k in present if k.attention}

    def needed(key: str, why: str) -> int:
        if m.get(key) is None:
            raise r.fail(f"model.{key}", f"a positive integer ({why})")
        return r.int_(m[key], f"model.{key}", minimum=1)

    if std_attn:
        if m.get("num_kv_heads") is None:
            raise r.fail("model.num_kv_heads", "an integer or a per-layer list (the model has attention layers)")
        if m.get("head_size") is None:
            raise r.fail("model.head_size", "an integer or a per-layer list (the model has attention layers)")
    heads = r.per_layer(m.get("num_kv_heads", 0), "model.num_kv_heads", n, minimum=0)
    head_size = r.per_layer(m.get("head_size", 0), "model.head_size", n, minimum=0)
    head_size_v = r.per_layer(m["head_size_v"], "model.head_size_v", n, minimum=0) \
        if m.get("head_size_v") is not None else head_size
    if std_attn:
        for key, vals in (("num_kv_heads", heads), ("head_size", head_size), ("head_size_v", head_size_v)):
            if min(vals) >= 1:
                continue  # the common case: no layer has a zero, whatever its kind
            for i, kind in enumerate(kinds):
                if kind.attention and vals[i] < 1:
                    raise r.fail(f"model.{key}" + (f"[{i}]" if isinstance(m.get(key), list) else ""),
                                 f"a positive value for attention layer {i}", vals[i])
    sliding = needed("sliding_window", "the model has sliding_attention layers") if LayerKind.SLIDING in present \
        else r.opt_int(m, "sliding_window", "model")
    chunk = needed("attention_chunk_size", "the model has chunked_attention layers") \
        if LayerKind.CHUNKED in present else r.opt_int(m, "attention_chunk_size", "model")
    rope = r.opt_int(m, "qk_rope_head_dim", "model", minimum=0)
    if LayerKind.MLA in present:
        kv_lora = needed("kv_lora_rank", "the model has mla layers")
        if rope is None:
            raise r.fail("model.qk_rope_head_dim", "an integer (the model has mla layers)")
    index_dim = r.opt_int(m, "index_head_dim", "model")
    if index_dim is not None and LayerKind.MLA not in present:
        raise r.fail("model.index_head_dim", "no value: the DeepSeek-V3.2 indexer sits next to mla layers only",
                     index_dim)
    mamba = None
    if any(k.mamba for k in present):
        mamba = _mamba(r, m.get("mamba"))
    elif m.get("mamba") is not None:
        raise r.fail("model.mamba", "no mamba section: no layer has the kind mamba")
    draft = _draft(r, m.get("draft"), present) if m.get("draft") is not None else None
    replication = m.get("kv_head_replication", True)
    if not isinstance(replication, bool):
        raise r.fail("model.kv_head_replication", "true or false", replication)
    return ModelLayout(kv_head_replication=replication, name=name, num_layers=n, dtype=dtype, layer_types=kinds, num_kv_heads=heads,
                       head_size=head_size, head_size_v=head_size_v, sliding_window=sliding,
                       attention_chunk_size=chunk, kv_lora_rank=kv_lora, qk_rope_head_dim=rope,
                       index_head_dim=index_dim, mamba=mamba, draft=draft)


def _mamba(r: Reader, data: Any) -> MambaLayout:
    if data is None:
        raise r.fail("model.mamba", f"a mapping with kind ({', '.join(MAMBA_KIND_NAMES)}) and its fields")
    if not isinstance(data, dict):
        raise r.fail("model.mamba", "a mapping", type(data).__name__)
    row = MAMBA_KINDS[r.choice(data.get("kind"), "model.mamba.kind", MAMBA_KIND_NAMES)]
    r.mapping(data, "model.mamba", ("kind",) + row.fields + row.optional + tuple(row.aliases))
    data = dict(data)
    for alias, name in row.aliases.items():
        if data.get(alias) is None:
            continue
        if data.get(name) is not None and data[name] != data[alias]:
            raise r.fail(f"model.mamba.{alias}", f"the value of model.mamba.{name} ({data[name]!r}): both name "
                         "one field", data[alias])
        data[name] = data.pop(alias)
    params = []
    for key in row.fields:
        if data.get(key) is None:
            raise r.fail(f"model.mamba.{key}", f"a positive integer (needed by kind {row.name})")
        params.append((key, r.int_(data[key], f"model.mamba.{key}", minimum=1)))
    for key in row.optional:
        if data.get(key) is not None:
            params.append((key, r.int_(data[key], f"model.mamba.{key}", minimum=1)))
    got = dict(params)
    if row.name == "mamba1" and "intermediate_size" in got and \
            got["intermediate_size"] != got["mamba_expand"] * got["hidden_size"]:
        # transformers MambaConfig / JambaConfig: intermediate_size = expand x hidden_size, the state's width.
        raise r.fail("model.mamba.intermediate_size", f"mamba_expand x hidden_size = "
                     f"{got['mamba_expand'] * got['hidden_size']}", got["intermediate_size"])
    if row.name == "mamba2" and "intermediate_size" in got and \
            got["intermediate_size"] != got["mamba_num_heads"] * got["mamba_head_dim"]:
        # FalconH1Config.validate_architecture: mamba_d_head x mamba_n_heads == the intermediate size.
        raise r.fail("model.mamba.intermediate_size", f"mamba_num_heads x mamba_head_dim = "
                     f"{got['mamba_num_heads'] * got['mamba_head_dim']}", got["intermediate_size"])
    return MambaLayout(kind=row.name, params=tuple(params))


def _draft(r: Reader, data: Any, kinds: set) -> DraftLayout:
    d = r.mapping(data, "model.draft", DRAFT_KEYS)
    method = r.choice(d.get("method"), "model.draft.method", DRAFT_METHODS)
    n = r.int_(d.get("num_layers", 1), "model.draft.num_layers", minimum=1, maximum=MAX_DRAFT_LAYERS)
    ns = r.int_(d.get("num_speculative_tokens", 1), "model.draft.num_speculative_tokens", minimum=1, maximum=1000)
    if method == "mtp":
        if not ({LayerKind.MLA, LayerKind.FULL} & kinds):
            raise r.fail("model.draft.method", "eagle or eagle3: mtp copies the model's mla or full-attention layer",
                         method)
        for key in ("num_kv_heads", "head_size", "head_size_v"):
            if d.get(key) is not None:
                raise r.fail(f"model.draft.{key}", "no value: mtp layers take the main model's shape", d[key])
        return DraftLayout(method=method, num_layers=n, num_speculative_tokens=ns)
    for key in ("num_kv_heads", "head_size"):
        if d.get(key) is None:
            raise r.fail(f"model.draft.{key}", f"a positive integer (the {method} drafter's own attention shape)")
    return DraftLayout(
        method=method, num_layers=n, num_kv_heads=r.int_(d["num_kv_heads"], "model.draft.num_kv_heads", minimum=1),
        head_size=r.int_(d["head_size"], "model.draft.head_size", minimum=1),
        head_size_v=r.opt_int(d, "head_size_v", "model.draft"), num_speculative_tokens=ns,
    )


def _parallel(r: Reader, data: Any, model: ModelLayout) -> ParallelLayout:
    p = r.mapping(data, "parallel", PARALLEL_KEYS)
    tp = r.int_(p.get("tensor_parallel_size", 1), "parallel.tensor_parallel_size", minimum=1, maximum=4096)
    pp = r.int_(p.get("pipeline_parallel_size", 1), "parallel.pipeline_parallel_size", minimum=1, maximum=MAX_PP)
    dp = r.int_(p.get("data_parallel_size", 1), "parallel.data_parallel_size", minimum=1, maximum=65536)
    if pp > model.num_layers:
        raise r.fail("parallel.pipeline_parallel_size", f"at most model.num_layers ({model.num_layers})", pp)
    part = None
    if p.get("pp_layer_partition") is not None:
        raw = p["pp_layer_partition"]
        if not isinstance(raw, list) or len(raw) != pp:
            raise r.fail("parallel.pp_layer_partition", f"a list of {pp} layer counts (one per PP stage)", raw)
        part = tuple(r.int_(v, f"parallel.pp_layer_partition[{i}]", minimum=1) for i, v in enumerate(raw))
        if sum(part) != model.num_layers:
            raise r.fail("parallel.pp_layer_partition", f"counts summing to model.num_layers ({model.num_layers})",
                          list(part))
    checked = set()
    for (kind, heads, _, _), _ in model.layer_runs:
        if kind.attention and heads not in checked:
            checked.add(heads)
            _check_heads(r, heads, tp, "model.num_kv_heads", "parallel.tensor_parallel_size",
                         replicates=model.kv_head_replication)
    if model.draft and model.draft.num_kv_heads:
        _check_heads(r, model.draft.num_kv_heads, tp, "model.draft.num_kv_heads", "parallel.tensor_parallel_size")
    backend = r.choice(p.get("distributed_executor_backend", "mp"), "parallel.distributed_executor_backend",
                       EXECUTOR_BACKENDS)
    nnodes = r.int_(p.get("nnodes", 1), "parallel.nnodes", minimum=1, maximum=65536)
    local = p.get("data_parallel_size_local")
    if local is not None:
        local = r.int_(local, "parallel.data_parallel_size_local", minimum=1, maximum=dp)
    return ParallelLayout(tensor_parallel_size=tp, pipeline_parallel_size=pp, data_parallel_size=dp,
                          pp_layer_partition=part, distributed_executor_backend=backend, nnodes=nnodes,
                          data_parallel_size_local=local)


def _check_heads(r: Reader, heads: int, tp: int, key: str, tp_key: str, *, replicates: bool = True) -> None:
    try:
        heads_per_rank(heads, tp, replicates=replicates)
    except HeadRuleError as e:
        raise r.fail(key, str(e), heads, detail=f"set by {r.where(tp_key)}") from None


def _cache(r: Reader, data: Any, model: ModelLayout, par: ParallelLayout, mpe: int | None) -> CacheLayout:
    c = r.mapping(data, "cache", CACHE_KEYS)
    block = r.opt_int(c, "block_size", "cache")
    if block is not None and block > 1 << 20:
        raise r.fail("cache.block_size", "at most 1048576 tokens", block)
    kv_dtype = c.get("kv_cache_dtype", "auto")
    if not isinstance(kv_dtype, str):
        raise r.fail("cache.kv_cache_dtype", f"one of {', '.join(KV_CACHE_DTYPES)}", kv_dtype)
    if kv_dtype not in KV_CACHE_DTYPES:
        raise UnsupportedError(f"{r.source}: {r.where('cache.kv_cache_dtype')}: unsupported KV dtype {kv_dtype!r}; "
                               f"kvcalc models {', '.join(KV_CACHE_DTYPES)}")
    skip_raw = c.get("kv_cache_dtype_skip_layers") or []
    if not isinstance(skip_raw, list):
        raise r.fail("cache.kv_cache_dtype_skip_layers", "a list of layer indices or 'sliding_window'", skip_raw)
    skip = []
    for i, v in enumerate(skip_raw):
        if v == "sliding_window":
            skip.append(v)
        else:
            # vLLM matches str(extract_layer_index(prefix)) and ignores an index no layer has: refused here, so a
            # typo does not quietly leave every layer quantized. Drafter / MTP layers follow the decoder's indices.
            top = model.num_layers + (model.draft.num_layers if model.draft is not None else 0) - 1
            skip.append(r.int_(v, f"cache.kv_cache_dtype_skip_layers[{i}]", minimum=0, maximum=top))
    memory = None
    if c.get("kv_cache_memory") is not None:
        raw = c["kv_cache_memory"]
        if isinstance(raw, list):
            if len(raw) not in (1, par.workers_per_engine):
                raise r.fail("cache.kv_cache_memory", f"one size, or a list of {par.workers_per_engine} (one per worker)",
                              f"a list of {len(raw)}")
            memory = tuple(r.size(v, f"cache.kv_cache_memory[{i}]") for i, v in enumerate(raw))
        else:
            memory = (r.size(raw, "cache.kv_cache_memory"),)
    override = r.opt_int(c, "num_gpu_blocks_override", "cache", minimum=0)
    if c.get("max_model_len") is not None:
        mml = r.human_int(c["max_model_len"], "cache.max_model_len", minimum=1)
    elif mpe is not None:
        mml = mpe  # vLLM's default max_model_len is the model's max_position_embeddings
    else:
        raise r.fail("cache.max_model_len", "a positive integer (the longest request in tokens; "
                     "--max-model-len): the model states no max_position_embeddings")
    mnbt = r.human_int(c.get("max_num_batched_tokens", 8192), "cache.max_num_batched_tokens", minimum=1)
    prefix = c.get("enable_prefix_caching")
    if prefix is not None and not isinstance(prefix, bool):
        raise r.fail("cache.enable_prefix_caching", "true, false or null", prefix)
    hma = c.get("hybrid_kv_cache_manager", "auto")
    hma = {True: "on", False: "off"}.get(hma, hma) if isinstance(hma, bool) else hma  # YAML 1.1 reads on/off as bools
    hma = r.choice(hma, "cache.hybrid_kv_cache_manager", HMA_CHOICES)
    mamba_choices = ("auto",) + tuple(MODEL_DTYPES)
    mdt = r.choice(c.get("mamba_cache_dtype", "auto"), "cache.mamba_cache_dtype", mamba_choices)
    msdt = r.choice(c.get("mamba_ssm_cache_dtype", "auto"), "cache.mamba_ssm_cache_dtype", mamba_choices)
    mbs = r.opt_int(c, "mamba_block_size", "cache")
    mode = r.choice(c.get("mamba_cache_mode", "auto"), "cache.mamba_cache_mode", MAMBA_CACHE_MODES)
    return CacheLayout(block_size=block, kv_cache_dtype=kv_dtype, kv_cache_dtype_skip_layers=tuple(skip),
                       kv_cache_memory=memory, num_gpu_blocks_override=override, max_model_len=mml,
                       max_num_batched_tokens=mnbt, enable_prefix_caching=prefix, hybrid_kv_cache_manager=hma,
                       mamba_cache_dtype=mdt, mamba_ssm_cache_dtype=msdt, mamba_block_size=mbs,
                       mamba_cache_mode=mode)


def _offload(r: Reader, data: Any, model: ModelLayout, cache: CacheLayout, backend: str | None) -> OffloadLayout:
    o = r.mapping(data, "offload", OFFLOAD_KEYS)
    which = r.choice(o.get("backend", "native"), "offload.backend", OFFLOAD_BACKENDS)
    if which == "lmcache":
        return lmcache_offload(r, o)
    section = o.get("lmcache")
    # LMCACHE_* variables in a manifest's environment do not make the native connector LMCache's: not read.
    if isinstance(section, dict) and all(lmr.env_sourced(r.flags.get(f"offload.lmcache.{k}", "")) for k in section):
        section = None
    if section is not None:
        raise r.fail("offload.lmcache", "no lmcache section with the native backend (set offload.backend: lmcache, "
                     "or --offload-backend lmcache)")
    has_bytes, has_gib = o.get("cpu_bytes_to_use") is not None, o.get("kv_offloading_size") is not None
    if has_bytes and has_gib:
        raise r.fail("offload.kv_offloading_size", "either cpu_bytes_to_use or kv_offloading_size, not both")
    written = None  # cpu_bytes_to_use as written (64GB), for the note on its binary reading
    if has_gib:
        gib = o["kv_offloading_size"]
        if isinstance(gib, bool) or not isinstance(gib, (int, float)) or not math.isfinite(gib) or gib < 0 \
                or gib > 1 << 30:
            raise r.fail("offload.kv_offloading_size", "a non-negative number of GiB (vLLM's --kv-offloading-size)",
                         gib)
        flag = r.flags.get("offload.kv_offloading_size")
        cpu, src = gib_float_to_bytes(float(gib)), (f"--kv-offloading-size {gib} (GiB)" if flag else
                                                     f"offload.kv_offloading_size {gib} (GiB)")
    elif has_bytes:
        raw = o["cpu_bytes_to_use"]
        # What the user wrote (echoed next to the exact count), and where: a flag or the layout's key.
        flag = r.flags.get("offload.cpu_bytes_to_use")
        cpu, src = r.size(raw, "offload.cpu_bytes_to_use"), str(raw)
        written = src
        if flag:
            src = f"{raw} ({flag})"
    else:
        cpu, src = None, "not given"  # the GPU side is still planned; the report's CPU counts are null
    block = r.opt_int(o, "block_size", "offload")
    bpc = r.opt_int(o, "blocks_per_chunk", "offload")
    gpu_block = base_block_size(cache.block_size, model.is_mla, backend)
    if block is not None and block % gpu_block:
        raise r.fail("offload.block_size", f"a multiple of the GPU block size {gpu_block}", block)
    return OffloadLayout(cpu_bytes_to_use=cpu, cpu_bytes_source=src, cpu_bytes_written=written, block_size=block,
                         blocks_per_chunk=bpc)
