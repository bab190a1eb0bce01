"""The offload section when vLLM starts SimpleCPUOffloadConnector: `offload.backend: simple`, or the native backend's
`kv_offloading_size` with `use_simple_kv_offload` (VLLM_USE_SIMPLE_KV_OFFLOAD=1) on a release that reads it. The
connector's own keys are `offload.simple.*`, under vLLM's kv_connector_extra_config names; the budget is the
engine's `cpu_bytes_to_use` (or `kv_offloading_size`, GiB as vLLM converts it), 8 GiB when absent as in the
connector. Release-dependent refusals are the backend's (backends/simple.py)."""

from __future__ import annotations

import math
from typing import Any

from ...vocab.keys import KEY
from ...vocab.layout import OffloadLayout
from ...vocab.releases.simple import DEFAULT_CPU_BYTES, FIRST, SimpleLayout
from ...vocab.releases.vllm import behaviour_for
from ...vocab.units import gib_float_to_bytes
from ..values import Reader

_NATIVE_ONLY = {
    "block_size": "the native connector's offloaded block size: SimpleCPUOffloadConnector offloads whole GPU blocks",
    "blocks_per_chunk": "the native connector's chunking: SimpleCPUOffloadConnector offloads whole GPU blocks",
}


def simple_offload(r: Reader, o: dict, *, selected_by: str) -> OffloadLayout:
    """offload.* for SimpleCPUOffloadConnector -> OffloadLayout(backend="simple")."""
    dropped: list[str] = []
    for key, why in _NATIVE_ONLY.items():
        if o.get(key) is None:
            continue
        if "offload.backend" in r.flags and f"offload.{key}" not in r.flags:
            # The layout is the native connector's and a flag switched the backend: its key stays unused.
            dropped.append(f"offload.{key} {o[key]!r} is the native connector's: not used with "
                           f"{r.flags['offload.backend']}")
            continue
        raise r.fail(f"offload.{key}", f"no value with SimpleCPUOffloadConnector ({why})", o[key])
    if o.get("lmcache") is not None:
        raise r.fail("offload.lmcache", "no lmcache section with SimpleCPUOffloadConnector (offload.backend simple)")
    cpu, source, default, written = _budget(r, o)
    s = r.section(o.get("simple"), "offload.simple")
    read = {leaf: r.key(s, f"offload.simple.{leaf}") for leaf in ("num_cpu_blocks", "kv_offload_backend",
                                                                   "disk_buffer_slots", "use_page_cache",
                                                                   "lazy_offload")}
    per_rank = None if s.get("cpu_bytes_to_use_per_rank") is None else \
        r.size(s["cpu_bytes_to_use_per_rank"], "offload.simple.cpu_bytes_to_use_per_rank")
    disk = KEY["offload.simple.disk_capacity_bytes"].default if s.get("disk_capacity_bytes") is None else \
        r.size(s["disk_capacity_bytes"], "offload.simple.disk_capacity_bytes")
    path = None if s.get("disk_path") is None else r.str_(s["disk_path"], "offload.simple.disk_path")
    layout = SimpleLayout(cpu_bytes_to_use_per_rank=per_rank, disk_capacity_bytes=disk, disk_path=path,
                          given=tuple(k for k in s if s[k] is not None), selected_by=selected_by,
                          budget_default=default, **read)
    return OffloadLayout(backend="simple", cpu_bytes_to_use=cpu, cpu_bytes_source=source, cpu_bytes_written=written,
                         simple=layout, notes=tuple(dropped))


def _budget(r: Reader, o: dict) -> tuple[int, str, bool, str | None]:
    """(cpu_bytes_to_use for the engine, what it was given as, whether it is the connector's default, the size as
    written when given in bytes: the note on a decimal unit reads it)."""
    has_bytes, has_gib = o.get("cpu_bytes_to_use") is not None, o.get("kv_offloading_size") is not None
    if has_bytes and has_gib:
        raise r.fail("offload.kv_offloading_size", "either cpu_bytes_to_use or kv_offloading_size, not both")
    if has_gib:
        gib = o["kv_offloading_size"]
        key = KEY["offload.kv_offloading_size"]
        if isinstance(gib, bool) or not isinstance(gib, (int, float)) or not math.isfinite(gib) or gib < key.minimum \
                or (key.cap is not None and gib > key.cap):
            raise r.fail("offload.kv_offloading_size", "a non-negative number of GiB (vLLM's --kv-offloading-size)",
                         gib)
        # config/vllm.py _post_init_kv_transfer_config: cpu_bytes_to_use = kv_offloading_size * (1 << 30); the
        # connector takes int() of it (simple_cpu_offload_connector.py, 0.19.0:62).
        where = "--kv-offloading-size" if r.flags.get("offload.kv_offloading_size") else "offload.kv_offloading_size"
        return gib_float_to_bytes(float(gib)), f"{where} {gib} (GiB)", False, None
    if has_bytes:
        raw: Any = o["cpu_bytes_to_use"]
        flag = r.flags.get("offload.cpu_bytes_to_use")
        return r.size(raw, "offload.cpu_bytes_to_use"), f"{raw} ({flag})" if flag else str(raw), False, str(raw)
    return DEFAULT_CPU_BYTES, "SimpleCPUOffloadConnector's default (8 GiB)", True, None


def simple_env(r: Reader, o: dict, which: str, version: str, how: str) -> tuple[str, tuple[str, ...], str]:
    """VLLM_USE_SIMPLE_KV_OFFLOAD=1: config/vllm.py _post_init_kv_transfer_config (0.19.0:660, 0.33.0:1168) names
    SimpleCPUOffloadConnector instead of OffloadingConnector when --kv-offloading-size is set and the offloading
    backend is native; the variable changes nothing else. (backend, notes, how the connector was chosen)."""
    where = r.flags.get("offload.use_simple_kv_offload") or "offload.use_simple_kv_offload"
    if which == "simple":
        return which, (), how
    if which != "native" or o.get("kv_offloading_size") is None:
        what = "LMCache's connector" if which == "lmcache" else "the connector cpu_bytes_to_use configures"
        return which, (f"{where}: vLLM reads it only for --kv-offloading-size with the native offloading backend; "
                       f"{what} is unchanged",), how
    if behaviour_for(version).release < FIRST:
        return which, (f"{where}: vLLM {version} does not read it (SimpleCPUOffloadConnector is from 0.19.0): "
                       "--kv-offloading-size starts OffloadingConnector",), how
    return "simple", (), f"{where} with --kv-offloading-size (config/vllm.py _post_init_kv_transfer_config)"


def connector_layout(r: Reader, o: dict, *, selected_by: str, notes: tuple[str, ...]) -> OffloadLayout:
    """The connector reader's interface (inputs/layout/validate.CONNECTOR_LAYOUTS)."""
    return simple_offload(r, o, selected_by=selected_by)
