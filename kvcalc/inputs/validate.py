"""An expanded layout dict -> a validated `Layout`.

Every key is checked here, so later stages can trust types and ranges; every refusal is a
LayoutError naming the file, the key path (and the CLI flag when a flag set it) and what was expected.
The key table (vocab/keys.KEYS) says which keys a section has, their defaults and bounds; a key of a simple kind is
read by its row alone (`_read`), and the rules between keys are the code below.
"""

from __future__ import annotations

import math
from typing import Any

from ..vocab.errors import LayoutError, UnsupportedError
from ..vocab.keys import CHILDREN, KEY, UNMODELLED, Key
from ..vocab.kinds import ATTENTION_BACKENDS, MAMBA_KINDS, HeadRuleError, LayerKind, heads_per_rank
from ..vocab.layout import (
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
from ..vocab.records import replace
from ..vocab.units import MODEL_DTYPES, gib_float_to_bytes
from ..vocab.releases.vllm import behaviour_for
from .values import Reader

SCHEMA_VERSION = KEY["schema_version"].default


def _get(d: dict, path: str) -> Any:
    """A section's value for one key as written, else the key's default (vocab/keys.KEYS)."""
    key = KEY[path]
    return d.get(key.leaf, key.default)


# path -> (leaf, nullable, default, read(reader, value, path)) of a key of a simple kind, made on its first read
# (validate runs once per sweep point and API call: a read is two lookups and a call).
_READERS: dict[str, tuple] = {}


def _read(r: Reader, d: dict, path: str) -> Any:
    """One key of a simple kind (int, choice, str, bool, human), read by its row: absent, or null where the row
    allows it, gives the row's default; any other value is checked against the row's kind and bounds."""
    try:
        leaf, nullable, default, read = _READERS[path]
    except KeyError:
        leaf, nullable, default, read = _READERS[path] = _reader(KEY[path])
    value = d.get(leaf)
    if value is None and (nullable or leaf not in d):
        return default
    return read(r, value, path)


def _reader(key: Key) -> tuple:
    kind, least, top = key.kind, key.minimum, key.cap or key.maximum
    if kind == "int" and top is None:
        read: Any = lambda r, v, path: r.int_(v, path, minimum=least)  # noqa: E731
    elif kind == "int":
        read = lambda r, v, path: r.int_(v, path, minimum=least, maximum=top)  # noqa: E731
    elif kind == "choice":
        read = lambda r, v, path: r.choice(v, path, key.choices)  # noqa: E731
    elif kind == "human":
        read = lambda r, v, path: r.human_int(v, path, minimum=least)  # noqa: E731
    elif kind == "bool":
        read = _bool_or_null if key.nullable else _bool
    elif kind == "str":
        read = Reader.str_
    else:  # pragma: no cover - a kvcalc bug
        raise TypeError(f"{key.path}: kind {kind} is not read by its row alone")
    return key.leaf, key.nullable, key.default, read


def _bool(r: Reader, value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise r.fail(path, "true or false", value)
    return value


def _bool_or_null(r: Reader, value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise r.fail(path, "true, false or null", value)
    return value


def _section(r: Reader, data: Any, path: str) -> dict:
    """A mapping of rows: refuses a key the table has no row for, naming the ones it has."""
    return r.mapping(data, path, CHILDREN[path])


def _unmodelled(r: Reader, top: dict) -> tuple[tuple[str, Any], ...]:
    """(path, value) of the keys no stage reads yet (Key.modelled False), read by their rows."""
    out = []
    for key in UNMODELLED:
        node: Any = top
        for part in key.parent.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        out.append((key.path, _read(r, node if isinstance(node, dict) else {}, key.path)))
    return tuple(out)


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
    mpe = _read(r, top["model"], "model.max_position_embeddings") if isinstance(top.get("model"), dict) else None
    cache = _cache(r, top.get("cache"), model, parallel, mpe)
    vllm = _section(r, top.get("vllm"), "vllm")
    version = _get(vllm, "vllm.version")
    if isinstance(version, float):
        raise r.fail("vllm.version", "a quoted release string such as '0.20.0' (YAML read this as a number)", version)
    version = r.str_(version, "vllm.version")
    try:
        behaviour_for(version)
    except UnsupportedError as e:
        raise UnsupportedError(f"{source}: {r.where('vllm.version')}: {e}") from None
    platform = _read(r, vllm, "vllm.platform")
    backend = _read(r, vllm, "vllm.attention_backend")
    if backend is not None and ATTENTION_BACKENDS[backend].mla != model.is_mla:
        kind = "an MLA" if model.is_mla else "a non-MLA"
        names = [b for b, row in ATTENTION_BACKENDS.items() if row.mla == model.is_mla]
        raise r.fail("vllm.attention_backend", f"{kind} attention backend for this model (one of "
                     f"{', '.join(names)})", backend)
    gpu_arch = _read(r, vllm, "vllm.gpu_arch")
    offload = _offload(r, top.get("offload"), model, cache, backend)
    host = _host(r, top.get("host"))
    return Layout(model=model, parallel=parallel, cache=cache, offload=offload, host=host, vllm_version=version,
                  source=source, platform=platform, attention_backend=backend, gpu_arch=gpu_arch,
                  provenance=tuple(sorted((origin or {}).items())),
                  unmodelled=_unmodelled(r, top) if UNMODELLED else ())


def _host(r: Reader, data: Any) -> HostLayout:
    h = _section(r, data, "host")
    page = _read(r, h, "host.page_size")
    if page & (page - 1):
        raise r.fail("host.page_size", f"a power of two >= {KEY['host.page_size'].minimum} (the host's mmap.PAGESIZE)",
                     page)
    return HostLayout(page_size=page, pinned_round_threshold_mb=_read(r, h, "host.pinned_round_threshold_mb"))


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
    m = _section(r, data, "model")
    if "num_layers" not in m:
        raise r.fail("model.num_layers", "the number of decoder layers")
    n = _read(r, m, "model.num_layers")
    name = _read(r, m, "model.name")
    dtype = MODEL_DTYPES[_read(r, m, "model.dtype")]
    kv_lora = _read(r, m, "model.kv_lora_rank")
    kinds = _layer_kinds(r, m, n, LayerKind.MLA if kv_lora else LayerKind.FULL)
    present = set(kinds)
    heads, head_size, head_size_v = _attention_shape(r, m, n, kinds, any(k.attention for k in present))

    def needed(key: str, why: str) -> int:
        if m.get(key) is None:
            raise r.fail(f"model.{key}", f"a positive integer ({why})")
        return _read(r, m, f"model.{key}")

    sliding = needed("sliding_window", "the model has sliding_attention layers") if LayerKind.SLIDING in present \
        else _read(r, m, "model.sliding_window")
    chunk = needed("attention_chunk_size", "the model has chunked_attention layers") \
        if LayerKind.CHUNKED in present else _read(r, m, "model.attention_chunk_size")
    rope = _read(r, m, "model.qk_rope_head_dim")
    if LayerKind.MLA in present:
        kv_lora = needed("kv_lora_rank", "the model has mla layers")
        if rope is None:
            raise r.fail("model.qk_rope_head_dim", "an integer (the model has mla layers)")
    index_dim = _read(r, m, "model.index_head_dim")
    if index_dim is not None and LayerKind.MLA not in present:
        raise r.fail("model.index_head_dim", "no value: the DeepSeek-V3.2 indexer sits next to mla layers only",
                     index_dim)
    mamba = None
    if any(k.mamba for k in present):
        mamba = _mamba(r, m.get("mamba"))
    elif m.get("mamba") is not None:
        raise r.fail("model.mamba", "no mamba section: no layer has the kind mamba")
    draft = _draft(r, m.get("draft"), present) if m.get("draft") is not None else None
    replication = _read(r, m, "model.kv_head_replication")
    return ModelLayout(kv_head_replication=replication, name=name, num_layers=n, dtype=dtype, layer_types=kinds,
                       num_kv_heads=heads, head_size=head_size, head_size_v=head_size_v, sliding_window=sliding,
                       attention_chunk_size=chunk, kv_lora_rank=kv_lora, qk_rope_head_dim=rope,
                       index_head_dim=index_dim, mamba=mamba, draft=draft)


def _layer_kinds(r: Reader, m: dict, n: int, default_kind: LayerKind) -> tuple[LayerKind, ...]:
    """model.layer_types (one kind per layer) or model.layer_pattern (repeated to n layers); else every layer
    `default_kind`."""
    if m.get("layer_types") is not None and m.get("layer_pattern") is not None:
        raise r.fail("model.layer_pattern", "either layer_types or layer_pattern, not both")
    choices = KEY["model.layer_types"].choices
    if m.get("layer_types") is not None:
        raw = m["layer_types"]
        if not isinstance(raw, list) or len(raw) != n:
            raise r.fail("model.layer_types", f"a list of {n} layer kinds (one per layer)",
                          f"a list of {len(raw)}" if isinstance(raw, list) else raw)
        return tuple(LayerKind(r.choice(v, f"model.layer_types[{i}]", choices)) for i, v in enumerate(raw))
    if m.get("layer_pattern") is not None:
        raw = m["layer_pattern"]
        if not isinstance(raw, list) or len(raw) < KEY["model.layer_pattern"].minimum or len(raw) > n:
            raise r.fail("model.layer_pattern", f"a non-empty list of at most {n} layer kinds", raw)
        pattern = [LayerKind(r.choice(v, f"model.layer_pattern[{i}]", choices)) for i, v in enumerate(raw)]
        return tuple(pattern[i % len(pattern)] for i in range(n))
    return (default_kind,) * n


def _attention_shape(r: Reader, m: dict, n: int, kinds: tuple[LayerKind, ...],
                     attention: bool) -> tuple[tuple[int, ...], ...]:
    """(KV heads, head size, value head size) per layer; every attention layer (some has: `attention`) needs
    positive ones."""
    if attention:
        if m.get("num_kv_heads") is None:
            raise r.fail("model.num_kv_heads", "an integer or a per-layer list (the model has attention layers)")
        if m.get("head_size") is None:
            raise r.fail("model.head_size", "an integer or a per-layer list (the model has attention layers)")
    heads, head_size = (r.per_layer(_get(m, f"model.{key}"), f"model.{key}", n, minimum=KEY[f"model.{key}"].minimum)
                        for key in ("num_kv_heads", "head_size"))
    head_size_v = head_size if m.get("head_size_v") is None else \
        r.per_layer(m["head_size_v"], "model.head_size_v", n, minimum=KEY["model.head_size_v"].minimum)
    if attention:
        for key, vals in (("num_kv_heads", heads), ("head_size", head_size), ("head_size_v", head_size_v)):
            if min(vals) >= 1:
                continue  # the common case: no layer has a zero, whatever its kind
            for i, kind in enumerate(kinds):
                if kind.attention and vals[i] < 1:
                    raise r.fail(f"model.{key}" + (f"[{i}]" if isinstance(m.get(key), list) else ""),
                                 f"a positive value for attention layer {i}", vals[i])
    return heads, head_size, head_size_v


def _mamba(r: Reader, data: Any) -> MambaLayout:
    if data is None:
        raise r.fail("model.mamba", f"a mapping with kind ({', '.join(MAMBA_KINDS)}) and its fields")
    if not isinstance(data, dict):
        raise r.fail("model.mamba", "a mapping", type(data).__name__)
    row = MAMBA_KINDS[r.choice(data.get("kind"), "model.mamba.kind", KEY["model.mamba.kind"].choices)]
    # The kind's own fields are its row's (vocab/kinds.MAMBA_KINDS), beside the keys the table has.
    r.mapping(data, "model.mamba", CHILDREN["model.mamba"] + row.fields + row.optional + tuple(row.aliases))
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
    d = _section(r, data, "model.draft")
    method = r.choice(d.get("method"), "model.draft.method", KEY["model.draft.method"].choices)
    n = _read(r, d, "model.draft.num_layers")
    ns = _read(r, d, "model.draft.num_speculative_tokens")
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
        method=method, num_layers=n, num_kv_heads=_read(r, d, "model.draft.num_kv_heads"),
        head_size=_read(r, d, "model.draft.head_size"), head_size_v=_read(r, d, "model.draft.head_size_v"),
        num_speculative_tokens=ns,
    )


def _parallel(r: Reader, data: Any, model: ModelLayout) -> ParallelLayout:
    p = _section(r, data, "parallel")
    tp = _read(r, p, "parallel.tensor_parallel_size")
    pp = _read(r, p, "parallel.pipeline_parallel_size")
    dp = _read(r, p, "parallel.data_parallel_size")
    if pp > model.num_layers:
        raise r.fail("parallel.pipeline_parallel_size", f"at most model.num_layers ({model.num_layers})", pp)
    part = None
    if p.get("pp_layer_partition") is not None:
        raw = p["pp_layer_partition"]
        if not isinstance(raw, list) or len(raw) != pp:
            raise r.fail("parallel.pp_layer_partition", f"a list of {pp} layer counts (one per PP stage)", raw)
        least = KEY["parallel.pp_layer_partition"].minimum
        part = tuple(r.int_(v, f"parallel.pp_layer_partition[{i}]", minimum=least) for i, v in enumerate(raw))
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
    backend = _read(r, p, "parallel.distributed_executor_backend")
    nnodes = _read(r, p, "parallel.nnodes")
    local = p.get("data_parallel_size_local")
    if local is not None:  # at most the DP size
        local = r.int_(local, "parallel.data_parallel_size_local",
                       minimum=KEY["parallel.data_parallel_size_local"].minimum, maximum=dp)
    return ParallelLayout(tensor_parallel_size=tp, pipeline_parallel_size=pp, data_parallel_size=dp,
                          pp_layer_partition=part, distributed_executor_backend=backend, nnodes=nnodes,
                          data_parallel_size_local=local)


def _check_heads(r: Reader, heads: int, tp: int, key: str, tp_key: str, *, replicates: bool = True) -> None:
    try:
        heads_per_rank(heads, tp, replicates=replicates)
    except HeadRuleError as e:
        raise r.fail(key, str(e), heads, detail=f"set by {r.where(tp_key)}") from None


def _cache(r: Reader, data: Any, model: ModelLayout, par: ParallelLayout, mpe: int | None) -> CacheLayout:
    c = _section(r, data, "cache")
    key = KEY["cache.block_size"]
    block = c.get("block_size")
    if block is not None:
        block = r.int_(block, "cache.block_size", minimum=key.minimum)
        if key.cap is not None and block > key.cap:
            raise r.fail("cache.block_size", f"at most {key.cap} tokens", block)
    kv_dtype, skip = _kv_dtype(r, c, model)
    memory = _kv_cache_memory(r, c, par)
    override = _read(r, c, "cache.num_gpu_blocks_override")
    if c.get("max_model_len") is not None:
        mml = r.human_int(c["max_model_len"], "cache.max_model_len", minimum=KEY["cache.max_model_len"].minimum)
    elif mpe is not None:
        mml = mpe  # vLLM's default max_model_len is the model's max_position_embeddings
    else:
        raise r.fail("cache.max_model_len", "a positive integer (the longest request in tokens; "
                     "--max-model-len): the model states no max_position_embeddings")
    mnbt = _read(r, c, "cache.max_num_batched_tokens")
    prefix = _read(r, c, "cache.enable_prefix_caching")
    hma = _get(c, "cache.hybrid_kv_cache_manager")
    hma = {True: "on", False: "off"}.get(hma, hma) if isinstance(hma, bool) else hma  # YAML 1.1 reads on/off as bools
    hma = r.choice(hma, "cache.hybrid_kv_cache_manager", KEY["cache.hybrid_kv_cache_manager"].choices)
    mdt = _read(r, c, "cache.mamba_cache_dtype")
    msdt = _read(r, c, "cache.mamba_ssm_cache_dtype")
    mbs = _read(r, c, "cache.mamba_block_size")
    mode = _read(r, c, "cache.mamba_cache_mode")
    return CacheLayout(block_size=block, kv_cache_dtype=kv_dtype, kv_cache_dtype_skip_layers=skip,
                       kv_cache_memory=memory, num_gpu_blocks_override=override, max_model_len=mml,
                       max_num_batched_tokens=mnbt, enable_prefix_caching=prefix, hybrid_kv_cache_manager=hma,
                       mamba_cache_dtype=mdt, mamba_ssm_cache_dtype=msdt, mamba_block_size=mbs,
                       mamba_cache_mode=mode)


def _kv_dtype(r: Reader, c: dict, model: ModelLayout) -> tuple[str, tuple]:
    """cache.kv_cache_dtype (a dtype kvcalc does not model is unsupported, not malformed) and the layers kept at the
    model dtype."""
    kv_dtype = _get(c, "cache.kv_cache_dtype")
    dtypes = KEY["cache.kv_cache_dtype"].choices
    if not isinstance(kv_dtype, str):
        raise r.fail("cache.kv_cache_dtype", f"one of {', '.join(dtypes)}", kv_dtype)
    if kv_dtype not in dtypes:
        raise UnsupportedError(f"{r.source}: {r.where('cache.kv_cache_dtype')}: unsupported KV dtype {kv_dtype!r}; "
                               f"kvcalc models {', '.join(dtypes)}")
    key = KEY["cache.kv_cache_dtype_skip_layers"]
    skip_raw = c.get("kv_cache_dtype_skip_layers")
    if not skip_raw:
        return kv_dtype, key.default
    if not isinstance(skip_raw, list):
        raise r.fail("cache.kv_cache_dtype_skip_layers", "a list of layer indices or 'sliding_window'", skip_raw)
    skip = []
    for i, v in enumerate(skip_raw):
        if v in key.choices:
            skip.append(v)
        else:
            # vLLM matches str(extract_layer_index(prefix)) and ignores an index no layer has: refused here, so a
            # typo does not quietly leave every layer quantized. Drafter / MTP layers follow the decoder's indices.
            top = model.num_layers + (model.draft.num_layers if model.draft is not None else 0) - 1
            skip.append(r.int_(v, f"cache.kv_cache_dtype_skip_layers[{i}]", minimum=key.minimum, maximum=top))
    return kv_dtype, tuple(skip)


def _kv_cache_memory(r: Reader, c: dict, par: ParallelLayout) -> tuple[int, ...] | None:
    """cache.kv_cache_memory: one size for every worker, or one per worker."""
    raw = c.get("kv_cache_memory")
    if raw is None:
        return None
    if isinstance(raw, list):
        if len(raw) not in (1, par.workers_per_engine):
            raise r.fail("cache.kv_cache_memory", f"one size, or a list of {par.workers_per_engine} (one per worker)",
                         f"a list of {len(raw)}")
        return tuple(r.size(v, f"cache.kv_cache_memory[{i}]") for i, v in enumerate(raw))
    return (r.size(raw, "cache.kv_cache_memory"),)


def _offload(r: Reader, data: Any, model: ModelLayout, cache: CacheLayout, backend: str | None) -> OffloadLayout:
    o = _section(r, data, "offload")
    which = _read(r, o, "offload.backend")
    if which == "lmcache":
        from .validate_lmcache import lmcache_offload  # LMCache layouts only (start-up time is a target)

        return lmcache_offload(r, o)
    section = o.get("lmcache")
    # LMCACHE_* variables in a manifest's environment do not make the native connector LMCache's: not read.
    if isinstance(section, dict):
        from ..vocab.releases.lmcache import env_sourced  # LMCache's tables, only when a section is there
    if isinstance(section, dict) and all(env_sourced(r.flags.get(f"offload.lmcache.{k}", "")) for k in section):
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
        key = KEY["offload.kv_offloading_size"]
        if isinstance(gib, bool) or not isinstance(gib, (int, float)) or not math.isfinite(gib) or gib < key.minimum \
                or (key.cap is not None and gib > key.cap):
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
    block = _read(r, o, "offload.block_size")
    bpc = _read(r, o, "offload.blocks_per_chunk")
    gpu_block = base_block_size(cache.block_size, model.is_mla, backend)
    if block is not None and block % gpu_block:
        raise r.fail("offload.block_size", f"a multiple of the GPU block size {gpu_block}", block)
    # A backend that takes the budget as the native connector does (cpu_bytes_to_use) keeps its own name.
    return OffloadLayout(backend=which, cpu_bytes_to_use=cpu, cpu_bytes_source=src, cpu_bytes_written=written,
                         block_size=block, blocks_per_chunk=bpc)
