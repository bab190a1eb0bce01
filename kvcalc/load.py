"""Layout YAML (schema version 1) -> a validated `Layout`. The only module that reads layout files.

Every key is checked here, so later stages can trust types and ranges; every refusal is a
LayoutError naming the file, the key path (and the CLI flag when a flag set it) and what was expected.
"""

from __future__ import annotations

import math
import os
import re
from functools import cache
from typing import Any

from .errors import LayoutError, UnsupportedError
from .kinds import ATTENTION_BACKEND_NAMES, ATTENTION_BACKENDS, GPU_ARCHS, KV_CACHE_DTYPES, LAYER_KINDS, MAMBA_KIND_NAMES, MAMBA_KINDS, HeadRuleError, LayerKind, heads_per_rank
from .layout import (
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
    LMCacheLayout,
    MambaLayout,
    ModelLayout,
    OffloadLayout,
    ParallelLayout,
    base_block_size,
)
from . import lmcache_releases as lmr
from .records import replace
from .units import MODEL_DTYPES, SizeError, gib_float_to_bytes, parse_size, scaled_floor
from .versions import DEFAULT_VERSION, behaviour_for

MAX_INPUT_BYTES = 1 << 20  # a layout is a few KiB; refuse anything that could be a YAML bomb
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

_EXCLUSIVE = {"offload.cpu_bytes_to_use": "offload.kv_offloading_size",
              "offload.kv_offloading_size": "offload.cpu_bytes_to_use"}
_HUMAN_INT = r"^\s*(\d+(?:\.\d+)?)\s*([kmgtKMGT]?)\s*$"


class _Reader:
    """Typed access to one mapping, with errors that name the full key path."""

    def __init__(self, source: str, flags: dict[str, str]):
        self.source = source
        self.flags = flags

    def where(self, path: str) -> str:
        flag = self.flags.get(path)
        return f"{path} (from {flag})" if flag else path

    def fail(self, path: str, expected: str, got: Any = None, detail: str = "") -> LayoutError:
        return LayoutError(self.source, self.where(path), expected, got, detail=detail)

    def mapping(self, data: Any, path: str, allowed: tuple[str, ...]) -> dict:
        if data is None:
            return {}
        if not isinstance(data, dict):
            raise self.fail(path or "(top level)", "a mapping", type(data).__name__)
        for key in data:
            if not isinstance(key, str) or key not in allowed:
                expected = f"a known key (one of: {', '.join(allowed)})"
                if isinstance(key, str) and len(key) <= 60 and re.fullmatch(r"[A-Za-z0-9_.\-]+", key):
                    raise self.fail(f"{path}.{key}" if path else key, expected, detail="unknown key")
                # Any other key is echoed repr'd and cut (errors._short), never raw: it can hold escapes.
                raise self.fail(path or "(top level)", expected, key, detail="unknown key")
        return data

    def int_(self, value: Any, path: str, *, minimum: int = 0, maximum: int = 1 << 62) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(path, f"an integer >= {minimum}", value)
        if value < minimum or value > maximum:
            raise self.fail(path, f"an integer between {minimum} and {maximum}", value)
        return value

    def opt_int(self, d: dict, key: str, path: str, *, minimum: int = 1, default: Any = None) -> Any:
        if d.get(key) is None:
            return default
        return self.int_(d[key], f"{path}.{key}", minimum=minimum)

    def human_int(self, value: Any, path: str, *, minimum: int = 1) -> int:
        """vLLM's human_readable_int: 128K = 131072 (uppercase binary), 128k = 128000 (lowercase decimal)."""
        if isinstance(value, str):
            m = re.match(_HUMAN_INT, value)
            if not m:
                raise self.fail(path, "an integer, or digits with one K/M/G/T (binary) or k/m/g/t (decimal) suffix",
                                value)
            num, unit = m.group(1), m.group(2)
            if unit.isupper():
                if "." in num:
                    raise self.fail(path, "a whole number before an uppercase (binary) suffix", value)
                value = int(num) << {"K": 10, "M": 20, "G": 30, "T": 40}[unit]
            elif unit:
                whole, _, frac = num.partition(".")
                value = scaled_floor(whole, frac, 10 ** {"k": 3, "m": 6, "g": 9, "t": 12}[unit])
            else:
                if "." in num:
                    raise self.fail(path, "a whole number", value)
                value = int(num)
        return self.int_(value, path, minimum=minimum)

    def size(self, value: Any, path: str) -> int:
        try:
            return self.int_(parse_size(value), path, minimum=0)
        except SizeError as e:
            raise self.fail(path, str(e), value) from None

    def choice(self, value: Any, path: str, choices: tuple[str, ...]) -> str:
        if not isinstance(value, str) or value not in choices:
            raise self.fail(path, f"one of {', '.join(choices)}", value)
        return value

    def str_(self, value: Any, path: str) -> str:
        if not isinstance(value, str) or not value.strip() or len(value) > 200:
            raise self.fail(path, "a non-empty string (at most 200 characters)", value)
        if any(ord(c) < 32 for c in value):
            raise self.fail(path, "a string without control characters", value)
        return value

    def per_layer(self, value: Any, path: str, n: int, *, minimum: int) -> tuple[int, ...]:
        if isinstance(value, list):
            if len(value) != n:
                raise self.fail(path, f"an integer or a list of {n} integers (one per layer)", f"a list of {len(value)}")
            return tuple(self.int_(v, f"{path}[{i}]", minimum=minimum) for i, v in enumerate(value))
        return (self.int_(value, path, minimum=minimum),) * n


def _set_path(data: dict, path: str, value: Any) -> None:
    node = data
    parts = path.split(".")
    for p in parts[:-1]:
        if not isinstance(node.get(p), dict):
            node[p] = {} if node.get(p) is None else node[p]
            if not isinstance(node[p], dict):
                return  # the validator reports the wrong type
        node = node[p]
    node[parts[-1]] = value


def expand(data: Any, *, source: str = "<layout>", overrides: dict[str, tuple[Any, str]] | None = None,
           base_dir: str = ".") -> tuple[dict, dict]:
    """Apply CLI overrides and pull in `model.hf_config` / `model.draft.hf_config`.

    Returns (the raw layout dict, {key path: where its value came from}) before validation."""
    overrides = overrides or {}
    if data is None:
        data = {}
    r = _Reader(source, {path: flag for path, (_, flag) in overrides.items()})
    top = r.mapping(data, "", TOP_KEYS)
    top = {k: (dict(v) if isinstance(v, dict) else v) for k, v in top.items()}
    origin: dict[str, str] = {}
    for path, (value, flag) in overrides.items():
        _set_path(top, path, value)
        origin[path] = flag
        # A flag for one of two exclusive keys replaces the file's other one.
        other = _EXCLUSIVE.get(path)
        if other and other not in overrides and isinstance(top.get("offload"), dict):
            top["offload"].pop(other.split(".", 1)[1], None)
    model = top.get("model")
    nextn = 0
    if isinstance(model, dict) and model.get("hf_config") is not None:
        from .hf_config import map_config

        model = dict(model)
        path = _config_path(r, model.pop("hf_config"), "model.hf_config", base_dir)
        mapped = map_config(read_json(path), source=path)
        for key in model:  # the layout's own keys win over the config's
            origin[f"model.{key}"] = "layout file"
        if "layer_pattern" in model or "layer_types" in model:
            mapped.model.pop("layer_types", None)
        model = {**mapped.model, **model}
        origin = {**mapped.origin, **origin}
        cache = dict(top["cache"]) if isinstance(top.get("cache"), dict) else {}
        for key, (value, why) in mapped.cache.items():
            if key not in cache:
                cache[key] = value
                origin[f"cache.{key}"] = why
        top["cache"] = cache
        nextn = mapped.num_nextn_predict_layers
        top["model"] = model
    draft = model.get("draft") if isinstance(model, dict) else None
    if isinstance(draft, dict):
        draft = dict(draft)
        if draft.get("hf_config") is not None:
            from .hf_config import map_draft

            # Provenance names the file as the layout spells it (relative to the layout): the resolved
            # absolute path differs per checkout and made the same plan print differently in each clone.
            written = draft.pop("hf_config")
            path = _config_path(r, written, "model.draft.hf_config", base_dir)
            method = draft.get("method")
            mapped_draft, draft_origin = map_draft(read_json(path), source=path,
                                                   method=method if isinstance(method, str) else None)
            draft = {**mapped_draft, **draft}
            origin.update({k: f"drafter config {written}: {v}" for k, v in draft_origin.items() if k.split(".")[-1] not in draft
                           or draft[k.split(".")[-1]] == mapped_draft.get(k.split(".")[-1])})
        if draft.get("method") == "mtp" and draft.get("num_layers") is None:
            if not nextn:
                raise r.fail("model.draft.num_layers", "the number of MTP layers (the model config's "
                             "num_nextn_predict_layers is 0 or absent)")
            draft["num_layers"] = nextn
            origin["model.draft.num_layers"] = "num_nextn_predict_layers"
        model["draft"] = draft
    return top, origin


def _config_path(r: _Reader, value: Any, key: str, base_dir: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise r.fail(key, "a path to a Hugging Face config.json (or its directory)", value)
    path = value if os.path.isabs(value) else os.path.join(base_dir, value)
    if os.path.isdir(path):
        path = os.path.join(path, "config.json")
    if not os.path.isfile(path):
        raise r.fail(key, "a readable Hugging Face config.json (or its directory)", value,
                     detail=f"{path} does not exist")
    return path


def read_json(path: str) -> Any:
    import json

    raw = _read_bytes(path, "a readable config.json")

    def integer(text: str) -> int:
        if len(text.lstrip("-")) > _MAX_INT_DIGITS:
            raise LayoutError(path, "", f"integers of at most {_MAX_INT_DIGITS} digits", f"{len(text)} digits")
        return int(text)

    def pairs(items: list) -> dict:
        out: dict = {}
        for k, v in items:
            if k in out:
                # json.loads keeps the last of two equal keys; a config that says two things is refused.
                raise LayoutError(path, k, "each key once in an object", detail="given twice")
            out[k] = v
        return out

    try:
        return json.loads(raw.decode("utf-8"), parse_int=integer, object_pairs_hook=pairs)
    except UnicodeDecodeError:
        raise LayoutError(path, "", "UTF-8 JSON") from None
    except json.JSONDecodeError as e:
        raise LayoutError(path, f"line {e.lineno}", "valid JSON", detail=e.msg) from None
    except RecursionError:
        raise LayoutError(path, "", "JSON nested less deeply") from None


def _read_bytes(path: str, what: str) -> bytes:
    import stat

    if path == "-":
        raise LayoutError(path, "", what, detail="standard input is not read: give a file path")
    try:
        mode = os.stat(path).st_mode
    except OSError as e:
        raise LayoutError(path, "", what, detail=e.strerror or str(e)) from None
    if not stat.S_ISREG(mode):
        # A FIFO, socket or device would block or never end: refused without opening it.
        kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file (a FIFO, socket or device)"
        raise LayoutError(path, "", what, detail=kind)
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_INPUT_BYTES + 1)
    except OSError as e:
        raise LayoutError(path, "", what, detail=e.strerror or str(e)) from None
    if len(raw) > MAX_INPUT_BYTES:
        raise LayoutError(path, "", f"a file of at most {MAX_INPUT_BYTES} bytes")
    return raw


def layout_from_dict(data: Any, *, source: str = "<layout>", overrides: dict[str, tuple[Any, str]] | None = None,
                     base_dir: str = ".") -> Layout:
    """Validate a parsed layout. `overrides` maps a key path to (value, flag that set it)."""
    top, origin = expand(data, source=source, overrides=overrides, base_dir=base_dir)
    return validate(top, source=source, overrides=overrides, origin=origin)


def validate(top: dict, *, source: str, overrides: dict[str, tuple[Any, str]] | None = None,
             origin: dict[str, str] | None = None, model: ModelLayout | None = None) -> Layout:
    """An expanded layout dict -> Layout, or a LayoutError naming the key (and the flag that set it).
    `model`: the already validated `model` section of this same dict (a sweep validates it once)."""
    r = _Reader(source, {path: flag for path, (_, flag) in (overrides or {}).items()})
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


def _host(r: _Reader, data: Any) -> HostLayout:
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
    r = _Reader(base.source, flags)
    return replace(base, offload=_offload(r, top.get("offload"), base.model, base.cache, base.attention_backend))


def validate_model(top: dict, *, source: str) -> ModelLayout:
    """The `model` section of an expanded layout dict alone."""
    if "model" not in top:
        raise LayoutError(source, "model", "a model section (see the README's layout format)")
    return _model(_Reader(source, {}), top.get("model"))


def _model(r: _Reader, data: Any) -> ModelLayout:
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


def _mamba(r: _Reader, data: Any) -> MambaLayout:
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


def _draft(r: _Reader, data: Any, kinds: set) -> DraftLayout:
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


def _parallel(r: _Reader, data: Any, model: ModelLayout) -> ParallelLayout:
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


def _check_heads(r: _Reader, heads: int, tp: int, key: str, tp_key: str, *, replicates: bool = True) -> None:
    try:
        heads_per_rank(heads, tp, replicates=replicates)
    except HeadRuleError as e:
        raise r.fail(key, str(e), heads, detail=f"set by {r.where(tp_key)}") from None


def _cache(r: _Reader, data: Any, model: ModelLayout, par: ParallelLayout, mpe: int | None) -> CacheLayout:
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


def _offload(r: _Reader, data: Any, model: ModelLayout, cache: CacheLayout, backend: str | None) -> OffloadLayout:
    o = r.mapping(data, "offload", OFFLOAD_KEYS)
    which = r.choice(o.get("backend", "native"), "offload.backend", OFFLOAD_BACKENDS)
    if which == "lmcache":
        return _lmcache_offload(r, o)
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
        if flag:
            src = f"{raw} ({flag})"
    else:
        cpu, src = None, "not given"  # the GPU side is still planned; the report's CPU counts are null
    block = r.opt_int(o, "block_size", "offload")
    bpc = r.opt_int(o, "blocks_per_chunk", "offload")
    gpu_block = base_block_size(cache.block_size, model.is_mla, backend)
    if block is not None and block % gpu_block:
        raise r.fail("offload.block_size", f"a multiple of the GPU block size {gpu_block}", block)
    return OffloadLayout(cpu_bytes_to_use=cpu, cpu_bytes_source=src, block_size=block, blocks_per_chunk=bpc)


def _lmcache_offload(r: _Reader, o: dict) -> OffloadLayout:
    """offload.backend lmcache: LMCache's own config (offload.lmcache), or vLLM's --kv-offloading-size when the
    engine is started with --kv-offloading-backend lmcache (offload.kv_offloading_size)."""
    dropped: list[str] = []
    for key, why in (("cpu_bytes_to_use", "the native connector's budget: LMCache sizes a pool per rank with "
                                          "offload.lmcache.max_local_cpu_size (GiB)"),
                     ("block_size", "the native connector's offloaded block size: LMCache stores chunks of "
                                    "offload.lmcache.chunk_size tokens"),
                     ("blocks_per_chunk", "the native connector's chunking: LMCache stores chunks of "
                                          "offload.lmcache.chunk_size tokens")):
        if o.get(key) is not None:
            if "offload.backend" in r.flags and f"offload.{key}" not in r.flags:
                # The layout is the native connector's and a flag switched the backend: its budget stays unused.
                dropped.append(f"offload.{key} {o[key]!r} is the native connector's: not used with "
                               f"{r.flags['offload.backend']}")
                continue
            raise r.fail(f"offload.{key}", f"no value with offload.backend lmcache ({why})", o[key])
    gib = o.get("kv_offloading_size")
    if gib is not None:
        try:
            gib = lmr.to_gib(gib)
        except ValueError as e:
            raise r.fail("offload.kv_offloading_size", f"{e} (vLLM's --kv-offloading-size)", o["kv_offloading_size"]
                         ) from None
    lm = _lmcache(r, o.get("lmcache"), via_vllm_flag=gib is not None, kv_offloading_size=gib)
    if dropped:
        lm = replace(lm, notes=lm.notes + tuple(dropped))
    return OffloadLayout(cpu_bytes_to_use=None, cpu_bytes_source="not given (the LMCache backend sizes its own pool)",
                         backend="lmcache", lmcache=lm)


def _lmcache(r: _Reader, data: Any, *, via_vllm_flag: bool, kv_offloading_size: float | None) -> LMCacheLayout:
    """offload.lmcache -> LMCacheLayout: keys under LMCache's names for the selected LMCache release (aliases
    resolved as its v1/config.py does), values through its converters (lmcache_releases.py), refusing what LMCache
    would misread and what changes the pool in ways kvcalc does not model."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise r.fail("offload.lmcache", "a mapping of LMCache config keys", type(data).__name__)
    version = data.get("version", lmr.DEFAULT_LMCACHE_VERSION)
    if not isinstance(version, str) or version not in lmr.LMCACHE_RELEASES:
        raise UnsupportedError(f"{r.source}: {r.where('offload.lmcache.version')}: LMCache release {version!r} is "
                               f"not one kvcalc read ({lmr.LMCACHE_RELEASES[0]} - {lmr.LMCACHE_RELEASES[-1]}; "
                               "`kvcalc versions` lists them)")
    keys, alias = lmr.config_keys(version), lmr.aliases(version)
    values: dict[str, tuple[Any, str]] = {}  # LMCache name -> (value, key path)
    ignored = []
    for key, value in data.items():
        if key == "version":
            continue
        path = f"offload.lmcache.{key}" if isinstance(key, str) and re.fullmatch(r"[A-Za-z0-9_.\-]{1,60}", key) \
            else "offload.lmcache"
        if not isinstance(key, str):
            raise r.fail(path, "an LMCache config key", key, detail="unknown key")
        if key in lmr.EXTRA_MODELLED:
            raise r.fail(path, f"extra_config: {{{key}: ...}} (LMCache reads {key} from extra_config)", value)
        name = alias.get(key, key)
        if name in lmr.DEPRECATED_IGNORED:
            ignored.append(key)
            continue
        if name not in keys:
            if lmr.env_sourced(r.flags.get(path, "")):
                ignored.append(f"{key} (LMCache {version} does not read it)")
                continue
            raise r.fail(path, f"a config key LMCache {version} defines (its v1/config.py)", detail="unknown key")
        if name in values:
            raise r.fail(path, f"one of {key} and its alias (both name {name})", value)
        values[name] = (value, path)

    def conv(name: str, fn, *args, **kw):
        if name not in values:
            return lmr.DEFAULTS[name]
        value, path = values[name]
        try:
            return fn(value, *args, **kw)
        except ValueError as e:
            raise r.fail(path, str(e), value) from None

    out: dict[str, Any] = {"chunk_size": conv("chunk_size", lmr.to_int)}
    for name in lmr.FLOAT_KEYS:
        out[name] = conv(name, lmr.to_gib)
    for name in lmr.BOOL_KEYS:
        if name in keys:
            out[name] = conv(name, lmr.to_bool)
    for name in lmr.INT_LIST_KEYS:
        out[name] = conv(name, lmr.to_int_list)
    out["local_disk"] = conv("local_disk", lmr.to_local_disk)
    extra = conv("extra_config", lmr.to_extra) or {}
    for name, why in lmr.UNMODELLED_SWITCHES.items():
        if out.get(name):
            raise UnsupportedError(f"{r.source}: {r.where(values[name][1])}: {name} true is not modelled: {why}")
    epath = values["extra_config"][1] if "extra_config" in values else "offload.lmcache.extra_config"
    for name, why in lmr.UNMODELLED_EXTRA.items():
        if extra.get(name):
            raise UnsupportedError(f"{r.source}: {r.where(epath)}.{name}: not modelled: {why}")
    sofr = extra.get("save_only_first_rank")
    if sofr is not None and not isinstance(sofr, bool):
        # v1/cache_engine.py: get_extra_config_value("save_only_first_rank", use_mla) and use_mla -- truthiness.
        raise r.fail(f"{epath}.save_only_first_rank", "true or false (LMCache tests its truthiness: the string "
                     "'false' counts as true)", sofr)
    first = extra.get("first_rank_max_local_cpu_size")
    if first is not None:
        if isinstance(first, str):
            # local_cpu_backend.py: int(cpu_size * 1024**3) on a string repeats it instead of multiplying.
            raise r.fail(f"{epath}.first_rank_max_local_cpu_size", "a number of GiB, not a string", first)
        try:
            first = lmr.to_gib(first)
        except ValueError as e:
            raise r.fail(f"{epath}.first_rank_max_local_cpu_size", str(e), first) from None
    align = extra.get("local_cpu.pinned_align_bytes")
    if align is not None:
        try:
            align = lmr.to_int(align, minimum=1, maximum=1 << 30)
        except ValueError as e:
            raise r.fail(f"{epath}.local_cpu.pinned_align_bytes", str(e), align) from None
        if align & (align - 1):
            raise r.fail(f"{epath}.local_cpu.pinned_align_bytes", "a positive power of two (LMCache raises "
                         "ValueError otherwise)", align)
        if not lmr.pinned_align_known(version):
            ignored.append("extra_config.local_cpu.pinned_align_bytes")
            align = None
    for name in extra:
        if name not in lmr.EXTRA_MODELLED and name not in lmr.UNMODELLED_EXTRA:
            ignored.append(f"extra_config.{name}")
    lazy = bool(out.get("enable_lazy_memory_allocator")) and lmr.lazy_allocator_active(version) and \
        max(out["max_local_cpu_size"], first or 0.0) > out["lazy_memory_safe_size"]
    ignored += [k for k in values if k not in lmr.MODELLED]
    provenance = tuple((name, r.flags.get(path, "layout file")) for name, (_, path) in values.items())
    return LMCacheLayout(
        version=version, chunk_size=out["chunk_size"], local_cpu=out["local_cpu"],
        max_local_cpu_size=out["max_local_cpu_size"], save_only_first_rank=sofr, first_rank_max_local_cpu_size=first,
        pinned_align_bytes=align, local_disk=out["local_disk"], max_local_disk_size=out["max_local_disk_size"],
        use_layerwise=out["use_layerwise"], local_cpu_use_hugepages=bool(out.get("local_cpu_use_hugepages")),
        lookup_server_worker_ids=out["lookup_server_worker_ids"] or None, enable_controller=out["enable_controller"],
        lmcache_worker_ids=out["lmcache_worker_ids"] or None, lazy_allocator=lazy, via_vllm_flag=via_vllm_flag,
        kv_offloading_size=kv_offloading_size, ignored=tuple(sorted(set(ignored))), provenance=provenance)


_C_LOADER_DEPTH = 64  # nesting a layout never needs; deeper input goes to the pure-Python loader


def _shallow(text: str) -> bool:
    """An upper bound on the nesting depth is small: flow brackets (counted even inside quotes), indentation,
    and block entries on one line. libyaml's composer recurses in C and overflows the stack on deep nesting
    (`[` x 100,000 segfaults), so only input this check bounds goes to the C loader."""
    depth = deepest = 0
    for ch in text:
        if ch in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
        elif ch in "]}":
            depth -= 1
    if deepest > _C_LOADER_DEPTH // 2:
        return False
    for line in text.splitlines():
        stripped = line.lstrip(" -")
        if len(line) - len(stripped) > _C_LOADER_DEPTH or line.count(": ") > 4:
            return False
    return True


class _StrictYAMLError(Exception):
    def __init__(self, line: int, expected: str, got: Any = None, detail: str = ""):
        super().__init__(expected)
        self.line, self.expected, self.got, self.detail = line, expected, got, detail


# YAML 1.1 integers that are not decimal: octal (032 = 26), binary (0b101), hex (0x1F), base 60 (1:00 = 60).
_NON_DECIMAL_INT = r"^[-+]?(0[0-7_]+|0b[01_]+|0x[0-9a-fA-F_]+|[1-9][0-9_]*(:[0-5]?[0-9])+)$"
_MAX_INT_DIGITS = 1000  # far beyond any layout value (sizes stop at 2^62), far below Python's 4,300-digit limit


@cache
def _strict_loader(fast: bool):
    """PyYAML's safe loader (libyaml's parser when `fast`) that refuses what would be misread silently: a key
    given twice in one mapping (PyYAML keeps the last), YAML 1.1 integers that are not decimal, and integers
    too long to be a layout value."""
    import yaml

    base = yaml.CSafeLoader if fast else yaml.SafeLoader

    class Strict(base):
        def construct_mapping(self, node, deep=False):
            seen: dict = {}
            for key_node, _ in node.value:
                if isinstance(key_node, yaml.ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
                    line = key_node.start_mark.line + 1
                    key = (key_node.tag, key_node.value)
                    if key in seen:
                        raise _StrictYAMLError(line, "each key once in a mapping", key_node.value,
                                               detail=f"also on line {seen[key]}")
                    seen[key] = line
            return super().construct_mapping(node, deep=deep)

        def construct_yaml_int(self, node):
            text = node.value
            line = node.start_mark.line + 1
            digits = text[1:] if text[:1] in "+-" else text
            plain = digits.isascii() and digits.isdigit() and (len(digits) == 1 or digits[0] != "0")
            # A plain decimal never matches the pattern: skip compiling it (start-up time is a target).
            if not plain and re.match(_NON_DECIMAL_INT, text):
                value = super().construct_yaml_int(node) if len(text) <= 40 else None
                raise _StrictYAMLError(line, "a decimal integer (write the digits you mean)", text,
                                       detail=f"YAML 1.1 reads it as {value}" if value is not None else "")
            if len(text) > _MAX_INT_DIGITS:
                raise _StrictYAMLError(line, f"an integer of at most {_MAX_INT_DIGITS} digits",
                                       f"{len(text)} digits")
            return super().construct_yaml_int(node)

    Strict.add_constructor("tag:yaml.org,2002:int", Strict.construct_yaml_int)
    return Strict


def parse_yaml(text: str, *, source: str) -> Any:
    import yaml

    if len(text.encode("utf-8", "surrogatepass")) > MAX_INPUT_BYTES:
        raise LayoutError(source, "", f"a layout of at most {MAX_INPUT_BYTES} bytes")
    fast = len(text) <= 1 << 16 and _shallow(text) and hasattr(yaml, "CSafeLoader")
    try:
        data = yaml.load(text, Loader=_strict_loader(fast))  # noqa: S506 - safe loaders only
    except _StrictYAMLError as e:
        raise LayoutError(source, f"line {e.line}", e.expected, e.got, detail=e.detail) from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else ""
        problem = getattr(e, "problem", None) or "not valid YAML"
        raise LayoutError(source, where, "valid YAML", detail=str(problem)) from None
    except RecursionError:
        raise LayoutError(source, "", "YAML nested less deeply") from None
    return data


def read_input(path: str, *, overrides: dict[str, tuple[Any, str]] | None = None) -> tuple[dict, dict, str]:
    """A layout YAML, a config.json, or a model directory -> (raw layout, provenance, source)."""
    if os.path.isdir(path) or path.endswith(".json"):
        config = os.path.join(path, "config.json") if os.path.isdir(path) else path
        data = {"model": {"hf_config": os.path.abspath(config)}}
        top, origin = expand(data, source=config, overrides=overrides)
        return top, origin, config
    raw = _read_bytes(path, "a readable layout file")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise LayoutError(path, "", "UTF-8 text") from None
    data = parse_yaml(text, source=path)
    base = os.path.dirname(os.path.abspath(path))
    top, origin = expand(data, source=path, overrides=overrides, base_dir=base)
    return top, origin, path


def load_layout(path: str, *, overrides: dict[str, tuple[Any, str]] | None = None) -> Layout:
    """Read and validate a layout YAML file, a Hugging Face config.json, or a directory holding one."""
    top, origin, source = read_input(path, overrides=overrides)
    return validate(top, source=source, overrides=overrides, origin=origin)
