"""vLLM's native offloading connector (OffloadingConnector: --kv-offloading-size,
kv_connector_extra_config.cpu_bytes_to_use) as an offload backend: the hybrid manager it allows, its pool
(native_pool.py), how its config spells a budget, and the budget that holds a target (native_sizing.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from ..engines.vllm.stage import GpuStage, hma_model_veto
from ..vocab.layout import Layout, OffloadLayout
from ..vocab.records import replace
from ..vocab.releases.vllm import Behaviour, decide_hma
from .base import SizeTarget
from .native_pool import NativePool, plan_offload, settings_for

if TYPE_CHECKING:
    from .native_sizing import NativeSizes


class NativeBackend:
    """vLLM's OffloadingConnector (--kv-offloading-size, kv_connector_extra_config.cpu_bytes_to_use)."""

    name = "native"
    title = "native"
    no_offload_info = None  # it publishes vllm:kv_offload_config_info (0.33+)

    def hma(self, layout: Layout, behaviour: Behaviour) -> tuple[bool, str]:
        return decide_hma(behaviour, layout.cache.hybrid_kv_cache_manager, wants_off_reason=hma_model_veto(layout.model))

    def estimate(self, layout: Layout, stage: GpuStage, *, selected_only: bool = False) -> NativePool:
        """The selected release's family, and (unless `selected_only`: a sweep row shows no other column) the old
        and fixed columns beside it."""
        behaviour = stage.behaviour
        budget = layout.offload.cpu_bytes_to_use
        families = (behaviour.formula,) if selected_only else ("old", "fixed", behaviour.formula)
        off = plan_offload(stage.gpu, settings_for(layout, budget or 0), behaviour, hma_enabled=stage.hma_enabled,
                           families=families, budget_given=budget is not None)
        return NativePool(offload=off, budget_bytes=budget, hma_enabled=stage.hma_enabled)

    def with_budget(self, layout: Layout, budget_bytes: int, source: str) -> Layout:
        return replace(layout, offload=OffloadLayout(cpu_bytes_to_use=budget_bytes,
                                                     cpu_bytes_source=f"{source}'s pool per engine"))

    def size(self, layout: Layout, target: SizeTarget, plan: Callable) -> NativeSizes:
        from .native_sizing import size_native  # only `kvcalc size` reads it (start-up time is a target)

        return size_native(layout, target, plan)


BACKEND = NativeBackend()
