"""Whether an offload.lmcache section counts, read before the backend's own reader (and before LMCache's tables are
imported: a vLLM layout without LMCache loads none of them; start-up time is a target)."""

from __future__ import annotations

from ..values import Reader


def counted_section(r: Reader, section: dict, which: str) -> dict | None:
    """The lmcache section, or None when it does not count: LMCACHE_* variables in a manifest's environment make no
    connector LMCache's (and configure none)."""
    if which != "lmcache":
        from ...vocab.releases.lmcache import env_sourced  # LMCache's tables, only when a section is there

        if all(env_sourced(r.flags.get(f"offload.lmcache.{k}", "")) for k in section):
            return None
    return section
