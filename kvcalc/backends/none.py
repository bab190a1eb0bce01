"""No KV connector (offload.backend none): what vLLM runs when the command line configures no offloading — no CPU
budget, no --kv-transfer-config, no LMCache key. There is no CPU tier; the only thing the missing connector changes
on the GPU side is the hybrid KV cache manager, which vLLM then turns on wherever the platform supports it.

vLLM config/vllm.py (`VllmConfig.__post_init__`, the "Hybrid KV cache manager (HMA) runtime rules": lines 948-1010
@0.14.0, 1190-1258 @0.19.0, 1612-1680 @0.27.0, 2230-2300 @0.33.0, the same rules in every release read):
`need_disable_hybrid_kv_cache_manager` is set only by (a) a platform without `support_hybrid_kv_cache()` (CUDA,
ROCm and XPU all return True, platforms/*.py), (b) `kv_events_config`, (c) chunked-local attention with an EAGLE
drafter, (d) chunked-local attention with VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=0 (envs.py: default
"1", every release), or (e) a `kv_transfer_config` (the connector: backends/native.py, backends/lmcache.py). With
no user preference the manager is on otherwise; forced on (`--no-disable-hybrid-kv-cache-manager`) where a rule
disables it, vLLM raises the ValueError quoted in `hma` below.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from ..engines.vllm import hma_model_veto
from ..vocab.errors import KvcalcError, StartupRefusal
from ..vocab.records import record, replace
from .base import Pool, SizeTarget

if TYPE_CHECKING:
    from ..engines.vllm import GpuStage
    from ..vocab.layout import Layout
    from ..vocab.releases.vllm import Behaviour

REASON = ("no KV connector: no CPU budget (--cpu-bytes, --kv-offloading-size, offload.cpu_bytes_to_use), no "
          "--kv-transfer-config and no LMCache key, so vLLM runs without offloading")

# vLLM config/vllm.py:1246-1254 @0.19.0 (the same text 0.14.0 - 0.33.0).
FORCED_ON_REFUSAL = ("Hybrid KV cache manager was explicitly enabled but is not supported in this configuration. "
                     "Consider omitting the --no-disable-hybrid-kv-cache-manager flag to let vLLM decide "
                     "automatically.")


@record
class NoPool(Pool):
    """No CPU tier: every figure is null and nothing can go out of bounds."""

    behaviour: Behaviour

    backend = "none"
    connector = "no KV connector"
    family = "none"
    startup_error = None
    not_modelled = None
    budget_bytes = None
    unit = "blocks"
    units_scheduler = None
    units_worst = None
    unit_bytes = None
    tokens_per_unit = None
    tokens = None
    tokens_holder = "no CPU tier holds"
    splits_scheduler = False
    out_of_bounds = None
    empty = True
    stored = "no CPU tier"
    nothing = "no CPU tier"
    pool_bytes_per_engine = None
    resident_bytes_per_engine = None
    resident_bytes_per_node = None
    shm_bytes_per_engine = 0
    shm_bytes_per_node = 0
    unused_bytes = None
    kept = "no CPU tier"
    shm_none = "no CPU tier"
    capacity = None
    warnings = ()
    notes = (REASON,)

    @property
    def verdict(self) -> str:
        return (f"Verdict: vLLM {self.behaviour.version} without a KV connector: the KV cache lives on the GPU only. "
                "Give a CPU budget (--cpu-bytes, --kv-offloading-size) to plan vLLM's offloading connector, or "
                "`kvcalc size --cpu-tokens N` for the budget a token target needs.")

    def vllm_args(self, layout: Layout, common: list[str], notes: list[str]) -> dict:
        raise KvcalcError(f"{layout.source}: vllm-args spells the CPU budget: give --cpu-bytes or --kv-offloading-size "
                          "(or offload.cpu_bytes_to_use)")


class NoConnector:
    """vLLM without a KV connector."""

    name = "none"
    title = "no connector"
    no_offload_info = "no KV connector: vLLM publishes no vllm:kv_offload_config_info"

    def hma(self, layout: Layout, behaviour: Behaviour) -> tuple[bool, str]:
        veto = hma_model_veto(layout.model)
        preference = layout.cache.hybrid_kv_cache_manager
        if preference == "off":
            return False, "disabled by the user (--disable-hybrid-kv-cache-manager)"
        if preference == "on":
            if veto:
                raise StartupRefusal(f"vLLM {behaviour.version} refuses to start: {FORCED_ON_REFUSAL} ({veto})")
            return True, "forced on by the user (--no-disable-hybrid-kv-cache-manager)"
        if veto:
            return False, veto
        return True, "on: no KV connector (vLLM turns it off only for a connector, KV events or chunked-local + EAGLE)"

    def estimate(self, layout: Layout, stage: GpuStage, *, selected_only: bool = False) -> NoPool:
        return NoPool(behaviour=stage.behaviour)

    def with_budget(self, layout: Layout, budget_bytes: int, source: str) -> Layout:
        from .base import backend

        return backend("native").with_budget(layout, budget_bytes, source)

    def size(self, layout: Layout, target: SizeTarget, plan: Callable):
        """`kvcalc size` answers for vLLM's own offloading connector (the native backend) on this layout."""
        from .base import backend

        native = replace(layout, offload=replace(layout.offload, backend="native"))
        return backend("native").size(native, target, plan)


BACKEND = NoConnector()
