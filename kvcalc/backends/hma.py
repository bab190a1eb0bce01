"""The hybrid KV cache manager beside a connector that implements SupportsHMA (SimpleCPUOffloadConnector from vLLM
0.19.0, simple_cpu_offload_connector.py:45; LMCache 0.5.6's LMCacheMPConnector, integration/vllm/
lmcache_mp_connector.py:535): forcing the manager on is allowed; by default vLLM turns it off whenever a connector is
set before 0.22.0 and keeps it on for a SupportsHMA connector from 0.22.0 (config/vllm.py,
STEPS['hma_default_with_connector'])."""

from __future__ import annotations

from ..engines.vllm import hma_model_veto
from ..vocab.errors import StartupRefusal
from ..vocab.layout import Layout
from ..vocab.releases.vllm import Behaviour


def supports_hma(layout: Layout, behaviour: Behaviour, connector: str) -> tuple[bool, str]:
    """(the manager on, why) with `connector`, a SupportsHMA connector."""
    preference, veto = layout.cache.hybrid_kv_cache_manager, hma_model_veto(layout.model)
    if preference == "off":
        return False, "disabled by the user (--disable-hybrid-kv-cache-manager)"
    if preference == "on":
        if veto:
            raise StartupRefusal(f"vLLM {behaviour.version} refuses to start: HMA forced on but {veto}")
        return True, "forced on by the user (--no-disable-hybrid-kv-cache-manager; the connector supports it)"
    if veto:
        return False, veto
    if behaviour.hma_default_with_connector:
        return True, f"on: {connector} supports the hybrid manager (0.22.0+)"
    return False, "off: vLLM disables the hybrid manager whenever a KV connector is set (before 0.22.0)"
