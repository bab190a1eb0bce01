"""The `offload.lmcache_mp` section: the LMCache MP server's settings, one key per option of its parser under the
option's argparse name (`l1_size_gb` for --l1-size-gb; every option of vocab/releases/lmcache_mp_flags.py), each
value checked as the parser types it; and offload.backend lmcache_mp (LMCacheMPConnector named) around it. vLLM's
--kv-offloading-backend lmcache brings the section through the lmcache reader (inputs/layout/lmcache.py)."""

from __future__ import annotations

import math
from typing import Any

from ...vocab.layout import OffloadLayout
from ...vocab.releases import lmcache_mp as mp
from ...vocab.releases.lmcache_mp_flags import FLAGS
from ..values import Reader

SECTION = "offload.lmcache_mp"
_ROWS = {row[1]: row for row in FLAGS if row[2] != "help"}
_NATIVE_ONLY = ("cpu_bytes_to_use", "block_size", "blocks_per_chunk", "kv_offloading_size")


def _value(r: Reader, row: tuple, value: Any, path: str) -> Any:
    """One option's value as its parser would hold it (argparse's type(), choices, lists for nargs * / append)."""
    _, dest, kind, typ, _, choices, _ = row
    flag = f"--{dest.replace('_', '-')}"
    if kind in ("bool_optional", "store_true"):
        if not isinstance(value, bool):
            raise r.fail(path, f"true or false (the server's {flag} switch)", value)
        return value
    if kind in ("star", "append"):
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            how = "repeated" if kind == "append" else "nargs *"
            raise r.fail(path, f"a list of strings (the server's {flag}, {how})", value)
        return tuple(value)
    if typ == "int" and (isinstance(value, bool) or not isinstance(value, int)):
        raise r.fail(path, f"an integer (the server's {flag} is type=int)", value)
    if typ == "float" and (isinstance(value, bool) or not isinstance(value, (int, float))):
        raise r.fail(path, f"a number (the server's {flag} is type=float)", value)
    if typ == "str" and not isinstance(value, str):
        raise r.fail(path, f"a string (the server's {flag})", value)
    if choices is not None and value not in choices:
        raise r.fail(path, f"one of {', '.join(choices)} (the server's {flag})", value)
    return float(value) if typ == "float" else value


def server_of(r: Reader, data: Any) -> mp.MPServer | None:
    """offload.lmcache_mp -> MPServer (None when the section is absent; an empty one is a server started without
    options)."""
    if data is None:
        return None
    if not isinstance(data, dict):
        raise r.fail(SECTION, "a mapping of the LMCache server's options (their argparse names: l1_size_gb, ...)",
                     type(data).__name__)
    modelled: dict[str, Any] = {}
    others, given = [], []
    for key, value in data.items():
        path = f"{SECTION}.{key}" if isinstance(key, str) and key.isidentifier() and len(key) <= 60 else SECTION
        row = _ROWS.get(key) if isinstance(key, str) else None
        if row is None:
            raise r.fail(path, "an option of LMCache 0.5.6's server (its flag's name with underscores: l1_size_gb, "
                               "eviction_policy, chunk_size, ...)", key if path == SECTION else None,
                         detail="unknown key")
        if value is None:
            continue
        value = _value(r, row, value, path)
        given.append((key, r.flags.get(path) or r.flags.get(SECTION, "layout file")))
        if key in mp.MODELLED:
            modelled[key] = value
        else:
            others.append((key, value))
    if isinstance(modelled.get("l1_size_gb"), float) and math.isfinite(modelled["l1_size_gb"]) \
            and abs(modelled["l1_size_gb"]) > 1 << 40:
        raise r.fail(f"{SECTION}.l1_size_gb", "a size a host can hold (at most 2^40 GiB)", modelled["l1_size_gb"])
    return mp.MPServer(**modelled, others=tuple(others), given=tuple(given))


def connector_layout(r: Reader, o: dict, *, selected_by: str, notes: tuple[str, ...]) -> OffloadLayout:
    """offload.backend lmcache_mp: LMCacheMPConnector named (--kv-transfer-config, --offload-backend lmcache_mp), with
    the server's section; the native connector's and in-process LMCache's keys are refused (or, when a flag switched
    the backend, dropped with a note)."""
    dropped = []
    for key in _NATIVE_ONLY:
        if o.get(key) is None:
            continue
        if "offload.backend" in r.flags and f"offload.{key}" not in r.flags:
            dropped.append(f"offload.{key} {o[key]!r} is another connector's: not used with "
                           f"{r.flags['offload.backend']}")
            continue
        how = ("vLLM's flag selects LMCacheMPConnector through --kv-offloading-backend lmcache (offload.backend "
               "lmcache)" if key == "kv_offloading_size" else "the LMCache server's --l1-size-gb sizes the pool")
        raise r.fail(f"offload.{key}", f"no value with offload.backend lmcache_mp ({how})", o[key])
    if o.get("lmcache") is not None:
        raise r.fail("offload.lmcache", "no in-process LMCache config with offload.backend lmcache_mp (the server's "
                                        "settings go under offload.lmcache_mp)")
    how = r.flags.get("offload.backend", "offload.backend lmcache_mp")
    layout = mp.MPLayout(server=server_of(r, o.get("lmcache_mp")), selected_by=how, notes=tuple(dropped))
    return OffloadLayout(cpu_bytes_to_use=None, cpu_bytes_source="not given (the LMCache server sizes its own pool)",
                         backend="lmcache_mp", lmcache_mp=layout, notes=notes)
