"""Which offload.lmcache section counts, read before the backend's own reader (and before LMCache's tables are
imported: a vLLM layout without LMCache loads none of them; start-up time is a target)."""

from __future__ import annotations

from typing import Any

from ..values import Reader


def counted_section(r: Reader, o: dict, which: str, connector_keys: tuple[str, ...]) -> tuple[str, Any]:
    """(the backend, the lmcache section that counts): LMCACHE_* variables in a manifest's environment make no
    connector LMCache's (and configure none); no budget, no connector named and no LMCache key is vLLM without a
    KV connector (backends/none.py)."""
    section = o.get("lmcache")
    if isinstance(section, dict) and which != "lmcache":
        from ...vocab.releases.lmcache import env_sourced  # LMCache's tables, only when a section is there

        if all(env_sourced(r.flags.get(f"offload.lmcache.{k}", "")) for k in section):
            section = None
    if "backend" not in o and section is None and not any(o.get(k) is not None for k in connector_keys):
        which = "none"
    return which, section
