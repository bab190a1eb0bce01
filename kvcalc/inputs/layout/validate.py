"""An expanded layout dict -> a validated `Layout`.

Every key is checked here, so later stages can trust types and ranges; every refusal is a
LayoutError naming the file, the key path (and the CLI flag when a flag set it) and what was expected.
The key table (vocab/keys.KEYS) says which keys a section has, their defaults and bounds; a key of a simple kind is
read by its row alone (`_read`), and the rules between keys are the code below.
"""

from __future__ import annotations

import math
from importlib import import_module
from typing import Any

from ...vocab.errors import StartupRefusal, UnsupportedError, known
from ...vocab.keys import KEY, UNMODELLED
from ...vocab.kinds import GPU_ARCH_CAPABILITY, HeadRuleError, heads_per_rank
from ...vocab.layout import (
    NO_CONNECTOR,
    CacheLayout,
    GpuLayout,
    HostLayout,
    Layout,
    ModelLayout,
    OffloadLayout,
    ParallelLayout,
)
from ...vocab.records import replace
from ...vocab.units import gib_float_to_bytes
from ...vocab.releases.vllm import behaviour_for
from .model import model_section
from ..values import Reader, written

SCHEMA_VERSION = KEY["schema_version"].default
# The offload keys that configure a connector: any of them (or offload.backend) means vLLM runs one.
CONNECTOR_KEYS = ("cpu_bytes_to_use", "kv_offloading_size", "block_size", "blocks_per_chunk")
# The engines whose layouts have keys of their own -> the module that reads them (engine_layout); a vLLM layout is
# read here.
ENGINE_LAYOUTS = {"sglang": ".sglang"}
# The connectors with a section of their own -> (the module that reads it: connector_layout, when: "first" before
# the other connectors' sections are checked, "after" once the lmcache section that counts is known); the native
# connector and no connector are read here.
CONNECTOR_LAYOUTS = {"simple": (".simple", "first"), "lmcache": (".lmcache", "after"),
                     "lmcache_mp": (".lmcache_mp", "after")}


def _unmodelled(r: Reader, top: dict) -> tuple[tuple[str, Any], ...]:
    """(path, value) of the keys no stage reads yet (Key.modelled False), read by their rows."""
    out = []
    for key in UNMODELLED:
        node: Any = top
        for part in key.parent.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        out.append((key.path, r.key(node if isinstance(node, dict) else {}, key.path)))
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
    model = model or model_section(r, top.get("model"))
    # An engine with its own reader checks its own node rules (inputs/layout/<engine>.py); vLLM's are here.
    parallel = _parallel(r, top.get("parallel"), model, ENGINE_LAYOUTS.get(r.key(top, "engine")) is None)
    mpe = r.key(top["model"], "model.max_position_embeddings") if isinstance(top.get("model"), dict) else None
    cache = _cache(r, top.get("cache"), model, parallel, mpe)
    vllm = r.section(top.get("vllm"), "vllm")
    version, version_from, platform, backend, gpu_arch, aiter = _vllm_section(r, vllm, model, source)
    own = ENGINE_LAYOUTS.get(r.key(top, "engine"))
    if own is not None:  # another engine's own keys (inputs/layout/<engine>.py, loaded only for it)
        return import_module(own, __package__).engine_layout(
            r, top, model=model, parallel=parallel, cache=cache, common=dict(
            host=_host(r, top.get("host")), vllm_version=version, vllm_version_from=version_from, source=source,
            platform=platform, attention_backend=backend, gpu_arch=gpu_arch, rocm_use_aiter=aiter,
            provenance=tuple(sorted((origin or {}).items())), written=top.get("__written__", frozenset()),
            limits=_limits(top)))
    offload = _offload(r, top.get("offload"), model, cache, version)
    host = _host(r, top.get("host"))
    gpu = _gpu(r, top.get("gpu"))
    if gpu.rocm:  # an AMD GPU by name runs vLLM's ROCm platform (platforms/__init__.py resolve_current_platform)
        if "platform" in vllm and platform != "rocm":
            raise r.fail("vllm.platform", f"rocm with {gpu.name} (an AMD GPU)", platform)
        platform = "rocm"
    if gpu.capability is not None and gpu_arch is not None and GPU_ARCH_CAPABILITY[gpu_arch] != gpu.capability:
        raise r.fail("vllm.gpu_arch", f"no value, or the arch of {gpu.name} (compute capability {gpu.capability})",
                     gpu_arch)
    weights = None
    if gpu.predicts:
        from .gpu import class_defaults, read_weights  # only a predicted budget needs them

        cache = class_defaults(cache, gpu, version)
        if cache.kv_cache_memory is None and cache.num_gpu_blocks_override is None:
            weights = read_weights(top.get("__config__"))
    sglang = None
    if top.get("sglang") is not None or isinstance(top.get("host"), dict) and "available_memory" in top["host"]:
        from .sglang import sglang_settings  # checked, and kept for --compare-engines

        sglang = sglang_settings(r, top)
    return Layout(model=model, parallel=parallel, cache=cache, offload=offload, host=host, gpu=gpu, weights=weights,
                  sglang=sglang, engine=r.key(top, "engine"), vllm_version=version, vllm_version_from=version_from,
                  source=source, platform=platform, attention_backend=backend, gpu_arch=gpu_arch, rocm_use_aiter=aiter,
                  provenance=tuple(sorted((origin or {}).items())), written=top.get("__written__", frozenset()),
                  limits=_limits(top),
                  unmodelled=_unmodelled(r, top) if UNMODELLED else ())


def _vllm_section(r: Reader, vllm: dict, model: ModelLayout,
                  source: str) -> tuple[str, str, str, str | None, str | None, bool]:
    """(the release, where it came from, the platform, the attention backend, the GPU arch, VLLM_ROCM_USE_AITER) of
    the vllm section."""
    version = written(vllm, "vllm.version")
    if isinstance(version, float):
        raise r.fail("vllm.version", "a quoted release string such as '0.20.0' (YAML read this as a number)", version)
    version = r.str_(version, "vllm.version")
    version_from = r.flags.get("vllm.version") or ("layout file" if "version" in vllm else "default")
    try:
        behaviour_for(version)
    except UnsupportedError as e:
        raise UnsupportedError(f"{source}: {r.where('vllm.version')}: {e}") from None
    backend = _attention_backend(r, vllm, version)
    return (version, version_from, r.key(vllm, "vllm.platform"), backend, r.key(vllm, "vllm.gpu_arch"),
            r.key(vllm, "vllm.rocm_use_aiter"))


def _attention_backend(r: Reader, vllm: dict, version: str) -> str | None:
    """--attention-backend: a member of the release's AttentionBackendEnum (config/attention.py
    validate_backend_before: AttentionBackendEnum[value.upper()], vLLM's ValueError for another name)."""
    from ...vocab.releases.attn_priorities import enum_members
    from ...vocab.releases.attn_rules import attention_rules
    from ...vocab.releases.vllm import parse_release

    release = parse_release(version)[0]
    env = r.key(vllm, "vllm.attention_backend_env")
    if env is not None and attention_rules(release).backend_env:
        members = enum_members(release)
        if env not in members:  # env_with_choices: case-sensitive, its own ValueError
            raise r.fail("vllm.attention_backend_env", f"an attention backend of vLLM {version} (vLLM: \"Invalid value "
                         f"'{env}' for VLLM_ATTENTION_BACKEND. Valid options: {list(members)}.\")", env)
        return env
    name = r.key(vllm, "vllm.attention_backend")
    if name is None:
        return None
    members = enum_members(release)
    if name.upper() not in members:
        raise r.fail("vllm.attention_backend", f"an attention backend of vLLM {version} (vLLM: \"Unknown attention "
                     f"backend: '{name.upper()}'. Valid options are: {', '.join(members)}\")", name)
    return name.upper()


def _gpu(r: Reader, data: Any) -> GpuLayout:
    g = r.section(data, "gpu")
    if not g:
        return GpuLayout()
    from .gpu import gpu_section

    return gpu_section(r, g)


def _limits(top: dict):
    """The model config's limits vLLM validates (inputs/hf/limits.py), when a config.json was read."""
    config = top.get("__config__")
    if config is None:
        return None
    from ..hf.limits import model_limits

    return model_limits(config[1], config[0])


def _host(r: Reader, data: Any) -> HostLayout:
    h = r.section(data, "host")
    page = r.key(h, "host.page_size")
    if page & (page - 1):
        raise r.fail("host.page_size", f"a power of two >= {KEY['host.page_size'].minimum} (the host's mmap.PAGESIZE)",
                     page)
    gb = h.get("cpu_offload_gb")
    key = KEY["host.cpu_offload_gb"]
    if gb is not None and (isinstance(gb, bool) or not isinstance(gb, (int, float)) or not math.isfinite(gb)
                           or not 0 <= gb <= known(key.cap, "the key's cap")):
        raise r.fail("host.cpu_offload_gb", "a non-negative number of GiB (vLLM's --cpu-offload-gb)", gb)
    return HostLayout(page_size=page, pinned_round_threshold_mb=r.key(h, "host.pinned_round_threshold_mb"),
                      free_hugepages=r.key(h, "host.free_hugepages"), cpu_offload_gb=gb or 0)


def validate_offload(top: dict, base: Layout, *, flags: dict[str, str]) -> Layout:
    """`base` with the offload section of `top` (a layout dict that differs from base's only there); `flags`: key
    path -> the flag that set it (named in error messages and in the budget's source)."""
    r = Reader(base.source, flags)
    return replace(base, offload=_offload(r, top.get("offload"), base.model, base.cache,
                                          base.vllm_version))


def _parallel(r: Reader, data: Any, model: ModelLayout, vllm_nodes: bool = True) -> ParallelLayout:
    p = r.section(data, "parallel")
    tp = r.key(p, "parallel.tensor_parallel_size")
    pp = r.key(p, "parallel.pipeline_parallel_size")
    dp = r.key(p, "parallel.data_parallel_size")
    if pp > model.num_layers:
        raise r.fail("parallel.pipeline_parallel_size", f"at most model.num_layers ({model.num_layers})", pp)
    if vllm_nodes and model.tp_must_divide is not None and model.tp_must_divide % tp:
        # The model's own assertion at start-up (dory.py:295-296; bailing_linear_attn.py:448-453 @0.33.0).
        raise StartupRefusal(f"{r.source}: parallel.tensor_parallel_size {tp}: vLLM's {model.name} refuses a TP size "
                             f"that does not divide {model.tp_must_divide} (model.tp_must_divide)")
    if vllm_nodes and pp > 1 and not model.pipeline_parallel:
        # vLLM config/model.py:1569-1576 @0.33.0 (the same check in every release read), at start-up.
        raise StartupRefusal(f"{r.source}: parallel.pipeline_parallel_size {pp}: vLLM refuses it for "
                             f"{model.name}: \"Pipeline parallelism is not supported for this model. Supported "
                             "models implement the `SupportsPP` interface.\"")
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
    backend = r.key(p, "parallel.distributed_executor_backend")
    nnodes = r.key(p, "parallel.nnodes")
    local = p.get("data_parallel_size_local")
    if local is not None:  # at most the DP size
        local = r.int_(local, "parallel.data_parallel_size_local",
                       minimum=KEY["parallel.data_parallel_size_local"].minimum, maximum=dp)
    world = dp * pp * tp
    if vllm_nodes and nnodes > 1 and world % nnodes:
        # engine/arg_utils.py (0.14.0:1470, an assert; 0.33.0:2405, a ValueError): the whole DP x PP x TP world over
        # the nodes.
        raise r.fail("parallel.nnodes", f"a divisor of the world size DP x PP x TP = {world} (vLLM stops: "
                     f"'world_size={world} must be divisible by nnodes={nnodes}')", nnodes)
    par = ParallelLayout(tensor_parallel_size=tp, pipeline_parallel_size=pp, data_parallel_size=dp,
                         pp_layer_partition=part, distributed_executor_backend=backend, nnodes=nnodes,
                         data_parallel_size_local=local)
    if vllm_nodes and nnodes > 1 and nnodes % max(dp // par.dp_local, 1):
        # config/parallel.py 0.33.0:827-835 (nnodes_within_dp): the nodes must split evenly over the DP node groups.
        raise r.fail("parallel.nnodes", f"a multiple of the DP node groups DP / DP local = {dp // par.dp_local} "
                     "(vLLM stops: 'Invalid data parallel configuration')", nnodes)
    return par


def _check_heads(r: Reader, heads: int, tp: int, key: str, tp_key: str, *, replicates: bool = True) -> None:
    try:
        heads_per_rank(heads, tp, replicates=replicates)
    except HeadRuleError as e:
        raise r.fail(key, str(e), heads, detail=f"set by {r.where(tp_key)}") from None


def _cache(r: Reader, data: Any, model: ModelLayout, par: ParallelLayout, mpe: int | None) -> CacheLayout:
    c = r.section(data, "cache")
    key = KEY["cache.block_size"]
    block = c.get("block_size")
    if block is not None:
        block = r.int_(block, "cache.block_size", minimum=key.minimum)
        if key.cap is not None and block > key.cap:
            raise r.fail("cache.block_size", f"at most {key.cap} tokens", block)
    kv_dtype, skip = _kv_dtype(r, c, model)
    memory = _kv_cache_memory(r, c, par)
    override = r.key(c, "cache.num_gpu_blocks_override")
    if c.get("max_model_len") is not None:
        mml = r.human_int(c["max_model_len"], "cache.max_model_len", minimum=KEY["cache.max_model_len"].minimum)
    elif mpe is not None:
        mml = mpe  # vLLM's default max_model_len is the model's max_position_embeddings
    else:
        raise r.fail("cache.max_model_len", "a positive integer (the longest request in tokens; "
                     "--max-model-len): the model states no max_position_embeddings")
    mnbt = r.key(c, "cache.max_num_batched_tokens")
    prefix = r.key(c, "cache.enable_prefix_caching")
    hma = written(c, "cache.hybrid_kv_cache_manager")
    hma = {True: "on", False: "off"}.get(hma, hma) if isinstance(hma, bool) else hma  # YAML 1.1 reads on/off as bools
    hma = r.choice(hma, "cache.hybrid_kv_cache_manager", KEY["cache.hybrid_kv_cache_manager"].choices)
    mdt = r.key(c, "cache.mamba_cache_dtype")
    msdt = r.key(c, "cache.mamba_ssm_cache_dtype")
    if msdt == "auto" and model.mamba is not None and model.mamba.state_dtype is not None:
        msdt = model.mamba.state_dtype  # auto takes the model's config value (an explicit value wins, as in vLLM)
    mbs = r.key(c, "cache.mamba_block_size")
    mode = r.key(c, "cache.mamba_cache_mode")
    return CacheLayout(block_size=block, kv_cache_dtype=kv_dtype, kv_cache_dtype_skip_layers=skip,
                       kv_cache_memory=memory, num_gpu_blocks_override=override, max_model_len=mml,
                       max_num_batched_tokens=mnbt, enable_prefix_caching=prefix, hybrid_kv_cache_manager=hma,
                       mamba_cache_dtype=mdt, mamba_ssm_cache_dtype=msdt, mamba_block_size=mbs,
                       mamba_cache_mode=mode, max_num_seqs=r.key(c, "cache.max_num_seqs"),
                       max_num_batched_tokens_given=c.get("max_num_batched_tokens") is not None,
                       allow_long_max_model_len=r.key(c, "cache.allow_long_max_model_len"),
                       enable_chunked_prefill=r.key(c, "cache.enable_chunked_prefill"))


def _kv_dtype(r: Reader, c: dict, model: ModelLayout) -> tuple[str, tuple]:
    """cache.kv_cache_dtype (a dtype kvcalc does not model is unsupported, not malformed) and the layers kept at the
    model dtype."""
    kv_dtype = written(c, "cache.kv_cache_dtype")
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


def _section_that_counts(r: Reader, o: dict, which: str) -> tuple[str, Any]:
    """(the connector, the offload.lmcache section that counts); no budget, no connector named and no LMCache key is
    vLLM without a KV connector (backends/none.py)."""
    section = o.get("lmcache")
    if isinstance(section, dict):  # (LMCache's section filter only when there is one: start-up time is a target)
        from .lmcache_section import counted_section

        section = counted_section(r, section, which)
    if "backend" not in o and section is None and not any(o.get(k) is not None for k in CONNECTOR_KEYS):
        which = NO_CONNECTOR.backend
    return which, section


def _offload(r: Reader, data: Any, model: ModelLayout, cache: CacheLayout,
             version: str) -> OffloadLayout:
    o = r.section(data, "offload")
    which, notes, how = _connector(r, o, version)
    own = CONNECTOR_LAYOUTS.get(which)
    if own is not None and own[1] == "first":  # a connector read before the others' sections are looked at
        return import_module(own[0], __package__).connector_layout(r, o, selected_by=how, notes=notes)
    if o.get("simple") is not None:
        raise r.fail("offload.simple", "no simple section with this backend (set offload.backend: simple, or "
                     "--offload-backend simple)")
    which, section = _section_that_counts(r, o, which)
    own = CONNECTOR_LAYOUTS.get(which)
    if own is not None:  # its own section's reader (inputs/layout/<backend>.py, loaded only for it)
        return import_module(own[0], __package__).connector_layout(r, o, selected_by=how, notes=notes)
    _no_server_section(r, o, which)
    if which == NO_CONNECTOR.backend:
        for k in CONNECTOR_KEYS:
            if o.get(k) is not None:
                raise r.fail(f"offload.{k}", "no offloading setting with offload.backend none (no KV connector)",
                             o.get(k))
        if section is not None:
            raise r.fail("offload.lmcache", "no offloading setting with offload.backend none (no KV connector)",
                         section)
        return NO_CONNECTOR
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
        if isinstance(gib, bool) or not isinstance(gib, (int, float)) or (isinstance(gib, int) and gib > 1 << 60) \
                or not math.isfinite(gib) or gib < key.minimum or (key.cap is not None and gib > key.cap):
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
    block = r.key(o, "offload.block_size")
    bpc = r.key(o, "offload.blocks_per_chunk")
    # Without --block-size the GPU block size is the selected backend's: the connector's own check (backends/
    # formulas.py) compares with it once the plan knows it.
    if block is not None and cache.block_size is not None and block % cache.block_size:
        raise r.fail("offload.block_size", f"a multiple of the GPU block size {cache.block_size}", block)
    # A backend that takes the budget as the native connector does (cpu_bytes_to_use) keeps its own name.
    return OffloadLayout(backend=which, cpu_bytes_to_use=cpu, cpu_bytes_source=src, cpu_bytes_written=written,
                         block_size=block, blocks_per_chunk=bpc, notes=notes)


def _no_server_section(r: Reader, o: dict, which: str) -> None:
    """An LMCache server section needs the connector that attaches to it (inputs/layout/lmcache_mp.py)."""
    if o.get("lmcache_mp") is not None:
        raise r.fail("offload.lmcache_mp", f"no LMCache server section with offload.backend {which} (vLLM attaches to "
                     "the server through LMCacheMPConnector: --offload-backend lmcache_mp, a serve line's "
                     "--kv-transfer-config naming it, or --kv-offloading-backend lmcache --kv-offloading-size N on "
                     "vLLM 0.23+)")


def _connector(r: Reader, o: dict, version: str) -> tuple[str, tuple[str, ...], str]:
    """(the backend, notes on how it was chosen, how, in words): offload.backend, or VLLM_USE_SIMPLE_KV_OFFLOAD's
    choice for --kv-offloading-size (validate_simple.simple_env)."""
    which = r.key(o, "offload.backend")
    how = f"offload.backend simple (from {r.flags['offload.backend']})" if "offload.backend" in r.flags \
        else "offload.backend simple"
    if o.get("use_simple_kv_offload") is not None and r.key(o, "offload.use_simple_kv_offload"):
        from .simple import simple_env  # the variable set: SimpleCPUOffloadConnector's rules only

        return simple_env(r, o, which, version, how)
    return which, (), how
