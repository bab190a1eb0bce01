"""vLLM's plan (the pipeline stage of the vLLM engine): Layout -> the GPU stage (engines/vllm) -> the connector's
host pool (backends) = VllmPlan; and the operations only vLLM offers: --compare-versions, --compare-backends, the
decimal-budget note. Pure; no I/O."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from ...backends.base import Pool, backend
from ...vocab.errors import InternalError, KvcalcError
from ...vocab.layout import OFFLOAD_BACKENDS, Layout
from ...vocab.records import cached, record, replace
from ...vocab.releases.vllm import Behaviour, behaviour_for
from ...vocab.units import parse_size
from . import GpuStage, build_stage
from .grouping import Grouping
from .layers import LayerPlan
from .tensors import GpuPlan, LogNumbers, log_numbers

if TYPE_CHECKING:
    from ...backends.base import OffloadBackend
    from ...backends.native import NativePool, OffloadPlan
    from ...pipeline import EnginePlan
    from .memory import GpuMemory


@record
class VllmPlan:
    """One vLLM engine's KV cache on one release: the GPU stage and the connector's host pool."""

    layout: Layout
    behaviour: Behaviour
    hma_enabled: bool
    hma_reason: str
    layers: LayerPlan
    grouping: Grouping
    gpu: GpuPlan
    pool: Pool  # the connector's host pool (backends/): NativePool, LMCachePool, SimplePool, NoPool
    notes: tuple[str, ...]  # informational, for stderr
    base_warnings: tuple[str, ...]  # the release's and the GPU side's
    memory: GpuMemory | None = None  # the KV budget predicted from the layout's gpu section (engines/vllm/memory.py)
    engine = "vllm"  # the serving engine (engines/base.engine)

    @staticmethod
    def of(p: EnginePlan) -> VllmPlan:
        """The pipeline's plan, for vLLM's own operations (check --log / --metrics, vllm-args, size --gpu-tokens:
        the engine record refuses them for another engine): a VllmPlan."""
        if not isinstance(p, VllmPlan):
            raise InternalError(f"{p.layout.source}: a vLLM operation was given a {p.layout.engine} plan")
        return p

    @cached
    def logs(self) -> LogNumbers | None:
        """What vLLM logs for rank 0 (the KV cache size in tokens, the maximum concurrency), computed on first read:
        the table, `check --log` and `--compare-versions` show it; a sweep row or an API call that reads only the
        counts does not pay for it."""
        b = self.behaviour
        device = ("XPU" if self.layout.platform == "xpu" else "GPU") if b.log_device_prefix else "GPU"
        return log_numbers(self.gpu.workers[0], self.layers.usage, b.log_family, device, b.concurrency_sum)

    @property
    def warnings(self) -> tuple[str, ...]:
        """Things the user should act on, for stderr: the release's, the GPU side's, the pool's."""
        return self.base_warnings + self.pool.warnings

    def representative(self, version: str) -> VllmPlan | KvcalcError:
        """This layout planned on another release (a formula family's representative, for the report's old/fixed
        columns): its plan with the selected family's figures only, or the refusal. Memoised per plan."""
        memo = self.__dict__.setdefault("_representatives", {})
        if version not in memo:
            try:
                memo[version] = plan(replace(self.layout, vllm_version=version, vllm_version_from="representative"),
                                     selected_only=True)
            except KvcalcError as e:
                memo[version] = e
        return memo[version]

    @property
    def offload(self) -> OffloadPlan:
        """The native connector's family columns (NativePool.offload): the native detail's consumers read it (another
        backend's pool has none: AttributeError, as ever)."""
        return cast("NativePool", self.pool).offload

    @property
    def selected(self) -> str:
        """The formula the selected release uses."""
        return self.behaviour.formula

    title = "vLLM"

    @property
    def version(self) -> str:
        return self.behaviour.version

    def gpu_columns(self) -> dict:
        """A sweep row's GPU columns: the blocks, and the budget when predicted (--gpu)."""
        return {"gpu_num_blocks": self.gpu.num_blocks,
                "gpu_kv_cache_bytes": None if self.memory is None else self.memory.kv_cache_bytes}

    @property
    def gpu_tokens(self) -> int | None:
        """Tokens the GPU pool holds (what vLLM logs as the KV cache size; None without KV layers)."""
        return None if self.logs is None else self.logs.kv_cache_size_tokens


def plan_gpu(layout: Layout, connector: OffloadBackend | None = None) -> GpuStage:
    """Layout -> layers -> groups -> tensors and GPU blocks, the hybrid manager as the layout's connector allows it
    (no CPU budget involved). `connector`: the layout's backend, when the caller has it."""
    behaviour = behaviour_for(layout.vllm_version)
    return build_stage(layout, behaviour, (connector or backend(layout.offload.backend)).hma(layout, behaviour))


def shared_stage(layout: Layout) -> GpuStage:
    """The GPU stage a sweep over budgets shares between its points."""
    return plan_gpu(layout)


def plan(layout: Layout, stage: GpuStage | None = None, *, selected_only: bool = False) -> VllmPlan:
    """Rebuild vLLM's KV cache layout for `layout` and size its connector's host pool. `stage`: the GPU stage of a
    layout that differs from this one only in its offload section (a sweep over budgets). `selected_only`: the
    native connector counts only the selected release's family (a sweep row shows no other column)."""
    connector = backend(layout.offload.backend)
    stage = stage or plan_gpu(layout, connector)
    behaviour, layer_plan, grouping, gpu = stage.behaviour, stage.layers, stage.grouping, stage.gpu
    pool = connector.estimate(layout, stage, selected_only=selected_only)
    notes = list(layer_plan.notes) + list(layout.offload.notes) + list(pool.notes)
    if layer_plan.block_size_note:
        notes.append(layer_plan.block_size_note)
    device = layer_plan.attention.device
    if layout.gpu.capability is None and layout.gpu_arch is None and layer_plan.attention.choices:
        notes.append(f"attention backend {layer_plan.attention.backend} selected for {device.basis}: the backend and "
                     "its block size follow the GPU class (name the GPU with --gpu, or --gpu-arch)")
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
    return VllmPlan(layout=layout, behaviour=behaviour, hma_enabled=stage.hma_enabled, hma_reason=stage.hma_reason,
                    layers=layer_plan, grouping=grouping, gpu=gpu, pool=pool, notes=tuple(notes), base_warnings=base,
                    memory=stage.memory)


def compare(layout: Layout, versions: list[str]) -> list[tuple[str, VllmPlan | KvcalcError]]:
    """The same layout planned as each release would: a plan, or the refusal that release gives. A string that
    is no release kvcalc models is refused up front (UnsupportedError), not shown as a start-up failure; the
    list is de-duplicated, so it is never longer than versions.RELEASES."""
    versions = list(dict.fromkeys(versions))
    for v in versions:
        behaviour_for(v)
    out: list[tuple[str, VllmPlan | KvcalcError]] = []
    for v in versions:
        try:
            out.append((v, plan(replace(layout, vllm_version=v, vllm_version_from="--compare-versions"))))
        except KvcalcError as e:
            out.append((v, e))
    return out


def compare_backends(layout: Layout) -> list[tuple[str, VllmPlan | KvcalcError]]:
    """The layout on every backend with the same host budget: this layout's budget for one engine (the pool
    LMCache's config makes, or the native budget), spelled by each other backend in its own config
    (OffloadBackend.with_budget), in OFFLOAD_BACKENDS order."""
    mine = layout.offload.backend
    own: VllmPlan | KvcalcError
    try:
        own = plan(layout)
        budget, mine = own.pool.budget_bytes, own.pool.backend  # (lmcache's flag is the MP server's from 0.23.0)
    except KvcalcError as e:
        own, budget = e, layout.offload.cpu_bytes_to_use
    out: list[tuple[str, VllmPlan | KvcalcError]] = []
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


def decimal_budget_note(p: VllmPlan) -> str | None:
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
