"""The pipeline in one call: Layout -> the GPU stage (engines/vllm) -> the connector's host pool (backends) = Plan.
Pure; no I/O."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .backends.base import Pool, backend
from .engines.vllm.grouping import Grouping
from .engines.vllm.layers import LayerPlan
from .engines.vllm import GpuStage, build_stage
from .engines.vllm.tensors import GpuPlan, LogNumbers, log_numbers
from .vocab.errors import KvcalcError, StartupRefusal
from .vocab.layout import OFFLOAD_BACKENDS, Layout
from .vocab.records import cached, record, replace
from .vocab.units import parse_size

if TYPE_CHECKING:
    from .backends.base import OffloadBackend
    from .engines.vllm.memory import GpuMemory
from .vocab.releases.vllm import Behaviour, behaviour_for


@record
class Plan:
    """One engine's KV cache on one release: the GPU stage and the connector's host pool."""

    layout: Layout
    behaviour: Behaviour
    hma_enabled: bool
    hma_reason: str
    layers: LayerPlan
    grouping: Grouping
    gpu: GpuPlan
    pool: Pool  # the connector's host pool (backends/): NativePool, LMCachePool
    notes: tuple[str, ...]  # informational, for stderr
    base_warnings: tuple[str, ...]  # the release's and the GPU side's
    memory: GpuMemory | None = None  # the KV budget predicted from the layout's gpu section (engines/vllm/memory.py)
    engine = "vllm"  # the serving engine (SglangPlan: "sglang")

    @cached
    def logs(self) -> LogNumbers | None:
        """What vLLM logs for rank 0 (the KV cache size in tokens, the maximum concurrency), computed on first read:
        the table, `check --log` and `--compare-versions` show it; a sweep row or an API call that reads only the
        counts does not pay for it."""
        b = self.behaviour
        device = ("XPU" if self.layout.platform == "xpu" else "GPU") if b.log_device_prefix else "GPU"
        return log_numbers(self.gpu.workers[0], self.layers.usage, b.log_family, device)

    @property
    def warnings(self) -> tuple[str, ...]:
        """Things the user should act on, for stderr: the release's, the GPU side's, the pool's."""
        return self.base_warnings + self.pool.warnings

    @property
    def offload(self):
        """The native connector's family columns (NativePool.offload): the native detail's consumers read it."""
        return self.pool.offload

    @property
    def selected(self) -> str:
        """The formula the selected release uses."""
        return self.behaviour.formula


def plan_gpu(layout: Layout, connector: OffloadBackend | None = None) -> GpuStage:
    """Layout -> layers -> groups -> tensors and GPU blocks, the hybrid manager as the layout's connector allows it
    (no CPU budget involved). `connector`: the layout's backend, when the caller has it."""
    behaviour = behaviour_for(layout.vllm_version)
    return build_stage(layout, behaviour, (connector or backend(layout.offload.backend)).hma(layout, behaviour))


@record
class SglangPlan:
    """One SGLang engine on one release: its GPU stage (engines/sglang) and its HiCache host pool (backends/hicache),
    read by the gates, sweep and --compare-engines through the same Pool interface as a vLLM plan."""

    layout: Layout
    behaviour: object  # vocab/releases/sglang.SglangBehaviour (version, shm flags for the gates)
    stage: object  # engines/sglang.SglangStage
    pool: Pool  # backends/hicache.HiCachePool
    notes: tuple[str, ...]
    base_warnings: tuple[str, ...]
    engine = "sglang"

    @property
    def warnings(self) -> tuple[str, ...]:
        return self.base_warnings + self.pool.warnings

    @property
    def logs(self):
        """What SGLang logs (the GPU tokens as kv_cache_size_tokens, for the cpu_smaller_than_gpu gate)."""
        return SglangLogs(kv_cache_size_tokens=self.stage.gpu.max_total_num_tokens)


@record
class SglangLogs:
    kv_cache_size_tokens: int


def vllm_only(layout: Layout, what: str) -> None:
    """Refuse a vLLM-only operation (a vLLM log or scrape, vllm-args, --verify, --compare-versions, ...) on an SGLang
    layout, naming what to use instead."""
    if layout.engine == "sglang":
        from .vocab.errors import UnsupportedError

        raise UnsupportedError(f"{layout.source}: {what} reads vLLM's plan, and this layout is planned by SGLang's "
                               "rules (engine sglang): drop --engine sglang for vLLM, or --compare-engines for both")


def plan_sglang(layout: Layout) -> SglangPlan:
    """An SGLang layout: its pools, budget and tokens, then its HiCache host pool. Imports SGLang's modules only
    here (a vLLM plan loads none)."""
    from .backends.hicache import hicache_pool
    from .engines.sglang import build_stage
    from .vocab.releases.sglang import behaviour_for

    behaviour = behaviour_for(layout.sglang.version)
    try:
        stage = build_stage(layout, behaviour)
        pool = hicache_pool(layout, stage)
    except StartupRefusal as e:  # SGLang's own message, named as vLLM's are
        raise StartupRefusal(f"SGLang {behaviour.version} refuses to start: {e.one_line()}") from None
    warnings = ()
    if layout.sglang.version_from == "default":
        warnings = (f"no SGLang release named (no --sglang-version, sglang.version or image tag): planned as "
                    f"{layout.sglang.version}, the newest kvcalc models; name the release you run",)
    return SglangPlan(layout=layout, behaviour=behaviour, stage=stage, pool=pool,
                      notes=tuple(stage.notes) + tuple(pool.notes), base_warnings=warnings)


def plan(layout: Layout, stage: GpuStage | None = None, *, selected_only: bool = False) -> Plan:
    """Rebuild vLLM's KV cache layout for `layout` and size its connector's host pool. `stage`: the GPU stage of a
    layout that differs from this one only in its offload section (a sweep over budgets). `selected_only`: the
    native connector counts only the selected release's family (a sweep row shows no other column). An SGLang
    layout (engine sglang) is planned by SGLang's rules: a SglangPlan."""
    if layout.engine == "sglang":
        return plan_sglang(layout)
    connector = backend(layout.offload.backend)
    stage = stage or plan_gpu(layout, connector)
    behaviour, layer_plan, grouping, gpu = stage.behaviour, stage.layers, stage.grouping, stage.gpu
    pool = connector.estimate(layout, stage, selected_only=selected_only)
    notes = list(layer_plan.notes) + list(layout.offload.notes) + list(pool.notes)
    if layer_plan.block_size_note:
        notes.append(layer_plan.block_size_note)
    if grouping.folded:
        notes.append("hybrid manager off: sliding-window/chunked layers are allocated as full attention")
    if grouping.padding_layers:
        notes.append(f"{grouping.padding_layers} padding layer slot(s) in the hybrid groups")
    base = ((behaviour.warning,) if behaviour.warning else ()) + tuple(gpu.warnings) + (
        stage.memory.warnings if stage.memory is not None else ())
    if layout.vllm_version_from == "default":
        base = (f"no vLLM release named (no --vllm-version, vllm.version, image tag or log banner): planned as "
                f"{layout.vllm_version}, the newest kvcalc models; name the release you run",) + base
    # A start-up failure is not a warning: it is the report's `error` (and exit 2 in the CLI).
    return Plan(layout=layout, behaviour=behaviour, hma_enabled=stage.hma_enabled, hma_reason=stage.hma_reason,
                layers=layer_plan, grouping=grouping, gpu=gpu, pool=pool, notes=tuple(notes), base_warnings=base,
                memory=stage.memory)


def compare(layout: Layout, versions: list[str]) -> list[tuple[str, Plan | KvcalcError]]:
    """The same layout planned as each release would: a Plan, or the refusal that release gives. A string that
    is no release kvcalc models is refused up front (UnsupportedError), not shown as a start-up failure; the
    list is de-duplicated, so it is never longer than versions.RELEASES."""
    vllm_only(layout, "--compare-versions")
    versions = list(dict.fromkeys(versions))
    for v in versions:
        behaviour_for(v)
    out: list[tuple[str, Plan | KvcalcError]] = []
    for v in versions:
        try:
            out.append((v, plan(replace(layout, vllm_version=v, vllm_version_from="--compare-versions"))))
        except KvcalcError as e:
            out.append((v, e))
    return out


def compare_backends(layout: Layout) -> list[tuple[str, Plan | KvcalcError]]:
    """The layout on every backend with the same host budget: this layout's budget for one engine (the pool
    LMCache's config makes, or the native budget), spelled by each other backend in its own config
    (OffloadBackend.with_budget), in OFFLOAD_BACKENDS order."""
    vllm_only(layout, "--compare-backends")
    mine = layout.offload.backend
    try:
        own: Plan | KvcalcError = plan(layout)
        budget = own.pool.budget_bytes
    except KvcalcError as e:
        own, budget = e, layout.offload.cpu_bytes_to_use
    out: list[tuple[str, Plan | KvcalcError]] = []
    for name in OFFLOAD_BACKENDS:
        if name == mine or isinstance(own, KvcalcError) and budget is None:
            out.append((name, own))
            continue
        if budget is None:
            out.append((name, KvcalcError(f"{backend(mine).title}'s pool has no figures to compare with")))
            continue
        try:
            out.append((name, plan(backend(name).with_budget(layout, budget, backend(mine).title))))
        except KvcalcError as e:
            out.append((name, e))
    return out


def decimal_budget_note(p: Plan) -> str | None:
    """units.md: a budget in a decimal unit (64GB = 64 x 10^9) gets a note with the binary reading's CPU count
    when it differs (64GB -> 30,517 blocks; 64GiB would give 32,768), the one vLLM's GiB flag would give."""
    import re

    loaded, pool = p.layout, p.pool
    written = loaded.offload.cpu_bytes_written
    if not written or pool.units_scheduler is None or pool.startup_error:
        return None  # (before the pattern: compiling it is start-up time)
    m = re.fullmatch(r"\s*([0-9][0-9_]*(?:\.[0-9_]*)?)\s*([KMGTPkmgtp])[Bb]\s*", written)
    if not m or pool.units_scheduler is None or pool.startup_error:
        return None
    binary = parse_size(f"{m.group(1)}{m.group(2).upper()}iB")
    alt = plan(replace(loaded, offload=replace(loaded.offload, cpu_bytes_to_use=binary)))
    n, n_alt = pool.units_scheduler, alt.pool.units_scheduler
    if n == n_alt:
        return None
    return (f"{written.strip()} is decimal ({loaded.offload.cpu_bytes_to_use:,} B) -> {n:,} CPU {pool.unit}; "
            f"{m.group(1)}{m.group(2).upper()}iB ({binary:,} B) would give {n_alt:,}")


def compare_engines(layout: Layout) -> list[tuple[str, Plan | SglangPlan | KvcalcError]]:
    """The layout on vLLM and on SGLang (vocab.layout.ENGINES order), the other engine told the same model, GPUs and
    host budget (inputs/layout/convert.py): a plan, or the refusal."""
    from .inputs.layout.convert import as_sglang, as_vllm

    out: dict[str, Plan | SglangPlan | KvcalcError] = {}
    try:
        out[layout.engine] = plan(layout)
    except KvcalcError as e:
        out[layout.engine] = e
    own = out[layout.engine]
    if layout.engine == "sglang":
        host = None if isinstance(own, KvcalcError) else own.pool.pool_bytes_per_engine
        other, convert = "vllm", lambda: as_vllm(layout, host)
    else:
        other, convert = "sglang", lambda: as_sglang(layout)
    try:
        out[other] = plan(convert())
    except KvcalcError as e:
        out[other] = e
    return [(name, out[name]) for name in ("vllm", "sglang")]
