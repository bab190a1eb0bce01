"""The `offload.lmcache` section (offload.backend lmcache): LMCache's config keys under LMCache's names for the
selected LMCache release, values through its converters (vocab/releases/lmcache.py)."""

from __future__ import annotations

import re
from typing import Any

from ...vocab.errors import UnsupportedError
from ...vocab.layout import OffloadLayout
from ...vocab.releases.lmcache import LMCacheLayout
from ...vocab.records import replace
from ...vocab.releases import lmcache as lmr
from ..values import Reader

def lmcache_offload(r: Reader, o: dict) -> OffloadLayout:
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
                         backend="lmcache", lmcache=lm, lmcache_mp=_server(r, o, gib))


def _server(r: Reader, o: dict, gib: float | None):
    """vLLM's flag: the LMCache MP server a 0.23+ release attaches to instead (backends/lmcache.py hands the pool
    over by release), with offload.lmcache_mp when given; LMCacheConnectorV1 named in-process takes no server."""
    if gib is None:
        if o.get("lmcache_mp") is not None:
            raise r.fail("offload.lmcache_mp", "no LMCache server section with LMCacheConnectorV1 (the in-process "
                         "connector); the server is LMCacheMPConnector's: offload.backend lmcache_mp, or vLLM 0.23+'s "
                         "--kv-offloading-backend lmcache --kv-offloading-size N")
        return None
    from ...vocab.releases.lmcache_mp import MPLayout
    from .lmcache_mp import server_of

    flagged = "offload.kv_offloading_size" in r.flags
    how = (f"--kv-offloading-backend lmcache --kv-offloading-size {gib:g}" if flagged else
           f"offload.backend lmcache with offload.kv_offloading_size {gib:g}")
    return MPLayout(server=server_of(r, o.get("lmcache_mp")), selected_by=how, kv_offloading_size=gib)


def _release(r: Reader, data: Any) -> str:
    """The LMCache release whose config keys and converters apply (offload.lmcache.version)."""
    if r.flags.get("offload.lmcache.version", "").startswith("--kv-transfer-config"):
        # A serve line's kv_connector_extra_config "lmcache.version": LMCache's own setting, which no release defines
        # (v1/config_base.py validate_and_set_config_value: "Config key 'version' does not exist"), not kvcalc's.
        raise r.fail("offload.lmcache.version", "a config key LMCache defines (none has `version`; name the LMCache "
                     "release with --lmcache-version)", detail="unknown key")
    version = data.get("version", lmr.DEFAULT_LMCACHE_VERSION)
    if not isinstance(version, str) or version not in lmr.LMCACHE_RELEASES:
        raise UnsupportedError(f"{r.source}: {r.where('offload.lmcache.version')}: LMCache release {version!r} is "
                               f"not one kvcalc read ({lmr.LMCACHE_RELEASES[0]} - {lmr.LMCACHE_RELEASES[-1]}; "
                               "`kvcalc versions` lists them)")
    return version


def _named_values(r: Reader, data: dict, version: str, ignored: list[str]) -> dict[str, tuple[Any, str]]:
    """LMCache name -> (value, key path): aliases resolved as the release's v1/config.py does, keys it does not
    define refused (or noted, when the environment set them), a key given twice under two names refused."""
    keys, alias = lmr.config_keys(version), lmr.aliases(version)
    values: dict[str, tuple[Any, str]] = {}
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
    return values


def _converted(r: Reader, values: dict[str, tuple[Any, str]], version: str) -> dict[str, Any]:
    """The modelled keys' values through LMCache's converters (LMCache's defaults for those not given), refusing
    the switches kvcalc does not model."""

    def conv(name: str, fn, *args, **kw):
        if name not in values:
            return lmr.DEFAULTS[name]
        value, path = values[name]
        try:
            return fn(value, *args, **kw)
        except ValueError as e:
            raise r.fail(path, str(e), value) from None
        except OverflowError:  # an integer beyond a float (10^400 GiB): no host's
            raise r.fail(path, "a number of GiB a float holds", str(value)[:20] + "...") from None

    keys = lmr.config_keys(version)
    out: dict[str, Any] = {"chunk_size": conv("chunk_size", lmr.to_int)}
    for name in lmr.FLOAT_KEYS:
        out[name] = conv(name, lmr.to_gib)
    for name in lmr.BOOL_KEYS:
        if name in keys:
            out[name] = conv(name, lmr.to_bool)
    for name in lmr.INT_LIST_KEYS:
        out[name] = conv(name, lmr.to_int_list)
    out["local_disk"] = conv("local_disk", lmr.to_local_disk)
    out["extra_config"] = conv("extra_config", lmr.to_extra) or {}
    for name, why in lmr.UNMODELLED_SWITCHES.items():
        if out.get(name):
            raise UnsupportedError(f"{r.source}: {r.where(values[name][1])}: {name} true is not modelled: {why}")
    if out["max_local_cpu_size"] <= 0 and values.get("maru_path", (None,))[0] is not None:
        # 0.4.3+ v1/storage_backend/storage_manager.py _get_allocator_backend: without a LocalCPUBackend the
        # MaruBackend allocates instead of failing (lmcache_plan.py _startup_failure).
        raise UnsupportedError(f"{r.source}: {r.where(values['maru_path'][1])}: maru_path with max_local_cpu_size "
                               "0 is not modelled: MaruBackend then allocates every chunk")
    return out


def _extra(r: Reader, extra: dict, epath: str, version: str, ignored: list[str]) -> tuple[Any, Any, Any]:
    """(save_only_first_rank, first_rank_max_local_cpu_size, local_cpu.pinned_align_bytes) from extra_config, as
    LMCache reads them, refusing what it would misread."""
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
    return sofr, first, align


def _lmcache(r: Reader, data: Any, *, via_vllm_flag: bool, kv_offloading_size: float | None) -> LMCacheLayout:
    """offload.lmcache -> LMCacheLayout: keys under LMCache's names for the selected LMCache release (aliases
    resolved as its v1/config.py does), values through its converters (vocab/releases/lmcache.py), refusing what
    LMCache would misread and what changes the pool in ways kvcalc does not model."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise r.fail("offload.lmcache", "a mapping of LMCache config keys", type(data).__name__)
    version = _release(r, data)
    ignored: list[str] = []
    values = _named_values(r, data, version, ignored)
    out = _converted(r, values, version)
    epath = values["extra_config"][1] if "extra_config" in values else "offload.lmcache.extra_config"
    sofr, first, align = _extra(r, out["extra_config"], epath, version, ignored)
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
        lmcache_worker_ids=out["lmcache_worker_ids"] or None, lazy_allocator=lazy,
        reserve_local_cpu_size=out["reserve_local_cpu_size"],
        enable_hidden_state_cache=bool(out.get("enable_hidden_state_cache")),
        max_hidden_state_cpu_size=out["max_hidden_state_cpu_size"],
        enable_scheduler_bypass_lookup=bool(out.get("enable_scheduler_bypass_lookup")), via_vllm_flag=via_vllm_flag,
        kv_offloading_size=kv_offloading_size, ignored=tuple(sorted(set(ignored))), provenance=provenance)


def connector_layout(r: Reader, o: dict, *, selected_by: str, notes: tuple[str, ...]) -> OffloadLayout:
    """The connector reader's interface (inputs/layout/validate.CONNECTOR_LAYOUTS): the notes validation made
    about the connector replace LMCache's own."""
    return replace(lmcache_offload(r, o), notes=notes)
