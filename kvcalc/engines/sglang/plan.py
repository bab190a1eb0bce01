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


def _verify_context_length(layout: Layout, version: str) -> None:
    """SGLang's ModelConfig._derive_context_length (srt/configs/model_config.py:1290-1314 @0.5.23, :670-690
    @0.5.14): a --context-length past the derived one is a ValueError unless
    SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN is set."""
    derived = None if layout.limits is None else layout.limits.sglang_context_length
    given = layout.cache.max_model_len
    if derived is None or not sglang_of(layout).context_length_given or given <= derived:
        return
    raise StartupRefusal(
        f"SGLang {version} refuses to start: Warning: User-specified context_length ({given}) is greater than the "
        f"derived context_length ({derived}). This may lead to incorrect model outputs or CUDA errors. Note that the "
        "derived context_length may differ from max_position_embeddings in the model's config. To allow overriding "
        "this maximum, set the env var SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1")


def plan(layout: Layout, stage: object = None, *, selected_only: bool = False) -> SglangPlan:
    """An SGLang layout: its pools, budget and tokens, then its HiCache host pool (`stage`, `selected_only`: the
    pipeline's arguments, which SGLang's plan does not use: it has no stage shared between budgets)."""
    sg = sglang_of(layout)
    behaviour = behaviour_for(sg.version)
    _verify_context_length(layout, behaviour.version)
    try:
        built = build_stage(layout, behaviour)
        pool = hicache_pool(layout, built)
    except StartupRefusal as e:  # SGLang's own message, named as vLLM's are (what it says of memory kept)
        named = StartupRefusal(f"SGLang {behaviour.version} refuses to start: {e.one_line()}")
        for name in ("memory_short", "weights_bytes", "requested_bytes", "requested_what"):
            setattr(named, name, getattr(e, name))
        raise named from None
    warnings: tuple[str, ...] = ()
    if sg.version_from == "default":
        warnings = (f"no SGLang release named (no --sglang-version, sglang.version or image tag): planned as "
                    f"{sg.version}, the newest kvcalc models; name the release you run",)
    return SglangPlan(layout=layout, behaviour=behaviour, stage=built, pool=pool,
                      notes=tuple(built.notes) + tuple(pool.notes), base_warnings=warnings)
