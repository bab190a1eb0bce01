"""vLLM's SimpleCPUOffloadConnector as the offload backend (offload.backend simple; a serve line that names it; or
--kv-offloading-size with VLLM_USE_SIMPLE_KV_OFFLOAD=1): its pool as every consumer reads it (`SimplePool`), how vLLM
runs the hybrid manager with it, how a budget is spelled for it, and the budget that holds a target. The pool is
computed in simple_plan.py by the release's rules (vocab/releases/simple.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from ..engines.vllm import GpuStage
from ..vocab.layout import Layout, OffloadLayout
from ..vocab.records import record, replace
from ..vocab.releases.simple import SimpleLayout, simple_budget
from ..vocab.releases.vllm import Behaviour
from ..vocab.units import exact_bytes
from .base import HostMemory, OutOfBounds, Pool, SizeTarget, node_peak
from .hma import supports_hma
from .simple_plan import SimplePlan, plan_simple

if TYPE_CHECKING:
    from .simple_sizing import SimpleSize


@record
class SimplePool(Pool):
    """SimpleCPUOffloadConnector's pool of one engine, as every consumer reads it."""

    simple: SimplePlan
    layout: Layout
    hash_block_size: int  # tokens per CPU block: the GPU block (the connector offloads whole GPU blocks)

    backend = "simple"
    connector = "SimpleCPUOffloadConnector"
    family = "simple"
    not_modelled = None
    unit = "blocks"
    tokens_holder = "every rank holds"
    splits_scheduler = True
    shm_bytes_per_engine = 0
    shm_bytes_per_node = 0
    shm_none = "the workers pin private tensors with cudaHostRegister"
    capacity = None  # vLLM's vllm:kv_offload_config_info is OffloadingConnector's

    @property
    def startup_error(self) -> str | None:
        return self.simple.startup_error

    @property
    def budget_bytes(self) -> int:
        return simple_budget(self.layout)

    @property
    def units_scheduler(self) -> int:
        return self.simple.num_cpu_blocks_scheduler

    @property
    def units_worst(self) -> int:
        return min((st.num_cpu_blocks for st in self.simple.stages), default=0)

    @property
    def unit_bytes(self) -> int:
        return max(self.simple.bytes_per_block, self.simple.scheduler_bytes_per_block)

    @property
    def tokens_per_unit(self) -> int:
        return self.hash_block_size

    @property
    def tokens(self) -> int:
        return self.simple.tokens or 0

    @property
    def out_of_bounds(self) -> OutOfBounds | None:
        return self.simple.out_of_bounds

    @property
    def empty(self) -> bool:
        return not self.simple.enabled or self.units_worst == 0

    @property
    def stored(self) -> str:
        return f"{self.simple.num_cpu_blocks_per_rank:,} CPU blocks on every rank"

    @property
    def nothing(self) -> str:
        return "0 CPU blocks" + ("" if self.simple.enabled else " (the connector disables itself: prefix caching is "
                                                                 "off)")

    @property
    def pool_bytes_per_engine(self) -> int:
        return self.simple.resident_bytes_per_engine

    @property
    def resident_bytes_per_engine(self) -> int:
        return self.simple.resident_bytes_per_engine

    @property
    def resident_bytes_per_node(self) -> int:
        par = self.layout.parallel
        per_rank = [self.simple.stages[r // par.tensor_parallel_size].resident_bytes_per_worker
                    for r in range(par.workers_per_engine)] if self.simple.stages else [0]
        return node_peak(per_rank, par.nodes_per_engine, par.engines_per_node)

    @property
    def unused_bytes(self) -> int:
        return self.budget_bytes - self.pool_bytes_per_engine if self.simple.mode == "cpu" else 0

    @property
    def kept(self) -> str:
        how = "disk staging buffers" if self.simple.mode == "disk" else "CPU blocks"
        return f"pinned with cudaHostRegister ({how}; no power-of-two rounding)"

    @property
    def host(self) -> HostMemory:
        """The host memory, as the other backends' offload.host: private tensors, no rounding, no /dev/shm."""
        sp = self.simple
        return HostMemory(
            requested_bytes_per_engine=self.budget_bytes,
            resident_bytes_per_worker=tuple(st.resident_bytes_per_worker for st in sp.stages),
            resident_bytes_per_engine=sp.resident_bytes_per_engine,
            resident_bytes_per_node=self.resident_bytes_per_node,
            shm_bytes_per_engine=0, shm_bytes_per_node=0, host_page_size=self.layout.host.page_size,
            pinned_rounding="none", allocations_per_worker=sp.allocations, shared_region=False)

    @property
    def notes(self) -> tuple[str, ...]:
        return self.simple.notes

    @property
    def warnings(self) -> tuple[str, ...]:
        sp, ids = self.simple, self.simple.out_of_bounds
        oob = () if ids is None else (
            f"vLLM {sp.vllm_version}: SimpleCPUOffloadConnector's scheduler can hand out CPU block ids "
            f"{ids.first:,}..{ids.last:,} that PP stage {ids.pp_rank}'s workers never allocated: out-of-bounds "
            "stores (0.33.0 takes the MIN over workers)",)
        return sp.warnings + oob

    @property
    def verdict(self) -> str:
        return simple_verdict(self)

    def vllm_args(self, layout: Layout, common: list[str], notes: list[str]) -> dict:
        from .simple_sizing import simple_args  # only vllm-args spells a config

        return simple_args(self, layout, common, notes)


def simple_verdict(pool: SimplePool) -> str:
    sp = pool.simple
    v = sp.vllm_version
    if sp.startup_error:
        return f"Verdict: vLLM {v} would not start SimpleCPUOffloadConnector with this layout."
    if not sp.enabled:
        return (f"Verdict: vLLM {v} configures SimpleCPUOffloadConnector but disables it (prefix caching is off): "
                "nothing is offloaded.")
    where = f"{exact_bytes(sp.disk_bytes_per_rank)} of disk per rank" if sp.mode == "disk" else \
        f"{exact_bytes(sp.resident_bytes_per_engine)} pinned per engine"
    ids = sp.out_of_bounds
    if ids is not None:
        return (f"Verdict: UNSAFE on vLLM {v}. SimpleCPUOffloadConnector's scheduler counts "
                f"{sp.num_cpu_blocks_scheduler:,} CPU blocks but PP stage {ids.pp_rank}'s workers allocated "
                f"{ids.first:,}: once more than that many are offloaded, stores land out of bounds (crashes or "
                "corrupted KV). vLLM 0.33.0 takes the MIN over workers.")
    return (f"Verdict: safe on vLLM {v}: SimpleCPUOffloadConnector holds {sp.num_cpu_blocks_per_rank:,} CPU blocks "
            f"on every rank ({sp.tokens or 0:,} tokens), {where}.")


class SimpleBackend:
    """vLLM's SimpleCPUOffloadConnector (0.19.0+): per-rank CPU (or disk, 0.28.0+) blocks mirroring the GPU's."""

    name = "simple"
    title = "simple"
    no_offload_info = "SimpleCPUOffloadConnector publishes its own metrics"

    def hma(self, layout: Layout, behaviour: Behaviour) -> tuple[bool, str]:
        return supports_hma(layout, behaviour, "SimpleCPUOffloadConnector")

    def estimate(self, layout: Layout, stage: GpuStage, *, selected_only: bool = False) -> SimplePool:
        return SimplePool(simple=plan_simple(layout, stage), layout=layout, hash_block_size=stage.gpu.hash_block_size)

    def with_budget(self, layout: Layout, budget_bytes: int, source: str) -> Layout:
        simple = SimpleLayout(selected_by=f"--compare-backends ({source}'s budget)")
        return replace(layout, offload=OffloadLayout(cpu_bytes_to_use=budget_bytes, backend="simple", simple=simple,
                                                     cpu_bytes_source=f"{source}'s pool per engine"))

    def size(self, layout: Layout, target: SizeTarget, plan: Callable) -> SimpleSize:
        from .simple_sizing import size_simple  # only `kvcalc size` reads it (start-up time is a target)

        return size_simple(layout, target, plan)

BACKEND = SimpleBackend()
