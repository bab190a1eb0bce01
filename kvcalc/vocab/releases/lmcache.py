"""LMCache releases as data: which ones kvcalc read, which config keys each knows, and how LMCache reads a value.

Every release from 0.3.10 to 0.5.6 was read from its wheel (`pip download lmcache==X --no-deps`, lmcache/**/*.py).
The sizing rules kvcalc uses (lmcache.py) are the same in all of them; what differs is the config vocabulary
(`KEY_HISTORY`, from each release's v1/config.py `_CONFIG_DEFINITIONS` / `_CONFIG_ALIASES`) and three switches
(`pinned_align_known`, `lazy_allocator_active`, `init_failure_degrades`). Earlier releases are refused: before 0.3.10
the MLA storing ranks were decided differently (no lookup-server gate in v1/cache_engine.py post_init) and before 0.3.7
drafter layers were not counted.

Values go through LMCache's own converters (v1/config_base.py `_apply_env_converter_safely`, also applied to YAML
values): `float(x)` for sizes in GiB, `int(x)`, `_to_bool` (only "true"/"1" are true). kvcalc applies them strictly:
where LMCache would read a value as something else than it says ("yes" as false, "5GB" as a failed conversion, the
string "false" as a true extra_config value), it refuses with what to write instead. Pure.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any

from ..errors import InternalError
from ..records import record
from . import DEFAULT_LMCACHE_VERSION, LMCACHE_RELEASES  # noqa: F401 - the releases, named in the package

if TYPE_CHECKING:
    from ..layout import Layout

# 0.3.10 v1/config.py _CONFIG_DEFINITIONS (77 keys), then what each later release added and removed.
_KEYS_0_3_10 = frozenset("""
audit_actual_remote_url blend_check_layers blend_min_tokens blend_recompute_ratios blend_special_str
blend_thresholds blocking_timeout_secs cache_policy chunk_size chunk_statistics_auto_exit_target_unique_chunks
chunk_statistics_auto_exit_timeout_hours chunk_statistics_auto_start_statistics chunk_statistics_strategy
controller_pull_url controller_reply_url cufile_buffer_size enable_async_loading enable_blending
enable_chunk_statistics enable_controller enable_lazy_memory_allocator enable_p2p enable_pd
enable_scheduler_bypass_lookup external_backends external_lookup_client extra_config gds_path hit_miss_ratio
internal_api_server_enabled internal_api_server_host internal_api_server_include_index_list
internal_api_server_port_start internal_api_server_socket_path_prefix lazy_memory_expand_trigger_ratio
lazy_memory_initial_ratio lazy_memory_safe_size lazy_memory_step_ratio lmcache_instance_id
lmcache_worker_heartbeat_delay_time lmcache_worker_heartbeat_time lmcache_worker_ids lmcache_worker_ports
local_cpu local_disk lookup_server_worker_ids lookup_timeout_ms max_local_cpu_size max_local_disk_size
nixl_backends nixl_buffer_device nixl_buffer_size numa_mode p2p_host p2p_init_ports p2p_lookup_ports
pd_buffer_device pd_buffer_size pd_peer_alloc_port pd_peer_host pd_peer_init_port pd_proxy_host pd_proxy_port
pd_role plugin_locations pre_caching_hash_algorithm priority_limit py_enable_gc remote_serde remote_url
reserve_local_cpu_size save_decode_cache save_unfull_chunk script_allowed_imports transfer_channel
use_layerwise weka_path
""".split())
KEY_HISTORY: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (  # (release, added, removed)
    ("0.3.10.post1", ("runtime_plugin_locations", "storage_plugins"), ("external_backends", "plugin_locations")),
    ("0.3.10.post2", ("enable_kv_events",), ()),
    ("0.3.12", ("pin_check_interval_sec", "pin_timeout_sec", "use_gpu_connector_v3"), ("weka_path",)),
    ("0.3.13", ("app_id", "remote_config_url"), ()),
    ("0.3.14", ("min_retrieve_tokens", "remote_storage_plugins"), ()),
    ("0.4.2", ("retrieve_locations", "store_location"), ()),
    ("0.4.3", ("gds_path_sharding", "maru_path", "maru_pool_size"), ()),
    ("0.4.4", ("gds_backend", "gds_buffer_size", "local_disk_path_sharding", "pd_skip_proxy_notification", "use_gds"),
     ("cufile_buffer_size",)),
    ("0.4.5", ("pd_allocation_timeout_sec", "pd_backend_mode", "pd_bidirectional", "pd_condition_poll_interval_sec",
               "pd_max_prefill_len", "pd_peer_query_port", "pd_shutdown_timeout_sec"), ()),
    ("0.4.6", ("local_cpu_use_hugepages", "mp_host", "mp_port"), ()),
    ("0.5.1", ("enable_hidden_state_cache", "hidden_state_layers", "hidden_states_retrieve_mode",
               "max_hidden_state_cpu_size"), ()),
    ("0.5.6", ("run_script_api_enabled",), ()),
)
# v1/config.py _CONFIG_ALIASES (old name -> current); 0.3.10.post1 adds the two plugin aliases. A deprecated name
# without an alias (_DEPRECATED_CONFIGS: nixl_peer_port) is accepted and ignored, as LMCache does.
_ALIASES = {"enable_xpyd": "enable_pd", "nixl_peer_host": "pd_peer_host", "nixl_peer_init_port": "pd_peer_init_port",
            "nixl_peer_alloc_port": "pd_peer_alloc_port", "nixl_proxy_host": "pd_proxy_host",
            "nixl_proxy_port": "pd_proxy_port", "nixl_buffer_size": "pd_buffer_size", "nixl_role": "pd_role",
            "controller_url": "controller_pull_url", "lmcache_worker_port": "lmcache_worker_ports"}
_PLUGIN_ALIASES = {"plugin_locations": "runtime_plugin_locations", "external_backends": "storage_plugins"}
DEPRECATED_IGNORED = ("nixl_peer_port",)

# The keys kvcalc reads (everything else a release defines is accepted and listed as not changing the CPU pool).
MODELLED = ("chunk_size", "local_cpu", "max_local_cpu_size", "local_disk", "max_local_disk_size", "use_layerwise",
            "local_cpu_use_hugepages", "extra_config", "lookup_server_worker_ids", "enable_controller",
            "lmcache_worker_ids", "enable_lazy_memory_allocator", "lazy_memory_safe_size", "reserve_local_cpu_size",
            "enable_hidden_state_cache", "max_hidden_state_cpu_size", "enable_scheduler_bypass_lookup")
# Keys that change how the CPU pool is allocated or used in ways kvcalc does not model: refused when switched on.
# v1/storage_backend/local_cpu_backend.py initialize_allocator: enable_p2p pages the pool to whole chunks; PD and
# CacheBlend (enable_blending, v1/cache_engine.py _Create_token_database) store other objects in it.
UNMODELLED_SWITCHES = {
    "enable_p2p": "P2P mode pages the pool into whole chunks (PagedCpuGpuMemoryAllocator)",
    "enable_pd": "disaggregated prefill stores transfer buffers, not a prefix cache",
    "enable_blending": "CacheBlend stores segments of its own token database",
}
# extra_config entries that change the allocation (local_cpu_backend.py): refused when set.
UNMODELLED_EXTRA = {
    "enable_nixl_storage": "the NIXL storage pool is sized and aligned differently",
    "shm_name": "the pool is then a named /dev/shm segment",
    "rust_raw_block.device_path": "a raw block device changes the pool's alignment and paging",
}
EXTRA_MODELLED = ("save_only_first_rank", "first_rank_max_local_cpu_size", "local_cpu.pinned_align_bytes")

FLOAT_KEYS = ("max_local_cpu_size", "max_local_disk_size", "lazy_memory_safe_size", "reserve_local_cpu_size",
              "max_hidden_state_cpu_size")
BOOL_KEYS = ("local_cpu", "use_layerwise", "local_cpu_use_hugepages", "enable_controller",
             "enable_lazy_memory_allocator", "enable_p2p", "enable_pd", "enable_blending", "enable_hidden_state_cache",
             "enable_scheduler_bypass_lookup")
INT_LIST_KEYS = ("lookup_server_worker_ids", "lmcache_worker_ids")
DEFAULTS: dict[str, Any] = {  # v1/config.py _CONFIG_DEFINITIONS defaults (the same in every release read)
    "chunk_size": 256, "local_cpu": True, "max_local_cpu_size": 5.0, "local_disk": None, "max_local_disk_size": 0.0,
    "use_layerwise": False, "local_cpu_use_hugepages": False, "extra_config": None, "lookup_server_worker_ids": None,
    "enable_controller": False, "lmcache_worker_ids": None, "enable_lazy_memory_allocator": False,
    "lazy_memory_safe_size": 0.0, "reserve_local_cpu_size": 0.0, "enable_p2p": False, "enable_pd": False,
    "enable_blending": False, "enable_scheduler_bypass_lookup": False,
    # 0.5.1 - 0.5.6 v1/config.py: enable_hidden_state_cache False, max_hidden_state_cpu_size 2.0 ("GB"; pinned as
    # int(x * 1024**3) bytes, v1/hidden_state_store.py:74). Earlier releases define neither key (KEY_HISTORY).
    "enable_hidden_state_cache": False, "max_hidden_state_cpu_size": 2.0,
}
MAX_GIB = float(1 << 32)  # 4 EiB: far beyond any host, far below a float's exact integer range x 2^30
MAX_CHUNK_SIZE = 1 << 20


def _key(version: str) -> tuple:
    return tuple(int(x) if x.isdigit() else x for x in re.split(r"\.|post", version) if x != "")


def env_sourced(label: str) -> bool:
    """A value whose source label names an LMCACHE_* variable: LMCache reads only the variables its release
    defines, so one it does not define is ignored, not refused."""
    return label.startswith("LMCACHE_")


def known(version: str) -> bool:
    return version in LMCACHE_RELEASES


def config_keys(version: str) -> frozenset[str]:
    """The config keys `version` defines (v1/config.py _CONFIG_DEFINITIONS of that release)."""
    keys = set(_KEYS_0_3_10)
    for rel, added, removed in KEY_HISTORY:
        if _key(version) >= _key(rel):
            keys |= set(added)
            keys -= set(removed)
    return frozenset(keys)


def aliases(version: str) -> dict[str, str]:
    """Old name -> current name, as `version`'s _CONFIG_ALIASES maps them."""
    out = dict(_ALIASES)
    if _key(version) >= _key("0.3.10.post1"):
        out.update(_PLUGIN_ALIASES)
    return out


def pinned_align_known(version: str) -> bool:
    """extra_config local_cpu.pinned_align_bytes is read from 0.3.15 (local_cpu_backend.py
    _resolve_local_cpu_allocator_alignment); earlier releases align to AddressManager.ALIGN_BYTES only."""
    return _key(version) >= _key("0.3.15")


# Where an exception raised while LMCache starts goes (v1/manager.py LMCacheManager): from 0.3.14 __init__ (engine
# creation, :94-110 in 0.5.6) and post_init (the StorageManager that allocates the pool, :208-238) catch it, log
# "Failed during post_init: ... System will operate in degraded mode (recompute)." and mark the engine unhealthy,
# so vLLM starts and LMCache stores nothing (v1/cache_engine.py:416 "LMCache is unhealthy, skipping store
# operation"). 0.3.13's manager.py:544 calls engine.post_init bare and 0.3.10 - 0.3.12's adapter
# (integration/vllm/vllm_v1_adapter.py:936 in 0.3.10) calls it itself: the exception leaves register_kv_caches and
# the vLLM worker does not start.
INIT_FAILURE_DEGRADES_FROM = "0.3.14"


def init_failure_degrades(version: str) -> bool:
    """LMCache `version` catches a failure of its start-up and runs degraded (stores nothing) instead of stopping
    vLLM's worker (INIT_FAILURE_DEGRADES_FROM)."""
    return _key(version) >= _key(INIT_FAILURE_DEGRADES_FROM)


def lazy_allocator_active(version: str) -> bool:
    """0.3.10 - 0.3.12 local_cpu_backend.py returns a LazyMixedMemoryAllocator (pins part of the pool, grows at run
    time) when enable_lazy_memory_allocator and cpu_size > lazy_memory_safe_size; from 0.3.13 it logs "temporarily
    unavailable" and allocates the whole pool."""
    return _key(version) < _key("0.3.13")


# ---------------------------------------------------------------------------------------------------------
# LMCache's converters, strict. Each returns the value or raises ValueError(what to write instead).

_NUMBER = r"^\s*[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?\s*$"


def to_gib(value: Any) -> float:
    """A size in GiB as LMCache reads it: float(x), later int(x * 1024**3) bytes (local_cpu_backend.py)."""
    if isinstance(value, bool):
        raise ValueError("a number of GiB")
    if isinstance(value, (int, float)):
        f = float(value)
    elif isinstance(value, str) and re.match(_NUMBER, value):
        f = float(value)
    elif isinstance(value, str) and re.match(r"^\s*[\d.]+\s*[A-Za-z]+\s*$", value):
        raise ValueError("a plain number of GiB: LMCache multiplies it by 1024**3 (5 means 5 GiB = 5,368,709,120 "
                         "B) and cannot read a unit")
    else:
        raise ValueError("a number of GiB")
    if not math.isfinite(f) or f < 0 or f > MAX_GIB:
        raise ValueError(f"a number of GiB between 0 and {MAX_GIB:.0f}")
    return f


def to_int(value: Any, *, minimum: int = 1, maximum: int = MAX_CHUNK_SIZE) -> int:
    if isinstance(value, bool):
        raise ValueError("an integer")
    if isinstance(value, str) and re.match(r"^\s*[+-]?\d{1,20}\s*$", value):
        value = int(value)
    if not isinstance(value, int) or not minimum <= value <= maximum:
        raise ValueError(f"an integer between {minimum} and {maximum}")
    return value


def to_bool(value: Any) -> bool:
    """v1/config_base.py _to_bool: a bool stays; anything else is true only as "true" or "1" (case-insensitive)."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1"):
        return True
    if text in ("false", "0"):
        return False
    raise ValueError("true or false: LMCache reads only 'true' and '1' as true, so this would be false")


def to_int_list(value: Any) -> tuple[int, ...]:
    """v1/config_base.py _to_int_list: a list, one int, or a comma-separated string."""
    if isinstance(value, bool):
        raise ValueError("a list of worker ids")
    if isinstance(value, int):
        items: list = [value]
    elif isinstance(value, list):
        items = value
    elif isinstance(value, str):
        items = [p.strip() for p in value.split(",") if p.strip()]
    else:
        raise ValueError("a list of worker ids")
    if len(items) > 4096:
        raise ValueError("at most 4096 worker ids")
    return tuple(to_int(v, minimum=0, maximum=1 << 20) for v in items)


def to_local_disk(value: Any) -> str | None:
    """v1/config_base.py _parse_local_disk: comma-separated paths, each optionally file://-prefixed."""
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > 4096:
        raise ValueError("a directory path (or comma-separated paths)")
    parts = [p.strip() for p in value.split(",") if p.strip()]
    return ",".join(p[7:] if p.startswith("file://") else p for p in parts) or None


def to_extra(value: Any) -> dict | None:
    """extra_config: a mapping (a JSON object string from the environment)."""
    import json

    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else None
        except json.JSONDecodeError:
            raise ValueError("a JSON object") from None
        if value is None:
            return None
    if not isinstance(value, dict):
        raise ValueError("a mapping")
    return value


# ---------------------------------------------------------------------------------------------------------
# The offload.lmcache section, read (inputs/layout/lmcache.py): here, not in vocab/layout.py, so a vLLM layout
# defines no LMCache record (start-up time is a target).

@record
class LMCacheLayout:
    """The LMCache config the connector reads, after LMCache's own precedence (file < LMCACHE_* environment <
    vLLM's kv_connector_extra_config "lmcache.*"), values as LMCache converts them (vocab/releases/lmcache.py)."""

    version: str = DEFAULT_LMCACHE_VERSION
    chunk_size: int = 256
    local_cpu: bool = True
    max_local_cpu_size: float = 5.0  # GiB per rank: LMCache pins int(x * 1024**3) bytes
    save_only_first_rank: bool | None = None  # extra_config; None: LMCache's default (the model uses MLA)
    first_rank_max_local_cpu_size: float | None = None  # extra_config; None: max_local_cpu_size
    pinned_align_bytes: int | None = None  # extra_config local_cpu.pinned_align_bytes; None: 4096
    local_disk: str | None = None
    max_local_disk_size: float = 0.0
    use_layerwise: bool = False
    local_cpu_use_hugepages: bool = False
    lookup_server_worker_ids: tuple[int, ...] | None = None
    enable_controller: bool = False
    lmcache_worker_ids: tuple[int, ...] | None = None
    lazy_allocator: bool = False  # 0.3.10-0.3.12 would use the lazy allocator (refused at planning)
    reserve_local_cpu_size: float = 0.0  # GiB LMCache leaves free when it caps a save_only_first_rank pool
    # 0.5.1+: a hidden-state pool of int(max_hidden_state_cpu_size * 1024**3) bytes pinned by every LMCacheEngine
    enable_hidden_state_cache: bool = False
    max_hidden_state_cpu_size: float = 2.0
    enable_scheduler_bypass_lookup: bool = False  # the scheduler process builds an LMCacheEngine too
    # Set through vLLM's --kv-offloading-backend lmcache: vLLM builds the connector config from
    # --kv-offloading-size (GiB for the whole engine) as the selected release does (lmcache.py).
    via_vllm_flag: bool = False
    kv_offloading_size: float | None = None
    ignored: tuple[str, ...] = ()  # LMCache keys given that do not change the CPU pool
    notes: tuple[str, ...] = ()  # what validation set aside (the native connector's keys a flag made unused)
    provenance: tuple[tuple[str, str], ...] = ()  # (LMCache key, where its value came from)


def lmcache_of(layout: Layout) -> LMCacheLayout:
    """The layout's offload.lmcache section, for LMCache's own modules: a layout of backend lmcache has one."""
    lm = layout.offload.lmcache
    if lm is None:
        raise InternalError(f"{layout.source}: an LMCache stage was given offload.backend {layout.offload.backend}")
    return lm
