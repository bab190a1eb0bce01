"""Plan -> the vLLM flags that reproduce it, in both spellings of the CPU budget. Pure."""

from __future__ import annotations

import json
from ..vocab.records import replace

from ..vocab.errors import KvcalcError
from ..vocab.keys import KEY, KEYS, Key
from ..vocab.layout import Layout, base_block_size
from ..pipeline import Plan, plan
from ..vocab.units import format_bytes


def startable_plan(layout: Layout) -> tuple[Plan, list[str]]:
    """Plan the layout; if the release refuses it, try the hybrid-manager and prefix-caching switches a user
    would add (HMA on where 0.21 allows it, prefix caching for Mamba hybrids). Returns the plan and what changed."""
    cache = layout.cache
    tries: list[tuple[Layout, list[str]]] = [(layout, [])]
    if cache.enable_prefix_caching is None and layout.model.has_mamba:
        tries.append((replace(layout, cache=replace(cache, enable_prefix_caching=True)),
                      ["--enable-prefix-caching: Mamba groups need it for the offloader's block-size check"]))
    if cache.hybrid_kv_cache_manager == "auto":
        on = replace(cache, hybrid_kv_cache_manager="on")
        tries.append((replace(layout, cache=on), ["--no-disable-hybrid-kv-cache-manager: the hybrid manager is off "
                                                  "by default with a KV connector on this release"]))
        if layout.model.has_mamba and cache.enable_prefix_caching is None:
            tries.append((replace(layout, cache=replace(on, enable_prefix_caching=True)),
                          tries[-1][1] + ["--enable-prefix-caching: Mamba groups need it for the offloader"]))
    first_error: KvcalcError | None = None
    first_plan = None
    for candidate, why in tries:
        try:
            p = plan(candidate)
        except KvcalcError as e:
            first_error = first_error or e
            continue
        if p.offload.startup_error is None:
            return p, why
        first_plan = first_plan or p
    if first_plan is not None:
        return first_plan, []
    raise first_error


# The value vllm-args spells for a key whose row says vllm_args "plan": worked out from the plan (None: not spelled).
def _block_size(plan: Plan, notes: list[str]) -> int:
    # The block size kvcalc assumed (before any hybrid bump vLLM applies itself): pinned so the backend's own default
    # cannot differ from kvcalc's.
    lay = plan.layout
    return base_block_size(lay.cache.block_size, lay.model.is_mla, lay.backend)


def _kv_cache_memory(plan: Plan, notes: list[str]) -> int | None:
    memory = plan.layout.cache.kv_cache_memory
    if memory is None:
        return None
    if len(set(memory)) == 1:
        return memory[0]
    notes.append("kv_cache_memory differs per worker: vLLM's --kv-cache-memory-bytes takes one value")
    return None


def _prefix_caching(plan: Plan, notes: list[str]) -> bool | None:
    lay = plan.layout
    if lay.cache.enable_prefix_caching is None and not lay.model.has_mamba:
        return None
    return plan.layers.enable_prefix_caching


def _mamba_cache_mode(plan: Plan, notes: list[str]) -> str | None:
    lay = plan.layout
    if lay.model.has_mamba and plan.layers.mamba_cache_mode != "none" and lay.cache.mamba_cache_mode != "auto":
        return plan.layers.mamba_cache_mode
    return None


def _hybrid_manager(plan: Plan, notes: list[str]) -> str | None:
    default_hma = plan.behaviour.hma_default_with_connector
    if plan.hma_enabled and not default_hma:
        return "on"
    if not plan.hma_enabled and default_hma and plan.layout.cache.hybrid_kv_cache_manager == "off":
        return "off"
    return None


PLAN_VALUES = {
    "cache.block_size": _block_size,
    "cache.kv_cache_memory": _kv_cache_memory,
    "cache.enable_prefix_caching": _prefix_caching,
    "cache.mamba_cache_mode": _mamba_cache_mode,
    "cache.hybrid_kv_cache_manager": _hybrid_manager,
    "offload.kv_offloading_size": lambda plan, notes: None,  # the budget: spelled in its own variant (build)
}


def layout_value(layout: Layout, key: Key):
    """A key's validated value in the layout (the vllm section's keys sit on the Layout itself)."""
    if not key.modelled:
        return dict(layout.unmodelled).get(key.path)
    section, _, rest = key.path.partition(".")
    if section == "vllm":
        return getattr(layout, "vllm_version" if rest == "version" else rest)
    node = layout
    for part in key.path.split("."):
        node = getattr(node, part)
    return node


def common_args(plan: Plan, notes: list[str]) -> list[str]:
    """The vLLM flags every spelling of the budget shares: each key whose row has a vllm-args rule, in the key
    table's order."""
    out: list[str] = []
    for key in KEYS:
        if not key.vllm_args:
            continue
        if key.vllm_args == "plan":
            value = PLAN_VALUES[key.path](plan, notes)
        else:
            value = layout_value(plan.layout, key)
            if key.vllm_args == "changed" and value == key.default:
                value = None
        if value is not None:
            out += key.vllm_spelled(value)
    return out


_GIB_FLAG = KEY["offload.kv_offloading_size"].vllm_flag  # the budget in GiB (--kv-offloading-size)


def gib_spelling(cpu_bytes: int) -> float | None:
    """The --kv-offloading-size value X with int(X * 2**30) == cpu_bytes, as vLLM converts it; None if no
    float does it (then only the kv_connector_extra_config spelling is exact)."""
    x = cpu_bytes / (1 << 30)
    for candidate in (float(repr(x)), x):
        if int(candidate * (1 << 30)) == cpu_bytes:
            return candidate
    return None


def build(plan: Plan, changed: list[str] | None = None) -> dict:
    lay, cache = plan.layout, plan.layout.cache
    b = plan.behaviour
    notes: list[str] = []
    common = common_args(plan, notes)
    if cache.kv_cache_dtype_skip_layers:
        notes.append("set kv_cache_dtype_skip_layers = "
                     f"{list(cache.kv_cache_dtype_skip_layers)} in vLLM's cache config (no flag spelled here)")
    if lay.model.draft is not None:
        notes.append(f"add --speculative-config with method {lay.model.draft.method!r}, the drafter model and "
                     f"num_speculative_tokens {lay.model.draft.num_speculative_tokens}")

    notes += [f"added {c}" for c in changed or []]
    if plan.lmcache is not None:
        return _lmcache_args(plan, common, notes)
    cpu = lay.offload.cpu_bytes_to_use
    if cpu is None:
        raise KvcalcError(f"{lay.source}: vllm-args spells the CPU budget: give --cpu-bytes or --kv-offloading-size "
                          "(or offload.cpu_bytes_to_use)")
    extra: dict = {"cpu_bytes_to_use": cpu}
    if lay.offload.block_size is not None:
        extra["block_size"] = lay.offload.block_size
    if lay.offload.blocks_per_chunk is not None:
        extra["blocks_per_chunk"] = lay.offload.blocks_per_chunk
    transfer = {"kv_connector": "OffloadingConnector", "kv_role": "kv_both", "kv_connector_extra_config": extra}
    with_json = common + ["--kv-transfer-config", json.dumps(transfer, separators=(",", ":"))]
    gib = gib_spelling(cpu)
    with_gib = None
    if gib is None:
        notes.append(f"--kv-offloading-size cannot express {cpu:,} B exactly (it is GiB through a float): use the "
                     "--kv-transfer-config spelling")
    elif len(extra) > 1:
        notes.append("--kv-offloading-size cannot carry block_size / blocks_per_chunk: use the --kv-transfer-config "
                     "spelling")
    else:
        with_gib = common + [_GIB_FLAG, repr(gib)]
        notes.append(f"--kv-offloading-size {gib!r} is GiB: vLLM computes int({gib!r} * 2**30) = {cpu:,} B "
                     f"({format_bytes(cpu)}), the total for one engine")
    if plan.offload.startup_error:
        notes.append(f"vLLM {b.version} would still refuse this layout: {plan.offload.startup_error}")
    pod = pod_resources(plan)
    if pod is not None:
        shm = (f"/dev/shm (emptyDir medium: Memory) sizeLimit >= {pod['shm_size_limit']}"
               if pod["shm_size_limit"] else f"no /dev/shm region on {b.version} (private pinned tensors)")
        notes.append(f"pod resources for one engine's CPU tier: memory limit >= {pod['memory_limit']}, {shm}; add "
                     "the process's own memory (weights staging, CUDA context, Python: typically a few GiB)")
    return {"vllm_version": b.version, "backend": "native", "args_kv_offloading_size": with_gib,
            "args_kv_transfer_config": with_json, "lmcache_yaml": None, "lmcache_env": None,
            "notes": notes, "starts": plan.offload.startup_error is None, "pod": pod,
            "out_of_bounds": bool(plan.offload.results.get(plan.selected)
                                  and plan.offload.results[plan.selected].out_of_bounds)}


def _gi(n: int) -> str:
    """Bytes as a Kubernetes quantity in whole Gi, rounded up (68,719,476,737 B -> 65Gi)."""
    return f"{-(-n // (1 << 30))}Gi"


def pod_resources(plan: Plan) -> dict | None:
    """What a pod running one engine must grant its CPU tier: the resident host bytes as a memory limit, and the
    /dev/shm region (0.27+ shared region) as the emptyDir sizeLimit. None when the release would not start."""
    r = plan.offload.results.get(plan.selected)
    if r is None or plan.offload.startup_error:
        return None
    h = r.host
    return {"memory_limit": _gi(h.resident_bytes_per_engine), "memory_limit_bytes": h.resident_bytes_per_engine,
            "shm_size_limit": _gi(h.shm_bytes_per_engine) if h.shm_bytes_per_engine else None,
            "shm_size_limit_bytes": h.shm_bytes_per_engine}


def _lmcache_config(plan: Plan) -> dict:
    """The LMCache config (LMCache's own key names) that reproduces the plan: what kvcalc read, defaults left out
    except the three every reader looks for."""
    lm, lc = plan.layout.offload.lmcache, plan.lmcache
    cfg: dict = {"chunk_size": lm.chunk_size, "local_cpu": lc.local_cpu, "max_local_cpu_size": lc.max_local_cpu_size}
    if lm.local_disk:
        cfg["local_disk"] = lm.local_disk
        cfg["max_local_disk_size"] = lm.max_local_disk_size
    for key in ("use_layerwise", "local_cpu_use_hugepages", "enable_controller"):
        if getattr(lm, key):
            cfg[key] = True
    for key in ("lookup_server_worker_ids", "lmcache_worker_ids"):
        if getattr(lm, key):
            cfg[key] = list(getattr(lm, key))
    extra: dict = {}
    if lm.save_only_first_rank is not None:
        extra["save_only_first_rank"] = lm.save_only_first_rank
    if lm.first_rank_max_local_cpu_size is not None:
        extra["first_rank_max_local_cpu_size"] = lm.first_rank_max_local_cpu_size
    if lm.pinned_align_bytes is not None:
        extra["local_cpu.pinned_align_bytes"] = lm.pinned_align_bytes
    if extra:
        cfg["extra_config"] = extra
    return cfg


def _lmcache_args(plan: Plan, common: list[str], notes: list[str]) -> dict:
    """vLLM flags for LMCache's connector, and the LMCache config as YAML (for LMCACHE_CONFIG_FILE) and as
    LMCACHE_* variables (v1/config_base.py: LMCACHE_<KEY>; extra_config as JSON)."""
    lay, lc, b = plan.layout, plan.lmcache, plan.behaviour
    par = lay.parallel
    if not lc.modelled:
        raise KvcalcError(f"{lay.source}: vLLM {b.version} hands --kv-offloading-backend lmcache to {lc.connector}; "
                          "kvcalc does not model its server's pool, so it cannot spell it")
    cfg = _lmcache_config(plan)
    transfer = {"kv_connector": "LMCacheConnectorV1", "kv_role": "kv_both"}
    with_json = common + ["--kv-transfer-config", json.dumps(transfer, separators=(",", ":"))]
    with_flag = None
    ranks = par.tensor_parallel_size * par.pipeline_parallel_size
    if b.lmcache_offloading_flag == "per_rank":
        # 0.14.0 - 0.22.1 config/vllm.py: lmcache.max_local_cpu_size = kv_offloading_size / (TP x PP), local_cpu on.
        size = lc.max_local_cpu_size * ranks
        if lc.local_cpu and int(size / ranks * 1024 ** 3) == int(lc.max_local_cpu_size * 1024 ** 3):
            with_flag = common + ["--kv-offloading-backend", "lmcache", _GIB_FLAG, f"{size:g}"]
            notes.append(f"--kv-offloading-size {size:g} is GiB for the engine: vLLM {b.version} gives LMCache "
                         f"{size:g} / {ranks} = {lc.max_local_cpu_size:g} GiB per rank (the config's other keys still "
                         "come from LMCACHE_CONFIG_FILE / LMCACHE_*)")
    else:
        notes.append(f"vLLM {b.version} maps --kv-offloading-backend lmcache to the multi-process connector and "
                     "passes no size: use the --kv-transfer-config spelling for this pool")
    yaml_lines = [f"{k}: {_yaml_value(v)}" for k, v in cfg.items()]
    env_lines = [f"LMCACHE_{k.upper()}={_env_value(v)}" for k, v in cfg.items()]
    notes.append(f"LMCache pins {lc.max_local_cpu_size:g} GiB on each of {lc.storing_ranks} rank(s): "
                 f"{format_bytes(lc.pool_bytes_per_engine)} per engine")
    pod = {"memory_limit": _gi(lc.resident_bytes_per_engine), "memory_limit_bytes": lc.resident_bytes_per_engine,
           "shm_size_limit": None, "shm_size_limit_bytes": 0}
    notes.append(f"pod resources for one engine's CPU tier: memory limit >= {pod['memory_limit']} (LMCache's pinned "
                 "pool; no /dev/shm region); add the process's own memory (typically a few GiB)")
    return {"vllm_version": b.version, "backend": "lmcache", "args_kv_offloading_size": with_flag,
            "args_kv_transfer_config": with_json, "lmcache_yaml": "\n".join(yaml_lines) + "\n",
            "lmcache_env": env_lines, "notes": notes, "starts": True, "pod": pod, "out_of_bounds": False}


def _yaml_value(v) -> str:
    return json.dumps(v, separators=(", ", ": ")) if not isinstance(v, str) else json.dumps(v)


def _env_value(v) -> str:
    import shlex

    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (dict, list)):
        if isinstance(v, list):
            return ",".join(map(str, v))
        return shlex.quote(json.dumps(v, separators=(",", ":")))
    if isinstance(v, float):
        return f"{v:g}" if float(f"{v:g}") == v else repr(v)
    return shlex.quote(str(v))
