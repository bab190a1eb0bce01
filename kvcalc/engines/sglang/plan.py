"""SGLang's plan (the pipeline stage of the SGLang engine): its pools, budget and tokens (engines/sglang), then its
HiCache host pool (backends/hicache) = SglangPlan, read by the gates, sweep and --compare-engines through the same
Pool interface as a vLLM plan. Imported only for SGLang plans."""

from __future__ import annotations

from ...backends.hicache import HiCachePool, hicache_pool
from ...vocab.errors import StartupRefusal
from ...vocab.layout import Layout
from ...vocab.records import record
from ...vocab.releases.sglang import SglangBehaviour, behaviour_for, sglang_of
from . import SglangStage, build_stage


@record
class SglangLogs:
    kv_cache_size_tokens: int


@record
class SglangPlan:
    """One SGLang engine on one release: its GPU stage and its HiCache host pool."""

    layout: Layout
    behaviour: SglangBehaviour  # the release (version, shm flags for the gates)
    stage: SglangStage
    pool: HiCachePool
    notes: tuple[str, ...]
    base_warnings: tuple[str, ...]
    engine = "sglang"

    @property
    def warnings(self) -> tuple[str, ...]:
        return self.base_warnings + self.pool.warnings

    @property
    def logs(self) -> SglangLogs:
        """What SGLang logs (the GPU tokens as kv_cache_size_tokens, for the cpu_smaller_than_gpu gate)."""
        return SglangLogs(kv_cache_size_tokens=self.stage.gpu.max_total_num_tokens)

    title = "SGLang"

    @property
    def version(self) -> str:
        return self.behaviour.version

    def gpu_columns(self) -> dict:
        """A sweep row's GPU columns: SGLang's KV budget (no blocks)."""
        return {"gpu_kv_cache_bytes": self.stage.gpu.budget_bytes}

    @property
    def gpu_tokens(self) -> int:
        """Tokens the GPU pool holds (max_total_num_tokens)."""
        return self.stage.gpu.max_total_num_tokens


def shared_stage(layout: Layout) -> None:
    """SGLang's plan has no GPU stage a sweep over budgets could share."""
    return None


def plan(layout: Layout, stage: object = None, *, selected_only: bool = False) -> SglangPlan:
    """An SGLang layout: its pools, budget and tokens, then its HiCache host pool (`stage`, `selected_only`: the
    pipeline's arguments, which SGLang's plan does not use: it has no stage shared between budgets)."""
    sg = sglang_of(layout)
    behaviour = behaviour_for(sg.version)
    try:
        built = build_stage(layout, behaviour)
        pool = hicache_pool(layout, built)
    except StartupRefusal as e:  # SGLang's own message, named as vLLM's are
        raise StartupRefusal(f"SGLang {behaviour.version} refuses to start: {e.one_line()}") from None
    warnings: tuple[str, ...] = ()
    if sg.version_from == "default":
        warnings = (f"no SGLang release named (no --sglang-version, sglang.version or image tag): planned as "
                    f"{sg.version}, the newest kvcalc models; name the release you run",)
    return SglangPlan(layout=layout, behaviour=behaviour, stage=built, pool=pool,
                      notes=tuple(built.notes) + tuple(pool.notes), base_warnings=warnings)
